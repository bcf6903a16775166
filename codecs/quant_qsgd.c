/* QSGD (Alistarh et al., 2017): per-bucket max-norm scaling and unbiased stochastic rounding to
 * s = 2^(bits-1) - 1 levels per sign (FORMAT.md, "QSGD"). The random numbers come from
 * Philox4x32-10 keyed by the seed with the element index and the rank as counter, so every
 * element's draw is independent of how the array is split into frames or threads. */
#include "ncclz/codecs.h"
#include "hd_util.h"
#include "philox.h"

#include <math.h>

static ncclzStatus check_qsgd_params(const ncclzQuantParams *p) {
  if (!p || p->kind != NCCLZ_QUANT_QSGD)
    return ncclzSetError(NCCLZ_ERR_ARG, "qsgd: params are not for the QSGD quantizer");
  if (p->qsgd_bits != 2 && p->qsgd_bits != 4 && p->qsgd_bits != 8)
    return ncclzSetError(NCCLZ_ERR_ARG, "qsgd: bits=%d must be 2, 4 or 8", p->qsgd_bits);
  if (p->qsgd_bucket == 0) return ncclzSetError(NCCLZ_ERR_ARG, "qsgd: bucket must be >= 1");
  return NCCLZ_OK;
}

size_t ncclzQsgdNumBuckets(const ncclzQuantParams *p, size_t n) {
  size_t b = p->qsgd_bucket;
  return b ? n / b + (n % b != 0) : 0;
}

/* max |x| over [start, end); NaN never compares greater (quantization reports it). */
static float bucket_max_abs(const float *x, size_t start, size_t end) {
  float m = 0.0f;
  for (size_t i = start; i < end; i++) {
    float a = fabsf(x[i]);
    if (a > m) m = a;
  }
  return m;
}

void ncclzQsgdScales(const ncclzQuantParams *p, const float *x, size_t n, float *scales) {
  size_t b = p->qsgd_bucket;
  if (!b) return;
  for (size_t start = 0, k = 0; start < n; start += b, k++)
    scales[k] = bucket_max_abs(x, start, n - start < b ? n : start + b);
}

/* One element: t = (|x| / scale) * s, code = floor(t) + (u < frac), clamped to s, signed. */
static inline int32_t qsgd_code(float x, float scale, int s, float u) {
  if (scale == 0.0f) return 0;
  double t = ((double)fabsf(x) / (double)scale) * (double)s;
  double l = floor(t);
  double frac = t - l;
  double level = l + ((double)u < frac ? 1.0 : 0.0);
  if (level > (double)s) level = (double)s; /* only when shared scales are below |x| */
  int32_t c = (int32_t)level;
  return x < 0.0f ? -c : c;
}

/* The bucket's scale: the shared one when given (checked), otherwise max |x| over the bucket. */
static ncclzStatus bucket_scale(const float *x, size_t start, size_t end, const float *scales, size_t k,
                                float *scale) {
  if (!scales) {
    *scale = bucket_max_abs(x, start, end);
    return NCCLZ_OK;
  }
  *scale = scales[k];
  if (isfinite(*scale) && *scale >= 0.0f) return NCCLZ_OK;
  return ncclzSetError(NCCLZ_ERR_ARG, "qsgd: scale of bucket %zu is %g; scales must be finite and >= 0", k,
                       (double)*scale);
}

int ncclzQsgdLevels(const ncclzQuantParams *p) { return ncclz_qsgd_levels(p->qsgd_bits); }

ncclzStatus ncclzQuantizeQsgd(const ncclzQuantParams *p, const float *x, size_t n, const float *scales,
                              int32_t *codes) {
  ncclzStatus st = check_qsgd_params(p);
  if (st != NCCLZ_OK) return st;
  const int s = ncclz_qsgd_levels(p->qsgd_bits);
  const size_t b = p->qsgd_bucket;
  size_t nonfinite = 0, first = 0;
  uint32_t words[4]; /* Philox's words for the group of four elements `group` */
  uint64_t group = UINT64_MAX;
  for (size_t start = 0, k = 0; start < n; start += b, k++) {
    size_t end = n - start < b ? n : start + b;
    float scale;
    if ((st = bucket_scale(x, start, end, scales, k, &scale)) != NCCLZ_OK) return st;
    for (size_t i = start; i < end; i++) {
      if (!isfinite(x[i])) {
        if (nonfinite++ == 0) first = i;
        codes[i] = 0;
        continue;
      }
      if ((uint64_t)i >> 2 != group) {
        group = (uint64_t)i >> 2;
        ncclz_philox_qsgd_words(p->seed, group, p->rank, words);
      }
      codes[i] = qsgd_code(x[i], scale, s, ncclz_philox_word_uniform(words[i & 3]));
    }
  }
  if (nonfinite)
    return ncclzSetError(NCCLZ_ERR_NONFINITE, "qsgd: %zu NaN/Inf values (first %g at index %zu)", nonfinite,
                         (double)x[first], first);
  return NCCLZ_OK;
}

ncclzStatus ncclzDequantizeQsgd(const ncclzQuantParams *p, const int32_t *codes, size_t n, const float *scales,
                                float *x) {
  ncclzStatus st = check_qsgd_params(p);
  if (st != NCCLZ_OK) return st;
  if (n && !scales) return ncclzSetError(NCCLZ_ERR_ARG, "qsgd: no bucket scales to dequantize with");
  const double s = (double)ncclz_qsgd_levels(p->qsgd_bits);
  const size_t b = p->qsgd_bucket, nb = ncclzQsgdNumBuckets(p, n);
  float scale;
  for (size_t k = 0; k < nb; k++) /* all first: on failure x is left untouched */
    if ((st = bucket_scale(NULL, 0, 0, scales, k, &scale)) != NCCLZ_OK) return st;
  for (size_t start = 0, k = 0; start < n; start += b, k++) {
    size_t end = n - start < b ? n : start + b;
    for (size_t i = start; i < end; i++) x[i] = (float)((double)codes[i] * (double)scales[k] / s);
  }
  return NCCLZ_OK;
}

float ncclzPhiloxUniform(uint64_t seed, uint64_t index, uint32_t rank) {
  return ncclz_philox_uniform(seed, index, rank);
}
