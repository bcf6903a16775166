/* Whole arrays: quantize once into symbols, cut them into frames, and back.
 * This is the path `ncclz codec` measures and the executor's interface stage reuses. */
#include "hd_util.h"

#include <stdlib.h>
#include <string.h>

void ncclzSymbolsFree(ncclzSymbols *s) {
  free(s->sym);
  free(s->scales);
  memset(s, 0, sizeof *s);
}

/* quant none: the data's own bits are the symbols (16-bit types zero-extended). */
static void bits_to_symbols(ncclzDtype dtype, const void *raw, size_t n, int32_t *sym) {
  if (ncclzDtypeSize(dtype) == 4) {
    memcpy(sym, raw, n * 4);
    return;
  }
  const uint16_t *h = raw;
  for (size_t i = 0; i < n; i++) sym[i] = (int32_t)h[i];
}

static void symbols_to_float(ncclzDtype dtype, const int32_t *sym, size_t n, float *x) {
  if (dtype == NCCLZ_DTYPE_F32) {
    memcpy(x, sym, n * 4);
  } else if (dtype == NCCLZ_DTYPE_I32) {
    for (size_t i = 0; i < n; i++) x[i] = (float)sym[i];
  } else {
    for (size_t i = 0; i < n; i++) {
      uint16_t h = (uint16_t)sym[i];
      ncclzToFloat(&h, dtype, 1, x + i);
    }
  }
}

static ncclzStatus quantize_floats(const ncclzQuantParams *qp, const float *x, size_t n, ncclzSymbols *out) {
  if (qp->kind == NCCLZ_QUANT_QSGD) {
    out->n_scales = ncclzQsgdNumBuckets(qp, n);
    out->scales = malloc((out->n_scales ? out->n_scales : 1) * sizeof(float));
    if (!out->scales) return ncclzSetError(NCCLZ_ERR_NOMEM, "cannot allocate %zu QSGD scales", out->n_scales);
    ncclzQsgdScales(qp, x, n, out->scales);
    return ncclzQuantizeQsgd(qp, x, n, out->scales, out->sym);
  }
  if (!qp->lorenzo) return ncclzQuantizeEB(qp, x, n, out->sym);
  int32_t *codes = malloc((n ? n : 1) * sizeof *codes);
  if (!codes) return ncclzSetError(NCCLZ_ERR_NOMEM, "cannot allocate %zu codes", n);
  ncclzStatus st = ncclzQuantizeEB(qp, x, n, codes);
  if (st == NCCLZ_OK) ncclzLorenzoForward(qp, codes, n, out->sym);
  free(codes);
  return st;
}

ncclzStatus ncclzArrayQuantize(const ncclzQuantSpec *spec, ncclzDtype dtype, const void *raw, size_t n,
                               const uint32_t *dims, int ndims, uint32_t rank, ncclzSymbols *out) {
  memset(out, 0, sizeof *out);
  out->dtype = dtype;
  out->n = n;
  out->sym = malloc((n ? n : 1) * sizeof *out->sym);
  if (!out->sym) return ncclzSetError(NCCLZ_ERR_NOMEM, "cannot allocate %zu symbols", n);
  if (spec->kind == NCCLZ_QUANT_NONE) {
    out->qp.kind = NCCLZ_QUANT_NONE;
    bits_to_symbols(dtype, raw, n, out->sym);
    return NCCLZ_OK;
  }
  float *x = malloc((n ? n : 1) * sizeof *x);
  if (!x) {
    ncclzSymbolsFree(out);
    return ncclzSetError(NCCLZ_ERR_NOMEM, "cannot allocate %zu floats", n);
  }
  ncclzToFloat(raw, dtype, n, x);
  ncclzStatus st = ncclzQuantResolve(spec, x, n, dims, ndims, rank, &out->qp);
  if (st == NCCLZ_OK) st = quantize_floats(&out->qp, x, n, out);
  free(x);
  if (st != NCCLZ_OK) {
    out->sym = (free(out->sym), NULL);
    out->scales = (free(out->scales), NULL);
  }
  return st;
}

