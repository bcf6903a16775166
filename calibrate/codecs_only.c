/* The codec-only recalibration (`ncclz calibrate --codecs-only --base POINTS.json`): fresh codec
 * curves joined to every other point of a base points document (send/recv, collectives, overlap),
 * unchanged, under metadata that says where each part came from. The merged document is fitted
 * and written as any other (docs/calibrate.md). */
#include "cal_internal.h"
#include "ncclz/calibrate.h"
#include "ncclz/model.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const meta_keys[] = {"device", "driver", "cuda", "nccl", "date", "method"};
#define N_META (sizeof meta_keys / sizeof meta_keys[0])

/* A points document (version 1, "codecs" absent or an array), labelled "what name" in errors. */
static cJSON *parse_points(const char *what, const char *name, const char *text, size_t len) {
  char label[320];
  snprintf(label, sizeof label, "%s %.256s", what, name);
  cJSON *root;
  if (ncclzJsonParse(label, text, len, &root) != NCCLZ_OK) return NULL;
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, "version");
  const cJSON *codecs = cJSON_GetObjectItemCaseSensitive(root, "codecs");
  if (!cJSON_IsObject(root) || !cJSON_IsNumber(v) || v->valuedouble != 1 || (codecs && !cJSON_IsArray(codecs))) {
    ncclzSetError(NCCLZ_ERR_ARG, "%s: not a points document (docs/calibrate.md)%s", label,
                  cJSON_IsObject(codecs) ? ": its \"codecs\" is an object, as in a profile" : "");
    cJSON_Delete(root);
    return NULL;
  }
  return root;
}

static cJSON *parse_base(const char *base, size_t len, const char *name) {
  cJSON *root = parse_points("base", name, base, len);
  if (!root) return NULL;
  const cJSON *sr = cJSON_GetObjectItemCaseSensitive(root, "sendrecv");
  if (!cJSON_IsArray(sr) || !cJSON_GetArraySize(sr)) {
    ncclzSetError(NCCLZ_ERR_ARG, "base %.256s: no send/recv points to keep (the points of a full calibration)", name);
    cJSON_Delete(root);
    return NULL;
  }
  return root;
}

/* The base must fit as it is (as a full calibration's points do): a broken base is refused before
 * any codec is measured, not after. */
ncclzStatus ncclzCalCodecsOnlyBase(const char *base, size_t len, const char *name) {
  cJSON *root = parse_base(base, len, name);
  if (!root) return NCCLZ_ERR_ARG;
  cJSON_Delete(root);
  ncclzCalResult *r = malloc(sizeof *r);
  if (!r) return ncclzSetError(NCCLZ_ERR_NOMEM, "out of memory");
  ncclzStatus st = ncclzCalFitPoints(base, len, r);
  free(r);
  if (st) {
    char msg[256];
    snprintf(msg, sizeof msg, "%s", ncclzLastError());
    return ncclzSetError(st, "base %.256s: %s", name, msg);
  }
  return NCCLZ_OK;
}

/* Where one part of doc came from: metadata.<part> when doc is itself a merge, else its metadata;
 * the six fields, "unknown" where missing, and "from" when present. */
static cJSON *part_meta(const cJSON *doc, const char *part) {
  const cJSON *m = cJSON_GetObjectItemCaseSensitive(doc, "metadata");
  const cJSON *sub = cJSON_GetObjectItemCaseSensitive(m, part);
  if (cJSON_IsObject(sub)) m = sub;
  cJSON *out = cJSON_CreateObject();
  for (size_t i = 0; i < N_META; i++) {
    const char *s = cJSON_IsObject(m) ? ncclz_cal_get_str(m, meta_keys[i]) : NULL;
    cJSON_AddStringToObject(out, meta_keys[i], s ? s : "unknown");
  }
  const char *from = cJSON_IsObject(sub) ? ncclz_cal_get_str(sub, "from") : NULL;
  if (from) cJSON_AddStringToObject(out, "from", from);
  return out;
}

/* One field of the profile's metadata: the value when both parts agree, else both, labelled. */
static void add_joined(cJSON *m, const char *key, const cJSON *codecs, const cJSON *kept) {
  const char *c = ncclz_cal_get_str(codecs, key), *k = ncclz_cal_get_str(kept, key);
  char buf[512];
  if (!strcmp(c, k))
    snprintf(buf, sizeof buf, "%s", c);
  else
    snprintf(buf, sizeof buf, "codecs: %.200s; transports, overlap: %.200s", c, k);
  cJSON_AddStringToObject(m, key, buf);
}

/* The merged metadata: the six fields the profile keeps (date: the codec curves', the newest part;
 * method: what was re-measured and what kept, from where), then each part's own under "codecs"
 * and "transports" (send/recv, collectives, overlap). */
static cJSON *merged_meta(const cJSON *fresh, const cJSON *base, const char *name) {
  cJSON *cp = part_meta(fresh, "codecs"), *tp = part_meta(base, "transports");
  if (!cJSON_GetObjectItemCaseSensitive(tp, "from")) cJSON_AddStringToObject(tp, "from", name);
  cJSON *m = cJSON_CreateObject();
  for (size_t i = 0; i < N_META - 2; i++) add_joined(m, meta_keys[i], cp, tp); /* all but date and method */
  cJSON_AddStringToObject(m, "date", ncclz_cal_get_str(cp, "date"));
  char buf[640];
  snprintf(buf, sizeof buf, "codecs re-measured %.20s by %.200s; send/recv, collectives, overlap kept from %.200s (%.20s)",
           ncclz_cal_get_str(cp, "date"), ncclz_cal_get_str(cp, "method"), ncclz_cal_get_str(tp, "from"),
           ncclz_cal_get_str(tp, "date"));
  cJSON_AddStringToObject(m, "method", buf);
  cJSON_AddItemToObject(m, "codecs", cp);
  cJSON_AddItemToObject(m, "transports", tp);
  return m;
}

/* Puts item under key in o, in the place of the old one if there was one. */
static void set_item(cJSON *o, const char *key, cJSON *item) {
  if (cJSON_GetObjectItemCaseSensitive(o, key))
    cJSON_ReplaceItemInObjectCaseSensitive(o, key, item);
  else
    cJSON_AddItemToObject(o, key, item);
}

char *ncclzCalCodecsOnlyMerge(const char *base, size_t base_len, const char *name, const char *fresh, size_t fresh_len,
                              const char *fresh_name) {
  cJSON *jb = parse_base(base, base_len, name), *jf = jb ? parse_points("points", fresh_name, fresh, fresh_len) : NULL;
  const cJSON *codecs = jf ? cJSON_GetObjectItemCaseSensitive(jf, "codecs") : NULL;
  char *out = NULL;
  if (jf && !cJSON_GetArraySize(codecs)) {
    ncclzSetError(NCCLZ_ERR_ARG, "points %.256s: no codec points (\"codecs\")", fresh_name);
  } else if (jf) {
    set_item(jb, "metadata", merged_meta(jf, jb, name));
    set_item(jb, "codecs", cJSON_Duplicate(codecs, 1));
    out = cJSON_Print(jb);
    if (!out) ncclzSetError(NCCLZ_ERR_NOMEM, "out of memory");
  }
  cJSON_Delete(jb);
  cJSON_Delete(jf);
  return out;
}
