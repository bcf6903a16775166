/* Checks shared by the JSON parsers' fuzz targets: a refusal is one clean line; the built-in
 * profile and the scenario directory they parse with. */
#ifndef NCCLZ_FUZZ_JSON_CHECK_H
#define NCCLZ_FUZZ_JSON_CHECK_H

#include "ncclz/model.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Aborts (a finding) with what and the last error. */
static inline void fuzz_fail(const char *target, const char *what) {
  fprintf(stderr, "%s: %s (last error: %s)\n", target, what, ncclzLastError());
  abort();
}

/* A refused input: an input error (not a crash or an internal one) with a message of one
 * non-empty line. */
static inline void fuzz_check_refusal(const char *target, ncclzStatus st) {
  const char *e = ncclzLastError();
  if (st != NCCLZ_ERR_ARG && st != NCCLZ_ERR_IO && st != NCCLZ_ERR_NOMEM && st != NCCLZ_ERR_NONFINITE &&
      st != NCCLZ_ERR_RANGE)
    fuzz_fail(target, "refused with an unexpected status");
  if (!e[0] || strchr(e, '\n')) fuzz_fail(target, "the message is not one line");
}

/* Where the scenario targets resolve the paths their inputs name (the seeds' data files). */
#ifndef NCCLZ_FUZZ_SCENARIO_DIR
#define NCCLZ_FUZZ_SCENARIO_DIR "."
#endif

/* The built-in profile, loaded on the first input. */
static inline ncclzProfile *fuzz_builtin_profile(const char *target) {
  static ncclzProfile prof;
  static int have_prof;
  if (!have_prof) {
    if (ncclzProfileDefault(&prof) != NCCLZ_OK) fuzz_fail(target, "the built-in profile");
    have_prof = 1;
  }
  return &prof;
}

#endif
