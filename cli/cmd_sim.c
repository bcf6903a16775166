/* ncclz sim: replays the executor's schedules in SimGrid for every point of a what-if scenario and
 * prints one row per point (time, algbw, busbw, speedup over plain NCCL, coder mix). With
 * --measured (or the scenario's "measured"), it also compares each point with a measured time. */
#include "cli.h"

#include <stdio.h>

#define VERB "sim"

#ifndef NCCLZ_HAVE_SIM
int cli_sim(int argc, char **argv) {
  (void)argc;
  (void)argv;
  fprintf(stderr, "ncclz sim: this build has no simulator (SimGrid was not found when it was configured; "
                  "install libsimgrid-dev and rebuild with -DNCCLZ_SIM=ON)\n");
  return CLI_RUNTIME;
}
#else
#include "ncclz/sim.h"

#include <cjson/cJSON.h>
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
  const char *profile, *scenario, *measured;
  int json;
  int algo; /* --algo: the compressed points' schedule (AUTO: the fastest that runs each) */
} sim_opts;

static void print_help(void) {
  printf("usage: ncclz sim [--profile PROFILE.json] --scenario SCENARIO.json [--measured RESULTS.json] [--json]\n\n"
         "Replays the executor's collective schedules in SimGrid on the platforms of a what-if scenario\n"
         "(docs/scenarios.md): codec time from PROFILE, wire bytes from the scenario's data profile, coders\n"
         "from REA. One row per point; the fidelity (full: one actor per rank, reduced: a symmetric ring's\n"
         "few actors) is chosen per point and reported.\n\n"
         "  --profile FILE   default $NCCLZ_PROFILE, else the built-in H200 profile\n"
         "  --measured FILE  JSON with points[] {collective, nodes, gpus_per_node, bytes, compress, time_us\n"
         "                   [, nic_gbps]}: each matching point gets measured_us and error\n"
         "  --algo ALGO      the schedule of the compressed points: auto (default: each point's fastest\n"
         "                   of those that run it), ring, tree, rhd or hier; plain points are NCCL's own\n"
         "                   choice of ring or tree (docs/simulator.md)\n"
         "  --json           one JSON object on stdout: points[] with collective, nodes, gpus_per_node,\n"
         "                   nic_gbps, bytes, compress, time_us, algbw, busbw, speedup_vs_nccl, coders,\n"
         "                   fidelity, actors, wall_s (the table goes to stderr)\n"
         "Exit status: 0 ok, 2 bad input or usage, 1 runtime failure.\n");
}

static int parse_args(int argc, char **argv, sim_opts *o) {
  static const struct option longopts[] = {{"profile", required_argument, 0, 'p'},
                                           {"scenario", required_argument, 0, 's'},
                                           {"measured", required_argument, 0, 'm'},
                                           {"json", no_argument, 0, 'j'},
                                           {"algo", required_argument, 0, 'a'},
                                           {"help", no_argument, 0, 'h'},
                                           {0, 0, 0, 0}};
  memset(o, 0, sizeof *o);
  int c;
  optind = 1;
  while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
    switch (c) {
    case 'p': o->profile = optarg; break;
    case 's': o->scenario = optarg; break;
    case 'm': o->measured = optarg; break;
    case 'j': o->json = 1; break;
    case 'a':
      o->algo = ncclzAlgorithmFromName(optarg);
      if (o->algo < 0) return cli_usage_error(VERB, "--algo: '%s' is not one of auto, ring, tree, rhd, hier", optarg);
      break;
    case 'h': print_help(); return -1;
    default: return CLI_USAGE;
    }
  }
  if (optind < argc) return cli_usage_error(VERB, "unexpected argument '%s'", argv[optind]);
  if (!o->scenario) return cli_usage_error(VERB, "--scenario SCENARIO.json is required");
  return CLI_OK;
}

/* One evaluated point. */
typedef struct {
  ncclzSimResult r;
  double speedup;
  ncclzSimResult best_plain; /* the fastest plain schedule of ours (compressed points) */
  double measured_us; /* < 0: none */
} point_out;

/* The plain-NCCL time of point i: its own when it is "off", else an earlier or fresh "off" run
 * of the same collective, platform and size. */
