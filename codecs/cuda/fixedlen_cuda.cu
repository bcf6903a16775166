/* FIXEDLEN on the GPU (FORMAT.md): one pass over the symbols. Each CTA takes 256 blocks of 32
 * symbols (a warp per 32 blocks, lane l holding symbol l of a block), finds their widths, packs
 * the bit planes with a 32x32 bit transpose done by shuffles (each warp into its own region of
 * shared memory), learns its output offset by decoupled look-back over the CTAs of its frame,
 * and then each warp streams its packed words out coalesced. The decoder runs one CTA per tile, whose stored offset makes the tiles
 * independent, and checks every tile offset against the widths.
 *
 * The transpose is most of the kernels' instructions (ncu: both SM-bound), and a block of width w
 * only needs w of its 32 planes. So narrow blocks share one transpose: four neighbouring blocks
 * of width <= 8 go in as the four bytes of each lane's word and come out as lanes 0-7, 8-15,
 * 16-23 and 24-31 holding their planes; two blocks of width <= 16 go in as halves. Quantized
 * gradients (QSGD 8 bit: widths 6-8) and Lorenzo deltas take one transpose per four blocks, REL
 * codes of a smooth field (widths 15-16) one per two. */
#include <stdlib.h>
#include <string.h>

#include <cub/block/block_scan.cuh>

#include "decode_out.cuh"

#define FL_THREADS 256 /* decode CTA */
#define FL_BLOCKS 256  /* 32-symbol blocks per decode round */
/* Encode CTA: a warp per 32 blocks. Every CTA pays a fixed latency (the slowest warp's loads, the
 * look-back) with its warps idle at a barrier; larger CTAs amortize it, smaller ones let other
 * CTAs fill the gap. ncu, 256 MiB of QSGD gradients on the H200: 8 warps were quicker than 4 or 16. */
#ifndef FLE_WARPS
#define FLE_WARPS 8
#endif
#define FLE_THREADS (32 * FLE_WARPS)
#define FLE_BLOCKS (32 * FLE_WARPS)

/* Lane l holds row l; afterwards lane j holds column j (bit l of lane j = old bit j of lane l).
 * Same result as the reference's transpose32 (an involution). Five butterfly stages; at stage s
 * a lane keeps the bits of its half (mask m or ~m, by lane bit s) and takes the other half from
 * its partner, shifted by s. Written branch-free, because the obvious `(lane & s) ? a : b` per
 * stage compiles to divergent branches in the PTX: stages 16 and 8 move whole bytes,
 * so one byte permute with a per-lane selector does the select and the shift; stages 4, 2 and 1
 * send the word rotated the way the partner needs it (wrapped bits land outside its mask), then
 * one bit-select (a single LOP3) keeps each side. On the H200 the branch-free form codes 7-33%
 * faster than the branchy one (coder-only GB/s, encode and decode, REL codes and raw floats).
 * test_gpu_codecs' byte identity with the CPU frames covers every width class. */
static __device__ __forceinline__ uint32_t butterfly_select(uint32_t x, int lane, int s, uint32_t m) {
  const uint32_t up = lane & s; /* s or 0 */
  /* rotate left by s (upper lanes) or 32 - s (lower; the shift is taken mod 32) */
  const uint32_t r = __shfl_xor_sync(NZ_FULL, __funnelshift_l(x, x, 2 * up - s), s);
  const uint32_t keep = m << up; /* m << s == ~m for these masks */
  return (x & keep) | (r & ~keep);
}
static __device__ __forceinline__ uint32_t warp_transpose(uint32_t x, int lane) {
  x = __byte_perm(x, __shfl_xor_sync(NZ_FULL, x, 16), lane & 16 ? 0x3276 : 0x5410);
  x = __byte_perm(x, __shfl_xor_sync(NZ_FULL, x, 8), lane & 8 ? 0x3715 : 0x6240);
  x = butterfly_select(x, lane, 4, 0x0F0F0F0Fu);
  x = butterfly_select(x, lane, 2, 0x33333333u);
  x = butterfly_select(x, lane, 1, 0x55555555u);
  return x;
}

static __device__ __forceinline__ uint32_t stored_width(uint32_t any) {
  uint32_t w = any ? 32u - __clz(any) : 0u;
  return w == 31 ? 32 : w;
}

/* Bit k of .quad: blocks k..k+3 (k a multiple of 4) are all at most 8 wide; bit k of .pair:
 * blocks k, k+1 (k even) at most 16. Lane k holds block k's width w. */
struct FlGroups {
  uint32_t quad, pair;
};
static __device__ __forceinline__ FlGroups group_masks(uint32_t w) {
  uint32_t m2 = max(w, __shfl_xor_sync(NZ_FULL, w, 1)), m4 = max(m2, __shfl_xor_sync(NZ_FULL, m2, 2));
  return {__ballot_sync(NZ_FULL, m4 <= 8), __ballot_sync(NZ_FULL, m2 <= 16)};
}

/* Encode: x holds blocks k.. in slots of 2^lg bits (lg 3, 4 or 5); after the transpose lane
 * (g << lg) + j holds plane j of block k + g, stored at that block's offset when j < its width. */
static __device__ __forceinline__ void put_planes(uint32_t x, int lg, int k, int lane, uint32_t w, uint32_t off,
                                                  uint32_t *s_pack) {
  uint32_t t = warp_transpose(x, lane);
  int g = lane >> lg, j = lane & ((1 << lg) - 1);
  uint32_t wg = __shfl_sync(NZ_FULL, w, k + g), og = __shfl_sync(NZ_FULL, off, k + g);
  if ((uint32_t)j < wg) s_pack[og + j] = t;
}

/* Decode, the inverse: lane (g << lg) + j loads plane j of block k + g; after the transpose
 * slot g of lane l's word is the z of symbol l of block k + g. */
static __device__ __forceinline__ uint32_t get_planes(int lg, int k, int lane, uint32_t w, uint32_t off,
                                                      const uint32_t *s_pack) {
  int g = lane >> lg, j = lane & ((1 << lg) - 1);
  uint32_t wg = __shfl_sync(NZ_FULL, w, k + g), og = __shfl_sync(NZ_FULL, off, k + g);
  return warp_transpose((uint32_t)j < wg ? s_pack[og + j] : 0u, lane);
}

