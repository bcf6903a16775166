/* HUFFMAN format version 2 (FORMAT.md): the dense and sparse code length tables and the
 * variable-length escapes, pinned by hand-computed bytes; escapes at the ends of the int32 range
 * round-trip around any centre; and every table and escape field, when corrupted, is rejected
 * with a message and without a read past the (exact-size) payload. */
#include "ncclz/codecs.h"
#include "../codecs/huff_codebook.h"
#include "testutil.h"

#include <stdlib.h>
#include <string.h>

static void put_u32(uint8_t *p, uint32_t v) {
  for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
}
static uint32_t get_u32(const uint8_t *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

typedef struct {
  uint8_t *bytes;
  size_t len;
  size_t n;
  ncclzHuffAlphabet a;
  ncclzCoderParams p;
} Payload;

static int encode_payload(const int32_t *sym, size_t n, Payload *out) {
  ncclzCoderParamsDefault(&out->p);
  size_t cap = ncclzCoderBound(NCCLZ_CODER_HUFFMAN, &out->p, n);
  out->bytes = malloc(cap);
  out->n = n;
  ncclzStatus st = ncclzHuffmanEncode(sym, n, &out->p, out->bytes, cap, &out->len, &out->a);
  CHECK(st == NCCLZ_OK, "encode %zu symbols: %s", n, ncclzLastError());
  return st == NCCLZ_OK;
}

/* Decodes an exact-size copy of bytes (sanitizers catch any read past it). */
static ncclzStatus decode_copy(const uint8_t *bytes, size_t len, const Payload *pl, int32_t *out) {
  uint8_t *copy = malloc(len ? len : 1);
  memcpy(copy, bytes, len);
  ncclzStatus st = ncclzHuffmanDecode(copy, len, &pl->p, pl->a, out, pl->n);
  free(copy);
  return st;
}

static int same_bytes(const Payload *pl, const uint8_t *want, size_t want_len) {
  return pl->len == want_len && memcmp(pl->bytes, want, want_len) == 0;
}

/* ------------------------------------------------------------ golden bytes */

/* 0,0,40,0: c = 0, d = 40, R = 128; indices 128 and 168, both length 1 (codes 0 and 1). The span
 * m = 41 holds u = 2 lengths: sparse (2 bitmap words + 1 nibble word) beats dense (6 words). */
static void test_sparse_golden(void) {
  const int32_t sym[] = {0, 0, 40, 0};
  const uint8_t want[] = {128, 0, 41, 0, 2, 0, 0, 0,               /* lo, m (u16), u */
                          1,   0, 0, 0, 0,  1, 0, 0,             /* bitmap: bits 0 and 40 */
                          0x11, 0, 0, 0,                         /* nibbles: 1, 1 */
                          1,   0, 0, 0, 0,  0, 0, 0,             /* nseg 1, offset 0 */
                          0x04, 0, 0, 0};                        /* codes 0, 0, 1, 0 */
  Payload pl;
  if (!encode_payload(sym, 4, &pl)) return;
  CHECK(pl.a.centre == 0 && pl.a.radius == 128, "sparse golden alphabet c=%d R=%u", pl.a.centre, pl.a.radius);
  CHECK(same_bytes(&pl, want, sizeof want), "sparse golden bytes differ (len %zu)", pl.len);
  int32_t back[4];
  CHECK(decode_copy(pl.bytes, pl.len, &pl, back) == NCCLZ_OK && memcmp(back, sym, sizeof sym) == 0, "%s",
        ncclzLastError());
  free(pl.bytes);
}

/* 127 zeros and INT32_MAX at position 5: c = 0 (one outlier of 128 samples is trimmed), R = 2;
 * indices 2 and the escape 4 (codes 0 and 1), a dense table of 3 nibbles 1, 0, 1. The escape:
 * z = zigzag(INT32_MAX) = 0xFFFFFFFE, b = 32: count 31 (5 bits), then the 31 bits 0x7FFFFFFE.
 * Stream bits: 5 zeros, 1, 11111, 0, thirty 1s, 122 zeros = 164 bits in 6 words. */
static const uint8_t escape_golden[] = {2,    0,    3,    0,    2, 0, 0, 0, /* lo, m (u16), u */
                                        0x01, 0x01, 0,    0,                         /* nibbles */
                                        1,    0,    0,    0,    0, 0, 0, 0,          /* nseg, offset */
                                        0xE0, 0xF7, 0xFF, 0xFF, 0xFF, 0x03, 0, 0, 0, 0, 0, 0,
                                        0,    0,    0,    0,    0, 0, 0, 0, 0, 0, 0, 0};
#define ESCAPE_GOLDEN_N 128
#define ESCAPE_AT_BIT (20 * 8 + 6) /* the 5-bit count: payload bit 166 */

static void escape_golden_symbols(int32_t *sym) {
  memset(sym, 0, sizeof(int32_t) * ESCAPE_GOLDEN_N);
  sym[5] = INT32_MAX;
}

static void test_escape_golden(void) {
  int32_t sym[ESCAPE_GOLDEN_N], back[ESCAPE_GOLDEN_N];
  escape_golden_symbols(sym);
  Payload pl;
  if (!encode_payload(sym, ESCAPE_GOLDEN_N, &pl)) return;
  CHECK(pl.a.centre == 0 && pl.a.radius == 2, "escape golden alphabet c=%d R=%u", pl.a.centre, pl.a.radius);
  CHECK(same_bytes(&pl, escape_golden, sizeof escape_golden), "escape golden bytes differ (len %zu)", pl.len);
  CHECK(decode_copy(pl.bytes, pl.len, &pl, back) == NCCLZ_OK && memcmp(back, sym, sizeof sym) == 0, "%s",
        ncclzLastError());
  free(pl.bytes);
}

/* ------------------------------------------------------------ field placement */

/* The GPU encoder places a warp's fields at once (ncclz_huff_or_field at the scan of the widths);
 * that must give the bits of one writer putting the fields end to end, here a bit at a time, in
 * any order of placement (the lanes race): 3,000 fields of 1..51 bits, placed back to front. */
static void test_field_placement(void) {
  enum { N = 3000 };
  static uint64_t field[N], pos[N];
  static uint32_t len[N], placed[N * 51 / 32 + 3], serial[N * 51 / 32 + 3];
  uint64_t s = 12345, bit = 0;
  memset(placed, 0, sizeof placed);
  memset(serial, 0, sizeof serial);
  for (int i = 0; i < N; i++) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    len[i] = 1 + (uint32_t)(s >> 58) % 51;
    field[i] = (s ^ (s << 17)) & ((1ull << len[i]) - 1);
    pos[i] = bit;
    for (uint32_t b = 0; b < len[i]; b++, bit++)
      if (field[i] >> b & 1) serial[bit >> 5] |= 1u << (bit & 31);
  }
  for (int i = N - 1; i >= 0; i--) ncclz_huff_or_field(placed, pos[i], field[i], len[i]);
  CHECK(memcmp(placed, serial, sizeof placed) == 0, "fields placed at their scan positions differ from one writer");
}

