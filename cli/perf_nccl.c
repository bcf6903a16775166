/* ncclz perf's nccl backend: the GPU executor (ncclzComm over NCCL), one thread per GPU (-g N) or
 * this process as one MPI rank (mpirun ... -g 1). Each size: buffers from the rank's inputs,
 * -w warm-up calls waited for, then the host clock over -n back-to-back calls (nccl-tests' mean),
 * an optional traced call (--trace), the output checked, and the ranks' numbers combined over the
 * executor's control lane. --warm-s and --stress are here too. */
#include "cli.h"
#include "perf.h"

#ifdef NCCLZ_HAVE_NCCL
#include <cuda_runtime_api.h>
#include <pthread.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define VERB PERF_VERB

typedef struct {
  const perf_opts *o;
  ncclzTransport *t;
  int rank, dev;
  perf_point *pts;
  size_t npts;
  cJSON *json_points; /* rank 0 */
  uint64_t wrong;
  int rc;
  ncclzComm_t plain; /* --vs-plain: policy off on the same NCCL communicator */
} gpu_rank;

static ncclDataType_t nccl_type(ncclzDtype d) {
  return d == NCCLZ_DTYPE_BF16 ? ncclBfloat16 : d == NCCLZ_DTYPE_F16 ? ncclFloat16 : ncclFloat32;
}

static ncclzStatus gpu_call(const perf_opts *o, ncclzComm_t c, const void *in, void *out, size_t count,
                            cudaStream_t s) {
  ncclDataType_t t = nccl_type(o->dtype);
  switch (o->coll) {
  case NCCLZ_ALLREDUCE: return ncclzAllReduce(in, out, count, t, ncclSum, c, s);
  case NCCLZ_REDUCESCATTER: return ncclzReduceScatter(in, out, count, t, ncclSum, c, s);
  case NCCLZ_ALLGATHER: return ncclzAllGather(in, out, count, t, c, s);
  case NCCLZ_ALLTOALL: return ncclzAlltoAll(in, out, count, t, c, s);
  default: return ncclzBroadcast(in, out, count, t, o->root, c, s);
  }
}

/* Chrome trace JSON (Perfetto opens it): one process per rank, one thread per stream. */
static ncclzStatus write_trace(const perf_opts *o, int rank, ncclzComm_t c) {
  const ncclzTraceEvent *ev;
  size_t n;
  ncclzCommTrace(c, &ev, &n, NULL);
  /* tracks 0-3, then comm lanes 1.. on 4.. (exec/nccl_trace.cu: track 3 + lane) */
  static const char *tracks[] = {"interface", "encode", "nccl", "decode", "nccl (lane 1)", "nccl (lane 2)", "nccl (lane 3)"};
  enum { N_TRACKS = sizeof tracks / sizeof tracks[0] };
  _Static_assert(N_TRACKS == 3 + NCCLZ_MAX_COMM_LANES, "a track name for every comm lane");
  cJSON *arr = cJSON_CreateArray();
  /* the process (rank) is named with the pair the traced call ran */
  ncclzExecStats last;
  ncclzCommLastStats(c, &last);
  char pname[96];
  snprintf(pname, sizeof pname, "rank %d: %s/%s%s", rank, ncclzAlgorithmName(last.algorithm),
           last.policy == NCCLZ_POLICY_OFF ? "plain" : ncclzPolicyName(last.policy),
           last.pair_auto ? " (cost model)" : "");
  cJSON *pm = cJSON_CreateObject(), *pa = cJSON_CreateObject();
  cJSON_AddStringToObject(pm, "name", "process_name");
  cJSON_AddStringToObject(pm, "ph", "M");
  cJSON_AddNumberToObject(pm, "pid", rank);
  cJSON_AddStringToObject(pa, "name", pname);
  cJSON_AddItemToObject(pm, "args", pa);
  cJSON_AddItemToArray(arr, pm);
  for (int l = 0; l < N_TRACKS; l++) {
    cJSON *m = cJSON_CreateObject(), *a = cJSON_CreateObject();
    cJSON_AddStringToObject(m, "name", "thread_name");
    cJSON_AddStringToObject(m, "ph", "M");
    cJSON_AddNumberToObject(m, "pid", rank);
    cJSON_AddNumberToObject(m, "tid", l);
    cJSON_AddStringToObject(a, "name", tracks[l]);
    cJSON_AddItemToObject(m, "args", a);
    cJSON_AddItemToArray(arr, m);
  }
  for (size_t i = 0; i < n; i++) {
    cJSON *e = cJSON_CreateObject(), *a = cJSON_CreateObject();
    cJSON_AddStringToObject(e, "name", ev[i].name);
    cJSON_AddStringToObject(e, "ph", "X");
    cJSON_AddNumberToObject(e, "pid", rank);
    cJSON_AddNumberToObject(e, "tid", ev[i].lane);
    cJSON_AddNumberToObject(e, "ts", ev[i].ts_us);
    cJSON_AddNumberToObject(e, "dur", ev[i].dur_us);
    cJSON_AddNumberToObject(a, "step", ev[i].step);
    cJSON_AddNumberToObject(a, "chunk", ev[i].chunk);
    cJSON_AddItemToObject(e, "args", a);
    cJSON_AddItemToArray(arr, e);
  }
  char path[1024];
  if (rank)
    snprintf(path, sizeof path, "%s.r%d", o->trace, rank);
  else
    snprintf(path, sizeof path, "%s", o->trace);
  char *txt = cJSON_PrintUnformatted(arr);
  cJSON_Delete(arr);
  ncclzStatus st = txt ? ncclzWriteFile("--trace", path, txt, strlen(txt))
                       : ncclzSetError(NCCLZ_ERR_NOMEM, "--trace: out of memory for '%s'", path);
  free(txt);
  return st;
}

