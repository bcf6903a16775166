/* A deterministic mutation fuzzer for ncclzFrameDecode, run as a CTest test.
 *
 * It builds a corpus of valid frames (every coder, several data shapes and parameters), then
 * decodes 300,000 mutants of them: bit flips and byte sets (caught by the checksums), cuts and
 * extensions, and - the interesting part - header field edits and payload edits whose header
 * and payload checks are recomputed, so that the coders' own validators see hostile input.
 * Inputs and outputs live in exact-size allocations: under ASan/UBSan any out-of-bounds access
 * is a crash. The test fails on a crash or on a decoder result that breaks the API contract.
 *
 * `test_fuzz_replay --write-corpus DIR` writes a few small seed frames for the libFuzzer target
 * fuzz_frame (tests/fuzz/corpus/frame).
 */
#include "ncclz/codecs.h"
#include "../codecs/huff_codebook.h"
#include "testutil.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define MUTATIONS 300000
#define MAX_CORPUS 128

typedef struct {
  uint8_t *bytes;
  size_t len;
} Blob;

static Blob corpus[MAX_CORPUS];
static int corpus_size;

/* ------------------------------------------------------------ corpus */

static int32_t draw(int shape, uint64_t *rng) {
  double g = (tu_uniform(rng) + tu_uniform(rng) + tu_uniform(rng) - 1.5) * 12.0;
  switch (shape) {
  case 0: return (int32_t)floor(g);                                                   /* small */
  case 1: return (int32_t)(uint32_t)tu_rand(rng);                                     /* wide */
  case 2: return tu_uniform(rng) < 0.2 ? (int32_t)(uint32_t)tu_rand(rng) : (int32_t)g; /* escapes */
  case 3: return tu_uniform(rng) < 0.2 ? NCCLZ_FILL_CODE : INT32_MIN + 1 + (int32_t)(tu_rand(rng) % 9);
  case 4: return (int32_t)floor(g * 300.0); /* a large alphabet: long codes */
  /* HUFFMAN's sparse length table (few values over a wide window, the fill index at its top) and
   * escapes at the int32 extremes (36-bit offsets) */
  default: {
    static const int32_t far[] = {INT32_MAX, INT32_MIN + 1, 1 << 30};
    double u = tu_uniform(rng);
    return u < 0.05 ? NCCLZ_FILL_CODE : u < 0.1 ? far[tu_rand(rng) % 3] : 97 * (int32_t)(tu_rand(rng) % 41) - 2000;
  }
  }
}

/* Encodes one frame; QSGD frames (quant 2) carry their bucket scales as side data. */
static Blob make_frame(ncclzCoder c, int shape, size_t n, int quant, const ncclzCoderParams *p, uint64_t seed) {
  int32_t *sym = malloc(sizeof(int32_t) * (n + 1));
  uint64_t rng = seed;
  for (size_t i = 0; i < n; i++) sym[i] = draw(shape, &rng);
  ncclzQuantParams q;
  memset(&q, 0, sizeof q);
  q.kind = (ncclzQuantKind)quant;
  float scales[64];
  uint32_t side = 0;
  if (quant == NCCLZ_QUANT_QSGD) {
    q.qsgd_bits = 8;
    q.qsgd_bucket = 64;
    side = (uint32_t)(4 * ((n + 63) / 64));
    for (size_t b = 0; b < (n + 63) / 64; b++) scales[b] = 1.0f / (float)(b + 1);
  } else if (quant == NCCLZ_QUANT_EB) {
    q.abs_eb = 0.01;
    q.lorenzo = 1;
    q.has_fill = 1;
    q.fill_value = 1e36f;
  }
  ncclzFrameDesc d = {NCCLZ_DTYPE_F32, &q, side ? scales : NULL, side, *p};
  size_t cap = ncclzFrameBound(c, p, n, side);
  Blob b = {malloc(cap), 0};
  ncclzStatus st = ncclzFrameEncode(c, sym, n, &d, b.bytes, cap, &b.len);
  CHECK(st == NCCLZ_OK, "corpus frame (%s, shape %d, n %zu): %s", ncclzCoderName(c), shape, n, ncclzLastError());
  free(sym);
  return b;
}

static void build_corpus(void) {
  static const size_t sizes[] = {0, 1, 33, 300, 2000};
  ncclzCoderParams defaults, tiny = {2, 13};
  ncclzCoderParamsDefault(&defaults);
  uint64_t seed = 1;
  for (int c = 0; c < NCCLZ_CODER_COUNT; c++)
    for (int shape = 0; shape < 6; shape++)
      for (size_t k = 0; k < 5 && corpus_size < MAX_CORPUS; k++) {
        if (sizes[k] == 0 && shape) continue;
        const ncclzCoderParams *p = (k + (size_t)shape) % 2 ? &tiny : &defaults;
        int quant = (int)((k + (size_t)shape + (size_t)c) % 3);
        if (sizes[k] > 64 * 64) quant = 0;
        corpus[corpus_size++] = make_frame((ncclzCoder)c, shape, sizes[k], quant, p, seed++);
      }
}

