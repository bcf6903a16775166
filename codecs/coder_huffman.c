/* HUFFMAN coder (FORMAT.md): a canonical, length-limited code over a window of 2R symbols around
 * the centre c plus an escape (followed by the symbol's variable-length offset from c), coded in
 * independently decodable segments of S symbols. The code length table is dense or sparse,
 * whichever is smaller.
 * The decoder is table driven (one lookup on the next few bits for short codes, a canonical
 * search for the rare long ones) and validates every length, offset and bit it reads. */
#include "ncclz/codecs.h"
#include "hd_util.h"
#include "huff_codebook.h"

#include <stdlib.h>
#include <string.h>

/* Bits resolved by the first-level decode table; longer codes take the canonical path. */
#define FAST_BITS 11u
#define LEN_MASK 15u


void ncclzHuffLengths(const uint32_t *freq, uint32_t nsym, uint32_t max_len, uint8_t *lengths) {
  uint32_t used = 0;
  for (uint32_t i = 0; i < nsym; i++) used += freq[i] != 0;
  if (max_len < 1) max_len = 1;
  if (max_len > NCCLZ_HUFF_MAX_LEN) max_len = NCCLZ_HUFF_MAX_LEN;
  while (max_len < NCCLZ_HUFF_LEN_LIMIT && ((uint64_t)1 << max_len) < used) max_len++; /* must fit */
  uint64_t *s64 = malloc(sizeof(uint64_t) * NCCLZ_HUFF_SCRATCH64((size_t)nsym) + 8);
  uint32_t *s32 = malloc(sizeof(uint32_t) * NCCLZ_HUFF_SCRATCH32((size_t)nsym) + 4);
  if (s64 && s32) {
    ncclz_huff_lengths(freq, nsym, max_len, lengths, s64, s32);
  } else {
    memset(lengths, 0, nsym); /* documented: no code on allocation failure */
  }
  free(s64);
  free(s32);
}

static int cmp_i32(const void *a, const void *b) {
  int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
  return (x > y) - (x < y);
}

/* The alphabet from a sample (FORMAT.md "Alphabet"): the sampled non-fill symbols sorted; their
 * median is the centre and their trimmed extremes set the radius (all 0 if none). */
static ncclzHuffAlphabet sample_alphabet(const int32_t *sym, size_t n) {
  int32_t s[NCCLZ_HUFF_CENTRE_SAMPLES];
  size_t m = n < NCCLZ_HUFF_CENTRE_SAMPLES ? n : NCCLZ_HUFF_CENTRE_SAMPLES, k = 0;
  for (size_t i = 0; i < m; i++) {
    int32_t v = sym[ncclz_huff_sample_pos(i, n, m)];
    if (v != NCCLZ_FILL_CODE) s[k++] = v;
  }
  if (k == 0) return ncclz_huff_choose_alphabet(0, 0, 0);
  qsort(s, k, sizeof *s, cmp_i32);
  size_t t = ncclz_huff_sample_trim((uint32_t)k);
  return ncclz_huff_choose_alphabet(s[t], s[k - 1 - t], s[(k - 1) / 2]);
}

ncclzHuffAlphabet ncclzHuffAlphabetAround(int32_t min_sym, int32_t max_sym, int32_t centre) {
  return ncclz_huff_choose_alphabet(min_sym, max_sym, centre);
}

ncclzHuffAlphabet ncclzHuffChooseAlphabet(const int32_t *sym, size_t n) { return sample_alphabet(sym, n); }

/* ------------------------------------------------------------------ encoder */

/* Per-call work space of the encoder, sized for the alphabet (K = 2R + 2 bins). */
typedef struct {
  uint32_t *freq;
  uint8_t *lengths;
  uint32_t *entry;    /* reversed code | length << 16 */
  uint64_t *s64;
  uint32_t *s32;
} EncodeWork;

