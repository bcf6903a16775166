/* The collectives as ordered operation lists: the ring (over channels), NCCL's tree AllReduce,
 * recursive halving-doubling and the two-level hierarchical schedule, plus the pairwise
 * all-to-all and the pipelined ring broadcast. One description for the executor and the
 * simulator. This file: the names, the check of a spec and the dispatch to its builder, the
 * element ranges of blocks and chunks, and the per-collective buffer table. The lists themselves
 * are built in algorithms.c from the stages of stages.c (each written over a group of ranks: a
 * ring's order, a node, a rail); walker.c cuts a list into the units every backend posts. */
#include "build.h"

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
  if (s->nranks == 1) return sched_copy_own(b, 0);
  if (s->coll == NCCLZ_ALLTOALL) return sched_build_alltoall(b);
  if (s->coll == NCCLZ_BROADCAST) return sched_build_broadcast(b, sp->nchunks);
  switch (s->algo) {
  case NCCLZ_ALGO_TREE: return sched_build_tree(b, sp->nchunks);
  case NCCLZ_ALGO_RHD: return sched_build_rhd(b);
  case NCCLZ_ALGO_HIER:
    return sched_build_hier(b, sp->hier_inter == NCCLZ_ALGO_RING ? NCCLZ_ALGO_RING : NCCLZ_ALGO_RHD);
  default: return sched_build_ring(b, sp->nchunks);
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
