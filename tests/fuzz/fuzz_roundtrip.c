/* Fuzz target: the codec round trip, as `ncclz codec` runs it. The first 8 bytes choose the
 * quantizer and its parameters, the coder, dtype, shape and frame size; the rest is the data
 * (any bytes, as f32, bf16 or f16).
 *
 *   byte 0: quantizer (bits 0-1: none, eb:abs, eb:rel, qsgd), Lorenzo (bits 2-3), fill=V with V
 *           the first element (bit 4), hostile dims: three raw u32 from bytes 8..19 (bit 5)
 *   byte 1: coder (% 4: raw, fixedlen, huffman, auto: the REA per frame with the built-in
 *           profile, as --coder auto), dtype ((>> 2) % 3: f32, bf16, f16), transport ((>> 4) % 3)
 *   byte 2, 3: EB bound (1 + b3/256) * 2^-(b2 % 48) (rel: at most 1); QSGD bits {2,4,8}[b2 % 3],
 *           bucket 1 + b3 * (1 + b4 % 8)
 *   byte 4: number of dims (% 4); bytes 5, 6: the last two dims (1 + b % n); the first is what
 *           is left (so some shapes do not divide n: a clean refusal)
 *   byte 7: frame bytes 64 << (b % 12), HUFFMAN segment, FIXEDLEN tile
 *
 * Contract checked: the spec text (built from those choices) parses; quantization either fails
 * cleanly (ARG, NONFINITE, RANGE with a one-line message) or the stream encodes, decodes to the
 * same symbols and scales, and reconstructs with every element within the bound: bit for bit for
 * none, the fill value itself where x equals it, |x - y| <= bound for EB, one level of the bucket
 * for QSGD. */
#include "ncclz/codecs.h"
#include "ncclz/model.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_ELEMS 16384

static void fail(const char *what, const char *spec) {
  fprintf(stderr, "fuzz_roundtrip: %s (spec %s; last error: %s)\n", what, spec, ncclzLastError());
  abort();
}