static int encode_work_alloc(EncodeWork *w, uint32_t K) {
  w->freq = calloc(K, sizeof(uint32_t));
  w->lengths = malloc(K);
  w->entry = malloc(sizeof(uint32_t) * K);
  w->s64 = malloc(sizeof(uint64_t) * NCCLZ_HUFF_SCRATCH64(K));
  w->s32 = malloc(sizeof(uint32_t) * NCCLZ_HUFF_SCRATCH32(K));
  return w->freq && w->lengths && w->entry && w->s64 && w->s32;
}

static void encode_work_free(EncodeWork *w) {
  free(w->freq);
  free(w->lengths);
  free(w->entry);
  free(w->s64);
  free(w->s32);
}

/* The listed part of the code length table: indices lo .. lo+m-1, u of them with a code. */
typedef struct {
  uint32_t lo, m, u;
} TableSpan;

/* Builds lengths and the (reversed code, length) entries from the histogram; returns the span. */
static TableSpan build_code_book(EncodeWork *w, uint32_t K) {
  ncclz_huff_lengths(w->freq, K, NCCLZ_HUFF_MAX_LEN, w->lengths, w->s64, w->s32);
  uint32_t *codes = w->s32; /* scratch is free again */
  ncclz_huff_canonical_codes(w->lengths, K, codes);
  uint32_t lo = K, hi = 0, u = 0;
  for (uint32_t i = 0; i < K; i++) {
    uint32_t len = w->lengths[i];
    w->entry[i] = ncclz_huff_reverse(codes[i], len) | len << 16;
    if (len) {
      lo = i < lo ? i : lo;
      hi = i;
      u++;
    }
  }
  TableSpan t = {lo < K ? lo : 0, lo < K ? hi - lo + 1 : 0, u};
  return t;
}

/* LSB-first bit writer with a capacity check on every flushed word. */
typedef struct {
  uint8_t *dst;
  size_t pos, cap;
  uint64_t acc;
  uint32_t nacc;
  int overflow;
} BitWriter;

static inline void bw_flush_word(BitWriter *bw) {
  if (bw->pos + 4 <= bw->cap) ncclz_store_u32(bw->dst + bw->pos, (uint32_t)bw->acc);
  else bw->overflow = 1;
  bw->pos += 4;
  bw->acc >>= 32;
  bw->nacc -= 32;
}

static inline void bw_put(BitWriter *bw, uint32_t bits, uint32_t len) {
  bw->acc |= (uint64_t)bits << bw->nacc;
  bw->nacc += len;
  if (bw->nacc >= 32) bw_flush_word(bw);
}

/* Zero-pads the current segment to a word boundary. */
static inline void bw_align(BitWriter *bw) {
  if (bw->nacc) {
    bw->nacc = 32;
    bw_flush_word(bw);
    bw->nacc = 0;
    bw->acc = 0;
  }
}

/* A symbol's field (ncclz_huff_symbol_field: up to 51 bits) in at most two puts of <= 32. */
static inline void bw_put_field(BitWriter *bw, uint64_t field, uint32_t len) {
  if (len > 32) {
    bw_put(bw, (uint32_t)field, 32);
    field >>= 32;
    len -= 32;
  }
  bw_put(bw, (uint32_t)field, len);
}

static void encode_segment(BitWriter *bw, const int32_t *sym, size_t count, const uint32_t *entry,
                           ncclzHuffAlphabet a) {
  for (size_t i = 0; i < count; i++) {
    uint32_t idx = ncclz_huff_index(sym[i], a), len;
    uint64_t field = ncclz_huff_symbol_field(sym[i], a, idx, entry[idx], &len);
    bw_put_field(bw, field, len);
  }
  bw_align(bw);
}

/* Writes [lo: u16][m: u16][u: u32], the length table (dense: a nibble per index; sparse: a
 * presence bitmap, then a nibble per present index) and nseg; returns the head size including the
 * nseg offsets (0 if it does not fit). Bit j of the bitmap is bit j % 8 of its byte j / 8. */