uint32_t nz_fixedlen_units(const NzShape &sh) {
  return (uint32_t)ncclz_ceil_div(ncclz_ceil_div(sh.frame_symbols, 32), FLE_BLOCKS);
}

/* Widths, offsets and planes of part h of a warp's blocks (blocks Gh..Gh+G-1 from blk0, lane k
 * loading symbol k of each): lane k of that part gets its block's width w and its offset off in
 * the warp's planes; the planes land in wpack; *words grows by the part's words. A warp of 32
 * blocks takes two parts of 16: 16 loads instead of 32 keep it at 40 registers, 48 warps to an
 * SM. zz(i): the zigzag of the frame's symbol i < n (a load from global or shared memory). */
template <int G, int h, typename Z>
static __device__ __forceinline__ void encode_half(const Z &zz, uint32_t n, uint32_t blk0, bool whole, int lane,
                                                   uint32_t *wpack, uint32_t &w, uint32_t &off, uint32_t &words) {
  uint32_t z[G];
  if (whole) { /* G independent loads in flight per lane; no bounds to check */
#pragma unroll
    for (int k = 0; k < G; k++) z[k] = zz((blk0 + G * h + k) * 32 + lane);
  } else {
#pragma unroll
    for (int k = 0; k < G; k++) {
      uint32_t i = (blk0 + G * h + k) * 32 + lane;
      z[k] = i < n ? zz(i) : 0u;
    }
  }
  uint32_t any = 0; /* lane Gh + k: the OR of block k */
#pragma unroll
  for (int k = 0; k < G; k++) {
    uint32_t a = __reduce_or_sync(NZ_FULL, z[k]);
    if (lane == G * h + k) any = a;
  }
  const uint32_t hw = lane / G == h ? stored_width(any) : 0u; /* the other lanes add 0 */
  const uint32_t incl = nz_warp_inclusive_sum(hw);
  const uint32_t hoff = words + incl - hw;
  const FlGroups grp = group_masks(hw);
#pragma unroll
  for (int q = 0; q < G; q += 4) {
    const int k = G * h + q;
    if (grp.quad >> k & 1) {
      put_planes(z[q] | z[q + 1] << 8 | z[q + 2] << 16 | z[q + 3] << 24, 3, k, lane, hw, hoff, wpack);
      continue;
    }
#pragma unroll
    for (int p = 0; p < 4; p += 2) {
      if (grp.pair >> (k + p) & 1) {
        put_planes(z[q + p] | z[q + p + 1] << 16, 4, k + p, lane, hw, hoff, wpack);
      } else {
        put_planes(z[q + p], 5, k + p, lane, hw, hoff, wpack);
        put_planes(z[q + p + 1], 5, k + p + 1, lane, hw, hoff, wpack);
      }
    }
  }
  if (lane / G == h) w = hw, off = hoff;
  words += __shfl_sync(NZ_FULL, incl, 31);
}

/* Word t of a CTA's five-bit width codes (block k's at bit 5k), from its blocks' widths w. */
static __device__ __forceinline__ uint32_t cta_code_word(const uint32_t *w, uint32_t t) {
  uint32_t word = 0;
  for (uint32_t k = 32 * t / 5; k <= (32 * t + 31) / 5; k++) {
    const uint32_t code = w[k] == 32 ? 31 : w[k];
    const int at = 5 * (int)k - 32 * (int)t; /* where block k's code starts in word t */
    word |= at >= 0 ? code << at : code >> -at;
  }
  return word;
}

/* Word q (0..4) of a warp's 32 five-bit width codes (lane k's at bit 5k), in lane q. */
static __device__ __forceinline__ uint32_t width_code_word(uint32_t w, int lane) {
  const uint32_t code = w == 32 ? 31 : w;
  uint32_t mine = 0;
#pragma unroll
  for (int q = 0; q < 5; q++) {
    const int at = 5 * lane - 32 * q; /* where this lane's code starts in word q */
    const uint32_t part = at >= 0 ? (at < 32 ? code << at : 0u) : (at > -5 ? code >> -at : 0u);
    const uint32_t word = __reduce_or_sync(NZ_FULL, part);
    if (lane == q) mine = word;
  }
  return mine;
}

/* One CTA's 32 * WARPS blocks, unit lc of its frame (look-back unit `unit`, the frame's first
 * `first`): widths and planes, its offset by look-back, then the width codes, tile offsets and
 * planes written to the frame's payload P (after sw words of side data). Adds their check to
 * *check; the frame's last unit stores the coded bytes to *coded. s_pack: 32 * 32 * WARPS words.
 * Each warp packs its 32 blocks' planes into its own 1,024 words of shared memory, so nothing
 * waits for the CTA's scan but the final copy; the CTA publishes its aggregate before warp 0
 * looks back, so that successors wait less (under ncu, barrier stalls dominated the cycles).
 * zz: as encode_half's. The CTA may have more warps than WARPS: the others only meet the barriers.
 * G: blocks a warp, 32 (its five width-code words from the warp) or 8 (a frame's few CTAs then
 * spread its serial work over four times the warps; the CTA assembles the width codes). */
