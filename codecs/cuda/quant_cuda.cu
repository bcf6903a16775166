/* Quantizers on the GPU with the reference's exact binary64 arithmetic (-fmad=false: one rounding
 * per operation, in FORMAT.md's order). EB quantization fuses the Lorenzo forward step: each
 * thread recomputes its neighbours' codes instead of reading them back, which costs arithmetic
 * (cheap) instead of a second pass over memory (expensive). QSGD draws from the same Philox. */
#include <math.h>

#include "../philox.h"
#include "internal.cuh"

/* ------------------------------------------------------------ EB */

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

/* A neighbour's term in the predictor: fill counts as 0, as do failures (reported at their own
 * index). */
static __device__ __forceinline__ uint32_t eb_term(const float *x, size_t i, const EbParams &p) {
  float v = __ldg(x + i);
  if (p.has_fill && v == p.fill) return 0u;
  int bad = 0;
  return (uint32_t)eb_code(v, p.abs_eb, p.bound, &bad);
}

__global__ void k_eb_quant(EbParams p, int resolved, const float *x, size_t n, int32_t *sym,
                           ncclzCudaQuantStats *st) {
  if (resolved) { /* eb:rel resolved on the device */
    p.abs_eb = st->abs_eb;
    p.bound = st->bound;
  }
  size_t stride = (size_t)gridDim.x * blockDim.x;
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += stride) {
    float v = __ldg(x + i);
    int32_t out;
    int bad = 0;
    if (p.has_fill && v == p.fill) {
      out = NCCLZ_FILL_CODE;
    } else {
      int32_t c = eb_code(v, p.abs_eb, p.bound, &bad);
      uint32_t pred = 0;
      if (p.lorenzo) {
        size_t k = i % p.d2, j = (i / p.d2) % p.d1, pl = i / ((size_t)p.d1 * p.d2);
        size_t row = p.d2, plane = (size_t)p.d1 * p.d2;
        int hk = k > 0, hj = p.lorenzo >= 2 && j > 0, hi = p.lorenzo == 3 && pl > 0;
        if (hk) pred += eb_term(x, i - 1, p);
        if (hj) pred += eb_term(x, i - row, p);
        if (hj && hk) pred -= eb_term(x, i - row - 1, p);
        if (hi) pred += eb_term(x, i - plane, p);
        if (hi && hk) pred -= eb_term(x, i - plane - 1, p);
        if (hi && hj) pred -= eb_term(x, i - plane - row, p);
        if (hi && hj && hk) pred += eb_term(x, i - plane - row - 1, p);
      }
      out = (int32_t)((uint32_t)c - pred);
    }
    sym[i] = out;
    if (bad) {
      atomicAdd(bad == 1 ? &st->nonfinite : bad == 2 ? &st->out_of_range : &st->unbounded, 1ull);
      atomicMin(&st->first_bad, (unsigned long long)i);
    }
  }
}

/* Float min/max via CAS loops (rare: one per warp). */
static __device__ void atomic_fmin(float *a, float v) {
  int *p = (int *)a, old = *p;
  while (v < __int_as_float(old)) {
    int prev = atomicCAS(p, old, __float_as_int(v));
    if (prev == old) break;
    old = prev;
  }
}
static __device__ void atomic_fmax(float *a, float v) {
  int *p = (int *)a, old = *p;
  while (v > __int_as_float(old)) {
    int prev = atomicCAS(p, old, __float_as_int(v));
    if (prev == old) break;
    old = prev;
  }
}

__global__ void k_eb_range2(const float *x, size_t n, int has_fill, float fill, ncclzCudaQuantStats *st) {
  float lo = INFINITY, hi = -INFINITY;
  size_t stride = (size_t)gridDim.x * blockDim.x;
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += stride) {
    float v = __ldg(x + i);
    if ((has_fill && v == fill) || !(fabsf(v) < NCCLZ_EB_HUGE_VALUE)) continue;
    lo = fminf(lo, v);
    hi = fmaxf(hi, v);
  }
  for (int o = 16; o; o >>= 1) {
    lo = fminf(lo, __shfl_xor_sync(NZ_FULL, lo, o));
    hi = fmaxf(hi, __shfl_xor_sync(NZ_FULL, hi, o));
  }
  if ((threadIdx.x & 31) == 0 && lo <= hi) {
    atomic_fmin(&st->vmin, lo);
    atomic_fmax(&st->vmax, hi);
  }
}

