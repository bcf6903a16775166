/* Halving-doubling that folds (a count that is not a power of two) replayed reduced: full replays
 * of a smaller core of the same fold, extrapolated. */
#include "sim_internal.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* Folds are replayed in full at a smaller size of the same shape and buffer: a core of pc units
 * (hier: nodes; flat rhd: ranks) with the leading bits of the folded units (rem, shifted), as which
 * new ranks hold two blocks, and so how the halvings' ranges differ, follows from rem's bits. The
 * cost model (model/choose.c) prices each level's steps and each halving's ranges but not how the
 * folded and unfolded ranks' flows contend; that contention follows rem's leading bits, which the
 * core keeps, so the replay's time plus the model's difference between the point and the core is
 * the point's (sim_run_folded; within 2% of the full replay where measured, docs/simulator.md). Where
 * the model has no time (forced RAW frames): cores of pa and 2 pa, replayed and extrapolated as
 * A - C/p + latency x steps (each halving sends half of what is left, so the bytes on a rank's
 * path change only by the blocks' granularity, 1/p, and each level adds its steps' latency). */
#define SIM_FOLD_NODES_M 16  /* hier: the core of the one replay (8 nodes: 10% off at 100 x 2) */
#define SIM_FOLD_RANKS_M 128 /* flat rhd (64 ranks: 8.5% off at 125 x 8) */
#define SIM_FOLD_NODES_A 16 /* hier: the smaller core of the two replays */
#define SIM_FOLD_RANKS_A 128 /* flat rhd */

/* The platform with a core of pc units and the leading bits of p's folded units. */
static ncclzSimPlatform fold_scaled(const ncclzSimPlatform *p, int hier, int pc) {
  ncclzSimPlatform q = *p;
  int g = p->gpus_per_node, units = hier ? p->nodes : p->nodes * g, p2 = 1, rem;
  while (p2 * 2 <= units) p2 *= 2;
  rem = (int)((long long)(units - p2) * pc / p2);
  if (hier) {
    q.nodes = pc + (rem > 0 ? rem : 1);
  } else { /* whole nodes */
    q.nodes = (pc + rem) / g;
    if (q.nodes * g <= pc) q.nodes = pc / g + 1;
  }
  return q;
}

/* The full replay of a fold's core q (o: fidelity full, every step). */
static ncclzStatus fold_replay(const ncclzProfile *prof, const ncclzSimData *data, const ncclzSimPlatform *q,
                               const ncclzSimOptions *o, ncclzSimResult *r) {
  return sim_run_once(prof, data, q, o, 0, 1, r);
}

/* A fold's result on the whole point from a replay r of platform q: frames and bytes per rank. */
static void fold_scale(const ncclzSimResult *r, const ncclzSimPlatform *p, const ncclzSimPlatform *q, ncclzSimResult *res) {
  int g = p->gpus_per_node, n = p->nodes * g;
  double scale = (double)n / (q->nodes * g);
  *res = *r;
  sim_scale_totals(res, scale);
  res->nranks = n;
  res->fidelity = NCCLZ_FID_REDUCED;
  res->approximate = 1;
}

/* Two replays of the fold on cores of pa and 2 pa units, extrapolated as A - C/p + latency x steps
 * (where the cost model has no time: forced RAW frames). */
static ncclzStatus run_folded_two(const ncclzProfile *prof, const ncclzSimData *data, const ncclzSimPlatform *p,
                                  const ncclzSimOptions *full, int hier, int pa, int p2, ncclzSimResult *res) {
  ncclzSimPlatform qa = fold_scaled(p, hier, pa), qb = fold_scaled(p, hier, 2 * pa);
  ncclzSimResult ra, rb;
  memset(&ra, 0, sizeof ra);
  int fd = -1;
  pid_t pid = sim_side_start(prof, data, &qa, full, SIM_SIDE_FOLD_CORE, &fd);
  if (pid < 0) return NCCLZ_ERR_IO; /* pipe_fork set the error */
  ncclzStatus st = fold_replay(prof, data, &qb, full, &rb), sa = sim_side_finish(pid, fd, &ra);
  if (st != NCCLZ_OK) return st;
  if (sa != NCCLZ_OK) return sa;
  /* each level of the core adds its steps' latency (AllReduce: a halving and a doubling) */
  double lat = (full->coll == NCCLZ_ALLREDUCE ? 2 : 1) * p->nic_latency_us, la = lat * log2(pa), lb = lat * log2(2.0 * pa);
  double c = (rb.time_us - lb - (ra.time_us - la)) * 2 * pa; /* T(pc) - lat log2(pc) = A - c / pc */
  fold_scale(&rb, p, &qb, res);
  res->time_us = rb.time_us - lb + c / (2 * pa) - c / p2 + lat * log2(p2);
  snprintf(res->why, sizeof res->why,
           "reduced, approximate (%s): full replays of the same fold on %d and %d ranks, extrapolated in the "
           "core's size", SIM_FOLD_ACCURACY, qa.nodes * p->gpus_per_node, qb.nodes * p->gpus_per_node);
  return NCCLZ_OK;
}

ncclzStatus sim_run_folded(const ncclzProfile *prof, const ncclzSimData *data, const ncclzSimPlatform *p,
                           const ncclzSimOptions *opt, ncclzSimResult *res) {
  ncclzAlgorithm a;
  uint32_t ch;
  sim_resolve(p, opt, &a, &ch);
  int hier = a == NCCLZ_ALGO_HIER, g = p->gpus_per_node, units = hier ? p->nodes : p->nodes * g, p2 = 1;
  while (p2 * 2 <= units) p2 *= 2;
  ncclzSimOptions full = *opt;
  full.fidelity = NCCLZ_FID_FULL;
  full.every_step = 1;
  double t0 = ncclzNowSeconds();
  int pc = hier ? SIM_FOLD_NODES_M : SIM_FOLD_RANKS_M;
  if (pc > p2 / 2) pc = p2 / 2; /* fidelity reduced asked for on a small point */
  ncclzSimPlatform q = fold_scaled(p, hier, pc);
  double mp = sim_predicted_us(prof, data, p, opt, a), mq = sim_predicted_us(prof, data, &q, opt, a);
  ncclzStatus st;
  if (mp > 0 && mq > 0) {
    ncclzSimResult r;
    if ((st = fold_replay(prof, data, &q, &full, &r)) != NCCLZ_OK) return st;
    fold_scale(&r, p, &q, res);
    res->time_us = r.time_us + (mp - mq);
    snprintf(res->why, sizeof res->why,
             "reduced, approximate (%s): the same fold replayed on %d ranks by %d actors, plus the cost model's "
             "difference", SIM_FOLD_ACCURACY, q.nodes * g, r.actors);
  } else {
    int pa = hier ? SIM_FOLD_NODES_A : SIM_FOLD_RANKS_A;
    if (p2 < 4 * pa) pa = p2 / 4; /* fidelity reduced asked for on a small point */
    if ((st = run_folded_two(prof, data, p, &full, hier, pa, p2, res)) != NCCLZ_OK) return st;
  }
  res->wall_s = ncclzNowSeconds() - t0;
  return NCCLZ_OK;
}
