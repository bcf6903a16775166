/* A growing string (report internals): the page body, CSV text, plot data. */
#ifndef NCCLZ_REPORT_SBUF_H
#define NCCLZ_REPORT_SBUF_H
#include <stdarg.h>
#include <stddef.h>

typedef struct {
  char *s;
  size_t len, cap;
  int oom; /* set once an append failed: the text is then truncated */
} sbuf;

void sb_init(sbuf *b);
void sb_free(sbuf *b);
void sb_puts(sbuf *b, const char *s);
void sb_putn(sbuf *b, const char *s, size_t n);
void sb_printf(sbuf *b, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
void sb_vprintf(sbuf *b, const char *fmt, va_list ap);
/* Appends s with &, <, >, " escaped for HTML text and attributes. */
void sb_html(sbuf *b, const char *s);
/* The text ("" when empty): never NULL. */
const char *sb_str(const sbuf *b);
#endif