/* ------------------------------------------------------------ escapes at the extremes */

/* The escape field's size for a few offsets, including the 32-bit wrap: INT32_MIN + 1 seen from
 * a centre at INT32_MAX is 2 steps away modulo 2^32. */
static void test_escape_sizes(void) {
  CHECK(ncclz_huff_escape_bits(ncclz_huff_escape_z(INT32_MAX, 0)) == 36, "INT32_MAX from 0");
  CHECK(ncclz_huff_escape_bits(ncclz_huff_escape_z(INT32_MIN + 1, 0)) == 36, "INT32_MIN+1 from 0");
  CHECK(ncclz_huff_escape_z(INT32_MIN + 1, INT32_MAX) == 4, "wrap: z %u", ncclz_huff_escape_z(INT32_MIN + 1, INT32_MAX));
  CHECK(ncclz_huff_escape_bits(ncclz_huff_escape_z(5000, 0)) == 5 + 13, "5000 from 0: z 10000, 14 bits");
  /* Every z round-trips through the field's arithmetic around assorted centres. */
  static const int32_t centres[] = {0, -7, INT32_MAX, INT32_MIN + 1, 1 << 30};
  static const int32_t ends[] = {INT32_MAX, INT32_MIN + 1, INT32_MIN, 0};
  uint64_t rng = 5;
  int ok = 1;
  for (int c = 0; c < 5; c++)
    for (int i = 0; i < 100000; i++) {
      int32_t s = i < 4 ? ends[i] : (int32_t)(uint32_t)tu_rand(&rng);
      ok &= ncclz_huff_unescape(ncclz_huff_escape_z(s, centres[c]), centres[c]) == s;
    }
  CHECK(ok, "zigzag offsets round-trip");
}

