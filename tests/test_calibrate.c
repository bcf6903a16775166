/* Data profiles on the real slices: RAW's ratio is exactly the closed form of its framing,
 * no coder beats the order-0 entropy of the summed codes, the rows count 1..N ranks, and bad
 * requests are refused. */
#include "ncclz/calibrate.h"
#include "testutil.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static void check_profile(const ncclzDataProfile *dp, uint32_t ranks, size_t n) {
  CHECK(dp->n_rows == ranks, "rows %u != %u", dp->n_rows, ranks);
  for (uint32_t r = 0; r < dp->n_rows; r++) {
    CHECK(dp->row[r].ranks == r + 1, "row %u holds %u ranks", r, dp->row[r].ranks);
    for (uint32_t f = 0; f < dp->row[r].n_frames; f++) {
      const ncclzDataPoint *p = &dp->row[r].at[f];
      size_t fs = p->frame_bytes / 4, frames = (n + fs - 1) / fs;
      double raw = (double)(4 * n) / (double)(4 * n + NCCLZ_FRAME_HEADER_BYTES * frames);
      CHECK(fabs(p->cr[NCCLZ_CODER_RAW] - raw) < 1e-12, "RAW cr %.9f != %.9f", p->cr[NCCLZ_CODER_RAW], raw);
      CHECK(p->cr[NCCLZ_CODER_HUFFMAN] <= p->entropy_cr, "k=%u: huffman %.3f beats the entropy bound %.3f", r + 1,
            p->cr[NCCLZ_CODER_HUFFMAN], p->entropy_cr);
      CHECK(p->cr[NCCLZ_CODER_FIXEDLEN] > 1 && p->cr[NCCLZ_CODER_HUFFMAN] > 1, "k=%u: fixedlen %.3f huffman %.3f", r + 1,
            p->cr[NCCLZ_CODER_FIXEDLEN], p->cr[NCCLZ_CODER_HUFFMAN]);
    }
  }
}

static void test_gradients(void) {
  size_t l0 = 0, l1 = 0;
  void *g0 = tu_read_file("resnet18_rank0_64k.f32", &l0), *g1 = tu_read_file("resnet18_rank1_64k.f32", &l1);
  CHECK(g0 && g1 && l0 == l1, "read the gradient slices");
  if (!g0 || !g1) return;
  const void *in[2] = {g0, g1};
  ncclzQuantSpec q;
  ncclzQuantSpecParse("qsgd:bits=8,bucket=512", &q);
  const uint64_t frames[2] = {64 << 10, 256 << 10};
  ncclzDataProfile *dp = malloc(sizeof *dp);
  CHECK(ncclzDataProfileBuild(&q, NCCLZ_DTYPE_F32, in, 2, l0 / 4, NULL, 0, frames, 2, dp) == NCCLZ_OK, "%s",
        ncclzLastError());
  check_profile(dp, 2, l0 / 4);
  char *json = ncclzDataProfileToJson(dp, (const char *const[]){"a", "b"}, 2);
  cJSON *root = json ? cJSON_Parse(json) : NULL;
  cJSON *rows = cJSON_GetObjectItem(root, "rows");
  CHECK(cJSON_GetArraySize(rows) == 2 && cJSON_GetObjectItem(cJSON_GetArrayItem(rows, 1), "points"), "json rows");
  cJSON_Delete(root);
  free(json);
  free(dp);
  free(g0);
  free(g1);
}

static void test_fields(void) {
  size_t l0 = 0, l1 = 0;
  void *a = tu_read_file("trefht_member57_8x64x128.f32", &l0), *b = tu_read_file("trefht_member59_8x64x128.f32", &l1);
  CHECK(a && b && l0 == l1, "read the trefht slices");
  if (!a || !b) return;
  const void *in[2] = {a, b};
  ncclzQuantSpec q;
  ncclzQuantSpecParse("eb:rel=1e-4,lorenzo=3d", &q);
  const uint32_t dims[3] = {8, 64, 128};
  const uint64_t frames[1] = {128 << 10};
  ncclzDataProfile *dp = malloc(sizeof *dp);
  CHECK(ncclzDataProfileBuild(&q, NCCLZ_DTYPE_F32, in, 2, l0 / 4, dims, 3, frames, 1, dp) == NCCLZ_OK, "%s",
        ncclzLastError());
  check_profile(dp, 2, l0 / 4);
  ncclzQuantSpec none;
  ncclzQuantSpecParse("none", &none);
  CHECK(ncclzDataProfileBuild(&none, NCCLZ_DTYPE_F32, in, 2, l0 / 4, NULL, 0, frames, 1, dp) == NCCLZ_ERR_ARG,
        "quant none refused");
  CHECK(ncclzDataProfileBuild(&q, NCCLZ_DTYPE_F32, in, 0, l0 / 4, dims, 3, frames, 1, dp) == NCCLZ_ERR_ARG,
        "0 ranks refused");
  free(dp);
  free(a);
  free(b);
}

int main(void) {
  test_gradients();
  test_fields();
  return tu_finish("test_calibrate");
}
