/* The executor's auto pair (ncclzConfig.algorithm auto with nodes): every rank samples its codes
 * after the quantizer, the ranks agree on the least compressible CR per coder, and the call runs
 * the (algorithm, coder) pair ncclzChoose picks for that CR. 4 ranks in 2 nodes of 2, over the
 * thread transport, and over MPI when started by mpirun (CTest test_exec_auto_np4). Each case
 * asserts, on every rank: the pair is the same everywhere; it is ncclz_exec_choose's pair for the
 * agreed CR; the agreed CR is the least of the ranks' own samples (lossless f32, where the test
 * can sample every rank's symbols itself); the call ran that pair (frames and coders); lossless
 * results are bit-exact and quantized ones within the reported bound; and the expected side of
 * the choice: incompressible data goes plain, gradients and small integers go compressed. */
#include "testutil.h"
#include "ncclz/exec.h"
#include "../exec/call_rules.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define NR 4
#define GPN 2
#define COUNT 65536 /* the gradient files' elements */

typedef enum { D_GRAD, D_NOISE, D_SPARSE, D_WIDE } data_kind;
static float *grads[2];

/* Element i of rank q's input: ResNet-18 gradients (ranks alternate two files), integers spread
 * over 2^21 (their float bits look random, and 4 of them sum exactly), small integers in one run
 * of 256 elements out of 8 and zeros elsewhere (whole FIXEDLEN blocks of zero bits), or uniform
 * noise over +-1000 (for a bound far below its spacing). */
static float input(data_kind k, int q, size_t i) {
  uint64_t s = 0x5eedull * (uint64_t)(q + 1) + i * 0x9E3779B97F4A7C15ull;
  switch (k) {
  case D_GRAD: return grads[q % 2][i % COUNT];
  case D_NOISE: return (float)(long)(tu_uniform(&s) * 2097152.0 - 1048576.0);
  case D_SPARSE: return (i / 256) % 8 ? 0.0f : (float)((q * 7 + (long)i * 13) % 61 - 30);
  default: return (float)(tu_uniform(&s) * 2000.0 - 1000.0);
  }
}

typedef struct {
  const char *name, *quant;
  ncclzCoderPolicy policy;
  data_kind data;
  ncclzCollective coll;
  ncclzDtype dt;
  int want_plain; /* 1: the pair must be plain; 0: a compressing coder; -1: either */
  int scale;      /* the count in multiples of the usual one (0: 1): a size where the choice is clear */
} tcase;

static const tcase cases[] = {
    {"noise lossless -> plain", "none", NCCLZ_POLICY_AUTO, D_NOISE, NCCLZ_ALLREDUCE, NCCLZ_DTYPE_F32, 1, 0},
    {"block-sparse lossless -> compressed", "none", NCCLZ_POLICY_AUTO, D_SPARSE, NCCLZ_ALLREDUCE, NCCLZ_DTYPE_F32, 0,
     0},
    {"gradients qsgd 8 -> compressed", "qsgd:bits=8,bucket=512", NCCLZ_POLICY_AUTO, D_GRAD, NCCLZ_ALLREDUCE,
     NCCLZ_DTYPE_F32, 0, 2},
    {"wide codes eb abs 1e-4 -> plain", "eb:abs=1e-4", NCCLZ_POLICY_AUTO, D_WIDE, NCCLZ_ALLREDUCE, NCCLZ_DTYPE_F32, 1,
     0},
    {"wide codes reducescatter -> plain", "eb:abs=1e-4", NCCLZ_POLICY_AUTO, D_WIDE, NCCLZ_REDUCESCATTER,
     NCCLZ_DTYPE_F32, 1, 0},
    {"wide codes allgather bf16 -> plain", "eb:abs=1e-4", NCCLZ_POLICY_AUTO, D_WIDE, NCCLZ_ALLGATHER,
     NCCLZ_DTYPE_BF16, 1, 0},
    {"gradients eb rel reducescatter", "eb:rel=1e-2", NCCLZ_POLICY_AUTO, D_GRAD, NCCLZ_REDUCESCATTER,
     NCCLZ_DTYPE_F32, -1, 0},
    {"block-sparse allgather bf16", "none", NCCLZ_POLICY_AUTO, D_SPARSE, NCCLZ_ALLGATHER, NCCLZ_DTYPE_BF16, -1, 0},
    {"gradients qsgd, fixedlen forced", "qsgd:bits=8,bucket=512", NCCLZ_POLICY_FIXEDLEN, D_GRAD, NCCLZ_ALLREDUCE,
     NCCLZ_DTYPE_F32, 0, 0},
    {"noise, raw frames: nothing sampled", "none", NCCLZ_POLICY_RAW, D_NOISE, NCCLZ_ALLREDUCE, NCCLZ_DTYPE_F32, 0, 0},
    {"noise broadcast -> plain", "none", NCCLZ_POLICY_AUTO, D_NOISE, NCCLZ_BROADCAST, NCCLZ_DTYPE_F32, 1, 0},
    {"gradients qsgd 8 broadcast -> compressed", "qsgd:bits=8,bucket=512", NCCLZ_POLICY_AUTO, D_GRAD, NCCLZ_BROADCAST,
     NCCLZ_DTYPE_F32, 0, 0},
    {"block-sparse lossless broadcast", "none", NCCLZ_POLICY_AUTO, D_SPARSE, NCCLZ_BROADCAST, NCCLZ_DTYPE_F32, -1, 0},
    {"noise alltoall -> plain", "none", NCCLZ_POLICY_AUTO, D_NOISE, NCCLZ_ALLTOALL, NCCLZ_DTYPE_F32, 1, 0},
    {"gradients qsgd 8 alltoall -> compressed", "qsgd:bits=8,bucket=512", NCCLZ_POLICY_AUTO, D_GRAD, NCCLZ_ALLTOALL,
     NCCLZ_DTYPE_F32, 0, 0},
};
#define NCASES (sizeof cases / sizeof cases[0])

