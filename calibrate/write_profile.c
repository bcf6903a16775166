/* From a points document to a schema-v1 calibration profile (model/PROFILE.md):
 * parse the measured points, fit them (calibrate/fit.c), assemble the profile with cJSON and
 * check it with ncclzProfileParse. The fits and their residuals go under the top-level key "fit"
 * (the loader ignores unknown top-level keys). docs/calibrate.md describes the points document. */
#include "cal_internal.h"
#include "ncclz/calibrate.h"
#include "ncclz/model.h"
#include "ncclz/schedule.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define TRY(expr)                          \
  do {                                     \
    ncclzStatus try_s_ = (expr);           \
    if (try_s_ != NCCLZ_OK) return try_s_; \
  } while (0)

static void add_note(ncclzCalResult *r, const char *fmt, const char *a, const char *b) {
  size_t len = strlen(r->notes);
  if (len + 1 >= sizeof r->notes) return;
  snprintf(r->notes + len, sizeof r->notes - len, "%s", len ? "; " : "");
  len = strlen(r->notes);
  snprintf(r->notes + len, sizeof r->notes - len, fmt, a, b);
}

/* [[bytes, us], ...] or [{"bytes": B, "us": T}, ...], appended to pts. */
ncclzStatus ncclz_cal_read_points(const cJSON *arr, const char *where, ncclzCalPoint *pts, size_t *n) {
  if (!cJSON_IsArray(arr)) return ncclzSetError(NCCLZ_ERR_ARG, "points %s: must be an array of [bytes, us]", where);
  const cJSON *it;
  cJSON_ArrayForEach(it, arr) {
    double b, t;
    const cJSON *first = cJSON_IsArray(it) ? it->child : NULL, *second = first ? first->next : NULL;
    if (cJSON_IsNumber(first) && cJSON_IsNumber(second)) {
      b = first->valuedouble;
      t = second->valuedouble;
    } else if (cJSON_IsObject(it) && cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(it, "bytes")) &&
               cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(it, "us"))) {
      b = cJSON_GetObjectItemCaseSensitive(it, "bytes")->valuedouble;
      t = cJSON_GetObjectItemCaseSensitive(it, "us")->valuedouble;
    } else {
      return ncclzSetError(NCCLZ_ERR_ARG, "points %s: each point is [bytes, us]", where);
    }
    if (*n >= NCCLZ_CAL_MAX_RAW_POINTS)
      return ncclzSetError(NCCLZ_ERR_ARG, "points %s: more than %d points", where, NCCLZ_CAL_MAX_RAW_POINTS);
    pts[(*n)++] = (ncclzCalPoint){b, t};
  }
  return NCCLZ_OK;
}

const char *ncclz_cal_get_str(const cJSON *o, const char *key) {
  const cJSON *it = cJSON_GetObjectItemCaseSensitive(o, key);
  return cJSON_IsString(it) ? it->valuestring : NULL;
}

static int cmp_bytes(const void *a, const void *b) {
  const ncclzCalPoint *x = a, *y = b;
  return (x->bytes > y->bytes) - (x->bytes < y->bytes);
}

/* Points of one size (several sweeps) become one point, their median: the socket path drifts
 * between sweeps, and the median is the path's typical state. Sorts p; returns the new count. */
static size_t median_per_size(ncclzCalPoint *p, size_t n) {
  double us[NCCLZ_CAL_MAX_RAW_POINTS];
  size_t m = 0;
  qsort(p, n, sizeof *p, cmp_bytes);
  for (size_t i = 0, k; i < n; i += k) {
    for (k = 0; i + k < n && p[i + k].bytes == p[i].bytes; k++) us[k] = p[i + k].us;
    p[m++] = (ncclzCalPoint){p[i].bytes, ncclzMedian(us, k)};
  }
  return m;
}

static ncclzStatus fit_into(ncclzCalPoint *pts, size_t n, const char *where, ncclzCalFit *f) {
  n = median_per_size(pts, n);
  if (ncclzCalFitPiecewise(pts, n, NCCLZ_CAL_TOLERANCE, f)) {
    char msg[256];
    snprintf(msg, sizeof msg, "%s", ncclzLastError());
    return ncclzSetError(NCCLZ_ERR_ARG, "points %s: %s", where, msg);
  }
  return NCCLZ_OK;
}

static void track_worst(ncclzCalResult *r, const ncclzCalFit *f, const char *what) {
  for (uint32_t i = 0; i < f->n; i++)
    if (f->bytes[i] >= NCCLZ_CAL_MIN_FIT_BYTES && fabs(f->resid[i]) > r->worst_resid_1m) {
      r->worst_resid_1m = fabs(f->resid[i]);
      snprintf(r->worst_what, sizeof r->worst_what, "%.60s at %.0f B", what, f->bytes[i]);
    }
}

/* Gathers every entry of `arr` whose keys match, then fits. */
typedef struct {
  ncclzCalPoint p[NCCLZ_CAL_MAX_RAW_POINTS];
  size_t n;
} pointset;

static ncclzStatus parse_metadata(const cJSON *root, ncclzCalResult *r) {
  const cJSON *m = cJSON_GetObjectItemCaseSensitive(root, "metadata");
  struct {
    const char *key;
    char *dst;
    size_t cap;
  } f[] = {{"device", r->device, sizeof r->device}, {"driver", r->driver, sizeof r->driver},
           {"cuda", r->cuda, sizeof r->cuda},       {"nccl", r->nccl, sizeof r->nccl},
           {"date", r->date, sizeof r->date},       {"method", r->method, sizeof r->method}};
  for (size_t i = 0; i < sizeof f / sizeof f[0]; i++) {
    const char *s = m ? ncclz_cal_get_str(m, f[i].key) : NULL;
    snprintf(f[i].dst, f[i].cap, "%s", s ? s : "unknown");
  }
  return NCCLZ_OK;
}

