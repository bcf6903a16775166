/* Sections every report can hold: provenance (profile metadata and sources, data inputs) and the
 * REA break-even surface of a data set. */
#include "report_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

void run_path(const run_ctx *c, const char *rel, char *out, size_t cap) {
  int n = rel[0] == '/' || !c->dir[0] ? snprintf(out, cap, "%s", rel) : snprintf(out, cap, "%s/%s", c->dir, rel);
  if (n < 0 || (size_t)n >= cap) out[cap - 1] = 0; /* truncated: the open fails and names the path */
}

void run_input(run_ctx *c, const char *what, const char *path, const char *quant, const char *note) {
  if (!c->inputs) return;
  cJSON *o = cJSON_CreateObject();
  cJSON_AddStringToObject(o, "what", what);
  cJSON_AddStringToObject(o, "path", path ? path : "");
  cJSON_AddStringToObject(o, "quant", quant ? quant : "");
  cJSON_AddStringToObject(o, "note", note ? note : "");
  cJSON_AddItemToArray(c->inputs, o);
}

/* The profile's own "sources" (an object or array of strings, ignored by the loader) as
 * "key: text" rows. */
static void profile_sources(ncclzReport *r, const char *path, cJSON *out) {
  cJSON *root;
  if (ncclzJsonLoad("profile", path, &root) != NCCLZ_OK) return; /* loaded once already: read it the same way */
  const cJSON *meta = cJSON_GetObjectItemCaseSensitive(root, "metadata");
  const cJSON *src = cJSON_GetObjectItemCaseSensitive(meta, "sources");
  if (!src) src = cJSON_GetObjectItemCaseSensitive(root, "sources");
  if (src) {
    ncclzTable *t = ncclzTableNew("profile_sources", "number\tsource");
    const cJSON *it;
    int i = 0;
    cJSON_ArrayForEach(it, src) {
      if (!cJSON_IsString(it)) continue;
      ncclzTableAdd(t, "%s\t%s", it->string ? it->string : "", it->valuestring);
      i++;
    }
    ncclzReportTable(r, t, "Where each number of the profile comes from (its metadata.sources)");
    cJSON_AddItemToObject(out, "sources", cJSON_Duplicate(src, 1));
  }
  cJSON_Delete(root);
}

static void profile_section(ncclzReport *r, const run_ctx *c, cJSON *prov) {
  const ncclzProfile *p = c->prof;
  cJSON *pj = cJSON_AddObjectToObject(prov, "profile");
  cJSON_AddStringToObject(pj, "path", c->profile_path);
  const char *keys[] = {"device", "driver", "cuda", "nccl", "date", "method"};
  const char *vals[] = {p->meta.device, p->meta.driver, p->meta.cuda, p->meta.nccl, p->meta.date, p->meta.method};
  ncclzTable *t = ncclzTableNew("profile", "field\tvalue");
  ncclzTableAdd(t, "file\t%s", c->profile_path);
  for (int i = 0; i < 6; i++) {
    ncclzTableAdd(t, "%s\t%s", keys[i], vals[i]);
    cJSON_AddStringToObject(pj, keys[i], vals[i]);
  }
  for (int h = 0; h < NCCLZ_HINT_COUNT; h++)
    ncclzTableAdd(t, "transport %s\talpha %.3g us, beta %.4g GB/s", ncclzHintName((ncclzTransportHint)h),
                  p->transport[h].alpha_us, p->transport[h].beta_gbps);
  const ncclzThresholds *th = &p->thresholds;
  ncclzTableAdd(t, "thresholds\tfast_path %llu, T_huff %llu, minGain %u permil, window %u B, pieces %u, frame %llu B",
                (unsigned long long)th->fast_path_bytes, (unsigned long long)th->huff_min_bytes, th->min_gain_permil,
                th->sample_window_bytes, th->sample_pieces, (unsigned long long)th->frame_bytes);
  ncclzReportTable(r, t, "Calibration profile");
  profile_sources(r, c->profile_path, pj);
}

