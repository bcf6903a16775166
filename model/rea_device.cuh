/* The REA on the device: a cluster of thread blocks plans one frame (Algorithm 1, steps 1-4).
 *
 * The sample statistics are the integers the host adds up in model/sample.c, added here by every
 * thread of the cluster (shared-memory atomics, then the leader block adds the others' through
 * distributed shared memory: integer sums, so the result is the same bit for bit). The leader
 * then finds the chain of dominant bins (a block-wide max a link) and takes the bins' code
 * lengths one bin a thread, and NCCLZ_CODER_COUNT control lanes run the shared decision functions
 * of rea_decide.h, a coder each: predicted sizes, admissibility, T_c and the argmin. Include from
 * CUDA code only.
 *
 * Why a cluster: planning is a chain of short steps (read the sample, its range, the histogram
 * under the range's alphabet, the sums, the decision), each waiting on the one before. One block
 * of 512 threads per frame did the whole 64 KiB sample on one SM, at a quarter of its warps
 * (ncu: 11.5 cycles between a warp's instructions, instruction-bound): 34.9 us for a batch of 64
 * frames, 6.9% of their HUFFMAN encode (test_gpu_rea). A cluster spreads the sample
 * over ncclz_rea_plan_blocks(window) SMs, eight symbols a thread: 8 blocks for a 64 KiB window,
 * one for 8 KiB. The caller launches ncclz_rea_plan_blocks(cfg->sample_window_bytes) blocks a
 * cluster (cudaLaunchKernelEx), so that a smaller window takes fewer blocks, not idle ones. */
#ifndef NCCLZ_REA_DEVICE_CUH
#define NCCLZ_REA_DEVICE_CUH

#include <cooperative_groups.h>
#include <cub/block/block_reduce.cuh>
#include <cub/warp/warp_reduce.cuh>

#include "rea_decide.h"

/* Blocks a frame at most (a cluster: at most 8 is portable), threads a block, symbols a thread (a
 * quarter of a sample block: its four threads are neighbouring lanes). Clusters of 4 blocks of
 * 512 threads run frame 0's steps faster but the 64-frame batch slower (test_gpu_rea): their
 * larger blocks do not start in one wave. */
#define NCCLZ_REA_PLAN_CTAS 8
#define NCCLZ_REA_PLAN_THREADS 256
#define NCCLZ_REA_PART (NCCLZ_REA_BLOCK / 4)
/* Blocks an SM the planning kernel must fit (its __launch_bounds__ minimum): the clusters of a
 * 64-frame batch (512 blocks) then start in one wave. At 56 registers (4 blocks an SM) they take
 * two, about 40% slower (test_gpu_rea). */
#define NCCLZ_REA_PLAN_MIN_BLOCKS 5
static_assert(NCCLZ_REA_PLAN_CTAS * NCCLZ_REA_PLAN_THREADS * NCCLZ_REA_PART >= NCCLZ_REA_SAMPLE_MAX_BYTES / 4,
              "a cluster holds the largest window, a part a thread");
static_assert(NCCLZ_REA_HIST_TOTAL <= 2 * NCCLZ_REA_PLAN_THREADS, "two bins a thread at most");

/* Blocks a frame's cluster takes for a sample window: enough for its symbols, NCCLZ_REA_PART a
 * thread (from 1 for up to 8 KiB to NCCLZ_REA_PLAN_CTAS for 64 KiB). */
__host__ __device__ inline unsigned ncclz_rea_plan_blocks(uint32_t window_bytes) {
  const uint32_t per_block = NCCLZ_REA_PLAN_THREADS * NCCLZ_REA_PART * 4;
  const uint32_t b = (window_bytes + per_block - 1) / per_block;
  return b < 1 ? 1 : b > NCCLZ_REA_PLAN_CTAS ? NCCLZ_REA_PLAN_CTAS : b;
}
/* The histogram counts the NCCLZ_REA_NEAR_BINS fine bins around the sample mean (where quantized
 * symbols crowd) in 8-bit fields of one register a thread, so that a warp's lanes do not queue on
 * the same shared counters; a thread sees NCCLZ_REA_PART symbols, so a count fits. */
