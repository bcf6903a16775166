/* RAW coder (symbols as little-endian words), coder parameter defaults and size bounds. */
#include "ncclz/codecs.h"
#include "hd_util.h"
#include "huff_codebook.h"

void ncclzCoderParamsDefault(ncclzCoderParams *p) {
  p->fixedlen_tile_blocks = 256;
  /* 512: on the H200 the batched GPU coder runs 450 / 479 GB/s (encode / decode) on the ResNet-18
   * gradients against 371 / 440 at 1,024, for a CR 1.3% lower (9.56 against 9.69; docs/gpu-codecs.md).
   * The executor's frames use their own, 256 (NCCLZ_FRAME_HUFFMAN_SEGMENT). */
  p->huffman_segment = 512;
}


/* FIXEDLEN: width codes + tile offsets + at most 32 words per block. */
static size_t fixedlen_bound(const ncclzCoderParams *p, size_t n) {
  if (n == 0) return 0;
  size_t nb = ncclz_ceil_div(n, 32);
  size_t tile = p && p->fixedlen_tile_blocks ? p->fixedlen_tile_blocks : 1;
  return 4 * ncclz_ceil_div(5 * nb, 32) + 4 * ncclz_ceil_div(nb, tile) + 4 * 32 * nb;
}

/* HUFFMAN: lo, m, u, the largest length table (dense, K = 8194 nibbles: never larger than the
 * sparse one it is chosen over), nseg and the offsets, and per segment at most
 * NCCLZ_HUFF_MAX_SYMBOL_BITS (51) bits a symbol (a 15-bit escape code, a 5-bit count and 31
 * bits) plus one padding word. */
static size_t huffman_bound(const ncclzCoderParams *p, size_t n) {
  size_t seg = p && p->huffman_segment ? p->huffman_segment : 1;
  size_t nseg = ncclz_ceil_div(n, seg);
  size_t table = 8 + 4 * ncclz_ceil_div(NCCLZ_HUFF_MAX_SYMS, 8) + 4 + 4 * nseg;
  return table + 4 * ncclz_ceil_div(NCCLZ_HUFF_MAX_SYMBOL_BITS * n, 32) + 4 * nseg;
}

size_t ncclzCoderBound(ncclzCoder c, const ncclzCoderParams *p, size_t n) {
  switch (c) {
  case NCCLZ_CODER_RAW: return 4 * n;
  case NCCLZ_CODER_FIXEDLEN: return fixedlen_bound(p, n);
  case NCCLZ_CODER_HUFFMAN: return huffman_bound(p, n);
  default: return 0;
  }
}

ncclzStatus ncclzRawEncode(const int32_t *sym, size_t n, uint8_t *dst, size_t cap, size_t *out_len) {
  if (n > SIZE_MAX / 4 || cap < 4 * n)
    return ncclzSetError(NCCLZ_ERR_CAPACITY, "raw: %zu symbols need %zu bytes, the buffer has %zu",
                         n, 4 * n, cap);
  for (size_t i = 0; i < n; i++) ncclz_store_u32(dst + 4 * i, (uint32_t)sym[i]);
  *out_len = 4 * n;
  return NCCLZ_OK;
}

ncclzStatus ncclzRawDecode(const uint8_t *src, size_t len, int32_t *sym, size_t n) {
  if (n > SIZE_MAX / 4 || len != 4 * n)
    return ncclzSetError(NCCLZ_ERR_CORRUPT, "raw: payload is %zu bytes, %zu symbols need exactly %zu",
                         len, n, 4 * n);
  for (size_t i = 0; i < n; i++) sym[i] = (int32_t)ncclz_load_u32(src + 4 * i);
  return NCCLZ_OK;
}
