/* Kind "what-if": the simulator's scenario (parsed by sim/scenario.c, the one parser) run point by
 * point, optionally once per workload (each its own data and sizes), with speedup over plain NCCL
 * against nodes, NIC bandwidth and size, and a side-by-side with published numbers ("paper"). */
#include "report_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef NCCLZ_HAVE_SIM
ncclzStatus kind_whatif(ncclzReport *r, run_ctx *c) {
  (void)r;
  (void)c;
  return ncclzSetError(NCCLZ_ERR_RUNTIME, "what-if needs the simulator, and this build has none (SimGrid was not "
                                           "found when it was configured; install libsimgrid-dev and rebuild)");
}
#else
#include "ncclz/sim.h"
#include "whatif_internal.h"

/* ------------------------------------------------------------------ running */

static ncclzStatus grow(wi_results *w, size_t more) {
  wi_point *p = realloc(w->pt, (w->n + more) * sizeof *p);
  if (!p) return ncclzSetError(NCCLZ_ERR_NOMEM, "out of memory");
  w->pt = p;
  return NCCLZ_OK;
}

typedef struct {
  const char *label;
  size_t done0, total;
} progress_ctx;

static void progress(void *ctx, size_t done, size_t total) {
  const progress_ctx *pc = ctx;
  if (done < total) ncclzProgress(pc->label, pc->done0 + done, pc->total); /* the caller ends the line */
}

/* Runs one workload's scenario (sim's what-if runner) and appends its points to w. */
static ncclzStatus run_points(const char *label, const ncclzSimScenario *s, const ncclzProfile *prof, wi_results *w,
                              size_t done0, size_t total) {
  ncclzSimPointResult *res = calloc(s->npoints ? s->npoints : 1, sizeof *res);
  ncclzStatus st = res ? grow(w, s->npoints) : ncclzSetError(NCCLZ_ERR_NOMEM, "out of memory");
  progress_ctx pc = {label, done0, total};
  if (st == NCCLZ_OK) st = ncclzSimScenarioRun(prof, s, res, progress, &pc);
  for (size_t i = 0; i < s->npoints && st == NCCLZ_OK; i++) {
    wi_point *o = &w->pt[w->n + i];
    memset(o, 0, sizeof *o);
    snprintf(o->workload, sizeof o->workload, "%s", label);
    o->p = s->points[i];
    o->r = res[i].r;
    o->base_us = res[i].base_us;
    o->speedup = res[i].speedup;
    o->busbw = res[i].busbw;
    o->algbw = res[i].algbw;
    o->wire_cr_fixedlen = ncclzSimDataCr(&s->data, NCCLZ_CODER_FIXEDLEN, 1);
    o->wire_cr_huffman = ncclzSimDataCr(&s->data, NCCLZ_CODER_HUFFMAN, 1);
  }
  free(res);
  if (st == NCCLZ_OK) w->n += s->npoints;
  else if (st != NCCLZ_ERR_ARG) ncclzSetError(st, "what-if %s, %s", label, ncclzLastError());
  return st;
}

/* The scenario text of one workload: the document with its "data" (and "sweep.bytes") replaced. */
static char *workload_text(const cJSON *root, const cJSON *wl, int idx) {
  cJSON *doc = cJSON_Duplicate(root, 1);
  const cJSON *data = cJSON_GetObjectItemCaseSensitive(wl, "data");
  const cJSON *bytes = cJSON_GetObjectItemCaseSensitive(wl, "bytes");
  if (data) {
    cJSON_DeleteItemFromObjectCaseSensitive(doc, "data");
    cJSON_AddItemToObject(doc, "data", cJSON_Duplicate(data, 1));
  }
  cJSON *sweep = cJSON_GetObjectItemCaseSensitive(doc, "sweep");
  if (bytes && !sweep) sweep = cJSON_AddObjectToObject(doc, "sweep");
  if (bytes) {
    cJSON_DeleteItemFromObjectCaseSensitive(sweep, "bytes");
    cJSON_AddItemToObject(sweep, "bytes", cJSON_Duplicate(bytes, 1));
  }
  (void)idx;
  char *text = cJSON_PrintUnformatted(doc);
  cJSON_Delete(doc);
  return text;
}

