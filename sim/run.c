/* Running one replay: check the inputs, choose the fidelity, lay the actors out, size the chunks,
 * then replay in a forked child (SimGrid keeps one engine per process and cannot be reset) that
 * sends its totals back through a pipe. */
#include "sim_internal.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static const char *const compress_names[NCCLZ_SIM_COMPRESS_COUNT] = {"off", "auto", "raw", "fixedlen", "huffman"};
static const char *const fidelity_names[3] = {"auto", "full", "reduced"};

const char *ncclzSimCompressName(ncclzSimCompress c) {
  return (unsigned)c < NCCLZ_SIM_COMPRESS_COUNT ? compress_names[c] : "?";
}
int ncclzSimCompressFromName(const char *name) {
  for (int i = 0; i < NCCLZ_SIM_COMPRESS_COUNT; i++)
    if (!strcmp(name, compress_names[i])) return i;
  return -1;
}
static const char *const hint_names[5] = {"auto", "per_hop", "nvlink", "shm", "net"};
const char *ncclzSimHintPolicyName(ncclzSimHintPolicy h) { return (unsigned)h < 5 ? hint_names[h] : "?"; }
int ncclzSimHintPolicyFromName(const char *name) {
  for (int i = 0; i < 5; i++)
    if (!strcmp(name, hint_names[i])) return i;
  return -1;
}

const char *ncclzSimFidelityName(ncclzSimFidelity f) { return (unsigned)f < 3 ? fidelity_names[f] : "?"; }
int ncclzSimFidelityFromName(const char *name) {
  for (int i = 0; i < 3; i++)
    if (!strcmp(name, fidelity_names[i])) return i;
  return -1;
}

void ncclzSimOptionsDefault(ncclzSimOptions *o) {
  memset(o, 0, sizeof *o);
  o->coll = NCCLZ_ALLREDUCE;
  o->bytes = 1u << 20;
  o->compress = NCCLZ_SIM_OFF;
  o->fidelity = NCCLZ_FID_AUTO;
  o->size_protocol = NCCLZ_SIZE_PIGGYBACK;
}

double ncclzSimAlgBw(uint64_t bytes, double time_us) { return time_us > 0 ? (double)bytes / (time_us * 1e3) : 0.0; }
double ncclzSimBusBw(ncclzCollective c, int nranks, uint64_t bytes, double time_us) {
  return ncclzSimAlgBw(bytes, time_us) * ncclzBusBwFactor(c, nranks);
}

uint64_t ncclzSimFramesSent(const ncclzSimResult *r) {
  uint64_t total = 0;
  for (int k = 0; k < NCCLZ_CODER_COUNT; k++) total += r->frames[k];
  return total;
}

double ncclzSimCoderShare(const ncclzSimResult *r, ncclzCoder c) {
  const uint64_t total = ncclzSimFramesSent(r);
  return total && (unsigned)c < NCCLZ_CODER_COUNT ? (double)r->frames[c] / (double)total : 0.0;
}

void ncclzSimCoderMix(const ncclzSimResult *r, const char *sep, char *buf, size_t cap) {
  size_t used = 0;
  snprintf(buf, cap, "-");
  for (int k = 0; k < NCCLZ_CODER_COUNT && used < cap; k++)
    if (r->frames[k])
      used += (size_t)snprintf(buf + used, cap - used, "%s%s:%.0f%%", used ? sep : "", ncclzCoderName((ncclzCoder)k),
                               100.0 * ncclzSimCoderShare(r, (ncclzCoder)k));
}

static int pow2(int x) { return x > 0 && (x & (x - 1)) == 0; }

/* The concrete schedule of a point: the algorithm (AUTO resolved as sim_choose_algorithm does)
 * and the ring's channels (default: the rails). */
void sim_resolve(const ncclzSimPlatform *p, const ncclzSimOptions *o, ncclzAlgorithm *algo, uint32_t *channels) {
  ncclzAlgorithm a = o->algorithm;
  if (a == NCCLZ_ALGO_AUTO || (unsigned)a >= NCCLZ_ALGO_COUNT) a = sim_auto_algorithm(p, o);
  if (o->coll == NCCLZ_ALLTOALL || o->coll == NCCLZ_BROADCAST) a = o->algorithm == NCCLZ_ALGO_AUTO ? NCCLZ_ALGO_RING : a;
  *algo = a;
  int chan = a == NCCLZ_ALGO_RING || (a == NCCLZ_ALGO_TREE && o->coll == NCCLZ_ALLREDUCE);
  *channels = !chan ? 1 : o->channels ? o->channels : (uint32_t)p->rails;
}

/* The channels sim_resolve gives the point, where its algorithm is not needed. */
static uint32_t resolved_channels(const ncclzSimPlatform *p, const ncclzSimOptions *o) {
  ncclzAlgorithm a;
  uint32_t ch;
  sim_resolve(p, o, &a, &ch);
  return ch;
}

void sim_spec(const ncclzSimPlatform *p, const ncclzSimOptions *o, uint32_t nchunks, ncclzScheduleSpec *sp) {
  memset(sp, 0, sizeof *sp);
  sp->coll = o->coll;
  sim_resolve(p, o, &sp->algo, &sp->nchannels);
  sp->nranks = p->nodes * p->gpus_per_node;
  sp->ranks_per_node = p->gpus_per_node;
  sp->root = o->root;
  sp->nchunks = nchunks;
  sp->hier_inter = o->hier_inter == NCCLZ_ALGO_AUTO ? NCCLZ_ALGO_RHD : o->hier_inter;
}

/* The reduced replay of folds against the full replay (docs/simulator.md, test_sim) */
#define SIM_FOLD_ACCURACY "within 5% of the full replay"

/* How a point may be replayed (classify): whether its schedule is the same on every rank up to a
 * relabeling, and if not, why not. */
typedef enum {
  SIM_SYMMETRIC, /* one node's actors (or two nodes') stand for all */
  SIM_SMALL,     /* at most 2 nodes: the full replay is as small (a reduced replay may be asked for) */
  SIM_FOLDS,     /* halving-doubling folds: smaller full replays of the fold, extrapolated (run_folded) */
  SIM_ASYMMETRIC /* the full replay only */
} sim_symmetry;

/* What auto takes for a point, and why (the reason is for display only). */
typedef struct {
  ncclzSimFidelity fidelity; /* auto's choice */
  sim_symmetry sym;
  int approximate;           /* the reduced replay is held to the full one within a tolerance, not 0.1% */
  const char *reason;        /* the asymmetry, or what is approximate; NULL when symmetric and exact */
} sim_class;

/* Which schedules are the same on every rank up to a relabeling (so that one node's actors, or
 * two nodes', stand for all): the ring (a rotation), halving-doubling on powers of two, the
 * hierarchical schedule whose inter-node stage is (the ring between nodes on any node count); and
 * only on a platform whose every hop of one class sees the same links and load. */
static sim_symmetry symmetry(const ncclzSimPlatform *p, const ncclzSimOptions *o, ncclzAlgorithm a,
                             const char **reason) {
  int n = p->nodes * p->gpus_per_node, rep[2];
  int units = a == NCCLZ_ALGO_HIER ? p->nodes : n; /* folds need cores of 2 and 4 at least */
  *reason = NULL;
  if (o->coll == NCCLZ_BROADCAST) *reason = "the broadcast ring has a root";
  else if (p->placement != NCCLZ_PLACE_CONTIGUOUS && o->coll != NCCLZ_ALLTOALL) /* Alltoall: approximate() */
    *reason = "a non-contiguous placement makes ring hops differ";
  else if (p->topology == NCCLZ_TOPO_FATTREE && p->nodes > p->nodes_per_leaf)
    *reason = "hops that cross fat-tree leaves differ from the others";
  else if (p->nodes <= 2 || n < 3) {
    *reason = "at most 2 nodes: the full replay is as small";
    return SIM_SMALL;
  } else if (a == NCCLZ_ALGO_TREE) *reason = "the tree's root, interior ranks and leaves differ";
  else if (a == NCCLZ_ALGO_RHD && !(pow2(n) && pow2(p->gpus_per_node))) {
    *reason = "halving-doubling folds the ranks beyond a power of two";
    return units >= 16 ? SIM_FOLDS : SIM_ASYMMETRIC;
  } else if (a == NCCLZ_ALGO_HIER && o->hier_inter != NCCLZ_ALGO_RING && !pow2(p->nodes)) {
    *reason = "hier's halving-doubling between nodes folds nodes";
    return units >= 16 ? SIM_FOLDS : SIM_ASYMMETRIC;
  } else if (a == NCCLZ_ALGO_HIER && o->coll != NCCLZ_ALLREDUCE && sim_hier_typical_nodes(p->nodes, p->gpus_per_node, rep))
    *reason = "hier's block permutation stays inside the node for one rank in 64 or more";
  return *reason ? SIM_ASYMMETRIC : SIM_SYMMETRIC;
}

/* Where the reduced replay is symmetric but not held to the full replay: hier's compressed
 * ReduceScatter/AllGather with the ring between nodes. The full replay's ring there can settle into
 * a slower period after its atypical ranks (sim_hier_typical_nodes) start early, which the two
 * typical nodes never do (docs/simulator.md). And Alltoall on a strided or random placement, as the
 * contiguous placement's (every link carries the same load; the staging order, which peers a step
 * reaches over NVLink, moves the time: plain with every transfer at once is exact, run_alltoall_scaled).
 * Taken only where the full replay is refused. */
static const char *approximate(const ncclzSimPlatform *p, const ncclzSimOptions *o, ncclzAlgorithm a) {
  if (a == NCCLZ_ALGO_HIER && o->hier_inter == NCCLZ_ALGO_RING && o->coll != NCCLZ_ALLREDUCE &&
      o->compress != NCCLZ_SIM_OFF)
    return "hier RS/AG, compressed ring between nodes";
  if (o->coll == NCCLZ_ALLTOALL && p->placement != NCCLZ_PLACE_CONTIGUOUS)
    return "alltoall on a non-contiguous placement, as the contiguous one";
  return NULL;
}

static int full_cap(const ncclzSimOptions *o) { return o->full_max_ranks ? o->full_max_ranks : 4096; }

/* 1: the two-node mirror (every schedule but the one-channel ring, which loops one node; Alltoall
 * too: every rank sends to every node, and the mirror's other node receives for all of them). */
