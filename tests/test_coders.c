/* The lossless coders: bit-exact round trips on synthetic and real data, golden bytes that pin
 * the format, FIXEDLEN's size formula, HUFFMAN's code-length rules, clean failure on truncated
 * input, and a small CPU throughput report. */
#include "ncclz/codecs.h"
#include "../codecs/huff_codebook.h"
#include "testutil.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { D_GAUSS, D_WIDE, D_EQUAL, D_ZERO, D_EXTREME, D_ESCAPES, D_FILL, D_LOW_EDGE, D_FAR, D_HIGH_EDGE, D_SPARSE, D_COUNT };
static const char *const dist_names[D_COUNT] = {"gauss",    "wide", "equal",    "zero",      "extreme", "escapes",
                                                "fill",     "low-edge", "far", "high-edge", "sparse"};
static const size_t sizes[] = {0, 1, 31, 32, 33, 1000, 8191, 8193, 100003};

static int32_t small_gauss(uint64_t *rng, double sigma) {
  double s = 0;
  for (int k = 0; k < 4; k++) s += tu_uniform(rng) - 0.5;
  return (int32_t)floor(s * sigma * 1.7320508 + 0.5);
}

static int32_t draw(int dist, uint64_t *rng) {
  static const int32_t extremes[] = {INT32_MIN, INT32_MAX, 0, -1, INT32_MIN + 1, INT32_MAX - 1};
  /* Escapes whose offsets from a centre near 0 need all 32 bits of the zigzag (and 31, 30). */
  static const int32_t far[] = {INT32_MAX, INT32_MIN + 1, INT32_MAX - 1, INT32_MIN + 2, 1 << 30, -(1 << 30), 12345};
  switch (dist) {
  case D_GAUSS: return small_gauss(rng, 3.0);
  case D_WIDE: return (int32_t)(uint32_t)tu_rand(rng);
  case D_EQUAL: return 12345;
  case D_ZERO: return 0;
  case D_EXTREME: return extremes[tu_rand(rng) % 6];
  case D_ESCAPES: return tu_uniform(rng) < 0.3 ? (int32_t)(uint32_t)tu_rand(rng) : small_gauss(rng, 20.0);
  case D_FILL: return tu_uniform(rng) < 0.1 ? NCCLZ_FILL_CODE : small_gauss(rng, 100.0);
  case D_LOW_EDGE: return tu_uniform(rng) < 0.2 ? INT32_MIN : INT32_MIN + 1 + (int32_t)(tu_rand(rng) % 40);
  case D_FAR: return tu_uniform(rng) < 0.1 ? far[tu_rand(rng) % 7] : small_gauss(rng, 3.0);
  /* A centre near INT32_MAX: escapes at the other end wrap around in the 32-bit offset. */
  case D_HIGH_EDGE: return tu_uniform(rng) < 0.1 ? (tu_rand(rng) & 1 ? INT32_MIN : INT32_MIN + 1)
                                                 : INT32_MAX - (int32_t)(tu_rand(rng) % 40);
  /* Few values spread over a wide window: the sparse length table. */
  default: return 97 * (int32_t)(tu_rand(rng) % 61) - 2900;
  }
}

static void generate(int dist, size_t n, uint64_t seed, int32_t *out) {
  uint64_t rng = seed * 0x9E3779B97F4A7C15ull + (uint64_t)dist + 1;
  for (size_t i = 0; i < n; i++) out[i] = draw(dist, &rng);
}

/* ------------------------------------------------------------ round trips */

static ncclzStatus encode(ncclzCoder c, const int32_t *sym, size_t n, const ncclzCoderParams *p, uint8_t *dst,
                          size_t cap, size_t *len, ncclzHuffAlphabet *a) {
  switch (c) {
  case NCCLZ_CODER_RAW: return ncclzRawEncode(sym, n, dst, cap, len);
  case NCCLZ_CODER_FIXEDLEN: return ncclzFixedlenEncode(sym, n, p, dst, cap, len);
  default: return ncclzHuffmanEncode(sym, n, p, dst, cap, len, a);
  }
}

