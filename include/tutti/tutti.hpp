// tutti's C++ API: RAII over the C ABI of tutti.h. Failures throw tutti::CommError, which
// carries the result code and the message naming rank, operation and sequence number.
#pragma once

#include <chrono>
#include <cstdint>
#include <exception>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "tutti/tutti.h"

namespace tutti {

class CommError : public std::runtime_error {
 public:
  CommError(tuttiResult_t code, const std::string& message)
      : std::runtime_error(message), code_(code) {}
  tuttiResult_t code() const { return code_; }

 private:
  tuttiResult_t code_;
};

inline void check(tuttiResult_t result) {
  if (result != tuttiSuccess)
    throw CommError(result,
                    std::string(tutti_get_error_string(result)) + ": " + tutti_get_last_error());
}

// The tutti data type of a C++ element type.
template <typename T>
constexpr tuttiDataType_t dataTypeOf() {
  if constexpr (std::is_same_v<T, int8_t>)
    return tuttiInt8;
  else if constexpr (std::is_same_v<T, uint8_t>)
    return tuttiUint8;
  else if constexpr (std::is_same_v<T, int32_t>)
    return tuttiInt32;
  else if constexpr (std::is_same_v<T, uint32_t>)
    return tuttiUint32;
  else if constexpr (std::is_same_v<T, int64_t>)
    return tuttiInt64;
  else if constexpr (std::is_same_v<T, uint64_t>)
    return tuttiUint64;
  else if constexpr (std::is_same_v<T, float>)
    return tuttiFloat32;
  else if constexpr (std::is_same_v<T, double>)
    return tuttiFloat64;
  else
    static_assert(sizeof(T) == 0, "tutti has no data type for this element type");
}

// `count` elements of T in registered memory (tutti_mem_alloc), zero-filled and freed on
// destruction: an all-reduce on such arrays on every rank of a one-host communicator reads the
// peers' arrays in place (the direct algorithm).
template <typename T>
class RegisteredArray {
  static_assert(std::is_trivially_copyable_v<T>, "collectives move bytes");

 public:
  explicit RegisteredArray(size_t count) : count_(count) {
    void* memory = nullptr;
    check(tutti_mem_alloc(&memory, (count > 0 ? count : 1) * sizeof(T)));
    data_ = static_cast<T*>(memory);
  }
  ~RegisteredArray() { tutti_mem_free(data_); }
  RegisteredArray(RegisteredArray&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)), count_(std::exchange(other.count_, 0)) {}
  RegisteredArray& operator=(RegisteredArray&& other) noexcept {
    std::swap(data_, other.data_);
    std::swap(count_, other.count_);
    return *this;
  }
  RegisteredArray(const RegisteredArray&) = delete;
  RegisteredArray& operator=(const RegisteredArray&) = delete;

  T* data() { return data_; }
  const T* data() const { return data_; }
  size_t size() const { return count_; }
  T& operator[](size_t i) { return data_[i]; }
  const T& operator[](size_t i) const { return data_[i]; }
  T* begin() { return data_; }
  T* end() { return data_ + count_; }

 private:
  T* data_ = nullptr;
  size_t count_ = 0;
};

// An asynchronous operation in flight; waits for it on destruction.
class Request {
 public:
  Request() = default;
  explicit Request(tuttiRequest_t handle) : handle_(handle) {}
  Request(Request&& other) noexcept : handle_(std::exchange(other.handle_, nullptr)) {}
  Request& operator=(Request&& other) noexcept {
    if (this != &other) {
      reset();
      handle_ = std::exchange(other.handle_, nullptr);
    }
    return *this;
  }
  ~Request() { reset(); }

  // True when finished; throws when it failed.
  bool test() {
    const tuttiResult_t result = tutti_test(handle_);
    if (result == tuttiInProgress) return false;
    check(result);
    return true;
  }
  void wait() { check(tutti_wait(handle_)); }
  // False when not finished within timeout (the request stays pending).
  bool waitFor(std::chrono::milliseconds timeout) {
    const tuttiResult_t result = tutti_wait_timeout(handle_, timeout.count());
    if (result == tuttiTimeout && tutti_test(handle_) == tuttiInProgress) return false;
    check(result);
    return true;
  }

 private:
  void reset() {
    if (handle_) tutti_request_free(handle_);
    handle_ = nullptr;
  }
  tuttiRequest_t handle_ = nullptr;
};

class Comm {
 public:
  Comm() = default;
  explicit Comm(tuttiComm_t handle) : handle_(handle) {}
  Comm(Comm&& other) noexcept : handle_(std::exchange(other.handle_, nullptr)) {}
  Comm& operator=(Comm&& other) noexcept {
    if (this != &other) {
      reset();
      handle_ = std::exchange(other.handle_, nullptr);
    }
    return *this;
  }
  ~Comm() { reset(); }

