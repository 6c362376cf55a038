// The store client: one connection, one request at a time (a mutex serialises threads). Errors
// the server answers come back with the server's message; a connection that fails mid-request
// (closed, reset, no answer in time) is out of step with the server and is not used again.
#include <mutex>

#include "base/config.hpp"
#include "base/error.hpp"
#include "base/socket.hpp"
#include "runtime/bootstrap/bootstrap.hpp"
#include "runtime/bootstrap/wire.hpp"

namespace tutti::bootstrap {
namespace {

using namespace std::chrono_literals;
using wire::Type;

// How long after the caller's deadline we still wait for the server's own timeout answer: the
// server ends the wait itself, so that the connection stays in step.
constexpr std::chrono::milliseconds kGrace = 5s;
constexpr std::chrono::milliseconds kFrameTime = 30s;

uint64_t waitMs(const Deadline& deadline) {
  return deadline.at() == Deadline::Clock::time_point::max()
             ? UINT64_MAX
             : static_cast<uint64_t>(deadline.remainingMs());
}

Deadline withGrace(const Deadline& deadline) {
  if (deadline.at() == Deadline::Clock::time_point::max()) return deadline;
  return Deadline::after(std::chrono::milliseconds(deadline.remainingMs()) + kGrace);
}

void checkKey(const std::string& key) {
  if (key.size() > wire::kMaxKeyBytes)
    raise(ErrorCode::kInvalidArgument, "store key of {} bytes exceeds the limit of {} bytes",
          key.size(), wire::kMaxKeyBytes);
}

std::string keyName(const std::string& key) {
  return "key '" + key + "'";
}

class Client final : public Store {
 public:
  Client(Fd fd, std::string what) : fd_(std::move(fd)), what_(std::move(what)) {}

  void set(const std::string& key, const std::string& value, const Deadline& deadline) override {
    checkKey(key);
    if (value.size() > wire::kMaxValueBytes)
      raise(ErrorCode::kInvalidArgument,
            "value of {} bytes for store key '{}' exceeds the limit "
            "of {} bytes",
            value.size(), key, wire::kMaxValueBytes);
    ByteWriter request;
    request.str(key).str(value);
    std::lock_guard lock(mutex_);
    const std::string reply = exchange(Type::kSet, request.bytes(), deadline, keyName(key));
    parse(reply, [](ByteReader&) {});
  }

  std::string get(const std::string& key, const Deadline& deadline) override {
    checkKey(key);
    ByteWriter request;
    request.str(key).u64(waitMs(deadline));
    std::lock_guard lock(mutex_);
    const std::string reply =
        exchange(Type::kGet, request.bytes(), withGrace(deadline), keyName(key));
    std::string value;
    parse(reply, [&](ByteReader& in) { value = in.str(wire::kMaxValueBytes); });
    return value;
  }

  int64_t add(const std::string& key, int64_t delta) override {
    checkKey(key);
    ByteWriter request;
    request.str(key).i64(delta);
    std::lock_guard lock(mutex_);
    const std::string reply =
        exchange(Type::kAdd, request.bytes(), Deadline::fromConfig(), keyName(key));
    int64_t value = 0;
    parse(reply, [&](ByteReader& in) { value = in.i64(); });
    return value;
  }

  bool check(const std::string& key, const Deadline& deadline) override {
    checkKey(key);
    ByteWriter request;
    request.str(key);
    std::lock_guard lock(mutex_);
    const std::string reply = exchange(Type::kCheck, request.bytes(), deadline, keyName(key));
    bool found = false;
    parse(reply, [&](ByteReader& in) { found = in.u8() != 0; });
    return found;
  }

  void join(int rank, int nranks, const std::string& identity, const Deadline& deadline) override {
    if (identity.size() > wire::kMaxKeyBytes)
      raise(ErrorCode::kInvalidArgument, "identity of {} bytes exceeds the limit of {} bytes",
            identity.size(), wire::kMaxKeyBytes);
    ByteWriter request;
    request.i32(rank).i32(nranks).str(identity).u64(waitMs(deadline));
    std::lock_guard lock(mutex_);
    const std::string reply = exchange(Type::kJoin, request.bytes(), withGrace(deadline),
                                       fmt::format("rank {} of {}", rank, nranks));
    parse(reply, [](ByteReader&) {});
  }

