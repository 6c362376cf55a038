// The ucx transport: a UCP context and worker per transport instance (ucx_worker.hpp), one
// endpoint per peer with UCP's peer error handling, and the slot FIFOs carried by tagged messages
// (ucx_link.hpp says how: per-slot pre-posted receives, credits in empty messages' tags).
//
// Tagged messages rather than active messages: a tag receive posted into a slot is exactly the
// FIFO's free slot, so UCX lands every message (eager or rendezvous) in place, matched and
// ordered by its tag, with no callback copying out of UCX's buffers; an active message would need
// the same credits plus a per-message callback choosing where its data goes. docs/ucx.md has the
// figures this rests on.
//
// Which UCX transports carry the data is UCX's choice, steered as usual by UCX_TLS (tcp, or
// posix/sysv/cma/self within a host; rc, dc, ud where the cluster has RDMA: untested here). On a
// host without RDMA ports the messages go eagerly, whatever their size (Worker): UCX's rendezvous
// pays off where it reads the data by RDMA, and only costs a handshake per slot elsewhere.
//
// connect() creates the endpoints and posts the receives, then every rank sends each peer a hello
// (credit 0) and waits for theirs: so an address UCX cannot reach fails at init, and no data
// arrives before its receive is posted. progress() runs the worker; wakeFd() is the worker's event
// descriptor, which armWake() arms before each sleep: a waiter sleeps in poll() until a message
// (or a credit) arrives.
// sendsPending() counts sends UCX has not completed (a rendezvous send completes once the peer has
// pulled its data).
//
// Threading: serialized, as the tcp transport: one thread at a time drives a Transport.
//
// Destruction says bye to every peer and waits (at most 5 s) until each has answered that all
// this rank's messages arrived, or has said bye itself, or has failed (ucx_link.hpp), so that the
// last post() of a rank that then leaves is delivered, also by rendezvous, and a peer that left
// costs no wait; then it closes every endpoint by force and cancels the posted receives. A peer
// that is alive but does not progress (busy elsewhere, or killed where only a keepalive round
// would tell: UCX's shared memory) costs the 5 s.
#include <algorithm>
#include <chrono>
#include <memory>
#include <vector>

#include "base/deadline.hpp"
#include "base/error.hpp"
#include "base/log.hpp"
#include "transport/detail/options.hpp"
#include "transport/transport.hpp"
#include "transport/ucx/ucx_link.hpp"
#include "transport/ucx/ucx_tags.hpp"
#include "transport/ucx/ucx_worker.hpp"

namespace tutti::transport {
namespace ucx {
namespace {

constexpr std::chrono::milliseconds kCloseLimit{5000};
// Worker progress calls per progress(): bounded, so that a stream of arrivals cannot keep one
// call busy.
constexpr int kProgressRounds = 16;

const Options& checked(const Options& options) {
  detail::checkOptions(options, "ucx");
  if (options.nranks > kMaxRanks)
    raise(ErrorCode::kInvalidArgument, "ucx: nranks is {}, at most {} are supported",
          options.nranks, kMaxRanks);
  return options;
}

class UcxTransport final : public Transport {
 public:
  explicit UcxTransport(const Options& options)
      : options_(checked(options)),
        worker_(std::make_unique<Worker>(options.rdmaPorts == 0)),
        links_(options.nranks) {}

  ~UcxTransport() override {
    // In good order, every message sent arrives before the endpoints close; a failed
    // communicator's (abandonPendingSends) owes nobody anything and closes at once.
    if (!abandoned_) {
      for (auto& link : links_)
        if (link) link->sayBye();
      progressUntil(Deadline::after(kCloseLimit), [&] {
        return std::any_of(links_.begin(), links_.end(),
                           [](const auto& link) { return link && !link->doneWithPeer(); });
      });
    }
    for (auto& link : links_)
      if (link) link->startClose();
    progressUntil(Deadline::after(kCloseLimit), [&] {
      return std::any_of(links_.begin(), links_.end(),
                         [](const auto& link) { return link && link->closing(); });
    });
    progressUntil(Deadline::after(kCloseLimit), [&] {
      return std::any_of(links_.begin(), links_.end(),
                         [](const auto& link) { return link && link->cancelReceives(); });
    });
    // Requests still open die with the worker, before the links' memory they point into.
    worker_.reset();
  }

  const char* name() const override { return "ucx"; }
  std::string localAddress() const override { return worker_->address(); }

