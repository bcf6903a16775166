/* FIXEDLEN coder: zigzagged symbols in blocks of 32, each block bit-plane packed at the bit width
 * of its largest value (FORMAT.md). The bit planes come from a 32x32 bit-matrix transpose, which
 * costs ~5 operations a symbol instead of one per bit. */
#include "ncclz/codecs.h"
#include "hd_util.h"

#define BLOCK 32u


static uint32_t bit_length(uint32_t v) {
#if defined(__GNUC__)
  return v ? 32u - (uint32_t)__builtin_clz(v) : 0u;
#else
  return ncclz_bitlen(v);
#endif
}

/* In-place transpose of a 32x32 bit matrix, bit c of a[r] being element (r, c): afterwards
 * bit c of a[r] is the old bit r of a[c]. Its own inverse. Swaps ever smaller off-diagonal
 * blocks (Hacker's Delight 7-3, written for LSB-first bit numbering). */
static inline void transpose_round(uint32_t a[32], uint32_t j, uint32_t mask) {
  for (uint32_t base = 0; base < 32; base += 2 * j) {
    for (uint32_t k = base; k < base + j; k++) { /* independent pairs: vectorizable */
      uint32_t t = ((a[k] >> j) ^ a[k + j]) & mask;
      a[k] ^= t << j;
      a[k + j] ^= t;
    }
  }
}

static void transpose32(uint32_t a[32]) {
  /* Constant arguments let the compiler unroll each round. */
  transpose_round(a, 16, 0x0000FFFFu);
  transpose_round(a, 8, 0x00FF00FFu);
  transpose_round(a, 4, 0x0F0F0F0Fu);
  transpose_round(a, 2, 0x33333333u);
  transpose_round(a, 1, 0x55555555u);
}

/* Loads block b's zigzagged symbols (the tail of the last block is zero) and returns their OR. */
static uint32_t load_block(const int32_t *sym, size_t n, size_t b, uint32_t z[32]) {
  size_t base = b * BLOCK;
  uint32_t any = 0;
  if (n - base >= BLOCK) { /* full block: no tail test in the loop */
    for (size_t l = 0; l < BLOCK; l++) {
      z[l] = ncclz_zigzag(sym[base + l]);
      any |= z[l];
    }
    return any;
  }
  for (size_t l = 0; l < BLOCK; l++) {
    z[l] = l < n - base ? ncclz_zigzag(sym[base + l]) : 0u;
    any |= z[l];
  }
  return any;
}

/* Stored width: the bit length, except that 31 is widened to 32 (5-bit code 31 means 32). */
static uint32_t stored_width(uint32_t any) {
  uint32_t w = bit_length(any);
  return w == 31 ? 32 : w;
}
static uint32_t width_code(uint32_t w) { return w == 32 ? 31 : w; }
static uint32_t width_of_code(uint32_t code) { return code == 31 ? 32 : code; }

/* Sequential LSB-first writer of 5-bit codes into consecutive words. */
typedef struct {
  uint8_t *dst;
  uint64_t acc;
  uint32_t nacc;
} CodeWriter;

static void code_put(CodeWriter *w, uint32_t code) {
  w->acc |= (uint64_t)code << w->nacc;
  w->nacc += 5;
  if (w->nacc >= 32) {
    ncclz_store_u32(w->dst, (uint32_t)w->acc);
    w->dst += 4;
    w->acc >>= 32;
    w->nacc -= 32;
  }
}

static void code_flush(CodeWriter *w) {
  if (w->nacc) ncclz_store_u32(w->dst, (uint32_t)w->acc);
}

/* Sequential reader of 5-bit codes; reads only the words of the code area (the caller checks
 * that the area fits in the payload). */
typedef struct {
  const uint8_t *src;
  size_t words, next;
  uint64_t acc;
  uint32_t nacc;
} CodeReader;

static uint32_t code_get(CodeReader *r) {
  if (r->nacc < 5) {
    uint32_t word = r->next < r->words ? ncclz_load_u32(r->src + 4 * r->next) : 0u;
    r->next++;
    r->acc |= (uint64_t)word << r->nacc;
    r->nacc += 32;
  }
  uint32_t code = (uint32_t)(r->acc & 31u);
  r->acc >>= 5;
  r->nacc -= 5;
  return code;
}

/* Pass 1: width codes and tile offsets; returns the total packed width (in words). */
static size_t write_widths(const int32_t *sym, size_t n, size_t nb, uint32_t tile, uint8_t *codes,
                           uint8_t *offsets) {
  CodeWriter cw = {codes, 0, 0};
  uint32_t z[32];
  size_t total = 0;
  for (size_t b = 0; b < nb; b++) {
    if (b % tile == 0) ncclz_store_u32(offsets + 4 * (b / tile), (uint32_t)(4 * total));
    uint32_t w = stored_width(load_block(sym, n, b, z));
    code_put(&cw, width_code(w));
    total += w;
  }
  code_flush(&cw);
  return total;
}

/* Pass 2: bit planes, block after block. */
static void write_planes(const int32_t *sym, size_t n, size_t nb, uint8_t *packed) {
  uint32_t z[32];
  for (size_t b = 0; b < nb; b++) {
    uint32_t w = stored_width(load_block(sym, n, b, z));
    if (w == 0) continue;
    transpose32(z);
    for (uint32_t j = 0; j < w; j++) ncclz_store_u32(packed + 4 * j, z[j]);
    packed += 4 * w;
  }
}