static ncclzStatus parse_codecs(const cJSON *root, ncclzCalResult *r) {
  const cJSON *arr = cJSON_GetObjectItemCaseSensitive(root, "codecs");
  if (!cJSON_IsArray(arr) || !cJSON_GetArraySize(arr))
    return ncclzSetError(NCCLZ_ERR_ARG, "points codecs: missing (an array of {coder, class, encode, decode})");
  static pointset enc[NCCLZ_CAL_CODERS][NCCLZ_CAL_CLASSES], dec[NCCLZ_CAL_CODERS][NCCLZ_CAL_CLASSES];
  memset(enc, 0, sizeof enc);
  memset(dec, 0, sizeof dec);
  const cJSON *e;
  int i = 0;
  cJSON_ArrayForEach(e, arr) {
    char where[64];
    snprintf(where, sizeof where, "codecs[%d]", i++);
    const char *cs = ncclz_cal_get_str(e, "coder"), *ks = ncclz_cal_get_str(e, "class");
    int c = cs ? ncclzCoderFromName(cs) : -1, k = ks ? ncclzDataClassFromName(ks) : -1;
    if (c != NCCLZ_CODER_FIXEDLEN && c != NCCLZ_CODER_HUFFMAN)
      return ncclzSetError(NCCLZ_ERR_ARG, "points %s.coder: fixedlen or huffman", where);
    if (k < 0) return ncclzSetError(NCCLZ_ERR_ARG, "points %s.class: none, eb, eb_lorenzo, qsgd or default", where);
    char w2[80];
    snprintf(w2, sizeof w2, "%s.encode", where);
    TRY(ncclz_cal_read_points(cJSON_GetObjectItemCaseSensitive(e, "encode"), w2, enc[c][k].p, &enc[c][k].n));
    snprintf(w2, sizeof w2, "%s.decode", where);
    TRY(ncclz_cal_read_points(cJSON_GetObjectItemCaseSensitive(e, "decode"), w2, dec[c][k].p, &dec[c][k].n));
  }
  for (int c = NCCLZ_CODER_FIXEDLEN; c < NCCLZ_CAL_CODERS; c++) {
    for (int k = 0; k < NCCLZ_CAL_CLASSES; k++) {
      if (!enc[c][k].n && !dec[c][k].n) continue;
      char where[96];
      snprintf(where, sizeof where, "codecs %s/%s encode", ncclzCoderName((ncclzCoder)c),
               ncclzDataClassName((ncclzDataClass)k));
      ncclzCalCodecFit *cf = &r->codec[c][k];
      TRY(fit_into(enc[c][k].p, enc[c][k].n, where, &cf->encode));
      track_worst(r, &cf->encode, where);
      snprintf(where, sizeof where, "codecs %s/%s decode", ncclzCoderName((ncclzCoder)c),
               ncclzDataClassName((ncclzDataClass)k));
      TRY(fit_into(dec[c][k].p, dec[c][k].n, where, &cf->decode));
      track_worst(r, &cf->decode, where);
      cf->present = 1;
      cf->measured_curve = cf->encode.max_resid_1m > NCCLZ_CAL_TOLERANCE || cf->decode.max_resid_1m > NCCLZ_CAL_TOLERANCE;
    }
    /* default: eb_lorenzo (the smooth field), else the first class measured. */
    if (!r->codec[c][NCCLZ_CLASS_DEFAULT].present) {
      int from = r->codec[c][NCCLZ_CLASS_EB_LORENZO].present ? NCCLZ_CLASS_EB_LORENZO : -1;
      for (int k = 1; from < 0 && k < NCCLZ_CAL_CLASSES; k++)
        if (r->codec[c][k].present) from = k;
      if (from < 0)
        return ncclzSetError(NCCLZ_ERR_ARG, "points codecs: no points for coder %s", ncclzCoderName((ncclzCoder)c));
      r->codec[c][NCCLZ_CLASS_DEFAULT] = r->codec[c][from];
    }
  }
  return NCCLZ_OK;
}

/* "ranks" of a collectives entry: optional (2, the calibration's default), the same everywhere. */
static ncclzStatus read_ranks(const cJSON *e, const char *where, uint32_t *ranks) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(e, "ranks");
  double n = v ? (cJSON_IsNumber(v) ? v->valuedouble : -1) : 2;
  if (!(n >= 2 && n <= 1e6 && n == floor(n)))
    return ncclzSetError(NCCLZ_ERR_ARG, "points %s.ranks: must be an integer >= 2", where);
  if (*ranks && *ranks != (uint32_t)n)
    return ncclzSetError(NCCLZ_ERR_ARG, "points %s.ranks: %.0f, but other entries say %u", where, n, *ranks);
  *ranks = (uint32_t)n;
  return NCCLZ_OK;
}