  void connect(const std::vector<int>& peers, const std::vector<std::string>& addresses,
               const Deadline& deadline) override {
    detail::checkPeers(options_, peers, addresses, "ucx");
    for (int peer : peers)
      if (links_[peer])
        raise(ErrorCode::kInvalidUsage, "ucx: rank {} is already connected to rank {}",
              options_.rank, peer);
    for (int peer : peers) {
      const std::string what = fmt::format("rank {} ({})", peer, placeOf(addresses[peer]));
      const std::vector<uint8_t> address = decodeAddress(addresses[peer], what);
      auto link =
          std::make_unique<UcxLink>(worker_->get(), options_.rank, peer, what, options_.slotBytes,
                                    options_.slots, &creditReposts_, &byesToAnswer_);
      ucs_status_t status = link->open(address, peerErrors_);
      if (status == UCS_ERR_UNREACHABLE && peerErrors_) {
        // UCX has logged why (no transport with a peer failure handler); once per transport.
        log::info(
            "ucx: rank {}: UCX's transports here cannot report peer failures; endpoints "
            "go without (a dead peer is found by the runtime)",
            options_.rank);
        peerErrors_ = false;
        status = link->open(address, peerErrors_);
      }
      if (status != UCS_OK) {
        // A peer whose process is gone cannot be reached either (UCX's shared memory: its
        // segment is): say that, where the runtime can tell.
        if (options_.checkPeers) options_.checkPeers();
        raise(ErrorCode::kRemote, "ucx: rank {} cannot reach {}: {}", options_.rank, what,
              ucs_status_string(status));
      }
      links_[peer] = std::move(link);
    }
    for (int peer : peers) links_[peer]->sayHello();
    const bool heard = progressUntil(deadline, [&] {
      if (options_.checkPeers) options_.checkPeers();
      return std::any_of(peers.begin(), peers.end(),
                         [&](int peer) { return !links_[peer]->heardHello(); });
    });
    if (!heard) {
      std::vector<int> silent;
      for (int peer : peers)
        if (!links_[peer]->heardHello()) silent.push_back(peer);
      raise(ErrorCode::kTimeout, "ucx: rank {} heard no hello from ranks {} before the deadline",
            options_.rank, fmt::join(silent, ", "));
    }
    log::info("ucx: rank {} connected to {} peers ({})", options_.rank, peers.size(),
              worker_->eager() ? "messages go eagerly: no RDMA port here"
                               : "UCX's rendezvous above its threshold");
    options_.checkPeers = nullptr;  // it looks at what the runtime keeps only while connecting
  }

  SendConn& send(int peer) override { return link(peer).sender(); }
  RecvConn& recv(int peer) override { return link(peer).receiver(); }

  void progress() override {
    for (int i = 0; i < kProgressRounds; ++i) {
      const unsigned events = ucp_worker_progress(worker_->get());
      repostCredits();
      answerByes();
      if (events == 0) return;
    }
  }

  void abandonPendingSends() noexcept override { abandoned_ = true; }
  bool sendsPending() const override {
    return std::any_of(links_.begin(), links_.end(),
                       [](const auto& link) { return link && link->sendsInFlight() > 0; });
  }
  int wakeFd() const override { return worker_->eventFd(); }
  // Armed here, not in progress(): a waiter arms only as it is about to sleep, and arming costs
  // system calls (2 ranks over UCX's shared memory: an 8-byte all-reduce took 6.6 us at the
  // median with progress() arming, 0.6 us without).
  bool armWake() override { return worker_->arm(); }

 private:
  UcxLink& link(int peer) {
    if (peer < 0 || peer >= options_.nranks || !links_[peer])
      raise(ErrorCode::kInvalidUsage, "ucx: rank {} has no connection to rank {}", options_.rank,
            peer);
    return *links_[peer];
  }

  // Progresses the worker while `busy()`; false when the deadline came first.
  template <typename Busy>
  bool progressUntil(const Deadline& deadline, Busy busy) {
    Backoff backoff;
    while (busy()) {
      if (deadline.expired()) return false;
      progress();
      if (const long ns = backoff.round(); ns > 0 && armWake()) Backoff::sleepOn(wakeFd(), ns);
    }
    return true;
  }

  void repostCredits() {
    while (!creditReposts_.empty()) {
      UcxLink* link = creditReposts_.back();
      creditReposts_.pop_back();
      link->postCreditReceive();  // may complete at once and list the link again
    }
  }

  // Answers the byes whose messages have all arrived; the others wait for a later round.
  void answerByes() {
    byesToAnswer_.erase(std::remove_if(byesToAnswer_.begin(), byesToAnswer_.end(),
                                       [](UcxLink* link) { return link->answerBye(); }),
                        byesToAnswer_.end());
  }

  Options options_;
  std::unique_ptr<Worker> worker_;
  std::vector<std::unique_ptr<UcxLink>> links_;
  std::vector<UcxLink*> creditReposts_;  // links whose credit receive completed
  std::vector<UcxLink*> byesToAnswer_;   // links whose peer said bye, not answered yet
  bool peerErrors_ = true;               // endpoints with UCP's peer error handling (link->open)
  bool abandoned_ = false;               // close without waiting for delivery
};

}  // namespace
}  // namespace ucx

bool ucxBuilt() {
  return true;
}

std::unique_ptr<Transport> makeUcxTransport(const Options& options) {
  return std::make_unique<ucx::UcxTransport>(options);
}

}  // namespace tutti::transport
