/* The error-bounded quantizer's rule for one element (FORMAT.md, "Error-bounded"), one source for
 * the C reference and the CUDA kernels (built with -fmad=false: one rounding per operation).
 * Internal to the codecs layer. */
#ifndef NCCLZ_EB_CODE_H
#define NCCLZ_EB_CODE_H
#include <math.h>

#include "hd_util.h"

typedef enum {
  NCCLZ_EB_OK = 0,
  NCCLZ_EB_BEYOND_LIMIT, /* |code| would reach NCCLZ_CODE_LIMIT */
  NCCLZ_EB_UNREACHABLE,  /* no code within +-1 reconstructs within the bound (float rounding) */
} ncclzEbOutcome;

/* Whether code c reconstructs x within bound: recon = (float)(c * step), |x - recon| <= bound. */
NCCLZ_INLINE int ncclz_eb_within(double x, int32_t c, double step, double bound) {
  float recon = (float)((double)c * step);
  return fabs(x - (double)recon) <= bound;
}

/* The rule as FORMAT.md writes it: code = floor(x / step + 0.5), then code-1, code+1 if the
 * float rounding of the reconstruction still broke the bound (abs_eb leaves room for it, so
 * this is a safety net). x is finite. */
NCCLZ_INLINE ncclzEbOutcome ncclz_eb_code_exact(float xf, double bound, double step, int32_t *code) {
  double x = (double)xf;
  double t = floor(x / step + 0.5);
  if (!(fabs(t) < (double)NCCLZ_CODE_LIMIT)) return NCCLZ_EB_BEYOND_LIMIT; /* before the int cast */
  int32_t c = (int32_t)t;
  if (!ncclz_eb_within(x, c, step, bound)) {
    if (ncclz_eb_within(x, c - 1, step, bound))
      c -= 1;
    else if (ncclz_eb_within(x, c + 1, step, bound))
      c += 1;
    else
      return NCCLZ_EB_UNREACHABLE;
  }
  if (c <= -NCCLZ_CODE_LIMIT || c >= NCCLZ_CODE_LIMIT) return NCCLZ_EB_BEYOND_LIMIT;
  *code = c;
  return NCCLZ_EB_OK;
}

/* The same outcome and code as ncclz_eb_code_exact, without its division and float round trip
 * where a cheap certificate shows they cannot change the answer (almost every element); the
 * exact rule otherwise. inv_step = 1.0 / step. For the GPU, where the exact rule's binary64
 * division and five conversions (a quarter of the double-precision rate each) are most of the
 * quantizer's instructions; on x86-64 they are cheap and this path measured slower
 * (bench_eb_rule), so the C quantizer keeps the exact rule.
 *
 * Why the fast answer is the exact one (u = 2^-53, Q = x / step as a real number):
 *  - y = fl(fl(x * inv_step) + 0.5) differs from the rule's fl(fl(x / step) + 0.5) by at most
 *    u (5.02 |Q| + 1.01), under 2^-24 while |y| < 2^26. When y is more than 2^-20 from the
 *    integers around it, both lie strictly between the same two integers: same floor t, and
 *    |t| < 2^26 passes both code-limit checks.
 *  - The rule keeps t when |x - recon| <= bound, recon = (float)v, v = fl(t * step) (t is an
 *    integer, so (double)(int32_t)t == t). Exactly, |x - recon| <= |x - v| + |v - recon|, and
 *    |v - recon| <= |v| 2^-24 + 2^-150 (half a float ulp, subnormals included) when |v| < 2^127
 *    (no overflow to inf). The computed (a + b)(1 + 2^-40) bounds that sum from above, rounding
 *    included (and a fused multiply-add in a, which b's extra |v| 2^-50 covers); if it is <= bound, the exact |x - recon| is too, and so is its rounding: the rule
 *    keeps t. tests/test_quant.c compares both on random, boundary and limit cases.
 * ncclz_eb_code_fast is that certificate alone: 1 with *code set when it holds, 0 when the exact
 * rule must decide (non-finite x included); the GPU kernels call the exact rule out of line. */
NCCLZ_INLINE int ncclz_eb_code_fast(float xf, double bound, double step, double inv_step, int32_t *code) {
  const double x = (double)xf;
  const double y = x * inv_step + 0.5;
  const double t = floor(y), d = y - t; /* exact when |y| < 2^26: y and t are within 1 of each other */
  const double v = t * step;
  /* 2^-50 more than the float ulp: room for a compiler that fuses x - t * step */
  const double a = fabs(x - v), b = fabs(v) * (0x1p-24 + 0x1p-50) + 0x1p-150;
  /* every test evaluated, no early exit: the same answer, and a GPU thread's elements interleave */
  const int ok = (fabs(y) < 0x1p26) & (d > 0x1p-20) & (d < 1.0 - 0x1p-20) & (fabs(v) < 0x1p127) &
                 ((a + b) * (1.0 + 0x1p-40) <= bound);
  if (ok) *code = (int32_t)t;
  return ok;
}
NCCLZ_INLINE ncclzEbOutcome ncclz_eb_code(float xf, double bound, double step, double inv_step, int32_t *code) {
  return ncclz_eb_code_fast(xf, bound, step, inv_step, code) ? NCCLZ_EB_OK
                                                             : ncclz_eb_code_exact(xf, bound, step, code);
}
#endif
