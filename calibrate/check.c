/* `ncclz calibrate --check`: how well a profile predicts the plain NCCL collectives, against a
 * fresh measurement that was not used to fit it. Each (path, collective, size) is measured
 * `repeat` times in separate sweeps; the median is compared with the profile's curve, and the
 * repetitions' spread is reported beside the error (the socket path is noisy). */
#include "cal_internal.h"
#include "ncclz/calibrate.h"
#include "ncclz/model.h"
#include "ncclz/schedule.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TRY(x)                           \
  do {                                   \
    ncclzStatus s_ = (x);                \
    if (s_ != NCCLZ_OK) return s_;       \
  } while (0)

static ncclzCalCheckRow *find_row(ncclzCalCheck *c, const char *path, const char *coll, double bytes) {
  for (uint32_t i = 0; i < c->n_rows; i++)
    if (c->rows[i].bytes == bytes && !strcmp(c->rows[i].path, path) && !strcmp(c->rows[i].collective, coll))
      return &c->rows[i];
  return NULL;
}

/* Adds one measured point to its row (a new row for a new key). */
static ncclzStatus add_point(ncclzCalCheck *c, const char *path, const char *coll, const ncclzCalPoint *pt) {
  ncclzCalCheckRow *r = find_row(c, path, coll, pt->bytes);
  if (!r) {
    if (c->n_rows == NCCLZ_CAL_CHECK_MAX_ROWS)
      return ncclzSetError(NCCLZ_ERR_ARG, "check: more than %d (path, collective, size) rows", NCCLZ_CAL_CHECK_MAX_ROWS);
    r = &c->rows[c->n_rows++];
    memset(r, 0, sizeof *r);
    snprintf(r->path, sizeof r->path, "%s", path);
    snprintf(r->collective, sizeof r->collective, "%s", coll);
    r->bytes = pt->bytes;
  }
  if (r->n == NCCLZ_CAL_CHECK_MAX_REPEAT)
    return ncclzSetError(NCCLZ_ERR_ARG, "check %s %s %.0f B: more than %d repetitions", path, coll, pt->bytes,
                         NCCLZ_CAL_CHECK_MAX_REPEAT);
  r->us[r->n++] = pt->us;
  return NCCLZ_OK;
}

static ncclzStatus read_entries(const ncclzProfile *prof, const cJSON *arr, ncclzCalCheck *c) {
  const cJSON *e;
  int i = 0;
  if (!cJSON_IsArray(arr)) return ncclzSetError(NCCLZ_ERR_ARG, "check points collectives: missing or not an array");
  cJSON_ArrayForEach(e, arr) {
    char where[64];
    snprintf(where, sizeof where, "collectives[%d]", i++);
    const char *path = ncclz_cal_get_str(e, "path"), *coll = ncclz_cal_get_str(e, "collective");
    if (!path || ncclzCalPathFromName(path) < 0)
      return ncclzSetError(NCCLZ_ERR_ARG, "check points %s.path: nvlink, shm, socket, socket1x1 or socket4x4", where);
    if (!coll || ncclzCollectiveFromName(coll) < 0)
      return ncclzSetError(NCCLZ_ERR_ARG, "check points %s.collective: unknown", where);
    const cJSON *rk = cJSON_GetObjectItemCaseSensitive(e, "ranks");
    double ranks = cJSON_IsNumber(rk) ? rk->valuedouble : 2;
    if (prof->plain_ranks && ranks != (double)prof->plain_ranks)
      return ncclzSetError(NCCLZ_ERR_ARG, "check points %s.ranks: %g, but the profile was measured on %u ranks", where,
                           ranks, prof->plain_ranks);
    ncclzCalPoint pts[NCCLZ_CAL_MAX_RAW_POINTS];
    size_t n = 0;
    TRY(ncclz_cal_read_points(cJSON_GetObjectItemCaseSensitive(e, "points"), where, pts, &n));
    for (size_t k = 0; k < n; k++) {
      if (!(pts[k].bytes > 0 && pts[k].us > 0 && isfinite(pts[k].us)))
        return ncclzSetError(NCCLZ_ERR_ARG, "check points %s: bytes and us must be > 0", where);
      if (pts[k].bytes >= NCCLZ_CAL_MIN_FIT_BYTES) TRY(add_point(c, path, coll, &pts[k]));
    }
  }
  return NCCLZ_OK;
}