static int mirrored(ncclzCollective c, ncclzAlgorithm a, uint32_t channels) {
  return c == NCCLZ_ALLTOALL || a != NCCLZ_ALGO_RING || channels > 1;
}

/* Auto's fidelity: the full replay up to full_max_ranks wherever the reduced one is not exact, the
 * reduced one where the schedule is symmetric, folds above full_max_ranks by run_folded (one replay,
 * single, of a fold is a full one). */
static sim_class classify(const ncclzSimPlatform *p, const ncclzSimOptions *o, int single) {
  ncclzAlgorithm a;
  uint32_t ch;
  sim_resolve(p, o, &a, &ch);
  sim_class c = {NCCLZ_FID_FULL, SIM_SYMMETRIC, 0, NULL};
  c.sym = symmetry(p, o, a, &c.reason);
  int big = p->nodes * p->gpus_per_node > full_cap(o);
  if (c.sym == SIM_SYMMETRIC && (c.reason = approximate(p, o, a)) != NULL) c.approximate = 1;
  if (c.sym == SIM_FOLDS) c.approximate = 1; /* within SIM_FOLD_ACCURACY */
  if ((c.sym == SIM_SYMMETRIC && (!c.approximate || big)) || (c.sym == SIM_FOLDS && big && !single))
    c.fidelity = NCCLZ_FID_REDUCED;
  return c;
}

/* Halving-doubling that folds (flat rhd on N ranks, or hier's between M nodes, N or M not a power
 * of two), replayed reduced (asked for, or auto's choice on more ranks than the full replay takes):
 * extrapolated from smaller full replays of the same fold (run_folded). */
static int replays_folded(const ncclzSimPlatform *p, const ncclzSimOptions *o) {
  sim_class c = classify(p, o, 0);
  return c.sym == SIM_FOLDS &&
         (o->fidelity == NCCLZ_FID_REDUCED || (o->fidelity == NCCLZ_FID_AUTO && c.fidelity == NCCLZ_FID_REDUCED));
}

/* Hier's GPUs run alike where no block permutation tells them apart (every local index's stages
 * mirror the others'): one actor a node plays them all (sim_job.collapse) where the platform allows
 * (sim_collapses). A fold's core splits its permutation per GPU (fold_core); the two-node mirror
 * collapses AllReduce only. */
static int collapsed(const ncclzSimPlatform *p, const ncclzSimOptions *o, ncclzAlgorithm a, int fold_core) {
  return a == NCCLZ_ALGO_HIER && sim_collapses(p) && (fold_core || o->coll == NCCLZ_ALLREDUCE);
}

/* The sentence that says why a class takes its fidelity (display only). */
static void class_why(const ncclzSimPlatform *p, const ncclzSimOptions *o, const sim_class *c, char *why, size_t cap) {
  int n = p->nodes * p->gpus_per_node;
  ncclzAlgorithm a;
  uint32_t ch;
  sim_resolve(p, o, &a, &ch);
  if (c->sym == SIM_FOLDS && c->fidelity == NCCLZ_FID_REDUCED)
    snprintf(why, cap, "reduced, approximate (%s): %s: smaller full replays of the fold, extrapolated",
             SIM_FOLD_ACCURACY, c->reason);
  else if (c->fidelity == NCCLZ_FID_FULL && c->sym == SIM_SYMMETRIC) /* symmetric, but only approximate */
    snprintf(why, cap, "full: the reduced replay is approximate (%s)", c->reason);
  else if (c->fidelity == NCCLZ_FID_FULL)
    snprintf(why, cap, "full: %s", c->reason);
  else if (mirrored(o->coll, a, ch))
    snprintf(why, cap, "reduced%s%s%s: symmetric %s, %d actors on two nodes stand for %d ranks%s",
             c->approximate ? ", approximate (" : "", c->approximate ? c->reason : "", c->approximate ? ")" : "",
             o->coll == NCCLZ_ALLTOALL ? "alltoall" : ncclzAlgorithmName(a),
             collapsed(p, o, a, 0) ? 2 : 2 * p->gpus_per_node, n,
             collapsed(p, o, a, 0) ? " (one a node: its GPUs run alike)" : "");
  else
    snprintf(why, cap, "reduced: symmetric ring, %d actors stand for %d ranks", p->gpus_per_node > 1 ? p->gpus_per_node : 2,
             n);
}

ncclzSimFidelity ncclzSimChooseFidelity(const ncclzSimPlatform *p, const ncclzSimOptions *o, char *why, size_t cap) {
  sim_class c = classify(p, o, 0);
  class_why(p, o, &c, why, cap);
  return c.fidelity;
}

static ncclzStatus check_inputs(const ncclzProfile *prof, const ncclzSimData *data, const ncclzSimPlatform *p,
                                const ncclzSimOptions *o) {
  ncclzStatus st = ncclzSimPlatformValidate(p);
  if (st != NCCLZ_OK) return st;
  if ((unsigned)o->coll >= NCCLZ_COLL_COUNT) return ncclzSetError(NCCLZ_ERR_ARG, "options.collective: unknown");
  if (o->bytes == 0) return ncclzSetError(NCCLZ_ERR_ARG, "options.bytes: must be > 0");
  if ((unsigned)o->compress >= NCCLZ_SIM_COMPRESS_COUNT) return ncclzSetError(NCCLZ_ERR_ARG, "options.compress: unknown");
  if (o->compress != NCCLZ_SIM_OFF && (!prof || !data))
    return ncclzSetError(NCCLZ_ERR_ARG, "options.compress: %s needs a profile and a data profile",
                         ncclzSimCompressName(o->compress));
  if (o->root < 0 || o->root >= p->nodes * p->gpus_per_node) return ncclzSetError(NCCLZ_ERR_ARG, "options.root: out of range");
  if (data && data->dtype_bytes == 0) return ncclzSetError(NCCLZ_ERR_ARG, "data.dtype_bytes: must be > 0");
  if ((unsigned)o->algorithm >= NCCLZ_ALGO_COUNT) return ncclzSetError(NCCLZ_ERR_ARG, "options.algorithm: unknown");
  ncclzScheduleSpec sp;
  char why[200];
  sim_spec(p, o, 1, &sp);
  if (ncclzScheduleCheck(&sp, why, sizeof why))
    return ncclzSetError(NCCLZ_ERR_ARG, "options.algorithm: %s", why);
  return NCCLZ_OK;
}

/* Chunks of a block as the executor cuts it: chunks of chunk_bytes (the frame size by default), at
 * least min_chunks (2 when compressing: piggy-backed headers ride one chunk ahead; the executor's
 * lane headers need 1), at most max_chunks (larger chunks then, each one frame). Plain NCCL
 * (compress off) sends a ring step or an exchange as one message: NCCL pipelines it inside the
 * transfer, paying its latency once per step, not once per 4 MiB; its tree pipelines in chunks, and
 * its Broadcast forwards each slice hop by hop, so a chain of P ranks fills in P - 1 slice times.
 * A compressed chain takes the executor's count (sim_chain_chunks). */
static uint32_t block_chunks(const ncclzProfile *prof, const ncclzSimData *data, const ncclzSimPlatform *p,
                             const ncclzSimOptions *o, ncclzAlgorithm a, double block) {
  int plain = o->compress == NCCLZ_SIM_OFF, slices = plain && o->coll == NCCLZ_BROADCAST;
  ncclzScheduleSpec sp;
  sim_spec(p, o, 1, &sp);
  if (!plain && ncclzScheduleIsChain(&sp)) return sim_chain_chunks(prof, data, p, o, block);
  uint64_t frame = ncclzProfileFrameBytes(prof);
  uint64_t chunk = o->chunk_bytes ? o->chunk_bytes : slices ? NCCLZ_NCCL_BCAST_SLICE_BYTES : frame;
  double minc = o->min_chunks ? o->min_chunks : plain ? 1u : 2u;
  double maxc = o->max_chunks ? o->max_chunks : slices ? 1e9 : NCCLZ_DEFAULT_MAX_CHUNKS;
  int one = plain && !o->chunk_bytes && a != NCCLZ_ALGO_TREE && !slices;
  double c = one ? 1 : ceil(block / (double)chunk);
  return (uint32_t)fmin(fmax(c, minc), maxc);
}

/* Block and chunk sizes of a job (block_chunks). */
static void size_job(sim_job *j, const ncclzProfile *prof, const ncclzSimOptions *o) {
  int n = j->nranks;
  ncclzAlgorithm a;
  uint32_t channels;
  sim_resolve(&j->lay.p, o, &a, &channels);
  j->elem_bytes = j->data ? j->data->dtype_bytes : 4;
  uint64_t elems = o->bytes / j->elem_bytes ? o->bytes / j->elem_bytes : 1;
  int whole = o->coll == NCCLZ_ALLREDUCE || o->coll == NCCLZ_BROADCAST;
  j->count = whole ? elems : (elems / (uint64_t)n ? elems / (uint64_t)n : 1);
  double block = (double)(whole ? elems / (o->coll == NCCLZ_BROADCAST ? 1 : (uint64_t)n) : j->count) * (double)j->elem_bytes;
  double all = (double)(whole ? elems : j->count * (uint64_t)n) * (double)j->elem_bytes;
  /* the range one op moves: a ring channel's block, the tree's half, the first halving's half,
   * a node part of the hierarchical schedule */
  if (a == NCCLZ_ALGO_RING) block /= channels;
  else if (a == NCCLZ_ALGO_TREE) block = all / 2 / channels;
  else if (a == NCCLZ_ALGO_RHD) block = all / 2;
  else if (a == NCCLZ_ALGO_HIER) block = all / j->lay.p.gpus_per_node;
  j->nchunks = block_chunks(prof, j->data, &j->lay.p, o, a, block);
  j->frame_bytes = ncclzProfileFrameBytes(prof);
}

/* The communicator's hint and the link REA plans for: the scenario's NIC or NVLink (the
 * executor's profile describes its own machine, the scenario the projected one). */
static sim_hop call_hop(const ncclzSimPlatform *p, const ncclzSimOptions *o) {
  int net = o->hint == NCCLZ_SIM_HINT_NET || (o->hint == NCCLZ_SIM_HINT_AUTO && p->nodes > 1) ||
            o->hint == NCCLZ_SIM_HINT_PER_HOP;
  sim_hop h = sim_hop_between(p, 0, net ? 1 : 0);
  if (o->hint == NCCLZ_SIM_HINT_SHM) h.hint = NCCLZ_HINT_SHM;
  return h;
}

