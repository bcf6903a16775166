/* Executor over the in-process thread transport: every collective x every coder policy x
 * quantizers x odd counts x 1..5 ranks. Lossless modes are bit-exact against the exact sum,
 * quantized modes stay within the derived bound on every element, results are bitwise identical
 * on all ranks, and the wire carries exactly the frames. Plus bad input (mismatched configs and
 * calls, NaN), a final error bound, real data, and the size protocol's per-chunk cost. */
#include "test_exec_cases.h"
#include "../exec/call_rules.h"

#include <pthread.h>
#include <stdio.h>

#define MAXR 9

typedef struct {
  ncclzThreadGroup *g;
  int rank;
  ncclzConfig cfg;
  ncclzCollective coll;
  size_t count;
  ncclzDtype dt;
  int root, reps;
  const void *in;
  void *out;
  ncclzStatus init_st, run_st;
  ncclzExecStats stats;
  char err[256];
} job;

static void *rank_main(void *arg) {
  job *j = arg;
  ncclzHostComm *c = NULL;
  j->init_st = ncclzHostCommInit(&c, ncclzThreadGroupTransport(j->g, j->rank), &j->cfg);
  j->run_st = j->init_st;
  for (int i = 0; !j->init_st && i < (j->reps ? j->reps : 1); i++)
    j->run_st = ncclzHostRun(c, j->coll, j->in, j->out, j->count, j->dt, j->root, &j->stats);
  snprintf(j->err, sizeof j->err, "%s", ncclzLastError());
  ncclzHostCommDestroy(c);
  return NULL;
}

/* Runs the jobs (one per rank) on a fresh thread group. */
static void run_jobs(job *jobs, int n) {
  ncclzThreadGroup *g = ncclzThreadGroupCreate(n);
  pthread_t th[MAXR];
  for (int r = 0; r < n; r++) {
    jobs[r].g = g;
    jobs[r].rank = r;
    pthread_create(&th[r], NULL, rank_main, &jobs[r]);
  }
  for (int r = 0; r < n; r++) pthread_join(th[r], NULL);
  ncclzThreadGroupDestroy(g);
}

static size_t wrong_total, runs_total;

/* One job a rank for the call, with its test input and a zeroed output. */
static void make_jobs(job *jobs, const ncclzConfig *cfg, ncclzCollective c, int n, size_t count, ncclzDtype dt,
                      int root, int lossless) {
  size_t no = xc_out_count(c, count, n), ds = ncclzDtypeSize(dt);
  for (int r = 0; r < n; r++) {
    memset(&jobs[r], 0, sizeof jobs[r]);
    jobs[r].cfg = *cfg;
    jobs[r].coll = c;
    jobs[r].count = count;
    jobs[r].dt = dt;
    jobs[r].root = root;
    jobs[r].in = xc_make_input(lossless, dt, c, count, n, r);
    jobs[r].out = calloc(no + 1, ds);
  }
}

static void run_case(const ncclzConfig *cfg, ncclzCollective c, int n, size_t count, ncclzDtype dt, int root) {
  job jobs[MAXR];
  int lossless = cfg->quant.kind == NCCLZ_QUANT_NONE;
  size_t no = xc_out_count(c, count, n), ds = ncclzDtypeSize(dt);
  make_jobs(jobs, cfg, c, n, count, dt, root, lossless);
  run_jobs(jobs, n);
  runs_total++;
  for (int r = 0; r < n; r++) {
    CHECK(jobs[r].run_st == NCCLZ_OK, "%s n=%d count=%zu %s/%s rank %d: %s", ncclzCollectiveName(c), n, count,
          ncclzPolicyName(cfg->policy), ncclzDtypeName(dt), r, jobs[r].err);
    if (jobs[r].run_st) continue;
    size_t w = xc_check(jobs[r].out, lossless, dt, c, count, n, r, root, jobs[r].stats.error_bound, NULL);
    wrong_total += w;
    CHECK(w == 0, "%s n=%d count=%zu policy %s quant %d dtype %s rank %d: %zu wrong (bound %g)",
          ncclzCollectiveName(c), n, count, ncclzPolicyName(cfg->policy), (int)cfg->quant.kind, ncclzDtypeName(dt), r,
          w, jobs[r].stats.error_bound);
    /* Bitwise identical on all ranks wherever the outputs are the same array. */
    if (r > 0 && (c == NCCLZ_ALLREDUCE || c == NCCLZ_ALLGATHER || c == NCCLZ_BROADCAST))
      CHECK(memcmp(jobs[r].out, jobs[0].out, no * ds) == 0, "%s n=%d: rank %d differs from rank 0",
            ncclzCollectiveName(c), n, r);
    const ncclzExecStats *s = &jobs[r].stats;
    CHECK(s->wire_bytes <= s->frame_bytes * 1.01 + 0.5, "wire %llu > 1.01 x frames %llu",
          (unsigned long long)s->wire_bytes, (unsigned long long)s->frame_bytes);
  }
  for (int r = 0; r < n; r++) {
    free((void *)jobs[r].in);
    free(jobs[r].out);
  }
}

