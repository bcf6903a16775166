/* The shared rules of a call: see call_rules.h. */
#include "call_rules.h"

#include <float.h>
#include <math.h>
#include <string.h>

double ncclz_exec_f32_ulp(double v) {
  float f = (float)fabs(v);
  if (!(f < FLT_MAX)) return (double)FLT_MAX;
  return (double)nextafterf(f, INFINITY) - (double)f;
}

double ncclz_exec_dtype_ulp(ncclzDtype dt, double v) {
  if (dt == NCCLZ_DTYPE_F32) return ncclz_exec_f32_ulp(v);
  int mant = dt == NCCLZ_DTYPE_BF16 ? 7 : 10, emin = dt == NCCLZ_DTYPE_BF16 ? -126 : -14;
  int e;
  frexp(fabs(v), &e); /* |v| in [2^(e-1), 2^e) */
  return ldexp(1.0, (e - 1 > emin ? e - 1 : emin) - mant);
}

ncclzStatus ncclz_exec_derive_eb(const ncclzConfig *cfg, ncclzDtype dt, double k, const double *v,
                                 ncclzQuantParams *qp, double *error_bound) {
  const ncclzQuantSpec *q = &cfg->quant;
  double gmax = v[V_MAXABS];
  double u1 = ncclz_exec_f32_ulp(2 * gmax), uk = ncclz_exec_dtype_ulp(dt, 2 * k * gmax + 2 * gmax);
  double a, bound;
  if (cfg->final_error_bound > 0) {
    /* k contributions of at most a each, plus half a float step of the result. */
    a = (cfg->final_error_bound - uk / 2) / k / (1 + 1e-7);
    bound = cfg->final_error_bound;
  } else {
    /* The codec's rule: rel bound = X * (max - min), or X * max(|min|, 1) for a constant field. */
    double range = v[V_MAX] + v[V_NEG_MIN], b = q->eb;
    if (q->eb_is_rel && isfinite(range) && range > 0)
      b = q->eb * range;
    else if (q->eb_is_rel && isfinite(v[V_MAX]))
      b = q->eb * fmax(fabs(v[V_MAX]), 1.0);
    a = b - u1 / 2;
    bound = k * a * (1 + 1e-7) + uk / 2;
  }
  if (!(a > 0))
    return ncclzSetError(NCCLZ_ERR_RANGE, "error bound below the float resolution of the data (max |x| %g)", gmax);
  double lim = (double)INT32_MAX / (k * (q->lorenzo ? 8 : 1));
  if ((gmax / (2 * a) + 1) >= fmin(lim, (double)NCCLZ_CODE_LIMIT))
    return ncclzSetError(NCCLZ_ERR_RANGE, "error bound %g too small for max |x| %g over %g ranks (codes overflow)", a,
                         gmax, k);
  qp->abs_eb = a;
  qp->bound = a + u1; /* the quantizer's own check; round-to-nearest always passes it */
  *error_bound = bound;
  return NCCLZ_OK;
}

void ncclz_exec_derive_qsgd(const ncclzQuantParams *qp, ncclzDtype dt, double k, double smax, double *quant_bound,
                            double *error_bound) {
  double s = ncclzQsgdLevels(qp);
  *quant_bound = smax / s;
  *error_bound = k * smax / s * (1 + 1e-6) + ncclz_exec_dtype_ulp(dt, 2 * k * smax) / 2;
}

void ncclz_exec_init_qparams(const ncclzConfig *cfg, uint32_t rank, size_t n_in, ncclzQuantParams *qp) {
  const ncclzQuantSpec *q = &cfg->quant;
  memset(qp, 0, sizeof *qp);
  qp->kind = q->kind;
  qp->rank = rank;
  qp->dims[0] = qp->dims[1] = qp->dims[2] = 1;
  if (q->kind == NCCLZ_QUANT_EB) {
    qp->lorenzo = q->lorenzo;
    for (int i = 0; i < cfg->ndims && i < 3; i++) qp->dims[3 - cfg->ndims + i] = cfg->dims[i];
    if (cfg->ndims < 1) qp->dims[2] = (uint32_t)n_in;
    qp->has_fill = q->has_fill;
    qp->fill_value = q->fill_value;
  } else if (q->kind == NCCLZ_QUANT_QSGD) {
    qp->qsgd_bits = q->qsgd_bits;
    qp->qsgd_bucket = q->qsgd_bucket;
    qp->seed = q->seed;
  }
}

