/* Shared inside calibrate/: reading a points document (docs/calibrate.md). */
#ifndef NCCLZ_CAL_INTERNAL_H
#define NCCLZ_CAL_INTERNAL_H

#include "ncclz/calibrate.h"

#include <cjson/cJSON.h>

/* [[bytes, us], ...] or [{"bytes": B, "us": T}, ...], appended to pts (at most
 * NCCLZ_CAL_MAX_RAW_POINTS in all); NCCLZ_ERR_ARG naming `where` otherwise. */
ncclzStatus ncclz_cal_read_points(const cJSON *arr, const char *where, ncclzCalPoint *pts, size_t *n);
/* The string member `key` of o, or NULL. */
const char *ncclz_cal_get_str(const cJSON *o, const char *key);

#endif
