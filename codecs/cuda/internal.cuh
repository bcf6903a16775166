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

/* Reasons stored in bits 8.. of a decode status word. */
enum {
  NZ_R_OK = 0, NZ_R_SHORT, NZ_R_MAGIC, NZ_R_VERSION, NZ_R_HCHECK, NZ_R_ENUM, NZ_R_RAWBYTES, NZ_R_SIDE,
  NZ_R_PAYLOAD_AVAIL, NZ_R_PCHECK, NZ_R_COUNT, NZ_R_PARAM, NZ_R_CODER_MASK, NZ_R_RAW_SIZE,
  NZ_R_FL_SIZE, NZ_R_FL_OFFSET, NZ_R_HF_TABLE, NZ_R_HF_KRAFT, NZ_R_HF_OFFSETS, NZ_R_HF_CODE,
  NZ_R_HF_SEGEND, NZ_R_HF_PAD, NZ_R_SIDE_SIZE, NZ_R_HF_ESCAPE, NZ_R_COUNT_OF
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
  size_t frames, lookback, hist, table, lut, total;
};
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

/* Builds the header template on the host from the batch (reference packer). */
NzHeaderTemplate nz_header_template(const ncclzCudaBatch *b, ncclzCoder coder);
NzShape nz_shape(const ncclzCudaBatch *b, uint32_t units_per_frame);

/* Kernels launched from several files. */
#define NZ_HF_FAST_BITS 12u /* HUFFMAN decode: first-level table of 2^12 entries per frame */
#define NZ_HF_TSTRIDE (NCCLZ_HUFF_MAX_SYMS + 64u) /* decode tables per frame, words */

/* Coder entry points (encode writes the coded payload at d_out + k*stride + 64 + side bytes). */
ncclzStatus nz_fixedlen_encode(const NzShape &sh, const int32_t *d_sym, uint8_t *d_out, size_t stride, NzFrame *fr,
                               unsigned long long *lookback, cudaStream_t s);
ncclzStatus nz_fixedlen_decode(const NzShape &sh, const uint8_t *d_in, int32_t *d_sym, NzFrame *fr, cudaStream_t s);
uint32_t nz_fixedlen_units(const NzShape &sh);
uint32_t nz_huffman_units(const NzShape &sh);
ncclzStatus nz_huffman_encode(const NzShape &sh, const int32_t *d_sym, uint8_t *d_out, size_t stride, NzFrame *fr,
                              unsigned long long *lookback, uint32_t *hist, uint32_t *table,
                              cudaStream_t s);
ncclzStatus nz_huffman_decode(const NzShape &sh, const uint8_t *d_in, int32_t *d_sym, NzFrame *fr, uint32_t *lut,
                              uint32_t *tables, cudaStream_t s);
#endif
