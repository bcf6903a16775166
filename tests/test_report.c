/* report/: the document writer (tables -> CSV + HTML, plots inline) and gnuplot's absence. */
#include "ncclz/report.h"
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define OK(c) CHECK(c, "%s", "")

static char *slurp(const char *path) {
  size_t len;
  return ncclzReadFile(NULL, path, &len);
}

static void write_report(const char *dir) {
  ncclzReport *r = ncclzReportOpen(dir, "test <report>");
  OK(r != NULL);
  ncclzReportHeading(r, "Section");
  ncclzReportText(r, "a & b");
  ncclzTable *t = ncclzTableNew("tab", "name\tvalue");
  ncclzTableAdd(t, "x, y\t%d", 3);
  OK(ncclzReportTable(r, t, "caption") == NCCLZ_OK);
  OK(ncclzReportPlot(r, "line", "a line", "set xlabel 'x (unit)'\nset ylabel 'y (unit)'\nplot DATA using 1:2 with lines title 'y'",
                        "1 1\n2 4\n3 9\n") == NCCLZ_OK);
  OK(ncclzReportPlot(r, "empty", "an empty plot", "plot DATA using 1:2", "") == NCCLZ_OK);
  OK(ncclzReportClose(r) == NCCLZ_OK);
}

int main(void) {
  char dir[] = "/tmp/ncclz-test-report-XXXXXX";
  OK(mkdtemp(dir) != NULL);
  char path[400];
  /* with gnuplot (skipped quietly when the machine has none: the absent case is tested below) */
  int have = ncclzReportHaveGnuplot();
  write_report(dir);
  snprintf(path, sizeof path, "%s/index.html", dir);
  char *html = slurp(path);
  OK(html && strstr(html, "test &lt;report&gt;") && strstr(html, "a &amp; b") && strstr(html, "<td>x, y</td>"));
  OK(strstr(html, "an empty plot: no data to plot") || !have);
  if (have) OK(strstr(html, "<svg") && !strstr(html, "gnuplot failed"));
  free(html);
  snprintf(path, sizeof path, "%s/tab.csv", dir);
  char *csv = slurp(path);
  OK(csv && !strcmp(csv, "name,value\n\"x, y\",3\n"));
  free(csv);
  snprintf(path, sizeof path, "%s/results.json", dir);
  OK(access(path, F_OK) == 0);

  /* gnuplot absent: the page says so, has no plot, and still holds the table */
  setenv("NCCLZ_GNUPLOT", "/nonexistent/gnuplot", 1);
  OK(!ncclzReportHaveGnuplot());
  char dir2[300];
  snprintf(dir2, sizeof dir2, "%s/nognuplot", dir);
  write_report(dir2);
  snprintf(path, sizeof path, "%s/index.html", dir2);
  html = slurp(path);
  OK(html && strstr(html, "gnuplot was not found") && !strstr(html, "<svg") && strstr(html, "<td>x, y</td>"));
  free(html);
  unsetenv("NCCLZ_GNUPLOT");
  char cmd[400];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  OK(system(cmd) == 0);
  return tu_finish("test_report");
}