static void test_matrix(const ncclzProfile *prof) {
  const size_t counts[] = {0, 1, 3, 7, 1001};
  for (size_t m = 0; m < XC_NMODES; m++) {
    ncclzConfig cfg;
    xc_config(&cfg, &xc_modes[m], prof);
    for (int c = 0; c < NCCLZ_COLL_COUNT; c++)
      for (int n = 1; n <= 5; n++)
        for (size_t k = 0; k < sizeof counts / sizeof counts[0]; k++)
          run_case(&cfg, (ncclzCollective)c, n, counts[k], NCCLZ_DTYPE_F32, n > 2 ? 2 : 0);
  }
  /* bf16 and f16, lossless and quantized. */
  const ncclzDtype dts[] = {NCCLZ_DTYPE_BF16, NCCLZ_DTYPE_F16};
  const size_t pick[] = {1, 3, 8, 9};
  for (size_t d = 0; d < 2; d++)
    for (size_t p = 0; p < 4; p++) {
      ncclzConfig cfg;
      xc_config(&cfg, &xc_modes[pick[p]], prof);
      for (int c = 0; c < NCCLZ_COLL_COUNT; c++) run_case(&cfg, (ncclzCollective)c, 3, 777, dts[d], 1);
    }
  printf("matrix: %zu collectives run, %zu wrong elements\n", runs_total, wrong_total);
}

/* Every algorithm on every collective it serves: 2..9 ranks in nodes of 1, 2, 3 or all of them,
 * counts 0, 1, fewer than the ranks, a prime, many; lossless bit-exact, quantized within the bound,
 * identical on all ranks (run_case). A case an algorithm cannot run is refused with one line. */
