/* Internal pieces shared by the CUDA codec files: error plumbing, the per-frame state kept in the
 * workspace, the workspace layout, payload-check accumulation and the decoupled look-back that
 * turns per-CTA sizes into output offsets in a single pass. */
#ifndef NCCLZ_CUDA_INTERNAL_CUH
#define NCCLZ_CUDA_INTERNAL_CUH

#include <cub/block/block_reduce.cuh>
#include <cub/warp/warp_scan.cuh>
#include <cuda/atomic>
#include <cuda_runtime.h>

#include "../hd_util.h"
#include "../huff_codebook.h"
#include "../philox.h"
#include "../qsgd_code.h"
#include "ncclz/codecs_cuda.h"

#define NZ_FULL 0xFFFFFFFFu

/* Programmatic dependent launch (Hopper): every kernel here is launched through nz_launch, which
 * lets the stream start it while the kernel before it finishes, and begins with nz_pdl_enter,
 * which waits for that kernel's completion and memory before anything else (so that waiting on
 * the one before also covers every earlier one), then lets the next kernel be launched. A call's
 * chain of small kernels then pays the launch latency once rather than at every kernel
 * (bench_latency with NCCLZ_CUDA_PDL=0 measures without). */
static __device__ __forceinline__ void nz_pdl_enter() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
  asm volatile("griddepcontrol.launch_dependents;" :::);
#endif
}

/* Whether launches use programmatic dependent launch: on unless NCCLZ_CUDA_PDL=0 (read once). */
bool nz_pdl_on();

/* kernel<<<grid, block, smem, stream>>>(args...), as a programmatic dependent launch when pdl and
 * nz_pdl_on(), with a shared-memory carveout (percent) as a launch attribute when carveout >= 0
 * (so that a CUDA graph's node carries it too); launch errors land in cudaGetLastError as with
 * <<<>>>. */
template <typename... K, typename... A>
static inline void nz_launch_opt(bool pdl, int carveout, void (*kernel)(K...), dim3 grid, dim3 block, size_t smem,
                                 cudaStream_t s, A &&...args) {
  cudaLaunchAttribute attr[2];
  unsigned na = 0;
  if (pdl && nz_pdl_on()) {
    attr[na].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr[na++].val.programmaticStreamSerializationAllowed = 1;
  }
  if (carveout >= 0) {
    attr[na].id = cudaLaunchAttributePreferredSharedMemoryCarveout;
    attr[na++].val.sharedMemCarveout = (unsigned)carveout;
  }
  cudaLaunchConfig_t c = {};
  c.gridDim = grid, c.blockDim = block, c.dynamicSmemBytes = smem, c.stream = s;
  c.attrs = attr, c.numAttrs = na;
  (void)cudaLaunchKernelEx(&c, kernel, static_cast<A &&>(args)...);
}

/* The default: a programmatic dependent launch (when nz_pdl_on()). */
template <typename... K, typename... A>
static inline void nz_launch(void (*kernel)(K...), dim3 grid, dim3 block, size_t smem, cudaStream_t s, A &&...args) {
  nz_launch_opt(true, -1, kernel, grid, block, smem, s, static_cast<A &&>(args)...);
}

/* Returns NCCLZ_ERR_CUDA with the call's text on failure (host side). */
#define NZ_CUDA(call)                                                                           \
  do {                                                                                          \
    cudaError_t e_ = (call);                                                                    \
    if (e_ != cudaSuccess)                                                                      \
      return ncclzSetError(NCCLZ_ERR_CUDA, "%s: %s (%s:%d)", #call, cudaGetErrorString(e_),    \
                           __FILE__, __LINE__);                                                 \
  } while (0)
#define NZ_LAUNCHED() NZ_CUDA(cudaGetLastError())

/* A kernel's dynamic shared memory opt-in (cudaFuncAttributeMaxDynamicSharedMemorySize), and its
 * carveout when carveout >= 0, set on the current device only the first time and when a call
 * needs more: each cudaFuncSetAttribute is a host round trip into the driver (0.28 us on the H200
 * host), which a small frame's call paid for every kernel that takes over 48 KiB. Attributes are
 * per device (the executor drives several from one process). Host side; thread-safe. */
