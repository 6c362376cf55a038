// The C ABI: argument checks, exceptions turned into result codes, the per-thread last error.
#include <chrono>
#include <cstddef>
#include <cstring>
#include <new>
#include <optional>
#include <string>

#include "base/log.hpp"
#include "runtime/init.hpp"
#include "runtime/operations.hpp"
#include "runtime/shrink_agreement.hpp"
#include "transport/peer_memory.hpp"
#include "tutti/tutti.h"

struct tuttiComm {
  std::unique_ptr<tutti::runtime::Communicator> impl;
};

struct tuttiRequest {
  std::shared_ptr<tutti::runtime::Request> impl;  // null: completed at once
};

namespace {

using tutti::Error;
using tutti::ErrorCode;
using tutti::raise;
namespace rt = tutti::runtime;
namespace kernels = tutti::kernels;

thread_local std::string lastError;

tuttiResult_t record(tuttiResult_t code, const char* message) {
  lastError = message;
  if (code == tuttiInvalidArgument)
    tutti::log::info("{}", message);
  else
    tutti::log::warn("{}", message);
  return code;
}

// Runs body; an exception becomes the result code and the thread's last error.
template <typename Body>
tuttiResult_t guard(Body body) {
  try {
    body();
    return tuttiSuccess;
  } catch (const Error& error) {
    return record(static_cast<tuttiResult_t>(error.code()), error.what());
  } catch (const std::bad_alloc&) {
    return record(tuttiSystemError, "out of memory");
  } catch (const std::exception& error) {
    return record(tuttiInternalError, error.what());
  }
}

rt::Communicator& commOf(tuttiComm_t comm) {
  if (!comm || !comm->impl) raise(ErrorCode::kInvalidArgument, "the communicator is NULL");
  return *comm->impl;
}

template <typename Out>
void checkOut(Out* out, const char* name) {
  if (!out) raise(ErrorCode::kInvalidArgument, "{} is NULL", name);
}

// Hands out a request for an async operation (nullptr from the runtime means already done).
void giveRequest(tuttiRequest_t* request, std::shared_ptr<rt::Request> impl) {
  if (request) *request = new tuttiRequest{std::move(impl)};
}

tuttiResult_t collective(const rt::CollectiveCall& call, tuttiComm_t comm,
                         tuttiRequest_t* request) {
  return guard([&] {
    rt::Communicator& c = commOf(comm);
    if (request) *request = nullptr;
    auto impl = rt::launch(c, call, request != nullptr);
    giveRequest(request, std::move(impl));
  });
}

tuttiResult_t streamCollective(const rt::CollectiveCall& call, tuttiComm_t comm,
                               tuttiStream_t stream) {
  return guard([&] { rt::launchOnStream(commOf(comm), call, stream); });
}

// The casts between the C enums and the internal ones rely on every value agreeing; the build
// fails if one side gains, loses or renumbers a value.
template <typename CEnum, typename Internal>
constexpr bool sameValue(CEnum c, Internal internal) {
  return static_cast<int>(c) == static_cast<int>(internal);
}
static_assert(sameValue(tuttiInvalidArgument, ErrorCode::kInvalidArgument));
static_assert(sameValue(tuttiInvalidUsage, ErrorCode::kInvalidUsage));
static_assert(sameValue(tuttiSystemError, ErrorCode::kSystem));
static_assert(sameValue(tuttiRemoteError, ErrorCode::kRemote));
static_assert(sameValue(tuttiTimeout, ErrorCode::kTimeout));
static_assert(sameValue(tuttiInternalError, ErrorCode::kInternal));
static_assert(sameValue(tuttiInt8, kernels::DataType::kInt8));
static_assert(sameValue(tuttiUint8, kernels::DataType::kUint8));
static_assert(sameValue(tuttiInt32, kernels::DataType::kInt32));
static_assert(sameValue(tuttiUint32, kernels::DataType::kUint32));
static_assert(sameValue(tuttiInt64, kernels::DataType::kInt64));
static_assert(sameValue(tuttiUint64, kernels::DataType::kUint64));
static_assert(sameValue(tuttiFloat16, kernels::DataType::kFloat16));
static_assert(sameValue(tuttiBfloat16, kernels::DataType::kBfloat16));
static_assert(sameValue(tuttiFloat32, kernels::DataType::kFloat32));
static_assert(sameValue(tuttiFloat64, kernels::DataType::kFloat64));
static_assert(tuttiNumTypes == kernels::kNumDataTypes);
static_assert(sameValue(tuttiSum, kernels::RedOp::kSum));
static_assert(sameValue(tuttiProd, kernels::RedOp::kProd));
static_assert(sameValue(tuttiMin, kernels::RedOp::kMin));
static_assert(sameValue(tuttiMax, kernels::RedOp::kMax));
static_assert(sameValue(tuttiAvg, kernels::RedOp::kAvg));
static_assert(tuttiNumOps == kernels::kNumRedOps);

kernels::DataType dataType(tuttiDataType_t dtype) {
  return static_cast<kernels::DataType>(dtype);
}
kernels::RedOp redOp(tuttiRedOp_t op) {
  return static_cast<kernels::RedOp>(op);
}

// The fields of `config` that this tutti knows and the caller set: those within config->size, so
// that a caller built against an older tuttiConfig_t reads the newer fields as unset.
rt::ChildConfig childConfigOf(const tuttiConfig_t& config, int rank) {
  if (config.size < sizeof(config.size) || config.size > sizeof(tuttiConfig_t))
    raise(ErrorCode::kInvalidArgument,
          "rank {}: config.size is {}, this tutti's tuttiConfig_t has {} bytes (start from "
          "TUTTI_CONFIG_INITIALIZER)",
          rank, config.size, sizeof(tuttiConfig_t));
  const auto holds = [&](size_t offset, size_t bytes) { return config.size >= offset + bytes; };
  rt::ChildConfig child;
  if (holds(offsetof(tuttiConfig_t, socket_ifname), sizeof(config.socket_ifname)) &&
      config.socket_ifname)
    child.socketInterfaces = config.socket_ifname;
  return child;
}

// A split's arguments are refused before it runs on the engine, where an error fails comm. A
// rank that opts out (TUTTI_SPLIT_NOCOLOR) gets no communicator, so its config is not read.
// `config` is empty for tutti_comm_split, which takes none; tutti_comm_split_config's may be NULL.
tuttiResult_t split(tuttiComm_t comm, int color, int key,
                    std::optional<const tuttiConfig_t*> config, tuttiComm_t* newcomm) {
  return guard([&] {
    rt::Communicator& c = commOf(comm);
    checkOut(newcomm, "newcomm");
    *newcomm = nullptr;
    if (color < TUTTI_SPLIT_NOCOLOR)
      raise(ErrorCode::kInvalidArgument, "rank {}: split color {} is negative (use {} to opt out)",
            c.rank(), color, TUTTI_SPLIT_NOCOLOR);
    if (config && !*config) raise(ErrorCode::kInvalidArgument, "rank {}: config is NULL", c.rank());
    rt::ChildConfig childConfig;
    if (config && color != TUTTI_SPLIT_NOCOLOR) {
      childConfig = childConfigOf(**config, c.rank());
      c.checkChildConfig(childConfig);
    }
    std::unique_ptr<rt::Communicator> child;
    c.engine().run([&] { child = c.split(color, key, childConfig); });
    if (child) *newcomm = new tuttiComm{std::move(child)};
  });
}

}  // namespace

