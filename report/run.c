/* ncclzRunScenario: reads the scenario, checks the fields every kind shares, loads the
 * calibration profile, runs the kind and writes the report with its provenance. */
#include "report_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef ncclzStatus (*kind_fn)(ncclzReport *, run_ctx *);

static const struct {
  const char *name;
  kind_fn fn;
  int needs_profile;
  const char *title;
} KINDS[] = {
    {"what-if", kind_whatif, 1, "What-if projection"},
    {"tune", kind_tune, 1, "Arbitration threshold tuning"},
    {"validate", kind_validate, 1, "Simulated against measured"},
    {"measure", kind_measure, 1, "Measurement on this machine's GPUs"},
    {"cr-table", kind_crtable, 0, "Compression ratio of each coder on real data"},
    {"codec", kind_codec, 0, "Compression ratio of each coder, file by file"},
};
#define NKINDS (sizeof KINDS / sizeof KINDS[0])

static int find_kind(const cJSON *root, size_t *k) {
  const char *kind = NULL;
  if (fld_string(root, "", "kind", 1, &kind)) return -1;
  for (*k = 0; *k < NKINDS; (*k)++)
    if (!strcmp(KINDS[*k].name, kind)) return 0;
  return SCN_ERR("kind: expected one of what-if, tune, validate, measure, cr-table, codec (got \"%s\")", kind), -1;
}

/* The profile: --profile, else the scenario's "profile" (relative to the scenario file), else,
 * when the kind needs one, $NCCLZ_PROFILE, else the built-in H200 profile (docs/cli.md: the
 * same fallbacks as every other verb, after the scenario's own choice). */
static int load_profile(run_ctx *c, int needed) {
  const char *rel = c->opt->profile, *env = getenv("NCCLZ_PROFILE");
  int given = rel != NULL; /* a path as typed: not relative to the scenario file */
  if (!rel && fld_string(c->root, "", "profile", 0, &rel)) return -1;
  if (!rel && !needed) return 0;
  if (!rel && env && *env) rel = env, given = 1;
  if (!rel) snprintf(c->profile_path, sizeof c->profile_path, "%s", NCCLZ_DEFAULT_PROFILE_NAME);
  else if (given) snprintf(c->profile_path, sizeof c->profile_path, "%s", rel);
  else run_path(c, rel, c->profile_path, sizeof c->profile_path);
  c->prof = malloc(sizeof *c->prof);
  if (!c->prof) return ncclzSetError(NCCLZ_ERR_NOMEM, "out of memory"), -1;
  ncclzStatus st = rel ? ncclzProfileLoad(c->profile_path, c->prof) : ncclzProfileDefault(c->prof);
  if (st != NCCLZ_OK) {
    char msg[600];
    snprintf(msg, sizeof msg, "%s", ncclzLastError());
    return SCN_ERR("profile: '%s': %s", c->profile_path, msg), -1;
  }
  if (!utf8_valid(c->profile_path)) return SCN_ERR("profile: the path is not valid UTF-8 text"), -1;
  return 0;
}

/* Copies s into out[cap], cut at a character boundary when it is too long (a cut inside a UTF-8
 * sequence would make results.json invalid). */
static void copy_text(char *out, size_t cap, const char *s) {
  size_t n = strlen(s);
  if (n >= cap) {
    n = cap - 1;
    while (n && ((unsigned char)s[n] & 0xC0) == 0x80) n--; /* s[n] starts the character left out */
  }
  memcpy(out, s, n);
  out[n] = 0;
}

static int parse_common(run_ctx *c, size_t *kind) {
  if (!cJSON_IsObject(c->root)) return ncclzSetError(NCCLZ_ERR_ARG, "scenario: expected a JSON object"), -1;
  if (find_kind(c->root, kind)) return -1;
  const char *name = NULL;
  if (fld_string(c->root, "", "name", 0, &name)) return -1;
  const char *desc = NULL;
  if (fld_string(c->root, "", "description", 0, &desc)) return -1;
  snprintf(c->kind, sizeof c->kind, "%s", KINDS[*kind].name);
  copy_text(c->name, sizeof c->name, name ? name : KINDS[*kind].title);
  return load_profile(c, KINDS[*kind].needs_profile);
}

static void scenario_dir(run_ctx *c, const char *path) {
  snprintf(c->dir, sizeof c->dir, "%s", path);
  char *slash = strrchr(c->dir, '/');
  if (slash) *slash = 0;
  else snprintf(c->dir, sizeof c->dir, ".");
}

static ncclzStatus run_kind(run_ctx *c, size_t k) {
  char title[400];
  snprintf(title, sizeof title, "ncclz %s: %s", c->kind, c->name);
  ncclzReport *r;
  ncclzStatus st = report_open(c->opt->out_dir, title, &r);
  if (st != NCCLZ_OK) return st;
  cJSON *j = ncclzReportJson(r);
  cJSON_AddStringToObject(j, "scenario", c->opt->scenario);
  cJSON_AddStringToObject(j, "kind", c->kind);
  cJSON_AddStringToObject(j, "name", c->name);
  c->inputs = cJSON_AddArrayToObject(j, "data_inputs");
  const char *desc = NULL;
  fld_string(c->root, "", "description", 0, &desc);
  if (desc) ncclzReportText(r, "%s", desc);
  st = KINDS[k].fn(r, c);
  if (st != NCCLZ_OK) {
    ncclzReportAbort(r);
    return st;
  }
  section_provenance(r, c);
  return ncclzReportClose(r);
}

ncclzStatus ncclzRunScenario(const ncclzRunOptions *opt) {
  run_ctx c;
  memset(&c, 0, sizeof c);
  c.opt = opt;
  if (!opt->out_dir || !*opt->out_dir) return ncclzSetError(NCCLZ_ERR_ARG, "--out: the report directory is an empty name");
  if (!utf8_valid(opt->scenario)) /* results.json holds the paths */
    return ncclzSetError(NCCLZ_ERR_ARG, "the scenario's path is not valid UTF-8 text");
  if (!utf8_valid(opt->out_dir)) return ncclzSetError(NCCLZ_ERR_ARG, "--out: the path is not valid UTF-8 text");
  size_t len;
  char *text = ncclzReadFile(NULL, opt->scenario, &len);
  if (!text) return NCCLZ_ERR_ARG; /* a scenario that cannot be read is bad input */
  c.text = text;
  c.len = len;
  scenario_dir(&c, opt->scenario);
  ncclzStatus st = ncclzJsonParse("scenario", text, len, &c.root); /* `ncclz run` names the file */
  size_t kind = 0;
  if (st != NCCLZ_OK) {
    /* the strict reader's one-line error */
  } else if (parse_common(&c, &kind)) {
    st = NCCLZ_ERR_ARG;
  } else {
    st = run_kind(&c, kind);
  }
  cJSON_Delete(c.root);
  free(c.prof);
  free(text);
  return st;
}
