/* Which schedule a point runs when options.algorithm is auto: plain NCCL (compress off) runs
 * what NCCL's own tuner picks (schedule/tuner.c), ring or tree, with the platform's ring
 * bandwidth; its time is then our replay of that schedule, not NCCL's formula. With compress
 * auto the cost model of model/ (ncclzChoose) picks the (algorithm, coder) pair, as the
 * executor's auto does; a forced coder keeps the fastest replayed schedule (the oracle). */
#include "sim_internal.h"

#include <math.h>
#include <string.h>

/* The bandwidth NCCL's ring channels reach (GB/s): the node's NICs between nodes, NVLink inside. */
static double ring_busbw(const ncclzSimPlatform *p) {
  double nic = p->rails * p->nic_gbps * p->bandwidth_factor, nv = p->nvlink_gbps * p->bandwidth_factor;
  return p->nodes > 1 ? fmin(nic, nv) : nv;
}

double ncclzSimNcclTimeUs(const ncclzSimPlatform *p, ncclzCollective coll, uint64_t bytes, ncclzAlgorithm a) {
  return ncclzTunerTimeUs(coll, p->nodes, p->gpus_per_node, ring_busbw(p), bytes, a);
}

ncclzAlgorithm ncclzSimNcclAlgorithm(const ncclzSimPlatform *p, ncclzCollective coll, uint64_t bytes) {
  return ncclzTunerChoose(coll, p->nodes, p->gpus_per_node, ring_busbw(p), bytes);
}

ncclzAlgorithm sim_auto_algorithm(const ncclzSimPlatform *p, const ncclzSimOptions *o) {
  return ncclzSimNcclAlgorithm(p, o->coll, o->bytes);
}

/* 1: a compressed (auto) replay that REA ran as plain NCCL: it sent no frames. */
static int ran_plain(const ncclzSimOptions *o, const ncclzSimResult *r) {
  return o->compress != NCCLZ_SIM_OFF && ncclzSimFramesSent(r) == 0;
}

/* A schedule the cost model prices at this many times the fastest one's is not replayed by the
 * oracle: a forced coder's model is within 0.81-1.10 of the replay over the scale grids
 * (docs/simulator.md), so one priced 1.10 / 0.81 = 1.36 times the fastest or more cannot win (the
 * margin keeps room above that), and at 8192 ranks a compressed ring, or a flat rhd's fold core,
 * alone takes longer to replay than 1 s. */
#define SIM_ORACLE_MARGIN 1.55

static uint32_t replayable(const ncclzSimPlatform *p, const ncclzSimOptions *opt);

/* A schedule the cost model prices at this many times a time already replayed for the point is
 * not replayed: over the grids (AllReduce, AllGather and ReduceScatter; 8 to 1024 nodes of 8 on
 * one rail and on eight; docs/simulator.md "The oracle") the model prices a schedule at most 9.6%
 * over its replay (hier; the tree 8.4%, rhd 7.6%, the ring 0.7%), so such a schedule cannot
 * replay faster (the margin keeps room above that). The oracle replays the cheapest-priced
 * schedule first for this: at 8,184 ranks on 8 rails the coded tree's replay rules out hier's
 * fold core so. */
#define SIM_MODEL_MOST_OVER 1.2

/* The model's time of every schedule in mask (us[a]; 0 for the others). Returns 0 where one of them
 * has none (the oracle then replays all: where a transfer's own cap, nic_flow_gbps, shares the NIC,
 * as on the 2-rank socket path's shape, the model prices HUFFMAN's tree at 1.93 times its replay
 * and its ring at 0.77 times). */
static int priced(const ncclzProfile *prof, const ncclzSimData *data, const ncclzSimPlatform *p,
                  const ncclzSimOptions *opt, uint32_t mask, double *us) {
  for (int a = 0; a < NCCLZ_ALGO_COUNT; a++) us[a] = 0.0;
  if (p->nic_flow_gbps > 0.0) return 0;
  for (int a = NCCLZ_ALGO_RING; a < NCCLZ_ALGO_COUNT; a++)
    if ((mask >> a & 1u) && (us[a] = sim_predicted_us(prof, data, p, opt, (ncclzAlgorithm)a)) <= 0.0) return 0;
  return 1;
}

/* The schedules whose replay the oracle runs: every replayable one but those priced at
 * SIM_ORACLE_MARGIN times the fastest or more (all of them where priced() has no prices). */
