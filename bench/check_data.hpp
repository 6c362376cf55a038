// Inputs whose reductions are known exactly, and the count of wrong elements in a result of any
// collective (a reduction of all ranks' inputs, or a copy of one rank's).
//
// nccl-tests' trick: every rank's input is a small integer derived from (rank, index), so the
// reduction is exact in any order and in every type, and the expected value is computed here
// independently of tutti. The patterns, periodic in the index:
//   sum, avg   (rank + 3*index) % 4 — values 0..3. Where 3*nranks would pass the largest integer
//              the type holds exactly (256 for bfloat16, 2048 for half, 2^24 for float), only one
//              rank in S contributes to an element (the others give 0), with S just large enough.
//              Integer types need no such care: their wrap-around is exact modular arithmetic.
//   prod       2 on rank (index % 2n) when that is a rank, else 1: each product is 2 or 1, so
//              nothing overflows.
//   min, max   (7*rank + 3*index) % 16.
// avg is the sum divided by the number of ranks: integers truncate toward zero (as NCCL and
// tutti do); floating-point results may differ from the exact quotient by one unit in the last
// place of the type.
#pragma once

#include <tutti/tutti.h>

#include <cstddef>
#include <cstdint>
#include <vector>

namespace tutti::bench {

class CheckData {
 public:
  CheckData(tuttiDataType_t dtype, tuttiRedOp_t op, int nranks);

  // The input of `rank`: count elements of the type.
  void fillInput(void* buffer, size_t count, int rank) const;
  // Bytes that no correct result contains (all ones: NaN, -1 or the largest value).
  static void fillPoison(void* buffer, size_t bytes);
  // Elements that differ from the expected value, where element i of `result` is expected to be
  // index firstIndex + i of the reduction over all ranks (source == kReduced) or of rank
  // `source`'s input (a copy, as broadcast or allgather make).
  static constexpr int kReduced = -1;
  int64_t countWrong(const void* result, size_t count, size_t firstIndex = 0,
                     int source = kReduced) const;

  // The rank's input value at an index (for tests).
  int64_t value(int rank, size_t index) const;
  size_t period() const { return period_; }

 private:
  tuttiDataType_t dtype_;
  tuttiRedOp_t op_;
  int nranks_;
  size_t stride_ = 1;  // sum/avg: one rank in stride_ contributes to an element
  size_t period_ = 1;
  std::vector<int64_t> exact_;  // the exact reduction (avg: the sum) per index % period_
};

}  // namespace tutti::bench
