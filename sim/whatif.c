/* The what-if runner shared by `ncclz sim` and the what-if report: every point of a scenario, each
 * with its plain-NCCL baseline on the same platform; and what a NIC bandwidth may be. */
#include "sim_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* 1 when two points' plain replays are the same job: collective, size, platform and every option a
 * plain replay reads (the coder and the compressed schedule aside). */
static int same_plain_job(const ncclzSimPoint *a, const ncclzSimPoint *b) {
  const ncclzSimOptions *x = &a->options, *y = &b->options;
  return x->coll == y->coll && x->bytes == y->bytes && x->root == y->root && x->fidelity == y->fidelity &&
         x->chunk_bytes == y->chunk_bytes && x->min_chunks == y->min_chunks && x->max_chunks == y->max_chunks &&
         x->banks == y->banks && x->comm_lanes == y->comm_lanes && x->size_protocol == y->size_protocol &&
         x->hint == y->hint && x->full_max_ranks == y->full_max_ranks && x->channels == y->channels &&
         x->every_step == y->every_step && x->max_replay_s == y->max_replay_s && x->max_replay_mib == y->max_replay_mib &&
         !memcmp(&a->platform, &b->platform, sizeof a->platform);
}

/* An earlier compressed point of the same plain job (its baseline and best plain schedule are this
 * one's), or -1: a what-if's coders share them instead of replaying them once each. */
static long compressed_twin(const ncclzSimScenario *s, size_t i) {
  for (size_t j = 0; j < i; j++)
    if (s->points[j].options.compress != NCCLZ_SIM_OFF && same_plain_job(&s->points[j], &s->points[i])) return (long)j;
  return -1;
}

/* Plain-NCCL time of point i: an earlier "off" point of the same collective, platform and size,
 * or an earlier compressed point's baseline of the same plain job, else a fresh replay. */
static ncclzStatus baseline(const ncclzProfile *prof, const ncclzSimScenario *s, const ncclzSimPointResult *done,
                            size_t i, double *us) {
  const ncclzSimPoint *p = &s->points[i];
  long twin = ncclzSimScenarioPlainTwin(s, i), ctwin = compressed_twin(s, i);
  if (twin >= 0 || ctwin >= 0) {
    *us = twin >= 0 ? done[twin].r.time_us : done[ctwin].base_us;
    return NCCLZ_OK;
  }
  ncclzSimOptions o = p->options;
  o.compress = NCCLZ_SIM_OFF;
  ncclzSimResult res;
  ncclzStatus st = ncclzSimRun(prof, &s->data, &p->platform, &o, &res);
  *us = res.time_us;
  return st;
}

ncclzStatus ncclzSimScenarioRunPoint(const ncclzProfile *prof, const ncclzSimScenario *s, ncclzSimPointResult *out,
                                     size_t i) {
  const ncclzSimPoint *p = &s->points[i];
  ncclzSimPointResult *o = &out[i];
  memset(o, 0, sizeof *o);
  ncclzStatus st = ncclzSimRun(prof, &s->data, &p->platform, &p->options, &o->r);
  if (st != NCCLZ_OK) return st;
  o->base_us = o->r.time_us;
  if (p->options.compress != NCCLZ_SIM_OFF && (st = baseline(prof, s, out, i, &o->base_us)) != NCCLZ_OK) return st;
  o->speedup = o->r.time_us > 0 ? o->base_us / o->r.time_us : 0.0;
  int nr = p->platform.nodes * p->platform.gpus_per_node;
  o->algbw = ncclzSimAlgBw(p->options.bytes, o->r.time_us);
  o->busbw = ncclzSimBusBw(p->options.coll, nr, p->options.bytes, o->r.time_us);
  o->base_busbw = ncclzSimBusBw(p->options.coll, nr, p->options.bytes, o->base_us);
  o->wire_cr = o->r.wire_bytes > 0 ? o->r.raw_bytes / o->r.wire_bytes : 1.0;
  if (p->options.compress == NCCLZ_SIM_OFF) return NCCLZ_OK;
  long twin = compressed_twin(s, i); /* once per plain job, not once per coder */
  if (twin >= 0) {
    o->best_plain = out[twin].best_plain;
    return NCCLZ_OK;
  }
  ncclzSimOptions plain = p->options;
  plain.compress = NCCLZ_SIM_OFF;
  plain.algorithm = NCCLZ_ALGO_AUTO;
  return ncclzSimRunBest(prof, &s->data, &p->platform, &plain, &o->best_plain);
}

ncclzStatus ncclzSimScenarioRun(const ncclzProfile *prof, const ncclzSimScenario *s, ncclzSimPointResult *out,
                                ncclzSimProgressFn progress, void *ctx) {
  for (size_t i = 0; i < s->npoints; i++) {
    if (progress) progress(ctx, i, s->npoints);
    ncclzStatus st = ncclzSimScenarioRunPoint(prof, s, out, i);
    if (st != NCCLZ_OK) return ncclzSetError(st, "point %zu: %s", i, ncclzLastError());
  }
  if (progress) progress(ctx, s->npoints, s->npoints);
  return NCCLZ_OK;
}

/* ------------------------------------------------------------------ units */

int ncclzSimNicWarning(const char *field, double gbytes_per_s, int unitless, char *buf, size_t cap) {
  char bw[64];
  ncclzFormatBandwidth(gbytes_per_s, bw, sizeof bw);
  if (gbytes_per_s > NCCLZ_SIM_NIC_MAX_GBPS) {
    snprintf(buf, cap, "%s: %s per NIC is above what NICs offer (1.6 Tb/s)%s", field, bw,
             unitless ? "; nic_gbps is in GB/s: for Gb/s write \"nic\": \"200Gb/s\"" : "");
    return 1;
  }
  if (gbytes_per_s < NCCLZ_SIM_NIC_MIN_GBPS) {
    snprintf(buf, cap, "%s: %s per NIC is below what NICs offer (1 Gb/s)", field, bw);
    return 1;
  }
  if (unitless && gbytes_per_s > 100.0) {
    snprintf(buf, cap, "%s: %s per NIC; nic_gbps is in GB/s (for Gb/s write \"nic\": \"%gGb/s\")", field, bw,
             gbytes_per_s);
    return 1;
  }
  return 0;
}