static ncclzStatus parse_transports(const cJSON *root, ncclzCalResult *r) {
  static pointset sr[NCCLZ_CAL_PATH_COUNT], co[NCCLZ_CAL_PATH_COUNT][NCCLZ_CAL_COLLS];
  memset(sr, 0, sizeof sr);
  memset(co, 0, sizeof co);
  const cJSON *arr = cJSON_GetObjectItemCaseSensitive(root, "sendrecv"), *e;
  int i = 0;
  if (arr && !cJSON_IsArray(arr)) return ncclzSetError(NCCLZ_ERR_ARG, "points sendrecv: must be an array");
  cJSON_ArrayForEach(e, arr) {
    char where[64];
    snprintf(where, sizeof where, "sendrecv[%d]", i++);
    const char *ps = ncclz_cal_get_str(e, "path");
    int p = ps ? ncclzCalPathFromName(ps) : -1;
    if (p < 0) return ncclzSetError(NCCLZ_ERR_ARG, "points %s.path: nvlink, shm, socket, socket1x1 or socket4x4", where);
    TRY(ncclz_cal_read_points(cJSON_GetObjectItemCaseSensitive(e, "points"), where, sr[p].p, &sr[p].n));
  }
  arr = cJSON_GetObjectItemCaseSensitive(root, "collectives");
  if (arr && !cJSON_IsArray(arr)) return ncclzSetError(NCCLZ_ERR_ARG, "points collectives: must be an array");
  i = 0;
  cJSON_ArrayForEach(e, arr) {
    char where[64];
    snprintf(where, sizeof where, "collectives[%d]", i++);
    const char *ps = ncclz_cal_get_str(e, "path"), *cs = ncclz_cal_get_str(e, "collective");
    int p = ps ? ncclzCalPathFromName(ps) : -1, c = cs ? ncclzCollectiveFromName(cs) : -1;
    if (p < 0) return ncclzSetError(NCCLZ_ERR_ARG, "points %s.path: nvlink, shm, socket, socket1x1 or socket4x4", where);
    if (c < 0) return ncclzSetError(NCCLZ_ERR_ARG, "points %s.collective: unknown", where);
    TRY(read_ranks(e, where, &r->plain_ranks));
    TRY(ncclz_cal_read_points(cJSON_GetObjectItemCaseSensitive(e, "points"), where, co[p][c].p, &co[p][c].n));
  }
  for (int p = 0; p < NCCLZ_CAL_PATH_COUNT; p++) {
    char where[96];
    if (sr[p].n) {
      snprintf(where, sizeof where, "sendrecv %s", ncclzCalPathName((ncclzCalPath)p));
      TRY(fit_into(sr[p].p, sr[p].n, where, &r->sendrecv[p]));
      track_worst(r, &r->sendrecv[p], where);
      r->sendrecv_present[p] = 1;
    }
    for (int c = 0; c < NCCLZ_CAL_COLLS; c++) {
      if (!co[p][c].n) continue;
      snprintf(where, sizeof where, "%s %s", ncclzCollectiveName((ncclzCollective)c), ncclzCalPathName((ncclzCalPath)p));
      TRY(fit_into(co[p][c].p, co[p][c].n, where, &r->coll[p][c]));
      track_worst(r, &r->coll[p][c], where);
      r->coll_present[p][c] = 1;
    }
  }
  return NCCLZ_OK;
}

static int hint_of_path(int p) {
  return p == NCCLZ_CAL_NVLINK ? NCCLZ_HINT_NVLINK : p == NCCLZ_CAL_SHM ? NCCLZ_HINT_SHM : NCCLZ_HINT_NET;
}

/* The interface curve: at each traced size, the quickest call, sizes ascending. Its work
 * (quantize, agree, dequantize) does not depend on the coder; what varies between calls is the
 * wait for the peer in the agreement, which only adds (on the 2x H200 socket path a 16 MiB call
 * took almost twice as long under one coder as under another). */
static void interface_curve(const ncclzCalPoint *p, size_t n, ncclzCurve *c) {
  c->n_points = 0;
  for (size_t i = 0; i < n; i++) {
    uint32_t k = 0;
    while (k < c->n_points && c->bytes[k] < p[i].bytes) k++;
    if (k < c->n_points && c->bytes[k] == p[i].bytes) {
      c->us[k] = fmin(c->us[k], p[i].us);
      continue;
    }
    if (c->n_points == NCCLZ_CURVE_MAX_POINTS) continue;
    memmove(&c->bytes[k + 1], &c->bytes[k], (c->n_points - k) * sizeof c->bytes[0]);
    memmove(&c->us[k + 1], &c->us[k], (c->n_points - k) * sizeof c->us[0]);
    c->bytes[k] = p[i].bytes, c->us[k] = p[i].us;
    c->n_points++;
  }
}

/* The interface per hint from (bytes, interface_us) of the traced calls: a line by the same fit
 * as every transport line (ncclzCalFitLinear), kept when there is one (a positive slope), and the
 * curve of the quickest calls, which the profile's users prefer: no line follows the measured
 * cost (socket path: ~200 us at 4 MiB, 370 at 16, 590 at 64 in the executor's traces). */
static void fit_interface(ncclzCalPoint (*pts)[NCCLZ_CAL_MAX_POINTS], const size_t *n, ncclzCalResult *r) {
  for (int h = 0; h < NCCLZ_CAL_HINTS; h++) {
    ncclzCalFit f;
    r->iface_present[h] = n[h] >= 2 && ncclzCalFitLinear(pts[h], n[h], &f) == NCCLZ_OK;
    if (!r->iface_present[h]) continue;
    r->iface_alpha_us[h] = f.alpha_us;
    r->iface_gbps[h] = f.beta_gbps;
    interface_curve(pts[h], n[h], &r->iface_curve[h]);
  }
}

/* The host's own time per pipeline unit of a transport: the median of its calls, without the
 * calls that paid for a connection. NCCL connects a communicator's peers lazily, inside the first
 * send/recv group, so the first call on a new communicator (one per coder: ncclzCommInit splits
 * a lane communicator) spends milliseconds a unit there, against tens of microseconds otherwise
 * on 2x H200 (calibrate/profiles/h200-x2-points.json), enough to pull the median up; the other
 * calls stay within about 2x of the quickest, so 4x separates them. Sorts v. */