cudaError_t nz_smem_optin_ptr(const void *kernel, size_t bytes, int carveout);
template <typename... K>
static inline cudaError_t nz_smem_optin(void (*kernel)(K...), size_t bytes, int carveout = -1) {
  return nz_smem_optin_ptr((const void *)kernel, bytes, carveout);
}

/* The current device's SM count (host side), what the kernels size one wave of CTAs by. */
static inline ncclzStatus nz_sm_count(int *nsm) {
  int dev = 0;
  NZ_CUDA(cudaGetDevice(&dev));
  NZ_CUDA(cudaDeviceGetAttribute(nsm, cudaDevAttrMultiProcessorCount, dev));
  return NCCLZ_OK;
}

/* A grid-stride kernel's grid of `blocks` CTAs, at most 16 CTAs an SM of 132; nz_grid_for: over n
 * items of 256-thread CTAs. */
static inline unsigned nz_grid_cap(size_t blocks) { return (unsigned)(blocks < 132 * 16 ? blocks : 132 * 16); }
static inline unsigned nz_grid_for(size_t n) { return nz_grid_cap(n / 256 + 1); }

/* Reasons stored in bits 8.. of a decode status word. */
enum {
  NZ_R_OK = 0, NZ_R_SHORT, NZ_R_MAGIC, NZ_R_VERSION, NZ_R_HCHECK, NZ_R_ENUM, NZ_R_RAWBYTES, NZ_R_SIDE,
  NZ_R_PAYLOAD_AVAIL, NZ_R_PCHECK, NZ_R_COUNT, NZ_R_PARAM, NZ_R_CODER_MASK, NZ_R_RAW_SIZE,
  NZ_R_FL_SIZE, NZ_R_FL_OFFSET, NZ_R_HF_TABLE, NZ_R_HF_KRAFT, NZ_R_HF_OFFSETS, NZ_R_HF_CODE,
  NZ_R_HF_SEGEND, NZ_R_HF_PAD, NZ_R_SIDE_SIZE, NZ_R_HF_ESCAPE, NZ_R_FL_PAD, NZ_R_COUNT_OF
};
#define NZ_CORRUPT(r) ((uint32_t)NCCLZ_ERR_CORRUPT | (uint32_t)(r) << 8)

/* Per-frame state in the workspace (encode and decode). */
struct NzFrame {
  uint32_t check;        /* sum of w_i * (2i + 1) over the payload words seen so far */
  uint32_t coded_bytes;  /* encode: bytes of coded symbols (after the side data) */
  int32_t vmin, vmax;    /* HUFFMAN encode: trimmed extremes of the sampled non-fill symbols */
  int32_t centre;        /* HUFFMAN alphabet */
  uint32_t radius;
  uint32_t m, used;      /* HUFFMAN encode: the length table's span and its codes (FORMAT.md m, u) */
  uint32_t status;       /* decode: 0 or NZ_CORRUPT(reason) */
  uint32_t n;            /* symbols of the frame */
  uint32_t payload_bytes, side_bytes, payload_check;
  uint32_t coder, p0;    /* decode: from the header */
  uint32_t fast_bits;    /* HUFFMAN decode */
  uint64_t src;          /* decode: byte offset of the frame in the input */
  uint32_t side_check;   /* encode: the check of the side data alone (a RAW fallback restarts from it) */
  uint32_t fallback;     /* encode: 1 when the frame is rewritten as RAW (ncclzCudaBatch.fallback_bytes) */
};

/* Everything a kernel needs to know about the batch, passed by value. */
struct NzShape {
  uint64_t n_symbols;
  uint32_t n_frames, frame_symbols;
  uint32_t p0;            /* T or S */
  uint32_t side_per_frame;/* QSGD scales per full frame (0 without side data) */
  uint32_t bucket;
  uint32_t units_per_frame; /* CTAs (look-back tiles) per full frame */
  uint32_t mixed;         /* encode: frames of several coders (NzFrame.coder); a coder's kernels skip the others' */
  /* encode: whether a coder's kernels take frame f (every frame unless the batch is mixed) */
  __device__ bool takes(const NzFrame *fr, uint32_t f, uint32_t coder) const { return !mixed || fr[f].coder == coder; }
  __host__ __device__ uint32_t frame_n(uint32_t f) const {
    uint64_t start = (uint64_t)f * frame_symbols;
    uint64_t left = n_symbols - start;
    return left < frame_symbols ? (uint32_t)left : frame_symbols;
  }
  __host__ __device__ uint32_t side_words(uint32_t f) const {
    if (!side_per_frame) return 0;
    uint32_t n = frame_n(f);
    return n / bucket + (n % bucket != 0);
  }
};

