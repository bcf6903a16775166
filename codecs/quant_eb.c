/* Error-bounded uniform quantization (FORMAT.md, "Error-bounded") and the resolution of a
 * spec against the data (shape, finite check, REL range, fill values, code range).
 *
 * All arithmetic is binary64 with one rounding per operation, so that the CUDA kernels (compiled
 * with -fmad=false) produce the same codes: the element rule is one source for both
 * (eb_code.h). The C side runs the rule in FORMAT.md's order: on x86-64 its division and
 * conversions are cheap and the GPU's fast path measured no faster (bench_eb_rule: 0.76-0.82x). */
#include "ncclz/codecs.h"
#include "eb_code.h"
#include "hd_util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* A huge fill=V snaps to a data value within this relative distance when none equals V. */
#define EB_FILL_SNAP_REL 1e-3

/* ------------------------------------------------------- one element: eb_code.h */

/* Where the first offender of one kind was seen, and how many there were. */
typedef struct {
  size_t count, first;
  float value;
} Offenders;

static void offender_add(Offenders *o, size_t i, float v) {
  if (o->count++ == 0) {
    o->first = i;
    o->value = v;
  }
}

static ncclzStatus report_nonfinite(const Offenders *o) {
  return ncclzSetError(NCCLZ_ERR_NONFINITE,
                       "eb: %zu NaN/Inf values (first %g at index %zu); error-bounded quantization needs "
                       "finite data",
                       o->count, (double)o->value, o->first);
}

static ncclzStatus report_beyond(const Offenders *o, double abs_eb) {
  return ncclzSetError(NCCLZ_ERR_RANGE,
                       "eb: %zu values are out of range (|x| >= %g, or |x|/(2*abs_eb) >= 2^27 with "
                       "abs_eb=%g), first %.9g at index %zu; if they are fill values, add fill=%.9g "
                       "to the spec",
                       o->count, (double)NCCLZ_EB_HUGE_VALUE, abs_eb, (double)o->value, o->first,
                       (double)o->value);
}

static ncclzStatus report_unreachable(const Offenders *o, double bound) {
  return ncclzSetError(NCCLZ_ERR_RANGE,
                       "eb: %zu values cannot be kept within bound=%g in float32 (first %.9g at index "
                       "%zu): rounding the reconstruction to float breaks the bound; ncclzQuantResolve "
                       "leaves room for it (abs_eb = bound - ulp/2)",
                       o->count, bound, (double)o->value, o->first);
}

/* The bound the quantizer checks: params built by hand without `bound` get abs_eb itself. */
static double eb_bound(const ncclzQuantParams *p) { return p->bound > 0 ? p->bound : p->abs_eb; }

static ncclzStatus check_eb_params(const ncclzQuantParams *p) {
  if (!p || p->kind != NCCLZ_QUANT_EB)
    return ncclzSetError(NCCLZ_ERR_ARG, "eb: params are not for the error-bounded quantizer");
  if (!(p->abs_eb > 0) || !isfinite(2.0 * p->abs_eb))
    return ncclzSetError(NCCLZ_ERR_ARG, "eb: abs_eb=%g must be positive and finite", p->abs_eb);
  if (p->bound != 0 && !(p->bound >= p->abs_eb && isfinite(p->bound)))
    return ncclzSetError(NCCLZ_ERR_ARG, "eb: bound=%g must be finite and >= abs_eb=%g", p->bound, p->abs_eb);
  return NCCLZ_OK;
}

/* ---------------------------------------------------------- quantize */

ncclzStatus ncclzQuantizeEB(const ncclzQuantParams *p, const float *x, size_t n, int32_t *codes) {
  ncclzStatus st = check_eb_params(p);
  if (st != NCCLZ_OK) return st;
  const double bound = eb_bound(p), step = 2.0 * p->abs_eb;
  Offenders nonfinite = {0}, beyond = {0}, unreachable = {0};
  for (size_t i = 0; i < n; i++) {
    float v = x[i];
    if (!isfinite(v)) {
      offender_add(&nonfinite, i, v);
      codes[i] = 0;
    } else if (p->has_fill && v == p->fill_value) {
      codes[i] = NCCLZ_FILL_CODE;
    } else {
      ncclzEbOutcome o = ncclz_eb_code_exact(v, bound, step, &codes[i]);
      if (o != NCCLZ_EB_OK) {
        offender_add(o == NCCLZ_EB_BEYOND_LIMIT ? &beyond : &unreachable, i, v);
        codes[i] = 0;
      }
    }
  }
  if (nonfinite.count) return report_nonfinite(&nonfinite);
  if (beyond.count) return report_beyond(&beyond, p->abs_eb);
  if (unreachable.count) return report_unreachable(&unreachable, bound);
  return NCCLZ_OK;
}

