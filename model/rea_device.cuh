/* The REA on the device: one thread block plans one frame (Algorithm 1, steps 1-4).
 *
 * The sample statistics are the integers the host adds up in model/sample.c, added here by all
 * threads of the block (shared-memory atomics: integer sums, so the result is the same bit for
 * bit), the bins' code lengths one bin a thread, then one control thread runs the shared decision
 * functions of rea_decide.h: predicted sizes, admissibility and the argmin. Include from CUDA
 * code only. */
#ifndef NCCLZ_REA_DEVICE_CUH
#define NCCLZ_REA_DEVICE_CUH

#include <cooperative_groups.h>
#include <cooperative_groups/memcpy_async.h>
#include <cuda/barrier>
#include <cub/warp/warp_reduce.cuh>

#include "rea_decide.h"

/* Threads of the planning block: a 64 KiB window is 512 sample blocks, one a thread, so that
 * the window is read once, into registers, and the range and histogram passes both work on the
 * registers (256 threads took two blocks each one after the other: range 6.5 us, histogram
 * 14.1 us, test_gpu_rea at 22d38d1). */
#define NCCLZ_REA_PLAN_THREADS 512
static_assert(NCCLZ_REA_SAMPLE_MAX_BYTES / 4 / NCCLZ_REA_BLOCK <= NCCLZ_REA_PLAN_THREADS,
              "a sample block a thread at most");
/* The histogram counts the NCCLZ_REA_NEAR_BINS fine bins around the sample mean (where quantized
 * symbols crowd) in 8-bit fields of NCCLZ_REA_NEAR_WORDS registers a thread, so that a warp's
 * lanes do not queue on the same shared counters (with 8 such bins the histogram of the ResNet
 * codes took 12.6 us, most of it in shared atomics on the bins further out); a thread sees at
 * most one block of NCCLZ_REA_BLOCK symbols, so a count fits 8 bits. */
#define NCCLZ_REA_NEAR_WORDS 4
#define NCCLZ_REA_NEAR_BINS (8 * NCCLZ_REA_NEAR_WORDS)
#define NCCLZ_REA_NEAR_FIRST (NCCLZ_REA_HIST_BINS / 2 - NCCLZ_REA_NEAR_BINS / 2)
static_assert(NCCLZ_REA_BLOCK < 256, "near counts fit 8 bits");

/* Phases of ncclz_rea_plan_block that a caller may time (clock64 at the end of each, thread 0). */
enum { NCCLZ_REA_CLK_START, NCCLZ_REA_CLK_RANGE, NCCLZ_REA_CLK_HIST, NCCLZ_REA_CLK_SUMS, NCCLZ_REA_CLK_DECIDE,
       NCCLZ_REA_CLK_COUNT };

/* What the device selector decides for one frame. */
typedef struct {
  int path;                    /* ncclzReaPath: FAST or PLANNED_RAW or CODED (no post-check here) */
  int coder;                   /* ncclzCoder planned */
  ncclzReaCandidates cand;     /* predicted sizes */
  double time_us[NCCLZ_CODER_COUNT];
} ncclzReaDeviceDecision;

/* The block's shared work space. */
typedef struct {
  /* The profile, copied in while the sample is read: the control thread's walk through its
   * curves is a chain of dependent loads, which from global memory took 5.8 us of the plan even
   * with the lines prefetched to L1 (test_gpu_rea at e3ec354). */
  alignas(16) ncclzProfile prof;
  ncclzReaHuffSample h;
  ncclzSampleStats st;
  int min_sym, max_sym;
  unsigned long long sum, count;  /* sum as two's complement: exact modulo 2^64 like the host's */
  ncclzHuffAlphabet alpha;
  long long first_index;
  ncclzReaHuffSums sums;
} ncclzReaBlockShared;

/* Sum over the warp, returned to lane 0 (all 32 lanes call it; the planner's callers use lane 0's). */
__device__ inline unsigned long long ncclz_rea_warp_sum(unsigned long long v) {
  typedef cub::WarpReduce<unsigned long long> WarpSum;
  __shared__ typename WarpSum::TempStorage ts[NCCLZ_REA_PLAN_THREADS / 32];
  v = WarpSum(ts[threadIdx.x / 32]).Sum(v);
  __syncwarp(); /* the warp's storage is reused by the next call */
  return v;
}

