/* GPU measurements of `ncclz calibrate` (CUDA + NCCL builds only). Each function returns a points
 * document (docs/calibrate.md) that calibrate/write_profile.c fits:
 *  - ncclzCalMeasureCodecs: encode/decode time of one frame against its raw bytes, 64 KiB..64 MiB,
 *    per coder (fixedlen, huffman) and data class, with ncclzCudaCodecBench (CUDA events, median
 *    of the runs, symbols only: the quantizer is not in E_c/D_c);
 *  - ncclzCalMeasurePath: on the current process's NCCL environment (the CLI sets it per path in
 *    a child process), a thread per GPU as cli/cmd_perf.c does: send/recv exchange between ranks 0
 *    and 1, the five plain NCCL collectives 1 KiB..1 GiB, and the overlap of the executor (traced
 *    compressed AllReduce: exposed share of encode and decode time outside the NCCL intervals). */
#include "ncclz/calibrate.h"
#include "ncclz/codecs_cuda.h"
#include "ncclz/exec.h"
#include "ncclz/model.h"
#include "ncclz/schedule.h"

#include <cjson/cJSON.h>
#include <cuda_runtime_api.h>
#include <math.h>
#include <nccl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <vector>

int ncclzCalGpuCount(void) {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) return 0;
  return n;
}

/* ------------------------------------------------------------------ metadata */

static void driver_version(char *out, size_t cap) {
  /* "NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.65.06  ..." or, for the open modules,
   * "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.159.04  ...": the first
   * token after "Kernel Module" that starts with a digit and holds a dot. */
  FILE *f = fopen("/proc/driver/nvidia/version", "r");
  char line[512];
  const char *k = f && fgets(line, sizeof line, f) ? strstr(line, "Kernel Module") : NULL;
  if (f) fclose(f);
  for (k = k ? k + strlen("Kernel Module") : NULL; k && *k; k += strcspn(k, " \t\n")) {
    k += strspn(k, " \t\n");
    size_t n = strcspn(k, " \t\n");
    if (n && k[0] >= '0' && k[0] <= '9' && memchr(k, '.', n)) {
      snprintf(out, cap, "%.*s", (int)n, k);
      return;
    }
  }
  int v = 0;
  cudaDriverGetVersion(&v);
  snprintf(out, cap, "CUDA driver API %d.%d", v / 1000, (v % 1000) / 10);
}

static cJSON *new_doc(const ncclzCalMeasureOpts *o, const char *method) {
  cJSON *root = cJSON_CreateObject();
  cJSON_AddNumberToObject(root, "version", 1);
  cJSON *m = cJSON_AddObjectToObject(root, "metadata");
  int ndev = ncclzCalGpuCount();
  cudaDeviceProp prop;
  char buf[256];
  if (ndev > 0 && cudaGetDeviceProperties(&prop, 0) == cudaSuccess)
    snprintf(buf, sizeof buf, "%.200s (%dx used of %d)", prop.name, o->ngpus, ndev);
  else
    snprintf(buf, sizeof buf, "unknown");
  cJSON_AddStringToObject(m, "device", buf);
  driver_version(buf, sizeof buf);
  cJSON_AddStringToObject(m, "driver", buf);
  int rt = 0;
  cudaRuntimeGetVersion(&rt);
  snprintf(buf, sizeof buf, "%d.%d", rt / 1000, (rt % 1000) / 10);
  cJSON_AddStringToObject(m, "cuda", buf);
  int nv = 0;
  ncclGetVersion(&nv);
  snprintf(buf, sizeof buf, "%d.%d.%d", nv / 10000, (nv % 10000) / 100, nv % 100);
  cJSON_AddStringToObject(m, "nccl", buf);
  time_t now = time(NULL);
  struct tm tmv;
  gmtime_r(&now, &tmv);
  strftime(buf, sizeof buf, "%Y-%m-%d", &tmv);
  cJSON_AddStringToObject(m, "date", buf);
  cJSON_AddStringToObject(m, "method", method);
  return root;
}

static char *finish_doc(cJSON *root) {
  char *s = cJSON_Print(root);
  cJSON_Delete(root);
  if (!s) ncclzSetError(NCCLZ_ERR_NOMEM, "out of memory");
  return s;
}

static void add_point(cJSON *arr, double bytes, double us) {
  double p[2] = {bytes, us};
  cJSON_AddItemToArray(arr, cJSON_CreateDoubleArray(p, 2));
}

