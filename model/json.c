/* The strict JSON reader of every layer: cJSON, plus the checks it does not make (trailing
 * characters, NUL bytes, invalid UTF-8, duplicate keys), each error one line naming the input and
 * the line and column or the key's path. */
#include "ncclz/model.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* Line and column (both from 1) of byte `at` of text, for error messages. */
static void line_col(const char *text, size_t at, size_t *line, size_t *col) {
  size_t l = 1, c = 1;
  for (size_t i = 0; i < at; i++) {
    if (text[i] == '\n') l++, c = 1;
    else c++;
  }
  *line = l, *col = c;
}

static ncclzStatus at_error(const char *name, const char *text, size_t at, const char *what) {
  size_t line, col;
  line_col(text, at, &line, &col);
  return ncclzSetError(NCCLZ_ERR_ARG, "%s: %s at line %zu, column %zu", name, what, line, col);
}

/* Length of the valid UTF-8 sequence at s (at most n bytes), 0 when it is not one: no overlong
 * forms, no surrogates, nothing past U+10FFFF. */
static size_t utf8_len(const unsigned char *s, size_t n) {
  unsigned c = s[0];
  if (c < 0x80) return 1;
  size_t len = c >= 0xC2 && c <= 0xDF ? 2 : c >= 0xE0 && c <= 0xEF ? 3 : c >= 0xF0 && c <= 0xF4 ? 4 : 0;
  if (!len || len > n) return 0;
  for (size_t i = 1; i < len; i++)
    if ((s[i] & 0xC0) != 0x80) return 0;
  if (c == 0xE0 && s[1] < 0xA0) return 0; /* overlong */
  if (c == 0xED && s[1] > 0x9F) return 0; /* UTF-16 surrogate */
  if (c == 0xF0 && s[1] < 0x90) return 0; /* overlong */
  if (c == 0xF4 && s[1] > 0x8F) return 0; /* past U+10FFFF */
  return len;
}

/* One pass over the text: NUL bytes, invalid UTF-8, control characters inside a string (JSON
 * wants them escaped; cJSON takes them) and the escape \u0000 (cJSON would cut the string there). */
static ncclzStatus scan_text(const char *name, const char *text, size_t len) {
  const unsigned char *s = (const unsigned char *)text;
  int in_string = 0;
  for (size_t i = 0; i < len;) {
    if (s[i] == 0) return at_error(name, text, i, "NUL byte");
    size_t n = utf8_len(s + i, len - i);
    if (!n) return at_error(name, text, i, "not valid UTF-8");
    if (s[i] == '"') in_string = !in_string;
    if (in_string && s[i] < 0x20) return at_error(name, text, i, "control character in a string");
    if (in_string && s[i] == '\\' && i + 1 < len) {
      if (s[i + 1] == 'u' && i + 6 <= len && !memcmp(s + i + 2, "0000", 4))
        return at_error(name, text, i, "\\u0000 (a NUL character) in a string");
      if (s[i + 1] != 0) n = 2; /* skip the escaped character, a quote included */
    }
    i += n;
  }
  return NCCLZ_OK;
}

/* ------------------------------------------------------------ duplicate keys */

typedef struct {
  char text[192];
} KeyPath;

/* The parent's path with ".key" or "[index]" appended, cut at the buffer's end. */
static KeyPath path_child(const KeyPath *parent, const char *key, long index) {
  KeyPath p = *parent;
  char idx[24];
  if (!key) snprintf(idx, sizeof idx, "[%ld]", index);
  const char *parts[2] = {key && p.text[0] ? "." : "", key ? key : idx};
  size_t used = strlen(p.text);
  for (int k = 0; k < 2; k++) {
    size_t n = strlen(parts[k]), room = sizeof p.text - 1 - used;
    if (n > room) n = room;
    memcpy(p.text + used, parts[k], n);
    used += n;
  }
  p.text[used] = '\0';
  return p;
}

static int cmp_key(const void *a, const void *b) {
  return strcmp((*(const cJSON *const *)a)->string, (*(const cJSON *const *)b)->string);
}

