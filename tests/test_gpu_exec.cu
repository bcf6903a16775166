/* The NCCL executor on 2 GPUs (one process, a thread per GPU, the thread transport as the lane):
 *  - lossless policies (raw, fixedlen, huffman, auto) are bit-exact against the exact sum of
 *    integer-valued inputs, for every collective and odd counts (0, 1, fewer than ranks, large);
 *  - quantized modes (qsgd, eb) stay within the derived bound on every element, and the ranks'
 *    results are bitwise identical where they hold the same data;
 *  - a mismatched config fails on every rank at init; NaN under quantization fails on every rank;
 *  - 1000 calls of random sizes and collectives complete (no hang).
 * Skips (exit 77) without 2 GPUs. Argument --quick: fewer cases. */
#include "ncclz/exec.h"

#include <cuda_runtime.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <vector>

static int g_fail = 0;
#define CHECK(c, ...)                                  \
  do {                                                 \
    if (!(c)) {                                        \
      fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__); \
      fprintf(stderr, __VA_ARGS__);                    \
      fprintf(stderr, "\n");                           \
      __sync_fetch_and_add(&g_fail, 1);                \
    }                                                  \
  } while (0)

enum { NR = 2 };

static ncclzProfile g_prof;

struct Case {
  ncclzCollective coll;
  size_t count;
  const char *quant;
  ncclzCoderPolicy policy;
  int per_frame = 0; /* auto: ncclzConfig.rea_per_frame */
};

/* Input element i of rank r: integers (lossless sums are exact) or smooth values (quantized). */
static float input(int r, size_t i, bool integer) {
  if (integer) return (float)((long)((r * 7 + (long)(i % 1000003) * 13) % 61) - 30);
  return (float)(3.0 * sin(0.001 * (double)i + r) + 0.01 * (double)((i * 2654435761u + (size_t)r) % 101));
}

static size_t n_in(ncclzCollective c, size_t n) { return c == NCCLZ_REDUCESCATTER || c == NCCLZ_ALLTOALL ? n * NR : n; }
static size_t n_out(ncclzCollective c, size_t n) { return c == NCCLZ_ALLGATHER || c == NCCLZ_ALLTOALL ? n * NR : n; }

static double expected(ncclzCollective c, size_t n, int me, size_t i, bool integer) {
  double s = 0;
  switch (c) {
  case NCCLZ_ALLREDUCE:
    for (int q = 0; q < NR; q++) s += input(q, i, integer);
    return s;
  case NCCLZ_REDUCESCATTER:
    for (int q = 0; q < NR; q++) s += input(q, (size_t)me * n + i, integer);
    return s;
  case NCCLZ_ALLGATHER: return input((int)(i / n), i % n, integer);
  case NCCLZ_ALLTOALL: return input((int)(i / n), (size_t)me * n + i % n, integer);
  default: return input(0, i, integer); /* root 0 */
  }
}

static ncclzStatus call(ncclzCollective c, const void *in, void *out, size_t n, ncclzComm_t comm, cudaStream_t s) {
  switch (c) {
  case NCCLZ_ALLREDUCE: return ncclzAllReduce(in, out, n, ncclFloat32, ncclSum, comm, s);
  case NCCLZ_REDUCESCATTER: return ncclzReduceScatter(in, out, n, ncclFloat32, ncclSum, comm, s);
  case NCCLZ_ALLGATHER: return ncclzAllGather(in, out, n, ncclFloat32, comm, s);
  case NCCLZ_ALLTOALL: return ncclzAlltoAll(in, out, n, ncclFloat32, comm, s);
  default: return ncclzBroadcast(in, out, n, ncclFloat32, 0, comm, s);
  }
}

struct Rank {
  ncclzThreadGroup *g;
  int rank;
  const std::vector<Case> *cases;
  std::vector<std::vector<float>> outs; /* per case */
  int random_iters;
};

static void make_cfg(const Case &k, ncclzConfig *cfg) {
  ncclzConfigDefault(cfg);
  cfg->policy = k.policy;
  ncclzQuantSpecParse(k.quant, &cfg->quant);
  cfg->profile = &g_prof;
  cfg->hint = NCCLZ_HINT_NET;
  cfg->chunk_bytes = 256 << 10; /* several chunks per block at the larger counts */
  cfg->rea_per_frame = k.per_frame;
}

