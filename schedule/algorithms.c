/* Each collective's op list from the stages (stages.c): the pairwise all-to-all, the ring over
 * channels and its pipelined broadcast, flat halving-doubling, NCCL's double binary tree and the
 * two-level hierarchical schedule. */
#include "build.h"

#include <stdlib.h>

int sched_build_alltoall(builder *b) {
  ncclzSchedule *s = b->s;
  int n = s->nranks, r = s->rank;
  if (sched_copy_own(b, (uint32_t)r)) return -1;
  for (int st = 1; st < n; st++)
    for (uint32_t c = 0; c < s->nchunks; c++) {
      uint32_t dst = mod(r + st, n), src = mod(r - st, n);
      if (sched_add(b, NCCLZ_OP_SEND, NCCLZ_ACT_ENCODE, NCCLZ_PHASE_EXCHANGE, (int)dst, st - 1, dst, 1, c, -1, 1) ||
          sched_add(b, NCCLZ_OP_RECV, NCCLZ_ACT_STORE, NCCLZ_PHASE_EXCHANGE, (int)src, st - 1, src, 1, c, -1, 1))
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
    return sched_ring_reduce(b, ch, c, nch, 0, 0, 0) ||
           sched_ring_gather(b, ch, c, nch, 1, (uint32_t)n - 1, (uint32_t)n);
  case NCCLZ_REDUCESCATTER: return sched_ring_reduce(b, ch, c, nch, -1, 0, 1);
  default: /* ALLGATHER */ return sched_copy_own(b, (uint32_t)s->rank) || sched_ring_gather(b, ch, c, nch, 0, 0, 1);
  }
}

static void channel_rings_free(group *ch, int nch) {
  for (int q = 0; ch && q < nch; q++) sched_group_free(&ch[q]);
  free(ch);
}

/* Every channel's ring (channel_ring); NULL when out of memory. */
static group *channel_rings(const builder *b, int nch) {
  group *ch = calloc((size_t)nch, sizeof *ch);
  for (int q = 0; ch && q < nch; q++) {
    if (sched_group_alloc(&ch[q], b->s->nranks)) {
      channel_rings_free(ch, nch);
      return NULL;
    }
    channel_ring(b->s, b->g, (uint32_t)q, &ch[q]);
  }
  return ch;
}

int sched_build_ring(builder *b, uint32_t cpc) {
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
  if (p == 0 && sched_add(b, NCCLZ_OP_COPY, 0, NCCLZ_PHASE_PIPELINE, -1, k, 0, 1, cc, -1, 1)) return -1;
  if (p > 0) {
    uint8_t act = NCCLZ_ACT_STORE | (p < n - 1 ? NCCLZ_ACT_KEEP : 0);
    dep = (int32_t)s->nops;
    if (sched_add(b, NCCLZ_OP_RECV, act, NCCLZ_PHASE_PIPELINE, prev, k + (uint32_t)p - 1, 0, 1, cc, -1, 1)) return -1;
  }
  if (p < n - 1 && sched_add(b, NCCLZ_OP_SEND, p ? NCCLZ_ACT_FORWARD : NCCLZ_ACT_ENCODE, NCCLZ_PHASE_PIPELINE, next,
                             k + (uint32_t)p, 0, 1, cc, dep, 1))
    return -1;
  return 0;
}

