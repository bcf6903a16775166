/* Internals of the simulator layer, shared by the sim/ sources only. */
#ifndef NCCLZ_SIM_INTERNAL_H
#define NCCLZ_SIM_INTERNAL_H

#include "ncclz/sim.h"

#include <stdio.h>
#include <sys/types.h>

#include <simgrid/forward.h> /* sg_comm_t */

/* The platform a replay actually runs on: the scenario's, or the one-node slice of it that the
 * reduced replay uses, where the ring's wrap-around hop (last GPU to GPU 0) is routed through
 * the NICs (loop), so that it stands for the hop to the next node. Actor a runs on node
 * node_of[a], GPU gpu_of[a]. */
typedef struct {
  ncclzSimPlatform p;
  int loop;
  int collapse; /* 0, or the GPUs of a node one actor plays (sim_job.collapse): one host a node, whose
                   NICs carry that many GPUs' flows as one (bandwidth x rails / collapse) */
  int fold;     /* 0, or C: only channel 0 of C rotated channels runs (sim_job.fold), so a node's links
                   merge into one per orbit of the rotation, each with its orbit's share of C */
  int nactors;
  int *node_of, *gpu_of;
} sim_layout;

/* Writes the SimGrid platform XML of a layout (all p.nodes x p.gpus_per_node hosts, named
 * n<node>g<gpu>). */
int sim_platform_write(FILE *f, const sim_layout *lay);
void sim_host_name(char *buf, size_t cap, int node, int gpu);
/* Waits for a transfer and releases it; returns the simulated time it landed (comm_landed.cpp). */
double sim_comm_wait_landed(sg_comm_t comm);

/* Per-hop facts a sender needs: the REA transport hint and the nominal path of the hop. */
typedef struct {
  ncclzTransportHint hint;
  double alpha_us, beta_gbps;
} sim_hop;
sim_hop sim_hop_between(const ncclzSimPlatform *p, int node_a, int node_b);
/* The hop from actor a to actor b of a layout (the loop's wrap-around hop is a NIC hop). */
sim_hop sim_hop_actors(const sim_layout *lay, int a, int b);

/* Everything one replay needs; shared read-only by all actors. */
typedef struct {
  const ncclzProfile *prof;
  const ncclzSimData *data;
  const ncclzSimOptions *opt;
  sim_layout lay;
  int nranks;          /* logical ranks of the schedule */
  int reduced;         /* actors stand for nranks: peers are remapped (ring offset, or mirror) */
  int mirror;          /* reduced on two nodes: a peer on another node is played by the actor of
                          its local index on the other simulated node (symmetric schedules) */
  int rep_node[2];     /* mirror: the nodes whose ranks the two simulated nodes play ({0, 1};
                          hier ReduceScatter/AllGather: two typical nodes, sim_hier_typical_nodes) */
  ncclzScheduleSpec spec; /* the schedule every actor builds (its logical rank's list) */
  uint32_t nchunks;
  uint64_t frame_bytes; /* the profile's frame_bytes: the default chunk (a chunk is one frame) */
  size_t count;         /* elements, as ncclzScheduleRange takes them */
  size_t elem_bytes;    /* raw bytes per element */
  ncclzReaConfig cfg[NCCLZ_HINT_COUNT];
  int per_hop;          /* REA plans each frame for its own hop, else for `hop` */
  int call_coder;       /* auto on one hop: the coder of the call's decision, which the executor
                           encodes every frame with (-1: REA plans each frame) */
  sim_hop hop;          /* the communicator's hint and its link */
  double unit_us;       /* the host's time per pipeline unit (profile interface unit_us; HEADER only) */
  int collapse;         /* 0, or G: actor v plays all G GPUs of node v, which run alike (hier's folds: each
                           local index's stages mirror the others'), as GPU 0; hier's block permutation,
                           where they differ, is every GPU's own transfer at 1/G of its bytes (sim_collapse_*) */
  int fold;             /* 0, or C: the plain tree's C channels are channel 0 rotated by G/C local GPUs,
                           and the platform turns with them, so channel 0 alone on the quotient platform
                           (sim_layout.fold) runs as each channel of the full replay (run.c channel_fold) */
  int rail_head, rail_tail; /* hier's ring between nodes: each rail ring stage keeps its first rail_head
                               and last rail_tail steps (0: every step; sim_drop_rail_steps) */
} sim_job;

