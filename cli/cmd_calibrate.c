/* ncclz calibrate: measure codec, transport and overlap costs on the GPUs and write a calibration
 * profile (model/PROFILE.md), or fit and write one from a points document (--from-points).
 *
 * Every NCCL path needs its own environment before NCCL initializes, so each measurement runs in
 * a child process: this binary again (/proc/self/exe) with the path's NCCL_* variables and the
 * internal option --child-codecs or --child-path NAME, writing a points document to a temporary
 * file. The parent merges the documents, fits them (calibrate/fit.c) and writes the profile
 * (calibrate/write_profile.c). --codecs-only measures the codec curves alone and takes every other
 * point from a base points document (calibrate/codecs_only.c). docs/calibrate.md tells the whole story. */
#include "cli.h"
#include "ncclz/calibrate.h"
#include "ncclz/model.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define VERB "calibrate"

static void usage(FILE *f) {
  fprintf(f,
          "usage: ncclz calibrate [-g NGPUS] [--paths nvlink,shm,socket] [--sweeps N] [--quick] --out PROFILE.json\n"
          "       ncclz calibrate --from-points POINTS.json --out PROFILE.json\n"
          "       ncclz calibrate --codecs-only --base POINTS.json [-g 1] [--quick] [--from-points FRESH.json]\n"
          "                       --out PROFILE.json [--points-out POINTS.json]\n"
          "       ncclz calibrate --check PROFILE.json [-g N] [--paths LIST] [--sweeps N] [--quick]\n"
          "                       [--from-points FRESH.json] [--points-out FRESH.json] [--out CHECK.json]\n"
          "\n"
          "Measures on the GPUs, fits and writes a calibration profile (schema v1, model/PROFILE.md):\n"
          "  codec curves   encode/decode time per frame, 64 KiB..64 MiB, per coder (fixedlen, huffman)\n"
          "                 and data class (qsgd gradients, eb_lorenzo smooth field, none: random floats)\n"
          "  transports     send/recv alpha and beta per path, plain NCCL curves of the five collectives\n"
          "                 1 KiB..1 GiB (nvlink: default NCCL; shm: NCCL_P2P_DISABLE=1; socket: NET over lo;\n"
          "                 socket1x1, socket4x4: the socket path with 1x1 / 4x4 socket threads)\n"
          "  overlap        lambda_enc/lambda_dec: exposed fraction of codec time in executor traces\n"
          "Every curve is fitted piecewise (us = alpha + bytes/beta per size segment, the fewest segments within\n"
          "5%%); the fits and their residuals go under the profile's \"fit\" key, the plain collective curves\n"
          "under \"collectives\".\n"
          "\n"
          "  -g N                  GPUs (default 2; transports need 2)\n"
          "  --paths LIST          comma-separated paths (default nvlink,shm,socket)\n"
          "  --quick               fewer sizes and repetitions (a minute or two)\n"
          "  --out FILE            the profile to write (required)\n"
          "  --points-out FILE     also keep the measured points document\n"
          "  --from-points FILE    no measurement: fit and write from a points document\n"
          "  --codecs-only         measure only the codec curves, on one GPU; send/recv, the collectives and\n"
          "                        the overlap come unchanged from --base (what 1 GPU cannot measure);\n"
          "                        --points-out keeps the merged points, whose metadata says which part came\n"
          "                        from where; --from-points FRESH takes the codec curves of a saved run\n"
          "  --base POINTS         the points document of a full calibration that --codecs-only keeps from\n"
          "  --quiet               no residual table on stderr\n"
          "  --check PROFILE       no profile written: measure the five plain collectives again (a fresh run,\n"
          "                        1 MiB..256 MiB x4 plus 1.5..384 MiB x4, between the calibration's points,\n"
          "                        N sweeps) and compare with PROFILE's curves: table on stdout, median and\n"
          "                        max |error| against the targets (8%%, 20%%) and the sweeps' spread;\n"
          "                        --out writes it as JSON; --from-points compares a saved fresh run\n"
          "  --sweeps N            whole size sweeps per path, whose median is fitted or checked\n"
          "                        (default 3; --quick: 1; at most 16)\n"
          "Exit status: 0 ok, 2 bad input or usage, 1 runtime failure (no GPU, no CUDA build).\n");
}