int sched_build_broadcast(builder *b, uint32_t cpc) {
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
int sched_build_rhd(builder *b) {
  ncclzSchedule *s = b->s;
  int n = s->nranks, rc;
  group gr;
  chunks c = {0, s->nchunks};
  if (sched_group_alloc(&gr, n)) {
    sched_group_free(&gr);
    return -1;
  }
  gr.me = s->rank;
  for (int p = 0; p < n; p++) {
    gr.rank[p] = p;
    gr.blk[p] = (uint32_t)p;
    gr.nb[p] = 1;
  }
  rhd_core k = sched_rhd_core(&gr);
  uint32_t next = 0;
  if (s->coll == NCCLZ_ALLREDUCE) {
    for (int p = 0; p < n; p++) {
      gr.blk[p] = p < 2 * k.rem ? (uint32_t)(p / 2) : (uint32_t)(p - k.rem);
      gr.nb[p] = p < 2 * k.rem && p % 2 == 0 ? 0 : 1;
    }
    rc = sched_rhd_reduce(b, &gr, &c, 0, 0, 0, &next) || sched_rhd_gather(b, &gr, &c, next, 1, (uint32_t)n, &next);
  } else if (s->coll == NCCLZ_REDUCESCATTER) {
    rc = sched_rhd_reduce(b, &gr, &c, 0, 1, 1, &next);
  } else {
    rc = sched_copy_own(b, (uint32_t)s->rank) || sched_rhd_gather(b, &gr, &c, 0, 0, 1, &next);
  }
  sched_group_free(&gr);
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
  int head = c2 <= (uint32_t)g
                 ? (int)((uint64_t)(2 * q + t) * (uint64_t)g / c2)
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
      if (sched_add(b, NCCLZ_OP_RECV, NCCLZ_ACT_REDUCE, NCCLZ_PHASE_REDUCE, p->down[d], 2 * t, t, 1, c, -1,
                    (uint32_t)p->ndown[d]))
        return -1;
  } else if (!down) {
    if (p->up >= 0 && sched_add(b, NCCLZ_OP_SEND, NCCLZ_ACT_ENCODE, NCCLZ_PHASE_REDUCE, p->up, 2 * t, t, 1, c,
                                sched_find_dep(s, t, 1, c), (uint32_t)p->nup))
      return -1;
  } else if (!sends) {
    if (p->up >= 0 && sched_add(b, NCCLZ_OP_RECV, NCCLZ_ACT_STORE | (p->nd ? NCCLZ_ACT_KEEP : 0), NCCLZ_PHASE_GATHER,
                                p->up, 2 * t + 1, t, 1, c, -1, (uint32_t)s->nranks))
      return -1;
  } else {
    int32_t dep = sched_find_dep(s, t, 1, c); /* the root's sum, or the frame from the parent */
    uint8_t act = p->up >= 0 ? NCCLZ_ACT_FORWARD : NCCLZ_ACT_ENCODE;
    for (int d = 0; d < p->nd; d++)
      if (sched_add(b, NCCLZ_OP_SEND, act, NCCLZ_PHASE_GATHER, p->down[d], 2 * t + 1, t, 1, c, dep,
                    (uint32_t)s->nranks))
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
int sched_build_tree(builder *b, uint32_t cpc) {
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
    if (holder != me &&
        sched_exchange(b, c, holder, step, NCCLZ_PHASE_EXCHANGE, (uint32_t)me, 1, NCCLZ_ACT_ENCODE, nsum, 0, 0, 0, 0))
      return -1;
    return held != me ? sched_exchange(b, c, held, step, NCCLZ_PHASE_EXCHANGE, 0, 0, 0, 0, (uint32_t)held, 1,
                                       NCCLZ_ACT_STORE, nsum)
                      : 0;
  }
  int q = me % g, node = me / g;
  for (int v = node - 1; v <= node; v++) { /* my rail block, and a folded partner's before it */
    int blk = q * m + v;
    if (v < 0 || hier_finisher(blk, m, g, rhd) != me || blk == me) continue;
    if (sched_exchange(b, c, blk, step, NCCLZ_PHASE_EXCHANGE, (uint32_t)blk, 1, NCCLZ_ACT_ENCODE, nsum, 0, 0, 0, 0))
      return -1;
  }
  int from = hier_finisher(me, m, g, rhd);
  return from != me ? sched_exchange(b, c, from, step, NCCLZ_PHASE_EXCHANGE, 0, 0, 0, 0, (uint32_t)me, 1,
                                     NCCLZ_ACT_STORE, nsum)
                    : 0;
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
int sched_build_hier(builder *b, ncclzAlgorithm inter) {
  ncclzSchedule *s = b->s;
  int g = b->g, m = s->nranks / g, node = s->rank / g, q = s->rank % g, rc = -1, n = s->nranks;
  group in = {0}, rail = {0};
  chunks c = {0, s->nchunks};
  uint32_t step = 0, all = (uint32_t)n, gather = s->coll == NCCLZ_ALLGATHER ? 1u : all;
  if (sched_group_alloc(&in, g) || sched_group_alloc(&rail, m)) goto out;
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
    if (sched_copy_own(b, (uint32_t)s->rank) || hier_permute(b, m, step++, 0, 0, 1)) goto out;
  } else {
    if (g > 1 && sched_ring_reduce(b, &in, &c, 1, -1, step, 0)) goto out;
    step += (uint32_t)(g - 1);
  }
  int rs = s->coll == NCCLZ_REDUCESCATTER, ag = s->coll == NCCLZ_ALLGATHER;
  if (m > 1) {
    if (inter == NCCLZ_ALGO_RING) {
      if (!ag && sched_ring_reduce(b, &rail, &c, 1, rs ? -1 : 0, step, rs)) goto out;
      if (!ag) step += (uint32_t)(m - 1);
      if (!rs && sched_ring_gather(b, &rail, &c, 1, ag ? 0 : 1, step, gather)) goto out;
      if (!rs) step += (uint32_t)(m - 1);
    } else {
      if (!ag && sched_rhd_reduce(b, &rail, &c, step, rs, 0, &step)) goto out;
      if (!rs && sched_rhd_gather(b, &rail, &c, step, !ag, gather, &step)) goto out;
    }
  }
  if (rs) {
    if (hier_permute(b, m, step, 1, inter != NCCLZ_ALGO_RING, all)) goto out;
  } else if (g > 1 && sched_ring_gather(b, &in, &c, 1, 0, step, gather)) {
    goto out;
  }
  rc = 0;
out:
  sched_group_free(&in);
  sched_group_free(&rail);
  return rc;
}
