/* The what-if report's answer, first on the page: the speedup over plain NCCL by nodes (rows) and
 * NIC bandwidth (columns), one heatmap panel per collective and size (and workload, GPUs per node
 * or compression mode where those vary), at most six panels to a plot and every panel drawn. */
#ifdef NCCLZ_HAVE_SIM
#include "whatif_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PANELS_PER_PLOT 6

typedef struct {
  char key[300], title[300];
  double best;          /* its largest speedup and where */
  int best_nodes;
  double best_nic;
  int cells, faster;    /* platforms, and those faster than NCCL by more than 5% */
} panel;

typedef struct {
  panel *pn;
  int npanels;
  int *nodes;           /* distinct node counts, ascending */
  int nnodes;
  double *nic;          /* distinct NIC bandwidths (GB/s), ascending */
  int nnic;
  double vmax;
} grid;

/* Dimensions that split panels: everything but nodes and NIC. */
static void panel_key(const wi_point *p, const int *vary, char *key, size_t kcap, char *title, size_t tcap) {
  char b[32];
  fmt_bytes((double)p->p.options.bytes, b, sizeof b);
  const char *coll = ncclzCollectiveName(p->p.options.coll), *comp = ncclzSimCompressName(p->p.options.compress);
  snprintf(key, kcap, "%s|%s|%d|%s|%s", p->workload, coll, p->p.platform.gpus_per_node, b, comp);
  size_t u = 0;
  title[0] = 0;
  if (vary[0]) u += (size_t)snprintf(title + u, tcap - u, "%s, ", p->workload);
  if (u < tcap) u += (size_t)snprintf(title + u, tcap - u, "%s, %s", coll, b);
  if (vary[2] && u < tcap) u += (size_t)snprintf(title + u, tcap - u, ", %d GPUs/node", p->p.platform.gpus_per_node);
  if (vary[4] && u < tcap) snprintf(title + u, tcap - u, ", %s", comp);
}

static int cmp_int(const void *a, const void *b) { return (*(const int *)a > *(const int *)b) - (*(const int *)a < *(const int *)b); }
static int cmp_dbl(const void *a, const void *b) {
  return (*(const double *)a > *(const double *)b) - (*(const double *)a < *(const double *)b);
}

static int index_int(const int *v, int n, int x) {
  for (int i = 0; i < n; i++)
    if (v[i] == x) return i;
  return -1;
}

static int index_dbl(const double *v, int n, double x) {
  for (int i = 0; i < n; i++)
    if (v[i] == x) return i;
  return -1;
}

static int compressed(const wi_point *p) { return p->p.options.compress != NCCLZ_SIM_OFF; }

/* Which of workload, collective, GPUs per node, size, mode vary over the compressed points. */
static void varying(const wi_results *w, int *vary) {
  const wi_point *first = NULL;
  memset(vary, 0, 5 * sizeof *vary);
  for (size_t i = 0; i < w->n; i++) {
    const wi_point *p = &w->pt[i];
    if (!compressed(p)) continue;
    if (!first) first = p;
    vary[0] |= strcmp(p->workload, first->workload) != 0;
    vary[1] |= p->p.options.coll != first->p.options.coll;
    vary[2] |= p->p.platform.gpus_per_node != first->p.platform.gpus_per_node;
    vary[3] |= p->p.options.bytes != first->p.options.bytes;
    vary[4] |= p->p.options.compress != first->p.options.compress;
  }
}