enum { AG_MAX = 4, AG_SUM = 9 };

/* Max of time, maxerr, bound and plain time over ranks; sums of the counters (each rank fills
 * its own slots). */
static ncclzStatus aggregate(gpu_rank *g, perf_point *p, const ncclzExecStats *st, const ncclzTraceSummary *ts,
                             uint64_t wrong, double maxerr, double secs, double plain_secs) {
  int nr = g->t->nranks;
  size_t nv = AG_MAX + (size_t)AG_SUM * nr;
  double *v = calloc(nv, sizeof *v), *m = v + AG_MAX + (size_t)AG_SUM * g->rank;
  v[0] = secs * 1e6;
  v[1] = maxerr;
  v[2] = st->error_bound;
  v[3] = plain_secs * 1e6;
  double mine[AG_SUM] = {(double)wrong,         (double)st->raw_bytes,     (double)st->frame_bytes,
                         (double)st->wire_bytes, (double)st->coder_mix[0], (double)st->coder_mix[1],
                         (double)st->coder_mix[2], ts->codec_us,            ts->exposed_us};
  memcpy(m, mine, sizeof mine);
  ncclzStatus s = g->t->allreduce_max(g->t, v, nv);
  p->time_us = v[0];
  p->maxerr = v[1];
  p->bound = v[2];
  p->plain_us = v[3];
  for (int r = 0; r < nr; r++) {
    const double *q = v + AG_MAX + (size_t)AG_SUM * r;
    p->wrong += (uint64_t)q[0];
    p->raw += (uint64_t)q[1];
    p->frames_b += (uint64_t)q[2];
    p->wire += (uint64_t)q[3];
    for (int c = 0; c < NCCLZ_CODER_COUNT; c++) p->mix[c] += (uint64_t)q[4 + c];
    p->codec_us += q[7];
    p->exposed_us += q[8];
  }
  p->comm_us = ts->comm_us;
  p->iface_us = ts->iface_us;
  p->host_unit_us = 1e6 * st->t_unit_host; /* rank 0's own, as calibrate's unit_host_us */
  perf_set_pair(p, st);
  free(v);
  return s;
}

/* The device input (this rank's data, in the dtype) and a zeroed output of a call of `count`. */
static ncclzStatus gpu_buffers(const gpu_rank *g, size_t count, void **din, void **dout) {
  const perf_opts *o = g->o;
  size_t ds = ncclzDtypeSize(o->dtype), ni = perf_in_elems(o, count), no = perf_out_elems(o, count);
  float *x = malloc((ni + 1) * sizeof *x);
  void *hin = malloc((ni + 1) * ds);
  ncclzStatus st = NCCLZ_OK;
  *din = *dout = NULL;
  if (!x || !hin) st = ncclzSetError(NCCLZ_ERR_NOMEM, "perf input of %zu elements", ni);
  for (size_t i = 0; !st && i < ni; i++) x[i] = perf_input_value(o, g->rank, i);
  if (!st) ncclzFromFloat(x, ni, o->dtype, hin);
  if (!st && (cudaMalloc(din, (ni + 1) * ds) || cudaMalloc(dout, (no + 1) * ds) ||
              cudaMemcpy(*din, hin, ni * ds, cudaMemcpyHostToDevice) || cudaMemset(*dout, 0, (no + 1) * ds)))
    st = ncclzSetError(NCCLZ_ERR_CUDA, "perf buffers of %zu + %zu elements", ni, no);
  free(x);
  free(hin);
  return st;
}