#define NCCLZ_REA_NEAR_BINS 8
#define NCCLZ_REA_NEAR_FIRST (NCCLZ_REA_HIST_BINS / 2 - NCCLZ_REA_NEAR_BINS / 2)
static_assert(NCCLZ_REA_PART < 256, "near counts fit 8 bits");

/* Phases of ncclz_rea_plan_cluster that a caller may time (clock64 at the end of each, thread 0
 * of the leader block). */
enum { NCCLZ_REA_CLK_START, NCCLZ_REA_CLK_RANGE, NCCLZ_REA_CLK_HIST, NCCLZ_REA_CLK_SUMS, NCCLZ_REA_CLK_DECIDE,
       NCCLZ_REA_CLK_COUNT };

/* What the device selector decides for one frame. */
typedef struct {
  int path;                    /* ncclzReaPath: FAST or PLANNED_RAW or CODED (no post-check here) */
  int coder;                   /* ncclzCoder planned */
  ncclzReaCandidates cand;     /* predicted sizes */
  double time_us[NCCLZ_CODER_COUNT];
  int verdict[NCCLZ_CODER_COUNT]; /* ncclzReaVerdict of every coder */
} ncclzReaDeviceDecision;

/* One block's part of the range pass. */
typedef struct {
  int min_sym, max_sym;
  unsigned long long sum, count;  /* sum as two's complement: exact modulo 2^64 like the host's */
  unsigned long long width_sum, blocks;
} ncclzReaRangePart;

/* A block's shared work space (the leader's also holds the frame's totals). */
typedef struct {
  ncclzReaRangePart part;
  ncclzReaHuffSample h;
  ncclzHuffAlphabet alpha;
  long long first_index;
  ncclzSampleStats st;
  ncclzReaDominance dom;
  int dom_more;
  ncclzReaHuffSums sums;
} ncclzReaBlockShared;

/* Sum over the warp, returned to lane 0 (all 32 lanes call it; the planner uses lane 0's). */
__device__ inline unsigned long long ncclz_rea_warp_sum(unsigned long long v) {
  typedef cub::WarpReduce<unsigned long long> WarpSum;
  __shared__ typename WarpSum::TempStorage ts[NCCLZ_REA_PLAN_THREADS / 32];
  v = WarpSum(ts[threadIdx.x / 32]).Sum(v);
  __syncwarp(); /* the warp's storage is reused by the next call */
  return v;
}

/* This thread's part of the sample: its start and length (0: none). The blocks of all pieces are
 * numbered together and dealt four threads a block, cluster thread g taking quarter g % 4 of
 * block g / 4, so that every thread loads at once. */
__device__ inline uint32_t ncclz_rea_thread_part(const ncclzSamplePlan *p, uint32_t g, uint64_t *at) {
  uint64_t start, len;
  ncclz_rea_sample_piece(p, 0, &start, &len);
  const uint64_t per_piece = (len + NCCLZ_REA_BLOCK - 1) / NCCLZ_REA_BLOCK; /* the same for every piece */
  const uint64_t j = g / 4;
  if (j >= per_piece * p->count) return 0;
  const uint32_t piece = (uint32_t)(j / per_piece);
  const uint64_t b = (j - piece * per_piece) * NCCLZ_REA_BLOCK + (g % 4) * NCCLZ_REA_PART;
  ncclz_rea_sample_piece(p, piece, &start, &len);
  if (b >= len) return 0;
  *at = start + b;
  return len - b < NCCLZ_REA_PART ? (uint32_t)(len - b) : NCCLZ_REA_PART;
}

/* A part's symbols into registers (0 past len), both int4 loads issued before either is used. */
__device__ inline void ncclz_rea_part_load(const int32_t *p, uint32_t len, int32_t (&v)[NCCLZ_REA_PART]) {
  static_assert(NCCLZ_REA_PART == 8, "two int4 loads");
  if (len == NCCLZ_REA_PART && ((uintptr_t)p & 15u) == 0) {
    const int4 a = __ldg((const int4 *)p), b = __ldg((const int4 *)p + 1);
    v[0] = a.x, v[1] = a.y, v[2] = a.z, v[3] = a.w, v[4] = b.x, v[5] = b.y, v[6] = b.z, v[7] = b.w;
  } else {
#pragma unroll
    for (uint32_t i = 0; i < NCCLZ_REA_PART; i++) v[i] = i < len ? __ldg(p + i) : 0;
  }
}

