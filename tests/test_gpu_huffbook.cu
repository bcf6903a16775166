/* The block-wide steps of the GPU code-length builder (codecs/cuda/huff_block.cuh) against the
 * host's serial ones (codecs/huff_codebook.h): the tree's parent links built by one device thread,
 * then the depths both serially on the device and by the block's pointer jumping, for random
 * histograms of many shapes, in both block shapes the library uses (the code book: 1024 threads;
 * the REA planner: 256). Every leaf's depth must equal the host's.
 * Without a GPU it prints "SKIP: no CUDA device" and exits 77. */
#include <stdint.h>
#include <string.h>

#include <algorithm>
#include <vector>

#include "../codecs/cuda/huff_block.cuh"
#include "testutil_cuda.cuh"

#define MAX_M 8194u
#define SMEM (MAX_M * 8 + 2 * MAX_M * 4)

/* serial: 1 for ncclz_huff_parents_to_depths on thread 0, 0 for the block's pointer jumping. */
template <int THREADS, int ITEMS>
__global__ void __launch_bounds__(THREADS) k_depths(const uint64_t *keys, uint32_t m, int serial, uint32_t *out) {
  extern __shared__ __align__(16) unsigned char smem[]; /* the code book's layout: weights, then links */
  uint64_t *weight = reinterpret_cast<uint64_t *>(smem);
  uint32_t *node = reinterpret_cast<uint32_t *>(weight + MAX_M);
  if (threadIdx.x == 0) ncclz_huff_tree_parents(keys, m, weight, node);
  __syncthreads();
  uint32_t *depth = reinterpret_cast<uint32_t *>(weight);
  if (serial) {
    if (threadIdx.x == 0) ncclz_huff_parents_to_depths(node, m);
    __syncthreads();
    depth = node;
  } else {
    ncclz_huff_block_depths<THREADS, ITEMS>(node, depth, m);
  }
  for (uint32_t i = threadIdx.x; i < m; i += THREADS) out[i] = depth[i];
}

/* Sorted keys (frequency << 32 | index) of m used symbols of one shape. */
static void make_keys(int shape, uint32_t m, uint64_t *st, std::vector<uint64_t> &keys) {
  keys.resize(m);
  for (uint32_t i = 0; i < m; i++) {
    uint64_t r = tu_rand(st), f;
    switch (shape) {
    case 0: f = 1 + r % 3; break;                         /* many ties */
    case 1: f = 1 + r % 100000; break;                    /* spread */
    case 2: f = 1ull << (r % 20); break;                  /* powers of two: deep, skewed */
    case 3: f = i < 8 ? 100000 + r % 10 : 1 + r % 2; break; /* a peak and a flat tail */
    default: f = 1 + (uint64_t)i * i; break;              /* Fibonacci-like growth */
    }
    keys[i] = f << 32 | i;
  }
  std::sort(keys.begin(), keys.end());
}

template <int THREADS, int ITEMS>
static void check_shape(uint32_t max_m, const char *what) {
  uint64_t st = 12345;
  CU(cudaFuncSetAttribute(k_depths<THREADS, ITEMS>, cudaFuncAttributeMaxDynamicSharedMemorySize, SMEM));
  Dev<uint64_t> dkeys(MAX_M);
  Dev<uint32_t> dout(MAX_M);
  std::vector<uint64_t> keys, weight(MAX_M);
  std::vector<uint32_t> node(2 * MAX_M), got(MAX_M);
  int cases = 0, bad_serial = 0, bad_block = 0;
  for (int shape = 0; shape < 5; shape++)
    for (uint32_t m : {2u, 3u, 5u, 8u, 31u, 33u, 200u, 259u, 1000u, 4097u, 8194u}) {
      if (m > max_m) continue;
      make_keys(shape, m, &st, keys);
      ncclz_huff_tree_depths(keys.data(), m, weight.data(), node.data());
      CU(cudaMemcpy(dkeys.p, keys.data(), 8 * m, cudaMemcpyHostToDevice));
      for (int serial = 1; serial >= 0; serial--) {
        k_depths<THREADS, ITEMS><<<1, THREADS, SMEM>>>(dkeys.p, m, serial, dout.p);
        CU(cudaGetLastError());
        CU(cudaMemcpy(got.data(), dout.p, 4 * m, cudaMemcpyDeviceToHost));
        uint32_t i = 0;
        while (i < m && got[i] == node[i]) i++;
        if (i < m) {
          printf("%s shape %d m %u %s: leaf %u depth %u on the device, %u on the host\n", what, shape, m,
                 serial ? "serial" : "block", i, got[i], node[i]);
          (serial ? bad_serial : bad_block)++;
        }
      }
      cases++;
    }
  printf("%s: %d trees, %d differ with serial depths, %d with the block's\n", what, cases, bad_serial, bad_block);
  CHECK(bad_serial == 0 && bad_block == 0, "%s: device depths differ from the host's", what);
}

int main(void) {
  if (tu_cuda_skip_without_gpu()) return 77;
  check_shape<1024, 17>(MAX_M, "code book (1024 threads)");
  check_shape<256, 3>(259, "REA planner (256 threads)");
  return tu_finish("test_gpu_huffbook");
}
