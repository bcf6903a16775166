/* Calibration fits (pure C): time = alpha + bytes / beta by least squares on the relative error,
 * residuals per point, exposed time of codec intervals outside the communication intervals, and
 * the names and NCCL environments of the measured paths. */
#include "ncclz/calibrate.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int cmp_point(const void *a, const void *b) {
  const ncclzCalPoint *x = a, *y = b;
  return (x->bytes > y->bytes) - (x->bytes < y->bytes);
}

/* us per byte -> GB/s (1e9 bytes/s): bytes/(beta*1e9) s = bytes/(beta*1e3) us. */
static double gbps_of(double us_per_byte) { return 1e-3 / us_per_byte; }

ncclzStatus ncclzCalFitLinear(const ncclzCalPoint *pts, size_t n, ncclzCalFit *out) {
  memset(out, 0, sizeof *out);
  if (n == 0) return ncclzSetError(NCCLZ_ERR_ARG, "fit: no points");
  if (n > NCCLZ_CAL_MAX_POINTS) return ncclzSetError(NCCLZ_ERR_ARG, "fit: %zu points (at most %d)", n, NCCLZ_CAL_MAX_POINTS);
  ncclzCalPoint p[NCCLZ_CAL_MAX_POINTS];
  for (size_t i = 0; i < n; i++) {
    if (!(isfinite(pts[i].bytes) && pts[i].bytes > 0))
      return ncclzSetError(NCCLZ_ERR_ARG, "fit: point %zu: bytes must be > 0", i);
    if (!(isfinite(pts[i].us) && pts[i].us > 0))
      return ncclzSetError(NCCLZ_ERR_ARG, "fit: point %zu: us must be > 0", i);
    p[i] = pts[i];
  }
  qsort(p, n, sizeof p[0], cmp_point);
  /* Weighted least squares, w = 1/y^2: minimizes sum ((a + b x - y) / y)^2. */
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
  int distinct = p[n - 1].bytes > p[0].bytes;
  if (distinct && det > 1e-12 * sw * sxx) {
    b = (sw * sxy - sx * sy) / det;
    a = (sy - b * sx) / sw;
  }
  if (!distinct || !(det > 1e-12 * sw * sxx) || a < 0) { /* through the origin */
    a = 0;
    b = sxy / sxx;
  }
  if (!(b > 0) || !isfinite(b))
    return ncclzSetError(NCCLZ_ERR_ARG, "fit: time does not grow with bytes (%g us at %g B .. %g us at %g B)",
                         p[0].us, p[0].bytes, p[n - 1].us, p[n - 1].bytes);
  out->alpha_us = a;
  out->beta_gbps = gbps_of(b);
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
  return NCCLZ_OK;
}

double ncclzCalFitEval(const ncclzCalFit *f, double bytes) { return f->alpha_us + bytes / (f->beta_gbps * 1e3); }

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