/* The axes and panels; 0, or -1 when there is nothing compressed or no memory. */
static int build_grid(const wi_results *w, grid *g) {
  memset(g, 0, sizeof *g);
  size_t cap = w->n ? w->n : 1;
  g->pn = calloc(cap, sizeof *g->pn);
  g->nodes = malloc(cap * sizeof *g->nodes);
  g->nic = malloc(cap * sizeof *g->nic);
  if (!g->pn || !g->nodes || !g->nic) return -1;
  int vary[5];
  varying(w, vary);
  g->vmax = 1.5;
  for (size_t i = 0; i < w->n; i++) {
    const wi_point *p = &w->pt[i];
    if (!compressed(p)) continue;
    if (index_int(g->nodes, g->nnodes, p->p.platform.nodes) < 0) g->nodes[g->nnodes++] = p->p.platform.nodes;
    if (index_dbl(g->nic, g->nnic, p->p.platform.nic_gbps) < 0) g->nic[g->nnic++] = p->p.platform.nic_gbps;
    char key[300], title[300];
    panel_key(p, vary, key, sizeof key, title, sizeof title);
    int k = 0;
    while (k < g->npanels && strcmp(g->pn[k].key, key)) k++;
    panel *pn = &g->pn[k];
    if (k == g->npanels) {
      g->npanels++;
      snprintf(pn->key, sizeof pn->key, "%s", key);
      snprintf(pn->title, sizeof pn->title, "%s", title);
      pn->best = -1;
    }
    pn->cells++;
    pn->faster += p->speedup > 1.05;
    if (p->speedup > pn->best) pn->best = p->speedup, pn->best_nodes = p->p.platform.nodes, pn->best_nic = p->p.platform.nic_gbps;
    if (p->speedup > g->vmax) g->vmax = p->speedup;
  }
  qsort(g->nodes, (size_t)g->nnodes, sizeof *g->nodes, cmp_int);
  qsort(g->nic, (size_t)g->nnic, sizeof *g->nic, cmp_dbl);
  return g->npanels ? 0 : -1;
}

static void free_grid(grid *g) {
  free(g->pn);
  free(g->nodes);
  free(g->nic);
}

/* One data block per panel: "NIC index, nodes index, speedup". */
static void panel_data(const wi_results *w, const grid *g, int k, const int *vary, sbuf *d) {
  for (size_t i = 0; i < w->n; i++) {
    const wi_point *p = &w->pt[i];
    if (!compressed(p)) continue;
    char key[300], title[300];
    panel_key(p, vary, key, sizeof key, title, sizeof title);
    if (strcmp(key, g->pn[k].key)) continue;
    sb_printf(d, "%d %d %.6g\n", index_dbl(g->nic, g->nnic, p->p.platform.nic_gbps),
              index_int(g->nodes, g->nnodes, p->p.platform.nodes), p->speedup);
  }
}

static void axes_script(const grid *g, sbuf *s) {
  sb_puts(s, "unset grid\nunset key\nunset colorbox\nset xtics (");
  for (int i = 0; i < g->nnic; i++) sb_printf(s, "%s'%g' %d", i ? ", " : "", 8.0 * g->nic[i], i);
  sb_puts(s, ")\nset ytics (");
  for (int i = 0; i < g->nnodes; i++) sb_printf(s, "%s'%d' %d", i ? ", " : "", g->nodes[i], i);
  sb_printf(s, ")\nset xrange [-0.5:%g]\nset yrange [-0.5:%g]\nset xlabel 'NIC per direction (Gb/s)'\n"
               "set ylabel 'nodes'\nset cbrange [0:%g]\n"
               "set palette defined (0 '#c0392b', 1 '#f7f7f7', %g '#1a9850')\n",
            g->nnic - 0.5, g->nnodes - 0.5, g->vmax, g->vmax);
}

/* Panels [k0, k1) as one multiplot. */
static void heatmap(ncclzReport *r, const wi_results *w, const grid *g, int k0, int k1, int part, int parts) {
  int vary[5];
  varying(w, vary);
  int n = k1 - k0, cols = n <= 2 ? n : n <= 4 ? 2 : 3, rows = (n + cols - 1) / cols;
  sbuf s, d;
  sb_init(&s);
  sb_init(&d);
  sb_printf(&s, "set terminal svg size 1200,%d dynamic font 'sans,11' noenhanced background '#ffffff'\n", 40 + 250 * rows);
  axes_script(g, &s);
  sb_printf(&s, "set multiplot layout %d,%d\n", rows, cols);
  for (int k = k0; k < k1; k++) {
    if (k > k0) sb_puts(&d, "\n\n");
    panel_data(w, g, k, vary, &d);
    sb_puts(&s, "set title ");
    gp_quote(&s, g->pn[k].title);
    sb_printf(&s, "\nplot DATA index %d using 1:2:(0.5):(0.5):3 with boxxyerror fc palette fs solid border lc rgb '#ffffff', "
                  "'' index %d using 1:2:(sprintf('%%.2fx', $3)) with labels font ',11'\n", k - k0, k - k0);
  }
  sb_puts(&s, "unset multiplot\n");
  char name[64], caption[400];
  snprintf(name, sizeof name, parts > 1 ? "answer_heatmap_%d" : "answer_heatmap", part);
  snprintf(caption, sizeof caption,
           "Speedup of ncclz over plain NCCL by nodes (rows) and NIC bandwidth per direction (columns); green: "
           "faster, white: the same (REA kept plain NCCL), red: slower");
  if (parts > 1) {
    size_t u = strlen(caption);
    snprintf(caption + u, sizeof caption - u, " (part %d of %d)", part, parts);
  }
  ncclzReportPlot(r, name, caption, sb_str(&s), sb_str(&d));
  sb_free(&s);
  sb_free(&d);
}