static void set_hint(sim_job *j, const ncclzSimPlatform *p, const ncclzSimOptions *o) {
  /* tree, halving-doubling and hier plan each transfer for its own link: NVLink hops stay raw */
  j->per_hop = o->hint == NCCLZ_SIM_HINT_PER_HOP || j->spec.algo != NCCLZ_ALGO_RING;
  j->hop = call_hop(p, o);
}

/* A compressed call also quantizes, agrees on the step and dequantizes outside the pipeline (the
 * executor's interface; the profile's "interface", 0 when it has none): its time for `bytes`. */
static double iface_us(const ncclzProfile *prof, const ncclzSimPlatform *p, const ncclzSimOptions *o, double bytes) {
  if (o->compress == NCCLZ_SIM_OFF || !prof) return 0.0;
  return ncclzProfileInterfaceUs(prof, call_hop(p, o).hint, bytes);
}

static int make_layout(sim_job *j, const ncclzSimPlatform *p, int reduced) {
  j->lay.p = *p;
  if (reduced) j->lay.p.placement = NCCLZ_PLACE_CONTIGUOUS; /* Alltoall's other placements: approximate() */
  if (reduced && j->mirror) { /* two nodes: every inter-node partner is played by the other one */
    j->lay.p.nodes = 2;
    j->lay.p.topology = NCCLZ_TOPO_NONBLOCKING;
  } else if (reduced) {
    /* One node whose last GPU sends to GPU 0 through the NICs: every ring hop class appears as
     * in the full ring, with the same links and load. One GPU per node: two nodes instead. */
    j->lay.p.nodes = p->gpus_per_node > 1 ? 1 : 2;
    j->lay.loop = p->gpus_per_node > 1;
    j->lay.p.topology = NCCLZ_TOPO_NONBLOCKING;
  }
  j->lay.collapse = j->collapse;
  j->lay.fold = j->fold;
  j->lay.nactors = j->lay.p.nodes * (j->collapse ? 1 : j->lay.p.gpus_per_node);
  j->lay.node_of = malloc((size_t)j->lay.nactors * sizeof(int));
  j->lay.gpu_of = malloc((size_t)j->lay.nactors * sizeof(int));
  if (!j->lay.node_of || !j->lay.gpu_of) return -1;
  for (int a = 0; j->collapse && a < j->lay.nactors; a++) { /* actor v on node v's GPU 0 */
    j->lay.node_of[a] = a;
    j->lay.gpu_of[a] = 0;
  }
  if (j->collapse) return 0;
  return ncclzSimPlace(&j->lay.p, j->lay.node_of, j->lay.gpu_of) == NCCLZ_OK ? 0 : -1;
}

/* What the child sends back. */
typedef struct {
  int ok;
  int stuck;           /* actors that never reached the end of their op list (a deadlock) */
  double end_s;
  uint64_t frames[NCCLZ_CODER_COUNT];
  double wire_bytes, raw_bytes;
} child_report;

static void child_main(const sim_job *j, int fd) {
  child_report r;
  memset(&r, 0, sizeof r);
  int na = j->lay.nactors * sim_channels(j);
  sim_actor_stats *st = calloc((size_t)na, sizeof *st);
  if (st && sim_replay_run(j, st) == 0) {
    r.ok = 1;
    for (int a = 0; a < na; a++) {
      r.stuck += !st[a].finished;
      if (st[a].end_s > r.end_s) r.end_s = st[a].end_s;
      for (int c = 0; c < NCCLZ_CODER_COUNT; c++) r.frames[c] += st[a].frames[c];
      r.wire_bytes += st[a].wire_bytes;
      r.raw_bytes += st[a].raw_bytes;
    }
  }
  ssize_t w = write(fd, &r, sizeof r);
  _exit(w == (ssize_t)sizeof r ? 0 : 3);
}

/* A child with a pipe to its parent: 0 in the child (fds[1] its end), the child's pid in the parent
 * (fds[0] its end), -1 with the error set. */
static pid_t pipe_fork(int fds[2]) {
  if (pipe(fds)) {
    ncclzSetError(NCCLZ_ERR_IO, "sim: pipe: %s", strerror(errno));
    return -1;
  }
  fflush(NULL);
  pid_t pid = fork();
  if (pid < 0) {
    ncclzSetError(NCCLZ_ERR_IO, "sim: fork: %s", strerror(errno));
    close(fds[0]);
    close(fds[1]);
    return -1;
  }
  close(fds[pid == 0 ? 0 : 1]);
  return pid;
}

/* Up to n bytes of the child's report from its pipe (closed after), then its exit status; returns
 * the bytes read. */
static size_t pipe_collect(pid_t pid, int fd, void *buf, size_t n, int *status) {
  size_t got = 0;
  while (got < n) {
    ssize_t k = read(fd, (char *)buf + got, n - got);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) break;
    got += (size_t)k;
  }
  close(fd);
  *status = 0;
  while (waitpid(pid, status, 0) < 0 && errno == EINTR) {}
  return got;
}

static ncclzStatus run_forked(const sim_job *j, child_report *r) {
  int fds[2];
  pid_t pid = pipe_fork(fds);
  if (pid < 0) return NCCLZ_ERR_IO;
  if (pid == 0) child_main(j, fds[1]);
  int status;
  size_t got = pipe_collect(pid, fds[0], r, sizeof *r, &status);
  if (got != sizeof *r || !r->ok) {
    if (WIFSIGNALED(status))
      return ncclzSetError(NCCLZ_ERR_IO, "sim: the replay died with signal %d", WTERMSIG(status));
    return ncclzSetError(NCCLZ_ERR_IO, "sim: the replay failed (exit %d)", WEXITSTATUS(status));
  }
  if (r->stuck) /* SimGrid ends the run when no actor can move: a time from it would be wrong */
    return ncclzSetError(NCCLZ_ERR_IO, "sim: the replay deadlocked (%d of %d actors stopped before the end of their schedule)",
                         r->stuck, j->lay.nactors);
  return NCCLZ_OK;
}

/* The executor's auto decides once per call from the first chunk of one rank's codes (k = 1),
 * and when REA plans RAW there, or the call-level check finds the gain smaller than the call's
 * interface and host time (ncclzReaCallWorthIt), it runs the plain NCCL collective
 * (exec/nccl_iface.cu, decide); otherwise it encodes every frame of the call with the planned
 * coder, partial sums included. plan_call replays that decision: 1 when the call runs as plain
 * NCCL, else 0 with the coder in j->call_coder (-1 where REA plans each frame: not auto, or
 * per-hop links). */
static int plan_call(sim_job *j) {
  j->call_coder = -1;
  if (j->opt->compress != NCCLZ_SIM_AUTO || j->per_hop) return 0;
  size_t off, len;
  ncclzSchedule s;
  if (ncclzScheduleBuildSpec(&j->spec, 0, &s) != 0) return 0;
  ncclzScheduleRange(&s, j->count, 0, 0, &off, &len);
  double units = 0; /* rank 0's sends: the executor's units that move a frame */
  for (size_t i = 0; i < s.nops; i++) units += s.ops[i].kind == NCCLZ_OP_SEND;
  ncclzScheduleFree(&s);
  ncclzReaDecision dec; /* the executor's decision: a frame of a step's pipeline of nchunks frames */
  double raw = (double)len * (double)j->elem_bytes;
  double pipeline = (double)j->nchunks; /* a step's frames, as the executor plans them */
  ncclzCoder c = sim_rea_decide(j, &j->hop, 1, raw, pipeline, &dec);
  ncclzReaCall call = {(double)j->opt->bytes, units, raw, j->data->data_class, pipeline};
  /* the vote subtracts the host's time per unit, which this replay charges only under the header
   * protocol (host_turn): without it, hand that time back so that the vote weighs what is replayed */
  if (j->opt->size_protocol != NCCLZ_SIZE_HEADER) dec.time_us[NCCLZ_CODER_RAW] += ncclzProfileUnitUs(j->prof, j->hop.hint);
  if (c == NCCLZ_CODER_RAW || !ncclzReaCallWorthIt(j->prof, j->hop.hint, &dec, c, &call)) return 1;
  j->call_coder = (int)c;
  return 0;
}

/* Hier's ring between nodes on more nodes than SIM_RAIL_FROM: the reduced replay keeps the first
 * h and the last SIM_RAIL_TAIL steps of each rail ring stage, for two h, and extrapolates in h
 * (run_rail_extrapolated). */
#define SIM_RAIL_FROM 128
#define SIM_RAIL_HEAD 32
#define SIM_RAIL_TAIL 8

/* A job's sizes, schedule, REA settings and hint (before plan_call); o must outlive it. */
static void job_init(sim_job *j, const ncclzProfile *prof, const ncclzSimData *data, const ncclzSimPlatform *p,
                     const ncclzSimOptions *o, int reduced, int rail_head) {
  memset(j, 0, sizeof *j);
  j->prof = prof;
  j->data = data;
  j->opt = o;
  j->nranks = p->nodes * p->gpus_per_node;
  j->reduced = reduced;
  j->rail_head = reduced ? rail_head : 0;
  j->rail_tail = SIM_RAIL_TAIL;
  j->lay.p = *p;
  size_job(j, prof, o);
  sim_spec(p, o, j->nchunks, &j->spec);
  j->mirror = reduced && mirrored(o->coll, j->spec.algo, j->spec.nchannels);
  j->rep_node[1] = 1;
  if (j->mirror && j->spec.algo == NCCLZ_ALGO_HIER && o->coll != NCCLZ_ALLREDUCE) /* nodes whose permutation is typical */
    sim_hier_typical_nodes(p->nodes, p->gpus_per_node, j->rep_node);
  if (prof)
    for (int h = 0; h < NCCLZ_HINT_COUNT; h++)
      ncclzReaConfigFromProfile(prof, (ncclzTransportHint)h, data ? data->data_class : NCCLZ_CLASS_DEFAULT, &j->cfg[h]);
  set_hint(j, p, o);
}

/* Auto's call decision as REA makes it for the whole call: 1 where it runs plain NCCL. *j: the
 * planned job (its coder and chunks); *plain: opt with compression off, the replay it then runs. */
