/* ncclz codecs on the GPU: batched frame encode/decode and the quantizers, byte-identical to the
 * C reference (include/ncclz/codecs.h, codecs/FORMAT.md).
 *
 * Conventions of every call here:
 *  - all pointers named d_* are device memory; everything runs in the caller's stream;
 *  - no call synchronises, allocates or copies to the host: the caller owns the workspaces
 *    (sizes from the *WorkspaceSize queries) and reads results when it wants;
 *  - a returned ncclzStatus only reports argument errors and launch failures; data-dependent
 *    errors (corrupt frames, NaN under quantization) land in device status words.
 *
 * A batch is n_frames frames cut from one symbol array: frame k holds symbols
 * [k*frame_symbols, min(n_symbols, (k+1)*frame_symbols)). Encoded frame k is written at
 * d_out + k*out_stride (out_stride >= ncclzCudaFrameSlotBytes) and its size to d_frame_bytes[k]. */
#ifndef NCCLZ_CODECS_CUDA_H
#define NCCLZ_CODECS_CUDA_H

#include <cuda_runtime_api.h>

#include "ncclz/codecs.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The shape of one batch, shared by encode and decode. */
typedef struct {
  ncclzCoder coder;                /* encode: every frame's coder */
  ncclzCoderParams params;         /* FIXEDLEN T, HUFFMAN S (S <= 4096 on the GPU) */
  ncclzDtype dtype;                /* dtype of the original data (header field raw_bytes) */
  const ncclzQuantParams *quant;   /* header fields of the quantizer; NULL for quant none */
  const double *d_abs_eb;          /* optional: the EB bound resolved on the device (overrides quant->abs_eb) */
  uint64_t n_symbols;              /* total symbols of the batch */
  uint32_t frame_symbols;          /* per frame; QSGD with scales: a multiple of the bucket */
  int side_scales;                 /* 1: frames carry QSGD scales as side data */
  /* encode, FIXEDLEN and HUFFMAN: a frame whose encoded size (header included) is larger than
   * fallback_bytes is written as a RAW frame instead, in the same slot (REA's post-check,
   * Algorithm 1 steps 5-6: ncclzReaFallbackBytes gives the limit; ncclzCudaFrameSlotBytes then
   * counts a RAW frame too). fallback_last_bytes: the limit of the batch's last frame when it is shorter. 0:
   * no limit. */
  uint64_t fallback_bytes, fallback_last_bytes;
  /* encode: frame k's coder is d_coders[k] (device memory, a word a frame, as the REA device
   * selector writes it; a value past HUFFMAN counts as RAW) instead of `coder` for every frame.
   * The batch then runs every coder's kernels, each on its own frames, and its slot and workspace
   * sizes are the largest coder's. NULL: `coder` for every frame. */
  const uint32_t *d_coders;
  /* 1: the workspace (encode's and decode's alike) was zeroed once after it was allocated
   * (cudaMemset of all of it) and has served only these calls since, one at a time. A batch of
   * one frame then runs as one kernel, which leaves the words it shares zero again: an encode of
   * RAW or FIXEDLEN (frames up to 64 Ki symbols) without d_coders or a post-check, a decode whose
   * coder_mask leaves HUFFMAN out. Those words sit at the workspace's start whatever the batch,
   * so one workspace may serve batches of any shape. 0: every call clears what it uses first (a
   * chain of kernels). */
  int ws_zeroed;
} ncclzCudaBatch;

/* Frames in the batch: ceil(n_symbols / frame_symbols). */
uint32_t ncclzCudaBatchFrames(const ncclzCudaBatch *b);
/* Bytes one encoded frame can take at most (the slot size for out_stride). */
size_t ncclzCudaFrameSlotBytes(const ncclzCudaBatch *b);

size_t ncclzCudaEncodeWorkspaceSize(const ncclzCudaBatch *b);
/* Encodes every frame of the batch. d_scales: QSGD scales of the whole array when side_scales
 * (frame k's scales start at k*frame_symbols/bucket), else NULL. d_frame_bytes[k] receives the
 * total size (header included) of frame k. */