static double host_unit_us(double *v, size_t n) {
  if (!n) return 0.0;
  ncclzMedian(v, n); /* sorts v */
  size_t kept = 1;
  while (kept < n && v[kept] <= 4.0 * v[0]) kept++;
  return ncclzMedian(v, kept);
}

/* The overlap factors are the steady state's: calls of a few frames (1 and 4 MiB, measured for the
 * interface curve) are mostly the pipeline's fill, which REA counts on its own. */
#define LAMBDA_MIN_BYTES (16.0 * 1048576)

static ncclzStatus parse_overlap(const cJSON *root, ncclzCalResult *r) {
  double enc[NCCLZ_CAL_CODERS][NCCLZ_CAL_HINTS][2] = {{{0}}}, dec[NCCLZ_CAL_CODERS][NCCLZ_CAL_HINTS][2] = {{{0}}};
  ncclzCalPoint iface[NCCLZ_CAL_HINTS][NCCLZ_CAL_MAX_POINTS]; /* (bytes, interface_us) */
  size_t n_iface[NCCLZ_CAL_HINTS] = {0};
  double unit[NCCLZ_CAL_HINTS][NCCLZ_CAL_MAX_POINTS]; /* unit_host_us of the same calls */
  size_t n_unit[NCCLZ_CAL_HINTS] = {0};
  const cJSON *arr = cJSON_GetObjectItemCaseSensitive(root, "overlap"), *e;
  if (arr && !cJSON_IsArray(arr)) return ncclzSetError(NCCLZ_ERR_ARG, "points overlap: must be an array");
  int i = 0;
  cJSON_ArrayForEach(e, arr) {
    char where[64];
    snprintf(where, sizeof where, "overlap[%d]", i++);
    const char *ps = ncclz_cal_get_str(e, "path"), *cs = ncclz_cal_get_str(e, "coder");
    int p = ps ? ncclzCalPathFromName(ps) : -1, c = cs ? ncclzCoderFromName(cs) : -1;
    if (p < 0) return ncclzSetError(NCCLZ_ERR_ARG, "points %s.path: unknown", where);
    if (c != NCCLZ_CODER_FIXEDLEN && c != NCCLZ_CODER_HUFFMAN)
      return ncclzSetError(NCCLZ_ERR_ARG, "points %s.coder: fixedlen or huffman", where);
    static const char *keys[4] = {"encode_us", "encode_exposed_us", "decode_us", "decode_exposed_us"};
    double v[4];
    for (int k = 0; k < 4; k++) {
      const cJSON *it = cJSON_GetObjectItemCaseSensitive(e, keys[k]);
      if (!cJSON_IsNumber(it) || !(it->valuedouble >= 0))
        return ncclzSetError(NCCLZ_ERR_ARG, "points %s.%s: must be a number >= 0", where, keys[k]);
      v[k] = it->valuedouble;
    }
    int h = hint_of_path(p);
    /* The default socket path stands for NET; the thread variants only when it is missing. */
    if (p == NCCLZ_CAL_SOCKET1X1 || p == NCCLZ_CAL_SOCKET4X4) continue;
    const cJSON *b = cJSON_GetObjectItemCaseSensitive(e, "bytes"), *fi = cJSON_GetObjectItemCaseSensitive(e, "interface_us");
    if (!cJSON_IsNumber(b) || b->valuedouble >= LAMBDA_MIN_BYTES) { /* older points files have no bytes */
      enc[c][h][0] += v[0];
      enc[c][h][1] += v[1];
      dec[c][h][0] += v[2];
      dec[c][h][1] += v[3];
    }
    if (fi) { /* optional: older points files have none */
      if (!cJSON_IsNumber(fi) || !(fi->valuedouble >= 0) || !cJSON_IsNumber(b) || !(b->valuedouble > 0))
        return ncclzSetError(NCCLZ_ERR_ARG, "points %s: interface_us and bytes must be numbers (>= 0, > 0)", where);
      if (n_iface[h] == NCCLZ_CAL_MAX_POINTS)
        return ncclzSetError(NCCLZ_ERR_ARG, "points %s: more than %d interface points on one transport", where,
                             NCCLZ_CAL_MAX_POINTS);
      iface[h][n_iface[h]++] = (ncclzCalPoint){b->valuedouble, fi->valuedouble};
    }
    const cJSON *fu = cJSON_GetObjectItemCaseSensitive(e, "unit_host_us");
    if (fu) { /* optional: older points files have none */
      if (!cJSON_IsNumber(fu) || !(fu->valuedouble >= 0))
        return ncclzSetError(NCCLZ_ERR_ARG, "points %s.unit_host_us: must be a number >= 0", where);
      if (n_unit[h] == NCCLZ_CAL_MAX_POINTS)
        return ncclzSetError(NCCLZ_ERR_ARG, "points %s: more than %d unit_host_us values on one transport", where,
                             NCCLZ_CAL_MAX_POINTS);
      unit[h][n_unit[h]++] = fu->valuedouble;
    }
  }
  fit_interface(iface, n_iface, r);
  for (int h = 0; h < NCCLZ_CAL_HINTS; h++) r->iface_unit_us[h] = host_unit_us(unit[h], n_unit[h]);
  for (int c = NCCLZ_CODER_FIXEDLEN; c < NCCLZ_CAL_CODERS; c++)
    for (int h = 0; h < NCCLZ_CAL_HINTS; h++) {
      r->lambda_enc[c][h] = r->lambda_dec[c][h] = 1.0;
      if (enc[c][h][0] > 0 || dec[c][h][0] > 0) r->lambda_measured[c][h] = 1;
      if (enc[c][h][0] > 0) r->lambda_enc[c][h] = fmin(1.0, enc[c][h][1] / enc[c][h][0]);
      if (dec[c][h][0] > 0) r->lambda_dec[c][h] = fmin(1.0, dec[c][h][1] / dec[c][h][0]);
      if (!r->lambda_measured[c][h])
        add_note(r, "lambda %s/%s: not measured, 1.0 (no overlap) assumed", ncclzCoderName((ncclzCoder)c),
                 ncclzHintName((ncclzTransportHint)h));
    }
  return NCCLZ_OK;
}

