/* The report document: an HTML page built in memory (tables, notes, inline SVG), the CSV of every
 * table, and results.json. Everything is written into one directory so the page can be mailed or
 * attached as one file (index.html holds the SVGs itself). */
#include "report_internal.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct ncclzTable {
  char name[96];
  size_t ncols;
  sbuf header;    /* TSV */
  sbuf rows;      /* TSV, one line per row */
  size_t nrows;
};

ncclzStatus report_open(const char *dir, const char *title, ncclzReport **out) {
  *out = NULL;
  ncclzReport *r = calloc(1, sizeof *r);
  cJSON *json = cJSON_CreateObject();
  if (!r || !json) {
    free(r);
    cJSON_Delete(json);
    return ncclzSetError(NCCLZ_ERR_NOMEM, "report: out of memory");
  }
  sb_init(&r->body);
  r->json = json;
  r->gnuplot = -1;
  snprintf(r->title, sizeof r->title, "%s", title);
  ncclzStatus st = report_dir_open(r, dir);
  if (st != NCCLZ_OK) {
    ncclzReportAbort(r);
    return st;
  }
  *out = r;
  return NCCLZ_OK;
}

ncclzReport *ncclzReportOpen(const char *dir, const char *title) {
  ncclzReport *r;
  return report_open(dir, title, &r) == NCCLZ_OK ? r : NULL;
}

void ncclzReportHeading(ncclzReport *r, const char *text) {
  sb_puts(&r->body, "<h2>");
  sb_html(&r->body, text);
  sb_puts(&r->body, "</h2>\n");
}

static void paragraph(ncclzReport *r, const char *cls, const char *fmt, va_list ap) {
  sbuf t;
  sb_init(&t);
  sb_vprintf(&t, fmt, ap);
  sb_printf(&r->body, "<p%s>", cls);
  sb_html(&r->body, sb_str(&t));
  sb_puts(&r->body, "</p>\n");
  sb_free(&t);
}

void ncclzReportText(ncclzReport *r, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  paragraph(r, "", fmt, ap);
  va_end(ap);
}

void ncclzReportNote(ncclzReport *r, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  paragraph(r, " class=\"note\"", fmt, ap);
  va_end(ap);
}

/* ------------------------------------------------------------------ tables */

static size_t count_cells(const char *tsv) {
  size_t n = 1;
  for (; *tsv; tsv++) n += *tsv == '\t';
  return n;
}

ncclzTable *ncclzTableNew(const char *name, const char *header_tsv) {
  ncclzTable *t = calloc(1, sizeof *t);
  if (!t) return NULL;
  snprintf(t->name, sizeof t->name, "%s", name);
  sb_init(&t->header);
  sb_init(&t->rows);
  sb_puts(&t->header, header_tsv);
  t->ncols = count_cells(header_tsv);
  return t;
}

ncclzStatus ncclzTableAdd(ncclzTable *t, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  sb_vprintf(&t->rows, fmt, ap);
  va_end(ap);
  sb_puts(&t->rows, "\n");
  t->nrows++;
  return t->rows.oom ? ncclzSetError(NCCLZ_ERR_NOMEM, "report: out of memory") : NCCLZ_OK;
}

size_t ncclzTableRows(const ncclzTable *t) { return t->nrows; }

void ncclzTableFree(ncclzTable *t) {
  if (!t) return;
  sb_free(&t->header);
  sb_free(&t->rows);
  free(t);
}

/* A CSV field: quoted when it holds a comma, a quote or a newline. */
static void csv_cell(FILE *f, const char *s, size_t n) {
  int quote = 0;
  for (size_t i = 0; i < n; i++) quote |= s[i] == ',' || s[i] == '"';
  if (!quote) {
    fwrite(s, 1, n, f);
    return;
  }
  fputc('"', f);
  for (size_t i = 0; i < n; i++) {
    if (s[i] == '"') fputc('"', f);
    fputc(s[i], f);
  }
  fputc('"', f);
}