ncclzStatus ncclzCudaEncodeBatch(const ncclzCudaBatch *b, const int32_t *d_sym, const float *d_scales,
                                 uint8_t *d_out, size_t out_stride, uint32_t *d_frame_bytes,
                                 void *d_ws, size_t ws_bytes, cudaStream_t stream);

size_t ncclzCudaDecodeWorkspaceSize(const ncclzCudaBatch *b);
/* Decodes every frame of the batch. Frame k starts at d_in + (d_in_offsets ? d_in_offsets[k] :
 * k*in_stride) and may span up to the next frame's start (or in_len, or in_stride). coder_mask:
 * bit c set when coder c may appear (0: only b->coder); a frame's coder parameter must equal
 * b->params. Symbols go to d_sym (frame k at k*frame_symbols), QSGD side scales to d_scales
 * (may be NULL). d_status[k]: 0 or ncclzStatus | reason << 8 (ncclzCudaStatusReason). */
ncclzStatus ncclzCudaDecodeBatch(const ncclzCudaBatch *b, unsigned coder_mask, const uint8_t *d_in,
                                 const uint64_t *d_in_offsets, size_t in_stride, size_t in_len,
                                 int32_t *d_sym, float *d_scales, uint32_t *d_status,
                                 void *d_ws, size_t ws_bytes, cudaStream_t stream);
/* Decode and dequantize in one call, the floats to d_x: what ncclzCudaDecodeBatch then
 * ncclzCudaDequantizeQsgd (b->quant QSGD, b->side_scales) or ncclzCudaDequantizeEB (b->quant EB;
 * its bound b->d_abs_eb, else quant->abs_eb) give, bit for bit. Where the quantizer works element
 * by element (EB without Lorenzo; QSGD with side scales where coder_mask leaves HUFFMAN out,
 * which is faster in two passes), the decoders write the floats
 * themselves: the data is read and written once, d_sym is not touched (may be NULL) and
 * d_scales gets the side scales when not NULL. Otherwise the codes go to d_sym first (QSGD: the
 * scales to d_scales, both needed), then the dequantizer runs (EB with Lorenzo: d_qws of
 * ncclzCudaQuantWorkspaceSize(n_symbols) bytes). d_status as ncclzCudaDecodeBatch; a frame whose
 * status is not 0 leaves its part of d_x unspecified. */
ncclzStatus ncclzCudaDecodeDequantBatch(const ncclzCudaBatch *b, unsigned coder_mask, const uint8_t *d_in,
                                        const uint64_t *d_in_offsets, size_t in_stride, size_t in_len,
                                        int32_t *d_sym, float *d_scales, float *d_x, uint32_t *d_status,
                                        void *d_ws, size_t ws_bytes, void *d_qws, size_t qws_bytes,
                                        cudaStream_t stream);
/* Quantize and encode in one call: what ncclzCudaQsgdQuantize (b->quant, QSGD; d_scales and d_sym
 * written) then ncclzCudaEncodeBatch (b->side_scales set) do. One FIXEDLEN frame on a zeroed
 * workspace (ws_zeroed, up to 256 Ki symbols, buckets of 128 to 2,048 dividing 2,048, 16-byte
 * aligned d_x and d_sym, no post-check) runs as one kernel; anything else as the two calls. */
ncclzStatus ncclzCudaQsgdEncodeBatch(const ncclzCudaBatch *b, const float *d_x, int32_t *d_sym, float *d_scales,
                                     uint8_t *d_out, size_t out_stride, uint32_t *d_frame_bytes, void *d_ws,
                                     size_t ws_bytes, cudaStream_t stream);
/* Encodes from 8-bit codes (QSGD's, ncclzCudaQsgdQuantize8): the frames ncclzCudaEncodeBatch
 * writes for the same codes as int32_t, byte for byte. Batches that ncclzCudaBatchTakesCodes8
 * accepts; else NCCLZ_ERR_ARG. */
int ncclzCudaBatchTakesCodes8(const ncclzCudaBatch *b); /* RAW or FIXEDLEN, one coder (no d_coders) */
ncclzStatus ncclzCudaEncodeBatch8(const ncclzCudaBatch *b, const int8_t *d_sym8, const float *d_scales,
                                  uint8_t *d_out, size_t out_stride, uint32_t *d_frame_bytes, void *d_ws,
                                  size_t ws_bytes, cudaStream_t stream);