static void test_algorithms(const ncclzProfile *prof) {
  const size_t counts[] = {0, 1, 5, 13, 1001};
  const size_t modes[] = {0, 3, 6, 8, 11}; /* off, huffman, eb fixedlen, eb auto, qsgd auto */
  size_t runs0 = runs_total, wrong0 = wrong_total;
  for (size_t m = 0; m < sizeof modes / sizeof modes[0]; m++)
    for (int a = NCCLZ_ALGO_RING; a < NCCLZ_ALGO_COUNT; a++)
      for (int n = 2; n <= MAXR; n++)
        for (int g = 1; g <= n; g++) {
          if (n % g || (g > 3 && g != n)) continue;
          for (int c = 0; c < 3; c++) {
            ncclzCollective coll = c == 0 ? NCCLZ_ALLREDUCE : c == 1 ? NCCLZ_REDUCESCATTER : NCCLZ_ALLGATHER;
            ncclzConfig cfg;
            xc_config(&cfg, &xc_modes[modes[m]], prof);
            cfg.algorithm = (ncclzAlgorithm)a;
            cfg.ranks_per_node = g;
            cfg.channels = a == NCCLZ_ALGO_RING ? 2 : 0;
            ncclzScheduleSpec sp = {coll, cfg.algorithm, n, g, 0, 1, cfg.channels, NCCLZ_ALGO_RHD};
            char why[160];
            if (ncclzScheduleCheck(&sp, why, sizeof why)) continue;
            for (size_t k = 0; k < sizeof counts / sizeof counts[0]; k++) run_case(&cfg, coll, n, counts[k], NCCLZ_DTYPE_F32, 0);
          }
        }
  /* auto with nodes: NCCL's tuner picks ring or tree per call (ncclzTunerChoose), alike on all ranks */
  for (int n = 4; n <= 8; n += 4)
    for (size_t m = 0; m < 2; m++) {
      ncclzConfig cfg;
      xc_config(&cfg, &xc_modes[modes[m * 3]], prof);
      cfg.ranks_per_node = 2;
      const size_t sizes[] = {1, 1001, 100000};
      for (size_t k = 0; k < 3; k++) run_case(&cfg, NCCLZ_ALLREDUCE, n, sizes[k], NCCLZ_DTYPE_F32, 0);
      CHECK(ncclzTunerChoose(NCCLZ_ALLREDUCE, n / 2, 2, prof->transport[cfg.hint].beta_gbps, 4) == NCCLZ_ALGO_TREE &&
                ncclzTunerChoose(NCCLZ_ALLREDUCE, n / 2, 2, prof->transport[cfg.hint].beta_gbps, 1u << 30) ==
                    NCCLZ_ALGO_RING,
            "tuner on %d nodes: tree for 4 bytes, ring for 1 GiB", n / 2);
    }
  printf("algorithms: %zu collectives run, %zu wrong elements\n", runs_total - runs0, wrong_total - wrong0);
  /* refusals: the config names what can run the case */
  job jobs[4];
  memset(jobs, 0, sizeof jobs);
  float in[8] = {0}, out[8];
  for (int r = 0; r < 4; r++) {
    xc_config(&jobs[r].cfg, &xc_modes[0], prof);
    jobs[r].cfg.algorithm = NCCLZ_ALGO_TREE;
    jobs[r].cfg.ranks_per_node = 2;
    jobs[r].coll = NCCLZ_REDUCESCATTER;
    jobs[r].count = 2;
    jobs[r].in = in;
    jobs[r].out = out;
  }
  run_jobs(jobs, 4);
  CHECK(jobs[0].run_st == NCCLZ_ERR_ARG &&
            !strcmp(jobs[0].err, "config algorithm: tree runs allreduce only; reducescatter runs with ring, rhd, hier"),
        "tree for reducescatter: %d '%s'", (int)jobs[0].run_st, jobs[0].err);
  for (int r = 0; r < 4; r++) {
    jobs[r].cfg.algorithm = NCCLZ_ALGO_HIER;
    jobs[r].cfg.ranks_per_node = 1;
    jobs[r].coll = NCCLZ_ALLREDUCE;
  }
  run_jobs(jobs, 4);
  CHECK(jobs[1].run_st == NCCLZ_ERR_ARG && strstr(jobs[1].err, "hier needs several nodes of several GPUs (here 4 nodes of 1 GPU)"),
        "hier on one GPU per node: '%s'", jobs[1].err);
}

