/* Quantization at the interface: every rank agrees on one step, then quantizes once.
 *
 * Integer codes add exactly only when every rank uses the same step (EB half-step, QSGD bucket
 * scales), so one small allreduce(max) carries, at once: the call's fingerprint (mismatched calls
 * fail on every rank instead of hanging), the non-finite count (NaN is an error on every rank),
 * the value range (EB rel, and the float resolution that bounds the rounding of the result) and
 * the QSGD bucket maxima. Everything derived from it is identical on every rank, so every later
 * error check gives the same answer everywhere. */
#include "engine_internal.h"
#include "call_rules.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>


static uint64_t call_fingerprint(const run_t *r) {
  uint64_t v[5] = {(uint64_t)r->coll, (uint64_t)r->count, (uint64_t)r->dtype,
                   (uint64_t)(r->coll == NCCLZ_BROADCAST ? r->s.root : 0), ncclzConfigFingerprint(&r->c->cfg)};
  return ncclzFnv1a((const uint8_t *)v, sizeof v) * 0x9E3779B97F4A7C15ull ^ v[4];
}

/* This rank's contribution: scan of x (non-finite, unflagged huge values, range) and QSGD maxima. */
static void local_scan(const run_t *r, const float *x, double *v) {
  const ncclzQuantSpec *q = &r->c->cfg.quant;
  double nf = 0, huge = 0, mn = HUGE_VAL, mx = -HUGE_VAL, ma = 0;
  for (size_t i = 0; x && i < r->n_in; i++) {
    float f = x[i];
    if (!isfinite(f)) {
      nf++;
      continue;
    }
    if (q->kind == NCCLZ_QUANT_EB && q->has_fill && f == q->fill_value) continue;
    if (q->kind == NCCLZ_QUANT_EB && fabsf(f) >= NCCLZ_EB_HUGE_VALUE) huge++;
    if (f < mn) mn = f;
    if (f > mx) mx = f;
    if (fabsf(f) > ma) ma = fabsf(f);
  }
  v[V_NONFINITE] = nf;
  v[V_HUGE] = huge;
  v[V_NEG_MIN] = -mn;
  v[V_MAX] = mx;
  v[V_MAXABS] = ma;
  if (q->kind == NCCLZ_QUANT_QSGD) {
    for (size_t b = 0; b < r->n_scales; b++) v[V_HEAD + b] = 0;
    if (x && !nf) {
      ncclzQsgdScales(&r->qp, x, r->n_in, r->scales);
      for (size_t b = 0; b < r->n_scales; b++) v[V_HEAD + b] = r->scales[b];
    }
  }
}

/* EB: the half-step every rank quantizes with, and the bound the result then meets. */
static ncclzStatus derive_eb(run_t *r, const double *v) {
  ncclzStatus st = ncclz_exec_derive_eb(&r->c->cfg, r->dtype, r->k, v, &r->qp, &r->st->error_bound);
  if (st == NCCLZ_OK) r->st->quant_bound = r->qp.abs_eb;
  return st;
}

/* QSGD: adopt the shared scales; the bound is k levels of the largest scale, plus rounding. */
static void derive_qsgd(run_t *r, const double *v) {
  double smax = 0;
  for (size_t b = 0; b < r->n_scales; b++) {
    r->scales[b] = (float)v[V_HEAD + b];
    smax = fmax(smax, r->scales[b]);
  }
  ncclz_exec_derive_qsgd(&r->qp, r->dtype, r->k, smax, &r->st->quant_bound, &r->st->error_bound);
}

static ncclzStatus quantize(run_t *r, const float *x) {
  if (!x) return NCCLZ_OK; /* broadcast non-root: its input is not used */
  int32_t *codes = r->in;
  if (r->qp.kind == NCCLZ_QUANT_QSGD) return ncclzQuantizeQsgd(&r->qp, x, r->n_in, r->scales, codes);
  ncclzStatus st = ncclzQuantizeEB(&r->qp, x, r->n_in, codes);
  if (st || !r->qp.lorenzo) return st;
  int32_t *tmp = malloc((r->n_in ? r->n_in : 1) * sizeof *tmp);
  if (!tmp) return ncclzSetError(NCCLZ_ERR_NOMEM, "Lorenzo scratch");
  ncclzLorenzoForward(&r->qp, codes, r->n_in, tmp);
  memcpy(codes, tmp, r->n_in * sizeof *tmp);
  free(tmp);
  return NCCLZ_OK;
}

