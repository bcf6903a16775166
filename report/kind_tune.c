/* Kind "tune": sweeps the REA thresholds (T_huff, minGainPermil, the fast-path size, the sample
 * window) and the frame size over a workload mix and a set of platforms, with the model's cost
 * evaluation, and recommends the setting of least regret against an oracle.
 *
 * For each (workload, message size, platform) and configuration:
 *   - REA's decision comes from the same functions the runtime calls (ncclzSurfacePointEval on the
 *     sampled statistics of that window and frame size, with the configured thresholds);
 *   - the time charged is the cost model evaluated with the *realized* frame sizes (the data
 *     encoded in frames of that size), and a coder that fails the realized-gain post-check costs
 *     its wasted encode plus a RAW frame, as in Algorithm 1;
 *   - the oracle picks, per message, the coder and frame size of least realized time, so every
 *     configuration's regret is >= 0 and the oracle's is 0.
 * Regret of a configuration on a platform = sum_w weight_w sum_M T / sum_w weight_w sum_M T_oracle - 1;
 * the recommendation minimizes the mean over platforms. */
#include "tune_internal.h"
#include "model/rea_decide.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const TN_PAR_NAMES[PAR_COUNT] = {"huff_min_bytes", "min_gain_permil", "fast_path_bytes",
                                             "sample_window_bytes", "frame_bytes"};

ncclzStatus tune_parse(run_ctx *c, tn_setup *s);
void tune_free(tn_setup *s);
ncclzStatus tune_report(ncclzReport *r, run_ctx *c, const tn_setup *s, const tn_config *cfgs, size_t ncfg, size_t best,
                        const tn_config *current, const tn_config *fixed);

/* ------------------------------------------------------ realized compression */

/* CR of coder c on the workload's symbols in frames of f raw bytes (whole stream: headers and
 * side data included), measured on at most max_elems symbols. */
static ncclzStatus realized_cr(const tn_workload *w, size_t max_elems, double f, double cr[NCCLZ_CODER_COUNT]) {
  ncclzSymbols view = w->syms;
  size_t cap = max_elems < view.n ? max_elems : view.n;
  if (view.scales && view.qp.qsgd_bucket) {
    cap -= cap % view.qp.qsgd_bucket;
    if (!cap) cap = view.n;
    view.n_scales = (cap + view.qp.qsgd_bucket - 1) / view.qp.qsgd_bucket;
  }
  view.n = cap;
  size_t fs = ncclzFrameSymbols(&view, (size_t)f);
  ncclzCoderParams cp;
  ncclzFrameCoderParams(&cp); /* the executor's frames */
  for (int k = 0; k < NCCLZ_CODER_COUNT; k++) {
    uint8_t *stream = NULL;
    size_t len = 0;
    unsigned mix[NCCLZ_CODER_COUNT];
    ncclzStatus st = ncclzStreamEncode(&view, (ncclzCoder)k, NULL, NULL, fs, &cp, &stream, &len, mix);
    free(stream);
    if (st != NCCLZ_OK) return st;
    cr[k] = (double)view.n * 4.0 / (double)(len > NCCLZ_STREAM_HEADER_BYTES ? len - NCCLZ_STREAM_HEADER_BYTES : 1);
  }
  return NCCLZ_OK;
}

/* The realized CRs at frame raw size f (measured once per size). */
static const double *cr_at(tn_workload *w, size_t max_elems, double f, ncclzStatus *st) {
  for (int i = 0; i < w->nf; i++)
    if (w->f_bytes[i] == f) return w->cr[i];
  if (w->nf == TN_MAX_F) return *st = ncclzSetError(NCCLZ_ERR_ARG, "scenario tune: too many frame sizes"), NULL;
  w->f_bytes[w->nf] = f;
  *st = realized_cr(w, max_elems, f, w->cr[w->nf]);
  return *st == NCCLZ_OK ? w->cr[w->nf++] : NULL;
}

static ncclzStatus sample_all(tn_setup *s) {
  const ncclzStatus ok = NCCLZ_OK;
  for (int i = 0; i < s->nw; i++) {
    tn_workload *w = &s->w[i];
    size_t n = w->syms.n < s->max_elems ? w->syms.n : s->max_elems;
    for (int a = 0; a < s->nv[PAR_WINDOW]; a++)
      for (int b = 0; b < s->nv[PAR_FRAME]; b++) {
        size_t fs = (size_t)(s->v[PAR_FRAME][b] / 4.0);
        ncclzStatus st = ncclzReaSampleProfileFrames(w->syms.sym, n, fs ? fs : 1, (uint32_t)s->v[PAR_WINDOW][a], s->pieces,
                                                     &w->stats[a][b]);
        if (st != NCCLZ_OK) return st;
      }
  }
  return ok;
}