/* The first key of object o that appears twice (sorted, so O(k log k) for k keys), or NULL. */
static const char *duplicate_key(const cJSON *o, ncclzStatus *st) {
  size_t k = 0, i = 0;
  const cJSON *it;
  cJSON_ArrayForEach(it, o) k++;
  if (k < 2) return NULL;
  const cJSON **keys = malloc(k * sizeof *keys);
  if (!keys) return *st = ncclzSetError(NCCLZ_ERR_NOMEM, "JSON: out of memory"), NULL;
  cJSON_ArrayForEach(it, o) keys[i++] = it;
  qsort(keys, k, sizeof *keys, cmp_key);
  const char *dup = NULL;
  for (i = 1; i < k && !dup; i++)
    if (!strcmp(keys[i - 1]->string, keys[i]->string)) dup = keys[i]->string;
  free(keys);
  return dup;
}

static ncclzStatus check_keys(const char *name, const cJSON *v, const KeyPath *path) {
  ncclzStatus st = NCCLZ_OK;
  if (cJSON_IsObject(v)) {
    const char *dup = duplicate_key(v, &st);
    if (st != NCCLZ_OK) return st;
    if (dup) {
      KeyPath p = path_child(path, dup, 0);
      return ncclzSetError(NCCLZ_ERR_ARG, "%s: duplicate key '%s'", name, p.text);
    }
  }
  const cJSON *it;
  long i = 0;
  cJSON_ArrayForEach(it, v) {
    KeyPath p = path_child(path, cJSON_IsObject(v) ? it->string : NULL, i++);
    if ((st = check_keys(name, it, &p)) != NCCLZ_OK) return st;
  }
  return NCCLZ_OK;
}

/* -------------------------------------------------------------------- API */

static int is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

ncclzStatus ncclzJsonParse(const char *name, const char *text, size_t len, cJSON **out) {
  *out = NULL;
  if (!name) name = "JSON";
  if (!text) return ncclzSetError(NCCLZ_ERR_ARG, "%s: no text", name);
  if (len > NCCLZ_JSON_MAX_BYTES)
    return ncclzSetError(NCCLZ_ERR_ARG, "%s: %zu bytes, at most %u", name, len, (unsigned)NCCLZ_JSON_MAX_BYTES);
  ncclzStatus st = scan_text(name, text, len);
  if (st != NCCLZ_OK) return st;
  const char *end = NULL;
  cJSON *root = cJSON_ParseWithLengthOpts(text, len, &end, 0);
  if (!root) return at_error(name, text, end && end >= text ? (size_t)(end - text) : 0, "invalid JSON");
  size_t at = (size_t)(end - text);
  while (at < len && is_space(text[at])) at++;
  if (at < len) st = at_error(name, text, at, "characters after the JSON value");
  KeyPath top = {""};
  if (st == NCCLZ_OK) st = check_keys(name, root, &top);
  if (st != NCCLZ_OK) {
    cJSON_Delete(root);
    return st;
  }
  *out = root;
  return NCCLZ_OK;
}

ncclzStatus ncclzJsonLoad(const char *what, const char *path, cJSON **out) {
  *out = NULL;
  char name[1100];
  snprintf(name, sizeof name, "%s%s%s", what ? what : "", what ? " " : "", path ? path : "");
  struct stat sb;
  if (path && stat(path, &sb) == 0 && S_ISREG(sb.st_mode) && (uint64_t)sb.st_size > NCCLZ_JSON_MAX_BYTES)
    return ncclzSetError(NCCLZ_ERR_ARG, "%s: %lld bytes, at most %u", name, (long long)sb.st_size,
                         (unsigned)NCCLZ_JSON_MAX_BYTES); /* before reading it whole */
  size_t len = 0;
  char *text = ncclzReadFile(what, path, &len);
  if (!text) return NCCLZ_ERR_IO;
  ncclzStatus st = ncclzJsonParse(name, text, len, out);
  free(text);
  return st;
}

size_t ncclzJsonCount(const cJSON *arr, size_t cap) {
  size_t n = 0;
  const cJSON *it;
  if (!cJSON_IsArray(arr) && !cJSON_IsObject(arr)) return 0;
  cJSON_ArrayForEach(it, arr) if (++n > cap) break;
  return n;
}

int ncclzJsonBytes(const cJSON *v, uint64_t *out) {
  if (cJSON_IsString(v)) return ncclzParseBytes(v->valuestring, out);
  if (!cJSON_IsNumber(v) || !(v->valuedouble >= 1.0 && v->valuedouble <= NCCLZ_JSON_BYTES_MAX) ||
      v->valuedouble != (double)(uint64_t)v->valuedouble)
    return -1;
  *out = (uint64_t)v->valuedouble;
  return 0;
}
