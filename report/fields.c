/* Scenario field readers: every error names the field by its path and says what was expected. */
#include "report_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int utf8_valid(const char *s) {
  const unsigned char *p = (const unsigned char *)s;
  while (*p) {
    unsigned c = *p++;
    int more = c < 0x80 ? 0 : (c & 0xE0) == 0xC0 ? 1 : (c & 0xF0) == 0xE0 ? 2 : (c & 0xF8) == 0xF0 ? 3 : -1;
    if (more < 0) return 0;
    unsigned cp = more ? c & (0x3F >> more) : c;
    for (int i = 0; i < more; i++, p++) {
      if ((*p & 0xC0) != 0x80) return 0; /* also stops at the terminating NUL */
      cp = cp << 6 | (*p & 0x3F);
    }
    static const unsigned min_cp[4] = {0, 0x80, 0x800, 0x10000}; /* shorter forms are overlong */
    if (cp < min_cp[more] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
  }
  return 1;
}

int fld_string(const cJSON *o, const char *path, const char *key, int required, const char **out) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
  if (!v) return required ? (SCN_ERR("%s%s%s: required (a string)", path, *path ? "." : "", key), -1) : 0;
  if (!cJSON_IsString(v)) return SCN_ERR("%s%s%s: expected a string", path, *path ? "." : "", key), -1;
  if (!utf8_valid(v->valuestring)) return SCN_ERR("%s%s%s: not valid UTF-8 text", path, *path ? "." : "", key), -1;
  *out = v->valuestring;
  return 0;
}

int fld_int(const cJSON *o, const char *path, const char *key, int required, double lo, double hi, double *out) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
  const char *dot = *path ? "." : "";
  if (!v) return required ? (SCN_ERR("%s%s%s: required (an integer in [%g, %g])", path, dot, key, lo, hi), -1) : 0;
  if (!cJSON_IsNumber(v) || !(v->valuedouble >= lo && v->valuedouble <= hi) || v->valuedouble != floor(v->valuedouble))
    return SCN_ERR("%s%s%s: expected an integer in [%g, %g]", path, dot, key, lo, hi), -1;
  *out = v->valuedouble;
  return 0;
}

int fld_number(const cJSON *o, const char *path, const char *key, int required, double lo, double hi, double *out) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
  const char *dot = *path ? "." : "";
  if (!v) return required ? (SCN_ERR("%s%s%s: required (a number in [%g, %g])", path, dot, key, lo, hi), -1) : 0;
  if (!cJSON_IsNumber(v) || !(v->valuedouble >= lo && v->valuedouble <= hi))
    return SCN_ERR("%s%s%s: expected a number in [%g, %g]", path, dot, key, lo, hi), -1;
  *out = v->valuedouble;
  return 0;
}

/* "64K", "4M", "1G", "1.5M" (powers of 1024) or a plain number, up to 1e15; -1 when not a byte count. */
static double parse_bytes(const cJSON *e) {
  uint64_t v;
  return ncclzJsonBytes(e, &v) == 0 ? (double)v : -1;
}

/* The array's items one after the other, or the one value that stands for an array of one. */
static const cJSON *first_item(const cJSON *arr) { return cJSON_IsArray(arr) ? arr->child : arr; }
static const cJSON *next_item(const cJSON *arr, const cJSON *e) { return cJSON_IsArray(arr) ? e->next : NULL; }

static int items(const cJSON *o, const char *path, const char *key, int required, const char *what, const cJSON **arr,
                 int *n) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
  const char *dot = *path ? "." : "";
  *arr = v;
  *n = 0;
  if (!v) return required ? (SCN_ERR("%s%s%s: required (%s)", path, dot, key, what), -1) : 0;
  *n = cJSON_IsArray(v) ? (int)ncclzJsonCount(v, 10000) : 1; /* counted no further than the limit */
  if (*n < 1 || *n > 10000) return SCN_ERR("%s%s%s: expected %s (1 to 10000 values)", path, dot, key, what), -1;
  return 0;
}

int fld_numbers(const cJSON *o, const char *path, const char *key, int required, double lo, double hi, int integer,
                double **out, int *n) {
  const cJSON *arr;
  char what[96];
  snprintf(what, sizeof what, "an array of %s in [%g, %g]", integer ? "integers" : "numbers", lo, hi);
  int len;
  if (items(o, path, key, required, what, &arr, &len)) return -1;
  if (!len) return 0;
  double *v = malloc((size_t)len * sizeof *v);
  if (!v) return ncclzSetError(NCCLZ_ERR_NOMEM, "scenario: out of memory"), -1;
  int i = 0;
  for (const cJSON *e = first_item(arr); e; e = next_item(arr, e), i++) {
    if (!cJSON_IsNumber(e) || !(e->valuedouble >= lo && e->valuedouble <= hi) ||
        (integer && e->valuedouble != floor(e->valuedouble))) {
      free(v);
      return SCN_ERR("%s%s%s[%d]: expected %s in [%g, %g]", path, *path ? "." : "", key, i,
                     integer ? "an integer" : "a number", lo, hi), -1;
    }
    v[i] = e->valuedouble;
  }
  free(*out);
  *out = v;
  *n = len;
  return 0;
}

int fld_bytes(const cJSON *o, const char *path, const char *key, int required, double **out, int *n) {
  const cJSON *arr;
  int len;
  if (items(o, path, key, required, "an array of byte counts such as 65536 or \"4M\"", &arr, &len)) return -1;
  if (!len) return 0;
  double *v = malloc((size_t)len * sizeof *v);
  if (!v) return ncclzSetError(NCCLZ_ERR_NOMEM, "scenario: out of memory"), -1;
  int i = 0;
  for (const cJSON *e = first_item(arr); e; e = next_item(arr, e), i++) {
    v[i] = parse_bytes(e);
    if (v[i] < 0) {
      free(v);
      return SCN_ERR("%s%s%s[%d]: expected a byte count such as 65536 or \"4M\"", path, *path ? "." : "", key, i), -1;
    }
  }
  free(*out);
  *out = v;
  *n = len;
  return 0;
}

int fld_known(const cJSON *o, const char *path, const char *const *keys) {
  if (o && !cJSON_IsObject(o)) /* an array's items have no names to check */
    return SCN_ERR("%s: expected an object", *path ? path : "scenario"), -1;
  const cJSON *it;
  cJSON_ArrayForEach(it, o) {
    int ok = 0;
    for (const char *const *k = keys; *k && !ok; k++) ok = !strcmp(*k, it->string);
    if (!ok) {
      sbuf list;
      sb_init(&list);
      for (const char *const *k = keys; *k; k++) sb_printf(&list, "%s%s", k == keys ? "" : ", ", *k);
      SCN_ERR("%s%s%s: unknown field (expected one of: %s)", path, *path ? "." : "", it->string, sb_str(&list));
      sb_free(&list);
      return -1;
    }
  }
  return 0;
}

void fmt_bytes(double b, char *buf, size_t cap) { ncclzFormatBytes(b, buf, cap); }
