/* REA decision functions: the one copy of the arbitration logic.
 *
 * Host path (model/rea.c), device-side selector (a CUDA file includes this header; one control
 * thread per frame batch calls these functions) and the simulator all take their decisions here,
 * so they cannot drift apart. Rules for this file, so that nvcc compiles it as is:
 *   - only static inline functions marked NCCLZ_REA_FN (__host__ __device__ under nvcc);
 *   - no libc calls, no allocation, no globals; plain arithmetic on the structs of ncclz/model.h;
 *   - C that is also valid C++ (no designated initializers, no compound literals).
 */
#ifndef NCCLZ_REA_DECIDE_H
#define NCCLZ_REA_DECIDE_H

#include "ncclz/model.h"
/* The coder's own inline alphabet rule, escape bits and table size (host and device share them);
 * codecs/ provides it to the layers above through the internal target ncclz_codecs_hd. */
#include "huff_codebook.h"

#if defined(__CUDACC__)
#define NCCLZ_REA_FN static inline __host__ __device__
#else
#define NCCLZ_REA_FN static inline
#endif

/* Fraction bits of the HUFFMAN estimate's code lengths (ncclz_rea_bin_bits_q16). */
#define NCCLZ_REA_BITS_FRAC 16

/* Larger than any real time: the cost of an impossible choice. */
#define NCCLZ_REA_INFINITE_US 1e300

/* ------------------------------------------------------------- codec cost */

/* Codec time at `bytes` raw bytes: linear between points, flat below the first point, the last
 * segment's per-byte cost above the last one (a single point scales proportionally). */
NCCLZ_REA_FN double ncclz_rea_curve_us(const ncclzCurve *c, double bytes) {
  uint32_t n = c->n_points;
  if (n == 0) return 0.0;
  if (bytes <= c->bytes[0]) return c->us[0];
  if (n == 1) return c->us[0] * (bytes / c->bytes[0]);
  uint32_t hi = 1;
  while (hi < n - 1 && bytes > c->bytes[hi]) hi++;
  double b0 = c->bytes[hi - 1], b1 = c->bytes[hi];
  double per_byte = (c->us[hi] - c->us[hi - 1]) / (b1 - b0);
  double t = c->us[hi - 1] + (bytes - b0) * per_byte;
  return t > 0.0 ? t : 0.0;
}

/* The curves of coder c for data class cls, falling back to the DEFAULT class. */
NCCLZ_REA_FN const ncclzCodecCurves *ncclz_rea_curves(const ncclzProfile *p, int coder, int cls) {
  const ncclzCodecProfile *cp = &p->codec[coder];
  if (cls > 0 && cls < NCCLZ_CLASS_COUNT && cp->curves[cls].present) return &cp->curves[cls];
  return &cp->curves[NCCLZ_CLASS_DEFAULT];
}

/* ------------------------------------------------------------- cost model */

NCCLZ_REA_FN ncclzReaLink ncclz_rea_link(const ncclzProfile *p, ncclzTransportHint hint) {
  ncclzReaLink l;
  l.hint = hint;
  l.alpha_us = p->transport[hint].alpha_us;
  l.beta_gbps = p->transport[hint].beta_gbps;
  return l;
}

/* Wire time of `bytes` at beta GB/s (1 GB/s = 1e3 bytes per microsecond). */
NCCLZ_REA_FN double ncclz_rea_wire_us(double bytes, double beta_gbps) {
  if (!(beta_gbps > 0.0)) return NCCLZ_REA_INFINITE_US;
  return bytes / (beta_gbps * 1e3);
}

/* The exposed share of codec time. The profile's lambda is measured on long pipelines (many
 * frames per message); a pipeline of k frames cannot hide its first encode nor its last decode,
 * so it exposes lambda + (1 - lambda) / k: all of it for a single frame (a large ring's step),
 * lambda in the steady state (pipeline_frames 0). */
NCCLZ_REA_FN double ncclz_rea_exposure(double lambda, double pipeline_frames) {
  return pipeline_frames >= 1.0 ? lambda + (1.0 - lambda) / pipeline_frames : lambda;
}

/* The codec time one frame of `coder` (not RAW) leaves exposed on the hint's link, in a pipeline
 * of pipeline_frames frames: x_enc*E_c + x_dec*D_c, x = ncclz_rea_exposure(lambda, pipeline_frames). */