static void csv_line(FILE *f, const char *line, size_t len) {
  size_t start = 0;
  for (size_t i = 0; i <= len; i++) {
    if (i < len && line[i] != '\t') continue;
    if (start) fputc(',', f);
    csv_cell(f, line + start, i - start);
    start = i + 1;
  }
  fputc('\n', f);
}

/* Calls fn(line, len) for every line of text. */
static void each_line(const char *text, void (*fn)(void *, const char *, size_t), void *ctx) {
  while (*text) {
    const char *nl = strchr(text, '\n');
    size_t len = nl ? (size_t)(nl - text) : strlen(text);
    fn(ctx, text, len);
    text += len + (nl ? 1 : 0);
  }
}

static void csv_cb(void *f, const char *line, size_t len) { csv_line((FILE *)f, line, len); }

/* A new file in the report's staging directory, for writing. */
static FILE *report_file(const ncclzReport *r, const char *name) {
  int fd = report_file_open(r, name);
  FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
  if (!f && fd >= 0) close(fd), ncclzSetError(NCCLZ_ERR_NOMEM, "report: out of memory");
  return f;
}

static int write_csv(const ncclzReport *r, const ncclzTable *t) {
  char name[128];
  snprintf(name, sizeof name, "%s.csv", t->name);
  FILE *f = report_file(r, name);
  if (!f) return -1;
  csv_line(f, sb_str(&t->header), t->header.len);
  each_line(sb_str(&t->rows), csv_cb, f);
  return fclose(f) ? (ncclzSetError(NCCLZ_ERR_IO, "report: cannot write '%s/%s'", r->out, name), -1) : 0;
}

typedef struct {
  sbuf *b;
  const char *tag;
} html_row_ctx;

static void html_row(void *vctx, const char *line, size_t len) {
  html_row_ctx *c = vctx;
  sb_puts(c->b, "<tr>");
  size_t start = 0;
  for (size_t i = 0; i <= len; i++) {
    if (i < len && line[i] != '\t') continue;
    char cell[512];
    size_t n = i - start < sizeof cell - 1 ? i - start : sizeof cell - 1;
    memcpy(cell, line + start, n);
    cell[n] = 0;
    sb_printf(c->b, "<%s>", c->tag);
    sb_html(c->b, cell);
    sb_printf(c->b, "</%s>", c->tag);
    start = i + 1;
  }
  sb_puts(c->b, "</tr>\n");
}

ncclzStatus ncclzReportTable(ncclzReport *r, ncclzTable *t, const char *caption) {
  if (!t) return ncclzSetError(NCCLZ_ERR_NOMEM, "report: out of memory");
  int rc = write_csv(r, t);
  sb_puts(&r->body, "<figure class=\"table\"><figcaption>");
  sb_html(&r->body, caption);
  sb_printf(&r->body, " <a href=\"%s.csv\">(CSV)</a></figcaption>\n<table>\n", t->name);
  html_row_ctx hc = {&r->body, "th"};
  html_row(&hc, sb_str(&t->header), t->header.len);
  hc.tag = "td";
  each_line(sb_str(&t->rows), html_row, &hc);
  sb_puts(&r->body, "</table></figure>\n");
  ncclzTableFree(t);
  return rc ? NCCLZ_ERR_IO : NCCLZ_OK;
}

ncclzStatus ncclzReportCsvOnly(ncclzReport *r, ncclzTable *t, const char *caption) {
  if (!t) return ncclzSetError(NCCLZ_ERR_NOMEM, "report: out of memory");
  int rc = write_csv(r, t);
  sb_puts(&r->body, "<p>");
  sb_html(&r->body, caption);
  sb_printf(&r->body, ": %zu rows in <a href=\"%s.csv\">%s.csv</a>.</p>\n", t->nrows, t->name, t->name);
  ncclzTableFree(t);
  return rc ? NCCLZ_ERR_IO : NCCLZ_OK;
}

cJSON *ncclzReportJson(ncclzReport *r) { return r->json; }

/* ------------------------------------------------------------------- close */