/* -------------------------------------------------------------------- codecs */

static uint64_t rng_next(uint64_t *s) {
  uint64_t x = *s;
  x ^= x >> 12;
  x ^= x << 25;
  x ^= x >> 27;
  *s = x;
  return x * 0x2545F4914F6CDD1DULL;
}
static double rng_unit(uint64_t *s) { return (double)(rng_next(s) >> 11) * (1.0 / 9007199254740992.0); }

/* The three data classes: gradient-like (Gaussian, QSGD), smooth field (EB + Lorenzo), uniformly
 * random floats (quant none: the symbols are the floats' bits, near-uniform). */
typedef struct {
  const char *cls, *spec, *data;
} data_class;
static const data_class classes[3] = {
    {"qsgd", "qsgd:bits=8,bucket=512", "Gaussian gradient-like values, sigma 1e-3"},
    {"eb_lorenzo", "eb:rel=1e-4,lorenzo=1d", "smooth field sin/cos with 1e-3 noise"},
    {"none", "none", "uniformly random floats in [-1,1]"},
};

/* Element i of the gradient-like class in stream `stream`: the sum of four uniforms, centred,
 * x 1.7e-3 (~N(0, 1/3) x 1.7e-3), from a counter-based hash (splitmix64 of 4 counters), so that
 * the host (the codec curves) and the device (the overlap runs, one stream per rank) fill it alike. */
static __host__ __device__ float gradient_value(uint64_t i, uint64_t stream) {
  uint64_t h = i * 4 + 0x9E3779B97F4A7C15ull * stream, g;
  double sum = 0;
  for (int k = 0; k < 4; k++) {
    g = (h + (uint64_t)k) * 0xBF58476D1CE4E5B9ull;
    g ^= g >> 31;
    g *= 0x94D049BB133111EBull;
    g ^= g >> 29;
    sum += (double)(g >> 11) * (1.0 / 9007199254740992.0);
  }
  return (float)((sum - 2.0) * 1.7e-3);
}

static void fill_class(int k, float *x, size_t n) {
  uint64_t s = 0x9e3779b97f4a7c15ULL + (uint64_t)k;
  for (size_t i = 0; i < n; i++) {
    if (k == 0) {
      x[i] = gradient_value(i, 0);
    } else if (k == 1) {
      double t = (double)i;
      x[i] = (float)(sin(t * 1e-4) + 0.5 * cos(t * 3.3e-5) + 1e-3 * (rng_unit(&s) - 0.5));
    } else {
      x[i] = (float)(2.0 * rng_unit(&s) - 1.0);
    }
  }
}