/* Range, sum and FIXEDLEN widths of the thread's part, added up over the block into s.part. The
 * four threads of a sample block OR their zigzags together; the first of them counts the block. */
__device__ inline void ncclz_rea_part_range(const int32_t (&v)[NCCLZ_REA_PART], uint32_t len, ncclzReaBlockShared &s) {
  ncclzReaRange r;
  ncclz_rea_range_init(&r);
  uint32_t all = 0; /* as ncclz_rea_block_width, from the registers */
#pragma unroll
  for (uint32_t i = 0; i < NCCLZ_REA_PART; i++)
    if (i < len) {
      all |= ncclz_rea_zigzag(v[i]);
      ncclz_rea_range_add(&r, v[i]);
    }
  all |= __shfl_xor_sync(0xFFFFFFFFu, all, 1);
  all |= __shfl_xor_sync(0xFFFFFFFFu, all, 2);
  const bool first = (threadIdx.x & 3) == 0 && len;
  unsigned long long widths = first ? ncclz_rea_width_of(all) : 0, blocks = first;
  /* One atomic per warp, not per thread. Integer sums, min and max: the same in any order. */
  widths = ncclz_rea_warp_sum(widths);
  blocks = ncclz_rea_warp_sum(blocks);
  unsigned long long sum = ncclz_rea_warp_sum((unsigned long long)r.sum), count = ncclz_rea_warp_sum(r.count);
  int mn = __reduce_min_sync(0xFFFFFFFFu, r.min_sym), mx = __reduce_max_sync(0xFFFFFFFFu, r.max_sym);
  if ((threadIdx.x & 31) == 0) {
    if (blocks) {
      atomicAdd(&s.part.width_sum, widths);
      atomicAdd(&s.part.blocks, blocks);
    }
    if (count) {
      atomicMin(&s.part.min_sym, mn);
      atomicMax(&s.part.max_sym, mx);
      atomicAdd(&s.part.sum, sum);
      atomicAdd(&s.part.count, count);
    }
  }
}