  static tuttiUniqueId uniqueId() {
    tuttiUniqueId id;
    check(tutti_get_unique_id(&id));
    return id;
  }
  static Comm fromId(const tuttiUniqueId& id, int rank, int nranks) {
    tuttiComm_t handle = nullptr;
    check(tutti_comm_init_rank(&handle, id, rank, nranks));
    return Comm(handle);
  }
  static Comm fromEnv() {
    tuttiComm_t handle = nullptr;
    check(tutti_comm_init_env(&handle));
    return Comm(handle);
  }
  static std::vector<Comm> world(int nranks) {
    std::vector<tuttiComm_t> handles(static_cast<size_t>(nranks), nullptr);
    check(tutti_comm_init_all(handles.data(), nranks));
    std::vector<Comm> comms;
    for (tuttiComm_t handle : handles) comms.emplace_back(handle);
    return comms;
  }

  tuttiComm_t handle() const { return handle_; }
  int rank() const { return query(tutti_comm_rank); }
  int size() const { return query(tutti_comm_size); }
  int localRank() const { return query(tutti_comm_local_rank); }
  int localSize() const { return query(tutti_comm_local_size); }
  // An empty Comm when color is TUTTI_SPLIT_NOCOLOR.
  Comm split(int color, int key) const {
    tuttiComm_t child = nullptr;
    check(tutti_comm_split(handle_, color, key, &child));
    return Comm(child);
  }
  // The same with a config (tutti_comm_split_config), e.g. one communicator per NIC rail.
  Comm split(int color, int key, const tuttiConfig_t& config) const {
    tuttiComm_t child = nullptr;
    check(tutti_comm_split_config(handle_, color, key, &config, &child));
    return Comm(child);
  }
  // The survivors' communicator (tutti_comm_shrink): this one without `excluded` and, with
  // TUTTI_SHRINK_DEAD in flags, without the ranks found gone.
  Comm shrink(const std::vector<int>& excluded, int flags = TUTTI_SHRINK_DEFAULT) const {
    tuttiComm_t child = nullptr;
    check(tutti_comm_shrink(handle_, excluded.data(), static_cast<int>(excluded.size()), &child,
                            flags));
    return Comm(child);
  }
  // A grow token for this communicator (tutti_comm_grow_id), for the newcomers.
  tuttiUniqueId growId() const {
    tuttiUniqueId id;
    check(tutti_comm_grow_id(handle_, &id));
    return id;
  }
  // The enlarged communicator of newSize ranks, on a member (tutti_comm_grow).
  Comm grow(int newSize) const {
    tuttiComm_t child = nullptr;
    check(tutti_comm_grow(handle_, newSize, nullptr, -1, &child));
    return Comm(child);
  }
  // A newcomer's: rank `rank` of the grown communicator that `token` names.
  static Comm joinGrowing(const tuttiUniqueId& token, int rank, int newSize) {
    tuttiComm_t handle = nullptr;
    check(tutti_comm_grow(nullptr, newSize, &token, rank, &handle));
    return Comm(handle);
  }
  void abort() { check(tutti_comm_abort(handle_)); }
  // The stall timeout of the operations that start after the call (tutti_comm_set_timeout).
  void setTimeout(std::chrono::milliseconds timeout) {
    check(tutti_comm_set_timeout(handle_, timeout.count()));
  }

  template <typename T>
  void allreduce(const T* send, T* recv, size_t count, tuttiRedOp_t op) {
    check(tutti_allreduce(send, recv, count, dataTypeOf<T>(), op, handle_, nullptr));
  }
  template <typename T>
  Request allreduceAsync(const T* send, T* recv, size_t count, tuttiRedOp_t op) {
    tuttiRequest_t request = nullptr;
    check(tutti_allreduce(send, recv, count, dataTypeOf<T>(), op, handle_, &request));
    return Request(request);
  }
  template <typename T>
  void reduceScatter(const T* send, T* recv, size_t recvCount, tuttiRedOp_t op) {
    check(tutti_reduce_scatter(send, recv, recvCount, dataTypeOf<T>(), op, handle_, nullptr));
  }
  template <typename T>
  void allgather(const T* send, T* recv, size_t sendCount) {
    check(tutti_allgather(send, recv, sendCount, dataTypeOf<T>(), handle_, nullptr));
  }
  template <typename T>
  void broadcast(const T* send, T* recv, size_t count, int root) {
    check(tutti_broadcast(send, recv, count, dataTypeOf<T>(), root, handle_, nullptr));
  }
  template <typename T>
  void reduce(const T* send, T* recv, size_t count, tuttiRedOp_t op, int root) {
    check(tutti_reduce(send, recv, count, dataTypeOf<T>(), op, root, handle_, nullptr));
  }
  template <typename T>
  void alltoall(const T* send, T* recv, size_t count) {
    check(tutti_alltoall(send, recv, count, dataTypeOf<T>(), handle_, nullptr));
  }
  void barrier() { check(tutti_barrier(handle_, nullptr)); }
  // Receives count elements from whichever other rank sends first (tutti_recv_any); returns that
  // rank.
  template <typename T>
  int recvAny(T* recv, size_t count) {
    int source = -1;
    check(tutti_recv_any(recv, count, dataTypeOf<T>(), &source, handle_, nullptr));
    return source;
  }

