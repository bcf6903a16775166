/* The NCCL backend of the executor: the schedule/ op lists on GPUs, with NCCL point-to-point.
 *
 * One call, on one rank:
 *  1. agreement: a scan kernel (non-finite count, range, max |x|) and, for QSGD, the local bucket
 *     scales; one small ncclAllReduce(max) of [call fingerprint, counts, range] (a mismatched call
 *     or NaN fails on every rank, nobody hangs), then ncclAllReduce(max) of the QSGD scales;
 *  2. quantization once, on the user stream, into int32 code cells (quant none: float cells);
 *  3. the op list, unit by unit (a unit = the ops of one (step, chunk): at most one send and one
 *     recv), pipelined over three internal streams:
 *       s_enc : encode unit u+1 into send bank (u+1)%2        (waits: that bank's last send, the dep)
 *       s_comm: ncclGroupStart; ncclSend; ncclRecv; ncclGroupEnd of unit u
 *       s_dec : decode unit u from recv bank u%2, add the codes (reduce) or store them
 *     so chunk k+1 is encoded while chunk k is on the wire and chunk k is decoded while k+1
 *     arrives (ping-pong banks: a bank is reused only after the event of its last user);
 *  4. dequantization once, on the user stream; then one synchronisation and the check of the
 *     decoders' status words (a corrupt frame is an error of this call).
 *
 * Size protocol: the control lane of the host engine (exec/engine.c explains the choice). The
 * encoder writes the frame into a bank; its 64-byte header is copied to pinned host memory and
 * the host waits for that copy only (an event of s_enc), then sends the header over the
 * ncclzTransport control lane and posts ncclSend(payload, payload_bytes). The receiver gets the
 * header from the lane, copies it in front of the bank (the decoder wants whole frames) and posts
 * ncclRecv(payload_bytes). Wire bytes = the frame bytes exactly (1.00x: header on the lane, payload
 * on NCCL). The lane never waits for NCCL and NCCL never waits for the lane's round trip: the
 * header of unit u+1 leaves as soon as its encode is done, while unit u's payload is in flight,
 * so the receive of u+1 is queued on s_comm before u finishes. The cost that remains (the
 * "bubble") is the host's wait for the encode of the first chunk and for headers whose encode
 * lags the wire; the trace shows it as gaps between NCCL intervals.
 *
 * Auto (REA): one decision per message signature (collective, count, dtype), not per frame:
 * per-frame decisions would need a device-to-host read of every frame's sample before its
 * encode, a stall per chunk. The first call of a signature (and later ones, NCCLZ_REPLAN calls
 * apart at first, the gap doubling up to NCCLZ_REPLAN_MAX while the vote stays the same) copies
 * its first chunk of codes back, runs ncclzReaPlan for a frame of the real chunk size, and the
 * ranks agree (allreduce max over the lane) whether anybody wants a coder (a rank wants one when
 * its frame's gain, over the call's units, pays for the call's interface and the host's time per
 * unit: ncclzReaCallWorthIt). If nobody does, the
 * message goes as the plain NCCL collective on the original floats ("bypass": RAW frames of int32
 * codes cannot beat it, and it is exact); otherwise every rank encodes with its own planned coder
 * (frames are self-describing; decoders accept every coder). */
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

/* Calls between two REA decisions of one signature: NCCLZ_REPLAN, doubled after every decision
 * that keeps the ranks' vote (compress or bypass) up to NCCLZ_REPLAN_MAX. A decision quantizes the
 * message and reads a chunk back (~1 ms at 64 MiB on an H200); every 64th call of a bypassed
 * 64 MiB AllReduce over NVLink cost 6% of its time (2026-11-30). */
#define NCCLZ_REPLAN 64
#define NCCLZ_REPLAN_MAX 8192

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

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}
static double wall_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (double)ts.tv_sec * 1e6 + 1e-3 * (double)ts.tv_nsec;
}

/* ------------------------------------------------------------ kernels */

static unsigned grid_for(size_t n) {
  size_t g = (n + 255) / 256;
  return (unsigned)(g < 1 ? 1 : g > 8192 ? 8192 : g);
}

__device__ static float cell_from(const void *src, int dt, size_t i) {
  if (dt == NCCLZ_DTYPE_BF16) return __bfloat162float(((const __nv_bfloat16 *)src)[i]);
  if (dt == NCCLZ_DTYPE_F16) return __half2float(((const __half *)src)[i]);
  return ((const float *)src)[i];
}

__global__ static void k_to_float(const void *src, int dt, size_t n, float *dst) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
    dst[i] = cell_from(src, dt, i);
}

__global__ static void k_from_float(const float *src, size_t n, int dt, void *dst) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
    if (dt == NCCLZ_DTYPE_BF16)
      ((__nv_bfloat16 *)dst)[i] = __float2bfloat16_rn(src[i]);
    else if (dt == NCCLZ_DTYPE_F16)
      ((__half *)dst)[i] = __float2half_rn(src[i]);
    else
      ((float *)dst)[i] = src[i];
  }
}

/* Quant none, bf16/f16: float cells -> the dtype's bit patterns as symbols (what the host sends). */
__global__ static void k_cells_to_sym(const float *cells, size_t n, int dt, int32_t *sym) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
    unsigned short h = dt == NCCLZ_DTYPE_BF16 ? __bfloat16_as_ushort(__float2bfloat16_rn(cells[i]))
                                              : __half_as_ushort(__float2half_rn(cells[i]));
    sym[i] = h;
  }
}

__device__ static float sym_value(int32_t s, int dt) {
  if (dt == NCCLZ_DTYPE_BF16) return __bfloat162float(__ushort_as_bfloat16((unsigned short)s));
  if (dt == NCCLZ_DTYPE_F16) return __half2float(__ushort_as_half((unsigned short)s));
  return __int_as_float(s);
}

/* Reduction on the codes: quantized cells add as integers (fill absorbs; the agreement keeps sums
 * inside int32), quant none cells add as floats, as NCCL does. */
__global__ static void k_reduce(int32_t *work, const int32_t *sym, size_t n, int quantized, int dt) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
    if (quantized) {
      int32_t a = work[i], b = sym[i];
      work[i] = a == NCCLZ_FILL_CODE || b == NCCLZ_FILL_CODE ? NCCLZ_FILL_CODE : (int32_t)((uint32_t)a + (uint32_t)b);
    } else {
      ((float *)work)[i] += sym_value(sym[i], dt);
    }
  }
}

__global__ static void k_sym_to_cells(const int32_t *sym, size_t n, int dt, float *cells) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
    cells[i] = sym_value(sym[i], dt);
}

/* QSGD dequantization with the scale of each output element's input coordinate (mode: the
 * collective; as exec/agree.c's in_coord). Same arithmetic as the host: code * scale / s in double. */
__global__ static void k_dequant_qsgd(const int32_t *codes, size_t n, const float *scales, uint32_t bucket, double s,
                                      int coll, size_t count, size_t me, float *y) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
    size_t c = coll == NCCLZ_REDUCESCATTER ? me * count + i
               : coll == NCCLZ_ALLGATHER   ? i % count
               : coll == NCCLZ_ALLTOALL    ? me * count + i % count
                                           : i;
    y[i] = (float)((double)codes[i] * (double)scales[c / bucket] / s);
  }
}

/* Agreement scan. Order-preserving uint keys let atomicMin/Max work on floats. Written by hand,
 * not cub::DeviceReduce: five results (two counts, min, max, max |x|) in one pass over the input
 * into a struct that the next kernel reads on the same stream, with no temporary storage to size
 * and no extra launch per call; the warp step is the shuffle tree CUB's WarpReduce also uses. */
__device__ static unsigned f_key(float f) {
  unsigned b = __float_as_uint(f);
  return (b & 0x80000000u) ? ~b : b | 0x80000000u;
}
__device__ static float key_f(unsigned k) { return __uint_as_float((k & 0x80000000u) ? k & 0x7fffffffu : ~k); }

struct ScanOut {
  unsigned long long nonfinite, huge;
  unsigned kmin, kmax, kabs;
};

