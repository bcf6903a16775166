/* The codec-only recalibration without a GPU (`ncclz calibrate --codecs-only`): the shipped 2x H200
 * points are the base, their own codec points at half the time stand in for a fresh codec run.
 * The merged profile must keep the base's transport, collective, interface and overlap fits byte
 * for byte and take every codec curve from the fresh points; bad bases are refused with exit 2. */
#include "ncclz/calibrate.h"
#include "ncclz/model.h"
#include "testutil.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define BASE_NAME "calibrate/profiles/h200-x2-points.json"
#define BASE NCCLZ_TEST_DATA "/../../" BASE_NAME
#define SCALE 0.5 /* the fresh codec times: the base's times this many times */

/* The fresh codec run: the base's "codecs" only, every time x SCALE, under a one-GPU metadata. */
static char *fresh_points(const char *base) {
  cJSON *b = cJSON_Parse(base), *f = cJSON_CreateObject();
  cJSON_AddNumberToObject(f, "version", 1);
  cJSON *m = cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(b, "metadata"), 1); /* driver, CUDA, NCCL: the base's */
  /* a fresh run's metadata is flat: the parts a merged base names (its own codec run's date among
   * them) would otherwise stand in for this run's */
  cJSON_DeleteItemFromObjectCaseSensitive(m, "codecs");
  cJSON_DeleteItemFromObjectCaseSensitive(m, "transports");
  cJSON_ReplaceItemInObjectCaseSensitive(m, "device", cJSON_CreateString("NVIDIA H200 (1x used of 1)"));
  cJSON_ReplaceItemInObjectCaseSensitive(m, "date", cJSON_CreateString("2026-12-02"));
  cJSON_ReplaceItemInObjectCaseSensitive(
      m, "method", cJSON_CreateString("ncclz calibrate --codecs-only -g 1: 64 KiB..64 MiB, one frame, median of 20"));
  cJSON_AddItemToObject(f, "metadata", m);
  cJSON *codecs = cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(b, "codecs"), 1), *e;
  cJSON_ArrayForEach(e, codecs) {
    const char *keys[2] = {"encode", "decode"};
    for (int k = 0; k < 2; k++) {
      cJSON *p;
      cJSON_ArrayForEach(p, cJSON_GetObjectItemCaseSensitive(e, keys[k])) {
        cJSON *us = cJSON_GetArrayItem(p, 1);
        cJSON_SetNumberValue(us, us->valuedouble * SCALE);
      }
    }
  }
  cJSON_AddItemToObject(f, "codecs", codecs);
  char *s = cJSON_Print(f);
  cJSON_Delete(b);
  cJSON_Delete(f);
  return s;
}

/* The profile JSON of a points document (parsed), or NULL. */
static cJSON *profile_of(const char *points) {
  ncclzCalResult *r = malloc(sizeof *r);
  char *text = NULL;
  if (ncclzCalFitPoints(points, strlen(points), r) == NCCLZ_OK) text = ncclzCalProfileJson(r);
  CHECK(text != NULL, "fit: %s", ncclzLastError());
  cJSON *j = text ? cJSON_Parse(text) : NULL;
  free(text);
  free(r);
  return j;
}

/* a.path and b.path (dot-separated keys) are both present and print alike. */
static int same_at(const cJSON *a, const cJSON *b, const char *path) {
  char buf[128], *save = NULL;
  snprintf(buf, sizeof buf, "%s", path);
  for (char *k = strtok_r(buf, ".", &save); k; k = strtok_r(NULL, ".", &save)) {
    a = cJSON_GetObjectItemCaseSensitive(a, k);
    b = cJSON_GetObjectItemCaseSensitive(b, k);
  }
  char *sa = a ? cJSON_PrintUnformatted(a) : NULL, *sb = b ? cJSON_PrintUnformatted(b) : NULL;
  int same = sa && sb && !strcmp(sa, sb);
  free(sa);
  free(sb);
  return same;
}

