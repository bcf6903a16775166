/* ncclz model: REA (runtime entropy arbitration), its calibration profile and the break-even surface.
 *
 * This is the one public header of the model layer; it depends only on ncclz/codecs.h and
 * ncclz/schedule.h (the collectives and algorithms; schedule/ depends on nothing).
 *
 * REA picks the coder of each frame by the cost model
 *
 *     T_c = alpha_c + P_c / beta_eff(hint) + lambda_enc_c * E_c + lambda_dec_c * D_c
 *
 * and c* = argmin over RAW and the admissible coders (RAW: P = the RAW frame, no codec cost).
 *
 * The pure decision functions (cost, admissibility, argmin, post-check, predicted sizes) are
 * inline functions in model/rea_decide.h, which nvcc compiles too: the host path below, the
 * device-side selector and the simulator all call those same functions. Every type they use is
 * a plain struct declared here (no pointers inside), so it can be copied to device memory.
 *
 * The profile schema (JSON, version 1) is documented in model/PROFILE.md.
 */
#ifndef NCCLZ_MODEL_H
#define NCCLZ_MODEL_H

#include "ncclz/codecs.h"
#include "ncclz/schedule.h" /* the collectives and algorithms the choice below weighs */

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------ strict JSON */

/* The one JSON reader of every layer (scenarios, profiles, data profiles, points files): cJSON's
 * parser plus the checks it lacks. It refuses characters after the value, NUL bytes (and the
 * escape \u0000), text that is not valid UTF-8, duplicate keys in an object and texts over
 * NCCLZ_JSON_MAX_BYTES, with NCCLZ_ERR_ARG and one line that starts with `name` (the file's path,
 * or a label) and gives the line and column, or the duplicate key's path:
 * "scen.json: characters after the JSON value at line 9, column 2". *out: free with cJSON_Delete. */
struct cJSON;
#define NCCLZ_JSON_MAX_BYTES (64u << 20)
ncclzStatus ncclzJsonParse(const char *name, const char *text, size_t len, struct cJSON **out);
/* ncclzJsonParse on a file's text, named "WHAT PATH" (what may be NULL); NCCLZ_ERR_IO when it
 * cannot be read. */
ncclzStatus ncclzJsonLoad(const char *what, const char *path, struct cJSON **out);
/* The number of items of an array or object, counting no further than cap + 1: a length limit is
 * checked before the walk, at a cost bounded by the limit. 0 for anything else. */
size_t ncclzJsonCount(const struct cJSON *arr, size_t cap);
/* A byte count in JSON: a whole number, or a string ncclzParseBytes reads ("4M"), in
 * [1, NCCLZ_JSON_BYTES_MAX] (ncclzParseBytes's range). 0 with *out set, or -1. */
#define NCCLZ_JSON_BYTES_MAX 1e15
int ncclzJsonBytes(const struct cJSON *v, uint64_t *out);

/* ---------------------------------------------------------------- profile */

#define NCCLZ_PROFILE_VERSION 1
#define NCCLZ_CURVE_MAX_POINTS 32
/* The sample window never exceeds this (the paper's bound); the configured window may be smaller. */
#define NCCLZ_REA_SAMPLE_MAX_BYTES 65536u

/* Transport paths, as the executor hints them. */
typedef enum {
  NCCLZ_HINT_NVLINK = 0,
  NCCLZ_HINT_SHM = 1,
  NCCLZ_HINT_NET = 2,
  NCCLZ_HINT_COUNT = 3
} ncclzTransportHint;

/* Data classes for codec cost curves: coder speed depends on the symbol distribution, which
 * the quantizer shapes. DEFAULT is what every profile must have; the others are optional. */
typedef enum {
  NCCLZ_CLASS_DEFAULT = 0,
  NCCLZ_CLASS_NONE = 1,       /* quant none: the data's own bits */
  NCCLZ_CLASS_EB = 2,         /* error-bounded, no prediction */
  NCCLZ_CLASS_EB_LORENZO = 3, /* error-bounded + Lorenzo deltas */
  NCCLZ_CLASS_QSGD = 4,
  NCCLZ_CLASS_COUNT = 5
} ncclzDataClass;

