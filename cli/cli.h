/* The ncclz command line: one binary, one function per verb. */
#ifndef NCCLZ_CLI_H
#define NCCLZ_CLI_H
#include <getopt.h>
#include <stdio.h>

/* Exit codes of the command-line contract. */
enum { CLI_OK = 0, CLI_RUNTIME = 1, CLI_USAGE = 2 };

typedef int (*cli_verb_fn)(int argc, char **argv);

int cli_codec(int argc, char **argv);
int cli_model(int argc, char **argv);
int cli_perf(int argc, char **argv);
int cli_profile_data(int argc, char **argv);
int cli_sim(int argc, char **argv);
int cli_run(int argc, char **argv);
int cli_calibrate(int argc, char **argv);

#include "ncclz/codecs.h"
#include "ncclz/model.h"
/* `--coder auto` (cli/rea_chooser.c): a loaded profile and transport hint, and the frame encoder
 * (an ncclzFrameEncoderFn) that runs the REA on every frame with them. */
typedef struct cli_rea cli_rea;
cli_rea *cli_rea_open(const char *verb, const char *profile_path, const char *hint);
void cli_rea_close(cli_rea *r);
#ifdef NCCLZ_HAVE_CUDA
#include "ncclz/codecs_cuda.h"
/* `--coder auto --device gpu`: the REA device selector as ncclzCudaCodecBench's coder per frame,
 * with the post-check's limits, deciding as cli_rea_encode does on the host for frames of
 * frame_symbols of n symbols quantized per qp. cli_rea_gpu_close frees what it made. */
typedef struct cli_rea_gpu cli_rea_gpu;
cli_rea_gpu *cli_rea_gpu_open(const char *verb, const cli_rea *r, const ncclzQuantParams *qp, const ncclzCoderParams *cp,
                              size_t n, uint32_t frame_symbols, ncclzCudaCoderChooser *chooser);
void cli_rea_gpu_close(cli_rea_gpu *g);
#endif
ncclzStatus cli_rea_encode(const int32_t *sym, size_t n, const ncclzFrameDesc *d, uint8_t *dst, size_t cap,
                           size_t *len, ncclzCoder *committed, void *ctx);

/* Prints "ncclz VERB: message" on stderr (one line) and returns CLI_USAGE. */
int cli_usage_error(const char *verb, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
/* getopt_long for every verb: one line of ours instead of getopt's own message. The option string
 * gets a leading ':' so that a missing value is told apart from an unknown option. */
int cli_getopt(int argc, char *const argv[], const char *shortopts, const struct option *longopts);
/* The line for getopt's '?' or ':' (cli_getopt's c): "ncclz VERB: unknown option '--x' (ncclz VERB
 * --help)" or "... --x needs a value ..."; returns CLI_USAGE. */
int cli_option_error(const char *verb, int c, char *const argv[]);
/* A whole decimal integer in [lo, hi] into *out; else "ncclz VERB: OPT VALUE: expected an integer
 * in lo..hi" and CLI_USAGE (atoi would take "4x" as 4 and "abc" as 0). */
int cli_parse_int(const char *verb, const char *opt, const char *arg, long lo, long hi, int *out);
/* Same, returning CLI_RUNTIME. */
int cli_runtime_error(const char *verb, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
/* The contract's --json output: prints root as one line on stdout and frees it. */
struct cJSON;
int cli_emit_json(const char *verb, struct cJSON *root);
/* Reads a whole file; returns NULL and prints a one-line error on failure. */
void *cli_read_file(const char *verb, const char *path, size_t *len);
/* The calibration profile of a verb: `path` (--profile), else $NCCLZ_PROFILE, else the built-in
 * H200 profile (ncclzProfileDefault). *name (may be NULL) says which. CLI_OK or CLI_USAGE. */
int cli_load_profile(const char *verb, const char *path, ncclzProfile *out, const char **name);

/* Writes text and a final newline to path (ncclzWriteFile); CLI_OK, or CLI_RUNTIME after the
 * one-line error. */
int cli_write_text(const char *verb, const char *path, const char *text);
/* --dtype: f32, bf16 or f16 into *out; CLI_OK, or CLI_USAGE after a one-line message. */
int cli_parse_float_dtype(const char *verb, const char *arg, ncclzDtype *out);
/* Parses "AxBxC" into up to 3 dims; returns the count or -1. */
int cli_parse_dims(const char *s, unsigned dims[3]);
/* A byte size (ncclzParseBytes: "65536", "4M", "4MiB", "1.5K"); 0 when it is not one. */
unsigned long long cli_parse_size(const char *s);
#endif
