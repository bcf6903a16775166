/* ncclz executor: compressed collectives that run the schedule/ op lists.
 *
 * This is the one public header of the exec layer (it may use codecs, schedule and model only).
 *
 * The engine runs one rank's op list (ncclzScheduleBuild) over a transport:
 *  - quantization happens once, at the interface: all ranks first agree on the quantization step
 *    (EB rel range via allreduce(min/max), QSGD bucket scales via allreduce(max)); with a final
 *    error bound E over k summed contributions every rank quantizes with ~E/k;
 *  - every chunk that is sent is one self-describing frame (codecs/FORMAT.md) whose coder comes
 *    from the policy (raw, fixedlen, huffman, or auto = REA per frame);
 *  - reductions add the integer codes (exact; no error compounds), gather phases forward the
 *    frames they received unchanged, and dequantization happens once at the end.
 *
 * Size protocol (variable frame sizes over transports that need matched counts, as NCCL does):
 * a control lane. Every frame's 64-byte header travels on the control lane, ahead of its payload,
 * and the receiver posts the payload receive with exactly the size the header names. The header
 * is part of the frame, so the bytes on the wire are exactly the sum of the frame sizes (1.00x),
 * and the lane carries no round trip: the sender never waits for the receiver. exec/engine.c
 * explains why this option was chosen over size-deterministic FIXEDLEN or piggy-backed headers.
 *
 * Transports: an in-process one (one thread per rank) and MPI (one process per rank); the NCCL
 * backend (point-to-point inside ncclGroupStart/End, on GPUs) is at the end. */
#ifndef NCCLZ_EXEC_H
#define NCCLZ_EXEC_H

#include <stddef.h>
#include <stdint.h>

#include "ncclz/codecs.h"
#include "ncclz/model.h"
#include "ncclz/schedule.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------ config */

typedef enum {
  NCCLZ_POLICY_OFF = 0,      /* no quantization, no frames: the plain collective's bytes */
  NCCLZ_POLICY_RAW = 1,      /* frames, every one RAW */
  NCCLZ_POLICY_FIXEDLEN = 2,
  NCCLZ_POLICY_HUFFMAN = 3,
  NCCLZ_POLICY_AUTO = 4,     /* REA picks the coder of every frame (needs a profile) */
  NCCLZ_POLICY_COUNT = 5
} ncclzCoderPolicy;

const char *ncclzPolicyName(ncclzCoderPolicy p); /* "off", "raw", "fixedlen", "huffman", "auto" */
int ncclzPolicyFromName(const char *name);       /* -1 if unknown */

typedef struct {
  ncclzQuantSpec quant;        /* none, eb:abs/rel (lorenzo only for allreduce/broadcast), qsgd */
  ncclzCoderPolicy policy;
  size_t chunk_bytes;          /* raw (input) bytes per chunk; one chunk = one frame. Default 4 MiB,
                                  the paper's 8-slot batch of NCCL_BUFFSIZE */
  uint32_t max_chunks;         /* at most this many chunks per block (default 0: 64; Broadcast's
                                  chains with a profile: ncclzChainChunks, up to
                                  NCCLZ_CHAIN_MAX_CHUNKS) */
  double final_error_bound;    /* > 0 (EB only): |result - exact result| <= this on every element;
                                  overrides the spec's number */
  const ncclzProfile *profile; /* REA costs and thresholds; required for auto */
  ncclzTransportHint hint;     /* the path REA plans for (default NET) */
  ncclzCoderParams coder_params; /* default: ncclzFrameCoderParams (model.h) */
  uint32_t dims[3];            /* Lorenzo shape (C order, dims[2] fastest); ndims 0: 1D */
  int ndims;
  uint32_t comm_lanes;         /* NCCL backend: 1 to NCCLZ_MAX_COMM_LANES communicators (streams)
                                  the units' frames alternate over, so that one unit's transfer
                                  starts while the others' run (default 4; the others are split
                                  from the first), with as many staging banks (at least 2) */
  int rea_per_frame;           /* NCCL backend, auto: 1 plans every frame on the GPU (the REA device
                                  selector, ahead of the frame's encode on the encode stream) and
                                  encodes it with its own coder, post-checked; 0 (default): the
                                  coder planned on the call's first chunk for every frame, each
                                  post-checked. The host engine plans every frame either way. */
  ncclzAlgorithm algorithm;    /* the schedule (schedule.h): ring, tree, rhd, hier; AUTO (default):
                                  with ranks_per_node nodes and a profile, the (algorithm, coder)
                                  pair of the cost model (ncclzChoose) for the call's sampled and
                                  agreed compression ratio, per call (ncclzExecStats.algorithm,
                                  .policy); the ring without them */
  int ranks_per_node;          /* consecutive ranks per node, for tree and hier and the ring's
                                  channels (0: all ranks on one node) */
  uint32_t channels;           /* ring channels (0: 1) */
} ncclzConfig;

