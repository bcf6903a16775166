/* Frames and stream headers: round trips for every coder and quantizer kind (with side data),
 * and rejection, with a message naming the problem, of corrupted, truncated and mislabelled
 * frames. */
#include "ncclz/codecs.h"
#include "testutil.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static void put_u32(uint8_t *p, uint32_t v) {
  for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
}

/* After editing header bytes, make the header checksum valid again. */
static void reseal_header(uint8_t *frame) { put_u32(frame + 60, ncclzFnv1a(frame, 60)); }

static int message_has(const char *needle) { return strstr(ncclzLastError(), needle) != NULL; }

typedef struct {
  uint8_t *bytes;
  size_t len;
  size_t n;
  int32_t *sym;
  float scales[64];
  uint32_t side_bytes;
  ncclzQuantParams q;
  ncclzDtype dtype;
} Frame;

/* kind 0: quant none (f32 bits), 1: EB with Lorenzo and fill (bf16), 2: QSGD with scales. */
static void make_frame(Frame *f, ncclzCoder c, int kind, size_t n) {
  memset(f, 0, sizeof *f);
  uint64_t rng = 1234 + (uint64_t)kind;
  f->n = n;
  f->sym = malloc(sizeof(int32_t) * (n + 1));
  f->q.kind = (ncclzQuantKind)kind;
  f->dtype = kind == 1 ? NCCLZ_DTYPE_BF16 : NCCLZ_DTYPE_F32;
  for (size_t i = 0; i < n; i++) {
    double g = (tu_uniform(&rng) + tu_uniform(&rng) - 1.0) * 50.0;
    if (kind == 0) {
      float x = (float)g;
      memcpy(&f->sym[i], &x, 4);
    } else {
      f->sym[i] = kind == 2 ? (int32_t)g % 8 : (int32_t)g;
    }
  }
  if (kind == 1) {
    f->q.lorenzo = 2;
    f->q.abs_eb = 0.125;
    f->q.has_fill = 1;
    f->q.fill_value = 9.96921e36f;
    if (n > 3) f->sym[3] = NCCLZ_FILL_CODE;
  } else if (kind == 2) {
    f->q.qsgd_bits = 4;
    f->q.qsgd_bucket = 100;
    f->side_bytes = (uint32_t)(4 * ((n + 99) / 100));
    for (size_t b = 0; b < (n + 99) / 100; b++) f->scales[b] = 0.5f + (float)b;
  }
  ncclzFrameDesc d = {f->dtype, &f->q, f->side_bytes ? f->scales : NULL, f->side_bytes, {0, 0}};
  ncclzCoderParamsDefault(&d.coder_params);
  d.coder_params.huffman_segment = 300;
  size_t cap = ncclzFrameBound(c, &d.coder_params, n, f->side_bytes);
  f->bytes = malloc(cap);
  ncclzStatus st = ncclzFrameEncode(c, f->sym, n, &d, f->bytes, cap, &f->len);
  CHECK(st == NCCLZ_OK, "encode %s kind %d: %s", ncclzCoderName(c), kind, ncclzLastError());
  CHECK(f->len <= cap, "frame of %zu bytes exceeds its bound %zu", f->len, cap);
}

static void free_frame(Frame *f) {
  free(f->bytes);
  free(f->sym);
}

static ncclzStatus decode_copy(const uint8_t *bytes, size_t len, size_t n, ncclzFrameHeader *h) {
  uint8_t *copy = malloc(len + 1); /* exact size */
  memcpy(copy, bytes, len);
  int32_t *out = malloc(sizeof(int32_t) * (n + 1));
  float side[64];
  size_t consumed = 0;
  ncclzStatus st = ncclzFrameDecode(copy, len, h, out, n, side, sizeof side, &consumed);
  free(out);
  free(copy);
  return st;
}

