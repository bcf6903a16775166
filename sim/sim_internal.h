/* Internals of the simulator layer, shared by the sim/ sources only. */
#ifndef NCCLZ_SIM_INTERNAL_H
#define NCCLZ_SIM_INTERNAL_H

#include "ncclz/sim.h"

#include <stdio.h>

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

#endif