static int auto_call_plain(const ncclzProfile *prof, const ncclzSimData *data, const ncclzSimPlatform *p,
                           const ncclzSimOptions *opt, sim_job *j, ncclzSimOptions *plain) {
  job_init(j, prof, data, p, opt, 0, 0);
  *plain = *opt;
  plain->compress = NCCLZ_SIM_OFF;
  return plan_call(j);
}

/* Frames and bytes of a replay that stands for f times as many transfers. */
static void scale_totals(ncclzSimResult *r, double f) {
  for (int k = 0; k < NCCLZ_CODER_COUNT; k++) r->frames[k] = (uint64_t)llround((double)r->frames[k] * f);
  r->wire_bytes *= f;
  r->raw_bytes *= f;
}

/* The plain tree's channels: channel q is channel 0 with every local GPU turned by q s, s = G/C
 * (schedule.c tree_place_of: its trees' heads at q s and q s + G/2, chains in the GPUs' order), on
 * chunks of channel 0's sizes. On a contiguous placement (a rank's local index is its GPU) whose
 * GPUs share the rails alike (G a multiple of the rails) the platform turns with them: NVLink
 * link i to i + s, NIC rail r to r + s. The full replay's channels then run alike, each one's
 * flows the turn of channel 0's, and max-min sharing gives each the same rate (without a codec
 * there is no FIFO stream whose order could tell them apart). So channel 0 alone, on a platform
 * whose links merge by orbit (sim_layout.fold), makes the same times with 1/C of the transfers:
 * each merged link carries channel 0's flows over its orbit, which are all channels' flows over
 * one link of it. Where a block does not split evenly, the first chunks take one element more
 * (channel 0's): the fold gives every channel those, so it is held to the full replay within this
 * share of a chunk's bytes. A coded tree (options.fold_coded) also shares each rank's codec streams
 * with its orbit (replay.c stream_owners): the same frames at the same times, but the streams' ties
 * between channels fall in another order, so it is approximate. Returns C, or 0 where the channels
 * differ. */
#define SIM_FOLD_CHUNK_SLACK 1e-4
#define SIM_WHY_STREAMS_BY_ORBIT "codec streams by orbit" /* in a folded coded tree's why */
static int channel_fold(const sim_job *j, const ncclzSimPlatform *p) {
  int g = p->gpus_per_node, c = (int)j->spec.nchannels;
  int coded = j->opt->compress != NCCLZ_SIM_OFF;
  if (j->spec.algo != NCCLZ_ALGO_TREE || (coded && !j->opt->fold_coded) || j->reduced || j->collapse || c < 2 ||
      j->nranks < 2 || p->placement != NCCLZ_PLACE_CONTIGUOUS || g % c || g % p->rails || (2 * c <= g && g % (2 * c)))
    return 0;
  ncclzSchedule s;
  if (ncclzScheduleBuildSpec(&j->spec, 0, &s) != 0) return 0;
  int alike = 1;
  for (uint32_t b = 0; b < 2; b++)
    for (uint32_t k = 0; k < j->spec.nchunks; k++)
      for (uint32_t q = 1; q < (uint32_t)c; q++) {
        size_t off, len, off0, len0;
        ncclzScheduleRange(&s, j->count, b, k, &off0, &len0);
        ncclzScheduleRange(&s, j->count, b, q * j->spec.nchunks + k, &off, &len);
        alike &= len <= len0 && (double)(len0 - len) <= SIM_FOLD_CHUNK_SLACK * (double)len0;
      }
  ncclzScheduleFree(&s);
  return alike ? c : 0;
}

/* One replay in a forked child; rail_head as job_init's; fold_core: the full replay of a fold's core
 * (run_folded), hier's with one actor a node where its GPUs run alike (sim_collapses). */
static ncclzStatus sim_run_once(const ncclzProfile *prof, const ncclzSimData *data, const ncclzSimPlatform *p,
                                const ncclzSimOptions *opt, int rail_head, int fold_core, ncclzSimResult *res) {
  memset(res, 0, sizeof *res);
  ncclzStatus st = check_inputs(prof, data, p, opt);
  if (st != NCCLZ_OK) return st;
  ncclzSimOptions o = *opt;
  if (!o.banks) o.banks = 2;
  if (!o.full_max_ranks) o.full_max_ranks = 4096;
  int n = p->nodes * p->gpus_per_node;
  char why[160];
  sim_class cls = classify(p, &o, 1);
  class_why(p, &o, &cls, why, sizeof why);
  ncclzSimFidelity f = o.fidelity == NCCLZ_FID_AUTO ? cls.fidelity : o.fidelity;
  if (f == NCCLZ_FID_REDUCED && cls.sym != SIM_SYMMETRIC && cls.sym != SIM_SMALL)
    return ncclzSetError(NCCLZ_ERR_ARG, "options.fidelity: reduced does not apply (%s)", cls.reason);
  if (f == NCCLZ_FID_REDUCED && (p->nodes < 2 || n < 3)) f = NCCLZ_FID_FULL;
  int approx = f == NCCLZ_FID_REDUCED && cls.approximate;
  if (o.fidelity != NCCLZ_FID_AUTO)
    snprintf(why, sizeof why, "%s: asked for%s", ncclzSimFidelityName(f), approx ? ", approximate" : "");
  if (f == NCCLZ_FID_FULL && n > o.full_max_ranks)
    return ncclzSetError(NCCLZ_ERR_ARG, "options: %d ranks need the full replay (%s), above full_max_ranks %d",
                         n, why + 6, o.full_max_ranks);

  sim_job j;
  job_init(&j, prof, data, p, &o, f == NCCLZ_FID_REDUCED, rail_head);
  j.collapse = (fold_core || j.mirror) && collapsed(p, &o, j.spec.algo, fold_core) ? p->gpus_per_node : 0;
  if (plan_call(&j)) { /* as the executor: every rank plans RAW, so the call is plain NCCL */
    o.compress = NCCLZ_SIM_OFF;
    size_job(&j, prof, &o);
    j.spec.nchunks = j.nchunks;
  }
  if (prof && o.size_protocol == NCCLZ_SIZE_HEADER && o.compress != NCCLZ_SIM_OFF)
    j.unit_us = ncclzProfileUnitUs(prof, j.hop.hint);
  j.fold = o.every_channel ? 0 : channel_fold(&j, p);
  double t0 = ncclzNowSeconds();
  child_report r;
  memset(&r, 0, sizeof r);
  if (make_layout(&j, p, j.reduced)) st = ncclzSetError(NCCLZ_ERR_NOMEM, "sim: out of memory");
  else if ((st = sim_check_budget(&j)) == NCCLZ_OK) st = run_forked(&j, &r);
  free(j.lay.node_of);
  free(j.lay.gpu_of);
  if (st != NCCLZ_OK) return st;
  res->time_us = r.end_s * 1e6 + iface_us(prof, p, &o, (double)o.bytes);
  res->fidelity = f;
  res->approximate = approx || (j.fold && o.compress != NCCLZ_SIM_OFF);
  res->actors = j.lay.nactors;
  res->nranks = n;
  res->nchunks = j.nchunks * j.spec.nchannels;
  res->algorithm = j.spec.algo;
  res->channels = j.spec.nchannels;
  memcpy(res->frames, r.frames, sizeof res->frames);
  res->wire_bytes = r.wire_bytes;
  res->raw_bytes = r.raw_bytes;
  if (j.mirror && o.coll == NCCLZ_ALLTOALL) scale_totals(res, (double)n / j.lay.nactors); /* each actor is a rank */
  if (j.fold) scale_totals(res, j.fold); /* channel 0 of fold alike */
  res->wall_s = ncclzNowSeconds() - t0;
  snprintf(res->why, sizeof res->why, "%s", why);
  size_t w = strlen(res->why);
  if (j.fold)
    snprintf(res->why + w, sizeof res->why - w, "; channels folded (one of %d%s)", j.fold,
             o.compress != NCCLZ_SIM_OFF ? ", " SIM_WHY_STREAMS_BY_ORBIT : "");
  return NCCLZ_OK;
}

static ncclzStatus sim_run_schedule(const ncclzProfile *prof, const ncclzSimData *data, const ncclzSimPlatform *p,
                                    const ncclzSimOptions *opt, ncclzSimResult *res);

/* Rings of this many ranks or more are extrapolated from two shorter rings (see every_step). */
#define SIM_EXTRAPOLATE_FROM 512
/* The shorter of two extrapolation bases has at least this many ranks and 3 nodes, the longer
 * half again its nodes (base_nodes, longer_nodes). A ring reaches its steady state well before
 * (every ring collective, plain and coded, 1 to 16 GPUs a node, equal to every step replayed;
 * test_sim's test_extrapolation); Broadcast's chains keep the lengths they were measured at, the
 * longer twice the shorter. */
#define SIM_RING_SHORT 32
#define SIM_CHAIN_SHORT 128

/* Nodes of G GPUs in the shorter base of at least min_ranks ranks. */
static int base_nodes(int g, int min_ranks) {
  int m = (min_ranks + g - 1) / g;
  return m > 3 ? m : 3;
}

/* Nodes of the longer base beside a shorter one of m nodes (m >= 3): it is the slower replay, and
 * half again m reaches as far past the first steps as twice m (a 16-channel ring of 6 nodes of 16
 * GPUs took 1.1 s, of 4 nodes 0.75 s). */
static int longer_nodes(int m) { return m + m / 2; }

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
static void extrapolate(const ncclzSimResult *a, const ncclzSimResult *b, int na, int nb, int n, ncclzSimResult *res) {
  double f = (double)(n - na) / (double)(nb - na);
  res->time_us = a->time_us + f * (b->time_us - a->time_us);
  for (int c = 0; c < NCCLZ_CODER_COUNT; c++)
    res->frames[c] = (uint64_t)llround((double)a->frames[c] + f * ((double)b->frames[c] - (double)a->frames[c]));
  res->wire_bytes = a->wire_bytes + f * (b->wire_bytes - a->wire_bytes);
  res->raw_bytes = a->raw_bytes + f * (b->raw_bytes - a->raw_bytes);
}

/* A replay run in a forked child while the caller runs another (each replay itself forks; the two
 * take both cores): sim_run_schedule of q and o, or with fold_core the full replay of a fold's core. */
typedef struct {
  ncclzStatus st;
  ncclzSimResult r;
  char err[256];
} side_report;

