/* NCCL's tuner, re-derived (its src/graph/tuning.cc: ncclTopoTuneModel and ncclTopoGetAlgoTime,
 * Simple protocol, the sizes ncclz works at): the choice plain NCCL makes between its ring and its
 * tree, which the simulator's plain baseline and the executor's auto algorithm both take.
 * A call of S bytes takes lat + S / bw, with
 *   ring: bw = busBw * N / nsteps,  lat = 8.4 + (nsteps - nInter) * 3.4 + nInter * 14 us
 *         (nsteps = 2(N-1) for AllReduce, N-1 for ReduceScatter/AllGather; nInter the same over
 *         nodes), x 1.9 for a multi-node AllReduce of S >= N/16 * 64 KiB (the ring's plateau);
 *   tree: bw = min(0.9 busBw, 80 GB/s (>2 nodes) or 110) / 2 x NCCL's correction for medium
 *         sizes, lat = 2 ((G-1) * 4 + log2(M) * 14) us (AllReduce only);
 * busBw is the bandwidth of the ring's channels (the caller's: the node's NICs together between
 * nodes, NVLink inside one), and the lower time wins. */
#include "ncclz/schedule.h"

#include <math.h>

/* NCCL's correction of the tree's bandwidth for medium sizes (Simple protocol), by log2(S / 64). */
static const double tree_correction[22] = {.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6,
                                           .5, .5, .5, .5, .5, .5, .6, .6, .7, .8, .9};

static double log2i(double x) { return x >= 1 ? floor(log2(x)) : 0; }

double ncclzTunerTimeUs(ncclzCollective coll, int nodes, int gpus_per_node, double busbw_gbps, uint64_t bytes,
                        ncclzAlgorithm a) {
  int n = nodes * gpus_per_node, m = nodes, g = gpus_per_node;
  if (n <= 1 || !(busbw_gbps > 0)) return 0.0;
  double S = (double)bytes;
  if (a == NCCLZ_ALGO_TREE) {
    if (coll != NCCLZ_ALLREDUCE) return INFINITY;
    double bw = fmin(0.9 * busbw_gbps, m > 2 ? 80.0 : 110.0) * 0.5;
    int ls = (int)log2i(S / 64.0);
    if (ls < 22) bw *= tree_correction[ls];
    double lat = 2.0 * ((g - 1) * 4.0 + log2i(m) * 14.0);
    return lat + S / (1e3 * bw);
  }
  if (a != NCCLZ_ALGO_RING) return INFINITY;
  double nsteps = coll == NCCLZ_ALLREDUCE ? 2.0 * (n - 1) : n - 1.0;
  double ninter = coll == NCCLZ_ALLREDUCE ? 2.0 * (m - 1) : m - 1.0;
  double lat = 8.4 + (nsteps - ninter) * 3.4 + ninter * 14.0;
  if (m > 1 && coll == NCCLZ_ALLREDUCE && S >= n / 16.0 * 65536.0) lat *= 1.9;
  return lat + S / (1e3 * busbw_gbps * n / nsteps);
}

ncclzAlgorithm ncclzTunerChoose(ncclzCollective coll, int nodes, int gpus_per_node, double busbw_gbps, uint64_t bytes) {
  if (coll != NCCLZ_ALLREDUCE || nodes * gpus_per_node <= 1) return NCCLZ_ALGO_RING;
  return ncclzTunerTimeUs(coll, nodes, gpus_per_node, busbw_gbps, bytes, NCCLZ_ALGO_TREE) <
                 ncclzTunerTimeUs(coll, nodes, gpus_per_node, busbw_gbps, bytes, NCCLZ_ALGO_RING)
             ? NCCLZ_ALGO_TREE
             : NCCLZ_ALGO_RING;
}