/* --------------------------------------------------------------- the costs */

/* Realized time of coder k for a message of m bytes in frames of at most F bytes. */
static double true_cost(const ncclzProfile *prof, const tn_platform *p, ncclzDataClass cls, const double *cr, double m,
                        double F, int k) {
  double f = m < F ? m : F, nframes = m / f;
  ncclzReaLink link = ncclz_rea_link(prof, p->hint);
  link.beta_gbps = p->bw;
  return ncclz_rea_cost_us(prof, link, k, cls, f, f / cr[k], nframes, nframes); /* one message, one pipeline */
}

/* The time a configuration is charged: REA's planned coder, realized; a failed post-check costs
 * the wasted encode and the RAW frame. */
static double config_cost(const tn_setup *s, const ncclzProfile *base, const tn_config *cf, const tn_workload *w,
                          const tn_platform *p, double m, const double *cr) {
  ncclzProfile prof = *base;
  double F = s->v[PAR_FRAME][cf->idx[PAR_FRAME]];
  prof.thresholds.frame_bytes = (uint64_t)F;
  ncclzReaConfig cfg;
  ncclzReaConfigFromProfile(&prof, p->hint, w->cls, &cfg);
  cfg.huff_min_bytes = (uint64_t)s->v[PAR_THUFF][cf->idx[PAR_THUFF]];
  cfg.min_gain_permil = (uint32_t)s->v[PAR_GAIN][cf->idx[PAR_GAIN]];
  cfg.fast_path_bytes = (uint64_t)s->v[PAR_FAST][cf->idx[PAR_FAST]];
  cfg.sample_window_bytes = (uint32_t)s->v[PAR_WINDOW][cf->idx[PAR_WINDOW]];
  ncclzSurfaceData d;
  memset(&d, 0, sizeof d);
  d.stats = w->stats[cf->idx[PAR_WINDOW]][cf->idx[PAR_FRAME]];
  d.dtype_bytes = 4;
  d.quant = &w->syms.qp;
  ncclzFrameCoderParams(&d.coder_params);
  ncclzSurfacePoint pt;
  ncclzSurfacePointEval(&prof, &cfg, &d, p->bw, (uint64_t)m, &pt);
  int k = cf->fixed >= 0 ? cf->fixed : (int)pt.coder;
  double t = true_cost(&prof, p, w->cls, cr, m, F, k);
  double f = m < F ? m : F;
  ncclzReaRules rules = {0};
  rules.min_gain_permil = cfg.min_gain_permil;
  rules.stage_cap_bytes = UINT64_MAX;
  if (k != NCCLZ_CODER_RAW && !ncclz_rea_accept_realized(&rules, (uint64_t)(f / cr[0]), (uint64_t)(f / cr[k]))) {
    const ncclzCodecCurves *cv = ncclz_rea_curves(&prof, k, w->cls);
    t = true_cost(&prof, p, w->cls, cr, m, F, NCCLZ_CODER_RAW) +
        (m / f) * prof.codec[k].lambda_enc[p->hint] * ncclz_rea_curve_us(&cv->encode, f);
  }
  return t;
}

/* Oracle time of each (workload, size, platform): the best coder and frame size, realized. */
static ncclzStatus oracle(tn_setup *s, const ncclzProfile *prof, double *orc) {
  ncclzStatus st = NCCLZ_OK;
  for (int i = 0; i < s->nw; i++)
    for (int m = 0; m < s->w[i].nm; m++)
      for (int p = 0; p < s->np; p++) {
        double best = INFINITY;
        for (int b = 0; b < s->nv[PAR_FRAME]; b++) {
          double F = s->v[PAR_FRAME][b], M = s->w[i].bytes[m];
          const double *cr = cr_at(&s->w[i], s->max_elems, M < F ? M : F, &st);
          if (!cr) return st;
          for (int k = 0; k < NCCLZ_CODER_COUNT; k++) {
            double t = true_cost(prof, &s->p[p], s->w[i].cls, cr, M, F, k);
            best = t < best ? t : best;
          }
        }
        orc[(i * TN_MAX_M + m) * TN_MAX_P + p] = best;
      }
  return st;
}

