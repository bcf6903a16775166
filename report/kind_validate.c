/* Kinds "validate" and "measure": measured results (`ncclz perf --json` files) beside the
 * simulator's replay of the same points, with the median error. Without a measurement file the
 * report says so and shows the simulated predictions alone. "measure" first runs `ncclz perf` on
 * this machine's GPUs (a CUDA build only), then reports like validate. */
#include "report_internal.h"

#include <glob.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef NCCLZ_HAVE_SIM
ncclzStatus validate_check(run_ctx *c) {
  (void)c;
  return ncclzSetError(NCCLZ_ERR_RUNTIME, "validate needs the simulator, and this build has none (SimGrid was not "
                                           "found when it was configured; install libsimgrid-dev and rebuild)");
}

ncclzStatus validate_files(ncclzReport *r, run_ctx *c, const char *const *files, int nfiles, const char *looked) {
  (void)r, (void)files, (void)nfiles, (void)looked;
  return validate_check(c);
}
#else
#include "ncclz/sim.h"

#define VA_MAX_PATHS 8
#define VA_MAX_FILES 64

typedef struct {
  char name[32];
  ncclzSimScenario sc; /* one point: the path's platform and options, and the data */
  char cal[32];        /* "calibrated": the profile's path */
  double plain_factor; /* > 0: bandwidth_factor of plain (compress off) points, "calibrated" paths */
  double coll_factor[NCCLZ_COLL_COUNT]; /* > 0: the same for one collective (plain_factors) */
  ncclzCurve frame_factor; /* "calibrated": size_factor of the executor's frames (send/recv's ramp) */
} va_path;

typedef struct {
  char path[32], coll[24], compress[16], file[512];
  int nranks;
  double bytes, meas_us, meas_cr, sim_us;
  int has_meas;
  int by_ncclz; /* measured by ncclz perf (the executor or plain NCCL beside it), not nccl-tests */
  ncclzAlgorithm algo; /* the executor's schedule: the run's "algorithm", AUTO when it names none */
} va_point;

typedef struct {
  va_point *pt;
  size_t n, cap;
} va_points;

/* Bandwidth (GB/s) of a profile curve's large messages: the slope between 512 MiB and 1 GiB. */
static double curve_gbps(const ncclzProfile *prof, const char *path, const char *coll) {
  const double s1 = 512.0 * 1048576, s2 = 1024.0 * 1048576;
  double t1 = ncclzProfilePlainUs(prof, path, coll, s1), t2 = ncclzProfilePlainUs(prof, path, coll, s2);
  return t1 >= 0 && t2 > t1 ? (s2 - s1) / ((t2 - t1) * 1e3) : -1;
}

/* The send/recv ramp as a bandwidth factor by message size: at each point of the profile's curve,
 * the time the linear link (alpha, bandwidth) would take over the time measured, so that a
 * message of that size takes the measured time (sim/replay.c divides its bytes by the factor). */
static void ramp_factor(const ncclzProfile *prof, const char *path, double p2p, double alpha, ncclzCurve *out) {
  const ncclzCurve *sr = ncclzProfilePlainCurve(prof, path, "sendrecv");
  out->n_points = 0;
  for (uint32_t k = 0; sr && k < sr->n_points; k++) {
    double b = sr->bytes[k], wire = sr->us[k] - alpha;
    if (!(wire > 0)) continue;
    double f = (b / (p2p * 1e3)) / wire;
    out->bytes[out->n_points] = b;
    out->us[out->n_points++] = f < 1e-3 ? 1e-3 : f > 1e3 ? 1e3 : f;
  }
}

/* "calibrated": "PATH" takes the link from the profile's measurement of that path, as the
 * executor sees it: the executor's frames travel by NCCL send/recv, so the link is the send/recv
 * curve's (bandwidth of large messages, LogGP latency at 1 KiB), and the frames (a few MiB and
 * less) follow send/recv's ramp with message size (ramp_factor). On a NIC path whose AllReduce
 * moves more than one send/recv does (the socket transport: 3.8 against 2.5 GB/s on 2x H200), the
 * send/recv rate caps each transfer (nic_flow_gbps) and the AllReduce's is the NIC's: the
 * executor's comm lanes put several units' frames on the wire at once, and they move faster
 * together than one (the 1 GiB FIXEDLEN AllReduce's frames at 4.1 GB/s). Plain NCCL runs its collectives
 * on more channels: plain points scale the bandwidth by the AllReduce's over send/recv's (a 2-rank
 * ring AllReduce moves its whole buffer each way) here, and by each collective's own factors
 * (plain_factors, plain_point_factor) once the path's platform is parsed. Writes the link fields
 * into plat (a copy) and the factors into p. */