/* A bulk of `bulk` values (so the sample centres the window there, R = 2) with the extremes at
 * positions the sample does not visit (n = 4096 samples every 4th), coded and decoded. */
static void roundtrip_around(int32_t bulk) {
  enum { N = 4096 };
  static const int32_t far[] = {INT32_MAX, INT32_MIN + 1, INT32_MIN, INT32_MAX - 1, INT32_MIN + 2, 0, -1, 1 << 30};
  int32_t *sym = malloc(sizeof(int32_t) * N), *back = malloc(sizeof(int32_t) * N);
  for (int i = 0; i < N; i++) sym[i] = i % 4 == 1 ? far[(i / 4) % 8] : bulk;
  Payload pl;
  if (encode_payload(sym, N, &pl)) {
    CHECK(pl.a.centre == bulk && pl.a.radius == 2, "bulk %d: c=%d R=%u", bulk, pl.a.centre, pl.a.radius);
    CHECK(decode_copy(pl.bytes, pl.len, &pl, back) == NCCLZ_OK && memcmp(back, sym, sizeof(int32_t) * N) == 0,
          "bulk %d: round trip: %s", bulk, ncclzLastError());
    free(pl.bytes);
  }
  free(sym);
  free(back);
}

static void test_escape_extremes(void) {
  static const int32_t bulks[] = {0, INT32_MAX, INT32_MIN + 1, INT32_MAX - 1, -123456, 1 << 30};
  for (int b = 0; b < 6; b++) roundtrip_around(bulks[b]);
}

/* ------------------------------------------------------------ corrupt fields */

/* Edits `bytes` with `edit`, decodes, and wants NCCLZ_ERR_CORRUPT with `want` in the message
 * (NULL: any message). */
static void expect_corrupt(const Payload *pl, const uint8_t *bytes, size_t len, const char *what, const char *want) {
  int32_t *out = malloc(sizeof(int32_t) * (pl->n + 1));
  ncclzStatus st = decode_copy(bytes, len, pl, out);
  CHECK(st == NCCLZ_ERR_CORRUPT && (!want || strstr(ncclzLastError(), want)), "%s: status %d \"%s\" (want \"%s\")", what,
        (int)st, ncclzLastError(), want ? want : "any");
  free(out);
}

/* A frame with a sparse table whose bitmap and nibble areas both end in padding. */
static int sparse_payload(Payload *pl, uint32_t *lo, uint32_t *m, uint32_t *u) {
  enum { N = 3000 };
  int32_t sym[N];
  uint64_t rng = 3;
  for (int i = 0; i < N; i++) sym[i] = 97 * (int32_t)(tu_rand(&rng) % 61) - 2900;
  if (!encode_payload(sym, N, pl)) return 0;
  *lo = get_u32(pl->bytes) & 0xFFFF;
  *m = get_u32(pl->bytes) >> 16;
  *u = get_u32(pl->bytes + 4);
  CHECK(ncclz_huff_table_sparse(*m, *u) && *m % 32 && *u % 8, "sparse test table: m=%u u=%u", *m, *u);
  return ncclz_huff_table_sparse(*m, *u) && *m % 32 && *u % 8;
}

