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

/* The reference's code of v for scale b (0 < b < inf, rb = RN(1 / b)), s levels (sd24 = s 2^24)
 * and the uniform u = a 2^-24 (a < 2^24), without its floor, fraction and comparison: with
 * t = RN(RN(|v| / b) s), T = t 2^24 = RN(RN(|v| / b) sd24) exactly (a power of two commutes with
 * rounding), and u < t - floor(t) iff a < ceil(T) - 2^24 floor(t), so that the level
 * floor(t) + [u < t - floor(t)] is (ceil(T) + 2^24 - 1 - a) >> 24 for every T in [0, sd24).
 * t >= s (a scale below |v|, given from outside) is the reference's clamp; NaN and Inf code 0. */
NCCLZ_INLINE int32_t ncclz_qsgd_code_fast(float v, double b, double rb, double sd24, int s, uint32_t a) {
  const double T = ncclz_div_rn(fabs((double)v), b, rb) * sd24;
#ifdef __CUDA_ARCH__
  const uint32_t K = (uint32_t)__double2loint(__dadd_ru(T, 0x1p52)); /* ceil(T): below 2^52 the sum's low word */
#else
  const uint32_t K = T < sd24 ? (uint32_t)ceil(T) : 0u;
#endif
  int32_t c = T < sd24 ? (int32_t)((K + 0xFFFFFFu - a) >> 24) : s;
  c = isfinite(v) ? c : 0;
  return v < 0.0f ? -c : c;
}

#endif
