/* QSGD's rule for one element of a bucket whose scale is finite and above 0 (FORMAT.md, "QSGD"),
 * in the form the CUDA kernels run: one source for them and for the test that holds it to the C
 * reference's plain rule (quant_qsgd.c qsgd_code), built with -fmad=false on the device and
 * without contraction on the host (one rounding per operation). Internal to the codecs layer. */
#ifndef NCCLZ_QSGD_CODE_H
#define NCCLZ_QSGD_CODE_H
#include <math.h>

#include "hd_util.h"

/* RN(p / d) from y = RN(1 / d) without a division: q0 = RN(p y) is within 2 ulps of p / d, the
 * residual p - d q0 is exact (few bits), and RN(q0 + r y) is off the true quotient by at most
 * ulp 2^-52, while a quotient of these operands (p of 53 bits, d a float or an odd level count)
 * is either exact or at least its value 2^-78 away from a midpoint between doubles: the same
 * double as the reference's division. */
NCCLZ_INLINE double ncclz_div_rn(double p, double d, double y) {
  const double q0 = p * y;
  return fma(fma(-q0, d, p), y, q0);
}

/* ceil(T) for 0 <= T < 2^32: on the device the low word of T + 2^52 rounded up (below 2^52 the
 * sum is an integer), one add instead of a floor and a compare. */
NCCLZ_INLINE uint32_t ncclz_ceil_u32(double T) {
#ifdef __CUDA_ARCH__
  return (uint32_t)__double2loint(__dadd_ru(T, 0x1p52));
#else
  return (uint32_t)ceil(T);
#endif
}

/* T of v for scale b (rb = RN(1 / b), sd24 = s 2^24): RN(RN(|v| / b) sd24), which is t 2^24 exactly
 * for the reference's t = RN(RN(|v| / b) s) (a power of two commutes with rounding). */
NCCLZ_INLINE double ncclz_qsgd_T(float v, double b, double rb, double sd24) {
  return ncclz_div_rn(fabs((double)v), b, rb) * sd24;
}

/* The level for T < sd24 and the uniform u = a 2^-24 (a < 2^24): u < t - floor(t) iff
 * a < ceil(T) - 2^24 floor(t), so the reference's floor(t) + [u < t - floor(t)] is this. */
NCCLZ_INLINE int32_t ncclz_qsgd_level(double T, uint32_t a) {
  return (int32_t)((ncclz_ceil_u32(T) + 0xFFFFFFu - a) >> 24);
}

/* The reference's code of v for scale b (0 < b < inf) and s levels, without its floor, fraction and
 * comparison. t >= s (a scale below |v|, given from outside) is the reference's clamp; NaN and Inf
 * code 0. */
NCCLZ_INLINE int32_t ncclz_qsgd_code_fast(float v, double b, double rb, double sd24, int s, uint32_t a) {
  const double T = ncclz_qsgd_T(v, b, rb, sd24);
  int32_t c = T < sd24 ? ncclz_qsgd_level(T, a) : s;
  c = isfinite(v) ? c : 0;
  return v < 0.0f ? -c : c;
}

/* The same for v finite and b the max |x| of v's own bucket: |v| <= b makes T <= sd24, and at
 * T = sd24 the level is s itself, so neither the clamp nor the test for NaN and Inf is needed. */
NCCLZ_INLINE int32_t ncclz_qsgd_code_own(float v, double b, double rb, double sd24, uint32_t a) {
  const int32_t c = ncclz_qsgd_level(ncclz_qsgd_T(v, b, rb, sd24), a);
  return v < 0.0f ? -c : c;
}

#endif