NCCLZ_REA_FN double ncclz_rea_exposed_codec_us(const ncclzProfile *p, int hint, int coder, int cls,
                                               double frame_raw_bytes, double pipeline_frames) {
  const ncclzCodecProfile *cp = &p->codec[coder];
  const ncclzCodecCurves *cv = ncclz_rea_curves(p, coder, cls);
  return ncclz_rea_exposure(cp->lambda_enc[hint], pipeline_frames) * ncclz_rea_curve_us(&cv->encode, frame_raw_bytes) +
         ncclz_rea_exposure(cp->lambda_dec[hint], pipeline_frames) * ncclz_rea_curve_us(&cv->decode, frame_raw_bytes);
}

/* The part of a frame's T_c that does not depend on its data: alpha_c + x_enc*E_c + x_dec*D_c,
 * x = ncclz_rea_exposure(lambda, pipeline_frames); 0 for RAW. The same for every frame of a
 * batch (one frame size, class and link), so the device selector takes it from the host
 * (ncclzReaBatch) instead of walking the profile's curves for every frame. */
NCCLZ_REA_FN double ncclz_rea_codec_us(const ncclzProfile *p, int hint, int coder, int cls, double frame_raw_bytes,
                                       double pipeline_frames) {
  if (coder == NCCLZ_CODER_RAW) return 0.0;
  return p->codec[coder].alpha_us + ncclz_rea_exposed_codec_us(p, hint, coder, cls, frame_raw_bytes, pipeline_frames);
}

/* T_c of nframes frames of frame_bytes on the wire each, codec_us (ncclz_rea_codec_us) apiece:
 * alpha(link) + nframes * (P_c/beta + codec_us). */
NCCLZ_REA_FN double ncclz_rea_frames_cost_us(ncclzReaLink link, double frame_bytes, double nframes, double codec_us) {
  return link.alpha_us + nframes * (ncclz_rea_wire_us(frame_bytes, link.beta_gbps) + codec_us);
}

/* T_c for a message of `nframes` equal frames of frame_raw_bytes, each predicted at
 * frame_bytes on the wire:
 *   T_c = alpha(link) + nframes * (alpha_c + P_c/beta + x_enc*E_c + x_dec*D_c),
 * x = ncclz_rea_exposure(lambda, pipeline_frames). With nframes = 1 in the steady state this is
 * the paper's per-frame equation (1). RAW has no codec terms. */
NCCLZ_REA_FN double ncclz_rea_cost_us(const ncclzProfile *p, ncclzReaLink link, int coder, int cls,
                                      double frame_raw_bytes, double frame_bytes, double nframes,
                                      double pipeline_frames) {
  return ncclz_rea_frames_cost_us(link, frame_bytes, nframes,
                                  ncclz_rea_codec_us(p, link.hint, coder, cls, frame_raw_bytes, pipeline_frames));
}

/* ----------------------------------------------------------- admissibility */

/* Saving of `bytes` against the RAW frame, in permil (negative when larger). */
NCCLZ_REA_FN int64_t ncclz_rea_gain_permil(uint64_t raw_frame_bytes, uint64_t bytes) {
  if (raw_frame_bytes == 0) return 0;
  int64_t saved = (int64_t)raw_frame_bytes - (int64_t)bytes;
  return saved * 1000 / (int64_t)raw_frame_bytes;
}

NCCLZ_REA_FN int ncclz_rea_fast_path(const ncclzReaRules *r, double frame_raw_bytes) {
  uint32_t coders = r->coder_mask & ~(1u << NCCLZ_CODER_RAW);
  return frame_raw_bytes < (double)r->fast_path_bytes || coders == 0;
}

/* Constant-time gating of one candidate: enable bit, estimate, capacity, gain, HUFFMAN gates. */
NCCLZ_REA_FN ncclzReaVerdict ncclz_rea_admit(const ncclzReaRules *r, const ncclzReaCandidates *c, int coder) {
  if (coder == NCCLZ_CODER_RAW) return NCCLZ_REA_ADMISSIBLE;  /* capacity is checked at commit */
  if (!(r->coder_mask & (1u << coder))) return NCCLZ_REA_DISABLED;
  if (coder == NCCLZ_CODER_HUFFMAN) {
    if (c->frame_raw_bytes < (double)r->huff_min_bytes) return NCCLZ_REA_BELOW_HUFF_MIN;
    if (!r->huff_ctx_valid) return NCCLZ_REA_NO_HUFF_CTX;
  }
  if (!c->pred_valid[coder]) return NCCLZ_REA_NO_ESTIMATE;
  if (c->pred_frame_bytes[coder] > r->stage_cap_bytes) return NCCLZ_REA_OVER_CAPACITY;
  if (ncclz_rea_gain_permil(c->raw_frame_bytes, c->pred_frame_bytes[coder]) < (int64_t)r->min_gain_permil)
    return NCCLZ_REA_LOW_GAIN;
  return NCCLZ_REA_ADMISSIBLE;
}

