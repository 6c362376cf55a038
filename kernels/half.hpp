// kernels/half.hpp: float16 (IEEE binary16) and bfloat16 as storage types, with conversions to and
// from float written as portable bit code. The same code runs on the CPU and, compiled by nvcc, on
// the GPU, so the CPU unit tests verify the exact rounding the device kernels perform. The
// bucketing layer's fp16/bf16 compression hooks cast with it too, taking the header alone (they
// link libtutti, not the kernels library), so it stays header-only.
//
// float -> half rounds to nearest, ties to even; overflow gives inf; NaN stays NaN (quietened, sign
// and the top payload bits kept). half -> float is exact (NaN payloads are kept). No _Float16, no
// cuda_fp16.h: those would make the host and device paths two different pieces of code.
#pragma once

#include <cstdint>
#include <cstring>

#if defined(__CUDACC__)
#define TUTTI_HOST_DEVICE __host__ __device__
#else
#define TUTTI_HOST_DEVICE
#endif

namespace tutti::kernels {

TUTTI_HOST_DEVICE inline uint32_t floatToBits(float f) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(f);
#else
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
#endif
}

TUTTI_HOST_DEVICE inline float bitsToFloat(uint32_t u) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(u);
#else
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
#endif
}

// c ? a : b as bit masks. A plain ?: whose operand is a float operation may be compiled as a branch
// (GCC will not speculate an FP operation that could trap), and a branch stops the CPU loops that
// convert half types from vectorising; masks keep the code straight-line on CPU and GPU alike.
TUTTI_HOST_DEVICE inline uint32_t selectBits(bool c, uint32_t a, uint32_t b) {
  const uint32_t mask = 0u - static_cast<uint32_t>(c);
  return (a & mask) | (b & ~mask);
}

// IEEE binary16 -> binary32, exact.
TUTTI_HOST_DEVICE inline float halfBitsToFloat(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t body = static_cast<uint32_t>(h & 0x7fffu) << 13;  // exponent and mantissa
  const uint32_t exp = body & 0x0f800000u;
  // Rebias the exponent 15 -> 127; inf/NaN (exponent 31) go to exponent 255.
  const uint32_t normal = body + ((127u - 15u) << 23);
  const uint32_t special = body + ((255u - 31u) << 23);
  // Subnormal (exponent 0): m * 2^-24 is computed exactly as (2^-14 + m * 2^-24) - 2^-14.
  const float sub = bitsToFloat(normal + (1u << 23)) - bitsToFloat(113u << 23);
  const uint32_t mag =
      selectBits(exp == 0x0f800000u, special, selectBits(exp == 0, floatToBits(sub), normal));
  return bitsToFloat(sign | mag);
}

// IEEE binary32 -> binary16, round to nearest even.
TUTTI_HOST_DEVICE inline uint16_t floatToHalfBits(float f) {
  const uint32_t x = floatToBits(f);
  const uint32_t sign = (x >> 16) & 0x8000u;
  const uint32_t ax = x & 0x7fffffffu;
  // Normal range: drop 13 mantissa bits, adding 0xfff plus the kept lsb rounds ties to even; a
  // carry into the exponent is the right answer (up to inf just below 65536).
  const uint32_t lsb = (ax >> 13) & 1u;
  const uint32_t normal = (ax - ((127u - 15u) << 23) + 0xfffu + lsb) >> 13;
  // Below 2^-14 (half subnormals and zero): adding 0.5 = 2^-1 aligns the value so that the float
  // adder's own round-to-nearest-even leaves m * 2^-24 in the low mantissa bits. Exact for every
  // input; a float subnormal flushed to zero (FTZ/DAZ) still gives the correct half zero.
  const uint32_t sub = floatToBits(bitsToFloat(ax) + 0.5f) - 0x3f000000u;
  const uint32_t nan = 0x7e00u | ((ax >> 13) & 0x3ffu);  // quiet bit set, top payload bits kept
  uint32_t r = selectBits(ax < (113u << 23), sub, normal);
  r = selectBits(ax >= (143u << 23), 0x7c00u, r);  // >= 65536: inf (65520..65536 carry to inf)
  r = selectBits(ax > 0x7f800000u, nan, r);
  return static_cast<uint16_t>(sign | r);
}

// bfloat16 is the top half of a float: widening is a shift.
TUTTI_HOST_DEVICE inline float bfloatBitsToFloat(uint16_t b) {
  return bitsToFloat(static_cast<uint32_t>(b) << 16);
}

TUTTI_HOST_DEVICE inline uint16_t floatToBfloatBits(float f) {
  const uint32_t x = floatToBits(f);
  const uint32_t rounded = (x + 0x7fffu + ((x >> 16) & 1u)) >> 16;  // ties to even; carries to inf
  const uint32_t nan = (x >> 16) | 0x0040u;                         // quiet bit, sign kept
  return static_cast<uint16_t>((x & 0x7fffffffu) > 0x7f800000u ? nan : rounded);
}

// Storage types: 16 bits, trivially copyable, no arithmetic of their own (ops.hpp accumulates them
// in float). Construct from bits with fromBits, from a value with the explicit float constructor.
struct float16 {
  uint16_t bits;
  float16() = default;
  TUTTI_HOST_DEVICE explicit float16(float f) : bits(floatToHalfBits(f)) {}
  TUTTI_HOST_DEVICE explicit operator float() const { return halfBitsToFloat(bits); }
  TUTTI_HOST_DEVICE static float16 fromBits(uint16_t b) {
    float16 h;
    h.bits = b;
    return h;
  }
};

struct bfloat16 {
  uint16_t bits;
  bfloat16() = default;
  TUTTI_HOST_DEVICE explicit bfloat16(float f) : bits(floatToBfloatBits(f)) {}
  TUTTI_HOST_DEVICE explicit operator float() const { return bfloatBitsToFloat(bits); }
  TUTTI_HOST_DEVICE static bfloat16 fromBits(uint16_t b) {
    bfloat16 h;
    h.bits = b;
    return h;
  }
};

static_assert(sizeof(float16) == 2 && sizeof(bfloat16) == 2, "half types are 16-bit storage");

}  // namespace tutti::kernels
