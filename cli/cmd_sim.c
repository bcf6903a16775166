/* ncclz sim: replays the executor's schedules in SimGrid for every point of a what-if scenario and
 * prints one row per point (time, algbw, busbw, speedup over plain NCCL, coder mix). With
 * --measured (or the scenario's "measured"), it also compares each point with a measured time.
 * Without --scenario, flags describe one collective on one platform (sim_flags.c). */
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
#include "sim_flags.h"

#include <cjson/cJSON.h>
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
  const char *profile, *scenario, *measured;
  int json;
  int algo; /* --algo: the compressed points' schedule (AUTO: the fastest that runs each) */
  sim_flags flags;
} sim_opts;

static void print_help(void) {
  printf("usage: ncclz sim --nodes N [--gpus-per-node G] [--nic BW] [--rails R] [--coll C] [--size BYTES]\n"
         "                 [--data FILE [--quant SPEC] [--dims AxBxC]] [--compress MODE] [--profile P] [--json]\n"
         "       ncclz sim [--profile PROFILE.json] --scenario SCENARIO.json [--measured RESULTS.json] [--json]\n\n"
         "Replays the executor's collective schedules in SimGrid: codec time from PROFILE, wire bytes from the\n"
         "data's compression ratio, coders from REA; the fidelity (full: one actor per rank, reduced: a\n"
         "symmetric schedule's few actors: one or two nodes) is chosen per point and reported.\n\n"
         "One collective from flags, answered in one screen (plain NCCL against ncclz):\n"
         "  --nodes N          nodes (default 1 when another flag of this group is given)\n"
         "  --gpus-per-node G  GPUs (ranks) per node, default 8\n"
         "  --nic BW           per NIC and direction, with its unit: 200Gb/s, 25GB/s, 1.6Tb/s (default 400Gb/s)\n"
         "  --rails R          NICs per node, default 1\n"
         "  --coll C           allreduce (default), reducescatter, allgather, alltoall, broadcast\n"
         "  --size BYTES       nccl-tests' size: 256M, 1G (default 256M)\n"
         "  --data FILE        raw float32 (its data profile is computed: the file cut into up to 8 ranks,\n"
         "                     needs --quant) or a data profile (ncclz profile-data); default: the CESM\n"
         "                     TREFHT data profile (eb:rel=1e-4,lorenzo=3d), docs/simulator.md\n"
         "  --quant SPEC       quantizer of a raw --data file (eb:rel=1e-4, qsgd:bits=8,bucket=512, ...)\n"
         "  --dims AxBxC       shape of a raw --data file (for Lorenzo)\n"
         "  --compress MODE    auto (default: the cost model's pair of algorithm and coders), raw, fixedlen,\n"
         "                     huffman\n"
         "  --algo ALGO        the schedule of the compressed points: auto (default: for compress auto the\n"
         "                     cost model's (algorithm, coder) pair, for a forced coder its fastest schedule),\n"
         "                     ring, tree, rhd or hier (compress auto: REA's coders on it); plain NCCL is\n"
         "                     NCCL's own choice of ring or tree (docs/simulator.md)\n\n"
         "A scenario (docs/scenarios.md), one row per point:\n"
         "  --scenario FILE    the what-if scenario\n"
         "  --measured FILE    JSON with points[] {collective, nodes, gpus_per_node, bytes, compress, time_us\n"
         "                     [, nic_gbps]}: each matching point gets measured_us and error\n\n"
         "  --profile FILE     default: a scenario's own \"profile\" (relative to it), else $NCCLZ_PROFILE,\n"
         "                     else the built-in H200 profile\n"
         "  --json             one JSON object on stdout (the human text goes to stderr); scenario: points[]\n"
         "                     with collective, nodes, gpus_per_node, nic_gbps (GB/s), nic_GBps, nic_Gbps,\n"
         "                     bytes, compress, algorithm, time_us, algbw, busbw (GB/s), busbw_GBps,\n"
         "                     speedup_vs_nccl, speedup_vs_best_plain, best_plain_algorithm, coders,\n"
         "                     wire_ratio, fidelity, actors, wall_s\n"
         "Exit status: 0 ok, 2 bad input or usage, 1 runtime failure.\n");
}

enum { O_NODES = 256, O_GPN, O_NIC, O_RAILS, O_COLL, O_SIZE, O_DATA, O_QUANT, O_DIMS, O_COMPRESS };

