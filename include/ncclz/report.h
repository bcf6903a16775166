/* ncclz report: scenario runs (`ncclz run`) and their self-contained reports.
 *
 * The top layer below the CLI. It may use every layer beneath it: codecs (CR tables), model
 * (break-even surface, threshold tuning), sim (what-if and validate replays, when SimGrid was
 * found: NCCLZ_HAVE_SIM), calibrate (data profiles).
 *
 * A report is a directory: index.html (one page, every SVG plot inline, no external file),
 * results.json (everything the page shows, machine-readable), one CSV per table and one SVG per
 * plot. Plots are rendered by gnuplot (run as a child process, without a shell, on a scratch
 * script and data file); without gnuplot the page says so and still holds every table.
 *
 * Scenario schema: docs/scenarios.md; report layout: docs/reports.md. */
#ifndef NCCLZ_REPORT_H
#define NCCLZ_REPORT_H

#include <stddef.h>

#include "ncclz/codecs.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------ the document */

typedef struct ncclzReport ncclzReport;
typedef struct ncclzTable ncclzTable;
struct cJSON;

/* Creates DIR (and its parents), takes its lock (DIR/.ncclz-lock; another report holding it is an
 * error) and starts a page in a staging directory inside DIR. NULL with the error set on failure:
 * an empty name, DIR or its results.json / index.html a symbolic link, DIR locked. The rules for
 * DIR are docs/reports.md's "The output directory". */
ncclzReport *ncclzReportOpen(const char *dir, const char *title);
/* A section heading (<h2>) and paragraphs of plain text (HTML-escaped). */
void ncclzReportHeading(ncclzReport *r, const char *text);
void ncclzReportText(ncclzReport *r, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
/* A highlighted paragraph: warnings such as "no measurement file". */
void ncclzReportNote(ncclzReport *r, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* A table: a name (its CSV is DIR/NAME.csv), a header and rows, each given as tab-separated
 * cells. Cells are plain text. */
ncclzTable *ncclzTableNew(const char *name, const char *header_tsv);
ncclzStatus ncclzTableAdd(ncclzTable *t, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
size_t ncclzTableRows(const ncclzTable *t);
/* Frees a table that will not be written. */
void ncclzTableFree(ncclzTable *t);
/* Writes DIR/NAME.csv, puts the table on the page under its caption and frees it. */
ncclzStatus ncclzReportTable(ncclzReport *r, ncclzTable *t, const char *caption);

/* The same, but the page only links the CSV (for long tables such as every surface point). */
ncclzStatus ncclzReportCsvOnly(ncclzReport *r, ncclzTable *t, const char *caption);

/* A plot: `script` holds gnuplot commands after the terminal and output lines, and names its
 * data file DATA (`plot DATA index 0 using 1:2 ...`); `data` is the text of that file. The SVG
 * goes to DIR/NAME.svg and inline into the page. An empty `data` gives a note, not an empty plot.
 * Without gnuplot (NCCLZ_GNUPLOT names another program), the page says so once. */
ncclzStatus ncclzReportPlot(ncclzReport *r, const char *name, const char *caption, const char *script,
                            const char *data);
/* 1 when the gnuplot program ($NCCLZ_GNUPLOT, default "gnuplot", looked up in PATH) runs. */
int ncclzReportHaveGnuplot(void);

/* The results.json root object: each section adds its own key. */
struct cJSON *ncclzReportJson(ncclzReport *r);
/* Writes index.html and results.json, renames the report's files into DIR (refused when the place
 * of one holds a symbolic link), removes the previous report's files this one did not write, and
 * frees the report (also on failure, which leaves DIR's previous report as it was). */
ncclzStatus ncclzReportClose(ncclzReport *r);
/* Frees without publishing anything: DIR keeps its previous report. */
void ncclzReportAbort(ncclzReport *r);

/* Progress on stderr, only when stderr is a terminal: "\r[#####.....] what 12/40". done ==
 * total ends the line. */
void ncclzProgress(const char *what, size_t done, size_t total);

/* ----------------------------------------------------------------- running */

typedef struct {
  const char *scenario; /* path of the scenario JSON */
  const char *out_dir;  /* the report directory */
  const char *profile;  /* overrides the scenario's "profile" (NULL: the scenario's) */
  const char *data_dir; /* cr-table: read the full data set from here (NULL: the scenario's slices) */
  const char *ncclz;    /* measure: the ncclz binary to run `ncclz perf` with (NULL: "ncclz") */
} ncclzRunOptions;

/* Runs a scenario of any kind (what-if, tune, validate, measure, cr-table) and writes its report.
 * NCCLZ_ERR_ARG: the scenario (or an input it names) is invalid, and the message names the field,
 * e.g. "scenario tune.min_gain_permil[2]: must be an integer in [0, 1000]"; other codes: the run
 * failed (the message says why). */
ncclzStatus ncclzRunScenario(const ncclzRunOptions *opt);

#ifdef __cplusplus
}
#endif
#endif /* NCCLZ_REPORT_H */
