/* Kind "cr-table": the compression ratio of each coder on real data, in the layout of the paper's
 * Table I (quantization only, FIXEDLEN, HUFFMAN; per node count and the average), beside the
 * paper's numbers. Our CR at a node count is the CR over all the bytes a ring AllReduce of
 * N = nodes x ranks_per_node ranks sends: reduce-scatter step k sends the sum of k ranks' codes
 * (k = 1..N-1) and all-gather sends the full sum N-1 times, so
 *   CR(N) = 2(N-1) / (sum_{k<N} 1/CR_k + (N-1)/CR_N),
 * with CR_k from a data profile of the rank files (sums beyond the files given reuse the last). */
#include "report_internal.h"
#include "ncclz/calibrate.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CT_MAX_NODES 8

typedef struct {
  char label[96], quant[160];
  int nfiles;
  double quant_cr;
  double cr[NCCLZ_CODER_COUNT][NCCLZ_DP_MAX_RANKS]; /* per k summed ranks */
  int nk;
  const cJSON *paper;
  const char *gap_note;
} ct_row;

static double allreduce_cr(const ct_row *d, int coder, int n) {
  if (n < 2) return d->cr[coder][0];
  double inv = 0;
  for (int k = 1; k <= n; k++) {
    double cr = d->cr[coder][(k < d->nk ? k : d->nk) - 1];
    inv += (k < n ? 1.0 : (double)(n - 1)) / cr;
  }
  return 2.0 * (n - 1) / inv;
}

/* Finds a file by name: DIR/NAME, DIR/scientific/NAME, DIR/gradients/NAME. */
static int locate(const char *dir, const char *name, char *out, size_t cap) {
  static const char *const sub[] = {"", "scientific/", "gradients/"};
  for (int i = 0; i < 3; i++) {
    snprintf(out, cap, "%s/%s%s", dir, sub[i], name);
    FILE *f = fopen(out, "rb");
    if (f) return fclose(f), 0;
  }
  return -1;
}

/* Quantization-only CR of rank 0: the symbols packed at one global width (plus QSGD scales). */
static double quant_only(const ncclzQuantSpec *spec, const void *raw, size_t n, const uint32_t *dims, int nd) {
  ncclzSymbols s;
  if (ncclzArrayQuantize(spec, NCCLZ_DTYPE_F32, raw, n, nd ? dims : NULL, nd, 0, &s) != NCCLZ_OK) return NAN;
  ncclzSymbolStats st;
  double cr = NAN;
  if (ncclzSymbolStatsCompute(s.sym, s.n, &st) == NCCLZ_OK)
    cr = 32.0 * (double)n / (st.global_width_bits + 32.0 * (double)s.n_scales);
  ncclzSymbolsFree(&s);
  return cr;
}

static int load_files(run_ctx *c, const cJSON *ds, const char *where, void **bufs, size_t *n, uint32_t *dims, int *nd,
                      int *nf) {
  const cJSON *src = ds, *sl = cJSON_GetObjectItemCaseSensitive(ds, "slices");
  const char *dir = c->opt->data_dir;
  char dflt[1200];
  if (!dir) {
    const char *dd = "../tests/data";
    fld_string(c->root, "", "data_dir", 0, &dd);
    run_path(c, dd, dflt, sizeof dflt);
    dir = dflt;
    if (sl) src = sl;
  }
  const cJSON *files = cJSON_GetObjectItemCaseSensitive(src, "files"), *f;
  double *dv = NULL;
  if (fld_numbers(src, where, "dims", 0, 1, 1 << 30, 1, &dv, nd)) return -1;
  for (int i = 0; i < *nd && i < 3; i++) dims[i] = (uint32_t)dv[i];
  free(dv);
  *nf = 0;
  cJSON_ArrayForEach(f, files) {
    char path[1300];
    size_t len;
    if (!cJSON_IsString(f) || *nf == NCCLZ_DP_MAX_RANKS) return SCN_ERR("%s.files: expected up to %d file names", where, NCCLZ_DP_MAX_RANKS), -1;
    if (locate(dir, f->valuestring, path, sizeof path)) return SCN_ERR("%s.files: '%s' not found under '%s'", where, f->valuestring, dir), -1;
    bufs[*nf] = ncclzReadFile(NULL, path, &len);
    if (!bufs[*nf] || (*nf && len / 4 != *n)) return SCN_ERR("%s.files: '%s' unreadable or not the size of the first", where, path), -1;
    *n = len / 4;
    run_input(c, where, path, "", sl && !c->opt->data_dir ? "test slice (ncclz run --data DIR reads the full files)" : "full file");
    (*nf)++;
  }
  return 0;
}