static ncclzStatus decode(ncclzCoder c, const uint8_t *src, size_t len, const ncclzCoderParams *p,
                          ncclzHuffAlphabet a, int32_t *sym, size_t n) {
  switch (c) {
  case NCCLZ_CODER_RAW: return ncclzRawDecode(src, len, sym, n);
  case NCCLZ_CODER_FIXEDLEN: return ncclzFixedlenDecode(src, len, p, sym, n);
  default: return ncclzHuffmanDecode(src, len, p, a, sym, n);
  }
}

/* FORMAT.md: 4*ceil(5nb/32) + 4nt + 4*sum(w), with w = 31 stored as 32. */
static size_t fixedlen_expected_size(const int32_t *sym, size_t n, uint32_t tile) {
  if (n == 0) return 0;
  size_t nb = (n + 31) / 32, nt = (nb + tile - 1) / tile, words = 0;
  for (size_t b = 0; b < nb; b++) {
    uint32_t any = 0;
    for (size_t i = b * 32; i < n && i < b * 32 + 32; i++) any |= ((uint32_t)sym[i] << 1) ^ (uint32_t)(sym[i] >> 31);
    uint32_t w = 0;
    while (w < 32 && any >> w) w++;
    words += w == 31 ? 32 : w;
  }
  return 4 * ((5 * nb + 31) / 32) + 4 * nt + 4 * words;
}

/* Decoding a copy that lacks its last byte (or last word) must fail cleanly: the copy is an
 * exact-size allocation, so a sanitizer build catches any read past it. */
static void check_truncated(ncclzCoder c, const uint8_t *enc, size_t len, const ncclzCoderParams *p,
                            ncclzHuffAlphabet a, int32_t *out, size_t n, const char *what) {
  for (size_t cut = 1; cut <= 4 && cut <= len; cut += 3) {
    uint8_t *copy = malloc(len - cut + 1);
    memcpy(copy, enc, len - cut);
    ncclzStatus st = decode(c, copy, len - cut, p, a, out, n);
    CHECK(st == NCCLZ_ERR_CORRUPT, "%s: decoding %zu of %zu bytes gave %d", what, len - cut, len, (int)st);
    free(copy);
  }
}

static void roundtrip(ncclzCoder c, const int32_t *sym, size_t n, const ncclzCoderParams *p, const char *what) {
  size_t bound = ncclzCoderBound(c, p, n), len = 0;
  uint8_t *enc = malloc(bound + 1);
  ncclzHuffAlphabet a = {0, 0};
  ncclzStatus st = encode(c, sym, n, p, enc, bound, &len, &a);
  CHECK(st == NCCLZ_OK, "%s/%s n=%zu: encode: %s", ncclzCoderName(c), what, n, ncclzLastError());
  if (st != NCCLZ_OK) {
    free(enc);
    return;
  }
  CHECK(len <= bound, "%s/%s n=%zu: %zu bytes exceed the bound %zu", ncclzCoderName(c), what, n, len, bound);
  if (c == NCCLZ_CODER_FIXEDLEN) {
    size_t want = fixedlen_expected_size(sym, n, p->fixedlen_tile_blocks);
    CHECK(len == want, "fixedlen/%s n=%zu: size %zu, formula %zu", what, n, len, want);
  }
  uint8_t *exact = malloc(len + 1); /* exact-size copy: sanitizers catch over-reads */
  memcpy(exact, enc, len);
  int32_t *out = malloc(sizeof(int32_t) * (n + 1));
  st = decode(c, exact, len, p, a, out, n);
  CHECK(st == NCCLZ_OK, "%s/%s n=%zu: decode: %s", ncclzCoderName(c), what, n, ncclzLastError());
  CHECK(st != NCCLZ_OK || memcmp(out, sym, sizeof(int32_t) * n) == 0, "%s/%s n=%zu: symbols differ",
        ncclzCoderName(c), what, n);
  if (len > 0) {
    size_t small = 0;
    st = encode(c, sym, n, p, enc, len - 1, &small, &a);
    CHECK(st == NCCLZ_ERR_CAPACITY, "%s/%s n=%zu: encode into %zu bytes gave %d", ncclzCoderName(c), what, n,
          len - 1, (int)st);
    check_truncated(c, exact, len, p, a, out, n, what);
  }
  free(exact);
  free(out);
  free(enc);
}

