/* The --quant SPEC text: parsing (with a one-line reason for every refusal) and the canonical
 * text back.
 *   none | eb:abs=X | eb:rel=X [,lorenzo=1d|2d|3d] [,fill=V] | qsgd:bits=2|4|8,bucket=N [,seed=S] */
#include "ncclz/codecs.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SPEC_DEFAULT_SEED 0x6e63636c7aull /* "ncclz" */
#define SPEC_ITEM_MAX 128                 /* longest key=value item we echo back in messages */

static const char *const kinds_expected =
    "expected none, eb:abs=X, eb:rel=X (options ,lorenzo=1d|2d|3d ,fill=V) or "
    "qsgd:bits=2|4|8,bucket=N (option ,seed=S)";

/* One key=value item of the list after "kind:"; key and value are NUL-terminated copies. */
typedef struct {
  char key[SPEC_ITEM_MAX];
  char value[SPEC_ITEM_MAX];
} SpecItem;

/* Splits the item [s, end) at '='. */
static ncclzStatus split_item(const char *kind, const char *s, const char *end, SpecItem *it) {
  size_t len = (size_t)(end - s);
  if (len == 0) return ncclzSetError(NCCLZ_ERR_ARG, "%s: empty item in the spec (stray comma?)", kind);
  if (len >= SPEC_ITEM_MAX)
    return ncclzSetError(NCCLZ_ERR_ARG, "%s: item '%.40s...' is too long", kind, s);
  const char *eq = memchr(s, '=', len);
  if (!eq || eq == s)
    return ncclzSetError(NCCLZ_ERR_ARG, "%s: item '%.*s' is not key=value", kind, (int)len, s);
  size_t klen = (size_t)(eq - s);
  memcpy(it->key, s, klen);
  it->key[klen] = '\0';
  memcpy(it->value, eq + 1, len - klen - 1);
  it->value[len - klen - 1] = '\0';
  return NCCLZ_OK;
}

/* A whole, finite number (ncclzParseDouble: no sign-less junk, spaces, hex, NaN or Inf). */
static int parse_finite(const char *s, double *out) { return ncclzParseDouble(s, -DBL_MAX, DBL_MAX, out) == 0; }

/* A whole decimal unsigned integer in [lo, hi] (ncclzParseU64: no sign, spaces or hex). */
static int parse_u64(const char *s, uint64_t lo, uint64_t hi, uint64_t *out) { return ncclzParseU64(s, lo, hi, out) == 0; }

/* A seed is a bit pattern: decimal, or 0x and 1 to 16 hex digits. */
static int parse_seed(const char *s, uint64_t *out) {
  if (s[0] != '0' || (s[1] != 'x' && s[1] != 'X')) return parse_u64(s, 0, UINT64_MAX, out);
  size_t digits = strlen(s + 2);
  if (digits == 0 || digits > 16 || strspn(s + 2, "0123456789abcdefABCDEF") != digits) return 0;
  *out = strtoull(s + 2, NULL, 16);
  return 1;
}

/* ------------------------------------------------------------------ eb */

static ncclzStatus eb_bound(const SpecItem *it, ncclzQuantSpec *q, int *seen_bound) {
  if (*seen_bound)
    return ncclzSetError(NCCLZ_ERR_ARG, "eb: give exactly one of abs= and rel= (got a second: %s=%s)",
                         it->key, it->value);
  *seen_bound = 1;
  q->eb_is_rel = strcmp(it->key, "rel") == 0;
  if (!parse_finite(it->value, &q->eb) || !(q->eb > 0))
    return ncclzSetError(NCCLZ_ERR_ARG, "eb: %s='%s' is not a positive finite number", it->key, it->value);
  if (q->eb_is_rel && q->eb > 1)
    return ncclzSetError(NCCLZ_ERR_ARG, "eb: rel=%s must be in (0, 1] (a fraction of the value range)",
                         it->value);
  return NCCLZ_OK;
}

