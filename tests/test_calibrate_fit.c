/* The calibration fits and the profile writer of `ncclz calibrate` (no GPU needed): synthetic
 * points with known alpha/beta are recovered, noisy points give the documented residuals, the
 * written profile loads with ncclzProfileLoad, and `ncclz calibrate --from-points` round-trips. */
#include "ncclz/calibrate.h"
#include "ncclz/model.h"
#include "testutil.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static double rel(double a, double b) { return fabs(a - b) / fabs(b); }
static double line(double alpha, double beta, double bytes) { return alpha + bytes / (beta * 1e3); }

static void test_exact(void) {
  const double alpha[3] = {12.5, 0.0, 250.0}, beta[3] = {300.0, 3.6, 0.9};
  for (int k = 0; k < 3; k++) {
    ncclzCalPoint p[21];
    size_t n = 0;
    /* 1 KiB .. 1 GiB, given in reverse order: the fit sorts them */
    for (double b = 1024.0 * 1024 * 1024; b >= 1024; b /= 2) p[n++] = (ncclzCalPoint){b, line(alpha[k], beta[k], b)};
    ncclzCalFit f;
    CHECK(ncclzCalFitLinear(p, n, &f) == NCCLZ_OK, "%s", ncclzLastError());
    CHECK(k == 1 ? f.alpha_us < 1e-9 : rel(f.alpha_us, alpha[k]) < 1e-6, "alpha %.9g vs %g", f.alpha_us, alpha[k]);
    CHECK(rel(f.beta_gbps, beta[k]) < 1e-6, "beta %.9g vs %g", f.beta_gbps, beta[k]);
    CHECK(f.n == n && f.n_1m == 11, "n %u n_1m %u", f.n, f.n_1m);
    CHECK(f.max_resid < 1e-9 && f.max_resid_1m < 1e-9, "resid %g", f.max_resid);
    CHECK(f.bytes[0] == 1024 && f.bytes[n - 1] == 1024.0 * 1024 * 1024, "sorted");
  }
}

/* Alternating +-2% on an exact line: the relative least squares keeps the line (the noise is
 * symmetric in the weights to first order), so every residual is close to -+2% and the worst one
 * over >= 1 MiB is about 2%: within the 5% tolerance. A bent curve (two regimes) is not. */
