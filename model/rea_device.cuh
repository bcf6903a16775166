/* The REA on the device: one thread block plans one frame (Algorithm 1, steps 1-4).
 *
 * The sample statistics are the integers the host adds up in model/sample.c, added here by all
 * threads of the block (shared-memory atomics: integer sums, so the result is the same bit for
 * bit), then one control thread runs the shared decision functions of rea_decide.h: code lengths,
 * predicted sizes, admissibility and the argmin. Include from CUDA code only. */
#ifndef NCCLZ_REA_DEVICE_CUH
#define NCCLZ_REA_DEVICE_CUH

#include <cub/warp/warp_reduce.cuh>

#include "rea_decide.h"
#include "../codecs/cuda/huff_block.cuh"

/* Threads of the planning block: a 64 KiB window is 512 sample blocks, one a thread, so that
 * the range and histogram passes each wait on memory once (256 threads took two blocks each
 * one after the other: range 6.5 us, histogram 14.1 us, test_gpu_rea at 22d38d1). */
#define NCCLZ_REA_PLAN_THREADS 512
/* Sort keys: frequency << 9 | bin. A bin's frequency is at most the sample's symbol count
 * (NCCLZ_REA_SAMPLE_MAX_BYTES / 4 = 2^14), and there are fewer than 2^9 bins; unused bins are
 * all ones and rank last. */
#define NCCLZ_REA_KEY_BIN_BITS 9
#define NCCLZ_REA_FREQ_MAX (NCCLZ_REA_SAMPLE_MAX_BYTES / 4)
static_assert(NCCLZ_REA_HIST_TOTAL <= (1 << NCCLZ_REA_KEY_BIN_BITS), "bins fit the key");
static_assert(((unsigned long long)NCCLZ_REA_FREQ_MAX << NCCLZ_REA_KEY_BIN_BITS | NCCLZ_REA_HIST_TOTAL) < ~0u,
              "used keys stay below the unused key");
static_assert(NCCLZ_REA_HIST_TOTAL <= NCCLZ_REA_PLAN_THREADS, "one bin a thread");
/* Tree nodes (2m - 1 <= 2 * NCCLZ_REA_HIST_TOTAL) per thread in the block's depth computation. */
#define NCCLZ_REA_NODE_ITEMS ((2 * NCCLZ_REA_HIST_TOTAL + NCCLZ_REA_PLAN_THREADS - 1) / NCCLZ_REA_PLAN_THREADS)
/* The histogram counts the NCCLZ_REA_NEAR_BINS fine bins around the sample mean (where quantized
 * symbols crowd) in 8-bit fields of one register a thread, so that a warp's lanes do not queue
 * on the same shared counters; a thread sees fewer than 256 symbols of a window. */
#define NCCLZ_REA_NEAR_BINS 8
#define NCCLZ_REA_NEAR_FIRST (NCCLZ_REA_HIST_BINS / 2 - NCCLZ_REA_NEAR_BINS / 2)
static_assert(NCCLZ_REA_SAMPLE_MAX_BYTES / 4 / NCCLZ_REA_PLAN_THREADS < 256, "near counts fit 8 bits");

/* Phases of ncclz_rea_plan_block that a caller may time (clock64 at the end of each, thread 0). */
enum { NCCLZ_REA_CLK_START, NCCLZ_REA_CLK_RANGE, NCCLZ_REA_CLK_HIST, NCCLZ_REA_CLK_SORT1, NCCLZ_REA_CLK_TREE,
       NCCLZ_REA_CLK_LENGTHS, NCCLZ_REA_CLK_SUMS, NCCLZ_REA_CLK_DECIDE, NCCLZ_REA_CLK_COUNT };

/* What the device selector decides for one frame. */
typedef struct {
  int path;                    /* ncclzReaPath: FAST or PLANNED_RAW or CODED (no post-check here) */
  int coder;                   /* ncclzCoder planned */
  ncclzReaCandidates cand;     /* predicted sizes */
  double time_us[NCCLZ_CODER_COUNT];
} ncclzReaDeviceDecision;