/* The 64-byte header with the per-batch fields already set (host-built by the reference packer). */
struct NzHeaderTemplate {
  uint8_t b[64];
};
/* One a coder: the finalize of a mixed batch (or of frames that fell back to RAW) takes each
 * frame's own. */
struct NzHeaderTemplates {
  NzHeaderTemplate coder[NCCLZ_CODER_COUNT];
};

/* Workspace layout: all offsets 256-byte aligned. */
struct NzLayout {
  size_t frames, lookback, hist, table, lut, one, total;
};

/* A one-kernel call (ncclzCudaBatch.ws_zeroed): what its CTAs share, zero when the call starts
 * and zero again once its last CTA is done (that CTA resets it), so that no kernel has to clear
 * it first. Its look-back words follow it in the workspace (NzLayout.one). */
struct NzOneState {
  uint32_t check;       /* payload check of the words written so far */
  uint32_t done;        /* CTAs finished */
  uint32_t coded_bytes; /* encode: bytes of coded symbols, from the frame's last unit */
  uint32_t status;      /* decode: the first coder failure (NZ_CORRUPT) */
};
#define NZ_ONE_LB_OFFSET 256 /* bytes from the state to its look-back words */
#define NZ_ONE_MAX_UNITS 128u /* look-back units of a one-kernel encode: frames up to 256 Ki symbols */
NzLayout nz_layout(const ncclzCudaBatch *b, int decode, uint32_t units_total);


/* Word i of the payload contributes w * (2i + 1) to the payload check. */
static __device__ inline uint32_t nz_chk(uint32_t w, uint32_t i) { return w * (2u * i + 1u); }

/* Inclusive prefix sum over the 32 lanes of a full warp (all lanes call it; mod 2^32), CUB's
 * shuffle scan: the offsets in the HUFFMAN and FIXEDLEN encoders. */
static __device__ __forceinline__ uint32_t nz_warp_inclusive_sum(uint32_t v) {
  typedef cub::WarpScan<uint32_t> Scan;
  __shared__ typename Scan::TempStorage ts[32]; /* one per warp of a block of up to 1,024 threads */
  Scan(ts[threadIdx.x / 32]).InclusiveSum(v, v);
  return v;
}

/* A warp's sum of a per-lane check, added once to the frame's accumulator: no CTA barrier (the
 * encoders' warps finish at their own pace). All 32 lanes call it. */
static __device__ __forceinline__ void nz_add_check_warp(uint32_t v, uint32_t *dst) {
  v = __reduce_add_sync(NZ_FULL, v);
  if ((threadIdx.x & 31) == 0 && v) atomicAdd(dst, v);
}

/* Block-wide sum of a per-thread check (mod 2^32: any order gives the same), added once to the
 * frame's accumulator. All THREADS threads call it; it may be called again after it returns. */
template <int THREADS>
static __device__ inline void nz_add_check(uint32_t v, uint32_t *dst) {
  typedef cub::BlockReduce<uint32_t, THREADS> Reduce;
  __shared__ typename Reduce::TempStorage ts;
  uint32_t s = Reduce(ts).Sum(v);
  if (threadIdx.x == 0 && s) atomicAdd(dst, s);
  __syncthreads(); /* ts is reused by the next call */
}

/* Decoupled look-back (single-pass prefix over the CTAs of one frame), in two halves so that a
 * CTA can publish its aggregate as soon as it knows it and look back later: successors then wait
 * less. nz_lookback_publish: one thread. nz_lookback_wait: the whole of warp 0; sums
 * predecessors' values until it finds one with an inclusive prefix, then publishes its own
 * inclusive prefix; returns the exclusive prefix. A unit is its CTA's block index, as in CUB's
 * single-pass scans: blocks start in index order, so every predecessor is running or done and
 * the spin terminates. */