const char *ncclzHintName(ncclzTransportHint h);      /* "nvlink", "shm", "net" */
int ncclzHintFromName(const char *name);              /* -1 if unknown */
const char *ncclzDataClassName(ncclzDataClass c);     /* "default", "none", "eb", "eb_lorenzo", "qsgd" */
int ncclzDataClassFromName(const char *name);         /* -1 if unknown */
/* The class of symbols produced with these parameters (NULL: quant none). */
ncclzDataClass ncclzDataClassOf(const ncclzQuantParams *q);

/* Codec time (microseconds) against the frame's raw bytes: piecewise linear through the points
 * (so each segment is a fixed cost plus a per-byte cost), flat below the first point, and
 * extended with the last segment's per-byte cost above the last point. */
typedef struct {
  uint32_t n_points;
  double bytes[NCCLZ_CURVE_MAX_POINTS]; /* strictly increasing, > 0 */
  double us[NCCLZ_CURVE_MAX_POINTS];    /* >= 0 */
} ncclzCurve;

typedef struct {
  int present;            /* 0: this class falls back to DEFAULT */
  ncclzCurve encode, decode;
} ncclzCodecCurves;

typedef struct {
  double alpha_us;                        /* extra fixed cost per frame of this coder */
  double lambda_enc[NCCLZ_HINT_COUNT];    /* exposed fraction of encode time, per transport, [0,1] */
  double lambda_dec[NCCLZ_HINT_COUNT];    /* exposed fraction of decode time, per transport, [0,1] */
  ncclzCodecCurves curves[NCCLZ_CLASS_COUNT];
} ncclzCodecProfile;

typedef struct {
  double alpha_us;   /* latency of one message on this path */
  double beta_gbps;  /* effective bandwidth, 1e9 bytes/s */
} ncclzTransportProfile;

/* The executor's interface cost of one compressed call, outside the pipeline: quantize, agree on
 * the step (a small NCCL allreduce and the lane), dequantize. alpha_us + bytes / (gbps * 1e3)
 * microseconds for a call of `bytes` (nccl-tests' size), or, when the profile gives its measured
 * points (curve, two or more), the curve through them: on the 2x H200 socket path the cost is
 * 200 us at 4 MiB, 370 at 16 and 590 at 64 (executor traces), which no line follows.
 * Optional ("interface"): absent, 0.
 * unit_us (optional, 0 when absent): the host's own time per pipeline unit (one chunk's send and
 * receive): enqueueing its encode, decode and NCCL calls and passing its header on the lane,
 * without the waits for the GPU or the peer. The executor's host issues units one by one, so
 * this is a serial cost per unit that the replay charges to each rank. */
typedef struct {
  int present;
  double alpha_us;
  double gbps;
  double unit_us;
  ncclzCurve curve; /* optional: n_points 0 when absent */
} ncclzInterfaceProfile;

/* Arbitration thresholds that a profile recommends (ncclzReaConfigFromProfile copies them). */
typedef struct {
  uint64_t fast_path_bytes;      /* frames of fewer raw bytes go RAW without planning */
  uint64_t huff_min_bytes;       /* T_huff: HUFFMAN only at raw bytes >= this */
  uint32_t min_gain_permil;      /* a coder must save at least this much of the RAW frame */
  uint32_t sample_window_bytes;  /* symbols sampled per frame, in bytes (<= 64 KiB) */
  uint32_t sample_pieces;        /* the window is spread over this many pieces of the frame */
  uint64_t frame_bytes;          /* raw bytes per frame (the executor's 8-slot batch) */
} ncclzThresholds;

typedef struct {
  char device[128];
  char driver[64];
  char cuda[64];
  char nccl[64];
  char date[64];
  char method[256];
} ncclzProfileMeta;

/* A plain NCCL collective as measured by `ncclz calibrate` on one path: the time of the whole
 * call against nccl-tests' size (the buffer; AllGather's output, ReduceScatter's input). Names,
 * not enums, because the path and collective lists belong to the layers above. */
#define NCCLZ_PLAIN_MAX 40
typedef struct {
  char path[16];       /* "nvlink", "shm", "socket", "socket1x1", "socket4x4" */
  char collective[16]; /* "allreduce", "reducescatter", "allgather", "alltoall", "broadcast", or
                          "sendrecv": ranks 0 and 1 exchange that many bytes (one ring step) */
  ncclzCurve curve;
} ncclzPlainCurve;

