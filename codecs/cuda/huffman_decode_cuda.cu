/* HUFFMAN decode on the GPU (FORMAT.md): a table kernel per frame (the code book's canonical codes
 * from the stored lengths, a fast table of FAST_BITS), then a warp per segment: its lanes find the
 * code starts of their slices of the segment (parse, then re-parse until in step with the lane
 * before) and decode the symbols by rank, each from its own start; or a thread per segment. The
 * encoder is huffman_cuda.cu. */
#include <cub/block/block_scan.cuh>

#include "decode_out.cuh"
#include "huff_block.cuh"
#include "huff_canon.cuh"

#define DEC_THREADS 128

/* ------------------------------------------------------------ decode */

static __device__ void hf_fail(NzFrame *F, uint32_t r) { atomicCAS(&F->status, 0u, NZ_CORRUPT(r)); }

struct TableShared {
  CanonShared canon;
  typename RankScan::TempStorage rank;
  uint8_t lens[HF_K + 7];
  uint32_t codes[HF_K];
  uint16_t sorted[HF_K]; /* indices in canonical order */
  uint32_t bad, max_len, used, kraft; /* Kraft sum: at most 8,194 * 2^14 < 2^32 */
};

static __device__ __forceinline__ uint32_t nibble_at(const uint8_t *nib, uint32_t k) {
  return (nib[k / 2] >> (4 * (k & 1))) & 15u;
}

/* One listed length l of index i: into the table, the Kraft sum and the longest length. */
static __device__ __forceinline__ void take_length(TableShared &s, uint32_t i, uint32_t l, uint32_t &kraft,
                                                   uint32_t &max_len) {
  s.lens[i] = (uint8_t)l;
  if (l) {
    kraft += 1u << (NCCLZ_HUFF_MAX_LEN - l);
    max_len = l > max_len ? l : max_len;
  }
}

/* Dense table (as read_dense): nibble j is the length of lo+j for j < m, zero padding after it;
 * the nonzero ones are counted into s.used for the check against u. */
static __device__ void read_dense_lengths(TableShared &s, const uint8_t *nib, uint32_t lo, uint32_t m, uint32_t nw,
                                          uint32_t &kraft, uint32_t &max_len) {
  uint32_t used = 0;
  for (uint32_t j = threadIdx.x; j < 8 * nw; j += BOOK_THREADS) {
    const uint32_t l = nibble_at(nib, j);
    if (j < m) {
      take_length(s, lo + j, l, kraft, max_len);
      used += l != 0;
    } else if (l) {
      s.bad = 1; /* nonzero padding */
    }
  }
  if (used) atomicAdd(&s.used, used);
}

/* Sparse table (as read_sparse): thread t takes bitmap word t (bw <= 257 words); a block scan
 * ranks its set bits among the first m, and only when exactly u are set does anyone read a
 * nibble, so every nibble read lies below u. Padding bits and nibbles must be zero, and a listed
 * length must not be. */
static __device__ void read_sparse_lengths(TableShared &s, const uint32_t *bitmap, const uint8_t *nib, uint32_t lo,
                                           uint32_t m, uint32_t u, uint32_t bw, uint32_t nw,
                                           uint32_t &kraft, uint32_t &max_len) {
  const uint32_t t = threadIdx.x, j0 = 32 * t;
  const uint32_t word = t < bw ? bitmap[t] : 0u;
  const uint32_t inside = m - j0 >= 32 ? 0xFFFFFFFFu : (1u << (m - j0)) - 1u; /* for t < bw, j0 < m */
  const uint32_t bits = t < bw ? word & inside : 0u;
  if (word & ~bits) s.bad = 1; /* bits at m and above */
  uint32_t rank, total;
  RankScan(s.rank).ExclusiveSum((uint32_t)__popc(bits), rank, total);
  if (total != u) {
    if (t == 0) s.bad = 1;
  } else {
    for (uint32_t b = 0; b < 32; b++) {
      if (!(bits >> b & 1u)) continue;
      const uint32_t l = nibble_at(nib, rank + __popc(bits & ((1u << b) - 1u)));
      if (!l) s.bad = 1;
      take_length(s, lo + j0 + b, l, kraft, max_len);
    }
  }
  for (uint32_t j = u + t; j < 8 * nw; j += BOOK_THREADS)
    if (nibble_at(nib, j)) s.bad = 1; /* nonzero padding */
}

/* Per frame: validates the code table (as parse_table/read_lengths) and builds the fast table
 * (index << 4 | length, 0 for the slow path) and the canonical tables for long codes. */
