/* Quantizers on the GPU with the reference's exact binary64 arithmetic (-fmad=false: one rounding
 * per operation, in FORMAT.md's order). EB quantization fuses the Lorenzo forward step: each
 * thread recomputes its neighbours' codes instead of reading them back, which costs arithmetic
 * (cheap) instead of a second pass over memory (expensive). QSGD draws from the same Philox. */
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
#define LZ_THREADS 512
#define LZ_MAXP 12288 /* plane elements for the shared-memory paths */
#define LZ_MAXE (LZ_MAXP / LZ_THREADS)

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
#define LZP_THREADS 1024
#define LZP_SMEM (200 * 1024) /* the slots' budget: 1 CTA an SM */
#define LZP_MAXP (LZP_SMEM / 16) /* 4 slots */

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

/* Threads a CTA for the plane-streaming kernels: 512, two CTAs an SM, where a plane of up to
 * 8,192 elements leaves room for two CTAs' slots (one CTA's barriers then overlap the other's
 * work: 7% faster forward, 13% inverse, on 64 x 128 planes of TREFHT), else LZP_THREADS, one an SM. */
static int lzp_threads(uint32_t P, uint32_t d2) { return P <= 4u * 4 * 512 && d2 / 4 <= 512 ? 512 : LZP_THREADS; }

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

/* CTAs an SM for nt threads a CTA, and the chunk of planes each takes so that they fill the chip. */
static ncclzStatus lzp_grid(uint32_t d0, int nt, uint32_t *ppc) {
  int nsm = 0;
  const ncclzStatus st = nz_sm_count(&nsm);
  if (st != NCCLZ_OK) return st;
  *ppc = (uint32_t)ncclz_ceil_div(d0, (uint64_t)nsm * (LZP_THREADS / nt));
  return NCCLZ_OK;
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

/* Planes per CTA for the Lorenzo paths: enough CTAs to fill the chip, at least 4 chunks when
 * there are 4 planes (so that the carries between chunks are always exercised). */
static uint32_t lz_planes_per_cta(uint32_t d0, uint32_t ctas) {
  uint32_t c = d0 / ctas;
  if (c > 16) c = 16;
  if (c > d0 / 4) c = d0 / 4;
  return c ? c : 1;
}

static unsigned grid_for(size_t n) {
  size_t b = n / 256 + 1;
  return (unsigned)(b < 132 * 16 ? b : 132 * 16);
}

/* The launches before an EB quantizer: the stats reset and, for eb:rel, the range pass (with a
 * workspace, its per-block pairs, which the quantizer's blocks resolve: e->part, two launches;
 * without, the stats carry the range and the bound, four launches). */
static ncclzStatus eb_launch_range(const ncclzQuantParams *p, int eb_is_rel, double rel_eb, const float *d_x, size_t n,
                                   ncclzCudaQuantStats *d_stats, void *d_ws, size_t ws_bytes, cudaStream_t s,
                                   EbParams *e) {
  const unsigned range_grid = grid_for(n);
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
    nz_launch(k_eb_quant_vec, grid_for(n / 4), 256, 0, s, e, eb_is_rel, d_x, n, d_sym, d_stats, NCCLZ_FILL_CODE);
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
    nz_launch(k_eb_quant, grid_for(n), 256, 0, s, e, eb_is_rel, d_x, n, d_sym, d_stats);
  }
  NZ_LAUNCHED();
  return NCCLZ_OK;
}

/* 1D rows: each thread reconstructs a contiguous run; rows are independent. For 2D/3D a column
 * pass follows the row pass (the inverse of a separable sum) when there are no fill codes. */
__global__ void k_scan_rows(const int32_t *in, int32_t *out, size_t rows, uint32_t w) {
  nz_pdl_enter();
  size_t r = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  if (r >= rows) return;
  uint32_t acc = 0;
  for (uint32_t k = 0; k < w; k++) {
    acc += (uint32_t)in[r * w + k];
    out[r * w + k] = (int32_t)acc;
  }
}
/* out[o][l][i] = sum over l' <= l (stride inner), thread per (o, i). */
__global__ void k_scan_axis(int32_t *a, size_t outer, uint32_t len, size_t inner) {
  nz_pdl_enter();
  size_t t = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  if (t >= outer * inner) return;
  size_t o = t / inner, i = t % inner;
  int32_t *p = a + o * len * inner + i;
  uint32_t acc = 0;
  for (uint32_t l = 0; l < len; l++) {
    acc += (uint32_t)p[(size_t)l * inner];
    p[(size_t)l * inner] = (int32_t)acc;
  }
}

/* Inverse Lorenzo without fills for planes too large for the shared-memory kernels whose rows
 * lz_inverse_cuda.cu's bands do not take (1D, rows past 4,096 elements or of a count that is not a
 * multiple of 4), a pass an axis (the prefix sums commute, wrapping uint32): along z and y (k_lz_walk) a thread a group of 4
 * columns walks its axis with LZ_WALK loads in flight, in place where in == out (each thread reads
 * only what it writes); along x (k_lz_rows_dequant) a warp a row scans it in segments of 128
 * elements and writes the dequantized floats. */
#define LZ_WALK 8
/* Thread t's part of a walk split in segments of seg steps: its column's start and its steps. */
struct LzSeg {
  size_t base;
  uint32_t l0, l1;
};
static __device__ __forceinline__ LzSeg lz_seg(size_t t, uint32_t len, size_t inner4, uint32_t seg, uint32_t S) {
  const size_t o = t / (S * inner4), r = t % (S * inner4), sg = r / inner4;
  const uint32_t l0 = (uint32_t)sg * seg;
  return {o * len * inner4 + r % inner4, l0, min(l0 + seg, len)};
}

/* Each segment's sum (layout: outer, segment, column), for the carries into the segments after it. */
__global__ void __launch_bounds__(256) k_lz_seg_sums(const uint4 *in, uint4 *sums, size_t outer, uint32_t len,
                                                      size_t inner4, uint32_t seg, uint32_t S) {
  nz_pdl_enter();
  const size_t t = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  if (t >= outer * S * inner4) return;
  const LzSeg g = lz_seg(t, len, inner4, seg, S);
  uint4 acc = make_uint4(0, 0, 0, 0);
#pragma unroll 8
  for (uint32_t l = g.l0; l < g.l1; l++) acc = add4(acc, in[g.base + (size_t)l * inner4]);
  sums[t] = acc;
}

/* The segments' sums of each column turned into the carries into them (exclusive prefixes). */
__global__ void __launch_bounds__(256) k_lz_seg_carry(uint4 *sums, size_t outer, size_t inner4, uint32_t S) {
  nz_pdl_enter();
  const size_t t = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  if (t >= outer * inner4) return;
  uint4 *c = sums + t / inner4 * S * inner4 + t % inner4, run = make_uint4(0, 0, 0, 0);
  for (uint32_t sg = 0; sg < S; sg++) {
    const uint4 v = c[(size_t)sg * inner4];
    c[(size_t)sg * inner4] = run;
    run = add4(run, v);
  }
}