/* What reconstruction relies on and a hand-made ncclzSymbols may break: a known dtype and
 * quantizer, one scale per QSGD bucket, and a Lorenzo shape of exactly n elements. */
static ncclzStatus check_symbols(const ncclzSymbols *s) {
  const ncclzQuantParams *q = &s->qp;
  if ((unsigned)s->dtype >= NCCLZ_DTYPE_COUNT) return ncclzSetError(NCCLZ_ERR_ARG, "symbols: unknown dtype %d", (int)s->dtype);
  if (q->kind == NCCLZ_QUANT_QSGD && (!q->qsgd_bucket || !s->scales || s->n_scales != ncclzQsgdNumBuckets(q, s->n)))
    return ncclzSetError(NCCLZ_ERR_ARG, "symbols: %zu QSGD scales for %zu elements in buckets of %u", s->n_scales, s->n,
                         q->qsgd_bucket);
  if (q->kind == NCCLZ_QUANT_EB && (q->lorenzo < 0 || q->lorenzo > 3))
    return ncclzSetError(NCCLZ_ERR_ARG, "symbols: Lorenzo dimensions %d (0 to 3)", q->lorenzo);
  if (q->kind == NCCLZ_QUANT_EB && q->lorenzo && s->n && !ncclz_dims_describe(q->dims[0], q->dims[1], q->dims[2], s->n))
    return ncclzSetError(NCCLZ_ERR_ARG, "symbols: dims %u x %u x %u do not describe %zu elements", q->dims[0],
                         q->dims[1], q->dims[2], s->n);
  return NCCLZ_OK;
}

ncclzStatus ncclzArrayReconstruct(const ncclzSymbols *s, float *x) {
  ncclzStatus st = check_symbols(s);
  if (st != NCCLZ_OK) return st;
  switch (s->qp.kind) {
  case NCCLZ_QUANT_NONE:
    symbols_to_float(s->dtype, s->sym, s->n, x);
    return NCCLZ_OK;
  case NCCLZ_QUANT_QSGD:
    return ncclzDequantizeQsgd(&s->qp, s->sym, s->n, s->scales, x);
  case NCCLZ_QUANT_EB:
    break;
  default:
    return ncclzSetError(NCCLZ_ERR_ARG, "symbols: unknown quantizer %d", (int)s->qp.kind);
  }
  if (!s->qp.lorenzo) return ncclzDequantizeEB(&s->qp, s->sym, s->n, x);
  int32_t *codes = malloc((s->n ? s->n : 1) * sizeof *codes);
  if (!codes) return ncclzSetError(NCCLZ_ERR_NOMEM, "cannot allocate %zu codes", s->n);
  ncclzLorenzoInverse(&s->qp, s->sym, s->n, codes);
  st = ncclzDequantizeEB(&s->qp, codes, s->n, x);
  free(codes);
  return st;
}

size_t ncclzFrameSymbols(const ncclzSymbols *s, size_t chunk_bytes) {
  size_t fs = chunk_bytes / ncclzDtypeSize(s->dtype);
  if (fs > (1u << 30)) fs = 1u << 30;
  if (s->qp.kind == NCCLZ_QUANT_QSGD) fs -= fs % s->qp.qsgd_bucket;
  if (fs == 0) fs = s->qp.kind == NCCLZ_QUANT_QSGD ? s->qp.qsgd_bucket : 1;
  return fs;
}

static uint32_t side_bytes_for(const ncclzSymbols *s, size_t nsym) {
  if (s->qp.kind != NCCLZ_QUANT_QSGD) return 0;
  return (uint32_t)(4 * ((nsym + s->qp.qsgd_bucket - 1) / s->qp.qsgd_bucket));
}