__global__ void __launch_bounds__(BOOK_THREADS, 1) k_hf_table(NzShape sh, const uint8_t *in, NzFrame *fr, uint32_t *lut,
                                                               uint32_t *tables) {
  nz_pdl_enter();
  extern __shared__ __align__(16) unsigned char smem[];
  TableShared &s = *reinterpret_cast<TableShared *>(smem);
  const uint32_t f = blockIdx.x, t = threadIdx.x;
  NzFrame *F = &fr[f];
  if (F->status || F->coder != NCCLZ_CODER_HUFFMAN) return;
  const uint32_t R = F->radius, n = F->n, len = F->payload_bytes - F->side_bytes, sw = F->side_bytes / 4;
  if (R < 1 || R > NCCLZ_HUFF_MAX_RADIUS || (R & (R - 1)) || len < 8) {
    if (t == 0) hf_fail(F, NZ_R_HF_TABLE);
    return;
  }
  const uint32_t *P = (const uint32_t *)(in + F->src + 64) + sw;
  /* [lo: u16][m: u16][u: u32], the table, [nseg] (as parse_table): sizes before any table read */
  const uint32_t K = ncclz_huff_alphabet_size(R), lo = P[0] & 0xFFFFu, m = P[0] >> 16, u = P[1];
  if (lo > K || m > K - lo || u > m) {
    if (t == 0) hf_fail(F, NZ_R_HF_TABLE);
    return;
  }
  const uint32_t bw = ncclz_huff_bitmap_words(m, u), nw = ncclz_huff_nibble_words(m, u), T = bw + nw;
  const uint32_t nseg = (uint32_t)ncclz_ceil_div(n, sh.p0);
  if (len / 4 < 3ull + T || P[2 + T] != nseg || len / 4 < 3ull + T + nseg) {
    if (t == 0) hf_fail(F, NZ_R_HF_TABLE);
    return;
  }
  if (t == 0) {
    s.bad = 0;
    s.kraft = 0;
    s.max_len = 0;
    s.used = 0;
  }
  for (uint32_t i = t; i < K; i += BOOK_THREADS) s.lens[i] = 0;
  __syncthreads();
  const uint8_t *nib = (const uint8_t *)(P + 2 + bw);
  uint32_t chk = 0;
  for (uint32_t q = t; q < T + 3; q += BOOK_THREADS) chk += nz_chk(P[q], sw + q);
  uint32_t kraft = 0, longest = 0;
  if (bw) {
    read_sparse_lengths(s, P + 2, nib, lo, m, u, bw, nw, kraft, longest);
  } else {
    read_dense_lengths(s, nib, lo, m, nw, kraft, longest);
  }
  /* a warp's sum and maximum, then one shared atomic a warp (a 64-bit sum by every thread made the
   * table kernel wait on one shared word) */
  kraft = __reduce_add_sync(NZ_FULL, kraft);
  longest = __reduce_max_sync(NZ_FULL, longest);
  if ((t & 31) == 0 && kraft) {
    atomicAdd(&s.kraft, kraft);
    atomicMax(&s.max_len, longest);
  }
  __syncthreads();
  const bool table_bad = s.bad || (!bw && s.used != u); /* dense: exactly u nonzero lengths */
  if (table_bad || s.kraft > (1u << NCCLZ_HUFF_MAX_LEN) || (s.kraft == 0 && n > 0)) {
    if (t == 0) hf_fail(F, table_bad ? NZ_R_HF_TABLE : NZ_R_HF_KRAFT);
    return;
  }
  nz_add_check<BOOK_THREADS>(chk, &F->check);
  canonical_codes(s.lens, K, s.codes, s.canon);
  const uint32_t max_len = s.max_len, fb = max_len < FAST_BITS ? max_len : FAST_BITS;
  uint32_t *L = lut + ((size_t)f << FAST_BITS);
  uint32_t *tb = tables + (size_t)f * NZ_HF_TSTRIDE;
  if (t < 16) {
    tb[t] = s.canon.count[t];
    tb[16 + t] = s.canon.first[t];
    tb[32 + t] = s.canon.start[t];
  }
  if (t == 0) {
    tb[48] = max_len;
    tb[49] = fb;
    F->fast_bits = fb;
  }
  for (uint32_t i = t; i < K; i += BOOK_THREADS) {
    const uint32_t l = s.lens[i];
    if (!l) continue;
    const uint32_t at = s.canon.start[l] + s.codes[i] - s.canon.first[l];
    tb[64 + at] = i;
    s.sorted[at] = (uint16_t)i;
  }
  __syncthreads();
  /* Each entry finds its own code, so that no thread fills a short code's 2^(fb-l) entries alone. */
  for (uint32_t e = t; e < (1u << fb); e += BOOK_THREADS) {
    const uint32_t msb = fb ? __brev(e) >> (32 - fb) : 0u; /* fb 0: one entry, no code */
    uint32_t v = 0;
    for (uint32_t l = 1; l <= fb; l++) {
      const uint32_t code = msb >> (fb - l);
      if (code - s.canon.first[l] < s.canon.count[l]) {
        v = (uint32_t)s.sorted[s.canon.start[l] + code - s.canon.first[l]] << 4 | l;
        break;
      }
    }
    L[e] = v;
  }
}

/* ------------------------------------------------------------ decode, a thread a segment
 * For batches with enough segments to fill the GPU a thread each (k_hf_decode_thread): a warp a
 * segment does about three times the work per symbol (parse, re-parse, decode by rank), which
 * the latency of one small frame repays and a full GPU does not. */

/* What decoding one symbol needs: the first-level table and canonical tables in shared memory,
 * the long codes' symbols (shared when they fit, else global). */
struct HfBook {
  const uint32_t *lut, *tab, *sorted;
  const uint16_t *slong; /* symbols of codes longer than fb, from long0; NULL: read sorted */
  uint32_t long0, fmask, fb, max_len, esc, fill, basev;
  ncclzHuffAlphabet a;
};

/* Frame f's fast lookup table (1 << fb entries) and length table into shared memory, by the
 * block's nthreads threads; the decoders then read them from there. */
static __device__ __forceinline__ void hf_stage_tables(uint32_t *s_lut, uint32_t *s_tab, const uint32_t *lut,
                                                       const uint32_t *tables, uint32_t f, uint32_t fb,
                                                       uint32_t nthreads) {
  for (uint32_t e = threadIdx.x; e < (1u << fb); e += nthreads) s_lut[e] = __ldg(lut + ((size_t)f << FAST_BITS) + e);
  if (threadIdx.x < 64) s_tab[threadIdx.x] = __ldg(tables + (size_t)f * NZ_HF_TSTRIDE + threadIdx.x);
}

/* Where a frame's segments lie: P past its side data (sw words), the head's H words (validated by
 * k_hf_table) and the streams' bytes after them. */
struct HfSegments {
  const uint32_t *P;
  uint32_t sw, H, stream_bytes;
};

/* The decoders' common start: 0 (block-uniform, before any barrier) where frame F is not a sound
 * HUFFMAN frame or this CTA's first segment, blockIdx.x * per_cta, lies past its last; else its
 * segment count, its tables staged into shared memory by the CTA's nthreads threads. */