/* ------------------------------------------------------------------ argmin */

/* Coder k's verdict and T_c (infinite without an estimate), its data-independent part given:
 * codec_us = ncclz_rea_codec_us of c's frame size. */
NCCLZ_REA_FN void ncclz_rea_evaluate_with(ncclzReaLink link, const ncclzReaRules *r, const ncclzReaCandidates *c, int k,
                                          double codec_us, ncclzReaVerdict *verdict, double *time_us) {
  double bytes = k == NCCLZ_CODER_RAW ? (double)c->raw_frame_bytes : (double)c->pred_frame_bytes[k];
  *verdict = ncclz_rea_admit(r, c, k);
  *time_us = (k == NCCLZ_CODER_RAW || c->pred_valid[k]) ? ncclz_rea_frames_cost_us(link, bytes, c->nframes, codec_us)
                                                         : NCCLZ_REA_INFINITE_US;
}

/* Coder k's verdict and T_c. */
NCCLZ_REA_FN void ncclz_rea_evaluate(const ncclzProfile *p, ncclzReaLink link, int cls, const ncclzReaRules *r,
                                     const ncclzReaCandidates *c, int k, ncclzReaVerdict *verdict, double *time_us) {
  ncclz_rea_evaluate_with(link, r, c, k, ncclz_rea_codec_us(p, link.hint, k, cls, c->frame_raw_bytes, c->pipeline_frames),
                          verdict, time_us);
}

/* c* = argmin T_c over RAW and the admissible coders of out's verdicts and times. Ties go to the
 * lower coder id, so RAW wins a tie: it is the cheaper, safer frame. */
NCCLZ_REA_FN void ncclz_rea_pick(ncclzReaDecision *out) {
  out->coder = NCCLZ_CODER_RAW;
  double best = NCCLZ_REA_INFINITE_US;
  for (int k = 0; k < NCCLZ_CODER_COUNT; k++)
    if (out->verdict[k] == NCCLZ_REA_ADMISSIBLE && out->time_us[k] < best) {
      best = out->time_us[k];
      out->coder = (ncclzCoder)k;
    }
}

/* Evaluates every coder and picks c* (the device selector evaluates them in parallel lanes). */
NCCLZ_REA_FN void ncclz_rea_arbitrate(const ncclzProfile *p, ncclzReaLink link, int cls, const ncclzReaRules *r,
                                      const ncclzReaCandidates *c, ncclzReaDecision *out) {
  for (int k = 0; k < NCCLZ_CODER_COUNT; k++) ncclz_rea_evaluate(p, link, cls, r, c, k, &out->verdict[k], &out->time_us[k]);
  ncclz_rea_pick(out);
}

/* The post-check after materializing: the realized frame must fit and still save enough. */
NCCLZ_REA_FN int ncclz_rea_accept_realized(const ncclzReaRules *r, uint64_t raw_frame_bytes, uint64_t realized) {
  return realized <= r->stage_cap_bytes &&
         ncclz_rea_gain_permil(raw_frame_bytes, realized) >= (int64_t)r->min_gain_permil;
}

/* ---------------------------------------------------------------- sampling */

#define NCCLZ_REA_BLOCK 32

NCCLZ_REA_FN void ncclz_rea_sample_plan(uint64_t n, uint32_t window_bytes, uint32_t pieces, ncclzSamplePlan *p) {
  uint64_t window_syms = window_bytes / 4;
  p->n = n;
  p->full_blocks = n / NCCLZ_REA_BLOCK;
  p->whole = n <= window_syms;
  p->count = 1;
  p->blocks = 0;
  if (p->whole) return;
  p->count = pieces ? pieces : 1;
  p->blocks = window_syms / NCCLZ_REA_BLOCK / p->count;
  if (p->blocks == 0) {  /* more pieces than blocks in the window: one block each, fewer pieces */
    p->blocks = 1;
    p->count = (uint32_t)(window_syms / NCCLZ_REA_BLOCK);
  }
}

/* Symbols the plan samples: the whole frame, or count pieces of `blocks` blocks. */
NCCLZ_REA_FN uint64_t ncclz_rea_sample_symbols(const ncclzSamplePlan *p) {
  return p->whole ? p->n : (uint64_t)p->count * p->blocks * NCCLZ_REA_BLOCK;
}

