/* Cases shared by the executor tests over the thread transport (test_exec.c) and over MPI
 * (test_exec_mpi.c): deterministic inputs that every rank can regenerate for every other rank, so
 * each rank computes the exact result itself and checks its own output element by element. */
#ifndef NCCLZ_TEST_EXEC_CASES_H
#define NCCLZ_TEST_EXEC_CASES_H

#include "ncclz/exec.h"
#include "testutil.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Integer-valued data: sums are exact in float, so lossless modes must be bit-exact. */
static inline float xc_int_value(int rank, size_t i) { return (float)((long)((rank * 7 + (long)i * 13) % 61) - 30); }

/* Smooth field plus noise, different per rank (quantized modes). */
static inline float xc_real_value(int rank, size_t i) {
  uint64_t s = 0x9E3779B97F4A7C15ull * (uint64_t)(rank + 1) + i * 0x2545F4914F6CDD1Dull;
  return (float)(10.0 * sin(0.01 * (double)i + rank) + 0.5 * (tu_uniform(&s) - 0.5) + rank);
}

static inline size_t xc_in_count(ncclzCollective c, size_t count, int n) {
  return c == NCCLZ_REDUCESCATTER || c == NCCLZ_ALLTOALL ? count * (size_t)n : count;
}
static inline size_t xc_out_count(ncclzCollective c, size_t count, int n) {
  return c == NCCLZ_ALLGATHER || c == NCCLZ_ALLTOALL ? count * (size_t)n : count;
}

/* Input element i of rank r, rounded to dtype and back (what the collective sees). */
static inline float xc_input(int lossless, ncclzDtype dt, int r, size_t i) {
  float v = lossless ? xc_int_value(r, i) : xc_real_value(r, i);
  uint16_t h;
  float back = v;
  if (dt != NCCLZ_DTYPE_F32) {
    ncclzFromFloat(&v, 1, dt, &h);
    ncclzToFloat(&h, dt, 1, &back);
  }
  return back;
}

static inline void *xc_make_input(int lossless, ncclzDtype dt, ncclzCollective c, size_t count, int n, int r) {
  size_t ni = xc_in_count(c, count, n);
  float *x = malloc((ni + 1) * sizeof *x);
  for (size_t i = 0; i < ni; i++) x[i] = xc_input(lossless, dt, r, i);
  void *buf = malloc((ni + 1) * 4);
  ncclzFromFloat(x, ni, dt, buf);
  free(x);
  return buf;
}

/* The exact result element i on rank `me`, in double. */
static inline double xc_expected(int lossless, ncclzDtype dt, ncclzCollective c, size_t count, int n, int me, int root,
                          size_t i) {
  double sum = 0;
  switch (c) {
  case NCCLZ_ALLREDUCE:
    for (int q = 0; q < n; q++) sum += xc_input(lossless, dt, q, i);
    return sum;
  case NCCLZ_REDUCESCATTER:
    for (int q = 0; q < n; q++) sum += xc_input(lossless, dt, q, (size_t)me * count + i);
    return sum;
  case NCCLZ_ALLGATHER: return xc_input(lossless, dt, (int)(i / count), i % count);
  case NCCLZ_ALLTOALL: return xc_input(lossless, dt, (int)(i / count), (size_t)me * count + i % count);
  default: return xc_input(lossless, dt, root, i);
  }
}

/* Checks one rank's output; returns the number of wrong elements. Lossless: bit-exact (the exact
 * sum, rounded once to dtype); quantized: within bound. */