/* --warm-s: calls of min(MAX, 64 MiB) until rank 0 has spent the time, then the first size. The
 * ranks agree after every call (the lane's allreduce_max), so all make the same number of calls. */
static ncclzStatus gpu_prewarm(gpu_rank *g, ncclzComm_t c, cudaStream_t s) {
  const perf_opts *o = g->o;
  size_t bytes = o->max_bytes < ((size_t)64 << 20) ? o->max_bytes : (size_t)64 << 20;
  size_t count = bytes / ncclzDtypeSize(o->dtype);
  void *din, *dout;
  ncclzStatus st = gpu_buffers(g, count, &din, &dout);
  double t0 = ncclzNowSeconds(), done = 0;
  while (!st && !done) {
    st = gpu_call(o, c, din, dout, count, s);
    if (!st && cudaStreamSynchronize(s)) st = ncclzSetError(NCCLZ_ERR_CUDA, "stream synchronize");
    done = g->rank == 0 && ncclzNowSeconds() - t0 >= o->warm_s;
    if (!st) st = g->t->allreduce_max(g->t, &done, 1);
  }
  cudaFree(din);
  cudaFree(dout);
  return st;
}

/* -w untimed calls on c, waited for: they are asynchronous, and otherwise the timed loop would
 * also pay for them ((warmup + iters) / iters of a call's time: 1.4x at -n 5 -w 2). */
static ncclzStatus warm_calls(gpu_rank *g, ncclzComm_t c, const void *din, void *dout, size_t count, cudaStream_t s) {
  ncclzStatus st = NCCLZ_OK;
  for (int i = 0; !st && i < g->o->warmup; i++) st = gpu_call(g->o, c, din, dout, count, s);
  if (!st && cudaStreamSynchronize(s)) st = ncclzSetError(NCCLZ_ERR_CUDA, "stream synchronize");
  return st;
}

/* iters back-to-back calls on c, from a barrier to the stream's end, as nccl-tests times them:
 * *secs per call. */
static ncclzStatus timed_calls(gpu_rank *g, ncclzComm_t c, const void *din, void *dout, size_t count, cudaStream_t s,
                               int iters, double *secs) {
  double v = 0;
  ncclzStatus st = g->t->allreduce_max(g->t, &v, 1); /* every rank starts timing together */
  double t0 = ncclzNowSeconds();
  for (int i = 0; !st && i < iters; i++) st = gpu_call(g->o, c, din, dout, count, s);
  if (!st && cudaStreamSynchronize(s)) st = ncclzSetError(NCCLZ_ERR_CUDA, "stream synchronize");
  *secs = (ncclzNowSeconds() - t0) / iters;
  return st;
}

/* --vs-plain: rounds of plain and compressed calls, alternated, so that both see the same clock
 * and link states, each side first in every other round (a side that always ran second would
 * inherit whatever the first left: clocks, caches); the medians of the rounds. A round lasts at
 * least VS_ROUND_S (more calls than -n where calls are short): at -n 50 a round of 1 MiB NVLink
 * calls took 0.7 ms, and three of them put plain 5% ahead of itself (16 MiB AlltoAll). The ranks
 * take the largest count any of them wants. The compressed calls come last (the output checked
 * and the stats read are theirs). */
#define VS_ROUNDS 7
#define VS_ROUND_S 0.02
static ncclzStatus timed_vs_plain(gpu_rank *g, ncclzComm_t c, const void *din, void *dout, size_t count, cudaStream_t s,
                                  double *secs, double *plain_secs) {
  double a[VS_ROUNDS], b[VS_ROUNDS], one = 0;
  ncclzStatus st = warm_calls(g, g->plain, din, dout, count, s);
  if (!st) st = timed_calls(g, g->plain, din, dout, count, s, g->o->iters, &one);
  double iters = one > 0 ? ceil(VS_ROUND_S / one) : g->o->iters;
  iters = iters < g->o->iters ? g->o->iters : iters > 100000 ? 100000 : iters;
  if (!st) st = g->t->allreduce_max(g->t, &iters, 1);
  for (int k = 0; !st && k < VS_ROUNDS; k++) { /* ABBA: each goes first in every other round */
    int plain_first = k % 2 == 0 || k == VS_ROUNDS - 1; /* the compressed calls end the last round */
    if (plain_first) st = timed_calls(g, g->plain, din, dout, count, s, (int)iters, &a[k]);
    if (!st) st = timed_calls(g, c, din, dout, count, s, (int)iters, &b[k]);
    if (!st && !plain_first) st = timed_calls(g, g->plain, din, dout, count, s, (int)iters, &a[k]);
  }
  *plain_secs = st ? 0 : ncclzMedian(a, VS_ROUNDS);
  *secs = st ? 0 : ncclzMedian(b, VS_ROUNDS);
  return st;
}

