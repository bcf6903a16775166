/* Alltoall's reduced replays: two nodes whose NICs are shared as M - 1 flows' (every transfer at
 * once), or mirrors of a few nodes extrapolated in the ranks. */
#include "sim_internal.h"

#include <stdio.h>

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
int sim_alltoall_scales(const ncclzProfile *prof, const ncclzSimData *data, const ncclzSimPlatform *p,
                        const ncclzSimOptions *o) {
  if (o->coll != NCCLZ_ALLTOALL || o->compress != NCCLZ_SIM_OFF || o->comm_lanes || p->nodes < 3 ||
      sim_check_inputs(prof, data, p, o) != NCCLZ_OK)
    return 0;
  ncclzSimPlatform q = alltoall_contiguous(p);
  if (!sim_takes_reduced(&q, o)) return 0;
  sim_job j;
  sim_job_init(&j, prof, data, p, o, 1, 0);
  return j.nchunks <= (o->banks ? o->banks : 2); /* a peer's nchunks x channels chunks within its banks x channels */
}

/* Plain Alltoall posts every transfer at time 0 (sim_alltoall_scales): a GPU's M-1 transfers to the GPUs of
 * one local index on the other nodes have the same route, size, start and latency, so under max-min
 * sharing each of them moves at the rate that one flow gets on NICs of 1/(M-1) the bandwidth, where
 * every class of transfers on a NIC has one flow instead of M-1 (NVLink carries no inter-node
 * traffic). So the time is that of the same blocks' Alltoall on two nodes whose NICs have 1/(M-1) of
 * the bandwidth: exact, and 2G actors with 2G-1 transfers each at any size. */
ncclzStatus sim_run_alltoall_scaled(const ncclzProfile *prof, const ncclzSimData *data, const ncclzSimPlatform *p,
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
  sim_scale_totals(res, (double)n * (n - 1) / (2.0 * g * (2 * g - 1)));
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
int sim_alltoall_extrapolates(const ncclzProfile *prof, const ncclzSimData *data, const ncclzSimPlatform *p,
                              const ncclzSimOptions *o) {
  if (o->coll != NCCLZ_ALLTOALL || o->every_step || p->nodes * p->gpus_per_node < SIM_EXTRAPOLATE_FROM ||
      p->nodes <= 2 * sim_base_nodes(p->gpus_per_node, SIM_A2A_SHORT) || sim_check_inputs(prof, data, p, o) != NCCLZ_OK)
    return 0;
  return sim_takes_reduced(p, o);
}

/* Alltoall's steps past the first and last G are alike: every GPU sends a block to another node and
 * receives one, the destination's local index turning with the step, so with the same block, chunks
 * and coders each node more adds G such steps and the same time (encode-, decode- or NIC-bound alike:
 * 8, 16, 24 and 32 nodes add the same time to 1e-5 in both regimes). The mirrors of m1 (SIM_A2A_SHORT
 * ranks) and sim_longer_nodes(m1) nodes are replayed side by side and extrapolated in the ranks; frames and bytes are
 * the longer one's per transfer. Auto plans its call on the whole point (its vote weighs the call's
 * bytes and units) and the mirrors replay the coder it planned, as its frames take. */
ncclzStatus sim_run_alltoall_extrapolated(const ncclzProfile *prof, const ncclzSimData *data,
                                          const ncclzSimPlatform *p, const ncclzSimOptions *o, ncclzSimResult *res) {
  int g = p->gpus_per_node, n = p->nodes * g, m1 = sim_base_nodes(g, SIM_A2A_SHORT), m2 = sim_longer_nodes(m1);
  ncclzSimOptions u;
  sim_auto_as_planned(prof, data, p, o, &u, NULL);
  ncclzSimResult a, b;
  double t0 = ncclzNowSeconds();
  ncclzSimPlatform pc = alltoall_contiguous(p); /* the mirrors play the contiguous placement */
  ncclzStatus st = sim_run_rings_of(prof, data, &pc, &u, n, m1 * g, m2 * g, &a, &b);
  if (st != NCCLZ_OK) return st;
  int na = m1 * g, nb = m2 * g;
  *res = b;
  res->time_us = a.time_us + (double)(n - na) / (nb - na) * (b.time_us - a.time_us) +
                 sim_iface_us(prof, &pc, &u, (double)u.bytes); /* the call's own (sim_run_rings_of) */
  sim_scale_totals(res, (double)n * (n - 1) / ((double)nb * (nb - 1)));
  res->nranks = n;
  res->approximate = 1; /* held to the mirror of every node within 0.1% (docs/simulator.md) */
  res->wall_s = ncclzNowSeconds() - t0;
  snprintf(res->why, sizeof res->why,
           "reduced, approximate: %s alltoall, mirrors of %d and %d nodes (%d actors) replayed and "
           "extrapolated to %d ranks", p->placement != NCCLZ_PLACE_CONTIGUOUS ? "a contiguous placement's" : "symmetric",
           m1, m2, b.actors, n);
  return NCCLZ_OK;
}
