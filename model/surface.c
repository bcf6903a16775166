/* The break-even surface: the coder REA picks, and its predicted time, for each (bandwidth,
 * message size). A message is cut into frames as the executor cuts it (frame_bytes of the
 * profile), and each point is decided by the same functions as a real frame (rea_decide.h). */
#include "ncclz/model.h"
#include "rea_decide.h"

#include <math.h>
#include <string.h>

void ncclzSurfaceGridDefault(ncclzSurfaceGrid *g) {
  g->bw_min_gbps = 1.0;
  g->bw_max_gbps = 1000.0;
  g->bw_factor = pow(10.0, 0.25);  /* four steps a decade: 1, 1.78, 3.16, 5.62, 10, ... */
  g->size_min = 4096;
  g->size_max = 4ull << 30;
  g->size_factor = 4.0;
}

size_t ncclzSurfaceBandwidths(const ncclzSurfaceGrid *g, double *vals, size_t cap) {
  size_t count = 0;
  if (!(g->bw_min_gbps > 0.0) || !(g->bw_factor > 1.0)) return 0;
  for (;;) {
    double v = g->bw_min_gbps * pow(g->bw_factor, (double)count);
    v = round(v * 1e4) / 1e4;  /* 10^(4/4) is 10, not 9.999999999 */
    if (v > g->bw_max_gbps * (1.0 + 1e-9)) break;
    if (vals && count < cap) vals[count] = v;
    count++;
  }
  return count;
}

size_t ncclzSurfaceSizes(const ncclzSurfaceGrid *g, uint64_t *vals, size_t cap) {
  size_t count = 0;
  if (g->size_min == 0 || !(g->size_factor > 1.0)) return 0;
  for (double v = (double)g->size_min; v <= (double)g->size_max * (1.0 + 1e-12); v *= g->size_factor) {
    if (vals && count < cap) vals[count] = (uint64_t)llround(v);
    count++;
  }
  return count;
}

void ncclzSurfacePointEval(const ncclzProfile *prof, const ncclzReaConfig *cfg, const ncclzSurfaceData *d,
                           double bandwidth_gbps, uint64_t bytes, ncclzSurfacePoint *pt) {
  uint64_t frame = bytes < prof->thresholds.frame_bytes ? bytes : prof->thresholds.frame_bytes;
  uint64_t n_frame = frame / d->dtype_bytes ? frame / d->dtype_bytes : 1;
  ncclzReaCandidates cand;
  ncclz_rea_predict(&d->stats, n_frame, d->dtype_bytes, ncclzReaSideBytes(d->quant, n_frame), &d->coder_params,
                    &cand);
  cand.nframes = (double)bytes / cand.frame_raw_bytes;
  cand.pipeline_frames = cand.nframes; /* the message is one pipeline */

  ncclzReaRules rules;
  rules.stage_cap_bytes = cand.raw_frame_bytes;  /* a staging bank holds at least one RAW frame */
  rules.fast_path_bytes = cfg->fast_path_bytes;
  rules.huff_min_bytes = cfg->huff_min_bytes;
  rules.min_gain_permil = cfg->min_gain_permil;
  rules.coder_mask = cfg->coder_mask;
  rules.huff_ctx_valid = cfg->huff_ctx_valid;

  ncclzReaLink link = ncclz_rea_link(prof, cfg->hint);
  link.beta_gbps = bandwidth_gbps;
  ncclzReaDecision dec;
  ncclz_rea_arbitrate(prof, link, cfg->data_class, &rules, &cand, &dec);

  memset(pt, 0, sizeof *pt);
  pt->bandwidth_gbps = bandwidth_gbps;
  pt->bytes = bytes;
  pt->fast_path = ncclz_rea_fast_path(&rules, cand.frame_raw_bytes);
  pt->coder = pt->fast_path ? NCCLZ_CODER_RAW : dec.coder;
  pt->time_us = dec.time_us[pt->coder];
  memcpy(pt->coder_us, dec.time_us, sizeof pt->coder_us);
  memcpy(pt->verdict, dec.verdict, sizeof pt->verdict);
}