static void test_noisy(void) {
  ncclzCalPoint p[32];
  size_t n = 0;
  for (double b = 65536; b <= 64.0 * 1024 * 1024 * 1024; b *= 2, n++) {
    if (n == 16) break;
    double eps = (n % 2) ? 0.02 : -0.02;
    p[n] = (ncclzCalPoint){b, line(20.0, 50.0, b) * (1 + eps)};
  }
  ncclzCalFit f;
  CHECK(ncclzCalFitLinear(p, n, &f) == NCCLZ_OK, "%s", ncclzLastError());
  CHECK(rel(f.beta_gbps, 50.0) < 0.01, "beta %g", f.beta_gbps);
  CHECK(f.max_resid_1m > 0.015 && f.max_resid_1m < 0.025, "max_resid_1m %g (documented ~2%%)", f.max_resid_1m);
  CHECK(f.max_resid_1m <= NCCLZ_CAL_TOLERANCE, "within tolerance");
  for (uint32_t i = 0; i < f.n; i++) {
    double r = (ncclzCalFitEval(&f, f.bytes[i]) - f.us[i]) / f.us[i];
    CHECK(fabs(r - f.resid[i]) < 1e-12, "resid[%u] %g vs %g", i, f.resid[i], r);
  }
  /* Bent: 10 GB/s below 16 MiB, 5 GB/s above (e.g. a cache falling out). */
  n = 0;
  for (double b = 1 << 20; b <= 1024.0 * 1024 * 1024; b *= 2)
    p[n++] = (ncclzCalPoint){b, b < 16 << 20 ? line(5, 10, b) : line(5, 10, 16 << 20) + (b - (16 << 20)) / 5e3};
  CHECK(ncclzCalFitLinear(p, n, &f) == NCCLZ_OK, "%s", ncclzLastError());
  CHECK(f.max_resid_1m > NCCLZ_CAL_TOLERANCE, "bent curve: %g should miss the tolerance", f.max_resid_1m);
  /* ... but two segments fit it exactly; the noisy line stays one segment. */
  CHECK(ncclzCalFitPiecewise(p, n, NCCLZ_CAL_TOLERANCE, &f) == NCCLZ_OK, "%s", ncclzLastError());
  CHECK(f.n_seg == 2 && f.max_resid < 1e-9, "bent: %u segments, resid %g", f.n_seg, f.max_resid);
  CHECK(rel(f.seg[0].beta_gbps, 10) < 1e-6 && rel(f.seg[0].alpha_us, 5) < 1e-6 && rel(f.beta_gbps, 5) < 1e-6,
        "bent segments %g %g %g", f.seg[0].alpha_us, f.seg[0].beta_gbps, f.beta_gbps);
  CHECK(f.seg[1].from_bytes == (16 << 20) || f.seg[1].from_bytes == (32 << 20), "break at %g", f.seg[1].from_bytes);
  for (uint32_t i = 0; i < n; i++)
    CHECK(rel(ncclzCalFitEval(&f, p[i].bytes), p[i].us) < 1e-9, "bent eval at %g", p[i].bytes);
  n = 0;
  for (double b = 65536; n < 16; b *= 2, n++) p[n] = (ncclzCalPoint){b, line(20.0, 50.0, b) * (n % 2 ? 1.02 : 0.98)};
  CHECK(ncclzCalFitPiecewise(p, n, NCCLZ_CAL_TOLERANCE, &f) == NCCLZ_OK && f.n_seg == 1, "noisy: %u segments", f.n_seg);
  /* Points that need more than 8 segments at 5% (a zig-zag of +-30%) relax the tolerance. */
  n = 0;
  for (double b = 1024; n < 21; b *= 2, n++) p[n] = (ncclzCalPoint){b, line(20.0, 50.0, b) * (n % 2 ? 1.3 : 0.7)};
  CHECK(ncclzCalFitPiecewise(p, n, NCCLZ_CAL_TOLERANCE, &f) == NCCLZ_OK, "%s", ncclzLastError());
  CHECK(f.n_seg <= NCCLZ_CAL_MAX_SEGMENTS && f.tol_used > NCCLZ_CAL_TOLERANCE &&
            f.max_resid_1m <= f.tol_used + 1e-12 && f.max_resid <= f.tol_small_used + 1e-12 &&
            f.tol_small_used == NCCLZ_CAL_SMALL_TOL_FACTOR * f.tol_used,
        "zig-zag: %u segments at tol %g (%g below 1 MiB), resid %g (%g from 1 MiB)", f.n_seg, f.tol_used,
        f.tol_small_used, f.max_resid, f.max_resid_1m);
  /* A zig-zag of +-12% over 18 sizes below 1 MiB, a clean line from 1 MiB up: the small sizes'
   * tolerance gives and the 5% holds where the target binds. */
  n = 0;
  for (double b = 1024; b < 1 << 20; b *= 1.5, n++) p[n] = (ncclzCalPoint){b, line(20.0, 50.0, b) * (n % 2 ? 1.12 : 0.88)};
  const uint32_t n_small = n;
  for (double b = 1 << 20; b <= 1 << 30; b *= 2) p[n++] = (ncclzCalPoint){b, line(20.0, 50.0, b)};
  CHECK(ncclzCalFitPiecewise(p, n, NCCLZ_CAL_TOLERANCE, &f) == NCCLZ_OK, "%s", ncclzLastError());
  CHECK(f.n_seg <= NCCLZ_CAL_MAX_SEGMENTS && f.tol_used == NCCLZ_CAL_TOLERANCE && f.max_resid_1m <= NCCLZ_CAL_TOLERANCE &&
            f.tol_small_used > NCCLZ_CAL_TOLERANCE && f.max_resid <= f.tol_small_used + 1e-12,
        "small zig-zag: %u segments, tol %g / %g below 1 MiB, resid %g from 1 MiB, %g in all", f.n_seg, f.tol_used,
        f.tol_small_used, f.max_resid_1m, f.max_resid);
  /* clean points keep one tolerance */
  CHECK(ncclzCalFitPiecewise(p + n_small, n - n_small, NCCLZ_CAL_TOLERANCE, &f) == NCCLZ_OK && f.tol_small_used == f.tol_used,
        "clean: tol %g / %g", f.tol_used, f.tol_small_used);
}

