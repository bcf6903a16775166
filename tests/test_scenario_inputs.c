/* Hostile JSON inputs of the scenario, tune and cr-table readers: long arrays are refused or read in
 * linear time, texts that are not strict JSON are refused with one line naming the file and the
 * position or key, and byte counts past the parser's range never reach an allocation. */
#include "ncclz/model.h"
#include "ncclz/report.h"
#ifdef NCCLZ_HAVE_SIM
#include "ncclz/sim.h"
#endif
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define DATA NCCLZ_TEST_DATA

static char tmp[64];

static const char *write_file(const char *name, const char *text) {
  static char path[128];
  snprintf(path, sizeof path, "%s/%s", tmp, name);
  tu_write_text(path, text);
  return path;
}

static ncclzStatus run(const char *path) {
  char dir[160];
  snprintf(dir, sizeof dir, "%s/out", tmp);
  ncclzRunOptions o = {.scenario = path, .out_dir = dir};
  return ncclzRunScenario(&o);
}

/* One line holding `want`, and `want` not repeated (a cause composed into its own message). */
static int one_clean_line(const char *want) {
  const char *e = ncclzLastError(), *at = strstr(e, want);
  return at && !strstr(at + 1, want) && !strchr(e, '\n');
}

#ifdef NCCLZ_HAVE_SIM
/* A scenario whose sweep.nodes array is `n` values of `value`: the text and its length. */
static char *nodes_scenario(size_t n, const char *value) {
  size_t vlen = strlen(value), cap = n * (vlen + 1) + 256;
  char *s = malloc(cap), *p = s;
  p += sprintf(p, "{\"kind\": \"what-if\", \"platform\": {\"gpus_per_node\": 1}, \"sweep\": {\"nodes\": [");
  for (size_t i = 0; i < n; i++) {
    memcpy(p, value, vlen);
    p += vlen;
    *p++ = i + 1 < n ? ',' : ']';
  }
  sprintf(p, "}}");
  return s;
}
#endif

static void long_arrays(void) {
#ifdef NCCLZ_HAVE_SIM
  /* 1.6 MB of nodes: past the sweep's 100,000 points, refused before the values are read */
  char *text = nodes_scenario(200000, "1048576");
  ncclzSimScenario sc;
  double t0 = ncclzNowSeconds();
  ncclzStatus st = ncclzSimScenarioParse(text, strlen(text), NULL, NULL, &sc);
  double dt = ncclzNowSeconds() - t0;
  CHECK(strlen(text) > 1600000 && st == NCCLZ_ERR_ARG && one_clean_line("sweep.nodes: more than 100000 values"),
        "1.6 MB nodes: %d '%s'", (int)st, ncclzLastError());
  CHECK(dt < 1.0, "1.6 MB nodes refused in %.3f s", dt);
  printf("  1.6 MB sweep.nodes: refused in %.3f s\n", dt);
  free(text);
  /* 100,000 values, the limit: read whole, in linear time */
  text = nodes_scenario(100000, "4");
  t0 = ncclzNowSeconds();
  st = ncclzSimScenarioParse(text, strlen(text), NULL, NULL, &sc);
  dt = ncclzNowSeconds() - t0;
  CHECK(st == NCCLZ_OK && sc.npoints == 100000 && sc.points[99999].platform.nodes == 4, "100,000 nodes: %d '%s'",
        (int)st, ncclzLastError());
  CHECK(dt < 1.0, "100,000 nodes parsed in %.3f s", dt);
  printf("  100,000 sweep.nodes values: parsed in %.3f s\n", dt);
  if (st == NCCLZ_OK) ncclzSimScenarioFree(&sc);
  free(text);
#else
  printf("long arrays: skipped (no simulator in this build)\n");
#endif
}