/* Median, spread, prediction and error of every row; then the summary. */
static ncclzStatus summarize(const ncclzProfile *prof, ncclzCalCheck *c) {
  double *err = malloc((c->n_rows + 1) * sizeof *err), *spr = malloc((c->n_rows + 1) * sizeof *spr);
  if (!err || !spr) {
    free(err);
    free(spr);
    return ncclzSetError(NCCLZ_ERR_NOMEM, "calibrate --check: out of memory for %u rows", c->n_rows);
  }
  uint32_t ne = 0;
  for (uint32_t i = 0; i < c->n_rows; i++) {
    ncclzCalCheckRow *r = &c->rows[i];
    double v[NCCLZ_CAL_CHECK_MAX_REPEAT];
    memcpy(v, r->us, r->n * sizeof *v);
    r->median_us = ncclzMedian(v, r->n);
    r->spread = (v[r->n - 1] - v[0]) / r->median_us;
    r->predicted_us = ncclzProfilePlainUs(prof, r->path, r->collective, r->bytes);
    spr[i] = r->spread;
    if (r->predicted_us < 0) {
      c->n_missing++;
      continue;
    }
    r->error = (r->predicted_us - r->median_us) / r->median_us;
    err[ne++] = fabs(r->error);
    if (fabs(r->error) > c->max_abs_error) {
      c->max_abs_error = fabs(r->error);
      snprintf(c->worst, sizeof c->worst, "%s %s %.0f B", r->path, r->collective, r->bytes);
    }
    if (fabs(r->error) > NCCLZ_CAL_CHECK_MAX) c->n_over++;
  }
  c->median_abs_error = ne ? ncclzMedian(err, ne) : 0;
  c->median_spread = c->n_rows ? ncclzMedian(spr, c->n_rows) : 0;
  c->max_spread = c->n_rows ? spr[c->n_rows - 1] : 0; /* sorted by ncclzMedian() */
  c->target_met = ne > 0 && !c->n_missing && c->median_abs_error <= NCCLZ_CAL_CHECK_MEDIAN && !c->n_over;
  free(err);
  free(spr);
  return NCCLZ_OK;
}

ncclzStatus ncclzCalCheckPoints(const ncclzProfile *prof, const char *json, size_t len, ncclzCalCheck *out) {
  memset(out, 0, offsetof(ncclzCalCheck, rows)); /* the rows are filled as they come */
  cJSON *root;
  ncclzStatus js = ncclzJsonParse("check points", json, len, &root);
  if (js != NCCLZ_OK) return js;
  if (!cJSON_IsObject(root)) {
    cJSON_Delete(root);
    return ncclzSetError(NCCLZ_ERR_ARG, "check points: not a JSON object");
  }
  ncclzStatus st = read_entries(prof, cJSON_GetObjectItemCaseSensitive(root, "collectives"), out);
  cJSON_Delete(root);
  if (st) return st;
  if (!out->n_rows) return ncclzSetError(NCCLZ_ERR_ARG, "check points: no collective measured at >= 1 MiB");
  return summarize(prof, out);
}

