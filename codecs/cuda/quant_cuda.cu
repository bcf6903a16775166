/* Quantizers on the GPU with the reference's exact binary64 arithmetic (-fmad=false: one rounding
 * per operation, in FORMAT.md's order). EB quantization fuses the Lorenzo forward step: each
 * thread recomputes its neighbours' codes instead of reading them back, which costs arithmetic
 * (cheap) instead of a second pass over memory (expensive). QSGD's passes are in qsgd_cuda.cu. */
#include <cub/block/block_scan.cuh>
#include <cub/device/device_scan.cuh>
#include <cuda/functional>
#include <math.h>

#include "decode_out.cuh"
#include "eb_quant.cuh"
#include "lorenzo.cuh"

/* ------------------------------------------------------------ EB */

/* A neighbour's term in the predictor: fill counts as 0, as do failures (reported at their own
 * index). */
static __device__ __forceinline__ uint32_t eb_term(const float *x, size_t i, const EbParams &p) {
  float v = __ldg(x + i);
  if (p.has_fill && v == p.fill) return 0u;
  int bad = 0;
  return (uint32_t)eb_code(v, p, &bad);
}

__global__ void k_eb_quant(EbParams p, int resolved, const float *x, size_t n, int32_t *sym,
                           ncclzCudaQuantStats *st) {
  nz_pdl_enter();
  eb_ready(p, resolved, st); /* eb:rel resolved on the device */
  size_t stride = (size_t)gridDim.x * blockDim.x;
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += stride) {
    float v = __ldg(x + i);
    int32_t out;
    int bad = 0;
    if (p.has_fill && v == p.fill) {
      out = NCCLZ_FILL_CODE;
    } else {
      int32_t c = eb_code(v, p, &bad);
      uint32_t pred = 0;
      if (p.lorenzo) {
        size_t k = i % p.d2, j = (i / p.d2) % p.d1, pl = i / ((size_t)p.d1 * p.d2);
        size_t row = p.d2, plane = (size_t)p.d1 * p.d2;
        int hk = k > 0, hj = p.lorenzo >= 2 && j > 0, hi = p.lorenzo == 3 && pl > 0;
        if (hk) pred += eb_term(x, i - 1, p);
        if (hj) pred += eb_term(x, i - row, p);
        if (hj && hk) pred -= eb_term(x, i - row - 1, p);
        if (hi) pred += eb_term(x, i - plane, p);
        if (hi && hk) pred -= eb_term(x, i - plane - 1, p);
        if (hi && hj) pred -= eb_term(x, i - plane - row, p);
        if (hi && hj && hk) pred += eb_term(x, i - plane - row - 1, p);
      }
      out = (int32_t)((uint32_t)c - pred);
    }
    sym[i] = out;
    if (bad) eb_count_failure(st, bad, i);
  }
}

/* The streaming kernels' loads in flight: each thread issues EB_UNROLL float4 loads before it
 * uses the first. One float4 per thread per iteration left the range and quantize passes latency
 * bound (2048 threads x 16 B = 32 KiB in flight per SM, about what the H200's bandwidth x latency
 * needs with nothing to spare); four lift quantize + FIXEDLEN on TREFHT REL 1e-4 by about 6%, and
 * the range pass reads at 4.3 TB/s (ncu, H200). */
#define EB_UNROLL 4

/* EB without Lorenzo: float4 in, int4 out (both 16-byte aligned), the tail scalar. */
__global__ void __launch_bounds__(256) k_eb_quant_vec(EbParams p, int resolved, const float *x, size_t n, int32_t *sym,
                                                      ncclzCudaQuantStats *st, int32_t fill_code) {
  nz_pdl_enter();
  eb_ready(p, resolved, st);
  const size_t gid = blockIdx.x * (size_t)blockDim.x + threadIdx.x, stride = (size_t)gridDim.x * blockDim.x;
  const size_t n4 = n / 4;
  const float4 *x4 = (const float4 *)x;
  int4 *s4 = (int4 *)sym;
  for (size_t q0 = gid; q0 < n4; q0 += EB_UNROLL * stride) {
    float4 v[EB_UNROLL];
#pragma unroll
    for (int u = 0; u < EB_UNROLL; u++) {
      const size_t q = q0 + u * stride;
      v[u] = q < n4 ? __ldg(x4 + q) : make_float4(0.f, 0.f, 0.f, 0.f);
    }
#pragma unroll
    for (int u = 0; u < EB_UNROLL; u++) {
      const size_t q = q0 + u * stride;
      if (q >= n4) break;
      int4 o;
      o.x = eb_plain(v[u].x, 4 * q, p, st, fill_code);
      o.y = eb_plain(v[u].y, 4 * q + 1, p, st, fill_code);
      o.z = eb_plain(v[u].z, 4 * q + 2, p, st, fill_code);
      o.w = eb_plain(v[u].w, 4 * q + 3, p, st, fill_code);
      s4[q] = o;
    }
  }
  if (gid < n - 4 * n4) {
    size_t i = 4 * n4 + gid;
    sym[i] = eb_plain(__ldg(x + i), i, p, st, fill_code);
  }
}