/* HUFFMAN corpus frames with a dense and with a sparse length table: both parsers get mutants. */
static void count_table_kinds(int *dense, int *sparse) {
  *dense = *sparse = 0;
  for (int i = 0; i < corpus_size; i++) {
    const uint8_t *f = corpus[i].bytes;
    if (corpus[i].len < 64 + 8 || f[5] != NCCLZ_CODER_HUFFMAN) continue;
    const uint8_t *t = f + 64 + ((uint32_t)f[20] | (uint32_t)f[21] << 8); /* after the side data (< 64 KiB here) */
    uint32_t m = t[2] | t[3] << 8, u = t[4] | t[5] << 8;
    if (m) ncclz_huff_table_sparse(m, u) ? (*sparse)++ : (*dense)++;
  }
}

/* ------------------------------------------------------------ mutations */

static void put_u32(uint8_t *p, uint32_t v) {
  for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
}
static uint32_t get_u32(const uint8_t *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* Recomputes the payload check over the bytes present (up to payload_bytes) and the header check,
 * so that the mutant passes both checksums. */
static void reseal(uint8_t *m, size_t len) {
  if (len < 64) return;
  size_t payload = get_u32(m + 16);
  if (payload > len - 64) payload = len - 64;
  put_u32(m + 52, ncclzPayloadCheck(m + 64, payload));
  put_u32(m + 60, ncclzFnv1a(m, 60));
}

/* Values that hit boundaries: 0, 1, all ones, powers of two, and small moves of the old value. */
static uint32_t interesting(uint64_t *rng, uint32_t old) {
  switch (tu_rand(rng) % 8) {
  case 0: return 0;
  case 1: return 1;
  case 2: return 0xFFFFFFFFu;
  case 3: return 1u << (tu_rand(rng) % 32);
  case 4: return old + 1;
  case 5: return old - 1;
  case 6: return old + (uint32_t)(tu_rand(rng) % 64) - 32;
  default: return (uint32_t)tu_rand(rng);
  }
}

static void flip_bits(uint8_t *m, size_t from, size_t len, uint64_t *rng) {
  if (len <= from) return;
  int flips = 1 + (int)(tu_rand(rng) % 4);
  for (int k = 0; k < flips; k++) {
    size_t bit = from * 8 + tu_rand(rng) % ((len - from) * 8);
    m[bit / 8] ^= (uint8_t)(1u << (bit % 8));
  }
}

/* Edits one header field (a byte or a word) to a boundary value. */
static void edit_header(uint8_t *m, uint64_t *rng) {
  static const size_t words[] = {12, 16, 20, 24, 28, 32, 36, 40, 44, 48, 56};
  if (tu_rand(rng) % 3 == 0) {
    size_t at = 5 + tu_rand(rng) % 7; /* coder .. flags */
    m[at] = (uint8_t)interesting(rng, m[at]);
  } else {
    size_t at = words[tu_rand(rng) % (sizeof words / sizeof words[0])];
    put_u32(m + at, interesting(rng, get_u32(m + at)));
  }
  if (tu_rand(rng) % 4 == 0) put_u32(m + 56, get_u32(m + 12) * 4); /* keep raw_bytes consistent */
}

/* Edits the coded payload: a word of its tables (the first bytes) or anywhere. */
static void edit_payload(uint8_t *m, size_t len, uint64_t *rng) {
  if (len <= 64) return;
  size_t payload = len - 64, side = get_u32(m + 20);
  size_t start = 64 + (side < payload ? side : 0);
  size_t span = len - start;
  if (span == 0) return;
  int kind = (int)(tu_rand(rng) % 4);
  size_t at = start + (kind == 0 && span > 64 ? tu_rand(rng) % 64 : tu_rand(rng) % span);
  if (kind <= 1 && at + 4 <= len) {
    at -= (at - start) % 4; /* word-aligned fields */
    put_u32(m + at, interesting(rng, get_u32(m + at)));
  } else if (kind == 2) {
    m[at] = (uint8_t)tu_rand(rng);
  } else {
    flip_bits(m, start, len, rng);
  }
}

/* Builds one mutant of corpus frame src into *out (malloc'd, exact size). */
static size_t mutate(const Blob *src, uint8_t **out, int *kind_out, uint64_t *rng) {
  size_t len = src->len;
  int kind = (int)(tu_rand(rng) % 10);
  *kind_out = kind;
  size_t extra = kind == 3 ? 1 + tu_rand(rng) % 64 : 0;
  uint8_t *m = malloc(len + extra + 1);
  memcpy(m, src->bytes, len);
  for (size_t i = 0; i < extra; i++) m[len + i] = (uint8_t)tu_rand(rng);
  switch (kind) {
  case 0: flip_bits(m, 0, len, rng); break;                        /* checksums must catch it */
  case 1: m[tu_rand(rng) % len] = (uint8_t)tu_rand(rng); break;   /* likewise */
  case 2: len = tu_rand(rng) % len; break;                         /* cut */
  case 3: len += extra; break;                                     /* extended */
  case 4: case 5: edit_header(m, rng); reseal(m, len); break;
  case 6: case 7: case 8: edit_payload(m, len, rng); reseal(m, len); break;
  default: /* cut or grow the payload and tell the header, so sizes disagree only inside the coder */
    if (len > 64) {
      size_t cut = tu_rand(rng) % (len - 64 < 16 ? len - 64 + 1 : 16);
      len -= cut;
      put_u32(m + 16, (uint32_t)(len - 64));
      reseal(m, len);
    }
  }
  *out = m;
  return len;
}

/* ------------------------------------------------------------ decoding */

static long outcomes[16];
static long decoded_by_kind[10], tried_by_kind[10];

/* Decodes into exact-size buffers sized from the (possibly hostile) header; a huge count gets a
 * small buffer instead, which must end in a capacity error, not a write past it. */
static ncclzStatus decode_one(const uint8_t *src, size_t len) {
  uint8_t *copy = malloc(len ? len : 1);
  memcpy(copy, src, len);
  ncclzFrameHeader h;
  size_t n = 16, side_cap = 0;
  if (ncclzFrameHeaderParse(copy, len, &h) == NCCLZ_OK) {
    n = h.n_symbols <= (1u << 22) ? h.n_symbols : 16;
    side_cap = h.side_bytes;
  }
  int32_t *sym = malloc(sizeof(int32_t) * (n ? n : 1));
  void *side = malloc(side_cap ? side_cap : 1);
  size_t consumed = 0;
  ncclzStatus st = ncclzFrameDecode(copy, len, &h, sym, n, side, side_cap, &consumed);
  outcomes[st < 16 ? st : 15]++;
  if (st == NCCLZ_OK)
    CHECK(consumed == 64 + (size_t)h.payload_bytes && consumed <= len && h.n_symbols <= n, "decode contract");
  else
    CHECK(st == NCCLZ_ERR_CORRUPT || st == NCCLZ_ERR_CAPACITY, "status %d: %s", (int)st, ncclzLastError());
  CHECK(st == NCCLZ_OK || ncclzLastError()[0] != '\0', "a failure without a message");
  free(side);
  free(sym);
  free(copy);
  return st;
}

static void replay(void) {
  uint64_t rng = 0xF022F022ull;
  int dense, sparse;
  count_table_kinds(&dense, &sparse);
  CHECK(dense > 2 && sparse > 2, "HUFFMAN corpus frames: %d with a dense table, %d with a sparse one", dense, sparse);
  printf("HUFFMAN corpus frames: %d with a dense length table, %d with a sparse one\n", dense, sparse);
  for (int i = 0; i < corpus_size; i++) decode_one(corpus[i].bytes, corpus[i].len);
  CHECK(outcomes[NCCLZ_OK] == corpus_size, "every corpus frame decodes (%ld of %d)", outcomes[NCCLZ_OK], corpus_size);
  memset(outcomes, 0, sizeof outcomes);
  for (long i = 0; i < MUTATIONS; i++) {
    uint8_t *m;
    int kind;
    size_t len = mutate(&corpus[tu_rand(&rng) % (uint64_t)corpus_size], &m, &kind, &rng);
    tried_by_kind[kind]++;
    decoded_by_kind[kind] += decode_one(m, len) == NCCLZ_OK;
    free(m);
  }
  printf("decoded/tried by mutation kind (flip, set, cut, extend, header x2, payload x3, resize):");
  for (int k = 0; k < 10; k++) printf(" %ld/%ld", decoded_by_kind[k], tried_by_kind[k]);
  printf("\n");
  printf("%d mutants of %d frames: %ld decoded, %ld corrupt, %ld capacity\n", MUTATIONS, corpus_size,
         outcomes[NCCLZ_OK], outcomes[NCCLZ_ERR_CORRUPT], outcomes[NCCLZ_ERR_CAPACITY]);
}

/* ------------------------------------------------------------ seed corpus */

static int write_corpus(const char *dir) {
  ncclzCoderParams p = {4, 64};
  int written = 0;
  for (int c = 0; c < NCCLZ_CODER_COUNT; c++) {
    for (int kind = 0; kind < 4; kind++) {
      static const int shapes[] = {0, 2, 4, 5};
      static const size_t sizes[] = {200, 100, 150, 300};
      Blob b = make_frame((ncclzCoder)c, shapes[kind], sizes[kind], kind % 3, &p, 77 + (uint64_t)kind);
      char path[1024];
      snprintf(path, sizeof path, "%s/seed_%s_%d.nczf", dir, ncclzCoderName((ncclzCoder)c), kind);
      FILE *f = fopen(path, "wb");
      if (!f || fwrite(b.bytes, 1, b.len, f) != b.len) {
        fprintf(stderr, "cannot write %s\n", path);
        if (f) fclose(f);
        free(b.bytes);
        return 1;
      }
      fclose(f);
      free(b.bytes);
      written++;
    }
  }
  printf("wrote %d seed frames to %s\n", written, dir);
  return 0;
}

int main(int argc, char **argv) {
  if (argc == 3 && strcmp(argv[1], "--write-corpus") == 0) return write_corpus(argv[2]);
  build_corpus();
  replay();
  for (int i = 0; i < corpus_size; i++) free(corpus[i].bytes);
  return tu_finish("test_fuzz_replay");
}