static __device__ __forceinline__ uint32_t hf_decode_start(const NzShape &sh, const NzFrame *F, const uint32_t *lut,
                                                           const uint32_t *tables, uint32_t per_cta, uint32_t nthreads,
                                                           uint32_t *s_lut, uint32_t *s_tab) {
  if (F->status || F->coder != NCCLZ_CODER_HUFFMAN) return 0;
  const uint32_t nseg = (uint32_t)ncclz_ceil_div(F->n, sh.p0);
  if (blockIdx.x * per_cta >= nseg) return 0;
  hf_stage_tables(s_lut, s_tab, lut, tables, blockIdx.y, F->fast_bits, nthreads);
  __syncthreads();
  return nseg;
}

/* Where frame F's nseg segments lie in its payload. */
static __device__ __forceinline__ HfSegments hf_segments(const uint8_t *in, const NzFrame *F, uint32_t nseg) {
  HfSegments g;
  g.sw = F->side_bytes / 4;
  g.P = (const uint32_t *)(in + F->src + 64) + g.sw;
  g.H = (uint32_t)ncclz_huff_head_words(g.P[0] >> 16, g.P[1], nseg);
  g.stream_bytes = F->payload_bytes - F->side_bytes - 4 * g.H;
  return g;
}

/* Segment k's stream offsets [begin, end) are unsound: the first not at 0, not whole words,
 * decreasing, or past the streams. */
static __device__ __forceinline__ bool hf_bad_offsets(uint32_t k, uint32_t nseg, uint32_t begin, uint32_t end,
                                                      uint32_t stream_bytes) {
  return (k == 0 && begin != 0) || begin % 4 || begin > end || end > stream_bytes || stream_bytes % 4 ||
         (k + 1 == nseg && end % 4);
}

/* A frame's book from its tables in shared memory (lut, tab: count, first, start, max_len at 48)
 * and sorted in global memory; nlong: the codes longer than fb. slong is left NULL. */
static __device__ HfBook hf_book(const uint32_t *lut, const uint32_t *tab, const uint32_t *sorted, const NzFrame *F,
                                 uint32_t fb, uint32_t &nlong) {
  HfBook b;
  b.lut = lut, b.tab = tab, b.sorted = sorted, b.slong = nullptr;
  b.fb = fb, b.max_len = tab[48], b.fmask = (1u << fb) - 1;
  b.a.centre = F->centre, b.a.radius = F->radius;
  b.esc = ncclz_huff_escape_index(b.a.radius), b.fill = ncclz_huff_fill_index(b.a.radius);
  b.basev = (uint32_t)b.a.centre - b.a.radius;
  b.long0 = fb < b.max_len ? tab[32 + fb + 1] : 0;
  nlong = fb < b.max_len ? tab[32 + b.max_len] + tab[b.max_len] - b.long0 : 0;
  return b;
}

/* One symbol (as decode_segment in coder_huffman.c): 0, or the reason it is invalid. */
template <typename Reader> /* refill(), skip(), buf: HfReader or BitSource */
static __device__ __forceinline__ uint32_t hf_symbol(const HfBook &b, Reader &r, int32_t &v) {
  r.refill();
  uint32_t e = b.lut[r.buf & b.fmask];
  if (!(e & 15u)) {
    /* A code longer than the table: fb is FAST_BITS here (fb < FAST_BITS only when no code is
     * longer), so its length is one of the three above it. The shortest that matches, as the
     * reference's loop finds it, without a branch: the three lengths' loads go out together, where
     * the loop waited on each in turn and most warps had a lane taking it every symbol. */
    static_assert(NCCLZ_HUFF_MAX_LEN - FAST_BITS == 3, "the long codes' lengths are unrolled");
    const uint32_t msb = __brev((uint32_t)r.buf & 0x7FFFu) >> 17;
    uint32_t at = 0, l_hit = 0;
#pragma unroll
    for (uint32_t l = NCCLZ_HUFF_MAX_LEN; l > FAST_BITS; l--) {
      const uint32_t code = msb >> (NCCLZ_HUFF_MAX_LEN - l), k = code - b.tab[16 + l];
      if (l <= b.max_len && k < b.tab[l]) at = b.tab[32 + l] + k, l_hit = l;
    }
    if (!l_hit) return NZ_R_HF_CODE;
    e = (b.slong ? (uint32_t)b.slong[at - b.long0] : __ldg(b.sorted + at)) << 4 | l_hit;
  }
  r.skip(e & 15u);
  const uint32_t idx = e >> 4;
  if (idx == b.esc) { /* as read_escape: b - 1, then the bits below z's leading one */
    r.refill();
    const uint32_t b1 = (uint32_t)r.buf & ((1u << NCCLZ_HUFF_ESCAPE_COUNT_BITS) - 1u);
    r.skip(NCCLZ_HUFF_ESCAPE_COUNT_BITS);
    r.refill();
    const uint32_t z = 1u << b1 | ((uint32_t)r.buf & ((1u << b1) - 1u));
    r.skip(b1);
    v = ncclz_huff_unescape(z, b.a.centre);
    if (ncclz_huff_index(v, b.a) != b.esc) return NZ_R_HF_ESCAPE; /* one encoding per symbol */
  } else if (idx == b.fill) {
    v = NCCLZ_FILL_CODE;
  } else {
    v = (int32_t)(b.basev + idx);
  }
  return 0;
}

/* Words of a lane's ring (ring_refill), a power of two. */
#define NZ_HF_RING 32u