static uint32_t worth_replaying(const double *us, uint32_t mask) {
  double least = 0.0;
  for (int a = NCCLZ_ALGO_RING; a < NCCLZ_ALGO_COUNT; a++)
    if ((mask >> a & 1u) && (least <= 0.0 || us[a] < least)) least = us[a];
  for (int a = NCCLZ_ALGO_RING; a < NCCLZ_ALGO_COUNT; a++)
    if (least > 0.0 && us[a] >= SIM_ORACLE_MARGIN * least) mask &= ~(1u << a);
  return mask;
}

/* Orders runs[0 .. n) by the model's price, cheapest first (n <= NCCLZ_ALGO_COUNT). */
static void by_price(int *runs, int n, const double *us) {
  for (int i = 1; i < n; i++)
    for (int j = i; j > 0 && us[runs[j]] < us[runs[j - 1]]; j--) {
      int t = runs[j];
      runs[j] = runs[j - 1];
      runs[j - 1] = t;
    }
}

/* One replay in this process; a plain one's time adds to *wall (0 where the memo had it). */
static ncclzStatus run_here(const ncclzProfile *prof, const ncclzSimData *data, const ncclzSimPlatform *p,
                            const ncclzSimOptions *o, int side, double *wall, ncclzSimResult *r) {
  ncclzStatus st = ncclzSimRun(prof, data, p, o, r);
  if (!side && st == NCCLZ_OK) *wall += r->wall_s;
  return st;
}

/* The fastest of the schedules in mask that serve the options' collective, each replayed once; an
 * entry of as_plain with time_us > 0 is that algorithm's plain replay already made (*res untouched
 * when none runs; returns the first error then). as_plain_out, when not NULL, keeps the replays
 * that ran as plain NCCL. us: the model's prices (NULL: none), by which the cheapest-priced
 * schedule replays first and rules out those priced SIM_MODEL_MOST_OVER times its time or more.
 * The rest of the coded replays run side by side, all but the last in forked children (a plain
 * one stays in this process, whose memo keeps it); *wall grows by the time they took. */
static ncclzStatus run_best_in(const ncclzProfile *prof, const ncclzSimData *data, const ncclzSimPlatform *p,
                               const ncclzSimOptions *opt, uint32_t mask, const double *us,
                               const ncclzSimResult *as_plain, ncclzSimResult *as_plain_out, double *wall,
                               ncclzSimResult *res) {
  ncclzSimOptions o[NCCLZ_ALGO_COUNT];
  ncclzSimResult r[NCCLZ_ALGO_COUNT];
  ncclzStatus st[NCCLZ_ALGO_COUNT];
  pid_t pid[NCCLZ_ALGO_COUNT];
  int fd[NCCLZ_ALGO_COUNT], runs[NCCLZ_ALGO_COUNT], nrun = 0, serves[NCCLZ_ALGO_COUNT] = {0};
  double best = 0.0; /* the fastest time replayed so far (0: none) */
  for (int a = NCCLZ_ALGO_RING; a < NCCLZ_ALGO_COUNT; a++) {
    ncclzScheduleSpec sp;
    char why[200];
    o[a] = *opt;
    o[a].algorithm = (ncclzAlgorithm)a;
    st[a] = NCCLZ_ERR_ARG;
    pid[a] = 0;
    sim_spec(p, &o[a], 1, &sp);
    if (!(mask >> a & 1u) || ncclzScheduleCheck(&sp, why, sizeof why)) continue;
    serves[a] = 1;
    st[a] = NCCLZ_OK;
    if (as_plain && as_plain[a].time_us > 0) { /* the same replay, made already */
      r[a] = as_plain[a];
      best = best > 0.0 && best < r[a].time_us ? best : r[a].time_us;
    } else {
      runs[nrun++] = a;
    }
  }
  double t0 = ncclzNowSeconds();
  int side = opt->compress != NCCLZ_SIM_OFF, first = 0;
  if (us && nrun > 1) {
    by_price(runs, nrun, us);
    if (best <= 0.0) { /* the cheapest-priced alone, to rule the others out */
      int a = runs[first++];
      if ((st[a] = run_here(prof, data, p, &o[a], side, wall, &r[a])) == NCCLZ_OK) best = r[a].time_us;
    }
    for (int i = first; i < nrun; i++)
      if (best > 0.0 && us[runs[i]] >= SIM_MODEL_MOST_OVER * best) serves[runs[i]] = 0;
  }
  int left[NCCLZ_ALGO_COUNT], nleft = 0;
  for (int i = first; i < nrun; i++)
    if (serves[runs[i]]) left[nleft++] = runs[i];
  for (int i = 0; i < nleft; i++) {
    int a = left[i];
    if (side && i + 1 < nleft) pid[a] = sim_side_start(prof, data, p, &o[a], SIM_SIDE_POINT, &fd[a]);
    else st[a] = run_here(prof, data, p, &o[a], side, wall, &r[a]);
  }
  for (int i = 0; side && i + 1 < nleft; i++) st[left[i]] = sim_side_finish(pid[left[i]], fd[left[i]], &r[left[i]]);
  if (side) *wall += ncclzNowSeconds() - t0;
  ncclzStatus failure = NCCLZ_ERR_ARG;
  int found = 0, failed = 0;
  for (int a = NCCLZ_ALGO_RING; a < NCCLZ_ALGO_COUNT; a++) {
    if (!serves[a]) continue;
    if (st[a] != NCCLZ_OK) {
      if (!failed++) failure = st[a];
      continue;
    }
    if (as_plain_out && ran_plain(&o[a], &r[a])) as_plain_out[a] = r[a];
    if (!found || r[a].time_us < res->time_us) *res = r[a];
    found = 1;
  }
  return found ? NCCLZ_OK : failure;
}