/* ncclzCudaQsgdEncodeBatch with the codes as int8_t (d_sym8, n_symbols bytes): the quantizer's
 * pass writes a quarter of the bytes and the coder reads a quarter; the same frames. RAW or
 * FIXEDLEN without d_coders, as ncclzCudaEncodeBatch8. */
ncclzStatus ncclzCudaQsgdEncodeBatch8(const ncclzCudaBatch *b, const float *d_x, int8_t *d_sym8, float *d_scales,
                                      uint8_t *d_out, size_t out_stride, uint32_t *d_frame_bytes, void *d_ws,
                                      size_t ws_bytes, cudaStream_t stream);
/* Text for a d_status word ("ok", "corrupt: payload check", ...). */
const char *ncclzCudaStatusReason(uint32_t status);

/* ------------------------------------------------------------ quantizers */

/* Device-side results of quantization: error counts, first bad index, the resolved bound. */
typedef struct {
  unsigned long long nonfinite, out_of_range, unbounded; /* NaN/Inf, |code| >= limit, rounding failures */
  unsigned long long first_bad;                          /* smallest bad index (~0 if none) */
  double abs_eb, bound;                                  /* EB: half-step and bound used */
  float vmin, vmax;                                      /* EB rel: range of the finite non-fill values */
} ncclzCudaQuantStats;

size_t ncclzCudaQuantWorkspaceSize(size_t n);
/* EB: resolves eb:rel on the device into d_stats->abs_eb/bound as ncclzQuantResolve does (rel_eb is
 * the X of rel=X; with a workspace of ncclzCudaQuantWorkspaceSize(n) in two launches, else four),
 * or takes p->abs_eb/p->bound (eb_is_rel 0);
 * then quantizes, with Lorenzo (p->lorenzo, p->dims) fused, to d_sym. Errors are counted in
 * d_stats; symbols of bad elements are unspecified. */
ncclzStatus ncclzCudaQuantizeEB(const ncclzQuantParams *p, int eb_is_rel, double rel_eb, const float *d_x, size_t n,
                                int32_t *d_sym, ncclzCudaQuantStats *d_stats, void *d_ws, size_t ws_bytes,
                                cudaStream_t stream);
/* Quantize and encode in one call: what ncclzCudaQuantizeEB (b->quant, EB; d_sym and d_stats
 * written, d_qws as its workspace) then ncclzCudaEncodeBatch do. HUFFMAN alone without a
 * predictor, frames of whole groups of 4 and 16-byte aligned d_x and d_sym (and not a one-kernel
 * frame) quantizes inside the histogram pass, after eb:rel's range pass; anything else runs as
 * the two calls. */
ncclzStatus ncclzCudaEbEncodeBatch(const ncclzCudaBatch *b, int eb_is_rel, double rel_eb, const float *d_x,
                                   int32_t *d_sym, ncclzCudaQuantStats *d_stats, void *d_qws, size_t qws_bytes,
                                   uint8_t *d_out, size_t out_stride, uint32_t *d_frame_bytes, void *d_ws,
                                   size_t ws_bytes, cudaStream_t stream);
/* Inverse Lorenzo (in d_ws) and dequantization; abs_eb from d_abs_eb when non-NULL. */
ncclzStatus ncclzCudaDequantizeEB(const ncclzQuantParams *p, const double *d_abs_eb, const int32_t *d_sym, size_t n,
                                  float *d_x, void *d_ws, size_t ws_bytes, cudaStream_t stream);
/* QSGD: per-bucket scales (max |x|) unless d_scales_in, then the stochastic codes. */
ncclzStatus ncclzCudaQsgdScales(const ncclzQuantParams *p, const float *d_x, size_t n, float *d_scales,
                                cudaStream_t stream);
ncclzStatus ncclzCudaQuantizeQsgd(const ncclzQuantParams *p, const float *d_x, size_t n, const float *d_scales,
                                  int32_t *d_sym, cudaStream_t stream);
/* Both in one pass (what ncclzCudaQsgdScales then ncclzCudaQuantizeQsgd write: the scales to
 * d_scales, the codes to d_sym); buckets of 128, 256 or 512 with 16-byte aligned x and sym read x
 * once, others take the two passes. */