ncclzStatus ncclzFixedlenEncode(const int32_t *sym, size_t n, const ncclzCoderParams *p,
                                uint8_t *dst, size_t cap, size_t *out_len) {
  uint32_t tile = p->fixedlen_tile_blocks;
  if (tile == 0) return ncclzSetError(NCCLZ_ERR_ARG, "fixedlen: tile size (blocks per tile) must be > 0");
  *out_len = 0;
  if (n == 0) return NCCLZ_OK;
  size_t nb = ncclz_ceil_div(n, BLOCK), nt = ncclz_ceil_div(nb, tile);
  size_t code_bytes = 4 * ncclz_ceil_div(5 * nb, 32), head = code_bytes + 4 * nt;
  if (cap < head)
    return ncclzSetError(NCCLZ_ERR_CAPACITY, "fixedlen: %zu bytes of width codes and tile offsets do not fit in %zu",
                         head, cap);
  size_t total_w = write_widths(sym, n, nb, tile, dst, dst + code_bytes);
  size_t size = head + 4 * total_w;
  if (size > cap)
    return ncclzSetError(NCCLZ_ERR_CAPACITY, "fixedlen: the coded size %zu exceeds the buffer (%zu bytes)", size, cap);
  if (4 * total_w > UINT32_MAX)
    return ncclzSetError(NCCLZ_ERR_ARG, "fixedlen: packed area of %zu bytes overflows the 32-bit tile offsets",
                         4 * total_w);
  write_planes(sym, n, nb, dst + head);
  *out_len = size;
  return NCCLZ_OK;
}

/* Reads all width codes, checking the tile offsets; returns the total width in *total_w. */
static ncclzStatus check_widths(const uint8_t *src, size_t code_bytes, size_t nb, uint32_t tile,
                                const uint8_t *offsets, size_t *total_w) {
  CodeReader cr = {src, code_bytes / 4, 0, 0, 0};
  size_t total = 0;
  for (size_t b = 0; b < nb; b++) {
    if (b % tile == 0) {
      uint32_t stored = ncclz_load_u32(offsets + 4 * (b / tile));
      if ((uint64_t)stored != (uint64_t)total * 4)
        return ncclzSetError(NCCLZ_ERR_CORRUPT, "fixedlen: tile %zu offset is %u, the widths before it give %zu",
                             b / tile, stored, 4 * total);
    }
    total += width_of_code(code_get(&cr));
  }
  /* The bits after the last code are zero padding. */
  if ((5 * nb) % 32 && (cr.acc & ((1ull << cr.nacc) - 1)) != 0)
    return ncclzSetError(NCCLZ_ERR_CORRUPT, "fixedlen: nonzero padding after the %zu width codes", nb);
  *total_w = total;
  return NCCLZ_OK;
}

/* Unpacks the blocks; sizes were checked, so every read is inside the packed area. */
static ncclzStatus read_planes(const uint8_t *codes, size_t code_bytes, const uint8_t *packed,
                               int32_t *sym, size_t n, size_t nb) {
  CodeReader cr = {codes, code_bytes / 4, 0, 0, 0};
  uint32_t z[32];
  for (size_t b = 0; b < nb; b++) {
    uint32_t w = width_of_code(code_get(&cr));
    for (uint32_t j = 0; j < 32; j++) z[j] = j < w ? ncclz_load_u32(packed + 4 * j) : 0u;
    packed += 4 * w;
    transpose32(z);
    size_t base = b * BLOCK;
    size_t count = n - base < BLOCK ? n - base : BLOCK;
    for (size_t l = 0; l < count; l++) sym[base + l] = ncclz_unzigzag(z[l]);
    for (size_t l = count; l < BLOCK; l++)
      if (z[l]) return ncclzSetError(NCCLZ_ERR_CORRUPT, "fixedlen: nonzero padding lane %zu in the last block", l);
  }
  return NCCLZ_OK;
}

ncclzStatus ncclzFixedlenDecode(const uint8_t *src, size_t len, const ncclzCoderParams *p,
                                int32_t *sym, size_t n) {
  uint32_t tile = p->fixedlen_tile_blocks;
  if (tile == 0) return ncclzSetError(NCCLZ_ERR_CORRUPT, "fixedlen: tile size (blocks per tile) is 0");
  if (n == 0) {
    if (len != 0) return ncclzSetError(NCCLZ_ERR_CORRUPT, "fixedlen: 0 symbols but %zu payload bytes", len);
    return NCCLZ_OK;
  }
  if (n > SIZE_MAX / 8) return ncclzSetError(NCCLZ_ERR_CORRUPT, "fixedlen: symbol count %zu is too large", n);
  size_t nb = ncclz_ceil_div(n, BLOCK), nt = ncclz_ceil_div(nb, tile);
  size_t code_bytes = 4 * ncclz_ceil_div(5 * nb, 32), head = code_bytes + 4 * nt;
  if (len < head)
    return ncclzSetError(NCCLZ_ERR_CORRUPT,
                         "fixedlen: payload of %zu bytes is shorter than its %zu bytes of width codes and tile offsets",
                         len, head);
  size_t total_w = 0;
  ncclzStatus st = check_widths(src, code_bytes, nb, tile, src + code_bytes, &total_w);
  if (st != NCCLZ_OK) return st;
  if (len != head + 4 * total_w)
    return ncclzSetError(NCCLZ_ERR_CORRUPT, "fixedlen: payload is %zu bytes, the widths give exactly %zu",
                         len, head + 4 * total_w);
  return read_planes(src, code_bytes, src + head, sym, n, nb);
}