static int parse_workloads(run_ctx *c, const cJSON *wls, ncclzSimScenario *sc, char labels[][64], int *n) {
  static const char *const keys[] = {"label", "data", "bytes", "note", NULL};
  int count = (int)ncclzJsonCount(wls, WI_MAX_WORKLOADS), i = 0;
  if (!cJSON_IsArray(wls) || count < 1 || count > WI_MAX_WORKLOADS)
    return SCN_ERR("workloads: expected an array of 1 to %d objects {label, data, bytes}", WI_MAX_WORKLOADS), -1;
  const cJSON *wl;
  for (wl = wls->child; wl; wl = wl->next, i++) {
    char path[48];
    snprintf(path, sizeof path, "workloads[%d]", i);
    const char *label = NULL;
    if (!cJSON_IsObject(wl)) return SCN_ERR("%s: expected an object {label, data, bytes}", path), -1;
    if (fld_known(wl, path, keys) || fld_string(wl, path, "label", 1, &label)) return -1;
    snprintf(labels[i], 64, "%s", label);
    char *text = workload_text(c->root, wl, i);
    ncclzStatus st = text ? ncclzSimScenarioParse(text, strlen(text), c->dir, c->prof, &sc[i]) : NCCLZ_ERR_NOMEM;
    free(text);
    *n = i + 1;
    if (st != NCCLZ_OK) {
      char msg[600];
      snprintf(msg, sizeof msg, "%s", ncclzLastError());
      return ncclzSetError(NCCLZ_ERR_ARG, "%s (in workloads[%d] \"%s\")", msg, i, label), -1;
    }
  }
  return 0;
}

/* Parses the scenario, once or once per workload. */
static ncclzStatus parse_all(run_ctx *c, ncclzSimScenario *sc, char labels[][64], int *n) {
  const cJSON *wls = cJSON_GetObjectItemCaseSensitive(c->root, "workloads");
  if (wls) return parse_workloads(c, wls, sc, labels, n) ? NCCLZ_ERR_ARG : NCCLZ_OK;
  *n = 1;
  snprintf(labels[0], 64, "%s", "scenario data");
  return ncclzSimScenarioParse(c->text, c->len, c->dir, c->prof, &sc[0]);
}

static void record_inputs(run_ctx *c) {
  const cJSON *wls = cJSON_GetObjectItemCaseSensitive(c->root, "workloads"), *wl;
  const cJSON *one = cJSON_GetObjectItemCaseSensitive(c->root, "data");
  int count = wls ? (int)ncclzJsonCount(wls, WI_MAX_WORKLOADS) : 1;
  wl = wls ? wls->child : NULL;
  for (int i = 0; i < count; i++, wl = wl ? wl->next : NULL) {
    const cJSON *d = wl ? cJSON_GetObjectItemCaseSensitive(wl, "data") : one;
    const cJSON *f = cJSON_GetObjectItemCaseSensitive(d, "profile");
    if (!f) f = cJSON_GetObjectItemCaseSensitive(d, "file");
    const cJSON *cr = cJSON_GetObjectItemCaseSensitive(d, "cr");
    const cJSON *q = cJSON_GetObjectItemCaseSensitive(d, "quant");
    const cJSON *note = wl ? cJSON_GetObjectItemCaseSensitive(wl, "note") : NULL;
    const cJSON *lab = wl ? cJSON_GetObjectItemCaseSensitive(wl, "label") : NULL;
    char path[1200] = "", crs[200] = "";
    if (cJSON_IsString(f)) run_path(c, f->valuestring, path, sizeof path);
    if (cr) {
      char *t = cJSON_PrintUnformatted(cr);
      snprintf(crs, sizeof crs, "CR given in the scenario: %s. ", t ? t : "");
      free(t);
    }
    char notes[800];
    snprintf(notes, sizeof notes, "%s%s", crs, cJSON_IsString(note) ? note->valuestring : "");
    run_input(c, cJSON_IsString(lab) ? lab->valuestring : "what-if data", path[0] ? path : "(none)",
              cJSON_IsString(q) ? q->valuestring : "", notes);
  }
}

/* The parser's warnings (a NIC bandwidth no NIC offers) on stderr and on the page. */
static void show_warnings(ncclzReport *r, const char *warnings) {
  char buf[sizeof ((ncclzSimScenario *)0)->warnings];
  snprintf(buf, sizeof buf, "%s", warnings);
  for (char *save = NULL, *line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
    fprintf(stderr, "ncclz run: warning: scenario %s\n", line);
    ncclzReportNote(r, "Warning: scenario %s", line);
  }
}

ncclzStatus kind_whatif(ncclzReport *r, run_ctx *c) {
  ncclzSimScenario sc[WI_MAX_WORKLOADS];
  char labels[WI_MAX_WORKLOADS][64];
  int n = 0;
  memset(sc, 0, sizeof sc);
  ncclzStatus st = parse_all(c, sc, labels, &n);
  wi_results w = {0};
  size_t total = 0, done = 0;
  for (int i = 0; i < n && st == NCCLZ_OK; i++) total += sc[i].npoints;
  for (int i = 0; i < n && st == NCCLZ_OK; i++) {
    st = run_points(labels[i], &sc[i], c->prof, &w, done, total);
    done += sc[i].npoints;
  }
  ncclzProgress("what-if", total, total);
  if (st == NCCLZ_OK && n > 0) show_warnings(r, sc[0].warnings);
  for (int i = 0; i < n; i++) ncclzSimScenarioFree(&sc[i]);
  if (st == NCCLZ_OK) {
    record_inputs(c);
    st = whatif_report(r, c, &w);
  }
  if (st == NCCLZ_OK) st = section_surface(r, c);
  free(w.pt);
  return st;
}
#endif