/* The histogram of the thread's part, added up over the block into s.h. */
__device__ inline void ncclz_rea_part_hist(const int32_t (&v)[NCCLZ_REA_PART], uint32_t len, ncclzReaBlockShared &s) {
  long long lo = 2 * (long long)s.alpha.radius, hi = 0;
  unsigned long long escape_bits = 0; /* as ncclz_rea_hist_add: an integer sum, the host's bit for bit */
  unsigned long long near = 0;        /* NCCLZ_REA_NEAR_BINS counts of 8 bits */
  /* In registers: read through s, the compiler reloads them after every shared atomic. */
  const ncclzHuffAlphabet alpha = s.alpha;
  const int64_t first_index = s.first_index;
#pragma unroll
  for (uint32_t i = 0; i < NCCLZ_REA_PART; i++) {
    if (i >= len) continue;
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
#pragma unroll
  for (int d = 0; d < NCCLZ_REA_NEAR_BINS; d++) { /* integer sums: the same counts in any order */
    const uint32_t c = __reduce_add_sync(0xFFFFFFFFu, (uint32_t)(near >> (8 * d)) & 0xFFu);
    if ((threadIdx.x & 31) == 0 && c) atomicAdd(&s.h.freq[NCCLZ_REA_NEAR_FIRST + d], c);
  }
  if (len) {
    atomicMin((long long *)&s.h.lo_index, lo);
    atomicMax((long long *)&s.h.hi_index, hi);
  }
  if (escape_bits) atomicAdd((unsigned long long *)&s.h.escape_bits, escape_bits);
}

/* The frame's range from the blocks' parts (every block reads them all, so that each gets the
 * same alphabet), and, in the leader, the FIXEDLEN sums. Thread 0 of each block. */
__device__ inline void ncclz_rea_cluster_alphabet(cooperative_groups::cluster_group &cluster, ncclzReaBlockShared &s) {
  ncclzReaRange r = {INT32_MAX, INT32_MIN, 0, 0};
  unsigned long long sum = 0, widths = 0, blocks = 0;
  for (uint32_t k = 0; k < cluster.num_blocks(); k++) {
    const ncclzReaRangePart *q = cluster.map_shared_rank(&s.part, k);
    r.min_sym = q->min_sym < r.min_sym ? q->min_sym : r.min_sym;
    r.max_sym = q->max_sym > r.max_sym ? q->max_sym : r.max_sym;
    sum += q->sum, r.count += q->count, widths += q->width_sum, blocks += q->blocks;
  }
  r.sum = (int64_t)sum;
  s.alpha = ncclz_rea_alphabet(&r);
  s.first_index = ncclz_rea_hist_first_index(r.sum, r.count, s.alpha.centre, s.alpha.radius);
  s.h.lo_index = 2 * (int64_t)s.alpha.radius;
  s.h.hi_index = 0;
  s.st.width_sum = widths;
  s.st.blocks_sampled = blocks;
}

/* The leader adds the other blocks' histograms to its own, a bin (and a tail_seen word) a thread.
 * Not the others pushing theirs with distributed shared memory atomics: that saves the leader a
 * barrier, but at 8 blocks a frame the device then disagrees with the host on wide-alphabet frames
 * and racecheck reports hazards. */
__device__ inline void ncclz_rea_cluster_hist(cooperative_groups::cluster_group &cluster, ncclzReaBlockShared &s) {
  for (uint32_t b = threadIdx.x; b < NCCLZ_REA_HIST_TOTAL; b += blockDim.x) {
    uint32_t f = s.h.freq[b];
    for (uint32_t k = 1; k < cluster.num_blocks(); k++) f += cluster.map_shared_rank(&s.h, k)->freq[b];
    s.h.freq[b] = f;
  }
  for (uint32_t w = threadIdx.x; w < NCCLZ_REA_TAIL_WORDS; w += blockDim.x) {
    uint64_t t = s.h.tail_seen[w];
    for (uint32_t k = 1; k < cluster.num_blocks(); k++) t |= cluster.map_shared_rank(&s.h, k)->tail_seen[w];
    s.h.tail_seen[w] = t;
  }
  if (threadIdx.x == 0)
    for (uint32_t k = 1; k < cluster.num_blocks(); k++) {
      const ncclzReaHuffSample *q = cluster.map_shared_rank(&s.h, k);
      s.h.lo_index = q->lo_index < s.h.lo_index ? q->lo_index : s.h.lo_index;
      s.h.hi_index = q->hi_index > s.h.hi_index ? q->hi_index : s.h.hi_index;
      s.h.escape_bits += q->escape_bits;
    }
}

/* The leader's dominance chain (ncclz_rea_dominance_step), each link's largest bin by a
 * block-wide max of (frequency << 9 | bin); usually none or one link. */
static_assert(NCCLZ_REA_HIST_TOTAL <= 512 && (NCCLZ_REA_SAMPLE_MAX_BYTES / 4) < (1u << 23), "keys fit 32 bits");
__device__ inline void ncclz_rea_block_dominance(ncclzReaBlockShared &s) {
  typedef cub::BlockReduce<uint32_t, NCCLZ_REA_PLAN_THREADS> BlockMax;
  __shared__ typename BlockMax::TempStorage ts;
  if (threadIdx.x == 0) ncclz_rea_dominance_init(&s.dom, (uint32_t)s.st.n_sampled);
  __syncthreads();
  for (;;) {
    uint32_t key = 0;
    for (uint32_t b = threadIdx.x; b < NCCLZ_REA_HIST_TOTAL; b += blockDim.x) {
      const uint32_t k = s.h.freq[b] << 9 | b;
      if (!ncclz_rea_dominance_depth(&s.dom, b) && s.h.freq[b] && k > key) key = k;
    }
    key = BlockMax(ts).Reduce(key, cuda::maximum<uint32_t>()); /* valid in thread 0 */
    if (threadIdx.x == 0) s.dom_more = ncclz_rea_dominance_step(&s.dom, key >> 9, key & 511u);
    __syncthreads(); /* the link is in, and ts may be used again */
    if (!s.dom_more) return;
  }
}

/* The leader's per-bin sums (code bits, used bins, distinct tail values) over its merged
 * histogram, by all its threads. */
__device__ inline void ncclz_rea_block_sums(ncclzReaBlockShared &s) {
  ncclz_rea_block_dominance(s);
  ncclzReaHuffSums mine = {0, 0, 0};
  for (uint32_t b = threadIdx.x; b < NCCLZ_REA_HIST_TOTAL; b += blockDim.x) ncclz_rea_huff_sums_bin(&mine, &s.h, &s.dom, b);
  for (uint32_t k = threadIdx.x; k < NCCLZ_REA_TAIL_WORDS; k += blockDim.x) ncclz_rea_huff_sums_tail_word(&mine, &s.h, k);
  mine.code_bits_q16 = ncclz_rea_warp_sum(mine.code_bits_q16); /* one atomic per warp */
  mine.used_bins = __reduce_add_sync(0xFFFFFFFFu, mine.used_bins);
  mine.distinct_tail = __reduce_add_sync(0xFFFFFFFFu, mine.distinct_tail);
  if ((threadIdx.x & 31) == 0) {
    if (mine.code_bits_q16) atomicAdd((unsigned long long *)&s.sums.code_bits_q16, (unsigned long long)mine.code_bits_q16);
    if (mine.used_bins) atomicAdd(&s.sums.used_bins, mine.used_bins);
    if (mine.distinct_tail) atomicAdd(&s.sums.distinct_tail, mine.distinct_tail);
  }
}

/* The decision, by lanes 0..NCCLZ_CODER_COUNT-1 of the leader: every lane predicts the same
 * sizes (the same instructions, no extra time), lane k evaluates coder k, lane 0 picks. */
__device__ inline void ncclz_rea_decide_lanes(const ncclzProfile *prof, const ncclzReaConfig *cfg, const ncclzReaBatch *batch,
                                              uint64_t n, uint32_t dtype_bytes, uint32_t side_bytes, ncclzCoderParams cp,
                                              ncclzReaBlockShared &s, ncclzReaDeviceDecision *out) {
  const unsigned lanes = (1u << NCCLZ_CODER_COUNT) - 1u;
  const int k = (int)threadIdx.x;
  ncclzSampleStats st = s.st;
  ncclz_rea_hist_finish_sums(&s.h, &s.sums, &st);
  ncclzReaCandidates cand; /* in registers: read back from global memory, each read waited on L2 */
  ncclz_rea_predict(&st, n, dtype_bytes, side_bytes, &cp, &cand);
  cand.pipeline_frames = cfg->pipeline_frames; /* as ncclzReaPlan */
  /* the batch's codec part, unless this frame is of another size (a batch's last) */
  const double codec_us = cand.frame_raw_bytes == batch->frame_raw_bytes
                              ? batch->codec_us[k]
                              : ncclz_rea_codec_us(prof, cfg->hint, k, cfg->data_class, cand.frame_raw_bytes,
                                                   cand.pipeline_frames);
  ncclzReaVerdict verdict;
  double time_us;
  ncclz_rea_evaluate_with(batch->link, &batch->rules, &cand, k, codec_us, &verdict, &time_us);
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
    for (int c = 0; c < NCCLZ_CODER_COUNT; c++) out->time_us[c] = d.time_us[c], out->verdict[c] = (int)d.verdict[c];
  }
}

