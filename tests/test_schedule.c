/* Schedules: every send has a matching receive, nothing deadlocks, and running the lists
 * symbolically gives each collective's exact result, for every algorithm (ring over 1..3
 * channels, tree, halving-doubling, hierarchical), 1..9 ranks in nodes of every size that divides
 * them, 1..3 chunks, and counts 0, 1, fewer than the ranks, primes.
 *
 * Symbolic values: rank q's element i is 16^q + i * 2^40, so a sum holds each rank's count in its
 * own hex digit: a result is right only if it has every rank exactly once, and every send's
 * chunk must sum exactly the op's nsum ranks. Frames are copies of the values; ops run in list
 * order on each rank, a receive waiting for its message (the executors' order). */
#include "ncclz/schedule.h"
#include "testutil.h"

#include <stdlib.h>
#include <string.h>

#define MAXR 9
#define MAXMSG 400000

typedef struct {
  int src, dst;
  uint32_t step, chunk;
  int64_t *vals;
  size_t len;
  int taken;
} message;

typedef struct {
  ncclzSchedule s;
  int64_t *in, *work, *out; /* work: the reduce buffer (the output for allreduce) */
  int64_t **kept;           /* frame kept by recv op i (KEEP), for a later FORWARD */
  size_t *kept_len;
  size_t next;              /* next op to run */
} rank_state;

static message msgs[MAXMSG];
static size_t nmsgs;
static int nsum_wrong, link_wrong, fifo_wrong;
/* Staging banks per peer (0: unlimited): a send waits while that many of its frames to the same
 * peer are not received yet, as the executors' and the replay's sends wait for a free bank. */
static int send_banks;

static size_t in_count(ncclzCollective c, size_t count, int n) {
  return c == NCCLZ_REDUCESCATTER || c == NCCLZ_ALLTOALL ? count * n : count;
}
static size_t out_count(ncclzCollective c, size_t count, int n) {
  return c == NCCLZ_ALLGATHER || c == NCCLZ_ALLTOALL ? count * n : count;
}

static int64_t value(int rank, size_t i) { return ((int64_t)1 << (4 * rank)) + (int64_t)i * ((int64_t)1 << 40); }
/* Ranks summed in a symbolic value (the sum of its hex digits below bit 40). */
static uint32_t ranks_in(int64_t v) {
  uint32_t k = 0;
  for (int q = 0; q < 10; q++) k += (uint32_t)((v >> (4 * q)) & 15);
  return k;
}

static size_t in_offset(const rank_state *r, size_t off, size_t count) {
  return r->s.coll == NCCLZ_ALLGATHER ? off - (size_t)r->s.rank * count : off;
}
/* The part of [off, off+len) that lies in the output, as output offset and length (0: none). */
static size_t out_part(const rank_state *r, size_t off, size_t len, size_t count, size_t *skip, size_t *olen) {
  *skip = 0;
  *olen = len;
  if (r->s.coll != NCCLZ_REDUCESCATTER) return off;
  size_t lo = (size_t)r->s.rank * count, hi = lo + count, a = off > lo ? off : lo, b = off + len < hi ? off + len : hi;
  *olen = b > a ? b - a : 0;
  *skip = a - off;
  return *olen ? a - lo : 0;
}

static message *find_msg(int src, int dst, const ncclzOp *o) {
  for (size_t i = 0; i < nmsgs; i++) {
    message *m = &msgs[i];
    if (!m->taken && m->src == src && m->dst == dst && m->step == o->step && m->chunk == o->chunk) return m;
  }
  return NULL;
}

static const int64_t *send_source(const rank_state *r, size_t off, size_t count) {
  switch (r->s.coll) {
  case NCCLZ_ALLREDUCE:
  case NCCLZ_REDUCESCATTER: return r->work + off;
  case NCCLZ_ALLTOALL: return r->in + off;
  default: return r->out + off; /* allgather, broadcast: the own block is copied there first */
  }
}

static void run_send(rank_state *r, const ncclzOp *o, size_t off, size_t len, size_t count) {
  CHECK(nmsgs < MAXMSG, "too many messages");
  if (nmsgs >= MAXMSG) return;
  message *m = &msgs[nmsgs++];
  *m = (message){r->s.rank, o->peer, o->step, o->chunk, malloc((len ? len : 1) * 8), len, 0};
  if (o->action & NCCLZ_ACT_FORWARD) {
    int ok = o->dep >= 0 && r->kept[o->dep] && r->kept_len[o->dep] == len;
    CHECK(ok, "forward without a kept frame (op %zu)", r->next);
    if (ok) memcpy(m->vals, r->kept[o->dep], len * 8);
  } else {
    memcpy(m->vals, send_source(r, off, count), len * 8);
  }
  for (size_t i = 0; i < len; i++) nsum_wrong += ranks_in(m->vals[i]) != o->nsum;
}

