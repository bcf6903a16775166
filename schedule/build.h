/* Internal to schedule/: the list under construction and the stages every algorithm is written
 * with (stages.c: the ring walker and halving-doubling over a group of ranks; algorithms.c: each
 * collective's list from them; schedule.c: the dispatch). */
#ifndef NCCLZ_SCHEDULE_BUILD_H
#define NCCLZ_SCHEDULE_BUILD_H
#include "ncclz/schedule.h"

static inline uint32_t mod(int64_t a, int n) { return (uint32_t)(((a % n) + n) % n); }

/* The list under construction. */
typedef struct {
  ncclzSchedule *s;
  size_t cap;
  int g; /* ranks per node */
} builder;

/* A group of ranks that a stage runs over: member p is rank rank[p] and owns blocks
 * [blk[p], blk[p] + nb[p]); each member's data stands for `weight` ranks at the stage's start.
 * Halving-doubling needs the ranges contiguous in member order (LO). */
typedef struct {
  int n, me; /* members; my position (-1: not a member) */
  int *rank;
  uint32_t *blk, *nb;
  uint32_t weight;
} group;

/* First block of member p's range in a contiguous group (p = n: the end). */
static inline uint32_t LO(const group *gr, int p) {
  return p < gr->n ? gr->blk[p] : gr->blk[gr->n - 1] + gr->nb[gr->n - 1];
}

/* Chunks [c0, c0 + cn) of each range: a channel's share. */
typedef struct {
  uint32_t c0, cn;
} chunks;

/* A group's power-of-two core: pof2 "new ranks"; the first rem pairs of members (2j, 2j+1) fold
 * into their odd member, which becomes new rank j and owns both members' ranges. */
typedef struct {
  int pof2, rem;
  int newme; /* my new rank, -1 for a folded (even) member */
} rhd_core;

static inline rhd_core sched_rhd_core(const group *gr) {
  rhd_core k = {1, 0, -1};
  while (k.pof2 * 2 <= gr->n) k.pof2 *= 2;
  k.rem = gr->n - k.pof2;
  int p = gr->me;
  k.newme = p < 2 * k.rem ? (p % 2 ? p / 2 : -1) : p - k.rem;
  return k;
}

/* An op over blocks [block, block + nblk) appended to the list (0, or -1 out of memory). */
int sched_add(builder *b, uint8_t kind, uint8_t action, uint8_t phase, int peer, uint32_t step, uint32_t block,
              uint32_t nblk, uint32_t chunk, int32_t dep, uint32_t nsum);
/* The receive whose data a send of (block range, chunk) needs (-1: the rank's own data). */
int32_t sched_find_dep(const ncclzSchedule *s, uint32_t block, uint32_t nblk, uint32_t chunk);
int sched_group_alloc(group *gr, int n);
void sched_group_free(group *gr);
/* One exchange with `peer`, chunk by chunk: send [sb, sb+sn), receive [rb, rb+rn) (n = 0: none). */
int sched_exchange(builder *b, const chunks *c, int peer, uint32_t step, uint8_t phase, uint32_t sb, uint32_t sn,
                   uint8_t sact, uint32_t snsum, uint32_t rb, uint32_t rn, uint8_t ract, uint32_t rnsum);
/* The rank's own block moves from input to output, chunk by chunk. */
int sched_copy_own(builder *b, uint32_t block);

/* The ring stages over channels ch[0..nch) (stages.c, ring_walk). */
int sched_ring_reduce(builder *b, const group *ch, const chunks *c, int nch, int o, uint32_t first, int store_last);
int sched_ring_gather(builder *b, const group *ch, const chunks *c, int nch, int o, uint32_t first, uint32_t nsum);
/* Halving reduce-scatter and doubling all-gather over a contiguous group (stages.c). */
int sched_rhd_reduce(builder *b, const group *gr, const chunks *c, uint32_t first, int store, int unfold,
                     uint32_t *next);
int sched_rhd_gather(builder *b, const group *gr, const chunks *c, uint32_t first, int folded, uint32_t nsum,
                     uint32_t *next);

/* Each collective's list (algorithms.c); cpc: chunks per channel. */
int sched_build_alltoall(builder *b);
int sched_build_ring(builder *b, uint32_t cpc);
int sched_build_broadcast(builder *b, uint32_t cpc);
int sched_build_rhd(builder *b);
int sched_build_tree(builder *b, uint32_t cpc);
int sched_build_hier(builder *b, ncclzAlgorithm inter);
#endif
