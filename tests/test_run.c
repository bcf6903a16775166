/* ncclz run (report/ncclzRunScenario): schema errors name the field; a small what-if writes
 * index.html, results.json and CSV; the tune kind's recommendation has regret >= 0 and the
 * oracle's is 0. Kept small: each case runs in well under a second. */
#include "ncclz/model.h"
#include "ncclz/report.h"
#include "testutil.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define OK(c) CHECK(c, "%s", ncclzLastError())

static char tmp[64];
#define DATA NCCLZ_TEST_DATA

static const char *scenario(const char *name, const char *text) {
  static char path[128];
  snprintf(path, sizeof path, "%s/%s.json", tmp, name);
  tu_write_text(path, text);
  return path;
}

static ncclzStatus run(const char *path, const char *out) {
  char dir[160];
  snprintf(dir, sizeof dir, "%s/%s", tmp, out);
  ncclzRunOptions o = {path, dir, NULL, NULL, NULL};
  return ncclzRunScenario(&o);
}

/* A bad scenario gives NCCLZ_ERR_ARG and a message holding `field`. */
static void expect_error(const char *text, const char *field) {
  ncclzStatus st = run(scenario("bad", text), "bad");
  CHECK(st == NCCLZ_ERR_ARG && strstr(ncclzLastError(), field), "want ARG naming '%s', got %d '%s'", field, (int)st,
        ncclzLastError());
}

static void schema_errors(void) {
  expect_error("[1]", "scenario: expected a JSON object");
  expect_error("{\"kind\": \"what-ever\"}", "kind");
  expect_error("{\"kind\": 3}", "kind");
  /* no profile: the built-in H200 one, so the next missing field is reported */
  expect_error("{\"kind\": \"tune\"}", "platforms");
  expect_error("{\"kind\": \"tune\", \"profile\": \"" DATA "/profiles_bad/version_2.json\"}", "profile");
  /* no profile in the scenario: $NCCLZ_PROFILE before the built-in one, as for the other verbs;
   * a scenario that names its profile keeps it */
  setenv("NCCLZ_PROFILE", DATA "/profiles_bad/version_2.json", 1);
  expect_error("{\"kind\": \"tune\"}", "version_2.json");
  expect_error("{\"kind\": \"tune\", \"profile\": \"" DATA "/profile_synthetic.json\"}", "platforms");
  unsetenv("NCCLZ_PROFILE");
  const char *tune = "{\"kind\": \"tune\", \"profile\": \"" DATA "/profile_synthetic.json\", %s}";
  char buf[1024];
  snprintf(buf, sizeof buf, tune, "\"platforms\": [{\"label\": \"n\"}], \"sweep\": {\"min_gain_permil\": [0, 2000]}");
  expect_error(buf, "sweep.min_gain_permil[1]");
  snprintf(buf, sizeof buf, tune, "\"platforms\": [{\"label\": \"n\", \"hint\": \"ib\"}]");
  expect_error(buf, "platforms[0].hint");
  snprintf(buf, sizeof buf, tune, "\"platforms\": [{\"label\": \"n\"}], \"workloads\": [{\"label\": \"w\", \"file\": \"x.f32\", \"quant\": \"none\"}]");
  expect_error(buf, "workloads[0].bytes");
  snprintf(buf, sizeof buf, tune, "\"platforms\": [{\"label\": \"n\"}], \"sweep\": {\"frame_size\": [1]}");
  expect_error(buf, "sweep.frame_size");
  expect_error("{\"kind\": \"cr-table\", \"nodes\": [2], \"datasets\": [{\"label\": \"a\", \"quant\": \"eb:rel=1e-4\", "
               "\"files\": [\"nope.f32\"]}]}", "datasets[0].files");
  expect_error("{\"kind\": \"cr-table\", \"nodes\": [2, \"x\"], \"datasets\": []}", "nodes[1]");
  expect_error("{\"kind\": \"codec\"}", "results");
  expect_error("{\"kind\": \"codec\", \"results\": \"nope.jsonl\"}", "nope.jsonl");
  expect_error("{\"kind\": \"codec\", \"results\": \"" DATA "/fields.json\"}", "line 1");
  /* results.json is UTF-8: a scenario that is not is refused by the strict reader, with its position */
  expect_error("{\"kind\": \"cr-table\", \"name\": \"caf\xe9\", \"nodes\": [2], \"datasets\": []}", "not valid UTF-8 at line 1");
#ifdef NCCLZ_HAVE_SIM
  expect_error("{\"kind\": \"what-if\", \"profile\": \"" DATA "/profile_synthetic.json\", \"sweep\": {\"nodes\": [0]}}",
               "sweep.nodes[0]");
  expect_error("{\"kind\": \"what-if\", \"profile\": \"" DATA "/profile_synthetic.json\", \"workloads\": [{\"label\": "
               "\"a\", \"data\": {\"cr\": {\"fixedlen\": 0}}}], \"sweep\": {\"compress\": [\"auto\"]}}", "data.cr.fixedlen");
  expect_error("{\"kind\": \"validate\", \"profile\": \"" DATA "/profile_synthetic.json\"}", "paths");
  expect_error("{\"kind\": \"validate\", \"profile\": \"" DATA "/profile_synthetic.json\", \"data\": {\"cr\": {\"fixedlen\": 4}},"
               "\"paths\": {\"s\": {\"gpus_per_node\": 1, \"calibrated\": \"socket\"}}}", "no sendrecv and allreduce curves");
  expect_error("{\"kind\": \"validate\", \"data\": {\"cr\": {\"fixedlen\": 4}},"
               "\"paths\": {\"s\": {\"gpus_per_node\": 1, \"calibrated\": \"socket\", \"nic_gbps\": 3}}}", "either");
#endif
}