char *ncclzCalMeasureCodecs(const ncclzCalMeasureOpts *o) {
  const size_t max_bytes = o->quick ? (16u << 20) : (64u << 20);
  const double factor = o->quick ? 4 : 2;
  const int runs = 20;
  char method[256];
  if (o->codecs_only)
    snprintf(method, sizeof method, "ncclz calibrate --codecs-only -g %d%s: 64 KiB..%zu MiB, one frame, median of %d",
             o->ngpus, o->quick ? " --quick" : "", max_bytes >> 20, runs);
  else
    snprintf(method, sizeof method,
             "ncclz calibrate -g %d%s: codec curves 64 KiB..%zu MiB (one frame, median of %d), send/recv and "
             "5 NCCL collectives 1 KiB..%s after an untimed warm-up, overlap from executor traces; docs/calibrate.md",
             o->ngpus, o->quick ? " --quick" : "", max_bytes >> 20, runs, o->quick ? "256 MiB" : "1 GiB");
  cJSON *root = new_doc(o, method);
  cJSON *codecs = cJSON_AddArrayToObject(root, "codecs");
  size_t nmax = max_bytes / 4;
  std::vector<float> x(nmax);
  for (int k = 0; k < 3; k++) {
    fill_class(k, x.data(), nmax);
    for (int c = NCCLZ_CODER_FIXEDLEN; c <= NCCLZ_CODER_HUFFMAN; c++) {
      cJSON *e = cJSON_CreateObject();
      cJSON_AddStringToObject(e, "coder", ncclzCoderName((ncclzCoder)c));
      cJSON_AddStringToObject(e, "class", classes[k].cls);
      cJSON_AddStringToObject(e, "quant", classes[k].spec);
      cJSON_AddStringToObject(e, "data", classes[k].data);
      cJSON *enc = cJSON_AddArrayToObject(e, "encode"), *dec = cJSON_AddArrayToObject(e, "decode");
      cJSON_AddItemToArray(codecs, e);
      for (double b = 65536; b <= (double)max_bytes; b *= factor) {
        size_t n = (size_t)b / 4;
        ncclzQuantSpec spec;
        ncclzQuantParams qp;
        if (ncclzQuantSpecParse(classes[k].spec, &spec) || ncclzQuantResolve(&spec, x.data(), n, NULL, 0, 0, &qp)) {
          cJSON_Delete(root);
          return NULL;
        }
        ncclzCoderParams cp; /* the executor's frames': these curves are its REA's costs */
        ncclzFrameCoderParams(&cp);
        ncclzCudaBenchResult res;
        ncclzStatus st = ncclzCudaCodecBench(x.data(), n, &qp, spec.kind == NCCLZ_QUANT_EB && spec.eb_is_rel, spec.eb,
                                             (ncclzCoder)c, NULL, 0, &cp, (uint32_t)n, runs, &res, NULL, NULL, NULL);
        if (st) {
          char msg[256];
          snprintf(msg, sizeof msg, "%s", ncclzLastError());
          ncclzSetError(st, "codec %s/%s at %zu B: %s", ncclzCoderName((ncclzCoder)c), classes[k].cls, (size_t)b, msg);
          cJSON_Delete(root);
          return NULL;
        }
        if (!res.lossless_ok || res.decode_status) {
          ncclzSetError(NCCLZ_ERR_CUDA, "codec %s/%s at %zu B: GPU round trip failed (status %d)",
                        ncclzCoderName((ncclzCoder)c), classes[k].cls, (size_t)b, res.decode_status);
          cJSON_Delete(root);
          return NULL;
        }
        /* coder_*_gbps: quantized (int32 symbol) bytes / median time; 4 bytes per f32 element too. */
        double sym_bytes = 4.0 * (double)n;
        add_point(enc, b, sym_bytes / (res.coder_encode_gbps * 1e3));
        add_point(dec, b, sym_bytes / (res.coder_decode_gbps * 1e3));
        if (o->progress)
          fprintf(stderr, "\r# codecs %-8s %-10s %9zu B: enc %7.1f GB/s dec %7.1f GB/s   ",
                  ncclzCoderName((ncclzCoder)c), classes[k].cls, (size_t)b, res.coder_encode_gbps,
                  res.coder_decode_gbps);
      }
    }
  }
  if (o->progress) fprintf(stderr, "\n");
  return finish_doc(root);
}

/* --------------------------------------------------------------- transports */

typedef struct {
  const ncclzCalMeasureOpts *o;
  ncclzCalPath path;
  ncclzTransport *t;
  int rank;
  /* rank 0's results */
  cJSON *sendrecv, *colls[NCCLZ_COLL_COUNT], *overlap;
  ncclzStatus st;
  char err[256];
} cal_rank;

#define NCCL_TRY(rk, call)                                                                        \
  do {                                                                                            \
    ncclResult_t r_ = (call);                                                                     \
    if (r_ != ncclSuccess) {                                                                      \
      (rk)->st = ncclzSetError(NCCLZ_ERR_CUDA, "%s: %s", #call, ncclGetErrorString(r_));          \
      goto fail;                                                                                  \
    }                                                                                             \
  } while (0)
#define CUDA_TRY(rk, call)                                                                        \
  do {                                                                                            \
    cudaError_t e_ = (call);                                                                      \
    if (e_ != cudaSuccess) {                                                                      \
      (rk)->st = ncclzSetError(NCCLZ_ERR_CUDA, "%s: %s", #call, cudaGetErrorString(e_));          \
      goto fail;                                                                                  \
    }                                                                                             \
  } while (0)
#define Z_TRY(rk, call)      \
  do {                       \
    if (((rk)->st = (call))) \
      goto fail;             \
  } while (0)

#define OVERLAP_QUANT (classes[0].spec) /* the gradient-like class's quantizer */

/* Host-side barrier / max over ranks through the control lane. */
static ncclzStatus agree_max(ncclzTransport *t, double *v) { return t->allreduce_max(t, v, 1); }

/* The overlap runs' data: the gradient-like class, filled on the device. */
__global__ void fill_gradient(float *x, size_t n, int rank) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
    x[i] = gradient_value(i, (uint64_t)rank + 1);
}

__global__ void fill_smooth(float *x, size_t n, int rank) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
    x[i] = sinf((float)i * 1e-4f) + 0.5f * cosf((float)i * 3.3e-5f) + 0.01f * (float)rank;
}

