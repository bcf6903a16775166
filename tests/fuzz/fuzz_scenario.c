/* Fuzz target: the what-if scenario parser (sim/scenario.c) through the strict JSON reader,
 * including the data profiles and data files a scenario names (relative to scenarios/, so the
 * seeds' paths resolve).
 *
 * Contract checked: a refused scenario is one clean line; an accepted one has 1 to 100,000
 * points, each on a platform that validates, with a known collective and compress mode and a
 * byte count in [1, 1e15]; the parse takes no more time than linear in the text (libFuzzer's
 * -timeout catches a walk that is not). */
#include "fuzz_json_check.h"
#include "ncclz/sim.h"

#include <stdint.h>

#define T "fuzz_scenario"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_scenario(const ncclzSimScenario *s) {
  if (s->npoints < 1 || s->npoints > 100000 || !s->points) fuzz_fail(T, "point count out of range");
  for (size_t i = 0; i < s->npoints; i++) {
    const ncclzSimPoint *p = &s->points[i];
    if (ncclzSimPlatformValidate(&p->platform) != NCCLZ_OK) fuzz_fail(T, "an accepted point's platform is invalid");
    if ((unsigned)p->options.coll >= NCCLZ_COLL_COUNT || (unsigned)p->options.compress >= NCCLZ_SIM_COMPRESS_COUNT)
      fuzz_fail(T, "collective or compress out of range");
    if (p->options.bytes < 1 || p->options.bytes > 1000000000000000ull) fuzz_fail(T, "bytes out of range");
  }
  if (!memchr(s->name, 0, sizeof s->name)) fuzz_fail(T, "name not terminated");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  ncclzProfile *prof = fuzz_builtin_profile(T);
  ncclzSimScenario s;
  ncclzStatus st = ncclzSimScenarioParse((const char *)data, size, NCCLZ_FUZZ_SCENARIO_DIR, prof, &s);
  if (st == NCCLZ_OK) {
    check_scenario(&s);
    ncclzSimScenarioFree(&s);
  } else {
    fuzz_check_refusal(T, st);
  }
  return 0;
}