/* EB with Lorenzo over whole planes in shared memory. A CTA takes planes [p0, p1) (the plane
 * before too, for 3D), computes every code once into shared memory (fill and failures as 0, as
 * eb_term) and predicts from there. Each thread keeps its own elements' codes in registers. */

/* E: elements a thread holds, ceil(P / LZ_THREADS) rounded up to an instantiated size, so that a
 * 64x128 plane keeps its 16 prefetched values a thread in registers (2 CTAs an SM; the codes are
 * read back from shared memory) instead of LZ_MAXE codes. Which neighbours an element has
 * depends only on its place in the plane: two bit masks, computed once. The next plane's values
 * are loaded before this plane's prediction, so that its reads overlap that work rather than wait
 * behind a barrier. */
template <int E>
__global__ void __launch_bounds__(LZ_THREADS, 2) k_eb_lz_fwd(EbParams p, int resolved, const float *x, int32_t *sym,
                                                         uint32_t planes_per_cta, ncclzCudaQuantStats *st) {
  nz_pdl_enter();
  extern __shared__ uint32_t s_lz[];
  eb_ready(p, resolved, st);
  const uint32_t P = p.d1 * p.d2, tid = threadIdx.x;
  uint32_t *prev = s_lz, *cur = s_lz + P;
  const uint32_t p0 = blockIdx.x * planes_per_cta, p1 = min(p0 + planes_per_cta, p.d0);
  const int L = p.lorenzo;
  if (L == 3 && p0 > 0) {
    const float *xp = x + (size_t)(p0 - 1) * P;
    for (uint32_t e = tid; e < P; e += LZ_THREADS) {
      float v = __ldg(xp + e);
      int bad = 0;
      prev[e] = p.has_fill && v == p.fill ? 0u : (uint32_t)eb_code(v, p, &bad);
    }
  }
  uint32_t hk = 0, hj = 0; /* bit k: element tid + k LZ_THREADS has a left / an upper neighbour */
  float v[E];
#pragma unroll
  for (int k = 0; k < E; k++) {
    const uint32_t e = tid + k * LZ_THREADS;
    hk |= (uint32_t)(e % p.d2 > 0) << k;
    hj |= (uint32_t)(L >= 2 && e / p.d2 > 0) << k;
    v[k] = e < P && p0 < p1 ? __ldg(x + (size_t)p0 * P + e) : 0.0f;
  }
  for (uint32_t pl = p0; pl < p1; pl++) {
    const size_t base = (size_t)pl * P;
    uint32_t isfill = 0;
#pragma unroll
    for (int k = 0; k < E; k++) {
      uint32_t e = tid + k * LZ_THREADS;
      if (e < P) {
        if (p.has_fill && v[k] == p.fill) {
          isfill |= 1u << k;
          cur[e] = 0u;
        } else {
          int bad = 0;
          cur[e] = (uint32_t)eb_code(v[k], p, &bad);
          if (bad) eb_count_failure(st, bad, base + e);
        }
      }
    }
    __syncthreads();
    if (pl + 1 < p1) {
#pragma unroll
      for (int k = 0; k < E; k++) {
        const uint32_t e = tid + k * LZ_THREADS;
        if (e < P) v[k] = __ldg(x + base + P + e);
      }
    }
    const int hi = L == 3 && pl > 0;
#pragma unroll
    for (int k = 0; k < E; k++) {
      uint32_t e = tid + k * LZ_THREADS;
      if (e < P) {
        int32_t out = NCCLZ_FILL_CODE;
        if (!(isfill >> k & 1)) {
          const int k1 = hk >> k & 1, j1 = hj >> k & 1;
          uint32_t pred = 0;
          if (k1) pred += cur[e - 1];
          if (j1) pred += cur[e - p.d2];
          if (j1 && k1) pred -= cur[e - p.d2 - 1];
          if (hi) pred += prev[e];
          if (hi && k1) pred -= prev[e - 1];
          if (hi && j1) pred -= prev[e - p.d2];
          if (hi && j1 && k1) pred += prev[e - p.d2 - 1];
          out = (int32_t)(cur[e] - pred);
        }
        sym[base + e] = out;
      }
    }
    __syncthreads();
    uint32_t *t = prev;
    prev = cur;
    cur = t;
  }
}

/* The instance of k_eb_lz_fwd for planes of P elements. */
static void (*lz_fwd_kernel(uint32_t P))(EbParams, int, const float *, int32_t *, uint32_t, ncclzCudaQuantStats *) {
  const uint32_t e = (P + LZ_THREADS - 1) / LZ_THREADS;
  return e <= 4 ? k_eb_lz_fwd<4> : e <= 8 ? k_eb_lz_fwd<8> : e <= 16 ? k_eb_lz_fwd<16> : k_eb_lz_fwd<LZ_MAXE>;
}

