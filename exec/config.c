/* Executor config: defaults, policy names, and the fingerprint that ranks compare at init. */
#include "ncclz/exec.h"

#include <math.h>
#include <string.h>

static const char *const policy_names[NCCLZ_POLICY_COUNT] = {"off", "raw", "fixedlen", "huffman", "auto"};

const char *ncclzPolicyName(ncclzCoderPolicy p) { return (unsigned)p < NCCLZ_POLICY_COUNT ? policy_names[p] : "?"; }

int ncclzPolicyFromName(const char *name) {
  for (int i = 0; i < NCCLZ_POLICY_COUNT; i++)
    if (name && !strcmp(name, policy_names[i])) return i;
  return -1;
}

void ncclzConfigDefault(ncclzConfig *c) {
  memset(c, 0, sizeof *c);
  c->quant.kind = NCCLZ_QUANT_NONE;
  c->policy = NCCLZ_POLICY_AUTO;
  c->chunk_bytes = 4u << 20;
  c->max_chunks = 0; /* 64, and the cost model's count on a chain (call_rules.c) */
  c->hint = NCCLZ_HINT_NET;
  c->comm_lanes = 4; /* socket: four lanes beat two and three on the 1 GiB AllReduce (docs/executor.md, comm lanes) */
  ncclzFrameCoderParams(&c->coder_params); /* HUFFMAN segments for one frame at a time (model.h) */
}

ncclzStatus ncclzConfigCheck(const ncclzConfig *cfg) {
  if ((unsigned)cfg->policy >= NCCLZ_POLICY_COUNT)
    return ncclzSetError(NCCLZ_ERR_ARG, "config policy: %d is not a coder policy", (int)cfg->policy);
  if (cfg->policy == NCCLZ_POLICY_AUTO && !cfg->profile)
    return ncclzSetError(NCCLZ_ERR_ARG, "config profile: the auto policy (REA) needs a calibration profile");
  if (cfg->comm_lanes < 1 || cfg->comm_lanes > NCCLZ_MAX_COMM_LANES)
    return ncclzSetError(NCCLZ_ERR_ARG, "config comm_lanes: %u (1 to %d)", cfg->comm_lanes, NCCLZ_MAX_COMM_LANES);
  if (cfg->chunk_bytes < NCCLZ_CHUNK_MIN_BYTES)
    return ncclzSetError(NCCLZ_ERR_ARG, "config chunk_bytes: need chunk_bytes >= %d", NCCLZ_CHUNK_MIN_BYTES);
  if (!(cfg->final_error_bound >= 0) || isinf(cfg->final_error_bound))
    return ncclzSetError(NCCLZ_ERR_ARG, "config final_error_bound: must be a finite number >= 0 (0: the spec's)");
  if (cfg->final_error_bound > 0 && cfg->quant.kind != NCCLZ_QUANT_EB)
    return ncclzSetError(NCCLZ_ERR_ARG, "config final_error_bound: needs an eb: quantizer");
  if (cfg->quant.lorenzo && cfg->quant.has_fill)
    return ncclzSetError(NCCLZ_ERR_ARG, "config quant: Lorenzo with fill values is not supported in collectives");
  if (cfg->policy == NCCLZ_POLICY_OFF && cfg->quant.kind != NCCLZ_QUANT_NONE)
    return ncclzSetError(NCCLZ_ERR_ARG, "config: policy off is the plain collective; it takes quant none");
  return NCCLZ_OK;
}

/* FNV-1a over the fields one at a time (never over struct padding, which is indeterminate). */
typedef struct {
  uint64_t h;
} fp_t;

static void mix(fp_t *f, const void *p, size_t n) {
  const unsigned char *b = p;
  for (size_t i = 0; i < n; i++) f->h = (f->h ^ b[i]) * 0x100000001b3ull;
}
#define MIX(f, v)                 \
  do {                            \
    __typeof__(v) v_ = (v);       \
    mix((f), &v_, sizeof v_);     \
  } while (0)

static void mix_profile(fp_t *f, const ncclzProfile *p) {
  MIX(f, p != NULL);
  if (!p) return;
  const ncclzThresholds *t = &p->thresholds;
  MIX(f, t->fast_path_bytes);
  MIX(f, t->huff_min_bytes);
  MIX(f, t->min_gain_permil);
  MIX(f, t->sample_window_bytes);
  MIX(f, t->sample_pieces);
  for (int h = 0; h < NCCLZ_HINT_COUNT; h++) {
    MIX(f, p->transport[h].alpha_us);
    MIX(f, p->transport[h].beta_gbps);
  }
}

uint64_t ncclzConfigFingerprint(const ncclzConfig *c) {
  fp_t f = {0xcbf29ce484222325ull};
  const ncclzQuantSpec *q = &c->quant;
  MIX(&f, (int)q->kind);
  MIX(&f, q->eb_is_rel);
  MIX(&f, q->eb);
  MIX(&f, q->lorenzo);
  MIX(&f, q->has_fill);
  MIX(&f, q->fill_value);
  MIX(&f, q->qsgd_bits);
  MIX(&f, q->qsgd_bucket);
  MIX(&f, q->seed);
  MIX(&f, (int)c->policy);
  MIX(&f, (uint64_t)c->chunk_bytes);
  MIX(&f, c->max_chunks);
  MIX(&f, c->final_error_bound);
  MIX(&f, (int)c->hint);
  MIX(&f, c->coder_params.fixedlen_tile_blocks);
  MIX(&f, c->coder_params.huffman_segment);
  MIX(&f, c->ndims);
  MIX(&f, c->comm_lanes);
  MIX(&f, c->rea_per_frame);
  for (int i = 0; i < 3; i++) MIX(&f, c->dims[i]);
  MIX(&f, (int)c->algorithm);
  MIX(&f, c->ranks_per_node);
  MIX(&f, c->channels);
  mix_profile(&f, c->profile);
  return f.h;
}
