#include "collective_check.hpp"

#include <algorithm>
#include <cstring>
#include <sstream>
#include <stdexcept>

#include "reference.hpp"

namespace tutti::testing {
namespace {

bool reduces(Kind kind) {
  return kind == Kind::kAllReduce || kind == Kind::kReduceScatter || kind == Kind::kReduce;
}

int modRank(int value, int n) {
  return ((value % n) + n) % n;
}

// A case's buffer, filled with `fill`: heap memory, or tutti_mem_alloc memory for registered
// cases (then released with tutti_mem_free).
class CaseBuffer {
 public:
  CaseBuffer(size_t bytes, bool registered, char fill) : bytes_(bytes), registered_(registered) {
    if (registered_ &&
        tutti_mem_alloc(reinterpret_cast<void**>(&data_), bytes_ + 1) != tuttiSuccess)
      throw std::runtime_error(std::string("tutti_mem_alloc: ") + tutti_get_last_error());
    if (!registered_) data_ = new char[bytes_ + 1];
    std::memset(data_, fill, bytes_);
  }
  ~CaseBuffer() {
    if (registered_)
      tutti_mem_free(data_);
    else
      delete[] data_;
  }
  CaseBuffer(const CaseBuffer&) = delete;
  CaseBuffer& operator=(const CaseBuffer&) = delete;
  char* data() { return data_; }
  char operator[](size_t i) const { return data_[i]; }
  std::vector<char> contents() const { return {data_, data_ + bytes_}; }

 private:
  size_t bytes_;
  bool registered_;
  char* data_ = nullptr;
};

// The _stream form of the call, enqueued on `stream`.
tuttiResult_t issueOnStream(tuttiComm_t comm, const Case& c, const void* send, void* recv, int rank,
                            int n, tuttiStream_t stream) {
  switch (c.kind) {
    case Kind::kAllReduce:
      return tutti_allreduce_stream(send, recv, c.count, c.dtype, c.op, comm, stream);
    case Kind::kReduceScatter:
      return tutti_reduce_scatter_stream(send, recv, c.count, c.dtype, c.op, comm, stream);
    case Kind::kAllGather:
      return tutti_allgather_stream(send, recv, c.count, c.dtype, comm, stream);
    case Kind::kBroadcast:
      return tutti_broadcast_stream(send, recv, c.count, c.dtype, c.root, comm, stream);
    case Kind::kReduce:
      return tutti_reduce_stream(send, recv, c.count, c.dtype, c.op, c.root, comm, stream);
    case Kind::kAllToAll: return tutti_alltoall_stream(send, recv, c.count, c.dtype, comm, stream);
    case Kind::kSendRecv: {
      tutti_group_start();
      const tuttiResult_t sent =
          tutti_send_stream(send, c.count, c.dtype, modRank(rank + 1, n), comm, stream);
      const tuttiResult_t received =
          tutti_recv_stream(recv, c.count, c.dtype, modRank(rank - 1, n), comm, stream);
      const tuttiResult_t ended = tutti_group_end();
      return sent != tuttiSuccess ? sent : received != tuttiSuccess ? received : ended;
    }
  }
  return tuttiInternalError;
}

// A case's buffer in CaseMemory, holding the same bytes as its host twin.
class MemoryTwin {
 public:
  MemoryTwin(CaseMemory& memory, const std::vector<char>& contents)
      : memory_(memory), data_(static_cast<char*>(memory.allocate(contents.size() + 1))) {
    memory_.upload(data_, contents.data(), contents.size());
  }
  ~MemoryTwin() { memory_.release(data_); }
  MemoryTwin(const MemoryTwin&) = delete;
  MemoryTwin& operator=(const MemoryTwin&) = delete;
  // The twin of `host`, a pointer into the host buffer that starts at `hostBase`.
  char* at(const char* hostBase, const void* host) const {
    return data_ + (static_cast<const char*>(host) - hostBase);
  }
  void download(char* to, size_t bytes) const { memory_.download(to, data_, bytes); }