static void test_synthetic(void) {
  ncclzCoderParams defaults, tiny;
  ncclzCoderParamsDefault(&defaults);
  tiny.fixedlen_tile_blocks = 3;
  tiny.huffman_segment = 7;
  int32_t *sym = malloc(sizeof(int32_t) * 100003);
  for (int d = 0; d < D_COUNT; d++) {
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
      size_t n = sizes[k];
      generate(d, n, k, sym);
      for (int c = 0; c < NCCLZ_CODER_COUNT; c++) {
        roundtrip((ncclzCoder)c, sym, n, &defaults, dist_names[d]);
        if (n <= 8193) roundtrip((ncclzCoder)c, sym, n, &tiny, dist_names[d]);
      }
    }
  }
  free(sym);
}

/* ------------------------------------------------------------ real data */

static float *load_floats(const char *name, size_t *n) {
  size_t bytes = 0;
  float *x = tu_read_file(name, &bytes);
  CHECK(x != NULL, "cannot read %s", name);
  *n = x ? bytes / 4 : 0;
  return x;
}

/* Error-bounded codes (round(x / 2eb)) followed by 1D deltas, the usual coder input. Fill
 * values (|x| > 1e30, as in pop_ocean) get the fill code and do not take part in prediction. */
static void quantize_deltas(const float *x, size_t n, double eb, int32_t *sym) {
  int32_t prev = 0;
  for (size_t i = 0; i < n; i++) {
    if (fabsf(x[i]) > 1e30f) {
      sym[i] = NCCLZ_FILL_CODE;
      continue;
    }
    int32_t code = (int32_t)floor((double)x[i] / (2 * eb) + 0.5);
    sym[i] = code - prev;
    prev = code;
  }
}

static void test_real_data(void) {
  static const char *const files[] = {"trefht_member57_8x64x128.f32", "pop_ocean_t_384x320.f32",
                                      "resnet18_rank0_64k.f32", "gpt_rank0_64k.f32"};
  static const double ebs[] = {0.01, 0.01, 1e-5, 1e-4};
  ncclzCoderParams p;
  ncclzCoderParamsDefault(&p);
  for (size_t f = 0; f < 4; f++) {
    size_t n = 0;
    float *x = load_floats(files[f], &n);
    if (!x) continue;
    int32_t *sym = malloc(sizeof(int32_t) * n);
    for (int mode = 0; mode < 2; mode++) {
      if (mode == 0) {
        quantize_deltas(x, n, ebs[f], sym);
      } else {
        memcpy(sym, x, sizeof(int32_t) * n); /* quant none: the float bits */
      }
      for (int c = 0; c < NCCLZ_CODER_COUNT; c++) {
        roundtrip((ncclzCoder)c, sym, n, &p, files[f]);
        roundtrip((ncclzCoder)c, sym, 8193 < n ? 8193 : n, &p, files[f]);
      }
    }
    free(sym);
    free(x);
  }
}

/* ------------------------------------------------------------ golden bytes */

/* A hand-computed HUFFMAN payload: symbols 0,0,0,1,1,2 -> median c = 0, spread d = 2, R = 8,
 * indices 8,9,10 with lengths 1,2,2 and codes 0, 10, 11: [lo 8, m 3 (u16 each)][u 3], a dense
 * table (three nibbles; the sparse one would need a bitmap word more), nseg 1, offset 0, the
 * stream. */