/* The flags of the one-collective what-if; 0, or -1 when c is none of them. */
static int flag_option(int c, sim_opts *o) {
  sim_flags *f = &o->flags;
  switch (c) {
  case O_NODES: return cli_parse_int(VERB, "--nodes", optarg, 1, 1 << 20, &f->nodes) ? 2 : 0;
  case O_GPN: return cli_parse_int(VERB, "--gpus-per-node", optarg, 1, 1024, &f->gpus_per_node) ? 2 : 0;
  case O_RAILS: return cli_parse_int(VERB, "--rails", optarg, 1, 1024, &f->rails) ? 2 : 0;
  case O_NIC: f->nic = optarg; return 0;
  case O_COLL: f->coll = optarg; return 0;
  case O_SIZE: f->size = optarg; return 0;
  case O_DATA: f->data = optarg; return 0;
  case O_QUANT: f->quant = optarg; return 0;
  case O_DIMS: f->dims = optarg; return 0;
  case O_COMPRESS: f->compress = optarg; return 0;
  default: return -1;
  }
}

static int parse_args(int argc, char **argv, sim_opts *o) {
  static const struct option longopts[] = {{"profile", required_argument, 0, 'p'},
                                           {"scenario", required_argument, 0, 's'},
                                           {"measured", required_argument, 0, 'm'},
                                           {"json", no_argument, 0, 'j'},
                                           {"algo", required_argument, 0, 'a'},
                                           {"help", no_argument, 0, 'h'},
                                           {"nodes", required_argument, 0, O_NODES},
                                           {"gpus-per-node", required_argument, 0, O_GPN},
                                           {"nic", required_argument, 0, O_NIC},
                                           {"rails", required_argument, 0, O_RAILS},
                                           {"coll", required_argument, 0, O_COLL},
                                           {"size", required_argument, 0, O_SIZE},
                                           {"data", required_argument, 0, O_DATA},
                                           {"quant", required_argument, 0, O_QUANT},
                                           {"dims", required_argument, 0, O_DIMS},
                                           {"compress", required_argument, 0, O_COMPRESS},
                                           {0, 0, 0, 0}};
  memset(o, 0, sizeof *o);
  sim_flags *f = &o->flags;
  f->nodes = 1, f->gpus_per_node = 8, f->rails = 1, f->coll = "allreduce", f->size = "256M", f->compress = "auto";
  int c, r;
  optind = 1;
  while ((c = cli_getopt(argc, argv, "h", longopts)) != -1) {
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
    case '?':
    case ':': return cli_option_error(VERB, c, argv);
    default:
      if ((r = flag_option(c, o)) < 0) return CLI_USAGE;
      if (r) return CLI_USAGE;
      f->given = 1;
    }
  }
  if (optind < argc) return cli_usage_error(VERB, "unexpected argument '%s'", argv[optind]);
  if (o->scenario && f->given) return cli_usage_error(VERB, "--scenario or the platform flags (--nodes, --nic, ...), not both");
  if (o->measured && f->given) return cli_usage_error(VERB, "--measured needs --scenario");
  if (!o->scenario && !f->given)
    return cli_usage_error(VERB, "--scenario SCENARIO.json or --nodes N [--nic BW --coll C --size BYTES ...] is required");
  return CLI_OK;
}

/* One evaluated point: the what-if runner's result and a measurement to compare with. */
typedef struct {
  ncclzSimPointResult r;
  double measured_us; /* < 0: none */
} point_out;

/* --algo applies to the compressed points; plain points stay NCCL's own choice. */
static void apply_algo(ncclzSimScenario *s, int algo) {
  for (size_t i = 0; algo > 0 && i < s->npoints; i++)
    if (s->points[i].options.compress != NCCLZ_SIM_OFF) s->points[i].options.algorithm = (ncclzAlgorithm)algo;
}

