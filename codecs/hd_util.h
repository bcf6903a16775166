/* Small pieces of the format that host and device compute with the same source.
 * Internal to the codecs layer (included by .c and .cu files of codecs/ only). */
#ifndef NCCLZ_HD_UTIL_H
#define NCCLZ_HD_UTIL_H
#include "ncclz/codecs.h"

#if defined(__CUDACC__)
#define NCCLZ_INLINE __host__ __device__ static inline
#else
#define NCCLZ_INLINE static inline
#endif

NCCLZ_INLINE uint32_t ncclz_zigzag(int32_t s) { return ((uint32_t)s << 1) ^ (uint32_t)(s >> 31); }
NCCLZ_INLINE int32_t ncclz_unzigzag(uint32_t z) { return (int32_t)((z >> 1) ^ (0u - (z & 1u))); }

/* ceil(a / b) for b > 0, without the overflow of (a + b - 1) / b. */
NCCLZ_INLINE uint64_t ncclz_ceil_div(uint64_t a, uint64_t b) { return a / b + (a % b != 0); }

/* Whether the shape [d0][d1][d2] holds exactly n elements: every dimension at least 1 and the
 * product, checked for 64-bit overflow (2^31 x 2^31 x 4 wraps to 0), equal to n. */
NCCLZ_INLINE int ncclz_dims_describe(uint32_t d0, uint32_t d1, uint32_t d2, uint64_t n) {
  if (!d0 || !d1 || !d2) return 0;
  uint64_t plane = (uint64_t)d1 * d2; /* < 2^64: two 32-bit factors */
  return plane <= UINT64_MAX / d0 && plane * d0 == n;
}

/* QSGD's levels a sign for codes of `bits` bits: s = 2^(bits-1) - 1 (FORMAT.md, "QSGD"). */
NCCLZ_INLINE int ncclz_qsgd_levels(int bits) { return (1 << (bits - 1)) - 1; }

/* Bit length of v (0 for 0). */
NCCLZ_INLINE uint32_t ncclz_bitlen(uint32_t v) {
  uint32_t n = 0;
  while (v) { n++; v >>= 1; }
  return n;
}

/* n / d for every n < 2^32 by a multiply-high and two shifts, d fixed beforehand (Granlund and
 * Montgomery, "Division by invariant integers using multiplication", 1994, figure 4.1): in a
 * kernel, a 64-bit division by a run-time divisor is a subroutine call. Written here because
 * CUB's equivalent (fast_div_mod) is in its internal namespace. */
typedef struct {
  uint32_t m, s1, s2;
} NcclzDivU32;
NCCLZ_INLINE NcclzDivU32 ncclz_divu32_make(uint32_t d) { /* d >= 1 */
  const uint32_t l = d > 1 ? ncclz_bitlen(d - 1) : 0;    /* ceil(log2 d) */
  const NcclzDivU32 r = {(uint32_t)((((uint64_t)1 << 32) * (((uint64_t)1 << l) - d)) / d + 1), l ? 1u : 0u,
                         l ? l - 1 : 0u};
  return r;
}
NCCLZ_INLINE uint32_t ncclz_divu32(uint32_t n, NcclzDivU32 d) {
  const uint32_t t = (uint32_t)(((uint64_t)d.m * n) >> 32);
  return (t + ((n - t) >> d.s1)) >> d.s2;
}

NCCLZ_INLINE uint32_t ncclz_fnv1a(const uint8_t *p, size_t n) {
  uint32_t h = 2166136261u;
  for (size_t i = 0; i < n; i++) { h ^= p[i]; h *= 16777619u; }
  return h;
}

NCCLZ_INLINE uint32_t ncclz_load_u32(const uint8_t *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
NCCLZ_INLINE void ncclz_store_u32(uint8_t *p, uint32_t v) {
  p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); p[2] = (uint8_t)(v >> 16); p[3] = (uint8_t)(v >> 24);
}
#endif
