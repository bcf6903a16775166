/* Fuzz target: the tune kind's parser (report/tune_parse.c: workloads, platforms, the swept
 * thresholds) through the strict JSON reader, with the built-in profile; paths relative to
 * scenarios/, so the seeds' data files resolve.
 *
 * Contract checked: a refused scenario is one clean line; an accepted one has 1 to TN_MAX_W
 * workloads and 1 to TN_MAX_P platforms, every message size a whole byte count in [1, 1e15] (2^63
 * is refused), every swept value set of 1 to TN_MAX_V - 1 values, positive bandwidths. */
#include "fuzz_json_check.h"
#include "tune_internal.h"

#include <math.h>
#include <stdint.h>

#define T "fuzz_tune"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_setup(const tn_setup *s) {
  if (s->nw < 1 || s->nw > TN_MAX_W || s->np < 1 || s->np > TN_MAX_P) fuzz_fail(T, "list length out of range");
  for (int i = 0; i < s->nw; i++) {
    const tn_workload *w = &s->w[i];
    if (w->nm < 1 || w->nm > TN_MAX_M || !(w->weight >= 0)) fuzz_fail(T, "workload out of range");
    for (int m = 0; m < w->nm; m++)
      if (!(w->bytes[m] >= 1 && w->bytes[m] <= 1e15) || w->bytes[m] != floor(w->bytes[m])) fuzz_fail(T, "bytes out of range");
  }
  for (int i = 0; i < s->np; i++)
    if (!(s->p[i].bw > 0) || (unsigned)s->p[i].hint >= NCCLZ_HINT_COUNT) fuzz_fail(T, "platform out of range");
  for (int k = 0; k < PAR_COUNT; k++)
    if (s->nv[k] < 1 || s->nv[k] > TN_MAX_V - 1) fuzz_fail(T, "swept values out of range");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  ncclzProfile *prof = fuzz_builtin_profile(T);
  cJSON *root = NULL;
  ncclzStatus st = ncclzJsonParse("tune", (const char *)data, size, &root);
  if (st != NCCLZ_OK) {
    fuzz_check_refusal(T, st);
    return 0;
  }
  ncclzRunOptions opt = {.scenario = "fuzz.json", .out_dir = "/nonexistent"};
  run_ctx c = {.opt = &opt, .root = root, .text = (const char *)data, .len = size, .prof = prof};
  snprintf(c.dir, sizeof c.dir, "%s", NCCLZ_FUZZ_SCENARIO_DIR);
  tn_setup s;
  st = tune_parse(&c, &s);
  if (st == NCCLZ_OK) check_setup(&s);
  else fuzz_check_refusal(T, st);
  tune_free(&s);
  cJSON_Delete(root);
  return 0;
}