static int run_points(const ncclzSimScenario *s, const ncclzProfile *prof, point_out *out) {
  ncclzSimPointResult *res = calloc(s->npoints ? s->npoints : 1, sizeof *res);
  if (!res) return cli_runtime_error(VERB, "out of memory");
  ncclzStatus st = ncclzSimScenarioRun(prof, s, res, NULL, NULL);
  for (size_t i = 0; i < s->npoints; i++) {
    out[i].r = res[i];
    out[i].measured_us = -1.0;
  }
  free(res);
  if (st == NCCLZ_ERR_ARG) return cli_usage_error(VERB, "%s", ncclzLastError());
  if (st != NCCLZ_OK) return cli_runtime_error(VERB, "%s", ncclzLastError());
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
  /* compared as doubles: a cast of an out-of-range number would be undefined */
  if (!cJSON_IsNumber(n) || n->valuedouble != (double)p->platform.nodes) return 0;
  if (!cJSON_IsNumber(g) || g->valuedouble != (double)p->platform.gpus_per_node) return 0;
  if (!cJSON_IsNumber(b) || b->valuedouble != (double)p->options.bytes) return 0;
  if (cJSON_IsNumber(w) && fabs(w->valuedouble - p->platform.nic_gbps) > 0.01 * p->platform.nic_gbps) return 0;
  return 1;
}

static int load_measured(const char *path, const ncclzSimScenario *s, point_out *out) {
  size_t len;
  char *text = cli_read_file(VERB, path, &len);
  if (!text) return CLI_USAGE;
  cJSON *root;
  ncclzStatus js = ncclzJsonParse(path, text, len, &root);
  free(text);
  if (js != NCCLZ_OK) return cli_usage_error(VERB, "measured points: %s", ncclzLastError());
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
    if (out[i].measured_us > 0) e[n++] = fabs(out[i].r.r.time_us - out[i].measured_us) / out[i].measured_us;
  double med = n ? ncclzMedian(e, n) : -1.0;
  free(e);
  return med;
}

/* ----------------------------------------------------------------- output */

static void print_table(FILE *f, const ncclzSimScenario *s, const point_out *out) {
  fprintf(f, "# scenario %s: %zu points\n", s->name, s->npoints);
  fprintf(f, "%-13s %5s %4s %8s %11s %8s %-5s %12s %10s %10s %7s %-24s %s\n", "collective", "nodes", "gpn", "nic_GB/s",
          "bytes", "compress", "algo", "time_us", "algbw_GB/s", "busbw_GB/s", "speedup", "coders", "fidelity");
  for (size_t i = 0; i < s->npoints; i++) {
    const ncclzSimPoint *p = &s->points[i];
    const ncclzSimResult *r = &out[i].r.r;
    char mix[96];
    ncclzSimCoderMix(r, ",", mix, sizeof mix);
    int n = p->platform.nodes * p->platform.gpus_per_node;
    fprintf(f, "%-13s %5d %4d %8.4g %11llu %8s %-5s %12.2f %10.3f %10.3f %7.3f %-24s %s(%d)", ncclzCollectiveName(p->options.coll),
            p->platform.nodes, p->platform.gpus_per_node, p->platform.nic_gbps, (unsigned long long)p->options.bytes,
            ncclzSimCompressName(p->options.compress), ncclzAlgorithmName(r->algorithm), r->time_us, ncclzSimAlgBw(p->options.bytes, r->time_us),
            ncclzSimBusBw(p->options.coll, n, p->options.bytes, r->time_us), out[i].r.speedup, mix,
            ncclzSimFidelityName(r->fidelity), r->actors);
    if (out[i].measured_us > 0)
      fprintf(f, " measured %.2f (%+.1f%%)", out[i].measured_us, 100.0 * (r->time_us / out[i].measured_us - 1.0));
    fputc('\n', f);
  }
  double med = median_error(s, out);
  if (med >= 0) fprintf(f, "# median |error| against measurement: %.1f%%\n", 100.0 * med);
}

