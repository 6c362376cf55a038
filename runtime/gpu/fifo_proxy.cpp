#include "runtime/gpu/fifo_proxy.hpp"

#include <sys/socket.h>

#include <array>
#include <chrono>
#include <mutex>

#include "base/byte_codec.hpp"
#include "kernels/device/simple.hpp"

namespace tutti::runtime::gpu {
namespace {

namespace device = kernels::device;
using device::SystemCounter;

// Every frame starts with kind, channel and a value: hello (value: the FIFOs' geometry, channel:
// the count of outgoing FIFOs in the high 16 bits, of incoming ones in the low), a slot (value: its
// step; slotBytes of data follow),
// a credit (value: how many slots of the sender's incoming FIFO its kernels have freed) or the
// goodbye (nothing follows).
enum Kind : uint32_t { kHello = 1, kSlot = 2, kCredit = 3, kGoodbye = 4 };
constexpr size_t kHeaderBytes = 16;

struct Header {
  uint32_t kind;
  uint32_t channel;
  uint64_t value;
};

uint64_t geometryOf(const device::Fifo& f) {
  return uint64_t{f.nslots} << 32 | f.slotBytes;
}

uint64_t acquired(uint64_t* counter) {
  return SystemCounter(*counter).load(::cuda::std::memory_order_acquire);
}

}  // namespace

struct FifoProxy::State {
  Fd socket;
  std::vector<device::Fifo> outgoing, incoming;
  std::string link;  // "the GPU link proxy of PEER": what its errors name
  // Per channel: slots sent (the writer's count) and the peer's credit (its kernels' frees).
  std::unique_ptr<std::atomic<uint64_t>[]> sent, peerFreed;
  std::atomic<bool> stopping{false}, broken{false};
  std::atomic<bool> closing{false};  // close(): the goodbye goes once every published slot went
  std::atomic<bool> saidGoodbye{false};
  std::atomic<bool> peerLeft{false};  // its goodbye came: it takes no slot or credit any more
  mutable std::mutex mutex;
  std::optional<Error> failure;

  uint32_t nslots = 0, slotBytes = 0;  // every FIFO's, both sides'

  void writeFrame(const Header& h, const void* payload = nullptr) const {
    std::array<std::byte, kHeaderBytes> bytes{};
    ByteWriter(bytes).u32(h.kind).u32(h.channel).u64(h.value);
    writeAll(socket.get(), bytes.data(), bytes.size(), Deadline::never(), link);
    if (payload) writeAll(socket.get(), payload, slotBytes, Deadline::never(), link);
  }

  Header readHeader(const Deadline& deadline) const {
    std::array<std::byte, kHeaderBytes> bytes{};
    readAll(socket.get(), bytes.data(), bytes.size(), deadline, link);
    ByteReader in(std::span<const std::byte>(bytes), ErrorCode::kRemote, link);
    Header h{};
    h.kind = in.u32();
    h.channel = in.u32();
    h.value = in.u64();
    return h;
  }

  // The first failure, unless the proxy is being stopped (its own shutdown breaks the socket) or
  // the peer left in good order (a write racing its close fails harmlessly).
  // The socket is shut down too, so that the peer's proxy fails at once rather than wait for
  // frames that will not come.
  void fail(const Error& error) {
    {
      std::lock_guard lock(mutex);
      if (!failure && !stopping.load() && !peerLeft.load()) failure = error;
    }
    broken.store(true);
    shutdown(socket.get(), SHUT_RDWR);
  }

