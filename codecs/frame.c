/* Frames (64-byte header + side data + coded symbols) and stream headers (FORMAT.md).
 * Every validation failure is NCCLZ_ERR_CORRUPT with a one-line message naming the field. */
#include "ncclz/codecs.h"
#include "hd_util.h"

#include <math.h>
#include <string.h>

/* ------------------------------------------------------------ byte helpers */

static void store_u16(uint8_t *p, uint16_t v) {
  p[0] = (uint8_t)v;
  p[1] = (uint8_t)(v >> 8);
}
static uint16_t load_u16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }
static void store_u64(uint8_t *p, uint64_t v) {
  ncclz_store_u32(p, (uint32_t)v);
  ncclz_store_u32(p + 4, (uint32_t)(v >> 32));
}
static uint64_t load_u64(const uint8_t *p) { return ncclz_load_u32(p) | (uint64_t)ncclz_load_u32(p + 4) << 32; }
static void store_f32(uint8_t *p, float f) {
  uint32_t v;
  memcpy(&v, &f, 4);
  ncclz_store_u32(p, v);
}
static float load_f32(const uint8_t *p) {
  uint32_t v = ncclz_load_u32(p);
  float f;
  memcpy(&f, &v, 4);
  return f;
}
static void store_f64(uint8_t *p, double d) {
  uint64_t v;
  memcpy(&v, &d, 8);
  store_u64(p, v);
}
static double load_f64(const uint8_t *p) {
  uint64_t v = load_u64(p);
  double d;
  memcpy(&d, &v, 8);
  return d;
}


/* ------------------------------------------------------------ frame header */

void ncclzFrameHeaderPack(const ncclzFrameHeader *h, uint8_t out[NCCLZ_FRAME_HEADER_BYTES]) {
  ncclz_store_u32(out + 0, NCCLZ_FRAME_MAGIC);
  out[4] = h->version;
  out[5] = h->coder;
  out[6] = h->dtype;
  out[7] = h->quant;
  out[8] = h->lorenzo;
  out[9] = h->qsgd_bits;
  store_u16(out + 10, h->flags);
  ncclz_store_u32(out + 12, h->n_symbols);
  ncclz_store_u32(out + 16, h->payload_bytes);
  ncclz_store_u32(out + 20, h->side_bytes);
  ncclz_store_u32(out + 24, h->qsgd_bucket);
  ncclz_store_u32(out + 28, h->coder_p0);
  ncclz_store_u32(out + 32, (uint32_t)h->coder_p1);
  ncclz_store_u32(out + 36, h->coder_p2);
  store_f64(out + 40, h->abs_eb);
  store_f32(out + 48, h->fill_value);
  ncclz_store_u32(out + 52, h->payload_check);
  ncclz_store_u32(out + 56, h->raw_bytes);
  ncclz_store_u32(out + 60, ncclz_fnv1a(out, 60));
}

static void unpack_frame_header(const uint8_t *src, ncclzFrameHeader *h) {
  h->version = src[4];
  h->coder = src[5];
  h->dtype = src[6];
  h->quant = src[7];
  h->lorenzo = src[8];
  h->qsgd_bits = src[9];
  h->flags = load_u16(src + 10);
  h->n_symbols = ncclz_load_u32(src + 12);
  h->payload_bytes = ncclz_load_u32(src + 16);
  h->side_bytes = ncclz_load_u32(src + 20);
  h->qsgd_bucket = ncclz_load_u32(src + 24);
  h->coder_p0 = ncclz_load_u32(src + 28);
  h->coder_p1 = (int32_t)ncclz_load_u32(src + 32);
  h->coder_p2 = ncclz_load_u32(src + 36);
  h->abs_eb = load_f64(src + 40);
  h->fill_value = load_f32(src + 48);
  h->payload_check = ncclz_load_u32(src + 52);
  h->raw_bytes = ncclz_load_u32(src + 56);
}