static inline size_t xc_check(const void *out, int lossless, ncclzDtype dt, ncclzCollective c, size_t count, int n, int me,
                       int root, double bound, double *maxerr) {
  size_t no = xc_out_count(c, count, n), wrong = 0;
  float *y = malloc((no + 1) * sizeof *y);
  ncclzToFloat(out, dt, no, y);
  for (size_t i = 0; i < no; i++) {
    double e = xc_expected(lossless, dt, c, count, n, me, root, i);
    if (lossless) {
      float ef = (float)e;
      uint16_t h;
      if (dt != NCCLZ_DTYPE_F32) {
        ncclzFromFloat(&ef, 1, dt, &h);
        ncclzToFloat(&h, dt, 1, &ef);
      }
      wrong += memcmp(&ef, &y[i], 4) != 0;
    } else {
      double err = fabs((double)y[i] - e);
      if (maxerr && err > *maxerr) *maxerr = err;
      wrong += !(err <= bound);
    }
  }
  free(y);
  return wrong;
}

/* FNV-1a of a buffer, split in two exact doubles (for "identical on all ranks" via allreduce). */
static inline uint64_t xc_hash(const void *p, size_t n) {
  const unsigned char *b = p;
  uint64_t h = 0xcbf29ce484222325ull;
  for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 0x100000001b3ull;
  return h;
}

/* The quantizer/policy combinations every collective runs. */
typedef struct {
  const char *quant;
  ncclzCoderPolicy policy;
} xc_mode;

static const xc_mode xc_modes[] = {
    {"none", NCCLZ_POLICY_OFF},           {"none", NCCLZ_POLICY_RAW},
    {"none", NCCLZ_POLICY_FIXEDLEN},      {"none", NCCLZ_POLICY_HUFFMAN},
    {"none", NCCLZ_POLICY_AUTO},          {"eb:abs=0.01", NCCLZ_POLICY_RAW},
    {"eb:abs=0.01", NCCLZ_POLICY_FIXEDLEN}, {"eb:rel=1e-3", NCCLZ_POLICY_HUFFMAN},
    {"eb:rel=1e-3", NCCLZ_POLICY_AUTO},   {"qsgd:bits=8,bucket=64", NCCLZ_POLICY_FIXEDLEN},
    {"qsgd:bits=4,bucket=50", NCCLZ_POLICY_HUFFMAN}, {"qsgd:bits=8,bucket=512", NCCLZ_POLICY_AUTO},
};
#define XC_NMODES (sizeof xc_modes / sizeof xc_modes[0])

static inline void xc_config(ncclzConfig *cfg, const xc_mode *m, const ncclzProfile *prof) {
  ncclzConfigDefault(cfg);
  ncclzQuantSpecParse(m->quant, &cfg->quant);
  cfg->policy = m->policy;
  cfg->profile = prof;
  cfg->chunk_bytes = 512; /* several chunks per block, so the pipelined lists are exercised */
  cfg->max_chunks = 6;
}
/* The random soak over algorithms: one communicator per algorithm (ranks in nodes of 2, the ring
 * over 2 channels); call i's algorithm, collective, count and root are the same on every rank. A
 * collective the drawn algorithm cannot run goes to the ring. */
static const ncclzAlgorithm xc_algos[] = {NCCLZ_ALGO_RING, NCCLZ_ALGO_TREE, NCCLZ_ALGO_RHD, NCCLZ_ALGO_HIER};
#define XC_NALGOS 4

static inline void xc_algo_config(ncclzConfig *cfg, int a) {
  cfg->algorithm = xc_algos[a];
  cfg->ranks_per_node = 2;
  cfg->channels = xc_algos[a] == NCCLZ_ALGO_RING ? 2 : 0;
}

static inline void xc_soak_call(int i, int nranks, int *a, ncclzCollective *c, size_t *count, int *root) {
  uint64_t s = 0xa160000ull + (uint64_t)i;
  *a = (int)(tu_rand(&s) % XC_NALGOS);
  *c = (ncclzCollective)(tu_rand(&s) % NCCLZ_COLL_COUNT);
  *count = (size_t)(tu_rand(&s) % 3000);
  *root = (int)(tu_rand(&s) % (uint64_t)nranks);
  ncclzScheduleSpec sp = {*c, xc_algos[*a], nranks, 2, *root, 1, 1, NCCLZ_ALGO_RHD};
  char why[160];
  if (ncclzScheduleCheck(&sp, why, sizeof why)) *a = 0;
}
#endif
