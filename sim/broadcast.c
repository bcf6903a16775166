/* Broadcast's reduced replays: its chain from the root extrapolated in the ranks, and NCCL's
 * slices extrapolated in the slices a channel. */
#include "sim_internal.h"

#include <string.h>

/* The shorter chain a long Broadcast is extrapolated from has at least this many ranks and 3 nodes,
 * the longer twice its nodes: chains keep the lengths they were measured at. */
#define SIM_CHAIN_SHORT 128

/* A point's chunks a channel (sim_block_chunks of the buffer's channel share). */
static uint32_t point_chunks(const ncclzProfile *prof, const ncclzSimData *data, const ncclzSimPlatform *p,
                             const ncclzSimOptions *o) {
  ncclzAlgorithm a;
  uint32_t ch;
  sim_resolve(p, o, &a, &ch);
  size_t eb = data ? data->dtype_bytes : 4;
  return sim_block_chunks(prof, data, p, o, a, (double)(o->bytes / eb) * (double)eb / ch);
}

/* Broadcast's pipelined chain from the root on a symmetric platform: chunks move hop by hop, and
 * every G-th hop crosses the NICs, so the time is the pipeline's period times the chunks plus a fill
 * affine in the ranks. Chains of sim_base_nodes(G, SIM_CHAIN_SHORT) nodes and twice that (the same buffer
 * and chunks, the root at the same local index) are replayed in full and extrapolated. */
int sim_broadcast_extrapolates(const ncclzSimPlatform *p, const ncclzSimOptions *o) {
  int g = p->gpus_per_node, n = p->nodes * g;
  return o->coll == NCCLZ_BROADCAST && !o->every_step && o->fidelity != NCCLZ_FID_FULL && n >= SIM_EXTRAPOLATE_FROM &&
         p->placement == NCCLZ_PLACE_CONTIGUOUS &&
         (p->topology == NCCLZ_TOPO_NONBLOCKING || p->nodes <= p->nodes_per_leaf) &&
         p->nodes > 2 * sim_base_nodes(g, SIM_CHAIN_SHORT);
}

ncclzStatus sim_run_broadcast_extrapolated(const ncclzProfile *prof, const ncclzSimData *data,
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
  qa.nodes = sim_base_nodes(g, SIM_CHAIN_SHORT);
  q.nodes = 2 * qa.nodes;
  ncclzStatus st = sim_run_side_by_side(prof, data, &qa, &u, &q, &u, &a, &b);
  if (st != NCCLZ_OK) return st;
  if (shorter) *shorter = a;
  *res = b;
  sim_extrapolate(&a, &b, qa.nodes * g, q.nodes * g, n, res);
  res->nranks = n;
  res->wall_s = ncclzNowSeconds() - t0;
  uint32_t ch = sim_resolved_channels(p, o);
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
 * extrapolated the same way from 4 and 8 (auto's too, once sim_plan_call has fixed the call's coder with
 * all its frames: REA plans with the chunk count). */
#define SIM_BCAST_CODED 4

/* The slices (chunks) a channel of the replays that give the fill. */
static uint32_t broadcast_first(const ncclzSimOptions *o, uint32_t ch) {
  return o->compress != NCCLZ_SIM_OFF ? SIM_BCAST_CODED : ch > 1 ? SIM_BCAST_MULTI : SIM_BCAST_SLICES;
}
#define SIM_BCAST_PERIOD_NODES 8


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

ncclzStatus sim_run_broadcast_slices(const ncclzProfile *prof, const ncclzSimData *data, const ncclzSimPlatform *p,
                                     const ncclzSimOptions *o, uint32_t slices, ncclzSimResult *res) {
  uint32_t ch = sim_resolved_channels(p, o);
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
  int shared = short_chain && sim_base_nodes(p->gpus_per_node, SIM_CHAIN_SHORT) == SIM_BCAST_PERIOD_NODES &&
               sim_broadcast_extrapolates(p, &o1) && sim_check_inputs(prof, data, p, &o1) == NCCLZ_OK;
  int fd = -1, fd1 = -1;
  pid_t pid = sim_side_start(prof, data, &q, &v2, SIM_SIDE_SCHEDULE, &fd); /* the period's replays beside the fill's */
  pid_t pid1 = short_chain && !shared ? sim_side_start(prof, data, &q, &v1, SIM_SIDE_SCHEDULE, &fd1) : 0;
  ncclzStatus st = pid < 0 || pid1 < 0 ? NCCLZ_ERR_IO
                   : shared           ? sim_run_broadcast_extrapolated(prof, data, p, &o1, &r1, &a1)
                                      : sim_run_schedule(prof, data, p, &o1, &r1);
  ncclzStatus sa = sim_side_finish(pid, fd, &a2), s1 = pid1 > 0 ? sim_side_finish(pid1, fd1, &a1) : NCCLZ_OK;
  if (st != NCCLZ_OK) return st;
  if (sa != NCCLZ_OK) return sa;
  if (s1 != NCCLZ_OK) return s1;
  if (!short_chain) a1 = r1; /* the same chain: the same replay */
  *res = r1;
  /* a compressed call's interface is that of its whole buffer, not the pipeline's: out, then in */
  double b1 = (double)c1 * ch * per * eb, i1 = sim_iface_us(prof, p, o, b1), i2 = sim_iface_us(prof, p, o, 2 * b1);
  double period = (a2.time_us - i2 - (a1.time_us - i1)) / c1, more = (double)slices / c1;
  res->time_us = r1.time_us - i1 + ((double)slices - c1) * period + sim_iface_us(prof, p, o, (double)o->bytes);
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
 * uniform platform (as sim_broadcast_extrapolates), whole slices of at least one element, plain or a
 * forced coder (every frame alike; auto is replayed as the coder its call plans). */
uint32_t sim_broadcast_slices(const ncclzProfile *prof, const ncclzSimData *data, const ncclzSimPlatform *p,
                              const ncclzSimOptions *o) {
  if (o->coll != NCCLZ_BROADCAST || o->compress == NCCLZ_SIM_AUTO || o->every_step || o->fidelity == NCCLZ_FID_FULL ||
      p->placement != NCCLZ_PLACE_CONTIGUOUS || (p->topology != NCCLZ_TOPO_NONBLOCKING && p->nodes > p->nodes_per_leaf))
    return 0;
  uint32_t ch = sim_resolved_channels(p, o);
  size_t eb = data ? data->dtype_bytes : 4;
  uint32_t c = point_chunks(prof, data, p, o);
  uint32_t c1 = broadcast_first(o, ch);
  return c > 2 * c1 && o->bytes / eb / ch / c > 0 ? c : 0;
}
