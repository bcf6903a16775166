/* Private to the NCCL backend (exec/nccl_*.cu): the communicator, its buffers and one call's state,
 * the error macros, and the functions the backend's files share. The design is described at the top
 * of exec/nccl_exec.cu. */
#pragma once

#include "ncclz/codecs_cuda.h"
#include "ncclz/exec.h"
#include "call_rules.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <algorithm>
#include <vector>

/* ------------------------------------------------------------ errors */

#define CU(call)                                                                                    \
  do {                                                                                              \
    cudaError_t e_ = (call);                                                                        \
    if (e_ != cudaSuccess)                                                                          \
      return ncclzSetError(NCCLZ_ERR_CUDA, "%s: %s (%s:%d)", #call, cudaGetErrorString(e_), __FILE__, __LINE__); \
  } while (0)
#define NC(call)                                                                                    \
  do {                                                                                              \
    ncclResult_t r_ = (call);                                                                       \
    if (r_ != ncclSuccess)                                                                          \
      return ncclzSetError(NCCLZ_ERR_IO, "%s: %s", #call, ncclGetErrorString(r_));                  \
  } while (0)
#define TRY(call)                                                                                   \
  do {                                                                                              \
    ncclzStatus s_ = (call);                                                                        \
    if (s_) return s_;                                                                              \
  } while (0)

/* ------------------------------------------------------------ comm */

struct dbuf {
  void *p = nullptr;
  size_t cap = 0;
};

struct hbuf {
  void *p = nullptr;
  size_t cap = 0;
};

struct decision {
  int coll;
  size_t count;
  int dtype;
  uint64_t calls;
  int bypass;
  ncclzCoder coder[2];  /* per link class (NCCLZ_LINK_*): the coder of the hops of that class */
  uint64_t next_plan;   /* the call that decides next (0: the first) */
  uint64_t gap;         /* calls from this decision to the next */
  uint64_t plain_bytes; /* bytes the plain collective sends from this rank (the stats of a bypass) */
};

/* Per-unit timing events (tracing only). */
enum { TE_ENC0, TE_ENC1, TE_COM0, TE_COM1, TE_DEC0, TE_DEC1, TE_RED1, TE_COUNT };

/* Comm lanes (ncclzConfig.comm_lanes) and staging banks: unit u sends from and receives into bank
 * u % banks and travels on lane tag % lanes (the unit's message tag: both sides of every transfer
 * pick the same lane, whatever the shape of their lists); banks = max(2, lanes), so as many units
 * as lanes can be in flight at once. */
#define NZ_MAX_LANES NCCLZ_MAX_COMM_LANES
#define NZ_STREAMS (1 + 2 * NZ_MAX_LANES) /* s_enc, s_lane[], s_dec[] */

struct ncclzComm {
  ncclComm_t nccl = nullptr;
  int owned = 0, dev = 0, rank = 0, nranks = 1, broken = 0;
  ncclzTransport *t = nullptr;
  ncclzConfig cfg;
  ncclzProfile profile;
  ncclzReaConfig rea;       /* REA for the config's hint */
  ncclzReaConfig rea_intra; /* REA for a hop inside a node (NVLink costs) when ranks_per_node is set */
  cudaStream_t s_enc = nullptr;
  /* decode streams, one per comm lane: a single frame's HUFFMAN decode is latency-bound (one
   * thread per segment), so the lanes' frames decode side by side */
  cudaStream_t s_dec[NZ_MAX_LANES] = {};
  /* comm lanes: unit u's NCCL group goes to lane u % lanes, its communicator and stream (lane 0:
   * nccl itself); with more than one, a unit's transfer starts while the previous ones' still run */
  int lanes = 1;
  ncclComm_t lane_comm[NZ_MAX_LANES] = {};
  cudaStream_t s_lane[NZ_MAX_LANES] = {};
  cudaEvent_t ev_enc[NZ_MAX_LANES], ev_sent[NZ_MAX_LANES], ev_recvd[NZ_MAX_LANES], ev_rfree[NZ_MAX_LANES], ev_fork,
      ev_join[NZ_STREAMS];
  std::vector<cudaEvent_t> ev_done;  /* per unit: its decode/reduce/keep finished */
  std::vector<cudaEvent_t> ev_trace; /* per unit TE_COUNT, + 4 for the interface */
  dbuf cells_in, cells_out, xf, yf, scales, agree, scan, sbank[NZ_MAX_LANES], rbank, rsym[NZ_MAX_LANES], esym, ews,
      dws[NZ_MAX_LANES], arena, status, fbytes, qstats, qws;
  hbuf hdr_out, hdr_in, host_small, host_status;
  ncclzReaGpuPlanner *planner = nullptr; /* the auto decision's device selector (made at its first use) */
  dbuf dcoders; /* rea_per_frame: each send bank's frame coder, as the selector writes it */
  std::vector<decision> decisions;
  ncclzExecStats last;
  int trace = 0;
  std::vector<ncclzTraceEvent> events;
  ncclzTraceSummary summary;
};

/* One call in progress. */
struct grun {
  ncclzComm *c;
  ncclzSchedule s;
  ncclzCollective coll;
  ncclzDtype dt;
  size_t ds, count, n_in, n_out, max_chunk, slot;
  int quantized, root, has_input;
  ncclzCoderPolicy policy; /* the call's (the config's, or the auto pair's) */
  double gmax;             /* agreed max |x| (quantized modes) */
  ncclzQuantParams qp;
  size_t n_scales;
  int32_t *in, *work, *out;
  ncclzCoder coder[2]; /* per link class: the call's coder (auto: planned on the call's first chunk) */
  ncclzUnitList ul;     /* the schedule's units (ncclzScheduleUnits) */
  /* per unit and lane: the latest unit up to it whose receive moves data on that lane (-1: none);
   * a send waits for these of its dep's unit: every receive up to dep, on every lane */
  std::vector<int32_t> recv_upto;
  ncclzExecStats *st;
  cudaStream_t stream;
  double t_start_wall;
};

/* Unit u's lane: its comm stream and communicator, its decode stream and workspaces. */
static inline int lane_of(const grun *r, size_t u) { return (int)(r->ul.units[u].tag % (uint64_t)r->c->lanes); }
/* The stream of unit u's comm lane (its NCCL group, the copy of its received header). */
static inline cudaStream_t lane_stream(const grun *r, size_t u) { return r->c->s_lane[lane_of(r, u)]; }
/* Staging banks: one per lane, at least two (one lane still encodes unit u+1 while u travels). */
static inline int bank_count(const ncclzComm *c) { return c->lanes < 2 ? 2 : c->lanes; }
/* Unit u's staging bank: its send bank, receive slot and their events. */
static inline int bank_of(const ncclzComm *c, size_t u) { return (int)(u % (size_t)bank_count(c)); }

/* ------------------------------------------------------------ shared between the files */

/* exec/nccl_exec.cu: the monotonic clock in seconds. */
double now_s(void);

/* exec/nccl_comm.cu: grow-only device and pinned host buffers. */
ncclzStatus ensure(dbuf *b, size_t bytes);
ncclzStatus ensure_host(hbuf *b, size_t bytes);

/* exec/nccl_iface.cu: the call's interface (agreement, quantization, dequantization) and the auto
 * decision; grid_for sizes the grids of every kernel of the backend. */
unsigned grid_for(size_t n);
ncclzStatus input_floats(grun *r, const void *sendbuff, const float **x);
ncclzStatus agree(grun *r, const float *x);
ncclzStatus quantize(grun *r, const void *sendbuff, const float *x);
ncclzStatus finish(grun *r, void *recvbuff);
decision *find_decision(ncclzComm *c, ncclzCollective coll, size_t count, ncclzDtype dt);
ncclzReaConfig call_rea_config(const grun *r, int link); /* link: NCCLZ_LINK_* of the hop */
ncclzStatus ensure_planner(ncclzComm *c); /* c->planner, made at its first use */
ncclzStatus decide(grun *r, decision *d);
/* The auto pair (exec/call_rules.h): sample the codes, agree, ncclzChoose; rebuilds the schedule,
 * units and buffers for the chosen algorithm; *plain: run the plain collective. */
ncclzStatus choose_pair(grun *r, int *plain);

/* exec/nccl_pipeline.cu: set-up of one call and the unit pipeline. */
/* Quant none, bf16/f16: n float cells as the dtype's bit patterns, the symbols its frames code. */
ncclzStatus cells_to_symbols(const grun *r, const float *cells, size_t n, int32_t *sym, cudaStream_t s);
ncclzStatus build_units(grun *r);
ncclzStatus alloc_call(grun *r);
void init_qparams(grun *r);
ncclzStatus run_copies(grun *r);
ncclzStatus run_units(grun *r);
ncclzStatus check_status(grun *r);

/* exec/nccl_trace.cu: trace events (recorded only when the communicator traces) and the summary. */
cudaEvent_t tev(grun *r, size_t u, int k);
void trace_rec(grun *r, size_t u, int k, cudaStream_t s);
void trace_iface(grun *r, int k);
void summarize_trace(grun *r);