static size_t write_table(uint8_t *dst, size_t cap, const uint8_t *lengths, TableSpan t, size_t nseg) {
  size_t bitmap_bytes = 4 * (size_t)ncclz_huff_bitmap_words(t.m, t.u);
  size_t nibble_bytes = 4 * (size_t)ncclz_huff_nibble_words(t.m, t.u);
  size_t size = 8 + bitmap_bytes + nibble_bytes + 4 + 4 * nseg;
  if (size > cap) return 0;
  ncclz_store_u32(dst, ncclz_huff_table_word0(t.lo, t.m));
  ncclz_store_u32(dst + 4, t.u);
  uint8_t *bitmap = dst + 8, *nibbles = bitmap + bitmap_bytes;
  memset(bitmap, 0, bitmap_bytes + nibble_bytes);
  uint32_t k = 0; /* next nibble */
  for (uint32_t j = 0; j < t.m; j++) {
    uint8_t len = lengths[t.lo + j];
    if (bitmap_bytes) {
      if (!len) continue;
      bitmap[j / 8] |= (uint8_t)(1u << (j % 8));
    }
    nibbles[k / 2] |= (uint8_t)(len << (4 * (k & 1)));
    k++;
  }
  ncclz_store_u32(nibbles + nibble_bytes, (uint32_t)nseg);
  return size;
}

static ncclzStatus encode_with_book(const int32_t *sym, size_t n, size_t seg, EncodeWork *w, uint32_t K,
                                    ncclzHuffAlphabet a, uint8_t *dst, size_t cap, size_t *out_len) {
  TableSpan t = build_code_book(w, K);
  size_t nseg = ncclz_ceil_div(n, seg);
  size_t head = write_table(dst, cap, w->lengths, t, nseg);
  if (head == 0)
    return ncclzSetError(NCCLZ_ERR_CAPACITY, "huffman: the code table and %zu segment offsets do not fit in %zu bytes",
                         nseg, cap);
  uint8_t *offsets = dst + head - 4 * nseg;
  BitWriter bw = {dst + head, 0, cap - head, 0, 0, 0};
  for (size_t k = 0; k < nseg; k++) {
    if (bw.pos > UINT32_MAX) return ncclzSetError(NCCLZ_ERR_ARG, "huffman: bit stream exceeds 4 GiB");
    ncclz_store_u32(offsets + 4 * k, (uint32_t)bw.pos);
    size_t start = k * seg, count = n - start < seg ? n - start : seg;
    encode_segment(&bw, sym + start, count, w->entry, a);
    if (bw.overflow)
      return ncclzSetError(NCCLZ_ERR_CAPACITY, "huffman: coded symbols exceed the buffer (%zu bytes)", cap);
  }
  *out_len = head + bw.pos;
  return NCCLZ_OK;
}

ncclzStatus ncclzHuffmanEncode(const int32_t *sym, size_t n, const ncclzCoderParams *p,
                               uint8_t *dst, size_t cap, size_t *out_len, ncclzHuffAlphabet *alpha_out) {
  size_t seg = p->huffman_segment;
  if (seg == 0) return ncclzSetError(NCCLZ_ERR_ARG, "huffman: segment size must be > 0");
  if (n > UINT32_MAX) return ncclzSetError(NCCLZ_ERR_ARG, "huffman: %zu symbols exceed the 32-bit count", n);
  ncclzHuffAlphabet a = ncclzHuffChooseAlphabet(sym, n);
  uint32_t K = ncclz_huff_alphabet_size(a.radius);
  EncodeWork w;
  ncclzStatus st;
  if (!encode_work_alloc(&w, K)) {
    st = ncclzSetError(NCCLZ_ERR_NOMEM, "huffman: cannot allocate the code book work space");
  } else {
    for (size_t i = 0; i < n; i++) w.freq[ncclz_huff_index(sym[i], a)]++;
    st = encode_with_book(sym, n, seg, &w, K, a, dst, cap, out_len);
  }
  encode_work_free(&w);
  if (st == NCCLZ_OK && alpha_out) *alpha_out = a;
  return st;
}

/* ------------------------------------------------------------------ decoder */