static ncclzStatus check_enums(const ncclzFrameHeader *h) {
  if (h->coder >= NCCLZ_CODER_COUNT) return ncclzSetError(NCCLZ_ERR_CORRUPT, "frame header: unknown coder id %u", h->coder);
  if (h->dtype >= NCCLZ_DTYPE_COUNT) return ncclzSetError(NCCLZ_ERR_CORRUPT, "frame header: unknown dtype id %u", h->dtype);
  if (h->quant > NCCLZ_QUANT_QSGD)
    return ncclzSetError(NCCLZ_ERR_CORRUPT, "frame header: unknown quantizer id %u", h->quant);
  if (h->lorenzo > 3)
    return ncclzSetError(NCCLZ_ERR_CORRUPT, "frame header: Lorenzo dimensions %u (at most 3)", h->lorenzo);
  if (h->flags & ~(uint16_t)(NCCLZ_FRAME_FLAG_FILL | NCCLZ_FRAME_FLAG_SIDE_SCALES))
    return ncclzSetError(NCCLZ_ERR_CORRUPT, "frame header: unknown flag bits 0x%04x", h->flags);
  return NCCLZ_OK;
}

/* Side data is present exactly when the scales flag is set, and is then one float per bucket. */
static ncclzStatus check_side(const ncclzFrameHeader *h) {
  if (h->side_bytes > h->payload_bytes)
    return ncclzSetError(NCCLZ_ERR_CORRUPT, "frame header: side_bytes %u exceed payload_bytes %u", h->side_bytes,
                         h->payload_bytes);
  int flagged = (h->flags & NCCLZ_FRAME_FLAG_SIDE_SCALES) != 0;
  if (flagged != (h->side_bytes != 0))
    return ncclzSetError(NCCLZ_ERR_CORRUPT, "frame header: side_bytes %u disagree with the side-scales flag (%d)",
                         h->side_bytes, flagged);
  if (flagged && (h->qsgd_bucket == 0 || (uint64_t)h->side_bytes != 4 * (uint64_t)ncclz_ceil_div(h->n_symbols, h->qsgd_bucket)))
    return ncclzSetError(NCCLZ_ERR_CORRUPT,
                         "frame header: side_bytes %u are not one float scale per bucket (%u symbols, bucket %u)",
                         h->side_bytes, h->n_symbols, h->qsgd_bucket);
  return NCCLZ_OK;
}

/* What frame and stream headers check first, in FORMAT.md's order: length, magic, version and
 * the FNV-1a of bytes 0..59. `what` ("frame", "stream") and `tag` ("NCZF", "NCZS") name it. */
_Static_assert(NCCLZ_FRAME_HEADER_BYTES == NCCLZ_STREAM_HEADER_BYTES, "frame and stream headers share a prefix check");
static ncclzStatus check_header_prefix(const uint8_t *src, size_t avail, uint32_t magic_want, const char *what,
                                       const char *tag) {
  if (avail < NCCLZ_FRAME_HEADER_BYTES)
    return ncclzSetError(NCCLZ_ERR_CORRUPT, "%s truncated: %zu bytes available, the header needs %d", what, avail,
                         NCCLZ_FRAME_HEADER_BYTES);
  uint32_t magic = ncclz_load_u32(src);
  if (magic != magic_want)
    return ncclzSetError(NCCLZ_ERR_CORRUPT, "bad %s magic 0x%08x (expected 0x%08x \"%s\")", what, magic, magic_want, tag);
  if (src[4] != NCCLZ_FORMAT_VERSION)
    return ncclzSetError(NCCLZ_ERR_CORRUPT,
                         "unsupported %s version %u (this build reads version %d only; re-encode the data with it)",
                         what, src[4], NCCLZ_FORMAT_VERSION);
  uint32_t stored = ncclz_load_u32(src + 60), computed = ncclz_fnv1a(src, 60);
  if (stored != computed)
    return ncclzSetError(NCCLZ_ERR_CORRUPT, "%s header checksum mismatch (stored 0x%08x, computed 0x%08x)", what,
                         stored, computed);
  return NCCLZ_OK;
}

