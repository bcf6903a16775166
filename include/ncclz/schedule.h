/* ncclz schedules: every collective described once, as an ordered list of operations per rank.
 * The executor runs these operations on NCCL (or on the CPU transport in tests) and the
 * simulator replays the very same lists, so measurement and projection cannot drift apart.
 *
 * Layer: depends on nothing but the C library (it sits beside model/, below exec/ and sim/). */
#ifndef NCCLZ_SCHEDULE_H
#define NCCLZ_SCHEDULE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
  NCCLZ_ALLREDUCE = 0,     /* ring: reduce-scatter then all-gather */
  NCCLZ_REDUCESCATTER = 1, /* ring */
  NCCLZ_ALLGATHER = 2,     /* ring */
  NCCLZ_ALLTOALL = 3,      /* pairwise exchange */
  NCCLZ_BROADCAST = 4,     /* pipelined ring from the root */
  NCCLZ_COLL_COUNT = 5
} ncclzCollective;

/* The most comm lanes the executor's NCCL backend opens (ncclzConfig.comm_lanes) and a replay
 * models (ncclzSimOptions.comm_lanes): units whose transfers may be in flight at once. Here, below
 * both, so that exec/ and sim/ share one limit. */
#define NCCLZ_MAX_COMM_LANES 4

const char *ncclzCollectiveName(ncclzCollective c); /* "allreduce", ... as nccl-tests names them */
int ncclzCollectiveFromName(const char *name);      /* -1 if unknown */

/* The schedule that carries a collective (docs/simulator.md, "Algorithms"):
 *   RING: NCCL's ring, over C channels (ncclzScheduleSpec.nchannels): channel c is a ring whose
 *         inter-node hops leave each node from local GPU c-1 (so, with C = rails, through a
 *         different NIC each), and the data is split across channels; Alltoall's pairwise
 *         exchange and Broadcast's pipelined ring are the RING of those collectives;
 *   TREE: NCCL's tree AllReduce: a chain inside each node, a double binary tree between nodes
 *         (each tree carries half the data), reduce up and broadcast down, pipelined in chunks;
 *   RHD:  recursive halving-doubling (Rabenseifner): ReduceScatter by halving, AllGather by
 *         doubling, AllReduce both; r = N - 2^floor(log2 N) extra ranks first fold into partners;
 *   HIER: two levels: ReduceScatter inside the node (ring over NVLink), AllReduce among the ranks
 *         of one local index (one rail) between nodes (RHD or RING), AllGather inside the node.
 * AUTO is a caller's choice (model/ picks); a schedule is always built for a concrete one. */
typedef enum {
  NCCLZ_ALGO_AUTO = 0,
  NCCLZ_ALGO_RING = 1,
  NCCLZ_ALGO_TREE = 2,
  NCCLZ_ALGO_RHD = 3,
  NCCLZ_ALGO_HIER = 4,
  NCCLZ_ALGO_COUNT = 5
} ncclzAlgorithm;
const char *ncclzAlgorithmName(ncclzAlgorithm a); /* "auto", "ring", "tree", "rhd", "hier" */
int ncclzAlgorithmFromName(const char *name);     /* -1 if unknown */

/* The link class of a transfer: the REA hint it plans with (NVLink/SHM inside a node, NET between). */
enum { NCCLZ_LINK_INTRA = 0, NCCLZ_LINK_NET = 1 };

typedef enum {
  NCCLZ_OP_SEND = 0, /* send one chunk of one block to `peer` */
  NCCLZ_OP_RECV = 1, /* receive one chunk of one block from `peer` */
  NCCLZ_OP_COPY = 2, /* local: the rank's own block moves from input to output (no transfer) */
  /* Buffers (as NCCL's): ALLREDUCE works in the output, which starts as a copy of the input;
   * REDUCESCATTER reduces in a scratch copy of its input and its output is block `rank`;
   * ALLGATHER's input is block `rank` of the output; ALLTOALL sends block j of the input to
   * rank j, and receives block j of the output from rank j; BROADCAST has one block. */
} ncclzOpKind;

/* What happens to the data around a transfer: where compression hooks in. */
enum {
  NCCLZ_ACT_ENCODE = 1u << 0,  /* send: encode the chunk from the working buffer into a frame */
  NCCLZ_ACT_FORWARD = 1u << 1, /* send: forward the frame received by op `dep`, unchanged */
  NCCLZ_ACT_REDUCE = 1u << 2,  /* recv: decode and add into the working chunk (with STORE: and
                                  write the finished sum to the output) */
  NCCLZ_ACT_STORE = 1u << 3,   /* recv: decode and store into the output chunk (the part of the
                                  range that lies in the output: REDUCESCATTER's is block `rank`) */
  NCCLZ_ACT_KEEP = 1u << 4,    /* recv: keep the frame; a later FORWARD sends it on */
};

/* Phases, for reports and traces. */
enum { NCCLZ_PHASE_REDUCE = 0, NCCLZ_PHASE_GATHER = 1, NCCLZ_PHASE_EXCHANGE = 2, NCCLZ_PHASE_PIPELINE = 3 };