/* The coders a config's policy leaves the choice (auto: all four, but plain where fill values must
 * pass through the codes: the float sum would add them). */
static uint32_t choice_coders(const ncclzConfig *cfg) {
  uint32_t all = (1u << NCCLZ_CHOICE_CODERS) - 1;
  switch (cfg->policy) {
  case NCCLZ_POLICY_FIXEDLEN: return 1u << NCCLZ_CHOICE_FIXEDLEN;
  case NCCLZ_POLICY_HUFFMAN: return 1u << NCCLZ_CHOICE_HUFFMAN;
  case NCCLZ_POLICY_AUTO: return cfg->quant.has_fill ? all & ~(1u << NCCLZ_CHOICE_PLAIN) : all;
  default: return 1u << NCCLZ_CHOICE_PLAIN; /* off, and RAW frames: the plain bytes' schedule */
  }
}

/* The cost model's policy for a config's frames (RAW frames cost what the plain bytes do). */
static ncclzChoiceCoder policy_choice(ncclzCoderPolicy p) {
  switch (p) {
  case NCCLZ_POLICY_FIXEDLEN: return NCCLZ_CHOICE_FIXEDLEN;
  case NCCLZ_POLICY_HUFFMAN: return NCCLZ_CHOICE_HUFFMAN;
  case NCCLZ_POLICY_AUTO: return NCCLZ_CHOICE_REA;
  default: return NCCLZ_CHOICE_PLAIN;
  }
}

/* The call as the cost model sees it: the profile's links (NVLink inside a node, the config's hint
 * between nodes: what one rank's transfers get), nodes of ranks_per_node ranks (unknown: one rank a
 * node, every hop on the hint's link). No CR (cr_ranks 0) until the caller sets one. */
static void choice_input(const ncclzConfig *cfg, ncclzCollective coll, size_t count, int nranks, size_t dsize,
                         ncclzChoiceInput *in) {
  const ncclzProfile *prof = cfg->profile;
  int g = cfg->ranks_per_node > 0 && nranks % cfg->ranks_per_node == 0 ? cfg->ranks_per_node : 1;
  memset(in, 0, sizeof *in);
  in->coll = coll;
  size_t elems = coll == NCCLZ_ALLGATHER ? ncclzCollOutCount(coll, count, nranks) : ncclzCollInCount(coll, count, nranks);
  in->bytes = (uint64_t)elems * dsize; /* nccl-tests' size */
  in->nodes = nranks / g;
  in->gpus_per_node = g;
  in->rails = g; /* the profile's transport is what one rank's transfers get */
  in->channels = cfg->channels ? cfg->channels : 1;
  in->nvlink_alpha_us = prof->transport[NCCLZ_HINT_NVLINK].alpha_us;
  in->nvlink_gbps = prof->transport[NCCLZ_HINT_NVLINK].beta_gbps;
  in->nic_alpha_us = prof->transport[cfg->hint].alpha_us;
  in->nic_gbps = prof->transport[cfg->hint].beta_gbps;
  in->data_class = cfg->quant.kind == NCCLZ_QUANT_QSGD ? NCCLZ_CLASS_QSGD
                   : cfg->quant.kind == NCCLZ_QUANT_EB ? (cfg->quant.lorenzo ? NCCLZ_CLASS_EB_LORENZO : NCCLZ_CLASS_EB)
                                                      : NCCLZ_CLASS_NONE;
  in->chunk_bytes = cfg->chunk_bytes;
  in->max_chunks = cfg->max_chunks;
}

