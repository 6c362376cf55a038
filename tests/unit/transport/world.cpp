#include "world.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <barrier>
#include <cstring>
#include <exception>
#include <filesystem>
#include <stdexcept>
#include <thread>

namespace tutti::transport::test {
namespace {

uint64_t splitmix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

}  // namespace

const char* kindName(Kind kind) {
  switch (kind) {
    case Kind::kShm: return "shm";
    case Kind::kTcp: return "tcp";
    case Kind::kUcx: return "ucx";
  }
  return "?";
}

std::unique_ptr<Transport> make(Kind kind, const Options& options) {
  switch (kind) {
    case Kind::kShm: return makeShmTransport(options);
    case Kind::kTcp: return makeTcpTransport(options);
    case Kind::kUcx: return makeUcxTransport(options);
  }
  return nullptr;
}

std::string uniqueTag() {
  static std::atomic<int> counter{0};
  return fmt::format("test{}x{}x{:x}", getpid(), counter++, std::random_device{}());
}

// Made before main, so that forked ranks share it and name their segments alike.
const Secret kTestSecret = Secret::random();

Options smallOptions(int rank, int nranks, const std::string& tag) {
  Options options;
  options.rank = rank;
  options.nranks = nranks;
  options.jobTag = tag;
  options.secret = kTestSecret;
  options.slotBytes = 4096;
  options.slots = 4;
  options.bindHost = "127.0.0.1";
  return options;
}

std::vector<int> allBut(int rank, int nranks) {
  std::vector<int> peers;
  for (int r = 0; r < nranks; ++r)
    if (r != rank) peers.push_back(r);
  return peers;
}

std::vector<Options> worldOptions(int nranks) {
  const std::string tag = uniqueTag();
  std::vector<Options> options;
  for (int r = 0; r < nranks; ++r) options.push_back(smallOptions(r, nranks, tag));
  return options;
}

Traffic::Traffic(uint64_t seed, int from, int to, size_t slotBytes)
    : key_(
          splitmix(seed ^ splitmix(static_cast<uint64_t>(from) << 32 | static_cast<uint32_t>(to)))),
      slotBytes_(slotBytes),
      random_(static_cast<std::mt19937::result_type>(key_)) {}

size_t Traffic::nextSize() {
  const uint64_t i = count_++;
  const size_t random = std::uniform_int_distribution<size_t>(0, slotBytes_)(random_);
  if (i % 7 == 3) return 0;
  if (i % 11 == 5) return slotBytes_;
  return random;
}

void Traffic::fill(std::byte* out, size_t bytes, uint64_t index) const {
  const uint64_t base = splitmix(key_ + index);
  for (size_t word = 0; word * 8 < bytes; ++word) {
    const uint64_t value = splitmix(base + word);
    std::memcpy(out + word * 8, &value, std::min<size_t>(8, bytes - word * 8));
  }
}

Tag Traffic::tag(uint64_t index) const {
  const uint64_t base = splitmix(~key_ + index);
  return {{base, splitmix(base), splitmix(base + 1)}};
}

void scribble(std::vector<std::byte>& bytes) {
  std::fill(bytes.begin(), bytes.end(), std::byte{0xee});
}

MeshStream::MeshStream(Transport& transport, int rank, std::vector<int> peers, int count,
                       uint64_t seed)
    : transport_(transport), rank_(rank), count_(count) {
  for (int peer : peers) {
    const size_t slotBytes = transport.send(peer).slotBytes();
    peers_.push_back(Peer{peer, Traffic(seed, rank, peer, slotBytes),
                          Traffic(seed, peer, rank, slotBytes), 0, 0,
                          std::vector<std::byte>(slotBytes), std::vector<std::byte>(slotBytes)});
  }
}

void MeshStream::send(Peer& p) {
  SendConn& conn = transport_.send(p.rank);
  const auto index = static_cast<uint64_t>(p.sent);
  if (index / 2 % 2 == 0) {
    void* slot = conn.tryAcquire();
    if (!slot) return;
    const size_t bytes = p.out.nextSize();
    p.out.fill(static_cast<std::byte*>(slot), bytes, index);
    conn.post(bytes, p.out.tag(index));
  } else {
    if (!p.nextOutSize) p.nextOutSize = p.out.nextSize();
    std::vector<std::byte> data(*p.nextOutSize);
    p.out.fill(data.data(), data.size(), index);
    if (!conn.tryPostFrom(data.data(), data.size(), p.out.tag(index))) return;
    p.nextOutSize.reset();
    if (conn.sendsInPlace())
      sentInPlace_.push_back(std::move(data));
    else
      scribble(data);
  }
  ++p.sent;
}

bool MeshStream::step() {
  bool moved = false;
  for (Peer& p : peers_) {
    // Up to two sends, then every message that has arrived.
    for (int i = 0; i < 2 && p.sent < count_; ++i) {
      const int sent = p.sent;
      send(p);
      if (p.sent == sent) break;
      moved = true;
    }
    RecvConn& conn = transport_.recv(p.rank);
    while (p.received < count_) {
      if (!p.nextSize) p.nextSize = p.in.nextSize();
      const Envelope want{*p.nextSize, p.in.tag(static_cast<uint64_t>(p.received))};
      const bool into = p.received % 2 == 1;
      Envelope got;
      const void* data = nullptr;
      if (into) {
        if (!conn.tryReceiveInto(p.landing.data(), want, &got)) break;
        data = p.landing.data();
      } else {
        data = conn.tryPeek(&got);
        if (!data) break;
      }
      if (got.bytes != want.bytes)
        throw std::runtime_error(
            fmt::format("rank {}: message {} from rank {} has {} bytes, "
                        "expected {}",
                        rank_, p.received, p.rank, got.bytes, want.bytes));
      if (got.tag != want.tag)
        throw std::runtime_error(fmt::format("rank {}: message {} from rank {} has another tag",
                                             rank_, p.received, p.rank));
      p.in.fill(p.expect.data(), want.bytes, static_cast<uint64_t>(p.received));
      if (std::memcmp(data, p.expect.data(), want.bytes) != 0) {
        size_t at = 0;
        while (static_cast<const std::byte*>(data)[at] == p.expect[at]) ++at;
        throw std::runtime_error(
            fmt::format("rank {}: message {} from rank {} ({} bytes) differs at byte {}", rank_,
                        p.received, p.rank, want.bytes, at));
      }
      if (!into) conn.release();
      p.nextSize.reset();
      ++p.received;
      moved = true;
    }
  }
  transport_.progress();
  if (!transport_.sendsPending()) {
    for (std::vector<std::byte>& data : sentInPlace_) scribble(data);
    sentInPlace_.clear();
  }
  return moved;
}

bool MeshStream::done() const {
  for (const Peer& p : peers_)
    if (p.sent < count_ || p.received < count_) return false;
  return true;
}

int MeshStream::received(int peer) const {
  for (const Peer& p : peers_)
    if (p.rank == peer) return p.received;
  return -1;
}

void runStreams(std::vector<MeshStream*> streams, const Deadline& deadline) {
  Backoff backoff;
  for (;;) {
    bool moved = false;
    bool done = true;
    for (MeshStream* s : streams) {
      moved |= s->step();
      done &= s->done();
    }
    if (done) return;
    if (deadline.expired()) throw std::runtime_error("streams did not finish before the deadline");
    if (moved)
      backoff.reset();
    else
      backoff.pause();
  }
}

void connectAll(const std::vector<std::unique_ptr<Transport>>& transports,
                const Deadline& deadline) {
  const int n = static_cast<int>(transports.size());
  std::vector<std::string> addresses;
  for (const auto& t : transports) addresses.push_back(t->localAddress());
  std::vector<std::exception_ptr> errors(n);
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r)
    threads.emplace_back([&, r] {
      try {
        transports[r]->connect(allBut(r, n), addresses, deadline);
      } catch (...) {
        errors[r] = std::current_exception();
      }
    });
  for (auto& t : threads) t.join();
  for (auto& e : errors)
    if (e) std::rethrow_exception(e);
  for (const auto& t : transports) t->connected();
}

