/* Each replay actor's op list: which rank an actor plays, the share of its rank's list a channel's
 * actor walks, and the reductions of a list for the reduced replays (hier's ring between nodes
 * with its middle steps dropped; a hier node's GPUs collapsed into one actor's list). */
#include "sim_internal.h"

#include <stdlib.h>
#include <string.h>

/* Rank (v, q) of a hierarchical ReduceScatter or AllGather is typical when its block of the
 * permutation goes to another node and its own block comes from another node: it finishes block
 * q*m + v, whose owner is rank q*m + v, and its own block v*g + q is finished on node
 * (v*g + q) % m (no folds: a power of two of nodes under halving-doubling, or the ring). */
static int hier_typical(int v, int q, int m, int g) { return (q * m + v) / g != v && (v * g + q) % m != v; }

int sim_hier_typical_nodes(int m, int g, int rep[2]) {
  int k = 0, odd = 0;
  for (int v = 0; v < m; v++) {
    int all = 1;
    for (int q = 0; q < g; q++)
      if (!hier_typical(v, q, m, g)) all = 0, odd++;
    if (all && k < 2) rep[k++] = v;
  }
  /* the others finish early (or start early, in AllGather) and load their partners' NICs while
   * the typical ranks exchange: with 14 of 128 ranks (16 x 8) that moved the full replay's time
   * by up to 7%, with 1 in 64 (64 x 8) by up to 0.56%, below that by under 0.04% */
  return k == 2 && 64 * odd < m * g ? 0 : -1;
}

int sim_actor_rank(const sim_job *j, int a) {
  if (j->collapse) return (j->mirror ? j->rep_node[a] : a) * j->lay.p.gpus_per_node; /* the node's GPU 0 */
  if (!j->mirror) return a % j->nranks;
  int g = j->lay.p.gpus_per_node;
  return j->rep_node[a / g] * g + a % g;
}

/* The channel an op belongs to when a rank's channels run as actors of their own: the tree's
 * two trees and Broadcast's chains (NCCL runs them on separate channels, each progressing on its
 * own; in one list, a rank that ends one channel's chain would hold back the chains it starts). */
static int bcast_channels(const sim_job *j) {
  return j->spec.coll == NCCLZ_BROADCAST && j->spec.algo == NCCLZ_ALGO_RING && j->nranks > 1 && j->spec.nchannels > 1;
}
int sim_channels(const sim_job *j) {
  if (j->fold) return 2;
  if (bcast_channels(j)) return (int)j->spec.nchannels;
  return j->spec.algo == NCCLZ_ALGO_TREE && j->nranks > 1 ? 2 * (int)(j->spec.nchannels ? j->spec.nchannels : 1) : 1;
}
static int op_channel(const sim_job *j, const ncclzOp *o) {
  if (bcast_channels(j)) return (int)(o->chunk / j->spec.nchunks);
  return sim_channels(j) > 1 ? (int)(o->chunk / j->spec.nchunks) * 2 + (int)o->block : 0;
}

/* Channel k's ops of the rank's whole list, deps renumbered, into *s (a list of its own). */
static int channel_of_list(const sim_job *j, const ncclzSchedule *whole, int k, ncclzSchedule *s) {
  *s = *whole;
  s->ops = malloc((whole->nops ? whole->nops : 1) * sizeof *s->ops);
  int32_t *map = malloc((whole->nops + 1) * sizeof *map);
  if (!s->ops || !map) return free(map), -1;
  size_t n = 0;
  for (size_t i = 0; i < whole->nops; i++) {
    map[i] = -1;
    if (op_channel(j, &whole->ops[i]) != k) continue;
    ncclzOp o = whole->ops[i];
    o.dep = o.dep >= 0 ? map[o.dep] : -1;
    map[i] = (int32_t)n;
    s->ops[n++] = o;
  }
  s->nops = n;
  free(map);
  return 0;
}

/* Hier's ring between nodes with rail_head set: keeps the first rail_head and last rail_tail steps
 * of each rail ring stage (its NET ops outside the permutation, m - 1 steps a stage) and drops the
 * middle ones, all alike in the steady state; an op that needed a dropped receive takes the last
 * kept receive of its chunk instead (the partial sum or the frame it forwards). */
