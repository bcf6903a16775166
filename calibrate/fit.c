/* Calibration fits (pure C): time = alpha + bytes / beta by least squares on the relative error,
 * residuals per point, exposed time of codec intervals outside the communication intervals, and
 * the names and NCCL environments of the measured paths. */
#include "cal_internal.h"
#include "ncclz/calibrate.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static int cmp_point(const void *a, const void *b) {
  const ncclzCalPoint *x = a, *y = b;
  return (x->bytes > y->bytes) - (x->bytes < y->bytes);
}

/* us per byte -> GB/s (1e9 bytes/s): bytes/(beta*1e9) s = bytes/(beta*1e3) us. */
static double gbps_of(double us_per_byte) { return 1e-3 / us_per_byte; }

/* Checks and sorts the points into p. */
static ncclzStatus prepare(const ncclzCalPoint *pts, size_t n, ncclzCalPoint *p) {
  if (n == 0) return ncclzSetError(NCCLZ_ERR_ARG, "fit: no points");
  if (n > NCCLZ_CAL_MAX_POINTS) return ncclzSetError(NCCLZ_ERR_ARG, "fit: %zu points (at most %d)", n, NCCLZ_CAL_MAX_POINTS);
  for (size_t i = 0; i < n; i++) {
    if (!(isfinite(pts[i].bytes) && pts[i].bytes > 0))
      return ncclzSetError(NCCLZ_ERR_ARG, "fit: point %zu: bytes must be > 0", i);
    if (!(isfinite(pts[i].us) && pts[i].us > 0))
      return ncclzSetError(NCCLZ_ERR_ARG, "fit: point %zu: us must be > 0", i);
    p[i] = pts[i];
  }
  qsort(p, n, sizeof p[0], cmp_point);
  return NCCLZ_OK;
}

/* One line over sorted points p[0..n): weighted least squares, w = 1/y^2, which minimizes
 * sum ((a + b x - y) / y)^2. Flags: LINE_NEG_ALPHA keeps a negative intercept (a segment that
 * starts at some size may have one; a line that reaches 0 bytes may not: it is refitted through
 * the origin); LINE_FLAT turns a slope <= 0 into a flat line (the latency-bound small sizes).
 * Returns 0 if there is no positive slope where one is needed. */
enum { LINE_NEG_ALPHA = 1, LINE_FLAT = 2 };
#define FLAT_US_PER_BYTE 1e-9 /* 1e6 GB/s: flat for any real size, and still a finite bandwidth */

static int line_fit(const ncclzCalPoint *p, size_t n, int flags, double *a_out, double *b_out) {
  double sw = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (size_t i = 0; i < n; i++) {
    double w = 1.0 / (p[i].us * p[i].us);
    sw += w;
    sx += w * p[i].bytes;
    sy += w * p[i].us;
    sxx += w * p[i].bytes * p[i].bytes;
    sxy += w * p[i].bytes * p[i].us;
  }
  double a = 0, b = 0;
  double det = sw * sxx - sx * sx;
  int solvable = p[n - 1].bytes > p[0].bytes && det > 1e-12 * sw * sxx;
  if (solvable) {
    b = (sw * sxy - sx * sy) / det;
    a = (sy - b * sx) / sw;
  }
  if ((flags & LINE_FLAT) && solvable && !(b > 0)) {
    b = FLAT_US_PER_BYTE;
    a = (sy - b * sx) / sw;
  }
  if (!solvable || (a < 0 && !(flags & LINE_NEG_ALPHA))) { /* through the origin */
    a = 0;
    b = sxy / sxx;
  }
  *a_out = a;
  *b_out = b;
  return b > 0 && isfinite(b);
}

/* Worst |relative residual| of the line (a, b) over p[0..n), each residual divided by its
 * point's tolerance (tol from NCCLZ_CAL_MIN_FIT_BYTES up, tol_small below): within both when <= 1. */
static double worst_resid(const ncclzCalPoint *p, size_t n, double a, double b, double tol, double tol_small) {
  double w = 0;
  for (size_t i = 0; i < n; i++) {
    double r = fabs((a + b * p[i].bytes - p[i].us) / p[i].us);
    w = fmax(w, r / (p[i].bytes >= NCCLZ_CAL_MIN_FIT_BYTES ? tol : tol_small));
  }
  return w;
}

/* Points, residuals and their maxima, once the segments are set. */
static void finish(ncclzCalFit *out, const ncclzCalPoint *p, size_t n) {
  out->beta_gbps = out->seg[out->n_seg - 1].beta_gbps;
  /* LogGP's view: the latency is what the smallest message costs beyond its bytes at the
   * large-message bandwidth (a segment's own intercept can be 0 or negative). */
  out->alpha_us = fmax(0.0, ncclzCalFitEval(out, p[0].bytes) - p[0].bytes / (out->beta_gbps * 1e3));
  out->n = (uint32_t)n;
  for (size_t i = 0; i < n; i++) {
    out->bytes[i] = p[i].bytes;
    out->us[i] = p[i].us;
    out->resid[i] = (ncclzCalFitEval(out, p[i].bytes) - p[i].us) / p[i].us;
    double r = fabs(out->resid[i]);
    if (r > out->max_resid) out->max_resid = r;
    if (p[i].bytes >= NCCLZ_CAL_MIN_FIT_BYTES) {
      out->n_1m++;
      if (r > out->max_resid_1m) out->max_resid_1m = r;
    }
  }
}