/* This thread's sample block: its start and length (0: none). The blocks of all pieces are
 * numbered together and dealt one a thread, so that every thread loads at once: a piece has
 * fewer blocks than the block has threads (16 pieces of 32 blocks for a 64 KiB window). */
__device__ inline uint64_t ncclz_rea_thread_block(const ncclzSamplePlan *p, uint64_t *at) {
  uint64_t start, len;
  ncclz_rea_sample_piece(p, 0, &start, &len);
  const uint64_t per_piece = (len + NCCLZ_REA_BLOCK - 1) / NCCLZ_REA_BLOCK; /* the same for every piece */
  const uint64_t j = threadIdx.x;
  if (j >= per_piece * p->count) return 0;
  const uint32_t piece = (uint32_t)(j / per_piece);
  const uint64_t b = (j - piece * per_piece) * NCCLZ_REA_BLOCK;
  ncclz_rea_sample_piece(p, piece, &start, &len);
  *at = start + b;
  return len - b < NCCLZ_REA_BLOCK ? len - b : NCCLZ_REA_BLOCK;
}

/* A sample block's symbols (len <= NCCLZ_REA_BLOCK) into registers, all loads issued before the
 * first is used (symbols read one at a time each waited for memory: the range pass took 20 us,
 * 2026-11-30). Vector loads when the block is whole and 16-byte aligned; symbols past len are
 * not read (0). */
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

/* Range, sum and FIXEDLEN width of the thread's block v (len symbols), added up over the block. */
__device__ inline void ncclz_rea_block_range(const int32_t (&v)[NCCLZ_REA_BLOCK], uint64_t len, ncclzReaBlockShared &s) {
  ncclzReaRange r;
  ncclz_rea_range_init(&r);
  uint32_t all = 0; /* as ncclz_rea_block_width, from the registers */
#pragma unroll
  for (int i = 0; i < NCCLZ_REA_BLOCK; i++)
    if ((uint64_t)i < len) {
      all |= ncclz_rea_zigzag(v[i]);
      ncclz_rea_range_add(&r, v[i]);
    }
  unsigned long long widths = len ? ncclz_rea_width_of(all) : 0, blocks = len != 0;
  /* One atomic per warp, not per thread: 256 threads on the same six shared words serialize.
   * Integer sums, min and max: the same results in any order. */
  widths = ncclz_rea_warp_sum(widths);
  blocks = ncclz_rea_warp_sum(blocks);
  unsigned long long sum = ncclz_rea_warp_sum((unsigned long long)r.sum), count = ncclz_rea_warp_sum(r.count);
  int mn = __reduce_min_sync(0xFFFFFFFFu, r.min_sym), mx = __reduce_max_sync(0xFFFFFFFFu, r.max_sym);
  if ((threadIdx.x & 31) == 0) {
    if (blocks) {
      atomicAdd((unsigned long long *)&s.st.width_sum, widths);
      atomicAdd((unsigned long long *)&s.st.blocks_sampled, blocks);
    }
    if (count) {
      atomicMin(&s.min_sym, mn);
      atomicMax(&s.max_sym, mx);
      atomicAdd(&s.sum, sum);
      atomicAdd(&s.count, count);
    }
  }
}

/* Adds one to near bin d (< NCCLZ_REA_NEAR_BINS): the word is picked by selects, not by an
 * index, which would put the array in local memory. */
__device__ inline void ncclz_rea_near_add(unsigned long long (&near)[NCCLZ_REA_NEAR_WORDS], uint32_t d) {
  const unsigned long long one = 1ull << (8 * (d % 8));
#pragma unroll
  for (uint32_t w = 0; w < NCCLZ_REA_NEAR_WORDS; w++) near[w] += d / 8 == w ? one : 0;
}