/* kind: -1 send/recv exchange (ranks 0 and 1), else an ncclzCollective; bytes as nccl-tests'
 * size (the whole buffer; allgather: the output; reducescatter: the input). */
static ncclResult_t nccl_op(int kind, int rank, int nranks, ncclComm_t comm, const float *s, float *r, size_t bytes,
                            cudaStream_t st) {
  size_t count = bytes / 4;
  switch (kind) {
  case -1: {
    if (rank > 1) return ncclSuccess;
    int peer = 1 - rank;
    ncclResult_t e = ncclGroupStart();
    if (e == ncclSuccess) e = ncclSend(s, count, ncclFloat32, peer, comm, st);
    if (e == ncclSuccess) e = ncclRecv(r, count, ncclFloat32, peer, comm, st);
    ncclResult_t e2 = ncclGroupEnd();
    return e != ncclSuccess ? e : e2;
  }
  case NCCLZ_ALLREDUCE: return ncclAllReduce(s, r, count, ncclFloat32, ncclSum, comm, st);
  case NCCLZ_REDUCESCATTER: return ncclReduceScatter(s, r, count / nranks, ncclFloat32, ncclSum, comm, st);
  case NCCLZ_ALLGATHER: return ncclAllGather(s, r, count / nranks, ncclFloat32, comm, st);
  case NCCLZ_ALLTOALL: return ncclAlltoAll(s, r, count / nranks, ncclFloat32, comm, st);
  default: return ncclBroadcast(s, r, count, ncclFloat32, 0, comm, st);
  }
}

/* One timed op on this rank (seconds), after a barrier. */
static ncclzStatus time_one(cal_rank *g, int kind, ncclComm_t comm, const float *s, float *r, size_t bytes,
                            cudaStream_t st, cudaEvent_t e0, cudaEvent_t e1, double *sec, ncclResult_t *e) {
  float ms = 0;
  double sync = 0;
  if (agree_max(g->t, &sync)) return NCCLZ_ERR_CUDA; /* barrier */
  cudaEventRecord(e0, st);
  if ((*e = nccl_op(kind, g->rank, g->t->nranks, comm, s, r, bytes, st)) != ncclSuccess) return NCCLZ_ERR_CUDA;
  cudaEventRecord(e1, st);
  if (cudaEventSynchronize(e1) != cudaSuccess) return NCCLZ_ERR_CUDA;
  cudaEventElapsedTime(&ms, e0, e1);
  *sec = ms * 1e-3;
  return NCCLZ_OK;
}

/* One timed point: a warm-up, an estimate (the warm-up itself when it took over 20 ms), then
 * enough iterations for ~target seconds (the same count on every rank, at least one per batch)
 * in back-to-back batches, 5 (3 for ops over 20 ms); the median of the batch means, so that one
 * slow stretch (the socket path has them) does not move the point; the slowest rank's value. */
#define TIME_BATCHES 5
static ncclzStatus time_op(cal_rank *g, int kind, ncclComm_t comm, const float *s, float *r, size_t bytes,
                           cudaStream_t st, cudaEvent_t e0, cudaEvent_t e1, double *us_out) {
  const double target_s = g->o->quick ? 0.02 : 0.08;
  int nr = g->t->nranks, batches;
  float ms = 0;
  double est = 0, v, iters, batch_us[TIME_BATCHES];
  ncclResult_t e = ncclSuccess;
  if (time_one(g, kind, comm, s, r, bytes, st, e0, e1, &est, &e)) goto fail;
  if (agree_max(g->t, &est)) return NCCLZ_ERR_CUDA;
  if (est < 0.02) {
    if (time_one(g, kind, comm, s, r, bytes, st, e0, e1, &est, &e)) goto fail;
    if (agree_max(g->t, &est)) return NCCLZ_ERR_CUDA;
  }
  batches = est < 0.02 ? TIME_BATCHES : 3;
  iters = ceil(target_s / fmax(est, 1e-7) / batches); /* per batch */
  iters = fmin(fmax(iters, 1), 1000);
  if (agree_max(g->t, &iters)) return NCCLZ_ERR_CUDA;
  for (int b = 0; b < batches; b++) {
    cudaEventRecord(e0, st);
    for (int i = 0; i < (int)iters; i++)
      if ((e = nccl_op(kind, g->rank, nr, comm, s, r, bytes, st)) != ncclSuccess) goto fail;
    cudaEventRecord(e1, st);
    if (cudaEventSynchronize(e1) != cudaSuccess) goto fail;
    cudaEventElapsedTime(&ms, e0, e1);
    batch_us[b] = ms * 1e3 / iters;
  }
  v = (kind == -1 && g->rank > 1) ? 0 : ncclzMedian(batch_us, (size_t)batches); /* 3 or 5: the middle one */
  if (agree_max(g->t, &v)) return NCCLZ_ERR_CUDA;
  *us_out = v;
  return NCCLZ_OK;
fail:
  if (e != ncclSuccess)
    return ncclzSetError(NCCLZ_ERR_CUDA, "NCCL %s at %zu B: %s",
                         kind < 0 ? "send/recv" : ncclzCollectiveName((ncclzCollective)kind), bytes, ncclGetErrorString(e));
  return ncclzSetError(NCCLZ_ERR_CUDA, "CUDA at %zu B: %s", bytes, cudaGetErrorString(cudaGetLastError()));
}