static cJSON *load_json(const char *out) {
  char path[200];
  snprintf(path, sizeof path, "%s/%s/results.json", tmp, out);
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  static char buf[1 << 20];
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  return cJSON_ParseWithLength(buf, n);
}

static int exists(const char *out, const char *file) {
  char path[200];
  snprintf(path, sizeof path, "%s/%s/%s", tmp, out, file);
  return access(path, F_OK) == 0;
}

static void whatif_run(void) {
#ifdef NCCLZ_HAVE_SIM
  const char *s = scenario("wi", "{\"kind\": \"what-if\", \"profile\": \"" DATA "/profile_synthetic.json\","
                                 "\"data\": {\"cr\": {\"fixedlen\": 4, \"huffman\": 6}, \"class\": \"eb\"},"
                                 "\"platform\": {\"gpus_per_node\": 2, \"nic_gbps\": 5},"
                                 "\"sweep\": {\"nodes\": [2, 4], \"bytes\": [\"4M\", \"64M\"], \"compress\": [\"off\", \"auto\"]},"
                                 "\"paper\": [{\"compress\": \"auto\", \"metric\": \"speedup\", \"value\": 3, \"source\": \"t\"}]}");
  OK(run(s, "wi") == NCCLZ_OK);
  OK(exists("wi", "index.html") && exists("wi", "results.json") && exists("wi", "whatif_points.csv") &&
     exists("wi", "paper_vs_ncclz.csv") && exists("wi", "profile.csv"));
  cJSON *j = load_json("wi");
  const cJSON *pts = cJSON_GetObjectItemCaseSensitive(j, "points");
  OK(cJSON_GetArraySize(pts) == 8);
  const cJSON *p;
  cJSON_ArrayForEach(p, pts) {
    const cJSON *sp = cJSON_GetObjectItemCaseSensitive(p, "speedup_vs_nccl");
    OK(cJSON_IsNumber(sp) && sp->valuedouble > 0);
  }
  OK(cJSON_GetObjectItemCaseSensitive(j, "provenance") != NULL);
  cJSON_Delete(j);
#else
  printf("what-if run: skipped (no simulator in this build)\n");
#endif
}

