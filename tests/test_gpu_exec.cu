/* The NCCL executor on every GPU of the machine (one process, a thread per GPU, the thread
 * transport as the lane; NCCL takes one rank per GPU, so one GPU runs one rank):
 *  - every algorithm (ring over 1 and 2 channels, tree over nodes of 1 GPU and over one node, rhd,
 *    hier over nodes of 2 GPUs where there are 4 or more, auto) runs every collective it serves;
 *    one it does not serve is refused on every rank with the host engine's one line;
 *  - lossless policies (raw, fixedlen, huffman, auto) are bit-exact against the exact sum of
 *    integer-valued inputs, for every collective and odd counts (0, 1, fewer than ranks, large);
 *  - quantized modes (qsgd, eb) stay within the derived bound on every element, and the ranks'
 *    results are bitwise identical where they hold the same data;
 *  - a mismatched config fails on every rank at init (with 2 GPUs or more); NaN under
 *    quantization fails on every rank;
 *  - 1000 calls of random sizes, collectives and algorithms complete (no hang).
 * Skips (exit 77) without a GPU. Arguments: --quick (fewer cases), --ranks N (the first N GPUs). */
#include "ncclz/exec.h"

#include <cuda_runtime.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <string>
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

enum { MAXR = 8 };
static int NR = 1; /* ranks: one per GPU */

static ncclzProfile g_prof;

/* A schedule: the config's algorithm, node size and channels. */
struct Layout {
  ncclzAlgorithm algo;
  int ranks_per_node;
  uint32_t channels;
};

struct Case {
  ncclzCollective coll;
  size_t count;
  const char *quant;
  ncclzCoderPolicy policy;
  int per_frame = 0; /* auto: ncclzConfig.rea_per_frame */
  Layout lay = {NCCLZ_ALGO_AUTO, 0, 0};
};

/* The refusal the host engine gives a schedule that cannot run the call ("" if it runs). */
static std::string refusal(const Case &k) {
  ncclzScheduleSpec sp = {k.coll, k.lay.algo == NCCLZ_ALGO_AUTO ? NCCLZ_ALGO_RING : k.lay.algo, NR, k.lay.ranks_per_node,
                          0, 1, k.lay.channels ? k.lay.channels : 1, NCCLZ_ALGO_RHD};
  char why[200];
  if (!ncclzScheduleCheck(&sp, why, sizeof why)) return "";
  return std::string("config algorithm: ") + why;
}

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
  cfg->algorithm = k.lay.algo;
  cfg->ranks_per_node = k.lay.ranks_per_node;
  cfg->channels = k.lay.channels;
}

static bool same_config(const Case &a, const Case &b) {
  return a.policy == b.policy && a.per_frame == b.per_frame && !strcmp(a.quant, b.quant) && a.lay.algo == b.lay.algo &&
         a.lay.ranks_per_node == b.lay.ranks_per_node && a.lay.channels == b.lay.channels;
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
  const std::string want = refusal(k);
  if (!want.empty()) { /* an algorithm that does not serve the collective: the host engine's line */
    CHECK(st == NCCLZ_ERR_ARG && want == ncclzLastError(), "rank %d %s/%s: status %d, '%s', want '%s'", R->rank,
          ncclzCollectiveName(k.coll), ncclzAlgorithmName(k.lay.algo), (int)st, ncclzLastError(), want.c_str());
    R->outs.push_back(std::vector<float>());
    cudaFree(din);
    cudaFree(dout);
    return;
  }
  CHECK(!st, "rank %d %s n=%zu %s %s %s g=%d c=%u: %s", R->rank, ncclzCollectiveName(k.coll), k.count, k.quant,
        ncclzPolicyName(k.policy), ncclzAlgorithmName(k.lay.algo), k.lay.ranks_per_node, k.lay.channels,
        ncclzLastError());
  cudaMemcpy(y.data(), dout, no * 4, cudaMemcpyDeviceToHost);
  ncclzExecStats es;
  ncclzCommLastStats(comm, &es);
  size_t bad = 0;
  for (size_t i = 0; i < no && !st; i++) {
    double e = expected(k.coll, k.count, R->rank, i, integer);
    bool ok = integer ? (float)e == y[i] : fabs((double)y[i] - e) <= es.error_bound;
    bad += !ok;
    if (!ok && bad < 3)
      fprintf(stderr, "  rank %d %s n=%zu %s %s %s: y[%zu] = %.9g, want %.9g (bound %g)\n", R->rank,
              ncclzCollectiveName(k.coll), k.count, k.quant, ncclzPolicyName(k.policy), ncclzAlgorithmName(k.lay.algo),
              i, y[i], e, es.error_bound);
  }
  CHECK(bad == 0, "%zu wrong elements", bad);
  CHECK(es.wire_bytes <= es.frame_bytes * 1.01 + 1, "wire %llu > 1.01 x frames %llu",
        (unsigned long long)es.wire_bytes, (unsigned long long)es.frame_bytes);
  y.resize(no);
  R->outs.push_back(y);
  cudaFree(din);
  cudaFree(dout);
}