ncclzStatus exec_agree_and_quantize(run_t *r, const float *x) {
  size_t nv = V_HEAD + (r->qp.kind == NCCLZ_QUANT_QSGD ? r->n_scales : 0);
  double *v = calloc(nv, sizeof *v);
  if (!v) return ncclzSetError(NCCLZ_ERR_NOMEM, "agreement of %zu values", nv);
  uint64_t fp = call_fingerprint(r);
  v[V_FP_HI] = (double)(fp >> 32);
  v[V_FP_LO] = (double)(fp & 0xffffffffu);
  v[V_NFP_HI] = -v[V_FP_HI];
  v[V_NFP_LO] = -v[V_FP_LO];
  if (r->quantized) local_scan(r, x, v);
  double t0 = ncclzNowSeconds();
  ncclzStatus st = r->t->allreduce_max(r->t, v, nv);
  r->st->t_agree += ncclzNowSeconds() - t0;
  if (!st && (v[V_FP_HI] != -v[V_NFP_HI] || v[V_FP_LO] != -v[V_NFP_LO]))
    st = ncclzSetError(NCCLZ_ERR_ARG, "ranks disagree on the call or the config (collective %s, count %zu, dtype %s, "
                                      "root, quantizer, coder policy, chunk size or profile)",
                       ncclzCollectiveName(r->coll), r->count, ncclzDtypeName(r->dtype));
  else if (!st && v[V_NONFINITE] > 0)
    st = ncclzSetError(NCCLZ_ERR_NONFINITE, "NaN or Inf in the input of a quantized collective (%.0f on one rank)",
                       v[V_NONFINITE]);
  else if (!st && v[V_HUGE] > 0)
    st = ncclzSetError(NCCLZ_ERR_RANGE, "%.0f values with |x| >= %g: fill values? give fill=V in the quantizer spec",
                       v[V_HUGE], (double)NCCLZ_EB_HUGE_VALUE);
  else if (!st && r->qp.kind == NCCLZ_QUANT_EB)
    st = derive_eb(r, v);
  else if (!st && r->qp.kind == NCCLZ_QUANT_QSGD)
    derive_qsgd(r, v);
  r->gmax = v[V_MAXABS];
  free(v);
  if (st) return st;
  t0 = ncclzNowSeconds();
  st = r->quantized ? quantize(r, x) : NCCLZ_OK;
  r->st->t_quant += ncclzNowSeconds() - t0;
  return st;
}

/* Input coordinate of output element i (QSGD scales are indexed by it). */
static size_t in_coord(const run_t *r, size_t i) {
  size_t n = r->count, me = (size_t)r->t->rank;
  switch (r->coll) {
  case NCCLZ_REDUCESCATTER: return me * n + i;
  case NCCLZ_ALLGATHER: return i % n;
  case NCCLZ_ALLTOALL: return me * n + i % n;
  default: return i;
  }
}

ncclzStatus exec_dequantize(run_t *r, float *y) {
  if (!r->quantized) {
    memcpy(y, r->out, r->n_out * sizeof *y);
    return NCCLZ_OK;
  }
  int32_t *codes = r->out;
  if (r->qp.kind == NCCLZ_QUANT_QSGD) {
    double s = ncclzQsgdLevels(&r->qp);
    for (size_t i = 0; i < r->n_out; i++) {
      size_t b = in_coord(r, i) / r->qp.qsgd_bucket;
      y[i] = (float)((double)codes[i] * (double)r->scales[b] / s);
    }
    return NCCLZ_OK;
  }
  if (r->qp.lorenzo) ncclzLorenzoInverse(&r->qp, codes, r->n_out, codes);
  double step = 2 * r->qp.abs_eb;
  for (size_t i = 0; i < r->n_out; i++)
    y[i] = codes[i] == NCCLZ_FILL_CODE ? r->qp.fill_value : (float)((double)codes[i] * step);
  return NCCLZ_OK;
}
