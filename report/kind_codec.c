/* Kind "codec": the CR of every coder on every file of a data set, from the `ncclz codec --json`
 * objects that scripts/codec_report.sh collects (one a line), beside the order-0 entropy bound and
 * the optimal (unlimited) Huffman code of the same symbols, with the error against the bound and
 * the round trip. The answer first: which coder wins where, and how close HUFFMAN comes to optimal. */
#include "report_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CD_MAX_ROWS 256

typedef struct {
  char file[160], quant[160];
  double cr[NCCLZ_CODER_COUNT]; /* NAN: that coder was not run */
  double quant_cr, entropy, opt, ideal, err_ratio;
  int ok;
} cd_row;

static double num(const cJSON *o, const char *key) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
  return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

static const char *str(const cJSON *o, const char *key) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
  return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* The row of (file, quant), added when new; NULL when the table is full. */
static cd_row *row_of(cd_row *rows, int *n, const char *input, const char *quant) {
  const char *base = strrchr(input, '/') ? strrchr(input, '/') + 1 : input;
  for (int i = 0; i < *n; i++)
    if (!strcmp(rows[i].file, base) && !strcmp(rows[i].quant, quant)) return &rows[i];
  if (*n == CD_MAX_ROWS) return NULL;
  cd_row *r = &rows[(*n)++];
  memset(r, 0, sizeof *r);
  snprintf(r->file, sizeof r->file, "%s", base);
  snprintf(r->quant, sizeof r->quant, "%s", quant);
  for (int c = 0; c < NCCLZ_CODER_COUNT; c++) r->cr[c] = NAN;
  r->ok = 1;
  return r;
}

/* One `ncclz codec --json` object into its row. */
static int add_result(const cJSON *o, int line, cd_row *rows, int *n) {
  const char *input = str(o, "input"), *quant = str(o, "quant"), *coder = str(o, "coder");
  int c = coder ? ncclzCoderFromName(coder) : -1;
  if (!input || !quant || c < 0 || isnan(num(o, "cr")))
    return SCN_ERR("results: line %d: expected an `ncclz codec --json` object (input, quant, coder, cr)", line), -1;
  cd_row *r = row_of(rows, n, input, quant);
  if (!r) return SCN_ERR("results: more than %d (file, quantizer) pairs", CD_MAX_ROWS), -1;
  r->cr[c] = num(o, "cr");
  r->quant_cr = num(o, "cr_quant");
  r->entropy = num(o, "entropy_cr");
  r->opt = num(o, "huffman_opt_cr");
  r->ideal = num(o, "fixedlen_ideal_cr");
  double bound = num(o, "error_bound"), err = num(o, "max_abs_err") / (bound > 0 ? bound : 1.0);
  if (!(err <= r->err_ratio)) r->err_ratio = err;
  const cJSON *lo = cJSON_GetObjectItemCaseSensitive(o, "lossless_ok"), *bo = cJSON_GetObjectItemCaseSensitive(o, "bound_ok");
  r->ok &= cJSON_IsTrue(lo) && cJSON_IsTrue(bo);
  return 0;
}

static int read_results(run_ctx *c, cd_row *rows, int *n) {
  const char *rel = NULL;
  char path[1200];
  if (fld_string(c->root, "", "results", 1, &rel)) return -1;
  run_path(c, rel, path, sizeof path);
  size_t len;
  char *text = ncclzReadFile(NULL, path, &len);
  if (!text) return SCN_ERR("results: cannot read '%s'", path), -1;
  run_input(c, "codec results (ncclz codec --json, one a line)", path, "", "");
  int line = 0, rc = 0;
  for (char *save = NULL, *l = strtok_r(text, "\n", &save); l && !rc; l = strtok_r(NULL, "\n", &save)) {
    line++;
    cJSON *o = cJSON_Parse(l);
    rc = o ? add_result(o, line, rows, n) : (SCN_ERR("results: line %d is not JSON", line), -1);
    cJSON_Delete(o);
  }
  free(text);
  if (!rc && !*n) rc = (SCN_ERR("results: '%s' holds no codec result", path), -1);
  return rc;
}

static int best_coder(const cd_row *r) {
  int b = 0;
  for (int c = 1; c < NCCLZ_CODER_COUNT; c++)
    if (!isnan(r->cr[c]) && (isnan(r->cr[b]) || r->cr[c] > r->cr[b])) b = c;
  return b;
}

/* The answer: wins per coder, HUFFMAN against the optimal code, round trips. */
static void summary(ncclzReport *r, const cd_row *rows, int n) {
  int wins[NCCLZ_CODER_COUNT] = {0}, failed = 0, nh = 0;
  double hsum = 0, hmin = 1e300;
  for (int i = 0; i < n; i++) {
    wins[best_coder(&rows[i])]++;
    failed += !rows[i].ok;
    if (!isnan(rows[i].cr[NCCLZ_CODER_HUFFMAN]) && rows[i].opt > 0) {
      double q = rows[i].cr[NCCLZ_CODER_HUFFMAN] / rows[i].opt;
      hsum += q, nh++;
      hmin = q < hmin ? q : hmin;
    }
  }
  ncclzReportText(r, "%d (file, quantizer) pairs. Highest CR: HUFFMAN on %d, FIXEDLEN on %d, RAW on %d. HUFFMAN reaches "
                     "%.1f%% of the optimal Huffman code's CR on average (at least %.1f%%). Round trips: %s.",
                  n, wins[NCCLZ_CODER_HUFFMAN], wins[NCCLZ_CODER_FIXEDLEN], wins[NCCLZ_CODER_RAW],
                  nh ? 100.0 * hsum / nh : 0.0, nh ? 100.0 * hmin : 0.0,
                  failed ? "SOME FAILED (see the last column)" : "every one bit-exact and within its error bound");
}