  // Stream-ordered forms (tutti.h's *_stream): device buffers, enqueued on `stream`, return at
  // once. A cudaStream_t passes as is.
  template <typename T>
  void allreduce(const T* send, T* recv, size_t count, tuttiRedOp_t op, tuttiStream_t stream) {
    check(tutti_allreduce_stream(send, recv, count, dataTypeOf<T>(), op, handle_, stream));
  }
  template <typename T>
  void reduceScatter(const T* send, T* recv, size_t recvCount, tuttiRedOp_t op,
                     tuttiStream_t stream) {
    check(tutti_reduce_scatter_stream(send, recv, recvCount, dataTypeOf<T>(), op, handle_, stream));
  }
  template <typename T>
  void allgather(const T* send, T* recv, size_t sendCount, tuttiStream_t stream) {
    check(tutti_allgather_stream(send, recv, sendCount, dataTypeOf<T>(), handle_, stream));
  }
  template <typename T>
  void broadcast(const T* send, T* recv, size_t count, int root, tuttiStream_t stream) {
    check(tutti_broadcast_stream(send, recv, count, dataTypeOf<T>(), root, handle_, stream));
  }
  template <typename T>
  void reduce(const T* send, T* recv, size_t count, tuttiRedOp_t op, int root,
              tuttiStream_t stream) {
    check(tutti_reduce_stream(send, recv, count, dataTypeOf<T>(), op, root, handle_, stream));
  }
  template <typename T>
  void alltoall(const T* send, T* recv, size_t count, tuttiStream_t stream) {
    check(tutti_alltoall_stream(send, recv, count, dataTypeOf<T>(), handle_, stream));
  }
  template <typename T>
  void send(const T* data, size_t count, int peer, tuttiStream_t stream) {
    check(tutti_send_stream(data, count, dataTypeOf<T>(), peer, handle_, stream));
  }
  template <typename T>
  void recv(T* data, size_t count, int peer, tuttiStream_t stream) {
    check(tutti_recv_stream(data, count, dataTypeOf<T>(), peer, handle_, stream));
  }
  // The communicator's first error (tutti_comm_get_async_error): how a stream form's failure
  // shows.
  tuttiResult_t asyncError() const {
    tuttiResult_t error = tuttiSuccess;
    check(tutti_comm_get_async_error(handle_, &error));
    return error;
  }

 private:
  int query(tuttiResult_t (*get)(tuttiComm_t, int*)) const {
    int value = 0;
    check(get(handle_, &value));
    return value;
  }
  void reset() {
    if (handle_) tutti_comm_destroy(handle_);
    handle_ = nullptr;
  }
  tuttiComm_t handle_ = nullptr;
};

// Sends and receives issued together (tutti_group_start/end); ends the group on scope exit.
class Group {
 public:
  Group() { check(tutti_group_start()); }
  // Throws the group's failure unless another exception is already unwinding the stack.
  ~Group() noexcept(false) {
    if (ended_) return;
    const tuttiResult_t result = tutti_group_end();
    if (std::uncaught_exceptions() == 0) check(result);
  }
  Group(const Group&) = delete;
  Group& operator=(const Group&) = delete;
  template <typename T>
  void send(const Comm& comm, const T* data, size_t count, int peer) {
    check(tutti_send(data, count, dataTypeOf<T>(), peer, comm.handle(), nullptr));
  }
  template <typename T>
  void recv(const Comm& comm, T* data, size_t count, int peer) {
    check(tutti_recv(data, count, dataTypeOf<T>(), peer, comm.handle(), nullptr));
  }
  // Stream forms: ordered on `stream` together when the group ends (one stream per communicator).
  template <typename T>
  void send(const Comm& comm, const T* data, size_t count, int peer, tuttiStream_t stream) {
    check(tutti_send_stream(data, count, dataTypeOf<T>(), peer, comm.handle(), stream));
  }
  template <typename T>
  void recv(const Comm& comm, T* data, size_t count, int peer, tuttiStream_t stream) {
    check(tutti_recv_stream(data, count, dataTypeOf<T>(), peer, comm.handle(), stream));
  }
  void end() {
    ended_ = true;
    check(tutti_group_end());
  }

 private:
  bool ended_ = false;
};

}  // namespace tutti