static int calibrated_link(run_ctx *c, cJSON *plat, const char *name, va_path *p) {
  const cJSON *cal = cJSON_GetObjectItemCaseSensitive(plat, "calibrated");
  if (!cal) return 0;
  if (!cJSON_IsString(cal)) return SCN_ERR("paths.%s.calibrated: expected a path name of the profile", name), -1;
  char path[32]; /* a copy: the "calibrated" item is deleted below */
  snprintf(path, sizeof path, "%.31s", cal->valuestring);
  double p2p = curve_gbps(c->prof, path, "sendrecv"), coll = curve_gbps(c->prof, path, "allreduce");
  if (p2p <= 0 || coll <= 0)
    return SCN_ERR("paths.%s.calibrated: the profile has no sendrecv and allreduce curves of path '%s'", name, path), -1;
  double alpha = ncclzProfilePlainUs(c->prof, path, "sendrecv", 1024) - 1024 / (p2p * 1e3);
  const cJSON *g = cJSON_GetObjectItemCaseSensitive(plat, "gpus_per_node");
  int intra = cJSON_IsNumber(g) && g->valuedouble >= 2;
  const char *bw = intra ? "nvlink_gbps" : "nic_gbps", *lat = intra ? "nvlink_latency_us" : "nic_latency_us";
  if (cJSON_GetObjectItemCaseSensitive(plat, bw) || cJSON_GetObjectItemCaseSensitive(plat, lat))
    return SCN_ERR("paths.%s: give either \"calibrated\" or %s and %s", name, bw, lat), -1;
  if (!intra && coll > p2p) { /* one transfer at send/recv's rate, several up to the AllReduce's */
    cJSON_AddNumberToObject(plat, bw, coll);
    cJSON_AddNumberToObject(plat, "nic_flow_gbps", p2p);
  } else {
    cJSON_AddNumberToObject(plat, bw, p2p);
  }
  cJSON_AddNumberToObject(plat, lat, alpha > 0 ? alpha : 0);
  cJSON_DeleteItemFromObjectCaseSensitive(plat, "calibrated");
  p->plain_factor = coll / p2p;
  snprintf(p->cal, sizeof p->cal, "%s", path);
  ramp_factor(c->prof, path, p2p, alpha > 0 ? alpha : 0, &p->frame_factor);
  return 0;
}

/* The path's one point as a call of `bytes` of `coll` on `nranks` ranks, spread as the path's
 * gpus_per_node says. */
static ncclzSimPoint path_point(const va_path *vp, int nranks, ncclzCollective coll, ncclzSimCompress comp,
                                uint64_t bytes) {
  ncclzSimPoint pt = vp->sc.points[0];
  int gpn = pt.platform.gpus_per_node < nranks ? pt.platform.gpus_per_node : nranks;
  pt.platform.gpus_per_node = gpn;
  pt.platform.nodes = nranks / gpn;
  pt.options.coll = coll;
  pt.options.compress = comp;
  pt.options.bytes = bytes;
  return pt;
}

/* "calibrated": per collective, the bandwidth factor that makes the replay of the plain collective
 * on this path take the profile's measured time per byte at large sizes (the slope between 256 MiB
 * and 1 GiB, on the ranks the profile measured). One factor for all, the AllReduce's, mispredicted
 * the others: NCCL runs each with its own channels and protocol, and on the 2x H200 socket path
 * AlltoAll moves its bytes at 0.6x AllReduce's rate. Collectives without a curve keep plain_factor. */
static void plain_factors(const ncclzProfile *prof, va_path *p) {
  const double s1 = 256.0 * 1048576, s2 = 1024.0 * 1048576;
  for (int k = 0; k < NCCLZ_COLL_COUNT; k++) {
    const char *coll = ncclzCollectiveName((ncclzCollective)k);
    double m1 = ncclzProfilePlainUs(prof, p->cal, coll, s1), m2 = ncclzProfilePlainUs(prof, p->cal, coll, s2);
    int nr = prof->plain_ranks ? (int)prof->plain_ranks : 2;
    ncclzSimPoint pt = path_point(p, nr, (ncclzCollective)k, NCCLZ_SIM_OFF, (uint64_t)s1);
    ncclzSimResult r1, r2;
    int ok = !p->cal[0] || m1 < 0 || !(m2 > m1) ? 0 : ncclzSimRun(prof, &p->sc.data, &pt.platform, &pt.options, &r1) == NCCLZ_OK;
    pt.options.bytes = (uint64_t)s2;
    ok = ok && ncclzSimRun(prof, &p->sc.data, &pt.platform, &pt.options, &r2) == NCCLZ_OK && r2.time_us > r1.time_us;
    p->coll_factor[k] = ok ? (r2.time_us - r1.time_us) / (m2 - m1) : 0;
  }
}