static pid_t side_start(const ncclzProfile *prof, const ncclzSimData *data, const ncclzSimPlatform *q,
                        const ncclzSimOptions *o, int fold_core, int *fd) {
  int fds[2];
  pid_t pid = pipe_fork(fds);
  if (pid == 0) {
    side_report fr;
    memset(&fr, 0, sizeof fr);
    fr.st = fold_core ? sim_run_once(prof, data, q, o, 0, 1, &fr.r) : sim_run_schedule(prof, data, q, o, &fr.r);
    if (fr.st != NCCLZ_OK) snprintf(fr.err, sizeof fr.err, "%s", ncclzLastError());
    ssize_t w = write(fds[1], &fr, sizeof fr);
    _exit(w == (ssize_t)sizeof fr ? 0 : 3);
  }
  *fd = fds[0];
  return pid;
}

static ncclzStatus side_finish(pid_t pid, int fd, ncclzSimResult *r) {
  side_report fr;
  int status;
  if (pid < 0) return NCCLZ_ERR_IO; /* side_start set the error; no child to collect (waitpid(-1) would reap any) */
  size_t got = pipe_collect(pid, fd, &fr, sizeof fr, &status);
  if (got != sizeof fr) return ncclzSetError(NCCLZ_ERR_IO, "sim: a side replay failed (status %d)", status);
  if (fr.st != NCCLZ_OK) return ncclzSetError(fr.st, "%s", fr.err);
  *r = fr.r;
  return NCCLZ_OK;
}

/* Two replays of every step, the shorter (qa, ua) in a forked child beside the longer: *a and *b. */
static ncclzStatus run_side_by_side(const ncclzProfile *prof, const ncclzSimData *data, const ncclzSimPlatform *qa,
                                    const ncclzSimOptions *ua, const ncclzSimPlatform *qb, const ncclzSimOptions *ub,
                                    ncclzSimResult *a, ncclzSimResult *b) {
  int fd = -1;
  pid_t pid = side_start(prof, data, qa, ua, 0, &fd);
  if (pid < 0) return NCCLZ_ERR_IO;
  ncclzStatus st = sim_run_once(prof, data, qb, ub, 0, 0, b), sa = side_finish(pid, fd, a);
  return st != NCCLZ_OK ? st : sa;
}

/* The same job on rings (or mirrors) of ma and mb ranks, side by side: *a and *b. */
static ncclzStatus run_rings_of(const ncclzProfile *prof, const ncclzSimData *data, const ncclzSimPlatform *p,
                                const ncclzSimOptions *o, int n, int ma, int mb, ncclzSimResult *a,
                                ncclzSimResult *b) {
  ncclzSimPlatform qa, qb;
  ncclzSimOptions ua, ub;
  ring_of(data, p, o, n, ma, &qa, &ua);
  ring_of(data, p, o, n, mb, &qb, &ub);
  return run_side_by_side(prof, data, &qa, &ua, &qb, &ub, a, b);
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
  job_init(&j, prof, data, q, o, 0, 0);
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
  return side_start(prof, data, &q, &v, 0, fd);
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
  ncclzStatus st = pid < 0 ? NCCLZ_ERR_IO : sim_run_once(prof, data, &q, &v, 0, 0, a), s1 = side_finish(pid, fd, &a1);
  if (st != NCCLZ_OK) return st;
  if (s1 != NCCLZ_OK) return s1;
  extrapolate(&a1, a, (int)k1, 2 * (int)k1, (int)k, a); /* *a is the longer: read before it is written */
  a->nchunks = k * a->channels;
  return NCCLZ_OK;
}

/* A pipelined tree's time is its steady state plus a fill that grows by the same time a level of
 * depth (d = ceil(log2 M), NCCL's binary tree over M nodes): a full base tree (tree_base), plus
 * d - depth(base) levels, each the difference between the plan's two level trees
 * (sim_tree_plan_for says which trees and why). The level trees replay in children beside the
 * base's. */
