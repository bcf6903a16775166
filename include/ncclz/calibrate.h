/* ncclz calibrate: measurements that feed the model and the simulator.
 *
 * Data profiles: how well each coder compresses a data set, per frame size, for one rank's
 * symbols and for the sums of 2..N ranks' symbols (what a reduction phase actually sends).
 * Layer: above codecs (and model, exec, sim); one public header. */
#ifndef NCCLZ_CALIBRATE_H
#define NCCLZ_CALIBRATE_H

#include "ncclz/codecs.h"

#ifdef __cplusplus
extern "C" {
#endif

#define NCCLZ_DATA_PROFILE_VERSION 1
#define NCCLZ_DP_MAX_FRAMES 8
#define NCCLZ_DP_MAX_RANKS 64

/* Compression of the k-rank partial sum at one frame size. */
typedef struct {
  uint64_t frame_bytes;                 /* raw (input) bytes per frame */
  double cr[NCCLZ_CODER_COUNT];         /* input bytes / frame bytes, headers and tables included */
  double entropy_cr;                    /* order-0 entropy bound of the same symbols */
} ncclzDataPoint;

typedef struct {
  uint32_t ranks;                       /* k: how many ranks' symbols are summed */
  uint32_t n_frames;
  ncclzDataPoint at[NCCLZ_DP_MAX_FRAMES];
} ncclzDataRow;

typedef struct {
  ncclzQuantSpec quant;
  ncclzDtype dtype;
  uint64_t elements_per_rank;
  uint32_t n_rows;                      /* 1..N */
  ncclzDataRow row[NCCLZ_DP_MAX_RANKS];
} ncclzDataProfile;

/* Rank inputs: n_inputs arrays of n elements each (the same shape), quantized with the step all
 * ranks would agree on (REL range over all of them; QSGD scales the max over ranks), then summed
 * 1..n_inputs at a time and coded at each frame size. */
ncclzStatus ncclzDataProfileBuild(const ncclzQuantSpec *spec, ncclzDtype dtype, const void *const *inputs,
                                  uint32_t n_inputs, size_t n, const uint32_t *dims, int ndims,
                                  const uint64_t *frame_bytes, uint32_t n_frame_sizes, ncclzDataProfile *out);

/* The profile as JSON text (malloc'd; docs/data-profile.md gives the schema). */
char *ncclzDataProfileToJson(const ncclzDataProfile *dp, const char *const *inputs, uint32_t n_inputs);

#ifdef __cplusplus
}
#endif
#endif