static void tune_run(void) {
  const char *s = scenario("tune", "{\"kind\": \"tune\", \"profile\": \"" DATA "/profile_synthetic.json\","
      "\"workloads\": [{\"label\": \"t\", \"file\": \"" DATA "/trefht_member57_8x64x128.f32\", \"dims\": [8, 64, 128],"
      " \"quant\": \"eb:rel=1e-4,lorenzo=3d\", \"bytes\": [\"16K\", \"256K\", \"4M\", \"64M\"]},"
      " {\"label\": \"g\", \"file\": \"" DATA "/resnet18_rank0_64k.f32\", \"quant\": \"qsgd:bits=8,bucket=512\", \"weight\": 2,"
      " \"bytes\": [\"16K\", \"1M\", \"16M\"]}],"
      "\"platforms\": [{\"label\": \"net\", \"hint\": \"net\"}, {\"label\": \"fast\", \"hint\": \"net\", \"bandwidth_gbps\": 40},"
      " {\"label\": \"nvlink\", \"hint\": \"nvlink\"}],"
      "\"sweep\": {\"huff_min_bytes\": [0, 1048576], \"min_gain_permil\": [0, 100, 900], \"fast_path_bytes\": [0, 65536],"
      " \"sample_window_bytes\": [1024, 65536], \"frame_bytes\": [262144, 4194304]}}");
  OK(run(s, "tune") == NCCLZ_OK);
  OK(exists("tune", "index.html") && exists("tune", "tune_regret.csv") && exists("tune", "tune_recommended.csv"));
  cJSON *j = load_json("tune");
  const cJSON *rec = cJSON_GetObjectItemCaseSensitive(j, "recommended");
  const cJSON *mean = cJSON_GetObjectItemCaseSensitive(rec, "regret_mean");
  const cJSON *orc = cJSON_GetObjectItemCaseSensitive(j, "oracle_regret");
  OK(cJSON_IsNumber(mean) && mean->valuedouble >= 0);
  OK(cJSON_IsNumber(orc) && orc->valuedouble == 0);
  /* the recommendation is no worse than the profile's thresholds or any fixed coder */
  const cJSON *cur = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(j, "profile_thresholds"), "regret_mean");
  OK(cJSON_IsNumber(cur) && cur->valuedouble >= mean->valuedouble);
  const cJSON *fx = cJSON_GetObjectItemCaseSensitive(j, "fixed_coders"), *f;
  cJSON_ArrayForEach(f, fx) {
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(f, "regret_mean");
    OK(cJSON_IsNumber(m) && m->valuedouble >= 0);
  }
  const cJSON *per = cJSON_GetObjectItemCaseSensitive(rec, "regret_per_platform"), *p;
  cJSON_ArrayForEach(p, per) OK(p->valuedouble >= 0);
  cJSON_Delete(j);
}

/* A "calibrated" validate path is the link the profile measured: for the executor's frames the
 * same replay as a path that types in the send/recv latency, the send/recv bandwidth at the
 * frames' size as the cap of one transfer (64 MiB in 4 MiB chunks at CR 4: 1 MiB frames, a point
 * of the curve) and the AllReduce's bandwidth, at the same ramp, as the NIC's; for plain NCCL on
 * the profile's rank count, the profile's measured time of that collective and size. */
#ifdef NCCLZ_HAVE_SIM
static double predicted_us(const cJSON *j, const char *path, const char *compress) {
  const cJSON *p;
  cJSON_ArrayForEach(p, cJSON_GetObjectItemCaseSensitive(j, "points")) {
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(p, "path"), *c = cJSON_GetObjectItemCaseSensitive(p, "compress");
    if (cJSON_IsString(a) && !strcmp(a->valuestring, path) && cJSON_IsString(c) && !strcmp(c->valuestring, compress))
      return cJSON_GetObjectItemCaseSensitive(p, "simulated_us")->valuedouble;
  }
  return -1;
}
#endif

static void validate_calibrated_run(void) {
#ifdef NCCLZ_HAVE_SIM
  ncclzProfile prof;
  OK(ncclzProfileDefault(&prof) == NCCLZ_OK);
  const double s1 = 512.0 * 1048576, s2 = 1024.0 * 1048576;
  double p2p = (s2 - s1) / ((ncclzProfilePlainUs(&prof, "socket", "sendrecv", s2) -
                             ncclzProfilePlainUs(&prof, "socket", "sendrecv", s1)) * 1e3);
  double coll = (s2 - s1) / ((ncclzProfilePlainUs(&prof, "socket", "allreduce", s2) -
                              ncclzProfilePlainUs(&prof, "socket", "allreduce", s1)) * 1e3);
  double alpha = ncclzProfilePlainUs(&prof, "socket", "sendrecv", 1024) - 1024 / (p2p * 1e3);
  const double mib = 1048576;
  double at_frame = mib / ((ncclzProfilePlainUs(&prof, "socket", "sendrecv", mib) - alpha) * 1e3);
  char text[2048];
  snprintf(text, sizeof text,
           "{\"kind\": \"validate\", \"data\": {\"cr\": {\"fixedlen\": 4, \"huffman\": 6}, \"class\": \"qsgd\"},"
           "\"paths\": {\"cal\": {\"gpus_per_node\": 1, \"calibrated\": \"socket\"},"
           "\"p2p\": {\"gpus_per_node\": 1, \"nic_gbps\": %.17g, \"nic_flow_gbps\": %.17g, \"nic_latency_us\": %.17g},"
           "\"coll\": {\"gpus_per_node\": 1, \"nic_gbps\": %.17g, \"nic_latency_us\": %.17g}},"
           "\"predict\": {\"collective\": [\"allreduce\"], \"compress\": [\"off\", \"fixedlen\"], \"bytes\": [\"64M\"],"
           "\"nranks\": 2}}",
           coll * at_frame / p2p, at_frame, alpha > 0 ? alpha : 0, coll, alpha > 0 ? alpha : 0);
  OK(run(scenario("va", text), "va") == NCCLZ_OK);
  cJSON *j = load_json("va");
  double cal_f = predicted_us(j, "cal", "fixedlen"), p2p_f = predicted_us(j, "p2p", "fixedlen");
  double cal_o = predicted_us(j, "cal", "off"), coll_o = predicted_us(j, "coll", "off");
  CHECK(cal_f > 0 && fabs(cal_f - p2p_f) <= 1e-6 * p2p_f, "compressed: calibrated %g vs typed-in %g", cal_f, p2p_f);
  double meas_o = ncclzProfilePlainUs(&prof, "socket", "allreduce", 64 * mib);
  CHECK(cal_o > 0 && fabs(cal_o - meas_o) <= 1e-4 * meas_o, "plain: calibrated %g vs the profile's %g", cal_o, meas_o);
  CHECK(coll_o > 0, "plain: the typed-in link predicts %g", coll_o);
  cJSON_Delete(j);
#else
  printf("validate run: skipped (no simulator in this build)\n");
#endif
}

