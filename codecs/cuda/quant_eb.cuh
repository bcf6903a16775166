/* EB quantization of one element on the device, shared by the quantizer kernels (quant_cuda.cu)
 * and the one-pass quantize-and-FIXEDLEN encoder (fixedlen_cuda.cu): the C reference's rule
 * (codecs/eb_code.h, its fast path included; the build's -fmad=false: one rounding per
 * operation). */
#ifndef NCCLZ_QUANT_EB_CUH
#define NCCLZ_QUANT_EB_CUH

#include "internal.cuh"
#include "../eb_code.h"

struct EbParams {
  double abs_eb, bound; /* half-step, and the bound every element meets (as quant_eb.c) */
  int lorenzo, has_fill;
  float fill;
  uint32_t d0, d1, d2;
  double step, inv_step; /* 2 abs_eb and its reciprocal: set by eb_ready in each kernel */
};

/* A kernel's parameters ready for eb_code: the bound resolved on the device for eb:rel, the
 * step and its reciprocal once per thread (not a division per element). */
static __device__ __forceinline__ void eb_ready(EbParams &p, int resolved, const ncclzCudaQuantStats *st) {
  if (resolved) {
    p.abs_eb = st->abs_eb;
    p.bound = st->bound;
  }
  p.step = 2.0 * p.abs_eb;
  p.inv_step = 1.0 / p.step;
}

/* The exact rule for what the fast certificate leaves (non-finite x too), out of line: inlined
 * at every element of the unrolled kernels, its binary64 division and branches multiplied the
 * code and crowded the instruction cache for a path almost no element takes. Returns the code,
 * or 0 with .bad set (1 not finite, 2 beyond the code limit, 3 unreachable). */
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

/* One element without Lorenzo (as k_eb_quant with p.lorenzo == 0). */
static __device__ __forceinline__ int32_t eb_plain(float v, size_t i, const EbParams &p, ncclzCudaQuantStats *st) {
  if (p.has_fill && v == p.fill) return NCCLZ_FILL_CODE;
  int bad = 0;
  int32_t c = eb_code(v, p, &bad);
  if (bad) eb_count_failure(st, bad, i);
  return c;
}

/* Resets d_stats and, for eb:rel, resolves the bound on the device (a range pass); fills e with the
 * quantizer's parameters (Lorenzo's shape as lz_shape). Launches on s. */
ncclzStatus nz_eb_prepare(const ncclzQuantParams *p, int eb_is_rel, double rel_eb, const float *d_x, size_t n,
                          ncclzCudaQuantStats *d_stats, EbParams *e, cudaStream_t s);
/* The one-pass quantize-and-FIXEDLEN encoder (fixedlen_cuda.cu): e from nz_eb_prepare, no Lorenzo. */
ncclzStatus nz_fixedlen_encode_eb(const NzShape &sh, const float *d_x, const EbParams &e, int resolved,
                                  ncclzCudaQuantStats *d_stats, uint8_t *d_out, size_t stride, NzFrame *fr,
                                  unsigned long long *lookback, cudaStream_t s);
#endif