template <int WARPS, bool WIDE, int G = 32, typename Z>
static __device__ __forceinline__ void fl_encode_unit(const Z &zz, uint32_t n, uint32_t T, uint32_t sw,
                                                      uint32_t *P, uint32_t unit, uint32_t first, uint32_t lc,
                                                      unsigned long long *lb, uint32_t *s_pack, uint32_t *check,
                                                      uint32_t *coded) {
  constexpr uint32_t BLOCKS = G * WARPS;
  static_assert(G == 32 || (G == 8 && BLOCKS % 32 == 0), "a CTA's width codes fill whole words");
  __shared__ uint32_t s_words[WARPS];
  __shared__ uint32_t s_prefix;
  __shared__ uint32_t s_w[G == 32 ? 1 : BLOCKS]; /* G < 32: the CTA's block widths */
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const uint32_t nb = (uint32_t)ncclz_ceil_div(n, 32), nt = (uint32_t)ncclz_ceil_div(nb, T);
  const uint32_t W = (uint32_t)ncclz_ceil_div(5ull * nb, 32);
  const uint32_t blk0 = lc * BLOCKS + warp * G;
  const bool whole = (blk0 + G) * 32 <= n, enc = warp < WARPS;
  uint32_t *wpack = s_pack + warp * G * 32;
  uint32_t myw = 0, off = 0, words = 0; /* lane k: block k's width and offset in the warp's planes */
  uint32_t code_word = 0;
  if (enc) {
    if (G == 32) {
      encode_half<16, 0>(zz, n, blk0, whole, lane, wpack, myw, off, words);
      encode_half<16, 1>(zz, n, blk0, whole, lane, wpack, myw, off, words);
      code_word = width_code_word(myw, lane);
    } else {
      encode_half<G, 0>(zz, n, blk0, whole, lane, wpack, myw, off, words);
      if (lane < G) s_w[warp * G + lane] = myw;
    }
    if (lane == 0) s_words[warp] = words;
  }
  __syncthreads();
  uint32_t wbase = 0, agg = 0;
#pragma unroll
  for (int i = 0; i < WARPS; i++) {
    wbase += i < warp ? s_words[i] : 0u;
    agg += s_words[i];
  }
  if (tid == 0) nz_lookback_publish(lb, unit, first, agg);
  if (warp == 0) {
    uint32_t p = WIDE ? nz_lookback_wait_wide<8>(lb, unit, first, agg) : nz_lookback_wait(lb, unit, first, agg);
    if (lane == 0) s_prefix = p;
  }
  __syncthreads();
  const uint32_t prefix = s_prefix;
  uint32_t chk = 0;
  if (G == 32 ? enc && lane < 5 : tid < BLOCKS * 5 / 32) { /* the width-code words: this warp's five, or the CTA's */
    const uint32_t j = lc * (BLOCKS * 5 / 32) + (G == 32 ? warp * 5 + lane : tid);
    if (G < 32) code_word = cta_code_word(s_w, tid);
    if (j < W) {
      P[sw + j] = code_word;
      chk += nz_chk(code_word, sw + j);
    }
  }
  const uint32_t b = lc * BLOCKS + warp * G + lane;
  if (enc && lane < G && b < nb && b % T == 0) {
    uint32_t v = 4 * (prefix + wbase + off), j = sw + W + b / T;
    P[j] = v;
    chk += nz_chk(v, j);
  }
  const uint32_t base = sw + W + nt + prefix + wbase;
  for (uint32_t i = lane; i < words; i += 32) {
    uint32_t v = wpack[i];
    P[base + i] = v;
    chk += nz_chk(v, base + i);
  }
  nz_add_check_warp(chk, check);
  if (tid == 0 && lc == (uint32_t)ncclz_ceil_div(nb, BLOCKS) - 1) *coded = 4 * (W + nt + prefix + agg);
}

/* MIXED: a batch of several coders, whose other frames the kernel skips; a template argument, so
 * that a batch of FIXEDLEN alone runs the kernel without the test (its encode is the one whose
 * margin over its roofline target is a run's spread). */
template <bool MIXED, typename T>
__global__ void __launch_bounds__(FLE_THREADS, 1536 / FLE_THREADS) k_fl_encode(NzShape sh, const T *sym, uint8_t *out, size_t stride,
                                                         NzFrame *fr, unsigned long long *lb) {
  nz_pdl_enter();
  extern __shared__ uint32_t s_pack[]; /* FLE_BLOCKS * 32 words, dynamic: FLE_WARPS may pass the static 48 KiB */
  /* The unit is the block index, as in CUB's single-pass scans, which rely on blocks starting in
   * index order (so every predecessor is running or done and the look-back ends). Taking units
   * from an atomic counter instead cost every CTA an L2 round trip with all its warps waiting. */
  const uint32_t unit = blockIdx.x, upf = sh.units_per_frame, f = unit / upf, lc = unit - f * upf;
  if (MIXED && fr[f].coder != NCCLZ_CODER_FIXEDLEN) return; /* a mixed batch's frame of another coder */
  const T *src = sym + (size_t)f * sh.frame_symbols;
  fl_encode_unit<FLE_WARPS, false>([src](uint32_t i) { return ncclz_zigzag((int32_t)__ldg(src + i)); }, sh.frame_n(f), sh.p0,
                                   sh.side_words(f),
                            (uint32_t *)(out + f * stride + 64), unit, f * upf, lc, lb, s_pack, &fr[f].check,
                            &fr[f].coded_bytes);
}

template <typename T>
ncclzStatus nz_fixedlen_encode(const NzShape &sh0, const T *d_sym, uint8_t *d_out, size_t stride, NzFrame *fr,
                               unsigned long long *lb, cudaStream_t s) {
  NzShape sh = sh0;
  sh.units_per_frame = nz_fixedlen_units(sh);
  uint32_t last = (uint32_t)ncclz_ceil_div(ncclz_ceil_div(sh.frame_n(sh.n_frames - 1), 32), FLE_BLOCKS);
  uint32_t grid = (sh.n_frames - 1) * sh.units_per_frame + last;
  /* Over 48 KiB of dynamic shared memory (FLE_WARPS > 11) needs the opt-in, and the largest
   * carveout fits 6 CTAs of 8 warps on an SM (left alone, the driver gave them 168 KiB: room for
   * 4). */
  const int smem = FLE_BLOCKS * 32 * 4;
  for (auto k : {k_fl_encode<false, T>, k_fl_encode<true, T>}) NZ_CUDA(nz_smem_optin(k, smem, cudaSharedmemCarveoutMaxShared));
  /* Not a programmatic dependent launch, and the carveout as a launch attribute too: launched so
   * (or replayed from a CUDA graph so), the encoder coded 256 MiB in 4 MiB frames at 868-1,095 GB/s
   * instead of 1,198-1,756 on the H200, as if with 4 CTAs an SM instead of 6; which of the two
   * did it was not established. */
  const int carve = cudaSharedmemCarveoutMaxShared;
  if (grid && sh.mixed)
    nz_launch_opt(false, carve, k_fl_encode<true, T>, grid, FLE_THREADS, smem, s, sh, d_sym, d_out, stride, fr, lb);
  else if (grid)
    nz_launch_opt(false, carve, k_fl_encode<false, T>, grid, FLE_THREADS, smem, s, sh, d_sym, d_out, stride, fr, lb);
  NZ_LAUNCHED();
  return NCCLZ_OK;
}
template ncclzStatus nz_fixedlen_encode<int32_t>(const NzShape &, const int32_t *, uint8_t *, size_t, NzFrame *,
                                                 unsigned long long *, cudaStream_t);