/* EB with Lorenzo, planes streamed through a ring of shared-memory slots by cp.async: a CTA (one
 * an SM) takes planes [p0, p1) (and the plane before, for 3D), keeps LZP_DEPTH planes in flight
 * while it codes one, so that the copies do not wait behind the plane's arithmetic. Each thread
 * owns the same groups of 4 elements (one row, d2 % 4 == 0) in every plane: it turns its raw
 * values into codes in place (fill and failures as 0, as eb_term; its fill bits in a register),
 * and after one barrier a plane predicts them as the separable difference
 * D(z) - D(z-1), D = q - q[x-1] - q[y-1] + q[y-1][x-1] (the 3D Lorenzo predictor term for term). */

/* D of a group of 4 codes c: q - left - up + upleft per element, from the row above u, the code l
 * left of the group and ul left of u (zeros where there is none). */
static __device__ __forceinline__ uint4 lz_d4(uint4 c, uint4 u, uint32_t l, uint32_t ul) {
  return make_uint4(c.x - l - u.x + ul, c.y - c.x - u.y + u.x, c.z - c.y - u.z + u.y, c.w - c.z - u.w + u.z);
}

/* D of the group of 4 at element e (column k of its row) of the codes q in shared memory. */
static __device__ __forceinline__ uint4 lz_diff2(const uint32_t *q, uint32_t e, bool hk, bool hj, uint32_t d2) {
  const uint4 c = *(const uint4 *)(q + e);
  const uint4 u = hj ? *(const uint4 *)(q + e - d2) : make_uint4(0, 0, 0, 0);
  const uint32_t l = hk ? q[e - 1] : 0u, ul = hk && hj ? q[e - d2 - 1] : 0u;
  return lz_d4(c, u, l, ul);
}

/* The output group of predicted codes d, with the fill value's code where bit m of fill marks
 * element m. */
static __device__ __forceinline__ int4 lz_out4(uint4 d, uint32_t fill) {
  int4 o = make_int4((int32_t)d.x, (int32_t)d.y, (int32_t)d.z, (int32_t)d.w);
  if (fill) {
    if (fill & 1u) o.x = NCCLZ_FILL_CODE;
    if (fill & 2u) o.y = NCCLZ_FILL_CODE;
    if (fill & 4u) o.z = NCCLZ_FILL_CODE;
    if (fill & 8u) o.w = NCCLZ_FILL_CODE;
  }
  return o;
}

template <int NT, int KC, int D>
__global__ void __launch_bounds__(NT, 1024 / NT) k_eb_lz_pipe(EbParams p, int resolved, const float *x, int32_t *sym,
                                                               uint32_t planes_per_cta, ncclzCudaQuantStats *st) {
  constexpr uint32_t nslots = D + 2; /* the plane before, this one, D in flight */
  nz_pdl_enter();
  extern __shared__ uint4 s_lzp[];
  uint32_t *slots = (uint32_t *)s_lzp;
  eb_ready(p, resolved, st);
  const uint32_t P = p.d1 * p.d2, G = P / 4, tid = threadIdx.x;
  const uint32_t p0 = blockIdx.x * planes_per_cta, p1 = min(p0 + planes_per_cta, p.d0);
  const int L = p.lorenzo;
  const uint32_t first = L == 3 && p0 > 0 ? p0 - 1 : p0; /* the plane before: codes only */
  auto issue = [&](uint32_t pl) { /* this thread's groups of plane pl into its slot */
    if (pl < p1) {
      uint32_t *d = slots + (size_t)(pl % nslots) * P;
      const float *g = x + (size_t)pl * P;
#pragma unroll
      for (int k = 0; k < KC; k++) {
        const uint32_t j = tid + k * NT;
        if (j < G) cp_async16(d + 4 * j, g + 4 * j);
      }
    }
    cp_async_commit(); /* one group a plane, empty past the end: wait_group counts stay uniform */
  };
  for (uint32_t k = 0; k < D; k++) issue(first + k);
  for (uint32_t pl = first; pl < p1; pl++) {
    cp_async_wait<D - 1>(); /* this plane's group has landed (this thread's part of it) */
    uint32_t *cur = slots + (size_t)(pl % nslots) * P;
    const size_t base = (size_t)pl * P;
    uint32_t isfill = 0, slow = 0; /* bit 4k + m: element m of group k is fill / needs the exact rule */
    uint4 w[KC];
#pragma unroll
    for (int k = 0; k < KC; k++) { /* the certificate for all, so that the elements interleave */
      const uint32_t j = tid + k * NT;
      w[k] = j < G ? *(const uint4 *)(cur + 4 * j) : make_uint4(0, 0, 0, 0);
      uint32_t *wv = &w[k].x;
#pragma unroll
      for (int m = 0; m < 4; m++) {
        const float v = __uint_as_float(wv[m]);
        int32_t c = 0;
        if (p.has_fill && v == p.fill) isfill |= 1u << (4 * k + m);
        else if (!ncclz_eb_code_fast(v, p.bound, p.step, p.inv_step, &c)) slow |= 1u << (4 * k + m);
        wv[m] = (uint32_t)c;
      }
    }
#pragma unroll
    for (int k = 0; k < KC; k++) {
      const uint32_t j = tid + k * NT;
      if (j >= G) continue;
      uint32_t *wv = &w[k].x;
      for (int m = 0; slow >> (4 * k) & 15u && m < 4; m++) { /* the exact rule, out of line (rare) */
        if (!(slow >> (4 * k + m) & 1u)) continue;
        const EbSlow r = eb_code_exact(__uint_as_float(cur[4 * j + m]), p.bound, p.step);
        wv[m] = (uint32_t)r.code;
        if (r.bad && pl >= p0) eb_count_failure(st, r.bad, base + 4 * j + m);
      }
      *(uint4 *)(cur + 4 * j) = w[k];
    }
    __syncthreads();
    issue(pl + D); /* into the slot of plane pl - 2, which no thread reads any more */
    if (pl < p0) continue;
    const uint32_t *prev = slots + (size_t)((pl + nslots - 1) % nslots) * P;
    const bool hi = L == 3 && pl > 0;
#pragma unroll
    for (int k = 0; k < KC; k++) {
      const uint32_t j = tid + k * NT, e = 4 * j;
      if (j < G) {
        const uint32_t col = e % p.d2;
        const bool hk = col > 0, hj = L >= 2 && e >= p.d2;
        uint4 d = lz_diff2(cur, e, hk, hj, p.d2);
        if (hi) {
          const uint4 b = lz_diff2(prev, e, hk, hj, p.d2);
          d.x -= b.x, d.y -= b.y, d.z -= b.z, d.w -= b.w;
        }
        *(int4 *)(sym + base + e) = lz_out4(d, isfill >> (4 * k) & 15u);
      }
    }
  }
  cp_async_wait<0>();
}

