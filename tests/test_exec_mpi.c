/* Executor over the MPI transport: run under `mpirun -np 4` (CTest test test_exec_mpi_np4).
 * Every collective x every mode x odd counts on 4 processes; each rank regenerates all inputs,
 * checks its own output element by element, and the ranks compare output hashes through the
 * transport's allreduce (bitwise identical on all ranks). Run alone (no mpirun), it skips. */
#include "test_exec_cases.h"

#include <stdio.h>

static ncclzTransport *T;

/* 1 on every rank iff every rank passed `ok`. */
static int all_ok(int ok) {
  double v = ok ? 0 : 1;
  T->allreduce_max(T, &v, 1);
  return v == 0;
}

static int same_everywhere(const void *p, size_t n) {
  uint64_t h = xc_hash(p, n);
  double v[4] = {(double)(h >> 32), (double)(h & 0xffffffffu), -(double)(h >> 32), -(double)(h & 0xffffffffu)};
  T->allreduce_max(T, v, 4);
  return v[0] == -v[2] && v[1] == -v[3];
}

static void run_case(ncclzHostComm *comm, const ncclzConfig *cfg, ncclzCollective c, size_t count, ncclzDtype dt) {
  int n = T->nranks, me = T->rank, root = n > 2 ? 2 : 0, lossless = cfg->quant.kind == NCCLZ_QUANT_NONE;
  size_t no = xc_out_count(c, count, n), ds = ncclzDtypeSize(dt);
  void *in = xc_make_input(lossless, dt, c, count, n, me), *out = calloc(no + 1, ds);
  ncclzExecStats s;
  ncclzStatus st = ncclzHostRun(comm, c, in, out, count, dt, root, &s);
  CHECK(st == NCCLZ_OK, "%s count=%zu %s rank %d: %s", ncclzCollectiveName(c), count, ncclzPolicyName(cfg->policy), me,
        ncclzLastError());
  size_t w = st ? 0 : xc_check(out, lossless, dt, c, count, n, me, root, s.error_bound, NULL);
  CHECK(w == 0, "%s count=%zu %s quant %d rank %d: %zu wrong (bound %g)", ncclzCollectiveName(c), count,
        ncclzPolicyName(cfg->policy), (int)cfg->quant.kind, me, w, s.error_bound);
  CHECK(s.wire_bytes <= s.frame_bytes * 1.01 + 0.5, "wire %llu > 1.01 x frames %llu",
        (unsigned long long)s.wire_bytes, (unsigned long long)s.frame_bytes);
  if (c == NCCLZ_ALLREDUCE || c == NCCLZ_ALLGATHER || c == NCCLZ_BROADCAST)
    CHECK(same_everywhere(out, no * ds), "%s count=%zu: outputs differ across ranks", ncclzCollectiveName(c), count);
  free(in);
  free(out);
}

static void test_matrix(const ncclzProfile *prof) {
  const size_t counts[] = {0, 1, 3, 7, 1001};
  for (size_t m = 0; m < XC_NMODES; m++) {
    ncclzConfig cfg;
    xc_config(&cfg, &xc_modes[m], prof);
    ncclzHostComm *comm = NULL;
    ncclzStatus st = ncclzHostCommInit(&comm, T, &cfg);
    CHECK(st == NCCLZ_OK, "init mode %zu: %s", m, ncclzLastError());
    if (st) continue;
    for (int c = 0; c < NCCLZ_COLL_COUNT; c++)
      for (size_t k = 0; k < sizeof counts / sizeof counts[0]; k++)
        run_case(comm, &cfg, (ncclzCollective)c, counts[k], m % 3 == 1 ? NCCLZ_DTYPE_BF16 : NCCLZ_DTYPE_F32);
    ncclzHostCommDestroy(comm);
  }
}