static void test_edges(void) {
  ncclzCalFit f;
  ncclzCalPoint p[3] = {{1e6, 10}, {2e6, 19}, {4e6, 37}}; /* intercept would be 1: fine */
  CHECK(ncclzCalFitLinear(p, 3, &f) == NCCLZ_OK && rel(f.alpha_us, 1) < 1e-9, "alpha %g", f.alpha_us);
  ncclzCalPoint q[3] = {{1e6, 9}, {2e6, 19}, {4e6, 39}}; /* intercept -1: clamped to 0 */
  CHECK(ncclzCalFitLinear(q, 3, &f) == NCCLZ_OK && f.alpha_us == 0 && f.beta_gbps > 0, "clamp alpha %g", f.alpha_us);
  ncclzCalPoint one = {4096, 2};
  CHECK(ncclzCalFitLinear(&one, 1, &f) == NCCLZ_OK && f.alpha_us == 0 && rel(f.beta_gbps, 4096 / 2e3) < 1e-12,
        "one point beta %g", f.beta_gbps);
  ncclzCalPoint flat[2] = {{1e6, 10}, {2e6, 5}};
  CHECK(ncclzCalFitLinear(flat, 2, &f) == NCCLZ_ERR_ARG, "decreasing time is an error");
  CHECK(strstr(ncclzLastError(), "does not grow") != NULL, "%s", ncclzLastError());
  ncclzCalPoint bad[1] = {{0, 1}};
  CHECK(ncclzCalFitLinear(bad, 1, &f) == NCCLZ_ERR_ARG, "bytes 0");
  CHECK(ncclzCalFitLinear(p, 0, &f) == NCCLZ_ERR_ARG, "no points");

  /* Exposed time: comm [0,10) u [5,15) u [20,30); codec [8,22) -> 5 outside, [30,35) -> 5. */
  double cts[3] = {0, 5, 20}, cdur[3] = {10, 10, 10}, ts[3] = {8, 30, 1}, dur[3] = {14, 5, 0};
  CHECK(fabs(ncclzCalExposed(cts, cdur, 3, ts, dur, 3) - 10) < 1e-12, "exposed %g",
        ncclzCalExposed(cts, cdur, 3, ts, dur, 3));
  CHECK(fabs(ncclzCalExposed(NULL, NULL, 0, ts, dur, 2) - 19) < 1e-12, "no comm: all exposed");

  CHECK(ncclzCalPathFromName("socket4x4") == NCCLZ_CAL_SOCKET4X4 && ncclzCalPathFromName("ib") < 0, "path names");
  int nvls = 0, p2p = 0;
  for (const char *const *e = ncclzCalPathEnv(NCCLZ_CAL_SHM); *e; e++) {
    nvls |= !strcmp(*e, "NCCL_NVLS_ENABLE=0");
    p2p |= !strcmp(*e, "NCCL_P2P_DISABLE=1");
  }
  CHECK(nvls && p2p, "shm env");
}

/* A synthetic points document: codec lines, sendrecv on nvlink and socket (no shm), two
 * collectives, overlap on nvlink and socket for fixedlen only. */
static char *points_doc(void) {
  cJSON *root = cJSON_CreateObject();
  cJSON_AddNumberToObject(root, "version", 1);
  cJSON *m = cJSON_AddObjectToObject(root, "metadata");
  cJSON_AddStringToObject(m, "device", "NVIDIA H200 (2x, test)");
  cJSON_AddStringToObject(m, "driver", "580.65.06");
  cJSON_AddStringToObject(m, "cuda", "13.0");
  cJSON_AddStringToObject(m, "nccl", "2.28.3");
  cJSON_AddStringToObject(m, "date", "2026-11-30");
  cJSON_AddStringToObject(m, "method", "synthetic points (test_calibrate_fit)");
  cJSON *codecs = cJSON_AddArrayToObject(root, "codecs");
  static const char *coders[2] = {"fixedlen", "huffman"}, *classes[3] = {"qsgd", "eb_lorenzo", "none"};
  for (int c = 0; c < 2; c++)
    for (int k = 0; k < 3; k++) {
      cJSON *e = cJSON_CreateObject();
      cJSON_AddStringToObject(e, "coder", coders[c]);
      cJSON_AddStringToObject(e, "class", classes[k]);
      cJSON *enc = cJSON_AddArrayToObject(e, "encode"), *dec = cJSON_AddArrayToObject(e, "decode");
      for (double b = 65536; b <= 64 << 20; b *= 4) {
        double pe[2] = {b, line(4 + c, 200.0 / (1 + c + k), b)}, pd[2] = {b, line(5 + c, 150.0 / (1 + c + k), b)};
        cJSON_AddItemToArray(enc, cJSON_CreateDoubleArray(pe, 2));
        cJSON_AddItemToArray(dec, cJSON_CreateDoubleArray(pd, 2));
      }
      cJSON_AddItemToArray(codecs, e);
    }
  cJSON *sr = cJSON_AddArrayToObject(root, "sendrecv"), *co = cJSON_AddArrayToObject(root, "collectives");
  static const char *paths[2] = {"nvlink", "socket"};
  const double a[2] = {15, 24}, bw[2] = {320, 3.6};
  for (int p = 0; p < 2; p++) {
    cJSON *e = cJSON_CreateObject(), *pts;
    cJSON_AddStringToObject(e, "path", paths[p]);
    pts = cJSON_AddArrayToObject(e, "points");
    for (double b = 1024; b <= 1024.0 * 1024 * 1024; b *= 2) {
      double pt[2] = {b, line(a[p], bw[p], b)};
      cJSON_AddItemToArray(pts, cJSON_CreateDoubleArray(pt, 2));
    }
    cJSON_AddItemToArray(sr, e);
    for (int c = 0; c < 2; c++) {
      e = cJSON_CreateObject();
      cJSON_AddStringToObject(e, "path", paths[p]);
      cJSON_AddStringToObject(e, "collective", c ? "allgather" : "allreduce");
      pts = cJSON_AddArrayToObject(e, "points");
      for (double b = 1024; b <= 1024.0 * 1024 * 1024; b *= 4) {
        double pt[2] = {b, line(2 * a[p], bw[p] / (2 - c), b)};
        cJSON_AddItemToArray(pts, cJSON_CreateDoubleArray(pt, 2));
      }
      cJSON_AddItemToArray(co, e);
    }
  }
  cJSON *ov = cJSON_AddArrayToObject(root, "overlap");
  /* host time per unit: medians 11 and 55 once the first call of each path, which paid for NCCL's
   * connections (thousands of us a unit), is left out; with it the plain medians are 11.5 and 62.5 */
  static const double unit_us[2][5] = {{5000, 12, 10, 11, 11}, {9000, 70, 40, 55, 55}};
  for (int p = 0; p < 2; p++)
    for (int k = 0; k < 5; k++) { /* the interface on a line: 20 us + 2 TB/s, 300 us + 500 GB/s */
      int small = k == 4; /* a 4 MiB call, codec all exposed (the pipeline's fill): no lambda */
      double b = small ? 4.0 * 1048576 : (double)(16u << 20) * (1 << (2 * k));
      cJSON *e = cJSON_CreateObject();
      cJSON_AddStringToObject(e, "path", paths[p]);
      cJSON_AddStringToObject(e, "coder", "fixedlen");
      cJSON_AddNumberToObject(e, "bytes", b);
      cJSON_AddNumberToObject(e, "encode_us", 1000);
      cJSON_AddNumberToObject(e, "encode_exposed_us", small ? 1000 : p ? 150 : 900);
      cJSON_AddNumberToObject(e, "decode_us", 1000);
      cJSON_AddNumberToObject(e, "decode_exposed_us", small ? 1000 : p ? 250 : 1000);
      cJSON_AddNumberToObject(e, "interface_us", p ? line(300, 500, b) : line(20, 2000, b));
      cJSON_AddNumberToObject(e, "unit_host_us", unit_us[p][k]);
      cJSON_AddItemToArray(ov, e);
    }
  char *s = cJSON_Print(root);
  cJSON_Delete(root);
  return s;
}