/* Piece i of the plan. Evenly spaced starts never overlap: count * blocks <= full_blocks. */
NCCLZ_REA_FN void ncclz_rea_sample_piece(const ncclzSamplePlan *p, uint32_t i, uint64_t *start, uint64_t *len) {
  if (p->whole) {
    *start = 0;
    *len = p->n;
    return;
  }
  uint64_t room = p->full_blocks - p->blocks;
  uint64_t first_block = p->count > 1 ? room * i / (p->count - 1) : room / 2;
  *start = first_block * NCCLZ_REA_BLOCK;
  *len = p->blocks * NCCLZ_REA_BLOCK;
}

NCCLZ_REA_FN uint32_t ncclz_rea_zigzag(int32_t s) { return ((uint32_t)s << 1) ^ (uint32_t)(s >> 31); }

NCCLZ_REA_FN uint32_t ncclz_rea_bit_length(uint32_t v) {
  uint32_t n = 0;
  while (v) {
    n++;
    v >>= 1;
  }
  return n;
}

/* Stored FIXEDLEN width of a block whose symbols' zigzags OR to `all` (FORMAT.md: 31 is stored
 * as 32). */
NCCLZ_REA_FN uint32_t ncclz_rea_width_of(uint32_t all) {
  uint32_t w = ncclz_rea_bit_length(all);
  return w == 31 ? 32 : w;
}

/* Stored FIXEDLEN width of one block of len <= 32 symbols. */
NCCLZ_REA_FN uint32_t ncclz_rea_block_width(const int32_t *sym, uint64_t len) {
  uint32_t all = 0;
  for (uint64_t i = 0; i < len; i++) all |= ncclz_rea_zigzag(sym[i]);
  return ncclz_rea_width_of(all);
}

/* Huffman alphabet index of a symbol (FORMAT.md): 2R + 1 for a fill code, 2R for an escape. */
NCCLZ_REA_FN int64_t ncclz_rea_huff_index(int32_t s, int32_t centre, uint32_t radius) {
  int64_t idx = (int64_t)s - centre + radius;
  if (s == NCCLZ_FILL_CODE) return 2 * (int64_t)radius + 1;
  if (idx < 0 || idx >= 2 * (int64_t)radius) return 2 * (int64_t)radius;
  return idx;
}

/* First alphabet index of the 256 fine bins: they are centred on the sample's mean symbol
 * (sum / count of the non-fill symbols, truncated toward zero), where quantized symbols
 * concentrate, which need not be the alphabet's centre when the range is lopsided. */
NCCLZ_REA_FN int64_t ncclz_rea_hist_first_index(int64_t sum, uint64_t count, int32_t centre, uint32_t radius) {
  int64_t mean = count ? sum / (int64_t)count : 0;
  return mean - centre + (int64_t)radius - NCCLZ_REA_HIST_BINS / 2;
}

/* Histogram bin of an alphabet index: the 256 fine bins from first_index on, then the tail bin
 * (in the alphabet, outside those bins), the escape bin (index 2R) and the fill bin (2R + 1). */
NCCLZ_REA_FN uint32_t ncclz_rea_hist_bin(int64_t idx, uint32_t radius, int64_t first_index) {
  if (idx == 2 * (int64_t)radius + 1) return NCCLZ_REA_HIST_FILL;
  if (idx == 2 * (int64_t)radius) return NCCLZ_REA_HIST_ESCAPE;
  int64_t bin = idx - first_index;
  return bin >= 0 && bin < NCCLZ_REA_HIST_BINS ? (uint32_t)bin : NCCLZ_REA_HIST_TAIL;
}

/* Bits an escaped symbol adds after its code (FORMAT.md "Escapes"): the coder's own rule, its
 * offset from the centre as a 5-bit count and the bits below the zigzag's leading one. */
NCCLZ_REA_FN uint32_t ncclz_rea_escape_bits(int32_t s, int32_t centre) {
  return ncclz_huff_escape_bits(ncclz_huff_escape_z(s, centre));
}

/* Expected coded bits of a sample: code_bits_q16 (the bins' bits in 1/2^16 bit),
 * the escapes' escape_bits (their offsets, summed as the sample was taken), and for each tail
 * symbol the bits that tell apart the distinct tail values seen (ceil(log2(distinct)) = bit
 * length of distinct-1). All integers, so the sum is the same in any order. */
NCCLZ_REA_FN double ncclz_rea_huffman_bits(uint64_t code_bits_q16, uint32_t tail_freq, uint32_t distinct_tail,
                                           uint64_t escape_bits) {
  double bits = (double)code_bits_q16 / (double)(1u << NCCLZ_REA_BITS_FRAC) + (double)escape_bits;
  if (distinct_tail > 1) bits += (double)tail_freq * ncclz_rea_bit_length(distinct_tail - 1);
  return bits;
}