  bool reportFailure(const std::string& message) override {
    ByteWriter request;
    request.str(message.substr(0, wire::kMaxValueBytes));
    std::lock_guard lock(mutex_);
    try {
      const std::string reply =
          exchange(Type::kFail, request.bytes(), Deadline::fromConfig(), "the job");
      parse(reply, [](ByteReader&) {});
      return true;
    } catch (const Error& error) {
      if (error.code() != ErrorCode::kInvalidUsage) throw;
      return false;  // refused, or the job had failed already
    }
  }

 private:
  // Sends one request and returns the OK payload; throws the server's error otherwise. `subject`
  // names what the request is about, for messages (a key, a rank).
  std::string exchange(Type type, std::string_view request, const Deadline& deadline,
                       const std::string& subject) {
    const std::string op = fmt::format("{} of {}", wire::typeName(type), subject);
    if (!broken_.empty())
      raise(ErrorCode::kRemote, "the connection to the {} was lost earlier: {}", what_, broken_);
    std::optional<wire::Frame> reply;
    try {
      wire::writeFrame(fd_.get(), type, request, deadline, what_);
      reply = wire::readFrame(fd_.get(), false, deadline, kFrameTime, what_);
      if (!reply) raise(ErrorCode::kRemote, "the {} closed the connection", what_);
    } catch (const Error& error) {
      broken_ = error.what();
      const ErrorCode code =
          error.code() == ErrorCode::kTimeout ? ErrorCode::kTimeout : ErrorCode::kRemote;
      raise(code, "{}: {}", op, error.what());
    }
    if (reply->type == Type::kOk) return std::move(reply->payload);
    uint8_t code = 0;
    std::string message;
    parse(reply->payload, [&](ByteReader& in) {
      code = in.u8();
      message = in.str(wire::kMaxValueBytes);
    });
    if (code == static_cast<uint8_t>(wire::ReplyCode::kInvalidUsage))
      throw Error(ErrorCode::kInvalidUsage, message);
    if (code == static_cast<uint8_t>(wire::ReplyCode::kTimeout))
      raise(ErrorCode::kTimeout, "{} in the {} timed out: {}", op, what_, message);
    raise(ErrorCode::kRemote, "{} failed in the {}: {}", op, what_, message);
  }

  // Parses a reply payload; a malformed one means the connection cannot be trusted any more.
  template <typename Parse>
  void parse(const std::string& payload, Parse&& body) {
    try {
      ByteReader in = wire::payloadReader(payload, what_);
      body(in);
      in.end();
    } catch (const Error& error) {
      broken_ = error.what();
      throw;
    }
  }

  std::mutex mutex_;
  Fd fd_;
  std::string what_;
  std::string broken_;  // why the connection may not be used any more; empty while it is fine
};

}  // namespace

std::unique_ptr<Store> connectStore(const SockAddr& server, const Secret& secret,
                                    const Deadline& deadline, const Claim& claim) {
  const std::string what = "store at " + server.toString();
  // Nobody listening is worth retrying for a while (rank 0 may start late), not for the whole
  // timeout: a rank 0 that exited or never started would keep every rank waiting in silence.
  const Deadline rendezvousWait =
      Deadline::after(std::chrono::seconds(config::getInt("TUTTI_RENDEZVOUS_WAIT")));
  const Deadline retryUntil = rendezvousWait.at() < deadline.at() ? rendezvousWait : deadline;
  Fd fd;
  try {
    fd = connectTo(server, retryUntil);
  } catch (const Error& error) {
    if (error.code() != ErrorCode::kTimeout) throw;
    raise(ErrorCode::kTimeout, "nobody is listening at {} (rank 0 not started or exited): {}",
          server.toString(), error.what());
  }
  try {
    wire::writeFrame(fd.get(), Type::kClaim, wire::encodeClaim(claim), deadline, what);
    authenticateAsClient(fd.get(), secret, deadline, what);
    wire::writeFrame(fd.get(), Type::kHello, {}, deadline, what);
    auto reply = wire::readFrame(fd.get(), false, deadline, kFrameTime, what);
    if (!reply) raise(ErrorCode::kRemote, "the {} closed the connection", what);
    if (reply->type != Type::kOk || !reply->payload.empty())
      raise(ErrorCode::kRemote, "the {} refused HELLO", what);
  } catch (const Error& error) {
    raise(error.code() == ErrorCode::kTimeout ? ErrorCode::kTimeout : ErrorCode::kRemote,
          "cannot join the {}: {} (do all ranks use the same unique id or TUTTI_SECRET?)", what,
          error.what());
  }
  return std::make_unique<Client>(std::move(fd), what);
}

}  // namespace tutti::bootstrap
