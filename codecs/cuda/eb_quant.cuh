/* EB quantization's per-element rule on the GPU, shared by the quantizer's kernels (quant_cuda.cu)
 * and the quantizer fused into HUFFMAN's sample and histogram passes (huffman_cuda.cu): the
 * parameters, the bound resolved on the device for eb:rel, one element's code by the reference's
 * rule. */
#ifndef NCCLZ_CUDA_EB_QUANT_CUH
#define NCCLZ_CUDA_EB_QUANT_CUH

#include "internal.cuh"
#include "../eb_code.h"

struct EbParams {
  double abs_eb, bound; /* half-step, and the bound every element meets (as quant_eb.c) */
  int lorenzo, has_fill;
  float fill;
  uint32_t d0, d1, d2;
  double step, inv_step; /* 2 abs_eb and its reciprocal: set by eb_ready in each kernel */
  /* eb:rel resolved from the range pass's per-block (min, max) pairs (k_eb_range_part) by each
   * block of the quantizer; NULL: from the stats (k_eb_resolve) */
  const float2 *part;
  uint32_t nparts;
  double rel;
};

/* Half the float32 spacing in the binade of m >= 0 (as half_float_ulp in quant_eb.c). */
static __device__ double half_float_ulp(double m) {
  if (!(m >= 0x1p-126)) return 0x1p-150;
  int e;
  frexp(m, &e);
  return ldexp(1.0, e - 25);
}

/* bound = X * (max - min) (X * max(|min|, 1) when max == min), abs_eb = bound - ulp(2 max|x|)/2,
 * as eb_bounds in quant_eb.c; flo > fhi: no values. */
static __device__ void eb_bound_of(double rel, float flo, float fhi, double *bound, double *abs_eb) {
  if (!(flo <= fhi)) flo = fhi = 0.0f; /* no values */
  const double lo = flo, hi = fhi;
  *bound = fhi == flo ? rel * fmax(fabs(lo), 1.0) : rel * (hi - lo);
  *abs_eb = *bound - half_float_ulp(2.0 * fmax(fabs(lo), fabs(hi)));
}

/* The whole array's (min, max) from the range pass's per-block pairs, reduced by every block of
 * the quantizer (min and max of finite values: the same in any order), and the bound from it;
 * block 0 records both in the stats as k_eb_resolve does. One launch instead of two small ones
 * (the stats' reset and the resolve) in a call that is mostly launches on small frames. */
static __device__ void eb_resolve_block(EbParams &p, ncclzCudaQuantStats *st) {
  __shared__ float s_lo[32], s_hi[32];
  float lo = INFINITY, hi = -INFINITY;
  for (uint32_t i = threadIdx.x; i < p.nparts; i += blockDim.x) {
    const float2 v = p.part[i];
    lo = fminf(lo, v.x);
    hi = fmaxf(hi, v.y);
  }
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    lo = fminf(lo, __shfl_xor_sync(NZ_FULL, lo, o));
    hi = fmaxf(hi, __shfl_xor_sync(NZ_FULL, hi, o));
  }
  const uint32_t warp = threadIdx.x / 32, nw = (blockDim.x + 31) / 32;
  if ((threadIdx.x & 31) == 0) s_lo[warp] = lo, s_hi[warp] = hi;
  __syncthreads();
  lo = s_lo[0], hi = s_hi[0];
  for (uint32_t w = 1; w < nw; w++) lo = fminf(lo, s_lo[w]), hi = fmaxf(hi, s_hi[w]);
  eb_bound_of(p.rel, lo, hi, &p.bound, &p.abs_eb);
  if (blockIdx.x == 0 && threadIdx.x == 0) {
    st->vmin = lo, st->vmax = hi, st->bound = p.bound, st->abs_eb = p.abs_eb;
    if (!(p.abs_eb > 0)) atomicAdd(&st->unbounded, ~0ull >> 1); /* below float resolution: NCCLZ_ERR_RANGE */
  }
}

/* A kernel's parameters ready for eb_code: the bound resolved on the device for eb:rel, the
 * step and its reciprocal once per thread (not a division per element). */
