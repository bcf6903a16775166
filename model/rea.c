/* REA host path: Algorithm 1 of the paper around the shared decision functions of rea_decide.h.
 *
 *   1. degenerate guards          -> check_frame_args
 *   2. small-batch fast path      -> ncclz_rea_fast_path
 *   3. plan: hint, sample, profile, arbitrate
 *                                 -> ncclz_rea_link, ncclzReaSampleProfile, ncclz_rea_predict,
 *                                    ncclz_rea_arbitrate (admissibility inside: ncclz_rea_admit)
 *   4. materialize + post-check   -> ncclzFrameEncode, ncclz_rea_accept_realized
 *   5. commit RAW or fail         -> commit_raw_or_fail
 */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#endif
#include "ncclz/model.h"
#include "rea_decide.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

void ncclzReaConfigFromProfile(const ncclzProfile *p, ncclzTransportHint hint, ncclzDataClass cls,
                               ncclzReaConfig *cfg) {
  memset(cfg, 0, sizeof *cfg);
  cfg->hint = hint;
  cfg->data_class = cls;
  cfg->coder_mask = (1u << NCCLZ_CODER_COUNT) - 1;
  cfg->huff_ctx_valid = 1;
  cfg->fast_path_bytes = p->thresholds.fast_path_bytes;
  cfg->huff_min_bytes = p->thresholds.huff_min_bytes;
  cfg->min_gain_permil = p->thresholds.min_gain_permil;
  cfg->sample_window_bytes = p->thresholds.sample_window_bytes;
  cfg->sample_pieces = p->thresholds.sample_pieces;
}

ncclzStatus ncclzReaConfigValidate(const ncclzReaConfig *cfg) {
  if (!cfg) return ncclzSetError(NCCLZ_ERR_ARG, "REA config: NULL");
  if ((unsigned)cfg->hint >= NCCLZ_HINT_COUNT) return ncclzSetError(NCCLZ_ERR_ARG, "REA config hint: unknown");
  if ((unsigned)cfg->data_class >= NCCLZ_CLASS_COUNT)
    return ncclzSetError(NCCLZ_ERR_ARG, "REA config data_class: unknown");
  if (cfg->min_gain_permil > 1000) return ncclzSetError(NCCLZ_ERR_ARG, "REA config min_gain_permil: must be <= 1000");
  if (cfg->sample_window_bytes < 128 || cfg->sample_window_bytes > NCCLZ_REA_SAMPLE_MAX_BYTES)
    return ncclzSetError(NCCLZ_ERR_ARG, "REA config sample_window_bytes: must be in [128, %u]",
                         NCCLZ_REA_SAMPLE_MAX_BYTES);
  if (cfg->sample_pieces < 1) return ncclzSetError(NCCLZ_ERR_ARG, "REA config sample_pieces: must be >= 1");
  if (!(cfg->pipeline_frames >= 0.0) || cfg->pipeline_frames > 1e12)
    return ncclzSetError(NCCLZ_ERR_ARG, "REA config pipeline_frames: must be a count >= 0 (0: the steady state)");
  return NCCLZ_OK;
}

const char *ncclzReaVerdictName(ncclzReaVerdict v) {
  switch (v) {
  case NCCLZ_REA_ADMISSIBLE: return "admissible";
  case NCCLZ_REA_DISABLED: return "disabled";
  case NCCLZ_REA_NO_ESTIMATE: return "no estimate";
  case NCCLZ_REA_OVER_CAPACITY: return "over capacity";
  case NCCLZ_REA_LOW_GAIN: return "gain below minimum";
  case NCCLZ_REA_BELOW_HUFF_MIN: return "below the Huffman size threshold";
  case NCCLZ_REA_NO_HUFF_CTX: return "no Huffman context";
  }
  return "?";
}

