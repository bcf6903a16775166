/* The what-if report: the answer first (speedup over plain NCCL by nodes x NIC, one heatmap per
 * collective and size), then speedup and busbw against each axis, every point (table, CSV, JSON),
 * and the published numbers side by side. */
#ifdef NCCLZ_HAVE_SIM
#include "whatif_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { D_WORK, D_COLL, D_NODES, D_GPN, D_NIC, D_BYTES, D_COMP, D_COUNT };
static const char *const DIM_NAMES[D_COUNT] = {"data", "coll", "nodes", "gpn", "nic", "size", "compress"};

typedef struct {
  char v[D_COUNT][72];
} dims_text;

static void point_dims(const wi_point *p, dims_text *d) {
  snprintf(d->v[D_WORK], 72, "%s", p->workload);
  snprintf(d->v[D_COLL], 72, "%s", ncclzCollectiveName(p->p.options.coll));
  snprintf(d->v[D_NODES], 72, "%d", p->p.platform.nodes);
  snprintf(d->v[D_GPN], 72, "%d", p->p.platform.gpus_per_node);
  snprintf(d->v[D_NIC], 72, "%g Gb/s", 8.0 * p->p.platform.nic_gbps);
  fmt_bytes((double)p->p.options.bytes, d->v[D_BYTES], 72);
  snprintf(d->v[D_COMP], 72, "%s", ncclzSimCompressName(p->p.options.compress));
}

static cJSON *point_json(const wi_point *p) {
  cJSON *j = cJSON_CreateObject();
  cJSON_AddStringToObject(j, "workload", p->workload);
  cJSON_AddStringToObject(j, "collective", ncclzCollectiveName(p->p.options.coll));
  cJSON_AddNumberToObject(j, "nodes", p->p.platform.nodes);
  cJSON_AddNumberToObject(j, "gpus_per_node", p->p.platform.gpus_per_node);
  cJSON_AddNumberToObject(j, "nic_gbps", p->p.platform.nic_gbps); /* GB/s, the scenario's name */
  cJSON_AddNumberToObject(j, "nic_GBps", p->p.platform.nic_gbps);
  cJSON_AddNumberToObject(j, "nic_Gbps", 8.0 * p->p.platform.nic_gbps);
  cJSON_AddNumberToObject(j, "bytes", (double)p->p.options.bytes);
  cJSON_AddStringToObject(j, "compress", ncclzSimCompressName(p->p.options.compress));
  cJSON_AddNumberToObject(j, "time_us", p->r.time_us);
  cJSON_AddNumberToObject(j, "nccl_time_us", p->base_us);
  cJSON_AddNumberToObject(j, "algbw", p->algbw);
  cJSON_AddNumberToObject(j, "algbw_GBps", p->algbw);
  cJSON_AddNumberToObject(j, "busbw", p->busbw);
  cJSON_AddNumberToObject(j, "busbw_GBps", p->busbw);
  cJSON_AddNumberToObject(j, "speedup_vs_nccl", p->speedup);
  cJSON_AddNumberToObject(j, "wire_ratio", p->r.wire_bytes > 0 ? p->r.raw_bytes / p->r.wire_bytes : 1.0);
  cJSON_AddStringToObject(j, "algorithm", ncclzAlgorithmName(p->r.algorithm));
  if (p->r.choice >= 0) /* auto: the cost model's pair, replayed */
    cJSON_AddStringToObject(j, "choice_coder", ncclzChoiceCoderName((ncclzChoiceCoder)p->r.choice));
  if (p->r.predicted_us > 0) cJSON_AddNumberToObject(j, "predicted_us", p->r.predicted_us);
  cJSON *mix = cJSON_AddObjectToObject(j, "coders"); /* shares of the frames, as `ncclz sim --json` */
  for (int k = 0; k < NCCLZ_CODER_COUNT && ncclzSimFramesSent(&p->r); k++)
    cJSON_AddNumberToObject(mix, ncclzCoderName((ncclzCoder)k), ncclzSimCoderShare(&p->r, (ncclzCoder)k));
  cJSON_AddStringToObject(j, "fidelity", ncclzSimFidelityName(p->r.fidelity));
  cJSON_AddBoolToObject(j, "approximate", p->r.approximate);
  cJSON_AddNumberToObject(j, "wall_s", p->r.wall_s);
  return j;
}

