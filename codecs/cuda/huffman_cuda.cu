/* HUFFMAN on the GPU (FORMAT.md). Encode, per batch: sample (median, extremes) -> histogram -> code book
 * (one CTA per frame: the used symbols sorted, the reference's own two-queue merge and length
 * limiter from huff_codebook.h, the tree's depths and the step-4 lengths, ranked in the sort's
 * order, by the whole block from huff_block.cuh, a packed 16-way block scan for canonical codes)
 * -> one pass that codes a segment per warp into shared memory and places it by decoupled
 * look-back. Decode: a table kernel per frame, then a warp per segment: its lanes find the code
 * starts of their slices of the segment (parse, then re-parse until in step with the lane
 * before), then decode the symbols by rank, each from its own start. */
#include <cub/block/block_radix_sort.cuh>
#include <cub/block/block_reduce.cuh>
#include <cub/block/block_scan.cuh>

#include "decode_out.cuh"
#include "eb_quant.cuh"
#include "huff_block.cuh"

#define HF_K NCCLZ_HUFF_MAX_SYMS  /* largest alphabet, 8194 */
#define BOOK_THREADS 1024
#define BOOK_ITEMS 9               /* 1024 * 9 >= 8194 */
#define BOOK_NODE_ITEMS 17         /* 1024 * 17 >= 2 * 8194 - 1 tree nodes */
#define ENC_WARPS 8
#ifndef ENC_ILP
#define ENC_ILP 2 /* rounds of 32 symbols whose loads a warp issues together */
#endif
#define DEC_THREADS 128
#define FAST_BITS NZ_HF_FAST_BITS

/* vmin/vmax: trimmed extremes of the sampled non-fill symbols, centre: their median (k_hf_median). */
static __device__ __forceinline__ ncclzHuffAlphabet frame_alphabet(const NzFrame *F) {
  return ncclz_huff_choose_alphabet(F->vmin, F->vmax, F->centre);
}

/* ------------------------------------------------------------ range and histogram */

/* The alphabet's sample (as sample_alphabet in coder_huffman.c): median and extremes of up to
 * 1024 sampled non-fill symbols, one CTA per frame, sorted by a block bitonic sort of
 * order-preserving keys (absent and fill samples sort last: only the first k are read).
 * code(f, i): symbol i of frame f. */
template <typename Code>
static __device__ __forceinline__ void hf_median(const NzShape &sh, NzFrame *fr, const Code &code) {
  __shared__ uint32_t s[1024];
  const uint32_t f = blockIdx.x, n = sh.frame_n(f), t = threadIdx.x;
  if (!sh.takes(fr, f, NCCLZ_CODER_HUFFMAN)) return; /* a mixed batch's frame of another coder */
  const uint32_t m = n < NCCLZ_HUFF_CENTRE_SAMPLES ? n : NCCLZ_HUFF_CENTRE_SAMPLES;
  uint32_t key = 0xFFFFFFFFu;
  bool valid = false;
  if (t < m) {
    int32_t v = code(f, ncclz_huff_sample_pos(t, n, m));
    valid = v != NCCLZ_FILL_CODE;
    if (valid) key = (uint32_t)v ^ 0x80000000u; /* order-preserving */
  }
  const uint32_t k = __syncthreads_count(valid);
  uint32_t np = 1;
  while (np < m) np <<= 1;
  key = ncclz_block_bitonic(key, s, np);
  const int32_t v = (int32_t)(key ^ 0x80000000u);
  if (k == 0 && t == 0) fr[f].centre = fr[f].vmin = fr[f].vmax = 0;
  if (k && t == (k - 1) / 2) fr[f].centre = v;
  const uint32_t trim = ncclz_huff_sample_trim(k);
  if (k && t == trim) fr[f].vmin = v;
  if (k && t == k - 1 - trim) fr[f].vmax = v;
}

__global__ void __launch_bounds__(1024) k_hf_median(NzShape sh, const int32_t *sym, NzFrame *fr) {
  nz_pdl_enter();
  hf_median(sh, fr, [&](uint32_t f, uint32_t i) { return __ldg(sym + (size_t)f * sh.frame_symbols + i); });
}

/* The same sample from the floats, each coded as the quantizer will code it (eb_plain; its
 * failures are counted by the quantizer, not here): the alphabet before the codes exist, so that
 * k_hf_eb_hist can count them as it writes them. */
__global__ void __launch_bounds__(1024) k_hf_median_eb(NzShape sh, NzEb e, NzFrame *fr) {
  nz_pdl_enter();
  eb_ready(e.p, e.resolved, e.st);
  hf_median(sh, fr, [&](uint32_t f, uint32_t i) {
    return eb_plain(__ldg(e.x + (size_t)f * sh.frame_symbols + i), 0, e.p, nullptr, NCCLZ_FILL_CODE);
  });
}

/* Symbols per CTA of the histogram pass: enough CTAs for the whole GPU (about 1,024), but no more
 * than that. Each CTA clears and flushes up to HF_K bins, so on wide alphabets (REL without
 * prediction, raw floats: thousands of bins used) the flushes' global atomics cost more than the
 * reads when every 64 KiB has its own CTA (ncu, 256 MiB of TREFHT on the H200). */
#define HIST_CHUNK_MIN 16384u
#define HIST_CHUNK_MAX 65536u
#define HIST_THREADS 512
static uint32_t hist_chunk(const NzShape &sh) {
  const uint64_t per_cta = (uint64_t)sh.frame_symbols * sh.n_frames / 1024;
  const uint64_t c = (per_cta + HIST_CHUNK_MIN - 1) / HIST_CHUNK_MIN * HIST_CHUNK_MIN;
  return c < HIST_CHUNK_MIN ? HIST_CHUNK_MIN : c > HIST_CHUNK_MAX ? HIST_CHUNK_MAX : (uint32_t)c;
}

/* Chunk i0.. of frame f counted into the frame's histogram: h (HF_K words of shared memory) cleared,
 * each CTA's counts added to the global bins once. quad(q): the four symbols of the chunk's q-th
 * group of 4 (int4, 16-byte aligned: aligned tells whether it may be used), one(i): symbol i of
 * the frame. */
template <typename Quad, typename One>
static __device__ __forceinline__ void hf_hist_chunk(const NzShape &sh, NzFrame *fr, uint32_t *hist, uint32_t chunk,
                                                     uint32_t *h, bool aligned, const Quad &quad, const One &one) {
  uint32_t f = blockIdx.y, n = sh.frame_n(f), i0 = blockIdx.x * chunk;
  ncclzHuffAlphabet a = frame_alphabet(&fr[f]);
  uint32_t K = ncclz_huff_alphabet_size(a.radius);
  for (uint32_t i = threadIdx.x; i < K; i += HIST_THREADS) h[i] = 0;
  __syncthreads();
  const uint32_t end = n - i0 < chunk ? n : i0 + chunk;
  /* (Warp-aggregated adds through __match_any_sync did not make this faster on 4 MiB of QSGD
   * codes, 16 us either way, and doubled the REA planner's histogram: plain adds.) Whole int4
   * loads, four in flight a thread, where the chunk starts 16-byte aligned; the rest one by one. */
  auto add4 = [&](const int4 x) {
    atomicAdd(&h[ncclz_huff_index(x.x, a)], 1u);
    atomicAdd(&h[ncclz_huff_index(x.y, a)], 1u);
    atomicAdd(&h[ncclz_huff_index(x.z, a)], 1u);
    atomicAdd(&h[ncclz_huff_index(x.w, a)], 1u);
  };
  uint32_t i = i0;
  if (aligned) {
    const uint32_t quads = (end - i0) / 4;
    uint32_t q = threadIdx.x;
    for (; q + 3 * HIST_THREADS < quads; q += 4 * HIST_THREADS) {
      int4 x[4];
#pragma unroll
      for (int u = 0; u < 4; u++) x[u] = quad(q + u * HIST_THREADS);
#pragma unroll
      for (int u = 0; u < 4; u++) add4(x[u]);
    }
    for (; q < quads; q += HIST_THREADS) add4(quad(q));
    i = i0 + 4 * quads;
  }
  for (i += threadIdx.x; i < end; i += HIST_THREADS) atomicAdd(&h[ncclz_huff_index(one(i), a)], 1u);
  __syncthreads();
  uint32_t *g = hist + (size_t)f * HF_K;
  for (uint32_t j = threadIdx.x; j < K; j += HIST_THREADS)
    if (h[j]) atomicAdd(&g[j], h[j]);
  if (blockIdx.x == 0 && threadIdx.x == 0) fr[f].radius = a.radius;
}

__global__ void __launch_bounds__(HIST_THREADS) k_hf_hist(NzShape sh, const int32_t *sym, NzFrame *fr, uint32_t *hist,
                                                          uint32_t chunk) {
  nz_pdl_enter();
  __shared__ uint32_t h[HF_K];
  const uint32_t f = blockIdx.y, i0 = blockIdx.x * chunk;
  if (i0 >= sh.frame_n(f) || !sh.takes(fr, f, NCCLZ_CODER_HUFFMAN)) return;
  const int32_t *src = sym + (size_t)f * sh.frame_symbols;
  const int4 *v = reinterpret_cast<const int4 *>(src + i0);
  hf_hist_chunk(sh, fr, hist, chunk, h, ((uintptr_t)v & 15u) == 0, [&](uint32_t q) { return __ldg(v + q); },
                [&](uint32_t i) { return __ldg(src + i); });
}

