/* report/ internals shared by the document writer, the plots and the scenario kinds. */
#ifndef NCCLZ_REPORT_INTERNAL_H
#define NCCLZ_REPORT_INTERNAL_H
#include "ncclz/report.h"
#include "ncclz/model.h"
#include "sbuf.h"

#include <cjson/cJSON.h>

struct ncclzReport {
  char dir[1100];       /* the staging directory every file is written into (outdir.c) */
  char out[1024];       /* the output directory the files are renamed into at close */
  int dirfd, stagefd, lockfd; /* open on out, dir and out/.ncclz-lock (-1: not open) */
  int created, locked;  /* out did not exist before this report; the lock is held */
  char title[320];       /* "ncclz KIND: " and a name of up to 255 bytes, never cut */
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

/* The output directory (outdir.c, docs/reports.md): report_dir_open refuses an empty name or a
 * symbolic link (NCCLZ_ERR_ARG), takes the directory's lock (another run holding it: ERR_ARG)
 * and makes the staging directory r->dir; report_dir_publish renames the report's files into
 * place and removes the previous report's files this one did not write; report_dir_close removes
 * the staging directory (and, after a failure, the directory this report created). */
ncclzStatus report_dir_open(ncclzReport *r, const char *dir);
ncclzStatus report_dir_publish(ncclzReport *r);
void report_dir_close(ncclzReport *r, int failed);
/* A new file `name` in the staging directory (a plain name: letters, digits, '.', '_', '-', not
 * starting with '.'); -1 with the error set. */
int report_file_open(const ncclzReport *r, const char *name);
int report_file_name_ok(const char *name);
/* A path in the staging directory as it will be once published (other paths unchanged). */
void report_shown_path(const ncclzReport *r, const char *path, char *buf, size_t cap);
/* Internal form of ncclzReportOpen that returns the status. */
ncclzStatus report_open(const char *dir, const char *title, ncclzReport **out);

/* A child program (spawn.c): run with posix_spawnp from an argv array, never a shell. */
typedef struct {
  const char *const *argv;         /* NULL-terminated; argv[0] looked up in PATH when it has no '/' */
  const char *const *env_add;      /* "KEY=VALUE" set over this process's environment (NULL: none) */
  const char *out_path, *err_path; /* its stdout / stderr go to these files (NULL: ours) */
} report_child;
/* Runs the child and waits: 0 with *exit_code (128 + signal when killed), or -1 with errno when it
 * could not start (no such program, a redirection failed). */
int report_spawn(const report_child *ch, int *exit_code);

/* Records one data input for the provenance section. */
void run_input(run_ctx *c, const char *what, const char *path, const char *quant, const char *note);

/* Resolves a path relative to the scenario's directory into out. */
void run_path(const run_ctx *c, const char *rel, char *out, size_t cap);

/* Field readers that name the field in their error (SCN_ERR) and return -1. Absent keys keep *out
 * and return 0 unless `required`. */
int fld_string(const cJSON *o, const char *path, const char *key, int required, const char **out);
int fld_number(const cJSON *o, const char *path, const char *key, int required, double lo, double hi, double *out);
/* The same, for a whole number. */
int fld_int(const cJSON *o, const char *path, const char *key, int required, double lo, double hi, double *out);
/* 1 when s is valid UTF-8 (no overlong form, surrogate or code point past U+10FFFF): strings that
 * reach results.json must be (fld_string refuses the others, naming the field). */
int utf8_valid(const char *s);
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
/* The scenario's validate paths, checked (and a build with the simulator) before measure runs. */
ncclzStatus validate_check(run_ctx *c);

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