static void run_case(Rank *R, ncclzComm_t comm, const Case &k, cudaStream_t s) {
  bool integer = !strcmp(k.quant, "none");
  size_t ni = n_in(k.coll, k.count), no = n_out(k.coll, k.count);
  std::vector<float> x(ni + 1), y(no + 1, -7.0f);
  for (size_t i = 0; i < ni; i++) x[i] = input(R->rank, i, integer);
  float *din, *dout;
  cudaMalloc(&din, (ni + 1) * 4);
  cudaMalloc(&dout, (no + 1) * 4);
  cudaMemcpy(din, x.data(), ni * 4, cudaMemcpyHostToDevice);
  ncclzStatus st = call(k.coll, din, dout, k.count, comm, s);
  CHECK(!st, "rank %d %s n=%zu %s %s: %s", R->rank, ncclzCollectiveName(k.coll), k.count, k.quant,
        ncclzPolicyName(k.policy), ncclzLastError());
  cudaMemcpy(y.data(), dout, no * 4, cudaMemcpyDeviceToHost);
  ncclzExecStats es;
  ncclzCommLastStats(comm, &es);
  size_t bad = 0;
  for (size_t i = 0; i < no && !st; i++) {
    double e = expected(k.coll, k.count, R->rank, i, integer);
    bool ok = integer ? (float)e == y[i] : fabs((double)y[i] - e) <= es.error_bound;
    bad += !ok;
    if (!ok && bad < 3)
      fprintf(stderr, "  rank %d %s n=%zu %s %s: y[%zu] = %.9g, want %.9g (bound %g)\n", R->rank,
              ncclzCollectiveName(k.coll), k.count, k.quant, ncclzPolicyName(k.policy), i, y[i], e, es.error_bound);
  }
  CHECK(bad == 0, "%zu wrong elements", bad);
  CHECK(es.wire_bytes <= es.frame_bytes * 1.01 + 1, "wire %llu > 1.01 x frames %llu",
        (unsigned long long)es.wire_bytes, (unsigned long long)es.frame_bytes);
  y.resize(no);
  R->outs.push_back(y);
  cudaFree(din);
  cudaFree(dout);
}

/* Random collectives and sizes, the same sequence on both ranks (shared seed). */
static void run_random(Rank *R, ncclzComm_t comm, cudaStream_t s) {
  unsigned seed = 12345;
  size_t cap = 1 << 18;
  float *din, *dout;
  cudaMalloc(&din, cap * NR * 4);
  cudaMalloc(&dout, cap * NR * 4);
  cudaMemset(din, 0, cap * NR * 4);
  for (int it = 0; it < R->random_iters; it++) {
    seed = seed * 1103515245u + 12345u;
    ncclzCollective c = (ncclzCollective)((seed >> 16) % NCCLZ_COLL_COUNT);
    seed = seed * 1103515245u + 12345u;
    size_t n = (seed >> 8) % (cap / 4) + ((seed & 1) ? 0 : 1);
    ncclzStatus st = call(c, din, dout, n, comm, s);
    if (st) {
      CHECK(0, "random call %d (%s, %zu): %s", it, ncclzCollectiveName(c), n, ncclzLastError());
      break;
    }
  }
  cudaFree(din);
  cudaFree(dout);
}