static void eval_config(tn_setup *s, const ncclzProfile *prof, const double *orc, tn_config *cf) {
  double num[TN_MAX_P] = {0}, den[TN_MAX_P] = {0};
  ncclzStatus st = NCCLZ_OK;
  cf->worst_msg = 0;
  double F = s->v[PAR_FRAME][cf->idx[PAR_FRAME]];
  for (int i = 0; i < s->nw; i++)
    for (int m = 0; m < s->w[i].nm; m++) {
      double M = s->w[i].bytes[m];
      const double *cr = cr_at(&s->w[i], s->max_elems, M < F ? M : F, &st); /* cached by oracle() */
      for (int p = 0; p < s->np && cr; p++) {
        double t = config_cost(s, prof, cf, &s->w[i], &s->p[p], M, cr), o = orc[(i * TN_MAX_M + m) * TN_MAX_P + p];
        num[p] += s->w[i].weight * t;
        den[p] += s->w[i].weight * o;
        if (t / o - 1 > cf->worst_msg) cf->worst_msg = t / o - 1;
      }
    }
  cf->mean = 0;
  for (int p = 0; p < s->np; p++) {
    cf->regret[p] = den[p] > 0 ? num[p] / den[p] - 1.0 : 0.0;
    cf->mean += cf->regret[p] / s->np;
  }
}

/* Every combination of the swept values, in odometer order. */
static size_t count_configs(const tn_setup *s) {
  size_t n = 1;
  for (int k = 0; k < PAR_COUNT; k++) n *= (size_t)s->nv[k];
  return n;
}

static void config_at(const tn_setup *s, size_t i, tn_config *cf) {
  memset(cf, 0, sizeof *cf);
  cf->fixed = -1;
  for (int k = PAR_COUNT - 1; k >= 0; k--) {
    cf->idx[k] = (int)(i % (size_t)s->nv[k]);
    i /= (size_t)s->nv[k];
  }
}

/* The profile's own thresholds as a configuration (each value added to its axis if missing). */
static void current_config(tn_setup *s, const ncclzProfile *prof, tn_config *cf) {
  const ncclzThresholds *t = &prof->thresholds;
  double v[PAR_COUNT] = {(double)t->huff_min_bytes, t->min_gain_permil, (double)t->fast_path_bytes,
                         t->sample_window_bytes, (double)t->frame_bytes};
  memset(cf, 0, sizeof *cf);
  cf->fixed = -1;
  for (int k = 0; k < PAR_COUNT; k++) {
    int j = 0;
    while (j < s->nv[k] && s->v[k][j] != v[k]) j++;
    if (j == s->nv[k] && s->nv[k] < TN_MAX_V) s->v[k][s->nv[k]++] = v[k];
    cf->idx[k] = j < TN_MAX_V ? j : 0;
  }
}

ncclzStatus kind_tune(ncclzReport *r, run_ctx *c) {
  tn_setup s;
  ncclzStatus st = tune_parse(c, &s);
  tn_config current;
  if (st == NCCLZ_OK) current_config(&s, c->prof, &current);
  if (st == NCCLZ_OK) st = sample_all(&s);
  double *orc = st == NCCLZ_OK ? malloc(sizeof(double) * TN_MAX_W * TN_MAX_M * TN_MAX_P) : NULL;
  if (st == NCCLZ_OK && !orc) st = ncclzSetError(NCCLZ_ERR_NOMEM, "out of memory");
  if (st == NCCLZ_OK) st = oracle(&s, c->prof, orc);
  size_t ncfg = st == NCCLZ_OK ? count_configs(&s) : 0, best = 0;
  tn_config *cfgs = ncfg ? calloc(ncfg, sizeof *cfgs) : NULL;
  if (ncfg && !cfgs) st = ncclzSetError(NCCLZ_ERR_NOMEM, "out of memory");
  for (size_t i = 0; i < ncfg && cfgs; i++) {
    if (i % 64 == 0) ncclzProgress("tune: configurations", i, ncfg);
    config_at(&s, i, &cfgs[i]);
    eval_config(&s, c->prof, orc, &cfgs[i]);
    if (cfgs[i].mean < cfgs[best].mean) best = i;
  }
  if (cfgs) {
    ncclzProgress("tune: configurations", ncfg, ncfg);
    eval_config(&s, c->prof, orc, &current);
    tn_config fixed[NCCLZ_CODER_COUNT]; /* every frame with one coder, at the recommended frame size */
    for (int k = 0; k < NCCLZ_CODER_COUNT; k++) {
      fixed[k] = cfgs[best];
      fixed[k].fixed = k;
      eval_config(&s, c->prof, orc, &fixed[k]);
    }
    st = tune_report(r, c, &s, cfgs, ncfg, best, &current, fixed);
  }
  free(cfgs);
  free(orc);
  tune_free(&s);
  return st;
}
