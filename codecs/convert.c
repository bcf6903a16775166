/* Float views of the input dtypes. Widening (bf16, f16 -> f32) is exact; narrowing rounds to
 * nearest, ties to even, with subnormals, infinities and NaN handled. Written with integer bit
 * manipulation so that the result does not depend on the compiler's _Float16 support or on
 * the FPU's rounding mode. */
#include "ncclz/codecs.h"

#include <math.h>
#include <string.h>

static uint32_t f32_bits(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
}

static float f32_from_bits(uint32_t u) {
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

/* ---------------------------------------------------------------- bf16 */

static float bf16_to_f32(uint16_t h) { return f32_from_bits((uint32_t)h << 16); }

static uint16_t f32_to_bf16(float f) {
  uint32_t u = f32_bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) {
    /* NaN: keep sign and the top payload bits; set the quiet bit only if truncation would
     * otherwise turn the NaN into an infinity (so every bf16 NaN round-trips unchanged). */
    uint16_t h = (uint16_t)(u >> 16);
    return (h & 0x7f) ? h : (uint16_t)(h | 0x40);
  }
  /* Adding 0x7fff plus the lowest kept bit rounds half to even; a carry into the exponent is
   * the correct result, up to and including rounding to infinity. */
  u += 0x7fffu + ((u >> 16) & 1u);
  return (uint16_t)(u >> 16);
}

/* ----------------------------------------------------------------- f16 */

static float f16_to_f32(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu;
  if (exp == 0x1f) return f32_from_bits(sign | 0x7f800000u | mant << 13); /* inf, NaN */
  if (exp != 0) return f32_from_bits(sign | (exp + 112u) << 23 | mant << 13);
  /* Zero or subnormal: mant * 2^-24, exact in float. */
  float v = (float)mant * 0x1p-24f;
  return sign ? -v : v;
}

/* Shifts m right by s (1 <= s <= 31) rounding half to even. */
static uint32_t shift_rne(uint32_t m, uint32_t s) {
  uint32_t kept = m >> s, rem = m & ((1u << s) - 1u), half = 1u << (s - 1);
  return kept + (rem > half || (rem == half && (kept & 1u)));
}

static uint16_t f32_to_f16(float f) {
  uint32_t u = f32_bits(f);
  uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
  uint32_t a = u & 0x7fffffffu;
  if (a > 0x7f800000u) { /* NaN: as for bf16, keep the payload's top bits, stay a NaN */
    uint16_t m = (uint16_t)((a >> 13) & 0x3ffu);
    return (uint16_t)(sign | 0x7c00u | (m ? m : 0x200u));
  }
  if (a >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u); /* >= 65520 rounds to inf (and inf) */
  uint32_t exp = a >> 23;
  if (exp >= 113) { /* normal half: rebias the exponent, round 13 mantissa bits away */
    uint32_t r = shift_rne(a - (112u << 23), 13);
    return (uint16_t)(sign | r);
  }
  /* Subnormal half (or zero): value / 2^-24 = m * 2^(exp-126) with the implicit bit. */
  if (exp < 102) return sign; /* below 2^-25: rounds to zero */
  uint32_t m = (a & 0x7fffffu) | 0x800000u;
  return (uint16_t)(sign | shift_rne(m, 126u - exp));
}

/* ----------------------------------------------------------------- i32 */

/* Nearest integer (ties to even), saturated; NaN gives 0. */
static int32_t f32_to_i32(float f) {
  if (isnan(f)) return 0;
  if (f >= 2147483648.0f) return INT32_MAX;
  if (f < -2147483648.0f) return INT32_MIN;
  return (int32_t)nearbyintf(f);
}

/* ---------------------------------------------------------------- API */

void ncclzToFloat(const void *src, ncclzDtype dtype, size_t n, float *dst) {
  const uint16_t *h = src;
  const int32_t *i = src;
  switch (dtype) {
  case NCCLZ_DTYPE_F32: memmove(dst, src, n * sizeof(float)); break;
  case NCCLZ_DTYPE_BF16: for (size_t k = 0; k < n; k++) dst[k] = bf16_to_f32(h[k]); break;
  case NCCLZ_DTYPE_F16: for (size_t k = 0; k < n; k++) dst[k] = f16_to_f32(h[k]); break;
  case NCCLZ_DTYPE_I32: for (size_t k = 0; k < n; k++) dst[k] = (float)i[k]; break;
  default: break;
  }
}

void ncclzFromFloat(const float *src, size_t n, ncclzDtype dtype, void *dst) {
  uint16_t *h = dst;
  int32_t *i = dst;
  switch (dtype) {
  case NCCLZ_DTYPE_F32: memmove(dst, src, n * sizeof(float)); break;
  case NCCLZ_DTYPE_BF16: for (size_t k = 0; k < n; k++) h[k] = f32_to_bf16(src[k]); break;
  case NCCLZ_DTYPE_F16: for (size_t k = 0; k < n; k++) h[k] = f32_to_f16(src[k]); break;
  case NCCLZ_DTYPE_I32: for (size_t k = 0; k < n; k++) i[k] = f32_to_i32(src[k]); break;
  default: break;
  }
}
