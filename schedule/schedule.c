/* The collectives as ordered operation lists: the ring (over channels), NCCL's tree AllReduce,
 * recursive halving-doubling and the two-level hierarchical schedule, plus the pairwise
 * all-to-all and the pipelined ring broadcast. One description for the executor and the
 * simulator. Every stage is written over a group of ranks (a ring's order, a node, a rail) whose
 * members own block ranges, so the same stage serves the flat and the two-level schedules. */
#include "ncclz/schedule.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const coll_names[NCCLZ_COLL_COUNT] = {"allreduce", "reducescatter", "allgather", "alltoall",
                                                          "broadcast"};

const char *ncclzCollectiveName(ncclzCollective c) { return (unsigned)c < NCCLZ_COLL_COUNT ? coll_names[c] : "?"; }

int ncclzCollectiveFromName(const char *name) {
  for (int i = 0; i < NCCLZ_COLL_COUNT; i++)
    if (strcmp(name, coll_names[i]) == 0) return i;
  return -1;
}

double ncclzBusBwFactor(ncclzCollective c, int n) {
  if (n <= 1) return c == NCCLZ_BROADCAST ? 1.0 : 0.0;
  switch (c) {
  case NCCLZ_ALLREDUCE: return 2.0 * (n - 1) / n;
  case NCCLZ_BROADCAST: return 1.0;
  default: return (double)(n - 1) / n;
  }
}

static const char *const algo_names[NCCLZ_ALGO_COUNT] = {"auto", "ring", "tree", "rhd", "hier"};

const char *ncclzAlgorithmName(ncclzAlgorithm a) { return (unsigned)a < NCCLZ_ALGO_COUNT ? algo_names[a] : "?"; }

int ncclzAlgorithmFromName(const char *name) {
  for (int i = 0; i < NCCLZ_ALGO_COUNT; i++)
    if (strcmp(name, algo_names[i]) == 0) return i;
  return -1;
}

static uint32_t mod(int64_t a, int n) { return (uint32_t)(((a % n) + n) % n); }

/* The list under construction. */
typedef struct {
  ncclzSchedule *s;
  size_t cap;
  int g; /* ranks per node */
} builder;

static int push(builder *b, ncclzOp op) {
  if (b->s->nops == b->cap) {
    size_t cap = b->cap ? 2 * b->cap : 64;
    ncclzOp *ops = realloc(b->s->ops, cap * sizeof *ops);
    if (!ops) return -1;
    b->s->ops = ops;
    b->cap = cap;
  }
  b->s->ops[b->s->nops++] = op;
  return 0;
}

static uint8_t link_of(const builder *b, int peer) {
  return peer < 0 || peer / b->g == b->s->rank / b->g ? NCCLZ_LINK_INTRA : NCCLZ_LINK_NET;
}

/* An op over blocks [block, block + nblk). */
static int add(builder *b, uint8_t kind, uint8_t action, uint8_t phase, int peer, uint32_t step, uint32_t block,
               uint32_t nblk, uint32_t chunk, int32_t dep, uint32_t nsum) {
  ncclzOp o = {kind, action, phase, peer, step, block, chunk, dep, nblk, nsum, link_of(b, peer)};
  return push(b, o);
}

/* The receive whose data a send of (block range, chunk) needs: the latest receive (in list order)
 * of the same range and chunk, or of an overlapping other range (whose chunks cut elsewhere, so
 * any of its chunks may hold ours); -1 when none (the rank's own data). */
static int32_t find_dep(const ncclzSchedule *s, uint32_t block, uint32_t nblk, uint32_t chunk) {
  for (size_t i = s->nops; i-- > 0;) {
    const ncclzOp *o = &s->ops[i];
    if (o->kind != NCCLZ_OP_RECV || o->block >= block + nblk || block >= o->block + o->nblk) continue;
    if (o->block != block || o->nblk != nblk || o->chunk == chunk) return (int32_t)i;
  }
  return -1;
}

/* A group of ranks that a stage runs over: member p is rank rank[p] and owns blocks
 * [blk[p], blk[p] + nb[p]); each member's data stands for `weight` ranks at the stage's start.
 * Halving-doubling needs the ranges contiguous in member order (LO). */
typedef struct {
  int n, me; /* members; my position (-1: not a member) */
  int *rank;
  uint32_t *blk, *nb;
  uint32_t weight;
} group;

static int group_alloc(group *gr, int n) {
  gr->n = n;
  gr->me = -1;
  gr->weight = 1;
  gr->rank = malloc((size_t)n * sizeof *gr->rank);
  gr->blk = malloc((size_t)n * sizeof *gr->blk);
  gr->nb = malloc((size_t)n * sizeof *gr->nb);
  return gr->rank && gr->blk && gr->nb ? 0 : -1;
}

static void group_free(group *gr) {
  free(gr->rank);
  free(gr->blk);
  free(gr->nb);
}

/* First block of member p's range in a contiguous group (p = n: the end). */
static uint32_t LO(const group *gr, int p) { return p < gr->n ? gr->blk[p] : gr->blk[gr->n - 1] + gr->nb[gr->n - 1]; }

/* Chunks [c0, c0 + cn) of each range: a channel's share. */
typedef struct {
  uint32_t c0, cn;
} chunks;

/* What a ring stage does at step st of its n - 1: the send's and the receive's actions, the phase,
 * and the ranks the moved range sums. */
typedef struct {
  uint8_t send_act, recv_act, phase;
  uint32_t nsum;
} ring_act;
typedef ring_act (*ring_step_fn)(const group *gr, int st, int n, uint32_t arg);

/* Reduce-scatter: encode the partial sum, add what arrives; arg: the last receive also stores the
 * finished sum into the output. */
static ring_act reduce_step(const group *gr, int st, int n, uint32_t store_last) {
  ring_act a = {NCCLZ_ACT_ENCODE, NCCLZ_ACT_REDUCE, NCCLZ_PHASE_REDUCE, gr->weight * (uint32_t)(st + 1)};
  if (store_last && st == n - 2) a.recv_act |= NCCLZ_ACT_STORE;
  return a;
}

/* All-gather: encode at the first step, forward the kept frame after; store what arrives and keep
 * it while a later step forwards it. arg: the ranks each range sums. */
static ring_act gather_step(const group *gr, int st, int n, uint32_t nsum) {
  (void)gr;
  ring_act a = {st ? NCCLZ_ACT_FORWARD : NCCLZ_ACT_ENCODE, NCCLZ_ACT_STORE | (st < n - 2 ? NCCLZ_ACT_KEEP : 0),
                NCCLZ_PHASE_GATHER, nsum};
  return a;
}

