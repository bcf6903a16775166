/* Option parsing and input loading shared by the benchmark programs (C and CUDA): they are built
 * without the CLI (bench/codecs.sh builds bench_codecs with nvcc alone), so they cannot call
 * cli_parse_int; this keeps its rules and its message. */
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

#ifdef __CUDACC__
/* Exit 1 with one line naming the program (BENCH_PROG, defined before the include) when a CUDA
 * or ncclz call fails. */
#define CK(call)                                                                                   \
  do {                                                                                             \
    cudaError_t e_ = (call);                                                                       \
    if (e_ != cudaSuccess) {                                                                       \
      fprintf(stderr, "%s: %s: %s (line %d)\n", BENCH_PROG, #call, cudaGetErrorString(e_), __LINE__); \
      exit(1);                                                                                     \
    }                                                                                              \
  } while (0)
#define NZ(call)                                                                                   \
  do {                                                                                             \
    if ((call) != NCCLZ_OK) {                                                                      \
      fprintf(stderr, "%s: %s: %s\n", BENCH_PROG, #call, ncclzLastError());                        \
      exit(1);                                                                                     \
    }                                                                                              \
  } while (0)
#endif

#ifdef __cplusplus
#include <vector>
/* n floats: the float32 file at path repeated (tiled) to length n, or exit 2 with one line when
 * it cannot be read or holds no value. */
static inline std::vector<float> bench_load_tiled(const char *prog, const char *path, size_t n) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    fprintf(stderr, "%s: cannot open %s\n", prog, path);
    exit(2);
  }
  std::vector<float> src;
  float buf[4096];
  size_t got;
  while ((got = fread(buf, 4, 4096, f)) > 0) src.insert(src.end(), buf, buf + got);
  fclose(f);
  if (src.empty()) {
    fprintf(stderr, "%s: %s holds no float32 value\n", prog, path);
    exit(2);
  }
  std::vector<float> x(n);
  for (size_t i = 0; i < n; i++) x[i] = src[i % src.size()];
  return x;
}
#endif
#endif