__global__ void __launch_bounds__(256) k_lz_walk(const uint4 *in, uint4 *out, const uint4 *carry, size_t outer,
                                                  uint32_t len, size_t inner4, uint32_t seg, uint32_t S) {
  nz_pdl_enter();
  const size_t t = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  if (t >= outer * S * inner4) return;
  const LzSeg g = lz_seg(t, len, inner4, seg, S);
  uint4 acc = carry ? carry[t] : make_uint4(0, 0, 0, 0);
  for (uint32_t l0 = g.l0; l0 < g.l1; l0 += LZ_WALK) {
    uint4 v[LZ_WALK];
#pragma unroll
    for (int k = 0; k < LZ_WALK; k++) /* every load before the first store: they overlap */
      if (l0 + k < g.l1) v[k] = in[g.base + (size_t)(l0 + k) * inner4];
#pragma unroll
    for (int k = 0; k < LZ_WALK; k++)
      if (l0 + k < g.l1) out[g.base + (size_t)(l0 + k) * inner4] = acc = add4(acc, v[k]);
  }
}

/* A walk along an axis of len steps (stride inner4 groups, outer times): split in segments where
 * its columns alone would leave the chip short of threads (a pass of sums and the carries first,
 * in scratch: one uint4 a thread, at most n / 4 of them since S <= len, so n floats' room holds it). */
#define LZ_WALK_FEW (12u << 10)     /* columns below this many split (their pass of sums costs less) */
#define LZ_WALK_THREADS (128u << 10) /* and into this many threads */
ncclzStatus nz_lz_walk(const uint4 *in, uint4 *out, size_t outer, uint32_t len, size_t inner4, uint4 *scratch,
                       cudaStream_t s) {
  uint32_t S = 1;
  while (outer * inner4 < LZ_WALK_FEW && outer * inner4 * S < LZ_WALK_THREADS && len / (2 * S) >= 4 * LZ_WALK) S *= 2;
  const uint32_t seg = (uint32_t)ncclz_ceil_div(len, S);
  S = (uint32_t)ncclz_ceil_div(len, seg);
  const size_t threads = outer * S * inner4;
  const uint4 *carry = NULL;
  if (S > 1) {
    nz_launch(k_lz_seg_sums, (unsigned)ncclz_ceil_div(threads, 256), 256, 0, s, in, scratch, outer, len, inner4, seg, S);
    NZ_LAUNCHED();
    nz_launch(k_lz_seg_carry, (unsigned)ncclz_ceil_div(outer * inner4, 256), 256, 0, s, scratch, outer, inner4, S);
    NZ_LAUNCHED();
    carry = scratch;
  }
  nz_launch(k_lz_walk, (unsigned)ncclz_ceil_div(threads, 256), 256, 0, s, in, out, carry, outer, len, inner4, seg, S);
  NZ_LAUNCHED();
  return NCCLZ_OK;
}

__global__ void __launch_bounds__(256) k_lz_rows_dequant(const uint4 *in, size_t rows, uint32_t w4, double abs_eb,
                                                          const double *d_abs_eb, float4 *x) {
  nz_pdl_enter();
  if (d_abs_eb) abs_eb = *d_abs_eb;
  const double step = 2.0 * abs_eb;
  const uint32_t lane = threadIdx.x & 31;
  const size_t warps = (size_t)gridDim.x * (blockDim.x / 32);
  for (size_t r = (blockIdx.x * (size_t)blockDim.x + threadIdx.x) / 32; r < rows; r += warps) {
    uint32_t carry = 0;
    for (uint32_t g0 = 0; g0 < w4; g0 += 32) {
      const uint32_t g = g0 + lane;
      uint4 c = g < w4 ? in[r * w4 + g] : make_uint4(0, 0, 0, 0);
      c.y += c.x, c.z += c.y, c.w += c.z; /* the group's prefix, then the lanes' */
      uint32_t incl = c.w;
#pragma unroll
      for (int o = 1; o < 32; o <<= 1) {
        const uint32_t t = __shfl_up_sync(NZ_FULL, incl, o);
        if (lane >= (uint32_t)o) incl += t;
      }
      const uint32_t ex = carry + incl - c.w;
      c = add4(c, make_uint4(ex, ex, ex, ex));
      carry += __shfl_sync(NZ_FULL, incl, 31);
      if (g < w4)
        x[r * w4 + g] = make_float4(nz_eb_value((int32_t)c.x, step, 0, 0.0f), nz_eb_value((int32_t)c.y, step, 0, 0.0f),
                                    nz_eb_value((int32_t)c.z, step, 0, 0.0f), nz_eb_value((int32_t)c.w, step, 0, 0.0f));
    }
  }
}

/* Inverse Lorenzo without fills, for planes that fit in shared memory: the inverse is an
 * inclusive prefix sum along each predicted axis (wrapping uint32), and these commute. Along the
 * plane axis (3D) the planes go in chunks of ppc: k_lz_chunk_sum sums each chunk's raw planes,
 * k_lz_chunk_carry turns those sums into exclusive prefixes (the carry into each chunk), and
 * k_lz_inverse walks its chunk keeping the running plane sum in registers, scans each plane's
 * rows and columns in shared memory and writes the dequantized floats. */
__global__ void __launch_bounds__(256) k_lz_chunk_sum(const int32_t *d, uint32_t P, uint32_t d0, uint32_t ppc,
                                                      uint32_t *agg) {
  nz_pdl_enter();
  const uint32_t e = blockIdx.x * 256 + threadIdx.x, c = blockIdx.y;
  if (e >= P) return;
  const uint32_t p0 = c * ppc, p1 = min(p0 + ppc, d0);
  uint32_t acc = 0;
#pragma unroll 8
  for (uint32_t pl = p0; pl < p1; pl++) acc += (uint32_t)__ldg(d + (size_t)pl * P + e);
  agg[(size_t)c * P + e] = acc;
}

/* 32 elements x 32 groups of chunks per CTA: group sums, their exclusive scan, then each group
 * rewrites its chunk sums as exclusive prefixes. */
__global__ void __launch_bounds__(1024) k_lz_chunk_carry(uint32_t *agg, uint32_t P, uint32_t nc) {
  nz_pdl_enter();
  __shared__ uint32_t part[32][33];
  const uint32_t e = blockIdx.x * 32 + threadIdx.x, g = threadIdx.y, gs = (nc + 31) / 32;
  const uint32_t c0 = min(g * gs, nc), c1 = min(c0 + gs, nc);
  uint32_t s = 0;
  if (e < P)
    for (uint32_t c = c0; c < c1; c++) s += agg[(size_t)c * P + e];
  part[g][threadIdx.x] = s;
  __syncthreads();
  if (g == 0) {
    uint32_t run = 0;
    for (int k = 0; k < 32; k++) {
      uint32_t v = part[k][threadIdx.x];
      part[k][threadIdx.x] = run;
      run += v;
    }
  }
  __syncthreads();
  uint32_t run = part[g][threadIdx.x];
  if (e < P)
    for (uint32_t c = c0; c < c1; c++) {
      uint32_t v = agg[(size_t)c * P + e];
      agg[(size_t)c * P + e] = run;
      run += v;
    }
}