static ncclzStatus points_table(ncclzReport *r, const wi_results *w) {
  ncclzTable *t = ncclzTableNew("whatif_points", "data\tcollective\tnodes\tgpus/node\tNIC\tsize\tcompress\t"
                                                 "schedule\ttime us\tbusbw GB/s\tspeedup vs NCCL\twire CR\tcoders\tfidelity");
  cJSON *arr = cJSON_AddArrayToObject(ncclzReportJson(r), "points");
  for (size_t i = 0; i < w->n; i++) {
    const wi_point *p = &w->pt[i];
    char mix[96], b[32], nic[64];
    ncclzSimCoderMix(&p->r, " ", mix, sizeof mix);
    fmt_bytes((double)p->p.options.bytes, b, sizeof b);
    ncclzFormatBandwidth(p->p.platform.nic_gbps, nic, sizeof nic);
    ncclzTableAdd(t, "%s\t%s\t%d\t%d\t%s\t%s\t%s\t%s\t%.1f\t%.3f\t%.3f\t%.2f\t%s\t%s(%d)", p->workload,
                  ncclzCollectiveName(p->p.options.coll), p->p.platform.nodes, p->p.platform.gpus_per_node,
                  nic, b, ncclzSimCompressName(p->p.options.compress), ncclzAlgorithmName(p->r.algorithm), p->r.time_us, p->busbw,
                  p->speedup, p->r.wire_bytes > 0 ? p->r.raw_bytes / p->r.wire_bytes : 1.0, mix,
                  ncclzSimFidelityName(p->r.fidelity), p->r.actors);
    cJSON_AddItemToArray(arr, point_json(p));
  }
  if (w->n <= 200) return ncclzReportTable(r, t, "Every simulated point (speedup: plain NCCL time / this time, same platform)");
  return ncclzReportCsvOnly(r, t, "Every simulated point");
}

/* Rows for one plot: compressed points (or all, for busbw), x from the point. */
static size_t collect(const wi_results *w, int x_dim, int busbw, dims_text *dt, xy_row *rows) {
  size_t n = 0;
  for (size_t i = 0; i < w->n; i++) {
    const wi_point *p = &w->pt[i];
    if (!busbw && p->p.options.compress == NCCLZ_SIM_OFF) continue;
    point_dims(p, &dt[n]);
    for (int d = 0; d < D_COUNT; d++) rows[n].dim[d] = dt[n].v[d];
    rows[n].x = x_dim == D_NODES ? p->p.platform.nodes : x_dim == D_NIC ? 8.0 * p->p.platform.nic_gbps : (double)p->p.options.bytes;
    rows[n].y = busbw ? p->busbw : p->speedup;
    n++;
  }
  return n;
}

static int distinct_x(const xy_row *rows, size_t n) {
  for (size_t i = 1; i < n; i++)
    if (rows[i].x != rows[0].x) return 1;
  return 0;
}

static void plots(ncclzReport *r, const wi_results *w) {
  dims_text *dt = malloc((w->n ? w->n : 1) * sizeof *dt);
  xy_row *rows = malloc((w->n ? w->n : 1) * sizeof *rows);
  if (!dt || !rows) goto out;
  static const struct {
    int xdim, busbw, logx, xbytes;
    const char *name, *caption, *xlabel, *ylabel;
  } P[] = {
      {D_NODES, 0, 2, 0, "speedup_nodes", "Speedup over plain NCCL against node count", "nodes", "speedup over NCCL (x)"},
      {D_NIC, 0, 2, 0, "speedup_nic", "Speedup over plain NCCL against NIC bandwidth", "NIC bandwidth per direction (Gb/s)",
       "speedup over NCCL (x)"},
      {D_BYTES, 0, 2, 1, "speedup_size", "Speedup over plain NCCL against message size", "message size (bytes)",
       "speedup over NCCL (x)"},
      {D_BYTES, 1, 2, 1, "busbw_size", "Bus bandwidth against message size (nccl-tests' busbw, uncompressed bytes)",
       "message size (bytes)", "busbw (GB/s)"},
  };
  for (size_t k = 0; k < sizeof P / sizeof P[0]; k++) {
    size_t n = collect(w, P[k].xdim, P[k].busbw, dt, rows);
    if (n < 2 || !distinct_x(rows, n)) continue;
    series_spec sp = {P[k].name, P[k].caption, P[k].caption, P[k].xlabel, P[k].ylabel, DIM_NAMES, D_COUNT, P[k].xdim,
                      P[k].logx, P[k].xbytes, NULL};
    plot_series(r, &sp, rows, n);
  }
out:
  free(dt);
  free(rows);
}

/* ------------------------------------------------------------ paper numbers */

static int match_str(const cJSON *e, const char *key, const char *val) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(e, key);
  return !cJSON_IsString(v) || !strcmp(v->valuestring, val);
}

static int match_num(const cJSON *e, const char *key, double val) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(e, key);
  return !cJSON_IsNumber(v) || fabs(v->valuedouble - val) <= 1e-9 * fabs(val) + 1e-12;
}

static int matches(const cJSON *e, const wi_point *p) {
  return match_str(e, "workload", p->workload) && match_str(e, "collective", ncclzCollectiveName(p->p.options.coll)) &&
         match_str(e, "compress", ncclzSimCompressName(p->p.options.compress)) &&
         match_num(e, "nodes", p->p.platform.nodes) && match_num(e, "bytes", (double)p->p.options.bytes) &&
         match_num(e, "nic_gbps", p->p.platform.nic_gbps);
}

static double metric(const wi_point *p, const char *m) {
  if (!strcmp(m, "speedup")) return p->speedup;
  if (!strcmp(m, "busbw")) return p->busbw;
  if (!strcmp(m, "algbw")) return p->algbw;
  /* "nccl_busbw": plain NCCL's busbw on the same platform */
  int nr = p->p.platform.nodes * p->p.platform.gpus_per_node;
  return ncclzSimBusBw(p->p.options.coll, nr, p->p.options.bytes, p->base_us);
}