static int net_source(const ncclzCalResult *r, int hint) {
  static const int order[NCCLZ_CAL_HINTS][NCCLZ_CAL_PATH_COUNT] = {
      {NCCLZ_CAL_NVLINK, -1, -1, -1, -1},
      {NCCLZ_CAL_SHM, -1, -1, -1, -1},
      {NCCLZ_CAL_SOCKET, NCCLZ_CAL_SOCKET1X1, NCCLZ_CAL_SOCKET4X4, -1, -1}};
  for (int i = 0; i < NCCLZ_CAL_PATH_COUNT && order[hint][i] >= 0; i++)
    if (r->sendrecv_present[order[hint][i]]) return order[hint][i];
  return -1;
}

/* The measured path with the lowest send/recv bandwidth (-1: none): it stands in for a
 * transport whose own path was not measured. */
static int slowest_path(const ncclzCalResult *r) {
  int slowest = -1;
  for (int p = 0; p < NCCLZ_CAL_PATH_COUNT; p++)
    if (r->sendrecv_present[p] && (slowest < 0 || r->sendrecv[p].beta_gbps < r->sendrecv[slowest].beta_gbps))
      slowest = p;
  return slowest;
}

ncclzStatus ncclzCalFitPoints(const char *json, size_t len, ncclzCalResult *out) {
  memset(out, 0, sizeof *out);
  cJSON *root;
  ncclzStatus js = ncclzJsonParse("points", json, len, &root);
  if (js != NCCLZ_OK) return js;
  if (!cJSON_IsObject(root)) {
    cJSON_Delete(root);
    return ncclzSetError(NCCLZ_ERR_ARG, "points: not a JSON object");
  }
  ncclzStatus st = NCCLZ_OK;
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, "version");
  if (!cJSON_IsNumber(v) || v->valuedouble != 1)
    st = ncclzSetError(NCCLZ_ERR_ARG, "points version: must be 1");
  if (!st) st = parse_metadata(root, out);
  if (!st) st = parse_codecs(root, out);
  if (!st) st = parse_transports(root, out);
  if (!st) st = parse_overlap(root, out);
  cJSON_Delete(root);
  if (st) return st;
  int slowest = slowest_path(out);
  if (slowest < 0) return ncclzSetError(NCCLZ_ERR_ARG, "points sendrecv: no path measured");
  for (int h = 0; h < NCCLZ_CAL_HINTS; h++)
    if (net_source(out, h) < 0)
      add_note(out, "transports.%s: not measured, the values of path %s", ncclzHintName((ncclzTransportHint)h),
               ncclzCalPathName((ncclzCalPath)slowest));
  return NCCLZ_OK;
}

/* ------------------------------------------------------------------ output */

static cJSON *num(double v) { return cJSON_CreateNumber(isfinite(v) ? v : 0.0); }
/* Rounds to 6 significant digits so the profile stays readable. */
static double r6(double v) {
  if (v == 0 || !isfinite(v)) return 0;
  char buf[32];
  snprintf(buf, sizeof buf, "%.6g", v);
  return strtod(buf, NULL);
}

static cJSON *fit_json(const ncclzCalFit *f) {
  cJSON *o = cJSON_CreateObject(), *pts = cJSON_CreateArray();
  cJSON_AddItemToObject(o, "alpha_us", num(r6(f->alpha_us)));
  cJSON_AddItemToObject(o, "beta_gbps", num(r6(f->beta_gbps)));
  cJSON *segs = cJSON_AddArrayToObject(o, "segments"); /* [from bytes, alpha us, beta GB/s] */
  for (uint32_t i = 0; i < f->n_seg; i++) {
    cJSON *sg = cJSON_CreateArray();
    cJSON_AddItemToArray(sg, num(f->seg[i].from_bytes));
    cJSON_AddItemToArray(sg, num(r6(f->seg[i].alpha_us)));
    cJSON_AddItemToArray(sg, num(r6(f->seg[i].beta_gbps)));
    cJSON_AddItemToArray(segs, sg);
  }
  cJSON_AddItemToObject(o, "max_resid_1m", num(r6(f->max_resid_1m)));
  cJSON_AddItemToObject(o, "max_resid", num(r6(f->max_resid)));
  for (uint32_t i = 0; i < f->n; i++) {
    cJSON *p = cJSON_CreateArray();
    cJSON_AddItemToArray(p, num(f->bytes[i]));
    cJSON_AddItemToArray(p, num(r6(f->us[i])));
    cJSON_AddItemToArray(p, num(r6(f->resid[i])));
    cJSON_AddItemToArray(pts, p);
  }
  cJSON_AddItemToObject(o, "points", pts); /* [bytes, measured us, (fit - measured) / measured] */
  return o;
}