typedef struct {
  uint8_t kind;    /* ncclzOpKind */
  uint8_t action;  /* NCCLZ_ACT_* flags */
  uint8_t phase;   /* NCCLZ_PHASE_* */
  int32_t peer;    /* the other rank (-1 for COPY) */
  uint32_t step;   /* logical step: ops of one step can run concurrently; a step waits for its deps */
  uint32_t block;  /* which block of this rank's buffer (see ncclzScheduleRange) */
  uint32_t chunk;  /* which chunk of the block (pipelining) */
  int32_t dep;     /* index (in this rank's list) of the last receive whose data this one needs,
                      or -1: a send's data is ready once every receive up to `dep` (in list
                      order) has completed */
  uint32_t nblk;   /* blocks the op covers: [block, block + nblk) (1 for the ring schedules) */
  uint32_t nsum;   /* ranks whose data the transferred chunk sums (codes widen with it) */
  uint8_t link;    /* NCCLZ_LINK_*: the transfer's link class, the REA hint of this hop */
} ncclzOp;
/* A SEND on rank a to b matches the RECV on b from a with the same (step, chunk): there is one
 * such pair per step and chunk, so transports can match on it.
 * ENCODE reads the working buffer: ALLREDUCE's output (it starts as a copy of the input),
 * REDUCESCATTER's scratch copy of its input, ALLGATHER's and BROADCAST's output (the own block,
 * or the root's buffer, is COPYed there first), ALLTOALL's input. */

typedef struct {
  ncclzCollective coll;
  ncclzAlgorithm algo;       /* not AUTO */
  int nranks;
  int ranks_per_node;        /* G: ranks n*G .. n*G+G-1 share node n (0: all on one node) */
  int root;
  uint32_t nchunks;          /* chunks per block and channel, >= 1 */
  uint32_t nchannels;        /* RING, TREE: rings (double trees) the data is split over (0: 1) */
  ncclzAlgorithm hier_inter; /* HIER: the inter-node stage, RHD or RING (0: RHD) */
} ncclzScheduleSpec;

typedef struct {
  ncclzCollective coll;
  ncclzAlgorithm algo;
  int nranks, rank, root;
  int ranks_per_node;
  uint32_t nchannels;
  uint32_t nblocks;  /* blocks the buffer is cut into (nranks; 1 for broadcast; 2 for the tree) */
  uint32_t nchunks;  /* chunks per block, all channels: channel c owns [c * spec.nchunks, (c + 1) * spec.nchunks) */
  uint32_t nsteps;   /* logical steps of this rank's list */
  size_t nops;
  ncclzOp *ops;      /* in the order the executor issues them */
} ncclzSchedule;

void ncclzScheduleFree(ncclzSchedule *s);
/* Builds rank `rank`'s list of the spec. Returns 0, or -1 with errno EINVAL (see
 * ncclzScheduleCheck for why) or ENOMEM. */
int ncclzScheduleBuildSpec(const ncclzScheduleSpec *spec, int rank, ncclzSchedule *out);
/* 0 if the spec's algorithm runs its collective on that shape; else -1 and one line in why[cap]
 * naming what can ("tree runs allreduce only; reducescatter runs with ring, rhd"). */
int ncclzScheduleCheck(const ncclzScheduleSpec *spec, char *why, size_t cap);
/* The algorithms that run `coll` on n ranks of g per node, as "ring, rhd" (for messages). */
void ncclzAlgorithmsFor(ncclzCollective coll, int nranks, int ranks_per_node, char *buf, size_t cap);

/* Element range [*off, *off + *len) of (block, chunk) in a buffer of `count` elements per block
 * for ALLGATHER/ALLTOALL/REDUCESCATTER-output, or of `count` elements in all for ALLREDUCE and
 * BROADCAST, where blocks split the buffer as evenly as possible (counts need not divide). */
void ncclzScheduleRange(const ncclzSchedule *s, size_t count, uint32_t block, uint32_t chunk, size_t *off,
                        size_t *len);

/* The element range of an op: blocks [o->block, o->block + o->nblk), chunk o->chunk of them. */
void ncclzScheduleOpRange(const ncclzSchedule *s, size_t count, const ncclzOp *o, size_t *off, size_t *len);
/* The same for any block range. */
void ncclzScheduleBlocksRange(const ncclzSchedule *s, size_t count, uint32_t block, uint32_t nblk, uint32_t chunk,
                              size_t *off, size_t *len);

/* The message tag of a transfer op: step * nchunks + chunk. A SEND and its RECV carry the same tag,
 * so a transport matches on (peer, tag); a pipeline unit's ops share it too. */
uint64_t ncclzOpTag(const ncclzSchedule *s, const ncclzOp *o);

/* The op-list walker every backend issues transfers with (the NCCL pipeline, the replay): a unit
 * is what a backend posts at once (one NCCL group): a SEND, with the RECV of the same (step,
 * chunk) when that comes right after it, or a RECV alone. Op i (a SEND or RECV) starts a unit: */