__global__ static void k_scan(const float *x, size_t n, int eb, int has_fill, float fill, ScanOut *o) {
  unsigned long long nf = 0, hg = 0;
  unsigned kmin = 0xffffffffu, kmax = 0, kabs = 0;
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
    float f = x[i];
    if (!isfinite(f)) {
      nf++;
      continue;
    }
    if (eb && has_fill && f == fill) continue;
    if (eb && fabsf(f) >= NCCLZ_EB_HUGE_VALUE) hg++;
    unsigned k = f_key(f);
    kmin = min(kmin, k);
    kmax = max(kmax, k);
    kabs = max(kabs, __float_as_uint(fabsf(f)));
  }
  for (int d = 16; d; d >>= 1) {
    nf += __shfl_down_sync(0xffffffffu, nf, d);
    hg += __shfl_down_sync(0xffffffffu, hg, d);
    kmin = min(kmin, __shfl_down_sync(0xffffffffu, kmin, d));
    kmax = max(kmax, __shfl_down_sync(0xffffffffu, kmax, d));
    kabs = max(kabs, __shfl_down_sync(0xffffffffu, kabs, d));
  }
  if ((threadIdx.x & 31) == 0) {
    if (nf) atomicAdd(&o->nonfinite, nf);
    if (hg) atomicAdd(&o->huge, hg);
    atomicMin(&o->kmin, kmin);
    atomicMax(&o->kmax, kmax);
    atomicMax(&o->kabs, kabs);
  }
}


__global__ static void k_agree_fill(const ScanOut *o, int has_input, double *v) {
  int any = has_input && o->kmax != 0;
  v[V_NONFINITE] = has_input ? (double)o->nonfinite : 0.0;
  v[V_HUGE] = has_input ? (double)o->huge : 0.0;
  v[V_NEG_MIN] = any ? -(double)key_f(o->kmin) : -HUGE_VAL;
  v[V_MAX] = any ? (double)key_f(o->kmax) : -HUGE_VAL;
  v[V_MAXABS] = any ? (double)__uint_as_float(o->kabs) : 0.0;
}

/* ------------------------------------------------------------ comm */

struct dbuf {
  void *p = nullptr;
  size_t cap = 0;
};

/* Grow-only device buffer (every call ends synchronised, so a free here never races). */
static ncclzStatus ensure(dbuf *b, size_t bytes) {
  if (bytes <= b->cap) return NCCLZ_OK;
  if (b->p) CU(cudaFree(b->p));
  b->p = nullptr;
  b->cap = 0;
  size_t want = bytes + bytes / 8 + 256;
  CU(cudaMalloc(&b->p, want));
  b->cap = want;
  return NCCLZ_OK;
}

struct hbuf {
  void *p = nullptr;
  size_t cap = 0;
};
static ncclzStatus ensure_host(hbuf *b, size_t bytes) {
  if (bytes <= b->cap) return NCCLZ_OK;
  if (b->p) CU(cudaFreeHost(b->p));
  b->p = nullptr;
  b->cap = 0;
  CU(cudaHostAlloc(&b->p, bytes * 2 + 64, cudaHostAllocDefault));
  b->cap = bytes * 2 + 64;
  return NCCLZ_OK;
}

struct decision {
  int coll;
  size_t count;
  int dtype;
  uint64_t calls;
  int bypass;
  ncclzCoder coder;
  uint64_t next_plan;   /* the call that decides next (0: the first) */
  uint64_t gap;         /* calls from this decision to the next */
  uint64_t plain_bytes; /* bytes the plain collective sends from this rank (the stats of a bypass) */
};

/* Per-unit timing events (tracing only). */
enum { TE_ENC0, TE_ENC1, TE_COM0, TE_COM1, TE_DEC0, TE_DEC1, TE_RED1, TE_COUNT };

struct ncclzComm {
  ncclComm_t nccl = nullptr;
  int owned = 0, dev = 0, rank = 0, nranks = 1, broken = 0;
  ncclzTransport *t = nullptr;
  ncclzConfig cfg;
  ncclzProfile profile;
  ncclzReaConfig rea;
  cudaStream_t s_enc = nullptr, s_comm = nullptr, s_dec = nullptr;
  cudaEvent_t ev_enc[2], ev_sent[2], ev_recvd[2], ev_rfree[2], ev_fork, ev_join[3];
  std::vector<cudaEvent_t> ev_done;  /* per unit: its decode/reduce/keep finished */
  std::vector<cudaEvent_t> ev_trace; /* per unit TE_COUNT, + 4 for the interface */
  dbuf cells_in, cells_out, xf, yf, scales, agree, scan, sbank[2], rbank, rsym, esym, ews, dws, arena, status,
      fbytes, qstats, qws;
  hbuf hdr_out, hdr_in, host_small, host_status, sample;
  std::vector<decision> decisions;
  ncclzExecStats last;
  int trace = 0;
  std::vector<ncclzTraceEvent> events;
  ncclzTraceSummary summary;
};

/* One call in progress. */
struct unit_t {
  int send = -1, recv = -1;
  size_t soff = 0, slen = 0, roff = 0, rlen = 0;
  int kept = -1; /* arena slot of a KEEP recv */
};

struct grun {
  ncclzComm *c;
  ncclzSchedule s;
  ncclzCollective coll;
  ncclzDtype dt;
  size_t ds, count, n_in, n_out, max_chunk, slot;
  int quantized, root, has_input;
  ncclzQuantParams qp;
  size_t n_scales;
  int32_t *in, *work, *out;
  ncclzCoder coder;
  std::vector<unit_t> units;
  std::vector<int> unit_of_op;
  std::vector<uint64_t> payload_in; /* per unit: payload bytes received (for KEEP forwards) */
  ncclzExecStats *st;
  cudaStream_t stream;
  double t_start_wall;
};

static uint8_t *hdr_out(grun *r, size_t u) { return (uint8_t *)r->c->hdr_out.p + 64 * u; }
static uint8_t *hdr_in(grun *r, size_t u) { return (uint8_t *)r->c->hdr_in.p + 64 * u; }

static ncclzStatus make_streams(ncclzComm *c) {
  CU(cudaStreamCreateWithFlags(&c->s_enc, cudaStreamNonBlocking));
  CU(cudaStreamCreateWithFlags(&c->s_comm, cudaStreamNonBlocking));
  CU(cudaStreamCreateWithFlags(&c->s_dec, cudaStreamNonBlocking));
  for (int i = 0; i < 2; i++) {
    CU(cudaEventCreateWithFlags(&c->ev_enc[i], cudaEventDisableTiming));
    CU(cudaEventCreateWithFlags(&c->ev_sent[i], cudaEventDisableTiming));
    CU(cudaEventCreateWithFlags(&c->ev_recvd[i], cudaEventDisableTiming));
    CU(cudaEventCreateWithFlags(&c->ev_rfree[i], cudaEventDisableTiming));
  }
  CU(cudaEventCreateWithFlags(&c->ev_fork, cudaEventDisableTiming));
  for (int i = 0; i < 3; i++) CU(cudaEventCreateWithFlags(&c->ev_join[i], cudaEventDisableTiming));
  return NCCLZ_OK;
}

ncclzStatus ncclzCommInit(ncclzComm_t *out, ncclComm_t nccl, ncclzTransport *ctrl, const ncclzConfig *cfg) {
  *out = nullptr;
  if (!nccl || !ctrl || !cfg) return ncclzSetError(NCCLZ_ERR_ARG, "ncclzCommInit: NULL communicator, lane or config");
  int nr = 0, rk = 0;
  NC(ncclCommCount(nccl, &nr));
  NC(ncclCommUserRank(nccl, &rk));
  if (nr != ctrl->nranks || rk != ctrl->rank)
    return ncclzSetError(NCCLZ_ERR_ARG, "ncclzCommInit: NCCL rank %d of %d, control lane rank %d of %d", rk, nr,
                         ctrl->rank, ctrl->nranks);
  ncclzHostComm *hc = nullptr; /* the same checks and cross-rank fingerprint as the host engine */
  TRY(ncclzHostCommInit(&hc, ctrl, cfg));
  ncclzHostCommDestroy(hc);
  ncclzComm *c = new ncclzComm();
  c->nccl = nccl;
  c->t = ctrl;
  c->rank = rk;
  c->nranks = nr;
  c->cfg = *cfg;
  if (cfg->profile) {
    c->profile = *cfg->profile; /* own copy: the caller's may go away */
    c->cfg.profile = &c->profile;
    ncclzReaConfigFromProfile(&c->profile, cfg->hint, NCCLZ_CLASS_DEFAULT, &c->rea);
  }
  cudaGetDevice(&c->dev);
  memset(&c->last, 0, sizeof c->last);
  memset(&c->summary, 0, sizeof c->summary);
  ncclzStatus st = make_streams(c);
  if (st) {
    delete c;
    return st;
  }
  *out = c;
  return NCCLZ_OK;
}