static int drop_rail_steps(const sim_job *j, ncclzSchedule *s) {
  uint32_t m1 = (uint32_t)(j->nranks / j->lay.p.gpus_per_node - 1), first = UINT32_MAX, nc = j->spec.nchunks;
  int32_t *map = malloc((s->nops + 1) * sizeof *map), *last = malloc(nc * sizeof *last);
  if (!map || !last) return free(map), free(last), -1;
  for (uint32_t c = 0; c < nc; c++) last[c] = -1;
  for (size_t i = 0; i < s->nops; i++)
    if (s->ops[i].link == NCCLZ_LINK_NET && s->ops[i].phase != NCCLZ_PHASE_EXCHANGE && s->ops[i].step < first)
      first = s->ops[i].step;
  size_t n = 0;
  for (size_t i = 0; i < s->nops; i++) {
    ncclzOp o = s->ops[i];
    int rail = o.link == NCCLZ_LINK_NET && o.phase != NCCLZ_PHASE_EXCHANGE && o.chunk < nc;
    uint32_t r = rail ? (o.step - first) % m1 : 0;
    if (rail && r >= (uint32_t)j->rail_head && r < m1 - (uint32_t)j->rail_tail) {
      map[i] = o.kind == NCCLZ_OP_RECV ? last[o.chunk] : -1;
      continue;
    }
    o.dep = o.dep >= 0 ? map[o.dep] : -1;
    map[i] = (int32_t)n;
    if (rail && o.kind == NCCLZ_OP_RECV) last[o.chunk] = (int32_t)n;
    s->ops[n++] = o;
  }
  s->nops = n;
  free(map);
  free(last);
  return 0;
}

/* The span [*lo, *hi) of a list's permutation transfers (hier's EXCHANGE phase), contiguous: 0, or
 * -1 when another transfer lies inside it. A rank whose blocks stay put has an empty one where the
 * permutation would be: AllGather's before its first transfer, ReduceScatter's at the end. */
static int perm_span(const ncclzSchedule *s, size_t *lo, size_t *hi) {
  size_t first = s->nops;
  *lo = *hi = s->nops;
  for (size_t i = 0; i < s->nops; i++) {
    const ncclzOp *o = &s->ops[i];
    if (o->kind > NCCLZ_OP_RECV) continue;
    if (first == s->nops) first = i;
    if (o->phase == NCCLZ_PHASE_EXCHANGE) {
      if (*lo == s->nops) *lo = i;
      *hi = i + 1;
    }
  }
  if (*lo == s->nops && s->coll == NCCLZ_ALLGATHER) *lo = *hi = first;
  for (size_t i = *lo; i < *hi; i++)
    if (s->ops[i].kind <= NCCLZ_OP_RECV && s->ops[i].phase != NCCLZ_PHASE_EXCHANGE) return -1;
  return 0;
}

/* Places the permutation ops of GPU q's list `from` (span [lo, hi)) into the merged list ops at *n
 * on: step's chunk k's sends (want_send) or receives, mapping their old indices in map. */
static void perm_place(ncclzOp *ops, const ncclzSchedule *from, size_t lo, size_t hi, uint32_t step, uint32_t k,
                       int want_send, int q, int16_t *origin, int32_t *map, size_t *n) {
  for (size_t i = lo; i < hi; i++) {
    const ncclzOp *o = &from->ops[i];
    if (o->kind > NCCLZ_OP_RECV || o->step != step || o->chunk != k || (o->kind == NCCLZ_OP_SEND) != want_send) continue;
    map[i] = (int32_t)*n;
    origin[*n] = (int16_t)q;
    ops[(*n)++] = *o;
  }
}

/* A dep of GPU q's op (list index d, permutation span [lo, hi)): before the span every GPU's list is
 * alike (the kept GPU's index), inside it the merged index, after it (the kept GPU's ops only)
 * shifted by `shift`. */
static int32_t perm_dep(int32_t d, size_t lo, size_t hi, const int32_t *map, long shift) {
  if (d < 0 || (size_t)d < lo) return d;
  return (size_t)d < hi ? map[d] : (int32_t)(d + shift);
}

/* The GPU of node v whose list the collapsed actor keeps outside the permutation: one whose
 * permutation transfers all cross nodes, as almost every GPU's do (the lists are alike outside it),
 * else GPU 0. */
static int perm_typical(const ncclzSchedule *gs, const size_t *lo, const size_t *hi, int g, int v) {
  int best = 0;
  size_t most = 0;
  for (int q = 0; q < g; q++) {
    size_t net = 0, all = hi[q] - lo[q];
    for (size_t i = lo[q]; i < hi[q]; i++) net += gs[q].ops[i].peer / g != v;
    if (all && net == all && net > most) most = net, best = q;
  }
  return best;
}