static void check_roundtrip(ncclzCoder c, int kind, size_t n) {
  Frame f;
  make_frame(&f, c, kind, n);
  int32_t *out = malloc(sizeof(int32_t) * (n + 1));
  float side[64] = {0};
  size_t consumed = 0;
  ncclzFrameHeader h;
  ncclzStatus st = ncclzFrameDecode(f.bytes, f.len, &h, out, n, side, sizeof side, &consumed);
  CHECK(st == NCCLZ_OK, "decode %s kind %d n=%zu: %s", ncclzCoderName(c), kind, n, ncclzLastError());
  CHECK(consumed == f.len, "consumed %zu of %zu", consumed, f.len);
  CHECK(memcmp(out, f.sym, sizeof(int32_t) * n) == 0, "symbols differ (%s kind %d)", ncclzCoderName(c), kind);
  CHECK(h.coder == c && h.n_symbols == n && h.dtype == f.dtype && h.quant == kind, "header fields");
  CHECK(h.raw_bytes == n * ncclzDtypeSize(f.dtype), "raw_bytes %u", h.raw_bytes);
  CHECK(h.side_bytes == f.side_bytes && memcmp(side, f.scales, f.side_bytes) == 0, "side data");
  if (kind == 1)
    CHECK(h.lorenzo == 2 && h.abs_eb == 0.125 && (h.flags & NCCLZ_FRAME_FLAG_FILL) && h.fill_value == 9.96921e36f,
          "EB fields");
  if (kind == 2)
    CHECK(h.qsgd_bits == 4 && h.qsgd_bucket == 100 && !(h.flags & NCCLZ_FRAME_FLAG_SIDE_SCALES) == (n == 0), "QSGD fields");
  CHECK(c != NCCLZ_CODER_HUFFMAN || h.coder_p0 == 300, "huffman segment in header: %u", h.coder_p0);
  CHECK(c != NCCLZ_CODER_FIXEDLEN || h.coder_p0 == 256, "fixedlen tile in header: %u", h.coder_p0);
  CHECK(c != NCCLZ_CODER_RAW || (h.coder_p0 == 0 && h.coder_p1 == 0 && h.coder_p2 == 0), "raw coder params");
  free(out);
  free_frame(&f);
}

/* Two frames back to back decode one after the other through *consumed. */
static void check_back_to_back(void) {
  Frame a, b;
  make_frame(&a, NCCLZ_CODER_HUFFMAN, 1, 777);
  make_frame(&b, NCCLZ_CODER_FIXEDLEN, 2, 1000);
  uint8_t *both = malloc(a.len + b.len);
  memcpy(both, a.bytes, a.len);
  memcpy(both + a.len, b.bytes, b.len);
  int32_t out[1000];
  float side[64];
  size_t used = 0, used2 = 0;
  CHECK(ncclzFrameDecode(both, a.len + b.len, NULL, out, 1000, side, sizeof side, &used) == NCCLZ_OK && used == a.len,
        "first of two frames: %s", ncclzLastError());
  CHECK(ncclzFrameDecode(both + used, a.len + b.len - used, NULL, out, 1000, side, sizeof side, &used2) == NCCLZ_OK &&
            used2 == b.len && memcmp(out, b.sym, sizeof out) == 0,
        "second of two frames: %s", ncclzLastError());
  free(both);
  free_frame(&a);
  free_frame(&b);
}