ncclzStatus ncclzCommInitCreate(ncclzComm_t *out, ncclzTransport *ctrl, int device, const ncclzConfig *cfg) {
  *out = nullptr;
  if (!ctrl) return ncclzSetError(NCCLZ_ERR_ARG, "ncclzCommInitCreate: NULL control lane");
  CU(cudaSetDevice(device));
  ncclUniqueId id;
  memset(&id, 0, sizeof id);
  const uint64_t tag = 0xFFFFFFF0ull; /* outside every (step, chunk) tag of a collective */
  if (ctrl->rank == 0) {
    NC(ncclGetUniqueId(&id));
    for (int p = 1; p < ctrl->nranks; p++) TRY(ctrl->send(ctrl, p, tag, NCCLZ_LANE_CTRL, &id, sizeof id));
    TRY(ctrl->flush(ctrl));
  } else {
    TRY(ctrl->recv(ctrl, 0, tag, NCCLZ_LANE_CTRL, &id, sizeof id));
  }
  ncclComm_t nc;
  NC(ncclCommInitRank(&nc, ctrl->nranks, id, ctrl->rank));
  ncclzStatus st = ncclzCommInit(out, nc, ctrl, cfg);
  if (st) {
    ncclCommDestroy(nc);
    return st;
  }
  (*out)->owned = 1;
  return NCCLZ_OK;
}

static void free_dbuf(dbuf *b) {
  if (b->p) cudaFree(b->p);
  b->p = nullptr;
}

void ncclzCommDestroy(ncclzComm_t c) {
  if (!c) return;
  cudaSetDevice(c->dev);
  dbuf *bufs[] = {&c->cells_in, &c->cells_out, &c->xf,    &c->yf,   &c->scales, &c->agree,  &c->scan,
                  &c->sbank[0], &c->sbank[1],  &c->rbank, &c->rsym, &c->esym,   &c->ews,    &c->dws,
                  &c->arena,    &c->status,    &c->fbytes, &c->qstats, &c->qws};
  for (dbuf *b : bufs) free_dbuf(b);
  hbuf *hb[] = {&c->hdr_out, &c->hdr_in, &c->host_small, &c->host_status, &c->sample};
  for (hbuf *b : hb)
    if (b->p) cudaFreeHost(b->p);
  for (int i = 0; i < 2; i++) {
    cudaEventDestroy(c->ev_enc[i]);
    cudaEventDestroy(c->ev_sent[i]);
    cudaEventDestroy(c->ev_recvd[i]);
    cudaEventDestroy(c->ev_rfree[i]);
  }
  cudaEventDestroy(c->ev_fork);
  for (int i = 0; i < 3; i++) cudaEventDestroy(c->ev_join[i]);
  for (cudaEvent_t e : c->ev_done) cudaEventDestroy(e);
  for (cudaEvent_t e : c->ev_trace) cudaEventDestroy(e);
  cudaStreamDestroy(c->s_enc);
  cudaStreamDestroy(c->s_comm);
  cudaStreamDestroy(c->s_dec);
  if (c->owned) {
    if (c->broken)
      ncclCommAbort(c->nccl);
    else
      ncclCommDestroy(c->nccl);
  }
  delete c;
}

ncclComm_t ncclzCommNccl(ncclzComm_t c) { return c ? c->nccl : nullptr; }
void ncclzCommLastStats(ncclzComm_t c, ncclzExecStats *s) {
  if (c && s) *s = c->last;
}
void ncclzCommSetTrace(ncclzComm_t c, int on) {
  if (c) c->trace = on;
}
void ncclzCommTrace(ncclzComm_t c, const ncclzTraceEvent **ev, size_t *n, ncclzTraceSummary *sum) {
  if (ev) *ev = c->events.empty() ? nullptr : c->events.data();
  if (n) *n = c->events.size();
  if (sum) *sum = c->summary;
}

/* ------------------------------------------------------------ agreement (rules in exec/call_rules.c) */

static int contributions(const grun *r) {
  return r->coll == NCCLZ_ALLREDUCE || r->coll == NCCLZ_REDUCESCATTER ? r->c->nranks : 1;
}

static ncclzStatus derive_eb(grun *r, const double *v) {
  ncclzStatus st = ncclz_exec_derive_eb(&r->c->cfg, r->dt, contributions(r), v, &r->qp, &r->st->error_bound);
  if (st == NCCLZ_OK) r->st->quant_bound = r->qp.abs_eb;
  return st;
}

static uint64_t call_fingerprint(const grun *r) {
  uint64_t v[5] = {(uint64_t)r->coll, (uint64_t)r->count, (uint64_t)r->dt,
                   (uint64_t)(r->coll == NCCLZ_BROADCAST ? r->root : 0), ncclzConfigFingerprint(&r->c->cfg)};
  return ncclzFnv1a((const uint8_t *)v, sizeof v) * 0x9E3779B97F4A7C15ull ^ v[4];
}

/* The float view of the input (f32: the user's buffer itself). */
static ncclzStatus input_floats(grun *r, const void *sendbuff, const float **x) {
  *x = nullptr;
  if (!r->has_input || !r->n_in) return NCCLZ_OK;
  if (r->dt == NCCLZ_DTYPE_F32) {
    *x = (const float *)sendbuff;
    return NCCLZ_OK;
  }
  TRY(ensure(&r->c->xf, r->n_in * 4));
  k_to_float<<<grid_for(r->n_in), 256, 0, r->stream>>>(sendbuff, r->dt, r->n_in, (float *)r->c->xf.p);
  CU(cudaGetLastError());
  *x = (const float *)r->c->xf.p;
  return NCCLZ_OK;
}

/* Scan + local QSGD scales, one ncclAllReduce(max) of the small vector, the checks that every
 * rank makes identically, then the shared scales. */
static ncclzStatus agree(grun *r, const float *x) {
  ncclzComm *c = r->c;
  const ncclzQuantSpec *q = &c->cfg.quant;
  TRY(ensure(&c->scan, sizeof(ScanOut)));
  TRY(ensure(&c->agree, V_HEAD * sizeof(double)));
  TRY(ensure_host(&c->host_small, 2 * V_HEAD * sizeof(double)));
  double *hv = (double *)c->host_small.p;
  uint64_t fp = call_fingerprint(r);
  hv[V_FP_HI] = (double)(fp >> 32);
  hv[V_FP_LO] = (double)(fp & 0xffffffffu);
  hv[V_NFP_HI] = -hv[V_FP_HI];
  hv[V_NFP_LO] = -hv[V_FP_LO];
  ScanOut init = {0, 0, 0xffffffffu, 0, 0};
  CU(cudaMemcpyAsync(c->scan.p, &init, sizeof init, cudaMemcpyHostToDevice, r->stream));
  if (x && r->quantized)
    k_scan<<<grid_for(r->n_in), 256, 0, r->stream>>>(x, r->n_in, q->kind == NCCLZ_QUANT_EB, q->has_fill,
                                                     q->fill_value, (ScanOut *)c->scan.p);
  CU(cudaMemcpyAsync(c->agree.p, hv, 4 * sizeof(double), cudaMemcpyHostToDevice, r->stream));
  k_agree_fill<<<1, 1, 0, r->stream>>>((const ScanOut *)c->scan.p, x != nullptr && r->quantized, (double *)c->agree.p);
  CU(cudaGetLastError());
  NC(ncclAllReduce(c->agree.p, c->agree.p, V_HEAD, ncclDouble, ncclMax, c->nccl, r->stream));
  double *v = hv + V_HEAD;
  CU(cudaMemcpyAsync(v, c->agree.p, V_HEAD * sizeof(double), cudaMemcpyDeviceToHost, r->stream));
  CU(cudaStreamSynchronize(r->stream));
  if (v[V_FP_HI] != -v[V_NFP_HI] || v[V_FP_LO] != -v[V_NFP_LO])
    return ncclzSetError(NCCLZ_ERR_ARG, "ranks disagree on the call or the config (collective %s, count %zu, dtype %s, "
                                        "root, quantizer, coder policy, chunk size or profile)",
                         ncclzCollectiveName(r->coll), r->count, ncclzDtypeName(r->dt));
  if (v[V_NONFINITE] > 0)
    return ncclzSetError(NCCLZ_ERR_NONFINITE, "NaN or Inf in the input of a quantized collective (%.0f on one rank)",
                         v[V_NONFINITE]);
  if (v[V_HUGE] > 0)
    return ncclzSetError(NCCLZ_ERR_RANGE, "%.0f values with |x| >= %g: fill values? give fill=V in the quantizer spec",
                         v[V_HUGE], (double)NCCLZ_EB_HUGE_VALUE);
  if (r->qp.kind == NCCLZ_QUANT_EB) return derive_eb(r, v);
  if (r->qp.kind == NCCLZ_QUANT_QSGD && r->n_scales) {
    double s = (double)((1 << (r->qp.qsgd_bits - 1)) - 1), smax = v[V_MAXABS], k = contributions(r);
    r->st->quant_bound = smax / s;
    r->st->error_bound = k * smax / s * (1 + 1e-6) + ncclz_exec_dtype_ulp(r->dt, 2 * k * smax) / 2;
    NC(ncclAllReduce(c->scales.p, c->scales.p, r->n_scales, ncclFloat32, ncclMax, c->nccl, r->stream));
  }
  return NCCLZ_OK;
}