static ncclzStatus no_slope(const ncclzCalPoint *p, size_t n) {
  return ncclzSetError(NCCLZ_ERR_ARG, "fit: time does not grow with bytes (%g us at %g B .. %g us at %g B)", p[0].us,
                       p[0].bytes, p[n - 1].us, p[n - 1].bytes);
}

ncclzStatus ncclzCalFitLinear(const ncclzCalPoint *pts, size_t n, ncclzCalFit *out) {
  memset(out, 0, sizeof *out);
  ncclzCalPoint p[NCCLZ_CAL_MAX_POINTS];
  ncclzStatus st = prepare(pts, n, p);
  if (st) return st;
  double a, b;
  if (!line_fit(p, n, 0, &a, &b)) return no_slope(p, n);
  out->n_seg = 1;
  out->seg[0] = (ncclzCalSegment){p[0].bytes, a, gbps_of(b)};
  finish(out, p, n);
  return NCCLZ_OK;
}

/* Sum of squared relative residuals of the line (a, b) over p[0..n). */
static double sq_resid(const ncclzCalPoint *p, size_t n, double a, double b) {
  double s = 0;
  for (size_t i = 0; i < n; i++) {
    double r = (a + b * p[i].bytes - p[i].us) / p[i].us;
    s += r * r;
  }
  return s;
}

/* The fewest segments within tolerance tol over sorted p[0..n), by dynamic programming over the
 * distinct sizes (ties: the smaller sum of squared residuals). A segment never splits points of
 * one size. Only the largest sizes must show a bandwidth; smaller segments may be flat
 * (latency-bound); the smallest segment reaches 0 bytes, so no negative intercept there.
 * Returns the count, MAX + 1 when more are needed, or 0 when the largest sizes show no slope. */
static uint32_t cut_segments(const ncclzCalPoint *p, size_t n, double tol, double tol_small, ncclzCalSegment *seg) {
  size_t g[NCCLZ_CAL_MAX_POINTS + 1], m = 0; /* g[k]: first point of the k-th distinct size */
  for (size_t i = 0; i < n; i++)
    if (!i || p[i].bytes != p[i - 1].bytes) g[m++] = i;
  g[m] = n;
  uint32_t count[NCCLZ_CAL_MAX_POINTS + 1];
  double cost[NCCLZ_CAL_MAX_POINTS + 1];
  size_t from[NCCLZ_CAL_MAX_POINTS + 1];
  ncclzCalSegment best[NCCLZ_CAL_MAX_POINTS + 1];
  count[0] = 0;
  cost[0] = 0;
  for (size_t j = 1; j <= m; j++) {
    count[j] = UINT32_MAX;
    for (size_t i = 0; i < j; i++) {
      if (count[i] == UINT32_MAX) continue;
      int flags = (i ? LINE_NEG_ALPHA : 0) | (j < m ? LINE_FLAT : 0);
      double a, b;
      const ncclzCalPoint *q = p + g[i];
      size_t len = g[j] - g[i];
      if (!line_fit(q, len, flags, &a, &b) || worst_resid(q, len, a, b, tol, tol_small) > 1.0) continue;
      double c = cost[i] + sq_resid(q, len, a, b);
      if (count[i] + 1 < count[j] || (count[i] + 1 == count[j] && c < cost[j])) {
        count[j] = count[i] + 1;
        cost[j] = c;
        from[j] = i;
        best[j] = (ncclzCalSegment){q[0].bytes, a, gbps_of(b)};
      }
    }
  }
  if (count[m] == UINT32_MAX) { /* a single size that shows no slope */
    double a, b;
    return line_fit(p, n, 0, &a, &b) ? NCCLZ_CAL_MAX_SEGMENTS + 1 : 0;
  }
  if (count[m] > NCCLZ_CAL_MAX_SEGMENTS) return NCCLZ_CAL_MAX_SEGMENTS + 1;
  uint32_t k = count[m];
  for (size_t j = m; j > 0; j = from[j]) seg[--k] = best[j];
  return count[m];
}

