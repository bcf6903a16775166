/* Data profiles: CR per coder and frame size for the sums of 1..N ranks' symbols, quantized with
 * the step the ranks would agree on. The simulator uses them for the bytes each phase sends. */
#include "ncclz/calibrate.h"

#include <stdlib.h>
#include <string.h>

/* The quantizer all ranks agree on: resolved over every rank's values (REL range of the union),
 * with the shape of one rank (Lorenzo runs per rank, and is linear across ranks). */
static ncclzStatus agree_params(const ncclzQuantSpec *spec, float *const *x, uint32_t nr, size_t n,
                                const uint32_t *dims, int ndims, ncclzQuantParams *qp) {
  size_t total = (size_t)nr * n;
  float *all = malloc((total ? total : 1) * sizeof *all);
  if (!all) return ncclzSetError(NCCLZ_ERR_NOMEM, "data profile: out of memory");
  for (uint32_t r = 0; r < nr; r++) memcpy(all + r * n, x[r], n * sizeof *all);
  ncclzQuantParams whole;
  ncclzQuantSpec flat = *spec; /* the range needs no shape */
  flat.lorenzo = 0;
  ncclzStatus st = ncclzQuantResolve(&flat, all, total, NULL, 0, 0, &whole);
  free(all);
  if (st == NCCLZ_OK) st = ncclzQuantResolve(spec, x[0], n, dims, ndims, 0, qp);
  if (st == NCCLZ_OK && qp->kind == NCCLZ_QUANT_EB) {
    qp->abs_eb = whole.abs_eb;
    qp->bound = whole.bound;
  }
  return st;
}

/* Symbols of rank r with the agreed parameters; QSGD uses the shared (max) bucket scales. */
static ncclzStatus rank_symbols(const ncclzQuantParams *qp0, uint32_t r, const float *x, size_t n,
                                const float *shared_scales, int32_t *sym) {
  ncclzQuantParams qp = *qp0;
  qp.rank = r;
  if (qp.kind == NCCLZ_QUANT_QSGD) return ncclzQuantizeQsgd(&qp, x, n, shared_scales, sym);
  if (!qp.lorenzo) return ncclzQuantizeEB(&qp, x, n, sym);
  ncclzStatus st = ncclzQuantizeEB(&qp, x, n, sym);
  if (st == NCCLZ_OK) ncclzLorenzoForward(&qp, sym, n, sym);
  return st;
}

static ncclzStatus shared_scales(const ncclzQuantParams *qp, float *const *x, uint32_t nr, size_t n, float **out) {
  *out = NULL;
  if (qp->kind != NCCLZ_QUANT_QSGD) return NCCLZ_OK;
  size_t nb = ncclzQsgdNumBuckets(qp, n);
  float *s = calloc(nb ? nb : 1, sizeof *s), *t = malloc((nb ? nb : 1) * sizeof *t);
  if (!s || !t) {
    free(s);
    free(t);
    return ncclzSetError(NCCLZ_ERR_NOMEM, "data profile: out of memory");
  }
  for (uint32_t r = 0; r < nr; r++) {
    ncclzQsgdScales(qp, x[r], n, t);
    for (size_t b = 0; b < nb; b++) s[b] = t[b] > s[b] ? t[b] : s[b];
  }
  free(t);
  *out = s;
  return NCCLZ_OK;
}

/* acc += sym, as the reduction on codes does (a fill code absorbs). */
static void add_codes(int32_t *acc, const int32_t *sym, size_t n) {
  for (size_t i = 0; i < n; i++)
    acc[i] = acc[i] == NCCLZ_FILL_CODE || sym[i] == NCCLZ_FILL_CODE ? NCCLZ_FILL_CODE
                                                                     : (int32_t)((uint32_t)acc[i] + (uint32_t)sym[i]);
}

/* CR of each coder over the whole array cut into frames of fs symbols (no side data: the
 * executor's frames carry none, every rank already holds the agreed scales). */
static ncclzStatus measure_point(const int32_t *sym, size_t n, ncclzDtype dtype, const ncclzQuantParams *qp,
                                 size_t fs, uint8_t *buf, size_t cap, double cr[NCCLZ_CODER_COUNT]) {
  ncclzCoderParams cp;
  ncclzFrameCoderParams(&cp); /* the executor's frames */
  ncclzFrameDesc d = {dtype, qp->kind == NCCLZ_QUANT_NONE ? NULL : qp, NULL, 0, cp};
  for (int c = 0; c < NCCLZ_CODER_COUNT; c++) {
    size_t total = 0;
    for (size_t pos = 0; pos < n; pos += fs) {
      size_t m = n - pos < fs ? n - pos : fs, len = 0;
      ncclzStatus st = ncclzFrameEncode((ncclzCoder)c, sym + pos, m, &d, buf, cap, &len);
      if (st != NCCLZ_OK) return st;
      total += len;
    }
    cr[c] = total ? (double)(n * ncclzDtypeSize(dtype)) / (double)total : 0;
  }
  return NCCLZ_OK;
}

