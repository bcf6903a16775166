/* Fuzz target: the frame decoder (scripts/fuzz.sh runs it as fuzz_frame on tests/fuzz/corpus/frame).
 * Each input is decoded twice: as it is (the checksums must reject most mutants), and with its
 * header and payload checks recomputed, so that mutations reach the coders' own validators.
 * Inputs and outputs are exact-size allocations sized from the header, so ASan reports any
 * access past them. Seeds: tests/fuzz/corpus/frame (written by test_fuzz_replay --write-corpus). */
#include "ncclz/codecs.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void put_u32(uint8_t *p, uint32_t v) {
  for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
}

static void decode(const uint8_t *data, size_t size) {
  ncclzFrameHeader h;
  size_t n = 16, side_cap = 0;
  if (ncclzFrameHeaderParse(data, size, &h) == NCCLZ_OK) {
    n = h.n_symbols <= (1u << 22) ? h.n_symbols : 16; /* huge counts get a small buffer */
    side_cap = h.side_bytes;
  }
  int32_t *sym = malloc(sizeof(int32_t) * (n ? n : 1));
  void *side = malloc(side_cap ? side_cap : 1);
  size_t consumed = 0;
  ncclzStatus st = ncclzFrameDecode(data, size, &h, sym, n, side, side_cap, &consumed);
  if (st == NCCLZ_OK && (consumed > size || h.n_symbols > n)) abort(); /* contract broken */
  free(side);
  free(sym);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  decode(data, size);
  if (size < NCCLZ_FRAME_HEADER_BYTES) return 0;
  uint8_t *copy = malloc(size);
  memcpy(copy, data, size);
  size_t payload = (size_t)copy[16] | (size_t)copy[17] << 8 | (size_t)copy[18] << 16 | (size_t)copy[19] << 24;
  if (payload > size - NCCLZ_FRAME_HEADER_BYTES) payload = size - NCCLZ_FRAME_HEADER_BYTES;
  put_u32(copy + 52, ncclzPayloadCheck(copy + NCCLZ_FRAME_HEADER_BYTES, payload));
  put_u32(copy + 60, ncclzFnv1a(copy, 60));
  decode(copy, size);
  free(copy);
  return 0;
}