uint32_t ncclzReaSideBytes(const ncclzQuantParams *q, size_t n) {
  return q && q->kind == NCCLZ_QUANT_QSGD ? ncclz_rea_side_bytes(q->qsgd_bucket, n) : 0;
}

int ncclzReaCallWorthIt(const ncclzProfile *prof, ncclzTransportHint hint, const ncclzReaDecision *d,
                        ncclzCoder coder, const ncclzReaCall *call) {
  if (coder == NCCLZ_CODER_RAW || (unsigned)coder >= NCCLZ_CODER_COUNT || (unsigned)hint >= NCCLZ_HINT_COUNT) return 0;
  /* the fill: what a lone frame exposes beyond the steady state; a decision made for pipelines of
   * k >= 1 frames already holds its share in each frame's time */
  double fill = call->pipeline_frames >= 1.0
                    ? 0.0
                    : ncclz_rea_exposed_codec_us(prof, hint, coder, call->data_class, call->frame_raw_bytes, 1.0) -
                          ncclz_rea_exposed_codec_us(prof, hint, coder, call->data_class, call->frame_raw_bytes, 0.0);
  double per_unit = d->time_us[NCCLZ_CODER_RAW] - d->time_us[coder] - ncclzProfileUnitUs(prof, hint);
  return call->units * per_unit > ncclzProfileInterfaceUs(prof, hint, call->call_bytes) + fill;
}

ncclzCoder ncclzReaDecidePredicted(const ncclzProfile *prof, const ncclzReaConfig *cfg, ncclzReaLink link,
                                   int data_class, double frame_raw, double pipeline_frames,
                                   const double pred_bytes[NCCLZ_CODER_COUNT], ncclzReaDecision *dec) {
  ncclzReaCandidates cand;
  memset(&cand, 0, sizeof cand);
  memset(dec, 0, sizeof *dec);
  cand.frame_raw_bytes = frame_raw;
  cand.nframes = 1.0;
  cand.pipeline_frames = pipeline_frames;
  cand.raw_frame_bytes = (uint64_t)pred_bytes[NCCLZ_CODER_RAW];
  for (int c = 0; c < NCCLZ_CODER_COUNT; c++) {
    cand.pred_frame_bytes[c] = (uint64_t)ceil(pred_bytes[c]);
    cand.pred_valid[c] = 1;
  }
  const ncclzReaRules rules = ncclz_rea_rules(cfg, cand.raw_frame_bytes); /* a staging bank holds one RAW frame */
  if (ncclz_rea_fast_path(&rules, frame_raw)) return NCCLZ_CODER_RAW;
  ncclz_rea_arbitrate(prof, link, data_class, &rules, &cand, dec);
  return dec->coder;
}

void ncclzFrameCoderParams(ncclzCoderParams *cp) {
  ncclzCoderParamsDefault(cp);
  cp->huffman_segment = NCCLZ_FRAME_HUFFMAN_SEGMENT;
}

void ncclzReaPredictFrames(const ncclzSampleStats *s, uint64_t n, size_t dtype_bytes, uint32_t side_bytes,
                           const ncclzCoderParams *cp, ncclzReaCandidates *cand) {
  ncclz_rea_predict(s, n, dtype_bytes, side_bytes, cp, cand);
}

/* Step 1: reject what no frame can describe before touching any data. */
static ncclzStatus check_frame_args(const ncclzProfile *prof, const ncclzReaConfig *cfg, const int32_t *sym,
                                    size_t n, const ncclzFrameDesc *desc, ncclzReaResult *res) {
  if (!prof || !cfg || !desc || !res || (!sym && n))
    return ncclzSetError(NCCLZ_ERR_ARG, "REA: NULL argument");
  if ((unsigned)desc->dtype >= NCCLZ_DTYPE_COUNT) return ncclzSetError(NCCLZ_ERR_ARG, "REA: unknown dtype");
  if ((uint64_t)n * ncclzDtypeSize(desc->dtype) > UINT32_MAX)
    return ncclzSetError(NCCLZ_ERR_ARG, "REA: a frame holds at most 4 GiB of raw bytes (got %zu symbols)", n);
  return ncclzReaConfigValidate(cfg);
}