/* EB without a predictor quantized inside the histogram pass (nz_huffman_encode with eb; HUFFMAN
 * alone, frames of whole groups of 4, x and the codes 16-byte aligned): each CTA codes its chunk
 * by the reference's rule (eb_plain, failures counted in the stats), stores the codes and counts
 * them, so that the codes are read back once, by the coder, instead of twice. The alphabet is
 * k_hf_median_eb's. Four CTAs an SM (32 registers, 16 bytes spilled), as the histogram pass
 * alone: on 256 MiB of TREFHT at REL 1e-4 on the H200 the encode ran at 404-405 GB/s end to end,
 * at 398-400 with three (40 registers), 385 with two and 335 with one. */
__global__ void __launch_bounds__(HIST_THREADS, 4) k_hf_eb_hist(NzShape sh, NzEb e, NzFrame *fr, uint32_t *hist,
                                                             uint32_t chunk) {
  nz_pdl_enter();
  __shared__ uint32_t h[HF_K];
  eb_ready(e.p, e.resolved, e.st);
  const uint32_t f = blockIdx.y, i0 = blockIdx.x * chunk;
  if (i0 >= sh.frame_n(f)) return;
  const size_t g0 = (size_t)f * sh.frame_symbols; /* the frame's first element */
  const float4 *x4 = reinterpret_cast<const float4 *>(e.x + g0 + i0);
  int4 *s4 = reinterpret_cast<int4 *>(e.sym + g0 + i0);
  auto code = [&](float v, uint32_t i) { return eb_plain(v, g0 + i, e.p, e.st, NCCLZ_FILL_CODE); };
  hf_hist_chunk(sh, fr, hist, chunk, h, true,
                [&](uint32_t q) {
                  const float4 v = __ldg(x4 + q);
                  const uint32_t i = i0 + 4 * q;
                  const int4 c = make_int4(code(v.x, i), code(v.y, i + 1), code(v.z, i + 2), code(v.w, i + 3));
                  s4[q] = c;
                  return c;
                },
                [&](uint32_t i) {
                  const int32_t c = code(__ldg(e.x + g0 + i), i);
                  e.sym[g0 + i] = c;
                  return c;
                });
}

/* ------------------------------------------------------------ canonical codes, in parallel */

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

/* ------------------------------------------------------------ code book (encode) */

typedef cub::BlockRadixSort<uint64_t, BOOK_THREADS, BOOK_ITEMS> BookSort;

struct BookShared {
  uint64_t key[HF_K];
  union {
    typename BookSort::TempStorage sort;
    struct {
      uint64_t weight[HF_K];
      uint32_t node[2 * HF_K];
    } tree;
    struct {
      uint32_t codes[HF_K];
      CanonShared canon;
    } c;
    typename RankScan::TempStorage rank; /* after the codes are written */
  } u;
  uint8_t lens[HF_K + 7];
  uint32_t m, maxf, lo, hi, used, overflowed;
  uint32_t count[NCCLZ_HUFF_LEN_LIMIT + 1];
};

/* Sorts the m keys of s.key (sort keys: value << 14 | index, value < 2^32) ascending. Above
 * BOOK_THREADS keys, by CUB's radix sort of the value bits alone: it is stable and the keys come
 * in index order, which leaves the index bits' passes out (17 us of a REL frame's book had sorted
 * all the bits). */
static __device__ void book_sort(BookShared &s, uint32_t m, uint32_t value_bits) {
  const int end_bit = 14 + value_bits < 64 ? 14 + value_bits + 1 : 64;
  if (m <= BOOK_THREADS) {
    uint32_t np = 1;
    while (np < m) np <<= 1;
    const uint64_t item = threadIdx.x < m ? s.key[threadIdx.x] : ~(uint64_t)0;
    const uint64_t v = ncclz_block_bitonic(item, reinterpret_cast<uint64_t *>(&s.u), np);
    __syncthreads();
    if (threadIdx.x < m) s.key[threadIdx.x] = v;
    __syncthreads();
    return;
  }
  uint64_t items[BOOK_ITEMS];
  for (int j = 0; j < BOOK_ITEMS; j++) {
    uint32_t i = threadIdx.x * BOOK_ITEMS + j;
    items[j] = i < m ? s.key[i] : ~(uint64_t)0;
  }
  __syncthreads();
  BookSort(s.u.sort).Sort(items, 14, end_bit);
  __syncthreads();
  for (int j = 0; j < BOOK_ITEMS; j++) {
    uint32_t i = threadIdx.x * BOOK_ITEMS + j;
    if (i < m) s.key[i] = items[j];
  }
  __syncthreads();
}

/* Step 4: lengths shortest first over (frequency desc, index asc), from the limited counts and the
 * m keys (weight << 32 | index) in (weight asc, index asc) order. A key's place in the descending
 * order is the keys of larger weight, then its place in its run of equal weights, whose index
 * order both orders share (ncclz_huff_desc_rank). Past BOOK_STEP4_SCAN_MIN keys the runs' bounds
 * come from one block scan of their starts: two binary searches a key took 8.6 of a REL frame's
 * 88 us book (m = 4,963); at a key a thread they cost less than the scan. Ends with a barrier. */
#ifndef BOOK_STEP4_SCAN_MIN
#define BOOK_STEP4_SCAN_MIN BOOK_THREADS
#endif
static __device__ void book_lengths(BookShared &s, uint32_t m) {
  const uint32_t i0 = threadIdx.x * BOOK_ITEMS;
  auto weight = [&](uint32_t i) { return (uint32_t)(s.key[i] >> 32); };
  uint32_t start[BOOK_ITEMS];
#pragma unroll
  for (uint32_t j = 0; j < BOOK_ITEMS; j++) {
    const uint32_t i = i0 + j;
    start[j] = i < m && i > 0 && weight(i) != weight(i - 1) ? i : 0u;
  }
  RankScan(s.u.rank).InclusiveScan(start, start, cuda::maximum<uint32_t>());
  __syncthreads(); /* the scan's room is the run ends' */
  uint32_t *run_end = s.u.tree.node; /* at a run's start: one past its last key */
#pragma unroll
  for (uint32_t j = 0; j < BOOK_ITEMS; j++) {
    const uint32_t i = i0 + j;
    if (i < m && (i + 1 == m || weight(i + 1) != weight(i))) run_end[start[j]] = i + 1;
  }
  __syncthreads();
#pragma unroll
  for (uint32_t j = 0; j < BOOK_ITEMS; j++) {
    const uint32_t i = i0 + j;
    if (i < m) {
      const uint32_t desc = m - run_end[start[j]] + (i - start[j]);
      s.lens[(uint32_t)(s.key[i] & 0x3FFF)] = (uint8_t)ncclz_huff_rank_length(s.count, desc);
    }
  }
  __syncthreads();
}

/* Sparse table (as write_table in coder_huffman.c): the lengths of the present indices lo+j,
 * j < mm, in ascending order, one byte each at their rank, into s.key (free after step 4).
 * Thread t ranks bitmap word t (at most 257 words). Ends with a barrier. */
static __device__ void pack_sparse_nibbles(BookShared &s, uint32_t lo, uint32_t mm) {
  const uint32_t j0 = 32 * threadIdx.x;
  uint32_t bits = 0, rank;
  for (uint32_t b = 0; b < 32 && j0 + b < mm; b++) bits |= (uint32_t)(s.lens[lo + j0 + b] != 0) << b;
  RankScan(s.u.rank).ExclusiveSum((uint32_t)__popc(bits), rank);
  uint8_t *packed = reinterpret_cast<uint8_t *>(s.key);
  for (uint32_t b = 0; b < 32; b++)
    if (bits >> b & 1u) packed[rank + __popc(bits & ((1u << b) - 1u))] = s.lens[lo + j0 + b];
  __syncthreads();
}

/* Word q of the payload head (FORMAT.md): [lo m][u], the bitmap words (sparse), the nibble words,
 * [nseg]. Dense nibble j is the length of lo+j; sparse nibble r the packed length of rank r. */
static __device__ uint32_t table_head_word(const BookShared &s, uint32_t q, uint32_t lo, uint32_t mm, uint32_t u,
                                           uint32_t nseg) {
  const uint32_t bw = ncclz_huff_bitmap_words(mm, u), T = ncclz_huff_table_words(mm, u);
  if (q == 0) return ncclz_huff_table_word0(lo, mm);
  if (q == 1) return u;
  if (q == T + 2) return nseg;
  uint32_t v = 0;
  if (q - 2 < bw) {
    const uint32_t j0 = 32 * (q - 2);
    for (uint32_t b = 0; b < 32 && j0 + b < mm; b++) v |= (uint32_t)(s.lens[lo + j0 + b] != 0) << b;
    return v;
  }
  const uint8_t *packed = reinterpret_cast<const uint8_t *>(s.key);
  const uint32_t r0 = 8 * (q - 2 - bw);
  for (uint32_t j = 0; j < 8; j++) {
    const uint32_t r = r0 + j;
    if (bw ? r < u : r < mm) v |= (uint32_t)(bw ? packed[r] : s.lens[lo + r]) << (4 * j);
  }
  return v;
}