/* Per-actor counters that the replay returns. */
typedef struct {
  double end_s;
  int finished;         /* the actor reached the end of its op list */
  uint64_t frames[NCCLZ_CODER_COUNT];
  double wire_bytes, raw_bytes;
} sim_actor_stats;

/* Actors per rank: the channels that progress on their own (the tree's two a channel, Broadcast's
 * chains, else 1; channel 0's two trees where the job folds its channels). */
int sim_channels(const sim_job *j);

/* The logical rank actor a plays (the mirror: rank (rep_node[side], local index)). */
int sim_actor_rank(const sim_job *j, int a);
/* Two nodes of m (g GPUs each) whose every GPU sends one block of hier's ReduceScatter/AllGather
 * permutation to another node and receives one from another node, into rep[]: 0, or -1 when
 * there are not two such nodes or one rank in 64 or more is not like them (then the reduced
 * replay, which plays only such ranks, is not within 0.1% of the full one). */
int sim_hier_typical_nodes(int m, int g, int rep[2]);
/* Actor a's list for channel k of its rank's list `whole` (actor_list.c): the channel's share,
 * reduced as the job's replay asks (rail_head, collapse); *origin: with collapse, the GPU each op
 * of the merged list came from (-1: the typical GPU's), else NULL. Returns 0 or -1 (out of memory). */
int sim_actor_list(const sim_job *j, int a, int k, const ncclzSchedule *whole, ncclzSchedule *s, int16_t **origin);

/* 1 when one actor a node can play hier on this platform (sim_job.collapse): several GPUs a node, as
 * many on each NIC rail, and no cap per transfer (a permutation transfer moves 1/G of its bytes). */
int sim_collapses(const ncclzSimPlatform *p);

/* The plain or compressed tree over more nodes than a full replay takes, extrapolated in depth
 * (sim/tree_plan.c): the base, a full tree replayed with all its chunks, and a level, the difference
 * between the trees of `small` and `large` nodes replayed with `step` chunks (all where fewer). */
typedef struct {
  int base, depth;       /* its nodes and depth, ceil(log2 base) */
  int small, large;      /* the level's trees */
  uint32_t step;         /* their chunks a tree */
} sim_tree_plan;
void sim_tree_plan_for(const ncclzSimPlatform *p, int coded, sim_tree_plan *t);

/* Runs the replay in this process (call it in a fresh child: SimGrid has one engine per
 * process). stats: one per actor and channel (lay.nactors x sim_channels). Returns 0 or -1. */
int sim_replay_run(const sim_job *job, sim_actor_stats *stats);

/* The estimated cost of a replay (sim/budget.c): messages, wall seconds and peak MiB. */
typedef struct {
  double messages, seconds, mib;
} sim_cost;
int sim_replay_cost(const sim_job *j, sim_cost *c); /* 0, or -1 out of memory */
/* NCCLZ_ERR_ARG with the estimate when the replay is past options.max_replay_s/_mib (0: 120 s,
 * 2048 MiB), else NCCLZ_OK. */
ncclzStatus sim_check_budget(const sim_job *j);

/* Frame model: wire bytes of a chunk of raw bytes holding the sum of k ranks' codes, coded with c,
 * and its coder under the options (REA for AUTO). */
ncclzCoder sim_pick_coder(const sim_job *job, const sim_hop *hop, uint32_t k, double raw_bytes);
double sim_frame_bytes(const sim_job *job, ncclzCoder c, uint32_t k, double raw_bytes);
/* REA's choice for one frame of raw_bytes carrying k ranks' codes, and in *dec the arbitration's
 * times (zero on the fast path); pipeline_frames as in ncclzReaCandidates (1: a frame on its own,
 * every codec cost exposed; 0: the steady state). */
ncclzCoder sim_rea_decide(const sim_job *job, const sim_hop *hop, uint32_t k, double raw_bytes, double pipeline_frames,
                          ncclzReaDecision *dec);
double sim_codec_us(const sim_job *job, ncclzCoder c, int decode, double raw_bytes);