 private:
  CaseMemory& memory_;
  char* data_;
};

// Issues the call (blocking or async + wait).
tuttiResult_t issue(tuttiComm_t comm, const Case& c, const void* send, void* recv, int rank,
                    int n) {
  tuttiRequest_t request = nullptr;
  tuttiRequest_t* req = c.async ? &request : nullptr;
  tuttiResult_t rc = tuttiSuccess;
  switch (c.kind) {
    case Kind::kAllReduce:
      rc = tutti_allreduce(send, recv, c.count, c.dtype, c.op, comm, req);
      break;
    case Kind::kReduceScatter:
      rc = tutti_reduce_scatter(send, recv, c.count, c.dtype, c.op, comm, req);
      break;
    case Kind::kAllGather: rc = tutti_allgather(send, recv, c.count, c.dtype, comm, req); break;
    case Kind::kBroadcast:
      rc = tutti_broadcast(send, recv, c.count, c.dtype, c.root, comm, req);
      break;
    case Kind::kReduce:
      rc = tutti_reduce(send, recv, c.count, c.dtype, c.op, c.root, comm, req);
      break;
    case Kind::kAllToAll: rc = tutti_alltoall(send, recv, c.count, c.dtype, comm, req); break;
    case Kind::kSendRecv: {
      // Everyone sends to the next rank and receives from the previous one, in a group.
      tutti_group_start();
      const tuttiResult_t sent =
          tutti_send(send, c.count, c.dtype, modRank(rank + 1, n), comm, nullptr);
      const tuttiResult_t received =
          tutti_recv(recv, c.count, c.dtype, modRank(rank - 1, n), comm, nullptr);
      rc = c.async ? tutti_group_end_async(&request) : tutti_group_end();
      if (sent != tuttiSuccess) rc = sent;
      if (received != tuttiSuccess) rc = received;
      break;
    }
  }
  if (rc == tuttiSuccess && request) {
    rc = tutti_wait(request);
    tutti_request_free(request);
  }
  return rc;
}

}  // namespace

const char* kindName(Kind kind) {
  switch (kind) {
    case Kind::kAllReduce: return "allreduce";
    case Kind::kReduceScatter: return "reduce_scatter";
    case Kind::kAllGather: return "allgather";
    case Kind::kBroadcast: return "broadcast";
    case Kind::kReduce: return "reduce";
    case Kind::kAllToAll: return "alltoall";
    case Kind::kSendRecv: return "sendrecv";
  }
  return "?";
}

std::string describe(const Case& c) {
  std::ostringstream out;
  out << kindName(c.kind) << "(count=" << c.count << ", " << tutti_type_name(c.dtype) << ", "
      << tutti_op_name(c.op) << ", root=" << c.root << (c.inPlace ? ", in-place" : "")
      << (c.async ? ", async" : "") << (c.registered ? ", registered" : "") << ", seed=" << c.seed
      << ")";
  return out.str();
}

Case randomCase(std::mt19937_64& rng, Kind kind, int nranks, size_t maxBytes, size_t minBytes) {
  Case c{};
  c.kind = kind;
  c.dtype = static_cast<tuttiDataType_t>(rng() % tuttiNumTypes);
  c.op = static_cast<tuttiRedOp_t>(rng() % tuttiNumOps);
  const size_t size = tutti_type_size(c.dtype);
  // Per-rank buffers of scatter/gather-like collectives hold nranks blocks.
  const bool blocks =
      kind == Kind::kReduceScatter || kind == Kind::kAllGather || kind == Kind::kAllToAll;
  const size_t perCount = size * (blocks ? nranks : 1);
  const size_t maxCount = std::max<size_t>(1, maxBytes / perCount);
  const size_t minCount = std::min(maxCount, (minBytes + perCount - 1) / perCount);
  static const size_t kSpecial[] = {0, 1, 2, 3, 7, 13, 1021, 4093, 65537};
  switch (rng() % 4) {
    case 0: c.count = kSpecial[rng() % std::size(kSpecial)]; break;
    case 1: c.count = static_cast<size_t>(nranks) * (1 + rng() % 64) + 1; break;
    default: c.count = rng() % (maxCount + 1); break;
  }
  c.count = std::clamp(c.count, minCount, maxCount);
  c.root = static_cast<int>(rng() % static_cast<uint64_t>(nranks));
  c.inPlace = kind != Kind::kSendRecv && rng() % 2 == 0;
  c.async = rng() % 4 == 0;
  c.seed = rng();
  return c;
}

std::string runCase(tuttiComm_t comm, const Case& c, std::vector<char>* output,
                    tuttiResult_t* callResult, CaseMemory* memory) {
  int rank = 0, n = 1;
  tutti_comm_rank(comm, &rank);
  tutti_comm_size(comm, &n);
  const size_t size = tutti_type_size(c.dtype), count = c.count, un = static_cast<size_t>(n);
  const tuttiRedOp_t fillOp = reduces(c.kind) ? c.op : tuttiSum;
  // Buffer sizes in elements and what each rank contributes.
  size_t sendElems = count, recvElems = count;
  if (c.kind == Kind::kReduceScatter) sendElems = count * un;
  if (c.kind == Kind::kAllGather) recvElems = count * un;
  if (c.kind == Kind::kAllToAll) sendElems = recvElems = count * un;
  const size_t workElems = std::max(sendElems, recvElems);
  // A guard element on each side catches writes out of bounds.
  CaseBuffer recv((workElems + 2) * size, c.registered, 0x5a);
  CaseBuffer send(sendElems * size, c.registered, 0);
  char* recvData = recv.data() + size;
  fill(send.data(), sendElems, c.dtype, fillOp, c.seed, rank, 0);
  const std::vector<char> sentCopy = send.contents();
  const void* sendPtr = send.data();
  void* recvPtr = recvData;
  if (c.inPlace) {
    char* inPlaceSend = recvData;
    if (c.kind == Kind::kAllGather)
      inPlaceSend = recvData + static_cast<size_t>(rank) * count * size;
    if (sendElems > 0) std::memcpy(inPlaceSend, send.data(), sendElems * size);
    sendPtr = inPlaceSend;
  }
  tuttiResult_t rc = tuttiSuccess;
  if (memory) {
    // The same bytes in the other memory; the in-place send pointer lies in recv's twin.
    const std::vector<char> recvBytes = recv.contents(), sendBytes = send.contents();
    const MemoryTwin recvTwin(*memory, recvBytes), sendTwin(*memory, sendBytes);
    const char* sendHost = static_cast<const char*>(sendPtr);
    const bool sendInRecv = sendHost >= recv.data() && sendHost < recv.data() + recvBytes.size();
    const void* twinSend =
        sendInRecv ? recvTwin.at(recv.data(), sendPtr) : sendTwin.at(send.data(), sendPtr);
    void* twinRecv = recvTwin.at(recv.data(), recvPtr);
    memory->buffersReady();
    rc = memory->stream() ? issueOnStream(comm, c, twinSend, twinRecv, rank, n, memory->stream())
                          : issue(comm, c, twinSend, twinRecv, rank, n);
    if (rc == tuttiSuccess) {
      memory->synchronize();
      recvTwin.download(recv.data(), recvBytes.size());
      sendTwin.download(send.data(), sendBytes.size());
    }
    memory->resultsRead();
  } else {
    rc = issue(comm, c, sendPtr, recvPtr, rank, n);
  }
  if (callResult) *callResult = rc;
  if (rc != tuttiSuccess)
    return describe(c) + ": " + tutti_get_error_string(rc) + ": " + tutti_get_last_error();

  // The expected output of this rank.
  std::vector<char> expected(recvElems * size);
  size_t checkElems = recvElems;
  switch (c.kind) {
    case Kind::kAllReduce:
      for (size_t i = 0; i < count; ++i)
        expectReduced(expected.data() + (i * size), c.dtype, c.op, c.seed, n, i);
      break;
    case Kind::kReduceScatter:
      for (size_t i = 0; i < count; ++i)
        expectReduced(expected.data() + (i * size), c.dtype, c.op, c.seed, n,
                      static_cast<size_t>(rank) * count + i);
      if (c.inPlace) recvData += static_cast<size_t>(rank) * count * size;
      break;
    case Kind::kAllGather:
      for (size_t b = 0; b < un; ++b)
        fill(expected.data() + (b * count * size), count, c.dtype, fillOp, c.seed,
             static_cast<int>(b), 0);
      break;
    case Kind::kBroadcast: fill(expected.data(), count, c.dtype, fillOp, c.seed, c.root, 0); break;
    case Kind::kReduce:
      if (rank != c.root) checkElems = 0;
      for (size_t i = 0; i < count; ++i)
        expectReduced(expected.data() + (i * size), c.dtype, c.op, c.seed, n, i);
      break;
    case Kind::kAllToAll:
      for (size_t b = 0; b < un; ++b)
        fill(expected.data() + (b * count * size), count, c.dtype, fillOp, c.seed,
             static_cast<int>(b), static_cast<size_t>(rank) * count);
      break;
    case Kind::kSendRecv:
      fill(expected.data(), count, c.dtype, fillOp, c.seed, modRank(rank - 1, n), 0);
      break;
  }
  std::string problems;
  if (checkElems > 0) {
    const std::string diff = compare(recvData, expected.data(), checkElems, c.dtype, c.op);
    if (!diff.empty()) problems += " output: " + diff + ";";
  }
  // Guards: nothing written before or after the output.
  const size_t usedEnd = (c.kind == Kind::kReduceScatter && c.inPlace ? sendElems : recvElems);
  for (size_t b = 0; b < size; ++b) {
    if (static_cast<unsigned char>(recv[b]) != 0x5a) problems += " wrote before recvbuf;";
    if (static_cast<unsigned char>(recv[(usedEnd + 1) * size + b]) != 0x5a)
      problems += " wrote past recvbuf;";
  }
  if (!c.inPlace && send.contents() != sentCopy) problems += " sendbuf changed;";
  if (output) output->assign(recvData, recvData + checkElems * size);
  return problems.empty() ? "" : describe(c) + " on rank " + std::to_string(rank) + ":" + problems;
}

}  // namespace tutti::testing