static size_t stream_bound(const ncclzSymbols *s, size_t fs, const ncclzCoderParams *cp) {
  size_t bound = NCCLZ_STREAM_HEADER_BYTES;
  for (size_t pos = 0; pos < s->n; pos += fs) {
    size_t m = s->n - pos < fs ? s->n - pos : fs, worst = 0;
    for (int c = 0; c < NCCLZ_CODER_COUNT; c++) {
      size_t b = ncclzFrameBound((ncclzCoder)c, cp, m, side_bytes_for(s, m));
      if (b > worst) worst = b;
    }
    bound += worst;
  }
  return bound;
}

static void stream_header_of(const ncclzSymbols *s, uint32_t n_frames, ncclzStreamHeader *h) {
  memset(h, 0, sizeof *h);
  h->dtype = s->dtype;
  h->quant = s->qp;
  h->n_elems = s->n;
  h->n_frames = n_frames;
}

ncclzStatus ncclzStreamEncode(const ncclzSymbols *s, ncclzCoder coder, ncclzFrameEncoderFn encoder,
                              void *encoder_ctx, size_t frame_syms, const ncclzCoderParams *cp,
                              uint8_t **stream, size_t *stream_len, unsigned coder_mix[NCCLZ_CODER_COUNT]) {
  size_t cap = stream_bound(s, frame_syms, cp), off = NCCLZ_STREAM_HEADER_BYTES;
  uint8_t *buf = malloc(cap);
  if (!buf) return ncclzSetError(NCCLZ_ERR_NOMEM, "cannot allocate a %zu-byte stream", cap);
  uint32_t frames = 0;
  for (size_t pos = 0; pos < s->n; pos += frame_syms, frames++) {
    size_t m = s->n - pos < frame_syms ? s->n - pos : frame_syms, len = 0;
    ncclzCoder c = coder;
    ncclzFrameDesc d = {s->dtype, &s->qp, NULL, side_bytes_for(s, m), *cp};
    if (d.side_bytes) d.side = s->scales + pos / s->qp.qsgd_bucket;
    ncclzStatus st = encoder ? encoder(s->sym + pos, m, &d, buf + off, cap - off, &len, &c, encoder_ctx)
                             : ncclzFrameEncode(c, s->sym + pos, m, &d, buf + off, cap - off, &len);
    if (st != NCCLZ_OK) {
      free(buf);
      return st;
    }
    coder_mix[c]++;
    off += len;
  }
  ncclzStreamHeader h;
  stream_header_of(s, frames, &h);
  ncclzStreamHeaderPack(&h, buf);
  *stream = buf;
  *stream_len = off;
  return NCCLZ_OK;
}

/* A frame describes its symbols as the stream header does (describe_quant writes both from one
 * ncclzQuantParams), and a QSGD frame starts on a bucket boundary, so its scales line up. */
static ncclzStatus check_frame_matches(const ncclzFrameHeader *fh, const ncclzStreamHeader *sh, uint32_t k,
                                       size_t pos) {
  const ncclzQuantParams *q = &sh->quant;
  int eb = q->kind == NCCLZ_QUANT_EB;
  if (fh->dtype != sh->dtype || fh->quant != q->kind)
    return ncclzSetError(NCCLZ_ERR_CORRUPT, "frame %u: dtype/quantizer differ from the stream header", k);
  int fill = (fh->flags & NCCLZ_FRAME_FLAG_FILL) != 0;
  if (fh->lorenzo != (eb ? q->lorenzo : 0) || fh->abs_eb != (eb ? q->abs_eb : 0) || fill != q->has_fill ||
      (fill && fh->fill_value != q->fill_value) || fh->qsgd_bits != q->qsgd_bits || fh->qsgd_bucket != q->qsgd_bucket)
    return ncclzSetError(NCCLZ_ERR_CORRUPT, "frame %u: quantizer parameters differ from the stream header", k);
  if (q->kind == NCCLZ_QUANT_QSGD && pos % q->qsgd_bucket)
    return ncclzSetError(NCCLZ_ERR_CORRUPT, "frame %u starts at symbol %zu, inside a QSGD bucket of %u", k, pos,
                         q->qsgd_bucket);
  return NCCLZ_OK;
}

