/* ncclz calibrate: measurements that feed the model and the simulator.
 *
 * Data profiles: how well each coder compresses a data set, per frame size, for one rank's
 * symbols and for the sums of 2..N ranks' symbols (what a reduction phase actually sends).
 * Layer: above codecs (and model, exec, sim); one public header. */
#ifndef NCCLZ_CALIBRATE_H
#define NCCLZ_CALIBRATE_H

#include <stdio.h>

#include "ncclz/codecs.h"
#include "ncclz/model.h"

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


/* ------------------------------------------------------ calibration profile (issue 9)
 * `ncclz calibrate` measures points (time against bytes) on the GPUs, fits them (calibrate/fit.c,
 * pure C) and writes a schema-v1 calibration profile (calibrate/write_profile.c, model/PROFILE.md).
 * The measured points travel as a "points document" (JSON, docs/calibrate.md), which is also
 * what `ncclz calibrate --from-points` reads: measuring and fitting are separate steps. */

#define NCCLZ_CAL_MAX_POINTS 64        /* distinct sizes of one fit */
#define NCCLZ_CAL_MAX_RAW_POINTS 1024   /* points of one curve in a points document (sweeps x sizes) */
#define NCCLZ_CAL_MIN_FIT_BYTES 1048576.0 /* residuals are judged from 1 MiB up */
#define NCCLZ_CAL_SMALL_TOL_FACTOR 4.0 /* below it the tolerance may be this many times looser */
#define NCCLZ_CAL_TOLERANCE 0.05          /* ... and must stay within 5% there */

typedef struct {
  double bytes, us;
} ncclzCalPoint;

/* time_us = alpha_us + bytes / (beta_gbps * 1e3): a fixed cost and a per-byte cost. Fitted by
 * least squares on the relative error, i.e. weights 1/us^2 (every size counts alike, from 1 KiB
 * to 1 GiB); alpha is clamped to >= 0 (then refitted as time proportional to bytes).
 * NCCL changes protocol, channel count and algorithm with size, so one line rarely holds from
 * 1 KiB to 1 GiB: ncclzCalFitPiecewise fits such a line per size range (segment). */
#define NCCLZ_CAL_MAX_SEGMENTS 8
typedef struct {
  double from_bytes;  /* the segment holds sizes >= from_bytes (the first one: every smaller size too) */
  double alpha_us, beta_gbps;
} ncclzCalSegment;

typedef struct {
  double alpha_us;    /* the fixed cost: the smallest size's time less its bytes at beta_gbps (>= 0) */
  double beta_gbps;   /* the last segment's: the bandwidth of large messages */
  uint32_t n_seg;
  ncclzCalSegment seg[NCCLZ_CAL_MAX_SEGMENTS];
  double tol_used;    /* piecewise: the tolerance the segments were cut for (from 1 MiB up) */
  double tol_small_used; /* piecewise: the tolerance below 1 MiB (tol_used or up to
                            NCCLZ_CAL_SMALL_TOL_FACTOR times it) */
  uint32_t n;                            /* points, sorted by bytes */
  double bytes[NCCLZ_CAL_MAX_POINTS];
  double us[NCCLZ_CAL_MAX_POINTS];
  double resid[NCCLZ_CAL_MAX_POINTS];    /* (fit - measured) / measured */
  uint32_t n_1m;                         /* points with bytes >= NCCLZ_CAL_MIN_FIT_BYTES */
  double max_resid_1m;                   /* worst |resid| over those (0 if none) */
  double max_resid;                      /* worst |resid| over all points */
} ncclzCalFit;

/* NCCLZ_ERR_ARG for no points, more than NCCLZ_CAL_MAX_POINTS, bytes or us <= 0 / not finite,
 * or points whose time does not grow with bytes (no positive bandwidth). */
ncclzStatus ncclzCalFitLinear(const ncclzCalPoint *pts, size_t n, ncclzCalFit *out);
/* The fewest segments (dynamic programming over the sizes) whose lines stay within `tol` of every
 * point. If that needs more than NCCLZ_CAL_MAX_SEGMENTS segments (noisy points), the tolerance
 * below NCCLZ_CAL_MIN_FIT_BYTES is relaxed first (doubling, up to NCCLZ_CAL_SMALL_TOL_FACTOR
 * times), then the whole tolerance by 25% steps. */
