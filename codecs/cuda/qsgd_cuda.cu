/* QSGD on the GPU: the bucket scales, the codes by stochastic rounding with the reference's
 * Philox stream and rule (codecs/qsgd_code.h, through nz_qsgd_fast), scales and codes in one pass
 * where the buckets allow, and the dequantizer; codes in 32 bits (the executor's reductions add
 * them) or 8 (every QSGD code fits a signed byte). */
#include <cub/warp/warp_reduce.cuh>
#include <cuda/functional>

#include "decode_out.cuh"

__global__ void k_qsgd_scales(const float *x, size_t n, uint32_t bucket, float *scales) {
  nz_pdl_enter();
  size_t b = blockIdx.x * (size_t)(blockDim.x / 32) + threadIdx.x / 32;
  size_t start = b * bucket;
  if (start >= n) return;
  size_t end = n - start < bucket ? n : start + bucket;
  float m = 0.0f;
  for (size_t i = start + (threadIdx.x & 31); i < end; i += 32) {
    float a = fabsf(__ldg(x + i));
    if (a > m) m = a;
  }
  typedef cub::WarpReduce<float> Reduce; /* one warp per bucket */
  __shared__ typename Reduce::TempStorage ts[8];
  m = Reduce(ts[threadIdx.x / 32]).Reduce(m, cuda::maximum<float>());
  if ((threadIdx.x & 31) == 0) scales[b] = m;
}

template <typename T> /* int32_t codes, or int8_t (every QSGD code fits: |c| <= 127) */
__global__ void k_qsgd_quant(const float *x, size_t n, uint32_t bucket, int s, uint64_t seed, uint32_t rank,
                             const float *scales, T *sym) {
  nz_pdl_enter();
  size_t stride = (size_t)gridDim.x * blockDim.x;
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += stride) {
    const float scale = __ldg(scales + i / bucket);
    sym[i] = (T)nz_qsgd_one(__ldg(x + i), scale, nz_qsgd_bucket(scale), s * 0x1p24, s, seed, rank, i);
  }
}

/* Scales and codes in one pass: a warp a bucket of 128 V elements (x and sym 16-byte aligned),
 * each lane V float4 loads in flight; the bucket's max |x| by a warp reduction (NaN never
 * compares greater, 0 to start: the reference's bucket_max_abs, in any order), then the codes
 * from the registers. Two passes over x (scales, then codes) ran at about 430 GB/s on 256 MiB. */
template <int V, typename T>
__global__ void __launch_bounds__(256, 4) k_qsgd_fused(const float *x, size_t n, uint32_t bucket, int s, uint64_t seed,
                                                    uint32_t rank, float *scales, T *sym) {
  nz_pdl_enter();
  const uint32_t lane = threadIdx.x & 31;
  const size_t nb = (n + bucket - 1) / bucket, warps = (size_t)gridDim.x * (blockDim.x / 32);
  for (size_t b = blockIdx.x * (size_t)(blockDim.x / 32) + threadIdx.x / 32; b < nb; b += warps) {
    const size_t q0 = b * (bucket / 4); /* the bucket's first float4 */
    float4 v[V];
    float m = 0.0f;
#pragma unroll
    for (int k = 0; k < V; k++) {
      v[k] = nz_load4(x, 4 * (q0 + lane + 32 * k), n, NAN); /* NaN where there is no element: never the max */
      m = nz_max_abs4(v[k], m);
    }
    m = nz_warp_max(m);
    if (lane == 0) scales[b] = m;
    const NzQsgdBucket bk = nz_qsgd_bucket(m);
    int4 c[V];
    if (bk.fast) { /* the warp's bucket: one branch */
      const double sd24 = s * 0x1p24;
#pragma unroll
      for (int k = 0; k < V; k++) {
        uint32_t w[4]; /* one Philox call for the lane's four elements (group q0 + lane + 32 k) */
        nz_qsgd_words(seed, rank, q0 + lane + 32 * k, w);
#pragma unroll
        for (int j = 0; j < 4; j++) asm volatile("" : "+r"(w[j])); /* kept out of the code's select */
        c[k].x = nz_qsgd_fast(v[k].x, bk, sd24, s, w[0]);
        c[k].y = nz_qsgd_fast(v[k].y, bk, sd24, s, w[1]);
        c[k].z = nz_qsgd_fast(v[k].z, bk, sd24, s, w[2]);
        c[k].w = nz_qsgd_fast(v[k].w, bk, sd24, s, w[3]);
      }
    } else {
#pragma unroll
      for (int k = 0; k < V; k++) {
        const size_t e = 4 * (q0 + lane + 32 * k);
        c[k] = make_int4(nz_qsgd_code(v[k].x, m, s, seed, rank, e), nz_qsgd_code(v[k].y, m, s, seed, rank, e + 1),
                         nz_qsgd_code(v[k].z, m, s, seed, rank, e + 2), nz_qsgd_code(v[k].w, m, s, seed, rank, e + 3));
      }
    }
#pragma unroll
    for (int k = 0; k < V; k++) nz_store4(sym, 4 * (q0 + lane + 32 * k), n, c[k]);
  }
}