/* Exposed encode and decode time, and the interface time, of the last traced call on this rank. */
static void trace_exposure(ncclzComm_t c, double *enc, double *enc_exp, double *dec, double *dec_exp, double *iface) {
  const ncclzTraceEvent *ev;
  size_t n = 0;
  ncclzTraceSummary sum;
  ncclzCommTrace(c, &ev, &n, &sum);
  *iface = sum.iface_us; /* quantize + agree + dequantize: the interface */
  std::vector<double> cts, cdur, ets, edur, dts, ddur;
  for (size_t i = 0; i < n; i++) {
    const char *nm = ev[i].name;
    if (!strcmp(nm, "sendrecv") || !strcmp(nm, "send") || !strcmp(nm, "recv")) {
      cts.push_back(ev[i].ts_us);
      cdur.push_back(ev[i].dur_us);
    } else if (!strcmp(nm, "encode")) {
      ets.push_back(ev[i].ts_us);
      edur.push_back(ev[i].dur_us);
    } else if (!strcmp(nm, "decode")) {
      dts.push_back(ev[i].ts_us);
      ddur.push_back(ev[i].dur_us);
    }
  }
  *enc = *dec = 0;
  for (double d : edur) *enc += d;
  for (double d : ddur) *dec += d;
  *enc_exp = ncclzCalExposed(cts.data(), cdur.data(), cts.size(), ets.data(), edur.data(), ets.size());
  *dec_exp = ncclzCalExposed(cts.data(), cdur.data(), cts.size(), dts.data(), ddur.data(), dts.size());
}

/* Untimed traffic before the first sweep: each op at 64 MiB for about 0.5 s (0.1 s quick). The socket
 * path gets faster over its first seconds of traffic (the 4x4 path's first sweep ran 20-50% slower
 * than its third), and a fit to that first sweep mispredicts every later run. Same iteration count
 * on every rank. */
#define WARM_BYTES (64u << 20)
static ncclzStatus warm_up(cal_rank *g, ncclComm_t comm, const float *s, float *r, cudaStream_t st, cudaEvent_t e0,
                           cudaEvent_t e1) {
  const double warm_s = g->o->quick ? 0.1 : 0.5;
  ncclResult_t e = ncclSuccess;
  if (g->rank == 0 && g->o->progress) fprintf(stderr, "\r# %-9s warm-up   ", ncclzCalPathName(g->path));
  for (int kind = -1; kind < NCCLZ_COLL_COUNT; kind++) {
    double est = 0;
    if (time_one(g, kind, comm, s, r, WARM_BYTES, st, e0, e1, &est, &e)) goto fail;
    if (agree_max(g->t, &est)) return NCCLZ_ERR_CUDA;
    double iters = fmin(ceil(warm_s / fmax(est, 1e-6)), 2000);
    if (agree_max(g->t, &iters)) return NCCLZ_ERR_CUDA;
    for (int i = 0; i < (int)iters; i++)
      if ((e = nccl_op(kind, g->rank, g->t->nranks, comm, s, r, WARM_BYTES, st)) != ncclSuccess) goto fail;
    if (cudaStreamSynchronize(st) != cudaSuccess) goto fail;
  }
  return NCCLZ_OK;
fail:
  if (e != ncclSuccess) return ncclzSetError(NCCLZ_ERR_CUDA, "NCCL warm-up: %s", ncclGetErrorString(e));
  return ncclzSetError(NCCLZ_ERR_CUDA, "CUDA warm-up: %s", cudaGetErrorString(cudaGetLastError()));
}

