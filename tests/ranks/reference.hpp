// Inputs and expected results of the collective tests, computed independently of tutti.
//
// Every input element is a small integer derived from (seed, rank, index) — nccl-tests' trick —
// so that sum, prod, min and max are exact in every type and in any reduction order, and the
// expected value of each element is known exactly. Only avg of floating-point types rounds; it is
// compared with a stated tolerance.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "tutti/tutti.h"

namespace tutti::testing {

// The small integer at (seed, rank, index) for op: sum/avg in [-4, 4] ([0, 4] for unsigned
// types), prod in {-1, 1, 2} ({1, 2} unsigned, mostly 1), min/max in [-100, 100] ([0, 100]).
int64_t inputValue(uint64_t seed, int rank, size_t index, tuttiDataType_t dtype, tuttiRedOp_t op);

// Stores the integer v as dtype at dst (exact for the values above; integers wrap as C casts).
void store(void* dst, tuttiDataType_t dtype, int64_t v);
// Reads element i of a dtype buffer as double.
double load(const void* src, tuttiDataType_t dtype, size_t index);

// Fills count elements for (seed, rank) starting at global index `first`.
void fill(void* buffer, size_t count, tuttiDataType_t dtype, tuttiRedOp_t op, uint64_t seed,
          int rank, size_t first);

// The expected bits of op folded over ranks 0..n-1 at global index `index`, stored at dst.
void expectReduced(void* dst, tuttiDataType_t dtype, tuttiRedOp_t op, uint64_t seed, int nranks,
                   size_t index);

// Compares count elements; returns a description of the first few mismatches ("" when equal).
// avg of floating types allows a relative error of a few units in the last place of the type.
std::string compare(const void* got, const void* expected, size_t count, tuttiDataType_t dtype,
                    tuttiRedOp_t op);

}  // namespace tutti::testing