static uint32_t get_u32(const uint8_t *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

typedef struct {
  char spec[160];
  ncclzDtype dtype;
  ncclzCoder coder;
  int automatic; /* the REA chooses each frame's coder */
  ncclzTransportHint hint;
  uint32_t dims[3];
  int ndims;
  size_t chunk;
  ncclzCoderParams cp;
  const uint8_t *raw;
  size_t n;
} Case;

/* The spec text of bytes 0..4 (always valid: parsing it must succeed). */
static void spec_of(const uint8_t *b, const uint8_t *raw, ncclzDtype dtype, size_t n, char *out, size_t cap) {
  int kind = b[0] & 3, lorenzo = (b[0] >> 2) & 3;
  if (kind == 0) {
    snprintf(out, cap, "none");
  } else if (kind == 3) {
    static const int bits[3] = {2, 4, 8};
    snprintf(out, cap, "qsgd:bits=%d,bucket=%u", bits[b[2] % 3], 1u + b[3] * (1u + b[4] % 8));
  } else {
    double eb = ldexp(1.0 + b[3] / 256.0, -(b[2] % 48));
    if (kind == 2 && eb > 1) eb = 1;
    int len = snprintf(out, cap, "eb:%s=%.17g", kind == 1 ? "abs" : "rel", eb);
    if (lorenzo) len += snprintf(out + len, cap - (size_t)len, ",lorenzo=%dd", lorenzo);
    float v;
    if ((b[0] & 16) && n) {
      ncclzToFloat(raw, dtype, 1, &v);
      if (isfinite(v)) snprintf(out + len, cap - (size_t)len, ",fill=%.9g", (double)v);
    }
  }
}

/* Dims from bytes 4..6, or raw from the data (bit 5 of byte 0): returns the header length used. */
static size_t dims_of(const uint8_t *b, size_t size, size_t n, Case *c) {
  if ((b[0] & 32) && size >= 20) {
    for (int k = 0; k < 3; k++) c->dims[k] = get_u32(b + 8 + 4 * k);
    c->ndims = 3;
    return 20;
  }
  c->ndims = b[4] % 4;
  uint32_t d2 = n ? 1 + b[5] % (uint32_t)n : 1, rest = n ? (uint32_t)(n / d2) : 1;
  uint32_t d1 = 1 + b[6] % (rest ? rest : 1), d0 = rest / d1 ? rest / d1 : 1;
  uint32_t all[3] = {d0, d1, d2};
  for (int k = 0; k < c->ndims; k++) c->dims[k] = all[3 - c->ndims + k];
  if (c->ndims == 1) c->dims[0] = (uint32_t)n;
  return 8;
}

static int parse_case(const uint8_t *data, size_t size, Case *c) {
  if (size < 8) return 0;
  memset(c, 0, sizeof *c);
  c->coder = (ncclzCoder)(data[1] % 4 == 3 ? NCCLZ_CODER_RAW : data[1] % 4);
  c->automatic = data[1] % 4 == 3;
  c->hint = (ncclzTransportHint)((data[1] >> 4) % NCCLZ_HINT_COUNT);
  c->dtype = (ncclzDtype)((data[1] >> 2) % 3);
  size_t esz = ncclzDtypeSize(c->dtype), head = (data[0] & 32) && size >= 20 ? 20 : 8;
  c->n = (size - head) / esz;
  if (c->n > MAX_ELEMS) c->n = MAX_ELEMS;
  dims_of(data, size, c->n, c);
  c->raw = data + head;
  spec_of(data, c->raw, c->dtype, c->n, c->spec, sizeof c->spec);
  c->chunk = (size_t)64 << (data[7] % 12);
  ncclzCoderParamsDefault(&c->cp);
  c->cp.huffman_segment = 1 + (data[7] * 17u) % 4096;
  c->cp.fixedlen_tile_blocks = 1 + data[7] % 8;
  return 1;
}

/* Every element within the bound of the original (floats as the quantizer saw them). */
static void check_values(const Case *c, const ncclzSymbols *s, const float *x, const float *y) {
  const ncclzQuantParams *q = &s->qp;
  for (size_t i = 0; i < c->n; i++) {
    if (q->kind == NCCLZ_QUANT_NONE) {
      if (memcmp(x + i, y + i, 4) && !(isnan(x[i]) && isnan(y[i]))) fail("a lossless element changed", c->spec);
      continue;
    }
    if (q->has_fill && x[i] == q->fill_value) { /* comes back as the fill value: -0.0 as +0.0 for fill=0 */
      if (memcmp(y + i, &q->fill_value, 4)) fail("a fill element does not come back as the fill value", c->spec);
      continue;
    }
    double err = fabs((double)x[i] - (double)y[i]), bound;
    if (q->kind == NCCLZ_QUANT_EB) {
      bound = q->bound;
    } else {
      double scale = s->scales[i / q->qsgd_bucket];
      /* one level, plus rounding to float: relative, or half a subnormal step where y is subnormal */
      bound = scale / ((1 << (q->qsgd_bits - 1)) - 1) + scale * 0x1p-23 + 0x1p-150;
    }
    if (!(err <= bound)) fail("an element beyond the bound", c->spec);
  }
}

/* --coder auto: the REA plans, materializes and post-checks each frame (cli/rea_chooser.c). */
typedef struct {
  ncclzProfile prof;
  ncclzTransportHint hint;
} Rea;

static ncclzStatus rea_encode(const int32_t *sym, size_t n, const ncclzFrameDesc *d, uint8_t *dst, size_t cap,
                              size_t *len, ncclzCoder *committed, void *ctx) {
  const Rea *r = ctx;
  ncclzReaConfig cfg;
  ncclzReaConfigFromProfile(&r->prof, r->hint, d->quant ? ncclzDataClassOf(d->quant) : NCCLZ_CLASS_NONE, &cfg);
  ncclzReaResult res;
  ncclzStatus st = ncclzReaEncodeBest(&r->prof, &cfg, sym, n, d, dst, cap, &res);
  if (st == NCCLZ_OK) {
    *len = res.frame_bytes;
    *committed = res.committed;
  }
  return st;
}

static void round_trip(const Case *c, const ncclzSymbols *sym) {
  size_t fs = ncclzFrameSymbols(sym, c->chunk), len = 0;
  uint8_t *stream = NULL;
  unsigned mix[NCCLZ_CODER_COUNT] = {0};
  static Rea rea;
  static int rea_loaded;
  if (c->automatic && !rea_loaded) {
    if (ncclzProfileDefault(&rea.prof) != NCCLZ_OK) fail("the built-in profile does not load", c->spec);
    rea_loaded = 1;
  }
  rea.hint = c->hint;
  if (ncclzStreamEncode(sym, c->coder, c->automatic ? rea_encode : NULL, &rea, fs, &c->cp, &stream, &len, mix) != NCCLZ_OK)
    fail("encoding quantized symbols failed", c->spec);
  ncclzSymbols back;
  if (ncclzStreamDecode(stream, len, &back) != NCCLZ_OK) fail("its own stream does not decode", c->spec);
  if (back.n != sym->n || memcmp(back.sym, sym->sym, sym->n * 4) || back.n_scales != sym->n_scales ||
      (sym->n_scales && memcmp(back.scales, sym->scales, sym->n_scales * 4)))
    fail("decoded symbols or scales differ", c->spec);
  float *x = malloc((c->n ? c->n : 1) * 4), *y = malloc((c->n ? c->n : 1) * 4);
  ncclzToFloat(c->raw, c->dtype, c->n, x);
  back.qp.bound = sym->qp.bound; /* the stream keeps abs_eb; the bound is the encoder's */
  if (ncclzArrayReconstruct(&back, y) != NCCLZ_OK) fail("reconstruction failed", c->spec);
  check_values(c, &back, x, y);
  free(x);
  free(y);
  free(stream);
  ncclzSymbolsFree(&back);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  Case c;
  if (!parse_case(data, size, &c)) return 0;
  ncclzQuantSpec spec;
  if (ncclzQuantSpecParse(c.spec, &spec) != NCCLZ_OK) fail("a valid spec text refused", c.spec);
  ncclzSymbols sym;
  ncclzStatus st = ncclzArrayQuantize(&spec, c.dtype, c.raw, c.n, c.ndims ? c.dims : NULL, c.ndims, data[2], &sym);
  if (st != NCCLZ_OK) {
    const char *msg = ncclzLastError();
    if (st != NCCLZ_ERR_ARG && st != NCCLZ_ERR_NONFINITE && st != NCCLZ_ERR_RANGE) fail("unexpected status", c.spec);
    if (!msg[0] || strchr(msg, '\n')) fail("a refusal without a one-line message", c.spec);
    return 0;
  }
  round_trip(&c, &sym);
  ncclzSymbolsFree(&sym);
  return 0;
}
