/* Which schedule a point runs when options.algorithm is auto.
 *
 * Plain NCCL (compress off): NCCL's own tuner picks ring or tree (its src/graph/tuning.cc,
 * ncclTopoTuneModel and ncclTopoGetAlgoTime; re-derived here, Simple protocol, the sizes ncclz
 * works at): a call of S bytes takes lat + S / bw, with
 *   ring: bw = busBw * N / nsteps,  lat = 8.4 + (nsteps - nInter) * 3.4 + nInter * 14 us
 *         (nsteps = 2(N-1) for AllReduce, N-1 for ReduceScatter/AllGather; nInter the same over
 *         nodes), x 1.9 for a multi-node AllReduce of S >= N/16 * 64 KiB (the ring's plateau);
 *   tree: bw = min(0.9 busBw, 80 GB/s (>2 nodes) or 110) / 2 x NCCL's correction for medium
 *         sizes, lat = 2 ((G-1) * 4 + log2(M) * 14) us (AllReduce only),
 * where busBw is the bandwidth of the ring's channels: the node's NICs together between nodes
 * (nvlink inside one node), and the lower wins. The time of the choice is then our replay of that
 * schedule, not NCCL's formula: the tuner only decides which one runs. */
#include "sim_internal.h"

#include <math.h>

/* NCCL's correction of the tree's bandwidth for medium sizes (Simple protocol), by log2(S / 64). */
static const double tree_correction[22] = {.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6,
                                           .5, .5, .5, .5, .5, .5, .6, .6, .7, .8, .9};

static double log2i(double x) { return x >= 1 ? floor(log2(x)) : 0; }

/* The bandwidth NCCL's ring channels reach (GB/s): the node's NICs between nodes, NVLink inside. */
static double ring_busbw(const ncclzSimPlatform *p) {
  double nic = p->rails * p->nic_gbps * p->bandwidth_factor, nv = p->nvlink_gbps * p->bandwidth_factor;
  return p->nodes > 1 ? fmin(nic, nv) : nv;
}

double ncclzSimNcclTimeUs(const ncclzSimPlatform *p, ncclzCollective coll, uint64_t bytes, ncclzAlgorithm a) {
  int n = p->nodes * p->gpus_per_node, m = p->nodes, g = p->gpus_per_node;
  if (n <= 1) return 0.0;
  double busbw = ring_busbw(p), S = (double)bytes;
  if (a == NCCLZ_ALGO_TREE) {
    if (coll != NCCLZ_ALLREDUCE) return INFINITY;
    double bw = fmin(0.9 * busbw, m > 2 ? 80.0 : 110.0) * 0.5;
    int ls = (int)log2i(S / 64.0);
    if (ls < 22) bw *= tree_correction[ls];
    double lat = 2.0 * ((g - 1) * 4.0 + log2i(m) * 14.0);
    return lat + S / (1e3 * bw);
  }
  double nsteps = coll == NCCLZ_ALLREDUCE ? 2.0 * (n - 1) : n - 1.0;
  double ninter = coll == NCCLZ_ALLREDUCE ? 2.0 * (m - 1) : m - 1.0;
  double lat = 8.4 + (nsteps - ninter) * 3.4 + ninter * 14.0;
  if (m > 1 && coll == NCCLZ_ALLREDUCE && S >= n / 16.0 * 65536.0) lat *= 1.9;
  return lat + S / (1e3 * busbw * n / nsteps);
}

ncclzAlgorithm ncclzSimNcclAlgorithm(const ncclzSimPlatform *p, ncclzCollective coll, uint64_t bytes) {
  if (coll != NCCLZ_ALLREDUCE || p->nodes * p->gpus_per_node <= 1) return NCCLZ_ALGO_RING;
  return ncclzSimNcclTimeUs(p, coll, bytes, NCCLZ_ALGO_TREE) < ncclzSimNcclTimeUs(p, coll, bytes, NCCLZ_ALGO_RING)
             ? NCCLZ_ALGO_TREE
             : NCCLZ_ALGO_RING;
}

ncclzAlgorithm sim_auto_algorithm(const ncclzSimPlatform *p, const ncclzSimOptions *o) {
  return ncclzSimNcclAlgorithm(p, o->coll, o->bytes);
}

ncclzStatus ncclzSimRunBest(const ncclzProfile *prof, const ncclzSimData *data, const ncclzSimPlatform *p,
                            const ncclzSimOptions *opt, ncclzSimResult *res) {
  ncclzStatus first = NCCLZ_ERR_ARG;
  int found = 0;
  double wall = 0.0;
  for (int a = NCCLZ_ALGO_RING; a < NCCLZ_ALGO_COUNT; a++) {
    ncclzSimOptions o = *opt;
    o.algorithm = (ncclzAlgorithm)a;
    ncclzScheduleSpec sp;
    char why[200];
    sim_spec(p, &o, 1, &sp);
    if (ncclzScheduleCheck(&sp, why, sizeof why)) continue;
    ncclzSimResult r;
    ncclzStatus st = ncclzSimRun(prof, data, p, &o, &r);
    if (st != NCCLZ_OK) {
      if (!found) first = st;
      continue;
    }
    wall += r.wall_s;
    if (!found || r.time_us < res->time_us) *res = r;
    found = 1;
  }
  if (!found) return first == NCCLZ_ERR_ARG ? ncclzSetError(NCCLZ_ERR_ARG, "%s", ncclzLastError()) : first;
  if (opt->compress == NCCLZ_SIM_AUTO) { /* auto may also leave the call uncompressed */
    ncclzSimOptions plain = *opt;
    ncclzSimResult r;
    plain.compress = NCCLZ_SIM_OFF;
    if (ncclzSimRunBest(prof, data, p, &plain, &r) == NCCLZ_OK) {
      wall += r.wall_s;
      if (r.time_us < res->time_us) *res = r;
    }
  }
  res->wall_s = wall;
  return NCCLZ_OK;
}