/* Four codes from group q: one int4 load, or one 32-bit load of four 8-bit codes. */
static __device__ __forceinline__ int4 qd_load4(const int32_t *sym, size_t q) { return __ldg((const int4 *)sym + q); }
static __device__ __forceinline__ int4 qd_load4(const int8_t *sym, size_t q) {
  const char4 c = __ldg((const char4 *)sym + q);
  return make_int4(c.x, c.y, c.z, c.w);
}

/* Four codes in, float4 out (QD_UNROLL in flight a thread) when both are aligned (16 bytes) and a
 * bucket holds whole groups of 4 (group q in bucket q / g4, g4 = bucket / 4 as NcclzDivU32 where
 * the groups' count fits 32 bits); the rest scalar. rs = RN(1 / s). T: int32_t or int8_t codes. */
#define QD_UNROLL 4
template <typename T>
__global__ void __launch_bounds__(256) k_qsgd_dequant(const T *sym, size_t n, uint32_t bucket, NcclzDivU32 g4, double s,
                                                      double rs, const float *scales, float *x) {
  nz_pdl_enter();
  const size_t gid = blockIdx.x * (size_t)blockDim.x + threadIdx.x, stride = (size_t)gridDim.x * blockDim.x;
  size_t done = 0;
  if ((((uintptr_t)sym | (uintptr_t)x) & 15) == 0 && bucket % 4 == 0) {
    const size_t n4 = n / 4;
    const bool groups32 = n4 <= UINT32_MAX;
    for (size_t q0 = gid; q0 < n4; q0 += QD_UNROLL * stride) {
      int4 c[QD_UNROLL];
      float sc[QD_UNROLL];
#pragma unroll
      for (int u = 0; u < QD_UNROLL; u++) {
        const size_t q = q0 + u * stride;
        c[u] = q < n4 ? qd_load4(sym, q) : int4{};
        sc[u] = q < n4 ? __ldg(scales + (groups32 ? ncclz_divu32((uint32_t)q, g4) : 4 * q / bucket)) : 0.0f;
      }
#pragma unroll
      for (int u = 0; u < QD_UNROLL; u++) {
        const size_t q = q0 + u * stride;
        if (q >= n4) break;
        const double scale = sc[u];
        float4 y;
        if (isfinite(scale)) /* one test for the four (a bucket holds whole groups) */
          y = make_float4(nz_qsgd_value_finite(c[u].x, scale, s, rs), nz_qsgd_value_finite(c[u].y, scale, s, rs),
                          nz_qsgd_value_finite(c[u].z, scale, s, rs), nz_qsgd_value_finite(c[u].w, scale, s, rs));
        else
          y = make_float4(nz_qsgd_value(c[u].x, scale, s, rs), nz_qsgd_value(c[u].y, scale, s, rs),
                          nz_qsgd_value(c[u].z, scale, s, rs), nz_qsgd_value(c[u].w, scale, s, rs));
        ((float4 *)x)[q] = y;
      }
    }
    done = 4 * n4;
  }
  for (size_t i = done + gid; i < n; i += stride) x[i] = nz_qsgd_value(sym[i], (double)__ldg(scales + i / bucket), s, rs);
}

static ncclzStatus check_qsgd(const ncclzQuantParams *p) {
  if (!p || p->kind != NCCLZ_QUANT_QSGD || !p->qsgd_bucket || (p->qsgd_bits != 2 && p->qsgd_bits != 4 && p->qsgd_bits != 8))
    return ncclzSetError(NCCLZ_ERR_ARG, "cuda qsgd: bad params");
  return NCCLZ_OK;
}

ncclzStatus ncclzCudaQsgdScales(const ncclzQuantParams *p, const float *d_x, size_t n, float *d_scales, cudaStream_t s) {
  ncclzStatus st = check_qsgd(p);
  if (st != NCCLZ_OK) return st;
  size_t nb = ncclz_ceil_div(n, p->qsgd_bucket);
  if (nb) nz_launch(k_qsgd_scales, (unsigned)ncclz_ceil_div(nb, 8), 256, 0, s, d_x, n, p->qsgd_bucket, d_scales);
  NZ_LAUNCHED();
  return NCCLZ_OK;
}