/* Half the float32 spacing in the binade of m >= 0 (as half_float_ulp in quant_eb.c). */
static __device__ double half_float_ulp(double m) {
  if (!(m >= 0x1p-126)) return 0x1p-150;
  int e;
  frexp(m, &e);
  return ldexp(1.0, e - 25);
}

/* bound = X * (max - min) (X * max(|min|, 1) when max == min), abs_eb = bound - ulp(2 max|x|)/2,
 * as eb_bounds in quant_eb.c. */
__global__ void k_eb_resolve(double rel, ncclzCudaQuantStats *st) {
  float flo = st->vmin, fhi = st->vmax;
  if (!(flo <= fhi)) flo = fhi = 0.0f; /* no values */
  double lo = flo, hi = fhi;
  st->bound = fhi == flo ? rel * fmax(fabs(lo), 1.0) : rel * (hi - lo);
  st->abs_eb = st->bound - half_float_ulp(2.0 * fmax(fabs(lo), fabs(hi)));
  if (!(st->abs_eb > 0)) st->unbounded = ~0ull >> 1; /* below float resolution: NCCLZ_ERR_RANGE */
}

__global__ void k_stats_init(ncclzCudaQuantStats *st, double abs_eb, double bound) {
  st->nonfinite = st->out_of_range = st->unbounded = 0;
  st->first_bad = ~0ull;
  st->abs_eb = abs_eb;
  st->bound = bound;
  st->vmin = INFINITY;
  st->vmax = -INFINITY;
}

size_t ncclzCudaQuantWorkspaceSize(size_t n) { return 4 * n + 256; }

static unsigned grid_for(size_t n) {
  size_t b = n / 256 + 1;
  return (unsigned)(b < 132 * 16 ? b : 132 * 16);
}

ncclzStatus ncclzCudaQuantizeEB(const ncclzQuantParams *p, int eb_is_rel, double rel_eb, const float *d_x, size_t n,
                                int32_t *d_sym, ncclzCudaQuantStats *d_stats, void *d_ws, size_t ws_bytes,
                                cudaStream_t s) {
  (void)d_ws; /* reserved: the quantizer needs no scratch today */
  (void)ws_bytes;
  if (!p || p->kind != NCCLZ_QUANT_EB || !d_stats) return ncclzSetError(NCCLZ_ERR_ARG, "cuda eb: bad params");
  EbParams e = {p->abs_eb, p->bound > 0 ? p->bound : p->abs_eb, p->lorenzo, p->has_fill, p->fill_value, p->dims[0], p->dims[1], p->dims[2]};
  if (e.lorenzo && (uint64_t)e.d0 * e.d1 * e.d2 != n) { /* as lz_shape: the whole array is one row */
    e.d0 = e.d1 = 1;
    e.d2 = (uint32_t)n;
    e.lorenzo = 1;
    if (n > UINT32_MAX) return ncclzSetError(NCCLZ_ERR_ARG, "cuda eb: 1D Lorenzo over > 4G elements");
  }
  k_stats_init<<<1, 1, 0, s>>>(d_stats, e.abs_eb, e.bound);
  NZ_LAUNCHED();
  if (eb_is_rel) {
    k_eb_range2<<<grid_for(n), 256, 0, s>>>(d_x, n, p->has_fill, p->fill_value, d_stats);
    NZ_LAUNCHED();
    k_eb_resolve<<<1, 1, 0, s>>>(rel_eb, d_stats);
    NZ_LAUNCHED();
  }
  k_eb_quant<<<grid_for(n), 256, 0, s>>>(e, eb_is_rel, d_x, n, d_sym, d_stats);
  NZ_LAUNCHED();
  return NCCLZ_OK;
}