static __device__ __forceinline__ void eb_ready(EbParams &p, int resolved, ncclzCudaQuantStats *st) {
  if (resolved && p.part) {
    eb_resolve_block(p, st);
  } else if (resolved) {
    p.abs_eb = st->abs_eb;
    p.bound = st->bound;
  }
  p.step = 2.0 * p.abs_eb;
  p.inv_step = 1.0 / p.step;
}

/* The exact rule for what the fast certificate leaves (non-finite x too), out of line: inlined
 * at every element of the unrolled kernels, its binary64 division and branches multiplied the
 * code and crowded the instruction cache for a path almost no element takes (quantize + FIXEDLEN
 * on TREFHT REL 1e-4, H200: 630 GB/s inlined, 656 out of line). Returns the code, or 0 with .bad
 * set (1 not finite, 2 beyond the code limit, 3 unreachable). */
struct EbSlow {
  int32_t code;
  int bad;
};
static __device__ __noinline__ EbSlow eb_code_exact(float xf, double bound, double step) {
  if (!isfinite(xf)) return {0, 1};
  int32_t c = 0;
  const ncclzEbOutcome o = ncclz_eb_code_exact(xf, bound, step, &c);
  if (o != NCCLZ_EB_OK) return {0, o == NCCLZ_EB_BEYOND_LIMIT ? 2 : 3};
  return {c, 0};
}

/* The code of one element: the C reference's rule (codecs/eb_code.h: the fast certificate here,
 * the exact rule out of line); 0 with *bad set for a failure (as eb_code_exact). */
static __device__ __forceinline__ int32_t eb_code(float xf, const EbParams &p, int *bad) {
  int32_t c;
  if (ncclz_eb_code_fast(xf, p.bound, p.step, p.inv_step, &c)) return c;
  const EbSlow r = eb_code_exact(xf, p.bound, p.step);
  *bad = r.bad;
  return r.code;
}

/* Counts element i's failure (bad from eb_code) in st: its kind, and the first index. */
static __device__ __forceinline__ void eb_count_failure(ncclzCudaQuantStats *st, int bad, size_t i) {
  atomicAdd(bad == 1 ? &st->nonfinite : bad == 2 ? &st->out_of_range : &st->unbounded, 1ull);
  atomicMin(&st->first_bad, (unsigned long long)i);
}

/* One element without Lorenzo (as k_eb_quant with p.lorenzo == 0); a fill value becomes fill_code
 * (NCCLZ_FILL_CODE, or 0 for the codes a Lorenzo predictor reads, as eb_term). st NULL: a failure
 * is not counted (a sample of elements that the quantizer counts). */
static __device__ __forceinline__ int32_t eb_plain(float v, size_t i, const EbParams &p, ncclzCudaQuantStats *st,
                                                   int32_t fill_code) {
  if (p.has_fill && v == p.fill) return fill_code;
  int bad = 0;
  int32_t c = eb_code(v, p, &bad);
  if (bad && st) eb_count_failure(st, bad, i);
  return c;
}

/* EB's pass fused into a coder's (HUFFMAN's histogram): the parameters, whether eb:rel is resolved
 * on the device (see nz_eb_prepare), the floats, and where the codes and the errors go (as
 * ncclzCudaQuantizeEB). */
struct NzEb {
  EbParams p;
  int resolved;
  const float *x;
  int32_t *sym;
  ncclzCudaQuantStats *st;
};
/* ncclzCudaQuantizeEB's launches before its quantizer (the stats reset, eb:rel's range pass) for
 * a quantizer without Lorenzo fused into a coder: *e ready for it. With a workspace (d_ws as
 * ncclzCudaQuantizeEB's), eb:rel is resolved from the range blocks' pairs (e->p.part) by the
 * first kernel that runs eb_ready, whose block 0 records the bound in the stats; later kernels
 * take it from there (part NULL). */
ncclzStatus nz_eb_prepare(const ncclzQuantParams *p, int eb_is_rel, double rel_eb, const float *d_x, size_t n,
                          int32_t *d_sym, ncclzCudaQuantStats *d_stats, void *d_ws, size_t ws_bytes, cudaStream_t s,
                          NzEb *e);
#endif