static void test_huffman_golden(void) {
  const int32_t sym[] = {0, 0, 0, 1, 1, 2};
  const uint8_t want[] = {8, 0, 3, 0, 3, 0, 0, 0, 0x21, 0x02, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0xA8, 0x01, 0, 0};
  ncclzCoderParams p;
  ncclzCoderParamsDefault(&p);
  uint8_t buf[64];
  size_t len = 0;
  ncclzHuffAlphabet a;
  CHECK(ncclzHuffmanEncode(sym, 6, &p, buf, sizeof buf, &len, &a) == NCCLZ_OK, "%s", ncclzLastError());
  CHECK(a.centre == 0 && a.radius == 8, "alphabet c=%d R=%u", a.centre, a.radius);
  CHECK(len == sizeof want && memcmp(buf, want, sizeof want) == 0, "huffman golden bytes differ (len %zu)", len);
  /* n = 0: lo = 0, m = 0, u = 0, nseg = 0. */
  CHECK(ncclzHuffmanEncode(sym, 0, &p, buf, sizeof buf, &len, &a) == NCCLZ_OK && len == 12, "empty huffman len %zu", len);
  /* The alphabet rule: sample median as centre, radius the power of two >= 2 (spread + 1). */
  const int32_t two[] = {-3, 4}, neg[] = {-5, -2}, wide[] = {-100000, 100000}, full[] = {INT32_MIN + 1, INT32_MAX},
                one[] = {7, 7};
  ncclzHuffAlphabet w = ncclzHuffChooseAlphabet(two, 2);
  CHECK(w.centre == -3 && w.radius == 16, "alphabet(-3,4) = %d,%u", w.centre, w.radius); /* d = 7 */
  w = ncclzHuffChooseAlphabet(neg, 2);
  CHECK(w.centre == -5 && w.radius == 8, "alphabet(-5,-2) = %d,%u", w.centre, w.radius); /* d = 3 */
  w = ncclzHuffChooseAlphabet(wide, 2);
  CHECK(w.centre == -100000 && w.radius == NCCLZ_HUFF_MAX_RADIUS, "alphabet capped: %u", w.radius);
  w = ncclzHuffChooseAlphabet(full, 2);
  CHECK(w.centre == INT32_MIN + 1 && w.radius == NCCLZ_HUFF_MAX_RADIUS, "alphabet full range: %d,%u", w.centre, w.radius);
  w = ncclzHuffChooseAlphabet(one, 2);
  CHECK(w.centre == 7 && w.radius == 2, "alphabet single: %d,%u", w.centre, w.radius);
  /* One huge symbol (a slab's first Lorenzo delta) must not move the window off the bulk. */
  int32_t bulk[3000];
  uint64_t rng = 11;
  for (int i = 0; i < 3000; i++) bulk[i] = small_gauss(&rng, 3.0);
  bulk[1] = 14500; /* not a sampled position: escaped, not stretching the window */
  w = ncclzHuffChooseAlphabet(bulk, 3000);
  CHECK(w.centre >= -1 && w.centre <= 1 && w.radius <= 64, "outlier: c=%d R=%u", w.centre, w.radius);
  /* Fill codes get their own short code, no 32 raw bits: 1000 fills + 1000 zeros code in ~2000 bits. */
  int32_t fills[2000];
  for (int i = 0; i < 2000; i++) fills[i] = i % 2 ? NCCLZ_FILL_CODE : 0;
  int32_t back[2000];
  uint8_t fbuf[4096];
  CHECK(ncclzHuffmanEncode(fills, 2000, &p, fbuf, sizeof fbuf, &len, &a) == NCCLZ_OK && len < 400, "fill frame %zu bytes", len);
  CHECK(ncclzHuffmanDecode(fbuf, len, &p, a, back, 2000) == NCCLZ_OK && memcmp(back, fills, sizeof fills) == 0,
        "fill codes round trip");
}

