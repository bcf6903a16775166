/* Shared by the simulator's tests (test_sim*.c): the synthetic profile and data every replay
 * runs with, and the platforms, options and checks they share. */
#ifndef NCCLZ_TEST_SIM_H
#define NCCLZ_TEST_SIM_H
#include "testutil.h"

#include "ncclz/model.h"
#include "ncclz/sim.h"
#include "../sim/sim_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static ncclzProfile prof;
static ncclzSimData data;

/* The synthetic profile (tests/data/profile_synthetic.json) and constant CRs of 6 and 9. */
static inline void sim_test_init(void) {
  size_t len;
  char *json = tu_read_file("profile_synthetic.json", &len);
  CHECK(json && ncclzProfileParse(json, len, &prof) == NCCLZ_OK, "profile: %s", ncclzLastError());
  free(json);
  ncclzSimDataConstant(&data, 6.0, 9.0);
}

static inline double rel(double a, double b) { return fabs(a - b) / b; }

/* A scenario's text whose files are named from the repository's root, with the repository's
 * profile `profile` (a path from the root) in *pr: 1 when both load, else 0 with a failed check. */
static inline int repo_scenario(const char *profile, const char *json, ncclzProfile *pr, ncclzSimScenario *sc) {
  char path[512];
  snprintf(path, sizeof path, "%s/../../%s", NCCLZ_TEST_DATA, profile);
  if (ncclzProfileLoad(path, pr) != NCCLZ_OK ||
      ncclzSimScenarioParse(json, strlen(json), NCCLZ_TEST_DATA "/../..", pr, sc) != NCCLZ_OK) {
    CHECK(0, "scenario on %s: %s", profile, ncclzLastError());
    return 0;
  }
  return 1;
}

static inline double run_us(const ncclzSimPlatform *p, const ncclzSimOptions *o, ncclzSimResult *r) {
  ncclzStatus st = ncclzSimRun(&prof, &data, p, o, r);
  CHECK(st == NCCLZ_OK, "ncclzSimRun: %s", ncclzLastError());
  return st == NCCLZ_OK ? r->time_us : -1.0;
}

/* A two-level platform with round numbers: NVLink 400 GB/s 2 us, one 50 GB/s 5 us NIC. */
static inline void platform(ncclzSimPlatform *p, int nodes, int gpn) {
  ncclzSimPlatformDefault(p);
  p->nodes = nodes;
  p->gpus_per_node = gpn;
  p->nvlink_gbps = 400.0;
  p->nvlink_latency_us = 2.0;
  p->nic_gbps = 50.0;
  p->nic_latency_us = 5.0;
}

/* Two one-GPU nodes joined by a NIC of nic_gbps (the 2-rank socket path's shape). */
static inline void nic_pair(ncclzSimPlatform *p, double nic_gbps) {
  platform(p, 2, 1);
  p->nic_gbps = nic_gbps;
}

/* Default options for an AllReduce of `bytes` under `compress`. */
static inline void allreduce_opts(ncclzSimOptions *o, uint64_t bytes, ncclzSimCompress compress) {
  ncclzSimOptionsDefault(o);
  o->bytes = bytes;
  o->compress = compress;
}

/* A 256 MiB FIXEDLEN AllReduce between two NIC-connected ranks, one frame a chunk (min_chunks 1):
 * more chunks a block than staging banks. */
static inline void many_chunks(ncclzSimPlatform *p, ncclzSimOptions *o, double nic_gbps, double nic_latency_us) {
  nic_pair(p, nic_gbps);
  p->nic_latency_us = nic_latency_us;
  allreduce_opts(o, 256u << 20, NCCLZ_SIM_FIXEDLEN);
  o->min_chunks = 1;
}

/* Frames a replay coded (FIXEDLEN or HUFFMAN). */
static inline uint64_t coded_frames(const ncclzSimResult *r) {
  return r->frames[NCCLZ_CODER_FIXEDLEN] + r->frames[NCCLZ_CODER_HUFFMAN];
}



/* A uniform platform: every hop alpha 5 us and 50 GB/s (NVLink as the NIC, a NIC per GPU). */
static inline void uniform(ncclzSimPlatform *p, int nodes, int gpn) {
  platform(p, nodes, gpn);
  p->nvlink_gbps = p->nic_gbps;
  p->nvlink_latency_us = p->nic_latency_us;
  p->rails = gpn;
}


/* The shipped H200 profile (calibrate/profiles/h200-x2.json) into *h200. */
static inline void load_shipped(ncclzProfile *h200) {
  CHECK(ncclzProfileLoad(NCCLZ_TEST_DATA "/../../calibrate/profiles/h200-x2.json", h200) == NCCLZ_OK, "%s",
        ncclzLastError());
}
#endif