#define NZ_LB_AGG (1ull << 32)
#define NZ_LB_INC (2ull << 32)
static __device__ inline void nz_lb_store(unsigned long long *st, uint32_t unit, unsigned long long v) {
  cuda::atomic_ref<unsigned long long, cuda::thread_scope_device>(st[unit]).store(v, cuda::memory_order_release);
}
static __device__ inline void nz_lookback_publish(unsigned long long *st, uint32_t unit, uint32_t first, uint32_t agg) {
  nz_lb_store(st, unit, (unit == first ? NZ_LB_INC : NZ_LB_AGG) | agg);
}
static __device__ inline uint32_t nz_lookback_wait(unsigned long long *st, uint32_t unit, uint32_t first,
                                                   uint32_t agg) {
  if (unit == first) return 0;
  int lane = threadIdx.x & 31;
  uint32_t excl = 0;
  int64_t base = unit;
  for (;;) {
    int64_t idx = base - 1 - lane;
    unsigned long long v;
    do {
      v = idx >= (int64_t)first
              ? cuda::atomic_ref<unsigned long long, cuda::thread_scope_device>(st[idx]).load(cuda::memory_order_acquire)
              : NZ_LB_INC; /* before the frame: an inclusive zero */
    } while (__any_sync(NZ_FULL, (v >> 32) == 0));
    unsigned inc = __ballot_sync(NZ_FULL, (v >> 32) == 2);
    int stop = inc ? __ffs(inc) - 1 : 31;
    excl += __reduce_add_sync(NZ_FULL, lane <= stop ? (uint32_t)v : 0u);
    if (inc) break;
    base -= 32;
  }
  if (lane == 0) nz_lb_store(st, unit, NZ_LB_INC | (excl + agg));
  return excl;
}

#define NZ_RAW_CHUNK 8192u /* symbols per CTA for RAW copies */

/* A writer of a frame's 32-bit words: put(i, c) stores c as word i. */
struct NzWords {
  int32_t *p;
  __device__ __forceinline__ void put(size_t i, int32_t c) const { p[i] = c; }
};

/* This block's NZ_RAW_CHUNK words of a RAW payload, copied either way (encode or decode) to dst (a
 * writer as NzWords), with their share of the payload check (word i of the payload sits at sw +
 * i). 256 threads. src: 32-bit words, or 8-bit codes (ncclzCudaEncodeBatch8) widened to words. */
template <typename S, typename Dst>
static __device__ inline void nz_raw_copy_chunk(const S *src, const Dst &dst, uint32_t n, uint32_t sw,
                                                uint32_t *check) {
  const uint32_t end = n < (blockIdx.x + 1) * NZ_RAW_CHUNK ? n : (blockIdx.x + 1) * NZ_RAW_CHUNK;
  uint32_t chk = 0;
  /* four loads in flight a thread: a dequantizing dst computes while the next words arrive */
  for (uint32_t i0 = blockIdx.x * NZ_RAW_CHUNK + threadIdx.x; i0 < end; i0 += 4 * 256) {
    uint32_t w[4];
#pragma unroll
    for (uint32_t u = 0; u < 4; u++) w[u] = i0 + u * 256 < end ? (uint32_t)(int32_t)src[i0 + u * 256] : 0u;
#pragma unroll
    for (uint32_t u = 0; u < 4; u++)
      if (i0 + u * 256 < end) {
        dst.put(i0 + u * 256, (int32_t)w[u]);
        chk += nz_chk(w[u], sw + i0 + u * 256);
      }
  }
  nz_add_check<256>(chk, check);
}

/* Frame f's header checks of ncclzFrameHeaderParse, in its order, plus the batch's own (symbol
 * count, coder mask, coder parameter); the frame's state for decoding it. One thread. */