static size_t count_of(const tcase *c) {
  size_t n = c->coll == NCCLZ_ALLREDUCE || c->coll == NCCLZ_BROADCAST ? COUNT : COUNT / NR;
  return c->scale ? n * (size_t)c->scale : n;
}

/* Rank q's input, rounded to the dtype, as floats (n_in elements). */
static float *inputs_of(const tcase *c, int q, size_t n_in) {
  float *x = malloc(n_in * sizeof *x);
  for (size_t i = 0; i < n_in; i++) x[i] = input(c->data, q, i);
  if (c->dt != NCCLZ_DTYPE_F32) {
    uint16_t *h = malloc(n_in * 2);
    ncclzFromFloat(x, n_in, c->dt, h);
    ncclzToFloat(h, c->dt, n_in, x);
    free(h);
  }
  return x;
}

/* The exact result element i on rank me, in double. */
static double expected(const tcase *c, float *const *all, int me, size_t i) {
  size_t count = count_of(c);
  double sum = 0;
  switch (c->coll) {
  case NCCLZ_ALLREDUCE:
    for (int q = 0; q < NR; q++) sum += all[q][i];
    return sum;
  case NCCLZ_REDUCESCATTER:
    for (int q = 0; q < NR; q++) sum += all[q][(size_t)me * count + i];
    return sum;
  case NCCLZ_ALLTOALL: return all[i / count][(size_t)me * count + i % count];
  default: return all[i / count][i % count];
  }
}

static void config_of(const tcase *c, const ncclzProfile *prof, ncclzConfig *cfg) {
  ncclzConfigDefault(cfg);
  ncclzQuantSpecParse(c->quant, &cfg->quant);
  cfg->policy = c->policy;
  cfg->profile = prof;
  cfg->ranks_per_node = GPN;
  cfg->algorithm = NCCLZ_ALGO_AUTO;
}

/* Whether v (n doubles) is the same on every rank: max of v and of -v meet. */
static int same_everywhere(ncclzTransport *t, const double *v, size_t n) {
  double *b = malloc(2 * n * sizeof *b);
  for (size_t i = 0; i < n; i++) {
    b[i] = v[i];
    b[n + i] = -v[i];
  }
  int ok = t->allreduce_max(t, b, 2 * n) == NCCLZ_OK;
  for (size_t i = 0; ok && i < n; i++) ok = b[i] == -b[n + i];
  free(b);
  return ok;
}

/* A failed check of one rank (counted per rank: the thread ranks run at once). */
#define RCHECK(bad, cond, ...)                                         \
  do {                                                                 \
    if (!(cond)) {                                                     \
      (*(bad))++;                                                      \
      fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond); \
      fprintf(stderr, __VA_ARGS__);                                    \
      fputc('\n', stderr);                                             \
    }                                                                  \
  } while (0)

/* The agreed CR a lossless f32 call must report: every rank's own sample, the least CR per coder
 * (Broadcast: the root's, rank 0, the only input). */