ncclzStatus ncclzDequantizeEB(const ncclzQuantParams *p, const int32_t *codes, size_t n, float *x) {
  ncclzStatus st = check_eb_params(p);
  if (st != NCCLZ_OK) return st;
  const double step = 2.0 * p->abs_eb;
  int overflow = 0;
  for (size_t i = 0; i < n; i++) {
    int32_t c = codes[i];
    if (c == NCCLZ_FILL_CODE) {
      if (!p->has_fill)
        return ncclzSetError(NCCLZ_ERR_CORRUPT, "eb: fill code at index %zu but no fill value is set", i);
      x[i] = p->fill_value;
    } else {
      x[i] = (float)((double)c * step);
      overflow |= isinf(x[i]);
    }
  }
  /* The quantizer kept every reconstruction within the bound of a finite float: codes that
   * overflow float32 come from a corrupt stream. */
  for (size_t i = 0; overflow && i < n; i++)
    if (isinf(x[i]))
      return ncclzSetError(NCCLZ_ERR_CORRUPT, "eb: code %d at index %zu times the step %g overflows float32",
                           (int)codes[i], i, step);
  return NCCLZ_OK;
}

/* ------------------------------------------------------------ resolve */

/* dims -> [d0][d1][d2] with missing leading dims 1; checks the product and the Lorenzo rank. */
static ncclzStatus resolve_dims(const uint32_t *dims, int ndims, size_t n, int lorenzo, ncclzQuantParams *p) {
  if (!dims) ndims = 0;
  if (ndims < 0 || ndims > 3)
    return ncclzSetError(NCCLZ_ERR_ARG, "dims: %d dimensions given, 1 to 3 are supported", ndims);
  int given = ndims ? ndims : 1;
  if (lorenzo > given)
    return ncclzSetError(NCCLZ_ERR_ARG, "eb: lorenzo=%dd needs %d dims (e.g. --dims AxBxC), %d given",
                         lorenzo, lorenzo, given);
  p->dims[0] = p->dims[1] = p->dims[2] = 1;
  if (ndims == 0) {
    if (n > UINT32_MAX && lorenzo)
      return ncclzSetError(NCCLZ_ERR_ARG, "dims: %zu elements do not fit one 32-bit dimension", n);
    p->dims[2] = n > UINT32_MAX ? UINT32_MAX : (uint32_t)n;
    return NCCLZ_OK;
  }
  for (int k = 0; k < ndims; k++) p->dims[3 - ndims + k] = dims[k];
  if (ncclz_dims_describe(p->dims[0], p->dims[1], p->dims[2], n)) return NCCLZ_OK;
  const uint32_t *d = p->dims;
  uint64_t plane = (uint64_t)d[1] * d[2];
  if (d[0] && plane > UINT64_MAX / d[0])
    return ncclzSetError(NCCLZ_ERR_ARG, "dims: %u x %u x %u overflows 64 bits; the data has %zu elements", d[0], d[1],
                         d[2], n);
  return ncclzSetError(NCCLZ_ERR_ARG, "dims: %u x %u x %u = %llu elements, but the data has %zu", d[0], d[1], d[2],
                       (unsigned long long)(plane * d[0]), n);
}

static ncclzStatus scan_nonfinite(const float *x, size_t n) {
  Offenders o = {0};
  for (size_t i = 0; i < n; i++)
    if (!isfinite(x[i])) offender_add(&o, i, x[i]);
  return o.count ? report_nonfinite(&o) : NCCLZ_OK;
}

/* When no element equals a huge fill value exactly, takes the one value within EB_FILL_SNAP_REL
 * of it (users write the rounded 9.97e36 for netCDF's 9.96921e36). Several distinct near values
 * are ambiguous; none at all leaves the fill value as given. Ordinary fill values (-999) are
 * written exactly and never snapped, so that they cannot capture real data. */