template ncclzStatus nz_fixedlen_encode<int8_t>(const NzShape &, const int8_t *, uint8_t *, size_t, NzFrame *,
                                                unsigned long long *, cudaStream_t);

/* ------------------------------------------------------------ decode */

static __device__ void fail(uint32_t *status, uint32_t r) { atomicCAS(status, 0u, NZ_CORRUPT(r)); }

static __device__ __forceinline__ uint32_t fl_width_at(const uint32_t *P, uint32_t W, uint32_t b) {
  const uint32_t bit = 5 * b, word = bit / 32;
  const uint64_t two = __ldg(P + word) | (word + 1 < W ? (uint64_t)__ldg(P + word + 1) << 32 : 0ull);
  const uint32_t c = (uint32_t)(two >> bit % 32) & 31u;
  return c == 31 ? 32 : c;
}
/* count words from src to s_pack, V loads in flight a thread; returns this thread's part of their
 * check (word i is word at0 + i of the payload). FL_THREADS threads. */
template <int V>
static __device__ __forceinline__ uint32_t fl_stage_words(const uint32_t *src, uint32_t count, uint32_t at0,
                                                          uint32_t *s_pack) {
  uint32_t chk = 0;
  for (uint32_t i0 = threadIdx.x; i0 < count; i0 += FL_THREADS * V) {
    uint32_t v[V];
#pragma unroll
    for (int q = 0; q < V; q++) {
      const uint32_t i = i0 + q * FL_THREADS;
      v[q] = i < count ? __ldg(src + i) : 0u;
    }
#pragma unroll
    for (int q = 0; q < V; q++) {
      const uint32_t i = i0 + q * FL_THREADS;
      if (i < count) {
        s_pack[i] = v[q];
        chk += nz_chk(v[q], at0 + i);
      }
    }
  }
  return chk;
}

/* A warp's K blocks from their planes in s_pack (lane k < K: block k's width w and offset off):
 * put(k, z) gets symbol `lane` of block k as its zigzag z; narrow blocks share a transpose. */
template <int K, typename Put>
static __device__ __forceinline__ void fl_decode_blocks(uint32_t w, uint32_t off, int lane, const uint32_t *s_pack,
                                                        const Put &put) {
  const FlGroups grp = group_masks(w);
#pragma unroll 2
  for (int k = 0; k < K; k += 4) {
    if (grp.quad >> k & 1) {
      const uint32_t x = get_planes(3, k, lane, w, off, s_pack);
      for (int q = 0; q < 4; q++) put(k + q, x >> 8 * q & 0xFFu);
      continue;
    }
    for (int p = k; p < k + 4; p += 2) {
      if (grp.pair >> p & 1) {
        const uint32_t x = get_planes(4, p, lane, w, off, s_pack);
        put(p, x & 0xFFFFu);
        put(p + 1, x >> 16);
      } else {
        put(p, get_planes(5, p, lane, w, off, s_pack));
        put(p + 1, get_planes(5, p + 1, lane, w, off, s_pack));
      }
    }
  }
}

/* Tile `tile` of the FIXEDLEN frame F (its symbols to dst): failures to *status, the check of the
 * words read to *check. Every thread of the CTA (FL_THREADS) calls it; it returns early only as
 * a whole. */
template <typename Dst>
static __device__ void fl_decode_tile(const NzShape &sh, const uint8_t *in, const Dst &dst, const NzFrame &F,
                                      uint32_t tile, uint32_t *status, uint32_t *check) {
  typedef cub::BlockScan<uint32_t, FL_THREADS> Scan;
  __shared__ typename Scan::TempStorage scan_ts;
  __shared__ uint32_t s_pack[FL_BLOCKS * 32];
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const uint32_t n = F.n, T = sh.p0, nb = (uint32_t)ncclz_ceil_div(n, 32), nt = (uint32_t)ncclz_ceil_div(nb, T);
  const uint32_t W = (uint32_t)ncclz_ceil_div(5ull * nb, 32), sw = F.side_bytes / 4, head = W + nt;
  const uint32_t coded = F.payload_bytes - F.side_bytes;
  if (tile >= nt) return;
  if (coded % 4 || coded / 4 < head) {
    if (tid == 0 && tile == 0) fail(status, NZ_R_FL_SIZE);
    return;
  }
  const uint32_t avail = coded / 4 - head; /* words of the packed area */
  const uint32_t *P = (const uint32_t *)(in + F.src + 64) + sw;
  const uint32_t toff = P[W + tile];
  if (toff % 4 || (tile == 0 && toff != 0)) {
    if (tid == 0) fail(status, NZ_R_FL_OFFSET);
    return;
  }
  /* the bits after the last width code are zero padding (checked by the last tile) */
  if (tid == 0 && tile + 1 == nt && (5 * nb) % 32 && P[W - 1] >> (5 * nb) % 32) fail(status, NZ_R_FL_PAD);
  uint32_t chk = tid == 0 ? nz_chk(toff, sw + W + tile) : 0u;
  const uint32_t tb0 = tile * T, tcount = nb - tb0 < T ? nb - tb0 : T;
  /* width-code words whose first bit belongs to this tile's blocks */
  uint32_t j0 = (uint32_t)ncclz_ceil_div(5ull * tb0, 32), j1 = (uint32_t)ncclz_ceil_div(5ull * (tb0 + tcount), 32);
  for (uint32_t j = j0 + tid; j < j1 && j < W; j += FL_THREADS) chk += nz_chk(__ldg(P + j), sw + j);
  uint32_t running = toff / 4;
  for (uint32_t g0 = 0; g0 < tcount; g0 += FL_BLOCKS) {
    const uint32_t w = g0 + tid < tcount ? fl_width_at(P, W, tb0 + g0 + tid) : 0u;
    uint32_t excl, agg;
    Scan(scan_ts).ExclusiveSum(w, excl, agg);
    if (running > avail || agg > avail - running) {
      if (tid == 0) fail(status, NZ_R_FL_SIZE);
      return;
    }
    chk += fl_stage_words<16>(P + head + running, agg, sw + head + running, s_pack);
    __syncthreads();
    /* block k of this warp: symbol `lane` is z; blocks past the tile have width 0; the lanes
     * past n of the frame's last block are padding, which must be zero (as the reference) */
    auto put = [&](int k, uint32_t z) {
      uint32_t i = (tb0 + g0 + warp * 32 + k) * 32 + lane;
      if (g0 + warp * 32 + k < tcount) {
        if (i < n) dst.put(i, ncclz_unzigzag(z));
        else if (z) fail(status, NZ_R_FL_PAD);
      }
    };
    fl_decode_blocks<32>(w, excl, lane, s_pack, put);
    running += agg;
    __syncthreads();
  }
  nz_add_check<FL_THREADS>(chk, check);
  if (tid == 0) {
    if (tile + 1 < nt) {
      if (P[W + tile + 1] != 4 * running) fail(status, NZ_R_FL_OFFSET);
    } else if (running != avail) {
      fail(status, NZ_R_FL_SIZE);
    }
  }
}

