/* ncclz sim: a SimGrid replay of the executor's collective schedules on a described platform.
 *
 * This is the one public header of the simulator layer. It depends on ncclz/schedule.h (the op
 * lists it replays), ncclz/model.h (codec costs and the REA decisions) and ncclz/codecs.h (coder
 * ids). The library exists only when SimGrid was found (CMake option NCCLZ_SIM); users test the
 * macro NCCLZ_HAVE_SIM, which the ncclz_sim target exports.
 *
 * What a replay is (docs/simulator.md has the details):
 *   - the platform is generated from an ncclzSimPlatform: nodes x GPUs, NVLink inside a node, NIC
 *     rails, a non-blocking or 2-level fat-tree fabric, a rank placement;
 *   - every rank (actor) walks its ncclzSchedule op list in order, as the executor issues it:
 *     SEND waits for its dep, encodes (codec time from the profile's curves), then posts the frame;
 *     RECV posts a receive; at most `banks` frames are in flight per peer and direction;
 *   - wire bytes come from ncclzSimData (compression ratio per coder and per number of ranks
 *     whose codes are summed in the frame), the coder of each frame from model/rea_decide.h;
 *   - two fidelities: FULL (one actor per rank) and REDUCED (the ring on 2 nodes, with the
 *     logical step count and chunk size), chosen automatically for symmetric ring cases. */
#ifndef NCCLZ_SIM_H
#define NCCLZ_SIM_H

#include "ncclz/codecs.h"
#include "ncclz/model.h"
#include "ncclz/schedule.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------- platform */

typedef enum { NCCLZ_TOPO_NONBLOCKING = 0, NCCLZ_TOPO_FATTREE = 1 } ncclzSimTopology;

typedef enum {
  NCCLZ_PLACE_CONTIGUOUS = 0, /* rank r on node r / G, GPU r % G (NCCL's usual ring order) */
  NCCLZ_PLACE_STRIDED = 1,    /* rank r on GPU slot (r * stride) mod N, wrapping with an offset */
  NCCLZ_PLACE_RANDOM = 2,     /* a seeded random permutation of the slots */
} ncclzSimPlacement;

typedef struct {
  int nodes;                 /* >= 1 */
  int gpus_per_node;         /* >= 1 */
  double nvlink_gbps;        /* per GPU and direction (GB/s, 1e9 bytes/s) */
  double nvlink_latency_us;  /* one intra-node hop */
  int rails;                 /* NICs per node; GPU g uses NIC g % rails */
  double nic_gbps;           /* per NIC and direction, GB/s (scenario files: "nic": "200Gb/s") */
  double nic_latency_us;     /* one inter-node hop (NIC to NIC, through the first switch level) */
  double nic_flow_gbps;      /* optional (0: none): the most one transfer moves through a NIC, for a
                                transport whose one connection cannot fill the NIC (NCCL's socket
                                transport over loopback: one communicator's send/recv at 2.5 GB/s
                                where its many-channel AllReduce moves 3.8); concurrent transfers
                                share nic_gbps */
  ncclzSimTopology topology;
  int nodes_per_leaf;        /* fat-tree: nodes under one leaf switch */
  double oversubscription;   /* fat-tree: leaf down/up capacity ratio (2 = 2:1), >= 1 */
  double uplink_latency_us;  /* fat-tree: extra latency of a hop that crosses leaves */
  ncclzSimPlacement placement;
  int stride;                /* STRIDED: slots between consecutive ranks (default G) */
  uint64_t seed;             /* RANDOM */
  double bandwidth_factor;   /* calibrated: every link bandwidth is multiplied by it (default 1) */
  ncclzCurve size_factor;    /* calibrated, optional (n_points 0: none): a further factor by message
                                bytes, for the ramp of a path's bandwidth with message size; a
                                message of B bytes travels as B / factor(B) */
} ncclzSimPlatform;

/* 1 node x 8 GPUs, NVLink 450 GB/s 1 us, 1 rail of 50 GB/s (400 Gb/s) 5 us, non-blocking,
 * contiguous, factor 1. */