/* -------------------------------------------------- sample accumulation
 * Per-symbol steps of sample profiling. The host adds them up in one loop (model/sample.c); the
 * device selector (model/rea_device.cuh) adds the same integers in parallel, so both get the
 * same statistics bit for bit. */

/* Range of the non-fill sampled symbols, and their sum (for the mean the fine bins centre on). */
typedef struct {
  int32_t min_sym, max_sym;
  int64_t sum;
  uint64_t count;
} ncclzReaRange;

/* The Huffman part of a sample: histogram, distinct tail values seen, used index span, and the
 * escapes' offset bits (which depend on each escaped value, not just on its bin). */
typedef struct {
  uint32_t freq[NCCLZ_REA_HIST_TOTAL];
  uint64_t tail_seen[(2 * NCCLZ_HUFF_MAX_RADIUS + 63) / 64];
  int64_t lo_index, hi_index;
  uint64_t escape_bits;
} ncclzReaHuffSample;

NCCLZ_REA_FN void ncclz_rea_range_init(ncclzReaRange *r) {
  r->min_sym = INT32_MAX;
  r->max_sym = INT32_MIN;
  r->sum = 0;
  r->count = 0;
}

NCCLZ_REA_FN void ncclz_rea_range_add(ncclzReaRange *r, int32_t s) {
  if (s == NCCLZ_FILL_CODE) return; /* FORMAT.md: fill codes take no part in the alphabet */
  if (s < r->min_sym) r->min_sym = s;
  if (s > r->max_sym) r->max_sym = s;
  r->sum += s;
  r->count++;
}

/* The estimate's alphabet: the coder's radius rule around the sample mean (floor). The coder
 * centres on a sample median; the mean is close enough for an estimate and needs no sort. */
NCCLZ_REA_FN ncclzHuffAlphabet ncclz_rea_alphabet(const ncclzReaRange *r) {
  if (!r->count) return ncclz_huff_choose_alphabet(0, 0, 0);
  int64_t c = r->count;
  int32_t centre = (int32_t)(r->sum >= 0 ? r->sum / c : -((-r->sum + c - 1) / c));
  return ncclz_huff_choose_alphabet(r->min_sym, r->max_sym, centre);
}

NCCLZ_REA_FN void ncclz_rea_hist_init(ncclzReaHuffSample *h, ncclzHuffAlphabet a) {
  for (int b = 0; b < NCCLZ_REA_HIST_TOTAL; b++) h->freq[b] = 0;
  for (unsigned w = 0; w < sizeof h->tail_seen / sizeof h->tail_seen[0]; w++) h->tail_seen[w] = 0;
  h->lo_index = 2 * (int64_t)a.radius;
  h->hi_index = 0;
  h->escape_bits = 0;
}

/* The bin of one symbol and its index (for the span); a tail symbol also marks tail_seen. */
NCCLZ_REA_FN uint32_t ncclz_rea_hist_locate(int32_t s, ncclzHuffAlphabet a, int64_t first_index, int64_t *idx) {
  *idx = ncclz_rea_huff_index(s, a.centre, a.radius);
  return ncclz_rea_hist_bin(*idx, a.radius, first_index);
}

NCCLZ_REA_FN void ncclz_rea_hist_add(ncclzReaHuffSample *h, int32_t s, ncclzHuffAlphabet a, int64_t first_index) {
  int64_t idx;
  uint32_t bin = ncclz_rea_hist_locate(s, a, first_index, &idx);
  if (idx < h->lo_index) h->lo_index = idx;
  if (idx > h->hi_index) h->hi_index = idx;
  h->freq[bin]++;
  if (bin == NCCLZ_REA_HIST_TAIL) h->tail_seen[idx / 64] |= 1ull << (idx % 64);
  if (bin == NCCLZ_REA_HIST_ESCAPE) h->escape_bits += ncclz_rea_escape_bits(s, a.centre);
}

NCCLZ_REA_FN uint32_t ncclz_rea_popcount64(uint64_t w) {
  uint32_t c = 0;
  for (; w; w &= w - 1) c++;
  return c;
}