/* A path's platform as a one-point what-if document, parsed by the simulator's own parser. */
static int parse_path(run_ctx *c, const cJSON *plat_in, const char *name, va_path *p) {
  cJSON *plat = cJSON_Duplicate(plat_in, 1);
  if (!plat || calibrated_link(c, plat, name, p)) {
    cJSON_Delete(plat);
    return -1;
  }
  cJSON *doc = cJSON_CreateObject();
  cJSON_AddStringToObject(doc, "kind", "what-if");
  const cJSON *data = cJSON_GetObjectItemCaseSensitive(c->root, "data");
  const cJSON *opts = cJSON_GetObjectItemCaseSensitive(c->root, "options");
  if (data) cJSON_AddItemToObject(doc, "data", cJSON_Duplicate(data, 1));
  if (opts) cJSON_AddItemToObject(doc, "options", cJSON_Duplicate(opts, 1));
  cJSON_AddItemToObject(doc, "platform", plat);
  char *text = cJSON_PrintUnformatted(doc);
  cJSON_Delete(doc);
  snprintf(p->name, sizeof p->name, "%.31s", name);
  ncclzStatus st = text ? ncclzSimScenarioParse(text, strlen(text), c->dir, c->prof, &p->sc) : NCCLZ_ERR_NOMEM;
  free(text);
  if (st == NCCLZ_OK) plain_factors(c->prof, p);
  if (st != NCCLZ_OK) {
    char msg[600];
    snprintf(msg, sizeof msg, "%s", ncclzLastError());
    return ncclzSetError(NCCLZ_ERR_ARG, "%s (in paths.%s)", msg, name), -1;
  }
  return 0;
}

static int parse_paths(run_ctx *c, va_path *paths, int *n) {
  const cJSON *obj = cJSON_GetObjectItemCaseSensitive(c->root, "paths"), *it;
  *n = 0;
  if (!cJSON_IsObject(obj) || !cJSON_GetArraySize(obj) || cJSON_GetArraySize(obj) > VA_MAX_PATHS)
    return SCN_ERR("paths: required, an object of 1 to %d named platforms, e.g. {\"socket\": {\"gpus_per_node\": 1, "
                   "\"nic_gbps\": 3.6}}", VA_MAX_PATHS), -1;
  cJSON_ArrayForEach(it, obj) {
    if (!cJSON_IsObject(it)) return SCN_ERR("paths.%s: expected a platform object", it->string), -1;
    if (parse_path(c, it, it->string, &paths[*n])) return -1;
    (*n)++;
  }
  return 0;
}

static const va_path *find_path(const va_path *paths, int n, const char *name) {
  for (int i = 0; i < n; i++)
    if (!strcmp(paths[i].name, name)) return &paths[i];
  return NULL;
}

static va_point *add_point(va_points *v) {
  if (v->n == v->cap) {
    size_t cap = v->cap ? 2 * v->cap : 64;
    va_point *p = realloc(v->pt, cap * sizeof *p);
    if (!p) return NULL;
    v->pt = p, v->cap = cap;
  }
  memset(&v->pt[v->n], 0, sizeof v->pt[0]);
  return &v->pt[v->n++];
}

/* A plain (compress off) point's bandwidth factor, applied to pt: the collective's own factor
 * (plain_factors), and on the ranks the profile measured, the one that makes this size take the
 * profile's measured time. The replay's links are linear (latency + bytes / bandwidth) while NCCL's
 * bandwidth ramps with the message size (16 MiB over NVLink runs at 60% of 1 GiB's busbw): with
 * f the factor, the replay takes L + W / f, so two replays (f and 2f) give L and W and the factor
 * for the measured time T is W / (T - L). The executor's frames get the same treatment from
 * send/recv's curve (frame_factor, by message size). Sizes the replay cannot reach (T <= L) keep
 * the collective's factor. */
static void plain_point_factor(const ncclzProfile *prof, const va_path *vp, const ncclzSimData *data, ncclzSimPoint *pt,
                               int nranks) {
  int coll = (int)pt->options.coll;
  double pf = vp->coll_factor[coll] > 0 ? vp->coll_factor[coll] : vp->plain_factor;
  if (!(pf > 0)) return;
  double base = pt->platform.bandwidth_factor;
  pt->platform.bandwidth_factor = base * pf;
  double T = vp->cal[0] && (uint32_t)nranks == prof->plain_ranks
                 ? ncclzProfilePlainUs(prof, vp->cal, ncclzCollectiveName((ncclzCollective)coll), (double)pt->options.bytes)
                 : -1;
  if (!(T > 0)) return;
  ncclzSimResult r1, r2;
  if (ncclzSimRun(prof, data, &pt->platform, &pt->options, &r1) != NCCLZ_OK) return;
  pt->platform.bandwidth_factor = base * 2 * pf;
  int ok = ncclzSimRun(prof, data, &pt->platform, &pt->options, &r2) == NCCLZ_OK;
  pt->platform.bandwidth_factor = base * pf;
  double W = 2 * (r1.time_us - r2.time_us), L = r1.time_us - W; /* W: the bandwidth part at factor pf */
  if (ok && W > 0 && T > L) pt->platform.bandwidth_factor = base * pf * W / (T - L);
}

/* Simulates one point on its path: nranks spread as the path's gpus_per_node says; forced coders
 * take the measured CR when there is one (the data's CR is what the simulator cannot know). */