/* The concrete schedule of a point (AUTO resolved) and its spec with nchunks per channel. */
void sim_resolve(const ncclzSimPlatform *p, const ncclzSimOptions *o, ncclzAlgorithm *algo, uint32_t *channels);
void sim_spec(const ncclzSimPlatform *p, const ncclzSimOptions *o, uint32_t nchunks, ncclzScheduleSpec *sp);
/* options.algorithm AUTO: the schedule to replay (algo.c). */
ncclzAlgorithm sim_auto_algorithm(const ncclzSimPlatform *p, const ncclzSimOptions *o);
/* options.algorithm and compress AUTO: replays the cost model's pair (algo.c). */
ncclzStatus sim_run_choice(const ncclzProfile *prof, const ncclzSimData *data, const ncclzSimPlatform *p,
                           const ncclzSimOptions *opt, ncclzSimResult *res);
/* A compressed chain's chunks a channel, as the executor cuts them (ncclzChainChunks): the
 * platform's links, no CR (the executor's schedule is made before it sees the data) (algo.c). */
uint32_t sim_chain_chunks(const ncclzProfile *prof, const ncclzSimData *data, const ncclzSimPlatform *p,
                          const ncclzSimOptions *o, double range);
/* The cost model's time of the pair a replay of these options on algorithm a runs (0: none). */
double sim_predicted_us(const ncclzProfile *prof, const ncclzSimData *data, const ncclzSimPlatform *p,
                        const ncclzSimOptions *o, ncclzAlgorithm a);

/* How a point may be replayed (classify): whether its schedule is the same on every rank up to a
 * relabeling, and if not, why not. */
typedef enum {
  SIM_SYMMETRIC, /* one node's actors (or two nodes') stand for all */
  SIM_SMALL,     /* at most 2 nodes: the full replay is as small (a reduced replay may be asked for) */
  SIM_FOLDS,     /* halving-doubling folds: smaller full replays of the fold, extrapolated (sim_run_folded) */
  SIM_ASYMMETRIC /* the full replay only */
} sim_symmetry;

/* What auto takes for a point, and why (the reason is for display only). */
typedef struct {
  ncclzSimFidelity fidelity; /* auto's choice */
  sim_symmetry sym;
  int approximate;           /* the reduced replay is held to the full one within a tolerance, not 0.1% */
  const char *reason;        /* the asymmetry, or what is approximate; NULL when symmetric and exact */
} sim_class;

/* The point's class (fidelity.c); single: one replay of a fold's core, which is a full one. */
sim_class sim_classify(const ncclzSimPlatform *p, const ncclzSimOptions *o, int single);
/* The sentence that says why a class takes its fidelity (display only). */
void sim_class_why(const ncclzSimPlatform *p, const ncclzSimOptions *o, const sim_class *c, char *why, size_t cap);
/* 1: the reduced replay is the two-node mirror (every schedule but the one-channel ring). */
int sim_mirrored(ncclzCollective c, ncclzAlgorithm a, uint32_t channels);
/* 1: one actor a node plays hier's GPUs (sim_job.collapse); fold_core: the replay of a fold's core. */
int sim_collapsed(const ncclzSimPlatform *p, const ncclzSimOptions *o, ncclzAlgorithm a, int fold_core);
/* 1: halving-doubling that folds, replayed reduced (sim_run_folded). */
int sim_replays_folded(const ncclzSimPlatform *p, const ncclzSimOptions *o);
/* 1: a symmetric platform, replayed reduced (auto's choice or asked for). */
int sim_takes_reduced(const ncclzSimPlatform *p, const ncclzSimOptions *o);
/* The reduced replay of folds against the full replay (docs/simulator.md, test_sim) */
#define SIM_FOLD_ACCURACY "within 6% of the full replay"

/* One replay and its parts (run.c). */
ncclzStatus sim_check_inputs(const ncclzProfile *prof, const ncclzSimData *data, const ncclzSimPlatform *p,
                             const ncclzSimOptions *o);
/* The channels sim_resolve gives the point, where its algorithm is not needed. */
uint32_t sim_resolved_channels(const ncclzSimPlatform *p, const ncclzSimOptions *o);
/* Chunks of a block of `block` bytes as the executor cuts it. */
uint32_t sim_block_chunks(const ncclzProfile *prof, const ncclzSimData *data, const ncclzSimPlatform *p,
                          const ncclzSimOptions *o, ncclzAlgorithm a, double block);