static void check_corruption(ncclzCoder c) {
  Frame f;
  make_frame(&f, c, 2, 1000);
  ncclzFrameHeader h;
  uint8_t *m = malloc(f.len);
  /* Any flipped header bit: the magic, version or checksum check catches it. */
  for (size_t byte = 0; byte < 64; byte++) {
    memcpy(m, f.bytes, f.len);
    m[byte] ^= (uint8_t)(1u << (byte % 8));
    ncclzStatus st = decode_copy(m, f.len, f.n, &h);
    const char *want = byte < 4 ? "magic" : byte == 4 ? "version" : "checksum mismatch";
    CHECK(st == NCCLZ_ERR_CORRUPT && message_has(want), "header byte %zu: %d %s", byte, (int)st, ncclzLastError());
  }
  /* Any flipped payload bit: the payload check catches it. */
  for (size_t byte = 64; byte < f.len; byte += 7) {
    memcpy(m, f.bytes, f.len);
    m[byte] ^= 0x10;
    ncclzStatus st = decode_copy(m, f.len, f.n, &h);
    CHECK(st == NCCLZ_ERR_CORRUPT && message_has("payload checksum"), "payload byte %zu: %s", byte, ncclzLastError());
  }
  /* Truncated anywhere. */
  for (size_t len = 0; len < f.len; len += len < 80 ? 1 : 13) {
    ncclzStatus st = decode_copy(f.bytes, len, f.n, &h);
    CHECK(st == NCCLZ_ERR_CORRUPT && message_has("truncated"), "truncated to %zu: %s", len, ncclzLastError());
  }
  free(m);
  free_frame(&f);
}

/* Header fields edited with a valid checksum: the field validators must speak up. */
static void check_field_edits(void) {
  Frame f;
  make_frame(&f, NCCLZ_CODER_FIXEDLEN, 2, 1000);
  uint8_t *m = malloc(f.len);
  ncclzFrameHeader h;
  struct {
    size_t offset;
    uint8_t value;
    const char *want;
  } edits[] = {
      {5, 3, "unknown coder"},   {6, 4, "unknown dtype"},      {7, 3, "unknown quantizer"},
      {8, 4, "Lorenzo"},         {10, 0x04, "flag bits"},      {56, 0x01, "raw_bytes"},
      {20, 0x03, "side_bytes"},  {19, 0x7F, "truncated"},      {10, 0x00, "side-scales flag"},
      {24, 0x07, "one float"},   {29, 0x00, "tile size"},      {32, 0x01, "nonzero coder parameters"},
  };
  for (size_t e = 0; e < sizeof edits / sizeof edits[0]; e++) {
    memcpy(m, f.bytes, f.len);
    m[edits[e].offset] = edits[e].value;
    reseal_header(m);
    ncclzStatus st = decode_copy(m, f.len, f.n, &h);
    CHECK(st == NCCLZ_ERR_CORRUPT && message_has(edits[e].want), "edit byte %zu = %u: %d \"%s\" (want \"%s\")",
          edits[e].offset, edits[e].value, (int)st, ncclzLastError(), edits[e].want);
  }
  /* Wrong magic and version, even with a valid checksum. */
  memcpy(m, f.bytes, f.len);
  put_u32(m, 0x12345678u);
  reseal_header(m);
  CHECK(decode_copy(m, f.len, f.n, &h) == NCCLZ_ERR_CORRUPT && message_has("bad frame magic 0x12345678"), "%s",
        ncclzLastError());
  /* Version 1 frames (before the sparse HUFFMAN table) and unknown later ones: one clear line. */
  for (int v = 0; v < 256; v += v == NCCLZ_FORMAT_VERSION - 1 ? 2 : 1) {
    memcpy(m, f.bytes, f.len);
    m[4] = (uint8_t)v;
    reseal_header(m);
    char want[96];
    snprintf(want, sizeof want, "unsupported frame version %d (this build reads version %d only", v, NCCLZ_FORMAT_VERSION);
    CHECK(decode_copy(m, f.len, f.n, &h) == NCCLZ_ERR_CORRUPT && message_has(want) && !strchr(ncclzLastError(), '\n'),
          "version %d: %s", v, ncclzLastError());
  }
  /* Too small output buffers are a capacity error, not corruption. */
  int32_t out[1000];
  float side[64];
  CHECK(ncclzFrameDecode(f.bytes, f.len, &h, out, 999, side, sizeof side, NULL) == NCCLZ_ERR_CAPACITY, "sym cap");
  CHECK(ncclzFrameDecode(f.bytes, f.len, &h, out, 1000, side, 8, NULL) == NCCLZ_ERR_CAPACITY, "side cap");
  CHECK(ncclzFrameDecode(f.bytes, f.len, &h, out, 1000, NULL, 0, NULL) == NCCLZ_OK, "side not wanted");
  free(m);
  free_frame(&f);
}