static ncclzStatus run_tree_extrapolated(const ncclzProfile *prof, const ncclzSimData *data, const ncclzSimPlatform *p,
                                         const ncclzSimOptions *o, ncclzSimResult *res) {
  ncclzSimOptions u = *o;
  ncclzSimResult a, s, l;
  int coded = o->compress != NCCLZ_SIM_OFF;
  sim_tree_plan t;
  sim_tree_plan_for(p, coded, &t);
  u.algorithm = NCCLZ_ALGO_TREE;
  u.every_step = 1;
  double g = p->gpus_per_node;
  u.fold_coded |= coded && t.large * g * 2 * resolved_channels(p, &u) * g > SIM_TREE_CODED_FOLD_WORK;
  double t0 = ncclzNowSeconds();
  int fs, fl = -1;
  pid_t ps = tree_side(prof, data, p, &u, t.small, t.step, &fs);
  pid_t pl = tree_side(prof, data, p, &u, t.large, t.step, &fl);
  uint32_t k;
  ncclzStatus st = tree_base(prof, data, p, &u, t.base, &a, &k);
  ncclzStatus ss = side_finish(ps, fs, &s), sl = side_finish(pl, fl, &l);
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
static ncclzStatus run_tree_in_chunks(const ncclzProfile *prof, const ncclzSimData *data, const ncclzSimPlatform *p,
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

/* Hier's ring between nodes: the rail ring's middle steps are alike (one block a step, and past the
 * data profile's rows frames of one CR), so the time is affine in the steps kept; two replays that
 * keep the first h1 and 2 h1 steps and the last SIM_RAIL_TAIL of each rail ring stage give the time
 * with all m - 1. h1 = SIM_RAIL_HEAD: past the CR's 64 rows (G >= 2 ranks a step), and long enough
 * for the codec streams' backlog to settle into its steady growth. */
static ncclzStatus run_rail_extrapolated(const ncclzProfile *prof, const ncclzSimData *data, const ncclzSimPlatform *p,
                                         const ncclzSimOptions *opt, ncclzSimResult *res) {
  int h1 = SIM_RAIL_HEAD, m1 = p->nodes - 1;
  if (m1 <= 2 * h1 + SIM_RAIL_TAIL) return sim_run_once(prof, data, p, opt, 0, 0, res);
  ncclzSimResult a, b;
  double t0 = ncclzNowSeconds();
  ncclzStatus st = sim_run_once(prof, data, p, opt, h1, 0, &a);
  if (st == NCCLZ_OK) st = sim_run_once(prof, data, p, opt, 2 * h1, 0, &b);
  if (st != NCCLZ_OK) return st;
  *res = b;
  extrapolate(&a, &b, h1, 2 * h1, m1 - SIM_RAIL_TAIL, res);
  res->wall_s = ncclzNowSeconds() - t0;
  size_t used = strlen(res->why);
  snprintf(res->why + used, sizeof res->why - used, " (rail steps %d, %d of %d, extrapolated)",
           h1 + SIM_RAIL_TAIL, 2 * h1 + SIM_RAIL_TAIL, m1);
  return NCCLZ_OK;
}

/* A point's chunks a channel (block_chunks of the buffer's channel share). */
static uint32_t point_chunks(const ncclzProfile *prof, const ncclzSimData *data, const ncclzSimPlatform *p,
                             const ncclzSimOptions *o) {
  ncclzAlgorithm a;
  uint32_t ch;
  sim_resolve(p, o, &a, &ch);
  size_t eb = data ? data->dtype_bytes : 4;
  return block_chunks(prof, data, p, o, a, (double)(o->bytes / eb) * (double)eb / ch);
}

/* Broadcast's pipelined chain from the root on a symmetric platform: chunks move hop by hop, and
 * every G-th hop crosses the NICs, so the time is the pipeline's period times the chunks plus a fill
 * affine in the ranks. Chains of base_nodes(G, SIM_CHAIN_SHORT) nodes and twice that (the same buffer
 * and chunks, the root at the same local index) are replayed in full and extrapolated. */
static int broadcast_extrapolates(const ncclzSimPlatform *p, const ncclzSimOptions *o) {
  int g = p->gpus_per_node, n = p->nodes * g;
  return o->coll == NCCLZ_BROADCAST && !o->every_step && o->fidelity != NCCLZ_FID_FULL && n >= SIM_EXTRAPOLATE_FROM &&
         p->placement == NCCLZ_PLACE_CONTIGUOUS &&
         (p->topology == NCCLZ_TOPO_NONBLOCKING || p->nodes <= p->nodes_per_leaf) &&
         p->nodes > 2 * base_nodes(g, SIM_CHAIN_SHORT);
}

static ncclzStatus run_broadcast_extrapolated(const ncclzProfile *prof, const ncclzSimData *data,
                                              const ncclzSimPlatform *p, const ncclzSimOptions *o,
                                              ncclzSimResult *res, ncclzSimResult *shorter) {
  ncclzSimPlatform qa = *p, q = *p;
  ncclzSimOptions u = *o;
  ncclzSimResult a, b;
  int g = p->gpus_per_node, n = p->nodes * g;
  u.every_step = 1;
  u.root = o->root % g;
  u.min_chunks = u.max_chunks = point_chunks(prof, data, p, o); /* the long chain's, on the short ones */
  double t0 = ncclzNowSeconds();
  qa.nodes = base_nodes(g, SIM_CHAIN_SHORT);
  q.nodes = 2 * qa.nodes;
  ncclzStatus st = run_side_by_side(prof, data, &qa, &u, &q, &u, &a, &b);
  if (st != NCCLZ_OK) return st;
  if (shorter) *shorter = a;
  *res = b;
  extrapolate(&a, &b, qa.nodes * g, q.nodes * g, n, res);
  res->nranks = n;
  res->wall_s = ncclzNowSeconds() - t0;
  uint32_t ch = resolved_channels(p, o);
  res->approximate |= ch > 1; /* the chains' overlap on NVLink shifts with the ranks (docs/simulator.md) */
  snprintf(res->why, sizeof res->why, "broadcast chains of %d and %d ranks replayed in full, extrapolated to %d ranks%s",
           qa.nodes * g, q.nodes * g, n, ch > 1 ? ", approximate: its chains share NVLink" : "");
  return NCCLZ_OK;
}

/* Plain Broadcast in NCCL's slices: once the chain is full it delivers one slice a period of its
 * slowest hop, so the time is affine in the slices a channel. One channel: the same chains with
 * SIM_BCAST_SLICES and twice that many slices of the same size are replayed and extrapolated (each
 * through the rank-count extrapolation where that applies), exact on a uniform platform. Several
 * channels: their chains share each node's NVLink, and how they overlap there shifts with the
 * slices and the ranks, so the time is affine in neither (a few percent off); the chains with
 * SIM_BCAST_MULTI slices give the fill, and a chain of SIM_BCAST_PERIOD_NODES nodes with that many
 * and twice that many slices the steady period (approximate: docs/simulator.md). */
#define SIM_BCAST_SLICES 4
#define SIM_BCAST_MULTI 8
/* A forced coder's Broadcast: its frames (hundreds a channel on a long chain, ncclzChainChunks) are
 * extrapolated the same way from 4 and 8 (auto's too, once plan_call has fixed the call's coder with
 * all its frames: REA plans with the chunk count). */
#define SIM_BCAST_CODED 4

/* The slices (chunks) a channel of the replays that give the fill. */
static uint32_t broadcast_first(const ncclzSimOptions *o, uint32_t ch) {
  return o->compress != NCCLZ_SIM_OFF ? SIM_BCAST_CODED : ch > 1 ? SIM_BCAST_MULTI : SIM_BCAST_SLICES;
}
#define SIM_BCAST_PERIOD_NODES 8

static ncclzStatus sim_run_schedule(const ncclzProfile *prof, const ncclzSimData *data, const ncclzSimPlatform *p,
                                    const ncclzSimOptions *opt, ncclzSimResult *res);

/* The same Broadcast with `c` slices a channel of `per` elements. */
static ncclzSimOptions slices_options(const ncclzSimData *data, const ncclzSimOptions *o, uint32_t ch, uint64_t per,
                                      uint32_t c) {
  ncclzSimOptions u = *o;
  size_t eb = data ? data->dtype_bytes : 4;
  u.chunk_bytes = per * eb;
  u.bytes = (uint64_t)c * ch * per * eb;
  u.min_chunks = u.max_chunks = c;
  return u;
}

static ncclzStatus run_broadcast_slices(const ncclzProfile *prof, const ncclzSimData *data, const ncclzSimPlatform *p,
                                        const ncclzSimOptions *o, uint32_t slices, ncclzSimResult *res) {
  uint32_t ch = resolved_channels(p, o);
  size_t eb = data ? data->dtype_bytes : 4;
  uint64_t per = o->bytes / eb / ch / slices; /* elements of a slice, as ncclzScheduleRange cuts them */
  int c1 = (int)broadcast_first(o, ch);
  ncclzSimPlatform q = *p; /* the chain whose period is replayed: the same one, or a short one */
  ncclzSimOptions v = *o;
  int short_chain = ch > 1 && p->nodes > SIM_BCAST_PERIOD_NODES;
  if (short_chain) {
    q.nodes = SIM_BCAST_PERIOD_NODES;
    v.root = o->root % p->gpus_per_node;
  }
  ncclzSimResult r1, a1, a2;
  double t0 = ncclzNowSeconds();
  ncclzSimOptions o1 = slices_options(data, o, ch, per, (uint32_t)c1); /* the fill */
  ncclzSimOptions v1 = slices_options(data, &v, ch, per, (uint32_t)c1);
  ncclzSimOptions v2 = slices_options(data, &v, ch, per, 2 * (uint32_t)c1);
  /* where the fill's rank-count extrapolation starts from a chain of the period's nodes (G = 16),
   * its shorter chain is the period's: the same replay, made once */
  int shared = short_chain && base_nodes(p->gpus_per_node, SIM_CHAIN_SHORT) == SIM_BCAST_PERIOD_NODES &&
               broadcast_extrapolates(p, &o1) && check_inputs(prof, data, p, &o1) == NCCLZ_OK;
  int fd = -1, fd1 = -1;
  pid_t pid = side_start(prof, data, &q, &v2, 0, &fd); /* the period's replays beside the fill's */
  pid_t pid1 = short_chain && !shared ? side_start(prof, data, &q, &v1, 0, &fd1) : 0;
  ncclzStatus st = pid < 0 || pid1 < 0 ? NCCLZ_ERR_IO
                   : shared           ? run_broadcast_extrapolated(prof, data, p, &o1, &r1, &a1)
                                      : sim_run_schedule(prof, data, p, &o1, &r1);
  ncclzStatus sa = side_finish(pid, fd, &a2), s1 = pid1 > 0 ? side_finish(pid1, fd1, &a1) : NCCLZ_OK;
  if (st != NCCLZ_OK) return st;
  if (sa != NCCLZ_OK) return sa;
  if (s1 != NCCLZ_OK) return s1;
  if (!short_chain) a1 = r1; /* the same chain: the same replay */
  *res = r1;
  /* a compressed call's interface is that of its whole buffer, not the pipeline's: out, then in */
  double b1 = (double)c1 * ch * per * eb, i1 = iface_us(prof, p, o, b1), i2 = iface_us(prof, p, o, 2 * b1);
  double period = (a2.time_us - i2 - (a1.time_us - i1)) / c1, more = (double)slices / c1;
  res->time_us = r1.time_us - i1 + ((double)slices - c1) * period + iface_us(prof, p, o, (double)o->bytes);
  res->wire_bytes = r1.wire_bytes * more;
  res->raw_bytes = r1.raw_bytes * more;
  res->nchunks = slices * ch;
  res->approximate |= ch > 1;
  res->wall_s = ncclzNowSeconds() - t0;
  size_t used = strlen(res->why);
  if (ch > 1)
    snprintf(res->why + used, sizeof res->why - used, " (fill of %d slices, period on %d nodes: %u slices, approximate)",
             c1, q.nodes, slices);
  else
    snprintf(res->why + used, sizeof res->why - used, " (%d and %d slices a channel, extrapolated to %u)", c1, 2 * c1,
             slices);
  return NCCLZ_OK;
}

/* The slices (chunks) a channel of Broadcast moves when the slice extrapolation applies, else 0: a
 * uniform platform (as broadcast_extrapolates), whole slices of at least one element, plain or a
 * forced coder (every frame alike; auto is replayed as the coder its call plans). */
static uint32_t broadcast_slices(const ncclzProfile *prof, const ncclzSimData *data, const ncclzSimPlatform *p,
                                 const ncclzSimOptions *o) {
  if (o->coll != NCCLZ_BROADCAST || o->compress == NCCLZ_SIM_AUTO || o->every_step || o->fidelity == NCCLZ_FID_FULL ||
      p->placement != NCCLZ_PLACE_CONTIGUOUS || (p->topology != NCCLZ_TOPO_NONBLOCKING && p->nodes > p->nodes_per_leaf))
    return 0;
  uint32_t ch = resolved_channels(p, o);
  size_t eb = data ? data->dtype_bytes : 4;
  uint32_t c = point_chunks(prof, data, p, o);
  uint32_t c1 = broadcast_first(o, ch);
  return c > 2 * c1 && o->bytes / eb / ch / c > 0 ? c : 0;
}

/* Folds are replayed in full at a smaller size of the same shape and buffer: a core of pc units
 * (hier: nodes; flat rhd: ranks) with the leading bits of the folded units (rem, shifted), as which
 * new ranks hold two blocks, and so how the halvings' ranges differ, follows from rem's bits. The
 * cost model (model/choose.c) prices each level's steps and each halving's ranges but not how the
 * folded and unfolded ranks' flows contend; that contention follows rem's leading bits, which the
 * core keeps, so the replay's time plus the model's difference between the point and the core is
 * the point's (run_folded; within 2% of the full replay where measured, docs/simulator.md). Where
 * the model has no time (forced RAW frames): cores of pa and 2 pa, replayed and extrapolated as
 * A - C/p + latency x steps (each halving sends half of what is left, so the bytes on a rank's
 * path change only by the blocks' granularity, 1/p, and each level adds its steps' latency). */
#define SIM_FOLD_NODES_M 16  /* hier: the core of the one replay (8 nodes: 10% off at 100 x 2) */
#define SIM_FOLD_RANKS_M 128 /* flat rhd (64 ranks: 8.5% off at 125 x 8) */
#define SIM_FOLD_NODES_A 16 /* hier: the smaller core of the two replays */
#define SIM_FOLD_RANKS_A 128 /* flat rhd */

/* The platform with a core of pc units and the leading bits of p's folded units. */
static ncclzSimPlatform fold_scaled(const ncclzSimPlatform *p, int hier, int pc) {
  ncclzSimPlatform q = *p;
  int g = p->gpus_per_node, units = hier ? p->nodes : p->nodes * g, p2 = 1, rem;
  while (p2 * 2 <= units) p2 *= 2;
  rem = (int)((long long)(units - p2) * pc / p2);
  if (hier) {
    q.nodes = pc + (rem > 0 ? rem : 1);
  } else { /* whole nodes */
    q.nodes = (pc + rem) / g;
    if (q.nodes * g <= pc) q.nodes = pc / g + 1;
  }
  return q;
}

/* The full replay of a fold's core q (o: fidelity full, every step). */
static ncclzStatus fold_replay(const ncclzProfile *prof, const ncclzSimData *data, const ncclzSimPlatform *q,
                               const ncclzSimOptions *o, ncclzSimResult *r) {
  return sim_run_once(prof, data, q, o, 0, 1, r);
}

/* A fold's result on the whole point from a replay r of platform q: frames and bytes per rank. */
static void fold_scale(const ncclzSimResult *r, const ncclzSimPlatform *p, const ncclzSimPlatform *q, ncclzSimResult *res) {
  int g = p->gpus_per_node, n = p->nodes * g;
  double scale = (double)n / (q->nodes * g);
  *res = *r;
  scale_totals(res, scale);
  res->nranks = n;
  res->fidelity = NCCLZ_FID_REDUCED;
  res->approximate = 1;
}

/* Two replays of the fold on cores of pa and 2 pa units, extrapolated as A - C/p + latency x steps
 * (where the cost model has no time: forced RAW frames). */
static ncclzStatus run_folded_two(const ncclzProfile *prof, const ncclzSimData *data, const ncclzSimPlatform *p,
                                  const ncclzSimOptions *full, int hier, int pa, int p2, ncclzSimResult *res) {
  ncclzSimPlatform qa = fold_scaled(p, hier, pa), qb = fold_scaled(p, hier, 2 * pa);
  ncclzSimResult ra, rb;
  memset(&ra, 0, sizeof ra);
  int fd = -1;
  pid_t pid = side_start(prof, data, &qa, full, 1, &fd);
  if (pid < 0) return NCCLZ_ERR_IO; /* pipe_fork set the error */
  ncclzStatus st = fold_replay(prof, data, &qb, full, &rb), sa = side_finish(pid, fd, &ra);
  if (st != NCCLZ_OK) return st;
  if (sa != NCCLZ_OK) return sa;
  /* each level of the core adds its steps' latency (AllReduce: a halving and a doubling) */
  double lat = (full->coll == NCCLZ_ALLREDUCE ? 2 : 1) * p->nic_latency_us, la = lat * log2(pa), lb = lat * log2(2.0 * pa);
  double c = (rb.time_us - lb - (ra.time_us - la)) * 2 * pa; /* T(pc) - lat log2(pc) = A - c / pc */
  fold_scale(&rb, p, &qb, res);
  res->time_us = rb.time_us - lb + c / (2 * pa) - c / p2 + lat * log2(p2);
  snprintf(res->why, sizeof res->why,
           "reduced, approximate (%s): full replays of the same fold on %d and %d ranks, extrapolated in the "
           "core's size", SIM_FOLD_ACCURACY, qa.nodes * p->gpus_per_node, qb.nodes * p->gpus_per_node);
  return NCCLZ_OK;
}

static ncclzStatus run_folded(const ncclzProfile *prof, const ncclzSimData *data, const ncclzSimPlatform *p,
                              const ncclzSimOptions *opt, ncclzSimResult *res) {
  ncclzAlgorithm a;
  uint32_t ch;
  sim_resolve(p, opt, &a, &ch);
  int hier = a == NCCLZ_ALGO_HIER, g = p->gpus_per_node, units = hier ? p->nodes : p->nodes * g, p2 = 1;
  while (p2 * 2 <= units) p2 *= 2;
  ncclzSimOptions full = *opt;
  full.fidelity = NCCLZ_FID_FULL;
  full.every_step = 1;
  double t0 = ncclzNowSeconds();
  int pc = hier ? SIM_FOLD_NODES_M : SIM_FOLD_RANKS_M;
  if (pc > p2 / 2) pc = p2 / 2; /* fidelity reduced asked for on a small point */
  ncclzSimPlatform q = fold_scaled(p, hier, pc);
  double mp = sim_predicted_us(prof, data, p, opt, a), mq = sim_predicted_us(prof, data, &q, opt, a);
  ncclzStatus st;
  if (mp > 0 && mq > 0) {
    ncclzSimResult r;
    if ((st = fold_replay(prof, data, &q, &full, &r)) != NCCLZ_OK) return st;
    fold_scale(&r, p, &q, res);
    res->time_us = r.time_us + (mp - mq);
    snprintf(res->why, sizeof res->why,
             "reduced, approximate (%s): the same fold replayed on %d ranks by %d actors, plus the cost model's "
             "difference", SIM_FOLD_ACCURACY, q.nodes * g, r.actors);
  } else {
    int pa = hier ? SIM_FOLD_NODES_A : SIM_FOLD_RANKS_A;
    if (p2 < 4 * pa) pa = p2 / 4; /* fidelity reduced asked for on a small point */
    if ((st = run_folded_two(prof, data, p, &full, hier, pa, p2, res)) != NCCLZ_OK) return st;
  }
  res->wall_s = ncclzNowSeconds() - t0;
  return NCCLZ_OK;
}

/* 1 where the reduced replay is taken: a symmetric platform, and auto's choice or asked for. */
static int takes_reduced(const ncclzSimPlatform *p, const ncclzSimOptions *o) {
  sim_class c = classify(p, o, 0);
  return c.sym == SIM_SYMMETRIC &&
         (o->fidelity == NCCLZ_FID_REDUCED || (o->fidelity == NCCLZ_FID_AUTO && c.fidelity == NCCLZ_FID_REDUCED));
}

/* Plain Alltoall with every transfer posted at once loads each link with the same flows whatever the
 * placement: every node holds G ranks, each GPU sends a block to the N - G ranks of other nodes and to
 * the G - 1 of its own, and the NIC a GPU uses is its local index's. So a strided or random placement
 * replays as the contiguous one (on a non-blocking fabric or one fat-tree leaf, where no hop crosses
 * leaves). Its contiguous twin. */
static ncclzSimPlatform alltoall_contiguous(const ncclzSimPlatform *p) {
  ncclzSimPlatform q = *p;
  q.placement = NCCLZ_PLACE_CONTIGUOUS;
  return q;
}

/* Plain Alltoall on a symmetric platform (any placement: alltoall_contiguous) whose every transfer is
 * posted at once (its chunks within the staging banks, no comm lanes), on three nodes or more, replayed
 * reduced: 1, else 0. */
static int alltoall_scales(const ncclzProfile *prof, const ncclzSimData *data, const ncclzSimPlatform *p,
                           const ncclzSimOptions *o) {
  if (o->coll != NCCLZ_ALLTOALL || o->compress != NCCLZ_SIM_OFF || o->comm_lanes || p->nodes < 3 ||
      check_inputs(prof, data, p, o) != NCCLZ_OK)
    return 0;
  ncclzSimPlatform q = alltoall_contiguous(p);
  if (!takes_reduced(&q, o)) return 0;
  sim_job j;
  job_init(&j, prof, data, p, o, 1, 0);
  return j.nchunks <= (o->banks ? o->banks : 2); /* a peer's nchunks x channels chunks within its banks x channels */
}

/* Plain Alltoall posts every transfer at time 0 (alltoall_scales): a GPU's M-1 transfers to the GPUs of
 * one local index on the other nodes have the same route, size, start and latency, so under max-min
 * sharing each of them moves at the rate that one flow gets on NICs of 1/(M-1) the bandwidth, where
 * every class of transfers on a NIC has one flow instead of M-1 (NVLink carries no inter-node
 * traffic). So the time is that of the same blocks' Alltoall on two nodes whose NICs have 1/(M-1) of
 * the bandwidth: exact, and 2G actors with 2G-1 transfers each at any size. */
static ncclzStatus run_alltoall_scaled(const ncclzProfile *prof, const ncclzSimData *data, const ncclzSimPlatform *p,
                                       const ncclzSimOptions *o, ncclzSimResult *res) {
  ncclzSimPlatform q = alltoall_contiguous(p);
  ncclzSimOptions u = *o;
  int g = p->gpus_per_node, n = p->nodes * g;
  size_t eb = data ? data->dtype_bytes : 4;
  uint64_t block = o->bytes / eb / (uint64_t)n ? o->bytes / eb / (uint64_t)n : 1; /* elements, as size_job */
  q.nodes = 2;
  q.nic_gbps = p->nic_gbps / (p->nodes - 1);
  u.bytes = block * 2 * (uint64_t)g * eb;
  u.fidelity = NCCLZ_FID_FULL;
  ncclzStatus st = sim_run_once(prof, data, &q, &u, 0, 0, res);
  if (st != NCCLZ_OK) return st;
  scale_totals(res, (double)n * (n - 1) / (2.0 * g * (2 * g - 1)));
  res->nranks = n;
  res->fidelity = NCCLZ_FID_REDUCED;
  snprintf(res->why, sizeof res->why,
           "reduced: %salltoall, every transfer at once: %d actors on two nodes whose NICs have 1/%d of the "
           "bandwidth stand for %d ranks", p->placement != NCCLZ_PLACE_CONTIGUOUS ? "any placement's " : "symmetric ",
           res->actors, p->nodes - 1, n);
  return NCCLZ_OK;
}

/* Alltoall from SIM_EXTRAPOLATE_FROM ranks is extrapolated from mirrors of about SIM_A2A_SHORT and half as
 * many again (16 and 24 nodes of 8 GPUs): past the first nodes each adds the same time, where a NIC's
 * backlog has built up (from 8 to 16 nodes of 8 GPUs on 12.5 GB/s, FIXEDLEN, 3% more than from 16 on).
 * The longer mirror is the slow one where the NIC is the bottleneck (its flows all in SimGrid's
 * sharing at once); at 16 GPUs a node on one NIC, 16 nodes took 1.6-3.4 s, 12 nodes 0.8-1.4 s. */
#define SIM_A2A_SHORT 128

/* Alltoall replayed reduced on SIM_EXTRAPOLATE_FROM ranks or more, past twice the shorter mirror: 1, else 0. */
static int alltoall_extrapolates(const ncclzProfile *prof, const ncclzSimData *data, const ncclzSimPlatform *p,
                                 const ncclzSimOptions *o) {
  if (o->coll != NCCLZ_ALLTOALL || o->every_step || p->nodes * p->gpus_per_node < SIM_EXTRAPOLATE_FROM ||
      p->nodes <= 2 * base_nodes(p->gpus_per_node, SIM_A2A_SHORT) || check_inputs(prof, data, p, o) != NCCLZ_OK)
    return 0;
  return takes_reduced(p, o);
}

/* Alltoall's steps past the first and last G are alike: every GPU sends a block to another node and
 * receives one, the destination's local index turning with the step, so with the same block, chunks
 * and coders each node more adds G such steps and the same time (encode-, decode- or NIC-bound alike:
 * 8, 16, 24 and 32 nodes add the same time to 1e-5 in both regimes). The mirrors of m1 (SIM_A2A_SHORT
 * ranks) and longer_nodes(m1) nodes are replayed side by side and extrapolated in the ranks; frames and bytes are
 * the longer one's per transfer. Auto plans its call on the whole point (its vote weighs the call's
 * bytes and units) and the mirrors replay the coder it planned, as its frames take. */
static ncclzStatus run_alltoall_extrapolated(const ncclzProfile *prof, const ncclzSimData *data,
                                             const ncclzSimPlatform *p, const ncclzSimOptions *o, ncclzSimResult *res) {
  int g = p->gpus_per_node, n = p->nodes * g, m1 = base_nodes(g, SIM_A2A_SHORT), m2 = longer_nodes(m1);
  ncclzSimOptions u = *o;
  if (o->compress == NCCLZ_SIM_AUTO) {
    sim_job j;
    job_init(&j, prof, data, p, o, 1, 0);
    if (plan_call(&j)) u.compress = NCCLZ_SIM_OFF;
    else if (j.call_coder >= 0) u.compress = j.call_coder == NCCLZ_CODER_HUFFMAN ? NCCLZ_SIM_HUFFMAN : NCCLZ_SIM_FIXEDLEN;
  }
  ncclzSimResult a, b;
  double t0 = ncclzNowSeconds();
  ncclzSimPlatform pc = alltoall_contiguous(p); /* the mirrors play the contiguous placement */
  ncclzStatus st = run_rings_of(prof, data, &pc, &u, n, m1 * g, m2 * g, &a, &b);
  if (st != NCCLZ_OK) return st;
  int na = m1 * g, nb = m2 * g;
  *res = b;
  res->time_us = a.time_us + (double)(n - na) / (nb - na) * (b.time_us - a.time_us);
  scale_totals(res, (double)n * (n - 1) / ((double)nb * (nb - 1)));
  res->nranks = n;
  res->approximate = 1; /* held to the mirror of every node within 0.1% (docs/simulator.md) */
  res->wall_s = ncclzNowSeconds() - t0;
  snprintf(res->why, sizeof res->why,
           "reduced, approximate: %s alltoall, mirrors of %d and %d nodes (%d actors) replayed and "
           "extrapolated to %d ranks", p->placement != NCCLZ_PLACE_CONTIGUOUS ? "a contiguous placement's" : "symmetric",
           m1, m2, b.actors, n);
  return NCCLZ_OK;
}

static ncclzStatus sim_run_schedule(const ncclzProfile *prof, const ncclzSimData *data, const ncclzSimPlatform *p,
                                    const ncclzSimOptions *opt, ncclzSimResult *res) {
  int n = p->nodes * p->gpus_per_node;
  ncclzAlgorithm algo;
  uint32_t channels;
  sim_resolve(p, opt, &algo, &channels);
  if (algo == NCCLZ_ALGO_TREE && !opt->every_step && p->placement == NCCLZ_PLACE_CONTIGUOUS &&
      p->topology == NCCLZ_TOPO_NONBLOCKING && check_inputs(prof, data, p, opt) == NCCLZ_OK) {
    if (p->nodes > SIM_TREE_EXTRAPOLATE_FROM) return run_tree_extrapolated(prof, data, p, opt, res);
    if (opt->compress == NCCLZ_SIM_OFF && p->nodes >= SIM_TREE_CHUNKS_FROM)
      return run_tree_in_chunks(prof, data, p, opt, res);
  }
  if (opt->coll == NCCLZ_BROADCAST && opt->compress == NCCLZ_SIM_AUTO && !opt->every_step &&
      check_inputs(prof, data, p, opt) == NCCLZ_OK) {
    sim_job j; /* the call REA runs as plain NCCL: plain Broadcast's replay, with its extrapolations */
    ncclzSimOptions plain, coded = *opt;
    const int as_plain = auto_call_plain(prof, data, p, opt, &j, &plain);
    if (as_plain && broadcast_slices(prof, data, p, &plain)) return sim_run_schedule(prof, data, p, &plain, res);
    /* else every frame takes the call's coder, planned here with all its frames: that coder's
     * replay, in auto's chunks */
    coded.compress = j.call_coder == NCCLZ_CODER_HUFFMAN ? NCCLZ_SIM_HUFFMAN : NCCLZ_SIM_FIXEDLEN;
    coded.min_chunks = coded.max_chunks = j.nchunks;
    uint32_t k = !as_plain && j.call_coder > NCCLZ_CODER_RAW ? broadcast_slices(prof, data, p, &coded) : 0;
    if (k) return run_broadcast_slices(prof, data, p, &coded, k, res);
  }
  if (opt->coll == NCCLZ_ALLTOALL && opt->compress == NCCLZ_SIM_AUTO && check_inputs(prof, data, p, opt) == NCCLZ_OK) {
    sim_job j; /* the call REA runs as plain NCCL: plain Alltoall's replay */
    ncclzSimOptions plain;
    if (auto_call_plain(prof, data, p, opt, &j, &plain) && alltoall_scales(prof, data, p, &plain))
      return run_alltoall_scaled(prof, data, p, &plain, res);
  }
  if (alltoall_scales(prof, data, p, opt)) return run_alltoall_scaled(prof, data, p, opt, res);
  if (alltoall_extrapolates(prof, data, p, opt)) return run_alltoall_extrapolated(prof, data, p, opt, res);
  uint32_t slices = check_inputs(prof, data, p, opt) == NCCLZ_OK ? broadcast_slices(prof, data, p, opt) : 0;
  if (slices) return run_broadcast_slices(prof, data, p, opt, slices, res);
  if (broadcast_extrapolates(p, opt) && check_inputs(prof, data, p, opt) == NCCLZ_OK)
    return run_broadcast_extrapolated(prof, data, p, opt, res, NULL);
  if (replays_folded(p, opt) && !opt->every_step && check_inputs(prof, data, p, opt) == NCCLZ_OK)
    return run_folded(prof, data, p, opt, res);
  char why[160];
  int reduced = ncclzSimChooseFidelity(p, opt, why, sizeof why) == NCCLZ_FID_REDUCED &&
                (opt->fidelity == NCCLZ_FID_AUTO || opt->fidelity == NCCLZ_FID_REDUCED);
  int g = p->gpus_per_node;
  if (!opt->every_step && (reduced || opt->fidelity == NCCLZ_FID_REDUCED) && algo == NCCLZ_ALGO_HIER &&
      opt->hier_inter == NCCLZ_ALGO_RING &&
      p->nodes > SIM_RAIL_FROM)
    return run_rail_extrapolated(prof, data, p, opt, res);
  int ma = base_nodes(g, SIM_RING_SHORT), na = g * ma, nb = g * longer_nodes(ma);
  if (opt->every_step || !reduced || !ring_collective(opt->coll) || algo != NCCLZ_ALGO_RING || n < SIM_EXTRAPOLATE_FROM ||
      n <= nb)
    return sim_run_once(prof, data, p, opt, 0, 0, res);
  ncclzSimResult a, b;
  double t0 = ncclzNowSeconds();
  ncclzStatus st = run_rings_of(prof, data, p, opt, n, na, nb, &a, &b);
  if (st != NCCLZ_OK) return st;
  *res = b;
  extrapolate(&a, &b, na, nb, n, res);
  res->nranks = n;
  res->wall_s = ncclzNowSeconds() - t0;
  snprintf(res->why, sizeof res->why,
           "reduced: symmetric ring, %d actors stand for %d ranks (the steady state of %d- and %d-rank rings, "
           "extrapolated)", b.actors, n, na, nb);
  return NCCLZ_OK;
}

/* Plain replays made in this process: a what-if's baseline, auto's plain alternative and the best
 * plain schedule replay the same jobs, and a replay is a function of its inputs (compared whole:
 * profile, data, platform, options). The last SIM_MEMO are kept. */
#define SIM_MEMO 8
static ncclzStatus sim_run_point(const ncclzProfile *prof, const ncclzSimData *data, const ncclzSimPlatform *p,
                                 const ncclzSimOptions *opt, ncclzSimResult *res);
typedef struct {
  ncclzProfile prof;
  ncclzSimData data;
  ncclzSimPlatform p;
  ncclzSimOptions o;
  int has_prof, has_data;
  ncclzSimResult r;
} plain_memo;
static plain_memo *memo[SIM_MEMO];
static unsigned memo_next;

static int memo_matches(const plain_memo *m, const ncclzProfile *prof, const ncclzSimData *data,
                        const ncclzSimPlatform *p, const ncclzSimOptions *o) {
  return m && m->has_prof == !!prof && m->has_data == !!data && (!prof || !memcmp(&m->prof, prof, sizeof *prof)) &&
         (!data || !memcmp(&m->data, data, sizeof *data)) && !memcmp(&m->p, p, sizeof *p) && !memcmp(&m->o, o, sizeof *o);
}

static const ncclzSimResult *memo_find(const ncclzProfile *prof, const ncclzSimData *data, const ncclzSimPlatform *p,
                                       const ncclzSimOptions *o) {
  for (int i = 0; i < SIM_MEMO; i++)
    if (memo_matches(memo[i], prof, data, p, o)) return &memo[i]->r;
  return NULL;
}

static void memo_keep(const ncclzProfile *prof, const ncclzSimData *data, const ncclzSimPlatform *p,
                      const ncclzSimOptions *o, const ncclzSimResult *r) {
  plain_memo **slot = &memo[memo_next++ % SIM_MEMO];
  if (!*slot && !(*slot = calloc(1, sizeof **slot))) return; /* no memo: replays run again */
  plain_memo *m = *slot;
  memset(m, 0, sizeof *m);
  if ((m->has_prof = prof != NULL)) m->prof = *prof;
  if ((m->has_data = data != NULL)) m->data = *data;
  m->p = *p;
  m->o = *o;
  m->r = *r;
}

ncclzStatus ncclzSimRun(const ncclzProfile *prof, const ncclzSimData *data, const ncclzSimPlatform *p,
                        const ncclzSimOptions *opt, ncclzSimResult *res) {
  if (opt->compress != NCCLZ_SIM_OFF) return sim_run_point(prof, data, p, opt, res);
  ncclzSimOptions key = *opt; /* auto's schedule and the one it resolves to are the same replay */
  uint32_t ch;
  sim_resolve(p, opt, &key.algorithm, &ch);
  const ncclzSimResult *made = memo_find(prof, data, p, &key);
  if (made) { /* the same plain replay, made already: no time spent on it here */
    *res = *made;
    res->wall_s = 0.0;
    return NCCLZ_OK;
  }
  ncclzStatus st = sim_run_point(prof, data, p, opt, res);
  if (st == NCCLZ_OK) memo_keep(prof, data, p, &key, res);
  return st;
}

/* ncclzSimRun without the memo. */
static ncclzStatus sim_run_point(const ncclzProfile *prof, const ncclzSimData *data, const ncclzSimPlatform *p,
                                 const ncclzSimOptions *opt, ncclzSimResult *res) {
  if (opt->algorithm == NCCLZ_ALGO_AUTO && opt->compress == NCCLZ_SIM_AUTO && prof && data &&
      ncclzChoiceServes(opt->coll)) /* the model's pair */
    return sim_run_choice(prof, data, p, opt, res);
  ncclzStatus st = opt->algorithm == NCCLZ_ALGO_AUTO && opt->compress != NCCLZ_SIM_OFF
                       ? ncclzSimRunBest(prof, data, p, opt, res) /* a forced coder's fastest schedule */
                       : sim_run_schedule(prof, data, p, opt, res);
  if (st != NCCLZ_OK) return st;
  res->choice = -1;
  res->predicted_us = sim_predicted_us(prof, data, p, opt, res->algorithm);
  return NCCLZ_OK;
}