/* Quantization once, into the code cells (quant none: float cells). */
static ncclzStatus quantize(grun *r, const void *sendbuff, const float *x) {
  if (!r->has_input || !r->n_in) return NCCLZ_OK;
  if (!r->quantized) {
    if (r->dt == NCCLZ_DTYPE_F32)
      CU(cudaMemcpyAsync(r->in, sendbuff, r->n_in * 4, cudaMemcpyDeviceToDevice, r->stream));
    else
      k_to_float<<<grid_for(r->n_in), 256, 0, r->stream>>>(sendbuff, r->dt, r->n_in, (float *)r->in);
    CU(cudaGetLastError());
    return NCCLZ_OK;
  }
  if (r->qp.kind == NCCLZ_QUANT_QSGD)
    return ncclzCudaQuantizeQsgd(&r->qp, x, r->n_in, (const float *)r->c->scales.p, r->in, r->stream);
  TRY(ensure(&r->c->qstats, sizeof(ncclzCudaQuantStats)));
  CU(cudaMemsetAsync(r->c->qstats.p, 0, sizeof(ncclzCudaQuantStats), r->stream));
  return ncclzCudaQuantizeEB(&r->qp, 0, 0, x, r->n_in, r->in, (ncclzCudaQuantStats *)r->c->qstats.p, nullptr, 0,
                             r->stream);
}

/* ------------------------------------------------------------ set-up of one call */



static size_t in_offset(const grun *r, size_t off) { return ncclz_exec_in_offset(r->coll, r->s.rank, r->count, off); }
static size_t out_offset(const grun *r, size_t off) { return ncclz_exec_out_offset(r->coll, r->s.rank, r->count, off); }

/* Groups the op list into units of one (step, chunk); COPY ops are run at once by the caller. */
static void build_units(grun *r) {
  r->unit_of_op.assign(r->s.nops, -1);
  int kept = 0;
  for (size_t i = 0; i < r->s.nops; i++) {
    const ncclzOp *o = &r->s.ops[i];
    if (o->kind == NCCLZ_OP_COPY) continue;
    bool same = false;
    if (!r->units.empty()) {
      unit_t &b = r->units.back();
      int j = b.send >= 0 ? b.send : b.recv;
      const ncclzOp *p = &r->s.ops[j];
      same = p->step == o->step && p->chunk == o->chunk &&
             (o->kind == NCCLZ_OP_SEND ? b.send < 0 : b.recv < 0);
    }
    if (!same) r->units.push_back(unit_t());
    unit_t &u = r->units.back();
    size_t off, len;
    ncclzScheduleRange(&r->s, r->count, o->block, o->chunk, &off, &len);
    if (o->kind == NCCLZ_OP_SEND) {
      u.send = (int)i;
      u.soff = off;
      u.slen = len;
    } else {
      u.recv = (int)i;
      u.roff = off;
      u.rlen = len;
      if (o->action & NCCLZ_ACT_KEEP) u.kept = kept++;
    }
    r->unit_of_op[i] = (int)r->units.size() - 1;
    if (len > r->max_chunk) r->max_chunk = len;
  }
}

static ncclzCudaBatch make_batch(const grun *r, ncclzCoder coder, size_t n) {
  ncclzCudaBatch b;
  memset(&b, 0, sizeof b);
  b.coder = coder;
  b.params = r->c->cfg.coder_params;
  b.dtype = r->dt;
  b.quant = r->quantized ? &r->qp : nullptr;
  b.n_symbols = n;
  b.frame_symbols = (uint32_t)(n ? n : 1);
  b.side_scales = 0;
  return b;
}

