/* Line plots of y against x, one line per combination of the dimensions that vary: the what-if,
 * validate and tune sections all draw through here. */
#include "report_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Series per plot: more are split over several plots, none is left out; each of a plot's series
 * has its own colour and point type. */
#define SERIES_PER_PLOT 10
static const char *const COLOURS = "#1f77b4 #ff7f0e #2ca02c #d62728 #9467bd #8c564b #e377c2 #7f7f7f #bcbd22 #17becf";

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

/* The distinct series labels in order of first appearance (malloc'd, 200 chars each). */
static int series_labels(const series_spec *sp, const xy_row *rows, size_t n, const int *vary, char (**labels)[200]) {
  *labels = malloc((n ? n : 1) * sizeof **labels);
  int nser = 0;
  for (size_t i = 0; *labels && i < n; i++) {
    char lab[200];
    series_label(sp, &rows[i], vary, lab, sizeof lab);
    int s = 0;
    while (s < nser && strcmp((*labels)[s], lab)) s++;
    if (s == nser) snprintf((*labels)[nser++], sizeof lab, "%s", lab);
  }
  return nser;
}

/* The data file of series [s0, s1): one block per series (header line = its quoted label),
 * separated by two blank lines so that gnuplot's `index` picks them. */
static void build_data(const series_spec *sp, const xy_row *rows, size_t n, const int *vary, char (*labels)[200],
                       int s0, int s1, sbuf *data) {
  const xy_row **sel = malloc((n ? n : 1) * sizeof *sel);
  if (!sel) return;
  for (int s = s0; s < s1; s++) {
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
      char lab[200];
      series_label(sp, &rows[i], vary, lab, sizeof lab);
      if (!strcmp(lab, labels[s])) sel[m++] = &rows[i];
    }
    qsort(sel, m, sizeof *sel, cmp_x);
    sb_printf(data, "%s\"%s\"\n", s > s0 ? "\n\n" : "", labels[s]);
    for (size_t i = 0; i < m; i++) sb_printf(data, "%.10g %.10g\n", sel[i]->x, sel[i]->y);
  }
  free(sel);
}

static void plot_part(ncclzReport *r, const series_spec *sp, const char *data, int nser, int part, int parts) {
  sbuf s;
  sb_init(&s);
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
  sb_printf(&s, "COLOURS = '%s'\nset yrange [0:*]\nplot for [i=0:%d] DATA index i using 1:2 with linespoints lw 2 "
                "lc rgb word(COLOURS, i + 1) pt (i %% 5) + 5 ps 0.7 title columnheader(1)\n", COLOURS, nser - 1);
  char name[200], caption[400];
  snprintf(name, sizeof name, parts > 1 ? "%s_%d" : "%s", sp->name, part);
  if (parts > 1) snprintf(caption, sizeof caption, "%s (part %d of %d)", sp->caption, part, parts);
  else snprintf(caption, sizeof caption, "%s", sp->caption);
  ncclzReportPlot(r, name, caption, sb_str(&s), nser ? data : "");
  sb_free(&s);
}

void plot_series(ncclzReport *r, const series_spec *sp, const xy_row *rows, size_t n) {
  int vary[SERIES_MAX_DIMS] = {0};
  for (int d = 0; d < sp->ndims; d++) vary[d] = varies(rows, n, d);
  char(*labels)[200] = NULL;
  int nser = n ? series_labels(sp, rows, n, vary, &labels) : 0;
  int parts = nser ? (nser + SERIES_PER_PLOT - 1) / SERIES_PER_PLOT : 1;
  /* equal parts: 28 series are 10, 9, 9 rather than 10, 10, 8 */
  for (int part = 1, s0 = 0; part <= parts; part++) {
    int s1 = (int)((long)nser * part / parts);
    sbuf data;
    sb_init(&data);
    if (labels) build_data(sp, rows, n, vary, labels, s0, s1, &data);
    plot_part(r, sp, sb_str(&data), s1 - s0, part, parts);
    sb_free(&data);
    s0 = s1;
  }
  free(labels);
}