#ifdef NCCLZ_HAVE_SIM
/* A validate scenario named `name`: the synthetic profile, CR 4 / 6, one 3 GB/s NIC path "net",
 * against `measured` (a JSON list of {"file", "path": "net"}); the status of its run. */
static ncclzStatus run_validate_net(const char *name, const char *measured) {
  char text[1024];
  snprintf(text, sizeof text,
           "{\"kind\": \"validate\", \"profile\": \"" DATA "/profile_synthetic.json\","
           "\"data\": {\"cr\": {\"fixedlen\": 4, \"huffman\": 6}, \"class\": \"qsgd\"},"
           "\"paths\": {\"net\": {\"gpus_per_node\": 1, \"nic_gbps\": 3, \"nic_latency_us\": 20}},"
           "\"measured\": %s}", measured);
  return run(scenario(name, text), name);
}

/* The same, run to completion: its results.json. */
static cJSON *validate_net(const char *name, const char *measured) {
  OK(run_validate_net(name, measured) == NCCLZ_OK);
  return load_json(name);
}
#endif

/* The measurements' own spread: a point measured twice (100 and 150 us, in one bench file's two
 * runs) has max / min - 1 = 0.5; a point measured once does not count. */
static void validate_spread_run(void) {
#ifdef NCCLZ_HAVE_SIM
  char meas[160];
  snprintf(meas, sizeof meas, "%s/meas-spread.json", tmp);
  tu_write_text(meas, "{\"runs\": [{\"collective\": \"allreduce\", \"compress\": \"off\", \"nranks\": 2, \"points\": ["
                     "{\"size\": 1048576, \"time_us\": 100}, {\"size\": 4194304, \"time_us\": 900}]},"
                     " {\"collective\": \"allreduce\", \"compress\": \"off\", \"nranks\": 2, \"points\": ["
                     "{\"size\": 1048576, \"time_us\": 150}]}]}");
  char measured[256];
  snprintf(measured, sizeof measured, "[{\"file\": \"%s\", \"path\": \"net\"}]", meas);
  cJSON *j = validate_net("vs", measured);
  const cJSON *n = cJSON_GetObjectItemCaseSensitive(j, "measured_spread_points");
  const cJSON *m = cJSON_GetObjectItemCaseSensitive(j, "measured_spread_median");
  CHECK(cJSON_IsNumber(n) && n->valuedouble == 1 && cJSON_IsNumber(m) && fabs(m->valuedouble - 0.5) < 1e-12,
        "spread: %g points, median %g (want 1, 0.5)", cJSON_IsNumber(n) ? n->valuedouble : -1,
        cJSON_IsNumber(m) ? m->valuedouble : -1);
  cJSON_Delete(j);
#else
  printf("validate spread: skipped (no simulator in this build)\n");
#endif
}

/* Best-coder groups are taken within one run (measurement file): the same (path, collective,
 * size) with plain and HUFFMAN in each of two files makes two groups, not one; a size measured
 * with one coder makes none. On a 3 GB/s link HUFFMAN at CR 6 is faster in the replay, as in both
 * files. Run 0's plain points are marked as nccl-tests': the median over what ncclz perf measured
 * leaves them out. */