static ncclzStatus alloc_call(grun *r) {
  ncclzComm *c = r->c;
  size_t mc = r->max_chunk ? r->max_chunk : 1, ews = 0, dws = 0, slot = mc * 4 + 64;
  for (int k = 0; k < NCCLZ_CODER_COUNT; k++) {
    ncclzCudaBatch b = make_batch(r, (ncclzCoder)k, mc);
    slot = std::max(slot, ncclzCudaFrameSlotBytes(&b));
    ews = std::max(ews, ncclzCudaEncodeWorkspaceSize(&b));
    dws += ncclzCudaDecodeWorkspaceSize(&b); /* mixed coders in one decode: room for all */
  }
  r->slot = (slot + 255) & ~(size_t)255;
  size_t nu = r->units.size() + 1, nk = 0;
  for (const unit_t &u : r->units) nk += u.kept >= 0;
  TRY(ensure(&c->cells_in, (r->n_in + 1) * 4));
  if (r->coll != NCCLZ_ALLREDUCE) TRY(ensure(&c->cells_out, (r->n_out + 1) * 4));
  TRY(ensure(&c->sbank[0], r->slot));
  TRY(ensure(&c->sbank[1], r->slot));
  TRY(ensure(&c->rbank, 2 * r->slot));
  TRY(ensure(&c->rsym, mc * 4));
  TRY(ensure(&c->esym, mc * 4));
  TRY(ensure(&c->ews, ews + 16));
  TRY(ensure(&c->dws, dws + 16));
  TRY(ensure(&c->arena, nk * r->slot + 16));
  TRY(ensure(&c->status, nu * 4));
  TRY(ensure(&c->fbytes, 64));
  TRY(ensure_host(&c->hdr_out, nu * 64));
  TRY(ensure_host(&c->hdr_in, nu * 64));
  TRY(ensure_host(&c->host_status, nu * 4));
  if (r->qp.kind == NCCLZ_QUANT_QSGD) TRY(ensure(&c->scales, (r->n_scales + 1) * 4));
  while (c->ev_done.size() < nu) {
    cudaEvent_t e;
    CU(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
    c->ev_done.push_back(e);
  }
  while (c->trace && c->ev_trace.size() < nu * TE_COUNT + 8) {
    cudaEvent_t e;
    CU(cudaEventCreate(&e));
    c->ev_trace.push_back(e);
  }
  CU(cudaMemsetAsync(c->status.p, 0, nu * 4, r->stream));
  r->in = (int32_t *)c->cells_in.p;
  r->work = r->in; /* the cells are our own scratch: reduce-scatter reduces in place too */
  r->out = r->coll == NCCLZ_ALLREDUCE ? r->in : (int32_t *)c->cells_out.p;
  return NCCLZ_OK;
}

static void init_qparams(grun *r) {
  ncclz_exec_init_qparams(&r->c->cfg, (uint32_t)r->c->rank, r->n_in, &r->qp);
  if (r->qp.kind == NCCLZ_QUANT_QSGD) r->n_scales = ncclzQsgdNumBuckets(&r->qp, r->n_in);
}

/* ------------------------------------------------------------ tracing */

static cudaEvent_t tev(grun *r, size_t u, int k) { return r->c->ev_trace[8 + u * TE_COUNT + k]; }
static void trace_rec(grun *r, size_t u, int k, cudaStream_t s) {
  if (r->c->trace) cudaEventRecord(tev(r, u, k), s);
}
static void trace_iface(grun *r, int k) {
  if (r->c->trace) cudaEventRecord(r->c->ev_trace[k], r->stream);
}

/* ------------------------------------------------------------ the pipeline */

static void *cell(void *base, size_t i) { return (char *)base + 4 * i; }

/* Where an ENCODE send reads: the working cells while reducing, else the input cells. */
static int32_t *send_source(grun *r, size_t off) {
  if (r->coll == NCCLZ_ALLREDUCE || r->coll == NCCLZ_REDUCESCATTER) return (int32_t *)cell(r->work, off);
  return (int32_t *)cell(r->in, in_offset(r, off));
}

/* Enqueues the encode of unit u's send (s_enc) into send bank u%2 and the copy of its header. */
static ncclzStatus prepare_send(grun *r, size_t u) {
  if (u >= r->units.size()) return NCCLZ_OK;
  const unit_t &un = r->units[u];
  if (un.send < 0 || !un.slen) return NCCLZ_OK;
  const ncclzOp *o = &r->s.ops[un.send];
  if (!(o->action & NCCLZ_ACT_ENCODE)) return NCCLZ_OK;
  ncclzComm *c = r->c;
  int bank = (int)(u & 1);
  CU(cudaStreamWaitEvent(c->s_enc, c->ev_sent[bank], 0));
  if (o->dep >= 0) CU(cudaStreamWaitEvent(c->s_enc, c->ev_done[r->unit_of_op[o->dep]], 0));
  trace_rec(r, u, TE_ENC0, c->s_enc);
  const int32_t *sym = send_source(r, un.soff);
  if (!r->quantized && r->dt != NCCLZ_DTYPE_F32) {
    k_cells_to_sym<<<grid_for(un.slen), 256, 0, c->s_enc>>>((const float *)sym, un.slen, r->dt, (int32_t *)c->esym.p);
    CU(cudaGetLastError());
    sym = (const int32_t *)c->esym.p;
  }
  ncclzCudaBatch b = make_batch(r, r->coder, un.slen);
  TRY(ncclzCudaEncodeBatch(&b, sym, nullptr, (uint8_t *)c->sbank[bank].p, r->slot, (uint32_t *)c->fbytes.p + bank,
                           c->ews.p, c->ews.cap, c->s_enc));
  CU(cudaMemcpyAsync(hdr_out(r, u), c->sbank[bank].p, 64, cudaMemcpyDeviceToHost, c->s_enc));
  trace_rec(r, u, TE_ENC1, c->s_enc);
  CU(cudaEventRecord(c->ev_enc[bank], c->s_enc));
  return NCCLZ_OK;
}

static ncclzStatus parse_header(const grun *r, const uint8_t *h, ncclzFrameHeader *fh) {
  TRY(ncclzFrameHeaderParse(h, SIZE_MAX, fh));
  if (NCCLZ_FRAME_HEADER_BYTES + (size_t)fh->payload_bytes > r->slot)
    return ncclzSetError(NCCLZ_ERR_CORRUPT, "frame header announces %u payload bytes, more than a chunk can take",
                         fh->payload_bytes);
  return NCCLZ_OK;
}

/* The send half of unit u on the host: header over the lane; returns the payload to post. */
static ncclzStatus host_send(grun *r, size_t u, const uint8_t **payload, size_t *plen) {
  const unit_t &un = r->units[u];
  const ncclzOp *o = &r->s.ops[un.send];
  ncclzComm *c = r->c;
  const uint8_t *hdr;
  double t0 = now_s();
  if (o->action & NCCLZ_ACT_ENCODE) {
    CU(cudaEventSynchronize(c->ev_enc[u & 1]));
    hdr = hdr_out(r, u);
    *payload = (const uint8_t *)c->sbank[u & 1].p + 64;
  } else { /* FORWARD: the frame kept by op dep, unchanged */
    size_t du = (size_t)r->unit_of_op[o->dep];
    if (r->units[du].kept < 0) return ncclzSetError(NCCLZ_ERR_ARG, "schedule: forward without a kept frame");
    hdr = hdr_in(r, du);
    *payload = (const uint8_t *)c->arena.p + r->slot * (size_t)r->units[du].kept + 64;
  }
  r->st->t_encode += now_s() - t0; /* host wait for the encode (the exposed part) */
  ncclzFrameHeader fh;
  TRY(parse_header(r, hdr, &fh));
  *plen = fh.payload_bytes;
  r->st->coder_mix[fh.coder]++;
  r->st->frames++;
  r->st->frame_bytes += 64 + fh.payload_bytes;
  r->st->raw_bytes += un.slen * r->ds;
  uint64_t tag = (uint64_t)o->step * r->s.nchunks + o->chunk;
  return c->t->send(c->t, o->peer, tag, NCCLZ_LANE_CTRL, hdr, 64);
}

/* The recv half of unit u on the host: header from the lane, copied in front of its bank. */
static ncclzStatus host_recv(grun *r, size_t u, uint8_t **dest, size_t *plen) {
  const unit_t &un = r->units[u];
  const ncclzOp *o = &r->s.ops[un.recv];
  ncclzComm *c = r->c;
  uint64_t tag = (uint64_t)o->step * r->s.nchunks + o->chunk;
  double t0 = now_s();
  TRY(c->t->recv(c->t, o->peer, tag, NCCLZ_LANE_CTRL, hdr_in(r, u), 64));
  r->st->t_wait_ctrl += now_s() - t0;
  ncclzFrameHeader fh;
  TRY(parse_header(r, hdr_in(r, u), &fh));
  if (fh.n_symbols != un.rlen)
    return ncclzSetError(NCCLZ_ERR_CORRUPT, "frame of %u symbols where %zu were due", fh.n_symbols, un.rlen);
  *plen = fh.payload_bytes;
  r->st->chunks_received++;
  if (un.kept >= 0) {
    *dest = (uint8_t *)c->arena.p + r->slot * (size_t)un.kept;
  } else {
    *dest = (uint8_t *)c->rbank.p + r->slot * (u & 1);
    CU(cudaStreamWaitEvent(c->s_comm, c->ev_rfree[u & 1], 0));
  }
  CU(cudaMemcpyAsync(*dest, hdr_in(r, u), 64, cudaMemcpyHostToDevice, c->s_comm));
  return NCCLZ_OK;
}

/* Decode (+ reduce / store) of unit u on s_dec, once its payload has arrived. */
static ncclzStatus decode_unit(grun *r, size_t u, const uint8_t *frame, size_t plen) {
  const unit_t &un = r->units[u];
  const ncclzOp *o = &r->s.ops[un.recv];
  ncclzComm *c = r->c;
  CU(cudaStreamWaitEvent(c->s_dec, c->ev_recvd[u & 1], 0));
  trace_rec(r, u, TE_DEC0, c->s_dec);
  if (o->action & (NCCLZ_ACT_REDUCE | NCCLZ_ACT_STORE)) {
    bool direct = !(o->action & NCCLZ_ACT_REDUCE) && (r->quantized || r->dt == NCCLZ_DTYPE_F32);
    int32_t *dst = direct ? (int32_t *)cell(r->out, out_offset(r, un.roff)) : (int32_t *)c->rsym.p;
    ncclzCudaBatch b = make_batch(r, NCCLZ_CODER_HUFFMAN, un.rlen);
    TRY(ncclzCudaDecodeBatch(&b, 7u, frame, nullptr, 64 + plen, 64 + plen, dst, nullptr, (uint32_t *)c->status.p + u,
                             c->dws.p, c->dws.cap, c->s_dec));
    trace_rec(r, u, TE_RED1, c->s_dec); /* end of decode; reduce follows */
    if (o->action & NCCLZ_ACT_REDUCE) {
      int32_t *w = (int32_t *)cell(r->work, un.roff);
      k_reduce<<<grid_for(un.rlen), 256, 0, c->s_dec>>>(w, dst, un.rlen, r->quantized, r->dt);
      void *out = cell(r->out, out_offset(r, un.roff));
      if ((o->action & NCCLZ_ACT_STORE) && out != (void *)w)
        CU(cudaMemcpyAsync(out, w, un.rlen * 4, cudaMemcpyDeviceToDevice, c->s_dec));
    } else if (!direct) {
      k_sym_to_cells<<<grid_for(un.rlen), 256, 0, c->s_dec>>>(dst, un.rlen, r->dt,
                                                              (float *)cell(r->out, out_offset(r, un.roff)));
    }
    CU(cudaGetLastError());
  } else {
    trace_rec(r, u, TE_RED1, c->s_dec);
  }
  trace_rec(r, u, TE_DEC1, c->s_dec);
  if (un.kept < 0) CU(cudaEventRecord(c->ev_rfree[u & 1], c->s_dec));
  CU(cudaEventRecord(c->ev_done[u], c->s_dec));
  return NCCLZ_OK;
}

/* Unit u: host halves (header out, header in), then the NCCL group and the decode. */
static ncclzStatus issue(grun *r, size_t u) {
  const unit_t &un = r->units[u];
  ncclzComm *c = r->c;
  const uint8_t *payload = nullptr;
  uint8_t *dest = nullptr;
  size_t plen = 0, rlen = 0;
  bool snd = un.send >= 0 && un.slen, rcv = un.recv >= 0 && un.rlen; /* empty chunks: nothing moves */
  if (snd) TRY(host_send(r, u, &payload, &plen));
  if (rcv) TRY(host_recv(r, u, &dest, &rlen));
  if (!snd && !rcv) {
    CU(cudaEventRecord(c->ev_done[u], c->s_dec));
    return NCCLZ_OK;
  }
  if (snd) {
    const ncclzOp *o = &r->s.ops[un.send];
    if (o->action & NCCLZ_ACT_ENCODE)
      CU(cudaStreamWaitEvent(c->s_comm, c->ev_enc[u & 1], 0));
    else
      CU(cudaStreamWaitEvent(c->s_comm, c->ev_done[r->unit_of_op[o->dep]], 0));
  }
  trace_rec(r, u, TE_COM0, c->s_comm);
  NC(ncclGroupStart());
  if (snd && plen) NC(ncclSend(payload, plen, ncclUint8, r->s.ops[un.send].peer, c->nccl, c->s_comm));
  if (rcv && rlen) NC(ncclRecv(dest + 64, rlen, ncclUint8, r->s.ops[un.recv].peer, c->nccl, c->s_comm));
  NC(ncclGroupEnd());
  trace_rec(r, u, TE_COM1, c->s_comm);
  if (snd && (r->s.ops[un.send].action & NCCLZ_ACT_ENCODE)) CU(cudaEventRecord(c->ev_sent[u & 1], c->s_comm));
  if (!rcv) {
    CU(cudaEventRecord(c->ev_done[u], c->s_comm));
    return NCCLZ_OK;
  }
  CU(cudaEventRecord(c->ev_recvd[u & 1], c->s_comm));
  return decode_unit(r, u, dest, rlen);
}

/* COPY ops (the rank's own block) run on the user stream right after quantization. */
static ncclzStatus run_copies(grun *r) {
  for (size_t i = 0; i < r->s.nops; i++) {
    const ncclzOp *o = &r->s.ops[i];
    if (o->kind != NCCLZ_OP_COPY) continue;
    size_t off, len;
    ncclzScheduleRange(&r->s, r->count, o->block, o->chunk, &off, &len);
    size_t src = r->coll == NCCLZ_REDUCESCATTER || r->coll == NCCLZ_ALLTOALL ? off : in_offset(r, off);
    void *d = cell(r->out, out_offset(r, off)), *s = cell(r->in, src);
    if (len && d != s) CU(cudaMemcpyAsync(d, s, len * 4, cudaMemcpyDeviceToDevice, r->stream));
  }
  return NCCLZ_OK;
}

static ncclzStatus run_units(grun *r) {
  ncclzComm *c = r->c;
  CU(cudaEventRecord(c->ev_fork, r->stream));
  cudaStream_t ss[3] = {c->s_enc, c->s_comm, c->s_dec};
  for (cudaStream_t s : ss) CU(cudaStreamWaitEvent(s, c->ev_fork, 0));
  for (int b = 0; b < 2; b++) { /* every bank starts free */
    CU(cudaEventRecord(c->ev_sent[b], r->stream));
    CU(cudaEventRecord(c->ev_rfree[b], r->stream));
  }
  TRY(prepare_send(r, 0));
  for (size_t u = 0; u < r->units.size(); u++) {
    TRY(issue(r, u));
    TRY(prepare_send(r, u + 1)); /* overlaps unit u's transfer */
  }
  for (int i = 0; i < 3; i++) {
    CU(cudaEventRecord(c->ev_join[i], ss[i]));
    CU(cudaStreamWaitEvent(r->stream, c->ev_join[i], 0));
  }
  return c->t->flush(c->t);
}

/* Output cells -> recvbuff in the call's dtype (dequantization once, at the end). */
static ncclzStatus finish(grun *r, void *recvbuff) {
  ncclzComm *c = r->c;
  size_t n = r->n_out;
  if (!n) return NCCLZ_OK;
  float *y = (float *)recvbuff;
  if (r->dt != NCCLZ_DTYPE_F32) {
    TRY(ensure(&c->yf, n * 4));
    y = (float *)c->yf.p;
  }
  if (!r->quantized) {
    CU(cudaMemcpyAsync(y, r->out, n * 4, cudaMemcpyDeviceToDevice, r->stream));
  } else if (r->qp.kind == NCCLZ_QUANT_QSGD) {
    double s = (double)((1 << (r->qp.qsgd_bits - 1)) - 1);
    k_dequant_qsgd<<<grid_for(n), 256, 0, r->stream>>>(r->out, n, (const float *)c->scales.p, r->qp.qsgd_bucket, s,
                                                       r->coll, r->count, (size_t)c->rank, y);
  } else {
    TRY(ensure(&c->qws, ncclzCudaQuantWorkspaceSize(n)));
    TRY(ncclzCudaDequantizeEB(&r->qp, nullptr, r->out, n, y, c->qws.p, c->qws.cap, r->stream));
  }
  if (r->dt != NCCLZ_DTYPE_F32) k_from_float<<<grid_for(n), 256, 0, r->stream>>>(y, n, r->dt, recvbuff);
  CU(cudaGetLastError());
  return NCCLZ_OK;
}

/* Decoder status words and quantizer counts, read once after the final synchronisation. */
static ncclzStatus check_status(grun *r) {
  ncclzComm *c = r->c;
  size_t nu = r->units.size();
  CU(cudaMemcpy(c->host_status.p, c->status.p, nu * 4, cudaMemcpyDeviceToHost));
  const uint32_t *s = (const uint32_t *)c->host_status.p;
  for (size_t u = 0; u < nu; u++)
    if (s[u])
      return ncclzSetError(NCCLZ_ERR_CORRUPT, "frame of unit %zu (step %u, chunk %u): %s", u,
                           r->s.ops[r->units[u].recv].step, r->s.ops[r->units[u].recv].chunk,
                           ncclzCudaStatusReason(s[u]));
  if (r->qp.kind == NCCLZ_QUANT_EB && r->has_input && r->n_in) {
    ncclzCudaQuantStats q;
    CU(cudaMemcpy(&q, c->qstats.p, sizeof q, cudaMemcpyDeviceToHost));
    if (q.nonfinite || q.out_of_range || q.unbounded)
      return ncclzSetError(NCCLZ_ERR_RANGE, "quantization: %llu values out of range or unbounded",
                           q.out_of_range + q.unbounded + q.nonfinite);
  }
  return NCCLZ_OK;
}

/* ------------------------------------------------------------ auto: one decision per signature */

static decision *find_decision(ncclzComm *c, ncclzCollective coll, size_t count, ncclzDtype dt) {
  for (decision &d : c->decisions)
    if (d.coll == (int)coll && d.count == count && d.dtype == (int)dt) return &d;
  return nullptr;
}

/* REA on this rank's first chunk of codes (a whole frame of the real size), then the vote. */
static ncclzStatus decide(grun *r, decision *d) {
  ncclzComm *c = r->c;
  double want = 0;
  ncclzCoder coder = NCCLZ_CODER_RAW;
  size_t n = std::min(r->max_chunk, r->n_in);
  if (r->has_input && n) {
    TRY(ensure_host(&c->sample, n * 4));
    CU(cudaMemcpyAsync(c->sample.p, r->in, n * 4, cudaMemcpyDeviceToHost, r->stream));
    CU(cudaStreamSynchronize(r->stream));
    int32_t *sym = (int32_t *)c->sample.p;
    std::vector<int32_t> half;
    if (!r->quantized && r->dt != NCCLZ_DTYPE_F32) { /* the symbols the coder will see */
      std::vector<uint16_t> h(n);
      ncclzFromFloat((const float *)sym, n, r->dt, h.data());
      half.assign(h.begin(), h.end());
      sym = half.data();
    }
    ncclzReaConfig rc = c->rea;
    rc.data_class = ncclzDataClassOf(r->quantized ? &r->qp : nullptr);
    ncclzFrameDesc desc = {r->dt, r->quantized ? &r->qp : nullptr, nullptr, 0, c->cfg.coder_params};
    ncclzReaResult res;
    TRY(ncclzReaPlan(&c->profile, &rc, sym, n, &desc, r->slot, &res));
    coder = res.planned;
    /* A frame's gain must also pay for the call's interface and the host's time per unit, which
     * the plain collective does not spend (1 MiB over the socket: 0.23-0.63x of plain without). */
    size_t units = 0;
    for (const unit_t &un : r->units) units += un.send >= 0 && un.slen;
    double call_bytes = (double)std::max(r->n_in, r->n_out) * (double)r->ds; /* nccl-tests' size */
    ncclzReaCall call = {call_bytes, (double)units, res.cand.frame_raw_bytes, rc.data_class};
    want = ncclzReaCallWorthIt(&c->profile, rc.hint, &res.decision, coder, &call);
  }
  TRY(c->t->allreduce_max(c->t, &want, 1));
  /* Only the vote, which every rank holds, sets the gap: each rank's own coder may differ, and
   * ranks that decided at different calls would wait on each other's vote. */
  int kept = d->calls > 0 && d->bypass == (want == 0);
  d->gap = kept ? std::min<uint64_t>(2 * d->gap, NCCLZ_REPLAN_MAX) : NCCLZ_REPLAN;
  d->next_plan = d->calls + d->gap;
  d->bypass = want == 0;
  d->coder = coder;
  return NCCLZ_OK;
}

/* ------------------------------------------------------------ entry points */

static ncclzStatus dtype_of(ncclDataType_t t, ncclzDtype *dt) {
  switch (t) {
  case ncclFloat32: *dt = NCCLZ_DTYPE_F32; return NCCLZ_OK;
  case ncclBfloat16: *dt = NCCLZ_DTYPE_BF16; return NCCLZ_OK;
  case ncclFloat16: *dt = NCCLZ_DTYPE_F16; return NCCLZ_OK;
  default: return ncclzSetError(NCCLZ_ERR_ARG, "datatype %d: ncclz takes ncclFloat32, ncclBfloat16, ncclFloat16", (int)t);
  }
}

/* The plain NCCL collective: policy off, and auto when REA keeps everything RAW. */
static ncclzStatus run_plain(ncclzComm *c, ncclzCollective coll, const void *sb, void *rb, size_t count,
                             ncclDataType_t t, ncclRedOp_t op, int root, cudaStream_t s) {
  switch (coll) {
  case NCCLZ_ALLREDUCE: NC(ncclAllReduce(sb, rb, count, t, op, c->nccl, s)); break;
  case NCCLZ_REDUCESCATTER: NC(ncclReduceScatter(sb, rb, count, t, op, c->nccl, s)); break;
  case NCCLZ_ALLGATHER: NC(ncclAllGather(sb, rb, count, t, c->nccl, s)); break;
  case NCCLZ_ALLTOALL: NC(ncclAlltoAll(sb, rb, count, t, c->nccl, s)); break;
  default: NC(ncclBroadcast(sb, rb, count, t, root, c->nccl, s)); break;
  }
  return NCCLZ_OK;
}

/* Bytes the plain collective sends from this rank (sum of the schedule's sends). */
static uint64_t plain_bytes(const ncclzSchedule *s, size_t count, size_t ds) {
  uint64_t b = 0;
  for (size_t i = 0; i < s->nops; i++) {
    if (s->ops[i].kind != NCCLZ_OP_SEND) continue;
    size_t off, len;
    ncclzScheduleRange(s, count, s->ops[i].block, s->ops[i].chunk, &off, &len);
    b += len * ds;
  }
  return b;
}

static void summarize_trace(grun *r);

/* Quantized or lossless-framed call. d: the auto decision of this signature (NULL otherwise);
 * *bypassed: REA kept everything RAW, so the caller runs the plain collective instead. */
static ncclzStatus run_framed(grun *r, const void *sendbuff, void *recvbuff, decision *d, int *bypassed) {
  ncclzComm *c = r->c;
  TRY(alloc_call(r));
  r->t_start_wall = wall_us(); /* the host clock at the first trace event (ranks of a host line up) */
  trace_iface(r, 0);
  const float *x = nullptr;
  TRY(input_floats(r, sendbuff, &x));
  if (r->qp.kind == NCCLZ_QUANT_QSGD && r->n_scales) {
    if (x)
      TRY(ncclzCudaQsgdScales(&r->qp, x, r->n_in, (float *)c->scales.p, r->stream));
    else
      CU(cudaMemsetAsync(c->scales.p, 0, r->n_scales * 4, r->stream));
  }
  TRY(agree(r, x));
  TRY(quantize(r, sendbuff, x));
  if (d) {
    if (d->calls == d->next_plan) TRY(decide(r, d));
    r->coder = d->coder;
    if (d->bypass) {
      *bypassed = 1;
      return NCCLZ_OK;
    }
  }
  TRY(run_copies(r));
  trace_iface(r, 1);
  double t_issue = now_s();
  TRY(run_units(r));
  double own = now_s() - t_issue - r->st->t_encode - r->st->t_wait_ctrl; /* both measured inside run_units */
  r->st->t_unit_host = r->units.empty() || own < 0 ? 0 : own / (double)r->units.size();
  trace_iface(r, 2);
  TRY(finish(r, recvbuff));
  trace_iface(r, 3);
  CU(cudaStreamSynchronize(r->stream));
  TRY(check_status(r));
  if (c->trace) summarize_trace(r);
  return NCCLZ_OK;
}

static ncclzCoder policy_coder(ncclzCoderPolicy p) {
  return p == NCCLZ_POLICY_FIXEDLEN ? NCCLZ_CODER_FIXEDLEN : p == NCCLZ_POLICY_HUFFMAN ? NCCLZ_CODER_HUFFMAN : NCCLZ_CODER_RAW;
}

static ncclzStatus check_call(const ncclzComm *c, ncclzCollective coll, size_t count, int root, ncclRedOp_t op) {
  if (c->broken) return ncclzSetError(NCCLZ_ERR_IO, "communicator was aborted by an earlier error");
  if (root < 0 || root >= c->nranks) return ncclzSetError(NCCLZ_ERR_ARG, "root %d of %d ranks", root, c->nranks);
  if (count > UINT32_MAX / 2) return ncclzSetError(NCCLZ_ERR_ARG, "count %zu too large", count);
  if (c->cfg.policy != NCCLZ_POLICY_OFF && op != ncclSum)
    return ncclzSetError(NCCLZ_ERR_ARG, "compressed collectives reduce with ncclSum only");
  const ncclzQuantSpec *q = &c->cfg.quant;
  if (q->kind == NCCLZ_QUANT_EB && q->lorenzo) {
    if (coll != NCCLZ_ALLREDUCE && coll != NCCLZ_BROADCAST)
      return ncclzSetError(NCCLZ_ERR_ARG, "Lorenzo needs a whole-array result (allreduce or broadcast)");
    size_t prod = 1;
    for (int i = 0; i < c->cfg.ndims; i++) prod *= c->cfg.dims[i];
    if (c->cfg.ndims < 1 || prod != count)
      return ncclzSetError(NCCLZ_ERR_ARG, "Lorenzo dims must multiply to the count %zu", count);
  }
  return NCCLZ_OK;
}

static ncclzStatus plain_call(ncclzComm *c, ncclzCollective coll, const void *sb, void *rb, size_t count,
                              ncclDataType_t t, ncclRedOp_t op, int root, cudaStream_t s, const ncclzSchedule *sch,
                              size_t ds) {
  TRY(run_plain(c, coll, sb, rb, count, t, op, root, s));
  c->last.raw_bytes = c->last.frame_bytes = c->last.wire_bytes = plain_bytes(sch, count, ds);
  c->events.clear();
  return NCCLZ_OK;
}

/* An auto call that REA keeps on the plain collective and that does not re-decide: straight to
 * NCCL, without the schedule, the units or the frame state. On NVLink every call of a 1 MiB
 * AllReduce (14 us) goes this way, and the host work before it is all ncclz adds. */
static ncclzStatus run_bypassed(ncclzComm *c, decision *d, ncclzCollective coll, const void *sb, void *rb,
                                size_t count, ncclDataType_t t, ncclRedOp_t op, int root, cudaStream_t stream) {
  memset(&c->last, 0, sizeof c->last);
  c->events.clear();
  d->calls++;
  TRY(run_plain(c, coll, sb, rb, count, t, op, root, stream));
  c->last.raw_bytes = c->last.frame_bytes = c->last.wire_bytes = d->plain_bytes;
  return NCCLZ_OK;
}

static ncclzStatus run_call(ncclzComm *c, ncclzCollective coll, const void *sb, void *rb, size_t count,
                            ncclDataType_t t, ncclRedOp_t op, int root, cudaStream_t stream) {
  double t0 = now_s();
  ncclzDtype dt = NCCLZ_DTYPE_F32;
  TRY(dtype_of(t, &dt));
  TRY(check_call(c, coll, count, root, op));
  CU(cudaSetDevice(c->dev));
  decision *d = nullptr;
  if (c->cfg.policy == NCCLZ_POLICY_AUTO) {
    d = find_decision(c, coll, count, dt);
    if (!d) {
      c->decisions.push_back(decision{(int)coll, count, (int)dt, 0, 0, NCCLZ_CODER_RAW, 0, 0, 0});
      d = &c->decisions.back();
    }
    if (d->bypass && d->calls != d->next_plan) {
      ncclzStatus st = run_bypassed(c, d, coll, sb, rb, count, t, op, root, stream);
      c->last.t_total = now_s() - t0;
      return st;
    }
  }
  memset(&c->last, 0, sizeof c->last);
  grun r;
  r.c = c;
  r.coll = coll;
  r.dt = dt;
  r.ds = ncclzDtypeSize(dt);
  r.count = count;
  r.root = root;
  r.n_in = ncclz_exec_in_count(coll, count, c->nranks);
  r.n_out = ncclz_exec_out_count(coll, count, c->nranks);
  r.max_chunk = 0;
  r.n_scales = 0;
  r.quantized = c->cfg.quant.kind != NCCLZ_QUANT_NONE;
  r.has_input = coll != NCCLZ_BROADCAST || c->rank == root;
  r.coder = policy_coder(c->cfg.policy);
  r.st = &c->last;
  r.stream = stream;
  uint32_t nch = ncclz_exec_chunks(&c->cfg, coll, count, c->nranks, r.ds);
  if (ncclzScheduleBuild(coll, c->nranks, c->rank, root, nch, &r.s))
    return ncclzSetError(NCCLZ_ERR_NOMEM, "schedule of %s", ncclzCollectiveName(coll));
  if (d) d->plain_bytes = plain_bytes(&r.s, count, r.ds);
  ncclzStatus st;
  int bypassed = 0;
  if (c->cfg.policy == NCCLZ_POLICY_OFF) {
    bypassed = 1;
  } else {
    build_units(&r);
    init_qparams(&r);
    st = run_framed(&r, sb, rb, d, &bypassed);
    if (st) {
      c->broken = 1; /* peers may wait on this rank's headers: wake them with the error */
      c->t->abort(c->t, ncclzLastError());
      ncclzScheduleFree(&r.s);
      return st;
    }
  }
  if (d) d->calls++;
  st = bypassed ? plain_call(c, coll, sb, rb, count, t, op, root, stream, &r.s, r.ds) : NCCLZ_OK;
  if (!bypassed) c->last.wire_bytes = c->last.frame_bytes; /* 64 B on the lane + payload on NCCL */
  ncclzScheduleFree(&r.s);
  c->last.t_total = now_s() - t0;
  return st;
}

/* ------------------------------------------------------------ groups */

struct queued {
  ncclzComm *c;
  ncclzCollective coll;
  const void *sb;
  void *rb;
  size_t count;
  ncclDataType_t t;
  ncclRedOp_t op;
  int root;
  cudaStream_t s;
};
static thread_local int group_depth = 0;
static thread_local std::vector<queued> *group_queue = nullptr;

ncclzStatus ncclzGroupStart(void) {
  if (!group_queue) group_queue = new std::vector<queued>();
  group_depth++;
  return NCCLZ_OK;
}

ncclzStatus ncclzGroupEnd(void) {
  if (group_depth <= 0) return ncclzSetError(NCCLZ_ERR_ARG, "ncclzGroupEnd without ncclzGroupStart");
  if (--group_depth) return NCCLZ_OK;
  std::vector<queued> q;
  q.swap(*group_queue);
  ncclzStatus st = NCCLZ_OK;
  /* Plain calls first, as one NCCL group (NCCL fuses them); then the framed ones in order. */
  NC(ncclGroupStart());
  for (const queued &e : q)
    if (!st && e.c->cfg.policy == NCCLZ_POLICY_OFF)
      st = run_call(e.c, e.coll, e.sb, e.rb, e.count, e.t, e.op, e.root, e.s);
  NC(ncclGroupEnd());
  for (const queued &e : q)
    if (!st && e.c->cfg.policy != NCCLZ_POLICY_OFF)
      st = run_call(e.c, e.coll, e.sb, e.rb, e.count, e.t, e.op, e.root, e.s);
  return st;
}

static ncclzStatus entry(ncclzComm *c, ncclzCollective coll, const void *sb, void *rb, size_t count,
                         ncclDataType_t t, ncclRedOp_t op, int root, cudaStream_t s) {
  if (!c) return ncclzSetError(NCCLZ_ERR_ARG, "NULL ncclz communicator");
  if (group_depth > 0) {
    group_queue->push_back(queued{c, coll, sb, rb, count, t, op, root, s});
    return NCCLZ_OK;
  }
  return run_call(c, coll, sb, rb, count, t, op, root, s);
}

ncclzStatus ncclzAllReduce(const void *sb, void *rb, size_t count, ncclDataType_t t, ncclRedOp_t op, ncclzComm_t c,
                           cudaStream_t s) {
  return entry(c, NCCLZ_ALLREDUCE, sb, rb, count, t, op, 0, s);
}
ncclzStatus ncclzReduceScatter(const void *sb, void *rb, size_t count, ncclDataType_t t, ncclRedOp_t op,
                               ncclzComm_t c, cudaStream_t s) {
  return entry(c, NCCLZ_REDUCESCATTER, sb, rb, count, t, op, 0, s);
}
ncclzStatus ncclzAllGather(const void *sb, void *rb, size_t count, ncclDataType_t t, ncclzComm_t c, cudaStream_t s) {
  return entry(c, NCCLZ_ALLGATHER, sb, rb, count, t, ncclSum, 0, s);
}
ncclzStatus ncclzAlltoAll(const void *sb, void *rb, size_t count, ncclDataType_t t, ncclzComm_t c, cudaStream_t s) {
  return entry(c, NCCLZ_ALLTOALL, sb, rb, count, t, ncclSum, 0, s);
}
ncclzStatus ncclzBroadcast(const void *sb, void *rb, size_t count, ncclDataType_t t, int root, ncclzComm_t c,
                           cudaStream_t s) {
  return entry(c, NCCLZ_BROADCAST, sb, rb, count, t, ncclSum, root, s);
}

/* ------------------------------------------------------------ trace summary */

static double ev_us(grun *r, cudaEvent_t e) {
  float ms = 0;
  cudaEventElapsedTime(&ms, r->c->ev_trace[0], e);
  return r->t_start_wall + 1e3 * (double)ms;
}

static void add_event(grun *r, const char *name, int lane, double a, double b, const ncclzOp *o, uint64_t bytes) {
  ncclzTraceEvent e = {name, lane, a, b - a, o ? o->step : 0, o ? o->chunk : 0, bytes};
  r->c->events.push_back(e);
}

/* Length of [a, b) outside the sorted, merged intervals iv. */
static double outside(const std::vector<std::pair<double, double>> &iv, double a, double b) {
  double covered = 0;
  for (const auto &p : iv) covered += std::max(0.0, std::min(b, p.second) - std::max(a, p.first));
  return std::max(0.0, (b - a) - covered);
}

static void summarize_trace(grun *r) {
  ncclzComm *c = r->c;
  c->events.clear();
  std::vector<std::pair<double, double>> comm, codec;
  add_event(r, "quantize", 0, ev_us(r, c->ev_trace[0]), ev_us(r, c->ev_trace[1]), nullptr, 0);
  for (size_t u = 0; u < r->units.size(); u++) {
    const unit_t &un = r->units[u];
    bool snd = un.send >= 0 && un.slen, rcv = un.recv >= 0 && un.rlen;
    const ncclzOp *o = &r->s.ops[snd ? un.send : un.recv];
    if (snd && (r->s.ops[un.send].action & NCCLZ_ACT_ENCODE)) {
      double a = ev_us(r, tev(r, u, TE_ENC0)), b = ev_us(r, tev(r, u, TE_ENC1));
      add_event(r, "encode", 1, a, b, o, 0);
      codec.push_back({a, b});
    }
    if (snd || rcv) {
      double a = ev_us(r, tev(r, u, TE_COM0)), b = ev_us(r, tev(r, u, TE_COM1));
      add_event(r, snd && rcv ? "sendrecv" : snd ? "send" : "recv", 2, a, b, o, 0);
      comm.push_back({a, b});
    }
    if (rcv) {
      double a = ev_us(r, tev(r, u, TE_DEC0)), m = ev_us(r, tev(r, u, TE_RED1)), b = ev_us(r, tev(r, u, TE_DEC1));
      add_event(r, "decode", 3, a, m, o, 0);
      add_event(r, "reduce", 3, m, b, o, 0);
      codec.push_back({a, b});
    }
  }
  add_event(r, "dequantize", 0, ev_us(r, c->ev_trace[2]), ev_us(r, c->ev_trace[3]), nullptr, 0);
  std::sort(comm.begin(), comm.end());
  std::vector<std::pair<double, double>> merged;
  for (const auto &p : comm) {
    if (!merged.empty() && p.first <= merged.back().second)
      merged.back().second = std::max(merged.back().second, p.second);
    else
      merged.push_back(p);
  }
  ncclzTraceSummary &s = c->summary;
  memset(&s, 0, sizeof s);
  for (const auto &p : merged) s.comm_us += p.second - p.first;
  for (const auto &p : codec) {
    s.codec_us += p.second - p.first;
    s.exposed_us += outside(merged, p.first, p.second);
  }
  s.total_us = ev_us(r, c->ev_trace[3]) - ev_us(r, c->ev_trace[0]);
  s.iface_us = (ev_us(r, c->ev_trace[1]) - ev_us(r, c->ev_trace[0])) +
               (ev_us(r, c->ev_trace[3]) - ev_us(r, c->ev_trace[2]));
}