static ncclzStatus simulate(const ncclzProfile *prof, const va_path *vp, va_point *q) {
  ncclzSimData data = vp->sc.data;
  int coll = ncclzCollectiveFromName(q->coll), comp = ncclzSimCompressFromName(q->compress);
  if (coll < 0 || comp < 0)
    return ncclzSetError(NCCLZ_ERR_ARG, "%s: unknown collective '%s' or compress '%s'", q->file, q->coll, q->compress);
  ncclzSimPoint pt = path_point(vp, q->nranks, (ncclzCollective)coll, (ncclzSimCompress)comp, (uint64_t)q->bytes);
  if (comp == NCCLZ_SIM_OFF) plain_point_factor(prof, vp, &data, &pt, q->nranks);
  /* the schedule the executor ran, not the replay's fastest (its auto): the run's algorithm, and
   * for auto the ring (the executor's auto without ranks_per_node, which perf's JSON does not
   * record), on one channel (the executor's default) */
  if (comp != NCCLZ_SIM_OFF) {
    pt.platform.size_factor = vp->frame_factor;
    pt.options.algorithm = q->algo != NCCLZ_ALGO_AUTO ? q->algo : NCCLZ_ALGO_RING;
    pt.options.channels = 1;
  }
  int forced = comp == NCCLZ_SIM_FIXEDLEN ? NCCLZ_CODER_FIXEDLEN : comp == NCCLZ_SIM_HUFFMAN ? NCCLZ_CODER_HUFFMAN : -1;
  if (q->has_meas && q->meas_cr > 0 && forced > 0)
    for (int k = 0; k < NCCLZ_SIM_MAX_CR_RANKS; k++) data.cr[forced][k] = q->meas_cr;
  ncclzSimResult r;
  ncclzStatus st = ncclzSimRun(prof, &data, &pt.platform, &pt.options, &r);
  if (st == NCCLZ_OK && comp == NCCLZ_SIM_AUTO && ncclzSimFramesSent(&r) == 0) {
    /* REA kept the call RAW, so the executor ran plain NCCL (and so did the replay): then the
     * plain collective's link, not the frames'. */
    pt = path_point(vp, q->nranks, (ncclzCollective)coll, NCCLZ_SIM_OFF, (uint64_t)q->bytes);
    plain_point_factor(prof, vp, &data, &pt, q->nranks);
    st = ncclzSimRun(prof, &data, &pt.platform, &pt.options, &r);
  }
  q->sim_us = r.time_us;
  return st;
}

/* ------------------------------------------------------- measurement files */

/* One `ncclz perf --json` object: a collective, a compress mode and its points. */
static int read_perf_object(const cJSON *root, const char *file, const char *path, va_points *v) {
  const cJSON *pts = cJSON_GetObjectItemCaseSensitive(root, "points"), *p;
  const cJSON *coll = cJSON_GetObjectItemCaseSensitive(root, "collective");
  const cJSON *comp = cJSON_GetObjectItemCaseSensitive(root, "compress");
  const cJSON *nr = cJSON_GetObjectItemCaseSensitive(root, "nranks");
  const cJSON *fpath = cJSON_GetObjectItemCaseSensitive(root, "path");
  const cJSON *backend = cJSON_GetObjectItemCaseSensitive(root, "backend");
  const cJSON *algo = cJSON_GetObjectItemCaseSensitive(root, "algorithm");
  int a = cJSON_IsString(algo) ? ncclzAlgorithmFromName(algo->valuestring) : algo ? -1 : NCCLZ_ALGO_AUTO;
  if (a < 0)
    return ncclzSetError(NCCLZ_ERR_ARG, "measured file '%s': algorithm: expected auto, ring, tree, rhd or hier", file), -1;
  if (!cJSON_IsArray(pts) || !cJSON_IsString(coll) || !cJSON_IsString(comp) || !cJSON_IsNumber(nr) ||
      !(nr->valuedouble >= 1 && nr->valuedouble <= 1 << 20))
    return ncclzSetError(NCCLZ_ERR_ARG, "measured file '%s': expected `ncclz perf --json` output (collective, compress, "
                                        "nranks, points[]), or a bench file with runs[] of them", file), -1;
  /* the replay plays auto as one planned coder a call: runs that planned every frame
   * (`ncclz perf --rea-frames`) are not what it models */
  if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(root, "rea_per_frame"))) return 0;
  cJSON_ArrayForEach(p, pts) {
    const cJSON *size = cJSON_GetObjectItemCaseSensitive(p, "size"), *t = cJSON_GetObjectItemCaseSensitive(p, "time_us");
    const cJSON *cr = cJSON_GetObjectItemCaseSensitive(p, "cr");
    if (!cJSON_IsNumber(size) || !cJSON_IsNumber(t) || t->valuedouble <= 0) continue;
    va_point *q = add_point(v);
    if (!q) return ncclzSetError(NCCLZ_ERR_NOMEM, "out of memory"), -1;
    snprintf(q->path, sizeof q->path, "%.31s", cJSON_IsString(fpath) ? fpath->valuestring : path);
    snprintf(q->coll, sizeof q->coll, "%.23s", coll->valuestring);
    snprintf(q->compress, sizeof q->compress, "%.15s", comp->valuestring);
    snprintf(q->file, sizeof q->file, "%s", file);
    q->nranks = (int)nr->valuedouble;
    q->bytes = size->valuedouble;
    q->meas_us = t->valuedouble;
    q->meas_cr = cJSON_IsNumber(cr) ? cr->valuedouble : 0;
    q->has_meas = 1;
    q->by_ncclz = !(cJSON_IsString(backend) && !strcmp(backend->valuestring, "nccl-tests"));
    q->algo = (ncclzAlgorithm)a;
  }
  return 0;
}