/* The profile curve: the fit at the measured sizes (at most 32, first and last kept), or the
 * measured times where the fit misses the tolerance. The sizes are distinct: fit_into has
 * reduced every size to its median. */
static cJSON *curve_json(const ncclzCalFit *f, int measured) {
  cJSON *arr = cJSON_CreateArray();
  uint32_t m = f->n, keep = m < NCCLZ_CURVE_MAX_POINTS ? m : NCCLZ_CURVE_MAX_POINTS;
  long last = -1;
  for (uint32_t j = 0; j < keep; j++) {
    long i = keep == 1 ? 0 : (long)((double)j * (m - 1) / (keep - 1) + 0.5);
    if (i == last) continue;
    last = i;
    double us = measured ? f->us[i] : ncclzCalFitEval(f, f->bytes[i]);
    cJSON *p = cJSON_CreateObject();
    cJSON_AddItemToObject(p, "bytes", num(f->bytes[i]));
    cJSON_AddItemToObject(p, "us", num(r6(us)));
    cJSON_AddItemToArray(arr, p);
  }
  return arr;
}

/* collectives: the plain NCCL curves (and "sendrecv", the exchange of one ring step), made as the
 * codec curves are (curve_json; docs/calibrate.md). */
static void add_plain_curves(cJSON *root, const ncclzCalResult *r) {
  cJSON *co = NULL, *paths = NULL;
  for (int p = 0; p < NCCLZ_CAL_PATH_COUNT; p++) {
    cJSON *pc = NULL;
    for (int c = -1; c < NCCLZ_CAL_COLLS; c++) { /* -1: the send/recv exchange, "sendrecv" */
      if (c < 0 ? !r->sendrecv_present[p] : !r->coll_present[p][c]) continue;
      if (!co) {
        co = cJSON_AddObjectToObject(root, "collectives");
        cJSON_AddNumberToObject(co, "ranks", r->plain_ranks ? r->plain_ranks : 2);
        paths = cJSON_AddObjectToObject(co, "paths");
      }
      if (!pc) pc = cJSON_AddObjectToObject(paths, ncclzCalPathName((ncclzCalPath)p));
      const ncclzCalFit *f = c < 0 ? &r->sendrecv[p] : &r->coll[p][c];
      cJSON_AddItemToObject(pc, c < 0 ? "sendrecv" : ncclzCollectiveName((ncclzCollective)c),
                            curve_json(f, f->max_resid_1m > NCCLZ_CAL_TOLERANCE));
    }
  }
}