void ncclzSimPlatformDefault(ncclzSimPlatform *p);
/* NCCLZ_ERR_ARG naming the field ("platform.nic_gbps: must be > 0"). */
ncclzStatus ncclzSimPlatformValidate(const ncclzSimPlatform *p);
/* Node and GPU of every rank under the placement (arrays of nodes * gpus_per_node). */
ncclzStatus ncclzSimPlace(const ncclzSimPlatform *p, int *node_of, int *gpu_of);

/* ------------------------------------------------------------ data profile */

/* Compression ratio (raw bytes / frame bytes, the 64-byte header included) per coder, for a
 * frame holding the sum of k ranks' codes: cr[c][k-1], k = 1..n_ranks; larger k use the last
 * entry. RAW frames are always raw + header, whatever cr[RAW] says. */
#define NCCLZ_SIM_MAX_CR_RANKS 64
typedef struct {
  uint32_t n_ranks;
  double cr[NCCLZ_CODER_COUNT][NCCLZ_SIM_MAX_CR_RANKS];
  ncclzDataClass data_class;  /* picks the codec cost curves of the profile */
  size_t dtype_bytes;         /* raw bytes per element (4 for f32) */
} ncclzSimData;

/* One CR per coder for every k (fixedlen, huffman; RAW is implied). */
void ncclzSimDataConstant(ncclzSimData *d, double cr_fixedlen, double cr_huffman);
/* CR of coder c for frames summing k ranks. */
double ncclzSimDataCr(const ncclzSimData *d, ncclzCoder c, uint32_t k);
/* Derives CR for k = 1 from a data file with the model's sample profiling (quantize with SPEC,
 * sample frame by frame, predict the frame sizes), the same for every k. raw: the file's bytes. */
ncclzStatus ncclzSimDataFromSamples(const void *raw, size_t len, ncclzDtype dtype, const char *quant_spec,
                                    const ncclzProfile *prof, ncclzSimData *out);

/* ----------------------------------------------------------------- options */

typedef enum {
  NCCLZ_SIM_OFF = 0,       /* plain NCCL: raw bytes, no frames, no codec (the baseline) */
  NCCLZ_SIM_AUTO = 1,      /* REA picks the coder of each frame */
  NCCLZ_SIM_RAW = 2,       /* forced coders: every frame with this one */
  NCCLZ_SIM_FIXEDLEN = 3,
  NCCLZ_SIM_HUFFMAN = 4,
  NCCLZ_SIM_COMPRESS_COUNT = 5
} ncclzSimCompress;
const char *ncclzSimCompressName(ncclzSimCompress c); /* "off", "auto", "raw", "fixedlen", "huffman" */
int ncclzSimCompressFromName(const char *name);       /* -1 if unknown */

typedef enum { NCCLZ_FID_AUTO = 0, NCCLZ_FID_FULL = 1, NCCLZ_FID_REDUCED = 2 } ncclzSimFidelity;
const char *ncclzSimFidelityName(ncclzSimFidelity f); /* "auto", "full", "reduced" */
int ncclzSimFidelityFromName(const char *name);

/* How a receiver learns a variable frame size (docs/executor.md, "Size protocol: a control lane"). */
typedef enum {
  NCCLZ_SIZE_PIGGYBACK = 0, /* the header rides one chunk ahead: no extra message */
  NCCLZ_SIZE_HEADER = 1,    /* a 64-byte header message precedes each payload, and the rank waits
                               for it before going on (the executors' control lane) */
} ncclzSimSizeProtocol;

/* The transport hint REA plans every frame for. The executor takes one hint per communicator
 * (default NET), and a frame encoded once is forwarded unchanged around the ring, so AUTO uses
 * NET whenever the ranks span nodes (NVLINK on one node); PER_HOP plans each frame for the hop it
 * is first sent on. */
typedef enum {
  NCCLZ_SIM_HINT_AUTO = 0,
  NCCLZ_SIM_HINT_PER_HOP = 1,
  NCCLZ_SIM_HINT_NVLINK = 2,
  NCCLZ_SIM_HINT_SHM = 3,
  NCCLZ_SIM_HINT_NET = 4,
} ncclzSimHintPolicy;
const char *ncclzSimHintPolicyName(ncclzSimHintPolicy h); /* "auto", "per_hop", "nvlink", "shm", "net" */
int ncclzSimHintPolicyFromName(const char *name);