/* The CLI round trip of a points document, when the ncclz binary sits next to tests/ (the build
 * tree): --from-points writes a loadable profile, and the exit codes hold. */
static void cli_round_trip(const char *dir, const char *doc) {
  char bin[4200], pts[600], out[600], cmd[9000];
  if (!tu_ncclz_binary(bin, sizeof bin)) return;
  snprintf(pts, sizeof pts, "%s/points.json", dir);
  snprintf(out, sizeof out, "%s/cli-profile.json", dir);
  tu_write_text(pts, doc);
  snprintf(cmd, sizeof cmd, "'%s' calibrate --from-points '%s' --out '%s' 2>/dev/null", bin, pts, out);
  int rc = system(cmd);
  CHECK(WIFEXITED(rc) && WEXITSTATUS(rc) == 0, "--from-points rc %d", rc);
  ncclzProfile *p = malloc(sizeof *p);
  CHECK(ncclzProfileLoad(out, p) == NCCLZ_OK, "CLI profile: %s", ncclzLastError());
  free(p);
  snprintf(cmd, sizeof cmd, "'%s' calibrate --from-points '%s' 2>/dev/null", bin, pts);
  rc = system(cmd);
  CHECK(WIFEXITED(rc) && WEXITSTATUS(rc) == 2, "no --out: rc %d", rc);
  snprintf(cmd, sizeof cmd, "'%s' calibrate --paths nvlink,ib --out '%s' 2>/dev/null", bin, out);
  rc = system(cmd);
  CHECK(WIFEXITED(rc) && WEXITSTATUS(rc) == 2, "bad path: rc %d", rc);
  snprintf(cmd, sizeof cmd, "'%s' calibrate --help >/dev/null", bin);
  rc = system(cmd);
  CHECK(WIFEXITED(rc) && WEXITSTATUS(rc) == 0, "--help: rc %d", rc);
#ifndef NCCLZ_HAVE_CALIBRATE_GPU
  snprintf(cmd, sizeof cmd, "'%s' calibrate --out '%s' 2>/dev/null", bin, out);
  rc = system(cmd);
  CHECK(WIFEXITED(rc) && WEXITSTATUS(rc) == 1, "no CUDA build: rc %d", rc);
#endif
  unlink(pts);
  unlink(out);
}