char *ncclzCalProfileJson(const ncclzCalResult *r) {
  cJSON *root = cJSON_CreateObject();
  cJSON_AddNumberToObject(root, "version", NCCLZ_PROFILE_VERSION);
  cJSON *m = cJSON_AddObjectToObject(root, "metadata");
  cJSON_AddStringToObject(m, "device", r->device);
  cJSON_AddStringToObject(m, "driver", r->driver);
  cJSON_AddStringToObject(m, "cuda", r->cuda);
  cJSON_AddStringToObject(m, "nccl", r->nccl);
  cJSON_AddStringToObject(m, "date", r->date);
  cJSON_AddStringToObject(m, "method", r->method);

  /* transports: nvlink <- nvlink, shm <- shm, net <- socket (else socket1x1/4x4); a path not
   * measured takes the slowest measured one's values, and says so in fit.notes. */
  cJSON *tr = cJSON_AddObjectToObject(root, "transports");
  int slowest = slowest_path(r);
  for (int h = 0; h < NCCLZ_CAL_HINTS; h++) {
    int p = net_source(r, h);
    if (p < 0) p = slowest; /* noted by ncclzCalFitPoints */
    cJSON *t = cJSON_AddObjectToObject(tr, ncclzHintName((ncclzTransportHint)h));
    cJSON_AddItemToObject(t, "alpha_us", num(r6(r->sendrecv[p].alpha_us)));
    cJSON_AddItemToObject(t, "beta_gbps", num(r6(r->sendrecv[p].beta_gbps)));
  }

  cJSON *codecs = cJSON_AddObjectToObject(root, "codecs");
  for (int c = NCCLZ_CODER_FIXEDLEN; c < NCCLZ_CAL_CODERS; c++) {
    cJSON *co = cJSON_AddObjectToObject(codecs, ncclzCoderName((ncclzCoder)c));
    cJSON_AddNumberToObject(co, "alpha_us", 0.0);
    cJSON *le = cJSON_AddObjectToObject(co, "lambda_enc"), *ld = cJSON_AddObjectToObject(co, "lambda_dec");
    for (int h = 0; h < NCCLZ_CAL_HINTS; h++) {
      cJSON_AddItemToObject(le, ncclzHintName((ncclzTransportHint)h), num(r6(r->lambda_enc[c][h])));
      cJSON_AddItemToObject(ld, ncclzHintName((ncclzTransportHint)h), num(r6(r->lambda_dec[c][h])));
    }
    cJSON *cv = cJSON_AddObjectToObject(co, "curves");
    for (int k = 0; k < NCCLZ_CAL_CLASSES; k++) {
      const ncclzCalCodecFit *cf = &r->codec[c][k];
      if (!cf->present) continue;
      cJSON *o = cJSON_AddObjectToObject(cv, ncclzDataClassName((ncclzDataClass)k));
      cJSON_AddItemToObject(o, "encode", curve_json(&cf->encode, cf->measured_curve));
      cJSON_AddItemToObject(o, "decode", curve_json(&cf->decode, cf->measured_curve));
    }
  }
  add_plain_curves(root, r);
  cJSON *fo = NULL;
  for (int h = 0; h < NCCLZ_CAL_HINTS; h++) {
    if (!r->iface_present[h]) continue;
    if (!fo) fo = cJSON_AddObjectToObject(root, "interface");
    cJSON *t = cJSON_AddObjectToObject(fo, ncclzHintName((ncclzTransportHint)h));
    cJSON_AddItemToObject(t, "alpha_us", num(r6(r->iface_alpha_us[h])));
    cJSON_AddItemToObject(t, "gbps", num(r6(r->iface_gbps[h])));
    if (r->iface_unit_us[h] > 0) cJSON_AddItemToObject(t, "unit_us", num(r6(r->iface_unit_us[h])));
    const ncclzCurve *c = &r->iface_curve[h];
    if (c->n_points < 2) continue;
    cJSON *arr = cJSON_AddArrayToObject(t, "curve");
    for (uint32_t k = 0; k < c->n_points; k++) {
      cJSON *p = cJSON_CreateObject();
      cJSON_AddItemToObject(p, "bytes", num(c->bytes[k]));
      cJSON_AddItemToObject(p, "us", num(r6(c->us[k])));
      cJSON_AddItemToArray(arr, p);
    }
  }
  cJSON *th = cJSON_AddObjectToObject(root, "thresholds");
  cJSON_AddNumberToObject(th, "fast_path_bytes", 65536);
  cJSON_AddNumberToObject(th, "huff_min_bytes", 262144);
  cJSON_AddNumberToObject(th, "min_gain_permil", 50);
  /* 16 KiB, not the paper's 64 KiB bound: over the real datasets the tune sweep's regret is the
   * same (0.06% at 16 KiB, 0.08% at 64 KiB), and the device planner's cost per 4 MiB frame is
   * 0.86% of its HUFFMAN encode against 3.14% (test_gpu_rea, docs/reproduce.md). */
  cJSON_AddNumberToObject(th, "sample_window_bytes", 16384);
  cJSON_AddNumberToObject(th, "sample_pieces", 8);
  cJSON_AddNumberToObject(th, "frame_bytes", 4194304);

  /* fit: what the loader ignores but a reader wants: every fit, its points and residuals. */
  cJSON *fit = cJSON_AddObjectToObject(root, "fit");
  cJSON_AddStringToObject(fit, "model",
                          "us = alpha_us + bytes / (beta_gbps * 1e3) per size segment (segments from the largest size "
                          "down, each within the tolerance), least squares on relative error; alpha_us is the first "
                          "segment's, beta_gbps the last one's");
  cJSON_AddNumberToObject(fit, "tolerance", NCCLZ_CAL_TOLERANCE);
  cJSON_AddNumberToObject(fit, "min_bytes", NCCLZ_CAL_MIN_FIT_BYTES);
  cJSON_AddItemToObject(fit, "worst_resid_1m", num(r6(r->worst_resid_1m)));
  cJSON_AddStringToObject(fit, "worst", r->worst_what);
  cJSON_AddBoolToObject(fit, "within_tolerance", r->worst_resid_1m <= NCCLZ_CAL_TOLERANCE);
  cJSON *fs = cJSON_AddObjectToObject(fit, "sendrecv"), *fc = cJSON_AddObjectToObject(fit, "collectives");
  for (int p = 0; p < NCCLZ_CAL_PATH_COUNT; p++) {
    if (r->sendrecv_present[p]) cJSON_AddItemToObject(fs, ncclzCalPathName((ncclzCalPath)p), fit_json(&r->sendrecv[p]));
    cJSON *pc = NULL;
    for (int c = 0; c < NCCLZ_CAL_COLLS; c++) {
      if (!r->coll_present[p][c]) continue;
      if (!pc) pc = cJSON_AddObjectToObject(fc, ncclzCalPathName((ncclzCalPath)p));
      cJSON_AddItemToObject(pc, ncclzCollectiveName((ncclzCollective)c), fit_json(&r->coll[p][c]));
    }
  }
  cJSON *fcd = cJSON_AddObjectToObject(fit, "codecs");
  for (int c = NCCLZ_CODER_FIXEDLEN; c < NCCLZ_CAL_CODERS; c++) {
    cJSON *co = cJSON_AddObjectToObject(fcd, ncclzCoderName((ncclzCoder)c));
    for (int k = 1; k < NCCLZ_CAL_CLASSES; k++) {
      const ncclzCalCodecFit *cf = &r->codec[c][k];
      if (!cf->present) continue;
      cJSON *o = cJSON_AddObjectToObject(co, ncclzDataClassName((ncclzDataClass)k));
      cJSON_AddStringToObject(o, "curve", cf->measured_curve ? "measured" : "fitted");
      cJSON_AddItemToObject(o, "encode", fit_json(&cf->encode));
      cJSON_AddItemToObject(o, "decode", fit_json(&cf->decode));
    }
  }
  cJSON_AddStringToObject(fit, "notes", r->notes);
  char *text = cJSON_Print(root);
  cJSON_Delete(root);
  if (!text) {
    ncclzSetError(NCCLZ_ERR_NOMEM, "out of memory");
    return NULL;
  }
  ncclzProfile *prof = malloc(sizeof *prof);
  ncclzStatus st = prof ? ncclzProfileParse(text, strlen(text), prof) : NCCLZ_ERR_NOMEM;
  free(prof);
  if (st) {
    char msg[256];
    snprintf(msg, sizeof msg, "%s", ncclzLastError());
    ncclzSetError(st, "written profile does not load: %s", msg);
    free(text);
    return NULL;
  }
  return text;
}