/* One timed sweep of op `kind` over sizes[0..n), appended to rank 0's points. */
static ncclzStatus sweep(cal_rank *g, int kind, ncclComm_t comm, const float *sb, float *rb, const double *sizes,
                         int n, cudaStream_t s, cudaEvent_t e0, cudaEvent_t e1) {
  for (int i = 0; i < n; i++) {
    double us = 0;
    ncclzStatus st = time_op(g, kind, comm, sb, rb, (size_t)sizes[i], s, e0, e1, &us);
    if (st) return st;
    if (g->rank == 0) {
      add_point(kind < 0 ? g->sendrecv : g->colls[kind], sizes[i], us);
      if (g->o->progress)
        fprintf(stderr, "\r# %-9s %-13s %11zu B: %10.1f us   ", ncclzCalPathName(g->path),
                kind < 0 ? "sendrecv" : ncclzCollectiveName((ncclzCollective)kind), (size_t)sizes[i], us);
    }
  }
  return NCCLZ_OK;
}

/* The sizes of a run: calibration 1 KiB..max on a x2 (x4 quick) grid; check (a fresh, second
 * measurement) 1 MiB..256 MiB on a x4 grid plus the 1.5 MiB x4 sizes (1.5 .. 384 MiB) between
 * the calibration's grid points, so the check also tests the profile between its points; it
 * stops below 1 GiB to keep three sweeps of five socket paths within minutes. Returns the count. */
static int run_sizes(const ncclzCalMeasureOpts *o, size_t max_bytes, double *sizes, int cap) {
  int n = 0;
  if (!o->check) {
    for (double b = 1024; b <= (double)max_bytes && n < cap; b *= o->quick ? 4 : 2) sizes[n++] = b;
    return n;
  }
  const double top = fmin((double)max_bytes, 512.0 * 1048576);
  for (double b = 1048576; b <= top && n + 1 < cap; b *= 4) {
    sizes[n++] = b;
    if (1.5 * b <= top) sizes[n++] = 1.5 * b;
  }
  return n;
}