/* The codes of a group of 4 raw values (fill and failures as 0, as eb_term); fill bits into
 * *isfill (bits 0-3); failures counted at index i0.. when count is set. */
static __device__ __forceinline__ uint4 eb_code4(uint4 w, const EbParams &p, uint32_t *isfill, bool count, size_t i0,
                                                 ncclzCudaQuantStats *st) {
  uint32_t *wv = &w.x, slow = 0;
#pragma unroll
  for (int m = 0; m < 4; m++) { /* the certificate for all four first, so that they interleave */
    const float v = __uint_as_float(wv[m]);
    int32_t c = 0;
    if (p.has_fill && v == p.fill) *isfill |= 1u << m;
    else if (!ncclz_eb_code_fast(v, p.bound, p.step, p.inv_step, &c)) slow |= 1u << m;
    if (!(slow >> m & 1u)) wv[m] = (uint32_t)c;
  }
  for (int m = 0; slow && m < 4; m++) /* the exact rule, out of line (rare) */
    if (slow >> m & 1u) {
      const EbSlow r = eb_code_exact(__uint_as_float(wv[m]), p.bound, p.step);
      wv[m] = (uint32_t)r.code;
      if (r.bad && count) eb_count_failure(st, r.bad, i0 + m);
    }
  return w;
}

static __device__ __forceinline__ void cp_async4(void *smem, const void *gmem) {
  const unsigned a = (unsigned)__cvta_generic_to_shared(smem);
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4;" ::"r"(a), "l"(gmem) : "memory");
}

/* One raw value's code as a neighbour's term (fill and failures as 0, as eb_term). */
static __device__ __forceinline__ uint32_t eb_code_term(float v, const EbParams &p) {
  if (p.has_fill && v == p.fill) return 0u;
  int bad = 0;
  return (uint32_t)eb_code(v, p, &bad);
}

/* EB with Lorenzo for any plane whose rows hold whole groups of 4, in one pass and without a
 * barrier: a thread owns a group of 4 columns j of a band of R rows b in a chunk c of ppc planes
 * (threads in (c, b, j) order, so a warp may span bands and chunks), and walks the chunk's planes
 * and the plane before (3D). Per plane it codes its band's rows and the row above the band (again,
 * as the band above codes it), takes the left neighbours from the lane before, or lane 0 its own
 * (the float left of its group, coded again), the upper from the row before, and keeps the plane
 * before's D in registers (the output is D(z) - D(z-1), as k_eb_lz_pipe's). Each thread streams
 * its own rows through a ring of D planes by cp.async. Failures are counted where an element is
 * its own. */
/* k_eb_lz_band's instance: bands of 8 rows, 2 planes in the ring, two CTAs of 256 an SM (against
 * 4 rows and 3 planes on 1x H200: 1800 x 3600 878 GB/s against 826, 192 x 288, 512 x 512 and
 * 16 x 64 within 0.5%; 27 x 116 lost, 728 against 810, its last band holding 3 of 8 rows). */
