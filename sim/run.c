/* Running one replay: check the inputs, choose the fidelity, lay the actors out, size the chunks,
 * then replay in a forked child (SimGrid keeps one engine per process and cannot be reset) that
 * sends its totals back through a pipe. sim_run_schedule picks the reduced replay a point takes
 * (extrapolate.c, broadcast.c, fold.c, alltoall.c), which run smaller replays through these. */
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
uint32_t sim_resolved_channels(const ncclzSimPlatform *p, const ncclzSimOptions *o) {
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

ncclzStatus sim_check_inputs(const ncclzProfile *prof, const ncclzSimData *data, const ncclzSimPlatform *p,
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
uint32_t sim_block_chunks(const ncclzProfile *prof, const ncclzSimData *data, const ncclzSimPlatform *p,
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

/* Block and chunk sizes of a job (sim_block_chunks). */
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
  j->nchunks = sim_block_chunks(prof, j->data, &j->lay.p, o, a, block);
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
double sim_iface_us(const ncclzProfile *prof, const ncclzSimPlatform *p, const ncclzSimOptions *o, double bytes) {
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
 * coder, partial sums included. sim_plan_call replays that decision: 1 when the call runs as plain
 * NCCL, else 0 with the coder in j->call_coder (-1 where REA plans each frame: not auto, or
 * per-hop links). */
int sim_plan_call(sim_job *j) {
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

/* A job's sizes, schedule, REA settings and hint (before sim_plan_call); o must outlive it. */
void sim_job_init(sim_job *j, const ncclzProfile *prof, const ncclzSimData *data, const ncclzSimPlatform *p,
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
  j->mirror = reduced && sim_mirrored(o->coll, j->spec.algo, j->spec.nchannels);
  j->rep_node[1] = 1;
  if (j->mirror && j->spec.algo == NCCLZ_ALGO_HIER && o->coll != NCCLZ_ALLREDUCE) /* nodes whose permutation is typical */
    sim_hier_typical_nodes(p->nodes, p->gpus_per_node, j->rep_node);
  if (prof)
    for (int h = 0; h < NCCLZ_HINT_COUNT; h++)
      ncclzReaConfigFromProfile(prof, (ncclzTransportHint)h, data ? data->data_class : NCCLZ_CLASS_DEFAULT, &j->cfg[h]);
  set_hint(j, p, o);
}

/* Frames and bytes of a replay that stands for f times as many transfers. */
void sim_scale_totals(ncclzSimResult *r, double f) {
  for (int k = 0; k < NCCLZ_CODER_COUNT; k++) r->frames[k] = (uint64_t)llround((double)r->frames[k] * f);
  r->wire_bytes *= f;
  r->raw_bytes *= f;
}

/* The plain tree's channels: channel q is channel 0 with every local GPU turned by q s, s = G/C
 * (schedule/algorithms.c tree_place_of: its trees' heads at q s and q s + G/2, chains in the GPUs' order), on
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

/* One replay in a forked child; rail_head as sim_job_init's; fold_core: the full replay of a fold's core
 * (sim_run_folded), hier's with one actor a node where its GPUs run alike (sim_collapses). */
ncclzStatus sim_run_once(const ncclzProfile *prof, const ncclzSimData *data, const ncclzSimPlatform *p,
                         const ncclzSimOptions *opt, int rail_head, int fold_core, ncclzSimResult *res) {
  memset(res, 0, sizeof *res);
  ncclzStatus st = sim_check_inputs(prof, data, p, opt);
  if (st != NCCLZ_OK) return st;
  ncclzSimOptions o = *opt;
  if (!o.banks) o.banks = 2;
  if (!o.full_max_ranks) o.full_max_ranks = 4096;
  int n = p->nodes * p->gpus_per_node;
  char why[160];
  sim_class cls = sim_classify(p, &o, 1);
  sim_class_why(p, &o, &cls, why, sizeof why);
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
  sim_job_init(&j, prof, data, p, &o, f == NCCLZ_FID_REDUCED, rail_head);
  j.collapse = (fold_core || j.mirror) && sim_collapsed(p, &o, j.spec.algo, fold_core) ? p->gpus_per_node : 0;
  if (sim_plan_call(&j)) { /* as the executor: every rank plans RAW, so the call is plain NCCL */
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
  res->time_us = r.end_s * 1e6 + sim_iface_us(prof, p, &o, (double)o.bytes);
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
  if (j.mirror && o.coll == NCCLZ_ALLTOALL) sim_scale_totals(res, (double)n / j.lay.nactors); /* each actor is a rank */
  if (j.fold) sim_scale_totals(res, j.fold); /* channel 0 of fold alike */
  res->wall_s = ncclzNowSeconds() - t0;
  snprintf(res->why, sizeof res->why, "%s", why);
  size_t w = strlen(res->why);
  if (j.fold)
    snprintf(res->why + w, sizeof res->why - w, "; channels folded (one of %d%s)", j.fold,
             o.compress != NCCLZ_SIM_OFF ? ", " SIM_WHY_STREAMS_BY_ORBIT : "");
  return NCCLZ_OK;
}


/* A replay run in a forked child while the caller runs another (each replay itself forks; the two
 * take both cores). */
typedef struct {
  ncclzStatus st;
  ncclzSimResult r;
  char err[256];
} side_report;

pid_t sim_side_start(const ncclzProfile *prof, const ncclzSimData *data, const ncclzSimPlatform *q,
                     const ncclzSimOptions *o, sim_side_kind kind, int *fd) {
  int fds[2];
  pid_t pid = pipe_fork(fds);
  if (pid == 0) {
    side_report fr;
    memset(&fr, 0, sizeof fr);
    fr.st = kind == SIM_SIDE_FOLD_CORE ? sim_run_once(prof, data, q, o, 0, 1, &fr.r)
            : kind == SIM_SIDE_POINT   ? ncclzSimRun(prof, data, q, o, &fr.r)
                                       : sim_run_schedule(prof, data, q, o, &fr.r);
    if (fr.st != NCCLZ_OK) snprintf(fr.err, sizeof fr.err, "%s", ncclzLastError());
    ssize_t w = write(fds[1], &fr, sizeof fr);
    _exit(w == (ssize_t)sizeof fr ? 0 : 3);
  }
  *fd = fds[0];
  return pid;
}

ncclzStatus sim_side_finish(pid_t pid, int fd, ncclzSimResult *r) {
  side_report fr;
  int status;
  if (pid < 0) return NCCLZ_ERR_IO; /* sim_side_start set the error; no child to collect (waitpid(-1) would reap any) */
  size_t got = pipe_collect(pid, fd, &fr, sizeof fr, &status);
  if (got != sizeof fr) return ncclzSetError(NCCLZ_ERR_IO, "sim: a side replay failed (status %d)", status);
  if (fr.st != NCCLZ_OK) return ncclzSetError(fr.st, "%s", fr.err);
  *r = fr.r;
  return NCCLZ_OK;
}

/* Two replays of every step, the shorter (qa, ua) in a forked child beside the longer: *a and *b. */
ncclzStatus sim_run_side_by_side(const ncclzProfile *prof, const ncclzSimData *data, const ncclzSimPlatform *qa,
                                 const ncclzSimOptions *ua, const ncclzSimPlatform *qb, const ncclzSimOptions *ub,
                                 ncclzSimResult *a, ncclzSimResult *b) {
  int fd = -1;
  pid_t pid = sim_side_start(prof, data, qa, ua, SIM_SIDE_SCHEDULE, &fd);
  if (pid < 0) return NCCLZ_ERR_IO;
  ncclzStatus st = sim_run_once(prof, data, qb, ub, 0, 0, b), sa = sim_side_finish(pid, fd, a);
  return st != NCCLZ_OK ? st : sa;
}

/* The forced mode that codes every frame as a call's planned coder (FIXEDLEN or HUFFMAN). */
static ncclzSimCompress forced_as(int call_coder) {
  return call_coder == NCCLZ_CODER_HUFFMAN ? NCCLZ_SIM_HUFFMAN : NCCLZ_SIM_FIXEDLEN;
}

void sim_auto_as_planned(const ncclzProfile *prof, const ncclzSimData *data, const ncclzSimPlatform *p,
                         const ncclzSimOptions *o, ncclzSimOptions *u, uint32_t *chunks) {
  *u = *o;
  if (o->compress != NCCLZ_SIM_AUTO) return;
  sim_job j;
  sim_job_init(&j, prof, data, p, o, 0, 0);
  if (chunks) *chunks = j.nchunks;
  if (sim_plan_call(&j)) u->compress = NCCLZ_SIM_OFF; /* the call runs as plain NCCL */
  else if (j.call_coder >= 0) u->compress = forced_as(j.call_coder);
}

/* A point's replay: the reduced one that fits its collective, schedule and platform (rings and trees
 * extrapolated, Broadcast's chains and slices, Alltoall's shared NICs and mirrors, folds), else one
 * replay of every step. */
ncclzStatus sim_run_schedule(const ncclzProfile *prof, const ncclzSimData *data, const ncclzSimPlatform *p,
                             const ncclzSimOptions *opt, ncclzSimResult *res) {
  ncclzAlgorithm algo;
  uint32_t channels;
  sim_resolve(p, opt, &algo, &channels);
  if (algo == NCCLZ_ALGO_TREE && sim_check_inputs(prof, data, p, opt) == NCCLZ_OK) {
    if (sim_tree_extrapolates(p, opt)) return sim_run_tree_extrapolated(prof, data, p, opt, res);
    if (sim_tree_chunks_extrapolate(p, opt)) return sim_run_tree_in_chunks(prof, data, p, opt, res);
  }
  if (opt->coll == NCCLZ_BROADCAST && opt->compress == NCCLZ_SIM_AUTO && !opt->every_step &&
      sim_check_inputs(prof, data, p, opt) == NCCLZ_OK) {
    ncclzSimOptions u; /* the call as REA plans it */
    uint32_t chunks = 0;
    sim_auto_as_planned(prof, data, p, opt, &u, &chunks);
    /* plain NCCL: plain Broadcast's replay, with its extrapolations */
    if (u.compress == NCCLZ_SIM_OFF && sim_broadcast_slices(prof, data, p, &u)) return sim_run_schedule(prof, data, p, &u, res);
    /* else every frame takes the call's coder, planned here with all its frames: that coder's
     * replay, in auto's chunks */
    u.min_chunks = u.max_chunks = chunks;
    uint32_t k = u.compress == NCCLZ_SIM_FIXEDLEN || u.compress == NCCLZ_SIM_HUFFMAN ? sim_broadcast_slices(prof, data, p, &u) : 0;
    if (k) return sim_run_broadcast_slices(prof, data, p, &u, k, res);
  }
  if (opt->coll == NCCLZ_ALLTOALL && opt->compress == NCCLZ_SIM_AUTO && sim_check_inputs(prof, data, p, opt) == NCCLZ_OK) {
    ncclzSimOptions u; /* the call REA runs as plain NCCL: plain Alltoall's replay */
    sim_auto_as_planned(prof, data, p, opt, &u, NULL);
    if (u.compress == NCCLZ_SIM_OFF && sim_alltoall_scales(prof, data, p, &u)) return sim_run_alltoall_scaled(prof, data, p, &u, res);
  }
  if (sim_alltoall_scales(prof, data, p, opt)) return sim_run_alltoall_scaled(prof, data, p, opt, res);
  if (sim_alltoall_extrapolates(prof, data, p, opt)) return sim_run_alltoall_extrapolated(prof, data, p, opt, res);
  uint32_t slices = sim_check_inputs(prof, data, p, opt) == NCCLZ_OK ? sim_broadcast_slices(prof, data, p, opt) : 0;
  if (slices) return sim_run_broadcast_slices(prof, data, p, opt, slices, res);
  if (sim_broadcast_extrapolates(p, opt) && sim_check_inputs(prof, data, p, opt) == NCCLZ_OK)
    return sim_run_broadcast_extrapolated(prof, data, p, opt, res, NULL);
  if (sim_replays_folded(p, opt) && !opt->every_step && sim_check_inputs(prof, data, p, opt) == NCCLZ_OK)
    return sim_run_folded(prof, data, p, opt, res);
  char why[160];
  int reduced = ncclzSimChooseFidelity(p, opt, why, sizeof why) == NCCLZ_FID_REDUCED &&
                (opt->fidelity == NCCLZ_FID_AUTO || opt->fidelity == NCCLZ_FID_REDUCED);
  if (sim_rail_extrapolates(p, opt, algo, reduced || opt->fidelity == NCCLZ_FID_REDUCED))
    return sim_run_rail_extrapolated(prof, data, p, opt, res);
  if (sim_ring_extrapolates(p, opt, algo, reduced)) return sim_run_ring_extrapolated(prof, data, p, opt, res);
  return sim_run_once(prof, data, p, opt, 0, 0, res);
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