#define NCCLZ_CHUNK_MIN_BYTES 64 /* the smallest chunk_bytes a config takes */
void ncclzConfigDefault(ncclzConfig *c);
/* The checks of a config on its own (no ranks involved): NCCLZ_ERR_ARG with a one-line message
 * naming the field, or NCCLZ_OK. ncclzHostCommInit and ncclzCommInit make them too; a tool calls
 * it to refuse a bad config before its first call. */
ncclzStatus ncclzConfigCheck(const ncclzConfig *cfg);
/* A stable fingerprint of everything that must agree across ranks (profile thresholds included). */
uint64_t ncclzConfigFingerprint(const ncclzConfig *c);

/* ---------------------------------------------------------------- transport */

enum { NCCLZ_LANE_CTRL = 0, NCCLZ_LANE_DATA = 1 };

/* Byte frames between ranks. A message is matched on (peer, tag, lane), tag = (step, chunk) as
 * schedule.h documents, and messages with equal keys arrive in order. recv must name exactly the
 * length that was sent (NCCL semantics; the CPU transports report a mismatch as an error). send
 * never waits for the receiver (it copies or queues). */
typedef struct ncclzTransport ncclzTransport;
struct ncclzTransport {
  int rank, nranks;
  ncclzStatus (*send)(ncclzTransport *t, int peer, uint64_t tag, int lane, const void *buf, size_t len);
  ncclzStatus (*recv)(ncclzTransport *t, int peer, uint64_t tag, int lane, void *buf, size_t len);
  /* Element-wise max over all ranks, in place (min: negate). Every rank must call it. */
  ncclzStatus (*allreduce_max)(ncclzTransport *t, double *vals, size_t n);
  /* Completes outstanding sends. */
  ncclzStatus (*flush)(ncclzTransport *t);
  /* After an error in the middle of a collective: wake every rank's waits with an error (thread
   * transport) or abort the job (MPI), so that nothing hangs. */
  void (*abort)(ncclzTransport *t, const char *why);
  void (*destroy)(ncclzTransport *t);
  uint64_t bytes_sent[2];      /* per lane, counted by the transport */
  void *impl;
};

/* In-process transport: nranks ranks, one thread each, in one process. */
typedef struct ncclzThreadGroup ncclzThreadGroup;
ncclzThreadGroup *ncclzThreadGroupCreate(int nranks);
ncclzTransport *ncclzThreadGroupTransport(ncclzThreadGroup *g, int rank); /* owned by the group */
void ncclzThreadGroupDestroy(ncclzThreadGroup *g);

/* MPI transport over a duplicate of MPI_COMM_WORLD (builds with NCCLZ_MPI only; these return
 * NCCLZ_ERR_ARG / NULL without it). ncclzMpiInit/Finalize wrap MPI_Init/Finalize so that callers
 * need not include mpi.h. */
int ncclzMpiAvailable(void);
ncclzStatus ncclzMpiInit(int *argc, char ***argv);
void ncclzMpiFinalize(void);
ncclzTransport *ncclzMpiTransportCreate(void);

/* ------------------------------------------------------------------- engine */