typedef struct {
  ncclzCollective coll;
  uint64_t bytes;             /* nccl-tests' size: the buffer (AllReduce, Broadcast) or the total
                                 gathered/scattered/exchanged bytes (AllGather, ReduceScatter, Alltoall) */
  int root;                   /* Broadcast */
  ncclzSimCompress compress;
  ncclzSimFidelity fidelity;  /* AUTO chooses; REDUCED where not eligible is an error */
  uint64_t chunk_bytes;       /* raw bytes per chunk (0: the profile's frame_bytes) */
  uint32_t min_chunks;        /* chunks per block at least (0: 2 when compressing, else 1) */
  uint32_t max_chunks;        /* at most (0: 64; a compressed Broadcast's chain: the executor's
                                 count, ncclzChainChunks, up to NCCLZ_CHAIN_MAX_CHUNKS); larger
                                 chunks then (a chunk is one frame) */
  uint32_t banks;             /* staging banks: frames in flight per peer and direction (0: 2) */
  uint32_t comm_lanes;        /* (0..NCCLZ_MAX_COMM_LANES, schedule.h) a rank's units (one (step, chunk):
                                 its send and its receive) whose transfers may run at once: 1 is
                                 the executor's one NCCL stream (unit u's transfers start once unit
                                 u-1's are done); 0: no limit beyond the banks */
  ncclzSimSizeProtocol size_protocol;
  ncclzSimHintPolicy hint;
  int full_max_ranks;         /* AUTO refuses a full replay above this (0: 4096) */
  int rea_link_profile;       /* 1: REA plans with the profile's transport of the hint (what the
                                 executor, run with that profile, plans with); 0: with the
                                 replayed hop's link (an REA tuned for the simulated network) */
  ncclzAlgorithm algorithm;   /* the schedule (schedule.h): RING, TREE, RHD, HIER; AUTO (0): plain
                                 NCCL's choice when compress is off (ncclzSimNcclAlgorithm); with
                                 compress auto the cost model's (algorithm, coder) pair
                                 (ncclzSimChoose); with a forced coder the fastest schedule for it
                                 (ncclzSimRunBest) */
  uint32_t channels;          /* ring channels (0: the platform's rails) */
  int every_step;             /* 1: replay every step of a large ring; 0: the reduced replay of a
                                 ring of 512 ranks or more replays two shorter rings (at least 32
                                 ranks, and twice its nodes) with the same chunks and extrapolates
                                 their steady state (exact: the time is affine in the step count
                                 there; a test holds them together) */
  int every_channel;          /* 1: replay every channel of a tree (plain or coded); 0: where its
                                 channels are one channel turned over the node's GPUs and the
                                 platform turns with them, channel 0 alone on the platform's links
                                 merged by the turn (plain: the same times; docs/simulator.md,
                                 "Channels folded") */
  int fold_coded;             /* 1: a coded tree's channels fold too, each orbit's GPUs on one set of
                                 codec streams: approximate (the streams' ties between channels fall
                                 in another order; within 1.4% of every channel replayed where
                                 measured); the coded tree's extrapolation sets it where its level
                                 trees are large (docs/simulator.md, "Channels folded") */
  double max_replay_s;        /* a replay estimated to run longer is refused (0: 120 s) */
  double max_replay_mib;      /* or to take more memory (0: 2048 MiB); docs/simulator.md, Budget */
  ncclzAlgorithm hier_inter;  /* HIER's inter-node stage: RHD (0: AUTO, RHD) or RING */
} ncclzSimOptions;

void ncclzSimOptionsDefault(ncclzSimOptions *o);

/* ------------------------------------------------------------------ result */