#define LZB_NT 256
#define LZB_ROWS 8
#define LZB_DEPTH 2
#define LZB_MINB 2
template <int NT, int R, int D>
__global__ void __launch_bounds__(NT, LZB_MINB) k_eb_lz_band(EbParams p, int resolved, const float *x, int32_t *sym,
                                                       uint32_t ppc, uint32_t nchunks, ncclzCudaQuantStats *st) {
  constexpr uint32_t RA = R + 1, NWC = NT / 32; /* rows a thread streams: the one above, then the band */
  nz_pdl_enter();
  extern __shared__ uint4 s_lzb[];
  uint4 *ring = s_lzb;                                  /* D x RA x NT groups */
  float *edge = (float *)(s_lzb + (size_t)D * RA * NT); /* D x RA x NWC: lane 0's left floats */
  eb_ready(p, resolved, st);
  const uint32_t d2 = p.d2, G = d2 / 4, nb = (p.d1 + R - 1) / R, items = nb * G;
  const uint32_t tid = threadIdx.x, lane = tid & 31, wid = tid >> 5;
  const size_t i = (size_t)blockIdx.x * NT + tid;
  const uint32_t c = (uint32_t)(i / items), rem = (uint32_t)(i % items), b = rem / G, j = rem % G;
  const bool on = c < nchunks;
  const uint32_t y0 = b * R, ny = on ? min((uint32_t)R, p.d1 - y0) : 0u;
  const int L = p.lorenzo;
  const bool above = on && L >= 2 && y0 > 0, left = on && lane == 0 && j > 0;
  const uint32_t p0 = c * ppc, p1 = on ? min(p0 + ppc, p.d0) : 0u;
  const bool before = L == 3 && p0 > 0; /* step 0 is the plane before the chunk: its D only */
  const size_t P = (size_t)p.d1 * d2;
  const uint4 zero = make_uint4(0, 0, 0, 0);
  auto live_at = [&](uint32_t k) { return on && p0 + k - 1 < p1 && (k > 0 || before); }; /* plane p0 - 1 + k */
  auto issue = [&](uint32_t k) {
    if (k <= ppc && live_at(k)) {
      uint4 *dst = ring + (size_t)(k % D) * RA * NT + tid;
      const float *g = x + (size_t)(p0 + k - 1) * P + (size_t)y0 * d2 + 4 * j;
      if (above) cp_async16(dst, g - d2);
#pragma unroll
      for (int r = 0; r < R; r++)
        if ((uint32_t)r < ny) cp_async16(dst + (r + 1) * NT, g + (size_t)r * d2);
      if (left) {
        float *e = edge + (size_t)(k % D) * RA * NWC + wid;
        if (above) cp_async4(e, g - d2 - 1);
#pragma unroll
        for (int r = 0; r < R; r++)
          if ((uint32_t)r < ny) cp_async4(e + (r + 1) * NWC, g + (size_t)r * d2 - 1);
      }
    }
    cp_async_commit();
  };
  uint4 dprev[R];
#pragma unroll
  for (int r = 0; r < R; r++) dprev[r] = zero;
  for (int k = 0; k < D - 1; k++) issue(k);
  for (uint32_t k = 0; k <= ppc; k++) {
    issue(k + D - 1); /* into the slot of step k - 1, which this thread has read */
    cp_async_wait<D - 1>();
    const bool live = live_at(k), own = k > 0;
    const size_t pl = (size_t)p0 + k - 1;
    const bool hi = L == 3 && p0 + k > 1; /* pl > 0 */
    const uint4 *cur = ring + (size_t)(k % D) * RA * NT + tid;
    const float *ecur = edge + (size_t)(k % D) * RA * NWC + wid;
    const size_t base = pl * P + (size_t)y0 * d2 + 4 * j;
    uint32_t nofill = 0;
    uint4 up = above && live ? eb_code4(cur[0], p, &nofill, false, 0, st) : zero; /* its owner counts its failures */
    uint32_t upw = __shfl_up_sync(NZ_FULL, up.w, 1);
    if (lane == 0) upw = left && above && live ? eb_code_term(ecur[0], p) : 0u;
#pragma unroll
    for (int r = 0; r < R; r++) {
      const bool row = live && (uint32_t)r < ny;
      uint32_t isfill = 0;
      const uint4 q = row ? eb_code4(cur[(r + 1) * NT], p, &isfill, own, base + (size_t)r * d2, st) : zero;
      uint32_t cw = __shfl_up_sync(NZ_FULL, q.w, 1);
      if (lane == 0) cw = left && row ? eb_code_term(ecur[(r + 1) * NWC], p) : 0u;
      const bool hk = j > 0, hj = L >= 2 && y0 + r > 0;
      const uint32_t l = hk ? cw : 0u, ul = hk && hj ? upw : 0u;
      const uint4 u = hj ? up : zero;
      const uint4 d = lz_d4(q, u, l, ul);
      if (row && own)
        *(int4 *)(sym + base + (size_t)r * d2) =
            lz_out4(hi ? make_uint4(d.x - dprev[r].x, d.y - dprev[r].y, d.z - dprev[r].z, d.w - dprev[r].w) : d, isfill);
      dprev[r] = d;
      up = q;
      upw = cw;
    }
  }
  cp_async_wait<0>();
}