/* A tile's part of FLP_BLOCKS blocks (at most), for a one-kernel decode: a small frame has few
 * tiles, and a CTA a tile leaves most SMs idle with each warp decoding 32 blocks in turn; parts
 * give a frame ceil(T / 64) times the CTAs and each warp eight blocks. A part finds its offset in
 * the tile by summing the widths of the blocks before it (from the width codes). The checks are
 * the tile's (fl_decode_tile), shared out: the tile offset, its words' and the width codes'
 * checks by part 0, the next tile's offset or the payload's end by the last part. */
#define FLP_G 8
#define FLP_BLOCKS (FL_THREADS / 32 * FLP_G)
template <typename Dst>
static __device__ void fl_decode_part(const NzShape &sh, const uint8_t *in, const Dst &dst, const NzFrame &F,
                                      uint32_t tile, uint32_t part, uint32_t *status, uint32_t *check) {
  typedef cub::BlockScan<uint32_t, FL_THREADS> Scan;
  typedef cub::BlockReduce<uint32_t, FL_THREADS> Reduce;
  __shared__ union {
    typename Scan::TempStorage scan;
    typename Reduce::TempStorage reduce;
  } ts;
  __shared__ uint32_t s_pack[FLP_BLOCKS * 32];
  __shared__ uint32_t s_w[FLP_BLOCKS], s_off[FLP_BLOCKS];
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const uint32_t n = F.n, T = sh.p0, nb = (uint32_t)ncclz_ceil_div(n, 32), nt = (uint32_t)ncclz_ceil_div(nb, T);
  const uint32_t W = (uint32_t)ncclz_ceil_div(5ull * nb, 32), sw = F.side_bytes / 4, head = W + nt;
  const uint32_t coded = F.payload_bytes - F.side_bytes;
  if (tile >= nt) return;
  const uint32_t tb0 = tile * T, tcount = nb - tb0 < T ? nb - tb0 : T, pb0 = part * FLP_BLOCKS;
  if (pb0 >= tcount) return;
  const uint32_t pcount = tcount - pb0 < FLP_BLOCKS ? tcount - pb0 : FLP_BLOCKS;
  const bool first = part == 0, last = pb0 + pcount == tcount;
  if (coded % 4 || coded / 4 < head) {
    if (tid == 0 && tile == 0 && first) fail(status, NZ_R_FL_SIZE);
    return;
  }
  const uint32_t avail = coded / 4 - head; /* words of the packed area */
  const uint32_t *P = (const uint32_t *)(in + F.src + 64) + sw;
  const uint32_t toff = P[W + tile];
  if (toff % 4 || (tile == 0 && toff != 0)) {
    if (tid == 0 && first) fail(status, NZ_R_FL_OFFSET);
    return;
  }
  uint32_t chk = 0;
  if (first) {
    /* the bits after the last width code are zero padding (checked by the last tile) */
    if (tid == 0 && tile + 1 == nt && (5 * nb) % 32 && P[W - 1] >> (5 * nb) % 32) fail(status, NZ_R_FL_PAD);
    if (tid == 0) chk = nz_chk(toff, sw + W + tile);
    const uint32_t j0 = (uint32_t)ncclz_ceil_div(5ull * tb0, 32), j1 = (uint32_t)ncclz_ceil_div(5ull * (tb0 + tcount), 32);
    for (uint32_t j = j0 + tid; j < j1 && j < W; j += FL_THREADS) chk += nz_chk(__ldg(P + j), sw + j);
  }
  uint32_t before = 0; /* widths of the tile's blocks before this part */
  for (uint32_t k = tid; k < pb0; k += FL_THREADS) before += fl_width_at(P, W, tb0 + k);
  const uint32_t w = (uint32_t)tid < pcount ? fl_width_at(P, W, tb0 + pb0 + tid) : 0u;
  before = Reduce(ts.reduce).Sum(before);
  __syncthreads(); /* ts is reused */
  uint32_t excl, agg;
  Scan(ts.scan).ExclusiveSum(w, excl, agg);
  __shared__ uint32_t s_before;
  if (tid == 0) s_before = before;
  if ((uint32_t)tid < FLP_BLOCKS) s_w[tid] = w, s_off[tid] = excl;
  __syncthreads();
  const uint32_t running = toff / 4 + s_before;
  if (running > avail || agg > avail - running) {
    if (tid == 0) fail(status, NZ_R_FL_SIZE);
    return;
  }
  chk += fl_stage_words<8>(P + head + running, agg, sw + head + running, s_pack);
  __syncthreads();
  /* lane k < 8: the width and offset of the warp's block k */
  const uint32_t wk = lane < FLP_G ? s_w[warp * FLP_G + lane] : 0u, ok = lane < FLP_G ? s_off[warp * FLP_G + lane] : 0u;
  auto put = [&](int k, uint32_t z) {
    const uint32_t bl = pb0 + warp * FLP_G + k, i = (tb0 + bl) * 32 + lane;
    if (bl < tcount) {
      if (i < n) dst.put(i, ncclz_unzigzag(z));
      else if (z) fail(status, NZ_R_FL_PAD);
    }
  };
  fl_decode_blocks<FLP_G>(wk, ok, lane, s_pack, put);
  nz_add_check<FL_THREADS>(chk, check);
  if (tid == 0 && last) {
    if (tile + 1 < nt) {
      if (P[W + tile + 1] != 4 * (running + agg)) fail(status, NZ_R_FL_OFFSET);
    } else if (running + agg != avail) {
      fail(status, NZ_R_FL_SIZE);
    }
  }
}