/* The histogram of the thread's block v (len symbols), added up over the block. */
__device__ inline void ncclz_rea_block_hist(const int32_t (&v)[NCCLZ_REA_BLOCK], uint64_t len, ncclzReaBlockShared &s) {
  long long lo = 2 * (long long)s.alpha.radius, hi = 0;
  unsigned long long escape_bits = 0; /* as ncclz_rea_hist_add: an integer sum, the host's bit for bit */
  unsigned long long near[NCCLZ_REA_NEAR_WORDS] = {};
  /* In registers: read through s, the compiler reloads them after every shared atomic (which may
   * alias them), a chain of shared loads per symbol. */
  const ncclzHuffAlphabet alpha = s.alpha;
  const int64_t first_index = s.first_index;
#pragma unroll
  for (int i = 0; i < NCCLZ_REA_BLOCK; i++) {
    if ((uint64_t)i >= len) continue;
    int64_t idx;
    uint32_t bin = ncclz_rea_hist_locate(v[i], alpha, first_index, &idx);
    lo = idx < lo ? idx : lo;
    hi = idx > hi ? idx : hi;
    const uint32_t d = bin - NCCLZ_REA_NEAR_FIRST;
    if (d < NCCLZ_REA_NEAR_BINS) ncclz_rea_near_add(near, d);
    else atomicAdd(&s.h.freq[bin], 1u);
    if (bin == NCCLZ_REA_HIST_TAIL) atomicOr((unsigned long long *)&s.h.tail_seen[idx / 64], 1ull << (idx % 64));
    if (bin == NCCLZ_REA_HIST_ESCAPE) escape_bits += ncclz_rea_escape_bits(v[i], alpha.centre);
  }
#pragma unroll
  for (int d = 0; d < NCCLZ_REA_NEAR_BINS; d++) { /* integer sums: the same counts in any order */
    const uint32_t c = __reduce_add_sync(0xFFFFFFFFu, (uint32_t)(near[d / 8] >> (8 * (d % 8))) & 0xFFu);
    if ((threadIdx.x & 31) == 0 && c) atomicAdd(&s.h.freq[NCCLZ_REA_NEAR_FIRST + d], c);
  }
  atomicMin((long long *)&s.h.lo_index, lo);
  atomicMax((long long *)&s.h.hi_index, hi);
  if (escape_bits) atomicAdd((unsigned long long *)&s.h.escape_bits, escape_bits);
}

/* Plans one frame of n symbols (side_bytes of side data) with the NCCLZ_REA_PLAN_THREADS threads
 * of the block; the decision is valid in thread 0. stage_cap: the staging capacity in bytes.
 * clk: NULL, or NCCLZ_REA_CLK_COUNT clock64 stamps of the phases (for a cost breakdown). */