static void *rank_main(void *arg) {
  cal_rank *g = (cal_rank *)arg;
  const ncclzCalMeasureOpts *o = g->o;
  const size_t max_bytes = o->quick ? (256u << 20) : (1024u << 20);
  double sizes[40];
  const int nsizes = run_sizes(o, max_bytes, sizes, 40);
  ncclzComm_t c = NULL;
  ncclComm_t nccl = NULL;
  cudaStream_t s = NULL;
  cudaEvent_t e0 = NULL, e1 = NULL;
  float *sb = NULL, *rb = NULL;
  ncclzConfig cfg;
  ncclzConfigDefault(&cfg);
  cfg.policy = NCCLZ_POLICY_OFF;
  cfg.hint = g->path == NCCLZ_CAL_NVLINK ? NCCLZ_HINT_NVLINK : g->path == NCCLZ_CAL_SHM ? NCCLZ_HINT_SHM : NCCLZ_HINT_NET;
  CUDA_TRY(g, cudaSetDevice(g->rank));
  Z_TRY(g, ncclzCommInitCreate(&c, g->t, g->rank, &cfg));
  nccl = ncclzCommNccl(c);
  CUDA_TRY(g, cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  CUDA_TRY(g, cudaEventCreate(&e0));
  CUDA_TRY(g, cudaEventCreate(&e1));
  CUDA_TRY(g, cudaMalloc(&sb, max_bytes));
  CUDA_TRY(g, cudaMalloc(&rb, max_bytes));
  fill_smooth<<<1024, 256, 0, s>>>(sb, max_bytes / 4, g->rank);
  CUDA_TRY(g, cudaMemsetAsync(rb, 0, max_bytes, s));
  CUDA_TRY(g, cudaStreamSynchronize(s));
  Z_TRY(g, warm_up(g, nccl, sb, rb, s, e0, e1));
  /* whole sweeps repeated, so that each one sees the path at another moment (the socket path
   * drifts by tens of percent over tens of seconds; the fit and the check take medians) */
  for (int rep = 0; rep < o->sweeps; rep++)
    for (int kind = o->check ? 0 : -1; kind < NCCLZ_COLL_COUNT; kind++)
      Z_TRY(g, sweep(g, kind, nccl, sb, rb, sizes, nsizes, s, e0, e1));
  if (g->rank == 0 && o->progress) fprintf(stderr, "\n");
  /* Overlap: the executor's compressed AllReduce, traced (not in a check), on gradient-like data
   * under QSGD, the executor's main work. (On a smooth field at eb:rel=1e-4 HUFFMAN's alphabet
   * spans thousands of codes and its code book dominates, so the fitted lambda_dec would make
   * REA pass HUFFMAN over on gradients, whose frames it codes in a fraction of that time.) */
  if (!o->check) {
    fill_gradient<<<1024, 256, 0, s>>>(sb, max_bytes / 4, g->rank);
    CUDA_TRY(g, cudaStreamSynchronize(s));
  }
  for (int coder = NCCLZ_CODER_FIXEDLEN; !o->check && coder <= NCCLZ_CODER_HUFFMAN; coder++) {
    ncclzConfig zc;
    ncclzConfigDefault(&zc);
    zc.hint = cfg.hint;
    zc.policy = coder == NCCLZ_CODER_FIXEDLEN ? NCCLZ_POLICY_FIXEDLEN : NCCLZ_POLICY_HUFFMAN;
    if (ncclzQuantSpecParse(OVERLAP_QUANT, &zc.quant)) {
      g->st = NCCLZ_ERR_ARG;
      goto fail;
    }
    ncclzComm_t cz = NULL;
    Z_TRY(g, ncclzCommInit(&cz, nccl, g->t, &zc));
    /* 1 and 4 MiB for the interface curve (the executor's traces: ~200 us at 4 MiB on the socket
     * path where a line through 16..256 MiB says 450); the lambdas take 16 MiB and up only */
    static const size_t full[5] = {1u << 20, 4u << 20, 16u << 20, 64u << 20, 256u << 20}, quick[3] = {4u << 20, 16u << 20, 64u << 20};
    const size_t *sizes = o->quick ? quick : full;
    int nsz = o->quick ? 3 : 5;
    for (int i = 0; i < nsz; i++) {
      size_t b = sizes[i] > max_bytes ? max_bytes : sizes[i];
      ncclzCommSetTrace(cz, 0);
      ncclzStatus st = ncclzAllReduce(sb, rb, b / 4, ncclFloat32, ncclSum, cz, s); /* warm-up */
      /* The host's own time per pipeline unit, from a second untraced call (tracing records events
       * per unit; the first call on a communicator connects its peers inside the issue loop, at
       * thousands of us a unit): the issue loop without its waits for encodes and peers' headers. */
      if (!st) st = ncclzAllReduce(sb, rb, b / 4, ncclFloat32, ncclSum, cz, s);
      ncclzExecStats es;
      ncclzCommLastStats(cz, &es);
      double unit_host_us = 1e6 * es.t_unit_host;
      /* three traced calls: the interface is the quickest one's (what varies is the wait for the
       * peer in the agreement), the exposures the last one's */
      double enc = 0, enc_exp = 0, dec = 0, dec_exp = 0, iface = 1e300;
      ncclzCommSetTrace(cz, 1);
      for (int t = 0; t < 3 && !st; t++) {
        double one = 1e300;
        st = ncclzAllReduce(sb, rb, b / 4, ncclFloat32, ncclSum, cz, s);
        if (!st) trace_exposure(cz, &enc, &enc_exp, &dec, &dec_exp, &one);
        iface = fmin(iface, one);
      }
      if (st) {
        g->st = st;
        ncclzCommDestroy(cz);
        goto fail;
      }
      if (g->rank == 0) {
        cJSON *e = cJSON_CreateObject();
        cJSON_AddStringToObject(e, "path", ncclzCalPathName(g->path));
        cJSON_AddStringToObject(e, "coder", ncclzCoderName((ncclzCoder)coder));
        cJSON_AddStringToObject(e, "collective", "allreduce");
        cJSON_AddStringToObject(e, "quant", OVERLAP_QUANT);
        cJSON_AddNumberToObject(e, "bytes", (double)b);
        cJSON_AddNumberToObject(e, "encode_us", enc);
        cJSON_AddNumberToObject(e, "encode_exposed_us", enc_exp);
        cJSON_AddNumberToObject(e, "decode_us", dec);
        cJSON_AddNumberToObject(e, "decode_exposed_us", dec_exp);
        cJSON_AddNumberToObject(e, "interface_us", iface);
        cJSON_AddNumberToObject(e, "unit_host_us", unit_host_us);
        cJSON_AddItemToArray(g->overlap, e);
        if (o->progress)
          fprintf(stderr, "# %-9s overlap %-8s %10zu B: encode exposed %5.1f%%, decode exposed %5.1f%%\n",
                  ncclzCalPathName(g->path), ncclzCoderName((ncclzCoder)coder), b, enc > 0 ? 100 * enc_exp / enc : 0,
                  dec > 0 ? 100 * dec_exp / dec : 0);
      }
    }
    ncclzCommSetTrace(cz, 0);
    ncclzCommDestroy(cz);
  }
fail:
  if (g->st) {
    snprintf(g->err, sizeof g->err, "rank %d: %s", g->rank, ncclzLastError());
    g->t->abort(g->t, g->err);
  }
  if (sb) cudaFree(sb);
  if (rb) cudaFree(rb);
  if (e0) cudaEventDestroy(e0);
  if (e1) cudaEventDestroy(e1);
  if (s) cudaStreamDestroy(s);
  ncclzCommDestroy(c); /* and the NCCL communicator ncclzCommInitCreate made */
  return NULL;
}

char *ncclzCalMeasurePath(const ncclzCalMeasureOpts *o, ncclzCalPath path) {
  int ndev = ncclzCalGpuCount();
  if (o->ngpus < 2) {
    ncclzSetError(NCCLZ_ERR_ARG, "transports need 2 GPUs (-g %d)", o->ngpus);
    return NULL;
  }
  if (ndev < o->ngpus) {
    ncclzSetError(NCCLZ_ERR_CUDA, "-g %d: this machine has %d GPUs", o->ngpus, ndev);
    return NULL;
  }
  cJSON *root = new_doc(o, o->check ? "ncclz calibrate --check (fresh measurement of the plain collectives)"
                                     : "ncclz calibrate (path measurement)");
  cJSON *sr = cJSON_AddArrayToObject(root, "sendrecv"), *co = cJSON_AddArrayToObject(root, "collectives");
  cJSON *ov = cJSON_AddArrayToObject(root, "overlap");
  cJSON *e = cJSON_CreateObject();
  cJSON_AddStringToObject(e, "path", ncclzCalPathName(path));
  cJSON *srpts = cJSON_AddArrayToObject(e, "points");
  cJSON_AddItemToArray(sr, e);
  cJSON *cpts[NCCLZ_COLL_COUNT];
  for (int k = 0; k < NCCLZ_COLL_COUNT; k++) {
    e = cJSON_CreateObject();
    cJSON_AddStringToObject(e, "path", ncclzCalPathName(path));
    cJSON_AddStringToObject(e, "collective", ncclzCollectiveName((ncclzCollective)k));
    cJSON_AddNumberToObject(e, "ranks", o->ngpus);
    cpts[k] = cJSON_AddArrayToObject(e, "points");
    cJSON_AddItemToArray(co, e);
  }
  ncclzThreadGroup *tg = ncclzThreadGroupCreate(o->ngpus);
  std::vector<cal_rank> g((size_t)o->ngpus);
  std::vector<pthread_t> th((size_t)o->ngpus);
  for (int r = 0; r < o->ngpus; r++) {
    cal_rank &x = g[(size_t)r];
    memset(&x, 0, sizeof x);
    x.o = o;
    x.path = path;
    x.t = ncclzThreadGroupTransport(tg, r);
    x.rank = r;
    x.sendrecv = srpts;
    for (int k = 0; k < NCCLZ_COLL_COUNT; k++) x.colls[k] = cpts[k];
    x.overlap = ov;
    pthread_create(&th[(size_t)r], NULL, rank_main, &x);
  }
  ncclzStatus st = NCCLZ_OK;
  char err[256] = "";
  for (int r = 0; r < o->ngpus; r++) {
    pthread_join(th[(size_t)r], NULL);
    if (g[(size_t)r].st && !st) {
      st = g[(size_t)r].st;
      snprintf(err, sizeof err, "%s", g[(size_t)r].err);
    }
  }
  ncclzThreadGroupDestroy(tg);
  if (st) {
    ncclzSetError(st, "path %s: %s", ncclzCalPathName(path), err);
    cJSON_Delete(root);
    return NULL;
  }
  return finish_doc(root);
}