static __device__ inline NzFrame nz_parse_frame(const NzShape &sh, uint32_t f, const uint8_t *in,
                                                const uint64_t *offsets, size_t in_stride, size_t in_len,
                                                unsigned mask, uint32_t p0f, uint32_t p0h) {
  NzFrame z;
  memset(&z, 0, sizeof z);
  uint64_t start = offsets ? offsets[f] : (uint64_t)f * in_stride;
  uint64_t end = offsets ? (f + 1 < sh.n_frames ? offsets[f + 1] : in_len) : start + in_stride;
  if (!offsets && in_len && end > in_len) end = in_len;
  uint64_t avail = end > start ? end - start : 0;
  z.src = start;
  z.n = sh.frame_n(f);
  const uint8_t *h = in + start;
  uint32_t r = NZ_R_OK;
  uint8_t b[64];
  if (avail < 64) r = NZ_R_SHORT;
  if (!r) {
    for (int i = 0; i < 64; i += 4) ncclz_store_u32(b + i, *(const uint32_t *)(h + i));
    uint32_t flags = b[10] | b[11] << 8, n = ncclz_load_u32(b + 12);
    z.payload_bytes = ncclz_load_u32(b + 16);
    z.side_bytes = ncclz_load_u32(b + 20);
    uint32_t bucket = ncclz_load_u32(b + 24);
    z.p0 = ncclz_load_u32(b + 28);
    z.centre = (int32_t)ncclz_load_u32(b + 32);
    z.radius = ncclz_load_u32(b + 36);
    z.payload_check = ncclz_load_u32(b + 52);
    z.coder = b[5];
    uint32_t dsz = b[6] == 1 || b[6] == 2 ? 2 : 4;
    if (ncclz_load_u32(b) != NCCLZ_FRAME_MAGIC) r = NZ_R_MAGIC;
    else if (b[4] != NCCLZ_FORMAT_VERSION) r = NZ_R_VERSION;
    else if (ncclz_load_u32(b + 60) != ncclz_fnv1a(b, 60)) r = NZ_R_HCHECK;
    else if (b[5] >= NCCLZ_CODER_COUNT || b[6] >= NCCLZ_DTYPE_COUNT || b[7] > 2 || b[8] > 3 || (flags & ~3u)) r = NZ_R_ENUM;
    else if ((uint64_t)n * dsz != ncclz_load_u32(b + 56)) r = NZ_R_RAWBYTES;
    else if (z.side_bytes > z.payload_bytes || ((flags & 2) != 0) != (z.side_bytes != 0) ||
             ((flags & 2) && (bucket == 0 || (uint64_t)z.side_bytes != 4 * ncclz_ceil_div(n, bucket))))
      r = NZ_R_SIDE;
    else if (z.payload_bytes > avail - 64) r = NZ_R_PAYLOAD_AVAIL;
    else if (n != z.n) r = NZ_R_COUNT;
    else if (!(mask >> z.coder & 1)) r = NZ_R_CODER_MASK;
    else if ((z.coder == NCCLZ_CODER_RAW && (z.p0 || z.centre || z.radius)) ||
             (z.coder == NCCLZ_CODER_FIXEDLEN && (z.p0 != p0f || z.centre || z.radius)) ||
             (z.coder == NCCLZ_CODER_HUFFMAN && z.p0 != p0h))
      r = NZ_R_PARAM;
    else if (z.side_bytes && z.side_bytes != 4 * sh.side_words(f))
      r = NZ_R_SIDE_SIZE;
  }
  z.status = r ? NZ_CORRUPT(r) : 0;
  z.coder = r ? 0xFF : z.coder;
  return z;
}

/* A frame's header at h: the template t plus the per-frame fields and both checks (check: the
 * payload's, before the length is folded in). One thread. */
static __device__ inline void nz_put_header(uint8_t *h, const NzHeaderTemplate &t, uint32_t n, uint32_t payload,
                                            uint32_t side, int32_t centre, uint32_t radius, const double *d_abs_eb,
                                            uint32_t check, uint32_t dtype_size) {
  uint8_t b[64];
  for (int i = 0; i < 64; i++) b[i] = t.b[i];
  ncclz_store_u32(b + 12, n);
  ncclz_store_u32(b + 16, payload);
  ncclz_store_u32(b + 20, side);
  if (b[5] == NCCLZ_CODER_HUFFMAN) {
    ncclz_store_u32(b + 32, (uint32_t)centre);
    ncclz_store_u32(b + 36, radius);
  }
  if (d_abs_eb) {
    unsigned long long v = __double_as_longlong(*d_abs_eb);
    ncclz_store_u32(b + 40, (uint32_t)v);
    ncclz_store_u32(b + 44, (uint32_t)(v >> 32));
  }
  ncclz_store_u32(b + 52, check ^ payload);
  ncclz_store_u32(b + 56, n * dtype_size);
  ncclz_store_u32(b + 60, ncclz_fnv1a(b, 60));
  for (int i = 0; i < 64; i += 4) *(uint32_t *)(h + i) = ncclz_load_u32(b + i);
}

/* Whether this CTA is the last of the grid to get here (every thread calls it, after its
 * writes); the last one then sees every other CTA's writes and atomics. */
