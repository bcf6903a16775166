/* Block-wide steps of the HUFFMAN code-length builder (FORMAT.md steps 2-4) for the CUDA code
 * book (huffman_cuda.cu; test_gpu_huffbook checks them directly). They compute the
 * same integers as the serial steps in huff_codebook.h, which the host runs. Include from CUDA
 * code only. */
#ifndef NCCLZ_HUFF_BLOCK_CUH
#define NCCLZ_HUFF_BLOCK_CUH

#include "../huff_codebook.h"

/* Depths of the 2m-1 nodes of a tree from its parent links (ncclz_huff_tree_parents; the root
 * is its own parent) by pointer jumping: each round every node adds the depth of the node its
 * link points to and links two hops up, so ceil(log2(height)) rounds replace the 2m-2 dependent
 * loads of ncclz_huff_parents_to_depths. par is clobbered; depth receives the depths.
 * THREADS * ITEMS >= 2m - 1; every thread of the block calls it. */
template <int THREADS, int ITEMS>
__device__ void ncclz_huff_block_depths(uint32_t *par, uint32_t *depth, uint32_t m) {
  const uint32_t nn = 2 * m - 1, root = nn - 1;
  for (uint32_t i = threadIdx.x; i < nn; i += THREADS) depth[i] = i != root;
  __syncthreads();
  for (;;) {
    uint32_t np[ITEMS], nd[ITEMS];
    int more = 0;
#pragma unroll
    for (int j = 0; j < ITEMS; j++) {
      const uint32_t i = threadIdx.x + j * THREADS;
      if (i < nn) {
        const uint32_t p = par[i];
        nd[j] = depth[i] + depth[p];
        np[j] = par[p];
        more |= np[j] != root;
      }
    }
    __syncthreads();
#pragma unroll
    for (int j = 0; j < ITEMS; j++) {
      const uint32_t i = threadIdx.x + j * THREADS;
      if (i < nn) depth[i] = nd[j], par[i] = np[j];
    }
    if (!__syncthreads_or(more)) break; /* every link reaches the root */
  }
}

/* The two-queue tree's parent links (those of ncclz_huff_tree_parents) by the whole block: the
 * fixed point of huff_codebook.h, each thread taking its part of every round's merge from the
 * first pair sum the last round changed, rounds until none changes (at most m - 1; 10-37 on
 * test_huffman_format's trees). Replaces one thread's 2m - 2 dependent picks: on the H200, 61-150
 * us in 15-31 rounds for m = 8,194 at 1,024 threads with every round merged in full, against 643
 * us for the one thread; merged from the first change, REL frames' trees (m = 3,903-4,958) take
 * 23-33 us instead of 49-66, and 128-512 threads were slower. icur and inext: m - 1 words each;
 * node: 2m - 1. Every thread of the block calls it; returns the rounds. */
template <int THREADS>
__device__ uint32_t ncclz_huff_block_parents(const uint64_t *key, uint32_t m, uint32_t *icur, uint32_t *inext,
                                             uint32_t *node) {
  /* a round's first changed pair, a slot a round in turn: a round clears the next round's slot,
   * which the block last read two barriers before */
  __shared__ uint32_t s_first[3];
  for (uint32_t t = threadIdx.x; t + 1 < m; t += THREADS) icur[t] = NCCLZ_HUFF_FP_INF;
  if (threadIdx.x < 3) s_first[threadIdx.x] = NCCLZ_HUFF_FP_INF;
  __syncthreads();
  uint32_t rounds = 0, settled = 0;
  for (;;) {
    const uint32_t slot = rounds++ % 3;
    if (threadIdx.x == 0) s_first[(slot + 1) % 3] = NCCLZ_HUFF_FP_INF;
    const uint32_t f = ncclz_huff_fp_part(key, m, settled, icur, inext, node, threadIdx.x, THREADS);
    if (f != NCCLZ_HUFF_FP_INF) atomicMin(&s_first[slot], f);
    uint32_t *t = icur;
    icur = inext, inext = t;
    __syncthreads(); /* also: this round's reads are done before the next writes */
    settled = s_first[slot];
    if (settled == NCCLZ_HUFF_FP_INF) break;
  }
  if (threadIdx.x == 0) node[2 * m - 2] = 2 * m - 2;
  __syncthreads();
  return rounds;
}

/* Ascending bitonic sort of one key a thread over the block's first n threads (n a power of two,
 * at most blockDim.x): returns the key now at the thread's position. Strides under 32 go through
 * shuffles, longer ones through s (n keys): fewer block barriers than a radix sort's passes (the
 * median kernel on 1,024 samples: 16 us with CUB's, 9 with this, ncu). Every thread of the
 * block calls it. */
template <typename T>
__device__ T ncclz_block_bitonic(T v, T *s, uint32_t n) {
  const uint32_t t = threadIdx.x;
  for (uint32_t size = 2; size <= n; size <<= 1)
    for (uint32_t stride = size >> 1; stride; stride >>= 1) {
      T o = v;
      if (stride >= 32) {
        if (t < n) s[t] = v;
        __syncthreads();
        if (t < n) o = s[t ^ stride];
        __syncthreads();
      } else {
        o = __shfl_xor_sync(0xFFFFFFFFu, v, stride);
      }
      const bool keep_min = ((t & stride) == 0) == ((t & size) == 0);
      v = keep_min == (o < v) ? o : v;
    }
  return v;
}

/* Step 4 for the sorted position i (frequency desc, index asc) of m used symbols: the length
 * that the serial assignment (shortest lengths first) gives it, from the per-length counts. */
__device__ inline uint32_t ncclz_huff_rank_length(const uint32_t *count, uint32_t i) {
  uint32_t len = 1, cum = 0;
  while (len < NCCLZ_HUFF_LEN_LIMIT && cum + count[len] <= i) cum += count[len++];
  return len;
}

/* First position of the m keys (weight << 32 | index, ascending) whose weight is >= q
 * (above = 0) or > q (above = 1). */
__device__ inline uint32_t ncclz_huff_weight_bound(const uint64_t *key, uint32_t m, uint32_t q, int above) {
  uint32_t lo = 0, hi = m;
  while (lo < hi) {
    const uint32_t mid = (lo + hi) / 2, w = (uint32_t)(key[mid] >> 32);
    if (above ? w <= q : w < q) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/* Step 4's order (frequency desc, index asc) without a second sort: for the key at position i
 * of the m keys in (frequency asc, index asc) order, the keys of larger frequency come first,
 * then its place among the keys of its own frequency, whose index order both orders share. */
__device__ inline uint32_t ncclz_huff_desc_rank(const uint64_t *key, uint32_t m, uint32_t i) {
  const uint32_t q = (uint32_t)(key[i] >> 32);
  return m - ncclz_huff_weight_bound(key, m, q, 1) + (i - ncclz_huff_weight_bound(key, m, q, 0));
}

#endif
