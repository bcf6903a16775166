/* Reference sizes of a symbol stream: the order-0 entropy bound, the optimal (unlimited)
 * Huffman code, and the ideal per-block fixed width. They are the yardsticks the CR table
 * compares the real coders against. */
#include "hd_util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int cmp_i32(const void *a, const void *b) {
  int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
  return (x > y) - (x < y);
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return (x > y) - (x < y);
}

/* Total code bits of an optimal Huffman code = sum of the weights of all internal nodes.
 * Two-queue merge over frequencies sorted ascending (freq is reused as the leaf queue). */
static double huffman_cost(uint64_t *freq, size_t k) {
  if (k <= 1) return (double)(k ? freq[0] : 0); /* one symbol still needs 1 bit each */
  qsort(freq, k, sizeof *freq, cmp_u64);
  uint64_t *node = malloc(k * sizeof *node);
  if (!node) return -1;
  size_t li = 0, ni = 0, nn = 0;
  double cost = 0;
  for (size_t step = 0; step + 1 < k; step++) {
    uint64_t pick[2];
    for (int j = 0; j < 2; j++) {
      if (li < k && (ni == nn || freq[li] <= node[ni])) pick[j] = freq[li++];
      else pick[j] = node[ni++];
    }
    node[nn++] = pick[0] + pick[1];
    cost += (double)(pick[0] + pick[1]);
  }
  free(node);
  return cost;
}

static double fixedlen_ideal(const int32_t *sym, size_t n) {
  double bits = 0;
  for (size_t b = 0; b < n; b += 32) {
    uint32_t acc = 0;
    size_t end = b + 32 < n ? b + 32 : n;
    for (size_t i = b; i < end; i++) acc |= ncclz_zigzag(sym[i]);
    bits += 32.0 * ncclz_bitlen(acc);
  }
  return bits;
}

ncclzStatus ncclzSymbolStatsCompute(const int32_t *sym, size_t n, ncclzSymbolStats *st) {
  memset(st, 0, sizeof *st);
  st->n = n;
  if (n == 0) return NCCLZ_OK;
  int32_t *sorted = malloc(n * sizeof *sorted);
  uint64_t *freq = malloc(n * sizeof *freq);
  if (!sorted || !freq) {
    free(sorted);
    free(freq);
    return ncclzSetError(NCCLZ_ERR_NOMEM, "symbol stats: cannot allocate %zu symbols", n);
  }
  memcpy(sorted, sym, n * sizeof *sorted);
  qsort(sorted, n, sizeof *sorted, cmp_i32);
  size_t k = 0;
  uint32_t maxz = 0;
  for (size_t i = 0; i < n;) {
    size_t j = i;
    while (j < n && sorted[j] == sorted[i]) j++;
    freq[k++] = j - i;
    uint32_t z = ncclz_zigzag(sorted[i]);
    if (z > maxz) maxz = z;
    double p = (double)(j - i) / (double)n;
    st->entropy_bits -= (double)(j - i) * log2(p);
    i = j;
  }
  st->distinct = k;
  st->huffman_opt_bits = huffman_cost(freq, k);
  st->fixedlen_ideal_bits = fixedlen_ideal(sym, n);
  st->global_width_bits = (double)n * ncclz_bitlen(maxz);
  free(sorted);
  free(freq);
  return st->huffman_opt_bits < 0 ? ncclzSetError(NCCLZ_ERR_NOMEM, "symbol stats: out of memory")
                                   : NCCLZ_OK;
}
