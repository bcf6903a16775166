/* Which schedule a point runs when options.algorithm is auto: plain NCCL (compress off) runs
 * what NCCL's own tuner picks (schedule/tuner.c), ring or tree, with the platform's ring
 * bandwidth; its time is then our replay of that schedule, not NCCL's formula. */
#include "sim_internal.h"

#include <math.h>

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