/* The block's shared work space. */
typedef struct {
  ncclzReaHuffSample h;
  ncclzReaLenScratch w;
  ncclzSampleStats st;
  int min_sym, max_sym;
  unsigned long long sum, count;  /* sum as two's complement: exact modulo 2^64 like the host's */
  long long lo_index, hi_index;
  ncclzHuffAlphabet alpha;
  long long first_index;
  uint32_t key[NCCLZ_REA_HIST_TOTAL]; /* the bins' sort keys */
  uint32_t used;                   /* bins with a nonzero count */
  uint32_t overflowed;             /* a depth was clamped to NCCLZ_HUFF_MAX_LEN */
  ncclzReaHuffSums sums;
  uint32_t len_count[NCCLZ_HUFF_LEN_LIMIT + 1];
} ncclzReaBlockShared;

/* Sum over the warp, returned to lane 0 (all 32 lanes call it; the planner's callers use lane 0's). */
__device__ inline unsigned long long ncclz_rea_warp_sum(unsigned long long v) {
  typedef cub::WarpReduce<unsigned long long> WarpSum;
  __shared__ typename WarpSum::TempStorage ts[NCCLZ_REA_PLAN_THREADS / 32];
  v = WarpSum(ts[threadIdx.x / 32]).Sum(v);
  __syncwarp(); /* the warp's storage is reused by the next call */
  return v;
}

/* Visits every sampled position, a block of NCCLZ_REA_BLOCK symbols at a time, so that a thread
 * owns whole blocks. The blocks of all pieces are numbered together and dealt to the threads, so
 * that every thread loads at once: a piece has fewer blocks than the block has threads (16
 * pieces of 32 blocks for a 64 KiB window), and visiting pieces one after another left most
 * threads idle and paid the memory latency once per piece. */
template <typename F>
__device__ void ncclz_rea_for_sample_blocks(const ncclzSamplePlan *p, F f) {
  uint64_t start, len;
  ncclz_rea_sample_piece(p, 0, &start, &len);
  const uint64_t per_piece = (len + NCCLZ_REA_BLOCK - 1) / NCCLZ_REA_BLOCK; /* the same for every piece */
  for (uint64_t j = threadIdx.x; j < per_piece * p->count; j += blockDim.x) {
    const uint32_t piece = (uint32_t)(j / per_piece);
    const uint64_t b = (j - piece * per_piece) * NCCLZ_REA_BLOCK;
    ncclz_rea_sample_piece(p, piece, &start, &len);
    f(start + b, len - b < NCCLZ_REA_BLOCK ? len - b : NCCLZ_REA_BLOCK);
  }
}

/* A sample block's symbols (len <= NCCLZ_REA_BLOCK) into registers, all loads issued before the
 * first is used: a thread visits its blocks one after another, and symbols read one at a time
 * each waited for memory (the range pass took 20 us for two blocks a thread, 2026-11-30). Vector
 * loads when the block is whole and 16-byte aligned; symbols past len are not read (0). */
__device__ inline void ncclz_rea_block_load(const int32_t *p, uint64_t len, int32_t (&v)[NCCLZ_REA_BLOCK]) {
  static_assert(NCCLZ_REA_BLOCK % 4 == 0, "whole int4 loads");
  if (len == NCCLZ_REA_BLOCK && ((uintptr_t)p & 15u) == 0) {
#pragma unroll
    for (int i = 0; i < NCCLZ_REA_BLOCK / 4; i++) {
      const int4 t = __ldg((const int4 *)p + i);
      v[4 * i] = t.x, v[4 * i + 1] = t.y, v[4 * i + 2] = t.z, v[4 * i + 3] = t.w;
    }
  } else {
#pragma unroll
    for (int i = 0; i < NCCLZ_REA_BLOCK; i++) v[i] = (uint64_t)i < len ? __ldg(p + i) : 0;
  }
}