static __device__ inline bool nz_one_last(NzOneState *st) {
  __shared__ uint32_t s_last;
  __threadfence();
  __syncthreads();
  if (threadIdx.x == 0) s_last = atomicAdd(&st->done, 1u) == gridDim.x - 1;
  __syncthreads();
  if (s_last) __threadfence();
  return s_last;
}

/* One element's QSGD code by the reference's rule (qsgd_code; NaN/Inf code 0, as the reference
 * writes); out of line: only buckets whose scale is 0 or Inf take it (nz_qsgd_fast covers the rest). */
static __device__ __noinline__ int32_t nz_qsgd_code(float v, float scale, int s, uint64_t seed, uint32_t rank,
                                                    size_t i) {
  if (!isfinite(v) || scale == 0.0f) return 0;
  const float u = ncclz_philox_uniform(seed, (uint64_t)i, rank);
  const double t = ((double)fabsf(v) / (double)scale) * (double)s;
  const double l = floor(t), frac = t - l;
  double level = l + ((double)u < frac ? 1.0 : 0.0);
  if (level > (double)s) level = (double)s;
  const int32_t c = (int32_t)level;
  return v < 0.0f ? -c : c;
}

/* The bucket's part of the QSGD rule: the scale as a double and its reciprocal. */
struct NzQsgdBucket {
  double b, rb;
  bool fast; /* 0 < scale < inf: nz_qsgd_fast applies */
};
static __device__ __forceinline__ NzQsgdBucket nz_qsgd_bucket(float scale) {
  const bool fast = scale > 0.0f && scale < INFINITY;
  return {(double)scale, fast ? 1.0 / (double)scale : 0.0, fast};
}

/* qsgd_code for a bucket with 0 < scale < inf by ncclz_qsgd_code_fast (sd24 = s 2^24; w: the
 * uniform's 24 bits, nz_qsgd_words). Branch-free, so that a thread's elements interleave. */
static __device__ __forceinline__ int32_t nz_qsgd_fast(float v, const NzQsgdBucket &bk, double sd24, int s,
                                                      uint32_t w) {
  return ncclz_qsgd_code_fast(v, bk.b, bk.rb, sd24, s, w);
}

/* The Philox words behind the uniforms of elements 4g .. 4g + 3 (ncclz_philox_qsgd_words, each >> 8). */
static __device__ __forceinline__ void nz_qsgd_words(uint64_t seed, uint32_t rank, uint64_t g, uint32_t w[4]) {
  ncclz_philox_qsgd_words(seed, g, rank, w);
#pragma unroll
  for (int j = 0; j < 4; j++) w[j] >>= 8;
}

/* One element by the fast rule when its bucket allows, the reference's otherwise (a Philox call
 * for this element alone: four consecutive ones take nz_qsgd_four). */
static __device__ __forceinline__ int32_t nz_qsgd_one(float v, float scale, const NzQsgdBucket &bk, double sd24, int s,
                                                   uint64_t seed, uint32_t rank, size_t i) {
  if (!bk.fast) return nz_qsgd_code(v, scale, s, seed, rank, i);
  uint32_t w[4];
  nz_qsgd_words(seed, rank, (uint64_t)i >> 2, w);
  return nz_qsgd_fast(v, bk, sd24, s, w[i & 3]);
}

/* Elements e .. e + 3 of one bucket (0 at n and past) by nz_qsgd_one's rules, one Philox call for
 * the four where e is a multiple of 4. */
static __device__ __forceinline__ int4 nz_qsgd_four(float4 v, float scale, const NzQsgdBucket &bk, double sd24, int s,
                                                  uint64_t seed, uint32_t rank, size_t e, size_t n) {
  if (!bk.fast || (e & 3))
    return make_int4(e < n ? nz_qsgd_one(v.x, scale, bk, sd24, s, seed, rank, e) : 0,
                     e + 1 < n ? nz_qsgd_one(v.y, scale, bk, sd24, s, seed, rank, e + 1) : 0,
                     e + 2 < n ? nz_qsgd_one(v.z, scale, bk, sd24, s, seed, rank, e + 2) : 0,
                     e + 3 < n ? nz_qsgd_one(v.w, scale, bk, sd24, s, seed, rank, e + 3) : 0);
  uint32_t w[4];
  nz_qsgd_words(seed, rank, (uint64_t)e >> 2, w);
  return make_int4(e < n ? nz_qsgd_fast(v.x, bk, sd24, s, w[0]) : 0,
                   e + 1 < n ? nz_qsgd_fast(v.y, bk, sd24, s, w[1]) : 0,
                   e + 2 < n ? nz_qsgd_fast(v.z, bk, sd24, s, w[2]) : 0,
                   e + 3 < n ? nz_qsgd_fast(v.w, bk, sd24, s, w[3]) : 0);
}