static ncclzStatus eb_lorenzo(const SpecItem *it, ncclzQuantSpec *q) {
  if (q->lorenzo) return ncclzSetError(NCCLZ_ERR_ARG, "eb: lorenzo= given twice");
  const char *v = it->value;
  if ((v[0] == '1' || v[0] == '2' || v[0] == '3') && (v[1] == 'd' || v[1] == 'D') && v[2] == '\0') {
    q->lorenzo = v[0] - '0';
    return NCCLZ_OK;
  }
  return ncclzSetError(NCCLZ_ERR_ARG, "eb: lorenzo='%s' must be 1d, 2d or 3d", v);
}

static ncclzStatus eb_fill(const SpecItem *it, ncclzQuantSpec *q) {
  if (q->has_fill) return ncclzSetError(NCCLZ_ERR_ARG, "eb: fill= given twice");
  double v;
  /* The fill value is compared as a float, so it must survive the narrowing. */
  if (!parse_finite(it->value, &v) || !isfinite((float)v))
    return ncclzSetError(NCCLZ_ERR_ARG, "eb: fill='%s' must be a finite float32 number", it->value);
  q->has_fill = 1;
  q->fill_value = (float)v;
  return NCCLZ_OK;
}

static ncclzStatus eb_item(const SpecItem *it, ncclzQuantSpec *q, int *seen_bound) {
  if (!strcmp(it->key, "abs") || !strcmp(it->key, "rel")) return eb_bound(it, q, seen_bound);
  if (!strcmp(it->key, "lorenzo")) return eb_lorenzo(it, q);
  if (!strcmp(it->key, "fill")) return eb_fill(it, q);
  return ncclzSetError(NCCLZ_ERR_ARG, "eb: unknown key '%s'; expected abs, rel, lorenzo or fill", it->key);
}

/* ---------------------------------------------------------------- qsgd */

static ncclzStatus qsgd_item(const SpecItem *it, ncclzQuantSpec *q, int *seen_bits, int *seen_bucket) {
  uint64_t v;
  if (!strcmp(it->key, "bits")) {
    if (*seen_bits) return ncclzSetError(NCCLZ_ERR_ARG, "qsgd: bits= given twice");
    *seen_bits = 1;
    if (!parse_u64(it->value, 2, 8, &v) || (v != 2 && v != 4 && v != 8))
      return ncclzSetError(NCCLZ_ERR_ARG, "qsgd: bits='%s' must be 2, 4 or 8", it->value);
    q->qsgd_bits = (int)v;
    return NCCLZ_OK;
  }
  if (!strcmp(it->key, "bucket")) {
    if (*seen_bucket) return ncclzSetError(NCCLZ_ERR_ARG, "qsgd: bucket= given twice");
    *seen_bucket = 1;
    if (!parse_u64(it->value, 1, UINT32_MAX, &v))
      return ncclzSetError(NCCLZ_ERR_ARG, "qsgd: bucket='%s' must be an integer in [1, 2^32)", it->value);
    q->qsgd_bucket = (uint32_t)v;
    return NCCLZ_OK;
  }
  if (!strcmp(it->key, "seed")) {
    if (!parse_seed(it->value, &v))
      return ncclzSetError(NCCLZ_ERR_ARG, "qsgd: seed='%s' must be an unsigned 64-bit integer (decimal or 0x hex)",
                           it->value);
    q->seed = v;
    return NCCLZ_OK;
  }
  return ncclzSetError(NCCLZ_ERR_ARG, "qsgd: unknown key '%s'; expected bits, bucket or seed", it->key);
}

/* ------------------------------------------------------------- parse */

/* Walks the comma-separated items of `list` (after "kind:"), handing each to the kind's parser. */
static ncclzStatus parse_items(ncclzQuantKind kind, const char *list, ncclzQuantSpec *q) {
  const char *kname = kind == NCCLZ_QUANT_EB ? "eb" : "qsgd";
  int seen_a = 0, seen_b = 0; /* eb: bound given; qsgd: bits, bucket given */
  const char *s = list;
  while (*list) { /* an empty list falls through to the "required" messages */
    const char *end = strchr(s, ',');
    if (!end) end = s + strlen(s);
    SpecItem it;
    ncclzStatus st = split_item(kname, s, end, &it);
    if (st == NCCLZ_OK)
      st = kind == NCCLZ_QUANT_EB ? eb_item(&it, q, &seen_a) : qsgd_item(&it, q, &seen_a, &seen_b);
    if (st != NCCLZ_OK) return st;
    if (!*end) break;
    s = end + 1;
  }
  if (kind == NCCLZ_QUANT_EB && !seen_a)
    return ncclzSetError(NCCLZ_ERR_ARG, "eb: an error bound is required: abs=X or rel=X");
  if (kind == NCCLZ_QUANT_QSGD && !seen_a)
    return ncclzSetError(NCCLZ_ERR_ARG, "qsgd: bits= is required (2, 4 or 8)");
  if (kind == NCCLZ_QUANT_QSGD && !seen_b)
    return ncclzSetError(NCCLZ_ERR_ARG, "qsgd: bucket= is required (elements per scale)");
  return NCCLZ_OK;
}

