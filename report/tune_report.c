/* The tune report: the recommended thresholds beside the profile's, their regret per platform
 * against the oracle (and against always-RAW/FIXEDLEN/HUFFMAN), the best configurations, and the
 * regret as each parameter moves with the others at the recommendation. */
#include "tune_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A threshold's value for people: permil as is, byte counts in KiB/MiB. */
static void par_text(int k, double v, char *buf, size_t cap) {
  if (k == PAR_GAIN) snprintf(buf, cap, "%g", v);
  else fmt_bytes(v, buf, cap);
}

static void config_text(const tn_setup *s, const tn_config *cf, char *buf, size_t cap) {
  char v[PAR_COUNT][32];
  for (int k = 0; k < PAR_COUNT; k++) par_text(k, s->v[k][cf->idx[k]], v[k], 32);
  snprintf(buf, cap, "T_huff %s, minGain %s, fast %s, window %s, frame %s", v[0], v[1], v[2], v[3], v[4]);
}

static void regret_row(ncclzTable *t, const tn_setup *s, const char *what, const tn_config *cf, const char *cfg) {
  sbuf row;
  sb_init(&row);
  sb_printf(&row, "%s\t%s\t%.2f%%\t%.1f%%", what, cfg, 100.0 * cf->mean, 100.0 * cf->worst_msg);
  for (int p = 0; p < s->np; p++) sb_printf(&row, "\t%.2f%%", 100.0 * cf->regret[p]);
  ncclzTableAdd(t, "%s", sb_str(&row));
  sb_free(&row);
}

static cJSON *config_json(const tn_setup *s, const tn_config *cf) {
  cJSON *o = cJSON_CreateObject();
  for (int k = 0; k < PAR_COUNT; k++) cJSON_AddNumberToObject(o, TN_PAR_NAMES[k], s->v[k][cf->idx[k]]);
  cJSON_AddNumberToObject(o, "regret_mean", cf->mean);
  cJSON_AddNumberToObject(o, "regret_worst_message", cf->worst_msg);
  cJSON *per = cJSON_AddObjectToObject(o, "regret_per_platform");
  for (int p = 0; p < s->np; p++) cJSON_AddNumberToObject(per, s->p[p].label, cf->regret[p]);
  return o;
}

static int cmp_mean(const void *a, const void *b) {
  double x = (*(const tn_config *const *)a)->mean, y = (*(const tn_config *const *)b)->mean;
  return (x > y) - (x < y);
}

static ncclzStatus regret_table(ncclzReport *r, const tn_setup *s, const tn_config *cfgs, size_t ncfg, size_t best,
                                const tn_config *current, const tn_config *fixed) {
  sbuf head;
  sb_init(&head);
  sb_puts(&head, "setting\tthresholds\tmean regret\tworst message");
  for (int p = 0; p < s->np; p++) sb_printf(&head, "\t%s", s->p[p].label);
  ncclzTable *t = ncclzTableNew("tune_regret", sb_str(&head));
  sb_free(&head);
  char txt[200];
  tn_config orc = cfgs[best];
  memset(orc.regret, 0, sizeof orc.regret);
  orc.mean = orc.worst_msg = 0;
  regret_row(t, s, "oracle (best coder and frame size per message)", &orc, "-");
  config_text(s, &cfgs[best], txt, sizeof txt);
  regret_row(t, s, "recommended", &cfgs[best], txt);
  config_text(s, current, txt, sizeof txt);
  regret_row(t, s, "profile's thresholds", current, txt);
  for (int k = 0; k < NCCLZ_CODER_COUNT; k++) {
    char what[64];
    snprintf(what, sizeof what, "always %s", ncclzCoderName((ncclzCoder)k));
    regret_row(t, s, what, &fixed[k], "recommended frame size");
  }
  const tn_config **order = malloc(ncfg * sizeof *order);
  for (size_t i = 0; order && i < ncfg; i++) order[i] = &cfgs[i];
  if (order) qsort(order, ncfg, sizeof *order, cmp_mean);
  for (size_t i = 1; order && i < ncfg && i < 11; i++) {
    char what[32];
    snprintf(what, sizeof what, "rank %zu", i + 1);
    config_text(s, order[i], txt, sizeof txt);
    regret_row(t, s, what, order[i], txt);
  }
  free(order);
  return ncclzReportTable(r, t, "Regret against the oracle (extra time over the oracle's, weighted over the workload mix)");
}