static void test_corrupt_sparse(void) {
  Payload pl;
  uint32_t lo, m, u;
  if (!sparse_payload(&pl, &lo, &m, &u)) return;
  uint8_t *c = malloc(pl.len);
  const size_t bitmap = 8, nibbles = 8 + 4 * (size_t)ncclz_huff_bitmap_words(m, u);
  uint32_t K = ncclz_huff_alphabet_size(pl.a.radius), unused = 1;
  while (unused < m && (pl.bytes[bitmap + unused / 8] >> (unused % 8) & 1)) unused++;
  struct {
    size_t at;
    uint32_t word;
    const char *what, *want;
  } edits[] = {
      {0, ncclz_huff_table_word0(lo, K - lo + 1), "m past the alphabet", "exceeds the alphabet"},
      {0, ncclz_huff_table_word0(K + 1, m), "lo past the alphabet", "exceeds the alphabet"},
      {0, ncclz_huff_table_word0(lo, 0xFFFF), "huge m", "exceeds the alphabet"},
      {0, 0xFFFFFFFFu, "huge lo and m", "exceeds the alphabet"},
      {4, m + 1, "u > m", "exceeds the alphabet"},
      {4, 0xFFFFFFFFu, "huge u", "exceeds the alphabet"},
      {4, u + 1, "u one more than the bitmap", NULL},
      {4, u - 1, "u one less than the bitmap", NULL},
  };
  for (size_t e = 0; e < sizeof edits / sizeof edits[0]; e++) {
    memcpy(c, pl.bytes, pl.len);
    put_u32(c + edits[e].at, edits[e].word);
    expect_corrupt(&pl, c, pl.len, edits[e].what, edits[e].want);
  }
  memcpy(c, pl.bytes, pl.len); /* an unused index marked present: one bit too many */
  c[bitmap + unused / 8] |= (uint8_t)(1u << (unused % 8));
  expect_corrupt(&pl, c, pl.len, "extra bitmap bit", "presence bitmap has more");
  memcpy(c, pl.bytes, pl.len); /* the first present index cleared: one bit too few */
  c[bitmap] &= 0xFE;
  expect_corrupt(&pl, c, pl.len, "missing bitmap bit", "bits set, the table header says");
  memcpy(c, pl.bytes, pl.len); /* a padding bit after bit m: not counted, refused */
  c[bitmap + m / 8] |= (uint8_t)(1u << (m % 8));
  expect_corrupt(&pl, c, pl.len, "bitmap padding", "padding after the");
  memcpy(c, pl.bytes, pl.len);
  c[nibbles] &= 0xF0; /* the first present index gets length 0 */
  expect_corrupt(&pl, c, pl.len, "zero nibble", "marked present but has code length 0");
  memcpy(c, pl.bytes, pl.len);
  c[nibbles + u / 2] |= (uint8_t)(u % 2 ? 0x10 : 0x01); /* the first padding nibble */
  expect_corrupt(&pl, c, pl.len, "nibble padding", "nonzero padding after the");
  memcpy(c, pl.bytes, pl.len);
  c[nibbles] = (uint8_t)((c[nibbles] & 0xF0) | 1); /* a length of 1 oversubscribes the code */
  expect_corrupt(&pl, c, pl.len, "Kraft", "Kraft");
  for (size_t cut = 1; cut <= nibbles + 8; cut++) /* truncated inside the table */
    expect_corrupt(&pl, pl.bytes, nibbles + 8 - cut, "truncated table", NULL);
  free(c);
  free(pl.bytes);
}

static void test_corrupt_dense(void) {
  int32_t sym[ESCAPE_GOLDEN_N];
  escape_golden_symbols(sym);
  Payload pl;
  if (!encode_payload(sym, ESCAPE_GOLDEN_N, &pl)) return;
  uint8_t *c = malloc(pl.len);
  memcpy(c, pl.bytes, pl.len);
  put_u32(c + 4, 3); /* u = 3 = m: still dense, but only 2 lengths are nonzero */
  expect_corrupt(&pl, c, pl.len, "dense count", "2 nonzero code lengths, the table header says 3");
  memcpy(c, pl.bytes, pl.len);
  c[9] |= 0x10; /* the padding nibble after the third */
  expect_corrupt(&pl, c, pl.len, "dense padding", "nonzero padding after the 3 code lengths");
  free(c);
  free(pl.bytes);
}

static void set_bits(uint8_t *p, size_t at, uint32_t v, uint32_t len) {
  for (uint32_t i = 0; i < len; i++) {
    size_t b = at + i;
    p[b / 8] = (uint8_t)((p[b / 8] & ~(1u << (b % 8))) | ((v >> i) & 1u) << (b % 8));
  }
}

/* The escape's count field: a count too small for an escape decodes to a symbol that has its own
 * code and is refused. Other counts re-parse the rest of the segment: they end in a refusal or,
 * since this stream's tail of 1-bit zero codes absorbs the shift, in other symbols (which the
 * frame's payload check catches); never in a read past the payload. An offset that lands on the
 * fill code is refused too. */
