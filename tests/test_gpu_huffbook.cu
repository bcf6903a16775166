/* The block-wide steps of the GPU code-length builder (codecs/cuda/huff_block.cuh) against the
 * host's serial ones (codecs/huff_codebook.h): the tree's parent links built by the whole block
 * (the fixed point the library uses; timed) and by one device thread, then the depths both
 * serially on the device and by the block's pointer jumping, for random histograms of many
 * shapes, in the code book's block shape (1024 threads, up to 8,194 symbols) and a smaller one
 * (512 threads, 259 symbols: the templates at another size). Every leaf's depth must equal the
 * host's.
 * Without a GPU it prints "SKIP: no CUDA device" and exits 77. */
#include <stdint.h>
#include <string.h>

#include <algorithm>
#include <vector>

#include "../codecs/cuda/huff_block.cuh"
#include "testutil_cuda.cuh"

#define MAX_M 8194u
#define SMEM (2 * MAX_M * 8 + 2 * MAX_M * 4)

/* serial: 1 for ncclz_huff_parents_to_depths on thread 0, 0 for the block's pointer jumping. */
template <int THREADS, int ITEMS>
__global__ void __launch_bounds__(THREADS) k_depths(const uint64_t *keys, uint32_t m, int serial, uint32_t *out,
                                                    long long *cyc) {
  extern __shared__ __align__(16) unsigned char smem[]; /* the code book's layout: keys, weights, links */
  uint64_t *skey = reinterpret_cast<uint64_t *>(smem), *weight = skey + MAX_M;
  uint32_t *node = reinterpret_cast<uint32_t *>(weight + MAX_M);
  for (uint32_t i = threadIdx.x; i < m; i += THREADS) skey[i] = keys[i];
  __syncthreads();
  /* the parents as the library builds them: by the whole block (the fixed point) */
  uint32_t *sums = reinterpret_cast<uint32_t *>(weight);
  const long long c0 = clock64();
  const uint32_t rounds = ncclz_huff_block_parents<THREADS>(skey, m, sums, sums + MAX_M, node);
  if (threadIdx.x == 0) cyc[0] = clock64() - c0, cyc[1] = rounds;
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

/* The parent links alone, for the first link that differs from the host's: built by one thread
 * from keys in shared memory (mode 0) or in global memory (mode 1), or by the whole block (mode 2,
 * the fixed point the library uses). */
template <int THREADS>
__global__ void __launch_bounds__(THREADS) k_parents(const uint64_t *keys, uint32_t m, int mode, uint64_t *gweight,
                                                     uint32_t *out) {
  extern __shared__ __align__(16) unsigned char smem[];
  uint64_t *skey = reinterpret_cast<uint64_t *>(smem), *weight = skey + MAX_M;
  uint32_t *node = reinterpret_cast<uint32_t *>(weight + MAX_M);
  for (uint32_t i = threadIdx.x; i < m; i += THREADS) skey[i] = keys[i];
  __syncthreads();
  if (mode == 2) {
    uint32_t *sums = reinterpret_cast<uint32_t *>(weight);
    ncclz_huff_block_parents<THREADS>(skey, m, sums, sums + MAX_M, node);
  } else if (threadIdx.x == 0) {
    if (mode == 1) ncclz_huff_tree_parents(keys, m, gweight, out);
    else ncclz_huff_tree_parents(skey, m, weight, node);
  }
  __syncthreads();
  if (mode != 1)
    for (uint32_t i = threadIdx.x; i < 2 * m - 1; i += THREADS) out[i] = node[i];
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

/* First of the n words where the device's differ from the host's; n if none. */
static uint32_t first_diff(const std::vector<uint32_t> &got, const std::vector<uint32_t> &want, uint32_t n) {
  uint32_t i = 0;
  while (i < n && got[i] == want[i]) i++;
  return i;
}

template <int THREADS, int ITEMS>
static void check_shape(uint32_t max_m, const char *what) {
  uint64_t st = 12345;
  CU(cudaFuncSetAttribute(k_depths<THREADS, ITEMS>, cudaFuncAttributeMaxDynamicSharedMemorySize, SMEM));
  CU(cudaFuncSetAttribute(k_parents<THREADS>, cudaFuncAttributeMaxDynamicSharedMemorySize, SMEM));
  Dev<uint64_t> dkeys(MAX_M), dweight(MAX_M);
  Dev<uint32_t> dout(MAX_M), dlinks(2 * MAX_M);
  Dev<long long> dcyc(2);
  std::vector<uint64_t> keys, weight(MAX_M);
  std::vector<uint32_t> want(2 * MAX_M), depth(2 * MAX_M), got(2 * MAX_M);
  int cases = 0, bad_serial = 0, bad_block = 0, bad_links = 0;
  for (int shape = 0; shape < 5; shape++)
    for (uint32_t m : {2u, 3u, 5u, 8u, 31u, 33u, 200u, 259u, 1000u, 4097u, 8194u}) {
      if (m > max_m) continue;
      make_keys(shape, m, &st, keys);
      ncclz_huff_tree_parents(keys.data(), m, weight.data(), want.data()); /* the host's links */
      depth = want;
      ncclz_huff_parents_to_depths(depth.data(), m); /* and its depths */
      CU(cudaMemcpy(dkeys.p, keys.data(), 8 * m, cudaMemcpyHostToDevice));
      for (int serial = 1; serial >= 0; serial--) {
        k_depths<THREADS, ITEMS><<<1, THREADS, SMEM>>>(dkeys.p, m, serial, dout.p, dcyc.p);
        CU(cudaGetLastError());
        long long cyc[2];
        CU(cudaMemcpy(cyc, dcyc.p, sizeof cyc, cudaMemcpyDeviceToHost));
        if (serial && (m == 257 || m == 259 || m == 8194))
          printf("%s shape %d m %u: block parents in %lld rounds, %.1f us at 1.98 GHz\n", what, shape, m, cyc[1],
                 cyc[0] / 1980.0);
        CU(cudaMemcpy(got.data(), dout.p, 4 * m, cudaMemcpyDeviceToHost));
        const uint32_t i = first_diff(got, depth, m);
        if (i < m) {
          printf("%s shape %d m %u %s: leaf %u depth %u on the device, %u on the host\n", what, shape, m,
                 serial ? "serial" : "block", i, got[i], depth[i]);
          (serial ? bad_serial : bad_block)++;
        }
      }
      /* the parent links themselves: one thread from shared and from global memory, the block */
      static const char *const where[] = {"one thread, shared memory", "one thread, global memory", "the block"};
      for (int mode = 0; mode < 3; mode++) {
        k_parents<THREADS><<<1, THREADS, SMEM>>>(dkeys.p, m, mode, dweight.p, dlinks.p);
        CU(cudaGetLastError());
        CU(cudaMemcpy(got.data(), dlinks.p, 4 * (2 * m - 1), cudaMemcpyDeviceToHost));
        const uint32_t i = first_diff(got, want, 2 * m - 1);
        if (i < 2 * m - 1) {
          printf("%s shape %d m %u by %s: node %u's parent %u on the device, %u on the host (merge %u)\n", what,
                 shape, m, where[mode], i, got[i], want[i], want[i] - m);
          bad_links++;
        }
      }
      cases++;
    }
  printf("%s: %d trees, %d differ with serial depths, %d with the block's, %d parent-link runs differ\n", what, cases,
         bad_serial, bad_block, bad_links);
  CHECK(bad_links == 0, "%s: device parent links differ from the host's", what);
  CHECK(bad_serial == 0 && bad_block == 0, "%s: device depths differ from the host's", what);
}

/* Step 4's rank -> length (ncclz_huff_rank_length) for every rank of a count table, against the
 * serial assignment (shortest first). */
__global__ void k_rank_lengths(const uint32_t *count, uint32_t m, uint32_t *out) {
  for (uint32_t i = threadIdx.x; i < m; i += blockDim.x) out[i] = ncclz_huff_rank_length(count, i);
}

static void check_rank_lengths(void) {
  uint64_t st = 99;
  Dev<uint32_t> dcount(NCCLZ_HUFF_LEN_LIMIT + 1), dout(MAX_M);
  std::vector<uint32_t> got(MAX_M);
  int bad = 0;
  for (int c = 0; c < 200; c++) {
    uint32_t count[NCCLZ_HUFF_LEN_LIMIT + 1] = {0}, m = 0;
    for (uint32_t len = 1; len <= NCCLZ_HUFF_MAX_LEN; len++) m += count[len] = tu_rand(&st) % 3 ? tu_rand(&st) % 200 : 0;
    if (!m) continue;
    CU(cudaMemcpy(dcount.p, count, sizeof count, cudaMemcpyHostToDevice));
    k_rank_lengths<<<1, 256>>>(dcount.p, m, dout.p);
    CU(cudaMemcpy(got.data(), dout.p, 4 * m, cudaMemcpyDeviceToHost));
    uint32_t len = 1;
    for (uint32_t i = 0; i < m; i++) {
      while (count[len] == 0) len++;
      count[len]--;
      if (got[i] != len) {
        if (!bad) printf("rank %u of %u: length %u on the device, %u serially\n", i, m, got[i], len);
        bad++;
      }
    }
  }
  printf("rank lengths: %d differ\n", bad);
  CHECK(bad == 0, "rank lengths differ from the serial assignment");
}

int main(void) {
  if (tu_cuda_skip_without_gpu()) return 77;
  check_shape<1024, 17>(MAX_M, "code book (1024 threads)");
  check_shape<512, 2>(259, "small alphabet (512 threads)");
  check_rank_lengths();
  return tu_finish("test_gpu_huffbook");
}
