/* Kind "measure": runs through the executor (`ncclz perf --json` for each run of the scenario:
 * the NCCL backend on this machine's GPUs, or with "backend": "cpu" the executor's thread
 * transport), then the validate report on the files it wrote. Every field of every run is
 * checked before the first `ncclz perf` starts, and each one runs from an argv array (no shell:
 * a field is passed as one argument, whatever it holds). `ncclz perf` itself says clearly when
 * the machine has no GPU or the build no NCCL backend (exit 1). */
#include "report_internal.h"

#include "ncclz/schedule.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MEASURE_MAX_CALLS 64
#define PERF_MAX_ARGS 32
#define PERF_MAX_ENV 16
#define ARG_CAP 1200

/* One `ncclz perf` call: its arguments, the environment it adds and where it writes. */
typedef struct {
  char arg[PERF_MAX_ARGS][ARG_CAP];
  const char *argv[PERF_MAX_ARGS + 1];
  int argc;
  char env[PERF_MAX_ENV][ARG_CAP];
  const char *envp[PERF_MAX_ENV + 1];
  char json[ARG_CAP]; /* its --json file, in the report's staging directory */
  char list[ARG_CAP + 64]; /* "JSON\tPATH" for validate_files */
  char where[32];
} perf_call;

static void add_arg(perf_call *p, const char *fmt, const char *value) {
  snprintf(p->arg[p->argc], ARG_CAP, fmt, value);
  p->argv[p->argc] = p->arg[p->argc];
  p->argc++;
}

static void add_opt(perf_call *p, const char *opt, const char *value) {
  add_arg(p, "%s", opt);
  add_arg(p, "%s", value);
}

static int is_policy(const char *s) { return !strcmp(s, "off") || !strcmp(s, "auto") || ncclzCoderFromName(s) >= 0; }

/* env keys: the communication libraries' variables only (a scenario may tune NCCL, not choose
 * which libraries a child loads through LD_PRELOAD, PATH and the like). */
static int env_key_ok(const char *k) {
  static const char *const prefixes[] = {"NCCL_", "NCCLZ_", "CUDA_", "UCX_", "FI_", NULL};
  int ok = 0;
  for (const char *const *p = prefixes; *p && !ok; p++) ok = !strncmp(k, *p, strlen(*p)) && k[strlen(*p)];
  size_t n = strlen(k);
  for (size_t i = 0; ok && i < n; i++) ok = (k[i] >= 'A' && k[i] <= 'Z') || (k[i] >= '0' && k[i] <= '9') || k[i] == '_';
  return ok && n < 128;
}

static int env_value_ok(const char *v) {
  if (strlen(v) >= ARG_CAP - 130 || !utf8_valid(v)) return 0;
  for (const unsigned char *p = (const unsigned char *)v; *p; p++)
    if (*p < 0x20 || *p == 0x7f) return 0;
  return 1;
}

/* One run's fields, checked, as perf's arguments. */
typedef struct {
  const char *coll, *quant, *backend, *path;
  char data[ARG_CAP];
  char minb[32], maxb[32], gpus[16], factor[16], iters[16];
  char env[PERF_MAX_ENV][ARG_CAP]; /* KEY=VALUE */
  int nenv;
} run_fields;

/* The run's "env" object as KEY=VALUE strings. */
static int run_env(const cJSON *run, const char *where, run_fields *f) {
  const cJSON *env = cJSON_GetObjectItemCaseSensitive(run, "env"), *e;
  if (!env) return 0;
  if (!cJSON_IsObject(env) || cJSON_GetArraySize(env) > PERF_MAX_ENV)
    return SCN_ERR("%s.env: expected an object of at most %d \"NAME\": \"value\" strings", where, PERF_MAX_ENV), -1;
  cJSON_ArrayForEach(e, env) {
    if (!env_key_ok(e->string))
      return SCN_ERR("%s.env: '%s' is not allowed (names of the form NCCL_*, NCCLZ_*, CUDA_*, UCX_* or FI_*, upper-case "
                     "letters, digits and '_')", where, utf8_valid(e->string) ? e->string : "?"), -1;
    if (!cJSON_IsString(e) || !env_value_ok(e->valuestring))
      return SCN_ERR("%s.env.%s: expected a string of printable UTF-8 text (no control characters, under %d bytes)", where,
                     e->string, ARG_CAP - 130), -1;
    snprintf(f->env[f->nenv++], ARG_CAP, "%s=%s", e->string, e->valuestring);
  }
  return 0;
}