  template <typename... Args>
  [[noreturn]] void protocolError(fmt::format_string<Args...> format, Args&&... args) const {
    raise(ErrorCode::kRemote, "{}: {}", link, fmt::format(format, std::forward<Args>(args)...));
  }
};

namespace {

// Waits a little between passes that moved nothing: spinning first (a kernel publishes the next
// slot within microseconds), then sleeping, so that an idle link costs no core.
class Backoff {
 public:
  void idle() {
    if (++idlePasses_ < 256) {
      std::this_thread::yield();
    } else {
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  }
  void moved() { idlePasses_ = 0; }

 private:
  int idlePasses_ = 0;
};

bool everySlotSent(const FifoProxy::State& s) {
  for (size_t c = 0; c < s.outgoing.size(); ++c)
    if (acquired(s.outgoing[c].head) > s.sent[c].load(std::memory_order_relaxed)) return false;
  return true;
}

void writeLoop(FifoProxy::State& s) {
  std::vector<uint64_t> creditSent(s.incoming.size(), 0);
  Backoff backoff;
  while (!s.stopping.load() && !s.broken.load() && !s.peerLeft.load()) {
    bool moved = false;
    for (size_t c = 0; c < s.incoming.size(); ++c) {
      if (const uint64_t freed = acquired(s.incoming[c].tail); freed > creditSent[c]) {
        s.writeFrame({kCredit, static_cast<uint32_t>(c), freed});
        creditSent[c] = freed;
        moved = true;
      }
    }
    for (size_t c = 0; c < s.outgoing.size(); ++c) {
      const device::Fifo& out = s.outgoing[c];
      const uint64_t step = s.sent[c].load(std::memory_order_relaxed);
      if (acquired(out.head) > step &&
          step < s.peerFreed[c].load(std::memory_order_acquire) + s.nslots) {
        // Counted as sent before it goes: the peer may free it and credit it back before the
        // write returns, and a credit for more than was sent is a protocol error.
        s.sent[c].store(step + 1, std::memory_order_release);
        s.writeFrame({kSlot, static_cast<uint32_t>(c), step}, device::slotOf(out, step));
        device::freeSlot(out, step);  // its bytes are in the socket's buffer
        moved = true;
      }
    }
    if (moved) {
      backoff.moved();
    } else if (s.closing.load() && everySlotSent(s)) {
      s.writeFrame({kGoodbye, 0, 0});
      s.saidGoodbye.store(true);
      return;
    } else {
      backoff.idle();
    }
  }
}

void readLoop(FifoProxy::State& s) {
  std::vector<uint64_t> received(s.incoming.size(), 0);
  while (true) {
    const Header h = s.readHeader(Deadline::never());
    if (h.kind == kGoodbye) {  // the peer closed in good order: nothing more comes or goes
      s.peerLeft.store(true);
      return;
    }
    // Slots come for this side's incoming FIFOs, credits for its outgoing ones.
    const size_t channels = h.kind == kSlot     ? s.incoming.size()
                            : h.kind == kCredit ? s.outgoing.size()
                                                : 0;
    if (h.kind != kSlot && h.kind != kCredit) s.protocolError("a frame of kind {}", h.kind);
    if (h.channel >= channels) s.protocolError("a frame for channel {} of {}", h.channel, channels);
    if (h.kind == kSlot) {
      const device::Fifo& in = s.incoming[h.channel];
      if (h.value != received[h.channel])
        s.protocolError("slot {} on channel {}, expected {}", h.value, h.channel,
                        received[h.channel]);
      if (h.value >= acquired(in.tail) + in.nslots)
        s.protocolError("slot {} on channel {} beyond the credit given", h.value, h.channel);
      readAll(s.socket.get(), device::slotOf(in, h.value), in.slotBytes, Deadline::never(), s.link);
      device::Simple::publish(in, h.value);
      ++received[h.channel];
    } else {
      std::atomic<uint64_t>& credit = s.peerFreed[h.channel];
      if (h.value < credit.load() || h.value > s.sent[h.channel].load(std::memory_order_acquire))
        s.protocolError("a credit of {} slots on channel {} (had {}, sent {})", h.value, h.channel,
                        credit.load(), s.sent[h.channel].load());
      credit.store(h.value, std::memory_order_release);
    }
  }
}

void guarded(FifoProxy::State& s, void (*loop)(FifoProxy::State&)) {
  try {
    loop(s);
  } catch (const Error& error) {
    s.fail(error);
  } catch (const std::exception& error) {
    s.fail(Error(ErrorCode::kInternal, error.what()));
  }
}

}  // namespace

FifoProxy::FifoProxy(Fd socket, std::vector<device::Fifo> outgoing,
                     std::vector<device::Fifo> incoming, std::string peerName,
                     const Deadline& deadline)
    : state_(std::make_shared<State>()) {
  State& s = *state_;
  s.socket = std::move(socket);
  s.outgoing = std::move(outgoing);
  s.incoming = std::move(incoming);
  s.link = "the GPU link proxy of " + peerName;
  const size_t most = 0xffff;
  if ((s.outgoing.empty() && s.incoming.empty()) || s.outgoing.size() > most ||
      s.incoming.size() > most)
    raise(ErrorCode::kInternal, "GPU link proxy: {} outgoing and {} incoming FIFOs",
          s.outgoing.size(), s.incoming.size());
  const device::Fifo& first = s.outgoing.empty() ? s.incoming.front() : s.outgoing.front();
  s.nslots = first.nslots;
  s.slotBytes = first.slotBytes;
  const uint64_t geometry = geometryOf(first);
  for (const auto* fifos : {&s.outgoing, &s.incoming})
    for (const device::Fifo& f : *fifos)
      if (geometryOf(f) != geometry || acquired(f.head) != 0 || acquired(f.tail) != 0)
        raise(ErrorCode::kInternal,
              "GPU link proxy: FIFOs that differ in geometry or are not fresh");
  s.sent.reset(new std::atomic<uint64_t>[s.outgoing.size()]());
  s.peerFreed.reset(new std::atomic<uint64_t>[s.outgoing.size()]());

  // The peer's outgoing FIFOs are this side's incoming ones, and the other way round.
  const auto counts = static_cast<uint32_t>(s.outgoing.size() << 16 | s.incoming.size());
  const uint32_t mirrored = (counts & 0xffff) << 16 | counts >> 16;
  s.writeFrame({kHello, counts, geometry});
  const Header hello = s.readHeader(deadline);
  if (hello.kind != kHello || hello.channel != mirrored || hello.value != geometry)
    s.protocolError(
        "its FIFOs are {} out and {} in, of {} slots of {} bytes; this side's {} out and {} in, "
        "of {} of {} (kind {})",
        hello.channel >> 16, hello.channel & 0xffff, hello.value >> 32, hello.value & 0xffffffffu,
        s.outgoing.size(), s.incoming.size(), s.nslots, s.slotBytes, hello.kind);
  writer_ = std::thread(guarded, std::ref(s), writeLoop);
  try {
    reader_ = std::thread(guarded, std::ref(s), readLoop);
  } catch (...) {
    s.stopping.store(true);
    writer_.join();
    throw;
  }
}

void FifoProxy::close(std::chrono::milliseconds wait) {
  State& s = *state_;
  s.closing.store(true);
  const auto deadline = std::chrono::steady_clock::now() + wait;
  while (!s.saidGoodbye.load() && !s.broken.load() && !s.peerLeft.load() &&
         std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
}

FifoProxy::~FifoProxy() {
  state_->stopping.store(true);
  shutdown(state_->socket.get(), SHUT_RDWR);  // ends a read or write that waits
  writer_.join();
  reader_.join();
}

std::optional<Error> FifoProxy::failure() const {
  std::lock_guard lock(state_->mutex);
  return state_->failure;
}

}  // namespace tutti::runtime::gpu