/* 1D rows: each thread reconstructs a contiguous run; rows are independent. For 2D/3D a column
 * pass follows the row pass (the inverse of a separable sum) when there are no fill codes. */
__global__ void k_scan_rows(const int32_t *in, int32_t *out, size_t rows, uint32_t w) {
  size_t r = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  if (r >= rows) return;
  uint32_t acc = 0;
  for (uint32_t k = 0; k < w; k++) {
    acc += (uint32_t)in[r * w + k];
    out[r * w + k] = (int32_t)acc;
  }
}
/* out[o][l][i] = sum over l' <= l (stride inner), thread per (o, i). */
__global__ void k_scan_axis(int32_t *a, size_t outer, uint32_t len, size_t inner) {
  size_t t = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  if (t >= outer * inner) return;
  size_t o = t / inner, i = t % inner;
  int32_t *p = a + o * len * inner + i;
  uint32_t acc = 0;
  for (uint32_t l = 0; l < len; l++) {
    acc += (uint32_t)p[(size_t)l * inner];
    p[(size_t)l * inner] = (int32_t)acc;
  }
}

__global__ void k_eb_dequant(double abs_eb, const double *d_abs_eb, int has_fill, float fill, const int32_t *c,
                             size_t n, float *x) {
  if (d_abs_eb) abs_eb = *d_abs_eb;
  double step = 2.0 * abs_eb;
  size_t stride = (size_t)gridDim.x * blockDim.x;
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += stride) {
    int32_t v = c[i];
    x[i] = v == NCCLZ_FILL_CODE && has_fill ? fill : (float)((double)v * step);
  }
}

ncclzStatus ncclzCudaDequantizeEB(const ncclzQuantParams *p, const double *d_abs_eb, const int32_t *d_sym, size_t n,
                                  float *d_x, void *d_ws, size_t ws_bytes, cudaStream_t s) {
  if (!p || p->kind != NCCLZ_QUANT_EB) return ncclzSetError(NCCLZ_ERR_ARG, "cuda eb: bad params");
  const int32_t *codes = d_sym;
  if (p->lorenzo) {
    if (p->has_fill)
      return ncclzSetError(NCCLZ_ERR_ARG, "cuda eb: inverse Lorenzo with fill values is not implemented on the GPU");
    if (ws_bytes < 4 * n) return ncclzSetError(NCCLZ_ERR_ARG, "cuda eb: workspace too small");
    uint64_t d0 = p->dims[0], d1 = p->dims[1], d2 = p->dims[2];
    int L = p->lorenzo;
    if (d0 * d1 * d2 != n) {
      d0 = d1 = 1;
      d2 = n;
      L = 1;
    }
    int32_t *w = (int32_t *)d_ws;
    /* Without fill codes the inverse is a prefix sum along each predicted axis (wrapping). */
    size_t rows = n / d2;
    k_scan_rows<<<(unsigned)(rows / 128 + 1), 128, 0, s>>>(d_sym, w, rows, (uint32_t)d2);
    NZ_LAUNCHED();
    if (L >= 2) {
      k_scan_axis<<<(unsigned)(d0 * d2 / 128 + 1), 128, 0, s>>>(w, d0, (uint32_t)d1, d2);
      NZ_LAUNCHED();
    }
    if (L == 3) {
      k_scan_axis<<<(unsigned)(d1 * d2 / 128 + 1), 128, 0, s>>>(w, 1, (uint32_t)d0, d1 * d2);
      NZ_LAUNCHED();
    }
    codes = w;
  }
  k_eb_dequant<<<grid_for(n), 256, 0, s>>>(p->abs_eb, d_abs_eb, p->has_fill, p->fill_value, codes, n, d_x);
  NZ_LAUNCHED();
  return NCCLZ_OK;
}

/* ------------------------------------------------------------ QSGD */