void ncclzCalCheckReport(const ncclzCalCheck *c, FILE *f) {
  fprintf(f, "#\n#  %-9s %-13s %12s %4s %12s %8s %12s %8s\n", "path", "collective", "size", "reps", "time(us)",
          "spread%", "predict(us)", "error%");
  for (uint32_t i = 0; i < c->n_rows; i++) {
    const ncclzCalCheckRow *r = &c->rows[i];
    if (r->predicted_us < 0)
      fprintf(f, "   %-9s %-13s %12.0f %4u %12.1f %8.1f %12s %8s\n", r->path, r->collective, r->bytes, r->n,
              r->median_us, 100 * r->spread, "-", "-");
    else
      fprintf(f, "   %-9s %-13s %12.0f %4u %12.1f %8.1f %12.1f %8.1f\n", r->path, r->collective, r->bytes, r->n,
              r->median_us, 100 * r->spread, r->predicted_us, 100 * r->error);
  }
  fprintf(f, "# rows: %u (%u without a profile curve)\n", c->n_rows, c->n_missing);
  fprintf(f, "# |error|: median %.1f%%, max %.1f%% (%s), %u over %.0f%%\n", 100 * c->median_abs_error,
          100 * c->max_abs_error, c->worst[0] ? c->worst : "-", c->n_over, 100 * NCCLZ_CAL_CHECK_MAX);
  fprintf(f, "# run-to-run spread of the fresh measurement: median %.1f%%, max %.1f%%\n", 100 * c->median_spread,
          100 * c->max_spread);
  fprintf(f, "# target (median <= %.0f%%, none > %.0f%%, every row predicted): %s\n", 100 * NCCLZ_CAL_CHECK_MEDIAN,
          100 * NCCLZ_CAL_CHECK_MAX, c->target_met ? "met" : "MISSED");
}

char *ncclzCalCheckJson(const ncclzCalCheck *c, const ncclzProfile *prof) {
  cJSON *root = cJSON_CreateObject();
  cJSON *m = cJSON_AddObjectToObject(root, "profile");
  cJSON_AddStringToObject(m, "device", prof->meta.device);
  cJSON_AddStringToObject(m, "nccl", prof->meta.nccl);
  cJSON_AddStringToObject(m, "date", prof->meta.date);
  cJSON_AddNumberToObject(m, "ranks", prof->plain_ranks);
  cJSON *s = cJSON_AddObjectToObject(root, "summary");
  cJSON_AddNumberToObject(s, "rows", c->n_rows);
  cJSON_AddNumberToObject(s, "missing", c->n_missing);
  cJSON_AddNumberToObject(s, "median_abs_error", c->median_abs_error);
  cJSON_AddNumberToObject(s, "max_abs_error", c->max_abs_error);
  cJSON_AddStringToObject(s, "worst", c->worst);
  cJSON_AddNumberToObject(s, "over_max", c->n_over);
  cJSON_AddNumberToObject(s, "median_spread", c->median_spread);
  cJSON_AddNumberToObject(s, "max_spread", c->max_spread);
  cJSON_AddNumberToObject(s, "target_median", NCCLZ_CAL_CHECK_MEDIAN);
  cJSON_AddNumberToObject(s, "target_max", NCCLZ_CAL_CHECK_MAX);
  cJSON_AddBoolToObject(s, "target_met", c->target_met);
  cJSON *rows = cJSON_AddArrayToObject(root, "rows");
  for (uint32_t i = 0; i < c->n_rows; i++) {
    const ncclzCalCheckRow *r = &c->rows[i];
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "path", r->path);
    cJSON_AddStringToObject(o, "collective", r->collective);
    cJSON_AddNumberToObject(o, "bytes", r->bytes);
    cJSON *us = cJSON_AddArrayToObject(o, "us");
    for (uint32_t k = 0; k < r->n; k++) cJSON_AddItemToArray(us, cJSON_CreateNumber(r->us[k]));
    cJSON_AddNumberToObject(o, "median_us", r->median_us);
    cJSON_AddNumberToObject(o, "spread", r->spread);
    if (r->predicted_us >= 0) {
      cJSON_AddNumberToObject(o, "predicted_us", r->predicted_us);
      cJSON_AddNumberToObject(o, "error", r->error);
    }
    cJSON_AddItemToArray(rows, o);
  }
  char *text = cJSON_Print(root);
  cJSON_Delete(root);
  if (!text) ncclzSetError(NCCLZ_ERR_NOMEM, "out of memory");
  return text;
}
