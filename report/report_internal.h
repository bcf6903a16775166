/* report/ internals shared by the document writer, the plots and the scenario kinds. */
#ifndef NCCLZ_REPORT_INTERNAL_H
#define NCCLZ_REPORT_INTERNAL_H
#include "ncclz/report.h"
#include "ncclz/model.h"
#include "sbuf.h"

#include <cjson/cJSON.h>

struct ncclzReport {
  char dir[1024];
  char title[256];
  sbuf body;
  cJSON *json;
  int gnuplot;          /* -1 unknown, 0 missing (noted on the page), 1 available */
  int plots, plot_failures;
};

/* A run that cannot proceed on this build or machine (exit 1): the codecs layer has no generic
 * runtime code, and IO is the nearest (the CLI only tells ERR_ARG from the rest). */
#define NCCLZ_ERR_RUNTIME NCCLZ_ERR_IO

#define SCN_ERR(...) ncclzSetError(NCCLZ_ERR_ARG, "scenario " __VA_ARGS__)

/* Everything a kind runner needs: the parsed scenario document and where it lives. */
typedef struct {
  const ncclzRunOptions *opt;
  cJSON *root;            /* the scenario */
  const char *text;       /* its text (the sim parser takes text) */
  size_t len;
  char dir[1024];         /* the scenario's directory: relative paths start here */
  char kind[32];
  char name[256];
  ncclzProfile *prof;     /* NULL when the kind needs none */
  char profile_path[1024];
  cJSON *inputs;          /* data inputs the kind read: [{what, path, quant, note}] (provenance) */
} run_ctx;

/* Records one data input for the provenance section. */
void run_input(run_ctx *c, const char *what, const char *path, const char *quant, const char *note);

/* Resolves a path relative to the scenario's directory into out. */
void run_path(const run_ctx *c, const char *rel, char *out, size_t cap);

/* Field readers that name the field in their error (SCN_ERR) and return -1. Absent keys keep *out
 * and return 0 unless `required`. */
int fld_string(const cJSON *o, const char *path, const char *key, int required, const char **out);
int fld_number(const cJSON *o, const char *path, const char *key, int required, double lo, double hi, double *out);
/* An array of numbers (or one number) in [lo, hi]; integer when asked; *out malloc'd. */
int fld_numbers(const cJSON *o, const char *path, const char *key, int required, double lo, double hi, int integer,
                double **out, int *n);
/* An array of byte counts: numbers or "64K"/"4M"/"1G" strings. */
int fld_bytes(const cJSON *o, const char *path, const char *key, int required, double **out, int *n);
/* Rejects keys that are not in the NULL-terminated list (a typo must not silently do nothing). */
int fld_known(const cJSON *o, const char *path, const char *const *keys);
/* Reads a whole file (NUL-terminated); NULL with NCCLZ_ERR_IO set. */

/* The sections every report shares. */
void section_provenance(ncclzReport *r, const run_ctx *c);
/* The break-even surface of the scenario's "surface" block (a data file and quantizer), if any. */
ncclzStatus section_surface(ncclzReport *r, const run_ctx *c);
/* Byte counts for tables: "64 KiB", "4 MiB", "1 GiB" (ncclzFormatBytes). */
void fmt_bytes(double b, char *buf, size_t cap);

/* The kinds. */
ncclzStatus kind_whatif(ncclzReport *r, run_ctx *c);
ncclzStatus kind_tune(ncclzReport *r, run_ctx *c);
ncclzStatus kind_validate(ncclzReport *r, run_ctx *c);
ncclzStatus kind_measure(ncclzReport *r, run_ctx *c);
ncclzStatus kind_crtable(ncclzReport *r, run_ctx *c);
ncclzStatus kind_codec(ncclzReport *r, run_ctx *c);

/* validate's core, shared with measure: compare the perf JSON files with the simulator. */
ncclzStatus validate_files(ncclzReport *r, run_ctx *c, const char *const *files, int nfiles, const char *looked);

/* ------------------------------------------------------------ series plots */

#define SERIES_MAX_DIMS 8
/* One plotted point: its x and y, and the values of the dimensions that tell series apart. */
typedef struct {
  const char *dim[SERIES_MAX_DIMS];
  double x, y;
} xy_row;

typedef struct {
  const char *name, *caption, *title, *xlabel, *ylabel;
  const char *const *dim_names; /* SERIES_MAX_DIMS at most */
  int ndims;
  int xdim;                     /* the dimension plotted as x: left out of the series labels */
  int logx;                     /* 0 linear, 2 or 10: log scale in that base */
  int xbytes;                   /* x is a byte count: binary-prefix tics */
  const char *extra;            /* more gnuplot commands, or NULL */
} series_spec;

/* Groups rows into series by the dimensions that vary (all but xdim) and plots y against x, one
 * line per series, each with its own colour; more than 10 series are split over several plots
 * (NAME_1, NAME_2, ...), none is left out. */
/* Appends s as a gnuplot single-quoted string. */
void gp_quote(sbuf *b, const char *s);
void plot_series(ncclzReport *r, const series_spec *sp, const xy_row *rows, size_t n);
#endif