/* Rank 0's config differs: every rank gets an error from init, and nothing hangs. */
static void test_mismatch(const ncclzProfile *prof) {
  job jobs[4];
  for (int r = 0; r < 4; r++) {
    memset(&jobs[r], 0, sizeof jobs[r]);
    xc_config(&jobs[r].cfg, &xc_modes[2], prof);
    jobs[r].count = 10;
  }
  jobs[0].cfg.policy = NCCLZ_POLICY_HUFFMAN;
  float in[40] = {0}, out[40];
  for (int r = 0; r < 4; r++) {
    jobs[r].in = in;
    jobs[r].out = out;
  }
  run_jobs(jobs, 4);
  for (int r = 0; r < 4; r++)
    CHECK(jobs[r].init_st == NCCLZ_ERR_ARG, "mismatched config: rank %d got %d (%s)", r, jobs[r].init_st, jobs[r].err);
  /* Invalid on one rank only (auto without a profile): still an error everywhere. */
  for (int r = 0; r < 4; r++) xc_config(&jobs[r].cfg, &xc_modes[4], prof);
  jobs[3].cfg.profile = NULL;
  run_jobs(jobs, 4);
  for (int r = 0; r < 4; r++) CHECK(jobs[r].init_st == NCCLZ_ERR_ARG, "invalid config on rank 3: rank %d", r);
  /* comm_lanes: 1 to 4 (the NCCL backend's lanes and banks); 0 and 5 are errors everywhere */
  static const uint32_t lanes[] = {0, 5, 4};
  for (size_t k = 0; k < 3; k++) {
    for (int r = 0; r < 4; r++) {
      xc_config(&jobs[r].cfg, &xc_modes[2], prof);
      jobs[r].cfg.comm_lanes = lanes[k];
    }
    run_jobs(jobs, 4);
    for (int r = 0; r < 4; r++)
      CHECK(jobs[r].init_st == (lanes[k] == 4 ? NCCLZ_OK : NCCLZ_ERR_ARG), "comm_lanes %u: rank %d got %d (%s)",
            lanes[k], r, jobs[r].init_st, jobs[r].err);
  }
}

/* Same config, different calls (count) and NaN under quantization: errors on every rank. */
static void test_bad_calls(const ncclzProfile *prof) {
  for (size_t m = 0; m < 2; m++) {
    job jobs[3];
    float in[64], out[64 * 3];
    for (int i = 0; i < 64; i++) in[i] = (float)i;
    for (int r = 0; r < 3; r++) {
      memset(&jobs[r], 0, sizeof jobs[r]);
      xc_config(&jobs[r].cfg, &xc_modes[m ? 6 : 1], prof);
      jobs[r].coll = NCCLZ_ALLREDUCE;
      jobs[r].count = r == 1 ? 33 : 32;
      jobs[r].in = in;
      jobs[r].out = out;
    }
    run_jobs(jobs, 3);
    for (int r = 0; r < 3; r++)
      CHECK(jobs[r].run_st == NCCLZ_ERR_ARG, "mismatched count (mode %zu): rank %d got %d (%s)", m, r, jobs[r].run_st,
            jobs[r].err);
  }
  job jobs[3];
  float good[50], bad[50], out[3][50];
  for (int i = 0; i < 50; i++) good[i] = bad[i] = (float)i * 0.5f;
  bad[17] = NAN;
  for (size_t m = 5; m < XC_NMODES; m += 4) {
    for (int r = 0; r < 3; r++) {
      memset(&jobs[r], 0, sizeof jobs[r]);
      xc_config(&jobs[r].cfg, &xc_modes[m], prof);
      jobs[r].coll = NCCLZ_REDUCESCATTER;
      jobs[r].count = 16;
      jobs[r].in = r == 2 ? bad : good;
      jobs[r].out = out[r];
    }
    run_jobs(jobs, 3);
    for (int r = 0; r < 3; r++)
      CHECK(jobs[r].run_st == NCCLZ_ERR_NONFINITE, "NaN (%s): rank %d got %d (%s)", xc_modes[m].quant, r,
            jobs[r].run_st, jobs[r].err);
  }
}

/* A final error bound E over 4 ranks holds on every element, for abs and rel specs. */
static void test_final_bound(const ncclzProfile *prof) {
  const double E[] = {1e-3, 0.05};
  for (int e = 0; e < 2; e++) {
    ncclzConfig cfg;
    xc_config(&cfg, &xc_modes[8], prof);
    cfg.final_error_bound = E[e];
    job jobs[4];
    for (int r = 0; r < 4; r++) {
      memset(&jobs[r], 0, sizeof jobs[r]);
      jobs[r].cfg = cfg;
      jobs[r].coll = NCCLZ_ALLREDUCE;
      jobs[r].count = 4099;
      jobs[r].dt = NCCLZ_DTYPE_F32;
      jobs[r].in = xc_make_input(0, NCCLZ_DTYPE_F32, NCCLZ_ALLREDUCE, 4099, 4, r);
      jobs[r].out = calloc(4099, 4);
    }
    run_jobs(jobs, 4);
    for (int r = 0; r < 4; r++) {
      double maxerr = 0;
      size_t w = xc_check(jobs[r].out, 0, NCCLZ_DTYPE_F32, NCCLZ_ALLREDUCE, 4099, 4, r, 0, E[e], &maxerr);
      CHECK(jobs[r].run_st == 0 && w == 0 && jobs[r].stats.error_bound == E[e],
            "final bound %g: rank %d st %d, %zu wrong, max err %g", E[e], r, jobs[r].run_st, w, maxerr);
      if (r == 0)
        printf("final bound %g over 4 ranks: per-rank half-step %g, max error %g\n", E[e], jobs[r].stats.quant_bound,
               maxerr);
      free((void *)jobs[r].in);
      free(jobs[r].out);
    }
  }
}

