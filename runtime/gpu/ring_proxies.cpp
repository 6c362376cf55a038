#include "runtime/gpu/ring_proxies.hpp"

#include <optional>

#include "base/log.hpp"
#include "transport/tcp/tcp_connect.hpp"

namespace tutti::runtime::gpu {

namespace {

// The neighbours' addresses as the exchange gave them, checked: network input.
void checkAddresses(const std::vector<std::string>& addresses, const std::vector<int>& neighbours,
                    int rank, int nranks) {
  if (addresses.size() != static_cast<size_t>(nranks))
    raise(ErrorCode::kRemote, "rank {}: the device ring's proxy addresses: {} of {} ranks", rank,
          addresses.size(), nranks);
  for (int peer : neighbours) {
    const std::string& address = addresses[static_cast<size_t>(peer)];
    try {
      if (address.empty())
        raise(ErrorCode::kRemote, "none (does it run on the host this rank thinks it does?)");
      transport::tcp::parseAddress(address, peer);
    } catch (const Error& error) {
      raise(ErrorCode::kRemote, "rank {}: rank {}'s address for the device ring's link proxy: {}",
            rank, peer, error.what());
    }
  }
}

}  // namespace

std::vector<std::unique_ptr<FifoProxy>> connectProxies(const std::string& job, int rank, int nranks,
                                                       const CrossingLinks& links,
                                                       const ProxySockets& sockets,
                                                       const Deadline& deadline) {
  std::vector<int> neighbours;
  if (!links.fromPrev.empty()) neighbours.push_back(links.prev);
  if (!links.toNext.empty() && (links.fromPrev.empty() || links.next != links.prev))
    neighbours.push_back(links.next);
  std::optional<transport::tcp::Listener> listener;
  if (!neighbours.empty()) listener = transport::tcp::listenForPeers(sockets.bindHost(), 16);
  const std::vector<std::string> addresses = sockets.exchange(listener ? listener->address : "");
  if (neighbours.empty()) return {};
  checkAddresses(addresses, neighbours, rank, nranks);

  const transport::tcp::ConnectPlan plan{rank,       job + "/gpu-proxy", sockets.secret,    1,
                                         neighbours, addresses,          sockets.checkPeers};
  auto opened = transport::tcp::openSockets(plan, listener->fd.get(), deadline);
  std::vector<std::unique_ptr<FifoProxy>> proxies;
  for (int peer : neighbours) {
    const std::string name =
        fmt::format("rank {} ({})", peer, addresses[static_cast<size_t>(peer)]);
    const auto& out = peer == links.next ? links.toNext : std::vector<kernels::device::Fifo>{};
    const auto& in = peer == links.prev ? links.fromPrev : std::vector<kernels::device::Fifo>{};
    proxies.push_back(
        std::make_unique<FifoProxy>(std::move(opened.at(peer).front()), out, in, name, deadline));
    log::info("gpu: rank {}: the device ring's link proxy to {} runs ({} FIFOs out, {} in)", rank,
              name, out.size(), in.size());
  }
  return proxies;
}

}  // namespace tutti::runtime::gpu