/* The oracle: the fastest of the schedules worth replaying, else (none of them ran) of all. */
static ncclzStatus run_best_of(const ncclzProfile *prof, const ncclzSimData *data, const ncclzSimPlatform *p,
                               const ncclzSimOptions *opt, const ncclzSimResult *as_plain, ncclzSimResult *as_plain_out,
                               double *wall, ncclzSimResult *res) {
  double us[NCCLZ_ALGO_COUNT];
  uint32_t all = replayable(p, opt);
  int have = priced(prof, data, p, opt, all, us);
  uint32_t worth = have ? worth_replaying(us, all) : all;
  ncclzStatus st = run_best_in(prof, data, p, opt, worth, have ? us : NULL, as_plain, as_plain_out, wall, res);
  if (st == NCCLZ_OK) return st;
  return run_best_in(prof, data, p, opt, ~worth, NULL, as_plain, as_plain_out, wall, res);
}

ncclzStatus ncclzSimRunBest(const ncclzProfile *prof, const ncclzSimData *data, const ncclzSimPlatform *p,
                            const ncclzSimOptions *opt, ncclzSimResult *res) {
  ncclzSimResult as_plain[NCCLZ_ALGO_COUNT];
  memset(as_plain, 0, sizeof as_plain);
  double wall = 0.0;
  ncclzStatus st = run_best_of(prof, data, p, opt, NULL, as_plain, &wall, res);
  if (st != NCCLZ_OK) return st == NCCLZ_ERR_ARG ? ncclzSetError(NCCLZ_ERR_ARG, "%s", ncclzLastError()) : st;
  if (opt->compress == NCCLZ_SIM_AUTO) { /* auto may also leave the call uncompressed */
    ncclzSimOptions plain = *opt;
    ncclzSimResult r;
    plain.compress = NCCLZ_SIM_OFF;
    if (run_best_of(prof, data, p, &plain, as_plain, NULL, &wall, &r) == NCCLZ_OK && r.time_us < res->time_us) *res = r;
  }
  res->wall_s = wall;
  return NCCLZ_OK;
}

/* The platform, data and chunking of a point as the cost model takes them. */
static void choice_input(const ncclzSimData *data, const ncclzSimPlatform *p, const ncclzSimOptions *o,
                         ncclzChoiceInput *in) {
  memset(in, 0, sizeof *in);
  in->coll = o->coll;
  in->bytes = o->bytes;
  in->nodes = p->nodes;
  in->gpus_per_node = p->gpus_per_node;
  in->rails = p->rails;
  in->channels = o->channels;
  in->nvlink_alpha_us = p->nvlink_latency_us;
  in->nvlink_gbps = p->nvlink_gbps * p->bandwidth_factor;
  in->nic_alpha_us = p->nic_latency_us;
  in->nic_gbps = p->nic_gbps * p->bandwidth_factor;
  in->nic_flow_gbps = p->nic_flow_gbps * p->bandwidth_factor;
  in->data_class = data ? (int)data->data_class : NCCLZ_CLASS_DEFAULT;
  in->cr_ranks = data ? (data->n_ranks < NCCLZ_CHOICE_MAX_K ? data->n_ranks : NCCLZ_CHOICE_MAX_K) : 0;
  for (int c = 0; c < NCCLZ_CODER_COUNT; c++)
    for (uint32_t k = 0; k < in->cr_ranks; k++) in->cr[c][k] = data->cr[c][k];
  in->chunk_bytes = o->chunk_bytes;
  in->min_chunks = o->min_chunks;
  in->max_chunks = o->max_chunks;
}

/* The algorithms whose replay runs this point: the schedule serves it, and the replay fits (a
 * full replay within full_max_ranks; trees over 64 nodes extrapolate). */