static void test_profile(const char *dir) {
  char *doc = points_doc();
  ncclzCalResult *r = malloc(sizeof *r);
  CHECK(ncclzCalFitPoints(doc, strlen(doc), r) == NCCLZ_OK, "%s", ncclzLastError());
  CHECK(r->worst_resid_1m < 1e-9, "exact points: worst %g (%s)", r->worst_resid_1m, r->worst_what);
  CHECK(rel(r->sendrecv[NCCLZ_CAL_SOCKET].beta_gbps, 3.6) < 1e-6, "socket beta %g", r->sendrecv[NCCLZ_CAL_SOCKET].beta_gbps);
  CHECK(r->coll_present[NCCLZ_CAL_NVLINK][0] && rel(r->coll[NCCLZ_CAL_NVLINK][0].beta_gbps, 160) < 1e-6, "allreduce fit");
  CHECK(fabs(r->lambda_enc[NCCLZ_CODER_FIXEDLEN][NCCLZ_HINT_NET] - 0.15) < 1e-12, "lambda net");
  CHECK(r->lambda_dec[NCCLZ_CODER_FIXEDLEN][NCCLZ_HINT_NVLINK] == 1.0, "lambda nvlink dec");
  CHECK(!r->lambda_measured[NCCLZ_CODER_HUFFMAN][NCCLZ_HINT_NET] && r->lambda_enc[NCCLZ_CODER_HUFFMAN][NCCLZ_HINT_NET] == 1,
        "huffman lambda assumed 1");
  CHECK(r->iface_present[NCCLZ_HINT_NET] && rel(r->iface_alpha_us[NCCLZ_HINT_NET], 300) < 1e-6 &&
            rel(r->iface_gbps[NCCLZ_HINT_NET], 500) < 1e-6 && rel(r->iface_gbps[NCCLZ_HINT_NVLINK], 2000) < 1e-6 &&
            !r->iface_present[NCCLZ_HINT_SHM],
        "interface fit: net %g us + %g GB/s, nvlink %g GB/s, shm present %d", r->iface_alpha_us[NCCLZ_HINT_NET],
        r->iface_gbps[NCCLZ_HINT_NET], r->iface_gbps[NCCLZ_HINT_NVLINK], r->iface_present[NCCLZ_HINT_SHM]);
  CHECK(r->iface_unit_us[NCCLZ_HINT_NET] == 55 && r->iface_unit_us[NCCLZ_HINT_NVLINK] == 11 &&
            r->iface_unit_us[NCCLZ_HINT_SHM] == 0,
        "host time per unit: net %g (want the median 55 without the connecting call), nvlink %g (11)", r->iface_unit_us[NCCLZ_HINT_NET],
        r->iface_unit_us[NCCLZ_HINT_NVLINK]);
  char *text = ncclzCalProfileJson(r);
  CHECK(text != NULL, "%s", ncclzLastError());
  if (text) {
    char path[512];
    snprintf(path, sizeof path, "%s/profile.json", dir);
    tu_write_text(path, text);
    ncclzProfile *p = malloc(sizeof *p);
    CHECK(ncclzProfileLoad(path, p) == NCCLZ_OK, "%s", ncclzLastError());
    CHECK(rel(p->transport[NCCLZ_HINT_NVLINK].beta_gbps, 320) < 1e-5, "nvlink beta %g", p->transport[NCCLZ_HINT_NVLINK].beta_gbps);
    CHECK(rel(p->transport[NCCLZ_HINT_NVLINK].alpha_us, 15) < 1e-5, "nvlink alpha %g", p->transport[NCCLZ_HINT_NVLINK].alpha_us);
    CHECK(rel(p->transport[NCCLZ_HINT_NET].beta_gbps, 3.6) < 1e-5, "net beta");
    CHECK(p->transport[NCCLZ_HINT_SHM].beta_gbps == p->transport[NCCLZ_HINT_NET].beta_gbps, "shm filled from the slowest");
    CHECK(strstr(text, "transports.shm: not measured") != NULL, "note about shm");
    const ncclzCodecCurves *cv = &p->codec[NCCLZ_CODER_FIXEDLEN].curves[NCCLZ_CLASS_QSGD];
    CHECK(cv->present && cv->encode.n_points == 6, "qsgd curve points %u", cv->encode.n_points);
    CHECK(rel(cv->encode.us[5], line(4, 200, 64 << 20)) < 1e-5, "curve value %g", cv->encode.us[5]);
    const ncclzCodecCurves *d = &p->codec[NCCLZ_CODER_HUFFMAN].curves[NCCLZ_CLASS_DEFAULT];
    const ncclzCodecCurves *el = &p->codec[NCCLZ_CODER_HUFFMAN].curves[NCCLZ_CLASS_EB_LORENZO];
    CHECK(d->present && d->decode.us[3] == el->decode.us[3], "default = eb_lorenzo");
    CHECK(fabs(p->codec[NCCLZ_CODER_FIXEDLEN].lambda_dec[NCCLZ_HINT_NET] - 0.25) < 1e-9, "lambda in profile");
    CHECK(p->thresholds.frame_bytes == 4194304, "thresholds");
    CHECK(rel(ncclzProfileInterfaceUs(p, NCCLZ_HINT_NET, 1 << 30), line(300, 500, 1 << 30)) < 1e-5 &&
              ncclzProfileInterfaceUs(p, NCCLZ_HINT_SHM, 1 << 30) == 0,
          "interface in the profile: %g us", ncclzProfileInterfaceUs(p, NCCLZ_HINT_NET, 1 << 30));
    /* the curve of the measured sizes, not the line: flat below its first point (4 MiB) */
    CHECK(p->iface[NCCLZ_HINT_NET].curve.n_points == 5 &&
              rel(ncclzProfileInterfaceUs(p, NCCLZ_HINT_NET, 1 << 20), line(300, 500, 4 << 20)) < 1e-5,
          "interface curve: %u points, %g us at 1 MiB", p->iface[NCCLZ_HINT_NET].curve.n_points,
          ncclzProfileInterfaceUs(p, NCCLZ_HINT_NET, 1 << 20));
    CHECK(ncclzProfileUnitUs(p, NCCLZ_HINT_NET) == 55 && ncclzProfileUnitUs(p, NCCLZ_HINT_NVLINK) == 11,
          "unit_us in the profile: net %g, nvlink %g", ncclzProfileUnitUs(p, NCCLZ_HINT_NET),
          ncclzProfileUnitUs(p, NCCLZ_HINT_NVLINK));
    CHECK(!strcmp(p->meta.device, "NVIDIA H200 (2x, test)") && !strcmp(p->meta.nccl, "2.28.3"), "metadata");
    cJSON *j = cJSON_Parse(text);
    const cJSON *fit = cJSON_GetObjectItemCaseSensitive(j, "fit");
    CHECK(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(fit, "within_tolerance")), "within_tolerance");
    const cJSON *srn = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(fit, "sendrecv"), "nvlink");
    CHECK(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(srn, "points")) == 21, "residual points stored");
    cJSON_Delete(j);
    free(p);
    free(text);
  }
  /* The interface curve takes the quickest call of a size: a second 16 MiB call, 500 us slower
   * (the wait for the peer in the agreement), no codec time, leaves it on the line. */
  cJSON *slow = cJSON_Parse(doc), *extra = cJSON_CreateObject();
  cJSON_AddStringToObject(extra, "path", "socket");
  cJSON_AddStringToObject(extra, "coder", "fixedlen");
  cJSON_AddNumberToObject(extra, "bytes", 16 << 20);
  cJSON_AddNumberToObject(extra, "encode_us", 0);
  cJSON_AddNumberToObject(extra, "encode_exposed_us", 0);
  cJSON_AddNumberToObject(extra, "decode_us", 0);
  cJSON_AddNumberToObject(extra, "decode_exposed_us", 0);
  cJSON_AddNumberToObject(extra, "interface_us", line(300, 500, 16 << 20) + 500);
  cJSON_AddItemToArray(cJSON_GetObjectItemCaseSensitive(slow, "overlap"), extra);
  char *slow_doc = cJSON_Print(slow);
  cJSON_Delete(slow);
  CHECK(ncclzCalFitPoints(slow_doc, strlen(slow_doc), r) == NCCLZ_OK, "%s", ncclzLastError());
  const ncclzCurve *ic = &r->iface_curve[NCCLZ_HINT_NET];
  CHECK(ic->n_points == 5 && ic->bytes[1] == 16 << 20 && rel(ic->us[1], line(300, 500, 16 << 20)) < 1e-9,
        "interface curve at 16 MiB: %g us (want the quicker call's %g)", ic->n_points > 1 ? ic->us[1] : -1.0,
        line(300, 500, 16 << 20));
  free(slow_doc);
  /* Merge: two halves give the same fits as the whole. */
  cJSON *whole = cJSON_Parse(doc), *half = cJSON_Duplicate(whole, 1);
  cJSON_DeleteItemFromObjectCaseSensitive(half, "sendrecv");
  cJSON *other = cJSON_CreateObject();
  cJSON_AddNumberToObject(other, "version", 1);
  cJSON_AddItemToObject(other, "sendrecv", cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(whole, "sendrecv"), 1));
  char *ha = cJSON_Print(half), *hb = cJSON_Print(other), *merged = ncclzCalPointsMerge(ha, hb);
  ncclzCalResult *r2 = malloc(sizeof *r2);
  CHECK(merged && ncclzCalFitPoints(merged, strlen(merged), r2) == NCCLZ_OK, "merged: %s", ncclzLastError());
  CHECK(merged && r2->sendrecv[NCCLZ_CAL_NVLINK].beta_gbps == r->sendrecv[NCCLZ_CAL_NVLINK].beta_gbps, "merged fit");
  free(r2);
  free(merged);
  free(ha);
  free(hb);
  cJSON_Delete(whole);
  cJSON_Delete(half);
  cJSON_Delete(other);

  /* Broken documents name the field. */
  const char *bad[][2] = {
      {"{\"version\":2}", "points version"},
      {"{\"version\":1,\"codecs\":[{\"coder\":\"fixedlen\",\"class\":\"gauss\",\"encode\":[],\"decode\":[]}]}",
       "codecs[0].class"},
      {"{\"version\":1,\"codecs\":[{\"coder\":\"fixedlen\",\"class\":\"qsgd\",\"encode\":[[1,2]],\"decode\":[[1,2]]},"
       "{\"coder\":\"huffman\",\"class\":\"qsgd\",\"encode\":[[1,2]],\"decode\":[[1,2]]}],"
       "\"sendrecv\":[{\"path\":\"ib\",\"points\":[]}]}",
       "sendrecv[0].path"},
      {"{\"version\":1,\"codecs\":[{\"coder\":\"fixedlen\",\"class\":\"qsgd\",\"encode\":[[1,2]],\"decode\":[[1,2]]},"
       "{\"coder\":\"huffman\",\"class\":\"qsgd\",\"encode\":[[1,2]],\"decode\":[[1,2]]}]}",
       "sendrecv: no path"},
      {"{\"version\":1,\"codecs\":[{\"coder\":\"fixedlen\",\"class\":\"qsgd\",\"encode\":[[1,2]],\"decode\":[[1,2]]}]}",
       "no points for coder huffman"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    ncclzStatus st = ncclzCalFitPoints(bad[i][0], strlen(bad[i][0]), r);
    CHECK(st == NCCLZ_ERR_ARG && strstr(ncclzLastError(), bad[i][1]), "bad doc %zu: %s", i, ncclzLastError());
  }
  free(r);
  cli_round_trip(dir, doc);
  free(doc);
}