ncclzStatus ncclzFrameHeaderParse(const uint8_t *src, size_t avail, ncclzFrameHeader *h) {
  ncclzStatus prefix = check_header_prefix(src, avail, NCCLZ_FRAME_MAGIC, "frame", "NCZF");
  if (prefix != NCCLZ_OK) return prefix;
  unpack_frame_header(src, h);
  ncclzStatus st = check_enums(h);
  if (st != NCCLZ_OK) return st;
  uint64_t raw = (uint64_t)h->n_symbols * ncclzDtypeSize((ncclzDtype)h->dtype);
  if (raw != h->raw_bytes)
    return ncclzSetError(NCCLZ_ERR_CORRUPT, "frame header: raw_bytes %u != %u symbols x %zu bytes (%s)", h->raw_bytes,
                         h->n_symbols, ncclzDtypeSize((ncclzDtype)h->dtype), ncclzDtypeName((ncclzDtype)h->dtype));
  st = check_side(h);
  if (st != NCCLZ_OK) return st;
  if (h->payload_bytes > avail - NCCLZ_FRAME_HEADER_BYTES)
    return ncclzSetError(NCCLZ_ERR_CORRUPT, "frame truncated: payload needs %u bytes, %zu available", h->payload_bytes,
                         avail - NCCLZ_FRAME_HEADER_BYTES);
  return NCCLZ_OK;
}

/* ------------------------------------------------------------ frames */

size_t ncclzFrameBound(ncclzCoder c, const ncclzCoderParams *p, size_t n, uint32_t side_bytes) {
  return NCCLZ_FRAME_HEADER_BYTES + (size_t)side_bytes + ncclzCoderBound(c, p, n);
}

/* The quantizer fields of the header; fields that do not apply to the quantizer are 0. */
static void describe_quant(const ncclzQuantParams *q, ncclzFrameHeader *h) {
  if (!q || q->kind == NCCLZ_QUANT_NONE) return;
  h->quant = (uint8_t)q->kind;
  if (q->kind == NCCLZ_QUANT_EB) {
    h->lorenzo = (uint8_t)q->lorenzo;
    h->abs_eb = q->abs_eb;
    if (q->has_fill) {
      h->flags |= NCCLZ_FRAME_FLAG_FILL;
      h->fill_value = q->fill_value;
    }
  } else {
    h->qsgd_bits = (uint8_t)q->qsgd_bits;
    h->qsgd_bucket = q->qsgd_bucket;
  }
}

static ncclzStatus check_encode_args(ncclzCoder c, size_t n, const ncclzFrameDesc *d) {
  if ((unsigned)c >= NCCLZ_CODER_COUNT) return ncclzSetError(NCCLZ_ERR_ARG, "frame: unknown coder %d", (int)c);
  if ((unsigned)d->dtype >= NCCLZ_DTYPE_COUNT) return ncclzSetError(NCCLZ_ERR_ARG, "frame: unknown dtype %d", (int)d->dtype);
  if ((uint64_t)n * ncclzDtypeSize(d->dtype) > UINT32_MAX)
    return ncclzSetError(NCCLZ_ERR_ARG, "frame: %zu symbols exceed the 4 GiB a frame can describe", n);
  if (d->side_bytes == 0) return NCCLZ_OK;
  const ncclzQuantParams *q = d->quant;
  if (!d->side || !q || q->kind != NCCLZ_QUANT_QSGD || q->qsgd_bucket == 0 ||
      (uint64_t)d->side_bytes != 4 * (uint64_t)ncclz_ceil_div(n, q->qsgd_bucket))
    return ncclzSetError(NCCLZ_ERR_ARG, "frame: side data must be one float QSGD scale per bucket (%u bytes given)",
                         d->side_bytes);
  return NCCLZ_OK;
}

static ncclzStatus encode_symbols(ncclzCoder c, const int32_t *sym, size_t n, const ncclzCoderParams *p,
                                  uint8_t *dst, size_t cap, size_t *len, ncclzFrameHeader *h) {
  if (c == NCCLZ_CODER_RAW) return ncclzRawEncode(sym, n, dst, cap, len);
  if (c == NCCLZ_CODER_FIXEDLEN) {
    h->coder_p0 = p->fixedlen_tile_blocks;
    return ncclzFixedlenEncode(sym, n, p, dst, cap, len);
  }
  ncclzHuffAlphabet a;
  h->coder_p0 = p->huffman_segment;
  ncclzStatus st = ncclzHuffmanEncode(sym, n, p, dst, cap, len, &a);
  h->coder_p1 = a.centre;
  h->coder_p2 = a.radius;
  return st;
}

