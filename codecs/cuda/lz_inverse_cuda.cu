/* Inverse Lorenzo and dequantization of planes too large for shared memory, in one pass over the
 * codes after a pass of sums.
 *
 * The inverse of L-axis Lorenzo is an inclusive prefix sum along each predicted axis (wrapping
 * uint32), and the sums commute. A CTA takes a tile: a band of R rows (all of their columns) in a
 * chunk of planes, a thread a group of 4 columns. It walks its chunk's planes keeping each row's
 * running sum over planes (z), sums down its band (y) from the sum of the rows above
 * the band, and scans its rows across the CTA (x, one block scan of R words a plane), then writes
 * the floats. What a tile cannot see is read from the pass of sums before it (k_lzi_sums):
 *   - the rows above its band: T[pl][b] = the sum of band b's rows in plane pl, summed over the
 *     bands in place into W[pl][b] = the sum of bands 0..b (nz_lz_walk, in segments where the
 *     planes' groups are few); the tile reads W[pl][b - 1] and sums it over planes as it walks (3D);
 *   - the planes before its chunk (3D, more than one chunk): each row's sum over the chunk's planes
 *     and W's sum over them, turned into carries into each chunk (nz_lz_chunk_carry).
 * So the codes are read twice and the floats written once, where a pass an axis reads and writes
 * both three times. */
#include "decode_out.cuh"
#include "lorenzo.cuh"

/* Exclusive sums across the CTA of R words a thread (one per row of a band), at once: a warp scan
 * of each word, the warps' totals through shared memory (wsum, one of two alternating buffers: one
 * barrier a call), and each warp's prefix by a scan of those totals across its lanes. Written here
 * because CUB's block scan of an R-word struct keeps every warp's aggregate live and spills at
 * 512 and 1,024 threads. */
template <int NT, int R>
static __device__ __forceinline__ void lzi_block_excl(const uint32_t (&tot)[R], uint32_t (&ex)[R],
                                                      uint32_t (*wsum)[R]) {
  constexpr int NW = NT / 32;
  const uint32_t lane = threadIdx.x & 31, w = threadIdx.x >> 5;
  uint32_t inc[R];
#pragma unroll
  for (int r = 0; r < R; r++) inc[r] = tot[r];
#pragma unroll
  for (int o = 1; o < 32; o <<= 1)
#pragma unroll
    for (int r = 0; r < R; r++) {
      const uint32_t y = __shfl_up_sync(NZ_FULL, inc[r], o);
      if (lane >= (uint32_t)o) inc[r] += y;
    }
  if (NW > 1 && lane == 31)
#pragma unroll
    for (int r = 0; r < R; r++) wsum[w][r] = inc[r];
  if (NW > 1) __syncthreads();
#pragma unroll
  for (int r = 0; r < R; r++) {
    uint32_t before = 0;
    if (NW > 1) { /* lane i < w holds warp i's total; their sum is the warps before this one */
      uint32_t v = lane < w ? wsum[lane][r] : 0u;
#pragma unroll
      for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(NZ_FULL, v, o);
      before = v;
    }
    ex[r] = before + inc[r] - tot[r];
  }
}

/* Thread (c, b, j): group j of band b's rows through chunk c's planes. T[pl][b][j] is the band's sum
 * in plane pl; with agg, agg[c][y][j] the chunk's sum of row y. */
template <int R>
__global__ void __launch_bounds__(256) k_lzi_sums(const uint4 *__restrict__ d, uint4 *__restrict__ T,
                                                  uint4 *__restrict__ agg, uint32_t d0, uint32_t d1, uint32_t G,
                                                  uint32_t nb, uint32_t ppc, uint32_t nc) {
  nz_pdl_enter();
  const size_t t = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  if (t >= (size_t)nc * nb * G) return;
  const uint32_t j = (uint32_t)(t % G), b = (uint32_t)(t / G % nb), c = (uint32_t)(t / ((size_t)G * nb));
  const uint32_t y0 = b * R, ny = min((uint32_t)R, d1 - y0), p0 = c * ppc, p1 = min(p0 + ppc, d0);
  const uint4 zero = make_uint4(0, 0, 0, 0);
  uint4 zs[R];
#pragma unroll
  for (int r = 0; r < R; r++) zs[r] = zero;
  for (uint32_t pl = p0; pl < p1; pl++) {
    const uint4 *row = d + ((size_t)pl * d1 + y0) * G + j;
    uint4 v[R], s = zero;
#pragma unroll
    for (int r = 0; r < R; r++) v[r] = (uint32_t)r < ny ? __ldg(row + (size_t)r * G) : zero;
#pragma unroll
    for (int r = 0; r < R; r++) s = add4(s, v[r]), zs[r] = add4(zs[r], v[r]);
    T[((size_t)pl * nb + b) * G + j] = s;
  }
  if (agg)
#pragma unroll
    for (int r = 0; r < R; r++)
      if ((uint32_t)r < ny) agg[((size_t)c * d1 + y0 + r) * G + j] = zs[r];
}