static void expected_cr(const ncclzConfig *cfg, const tcase *c, float *const *all, size_t n_in, double *cr) {
  double w[PAIR_SLOTS], m[PAIR_SLOTS] = {0};
  for (int q = 0; q < (c->coll == NCCLZ_BROADCAST ? 1 : NR); q++) {
    ncclz_exec_sample_wire(cfg, NULL, (const int32_t *)all[q], n_in, ncclzDtypeSize(c->dt), w);
    for (int k = 0; k < PAIR_SLOTS; k++) m[k] = fmax(m[k], w[k]);
  }
  for (int k = 0; k < NCCLZ_CODER_COUNT; k++) cr[k] = 1.0 / m[k];
}

/* The call ran its pair: no frames when plain, else frames of the pair's coder; a chain (Broadcast
 * on the 4 ranks) in the chunks the pair's coder cuts it into, which the cost model priced. */
static void check_ran(int *bad, const tcase *c, const ncclzConfig *cfg, int me, const ncclzExecStats *s) {
  if (s->policy == NCCLZ_POLICY_OFF) {
    RCHECK(bad, s->frames == 0 && s->frame_bytes == s->raw_bytes, "%s: plain pair sent %llu frames", c->name,
           (unsigned long long)s->frames);
    return;
  }
  RCHECK(bad, s->frames + s->chunks_received > 0, "%s: a framed pair moved no frames", c->name);
  ncclzCoder only = s->policy == NCCLZ_POLICY_FIXEDLEN ? NCCLZ_CODER_FIXEDLEN
                    : s->policy == NCCLZ_POLICY_HUFFMAN ? NCCLZ_CODER_HUFFMAN
                    : s->policy == NCCLZ_POLICY_RAW     ? NCCLZ_CODER_RAW
                                                        : NCCLZ_CODER_COUNT;
  if (only != NCCLZ_CODER_COUNT)
    RCHECK(bad, s->coder_mix[only] == s->frames, "%s: %llu of %llu frames %s", c->name,
           (unsigned long long)s->coder_mix[only], (unsigned long long)s->frames, ncclzPolicyName(s->policy));
  ncclzConfig pair = *cfg;
  pair.policy = s->policy;
  uint32_t k = ncclz_exec_chain_chunks(&pair, count_of(c), NR, ncclzDtypeSize(c->dt));
  if (c->coll == NCCLZ_BROADCAST && me != 0)
    RCHECK(bad, s->chunks_received == k, "%s rank %d: %llu frames received, the pair's chain cuts %u", c->name, me,
           (unsigned long long)s->chunks_received, k);
}

static void check_pair(int *bad, ncclzTransport *t, const tcase *c, const ncclzConfig *cfg, const ncclzExecStats *s,
                       float *const *all, size_t n_in) {
  double key[3 + NCCLZ_CODER_COUNT] = {s->algorithm, s->policy, s->pair_auto};
  memcpy(key + 3, s->pair_cr, sizeof s->pair_cr);
  RCHECK(bad, same_everywhere(t, key, 3 + NCCLZ_CODER_COUNT), "%s: ranks ran different pairs or CR", c->name);
  RCHECK(bad, s->pair_auto == 1, "%s: the pair is not the cost model's", c->name);
  ncclzChoice ch;
  const double *cr = s->pair_cr[NCCLZ_CODER_RAW] > 0 ? s->pair_cr : NULL; /* raw/off: nothing sampled */
  ncclzStatus st = ncclz_exec_choose(cfg, c->coll, count_of(c), t->nranks, ncclzDtypeSize(c->dt), cr, &ch);
  /* raw frames: the model weighs plain only (nothing compresses) and the call sends RAW frames */
  ncclzCoderPolicy pol = c->policy == NCCLZ_POLICY_RAW ? NCCLZ_POLICY_RAW : ncclz_exec_choice_policy(ch.coder);
  RCHECK(bad, st == NCCLZ_OK && ch.algorithm == s->algorithm && pol == s->policy,
         "%s: ran (%s, %s), the model picks (%s, %s) for the agreed CR", c->name, ncclzAlgorithmName(s->algorithm),
         ncclzPolicyName(s->policy), ncclzAlgorithmName(ch.algorithm), ncclzChoiceCoderName(ch.coder));
  RCHECK(bad, (c->policy == NCCLZ_POLICY_RAW) == (cr == NULL), "%s: CR sampled %s", c->name,
         cr ? "under raw frames" : "under a coder policy");
  if (cr && !strcmp(c->quant, "none") && c->dt == NCCLZ_DTYPE_F32) {
    double want[NCCLZ_CODER_COUNT];
    expected_cr(cfg, c, all, n_in, want);
    RCHECK(bad, !memcmp(want, s->pair_cr, sizeof want), "%s: agreed CR huffman %g, least of the ranks' %g", c->name,
           s->pair_cr[NCCLZ_CODER_HUFFMAN], want[NCCLZ_CODER_HUFFMAN]);
  }
  if (c->want_plain >= 0)
    RCHECK(bad, (s->policy == NCCLZ_POLICY_OFF) == c->want_plain, "%s: ran %s (CR fixedlen %.2f, huffman %.2f)",
           c->name, ncclzPolicyName(s->policy), s->pair_cr[NCCLZ_CODER_FIXEDLEN], s->pair_cr[NCCLZ_CODER_HUFFMAN]);
}