static int run_recv(rank_state *r, const ncclzOp *o, size_t off, size_t len, size_t count) {
  message *m = find_msg(o->peer, r->s.rank, o);
  if (!m) return 0;
  CHECK(m->len == len, "recv length %zu != sent %zu", len, m->len);
  m->taken = 1;
  /* NCCL matches a pair's messages in the order they are posted: no older one may be waiting */
  for (const message *e = msgs; e < m; e++) fifo_wrong += !e->taken && e->src == m->src && e->dst == m->dst;
  if (o->action & NCCLZ_ACT_REDUCE)
    for (size_t i = 0; i < len && i < m->len; i++) r->work[off + i] += m->vals[i];
  if (o->action & NCCLZ_ACT_STORE) {
    const int64_t *src = o->action & NCCLZ_ACT_REDUCE ? r->work + off : m->vals;
    size_t skip, olen, oo = out_part(r, off, len, count, &skip, &olen);
    if (olen) memmove(r->out + oo, src + skip, olen * 8);
  }
  if (o->action & NCCLZ_ACT_KEEP) {
    r->kept[r->next] = malloc((len ? len : 1) * 8);
    memcpy(r->kept[r->next], m->vals, len * 8);
    r->kept_len[r->next] = len;
  }
  return 1;
}

/* Frames from src to dst not received yet. */
static int in_flight(int src, int dst) {
  int k = 0;
  for (size_t i = 0; i < nmsgs; i++) k += !msgs[i].taken && msgs[i].src == src && msgs[i].dst == dst;
  return k;
}

/* Runs op r->next if it can; returns 1 if it ran. */
static int run_op(rank_state *r, size_t count) {
  const ncclzOp *o = &r->s.ops[r->next];
  if (o->kind == NCCLZ_OP_SEND && send_banks && in_flight(r->s.rank, o->peer) >= send_banks) return 0;
  size_t off, len;
  ncclzScheduleOpRange(&r->s, count, o, &off, &len);
  int g = r->s.ranks_per_node;
  if (o->kind != NCCLZ_OP_COPY)
    link_wrong += o->link != (o->peer / g == r->s.rank / g ? NCCLZ_LINK_INTRA : NCCLZ_LINK_NET);
  if (o->kind == NCCLZ_OP_COPY) {
    size_t skip, olen, oo = out_part(r, off, len, count, &skip, &olen);
    memcpy(r->out + oo, r->in + in_offset(r, off, count) + skip, olen * 8);
  } else if (o->kind == NCCLZ_OP_SEND) {
    run_send(r, o, off, len, count);
  } else if (!run_recv(r, o, off, len, count)) {
    return 0;
  }
  r->next++;
  return 1;
}

static int64_t expected(ncclzCollective c, int n, int rank, int root, size_t count, size_t i) {
  int64_t sum = 0;
  switch (c) {
  case NCCLZ_ALLREDUCE:
    for (int q = 0; q < n; q++) sum += value(q, i);
    return sum;
  case NCCLZ_REDUCESCATTER:
    for (int q = 0; q < n; q++) sum += value(q, (size_t)rank * count + i);
    return sum;
  case NCCLZ_ALLGATHER: return value((int)(i / count), i % count);
  case NCCLZ_ALLTOALL: return value((int)(i / count), (size_t)rank * count + i % count);
  case NCCLZ_BROADCAST: return value(root, i);
  default: return 0;
  }
}

static void free_states(rank_state *R, int n) {
  for (size_t i = 0; i < nmsgs; i++) free(msgs[i].vals);
  for (int r = 0; r < n; r++) {
    for (size_t i = 0; i < R[r].s.nops; i++) free(R[r].kept[i]);
    free(R[r].kept);
    free(R[r].kept_len);
    if (R[r].s.coll != NCCLZ_ALLREDUCE) free(R[r].out);
    free(R[r].work);
    free(R[r].in);
    ncclzScheduleFree(&R[r].s);
  }
}

static int init_states(const ncclzScheduleSpec *sp, size_t count, rank_state *R) {
  ncclzCollective c = sp->coll;
  int n = sp->nranks;
  for (int r = 0; r < n; r++) {
    int built = ncclzScheduleBuildSpec(sp, r, &R[r].s) == 0;
    CHECK(built, "build %s/%s n=%d g=%d", ncclzCollectiveName(c), ncclzAlgorithmName(sp->algo), n, sp->ranks_per_node);
    if (!built) return -1;
    size_t ni = in_count(c, count, n), no = out_count(c, count, n);
    R[r].in = malloc((ni + 1) * 8);
    R[r].out = calloc(no + 1, 8);
    R[r].work = malloc((ni + 1) * 8);
    for (size_t i = 0; i < ni; i++) R[r].in[i] = value(r, i);
    memcpy(R[r].work, R[r].in, ni * 8);
    if (c == NCCLZ_ALLREDUCE) {
      free(R[r].out);
      R[r].out = R[r].work;
    }
    R[r].kept = calloc(R[r].s.nops + 1, sizeof(int64_t *));
    R[r].kept_len = calloc(R[r].s.nops + 1, sizeof(size_t));
    R[r].next = 0;
  }
  return 0;
}

