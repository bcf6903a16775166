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
#include <time.h>

#include <algorithm>
#include <functional>
#include <vector>

/* The monotonic clock in microseconds. */
static inline double bench_host_us() {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e6 + t.tv_nsec * 1e-3;
}

/* The median of v (its upper middle for an even count), 0 for none. */
static inline double bench_median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

#if defined(__CUDACC__) && defined(BENCH_PROG) /* CK names the program */
/* The median over `runs` of the time between CUDA events recorded on s around launch() (`per`
 * launches each: the time is divided by it), after `warm` untimed launches, in microseconds.
 * issue: when non-NULL, also the median host time launch() takes. */
static inline double bench_events_median_us(cudaStream_t s, int warm, int runs, int per,
                                            const std::function<void()> &launch, double *issue = nullptr) {
  cudaEvent_t a, b;
  CK(cudaEventCreate(&a));
  CK(cudaEventCreate(&b));
  for (int i = 0; i < warm; i++) launch();
  CK(cudaStreamSynchronize(s));
  std::vector<double> ev, host;
  for (int r = 0; r < runs; r++) {
    CK(cudaEventRecord(a, s));
    const double h0 = bench_host_us();
    for (int i = 0; i < per; i++) launch();
    host.push_back((bench_host_us() - h0) / per);
    CK(cudaEventRecord(b, s));
    CK(cudaEventSynchronize(b));
    float ms;
    CK(cudaEventElapsedTime(&ms, a, b));
    ev.push_back(ms * 1e3 / per);
  }
  CK(cudaEventDestroy(a));
  CK(cudaEventDestroy(b));
  if (issue) *issue = bench_median(host);
  return bench_median(ev);
}
#endif

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
