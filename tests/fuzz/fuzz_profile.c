/* Fuzz target: the calibration profile loader (model/profile.c) and the strict JSON reader under
 * it (model/json.c).
 *
 * Contract checked: a refused text is one clean line; an accepted profile has every field in the
 * range model/PROFILE.md gives (positive bandwidths, curves of 1 to 32 points with increasing
 * bytes, thresholds in range); any text the strict reader accepts prints back (cJSON) to a text it
 * accepts again, with the same number of items at the top. */
#include "fuzz_json_check.h"
#include "ncclz/model.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdint.h>

#define T "fuzz_profile"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_curve(const ncclzCurve *c) {
  if (c->n_points < 1 || c->n_points > NCCLZ_CURVE_MAX_POINTS) fuzz_fail(T, "curve points out of range");
  for (uint32_t i = 0; i < c->n_points; i++) {
    if (!(c->bytes[i] > 0) || !(c->us[i] >= 0) || !isfinite(c->bytes[i]) || !isfinite(c->us[i]))
      fuzz_fail(T, "curve point out of range");
    if (i && !(c->bytes[i] > c->bytes[i - 1])) fuzz_fail(T, "curve bytes not increasing");
  }
}

static void check_profile(const ncclzProfile *p) {
  if (p->version != NCCLZ_PROFILE_VERSION) fuzz_fail(T, "version");
  for (int h = 0; h < NCCLZ_HINT_COUNT; h++)
    if (!(p->transport[h].beta_gbps > 0) || !(p->transport[h].alpha_us >= 0)) fuzz_fail(T, "transport out of range");
  for (int k = NCCLZ_CODER_FIXEDLEN; k < NCCLZ_CODER_COUNT; k++) {
    if (!p->codec[k].curves[NCCLZ_CLASS_DEFAULT].present) fuzz_fail(T, "no default curve");
    for (int c = 0; c < NCCLZ_CLASS_COUNT; c++)
      if (p->codec[k].curves[c].present) check_curve(&p->codec[k].curves[c].encode), check_curve(&p->codec[k].curves[c].decode);
    for (int h = 0; h < NCCLZ_HINT_COUNT; h++)
      if (!(p->codec[k].lambda_enc[h] >= 0 && p->codec[k].lambda_enc[h] <= 1)) fuzz_fail(T, "lambda out of range");
  }
  const ncclzThresholds *t = &p->thresholds;
  if (t->sample_window_bytes < 128 || t->sample_window_bytes > NCCLZ_REA_SAMPLE_MAX_BYTES || t->sample_pieces < 1 ||
      t->sample_pieces > 512 || t->frame_bytes < 4 || t->frame_bytes > 4294967295u || t->min_gain_permil > 1000)
    fuzz_fail(T, "thresholds out of range");
  if (p->n_plain > NCCLZ_PLAIN_MAX) fuzz_fail(T, "too many plain curves");
  for (uint32_t i = 0; i < p->n_plain; i++) check_curve(&p->plain[i].curve);
}

/* What the strict reader accepts, printed by cJSON, is accepted again. */
static void check_reprint(const char *text, size_t size) {
  cJSON *root = NULL;
  ncclzStatus st = ncclzJsonParse("t", text, size, &root);
  if (st != NCCLZ_OK) {
    fuzz_check_refusal(T, st);
    return;
  }
  char *again = cJSON_PrintUnformatted(root);
  cJSON *back = NULL;
  if (again && ncclzJsonParse("t", again, strlen(again), &back) != NCCLZ_OK) fuzz_fail(T, "a printed tree is refused");
  if (back && ncclzJsonCount(back, SIZE_MAX) != ncclzJsonCount(root, SIZE_MAX)) fuzz_fail(T, "item count changed");
  cJSON_Delete(back);
  free(again);
  cJSON_Delete(root);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static ncclzProfile p; /* 10s of KiB: not on the stack */
  ncclzStatus st = ncclzProfileParse((const char *)data, size, &p);
  if (st == NCCLZ_OK) check_profile(&p);
  else fuzz_check_refusal(T, st);
  check_reprint((const char *)data, size);
  return 0;
}
