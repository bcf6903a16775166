/* Data profile <-> JSON (cJSON). The schema is in docs/data-profile.md. */
#include "ncclz/calibrate.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

static cJSON *point_json(const ncclzDataPoint *p) {
  cJSON *o = cJSON_CreateObject(), *cr = cJSON_CreateObject();
  cJSON_AddNumberToObject(o, "frame_bytes", (double)p->frame_bytes);
  for (int c = 0; c < NCCLZ_CODER_COUNT; c++) cJSON_AddNumberToObject(cr, ncclzCoderName((ncclzCoder)c), p->cr[c]);
  cJSON_AddItemToObject(o, "cr", cr);
  cJSON_AddNumberToObject(o, "entropy_cr", p->entropy_cr);
  return o;
}

char *ncclzDataProfileToJson(const ncclzDataProfile *dp, const char *const *inputs, uint32_t n_inputs) {
  char spec[256];
  ncclzQuantSpecFormat(&dp->quant, spec, sizeof spec);
  cJSON *root = cJSON_CreateObject(), *in = cJSON_CreateArray(), *rows = cJSON_CreateArray();
  cJSON_AddNumberToObject(root, "version", NCCLZ_DATA_PROFILE_VERSION);
  cJSON_AddStringToObject(root, "kind", "ncclz-data-profile");
  for (uint32_t i = 0; i < n_inputs; i++) cJSON_AddItemToArray(in, cJSON_CreateString(inputs[i]));
  cJSON_AddItemToObject(root, "inputs", in);
  cJSON_AddStringToObject(root, "quant", spec);
  cJSON_AddStringToObject(root, "dtype", ncclzDtypeName(dp->dtype));
  cJSON_AddNumberToObject(root, "elements_per_rank", (double)dp->elements_per_rank);
  for (uint32_t r = 0; r < dp->n_rows; r++) {
    cJSON *row = cJSON_CreateObject(), *pts = cJSON_CreateArray();
    cJSON_AddNumberToObject(row, "ranks", dp->row[r].ranks);
    for (uint32_t f = 0; f < dp->row[r].n_frames; f++) cJSON_AddItemToArray(pts, point_json(&dp->row[r].at[f]));
    cJSON_AddItemToObject(row, "points", pts);
    cJSON_AddItemToArray(rows, row);
  }
  cJSON_AddItemToObject(root, "rows", rows);
  char *s = cJSON_Print(root);
  cJSON_Delete(root);
  return s;
}