__device__ inline void ncclz_rea_block_range(const int32_t *sym, const ncclzSamplePlan *plan, ncclzReaBlockShared &s) {
  ncclzReaRange r;
  ncclz_rea_range_init(&r);
  unsigned long long widths = 0, blocks = 0;
  ncclz_rea_for_sample_blocks(plan, [&](uint64_t at, uint64_t len) {
    int32_t v[NCCLZ_REA_BLOCK];
    ncclz_rea_block_load(sym + at, len, v);
    uint32_t all = 0; /* as ncclz_rea_block_width, from the registers */
#pragma unroll
    for (int i = 0; i < NCCLZ_REA_BLOCK; i++)
      if ((uint64_t)i < len) {
        all |= ncclz_rea_zigzag(v[i]);
        ncclz_rea_range_add(&r, v[i]);
      }
    widths += ncclz_rea_width_of(all);
    blocks++;
  });
  /* One atomic per warp, not per thread: 256 threads on the same six shared words serialize.
   * Integer sums, min and max: the same results in any order. */
  widths = ncclz_rea_warp_sum(widths);
  blocks = ncclz_rea_warp_sum(blocks);
  unsigned long long sum = ncclz_rea_warp_sum((unsigned long long)r.sum), count = ncclz_rea_warp_sum(r.count);
  int mn = __reduce_min_sync(0xFFFFFFFFu, r.min_sym), mx = __reduce_max_sync(0xFFFFFFFFu, r.max_sym);
  if ((threadIdx.x & 31) == 0) {
    atomicAdd((unsigned long long *)&s.st.width_sum, widths);
    atomicAdd((unsigned long long *)&s.st.blocks_sampled, blocks);
    if (count) {
      atomicMin(&s.min_sym, mn);
      atomicMax(&s.max_sym, mx);
      atomicAdd(&s.sum, sum);
      atomicAdd(&s.count, count);
    }
  }
}

__device__ inline void ncclz_rea_block_hist(const int32_t *sym, const ncclzSamplePlan *plan, ncclzReaBlockShared &s) {
  long long lo = 2 * (long long)s.alpha.radius, hi = 0;
  unsigned long long escape_bits = 0; /* as ncclz_rea_hist_add: an integer sum, the host's bit for bit */
  unsigned long long near = 0;        /* NCCLZ_REA_NEAR_BINS counts of 8 bits */
  /* In registers: read through s, the compiler reloads them after every shared atomic (which may
   * alias them), a chain of shared loads per symbol. */
  const ncclzHuffAlphabet alpha = s.alpha;
  const int64_t first_index = s.first_index;
  ncclz_rea_for_sample_blocks(plan, [&](uint64_t at, uint64_t len) {
    int32_t v[NCCLZ_REA_BLOCK];
    ncclz_rea_block_load(sym + at, len, v);
#pragma unroll
    for (int i = 0; i < NCCLZ_REA_BLOCK; i++) {
      if ((uint64_t)i >= len) continue;
      int64_t idx;
      uint32_t bin = ncclz_rea_hist_locate(v[i], alpha, first_index, &idx);
      lo = idx < lo ? idx : lo;
      hi = idx > hi ? idx : hi;
      const uint32_t d = bin - NCCLZ_REA_NEAR_FIRST;
      if (d < NCCLZ_REA_NEAR_BINS) near += 1ull << (8 * d);
      else atomicAdd(&s.h.freq[bin], 1u);
      if (bin == NCCLZ_REA_HIST_TAIL) atomicOr((unsigned long long *)&s.h.tail_seen[idx / 64], 1ull << (idx % 64));
      if (bin == NCCLZ_REA_HIST_ESCAPE) escape_bits += ncclz_rea_escape_bits(v[i], alpha.centre);
    }
  });
#pragma unroll
  for (int d = 0; d < NCCLZ_REA_NEAR_BINS; d++) { /* integer sums: the same counts in any order */
    const uint32_t c = __reduce_add_sync(0xFFFFFFFFu, (uint32_t)(near >> (8 * d)) & 0xFFu);
    if ((threadIdx.x & 31) == 0 && c) atomicAdd(&s.h.freq[NCCLZ_REA_NEAR_FIRST + d], c);
  }
  atomicMin(&s.lo_index, lo);
  atomicMax(&s.hi_index, hi);
  if (escape_bits) atomicAdd((unsigned long long *)&s.h.escape_bits, escape_bits);
}

