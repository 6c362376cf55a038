// The planner's figures in one table: the sizes where one algorithm gives way to another, the
// link costs of its cost model and the FIFO geometry. Its defaults (tuning_defaults.cpp) were
// measured on one machine; TUTTI_TUNING_FILE gives another machine's (tuning_file.hpp,
// docs/tuning.md). Every rank must plan from the same table: Settings::agreed() carries it.
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <variant>
#include <vector>

namespace tutti::runtime {

// Message sizes from `least` to `most` bytes, both included.
struct SizeRange {
  size_t least, most;
  bool holds(size_t bytes) const { return bytes >= least && bytes <= most; }
  // As a table's range of sizes where an algorithm gives way or runs: 0..0 is nowhere, not a
  // range holding empty messages.
  bool covers(size_t bytes) const { return most > 0 && holds(bytes); }
  bool operator==(const SizeRange&) const = default;
};

struct Tuning {
  // All-reduce: one-shot's largest message over shared memory and over TCP (where the ring's
  // pipelined slots overlap what one-shot's whole-buffer sends cannot), and the smallest message
  // the direct algorithms take.
  size_t oneShotMaxBytes;
  size_t tcpOneShotMaxBytes;
  size_t directMinBytes;
  // Where direct all-reduce's pull (outputs read through the kernel) beats the ring, out of
  // place and in place (in place only with 2 ranks).
  SizeRange directPullOutOfPlace, directPullInPlace;
  // All-reduce: where the tree beat the ring in a sweep, both placements, over shared memory and
  // over TCP; the ring gives way to the tree there, elsewhere the cost model ranks them. 0..0:
  // nowhere. With several ranks to a core the ring's 2(n-1) steps each cost a context switch, which
  // the model does not see (4 ranks on 2 cores over TCP: the tree 15-20% ahead at 256K-512K).
  SizeRange treeOverRing, tcpTreeOverRing;
  // All-reduce: where recursive doubling beat every other algorithm in a sweep, both placements,
  // over shared memory and over TCP: it runs there, and nowhere else. 0..0: nowhere. Over TCP its
  // log2(n) messages per rank cost fewer system calls and wake-ups than one-shot's n-1, which the
  // cost model's one step does not see (4 ranks on 2 cores: 43 us at 8 B against 59).
  SizeRange doublingRange, tcpDoublingRange;
  // Direct reduce-scatter's largest message when its inputs are read through the kernel.
  size_t reduceScatterKernelMaxBytes;
  // Peers' data read through the kernel is reduced in pieces this large.
  size_t directStagedBytes;
  // The cost model: one step's latency (us) and the bandwidth (GB/s, per direction) of shared
  // memory and of TCP. The topology may lower the bandwidth (ranks across CPU packages, NICs).
  double shmStepUs, tcpStepUs;
  double shmGBs, tcpGBs;
  // The smallest collective (by the bytes the planner counts: its whole buffer) whose slots and
  // results the FIFO algorithms write with streaming stores (kernels::Stores) when every peer is
  // over shared memory; the key's maximum (1024G): never.
  size_t shmStreamingMinBytes;
  // Connection FIFOs: bytes per slot and slots per FIFO (TUTTI_CHUNK_BYTES and TUTTI_SLOTS,
  // when set, win).
  size_t slotBytes;
  size_t slots;

  bool operator==(const Tuning&) const = default;
};

// tutti's own table (tuning_defaults.cpp).
const Tuning& defaultTuning();

// A table for every rank count and, where a sweep measured one, for that count: 2 ranks on 2
// cores want one-shot up to 64M where 4 want it to 64K, and a step of 0.6 us where 4 pay 7.
struct TuningTable {
  Tuning any = defaultTuning();
  std::map<int, Tuning> byRanks;  // a file's [ranks N] sections, each over `any`

  // The section of the most ranks not above `ranks` (the nearest measured count below), else
  // `any`; its N, or 0 for `any`.
  const Tuning& forRanks(int ranks) const;
  int sectionFor(int ranks) const;
  bool operator==(const TuningTable&) const = default;
};

// One key of the table as files and tutti-info write it: its name, the field it holds, the
// range a file may give it, its unit and meaning.
struct TuningKey {
  const char* name;
  std::variant<size_t Tuning::*, double Tuning::*, SizeRange Tuning::*> field;
  double min, max;
  const char* unit;  // "bytes", "count", "us", "GB/s"
  const char* doc;
};
const std::vector<TuningKey>& tuningKeys();
// The key of a field, for messages and ranges; kInternal for a field with none.
const TuningKey& tuningKeyOf(size_t Tuning::*field);
const TuningKey& tuningKeyOf(double Tuning::*field);
const TuningKey& tuningKeyOf(SizeRange Tuning::*field);

// A key's value as a file writes it: sizes with K/M/G where exact ("64K", "8M"), ranges as
// "256K..8M", numbers as the shortest text that reads back as the same double.
std::string formatTuningValue(const Tuning& tuning, const TuningKey& key);
std::string formatBytes(size_t bytes);

}  // namespace tutti::runtime