/* The decode tables of one code book. */
typedef struct {
  uint32_t fast[1u << FAST_BITS]; /* next FAST_BITS stream bits -> index << 4 | length (0: slow path) */
  uint32_t fast_bits;
  uint32_t max_len;
  uint32_t count[16], first[16], start[16]; /* canonical: codes per length, first code, rank */
  uint16_t *sorted;                         /* indices by (length, index) */
} DecodeBook;

static inline uint32_t nibble_at(const uint8_t *nibbles, uint32_t k) { return (nibbles[k / 2] >> (4 * (k & 1))) & 15u; }
static inline uint32_t bit_at(const uint8_t *bits, uint32_t j) { return (bits[j / 8] >> (j % 8)) & 1u; }

/* 1 if every bit from bit `from` to the end of `bytes` bytes is zero (padding). */
static int zero_from_bit(const uint8_t *p, size_t from, size_t bytes) {
  for (size_t b = from / 8; b < bytes; b++) {
    uint8_t v = b == from / 8 ? (uint8_t)(p[b] >> (from % 8)) : p[b];
    if (v) return 0;
  }
  return 1;
}

/* Dense table: a nibble per index lo+j, j < m; exactly u of them nonzero. */
static ncclzStatus read_dense(const uint8_t *nibbles, const TableSpan *t, uint8_t *lengths) {
  uint32_t used = 0;
  for (uint32_t j = 0; j < t->m; j++) {
    lengths[t->lo + j] = (uint8_t)nibble_at(nibbles, j);
    used += lengths[t->lo + j] != 0;
  }
  if (used != t->u)
    return ncclzSetError(NCCLZ_ERR_CORRUPT, "huffman: %u nonzero code lengths, the table header says %u", used, t->u);
  if (!zero_from_bit(nibbles, 4 * (size_t)t->m, 4 * (size_t)ncclz_huff_nibble_words(t->m, t->u)))
    return ncclzSetError(NCCLZ_ERR_CORRUPT, "huffman: nonzero padding after the %u code lengths", t->m);
  return NCCLZ_OK;
}

/* Sparse table: a bitmap of m bits, then a nonzero nibble per set bit; exactly u bits set. The
 * count is checked before each nibble is read, so a bitmap with too many bits stops in bounds. */
static ncclzStatus read_sparse(const uint8_t *bitmap, const TableSpan *t, uint8_t *lengths) {
  size_t bitmap_bytes = 4 * (size_t)ncclz_huff_bitmap_words(t->m, t->u);
  const uint8_t *nibbles = bitmap + bitmap_bytes;
  uint32_t k = 0;
  for (uint32_t j = 0; j < t->m; j++) {
    if (!bit_at(bitmap, j)) continue;
    if (k == t->u)
      return ncclzSetError(NCCLZ_ERR_CORRUPT, "huffman: the presence bitmap has more than the %u bits the table header says",
                           t->u);
    uint32_t len = nibble_at(nibbles, k++);
    if (len == 0)
      return ncclzSetError(NCCLZ_ERR_CORRUPT, "huffman: index %u is marked present but has code length 0", t->lo + j);
    lengths[t->lo + j] = (uint8_t)len;
  }
  if (k != t->u)
    return ncclzSetError(NCCLZ_ERR_CORRUPT, "huffman: the presence bitmap has %u bits set, the table header says %u", k,
                         t->u);
  if (!zero_from_bit(bitmap, t->m, bitmap_bytes))
    return ncclzSetError(NCCLZ_ERR_CORRUPT, "huffman: nonzero padding after the %u bits of the presence bitmap", t->m);
  if (!zero_from_bit(nibbles, 4 * (size_t)t->u, 4 * (size_t)ncclz_huff_nibble_words(t->m, t->u)))
    return ncclzSetError(NCCLZ_ERR_CORRUPT, "huffman: nonzero padding after the %u code lengths", t->u);
  return NCCLZ_OK;
}