/* A calibration profile. Plain data: copy it to the device as is. */
typedef struct {
  int version;
  ncclzTransportProfile transport[NCCLZ_HINT_COUNT];
  ncclzCodecProfile codec[NCCLZ_CODER_COUNT]; /* index by ncclzCoder; the RAW entry is unused */
  ncclzThresholds thresholds;
  ncclzInterfaceProfile iface[NCCLZ_HINT_COUNT]; /* optional "interface" section, per transport */
  ncclzProfileMeta meta;
  uint32_t plain_ranks;                  /* ranks the plain curves were measured on; 0: none */
  uint32_t n_plain;
  ncclzPlainCurve plain[NCCLZ_PLAIN_MAX]; /* optional "collectives" section */
} ncclzProfile;

/* Parse and validate a profile. Any problem gives NCCLZ_ERR_ARG with a message naming the field,
 * e.g. "profile transports.net.beta_gbps: must be > 0". File errors give NCCLZ_ERR_IO. */
ncclzStatus ncclzProfileParse(const char *json, size_t len, ncclzProfile *out);
/* The interface cost (us) of a compressed call of `bytes` on a hint's path (ncclzInterfaceProfile);
 * 0 when the profile has none. */
double ncclzProfileInterfaceUs(const ncclzProfile *p, ncclzTransportHint hint, double bytes);
/* The host's time per pipeline unit on a hint's path (ncclzInterfaceProfile.unit_us; 0 without). */
double ncclzProfileUnitUs(const ncclzProfile *p, ncclzTransportHint hint);
/* The frame size a call is cut into: the profile's thresholds.frame_bytes, or 4 MiB where there is
 * no profile (a plain replay needs none) or it sets none. */
uint64_t ncclzProfileFrameBytes(const ncclzProfile *p);
ncclzStatus ncclzProfileLoad(const char *path, ncclzProfile *out);
/* The profile compiled into the library: calibrate/profiles/h200-x2.json, measured on 2x H200 by
 * `ncclz calibrate` (its metadata says when and how). Every verb falls back to it, so that all
 * of them run on a machine without a GPU and without a profile file. */
#define NCCLZ_DEFAULT_PROFILE_NAME "built-in h200-x2 (calibrate/profiles/h200-x2.json)"
ncclzStatus ncclzProfileDefault(ncclzProfile *out);
/* Predicted time (us) of a plain NCCL collective of `bytes` (nccl-tests' size) on `path`, from the
 * profile's measured curve (on plain_ranks ranks); -1 when the profile has no such curve. */
double ncclzProfilePlainUs(const ncclzProfile *p, const char *path, const char *collective, double bytes);
/* That curve itself (its measured sizes), or NULL. */
const ncclzCurve *ncclzProfilePlainCurve(const ncclzProfile *p, const char *path, const char *collective);

/* --------------------------------------------------------- sample profile */

/* A 256-bin histogram plus a tail, an escape and a fill bin feeds the Huffman estimate. */
#define NCCLZ_REA_HIST_BINS 256
#define NCCLZ_REA_HIST_TAIL NCCLZ_REA_HIST_BINS        /* in the alphabet, outside the 256 bins */
#define NCCLZ_REA_HIST_ESCAPE (NCCLZ_REA_HIST_BINS + 1) /* escaped by the coder (+ the offset's 4 + b bits) */
#define NCCLZ_REA_HIST_FILL (NCCLZ_REA_HIST_BINS + 2)   /* fill codes: their own index, no raw bits */
#define NCCLZ_REA_HIST_TOTAL (NCCLZ_REA_HIST_BINS + 3)

/* Where the sample window lies in a frame: `count` pieces of `blocks` 32-symbol blocks, spread
 * evenly over the frame's full blocks and aligned to them (so sampled FIXEDLEN blocks are the
 * frame's real blocks), or the whole frame when it fits in the window. Host and device sample
 * the same positions (ncclz_rea_sample_plan / ncclz_rea_sample_piece in model/rea_decide.h). */
typedef struct {
  uint64_t n;
  int whole;
  uint32_t count;
  uint64_t blocks;      /* blocks per piece (unused when whole) */
  uint64_t full_blocks; /* n / 32 */
} ncclzSamplePlan;

/* What the sample window says about the symbols: enough to predict the coded size of a frame of
 * any length with the same statistics. */