/* A `ncclz perf --json` file, or a bench/exec.sh results file holding runs[] of them. */
static int read_perf_file(const char *file, const char *path, va_points *v) {
  cJSON *root;
  if (ncclzJsonLoad("measured file", file, &root) != NCCLZ_OK) return -1;
  const cJSON *runs = cJSON_GetObjectItemCaseSensitive(root, "runs"), *run;
  int rc = 0;
  if (cJSON_IsArray(runs)) {
    cJSON_ArrayForEach(run, runs) if (!rc) rc = read_perf_object(run, file, path, v);
  } else {
    rc = read_perf_object(root, file, path, v);
  }
  cJSON_Delete(root);
  return rc;
}

/* The files named by "measured": [{file|glob, path}], relative to the scenario. */
static int measured_files(run_ctx *c, char files[][512], char paths[][32], int *n, sbuf *looked) {
  const cJSON *arr = cJSON_GetObjectItemCaseSensitive(c->root, "measured"), *e;
  static const char *const keys[] = {"file", "glob", "path", NULL};
  int i = 0;
  *n = 0;
  if (arr && !cJSON_IsArray(arr)) return SCN_ERR("measured: expected an array of {file or glob, path}"), -1;
  cJSON_ArrayForEach(e, arr) {
    char where[32], full[1200];
    snprintf(where, sizeof where, "measured[%d]", i++);
    const char *file = NULL, *pat = NULL, *path = NULL;
    if (!cJSON_IsObject(e) || fld_known(e, where, keys) || fld_string(e, where, "file", 0, &file) ||
        fld_string(e, where, "glob", 0, &pat) || fld_string(e, where, "path", 1, &path))
      return cJSON_IsObject(e) ? -1 : (SCN_ERR("%s: expected an object {file or glob, path}", where), -1);
    if (!file == !pat) return SCN_ERR("%s: give exactly one of file and glob", where), -1;
    run_path(c, file ? file : pat, full, sizeof full);
    sb_printf(looked, "%s%s", looked->len ? ", " : "", full);
    glob_t g;
    if (glob(full, 0, NULL, &g) == 0)
      for (size_t k = 0; k < g.gl_pathc && *n < VA_MAX_FILES; k++, (*n)++) {
        snprintf(files[*n], 512, "%s", g.gl_pathv[k]);
        snprintf(paths[*n], 32, "%.31s", path);
      }
    globfree(&g);
  }
  return 0;
}

/* ------------------------------------------------------------------ report */

enum { VA_ALL, VA_PLAIN, VA_COMPRESSED, VA_BY_NCCLZ }; /* which points a median takes */

/* Whether point p belongs to the set `which` names. */
static int va_takes(const va_point *p, int which) {
  /* plain NCCL ran: compress off, or auto calls that REA kept RAW (no frames: measured CR 1) */
  int plain = !strcmp(p->compress, "off") || (!strcmp(p->compress, "auto") && p->meas_cr <= 1.0);
  switch (which) {
  case VA_PLAIN: return plain;
  case VA_COMPRESSED: return !plain;
  case VA_BY_NCCLZ: return p->by_ncclz;
  default: return 1;
  }
}

static double median_abs_error(const va_points *v, double min_bytes, int which, size_t *count) {
  double *e = malloc((v->n ? v->n : 1) * sizeof *e);
  size_t n = 0;
  for (size_t i = 0; e && i < v->n; i++) {
    if (!va_takes(&v->pt[i], which)) continue;
    if (v->pt[i].has_meas && v->pt[i].bytes >= min_bytes) e[n++] = fabs(v->pt[i].sim_us / v->pt[i].meas_us - 1.0);
  }
  double med = n ? ncclzMedian(e, n) : NAN;
  free(e);
  *count = n;
  return med;
}

static void busbw_plot(ncclzReport *r, const va_points *v) {
  static const char *const dims[] = {"path", "coll", "compress", "ranks", "source"};
  xy_row *rows = malloc((2 * v->n + 1) * sizeof *rows);
  char (*rk)[16] = malloc((v->n + 1) * sizeof *rk);
  size_t n = 0;
  for (size_t i = 0; rows && rk && i < v->n; i++) {
    const va_point *q = &v->pt[i];
    int coll = ncclzCollectiveFromName(q->coll);
    snprintf(rk[i], 16, "%d", q->nranks);
    for (int s = q->has_meas ? 0 : 1; s < 2; s++, n++) {
      rows[n].dim[0] = q->path, rows[n].dim[1] = q->coll, rows[n].dim[2] = q->compress, rows[n].dim[3] = rk[i];
      rows[n].dim[4] = s ? "simulated" : "measured";
      rows[n].x = q->bytes;
      rows[n].y = ncclzSimBusBw((ncclzCollective)(coll < 0 ? 0 : coll), q->nranks, (uint64_t)q->bytes, s ? q->sim_us : q->meas_us);
    }
  }
  series_spec sp = {"validate_busbw", "Bus bandwidth against size: measured and simulated", "busbw: measured and simulated",
                    "message size (bytes)", "busbw (GB/s)", dims, 5, -1, 2, 1, NULL};
  if (rows && rk) plot_series(r, &sp, rows, n);
  free(rows);
  free(rk);
}