int ncclzOpStartsUnit(const ncclzSchedule *s, size_t i);
typedef struct {
  int32_t send, recv;            /* op indices (-1: none) */
  uint64_t tag;                  /* ncclzOpTag of its ops: the same on both sides of each transfer */
  size_t soff, slen, roff, rlen; /* element ranges of the send and the receive (ncclzScheduleOpRange) */
  int32_t keep;                  /* a KEEP receive's slot among the rank's kept frames (-1: none) */
  uint32_t after_at, nafter;     /* a receive that writes (REDUCE, STORE): the earlier units whose receives
                                    write an overlapping range, ncclzUnitList.after[after_at ..
                                    after_at + nafter), in list order. A backend that decodes units side
                                    by side writes after these (and only these: a ring's reduces of
                                    different chunks run at once). */
} ncclzUnit;
typedef struct {
  ncclzUnit *units;
  size_t nunits;
  int32_t *unit_of_op; /* per op: its unit (-1: a COPY) */
  int32_t *after;      /* the units' `after` lists */
  size_t nafter_total; /* entries in `after` */
  uint32_t nkeep;      /* kept frames (KEEP receives) */
  size_t largest;      /* the largest op range (elements): staging and scratch are sized on it */
} ncclzUnitList;
/* The units of s for a call of `count` elements. Returns 0, or -1 (ENOMEM). */
int ncclzScheduleUnits(const ncclzSchedule *s, size_t count, ncclzUnitList *out);
void ncclzUnitListFree(ncclzUnitList *u);
/* The largest op range of s (elements) for a call of `count`. */
size_t ncclzScheduleLargestRange(const ncclzSchedule *s, size_t count);

/* The per-collective table every walker of the lists shares (the executors and the replay):
 * buffer sizes, where an ENCODE reads, where a COPY or a STORE writes. Offsets are in the
 * collective's whole buffer (as ncclzScheduleOpRange gives them). */
size_t ncclzCollInCount(ncclzCollective c, size_t count, int nranks);
size_t ncclzCollOutCount(ncclzCollective c, size_t count, int nranks);
/* The offset into this rank's input (AllGather's input is its own block only). */
size_t ncclzCollInOffset(ncclzCollective c, int rank, size_t count, size_t off);
/* The part of [off, off + len) that lies in this rank's output (ReduceScatter's output is its own
 * block only): returns its offset in the output, with *skip elements before it in the range and
 * *olen elements long (0: none). */
size_t ncclzCollOutPart(ncclzCollective c, int rank, size_t count, size_t off, size_t len, size_t *skip, size_t *olen);
/* Ranks whose data each output element sums (nranks for AllReduce and ReduceScatter, else 1): the
 * k of the derived error bound. */
int ncclzCollContributions(ncclzCollective c, int nranks);
typedef enum { NCCLZ_BUF_IN = 0, NCCLZ_BUF_WORK = 1, NCCLZ_BUF_OUT = 2 } ncclzBuffer;
/* Where an ENCODE send reads (see the ops' comment above). */
ncclzBuffer ncclzCollEncodeSource(ncclzCollective c);
/* Chunks per block and channel for a spec, so that the largest op's chunks hold at most
 * chunk_elems elements of a `count`-element call (1 to max_chunks). */
#define NCCLZ_DEFAULT_MAX_CHUNKS 64 /* max_chunks where a config, options or choice input say 0 */
uint32_t ncclzScheduleChunksFor(const ncclzScheduleSpec *spec, size_t count, size_t chunk_elems, uint32_t max_chunks);
/* Whether the spec's channels are chains that pipeline chunks hop by hop from one rank through
 * all the others (Broadcast's ring on 3 ranks or more; on 2 it is one hop): their fill grows with
 * the ranks, so their chunks come from the cost model (ncclzChainChunks, model.h). */
int ncclzScheduleIsChain(const ncclzScheduleSpec *spec);
/* Plain NCCL's Broadcast slice: its Simple protocol's 4 MiB buffer of NCCL_STEPS = 8 steps, one step
 * a slice (BROADCAST_CHUNKSTEPS = BROADCAST_SLICESTEPS = 1, NCCL's src/include/collectives.h). */
#define NCCLZ_NCCL_BCAST_SLICE_BYTES (512u << 10)

/* NCCL's tuner (schedule/tuner.c): the time its model gives algorithm a (RING or TREE; INFINITY
 * where NCCL does not run it) for a call of `bytes` on `nodes` x `gpus_per_node` ranks whose ring
 * channels reach busbw_gbps, and its choice between the two (the plain baseline of the replay, the
 * executor's auto when it knows its nodes). */
double ncclzTunerTimeUs(ncclzCollective coll, int nodes, int gpus_per_node, double busbw_gbps, uint64_t bytes,
                        ncclzAlgorithm a);
ncclzAlgorithm ncclzTunerChoose(ncclzCollective coll, int nodes, int gpus_per_node, double busbw_gbps, uint64_t bytes);

/* nccl-tests' busbw factor for this collective on n ranks (busbw = algbw * factor). */
double ncclzBusBwFactor(ncclzCollective c, int nranks);

#ifdef __cplusplus
}
#endif
#endif