ncclzStatus ncclzFrameEncode(ncclzCoder c, const int32_t *sym, size_t n, const ncclzFrameDesc *d,
                             uint8_t *dst, size_t cap, size_t *out_len) {
  ncclzStatus st = check_encode_args(c, n, d);
  if (st != NCCLZ_OK) return st;
  size_t head = NCCLZ_FRAME_HEADER_BYTES + (size_t)d->side_bytes;
  if (cap < head)
    return ncclzSetError(NCCLZ_ERR_CAPACITY, "frame: header and side data (%zu bytes) exceed the buffer (%zu)", head, cap);
  ncclzFrameHeader h;
  memset(&h, 0, sizeof h);
  h.version = NCCLZ_FORMAT_VERSION;
  h.coder = (uint8_t)c;
  h.dtype = (uint8_t)d->dtype;
  describe_quant(d->quant, &h);
  if (d->side_bytes) {
    h.flags |= NCCLZ_FRAME_FLAG_SIDE_SCALES;
    memcpy(dst + NCCLZ_FRAME_HEADER_BYTES, d->side, d->side_bytes);
  }
  size_t coded = 0;
  st = encode_symbols(c, sym, n, &d->coder_params, dst + head, cap - head, &coded, &h);
  if (st != NCCLZ_OK) return st;
  if (d->side_bytes + coded > UINT32_MAX)
    return ncclzSetError(NCCLZ_ERR_ARG, "frame: payload of %zu bytes exceeds 4 GiB", d->side_bytes + coded);
  h.n_symbols = (uint32_t)n;
  h.payload_bytes = (uint32_t)(d->side_bytes + coded);
  h.side_bytes = d->side_bytes;
  h.raw_bytes = (uint32_t)(n * ncclzDtypeSize(d->dtype));
  h.payload_check = ncclzPayloadCheck(dst + NCCLZ_FRAME_HEADER_BYTES, h.payload_bytes);
  ncclzFrameHeaderPack(&h, dst);
  *out_len = NCCLZ_FRAME_HEADER_BYTES + h.payload_bytes;
  return NCCLZ_OK;
}

/* Coder parameters that the coder does not use must be 0, so every frame has one encoding. */
static ncclzStatus decode_symbols(const ncclzFrameHeader *h, const uint8_t *src, size_t len, int32_t *sym) {
  ncclzCoderParams p;
  memset(&p, 0, sizeof p);
  switch (h->coder) {
  case NCCLZ_CODER_RAW:
    if (h->coder_p0 || h->coder_p1 || h->coder_p2)
      return ncclzSetError(NCCLZ_ERR_CORRUPT, "frame header: raw frame with nonzero coder parameters");
    return ncclzRawDecode(src, len, sym, h->n_symbols);
  case NCCLZ_CODER_FIXEDLEN:
    if (h->coder_p1 || h->coder_p2)
      return ncclzSetError(NCCLZ_ERR_CORRUPT, "frame header: fixedlen frame with nonzero coder parameters 1/2");
    p.fixedlen_tile_blocks = h->coder_p0;
    return ncclzFixedlenDecode(src, len, &p, sym, h->n_symbols);
  default: {
    p.huffman_segment = h->coder_p0;
    ncclzHuffAlphabet a = {h->coder_p1, h->coder_p2};
    return ncclzHuffmanDecode(src, len, &p, a, sym, h->n_symbols);
  }
  }
}

