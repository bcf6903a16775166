/* Sample profiling: the statistics REA predicts coded sizes from, taken over a window of at most
 * 64 KiB of symbols, never over the whole frame (unless the frame fits in the window).
 *
 * FIXEDLEN: the stored width of every sampled 32-symbol block (the exact rule of FORMAT.md).
 * HUFFMAN: a 256-bin histogram of alphabet indices around the sample's mean, plus a tail bin
 * (in the alphabet but outside the 256 bins), an escape bin and a fill bin; the expected code
 * length is the histogram weighted by each bin's length (ncclz_rea_bin_bits_q16: Huffman's depth
 * for the chain of dominant symbols, the ideal length below it), plus the escapes' offsets.
 * Positions, widths, bins and bits are the shared functions of rea_decide.h: the device-side
 * selector computes the same statistics with them (its histogram in parallel). */
#include "ncclz/model.h"
#include "rea_decide.h"

#include <stdlib.h>
#include <string.h>

/* First pass: FIXEDLEN widths of the sampled blocks, and the range and sum of the symbols. */
static void scan_widths_and_range(const int32_t *sym, const ncclzSamplePlan *p, ncclzSampleStats *st,
                                  ncclzReaRange *r) {
  for (uint32_t i = 0; i < p->count; i++) {
    uint64_t start, len;
    ncclz_rea_sample_piece(p, i, &start, &len);
    for (uint64_t b = 0; b < len; b += NCCLZ_REA_BLOCK) {
      uint64_t block_len = len - b < NCCLZ_REA_BLOCK ? len - b : NCCLZ_REA_BLOCK;
      st->width_sum += ncclz_rea_block_width(sym + start + b, block_len);
      st->blocks_sampled++;
    }
    for (uint64_t k = start; k < start + len; k++) ncclz_rea_range_add(r, sym[k]);
    st->n_sampled += len;
  }
}

/* Second pass: the histogram of alphabet indices. */
static void histogram_sample(const int32_t *sym, const ncclzSamplePlan *p, ncclzHuffAlphabet a, int64_t first_index,
                             ncclzReaHuffSample *h) {
  ncclz_rea_hist_init(h, a);
  for (uint32_t i = 0; i < p->count; i++) {
    uint64_t start, len;
    ncclz_rea_sample_piece(p, i, &start, &len);
    for (uint64_t k = start; k < start + len; k++) ncclz_rea_hist_add(h, sym[k], a, first_index);
  }
}

ncclzStatus ncclzReaSampleProfile(const int32_t *sym, size_t n, uint32_t window_bytes, uint32_t pieces,
                                  ncclzSampleStats *out) {
  if (!out || (!sym && n)) return ncclzSetError(NCCLZ_ERR_ARG, "ncclzReaSampleProfile: NULL argument");
  if (window_bytes < 4 * NCCLZ_REA_BLOCK || window_bytes > NCCLZ_REA_SAMPLE_MAX_BYTES)
    return ncclzSetError(NCCLZ_ERR_ARG, "ncclzReaSampleProfile: window of %u bytes outside [%d, %u]",
                         window_bytes, 4 * NCCLZ_REA_BLOCK, NCCLZ_REA_SAMPLE_MAX_BYTES);
  memset(out, 0, sizeof *out);
  if (n == 0) return NCCLZ_OK;
  ncclzSamplePlan plan;
  ncclz_rea_sample_plan(n, window_bytes, pieces, &plan);
  ncclzReaRange r;
  ncclz_rea_range_init(&r);
  scan_widths_and_range(sym, &plan, out, &r);
  ncclzHuffAlphabet alpha = ncclz_rea_alphabet(&r);
  ncclzReaHuffSample *h = malloc(sizeof *h);
  if (!h) return ncclzSetError(NCCLZ_ERR_NOMEM, "ncclzReaSampleProfile: out of memory");
  histogram_sample(sym, &plan, alpha, ncclz_rea_hist_first_index(r.sum, r.count, alpha.centre, alpha.radius), h);
  ncclz_rea_hist_finish(h, out);
  free(h);
  return NCCLZ_OK;
}

uint32_t ncclzReaSamplePieces(size_t n, uint32_t window_bytes, uint32_t pieces, uint64_t *start, uint64_t *len,
                              uint32_t cap) {
  if (n == 0) return 0;
  ncclzSamplePlan plan;
  ncclz_rea_sample_plan(n, window_bytes, pieces, &plan);
  uint32_t k = plan.count < cap ? plan.count : cap;
  for (uint32_t i = 0; i < k; i++) ncclz_rea_sample_piece(&plan, i, &start[i], &len[i]);
  return k;
}

ncclzStatus ncclzReaSampleProfileFrames(const int32_t *sym, size_t n, size_t frame_syms, uint32_t window_bytes,
                                        uint32_t pieces, ncclzSampleStats *out) {
  if (!out || frame_syms == 0) return ncclzSetError(NCCLZ_ERR_ARG, "ncclzReaSampleProfileFrames: bad argument");
  memset(out, 0, sizeof *out);
  for (size_t start = 0; start < n; start += frame_syms) {
    ncclzSampleStats f;
    size_t len = n - start < frame_syms ? n - start : frame_syms;
    ncclzStatus s = ncclzReaSampleProfile(sym + start, len, window_bytes, pieces, &f);
    if (s != NCCLZ_OK) return s;
    out->n_sampled += f.n_sampled;
    out->blocks_sampled += f.blocks_sampled;
    out->width_sum += f.width_sum;
    out->huffman_bits += f.huffman_bits;
    out->huffman_valid |= f.huffman_valid;
    if (f.huffman_table_span > out->huffman_table_span) out->huffman_table_span = f.huffman_table_span;
    if (f.huffman_table_used > out->huffman_table_used) out->huffman_table_used = f.huffman_table_used;
  }
  return NCCLZ_OK;
}