/* A byte count field as the decimal string perf reads (dflt when absent). */
static int run_bytes(const cJSON *run, const char *where, const char *key, double dflt, double *out) {
  double *v = NULL;
  int n = 0;
  if (fld_bytes(run, where, key, 0, &v, &n)) return -1;
  if (n > 1) return free(v), SCN_ERR("%s.%s: expected one byte count such as 65536 or \"4M\"", where, key), -1;
  *out = n ? v[0] : dflt;
  free(v);
  return 0;
}

/* The run's data file: it must exist, and hold no ',' (perf reads a comma as a list of files). */
static int run_data_file(const run_ctx *c, const char *where, const char *data, char *full, size_t cap) {
  struct stat st;
  run_path(c, data, full, cap);
  if (strchr(full, ','))
    return SCN_ERR("%s.data_file: '%s': a name with ',' cannot be given to ncclz perf (it reads a list)", where, full), -1;
  if (stat(full, &st) || !S_ISREG(st.st_mode) || access(full, R_OK))
    return SCN_ERR("%s.data_file: '%s' is not a readable file", where, full), -1;
  return 0;
}

/* Reads and checks every field of runs[i]; the compress list is checked by the caller. */
static int read_run(const run_ctx *c, const cJSON *run, const char *where, run_fields *f) {
  static const char *const keys[] = {"collective", "compress", "gpus", "min_bytes", "max_bytes", "factor", "quant",
                                     "data_file", "path", "env", "iters", "backend", NULL};
  const char *data = NULL;
  double gpus = 2, factor = 4, iters = 20, minb, maxb;
  memset(f, 0, sizeof *f);
  if (!cJSON_IsObject(run)) return SCN_ERR("%s: expected an object {collective, compress[], gpus, path, ...}", where), -1;
  if (fld_known(run, where, keys) || fld_string(run, where, "collective", 1, &f->coll) ||
      fld_string(run, where, "quant", 0, &f->quant) || fld_string(run, where, "data_file", 0, &data) ||
      fld_string(run, where, "backend", 0, &f->backend) || fld_string(run, where, "path", 1, &f->path) ||
      fld_int(run, where, "gpus", 0, 1, 64, &gpus) || fld_int(run, where, "factor", 0, 2, 1024, &factor) ||
      fld_int(run, where, "iters", 0, 1, 1e6, &iters) || run_bytes(run, where, "min_bytes", 1 << 20, &minb) ||
      run_bytes(run, where, "max_bytes", 256 << 20, &maxb) || run_env(run, where, f))
    return -1;
  if (ncclzCollectiveFromName(f->coll) < 0)
    return SCN_ERR("%s.collective: unknown collective '%s' (allreduce, allgather, reducescatter, broadcast, alltoall)",
                   where, f->coll), -1;
  if (f->backend && strcmp(f->backend, "cpu") && strcmp(f->backend, "nccl"))
    return SCN_ERR("%s.backend: expected cpu or nccl (got '%s')", where, f->backend), -1;
  if (minb > maxb) return SCN_ERR("%s.min_bytes: larger than max_bytes", where), -1;
  ncclzQuantSpec spec;
  if (f->quant && ncclzQuantSpecParse(f->quant, &spec) != NCCLZ_OK) return SCN_ERR("%s.quant: %s", where, ncclzLastError()), -1;
  if (f->quant && spec.lorenzo)
    return SCN_ERR("%s.quant: a Lorenzo quantizer needs the data's dims, which ncclz perf does not take", where), -1;
  const cJSON *paths = cJSON_GetObjectItemCaseSensitive(c->root, "paths");
  if (!cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(paths, f->path)))
    return SCN_ERR("%s.path: '%s' is not one of the scenario's paths", where, f->path), -1;
  if (data && run_data_file(c, where, data, f->data, sizeof f->data)) return -1;
  snprintf(f->minb, sizeof f->minb, "%.0f", minb);
  snprintf(f->maxb, sizeof f->maxb, "%.0f", maxb);
  snprintf(f->gpus, sizeof f->gpus, "%.0f", gpus);
  snprintf(f->factor, sizeof f->factor, "%.0f", factor);
  snprintf(f->iters, sizeof f->iters, "%.0f", iters);
  return 0;
}