/* Step 1's order (frequency asc, bin asc) of the used bins by rank: each bin counts the keys
 * below its own (the used keys are distinct, the unused ones all ones and last), and its
 * (frequency << 32 | bin) lands in s.w.s64 at that rank, the layout of ncclz_huff_tree_depths.
 * Written out rather than a CUB block sort: for at most 259 keys the count over a broadcast
 * shared array is one short loop, where the radix sort's six passes of scans took 4.4 us of the
 * plan (test_gpu_rea at 22d38d1). */
__device__ inline void ncclz_rea_block_rank_sort(ncclzReaBlockShared &s, const uint32_t *freq) {
  const uint32_t i = threadIdx.x;
  __syncthreads(); /* s.key is complete */
  if (i < NCCLZ_REA_HIST_TOTAL && freq[i]) {
    const uint32_t mine = s.key[i];
    uint32_t rank = 0;
    for (uint32_t j = 0; j < NCCLZ_REA_HIST_TOTAL; j++) rank += s.key[j] < mine;
    s.w.s64[rank] = (unsigned long long)freq[i] << 32 | i;
  }
  if (i < NCCLZ_REA_HIST_TOTAL && i >= s.used) s.w.s64[i] = ~0ull;
  __syncthreads();
}

/* ncclz_huff_lengths (FORMAT.md steps 1-4) by the whole block, the same integers as the host's:
 * step 1's order by rank (the keys are distinct, so any correct sort gives the host's order);
 * the two-queue tree's links as the fixed point and the depths (codecs/cuda/huff_block.cuh);
 * step 3's counts, the length limit (the shared inline function, one thread) and step 4's
 * lengths, ranked in step 1's order (ncclz_huff_desc_rank). Lengths land in s.w.len. */
__device__ inline void ncclz_rea_block_lengths(ncclzReaBlockShared &s, unsigned long long *clk) {
  const uint32_t *freq = s.h.freq;
  if (threadIdx.x == 0) s.used = 0;
  __syncthreads();
  if (threadIdx.x < NCCLZ_REA_HIST_TOTAL) {
    const uint32_t i = threadIdx.x;
    const int used = freq[i] != 0;
    s.key[i] = used ? freq[i] << NCCLZ_REA_KEY_BIN_BITS | i : ~0u;
    s.w.len[i] = 0;
    if (used) atomicAdd(&s.used, 1u);
  }
  ncclz_rea_block_rank_sort(s, freq); /* step 1: (frequency asc, index asc) */
  if (clk && threadIdx.x == 0) clk[NCCLZ_REA_CLK_SORT1] = clock64();
  const uint32_t m = s.used;
  if (m <= 1) {
    if (m == 1 && threadIdx.x == 0) s.w.len[(uint32_t)s.w.s64[0]] = 1;
    if (clk && threadIdx.x == 0) clk[NCCLZ_REA_CLK_TREE] = clock64();
    __syncthreads();
    return;
  }
  uint64_t *key = (uint64_t *)s.w.s64;
  if (threadIdx.x <= NCCLZ_HUFF_LEN_LIMIT) s.len_count[threadIdx.x] = 0;
  if (threadIdx.x == 0) s.overflowed = 0;
  /* step 2 by the whole block (the fixed point of huff_codebook.h), its sums in the weights' room */
  uint32_t *sums = (uint32_t *)(key + m);
  ncclz_huff_block_parents<NCCLZ_REA_PLAN_THREADS>(key, m, sums, sums + m, s.w.s32);
  uint32_t *depth = (uint32_t *)(key + m); /* the weights' room: 2m-1 words fit in m keys */
  ncclz_huff_block_depths<NCCLZ_REA_PLAN_THREADS, NCCLZ_REA_NODE_ITEMS>(s.w.s32, depth, m);
  for (uint32_t i = threadIdx.x; i < m; i += NCCLZ_REA_PLAN_THREADS) { /* step 3: clamp and count */
    uint32_t d = depth[i];
    if (d > NCCLZ_HUFF_MAX_LEN) d = NCCLZ_HUFF_MAX_LEN, s.overflowed = 1;
    atomicAdd(&s.len_count[d], 1u);
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    ncclz_huff_limit(s.len_count, NCCLZ_HUFF_MAX_LEN, (int)s.overflowed);
    if (clk) clk[NCCLZ_REA_CLK_TREE] = clock64();
  }
  __syncthreads();
  for (uint32_t i = threadIdx.x; i < m; i += NCCLZ_REA_PLAN_THREADS) /* step 4: (frequency desc, index asc) */
    s.w.len[(uint32_t)key[i]] = (uint8_t)ncclz_huff_rank_length(s.len_count, ncclz_huff_desc_rank(key, m, i));
  __syncthreads();
}

