/* Helpers for the GPU tests: a CUDA call that must succeed, and a device buffer that frees itself. */
#ifndef NCCLZ_TESTUTIL_CUDA_CUH
#define NCCLZ_TESTUTIL_CUDA_CUH
#include <stdio.h>
#include <stdlib.h>

#include <cuda_runtime.h>

extern "C" {
#include "testutil.h"
}

#define CU(call)                                                                                \
  do {                                                                                          \
    cudaError_t e_ = (call);                                                                    \
    if (e_ != cudaSuccess) {                                                                    \
      fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_));   \
      exit(1);                                                                                  \
    }                                                                                           \
  } while (0)

template <typename T>
struct Dev {
  T *p = nullptr;
  explicit Dev(size_t n) { CU(cudaMalloc(&p, n * sizeof(T) + 16)); }
  ~Dev() { cudaFree(p); }
};

/* 77 (CTest's skip code) with a line that says so, when there is no GPU. */
static inline int tu_cuda_skip_without_gpu(void) {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) {
    printf("SKIP: no CUDA device\n");
    return 1;
  }
  return 0;
}
#endif
