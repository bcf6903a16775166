/* Fuzz target: the stream decoder (ncclzStreamDecode, then ncclzArrayReconstruct), as
 * `ncclz codec --decode` runs it on a file.
 *
 * Contract checked: a failure is NCCLZ_ERR_CORRUPT/ARG/NOMEM with a one-line message; a success
 * writes every output element (the output starts as a sentinel NaN pattern that neither EB nor
 * QSGD reconstruction can produce) and never reads or writes outside the exact-size buffers.
 *
 * The custom mutator keeps both levels of checksums valid: after libFuzzer's own mutation (or,
 * one time in three, an edit of one stream or frame header field to a boundary value) it
 * recomputes the stream header's FNV-1a and, walking the frames, each frame's payload check and
 * header FNV-1a, so that mutations reach the header validation and the coders instead of dying
 * at the first checksum. */
#include "ncclz/codecs.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define SENTINEL 0xFFFFFFFFu

static void fail(const char *what) {
  fprintf(stderr, "fuzz_stream: %s (last error: %s)\n", what, ncclzLastError());
  abort();
}

static void check_failure(ncclzStatus st) {
  if (st != NCCLZ_ERR_CORRUPT && st != NCCLZ_ERR_ARG && st != NCCLZ_ERR_NOMEM) fail("unexpected status");
  const char *msg = ncclzLastError();
  if (!msg[0] || strchr(msg, '\n')) fail("a failure without a one-line message");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  ncclzSymbols s;
  ncclzStatus st = ncclzStreamDecode(data, size, &s);
  if (st != NCCLZ_OK) {
    check_failure(st);
    return 0;
  }
  float *x = malloc((s.n ? s.n : 1) * sizeof *x);
  uint32_t sentinel = SENTINEL;
  for (size_t i = 0; i < s.n; i++) memcpy(x + i, &sentinel, 4);
  st = ncclzArrayReconstruct(&s, x);
  if (st != NCCLZ_OK) {
    check_failure(st);
  } else if (s.qp.kind != NCCLZ_QUANT_NONE) { /* none passes any bit pattern through */
    for (size_t i = 0; i < s.n; i++)
      if (!memcmp(x + i, &sentinel, 4) || isnan(x[i])) fail("an output element left unwritten or NaN");
  }
  free(x);
  ncclzSymbolsFree(&s);
  return 0;
}

#ifdef NCCLZ_LIBFUZZER
size_t LLVMFuzzerMutate(uint8_t *data, size_t size, size_t max_size);
size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size, unsigned int seed);

static uint32_t get_u32(const uint8_t *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static void put_u32(uint8_t *p, uint32_t v) {
  for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
}

static uint32_t next(unsigned *rng) {
  *rng = *rng * 1103515245u + 12345u;
  return *rng >> 8;
}

/* Boundary values for a 32-bit field: 0, 1, all ones, powers of two, small moves, anything. */
static uint32_t interesting(unsigned *rng, uint32_t old) {
  switch (next(rng) % 8) {
  case 0: return 0;
  case 1: return 1;
  case 2: return 0xFFFFFFFFu;
  case 3: return 1u << (next(rng) % 32);
  case 4: return old + 1;
  case 5: return old - 1;
  case 6: return 0x80000000u;
  default: return next(rng) ^ (next(rng) << 16);
  }
}

/* Offsets of the frame headers in data (at most cap), walking the payload sizes as they stand. */
static size_t frame_offsets(const uint8_t *data, size_t size, size_t *at, size_t cap) {
  size_t n = 0;
  for (size_t off = NCCLZ_STREAM_HEADER_BYTES; off + NCCLZ_FRAME_HEADER_BYTES <= size && n < cap;) {
    at[n++] = off;
    uint64_t next_off = (uint64_t)off + NCCLZ_FRAME_HEADER_BYTES + get_u32(data + off + 16);
    if (next_off > size) break;
    off = (size_t)next_off;
  }
  return n;
}

/* One header field (stream or frame, byte or word) set to a boundary value. */
static void edit_field(uint8_t *data, size_t size, unsigned *rng) {
  static const size_t stream_words[] = {8, 12, 16, 20, 24, 28, 32, 36, 40, 48, 52, 56};
  static const size_t frame_words[] = {12, 16, 20, 24, 28, 32, 36, 40, 44, 48, 56};
  size_t frames[64], nf = frame_offsets(data, size, frames, 64);
  int in_frame = nf && next(rng) % 2;
  uint8_t *h = in_frame ? data + frames[next(rng) % nf] : data;
  if (next(rng) % 3 == 0) {
    size_t at = in_frame ? 5 + next(rng) % 7 : 5 + next(rng) % 3 + (next(rng) % 2) * 39; /* enums, 44, 45 */
    h[at] = (uint8_t)interesting(rng, h[at]);
  } else if (in_frame) {
    size_t at = frame_words[next(rng) % (sizeof frame_words / sizeof frame_words[0])];
    put_u32(h + at, interesting(rng, get_u32(h + at)));
  } else {
    size_t at = stream_words[next(rng) % (sizeof stream_words / sizeof stream_words[0])];
    put_u32(h + at, interesting(rng, get_u32(h + at)));
  }
}

/* Recomputes every checksum over the bytes present: the stream header's, then per frame the
 * payload check (over the payload bytes that exist) and the header's. */
static void reseal(uint8_t *data, size_t size) {
  if (size < NCCLZ_STREAM_HEADER_BYTES) return;
  put_u32(data + 60, ncclzFnv1a(data, 60));
  size_t frames[4096], nf = frame_offsets(data, size, frames, 4096);
  for (size_t k = 0; k < nf; k++) {
    uint8_t *f = data + frames[k];
    size_t avail = size - frames[k] - NCCLZ_FRAME_HEADER_BYTES, payload = get_u32(f + 16);
    if (payload > avail) payload = avail;
    put_u32(f + 52, ncclzPayloadCheck(f + NCCLZ_FRAME_HEADER_BYTES, payload));
    put_u32(f + 60, ncclzFnv1a(f, 60));
  }
}

size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size, unsigned int seed) {
  unsigned rng = seed;
  if (size >= NCCLZ_STREAM_HEADER_BYTES && next(&rng) % 3 == 0)
    edit_field(data, size, &rng);
  else
    size = LLVMFuzzerMutate(data, size, max_size);
  if (next(&rng) % 16) reseal(data, size); /* now and then a stale checksum, to keep those paths */
  return size;
}
#endif