__global__ void __launch_bounds__(BOOK_THREADS, 1) k_hf_book(NzShape sh, NzFrame *fr, const uint32_t *hist,
                                                              uint32_t *table, uint8_t *out, size_t stride) {
  nz_pdl_enter();
  extern __shared__ __align__(16) unsigned char smem[];
  BookShared &s = *reinterpret_cast<BookShared *>(smem);
  const uint32_t f = blockIdx.x, t = threadIdx.x;
  if (!sh.takes(fr, f, NCCLZ_CODER_HUFFMAN)) return;
  const uint32_t K = ncclz_huff_alphabet_size(fr[f].radius);
  const uint32_t *freq = hist + (size_t)f * HF_K;
  if (t == 0) {
    s.maxf = 0;
    s.lo = K;
    s.hi = 0;
    s.used = 0;
    s.overflowed = 0;
  }
  if (t <= NCCLZ_HUFF_LEN_LIMIT) s.count[t] = 0;
  for (uint32_t i = t; i < K; i += BOOK_THREADS) s.lens[i] = 0;
  __syncthreads();
  /* step 1: the used indices in index order (book_sort's radix sort relies on it), a thread's
   * BOOK_ITEMS consecutive ones placed by a block scan of their counts; the largest frequency
   * with one shared atomic a warp (thousands on one word, a thread each, serialize) */
  const uint32_t lane = t & 31;
  uint32_t q[BOOK_ITEMS], used = 0, qmax = 0;
  for (int j = 0; j < BOOK_ITEMS; j++) {
    const uint32_t i = t * BOOK_ITEMS + j;
    q[j] = i < K ? freq[i] : 0u;
    used += q[j] != 0;
    qmax = q[j] > qmax ? q[j] : qmax;
  }
  uint32_t at, total;
  RankScan(s.u.rank).ExclusiveSum(used, at, total);
  for (int j = 0; j < BOOK_ITEMS; j++)
    if (q[j]) s.key[at++] = (uint64_t)q[j] << 14 | (t * BOOK_ITEMS + j);
  qmax = __reduce_max_sync(NZ_FULL, qmax);
  if (lane == 0 && qmax) atomicMax(&s.maxf, qmax);
  if (t == 0) s.m = total;
  __syncthreads();
  const uint32_t m = s.m, vbits = 32 - __clz(s.maxf);
  if (m == 1) {
    if (t == 0) s.lens[(uint32_t)(s.key[0] & 0x3FFF)] = 1;
  } else if (m > 1) {
    book_sort(s, m, vbits);
    /* step 2: the reference's two-queue tree on its key layout (weight in the high half), by the
     * whole block (the fixed point; the weights' room holds its two rounds of sums), then the
     * depths by the whole block, in the same room */
    for (uint32_t i = t; i < m; i += BOOK_THREADS) s.key[i] = (s.key[i] >> 14) << 32 | (s.key[i] & 0x3FFF);
    __syncthreads();
    uint32_t *sums = reinterpret_cast<uint32_t *>(s.u.tree.weight);
    ncclz_huff_block_parents<BOOK_THREADS>(s.key, m, sums, sums + HF_K, s.u.tree.node);
    uint32_t *depth = reinterpret_cast<uint32_t *>(s.u.tree.weight);
    ncclz_huff_block_depths<BOOK_THREADS, BOOK_NODE_ITEMS>(s.u.tree.node, depth, m);
    for (uint32_t i0 = 0; i0 < m; i0 += BOOK_THREADS) { /* a warp's lanes of one length add once */
      const uint32_t i = i0 + t, d = i < m ? min(depth[i], NCCLZ_HUFF_MAX_LEN) : ~0u;
      const unsigned same = __match_any_sync(NZ_FULL, d);
      if (d != ~0u && lane == (uint32_t)__ffs(same) - 1) atomicAdd(&s.count[d], (uint32_t)__popc(same));
      if (__any_sync(NZ_FULL, i < m && depth[i] > NCCLZ_HUFF_MAX_LEN) && lane == 0) s.overflowed = 1;
    }
    __syncthreads();
    if (t == 0) ncclz_huff_limit(s.count, NCCLZ_HUFF_MAX_LEN, (int)s.overflowed); /* step 3 */
    __syncthreads(); /* step 4 reads the limited counts */
    if (m > BOOK_STEP4_SCAN_MIN) book_lengths(s, m); /* step 4 */
    else
      for (uint32_t i = t; i < m; i += BOOK_THREADS)
        s.lens[(uint32_t)(s.key[i] & 0x3FFF)] = (uint8_t)ncclz_huff_rank_length(s.count, ncclz_huff_desc_rank(s.key, m, i));
  }
  __syncthreads();
  canonical_codes(s.lens, K, s.u.c.codes, s.u.c.canon);
  uint32_t *enc = table + (size_t)f * HF_K;
  for (uint32_t i0 = 0; i0 < K; i0 += BOOK_THREADS) { /* lo, hi and used a warp at a time */
    const uint32_t i = i0 + t, len = i < K ? s.lens[i] : 0u;
    if (i < K) enc[i] = ncclz_huff_reverse(s.u.c.codes[i], len) | len << 16;
    const unsigned has = __ballot_sync(NZ_FULL, len != 0);
    if (lane == 0 && has) {
      atomicMin(&s.lo, i + __ffs(has) - 1);
      atomicMax(&s.hi, i + 31 - __clz(has));
      atomicAdd(&s.used, (uint32_t)__popc(has));
    }
  }
  __syncthreads();
  const uint32_t lo = s.lo < K ? s.lo : 0, mm = s.lo < K ? s.hi - s.lo + 1 : 0, u = s.used;
  const uint32_t nseg = (uint32_t)ncclz_ceil_div(sh.frame_n(f), sh.p0), sw = sh.side_words(f);
  if (ncclz_huff_table_sparse(mm, u)) pack_sparse_nibbles(s, lo, mm);
  uint32_t *P = (uint32_t *)(out + f * stride + 64) + sw;
  uint32_t chk = 0;
  for (uint32_t q = t; q < 3 + ncclz_huff_table_words(mm, u); q += BOOK_THREADS) {
    uint32_t v = table_head_word(s, q, lo, mm, u, nseg);
    P[q] = v;
    chk += nz_chk(v, sw + q);
  }
  nz_add_check<BOOK_THREADS>(chk, &fr[f].check);
  if (t == 0) {
    fr[f].m = mm;
    fr[f].used = u;
  }
}

/* ------------------------------------------------------------ segment encoder */

uint32_t nz_huffman_units(const NzShape &sh) { return (uint32_t)ncclz_ceil_div(ncclz_ceil_div(sh.frame_symbols, sh.p0), ENC_WARPS); }

/* A segment's staging area: S symbols of at most NCCLZ_HUFF_MAX_SYMBOL_BITS (51) bits. */
static __host__ __device__ uint32_t seg_stage_words(uint32_t S) { return (S * NCCLZ_HUFF_MAX_SYMBOL_BITS + 31) / 32 + 2; }

__global__ void __launch_bounds__(ENC_WARPS * 32) k_hf_encode(NzShape sh, const int32_t *sym, const uint32_t *table,
                                                              uint8_t *out, size_t stride, NzFrame *fr,
                                                              unsigned long long *lb) {
  nz_pdl_enter();
  extern __shared__ __align__(16) uint32_t stage[];
  __shared__ uint32_t s_prefix, s_segw[ENC_WARPS], s_excl[ENC_WARPS], s_agg;
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  /* The unit is the block index, as in CUB's single-pass scans and the FIXEDLEN encoder (an
   * atomic counter cost every CTA an L2 round trip with all its warps waiting: FIXEDLEN gained
   * 4.5% from this). */
  const uint32_t unit = blockIdx.x, upf = sh.units_per_frame, f = unit / upf, lc = unit - f * upf;
  if (!sh.takes(fr, f, NCCLZ_CODER_HUFFMAN)) return;
  const uint32_t S = sh.p0, n = sh.frame_n(f), nseg = (uint32_t)ncclz_ceil_div(n, S), k = lc * ENC_WARPS + warp;
  const ncclzHuffAlphabet a = {fr[f].centre, fr[f].radius};
  const uint32_t *enc = table + (size_t)f * HF_K;
  const uint32_t count = k < nseg ? (n - k * S < S ? n - k * S : S) : 0;
  const int32_t *src = sym + (size_t)f * sh.frame_symbols + (size_t)k * S;
  /* A warp per segment, 32 symbols a step: lane l codes symbol step*32 + l (coalesced loads) and
   * places its field at the segment's running bit count plus the scan of the widths before it.
   * (A lane coding S/32 consecutive symbols in two passes, counting then putting, makes every load
   * of a warp touch 32 lines; that encode kernel took most of the batched HUFFMAN encode.) */
  uint32_t *st = stage + warp * seg_stage_words(S);
  for (uint32_t i = lane; i < seg_stage_words(S); i += 32) st[i] = 0;
  __syncwarp();
  uint32_t seg_bits = 0;
  for (uint32_t i0 = 0; i0 < count; i0 += 32 * ENC_ILP) {
    /* ENC_ILP rounds' symbol loads, then their table loads, in flight together: one round at a
     * time left each warp waiting on two dependent loads a round (ncu: long scoreboard 12.3 of
     * 27.6 cycles between a warp's instructions). Two keep 32 registers and eight CTAs an SM;
     * four (40 registers) and eight (64) were as fast or slower. */
    int32_t v[ENC_ILP];
    uint32_t idx[ENC_ILP], e[ENC_ILP];
#pragma unroll
    for (int u = 0; u < ENC_ILP; u++) v[u] = i0 + 32 * u + lane < count ? __ldg(src + i0 + 32 * u + lane) : 0;
#pragma unroll
    for (int u = 0; u < ENC_ILP; u++) {
      idx[u] = ncclz_huff_index(v[u], a);
      e[u] = i0 + 32 * u + lane < count ? __ldg(enc + idx[u]) : 0u;
    }
#pragma unroll
    for (int u = 0; u < ENC_ILP; u++) {
      uint32_t len = 0;
      uint64_t field = 0;
      if (i0 + 32 * u + lane < count) field = ncclz_huff_symbol_field(v[u], a, idx[u], e[u], &len);
      const uint32_t end = nz_warp_inclusive_sum(len); /* where this lane's field ends */
      if (len) ncclz_huff_or_field(st, seg_bits + end - len, field, len);
      seg_bits += __shfl_sync(NZ_FULL, end, 31);
    }
  }
  __syncwarp();
  const uint32_t seg_words = (seg_bits + 31) / 32;
  if (lane == 0) s_segw[warp] = seg_words;
  __syncthreads();
  if (tid == 0) {
    uint32_t acc = 0;
    for (int w = 0; w < ENC_WARPS; w++) {
      s_excl[w] = acc;
      acc += s_segw[w];
    }
    s_agg = acc;
    nz_lookback_publish(lb, unit, f * upf, acc); /* before warp 0 waits: successors wait less */
  }
  __syncthreads();
  if (warp == 0) {
    uint32_t p = nz_lookback_wait(lb, unit, f * upf, s_agg);
    if (lane == 0) s_prefix = p;
  }
  __syncthreads();
  const uint32_t sw = sh.side_words(f), T = ncclz_huff_table_words(fr[f].m, fr[f].used), H = 3 + T + nseg;
  uint32_t *P = (uint32_t *)(out + f * stride + 64);
  const uint32_t my0 = s_prefix + s_excl[warp];
  uint32_t chk = 0;
  if (k < nseg && lane == 0) { /* offsets follow [lo m][u], the table and [nseg] */
    uint32_t j = sw + 3 + T + k;
    P[j] = 4 * my0;
    chk += nz_chk(4 * my0, j);
  }
  for (uint32_t i = lane; i < seg_words; i += 32) {
    uint32_t j = sw + H + my0 + i, v = st[i];
    P[j] = v;
    chk += nz_chk(v, j);
  }
  nz_add_check_warp(chk, &fr[f].check);
  if (tid == 0 && lc == (uint32_t)ncclz_ceil_div(nseg, ENC_WARPS) - 1) fr[f].coded_bytes = 4 * (H + s_prefix + s_agg);
}