/* LSB-first reader over one segment; words past the segment read as zero (as the reference). */
struct BitSource {
  const uint32_t *src;
  uint32_t words, next, nbits, base; /* base: payload word index of src[0], for the check */
  unsigned long long buf;
  uint32_t chk;
  const uint32_t *ring; /* ring_refill's copy of words [ring_end - ring_mask - 1, ring_end), or NULL */
  uint32_t ring_end, ring_mask;
  __device__ void refill() {
    if (nbits <= 32) {
      uint32_t w = 0;
      if (next < words) {
        /* the ring, else shared memory (stage_segments) or global */
        w = next < ring_end ? ring[next & ring_mask] : src[next];
        chk += nz_chk(w, base + next);
      }
      next++;
      buf |= (unsigned long long)w << nbits;
      nbits += 32;
    }
  }
  __device__ void skip(uint32_t l) {
    buf >>= l;
    nbits -= l;
  }
};

/* The reader's loads depend on each other (one word per refill), so a segment read from global
 * memory waits on it at every word: a 4 MiB frame coded alone has too few decoders to hide that
 * (ncu: 397 us per 4 MiB of 1,024-symbol segments). A warp's 32 segments lie back to back in the
 * stream: when they fit in the warp's seg_words of shared memory, the warp copies them there with
 * coalesced loads and each reader takes its words from shared memory; otherwise (wide codes,
 * corrupt offsets) the reader stays on global memory, its segment prefetched into L1. */
static __device__ bool stage_segments(BitSource &br, const uint32_t *stream, bool mine, uint32_t *seg,
                                      uint32_t seg_words) {
  const uint32_t lane = threadIdx.x & 31, first = mine ? (uint32_t)(br.src - stream) : 0xFFFFFFFFu;
  const uint32_t lo = __reduce_min_sync(NZ_FULL, first), hi = __reduce_max_sync(NZ_FULL, mine ? first + br.words : 0u);
  if (lo < hi && hi - lo <= seg_words) {
    for (uint32_t i = lane; i < hi - lo; i += 32) seg[i] = __ldg(stream + lo + i);
    __syncwarp();
    if (mine) br.src = seg + (first - lo);
    return true;
  }
  if (mine)
    for (uint32_t w = 0; w < br.words; w += 32) asm volatile("prefetch.global.L1 [%0];" ::"l"(br.src + w));
  return false;
}

/* Tops up every lane's ring (R words, lane r's at r * STRIDE in `rings`) to at most CAP more of
 * the words [next, next + R) of its segment. Streams of escapes (raw float bits: about 25 bits a
 * symbol) are too wide to stage whole, and a reader that loads its own next word each time makes
 * 32 lanes touch 32 segments a load: ncu showed 9.3 of 15 cycles between a warp's instructions
 * waiting on L1TEX, 70% excess sectors. Here a load serves 32 / CAP lanes, CAP consecutive words
 * each, eight loads in flight. A reader that outruns its ring in a round reads the rest from
 * global memory. */
template <uint32_t R, uint32_t CAP, uint32_t STRIDE>
static __device__ void ring_refill(BitSource &br, bool active, uint32_t *rings, const uint32_t *stream) {
  static_assert(CAP >= 8 && CAP <= 32 && 32 % CAP == 0, "eight loads serve 32 lanes or a multiple");
  constexpr uint32_t G = 32 / CAP; /* segments a load serves */
  const uint32_t lane = threadIdx.x & 31, sub = lane / CAP, j = lane % CAP;
  const uint32_t from = br.ring_end > br.next ? br.ring_end : br.next;
  const uint32_t to = br.next + R < br.words ? br.next + R : br.words;
  const uint32_t want = active && to > from ? (to - from < CAP ? to - from : CAP) : 0;
  const uint32_t at = (uint32_t)(br.src - stream) + from; /* stream word of the first one wanted */
  for (uint32_t r0 = 0; r0 < 32; r0 += 8 * G) {
    uint32_t w[8], n[8], first[8];
#pragma unroll
    for (uint32_t i = 0; i < 8; i++) { /* loads first, so that eight are in flight */
      const uint32_t r = r0 + i * G + sub;
      n[i] = __shfl_sync(NZ_FULL, want, r);
      first[i] = __shfl_sync(NZ_FULL, from, r);
      const uint32_t a = __shfl_sync(NZ_FULL, at, r);
      w[i] = j < n[i] ? __ldg(stream + a + j) : 0u;
    }
#pragma unroll
    for (uint32_t i = 0; i < 8; i++)
      if (j < n[i]) rings[(r0 + i * G + sub) * STRIDE + (first[i] + j) % R] = w[i];
  }
  if (want) br.ring_end = from + want;
  __syncwarp();
}

/* The symbols of the codes longer than the first-level table (sorted from long0, nlong of them) as
 * 16-bit words in the block's segment room, when no warp staged its segments there and they fit
 * (8,192 at 512-symbol segments): the decoder's second step reads them from shared memory instead
 * of global. On wide alphabets (REL without prediction: ~12 bits a symbol, about half the codes
 * 13-15 bits long) that global load was the decoder's main wait (ncu, 256 MiB of TREFHT REL 1e-4:
 * half of the stall cycles on L1TEX; loading the segment words ahead does not help). Block-uniform;
 * NULL when not used. */
static __device__ const uint16_t *stage_long_symbols(bool skip, const uint32_t *sorted, uint32_t long0,
                                                     uint32_t nlong, uint32_t *room, uint32_t room_words) {
  if (skip || nlong == 0 || nlong > 2 * room_words) return nullptr;
  uint16_t *t = reinterpret_cast<uint16_t *>(room);
  for (uint32_t i = threadIdx.x; i < nlong; i += blockDim.x) t[i] = (uint16_t)__ldg(sorted + long0 + i);
  __syncthreads();
  return t;
}

/* Shared words per decoding warp for segments of S symbols: room for 4 bits per symbol (8-bit
 * QSGD codes: ~3.3), at most 1,024 words, so that a block keeps to 16 KiB more (the executor's
 * 256-symbol segments; 64 KiB for 1,024-symbol ones halved the batched decode's blocks per SM). */
