/* ncclz: dispatch to one verb. Each verb parses its own options with getopt_long. */
#include "cli.h"
#include "ncclz/model.h"

#include <cjson/cJSON.h>

#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

static const struct {
  const char *name;
  cli_verb_fn fn;
  const char *summary;
} verbs[] = {
    {"codec", cli_codec, "quantize and code a file; report CR, error and speed"},
    {"model", cli_model, "REA break-even surface: best coder per bandwidth and size"},
    {"profile-data", cli_profile_data, "CR per coder and frame size, for 1..N ranks' summed codes"},
    {"perf", cli_perf, "compressed collectives: nccl-tests' table plus cr, coders, maxerr"},
    {"sim", cli_sim, "SimGrid replay of the schedules at any node count and bandwidth"},
    {"calibrate", cli_calibrate, "measure codec, transport and overlap costs into a calibration profile"},
    {"run", cli_run, "run a scenario (what-if, tune, validate, measure, cr-table) into an HTML report"},
};

static void usage(FILE *f) {
  fprintf(f, "usage: ncclz VERB [options]   (ncclz VERB --help for each)\n"
             "       ncclz --version\n\nverbs:\n");
  for (size_t i = 0; i < sizeof verbs / sizeof verbs[0]; i++)
    fprintf(f, "  %-10s %s\n", verbs[i].name, verbs[i].summary);
}

/* The version and what this build can run (a cluster job's first check). */
static void print_version(void) {
#ifdef NCCLZ_HAVE_NCCL
  const char *nccl = "on";
#else
  const char *nccl = "off";
#endif
#ifdef NCCLZ_HAVE_MPI
  const char *mpi = "on";
#else
  const char *mpi = "off";
#endif
#ifdef NCCLZ_HAVE_SIM
  const char *sim = "on";
#else
  const char *sim = "off";
#endif
  printf("ncclz %s (CUDA/NCCL %s, MPI %s, SimGrid %s)\n", ncclzVersionString(), nccl, mpi, sim);
}

int main(int argc, char **argv) {
  if (argc < 2) {
    usage(stderr);
    return CLI_USAGE;
  }
  if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
    usage(stdout);
    return CLI_OK;
  }
  if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "-V")) {
    print_version();
    return CLI_OK;
  }
  for (size_t i = 0; i < sizeof verbs / sizeof verbs[0]; i++)
    if (!strcmp(argv[1], verbs[i].name)) return verbs[i].fn(argc - 1, argv + 1);
  fprintf(stderr, "ncclz: unknown verb '%s' (ncclz --help lists them)\n", argv[1]);
  return CLI_USAGE;
}

/* One line whatever the arguments hold: control characters (a newline in an echoed argument) print as '?'. */
static void vreport(const char *verb, const char *fmt, va_list ap) {
  char msg[1024];
  vsnprintf(msg, sizeof msg, fmt, ap);
  for (char *c = msg; *c; c++)
    if ((unsigned char)*c < 0x20 || *c == 0x7f) *c = '?';
  fprintf(stderr, "ncclz %s: %s\n", verb, msg);
}

int cli_usage_error(const char *verb, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vreport(verb, fmt, ap);
  va_end(ap);
  return CLI_USAGE;
}

int cli_getopt(int argc, char *const argv[], const char *shortopts, const struct option *longopts) {
  char opts[64];
  opterr = 0;
  snprintf(opts, sizeof opts, ":%s", shortopts);
  return getopt_long(argc, argv, opts, longopts, NULL);
}

int cli_option_error(const char *verb, int c, char *const argv[]) {
  const char *arg = optind > 0 ? argv[optind - 1] : "?";
  if (c == ':') return cli_usage_error(verb, "%s needs a value (ncclz %s --help)", arg, verb);
  if (optopt && strncmp(arg, "--", 2)) return cli_usage_error(verb, "unknown option '-%c' (ncclz %s --help)", optopt, verb);
  return cli_usage_error(verb, "unknown option '%s' (ncclz %s --help)", arg, verb);
}

int cli_runtime_error(const char *verb, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vreport(verb, fmt, ap);
  va_end(ap);
  return CLI_RUNTIME;
}

void *cli_read_file(const char *verb, const char *path, size_t *len) {
  char *buf = ncclzReadFile(NULL, path, len);
  if (!buf) cli_usage_error(verb, "%s", ncclzLastError());
  return buf;
}

int cli_emit_json(const char *verb, cJSON *root) {
  char *text = cJSON_PrintUnformatted(root);
  cJSON_Delete(root);
  if (!text) return cli_runtime_error(verb, "out of memory");
  printf("%s\n", text);
  free(text);
  return CLI_OK;
}

int cli_parse_float_dtype(const char *verb, const char *arg, ncclzDtype *out) {
  int t = ncclzDtypeFromName(arg);
  if (t < 0 || t == NCCLZ_DTYPE_I32) return cli_usage_error(verb, "--dtype: expected f32, bf16 or f16, got '%s'", arg);
  *out = (ncclzDtype)t;
  return CLI_OK;
}

int cli_parse_dims(const char *s, unsigned dims[3]) {
  char buf[64];
  size_t len = strlen(s);
  if (len == 0 || len >= sizeof buf) return -1;
  memcpy(buf, s, len + 1);
  int nd = 0;
  for (char *p = buf, *end; p; p = end ? end + 1 : NULL) {
    end = strpbrk(p, "xX");
    if (end) *end = '\0';
    uint64_t v;
    if (nd == 3 || ncclzParseU64(p, 1, UINT32_MAX, &v)) return -1; /* no sign, space or 0: see ncclzParseU64 */
    dims[nd++] = (unsigned)v;
  }
  return nd;
}

int cli_parse_int(const char *verb, const char *opt, const char *arg, long lo, long hi, int *out) {
  int neg = arg[0] == '-';
  uint64_t mag;
  /* ncclzParseU64 on the digits: no "+", spaces, hex or trailing characters, as strtol would take */
  int bad = ncclzParseU64(arg + neg, 0, (uint64_t)LONG_MAX, &mag);
  long v = bad ? 0 : neg ? -(long)mag : (long)mag;
  if (bad || v < lo || v > hi) return cli_usage_error(verb, "%s %s: expected an integer in %ld..%ld", opt, arg, lo, hi);
  *out = (int)v;
  return CLI_OK;
}

unsigned long long cli_parse_size(const char *s) {
  uint64_t v;
  return ncclzParseBytes(s, &v) ? 0 : v;
}

int cli_write_text(const char *verb, const char *path, const char *text) {
  size_t n = strlen(text);
  char *line = malloc(n + 1);
  if (!line) return cli_runtime_error(verb, "cannot write '%s': out of memory", path);
  memcpy(line, text, n);
  line[n] = '\n';
  ncclzStatus st = ncclzWriteFile(NULL, path, line, n + 1);
  free(line);
  return st ? cli_runtime_error(verb, "%s", ncclzLastError()) : CLI_OK;
}

int cli_load_profile(const char *verb, const char *path, ncclzProfile *out, const char **name) {
  if (!path) path = getenv("NCCLZ_PROFILE");
  if (path && !*path) path = NULL;
  ncclzStatus st = path ? ncclzProfileLoad(path, out) : ncclzProfileDefault(out);
  if (name) *name = path ? path : NCCLZ_DEFAULT_PROFILE_NAME;
  return st ? cli_usage_error(verb, "%s", ncclzLastError()) : CLI_OK;
}