static int measure_row(run_ctx *c, const cJSON *ds, int i, double frame, ct_row *row) {
  static const char *const keys[] = {"label", "quant", "files", "dims", "slices", "paper", "gap_note", NULL};
  char where[32];
  snprintf(where, sizeof where, "datasets[%d]", i);
  const char *label = NULL, *quant = NULL;
  if (!cJSON_IsObject(ds) || fld_known(ds, where, keys) || fld_string(ds, where, "label", 1, &label) ||
      fld_string(ds, where, "quant", 0, &quant) || fld_string(ds, where, "gap_note", 0, &row->gap_note))
    return cJSON_IsObject(ds) ? -1 : (SCN_ERR("%s: expected an object", where), -1);
  snprintf(row->label, sizeof row->label, "%s", label);
  row->paper = cJSON_GetObjectItemCaseSensitive(ds, "paper");
  if (!cJSON_GetObjectItemCaseSensitive(ds, "files")) return 0; /* the paper's numbers only */
  ncclzQuantSpec spec;
  if (!quant) return SCN_ERR("%s.quant: required with files", where), -1;
  if (ncclzQuantSpecParse(quant, &spec) != NCCLZ_OK) return SCN_ERR("%s.quant: %s", where, ncclzLastError()), -1;
  ncclzQuantSpecFormat(&spec, row->quant, sizeof row->quant);
  void *bufs[NCCLZ_DP_MAX_RANKS] = {0};
  size_t n = 0;
  uint32_t dims[3] = {0, 0, 0};
  int nd = 0, rc = load_files(c, ds, where, bufs, &n, dims, &nd, &row->nfiles);
  ncclzDataProfile *dp = rc ? NULL : malloc(sizeof *dp);
  uint64_t fb = (uint64_t)frame;
  if (!rc && (!dp || ncclzDataProfileBuild(&spec, NCCLZ_DTYPE_F32, (const void *const *)bufs, (uint32_t)row->nfiles, n,
                                           dims, nd, &fb, 1, dp) != NCCLZ_OK))
    rc = (SCN_ERR("%s: %s", where, dp ? ncclzLastError() : "out of memory"), -1);
  for (uint32_t k = 0; !rc && k < dp->n_rows; k++)
    for (int cd = 0; cd < NCCLZ_CODER_COUNT; cd++) row->cr[cd][k] = dp->row[k].at[0].cr[cd];
  if (!rc) row->nk = (int)dp->n_rows, row->quant_cr = quant_only(&spec, bufs[0], n, dims, nd);
  free(dp);
  for (int k = 0; k < NCCLZ_DP_MAX_RANKS; k++) free(bufs[k]);
  return rc;
}