static int replays[NCCLZ_ALGO_COUNT];
static void replay(const ncclzScheduleSpec *sp, size_t count) {
  replays[sp->algo]++;
  rank_state R[MAXR];
  memset(R, 0, sizeof R);
  ncclzCollective c = sp->coll;
  int n = sp->nranks;
  nmsgs = 0;
  nsum_wrong = link_wrong = fifo_wrong = 0;
  if (init_states(sp, count, R)) {
    free_states(R, n);
    return;
  }
  /* Round robin: every rank runs its ops in order; a receive waits for its message. */
  for (int progress = 1; progress;) {
    progress = 0;
    for (int r = 0; r < n; r++)
      while (R[r].next < R[r].s.nops && run_op(&R[r], count)) progress = 1;
  }
  int wrong = 0, stuck = 0, lost = 0;
  for (int r = 0; r < n; r++) {
    stuck += R[r].next != R[r].s.nops;
    for (size_t i = 0; i < out_count(c, count, n); i++) wrong += R[r].out[i] != expected(c, n, r, sp->root, count, i);
  }
  for (size_t i = 0; i < nmsgs; i++) lost += !msgs[i].taken;
  CHECK(!stuck && !wrong && !lost && !nsum_wrong && !link_wrong && !fifo_wrong,
        "%s/%s n=%d g=%d chunks=%u channels=%u count=%zu banks=%d: %d ranks stuck, %d wrong elements, %d messages never "
        "received, %d elements summing other than nsum ranks, %d ops with a wrong link, %d messages taken before an "
        "older one of the pair",
        ncclzCollectiveName(c), ncclzAlgorithmName(sp->algo), n, sp->ranks_per_node, sp->nchunks, sp->nchannels, count,
        send_banks, stuck, wrong, lost, nsum_wrong, link_wrong, fifo_wrong);
  free_states(R, n);
}

/* Steps and message counts of ring allreduce: 2(n-1) steps, 2(n-1)*chunks sends per rank. */
static void test_shape(void) {
  ncclzSchedule s;
  ncclzScheduleSpec sp = {NCCLZ_ALLREDUCE, NCCLZ_ALGO_RING, 5, 0, 0, 3, 1, NCCLZ_ALGO_RHD};
  CHECK(ncclzScheduleBuildSpec(&sp, 2, &s) == 0, "build");
  size_t sends = 0;
  for (size_t i = 0; i < s.nops; i++) sends += s.ops[i].kind == NCCLZ_OP_SEND;
  CHECK(s.nsteps == 8 && sends == 24, "allreduce n=5: %u steps, %zu sends", s.nsteps, sends);
  ncclzScheduleFree(&s);
  sp.nranks = 0;
  CHECK(ncclzScheduleBuildSpec(&sp, 0, &s) == -1, "n=0 rejected");
  sp.nranks = 4;
  CHECK(ncclzScheduleBuildSpec(&sp, 4, &s) == -1, "rank out of range rejected");
  sp.nchunks = 0;
  CHECK(ncclzScheduleBuildSpec(&sp, 1, &s) == -1, "0 chunks rejected");
  CHECK(ncclzBusBwFactor(NCCLZ_ALLREDUCE, 2) == 1.0 && ncclzBusBwFactor(NCCLZ_ALLGATHER, 4) == 0.75 &&
            ncclzBusBwFactor(NCCLZ_BROADCAST, 8) == 1.0,
        "busbw factors");
  CHECK(ncclzCollContributions(NCCLZ_ALLREDUCE, 5) == 5 && ncclzCollContributions(NCCLZ_REDUCESCATTER, 5) == 5 &&
            ncclzCollContributions(NCCLZ_ALLGATHER, 5) == 1 && ncclzCollContributions(NCCLZ_ALLTOALL, 5) == 1 &&
            ncclzCollContributions(NCCLZ_BROADCAST, 5) == 1,
        "contributions per output element");
  CHECK(ncclzCollectiveFromName("alltoall") == NCCLZ_ALLTOALL && ncclzCollectiveFromName("x") == -1, "names");
  CHECK(ncclzAlgorithmFromName("rhd") == NCCLZ_ALGO_RHD && ncclzAlgorithmFromName("x") == -1 &&
            !strcmp(ncclzAlgorithmName(NCCLZ_ALGO_HIER), "hier"),
        "algorithm names");
}