static uint32_t dec_seg_words(uint32_t S) { return S < 256u ? 4u * S : 1024u; }

/* Symbols a lane decodes before the warp stores them (a row of the stage per lane): 16 rather
 * than 32 halves the stage, so that shared memory holds five CTAs an SM instead of four. */
#ifndef DEC_ROUND
#define DEC_ROUND 16
#endif
static_assert(DEC_ROUND == 16 || DEC_ROUND == 32, "a round is half a warp's rows or one");
/* At most 80 registers a thread, room for six CTAs an SM; shared memory (the tables, the stage and
 * the segment room) holds five at segments of 256 symbols or more. */
#define DEC_MIN_CTAS 6
/* Narrow streams (at most 16 bits a symbol) that no warp stages whole read their segments
 * through rings of NZ_HF_RING_N words a lane (padded a word, against bank conflicts), topped up
 * a round at a time; the long codes' symbols take the room behind the rings. Each reader had
 * loaded its own next word from global memory, 32 segments a warp's load: REL 1e-4 on TREFHT
 * decoded at 384 GB/s end to end that way, 500 through the rings. */
#ifndef DEC_RING_NARROW
#define DEC_RING_NARROW 1
#endif
#define NZ_HF_RING_N 16u
/* Streams of at most this many bits a symbol (3D Lorenzo's codes: about 5) top their rings up
 * every other round, a round's 8 words then being enough for 32 symbols. */
#ifndef DEC_RING_SLOW_BITS
#define DEC_RING_SLOW_BITS 6u
#endif
#define NZ_HF_RING_N_WORDS ((DEC_THREADS / 32) * 32 * (NZ_HF_RING_N + 1))
#define DEC_ROOM_EXTRA (DEC_RING_NARROW ? 512u : 0u) /* words: five CTAs an SM still fit */
template <typename Out>
__global__ void __launch_bounds__(DEC_THREADS, DEC_MIN_CTAS) k_hf_decode_thread(NzShape sh, const uint8_t *in, Out out, NzFrame *fr,
                                                           const uint32_t *lut, const uint32_t *tables,
                                                           uint32_t seg_words) {
  nz_pdl_enter();
  __shared__ uint32_t s_lut[1u << FAST_BITS];
  __shared__ uint32_t s_tab[64];
  __shared__ int32_t stage[DEC_THREADS / 32][32][DEC_ROUND + 1];
  extern __shared__ uint32_t dec_seg[]; /* seg_words per warp: its 32 segments' coded words */
  const uint32_t f = blockIdx.y, tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  NzFrame *F = &fr[f];
  const uint32_t S = sh.p0, n = F->n, fb = F->fast_bits; /* before the start's barrier: its reads serve */
  const uint32_t nseg = hf_decode_start(sh, F, lut, tables, DEC_THREADS, DEC_THREADS, s_lut, s_tab);
  if (!nseg) return;
  const uint32_t *sorted = tables + (size_t)f * NZ_HF_TSTRIDE + 64;
  const HfSegments g = hf_segments(in, F, nseg);
  const uint32_t sw = g.sw, H = g.H, stream_bytes = g.stream_bytes, *P = g.P;
  const uint32_t k = blockIdx.x * DEC_THREADS + tid;
  uint32_t chk = 0, bad = 0, count = 0;
  BitSource br = {P + H, 0, 0, 0, sw + H, 0, 0, nullptr, 0, 0};
  if (k < nseg) {
    uint32_t begin = P[H - nseg + k], end = k + 1 < nseg ? P[H - nseg + k + 1] : stream_bytes;
    chk += nz_chk(begin, sw + H - nseg + k);
    if (hf_bad_offsets(k, nseg, begin, end, stream_bytes))
      bad = NZ_R_HF_OFFSETS;
    else {
      br.src = P + H + begin / 4;
      br.base = sw + H + begin / 4;
      br.words = (end - begin) / 4;
    }
    count = n - k * S < S ? n - k * S : S;
  }
  const bool staged = stage_segments(br, P + H, k < nseg && !bad, dec_seg + warp * seg_words, seg_words);
  uint32_t nlong;
  HfBook bk = hf_book(s_lut, s_tab, sorted, F, fb, nlong);
  /* Streams of more than 16 bits a symbol (mostly escapes, which take no long code) give the
   * segment room to the warps' rings rather than to the long codes' symbols. Frame-uniform. */
  const bool wide = (uint64_t)stream_bytes * 8 > 16ull * n, any_staged = __syncthreads_or(staged);
  const uint32_t room_words = seg_words * (DEC_THREADS / 32) + DEC_ROOM_EXTRA;
  const bool ring_w = wide && !staged && seg_words >= 32 * NZ_HF_RING; /* warp-uniform */
  const bool ring_n = DEC_RING_NARROW && !wide && !any_staged && room_words >= 2 * NZ_HF_RING_N_WORDS; /* block */
  const bool ring_slow = (uint64_t)stream_bytes * 8 <= (uint64_t)DEC_RING_SLOW_BITS * n;
  uint32_t *long_room = ring_n ? dec_seg + NZ_HF_RING_N_WORDS : dec_seg;
  bk.slong = stage_long_symbols(any_staged || wide, sorted, bk.long0, nlong, long_room,
                                room_words - (uint32_t)(long_room - dec_seg));
  if (ring_w) br.ring = dec_seg + warp * seg_words + lane * NZ_HF_RING, br.ring_mask = NZ_HF_RING - 1;
  if (ring_n) br.ring = dec_seg + (warp * 32 + lane) * (NZ_HF_RING_N + 1), br.ring_mask = NZ_HF_RING_N - 1;
  const uint32_t rounds = __reduce_max_sync(NZ_FULL, count);
  const typename Out::Frame dst = out.frame(sh, f, in, *F);
  for (uint32_t c0 = 0; c0 < rounds; c0 += DEC_ROUND) {
    if (ring_w && c0 % 32 == 0)
      ring_refill<NZ_HF_RING, 32, NZ_HF_RING>(br, k < nseg && !bad, dec_seg + warp * seg_words, P + H);
    if (ring_n && (!ring_slow || c0 % 32 == 0)) /* DEC_ROUND (16) symbols of at most 15 bits fit in 8 words */
      ring_refill<NZ_HF_RING_N, 8, NZ_HF_RING_N + 1>(br, k < nseg && !bad, dec_seg + warp * 32 * (NZ_HF_RING_N + 1), P + H);
    for (uint32_t j = 0; j < DEC_ROUND && c0 + j < count && !bad; j++) {
      int32_t v;
      const uint32_t why = hf_symbol(bk, br, v);
      if (why) {
        bad = why;
        break;
      }
      stage[warp][lane][j] = v;
    }
    __syncwarp();
    for (uint32_t r0 = 0; r0 < 32; r0 += 32 / DEC_ROUND) { /* row r = lane r's segment: coalesced stores */
      const uint32_t r = r0 + lane / DEC_ROUND, c = c0 + lane % DEC_ROUND;
      uint32_t kr = blockIdx.x * DEC_THREADS + warp * 32 + r, cr = __shfl_sync(NZ_FULL, count, r);
      if (c < cr) dst.put((size_t)kr * S + c, stage[warp][r][lane % DEC_ROUND]);
    }
    __syncwarp();
  }
  if (k < nseg && !bad) {
    unsigned long long used = (unsigned long long)br.next * 32 - br.nbits;
    uint32_t pad = (uint32_t)(br.words * 32ull - used);
    if ((used + 31) / 32 != br.words) bad = NZ_R_HF_SEGEND;
    else if (pad && (br.buf & ((1ull << pad) - 1)) != 0) bad = NZ_R_HF_PAD;
  }
  if (bad) hf_fail(F, bad);
  nz_add_check<DEC_THREADS>(chk + br.chk, &F->check);
}