ncclzStatus nz_lz_chunk_carry(const int32_t *d, uint32_t P, uint32_t d0, uint32_t ppc, uint32_t nc, uint32_t *agg,
                              cudaStream_t s) {
  if (d) {
    nz_launch(k_lz_chunk_sum, dim3((unsigned)ncclz_ceil_div(P, 256), nc), 256, 0, s, d, P, d0, ppc, agg);
    NZ_LAUNCHED();
  }
  nz_launch(k_lz_chunk_carry, (unsigned)ncclz_ceil_div(P, 32), dim3(32, 32), 0, s, agg, P, nc);
  NZ_LAUNCHED();
  return NCCLZ_OK;
}

__global__ void __launch_bounds__(LZ_THREADS) k_lz_inverse(const int32_t *d, const uint32_t *carry, int L, uint32_t d0,
                                                          uint32_t d1, uint32_t d2, uint32_t ppc, double abs_eb,
                                                          const double *d_abs_eb, float *x) {
  nz_pdl_enter();
  extern __shared__ uint32_t s_lz[];
  uint32_t *s = s_lz, *part = s_lz + d1 * d2; /* plane, then LZ_THREADS column partials */
  if (d_abs_eb) abs_eb = *d_abs_eb;
  const double step = 2.0 * abs_eb;
  const uint32_t P = d1 * d2, tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const uint32_t c = blockIdx.x, p0 = c * ppc, p1 = min(p0 + ppc, d0);
  uint32_t acc[LZ_MAXE];
#pragma unroll
  for (int k = 0; k < LZ_MAXE; k++) {
    uint32_t e = tid + k * LZ_THREADS;
    acc[k] = carry && e < P ? carry[(size_t)c * P + e] : 0u;
  }
  /* column scan split into segments of rows: cs segments per column */
  uint32_t cs = d2 >= LZ_THREADS ? 1 : LZ_THREADS / d2;
  if (cs > d1) cs = d1;
  const uint32_t seg_rows = (d1 + cs - 1) / cs;
  for (uint32_t pl = p0; pl < p1; pl++) {
    const size_t base = (size_t)pl * P;
#pragma unroll
    for (int k = 0; k < LZ_MAXE; k++) {
      uint32_t e = tid + k * LZ_THREADS;
      if (e < P) {
        uint32_t v = (uint32_t)__ldg(d + base + e);
        acc[k] = L == 3 ? acc[k] + v : v;
        s[e] = acc[k];
      }
    }
    __syncthreads();
    /* rows: a warp per row, 32 columns at a time */
    for (uint32_t r = warp; r < d1; r += LZ_THREADS / 32) {
      uint32_t run = 0;
      for (uint32_t k0 = 0; k0 < d2; k0 += 32) {
        uint32_t k = k0 + lane, v = k < d2 ? s[r * d2 + k] : 0u;
#pragma unroll
        for (int o = 1; o < 32; o <<= 1) {
          uint32_t y = __shfl_up_sync(NZ_FULL, v, o);
          if (lane >= (uint32_t)o) v += y;
        }
        v += run;
        if (k < d2) s[r * d2 + k] = v;
        run = __shfl_sync(NZ_FULL, v, 31);
      }
    }
    __syncthreads();
    if (L >= 2) { /* columns: segment sums, then each segment rescanned with its carry */
      for (uint32_t t = tid; t < d2 * cs; t += LZ_THREADS) {
        uint32_t col = t % d2, sg = t / d2, r0 = sg * seg_rows, r1 = min(r0 + seg_rows, d1), sum = 0;
        for (uint32_t r = r0; r < r1; r++) sum += s[r * d2 + col];
        if (cs > 1) part[t] = sum; /* d2 * cs <= LZ_THREADS when cs > 1 */
      }
      __syncthreads();
      for (uint32_t t = tid; t < d2 * cs; t += LZ_THREADS) {
        uint32_t col = t % d2, sg = t / d2, r0 = sg * seg_rows, r1 = min(r0 + seg_rows, d1), run = 0;
        for (uint32_t q = 0; q < sg; q++) run += part[q * d2 + col];
        for (uint32_t r = r0; r < r1; r++) {
          run += s[r * d2 + col];
          s[r * d2 + col] = run;
        }
      }
      __syncthreads();
    }
#pragma unroll
    for (int k = 0; k < LZ_MAXE; k++) {
      uint32_t e = tid + k * LZ_THREADS;
      if (e < P) x[base + e] = nz_eb_value((int32_t)s[e], step, 0, 0.0f); /* no fill here */
    }
    __syncthreads();
  }
}

/* Inverse Lorenzo and dequantization, planes streamed through a ring of D + 1 shared-memory slots
 * by cp.async (one CTA an SM, planes [p0, p1) with the carry of the planes before from
 * k_lz_chunk_carry). Each thread owns KC consecutive groups of 4 elements (one row, d2 % 4 == 0)
 * and keeps their running sum over planes in registers (the z scan). A plane's 2D inclusive sum:
 * rows by one block scan over the groups' totals in row-major order, the row's start subtracted
 * (wrapping sums are exact in any order), written back in place; columns by segments of rows, a
 * thread a group of 4 columns, which writes the floats. */