/* Tile (c, b) = blockIdx.x (b fastest): band b's rows through chunk c's planes, streamed with the
 * sum of the bands above (W[pl][b - 1]) of each plane through a ring of D planes by cp.async (each
 * thread its own groups, so the ring needs no barrier). cz, cw: the carries into chunk c (of its
 * rows, of W), or NULL for none. */
template <int NT, int R, int D>
__global__ void __launch_bounds__(NT) k_lzi_band(const int32_t *__restrict__ d, const uint32_t *__restrict__ W,
                                                 const uint4 *cz, const uint4 *cw, int L, uint32_t d0, uint32_t d1,
                                                 uint32_t d2, uint32_t nb, uint32_t ppc, double abs_eb,
                                                 const double *d_abs_eb, float *x) {
  __shared__ uint32_t wsum[2][NT / 32][R]; /* the warps' totals, alternate planes: one barrier a plane */
  extern __shared__ uint4 s_lzi[]; /* D slots x (R rows + the bands above) x NT groups, then R x NT z sums */
  nz_pdl_enter();
  if (d_abs_eb) abs_eb = *d_abs_eb;
  const double step = 2.0 * abs_eb;
  const uint32_t G = d2 / 4, tid = threadIdx.x, c = blockIdx.x / nb, b = blockIdx.x % nb;
  const uint32_t y0 = b * R, ny = min((uint32_t)R, d1 - y0), p0 = c * ppc, p1 = min(p0 + ppc, d0);
  const bool on = tid < G, above_on = on && b > 0;
  const size_t P = (size_t)d1 * d2;
  const uint4 zero = make_uint4(0, 0, 0, 0);
  auto issue = [&](uint32_t pl) {
    if (pl < p1 && on) {
      uint4 *dst = s_lzi + (size_t)(pl % D) * (R + 1) * NT + tid;
      const int32_t *g = d + pl * P + (size_t)y0 * d2 + 4 * tid;
#pragma unroll
      for (int r = 0; r < R; r++)
        if ((uint32_t)r < ny) cp_async16(dst + r * NT, g + (size_t)r * d2);
      if (b > 0) cp_async16(dst + R * NT, W + ((size_t)pl * nb + b - 1) * d2 + 4 * tid);
    }
    cp_async_commit();
  };
  /* each row's sum over planes, in shared memory (registers would spill at 512 and 1,024 threads) */
  uint4 *zacc = s_lzi + (size_t)D * (R + 1) * NT + tid, yacc = cw && above_on ? cw[((size_t)c * nb + b - 1) * G + tid] : zero;
#pragma unroll
  for (int r = 0; r < R; r++) zacc[r * NT] = cz && on && (uint32_t)r < ny ? cz[((size_t)c * d1 + y0 + r) * G + tid] : zero;
  for (int k = 0; k < D - 1; k++) issue(p0 + k);
  for (uint32_t pl = p0; pl < p1; pl++) {
    issue(pl + D - 1); /* into the slot of plane pl - 1, which this thread has read */
    cp_async_wait<D - 1>();
    uint4 *cur = s_lzi + (size_t)(pl % D) * (R + 1) * NT + tid;
    const uint4 above = above_on ? cur[R * NT] : zero;
    yacc = L == 3 ? add4(yacc, above) : above;
    uint4 run = yacc; /* z, then y down the band from the rows above it */
    uint32_t tot[R], ex[R];
#pragma unroll
    for (int r = 0; r < R; r++) {
      uint4 v = on && (uint32_t)r < ny ? cur[r * NT] : zero;
      if (L == 3) zacc[r * NT] = v = add4(v, zacc[r * NT]);
      run = add4(run, v);
      v = run;
      v.y += v.x, v.z += v.y, v.w += v.z; /* x: the group's prefix, then the CTA's */
      tot[r] = v.w;
      if (on) cur[r * NT] = v;
    }
    lzi_block_excl<NT, R>(tot, ex, wsum[pl & 1]);
    float *out = x + pl * P + (size_t)y0 * d2 + 4 * tid;
#pragma unroll
    for (int r = 0; r < R; r++)
      if (on && (uint32_t)r < ny) {
        const uint32_t e = ex[r];
        const uint4 v = add4(cur[r * NT], make_uint4(e, e, e, e));
        *(float4 *)(out + (size_t)r * d2) =
            make_float4(nz_eb_value((int32_t)v.x, step, 0, 0.0f), nz_eb_value((int32_t)v.y, step, 0, 0.0f),
                        nz_eb_value((int32_t)v.z, step, 0, 0.0f), nz_eb_value((int32_t)v.w, step, 0, 0.0f));
      }
  }
  cp_async_wait<0>();
}

typedef void (*LziKernel)(const int32_t *, const uint32_t *, const uint4 *, const uint4 *, int, uint32_t, uint32_t,
                          uint32_t, uint32_t, uint32_t, double, const double *, float *);
#define LZI_MAXG 1024u
#define LZI_DEPTH 2 /* planes in a tile's ring */