/* Send steps on one rank: halving-doubling takes 2 log2(N) (+2 with a fold) where the ring takes
 * 2(N-1); the tree's depth does not show in its steps (4: up and down of two trees). */
static void test_step_counts(void) {
  ncclzScheduleSpec sp = {NCCLZ_ALLREDUCE, NCCLZ_ALGO_RHD, 64, 8, 0, 1, 1, NCCLZ_ALGO_RHD};
  ncclzSchedule s;
  CHECK(ncclzScheduleBuildSpec(&sp, 5, &s) == 0 && s.nsteps == 12, "rhd allreduce on 64: %u steps", s.nsteps);
  ncclzScheduleFree(&s);
  sp.nranks = 48;
  CHECK(ncclzScheduleBuildSpec(&sp, 0, &s) == 0 && s.nsteps == 12, "rhd allreduce on 48 (fold): %u steps", s.nsteps);
  ncclzScheduleFree(&s);
  sp.algo = NCCLZ_ALGO_HIER; /* 6 nodes of 8: 7 + (1 + 2 + 2 + 1) + 7 */
  CHECK(ncclzScheduleBuildSpec(&sp, 0, &s) == 0 && s.nsteps == 20, "hier allreduce 6x8: %u steps", s.nsteps);
  ncclzScheduleFree(&s);
}

/* Channels: the inter-node sends of ring channel q all leave from one local GPU per node, and
 * those of tree channel q from its two heads; channels never share a GPU, so with C = rails each
 * channel has its own NIC. */
static void channel_gpus(ncclzAlgorithm algo, int per_channel) {
  enum { N = 32, G = 8, C = 4 };
  ncclzScheduleSpec sp = {NCCLZ_ALLREDUCE, algo, N, G, 0, 2, C, NCCLZ_ALGO_RHD};
  unsigned gpus[C] = {0};
  int bad = 0;
  for (int r = 0; r < N; r++) {
    ncclzSchedule s;
    if (ncclzScheduleBuildSpec(&sp, r, &s)) {
      bad++;
      continue;
    }
    for (size_t i = 0; i < s.nops; i++) {
      const ncclzOp *o = &s.ops[i];
      if (o->kind == NCCLZ_OP_SEND && o->link == NCCLZ_LINK_NET) gpus[o->chunk / sp.nchunks] |= 1u << (r % G);
    }
    ncclzScheduleFree(&s);
  }
  for (int q = 0; q < C; q++) {
    bad += __builtin_popcount(gpus[q]) != per_channel;
    for (int p = 0; p < q; p++) bad += (gpus[p] & gpus[q]) != 0;
  }
  CHECK(bad == 0, "%s channels: GPU sets %x %x %x %x (%d per channel expected)", ncclzAlgorithmName(algo), gpus[0], gpus[1],
        gpus[2], gpus[3], per_channel);
}

static void test_channel_rails(void) {
  channel_gpus(NCCLZ_ALGO_RING, 1);
  channel_gpus(NCCLZ_ALGO_TREE, 2);
}

static void test_refusals(void) {
  char why[200];
  ncclzScheduleSpec sp = {NCCLZ_REDUCESCATTER, NCCLZ_ALGO_TREE, 8, 4, 0, 1, 1, NCCLZ_ALGO_RHD};
  CHECK(ncclzScheduleCheck(&sp, why, sizeof why) == -1 &&
            !strcmp(why, "tree runs allreduce only; reducescatter runs with ring, rhd, hier"),
        "tree for reducescatter: '%s'", why);
  sp.coll = NCCLZ_ALLTOALL;
  sp.algo = NCCLZ_ALGO_RHD;
  CHECK(ncclzScheduleCheck(&sp, why, sizeof why) == -1 &&
            !strcmp(why, "rhd runs allreduce, reducescatter and allgather; alltoall runs with ring"),
        "rhd for alltoall: '%s'", why);
  sp.coll = NCCLZ_ALLREDUCE;
  sp.algo = NCCLZ_ALGO_HIER;
  sp.ranks_per_node = 1;
  CHECK(ncclzScheduleCheck(&sp, why, sizeof why) == -1 && strstr(why, "hier needs several nodes of several GPUs") &&
            strstr(why, "8 nodes of 1 GPU)"),
        "hier on one GPU per node: '%s'", why);
  sp.ranks_per_node = 3;
  CHECK(ncclzScheduleCheck(&sp, why, sizeof why) == -1 && strstr(why, "8 ranks are not a multiple of 3"),
        "hier on partial nodes: '%s'", why);
  ncclzSchedule s;
  CHECK(ncclzScheduleBuildSpec(&sp, 0, &s) == -1, "a refused spec does not build");
}