static int baseline(const ncclzSimScenario *s, point_out *out, size_t i, const ncclzProfile *prof, double *us) {
  const ncclzSimPoint *p = &s->points[i];
  long twin = ncclzSimScenarioPlainTwin(s, i);
  if (twin >= 0) {
    *us = out[twin].r.time_us;
    return CLI_OK;
  }
  ncclzSimOptions o = p->options;
  o.compress = NCCLZ_SIM_OFF;
  ncclzSimResult r;
  if (ncclzSimRun(prof, &s->data, &p->platform, &o, &r) != NCCLZ_OK) return cli_runtime_error(VERB, "%s", ncclzLastError());
  *us = r.time_us;
  return CLI_OK;
}

static int run_points(const ncclzSimScenario *s, const ncclzProfile *prof, int algo, point_out *out) {
  for (size_t i = 0; i < s->npoints; i++) {
    const ncclzSimPoint *p = &s->points[i];
    ncclzSimOptions opt = p->options;
    int compressed = opt.compress != NCCLZ_SIM_OFF;
    if (compressed && algo > 0) opt.algorithm = (ncclzAlgorithm)algo;
    memset(&out[i].best_plain, 0, sizeof out[i].best_plain);
    ncclzStatus st = ncclzSimRun(prof, &s->data, &p->platform, &opt, &out[i].r);
    if (st == NCCLZ_OK && compressed) {
      ncclzSimOptions plain = p->options;
      plain.compress = NCCLZ_SIM_OFF;
      plain.algorithm = NCCLZ_ALGO_AUTO;
      st = ncclzSimRunBest(prof, &s->data, &p->platform, &plain, &out[i].best_plain);
    }
    if (st == NCCLZ_ERR_ARG) return cli_usage_error(VERB, "point %zu: %s", i, ncclzLastError());
    if (st != NCCLZ_OK) return cli_runtime_error(VERB, "point %zu: %s", i, ncclzLastError());
    double base = out[i].r.time_us;
    if (p->options.compress != NCCLZ_SIM_OFF) {
      int rc = baseline(s, out, i, prof, &base);
      if (rc != CLI_OK) return rc;
    }
    out[i].speedup = out[i].r.time_us > 0 ? base / out[i].r.time_us : 0.0;
    out[i].measured_us = -1.0;
  }
  return CLI_OK;
}

/* ----------------------------------------------------------- measured data */

static int measured_match(const cJSON *m, const ncclzSimPoint *p) {
  const cJSON *c = cJSON_GetObjectItemCaseSensitive(m, "collective");
  const cJSON *k = cJSON_GetObjectItemCaseSensitive(m, "compress");
  const cJSON *n = cJSON_GetObjectItemCaseSensitive(m, "nodes");
  const cJSON *g = cJSON_GetObjectItemCaseSensitive(m, "gpus_per_node");
  const cJSON *b = cJSON_GetObjectItemCaseSensitive(m, "bytes");
  const cJSON *w = cJSON_GetObjectItemCaseSensitive(m, "nic_gbps");
  if (!cJSON_IsString(c) || strcmp(c->valuestring, ncclzCollectiveName(p->options.coll))) return 0;
  if (!cJSON_IsString(k) || strcmp(k->valuestring, ncclzSimCompressName(p->options.compress))) return 0;
  if (!cJSON_IsNumber(n) || (int)n->valuedouble != p->platform.nodes) return 0;
  if (!cJSON_IsNumber(g) || (int)g->valuedouble != p->platform.gpus_per_node) return 0;
  if (!cJSON_IsNumber(b) || (uint64_t)b->valuedouble != p->options.bytes) return 0;
  if (cJSON_IsNumber(w) && fabs(w->valuedouble - p->platform.nic_gbps) > 0.01 * p->platform.nic_gbps) return 0;
  return 1;
}