/* Every codec curve point of the merged profile is the base's x SCALE (6 significant digits). */
static void check_codec_curves(const cJSON *merged, const cJSON *base) {
  const cJSON *mc = cJSON_GetObjectItemCaseSensitive(merged, "codecs"), *bc = cJSON_GetObjectItemCaseSensitive(base, "codecs");
  int points = 0, curves = 0;
  const cJSON *coder;
  cJSON_ArrayForEach(coder, mc) {
    const cJSON *cls;
    cJSON_ArrayForEach(cls, cJSON_GetObjectItemCaseSensitive(coder, "curves")) {
      const cJSON *bcls = cJSON_GetObjectItemCaseSensitive(
          cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(bc, coder->string), "curves"), cls->string);
      for (int k = 0; k < 2; k++) {
        const char *dir = k ? "decode" : "encode";
        const cJSON *m = cJSON_GetObjectItemCaseSensitive(cls, dir), *b = cJSON_GetObjectItemCaseSensitive(bcls, dir);
        CHECK(cJSON_GetArraySize(m) > 0 && cJSON_GetArraySize(m) == cJSON_GetArraySize(b), "%s/%s %s: %d points, base %d",
              coder->string, cls->string, dir, cJSON_GetArraySize(m), cJSON_GetArraySize(b));
        curves++;
        for (int i = 0; i < cJSON_GetArraySize(m) && i < cJSON_GetArraySize(b); i++, points++) {
          const cJSON *pm = cJSON_GetArrayItem(m, i), *pb = cJSON_GetArrayItem(b, i);
          double bm = cJSON_GetObjectItemCaseSensitive(pm, "bytes")->valuedouble;
          double um = cJSON_GetObjectItemCaseSensitive(pm, "us")->valuedouble;
          double ub = cJSON_GetObjectItemCaseSensitive(pb, "us")->valuedouble;
          CHECK(bm == cJSON_GetObjectItemCaseSensitive(pb, "bytes")->valuedouble && fabs(um / (SCALE * ub) - 1) < 1e-4,
                "%s/%s %s at %.0f B: %g us, base %g us", coder->string, cls->string, dir, bm, um, ub);
        }
      }
    }
  }
  /* 2 coders x (3 classes + default) x encode/decode */
  CHECK(curves == 16 && points > 16 * 4, "%d codec curves, %d points", curves, points);
}

static void test_merge(const char *base, const char *fresh) {
  char *merged = ncclzCalCodecsOnlyMerge(base, strlen(base), BASE_NAME, fresh, strlen(fresh), "fresh.json");
  CHECK(merged != NULL, "merge: %s", ncclzLastError());
  if (!merged) return;
  cJSON *pm = profile_of(merged), *pb = profile_of(base);
  static const char *kept[] = {"transports", "collectives", "interface", "codecs.fixedlen.lambda_enc",
                               "codecs.fixedlen.lambda_dec", "codecs.huffman.lambda_enc", "codecs.huffman.lambda_dec",
                               "fit.sendrecv", "fit.collectives", "thresholds"};
  for (size_t i = 0; i < sizeof kept / sizeof kept[0]; i++)
    CHECK(same_at(pm, pb, kept[i]), "%s differs from the base's", kept[i]);
  CHECK(!same_at(pm, pb, "codecs.huffman.curves"), "codec curves are the base's");
  if (pm && pb) check_codec_curves(pm, pb);
  const cJSON *m = cJSON_GetObjectItemCaseSensitive(pm, "metadata");
  const char *dev = m ? cJSON_GetObjectItemCaseSensitive(m, "device")->valuestring : "";
  const char *date = m ? cJSON_GetObjectItemCaseSensitive(m, "date")->valuestring : "";
  const char *method = m ? cJSON_GetObjectItemCaseSensitive(m, "method")->valuestring : "";
  CHECK(strstr(dev, "codecs: NVIDIA H200 (1x used of 1)") && strstr(dev, "transports, overlap: NVIDIA H200 (2x used of 2)"),
        "device '%s'", dev);
  CHECK(!strcmp(date, "2026-12-02"), "date '%s' (the codec run's)", date);
  CHECK(strstr(method, "codecs re-measured 2026-12-02 by ncclz calibrate --codecs-only") &&
            strstr(method, "kept from " BASE_NAME " (2026-12-01)"),
        "method '%s'", method);
  /* A merge of the merge with the same base is the merge: the parts keep their own metadata. */
  char *again = ncclzCalCodecsOnlyMerge(base, strlen(base), BASE_NAME, merged, strlen(merged), "merged.json");
  CHECK(again && !strcmp(again, merged), "merging the merged points again changes them");
  free(again);
  cJSON_Delete(pm);
  cJSON_Delete(pb);
  free(merged);
}