/* Real data: two ResNet-18 gradient ranks and CESM TREFHT members 57/59, allreduce on 2 ranks. */
static void real_case(const char *quant, ncclzCoderPolicy pol, const char *f0, const char *f1, const ncclzProfile *prof,
                      int ndims, uint32_t d0, uint32_t d1, uint32_t d2) {
  size_t l0, l1;
  float *a = tu_read_file(f0, &l0), *b = tu_read_file(f1, &l1);
  CHECK(a && b && l0 == l1, "real data %s %s", f0, f1);
  if (!a || !b || l0 != l1) {
    free(a);
    free(b);
    return;
  }
  size_t n = l0 / 4;
  job jobs[2];
  float *outs[2] = {malloc(l0), malloc(l0)};
  for (int r = 0; r < 2; r++) {
    memset(&jobs[r], 0, sizeof jobs[r]);
    ncclzConfigDefault(&jobs[r].cfg);
    ncclzQuantSpecParse(quant, &jobs[r].cfg.quant);
    jobs[r].cfg.policy = pol;
    jobs[r].cfg.profile = prof;
    jobs[r].cfg.chunk_bytes = 64 << 10;
    jobs[r].cfg.ndims = ndims;
    jobs[r].cfg.dims[0] = d0;
    jobs[r].cfg.dims[1] = d1;
    jobs[r].cfg.dims[2] = d2;
    jobs[r].coll = NCCLZ_ALLREDUCE;
    jobs[r].count = n;
    jobs[r].in = r ? b : a;
    jobs[r].out = outs[r];
  }
  run_jobs(jobs, 2);
  double maxerr = 0;
  size_t wrong = 0;
  for (size_t i = 0; i < n; i++) {
    double e = (double)a[i] + (double)b[i], err = fabs((double)outs[0][i] - e);
    if (err > maxerr) maxerr = err;
    if (jobs[0].cfg.quant.kind == NCCLZ_QUANT_NONE)
      wrong += outs[0][i] != a[i] + b[i];
    else
      wrong += !(err <= jobs[0].stats.error_bound);
  }
  const ncclzExecStats *s = &jobs[0].stats;
  CHECK(jobs[0].run_st == 0 && jobs[1].run_st == 0 && wrong == 0 && memcmp(outs[0], outs[1], l0) == 0,
        "real %s %s %s: st %d/%d (%s), %zu wrong", f0, quant, ncclzPolicyName(pol), jobs[0].run_st, jobs[1].run_st,
        jobs[0].err, wrong);
  printf("real %-28s %-26s %-8s cr %6.2f  frames %llu (raw %llu fixedlen %llu huffman %llu)  max err %.3g bound %.3g\n",
         f0, quant, ncclzPolicyName(pol), s->frame_bytes ? (double)s->raw_bytes / (double)s->frame_bytes : 0.0,
         (unsigned long long)s->frames, (unsigned long long)s->coder_mix[0], (unsigned long long)s->coder_mix[1],
         (unsigned long long)s->coder_mix[2], maxerr, s->error_bound);
  free(a);
  free(b);
  free(outs[0]);
  free(outs[1]);
}