typedef struct {
  uint64_t n_sampled;          /* symbols in the sample */
  uint64_t blocks_sampled;     /* FIXEDLEN 32-symbol blocks in the sample */
  uint64_t width_sum;          /* sum of their stored widths (31 counts as 32) */
  int huffman_valid;           /* 0 when the sample has no symbols */
  double huffman_bits;         /* expected coded bits of the sample, escapes included */
  uint32_t huffman_table_span; /* m: the length table's index span (used index span) */
  uint32_t huffman_table_used; /* u: indices with a code (decides dense or sparse table) */
} ncclzSampleStats;

/* ---------------------------------------------------------------- config */

/* Everything the arbitration compares against. Filled from a profile, then overridable. */
typedef struct {
  ncclzTransportHint hint;
  ncclzDataClass data_class;
  uint32_t coder_mask;           /* bit (1 << coder) per coder REA may choose; RAW is always allowed */
  int huff_ctx_valid;            /* a Huffman context (workspace, codebook) is available */
  uint64_t fast_path_bytes;
  uint64_t huff_min_bytes;
  uint32_t min_gain_permil;
  uint32_t sample_window_bytes;
  uint32_t sample_pieces;
  double pipeline_frames;        /* frames one pipeline of the message carries (a collective's chunks
                                    per step): exposes lambda + (1 - lambda) / k of the codec time;
                                    0 (the profile's default): the steady state, lambda */
} ncclzReaConfig;

void ncclzReaConfigFromProfile(const ncclzProfile *p, ncclzTransportHint hint, ncclzDataClass cls,
                               ncclzReaConfig *cfg);
/* NCCLZ_ERR_ARG with the field name when a value is out of range. */
ncclzStatus ncclzReaConfigValidate(const ncclzReaConfig *cfg);

/* The admissibility rules for one frame: the config's thresholds plus the staging capacity. */
typedef struct {
  uint64_t stage_cap_bytes;
  uint64_t fast_path_bytes;
  uint64_t huff_min_bytes;
  uint32_t min_gain_permil;
  uint32_t coder_mask;
  int huff_ctx_valid;
} ncclzReaRules;

/* Why a coder was not admissible. */
typedef enum {
  NCCLZ_REA_ADMISSIBLE = 0,
  NCCLZ_REA_DISABLED = 1,        /* not in coder_mask */
  NCCLZ_REA_NO_ESTIMATE = 2,     /* the sample gave no prediction */
  NCCLZ_REA_OVER_CAPACITY = 3,   /* predicted frame larger than the staging capacity */
  NCCLZ_REA_LOW_GAIN = 4,        /* saves less than min_gain_permil */
  NCCLZ_REA_BELOW_HUFF_MIN = 5,  /* raw bytes < T_huff */
  NCCLZ_REA_NO_HUFF_CTX = 6,     /* no valid Huffman context */
} ncclzReaVerdict;
const char *ncclzReaVerdictName(ncclzReaVerdict v);

/* One arbitration problem: a frame (or nframes equal frames of one message) and the predicted
 * frame size of every coder. */
typedef struct {
  double frame_raw_bytes;                     /* B: n_symbols x dtype size */
  double nframes;                             /* frames in the message (1 for one frame) */
  double pipeline_frames;                     /* 0: steady state, codec time exposed by the profile's
                                                 lambdas; k >= 1: the message's k frames are one
                                                 pipeline, whose first encode and last decode
                                                 overlap nothing (ncclz_rea_exposure) */
  uint64_t raw_frame_bytes;                   /* size of the RAW frame: header + side + 4n */
  uint64_t pred_frame_bytes[NCCLZ_CODER_COUNT];
  int pred_valid[NCCLZ_CODER_COUNT];
} ncclzReaCandidates;

/* The link a decision is made for: the hint's alpha and lambdas, and an effective bandwidth. */
typedef struct {
  ncclzTransportHint hint;
  double alpha_us;
  double beta_gbps;
} ncclzReaLink;

typedef struct {
  ncclzCoder coder;                          /* argmin over RAW and the admissible coders */
  double time_us[NCCLZ_CODER_COUNT];         /* T_c for every coder, admissible or not */
  ncclzReaVerdict verdict[NCCLZ_CODER_COUNT];
} ncclzReaDecision;

/* ------------------------------------------------------------- host path */

/* Sample profiling of n symbols (the frame), over a window of at most window_bytes of symbols
 * split into `pieces` block-aligned pieces spread over the frame (all of it when it fits). */