typedef struct {
  double time_us;                       /* simulated time of the collective */
  ncclzSimFidelity fidelity;            /* the one used (FULL or REDUCED) */
  int actors;                           /* actors simulated */
  int nranks;                           /* logical ranks */
  uint32_t nchunks;                     /* chunks per block (all channels) */
  ncclzAlgorithm algorithm;             /* the schedule replayed */
  uint32_t channels;                    /* its ring channels (1 for the other algorithms) */
  uint64_t frames[NCCLZ_CODER_COUNT];   /* frames sent by the simulated actors, per coder */
  double wire_bytes;                    /* bytes they sent */
  double raw_bytes;                     /* raw bytes those frames stand for */
  double wall_s;                        /* host time the replay took */
  char why[160];                        /* why this fidelity */
  double predicted_us;                  /* the cost model's time of the pair replayed (model/, docs/simulator.md
                                           "Algorithm choice"; 0 where it has none: forced RAW frames) */
  int choice;                           /* auto with compression: the ncclzChoiceCoder the model chose for the
                                           algorithm above (then replayed); -1 otherwise */
  int approximate;                      /* 1: a reduction held to the full replay within a stated tolerance (why
                                           says which), not equal to it (docs/simulator.md, "Two fidelities") */
} ncclzSimResult;

/* Replays one collective. prof and data may be NULL when opt->compress is OFF. The replay runs in
 * a forked child (SimGrid keeps one engine per process), so this can be called many times. Plain
 * replays are kept in the process (the last 8, under their whole inputs): the same one again is
 * returned with wall_s 0. Not for concurrent calls from several threads. */
ncclzStatus ncclzSimRun(const ncclzProfile *prof, const ncclzSimData *data, const ncclzSimPlatform *plat,
                        const ncclzSimOptions *opt, ncclzSimResult *res);

/* Which fidelity AUTO takes, and why (a sentence into why[cap]). */
ncclzSimFidelity ncclzSimChooseFidelity(const ncclzSimPlatform *plat, const ncclzSimOptions *opt, char *why,
                                        size_t cap);

/* Plain NCCL's choice between its ring (channels over the rails) and its tree for a call of
 * `bytes` (NCCL's tuner model, docs/simulator.md), and that model's time (us) of algorithm a
 * (INFINITY where NCCL does not run it). */
ncclzAlgorithm ncclzSimNcclAlgorithm(const ncclzSimPlatform *plat, ncclzCollective coll, uint64_t bytes);
double ncclzSimNcclTimeUs(const ncclzSimPlatform *plat, ncclzCollective coll, uint64_t bytes, ncclzAlgorithm a);

/* Replays the point with every algorithm that runs it and returns the fastest (res->algorithm
 * says which): an oracle over schedules, for a forced coder under options.algorithm auto and for
 * the best plain schedule of ours; under compress auto, the plain schedules too (auto may leave a
 * call uncompressed). A schedule the cost model prices at 1.5 times the fastest or more is not
 * replayed (it cannot win; docs/simulator.md, "Auto with compression"). ncclzSimRun's auto with
 * compression takes the cost model's pair instead. */
ncclzStatus ncclzSimRunBest(const ncclzProfile *prof, const ncclzSimData *data, const ncclzSimPlatform *plat,
                            const ncclzSimOptions *opt, ncclzSimResult *res);

/* The cost model's (algorithm, coder) pair for a point (model/: ncclzChoose) over the algorithms
 * this replay can run there, with every pair's predicted time: what options.algorithm auto with
 * compress auto replays. */
ncclzStatus ncclzSimChoose(const ncclzProfile *prof, const ncclzSimData *data, const ncclzSimPlatform *plat,
                           const ncclzSimOptions *opt, ncclzChoice *out);

/* nccl-tests' algbw and busbw (GB/s) of `bytes` in time_us on n ranks. */
double ncclzSimAlgBw(uint64_t bytes, double time_us);
double ncclzSimBusBw(ncclzCollective c, int nranks, uint64_t bytes, double time_us);

/* Frames r sent, all coders together, and coder c's share of them (0 when none was sent). */
uint64_t ncclzSimFramesSent(const ncclzSimResult *r);
double ncclzSimCoderShare(const ncclzSimResult *r, ncclzCoder c);
/* The share of frames per coder as "raw:10%<sep>fixedlen:90%" ("-" when no frame was sent). */
void ncclzSimCoderMix(const ncclzSimResult *r, const char *sep, char *buf, size_t cap);