/* ------------------------------------------------------------ decode, a warp a segment */

/* LSB-first reader over one segment's words (shared or global); words past the segment read as
 * zero, as in the reference, so a code that runs past the end is caught by the end check. */
struct HfReader {
  const uint32_t *w;
  uint32_t words, next, nbits;
  unsigned long long buf;
  __device__ uint32_t word(uint32_t i) const { return i < words ? w[i] : 0u; }
  __device__ void refill() {
    if (nbits <= 32) {
      buf |= (unsigned long long)word(next) << nbits;
      next++;
      nbits += 32;
    }
  }
  __device__ void skip(uint32_t l) {
    buf >>= l;
    nbits -= l;
  }
  __device__ void seek(uint32_t bit) {
    next = bit / 32, nbits = 0, buf = 0;
    refill();
    skip(bit % 32);
  }
  __device__ uint32_t pos() const { return 32 * next - nbits; }
};

/* The segment end (as check_segment_end): exactly its words used, the rest of the last one zero. */
static __device__ uint32_t hf_segment_end(const uint32_t *w, uint32_t words, uint32_t used) {
  if ((used + 31) / 32 != words) return NZ_R_HF_SEGEND;
  if (used % 32 && w[words - 1] >> (used % 32)) return NZ_R_HF_PAD;
  return 0;
}

/* The reference's serial decode of a segment to dst's symbols from `at` on: 0 or the first reason
 * it fails. */
template <typename Dst>
static __device__ uint32_t hf_serial(const HfBook &b, const uint32_t *w, uint32_t words, uint32_t count, const Dst &dst,
                                     uint32_t at) {
  HfReader r = {w, words, 0, 0, 0};
  for (uint32_t i = 0; i < count; i++) {
    int32_t v;
    const uint32_t bad = hf_symbol(b, r, v);
    if (bad) return bad;
    dst.put(at + i, v);
  }
  return hf_segment_end(w, words, r.pos());
}

#define HF_NONE 0xFFFFFFFFu

/* The first parse of one lane's codes that start in [r0, r1) from r0, marked in bm (clear there). */
static __device__ void hf_mark(const HfBook &b, const uint32_t *w, uint32_t words, uint32_t *bm, uint32_t r0,
                               uint32_t r1, uint32_t &end, bool &failed) {
  HfReader r = {w, words, 0, 0, 0};
  r.seek(r0);
  uint32_t p = r0;
  end = HF_NONE, failed = true;
  while (p < r1) {
    bm[p / 32] |= 1u << (p % 32);
    int32_t v;
    if (hf_symbol(b, r, v)) return;
    p = r.pos();
  }
  end = p, failed = false;
}

/* Symbols [0, count) of a segment whose code starts are the set bits of bm (words words), pre[i]
 * the set bits before word i: lane l decodes symbols l, l + 32, ... each from its own start, so
 * that the lanes share the symbols evenly whatever the codes' lengths in their slices, and the
 * stores are coalesced. Returns where the last symbol ends (all lanes). */
template <typename Dst>
static __device__ uint32_t hf_write_ranked(const HfBook &b, const uint32_t *w, uint32_t words, const uint32_t *bm,
                                           const uint32_t *pre, uint32_t count, const Dst &dst, uint32_t at) {
  uint32_t used = 0;
  for (uint32_t i = threadIdx.x & 31; i < count; i += 32) {
    uint32_t lo = 0, hi = words; /* the last word whose prefix is <= i */
    while (hi - lo > 1) {
      const uint32_t mid = (lo + hi) / 2;
      if (pre[mid] <= i) lo = mid;
      else hi = mid;
    }
    uint32_t x = bm[lo];
    for (uint32_t k = i - pre[lo]; k; k--) x &= x - 1; /* drop the starts before it */
    const uint32_t start = 32 * lo + __ffs(x) - 1;
    HfReader r = {w, words, 0, 0, 0};
    r.seek(start);
    int32_t v;
    hf_symbol(b, r, v); /* valid: the parse reached symbol count - 1 without a failure */
    dst.put(at + i, v);
    if (i == count - 1) used = r.pos();
  }
  return __reduce_max_sync(NZ_FULL, used);
}