ncclzStatus nz_huffman_encode(const NzShape &sh0, const int32_t *d_sym, const NzEb *eb, uint8_t *d_out, size_t stride,
                              NzFrame *fr, unsigned long long *lb, uint32_t *hist, uint32_t *table, cudaStream_t s) {
  NzShape sh = sh0;
  sh.units_per_frame = nz_huffman_units(sh);
  const uint32_t nf = sh.n_frames;
  NZ_CUDA(cudaMemsetAsync(hist, 0, sizeof(uint32_t) * HF_K * (size_t)nf, s));
  const uint32_t chunk = hist_chunk(sh);
  dim3 g((unsigned)ncclz_ceil_div(sh.frame_symbols, chunk), nf);
  if (eb) { /* the sample's kernel resolves eb:rel from the range pass's pairs, the quantizer reads the stats */
    nz_launch(k_hf_median_eb, nf, 1024, 0, s, sh, *eb, fr);
    NZ_LAUNCHED();
    NzEb q = *eb;
    q.p.part = nullptr;
    nz_launch(k_hf_eb_hist, g, HIST_THREADS, 0, s, sh, q, fr, hist, chunk);
  } else {
    nz_launch(k_hf_median, nf, 1024, 0, s, sh, d_sym, fr);
    NZ_LAUNCHED();
    nz_launch(k_hf_hist, g, HIST_THREADS, 0, s, sh, d_sym, fr, hist, chunk);
  }
  NZ_LAUNCHED();
  size_t book_smem = sizeof(BookShared);
  NZ_CUDA(nz_smem_optin(k_hf_book, book_smem));
  nz_launch(k_hf_book, nf, BOOK_THREADS, book_smem, s, sh, fr, hist, table, d_out, stride);
  NZ_LAUNCHED();
  size_t enc_smem = sizeof(uint32_t) * ENC_WARPS * seg_stage_words(sh.p0);
  NZ_CUDA(nz_smem_optin(k_hf_encode, enc_smem));
  uint32_t last = (uint32_t)ncclz_ceil_div(ncclz_ceil_div(sh.frame_n(nf - 1), sh.p0), ENC_WARPS);
  nz_launch(k_hf_encode, (nf - 1) * sh.units_per_frame + last, ENC_WARPS * 32, enc_smem, s, sh, d_sym, table, d_out, stride,
                                                                                     fr, lb);
  NZ_LAUNCHED();
  return NCCLZ_OK;
}

/* ------------------------------------------------------------ decode */

static __device__ void hf_fail(NzFrame *F, uint32_t r) { atomicCAS(&F->status, 0u, NZ_CORRUPT(r)); }

struct TableShared {
  CanonShared canon;
  typename RankScan::TempStorage rank;
  uint8_t lens[HF_K + 7];
  uint32_t codes[HF_K];
  uint16_t sorted[HF_K]; /* indices in canonical order */
  uint32_t bad, max_len, used, kraft; /* Kraft sum: at most 8,194 * 2^14 < 2^32 */
};

static __device__ __forceinline__ uint32_t nibble_at(const uint8_t *nib, uint32_t k) {
  return (nib[k / 2] >> (4 * (k & 1))) & 15u;
}

/* One listed length l of index i: into the table, the Kraft sum and the longest length. */
static __device__ __forceinline__ void take_length(TableShared &s, uint32_t i, uint32_t l, uint32_t &kraft,
                                                   uint32_t &max_len) {
  s.lens[i] = (uint8_t)l;
  if (l) {
    kraft += 1u << (NCCLZ_HUFF_MAX_LEN - l);
    max_len = l > max_len ? l : max_len;
  }
}

/* Dense table (as read_dense): nibble j is the length of lo+j for j < m, zero padding after it;
 * the nonzero ones are counted into s.used for the check against u. */
static __device__ void read_dense_lengths(TableShared &s, const uint8_t *nib, uint32_t lo, uint32_t m, uint32_t nw,
                                          uint32_t &kraft, uint32_t &max_len) {
  uint32_t used = 0;
  for (uint32_t j = threadIdx.x; j < 8 * nw; j += BOOK_THREADS) {
    const uint32_t l = nibble_at(nib, j);
    if (j < m) {
      take_length(s, lo + j, l, kraft, max_len);
      used += l != 0;
    } else if (l) {
      s.bad = 1; /* nonzero padding */
    }
  }
  if (used) atomicAdd(&s.used, used);
}

/* Sparse table (as read_sparse): thread t takes bitmap word t (bw <= 257 words); a block scan
 * ranks its set bits among the first m, and only when exactly u are set does anyone read a
 * nibble, so every nibble read lies below u. Padding bits and nibbles must be zero, and a listed
 * length must not be. */
static __device__ void read_sparse_lengths(TableShared &s, const uint32_t *bitmap, const uint8_t *nib, uint32_t lo,
                                           uint32_t m, uint32_t u, uint32_t bw, uint32_t nw,
                                           uint32_t &kraft, uint32_t &max_len) {
  const uint32_t t = threadIdx.x, j0 = 32 * t;
  const uint32_t word = t < bw ? bitmap[t] : 0u;
  const uint32_t inside = m - j0 >= 32 ? 0xFFFFFFFFu : (1u << (m - j0)) - 1u; /* for t < bw, j0 < m */
  const uint32_t bits = t < bw ? word & inside : 0u;
  if (word & ~bits) s.bad = 1; /* bits at m and above */
  uint32_t rank, total;
  RankScan(s.rank).ExclusiveSum((uint32_t)__popc(bits), rank, total);
  if (total != u) {
    if (t == 0) s.bad = 1;
  } else {
    for (uint32_t b = 0; b < 32; b++) {
      if (!(bits >> b & 1u)) continue;
      const uint32_t l = nibble_at(nib, rank + __popc(bits & ((1u << b) - 1u)));
      if (!l) s.bad = 1;
      take_length(s, lo + j0 + b, l, kraft, max_len);
    }
  }
  for (uint32_t j = u + t; j < 8 * nw; j += BOOK_THREADS)
    if (nibble_at(nib, j)) s.bad = 1; /* nonzero padding */
}

/* Per frame: validates the code table (as parse_table/read_lengths) and builds the fast table
 * (index << 4 | length, 0 for the slow path) and the canonical tables for long codes. */