typedef struct {
  int ngpus, quick, quiet;
  const char *paths, *out, *points_out, *from_points, *child_path;
  int child_codecs;
  const char *check; /* the profile to check */
  int sweeps; /* 0: the default */
  int codecs_only;
  const char *base;  /* --base: its file name */
  char *base_text;   /* ... and its text, read and checked before anything is measured */
  size_t base_len;
} cal_opts;

/* Fit a points document and write the profile. */
static int fit_and_write(const cal_opts *o, const char *points, size_t len) {
  ncclzCalResult *r = malloc(sizeof *r);
  if (!r) return cli_runtime_error(VERB, "out of memory");
  if (ncclzCalFitPoints(points, len, r)) {
    free(r);
    return cli_usage_error(VERB, "%s", ncclzLastError());
  }
  char *text = ncclzCalProfileJson(r);
  if (!text) {
    free(r);
    return cli_usage_error(VERB, "%s", ncclzLastError());
  }
  int rc = cli_write_text(VERB, o->out, text);
  if (!rc && !o->quiet) {
    ncclzCalReport(r, stderr);
    fprintf(stderr, "wrote %s\n", o->out);
  }
  free(text);
  free(r);
  return rc;
}

/* --check: compare a fresh measurement with the profile's plain-collective curves. */
static int check_and_report(const cal_opts *o, const char *points, size_t len) {
  ncclzProfile *prof = malloc(sizeof *prof);
  ncclzCalCheck *c = malloc(sizeof *c);
  int rc = CLI_OK;
  if (!prof || !c) {
    rc = cli_runtime_error(VERB, "out of memory");
  } else if (ncclzProfileLoad(o->check, prof)) {
    rc = cli_usage_error(VERB, "%s", ncclzLastError());
  } else if (!prof->n_plain) {
    rc = cli_usage_error(VERB, "profile %s has no \"collectives\" curves to check (calibrate it again)", o->check);
  } else if (ncclzCalCheckPoints(prof, points, len, c)) {
    rc = cli_usage_error(VERB, "%s", ncclzLastError());
  } else {
    printf("# ncclz calibrate --check %s (profile: %s, %s, NCCL %s, %u ranks)\n", o->check, prof->meta.device,
           prof->meta.date, prof->meta.nccl, prof->plain_ranks);
    ncclzCalCheckReport(c, stdout);
    if (o->out) {
      char *text = ncclzCalCheckJson(c, prof);
      rc = text ? cli_write_text(VERB, o->out, text) : cli_runtime_error(VERB, "%s", ncclzLastError());
      free(text);
    }
  }
  free(prof);
  free(c);
  return rc;
}

/* A measured or saved points document (doc_name in messages) to its end: with --codecs-only its
 * codec curves joined to the base's other points, then --points-out, then the check or the profile. */
static int finish_points(const cal_opts *o, const char *doc, size_t len, const char *doc_name) {
  char *merged = NULL;
  if (o->codecs_only) {
    merged = ncclzCalCodecsOnlyMerge(o->base_text, o->base_len, o->base, doc, len, doc_name);
    if (!merged) return cli_usage_error(VERB, "%s", ncclzLastError());
    doc = merged;
    len = strlen(merged);
  }
  int rc = o->points_out ? cli_write_text(VERB, o->points_out, doc) : CLI_OK;
  if (!rc) rc = o->check ? check_and_report(o, doc, len) : fit_and_write(o, doc, len);
  free(merged);
  return rc;
}

