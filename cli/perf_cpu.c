/* ncclz perf's cpu backend: the executor's host engine, one thread per rank over the in-process
 * transport (-g N), or this process as one rank over the MPI transport (mpirun ... -g 1). It
 * measures nothing about GPUs, but runs the same schedules, frames, size protocol and checks. */
#include "cli.h"
#include "perf.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define VERB PERF_VERB

typedef struct {
  const perf_opts *o;
  ncclzTransport *t;
  int rank;
  size_t count;
  void *in, *out;
  double secs;
  ncclzStatus st;
  char err[256];
  ncclzExecStats stats;
} rank_job;

static void *rank_main(void *arg) {
  rank_job *j = arg;
  ncclzHostComm *c = NULL;
  ncclzTransport *t = j->t;
  j->st = j->in && j->out ? ncclzHostCommInit(&c, t, &j->o->cfg) : ncclzSetError(NCCLZ_ERR_NOMEM, "out of memory");
  double v = 0;
  for (int i = 0; !j->st && i < j->o->warmup + j->o->iters; i++) {
    if (i == j->o->warmup) {
      t->allreduce_max(t, &v, 1); /* a barrier: every rank starts timing together */
      j->secs = ncclzNowSeconds();
    }
    j->st = ncclzHostRun(c, j->o->coll, j->in, j->out, j->count, j->o->dtype, j->o->root, &j->stats);
  }
  j->secs = (ncclzNowSeconds() - j->secs) / j->o->iters;
  snprintf(j->err, sizeof j->err, "%s", ncclzLastError());
  ncclzHostCommDestroy(c);
  return NULL;
}

/* The job's send buffer (its rank's inputs, in the dtype) and a zeroed receive buffer. */
static void make_buffers(const perf_opts *o, rank_job *j) {
  size_t ds = ncclzDtypeSize(o->dtype), ni = perf_in_elems(o, j->count), no = perf_out_elems(o, j->count);
  float *x = malloc((ni + 1) * sizeof *x);
  j->in = x ? malloc((ni + 1) * ds) : NULL;
  j->out = calloc(no + 1, ds);
  for (size_t i = 0; j->in && i < ni; i++) x[i] = perf_input_value(o, j->rank, i);
  if (j->in) ncclzFromFloat(x, ni, o->dtype, j->in);
  free(x);
}

/* One rank's output checked and its numbers added to the point. */
static void add_rank(const perf_opts *o, const rank_job *j, perf_point *p) {
  perf_check_output(o, j->count, j->rank, j->out, j->stats.error_bound, 1, p);
  p->time_us = fmax(p->time_us, j->secs * 1e6);
  p->raw += j->stats.raw_bytes;
  p->frames_b += j->stats.frame_bytes;
  p->wire += j->stats.wire_bytes;
  p->bound = fmax(p->bound, j->stats.error_bound);
  for (int c = 0; c < NCCLZ_CODER_COUNT; c++) p->mix[c] += j->stats.coder_mix[c];
  perf_set_pair(p, &j->stats);
}

/* -g N ranks as threads of this process. */
static int run_point_threads(const perf_opts *o, size_t count, perf_point *p) {
  rank_job *jobs = calloc((size_t)o->ngpus, sizeof *jobs);
  pthread_t *th = calloc((size_t)o->ngpus, sizeof *th);
  ncclzThreadGroup *g = ncclzThreadGroupCreate(o->ngpus);
  if (!jobs || !th || !g) {
    if (g) ncclzThreadGroupDestroy(g);
    free(jobs), free(th);
    return cli_runtime_error(VERB, "out of memory for %d ranks", o->ngpus);
  }
  for (int r = 0; r < o->ngpus; r++) {
    jobs[r] = (rank_job){o, ncclzThreadGroupTransport(g, r), r, count, NULL, NULL, 0, NCCLZ_OK, "", {0}};
    make_buffers(o, &jobs[r]);
    pthread_create(&th[r], NULL, rank_main, &jobs[r]);
  }
  for (int r = 0; r < o->ngpus; r++) pthread_join(th[r], NULL);
  int rc = CLI_OK;
  for (int r = 0; r < o->ngpus; r++) {
    if (jobs[r].st && rc == CLI_OK) rc = cli_runtime_error(VERB, "rank %d: %s", r, jobs[r].err);
    if (!jobs[r].st) add_rank(o, &jobs[r], p);
    free(jobs[r].in);
    free(jobs[r].out);
  }
  ncclzThreadGroupDestroy(g);
  free(jobs);
  free(th);
  return rc;
}

/* The ranks' numbers of one point, combined over the transport (each rank fills its own slot of
 * a max-reduction: sums of counts, maxima of times and errors); every rank gets the same point.
 * Returns the number of ranks that failed. */
enum { K_TIME, K_WRONG, K_RAW, K_FRAMES, K_WIRE, K_BOUND, K_MAXERR, K_FAILED, K_MIX, K_COUNT = K_MIX + NCCLZ_CODER_COUNT };