static void *rank_main(void *arg) {
  Rank *R = (Rank *)arg;
  ncclzTransport *t = ncclzThreadGroupTransport(R->g, R->rank);
  cudaStream_t s;
  cudaSetDevice(R->rank);
  cudaStreamCreate(&s);
  const Case *prev = nullptr;
  ncclzComm_t comm = nullptr;
  ncclzComm_t base = nullptr; /* one NCCL communicator, wrapped by every config */
  ncclzConfig c0;
  Case k0 = {NCCLZ_ALLREDUCE, 0, "none", NCCLZ_POLICY_OFF};
  make_cfg(k0, &c0);
  ncclzStatus st = ncclzCommInitCreate(&base, t, R->rank, &c0);
  CHECK(!st, "init: %s", ncclzLastError());
  if (st) return nullptr;
  for (const Case &k : *R->cases) {
    if (!prev || prev->policy != k.policy || prev->per_frame != k.per_frame || strcmp(prev->quant, k.quant)) {
      if (comm) ncclzCommDestroy(comm);
      ncclzConfig cfg;
      make_cfg(k, &cfg);
      st = ncclzCommInit(&comm, ncclzCommNccl(base), t, &cfg);
      CHECK(!st, "wrap: %s", ncclzLastError());
    }
    prev = &k;
    run_case(R, comm, k, s);
  }
  if (R->random_iters) {
    ncclzCommDestroy(comm);
    Case kr = {NCCLZ_ALLREDUCE, 0, "none", NCCLZ_POLICY_HUFFMAN};
    ncclzConfig cfg;
    make_cfg(kr, &cfg);
    cfg.chunk_bytes = 64 << 10;
    ncclzCommInit(&comm, ncclzCommNccl(base), t, &cfg);
    run_random(R, comm, s);
  }
  /* Mismatched configs: an error on every rank, no hang. */
  ncclzConfig bad;
  Case kb = {NCCLZ_ALLREDUCE, 0, R->rank ? "qsgd:bits=8,bucket=512" : "qsgd:bits=4,bucket=512", NCCLZ_POLICY_RAW};
  make_cfg(kb, &bad);
  ncclzComm_t cb = nullptr;
  st = ncclzCommInit(&cb, ncclzCommNccl(base), t, &bad);
  CHECK(st != NCCLZ_OK, "rank %d: mismatched configs were accepted", R->rank);
  if (cb) ncclzCommDestroy(cb);
  /* NaN under quantization: an error on every rank (last: it aborts the lane). */
  if (comm) ncclzCommDestroy(comm);
  Case kn = {NCCLZ_ALLREDUCE, 1000, "qsgd:bits=8,bucket=512", NCCLZ_POLICY_FIXEDLEN};
  ncclzConfig cn;
  make_cfg(kn, &cn);
  comm = nullptr;
  if (!ncclzCommInit(&comm, ncclzCommNccl(base), t, &cn)) {
    std::vector<float> x(1000, 1.0f);
    if (R->rank == 1) x[500] = NAN;
    float *d;
    cudaMalloc(&d, 4000);
    cudaMemcpy(d, x.data(), 4000, cudaMemcpyHostToDevice);
    st = ncclzAllReduce(d, d, 1000, ncclFloat32, ncclSum, comm, s);
    CHECK(st == NCCLZ_ERR_NONFINITE, "rank %d: NaN gave status %d (%s)", R->rank, (int)st, ncclzLastError());
    cudaFree(d);
    ncclzCommDestroy(comm);
  }
  ncclzCommDestroy(base);
  cudaStreamDestroy(s);
  return nullptr;
}

int main(int argc, char **argv) {
  int ndev = 0;
  if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev < NR) {
    printf("SKIP: test_gpu_exec needs %d GPUs (found %d)\n", NR, ndev);
    return 77;
  }
  bool quick = argc > 1 && !strcmp(argv[1], "--quick");
  if (ncclzProfileLoad(NCCLZ_TEST_DATA "/profile_synthetic.json", &g_prof)) {
    fprintf(stderr, "profile: %s\n", ncclzLastError());
    return 1;
  }
  std::vector<Case> cases;
  const char *quants[] = {"none", "qsgd:bits=8,bucket=512", "eb:abs=1e-3"};
  ncclzCoderPolicy pols[] = {NCCLZ_POLICY_RAW, NCCLZ_POLICY_FIXEDLEN, NCCLZ_POLICY_HUFFMAN, NCCLZ_POLICY_AUTO};
  size_t counts[] = {0, 1, 7, 1000, 300001};
  for (const char *q : quants)
    for (ncclzCoderPolicy p : pols)
      for (int c = 0; c < NCCLZ_COLL_COUNT; c++)
        for (size_t n : counts)
          if (!quick || n == 7 || n == 300001)
            for (int pf = 0; pf <= (p == NCCLZ_POLICY_AUTO); pf++) cases.push_back({(ncclzCollective)c, n, q, p, pf});
  ncclzThreadGroup *g = ncclzThreadGroupCreate(NR);
  Rank R[NR];
  pthread_t th[NR];
  for (int r = 0; r < NR; r++) {
    R[r].g = g;
    R[r].rank = r;
    R[r].cases = &cases;
    R[r].random_iters = quick ? 100 : 1000;
    pthread_create(&th[r], nullptr, rank_main, &R[r]);
  }
  for (int r = 0; r < NR; r++) pthread_join(th[r], nullptr);
  /* Ranks that hold the same data hold the same bits. */
  for (size_t i = 0; i < cases.size() && i < R[0].outs.size() && i < R[1].outs.size(); i++) {
    ncclzCollective c = cases[i].coll;
    if (c == NCCLZ_ALLREDUCE || c == NCCLZ_ALLGATHER || c == NCCLZ_BROADCAST)
      CHECK(R[0].outs[i] == R[1].outs[i] || cases[i].count == 0, "case %zu (%s n=%zu %s %s): ranks differ", i,
            ncclzCollectiveName(c), cases[i].count, cases[i].quant, ncclzPolicyName(cases[i].policy));
  }
  ncclzThreadGroupDestroy(g);
  printf("%s: %zu cases, %d failures\n", g_fail ? "FAILED" : "passed", cases.size(), g_fail);
  return g_fail ? 1 : 0;
}