static void run_all(void) {
  const size_t counts[] = {0, 1, 3, 5, 13, 100};
  const size_t ncounts = sizeof counts / sizeof counts[0];
  for (int n = 1; n <= MAXR; n++)
    for (int g = 1; g <= n; g++) {
      if (n % g) continue;
      for (int c = 0; c < NCCLZ_COLL_COUNT; c++)
        for (int a = NCCLZ_ALGO_RING; a < NCCLZ_ALGO_COUNT; a++)
          for (int inter = NCCLZ_ALGO_RING; inter <= NCCLZ_ALGO_RHD; inter += NCCLZ_ALGO_RHD - NCCLZ_ALGO_RING)
            for (uint32_t ch = 1; ch <= 3; ch++)
              for (uint32_t chans = 1; chans <= (a == NCCLZ_ALGO_RING || a == NCCLZ_ALGO_TREE ? 3u : 1u); chans++) {
                ncclzScheduleSpec sp = {(ncclzCollective)c, (ncclzAlgorithm)a, n, g, n > 2 ? 2 : 0, ch, chans,
                                        (ncclzAlgorithm)inter};
                char why[160];
                if (ncclzScheduleCheck(&sp, why, sizeof why)) continue;
                if (inter == NCCLZ_ALGO_RING && a != NCCLZ_ALGO_HIER) continue;
                for (size_t k = 0; k < ncounts; k++) replay(&sp, counts[k]);
              }
    }
}

/* More chunks than staging banks: every schedule must still finish when a send waits for a free
 * bank, i.e. no rank may post all chunks' sends before the receives its peers wait for (the
 * hierarchical block permutation did, and deadlocked the replay from 128 MiB on 2 x 8; the tree,
 * whose ranks took its two trees in their own orders, did with one bank on 2 x 3, 2 x 4, 3 x 3). */
static void test_banked(void) {
  for (int n = 4; n <= MAXR; n++)
    for (int g = 2; g < n; g++) {
      if (n % g) continue;
      for (int c = 0; c < 3; c++)
        for (int a = NCCLZ_ALGO_RING; a < NCCLZ_ALGO_COUNT; a++)
          for (int inter = NCCLZ_ALGO_RING; inter <= NCCLZ_ALGO_RHD; inter += NCCLZ_ALGO_RHD - NCCLZ_ALGO_RING)
            for (send_banks = 1; send_banks <= 2; send_banks++) {
              ncclzScheduleSpec sp = {(ncclzCollective)c, (ncclzAlgorithm)a, n, g, 0, 6, 1, (ncclzAlgorithm)inter};
              char why[160];
              if (ncclzScheduleCheck(&sp, why, sizeof why) || (inter == NCCLZ_ALGO_RING && a != NCCLZ_ALGO_HIER)) continue;
              replay(&sp, 50);
            }
    }
  send_banks = 0;
}

/* ------------------------------------------------------------------ units (the walker) */

static int unit_writes(const ncclzSchedule *s, const ncclzUnit *u) {
  return u->recv >= 0 && u->rlen && (s->ops[u->recv].action & (NCCLZ_ACT_REDUCE | NCCLZ_ACT_STORE));
}

/* Unit k's writes follow unit w's: w is on k's `after` list or on that of one it follows. */
static int follows(const ncclzUnitList *ul, size_t k, size_t w) {
  const ncclzUnit *u = &ul->units[k];
  for (uint32_t i = 0; i < u->nafter; i++) {
    size_t v = (size_t)ul->after[u->after_at + i];
    if (v == w || (v > w && follows(ul, v, w))) return 1;
  }
  return 0;
}

/* One rank's units: every transfer op in exactly one unit, a send first and its receive of the
 * same tag right after it, kept slots in order, the largest range, and `after`: following it from
 * a writing unit reaches every earlier one that writes an overlapping range. */
static int units_wrong(const ncclzSchedule *s, size_t count, const ncclzUnitList *ul) {
  int bad = 0;
  uint32_t keep = 0;
  size_t ops = 0, big = 0;
  for (size_t i = 0; i < s->nops; i++) {
    size_t off, len;
    ncclzScheduleOpRange(s, count, &s->ops[i], &off, &len);
    big = len > big ? len : big;
    ops += s->ops[i].kind != NCCLZ_OP_COPY;
    bad += (s->ops[i].kind == NCCLZ_OP_COPY) != (ul->unit_of_op[i] < 0);
  }
  bad += ul->largest != big;
  for (size_t k = 0; k < ul->nunits; k++) {
    const ncclzUnit *u = &ul->units[k];
    ops -= (u->send >= 0) + (u->recv >= 0);
    if (u->send >= 0) bad += s->ops[u->send].kind != NCCLZ_OP_SEND || ncclzOpTag(s, &s->ops[u->send]) != u->tag;
    if (u->recv >= 0) bad += s->ops[u->recv].kind != NCCLZ_OP_RECV || ncclzOpTag(s, &s->ops[u->recv]) != u->tag;
    bad += u->send >= 0 && u->recv >= 0 && u->recv != u->send + 1;
    if (u->recv >= 0 && (s->ops[u->recv].action & NCCLZ_ACT_KEEP)) bad += u->keep != (int32_t)keep++;
    if (!unit_writes(s, u)) continue;
    for (size_t w = 0; w < k; w++) {
      const ncclzUnit *p = &ul->units[w];
      int must = unit_writes(s, p) && p->roff < u->roff + u->rlen && u->roff < p->roff + p->rlen;
      bad += must && !follows(ul, k, w);
    }
  }
  return bad + (ops != 0) + (ul->nkeep != keep);
}