/* Plans one frame of n symbols (side_bytes of side data); called by every thread of a cluster of
 * ncclz_rea_plan_blocks(cfg->sample_window_bytes) blocks of NCCLZ_REA_PLAN_THREADS (the kernel
 * declares __launch_bounds__(NCCLZ_REA_PLAN_THREADS, NCCLZ_REA_PLAN_MIN_BLOCKS); its launch sets
 * the cluster size).
 * batch: ncclz_rea_batch_init of the config, the staging capacity and the batch's frame size.
 * The decision lands in *out (written by the leader block). clk: NULL, or NCCLZ_REA_CLK_COUNT
 * clock64 stamps of the leader's phases (for a cost breakdown). */
__device__ inline void ncclz_rea_plan_cluster(const ncclzProfile *prof, const ncclzReaConfig *cfg, const ncclzReaBatch *batch,
                                              const int32_t *sym, uint64_t n, uint32_t dtype_bytes, uint32_t side_bytes,
                                              ncclzCoderParams cp, ncclzReaBlockShared &s, ncclzReaDeviceDecision *out,
                                              unsigned long long *clk = nullptr) {
  namespace cg = cooperative_groups;
  cg::cluster_group cluster = cg::this_cluster();
  const uint32_t rank = cluster.block_rank();
  const bool stamp = clk && rank == 0 && threadIdx.x == 0;
  if (stamp) clk[NCCLZ_REA_CLK_START] = clock64();
  const double raw_bytes = (double)n * (double)dtype_bytes;
  if (ncclz_rea_fast_path(&batch->rules, raw_bytes)) { /* step 2: the same in every block */
    if (rank == 0 && threadIdx.x == 0) {
      out->path = NCCLZ_REA_PATH_FAST;
      out->coder = NCCLZ_CODER_RAW;
      out->cand.raw_frame_bytes = ncclz_rea_raw_frame_bytes(n, side_bytes);
    }
    return;
  }
  ncclzSamplePlan plan;
  ncclz_rea_sample_plan(n, cfg->sample_window_bytes, cfg->sample_pieces, &plan);
  uint64_t at = 0;
  const uint32_t len = ncclz_rea_thread_part(&plan, rank * NCCLZ_REA_PLAN_THREADS + threadIdx.x, &at);
  int32_t v[NCCLZ_REA_PART];
  ncclz_rea_part_load(sym + at, len, v); /* the thread's sample, read once */
  if (threadIdx.x == 0) {
    s.part.min_sym = INT32_MAX, s.part.max_sym = INT32_MIN;
    s.part.sum = s.part.count = s.part.width_sum = s.part.blocks = 0;
    s.h.escape_bits = 0;
    s.st = ncclzSampleStats();
    s.st.n_sampled = ncclz_rea_sample_symbols(&plan);
    s.sums.code_bits_q16 = 0, s.sums.used_bins = 0, s.sums.distinct_tail = 0;
  }
  for (uint32_t b = threadIdx.x; b < NCCLZ_REA_HIST_TOTAL; b += blockDim.x) s.h.freq[b] = 0;
  for (uint32_t w = threadIdx.x; w < NCCLZ_REA_TAIL_WORDS; w += blockDim.x) s.h.tail_seen[w] = 0;
  __syncthreads();
  ncclz_rea_part_range(v, len, s);
  cluster.sync(); /* every block's part is in */
  if (threadIdx.x == 0) ncclz_rea_cluster_alphabet(cluster, s);
  __syncthreads();
  if (stamp) clk[NCCLZ_REA_CLK_RANGE] = clock64();
  ncclz_rea_part_hist(v, len, s);
  cluster.sync(); /* every block's histogram is in */
  if (rank == 0) ncclz_rea_cluster_hist(cluster, s);
  cluster.sync(); /* the others' shared memory stays until the leader has read it */
  if (rank != 0) return;
  if (stamp) clk[NCCLZ_REA_CLK_HIST] = clock64();
  ncclz_rea_block_sums(s);
  __syncthreads();
  if (stamp) clk[NCCLZ_REA_CLK_SUMS] = clock64();
  if (threadIdx.x < NCCLZ_CODER_COUNT) ncclz_rea_decide_lanes(prof, cfg, batch, n, dtype_bytes, side_bytes, cp, s, out);
  if (stamp) clk[NCCLZ_REA_CLK_DECIDE] = clock64();
}
#endif
