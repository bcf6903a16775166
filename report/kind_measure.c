/* Kind "measure": runs through the executor (`ncclz perf --json` for each run of the scenario:
 * the NCCL backend on this machine's GPUs, or with "backend": "cpu" the executor's thread
 * transport), then the validate report on the files it wrote. `ncclz perf` itself says clearly
 * when the machine has no GPU or the build no NCCL backend (exit 1). */
#include "report_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

/* The `ncclz perf` command line of one run and compress mode. */
static int perf_command(const run_ctx *c, const cJSON *run, int i, const char *comp, const char *json, sbuf *cmd) {
  static const char *const keys[] = {"collective", "compress", "gpus", "min_bytes", "max_bytes", "factor", "quant",
                                     "data_file", "path", "env", "iters", "backend", NULL};
  char where[32];
  snprintf(where, sizeof where, "runs[%d]", i);
  const char *coll = NULL, *quant = NULL, *data = NULL, *minb = "1M", *maxb = "256M", *backend = NULL;
  double gpus = 2, factor = 4, iters = 20;
  if (!cJSON_IsObject(run) || fld_known(run, where, keys) || fld_string(run, where, "collective", 1, &coll) ||
      fld_string(run, where, "quant", 0, &quant) || fld_string(run, where, "data_file", 0, &data) ||
      fld_string(run, where, "min_bytes", 0, &minb) || fld_string(run, where, "max_bytes", 0, &maxb) ||
      fld_string(run, where, "backend", 0, &backend) ||
      fld_number(run, where, "gpus", 0, 1, 64, &gpus) || fld_number(run, where, "factor", 0, 2, 1024, &factor) ||
      fld_number(run, where, "iters", 0, 1, 1e6, &iters))
    return -1;
  const cJSON *env = cJSON_GetObjectItemCaseSensitive(run, "env"), *e;
  cJSON_ArrayForEach(e, env) if (cJSON_IsString(e)) sb_printf(cmd, "%s='%s' ", e->string, e->valuestring);
  sb_printf(cmd, "'%s' perf -c %s -b %s -e %s -f %g -g %g -n %g --compress %s --json '%s'", c->opt->ncclz ? c->opt->ncclz : "ncclz",
            coll, minb, maxb, factor, gpus, iters, comp, json);
  if (quant && strcmp(comp, "off")) sb_printf(cmd, " --quant '%s'", quant); /* plain NCCL takes no quantizer */
  if (backend) sb_printf(cmd, " --backend '%s'", backend);
  if (data) {
    char full[1200];
    run_path(c, data, full, sizeof full);
    sb_printf(cmd, " --data '%s'", full);
  }
  if (strcmp(comp, "off")) sb_printf(cmd, " --profile '%s'", c->profile_path);
  return 0;
}

ncclzStatus kind_measure(ncclzReport *r, run_ctx *c) {
  const cJSON *runs = cJSON_GetObjectItemCaseSensitive(c->root, "runs"), *run;
  int n = 0, i = 0;
  static char files[64][1400]; /* a result path (< 1200) and a path name */
  const char *list[64];
  if (!cJSON_IsArray(runs) || !cJSON_GetArraySize(runs)) return SCN_ERR("runs: required, an array of {collective, compress[], gpus, path, ...}");
  cJSON_ArrayForEach(run, runs) {
    const cJSON *comps = cJSON_GetObjectItemCaseSensitive(run, "compress"), *cm;
    const char *path = "default";
    char where[32];
    snprintf(where, sizeof where, "runs[%d]", i);
    if (fld_string(run, where, "path", 1, &path)) return NCCLZ_ERR_ARG;
    cJSON_ArrayForEach(cm, comps) {
      if (!cJSON_IsString(cm) || n == 64) return SCN_ERR("%s.compress: expected an array of names (off, auto, ...)", where);
      char json[1200];
      snprintf(json, sizeof json, "%s/measure-%d-%s.json", c->opt->out_dir, i, cm->valuestring);
      sbuf cmd;
      sb_init(&cmd);
      int rc = perf_command(c, run, i, cm->valuestring, json, &cmd);
      fprintf(stderr, "ncclz run: %s\n", sb_str(&cmd));
      int stc = rc ? 0 : system(sb_str(&cmd));
      sb_free(&cmd);
      if (rc) return NCCLZ_ERR_ARG;
      if (stc == -1 || !WIFEXITED(stc) || WEXITSTATUS(stc) != 0)
        return ncclzSetError(NCCLZ_ERR_RUNTIME, "measure: `ncclz perf` failed for %s (exit %d); see its message above",
                             where, WIFEXITED(stc) ? WEXITSTATUS(stc) : -1);
      if (snprintf(files[n], sizeof files[n], "%s\t%s", json, path) >= (int)sizeof files[n])
        return SCN_ERR("%s.path: too long", where);
      list[n] = files[n];
      n++;
    }
    i++;
  }
  return validate_files(r, c, list, n, "the runs above");
}