ncclzStatus ncclzReaSampleProfile(const int32_t *sym, size_t n, uint32_t window_bytes, uint32_t pieces,
                                  ncclzSampleStats *out);

/* Where ncclzReaSampleProfile's window lies in n symbols: *count pieces (at most cap; 512 always
 * suffice), piece i at start[i], len[i] symbols. A caller whose symbols live elsewhere (device
 * memory) copies only these pieces to a host array of n symbols and samples that. */
uint32_t ncclzReaSamplePieces(size_t n, uint32_t window_bytes, uint32_t pieces, uint64_t *start, uint64_t *len,
                              uint32_t cap);

/* The same, frame by frame over an array cut into frames of frame_syms symbols, with the
 * statistics summed (table span: the largest): what the runtime would see over the whole array. */
ncclzStatus ncclzReaSampleProfileFrames(const int32_t *sym, size_t n, size_t frame_syms, uint32_t window_bytes,
                                        uint32_t pieces, ncclzSampleStats *out);

/* The HUFFMAN segment (symbols) of a collective's frames. The executor decodes one chunk's frame
 * at a time, as it arrives, so that decode is latency-bound: a thread per segment, decoding its
 * symbols in sequence. A 4 MiB frame of 1,024-symbol segments fills 8 blocks of the GPU and takes
 * 399 us on an H200 (ncu), longer than the frame takes on a 2 GB/s socket; segments of
 * 256 give 4x the threads and a quarter of the chain, for 4 more bytes of offset per 256 symbols
 * (ResNet-18 qsgd:bits=8: CR 9.76 -> 9.37; climate eb:rel=1e-4: 2.72 -> 2.69, CPU codec, 4 MiB
 * frames). The codec's own default (1,024) suits batches of frames decoded together. */
#define NCCLZ_FRAME_HUFFMAN_SEGMENT 256

/* The coder parameters of a collective's frames, for everything that makes or models them (the
 * executor's config default, the simulator's data, the calibration's codec curves): the codec's
 * defaults with NCCLZ_FRAME_HUFFMAN_SEGMENT. */
void ncclzFrameCoderParams(ncclzCoderParams *cp);

/* Predicted frame sizes for n symbols with these statistics (header and side data included). */
void ncclzReaPredictFrames(const ncclzSampleStats *s, uint64_t n, size_t dtype_bytes, uint32_t side_bytes,
                           const ncclzCoderParams *cp, ncclzReaCandidates *cand);

typedef enum {
  NCCLZ_REA_PATH_FAST = 0,        /* small frame: RAW without planning */
  NCCLZ_REA_PATH_PLANNED_RAW = 1, /* the arbitration chose RAW */
  NCCLZ_REA_PATH_CODED = 2,       /* the chosen coder was materialized and accepted */
  NCCLZ_REA_PATH_FALLBACK = 3,    /* the realized frame failed the post-check: RAW committed */
} ncclzReaPath;

typedef struct {
  ncclzReaPath path;
  ncclzCoder planned;              /* the arbitration's choice (RAW on the fast path) */
  ncclzCoder committed;            /* the coder of the frame written */
  size_t frame_bytes;              /* bytes written to dst */
  size_t realized_bytes;           /* size of the planned coder's frame when it was materialized */
  ncclzReaCandidates cand;         /* predictions (zero on the fast path) */
  ncclzReaDecision decision;
} ncclzReaResult;

/* Plan only: guards, fast path, sample, predict, arbitrate (nothing is encoded). */
ncclzStatus ncclzReaPlan(const ncclzProfile *prof, const ncclzReaConfig *cfg, const int32_t *sym, size_t n,
                         const ncclzFrameDesc *desc, size_t stage_cap, ncclzReaResult *res);

/* Algorithm 1: plan, materialize the chosen coder into dst, post-check the realized size, else
 * commit a RAW frame; NCCLZ_ERR_CAPACITY when even RAW does not fit stage_cap. */
ncclzStatus ncclzReaEncodeBest(const ncclzProfile *prof, const ncclzReaConfig *cfg, const int32_t *sym,
                               size_t n, const ncclzFrameDesc *desc, uint8_t *dst, size_t stage_cap,
                               ncclzReaResult *res);

/* The post-check as a size (Algorithm 1, steps 5-6, for an encoder that materializes on the GPU):
 * the largest realized frame of n symbols (side_bytes of side data) that ncclzReaEncodeBest would
 * keep, within stage_cap and the gain of cfg->min_gain_permil over the RAW frame; a larger one
 * falls back to RAW (ncclzCudaBatch.fallback_bytes). At least 1. */