/* The first and last step of the GPUs' permutation spans. */
static void span_steps(const ncclzSchedule *gs, const size_t *lo, const size_t *hi, int g, uint32_t *first,
                       uint32_t *last) {
  *first = UINT32_MAX;
  *last = 0;
  for (int q = 0; q < g; q++)
    for (size_t i = lo[q]; i < hi[q]; i++) {
      *first = gs[q].ops[i].step < *first ? gs[q].ops[i].step : *first;
      *last = gs[q].ops[i].step > *last ? gs[q].ops[i].step : *last;
    }
}

/* Collapse (sim_job.collapse) of hier's ReduceScatter or AllGather: the node's GPUs send their
 * permutation blocks to different nodes, so actor v's list takes every GPU's permutation transfers
 * in place of one GPU's: step by step (a send's dep, an earlier step's receive, comes before it)
 * and chunk by chunk, the GPUs' sends, then their receives; origin marks each with its GPU.
 * Outside the permutation the list is a typical GPU's (perm_typical): every GPU's is alike there
 * (the stages are symmetric in the local index), so deps keep their indices. */
static int collapse_permutation(const sim_job *j, int v, ncclzSchedule *s, int16_t **origin_out) {
  int g = j->collapse, rc = -1;
  *origin_out = NULL;
  if (!g || j->spec.algo != NCCLZ_ALGO_HIER || j->spec.coll == NCCLZ_ALLREDUCE) return 0;
  ncclzSchedule *gs = calloc((size_t)g, sizeof *gs);
  size_t *lo = calloc((size_t)g, sizeof *lo), *hi = calloc((size_t)g, sizeof *hi), total = 0;
  int32_t **map = calloc((size_t)g, sizeof *map);
  int16_t *origin = NULL;
  ncclzOp *ops = NULL;
  if (!gs || !lo || !hi || !map) goto out;
  for (int q = 0; q < g; q++) {
    if (ncclzScheduleBuildSpec(&j->spec, v * g + q, &gs[q]) || perm_span(&gs[q], &lo[q], &hi[q]) ||
        lo[q] != lo[0] || !(map[q] = calloc(gs[q].nops + 1, sizeof **map)))
      goto out;
    total += hi[q] - lo[q];
  }
  int b = perm_typical(gs, lo, hi, g, v);
  const ncclzSchedule *base = &gs[b];
  size_t nops = base->nops - (hi[b] - lo[b]) + total, n = lo[b];
  long shift = (long)(lo[b] + total) - (long)hi[b];
  if (!(ops = malloc(nops * sizeof *ops)) || !(origin = malloc(nops * sizeof *origin))) goto out;
  memcpy(ops, base->ops, lo[b] * sizeof *ops);
  for (size_t i = 0; i < lo[b]; i++) origin[i] = -1;
  uint32_t first, last;
  span_steps(gs, lo, hi, g, &first, &last);
  for (uint32_t st = first; total && st <= last; st++)
    for (uint32_t k = 0; k < j->spec.nchunks; k++)
      for (int send = 1; send >= 0; send--)
        for (int q = 0; q < g; q++) perm_place(ops, &gs[q], lo[q], hi[q], st, k, send, q, origin, map[q], &n);
  for (size_t i = hi[b]; i < base->nops; i++, n++) {
    ops[n] = base->ops[i];
    ops[n].dep = perm_dep(ops[n].dep, lo[b], hi[b], map[b], shift);
    origin[n] = -1;
  }
  for (size_t i = lo[b]; i < lo[b] + total; i++) {
    int q = origin[i];
    ops[i].dep = perm_dep(ops[i].dep, lo[q], hi[q], map[q], shift);
  }
  if (n != nops) goto out; /* a permutation op outside the chunks */
  free(s->ops);
  s->ops = ops;
  s->nops = nops;
  *origin_out = origin;
  ops = NULL;
  origin = NULL;
  rc = 0;
out:
  for (int q = 0; gs && q < g; q++) ncclzScheduleFree(&gs[q]);
  for (int q = 0; map && q < g; q++) free(map[q]);
  free(gs);
  free(lo);
  free(hi);
  free(map);
  free(ops);
  free(origin);
  return rc;
}

int sim_actor_list(const sim_job *j, int a, int k, const ncclzSchedule *whole, ncclzSchedule *s, int16_t **origin) {
  *origin = NULL;
  if (channel_of_list(j, whole, k, s)) return -1;
  if (j->rail_head && drop_rail_steps(j, s)) return -1;
  return collapse_permutation(j, a, s, origin);
}