/* The ring walker over channels ch[0..nch) (each a ring, channel q on chunks c[q]), steps first ..
 * first + n - 2: at step st member p sends the range of member p+o-st and receives that of
 * p+o-st-1; what the send and the receive do is the stage's (step). A reduce-scatter with o = 0
 * ends with member p+1's range on p; an all-gather with o = 1 starts from it. */
static int ring_walk(builder *b, const group *ch, const chunks *c, int nch, int o, uint32_t first, ring_step_fn step,
                     uint32_t arg) {
  int n = ch[0].n;
  for (int st = 0; st < n - 1; st++)
    for (uint32_t k = 0; k < c[0].cn; k++)
      for (int q = 0; q < nch; q++) {
        const group *gr = &ch[q];
        int p = gr->me, next = gr->rank[(p + 1) % n], prev = gr->rank[(p + n - 1) % n];
        uint32_t sp = mod(p + o - st, n), rp = mod(p + o - st - 1, n), cc = c[q].c0 + k;
        uint32_t sb = gr->blk[sp], sn = gr->nb[sp], rb = gr->blk[rp], rn = gr->nb[rp];
        ring_act a = step(gr, st, n, arg);
        if (add(b, NCCLZ_OP_SEND, a.send_act, a.phase, next, first + st, sb, sn, cc, find_dep(b->s, sb, sn, cc), a.nsum) ||
            add(b, NCCLZ_OP_RECV, a.recv_act, a.phase, prev, first + st, rb, rn, cc, -1, a.nsum))
          return -1;
      }
  return 0;
}

static int ring_reduce(builder *b, const group *ch, const chunks *c, int nch, int o, uint32_t first, int store_last) {
  return ring_walk(b, ch, c, nch, o, first, reduce_step, (uint32_t)store_last);
}

static int ring_gather(builder *b, const group *ch, const chunks *c, int nch, int o, uint32_t first, uint32_t nsum) {
  return ring_walk(b, ch, c, nch, o, first, gather_step, nsum);
}

/* ------------------------------------------------------------------ halving-doubling */

/* A group's power-of-two core: pof2 "new ranks"; the first rem pairs of members (2j, 2j+1) fold
 * into their odd member, which becomes new rank j and owns both members' ranges. */
typedef struct {
  int pof2, rem;
  int newme; /* my new rank, -1 for a folded (even) member */
} rhd_core;

static rhd_core core_of(const group *gr) {
  rhd_core k = {1, 0, -1};
  while (k.pof2 * 2 <= gr->n) k.pof2 *= 2;
  k.rem = gr->n - k.pof2;
  int p = gr->me;
  k.newme = p < 2 * k.rem ? (p % 2 ? p / 2 : -1) : p - k.rem;
  return k;
}

static int new_member(const rhd_core *k, int j) { return j < k->rem ? 2 * j + 1 : j + k->rem; }
/* First block of new rank j's range (j = pof2: the end). */
static uint32_t new_lo(const group *gr, const rhd_core *k, int j) { return j < k->rem ? LO(gr, 2 * j) : LO(gr, j + k->rem); }
/* Ranks summed by the new ranks that agree with j modulo `span` (before a halving step: those j
 * has already combined with). */
static uint32_t new_weight(const group *gr, const rhd_core *k, int j, int span) {
  uint32_t w = 0;
  for (int i = 0; i < k->pof2; i++)
    if (i % span == j % span) w += (i < k->rem ? 2u : 1u) * gr->weight;
  return w;
}

/* One exchange with `peer`, chunk by chunk: send [sb, sb+sn), receive [rb, rb+rn) (n = 0: none). */
static int exchange(builder *b, const chunks *c, int peer, uint32_t step, uint8_t phase, uint32_t sb, uint32_t sn,
                    uint8_t sact, uint32_t snsum, uint32_t rb, uint32_t rn, uint8_t ract, uint32_t rnsum) {
  for (uint32_t k = 0; k < c->cn; k++) {
    uint32_t cc = c->c0 + k;
    if (sn && add(b, NCCLZ_OP_SEND, sact, phase, peer, step, sb, sn, cc, find_dep(b->s, sb, sn, cc), snsum)) return -1;
    if (rn && add(b, NCCLZ_OP_RECV, ract, phase, peer, step, rb, rn, cc, -1, rnsum)) return -1;
  }
  return 0;
}

/* The fold's one exchange between the pair (p, p^1): the even member sends [sb, sb+sn) to the
 * odd one when to_odd, else receives it from it. */
static int fold_pair(builder *b, const group *gr, const chunks *c, uint32_t step, uint8_t phase, int to_odd,
                     uint32_t blk, uint32_t nblk, uint8_t ract, uint32_t nsum) {
  int p = gr->me, even = p % 2 == 0, sender = even == to_odd;
  int peer = gr->rank[even ? p + 1 : p - 1];
  return sender ? exchange(b, c, peer, step, phase, blk, nblk, NCCLZ_ACT_ENCODE, nsum, 0, 0, 0, 0)
                : exchange(b, c, peer, step, phase, 0, 0, 0, 0, blk, nblk, ract, nsum);
}

/* Halving reduce-scatter over a group from step `first` (the next free step into *next): fold,
 * then log2(pof2) halvings, the farthest partner first (new rank j ends with the sum of its own
 * range); store: the last receive stores into the output; unfold: the folded members get their
 * range back (REDUCESCATTER). */
static int rhd_reduce(builder *b, const group *gr, const chunks *c, uint32_t first, int store, int unfold,
                      uint32_t *next) {
  rhd_core k = core_of(gr);
  int p = gr->me, paired = p < 2 * k.rem;
  uint32_t step = first, all = LO(gr, gr->n) - LO(gr, 0);
  if (k.rem) {
    if (paired && fold_pair(b, gr, c, step, NCCLZ_PHASE_REDUCE, 1, LO(gr, 0), all, NCCLZ_ACT_REDUCE, gr->weight))
      return -1;
    step++;
  }
  int lo = 0, hi = k.pof2, span = k.pof2;
  for (int mask = k.pof2 / 2; mask > 0; mask /= 2, step++, span /= 2) {
    int j = k.newme;
    if (j < 0) continue;
    int pj = j ^ mask, mid = lo + (hi - lo) / 2, lower = j < pj;
    int keep_lo = lower ? lo : mid, keep_hi = lower ? mid : hi, send_lo = lower ? mid : lo, send_hi = lower ? hi : mid;
    uint32_t sb = new_lo(gr, &k, send_lo), sn = new_lo(gr, &k, send_hi) - sb;
    uint32_t rb = new_lo(gr, &k, keep_lo), rn = new_lo(gr, &k, keep_hi) - rb;
    uint8_t ract = NCCLZ_ACT_REDUCE | (store && mask == 1 ? NCCLZ_ACT_STORE : 0);
    if (exchange(b, c, gr->rank[new_member(&k, pj)], step, NCCLZ_PHASE_REDUCE, sb, sn, NCCLZ_ACT_ENCODE,
                 new_weight(gr, &k, j, span), rb, rn, ract, new_weight(gr, &k, pj, span)))
      return -1;
    lo = keep_lo;
    hi = keep_hi;
  }
  if (unfold && k.rem) {
    int ev = p - p % 2;
    if (paired && fold_pair(b, gr, c, step, NCCLZ_PHASE_REDUCE, 0, gr->blk[ev], gr->nb[ev], NCCLZ_ACT_STORE,
                            gr->weight * (uint32_t)gr->n))
      return -1;
    step++;
  }
  *next = step;
  return 0;
}