static void validate_best_coder_run(void) {
#ifdef NCCLZ_HAVE_SIM
  char meas[2][160];
  for (int k = 0; k < 2; k++) {
    snprintf(meas[k], sizeof meas[k], "%s/meas-best%d.json", tmp, k);
    FILE *f = fopen(meas[k], "w");
    OK(f != NULL);
    if (!f) return;
    fprintf(f,
            "{\"runs\": [{\"collective\": \"allreduce\", \"compress\": \"off\", \"nranks\": 2, %s\"points\": ["
            "{\"size\": 67108864, \"time_us\": %d}, {\"size\": 1048576, \"time_us\": 400}]},"
            " {\"collective\": \"allreduce\", \"compress\": \"huffman\", \"nranks\": 2, \"points\": ["
            "{\"size\": 67108864, \"time_us\": %d, \"cr\": 6}]}]}",
            k ? "" : "\"backend\": \"nccl-tests\", ", k ? 30000 : 45000, k ? 9000 : 7000);
    fclose(f);
  }
  char measured[512];
  snprintf(measured, sizeof measured, "[{\"file\": \"%s\", \"path\": \"net\"}, {\"file\": \"%s\", \"path\": \"net\"}]",
           meas[0], meas[1]);
  cJSON *j = validate_net("vb", measured);
  const cJSON *g = cJSON_GetObjectItemCaseSensitive(j, "best_coder_groups");
  const cJSON *a = cJSON_GetObjectItemCaseSensitive(j, "best_coder_agreement");
  CHECK(cJSON_IsNumber(g) && g->valuedouble == 2 && cJSON_IsNumber(a) && a->valuedouble == 1.0,
        "best coder: %g groups, agreement %g (want 2 groups, one per run, both HUFFMAN: 1)",
        cJSON_IsNumber(g) ? g->valuedouble : -1, cJSON_IsNumber(a) ? a->valuedouble : -1);
  /* run 0's plain points say nccl-tests measured them: the ncclz perf median leaves those 2 of 6 out */
  const cJSON *own = cJSON_GetObjectItemCaseSensitive(j, "points_ncclz");
  CHECK(cJSON_IsNumber(own) && own->valuedouble == 4, "points measured by ncclz perf: %g (want 4)",
        cJSON_IsNumber(own) ? own->valuedouble : -1);
  cJSON_Delete(j);
#else
  printf("validate best coder: skipped (no simulator in this build)\n");
#endif
}

/* A compressed point replays the schedule the executor ran: the run's "algorithm", and the ring
 * (the executor's auto without ranks_per_node) when it names none or auto, not the replay's
 * fastest schedule (the tree, on two ranks of a 3 GB/s link); a name it does not know is refused. */
#ifdef NCCLZ_HAVE_SIM
static double point_sim_us(const cJSON *j, int i) {
  const cJSON *pt = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(j, "points"), i);
  const cJSON *us = cJSON_GetObjectItemCaseSensitive(pt, "simulated_us");
  return cJSON_IsNumber(us) ? us->valuedouble : -1;
}
#endif

static void validate_algorithm_run(void) {
#ifdef NCCLZ_HAVE_SIM
  const char *algo[4] = {"", "\"algorithm\": \"ring\", ", "\"algorithm\": \"auto\", ", "\"algorithm\": \"tree\", "};
  char meas[160], measured[256];
  snprintf(meas, sizeof meas, "%s/meas-algo.json", tmp);
  snprintf(measured, sizeof measured, "[{\"file\": \"%s\", \"path\": \"net\"}]", meas);
  FILE *f = fopen(meas, "w");
  OK(f != NULL);
  if (!f) return;
  fputs("{\"runs\": [", f);
  for (int k = 0; k < 4; k++)
    fprintf(f, "%s{\"collective\": \"allreduce\", \"compress\": \"huffman\", \"nranks\": 2, %s\"points\": ["
               "{\"size\": 67108864, \"time_us\": 9000, \"cr\": 6}]}", k ? ", " : "", algo[k]);
  fputs("]}", f);
  fclose(f);
  cJSON *j = validate_net("va", measured);
  double none = point_sim_us(j, 0), ring = point_sim_us(j, 1), aut = point_sim_us(j, 2), tree = point_sim_us(j, 3);
  CHECK(none > 0 && none == ring && aut == ring && tree > 0 && tree != ring,
        "no algorithm %.3f us, auto %.3f, ring %.3f (want all equal), tree %.3f (want another)", none, aut, ring, tree);
  cJSON_Delete(j);
  tu_write_text(meas, "{\"collective\": \"allreduce\", \"compress\": \"huffman\", \"nranks\": 2, "
                      "\"algorithm\": \"spiral\", \"points\": [{\"size\": 67108864, \"time_us\": 9000}]}");
  ncclzStatus st = run_validate_net("vab", measured);
  CHECK(st == NCCLZ_ERR_ARG && strstr(ncclzLastError(), "algorithm: expected auto, ring, tree, rhd or hier"),
        "unknown algorithm: %d '%s'", (int)st, ncclzLastError());
#else
  printf("validate algorithm: skipped (no simulator in this build)\n");
#endif
}

