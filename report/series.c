/* Line plots of y against x, one line per combination of the dimensions that vary: the what-if,
 * validate and tune sections all draw through here. */
#include "report_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_SERIES 16

/* A gnuplot single-quoted string: a quote inside is doubled. */
void gp_quote(sbuf *b, const char *s) {
  sb_puts(b, "'");
  for (; *s; s++) sb_puts(b, *s == '\'' ? "''" : (char[2]){*s, 0});
  sb_puts(b, "'");
}

static int varies(const xy_row *rows, size_t n, int d) {
  for (size_t i = 1; i < n; i++)
    if (strcmp(rows[i].dim[d], rows[0].dim[d])) return 1;
  return 0;
}

static void series_label(const series_spec *sp, const xy_row *row, const int *vary, char *buf, size_t cap) {
  size_t used = 0;
  buf[0] = 0;
  for (int d = 0; d < sp->ndims && used < cap; d++)
    if (vary[d] && d != sp->xdim)
      used += (size_t)snprintf(buf + used, cap - used, "%s%s=%s", used ? " " : "", sp->dim_names[d], row->dim[d]);
  if (!buf[0]) snprintf(buf, cap, "%s", sp->ylabel);
}

static int cmp_x(const void *a, const void *b) {
  double x = (*(const xy_row *const *)a)->x, y = (*(const xy_row *const *)b)->x;
  return (x > y) - (x < y);
}

/* The data file: one block per series (header line = its quoted label), separated by two blank
 * lines so that gnuplot's `index` picks them. Returns the number of series. */
static int build_data(const series_spec *sp, const xy_row *rows, size_t n, sbuf *data, int *dropped) {
  int vary[SERIES_MAX_DIMS] = {0};
  for (int d = 0; d < sp->ndims; d++) vary[d] = varies(rows, n, d);
  char labels[MAX_SERIES][200];
  int nser = 0;
  const xy_row **sel = malloc((n ? n : 1) * sizeof *sel);
  if (!sel) return 0;
  *dropped = 0;
  for (size_t i = 0; i < n; i++) {
    char lab[200];
    series_label(sp, &rows[i], vary, lab, sizeof lab);
    int s = 0;
    while (s < nser && strcmp(labels[s], lab)) s++;
    if (s < nser) continue;
    if (nser == MAX_SERIES) {
      (*dropped)++;
      continue;
    }
    snprintf(labels[nser++], sizeof labels[0], "%s", lab);
  }
  for (int s = 0; s < nser; s++) {
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
      char lab[200];
      series_label(sp, &rows[i], vary, lab, sizeof lab);
      if (!strcmp(lab, labels[s])) sel[m++] = &rows[i];
    }
    qsort(sel, m, sizeof *sel, cmp_x);
    sb_printf(data, "%s\"%s\"\n", s ? "\n\n" : "", labels[s]);
    for (size_t i = 0; i < m; i++) sb_printf(data, "%.10g %.10g\n", sel[i]->x, sel[i]->y);
  }
  free(sel);
  return nser;
}

void plot_series(ncclzReport *r, const series_spec *sp, const xy_row *rows, size_t n) {
  sbuf data, s;
  sb_init(&data);
  sb_init(&s);
  int dropped = 0, nser = n ? build_data(sp, rows, n, &data, &dropped) : 0;
  sb_puts(&s, "set title ");
  gp_quote(&s, sp->title);
  sb_puts(&s, "\nset xlabel ");
  gp_quote(&s, sp->xlabel);
  sb_puts(&s, "\nset ylabel ");
  gp_quote(&s, sp->ylabel);
  sb_puts(&s, "\nset key outside right top font ',9'\n");
  if (sp->logx) sb_printf(&s, "set logscale x %d\n", sp->logx);
  if (sp->xbytes) sb_puts(&s, "set format x '%.0b %BB'\nset xtics rotate by -30\n");
  if (sp->extra) sb_printf(&s, "%s\n", sp->extra);
  sb_printf(&s, "set yrange [0:*]\nplot for [i=0:%d] DATA index i using 1:2 with linespoints lw 2 pt 7 ps 0.6 "
                "title columnheader(1)\n", nser - 1);
  char caption[400];
  if (dropped) snprintf(caption, sizeof caption, "%s (first %d series shown of %d)", sp->caption, nser, nser + dropped);
  else snprintf(caption, sizeof caption, "%s", sp->caption);
  ncclzReportPlot(r, sp->name, caption, sb_str(&s), nser ? sb_str(&data) : "");
  sb_free(&data);
  sb_free(&s);
}