/* Doubling all-gather over a group from step `first`: fold (unless the ranges already sit on the
 * new ranks: after rhd_reduce), log2(pof2) doublings, the nearest partner first, then the whole
 * range back to the folded members. nsum: the ranks each range sums. */
static int rhd_gather(builder *b, const group *gr, const chunks *c, uint32_t first, int folded, uint32_t nsum,
                      uint32_t *next) {
  rhd_core k = core_of(gr);
  int p = gr->me, paired = p < 2 * k.rem, ev = p - p % 2;
  uint32_t step = first, all = LO(gr, gr->n) - LO(gr, 0);
  if (k.rem && !folded) {
    if (paired && fold_pair(b, gr, c, step, NCCLZ_PHASE_GATHER, 1, gr->blk[ev], gr->nb[ev], NCCLZ_ACT_STORE, nsum))
      return -1;
    step++;
  }
  for (int mask = 1; mask < k.pof2; mask *= 2, step++) {
    int j = k.newme;
    if (j < 0) continue;
    int pj = j ^ mask, mlo = j & ~(mask - 1), plo = pj & ~(mask - 1);
    uint32_t sb = new_lo(gr, &k, mlo), sn = new_lo(gr, &k, mlo + mask) - sb;
    uint32_t rb = new_lo(gr, &k, plo), rn = new_lo(gr, &k, plo + mask) - rb;
    if (exchange(b, c, gr->rank[new_member(&k, pj)], step, NCCLZ_PHASE_GATHER, sb, sn, NCCLZ_ACT_ENCODE, nsum, rb, rn,
                 NCCLZ_ACT_STORE, nsum))
      return -1;
  }
  if (k.rem) {
    if (paired && fold_pair(b, gr, c, step, NCCLZ_PHASE_GATHER, 0, LO(gr, 0), all, NCCLZ_ACT_STORE, nsum)) return -1;
    step++;
  }
  *next = step;
  return 0;
}

/* ----------------------------------------------------------------------- local ops */

static int copy_own(builder *b, uint32_t block) {
  for (uint32_t c = 0; c < b->s->nchunks; c++)
    if (add(b, NCCLZ_OP_COPY, 0, NCCLZ_PHASE_EXCHANGE, -1, 0, block, 1, c, -1, 1)) return -1;
  return 0;
}

static int build_alltoall(builder *b) {
  ncclzSchedule *s = b->s;
  int n = s->nranks, r = s->rank;
  if (copy_own(b, (uint32_t)r)) return -1;
  for (int st = 1; st < n; st++)
    for (uint32_t c = 0; c < s->nchunks; c++) {
      uint32_t dst = mod(r + st, n), src = mod(r - st, n);
      if (add(b, NCCLZ_OP_SEND, NCCLZ_ACT_ENCODE, NCCLZ_PHASE_EXCHANGE, (int)dst, st - 1, dst, 1, c, -1, 1) ||
          add(b, NCCLZ_OP_RECV, NCCLZ_ACT_STORE, NCCLZ_PHASE_EXCHANGE, (int)src, st - 1, src, 1, c, -1, 1))
        return -1;
    }
  return 0;
}

/* ------------------------------------------------------------------------------ ring */

/* Channel q's ring: each node's GPUs from local index q*G/C on, so that its inter-node hop leaves
 * from the GPU before that one (channel q's rail when C = rails); member p owns block rank[p]
 * (its own: ReduceScatter's output, AllGather's input). */
static void channel_ring(const ncclzSchedule *s, int g, uint32_t q, group *gr) {
  int shift = (int)((uint64_t)q * (uint64_t)g / s->nchannels);
  for (int p = 0; p < s->nranks; p++) {
    gr->rank[p] = (p / g) * g + (p % g + shift) % g;
    gr->blk[p] = (uint32_t)gr->rank[p];
    gr->nb[p] = 1;
    if (gr->rank[p] == s->rank) gr->me = p;
  }
}

static int ring_stages(builder *b, const group *ch, const chunks *c, int nch) {
  ncclzSchedule *s = b->s;
  int n = s->nranks;
  switch (s->coll) {
  case NCCLZ_ALLREDUCE: /* reduce-scatter leaves member p+1's block complete on p; all-gather starts from it */
    return ring_reduce(b, ch, c, nch, 0, 0, 0) || ring_gather(b, ch, c, nch, 1, (uint32_t)n - 1, (uint32_t)n);
  case NCCLZ_REDUCESCATTER:
    return ring_reduce(b, ch, c, nch, -1, 0, 1);
  default: /* ALLGATHER */
    return copy_own(b, (uint32_t)s->rank) || ring_gather(b, ch, c, nch, 0, 0, 1);
  }
}

static void channel_rings_free(group *ch, int nch) {
  for (int q = 0; ch && q < nch; q++) group_free(&ch[q]);
  free(ch);
}

/* Every channel's ring (channel_ring); NULL when out of memory. */
static group *channel_rings(const builder *b, int nch) {
  group *ch = calloc((size_t)nch, sizeof *ch);
  for (int q = 0; ch && q < nch; q++) {
    if (group_alloc(&ch[q], b->s->nranks)) {
      channel_rings_free(ch, nch);
      return NULL;
    }
    channel_ring(b->s, b->g, (uint32_t)q, &ch[q]);
  }
  return ch;
}

static int build_ring(builder *b, uint32_t cpc) {
  int nch = (int)b->s->nchannels, rc = -1;
  group *ch = channel_rings(b, nch);
  chunks *c = calloc((size_t)nch, sizeof *c);
  if (ch && c) {
    for (int q = 0; q < nch; q++) {
      c[q].c0 = (uint32_t)q * cpc;
      c[q].cn = cpc;
    }
    rc = ring_stages(b, ch, c, nch);
  }
  channel_rings_free(ch, nch);
  free(c);
  return rc ? -1 : 0;
}

