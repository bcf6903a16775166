/* The tune kind's schema: workloads (data file, quantizer, weight, message sizes), platforms
 * (transport hint and bandwidth) and the swept threshold values. Every error names its field. */
#include "tune_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int load_workload(run_ctx *c, const cJSON *o, const char *path, tn_workload *w) {
  static const char *const keys[] = {"label", "file", "quant", "dims", "weight", "bytes", "note", NULL};
  const char *label = NULL, *file = NULL, *quant = NULL;
  double *dims = NULL, *bytes = NULL;
  int nd = 0, nb = 0;
  w->weight = 1;
  if (!cJSON_IsObject(o)) return SCN_ERR("%s: expected an object {label, file, quant, bytes}", path), -1;
  if (fld_known(o, path, keys) || fld_string(o, path, "label", 1, &label) || fld_string(o, path, "file", 1, &file) ||
      fld_string(o, path, "quant", 1, &quant) || fld_number(o, path, "weight", 0, 0, 1e9, &w->weight) ||
      fld_numbers(o, path, "dims", 0, 1, 1 << 30, 1, &dims, &nd) || fld_bytes(o, path, "bytes", 1, &bytes, &nb))
    return free(dims), free(bytes), -1;
  int rc = 0;
  if (nd > 3) rc = (SCN_ERR("%s.dims: at most 3 dimensions", path), -1);
  if (!rc && nb > TN_MAX_M) rc = (SCN_ERR("%s.bytes: at most %d sizes", path, TN_MAX_M), -1);
  w->nm = nb;
  for (int i = 0; i < nb && !rc; i++) w->bytes[i] = bytes[i];
  snprintf(w->label, sizeof w->label, "%s", label);
  run_path(c, file, w->path, sizeof w->path);
  ncclzQuantSpec spec;
  if (!rc && ncclzQuantSpecParse(quant, &spec) != NCCLZ_OK) rc = (SCN_ERR("%s.quant: %s", path, ncclzLastError()), -1);
  if (!rc) ncclzQuantSpecFormat(&spec, w->quant, sizeof w->quant);
  size_t len = 0;
  char *raw = rc ? NULL : ncclzReadFile(NULL, w->path, &len);
  if (!rc && !raw) rc = (SCN_ERR("%s.file: cannot read '%s'", path, w->path), -1);
  uint32_t d3[3] = {0, 0, 0};
  for (int i = 0; i < nd && i < 3; i++) d3[i] = (uint32_t)dims[i];
  if (!rc && (len < 4 || ncclzArrayQuantize(&spec, NCCLZ_DTYPE_F32, raw, len / 4, nd ? d3 : NULL, nd, 0, &w->syms)))
    rc = (SCN_ERR("%s.file: '%s': %s", path, w->path, len < 4 ? "empty" : ncclzLastError()), -1);
  if (!rc) w->cls = ncclzDataClassOf(&w->syms.qp);
  free(raw);
  free(dims);
  free(bytes);
  return rc;
}

static int load_platform(const run_ctx *c, const cJSON *o, const char *path, tn_platform *p) {
  static const char *const keys[] = {"label", "hint", "bandwidth", "bandwidth_gbps", NULL};
  const char *label = NULL, *hint = "net", *bw = NULL;
  if (!cJSON_IsObject(o)) return SCN_ERR("%s: expected an object {label, hint, bandwidth}", path), -1;
  if (fld_known(o, path, keys) || fld_string(o, path, "label", 1, &label) || fld_string(o, path, "hint", 0, &hint))
    return -1;
  int h = ncclzHintFromName(hint);
  if (h < 0) return SCN_ERR("%s.hint: expected nvlink, shm or net", path), -1;
  p->hint = (ncclzTransportHint)h;
  p->bw = c->prof->transport[h].beta_gbps;
  if (fld_number(o, path, "bandwidth_gbps", 0, 1e-6, 1e9, &p->bw) || fld_string(o, path, "bandwidth", 0, &bw)) return -1;
  /* "bandwidth": with its unit ("400Gb/s"); bandwidth_gbps: GB/s, for older files */
  if (bw && cJSON_GetObjectItemCaseSensitive(o, "bandwidth_gbps"))
    return SCN_ERR("%s: give bandwidth or bandwidth_gbps, not both", path), -1;
  if (bw && ncclzParseBandwidth(bw, &p->bw))
    return SCN_ERR("%s.bandwidth: expected a bandwidth with its unit, such as \"400Gb/s\" or \"50GB/s\"", path), -1;
  snprintf(p->label, sizeof p->label, "%s", label);
  return 0;
}

