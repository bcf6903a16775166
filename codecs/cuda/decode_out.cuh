/* Where a decoder puts a frame's symbols: the codes themselves (NzCodesOut), or the floats that
 * dequantizing them gives (NzQsgdOut, NzEbOut), so that a decode followed by an elementwise
 * dequantizer reads and writes the data once instead of twice (ncclzCudaDecodeDequantBatch).
 * Each has frame(), the writer of one frame, whose put(i, c) stores symbol i of that frame.
 * The dequantizers' own kernels (eb_dequant_cuda.cu, qsgd_cuda.cu) use the same per-element rules. */
#ifndef NCCLZ_CUDA_DECODE_OUT_CUH
#define NCCLZ_CUDA_DECODE_OUT_CUH

#include "internal.cuh"

/* The QSGD reconstruction of code c: (float)(RN(c scale) / s) as the reference; ncclz_div_rn (rs =
 * RN(1 / s)) instead of the division where the product is finite, which it is wherever the scale
 * is (|c| < 2^31, scale < 2^128): nz_qsgd_value_finite for callers that test the scale once. */
static __device__ __forceinline__ float nz_qsgd_value_finite(int32_t c, double scale, double s, double rs) {
  return (float)ncclz_div_rn((double)c * scale, s, rs);
}
static __device__ __forceinline__ float nz_qsgd_value(int32_t c, double scale, double s, double rs) {
  return isfinite(scale) ? nz_qsgd_value_finite(c, scale, s, rs) : (float)((double)c * scale / s);
}

/* The EB reconstruction of code c (step = 2 abs_eb): the fill value for the fill code. */
static __device__ __forceinline__ float nz_eb_value(int32_t c, double step, int has_fill, float fill) {
  return c == NCCLZ_FILL_CODE && has_fill ? fill : (float)((double)c * step);
}

struct NzCodesOut {
  int32_t *sym; /* frame f at f * frame_symbols */
  typedef NzWords Frame;
  __device__ Frame frame(const NzShape &sh, uint32_t f, const uint8_t *, const NzFrame &) const {
    return {sym + (size_t)f * sh.frame_symbols};
  }
};

/* QSGD: frame f's scales are its own side data (the payload's first words), read where they lie. */
struct NzQsgdOut {
  struct Rule {
    uint32_t bucket, bucket_log2; /* bucket_log2: log2 of a power-of-two bucket, else 0xFF */
    double s, rs;                 /* levels and RN(1 / levels) */
  };
  float *x;
  Rule rule;
  struct Frame {
    float *p;
    const float *scales;
    uint32_t n_scales;
    Rule rule;
    __device__ __forceinline__ void put(size_t i, int32_t c) const {
      const size_t b = rule.bucket_log2 != 0xFFu ? i >> rule.bucket_log2 : i / rule.bucket;
      const double scale = b < n_scales ? (double)__ldg(scales + b) : 0.0; /* a corrupt frame's stays in bounds */
      p[i] = nz_qsgd_value(c, scale, rule.s, rule.rs);
    }
  };
  __device__ Frame frame(const NzShape &sh, uint32_t f, const uint8_t *in, const NzFrame &F) const {
    return {x + (size_t)f * sh.frame_symbols, (const float *)(in + F.src + 64), F.side_bytes / 4, rule};
  }
};

/* EB without Lorenzo: the bound from the device (d_abs_eb) when the quantizer resolved it there. */
struct NzEbOut {
  float *x;
  double abs_eb;
  const double *d_abs_eb;
  int has_fill;
  float fill;
  struct Frame {
    float *p;
    double step;
    int has_fill;
    float fill;
    __device__ __forceinline__ void put(size_t i, int32_t c) const { p[i] = nz_eb_value(c, step, has_fill, fill); }
  };
  __device__ Frame frame(const NzShape &sh, uint32_t f, const uint8_t *, const NzFrame &) const {
    return {x + (size_t)f * sh.frame_symbols, 2.0 * (d_abs_eb ? *d_abs_eb : abs_eb), has_fill, fill};
  }
};

/* The decoders behind ncclzCudaDecodeBatch and ncclzCudaDecodeDequantBatch, for each Out above
 * (instantiated beside their kernels). */
template <typename Out>
ncclzStatus nz_fixedlen_decode(const NzShape &sh, const uint8_t *d_in, const Out &out, NzFrame *fr, cudaStream_t s);
template <typename Out> /* sh: the FIXEDLEN shape (its p0, the batch's T); mask without HUFFMAN */
ncclzStatus nz_one_decode(const NzShape &sh, unsigned mask, const uint8_t *d_in, const uint64_t *d_offsets,
                          size_t in_stride, size_t in_len, const Out &out, float *d_scales, uint32_t *d_status,
                          NzOneState *st, cudaStream_t s);
template <typename Out>
ncclzStatus nz_huffman_decode(const NzShape &sh, const uint8_t *d_in, const Out &out, NzFrame *fr, uint32_t *lut,
                              uint32_t *tables, cudaStream_t s);
#endif
