/* Schedules: every send has a matching receive, nothing deadlocks, and replaying the lists with
 * real data (int64 sums, frames as copies) gives each collective's exact result, for 1..7 ranks,
 * 1..3 chunks and counts that do not divide. */
#include "ncclz/schedule.h"
#include "testutil.h"

#include <stdlib.h>
#include <string.h>

#define MAXR 8

/* One in-flight message: (src, dst, step, block, chunk) and its values. */
typedef struct {
  int src, dst;
  uint32_t step, block, chunk;
  int64_t *vals;
  size_t len;
  int taken;
} message;

typedef struct {
  ncclzSchedule s;
  int64_t *in, *work, *out; /* work: the reduce buffer (the output for allreduce) */
  int64_t **kept;           /* frame kept by recv op i (KEEP), for a later FORWARD */
  size_t *kept_len;
  size_t next;              /* next op to run (ops run in list order, as the executor issues them) */
} rank_state;

static message msgs[200000];
static size_t nmsgs;

static size_t in_count(ncclzCollective c, size_t count, int n) {
  return c == NCCLZ_REDUCESCATTER || c == NCCLZ_ALLTOALL ? count * n : count;
}
static size_t out_count(ncclzCollective c, size_t count, int n) {
  return c == NCCLZ_ALLGATHER || c == NCCLZ_ALLTOALL ? count * n : count;
}

static int64_t value(int rank, size_t i) { return (int64_t)(rank + 1) * 1000003 + (int64_t)i * 7 - 50; }

/* Offset of an op's range in the input (ranges are in block coordinates of the collective). */
static size_t in_offset(const rank_state *r, size_t off, size_t count) {
  if (r->s.coll == NCCLZ_ALLGATHER) return off - (size_t)r->s.rank * count;
  return off;
}
static size_t out_offset(const rank_state *r, size_t off, size_t count) {
  if (r->s.coll == NCCLZ_REDUCESCATTER) return off - (size_t)r->s.rank * count;
  return off;
}

static message *find_msg(int src, int dst, const ncclzOp *o) {
  for (size_t i = 0; i < nmsgs; i++) {
    message *m = &msgs[i];
    if (!m->taken && m->src == src && m->dst == dst && m->step == o->step && m->chunk == o->chunk)
      return m;
  }
  return NULL;
}

