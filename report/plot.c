/* Plots through gnuplot: the data and the script go to temporary files, gnuplot renders an SVG
 * into the report directory, and the SVG is copied inline into the page. gnuplot runs as a child
 * process (report_spawn: an argv array, no shell; the file names as gnuplot -c arguments, never in
 * the script's text) so that a crash or a syntax error there cannot take the run down; its stderr
 * is kept and shown on the page when a plot fails. */
#include "report_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *gnuplot_cmd(void) {
  const char *g = getenv("NCCLZ_GNUPLOT");
  return g && *g ? g : "gnuplot";
}

int ncclzReportHaveGnuplot(void) {
  const char *argv[] = {gnuplot_cmd(), "--version", NULL};
  report_child ch = {argv, NULL, "/dev/null", "/dev/null"};
  int code;
  return report_spawn(&ch, &code) == 0 && code == 0;
}

/* A scratch file holding text in the staging directory; path receives its name. */
static int temp_file(const ncclzReport *r, const char *text, char *path, size_t cap) {
  snprintf(path, cap, "%s/.plot-XXXXXX", r->dir);
  int fd = mkstemp(path);
  if (fd < 0) return -1;
  FILE *f = fdopen(fd, "w");
  if (!f) {
    close(fd);
    unlink(path);
    return -1;
  }
  int ok = fputs(text, f) >= 0;
  if (fclose(f) || !ok) {
    unlink(path);
    return -1;
  }
  return 0;
}

/* Inline SVG: the file from its <svg element on (the XML prolog and DOCTYPE are not allowed
 * inside HTML). */
static int inline_svg(sbuf *body, const char *svg_path) {
  size_t len;
  char *svg = ncclzReadFile(NULL, svg_path, &len);
  if (!svg) return -1;
  const char *start = strstr(svg, "<svg");
  if (start) sb_puts(body, start);
  free(svg);
  return start ? 0 : -1;
}

static void note_missing(ncclzReport *r) {
  if (r->gnuplot < 0) r->gnuplot = ncclzReportHaveGnuplot();
  if (r->gnuplot == 0) {
    ncclzReportNote(r, "gnuplot was not found (command '%s'), so this report has no plots; every number is in the "
                       "tables and CSV files. Install gnuplot (Debian: gnuplot-nox) and run again for the plots.",
                    gnuplot_cmd());
    r->gnuplot = 2; /* noted */
  }
}

/* Runs gnuplot on script + data; 0 when the SVG was written. err receives gnuplot's stderr. */
static int render(ncclzReport *r, const char *name, const char *script, const char *data, sbuf *err) {
  char dpath[1200], spath[1200], epath[1300], svg[1200];
  snprintf(svg, sizeof svg, "%s/%s.svg", r->dir, name);
  if (!report_file_name_ok(name) || temp_file(r, data, dpath, sizeof dpath)) return -1;
  sbuf s;
  sb_init(&s);
  /* the paths arrive as ARG1 and ARG2 (gnuplot -c): no path is ever parsed as gnuplot text */
  sb_printf(&s, "set terminal svg size 900,480 dynamic font 'sans,11' noenhanced background '#ffffff'\n"
                "set output ARG1\nDATA = ARG2\nset grid\nset key outside right top\n%s\nunset output\n", script);
  int rc = temp_file(r, sb_str(&s), spath, sizeof spath);
  sb_free(&s);
  if (!rc) {
    snprintf(epath, sizeof epath, "%s.err", spath);
    const char *argv[] = {gnuplot_cmd(), "-c", spath, svg, dpath, NULL};
    report_child ch = {argv, NULL, "/dev/null", epath};
    int code;
    rc = report_spawn(&ch, &code) == 0 && code == 0 ? 0 : -1;
    size_t len;
    char *e = ncclzReadFile(NULL, epath, &len);
    if (e) sb_puts(err, e);
    free(e);
    unlink(epath);
    unlink(spath);
  }
  unlink(dpath);
  return rc;
}

ncclzStatus ncclzReportPlot(ncclzReport *r, const char *name, const char *caption, const char *script,
                            const char *data) {
  note_missing(r);
  if (r->gnuplot != 1) return NCCLZ_OK;
  if (!data || !*data) {
    ncclzReportNote(r, "%s: no data to plot.", caption);
    return NCCLZ_OK;
  }
  sbuf err;
  sb_init(&err);
  r->plots++;
  char svg[1200];
  snprintf(svg, sizeof svg, "%s/%s.svg", r->dir, name);
  sb_puts(&r->body, "<figure class=\"plot\"><figcaption>");
  sb_html(&r->body, caption);
  sb_printf(&r->body, " <a href=\"%s.svg\">(SVG)</a></figcaption>\n", name);
  if (render(r, name, script, data, &err) || inline_svg(&r->body, svg)) {
    r->plot_failures++;
    sb_puts(&r->body, "<p class=\"note\">gnuplot failed on this plot: ");
    sb_html(&r->body, err.len ? sb_str(&err) : "no SVG was written");
    sb_puts(&r->body, "</p>");
  }
  sb_puts(&r->body, "</figure>\n");
  sb_free(&err);
  return NCCLZ_OK;
}