static ncclzStatus cr_table(ncclzReport *r, const cd_row *rows, int n) {
  ncclzTable *t = ncclzTableNew("codec_cr", "file\tquantizer\tquant only\tRAW\tFIXEDLEN\tHUFFMAN\tentropy bound\t"
                                            "optimal Huffman\tHUFFMAN / optimal\tFIXEDLEN / ideal widths\tmax err / bound\tround trip");
  cJSON *arr = cJSON_AddArrayToObject(ncclzReportJson(r), "codec");
  for (int i = 0; i < n; i++) {
    const cd_row *x = &rows[i];
    ncclzTableAdd(t, "%s\t%s\t%.2f\t%.2f\t%.2f\t%.2f\t%.2f\t%.2f\t%.1f%%\t%.1f%%\t%.3f\t%s", x->file, x->quant, x->quant_cr,
                  x->cr[0], x->cr[1], x->cr[2], x->entropy, x->opt, 100.0 * x->cr[2] / x->opt, 100.0 * x->cr[1] / x->ideal,
                  x->err_ratio, x->ok ? "ok" : "FAIL");
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "file", x->file);
    cJSON_AddStringToObject(o, "quant", x->quant);
    for (int c = 0; c < NCCLZ_CODER_COUNT; c++) cJSON_AddNumberToObject(o, ncclzCoderName((ncclzCoder)c), isnan(x->cr[c]) ? -1 : x->cr[c]);
    cJSON_AddNumberToObject(o, "quant_only", x->quant_cr);
    cJSON_AddNumberToObject(o, "entropy_bound", x->entropy);
    cJSON_AddNumberToObject(o, "huffman_opt", x->opt);
    cJSON_AddNumberToObject(o, "max_err_over_bound", x->err_ratio);
    cJSON_AddBoolToObject(o, "round_trip_ok", x->ok);
    cJSON_AddItemToArray(arr, o);
  }
  return ncclzReportTable(r, t, "Compression ratio (input bytes / stream bytes, headers and tables included) per coder");
}

/* Horizontal bars, one group per (file, quantizer): the long labels stay on the left, whole. */
static void cr_plot(ncclzReport *r, const cd_row *rows, int n) {
  sbuf d, s;
  sb_init(&d);
  sb_init(&s);
  for (int i = 0; i < n; i++)
    sb_printf(&d, "%d %g %g %g\n", n - 1 - i, isnan(rows[i].cr[1]) ? 0 : rows[i].cr[1], isnan(rows[i].cr[2]) ? 0 : rows[i].cr[2],
              rows[i].opt);
  sb_printf(&s, "set terminal svg size 1000,%d dynamic font 'sans,11' noenhanced background '#ffffff'\n", 120 + 26 * n);
  sb_puts(&s, "set ytics scale 0 font ',10' (");
  for (int i = 0; i < n; i++) {
    char lab[340];
    snprintf(lab, sizeof lab, "%s  %s", rows[i].file, rows[i].quant);
    sb_printf(&s, "%s", i ? ", " : "");
    gp_quote(&s, lab);
    sb_printf(&s, " %d", n - 1 - i);
  }
  sb_printf(&s, ")\nset yrange [-0.6:%g]\nset xrange [0:*]\nset grid xtics noytics\n"
                "set xlabel 'compression ratio (x)'\nset key inside top right vertical box opaque\n"
                "set title 'Compression ratio per coder'\nset style fill solid 0.85 noborder\n"
                "plot DATA using ($2/2):($1+0.25):($2/2):(0.12) with boxxyerror lc rgb '#1f77b4' title 'FIXEDLEN', "
                "'' using ($3/2):1:($3/2):(0.12) with boxxyerror lc rgb '#ff7f0e' title 'HUFFMAN', "
                "'' using ($4/2):($1-0.25):($4/2):(0.12) with boxxyerror lc rgb '#2ca02c' title 'optimal Huffman (no tables)'\n",
            n - 0.4);
  ncclzReportPlot(r, "codec_cr", "Compression ratio per coder, beside the optimal Huffman code of the same symbols",
                  sb_str(&s), sb_str(&d));
  sb_free(&d);
  sb_free(&s);
}

ncclzStatus kind_codec(ncclzReport *r, run_ctx *c) {
  static const char *const keys[] = {"kind", "name", "description", "results", NULL};
  cd_row *rows = calloc(CD_MAX_ROWS, sizeof *rows);
  int n = 0;
  if (!rows) return ncclzSetError(NCCLZ_ERR_NOMEM, "out of memory");
  if (fld_known(c->root, "", keys) || read_results(c, rows, &n)) {
    free(rows);
    return NCCLZ_ERR_ARG;
  }
  ncclzReportHeading(r, "Compression ratio per coder");
  summary(r, rows, n);
  ncclzStatus st = cr_table(r, rows, n);
  if (st == NCCLZ_OK) cr_plot(r, rows, n);
  free(rows);
  return st;
}