/* ---------------------------------------------------------------- scenario */

/* A what-if scenario (scenarios/README.md and docs/scenarios.md): a base platform and options,
 * and axes whose cross product gives the points. */
typedef struct {
  ncclzSimPlatform platform;
  ncclzSimOptions options;
} ncclzSimPoint;

typedef struct {
  char name[128];
  ncclzSimData data;
  size_t npoints;
  ncclzSimPoint *points;
  char measured[512];         /* optional path of measured results to compare with ("" if none) */
  char warnings[1024];        /* lines the caller should show (a NIC bandwidth out of range), "" if none */
} ncclzSimScenario;

/* Parses a scenario; NCCLZ_ERR_ARG with the field named ("scenario sweep.nodes[2]: must be >= 1").
 * base_dir resolves relative paths in the scenario (NULL: the current directory). */
ncclzStatus ncclzSimScenarioParse(const char *json, size_t len, const char *base_dir, const ncclzProfile *prof,
                                  ncclzSimScenario *out);
ncclzStatus ncclzSimScenarioLoad(const char *path, const ncclzProfile *prof, ncclzSimScenario *out);
/* The calibration profile the scenario file at path names ("profile", relative to the file), into
 * out[cap]; "" when it names none. Read before ncclzSimScenarioLoad, which needs the profile. */
ncclzStatus ncclzSimScenarioProfile(const char *path, char *out, size_t cap);
void ncclzSimScenarioFree(ncclzSimScenario *s);
/* The plain-NCCL twin of point i, for its speedup: an earlier point that is "off" on the same
 * collective, platform and size (its index), or -1 when the caller must replay one. */
long ncclzSimScenarioPlainTwin(const ncclzSimScenario *s, size_t i);

/* One point of a what-if run: the replay, plain NCCL on the same platform, and what follows. */
typedef struct {
  ncclzSimResult r;
  double base_us;       /* plain NCCL on the same collective, platform and size */
  double speedup;       /* base_us / r.time_us */
  double algbw, busbw;  /* GB/s, nccl-tests' definitions, of this point */
  double base_busbw;    /* GB/s, of plain NCCL */
  double wire_cr;       /* raw bytes / wire bytes of the frames sent (1 when plain) */
  ncclzSimResult best_plain; /* compressed points: the fastest plain schedule of ours (time_us 0
                                otherwise), for the speedup over the best plain schedule */
} ncclzSimPointResult;

typedef void (*ncclzSimProgressFn)(void *ctx, size_t done, size_t total);
/* Runs point i into out[i]; out[0..i-1] are the points run before (their plain twins). */
ncclzStatus ncclzSimScenarioRunPoint(const ncclzProfile *prof, const ncclzSimScenario *s, ncclzSimPointResult *out,
                                     size_t i);
/* Every point in order into out[s->npoints]; the error names the point ("point 3: ..."). */
ncclzStatus ncclzSimScenarioRun(const ncclzProfile *prof, const ncclzSimScenario *s, ncclzSimPointResult *out,
                                ncclzSimProgressFn progress, void *ctx);

/* ------------------------------------------------------------------ units */
/* Bandwidths are read with ncclzParseBandwidth and printed with ncclzFormatBandwidth (codecs.h). */

/* NICs on offer span 1 Gb/s to 1.6 Tb/s per port. */
#define NCCLZ_SIM_NIC_MIN_GBPS 0.125
#define NCCLZ_SIM_NIC_MAX_GBPS 200.0
/* 1 and a one-line warning in buf when a NIC bandwidth lies outside that range, or when a
 * unitless nic_gbps (GB/s) looks like it was meant in Gb/s; 0 otherwise. */
int ncclzSimNicWarning(const char *field, double gbytes_per_s, int unitless, char *buf, size_t cap);

#ifdef __cplusplus
}
#endif
#endif /* NCCLZ_SIM_H */
