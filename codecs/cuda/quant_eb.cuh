/* EB quantization of one element on the device, shared by the quantizer kernels (quant_cuda.cu)
 * and the one-pass quantize-and-FIXEDLEN encoder (fixedlen_cuda.cu). The reference's exact
 * binary64 arithmetic (the build's -fmad=false: one rounding per operation). */
#ifndef NCCLZ_QUANT_EB_CUH
#define NCCLZ_QUANT_EB_CUH

#include "internal.cuh"

struct EbParams {
  double abs_eb, bound; /* half-step, and the bound every element meets (as quant_eb.c) */
  int lorenzo, has_fill;
  float fill;
  uint32_t d0, d1, d2;
};

/* The code of one element (as eb_code in quant_eb.c); 0 with *bad set for a failure. */
static __device__ __forceinline__ int32_t eb_code(float xf, double abs_eb, double bound, int *bad) {
  if (!isfinite(xf)) {
    *bad = 1;
    return 0;
  }
  double step = 2.0 * abs_eb, x = (double)xf;
  double t = floor(x / step + 0.5);
  if (!(fabs(t) < (double)NCCLZ_CODE_LIMIT)) {
    *bad = 2;
    return 0;
  }
  int32_t c = (int32_t)t;
#define EB_WITHIN(cc) (fabs(x - (double)(float)((double)(cc) * step)) <= bound)
  if (!EB_WITHIN(c)) {
    if (EB_WITHIN(c - 1)) c -= 1;
    else if (EB_WITHIN(c + 1)) c += 1;
    else {
      *bad = 3;
      return 0;
    }
  }
#undef EB_WITHIN
  if (c <= -NCCLZ_CODE_LIMIT || c >= NCCLZ_CODE_LIMIT) {
    *bad = 2;
    return 0;
  }
  return c;
}

/* One element without Lorenzo (as k_eb_quant with p.lorenzo == 0). */
static __device__ __forceinline__ int32_t eb_plain(float v, size_t i, double abs_eb, double bound, int has_fill,
                                                   float fill, ncclzCudaQuantStats *st) {
  if (has_fill && v == fill) return NCCLZ_FILL_CODE;
  int bad = 0;
  int32_t c = eb_code(v, abs_eb, bound, &bad);
  if (bad) {
    atomicAdd(bad == 1 ? &st->nonfinite : bad == 2 ? &st->out_of_range : &st->unbounded, 1ull);
    atomicMin(&st->first_bad, (unsigned long long)i);
  }
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