ncclzStatus ncclzFrameDecode(const uint8_t *src, size_t avail, ncclzFrameHeader *h_out,
                             int32_t *sym, size_t sym_cap, void *side, size_t side_cap, size_t *consumed) {
  ncclzFrameHeader local, *h = h_out ? h_out : &local;
  ncclzStatus st = ncclzFrameHeaderParse(src, avail, h);
  if (st != NCCLZ_OK) return st;
  const uint8_t *payload = src + NCCLZ_FRAME_HEADER_BYTES;
  uint32_t check = ncclzPayloadCheck(payload, h->payload_bytes);
  if (check != h->payload_check)
    return ncclzSetError(NCCLZ_ERR_CORRUPT, "frame payload checksum mismatch (stored 0x%08x, computed 0x%08x)",
                         h->payload_check, check);
  if (h->n_symbols > sym_cap)
    return ncclzSetError(NCCLZ_ERR_CAPACITY, "frame holds %u symbols, the buffer has room for %zu", h->n_symbols,
                         sym_cap);
  if (side && h->side_bytes > side_cap)
    return ncclzSetError(NCCLZ_ERR_CAPACITY, "frame holds %u bytes of side data, the buffer has room for %zu",
                         h->side_bytes, side_cap);
  st = decode_symbols(h, payload + h->side_bytes, h->payload_bytes - h->side_bytes, sym);
  if (st != NCCLZ_OK) return st;
  if (side && h->side_bytes) memcpy(side, payload, h->side_bytes);
  if (consumed) *consumed = NCCLZ_FRAME_HEADER_BYTES + (size_t)h->payload_bytes;
  return NCCLZ_OK;
}

/* ------------------------------------------------------------ stream header */

void ncclzStreamHeaderPack(const ncclzStreamHeader *h, uint8_t out[NCCLZ_STREAM_HEADER_BYTES]) {
  const ncclzQuantParams *q = &h->quant;
  memset(out, 0, NCCLZ_STREAM_HEADER_BYTES);
  ncclz_store_u32(out + 0, NCCLZ_STREAM_MAGIC);
  out[4] = NCCLZ_FORMAT_VERSION;
  out[5] = (uint8_t)h->dtype;
  out[6] = (uint8_t)q->kind;
  out[7] = (uint8_t)q->lorenzo;
  store_u64(out + 8, h->n_elems);
  for (int i = 0; i < 3; i++) ncclz_store_u32(out + 16 + 4 * i, q->dims[i]);
  ncclz_store_u32(out + 28, h->n_frames);
  store_f64(out + 32, q->abs_eb);
  store_f32(out + 40, q->fill_value);
  out[44] = q->has_fill ? 1 : 0;
  out[45] = (uint8_t)q->qsgd_bits;
  ncclz_store_u32(out + 48, q->qsgd_bucket);
  ncclz_store_u32(out + 52, q->rank);
  ncclz_store_u32(out + 56, (uint32_t)q->seed);
  ncclz_store_u32(out + 60, ncclz_fnv1a(out, 60));
}

static ncclzStatus check_stream_fields(const uint8_t *src) {
  if (src[5] >= NCCLZ_DTYPE_COUNT) return ncclzSetError(NCCLZ_ERR_CORRUPT, "stream header: unknown dtype id %u", src[5]);
  if (src[6] > NCCLZ_QUANT_QSGD)
    return ncclzSetError(NCCLZ_ERR_CORRUPT, "stream header: unknown quantizer id %u", src[6]);
  if (src[7] > 3) return ncclzSetError(NCCLZ_ERR_CORRUPT, "stream header: Lorenzo dimensions %u (at most 3)", src[7]);
  if (src[44] > 1) return ncclzSetError(NCCLZ_ERR_CORRUPT, "stream header: has-fill byte is %u (0 or 1)", src[44]);
  if (load_u16(src + 46) != 0)
    return ncclzSetError(NCCLZ_ERR_CORRUPT, "stream header: reserved bytes 46..47 are not zero");
  return NCCLZ_OK;
}

/* The shape: with Lorenzo it must describe n_elems exactly (checked product, no zero dimension)
 * or be the empty row 1 x 1 x 0; without, the decoder does not use it, but it is still one of
 * those, 0 x 0 x 0, or the 1 x 1 x (2^32-1) that stands for a longer 1D array (FORMAT.md). */