/* Pipelined chains from the root, one per channel (channel_ring's rings, as NCCL's broadcast runs
 * its ring channels): in channel q the rank at position p = me - root's position receives chunk k
 * of the channel's share at step k + p - 1 and forwards it at step k + p. */
static int bcast_chunk(builder *b, const group *gr, uint32_t cc, uint32_t k) {
  ncclzSchedule *s = b->s;
  int n = s->nranks, root = 0;
  while (gr->rank[root] != s->root) root++;
  int p = (int)mod(gr->me - root, n), next = gr->rank[(gr->me + 1) % n], prev = gr->rank[(gr->me + n - 1) % n];
  int32_t dep = -1;
  if (p == 0 && add(b, NCCLZ_OP_COPY, 0, NCCLZ_PHASE_PIPELINE, -1, k, 0, 1, cc, -1, 1)) return -1;
  if (p > 0) {
    uint8_t act = NCCLZ_ACT_STORE | (p < n - 1 ? NCCLZ_ACT_KEEP : 0);
    dep = (int32_t)s->nops;
    if (add(b, NCCLZ_OP_RECV, act, NCCLZ_PHASE_PIPELINE, prev, k + (uint32_t)p - 1, 0, 1, cc, -1, 1)) return -1;
  }
  if (p < n - 1 && add(b, NCCLZ_OP_SEND, p ? NCCLZ_ACT_FORWARD : NCCLZ_ACT_ENCODE, NCCLZ_PHASE_PIPELINE, next,
                       k + (uint32_t)p, 0, 1, cc, dep, 1))
    return -1;
  return 0;
}

static int build_broadcast(builder *b, uint32_t cpc) {
  int nch = (int)b->s->nchannels, rc = -1;
  group *ch = channel_rings(b, nch);
  if (ch) {
    rc = 0;
    for (uint32_t k = 0; k < cpc && !rc; k++) /* chunk k of every channel, channel by channel, as ring_walk */
      for (int q = 0; q < nch && !rc; q++) rc = bcast_chunk(b, &ch[q], (uint32_t)q * cpc + k, k);
  }
  channel_rings_free(ch, nch);
  return rc ? -1 : 0;
}

/* ------------------------------------------------------------------- halving-doubling */

/* All ranks as one contiguous group. AllReduce cuts the buffer into pof2 blocks, one per new
 * rank (a folded even member owns none), so every halving moves an even half; ReduceScatter and
 * AllGather keep one block per rank (their buffers' layout). */
static int build_rhd(builder *b) {
  ncclzSchedule *s = b->s;
  int n = s->nranks, rc;
  group gr;
  chunks c = {0, s->nchunks};
  if (group_alloc(&gr, n)) {
    group_free(&gr);
    return -1;
  }
  gr.me = s->rank;
  for (int p = 0; p < n; p++) {
    gr.rank[p] = p;
    gr.blk[p] = (uint32_t)p;
    gr.nb[p] = 1;
  }
  rhd_core k = core_of(&gr);
  uint32_t next = 0;
  if (s->coll == NCCLZ_ALLREDUCE) {
    for (int p = 0; p < n; p++) {
      gr.blk[p] = p < 2 * k.rem ? (uint32_t)(p / 2) : (uint32_t)(p - k.rem);
      gr.nb[p] = p < 2 * k.rem && p % 2 == 0 ? 0 : 1;
    }
    rc = rhd_reduce(b, &gr, &c, 0, 0, 0, &next) || rhd_gather(b, &gr, &c, next, 1, (uint32_t)n, &next);
  } else if (s->coll == NCCLZ_REDUCESCATTER) {
    rc = rhd_reduce(b, &gr, &c, 0, 1, 1, &next);
  } else {
    rc = copy_own(b, (uint32_t)s->rank) || rhd_gather(b, &gr, &c, 0, 0, 1, &next);
  }
  group_free(&gr);
  return rc ? -1 : 0;
}

/* ------------------------------------------------------------------------------ tree */

/* NCCL's binary tree over m nodes (ncclGetBtree's shape): node v's parent clears v's lowest set
 * bit and sets the next one up (or only clears it past the end); node 0 is the root. */
static int btree_parent(int v, int m) {
  if (v == 0) return -1;
  int bit = 1;
  while (!(v & bit)) bit <<= 1;
  int up = (v ^ bit) | (bit << 1);
  return up >= m ? v ^ bit : up;
}

/* Tree t's node numbering (the double binary tree): tree 1 mirrors tree 0 (even m) or shifts it
 * by one (odd m), so a node interior in one tree is a leaf in the other. */
static int tree_v(int node, int m, int t) { return !t ? node : m % 2 ? (node - 1 + m) % m : m - 1 - node; }
static int tree_node(int v, int m, int t) { return !t ? v : m % 2 ? (v + 1) % m : m - 1 - v; }

/* Nodes in the subtree of each tree node (sub[m]). */
static void btree_sizes(int m, int *sub) {
  for (int v = 0; v < m; v++) sub[v] = 0;
  for (int v = 0; v < m; v++)
    for (int u = v; u >= 0; u = btree_parent(u, m)) sub[u]++;
}

/* One rank's place in tree t: its parent (-1 at the root) and children, and the ranks each one's
 * subtree holds. Inside a node a chain from the head (local GPU 0 for tree 0, G/2 for tree 1,
 * so the two trees leave through different GPUs); the heads link the nodes. */
typedef struct {
  int up, nup;
  int down[3], ndown[3], nd;
} tree_place;

static void tree_place_of(const ncclzSchedule *s, int g, int t, int q, const int *sub, tree_place *tp) {
  /* the 2C trees' heads spread over the node's GPUs (so over its rails): tree t of channel q at
   * slot 2q+t of 2C when they fit, else two per GPU, half a node apart */
  uint32_t c2 = 2 * s->nchannels;
  int head = c2 <= (uint32_t)g ? (int)((uint64_t)(2 * q + t) * (uint64_t)g / c2)
                               : (int)(((uint64_t)q * (uint64_t)g / s->nchannels + (uint64_t)t * (uint64_t)(g / 2)) % (uint64_t)g);
  int m = s->nranks / g, node = s->rank / g, pos = (int)mod(s->rank % g - head, g);
  int v = tree_v(node, m, t);
  tp->nd = 0;
  tp->nup = pos ? g - pos : g * sub[v];
  if (pos) {
    tp->up = node * g + (int)mod(head + pos - 1, g);
  } else {
    int pv = btree_parent(v, m);
    tp->up = pv < 0 ? -1 : tree_node(pv, m, t) * g + head;
  }
  if (pos + 1 < g) {
    tp->down[tp->nd] = node * g + (int)mod(head + pos + 1, g);
    tp->ndown[tp->nd++] = g - pos - 1;
  }
  if (!pos)
    for (int u = 0; u < m && tp->nd < 3; u++)
      if (u != v && btree_parent(u, m) == v) {
        tp->down[tp->nd] = tree_node(u, m, t) * g + head;
        tp->ndown[tp->nd++] = g * sub[u];
      }
}

