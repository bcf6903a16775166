/* Sample profiling: the statistics REA predicts coded sizes from, taken over a window of at most
 * 64 KiB of symbols, never over the whole frame (unless the frame fits in the window).
 *
 * FIXEDLEN: the stored width of every sampled 32-symbol block (the exact rule of FORMAT.md).
 * HUFFMAN: a 256-bin histogram of alphabet indices around the sample's mean, plus a tail bin
 * (in the alphabet but outside the 256 bins) and an escape bin, coded with ncclzHuffLengths; the
 * expected code length is the histogram weighted by those lengths.
 * Positions, widths, bins and bits are the shared functions of rea_decide.h: the device-side
 * selector computes the same statistics with them (its histogram in parallel). */
#include "ncclz/model.h"
#include "rea_decide.h"

#include <string.h>

/* First pass: FIXEDLEN widths, sample size, the min/max that choose the Huffman alphabet
 * (FORMAT.md: fill codes do not take part) and the sum that places the fine histogram bins. */
static void scan_widths_and_range(const int32_t *sym, const ncclzSamplePlan *p, ncclzSampleStats *st,
                                  int32_t *min_sym, int32_t *max_sym, int64_t *sum, uint64_t *count) {
  int any = 0;
  for (uint32_t i = 0; i < p->count; i++) {
    uint64_t start, len;
    ncclz_rea_sample_piece(p, i, &start, &len);
    for (uint64_t b = 0; b < len; b += NCCLZ_REA_BLOCK) {
      uint64_t block_len = len - b < NCCLZ_REA_BLOCK ? len - b : NCCLZ_REA_BLOCK;
      st->width_sum += ncclz_rea_block_width(sym + start + b, block_len);
      st->blocks_sampled++;
    }
    for (uint64_t k = start; k < start + len; k++) {
      if (sym[k] == NCCLZ_FILL_CODE) continue;
      if (!any || sym[k] < *min_sym) *min_sym = sym[k];
      if (!any || sym[k] > *max_sym) *max_sym = sym[k];
      any = 1;
      *sum += sym[k];
      (*count)++;
    }
    st->n_sampled += len;
  }
}

/* The Huffman part of the sample: histogram, distinct tail values, used index span. */
typedef struct {
  uint32_t freq[NCCLZ_REA_HIST_TOTAL];
  uint64_t tail_seen[(2 * NCCLZ_HUFF_MAX_RADIUS + 63) / 64];
  int64_t lo_index, hi_index;
} HuffSample;

static void histogram_sample(const int32_t *sym, const ncclzSamplePlan *p, ncclzHuffAlphabet a, int64_t first_index,
                             HuffSample *h) {
  h->lo_index = 2 * (int64_t)a.radius;
  h->hi_index = 0;
  for (uint32_t i = 0; i < p->count; i++) {
    uint64_t start, len;
    ncclz_rea_sample_piece(p, i, &start, &len);
    for (uint64_t k = start; k < start + len; k++) {
      int64_t idx = ncclz_rea_huff_index(sym[k], a.centre, a.radius);
      uint32_t bin = ncclz_rea_hist_bin(idx, a.radius, first_index);
      if (idx < h->lo_index) h->lo_index = idx;
      if (idx > h->hi_index) h->hi_index = idx;
      h->freq[bin]++;
      if (bin == NCCLZ_REA_HIST_TAIL) h->tail_seen[idx / 64] |= 1ull << (idx % 64);
    }
  }
}

static uint32_t count_bits_set(const uint64_t *words, size_t n) {
  uint32_t c = 0;
  for (size_t i = 0; i < n; i++)
    for (uint64_t w = words[i]; w; w &= w - 1) c++;
  return c;
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
  int32_t min_sym = 0, max_sym = 0;
  int64_t sum = 0;
  uint64_t count = 0;
  scan_widths_and_range(sym, &plan, out, &min_sym, &max_sym, &sum, &count);

  HuffSample h;
  memset(&h, 0, sizeof h);
  /* The coder centres on a sample median; the sample mean is close enough for an estimate and
   * costs no sort. */
  int32_t centre = count ? (int32_t)(sum >= 0 ? sum / (int64_t)count : -((-sum + (int64_t)count - 1) / (int64_t)count)) : 0;
  ncclzHuffAlphabet alpha = ncclzHuffAlphabetAround(min_sym, max_sym, centre);
  histogram_sample(sym, &plan, alpha, ncclz_rea_hist_first_index(sum, count, alpha.centre, alpha.radius), &h);
  uint8_t len[NCCLZ_REA_HIST_TOTAL];
  ncclzHuffLengths(h.freq, NCCLZ_REA_HIST_TOTAL, NCCLZ_HUFF_MAX_LEN, len);
  uint32_t distinct_tail = count_bits_set(h.tail_seen, sizeof h.tail_seen / sizeof h.tail_seen[0]);
  out->huffman_bits = ncclz_rea_huffman_bits(h.freq, len, distinct_tail);
  out->huffman_table_span = (uint32_t)(h.hi_index - h.lo_index + 1);
  out->huffman_valid = out->n_sampled > 0;
  return NCCLZ_OK;
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
  }
  return NCCLZ_OK;
}