static ncclzStatus recommended_table(ncclzReport *r, const run_ctx *c, const tn_setup *s, const tn_config *best,
                                     const tn_config *current) {
  ncclzTable *t = ncclzTableNew("tune_recommended", "threshold\trecommended\tprofile\tswept values");
  cJSON *rec = cJSON_AddObjectToObject(ncclzReportJson(r), "recommended_thresholds");
  for (int k = 0; k < PAR_COUNT; k++) {
    sbuf vals;
    sb_init(&vals);
    char rv[32], pv[32], v[32];
    for (int j = 0; j < s->nv[k]; j++) {
      par_text(k, s->v[k][j], v, sizeof v);
      sb_printf(&vals, "%s%s", j ? ", " : "", v);
    }
    par_text(k, s->v[k][best->idx[k]], rv, sizeof rv);
    par_text(k, s->v[k][current->idx[k]], pv, sizeof pv);
    ncclzTableAdd(t, "%s\t%s\t%s\t%s", TN_PAR_NAMES[k], rv, pv, sb_str(&vals));
    cJSON_AddNumberToObject(rec, TN_PAR_NAMES[k], s->v[k][best->idx[k]]);
    sb_free(&vals);
  }
  cJSON_AddNumberToObject(rec, "sample_pieces", c->prof->thresholds.sample_pieces);
  ncclzTableAdd(t, "sample_pieces\t%u\t%u\tnot swept", c->prof->thresholds.sample_pieces, c->prof->thresholds.sample_pieces);
  return ncclzReportTable(r, t, "Recommended thresholds (the profile's \"thresholds\" block, PROFILE.md)");
}

/* A parameter whose every value gives every platform the same regret (within 0.01 points) has no
 * plot to show: one line says so. rows: value-major, platform-minor. */
static int flat_line(ncclzReport *r, const tn_setup *s, int k, const xy_row *rows, size_t n) {
  for (size_t i = (size_t)s->np; i < n; i++)
    if (rows[i].y > rows[i % (size_t)s->np].y + 0.01 || rows[i].y < rows[i % (size_t)s->np].y - 0.01) return 0;
  sbuf t;
  sb_init(&t);
  for (int p = 0; p < s->np; p++) sb_printf(&t, "%s%s %.2f%%", p ? ", " : "", s->p[p].label, rows[p].y);
  ncclzReportText(r, "Regret against %s (the other thresholds at the recommendation): the same for each of its %d "
                     "values (%s).", TN_PAR_NAMES[k], s->nv[k], sb_str(&t));
  sb_free(&t);
  return 1;
}

