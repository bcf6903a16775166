/* ncclz perf: cmd_perf.c (options, inputs, the checks before the first call, the MPI launch,
 * --json) runs one backend (perf_cpu.c: the host engine; perf_nccl.c: the GPU executor), and the
 * backends share one harness (perf_harness.c: inputs, output checks, sizes, the table, --stress).
 * Calls go one way: cmd_perf -> backend -> harness. */
#ifndef NCCLZ_CLI_PERF_H
#define NCCLZ_CLI_PERF_H

#include "ncclz/exec.h"

#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdint.h>

#define PERF_VERB "perf"

/* The parsed command line and the loaded --data file. */
#define PERF_MAX_FILES 64 /* --data FILE,FILE,...: at most this many */

typedef struct {
  ncclzCollective coll;
  size_t min_bytes, max_bytes;
  double factor;
  int ngpus, iters, warmup, root;
  double warm_s;               /* --warm-s: untimed traffic before the first size (nccl) */
  int stress;                  /* --stress N: N checked calls of random collectives and counts */
  int vs_plain;                /* --vs-plain: time plain NCCL too, interleaved, in the same process (nccl) */
  int nranks;                  /* all ranks: ngpus, or the MPI world size under mpirun */
  int mpi;                     /* launched by mpirun: one rank per process */
  int rank;                    /* this process's rank under mpirun, else 0: the one that prints */
  const char *hint;
  ncclzDtype dtype;
  ncclzConfig cfg;
  const char *quant_text, *data, *json, *profile, *backend, *trace;
  ncclzProfile prof;
  float *file[PERF_MAX_FILES]; /* --data: one file, or one per rank (rank r reads r mod nfiles) */
  size_t file_n[PERF_MAX_FILES];
  int nfiles;
} perf_opts;

/* One size of the table: what every rank measured, summed or maxed over the ranks. */

typedef struct {
  size_t size, count;
  double time_us, algbw, busbw, cr, maxerr, bound;
  uint64_t wrong, mix[NCCLZ_CODER_COUNT], raw, frames_b, wire;
  double codec_us, exposed_us, comm_us, iface_us; /* nccl --trace: the traced call */
  double plain_us;             /* --vs-plain: plain NCCL's time of the same call (0: not measured) */
  double host_unit_us;         /* nccl: rank 0's host time per pipeline unit in the last timed call,
                                  without its waits (0: no units, e.g. a bypassed call) */
  int traced;
  /* the (algorithm, coder policy) the calls ran: the same on every rank (ncclzExecStats) */
  ncclzAlgorithm algo;
  ncclzCoderPolicy policy;
  int pair_auto;               /* 1: the cost model's pair for the sampled, agreed CR */
  double pair_cr[NCCLZ_CODER_COUNT];
} perf_point;

/* Elements of one rank's input and output for a call of `count` (nccl-tests' count). */
size_t perf_in_elems(const perf_opts *o, size_t count);
size_t perf_out_elems(const perf_opts *o, size_t count);
/* Input element i of rank r (--data tiled from a per-rank offset, else synthetic), in the dtype. */
float perf_input_value(const perf_opts *o, int r, size_t i);
/* Adds to p->wrong and p->maxerr the check of rank `rank`'s output against every rank's inputs
 * (bound < 0: plain NCCL ran, float rounding only), on every stride-th element. */
void perf_check_output(const perf_opts *o, size_t count, int rank, const void *out, double bound, size_t stride,
                       perf_point *p);
void perf_print_header(const perf_opts *o);
void perf_print_point(const perf_opts *o, const perf_point *p);
/* The pair a call ran (its stats), into the point. */
void perf_set_pair(perf_point *p, const ncclzExecStats *s);
cJSON *perf_point_json(const perf_point *p);
/* The sizes -b..-e by -f (calloc'd into *pts); returns their number. */
size_t perf_make_points(const perf_opts *o, perf_point **pts);
/* algbw, busbw and cr of a measured point. */
void perf_finish_point(const perf_opts *o, perf_point *p);

/* --stress: the calls, drawn alike on every rank (a seeded xorshift64): collective, root and a
 * count from 0 to 4 Mi - 1 elements, log-uniform so that odd and tiny counts come up. */
typedef struct {
  uint64_t x, counts[NCCLZ_COLL_COUNT], wrong;
  int calls;
} perf_stress;
void perf_stress_init(perf_stress *st);
/* Sets oo->coll and oo->root of the next call and returns its count. */
size_t perf_stress_next(perf_stress *st, perf_opts *oo);
/* Progress on a terminal every 50 calls (call it from one rank). */
void perf_stress_progress(const perf_stress *st, int total);
/* The summary line (print it from one rank); failed: an error stopped the calls. */
void perf_stress_report(const perf_stress *st, const perf_opts *o, int failed);

/* ------------------------------------------------------------ backends */

/* A backend runs every size (or --stress) on o->ngpus threads, or as this process's rank of an
 * MPI job (o->mpi), prints the table on rank 0, adds the JSON rows to points and counts the
 * elements outside the bound over all ranks in *wrong. The options are checked before. */
typedef struct {
  const char *name;
  int (*run)(perf_opts *o, cJSON *points, uint64_t *wrong);
  void (*defaults)(perf_opts *o); /* after the options are read (NULL: none) */
} perf_backend;

extern const perf_backend perf_backend_cpu;
#ifdef NCCLZ_HAVE_NCCL
extern const perf_backend perf_backend_nccl; /* a thread per GPU, or one MPI rank per process */
#endif

#endif