static void strict_json(void) {
  char want[256];
  const char *dup = write_file("dup.json", "{\"kind\": \"tune\",\n \"platforms\": [{\"label\": \"a\", \"label\": \"b\"}]}");
  CHECK(run(dup) == NCCLZ_ERR_ARG, "duplicate key refused");
  snprintf(want, sizeof want, "scenario: duplicate key 'platforms[0].label'"); /* `ncclz run` adds the path */
  CHECK(one_clean_line(want), "duplicate key: '%s'", ncclzLastError());
  const char *trail = write_file("trail.json", "{\"kind\": \"tune\"}\n}");
  CHECK(run(trail) == NCCLZ_ERR_ARG, "trailing characters refused");
  snprintf(want, sizeof want, "scenario: characters after the JSON value at line 2, column 1");
  CHECK(one_clean_line(want), "trailing: '%s'", ncclzLastError());
  const char *name = write_file("name.json", "{\"kind\": \"tune\", \"name\": \"caf\xe9\"}");
  CHECK(run(name) == NCCLZ_ERR_ARG && one_clean_line("not valid UTF-8 at line 1, column 30"), "latin-1 name: '%s'",
        ncclzLastError());
#ifdef NCCLZ_HAVE_SIM
  ncclzSimScenario sc;
  const char *wi = write_file("wi.json", "{\"kind\": \"what-if\", \"sweep\": {\"nodes\": [2]}, \"sweep\": {}}");
  CHECK(ncclzSimScenarioLoad(wi, NULL, &sc) == NCCLZ_ERR_ARG, "what-if duplicate refused");
  snprintf(want, sizeof want, "scenario %s: duplicate key 'sweep'", wi);
  CHECK(one_clean_line(want), "what-if duplicate: '%s'", ncclzLastError());
#endif
}

/* Byte counts of 2^63 (and past 1e15) are refused where they are read, before any allocation. */
static void huge_byte_counts(void) {
  const char *tune = write_file("tune.json", "{\"kind\": \"tune\", \"profile\": \"" DATA "/profile_synthetic.json\", "
                                             "\"platforms\": [{\"label\": \"n\"}], \"workloads\": [{\"label\": \"w\", "
                                             "\"file\": \"" DATA "/gpt_rank0_64k.f32\", \"quant\": \"eb:abs=0.1\", "
                                             "\"bytes\": [9223372036854775808]}]}");
  CHECK(run(tune) == NCCLZ_ERR_ARG && one_clean_line("workloads[0].bytes[0]: expected a byte count"), "tune 2^63: '%s'",
        ncclzLastError());
  const char *cr = write_file("cr.json", "{\"kind\": \"cr-table\", \"nodes\": [2], \"frame_bytes\": [9223372036854775808], "
                                         "\"datasets\": [{\"label\": \"a\"}]}");
  CHECK(run(cr) == NCCLZ_ERR_ARG && one_clean_line("frame_bytes[0]: expected a byte count"), "cr-table 2^63: '%s'",
        ncclzLastError());
  cr = write_file("cr2.json", "{\"kind\": \"cr-table\", \"nodes\": [2], \"frame_bytes\": [\"900G\"], "
                              "\"datasets\": [{\"label\": \"a\"}]}");
  CHECK(run(cr) == NCCLZ_ERR_ARG && one_clean_line("frame_bytes: at most 4294967295"), "cr-table 900G: '%s'",
        ncclzLastError());
}

/* A cause composed into a message appears once (scenario data.file wraps the quantizer's error). */
static void composed_errors(void) {
#ifdef NCCLZ_HAVE_SIM
  ncclzProfile prof;
  CHECK(ncclzProfileLoad(DATA "/profile_synthetic.json", &prof) == NCCLZ_OK, "%s", ncclzLastError());
  const char *text = "{\"kind\": \"what-if\", \"data\": {\"file\": \"" DATA "/gpt_rank0_64k.f32\", \"quant\": "
                     "\"eb:abs=-1\"}, \"sweep\": {\"compress\": [\"auto\"]}}";
  ncclzSimScenario sc;
  CHECK(ncclzSimScenarioParse(text, strlen(text), NULL, &prof, &sc) == NCCLZ_ERR_ARG, "bad data.file quant refused");
  const char *e = ncclzLastError(), *cause = strstr(e, "data.file: ");
  CHECK(cause && !strstr(cause + 1, "data.file: ") && strlen(cause) > strlen("data.file: ") + 4 && !strchr(e, '\n'),
        "data.file: '%s'", e);
#endif
}