ncclzStatus ncclzCalFitPiecewise(const ncclzCalPoint *pts, size_t n, double tol, ncclzCalFit *out) {
  memset(out, 0, sizeof *out);
  ncclzCalPoint p[NCCLZ_CAL_MAX_POINTS];
  ncclzStatus st = prepare(pts, n, p);
  if (st) return st;
  if (!(tol > 0)) return ncclzSetError(NCCLZ_ERR_ARG, "fit: tolerance must be > 0");
  /* When the segments run out (noisy points), the tolerance below 1 MiB gives first (up to
   * NCCLZ_CAL_SMALL_TOL_FACTOR times looser, where the target does not bind), then all of it by
   * 25% steps: on the H200 points this keeps almost every curve as it was and lowers the worst
   * residual from 1 MiB up. */
  uint32_t k;
  double small = 1.0;
  while ((k = cut_segments(p, n, tol, tol * small, out->seg)) > NCCLZ_CAL_MAX_SEGMENTS) {
    if (small < NCCLZ_CAL_SMALL_TOL_FACTOR) small = fmin(2.0 * small, NCCLZ_CAL_SMALL_TOL_FACTOR);
    else tol *= 1.25;
  }
  if (k == 0) return no_slope(p, n);
  out->n_seg = k;
  out->tol_used = tol;
  out->tol_small_used = tol * small;
  finish(out, p, n);
  return NCCLZ_OK;
}

double ncclzCalFitEval(const ncclzCalFit *f, double bytes) {
  uint32_t i = 0;
  while (i + 1 < f->n_seg && bytes >= f->seg[i + 1].from_bytes) i++;
  const ncclzCalSegment *s = &f->seg[i];
  return s->alpha_us + bytes / (s->beta_gbps * 1e3);
}

typedef struct {
  double a, b;
} ival;

static int cmp_ival(const void *x, const void *y) {
  const ival *p = x, *q = y;
  return (p->a > q->a) - (p->a < q->a);
}

double ncclzCalExposed(const double *comm_ts, const double *comm_dur, size_t n_comm, const double *ts,
                       const double *dur, size_t n) {
  /* Union of the comm intervals, sorted and merged. */
  ival *u = n_comm ? malloc(n_comm * sizeof *u) : NULL;
  size_t m = 0;
  if (n_comm && !u) return -1;
  for (size_t i = 0; i < n_comm; i++)
    if (comm_dur[i] > 0) u[m++] = (ival){comm_ts[i], comm_ts[i] + comm_dur[i]};
  if (m) qsort(u, m, sizeof *u, cmp_ival);
  size_t k = 0;
  for (size_t i = 0; i < m; i++) {
    if (k && u[i].a <= u[k - 1].b) {
      if (u[i].b > u[k - 1].b) u[k - 1].b = u[i].b;
    } else {
      u[k++] = u[i];
    }
  }
  double exposed = 0;
  for (size_t i = 0; i < n; i++) {
    if (!(dur[i] > 0)) continue;
    double a = ts[i], b = ts[i] + dur[i], covered = 0;
    for (size_t j = 0; j < k; j++) {
      double lo = a > u[j].a ? a : u[j].a, hi = b < u[j].b ? b : u[j].b;
      if (hi > lo) covered += hi - lo;
    }
    exposed += (b - a) - covered;
  }
  free(u);
  return exposed;
}

static const char *path_names[NCCLZ_CAL_PATH_COUNT] = {"nvlink", "shm", "socket", "socket1x1", "socket4x4"};

const char *ncclzCalPathName(ncclzCalPath p) {
  return (unsigned)p < NCCLZ_CAL_PATH_COUNT ? path_names[p] : "?";
}

int ncclzCalPathFromName(const char *name) {
  for (int i = 0; i < NCCLZ_CAL_PATH_COUNT; i++)
    if (!strcmp(name, path_names[i])) return i;
  return -1;
}

#define SOCKET_ENV "NCCL_NVLS_ENABLE=0", "NCCL_P2P_DISABLE=1", "NCCL_SHM_DISABLE=1", "NCCL_IB_DISABLE=1", \
                   "NCCL_SOCKET_IFNAME=lo"
static const char *const env_nvlink[] = {"NCCL_NVLS_ENABLE=0", NULL};
static const char *const env_shm[] = {"NCCL_NVLS_ENABLE=0", "NCCL_P2P_DISABLE=1", NULL};
static const char *const env_socket[] = {SOCKET_ENV, NULL};
static const char *const env_socket11[] = {SOCKET_ENV, "NCCL_NSOCKS_PERTHREAD=1", "NCCL_SOCKET_NTHREADS=1", NULL};
static const char *const env_socket44[] = {SOCKET_ENV, "NCCL_NSOCKS_PERTHREAD=4", "NCCL_SOCKET_NTHREADS=4", NULL};

const char *const *ncclzCalPathEnv(ncclzCalPath p) {
  switch (p) {
  case NCCLZ_CAL_NVLINK: return env_nvlink;
  case NCCLZ_CAL_SHM: return env_shm;
  case NCCLZ_CAL_SOCKET: return env_socket;
  case NCCLZ_CAL_SOCKET1X1: return env_socket11;
  case NCCLZ_CAL_SOCKET4X4: return env_socket44;
  default: return env_nvlink;
  }
}
