#include "transport/tcp/tcp_link.hpp"

#include <poll.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "base/byte_codec.hpp"
#include "base/log.hpp"

namespace tutti::transport::tcp {
namespace {

// Frames one sendmsg gathers (two iovecs each): small messages go out in few system calls.
constexpr int kFramesPerWrite = 16;
// What a receive asks for beyond the frame being read. Bytes that land there are copied once
// more, so a page: a small frame whole in one system call, a large one copies only its start.
constexpr size_t kInboxBytes = 4096;

// Into the slot's own header buffer: no allocation per message.
void encodeHeader(uint8_t* header, size_t bytes, const Tag& tag) {
  ByteWriter out(std::span(reinterpret_cast<std::byte*>(header), kFrameHeaderBytes));
  out.u32(static_cast<uint32_t>(bytes));
  for (const uint64_t word : tag.words) out.u64(word);
}

// The frame's length; its tag into *tag. Any 28 bytes decode: the length is the caller's to
// bound.
uint32_t decodeHeader(const uint8_t* header, Tag* tag, std::string_view what) {
  ByteReader in(std::span(reinterpret_cast<const std::byte*>(header), kFrameHeaderBytes),
                ErrorCode::kRemote, what);
  const uint32_t length = in.u32();
  for (uint64_t& word : tag->words) word = in.u64();
  return length;
}

}  // namespace

void PendingWrites::add(TcpLink* link) {
  if (link->listed_) return;
  link->listed_ = true;
  links_.push_back(link);
}

void PendingWrites::flush() {
  std::erase_if(links_, [](TcpLink* link) {
    if (link->flushWrites()) return false;
    link->listed_ = false;
    return true;
  });
}

TcpLink::TcpLink(int rank, std::string what, std::vector<Fd> sockets, size_t slotBytes, int slots,
                 PendingWrites* pending)
    : rank_(rank),
      what_(std::move(what)),
      slotBytes_(slotBytes),
      slots_(static_cast<uint64_t>(slots)),
      pending_(pending),
      sendSlots_(slots, slotBytes),
      sendLength_(slots),
      sendData_(slots),
      sendHeader_(slots),
      sent_(slots),
      recvSlots_(slots, slotBytes),
      recvEnvelope_(slots),
      complete_(slots) {
  const uint64_t n = sockets.size();
  for (uint64_t i = 0; i < n; ++i) {
    Socket s;
    s.fd = std::move(sockets[i]);
    s.nextWrite = i;
    s.nextRead = i;
    s.inbox = std::make_unique_for_overwrite<std::byte[]>(kInboxBytes);
    sockets_.push_back(std::move(s));
  }
}

Error TcpLink::remoteClosed(const char* how) const {
  return Error(ErrorCode::kRemote, fmt::format("tcp: {} {} (seen by rank {})", what_, how, rank_));
}

// ---- sending ----

bool TcpLink::hasFreeSendSlot() {
  if (writeError_) throw *writeError_;
  if (posted_ - freed_ < slots_) return true;
  flushWrites();
  if (writeError_) throw *writeError_;
  return posted_ - freed_ < slots_;
}

void* TcpLink::Sender::tryAcquire() {
  TcpLink& l = link_;
  if (!l.hasFreeSendSlot()) return nullptr;
  l.acquired_ = true;
  return l.sendSlots_.claim(l.posted_);
}

bool TcpLink::Sender::tryPostFrom(const void* data, size_t bytes, const Tag& tag) {
  TcpLink& l = link_;
  if (bytes > l.slotBytes_)
    raise(ErrorCode::kInvalidUsage, "tcp: post of {} bytes to {} exceeds the slot size {}", bytes,
          l.what_, l.slotBytes_);
  if (!l.hasFreeSendSlot()) return false;
  l.acquired_ = false;  // a slot acquired before is this frame's, and goes back with it
  l.enqueue(static_cast<const std::byte*>(data), bytes, tag);
  return true;
}

void TcpLink::Sender::post(size_t bytes, const Tag& tag) {
  TcpLink& l = link_;
  if (!l.acquired_)
    raise(ErrorCode::kInvalidUsage, "tcp: post to {} without a slot from tryAcquire", l.what_);
  if (bytes > l.slotBytes_)
    raise(ErrorCode::kInvalidUsage, "tcp: post of {} bytes to {} exceeds the slot size {}", bytes,
          l.what_, l.slotBytes_);
  l.acquired_ = false;
  l.enqueue(l.sendSlots_.claim(l.posted_), bytes, tag);
}

void TcpLink::enqueue(const std::byte* data, size_t bytes, const Tag& tag) {
  const uint64_t frame = posted_;
  const size_t entry = frame % slots_;
  sendLength_[entry] = static_cast<uint32_t>(bytes);
  sendData_[entry] = data;
  encodeHeader(sendHeader_[entry].data(), bytes, tag);
  ++posted_;
  if (writeError_) return;  // thrown by the next tryAcquire
  if (writeSocket(static_cast<int>(frame % sockets_.size()))) pending_->add(this);
}

bool TcpLink::flushWrites() {
  bool queued = false;
  for (size_t i = 0; i < sockets_.size() && !writeError_; ++i)
    if (sockets_[i].nextWrite < posted_) queued |= writeSocket(static_cast<int>(i));
  return queued && !writeError_;
}

bool TcpLink::writeSocket(int index) {
  Socket& s = sockets_[index];
  const uint64_t step = sockets_.size();
  while (s.nextWrite < posted_) {
    iovec iov[2 * kFramesPerWrite];
    int count = 0;
    size_t total = 0;
    size_t skip = s.written;  // only the first frame is partly sent
    for (uint64_t f = s.nextWrite; f < posted_ && count + 2 <= 2 * kFramesPerWrite; f += step) {
      const size_t entry = f % slots_;
      if (skip < kFrameHeaderBytes) {
        iov[count++] = {sendHeader_[entry].data() + skip, kFrameHeaderBytes - skip};
        total += kFrameHeaderBytes - skip;
        skip = 0;
      } else {
        skip -= kFrameHeaderBytes;
      }
      if (sendLength_[entry] > skip) {
        iov[count++] = {const_cast<std::byte*>(sendData_[entry]) + skip, sendLength_[entry] - skip};
        total += sendLength_[entry] - skip;
      }
      skip = 0;
    }
    msghdr message{};
    message.msg_iov = iov;
    message.msg_iovlen = static_cast<size_t>(count);
    const ssize_t n = sendmsg(s.fd.get(), &message, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return true;
      if (errno == EPIPE || errno == ECONNRESET)
        writeError_ = remoteClosed("closed the connection");
      else
        writeError_ = Error(ErrorCode::kSystem, fmt::format("tcp: send to {}: {} (errno {})", what_,
                                                            std::strerror(errno), errno));
      return false;
    }
    advanceWritten(s, static_cast<size_t>(n));
    if (static_cast<size_t>(n) < total) return true;  // the socket buffer is full
  }
  return false;
}

void TcpLink::copyFramesInPlace() noexcept {
  // The window [freed_, posted_) holds distinct residues, so each frame has a slot of its own.
  for (uint64_t frame = freed_; frame < posted_; ++frame) {
    const size_t entry = frame % slots_;
    if (sent_[entry]) continue;
    std::byte* slot = sendSlots_.claim(frame);
    if (sendData_[entry] == slot) continue;
    if (sendLength_[entry] > 0) std::memcpy(slot, sendData_[entry], sendLength_[entry]);
    sendData_[entry] = slot;
  }
}

void TcpLink::advanceWritten(Socket& s, size_t bytes) {
  // Every frame has a header, so each one completed here consumed some of `bytes`.
  const uint64_t step = sockets_.size();
  while (bytes > 0) {
    const size_t frameBytes = kFrameHeaderBytes + sendLength_[s.nextWrite % slots_];
    const size_t take = std::min(bytes, frameBytes - s.written);
    s.written += take;
    bytes -= take;
    if (s.written < frameBytes) break;
    frameSent(s.nextWrite);
    s.nextWrite += step;
    s.written = 0;
  }
}

void TcpLink::frameSent(uint64_t frame) {
  sent_[frame % slots_] = true;
  while (freed_ < posted_ && sent_[freed_ % slots_]) {
    sent_[freed_ % slots_] = false;
    sendSlots_.free(freed_);
    ++freed_;
  }
}

// ---- receiving ----

bool TcpLink::receive(Socket& s, bool* drained) {
  iovec iov[2];
  int count = 0;
  if (s.headerGot == kFrameHeaderBytes && s.payloadGot < s.length) {
    if (s.payloadGot == 0) s.payloadTo = payloadTarget(s);
    iov[count++] = {s.payloadTo + s.payloadGot, s.length - s.payloadGot};
  }
  iov[count++] = {s.inbox.get(), kInboxBytes};
  const size_t asked = (count == 2 ? iov[0].iov_len : 0) + kInboxBytes;
  msghdr message{};
  message.msg_iov = iov;
  message.msg_iovlen = static_cast<size_t>(count);
  const ssize_t n = recvmsg(s.fd.get(), &message, MSG_DONTWAIT);
  const int err = errno;
  if (n > 0) {
    size_t got = static_cast<size_t>(n);
    if (count == 2) {
      const size_t intoPayload = std::min(got, iov[0].iov_len);
      s.payloadGot += intoPayload;
      got -= intoPayload;
    }
    s.inboxBegin = 0;
    s.inboxEnd = got;
    *drained = static_cast<size_t>(n) < asked;
    return true;
  }
  if (n == 0) {
    s.readError = remoteClosed("closed the connection");
  } else if (err == ECONNRESET) {
    s.readError = remoteClosed("closed the connection (connection reset)");
  } else if (err != EAGAIN && err != EWOULDBLOCK && err != EINTR) {
    s.readError = Error(ErrorCode::kSystem, fmt::format("tcp: recv from {}: {} (errno {})", what_,
                                                        std::strerror(err), err));
  }
  return false;
}

bool TcpLink::takeFromInbox(Socket& s) {
  auto take = [&s](std::byte* to, size_t want) {
    const size_t n = std::min(want, s.inboxEnd - s.inboxBegin);
    if (n > 0) std::memcpy(to, s.inbox.get() + s.inboxBegin, n);
    s.inboxBegin += n;
    return n;
  };
  if (s.headerGot < kFrameHeaderBytes) {
    s.headerGot +=
        take(reinterpret_cast<std::byte*>(s.header) + s.headerGot, kFrameHeaderBytes - s.headerGot);
    if (s.headerGot < kFrameHeaderBytes) return false;
    s.length = decodeHeader(s.header, &s.tag, what_);
    s.payloadGot = 0;
    if (s.length > slotBytes_) {
      s.readError =
          Error(ErrorCode::kRemote, fmt::format("tcp: peer {} sent a frame of {} bytes, limit {}",
                                                what_, s.length, slotBytes_));
      return false;
    }
  }
  if (s.payloadGot < s.length) {
    if (s.inboxBegin == s.inboxEnd) return false;
    if (s.payloadGot == 0) s.payloadTo = payloadTarget(s);
    s.payloadGot += take(s.payloadTo + s.payloadGot, s.length - s.payloadGot);
  }
  return s.payloadGot == s.length;
}

void TcpLink::readSocket(int index) {
  Socket& s = sockets_[index];
  const uint64_t step = sockets_.size();
  bool drained = false;
  while (!s.readError && s.nextRead - consumed_ < slots_) {
    if (!takeFromInbox(s)) {
      if (s.readError || drained || !receive(s, &drained)) return;
      continue;
    }
    if (s.length > 0 && s.payloadTo == receiveTo_) receivedInPlace_ = true;
    recvEnvelope_[s.nextRead % slots_] = {s.length, s.tag};
    complete_[s.nextRead % slots_] = true;
    s.nextRead += step;
    s.headerGot = 0;
  }
}

std::byte* TcpLink::payloadTarget(const Socket& s) {
  if (s.nextRead == consumed_ && receiveTo_ && Envelope{s.length, s.tag} == receiveExpected_)
    return receiveTo_;
  return recvSlots_.claim(s.nextRead);
}

bool TcpLink::nextFrameComplete() {
  if (complete_[consumed_ % slots_]) return true;
  const int index = static_cast<int>(consumed_ % sockets_.size());
  readSocket(index);
  if (complete_[consumed_ % slots_]) return true;
  if (sockets_[index].readError) throw *sockets_[index].readError;
  return false;
}

const void* TcpLink::Receiver::tryPeek(Envelope* got) {
  TcpLink& l = link_;
  if (!l.nextFrameComplete()) return nullptr;
  l.peeked_ = true;
  *got = l.recvEnvelope_[l.consumed_ % l.slots_];
  return l.recvSlots_.claim(l.consumed_);
}

bool TcpLink::Receiver::tryReceiveInto(void* dst, const Envelope& expected, Envelope* got) {
  TcpLink& l = link_;
  l.receiveTo_ = static_cast<std::byte*>(dst);
  l.receiveExpected_ = expected;
  if (!l.nextFrameComplete()) return false;
  l.receiveTo_ = nullptr;
  const uint64_t entry = l.consumed_ % l.slots_;
  *got = l.recvEnvelope_[entry];
  if (*got != expected) return true;  // left in its slot: the caller reports the mismatch
  if (!l.receivedInPlace_ && expected.bytes > 0)
    std::memcpy(dst, l.recvSlots_.claim(l.consumed_), expected.bytes);
  l.receivedInPlace_ = false;
  l.complete_[entry] = false;
  l.recvSlots_.free(l.consumed_);
  ++l.consumed_;
  return true;
}

void TcpLink::Receiver::abandonReceive() {
  TcpLink& l = link_;
  if (!l.receiveTo_) return;
  Socket& s = l.sockets_[l.consumed_ % l.sockets_.size()];
  // Between frames payloadGot and payloadTo still describe the last one: only a whole header
  // says they are this frame's.
  const bool partlyThere = s.nextRead == l.consumed_ && s.headerGot == kFrameHeaderBytes &&
                           s.payloadGot > 0 && s.payloadTo == l.receiveTo_;
  if (partlyThere || l.receivedInPlace_) {
    // The frame's bytes went to memory that is no longer ours to write: this socket stops
    // reading (readSocket checks readError first), and the frame is never delivered. An error
    // already there stays: it says why more truly.
    l.complete_[l.consumed_ % l.slots_] = false;
    if (!s.readError)
      s.readError = Error(ErrorCode::kInternal,
                          fmt::format("tcp: a receive from {} was abandoned halfway", l.what_));
  }
  l.receiveTo_ = nullptr;
  l.receivedInPlace_ = false;
}

void TcpLink::Receiver::release() {
  TcpLink& l = link_;
  if (!l.peeked_)
    raise(ErrorCode::kInvalidUsage, "tcp: release of a slot from {} that was not peeked", l.what_);
  l.peeked_ = false;
  l.complete_[l.consumed_ % l.slots_] = false;
  l.recvSlots_.free(l.consumed_);
  ++l.consumed_;
}

// ---- closing ----

void TcpLink::addPollFds(std::vector<pollfd>& fds) const {
  for (const Socket& s : sockets_)
    if (s.fd.valid())
      fds.push_back(
          {s.fd.get(), static_cast<short>(POLLIN | (s.nextWrite < posted_ ? POLLOUT : 0)), 0});
}

void TcpLink::discardInput() {
  char sink[16 << 10];
  for (Socket& s : sockets_) {
    if (!s.fd.valid()) continue;
    for (;;) {
      const ssize_t n = recv(s.fd.get(), sink, sizeof(sink), MSG_DONTWAIT);
      if (n > 0 || (n < 0 && errno == EINTR)) continue;
      break;
    }
  }
}

void TcpLink::close(bool abandoned) {
  if (posted_ != freed_ && !writeError_ && !abandoned)
    log::warn("tcp: rank {} closes its connection to {} with {} frames unsent", rank_, what_,
              posted_ - freed_);
  // Unread data at close() makes the kernel send a reset, which may cost the peer data it has
  // not read yet: end our direction cleanly first and drop what is left to read.
  for (Socket& s : sockets_) {
    if (!s.fd.valid()) continue;
    shutdown(s.fd.get(), SHUT_WR);
  }
  discardInput();
  for (Socket& s : sockets_) s.fd.reset();
}

}  // namespace tutti::transport::tcp