ncclzStatus ncclzQuantSpecParse(const char *spec, ncclzQuantSpec *out) {
  if (!out) return ncclzSetError(NCCLZ_ERR_ARG, "ncclzQuantSpecParse: out is NULL");
  ncclzQuantSpec q;
  memset(&q, 0, sizeof q);
  q.seed = SPEC_DEFAULT_SEED;
  if (!spec || !*spec) return ncclzSetError(NCCLZ_ERR_ARG, "quant spec is empty; %s", kinds_expected);
  ncclzStatus st;
  if (!strcmp(spec, "none")) {
    q.kind = NCCLZ_QUANT_NONE;
    st = NCCLZ_OK;
  } else if (!strncmp(spec, "eb:", 3)) {
    q.kind = NCCLZ_QUANT_EB;
    st = parse_items(NCCLZ_QUANT_EB, spec + 3, &q);
  } else if (!strncmp(spec, "qsgd:", 5)) {
    q.kind = NCCLZ_QUANT_QSGD;
    st = parse_items(NCCLZ_QUANT_QSGD, spec + 5, &q);
  } else if (!strncmp(spec, "none", 4) && (spec[4] == ':' || spec[4] == ',')) {
    st = ncclzSetError(NCCLZ_ERR_ARG, "quant spec '%.60s': none takes no parameters", spec);
  } else {
    size_t klen = strcspn(spec, ":,=");
    st = ncclzSetError(NCCLZ_ERR_ARG, "unknown quantizer '%.*s'; %s", (int)(klen > 40 ? 40 : klen), spec,
                       kinds_expected);
  }
  if (st == NCCLZ_OK) *out = q;
  return st;
}

/* ------------------------------------------------------------ format */

/* Shortest %g text that reads back as exactly v. */
static void fmt_double(char *buf, size_t cap, double v) {
  for (int prec = 6; prec <= 17; prec++) {
    snprintf(buf, cap, "%.*g", prec, v);
    if (strtod(buf, NULL) == v) return;
  }
}

static void fmt_float(char *buf, size_t cap, float v) {
  for (int prec = 6; prec <= 9; prec++) {
    snprintf(buf, cap, "%.*g", prec, (double)v);
    if ((float)strtod(buf, NULL) == v) return;
  }
}

void ncclzQuantSpecFormat(const ncclzQuantSpec *q, char *buf, size_t cap) {
  if (!buf || cap == 0) return;
  char num[40], fill[48] = "", lor[16] = "", seed[40] = "";
  switch (q->kind) {
  case NCCLZ_QUANT_EB:
    fmt_double(num, sizeof num, q->eb);
    if (q->lorenzo >= 1 && q->lorenzo <= 3) snprintf(lor, sizeof lor, ",lorenzo=%dd", q->lorenzo);
    if (q->has_fill) {
      char v[32];
      fmt_float(v, sizeof v, q->fill_value);
      snprintf(fill, sizeof fill, ",fill=%s", v);
    }
    snprintf(buf, cap, "eb:%s=%s%s%s", q->eb_is_rel ? "rel" : "abs", num, lor, fill);
    break;
  case NCCLZ_QUANT_QSGD:
    if (q->seed != SPEC_DEFAULT_SEED) snprintf(seed, sizeof seed, ",seed=%llu", (unsigned long long)q->seed);
    snprintf(buf, cap, "qsgd:bits=%d,bucket=%u%s", q->qsgd_bits, (unsigned)q->qsgd_bucket, seed);
    break;
  default:
    snprintf(buf, cap, "none");
    break;
  }
}