/* Reads and validates the length table (after [lo][m][u]) into lengths[K]. */
static ncclzStatus read_lengths(const uint8_t *table, const TableSpan *t, uint32_t K, uint8_t *lengths, size_t n) {
  memset(lengths, 0, K);
  ncclzStatus st = ncclz_huff_table_sparse(t->m, t->u) ? read_sparse(table, t, lengths) : read_dense(table, t, lengths);
  if (st != NCCLZ_OK) return st;
  uint64_t kraft = ncclz_huff_kraft(lengths, K);
  if (kraft > (1u << NCCLZ_HUFF_MAX_LEN))
    return ncclzSetError(NCCLZ_ERR_CORRUPT, "huffman: code lengths oversubscribe the code space (Kraft sum %llu/32768)",
                         (unsigned long long)kraft);
  if (kraft == 0 && n > 0)
    return ncclzSetError(NCCLZ_ERR_CORRUPT, "huffman: %zu symbols but no code lengths", n);
  return NCCLZ_OK;
}

/* Builds the fast table and the canonical tables; lengths are valid (Kraft <= 2^15). */
static void build_decode_book(DecodeBook *b, const uint8_t *lengths, uint32_t K) {
  ncclz_huff_first_codes(lengths, K, b->count, b->first);
  b->max_len = 0;
  uint32_t rank = 0;
  for (uint32_t len = 1; len < 16; len++) {
    b->start[len] = rank;
    rank += b->count[len];
    if (b->count[len]) b->max_len = len;
  }
  b->fast_bits = b->max_len < FAST_BITS ? b->max_len : FAST_BITS;
  memset(b->fast, 0, sizeof(uint32_t) << b->fast_bits);
  uint32_t next[16], fill[16];
  memcpy(next, b->first, sizeof next);
  memcpy(fill, b->start, sizeof fill);
  for (uint32_t i = 0; i < K; i++) {
    uint32_t len = lengths[i];
    if (!len) continue;
    uint32_t code = next[len]++;
    b->sorted[fill[len]++] = (uint16_t)i;
    if (len > b->fast_bits) continue;
    uint32_t rev = ncclz_huff_reverse(code, len);
    for (uint32_t hi = 0; hi < (1u << (b->fast_bits - len)); hi++) b->fast[rev | hi << len] = i << 4 | len;
  }
}

/* Canonical decode of a code longer than fast_bits from the next 15 stream bits.
 * Returns index << 4 | length, or 0 if no code matches. */
static uint32_t slow_lookup(const DecodeBook *b, uint32_t peek15) {
  uint32_t msb_first = ncclz_huff_reverse(peek15, NCCLZ_HUFF_MAX_LEN);
  for (uint32_t len = b->fast_bits + 1; len <= b->max_len; len++) {
    uint32_t code = msb_first >> (NCCLZ_HUFF_MAX_LEN - len);
    if (code - b->first[len] < b->count[len]) return (uint32_t)b->sorted[b->start[len] + code - b->first[len]] << 4 | len;
  }
  return 0;
}

/* LSB-first reader over one segment's words; words past the segment read as zero, so a code
 * that runs past the end is caught by the final position check, never by reading outside. */
typedef struct {
  const uint8_t *src;
  size_t words, next;
  uint64_t buf;
  uint32_t nbits;
} BitReader;

static inline void br_refill(BitReader *br) {
  if (br->nbits <= 32) {
    uint32_t w = br->next < br->words ? ncclz_load_u32(br->src + 4 * br->next) : 0u;
    br->next++;
    br->buf |= (uint64_t)w << br->nbits;
    br->nbits += 32;
  }
}

static inline void br_skip(BitReader *br, uint32_t len) {
  br->buf >>= len;
  br->nbits -= len;
}

/* Checks that the segment used exactly its words and that the rest of its last word is zero. */
static ncclzStatus check_segment_end(const BitReader *br, size_t k) {
  uint64_t used = (uint64_t)br->next * 32 - br->nbits;
  if (ncclz_ceil_div(used, 32) != br->words)
    return ncclzSetError(NCCLZ_ERR_CORRUPT, "huffman: segment %zu decodes to %llu bits but holds %zu bytes", k,
                         (unsigned long long)used, 4 * br->words);
  uint32_t pad = (uint32_t)(br->words * 32 - used);
  if (pad && (br->buf & ((1ull << pad) - 1)) != 0)
    return ncclzSetError(NCCLZ_ERR_CORRUPT, "huffman: segment %zu has nonzero padding bits", k);
  return NCCLZ_OK;
}