__global__ void __launch_bounds__(BOOK_THREADS, 1) k_hf_table(NzShape sh, const uint8_t *in, NzFrame *fr, uint32_t *lut,
                                                               uint32_t *tables) {
  nz_pdl_enter();
  extern __shared__ __align__(16) unsigned char smem[];
  TableShared &s = *reinterpret_cast<TableShared *>(smem);
  const uint32_t f = blockIdx.x, t = threadIdx.x;
  NzFrame *F = &fr[f];
  if (F->status || F->coder != NCCLZ_CODER_HUFFMAN) return;
  const uint32_t R = F->radius, n = F->n, len = F->payload_bytes - F->side_bytes, sw = F->side_bytes / 4;
  if (R < 1 || R > NCCLZ_HUFF_MAX_RADIUS || (R & (R - 1)) || len < 8) {
    if (t == 0) hf_fail(F, NZ_R_HF_TABLE);
    return;
  }
  const uint32_t *P = (const uint32_t *)(in + F->src + 64) + sw;
  /* [lo: u16][m: u16][u: u32], the table, [nseg] (as parse_table): sizes before any table read */
  const uint32_t K = ncclz_huff_alphabet_size(R), lo = P[0] & 0xFFFFu, m = P[0] >> 16, u = P[1];
  if (lo > K || m > K - lo || u > m) {
    if (t == 0) hf_fail(F, NZ_R_HF_TABLE);
    return;
  }
  const uint32_t bw = ncclz_huff_bitmap_words(m, u), nw = ncclz_huff_nibble_words(m, u), T = bw + nw;
  const uint32_t nseg = (uint32_t)ncclz_ceil_div(n, sh.p0);
  if (len / 4 < 3ull + T || P[2 + T] != nseg || len / 4 < 3ull + T + nseg) {
    if (t == 0) hf_fail(F, NZ_R_HF_TABLE);
    return;
  }
  if (t == 0) {
    s.bad = 0;
    s.kraft = 0;
    s.max_len = 0;
    s.used = 0;
  }
  for (uint32_t i = t; i < K; i += BOOK_THREADS) s.lens[i] = 0;
  __syncthreads();
  const uint8_t *nib = (const uint8_t *)(P + 2 + bw);
  uint32_t chk = 0;
  for (uint32_t q = t; q < T + 3; q += BOOK_THREADS) chk += nz_chk(P[q], sw + q);
  uint32_t kraft = 0, longest = 0;
  if (bw) {
    read_sparse_lengths(s, P + 2, nib, lo, m, u, bw, nw, kraft, longest);
  } else {
    read_dense_lengths(s, nib, lo, m, nw, kraft, longest);
  }
  /* a warp's sum and maximum, then one shared atomic a warp (a 64-bit sum by every thread made the
   * table kernel wait on one shared word) */
  kraft = __reduce_add_sync(NZ_FULL, kraft);
  longest = __reduce_max_sync(NZ_FULL, longest);
  if ((t & 31) == 0 && kraft) {
    atomicAdd(&s.kraft, kraft);
    atomicMax(&s.max_len, longest);
  }
  __syncthreads();
  const bool table_bad = s.bad || (!bw && s.used != u); /* dense: exactly u nonzero lengths */
  if (table_bad || s.kraft > (1u << NCCLZ_HUFF_MAX_LEN) || (s.kraft == 0 && n > 0)) {
    if (t == 0) hf_fail(F, table_bad ? NZ_R_HF_TABLE : NZ_R_HF_KRAFT);
    return;
  }
  nz_add_check<BOOK_THREADS>(chk, &F->check);
  canonical_codes(s.lens, K, s.codes, s.canon);
  const uint32_t max_len = s.max_len, fb = max_len < FAST_BITS ? max_len : FAST_BITS;
  uint32_t *L = lut + ((size_t)f << FAST_BITS);
  uint32_t *tb = tables + (size_t)f * NZ_HF_TSTRIDE;
  if (t < 16) {
    tb[t] = s.canon.count[t];
    tb[16 + t] = s.canon.first[t];
    tb[32 + t] = s.canon.start[t];
  }
  if (t == 0) {
    tb[48] = max_len;
    tb[49] = fb;
    F->fast_bits = fb;
  }
  for (uint32_t i = t; i < K; i += BOOK_THREADS) {
    const uint32_t l = s.lens[i];
    if (!l) continue;
    const uint32_t at = s.canon.start[l] + s.codes[i] - s.canon.first[l];
    tb[64 + at] = i;
    s.sorted[at] = (uint16_t)i;
  }
  __syncthreads();
  /* Each entry finds its own code, so that no thread fills a short code's 2^(fb-l) entries alone. */
  for (uint32_t e = t; e < (1u << fb); e += BOOK_THREADS) {
    const uint32_t msb = fb ? __brev(e) >> (32 - fb) : 0u; /* fb 0: one entry, no code */
    uint32_t v = 0;
    for (uint32_t l = 1; l <= fb; l++) {
      const uint32_t code = msb >> (fb - l);
      if (code - s.canon.first[l] < s.canon.count[l]) {
        v = (uint32_t)s.sorted[s.canon.start[l] + code - s.canon.first[l]] << 4 | l;
        break;
      }
    }
    L[e] = v;
  }
}

/* ------------------------------------------------------------ decode, a thread a segment
 * For batches with enough segments to fill the GPU a thread each (k_hf_decode_thread): a warp a
 * segment does about three times the work per symbol (parse, re-parse, decode by rank), which
 * the latency of one small frame repays and a full GPU does not. */

/* What decoding one symbol needs: the first-level table and canonical tables in shared memory,
 * the long codes' symbols (shared when they fit, else global). */
struct HfBook {
  const uint32_t *lut, *tab, *sorted;
  const uint16_t *slong; /* symbols of codes longer than fb, from long0; NULL: read sorted */
  uint32_t long0, fmask, fb, max_len, esc, fill, basev;
  ncclzHuffAlphabet a;
};

/* Frame f's fast lookup table (1 << fb entries) and length table into shared memory, by the
 * block's nthreads threads; the decoders then read them from there. */
static __device__ __forceinline__ void hf_stage_tables(uint32_t *s_lut, uint32_t *s_tab, const uint32_t *lut,
                                                       const uint32_t *tables, uint32_t f, uint32_t fb,
                                                       uint32_t nthreads) {
  for (uint32_t e = threadIdx.x; e < (1u << fb); e += nthreads) s_lut[e] = __ldg(lut + ((size_t)f << FAST_BITS) + e);
  if (threadIdx.x < 64) s_tab[threadIdx.x] = __ldg(tables + (size_t)f * NZ_HF_TSTRIDE + threadIdx.x);
}

/* A frame's book from its tables in shared memory (lut, tab: count, first, start, max_len at 48)
 * and sorted in global memory; nlong: the codes longer than fb. slong is left NULL. */
static __device__ HfBook hf_book(const uint32_t *lut, const uint32_t *tab, const uint32_t *sorted, const NzFrame *F,
                                 uint32_t fb, uint32_t &nlong) {
  HfBook b;
  b.lut = lut, b.tab = tab, b.sorted = sorted, b.slong = nullptr;
  b.fb = fb, b.max_len = tab[48], b.fmask = (1u << fb) - 1;
  b.a.centre = F->centre, b.a.radius = F->radius;
  b.esc = ncclz_huff_escape_index(b.a.radius), b.fill = ncclz_huff_fill_index(b.a.radius);
  b.basev = (uint32_t)b.a.centre - b.a.radius;
  b.long0 = fb < b.max_len ? tab[32 + fb + 1] : 0;
  nlong = fb < b.max_len ? tab[32 + b.max_len] + tab[b.max_len] - b.long0 : 0;
  return b;
}

/* One symbol (as decode_segment in coder_huffman.c): 0, or the reason it is invalid. */
template <typename Reader> /* refill(), skip(), buf: HfReader or BitSource */
static __device__ __forceinline__ uint32_t hf_symbol(const HfBook &b, Reader &r, int32_t &v) {
  r.refill();
  uint32_t e = b.lut[r.buf & b.fmask];
  if (!(e & 15u)) {
    /* A code longer than the table: fb is FAST_BITS here (fb < FAST_BITS only when no code is
     * longer), so its length is one of the three above it. The shortest that matches, as the
     * reference's loop finds it, without a branch: the three lengths' loads go out together, where
     * the loop waited on each in turn and most warps had a lane taking it every symbol. */
    static_assert(NCCLZ_HUFF_MAX_LEN - FAST_BITS == 3, "the long codes' lengths are unrolled");
    const uint32_t msb = __brev((uint32_t)r.buf & 0x7FFFu) >> 17;
    uint32_t at = 0, l_hit = 0;
#pragma unroll
    for (uint32_t l = NCCLZ_HUFF_MAX_LEN; l > FAST_BITS; l--) {
      const uint32_t code = msb >> (NCCLZ_HUFF_MAX_LEN - l), k = code - b.tab[16 + l];
      if (l <= b.max_len && k < b.tab[l]) at = b.tab[32 + l] + k, l_hit = l;
    }
    if (!l_hit) return NZ_R_HF_CODE;
    e = (b.slong ? (uint32_t)b.slong[at - b.long0] : __ldg(b.sorted + at)) << 4 | l_hit;
  }
  r.skip(e & 15u);
  const uint32_t idx = e >> 4;
  if (idx == b.esc) { /* as read_escape: b - 1, then the bits below z's leading one */
    r.refill();
    const uint32_t b1 = (uint32_t)r.buf & ((1u << NCCLZ_HUFF_ESCAPE_COUNT_BITS) - 1u);
    r.skip(NCCLZ_HUFF_ESCAPE_COUNT_BITS);
    r.refill();
    const uint32_t z = 1u << b1 | ((uint32_t)r.buf & ((1u << b1) - 1u));
    r.skip(b1);
    v = ncclz_huff_unescape(z, b.a.centre);
    if (ncclz_huff_index(v, b.a) != b.esc) return NZ_R_HF_ESCAPE; /* one encoding per symbol */
  } else if (idx == b.fill) {
    v = NCCLZ_FILL_CODE;
  } else {
    v = (int32_t)(b.basev + idx);
  }
  return 0;
}

/* Words of a lane's ring (ring_refill), a power of two. */
#define NZ_HF_RING 32u

/* LSB-first reader over one segment; words past the segment read as zero (as the reference). */
struct BitSource {
  const uint32_t *src;
  uint32_t words, next, nbits, base; /* base: payload word index of src[0], for the check */
  unsigned long long buf;
  uint32_t chk;
  const uint32_t *ring; /* ring_refill's copy of words [ring_end - ring_mask - 1, ring_end), or NULL */
  uint32_t ring_end, ring_mask;
  __device__ void refill() {
    if (nbits <= 32) {
      uint32_t w = 0;
      if (next < words) {
        /* the ring, else shared memory (stage_segments) or global */
        w = next < ring_end ? ring[next & ring_mask] : src[next];
        chk += nz_chk(w, base + next);
      }
      next++;
      buf |= (unsigned long long)w << nbits;
      nbits += 32;
    }
  }
  __device__ void skip(uint32_t l) {
    buf >>= l;
    nbits -= l;
  }
};