static ncclzStatus points_table(ncclzReport *r, const va_points *v) {
  ncclzTable *t = ncclzTableNew("validate_points", "path\tcollective\tranks\tcompress\tbytes\tmeasured us\tsimulated us\t"
                                                  "error\tmeasured CR\tfile");
  cJSON *arr = cJSON_AddArrayToObject(ncclzReportJson(r), "points");
  for (size_t i = 0; i < v->n; i++) {
    const va_point *q = &v->pt[i];
    char b[32], m[32] = "-", e[32] = "-";
    fmt_bytes(q->bytes, b, sizeof b);
    if (q->has_meas) snprintf(m, sizeof m, "%.1f", q->meas_us), snprintf(e, sizeof e, "%+.1f%%", 100.0 * (q->sim_us / q->meas_us - 1));
    ncclzTableAdd(t, "%s\t%s\t%d\t%s\t%s\t%s\t%.1f\t%s\t%.2f\t%s", q->path, q->coll, q->nranks, q->compress, b, m, q->sim_us,
                  e, q->meas_cr, q->file[0] ? q->file : "(prediction)");
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "path", q->path);
    cJSON_AddStringToObject(o, "collective", q->coll);
    cJSON_AddNumberToObject(o, "nranks", q->nranks);
    cJSON_AddStringToObject(o, "compress", q->compress);
    cJSON_AddNumberToObject(o, "bytes", q->bytes);
    cJSON_AddNumberToObject(o, "simulated_us", q->sim_us);
    if (q->has_meas) cJSON_AddNumberToObject(o, "measured_us", q->meas_us), cJSON_AddNumberToObject(o, "error", q->sim_us / q->meas_us - 1);
    cJSON_AddItemToArray(arr, o);
  }
  return ncclzReportTable(r, t, "Every point (error = simulated / measured - 1)");
}

/* "predict": {collective[], bytes[], compress[], path[], nranks}: what to simulate without
 * measurements. */
static int predictions(run_ctx *c, const va_path *paths, int np, va_points *v) {
  const cJSON *pr = cJSON_GetObjectItemCaseSensitive(c->root, "predict");
  static const char *const keys[] = {"collective", "bytes", "compress", "nranks", NULL};
  if (!pr) return 0;
  double *bytes = NULL, nranks = 2;
  int nb = 0;
  if (!cJSON_IsObject(pr) || fld_known(pr, "predict", keys) || fld_bytes(pr, "predict", "bytes", 1, &bytes, &nb) ||
      fld_number(pr, "predict", "nranks", 0, 1, 1 << 20, &nranks))
    return free(bytes), cJSON_IsObject(pr) ? -1 : (SCN_ERR("predict: expected an object"), -1);
  const cJSON *colls = cJSON_GetObjectItemCaseSensitive(pr, "collective"), *comps = cJSON_GetObjectItemCaseSensitive(pr, "compress");
  const cJSON *cl, *cm;
  int rc = 0;
  for (int p = 0; p < np && !rc; p++)
    cJSON_ArrayForEach(cl, colls) cJSON_ArrayForEach(cm, comps) for (int b = 0; b < nb && !rc; b++) {
      if (!cJSON_IsString(cl) || !cJSON_IsString(cm) || ncclzCollectiveFromName(cl->valuestring) < 0 ||
          ncclzSimCompressFromName(cm->valuestring) < 0) {
        rc = (SCN_ERR("predict: collective[] and compress[] must be arrays of names (allreduce, ...; off, auto, ...)"), -1);
        break;
      }
      va_point *q = add_point(v);
      if (!q) { rc = -1; break; }
      snprintf(q->path, sizeof q->path, "%.31s", paths[p].name);
      snprintf(q->coll, sizeof q->coll, "%.23s", cl->valuestring);
      snprintf(q->compress, sizeof q->compress, "%.15s", cm->valuestring);
      q->nranks = (int)nranks;
      q->bytes = bytes[b];
    }
  free(bytes);
  return rc;
}

static ncclzStatus simulate_all(const run_ctx *c, const va_path *paths, int np, va_points *v) {
  for (size_t i = 0; i < v->n; i++) {
    ncclzProgress("validate: simulating", i, v->n);
    const va_path *vp = find_path(paths, np, v->pt[i].path);
    if (!vp) return ncclzSetError(NCCLZ_ERR_ARG, "scenario measured: %s names path '%s', which paths does not define",
                                  v->pt[i].file, v->pt[i].path);
    ncclzStatus st = simulate(c->prof, vp, &v->pt[i]);
    if (st != NCCLZ_OK) return st;
  }
  ncclzProgress("validate: simulating", v->n, v->n);
  return NCCLZ_OK;
}

/* The coder a measured point ran with, for the best-coder comparison: plain NCCL counts as RAW;
 * auto is a policy, not a coder (-1). */
static int point_coder(const va_point *q) {
  if (!strcmp(q->compress, "off") || !strcmp(q->compress, "raw")) return NCCLZ_CODER_RAW;
  return ncclzCoderFromName(q->compress);
}