/* Random collectives, sizes and algorithms, the same sequence on every rank (shared seed): a
 * communicator per algorithm. */
static void run_random(Rank *R, ncclzComm_t *comms, int ncomms, cudaStream_t s) {
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
    seed = seed * 1103515245u + 12345u;
    ncclzComm_t comm = comms[(seed >> 16) % (unsigned)ncomms];
    if (c != NCCLZ_ALLREDUCE && c != NCCLZ_REDUCESCATTER && c != NCCLZ_ALLGATHER) comm = comms[0]; /* ring's only */
    if (c != NCCLZ_ALLREDUCE && comm == comms[1]) comm = comms[0];                                  /* tree's only */
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
    if (!prev || !same_config(*prev, k)) {
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
    comm = nullptr;
    /* ring (every collective), tree (allreduce), rhd (allreduce, reducescatter, allgather) */
    const ncclzAlgorithm algos[3] = {NCCLZ_ALGO_RING, NCCLZ_ALGO_TREE, NCCLZ_ALGO_RHD};
    ncclzComm_t comms[3] = {nullptr, nullptr, nullptr};
    for (int a = 0; a < 3; a++) {
      Case kr = {NCCLZ_ALLREDUCE, 0, "none", NCCLZ_POLICY_HUFFMAN};
      kr.lay = {algos[a], algos[a] == NCCLZ_ALGO_TREE ? 1 : 0, 0};
      ncclzConfig cfg;
      make_cfg(kr, &cfg);
      cfg.chunk_bytes = 64 << 10;
      st = ncclzCommInit(&comms[a], ncclzCommNccl(base), t, &cfg);
      CHECK(!st, "random %s: %s", ncclzAlgorithmName(algos[a]), ncclzLastError());
    }
    if (comms[0] && comms[1] && comms[2]) run_random(R, comms, 3, s);
    for (ncclzComm_t cm : comms) ncclzCommDestroy(cm);
  }
  /* Mismatched configs: an error on every rank, no hang (one rank has no other to differ from). */
  ncclzConfig bad;
  Case kb = {NCCLZ_ALLREDUCE, 0, R->rank ? "qsgd:bits=8,bucket=512" : "qsgd:bits=4,bucket=512", NCCLZ_POLICY_RAW};
  make_cfg(kb, &bad);
  ncclzComm_t cb = nullptr;
  st = ncclzCommInit(&cb, ncclzCommNccl(base), t, &bad);
  CHECK(st != NCCLZ_OK || NR == 1, "rank %d: mismatched configs were accepted", R->rank);
  if (cb) ncclzCommDestroy(cb);
  /* NaN under quantization: an error on every rank (last: it aborts the lane). */
  if (comm) ncclzCommDestroy(comm);
  Case kn = {NCCLZ_ALLREDUCE, 1000, "qsgd:bits=8,bucket=512", NCCLZ_POLICY_FIXEDLEN};
  ncclzConfig cn;
  make_cfg(kn, &cn);
  comm = nullptr;
  if (!ncclzCommInit(&comm, ncclzCommNccl(base), t, &cn)) {
    std::vector<float> x(1000, 1.0f);
    if (R->rank == NR - 1) x[500] = NAN;
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

/* The schedules this many ranks allow: auto, ring on 1 and 2 channels, the tree over nodes of one
 * GPU and over one node, rhd, hier over nodes of 2 (4 ranks or more, whole nodes); on one rank
 * each is the rank's own copy, and the refusals are the same as on many. */
static std::vector<Layout> layouts(void) {
  std::vector<Layout> l = {{NCCLZ_ALGO_AUTO, 0, 0},   {NCCLZ_ALGO_RING, 0, 1}, {NCCLZ_ALGO_RING, 1, 2},
                           {NCCLZ_ALGO_TREE, 1, 0},   {NCCLZ_ALGO_TREE, 0, 0}, {NCCLZ_ALGO_RHD, 0, 0}};
  if (NR >= 4 && NR % 2 == 0)
    l.push_back({NCCLZ_ALGO_HIER, 2, 0});
  else if (NR == 1)
    l.push_back({NCCLZ_ALGO_HIER, 0, 0});
  return l;
}

int main(int argc, char **argv) {
  int ndev = 0;
  if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev < 1) {
    printf("SKIP: test_gpu_exec needs a GPU (found none)\n");
    return 77;
  }
  bool quick = false;
  NR = ndev < MAXR ? ndev : MAXR;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--quick")) {
      quick = true;
    } else if (!strcmp(argv[i], "--ranks") && i + 1 < argc) {
      uint64_t want = 0;
      if (ncclzParseU64(argv[++i], 1, (uint64_t)NR, &want)) {
        fprintf(stderr, "--ranks %s: 1 to %d GPUs here\n", argv[i], NR);
        return 2;
      }
      NR = (int)want;
    } else {
      fprintf(stderr, "usage: test_gpu_exec [--quick] [--ranks N]\n");
      return 2;
    }
  }
  printf("test_gpu_exec: %d rank%s (one per GPU)\n", NR, NR == 1 ? "" : "s");
  if (ncclzProfileLoad(NCCLZ_TEST_DATA "/profile_synthetic.json", &g_prof)) {
    fprintf(stderr, "profile: %s\n", ncclzLastError());
    return 1;
  }
  std::vector<Case> cases;
  const char *quants[] = {"none", "qsgd:bits=8,bucket=512", "eb:abs=1e-3"};
  ncclzCoderPolicy pols[] = {NCCLZ_POLICY_RAW, NCCLZ_POLICY_FIXEDLEN, NCCLZ_POLICY_HUFFMAN, NCCLZ_POLICY_AUTO};
  size_t counts[] = {0, 1, 7, 1000, 300001};
  /* every mode on the default schedule; lossless and quantized, fixed and auto coders on every other */
  for (const Layout &lay : layouts())
    for (const char *q : quants)
      for (ncclzCoderPolicy p : pols) {
        if (lay.algo != NCCLZ_ALGO_AUTO && p != NCCLZ_POLICY_HUFFMAN && p != NCCLZ_POLICY_AUTO) continue;
        for (int c = 0; c < NCCLZ_COLL_COUNT; c++)
          for (size_t n : counts)
            if (!quick || n == 7 || n == 300001)
              for (int pf = 0; pf <= (p == NCCLZ_POLICY_AUTO && lay.algo == NCCLZ_ALGO_AUTO); pf++) {
                Case k = {(ncclzCollective)c, n, q, p, pf};
                k.lay = lay;
                cases.push_back(k);
              }
      }
  ncclzThreadGroup *g = ncclzThreadGroupCreate(NR);
  Rank R[MAXR];
  pthread_t th[MAXR];
  for (int r = 0; r < NR; r++) {
    R[r].g = g;
    R[r].rank = r;
    R[r].cases = &cases;
    R[r].random_iters = quick ? 100 : 1000;
    pthread_create(&th[r], nullptr, rank_main, &R[r]);
  }
  for (int r = 0; r < NR; r++) pthread_join(th[r], nullptr);
  /* Ranks that hold the same data hold the same bits. */
  for (int r = 1; r < NR; r++)
    for (size_t i = 0; i < cases.size() && i < R[0].outs.size() && i < R[r].outs.size(); i++) {
      ncclzCollective c = cases[i].coll;
      if (c == NCCLZ_ALLREDUCE || c == NCCLZ_ALLGATHER || c == NCCLZ_BROADCAST)
        CHECK(R[0].outs[i] == R[r].outs[i] || cases[i].count == 0, "case %zu (%s n=%zu %s %s %s): ranks 0 and %d differ",
              i, ncclzCollectiveName(c), cases[i].count, cases[i].quant, ncclzPolicyName(cases[i].policy),
              ncclzAlgorithmName(cases[i].lay.algo), r);
    }
  ncclzThreadGroupDestroy(g);
  printf("%s: %zu cases, %d failures\n", g_fail ? "FAILED" : "passed", cases.size(), g_fail);
  return g_fail ? 1 : 0;
}