ncclzStatus ncclz_exec_choose(const ncclzConfig *cfg, ncclzCollective coll, size_t count, int nranks, size_t dsize,
                              const double *cr, ncclzChoice *out) {
  int g = cfg->ranks_per_node, nodes = g > 0 && nranks % g == 0 ? nranks / g : 1;
  if (!cfg->profile || nodes < 2) return ncclzSetError(NCCLZ_ERR_ARG, "auto algorithm: needs a profile and several nodes");
  ncclzChoiceInput in;
  choice_input(cfg, coll, count, nranks, dsize, &in);
  in.cr_ranks = 1;
  for (int c = 0; c < NCCLZ_CODER_COUNT; c++) in.cr[c][0] = cr ? cr[c] : 1.0;
  in.coders = choice_coders(cfg);
  return ncclzChoose(cfg->profile, &in, out);
}

int ncclz_exec_pair_auto(const ncclzConfig *cfg, ncclzCollective coll, size_t count, int nranks) {
  int g = cfg->ranks_per_node;
  return cfg->algorithm == NCCLZ_ALGO_AUTO && count > 0 && cfg->profile && g > 0 && nranks % g == 0 &&
         nranks / g > 1 && ncclzChoiceServes(coll);
}

/* REA's sample window and pieces for the config's hint and the data's class. */
static ncclzReaConfig sample_config(const ncclzConfig *cfg, const ncclzQuantParams *qp) {
  ncclzReaConfig rc;
  ncclzReaConfigFromProfile(cfg->profile, cfg->hint, ncclzDataClassOf(qp), &rc);
  return rc;
}

uint32_t ncclz_exec_sample_pieces(const ncclzConfig *cfg, const ncclzQuantParams *qp, size_t n, uint64_t *start,
                                  uint64_t *len, uint32_t cap) {
  if (!cfg->profile) return 0;
  ncclzReaConfig rc = sample_config(cfg, qp);
  return ncclzReaSamplePieces(n, rc.sample_window_bytes, rc.sample_pieces, start, len, cap);
}

void ncclz_exec_sample_wire(const ncclzConfig *cfg, const ncclzQuantParams *qp, const int32_t *sym, size_t n,
                            size_t dsize, double *w) {
  memset(w, 0, PAIR_SLOTS * sizeof *w);
  if (!n || !cfg->profile) return;
  ncclzReaConfig rc = sample_config(cfg, qp);
  ncclzSampleStats s;
  if (ncclzReaSampleProfile(sym, n, rc.sample_window_bytes, rc.sample_pieces, &s)) {
    w[PAIR_FAILED] = 1;
    return;
  }
  size_t frame = cfg->chunk_bytes / dsize < n ? cfg->chunk_bytes / dsize : n;
  ncclzReaCandidates cand;
  ncclzReaPredictFrames(&s, frame, dsize, ncclzReaSideBytes(qp, frame), &cfg->coder_params, &cand);
  for (int c = 0; c < NCCLZ_CODER_COUNT; c++) {
    double b = c == NCCLZ_CODER_RAW ? (double)cand.raw_frame_bytes
               : cand.pred_valid[c] ? (double)cand.pred_frame_bytes[c]
                                    : cand.frame_raw_bytes; /* no prediction: no gain */
    w[c] = b / cand.frame_raw_bytes;
  }
}

ncclzStatus ncclz_exec_choose_sampled(const ncclzConfig *cfg, ncclzCollective coll, size_t count, int nranks,
                                      size_t dsize, const double *w, ncclzChoice *out, double *cr) {
  if (w[PAIR_FAILED] > 0) return ncclzSetError(NCCLZ_ERR_NOMEM, "auto pair: a rank could not sample its data");
  double c_of[NCCLZ_CODER_COUNT];
  for (int c = 0; c < NCCLZ_CODER_COUNT; c++) c_of[c] = w[c] > 0 ? 1.0 / w[c] : 1.0;
  if (cr) memcpy(cr, c_of, sizeof c_of);
  return ncclz_exec_choose(cfg, coll, count, nranks, dsize, c_of, out);
}

ncclzStatus ncclz_exec_agree_pair(const ncclzConfig *cfg, ncclzTransport *t, ncclzCollective coll, size_t count,
                                  size_t dsize, double *w, ncclzExecStats *st, ncclzChoice *out) {
  double t0 = ncclzNowSeconds();
  ncclzStatus s = t->allreduce_max(t, w, PAIR_SLOTS);
  st->t_agree += ncclzNowSeconds() - t0;
  return s ? s : ncclz_exec_choose_sampled(cfg, coll, count, t->nranks, dsize, w, out, st->pair_cr);
}