static int load_measured(const char *path, const ncclzSimScenario *s, point_out *out) {
  size_t len;
  char *text = cli_read_file(VERB, path, &len);
  if (!text) return CLI_USAGE;
  cJSON *root = cJSON_ParseWithLength(text, len);
  free(text);
  const cJSON *pts = root ? cJSON_GetObjectItemCaseSensitive(root, "points") : NULL;
  if (!cJSON_IsArray(pts)) {
    cJSON_Delete(root);
    return cli_usage_error(VERB, "%s: measured points: expected a JSON object with points[]", path);
  }
  const cJSON *m;
  cJSON_ArrayForEach(m, pts) {
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(m, "time_us");
    if (!cJSON_IsNumber(t)) continue;
    for (size_t i = 0; i < s->npoints; i++)
      if (measured_match(m, &s->points[i])) out[i].measured_us = t->valuedouble;
  }
  cJSON_Delete(root);
  return CLI_OK;
}

/* Median |sim - measured| / measured over the matched points; -1 when none matched. */
static double median_error(const ncclzSimScenario *s, const point_out *out) {
  double *e = malloc((s->npoints ? s->npoints : 1) * sizeof *e);
  size_t n = 0;
  for (size_t i = 0; e && i < s->npoints; i++)
    if (out[i].measured_us > 0) e[n++] = fabs(out[i].r.time_us - out[i].measured_us) / out[i].measured_us;
  double med = n ? ncclzMedian(e, n) : -1.0;
  free(e);
  return med;
}

/* ----------------------------------------------------------------- output */

static void print_table(FILE *f, const ncclzSimScenario *s, const point_out *out) {
  fprintf(f, "# scenario %s: %zu points\n", s->name, s->npoints);
  fprintf(f, "%-13s %5s %4s %8s %11s %8s %-5s %12s %9s %9s %7s %-24s %s\n", "collective", "nodes", "gpn", "nic_gbps",
          "bytes", "compress", "algo", "time_us", "algbw", "busbw", "speedup", "coders", "fidelity");
  for (size_t i = 0; i < s->npoints; i++) {
    const ncclzSimPoint *p = &s->points[i];
    const ncclzSimResult *r = &out[i].r;
    char mix[96];
    ncclzSimCoderMix(r, ",", mix, sizeof mix);
    int n = p->platform.nodes * p->platform.gpus_per_node;
    fprintf(f, "%-13s %5d %4d %8.4g %11llu %8s %-5s %12.2f %9.3f %9.3f %7.3f %-24s %s(%d)", ncclzCollectiveName(p->options.coll),
            p->platform.nodes, p->platform.gpus_per_node, p->platform.nic_gbps, (unsigned long long)p->options.bytes,
            ncclzSimCompressName(p->options.compress), ncclzAlgorithmName(r->algorithm), r->time_us, ncclzSimAlgBw(p->options.bytes, r->time_us),
            ncclzSimBusBw(p->options.coll, n, p->options.bytes, r->time_us), out[i].speedup, mix,
            ncclzSimFidelityName(r->fidelity), r->actors);
    if (out[i].measured_us > 0)
      fprintf(f, " measured %.2f (%+.1f%%)", out[i].measured_us, 100.0 * (r->time_us / out[i].measured_us - 1.0));
    fputc('\n', f);
  }
  double med = median_error(s, out);
  if (med >= 0) fprintf(f, "# median |error| against measurement: %.1f%%\n", 100.0 * med);
}

