// One UCP context and its one worker, owned together (a context per transport instance: each
// communicator has its own, so that the tag space of one never meets another's). Features: TAG and
// WAKEUP; thread mode serialized (the runtime calls a transport from one thread at a time, not
// always the same one). Also the address codec: a worker address travels through the bootstrap as
// text, "host:pid/ucxMAJOR.MINOR/" then the address's bytes in hex, so that error messages can name
// the peer's host and process, and so that a peer with another UCX release is refused before UCX
// reads its address: UCX 1.13 aborts the process (an assertion) on an address it cannot parse.
#pragma once

#include <ucp/api/ucp.h>

#include <string>
#include <vector>

namespace tutti::transport::ucx {

// Throws kSystem "ucx: <what>: <UCX's text for status>" unless status is UCS_OK.
void check(ucs_status_t status, const char* what);

class Worker {
 public:
  // Reads the UCX_* variables (UCX_TLS, ...) of the environment. A UCX that cannot create a
  // context or worker (no usable transport, a bad UCX_* value) is a kSystem error saying so.
  // `eager`: tagged messages of every size go eagerly, without UCX's rendezvous (unless the user
  // set UCX_RNDV_THRESH); for hosts without RDMA, where the rendezvous buys no zero-copy read.
  explicit Worker(bool eager);
  ~Worker();
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;

  ucp_worker_h get() const { return worker_; }
  // Whether messages go eagerly (asked for, and UCX_RNDV_THRESH left to tutti).
  bool eager() const { return eager_; }
  // "host:pid/ucxMAJOR.MINOR/<hex of the worker address>".
  const std::string& address() const { return address_; }
  // The worker's event descriptor, readable after arm() returned true once something arrives.
  int eventFd() const { return eventFd_; }
  // Arms eventFd(); false when events are already waiting (UCS_ERR_BUSY): progress takes them,
  // and the descriptor stays quiet until then. Where it cannot be armed for another reason, true:
  // a waiter sleeps its backoff's bounded interval.
  bool arm();

 private:
  ucp_context_h context_ = nullptr;
  ucp_worker_h worker_ = nullptr;
  std::string address_;
  int eventFd_ = -1;
  bool eager_ = false;
};

// The address bytes of an address() string; `what` ("rank 3 (host:pid)") names its owner in the
// error a malformed one (kRemote) or one of another UCX release (kInvalidUsage) raises.
std::vector<uint8_t> decodeAddress(const std::string& address, const std::string& what);
// "host:pid" of an address() string: how messages name the peer.
std::string placeOf(const std::string& address);

}  // namespace tutti::transport::ucx