/* The largest of m and v's magnitudes, and the warp's largest m: NaN never compares greater, as in
 * the reference's bucket_max_abs. */
static __device__ __forceinline__ float nz_max_abs4(float4 v, float m) {
  const float a[4] = {fabsf(v.x), fabsf(v.y), fabsf(v.z), fabsf(v.w)};
#pragma unroll
  for (int j = 0; j < 4; j++)
    if (a[j] > m) m = a[j];
  return m;
}
static __device__ __forceinline__ float nz_warp_max(float m) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    const float y = __shfl_xor_sync(NZ_FULL, m, o);
    if (y > m) m = y;
  }
  return m;
}

/* x[e..e+3] as one vector load where all four lie below n, else the ones that do and pad past n
 * (an array's ragged end). */
static __device__ __forceinline__ float4 nz_load4(const float *x, size_t e, size_t n, float pad) {
  if (e + 3 < n) return __ldg((const float4 *)(x + e));
  return make_float4(e < n ? __ldg(x + e) : pad, e + 1 < n ? __ldg(x + e + 1) : pad, e + 2 < n ? __ldg(x + e + 2) : pad, pad);
}

/* c into sym[e..e+3]: one vector store where all four lie below n, else the ones that do. */
static __device__ __forceinline__ void nz_store4(int32_t *sym, size_t e, size_t n, int4 c) {
  if (e + 3 < n) {
    *(int4 *)(sym + e) = c;
    return;
  }
  if (e < n) sym[e] = c.x;
  if (e + 1 < n) sym[e + 1] = c.y;
  if (e + 2 < n) sym[e + 2] = c.z;
}
/* The same as 8-bit codes (|c| <= 127: QSGD's): one 32-bit store where all four lie below n. */
static __device__ __forceinline__ void nz_store4(int8_t *sym, size_t e, size_t n, int4 c) {
  if (e + 3 < n) {
    *(char4 *)(sym + e) = make_char4((signed char)c.x, (signed char)c.y, (signed char)c.z, (signed char)c.w);
    return;
  }
  if (e < n) sym[e] = (int8_t)c.x;
  if (e + 1 < n) sym[e + 1] = (int8_t)c.y;
  if (e + 2 < n) sym[e + 2] = (int8_t)c.z;
}
/* One-kernel calls (fixedlen_cuda.cu). side: the frame's QSGD scales (NULL without). */
struct NzOneEncode {
  const float *scales;
  NzHeaderTemplate hdr;
  const double *d_abs_eb;
  uint32_t dtype_size;
  uint32_t *frame_bytes;
  NzOneState *st;
};
/* T: the codes' type, int32_t, or int8_t (ncclzCudaEncodeBatch8). */
template <typename T>
ncclzStatus nz_one_encode(const NzShape &sh, ncclzCoder coder, const T *d_sym, uint8_t *d_out, const NzOneEncode &a,
                          cudaStream_t s);
uint32_t nz_one_units(uint64_t frame_symbols);
/* QSGD of a fused quantize + encode: x in, the scales and codes also written out (as
 * ncclzCudaQsgdQuantize, or as 8-bit codes to sym8 where it is set). */
struct NzQsgd {
  const float *x;
  float *scales;
  int32_t *sym;
  int8_t *sym8;
  uint32_t bucket, rank;
  int levels;
  uint64_t seed;
};
/* Symbols a CTA of the fused quantize + encode takes (NZ_ONE_MAX_UNITS of them bound a frame);
 * whether q's bucket fits it. */
#define NZ_ONE_QSGD_SYMS 2048u
/* Whether every pointer given is 16-byte aligned (what the kernels' uint4 / float4 accesses need). */
static inline bool nz_aligned16(const void *a, const void *b, const void *c = nullptr) {
  return (((uintptr_t)a | (uintptr_t)b | (uintptr_t)c) & 15) == 0;
}