uint64_t ncclzReaFallbackBytes(const ncclzReaConfig *cfg, size_t n, uint32_t side_bytes, size_t stage_cap);

/* The call-level check after a frame's arbitration chose `coder` (d: that frame's steady-state
 * decision): whether compressing a whole call beats its plain collective once the costs a frame
 * does not see are counted: the call's interface (quantize, agree, dequantize;
 * ncclzProfileInterfaceUs of call_bytes), the host's time per unit (ncclzProfileUnitUs), and the
 * pipeline's fill: its first encode and last decode, which nothing overlaps ((1 - lambda) of a
 * frame's encode and decode, beyond the lambda share the steady state charges; a decision made
 * for pipelines of k >= 1 frames already spreads it over each pipeline's frames). The call's units
 * frames each save time_us[RAW] - time_us[coder]. RAW is never worth it (the call then runs as
 * plain NCCL). The executor's auto vote and the simulator's replay of it both ask this. */
typedef struct {
  double call_bytes;      /* nccl-tests' size of the call */
  double units;           /* frames one rank sends in it */
  double frame_raw_bytes; /* raw bytes of one of them */
  int data_class;         /* ncclzDataClass of the frames (the codec curves) */
  double pipeline_frames; /* the decision's (ncclzReaConfig): >= 1, its frame times hold the fill */
} ncclzReaCall;
int ncclzReaCallWorthIt(const ncclzProfile *prof, ncclzTransportHint hint, const ncclzReaDecision *d,
                        ncclzCoder coder, const ncclzReaCall *call);

/* REA's coder for one frame of frame_raw raw bytes whose wire size under each coder is predicted
 * (pred_bytes[c], RAW's included) rather than sampled: cfg's rules with a staging bank of one RAW
 * frame, the fast path, then the arbitration on `link`. The replay and the cost model decide
 * their frames with it, so they decide as each other. */
ncclzCoder ncclzReaDecidePredicted(const ncclzProfile *prof, const ncclzReaConfig *cfg, ncclzReaLink link,
                                   int data_class, double frame_raw, double pipeline_frames,
                                   const double pred_bytes[NCCLZ_CODER_COUNT], ncclzReaDecision *dec);

/* QSGD side bytes of a frame of n symbols (0 for other quantizers). */
uint32_t ncclzReaSideBytes(const ncclzQuantParams *q, size_t n);

/* Planning cost on the CPU: the mean time of ncclzReaPlan and of encoding the same frame with
 * `coder` (ncclzFrameEncode), over `reps` repetitions each. */
typedef struct {
  double plan_us;
  double encode_us;
  double ratio;      /* plan_us / encode_us */
} ncclzReaPlanCost;
ncclzStatus ncclzReaMeasurePlanningCost(const ncclzProfile *prof, const ncclzReaConfig *cfg,
                                        const int32_t *sym, size_t n, const ncclzFrameDesc *desc,
                                        ncclzCoder coder, int reps, ncclzReaPlanCost *out);

/* ------------------------------------------------------ device selector */

/* The REA on the GPU (model/rea_gpu.cu, library ncclz_model_cuda: CUDA builds only): a cluster of
 * blocks plans each frame of a device array with the decision functions the host path uses
 * (model/rea_decide.h), so that its results equal ncclzReaPlan's on the same symbols, bit for bit
 * (test_gpu_rea). The executor's auto decision plans its first chunk here, where the codes are,
 * instead of reading them back to the host. One planner serves one stream at a time. */
typedef struct ncclzReaGpuPlanner ncclzReaGpuPlanner;
/* A planner with its own copy of the profile (host and device). */
ncclzStatus ncclzReaGpuPlannerCreate(const ncclzProfile *prof, ncclzReaGpuPlanner **out);
void ncclzReaGpuPlannerDestroy(ncclzReaGpuPlanner *p);
/* Plans the ceil(n / frame_symbols) frames of d_sym (n symbols in device memory) on `stream` (a
 * cudaStream_t; NULL: the default stream), as ncclzReaPlan(prof, cfg, frame, desc, stage_cap)
 * would each frame (desc->side_bytes: every frame's, except that frames carrying QSGD scales,
 * desc->quant QSGD, each count their own buckets' words). Asynchronous; the config and its batch
 * part are copied to the device only when they change. d_coders: NULL, or a device word a frame
 * that receives its planned coder (ncclzCudaBatch.d_coders: the encode of Algorithm 1, steps 5-6,
 * on the GPU, with ncclzReaFallbackBytes as the batch's fallback_bytes). d_clk: NULL, or
 * NCCLZ_REA_CLK_COUNT device words for the clock64 stamps of frame 0's phases
 * (model/rea_device.cuh). */