template <int NT, int KC, int D>
__global__ void __launch_bounds__(NT, 1024 / NT) k_lz_inv_pipe(const int32_t *d, const uint32_t *carry, int L,
                                                                uint32_t d0, uint32_t d1, uint32_t d2, uint32_t ppc,
                                                                double abs_eb, const double *d_abs_eb, float *x) {
  nz_pdl_enter();
  typedef cub::BlockScan<uint32_t, NT> Scan;
  __shared__ typename Scan::TempStorage ts;
  extern __shared__ uint4 s_lzp[];
  const uint32_t P = d1 * d2, G = P / 4, CG = d2 / 4, tid = threadIdx.x;
  uint32_t *slots = (uint32_t *)s_lzp;
  uint4 *segsum = (uint4 *)(slots + (size_t)(D + 1) * P); /* NT */
  uint32_t *rowend = (uint32_t *)(segsum + NT);   /* d1 */
  if (d_abs_eb) abs_eb = *d_abs_eb;
  const double step = 2.0 * abs_eb;
  const uint32_t p0 = blockIdx.x * ppc, p1 = min(p0 + ppc, d0);
  /* columns: NS segments of RS rows, a thread a (segment, group of columns) */
  const uint32_t NS = min(min(32u, NT / CG), d1), RS = (d1 + NS - 1) / NS, cg = tid % CG, seg = tid / CG;
  auto issue = [&](uint32_t pl) {
    if (pl < p1) {
      uint32_t *dst = slots + (size_t)(pl % (D + 1)) * P;
      const int32_t *g = d + (size_t)pl * P;
#pragma unroll
      for (int k = 0; k < KC; k++) {
        const uint32_t j = tid * KC + k;
        if (j < G) cp_async16(dst + 4 * j, g + 4 * j);
      }
    }
    cp_async_commit();
  };
  uint4 acc[KC];
#pragma unroll
  for (int k = 0; k < KC; k++) {
    const uint32_t j = tid * KC + k;
    acc[k] = carry && j < G ? *(const uint4 *)(carry + (size_t)blockIdx.x * P + 4 * j) : make_uint4(0, 0, 0, 0);
  }
  for (uint32_t k = 0; k < D; k++) issue(p0 + k);
  for (uint32_t pl = p0; pl < p1; pl++) {
    cp_async_wait<D - 1>();
    uint32_t *cur = slots + (size_t)(pl % (D + 1)) * P;
    uint4 r[KC];
    uint32_t tot[KC];
#pragma unroll
    for (int k = 0; k < KC; k++) { /* z, then the group's own prefix */
      const uint32_t j = tid * KC + k;
      uint4 v = j < G ? *(const uint4 *)(cur + 4 * j) : make_uint4(0, 0, 0, 0);
      if (L == 3) v = add4(v, acc[k]);
      acc[k] = v;
      r[k] = make_uint4(v.x, v.x + v.y, v.x + v.y + v.z, v.x + v.y + v.z + v.w);
      tot[k] = r[k].w;
    }
    uint32_t f[KC];
    Scan(ts).InclusiveSum(tot, f);
#pragma unroll
    for (int k = 0; k < KC; k++) {
      const uint32_t j = tid * KC + k;
      if (j < G && (4 * j + 4) % d2 == 0) rowend[4 * j / d2] = f[k];
    }
    __syncthreads();
    issue(pl + D); /* into the slot of plane pl - 1, read for the last time before the barrier */
#pragma unroll
    for (int k = 0; k < KC; k++) {
      const uint32_t j = tid * KC + k, y = 4 * j / d2;
      if (j < G) {
        const uint32_t ex = f[k] - tot[k] - (y > 0 ? rowend[y - 1] : 0u);
        *(uint4 *)(cur + 4 * j) = make_uint4(r[k].x + ex, r[k].y + ex, r[k].z + ex, r[k].w + ex);
      }
    }
    __syncthreads();
    const uint32_t y0 = seg * RS, y1 = min(y0 + RS, d1);
    const bool col = L >= 2 && seg < NS;
    if (L >= 2) { /* the segments' sums */
      if (col) {
        uint4 t = make_uint4(0, 0, 0, 0);
        for (uint32_t y = y0; y < y1; y++) {
          const uint4 v = *(const uint4 *)(cur + y * d2 + 4 * cg);
          t = add4(t, v);
        }
        segsum[tid] = t;
      }
      __syncthreads();
    }
    if (seg < NS) {
      uint4 run = make_uint4(0, 0, 0, 0);
      for (uint32_t q = 0; col && q < seg; q++) {
        const uint4 v = segsum[q * CG + cg];
        run = add4(run, v);
      }
      for (uint32_t y = y0; y < y1; y++) {
        const uint4 v = *(const uint4 *)(cur + y * d2 + 4 * cg);
        if (col) run = add4(run, v);
        else run = v;
        *(float4 *)(x + (size_t)pl * P + y * d2 + 4 * cg) =
            make_float4(nz_eb_value((int32_t)run.x, step, 0, 0.0f), nz_eb_value((int32_t)run.y, step, 0, 0.0f),
                        nz_eb_value((int32_t)run.z, step, 0, 0.0f), nz_eb_value((int32_t)run.w, step, 0, 0.0f));
      }
    }
  }
  cp_async_wait<0>();
}

#define LZR_ROWS 4 /* k_lz_inv_rows<512, ...>: rows a band at most, a band a warp */
/* Up to this many planes, k_lz_inv_rows's CTAs sum the planes before their chunk themselves: on a
 * small frame the two kernels of carries cost more (one call at a time, a launch each) than the
 * reads of at most seven planes. */
#define LZR_SELF_CARRY_PLANES 8

/* Inverse Lorenzo and dequantization, a warp a band of rows (rows of up to 128 elements, d2 % 4 ==
 * 0): lane l owns the group of 4 columns 4l..4l+3 of each of its warp's rows in every plane of the
 * CTA's chunk [p0, p1), keeps their running sum over planes in registers (the z scan, from the
 * chunk's carry), scans each row by a warp scan of the groups' totals and the warp's rows down
 * its band in registers; one barrier a plane then hands each warp the column sums of the bands
 * above it (wrapping sums are exact in any order). Each thread streams only its own groups
 * through a ring of D planes by cp.async, so the ring needs no barrier. */
