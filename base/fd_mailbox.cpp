#include "base/fd_mailbox.hpp"

#include <fmt/format.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstddef>
#include <cstring>

#include "base/byte_codec.hpp"
#include "base/error.hpp"

namespace tutti {
namespace {

constexpr uint32_t kMagic = 0x31444654;  // "TFD1"
constexpr size_t kMessageBytes = 4 + 8;  // magic, label
// Room for the credentials and a few descriptors: a stranger that sends more than one is dropped
// whole, and the kernel closes what did not fit.
constexpr size_t kMaxFds = 4;

struct Address {
  sockaddr_un address{};
  socklen_t length = 0;
};

Address abstractAddress(const std::string& name) {
  Address a;
  a.address.sun_family = AF_UNIX;
  if (name.size() + 1 > sizeof a.address.sun_path)
    raise(ErrorCode::kInvalidArgument, "fd mailbox name '{}' is longer than {} bytes", name,
          sizeof a.address.sun_path - 1);
  std::memcpy(a.address.sun_path + 1, name.data(), name.size());  // sun_path[0] = 0: abstract
  a.length = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name.size());
  return a;
}

}  // namespace

FdMailbox::FdMailbox(std::string job, int rank, std::vector<pid_t> peers)
    : job_(std::move(job)),
      rank_(rank),
      peers_(std::move(peers)),
      drops_(fmt::format("fd mailbox of rank {}", rank)) {
  const Address self = abstractAddress(nameOf(rank));
  socket_ = Fd(checkSys(socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0),
                        "fd mailbox: socket"));
  const int on = 1;
  checkSys(setsockopt(socket_.get(), SOL_SOCKET, SO_PASSCRED, &on, sizeof on),
           "fd mailbox: SO_PASSCRED");
  if (bind(socket_.get(), reinterpret_cast<const sockaddr*>(&self.address), self.length) != 0)
    throwSystemError(fmt::format("fd mailbox: bind @{}", nameOf(rank)), errno);
}

std::string FdMailbox::nameOf(int rank) const {
  return fmt::format("tutti-fd/{}/{}", job_, rank);
}

void FdMailbox::send(int to, uint64_t label, int fd, const Deadline& deadline) const {
  const Address peer = abstractAddress(nameOf(to));
  std::array<std::byte, kMessageBytes> payload;
  ByteWriter(payload).u32(kMagic).u64(label);
  iovec data{payload.data(), payload.size()};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  msghdr message{};
  message.msg_name = const_cast<sockaddr_un*>(&peer.address);
  message.msg_namelen = peer.length;
  message.msg_iov = &data;
  message.msg_iovlen = 1;
  message.msg_control = control;
  message.msg_controllen = sizeof control;
  cmsghdr* rights = CMSG_FIRSTHDR(&message);
  rights->cmsg_level = SOL_SOCKET;
  rights->cmsg_type = SCM_RIGHTS;
  rights->cmsg_len = CMSG_LEN(sizeof(int));
  std::memcpy(CMSG_DATA(rights), &fd, sizeof fd);
  Backoff backoff;
  while (sendmsg(socket_.get(), &message, MSG_NOSIGNAL) < 0) {
    // Not bound yet (ECONNREFUSED), or its queue is full (EAGAIN): both pass.
    if (errno != ECONNREFUSED && errno != ENOENT && errno != EAGAIN && errno != EINTR)
      throwSystemError(fmt::format("fd mailbox: sending to rank {}", to), errno);
    if (deadline.expired())
      raise(ErrorCode::kTimeout, "fd mailbox: rank {}'s mailbox @{} took no message in time", to,
            nameOf(to));
    backoff.pause();
  }
}

Fd FdMailbox::receive(pid_t from, uint64_t label, const Deadline& deadline) {
  for (;;) {
    if (auto it = kept_.find({from, label}); it != kept_.end()) {
      Fd fd = std::move(it->second);
      kept_.erase(it);
      return fd;
    }
    if (!readOne(deadline))
      raise(ErrorCode::kTimeout,
            "fd mailbox of rank {}: no descriptor labelled {} from pid {} in time", rank_, label,
            from);
  }
}

bool FdMailbox::readOne(const Deadline& deadline) {
  pollfd waiting{socket_.get(), POLLIN, 0};
  const int ready = poll(&waiting, 1, deadline.remainingMs());
  if (ready < 0 && errno != EINTR) throwSystemError("fd mailbox: poll", errno);
  if (ready <= 0) return !deadline.expired();
  std::array<std::byte, kMessageBytes + 1> payload;  // one more: a longer message is no message
  iovec data{payload.data(), payload.size()};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(ucred)) + CMSG_SPACE(kMaxFds * sizeof(int))];
  msghdr message{};
  message.msg_iov = &data;
  message.msg_iovlen = 1;
  message.msg_control = control;
  message.msg_controllen = sizeof control;
  const ssize_t got = recvmsg(socket_.get(), &message, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
  if (got < 0) {
    if (errno == EAGAIN || errno == EINTR) return true;
    throwSystemError("fd mailbox: recvmsg", errno);
  }
  std::vector<Fd> fds;
  const ucred* sender = nullptr;
  for (cmsghdr* c = CMSG_FIRSTHDR(&message); c; c = CMSG_NXTHDR(&message, c)) {
    if (c->cmsg_level != SOL_SOCKET) continue;
    if (c->cmsg_type == SCM_CREDENTIALS) sender = reinterpret_cast<const ucred*>(CMSG_DATA(c));
    if (c->cmsg_type == SCM_RIGHTS) {
      const size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
      for (size_t i = 0; i < count; ++i) {
        int fd = -1;
        std::memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof fd);
        fds.emplace_back(fd);
      }
    }
  }
  const pid_t pid = sender ? sender->pid : -1;
  const char* wrong = nullptr;
  if (std::find(peers_.begin(), peers_.end(), pid) == peers_.end())
    wrong = "not a peer of this job";
  else if (message.msg_flags & (MSG_CTRUNC | MSG_TRUNC) || fds.size() != 1)
    wrong = "a message without exactly one descriptor";
  else if (static_cast<size_t>(got) != kMessageBytes)
    wrong = "a message of the wrong length";
  uint64_t label = 0;
  if (!wrong) {
    ByteReader in(std::span(payload.data(), kMessageBytes), ErrorCode::kRemote, "fd message");
    if (in.u32() != kMagic) wrong = "not tutti's message";
    label = in.u64();
  }
  if (wrong) {
    drops_.dropped(fmt::format("pid {}: {}", pid, wrong));
    return true;  // its descriptors close with `fds`
  }
  kept_.try_emplace({pid, label}, std::move(fds.front()));
  return true;
}

}  // namespace tutti