/* The `ncclz perf` call of one run and compress mode. */
static void build_call(const ncclzReport *r, const run_ctx *c, const run_fields *f, int i, const char *comp,
                       perf_call *p) {
  int plain = !strcmp(comp, "off");
  add_arg(p, "%s", c->opt->ncclz ? c->opt->ncclz : "ncclz");
  add_arg(p, "%s", "perf");
  add_opt(p, "-c", f->coll);
  add_opt(p, "-b", f->minb);
  add_opt(p, "-e", f->maxb);
  add_opt(p, "-f", f->factor);
  add_opt(p, "-g", f->gpus);
  add_opt(p, "-n", f->iters);
  add_opt(p, "--compress", comp);
  snprintf(p->json, sizeof p->json, "%s/measure-%d-%s.json", r->dir, i, comp);
  add_opt(p, "--json", p->json);
  if (f->quant && !plain) add_opt(p, "--quant", f->quant); /* plain NCCL takes no quantizer */
  if (f->backend) add_opt(p, "--backend", f->backend);
  if (f->data[0]) add_opt(p, "--data", f->data);
  if (!plain) add_opt(p, "--profile", c->profile_path);
  p->argv[p->argc] = NULL;
  for (int e = 0; e < f->nenv; e++) {
    memcpy(p->env[e], f->env[e], ARG_CAP);
    p->envp[e] = p->env[e];
  }
  p->envp[f->nenv] = NULL;
  snprintf(p->where, sizeof p->where, "runs[%d]", i);
  snprintf(p->list, sizeof p->list, "%s\t%s", p->json, f->path);
}

/* Every call of every run, checked; *n calls. f: room for one run's fields. */
static ncclzStatus plan_calls(const ncclzReport *r, const run_ctx *c, run_fields *f, perf_call *calls, int *n) {
  const cJSON *runs = cJSON_GetObjectItemCaseSensitive(c->root, "runs"), *run;
  int i = 0;
  *n = 0;
  if (!cJSON_IsArray(runs) || !cJSON_GetArraySize(runs))
    return SCN_ERR("runs: required, an array of {collective, compress[], gpus, path, ...}");
  cJSON_ArrayForEach(run, runs) {
    char where[32];
    snprintf(where, sizeof where, "runs[%d]", i);
    if (read_run(c, run, where, f)) return NCCLZ_ERR_ARG;
    const cJSON *comps = cJSON_GetObjectItemCaseSensitive(run, "compress"), *cm;
    int ncomp = cJSON_IsArray(comps) ? cJSON_GetArraySize(comps) : 0, k = 0;
    if (ncomp < 1 || ncomp > 5) return SCN_ERR("%s.compress: required, an array of 1 to 5 of off, auto, raw, fixedlen, huffman", where);
    cJSON_ArrayForEach(cm, comps) {
      if (!cJSON_IsString(cm) || !is_policy(cm->valuestring))
        return SCN_ERR("%s.compress[%d]: expected off, auto, raw, fixedlen or huffman", where, k);
      for (const cJSON *prev = comps->child; prev != cm; prev = prev->next)
        if (!strcmp(prev->valuestring, cm->valuestring)) return SCN_ERR("%s.compress[%d]: '%s' twice", where, k, cm->valuestring);
      if (*n == MEASURE_MAX_CALLS) return SCN_ERR("runs: at most %d perf calls in all", MEASURE_MAX_CALLS);
      build_call(r, c, f, i, cm->valuestring, &calls[*n]);
      (*n)++, k++;
    }
    i++;
  }
  return NCCLZ_OK;
}

static ncclzStatus run_call(const perf_call *p) {
  sbuf shown;
  sb_init(&shown);
  for (const char *const *e = p->envp; *e; e++) sb_printf(&shown, "%s ", *e);
  for (int a = 0; a < p->argc; a++) sb_printf(&shown, "%s%s", a ? " " : "", p->argv[a]);
  fprintf(stderr, "ncclz run: %s\n", sb_str(&shown));
  sb_free(&shown);
  report_child ch = {p->argv, p->envp, NULL, NULL};
  int code;
  if (report_spawn(&ch, &code))
    return ncclzSetError(NCCLZ_ERR_RUNTIME, "measure: cannot start '%s' for %s: %s", p->argv[0], p->where, strerror(errno));
  if (code)
    return ncclzSetError(NCCLZ_ERR_RUNTIME, "measure: `ncclz perf` failed for %s (exit %d); see its message above",
                         p->where, code);
  return NCCLZ_OK;
}

ncclzStatus kind_measure(ncclzReport *r, run_ctx *c) {
  perf_call *calls = calloc(MEASURE_MAX_CALLS, sizeof *calls);
  run_fields *f = malloc(sizeof *f);
  const char *list[MEASURE_MAX_CALLS];
  int n = 0;
  ncclzStatus st = calls && f ? plan_calls(r, c, f, calls, &n) : ncclzSetError(NCCLZ_ERR_NOMEM, "out of memory");
  if (st == NCCLZ_OK) st = validate_check(c); /* the paths, and a build with the simulator */
  for (int i = 0; i < n && st == NCCLZ_OK; i++) {
    st = run_call(&calls[i]);
    list[i] = calls[i].list;
  }
  if (st == NCCLZ_OK) st = validate_files(r, c, list, n, "the runs above");
  free(calls);
  free(f);
  return st;
}