template <int NT, int R, int D>
__global__ void __launch_bounds__(NT, 1024 / NT) k_lz_inv_rows(const int32_t *d, const uint32_t *carry, int L,
                                                               uint32_t d0, uint32_t d1, uint32_t d2, uint32_t ppc,
                                                               double abs_eb, const double *d_abs_eb, float *x) {
  constexpr uint32_t NW = NT / 32;
  nz_pdl_enter();
  extern __shared__ uint4 s_lzr[];
  uint4 *ring = s_lzr;                        /* D planes x R rows x NT threads */
  uint4 *colsum = s_lzr + (size_t)D * R * NT; /* two planes x NW bands x 32 lanes */
  if (d_abs_eb) abs_eb = *d_abs_eb;
  const double step = 2.0 * abs_eb;
  const uint32_t P = d1 * d2, tid = threadIdx.x, lane = tid & 31, w = tid >> 5;
  const uint32_t rw = (d1 + NW - 1) / NW, y0 = min(w * rw, d1), ny = min(rw, d1 - y0);
  const bool on = lane < d2 / 4;
  const uint32_t p0 = blockIdx.x * ppc, p1 = min(p0 + ppc, d0);
  const uint4 zero = make_uint4(0, 0, 0, 0);
  auto issue = [&](uint32_t pl) {
    if (pl < p1 && on) {
      uint4 *dst = ring + (size_t)(pl % D) * R * NT + tid;
      const int32_t *g = d + (size_t)pl * P + (size_t)y0 * d2 + 4 * lane;
#pragma unroll
      for (int r = 0; r < R; r++)
        if ((uint32_t)r < ny) cp_async16(dst + r * NT, g + (size_t)r * d2);
    }
    cp_async_commit();
  };
  uint4 acc[R];
#pragma unroll
  for (int r = 0; r < R; r++)
    acc[r] = carry && on && (uint32_t)r < ny ? *(const uint4 *)(carry + (size_t)blockIdx.x * P + (size_t)(y0 + r) * d2 + 4 * lane)
                                              : zero;
  if (!carry && L == 3 && on) /* no carries given (a few planes): the sum of the planes before the chunk */
#pragma unroll 8
    for (uint32_t pl = 0; pl < p0; pl++)
#pragma unroll
      for (int r = 0; r < R; r++)
        if ((uint32_t)r < ny) acc[r] = add4(acc[r], __ldg((const uint4 *)(d + (size_t)pl * P + (size_t)(y0 + r) * d2) + lane));
  for (int k = 0; k < D - 1; k++) issue(p0 + k);
  for (uint32_t pl = p0; pl < p1; pl++) {
    issue(pl + D - 1); /* into the slot of plane pl - 1, which this thread has read */
    cp_async_wait<D - 1>();
    uint4 *cur = ring + (size_t)(pl % D) * R * NT + tid; /* rewritten in place with the 2D sums */
    uint4 band = zero;
#pragma unroll
    for (int r = 0; r < R; r++) {
      uint4 c = on && (uint32_t)r < ny ? cur[r * NT] : zero;
      if (L == 3) acc[r] = c = add4(c, acc[r]);
      c.y += c.x, c.z += c.y, c.w += c.z; /* the row: the group's prefix, then the lanes' */
      uint32_t incl = c.w;
#pragma unroll
      for (int o = 1; o < 32; o <<= 1) {
        const uint32_t t = __shfl_up_sync(NZ_FULL, incl, o);
        if (lane >= (uint32_t)o) incl += t;
      }
      const uint32_t ex = incl - c.w;
      c = add4(c, make_uint4(ex, ex, ex, ex));
      if (L >= 2) band = c = add4(c, band); /* the column, down this band */
      cur[r * NT] = c;
    }
    uint4 above = zero;
    if (L >= 2) { /* the bands above this one */
      uint4 *cs = colsum + (size_t)(pl & 1) * NW * 32;
      cs[w * 32 + lane] = band;
      __syncthreads();
      for (uint32_t q = 0; q < w; q++) above = add4(above, cs[q * 32 + lane]);
    }
    float *out = x + (size_t)pl * P + (size_t)y0 * d2 + 4 * lane;
#pragma unroll
    for (int r = 0; r < R; r++)
      if (on && (uint32_t)r < ny) {
        const uint4 v = add4(cur[r * NT], above);
        *(float4 *)(out + (size_t)r * d2) =
            make_float4(nz_eb_value((int32_t)v.x, step, 0, 0.0f), nz_eb_value((int32_t)v.y, step, 0, 0.0f),
                        nz_eb_value((int32_t)v.z, step, 0, 0.0f), nz_eb_value((int32_t)v.w, step, 0, 0.0f));
      }
  }
  cp_async_wait<0>();
}

/* k_lz_inv_rows<nt, r, d>'s shared bytes: its ring of d planes of r rows a thread, two planes of
 * the bands' column sums (a lane's group of 4 a warp). */
static size_t lz_inv_rows_smem(int nt, int r, int d) { return 16ull * ((size_t)d * r * nt + 2ull * nt); }

/* The instance of k_lz_inv_pipe for planes of P elements and rows of d1 and CTAs of nt threads,
 * and its shared bytes (D + 1 slots, the segments' sums, the rows' ends). */
typedef void (*LzInvKernel)(const int32_t *, const uint32_t *, int, uint32_t, uint32_t, uint32_t, uint32_t, double,
                            const double *, float *);
static LzInvKernel lz_inv_kernel(uint32_t P, uint32_t d1, int nt, size_t *smem) {
  const uint32_t kc = (P / 4 + nt - 1) / nt;
  const size_t fixed = 16ull * nt + 4ull * d1, budget = LZP_SMEM / (LZP_THREADS / nt);
  const bool deep = 5ull * 4 * P + fixed <= budget;
  *smem = (deep ? 5ull : 3ull) * 4 * P + fixed;
  if (nt == 512) return deep ? k_lz_inv_pipe<512, 4, 4> : k_lz_inv_pipe<512, 4, 2>;
  if (kc <= 1) return deep ? k_lz_inv_pipe<LZP_THREADS, 1, 4> : k_lz_inv_pipe<LZP_THREADS, 1, 2>;
  if (kc <= 2) return deep ? k_lz_inv_pipe<LZP_THREADS, 2, 4> : k_lz_inv_pipe<LZP_THREADS, 2, 2>;
  return deep ? k_lz_inv_pipe<LZP_THREADS, 4, 4> : k_lz_inv_pipe<LZP_THREADS, 4, 2>;
}

__global__ void __launch_bounds__(256) k_eb_dequant(double abs_eb, const double *d_abs_eb, int has_fill, float fill,
                                                     const int32_t *c, size_t n, float *x) {
  nz_pdl_enter();
  if (d_abs_eb) abs_eb = *d_abs_eb;
  const double step = 2.0 * abs_eb;
  auto one = [&](int32_t v) { return nz_eb_value(v, step, has_fill, fill); };
  const size_t gid = blockIdx.x * (size_t)blockDim.x + threadIdx.x, stride = (size_t)gridDim.x * blockDim.x;
  if ((((uintptr_t)c | (uintptr_t)x) & 15) == 0) {
    const size_t n4 = n / 4;
    for (size_t q = gid; q < n4; q += stride) {
      int4 v = __ldg((const int4 *)c + q);
      ((float4 *)x)[q] = make_float4(one(v.x), one(v.y), one(v.z), one(v.w));
    }
    if (gid < n - 4 * n4) x[4 * n4 + gid] = one(__ldg(c + 4 * n4 + gid));
  } else {
    for (size_t i = gid; i < n; i += stride) x[i] = one(c[i]);
  }
}

/* Inverse 1D Lorenzo over one row (the whole array): CUB's device-wide inclusive sum (wrapping
 * uint32) into x's words, its temporary storage in the workspace, then the floats in place. */
static ncclzStatus lz_inverse_row(const ncclzQuantParams *p, const double *d_abs_eb, const int32_t *d_sym, size_t n,
                                  float *d_x, void *d_ws, size_t ws_bytes, cudaStream_t s) {
  size_t temp = 0;
  uint32_t *sums = (uint32_t *)d_x;
  NZ_CUDA(cub::DeviceScan::InclusiveSum(nullptr, temp, (const uint32_t *)d_sym, sums, n, s));
  if (temp > ws_bytes) return ncclzSetError(NCCLZ_ERR_ARG, "cuda eb: workspace too small for the 1D inverse");
  NZ_CUDA(cub::DeviceScan::InclusiveSum(d_ws, temp, (const uint32_t *)d_sym, sums, n, s));
  nz_launch(k_eb_dequant, grid_for(n / 4), 256, 0, s, p->abs_eb, d_abs_eb, 0, 0.0f, (const int32_t *)sums, n, d_x);
  NZ_LAUNCHED();
  return NCCLZ_OK;
}