template <typename Out>
__global__ void __launch_bounds__(FL_THREADS) k_fl_decode(NzShape sh, const uint8_t *in, Out out, NzFrame *fr) {
  nz_pdl_enter();
  const uint32_t f = blockIdx.y;
  NzFrame *F = &fr[f];
  if (F->status || F->coder != NCCLZ_CODER_FIXEDLEN) return;
  fl_decode_tile(sh, in, out.frame(sh, f, in, *F), *F, blockIdx.x, &F->status, &F->check);
}

template <typename Out>
ncclzStatus nz_fixedlen_decode(const NzShape &sh, const uint8_t *d_in, const Out &out, NzFrame *fr, cudaStream_t s) {
  uint32_t tiles = (uint32_t)ncclz_ceil_div(ncclz_ceil_div(sh.frame_symbols, 32), sh.p0);
  nz_launch(k_fl_decode<Out>, dim3(tiles, sh.n_frames), FL_THREADS, 0, s, sh, d_in, out, fr);
  NZ_LAUNCHED();
  return NCCLZ_OK;
}
template ncclzStatus nz_fixedlen_decode(const NzShape &, const uint8_t *, const NzCodesOut &, NzFrame *, cudaStream_t);
template ncclzStatus nz_fixedlen_decode(const NzShape &, const uint8_t *, const NzQsgdOut &, NzFrame *, cudaStream_t);
template ncclzStatus nz_fixedlen_decode(const NzShape &, const uint8_t *, const NzEbOut &, NzFrame *, cudaStream_t);

/* ------------------------------------------------------------ one frame in one kernel */

/* A one-kernel call (ncclzCudaBatch.ws_zeroed) does what k_init, the coder's kernel and the
 * finalize kernel do, in one launch: the frame's state lives in an NzOneState that the call's
 * last CTA reads (the header) and leaves zero. A small frame's call is then bound by one
 * kernel's latency rather than a chain of them. Its FIXEDLEN CTAs are two warps (64 blocks):
 * the coder is SM-bound (ncu), so the frame is spread over as many SMs as it fills (a 1 MiB
 * frame: 128 CTAs), each warp with a scheduler to itself; they look back over 256 units at a
 * time (nz_lookback_wait_wide), since they all publish their aggregates at about once. */
#define ONE_WARPS 2

/* Look-back units of a one-kernel FIXEDLEN encode of CTAs of `warps` warps (the workspace holds
 * those of ONE_WARPS, the most). */
static uint32_t one_units(uint64_t frame_symbols, uint32_t warps) {
  const uint64_t u = ncclz_ceil_div(ncclz_ceil_div(frame_symbols, 32), 32 * warps);
  return u ? (uint32_t)u : 1u;
}
uint32_t nz_one_units(uint64_t frame_symbols) { return one_units(frame_symbols, ONE_WARPS); }

/* Warps of 32 blocks in the one-kernel FIXEDLEN encoder's CTAs, NCCLZ_CUDA_ONE_WARPS (2, 4 or 8;
 * read once) to measure them; 0 (unset): CTAs of ONE_WARPS * 32 blocks coded by four times the
 * warps, eight blocks a warp. */
static uint32_t one_warps() {
  static const uint32_t w = [] {
    const char *v = getenv("NCCLZ_CUDA_ONE_WARPS");
    return v && (!strcmp(v, "2") || !strcmp(v, "4") || !strcmp(v, "8")) ? (uint32_t)atoi(v) : 0u;
  }();
  return w;
}

static __device__ inline unsigned long long *one_lookback(NzOneState *st) {
  return (unsigned long long *)((char *)st + NZ_ONE_LB_OFFSET);
}

/* The frame's QSGD scales copied into its payload's first words, by every CTA a share; returns
 * this thread's part of their check. */
static __device__ inline uint32_t one_copy_side(const float *scales, uint32_t sw, uint32_t *P) {
  uint32_t chk = 0;
  if (scales)
    for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < sw; i += gridDim.x * blockDim.x) {
      const uint32_t w = ((const uint32_t *)scales)[i];
      P[i] = w;
      chk += nz_chk(w, i);
    }
  return chk;
}

/* The last CTA: the header from the state's check and coded size, which it resets (with the
 * look-back words of nlb units) for the next call. */
static __device__ void one_finish_encode(const NzShape &sh, uint8_t *out, const NzOneEncode &a, uint32_t nlb) {
  unsigned long long *lb = one_lookback(a.st);
  for (uint32_t i = threadIdx.x; i < nlb; i += blockDim.x) lb[i] = 0;
  if (threadIdx.x == 0) {
    const uint32_t check = atomicExch(&a.st->check, 0u), coded = atomicExch(&a.st->coded_bytes, 0u);
    atomicExch(&a.st->done, 0u);
    const uint32_t n = sh.frame_n(0), side = 4 * sh.side_words(0), payload = side + coded;
    nz_put_header(out, a.hdr, n, payload, side, 0, 0, a.d_abs_eb, check, a.dtype_size);
    *a.frame_bytes = 64 + payload;
  }
}