/* Checks this rank's output: lossless bit-exact (sums of these inputs are exact in float), else
 * within the bound the call reports. */
static void check_output(int *bad, const tcase *c, const void *out, float *const *all, int me, double bound) {
  size_t no = ncclzCollOutCount(c->coll, count_of(c), NR), wrong = 0;
  int lossless = !strcmp(c->quant, "none");
  float *y = malloc(no * sizeof *y);
  ncclzToFloat(out, c->dt, no, y);
  double maxerr = 0;
  for (size_t i = 0; i < no; i++) {
    double e = expected(c, all, me, i), err = fabs((double)y[i] - e);
    maxerr = fmax(maxerr, err);
    wrong += lossless ? (float)e != y[i] : !(err <= bound);
  }
  RCHECK(bad, wrong == 0, "%s rank %d: %zu of %zu wrong (max error %g, bound %g)", c->name, me, wrong, no, maxerr,
         bound);
  free(y);
}

/* One rank's cases; returns its failed checks. At least one case must run another algorithm than
 * the schedule the call starts from (the model's at CR 1), so the rebuild after the choice runs. */
static int rank_body(ncclzTransport *t, const ncclzProfile *prof) {
  int bad = 0, me = t->rank, rebuilt = 0;
  for (size_t k = 0; k < NCASES; k++) {
    const tcase *c = &cases[k];
    ncclzConfig cfg;
    config_of(c, prof, &cfg);
    size_t count = count_of(c), n_in = ncclzCollInCount(c->coll, count, NR);
    size_t no = ncclzCollOutCount(c->coll, count, NR), ds = ncclzDtypeSize(c->dt);
    float *all[NR];
    for (int q = 0; q < NR; q++) all[q] = inputs_of(c, q, n_in);
    void *in = malloc(n_in * ds), *out = calloc(no, ds);
    ncclzFromFloat(all[me], n_in, c->dt, in);
    ncclzHostComm *comm = NULL;
    ncclzExecStats s;
    ncclzStatus st = ncclzHostCommInit(&comm, t, &cfg);
    if (!st) st = ncclzHostRun(comm, c->coll, in, out, count, c->dt, 0, &s);
    RCHECK(&bad, st == NCCLZ_OK, "%s rank %d: %s", c->name, me, ncclzLastError());
    if (!st) {
      check_pair(&bad, t, c, &cfg, &s, all, n_in);
      check_ran(&bad, c, &cfg, me, &s);
      check_output(&bad, c, out, all, me, s.error_bound);
      ncclzScheduleSpec sp;
      ncclz_exec_spec(&cfg, c->coll, count, NR, 0, ds, &sp);
      rebuilt += sp.algo != s.algorithm;
      if (me == 0)
        printf("%-40s %-13s %s/%-8s CR fixedlen %5.2f huffman %5.2f, %llu frames, %.2fx on the wire\n", c->name,
               ncclzCollectiveName(c->coll), ncclzAlgorithmName(s.algorithm), ncclzPolicyName(s.policy),
               s.pair_cr[NCCLZ_CODER_FIXEDLEN], s.pair_cr[NCCLZ_CODER_HUFFMAN], (unsigned long long)s.frames,
               s.wire_bytes ? (double)s.raw_bytes / (double)s.wire_bytes : 0.0);
    }
    ncclzHostCommDestroy(comm);
    for (int q = 0; q < NR; q++) free(all[q]);
    free(in);
    free(out);
  }
  RCHECK(&bad, rebuilt > 0, "no case ran another algorithm than its provisional schedule");
  return bad;
}

/* A chain's chunks follow the pair's coder: on 1024 nodes of 8 (the shipped H200 profile) the
 * counts REA's policy (the provisional schedule of an auto call) and FIXEDLEN's cut differ, and the
 * pair rebuilds exactly when they do (or on another algorithm). */