static void test_real(const ncclzProfile *prof) {
  const char *r0 = "resnet18_rank0_64k.f32", *r1 = "resnet18_rank1_64k.f32";
  const char *t0 = "trefht_member57_8x64x128.f32", *t1 = "trefht_member59_8x64x128.f32";
  real_case("none", NCCLZ_POLICY_HUFFMAN, r0, r1, prof, 0, 0, 0, 0);
  real_case("none", NCCLZ_POLICY_AUTO, t0, t1, prof, 0, 0, 0, 0);
  real_case("qsgd:bits=8,bucket=512", NCCLZ_POLICY_FIXEDLEN, r0, r1, prof, 0, 0, 0, 0);
  real_case("qsgd:bits=8,bucket=512", NCCLZ_POLICY_HUFFMAN, r0, r1, prof, 0, 0, 0, 0);
  real_case("qsgd:bits=8,bucket=512", NCCLZ_POLICY_AUTO, r0, r1, prof, 0, 0, 0, 0);
  real_case("eb:rel=1e-4", NCCLZ_POLICY_AUTO, t0, t1, prof, 0, 0, 0, 0);
  real_case("eb:rel=1e-4", NCCLZ_POLICY_HUFFMAN, t0, t1, prof, 0, 0, 0, 0);
  real_case("eb:rel=1e-4,lorenzo=3d", NCCLZ_POLICY_HUFFMAN, t0, t1, prof, 3, 8, 64, 128);
  real_case("eb:rel=1e-4,lorenzo=3d", NCCLZ_POLICY_AUTO, t0, t1, prof, 3, 8, 64, 128);
}

/* The size protocol's cost: per received chunk, the time blocked on the header and then on the
 * payload the header announced, against the same run without frames (policy off, no header). */
static void test_protocol_cost(const ncclzProfile *prof) {
  const int n = 4, reps = 5;
  const size_t count = 1 << 20;
  for (int off = 0; off < 2; off++) {
    job jobs[4];
    for (int r = 0; r < n; r++) {
      memset(&jobs[r], 0, sizeof jobs[r]);
      xc_config(&jobs[r].cfg, &xc_modes[off ? 0 : 1], prof);
      jobs[r].cfg.chunk_bytes = 64 << 10;
      jobs[r].cfg.max_chunks = 64;
      jobs[r].coll = NCCLZ_ALLREDUCE;
      jobs[r].count = count;
      jobs[r].reps = reps;
      jobs[r].in = xc_make_input(1, NCCLZ_DTYPE_F32, NCCLZ_ALLREDUCE, count, n, r);
      jobs[r].out = calloc(count, 4);
    }
    run_jobs(jobs, n);
    const ncclzExecStats *s = &jobs[0].stats;
    double per = s->chunks_received ? 1e6 / (double)s->chunks_received : 0;
    CHECK(jobs[0].run_st == 0, "protocol cost run");
    printf("size protocol (%s, 4 threads, 4 MiB allreduce, 64 KiB chunks): total %.2f ms, %llu chunks received, "
           "header wait %.2f us/chunk, payload-after-header wait %.2f us/chunk, wire/frames %.4f\n",
           off ? "off: plain bytes" : "raw frames + control lane", s->t_total * 1e3,
           (unsigned long long)s->chunks_received, s->t_wait_ctrl * per, s->t_wait_data * per,
           s->frame_bytes ? (double)s->wire_bytes / (double)s->frame_bytes : 0.0);
    for (int r = 0; r < n; r++) {
      free((void *)jobs[r].in);
      free(jobs[r].out);
    }
  }
}

/* A Broadcast of `count` floats from rank `root` on n ranks in nodes of 3; outs[r] gets rank r's
 * output (the caller frees), st[r] its stats. */
static void run_bcast(const ncclzConfig *cfg, int n, size_t count, int root, int lossless, void **outs,
                      ncclzExecStats *st) {
  job jobs[MAXR];
  make_jobs(jobs, cfg, NCCLZ_BROADCAST, n, count, NCCLZ_DTYPE_F32, root, lossless);
  run_jobs(jobs, n);
  for (int r = 0; r < n; r++) {
    outs[r] = jobs[r].out;
    CHECK(jobs[r].run_st == NCCLZ_OK, "broadcast %s rank %d: %s", ncclzPolicyName(cfg->policy), r, jobs[r].err);
    st[r] = jobs[r].stats;
    free((void *)jobs[r].in);
  }
}

