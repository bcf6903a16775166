/* Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC'11), the
 * counter-based generator behind QSGD's stochastic rounding. Internal to codecs/: the C
 * reference and the CUDA kernels include this same file, so host and device draw identical
 * numbers.
 *
 * Hand-written on purpose rather than taken from a library: cuRAND's device Philox
 * (curand_init/curand) maps (seed, subsequence, offset) to counters its own way and has no
 * host-side equivalent for the C reference, while FORMAT.md fixes the counter as
 * {index/4 lo, index/4 hi, rank, 0} (word index mod 4) and the key as {seed lo, seed hi}. Verified against the
 * Random123 known-answer vectors in tests/test_qsgd.c. */
#ifndef NCCLZ_PHILOX_H
#define NCCLZ_PHILOX_H
#include "hd_util.h"

#define NCCLZ_PHILOX_M0 0xD2511F53u
#define NCCLZ_PHILOX_M1 0xCD9E8D57u
#define NCCLZ_PHILOX_W0 0x9E3779B9u /* golden ratio */
#define NCCLZ_PHILOX_W1 0xBB67AE85u /* sqrt(3) - 1 */

NCCLZ_INLINE void ncclz_philox_round(uint32_t ctr[4], const uint32_t key[2]) {
#ifdef __CUDA_ARCH__ /* the same products as 32-bit halves: nvcc made 64-bit multiplies of the C form */
  uint32_t hi0 = __umulhi(NCCLZ_PHILOX_M0, ctr[0]), lo0 = NCCLZ_PHILOX_M0 * ctr[0];
  uint32_t hi1 = __umulhi(NCCLZ_PHILOX_M1, ctr[2]), lo1 = NCCLZ_PHILOX_M1 * ctr[2];
#else
  uint64_t p0 = (uint64_t)NCCLZ_PHILOX_M0 * ctr[0];
  uint64_t p1 = (uint64_t)NCCLZ_PHILOX_M1 * ctr[2];
  uint32_t hi0 = (uint32_t)(p0 >> 32), lo0 = (uint32_t)p0;
  uint32_t hi1 = (uint32_t)(p1 >> 32), lo1 = (uint32_t)p1;
#endif
  uint32_t c1 = ctr[1], c3 = ctr[3];
  ctr[0] = hi1 ^ c1 ^ key[0];
  ctr[1] = lo1;
  ctr[2] = hi0 ^ c3 ^ key[1];
  ctr[3] = lo0;
}

/* out = Philox4x32-10(ctr, key): ten rounds, the key bumped between rounds. */
NCCLZ_INLINE void ncclz_philox4x32_10(const uint32_t ctr_in[4], const uint32_t key_in[2], uint32_t out[4]) {
  uint32_t ctr[4] = {ctr_in[0], ctr_in[1], ctr_in[2], ctr_in[3]};
  uint32_t key[2] = {key_in[0], key_in[1]};
  for (int r = 0; r < 10; r++) {
    if (r > 0) {
      key[0] += NCCLZ_PHILOX_W0;
      key[1] += NCCLZ_PHILOX_W1;
    }
    ncclz_philox_round(ctr, key);
  }
  out[0] = ctr[0];
  out[1] = ctr[1];
  out[2] = ctr[2];
  out[3] = ctr[3];
}

/* QSGD's four Philox words for the elements 4g .. 4g + 3 (group g): counter {g lo, g hi, rank, 0},
 * key {seed lo, seed hi}. One call serves four consecutive elements, word j element 4g + j. */
NCCLZ_INLINE void ncclz_philox_qsgd_words(uint64_t seed, uint64_t group, uint32_t rank, uint32_t out[4]) {
  const uint32_t ctr[4] = {(uint32_t)group, (uint32_t)(group >> 32), rank, 0u};
  const uint32_t key[2] = {(uint32_t)seed, (uint32_t)(seed >> 32)};
  ncclz_philox4x32_10(ctr, key, out);
}

/* A Philox word to QSGD's uniform: (w >> 8) * 2^-24 is exact in float and lies in [0, 1). */
NCCLZ_INLINE float ncclz_philox_word_uniform(uint32_t w) { return (float)(w >> 8) * 0x1p-24f; }

/* The QSGD uniform of element `index`: word index mod 4 of group index / 4. */
NCCLZ_INLINE float ncclz_philox_uniform(uint64_t seed, uint64_t index, uint32_t rank) {
  uint32_t out[4];
  ncclz_philox_qsgd_words(seed, index >> 2, rank, out);
  return ncclz_philox_word_uniform(out[index & 3]);
}
#endif