/* A fresh-measurement document: entries {path, collective, ranks, [[bytes, us] x repeats]}. */
static void fresh_entry(cJSON *co, const char *path, const char *coll, int ranks, const double *bytes,
                        const double *us, int n) {
  cJSON *e = cJSON_CreateObject(), *pts;
  cJSON_AddStringToObject(e, "path", path);
  cJSON_AddStringToObject(e, "collective", coll);
  cJSON_AddNumberToObject(e, "ranks", ranks);
  pts = cJSON_AddArrayToObject(e, "points");
  for (int i = 0; i < n; i++) {
    double pt[2] = {bytes[i], us[i]};
    cJSON_AddItemToArray(pts, cJSON_CreateDoubleArray(pt, 2));
  }
  cJSON_AddItemToArray(co, e);
}

/* The CLI: --check with --from-points, when the binary is next to tests/. */
static void cli_check(const char *dir, const char *path, const char *fresh) {
  char bin[4200], fpath[600], out[600], cmd[9000];
  if (!tu_ncclz_binary(bin, sizeof bin)) return;
  snprintf(fpath, sizeof fpath, "%s/fresh.json", dir);
  snprintf(out, sizeof out, "%s/check.json", dir);
  tu_write_text(fpath, fresh);
  snprintf(cmd, sizeof cmd, "'%s' calibrate --check '%s' --from-points '%s' --out '%s' >/dev/null", bin, path, fpath, out);
  int rc = system(cmd);
  CHECK(WIFEXITED(rc) && WEXITSTATUS(rc) == 0, "--check rc %d", rc);
  size_t len = 0;
  char *txt = ncclzReadFile("check", out, &len);
  CHECK(txt && strstr(txt, "\"max_abs_error\""), "check JSON written");
  free(txt);
  snprintf(cmd, sizeof cmd, "'%s' calibrate --check '%s/none.json' --from-points '%s' 2>/dev/null", bin, dir, fpath);
  rc = system(cmd);
  CHECK(WIFEXITED(rc) && WEXITSTATUS(rc) == 2, "--check missing profile: rc %d", rc);
  snprintf(cmd, sizeof cmd, "'%s' calibrate --check '%s' --sweeps 0 2>/dev/null", bin, path);
  rc = system(cmd);
  CHECK(WIFEXITED(rc) && WEXITSTATUS(rc) == 2, "--sweeps 0: rc %d", rc);
  unlink(fpath);
  unlink(out);
}