/* Whether two points are the same call: path, collective, ranks and size (any mode). */
static int same_call(const va_point *a, const va_point *b) {
  return !strcmp(a->path, b->path) && !strcmp(a->coll, b->coll) && a->nranks == b->nranks && a->bytes == b->bytes;
}

/* Best-coder agreement: for every run (measurement file) and (path, collective, ranks, size) it
 * measured with two coders or more, whether the coder fastest in the measurement is also fastest
 * in the replay. Within one run: across runs the socket paths drift by tens of percent (the
 * measurements' own spread below), enough to rank coders by the hour they ran at. */
static size_t best_coder_agreement(const va_points *v, size_t *groups) {
  size_t agree = 0;
  *groups = 0;
  for (size_t i = 0; i < v->n; i++) {
    const va_point *a = &v->pt[i];
    if (!a->has_meas || point_coder(a) < 0) continue;
    int first = 1, coders = 0;
    const va_point *best_meas = a, *best_sim = a;
    for (size_t k = 0; k < v->n; k++) {
      const va_point *b = &v->pt[k];
      if (!b->has_meas || point_coder(b) < 0 || !same_call(a, b) || strcmp(a->file, b->file)) continue;
      if (k < i) first = 0; /* the group is counted at its first point */
      coders |= 1 << point_coder(b);
      if (b->meas_us < best_meas->meas_us) best_meas = b;
      if (b->sim_us < best_sim->sim_us) best_sim = b;
    }
    if (!first || (coders & (coders - 1)) == 0) continue; /* one coder only: nothing to rank */
    (*groups)++;
    agree += point_coder(best_meas) == point_coder(best_sim);
  }
  return agree;
}

/* Run-to-run spread of the measurements themselves: for every point measured more than once
 * (the same path, collective, ranks, mode and size in several files or launch modes), max / min -
 * 1; the median over those points. No replay of one profile can be closer than about half of it
 * to all of a point's measurements, so it is the floor under the median error. */
static double measured_spread(const va_points *v, size_t *groups) {
  double *s = malloc((v->n ? v->n : 1) * sizeof *s);
  size_t n = 0;
  for (size_t i = 0; s && i < v->n; i++) {
    const va_point *a = &v->pt[i];
    if (!a->has_meas) continue;
    double lo = a->meas_us, hi = a->meas_us;
    int first = 1, k = 0;
    for (size_t j = 0; j < v->n && first; j++) {
      const va_point *b = &v->pt[j];
      if (!b->has_meas || !same_call(a, b) || strcmp(a->compress, b->compress)) continue;
      if (j < i) first = 0; /* the group is counted at its first point */
      lo = fmin(lo, b->meas_us), hi = fmax(hi, b->meas_us), k++;
    }
    if (first && k > 1) s[n++] = hi / lo - 1.0;
  }
  double med = n ? ncclzMedian(s, n) : NAN;
  free(s);
  *groups = n;
  return med;
}

static void summary(ncclzReport *r, const va_points *v, const char *looked, int nfiles) {
  size_t n_all, n_big, n_plain, n_comp, n_own;
  double all = median_abs_error(v, 0, VA_ALL, &n_all), big = median_abs_error(v, 1048576, VA_ALL, &n_big);
  double plain = median_abs_error(v, 0, VA_PLAIN, &n_plain), comp = median_abs_error(v, 0, VA_COMPRESSED, &n_comp);
  double own = median_abs_error(v, 0, VA_BY_NCCLZ, &n_own);
  cJSON *j = ncclzReportJson(r);
  cJSON_AddNumberToObject(j, "measured_files", nfiles);
  if (!nfiles) {
    ncclzReportNote(r, "No measurement file was found (looked for: %s), so there is nothing to compare: the table "
                       "below holds the simulator's predictions only. Record measurements on the GPU machine with "
                       "`ncclz perf ... --json bench/results/perf-<collective>-<path>.json` and run this again.", looked);
    cJSON_AddStringToObject(j, "measured_status", "no measurement file found");
    return;
  }
  ncclzReportText(r, "%d measurement file(s), %zu measured points. Median |simulated / measured - 1|: %.1f%% over all "
                     "points, %.1f%% over the %zu points of at least 1 MiB (target: 10%%).", nfiles, n_all,
                  100.0 * all, 100.0 * big, n_big);
  if (n_all) cJSON_AddNumberToObject(j, "median_abs_error", all);
  if (n_big) cJSON_AddNumberToObject(j, "median_abs_error_1mib", big);
  /* Plain points replay on links calibrated from the profile's plain curves, so their error is
   * mostly the measurement's drift from the calibration; the compressed ones test the replay. */
  if (n_plain && n_comp)
    ncclzReportText(r, "Plain NCCL points (compress off, and auto calls that REA kept RAW): median %.1f%% over %zu "
                       "(their links are calibrated on the profile's plain curves: this is mostly the calibration "
                       "against the measurement). Compressed points: median %.1f%% over %zu (the replay of frames, "
                       "codecs and overlap).", 100.0 * plain, n_plain,
                    100.0 * comp, n_comp);
  /* the executor's own runs (ncclz perf), without the nccl-tests numbers beside them */
  if (n_own && n_own < n_all)
    ncclzReportText(r, "Over the %zu points that ncclz perf measured (the executor's runs, nccl-tests' left out): "
                       "median %.1f%%.", n_own, 100.0 * own);
  if (n_own) {
    cJSON_AddNumberToObject(j, "median_abs_error_ncclz", own);
    cJSON_AddNumberToObject(j, "points_ncclz", (double)n_own);
  }
  if (n_plain) cJSON_AddNumberToObject(j, "median_abs_error_plain", plain);
  if (n_comp) cJSON_AddNumberToObject(j, "median_abs_error_compressed", comp);
  size_t repeated;
  double spread = measured_spread(v, &repeated);
  if (repeated) {
    ncclzReportText(r, "The measurements' own spread: %zu points were measured more than once (other runs or launch "
                       "modes); their max / min - 1 has a median of %.1f%%. A replay of one profile cannot come "
                       "closer than about half of that to all of them.", repeated, 100.0 * spread);
    cJSON_AddNumberToObject(j, "measured_spread_points", (double)repeated);
    cJSON_AddNumberToObject(j, "measured_spread_median", spread);
  }
  size_t groups, agree = best_coder_agreement(v, &groups);
  if (groups) {
    ncclzReportText(r, "Best coder: in %zu of %zu measured (run, path, collective, size) groups with two coders or more, "
                       "the coder fastest in the measurement is also fastest in the replay (%.0f%%; target: "
                       "90%%).", agree, groups, 100.0 * (double)agree / (double)groups);
    cJSON_AddNumberToObject(j, "best_coder_groups", (double)groups);
    cJSON_AddNumberToObject(j, "best_coder_agreement", (double)agree / (double)groups);
  }
}