template <typename T>
static ncclzStatus qsgd_codes(const ncclzQuantParams *p, const float *d_x, size_t n, const float *d_scales, T *d_sym,
                              cudaStream_t s) {
  ncclzStatus st = check_qsgd(p);
  if (st != NCCLZ_OK) return st;
  nz_launch(k_qsgd_quant<T>, nz_grid_for(n), 256, 0, s, d_x, n, p->qsgd_bucket, ncclz_qsgd_levels(p->qsgd_bits), p->seed,
            p->rank, d_scales, d_sym);
  NZ_LAUNCHED();
  return NCCLZ_OK;
}

ncclzStatus ncclzCudaQuantizeQsgd(const ncclzQuantParams *p, const float *d_x, size_t n, const float *d_scales,
                                  int32_t *d_sym, cudaStream_t s) {
  return qsgd_codes(p, d_x, n, d_scales, d_sym, s);
}

/* Scales and codes in one pass where the buckets allow (k_qsgd_fused), else the two passes. */
template <typename T>
static ncclzStatus qsgd_quantize(const ncclzQuantParams *p, const float *d_x, size_t n, float *d_scales, T *d_sym,
                                 cudaStream_t s) {
  ncclzStatus st = check_qsgd(p);
  if (st != NCCLZ_OK || !n) return st;
  const uint32_t b = p->qsgd_bucket, V = b / 128;
  if (b % 128 || V > 4 || V == 3 || !nz_aligned16(d_x, d_sym)) { /* the two passes */
    if ((st = ncclzCudaQsgdScales(p, d_x, n, d_scales, s)) != NCCLZ_OK) return st;
    return qsgd_codes(p, d_x, n, d_scales, d_sym, s);
  }
  const size_t blocks = ncclz_ceil_div(ncclz_ceil_div(n, b), 8); /* 8 warps, a bucket each */
  const unsigned grid = nz_grid_cap(blocks);
  const int lv = ncclz_qsgd_levels(p->qsgd_bits);
  if (V == 1) nz_launch(k_qsgd_fused<1, T>, grid, 256, 0, s, d_x, n, b, lv, p->seed, p->rank, d_scales, d_sym);
  else if (V == 2) nz_launch(k_qsgd_fused<2, T>, grid, 256, 0, s, d_x, n, b, lv, p->seed, p->rank, d_scales, d_sym);
  else nz_launch(k_qsgd_fused<4, T>, grid, 256, 0, s, d_x, n, b, lv, p->seed, p->rank, d_scales, d_sym);
  NZ_LAUNCHED();
  return NCCLZ_OK;
}

ncclzStatus ncclzCudaQsgdQuantize(const ncclzQuantParams *p, const float *d_x, size_t n, float *d_scales,
                                 int32_t *d_sym, cudaStream_t s) {
  return qsgd_quantize(p, d_x, n, d_scales, d_sym, s);
}

ncclzStatus ncclzCudaQsgdQuantize8(const ncclzQuantParams *p, const float *d_x, size_t n, float *d_scales,
                                  int8_t *d_sym8, cudaStream_t s) {
  return qsgd_quantize(p, d_x, n, d_scales, d_sym8, s);
}

template <typename T>
static ncclzStatus qsgd_dequantize(const ncclzQuantParams *p, const T *d_sym, size_t n, const float *d_scales,
                                   float *d_x, cudaStream_t s) {
  ncclzStatus st = check_qsgd(p);
  if (st != NCCLZ_OK) return st;
  const double lv = (double)ncclz_qsgd_levels(p->qsgd_bits);
  const NcclzDivU32 g4 = ncclz_divu32_make(p->qsgd_bucket % 4 ? 1 : p->qsgd_bucket / 4);
  nz_launch(k_qsgd_dequant<T>, nz_grid_for(n), 256, 0, s, d_sym, n, p->qsgd_bucket, g4, lv, 1.0 / lv, d_scales, d_x);
  NZ_LAUNCHED();
  return NCCLZ_OK;
}

ncclzStatus ncclzCudaDequantizeQsgd(const ncclzQuantParams *p, const int32_t *d_sym, size_t n, const float *d_scales,
                                    float *d_x, cudaStream_t s) {
  return qsgd_dequantize(p, d_sym, n, d_scales, d_x, s);
}

ncclzStatus ncclzCudaDequantizeQsgd8(const ncclzQuantParams *p, const int8_t *d_sym8, size_t n, const float *d_scales,
                                     float *d_x, cudaStream_t s) {
  return qsgd_dequantize(p, d_sym8, n, d_scales, d_x, s);
}