static void check_encode_errors(void) {
  int32_t sym[10] = {0};
  uint8_t buf[256];
  size_t len;
  ncclzQuantParams q;
  memset(&q, 0, sizeof q);
  q.kind = NCCLZ_QUANT_QSGD;
  q.qsgd_bits = 4;
  q.qsgd_bucket = 4;
  float scales[3] = {1, 2, 3};
  ncclzFrameDesc d = {NCCLZ_DTYPE_F32, &q, scales, 8, {256, 1024}};
  CHECK(ncclzFrameEncode(NCCLZ_CODER_RAW, sym, 10, &d, buf, sizeof buf, &len) == NCCLZ_ERR_ARG, "wrong side size");
  d.side_bytes = 12;
  CHECK(ncclzFrameEncode(NCCLZ_CODER_RAW, sym, 10, &d, buf, sizeof buf, &len) == NCCLZ_OK, "%s", ncclzLastError());
  CHECK(ncclzFrameEncode(NCCLZ_CODER_RAW, sym, 10, &d, buf, 100, &len) == NCCLZ_ERR_CAPACITY, "small buffer");
  CHECK(ncclzFrameEncode(NCCLZ_CODER_RAW, sym, 10, &d, buf, 70, &len) == NCCLZ_ERR_CAPACITY, "tiny buffer");
}

static void check_stream_header(void) {
  ncclzStreamHeader s, back;
  memset(&s, 0, sizeof s);
  s.dtype = NCCLZ_DTYPE_F16;
  s.quant.kind = NCCLZ_QUANT_EB;
  s.quant.lorenzo = 3;
  s.quant.dims[0] = 8;
  s.quant.dims[1] = 64;
  s.quant.dims[2] = 128;
  s.quant.abs_eb = 1e-3;
  s.quant.has_fill = 1;
  s.quant.fill_value = -999.0f;
  s.quant.qsgd_bucket = 0;
  s.quant.rank = 5;
  s.quant.seed = 0x6e63636c7aull;
  s.n_elems = 8 * 64 * 128;
  s.n_frames = 17;
  uint8_t b[64];
  ncclzStreamHeaderPack(&s, b);
  CHECK(ncclzStreamHeaderParse(b, 64, &back) == NCCLZ_OK, "%s", ncclzLastError());
  CHECK(back.dtype == s.dtype && back.n_elems == s.n_elems && back.n_frames == 17 && back.quant.kind == NCCLZ_QUANT_EB &&
            back.quant.lorenzo == 3 && back.quant.dims[2] == 128 && back.quant.abs_eb == 1e-3 &&
            back.quant.has_fill == 1 && back.quant.fill_value == -999.0f && back.quant.rank == 5 &&
            back.quant.seed == 0x63636c7aull,
        "stream header fields");
  CHECK(ncclzStreamHeaderParse(b, 63, &back) == NCCLZ_ERR_CORRUPT && message_has("truncated"), "short stream");
  b[20] ^= 1;
  CHECK(ncclzStreamHeaderParse(b, 64, &back) == NCCLZ_ERR_CORRUPT && message_has("checksum"), "%s", ncclzLastError());
  b[0] = 'X';
  CHECK(ncclzStreamHeaderParse(b, 64, &back) == NCCLZ_ERR_CORRUPT && message_has("stream magic"), "%s", ncclzLastError());
  ncclzStreamHeaderPack(&s, b);
  b[6] = 9;
  reseal_header(b);
  CHECK(ncclzStreamHeaderParse(b, 64, &back) == NCCLZ_ERR_CORRUPT && message_has("quantizer"), "%s", ncclzLastError());
}

/* ------------------------------------------------- hostile stream headers */

static void put_u64(uint8_t *p, uint64_t v) {
  put_u32(p, (uint32_t)v);
  put_u32(p + 4, (uint32_t)(v >> 32));
}