/* Tree t's ops of one chunk in one phase: up (receive from the children, send to the parent) or
 * down (receive from the parent, send to the children); sends = 0: the receives, 1: the sends. */
static int tree_ops(builder *b, const tree_place *p, uint32_t t, uint32_t c, int down, int sends) {
  ncclzSchedule *s = b->s;
  if (!down && !sends) {
    for (int d = 0; d < p->nd; d++)
      if (add(b, NCCLZ_OP_RECV, NCCLZ_ACT_REDUCE, NCCLZ_PHASE_REDUCE, p->down[d], 2 * t, t, 1, c, -1,
              (uint32_t)p->ndown[d]))
        return -1;
  } else if (!down) {
    if (p->up >= 0 && add(b, NCCLZ_OP_SEND, NCCLZ_ACT_ENCODE, NCCLZ_PHASE_REDUCE, p->up, 2 * t, t, 1, c,
                          find_dep(s, t, 1, c), (uint32_t)p->nup))
      return -1;
  } else if (!sends) {
    if (p->up >= 0 && add(b, NCCLZ_OP_RECV, NCCLZ_ACT_STORE | (p->nd ? NCCLZ_ACT_KEEP : 0), NCCLZ_PHASE_GATHER, p->up,
                          2 * t + 1, t, 1, c, -1, (uint32_t)s->nranks))
      return -1;
  } else {
    int32_t dep = find_dep(s, t, 1, c); /* the root's sum, or the frame from the parent */
    uint8_t act = p->up >= 0 ? NCCLZ_ACT_FORWARD : NCCLZ_ACT_ENCODE;
    for (int d = 0; d < p->nd; d++)
      if (add(b, NCCLZ_OP_SEND, act, NCCLZ_PHASE_GATHER, p->down[d], 2 * t + 1, t, 1, c, dep, (uint32_t)s->nranks))
        return -1;
  }
  return 0;
}

/* Reduce up every chunk of both trees, then broadcast down (tree t carries block t, half the
 * buffer): steps 2t (up) and 2t+1 (down). With C channels (NCCL's), channel q runs its own double
 * tree on chunks [q*cpc, (q+1)*cpc) with heads of its own, so the channels leave the node through
 * different NICs. The root encodes the sum once; everyone below forwards
 * the frame it got. Per chunk, tree 0's ops come before tree 1's on every rank, so every pair of
 * ranks issues its transfers in one order: NCCL matches a pair's messages in the order they are
 * posted, and with one staging bank per peer a receiver that took the trees in another order than
 * its sender waited for a frame queued behind the other tree's (a deadlock on 2 x 3 GPUs). A rank
 * that waits for one tree's children holds back its other tree for that chunk only; the replay
 * runs the two trees as actors of their own. */
static int build_tree(builder *b, uint32_t cpc) {
  ncclzSchedule *s = b->s;
  int g = b->g, m = s->nranks / g, nch = (int)s->nchannels;
  int *sub = malloc((size_t)m * sizeof *sub);
  tree_place *tp = malloc(2 * (size_t)nch * sizeof *tp);
  int rc = sub && tp ? 0 : -1;
  if (!rc) {
    btree_sizes(m, sub);
    for (int q = 0; q < nch; q++)
      for (int t = 0; t < 2; t++) tree_place_of(s, g, t, q, sub, &tp[2 * q + t]);
  }
  for (int down = 0; down < 2 && !rc; down++)
    for (uint32_t k = 0; k < cpc && !rc; k++)
      for (int q = 0; q < nch && !rc; q++) {
        const tree_place *p = &tp[2 * q];
        uint32_t c = (uint32_t)q * cpc + k;
        for (uint32_t t = 0; t < 2 && !rc; t++)
          rc = tree_ops(b, &p[t], t, c, down, 0) || tree_ops(b, &p[t], t, c, down, 1) ? -1 : 0;
      }
  free(sub);
  free(tp);
  return rc;
}

/* ---------------------------------------------------------------------- hierarchical */

/* The rank that finishes block b in the hierarchical ReduceScatter's stages: block q*m + v is
 * rail q's member v (node v's GPU q), or, where halving-doubling folded member v into v+1, that
 * one. */
static int hier_finisher(int b, int m, int g, int rhd) {
  int q = b / m, v = b % m, rem = 0, p2 = 1;
  while (p2 * 2 <= m) p2 *= 2;
  rem = rhd ? m - p2 : 0;
  if (v < 2 * rem && v % 2 == 0) v++;
  return v * g + q;
}

/* One chunk of the permutation between the hierarchical stages and the rank layout (block b
 * belongs to rank b). to_owner (ReduceScatter): each rank sends the blocks it finished to their
 * owners and receives its own; else (AllGather) each rank sends its block to the rank whose rail
 * range holds it (block q*m + node on rank (node, q)) and receives that one. */
static int hier_permute_chunk(builder *b, const chunks *c, int m, uint32_t step, int to_owner, int rhd, uint32_t nsum) {
  int g = b->g, me = b->s->rank;
  if (!to_owner) {
    int held = (me % g) * m + me / g, holder = (me % m) * g + me / m;
    if (holder != me && exchange(b, c, holder, step, NCCLZ_PHASE_EXCHANGE, (uint32_t)me, 1, NCCLZ_ACT_ENCODE, nsum, 0, 0, 0, 0))
      return -1;
    return held != me ? exchange(b, c, held, step, NCCLZ_PHASE_EXCHANGE, 0, 0, 0, 0, (uint32_t)held, 1, NCCLZ_ACT_STORE, nsum)
                      : 0;
  }
  int q = me % g, node = me / g;
  for (int v = node - 1; v <= node; v++) { /* my rail block, and a folded partner's before it */
    int blk = q * m + v;
    if (v < 0 || hier_finisher(blk, m, g, rhd) != me || blk == me) continue;
    if (exchange(b, c, blk, step, NCCLZ_PHASE_EXCHANGE, (uint32_t)blk, 1, NCCLZ_ACT_ENCODE, nsum, 0, 0, 0, 0)) return -1;
  }
  int from = hier_finisher(me, m, g, rhd);
  return from != me ? exchange(b, c, from, step, NCCLZ_PHASE_EXCHANGE, 0, 0, 0, 0, (uint32_t)me, 1, NCCLZ_ACT_STORE, nsum) : 0;
}