/* The NCCL pipeline (exec/nccl_pipeline.cu) as a model, on every rank at once. The host issues
 * units in order: a unit's encode needs its bank's last encoded send done and every receive up
 * to its dep; its receive needs the peer's header (the peer's host has issued the send). Unit u
 * goes to lane tag % lanes, whose groups run one at a time in issue order, a receive once its bank
 * is free (the decode of its last user done); a group's send and
 * receive complete only when the peer's lane runs the matching group (rendezvous, as NCCL's
 * point-to-point), and NCCL pairs a lane's messages in order, so a peer running a receive of
 * another tag from this rank is a mismatch. A unit is done when its group is and its `after` is. */
typedef struct {
  ncclzSchedule s;
  ncclzUnitList ul;
  size_t host;            /* next unit the host issues */
  int sent;               /* the host unit's header went out */
  uint8_t *issued, *sdone, *rdone, *done;
  size_t head[NCCLZ_MAX_COMM_LANES]; /* per lane: the oldest issued unit not done with its group */
} model_rank;

static int snd_of(const model_rank *m, size_t u) { return m->ul.units[u].send >= 0 && m->ul.units[u].slen; }
static int rcv_of(const model_rank *m, size_t u) { return m->ul.units[u].recv >= 0 && m->ul.units[u].rlen; }
static int unit_done(const model_rank *m, size_t u) {
  const ncclzUnit *x = &m->ul.units[u];
  if (!m->done[u]) return 0;
  for (uint32_t i = 0; i < x->nafter; i++)
    if (!unit_done(m, (size_t)m->ul.after[x->after_at + i])) return 0;
  return 1;
}

/* Every receive of units up to u is done (the encode's wait for its dep). */
static int recvs_done_upto(const model_rank *m, size_t u) {
  for (size_t v = 0; v <= u; v++)
    if (rcv_of(m, v) && !unit_done(m, v)) return 0;
  return 1;
}

/* The host's next step on rank r; 1 if it moved. */
static int host_step(model_rank *M, int r, int banks) {
  model_rank *m = &M[r];
  size_t u = m->host;
  if (u >= m->ul.nunits) return 0;
  const ncclzUnit *un = &m->ul.units[u];
  if (!m->sent && snd_of(m, u)) {
    const ncclzOp *o = &m->s.ops[un->send];
    if (o->action & NCCLZ_ACT_ENCODE) {
      for (size_t v = u; v-- > 0;) /* the bank's previous encoded send */
        if (v % (size_t)banks == u % (size_t)banks && snd_of(m, v) && (m->s.ops[m->ul.units[v].send].action & NCCLZ_ACT_ENCODE)) {
          if (!m->done[v]) return 0;
          break;
        }
      if (o->dep >= 0 && !recvs_done_upto(m, (size_t)m->ul.unit_of_op[o->dep])) return 0;
    }
  }
  m->sent = 1;
  if (rcv_of(m, u)) { /* the header: the peer's host issued the matching send */
    const model_rank *p = &M[m->s.ops[un->recv].peer];
    int ready = 0;
    for (size_t v = 0; v < p->ul.nunits && !ready; v++)
      ready = snd_of(p, v) && p->s.ops[p->ul.units[v].send].peer == r && p->ul.units[v].tag == un->tag &&
              (v < p->host || (v == p->host && p->sent));
    if (!ready) return 0;
  }
  m->issued[u] = 1;
  m->host++;
  m->sent = 0;
  return 1;
}

/* The unit lane l of rank r runs now (-1: none issued), past the groups that are done. */
static long lane_head(model_rank *m, int l, int lanes) {
  while (m->head[l] < m->ul.nunits && (m->ul.units[m->head[l]].tag % (uint64_t)lanes != (uint64_t)l ||
                                       (m->done[m->head[l]] && m->issued[m->head[l]])))
    m->head[l]++;
  size_t u = m->head[l];
  return u < m->ul.nunits && m->issued[u] ? (long)u : -1;
}