__device__ inline void ncclz_rea_plan_block(const ncclzProfile *prof, const ncclzReaConfig *cfg, const int32_t *sym,
                                            uint64_t n, uint32_t dtype_bytes, uint32_t side_bytes,
                                            ncclzCoderParams cp, uint64_t stage_cap, ncclzReaBlockShared &s,
                                            ncclzReaDeviceDecision *out, unsigned long long *clk = nullptr) {
  if (clk && threadIdx.x == 0) clk[NCCLZ_REA_CLK_START] = clock64();
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
  namespace cg = cooperative_groups;
  const cg::thread_block block = cg::this_thread_block();
  static_assert(sizeof *prof % 16 == 0, "whole 16-byte copies");
  cg::memcpy_async(block, &s.prof, prof, cuda::aligned_size_t<16>(sizeof *prof));
  ncclzSamplePlan plan;
  ncclz_rea_sample_plan(n, cfg->sample_window_bytes, cfg->sample_pieces, &plan);
  uint64_t at = 0;
  const uint64_t len = ncclz_rea_thread_block(&plan, &at);
  int32_t v[NCCLZ_REA_BLOCK];
  ncclz_rea_block_load(sym + at, len, v); /* the thread's sample, read once */
  if (threadIdx.x == 0) {
    s.st = ncclzSampleStats();
    s.st.n_sampled = ncclz_rea_sample_symbols(&plan);
    s.min_sym = INT32_MAX;
    s.max_sym = INT32_MIN;
    s.sum = s.count = 0;
  }
  __syncthreads();
  ncclz_rea_block_range(v, len, s);
  __syncthreads();
  if (clk && threadIdx.x == 0) clk[NCCLZ_REA_CLK_RANGE] = clock64();
  if (threadIdx.x == 0) {
    ncclzReaRange r = {s.min_sym, s.max_sym, (int64_t)s.sum, s.count};
    s.alpha = ncclz_rea_alphabet(&r);
    s.first_index = ncclz_rea_hist_first_index(r.sum, r.count, s.alpha.centre, s.alpha.radius);
    s.h.lo_index = 2 * (int64_t)s.alpha.radius;
    s.h.hi_index = 0;
  }
  for (uint32_t b = threadIdx.x; b < NCCLZ_REA_HIST_TOTAL; b += blockDim.x) s.h.freq[b] = 0;
  for (uint32_t w = threadIdx.x; w < NCCLZ_REA_TAIL_WORDS; w += blockDim.x) s.h.tail_seen[w] = 0;
  if (threadIdx.x == 0) s.h.escape_bits = 0;
  __syncthreads();
  ncclz_rea_block_hist(v, len, s);
  __syncthreads();
  if (clk && threadIdx.x == 0) clk[NCCLZ_REA_CLK_HIST] = clock64();
  ncclzReaHuffSums mine = {0, 0, 0}; /* the statistics' integer sums, by all threads */
  const uint32_t total = (uint32_t)s.st.n_sampled;
  for (uint32_t b = threadIdx.x; b < NCCLZ_REA_HIST_TOTAL; b += blockDim.x) ncclz_rea_huff_sums_bin(&mine, &s.h, total, b);
  for (uint32_t k = threadIdx.x; k < NCCLZ_REA_TAIL_WORDS; k += blockDim.x) ncclz_rea_huff_sums_tail_word(&mine, &s.h, k);
  if (threadIdx.x == 0) s.sums.code_bits_q16 = 0, s.sums.used_bins = 0, s.sums.distinct_tail = 0;
  __syncthreads();
  mine.code_bits_q16 = ncclz_rea_warp_sum(mine.code_bits_q16); /* one atomic per warp */
  mine.used_bins = __reduce_add_sync(0xFFFFFFFFu, mine.used_bins);
  mine.distinct_tail = __reduce_add_sync(0xFFFFFFFFu, mine.distinct_tail);
  if ((threadIdx.x & 31) == 0) {
    if (mine.code_bits_q16) atomicAdd((unsigned long long *)&s.sums.code_bits_q16, (unsigned long long)mine.code_bits_q16);
    if (mine.used_bins) atomicAdd(&s.sums.used_bins, mine.used_bins);
    if (mine.distinct_tail) atomicAdd(&s.sums.distinct_tail, mine.distinct_tail);
  }
  cg::wait(block); /* the profile is in s.prof (and a barrier for the sums) */
  if (clk && threadIdx.x == 0) clk[NCCLZ_REA_CLK_SUMS] = clock64();
  if (threadIdx.x < NCCLZ_CODER_COUNT) { /* control lanes: the shared decision code */
    /* Every lane predicts the same sizes (the same instructions, no extra time), then lane k
     * evaluates coder k: one control thread evaluating them one after another took 5.5 us. */
    const unsigned lanes = (1u << NCCLZ_CODER_COUNT) - 1u;
    ncclzSampleStats st = s.st;
    ncclz_rea_hist_finish_sums(&s.h, &s.sums, &st);
    ncclzReaCandidates cand; /* in registers: read back from global memory, each read waited on L2 */
    ncclz_rea_predict(&st, n, dtype_bytes, side_bytes, &cp, &cand);
    cand.pipeline_frames = cfg->pipeline_frames; /* as ncclzReaPlan */
    ncclzReaVerdict verdict;
    double time_us;
    const int k = (int)threadIdx.x;
    ncclz_rea_evaluate(&s.prof, ncclz_rea_link(&s.prof, cfg->hint), cfg->data_class, &rules, &cand, k, &verdict, &time_us);
    ncclzReaDecision d;
    for (int c = 0; c < NCCLZ_CODER_COUNT; c++) {
      d.verdict[c] = (ncclzReaVerdict)__shfl_sync(lanes, (int)verdict, c);
      d.time_us[c] = __shfl_sync(lanes, time_us, c);
    }
    if (k == 0) {
      ncclz_rea_pick(&d);
      out->cand = cand;
      out->coder = d.coder;
      out->path = d.coder == NCCLZ_CODER_RAW ? NCCLZ_REA_PATH_PLANNED_RAW : NCCLZ_REA_PATH_CODED;
      for (int c = 0; c < NCCLZ_CODER_COUNT; c++) out->time_us[c] = d.time_us[c];
      if (clk) clk[NCCLZ_REA_CLK_DECIDE] = clock64();
    }
  }
}
#endif