/* The inverse Lorenzo and dequantization of planes of d1 x d2 <= LZ_MAXP codes, a chunk of planes a
 * CTA in shared memory (after the carries into each chunk, in 3D): a warp a band of rows for narrow
 * planes, the plane pipe for rows of whole groups of 4, else a plane at a time (k_lz_inverse). */
static ncclzStatus lz_inverse_small(const ncclzQuantParams *p, int L, uint32_t d0, uint32_t d1, uint32_t d2,
                                    const double *d_abs_eb, const int32_t *d_sym, float *d_x, void *d_ws, cudaStream_t s) {
  const uint32_t P = d1 * d2;
  const bool pipe = d2 % 4 == 0 && d2 / 4 <= LZP_THREADS && nz_aligned16(d_sym, d_x, d_ws);
  const int nt = lzp_threads(P, d2);
  uint32_t ppc; /* planes a CTA: the pipe's chunks fill the chip */
  if (!pipe) ppc = lz_planes_per_cta(d0, 512);
  else if (lzp_grid(d0, nt, &ppc) != NCCLZ_OK) return NCCLZ_ERR_CUDA;
  const uint32_t nc = (uint32_t)ncclz_ceil_div(d0, ppc);
  const bool rows = pipe && nt == 512 && d2 <= 4 * 32 && d1 <= 512 / 32 * LZR_ROWS; /* a warp a band of rows */
  uint32_t *carry = NULL;
  if (L == 3 && nc > 1 && !(rows && d0 <= LZR_SELF_CARRY_PLANES)) {
    carry = (uint32_t *)d_ws; /* nc * P <= n words */
    const ncclzStatus st = nz_lz_chunk_carry(d_sym, P, d0, ppc, nc, carry, s);
    if (st != NCCLZ_OK) return st;
  }
  if (rows) {
    const size_t smem = lz_inv_rows_smem(512, LZR_ROWS, 2);
    NZ_CUDA(nz_smem_optin(k_lz_inv_rows<512, LZR_ROWS, 2>, smem));
    nz_launch(k_lz_inv_rows<512, LZR_ROWS, 2>, nc, 512, smem, s, d_sym, carry, L, d0, d1, d2, ppc, p->abs_eb, d_abs_eb,
              d_x);
  } else if (pipe) {
    size_t smem;
    const LzInvKernel k = lz_inv_kernel(P, d1, nt, &smem);
    NZ_CUDA(nz_smem_optin(k, smem));
    nz_launch(k, nc, nt, smem, s, d_sym, carry, L, d0, d1, d2, ppc, p->abs_eb, d_abs_eb, d_x);
  } else {
    const size_t smem = 4ull * (P + LZ_THREADS);
    NZ_CUDA(nz_smem_optin(k_lz_inverse, 4 * (LZ_MAXP + LZ_THREADS)));
    nz_launch(k_lz_inverse, nc, LZ_THREADS, smem, s, d_sym, carry, L, d0, d1, d2, ppc, p->abs_eb, d_abs_eb, d_x);
  }
  NZ_LAUNCHED();
  return NCCLZ_OK;
}

/* The inverse of larger planes with rows of whole groups of 4 (aligned) that the band inverse does
 * not take: a pass an axis (z, then y, through the workspace), then the rows with the floats. */
static ncclzStatus lz_inverse_axes(const ncclzQuantParams *p, int L, uint64_t d0, uint64_t d1, uint64_t d2,
                                   const double *d_abs_eb, const int32_t *d_sym, float *d_x, void *d_ws, cudaStream_t s) {
  const uint4 *src = (const uint4 *)d_sym;
  uint4 *w = (uint4 *)d_ws;
  const size_t w4 = d2 / 4, rows = d0 * d1;
  uint4 *scratch = (uint4 *)d_x; /* the floats are written last */
  if (L == 3) { /* along z: a thread a group of the plane */
    const ncclzStatus st = nz_lz_walk(src, w, 1, (uint32_t)d0, d1 * w4, scratch, s);
    if (st != NCCLZ_OK) return st;
    src = w;
  }
  if (L >= 2) { /* along y: a thread a group of a plane's row */
    const ncclzStatus st = nz_lz_walk(src, w, d0, (uint32_t)d1, w4, scratch, s);
    if (st != NCCLZ_OK) return st;
    src = w;
  }
  nz_launch(k_lz_rows_dequant, grid_for(32 * rows), 256, 0, s, src, rows, (uint32_t)w4, p->abs_eb, d_abs_eb,
            (float4 *)d_x);
  NZ_LAUNCHED();
  return NCCLZ_OK;
}

ncclzStatus ncclzCudaDequantizeEB(const ncclzQuantParams *p, const double *d_abs_eb, const int32_t *d_sym, size_t n,
                                  float *d_x, void *d_ws, size_t ws_bytes, cudaStream_t s) {
  if (!p || p->kind != NCCLZ_QUANT_EB) return ncclzSetError(NCCLZ_ERR_ARG, "cuda eb: bad params");
  const int32_t *codes = d_sym;
  if (p->lorenzo) {
    if (p->has_fill)
      return ncclzSetError(NCCLZ_ERR_ARG, "cuda eb: inverse Lorenzo with fill values is not implemented on the GPU");
    if (ws_bytes < 4 * n) return ncclzSetError(NCCLZ_ERR_ARG, "cuda eb: workspace too small");
    uint64_t d0 = p->dims[0], d1 = p->dims[1], d2 = p->dims[2];
    int L = p->lorenzo;
    if (!ncclz_dims_describe(p->dims[0], p->dims[1], p->dims[2], n)) {
      d0 = d1 = 1;
      d2 = n;
      L = 1;
    }
    if (d1 * d2 <= LZ_MAXP && d0 > 0)
      return lz_inverse_small(p, L, (uint32_t)d0, (uint32_t)d1, (uint32_t)d2, d_abs_eb, d_sym, d_x, d_ws, s);
    if (d0 * d1 == 1) return lz_inverse_row(p, d_abs_eb, d_sym, n, d_x, d_ws, ws_bytes, s);
    if (nz_lz_bands_fit(L, (uint32_t)d2, d_sym, d_x, d_ws))
      return nz_lz_inverse_bands(L, (uint32_t)d0, (uint32_t)d1, (uint32_t)d2, d_sym, p->abs_eb, d_abs_eb, d_x, d_ws,
                                 ws_bytes, s);
    if (d2 % 4 == 0 && nz_aligned16(d_sym, d_x, d_ws)) return lz_inverse_axes(p, L, d0, d1, d2, d_abs_eb, d_sym, d_x, d_ws, s);
    int32_t *w = (int32_t *)d_ws;
    /* Without fill codes the inverse is a prefix sum along each predicted axis (wrapping). */
    size_t rows = n / d2;
    nz_launch(k_scan_rows, (unsigned)(rows / 128 + 1), 128, 0, s, d_sym, w, rows, (uint32_t)d2);
    NZ_LAUNCHED();
    if (L >= 2) {
      nz_launch(k_scan_axis, (unsigned)(d0 * d2 / 128 + 1), 128, 0, s, w, d0, (uint32_t)d1, d2);
      NZ_LAUNCHED();
    }
    if (L == 3) {
      nz_launch(k_scan_axis, (unsigned)(d1 * d2 / 128 + 1), 128, 0, s, w, 1, (uint32_t)d0, d1 * d2);
      NZ_LAUNCHED();
    }
    codes = w;
  }
  nz_launch(k_eb_dequant, grid_for(n / 4), 256, 0, s, p->abs_eb, d_abs_eb, p->has_fill, p->fill_value, codes, n, d_x);
  NZ_LAUNCHED();
  return NCCLZ_OK;
}