#ifdef NCCLZ_HAVE_CALIBRATE_GPU
/* Child side: one measurement, its points document to --points-out. */
static int run_child(const cal_opts *o) {
  ncclzCalMeasureOpts mo = {o->ngpus, o->quick, isatty(2), o->check != NULL, o->sweeps, o->codecs_only};
  char *doc;
  if (o->child_codecs) {
    doc = ncclzCalMeasureCodecs(&mo);
  } else {
    int p = ncclzCalPathFromName(o->child_path);
    if (p < 0) return cli_usage_error(VERB, "--child-path %s: unknown path", o->child_path);
    doc = ncclzCalMeasurePath(&mo, (ncclzCalPath)p);
  }
  if (!doc) return cli_runtime_error(VERB, "%s", ncclzLastError());
  int rc = cli_write_text(VERB, o->points_out, doc);
  free(doc);
  return rc;
}

/* Runs this binary as a child with the path's environment; returns its points document. */
static char *spawn(const cal_opts *o, const char *what, int path, const char *tmp, int *rc) {
  char g[16], rep[16];
  snprintf(g, sizeof g, "%d", o->ngpus);
  snprintf(rep, sizeof rep, "%d", o->sweeps);
  const char *argv[20];
  int a = 0;
  argv[a++] = "ncclz";
  argv[a++] = "calibrate";
  argv[a++] = "-g";
  argv[a++] = g;
  if (path < 0) {
    argv[a++] = "--child-codecs";
  } else {
    argv[a++] = "--child-path";
    argv[a++] = ncclzCalPathName((ncclzCalPath)path);
  }
  if (o->quick) argv[a++] = "--quick";
  if (o->codecs_only) argv[a++] = "--codecs-only";
  if (o->check) {
    argv[a++] = "--check";
    argv[a++] = o->check;
  }
  argv[a++] = "--sweeps";
  argv[a++] = rep;
  argv[a++] = "--points-out";
  argv[a++] = tmp;
  argv[a++] = "--out";
  argv[a++] = "/dev/null";
  argv[a] = NULL;
  fflush(NULL);
  pid_t pid = fork();
  if (pid < 0) {
    *rc = cli_runtime_error(VERB, "fork: %s", strerror(errno));
    return NULL;
  }
  if (pid == 0) {
    for (const char *const *e = ncclzCalPathEnv(path < 0 ? NCCLZ_CAL_NVLINK : (ncclzCalPath)path); *e; e++)
      putenv((char *)*e);
    execv("/proc/self/exe", (char *const *)argv);
    fprintf(stderr, "ncclz %s: exec /proc/self/exe: %s\n", VERB, strerror(errno));
    _exit(CLI_RUNTIME);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    *rc = cli_runtime_error(VERB, "%s: measurement failed (child exit %d)", what,
                            WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    return NULL;
  }
  size_t len = 0;
  char *doc = cli_read_file(VERB, tmp, &len);
  unlink(tmp);
  if (!doc) *rc = CLI_RUNTIME;
  return doc;
}

/* Logs a finished step and its time since *ts on stderr, always (not progress: a slow or killed
 * run's log needs to say where the time went); *ts becomes now. */
static void step_time(const char *name, double *ts) {
  double now = ncclzNowSeconds();
  fprintf(stderr, "# calibrate: %s measured in %.0f s\n", name, now - *ts);
  *ts = now;
}

static int run_measure(const cal_opts *o, const int *paths, int npaths) {
  int ndev = ncclzCalGpuCount();
  if (ndev < 1) return cli_runtime_error(VERB, "no CUDA GPU on this machine");
  if (ndev < o->ngpus) return cli_runtime_error(VERB, "-g %d: this machine has %d GPUs", o->ngpus, ndev);
  if (o->ngpus < 2 && !o->codecs_only) return cli_runtime_error(VERB, "-g %d: transports need 2 GPUs", o->ngpus);
  char tmpl[] = "/tmp/ncclz-calibrate-XXXXXX";
  if (!mkdtemp(tmpl)) return cli_runtime_error(VERB, "mkdtemp: %s", strerror(errno));
  char tmp[64];
  double t0 = ncclzNowSeconds();
  int rc = CLI_OK;
  char *doc = NULL;
  double ts = ncclzNowSeconds();
  if (o->check) {
    doc = strdup("{\"version\": 1, \"collectives\": []}");
  } else {
    snprintf(tmp, sizeof tmp, "%s/codecs.json", tmpl);
    if (isatty(2)) fprintf(stderr, "# calibrate: codec curves\n");
    doc = spawn(o, "codecs", -1, tmp, &rc);
    step_time("codecs", &ts);
  }
  for (int i = 0; doc && i < npaths; i++) {
    if (isatty(2)) fprintf(stderr, "# calibrate: path %s\n", ncclzCalPathName((ncclzCalPath)paths[i]));
    snprintf(tmp, sizeof tmp, "%s/path%d.json", tmpl, i);
    char *part = spawn(o, ncclzCalPathName((ncclzCalPath)paths[i]), paths[i], tmp, &rc);
    step_time(ncclzCalPathName((ncclzCalPath)paths[i]), &ts);
    if (!part) {
      free(doc);
      doc = NULL;
      break;
    }
    char *merged = ncclzCalPointsMerge(doc, part);
    free(doc);
    free(part);
    doc = merged;
    if (!doc) rc = cli_runtime_error(VERB, "%s", ncclzLastError());
  }
  rmdir(tmpl);
  if (!doc) return rc ? rc : CLI_RUNTIME;
  fprintf(stderr, "# calibrate: measured in %.0f s\n", ncclzNowSeconds() - t0);
  rc = finish_points(o, doc, strlen(doc), "measured");
  free(doc);
  return rc;
}
#endif

/* --paths LIST into paths[*n]; CLI_USAGE after a one-line error. */
static int parse_paths(const char *list, int *paths, int *n) {
  char buf[256];
  *n = 0;
  if (strlen(list) >= sizeof buf) return cli_usage_error(VERB, "--paths: too long");
  snprintf(buf, sizeof buf, "%s", list);
  for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
    int p = ncclzCalPathFromName(tok);
    if (p < 0) return cli_usage_error(VERB, "--paths: unknown path '%s' (nvlink, shm, socket, socket1x1, socket4x4)", tok);
    for (int i = 0; i < *n; i++)
      if (paths[i] == p) return cli_usage_error(VERB, "--paths: '%s' twice", tok);
    paths[(*n)++] = p;
  }
  return *n ? CLI_OK : cli_usage_error(VERB, "--paths: empty");
}