/* What one collective did, on this rank. */
typedef struct {
  uint64_t raw_bytes;          /* bytes the plain collective would have sent from this rank */
  uint64_t frame_bytes;        /* sum of the sizes of the frames this rank sent */
  uint64_t wire_bytes;         /* bytes this rank put on the transport, both lanes */
  uint64_t frames;
  uint64_t coder_mix[NCCLZ_CODER_COUNT];
  double error_bound;          /* derived bound on every element of the result (0: exact) */
  double quant_bound;          /* the bound each rank quantized with (its half-step for EB) */
  double t_agree, t_quant, t_encode, t_decode, t_reduce, t_wait_ctrl, t_wait_data, t_total; /* s */
  double t_unit_host;          /* s, GPU executor: the host's own time per pipeline unit (a chunk's
                                  send and receive): its issue loop without the waits for encodes
                                  (t_encode) and for the peers' headers (t_wait_ctrl), over the
                                  units; 0 without units */
  uint64_t chunks_received;    /* frames received (for the per-chunk protocol cost) */
  /* The (algorithm, coder policy) the call ran. Algorithm auto with nodes (ranks_per_node), a
   * profile and a collective the cost model weighs (allreduce, reducescatter, allgather,
   * broadcast): the pair ncclzChoose picks with the data's compression ratio, sampled on every rank after the
   * quantizer and agreed (the least compressible rank's, per coder); a plain pair (policy off)
   * runs the float collective. Otherwise the config's algorithm (or its auto default) and policy.
   * NCCL backend: a call that REA's earlier vote sends straight to NCCL reads auto/off (NCCL's own
   * collective). */
  ncclzAlgorithm algorithm;
  ncclzCoderPolicy policy;
  int pair_auto;               /* 1: the pair is the cost model's */
  double pair_cr[NCCLZ_CODER_COUNT]; /* the agreed CR per coder the pair was chosen with (0: none
                                  sampled, as under policy raw or off: nothing compresses) */
} ncclzExecStats;

typedef struct ncclzHostComm ncclzHostComm;

/* Checks the config on every rank and across ranks (a mismatch is an error on every rank; every
 * rank must call this). The transport stays owned by the caller. */
ncclzStatus ncclzHostCommInit(ncclzHostComm **out, ncclzTransport *t, const ncclzConfig *cfg);
void ncclzHostCommDestroy(ncclzHostComm *c);

/* Runs one collective with NCCL's buffer conventions: count is per rank's block (allreduce,
 * broadcast: the whole buffer; reducescatter: the output; allgather: the input; alltoall: per
 * peer). dtype f32, bf16 or f16; the op is a sum. sendbuff may equal recvbuff. stats may be NULL. */
ncclzStatus ncclzHostRun(ncclzHostComm *c, ncclzCollective coll, const void *sendbuff, void *recvbuff, size_t count,
                         ncclzDtype dtype, int root, ncclzExecStats *stats);

/* ----------------------------------------------------------------- NCCL path
 * Compressed collectives on GPUs (exec/nccl_*.cu; built with NCCLZ_CUDA, which defines
 * NCCLZ_HAVE_NCCL). Payload frames move with ncclSend/ncclRecv (one ncclGroupStart/End per
 * (step, chunk) of the schedule); their 64-byte headers move on the control lane of an
 * ncclzTransport (threads of one process, or MPI), the same size protocol as the host engine.
 * Every call is synchronous for the host (it returns when recvbuff is final): the host learns
 * every frame size anyway, and the end-of-call check of the device status words makes a corrupt
 * frame an error of this call. */