static void test_chain_recut(void) {
  ncclzProfile h200;
  ncclzStatus st = ncclzProfileLoad(NCCLZ_TEST_DATA "/../../calibrate/profiles/h200-x2.json", &h200);
  CHECK(st == NCCLZ_OK, "profile: %s", ncclzLastError());
  if (st) return;
  ncclzConfig cfg;
  ncclzConfigDefault(&cfg);
  cfg.profile = &h200;
  cfg.ranks_per_node = 8;
  cfg.policy = NCCLZ_POLICY_AUTO;
  const int n = 8192;
  const size_t count = (size_t)1 << 28;
  ncclzScheduleSpec sp;
  ncclz_exec_spec(&cfg, NCCLZ_BROADCAST, count, n, 0, 4, &sp);
  ncclzSchedule s = {0};
  s.algo = sp.algo;
  s.nchunks = sp.nchunks * (sp.nchannels ? sp.nchannels : 1);
  ncclzConfig fl = cfg;
  fl.policy = NCCLZ_POLICY_FIXEDLEN;
  uint32_t k_rea = ncclz_exec_chain_chunks(&cfg, count, n, 4), k_fl = ncclz_exec_chain_chunks(&fl, count, n, 4);
  CHECK(k_rea != k_fl, "REA's and FIXEDLEN's chains both cut %u chunks", k_rea);
  CHECK(ncclz_exec_pair_rebuilds(&cfg, NCCLZ_ALGO_RING, NCCLZ_POLICY_FIXEDLEN, NCCLZ_BROADCAST, count, n, 0, 4, &s),
        "FIXEDLEN's pair keeps REA's %u chunks (its own: %u)", k_rea, k_fl);
  CHECK(!ncclz_exec_pair_rebuilds(&cfg, NCCLZ_ALGO_RING, NCCLZ_POLICY_AUTO, NCCLZ_BROADCAST, count, n, 0, 4, &s),
        "REA's pair rebuilds its own chain");
  printf("chain of 8192 ranks, 1 GiB: REA's policy cuts %u chunks, FIXEDLEN's %u: the pair rebuilds\n", k_rea, k_fl);
}

typedef struct {
  ncclzThreadGroup *g;
  int rank, bad;
  const ncclzProfile *prof;
} job;

static void *thread_main(void *arg) {
  job *j = arg;
  j->bad = rank_body(ncclzThreadGroupTransport(j->g, j->rank), j->prof);
  return NULL;
}

static void run_threads(const ncclzProfile *prof) {
  ncclzThreadGroup *g = ncclzThreadGroupCreate(NR);
  pthread_t th[NR];
  job jobs[NR];
  for (int r = 0; r < NR; r++) {
    jobs[r] = (job){g, r, 0, prof};
    pthread_create(&th[r], NULL, thread_main, &jobs[r]);
  }
  for (int r = 0; r < NR; r++) pthread_join(th[r], NULL);
  for (int r = 0; r < NR; r++) CHECK(jobs[r].bad == 0, "thread rank %d: %d failed checks", r, jobs[r].bad);
  ncclzThreadGroupDestroy(g);
}

static int run_mpi(int *argc, char ***argv, const ncclzProfile *prof) {
  ncclzMpiInit(argc, argv);
  ncclzTransport *t = ncclzMpiTransportCreate();
  int ok = t->nranks == NR;
  CHECK(ok, "test_exec_auto under mpirun takes %d ranks, not %d", NR, t->nranks);
  double bad = ok ? rank_body(t, prof) : 1;
  t->allreduce_max(t, &bad, 1);
  CHECK(bad == 0, "MPI rank %d: failed checks on some rank", t->rank);
  t->destroy(t);
  ncclzMpiFinalize();
  return 0;
}

int main(int argc, char **argv) {
  ncclzProfile prof;
  ncclzStatus st = ncclzProfileLoad(NCCLZ_TEST_DATA "/profile_synthetic.json", &prof);
  CHECK(st == NCCLZ_OK, "profile: %s", ncclzLastError());
  for (int f = 0; f < 2; f++) {
    char name[64];
    size_t len = 0;
    snprintf(name, sizeof name, "resnet18_rank%d_64k.f32", f);
    grads[f] = tu_read_file(name, &len);
    CHECK(grads[f] && len == COUNT * 4, "%s: %zu bytes", name, len);
    if (!grads[f]) return tu_finish("test_exec_auto");
  }
  test_chain_recut();
  int under_mpi = getenv("OMPI_COMM_WORLD_SIZE") || getenv("PMI_SIZE");
  if (!st && under_mpi && ncclzMpiAvailable())
    run_mpi(&argc, &argv, &prof);
  else if (!st)
    run_threads(&prof);
  free(grads[0]);
  free(grads[1]);
  return tu_finish("test_exec_auto");
}
