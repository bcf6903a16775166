/* Replays of a few steps or levels that stand for a long schedule: rings extrapolated in their
 * length, trees in their depth (and a plain tree's base in its chunks), hier's rail rings in the
 * steps each keeps. Each replays two or three smaller schedules, side by side where it can. */
#include "sim_internal.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* The shorter of a ring's two extrapolation bases has at least this many ranks and 3 nodes, the
 * longer half again its nodes (sim_base_nodes, sim_longer_nodes). A ring reaches its steady state
 * well before (every ring collective, plain and coded, 1 to 16 GPUs a node, equal to every step
 * replayed; test_sim's test_extrapolation). */
#define SIM_RING_SHORT 32

/* Nodes of G GPUs in the shorter base of at least min_ranks ranks. */
int sim_base_nodes(int g, int min_ranks) {
  int m = (min_ranks + g - 1) / g;
  return m > 3 ? m : 3;
}

/* Nodes of the longer base beside a shorter one of m nodes (m >= 3): it is the slower replay, and
 * half again m reaches as far past the first steps as twice m (a 16-channel ring of 6 nodes of 16
 * GPUs took 1.1 s, of 4 nodes 0.75 s). */
int sim_longer_nodes(int m) { return m + m / 2; }

static int ring_collective(ncclzCollective c) {
  return c == NCCLZ_ALLREDUCE || c == NCCLZ_ALLGATHER || c == NCCLZ_REDUCESCATTER;
}

/* The same job on a ring of m ranks: fewer nodes, and the bytes scaled so that every block (and
 * so every chunk and frame) keeps its size. */
static void ring_of(const ncclzSimData *data, const ncclzSimPlatform *p, const ncclzSimOptions *o, int n, int m,
                    ncclzSimPlatform *q, ncclzSimOptions *u) {
  *q = *p;
  *u = *o;
  size_t eb = data ? data->dtype_bytes : 4;
  uint64_t block_elems = o->bytes / eb / (uint64_t)n;
  q->nodes = m / p->gpus_per_node;
  u->bytes = block_elems * (uint64_t)m * eb;
  u->every_step = 1;
}

/* T(n) = T(a) + (n - a) (T(b) - T(a)) / (b - a) for time, frames and bytes: each step of a ring in
 * steady state costs the same, and the step count is affine in the ring's length. */
void sim_extrapolate(const ncclzSimResult *a, const ncclzSimResult *b, int na, int nb, int n, ncclzSimResult *res) {
  double f = (double)(n - na) / (double)(nb - na);
  res->time_us = a->time_us + f * (b->time_us - a->time_us);
  for (int c = 0; c < NCCLZ_CODER_COUNT; c++)
    res->frames[c] = (uint64_t)llround((double)a->frames[c] + f * ((double)b->frames[c] - (double)a->frames[c]));
  res->wire_bytes = a->wire_bytes + f * (b->wire_bytes - a->wire_bytes);
  res->raw_bytes = a->raw_bytes + f * (b->raw_bytes - a->raw_bytes);
}

/* The same job on rings (or mirrors) of ma and mb ranks, side by side: *a and *b without the
 * interface cost. That cost is the call's, a curve in its bytes (fixed costs, then a rate), which
 * the shorter rings' scaled bytes would carry into the extrapolation at their own slope (ring
 * AllGather FIXEDLEN, 64 x 8, 64 MiB: 4.3% over the full replay). */
ncclzStatus sim_run_rings_of(const ncclzProfile *prof, const ncclzSimData *data, const ncclzSimPlatform *p,
                             const ncclzSimOptions *o, int n, int ma, int mb, ncclzSimResult *a,
                             ncclzSimResult *b) {
  ncclzSimPlatform qa, qb;
  ncclzSimOptions ua, ub;
  ring_of(data, p, o, n, ma, &qa, &ua);
  ring_of(data, p, o, n, mb, &qb, &ub);
  ncclzStatus st = sim_run_side_by_side(prof, data, &qa, &ua, &qb, &ub, a, b);
  if (st != NCCLZ_OK) return st;
  a->time_us -= sim_iface_us(prof, &qa, &ua, (double)ua.bytes);
  b->time_us -= sim_iface_us(prof, &qb, &ub, (double)ub.bytes);
  return NCCLZ_OK;
}

/* Trees over more nodes than this are extrapolated in depth (sim_tree_plan_for, sim/tree_plan.c). */
#define SIM_TREE_EXTRAPOLATE_FROM 64
/* A coded tree's extrapolation folds its trees' channels (options.fold_coded, approximate) where its
 * deepest level tree would replay more than this many actors (ranks x 2 trees a channel) times GPUs
 * a node: each NVLink edge carries 2G - 2 trees' chains, so the same actors cost more at larger G.
 * G = 8 on 8 rails, 4,096 x 8, stays unfolded (0.62-0.84 s a point; folded, HUFFMAN moved 1.5%);
 * G = 16 on 4 rails, 4,096 x 16, took 1.1-2.7 s a point (0.17-0.29 s folded, the same times); G =
 * 16 on 16 rails, 16,384 x 16, 3 s (0.14-0.19 s folded, within 0.33% of the unfolded
 * extrapolation). */
#define SIM_TREE_CODED_FOLD_WORK 32768
/* A plain base tree of four times this many chunks a tree or more is replayed with this many and
 * twice as many, and extrapolated in the chunks: past the pipeline's fill each chunk adds the same
 * time (a full 58 x 7 tree, 1 GiB: 2694.35, 2694.30 and 2694.31 us a chunk from 8 to 16, 16 to 32
 * and 32 to 64), and a base of 50 to 64 nodes with all of its 64 chunks took 0.7-1.1 s. Not from 33
 * to 63 chunks: with latency large against a chunk, 16 chunks pay fewer of it than the line through
 * 32 and more (43 chunks at G = 3, 1-5 us: up to -9.7e-4). Not a coded one: the backlog of its
 * codec streams still moves past 32 chunks (1 GiB HUFFMAN on 1170 x 7 +0.97%). */
#define SIM_TREE_BASE_CHUNKS 16

/* The same tree job on m nodes, with only k chunks a tree (where it has more) of the job's chunk
 * size: *q and *v. Returns the job's chunks a tree on m nodes. */
static uint32_t tree_of(const ncclzProfile *prof, const ncclzSimData *data, const ncclzSimPlatform *p,
                        const ncclzSimOptions *o, int m, uint32_t k, ncclzSimPlatform *q, ncclzSimOptions *v) {
  sim_job j;
  *q = *p;
  *v = *o;
  q->nodes = m;
  sim_job_init(&j, prof, data, q, o, 0, 0);
  if (k < j.nchunks) {
    v->bytes = (uint64_t)llround((double)o->bytes * k / j.nchunks);
    v->chunk_bytes = 0;
    v->min_chunks = v->max_chunks = k;
  }
  return j.nchunks;
}

/* tree_of's job in a forked child. */
static pid_t tree_side(const ncclzProfile *prof, const ncclzSimData *data, const ncclzSimPlatform *p,
                       const ncclzSimOptions *o, int m, uint32_t k, int *fd) {
  ncclzSimPlatform q; /* the forked child replays from this frame's copy */
  ncclzSimOptions v;
  tree_of(prof, data, p, o, m, k, &q, &v);
  return sim_side_start(prof, data, &q, &v, SIM_SIDE_SCHEDULE, fd);
}

/* 1 where a base tree of k chunks a tree is extrapolated in the chunks: plain, from four times
 * SIM_TREE_BASE_CHUNKS. */
static int base_in_chunks(uint32_t k, const ncclzSimOptions *o) {
  return k >= 4 * SIM_TREE_BASE_CHUNKS && o->compress == NCCLZ_SIM_OFF;
}

/* The full base tree of m nodes: *a, with all its *chunks a tree, or where base_in_chunks
 * extrapolated from SIM_TREE_BASE_CHUNKS and twice as many (the shorter in a child). */
static ncclzStatus tree_base(const ncclzProfile *prof, const ncclzSimData *data, const ncclzSimPlatform *p,
                             const ncclzSimOptions *o, int m, ncclzSimResult *a, uint32_t *chunks) {
  const uint32_t k1 = SIM_TREE_BASE_CHUNKS;
  ncclzSimPlatform q;
  ncclzSimOptions v;
  uint32_t k = *chunks = tree_of(prof, data, p, o, m, 2 * k1, &q, &v);
  if (!base_in_chunks(k, o)) return sim_run_once(prof, data, &q, o, 0, 0, a);
  ncclzSimResult a1;
  int fd = -1;
  pid_t pid = tree_side(prof, data, p, o, m, k1, &fd);
  ncclzStatus st = pid < 0 ? NCCLZ_ERR_IO : sim_run_once(prof, data, &q, &v, 0, 0, a), s1 = sim_side_finish(pid, fd, &a1);
  if (st != NCCLZ_OK) return st;
  if (s1 != NCCLZ_OK) return s1;
  sim_extrapolate(&a1, a, (int)k1, 2 * (int)k1, (int)k, a); /* *a is the longer: read before it is written */
  a->nchunks = k * a->channels;
  return NCCLZ_OK;
}

/* A pipelined tree's time is its steady state plus a fill that grows by the same time a level of
 * depth (d = ceil(log2 M), NCCL's binary tree over M nodes): a full base tree (tree_base), plus
 * d - depth(base) levels, each the difference between the plan's two level trees
 * (sim_tree_plan_for says which trees and why). The level trees replay in children beside the
 * base's. */
ncclzStatus sim_run_tree_extrapolated(const ncclzProfile *prof, const ncclzSimData *data, const ncclzSimPlatform *p,
                                      const ncclzSimOptions *o, ncclzSimResult *res) {
  ncclzSimOptions u = *o;
  ncclzSimResult a, s, l;
  int coded = o->compress != NCCLZ_SIM_OFF;
  sim_tree_plan t;
  sim_tree_plan_for(p, coded, &t);
  u.algorithm = NCCLZ_ALGO_TREE;
  u.every_step = 1;
  double g = p->gpus_per_node;
  u.fold_coded |= coded && t.large * g * 2 * sim_resolved_channels(p, &u) * g > SIM_TREE_CODED_FOLD_WORK;
  double t0 = ncclzNowSeconds();
  int fs, fl = -1;
  pid_t ps = tree_side(prof, data, p, &u, t.small, t.step, &fs);
  pid_t pl = tree_side(prof, data, p, &u, t.large, t.step, &fl);
  uint32_t k;
  ncclzStatus st = tree_base(prof, data, p, &u, t.base, &a, &k);
  ncclzStatus ss = sim_side_finish(ps, fs, &s), sl = sim_side_finish(pl, fl, &l);
  if (st != NCCLZ_OK) return st;
  if (ss != NCCLZ_OK) return ss;
  if (sl != NCCLZ_OK) return sl;
  *res = a;
  double levels = ceil(log2((double)p->nodes)) - t.depth, scale = (double)p->nodes / t.base;
  res->time_us = a.time_us + levels * (l.time_us - s.time_us);
  for (int c = 0; c < NCCLZ_CODER_COUNT; c++) res->frames[c] = (uint64_t)llround((double)a.frames[c] * scale);
  res->wire_bytes = a.wire_bytes * scale;
  res->raw_bytes = a.raw_bytes * scale;
  res->nranks = p->nodes * p->gpus_per_node;
  res->wall_s = ncclzNowSeconds() - t0;
  res->approximate = coded; /* within 2% of the full replay measured (docs/simulator.md, "Algorithms") */
  int folded = strstr(l.why, SIM_WHY_STREAMS_BY_ORBIT) != NULL; /* where channel_fold took them */
  snprintf(res->why, sizeof res->why, "%sfull tree of %d nodes, extrapolated in depth to %d nodes by a level of trees of "
           "%d and %d nodes with %u chunks", !coded ? "" : folded ? "approximate (coded levels, channels folded): "
           : "approximate (a coded tree's levels): ", t.base, p->nodes, t.small, t.large, s.nchunks / s.channels);
  size_t used = strlen(res->why);
  if (base_in_chunks(k, &u))
    snprintf(res->why + used, sizeof res->why - used, "; the base's %u from %d and %d", k, SIM_TREE_BASE_CHUNKS,
             2 * SIM_TREE_BASE_CHUNKS);
  return NCCLZ_OK;
}

/* A plain tree that keeps its depth (SIM_TREE_CHUNKS_FROM to SIM_TREE_EXTRAPOLATE_FROM nodes):
 * whole, or where base_in_chunks its chunks extrapolated as a base's are (tree_base; a full 64 x 8
 * tree of 64 chunks took about 1 s). Not below 8 nodes, the smallest base: 3 x 1 and 3 x 3 trees
 * of 64 chunks move by 0.2-0.6% past their 32nd. */
#define SIM_TREE_CHUNKS_FROM 8
ncclzStatus sim_run_tree_in_chunks(const ncclzProfile *prof, const ncclzSimData *data, const ncclzSimPlatform *p,
                                   const ncclzSimOptions *o, ncclzSimResult *res) {
  ncclzSimOptions u = *o;
  u.algorithm = NCCLZ_ALGO_TREE;
  u.every_step = 1; /* the shorter replay's child runs it whole */
  double t0 = ncclzNowSeconds();
  uint32_t k;
  ncclzStatus st = tree_base(prof, data, p, &u, p->nodes, res, &k);
  if (st != NCCLZ_OK || !base_in_chunks(k, &u)) return st;
  res->wall_s = ncclzNowSeconds() - t0;
  size_t used = strlen(res->why);
  snprintf(res->why + used, sizeof res->why - used, "; its %u chunks a tree from %d and %d", k, SIM_TREE_BASE_CHUNKS,
           2 * SIM_TREE_BASE_CHUNKS);
  return NCCLZ_OK;
}

/* A tree replayed in parts (a contiguous placement on a non-blocking fabric, not every step asked
 * for): extrapolated in depth past SIM_TREE_EXTRAPOLATE_FROM nodes, or, plain, in its chunks from
 * SIM_TREE_CHUNKS_FROM. */
static int tree_in_parts(const ncclzSimPlatform *p, const ncclzSimOptions *o) {
  return !o->every_step && p->placement == NCCLZ_PLACE_CONTIGUOUS && p->topology == NCCLZ_TOPO_NONBLOCKING;
}
int sim_tree_extrapolates(const ncclzSimPlatform *p, const ncclzSimOptions *o) {
  return tree_in_parts(p, o) && p->nodes > SIM_TREE_EXTRAPOLATE_FROM;
}
int sim_tree_chunks_extrapolate(const ncclzSimPlatform *p, const ncclzSimOptions *o) {
  return tree_in_parts(p, o) && o->compress == NCCLZ_SIM_OFF && p->nodes >= SIM_TREE_CHUNKS_FROM &&
         p->nodes <= SIM_TREE_EXTRAPOLATE_FROM;
}

/* Hier's ring between nodes: the rail ring's middle steps are alike (one block a step, and past the
 * data profile's rows frames of one CR), so the time is affine in the steps kept; two replays that
 * keep the first h1 and 2 h1 steps and the last SIM_RAIL_TAIL of each rail ring stage give the time
 * with all m - 1. h1 = SIM_RAIL_HEAD: past the CR's 64 rows (G >= 2 ranks a step), and long enough
 * for the codec streams' backlog to settle into its steady growth. */
ncclzStatus sim_run_rail_extrapolated(const ncclzProfile *prof, const ncclzSimData *data, const ncclzSimPlatform *p,
                                      const ncclzSimOptions *opt, ncclzSimResult *res) {
  int h1 = SIM_RAIL_HEAD, m1 = p->nodes - 1;
  if (m1 <= 2 * h1 + SIM_RAIL_TAIL) return sim_run_once(prof, data, p, opt, 0, 0, res);
  ncclzSimResult a, b;
  double t0 = ncclzNowSeconds();
  ncclzStatus st = sim_run_once(prof, data, p, opt, h1, 0, &a);
  if (st == NCCLZ_OK) st = sim_run_once(prof, data, p, opt, 2 * h1, 0, &b);
  if (st != NCCLZ_OK) return st;
  *res = b;
  sim_extrapolate(&a, &b, h1, 2 * h1, m1 - SIM_RAIL_TAIL, res);
  res->wall_s = ncclzNowSeconds() - t0;
  size_t used = strlen(res->why);
  snprintf(res->why + used, sizeof res->why - used, " (rail steps %d, %d of %d, extrapolated)",
           h1 + SIM_RAIL_TAIL, 2 * h1 + SIM_RAIL_TAIL, m1);
  return NCCLZ_OK;
}

/* Hier with the ring between nodes on more than SIM_RAIL_FROM nodes, replayed reduced (auto's
 * choice, or asked for): its rail ring stages' steps extrapolated. a: the point's algorithm
 * (sim_resolve). */
int sim_rail_extrapolates(const ncclzSimPlatform *p, const ncclzSimOptions *o, ncclzAlgorithm a, int reduced) {
  return !o->every_step && reduced && a == NCCLZ_ALGO_HIER && o->hier_inter == NCCLZ_ALGO_RING &&
         p->nodes > SIM_RAIL_FROM;
}

/* Ranks of the two rings a ring of G GPUs a node is extrapolated from. */
static void ring_bases(int g, int *na, int *nb) {
  int ma = sim_base_nodes(g, SIM_RING_SHORT);
  *na = g * ma;
  *nb = g * sim_longer_nodes(ma);
}

/* A ring collective's ring of SIM_EXTRAPOLATE_FROM ranks or more, past its longer base, replayed
 * reduced: extrapolated from two shorter rings (auto's in the coder it plans for the whole ring). a:
 * the point's algorithm (sim_resolve). */
int sim_ring_extrapolates(const ncclzSimPlatform *p, const ncclzSimOptions *o, ncclzAlgorithm a, int reduced) {
  int n = p->nodes * p->gpus_per_node, na, nb;
  ring_bases(p->gpus_per_node, &na, &nb);
  return !o->every_step && reduced && ring_collective(o->coll) && a == NCCLZ_ALGO_RING && n >= SIM_EXTRAPOLATE_FROM &&
         n > nb;
}

ncclzStatus sim_run_ring_extrapolated(const ncclzProfile *prof, const ncclzSimData *data, const ncclzSimPlatform *p,
                                      const ncclzSimOptions *opt, ncclzSimResult *res) {
  int n = p->nodes * p->gpus_per_node, na, nb;
  ring_bases(p->gpus_per_node, &na, &nb);
  ncclzSimResult a, b;
  ncclzSimOptions u;
  sim_auto_as_planned(prof, data, p, opt, &u, NULL);
  double t0 = ncclzNowSeconds();
  ncclzStatus st = sim_run_rings_of(prof, data, p, &u, n, na, nb, &a, &b);
  if (st != NCCLZ_OK) return st;
  *res = b;
  sim_extrapolate(&a, &b, na, nb, n, res);
  res->time_us += sim_iface_us(prof, p, &u, (double)u.bytes);
  res->nranks = n;
  res->wall_s = ncclzNowSeconds() - t0;
  snprintf(res->why, sizeof res->why,
           "reduced: symmetric ring, %d actors stand for %d ranks (the steady state of %d- and %d-rank rings, "
           "extrapolated)", b.actors, n, na, nb);
  return NCCLZ_OK;
}
