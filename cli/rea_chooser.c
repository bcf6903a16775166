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