static void test_corrupt_escape(void) {
  int32_t sym[ESCAPE_GOLDEN_N];
  escape_golden_symbols(sym);
  Payload pl;
  if (!encode_payload(sym, ESCAPE_GOLDEN_N, &pl) || !same_bytes(&pl, escape_golden, sizeof escape_golden)) return;
  uint8_t c[sizeof escape_golden];
  char what[64];
  int32_t back[ESCAPE_GOLDEN_N];
  for (uint32_t count = 0; count < 31; count++) {
    memcpy(c, escape_golden, sizeof c);
    set_bits(c, ESCAPE_AT_BIT, count, 5);
    snprintf(what, sizeof what, "escape count %u", count);
    if (count < 2) {
      expect_corrupt(&pl, c, sizeof c, what, "which has its own code");
      continue;
    }
    ncclzStatus st = decode_copy(c, sizeof c, &pl, back);
    CHECK(st == NCCLZ_ERR_CORRUPT || (st == NCCLZ_OK && memcmp(back, sym, sizeof back) != 0), "%s: status %d", what,
          (int)st);
  }
  memcpy(c, escape_golden, sizeof c);
  set_bits(c, ESCAPE_AT_BIT + 5, 1, 1); /* z = 0xFFFFFFFF: INT32_MIN, the fill code */
  expect_corrupt(&pl, c, sizeof c, "escape to the fill code", "which has its own code");
  memcpy(c, escape_golden, sizeof c);
  set_bits(c, ESCAPE_AT_BIT, 1, 5); /* count 1, z = 2 or 3: 1 or -2, inside the window */
  expect_corrupt(&pl, c, sizeof c, "escape into the window", "which has its own code");
  /* The last escape of a segment running past its end: count 31 with only 2 words left. */
  int32_t tail[ESCAPE_GOLDEN_N];
  memset(tail, 0, sizeof tail);
  tail[ESCAPE_GOLDEN_N - 1] = INT32_MAX;
  Payload pt;
  if (encode_payload(tail, ESCAPE_GOLDEN_N, &pt)) {
    for (size_t cut = 4; cut <= 8; cut += 4) expect_corrupt(&pt, pt.bytes, pt.len - cut, "escape past the end", NULL);
    free(pt.bytes);
  }
  free(pl.bytes);
}

/* ------------------------------------------------------------ the tree builder */

/* The tree by another route: one list of the nodes not yet merged, ordered by weight with a new
 * node after every node no heavier than it (leaves win ties, as in the two-queue merge); each
 * step merges the list's first two. The definition ncclz_huff_tree_parents must reproduce node
 * for node, whatever it does to be faster (three variants with the queue heads in registers
 * passed such a check and failed test_gpu_huffbook on the device: run both after touching it). */
static void list_tree_parents(const uint64_t *key, uint32_t m, uint64_t *weight, uint32_t *node) {
  uint32_t *id = malloc(sizeof *id * 2 * m);
  uint64_t *w = malloc(sizeof *w * 2 * m);
  if (!id || !w) goto done;
  for (uint32_t i = 0; i < m; i++) id[i] = i, w[i] = key[i] >> 32;
  for (uint32_t t = 0, len = m; t + 1 < m; t++, len++) {
    const uint64_t sum = w[2 * t] + w[2 * t + 1];
    node[id[2 * t]] = node[id[2 * t + 1]] = m + t;
    weight[t] = sum;
    uint32_t at = len; /* after every unmerged node no heavier than the new one */
    while (at > 2 * t + 2 && w[at - 1] > sum) at--;
    memmove(id + at + 1, id + at, sizeof *id * (len - at));
    memmove(w + at + 1, w + at, sizeof *w * (len - at));
    id[at] = m + t, w[at] = sum;
  }
  node[2 * m - 2] = 2 * m - 2;
done:
  free(id);
  free(w);
}

/* Sorted leaves with many ties (weights from a few values), skewed and flat weights, from 2 to
 * the largest alphabet: the same parents and internal weights as the merged-list construction. */