static ncclzStatus gpu_point(gpu_rank *g, ncclzComm_t c, cudaStream_t s, perf_point *p, int last) {
  const perf_opts *o = g->o;
  size_t ds = ncclzDtypeSize(o->dtype), no = perf_out_elems(o, p->count);
  void *hout = malloc((no + 1) * ds), *din = NULL, *dout = NULL;
  ncclzStatus st = hout ? gpu_buffers(g, p->count, &din, &dout) : ncclzSetError(NCCLZ_ERR_NOMEM, "perf output");
  double secs = 0, plain_secs = 0;
  if (!st) st = warm_calls(g, c, din, dout, p->count, s);
  if (!st)
    st = g->plain ? timed_vs_plain(g, c, din, dout, p->count, s, &secs, &plain_secs)
                  : timed_calls(g, c, din, dout, p->count, s, o->iters, &secs);
  ncclzExecStats es;
  ncclzCommLastStats(c, &es);
  ncclzTraceSummary ts = {0};
  if (!st && o->trace) { /* one extra call with timing events, outside the timed loop */
    ncclzCommSetTrace(c, 1);
    st = gpu_call(o, c, din, dout, p->count, s);
    ncclzCommSetTrace(c, 0);
    ncclzCommTrace(c, NULL, NULL, &ts);
    p->traced = 1;
    if (!st && last) st = write_trace(o, g->rank, c); /* a trace that cannot be written is an error, not lost */
  }
  perf_point mine = {0};
  if (!st && cudaMemcpy(hout, dout, no * ds, cudaMemcpyDeviceToHost))
    st = ncclzSetError(NCCLZ_ERR_CUDA, "copy of the output");
  size_t stride = no > (4u << 20) ? no / (4u << 20) + 1 : 1;
  /* No frames sent or received in a quantized mode: REA kept the message RAW and plain NCCL ran
   * (exact but for float rounding), so the quantizer's bound does not apply (-1: check the float
   * rounding). A rank that only receives (Broadcast off the root) sends no frames of its own. */
  int framed = es.frames > 0 || es.chunks_received > 0;
  double bound = !framed && o->cfg.quant.kind != NCCLZ_QUANT_NONE ? -1 : es.error_bound;
  if (!st) perf_check_output(o, p->count, g->rank, hout, bound, stride, &mine);
  cudaFree(din);
  cudaFree(dout);
  free(hout);
  if (st) return st;
  return aggregate(g, p, &es, &ts, mine.wrong, mine.maxerr, secs, plain_secs);
}

/* --stress: the calls of random collectives, roots and counts (0 to 4 Mi elements, log-uniform,
 * so that odd and tiny counts come up), from a generator seeded alike on every rank, so that all
 * ranks make the same calls. Each is one call of gpu_point (its output checked, the ranks agreeing
 * on the result), so a hang or a wrong element is what this can find. */
static ncclzStatus gpu_stress(gpu_rank *g, ncclzComm_t c, cudaStream_t s) {
  perf_opts oo = *g->o;
  gpu_rank gg = *g;
  gg.o = &oo;
  oo.warmup = 0, oo.iters = 1, oo.trace = NULL;
  perf_stress st;
  perf_stress_init(&st);
  ncclzStatus err = NCCLZ_OK;
  while (!err && !st.wrong && st.calls < g->o->stress) {
    perf_point p = {0};
    p.count = perf_stress_next(&st, &oo);
    p.size = p.count * ncclzDtypeSize(oo.dtype);
    err = gpu_point(&gg, c, s, &p, 0);
    st.wrong += p.wrong;
    if (g->rank == 0) perf_stress_progress(&st, g->o->stress);
  }
  if (g->rank == 0) perf_stress_report(&st, g->o, err != NCCLZ_OK);
  g->wrong += st.wrong;
  return err;
}

