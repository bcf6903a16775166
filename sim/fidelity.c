/* The fidelity of a point: whether its schedule is the same on every rank up to a relabeling (so
 * that a few actors stand for all), which replay auto takes, and the sentence that says why. */
#include "sim_internal.h"

#include <stdio.h>

static int pow2(int x) { return x > 0 && (x & (x - 1)) == 0; }

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
 * reaches over NVLink, moves the time: plain with every transfer at once is exact, sim_run_alltoall_scaled).
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
int sim_mirrored(ncclzCollective c, ncclzAlgorithm a, uint32_t channels) {
  return c == NCCLZ_ALLTOALL || a != NCCLZ_ALGO_RING || channels > 1;
}

/* Auto's fidelity: the full replay up to full_max_ranks wherever the reduced one is not exact, the
 * reduced one where the schedule is symmetric, folds above full_max_ranks by sim_run_folded (one replay,
 * single, of a fold is a full one). */
sim_class sim_classify(const ncclzSimPlatform *p, const ncclzSimOptions *o, int single) {
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
 * extrapolated from smaller full replays of the same fold (sim_run_folded). */
int sim_replays_folded(const ncclzSimPlatform *p, const ncclzSimOptions *o) {
  sim_class c = sim_classify(p, o, 0);
  return c.sym == SIM_FOLDS &&
         (o->fidelity == NCCLZ_FID_REDUCED || (o->fidelity == NCCLZ_FID_AUTO && c.fidelity == NCCLZ_FID_REDUCED));
}

/* Hier's GPUs run alike where no block permutation tells them apart (every local index's stages
 * mirror the others'): one actor a node plays them all (sim_job.collapse) where the platform allows
 * (sim_collapses). A fold's core splits its permutation per GPU (fold_core); the two-node mirror
 * collapses AllReduce only. */
int sim_collapsed(const ncclzSimPlatform *p, const ncclzSimOptions *o, ncclzAlgorithm a, int fold_core) {
  return a == NCCLZ_ALGO_HIER && sim_collapses(p) && (fold_core || o->coll == NCCLZ_ALLREDUCE);
}

/* The sentence that says why a class takes its fidelity (display only). */
void sim_class_why(const ncclzSimPlatform *p, const ncclzSimOptions *o, const sim_class *c, char *why, size_t cap) {
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
  else if (sim_mirrored(o->coll, a, ch))
    snprintf(why, cap, "reduced%s%s%s: symmetric %s, %d actors on two nodes stand for %d ranks%s",
             c->approximate ? ", approximate (" : "", c->approximate ? c->reason : "", c->approximate ? ")" : "",
             o->coll == NCCLZ_ALLTOALL ? "alltoall" : ncclzAlgorithmName(a),
             sim_collapsed(p, o, a, 0) ? 2 : 2 * p->gpus_per_node, n,
             sim_collapsed(p, o, a, 0) ? " (one a node: its GPUs run alike)" : "");
  else
    snprintf(why, cap, "reduced: symmetric ring, %d actors stand for %d ranks", p->gpus_per_node > 1 ? p->gpus_per_node : 2,
             n);
}

ncclzSimFidelity ncclzSimChooseFidelity(const ncclzSimPlatform *p, const ncclzSimOptions *o, char *why, size_t cap) {
  sim_class c = sim_classify(p, o, 0);
  sim_class_why(p, o, &c, why, cap);
  return c.fidelity;
}

/* 1 where the reduced replay is taken: a symmetric platform, and auto's choice or asked for. */
int sim_takes_reduced(const ncclzSimPlatform *p, const ncclzSimOptions *o) {
  sim_class c = sim_classify(p, o, 0);
  return c.sym == SIM_SYMMETRIC &&
         (o->fidelity == NCCLZ_FID_REDUCED || (o->fidelity == NCCLZ_FID_AUTO && c.fidelity == NCCLZ_FID_REDUCED));
}