ncclzStatus ncclzCalFitPiecewise(const ncclzCalPoint *pts, size_t n, double tol, ncclzCalFit *out);
double ncclzCalFitEval(const ncclzCalFit *f, double bytes);

/* Time (same unit as the inputs) of the intervals [ts[i], ts[i]+dur[i]) that lies outside the union
 * of the comm intervals: the exposed codec time of an executor trace. */
double ncclzCalExposed(const double *comm_ts, const double *comm_dur, size_t n_comm, const double *ts,
                       const double *dur, size_t n);

/* Measured paths. socket1x1/socket4x4 are the NET socket path with NCCL_NSOCKS_PERTHREAD x
 * NCCL_SOCKET_NTHREADS = 1x1 and 4x4 (collective curves only; `socket` feeds transports.net). */
typedef enum {
  NCCLZ_CAL_NVLINK = 0,
  NCCLZ_CAL_SHM = 1,
  NCCLZ_CAL_SOCKET = 2,
  NCCLZ_CAL_SOCKET1X1 = 3,
  NCCLZ_CAL_SOCKET4X4 = 4,
  NCCLZ_CAL_PATH_COUNT = 5
} ncclzCalPath;
const char *ncclzCalPathName(ncclzCalPath p);  /* "nvlink", "shm", "socket", "socket1x1", "socket4x4" */
int ncclzCalPathFromName(const char *name);    /* -1 if unknown */
/* NCCL environment of a path, "NAME=VALUE" strings ending with NULL (NCCL_NVLS_ENABLE=0 always). */
const char *const *ncclzCalPathEnv(ncclzCalPath p);

#define NCCLZ_CAL_CODERS 3   /* indexed by ncclzCoder; RAW unused */
#define NCCLZ_CAL_CLASSES 5  /* indexed by ncclzDataClass (model.h) */
#define NCCLZ_CAL_HINTS 3    /* indexed by ncclzTransportHint (model.h) */
#define NCCLZ_CAL_COLLS 5    /* indexed by ncclzCollective (schedule.h) */

typedef struct {
  int present;
  ncclzCalFit encode, decode;
  int measured_curve;          /* 1: the line missed the tolerance, the profile keeps the measured points */
} ncclzCalCodecFit;

/* Everything fitted from one points document. */
typedef struct {
  char device[128], driver[64], cuda[64], nccl[64], date[64], method[256];
  int sendrecv_present[NCCLZ_CAL_PATH_COUNT];
  ncclzCalFit sendrecv[NCCLZ_CAL_PATH_COUNT];
  int coll_present[NCCLZ_CAL_PATH_COUNT][NCCLZ_CAL_COLLS];
  ncclzCalFit coll[NCCLZ_CAL_PATH_COUNT][NCCLZ_CAL_COLLS];
  uint32_t plain_ranks;        /* ranks of the collective measurements (0: none) */
  ncclzCalCodecFit codec[NCCLZ_CAL_CODERS][NCCLZ_CAL_CLASSES];
  double lambda_enc[NCCLZ_CAL_CODERS][NCCLZ_CAL_HINTS], lambda_dec[NCCLZ_CAL_CODERS][NCCLZ_CAL_HINTS];
  int lambda_measured[NCCLZ_CAL_CODERS][NCCLZ_CAL_HINTS];
  /* The interface cost per hint (quantize + agree + dequantize of a traced call): a line through
   * the traced points, alpha_us + bytes / (gbps * 1e3); present 0 when not measured. */
  double iface_alpha_us[NCCLZ_CAL_HINTS], iface_gbps[NCCLZ_CAL_HINTS];
  double iface_unit_us[NCCLZ_CAL_HINTS]; /* median host time per pipeline unit (0: not measured) */
  ncclzCurve iface_curve[NCCLZ_CAL_HINTS]; /* the quickest traced call at each size (2+ sizes) */
  int iface_present[NCCLZ_CAL_HINTS];
  double worst_resid_1m;       /* over every fit, sizes >= 1 MiB */
  char worst_what[96];         /* which fit and size it was */
  char notes[1024];            /* what was filled in rather than measured ('; '-separated) */
} ncclzCalResult;

/* Parses a points document and fits everything in it. NCCLZ_ERR_ARG names the bad field. */
ncclzStatus ncclzCalFitPoints(const char *json, size_t len, ncclzCalResult *out);
/* The schema-v1 profile (malloc'd JSON text), checked with ncclzProfileParse before it is returned;
 * the fits and residuals go under the top-level key "fit", which the loader ignores. NULL on error. */