static cJSON *point_json(const ncclzSimPoint *p, const point_out *o) {
  const ncclzSimResult *r = &o->r;
  int n = p->platform.nodes * p->platform.gpus_per_node;
  cJSON *j = cJSON_CreateObject();
  cJSON_AddStringToObject(j, "collective", ncclzCollectiveName(p->options.coll));
  cJSON_AddNumberToObject(j, "nodes", p->platform.nodes);
  cJSON_AddNumberToObject(j, "gpus_per_node", p->platform.gpus_per_node);
  cJSON_AddNumberToObject(j, "nic_gbps", p->platform.nic_gbps);
  cJSON_AddNumberToObject(j, "bytes", (double)p->options.bytes);
  cJSON_AddStringToObject(j, "compress", ncclzSimCompressName(p->options.compress));
  cJSON_AddNumberToObject(j, "time_us", r->time_us);
  cJSON_AddNumberToObject(j, "algbw", ncclzSimAlgBw(p->options.bytes, r->time_us));
  cJSON_AddNumberToObject(j, "busbw", ncclzSimBusBw(p->options.coll, n, p->options.bytes, r->time_us));
  cJSON_AddNumberToObject(j, "speedup_vs_nccl", o->speedup);
  cJSON_AddStringToObject(j, "algorithm", ncclzAlgorithmName(r->algorithm));
  if (o->best_plain.time_us > 0) {
    cJSON_AddNumberToObject(j, "speedup_vs_best_plain", o->best_plain.time_us / r->time_us);
    cJSON_AddStringToObject(j, "best_plain_algorithm", ncclzAlgorithmName(o->best_plain.algorithm));
  }
  cJSON *mix = cJSON_AddObjectToObject(j, "coders");
  uint64_t total = 0;
  for (int c = 0; c < NCCLZ_CODER_COUNT; c++) total += r->frames[c];
  for (int c = 0; c < NCCLZ_CODER_COUNT && total; c++)
    cJSON_AddNumberToObject(mix, ncclzCoderName((ncclzCoder)c), (double)r->frames[c] / (double)total);
  cJSON_AddNumberToObject(j, "wire_ratio", r->wire_bytes > 0 ? r->raw_bytes / r->wire_bytes : 1.0);
  cJSON_AddStringToObject(j, "fidelity", ncclzSimFidelityName(r->fidelity));
  cJSON_AddStringToObject(j, "fidelity_why", r->why);
  cJSON_AddNumberToObject(j, "actors", r->actors);
  cJSON_AddNumberToObject(j, "chunks", r->nchunks);
  cJSON_AddNumberToObject(j, "wall_s", r->wall_s);
  if (o->measured_us > 0) {
    cJSON_AddNumberToObject(j, "measured_us", o->measured_us);
    cJSON_AddNumberToObject(j, "error", r->time_us / o->measured_us - 1.0);
  }
  return j;
}

static int print_json(const sim_opts *o, const ncclzSimScenario *s, const ncclzProfile *prof, const point_out *out) {
  cJSON *root = cJSON_CreateObject();
  cJSON_AddStringToObject(root, "scenario", o->scenario);
  cJSON_AddStringToObject(root, "name", s->name);
  cJSON_AddStringToObject(root, "profile", o->profile);
  cJSON_AddStringToObject(root, "device", prof->meta.device);
  double med = median_error(s, out);
  if (med >= 0) cJSON_AddNumberToObject(root, "median_abs_error", med);
  cJSON *pts = cJSON_AddArrayToObject(root, "points");
  for (size_t i = 0; i < s->npoints; i++) cJSON_AddItemToArray(pts, point_json(&s->points[i], &out[i]));
  return cli_emit_json(VERB, root);
}

static int run(const sim_opts *o, const ncclzProfile *prof, ncclzSimScenario *s) {
  point_out *out = calloc(s->npoints ? s->npoints : 1, sizeof *out);
  if (!out) return cli_runtime_error(VERB, "out of memory");
  int rc = run_points(s, prof, o->algo, out);
  const char *meas = o->measured ? o->measured : (s->measured[0] ? s->measured : NULL);
  if (rc == CLI_OK && meas) rc = load_measured(meas, s, out);
  if (rc == CLI_OK) {
    print_table(o->json ? stderr : stdout, s, out);
    if (o->json) rc = print_json(o, s, prof, out);
  }
  free(out);
  return rc;
}

int cli_sim(int argc, char **argv) {
  sim_opts o;
  int rc = parse_args(argc, argv, &o);
  if (rc < 0) return CLI_OK; /* --help */
  if (rc != CLI_OK) return rc;
  ncclzProfile *prof = malloc(sizeof *prof);
  if (!prof) return cli_runtime_error(VERB, "out of memory");
  ncclzSimScenario s;
  memset(&s, 0, sizeof s);
  if (cli_load_profile(VERB, o.profile, prof, &o.profile)) rc = CLI_USAGE;
  else if (ncclzSimScenarioLoad(o.scenario, prof, &s) != NCCLZ_OK) rc = cli_usage_error(VERB, "%s", ncclzLastError());
  else rc = run(&o, prof, &s);
  ncclzSimScenarioFree(&s);
  free(prof);
  return rc;
}
#endif