void section_provenance(ncclzReport *r, const run_ctx *c) {
  cJSON *prov = cJSON_AddObjectToObject(ncclzReportJson(r), "provenance");
  ncclzReportHeading(r, "Calibration and data provenance");
  char when[64];
  time_t now = time(NULL);
  strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", gmtime(&now));
  ncclzReportText(r, "Scenario %s (kind %s), run %s.", c->opt->scenario, c->kind, when);
  cJSON_AddStringToObject(prov, "run_date", when);
  if (c->prof) profile_section(r, c, prov);
  else ncclzReportText(r, "This kind uses no calibration profile.");
  int n = c->inputs ? cJSON_GetArraySize(c->inputs) : 0;
  if (!n) return;
  ncclzTable *t = ncclzTableNew("data_inputs", "input\tpath\tquantizer\tnote");
  const cJSON *it;
  cJSON_ArrayForEach(it, c->inputs) {
    const char *f[4];
    const char *keys[4] = {"what", "path", "quant", "note"};
    for (int i = 0; i < 4; i++) f[i] = cJSON_GetObjectItemCaseSensitive(it, keys[i])->valuestring;
    ncclzTableAdd(t, "%s\t%s\t%s\t%s", f[0], f[1], f[2], f[3]);
  }
  ncclzReportTable(r, t, "Data inputs (data profiles, data files, measurement files)");
}

/* ------------------------------------------------------------- the surface */

typedef struct {
  ncclzSymbols syms;
  ncclzSurfaceData data;
  ncclzReaConfig cfg;
  char quant[128];
} surf_in;

/* Reads and quantizes the surface's data file, then samples it frame by frame like the runtime. */
static int surface_inputs(const run_ctx *c, const cJSON *s, surf_in *in, char *path, size_t cap) {
  static const char *const keys[] = {"file", "quant", "dims", "hint", "label", NULL};
  const char *file = NULL, *quant = NULL, *hint = "net";
  double *dims = NULL;
  int nd = 0;
  if (fld_known(s, "surface", keys) || fld_string(s, "surface", "file", 1, &file) ||
      fld_string(s, "surface", "quant", 1, &quant) || fld_string(s, "surface", "hint", 0, &hint) ||
      fld_numbers(s, "surface", "dims", 0, 1, 1 << 30, 1, &dims, &nd))
    return -1;
  int h = ncclzHintFromName(hint);
  ncclzQuantSpec spec;
  if (h < 0) return free(dims), SCN_ERR("surface.hint: expected nvlink, shm or net"), -1;
  if (nd > 3) return free(dims), SCN_ERR("surface.dims: at most 3 dimensions"), -1;
  if (ncclzQuantSpecParse(quant, &spec) != NCCLZ_OK) return free(dims), SCN_ERR("surface.quant: %s", ncclzLastError()), -1;
  ncclzQuantSpecFormat(&spec, in->quant, sizeof in->quant);
  run_path(c, file, path, cap);
  size_t len;
  char *raw = ncclzReadFile(NULL, path, &len);
  uint32_t d3[3] = {0, 0, 0};
  for (int i = 0; i < nd; i++) d3[i] = (uint32_t)dims[i];
  free(dims);
  if (!raw) return SCN_ERR("surface.file: cannot read '%s'", path), -1;
  ncclzStatus st = len >= 4 ? ncclzArrayQuantize(&spec, NCCLZ_DTYPE_F32, raw, len / 4, nd ? d3 : NULL, nd, 0, &in->syms)
                            : ncclzSetError(NCCLZ_ERR_ARG, "empty file");
  free(raw);
  if (st != NCCLZ_OK) return SCN_ERR("surface.file: '%s': %s", path, ncclzLastError()), -1;
  ncclzReaConfigFromProfile(c->prof, (ncclzTransportHint)h, ncclzDataClassOf(&in->syms.qp), &in->cfg);
  size_t fs = c->prof->thresholds.frame_bytes / 4 ? c->prof->thresholds.frame_bytes / 4 : 1;
  if (ncclzReaSampleProfileFrames(in->syms.sym, in->syms.n, fs, in->cfg.sample_window_bytes, in->cfg.sample_pieces,
                                  &in->data.stats) != NCCLZ_OK)
    return -1;
  in->data.dtype_bytes = 4;
  in->data.quant = &in->syms.qp;
  ncclzFrameCoderParams(&in->data.coder_params); /* the executor's frames */
  return 0;
}

