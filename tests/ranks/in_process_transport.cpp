#include "in_process_transport.hpp"

#include <atomic>
#include <deque>
#include <map>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

#include "base/error.hpp"
#include "transport/registry.hpp"

namespace tutti::testing {
namespace {

using namespace tutti::transport;

std::atomic<uint64_t> posts{0};

// The messages from one rank to another: at most `slots` in flight, as every transport's FIFO.
struct Mailbox {
  std::mutex mutex;
  std::deque<std::pair<std::vector<char>, Tag>> posted;
};

// Every job's mailboxes, by (job tag, from, to); the ranks of a job are threads of this process.
std::mutex mailboxesMutex;
std::map<std::tuple<std::string, int, int>, Mailbox> mailboxes;

Mailbox& mailbox(const std::string& job, int from, int to) {
  std::lock_guard lock(mailboxesMutex);
  return mailboxes[{job, from, to}];
}

class InProcessSend : public SendConn {
 public:
  InProcessSend(Mailbox& box, size_t slotBytes, int slots)
      : box_(box), slot_(slotBytes), slots_(static_cast<size_t>(slots)) {}
  size_t slotBytes() const override { return slot_.size(); }
  void* tryAcquire() override {
    std::lock_guard lock(box_.mutex);
    return box_.posted.size() < slots_ ? slot_.data() : nullptr;
  }
  void post(size_t bytes, const Tag& tag) override {
    std::lock_guard lock(box_.mutex);
    box_.posted.emplace_back(std::vector<char>(slot_.begin(), slot_.begin() + bytes), tag);
    posts.fetch_add(1, std::memory_order_relaxed);
  }

 private:
  Mailbox& box_;
  std::vector<char> slot_;
  size_t slots_;
};

class InProcessRecv : public RecvConn {
 public:
  InProcessRecv(Mailbox& box, size_t slotBytes) : box_(box), slotBytes_(slotBytes) {}
  size_t slotBytes() const override { return slotBytes_; }
  const void* tryPeek(Envelope* got) override {
    std::lock_guard lock(box_.mutex);
    if (box_.posted.empty()) return nullptr;
    // A deque keeps its front element in place while others are appended.
    const auto& [bytes, tag] = box_.posted.front();
    *got = Envelope{bytes.size(), tag};
    return bytes.data();
  }
  void release() override {
    std::lock_guard lock(box_.mutex);
    box_.posted.pop_front();
  }

 private:
  Mailbox& box_;
  size_t slotBytes_;
};

class InProcessTransport : public Transport {
 public:
  explicit InProcessTransport(const Options& options) : options_(options) {}
  const char* name() const override { return "in-process"; }
  std::string localAddress() const override { return "thread"; }
  void connect(const std::vector<int>& peers, const std::vector<std::string>& addresses,
               const Deadline&) override {
    for (int peer : peers) {
      if (addresses[static_cast<size_t>(peer)] != "thread")
        raise(ErrorCode::kRemote, "in-process: rank {} is not a thread of this process", peer);
      sends_.emplace(peer, InProcessSend(mailbox(options_.jobTag, options_.rank, peer),
                                         options_.slotBytes, options_.slots));
      recvs_.emplace(
          peer, InProcessRecv(mailbox(options_.jobTag, peer, options_.rank), options_.slotBytes));
    }
  }
  SendConn& send(int peer) override { return sends_.at(peer); }
  RecvConn& recv(int peer) override { return recvs_.at(peer); }

 private:
  Options options_;
  std::map<int, InProcessSend> sends_;
  std::map<int, InProcessRecv> recvs_;
};

// Ranks of one process share its host id; only thread worlds use this transport.
bool sameHost(const Reach& a, const Reach& b) {
  return a.hostId == b.hostId;
}

}  // namespace

void registerInProcessTransport() {
  static std::once_flag once;
  std::call_once(once, [] {
    registerTransport({.name = "in-process", .reaches = sameHost, .make = [](const Options& o) {
                         return std::unique_ptr<Transport>(new InProcessTransport(o));
                       }});
  });
}

void registerMemoryClaimingTransport() {
  static std::once_flag once;
  std::call_once(once, [] {
    registerTransport(
        {.name = "in-process-claims-memory",
         .reaches = sameHost,
         .make =
             [](const Options& o) { return std::unique_ptr<Transport>(new InProcessTransport(o)); },
         .sharesMemory = true});
  });
}

uint64_t inProcessMessages() {
  return posts.load(std::memory_order_relaxed);
}

}  // namespace tutti::testing