/* The offset after an escape code (FORMAT.md "Escapes"): 5 bits of b - 1, then the b - 1 bits of z
 * below its leading one. Each refill leaves at least 32 bits, enough for either field. */
static inline int32_t read_escape(BitReader *br, int32_t centre) {
  br_refill(br);
  uint32_t b1 = (uint32_t)br->buf & ((1u << NCCLZ_HUFF_ESCAPE_COUNT_BITS) - 1u);
  br_skip(br, NCCLZ_HUFF_ESCAPE_COUNT_BITS);
  br_refill(br);
  uint32_t z = 1u << b1 | ((uint32_t)br->buf & ((1u << b1) - 1u));
  br_skip(br, b1);
  return ncclz_huff_unescape(z, centre);
}

static ncclzStatus decode_segment(const DecodeBook *b, BitReader *br, int32_t *out, size_t count,
                                  ncclzHuffAlphabet a, size_t k) {
  const uint32_t escape = ncclz_huff_escape_index(a.radius), fill = ncclz_huff_fill_index(a.radius);
  const uint32_t base = (uint32_t)a.centre - a.radius;
  const uint32_t fast_mask = (1u << b->fast_bits) - 1;
  for (size_t i = 0; i < count; i++) {
    br_refill(br);
    uint32_t e = b->fast[br->buf & fast_mask];
    if (!(e & LEN_MASK)) {
      e = slow_lookup(b, (uint32_t)br->buf & 0x7FFFu);
      if (!e) return ncclzSetError(NCCLZ_ERR_CORRUPT, "huffman: invalid code in segment %zu at symbol %zu", k, i);
    }
    br_skip(br, e & LEN_MASK);
    uint32_t idx = e >> 4;
    if (idx == escape) {
      out[i] = read_escape(br, a.centre);
      if (ncclz_huff_index(out[i], a) != escape) /* one encoding per symbol */
        return ncclzSetError(NCCLZ_ERR_CORRUPT,
                             "huffman: escape in segment %zu at symbol %zu decodes to %d, which has its own code", k, i,
                             out[i]);
    } else if (idx == fill) {
      out[i] = NCCLZ_FILL_CODE;
    } else {
      out[i] = (int32_t)(base + idx);
    }
  }
  return check_segment_end(br, k);
}

/* Validates the segment offset table (first 0, multiples of 4, non-decreasing, in bounds). */
static ncclzStatus check_offsets(const uint8_t *offsets, size_t nseg, size_t stream_bytes) {
  uint32_t prev = 0;
  for (size_t k = 0; k < nseg; k++) {
    uint32_t off = ncclz_load_u32(offsets + 4 * k);
    if ((k == 0 && off != 0) || off % 4 || off < prev || off > stream_bytes)
      return ncclzSetError(NCCLZ_ERR_CORRUPT,
                           "huffman: segment %zu offset %u is invalid (previous %u, stream of %zu bytes)", k, off,
                           prev, stream_bytes);
    prev = off;
  }
  if (nseg == 0 && stream_bytes != 0)
    return ncclzSetError(NCCLZ_ERR_CORRUPT, "huffman: no segments but %zu stream bytes", stream_bytes);
  if (stream_bytes % 4)
    return ncclzSetError(NCCLZ_ERR_CORRUPT, "huffman: bit stream of %zu bytes is not whole words", stream_bytes);
  return NCCLZ_OK;
}

static ncclzStatus decode_segments(const DecodeBook *b, const uint8_t *offsets, const uint8_t *stream,
                                   size_t stream_bytes, size_t seg, ncclzHuffAlphabet a, int32_t *sym, size_t n) {
  size_t nseg = ncclz_ceil_div(n, seg);
  for (size_t k = 0; k < nseg; k++) {
    size_t begin = ncclz_load_u32(offsets + 4 * k);
    size_t end = k + 1 < nseg ? ncclz_load_u32(offsets + 4 * (k + 1)) : stream_bytes;
    BitReader br = {stream + begin, (end - begin) / 4, 0, 0, 0};
    size_t start = k * seg, count = n - start < seg ? n - start : seg;
    ncclzStatus st = decode_segment(b, &br, sym + start, count, a, k);
    if (st != NCCLZ_OK) return st;
  }
  return NCCLZ_OK;
}