static const char *const STYLE =
    "body{font-family:sans-serif;max-width:1200px;margin:2em auto;padding:0 1em;color:#222}"
    "h1{font-size:1.6em}h2{font-size:1.25em;border-bottom:1px solid #ccc;margin-top:2em}"
    "table{border-collapse:collapse;font-size:.85em;margin:.5em 0}"
    "td,th{border:1px solid #ccc;padding:2px 6px;text-align:right}th{background:#f0f0f0}"
    "td:first-child,th:first-child{text-align:left}"
    "figure{margin:1em 0}figcaption{font-weight:bold;margin-bottom:.3em}"
    ".note{background:#fff4d6;border-left:4px solid #e0a000;padding:.4em .8em}"
    ".plot svg{max-width:100%;height:auto}";

static int write_text(const ncclzReport *r, const char *name, const char *text) {
  FILE *f = report_file(r, name);
  if (!f) return -1;
  int bad = fputs(text, f) < 0;
  if (fclose(f) || bad) return ncclzSetError(NCCLZ_ERR_IO, "report: cannot write '%s/%s'", r->out, name), -1;
  return 0;
}

static int write_html(const ncclzReport *r) {
  sbuf page;
  sb_init(&page);
  sb_puts(&page, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>");
  sb_html(&page, r->title);
  sb_printf(&page, "</title><style>%s</style></head>\n<body>\n<h1>", STYLE);
  sb_html(&page, r->title);
  sb_puts(&page, "</h1>\n");
  sb_puts(&page, sb_str(&r->body));
  sb_puts(&page, "<hr><p>Written by <code>ncclz run</code>; the numbers are in results.json and the CSV files "
                 "beside this page.</p>\n</body></html>\n");
  int rc = page.oom || r->body.oom ? (ncclzSetError(NCCLZ_ERR_NOMEM, "report: out of memory"), -1)
                                    : write_text(r, "index.html", sb_str(&page));
  sb_free(&page);
  return rc;
}

/* The first string (value or key) under j that is not valid UTF-8, or NULL. */
static const cJSON *non_utf8(const cJSON *j) {
  if ((j->string && !utf8_valid(j->string)) || (cJSON_IsString(j) && !utf8_valid(j->valuestring))) return j;
  const cJSON *it, *bad = NULL;
  cJSON_ArrayForEach(it, j) if (!bad) bad = non_utf8(it);
  return bad;
}

static ncclzStatus write_json(const ncclzReport *r) {
  const cJSON *bad = non_utf8(r->json); /* every input string was checked: this is the net under them */
  if (bad)
    return ncclzSetError(NCCLZ_ERR_ARG, "report: results.json would hold text that is not UTF-8 (in \"%s\")",
                         bad->string && utf8_valid(bad->string) ? bad->string : "a key");
  char *text = cJSON_Print(r->json);
  int rc = text ? write_text(r, "results.json", text) : (ncclzSetError(NCCLZ_ERR_NOMEM, "report: out of memory"), -1);
  free(text);
  return rc ? NCCLZ_ERR_IO : NCCLZ_OK;
}

static void report_free(ncclzReport *r, int failed) {
  report_dir_close(r, failed);
  sb_free(&r->body);
  cJSON_Delete(r->json);
  free(r);
}

void ncclzReportAbort(ncclzReport *r) {
  if (r) report_free(r, 1);
}

ncclzStatus ncclzReportClose(ncclzReport *r) {
  ncclzStatus st = write_html(r) ? NCCLZ_ERR_IO : write_json(r);
  if (st == NCCLZ_OK) st = report_dir_publish(r);
  report_free(r, st != NCCLZ_OK);
  return st;
}

void ncclzProgress(const char *what, size_t done, size_t total) {
  if (!isatty(2) || !total) return;
  char bar[31];
  size_t fill = done * 30 / total;
  for (size_t i = 0; i < 30; i++) bar[i] = i < fill ? '#' : '.';
  bar[30] = 0;
  fprintf(stderr, "\r[%s] %-40.40s %zu/%zu", bar, what, done, total);
  if (done >= total) fputc('\n', stderr);
  fflush(stderr);
}