/* The reader's loads depend on each other (one word per refill), so a segment read from global
 * memory waits on it at every word: a 4 MiB frame coded alone has too few decoders to hide that
 * (ncu: 397 us per 4 MiB of 1,024-symbol segments). A warp's 32 segments lie back to back in the
 * stream: when they fit in the warp's seg_words of shared memory, the warp copies them there with
 * coalesced loads and each reader takes its words from shared memory; otherwise (wide codes,
 * corrupt offsets) the reader stays on global memory, its segment prefetched into L1. */
static __device__ bool stage_segments(BitSource &br, const uint32_t *stream, bool mine, uint32_t *seg,
                                      uint32_t seg_words) {
  const uint32_t lane = threadIdx.x & 31, first = mine ? (uint32_t)(br.src - stream) : 0xFFFFFFFFu;
  const uint32_t lo = __reduce_min_sync(NZ_FULL, first), hi = __reduce_max_sync(NZ_FULL, mine ? first + br.words : 0u);
  if (lo < hi && hi - lo <= seg_words) {
    for (uint32_t i = lane; i < hi - lo; i += 32) seg[i] = __ldg(stream + lo + i);
    __syncwarp();
    if (mine) br.src = seg + (first - lo);
    return true;
  }
  if (mine)
    for (uint32_t w = 0; w < br.words; w += 32) asm volatile("prefetch.global.L1 [%0];" ::"l"(br.src + w));
  return false;
}

/* Tops up every lane's ring (R words, lane r's at r * STRIDE in `rings`) to at most CAP more of
 * the words [next, next + R) of its segment. Streams of escapes (raw float bits: about 25 bits a
 * symbol) are too wide to stage whole, and a reader that loads its own next word each time makes
 * 32 lanes touch 32 segments a load: ncu showed 9.3 of 15 cycles between a warp's instructions
 * waiting on L1TEX, 70% excess sectors. Here a load serves 32 / CAP lanes, CAP consecutive words
 * each, eight loads in flight. A reader that outruns its ring in a round reads the rest from
 * global memory. */
template <uint32_t R, uint32_t CAP, uint32_t STRIDE>
static __device__ void ring_refill(BitSource &br, bool active, uint32_t *rings, const uint32_t *stream) {
  static_assert(CAP >= 8 && CAP <= 32 && 32 % CAP == 0, "eight loads serve 32 lanes or a multiple");
  constexpr uint32_t G = 32 / CAP; /* segments a load serves */
  const uint32_t lane = threadIdx.x & 31, sub = lane / CAP, j = lane % CAP;
  const uint32_t from = br.ring_end > br.next ? br.ring_end : br.next;
  const uint32_t to = br.next + R < br.words ? br.next + R : br.words;
  const uint32_t want = active && to > from ? (to - from < CAP ? to - from : CAP) : 0;
  const uint32_t at = (uint32_t)(br.src - stream) + from; /* stream word of the first one wanted */
  for (uint32_t r0 = 0; r0 < 32; r0 += 8 * G) {
    uint32_t w[8], n[8], first[8];
#pragma unroll
    for (uint32_t i = 0; i < 8; i++) { /* loads first, so that eight are in flight */
      const uint32_t r = r0 + i * G + sub;
      n[i] = __shfl_sync(NZ_FULL, want, r);
      first[i] = __shfl_sync(NZ_FULL, from, r);
      const uint32_t a = __shfl_sync(NZ_FULL, at, r);
      w[i] = j < n[i] ? __ldg(stream + a + j) : 0u;
    }
#pragma unroll
    for (uint32_t i = 0; i < 8; i++)
      if (j < n[i]) rings[(r0 + i * G + sub) * STRIDE + (first[i] + j) % R] = w[i];
  }
  if (want) br.ring_end = from + want;
  __syncwarp();
}

/* The symbols of the codes longer than the first-level table (sorted from long0, nlong of them) as
 * 16-bit words in the block's segment room, when no warp staged its segments there and they fit
 * (8,192 at 512-symbol segments): the decoder's second step reads them from shared memory instead
 * of global. On wide alphabets (REL without prediction: ~12 bits a symbol, about half the codes
 * 13-15 bits long) that global load was the decoder's main wait (ncu, 256 MiB of TREFHT REL 1e-4:
 * half of the stall cycles on L1TEX; loading the segment words ahead does not help). Block-uniform;
 * NULL when not used. */
static __device__ const uint16_t *stage_long_symbols(bool skip, const uint32_t *sorted, uint32_t long0,
                                                     uint32_t nlong, uint32_t *room, uint32_t room_words) {
  if (skip || nlong == 0 || nlong > 2 * room_words) return nullptr;
  uint16_t *t = reinterpret_cast<uint16_t *>(room);
  for (uint32_t i = threadIdx.x; i < nlong; i += blockDim.x) t[i] = (uint16_t)__ldg(sorted + long0 + i);
  __syncthreads();
  return t;
}

/* Shared words per decoding warp for segments of S symbols: room for 4 bits per symbol (8-bit
 * QSGD codes: ~3.3), at most 1,024 words, so that a block keeps to 16 KiB more (the executor's
 * 256-symbol segments; 64 KiB for 1,024-symbol ones halved the batched decode's blocks per SM). */
static uint32_t dec_seg_words(uint32_t S) { return S < 256u ? 4u * S : 1024u; }

/* Symbols a lane decodes before the warp stores them (a row of the stage per lane): 16 rather
 * than 32 halves the stage, so that shared memory holds five CTAs an SM instead of four. */
#ifndef DEC_ROUND
#define DEC_ROUND 16
#endif
static_assert(DEC_ROUND == 16 || DEC_ROUND == 32, "a round is half a warp's rows or one");
/* At most 80 registers a thread, room for six CTAs an SM; shared memory (the tables, the stage and
 * the segment room) holds five at segments of 256 symbols or more. */
#define DEC_MIN_CTAS 6
/* Narrow streams (at most 16 bits a symbol) that no warp stages whole read their segments
 * through rings of NZ_HF_RING_N words a lane (padded a word, against bank conflicts), topped up
 * a round at a time; the long codes' symbols take the room behind the rings. Each reader had
 * loaded its own next word from global memory, 32 segments a warp's load: REL 1e-4 on TREFHT
 * decoded at 384 GB/s end to end that way, 500 through the rings. */
#ifndef DEC_RING_NARROW
#define DEC_RING_NARROW 1
#endif
#define NZ_HF_RING_N 16u
/* Streams of at most this many bits a symbol (3D Lorenzo's codes: about 5) top their rings up
 * every other round, a round's 8 words then being enough for 32 symbols. */