/* Clears bits [lo, hi) of a bitmap. */
static __device__ void hf_bits_clear(uint32_t *bm, uint32_t lo, uint32_t hi) {
  while (lo < hi) {
    const uint32_t b = lo % 32, nb = 32 - b < hi - lo ? 32 - b : hi - lo;
    bm[lo / 32] &= ~((nb == 32 ? 0xFFFFFFFFu : (1u << nb) - 1u) << b);
    lo += nb;
  }
}

/* One lane's codes from `from` on that start in [r0, r1), as the bits of bm (a bit per stream bit,
 * set where a code starts; the lane owns the words of [r0, r1)) that hold its previous parse:
 * where the new parse reaches a start of the old one, the rest is the same and it stops there
 * (end and failed stay); positions it passes over are cleared. A code that fails stays marked and
 * ends the parse (end HF_NONE). */
static __device__ void hf_resync(const HfBook &b, const uint32_t *w, uint32_t words, uint32_t *bm, uint32_t from,
                                 uint32_t r0, uint32_t r1, uint32_t &end, bool &failed) {
  if (from == HF_NONE) {
    hf_bits_clear(bm, r0, r1);
    end = HF_NONE, failed = false;
    return;
  }
  hf_bits_clear(bm, r0, from < r1 ? from : r1);
  HfReader r = {w, words, 0, 0, 0};
  r.seek(from);
  uint32_t p = from;
  while (p < r1) {
    if (bm[p / 32] >> (p % 32) & 1u) return; /* in step with the old parse */
    bm[p / 32] |= 1u << (p % 32);
    int32_t v;
    if (hf_symbol(b, r, v)) {
      hf_bits_clear(bm, p + 1, r1);
      end = HF_NONE, failed = true;
      return;
    }
    const uint32_t q = r.pos();
    hf_bits_clear(bm, p + 1, q < r1 ? q : r1);
    p = q;
  }
  end = p, failed = false;
}

/* A warp decodes one segment of `words` words (staged in shared memory, words <= 2^26) into
 * dst[0, count): lane j takes the codes that start in its 1/32 of the words. It first parses from
 * its slice's first bit, then from where the lane before it ended, until no lane's start moves
 * (32 rounds at most: lane j is right after j); a parse from a new start stops where it meets the
 * old one (Huffman codes fall into step within a few codes), marked in bm (`words` words). The
 * code starts marked then rank the symbols (pre: `words` words), which the lanes decode evenly.
 * False when the segment is not valid (an invalid code or escape before the count-th symbol, too
 * few symbols, a wrong end): the caller then runs the serial decode for the reference's reason.
 * All lanes call it. */
template <typename Dst>
static __device__ bool hf_warp_segment(const HfBook &b, const uint32_t *w, uint32_t words, uint32_t count,
                                       uint32_t *bm, uint32_t *pre, const Dst &dst, uint32_t at) {
  const uint32_t lane = threadIdx.x & 31, per = (words + 31) / 32;
  const uint32_t w0 = lane * per < words ? lane * per : words, w1 = w0 + per < words ? w0 + per : words;
  const uint32_t r0 = 32 * w0, r1 = 32 * w1;
  for (uint32_t i = w0; i < w1; i++) bm[i] = 0;
  uint32_t start = r0, end;
  bool failed;
  hf_mark(b, w, words, bm, r0, r1, end, failed);
  for (uint32_t round = 0; round < 32; round++) {
    uint32_t from = __shfl_up_sync(NZ_FULL, end, 1);
    if (lane == 0) from = 0;
    const bool moved = from != start;
    if (!__any_sync(NZ_FULL, moved)) break;
    if (moved) {
      start = from;
      hf_resync(b, w, words, bm, start, r0, r1, end, failed);
    }
  }
  uint32_t n = 0; /* codes that start here, a failing one included */
  for (uint32_t i = w0; i < w1; i++) n += __popc(bm[i]);
  const uint32_t incl = nz_warp_inclusive_sum(n), base = incl - n, total = __shfl_sync(NZ_FULL, incl, 31);
  if (__any_sync(NZ_FULL, failed && base + n - 1 < count) || total < count) return false;
  for (uint32_t i = w0, c = base; i < w1; i++) {
    pre[i] = c;
    c += __popc(bm[i]);
  }
  __syncwarp();
  return hf_segment_end(w, words, hf_write_ranked(b, w, words, bm, pre, count, dst, at)) == 0;
}

/* Shared words per decoding warp for a segment's coded words, and as many for the bitmap of its
 * code starts and for their ranks: up to 32 bits a symbol (raw float bits: about 25) and 512
 * words; a longer segment (wide codes in segments over 512 symbols, or corrupt) is decoded
 * serially from global memory. */
#define DEC_WARPS 8
#define DEC_LONG 4096u /* long codes' symbols staged in shared memory, at most */
/* Segments in a batch from which a thread a segment decodes (k_hf_decode_thread): 256 CTAs of
 * DEC_THREADS, two an SM (256 MiB of 4 MiB frames: 131,072 segments of 512 symbols). */
#define NZ_HF_THREAD_SEGMENTS 32768u
static uint32_t dec_stage_words(uint32_t S) { return S < 512u ? S : 512u; }