/* Every algorithm on the collectives it serves, ranks in nodes of 1, 2 and all (np 4 in CTest). */
static void test_algorithms(const ncclzProfile *prof) {
  const size_t counts[] = {0, 1, 3, 13, 1001};
  const size_t modes[] = {0, 3, 6, 11};
  int n = T->nranks;
  for (size_t m = 0; m < sizeof modes / sizeof modes[0]; m++)
    for (int a = NCCLZ_ALGO_RING; a < NCCLZ_ALGO_COUNT; a++)
      for (int g = 1; g <= n; g *= 2) {
        if (n % g) continue;
        ncclzConfig cfg;
        xc_config(&cfg, &xc_modes[modes[m]], prof);
        cfg.algorithm = (ncclzAlgorithm)a;
        cfg.ranks_per_node = g;
        cfg.channels = a == NCCLZ_ALGO_RING ? 2 : 0;
        ncclzHostComm *comm = NULL;
        if (ncclzHostCommInit(&comm, T, &cfg) != NCCLZ_OK) {
          CHECK(0, "init %s: %s", ncclzAlgorithmName((ncclzAlgorithm)a), ncclzLastError());
          continue;
        }
        for (int c = 0; c < 3; c++) {
          ncclzCollective coll = c == 0 ? NCCLZ_ALLREDUCE : c == 1 ? NCCLZ_REDUCESCATTER : NCCLZ_ALLGATHER;
          ncclzScheduleSpec sp = {coll, cfg.algorithm, n, g, 0, 1, 1, NCCLZ_ALGO_RHD};
          char why[160];
          if (ncclzScheduleCheck(&sp, why, sizeof why)) continue;
          for (size_t k = 0; k < sizeof counts / sizeof counts[0]; k++) run_case(comm, &cfg, coll, counts[k], NCCLZ_DTYPE_F32);
        }
        ncclzHostCommDestroy(comm);
      }
}

/* 1,000 calls, each on a random algorithm's communicator (xc_soak_call), as the thread soak. */
static void test_soak(const ncclzProfile *prof) {
  xc_mode mode = {"qsgd:bits=8,bucket=64", NCCLZ_POLICY_AUTO};
  ncclzHostComm *comms[XC_NALGOS] = {0};
  int ok = 1;
  for (int a = 0; a < XC_NALGOS; a++) {
    ncclzConfig cfg;
    xc_config(&cfg, &mode, prof);
    xc_algo_config(&cfg, a);
    ok &= ncclzHostCommInit(&comms[a], T, &cfg) == NCCLZ_OK;
  }
  CHECK(ok, "soak init: %s", ncclzLastError());
  for (int i = 0; ok && i < 1000; i++) {
    ncclzCollective c;
    size_t count;
    int root, a, n = T->nranks;
    xc_soak_call(i, n, &a, &c, &count, &root);
    size_t no = xc_out_count(c, count, n);
    void *in = xc_make_input(0, NCCLZ_DTYPE_F32, c, count, n, T->rank), *out = calloc(no + 1, 4);
    ncclzExecStats s;
    ncclzStatus st = ncclzHostRun(comms[a], c, in, out, count, NCCLZ_DTYPE_F32, root, &s);
    size_t w = st ? no + 1 : xc_check(out, 0, NCCLZ_DTYPE_F32, c, count, n, T->rank, root, s.error_bound, NULL);
    if (w) ok = 0;
    CHECK(w == 0, "soak call %d (%s on %s, %zu): %s", i, ncclzCollectiveName(c), ncclzAlgorithmName(xc_algos[a]), count,
          st ? ncclzLastError() : "wrong elements");
    free(in);
    free(out);
  }
  for (int a = 0; a < XC_NALGOS; a++) ncclzHostCommDestroy(comms[a]);
  if (T->rank == 0) printf("MPI soak over algorithms: %s\n", ok ? "1000 calls, all exact within bound" : "FAILED");
}

