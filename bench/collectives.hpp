// The collectives tutti-bench measures, as one table: each with its busbw factor (nccl-tests'
// PERFORMANCE.md), its buffer layout for a size S, the call, and the expected content of the
// receive buffer. The measurement loop serves all of them from this table alone.
//
// S is the whole array, as in nccl-tests: reducescatter, allgather and alltoall move S/nranks
// elements per rank and block (rounded down), the others S.
#pragma once

#include <tutti/tutti.h>

#include <cstddef>
#include <span>
#include <string>
#include <vector>

namespace tutti::bench {

// Buffer sizes in elements for one rank.
struct Layout {
  size_t count = 0;        // what the call takes (nccl-tests' "count" column)
  size_t sendCount = 0;    // elements of the send buffer
  size_t recvCount = 0;    // elements of the receive buffer
  size_t inPlaceSend = 0;  // in-place: where the send data starts in the receive buffer
};

// A run of the receive buffer whose every element is known: element offset + i holds index
// firstIndex + i of the reduction over all ranks (source == kReduced) or of rank source's input.
struct Expected {
  static constexpr int kReduced = -1;
  size_t offset = 0;
  size_t count = 0;
  int source = kReduced;
  size_t firstIndex = 0;
};

struct CallArgs {
  const void* send;
  void* recv;
  size_t count;
  tuttiDataType_t dtype;
  tuttiRedOp_t op;
  int root;
  int rank;
  int nranks;
  tuttiComm_t comm;
};

struct CollectiveSpec {
  const char* name;
  const char* summary;  // for --help
  bool reduces;         // takes an op (else the redop column says "none")
  bool rooted;          // takes a root (else the root column says -1)
  bool moves;           // moves data (barrier does not: latency only)
  double (*busFactor)(int nranks);
  Layout (*layout)(size_t elements, int rank, int nranks);
  tuttiResult_t (*call)(const CallArgs& args);
  // The runs to check on `rank` (none where the result is undefined, as on reduce's non-roots).
  std::vector<Expected> (*expected)(const Layout& layout, int rank, int nranks, int root,
                                    bool inPlace);
  bool (*hasInput)(int rank, int root);  // broadcast: the root only
};

// The elements of S as nccl-tests sizes them: where each rank has a block of S/nranks (all-gather,
// reduce-scatter, all-to-all), that block rounded down to whole 16 bytes; else unchanged.
size_t ncclTestsElements(const CollectiveSpec& spec, size_t elements, size_t typeBytes, int nranks);

std::span<const CollectiveSpec> collectives();
const CollectiveSpec* findCollective(const std::string& name);  // nullptr when unknown
std::string collectiveNames();                                  // "allreduce, reducescatter, ..."

}  // namespace tutti::bench
