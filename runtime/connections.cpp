#include "runtime/connections.hpp"

#include <fmt/ranges.h>
#include <sys/epoll.h>

#include <cerrno>

#include "base/error.hpp"
#include "base/log.hpp"
#include "runtime/transport_addresses.hpp"

namespace tutti::runtime {
Connections::Connections(Plan plan, const Deadline& deadline) : rank_(plan.rank) {
  const int n = plan.options.nranks;
  const transport::Reach& self = plan.reach[static_cast<size_t>(rank_)];
  kindOf_.assign(static_cast<size_t>(n), nullptr);
  for (int peer = 0; peer < n; ++peer) {
    if (peer == rank_) continue;
    const transport::Reach& theirs = plan.reach[static_cast<size_t>(peer)];
    const transport::TransportKind* kind = plan.selection.choose(self, theirs);
    if (!kind)
      raise(ErrorCode::kInvalidUsage,
            "rank {}: none of the transports TUTTI_TRANSPORT={} allows ({}) reaches {}{}; allow "
            "one that does (e.g. auto)",
            rank_, plan.selection.text(), plan.selection.describe(), plan.describe(peer),
            theirs.hostId != self.hostId ? ", which runs on another host" : "");
    kindOf_[static_cast<size_t>(peer)] = kind;
    allShareMemory_ = allShareMemory_ && kind->sharesMemory;
  }
  // In the registry's order, so that every rank connects its transports in the same order.
  for (const transport::TransportKind* kind : transport::transportKinds()) {
    Instance instance{kind, nullptr, {}, {}};
    for (int peer = 0; peer < n; ++peer) {
      const transport::TransportKind* carrier = kindOf_[static_cast<size_t>(peer)];
      if (carrier == kind) instance.peers.push_back(peer);
      // Peers on this host whose data another transport carries still leave their departure
      // notes where they outlive the process (a rank 0 that dies takes the store's with it).
      else if (carrier && kind->keepsNotes &&
               kind->reaches(self, plan.reach[static_cast<size_t>(peer)]))
        instance.watching.push_back(peer);
    }
    if (!instance.peers.empty() || !instance.watching.empty())
      instances_.push_back(std::move(instance));
  }

  TransportAddresses mine;
  for (Instance& instance : instances_) {
    transport::Options options = plan.options;
    // Asked only where needed: it costs an interface lookup that may fail.
    if (instance.kind->listens && !instance.peers.empty()) options.bindHost = plan.bindHost();
    instance.transport = instance.kind->make(options);
    if (instance.kind->sharesMemory && !instance.transport->peerMemory())
      raise(ErrorCode::kInternal, "transport {} shares memory but gives no peer-memory access",
            instance.kind->name);
    mine.emplace(instance.kind->name, instance.transport->localAddress());
  }
  const std::vector<std::string> all = plan.exchange(encodeTransportAddresses(mine));
  std::vector<TransportAddresses> theirs(static_cast<size_t>(n));
  for (int peer = 0; peer < n; ++peer)
    if (peer != rank_ && kindOf_[static_cast<size_t>(peer)])
      theirs[static_cast<size_t>(peer)] =
          decodeTransportAddresses(all[static_cast<size_t>(peer)], rank_, peer);
  for (Instance& instance : instances_) {
    std::vector<std::string> addresses(static_cast<size_t>(n));
    for (const std::vector<int>* group : {&instance.peers, &instance.watching})
      for (int peer : *group)
        addresses[static_cast<size_t>(peer)] =
            addressOf(theirs[static_cast<size_t>(peer)], instance.kind->name, rank_, peer);
    instance.transport->connect(instance.peers, addresses, deadline);
    if (!instance.watching.empty()) instance.transport->watch(instance.watching, addresses);
  }

  send_.assign(static_cast<size_t>(n), nullptr);
  recv_.assign(static_cast<size_t>(n), nullptr);
  std::string summary;
  for (Instance& instance : instances_) {
    for (int peer : instance.peers) {
      send_[static_cast<size_t>(peer)] = &instance.transport->send(peer);
      recv_[static_cast<size_t>(peer)] = &instance.transport->recv(peer);
    }
    if (!instance.peers.empty())
      summary += fmt::format("{}{} to {}", summary.empty() ? "" : "; ", instance.kind->name,
                             fmt::join(instance.peers, " "));
  }
  // One transport carries every peer: the direct algorithms reach them all through it.
  if (instances_.size() == 1 && instances_[0].kind->sharesMemory &&
      instances_[0].peers.size() == static_cast<size_t>(n - 1))
    peerMemory_ = instances_[0].transport->peerMemory();
  log::info("{} of {}: connected, {} (TUTTI_TRANSPORT={}), slots {} x {} bytes",
            plan.describe(rank_), n, summary.empty() ? "no peers" : summary, plan.selection.text(),
            plan.options.slots, plan.options.slotBytes);
  combineWakeFds();
}

Connections::~Connections() = default;

void Connections::connected() {
  for (Instance& instance : instances_) instance.transport->connected();
}

const char* Connections::transportTo(int peer) const {
  const transport::TransportKind* kind = kindOf_[static_cast<size_t>(peer)];
  return kind ? kind->name : "self";
}

std::vector<transport::Transport*> Connections::noteCarriers() const {
  std::vector<transport::Transport*> carriers(kindOf_.size(), nullptr);
  for (const Instance& instance : instances_) {
    if (!instance.kind->keepsNotes) continue;
    for (const std::vector<int>* peers : {&instance.peers, &instance.watching})
      for (int peer : *peers) carriers[static_cast<size_t>(peer)] = instance.transport.get();
  }
  return carriers;
}

void Connections::progress() {
  for (Instance& instance : instances_) instance.transport->progress();
}

bool Connections::sendsPending() const {
  for (const Instance& instance : instances_)
    if (instance.transport->sendsPending()) return true;
  return false;
}

void Connections::copyPendingSends() noexcept {
  for (Instance& instance : instances_) instance.transport->copyPendingSends();
}

void Connections::abandonPendingSends() noexcept {
  for (Instance& instance : instances_) instance.transport->abandonPendingSends();
}

bool Connections::armWake() {
  for (Instance& instance : instances_)
    if (!instance.transport->armWake()) return false;
  return true;
}

void Connections::combineWakeFds() {
  std::vector<int> fds;
  for (const Instance& instance : instances_)
    if (const int fd = instance.transport->wakeFd(); fd >= 0) fds.push_back(fd);
  if (fds.size() <= 1) {
    wakeFd_ = fds.empty() ? -1 : fds.front();
    return;
  }
  // An epoll set is readable while any descriptor in it is.
  wakeSet_ = Fd(epoll_create1(EPOLL_CLOEXEC));
  if (!wakeSet_.valid()) throwSystemError("epoll_create1", errno);
  for (int fd : fds) {
    epoll_event event{};
    event.events = EPOLLIN;
    event.data.fd = fd;
    if (epoll_ctl(wakeSet_.get(), EPOLL_CTL_ADD, fd, &event) != 0)
      throwSystemError("epoll_ctl", errno);
  }
  wakeFd_ = wakeSet_.get();
}

}  // namespace tutti::runtime