ncclzStatus ncclzReaPlan(const ncclzProfile *prof, const ncclzReaConfig *cfg, const int32_t *sym, size_t n,
                         const ncclzFrameDesc *desc, size_t stage_cap, ncclzReaResult *res) {
  ncclzStatus s = check_frame_args(prof, cfg, sym, n, desc, res);
  if (s != NCCLZ_OK) return s;
  memset(res, 0, sizeof *res);
  size_t dtype_bytes = ncclzDtypeSize(desc->dtype);
  ncclzReaRules rules = ncclz_rea_rules(cfg, stage_cap);
  res->planned = res->committed = NCCLZ_CODER_RAW;
  res->cand.frame_raw_bytes = (double)n * (double)dtype_bytes;
  res->cand.raw_frame_bytes = ncclz_rea_raw_frame_bytes(n, desc->side_bytes);

  if (ncclz_rea_fast_path(&rules, res->cand.frame_raw_bytes)) {  /* step 2 */
    res->path = NCCLZ_REA_PATH_FAST;
    return NCCLZ_OK;
  }
  ncclzSampleStats stats;  /* step 3 */
  s = ncclzReaSampleProfile(sym, n, cfg->sample_window_bytes, cfg->sample_pieces, &stats);
  if (s != NCCLZ_OK) return s;
  ncclz_rea_predict(&stats, n, dtype_bytes, desc->side_bytes, &desc->coder_params, &res->cand);
  res->cand.pipeline_frames = cfg->pipeline_frames;
  ncclzReaLink link = ncclz_rea_link(prof, cfg->hint);
  ncclz_rea_arbitrate(prof, link, cfg->data_class, &rules, &res->cand, &res->decision);
  res->planned = res->decision.coder;
  res->path = res->planned == NCCLZ_CODER_RAW ? NCCLZ_REA_PATH_PLANNED_RAW : NCCLZ_REA_PATH_CODED;
  return NCCLZ_OK;
}

/* Step 5: a RAW frame when it fits the staging capacity, else a capacity failure. */
static ncclzStatus commit_raw_or_fail(const int32_t *sym, size_t n, const ncclzFrameDesc *desc, uint8_t *dst,
                                      size_t stage_cap, ncclzReaResult *res) {
  uint64_t raw_frame = ncclz_rea_raw_frame_bytes(n, desc->side_bytes);
  if (raw_frame > stage_cap)
    return ncclzSetError(NCCLZ_ERR_CAPACITY, "REA: even the RAW frame (%llu bytes) exceeds the staging capacity (%zu)",
                         (unsigned long long)raw_frame, stage_cap);
  size_t len = 0;
  ncclzStatus s = ncclzFrameEncode(NCCLZ_CODER_RAW, sym, n, desc, dst, stage_cap, &len);
  if (s != NCCLZ_OK) return s;
  res->committed = NCCLZ_CODER_RAW;
  res->frame_bytes = len;
  return NCCLZ_OK;
}

uint64_t ncclzReaFallbackBytes(const ncclzReaConfig *cfg, size_t n, uint32_t side_bytes, size_t stage_cap) {
  const ncclzReaRules rules = ncclz_rea_rules(cfg, stage_cap);
  const uint64_t raw = ncclz_rea_raw_frame_bytes(n, side_bytes);
  /* the post-check's own predicate, searched: it accepts every size up to a bound and none above
   * (the gain falls as the size grows), so the limit is exactly the sizes it keeps */
  uint64_t lo = 0, hi = stage_cap; /* accept(lo) holds: a 0-byte frame gains 1000 permil */
  while (lo < hi) {
    const uint64_t mid = lo + (hi - lo + 1) / 2;
    if (ncclz_rea_accept_realized(&rules, raw, mid)) lo = mid;
    else hi = mid - 1;
  }
  return lo ? lo : 1;
}