char *ncclzCalProfileJson(const ncclzCalResult *r);
/* Residual table (one line per fit) on f. */
void ncclzCalReport(const ncclzCalResult *r, FILE *f);
/* Appends the arrays of points document b to those of a (metadata: a's, then b's for fields a lacks);
 * returns the merged document (malloc'd) or NULL with the error set. */
char *ncclzCalPointsMerge(const char *a, const char *b);

/* ---- Codec-only recalibration (`ncclz calibrate --codecs-only --base POINTS.json`): the codec
 * curves of a fresh measurement joined to every other point (send/recv, collectives, overlap) of a
 * base points document, unchanged; the merged document's metadata says where each part came from
 * (docs/calibrate.md). `name` is the base's file name as the messages and the metadata give it. */
/* NCCLZ_ERR_ARG (one line naming `name`) unless base is a points document with send/recv points. */
ncclzStatus ncclzCalCodecsOnlyBase(const char *base, size_t len, const char *name);
/* The base with its "codecs" replaced by those of fresh (a points document with some, named
 * fresh_name in errors); malloc'd, or NULL with the error set. */
char *ncclzCalCodecsOnlyMerge(const char *base, size_t base_len, const char *name, const char *fresh, size_t fresh_len,
                              const char *fresh_name);

/* ---- The check (`ncclz calibrate --check`): a profile's plain-collective predictions against a
 * fresh measurement (a points document of "collectives" entries, each size measured in
 * several sweeps), at sizes >= NCCLZ_CAL_MIN_FIT_BYTES. Targets: median |error| <= 8%, none > 20%. */
#define NCCLZ_CAL_CHECK_MAX_ROWS 512
#define NCCLZ_CAL_CHECK_MAX_REPEAT 16
#define NCCLZ_CAL_CHECK_MEDIAN 0.08
#define NCCLZ_CAL_CHECK_MAX 0.20
typedef struct {
  char path[16], collective[16];
  double bytes;
  uint32_t n;                                  /* repetitions measured */
  double us[NCCLZ_CAL_CHECK_MAX_REPEAT];
  double median_us;                            /* the measurement compared */
  double spread;                               /* (max - min) / median of the repetitions */
  double predicted_us;                         /* -1: the profile has no curve for it */
  double error;                                /* (predicted - median) / median */
} ncclzCalCheckRow;

typedef struct {
  uint32_t n_rows, n_missing, n_over;          /* n_over: |error| > NCCLZ_CAL_CHECK_MAX */
  double median_abs_error, max_abs_error, median_spread, max_spread;
  char worst[96];
  int target_met;
  ncclzCalCheckRow rows[NCCLZ_CAL_CHECK_MAX_ROWS];
} ncclzCalCheck;

/* NCCLZ_ERR_ARG for a broken document, or ranks that differ from the profile's plain_ranks. */
ncclzStatus ncclzCalCheckPoints(const ncclzProfile *prof, const char *json, size_t len, ncclzCalCheck *out);
/* nccl-tests-style table plus the summary lines on f. */
void ncclzCalCheckReport(const ncclzCalCheck *c, FILE *f);
/* The check as JSON (malloc'd): summary, targets and every row. */
char *ncclzCalCheckJson(const ncclzCalCheck *c, const ncclzProfile *prof);

/* ---- GPU measurement (calibrate/measure_gpu.cu; only in CUDA+NCCL builds, which define
 * NCCLZ_HAVE_CALIBRATE_GPU). Each returns a points document (malloc'd) or NULL with the error set.
 * A path's NCCL environment must be set before the call (the CLI runs each path as a child). */
typedef struct {
  int ngpus;      /* >= 2 for transports */
  int quick;      /* fewer sizes and repetitions */
  int progress;   /* progress lines on stderr */
  int check;      /* ncclzCalMeasurePath: only the plain collectives, at the check's sizes */
  int sweeps;     /* ncclzCalMeasurePath: whole size sweeps of send/recv and the collectives (>= 1) */
  int codecs_only; /* ncclzCalMeasureCodecs: the run measures nothing else (its metadata says so) */
} ncclzCalMeasureOpts;
int ncclzCalGpuCount(void);
char *ncclzCalMeasureCodecs(const ncclzCalMeasureOpts *o);
char *ncclzCalMeasurePath(const ncclzCalMeasureOpts *o, ncclzCalPath path);

#ifdef __cplusplus
}
#endif
#endif