/* FIXEDLEN bit planes against a naive packing, and the width-31-stored-as-32 rule. */
static void test_fixedlen_golden(void) {
  int32_t sym[40];
  uint64_t rng = 7;
  for (int i = 0; i < 40; i++) sym[i] = small_gauss(&rng, 200.0);
  ncclzCoderParams p = {1, 1024};
  uint8_t buf[1024];
  size_t len = 0;
  CHECK(ncclzFixedlenEncode(sym, 40, &p, buf, sizeof buf, &len) == NCCLZ_OK, "%s", ncclzLastError());
  uint32_t codes = buf[0] | buf[1] << 8 | buf[2] << 16 | (uint32_t)buf[3] << 24;
  uint32_t w0 = codes & 31, w1 = (codes >> 5) & 31;
  const uint8_t *packed = buf + 4 + 8; /* one code word, two tile offsets (T = 1) */
  int ok = 1;
  for (uint32_t j = 0; j < w0; j++) {
    uint32_t word = 0;
    for (int l = 0; l < 32; l++) word |= ((((uint32_t)sym[l] << 1) ^ (uint32_t)(sym[l] >> 31)) >> j & 1u) << l;
    uint32_t got = packed[4 * j] | packed[4 * j + 1] << 8 | packed[4 * j + 2] << 16 | (uint32_t)packed[4 * j + 3] << 24;
    ok &= got == word;
  }
  CHECK(ok, "fixedlen bit planes differ from the naive packing");
  uint32_t off1 = buf[8] | buf[9] << 8;
  CHECK(off1 == 4 * w0, "second tile offset %u, want %u", off1, 4 * w0);
  CHECK(len == 4 + 8 + 4 * (w0 + w1), "fixedlen golden size %zu", len);
  /* z = 2^30 has bit length 31: stored as width 32 with code 31. */
  int32_t big[32] = {0};
  big[5] = 1 << 29;
  CHECK(ncclzFixedlenEncode(big, 32, &p, buf, sizeof buf, &len) == NCCLZ_OK && len == 4 + 4 + 128,
        "width-31 block: len %zu", len);
  CHECK((buf[0] & 31) == 31, "width code %u, want 31", buf[0] & 31);
}

/* ------------------------------------------------------------ code lengths */

static uint64_t kraft15(const uint8_t *len, uint32_t n) { return ncclz_huff_kraft(len, n); }

static uint64_t code_cost(const uint32_t *freq, const uint8_t *len, uint32_t n) {
  uint64_t bits = 0;
  for (uint32_t i = 0; i < n; i++) bits += (uint64_t)freq[i] * len[i];
  return bits;
}

/* Cost of an unconstrained optimal Huffman code: the sum of all merged weights (O(m^2)). */
static uint64_t optimal_cost(const uint32_t *freq, uint32_t n) {
  uint64_t *w = malloc(sizeof(uint64_t) * (n + 1)), cost = 0;
  uint32_t m = 0;
  for (uint32_t i = 0; i < n; i++)
    if (freq[i]) w[m++] = freq[i];
  while (m > 1) {
    for (int k = 0; k < 2; k++) { /* move the two smallest to the end */
      uint32_t best = 0;
      for (uint32_t i = 1; i < m - (uint32_t)k; i++)
        if (w[i] < w[best]) best = i;
      uint64_t t = w[best];
      w[best] = w[m - 1 - k];
      w[m - 1 - k] = t;
    }
    w[m - 2] += w[m - 1];
    cost += w[m - 2];
    m--;
  }
  free(w);
  return cost;
}