/* A compressed call's interface time (quantize, agree, dequantize) for `bytes`; 0 plain. */
double sim_iface_us(const ncclzProfile *prof, const ncclzSimPlatform *p, const ncclzSimOptions *o, double bytes);
/* A job's sizes, schedule, REA settings and hint (before sim_plan_call); o must outlive it. */
void sim_job_init(sim_job *j, const ncclzProfile *prof, const ncclzSimData *data, const ncclzSimPlatform *p,
                  const ncclzSimOptions *o, int reduced, int rail_head);
/* Auto's call decision: 1 where the call runs as plain NCCL, else 0 with j->call_coder. */
int sim_plan_call(sim_job *j);
/* Auto's call planned on the whole point, for the smaller replays that stand for it (rings, mirrors,
 * Broadcast's slices), which would plan with their own bytes and units: *u is o with the coder REA
 * planned, or compression off where the call runs as plain NCCL; o itself for the other modes.
 * chunks (may be NULL): the chunks a block the call was planned with. */
void sim_auto_as_planned(const ncclzProfile *prof, const ncclzSimData *data, const ncclzSimPlatform *p,
                         const ncclzSimOptions *o, ncclzSimOptions *u, uint32_t *chunks);
/* Frames and bytes of a replay that stands for f times as many transfers. */
void sim_scale_totals(ncclzSimResult *r, double f);
/* One replay in a forked child; rail_head as sim_job_init's; fold_core: the full replay of a fold's
 * core. */
ncclzStatus sim_run_once(const ncclzProfile *prof, const ncclzSimData *data, const ncclzSimPlatform *p,
                         const ncclzSimOptions *opt, int rail_head, int fold_core, ncclzSimResult *res);
/* A point's replay, reduced where a rule below applies, else sim_run_once. */
ncclzStatus sim_run_schedule(const ncclzProfile *prof, const ncclzSimData *data, const ncclzSimPlatform *p,
                             const ncclzSimOptions *opt, ncclzSimResult *res);
/* What a side replay runs: sim_run_schedule, sim_run_once's full replay of a fold's core, or the
 * whole point (ncclzSimRun: the oracle's schedules side by side). */
typedef enum { SIM_SIDE_SCHEDULE = 0, SIM_SIDE_FOLD_CORE = 1, SIM_SIDE_POINT = 2 } sim_side_kind;
/* A replay in a forked child while the caller runs another, of q and o as `kind` says; its pid
 * (-1 with the error set), *fd the pipe sim_side_finish reads. */
pid_t sim_side_start(const ncclzProfile *prof, const ncclzSimData *data, const ncclzSimPlatform *q,
                     const ncclzSimOptions *o, sim_side_kind kind, int *fd);
ncclzStatus sim_side_finish(pid_t pid, int fd, ncclzSimResult *r);
/* Two replays of every step, qa's in a child beside qb's: *a and *b. */
ncclzStatus sim_run_side_by_side(const ncclzProfile *prof, const ncclzSimData *data, const ncclzSimPlatform *qa,
                                 const ncclzSimOptions *ua, const ncclzSimPlatform *qb, const ncclzSimOptions *ub,
                                 ncclzSimResult *a, ncclzSimResult *b);
/* In the why of a coded tree whose channels were folded (run.c channel_fold). */
#define SIM_WHY_STREAMS_BY_ORBIT "codec streams by orbit"

/* Rings, trees and hier's rail rings extrapolated from smaller replays (extrapolate.c). */
/* Rings (and Broadcast's chains, Alltoall's mirrors) of this many ranks or more are extrapolated. */
#define SIM_EXTRAPOLATE_FROM 512
/* Hier's ring between nodes on more nodes than SIM_RAIL_FROM: the reduced replay keeps the first
 * h and the last SIM_RAIL_TAIL steps of each rail ring stage, for two h, and extrapolates in h. */