static ncclzStatus snap_fill(const float *x, size_t n, float *fill) {
  if (!(fabsf(*fill) >= NCCLZ_EB_HUGE_VALUE)) return NCCLZ_OK;
  const double v = *fill, tol = EB_FILL_SNAP_REL * fabs(v);
  int found = 0;
  float near = 0;
  for (size_t i = 0; i < n; i++) {
    if (x[i] == *fill) return NCCLZ_OK;
    if (fabs((double)x[i] - v) > tol) continue;
    if (found && x[i] != near)
      return ncclzSetError(NCCLZ_ERR_ARG,
                           "eb: fill=%.9g matches no value exactly and several values are near it "
                           "(%.9g, %.9g); give the exact fill value",
                           v, (double)near, (double)x[i]);
    found = 1;
    near = x[i];
  }
  if (found) *fill = near;
  return NCCLZ_OK;
}

/* Half the float32 spacing (ulp) in the binade of m >= 0; the subnormal spacing below 2^-126. */
static double half_float_ulp(double m) {
  if (!(m >= 0x1p-126)) return 0x1p-150;
  int e;
  frexp(m, &e); /* m in [2^(e-1), 2^e): floats there are 2^(e-24) apart */
  return ldexp(1.0, e - 25);
}

/* FORMAT.md: bound = X (abs) or X * (hi - lo) (rel; X * max(|lo|, 1) when hi == lo), and the
 * half-step abs_eb = bound - ulp(2 max|x|)/2. Why the margin: with step = 2*bound, a value
 * halfway between two levels is `bound` from both, and rounding the reconstruction to float
 * pushes both beyond it (0.04% of TREFHT at abs=0.01), so no code would do. */
static void eb_bounds(const ncclzQuantSpec *spec, float lo, float hi, double *bound, double *abs_eb) {
  if (!spec->eb_is_rel)
    *bound = spec->eb;
  else if (hi == lo)
    *bound = spec->eb * fmax(fabs((double)lo), 1.0);
  else
    *bound = spec->eb * ((double)hi - (double)lo);
  double max_abs = fmax(fabs((double)lo), fabs((double)hi));
  *abs_eb = *bound - half_float_ulp(2.0 * max_abs);
}

/* min and max over the finite, non-fill, non-huge values (both 0 when there are none). */
static void value_range(const ncclzQuantParams *p, const float *x, size_t n, float *lo, float *hi) {
  int any = 0;
  *lo = *hi = 0;
  for (size_t i = 0; i < n; i++) {
    float v = x[i];
    if ((p->has_fill && v == p->fill_value) || !(fabsf(v) < NCCLZ_EB_HUGE_VALUE)) continue;
    if (!any || v < *lo) *lo = v;
    if (!any || v > *hi) *hi = v;
    any = 1;
  }
}

/* Runs the quantizer's own per-element rule, so that a resolved spec never fails later. */
static ncclzStatus scan_code_range(const ncclzQuantParams *p, const float *x, size_t n) {
  const double step = 2.0 * p->abs_eb;
  Offenders beyond = {0}, unreachable = {0};
  for (size_t i = 0; i < n; i++) {
    float v = x[i];
    if (p->has_fill && v == p->fill_value) continue;
    int32_t c;
    ncclzEbOutcome o =
        fabsf(v) >= NCCLZ_EB_HUGE_VALUE ? NCCLZ_EB_BEYOND_LIMIT : ncclz_eb_code_exact(v, p->bound, step, &c);
    if (o != NCCLZ_EB_OK) offender_add(o == NCCLZ_EB_BEYOND_LIMIT ? &beyond : &unreachable, i, v);
  }
  if (beyond.count) return report_beyond(&beyond, p->abs_eb);
  if (unreachable.count) return report_unreachable(&unreachable, p->bound);
  return NCCLZ_OK;
}