/* The paper's value of a column group ("quant", "fixedlen", "huffman") at index j (nodes..., avg). */
static double paper_value(const ct_row *row, const char *key, int j) {
  const cJSON *a = cJSON_GetObjectItemCaseSensitive(row->paper, key);
  const cJSON *v = NULL;
  cJSON_ArrayForEach(v, a) if (j-- == 0) break; /* j is at most CT_MAX_NODES: the walk is short */
  return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

static void fmt_cell(double ours, double paper, char *buf, size_t cap) {
  if (isnan(ours) && isnan(paper)) snprintf(buf, cap, "-");
  else if (isnan(ours)) snprintf(buf, cap, "- (paper %.2f)", paper);
  else if (isnan(paper)) snprintf(buf, cap, "%.2f", ours);
  else snprintf(buf, cap, "%.2f (paper %.2f, %+.0f%%)", ours, paper, 100.0 * (ours / paper - 1));
}

static ncclzStatus layout_table(ncclzReport *r, const ct_row *rows, int nr, const double *nodes, int nn, int rpn,
                                sbuf *plot) {
  static const char *const group[3] = {"quant", "fixedlen", "huffman"};
  static const char *const gname[3] = {"Quant-only", "FixedLen", "Huffman"};
  sbuf head;
  sb_init(&head);
  sb_puts(&head, "dataset\tquantizer");
  for (int g = 0; g < 3; g++) {
    for (int j = 0; j < nn; j++) sb_printf(&head, "\t%s %g-node", gname[g], nodes[j]);
    sb_printf(&head, "\t%s avg", gname[g]);
  }
  ncclzTable *t = ncclzTableNew("table1", sb_str(&head));
  sb_free(&head);
  cJSON *arr = cJSON_AddArrayToObject(ncclzReportJson(r), "table1");
  for (int i = 0; i < nr; i++) {
    sbuf line;
    sb_init(&line);
    sb_printf(&line, "%s\t%s", rows[i].label, rows[i].nfiles ? rows[i].quant : "(no data here)");
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "dataset", rows[i].label);
    for (int g = 0; g < 3; g++) {
      double sum = 0;
      cJSON *ours = cJSON_AddArrayToObject(o, group[g]);
      for (int j = 0; j <= nn; j++) {
        double v = NAN;
        if (rows[i].nfiles && j < nn) v = g ? allreduce_cr(&rows[i], g, (int)nodes[j] * rpn) : rows[i].quant_cr;
        if (j < nn) sum += v;
        if (j == nn) v = rows[i].nfiles ? sum / nn : NAN;
        char cell[96];
        fmt_cell(v, paper_value(&rows[i], group[g], j), cell, sizeof cell);
        sb_printf(&line, "\t%s", cell);
        cJSON_AddItemToArray(ours, cJSON_CreateNumber(isnan(v) ? -1 : v));
        if (j == nn && g) sb_printf(plot, "%s\"%s %s\" %g %g\n", "", rows[i].label, gname[g], isnan(v) ? 0 : v,
                                    isnan(paper_value(&rows[i], group[g], j)) ? 0 : paper_value(&rows[i], group[g], j));
      }
    }
    ncclzTableAdd(t, "%s", sb_str(&line));
    cJSON_AddItemToArray(arr, o);
    sb_free(&line);
  }
  return ncclzReportTable(r, t, "Compression ratio (raw bytes / bytes sent), the paper's Table I layout: ours (paper, difference)");
}

static ncclzStatus per_k_table(ncclzReport *r, const ct_row *rows, int nr, const char *why_head) {
  ncclzTable *t = ncclzTableNew("cr_per_ranks_summed", "dataset\tranks summed k\tRAW\tFIXEDLEN\tHUFFMAN");
  for (int i = 0; i < nr; i++)
    for (int k = 0; k < rows[i].nk; k++)
      ncclzTableAdd(t, "%s\t%d\t%.3f\t%.3f\t%.3f", rows[i].label, k + 1, rows[i].cr[0][k], rows[i].cr[1][k], rows[i].cr[2][k]);
  ncclzStatus st = ncclzReportTable(r, t, "CR of frames holding the sum of k ranks' codes (the data profile)");
  ncclzTable *g = ncclzTableNew("table1_gaps", "dataset\twhy the numbers differ from the paper's");
  for (int i = 0; i < nr; i++)
    ncclzTableAdd(g, "%s\t%s", rows[i].label, rows[i].gap_note ? rows[i].gap_note : why_head);
  if (st == NCCLZ_OK) st = ncclzReportTable(r, g, "Gaps above 20%: explanations");
  else ncclzTableFree(g);
  return st;
}

