/* --coder auto: every frame goes through the REA (Algorithm 1 in the model layer) with the costs
 * of a calibration profile and the transport the frames are meant for. */
#include "cli.h"
#include "ncclz/model.h"

#include <stdlib.h>

struct cli_rea {
  ncclzProfile prof;
  ncclzTransportHint hint;
};

cli_rea *cli_rea_open(const char *verb, const char *profile_path, const char *hint) {
  int h = ncclzHintFromName(hint);
  if (h < 0) {
    cli_usage_error(verb, "--hint: expected nvlink, shm or net, got '%s'", hint);
    return NULL;
  }
  cli_rea *r = malloc(sizeof *r);
  if (!r) {
    cli_runtime_error(verb, "out of memory");
    return NULL;
  }
  r->hint = (ncclzTransportHint)h;
  if (cli_load_profile(verb, profile_path, &r->prof, NULL)) {
    free(r);
    return NULL;
  }
  return r;
}

void cli_rea_close(cli_rea *r) { free(r); }

#ifdef NCCLZ_HAVE_CUDA
struct cli_rea_gpu {
  ncclzReaGpuPlanner *planner;
  ncclzReaConfig cfg;
  ncclzFrameDesc desc;
};

/* The stage capacity the host path's frames see is the rest of their stream's buffer, at least
 * the largest coder's bound of the frame, so capacity never rules there: nor here. */
#define CLI_REA_GPU_CAP ((size_t)1 << 40)

static ncclzStatus gpu_plan(void *ctx, const int32_t *d_sym, size_t n, uint32_t fs, uint32_t *d_coders,
                            cudaStream_t stream) {
  cli_rea_gpu *g = ctx;
  return ncclzReaGpuPlanLaunch(g->planner, &g->cfg, d_sym, n, fs, &g->desc, CLI_REA_GPU_CAP, stream, d_coders, NULL);
}

cli_rea_gpu *cli_rea_gpu_open(const char *verb, const cli_rea *r, const ncclzQuantParams *qp, const ncclzCoderParams *cp,
                              size_t n, uint32_t frame_symbols, ncclzCudaCoderChooser *chooser) {
  cli_rea_gpu *g = calloc(1, sizeof *g);
  if (!g) {
    cli_runtime_error(verb, "out of memory");
    return NULL;
  }
  if (ncclzReaGpuPlannerCreate(&r->prof, &g->planner) != NCCLZ_OK) {
    cli_runtime_error(verb, "--coder auto --device gpu: %s", ncclzLastError());
    free(g);
    return NULL;
  }
  ncclzReaConfigFromProfile(&r->prof, r->hint, ncclzDataClassOf(qp), &g->cfg); /* as cli_rea_encode */
  ncclzFrameDesc d = {NCCLZ_DTYPE_F32, qp, NULL, ncclzReaSideBytes(qp, frame_symbols), *cp};
  g->desc = d;
  const size_t last = n % frame_symbols;
  chooser->plan = gpu_plan;
  chooser->ctx = g;
  chooser->fallback_bytes = ncclzReaFallbackBytes(&g->cfg, frame_symbols, ncclzReaSideBytes(qp, frame_symbols), CLI_REA_GPU_CAP);
  chooser->fallback_last_bytes = last ? ncclzReaFallbackBytes(&g->cfg, last, ncclzReaSideBytes(qp, last), CLI_REA_GPU_CAP) : 0;
  return g;
}

void cli_rea_gpu_close(cli_rea_gpu *g) {
  if (!g) return;
  ncclzReaGpuPlannerDestroy(g->planner);
  free(g);
}
#endif

ncclzStatus cli_rea_encode(const int32_t *sym, size_t n, const ncclzFrameDesc *d, uint8_t *dst, size_t cap,
                           size_t *len, ncclzCoder *committed, void *ctx) {
  const cli_rea *r = ctx;
  ncclzReaConfig cfg;
  ncclzDataClass cls = d->quant ? ncclzDataClassOf(d->quant) : NCCLZ_CLASS_NONE;
  ncclzReaConfigFromProfile(&r->prof, r->hint, cls, &cfg);
  ncclzReaResult res;
  ncclzStatus st = ncclzReaEncodeBest(&r->prof, &cfg, sym, n, d, dst, cap, &res);
  if (st == NCCLZ_OK) {
    *len = res.frame_bytes;
    *committed = res.committed;
  }
  return st;
}