/* Unit u's receive bank is free: the decode of its last user (a receive not kept) is done. */
static int bank_free(const model_rank *m, size_t u, int banks) {
  for (size_t v = u; v-- > 0;)
    if (v % (size_t)banks == u % (size_t)banks && rcv_of(m, v) && m->ul.units[v].keep < 0) return unit_done(m, v);
  return 1;
}

/* Matches rank r's running group on lane l with its peers'; 1 if anything moved. */
static int lane_step(model_rank *M, int r, int l, int lanes, int banks, int *mismatch) {
  model_rank *m = &M[r];
  long u = lane_head(m, l, lanes);
  if (u < 0) return 0;
  const ncclzUnit *un = &m->ul.units[u];
  int moved = 0;
  if (rcv_of(m, (size_t)u) && un->keep < 0 && !bank_free(m, (size_t)u, banks)) return 0;
  if (snd_of(m, (size_t)u) && (m->s.ops[un->send].action & NCCLZ_ACT_FORWARD) &&
      !unit_done(m, (size_t)m->ul.unit_of_op[m->s.ops[un->send].dep]))
    return 0; /* the lane waits for the kept frame */
  if (snd_of(m, (size_t)u) && !m->sdone[u]) {
    int pr = m->s.ops[un->send].peer;
    model_rank *p = &M[pr];
    long v = lane_head(p, l, lanes);
    if (v >= 0 && rcv_of(p, (size_t)v) && p->s.ops[p->ul.units[v].recv].peer == r && !p->rdone[v]) {
      *mismatch += p->ul.units[v].tag != un->tag;
      m->sdone[u] = p->rdone[v] = 1;
      moved = 1;
    }
  }
  if (!snd_of(m, (size_t)u)) m->sdone[u] = 1;
  if (!rcv_of(m, (size_t)u)) m->rdone[u] = 1;
  if (m->sdone[u] && m->rdone[u] && !m->done[u]) m->done[u] = 1, moved = 1;
  return moved;
}

static void pipeline_model(const ncclzScheduleSpec *sp, size_t count, int lanes) {
  model_rank M[MAXR];
  int n = sp->nranks, banks = lanes < 2 ? 2 : lanes, mismatch = 0, bad_units = 0;
  memset(M, 0, sizeof M);
  for (int r = 0; r < n; r++) {
    model_rank *m = &M[r];
    if (ncclzScheduleBuildSpec(sp, r, &m->s) || ncclzScheduleUnits(&m->s, count, &m->ul)) {
      CHECK(0, "build units");
      return;
    }
    bad_units += units_wrong(&m->s, count, &m->ul);
    size_t nu = m->ul.nunits + 1;
    m->issued = calloc(nu, 1), m->sdone = calloc(nu, 1), m->rdone = calloc(nu, 1), m->done = calloc(nu, 1);
  }
  for (int progress = 1; progress;) {
    progress = 0;
    for (int r = 0; r < n; r++) {
      while (host_step(M, r, banks)) progress = 1;
      for (int l = 0; l < lanes; l++) progress |= lane_step(M, r, l, lanes, banks, &mismatch);
    }
  }
  int stuck = 0;
  for (int r = 0; r < n; r++) {
    for (size_t u = 0; u < M[r].ul.nunits; u++) stuck += !M[r].done[u];
    free(M[r].issued), free(M[r].sdone), free(M[r].rdone), free(M[r].done);
    ncclzUnitListFree(&M[r].ul);
    ncclzScheduleFree(&M[r].s);
  }
  CHECK(!stuck && !mismatch && !bad_units, "pipeline %s/%s n=%d g=%d chunks=%u channels=%u count=%zu lanes=%d: %d units "
        "stuck, %d messages paired with another tag, %d wrong units", ncclzCollectiveName(sp->coll),
        ncclzAlgorithmName(sp->algo), n, sp->ranks_per_node, sp->nchunks, sp->nchannels, count, lanes, stuck, mismatch,
        bad_units);
}

/* Every schedule runs through the NCCL pipeline's model with 1, 2 and 4 lanes, in one and six
 * chunks (more than the banks), counts that leave ranges empty and ones that do not. */
