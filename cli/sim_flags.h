/* `ncclz sim` from flags: the what-if of one collective on one platform, built as a scenario (the
 * scenario files' vocabulary) and answered in one screen. */
#ifndef NCCLZ_CLI_SIM_FLAGS_H
#define NCCLZ_CLI_SIM_FLAGS_H
#ifdef NCCLZ_HAVE_SIM
#include "ncclz/sim.h"

typedef struct {
  int given;             /* any of the flags below was given */
  int nodes, gpus_per_node, rails;
  const char *nic;       /* with its unit, "200Gb/s" (NULL: the platform's default) */
  const char *coll;      /* "allreduce" */
  const char *size;      /* "256M" */
  const char *compress;  /* "auto" */
  const char *data;      /* raw f32 file or data-profile JSON (NULL: the default data profile) */
  const char *quant;     /* with a raw --data file */
  const char *dims;      /* AxBxC of the raw file (Lorenzo) */
  char data_text[400];   /* what the data is, for the answer */
} sim_flags;

/* Checks the flags and builds the scenario: points "off" and the --compress mode. CLI_OK, or a
 * CLI exit code after a one-line message. */
int sim_flags_scenario(sim_flags *f, const ncclzProfile *prof, ncclzSimScenario *s);
/* The answer on one screen (stdout), or as one JSON object with --json (the screen on stderr). */
int sim_flags_answer(const sim_flags *f, const ncclzSimScenario *s, const ncclzSimPointResult *res,
                     const char *profile, const ncclzProfile *prof, int json);
#endif
#endif