extern "C" {

const char* tutti_get_error_string(tuttiResult_t result) {
  switch (result) {
    case tuttiSuccess: return "success";
    case tuttiInvalidArgument: return "invalid argument";
    case tuttiInvalidUsage: return "invalid usage";
    case tuttiSystemError: return "system error";
    case tuttiRemoteError: return "remote error";
    case tuttiTimeout: return "timeout";
    case tuttiInternalError: return "internal error";
    case tuttiInProgress: return "in progress";
  }
  return "unknown result code";
}

const char* tutti_get_last_error(void) {
  return lastError.c_str();
}

tuttiResult_t tutti_set_last_error(const char* message) {
  return guard([&] {
    checkOut(message, "message");
    lastError = message;
  });
}

tuttiResult_t tutti_get_version(int* version) {
  return guard([&] {
    checkOut(version, "version");
    *version = TUTTI_VERSION_MAJOR * 10000 + TUTTI_VERSION_MINOR * 100 + TUTTI_VERSION_PATCH;
  });
}

tuttiResult_t tutti_mem_alloc(void** ptr, size_t bytes) {
  return guard([&] {
    checkOut(ptr, "ptr");
    *ptr = tutti::transport::allocateRegistered(bytes);
  });
}

tuttiResult_t tutti_mem_free(void* ptr) {
  return guard([&] { tutti::transport::freeRegistered(ptr); });
}

tuttiResult_t tutti_get_unique_id(tuttiUniqueId* id) {
  return guard([&] {
    checkOut(id, "id");
    const auto bytes = tutti::bootstrap::createUniqueIdHostedHere().encode();
    std::memcpy(id->internal, bytes.data(), bytes.size());
  });
}

tuttiResult_t tutti_comm_init_rank(tuttiComm_t* comm, tuttiUniqueId id, int rank, int nranks) {
  return guard([&] {
    checkOut(comm, "comm");
    *comm = nullptr;
    std::array<char, tutti::bootstrap::kUniqueIdBytes> bytes;
    std::memcpy(bytes.data(), id.internal, bytes.size());
    const auto decoded = tutti::bootstrap::UniqueId::decode(bytes);
    *comm = new tuttiComm{rt::initRank(decoded, rank, nranks)};
  });
}

tuttiResult_t tutti_comm_init_env(tuttiComm_t* comm) {
  return guard([&] {
    checkOut(comm, "comm");
    *comm = nullptr;
    *comm = new tuttiComm{rt::initFromEnv()};
  });
}

tuttiResult_t tutti_comm_init_all(tuttiComm_t* comms, int nranks) {
  return guard([&] {
    checkOut(comms, "comms");
    auto all = rt::initAll(nranks);
    for (int rank = 0; rank < nranks; ++rank)
      comms[rank] = new tuttiComm{std::move(all[static_cast<size_t>(rank)])};
  });
}

tuttiResult_t tutti_comm_split(tuttiComm_t comm, int color, int key, tuttiComm_t* newcomm) {
  return split(comm, color, key, std::nullopt, newcomm);
}

tuttiResult_t tutti_comm_split_config(tuttiComm_t comm, int color, int key,
                                      const tuttiConfig_t* config, tuttiComm_t* newcomm) {
  return split(comm, color, key, config, newcomm);
}

tuttiResult_t tutti_comm_shrink(tuttiComm_t comm, const int* exclude_ranks, int exclude_count,
                                tuttiComm_t* newcomm, int flags) {
  return guard([&] {
    rt::Communicator& c = commOf(comm);
    checkOut(newcomm, "newcomm");
    *newcomm = nullptr;
    if ((flags & ~TUTTI_SHRINK_DEAD) != 0)
      raise(ErrorCode::kInvalidArgument,
            "rank {}: shrink flags {:#x} hold unknown bits (known: TUTTI_SHRINK_DEAD = {:#x})",
            c.rank(), static_cast<unsigned>(flags), TUTTI_SHRINK_DEAD);
    const std::vector<int> excluded =
        rt::checkedExclusions(c.rank(), c.size(), exclude_ranks, exclude_count);
    std::unique_ptr<rt::Communicator> child;
    c.engine().run([&] { child = c.shrink(excluded, (flags & TUTTI_SHRINK_DEAD) != 0); });
    *newcomm = new tuttiComm{std::move(child)};
  });
}

tuttiResult_t tutti_comm_grow_id(tuttiComm_t comm, tuttiUniqueId* id) {
  return guard([&] {
    rt::Communicator& c = commOf(comm);
    checkOut(id, "id");
    const auto bytes = c.growId().encode();
    std::memcpy(id->internal, bytes.data(), bytes.size());
  });
}

tuttiResult_t tutti_comm_grow(tuttiComm_t comm, int new_size, const tuttiUniqueId* id, int rank,
                              tuttiComm_t* newcomm) {
  return guard([&] {
    checkOut(newcomm, "newcomm");
    *newcomm = nullptr;
    std::unique_ptr<rt::Communicator> child;
    if (comm) {
      rt::Communicator& c = commOf(comm);
      c.checkGrowSize(new_size);
      c.engine().run([&] { child = c.grow(new_size); });
    } else {
      if (!id)
        raise(ErrorCode::kInvalidArgument,
              "id is NULL: a newcomer (comm NULL) needs the grow token of tutti_comm_grow_id");
      std::array<char, tutti::bootstrap::kUniqueIdBytes> bytes;
      std::memcpy(bytes.data(), id->internal, bytes.size());
      child = rt::initGrowing(tutti::bootstrap::UniqueId::decode(bytes), rank, new_size);
    }
    *newcomm = new tuttiComm{std::move(child)};
  });
}

tuttiResult_t tutti_comm_destroy(tuttiComm_t comm) {
  return guard([&] {
    if (!comm) raise(ErrorCode::kInvalidArgument, "the communicator is NULL");
    delete comm;
  });
}

tuttiResult_t tutti_comm_abort(tuttiComm_t comm) {
  return guard([&] { commOf(comm).abort(); });
}

tuttiResult_t tutti_comm_rank(tuttiComm_t comm, int* rank) {
  return guard([&] {
    checkOut(rank, "rank");
    *rank = commOf(comm).rank();
  });
}

tuttiResult_t tutti_comm_size(tuttiComm_t comm, int* size) {
  return guard([&] {
    checkOut(size, "size");
    *size = commOf(comm).size();
  });
}

tuttiResult_t tutti_comm_local_rank(tuttiComm_t comm, int* localRank) {
  return guard([&] {
    checkOut(localRank, "local_rank");
    *localRank = commOf(comm).members().localRank();
  });
}

tuttiResult_t tutti_comm_local_size(tuttiComm_t comm, int* localSize) {
  return guard([&] {
    checkOut(localSize, "local_size");
    *localSize = commOf(comm).members().localSize();
  });
}

tuttiResult_t tutti_comm_set_algorithm(tuttiComm_t comm, const char* algorithm) {
  return guard([&] {
    rt::Communicator& c = commOf(comm);
    if (!algorithm) raise(ErrorCode::kInvalidArgument, "rank {}: algorithm is NULL", c.rank());
    c.setAlgorithm(algorithm);
  });
}

tuttiResult_t tutti_comm_set_timeout(tuttiComm_t comm, int64_t timeoutMs) {
  return guard([&] { commOf(comm).setTimeout(std::chrono::milliseconds(timeoutMs)); });
}

tuttiResult_t tutti_comm_get_async_error(tuttiComm_t comm, tuttiResult_t* error) {
  return guard([&] {
    checkOut(error, "error");
    const auto failure = commOf(comm).failure();
    *error = failure ? static_cast<tuttiResult_t>(failure->code()) : tuttiSuccess;
  });
}

tuttiResult_t tutti_allreduce(const void* sendbuf, void* recvbuf, size_t count,
                              tuttiDataType_t dtype, tuttiRedOp_t op, tuttiComm_t comm,
                              tuttiRequest_t* request) {
  return collective(
      {rt::Collective::kAllReduce, sendbuf, recvbuf, count, dataType(dtype), redOp(op), 0}, comm,
      request);
}

tuttiResult_t tutti_reduce_scatter(const void* sendbuf, void* recvbuf, size_t recvcount,
                                   tuttiDataType_t dtype, tuttiRedOp_t op, tuttiComm_t comm,
                                   tuttiRequest_t* request) {
  return collective(
      {rt::Collective::kReduceScatter, sendbuf, recvbuf, recvcount, dataType(dtype), redOp(op), 0},
      comm, request);
}

tuttiResult_t tutti_allgather(const void* sendbuf, void* recvbuf, size_t sendcount,
                              tuttiDataType_t dtype, tuttiComm_t comm, tuttiRequest_t* request) {
  return collective({rt::Collective::kAllGather, sendbuf, recvbuf, sendcount, dataType(dtype),
                     kernels::RedOp::kSum, 0},
                    comm, request);
}

tuttiResult_t tutti_broadcast(const void* sendbuf, void* recvbuf, size_t count,
                              tuttiDataType_t dtype, int root, tuttiComm_t comm,
                              tuttiRequest_t* request) {
  return collective({rt::Collective::kBroadcast, sendbuf, recvbuf, count, dataType(dtype),
                     kernels::RedOp::kSum, root},
                    comm, request);
}

tuttiResult_t tutti_reduce(const void* sendbuf, void* recvbuf, size_t count, tuttiDataType_t dtype,
                           tuttiRedOp_t op, int root, tuttiComm_t comm, tuttiRequest_t* request) {
  return collective(
      {rt::Collective::kReduce, sendbuf, recvbuf, count, dataType(dtype), redOp(op), root}, comm,
      request);
}

tuttiResult_t tutti_alltoall(const void* sendbuf, void* recvbuf, size_t count,
                             tuttiDataType_t dtype, tuttiComm_t comm, tuttiRequest_t* request) {
  return collective({rt::Collective::kAllToAll, sendbuf, recvbuf, count, dataType(dtype),
                     kernels::RedOp::kSum, 0},
                    comm, request);
}

tuttiResult_t tutti_allreduce_stream(const void* sendbuf, void* recvbuf, size_t count,
                                     tuttiDataType_t dtype, tuttiRedOp_t op, tuttiComm_t comm,
                                     tuttiStream_t stream) {
  return streamCollective(
      {rt::Collective::kAllReduce, sendbuf, recvbuf, count, dataType(dtype), redOp(op), 0}, comm,
      stream);
}

tuttiResult_t tutti_reduce_scatter_stream(const void* sendbuf, void* recvbuf, size_t recvcount,
                                          tuttiDataType_t dtype, tuttiRedOp_t op, tuttiComm_t comm,
                                          tuttiStream_t stream) {
  return streamCollective(
      {rt::Collective::kReduceScatter, sendbuf, recvbuf, recvcount, dataType(dtype), redOp(op), 0},
      comm, stream);
}

tuttiResult_t tutti_allgather_stream(const void* sendbuf, void* recvbuf, size_t sendcount,
                                     tuttiDataType_t dtype, tuttiComm_t comm,
                                     tuttiStream_t stream) {
  return streamCollective({rt::Collective::kAllGather, sendbuf, recvbuf, sendcount, dataType(dtype),
                           kernels::RedOp::kSum, 0},
                          comm, stream);
}

tuttiResult_t tutti_broadcast_stream(const void* sendbuf, void* recvbuf, size_t count,
                                     tuttiDataType_t dtype, int root, tuttiComm_t comm,
                                     tuttiStream_t stream) {
  return streamCollective({rt::Collective::kBroadcast, sendbuf, recvbuf, count, dataType(dtype),
                           kernels::RedOp::kSum, root},
                          comm, stream);
}

tuttiResult_t tutti_reduce_stream(const void* sendbuf, void* recvbuf, size_t count,
                                  tuttiDataType_t dtype, tuttiRedOp_t op, int root,
                                  tuttiComm_t comm, tuttiStream_t stream) {
  return streamCollective(
      {rt::Collective::kReduce, sendbuf, recvbuf, count, dataType(dtype), redOp(op), root}, comm,
      stream);
}

tuttiResult_t tutti_alltoall_stream(const void* sendbuf, void* recvbuf, size_t count,
                                    tuttiDataType_t dtype, tuttiComm_t comm, tuttiStream_t stream) {
  return streamCollective({rt::Collective::kAllToAll, sendbuf, recvbuf, count, dataType(dtype),
                           kernels::RedOp::kSum, 0},
                          comm, stream);
}

tuttiResult_t tutti_send_stream(const void* sendbuf, size_t count, tuttiDataType_t dtype, int peer,
                                tuttiComm_t comm, tuttiStream_t stream) {
  return guard([&] {
    rt::sendRecvOnStream(commOf(comm), true, sendbuf, nullptr, count, dataType(dtype), peer,
                         stream);
  });
}

tuttiResult_t tutti_recv_stream(void* recvbuf, size_t count, tuttiDataType_t dtype, int peer,
                                tuttiComm_t comm, tuttiStream_t stream) {
  return guard([&] {
    rt::sendRecvOnStream(commOf(comm), false, nullptr, recvbuf, count, dataType(dtype), peer,
                         stream);
  });
}

tuttiResult_t tutti_barrier(tuttiComm_t comm, tuttiRequest_t* request) {
  return guard([&] {
    rt::Communicator& c = commOf(comm);
    if (request) *request = nullptr;
    giveRequest(request, rt::barrier(c, request != nullptr));
  });
}

tuttiResult_t tutti_send(const void* sendbuf, size_t count, tuttiDataType_t dtype, int peer,
                         tuttiComm_t comm, tuttiRequest_t* request) {
  return guard([&] {
    rt::Communicator& c = commOf(comm);
    if (request) *request = nullptr;
    giveRequest(request, rt::sendRecv(c, true, sendbuf, nullptr, count, dataType(dtype), peer,
                                      request != nullptr));
  });
}

tuttiResult_t tutti_recv(void* recvbuf, size_t count, tuttiDataType_t dtype, int peer,
                         tuttiComm_t comm, tuttiRequest_t* request) {
  return guard([&] {
    rt::Communicator& c = commOf(comm);
    if (request) *request = nullptr;
    giveRequest(request, rt::sendRecv(c, false, nullptr, recvbuf, count, dataType(dtype), peer,
                                      request != nullptr));
  });
}

tuttiResult_t tutti_recv_any(void* recvbuf, size_t count, tuttiDataType_t dtype, int* source,
                             tuttiComm_t comm, tuttiRequest_t* request) {
  return guard([&] {
    rt::Communicator& c = commOf(comm);
    if (request) *request = nullptr;
    giveRequest(request,
                rt::recvAny(c, recvbuf, count, dataType(dtype), source, request != nullptr));
  });
}

tuttiResult_t tutti_group_start(void) {
  return guard([] { rt::groupStart(); });
}

tuttiResult_t tutti_group_end(void) {
  return guard([] { rt::groupEnd(false); });
}

tuttiResult_t tutti_group_end_async(tuttiRequest_t* request) {
  return guard([&] {
    checkOut(request, "request");
    *request = nullptr;
    giveRequest(request, rt::groupEnd(true));
  });
}

tuttiResult_t tutti_test(tuttiRequest_t request) {
  tuttiResult_t result = tuttiSuccess;
  const tuttiResult_t status = guard([&] {
    checkOut(request, "request");
    if (!request->impl) return;
    if (!request->impl->done()) {
      result = tuttiInProgress;
      return;
    }
    request->impl->rethrow();
  });
  return status == tuttiSuccess ? result : status;
}

tuttiResult_t tutti_wait(tuttiRequest_t request) {
  return guard([&] {
    checkOut(request, "request");
    if (!request->impl) return;
    request->impl->wait();
    request->impl->rethrow();
  });
}

tuttiResult_t tutti_wait_timeout(tuttiRequest_t request, int64_t timeoutMs) {
  return guard([&] {
    checkOut(request, "request");
    if (timeoutMs < 0) raise(ErrorCode::kInvalidArgument, "timeout_ms {} is negative", timeoutMs);
    if (!request->impl) return;
    if (!request->impl->waitFor(std::chrono::milliseconds(timeoutMs)))
      raise(ErrorCode::kTimeout, "the request did not complete within {} ms", timeoutMs);
    request->impl->rethrow();
  });
}

tuttiResult_t tutti_request_free(tuttiRequest_t request) {
  return guard([&] {
    checkOut(request, "request");
    if (request->impl) request->impl->wait();
    delete request;
  });
}

size_t tutti_type_size(tuttiDataType_t dtype) {
  return kernels::isValid(dataType(dtype)) ? kernels::typeSize(dataType(dtype)) : 0;
}

const char* tutti_type_name(tuttiDataType_t dtype) {
  return kernels::isValid(dataType(dtype)) ? kernels::typeName(dataType(dtype)) : "invalid";
}

const char* tutti_op_name(tuttiRedOp_t op) {
  return kernels::isValid(redOp(op)) ? kernels::opName(redOp(op)) : "invalid";
}

}  // extern "C"