static void check_lengths(const char *what, const uint32_t *freq, uint32_t n) {
  uint8_t *len = malloc(n);
  ncclzHuffLengths(freq, n, NCCLZ_HUFF_MAX_LEN, len);
  uint32_t used = 0, max = 0;
  int monotone = 1, zero_ok = 1;
  for (uint32_t i = 0; i < n; i++) {
    used += freq[i] != 0;
    max = len[i] > max ? len[i] : max;
    zero_ok &= (freq[i] == 0) == (len[i] == 0);
    for (uint32_t j = 0; j < n && i < 512; j++)
      if (freq[i] > freq[j] && freq[j] && len[i] > len[j]) monotone = 0;
  }
  uint64_t kraft = kraft15(len, n);
  CHECK(max <= 15, "%s: max length %u", what, max);
  CHECK(zero_ok, "%s: used bins and coded bins differ", what);
  CHECK(monotone, "%s: a more frequent bin got a longer code", what);
  CHECK(kraft <= 32768 && (used < 2 || kraft == 32768), "%s: Kraft sum %llu/32768", what, (unsigned long long)kraft);
  free(len);
}

static void test_lengths(void) {
  uint8_t len[8];
  const uint32_t ties[] = {1, 1, 2, 2}; /* leaf wins the tie: all length 2, not 3,3,2,1 */
  ncclzHuffLengths(ties, 4, 15, len);
  CHECK(len[0] == 2 && len[1] == 2 && len[2] == 2 && len[3] == 2, "ties: %u %u %u %u", len[0], len[1], len[2], len[3]);
  const uint32_t three[] = {2, 1, 1};
  ncclzHuffLengths(three, 3, 15, len);
  CHECK(len[0] == 1 && len[1] == 2 && len[2] == 2, "three: %u %u %u", len[0], len[1], len[2]);
  const uint32_t one[] = {0, 0, 5, 0};
  ncclzHuffLengths(one, 4, 15, len);
  CHECK(len[2] == 1 && len[0] == 0 && len[1] == 0 && len[3] == 0, "single used bin gets length 1");
  const uint32_t none[] = {0, 0};
  ncclzHuffLengths(none, 2, 15, len);
  CHECK(len[0] == 0 && len[1] == 0, "no used bin, no code");

  /* Fibonacci frequencies give a 39-deep tree: the limit must kick in. */
  uint32_t fib[40];
  fib[0] = fib[1] = 1;
  for (int i = 2; i < 40; i++) fib[i] = fib[i - 1] + fib[i - 2];
  check_lengths("fibonacci", fib, 40);

  /* Skewed, realistic: 2^20 draws of a two-sided geometric (Laplace-like) variable, whose rare
   * tail symbols sit deeper than 15 in the unconstrained tree. The limited code must keep 95% of
   * the optimal compression ratio. */
  uint32_t *freq = calloc(NCCLZ_HUFF_MAX_SYMS, sizeof(uint32_t));
  uint64_t rng = 99;
  for (int i = 0; i < (1 << 20); i++) {
    double mag = floor(-log(1.0 - tu_uniform(&rng)) * 60.0);
    int32_t v = tu_rand(&rng) & 1 ? (int32_t)mag : -(int32_t)mag;
    freq[ncclz_huff_index(v, (ncclzHuffAlphabet){0, NCCLZ_HUFF_MAX_RADIUS})]++;
  }
  check_lengths("skewed", freq, NCCLZ_HUFF_MAX_SYMS);
  uint8_t *lim = malloc(NCCLZ_HUFF_MAX_SYMS);
  ncclzHuffLengths(freq, NCCLZ_HUFF_MAX_SYMS, 15, lim);
  uint64_t limited = code_cost(freq, lim, NCCLZ_HUFF_MAX_SYMS), optimal = optimal_cost(freq, NCCLZ_HUFF_MAX_SYMS);
  CHECK((double)optimal / (double)limited >= 0.95, "limited cost %llu vs optimal %llu",
        (unsigned long long)limited, (unsigned long long)optimal);
  printf("skewed histogram: length-limited code keeps %.4f of the optimal ratio\n", (double)optimal / (double)limited);
  uint32_t max = 0;
  for (uint32_t i = 0; i < NCCLZ_HUFF_MAX_SYMS; i++) max = lim[i] > max ? lim[i] : max;
  CHECK(max == 15, "skewed data should hit the 15-bit limit (max %u)", max);
  /* The Fibonacci case too (cost ratio against the unconstrained 39-deep tree). */
  ncclzHuffLengths(fib, 40, 15, lim);
  CHECK((double)optimal_cost(fib, 40) / (double)code_cost(fib, lim, 40) >= 0.95, "fibonacci limited cost");

  /* Random histograms of assorted shapes. */
  for (int t = 0; t < 200; t++) {
    uint32_t n = 2 + (uint32_t)(tu_rand(&rng) % 600);
    for (uint32_t i = 0; i < n; i++) {
      double u = tu_uniform(&rng);
      freq[i] = u < 0.3 ? 0 : (uint32_t)(pow(2.0, 24 * tu_uniform(&rng)) * (t % 2 ? 1 : u));
    }
    char what[64];
    snprintf(what, sizeof what, "random histogram %d", t);
    check_lengths(what, freq, n);
  }
  free(lim);
  free(freq);
}