static ncclzStatus profile_row(const int32_t *acc, size_t n, ncclzDtype dtype, const ncclzQuantParams *qp,
                               const uint64_t *frame_bytes, uint32_t nf, ncclzDataRow *row) {
  ncclzSymbolStats stats;
  ncclzStatus st = ncclzSymbolStatsCompute(acc, n, &stats);
  double ent = stats.entropy_bits > 0 ? 8.0 * (double)(n * ncclzDtypeSize(dtype)) / stats.entropy_bits : 0;
  row->n_frames = nf;
  for (uint32_t f = 0; f < nf && st == NCCLZ_OK; f++) {
    ncclzCoderParams cp;
    ncclzFrameCoderParams(&cp);
    size_t fs = frame_bytes[f] / ncclzDtypeSize(dtype), cap = 0;
    if (fs == 0) fs = 1;
    if (fs > n && n) fs = n; /* a frame larger than the data codes it whole: no buffer beyond it */
    for (int c = 0; c < NCCLZ_CODER_COUNT; c++) {
      size_t b = ncclzFrameBound((ncclzCoder)c, &cp, fs, 0);
      cap = b > cap ? b : cap;
    }
    uint8_t *buf = malloc(cap);
    if (!buf) return ncclzSetError(NCCLZ_ERR_NOMEM, "data profile: out of memory");
    row->at[f].frame_bytes = frame_bytes[f];
    row->at[f].entropy_cr = ent;
    st = measure_point(acc, n, dtype, qp, fs, buf, cap, row->at[f].cr);
    free(buf);
  }
  return st;
}

static ncclzStatus check_args(uint32_t n_inputs, uint32_t n_frame_sizes) {
  if (n_inputs < 1 || n_inputs > NCCLZ_DP_MAX_RANKS)
    return ncclzSetError(NCCLZ_ERR_ARG, "data profile: %u ranks (1..%d)", n_inputs, NCCLZ_DP_MAX_RANKS);
  if (n_frame_sizes < 1 || n_frame_sizes > NCCLZ_DP_MAX_FRAMES)
    return ncclzSetError(NCCLZ_ERR_ARG, "data profile: %u frame sizes (1..%d)", n_frame_sizes, NCCLZ_DP_MAX_FRAMES);
  return NCCLZ_OK;
}

static ncclzStatus build(const ncclzQuantSpec *spec, ncclzDtype dtype, float *const *x, uint32_t nr, size_t n,
                         const uint32_t *dims, int ndims, const uint64_t *fb, uint32_t nf, ncclzDataProfile *out) {
  ncclzQuantParams qp;
  float *scales = NULL;
  int32_t *sym = malloc((n ? n : 1) * sizeof *sym), *acc = calloc(n ? n : 1, sizeof *acc);
  ncclzStatus st = sym && acc ? NCCLZ_OK : ncclzSetError(NCCLZ_ERR_NOMEM, "data profile: out of memory");
  if (st == NCCLZ_OK) st = agree_params(spec, x, nr, n, dims, ndims, &qp);
  if (st == NCCLZ_OK) st = shared_scales(&qp, x, nr, n, &scales);
  for (uint32_t r = 0; r < nr && st == NCCLZ_OK; r++) {
    st = rank_symbols(&qp, r, x[r], n, scales, sym);
    if (st != NCCLZ_OK) break;
    add_codes(acc, sym, n);
    out->row[r].ranks = r + 1;
    st = profile_row(acc, n, dtype, &qp, fb, nf, &out->row[r]);
    out->n_rows = r + 1;
  }
  free(scales);
  free(sym);
  free(acc);
  return st;
}

ncclzStatus ncclzDataProfileBuild(const ncclzQuantSpec *spec, ncclzDtype dtype, const void *const *inputs,
                                  uint32_t n_inputs, size_t n, const uint32_t *dims, int ndims,
                                  const uint64_t *frame_bytes, uint32_t n_frame_sizes, ncclzDataProfile *out) {
  ncclzStatus st = check_args(n_inputs, n_frame_sizes);
  if (st != NCCLZ_OK) return st;
  if (spec->kind == NCCLZ_QUANT_NONE)
    return ncclzSetError(NCCLZ_ERR_ARG, "data profile: partial sums need a quantizer (integer codes add exactly)");
  memset(out, 0, sizeof *out);
  out->quant = *spec;
  out->dtype = dtype;
  out->elements_per_rank = n;
  float *x[NCCLZ_DP_MAX_RANKS] = {0};
  for (uint32_t r = 0; r < n_inputs && st == NCCLZ_OK; r++) {
    if (!(x[r] = malloc((n ? n : 1) * sizeof(float)))) st = ncclzSetError(NCCLZ_ERR_NOMEM, "data profile: out of memory");
    else ncclzToFloat(inputs[r], dtype, n, x[r]);
  }
  if (st == NCCLZ_OK) st = build(spec, dtype, x, n_inputs, n, dims, ndims, frame_bytes, n_frame_sizes, out);
  for (uint32_t r = 0; r < n_inputs; r++) free(x[r]);
  return st;
}
