/* 1,000 calls with random collectives, counts and roots on one communicator per mode (4 ranks on
 * the thread transport), and 1,000 with random algorithms too (a communicator per algorithm, nodes
 * of 2): every call completes (no hang), stays exact (lossless) or within its bound (quantized) on
 * every element, and leaves all ranks with the same result. The GPU run of
 * the same stress is `ncclz perf` territory; this is the executor's logic under CI. */
#include "test_exec_cases.h"

#include <pthread.h>
#include <stdio.h>

#define NRANKS 4
#define CALLS 1000

typedef struct {
  ncclzThreadGroup *g;
  int rank;
  const ncclzConfig *cfg;
  int algos;                /* 1: draw an algorithm per call (xc_soak_call) */
  size_t wrong, failed, calls;
  uint64_t hash[CALLS]; /* of the output, compared across ranks for the same-array collectives */
  char err[256];
} stress_rank;

/* Call i's collective, count and root: the same on every rank (a shared seed). */
static void call_of(int i, ncclzCollective *c, size_t *count, int *root) {
  uint64_t s = 0x5eed0000ull + (uint64_t)i;
  *c = (ncclzCollective)(tu_rand(&s) % NCCLZ_COLL_COUNT);
  *count = (size_t)(tu_rand(&s) % 3000);
  *root = (int)(tu_rand(&s) % NRANKS);
}

static void *rank_main(void *arg) {
  stress_rank *me = arg;
  ncclzHostComm *comms[XC_NALGOS] = {0};
  for (int a = 0; a < (me->algos ? XC_NALGOS : 1); a++) {
    ncclzConfig cfg = *me->cfg;
    if (me->algos) xc_algo_config(&cfg, a);
    if (ncclzHostCommInit(&comms[a], ncclzThreadGroupTransport(me->g, me->rank), &cfg) != NCCLZ_OK) {
      snprintf(me->err, sizeof me->err, "init: %s", ncclzLastError());
      me->failed = CALLS;
      return NULL;
    }
  }
  int lossless = me->cfg->quant.kind == NCCLZ_QUANT_NONE;
  for (int i = 0; i < CALLS; i++) {
    ncclzCollective c;
    size_t count;
    int root, a = 0;
    if (me->algos)
      xc_soak_call(i, NRANKS, &a, &c, &count, &root);
    else
      call_of(i, &c, &count, &root);
    ncclzHostComm *comm = comms[a];
    void *in = xc_make_input(lossless, NCCLZ_DTYPE_F32, c, count, NRANKS, me->rank);
    size_t no = xc_out_count(c, count, NRANKS);
    void *out = calloc(no + 1, 4);
    ncclzExecStats st;
    if (ncclzHostRun(comm, c, in, out, count, NCCLZ_DTYPE_F32, root, &st) != NCCLZ_OK) {
      me->failed++;
      snprintf(me->err, sizeof me->err, "call %d (%s, %zu): %s", i, ncclzCollectiveName(c), count, ncclzLastError());
    } else {
      me->wrong += xc_check(out, lossless, NCCLZ_DTYPE_F32, c, count, NRANKS, me->rank, root, st.error_bound, NULL);
      me->hash[i] = c == NCCLZ_ALLREDUCE || c == NCCLZ_ALLGATHER || c == NCCLZ_BROADCAST ? xc_hash(out, no * 4) : 0;
    }
    me->calls++;
    free(in);
    free(out);
  }
  for (int a = 0; a < XC_NALGOS; a++) ncclzHostCommDestroy(comms[a]);
  return NULL;
}

static void stress(const char *quant, ncclzCoderPolicy pol, const ncclzProfile *prof, int algos) {
  xc_mode m = {quant, pol};
  ncclzConfig cfg;
  xc_config(&cfg, &m, prof);
  ncclzThreadGroup *g = ncclzThreadGroupCreate(NRANKS);
  static stress_rank ranks[NRANKS];
  pthread_t th[NRANKS];
  for (int r = 0; r < NRANKS; r++) {
    memset(&ranks[r], 0, sizeof ranks[r]);
    ranks[r] = (stress_rank){g, r, &cfg, algos, 0, 0, 0, {0}, ""};
    pthread_create(&th[r], NULL, rank_main, &ranks[r]);
  }
  for (int r = 0; r < NRANKS; r++) pthread_join(th[r], NULL);
  ncclzThreadGroupDestroy(g);
  size_t wrong = 0, failed = 0, differ = 0;
  for (int r = 0; r < NRANKS; r++) {
    wrong += ranks[r].wrong;
    failed += ranks[r].failed;
    CHECK(ranks[r].calls == CALLS, "%s/%s rank %d completed %zu of %d calls", quant, ncclzPolicyName(pol), r,
          ranks[r].calls, CALLS);
    for (int i = 0; i < CALLS; i++) differ += ranks[r].hash[i] != ranks[0].hash[i];
  }
  printf("%-24s %-8s %s %d calls x %d ranks: %zu failed, %zu wrong elements, %zu results differing across ranks\n", quant,
         ncclzPolicyName(pol), algos ? "algorithms" : "ring", CALLS, NRANKS, failed, wrong, differ);
  CHECK(failed == 0, "%s/%s: %zu calls failed (%s)", quant, ncclzPolicyName(pol), failed, ranks[0].err);
  CHECK(wrong == 0, "%s/%s: %zu wrong elements", quant, ncclzPolicyName(pol), wrong);
  CHECK(differ == 0, "%s/%s: %zu results differ across ranks", quant, ncclzPolicyName(pol), differ);
}

int main(void) {
  ncclzProfile prof;
  CHECK(ncclzProfileLoad(NCCLZ_TEST_DATA "/profile_synthetic.json", &prof) == NCCLZ_OK, "%s", ncclzLastError());
  stress("none", NCCLZ_POLICY_HUFFMAN, &prof, 0);
  stress("eb:rel=1e-3", NCCLZ_POLICY_AUTO, &prof, 0);
  stress("qsgd:bits=8,bucket=64", NCCLZ_POLICY_FIXEDLEN, &prof, 0);
  stress("none", NCCLZ_POLICY_FIXEDLEN, &prof, 1);
  stress("qsgd:bits=8,bucket=64", NCCLZ_POLICY_AUTO, &prof, 1);
  return tu_finish("test_exec_stress");
}