/* The permutation chunk by chunk: a rank's sends of chunk k come right before its receive of
 * chunk k. The permutation's cycles span several ranks, so all chunks' sends first would have
 * every member of a cycle wait, once its staging banks (or NCCL's buffers) are full, on a
 * receive its peer posts only after its own sends: a deadlock with more chunks than banks. */
static int hier_permute(builder *b, int m, uint32_t step, int to_owner, int rhd, uint32_t nsum) {
  for (uint32_t k = 0; k < b->s->nchunks; k++) {
    chunks c = {k, 1};
    if (hier_permute_chunk(b, &c, m, step, to_owner, rhd, nsum)) return -1;
  }
  return 0;
}

/* Two levels over m nodes of g: the buffer is m*g blocks, part q = blocks [q*m, (q+1)*m).
 * AllReduce: a ring reduce-scatter inside the node leaves local GPU q with its node's sum of part
 * q; the ranks of local index q (one rail) all-reduce part q between nodes (halving-doubling or
 * ring, block q*m + node per node); a ring all-gather inside the node spreads the parts.
 * ReduceScatter: the same reduce-scatters, then each rank sends the block it finished (q*m + node)
 * to its owner. AllGather: the reverse: each rank first sends its block to the rank whose rail
 * range holds it, then the rail's all-gather and the node's. */
static int build_hier(builder *b, ncclzAlgorithm inter) {
  ncclzSchedule *s = b->s;
  int g = b->g, m = s->nranks / g, node = s->rank / g, q = s->rank % g, rc = -1, n = s->nranks;
  group in = {0}, rail = {0};
  chunks c = {0, s->nchunks};
  uint32_t step = 0, all = (uint32_t)n, gather = s->coll == NCCLZ_ALLGATHER ? 1u : all;
  if (group_alloc(&in, g) || group_alloc(&rail, m)) goto out;
  for (int i = 0; i < g; i++) {
    in.rank[i] = node * g + i;
    in.blk[i] = (uint32_t)(i * m);
    in.nb[i] = (uint32_t)m;
  }
  in.me = q;
  for (int v = 0; v < m; v++) {
    rail.rank[v] = v * g + q;
    rail.blk[v] = (uint32_t)(q * m + v);
    rail.nb[v] = 1;
  }
  rail.me = node;
  rail.weight = s->coll == NCCLZ_ALLGATHER ? 1u : (uint32_t)g;
  if (s->coll == NCCLZ_ALLGATHER) {
    if (copy_own(b, (uint32_t)s->rank) || hier_permute(b, m, step++, 0, 0, 1)) goto out;
  } else {
    if (g > 1 && ring_reduce(b, &in, &c, 1, -1, step, 0)) goto out;
    step += (uint32_t)(g - 1);
  }
  int rs = s->coll == NCCLZ_REDUCESCATTER, ag = s->coll == NCCLZ_ALLGATHER;
  if (m > 1) {
    if (inter == NCCLZ_ALGO_RING) {
      if (!ag && ring_reduce(b, &rail, &c, 1, rs ? -1 : 0, step, rs)) goto out;
      if (!ag) step += (uint32_t)(m - 1);
      if (!rs && ring_gather(b, &rail, &c, 1, ag ? 0 : 1, step, gather)) goto out;
      if (!rs) step += (uint32_t)(m - 1);
    } else {
      if (!ag && rhd_reduce(b, &rail, &c, step, rs, 0, &step)) goto out;
      if (!rs && rhd_gather(b, &rail, &c, step, !ag, gather, &step)) goto out;
    }
  }
  if (rs) {
    if (hier_permute(b, m, step, 1, inter != NCCLZ_ALGO_RING, all)) goto out;
  } else if (g > 1 && ring_gather(b, &in, &c, 1, 0, step, gather)) {
    goto out;
  }
  rc = 0;
out:
  group_free(&in);
  group_free(&rail);
  return rc;
}

/* -------------------------------------------------------------------------- dispatch */

static int node_size(const ncclzScheduleSpec *sp) {
  return sp->ranks_per_node > 0 && sp->ranks_per_node <= sp->nranks ? sp->ranks_per_node : sp->nranks;
}

static int serves(ncclzAlgorithm a, ncclzCollective c) {
  switch (a) {
  case NCCLZ_ALGO_RING: return 1;
  case NCCLZ_ALGO_TREE: return c == NCCLZ_ALLREDUCE;
  case NCCLZ_ALGO_HIER:
  case NCCLZ_ALGO_RHD: return c == NCCLZ_ALLREDUCE || c == NCCLZ_REDUCESCATTER || c == NCCLZ_ALLGATHER;
  default: return 0;
  }
}

static int check_spec(const ncclzScheduleSpec *sp, char *why, size_t cap, int explain);

void ncclzAlgorithmsFor(ncclzCollective coll, int nranks, int ranks_per_node, char *buf, size_t cap) {
  size_t used = 0;
  buf[0] = 0;
  for (int a = NCCLZ_ALGO_RING; a < NCCLZ_ALGO_COUNT; a++) {
    ncclzScheduleSpec sp = {coll, (ncclzAlgorithm)a, nranks, ranks_per_node, 0, 1, 1, NCCLZ_ALGO_RHD};
    char why[160];
    if (check_spec(&sp, why, sizeof why, 0) == 0 && used < cap)
      used += (size_t)snprintf(buf + used, cap - used, "%s%s", used ? ", " : "", algo_names[a]);
  }
}

int ncclzScheduleCheck(const ncclzScheduleSpec *sp, char *why, size_t cap) { return check_spec(sp, why, cap, 1); }

static int check_spec(const ncclzScheduleSpec *sp, char *why, size_t cap, int explain) {
  char can[64] = "";
  if ((unsigned)sp->coll >= NCCLZ_COLL_COUNT || sp->nranks < 1 || sp->nchunks < 1 || sp->root < 0 ||
      sp->root >= sp->nranks) {
    snprintf(why, cap, "schedule: bad collective, rank count, chunk count or root");
    return -1;
  }
  if (sp->algo <= NCCLZ_ALGO_AUTO || sp->algo >= NCCLZ_ALGO_COUNT) {
    snprintf(why, cap, "schedule: algorithm %d is not one of ring, tree, rhd, hier", (int)sp->algo);
    return -1;
  }
  int g = node_size(sp);
  if (!serves(sp->algo, sp->coll)) {
    if (explain) ncclzAlgorithmsFor(sp->coll, sp->nranks, sp->ranks_per_node, can, sizeof can);
    snprintf(why, cap, "%s runs %s; %s runs with %s", algo_names[sp->algo],
             sp->algo == NCCLZ_ALGO_TREE ? "allreduce only" : "allreduce, reducescatter and allgather",
             ncclzCollectiveName(sp->coll), can);
    return -1;
  }
  if ((sp->algo == NCCLZ_ALGO_TREE || sp->algo == NCCLZ_ALGO_HIER || sp->algo == NCCLZ_ALGO_RING) && sp->nranks % g) {
    snprintf(why, cap, "%s needs whole nodes: %d ranks are not a multiple of %d per node", algo_names[sp->algo],
             sp->nranks, g);
    return -1;
  }
  if (sp->algo == NCCLZ_ALGO_HIER && (g < 2 || g == sp->nranks) && sp->nranks > 1) {
    snprintf(why, cap, "hier needs several nodes of several GPUs (here %d node%s of %d GPU%s); use ring, tree or rhd",
             sp->nranks / g, sp->nranks / g == 1 ? "" : "s", g, g == 1 ? "" : "s");
    return -1;
  }
  if (sp->algo == NCCLZ_ALGO_HIER && sp->hier_inter != NCCLZ_ALGO_AUTO && sp->hier_inter != NCCLZ_ALGO_RHD &&
      sp->hier_inter != NCCLZ_ALGO_RING) {
    snprintf(why, cap, "hier's inter-node stage is rhd or ring, not %s", ncclzAlgorithmName(sp->hier_inter));
    return -1;
  }
  return 0;
}