static ncclzStatus check_eb_spec(const ncclzQuantSpec *spec) {
  if (!(spec->eb > 0) || !isfinite(spec->eb) || (spec->eb_is_rel && spec->eb > 1))
    return ncclzSetError(NCCLZ_ERR_ARG, "eb: %s=%g must be %s", spec->eb_is_rel ? "rel" : "abs", spec->eb,
                         spec->eb_is_rel ? "in (0, 1]" : "positive and finite");
  if (spec->lorenzo < 0 || spec->lorenzo > 3)
    return ncclzSetError(NCCLZ_ERR_ARG, "eb: lorenzo=%d must be 0..3", spec->lorenzo);
  if (spec->has_fill && !isfinite(spec->fill_value))
    return ncclzSetError(NCCLZ_ERR_ARG, "eb: the fill value must be finite");
  return NCCLZ_OK;
}

static ncclzStatus resolve_eb(const ncclzQuantSpec *spec, const float *x, size_t n, ncclzQuantParams *p) {
  ncclzStatus st = scan_nonfinite(x, n);
  if (st != NCCLZ_OK) return st;
  p->lorenzo = spec->lorenzo;
  p->has_fill = spec->has_fill;
  p->fill_value = spec->has_fill ? spec->fill_value : 0.0f;
  if (p->has_fill && (st = snap_fill(x, n, &p->fill_value)) != NCCLZ_OK) return st;
  float lo, hi;
  value_range(p, x, n, &lo, &hi);
  eb_bounds(spec, lo, hi, &p->bound, &p->abs_eb);
  if (!(p->abs_eb > 0))
    return ncclzSetError(NCCLZ_ERR_RANGE, "eb: the bound %g (%s=%g) is below the float32 resolution at the "
                         "data's largest magnitude %g: use none (lossless) or a larger bound",
                         p->bound, spec->eb_is_rel ? "rel" : "abs", spec->eb,
                         fmax(fabs((double)lo), fabs((double)hi)));
  if ((st = check_eb_params(p)) != NCCLZ_OK) return st;
  return scan_code_range(p, x, n);
}

static ncclzStatus resolve_qsgd(const ncclzQuantSpec *spec, const float *x, size_t n, ncclzQuantParams *p) {
  if (spec->qsgd_bits != 2 && spec->qsgd_bits != 4 && spec->qsgd_bits != 8)
    return ncclzSetError(NCCLZ_ERR_ARG, "qsgd: bits=%d must be 2, 4 or 8", spec->qsgd_bits);
  if (spec->qsgd_bucket == 0) return ncclzSetError(NCCLZ_ERR_ARG, "qsgd: bucket must be >= 1");
  Offenders o = {0};
  for (size_t i = 0; i < n; i++)
    if (!isfinite(x[i])) offender_add(&o, i, x[i]);
  if (o.count)
    return ncclzSetError(NCCLZ_ERR_NONFINITE, "qsgd: %zu NaN/Inf values (first %g at index %zu)", o.count,
                         (double)o.value, o.first);
  p->qsgd_bits = spec->qsgd_bits;
  p->qsgd_bucket = spec->qsgd_bucket;
  p->seed = spec->seed;
  return NCCLZ_OK;
}

ncclzStatus ncclzQuantResolve(const ncclzQuantSpec *spec, const float *x, size_t n, const uint32_t *dims,
                              int ndims, uint32_t rank, ncclzQuantParams *out) {
  if (!spec || !out || (n && !x)) return ncclzSetError(NCCLZ_ERR_ARG, "ncclzQuantResolve: NULL argument");
  ncclzQuantParams p;
  memset(&p, 0, sizeof p);
  p.kind = spec->kind;
  p.rank = rank;
  int lorenzo = spec->kind == NCCLZ_QUANT_EB ? spec->lorenzo : 0;
  ncclzStatus st = spec->kind == NCCLZ_QUANT_EB ? check_eb_spec(spec) : NCCLZ_OK;
  if (st == NCCLZ_OK) st = resolve_dims(dims, ndims, n, lorenzo, &p);
  if (st != NCCLZ_OK) return st;
  switch (spec->kind) {
  case NCCLZ_QUANT_NONE: break;
  case NCCLZ_QUANT_EB: st = resolve_eb(spec, x, n, &p); break;
  case NCCLZ_QUANT_QSGD: st = resolve_qsgd(spec, x, n, &p); break;
  default: st = ncclzSetError(NCCLZ_ERR_ARG, "unknown quantizer kind %d", (int)spec->kind); break;
  }
  if (st == NCCLZ_OK) *out = p;
  return st;
}