static ncclzStatus check_stream_dims(const ncclzStreamHeader *h) {
  const uint32_t *d = h->quant.dims;
  uint64_t n = h->n_elems;
  if (ncclz_dims_describe(d[0], d[1], d[2], n)) return NCCLZ_OK;
  int row = d[0] == 1 && d[1] == 1, empty = row && d[2] == 0 && n == 0;
  int none = !d[0] && !d[1] && !d[2], long_row = row && d[2] == UINT32_MAX && n > UINT32_MAX;
  if (empty || (!h->quant.lorenzo && (none || long_row))) return NCCLZ_OK;
  return ncclzSetError(NCCLZ_ERR_CORRUPT, "stream header: dims %u x %u x %u do not describe its %llu elements", d[0],
                       d[1], d[2], (unsigned long long)h->n_elems);
}

/* Each quantizer's parameters in range, and the fields it does not use 0 (one encoding per stream). */
static ncclzStatus check_stream_quant(const ncclzQuantParams *q) {
  int eb = q->kind == NCCLZ_QUANT_EB, qsgd = q->kind == NCCLZ_QUANT_QSGD;
  uint32_t fill_bits;
  memcpy(&fill_bits, &q->fill_value, 4);
  if (eb && !(q->abs_eb > 0 && isfinite(2.0 * q->abs_eb)))
    return ncclzSetError(NCCLZ_ERR_CORRUPT, "stream header: error bound %g is not positive and finite", q->abs_eb);
  if (!eb && (q->abs_eb != 0 || signbit(q->abs_eb) || q->lorenzo || q->has_fill))
    return ncclzSetError(NCCLZ_ERR_CORRUPT, "stream header: error bound, Lorenzo or fill set for quantizer %d",
                         (int)q->kind);
  if (q->has_fill ? !isfinite(q->fill_value) : fill_bits != 0)
    return ncclzSetError(NCCLZ_ERR_CORRUPT, "stream header: fill value %g with has-fill %d", (double)q->fill_value,
                         q->has_fill);
  if (qsgd && ((q->qsgd_bits != 2 && q->qsgd_bits != 4 && q->qsgd_bits != 8) || q->qsgd_bucket == 0))
    return ncclzSetError(NCCLZ_ERR_CORRUPT, "stream header: QSGD bits %d (2, 4 or 8) and bucket %u (at least 1)",
                         q->qsgd_bits, q->qsgd_bucket);
  if (!qsgd && (q->qsgd_bits || q->qsgd_bucket))
    return ncclzSetError(NCCLZ_ERR_CORRUPT, "stream header: QSGD bits %d and bucket %u set for quantizer %d",
                         q->qsgd_bits, q->qsgd_bucket, (int)q->kind);
  return NCCLZ_OK;
}

ncclzStatus ncclzStreamHeaderParse(const uint8_t *src, size_t avail, ncclzStreamHeader *h) {
  ncclzStatus st = check_header_prefix(src, avail, NCCLZ_STREAM_MAGIC, "stream", "NCZS");
  if (st != NCCLZ_OK) return st;
  st = check_stream_fields(src);
  if (st != NCCLZ_OK) return st;
  ncclzStreamHeader v;
  memset(&v, 0, sizeof v);
  ncclzQuantParams *q = &v.quant;
  v.dtype = (ncclzDtype)src[5];
  q->kind = (ncclzQuantKind)src[6];
  q->lorenzo = src[7];
  v.n_elems = load_u64(src + 8);
  for (int i = 0; i < 3; i++) q->dims[i] = ncclz_load_u32(src + 16 + 4 * i);
  v.n_frames = ncclz_load_u32(src + 28);
  q->abs_eb = load_f64(src + 32);
  q->fill_value = load_f32(src + 40);
  q->has_fill = src[44];
  q->qsgd_bits = src[45];
  q->qsgd_bucket = ncclz_load_u32(src + 48);
  q->rank = ncclz_load_u32(src + 52);
  q->seed = ncclz_load_u32(src + 56); /* the stream keeps the low 32 bits only */
  if (v.n_elems > SIZE_MAX / sizeof(int32_t))
    return ncclzSetError(NCCLZ_ERR_CORRUPT, "stream header: %llu elements exceed this machine's address space",
                         (unsigned long long)v.n_elems);
  if ((st = check_stream_dims(&v)) != NCCLZ_OK || (st = check_stream_quant(q)) != NCCLZ_OK) return st;
  *h = v;
  return NCCLZ_OK;
}