static int models;
static void test_pipeline(void) {
  const size_t counts[] = {2, 50};
  for (int n = 1; n <= MAXR; n++)
    for (int g = 1; g <= n; g++) {
      if (n % g) continue;
      for (int c = 0; c < NCCLZ_COLL_COUNT; c++)
        for (int a = NCCLZ_ALGO_RING; a < NCCLZ_ALGO_COUNT; a++)
          for (uint32_t ch = 1; ch <= 6; ch += 5)
            for (uint32_t chans = 1; chans <= (a == NCCLZ_ALGO_RING || a == NCCLZ_ALGO_TREE ? 2u : 1u); chans++)
              for (int inter = NCCLZ_ALGO_RING; inter <= NCCLZ_ALGO_RHD; inter += NCCLZ_ALGO_RHD - NCCLZ_ALGO_RING) {
                ncclzScheduleSpec sp = {(ncclzCollective)c, (ncclzAlgorithm)a, n, g, n > 2 ? 2 : 0, ch, chans,
                                        (ncclzAlgorithm)inter};
                char why[160];
                if (ncclzScheduleCheck(&sp, why, sizeof why) || (inter == NCCLZ_ALGO_RING && a != NCCLZ_ALGO_HIER))
                  continue;
                for (size_t k = 0; k < 2; k++)
                  for (int lanes = 1; lanes <= 4; lanes *= 2) {
                    pipeline_model(&sp, counts[k], lanes);
                    models++;
                  }
              }
    }
}

/* The walker on a known list: ring allreduce on 3 ranks, 2 chunks, rank 0: every unit a send and
 * the receive of its (step, chunk); the reduces touch disjoint ranges (they run at once), and the
 * last gather step stores each chunk after the reduce of that chunk. */
static void test_units_shape(void) {
  ncclzScheduleSpec sp = {NCCLZ_ALLREDUCE, NCCLZ_ALGO_RING, 3, 0, 0, 2, 1, NCCLZ_ALGO_RHD};
  ncclzSchedule s;
  ncclzUnitList ul;
  CHECK(ncclzScheduleBuildSpec(&sp, 0, &s) == 0 && ncclzScheduleUnits(&s, 12, &ul) == 0, "build");
  int ok = ul.nunits == 8 && ul.nkeep == 2 && ul.largest == 2;
  for (size_t u = 0; ok && u < ul.nunits; u++) {
    const ncclzUnit *x = &ul.units[u];
    int32_t after = u >= 6 ? (int32_t)u - 6 : -1;
    ok = x->send >= 0 && x->recv == x->send + 1 && x->tag == u && x->slen == 2 && x->rlen == 2 &&
         x->nafter == (after >= 0) && (after < 0 || ul.after[x->after_at] == after) &&
         x->keep == (u == 4 || u == 5 ? (int32_t)u - 4 : -1);
  }
  CHECK(ok, "ring units: %zu units, %u kept", ul.nunits, ul.nkeep);
  ncclzUnitListFree(&ul);
  ncclzScheduleFree(&s);
}

/* The ring walker's per-step actions: reduce-scatter sends sum st+1 ranks; all-gather encodes at its first step, forwards after, keeps all but the last receive. */
static void test_ring_steps(void) {
  ncclzScheduleSpec sp = {NCCLZ_ALLREDUCE, NCCLZ_ALGO_RING, 4, 0, 0, 1, 1, NCCLZ_ALGO_RHD};
  ncclzSchedule s;
  CHECK(ncclzScheduleBuildSpec(&sp, 1, &s) == 0 && s.nops == 12, "ring allreduce n=4: %zu ops", s.nops);
  int bad = 0;
  for (size_t i = 0; i + 1 < s.nops && s.nops == 12; i += 2) {
    const ncclzOp *snd = &s.ops[i], *rcv = &s.ops[i + 1];
    uint32_t st = snd->step;
    if (st < 3) {
      bad += snd->action != NCCLZ_ACT_ENCODE || snd->nsum != st + 1 || snd->phase != NCCLZ_PHASE_REDUCE;
      bad += rcv->action != NCCLZ_ACT_REDUCE || rcv->nsum != st + 1; /* allreduce works in its output */
    } else {
      bad += snd->action != (st == 3 ? NCCLZ_ACT_ENCODE : NCCLZ_ACT_FORWARD) || snd->nsum != 4 || snd->phase != NCCLZ_PHASE_GATHER;
      bad += rcv->action != (NCCLZ_ACT_STORE | (st < 5 ? NCCLZ_ACT_KEEP : 0)) || rcv->nsum != 4;
    }
  }
  CHECK(bad == 0, "ring steps: %d ops with the wrong action or sum", bad);
  ncclzScheduleFree(&s);
}

int main(void) {
  test_shape();
  test_step_counts();
  test_channel_rails();
  test_refusals();
  test_units_shape();
  test_ring_steps();
  run_all();
  test_banked();
  test_pipeline();
  printf("pipeline models: %d\n", models);
  printf("replays: ring %d, tree %d, rhd %d, hier %d\n", replays[1], replays[2], replays[3], replays[4]);
  CHECK(replays[NCCLZ_ALGO_TREE] > 100 && replays[NCCLZ_ALGO_RHD] > 100 && replays[NCCLZ_ALGO_HIER] > 100, "every algorithm ran");
  return tu_finish("test_schedule");
}