static void surface_plot(ncclzReport *r, const char *data, size_t nbw, const double *bw, size_t nsz,
                         const uint64_t *sz) {
  sbuf s;
  sb_init(&s);
  sb_puts(&s, "set title 'Best coder (REA argmin) by link bandwidth and message size'\n"
              "set xlabel 'link bandwidth (GB/s)'\nset ylabel 'message size (bytes)'\n"
              "set palette defined (0 '#bbbbbb', 1 '#3b7dd8', 2 '#e0702a')\nset cbrange [-0.5:2.5]\n"
              "set cbtics ('RAW' 0, 'FIXEDLEN' 1, 'HUFFMAN' 2)\nset cblabel 'coder'\nunset grid\nunset key\n"
              "set xtics (");
  for (size_t j = 0; j < nbw; j += 4) sb_printf(&s, "%s'%g' %zu", j ? ", " : "", bw[j], j);
  sb_puts(&s, ")\nset ytics (");
  for (size_t i = 0; i < nsz; i += 2) {
    char b[32];
    fmt_bytes((double)sz[i], b, sizeof b);
    sb_printf(&s, "%s'%s' %zu", i ? ", " : "", b, i);
  }
  sb_printf(&s, ")\nset xrange [-0.5:%zu.5]\nset yrange [-0.5:%zu.5]\nplot DATA using 1:2:3 with image pixels\n", nbw - 1,
            nsz - 1);
  ncclzReportPlot(r, "surface", "Break-even surface: the coder REA picks", sb_str(&s), data);
  sb_free(&s);
}

ncclzStatus section_surface(ncclzReport *r, const run_ctx *c) {
  const cJSON *s = cJSON_GetObjectItemCaseSensitive(c->root, "surface");
  if (!s) return NCCLZ_OK;
  if (!cJSON_IsObject(s)) return SCN_ERR("surface: expected an object {file, quant[, dims, hint]}");
  surf_in *in = calloc(1, sizeof *in);
  char path[1200];
  if (!in) return ncclzSetError(NCCLZ_ERR_NOMEM, "out of memory");
  if (surface_inputs(c, s, in, path, sizeof path)) {
    ncclzSymbolsFree(&in->syms);
    free(in);
    return NCCLZ_ERR_ARG;
  }
  run_input((run_ctx *)c, "surface data", path, in->quant, "sample-profiled frame by frame as the runtime does");
  ncclzSurfaceGrid g;
  ncclzSurfaceGridDefault(&g);
  double bw[64];
  uint64_t sz[64];
  size_t nbw = ncclzSurfaceBandwidths(&g, bw, 64), nsz = ncclzSurfaceSizes(&g, sz, 64);
  ncclzReportHeading(r, "Break-even surface");
  ncclzReportText(r, "For %s (quantizer %s) on profile %s, hint %s: the coder REA's cost model picks for each link "
                     "bandwidth and message size, messages cut into frames of %llu bytes.", path, in->quant,
                  c->prof->meta.device, ncclzHintName(in->cfg.hint),
                  (unsigned long long)c->prof->thresholds.frame_bytes);
  ncclzTable *t = ncclzTableNew("surface", "bandwidth_gbps\tbytes\tcoder\ttime_us\traw_us\tfixedlen_us\thuffman_us");
  cJSON *arr = cJSON_AddArrayToObject(ncclzReportJson(r), "surface");
  sbuf data;
  sb_init(&data);
  for (size_t i = 0; i < nsz; i++) {
    for (size_t j = 0; j < nbw; j++) {
      ncclzSurfacePoint p;
      ncclzSurfacePointEval(c->prof, &in->cfg, &in->data, bw[j], sz[i], &p);
      double us[3];
      for (int k = 0; k < 3; k++) us[k] = p.coder_us[k] < 1e299 ? p.coder_us[k] : NAN;
      ncclzTableAdd(t, "%g\t%llu\t%s\t%.4g\t%.4g\t%.4g\t%.4g", bw[j], (unsigned long long)sz[i], ncclzCoderName(p.coder),
                    p.time_us, us[0], us[1], us[2]);
      sb_printf(&data, "%zu %zu %d\n", j, i, (int)p.coder);
      cJSON *o = cJSON_CreateObject();
      cJSON_AddNumberToObject(o, "bandwidth_gbps", bw[j]);
      cJSON_AddNumberToObject(o, "bytes", (double)sz[i]);
      cJSON_AddStringToObject(o, "coder", ncclzCoderName(p.coder));
      cJSON_AddNumberToObject(o, "time_us", p.time_us);
      cJSON_AddItemToArray(arr, o);
    }
    sb_puts(&data, "\n");
  }
  surface_plot(r, sb_str(&data), nbw, bw, nsz, sz);
  ncclzStatus st = ncclzReportCsvOnly(r, t, "Break-even surface, every point with the predicted time of each coder");
  sb_free(&data);
  ncclzSymbolsFree(&in->syms);
  free(in);
  return st;
}