/* Rank 0 asks for another policy: an error on every rank, no hang. NaN on one rank: same. */
static void test_bad(const ncclzProfile *prof) {
  ncclzConfig cfg;
  xc_config(&cfg, &xc_modes[6], prof);
  if (T->rank == 0) cfg.policy = NCCLZ_POLICY_HUFFMAN;
  ncclzHostComm *comm = NULL;
  ncclzStatus st = ncclzHostCommInit(&comm, T, &cfg);
  CHECK(st == NCCLZ_ERR_ARG, "mismatched config: rank %d got %d", T->rank, st);
  ncclzHostCommDestroy(comm);
  CHECK(all_ok(st == NCCLZ_ERR_ARG), "mismatched config detected on every rank");

  xc_config(&cfg, &xc_modes[9], prof);
  st = ncclzHostCommInit(&comm, T, &cfg);
  CHECK(st == NCCLZ_OK, "init qsgd: %s", ncclzLastError());
  float in[40], out[40];
  for (int i = 0; i < 40; i++) in[i] = (float)i;
  if (T->rank == 1) in[5] = NAN;
  if (!st) st = ncclzHostRun(comm, NCCLZ_ALLREDUCE, in, out, 40, NCCLZ_DTYPE_F32, 0, NULL);
  CHECK(st == NCCLZ_ERR_NONFINITE, "NaN: rank %d got %d", T->rank, st);
  ncclzHostCommDestroy(comm);
}

/* The size protocol's cost over MPI: per received chunk, the wait for the header and then for the
 * payload it announced, against policy off (plain bytes, no header). */
static void test_protocol_cost(const ncclzProfile *prof) {
  const size_t count = 1 << 20;
  for (int off = 0; off < 2; off++) {
    ncclzConfig cfg;
    xc_config(&cfg, &xc_modes[off ? 0 : 1], prof);
    cfg.chunk_bytes = 64 << 10;
    cfg.max_chunks = 64;
    ncclzHostComm *comm = NULL;
    if (ncclzHostCommInit(&comm, T, &cfg)) continue;
    void *in = xc_make_input(1, NCCLZ_DTYPE_F32, NCCLZ_ALLREDUCE, count, T->nranks, T->rank);
    void *out = calloc(count, 4);
    ncclzExecStats s, sum = {0};
    for (int i = 0; i < 5; i++) {
      CHECK(ncclzHostRun(comm, NCCLZ_ALLREDUCE, in, out, count, NCCLZ_DTYPE_F32, 0, &s) == NCCLZ_OK, "cost run");
      sum.t_total += s.t_total;
      sum.t_wait_ctrl += s.t_wait_ctrl;
      sum.t_wait_data += s.t_wait_data;
      sum.chunks_received += s.chunks_received;
    }
    double per = sum.chunks_received ? 1e6 / (double)sum.chunks_received : 0;
    if (T->rank == 0)
      printf("size protocol over MPI (%s, %d ranks, 4 MiB allreduce, 64 KiB chunks): %.2f ms per call, header wait "
             "%.2f us/chunk, payload-after-header wait %.2f us/chunk, wire/frames %.4f\n",
             off ? "off: plain bytes" : "raw frames + control lane", T->nranks, sum.t_total * 1e3 / 5,
             sum.t_wait_ctrl * per, sum.t_wait_data * per, s.frame_bytes ? (double)s.wire_bytes / s.frame_bytes : 0.0);
    free(in);
    free(out);
    ncclzHostCommDestroy(comm);
  }
}

int main(int argc, char **argv) {
  if (!getenv("OMPI_COMM_WORLD_SIZE") && !getenv("PMI_SIZE")) {
    printf("SKIP: test_exec_mpi runs under mpirun (CTest: test_exec_mpi_np4)\n");
    return 77;
  }
  if (!ncclzMpiAvailable()) {
    printf("SKIP: built without MPI\n");
    return 77;
  }
  ncclzMpiInit(&argc, &argv);
  T = ncclzMpiTransportCreate();
  ncclzProfile prof;
  ncclzStatus st = ncclzProfileLoad(NCCLZ_TEST_DATA "/profile_synthetic.json", &prof);
  CHECK(st == NCCLZ_OK, "profile: %s", ncclzLastError());
  if (!st) {
    test_bad(&prof);
    test_matrix(&prof);
    test_protocol_cost(&prof);
    test_algorithms(&prof);
    test_soak(&prof);
  }
  int ok = all_ok(tu_failed == 0);
  if (T->rank == 0) printf("MPI executor tests on %d ranks: %s\n", T->nranks, ok ? "all ranks passed" : "FAILURES");
  T->destroy(T);
  ncclzMpiFinalize();
  return tu_finish("test_exec_mpi");
}