/* Runs op r->next if it can; returns 1 if it ran. */
static int run_op(rank_state *r, size_t count) {
  const ncclzOp *o = &r->s.ops[r->next];
  size_t off, len;
  ncclzScheduleRange(&r->s, count, o->block, o->chunk, &off, &len);
  if (o->kind == NCCLZ_OP_COPY) {
    const int64_t *src = r->s.coll == NCCLZ_REDUCESCATTER || r->s.coll == NCCLZ_ALLTOALL ? r->in + off : r->in + in_offset(r, off, count);
    memcpy(r->out + out_offset(r, off, count), src, len * sizeof(int64_t));
  } else if (o->kind == NCCLZ_OP_SEND) {
    message *m = &msgs[nmsgs++];
    *m = (message){r->s.rank, o->peer, o->step, o->block, o->chunk, malloc((len ? len : 1) * 8), len, 0};
    if (o->action & NCCLZ_ACT_FORWARD) {
      CHECK(o->dep >= 0 && r->kept[o->dep] && r->kept_len[o->dep] == len, "forward without a kept frame (op %zu)", r->next);
      if (o->dep >= 0 && r->kept[o->dep]) memcpy(m->vals, r->kept[o->dep], len * 8);
    } else {
      const int64_t *src = r->s.coll == NCCLZ_ALLREDUCE || r->s.coll == NCCLZ_REDUCESCATTER ? r->work + off
                           : r->s.coll == NCCLZ_BROADCAST ? r->in + off : r->in + in_offset(r, off, count);
      memcpy(m->vals, src, len * 8);
    }
  } else {
    message *m = find_msg(o->peer, r->s.rank, o);
    if (!m) return 0;
    CHECK(m->len == len, "recv length %zu != sent %zu", len, m->len);
    m->taken = 1;
    if (o->action & NCCLZ_ACT_REDUCE)
      for (size_t i = 0; i < len; i++) r->work[off + i] += m->vals[i];
    if (o->action & NCCLZ_ACT_STORE) {
      const int64_t *src = o->action & NCCLZ_ACT_REDUCE ? r->work + off : m->vals;
      memmove(r->out + out_offset(r, off, count), src, len * 8);
    }
    if (o->action & NCCLZ_ACT_KEEP) {
      r->kept[r->next] = malloc((len ? len : 1) * 8);
      memcpy(r->kept[r->next], m->vals, len * 8);
      r->kept_len[r->next] = len;
    }
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

static void replay(ncclzCollective c, int n, uint32_t chunks, size_t count, int root) {
  rank_state R[MAXR];
  nmsgs = 0;
  for (int r = 0; r < n; r++) {
    CHECK(ncclzScheduleBuild(c, n, r, root, chunks, &R[r].s) == 0, "build %s n=%d", ncclzCollectiveName(c), n);
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
  /* Round robin: every rank runs its ops in order; a receive waits for its message. */
  for (int progress = 1; progress;) {
    progress = 0;
    for (int r = 0; r < n; r++)
      while (R[r].next < R[r].s.nops && run_op(&R[r], count)) progress = 1;
  }
  int wrong = 0;
  for (int r = 0; r < n; r++) {
    CHECK(R[r].next == R[r].s.nops, "%s n=%d chunks=%u: rank %d stuck at op %zu of %zu", ncclzCollectiveName(c), n,
          chunks, r, R[r].next, R[r].s.nops);
    for (size_t i = 0; i < out_count(c, count, n); i++) wrong += R[r].out[i] != expected(c, n, r, root, count, i);
  }
  CHECK(wrong == 0, "%s n=%d chunks=%u count=%zu root=%d: %d wrong elements", ncclzCollectiveName(c), n, chunks,
        count, root, wrong);
  for (size_t i = 0; i < nmsgs; i++) {
    CHECK(msgs[i].taken, "%s n=%d: message %d->%d step %u never received", ncclzCollectiveName(c), n, msgs[i].src,
          msgs[i].dst, msgs[i].step);
    free(msgs[i].vals);
  }
  for (int r = 0; r < n; r++) {
    for (size_t i = 0; i < R[r].s.nops; i++) free(R[r].kept[i]);
    free(R[r].kept);
    free(R[r].kept_len);
    if (c != NCCLZ_ALLREDUCE) free(R[r].out);
    free(R[r].work);
    free(R[r].in);
    ncclzScheduleFree(&R[r].s);
  }
}

/* Steps and message counts of ring allreduce: 2(n-1) steps, 2(n-1)*chunks sends per rank. */
static void test_shape(void) {
  ncclzSchedule s;
  CHECK(ncclzScheduleBuild(NCCLZ_ALLREDUCE, 5, 2, 0, 3, &s) == 0, "build");
  size_t sends = 0;
  for (size_t i = 0; i < s.nops; i++) sends += s.ops[i].kind == NCCLZ_OP_SEND;
  CHECK(s.nsteps == 8 && sends == 24, "allreduce n=5: %u steps, %zu sends", s.nsteps, sends);
  ncclzScheduleFree(&s);
  CHECK(ncclzScheduleBuild(NCCLZ_ALLREDUCE, 0, 0, 0, 1, &s) == -1, "n=0 rejected");
  CHECK(ncclzScheduleBuild(NCCLZ_ALLREDUCE, 4, 4, 0, 1, &s) == -1, "rank out of range rejected");
  CHECK(ncclzScheduleBuild(NCCLZ_ALLREDUCE, 4, 1, 0, 0, &s) == -1, "0 chunks rejected");
  CHECK(ncclzBusBwFactor(NCCLZ_ALLREDUCE, 2) == 1.0 && ncclzBusBwFactor(NCCLZ_ALLGATHER, 4) == 0.75 &&
            ncclzBusBwFactor(NCCLZ_BROADCAST, 8) == 1.0,
        "busbw factors");
  CHECK(ncclzCollectiveFromName("alltoall") == NCCLZ_ALLTOALL && ncclzCollectiveFromName("x") == -1, "names");
}

int main(void) {
  test_shape();
  const size_t counts[] = {0, 1, 5, 13, 100};
  for (int c = 0; c < NCCLZ_COLL_COUNT; c++)
    for (int n = 1; n <= 7; n++)
      for (uint32_t ch = 1; ch <= 3; ch++)
        for (size_t k = 0; k < sizeof counts / sizeof counts[0]; k++) replay((ncclzCollective)c, n, ch, counts[k], n > 2 ? 2 : 0);
  return tu_finish("test_schedule");
}