/* The instance for rows of G groups: the fewest threads a CTA that cover a row, bands of 8 rows
 * (4 at 1,024 threads, where 8 rows' ring and z sums would need 416 KiB of shared memory), a ring
 * of two planes. */
static LziKernel lzi_kernel(uint32_t G, int *nt, int *rows) {
  *rows = G > 512 ? 4 : 8;
  *nt = G <= 64 ? 64 : G <= 128 ? 128 : G <= 256 ? 256 : G <= 512 ? 512 : 1024;
  switch (*nt) {
  case 64: return k_lzi_band<64, 8, LZI_DEPTH>;
  case 128: return k_lzi_band<128, 8, LZI_DEPTH>;
  case 256: return k_lzi_band<256, 8, LZI_DEPTH>;
  case 512: return k_lzi_band<512, 8, LZI_DEPTH>;
  default: return k_lzi_band<1024, 4, LZI_DEPTH>;
  }
}

bool nz_lz_bands_fit(int L, uint32_t d2, const void *d_sym, const void *d_x, const void *d_ws) {
  return L >= 2 && d2 % 4 == 0 && d2 / 4 <= LZI_MAXG &&
         nz_aligned16(d_sym, d_x, d_ws);
}

/* Chunks of planes: enough tiles for one wave of the chip, where the workspace holds the chunks'
 * carries (3D: a plane's rows and its bands' sums a chunk, after W's words). */
static uint32_t lzi_chunks(int L, uint32_t d0, uint32_t d1, uint32_t d2, uint32_t nb, uint64_t wave, size_t words) {
  uint64_t nc = ncclz_ceil_div(wave, nb);
  if (nc > d0) nc = d0;
  if (L == 3 && nc > 1) {
    const size_t tw = (size_t)d0 * nb * d2, per = (size_t)d1 * d2 + (size_t)nb * d2;
    const uint64_t cap = words > tw ? (words - tw) / per : 0;
    if (nc > cap) nc = cap;
  }
  return nc < 1 ? 1u : (uint32_t)nc;
}

ncclzStatus nz_lz_inverse_bands(int L, uint32_t d0, uint32_t d1, uint32_t d2, const int32_t *d_sym, double abs_eb,
                                const double *d_abs_eb, float *d_x, void *d_ws, size_t ws_bytes, cudaStream_t s) {
  const uint32_t G = d2 / 4;
  int nt, R, nsm = 0, per_sm = 0;
  const LziKernel k = lzi_kernel(G, &nt, &R);
  const size_t smem = ((LZI_DEPTH * (R + 1) + R) * (size_t)nt) * sizeof(uint4);
  NZ_CUDA(nz_smem_optin(k, smem));
  ncclzStatus st = nz_sm_count(&nsm);
  if (st != NCCLZ_OK) return st;
  NZ_CUDA(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, k, nt, smem));
  const uint32_t nb = (d1 + R - 1) / R;
  if ((uint64_t)d0 * nb * d2 > ws_bytes / 4) return ncclzSetError(NCCLZ_ERR_ARG, "cuda eb: workspace too small for the bands");
  uint32_t nc = lzi_chunks(L, d0, d1, d2, nb, (uint64_t)(per_sm > 0 ? per_sm : 1) * nsm, ws_bytes / 4);
  const uint32_t ppc = (uint32_t)ncclz_ceil_div(d0, nc);
  nc = (uint32_t)ncclz_ceil_div(d0, ppc);
  const bool carries = L == 3 && nc > 1;
  uint32_t *W = (uint32_t *)d_ws, *cz = W + (size_t)d0 * nb * d2, *cw = cz + (size_t)nc * d1 * d2;
  const uint64_t sum_threads = (uint64_t)nc * nb * G;
  const auto sums = R == 8 ? k_lzi_sums<8> : k_lzi_sums<4>;
  nz_launch(sums, (unsigned)ncclz_ceil_div(sum_threads, 256), 256, 0, s, (const uint4 *)d_sym, (uint4 *)W,
            carries ? (uint4 *)cz : (uint4 *)NULL, d0, d1, G, nb, ppc, nc);
  NZ_LAUNCHED();
  /* the floats are written last: their room holds the walk's segment sums */
  st = nz_lz_walk((const uint4 *)W, (uint4 *)W, d0, nb, G, (uint4 *)d_x, s); /* in place: W's room in L2 */
  if (st == NCCLZ_OK && carries) st = nz_lz_chunk_carry(NULL, d1 * d2, d0, ppc, nc, cz, s);
  if (st == NCCLZ_OK && carries) st = nz_lz_chunk_carry((const int32_t *)W, nb * d2, d0, ppc, nc, cw, s);
  if (st != NCCLZ_OK) return st;
  nz_launch(k, nc * nb, nt, smem, s, (const int32_t *)d_sym, (const uint32_t *)W, carries ? (const uint4 *)cz : NULL,
            carries ? (const uint4 *)cw : NULL, L, d0, d1, d2, nb, ppc, abs_eb, d_abs_eb, d_x);
  NZ_LAUNCHED();
  return NCCLZ_OK;
}