static int paper_entry(const cJSON *e, int i, const char **metric_name, double *value, const char **src) {
  static const char *const keys[] = {"workload", "collective", "compress", "nodes", "bytes", "nic_gbps", "metric",
                                     "value", "source", "gap_note", "aggregate", NULL};
  char path[32];
  snprintf(path, sizeof path, "paper[%d]", i);
  if (!cJSON_IsObject(e)) return SCN_ERR("%s: expected an object {metric, value, source, ...}", path), -1;
  if (fld_known(e, path, keys) || fld_string(e, path, "metric", 1, metric_name) ||
      fld_number(e, path, "value", 1, 0, 1e12, value) || fld_string(e, path, "source", 1, src))
    return -1;
  if (strcmp(*metric_name, "speedup") && strcmp(*metric_name, "busbw") && strcmp(*metric_name, "algbw") &&
      strcmp(*metric_name, "nccl_busbw"))
    return SCN_ERR("%s.metric: expected speedup, busbw, algbw or nccl_busbw", path), -1;
  return 0;
}

static void describe(const cJSON *e, char *buf, size_t cap) {
  static const char *const keys[] = {"workload", "collective", "compress", "nodes", "bytes", "nic_gbps", NULL};
  size_t used = 0;
  buf[0] = 0;
  for (const char *const *k = keys; *k && used < cap; k++) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(e, *k);
    if (cJSON_IsString(v)) used += (size_t)snprintf(buf + used, cap - used, "%s%s", used ? ", " : "", v->valuestring);
    else if (cJSON_IsNumber(v) && !strcmp(*k, "bytes")) {
      char b[32];
      fmt_bytes(v->valuedouble, b, sizeof b);
      used += (size_t)snprintf(buf + used, cap - used, "%s%s", used ? ", " : "", b);
    } else if (cJSON_IsNumber(v))
      used += (size_t)snprintf(buf + used, cap - used, "%s%s %g", used ? ", " : "", *k, v->valuedouble);
  }
}

/* "paper": published numbers beside the projection; the largest matching value is compared
 * (the paper reports "up to" figures), and a gap above 20% needs its gap_note. */
static ncclzStatus paper_table(ncclzReport *r, const run_ctx *c, const wi_results *w) {
  const cJSON *paper = cJSON_GetObjectItemCaseSensitive(c->root, "paper");
  if (!paper) return NCCLZ_OK;
  if (!cJSON_IsArray(paper)) return SCN_ERR("paper: expected an array of {metric, value, source, ...}");
  ncclzTable *t = ncclzTableNew("paper_vs_ncclz", "quantity\tmetric\tpaper\tsource\tncclz projection\tdifference\twhy");
  cJSON *arr = cJSON_AddArrayToObject(ncclzReportJson(r), "paper_comparison");
  const cJSON *e;
  int i = 0;
  cJSON_ArrayForEach(e, paper) {
    const char *m = NULL, *src = NULL, *note = NULL;
    double val = 0;
    if (paper_entry(e, i++, &m, &val, &src) || fld_string(e, "paper", "gap_note", 0, &note)) {
      ncclzTableFree(t);
      return NCCLZ_ERR_ARG;
    }
    double best = NAN;
    for (size_t k = 0; k < w->n; k++)
      if (matches(e, &w->pt[k]) && (isnan(best) || metric(&w->pt[k], m) > best)) best = metric(&w->pt[k], m);
    double diff = isnan(best) ? NAN : best / val - 1.0;
    char what[200];
    describe(e, what, sizeof what);
    const char *why = isnan(diff) ? "no simulated point matches" : fabs(diff) <= 0.2 ? "within 20%" : note ? note : "gap above 20%, not explained by the scenario";
    ncclzTableAdd(t, "%s\t%s\t%.3g\t%s\t%.3g\t%+.0f%%\t%s", what, m, val, src, best, 100.0 * diff, why);
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "quantity", what);
    cJSON_AddStringToObject(o, "metric", m);
    cJSON_AddNumberToObject(o, "paper", val);
    cJSON_AddStringToObject(o, "source", src);
    cJSON_AddNumberToObject(o, "ncclz", isnan(best) ? -1 : best);
    cJSON_AddStringToObject(o, "why", why);
    cJSON_AddItemToArray(arr, o);
  }
  ncclzReportHeading(r, "Against the paper's published numbers");
  return ncclzReportTable(r, t, "Paper vs ncclz projection (largest matching simulated value; difference = ncclz / paper - 1)");
}

ncclzStatus whatif_report(ncclzReport *r, run_ctx *c, const wi_results *w) {
  whatif_answer(r, w);
  ncclzReportHeading(r, "Speedup and busbw along each axis");
  ncclzReportText(r, "%zu simulated points (SimGrid replay of the executor's schedules; fidelity chosen per point).", w->n);
  plots(r, w);
  ncclzStatus st = points_table(r, w);
  if (st == NCCLZ_OK) st = paper_table(r, c, w);
  return st;
}
#endif