static cJSON *point_json(const ncclzSimPoint *p, const point_out *o) {
  const ncclzSimResult *r = &o->r.r;
  cJSON *j = cJSON_CreateObject();
  cJSON_AddStringToObject(j, "collective", ncclzCollectiveName(p->options.coll));
  cJSON_AddNumberToObject(j, "nodes", p->platform.nodes);
  cJSON_AddNumberToObject(j, "gpus_per_node", p->platform.gpus_per_node);
  cJSON_AddNumberToObject(j, "nic_gbps", p->platform.nic_gbps); /* GB/s: the CLI contract's name */
  cJSON_AddNumberToObject(j, "nic_GBps", p->platform.nic_gbps);
  cJSON_AddNumberToObject(j, "nic_Gbps", 8.0 * p->platform.nic_gbps);
  cJSON_AddNumberToObject(j, "bytes", (double)p->options.bytes);
  cJSON_AddStringToObject(j, "compress", ncclzSimCompressName(p->options.compress));
  cJSON_AddNumberToObject(j, "time_us", r->time_us);
  cJSON_AddNumberToObject(j, "algbw", o->r.algbw);
  cJSON_AddNumberToObject(j, "algbw_GBps", o->r.algbw);
  cJSON_AddNumberToObject(j, "busbw", o->r.busbw);
  cJSON_AddNumberToObject(j, "busbw_GBps", o->r.busbw);
  cJSON_AddNumberToObject(j, "speedup_vs_nccl", o->r.speedup);
  cJSON_AddStringToObject(j, "algorithm", ncclzAlgorithmName(r->algorithm));
  if (r->choice >= 0) /* auto: the cost model's pair, replayed */
    cJSON_AddStringToObject(j, "choice_coder", ncclzChoiceCoderName((ncclzChoiceCoder)r->choice));
  if (r->predicted_us > 0) cJSON_AddNumberToObject(j, "predicted_us", r->predicted_us);
  if (o->r.best_plain.time_us > 0) {
    cJSON_AddNumberToObject(j, "speedup_vs_best_plain", o->r.best_plain.time_us / r->time_us);
    cJSON_AddStringToObject(j, "best_plain_algorithm", ncclzAlgorithmName(o->r.best_plain.algorithm));
  }
  cJSON *mix = cJSON_AddObjectToObject(j, "coders");
  for (int c = 0; c < NCCLZ_CODER_COUNT && ncclzSimFramesSent(r); c++)
    cJSON_AddNumberToObject(mix, ncclzCoderName((ncclzCoder)c), ncclzSimCoderShare(r, (ncclzCoder)c));
  cJSON_AddNumberToObject(j, "wire_ratio", r->wire_bytes > 0 ? r->raw_bytes / r->wire_bytes : 1.0);
  cJSON_AddStringToObject(j, "fidelity", ncclzSimFidelityName(r->fidelity));
  cJSON_AddStringToObject(j, "fidelity_why", r->why);
  cJSON_AddBoolToObject(j, "approximate", r->approximate);
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

static void print_warnings(const ncclzSimScenario *s) {
  char buf[sizeof s->warnings];
  snprintf(buf, sizeof buf, "%s", s->warnings);
  for (char *save = NULL, *line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
    fprintf(stderr, "ncclz sim: warning: %s\n", line);
}

static int run(sim_opts *o, const ncclzProfile *prof, ncclzSimScenario *s) {
  point_out *out = calloc(s->npoints ? s->npoints : 1, sizeof *out);
  if (!out) return cli_runtime_error(VERB, "out of memory");
  print_warnings(s);
  int rc = run_points(s, prof, out);
  const char *meas = o->measured ? o->measured : (s->measured[0] ? s->measured : NULL);
  if (rc == CLI_OK && meas) rc = load_measured(meas, s, out);
  if (rc == CLI_OK && o->flags.given) {
    ncclzSimPointResult res[4];
    for (size_t i = 0; i < s->npoints && i < 4; i++) res[i] = out[i].r;
    rc = sim_flags_answer(&o->flags, s, res, o->profile, prof, o->json);
  } else if (rc == CLI_OK) {
    print_table(o->json ? stderr : stdout, s, out);
    if (o->json) rc = print_json(o, s, prof, out);
  }
  free(out);
  return rc;
}

/* --scenario without --profile: the profile the scenario names (relative to it), as `ncclz run`
 * takes it; nonzero after its one-line error. */
static int scenario_profile(sim_opts *o, char *buf, size_t cap) {
  if (!o->scenario || o->profile || o->flags.given) return 0;
  if (ncclzSimScenarioProfile(o->scenario, buf, cap) != NCCLZ_OK) return cli_usage_error(VERB, "%s", ncclzLastError());
  if (buf[0]) o->profile = buf;
  return 0;
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
  char named[1200];
  if (scenario_profile(&o, named, sizeof named) || cli_load_profile(VERB, o.profile, prof, &o.profile)) rc = CLI_USAGE;
  else if (o.flags.given) rc = sim_flags_scenario(&o.flags, prof, &s);
  else if (ncclzSimScenarioLoad(o.scenario, prof, &s) != NCCLZ_OK) rc = cli_usage_error(VERB, "%s", ncclzLastError());
  if (rc == CLI_OK) {
    apply_algo(&s, o.algo);
    rc = run(&o, prof, &s);
  }
  ncclzSimScenarioFree(&s);
  free(prof);
  return rc;
}
#endif