/* A real stream of n smooth values: quant spec, shape and coder as the CLI would use them. */
static uint8_t *make_stream(const char *spec_text, const uint32_t *dims, int ndims, size_t n, size_t *len) {
  float *x = malloc(n * sizeof *x);
  for (size_t i = 0; i < n; i++) x[i] = (float)sin(0.01 * (double)i);
  ncclzQuantSpec spec;
  ncclzSymbols sy;
  ncclzCoderParams cp;
  ncclzCoderParamsDefault(&cp);
  unsigned mix[NCCLZ_CODER_COUNT] = {0};
  uint8_t *stream = NULL;
  CHECK(ncclzQuantSpecParse(spec_text, &spec) == NCCLZ_OK, "%s", ncclzLastError());
  CHECK(ncclzArrayQuantize(&spec, NCCLZ_DTYPE_F32, x, n, dims, ndims, 0, &sy) == NCCLZ_OK, "%s", ncclzLastError());
  CHECK(ncclzStreamEncode(&sy, NCCLZ_CODER_HUFFMAN, NULL, NULL, 256, &cp, &stream, len, mix) == NCCLZ_OK, "%s",
        ncclzLastError());
  ncclzSymbolsFree(&sy);
  free(x);
  return stream;
}

/* Decodes (and, when that passes, reconstructs) a stream in an exact-size copy: the result must be
 * `want`, with a one-line message that says `needle`. */
static void expect_stream(const uint8_t *bytes, size_t len, ncclzStatus want, const char *needle, const char *what) {
  uint8_t *copy = malloc(len);
  memcpy(copy, bytes, len);
  ncclzSymbols s;
  ncclzStatus st = ncclzStreamDecode(copy, len, &s);
  if (st == NCCLZ_OK) {
    float *x = malloc((s.n ? s.n : 1) * sizeof *x);
    st = ncclzArrayReconstruct(&s, x);
    free(x);
    ncclzSymbolsFree(&s);
  }
  CHECK(st == want && (st == NCCLZ_OK || (message_has(needle) && !strchr(ncclzLastError(), '\n'))),
        "%s: status %d, message '%s' (want %d with '%s')", what, (int)st, ncclzLastError(), (int)want, needle);
  free(copy);
}