static int combine_ranks(ncclzTransport *t, int failed, perf_point *p) {
  double *v = calloc((size_t)t->nranks * K_COUNT, sizeof *v), *mine = v + (size_t)t->rank * K_COUNT;
  if (!v) return t->nranks; /* every rank is out of memory alike, or the job aborts on the next call */
  double own[K_COUNT] = {p->time_us, (double)p->wrong, (double)p->raw, (double)p->frames_b, (double)p->wire, p->bound,
                         p->maxerr, failed};
  for (int c = 0; c < NCCLZ_CODER_COUNT; c++) own[K_MIX + c] = (double)p->mix[c];
  memcpy(mine, own, sizeof own);
  int bad = t->allreduce_max(t, v, (size_t)t->nranks * K_COUNT) != NCCLZ_OK;
  memset(p->mix, 0, sizeof p->mix);
  p->time_us = p->bound = p->maxerr = 0, p->wrong = p->raw = p->frames_b = p->wire = 0;
  for (int r = 0; !bad && r < t->nranks; r++) {
    const double *s = v + (size_t)r * K_COUNT;
    p->time_us = fmax(p->time_us, s[K_TIME]), p->bound = fmax(p->bound, s[K_BOUND]), p->maxerr = fmax(p->maxerr, s[K_MAXERR]);
    p->wrong += (uint64_t)s[K_WRONG], p->raw += (uint64_t)s[K_RAW], p->frames_b += (uint64_t)s[K_FRAMES];
    p->wire += (uint64_t)s[K_WIRE];
    for (int c = 0; c < NCCLZ_CODER_COUNT; c++) p->mix[c] += (uint64_t)s[K_MIX + c];
    bad += s[K_FAILED] > 0;
  }
  free(v);
  return bad;
}

/* This process as one rank of an MPI job: its own output checked, the point combined over MPI. */
static int run_point_mpi(const perf_opts *o, ncclzTransport *t, size_t count, perf_point *p) {
  rank_job j = {o, t, t->rank, count, NULL, NULL, 0, NCCLZ_OK, "", {0}};
  make_buffers(o, &j);
  rank_main(&j);
  int rc = j.st ? cli_runtime_error(VERB, "rank %d: %s", t->rank, j.err) : CLI_OK;
  if (!j.st) add_rank(o, &j, p);
  free(j.in);
  free(j.out);
  int failed = combine_ranks(t, rc != CLI_OK, p);
  if (failed && rc == CLI_OK) rc = cli_runtime_error(VERB, "rank %d: %d other rank(s) failed", t->rank, failed);
  return rc;
}

static int run_point(const perf_opts *o, ncclzTransport *mpi, size_t count, perf_point *p) {
  return mpi ? run_point_mpi(o, mpi, count, p) : run_point_threads(o, count, p);
}

/* --stress: each call one run_point (its output checked on every rank). */
static int stress_cpu(const perf_opts *o, ncclzTransport *mpi, uint64_t *wrong) {
  perf_opts oo = *o;
  oo.warmup = 0, oo.iters = 1;
  perf_stress st;
  perf_stress_init(&st);
  int rc = CLI_OK;
  while (rc == CLI_OK && !st.wrong && st.calls < o->stress) {
    perf_point p = {0};
    p.count = perf_stress_next(&st, &oo);
    rc = run_point(&oo, mpi, p.count, &p);
    st.wrong += p.wrong;
    if (o->rank == 0) perf_stress_progress(&st, o->stress);
  }
  if (o->rank == 0) perf_stress_report(&st, o, rc != CLI_OK);
  *wrong += st.wrong;
  return rc;
}

static int sizes_cpu(const perf_opts *o, ncclzTransport *mpi, cJSON *points, uint64_t *wrong) {
  perf_point *pts;
  size_t np = perf_make_points(o, &pts);
  int rc = CLI_OK;
  if (o->rank == 0) perf_print_header(o);
  for (size_t k = 0; rc == CLI_OK && k < np; k++) {
    perf_point *p = &pts[k];
    rc = run_point(o, mpi, p->count, p);
    if (rc != CLI_OK) break; /* no row for a size that failed */
    perf_finish_point(o, p);
    *wrong += p->wrong;
    if (o->rank == 0) perf_print_point(o, p);
    cJSON_AddItemToArray(points, perf_point_json(p));
  }
  free(pts);
  return rc;
}

static int run_cpu(perf_opts *o, cJSON *points, uint64_t *wrong) {
  ncclzTransport *mpi = NULL;
  if (o->mpi && !(mpi = ncclzMpiTransportCreate())) return cli_runtime_error(VERB, "MPI transport: %s", ncclzLastError());
  int rc = o->stress ? stress_cpu(o, mpi, wrong) : sizes_cpu(o, mpi, points, wrong);
  if (mpi) mpi->destroy(mpi);
  return rc;
}

const perf_backend perf_backend_cpu = {"cpu", run_cpu, NULL};