/* Canonical codes are prefix-free and ordered by (length, index). */
static void test_canonical(void) {
  const uint8_t lengths[] = {3, 0, 2, 3, 2, 2};
  uint32_t codes[6];
  ncclz_huff_canonical_codes(lengths, 6, codes);
  /* (len, idx): (2,2)=00 (2,4)=01 (2,5)=10 (3,0)=110 (3,3)=111 */
  CHECK(codes[2] == 0 && codes[4] == 1 && codes[5] == 2 && codes[0] == 6 && codes[3] == 7,
        "canonical codes %u %u %u %u %u", codes[2], codes[4], codes[5], codes[0], codes[3]);
}

/* ------------------------------------------------------------ throughput */

static void bench_symbols(const char *label, const int32_t *sym, size_t n) {
  ncclzCoderParams p;
  ncclzCoderParamsDefault(&p);
  int32_t *out = malloc(sizeof(int32_t) * n);
  uint8_t *enc = malloc(ncclzCoderBound(NCCLZ_CODER_HUFFMAN, &p, n) + ncclzCoderBound(NCCLZ_CODER_FIXEDLEN, &p, n));
  for (int c = 0; c < NCCLZ_CODER_COUNT; c++) {
    size_t len = 0, cap = ncclzCoderBound((ncclzCoder)c, &p, n);
    ncclzHuffAlphabet a = {0, 0};
    int reps = 0;
    double t0 = ncclzNowSeconds(), t1;
    do {
      encode((ncclzCoder)c, sym, n, &p, enc, cap, &len, &a);
      reps++;
    } while ((t1 = ncclzNowSeconds()) - t0 < 0.2);
    double enc_mbs = reps * 4.0 * n / (t1 - t0) / 1e6;
    reps = 0;
    t0 = ncclzNowSeconds();
    do {
      decode((ncclzCoder)c, enc, len, &p, a, out, n);
      reps++;
    } while ((t1 = ncclzNowSeconds()) - t0 < 0.2);
    double dec_mbs = reps * 4.0 * n / (t1 - t0) / 1e6;
    printf("bench %s, %-8s: ratio %.2f, encode %.0f MB/s, decode %.0f MB/s\n", label, ncclzCoderName((ncclzCoder)c),
           4.0 * n / (double)len, enc_mbs, dec_mbs);
  }
  free(enc);
  free(out);
}

/* Throughput on the trefht slice (MB/s of int32 symbols). The plain 1D deltas start with the
 * whole first code, an outlier that pushes HUFFMAN's min/max-centred window away from the small
 * deltas; the second run predicts the first element too, to show the coder on its home ground. */