static void *gpu_rank_main(void *arg) {
  gpu_rank *g = arg;
  const perf_opts *o = g->o;
  ncclzComm_t c = NULL;
  cudaStream_t s = NULL;
  ncclzStatus st = ncclzCommInitCreate(&c, g->t, g->dev, &o->cfg);
  if (!st && cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking)) st = ncclzSetError(NCCLZ_ERR_CUDA, "stream");
  if (!st && o->vs_plain) { /* plain NCCL on the same communicator, for the interleaved timing */
    ncclzConfig off = o->cfg;
    off.policy = NCCLZ_POLICY_OFF;
    off.quant.kind = NCCLZ_QUANT_NONE;
    st = ncclzCommInit(&g->plain, ncclzCommNccl(c), g->t, &off);
  }
  if (!st && o->warm_s > 0) st = gpu_prewarm(g, c, s);
  if (!st && o->stress) st = gpu_stress(g, c, s);
  for (size_t k = 0; !st && !o->stress && k < g->npts; k++) {
    perf_point *p = &g->pts[k];
    st = gpu_point(g, c, s, p, k + 1 == g->npts);
    if (st || g->rank) continue;
    perf_finish_point(o, p);
    g->wrong += p->wrong;
    perf_print_point(o, p);
    if (p->traced)
      fprintf(stderr, "# trace %zu B: codec %.0f us, exposed %.0f us (%.1f%%), nccl busy %.0f us, interface %.0f us\n",
              p->size, p->codec_us, p->exposed_us, p->codec_us > 0 ? 100 * p->exposed_us / p->codec_us : 0,
              p->comm_us, p->iface_us);
    cJSON_AddItemToArray(g->json_points, perf_point_json(p));
  }
  if (st) g->rc = cli_runtime_error(VERB, "rank %d: %s", g->rank, ncclzLastError());
  if (s) cudaStreamDestroy(s);
  ncclzCommDestroy(g->plain); /* not the NCCL communicator: c owns it */
  ncclzCommDestroy(c);
  return NULL;
}

static void nccl_defaults(perf_opts *o) {
  const char *p2p = getenv("NCCL_P2P_DISABLE");
  if (!o->hint) o->hint = p2p && atoi(p2p) ? "net" : "nvlink";
  o->cfg.hint = (ncclzTransportHint)ncclzHintFromName(o->hint);
}

/* One process, a thread per GPU (-g N), or this process as one MPI rank (mpirun ... -g 1). */
static int run_nccl(perf_opts *o, cJSON *points, uint64_t *wrong) {
  perf_point *pts;
  int ndev = 0;
  cudaGetDeviceCount(&ndev);
  if (o->mpi) {
    ncclzTransport *t = ncclzMpiTransportCreate();
    if (!t) return cli_runtime_error(VERB, "MPI transport: %s", ncclzLastError());
    const char *lr = getenv("OMPI_COMM_WORLD_LOCAL_RANK");
    gpu_rank g = {o, t, t->rank, ndev ? (lr ? atoi(lr) : t->rank) % ndev : 0, NULL, 0, points, 0, CLI_OK, NULL};
    g.npts = perf_make_points(o, &g.pts);
    if (t->rank == 0 && !o->stress) perf_print_header(o);
    gpu_rank_main(&g);
    *wrong = g.wrong;
    free(g.pts);
    t->destroy(t);
    return g.rc;
  }
  if (ndev < o->ngpus) return cli_runtime_error(VERB, "-g %d: this machine has %d GPUs", o->ngpus, ndev);
  size_t np = perf_make_points(o, &pts);
  free(pts);
  ncclzThreadGroup *tg = ncclzThreadGroupCreate(o->ngpus);
  gpu_rank *g = calloc((size_t)o->ngpus, sizeof *g);
  pthread_t *th = calloc((size_t)o->ngpus, sizeof *th);
  if (!o->stress) perf_print_header(o);
  for (int r = 0; r < o->ngpus; r++) {
    g[r] = (gpu_rank){o, ncclzThreadGroupTransport(tg, r), r, r, NULL, 0, points, 0, CLI_OK, NULL};
    g[r].npts = perf_make_points(o, &g[r].pts);
    pthread_create(&th[r], NULL, gpu_rank_main, &g[r]);
  }
  int rc = CLI_OK;
  for (int r = 0; r < o->ngpus; r++) {
    pthread_join(th[r], NULL);
    if (g[r].rc && rc == CLI_OK) rc = g[r].rc;
    free(g[r].pts);
  }
  *wrong = g[0].wrong;
  (void)np;
  ncclzThreadGroupDestroy(tg);
  free(g);
  free(th);
  return rc;
}

const perf_backend perf_backend_nccl = {"nccl", run_nccl, nccl_defaults};

#endif