/* k_eb_lz_band's shared bytes: its ring of groups and lane 0's left floats. */
static size_t lz_band_smem() { return (size_t)LZB_DEPTH * (LZB_ROWS + 1) * (16ull * LZB_NT + 4ull * LZB_NT / 32); }

/* Launches k_eb_lz_band: chunks of planes enough for two CTAs an SM over the bands. */
static ncclzStatus lz_band_launch(const EbParams &e, int resolved, const float *d_x, int32_t *d_sym,
                                  ncclzCudaQuantStats *d_stats, cudaStream_t s) {
  int nsm = 0;
  const ncclzStatus st = nz_sm_count(&nsm);
  if (st != NCCLZ_OK) return st;
  const uint64_t items = ncclz_ceil_div(e.d1, LZB_ROWS) * (uint64_t)(e.d2 / 4);
  /* as many chunks as one wave of CTAs holds (a second, partial wave would double the time) */
  uint64_t nchunks = (uint64_t)LZB_MINB * nsm * LZB_NT / items;
  if (nchunks < 1) nchunks = 1;
  if (nchunks > e.d0) nchunks = e.d0;
  const uint32_t ppc = (uint32_t)ncclz_ceil_div(e.d0, nchunks);
  nchunks = ncclz_ceil_div(e.d0, ppc);
  const size_t smem = lz_band_smem();
  const auto k = k_eb_lz_band<LZB_NT, LZB_ROWS, LZB_DEPTH>;
  NZ_CUDA(nz_smem_optin(k, smem));
  nz_launch(k, (unsigned)ncclz_ceil_div(nchunks * items, LZB_NT), LZB_NT, smem, s, e, resolved, d_x, d_sym, ppc,
            (uint32_t)nchunks, d_stats);
  NZ_LAUNCHED();
  return NCCLZ_OK;
}

/* The instance of k_eb_lz_pipe for planes of P elements (P <= LZP_MAXP) and CTAs of nt threads,
 * and its slots' bytes: the most planes in flight that the CTA's share of shared memory holds. */
typedef void (*LzPipeKernel)(EbParams, int, const float *, int32_t *, uint32_t, ncclzCudaQuantStats *);
static LzPipeKernel lz_pipe_kernel(uint32_t P, int nt, size_t *smem) {
  const uint32_t kc = (P / 4 + nt - 1) / nt;
  const size_t budget = LZP_SMEM / (LZP_THREADS / nt), plane = 4ull * P;
  const int D = 6 * plane <= budget ? 4 : 4 * plane <= budget ? 2 : 1;
  *smem = (D + 2) * plane;
  if (nt == 512) return D == 4 ? k_eb_lz_pipe<512, 4, 4> : D == 2 ? k_eb_lz_pipe<512, 4, 2> : k_eb_lz_pipe<512, 4, 1>;
  if (kc <= 1) return D == 4 ? k_eb_lz_pipe<LZP_THREADS, 1, 4> : k_eb_lz_pipe<LZP_THREADS, 1, 2>;
  if (kc <= 2) return D == 4 ? k_eb_lz_pipe<LZP_THREADS, 2, 4> : k_eb_lz_pipe<LZP_THREADS, 2, 2>;
  if (kc <= 3) return D == 4 ? k_eb_lz_pipe<LZP_THREADS, 3, 4> : k_eb_lz_pipe<LZP_THREADS, 3, 2>;
  return k_eb_lz_pipe<LZP_THREADS, 4, 2>;
}

/* Float min/max via CAS loops (rare: one per warp). */
static __device__ void atomic_fmin(float *a, float v) {
  int *p = (int *)a, old = *p;
  while (v < __int_as_float(old)) {
    int prev = atomicCAS(p, old, __float_as_int(v));
    if (prev == old) break;
    old = prev;
  }
}
static __device__ void atomic_fmax(float *a, float v) {
  int *p = (int *)a, old = *p;
  while (v > __int_as_float(old)) {
    int prev = atomicCAS(p, old, __float_as_int(v));
    if (prev == old) break;
    old = prev;
  }
}

