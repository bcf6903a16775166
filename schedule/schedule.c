/* The collectives as ordered operation lists (ring reduce-scatter/all-gather, pairwise
 * all-to-all, pipelined ring broadcast). One description for the executor and the simulator. */
#include "ncclz/schedule.h"

#include <errno.h>
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

static uint32_t mod(int64_t a, int n) { return (uint32_t)(((a % n) + n) % n); }

/* The list under construction; `find` looks ops up by (kind, step, block, chunk) for deps. */
typedef struct {
  ncclzSchedule *s;
  size_t cap;
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

/* Index of this rank's RECV of (block, chunk) at logical step `step`, or -1. */
static int32_t find_recv(const ncclzSchedule *s, uint32_t step, uint32_t block, uint32_t chunk) {
  for (size_t i = s->nops; i-- > 0;) {
    const ncclzOp *o = &s->ops[i];
    if (o->kind == NCCLZ_OP_RECV && o->step == step && o->block == block && o->chunk == chunk) return (int32_t)i;
  }
  return -1;
}

static ncclzOp make(uint8_t kind, uint8_t action, uint8_t phase, int peer, uint32_t step, uint32_t block,
                    uint32_t chunk, int32_t dep) {
  ncclzOp o = {kind, action, phase, peer, step, block, chunk, dep};
  return o;
}

/* Ring reduce-scatter over n-1 steps starting at logical step `first`: at step s rank r sends
 * block r+o-s and receives (and adds into) block r+o-s-1; it ends owning block r+o+1.
 * store_last: the last receive also stores the finished sum into the output (reduce-scatter,
 * whose output is not the working buffer). */
static int ring_reduce(builder *b, int o, uint32_t first, int store_last) {
  ncclzSchedule *s = b->s;
  int n = s->nranks, r = s->rank, next = (r + 1) % n, prev = (r + n - 1) % n;
  for (int st = 0; st < n - 1; st++)
    for (uint32_t c = 0; c < s->nchunks; c++) {
      uint32_t sb = mod(r + o - st, n), rb = mod(r + o - st - 1, n);
      int32_t dep = st ? find_recv(s, first + st - 1, sb, c) : -1;
      uint8_t recv_act = NCCLZ_ACT_REDUCE | (store_last && st == n - 2 ? NCCLZ_ACT_STORE : 0);
      if (push(b, make(NCCLZ_OP_SEND, NCCLZ_ACT_ENCODE, NCCLZ_PHASE_REDUCE, next, first + st, sb, c, dep)) ||
          push(b, make(NCCLZ_OP_RECV, recv_act, NCCLZ_PHASE_REDUCE, prev, first + st, rb, c, -1)))
        return -1;
    }
  return 0;
}

/* Ring all-gather: at step s rank r sends block r+o-s (encoded at s = 0, forwarded after) and
 * receives block r+o-s-1, keeping the frame when it forwards it at the next step.
 * first_dep_step >= 0: the block sent at s = 0 was received (reduced) at that logical step. */
static int ring_gather(builder *b, int o, uint32_t first, int64_t first_dep_step) {
  ncclzSchedule *s = b->s;
  int n = s->nranks, r = s->rank, next = (r + 1) % n, prev = (r + n - 1) % n;
  for (int st = 0; st < n - 1; st++)
    for (uint32_t c = 0; c < s->nchunks; c++) {
      uint32_t sb = mod(r + o - st, n), rb = mod(r + o - st - 1, n);
      int32_t dep = st ? find_recv(s, first + st - 1, sb, c)
                       : (first_dep_step >= 0 ? find_recv(s, (uint32_t)first_dep_step, sb, c) : -1);
      uint8_t send_act = st ? NCCLZ_ACT_FORWARD : NCCLZ_ACT_ENCODE;
      uint8_t recv_act = NCCLZ_ACT_STORE | (st < n - 2 ? NCCLZ_ACT_KEEP : 0);
      if (push(b, make(NCCLZ_OP_SEND, send_act, NCCLZ_PHASE_GATHER, next, first + st, sb, c, dep)) ||
          push(b, make(NCCLZ_OP_RECV, recv_act, NCCLZ_PHASE_GATHER, prev, first + st, rb, c, -1)))
        return -1;
    }
  return 0;
}

static int copy_own(builder *b, uint32_t block) {
  for (uint32_t c = 0; c < b->s->nchunks; c++)
    if (push(b, make(NCCLZ_OP_COPY, 0, NCCLZ_PHASE_EXCHANGE, -1, 0, block, c, -1))) return -1;
  return 0;
}

static int build_alltoall(builder *b) {
  ncclzSchedule *s = b->s;
  int n = s->nranks, r = s->rank;
  if (copy_own(b, (uint32_t)r)) return -1;
  for (int st = 1; st < n; st++)
    for (uint32_t c = 0; c < s->nchunks; c++) {
      uint32_t dst = mod(r + st, n), src = mod(r - st, n);
      if (push(b, make(NCCLZ_OP_SEND, NCCLZ_ACT_ENCODE, NCCLZ_PHASE_EXCHANGE, (int)dst, st - 1, dst, c, -1)) ||
          push(b, make(NCCLZ_OP_RECV, NCCLZ_ACT_STORE, NCCLZ_PHASE_EXCHANGE, (int)src, st - 1, src, c, -1)))
        return -1;
    }
  return 0;
}

/* Pipelined ring from the root: position p = r - root; chunk c moves one hop per step. */
static int build_broadcast(builder *b) {
  ncclzSchedule *s = b->s;
  int n = s->nranks, r = s->rank, p = (int)mod(r - s->root, n), next = (r + 1) % n, prev = (r + n - 1) % n;
  for (uint32_t c = 0; c < s->nchunks; c++) {
    int32_t dep = -1;
    if (p == 0 && push(b, make(NCCLZ_OP_COPY, 0, NCCLZ_PHASE_PIPELINE, -1, c, 0, c, -1))) return -1;
    if (p > 0) {
      uint8_t act = NCCLZ_ACT_STORE | (p < n - 1 ? NCCLZ_ACT_KEEP : 0);
      dep = (int32_t)s->nops;
      if (push(b, make(NCCLZ_OP_RECV, act, NCCLZ_PHASE_PIPELINE, prev, c + (uint32_t)p - 1, 0, c, -1))) return -1;
    }
    if (p < n - 1) {
      uint8_t act = p ? NCCLZ_ACT_FORWARD : NCCLZ_ACT_ENCODE;
      if (push(b, make(NCCLZ_OP_SEND, act, NCCLZ_PHASE_PIPELINE, next, c + (uint32_t)p, 0, c, dep))) return -1;
    }
  }
  return 0;
}

static int build_ops(builder *b) {
  ncclzSchedule *s = b->s;
  int n = s->nranks;
  switch (s->coll) {
  case NCCLZ_ALLREDUCE:
    if (n == 1) return copy_own(b, 0);
    /* Reduce-scatter leaves block r+1 complete on rank r; all-gather starts from it. */
    return ring_reduce(b, 0, 0, 0) || ring_gather(b, 1, (uint32_t)n - 1, n - 2);
  case NCCLZ_REDUCESCATTER:
    return n == 1 ? copy_own(b, 0) : ring_reduce(b, -1, 0, 1);
  case NCCLZ_ALLGATHER:
    return copy_own(b, (uint32_t)s->rank) || ring_gather(b, 0, 0, -1);
  case NCCLZ_ALLTOALL:
    return build_alltoall(b);
  case NCCLZ_BROADCAST:
    return build_broadcast(b);
  default:
    return -1;
  }
}

static uint32_t step_count(ncclzCollective c, int n, uint32_t nchunks) {
  switch (c) {
  case NCCLZ_ALLREDUCE: return n > 1 ? 2u * (uint32_t)(n - 1) : 1;
  case NCCLZ_BROADCAST: return nchunks + (uint32_t)(n > 1 ? n - 2 : 0);
  default: return n > 1 ? (uint32_t)(n - 1) : 1;
  }
}

int ncclzScheduleBuild(ncclzCollective coll, int nranks, int rank, int root, uint32_t nchunks, ncclzSchedule *out) {
  memset(out, 0, sizeof *out);
  if ((unsigned)coll >= NCCLZ_COLL_COUNT || nranks < 1 || rank < 0 || rank >= nranks || root < 0 ||
      root >= nranks || nchunks < 1) {
    errno = EINVAL;
    return -1;
  }
  out->coll = coll;
  out->nranks = nranks;
  out->rank = rank;
  out->root = root;
  out->nchunks = nchunks;
  out->nblocks = coll == NCCLZ_BROADCAST ? 1 : (uint32_t)nranks;
  out->nsteps = step_count(coll, nranks, nchunks);
  builder b = {out, 0};
  if (build_ops(&b)) {
    ncclzScheduleFree(out);
    errno = ENOMEM;
    return -1;
  }
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

void ncclzScheduleRange(const ncclzSchedule *s, size_t count, uint32_t block, uint32_t chunk, size_t *off,
                        size_t *len) {
  size_t boff, blen, coff;
  if (s->coll == NCCLZ_ALLREDUCE || s->coll == NCCLZ_BROADCAST) {
    split(count, s->nblocks, block, &boff, &blen);
  } else {
    boff = (size_t)block * count;
    blen = count;
  }
  split(blen, s->nchunks, chunk, &coff, len);
  *off = boff + coff;
}