/* Expected code length of a bin, the "codebook" of the HUFFMAN estimate: the ideal length
 * log2(rem/f) of a bin seen f times among the rem symbols of its subtree, in 1/2^16 bit. Huffman
 * gives a symbol that holds more than half of the symbols a leaf of its own at depth 1 and the
 * rest a subtree beside it; such symbols (a chain: the largest of what remains, while it holds
 * more than half of it) get their depth, and every other bin the chain's depth plus its ideal
 * length in the subtree (where no symbol holds more than half, so that length is at least one
 * bit; a lone symbol gets one bit). Ideal lengths over the whole sample, f * max(1,
 * log2(total/f)), overestimated skewed gradients by 4.7% against the exact tree (ResNet-18 QSGD
 * 8-bit, 4 MiB frames); within a subtree without a dominant symbol Huffman exceeds them by at
 * most p_max + 0.086 bit a symbol (Gallager). The coder builds its real book from the whole
 * frame anyway; building the sample's exact Huffman tree here cost 18.6 of the device plan's
 * 50.9 us on an H200 (test_gpu_rea). Integer arithmetic, so
 * that host and device get the same bits (NCCLZ_REA_BITS_FRAC above). */
#define NCCLZ_REA_MAX_DOMINANT 16 /* each halves what remains: 2^16 > the largest sample */
typedef struct {
  uint32_t levels;                      /* dominant bins found: bin[j] at depth j + 1 */
  uint32_t rem;                         /* symbols in the subtree below the last of them */
  uint32_t bin[NCCLZ_REA_MAX_DOMINANT];
} ncclzReaDominance;

NCCLZ_REA_FN void ncclz_rea_dominance_init(ncclzReaDominance *d, uint32_t total) {
  d->levels = 0;
  d->rem = total;
}

/* One link of the chain: (f, bin) is the largest bin not yet in it (any of the largest when they
 * tie). Returns 1 when it joins (more than half of what remains, but not all of it), 0 when the
 * chain ends. Host and device find the largest bin their own way; the rule is this one. */
NCCLZ_REA_FN int ncclz_rea_dominance_step(ncclzReaDominance *d, uint32_t f, uint32_t bin) {
  if (d->levels == NCCLZ_REA_MAX_DOMINANT || f >= d->rem || 2ull * f <= d->rem) return 0;
  d->bin[d->levels++] = bin;
  d->rem -= f;
  return 1;
}

/* Depth of bin b in the chain (1 for its first link), 0 when b is not in it. */
NCCLZ_REA_FN uint32_t ncclz_rea_dominance_depth(const ncclzReaDominance *d, uint32_t b) {
  for (uint32_t j = 0; j < d->levels; j++)
    if (d->bin[j] == b) return j + 1;
  return 0;
}

/* log2(x) for x >= 1 in 1/2^16 (truncated): the integer part from the bit length, the fraction
 * bit by bit by squaring the mantissa (Q31 in [1, 2)). Written out rather than log2(): libm's
 * last bit differs between host and device, and the host's and the device's decisions must
 * agree on every frame. */
NCCLZ_REA_FN uint32_t ncclz_rea_log2_q16(uint32_t x) {
  const uint32_t k = ncclz_rea_bit_length(x) - 1;
  uint64_t m = (uint64_t)x << (31 - k); /* x / 2^k in Q31 */
  uint32_t frac = 0;
  for (int i = 0; i < NCCLZ_REA_BITS_FRAC; i++) {
    m = m * m >> 31;
    frac <<= 1;
    if (m >= (2ull << 31)) {
      m >>= 1;
      frac |= 1;
    }
  }
  return k << NCCLZ_REA_BITS_FRAC | frac;
}

/* Bits of bin b of f symbols under the chain d, in 1/2^16 bit (the comment above). */
NCCLZ_REA_FN uint64_t ncclz_rea_bin_bits_q16(uint32_t f, uint32_t b, const ncclzReaDominance *d) {
  if (f == 0) return 0;
  const uint32_t one = 1u << NCCLZ_REA_BITS_FRAC, depth = ncclz_rea_dominance_depth(d, b);
  if (depth) return (uint64_t)f * (depth * one);
  /* f <= d->rem: the chain's bins are the ones taken out of it */
  const uint32_t len = d->levels * one + ncclz_rea_log2_q16(d->rem) - ncclz_rea_log2_q16(f);
  return (uint64_t)f * (len > one ? len : one);
}

/* Integer sums over a finished histogram that its statistics need. Each bin and each tail_seen
 * word adds its share; the host adds them in one loop, the device selector with all threads of
 * the block (integers: the same sums in any order). */
typedef struct {
  uint64_t code_bits_q16;  /* sum of the bins' bits (ncclz_rea_bin_bits_q16) */
  uint32_t used_bins;      /* bins with a count, the tail bin left out (its values count apart) */
  uint32_t distinct_tail;  /* distinct tail values seen */
} ncclzReaHuffSums;