static void test_tree_matches_plain_merge(void) {
  enum { M = NCCLZ_HUFF_MAX_SYMS };
  uint64_t *key = malloc(sizeof(uint64_t) * M), *tmp = malloc(sizeof(uint64_t) * M);
  uint64_t *w0 = malloc(sizeof(uint64_t) * M), *w1 = malloc(sizeof(uint64_t) * M);
  uint32_t *n0 = malloc(sizeof(uint32_t) * 2 * M), *n1 = malloc(sizeof(uint32_t) * 2 * M);
  uint64_t rng = 0x5eed;
  int differ = 0, trees = 0;
  for (int it = 0; it < 3000; it++) {
    uint32_t m = it < 40 ? 2 + (uint32_t)it : 2 + (uint32_t)(tu_rand(&rng) % (it % 10 == 0 ? M - 1 : 600));
    int shape = it % 4;
    for (uint32_t i = 0; i < m; i++) {
      uint64_t r = tu_rand(&rng), q;
      if (shape == 0) q = 1 + r % 3;                       /* few distinct weights: ties everywhere */
      else if (shape == 1) q = 1 + (r % 1000) * (r % 1000); /* skewed */
      else if (shape == 2) q = 1ull << (r % 20);            /* powers of two: internal ties */
      else q = 1 + r % (1u << 20);
      key[i] = q << 32 | i;
    }
    ncclz_huff_sort(key, tmp, m);
    for (uint32_t i = 0; i < 2 * m; i++) n0[i] = n1[i] = 0xDEADBEEFu;
    for (uint32_t i = 0; i < m; i++) w0[i] = w1[i] = 0xABCDull * (i + 7); /* garbage, the same in both */
    list_tree_parents(key, m, w0, n0);
    ncclz_huff_tree_parents(key, m, w1, n1);
    int same = memcmp(n0, n1, sizeof(uint32_t) * (2 * m - 1)) == 0 && memcmp(w0, w1, sizeof(uint64_t) * (m - 1)) == 0;
    differ += !same;
    trees++;
  }
  CHECK(differ == 0, "tree builder: %d of %d trees differ from the merged-list construction", differ, trees);
  free(key), free(tmp), free(w0), free(w1), free(n0), free(n1);
}

/* The fixed point as a block of `threads` runs it (each thread its part of every round,
 * ncclz_huff_fp_part, from the first pair sum the last round changed; rounds until none
 * changes): the two-queue merge's parents. Returns the rounds, 0 if they did not stop. */
static int fixpoint_parents(const uint64_t *key, uint32_t m, uint32_t threads, uint32_t *icur, uint32_t *inext,
                            uint32_t *node) {
  for (uint32_t t = 0; t + 1 < m; t++) icur[t] = NCCLZ_HUFF_FP_INF;
  uint32_t settled = 0;
  for (int round = 1; round <= (int)m; round++) { /* each round settles at least one more pair sum */
    uint32_t first = NCCLZ_HUFF_FP_INF;
    for (uint32_t part = 0; part < threads; part++) {
      const uint32_t f = ncclz_huff_fp_part(key, m, settled, icur, inext, node, part, threads);
      first = f < first ? f : first;
    }
    uint32_t *t = icur;
    icur = inext, inext = t;
    if (first == NCCLZ_HUFF_FP_INF) {
      node[2 * m - 2] = 2 * m - 2;
      return round;
    }
    settled = first;
  }
  return 0;
}

/* The fixed point gives the serial merge's parents on the same trees, for block sizes of the
 * code book (1,024 threads), the planner (256) and a few odd ones. */