static int build_ops(builder *b, const ncclzScheduleSpec *sp) {
  ncclzSchedule *s = b->s;
  if (s->nranks == 1) return copy_own(b, 0);
  if (s->coll == NCCLZ_ALLTOALL) return build_alltoall(b);
  if (s->coll == NCCLZ_BROADCAST) return build_broadcast(b, sp->nchunks);
  switch (s->algo) {
  case NCCLZ_ALGO_TREE: return build_tree(b, sp->nchunks);
  case NCCLZ_ALGO_RHD: return build_rhd(b);
  case NCCLZ_ALGO_HIER: return build_hier(b, sp->hier_inter == NCCLZ_ALGO_RING ? NCCLZ_ALGO_RING : NCCLZ_ALGO_RHD);
  default: return build_ring(b, sp->nchunks);
  }
}

static uint32_t block_count(const ncclzScheduleSpec *sp) {
  if (sp->coll == NCCLZ_BROADCAST || sp->nranks == 1) return 1;
  if (sp->coll == NCCLZ_ALLREDUCE && sp->algo == NCCLZ_ALGO_TREE) return 2;
  if (sp->coll == NCCLZ_ALLREDUCE && sp->algo == NCCLZ_ALGO_RHD) {
    uint32_t p = 1;
    while (p * 2 <= (uint32_t)sp->nranks) p *= 2;
    return p;
  }
  return (uint32_t)sp->nranks;
}

int ncclzScheduleBuildSpec(const ncclzScheduleSpec *sp, int rank, ncclzSchedule *out) {
  char why[160];
  memset(out, 0, sizeof *out);
  if (ncclzScheduleCheck(sp, why, sizeof why) || rank < 0 || rank >= sp->nranks) {
    errno = EINVAL;
    return -1;
  }
  int ring_like = (sp->algo == NCCLZ_ALGO_RING || sp->algo == NCCLZ_ALGO_TREE) && sp->coll != NCCLZ_ALLTOALL &&
                  (sp->coll != NCCLZ_BROADCAST || sp->algo == NCCLZ_ALGO_RING);
  out->coll = sp->coll;
  out->algo = sp->algo;
  out->nranks = sp->nranks;
  out->rank = rank;
  out->root = sp->root;
  out->ranks_per_node = node_size(sp);
  out->nchannels = ring_like && sp->nchannels > 1 && sp->nranks > 1 ? sp->nchannels : 1;
  out->nchunks = sp->nchunks * out->nchannels;
  out->nblocks = block_count(sp);
  builder b = {out, 0, out->ranks_per_node};
  if (build_ops(&b, sp)) {
    ncclzScheduleFree(out);
    errno = ENOMEM;
    return -1;
  }
  out->nsteps = 1;
  for (size_t i = 0; i < out->nops; i++)
    if (out->ops[i].step + 1 > out->nsteps) out->nsteps = out->ops[i].step + 1;
  return 0;
}

void ncclzScheduleFree(ncclzSchedule *s) {
  free(s->ops);
  s->ops = NULL;
  s->nops = 0;
}

/* [*off, *off + *len) = part i of `parts` near-equal parts of [0, total). */
static void split(size_t total, uint32_t parts, uint32_t i, size_t *off, size_t *len) {
  size_t base = total / parts, rem = total % parts;
  *off = i * base + (i < rem ? i : rem);
  *len = base + (i < rem ? 1 : 0);
}

void ncclzScheduleBlocksRange(const ncclzSchedule *s, size_t count, uint32_t block, uint32_t nblk, uint32_t chunk,
                              size_t *off, size_t *len) {
  size_t boff, blen, coff;
  if (s->coll == NCCLZ_ALLREDUCE || s->coll == NCCLZ_BROADCAST) {
    size_t eoff, elen;
    split(count, s->nblocks, block, &boff, &blen);
    if (nblk > 1) {
      split(count, s->nblocks, block + nblk - 1, &eoff, &elen);
      blen = eoff + elen - boff;
    } else if (nblk == 0) {
      blen = 0;
    }
  } else {
    boff = (size_t)block * count;
    blen = (size_t)nblk * count;
  }
  split(blen, s->nchunks, chunk, &coff, len);
  *off = boff + coff;
}

void ncclzScheduleRange(const ncclzSchedule *s, size_t count, uint32_t block, uint32_t chunk, size_t *off,
                        size_t *len) {
  ncclzScheduleBlocksRange(s, count, block, 1, chunk, off, len);
}

void ncclzScheduleOpRange(const ncclzSchedule *s, size_t count, const ncclzOp *o, size_t *off, size_t *len) {
  ncclzScheduleBlocksRange(s, count, o->block, o->nblk, o->chunk, off, len);
}

/* ------------------------------------------------------------------ buffers, chunks */

size_t ncclzCollInCount(ncclzCollective c, size_t count, int nranks) {
  return c == NCCLZ_REDUCESCATTER || c == NCCLZ_ALLTOALL ? count * (size_t)nranks : count;
}

size_t ncclzCollOutCount(ncclzCollective c, size_t count, int nranks) {
  return c == NCCLZ_ALLGATHER || c == NCCLZ_ALLTOALL ? count * (size_t)nranks : count;
}

size_t ncclzCollInOffset(ncclzCollective c, int rank, size_t count, size_t off) {
  return c == NCCLZ_ALLGATHER ? off - (size_t)rank * count : off;
}