ncclzCoder ncclz_exec_policy_coder(ncclzCoderPolicy p) {
  return p == NCCLZ_POLICY_FIXEDLEN ? NCCLZ_CODER_FIXEDLEN : p == NCCLZ_POLICY_HUFFMAN ? NCCLZ_CODER_HUFFMAN : NCCLZ_CODER_RAW;
}

ncclzCoderPolicy ncclz_exec_choice_policy(ncclzChoiceCoder c) {
  switch (c) {
  case NCCLZ_CHOICE_FIXEDLEN: return NCCLZ_POLICY_FIXEDLEN;
  case NCCLZ_CHOICE_HUFFMAN: return NCCLZ_POLICY_HUFFMAN;
  case NCCLZ_CHOICE_REA: return NCCLZ_POLICY_AUTO;
  default: return NCCLZ_POLICY_OFF;
  }
}

double ncclz_exec_plain_bound(ncclzDtype dt, double k, double gmax) {
  double top = k * gmax;
  return (k - 1) * ncclz_exec_f32_ulp(top) / 2 + (dt == NCCLZ_DTYPE_F32 ? 0.0 : ncclz_exec_dtype_ulp(dt, top) / 2);
}

uint32_t ncclz_exec_chain_chunks(const ncclzConfig *cfg, size_t count, int nranks, size_t dsize) {
  ncclzChoiceInput in;
  choice_input(cfg, NCCLZ_BROADCAST, count, nranks, dsize, &in);
  size_t per = (count + in.channels - 1) / in.channels; /* a channel's elements */
  uint32_t c = ncclzChainChunks(cfg->profile, &in, (double)per * (double)dsize, policy_choice(cfg->policy));
  return c < per ? c : (uint32_t)(per ? per : 1);
}

void ncclz_exec_spec(const ncclzConfig *cfg, ncclzCollective coll, size_t count, int nranks, int root, size_t dsize,
                     ncclzScheduleSpec *sp) {
  memset(sp, 0, sizeof *sp);
  sp->coll = coll;
  sp->algo = cfg->algorithm;
  if (sp->algo == NCCLZ_ALGO_AUTO) { /* the cost model's pair where the nodes and the profile are known */
    ncclzChoice ch;
    int weigh = ncclz_exec_pair_auto(cfg, coll, count, nranks);
    sp->algo = weigh && ncclz_exec_choose(cfg, coll, count, nranks, dsize, NULL, &ch) == NCCLZ_OK ? ch.algorithm
                                                                                                : NCCLZ_ALGO_RING;
  }
  sp->nranks = nranks;
  sp->ranks_per_node = cfg->ranks_per_node;
  sp->root = root;
  sp->nchunks = 1;
  sp->nchannels = cfg->channels ? cfg->channels : 1;
  sp->hier_inter = NCCLZ_ALGO_RHD;
  char why[160];
  if (ncclzScheduleCheck(sp, why, sizeof why)) return;
  if (ncclzScheduleIsChain(sp) && cfg->profile && count > 0)
    sp->nchunks = ncclz_exec_chain_chunks(cfg, count, nranks, dsize);
  else
    sp->nchunks = ncclzScheduleChunksFor(sp, count, cfg->chunk_bytes / dsize,
                                         cfg->max_chunks ? cfg->max_chunks : NCCLZ_DEFAULT_MAX_CHUNKS);
}

int ncclz_exec_pair_rebuilds(const ncclzConfig *cfg, ncclzAlgorithm algo, ncclzCoderPolicy policy, ncclzCollective coll,
                             size_t count, int nranks, int root, size_t dsize, const ncclzSchedule *s) {
  ncclzConfig pair = *cfg;
  ncclzScheduleSpec sp;
  pair.algorithm = algo;
  pair.policy = policy;
  ncclz_exec_spec(&pair, coll, count, nranks, root, dsize, &sp);
  return sp.algo != s->algo || sp.nchunks * (sp.nchannels ? sp.nchannels : 1) != s->nchunks;
}