/* ------------------------------------------------------------ QSGD */

__global__ void k_qsgd_scales(const float *x, size_t n, uint32_t bucket, float *scales) {
  nz_pdl_enter();
  size_t b = blockIdx.x * (size_t)(blockDim.x / 32) + threadIdx.x / 32;
  size_t start = b * bucket;
  if (start >= n) return;
  size_t end = n - start < bucket ? n : start + bucket;
  float m = 0.0f;
  for (size_t i = start + (threadIdx.x & 31); i < end; i += 32) {
    float a = fabsf(__ldg(x + i));
    if (a > m) m = a;
  }
  typedef cub::WarpReduce<float> Reduce; /* one warp per bucket */
  __shared__ typename Reduce::TempStorage ts[8];
  m = Reduce(ts[threadIdx.x / 32]).Reduce(m, cuda::maximum<float>());
  if ((threadIdx.x & 31) == 0) scales[b] = m;
}

template <typename T> /* int32_t codes, or int8_t (every QSGD code fits: |c| <= 127) */
__global__ void k_qsgd_quant(const float *x, size_t n, uint32_t bucket, int s, uint64_t seed, uint32_t rank,
                             const float *scales, T *sym) {
  nz_pdl_enter();
  size_t stride = (size_t)gridDim.x * blockDim.x;
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += stride) {
    const float scale = __ldg(scales + i / bucket);
    sym[i] = (T)nz_qsgd_one(__ldg(x + i), scale, nz_qsgd_bucket(scale), s, s, seed, rank, i);
  }
}

/* Scales and codes in one pass: a warp a bucket of 128 V elements (x and sym 16-byte aligned),
 * each lane V float4 loads in flight; the bucket's max |x| by a warp reduction (NaN never
 * compares greater, 0 to start: the reference's bucket_max_abs, in any order), then the codes
 * from the registers. Two passes over x (scales, then codes) ran at about 430 GB/s on 256 MiB. */
template <int V, typename T>
__global__ void __launch_bounds__(256, 4) k_qsgd_fused(const float *x, size_t n, uint32_t bucket, int s, uint64_t seed,
                                                    uint32_t rank, float *scales, T *sym) {
  nz_pdl_enter();
  const uint32_t lane = threadIdx.x & 31;
  const size_t nb = (n + bucket - 1) / bucket, warps = (size_t)gridDim.x * (blockDim.x / 32);
  for (size_t b = blockIdx.x * (size_t)(blockDim.x / 32) + threadIdx.x / 32; b < nb; b += warps) {
    const size_t q0 = b * (bucket / 4); /* the bucket's first float4 */
    float4 v[V];
    float m = 0.0f;
#pragma unroll
    for (int k = 0; k < V; k++) {
      v[k] = nz_load4(x, 4 * (q0 + lane + 32 * k), n, NAN); /* NaN where there is no element: never the max */
      m = nz_max_abs4(v[k], m);
    }
    m = nz_warp_max(m);
    if (lane == 0) scales[b] = m;
    const NzQsgdBucket bk = nz_qsgd_bucket(m);
    int4 c[V];
    if (bk.fast) { /* the warp's bucket: one branch */
      const double sd = s;
#pragma unroll
      for (int k = 0; k < V; k++) {
        uint32_t w[4]; /* one Philox call for the lane's four elements (group q0 + lane + 32 k) */
        nz_qsgd_words(seed, rank, q0 + lane + 32 * k, w);
#pragma unroll
        for (int j = 0; j < 4; j++) asm volatile("" : "+r"(w[j])); /* kept out of the code's select */
        c[k].x = nz_qsgd_fast(v[k].x, bk, sd, s, w[0]);
        c[k].y = nz_qsgd_fast(v[k].y, bk, sd, s, w[1]);
        c[k].z = nz_qsgd_fast(v[k].z, bk, sd, s, w[2]);
        c[k].w = nz_qsgd_fast(v[k].w, bk, sd, s, w[3]);
      }
    } else {
#pragma unroll
      for (int k = 0; k < V; k++) {
        const size_t e = 4 * (q0 + lane + 32 * k);
        c[k] = make_int4(nz_qsgd_code(v[k].x, m, s, seed, rank, e), nz_qsgd_code(v[k].y, m, s, seed, rank, e + 1),
                         nz_qsgd_code(v[k].z, m, s, seed, rank, e + 2), nz_qsgd_code(v[k].w, m, s, seed, rank, e + 3));
      }
    }
#pragma unroll
    for (int k = 0; k < V; k++) nz_store4(sym, 4 * (q0 + lane + 32 * k), n, c[k]);
  }
}

/* Four codes from group q: one int4 load, or one 32-bit load of four 8-bit codes. */
static __device__ __forceinline__ int4 qd_load4(const int32_t *sym, size_t q) { return __ldg((const int4 *)sym + q); }
static __device__ __forceinline__ int4 qd_load4(const int8_t *sym, size_t q) {
  const char4 c = __ldg((const char4 *)sym + q);
  return make_int4(c.x, c.y, c.z, c.w);
}

/* Four codes in, float4 out (QD_UNROLL in flight a thread) when both are aligned (16 bytes) and a
 * bucket holds whole groups of 4; the rest scalar. rs = RN(1 / s). T: int32_t or int8_t codes. */