/* One swept parameter: the scenario's values, else the profile's. */
static int load_axis(const cJSON *sw, int k, double lo, double hi, double dflt, tn_setup *s) {
  double *v = NULL;
  int n = 0;
  if (fld_numbers(sw, "sweep", TN_PAR_NAMES[k], 0, lo, hi, 1, &v, &n)) return -1;
  if (n > TN_MAX_V - 1) return free(v), SCN_ERR("sweep.%s: at most %d values", TN_PAR_NAMES[k], TN_MAX_V - 1), -1;
  s->nv[k] = n ? n : 1;
  for (int i = 0; i < s->nv[k]; i++) s->v[k][i] = n ? v[i] : dflt;
  free(v);
  return 0;
}

static int load_sweep(const run_ctx *c, const cJSON *sw, tn_setup *s) {
  static const char *const keys[] = {"huff_min_bytes", "min_gain_permil", "fast_path_bytes", "sample_window_bytes",
                                     "frame_bytes", NULL};
  const ncclzThresholds *t = &c->prof->thresholds;
  if (sw && !cJSON_IsObject(sw)) return SCN_ERR("sweep: expected an object"), -1;
  if (sw && fld_known(sw, "sweep", keys)) return -1;
  return load_axis(sw, PAR_THUFF, 0, 1e12, (double)t->huff_min_bytes, s) ||
                 load_axis(sw, PAR_GAIN, 0, 1000, t->min_gain_permil, s) ||
                 load_axis(sw, PAR_FAST, 0, 1e12, (double)t->fast_path_bytes, s) ||
                 load_axis(sw, PAR_WINDOW, 128, 65536, t->sample_window_bytes, s) ||
                 load_axis(sw, PAR_FRAME, 4096, 4294967295.0, (double)t->frame_bytes, s)
             ? -1
             : 0;
}

static int load_list(run_ctx *c, const char *key, int max, int *n, tn_setup *s) {
  const cJSON *arr = cJSON_GetObjectItemCaseSensitive(c->root, key);
  *n = cJSON_IsArray(arr) ? (int)ncclzJsonCount(arr, (size_t)max) : 0;
  if (*n < 1 || *n > max) return SCN_ERR("%s: required, an array of 1 to %d objects", key, max), -1;
  const cJSON *o;
  int i = 0;
  cJSON_ArrayForEach(o, arr) {
    char path[48];
    snprintf(path, sizeof path, "%s[%d]", key, i);
    i++;
    int rc = !strcmp(key, "workloads") ? load_workload(c, o, path, &s->w[i - 1]) : load_platform(c, o, path, &s->p[i - 1]);
    if (rc) return -1;
  }
  return 0;
}

void tune_free(tn_setup *s) {
  for (int i = 0; s->w && i < TN_MAX_W; i++) ncclzSymbolsFree(&s->w[i].syms);
  free(s->w);
  s->w = NULL;
}

ncclzStatus tune_parse(run_ctx *c, tn_setup *s) {
  static const char *const keys[] = {"kind", "name", "description", "profile", "workloads", "platforms", "sweep",
                                     "max_elements", "surface", NULL};
  memset(s, 0, sizeof *s);
  s->w = calloc(TN_MAX_W, sizeof *s->w);
  if (!s->w) return ncclzSetError(NCCLZ_ERR_NOMEM, "out of memory");
  double maxe = 1048576;
  s->pieces = c->prof->thresholds.sample_pieces;
  if (fld_known(c->root, "", keys) || fld_number(c->root, "", "max_elements", 0, 1024, 1e10, &maxe) ||
      load_sweep(c, cJSON_GetObjectItemCaseSensitive(c->root, "sweep"), s) ||
      load_list(c, "platforms", TN_MAX_P, &s->np, s) || load_list(c, "workloads", TN_MAX_W, &s->nw, s))
    return NCCLZ_ERR_ARG;
  s->max_elems = (size_t)maxe;
  for (int i = 0; i < s->nw; i++) run_input(c, s->w[i].label, s->w[i].path, s->w[i].quant, "tune workload");
  return NCCLZ_OK;
}