static ncclzStatus decode_frames(const uint8_t *p, size_t len, const ncclzStreamHeader *sh, ncclzSymbols *out) {
  size_t off = NCCLZ_STREAM_HEADER_BYTES, pos = 0, spos = 0;
  for (uint32_t k = 0; k < sh->n_frames; k++) {
    ncclzFrameHeader fh;
    size_t used = 0, side_cap = (out->n_scales - spos) * sizeof(float);
    void *side = out->scales ? (void *)(out->scales + spos) : NULL;
    ncclzStatus st = ncclzFrameDecode(p + off, len - off, &fh, out->sym + pos, out->n - pos, side,
                                      side ? side_cap : 0, &used);
    if (st == NCCLZ_ERR_CAPACITY) /* the buffers are sized from the stream header: the two disagree */
      return ncclzSetError(NCCLZ_ERR_CORRUPT, "frame %u at byte %zu holds more than the stream header's %zu elements leave room for",
                           k, off, out->n);
    if (st != NCCLZ_OK) return ncclzSetError(st, "frame %u at byte %zu: %s", k, off, ncclzLastError());
    if ((st = check_frame_matches(&fh, sh, k, pos)) != NCCLZ_OK) return st;
    pos += fh.n_symbols;
    spos += fh.side_bytes / sizeof(float);
    off += used;
  }
  if (pos != out->n) return ncclzSetError(NCCLZ_ERR_CORRUPT, "stream: frames hold %zu symbols, header says %zu", pos, out->n);
  if (off != len) return ncclzSetError(NCCLZ_ERR_CORRUPT, "stream: %zu trailing bytes after the last frame", len - off);
  if (out->scales && spos != out->n_scales)
    return ncclzSetError(NCCLZ_ERR_CORRUPT, "stream: frames hold %zu QSGD scales, expected %zu", spos, out->n_scales);
  return NCCLZ_OK;
}

ncclzStatus ncclzStreamDecode(const uint8_t *p, size_t len, ncclzSymbols *out) {
  memset(out, 0, sizeof *out);
  ncclzStreamHeader sh;
  ncclzStatus st = ncclzStreamHeaderParse(p, len, &sh);
  if (st != NCCLZ_OK) return st;
  /* Even width-0 FIXEDLEN blocks cost 5 bits per 32 symbols: bound n before trusting it. */
  if (sh.n_elems > 64 * (uint64_t)len + 1)
    return ncclzSetError(NCCLZ_ERR_CORRUPT, "stream: %llu elements cannot fit in %zu bytes",
                         (unsigned long long)sh.n_elems, len);
  if (sh.n_frames > (len - NCCLZ_STREAM_HEADER_BYTES) / NCCLZ_FRAME_HEADER_BYTES)
    return ncclzSetError(NCCLZ_ERR_CORRUPT, "stream: %u frames cannot fit in %zu bytes", sh.n_frames, len);
  out->dtype = sh.dtype;
  out->qp = sh.quant;
  out->n = (size_t)sh.n_elems;
  out->sym = malloc((out->n ? out->n : 1) * sizeof *out->sym);
  if (sh.quant.kind == NCCLZ_QUANT_QSGD) {
    out->n_scales = ncclzQsgdNumBuckets(&sh.quant, out->n);
    out->scales = malloc((out->n_scales ? out->n_scales : 1) * sizeof(float));
  }
  if (!out->sym || (sh.quant.kind == NCCLZ_QUANT_QSGD && !out->scales)) {
    ncclzSymbolsFree(out);
    return ncclzSetError(NCCLZ_ERR_NOMEM, "stream: cannot allocate %zu symbols", (size_t)sh.n_elems);
  }
  st = decode_frames(p, len, &sh, out);
  if (st != NCCLZ_OK) ncclzSymbolsFree(out);
  return st;
}
