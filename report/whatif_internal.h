/* What-if results, shared by the runner and its report (needs the simulator). */
#ifndef NCCLZ_REPORT_WHATIF_H
#define NCCLZ_REPORT_WHATIF_H
#include "ncclz/sim.h"
#include "report_internal.h"

#define WI_MAX_WORKLOADS 16

typedef struct {
  char workload[64];
  ncclzSimPoint p;
  ncclzSimResult r;
  double base_us;  /* plain NCCL on the same platform */
  double speedup, busbw, algbw;
  double wire_cr_fixedlen, wire_cr_huffman; /* the data's CR for one rank's frame */
} wi_point;

typedef struct {
  wi_point *pt;
  size_t n;
} wi_results;

ncclzStatus whatif_report(ncclzReport *r, run_ctx *c, const wi_results *w);
/* The answer, first on the page: speedup by nodes x NIC, a heatmap per collective and size. */
void whatif_answer(ncclzReport *r, const wi_results *w);
#endif
