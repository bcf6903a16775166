/* The tune kind's data (report internals). */
#ifndef NCCLZ_REPORT_TUNE_H
#define NCCLZ_REPORT_TUNE_H
#include "report_internal.h"

#define TN_MAX_W 8      /* workloads */
#define TN_MAX_P 12     /* platforms */
#define TN_MAX_M 16     /* message sizes per workload */
#define TN_MAX_V 12     /* values per swept parameter */
#define TN_MAX_F 32     /* distinct frame raw sizes whose CR is measured */

enum { PAR_THUFF, PAR_GAIN, PAR_FAST, PAR_WINDOW, PAR_FRAME, PAR_COUNT };

typedef struct {
  char label[64];
  char path[1024];
  char quant[128];
  double weight;
  int nm;
  double bytes[TN_MAX_M];
  ncclzSymbols syms;
  ncclzDataClass cls;
  /* realized CR per coder at frame raw size f_bytes[i] (stream encode of the data) */
  int nf;
  double f_bytes[TN_MAX_F];
  double cr[TN_MAX_F][NCCLZ_CODER_COUNT];
  /* sample statistics per (window value, frame value) */
  ncclzSampleStats stats[TN_MAX_V][TN_MAX_V];
} tn_workload;

typedef struct {
  char label[64];
  ncclzTransportHint hint;
  double bw;
} tn_platform;

typedef struct {
  int nw, np;
  tn_workload *w;
  tn_platform p[TN_MAX_P];
  int nv[PAR_COUNT];
  double v[PAR_COUNT][TN_MAX_V];
  size_t max_elems;
  uint32_t pieces; /* sample pieces (the profile's) */
} tn_setup;

/* One configuration: an index into each parameter's values. */
typedef struct {
  int idx[PAR_COUNT];
  double regret[TN_MAX_P]; /* per platform */
  double mean;             /* mean over platforms */
  double worst_msg;        /* largest per-message regret */
  int fixed;               /* -1: REA with the thresholds; else this coder for every frame */
} tn_config;

extern const char *const TN_PAR_NAMES[PAR_COUNT];

/* The scenario's workloads, platforms and sweep into s (tune_parse.c); free with tune_free, also
 * after an error. */
ncclzStatus tune_parse(run_ctx *c, tn_setup *s);
void tune_free(tn_setup *s);
#endif