/* Parses [lo][m][u] and nseg; returns the head size (through the offsets) through *head. */
static ncclzStatus parse_table(const uint8_t *src, size_t len, uint32_t K, size_t nseg, TableSpan *t, size_t *head) {
  if (len < 8) return ncclzSetError(NCCLZ_ERR_CORRUPT, "huffman: payload of %zu bytes has no code table", len);
  uint32_t w0 = ncclz_load_u32(src);
  t->lo = w0 & 0xFFFFu;
  t->m = w0 >> 16;
  t->u = ncclz_load_u32(src + 4);
  if (t->lo > K || t->m > K - t->lo || t->u > t->m)
    return ncclzSetError(NCCLZ_ERR_CORRUPT, "huffman: code table lo=%u m=%u u=%u exceeds the alphabet of %u", t->lo,
                         t->m, t->u, K);
  size_t table_bytes = 4 * (size_t)ncclz_huff_table_words(t->m, t->u);
  if (len < 8 + table_bytes + 4)
    return ncclzSetError(NCCLZ_ERR_CORRUPT, "huffman: payload of %zu bytes is shorter than its code table", len);
  uint32_t stored_nseg = ncclz_load_u32(src + 8 + table_bytes);
  if (stored_nseg != nseg)
    return ncclzSetError(NCCLZ_ERR_CORRUPT, "huffman: %u segments stored, %zu expected", stored_nseg, nseg);
  *head = 8 + table_bytes + 4 + 4 * nseg;
  if (len < *head)
    return ncclzSetError(NCCLZ_ERR_CORRUPT, "huffman: payload of %zu bytes is shorter than its %zu segment offsets",
                         len, nseg);
  return NCCLZ_OK;
}

static int radius_valid(uint32_t r) { return r >= 1 && r <= NCCLZ_HUFF_MAX_RADIUS && (r & (r - 1)) == 0; }

ncclzStatus ncclzHuffmanDecode(const uint8_t *src, size_t len, const ncclzCoderParams *p,
                               ncclzHuffAlphabet alpha, int32_t *sym, size_t n) {
  size_t seg = p->huffman_segment;
  if (seg == 0) return ncclzSetError(NCCLZ_ERR_CORRUPT, "huffman: segment size is 0");
  if (!radius_valid(alpha.radius))
    return ncclzSetError(NCCLZ_ERR_CORRUPT, "huffman: radius %u is not a power of two in 1..%d", alpha.radius,
                         NCCLZ_HUFF_MAX_RADIUS);
  uint32_t K = ncclz_huff_alphabet_size(alpha.radius);
  TableSpan t = {0, 0, 0};
  size_t nseg = ncclz_ceil_div(n, seg), head = 0;
  ncclzStatus st = parse_table(src, len, K, nseg, &t, &head);
  if (st != NCCLZ_OK) return st;
  st = check_offsets(src + head - 4 * nseg, nseg, len - head);
  if (st != NCCLZ_OK) return st;
  DecodeBook *book = malloc(sizeof(DecodeBook));
  uint8_t *lengths = malloc(K);
  uint16_t *sorted = malloc(sizeof(uint16_t) * K);
  if (!book || !lengths || !sorted) {
    st = ncclzSetError(NCCLZ_ERR_NOMEM, "huffman: cannot allocate the decode tables");
  } else {
    st = read_lengths(src + 8, &t, K, lengths, n);
    if (st == NCCLZ_OK) {
      book->sorted = sorted;
      build_decode_book(book, lengths, K);
      st = decode_segments(book, src + head - 4 * nseg, src + head, len - head, seg, alpha, sym, n);
    }
  }
  free(book);
  free(lengths);
  free(sorted);
  return st;
}
