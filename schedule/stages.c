/* The stages every schedule is written with, over a group of ranks whose members own block ranges
 * (a ring's order, a node, a rail): the ring walker (reduce-scatter and all-gather over channels)
 * and recursive halving-doubling (Rabenseifner, with the fold of the ranks beyond a power of two),
 * and the list's helpers. */
#include "build.h"

#include <stdlib.h>

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
int sched_add(builder *b, uint8_t kind, uint8_t action, uint8_t phase, int peer, uint32_t step, uint32_t block,
              uint32_t nblk, uint32_t chunk, int32_t dep, uint32_t nsum) {
  ncclzOp o = {kind, action, phase, peer, step, block, chunk, dep, nblk, nsum, link_of(b, peer)};
  return push(b, o);
}

/* The receive whose data a send of (block range, chunk) needs: the latest receive (in list order)
 * of the same range and chunk, or of an overlapping other range (whose chunks cut elsewhere, so
 * any of its chunks may hold ours); -1 when none (the rank's own data). */
int32_t sched_find_dep(const ncclzSchedule *s, uint32_t block, uint32_t nblk, uint32_t chunk) {
  for (size_t i = s->nops; i-- > 0;) {
    const ncclzOp *o = &s->ops[i];
    if (o->kind != NCCLZ_OP_RECV || o->block >= block + nblk || block >= o->block + o->nblk) continue;
    if (o->block != block || o->nblk != nblk || o->chunk == chunk) return (int32_t)i;
  }
  return -1;
}

int sched_group_alloc(group *gr, int n) {
  gr->n = n;
  gr->me = -1;
  gr->weight = 1;
  gr->rank = malloc((size_t)n * sizeof *gr->rank);
  gr->blk = malloc((size_t)n * sizeof *gr->blk);
  gr->nb = malloc((size_t)n * sizeof *gr->nb);
  return gr->rank && gr->blk && gr->nb ? 0 : -1;
}

void sched_group_free(group *gr) {
  free(gr->rank);
  free(gr->blk);
  free(gr->nb);
}

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
        if (sched_add(b, NCCLZ_OP_SEND, a.send_act, a.phase, next, first + st, sb, sn, cc,
                      sched_find_dep(b->s, sb, sn, cc), a.nsum) ||
            sched_add(b, NCCLZ_OP_RECV, a.recv_act, a.phase, prev, first + st, rb, rn, cc, -1, a.nsum))
          return -1;
      }
  return 0;
}

int sched_ring_reduce(builder *b, const group *ch, const chunks *c, int nch, int o, uint32_t first, int store_last) {
  return ring_walk(b, ch, c, nch, o, first, reduce_step, (uint32_t)store_last);
}

int sched_ring_gather(builder *b, const group *ch, const chunks *c, int nch, int o, uint32_t first, uint32_t nsum) {
  return ring_walk(b, ch, c, nch, o, first, gather_step, nsum);
}

/* ------------------------------------------------------------------ halving-doubling */

static int new_member(const rhd_core *k, int j) { return j < k->rem ? 2 * j + 1 : j + k->rem; }
/* First block of new rank j's range (j = pof2: the end). */
static uint32_t new_lo(const group *gr, const rhd_core *k, int j) {
  return j < k->rem ? LO(gr, 2 * j) : LO(gr, j + k->rem);
}
/* Ranks summed by the new ranks that agree with j modulo `span` (before a halving step: those j
 * has already combined with). */
static uint32_t new_weight(const group *gr, const rhd_core *k, int j, int span) {
  uint32_t w = 0;
  for (int i = 0; i < k->pof2; i++)
    if (i % span == j % span) w += (i < k->rem ? 2u : 1u) * gr->weight;
  return w;
}

/* One exchange with `peer`, chunk by chunk: send [sb, sb+sn), receive [rb, rb+rn) (n = 0: none). */
int sched_exchange(builder *b, const chunks *c, int peer, uint32_t step, uint8_t phase, uint32_t sb, uint32_t sn,
                   uint8_t sact, uint32_t snsum, uint32_t rb, uint32_t rn, uint8_t ract, uint32_t rnsum) {
  for (uint32_t k = 0; k < c->cn; k++) {
    uint32_t cc = c->c0 + k;
    if (sn && sched_add(b, NCCLZ_OP_SEND, sact, phase, peer, step, sb, sn, cc, sched_find_dep(b->s, sb, sn, cc), snsum))
      return -1;
    if (rn && sched_add(b, NCCLZ_OP_RECV, ract, phase, peer, step, rb, rn, cc, -1, rnsum)) return -1;
  }
  return 0;
}

/* The fold's one exchange between the pair (p, p^1): the even member sends [sb, sb+sn) to the
 * odd one when to_odd, else receives it from it. */
static int fold_pair(builder *b, const group *gr, const chunks *c, uint32_t step, uint8_t phase, int to_odd,
                     uint32_t blk, uint32_t nblk, uint8_t ract, uint32_t nsum) {
  int p = gr->me, even = p % 2 == 0, sender = even == to_odd;
  int peer = gr->rank[even ? p + 1 : p - 1];
  return sender ? sched_exchange(b, c, peer, step, phase, blk, nblk, NCCLZ_ACT_ENCODE, nsum, 0, 0, 0, 0)
                : sched_exchange(b, c, peer, step, phase, 0, 0, 0, 0, blk, nblk, ract, nsum);
}

/* Halving reduce-scatter over a group from step `first` (the next free step into *next): fold,
 * then log2(pof2) halvings, the farthest partner first (new rank j ends with the sum of its own
 * range); store: the last receive stores into the output; unfold: the folded members get their
 * range back (REDUCESCATTER). */
int sched_rhd_reduce(builder *b, const group *gr, const chunks *c, uint32_t first, int store, int unfold,
                     uint32_t *next) {
  rhd_core k = sched_rhd_core(gr);
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
    if (sched_exchange(b, c, gr->rank[new_member(&k, pj)], step, NCCLZ_PHASE_REDUCE, sb, sn, NCCLZ_ACT_ENCODE,
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
int sched_rhd_gather(builder *b, const group *gr, const chunks *c, uint32_t first, int folded, uint32_t nsum,
                     uint32_t *next) {
  rhd_core k = sched_rhd_core(gr);
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
    if (sched_exchange(b, c, gr->rank[new_member(&k, pj)], step, NCCLZ_PHASE_GATHER, sb, sn, NCCLZ_ACT_ENCODE, nsum, rb,
                       rn, NCCLZ_ACT_STORE, nsum))
      return -1;
  }
  if (k.rem) {
    if (paired && fold_pair(b, gr, c, step, NCCLZ_PHASE_GATHER, 0, LO(gr, 0), all, NCCLZ_ACT_STORE, nsum)) return -1;
    step++;
  }
  *next = step;
  return 0;
}

int sched_copy_own(builder *b, uint32_t block) {
  for (uint32_t c = 0; c < b->s->nchunks; c++)
    if (sched_add(b, NCCLZ_OP_COPY, 0, NCCLZ_PHASE_EXCHANGE, -1, 0, block, 1, c, -1, 1)) return -1;
  return 0;
}