/* The header reproducers and their variants: each field out of range, checksum valid. */
static void check_hostile_stream_headers(void) {
  uint32_t d3[3] = {10, 10, 10};
  size_t len;
  uint8_t *eb = make_stream("eb:abs=0.01,lorenzo=3d", d3, 3, 1000, &len), h[64];
  expect_stream(eb, len, NCCLZ_OK, "", "the valid EB stream");
  /* lorenzo=3, n_elems=0, dims 2^31 x 2^31 x 4 (the product wraps to 0): a header-only stream */
  memcpy(h, eb, 64);
  put_u64(h + 8, 0);
  put_u32(h + 16, 0x80000000u);
  put_u32(h + 20, 0x80000000u);
  put_u32(h + 24, 4);
  put_u32(h + 28, 0);
  reseal_header(h);
  expect_stream(h, 64, NCCLZ_ERR_CORRUPT, "do not describe", "dims 2^31 x 2^31 x 4, n 0");
  put_u32(h + 16, 0xFFFFFFFFu); /* 0xFFFFFFFF x 0xFFFFFFFF x 0: the endless loop */
  put_u32(h + 20, 0xFFFFFFFFu);
  put_u32(h + 24, 0);
  reseal_header(h);
  expect_stream(h, 64, NCCLZ_ERR_CORRUPT, "do not describe", "dims 2^32-1 x 2^32-1 x 0, n 0");
  memcpy(h, eb, 64);
  put_u32(h + 16, 20); /* 20 x 10 x 10 for 1000 elements */
  reseal_header(h);
  expect_stream(h, 64, NCCLZ_ERR_CORRUPT, "do not describe", "dims that do not multiply to n");
  static const double bad_eb[] = {0.0, -0.01, NAN, INFINITY, 1e308};
  for (size_t k = 0; k < sizeof bad_eb / sizeof bad_eb[0]; k++) {
    memcpy(h, eb, 64);
    uint64_t bits;
    memcpy(&bits, &bad_eb[k], 8);
    put_u64(h + 32, bits);
    reseal_header(h);
    expect_stream(h, 64, NCCLZ_ERR_CORRUPT, "error bound", "bad abs_eb");
  }
  memcpy(h, eb, 64);
  h[44] = 1; /* has fill, with a NaN fill value */
  put_u32(h + 40, 0x7FC00000u);
  reseal_header(h);
  expect_stream(h, 64, NCCLZ_ERR_CORRUPT, "fill value", "NaN fill value");
  memcpy(h, eb, 64);
  put_u64(h + 8, UINT64_MAX);
  reseal_header(h);
  expect_stream(h, 64, NCCLZ_ERR_CORRUPT, "elements", "n_elems 2^64-1");
  uint8_t *many = malloc(len);
  memcpy(many, eb, len);
  put_u32(many + 28, 0xFFFFFFFFu); /* n_frames */
  reseal_header(many);
  expect_stream(many, len, NCCLZ_ERR_CORRUPT, "frames cannot fit", "n_frames 2^32-1");
  free(many);

  size_t qlen;
  uint8_t *q = make_stream("qsgd:bits=4,bucket=64", NULL, 0, 1000, &qlen), *m = malloc(qlen);
  expect_stream(q, qlen, NCCLZ_OK, "", "the valid QSGD stream");
  static const uint8_t bad_bits[] = {0, 1, 3, 5, 9, 255};
  for (size_t k = 0; k < sizeof bad_bits; k++) { /* garbage with exit 0 before: qsgd_bits never checked */
    memcpy(m, q, qlen);
    m[45] = bad_bits[k];
    reseal_header(m);
    expect_stream(m, qlen, NCCLZ_ERR_CORRUPT, "QSGD bits", "QSGD bits out of range");
  }
  memcpy(m, q, qlen);
  put_u32(m + 48, 0); /* bucket 0 */
  reseal_header(m);
  expect_stream(m, qlen, NCCLZ_ERR_CORRUPT, "bucket", "QSGD bucket 0");
  memcpy(m, q, qlen);
  m[45] = 8; /* a valid bits value the frames do not carry */
  reseal_header(m);
  expect_stream(m, qlen, NCCLZ_ERR_CORRUPT, "differ from the stream header", "frames with other QSGD bits");
  memcpy(m, q, qlen);
  m[7] = 1; /* Lorenzo on a QSGD stream */
  reseal_header(m);
  expect_stream(m, qlen, NCCLZ_ERR_CORRUPT, "Lorenzo", "Lorenzo with QSGD");
  memcpy(m, q, qlen); /* the first frame's first scale made NaN, both checks recomputed */
  uint8_t *f0 = m + 64;
  put_u32(f0 + 64, 0x7FC00000u);
  uint32_t payload = (uint32_t)f0[16] | (uint32_t)f0[17] << 8 | (uint32_t)f0[18] << 16 | (uint32_t)f0[19] << 24;
  put_u32(f0 + 52, ncclzPayloadCheck(f0 + 64, payload));
  reseal_header(f0);
  expect_stream(m, qlen, NCCLZ_ERR_ARG, "scale of bucket 0", "a NaN QSGD scale");
  free(m);
  free(q);
  free(eb);
}

int main(void) {
  static const size_t sizes[] = {0, 1, 33, 1000, 6001};
  for (int c = 0; c < NCCLZ_CODER_COUNT; c++)
    for (int kind = 0; kind < 3; kind++)
      for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) check_roundtrip((ncclzCoder)c, kind, sizes[k]);
  check_back_to_back();
  for (int c = 0; c < NCCLZ_CODER_COUNT; c++) check_corruption((ncclzCoder)c);
  check_field_edits();
  check_encode_errors();
  check_stream_header();
  check_hostile_stream_headers();
  return tu_finish("test_frame");
}