/* Bin b's share under the histogram's dominance chain d. */
NCCLZ_REA_FN void ncclz_rea_huff_sums_bin(ncclzReaHuffSums *a, const ncclzReaHuffSample *h, const ncclzReaDominance *d,
                                          int b) {
  a->code_bits_q16 += ncclz_rea_bin_bits_q16(h->freq[b], (uint32_t)b, d);
  a->used_bins += b != NCCLZ_REA_HIST_TAIL && h->freq[b] != 0;
}

NCCLZ_REA_FN void ncclz_rea_huff_sums_tail_word(ncclzReaHuffSums *a, const ncclzReaHuffSample *h, unsigned k) {
  a->distinct_tail += ncclz_rea_popcount64(h->tail_seen[k]);
}

#define NCCLZ_REA_TAIL_WORDS (sizeof(((ncclzReaHuffSample *)0)->tail_seen) / sizeof(uint64_t))

/* The Huffman statistics from the sums: expected bits, the table's span and its used indices
 * (the distinct indices seen: fine bins, tail values, escape, fill). */
NCCLZ_REA_FN void ncclz_rea_hist_finish_sums(const ncclzReaHuffSample *h, const ncclzReaHuffSums *a,
                                             ncclzSampleStats *st) {
  st->huffman_bits = ncclz_rea_huffman_bits(a->code_bits_q16, h->freq[NCCLZ_REA_HIST_TAIL], a->distinct_tail, h->escape_bits);
  st->huffman_table_span = (uint32_t)(h->hi_index - h->lo_index + 1);
  st->huffman_table_used = a->used_bins + a->distinct_tail;
  st->huffman_valid = st->n_sampled > 0;
}

/* The histogram's dominance chain, its largest bins found by one thread (the host path; the
 * device selector finds them with a block-wide max). Its total is st->n_sampled symbols. */
NCCLZ_REA_FN void ncclz_rea_dominance(const ncclzReaHuffSample *h, uint32_t total, ncclzReaDominance *d) {
  ncclz_rea_dominance_init(d, total);
  for (;;) {
    uint32_t best = 0, best_bin = 0;
    for (uint32_t b = 0; b < NCCLZ_REA_HIST_TOTAL; b++)
      if (!ncclz_rea_dominance_depth(d, b) && h->freq[b] > best) best = h->freq[b], best_bin = b;
    if (!ncclz_rea_dominance_step(d, best, best_bin)) return;
  }
}

/* The same summed by one thread (the host path); st->n_sampled symbols are in the histogram. */
NCCLZ_REA_FN void ncclz_rea_hist_finish(const ncclzReaHuffSample *h, ncclzSampleStats *st) {
  ncclzReaDominance d;
  ncclz_rea_dominance(h, (uint32_t)st->n_sampled, &d);
  ncclzReaHuffSums a = {0, 0, 0};
  for (unsigned k = 0; k < NCCLZ_REA_TAIL_WORDS; k++) ncclz_rea_huff_sums_tail_word(&a, h, k);
  for (int b = 0; b < NCCLZ_REA_HIST_TOTAL; b++) ncclz_rea_huff_sums_bin(&a, h, &d, b);
  ncclz_rea_hist_finish_sums(h, &a, st);
}

/* The admissibility rules of a config at a staging capacity. */
NCCLZ_REA_FN ncclzReaRules ncclz_rea_rules(const ncclzReaConfig *cfg, uint64_t stage_cap) {
  ncclzReaRules r;
  r.stage_cap_bytes = stage_cap;
  r.fast_path_bytes = cfg->fast_path_bytes;
  r.huff_min_bytes = cfg->huff_min_bytes;
  r.min_gain_permil = cfg->min_gain_permil;
  r.coder_mask = cfg->coder_mask;
  r.huff_ctx_valid = cfg->huff_ctx_valid;
  return r;
}

/* What every frame of a batch (frames of frame_raw_bytes, one config and staging capacity)
 * shares: the rules, the link and each coder's ncclz_rea_codec_us. The host computes it once per
 * batch for the device selector; a frame of another size (a batch's last) computes its own. */
typedef struct {
  ncclzReaRules rules;
  ncclzReaLink link;
  double frame_raw_bytes;
  double codec_us[NCCLZ_CODER_COUNT];
} ncclzReaBatch;

NCCLZ_REA_FN void ncclz_rea_batch_init(const ncclzProfile *p, const ncclzReaConfig *cfg, uint64_t stage_cap,
                                       double frame_raw_bytes, ncclzReaBatch *b) {
  b->rules = ncclz_rea_rules(cfg, stage_cap);
  b->link = ncclz_rea_link(p, cfg->hint);
  b->frame_raw_bytes = frame_raw_bytes;
  for (int k = 0; k < NCCLZ_CODER_COUNT; k++)
    b->codec_us[k] = ncclz_rea_codec_us(p, cfg->hint, k, cfg->data_class, frame_raw_bytes, cfg->pipeline_frames);
}