void leaveTogether(std::vector<std::unique_ptr<Transport>>& transports) {
  std::vector<std::thread> threads;
  for (auto& t : transports) threads.emplace_back([&t] { t.reset(); });
  for (auto& t : threads) t.join();
}

void streamWorld(Kind kind, std::vector<Options> options, int count, uint64_t seed) {
  Warnings log;
  const int n = static_cast<int>(options.size());
  auto outcome = runThreadWorld(kind, options, [&](int rank, Transport& transport) {
    MeshStream stream(transport, rank, allBut(rank, n), count, seed);
    runStreams({&stream}, Deadline::after(std::chrono::seconds(60)));
  });
  for (int r = 0; r < n; ++r) {
    INFO(kindName(kind) << " rank " << r << " of " << n);
    CHECK(outcome[r] == "");
  }
  CHECK(log.all().empty());
}

std::vector<std::string> runThreadWorld(Kind kind, const std::vector<Options>& options,
                                        const std::function<void(int, Transport&)>& body) {
  const int n = static_cast<int>(options.size());
  std::vector<std::string> addresses(n);
  std::vector<std::string> outcome(n);
  std::barrier<> barrier(n);
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r)
    threads.emplace_back([&, r] {
      int phase = 0;
      try {
        auto transport = make(kind, options[r]);
        addresses[r] = transport->localAddress();
        ++phase, barrier.arrive_and_wait();
        transport->connect(allBut(r, n), addresses, Deadline::after(std::chrono::seconds(20)));
        ++phase, barrier.arrive_and_wait();
        transport->connected();
        ++phase;
        body(r, *transport);
      } catch (const std::exception& e) {
        outcome[r] = e.what();
        // Let the others get past the barriers (they then fail on their own deadlines).
        if (phase < 3) barrier.arrive_and_drop();
      }
    });
  for (auto& t : threads) t.join();
  return outcome;
}

std::string shmPrefix(const std::string& tag) {
  return segmentNamePrefix(kTestSecret) + tag + "-";
}

std::vector<std::string> shmSegmentsOf(const std::string& tag) {
  std::vector<std::string> names;
  const std::string prefix = shmPrefix(tag);
  for (const auto& entry : std::filesystem::directory_iterator("/dev/shm")) {
    const std::string name = entry.path().filename().string();
    if (name.rfind(prefix, 0) == 0) names.push_back(name);
  }
  return names;
}

}  // namespace tutti::transport::test