ncclzStatus kind_crtable(ncclzReport *r, run_ctx *c) {
  static const char *const keys[] = {"kind", "name", "description", "datasets", "nodes", "ranks_per_node", "frame_bytes",
                                     "data_dir", NULL};
  double *nodes = NULL, rpn = 4, *fb = NULL;
  int nn = 0, nfb = 0;
  const cJSON *ds = cJSON_GetObjectItemCaseSensitive(c->root, "datasets");
  int nr = cJSON_IsArray(ds) ? (int)ncclzJsonCount(ds, 16) : 0;
  if (fld_known(c->root, "", keys) || fld_numbers(c->root, "", "nodes", 1, 1, 1 << 16, 1, &nodes, &nn) ||
      fld_number(c->root, "", "ranks_per_node", 0, 1, 1024, &rpn) || fld_bytes(c->root, "", "frame_bytes", 0, &fb, &nfb))
    return free(nodes), free(fb), NCCLZ_ERR_ARG;
  double frame = nfb ? fb[0] : 4194304.0;
  free(fb);
  if (frame > 4294967295.0) return free(nodes), SCN_ERR("frame_bytes: at most 4294967295 (4 GiB - 1), as a profile's");
  if (nr < 1 || nr > 16) return free(nodes), SCN_ERR("datasets: required, an array of 1 to 16 objects");
  if (nn > CT_MAX_NODES) return free(nodes), SCN_ERR("nodes: at most %d values", CT_MAX_NODES);
  ct_row *rows = calloc((size_t)nr, sizeof *rows);
  ncclzStatus st = rows ? NCCLZ_OK : ncclzSetError(NCCLZ_ERR_NOMEM, "out of memory");
  const cJSON *row = ds ? ds->child : NULL;
  for (int i = 0; i < nr && st == NCCLZ_OK; i++, row = row->next) {
    ncclzProgress("cr-table: datasets", (size_t)i, (size_t)nr);
    if (measure_row(c, row, i, frame, &rows[i])) st = NCCLZ_ERR_ARG;
  }
  ncclzProgress("cr-table: datasets", (size_t)nr, (size_t)nr);
  sbuf plot;
  sb_init(&plot);
  if (st == NCCLZ_OK) {
    ncclzReportHeading(r, "Compression ratio per coder (Table I layout)");
    ncclzReportText(r, "Frames of %g bytes; CR at a node count = CR over all bytes of a ring AllReduce of nodes x %g "
                       "ranks (reduce-scatter sends sums of 1..N-1 ranks' codes, all-gather the full sum); sums beyond "
                       "the rank files given reuse the last one. Quant-only = rank 0's codes packed at one width.",
                    frame, rpn);
    st = layout_table(r, rows, nr, nodes, nn, (int)rpn, &plot);
  }
  if (st == NCCLZ_OK)
    ncclzReportPlot(r, "table1_cr", "Average CR per dataset and coder: ncclz (our data) and the paper",
                    "set style data histograms\nset style histogram clustered gap 1\nset style fill solid 0.8 border -1\n"
                    "set ylabel 'compression ratio (x)'\nset xtics rotate by -25 scale 0\nset yrange [0:*]\n"
                    "set title 'Compression ratio: ncclz on our data vs the paper (Table I, avg over node counts)'\n"
                    "plot DATA using 2:xtic(1) title 'ncclz (our data)', '' using 3 title 'paper'",
                    sb_str(&plot));
  if (st == NCCLZ_OK) st = per_k_table(r, rows, nr, "no explanation given in the scenario (gap_note)");
  sb_free(&plot);
  free(rows);
  free(nodes);
  return st;
}