ncclzStatus ncclzReaGpuPlanLaunch(ncclzReaGpuPlanner *p, const ncclzReaConfig *cfg, const int32_t *d_sym, size_t n,
                                  uint32_t frame_symbols, const ncclzFrameDesc *desc, size_t stage_cap, void *stream,
                                  uint32_t *d_coders, unsigned long long *d_clk);
/* Waits for the last launch and reads its first nf frames' decisions into res[] as ncclzReaPlan's
 * results (plan only: committed is RAW, nothing is encoded). */
ncclzStatus ncclzReaGpuPlanResults(ncclzReaGpuPlanner *p, ncclzReaResult *res, size_t nf);

/* ------------------------------------------------------ break-even surface */

/* One point: a message of `bytes` raw bytes over a link of `bandwidth_gbps`. */
typedef struct {
  double bandwidth_gbps;
  uint64_t bytes;
  ncclzCoder coder;
  double time_us;                            /* T of the chosen coder */
  double coder_us[NCCLZ_CODER_COUNT];        /* T_c of every coder */
  ncclzReaVerdict verdict[NCCLZ_CODER_COUNT];
  int fast_path;
} ncclzSurfacePoint;

/* The data the surface is drawn for. */
typedef struct {
  ncclzSampleStats stats;
  size_t dtype_bytes;            /* raw bytes per symbol */
  const ncclzQuantParams *quant; /* for the side bytes; NULL for quant none */
  ncclzCoderParams coder_params;
} ncclzSurfaceData;

/* Bandwidths and sizes are geometric grids (min, max inclusive when reached, factor > 1). */
typedef struct {
  double bw_min_gbps, bw_max_gbps, bw_factor;
  uint64_t size_min, size_max;
  double size_factor;
} ncclzSurfaceGrid;

/* 1 GB/s .. 1 TB/s (four steps a decade: 1, 1.78, 3.16, 5.62, 10, ...), 4 KiB .. 4 GiB (x4). */
void ncclzSurfaceGridDefault(ncclzSurfaceGrid *g);
/* The number of grid values on each axis; fills vals when non-NULL. */
size_t ncclzSurfaceBandwidths(const ncclzSurfaceGrid *g, double *vals, size_t cap);
size_t ncclzSurfaceSizes(const ncclzSurfaceGrid *g, uint64_t *vals, size_t cap);

/* Evaluates one point with the same decision functions as the executor: the message is cut into
 * frames of cfg's profile frame_bytes (or fewer), alpha and lambdas come from cfg->hint. */
void ncclzSurfacePointEval(const ncclzProfile *prof, const ncclzReaConfig *cfg, const ncclzSurfaceData *d,
                           double bandwidth_gbps, uint64_t bytes, ncclzSurfacePoint *pt);


/* ------------------------------------------------------ algorithm choice */

/* How the frames of a call are coded: plain NCCL (no frames, no codec), every frame FIXEDLEN or
 * HUFFMAN, or REA's arbitration per frame (NVLink hops raw). */
typedef enum {
  NCCLZ_CHOICE_PLAIN = 0,
  NCCLZ_CHOICE_FIXEDLEN = 1,
  NCCLZ_CHOICE_HUFFMAN = 2,
  NCCLZ_CHOICE_REA = 3,
  NCCLZ_CHOICE_CODERS = 4
} ncclzChoiceCoder;
const char *ncclzChoiceCoderName(ncclzChoiceCoder c); /* "plain", "fixedlen", "huffman", "rea" */

/* A call as the cost model sees it: the collective, the machine's two link classes and the data's
 * compression ratio per coder and ranks summed. Plain data, no pointers. */