size_t ncclzCollOutPart(ncclzCollective c, int rank, size_t count, size_t off, size_t len, size_t *skip, size_t *olen) {
  *skip = 0;
  *olen = len;
  if (c != NCCLZ_REDUCESCATTER) return off;
  size_t lo = (size_t)rank * count, hi = lo + count, a = off > lo ? off : lo, e = off + len < hi ? off + len : hi;
  *olen = e > a ? e - a : 0;
  *skip = *olen ? a - off : 0;
  return *olen ? a - lo : 0;
}

int ncclzCollContributions(ncclzCollective c, int nranks) {
  return c == NCCLZ_ALLREDUCE || c == NCCLZ_REDUCESCATTER ? nranks : 1;
}

ncclzBuffer ncclzCollEncodeSource(ncclzCollective c) {
  switch (c) {
  case NCCLZ_REDUCESCATTER: return NCCLZ_BUF_WORK;
  case NCCLZ_ALLTOALL: return NCCLZ_BUF_IN;
  default: return NCCLZ_BUF_OUT; /* allreduce works in its output; allgather, broadcast copy into it first */
  }
}

uint32_t ncclzScheduleChunksFor(const ncclzScheduleSpec *spec, size_t count, size_t chunk_elems, uint32_t max_chunks) {
  ncclzScheduleSpec sp = *spec;
  ncclzSchedule s;
  sp.nchunks = 1;
  size_t big = 0;
  for (int r = 0; r < sp.nranks && r < 2; r++) { /* the largest range: rank 0's (and a folded rank's) */
    if (ncclzScheduleBuildSpec(&sp, r, &s)) return 1;
    for (size_t i = 0; i < s.nops; i++) {
      size_t off, len;
      ncclzScheduleOpRange(&s, count, &s.ops[i], &off, &len);
      if (len > big) big = len; /* a channel's share of the range, with one chunk a channel */
    }
    ncclzScheduleFree(&s);
  }
  size_t per = chunk_elems ? chunk_elems : 1, c = (big + per - 1) / per;
  return (uint32_t)(c < 1 ? 1 : c > max_chunks ? max_chunks : c);
}

int ncclzScheduleIsChain(const ncclzScheduleSpec *spec) {
  return spec->coll == NCCLZ_BROADCAST && spec->algo == NCCLZ_ALGO_RING && spec->nranks > 2;
}

/* ------------------------------------------------------------------ the walker: units */

uint64_t ncclzOpTag(const ncclzSchedule *s, const ncclzOp *o) { return (uint64_t)o->step * s->nchunks + o->chunk; }

int ncclzOpStartsUnit(const ncclzSchedule *s, size_t i) {
  const ncclzOp *o = &s->ops[i], *prev = i ? &s->ops[i - 1] : NULL;
  if (o->kind == NCCLZ_OP_SEND) return 1;
  return !prev || prev->kind != NCCLZ_OP_SEND || prev->step != o->step || prev->chunk != o->chunk;
}

size_t ncclzScheduleLargestRange(const ncclzSchedule *s, size_t count) {
  size_t big = 0;
  for (size_t i = 0; i < s->nops; i++) {
    size_t off, len;
    ncclzScheduleOpRange(s, count, &s->ops[i], &off, &len);
    if (len > big) big = len;
  }
  return big;
}

/* Unit u's receive writes data (it reduces or stores a non-empty range). */
static int unit_writes(const ncclzSchedule *s, const ncclzUnit *u) {
  return u->recv >= 0 && u->rlen && (s->ops[u->recv].action & (NCCLZ_ACT_REDUCE | NCCLZ_ACT_STORE));
}

/* Unit k's `after` list: every earlier unit whose receive writes a range overlapping k's (ranges
 * in the collective's whole buffer, whichever buffer a write lands in: conservative). */
static int write_after(const ncclzSchedule *s, ncclzUnitList *ul, size_t k, size_t *cap) {
  ncclzUnit *u = &ul->units[k];
  u->after_at = (uint32_t)ul->nafter_total;
  for (size_t w = 0; w < k; w++) {
    const ncclzUnit *p = &ul->units[w];
    if (!unit_writes(s, p) || p->roff >= u->roff + u->rlen || u->roff >= p->roff + p->rlen) continue;
    if (ul->nafter_total == *cap) {
      size_t nc = *cap ? 2 * *cap : 64;
      int32_t *a = realloc(ul->after, nc * sizeof *a);
      if (!a) return -1;
      ul->after = a;
      *cap = nc;
    }
    ul->after[ul->nafter_total++] = (int32_t)w;
    u->nafter++;
  }
  return 0;
}

/* Op i (a SEND or RECV) into unit u: its range and its kept slot. */
static void unit_add(const ncclzSchedule *s, size_t count, size_t i, ncclzUnit *u, uint32_t *nkeep) {
  const ncclzOp *o = &s->ops[i];
  size_t off, len;
  ncclzScheduleOpRange(s, count, o, &off, &len);
  u->tag = ncclzOpTag(s, o);
  if (o->kind == NCCLZ_OP_SEND) {
    u->send = (int32_t)i;
    u->soff = off;
    u->slen = len;
    return;
  }
  u->recv = (int32_t)i;
  u->roff = off;
  u->rlen = len;
  if (o->action & NCCLZ_ACT_KEEP) u->keep = (int32_t)(*nkeep)++;
}

int ncclzScheduleUnits(const ncclzSchedule *s, size_t count, ncclzUnitList *out) {
  memset(out, 0, sizeof *out);
  out->units = malloc((s->nops + 1) * sizeof *out->units);
  out->unit_of_op = malloc((s->nops + 1) * sizeof *out->unit_of_op);
  if (!out->units || !out->unit_of_op) {
    ncclzUnitListFree(out);
    errno = ENOMEM;
    return -1;
  }
  for (size_t i = 0; i < s->nops; i++) {
    const ncclzOp *o = &s->ops[i];
    out->unit_of_op[i] = -1;
    if (o->kind == NCCLZ_OP_COPY) continue;
    if (ncclzOpStartsUnit(s, i) || !out->nunits) out->units[out->nunits++] = (ncclzUnit){-1, -1, 0, 0, 0, 0, 0, -1, 0, 0};
    unit_add(s, count, i, &out->units[out->nunits - 1], &out->nkeep);
    out->unit_of_op[i] = (int32_t)out->nunits - 1;
  }
  size_t cap = 0;
  for (size_t k = 0; k < out->nunits; k++)
    if (unit_writes(s, &out->units[k]) && write_after(s, out, k, &cap)) {
      ncclzUnitListFree(out);
      errno = ENOMEM;
      return -1;
    }
  out->largest = ncclzScheduleLargestRange(s, count);
  return 0;
}

void ncclzUnitListFree(ncclzUnitList *u) {
  free(u->units);
  free(u->after);
  free(u->unit_of_op);
  memset(u, 0, sizeof *u);
}