/* The replay's budget: a full replay of 4,096 ranks is refused at once with its estimate; a small
 * one runs, and is refused under a budget it does not fit. */
static void replay_budget(void) {
#ifdef NCCLZ_HAVE_SIM
  ncclzSimPlatform p;
  ncclzSimOptions o;
  ncclzSimResult r;
  ncclzSimPlatformDefault(&p);
  ncclzSimOptionsDefault(&o);
  p.nodes = 512, p.gpus_per_node = 8;
  o.coll = NCCLZ_ALLTOALL, o.bytes = 256u << 20, o.fidelity = NCCLZ_FID_FULL;
  double t0 = ncclzNowSeconds();
  ncclzStatus st = ncclzSimRun(NULL, NULL, &p, &o, &r);
  double dt = ncclzNowSeconds() - t0;
  CHECK(st == NCCLZ_ERR_ARG && one_clean_line("the full replay of alltoall on 4096 ranks") &&
            one_clean_line("past the budget of 120 s and 2048 MiB"),
        "4096-rank alltoall: %d '%s'", (int)st, ncclzLastError());
  CHECK(dt < 2.0, "refused in %.3f s", dt);
  printf("  4096-rank full alltoall: refused in %.3f s: %s\n", dt, ncclzLastError());
  o.fidelity = NCCLZ_FID_AUTO; /* the reduced replay, far inside the budget */
  st = ncclzSimRun(NULL, NULL, &p, &o, &r);
  CHECK(st == NCCLZ_OK && r.fidelity == NCCLZ_FID_REDUCED, "4096-rank alltoall, fidelity auto: %s", ncclzLastError());
  p.placement = NCCLZ_PLACE_STRIDED; /* plain: every link carries the contiguous placement's flows */
  st = ncclzSimRun(NULL, NULL, &p, &o, &r);
  CHECK(st == NCCLZ_OK && r.fidelity == NCCLZ_FID_REDUCED, "4096-rank strided alltoall: %s", ncclzLastError());
  p.placement = NCCLZ_PLACE_CONTIGUOUS;
  p.topology = NCCLZ_TOPO_FATTREE; /* hops that cross leaves: no reduced replay, the full one, refused */
  st = ncclzSimRun(NULL, NULL, &p, &o, &r);
  CHECK(st == NCCLZ_ERR_ARG && one_clean_line("the full replay of alltoall on 4096 ranks"),
        "4096-rank alltoall across fat-tree leaves: '%s'", ncclzLastError());
  p.topology = NCCLZ_TOPO_NONBLOCKING;
  o.coll = NCCLZ_ALLREDUCE, o.fidelity = NCCLZ_FID_FULL, o.every_step = 1;
  st = ncclzSimRun(NULL, NULL, &p, &o, &r);
  CHECK(st == NCCLZ_ERR_ARG && one_clean_line("the full replay of allreduce on 4096 ranks"), "4096 full allreduce: '%s'",
        ncclzLastError());
  p.nodes = 4, p.gpus_per_node = 2;
  o.coll = NCCLZ_ALLTOALL, o.fidelity = NCCLZ_FID_AUTO, o.every_step = 0;
  st = ncclzSimRun(NULL, NULL, &p, &o, &r);
  CHECK(st == NCCLZ_OK && r.time_us > 0, "8-rank alltoall runs: %s", ncclzLastError());
  o.max_replay_s = 1e-4;
  st = ncclzSimRun(NULL, NULL, &p, &o, &r);
  CHECK(st == NCCLZ_ERR_ARG && one_clean_line("past the budget of 0.0001 s"), "8-rank alltoall, 0.1 ms budget: '%s'",
        ncclzLastError());
#endif
}

int main(void) {
  snprintf(tmp, sizeof tmp, "/tmp/ncclz_scenario_inputs_XXXXXX");
  if (!mkdtemp(tmp)) return 1;
  long_arrays();
  strict_json();
  huge_byte_counts();
  composed_errors();
  replay_budget();
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp);
  if (system(cmd)) fprintf(stderr, "cannot remove %s\n", tmp);
  return tu_finish("scenario inputs");
}