/* A warp per segment (grid-stride over the frame's segments), the tables in shared memory. */
template <typename Out>
__global__ void __launch_bounds__(DEC_WARPS * 32) k_hf_decode(NzShape sh, const uint8_t *in, Out out, NzFrame *fr,
                                                              const uint32_t *lut, const uint32_t *tables,
                                                              uint32_t stage_words) {
  nz_pdl_enter();
  __shared__ uint32_t s_lut[1u << FAST_BITS];
  __shared__ uint32_t s_tab[64];
  __shared__ uint16_t s_long[DEC_LONG];
  extern __shared__ uint32_t dec_room[]; /* per warp: stage_words coded words, bitmap words, ranks */
  const uint32_t f = blockIdx.y, tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  NzFrame *F = &fr[f];
  const uint32_t S = sh.p0, n = F->n, fb = F->fast_bits; /* before the start's barrier: its reads serve */
  const uint32_t nseg = hf_decode_start(sh, F, lut, tables, DEC_WARPS, DEC_WARPS * 32, s_lut, s_tab);
  if (!nseg) return;
  uint32_t nlong;
  HfBook b = hf_book(s_lut, s_tab, tables + (size_t)f * NZ_HF_TSTRIDE + 64, F, fb, nlong);
  if (nlong && nlong <= DEC_LONG) { /* block-uniform */
    for (uint32_t i = tid; i < nlong; i += DEC_WARPS * 32) s_long[i] = (uint16_t)__ldg(b.sorted + b.long0 + i);
    __syncthreads();
    b.slong = s_long;
  }
  const HfSegments g = hf_segments(in, F, nseg);
  const uint32_t sw = g.sw, H = g.H, stream_bytes = g.stream_bytes, *P = g.P;
  uint32_t *stage = dec_room + warp * 3 * stage_words, *bm = stage + stage_words, *pre = bm + stage_words;
  const typename Out::Frame dst = out.frame(sh, f, in, *F);
  uint32_t chk = 0;
  for (uint32_t k = blockIdx.x * DEC_WARPS + warp; k < nseg; k += gridDim.x * DEC_WARPS) { /* warp-uniform */
    const uint32_t begin = __ldg(P + H - nseg + k), end = k + 1 < nseg ? __ldg(P + H - nseg + k + 1) : stream_bytes;
    if (lane == 0) chk += nz_chk(begin, sw + H - nseg + k);
    if (hf_bad_offsets(k, nseg, begin, end, stream_bytes)) {
      if (lane == 0) hf_fail(F, NZ_R_HF_OFFSETS);
      continue;
    }
    const uint32_t words = (end - begin) / 4, count = n - k * S < S ? n - k * S : S;
    const uint32_t *src = P + H + begin / 4, base = sw + H + begin / 4;
    const bool staged = words <= stage_words;
    for (uint32_t i = lane; i < words; i += 32) {
      const uint32_t v = __ldg(src + i);
      chk += nz_chk(v, base + i);
      if (staged) stage[i] = v;
    }
    __syncwarp();
    const uint32_t *w = staged ? stage : src;
    if (!(staged && hf_warp_segment(b, stage, words, count, bm, pre, dst, k * S))) {
      __syncwarp();
      uint32_t bad = 0;
      if (lane == 0) bad = hf_serial(b, w, words, count, dst, k * S);
      if (bad) hf_fail(F, bad);
    }
    __syncwarp();
  }
  nz_add_check_warp(chk, &F->check);
}

template <typename Out>
ncclzStatus nz_huffman_decode(const NzShape &sh, const uint8_t *d_in, const Out &out, NzFrame *fr, uint32_t *lut,
                              uint32_t *tables, cudaStream_t s) {
  size_t smem = sizeof(TableShared);
  NZ_CUDA(nz_smem_optin(k_hf_table, smem));
  nz_launch(k_hf_table, sh.n_frames, BOOK_THREADS, smem, s, sh, d_in, fr, lut, tables);
  NZ_LAUNCHED();
  const uint32_t nseg = (uint32_t)ncclz_ceil_div(sh.frame_symbols, sh.p0);
  if ((uint64_t)nseg * sh.n_frames >= NZ_HF_THREAD_SEGMENTS) {
    const uint32_t seg_words = dec_seg_words(sh.p0);
    const size_t seg_smem = sizeof(uint32_t) * (seg_words * (DEC_THREADS / 32) + DEC_ROOM_EXTRA);
    NZ_CUDA(nz_smem_optin(k_hf_decode_thread<Out>, seg_smem));
    nz_launch(k_hf_decode_thread<Out>, dim3((nseg + DEC_THREADS - 1) / DEC_THREADS, sh.n_frames), DEC_THREADS, seg_smem, s,
              sh, d_in, out, fr, lut, tables, seg_words);
    NZ_LAUNCHED();
    return NCCLZ_OK;
  }
  const uint32_t stage_words = dec_stage_words(sh.p0);
  /* every segment its own warp up to about 2,048 CTAs over the batch; beyond, warps take several */
  const uint32_t ctas = (nseg + DEC_WARPS - 1) / DEC_WARPS, cap = (2048 + sh.n_frames - 1) / sh.n_frames;
  const size_t room = sizeof(uint32_t) * 3 * stage_words * DEC_WARPS;
  NZ_CUDA(nz_smem_optin(k_hf_decode<Out>, room));
  nz_launch(k_hf_decode<Out>, dim3(ctas < cap ? ctas : cap, sh.n_frames), DEC_WARPS * 32, room, s, sh, d_in, out, fr,
            lut, tables, stage_words);
  NZ_LAUNCHED();
  return NCCLZ_OK;
}
#define NZ_HUFFMAN_DECODE_OF(Out)                                                                             \
  template ncclzStatus nz_huffman_decode(const NzShape &, const uint8_t *, const Out &, NzFrame *, uint32_t *, \
                                         uint32_t *, cudaStream_t)
NZ_HUFFMAN_DECODE_OF(NzCodesOut);
NZ_HUFFMAN_DECODE_OF(NzQsgdOut);
NZ_HUFFMAN_DECODE_OF(NzEbOut);