#define QD_UNROLL 4
template <typename T>
__global__ void __launch_bounds__(256) k_qsgd_dequant(const T *sym, size_t n, uint32_t bucket, double s, double rs,
                                                      const float *scales, float *x) {
  nz_pdl_enter();
  const size_t gid = blockIdx.x * (size_t)blockDim.x + threadIdx.x, stride = (size_t)gridDim.x * blockDim.x;
  size_t done = 0;
  if ((((uintptr_t)sym | (uintptr_t)x) & 15) == 0 && bucket % 4 == 0) {
    const size_t n4 = n / 4;
    for (size_t q0 = gid; q0 < n4; q0 += QD_UNROLL * stride) {
      int4 c[QD_UNROLL];
      float sc[QD_UNROLL];
#pragma unroll
      for (int u = 0; u < QD_UNROLL; u++) {
        const size_t q = q0 + u * stride;
        c[u] = q < n4 ? qd_load4(sym, q) : int4{};
        sc[u] = q < n4 ? __ldg(scales + 4 * q / bucket) : 0.0f;
      }
#pragma unroll
      for (int u = 0; u < QD_UNROLL; u++) {
        const size_t q = q0 + u * stride;
        if (q >= n4) break;
        const double scale = sc[u];
        ((float4 *)x)[q] = make_float4(nz_qsgd_value(c[u].x, scale, s, rs), nz_qsgd_value(c[u].y, scale, s, rs),
                                       nz_qsgd_value(c[u].z, scale, s, rs), nz_qsgd_value(c[u].w, scale, s, rs));
      }
    }
    done = 4 * n4;
  }
  for (size_t i = done + gid; i < n; i += stride) x[i] = nz_qsgd_value(sym[i], (double)__ldg(scales + i / bucket), s, rs);
}

static ncclzStatus check_qsgd(const ncclzQuantParams *p) {
  if (!p || p->kind != NCCLZ_QUANT_QSGD || !p->qsgd_bucket || (p->qsgd_bits != 2 && p->qsgd_bits != 4 && p->qsgd_bits != 8))
    return ncclzSetError(NCCLZ_ERR_ARG, "cuda qsgd: bad params");
  return NCCLZ_OK;
}

ncclzStatus ncclzCudaQsgdScales(const ncclzQuantParams *p, const float *d_x, size_t n, float *d_scales, cudaStream_t s) {
  ncclzStatus st = check_qsgd(p);
  if (st != NCCLZ_OK) return st;
  size_t nb = ncclz_ceil_div(n, p->qsgd_bucket);
  if (nb) nz_launch(k_qsgd_scales, (unsigned)ncclz_ceil_div(nb, 8), 256, 0, s, d_x, n, p->qsgd_bucket, d_scales);
  NZ_LAUNCHED();
  return NCCLZ_OK;
}

template <typename T>
static ncclzStatus qsgd_codes(const ncclzQuantParams *p, const float *d_x, size_t n, const float *d_scales, T *d_sym,
                              cudaStream_t s) {
  ncclzStatus st = check_qsgd(p);
  if (st != NCCLZ_OK) return st;
  nz_launch(k_qsgd_quant<T>, grid_for(n), 256, 0, s, d_x, n, p->qsgd_bucket, ncclz_qsgd_levels(p->qsgd_bits), p->seed,
            p->rank, d_scales, d_sym);
  NZ_LAUNCHED();
  return NCCLZ_OK;
}

ncclzStatus ncclzCudaQuantizeQsgd(const ncclzQuantParams *p, const float *d_x, size_t n, const float *d_scales,
                                  int32_t *d_sym, cudaStream_t s) {
  return qsgd_codes(p, d_x, n, d_scales, d_sym, s);
}

/* Scales and codes in one pass where the buckets allow (k_qsgd_fused), else the two passes. */
template <typename T>
static ncclzStatus qsgd_quantize(const ncclzQuantParams *p, const float *d_x, size_t n, float *d_scales, T *d_sym,
                                 cudaStream_t s) {
  ncclzStatus st = check_qsgd(p);
  if (st != NCCLZ_OK || !n) return st;
  const uint32_t b = p->qsgd_bucket, V = b / 128;
  if (b % 128 || V > 4 || V == 3 || !nz_aligned16(d_x, d_sym)) { /* the two passes */
    if ((st = ncclzCudaQsgdScales(p, d_x, n, d_scales, s)) != NCCLZ_OK) return st;
    return qsgd_codes(p, d_x, n, d_scales, d_sym, s);
  }
  const size_t blocks = ncclz_ceil_div(ncclz_ceil_div(n, b), 8); /* 8 warps, a bucket each */
  const unsigned grid = (unsigned)(blocks < 132 * 16 ? blocks : 132 * 16);
  const int lv = ncclz_qsgd_levels(p->qsgd_bits);
  if (V == 1) nz_launch(k_qsgd_fused<1, T>, grid, 256, 0, s, d_x, n, b, lv, p->seed, p->rank, d_scales, d_sym);
  else if (V == 2) nz_launch(k_qsgd_fused<2, T>, grid, 256, 0, s, d_x, n, b, lv, p->seed, p->rank, d_scales, d_sym);
  else nz_launch(k_qsgd_fused<4, T>, grid, 256, 0, s, d_x, n, b, lv, p->seed, p->rank, d_scales, d_sym);
  NZ_LAUNCHED();
  return NCCLZ_OK;
}

ncclzStatus ncclzCudaQsgdQuantize(const ncclzQuantParams *p, const float *d_x, size_t n, float *d_scales,
                                 int32_t *d_sym, cudaStream_t s) {
  return qsgd_quantize(p, d_x, n, d_scales, d_sym, s);
}

ncclzStatus ncclzCudaQsgdQuantize8(const ncclzQuantParams *p, const float *d_x, size_t n, float *d_scales,
                                  int8_t *d_sym8, cudaStream_t s) {
  return qsgd_quantize(p, d_x, n, d_scales, d_sym8, s);
}

template <typename T>
static ncclzStatus qsgd_dequantize(const ncclzQuantParams *p, const T *d_sym, size_t n, const float *d_scales,
                                   float *d_x, cudaStream_t s) {
  ncclzStatus st = check_qsgd(p);
  if (st != NCCLZ_OK) return st;
  const double lv = (double)ncclz_qsgd_levels(p->qsgd_bits);
  nz_launch(k_qsgd_dequant<T>, grid_for(n), 256, 0, s, d_sym, n, p->qsgd_bucket, lv, 1.0 / lv, d_scales, d_x);
  NZ_LAUNCHED();
  return NCCLZ_OK;
}

ncclzStatus ncclzCudaDequantizeQsgd(const ncclzQuantParams *p, const int32_t *d_sym, size_t n, const float *d_scales,
                                    float *d_x, cudaStream_t s) {
  return qsgd_dequantize(p, d_sym, n, d_scales, d_x, s);
}

ncclzStatus ncclzCudaDequantizeQsgd8(const ncclzQuantParams *p, const int8_t *d_sym8, size_t n, const float *d_scales,
                                     float *d_x, cudaStream_t s) {
  return qsgd_dequantize(p, d_sym8, n, d_scales, d_x, s);
}