/* --codecs-only and --base: what goes with them, then the base read and checked (before any
 * measurement: a bad base costs no GPU time); *_given: the option was on the line. */
static int codecs_only_setup(cal_opts *o, int g_given, int paths_given, int sweeps_given) {
  if (o->base && !o->codecs_only) return cli_usage_error(VERB, "--base goes with --codecs-only");
  if (!o->codecs_only) return CLI_OK;
  if (!o->base)
    return cli_usage_error(VERB, "--codecs-only needs --base POINTS.json (the points whose transports and overlap are kept)");
  if (o->check) return cli_usage_error(VERB, "--codecs-only and --check exclude each other");
  if (paths_given || sweeps_given) return cli_usage_error(VERB, "--codecs-only measures no path: --paths and --sweeps do not apply");
  if (g_given && o->ngpus != 1) return cli_usage_error(VERB, "-g %d: --codecs-only measures on one GPU (-g 1)", o->ngpus);
  o->ngpus = 1;
  o->base_text = ncclzReadFile("--base", o->base, &o->base_len);
  if (!o->base_text) return cli_usage_error(VERB, "%s", ncclzLastError());
  if (ncclzCalCodecsOnlyBase(o->base_text, o->base_len, o->base)) return cli_usage_error(VERB, "%s", ncclzLastError());
  return CLI_OK;
}