/* One line above the heatmaps: the best point and how often ncclz is faster. */
static void headline(ncclzReport *r, const grid *g) {
  int best = 0, faster = 0, cells = 0;
  for (int k = 0; k < g->npanels; k++) {
    faster += g->pn[k].faster, cells += g->pn[k].cells;
    if (g->pn[k].best > g->pn[best].best) best = k;
  }
  const panel *b = &g->pn[best];
  ncclzReportText(r, "ncclz is faster than plain NCCL (by more than 5%%) on %d of %d simulated platforms; the largest "
                     "speedup is %.2fx (%s, %d node%s, %g Gb/s NICs). Per panel, below the heatmaps.",
                  faster, cells, b->best, b->title, b->best_nodes, b->best_nodes == 1 ? "" : "s", 8.0 * b->best_nic);
}

/* Per panel: its best speedup, where, and on how many platforms ncclz is faster. */
static void panel_table(ncclzReport *r, const grid *g) {
  ncclzTable *t = ncclzTableNew("whatif_answer_panels", "panel	largest speedup	at nodes	at NIC	faster on (> 5%)");
  for (int k = 0; k < g->npanels; k++) {
    const panel *p = &g->pn[k];
    char nic[64];
    ncclzFormatBandwidth(p->best_nic, nic, sizeof nic);
    ncclzTableAdd(t, "%s\t%.2fx\t%d\t%s\t%d of %d", p->title, p->best, p->best_nodes, nic, p->faster, p->cells);
  }
  ncclzReportTable(r, t, "Each panel's largest speedup over plain NCCL, and how many of its platforms ncclz speeds up");
}

static void answer_csv(ncclzReport *r, const wi_results *w) {
  ncclzTable *t = ncclzTableNew("whatif_answer", "data\tcollective\tsize\tgpus/node\tcompress\tnodes\tNIC Gb/s\tNIC GB/s\tspeedup");
  for (size_t i = 0; i < w->n; i++) {
    const wi_point *p = &w->pt[i];
    if (!compressed(p)) continue;
    char b[32];
    fmt_bytes((double)p->p.options.bytes, b, sizeof b);
    ncclzTableAdd(t, "%s\t%s\t%s\t%d\t%s\t%d\t%g\t%g\t%.3f", p->workload, ncclzCollectiveName(p->p.options.coll), b,
                  p->p.platform.gpus_per_node, ncclzSimCompressName(p->p.options.compress), p->p.platform.nodes,
                  8.0 * p->p.platform.nic_gbps, p->p.platform.nic_gbps, p->speedup);
  }
  ncclzReportCsvOnly(r, t, "The heatmaps' numbers");
}

void whatif_answer(ncclzReport *r, const wi_results *w) {
  grid g;
  ncclzReportHeading(r, "Answer: speedup over plain NCCL");
  if (build_grid(w, &g)) {
    ncclzReportText(r, "No compressed point in this scenario (every point is \"off\"): nothing to compare.");
    free_grid(&g);
    return;
  }
  headline(r, &g);
  int parts = (g.npanels + PANELS_PER_PLOT - 1) / PANELS_PER_PLOT;
  for (int k = 0, part = 1; k < g.npanels; k += PANELS_PER_PLOT, part++)
    heatmap(r, w, &g, k, k + PANELS_PER_PLOT < g.npanels ? k + PANELS_PER_PLOT : g.npanels, part, parts);
  panel_table(r, &g);
  answer_csv(r, w);
  free_grid(&g);
}
#endif