ncclzStatus validate_check(run_ctx *c) {
  va_path paths[VA_MAX_PATHS];
  int np = 0;
  memset(paths, 0, sizeof paths);
  ncclzStatus st = parse_paths(c, paths, &np) ? NCCLZ_ERR_ARG : NCCLZ_OK;
  for (int i = 0; i < np; i++) ncclzSimScenarioFree(&paths[i].sc);
  return st;
}

ncclzStatus validate_files(ncclzReport *r, run_ctx *c, const char *const *files, int nfiles, const char *looked) {
  va_path paths[VA_MAX_PATHS];
  int np = 0;
  memset(paths, 0, sizeof paths);
  va_points v = {0};
  ncclzStatus st = parse_paths(c, paths, &np) ? NCCLZ_ERR_ARG : NCCLZ_OK;
  for (int i = 0; i < nfiles && st == NCCLZ_OK; i++) {
    const char *sep = strchr(files[i], '\t'); /* "FILE\tPATH" */
    char file[1200];
    snprintf(file, sizeof file, "%.*s", (int)(sep - files[i]), files[i]);
    char shown[1200]; /* a file measure wrote: where it will be once the report is in place */
    report_shown_path(r, file, shown, sizeof shown);
    if (read_perf_file(file, sep + 1, &v)) st = NCCLZ_ERR_ARG;
    else run_input(c, "measurement", shown, "", sep + 1);
  }
  if (st == NCCLZ_OK && !nfiles && predictions(c, paths, np, &v)) st = NCCLZ_ERR_ARG;
  if (st == NCCLZ_OK) st = simulate_all(c, paths, np, &v);
  if (st == NCCLZ_OK) {
    ncclzReportHeading(r, "Simulated against measured");
    summary(r, &v, looked, nfiles);
    busbw_plot(r, &v);
    st = points_table(r, &v);
  }
  for (int i = 0; i < np; i++) ncclzSimScenarioFree(&paths[i].sc);
  free(v.pt);
  return st;
}

ncclzStatus kind_validate(ncclzReport *r, run_ctx *c) {
  char(*files)[512] = calloc(VA_MAX_FILES, 512), (*paths)[32] = calloc(VA_MAX_FILES, 32);
  const char **list = calloc(VA_MAX_FILES, sizeof *list);
  char(*joined)[560] = calloc(VA_MAX_FILES, 560);
  sbuf looked;
  sb_init(&looked);
  int n = 0;
  ncclzStatus st = !files || !paths || !list || !joined ? ncclzSetError(NCCLZ_ERR_NOMEM, "out of memory")
                   : measured_files(c, files, paths, &n, &looked) ? NCCLZ_ERR_ARG : NCCLZ_OK;
  for (int i = 0; i < n && st == NCCLZ_OK; i++) {
    snprintf(joined[i], 560, "%s\t%s", files[i], paths[i]);
    list[i] = joined[i];
  }
  if (st == NCCLZ_OK) st = validate_files(r, c, list, n, looked.len ? sb_str(&looked) : "(no \"measured\" entries)");
  sb_free(&looked);
  free(files), free(paths), free(list), free(joined);
  return st;
}
#endif

#ifndef NCCLZ_HAVE_SIM
ncclzStatus kind_validate(ncclzReport *r, run_ctx *c) { return validate_files(r, c, NULL, 0, ""); }
#endif
