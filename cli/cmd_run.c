/* ncclz run: runs a whole scenario (what-if, tune, validate, measure or cr-table) and writes a
 * self-contained report directory. The work is in report/ (ncclzRunScenario); this file is the
 * command line around it. */
#include "cli.h"
#include "ncclz/report.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define VERB "run"

static void print_help(void) {
  printf("usage: ncclz run SCENARIO.json --out DIR [--profile PROFILE.json] [--data DIR]\n\n"
         "Runs a scenario (docs/scenarios.md) and writes a report (docs/reports.md):\n"
         "  DIR/index.html    one self-contained page, plots inline as SVG (rendered by gnuplot)\n"
         "  DIR/results.json  every number the page shows\n"
         "  DIR/*.csv         one file per table;  DIR/*.svg  one file per plot\n\n"
         "Kinds (the scenario's \"kind\"):\n"
         "  what-if   SimGrid replay over nodes x GPUs/node x NIC bandwidth x size x collective x compress\n"
         "  tune      sweep REA thresholds and frame size over a workload mix and platforms; regret vs an oracle\n"
         "  validate  simulated against measured (`ncclz perf --json` files), median error\n"
         "  measure   GPU runs through the executor (needs a CUDA build and GPUs), then as validate\n"
         "  cr-table  CR of each coder on real data, in the paper's Table I layout\n"
         "  codec     CR of each coder file by file, from `ncclz codec --json` lines (scripts/codec_report.sh)\n\n"
         "  --out DIR              the report directory (created; its files are replaced only when the\n"
         "                         report is complete; one run at a time: docs/reports.md)\n"
         "  --profile PROFILE.json  instead of the scenario's \"profile\" (without either: $NCCLZ_PROFILE,\n"
         "                         else the built-in H200 profile)\n"
         "  --data DIR             cr-table: read the full data set from DIR (scientific/ and gradients/,\n"
         "                         or the files side by side) instead of the scenario's test slices\n"
         "Progress goes to stderr when it is a terminal. NCCLZ_GNUPLOT names the gnuplot program.\n"
         "Exit status: 0 ok, 2 bad scenario or usage (the message names the field), 1 runtime failure.\n");
}

static int parse_args(int argc, char **argv, ncclzRunOptions *o) {
  static const struct option longopts[] = {{"out", required_argument, 0, 'o'},
                                           {"profile", required_argument, 0, 'p'},
                                           {"data", required_argument, 0, 'd'},
                                           {"help", no_argument, 0, 'h'},
                                           {0, 0, 0, 0}};
  memset(o, 0, sizeof *o);
  int c;
  optind = 1;
  while ((c = cli_getopt(argc, argv, "ho:", longopts)) != -1) {
    switch (c) {
    case 'o': o->out_dir = optarg; break;
    case 'p': o->profile = optarg; break;
    case 'd': o->data_dir = optarg; break;
    case 'h': print_help(); return -1;
    default: return cli_option_error(VERB, c, argv);
    }
  }
  if (optind >= argc) return cli_usage_error(VERB, "SCENARIO.json is required (see --help)");
  o->scenario = argv[optind++];
  if (optind < argc) return cli_usage_error(VERB, "unexpected argument '%s'", argv[optind]);
  if (!o->out_dir) return cli_usage_error(VERB, "--out DIR is required");
  if (!*o->out_dir) return cli_usage_error(VERB, "--out: the report directory is an empty name");
  return CLI_OK;
}

/* This binary, for the measure kind's `ncclz perf` runs (Linux: /proc/self/exe). */
static const char *self_path(void) {
  static char path[4096];
  ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
  if (n <= 0) return "ncclz";
  path[n] = 0;
  return path;
}

int cli_run(int argc, char **argv) {
  ncclzRunOptions o;
  int rc = parse_args(argc, argv, &o);
  if (rc < 0) return CLI_OK; /* --help */
  if (rc != CLI_OK) return rc;
  o.ncclz = self_path();
  ncclzStatus st = ncclzRunScenario(&o);
  if (st == NCCLZ_ERR_ARG) return cli_usage_error(VERB, "%s: %s", o.scenario, ncclzLastError());
  if (st != NCCLZ_OK) return cli_runtime_error(VERB, "%s", ncclzLastError());
  fprintf(stderr, "ncclz run: wrote %s/index.html, results.json, CSV and SVG files\n", o.out_dir);
  return CLI_OK;
}