static void test_fixpoint_matches_merge(void) {
  enum { M = NCCLZ_HUFF_MAX_SYMS };
  uint64_t *key = malloc(sizeof(uint64_t) * M), *tmp = malloc(sizeof(uint64_t) * M), *w = malloc(sizeof(uint64_t) * M);
  uint32_t *n0 = malloc(sizeof(uint32_t) * 2 * M), *n1 = malloc(sizeof(uint32_t) * 2 * M);
  uint32_t *i0 = malloc(sizeof(uint32_t) * M), *i1 = malloc(sizeof(uint32_t) * M);
  const uint32_t blocks[] = {1024, 256, 1, 7, 100};
  uint64_t rng = 0xf1c5;
  int differ = 0, trees = 0, stuck = 0, most = 0;
  for (int it = 0; it < 2000; it++) {
    uint32_t m = it < 40 ? 2 + (uint32_t)it : 2 + (uint32_t)(tu_rand(&rng) % (it % 10 == 0 ? M - 1 : 600));
    int shape = it % 4;
    for (uint32_t i = 0; i < m; i++) {
      uint64_t r = tu_rand(&rng), q;
      if (shape == 0) q = 1 + r % 3;
      else if (shape == 1) q = 1 + (r % 1000) * (r % 1000);
      else if (shape == 2) q = 1ull << (r % 20);
      else q = 1 + r % (1u << 20);
      key[i] = q << 32 | i;
    }
    ncclz_huff_sort(key, tmp, m);
    ncclz_huff_tree_parents(key, m, w, n0);
    const uint32_t threads = blocks[it % 5];
    for (uint32_t i = 0; i < 2 * m; i++) n1[i] = 0xDEADBEEFu;
    const int rounds = fixpoint_parents(key, m, threads, i0, i1, n1);
    stuck += rounds == 0;
    most = rounds > most ? rounds : most;
    differ += memcmp(n0, n1, sizeof(uint32_t) * (2 * m - 1)) != 0;
    trees++;
  }
  printf("fixed-point tree: %d trees, at most %d rounds\n", trees, most);
  CHECK(stuck == 0, "fixed-point tree: %d of %d trees did not settle in m rounds", stuck, trees);
  CHECK(differ == 0, "fixed-point tree: %d of %d trees differ from the two-queue merge", differ, trees);
  free(key), free(tmp), free(w), free(n0), free(n1), free(i0), free(i1);
}

/* The length limiter's rule one step at a time, as FORMAT.md states it (step 3). */
static void limit_by_steps(uint32_t *count, uint32_t max_len) {
  uint64_t kraft = 0;
  for (uint32_t len = 1; len <= max_len; len++) kraft += (uint64_t)count[len] << (max_len - len);
  while (kraft > (1ull << max_len)) {
    count[max_len]--;
    for (uint32_t i = max_len - 1; i > 0; i--) {
      if (count[i]) {
        count[i]--;
        count[i + 1] += 2;
        break;
      }
    }
    kraft--;
  }
}

/* ncclz_huff_limit, which takes runs of steps at once, against the rule step by step: count
 * tables of clamped depths, as a tree deeper than the limit leaves them: codes at random lengths
 * that fit, then up to 3,000 more at the limit (an excess of up to 3,000 steps), limits 1 to 31. */
static void test_limit_matches_steps(void) {
  uint64_t rng = 0x11717;
  int differ = 0, cases = 0;
  for (int it = 0; it < 20000; it++) {
    const uint32_t max_len = it < 31 ? 1 + (uint32_t)it : 1 + (uint32_t)(tu_rand(&rng) % 31);
    const uint64_t cap = 1ull << max_len;
    uint32_t a[NCCLZ_HUFF_LEN_LIMIT + 2] = {0}, b[NCCLZ_HUFF_LEN_LIMIT + 2] = {0};
    uint64_t kraft = 0;
    for (int k = 0; k < 400; k++) {
      const uint32_t len = 1 + (uint32_t)(tu_rand(&rng) % max_len);
      if (kraft + (cap >> len) <= cap) a[len]++, kraft += cap >> len;
    }
    const uint32_t extra = 1 + (uint32_t)(tu_rand(&rng) % 3000);
    a[max_len] += extra;
    kraft += extra;
    if (kraft <= cap) continue;
    memcpy(b, a, sizeof a);
    ncclz_huff_limit(a, max_len, 1);
    limit_by_steps(b, max_len);
    differ += memcmp(a, b, sizeof a) != 0;
    cases++;
  }
  printf("length limiter: %d over-full count tables, %d differ from the rule step by step\n", cases, differ);
  CHECK(cases > 10000, "length limiter: too few over-full tables (%d)", cases);
  CHECK(differ == 0, "length limiter: %d of %d count tables differ from the rule step by step", differ, cases);
}

int main(void) {
  test_limit_matches_steps();
  test_fixpoint_matches_merge();
  test_field_placement();
  test_sparse_golden();
  test_escape_golden();
  test_escape_sizes();
  test_escape_extremes();
  test_corrupt_sparse();
  test_corrupt_dense();
  test_corrupt_escape();
  test_tree_matches_plain_merge();
  return tu_finish("test_huffman_format");
}