/* Broadcast's chain takes the cost model's chunk count (ncclz_exec_chain_chunks), past the 64 the
 * other schedules stop at (chunks of at most 2 KiB here: 512 or more): every rank receives that
 * many frames, the result is bit-exact (lossless) or within the bound, identical on all ranks, and
 * identical to the same call in one chunk (the quantizers work on the whole array before it is
 * cut). */
static void test_broadcast_chunks(const ncclzProfile *prof) {
  const int n = 9, root = 4;
  const size_t count = 1 << 18; /* 1 MiB */
  const size_t modes[] = {0, 1, 2, 3, 4, 6, 7, 8, 9};
  for (size_t m = 0; m < sizeof modes / sizeof modes[0]; m++) {
    const xc_mode *md = &xc_modes[modes[m]];
    int lossless = !strcmp(md->quant, "none");
    ncclzConfig cfg;
    xc_config(&cfg, md, prof);
    cfg.chunk_bytes = 2u << 10;
    cfg.max_chunks = 0;
    cfg.ranks_per_node = 3;
    cfg.algorithm = NCCLZ_ALGO_RING; /* the config's policy, REA's own for auto (the auto pair: test_exec_auto) */
    uint32_t k = ncclz_exec_chain_chunks(&cfg, count, n, 4);
    CHECK(k >= count * 4 / cfg.chunk_bytes && k <= NCCLZ_CHAIN_MAX_CHUNKS, "%s/%s: %u chunks on a chain of 9 ranks", md->quant,
          ncclzPolicyName(md->policy), k);
    void *many[MAXR], *one[MAXR];
    ncclzExecStats sm[MAXR], so[MAXR];
    run_bcast(&cfg, n, count, root, lossless, many, sm);
    cfg.max_chunks = 1;
    run_bcast(&cfg, n, count, root, lossless, one, so);
    for (int r = 0; r < n; r++) {
      size_t w = xc_check(many[r], lossless, NCCLZ_DTYPE_F32, NCCLZ_BROADCAST, count, n, r, root, sm[r].error_bound, NULL);
      CHECK(w == 0, "broadcast %s/%s in %u chunks rank %d: %zu wrong", md->quant, ncclzPolicyName(md->policy), k, r, w);
      CHECK(!memcmp(many[r], many[0], count * 4), "broadcast %s/%s: rank %d differs from rank 0", md->quant,
            ncclzPolicyName(md->policy), r);
      CHECK(!memcmp(many[r], one[r], count * 4), "broadcast %s/%s rank %d: %u chunks differ from one chunk", md->quant,
            ncclzPolicyName(md->policy), r, k);
      if (r != root && md->policy != NCCLZ_POLICY_OFF)
        CHECK(sm[r].chunks_received == k && so[r].chunks_received == 1, "rank %d received %llu and %llu frames, not %u and 1",
              r, (unsigned long long)sm[r].chunks_received, (unsigned long long)so[r].chunks_received, k);
    }
    for (int r = 0; r < n; r++) {
      free(many[r]);
      free(one[r]);
    }
    printf("broadcast %s/%s on 9 ranks, 1 MiB: %u chunks, bit-exact or within the bound, as in one chunk\n", md->quant,
           ncclzPolicyName(md->policy), k);
  }
}

int main(void) {
  ncclzProfile prof;
  ncclzStatus st = ncclzProfileLoad(NCCLZ_TEST_DATA "/profile_synthetic.json", &prof);
  CHECK(st == NCCLZ_OK, "profile: %s", ncclzLastError());
  if (st) return tu_finish("test_exec");
  test_mismatch(&prof);
  test_bad_calls(&prof);
  test_final_bound(&prof);
  test_real(&prof);
  test_protocol_cost(&prof);
  test_broadcast_chunks(&prof);
  test_matrix(&prof);
  test_algorithms(&prof);
  return tu_finish("test_exec");
}