static uint32_t replayable(const ncclzSimPlatform *p, const ncclzSimOptions *opt) {
  uint32_t mask = 0;
  int n = p->nodes * p->gpus_per_node, cap = opt->full_max_ranks ? opt->full_max_ranks : 4096;
  for (int a = NCCLZ_ALGO_RING; a < NCCLZ_ALGO_COUNT; a++) {
    ncclzSimOptions o = *opt;
    ncclzScheduleSpec sp;
    char why[200];
    o.algorithm = (ncclzAlgorithm)a;
    sim_spec(p, &o, 1, &sp);
    if (ncclzScheduleCheck(&sp, why, sizeof why)) continue;
    int tree_x = a == NCCLZ_ALGO_TREE && p->nodes > 64 && p->placement == NCCLZ_PLACE_CONTIGUOUS &&
                 p->topology == NCCLZ_TOPO_NONBLOCKING;
    int chain_x = o.coll == NCCLZ_BROADCAST; /* its chains extrapolate, or the replay says why not */
    if (!tree_x && !chain_x && n > cap && ncclzSimChooseFidelity(p, &o, why, sizeof why) == NCCLZ_FID_FULL) continue;
    mask |= 1u << a;
  }
  return mask;
}

ncclzStatus ncclzSimChoose(const ncclzProfile *prof, const ncclzSimData *data, const ncclzSimPlatform *p,
                           const ncclzSimOptions *opt, ncclzChoice *out) {
  ncclzChoiceInput in;
  choice_input(data, p, opt, &in);
  in.algorithms = opt->algorithm == NCCLZ_ALGO_AUTO ? replayable(p, opt) : 1u << opt->algorithm;
  if (!in.algorithms) return ncclzSetError(NCCLZ_ERR_ARG, "options.algorithm: no schedule's replay runs this point");
  return ncclzChoose(prof, &in, out);
}

/* The model's coder for a replay's compress mode (-1: none, forced RAW frames). */
static int choice_coder_of(ncclzSimCompress c) {
  switch (c) {
  case NCCLZ_SIM_OFF: return NCCLZ_CHOICE_PLAIN;
  case NCCLZ_SIM_FIXEDLEN: return NCCLZ_CHOICE_FIXEDLEN;
  case NCCLZ_SIM_HUFFMAN: return NCCLZ_CHOICE_HUFFMAN;
  case NCCLZ_SIM_AUTO: return NCCLZ_CHOICE_REA;
  default: return -1;
  }
}

static const ncclzSimCompress compress_of_choice[NCCLZ_CHOICE_CODERS] = {NCCLZ_SIM_OFF, NCCLZ_SIM_FIXEDLEN,
                                                                          NCCLZ_SIM_HUFFMAN, NCCLZ_SIM_AUTO};

uint32_t sim_chain_chunks(const ncclzProfile *prof, const ncclzSimData *data, const ncclzSimPlatform *p,
                          const ncclzSimOptions *o, double range) {
  ncclzChoiceInput in;
  choice_input(data, p, o, &in);
  in.cr_ranks = 0;
  in.channels = in.channels ? in.channels : (uint32_t)p->rails;
  int c = choice_coder_of(o->compress);
  return ncclzChainChunks(prof, &in, range, c < 0 ? NCCLZ_CHOICE_PLAIN : (ncclzChoiceCoder)c);
}

double sim_predicted_us(const ncclzProfile *prof, const ncclzSimData *data, const ncclzSimPlatform *p,
                        const ncclzSimOptions *o, ncclzAlgorithm a) {
  int c = choice_coder_of(o->compress);
  if (c < 0 || (c != NCCLZ_CHOICE_PLAIN && !prof)) return 0.0;
  ncclzChoiceInput in;
  choice_input(data, p, o, &in);
  double t = ncclzChoicePairUs(prof, &in, a, (ncclzChoiceCoder)c);
  return t < NCCLZ_CHOICE_NO_TIME ? t : 0.0;
}

ncclzStatus sim_run_choice(const ncclzProfile *prof, const ncclzSimData *data, const ncclzSimPlatform *p,
                           const ncclzSimOptions *opt, ncclzSimResult *res) {
  ncclzChoice ch;
  ncclzStatus st = ncclzSimChoose(prof, data, p, opt, &ch);
  if (st != NCCLZ_OK) return st;
  ncclzSimOptions o = *opt;
  o.algorithm = ch.algorithm;
  o.compress = compress_of_choice[ch.coder];
  st = ncclzSimRun(prof, data, p, &o, res);
  if (st != NCCLZ_OK) return st;
  res->predicted_us = ch.time_us;
  res->choice = (int)ch.coder;
  return NCCLZ_OK;
}