template <int WARPS, int G, typename T>
__global__ void __launch_bounds__(32 * WARPS) k_fl_encode_one(NzShape sh, const T *sym, uint8_t *out,
                                                              NzOneEncode a) {
  nz_pdl_enter();
  __shared__ uint32_t s_pack[G * WARPS * 32];
  const uint32_t n = sh.frame_n(0), sw = sh.side_words(0);
  uint32_t *P = (uint32_t *)(out + 64);
  nz_add_check_warp(one_copy_side(a.scales, sw, P), &a.st->check);
  fl_encode_unit<WARPS, true, G>([sym](uint32_t i) { return ncclz_zigzag((int32_t)__ldg(sym + i)); }, n, sh.p0, sw, P, blockIdx.x,
                              0, blockIdx.x, one_lookback(a.st), s_pack, &a.st->check, &a.st->coded_bytes);
  if (nz_one_last(a.st)) one_finish_encode(sh, out, a, gridDim.x);
}

template <typename T>
__global__ void __launch_bounds__(256) k_raw_encode_one(NzShape sh, const T *sym, uint8_t *out, NzOneEncode a) {
  nz_pdl_enter();
  const uint32_t n = sh.frame_n(0), sw = sh.side_words(0);
  uint32_t *P = (uint32_t *)(out + 64);
  nz_add_check<256>(one_copy_side(a.scales, sw, P), &a.st->check);
  nz_raw_copy_chunk(sym, NzWords{(int32_t *)(P + sw)}, n, sw, &a.st->check);
  if (blockIdx.x == 0 && threadIdx.x == 0) a.st->coded_bytes = 4 * n;
  if (nz_one_last(a.st)) one_finish_encode(sh, out, a, 0);
}

/* QSGD quantize + FIXEDLEN encode of one frame in one kernel: the quantizer's pass, its launch
 * and the coder's reads of the codes from global memory go. Each CTA quantizes its 2,048 symbols
 * with all its 256 threads (two float4 a thread), the buckets' max |x| by warp reductions of
 * 128-element slots, the codes' zigzag kept in shared memory; then its eight warps code the 64
 * blocks from there, eight a warp, as k_fl_encode_one does. Lane 0 of a bucket's first slot writes its
 * scale (side data and d_scales). */
#define FQ_THREADS 256
#define FQ_WARPS (FQ_THREADS / 32)
#define FQ_G (NZ_ONE_QSGD_SYMS / 32 / FQ_WARPS) /* blocks a warp codes */
#define FQ_SLOTS (NZ_ONE_QSGD_SYMS / 128)
__global__ void __launch_bounds__(FQ_THREADS) k_fl_qsgd_encode_one(NzShape sh, NzQsgd q, uint8_t *out, NzOneEncode a) {
  nz_pdl_enter();
  constexpr int R = NZ_ONE_QSGD_SYMS / 4 / FQ_THREADS; /* float4 a thread */
  __shared__ __align__(16) uint32_t s_z[NZ_ONE_QSGD_SYMS];
  __shared__ uint32_t s_pack[FQ_G * FQ_WARPS * 32];
  __shared__ float s_slot[FQ_SLOTS];
  const uint32_t n = sh.frame_n(0), base = blockIdx.x * NZ_ONE_QSGD_SYMS, tid = threadIdx.x, lane = tid & 31;
  uint32_t *P = (uint32_t *)(out + 64);
  float4 v[R];
#pragma unroll
  for (int r = 0; r < R; r++) {
    const uint32_t e = base + 4 * (tid + r * FQ_THREADS);
    v[r] = nz_load4(q.x, e, n, 0.0f); /* past the frame: 0, which no |x| is below (FIXEDLEN's zero padding) */
    const float m = nz_warp_max(nz_max_abs4(v[r], 0.0f)); /* 0 to start: the reference's bucket_max_abs */
    if (lane == 0) s_slot[r * (FQ_THREADS / 32) + tid / 32] = m;
  }
  __syncthreads();
  const uint32_t spb = q.bucket / 128; /* slots a bucket */
  uint32_t chk = 0;
#pragma unroll
  for (int r = 0; r < R; r++) {
    const uint32_t slot = r * (FQ_THREADS / 32) + tid / 32, first = slot / spb * spb, e = base + 4 * (tid + r * FQ_THREADS);
    float m = 0.0f;
    for (uint32_t j = first; j < first + spb; j++) m = s_slot[j] > m ? s_slot[j] : m;
    const NzQsgdBucket bk = nz_qsgd_bucket(m);
    const double sd24 = q.levels * 0x1p24;
    const int4 c = nz_qsgd_four(v[r], m, bk, sd24, q.levels, q.seed, q.rank, e, n);
    if (q.sym8) nz_store4(q.sym8, e, n, c);
    else nz_store4(q.sym, e, n, c);
    *(uint4 *)(s_z + e - base) = make_uint4(ncclz_zigzag(c.x), ncclz_zigzag(c.y), ncclz_zigzag(c.z), ncclz_zigzag(c.w));
    const uint32_t e0 = base + slot * 128; /* the slot's first element */
    if (lane == 0 && slot == first && e0 < n) {
      const uint32_t b = e0 / q.bucket, w = __float_as_uint(m);
      q.scales[b] = m;
      P[b] = w;
      chk += nz_chk(w, b);
    }
  }
  if (chk) atomicAdd(&a.st->check, chk);
  __syncthreads();
  fl_encode_unit<FQ_WARPS, true, FQ_G>([&](uint32_t i) { return s_z[i - base]; }, n, sh.p0, sh.side_words(0), P, blockIdx.x, 0,
                                 blockIdx.x, one_lookback(a.st), s_pack, &a.st->check, &a.st->coded_bytes);
  if (nz_one_last(a.st)) one_finish_encode(sh, out, a, gridDim.x);
}

ncclzStatus nz_one_qsgd_encode(const NzShape &sh, const NzQsgd &q, uint8_t *d_out, const NzOneEncode &a, cudaStream_t s) {
  const uint32_t n = sh.frame_n(0), grid = n ? (uint32_t)ncclz_ceil_div(n, NZ_ONE_QSGD_SYMS) : 1u;
  nz_launch(k_fl_qsgd_encode_one, grid, FQ_THREADS, 0, s, sh, q, d_out, a);
  NZ_LAUNCHED();
  return NCCLZ_OK;
}