/* Regret against each parameter's values, the others at the recommendation, per platform. */
static void sensitivity(ncclzReport *r, const tn_setup *s, const tn_config *cfgs, size_t best) {
  static const char *const dims[] = {"platform"};
  size_t stride[PAR_COUNT], acc = 1;
  for (int k = PAR_COUNT - 1; k >= 0; k--) stride[k] = acc, acc *= (size_t)s->nv[k];
  for (int k = 0; k < PAR_COUNT; k++) {
    if (s->nv[k] < 2) continue;
    xy_row rows[TN_MAX_V * TN_MAX_P];
    size_t n = 0;
    for (int j = 0; j < s->nv[k]; j++) {
      size_t i = best - (size_t)cfgs[best].idx[k] * stride[k] + (size_t)j * stride[k];
      for (int p = 0; p < s->np; p++, n++) {
        rows[n].dim[0] = s->p[p].label;
        rows[n].x = s->v[k][j] > 0 ? s->v[k][j] : 0.5;
        rows[n].y = 100.0 * cfgs[i].regret[p];
      }
    }
    if (flat_line(r, s, k, rows, n)) continue;
    char name[64], cap[160], xl[96];
    snprintf(name, sizeof name, "tune_%s", TN_PAR_NAMES[k]);
    snprintf(cap, sizeof cap, "Regret against %s (the other thresholds at the recommendation)", TN_PAR_NAMES[k]);
    snprintf(xl, sizeof xl, k == PAR_GAIN ? "%s (permil)" : "%s (bytes; 0 drawn at 0.5)", TN_PAR_NAMES[k]);
    series_spec sp = {name, cap, cap, xl, "regret vs oracle (%)", dims, 1, -1, k == PAR_GAIN ? 0 : 2, k != PAR_GAIN, NULL};
    plot_series(r, &sp, rows, n);
  }
}

ncclzStatus tune_report(ncclzReport *r, run_ctx *c, const tn_setup *s, const tn_config *cfgs, size_t ncfg, size_t best,
                        const tn_config *current, const tn_config *fixed) {
  ncclzReportHeading(r, "Recommended arbitration thresholds");
  const ncclzProfileMeta *m = &c->prof->meta;
  ncclzReportText(r, "For the calibration profile %s: %s, measured %s (%s).", c->profile_path,
                  m->device[0] ? m->device : "device not named", m->date[0] ? m->date : "(no date)",
                  m->method[0] ? m->method : "no method recorded");
  ncclzReportText(r, "%zu configurations (every combination of the swept values; the profile's own values are added "
                     "to each axis) x %d workloads x %d platforms, evaluated with REA's own decision functions on "
                     "sampled statistics and charged the realized cost (frames actually encoded). The oracle picks "
                     "the best coder and frame size per message; regret = weighted time / oracle time - 1.",
                  ncfg, s->nw, s->np);
  ncclzStatus st = recommended_table(r, c, s, &cfgs[best], current);
  if (st == NCCLZ_OK) st = regret_table(r, s, cfgs, ncfg, best, current, fixed);
  cJSON *j = ncclzReportJson(r);
  cJSON_AddItemToObject(j, "recommended", config_json(s, &cfgs[best]));
  cJSON_AddItemToObject(j, "profile_thresholds", config_json(s, current));
  cJSON *fx = cJSON_AddObjectToObject(j, "fixed_coders");
  for (int k = 0; k < NCCLZ_CODER_COUNT; k++) cJSON_AddItemToObject(fx, ncclzCoderName((ncclzCoder)k), config_json(s, &fixed[k]));
  cJSON_AddNumberToObject(j, "oracle_regret", 0.0);
  cJSON_AddNumberToObject(j, "configurations", (double)ncfg);
  if (st == NCCLZ_OK) sensitivity(r, s, cfgs, best);
  ncclzTable *t = ncclzTableNew("tune_workloads", "workload\tfile\tquantizer\tweight\tframe bytes\tCR raw\tCR fixedlen\tCR huffman");
  for (int i = 0; i < s->nw; i++)
    for (int f = 0; f < s->w[i].nf; f++) {
      char fb[32];
      fmt_bytes(s->w[i].f_bytes[f], fb, sizeof fb);
      ncclzTableAdd(t, "%s\t%s\t%s\t%g\t%s\t%.3f\t%.3f\t%.3f", s->w[i].label, s->w[i].path, s->w[i].quant, s->w[i].weight,
                    fb, s->w[i].cr[f][0], s->w[i].cr[f][1], s->w[i].cr[f][2]);
    }
  if (st == NCCLZ_OK) st = ncclzReportTable(r, t, "Workloads: realized CR per frame size (the oracle's and the charged costs use these)");
  else ncclzTableFree(t);
  if (st == NCCLZ_OK) st = section_surface(r, c);
  return st;
}
