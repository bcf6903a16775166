/* Pieces shared by the Lorenzo kernels of quant_cuda.cu (forward), eb_dequant_cuda.cu (the inverse
 * of planes that fit in shared memory) and lz_inverse_cuda.cu (the inverse of larger planes): the
 * CTA shapes, cp.async staging, wrapping sums of groups of 4 codes, and the carry into chunks of
 * planes. */
#ifndef NCCLZ_CUDA_LORENZO_CUH
#define NCCLZ_CUDA_LORENZO_CUH

#include <stdint.h>

#include <cuda_runtime.h>

#include "ncclz/codecs.h"
#include "internal.cuh"

/* Whole planes in shared memory (k_eb_lz_fwd, k_lz_inverse): CTAs of LZ_THREADS, planes of at most
 * LZ_MAXP elements, LZ_MAXE a thread. */
#define LZ_THREADS 512
#define LZ_MAXP 12288
#define LZ_MAXE (LZ_MAXP / LZ_THREADS)
/* Planes streamed through shared-memory slots (k_eb_lz_pipe, k_lz_inv_pipe). */
#define LZP_THREADS 1024
#define LZP_SMEM (200 * 1024) /* the slots' budget: 1 CTA an SM */
#define LZP_MAXP (LZP_SMEM / 16) /* 4 slots */

/* Threads a CTA for the plane-streaming kernels: 512, two CTAs an SM, where a plane of up to
 * 8,192 elements leaves room for two CTAs' slots (one CTA's barriers then overlap the other's
 * work: 7% faster forward, 13% inverse, on 64 x 128 planes of TREFHT), else LZP_THREADS, one an SM. */
static inline int lzp_threads(uint32_t P, uint32_t d2) {
  return P <= 4u * 4 * 512 && d2 / 4 <= 512 ? 512 : LZP_THREADS;
}

/* CTAs an SM for nt threads a CTA, and the chunk of planes each takes so that they fill the chip. */
static inline ncclzStatus lzp_grid(uint32_t d0, int nt, uint32_t *ppc) {
  int nsm = 0;
  const ncclzStatus st = nz_sm_count(&nsm);
  if (st != NCCLZ_OK) return st;
  *ppc = (uint32_t)ncclz_ceil_div(d0, (uint64_t)nsm * (LZP_THREADS / nt));
  return NCCLZ_OK;
}

/* Planes per CTA for the Lorenzo paths: enough CTAs to fill the chip, at least 4 chunks when
 * there are 4 planes (so that the carries between chunks are always exercised). */
static inline uint32_t lz_planes_per_cta(uint32_t d0, uint32_t ctas) {
  uint32_t c = d0 / ctas;
  if (c > 16) c = 16;
  if (c > d0 / 4) c = d0 / 4;
  return c ? c : 1;
}

static __device__ __forceinline__ void cp_async16(void *smem, const void *gmem) {
  const unsigned a = (unsigned)__cvta_generic_to_shared(smem);
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(a), "l"(gmem) : "memory");
}
static __device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
template <int N> static __device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory");
}

/* Wrapping sums of groups of 4 codes. */
static __device__ __forceinline__ uint4 add4(uint4 a, uint4 b) {
  return make_uint4(a.x + b.x, a.y + b.y, a.z + b.z, a.w + b.w);
}

/* The carry into each of nc chunks of ppc planes of P words (chunk c's words at agg + c * P): the
 * sum of the planes of d before the chunk, wrapping. d NULL: agg already holds each chunk's own sum. */
ncclzStatus nz_lz_chunk_carry(const int32_t *d, uint32_t P, uint32_t d0, uint32_t ppc, uint32_t nc, uint32_t *agg,
                              cudaStream_t s);

/* The inclusive sum along an axis of len steps (stride inner4 groups of 4 words, outer times), from
 * in to out (in place where in == out), in segments with carries where the columns alone would leave
 * the chip short of threads; scratch holds a group a thread (at most outer * len * inner4). */
ncclzStatus nz_lz_walk(const uint4 *in, uint4 *out, size_t outer, uint32_t len, size_t inner4, uint4 *scratch,
                       cudaStream_t s);

/* Whether nz_lz_inverse_bands takes planes of d1 x d2 with L predicted axes (L >= 2, rows of whole
 * groups of 4, at most 1,024 groups, 16-byte aligned codes, floats and workspace). */
bool nz_lz_bands_fit(int L, uint32_t d2, const void *d_sym, const void *d_x, const void *d_ws);

/* Inverse Lorenzo (L = 2 or 3 axes) and dequantization of d0 planes of d1 x d2 codes into x, in one
 * pass over the codes after a pass of sums (lz_inverse_cuda.cu); ws holds at least 4 n bytes. */
ncclzStatus nz_lz_inverse_bands(int L, uint32_t d0, uint32_t d1, uint32_t d2, const int32_t *d_sym, double abs_eb,
                                const double *d_abs_eb, float *d_x, void *d_ws, size_t ws_bytes, cudaStream_t s);

#endif