#ifndef DEC_RING_SLOW_BITS
#define DEC_RING_SLOW_BITS 6u
#endif
#define NZ_HF_RING_N_WORDS ((DEC_THREADS / 32) * 32 * (NZ_HF_RING_N + 1))
#define DEC_ROOM_EXTRA (DEC_RING_NARROW ? 512u : 0u) /* words: five CTAs an SM still fit */
template <typename Out>
__global__ void __launch_bounds__(DEC_THREADS, DEC_MIN_CTAS) k_hf_decode_thread(NzShape sh, const uint8_t *in, Out out, NzFrame *fr,
                                                           const uint32_t *lut, const uint32_t *tables,
                                                           uint32_t seg_words) {
  nz_pdl_enter();
  __shared__ uint32_t s_lut[1u << FAST_BITS];
  __shared__ uint32_t s_tab[64];
  __shared__ int32_t stage[DEC_THREADS / 32][32][DEC_ROUND + 1];
  extern __shared__ uint32_t dec_seg[]; /* seg_words per warp: its 32 segments' coded words */
  const uint32_t f = blockIdx.y, tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  NzFrame *F = &fr[f];
  if (F->status || F->coder != NCCLZ_CODER_HUFFMAN) return;
  const uint32_t S = sh.p0, n = F->n, nseg = (uint32_t)ncclz_ceil_div(n, S);
  if (blockIdx.x * DEC_THREADS >= nseg) return;
  const uint32_t fb = F->fast_bits;
  hf_stage_tables(s_lut, s_tab, lut, tables, f, fb, DEC_THREADS);
  __syncthreads();
  const uint32_t *sorted = tables + (size_t)f * NZ_HF_TSTRIDE + 64;
  const uint32_t sw = F->side_bytes / 4;
  const uint32_t *P = (const uint32_t *)(in + F->src + 64) + sw;
  const uint32_t H = (uint32_t)ncclz_huff_head_words(P[0] >> 16, P[1], nseg); /* validated by k_hf_table */
  const uint32_t stream_bytes = F->payload_bytes - F->side_bytes - 4 * H;
  const uint32_t k = blockIdx.x * DEC_THREADS + tid;
  uint32_t chk = 0, bad = 0, count = 0;
  BitSource br = {P + H, 0, 0, 0, sw + H, 0, 0, nullptr, 0, 0};
  if (k < nseg) {
    uint32_t begin = P[H - nseg + k], end = k + 1 < nseg ? P[H - nseg + k + 1] : stream_bytes;
    chk += nz_chk(begin, sw + H - nseg + k);
    if ((k == 0 && begin != 0) || begin % 4 || begin > end || end > stream_bytes || stream_bytes % 4 ||
        (k + 1 == nseg && end % 4))
      bad = NZ_R_HF_OFFSETS;
    else {
      br.src = P + H + begin / 4;
      br.base = sw + H + begin / 4;
      br.words = (end - begin) / 4;
    }
    count = n - k * S < S ? n - k * S : S;
  }
  const bool staged = stage_segments(br, P + H, k < nseg && !bad, dec_seg + warp * seg_words, seg_words);
  uint32_t nlong;
  HfBook bk = hf_book(s_lut, s_tab, sorted, F, fb, nlong);
  /* Streams of more than 16 bits a symbol (mostly escapes, which take no long code) give the
   * segment room to the warps' rings rather than to the long codes' symbols. Frame-uniform. */
  const bool wide = (uint64_t)stream_bytes * 8 > 16ull * n, any_staged = __syncthreads_or(staged);
  const uint32_t room_words = seg_words * (DEC_THREADS / 32) + DEC_ROOM_EXTRA;
  const bool ring_w = wide && !staged && seg_words >= 32 * NZ_HF_RING; /* warp-uniform */
  const bool ring_n = DEC_RING_NARROW && !wide && !any_staged && room_words >= 2 * NZ_HF_RING_N_WORDS; /* block */
  const bool ring_slow = (uint64_t)stream_bytes * 8 <= (uint64_t)DEC_RING_SLOW_BITS * n;
  uint32_t *long_room = ring_n ? dec_seg + NZ_HF_RING_N_WORDS : dec_seg;
  bk.slong = stage_long_symbols(any_staged || wide, sorted, bk.long0, nlong, long_room,
                                room_words - (uint32_t)(long_room - dec_seg));
  if (ring_w) br.ring = dec_seg + warp * seg_words + lane * NZ_HF_RING, br.ring_mask = NZ_HF_RING - 1;
  if (ring_n) br.ring = dec_seg + (warp * 32 + lane) * (NZ_HF_RING_N + 1), br.ring_mask = NZ_HF_RING_N - 1;
  const uint32_t rounds = __reduce_max_sync(NZ_FULL, count);
  const typename Out::Frame dst = out.frame(sh, f, in, *F);
  for (uint32_t c0 = 0; c0 < rounds; c0 += DEC_ROUND) {
    if (ring_w && c0 % 32 == 0)
      ring_refill<NZ_HF_RING, 32, NZ_HF_RING>(br, k < nseg && !bad, dec_seg + warp * seg_words, P + H);
    if (ring_n && (!ring_slow || c0 % 32 == 0)) /* DEC_ROUND (16) symbols of at most 15 bits fit in 8 words */
      ring_refill<NZ_HF_RING_N, 8, NZ_HF_RING_N + 1>(br, k < nseg && !bad, dec_seg + warp * 32 * (NZ_HF_RING_N + 1), P + H);
    for (uint32_t j = 0; j < DEC_ROUND && c0 + j < count && !bad; j++) {
      int32_t v;
      const uint32_t why = hf_symbol(bk, br, v);
      if (why) {
        bad = why;
        break;
      }
      stage[warp][lane][j] = v;
    }
    __syncwarp();
    for (uint32_t r0 = 0; r0 < 32; r0 += 32 / DEC_ROUND) { /* row r = lane r's segment: coalesced stores */
      const uint32_t r = r0 + lane / DEC_ROUND, c = c0 + lane % DEC_ROUND;
      uint32_t kr = blockIdx.x * DEC_THREADS + warp * 32 + r, cr = __shfl_sync(NZ_FULL, count, r);
      if (c < cr) dst.put((size_t)kr * S + c, stage[warp][r][lane % DEC_ROUND]);
    }
    __syncwarp();
  }
  if (k < nseg && !bad) {
    unsigned long long used = (unsigned long long)br.next * 32 - br.nbits;
    uint32_t pad = (uint32_t)(br.words * 32ull - used);
    if ((used + 31) / 32 != br.words) bad = NZ_R_HF_SEGEND;
    else if (pad && (br.buf & ((1ull << pad) - 1)) != 0) bad = NZ_R_HF_PAD;
  }
  if (bad) hf_fail(F, bad);
  nz_add_check<DEC_THREADS>(chk + br.chk, &F->check);
}


/* ------------------------------------------------------------ decode, a warp a segment */

/* LSB-first reader over one segment's words (shared or global); words past the segment read as
 * zero, as in the reference, so a code that runs past the end is caught by the end check. */
struct HfReader {
  const uint32_t *w;
  uint32_t words, next, nbits;
  unsigned long long buf;
  __device__ uint32_t word(uint32_t i) const { return i < words ? w[i] : 0u; }
  __device__ void refill() {
    if (nbits <= 32) {
      buf |= (unsigned long long)word(next) << nbits;
      next++;
      nbits += 32;
    }
  }
  __device__ void skip(uint32_t l) {
    buf >>= l;
    nbits -= l;
  }
  __device__ void seek(uint32_t bit) {
    next = bit / 32, nbits = 0, buf = 0;
    refill();
    skip(bit % 32);
  }
  __device__ uint32_t pos() const { return 32 * next - nbits; }
};

/* The segment end (as check_segment_end): exactly its words used, the rest of the last one zero. */
static __device__ uint32_t hf_segment_end(const uint32_t *w, uint32_t words, uint32_t used) {
  if ((used + 31) / 32 != words) return NZ_R_HF_SEGEND;
  if (used % 32 && w[words - 1] >> (used % 32)) return NZ_R_HF_PAD;
  return 0;
}

/* The reference's serial decode of a segment to dst's symbols from `at` on: 0 or the first reason
 * it fails. */
template <typename Dst>
static __device__ uint32_t hf_serial(const HfBook &b, const uint32_t *w, uint32_t words, uint32_t count, const Dst &dst,
                                     uint32_t at) {
  HfReader r = {w, words, 0, 0, 0};
  for (uint32_t i = 0; i < count; i++) {
    int32_t v;
    const uint32_t bad = hf_symbol(b, r, v);
    if (bad) return bad;
    dst.put(at + i, v);
  }
  return hf_segment_end(w, words, r.pos());
}

#define HF_NONE 0xFFFFFFFFu

/* The first parse of one lane's codes that start in [r0, r1) from r0, marked in bm (clear there). */
static __device__ void hf_mark(const HfBook &b, const uint32_t *w, uint32_t words, uint32_t *bm, uint32_t r0,
                               uint32_t r1, uint32_t &end, bool &failed) {
  HfReader r = {w, words, 0, 0, 0};
  r.seek(r0);
  uint32_t p = r0;
  end = HF_NONE, failed = true;
  while (p < r1) {
    bm[p / 32] |= 1u << (p % 32);
    int32_t v;
    if (hf_symbol(b, r, v)) return;
    p = r.pos();
  }
  end = p, failed = false;
}

/* Symbols [0, count) of a segment whose code starts are the set bits of bm (words words), pre[i]
 * the set bits before word i: lane l decodes symbols l, l + 32, ... each from its own start, so
 * that the lanes share the symbols evenly whatever the codes' lengths in their slices, and the
 * stores are coalesced. Returns where the last symbol ends (all lanes). */
template <typename Dst>
static __device__ uint32_t hf_write_ranked(const HfBook &b, const uint32_t *w, uint32_t words, const uint32_t *bm,
                                           const uint32_t *pre, uint32_t count, const Dst &dst, uint32_t at) {
  uint32_t used = 0;
  for (uint32_t i = threadIdx.x & 31; i < count; i += 32) {
    uint32_t lo = 0, hi = words; /* the last word whose prefix is <= i */
    while (hi - lo > 1) {
      const uint32_t mid = (lo + hi) / 2;
      if (pre[mid] <= i) lo = mid;
      else hi = mid;
    }
    uint32_t x = bm[lo];
    for (uint32_t k = i - pre[lo]; k; k--) x &= x - 1; /* drop the starts before it */
    const uint32_t start = 32 * lo + __ffs(x) - 1;
    HfReader r = {w, words, 0, 0, 0};
    r.seek(start);
    int32_t v;
    hf_symbol(b, r, v); /* valid: the parse reached symbol count - 1 without a failure */
    dst.put(at + i, v);
    if (i == count - 1) used = r.pos();
  }
  return __reduce_max_sync(NZ_FULL, used);
}

/* Clears bits [lo, hi) of a bitmap. */
static __device__ void hf_bits_clear(uint32_t *bm, uint32_t lo, uint32_t hi) {
  while (lo < hi) {
    const uint32_t b = lo % 32, nb = 32 - b < hi - lo ? 32 - b : hi - lo;
    bm[lo / 32] &= ~((nb == 32 ? 0xFFFFFFFFu : (1u << nb) - 1u) << b);
    lo += nb;
  }
}

/* One lane's codes from `from` on that start in [r0, r1), as the bits of bm (a bit per stream bit,
 * set where a code starts; the lane owns the words of [r0, r1)) that hold its previous parse:
 * where the new parse reaches a start of the old one, the rest is the same and it stops there
 * (end and failed stay); positions it passes over are cleared. A code that fails stays marked and
 * ends the parse (end HF_NONE). */
static __device__ void hf_resync(const HfBook &b, const uint32_t *w, uint32_t words, uint32_t *bm, uint32_t from,
                                 uint32_t r0, uint32_t r1, uint32_t &end, bool &failed) {
  if (from == HF_NONE) {
    hf_bits_clear(bm, r0, r1);
    end = HF_NONE, failed = false;
    return;
  }
  hf_bits_clear(bm, r0, from < r1 ? from : r1);
  HfReader r = {w, words, 0, 0, 0};
  r.seek(from);
  uint32_t p = from;
  while (p < r1) {
    if (bm[p / 32] >> (p % 32) & 1u) return; /* in step with the old parse */
    bm[p / 32] |= 1u << (p % 32);
    int32_t v;
    if (hf_symbol(b, r, v)) {
      hf_bits_clear(bm, p + 1, r1);
      end = HF_NONE, failed = true;
      return;
    }
    const uint32_t q = r.pos();
    hf_bits_clear(bm, p + 1, q < r1 ? q : r1);
    p = q;
  }
  end = p, failed = false;
}