template <typename T>
ncclzStatus nz_one_encode(const NzShape &sh, ncclzCoder coder, const T *d_sym, uint8_t *d_out, const NzOneEncode &a,
                          cudaStream_t s) {
  const uint32_t n = sh.frame_n(0);
  if (coder == NCCLZ_CODER_RAW) {
    const uint32_t grid = n ? (uint32_t)ncclz_ceil_div(n, NZ_RAW_CHUNK) : 1u;
    nz_launch(k_raw_encode_one<T>, grid, 256, 0, s, sh, d_sym, d_out, a);
  } else {
    const uint32_t w = one_warps(), grid = one_units(n, w ? w : ONE_WARPS);
    if (w == 8) nz_launch(k_fl_encode_one<8, 32, T>, grid, 32 * 8, 0, s, sh, d_sym, d_out, a);
    else if (w == 4) nz_launch(k_fl_encode_one<4, 32, T>, grid, 32 * 4, 0, s, sh, d_sym, d_out, a);
    else if (w == 2) nz_launch(k_fl_encode_one<2, 32, T>, grid, 32 * 2, 0, s, sh, d_sym, d_out, a);
    else nz_launch(k_fl_encode_one<ONE_WARPS * 4, 8, T>, grid, 32 * ONE_WARPS * 4, 0, s, sh, d_sym, d_out, a);
  }
  NZ_LAUNCHED();
  return NCCLZ_OK;
}
template ncclzStatus nz_one_encode<int32_t>(const NzShape &, ncclzCoder, const int32_t *, uint8_t *,
                                            const NzOneEncode &, cudaStream_t);
template ncclzStatus nz_one_encode<int8_t>(const NzShape &, ncclzCoder, const int8_t *, uint8_t *,
                                           const NzOneEncode &, cudaStream_t);

/* One frame of RAW or FIXEDLEN: every CTA parses the header itself, copies its share of the
 * side data, then decodes its RAW chunk or its part of a FIXEDLEN tile; the last writes the
 * status (the payload check first, as k_finalize_decode) and resets the state. */
template <typename Out>
__global__ void __launch_bounds__(FL_THREADS) k_decode_one(NzShape sh, unsigned mask, const uint8_t *in,
                                                           const uint64_t *offsets, size_t in_stride, size_t in_len,
                                                           Out out, float *scales, uint32_t *status_out,
                                                           NzOneState *st) {
  nz_pdl_enter();
  __shared__ NzFrame s_f;
  if (threadIdx.x == 0) s_f = nz_parse_frame(sh, 0, in, offsets, in_stride, in_len, mask, sh.p0, 0);
  __syncthreads();
  const NzFrame &F = s_f;
  if (!F.status) {
    const uint32_t sw = F.side_bytes / 4;
    const uint32_t *src = (const uint32_t *)(in + F.src + 64);
    uint32_t chk = 0;
    for (uint32_t i = blockIdx.x * FL_THREADS + threadIdx.x; i < sw; i += gridDim.x * FL_THREADS) {
      const uint32_t w = src[i];
      if (scales) ((uint32_t *)scales)[i] = w;
      chk += nz_chk(w, i);
    }
    nz_add_check<FL_THREADS>(chk, &st->check);
    if (F.coder == NCCLZ_CODER_RAW) {
      if (F.payload_bytes - F.side_bytes != 4 * F.n) {
        if (blockIdx.x == 0 && threadIdx.x == 0) fail(&st->status, NZ_R_RAW_SIZE);
      } else {
        nz_raw_copy_chunk(src + sw, out.frame(sh, 0, in, F), F.n, sw, &st->check);
      }
    } else if (F.coder == NCCLZ_CODER_FIXEDLEN) {
      const uint32_t parts = (uint32_t)ncclz_ceil_div(sh.p0, FLP_BLOCKS), tile = blockIdx.x / parts;
      const uint32_t part = blockIdx.x - tile * parts;
      fl_decode_part(sh, in, out.frame(sh, 0, in, F), F, tile, part, &st->status, &st->check);
    }
  }
  if (!nz_one_last(st) || threadIdx.x) return;
  const uint32_t check = atomicExch(&st->check, 0u), coder_status = atomicExch(&st->status, 0u);
  atomicExch(&st->done, 0u);
  uint32_t status = F.status ? F.status : coder_status;
  if (F.coder != 0xFF && (check ^ F.payload_bytes) != F.payload_check) status = NZ_CORRUPT(NZ_R_PCHECK);
  *status_out = status;
}

template <typename Out>
ncclzStatus nz_one_decode(const NzShape &sh, unsigned mask, const uint8_t *d_in, const uint64_t *d_offsets,
                          size_t in_stride, size_t in_len, const Out &out, float *d_scales, uint32_t *d_status,
                          NzOneState *st, cudaStream_t s) {
  const uint32_t n = sh.frame_n(0);
  const uint64_t tiles = ncclz_ceil_div(ncclz_ceil_div(n, 32), sh.p0) * ncclz_ceil_div(sh.p0, FLP_BLOCKS),
                 chunks = ncclz_ceil_div(n, NZ_RAW_CHUNK);
  uint64_t grid = tiles > chunks ? tiles : chunks;
  grid = grid ? grid : 1;
  nz_launch(k_decode_one<Out>, (unsigned)grid, FL_THREADS, 0, s, sh, mask, d_in, d_offsets, in_stride, in_len, out,
            d_scales, d_status, st);
  NZ_LAUNCHED();
  return NCCLZ_OK;
}
#define NZ_ONE_DECODE_OF(Out)                                                                                    \
  template ncclzStatus nz_one_decode(const NzShape &, unsigned, const uint8_t *, const uint64_t *, size_t, size_t, \
                                     const Out &, float *, uint32_t *, NzOneState *, cudaStream_t)
NZ_ONE_DECODE_OF(NzCodesOut);
NZ_ONE_DECODE_OF(NzQsgdOut);
NZ_ONE_DECODE_OF(NzEbOut);