/* ---------------------------------------------------------- predicted sizes */


/* A frame's QSGD side data: a scale word for each bucket of its n symbols (bucket 0: none). */
NCCLZ_REA_FN uint32_t ncclz_rea_side_bytes(uint32_t bucket, uint64_t n) {
  return bucket ? (uint32_t)(4 * ((n + bucket - 1) / bucket)) : 0;
}

/* The RAW frame: header, side data, one word per symbol. */
NCCLZ_REA_FN uint64_t ncclz_rea_raw_frame_bytes(uint64_t n, uint32_t side_bytes) {
  return NCCLZ_FRAME_HEADER_BYTES + (uint64_t)side_bytes + 4 * n;
}

/* FIXEDLEN payload (FORMAT.md): 4*ceil(5nb/32) + 4nt + 4*sum(w), with sum(w) scaled from the
 * sample's blocks to the frame's nb blocks (exact when the sample is the whole frame). */
NCCLZ_REA_FN uint64_t ncclz_rea_fixedlen_payload(const ncclzSampleStats *s, uint64_t n, uint32_t tile_blocks) {
  if (n == 0) return 0;
  uint64_t nb = ncclz_ceil_div(n, 32);
  uint64_t nt = ncclz_ceil_div(nb, tile_blocks ? tile_blocks : 1);
  uint64_t width_sum = s->blocks_sampled ? ncclz_ceil_div(s->width_sum * nb, s->blocks_sampled) : 32 * nb;
  return 4 * ncclz_ceil_div(5 * nb, 32) + 4 * nt + 4 * width_sum;
}

/* HUFFMAN payload (FORMAT.md): [lo m][u] and the dense or sparse length table of the sample's
 * span and used indices, segment table [nseg][nseg offsets], bit stream (the sample's expected
 * bits per symbol, escapes' offsets included, scaled, plus half a word of padding per segment on
 * average), rounded up to whole words. */
NCCLZ_REA_FN uint64_t ncclz_rea_huffman_payload(const ncclzSampleStats *s, uint64_t n, uint32_t segment) {
  if (n == 0) return 0;
  uint64_t nseg = ncclz_ceil_div(n, segment ? segment : 1);
  uint32_t span = s->huffman_table_span, used = s->huffman_table_used < span ? s->huffman_table_used : span;
  uint64_t table = 8 + 4 * (uint64_t)ncclz_huff_table_words(span, used);
  uint64_t seg_table = 4 + 4 * nseg;
  double bits = s->n_sampled ? s->huffman_bits * ((double)n / (double)s->n_sampled) : 32.0 * (double)n;
  uint64_t stream_bits = (uint64_t)bits + 1 + 16 * nseg;
  return table + seg_table + 4 * ncclz_ceil_div(stream_bits, 32);
}

/* Fills the candidates of a frame of n symbols (dtype_bytes raw bytes each) from sample stats. */
NCCLZ_REA_FN void ncclz_rea_predict(const ncclzSampleStats *s, uint64_t n, size_t dtype_bytes, uint32_t side_bytes,
                                    const ncclzCoderParams *cp, ncclzReaCandidates *c) {
  uint64_t fixed = NCCLZ_FRAME_HEADER_BYTES + (uint64_t)side_bytes;
  c->frame_raw_bytes = (double)n * (double)dtype_bytes;
  c->nframes = 1.0;
  c->pipeline_frames = 0.0; /* the executor's frames: the steady state of its pipeline */
  c->raw_frame_bytes = ncclz_rea_raw_frame_bytes(n, side_bytes);
  c->pred_frame_bytes[NCCLZ_CODER_RAW] = c->raw_frame_bytes;
  c->pred_valid[NCCLZ_CODER_RAW] = 1;
  c->pred_frame_bytes[NCCLZ_CODER_FIXEDLEN] = fixed + ncclz_rea_fixedlen_payload(s, n, cp->fixedlen_tile_blocks);
  c->pred_valid[NCCLZ_CODER_FIXEDLEN] = s->blocks_sampled > 0 || n == 0;
  c->pred_frame_bytes[NCCLZ_CODER_HUFFMAN] = fixed + ncclz_rea_huffman_payload(s, n, cp->huffman_segment);
  c->pred_valid[NCCLZ_CODER_HUFFMAN] = s->huffman_valid;
}

#endif /* NCCLZ_REA_DECIDE_H */
