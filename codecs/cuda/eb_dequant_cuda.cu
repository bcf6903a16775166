/* EB dequantization on the GPU, and the inverse of Lorenzo prediction on planes that fit shared
 * memory or on rows (lz_inverse_cuda.cu takes larger planes): the prefix sums along each predicted
 * axis, then the codes to floats with the reference's exact binary64 arithmetic (-fmad=false). */
#include <cub/block/block_scan.cuh>
#include <cub/device/device_scan.cuh>
#include <cuda/functional>
#include <math.h>

#include "decode_out.cuh"
#include "eb_quant.cuh"
#include "lorenzo.cuh"

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
  nz_launch(k_eb_dequant, nz_grid_for(n / 4), 256, 0, s, p->abs_eb, d_abs_eb, 0, 0.0f, (const int32_t *)sums, n, d_x);
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
  nz_launch(k_lz_rows_dequant, nz_grid_for(32 * rows), 256, 0, s, src, rows, (uint32_t)w4, p->abs_eb, d_abs_eb,
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
  nz_launch(k_eb_dequant, nz_grid_for(n / 4), 256, 0, s, p->abs_eb, d_abs_eb, p->has_fill, p->fill_value, codes, n, d_x);
  NZ_LAUNCHED();
  return NCCLZ_OK;
}