static void crtable_run(void) {
  const char *s = scenario("cr", "{\"kind\": \"cr-table\", \"data_dir\": \"" DATA "\", \"nodes\": [1, 2],"
      "\"ranks_per_node\": 2, \"datasets\": [{\"label\": \"g\", \"quant\": \"qsgd:bits=8,bucket=512\","
      "\"files\": [\"resnet18_rank0_64k.f32\", \"resnet18_rank1_64k.f32\"], \"paper\": {\"huffman\": [8, 8, 8]}}]}");
  OK(run(s, "cr") == NCCLZ_OK);
  OK(exists("cr", "table1.csv") && exists("cr", "cr_per_ranks_summed.csv"));
}

/* The output directory through the API (tests/run_contract.sh has the command line's cases): an
 * empty name and a second writer are refused, an aborted report leaves no directory it created, a
 * results.json that is a link is never written through, and a report removes its previous files. */
static void output_dir(void) {
  ncclzRunOptions o = {scenario("cr0", "{\"kind\": \"cr-table\", \"nodes\": [1], \"datasets\": []}"), "", NULL, NULL, NULL};
  CHECK(ncclzRunScenario(&o) == NCCLZ_ERR_ARG && strstr(ncclzLastError(), "--out"), "--out '': %s", ncclzLastError());
  char dir[160], path[220];
  snprintf(dir, sizeof dir, "%s/locked", tmp);
  ncclzReport *a = ncclzReportOpen(dir, "a");
  OK(a != NULL);
  ncclzReport *b = ncclzReportOpen(dir, "b");
  CHECK(!b && strstr(ncclzLastError(), "another ncclz run is writing"), "a second writer: %s", ncclzLastError());
  ncclzReportAbort(a);
  CHECK(access(dir, F_OK) != 0, "an aborted report left the directory it created");

  snprintf(dir, sizeof dir, "%s/linked", tmp);
  OK(mkdir(dir, 0777) == 0);
  snprintf(path, sizeof path, "%s/results.json", dir);
  OK(symlink("../target.txt", path) == 0);
  CHECK(!ncclzReportOpen(dir, "l") && strstr(ncclzLastError(), "symbolic link"), "link: %s", ncclzLastError());
  snprintf(path, sizeof path, "%s/target.txt", tmp);
  CHECK(access(path, F_OK) != 0, "the link's target was created");

  snprintf(dir, sizeof dir, "%s/twice", tmp);
  const char *names[2] = {"first", "second"};
  for (int k = 0; k < 2; k++) {
    ncclzReport *r = ncclzReportOpen(dir, names[k]);
    OK(r != NULL);
    if (!r) return;
    ncclzTable *t = ncclzTableNew(names[k], "x");
    ncclzTableAdd(t, "1");
    OK(ncclzReportTable(r, t, "t") == NCCLZ_OK && ncclzReportClose(r) == NCCLZ_OK);
  }
  CHECK(!exists("twice", "first.csv") && exists("twice", "second.csv") && exists("twice", "results.json"),
        "the second report did not replace the first's files");
}

int main(void) {
  snprintf(tmp, sizeof tmp, "/tmp/ncclz-test-run-XXXXXX");
  if (!mkdtemp(tmp)) return 1;
  setenv("NCCLZ_GNUPLOT", "/nonexistent/gnuplot", 1); /* plots are test_report's; keep these fast */
  schema_errors();
  whatif_run();
  tune_run();
  crtable_run();
  validate_calibrated_run();
  validate_spread_run();
  validate_best_coder_run();
  validate_algorithm_run();
  output_dir();
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", tmp);
  return tu_finish("test_run");
}