/* Step 4: encode the planned coder; 1 when its realized frame passes the post-check. */
static ncclzStatus materialize(const ncclzReaConfig *cfg, const int32_t *sym, size_t n, const ncclzFrameDesc *desc,
                               uint8_t *dst, size_t stage_cap, ncclzReaResult *res, int *accepted) {
  ncclzReaRules rules = ncclz_rea_rules(cfg, stage_cap);
  size_t len = 0;
  *accepted = 0;
  ncclzStatus s = ncclzFrameEncode(res->planned, sym, n, desc, dst, stage_cap, &len);
  if (s == NCCLZ_ERR_CAPACITY) return NCCLZ_OK;  /* did not fit: the post-check fails */
  if (s != NCCLZ_OK) return s;
  res->realized_bytes = len;
  *accepted = ncclz_rea_accept_realized(&rules, res->cand.raw_frame_bytes, len);
  if (*accepted) {
    res->committed = res->planned;
    res->frame_bytes = len;
  }
  return NCCLZ_OK;
}

ncclzStatus ncclzReaEncodeBest(const ncclzProfile *prof, const ncclzReaConfig *cfg, const int32_t *sym,
                               size_t n, const ncclzFrameDesc *desc, uint8_t *dst, size_t stage_cap,
                               ncclzReaResult *res) {
  if (!dst) return ncclzSetError(NCCLZ_ERR_ARG, "REA: NULL destination");
  ncclzStatus s = ncclzReaPlan(prof, cfg, sym, n, desc, stage_cap, res);
  if (s != NCCLZ_OK) return s;
  if (res->planned != NCCLZ_CODER_RAW) {
    int accepted = 0;
    s = materialize(cfg, sym, n, desc, dst, stage_cap, res, &accepted);
    if (s != NCCLZ_OK || accepted) return s;
    res->path = NCCLZ_REA_PATH_FALLBACK;
  }
  return commit_raw_or_fail(sym, n, desc, dst, stage_cap, res);
}

/* ------------------------------------------------------------ planning cost */

static double now_us(void) { return 1e6 * ncclzNowSeconds(); }

ncclzStatus ncclzReaMeasurePlanningCost(const ncclzProfile *prof, const ncclzReaConfig *cfg,
                                        const int32_t *sym, size_t n, const ncclzFrameDesc *desc,
                                        ncclzCoder coder, int reps, ncclzReaPlanCost *out) {
  if (!out || reps < 1 || (unsigned)coder >= NCCLZ_CODER_COUNT || !desc)
    return ncclzSetError(NCCLZ_ERR_ARG, "ncclzReaMeasurePlanningCost: bad argument");
  size_t cap = ncclzFrameBound(coder, &desc->coder_params, n, desc->side_bytes);
  uint8_t *buf = malloc(cap ? cap : 1);
  if (!buf) return ncclzSetError(NCCLZ_ERR_NOMEM, "ncclzReaMeasurePlanningCost: out of memory");
  ncclzReaResult res;
  ncclzStatus s = NCCLZ_OK;
  double t0 = now_us();
  for (int i = 0; i < reps && s == NCCLZ_OK; i++) s = ncclzReaPlan(prof, cfg, sym, n, desc, cap, &res);
  double t1 = now_us();
  size_t len = 0;
  for (int i = 0; i < reps && s == NCCLZ_OK; i++) s = ncclzFrameEncode(coder, sym, n, desc, buf, cap, &len);
  double t2 = now_us();
  free(buf);
  if (s != NCCLZ_OK) return s;
  out->plan_us = (t1 - t0) / reps;
  out->encode_us = (t2 - t1) / reps;
  out->ratio = out->encode_us > 0.0 ? out->plan_us / out->encode_us : 0.0;
  return NCCLZ_OK;
}