/* What the library refuses: a profile, a fresh run as base, a fresh document without codecs. */
static void test_refused(const char *base, const char *fresh) {
  size_t len = 0;
  char *prof = tu_read_file("profile_synthetic.json", &len);
  CHECK(prof && ncclzCalCodecsOnlyBase(prof, len, "profile.json") == NCCLZ_ERR_ARG &&
            strstr(ncclzLastError(), "not a points document"),
        "a profile as base: %s", ncclzLastError());
  free(prof);
  CHECK(ncclzCalCodecsOnlyBase(fresh, strlen(fresh), "fresh.json") == NCCLZ_ERR_ARG &&
            strstr(ncclzLastError(), "no send/recv points"),
        "a codec run as base: %s", ncclzLastError());
  CHECK(ncclzCalCodecsOnlyBase("{\"version\": 1,", 14, "cut.json") == NCCLZ_ERR_ARG, "bad JSON as base");
  CHECK(ncclzCalCodecsOnlyBase(base, strlen(base), BASE_NAME) == NCCLZ_OK, "the shipped points: %s", ncclzLastError());
  const char *none = "{\"version\": 1, \"codecs\": []}";
  char *m = ncclzCalCodecsOnlyMerge(base, strlen(base), BASE_NAME, none, strlen(none), "none.json");
  CHECK(!m && strstr(ncclzLastError(), "none.json: no codec points"), "fresh without codecs: %s", ncclzLastError());
  free(m);
}

static int run(const char *cmd) {
  int rc = system(cmd);
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

/* The CLI: --from-points FRESH gives the library's merge; --points-out keeps the merged points,
 * whose plain refit is the same profile; bad bases and options exit 2. */
static void test_cli(const char *dir, const char *base, const char *fresh) {
  char bin[4200], fpath[600], out[600], pts[600], refit[600], cmd[12000];
  if (!tu_ncclz_binary(bin, sizeof bin)) return;
  snprintf(fpath, sizeof fpath, "%s/fresh.json", dir);
  snprintf(out, sizeof out, "%s/merged-profile.json", dir);
  snprintf(pts, sizeof pts, "%s/merged-points.json", dir);
  snprintf(refit, sizeof refit, "%s/refit.json", dir);
  tu_write_text(fpath, fresh);
  snprintf(cmd, sizeof cmd, "'%s' calibrate --codecs-only --base '%s' --from-points '%s' --out '%s' --points-out '%s' --quiet",
           bin, BASE, fpath, out, pts);
  CHECK(run(cmd) == 0, "%s", cmd);
  snprintf(cmd, sizeof cmd, "'%s' calibrate --from-points '%s' --out '%s' --quiet && cmp -s '%s' '%s'", bin, pts, refit, out,
           refit);
  CHECK(run(cmd) == 0, "the merged points' refit differs from the codec-only profile");
  size_t len = 0;
  char *got = tu_read_file(pts, &len);
  char *want = ncclzCalCodecsOnlyMerge(base, strlen(base), BASE, fresh, strlen(fresh), fpath);
  CHECK(got && want && len == strlen(want) + 1 && !strncmp(got, want, strlen(want)), "--points-out is not the merge");
  free(got);
  free(want);
  char fresh_base[700];
  snprintf(fresh_base, sizeof fresh_base, "--codecs-only --base '%s' --out /dev/null", fpath); /* no transports */
  const char *bad[] = {"--codecs-only --out /dev/null",
                       "--base '" BASE "' --out /dev/null",
                       "--codecs-only --base /nonexistent/points.json --out /dev/null",
                       "--codecs-only --base '" NCCLZ_TEST_DATA "/../../calibrate/profiles/h200-x2.json' --out /dev/null",
                       "--codecs-only --base '" NCCLZ_TEST_DATA "/../../README.md' --out /dev/null",
                       fresh_base,
                       "--codecs-only --base '" BASE "' -g 2 --out /dev/null",
                       "--codecs-only --base '" BASE "' --paths nvlink --out /dev/null",
                       "--codecs-only --base '" BASE "' --check '" BASE "'"};
  char epath[700];
  snprintf(epath, sizeof epath, "%s/err.txt", dir);
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    snprintf(cmd, sizeof cmd, "'%s' calibrate %s 2>'%s'", bin, bad[i], epath);
    int rc = run(cmd), lines = 0;
    char *err = tu_read_file(epath, &len);
    for (size_t k = 0; err && k < len; k++) lines += err[k] == '\n';
    CHECK(rc == 2 && lines == 1, "calibrate %s: rc %d, %d lines: %s", bad[i], rc, lines, err ? err : "");
    free(err);
  }
  unlink(epath);
  unlink(fpath);
  unlink(out);
  unlink(pts);
  unlink(refit);
}

int main(void) {
  size_t len = 0;
  char *base = tu_read_file(BASE, &len);
  CHECK(base != NULL, "%s", BASE);
  if (!base) return tu_finish("calibrate_codecs");
  char *fresh = fresh_points(base);
  char dir[] = "/tmp/ncclz-test-calcodecs-XXXXXX";
  CHECK(mkdtemp(dir) != NULL, "mkdtemp");
  test_merge(base, fresh);
  test_refused(base, fresh);
  test_cli(dir, base, fresh);
  rmdir(dir);
  free(fresh);
  free(base);
  return tu_finish("calibrate_codecs");
}