__global__ void k_qsgd_scales(const float *x, size_t n, uint32_t bucket, float *scales) {
  size_t b = blockIdx.x * (size_t)(blockDim.x / 32) + threadIdx.x / 32;
  size_t start = b * bucket;
  if (start >= n) return;
  size_t end = n - start < bucket ? n : start + bucket;
  float m = 0.0f;
  for (size_t i = start + (threadIdx.x & 31); i < end; i += 32) {
    float a = fabsf(__ldg(x + i));
    if (a > m) m = a;
  }
  for (int o = 16; o; o >>= 1) {
    float y = __shfl_xor_sync(NZ_FULL, m, o);
    if (y > m) m = y;
  }
  if ((threadIdx.x & 31) == 0) scales[b] = m;
}

__global__ void k_qsgd_quant(const float *x, size_t n, uint32_t bucket, int s, uint64_t seed, uint32_t rank,
                             const float *scales, int32_t *sym) {
  size_t stride = (size_t)gridDim.x * blockDim.x;
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += stride) {
    float v = __ldg(x + i), scale = __ldg(scales + i / bucket);
    int32_t c = 0;
    if (isfinite(v) && scale != 0.0f) {
      float u = ncclz_philox_uniform(seed, (uint64_t)i, rank);
      double t = ((double)fabsf(v) / (double)scale) * (double)s;
      double l = floor(t), frac = t - l;
      double level = l + ((double)u < frac ? 1.0 : 0.0);
      if (level > (double)s) level = (double)s;
      c = (int32_t)level;
      c = v < 0.0f ? -c : c;
    }
    sym[i] = c;
  }
}

__global__ void k_qsgd_dequant(const int32_t *sym, size_t n, uint32_t bucket, double s, const float *scales,
                               float *x) {
  size_t stride = (size_t)gridDim.x * blockDim.x;
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += stride)
    x[i] = (float)((double)sym[i] * (double)__ldg(scales + i / bucket) / s);
}

static ncclzStatus check_qsgd(const ncclzQuantParams *p) {
  if (!p || p->kind != NCCLZ_QUANT_QSGD || !p->qsgd_bucket || (p->qsgd_bits != 2 && p->qsgd_bits != 4 && p->qsgd_bits != 8))
    return ncclzSetError(NCCLZ_ERR_ARG, "cuda qsgd: bad params");
  return NCCLZ_OK;
}

ncclzStatus ncclzCudaQsgdScales(const ncclzQuantParams *p, const float *d_x, size_t n, float *d_scales, cudaStream_t s) {
  ncclzStatus st = check_qsgd(p);
  if (st != NCCLZ_OK) return st;
  size_t nb = nz_ceil(n, p->qsgd_bucket);
  if (nb) k_qsgd_scales<<<(unsigned)nz_ceil(nb, 8), 256, 0, s>>>(d_x, n, p->qsgd_bucket, d_scales);
  NZ_LAUNCHED();
  return NCCLZ_OK;
}

ncclzStatus ncclzCudaQuantizeQsgd(const ncclzQuantParams *p, const float *d_x, size_t n, const float *d_scales,
                                  int32_t *d_sym, cudaStream_t s) {
  ncclzStatus st = check_qsgd(p);
  if (st != NCCLZ_OK) return st;
  k_qsgd_quant<<<grid_for(n), 256, 0, s>>>(d_x, n, p->qsgd_bucket, (1 << (p->qsgd_bits - 1)) - 1, p->seed, p->rank,
                                           d_scales, d_sym);
  NZ_LAUNCHED();
  return NCCLZ_OK;
}

ncclzStatus ncclzCudaDequantizeQsgd(const ncclzQuantParams *p, const int32_t *d_sym, size_t n, const float *d_scales,
                                    float *d_x, cudaStream_t s) {
  ncclzStatus st = check_qsgd(p);
  if (st != NCCLZ_OK) return st;
  k_qsgd_dequant<<<grid_for(n), 256, 0, s>>>(d_sym, n, p->qsgd_bucket, (double)((1 << (p->qsgd_bits - 1)) - 1),
                                             d_scales, d_x);
  NZ_LAUNCHED();
  return NCCLZ_OK;
}