/* This block's (min, max) of the finite non-fill values (valid in thread 0); (INF, -INF): none. */
static __device__ void eb_range_block(const float *x, size_t n, int has_fill, float fill, float *lo_out,
                                      float *hi_out) {
  float lo = INFINITY, hi = -INFINITY;
  auto take = [&](float v) {
    if ((has_fill && v == fill) || !(fabsf(v) < NCCLZ_EB_HUGE_VALUE)) return;
    lo = fminf(lo, v);
    hi = fmaxf(hi, v);
  };
  const size_t gid = blockIdx.x * (size_t)blockDim.x + threadIdx.x, stride = (size_t)gridDim.x * blockDim.x;
  if (((uintptr_t)x & 15) == 0) { /* float4 loads, the tail scalar */
    const size_t n4 = n / 4;
    const float4 *x4 = (const float4 *)x;
    for (size_t q0 = gid; q0 < n4; q0 += EB_UNROLL * stride) {
      float4 v[EB_UNROLL];
#pragma unroll
      for (int u = 0; u < EB_UNROLL; u++) {
        const size_t q = q0 + u * stride;
        v[u] = q < n4 ? __ldg(x4 + q) : make_float4(NAN, NAN, NAN, NAN); /* NaN: not taken */
      }
#pragma unroll
      for (int u = 0; u < EB_UNROLL; u++) take(v[u].x), take(v[u].y), take(v[u].z), take(v[u].w);
    }
    if (gid < n - 4 * n4) take(__ldg(x + 4 * n4 + gid));
  } else {
    for (size_t i = gid; i < n; i += stride) take(__ldg(x + i));
  }
  /* finite values only (take() drops the rest): min and max are the same in any order */
  typedef cub::BlockReduce<float, 256> Reduce;
  __shared__ typename Reduce::TempStorage ts_lo, ts_hi;
  *lo_out = Reduce(ts_lo).Reduce(lo, cuda::minimum<float>());
  *hi_out = Reduce(ts_hi).Reduce(hi, cuda::maximum<float>());
}

__global__ void __launch_bounds__(256) k_eb_range2(const float *x, size_t n, int has_fill, float fill,
                                                    ncclzCudaQuantStats *st) {
  nz_pdl_enter();
  float lo, hi;
  eb_range_block(x, n, has_fill, fill, &lo, &hi);
  if (threadIdx.x == 0) { /* one atomic pair per block */
    if (lo <= hi) {
      atomic_fmin(&st->vmin, lo);
      atomic_fmax(&st->vmax, hi);
    }
  }
}

/* The range pass of the one-launch resolve: each block's pair to part[blockIdx.x]; block 0 also
 * resets the error counters (the quantizer's block 0 writes the range and the bound). */
__global__ void __launch_bounds__(256) k_eb_range_part(const float *x, size_t n, int has_fill, float fill,
                                                        float2 *part, ncclzCudaQuantStats *st) {
  nz_pdl_enter();
  float lo, hi;
  eb_range_block(x, n, has_fill, fill, &lo, &hi);
  if (threadIdx.x == 0) part[blockIdx.x] = make_float2(lo, hi);
  if (blockIdx.x == 0 && threadIdx.x == 0) {
    st->nonfinite = st->out_of_range = st->unbounded = 0;
    st->first_bad = ~0ull;
  }
}

__global__ void k_eb_resolve(double rel, ncclzCudaQuantStats *st) {
  nz_pdl_enter();
  eb_bound_of(rel, st->vmin, st->vmax, &st->bound, &st->abs_eb);
  if (!(st->abs_eb > 0)) st->unbounded = ~0ull >> 1; /* below float resolution: NCCLZ_ERR_RANGE */
}

__global__ void k_stats_init(ncclzCudaQuantStats *st, double abs_eb, double bound) {
  nz_pdl_enter();
  st->nonfinite = st->out_of_range = st->unbounded = 0;
  st->first_bad = ~0ull;
  st->abs_eb = abs_eb;
  st->bound = bound;
  st->vmin = INFINITY;
  st->vmax = -INFINITY;
}

size_t ncclzCudaQuantWorkspaceSize(size_t n) { return 4 * n + 256; }

/* The launches before an EB quantizer: the stats reset and, for eb:rel, the range pass (with a
 * workspace, its per-block pairs, which the quantizer's blocks resolve: e->part, two launches;
 * without, the stats carry the range and the bound, four launches). */
static ncclzStatus eb_launch_range(const ncclzQuantParams *p, int eb_is_rel, double rel_eb, const float *d_x, size_t n,
                                   ncclzCudaQuantStats *d_stats, void *d_ws, size_t ws_bytes, cudaStream_t s,
                                   EbParams *e) {
  const unsigned range_grid = nz_grid_for(n);
  if (eb_is_rel && d_ws && ws_bytes >= sizeof(float2) * range_grid && ((uintptr_t)d_ws & 7) == 0) {
    e->part = (const float2 *)d_ws, e->nparts = range_grid;
    nz_launch(k_eb_range_part, range_grid, 256, 0, s, d_x, n, p->has_fill, p->fill_value, (float2 *)d_ws, d_stats);
    NZ_LAUNCHED();
    return NCCLZ_OK;
  }
  nz_launch(k_stats_init, 1, 1, 0, s, d_stats, e->abs_eb, e->bound);
  NZ_LAUNCHED();
  if (eb_is_rel) {
    nz_launch(k_eb_range2, range_grid, 256, 0, s, d_x, n, p->has_fill, p->fill_value, d_stats);
    NZ_LAUNCHED();
    nz_launch(k_eb_resolve, 1, 1, 0, s, rel_eb, d_stats);
    NZ_LAUNCHED();
  }
  return NCCLZ_OK;
}