/* Everything after the options: a saved document, a child's measurement or the whole run. */
static int run_mode(const cal_opts *o, const int *paths, int npaths) {
  if (o->from_points) {
    size_t len = 0;
    char *doc = cli_read_file(VERB, o->from_points, &len);
    if (!doc) return CLI_USAGE;
    int rc = finish_points(o, doc, len, o->from_points);
    free(doc);
    return rc;
  }
#ifdef NCCLZ_HAVE_CALIBRATE_GPU
  if (o->child_codecs || o->child_path) {
    if (!o->points_out) return cli_usage_error(VERB, "internal child mode needs --points-out");
    return run_child(o);
  }
  return run_measure(o, paths, o->codecs_only ? 0 : npaths);
#else
  (void)paths, (void)npaths;
  return cli_runtime_error(VERB, "this build has no CUDA/NCCL: it cannot measure (use --from-points FILE)");
#endif
}

int cli_calibrate(int argc, char **argv) {
  enum {
    O_PATHS = 256, O_QUICK, O_OUT, O_POINTS_OUT, O_FROM, O_QUIET, O_CHILD_CODECS, O_CHILD_PATH, O_CHECK, O_SWEEPS,
    O_CODECS_ONLY, O_BASE
  };
  static const struct option lo[] = {{"paths", required_argument, 0, O_PATHS},
                                     {"quick", no_argument, 0, O_QUICK},
                                     {"out", required_argument, 0, O_OUT},
                                     {"points-out", required_argument, 0, O_POINTS_OUT},
                                     {"from-points", required_argument, 0, O_FROM},
                                     {"quiet", no_argument, 0, O_QUIET},
                                     {"child-codecs", no_argument, 0, O_CHILD_CODECS},
                                     {"child-path", required_argument, 0, O_CHILD_PATH},
                                     {"check", required_argument, 0, O_CHECK},
                                     {"sweeps", required_argument, 0, O_SWEEPS},
                                     {"codecs-only", no_argument, 0, O_CODECS_ONLY},
                                     {"base", required_argument, 0, O_BASE},
                                     {"help", no_argument, 0, 'h'},
                                     {0, 0, 0, 0}};
  cal_opts o = {2, 0, 0, "nvlink,shm,socket", NULL, NULL, NULL, NULL, 0, NULL, 0, 0, NULL, NULL, 0};
  int c, g_given = 0, paths_given = 0;
  optind = 1;
  while ((c = cli_getopt(argc, argv, "g:h", lo)) != -1) {
    switch (c) {
    case 'g':
      if (cli_parse_int(VERB, "-g", optarg, 1, 64, &o.ngpus) != CLI_OK) return CLI_USAGE;
      g_given = 1;
      break;
    case O_PATHS: o.paths = optarg, paths_given = 1; break;
    case O_QUICK: o.quick = 1; break;
    case O_OUT: o.out = optarg; break;
    case O_POINTS_OUT: o.points_out = optarg; break;
    case O_FROM: o.from_points = optarg; break;
    case O_QUIET: o.quiet = 1; break;
    case O_CHILD_CODECS: o.child_codecs = 1; break;
    case O_CHILD_PATH: o.child_path = optarg; break;
    case O_CHECK: o.check = optarg; break;
    case O_SWEEPS:
      if (cli_parse_int(VERB, "--sweeps", optarg, 1, NCCLZ_CAL_CHECK_MAX_REPEAT, &o.sweeps) != CLI_OK) return CLI_USAGE;
      break;
    case O_CODECS_ONLY: o.codecs_only = 1; break;
    case O_BASE: o.base = optarg; break;
    case 'h': usage(stdout); return CLI_OK;
    default: return cli_option_error(VERB, c, argv);
    }
  }
  if (optind < argc) return cli_usage_error(VERB, "unexpected argument '%s'", argv[optind]);
  if (!o.out && !o.check) return cli_usage_error(VERB, "--out PROFILE.json is required");
  int paths[NCCLZ_CAL_PATH_COUNT], npaths;
  if (parse_paths(o.paths, paths, &npaths)) return CLI_USAGE;
  /* a child measures what its parent asked for: the parent checked the options */
  int rc = o.child_codecs || o.child_path ? CLI_OK : codecs_only_setup(&o, g_given, paths_given, o.sweeps != 0);
  if (!o.sweeps) o.sweeps = o.quick ? 1 : 3;
  if (!rc) rc = run_mode(&o, paths, npaths);
  free(o.base_text);
  return rc;
}