/* The profile written by test_profile predicts its plain collectives; the check compares a fresh
 * measurement with it: known errors and spreads come out, missing curves and other rank counts
 * are caught. */
static void test_check(const char *dir) {
  char path[512];
  snprintf(path, sizeof path, "%s/profile.json", dir);
  ncclzProfile *p = malloc(sizeof *p);
  ncclzCalCheck *c = malloc(sizeof *c);
  CHECK(ncclzProfileLoad(path, p) == NCCLZ_OK, "%s", ncclzLastError());
  CHECK(p->plain_ranks == 2 && p->n_plain == 6, "plain curves: %u on %u ranks", p->n_plain, p->plain_ranks);
  const double mib = 1048576;
  /* nvlink allreduce: line(30, 160); measured at 1 KiB x4 sizes, so 2 MiB lies between points */
  CHECK(rel(ncclzProfilePlainUs(p, "nvlink", "allreduce", 4 * mib), line(30, 160, 4 * mib)) < 1e-5, "at a point");
  CHECK(rel(ncclzProfilePlainUs(p, "nvlink", "allreduce", 2 * mib), line(30, 160, 2 * mib)) < 1e-5, "between");
  CHECK(ncclzProfilePlainUs(p, "shm", "allreduce", mib) == -1 && ncclzProfilePlainUs(p, "nvlink", "broadcast", mib) == -1,
        "no curve: -1");

  cJSON *root = cJSON_CreateObject(), *co;
  cJSON_AddNumberToObject(root, "version", 1);
  co = cJSON_AddArrayToObject(root, "collectives");
  double b1[7] = {mib, mib, mib, 1.5 * mib, 1.5 * mib, 1.5 * mib, 65536}, u1[7];
  const double f1[7] = {1.0, 1.1, 0.95, 1.0, 1.0, 1.0, 9.0};
  for (int i = 0; i < 7; i++) u1[i] = f1[i] * line(30, 160, b1[i]);
  fresh_entry(co, "nvlink", "allreduce", 2, b1, u1, 7); /* 64 KiB: below 1 MiB, not compared */
  double b2[3] = {16 * mib, 16 * mib, 16 * mib}, u2[3];
  for (int i = 0; i < 3; i++) u2[i] = line(48, 3.6, b2[i]) / 1.3; /* socket allgather: line(48, 3.6) */
  fresh_entry(co, "socket", "allgather", 2, b2, u2, 3);
  double b3[2] = {mib, 4 * mib}, u3[2] = {40, 90};
  fresh_entry(co, "nvlink", "broadcast", 2, b3, u3, 2);
  char *fresh = cJSON_Print(root);
  CHECK(ncclzCalCheckPoints(p, fresh, strlen(fresh), c) == NCCLZ_OK, "%s", ncclzLastError());
  CHECK(c->n_rows == 5 && c->n_missing == 2, "rows %u, missing %u", c->n_rows, c->n_missing);
  CHECK(c->rows[0].n == 3 && fabs(c->rows[0].error) < 1e-5 && fabs(c->rows[0].spread - 0.15) < 1e-9,
        "nvlink 1 MiB: error %g spread %g", c->rows[0].error, c->rows[0].spread);
  CHECK(fabs(c->rows[2].error - 0.3) < 1e-5 && c->n_over == 1, "socket error %g", c->rows[2].error);
  CHECK(fabs(c->max_abs_error - 0.3) < 1e-5 && strstr(c->worst, "socket allgather"), "worst %s", c->worst);
  CHECK(fabs(c->median_abs_error) < 1e-5 && !c->target_met, "median %g, met %d", c->median_abs_error, c->target_met);
  CHECK(fabs(c->max_spread - 0.15) < 1e-9, "max spread %g", c->max_spread);
  char *js = ncclzCalCheckJson(c, p);
  cJSON *jj = cJSON_Parse(js);
  CHECK(cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(jj, "summary"), "target_met")),
        "json target_met");
  cJSON_Delete(jj);
  free(js);
  /* The same fresh run without the bad socket row and the uncovered broadcast meets the target. */
  cJSON_DeleteItemFromArray(co, 2);
  cJSON_DeleteItemFromArray(co, 1);
  char *good = cJSON_Print(root);
  CHECK(ncclzCalCheckPoints(p, good, strlen(good), c) == NCCLZ_OK && c->target_met && c->n_rows == 2, "good check");
  /* Other rank counts and broken documents are refused, naming the field. */
  cJSON_SetNumberHelper(cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(co, 0), "ranks"), 4);
  char *four = cJSON_Print(root);
  CHECK(ncclzCalCheckPoints(p, four, strlen(four), c) == NCCLZ_ERR_ARG && strstr(ncclzLastError(), "2 ranks"), "%s",
        ncclzLastError());
  const char *bad[][2] = {{"[1]", "not a JSON object"},
                          {"{\"collectives\":[{\"path\":\"ib\",\"collective\":\"allreduce\",\"points\":[]}]}", "path"},
                          {"{\"collectives\":[{\"path\":\"shm\",\"collective\":\"allreduce\",\"points\":[[1048576,-1]]}]}", "> 0"},
                          {"{\"collectives\":[]}", "no collective measured"}};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
    CHECK(ncclzCalCheckPoints(p, bad[i][0], strlen(bad[i][0]), c) == NCCLZ_ERR_ARG && strstr(ncclzLastError(), bad[i][1]),
          "bad check doc %zu: %s", i, ncclzLastError());
  cli_check(dir, path, fresh);
  cJSON_Delete(root);
  free(fresh);
  free(good);
  free(four);
  free(p);
  free(c);
}

int main(void) {
  char dir[] = "/tmp/ncclz-test-calibrate-XXXXXX";
  if (!mkdtemp(dir)) return 1;
  test_exact();
  test_noisy();
  test_edges();
  test_profile(dir);
  test_check(dir);
  char path[512];
  snprintf(path, sizeof path, "%s/profile.json", dir);
  unlink(path);
  rmdir(dir);
  return tu_finish("calibrate_fit");
}