#ifdef NCCLZ_HAVE_NCCL
#ifdef __cplusplus
} /* nccl.h brings C++ operator overloads (cuda_fp16.h): include it outside extern "C" */
#endif
#include <cuda_runtime_api.h>
#include <nccl.h>
#ifdef __cplusplus
extern "C" {
#endif

typedef struct ncclzComm *ncclzComm_t;

/* Wraps an existing NCCL communicator (not owned: ncclzCommDestroy leaves it alone). ctrl is the
 * control lane (same ranks, same numbering as nccl; owned by the caller). The config is checked
 * on every rank and across ranks as ncclzHostCommInit does. The current CUDA device is the comm's. */
ncclzStatus ncclzCommInit(ncclzComm_t *out, ncclComm_t nccl, ncclzTransport *ctrl, const ncclzConfig *cfg);
/* Creates the NCCL communicator on `device`: rank 0's unique id travels over ctrl (MPI or threads). */
ncclzStatus ncclzCommInitCreate(ncclzComm_t *out, ncclzTransport *ctrl, int device, const ncclzConfig *cfg);
void ncclzCommDestroy(ncclzComm_t comm);
ncclComm_t ncclzCommNccl(ncclzComm_t comm);

/* NCCL's signatures. datatype ncclFloat32, ncclBfloat16 or ncclFloat16; op ncclSum (policy off
 * passes any op through to NCCL). count as NCCL: allreduce/broadcast the whole buffer,
 * reducescatter the output (recvcount), allgather the input (sendcount), alltoall per peer. */
ncclzStatus ncclzAllReduce(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype,
                           ncclRedOp_t op, ncclzComm_t comm, cudaStream_t stream);
ncclzStatus ncclzReduceScatter(const void *sendbuff, void *recvbuff, size_t recvcount, ncclDataType_t datatype,
                               ncclRedOp_t op, ncclzComm_t comm, cudaStream_t stream);
ncclzStatus ncclzAllGather(const void *sendbuff, void *recvbuff, size_t sendcount, ncclDataType_t datatype,
                           ncclzComm_t comm, cudaStream_t stream);
ncclzStatus ncclzAlltoAll(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype,
                          ncclzComm_t comm, cudaStream_t stream);
ncclzStatus ncclzBroadcast(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype, int root,
                           ncclzComm_t comm, cudaStream_t stream);

/* Inside ncclzGroupStart/End, calls are queued and run in order at ncclzGroupEnd (a framed call
 * learns frame sizes on the host, so it cannot sit inside NCCL's own group deferral). Policy off
 * calls also run at End, inside one ncclGroupStart/End. The buffers must stay valid until End. */
ncclzStatus ncclzGroupStart(void);
ncclzStatus ncclzGroupEnd(void);

/* What the last call on this comm did (timings: t_total on the host; per-phase GPU times only
 * while tracing). */
void ncclzCommLastStats(ncclzComm_t comm, ncclzExecStats *stats);

/* Tracing: while on, every call records CUDA events per chunk (encode, send/recv, decode, reduce)
 * and keeps the timeline of the last call. Times are microseconds of CLOCK_REALTIME, so the
 * ranks of one host line up. */
typedef struct {
  const char *name;   /* "quantize", "encode", "sendrecv", "send", "recv", "decode", "reduce", "dequantize" */
  int lane;           /* 0 interface (user stream), 1 encode stream, 2 NCCL stream, 3 decode stream */
  double ts_us, dur_us;
  uint32_t step, chunk;
  uint64_t bytes;     /* frame bytes sent or received (encode/decode: frame size) */
} ncclzTraceEvent;

typedef struct {
  double total_us;    /* the call, first to last event */
  double comm_us;     /* union of the NCCL intervals */
  double codec_us;    /* sum of encode + decode + reduce (the pipelined codec work) */
  double exposed_us;  /* the part of codec_us outside every NCCL interval */
  double iface_us;    /* quantize + agreement + dequantize (once per call, not pipelined) */
} ncclzTraceSummary;

void ncclzCommSetTrace(ncclzComm_t comm, int on);
/* The last traced call's events (owned by the comm, valid until its next call) and summary. */
void ncclzCommTrace(ncclzComm_t comm, const ncclzTraceEvent **events, size_t *n, ncclzTraceSummary *sum);
#endif /* NCCLZ_HAVE_NCCL */

#ifdef __cplusplus
}
#endif
#endif /* NCCLZ_EXEC_H */