static inline bool nz_one_qsgd_fits(uint32_t bucket) { return bucket && bucket % 128 == 0 && NZ_ONE_QSGD_SYMS % bucket == 0; }
ncclzStatus nz_one_qsgd_encode(const NzShape &sh, const NzQsgd &q, uint8_t *d_out, const NzOneEncode &a, cudaStream_t s);

/* nz_lookback_wait over windows of 32 J units: each lane loads its J words of the window at once
 * (one round trip for 32 J predecessors, where the 32-unit window takes one per 32), then sums
 * back to the nearest inclusive prefix. For a grid that runs all at once, where every CTA
 * publishes its aggregate at about the same time and a chain of inclusive prefixes would take a
 * round trip per 32 units. */
template <int J>
static __device__ inline uint32_t nz_lookback_wait_wide(unsigned long long *st, uint32_t unit, uint32_t first,
                                                        uint32_t agg) {
  if (unit == first) return 0;
  const int lane = threadIdx.x & 31;
  uint32_t excl = 0;
  for (int64_t base = unit;; base -= 32 * J) {
    unsigned long long v[J];
#pragma unroll
    for (int j = 0; j < J; j++) { /* distance d = 32 j + lane + 1 before base */
      const int64_t idx = base - 1 - (32 * j + lane);
      v[j] = idx >= (int64_t)first
                 ? cuda::atomic_ref<unsigned long long, cuda::thread_scope_device>(st[idx]).load(cuda::memory_order_acquire)
                 : NZ_LB_INC; /* before the frame: an inclusive zero */
    }
#pragma unroll
    for (int j = 0; j < J; j++) {
      const int64_t idx = base - 1 - (32 * j + lane);
      while ((v[j] >> 32) == 0)
        v[j] = cuda::atomic_ref<unsigned long long, cuda::thread_scope_device>(st[idx]).load(cuda::memory_order_acquire);
    }
    uint32_t nearest = 32 * J; /* the smallest distance - 1 of an inclusive word in the window */
#pragma unroll
    for (int j = J - 1; j >= 0; j--)
      if ((v[j] >> 32) == 2) nearest = 32 * j + lane;
    nearest = __reduce_min_sync(NZ_FULL, nearest);
    uint32_t sum = 0;
#pragma unroll
    for (int j = 0; j < J; j++) sum += 32u * j + lane <= nearest ? (uint32_t)v[j] : 0u;
    excl += __reduce_add_sync(NZ_FULL, sum);
    if (nearest < 32u * J) break;
  }
  if (lane == 0) nz_lb_store(st, unit, NZ_LB_INC | (excl + agg));
  return excl;
}

/* Builds the header template on the host from the batch (reference packer). */
NzHeaderTemplate nz_header_template(const ncclzCudaBatch *b, ncclzCoder coder);
NzShape nz_shape(const ncclzCudaBatch *b, uint32_t units_per_frame);

/* Kernels launched from several files. */
#define NZ_HF_FAST_BITS 12u /* HUFFMAN decode: first-level table of 2^12 entries per frame */
#define NZ_HF_TSTRIDE (NCCLZ_HUFF_MAX_SYMS + 64u) /* decode tables per frame, words */

/* Coder entry points (encode writes the coded payload at d_out + k*stride + 64 + side bytes). */
template <typename T> /* int32_t, or int8_t codes (ncclzCudaEncodeBatch8) */
ncclzStatus nz_fixedlen_encode(const NzShape &sh, const T *d_sym, uint8_t *d_out, size_t stride, NzFrame *fr,
                               unsigned long long *lookback, cudaStream_t s);
uint32_t nz_fixedlen_units(const NzShape &sh);
uint32_t nz_huffman_units(const NzShape &sh);
/* eb: EB without a predictor quantized inside the histogram pass, the codes written to d_sym
 * there (from nz_eb_prepare, eb_quant.cuh; frames of whole groups of 4, 16-byte aligned x and
 * codes, HUFFMAN alone), else NULL. */
struct NzEb;
ncclzStatus nz_huffman_encode(const NzShape &sh, const int32_t *d_sym, const NzEb *eb, uint8_t *d_out, size_t stride,
                              NzFrame *fr, unsigned long long *lookback, uint32_t *hist, uint32_t *table,
                              cudaStream_t s);
#endif
