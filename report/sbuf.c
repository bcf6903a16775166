/* A growing string for the report writer. Allocation failure is remembered, not fatal: the
 * report is then written truncated and ncclzReportClose says so. */
#include "sbuf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void sb_init(sbuf *b) { memset(b, 0, sizeof *b); }

void sb_free(sbuf *b) {
  free(b->s);
  sb_init(b);
}

static int grow(sbuf *b, size_t extra) {
  if (b->oom) return -1;
  if (b->len + extra + 1 <= b->cap) return 0;
  size_t cap = b->cap ? b->cap : 256;
  while (cap < b->len + extra + 1) cap *= 2;
  char *s = realloc(b->s, cap);
  if (!s) {
    b->oom = 1;
    return -1;
  }
  b->s = s;
  b->cap = cap;
  return 0;
}

void sb_putn(sbuf *b, const char *s, size_t n) {
  if (grow(b, n)) return;
  memcpy(b->s + b->len, s, n);
  b->len += n;
  b->s[b->len] = 0;
}

void sb_puts(sbuf *b, const char *s) { sb_putn(b, s, strlen(s)); }

void sb_vprintf(sbuf *b, const char *fmt, va_list ap) {
  va_list ap2;
  va_copy(ap2, ap);
  int n = vsnprintf(NULL, 0, fmt, ap2);
  va_end(ap2);
  if (n < 0 || grow(b, (size_t)n)) return;
  vsnprintf(b->s + b->len, (size_t)n + 1, fmt, ap);
  b->len += (size_t)n;
}

void sb_printf(sbuf *b, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  sb_vprintf(b, fmt, ap);
  va_end(ap);
}

void sb_html(sbuf *b, const char *s) {
  for (; *s; s++) {
    switch (*s) {
    case '&': sb_puts(b, "&amp;"); break;
    case '<': sb_puts(b, "&lt;"); break;
    case '>': sb_puts(b, "&gt;"); break;
    case '"': sb_puts(b, "&quot;"); break;
    default: sb_putn(b, s, 1);
    }
  }
}

const char *sb_str(const sbuf *b) { return b->s ? b->s : ""; }