static void report_fit(FILE *f, const char *what, const ncclzCalFit *x) {
  fprintf(f, "  %-34s alpha %9.3f us  beta %9.3f GB/s  %u seg  worst resid >=1MiB %6.2f%% (%u pts)  all %6.2f%%\n",
          what, x->alpha_us, x->beta_gbps, x->n_seg, 100 * x->max_resid_1m, x->n_1m, 100 * x->max_resid);
}

void ncclzCalReport(const ncclzCalResult *r, FILE *f) {
  char what[96];
  fprintf(f, "fits (us = alpha + bytes / beta per size segment; alpha: first segment, beta: last; "
             "resid = (fit - measured) / measured):\n");
  for (int p = 0; p < NCCLZ_CAL_PATH_COUNT; p++) {
    if (r->sendrecv_present[p]) {
      snprintf(what, sizeof what, "sendrecv %s", ncclzCalPathName((ncclzCalPath)p));
      report_fit(f, what, &r->sendrecv[p]);
    }
    for (int c = 0; c < NCCLZ_CAL_COLLS; c++)
      if (r->coll_present[p][c]) {
        snprintf(what, sizeof what, "%s %s", ncclzCollectiveName((ncclzCollective)c), ncclzCalPathName((ncclzCalPath)p));
        report_fit(f, what, &r->coll[p][c]);
      }
  }
  for (int c = NCCLZ_CODER_FIXEDLEN; c < NCCLZ_CAL_CODERS; c++)
    for (int k = 1; k < NCCLZ_CAL_CLASSES; k++) {
      const ncclzCalCodecFit *cf = &r->codec[c][k];
      if (!cf->present) continue;
      snprintf(what, sizeof what, "%s/%s encode%s", ncclzCoderName((ncclzCoder)c), ncclzDataClassName((ncclzDataClass)k),
               cf->measured_curve ? " [measured]" : "");
      report_fit(f, what, &cf->encode);
      snprintf(what, sizeof what, "%s/%s decode", ncclzCoderName((ncclzCoder)c), ncclzDataClassName((ncclzDataClass)k));
      report_fit(f, what, &cf->decode);
    }
  for (int c = NCCLZ_CODER_FIXEDLEN; c < NCCLZ_CAL_CODERS; c++)
    for (int h = 0; h < NCCLZ_CAL_HINTS; h++)
      fprintf(f, "  lambda %-8s %-6s enc %.3f dec %.3f%s\n", ncclzCoderName((ncclzCoder)c),
              ncclzHintName((ncclzTransportHint)h), r->lambda_enc[c][h], r->lambda_dec[c][h],
              r->lambda_measured[c][h] ? "" : " (assumed)");
  fprintf(f, "worst residual at >= 1 MiB: %.2f%% (%s): %s the %.0f%% tolerance\n", 100 * r->worst_resid_1m,
          r->worst_what[0] ? r->worst_what : "-", r->worst_resid_1m <= NCCLZ_CAL_TOLERANCE ? "within" : "OUTSIDE",
          100 * NCCLZ_CAL_TOLERANCE);
  if (r->notes[0]) fprintf(f, "notes: %s\n", r->notes);
}

char *ncclzCalPointsMerge(const char *a, const char *b) {
  cJSON *ja = NULL, *jb = NULL;
  char *out = NULL;
  if (ncclzJsonParse("points merge", a, strlen(a), &ja) != NCCLZ_OK ||
      ncclzJsonParse("points merge", b, strlen(b), &jb) != NCCLZ_OK)
    goto done;
  if (!cJSON_IsObject(ja) || !cJSON_IsObject(jb)) {
    ncclzSetError(NCCLZ_ERR_ARG, "points merge: not JSON objects");
    goto done;
  }
  static const char *arrays[] = {"codecs", "sendrecv", "collectives", "overlap"};
  for (size_t i = 0; i < sizeof arrays / sizeof arrays[0]; i++) {
    cJSON *src = cJSON_GetObjectItemCaseSensitive(jb, arrays[i]);
    if (!cJSON_IsArray(src)) continue;
    cJSON *dst = cJSON_GetObjectItemCaseSensitive(ja, arrays[i]);
    if (!cJSON_IsArray(dst)) {
      cJSON_DeleteItemFromObjectCaseSensitive(ja, arrays[i]);
      dst = cJSON_AddArrayToObject(ja, arrays[i]);
    }
    cJSON *it;
    cJSON_ArrayForEach(it, src) cJSON_AddItemToArray(dst, cJSON_Duplicate(it, 1));
  }
  cJSON *mb = cJSON_GetObjectItemCaseSensitive(jb, "metadata");
  if (cJSON_IsObject(mb)) {
    cJSON *ma = cJSON_GetObjectItemCaseSensitive(ja, "metadata");
    if (!cJSON_IsObject(ma)) ma = cJSON_AddObjectToObject(ja, "metadata");
    cJSON *it;
    cJSON_ArrayForEach(it, mb) {
      if (!it->string) continue;
      cJSON *cur = cJSON_GetObjectItemCaseSensitive(ma, it->string);
      if (!cur)
        cJSON_AddItemToObject(ma, it->string, cJSON_Duplicate(it, 1));
      else if (cJSON_IsString(cur) && !strcmp(cur->valuestring, "unknown"))
        cJSON_ReplaceItemInObjectCaseSensitive(ma, it->string, cJSON_Duplicate(it, 1));
    }
  }
  if (!cJSON_GetObjectItemCaseSensitive(ja, "version")) cJSON_AddNumberToObject(ja, "version", 1);
  out = cJSON_Print(ja);
done:
  cJSON_Delete(ja);
  cJSON_Delete(jb);
  return out;
}