static void bench(void) {
  size_t n = 0;
  float *x = load_floats("trefht_member57_8x64x128.f32", &n);
  if (!x) return;
  int32_t *sym = malloc(sizeof(int32_t) * n);
  quantize_deltas(x, n, 0.01, sym);
  bench_symbols("trefht eb=0.01 1D deltas", sym, n);
  sym[0] = 0;
  bench_symbols("trefht eb=0.01 1D deltas, first predicted", sym, n);
  free(sym);
  free(x);
}

/* The one byte-count parser (command line and scenario files): accepted spellings, and what is
 * not a whole number of bytes from 1 to 1e15. */
static void test_parse_bytes(void) {
  static const struct {
    const char *s;
    uint64_t v;
  } ok[] = {{"65536", 65536},     {"4M", 4u << 20},    {"4MiB", 4u << 20}, {"4MB", 4u << 20}, {"64kb", 64u << 10},
            {"1.5K", 1536},       {"1G", 1u << 30},    {"1", 1},           {"0.5k", 512},     {"1e3", 1000},
            {"3GiB", 3ull << 30}, {"910000000000000", 910000000000000ull}};
  static const char *const bad[] = {"", "0", "-1", " 1", "1 ", "1.3K", "0.5", "4T", "4MiBs", "K", "inf", "nan",
                                    "0x10", "2e15", "4Mi B", "1..2"};
  for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
    uint64_t v = 0;
    CHECK(ncclzParseBytes(ok[i].s, &v) == 0 && v == ok[i].v, "'%s' -> %llu (want %llu)", ok[i].s,
          (unsigned long long)v, (unsigned long long)ok[i].v);
  }
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    uint64_t v = 0;
    CHECK(ncclzParseBytes(bad[i], &v) == -1, "'%s' accepted as %llu", bad[i], (unsigned long long)v);
  }
}

/* Bandwidths with their unit (b = bits, B = bytes, powers of 1000) into GB/s; byte counts for people. */
static void test_units(void) {
  static const struct {
    const char *text;
    double gbytes; /* < 0: refused */
  } bw[] = {{"200Gb/s", 25.0}, {"25GB/s", 25.0}, {"1.6Tb/s", 200.0}, {"400 Gb/s", 50.0}, {"100Mb/s", 0.0125},
            {"200", -1}, {"200gb/s", -1}, {"-5GB/s", -1}, {"GB/s", -1}, {"0GB/s", -1}, {"200Gb/s ", -1}, {"inf GB/s", -1}};
  for (size_t i = 0; i < sizeof bw / sizeof bw[0]; i++) {
    double g = -1.0;
    int rc = ncclzParseBandwidth(bw[i].text, &g);
    CHECK(bw[i].gbytes < 0 ? rc == -1 : rc == 0 && fabs(g - bw[i].gbytes) < 1e-12 * bw[i].gbytes, "'%s': rc %d, %g GB/s",
          bw[i].text, rc, g);
  }
  static const struct {
    double bytes;
    const char *text;
  } fb[] = {{268435456, "256 MiB"}, {1073741824, "1 GiB"}, {1048576, "1 MiB"}, {1536, "1.5 KiB"}, {100, "100 B"}};
  for (size_t i = 0; i < sizeof fb / sizeof fb[0]; i++) {
    char buf[32];
    ncclzFormatBytes(fb[i].bytes, buf, sizeof buf);
    CHECK(!strcmp(buf, fb[i].text), "%g bytes -> '%s' (want '%s')", fb[i].bytes, buf, fb[i].text);
  }
}

int main(void) {
  test_parse_bytes();
  test_units();
  test_huffman_golden();
  test_fixedlen_golden();
  test_canonical();
  test_lengths();
  test_synthetic();
  test_real_data();
  bench();
  return tu_finish("test_coders");
}