static EbParams eb_params(const ncclzQuantParams *p, double rel_eb) {
  return {p->abs_eb, p->bound > 0 ? p->bound : p->abs_eb, p->lorenzo, p->has_fill, p->fill_value, p->dims[0],
          p->dims[1], p->dims[2], 0.0, 0.0, nullptr, 0, rel_eb};
}

ncclzStatus nz_eb_prepare(const ncclzQuantParams *p, int eb_is_rel, double rel_eb, const float *d_x, size_t n,
                          int32_t *d_sym, ncclzCudaQuantStats *d_stats, void *d_ws, size_t ws_bytes, cudaStream_t s,
                          NzEb *e) {
  if (!p || p->kind != NCCLZ_QUANT_EB || p->lorenzo || !d_stats) return ncclzSetError(NCCLZ_ERR_ARG, "cuda eb: bad params");
  *e = {eb_params(p, rel_eb), eb_is_rel, d_x, d_sym, d_stats};
  return eb_launch_range(p, eb_is_rel, rel_eb, d_x, n, d_stats, d_ws, ws_bytes, s, &e->p);
}

ncclzStatus ncclzCudaQuantizeEB(const ncclzQuantParams *p, int eb_is_rel, double rel_eb, const float *d_x, size_t n,
                                int32_t *d_sym, ncclzCudaQuantStats *d_stats, void *d_ws, size_t ws_bytes,
                                cudaStream_t s) {
  if (!p || p->kind != NCCLZ_QUANT_EB || !d_stats) return ncclzSetError(NCCLZ_ERR_ARG, "cuda eb: bad params");
  EbParams e = eb_params(p, rel_eb);
  if (e.lorenzo && !ncclz_dims_describe(e.d0, e.d1, e.d2, n)) { /* as lz_shape: the whole array is one row */
    e.d0 = e.d1 = 1;
    e.d2 = (uint32_t)n;
    e.lorenzo = 1;
    if (n > UINT32_MAX) return ncclzSetError(NCCLZ_ERR_ARG, "cuda eb: 1D Lorenzo over > 4G elements");
  }
  const uint64_t plane = (uint64_t)e.d1 * e.d2; /* in 64 bits: a 32-bit product could wrap under LZP_MAXP */
  const uint32_t P = (uint32_t)plane;              /* used only where plane <= LZP_MAXP */
  const bool aligned = nz_aligned16(d_x, d_sym);
  const bool pipe = e.lorenzo && plane <= LZP_MAXP && e.d0 > 0 && e.d2 % 4 == 0 && aligned;
  /* one pass without barriers (k_eb_lz_band) */
  const bool band = e.lorenzo && e.d0 > 0 && e.d2 % 4 == 0 && aligned && plane <= UINT32_MAX &&
                    (plane > LZP_MAXP || e.d1 <= 32);
  ncclzStatus st = eb_launch_range(p, eb_is_rel, rel_eb, d_x, n, d_stats, d_ws, ws_bytes, s, &e);
  if (st != NCCLZ_OK) return st;
  if (!e.lorenzo && aligned) {
    nz_launch(k_eb_quant_vec, nz_grid_for(n / 4), 256, 0, s, e, eb_is_rel, d_x, n, d_sym, d_stats, NCCLZ_FILL_CODE);
  } else if (band) {
    return lz_band_launch(e, eb_is_rel, d_x, d_sym, d_stats, s);
  } else if (pipe) {
    size_t smem;
    const int nt = lzp_threads(P, e.d2);
    const LzPipeKernel k = lz_pipe_kernel(P, nt, &smem);
    uint32_t ppc;
    if (lzp_grid(e.d0, nt, &ppc) != NCCLZ_OK) return NCCLZ_ERR_CUDA;
    NZ_CUDA(nz_smem_optin(k, smem));
    nz_launch(k, (unsigned)ncclz_ceil_div(e.d0, ppc), nt, smem, s, e, eb_is_rel, d_x, d_sym, ppc, d_stats);
  } else if (e.lorenzo && plane <= LZ_MAXP && e.d0 > 0) {
    const uint32_t ppc = lz_planes_per_cta(e.d0, 1024);
    const size_t smem = 2ull * P * 4;
    auto k = lz_fwd_kernel(P);
    if (smem > 48 * 1024) NZ_CUDA(nz_smem_optin(k, 2 * LZ_MAXP * 4));
    nz_launch(k, (unsigned)ncclz_ceil_div(e.d0, ppc), LZ_THREADS, smem, s, e, eb_is_rel, d_x, d_sym, ppc, d_stats);
  } else {
    nz_launch(k_eb_quant, nz_grid_for(n), 256, 0, s, e, eb_is_rel, d_x, n, d_sym, d_stats);
  }
  NZ_LAUNCHED();
  return NCCLZ_OK;
}