#define SIM_RAIL_FROM 128
#define SIM_RAIL_HEAD 32
#define SIM_RAIL_TAIL 8
/* Nodes of G GPUs in the shorter base of at least min_ranks ranks (and 3 nodes); the longer's. */
int sim_base_nodes(int g, int min_ranks);
int sim_longer_nodes(int m);
/* T(n) = T(a) + (n - a) (T(b) - T(a)) / (b - a) for time, frames and bytes. */
void sim_extrapolate(const ncclzSimResult *a, const ncclzSimResult *b, int na, int nb, int n, ncclzSimResult *res);
/* The same job on rings (or mirrors) of ma and mb of its n ranks, side by side: *a and *b, their
 * times without the interface cost (the caller adds the point's own after extrapolating). */
ncclzStatus sim_run_rings_of(const ncclzProfile *prof, const ncclzSimData *data, const ncclzSimPlatform *p,
                             const ncclzSimOptions *o, int n, int ma, int mb, ncclzSimResult *a, ncclzSimResult *b);
int sim_tree_extrapolates(const ncclzSimPlatform *p, const ncclzSimOptions *o);
ncclzStatus sim_run_tree_extrapolated(const ncclzProfile *prof, const ncclzSimData *data, const ncclzSimPlatform *p,
                                      const ncclzSimOptions *o, ncclzSimResult *res);
int sim_tree_chunks_extrapolate(const ncclzSimPlatform *p, const ncclzSimOptions *o);
ncclzStatus sim_run_tree_in_chunks(const ncclzProfile *prof, const ncclzSimData *data, const ncclzSimPlatform *p,
                                   const ncclzSimOptions *o, ncclzSimResult *res);
int sim_rail_extrapolates(const ncclzSimPlatform *p, const ncclzSimOptions *o, ncclzAlgorithm a, int reduced);
ncclzStatus sim_run_rail_extrapolated(const ncclzProfile *prof, const ncclzSimData *data, const ncclzSimPlatform *p,
                                      const ncclzSimOptions *opt, ncclzSimResult *res);
int sim_ring_extrapolates(const ncclzSimPlatform *p, const ncclzSimOptions *o, ncclzAlgorithm a, int reduced);
ncclzStatus sim_run_ring_extrapolated(const ncclzProfile *prof, const ncclzSimData *data, const ncclzSimPlatform *p,
                                      const ncclzSimOptions *opt, ncclzSimResult *res);

/* Broadcast's chain extrapolated in the ranks, and in the slices a channel (broadcast.c): 1 or the
 * slices where it applies, else 0; *shorter (when not NULL) the shorter chain's replay. */
int sim_broadcast_extrapolates(const ncclzSimPlatform *p, const ncclzSimOptions *o);
ncclzStatus sim_run_broadcast_extrapolated(const ncclzProfile *prof, const ncclzSimData *data,
                                           const ncclzSimPlatform *p, const ncclzSimOptions *o, ncclzSimResult *res,
                                           ncclzSimResult *shorter);
uint32_t sim_broadcast_slices(const ncclzProfile *prof, const ncclzSimData *data, const ncclzSimPlatform *p,
                              const ncclzSimOptions *o);
ncclzStatus sim_run_broadcast_slices(const ncclzProfile *prof, const ncclzSimData *data, const ncclzSimPlatform *p,
                                     const ncclzSimOptions *o, uint32_t slices, ncclzSimResult *res);

/* A fold's smaller full replays, extrapolated (fold.c). */
ncclzStatus sim_run_folded(const ncclzProfile *prof, const ncclzSimData *data, const ncclzSimPlatform *p,
                           const ncclzSimOptions *opt, ncclzSimResult *res);

/* Alltoall on two nodes of shared NICs, or its mirrors extrapolated (alltoall.c): 1 where it applies. */
int sim_alltoall_scales(const ncclzProfile *prof, const ncclzSimData *data, const ncclzSimPlatform *p,
                        const ncclzSimOptions *o);
ncclzStatus sim_run_alltoall_scaled(const ncclzProfile *prof, const ncclzSimData *data, const ncclzSimPlatform *p,
                                    const ncclzSimOptions *o, ncclzSimResult *res);
int sim_alltoall_extrapolates(const ncclzProfile *prof, const ncclzSimData *data, const ncclzSimPlatform *p,
                              const ncclzSimOptions *o);
ncclzStatus sim_run_alltoall_extrapolated(const ncclzProfile *prof, const ncclzSimData *data,
                                          const ncclzSimPlatform *p, const ncclzSimOptions *o, ncclzSimResult *res);

#endif