/* A warp decodes one segment of `words` words (staged in shared memory, words <= 2^26) into
 * dst[0, count): lane j takes the codes that start in its 1/32 of the words. It first parses from
 * its slice's first bit, then from where the lane before it ended, until no lane's start moves
 * (32 rounds at most: lane j is right after j); a parse from a new start stops where it meets the
 * old one (Huffman codes fall into step within a few codes), marked in bm (`words` words). The
 * code starts marked then rank the symbols (pre: `words` words), which the lanes decode evenly.
 * False when the segment is not valid (an invalid code or escape before the count-th symbol, too
 * few symbols, a wrong end): the caller then runs the serial decode for the reference's reason.
 * All lanes call it. */
template <typename Dst>
static __device__ bool hf_warp_segment(const HfBook &b, const uint32_t *w, uint32_t words, uint32_t count,
                                       uint32_t *bm, uint32_t *pre, const Dst &dst, uint32_t at) {
  const uint32_t lane = threadIdx.x & 31, per = (words + 31) / 32;
  const uint32_t w0 = lane * per < words ? lane * per : words, w1 = w0 + per < words ? w0 + per : words;
  const uint32_t r0 = 32 * w0, r1 = 32 * w1;
  for (uint32_t i = w0; i < w1; i++) bm[i] = 0;
  uint32_t start = r0, end;
  bool failed;
  hf_mark(b, w, words, bm, r0, r1, end, failed);
  for (uint32_t round = 0; round < 32; round++) {
    uint32_t from = __shfl_up_sync(NZ_FULL, end, 1);
    if (lane == 0) from = 0;
    const bool moved = from != start;
    if (!__any_sync(NZ_FULL, moved)) break;
    if (moved) {
      start = from;
      hf_resync(b, w, words, bm, start, r0, r1, end, failed);
    }
  }
  uint32_t n = 0; /* codes that start here, a failing one included */
  for (uint32_t i = w0; i < w1; i++) n += __popc(bm[i]);
  const uint32_t incl = nz_warp_inclusive_sum(n), base = incl - n, total = __shfl_sync(NZ_FULL, incl, 31);
  if (__any_sync(NZ_FULL, failed && base + n - 1 < count) || total < count) return false;
  for (uint32_t i = w0, c = base; i < w1; i++) {
    pre[i] = c;
    c += __popc(bm[i]);
  }
  __syncwarp();
  return hf_segment_end(w, words, hf_write_ranked(b, w, words, bm, pre, count, dst, at)) == 0;
}

/* Shared words per decoding warp for a segment's coded words, and as many for the bitmap of its
 * code starts and for their ranks: up to 32 bits a symbol (raw float bits: about 25) and 512
 * words; a longer segment (wide codes in segments over 512 symbols, or corrupt) is decoded
 * serially from global memory. */
#define DEC_WARPS 8
#define DEC_LONG 4096u /* long codes' symbols staged in shared memory, at most */
/* Segments in a batch from which a thread a segment decodes (k_hf_decode_thread): 256 CTAs of
 * DEC_THREADS, two an SM (256 MiB of 4 MiB frames: 131,072 segments of 512 symbols). */
#define NZ_HF_THREAD_SEGMENTS 32768u
static uint32_t dec_stage_words(uint32_t S) { return S < 512u ? S : 512u; }

/* A warp per segment (grid-stride over the frame's segments), the tables in shared memory. */
template <typename Out>
__global__ void __launch_bounds__(DEC_WARPS * 32) k_hf_decode(NzShape sh, const uint8_t *in, Out out, NzFrame *fr,
                                                              const uint32_t *lut, const uint32_t *tables,
                                                              uint32_t stage_words) {
  nz_pdl_enter();
  __shared__ uint32_t s_lut[1u << FAST_BITS];
  __shared__ uint32_t s_tab[64];
  __shared__ uint16_t s_long[DEC_LONG];
  extern __shared__ uint32_t dec_room[]; /* per warp: stage_words coded words, bitmap words, ranks */
  const uint32_t f = blockIdx.y, tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  NzFrame *F = &fr[f];
  if (F->status || F->coder != NCCLZ_CODER_HUFFMAN) return;
  const uint32_t S = sh.p0, n = F->n, nseg = (uint32_t)ncclz_ceil_div(n, S);
  if (blockIdx.x * DEC_WARPS >= nseg) return;
  const uint32_t fb = F->fast_bits;
  hf_stage_tables(s_lut, s_tab, lut, tables, f, fb, DEC_WARPS * 32);
  __syncthreads();
  uint32_t nlong;
  HfBook b = hf_book(s_lut, s_tab, tables + (size_t)f * NZ_HF_TSTRIDE + 64, F, fb, nlong);
  if (nlong && nlong <= DEC_LONG) { /* block-uniform */
    for (uint32_t i = tid; i < nlong; i += DEC_WARPS * 32) s_long[i] = (uint16_t)__ldg(b.sorted + b.long0 + i);
    __syncthreads();
    b.slong = s_long;
  }
  const uint32_t sw = F->side_bytes / 4;
  const uint32_t *P = (const uint32_t *)(in + F->src + 64) + sw;
  const uint32_t H = (uint32_t)ncclz_huff_head_words(P[0] >> 16, P[1], nseg); /* validated by k_hf_table */
  const uint32_t stream_bytes = F->payload_bytes - F->side_bytes - 4 * H;
  uint32_t *stage = dec_room + warp * 3 * stage_words, *bm = stage + stage_words, *pre = bm + stage_words;
  const typename Out::Frame dst = out.frame(sh, f, in, *F);
  uint32_t chk = 0;
  for (uint32_t k = blockIdx.x * DEC_WARPS + warp; k < nseg; k += gridDim.x * DEC_WARPS) { /* warp-uniform */
    const uint32_t begin = __ldg(P + H - nseg + k), end = k + 1 < nseg ? __ldg(P + H - nseg + k + 1) : stream_bytes;
    if (lane == 0) chk += nz_chk(begin, sw + H - nseg + k);
    if ((k == 0 && begin != 0) || begin % 4 || begin > end || end > stream_bytes || stream_bytes % 4 ||
        (k + 1 == nseg && end % 4)) {
      if (lane == 0) hf_fail(F, NZ_R_HF_OFFSETS);
      continue;
    }
    const uint32_t words = (end - begin) / 4, count = n - k * S < S ? n - k * S : S;
    const uint32_t *src = P + H + begin / 4, base = sw + H + begin / 4;
    const bool staged = words <= stage_words;
    for (uint32_t i = lane; i < words; i += 32) {
      const uint32_t v = __ldg(src + i);
      chk += nz_chk(v, base + i);
      if (staged) stage[i] = v;
    }
    __syncwarp();
    const uint32_t *w = staged ? stage : src;
    if (!(staged && hf_warp_segment(b, stage, words, count, bm, pre, dst, k * S))) {
      __syncwarp();
      uint32_t bad = 0;
      if (lane == 0) bad = hf_serial(b, w, words, count, dst, k * S);
      if (bad) hf_fail(F, bad);
    }
    __syncwarp();
  }
  nz_add_check_warp(chk, &F->check);
}

template <typename Out>
ncclzStatus nz_huffman_decode(const NzShape &sh, const uint8_t *d_in, const Out &out, NzFrame *fr, uint32_t *lut,
                              uint32_t *tables, cudaStream_t s) {
  size_t smem = sizeof(TableShared);
  NZ_CUDA(nz_smem_optin(k_hf_table, smem));
  nz_launch(k_hf_table, sh.n_frames, BOOK_THREADS, smem, s, sh, d_in, fr, lut, tables);
  NZ_LAUNCHED();
  const uint32_t nseg = (uint32_t)ncclz_ceil_div(sh.frame_symbols, sh.p0);
  if ((uint64_t)nseg * sh.n_frames >= NZ_HF_THREAD_SEGMENTS) {
    const uint32_t seg_words = dec_seg_words(sh.p0);
    const size_t seg_smem = sizeof(uint32_t) * (seg_words * (DEC_THREADS / 32) + DEC_ROOM_EXTRA);
    NZ_CUDA(nz_smem_optin(k_hf_decode_thread<Out>, seg_smem));
    nz_launch(k_hf_decode_thread<Out>, dim3((nseg + DEC_THREADS - 1) / DEC_THREADS, sh.n_frames), DEC_THREADS, seg_smem, s,
              sh, d_in, out, fr, lut, tables, seg_words);
    NZ_LAUNCHED();
    return NCCLZ_OK;
  }
  const uint32_t stage_words = dec_stage_words(sh.p0);
  /* every segment its own warp up to about 2,048 CTAs over the batch; beyond, warps take several */
  const uint32_t ctas = (nseg + DEC_WARPS - 1) / DEC_WARPS, cap = (2048 + sh.n_frames - 1) / sh.n_frames;
  const size_t room = sizeof(uint32_t) * 3 * stage_words * DEC_WARPS;
  NZ_CUDA(nz_smem_optin(k_hf_decode<Out>, room));
  nz_launch(k_hf_decode<Out>, dim3(ctas < cap ? ctas : cap, sh.n_frames), DEC_WARPS * 32, room, s, sh, d_in, out, fr,
            lut, tables, stage_words);
  NZ_LAUNCHED();
  return NCCLZ_OK;
}
#define NZ_HUFFMAN_DECODE_OF(Out)                                                                             \
  template ncclzStatus nz_huffman_decode(const NzShape &, const uint8_t *, const Out &, NzFrame *, uint32_t *, \
                                         uint32_t *, cudaStream_t)
NZ_HUFFMAN_DECODE_OF(NzCodesOut);
NZ_HUFFMAN_DECODE_OF(NzQsgdOut);
NZ_HUFFMAN_DECODE_OF(NzEbOut);
