/* HUFFMAN on the GPU (FORMAT.md). Encode, per batch: sample (median, extremes) -> histogram -> code book
 * (one CTA per frame: the used symbols sorted, the reference's own two-queue merge and length
 * limiter from huff_codebook.h, the tree's depths and the step-4 lengths, ranked in the sort's
 * order, by the whole block from huff_block.cuh, a packed 16-way block scan for canonical codes)
 * -> one pass that codes a segment per warp into shared memory and places it by decoupled
 * look-back. The decoder is huffman_decode_cuda.cu. */
#include <cub/block/block_radix_sort.cuh>
#include <cub/block/block_reduce.cuh>
#include <cub/block/block_scan.cuh>

#include "decode_out.cuh"
#include "eb_quant.cuh"
#include "huff_block.cuh"
#include "huff_canon.cuh"

#define BOOK_NODE_ITEMS 17         /* 1024 * 17 >= 2 * 8194 - 1 tree nodes */
#define ENC_WARPS 8
#ifndef ENC_ILP
#define ENC_ILP 2 /* rounds of 32 symbols whose loads a warp issues together */
#endif

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