#define NCCLZ_CHOICE_MAX_K 64
typedef struct {
  ncclzCollective coll;
  uint64_t bytes;               /* nccl-tests' size (AllReduce's buffer, AllGather's output, ...) */
  int nodes, gpus_per_node;     /* N = nodes x gpus_per_node ranks, contiguous */
  int rails;                    /* NICs per node; GPU g uses NIC g % rails */
  uint32_t channels;            /* ring and tree channels (0: the rails) */
  double nvlink_alpha_us, nvlink_gbps; /* one intra-node hop, per GPU and direction */
  double nic_alpha_us, nic_gbps;       /* one inter-node hop, per NIC and direction */
  double nic_flow_gbps;         /* the most one transfer gets through a NIC (0: the NIC's) */
  int data_class;               /* ncclzDataClass: the codec curves */
  uint32_t cr_ranks;            /* rows of cr, 0..NCCLZ_CHOICE_MAX_K (0: CR 1, nothing compresses) */
  double cr[NCCLZ_CODER_COUNT][NCCLZ_CHOICE_MAX_K]; /* CR of a frame summing k ranks' codes:
                                   cr[c][k-1] (header included), the last row beyond */
  uint64_t chunk_bytes;         /* raw bytes a chunk (one frame) holds (0: the profile's frame_bytes) */
  uint32_t min_chunks, max_chunks; /* chunks per op (0: 2 compressed, 1 plain; 0: 64) */
  uint32_t algorithms;          /* (1 << ncclzAlgorithm) the choice may take (0: all that run the call) */
  uint32_t coders;              /* (1 << ncclzChoiceCoder) likewise (0: all four) */
} ncclzChoiceInput;

/* The choice: the pair with the least predicted time, and every pair's prediction. */
typedef struct {
  ncclzAlgorithm algorithm;
  ncclzChoiceCoder coder;
  double time_us;
  double pair_us[NCCLZ_ALGO_COUNT][NCCLZ_CHOICE_CODERS]; /* NCCLZ_CHOICE_NO_TIME where the pair is not weighed */
} ncclzChoice;
#define NCCLZ_CHOICE_NO_TIME 1e300

/* Predicted time (us) of one (algorithm, policy) pair: the algorithm's steps (docs/simulator.md,
 * "Algorithm choice") on their links, each step's chunks a pipeline of encode, transfer and
 * decode (the profile's codec curves, REA's decision functions for the REA policy), plus the
 * interface of a compressed call. NCCLZ_CHOICE_NO_TIME when the algorithm does not run the call. */
double ncclzChoicePairUs(const ncclzProfile *prof, const ncclzChoiceInput *in, ncclzAlgorithm algo,
                         ncclzChoiceCoder policy);
/* Whether the model weighs collective c: AllReduce, ReduceScatter, AllGather (a choice of schedule
 * and coder), Broadcast (its ring's chains: a choice of coder, each frame's codec time on the
 * chain's period) and AlltoAll (its pairwise exchange: a choice of coder, every frame's codec time
 * on the rank's streams). */
int ncclzChoiceServes(ncclzCollective c);
/* Every allowed pair's prediction and the least. NCCLZ_ERR_ARG (one line) when the input is out of
 * range or no allowed pair runs the call. */
ncclzStatus ncclzChoose(const ncclzProfile *prof, const ncclzChoiceInput *in, ncclzChoice *out);

/* Chunks a chain pipeline cuts one channel's range of `range` bytes into (Broadcast's ring: the
 * root's chunks forwarded hop by hop over the N-1 hops of a chain of in->nodes x gpus_per_node
 * ranks, M(G-1) on NVLink and M-1 on the NICs): the count with the least predicted time, the fill
 * over every hop plus (C-1) times the slowest stage (a hop, or a frame's encode or decode with the
 * profile's codec curves). The fill wants small chunks, the codec's fixed cost per frame large
 * ones. At least ceil(range / chunk_bytes) and min_chunks (0: 2 compressed, 1 plain), at most
 * max_chunks (0: NCCLZ_CHAIN_MAX_CHUNKS). With no CR (cr_ranks 0: the executor cuts the schedule
 * before it sees the data) the count whose time is within the least factor of each CR's best, for
 * CR 1, 2, 4 and 8. The executor's chunks and the simulator's replay both take it. */
#define NCCLZ_CHAIN_MAX_CHUNKS 4096
uint32_t ncclzChainChunks(const ncclzProfile *prof, const ncclzChoiceInput *in, double range, ncclzChoiceCoder policy);

#ifdef __cplusplus
}
#endif
#endif /* NCCLZ_MODEL_H */