/* Asks L1 for the profile's lines now, so that the control thread's reads at the end (a chain of
 * dependent loads through curves) hit the cache instead of waiting on memory one at a time. */
__device__ inline void ncclz_rea_prefetch_profile(const ncclzProfile *prof) {
  const char *p = (const char *)prof;
  for (size_t at = 128 * (size_t)threadIdx.x; at < sizeof *prof; at += 128 * (size_t)blockDim.x)
    asm volatile("prefetch.global.L1 [%0];" ::"l"(p + at));
}

/* Plans one frame of n symbols (side_bytes of side data) with the NCCLZ_REA_PLAN_THREADS threads
 * of the block; the decision is valid in thread 0. stage_cap: the staging capacity in bytes.
 * clk: NULL, or NCCLZ_REA_CLK_COUNT clock64 stamps of the phases (for a cost breakdown). */
__device__ inline void ncclz_rea_plan_block(const ncclzProfile *prof, const ncclzReaConfig *cfg, const int32_t *sym,
                                            uint64_t n, uint32_t dtype_bytes, uint32_t side_bytes,
                                            ncclzCoderParams cp, uint64_t stage_cap, ncclzReaBlockShared &s,
                                            ncclzReaDeviceDecision *out, unsigned long long *clk = nullptr) {
  if (clk && threadIdx.x == 0) clk[NCCLZ_REA_CLK_START] = clock64();
  ncclz_rea_prefetch_profile(prof);
  const ncclzReaRules rules = ncclz_rea_rules(cfg, stage_cap);
  const double raw_bytes = (double)n * (double)dtype_bytes;
  if (ncclz_rea_fast_path(&rules, raw_bytes)) { /* step 2 */
    if (threadIdx.x == 0) {
      out->path = NCCLZ_REA_PATH_FAST;
      out->coder = NCCLZ_CODER_RAW;
      out->cand.raw_frame_bytes = ncclz_rea_raw_frame_bytes(n, side_bytes);
    }
    return;
  }
  ncclzSamplePlan plan;
  ncclz_rea_sample_plan(n, cfg->sample_window_bytes, cfg->sample_pieces, &plan);
  if (threadIdx.x == 0) {
    s.st = ncclzSampleStats();
    s.min_sym = INT32_MAX;
    s.max_sym = INT32_MIN;
    s.sum = s.count = 0;
    for (uint32_t i = 0; i < plan.count; i++) {
      uint64_t start, len;
      ncclz_rea_sample_piece(&plan, i, &start, &len);
      s.st.n_sampled += len;
    }
  }
  __syncthreads();
  ncclz_rea_block_range(sym, &plan, s);
  __syncthreads();
  if (clk && threadIdx.x == 0) clk[NCCLZ_REA_CLK_RANGE] = clock64();
  if (threadIdx.x == 0) {
    ncclzReaRange r = {s.min_sym, s.max_sym, (int64_t)s.sum, s.count};
    s.alpha = ncclz_rea_alphabet(&r);
    s.first_index = ncclz_rea_hist_first_index(r.sum, r.count, s.alpha.centre, s.alpha.radius);
    s.lo_index = 2 * (long long)s.alpha.radius;
    s.hi_index = 0;
  }
  __syncthreads();
  for (uint32_t b = threadIdx.x; b < NCCLZ_REA_HIST_TOTAL; b += blockDim.x) s.h.freq[b] = 0;
  for (uint32_t w = threadIdx.x; w < sizeof s.h.tail_seen / sizeof s.h.tail_seen[0]; w += blockDim.x) s.h.tail_seen[w] = 0;
  if (threadIdx.x == 0) s.h.escape_bits = 0;
  __syncthreads();
  ncclz_rea_block_hist(sym, &plan, s);
  __syncthreads();
  if (clk && threadIdx.x == 0) clk[NCCLZ_REA_CLK_HIST] = clock64();
  ncclz_rea_block_lengths(s, clk);
  if (clk && threadIdx.x == 0) clk[NCCLZ_REA_CLK_LENGTHS] = clock64();
  ncclzReaHuffSums mine = {0, 0, 0}; /* the statistics' integer sums, by all threads */
  for (uint32_t b = threadIdx.x; b < NCCLZ_REA_HIST_TOTAL; b += blockDim.x) ncclz_rea_huff_sums_bin(&mine, &s.h, s.w.len, b);
  for (uint32_t k = threadIdx.x; k < NCCLZ_REA_TAIL_WORDS; k += blockDim.x) ncclz_rea_huff_sums_tail_word(&mine, &s.h, k);
  if (threadIdx.x == 0) s.sums.code_bits = 0, s.sums.used_bins = 0, s.sums.distinct_tail = 0;
  __syncthreads();
  mine.code_bits = ncclz_rea_warp_sum(mine.code_bits); /* one atomic per warp */
  mine.used_bins = __reduce_add_sync(0xFFFFFFFFu, mine.used_bins);
  mine.distinct_tail = __reduce_add_sync(0xFFFFFFFFu, mine.distinct_tail);
  if ((threadIdx.x & 31) == 0) {
    if (mine.code_bits) atomicAdd((unsigned long long *)&s.sums.code_bits, (unsigned long long)mine.code_bits);
    if (mine.used_bins) atomicAdd(&s.sums.used_bins, mine.used_bins);
    if (mine.distinct_tail) atomicAdd(&s.sums.distinct_tail, mine.distinct_tail);
  }
  __syncthreads();
  if (clk && threadIdx.x == 0) clk[NCCLZ_REA_CLK_SUMS] = clock64();
  if (threadIdx.x == 0) { /* the control thread: the shared decision code */
    s.h.lo_index = s.lo_index;
    s.h.hi_index = s.hi_index;
    ncclz_rea_hist_finish_sums(&s.h, &s.sums, &s.st);
    ncclz_rea_predict(&s.st, n, dtype_bytes, side_bytes, &cp, &out->cand);
    out->cand.pipeline_frames = cfg->pipeline_frames; /* as ncclzReaPlan */
    ncclzReaDecision d;
    ncclz_rea_arbitrate(prof, ncclz_rea_link(prof, cfg->hint), cfg->data_class, &rules, &out->cand, &d);
    out->coder = d.coder;
    out->path = d.coder == NCCLZ_CODER_RAW ? NCCLZ_REA_PATH_PLANNED_RAW : NCCLZ_REA_PATH_CODED;
    for (int c = 0; c < NCCLZ_CODER_COUNT; c++) out->time_us[c] = d.time_us[c];
    if (clk) clk[NCCLZ_REA_CLK_DECIDE] = clock64();
  }
}
#endif
