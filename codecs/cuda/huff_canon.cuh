/* Pieces of the GPU HUFFMAN coder that its encoder (huffman_cuda.cu: the code book) and decoder
 * (huffman_decode_cuda.cu: the decode table) share: the sizes and the canonical codes of a length
 * table, computed by the whole block. */
#ifndef NCCLZ_CUDA_HUFF_CANON_CUH
#define NCCLZ_CUDA_HUFF_CANON_CUH
#include <cub/block/block_scan.cuh>

#include "internal.cuh"

#define HF_K NCCLZ_HUFF_MAX_SYMS  /* largest alphabet, 8194 */
#define BOOK_THREADS 1024
#define BOOK_ITEMS 9               /* 1024 * 9 >= 8194 */
#define FAST_BITS NZ_HF_FAST_BITS

/* 16 counters of 16 bits (one per code length) in four words: adding two never carries across
 * counters because no count exceeds 8193. One block scan then ranks every index within its
 * length, which is what canonical codes by (length, index) need. */
struct Cnt16 {
  unsigned long long q[4];
};
struct Cnt16Add {
  __device__ Cnt16 operator()(const Cnt16 &a, const Cnt16 &b) const {
    Cnt16 r;
    for (int i = 0; i < 4; i++) r.q[i] = a.q[i] + b.q[i];
    return r;
  }
};
/* The counter of one length, and one more of it: the word chosen by selects, not by an index,
 * so that the counters stay in registers (an indexed word put them on the stack). */
static __device__ __forceinline__ uint32_t cnt_get(const Cnt16 &c, uint32_t len) {
  unsigned long long w = c.q[0];
#pragma unroll
  for (uint32_t k = 1; k < 4; k++) w = (len >> 2) == k ? c.q[k] : w;
  return (uint32_t)(w >> (16 * (len & 3))) & 0xFFFFu;
}
static __device__ __forceinline__ void cnt_add(Cnt16 &c, uint32_t len) {
  const unsigned long long one = 1ull << (16 * (len & 3));
#pragma unroll
  for (uint32_t k = 0; k < 4; k++) c.q[k] += (len >> 2) == k ? one : 0ull;
}

typedef cub::BlockScan<Cnt16, BOOK_THREADS, cub::BLOCK_SCAN_WARP_SCANS> CntScan;
/* Ranks the present indices of a sparse length table, one bitmap word per thread. */
typedef cub::BlockScan<uint32_t, BOOK_THREADS, cub::BLOCK_SCAN_WARP_SCANS> RankScan;
struct CanonShared {
  typename CntScan::TempStorage scan;
  uint32_t count[16], first[16], start[16];
};

/* codes[i] (MSB-first value) for lens[0..K); also count/first/start per length. All threads. */
static __device__ void canonical_codes(const uint8_t *lens, uint32_t K, uint32_t *codes, CanonShared &sh) {
  const uint32_t t = threadIdx.x, i0 = t * BOOK_ITEMS;
  if (t < 16) sh.count[t] = 0;
  __syncthreads();
  Cnt16 mine = {{0, 0, 0, 0}};
  for (uint32_t i = i0; i < i0 + BOOK_ITEMS && i < K; i++) cnt_add(mine, lens[i]);
  Cnt16 excl, total;
  Cnt16 zero = {{0, 0, 0, 0}};
  CntScan(sh.scan).ExclusiveScan(mine, excl, zero, Cnt16Add(), total);
  if (t == 0) {
    uint32_t code = 0, rank = 0;
    sh.first[0] = 0;
    sh.first[1] = 0;
    for (uint32_t len = 0; len < 16; len++) sh.count[len] = len ? cnt_get(total, len) : 0;
    for (uint32_t len = 2; len < 16; len++) { /* RFC 1951, as ncclz_huff_first_codes */
      code = (code + sh.count[len - 1]) << 1;
      sh.first[len] = code;
    }
    for (uint32_t len = 1; len < 16; len++) {
      sh.start[len] = rank;
      rank += sh.count[len];
    }
  }
  __syncthreads();
  for (uint32_t i = i0; i < i0 + BOOK_ITEMS && i < K; i++) { /* excl counts the lengths before i */
    const uint32_t l = lens[i];
    codes[i] = l ? sh.first[l] + cnt_get(excl, l) : 0u;
    cnt_add(excl, l);
  }
  __syncthreads();
}
#endif