ncclzStatus ncclzCudaQsgdQuantize(const ncclzQuantParams *p, const float *d_x, size_t n, float *d_scales,
                                  int32_t *d_sym, cudaStream_t stream);
ncclzStatus ncclzCudaDequantizeQsgd(const ncclzQuantParams *p, const int32_t *d_sym, size_t n,
                                    const float *d_scales, float *d_x, cudaStream_t stream);
/* The same with the codes as int8_t: every QSGD code fits (|c| <= 127 at 8 bits), so a pass moves
 * 5 bytes an element instead of 8. The codes are ncclzCudaQsgdQuantize's, narrowed; the floats
 * ncclzCudaDequantizeQsgd's, bit for bit. */
ncclzStatus ncclzCudaQsgdQuantize8(const ncclzQuantParams *p, const float *d_x, size_t n, float *d_scales,
                                   int8_t *d_sym8, cudaStream_t stream);
ncclzStatus ncclzCudaDequantizeQsgd8(const ncclzQuantParams *p, const int8_t *d_sym8, size_t n,
                                     const float *d_scales, float *d_x, cudaStream_t stream);

/* ------------------------------------------------------------ measurement */

/* Result of ncclzCudaCodecBench. */
typedef struct {
  double encode_gbps, decode_gbps;     /* input (float) bytes / median time, quantization included */
  double coder_encode_gbps, coder_decode_gbps; /* symbols only (quantized bytes / median time) */
  double copy_gbps;                    /* device-to-device copy, bytes read + written */
  size_t output_bytes;                 /* sum of the encoded frame sizes */
  uint32_t n_frames;
  int lossless_ok;                     /* GPU decode gave back the GPU-encoded symbols */
  int decode_status;                   /* first nonzero d_status word, 0 if none */
  double max_abs_err;                  /* of the reconstruction against x */
} ncclzCudaBenchResult;

/* A coder per frame for ncclzCudaCodecBench (`--coder auto`): plan() writes d_coders[k], a word a
 * frame, for the frames of d_sym (n symbols of frame_symbols each) on `stream`, ahead of the
 * encode, which then post-checks each frame against fallback_bytes / fallback_last_bytes
 * (ncclzCudaBatch). The REA device selector (model layer, cli/rea_chooser.c) is the one ncclz
 * uses; the codecs layer only calls it. */
typedef struct {
  ncclzStatus (*plan)(void *ctx, const int32_t *d_sym, size_t n, uint32_t frame_symbols, uint32_t *d_coders,
                      cudaStream_t stream);
  void *ctx;
  uint64_t fallback_bytes, fallback_last_bytes;
} ncclzCudaCoderChooser;

/* `ncclz codec --device gpu`: uploads x (host floats), quantizes per q (resolved params; for
 * eb:rel pass eb_is_rel/rel_eb to time the device range scan too) and codes in frames of
 * frame_symbols; times encode and decode with CUDA events (warm-up, then the median of runs >= 20
 * runs, each the replay of the call's CUDA graph, captured once). When frames_out is non-NULL, *frames_out receives a malloc'd buffer of the frames back to
 * back (the caller frees it; *frames_len its length) for checking against the CPU, and syms_out
 * (n int32, may be NULL) the GPU symbols. chooser: NULL, or a coder per frame (planned inside the
 * timed encode; `coder` is then ignored). codes8: QSGD with RAW or FIXEDLEN and no chooser takes
 * 8-bit codes (ncclzCudaQsgdEncodeBatch8, a standalone codec's fastest path); 0: 32-bit codes, the
 * executor's (its reductions add them), which a calibration measures. */
ncclzStatus ncclzCudaCodecBench(const float *x, size_t n, const ncclzQuantParams *q, int eb_is_rel, double rel_eb,
                                ncclzCoder coder, const ncclzCudaCoderChooser *chooser, int codes8,
                                const ncclzCoderParams *cp, uint32_t frame_symbols, int runs,
                                ncclzCudaBenchResult *res, uint8_t **frames_out, size_t *frames_len,
                                int32_t *syms_out);
#ifdef __cplusplus
}
#endif
#endif /* NCCLZ_CODECS_CUDA_H */
