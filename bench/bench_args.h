/* Option parsing shared by the benchmark programs (C and CUDA): they are built without the CLI
 * (bench/codecs.sh builds bench_codecs with nvcc alone), so they cannot call cli_parse_int; this
 * keeps its rules and its message. */
#ifndef NCCLZ_BENCH_ARGS_H
#define NCCLZ_BENCH_ARGS_H
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

/* Option --opt's argument as a whole decimal number in lo..hi, or exit 2 with one line. */
static inline unsigned long bench_parse_uint(const char *prog, const char *opt, const char *arg, unsigned long lo,
                                             unsigned long hi) {
  char *end;
  errno = 0;
  unsigned long v = strtoul(arg, &end, 10);
  if (end == arg || *end || errno || arg[0] == '-' || v < lo || v > hi) {
    fprintf(stderr, "%s: --%s %s: expected an integer in %lu..%lu\n", prog, opt, arg, lo, hi);
    exit(2);
  }
  return v;
}
#endif
