/* Batched frames on the GPU: workspace layout, the frame header (built once on the host by the
 * reference packer, patched per frame on the device), side data, RAW, header parsing and the
 * payload check, and the encode/decode entry points that dispatch to the coders. */
#include <stdlib.h>
#include <string.h>

#include <mutex>
#include <type_traits>
#include <vector>

#include "decode_out.cuh"
#include "eb_quant.cuh"

static size_t align256(size_t v) { return (v + 255) & ~(size_t)255; }

/* Whether the environment variable is unset or not "0". */
static bool env_not_zero(const char *name) {
  const char *v = getenv(name);
  return !(v && !strcmp(v, "0"));
}

bool nz_pdl_on() {
  static const bool on = env_not_zero("NCCLZ_CUDA_PDL");
  return on;
}

cudaError_t nz_smem_optin_ptr(const void *kernel, size_t bytes, int carveout) {
  struct Set {
    const void *kernel;
    int dev;
    size_t bytes;
    int carveout; /* -1: not set */
  };
  static std::mutex mu;
  static std::vector<Set> done; /* a few dozen kernels and devices: a linear search */
  int dev = 0;
  cudaError_t e = cudaGetDevice(&dev);
  if (e != cudaSuccess) return e;
  std::lock_guard<std::mutex> lock(mu);
  Set *seen = nullptr;
  for (Set &d : done)
    if (d.kernel == kernel && d.dev == dev) seen = &d;
  if (!seen) {
    done.push_back({kernel, dev, 0, -1});
    seen = &done.back();
  }
  if (seen->bytes < bytes) { /* never lowered: an earlier call's kernel may need more */
    if ((e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)bytes)) != cudaSuccess) return e;
    seen->bytes = bytes;
  }
  if (carveout >= 0 && seen->carveout != carveout) {
    if ((e = cudaFuncSetAttribute(kernel, cudaFuncAttributePreferredSharedMemoryCarveout, carveout)) != cudaSuccess) return e;
    seen->carveout = carveout;
  }
  return cudaSuccess;
}

/* Whether ws_zeroed batches may run as one kernel: on unless NCCLZ_CUDA_ONE=0 (read once; for
 * measuring the chain through `ncclz codec --device gpu`). */
static bool one_on() {
  static const bool on = env_not_zero("NCCLZ_CUDA_ONE");
  return on;
}
/* Whether an encode takes the quantizer in too (ncclzCudaQsgdEncodeBatch's one kernel,
 * ncclzCudaEbEncodeBatch's histogram pass): on unless NCCLZ_CUDA_FUSE=0 (read once; for
 * measurements). */
static bool fuse_on() {
  static const bool on = env_not_zero("NCCLZ_CUDA_FUSE");
  return on;
}

uint32_t ncclzCudaBatchFrames(const ncclzCudaBatch *b) {
  if (!b || b->frame_symbols == 0) return 0;
  return (uint32_t)ncclz_ceil_div(b->n_symbols, b->frame_symbols);
}

static uint32_t side_per_frame(const ncclzCudaBatch *b) {
  if (!b->side_scales || !b->quant || !b->quant->qsgd_bucket) return 0;
  return (uint32_t)ncclz_ceil_div(b->frame_symbols, b->quant->qsgd_bucket);
}

/* Whether the batch's frames are post-checked (a coder, and a limit). */
static bool falls_back(const ncclzCudaBatch *b) {
  return (b->coder != NCCLZ_CODER_RAW || b->d_coders) && (b->fallback_bytes || b->fallback_last_bytes);
}

size_t ncclzCudaFrameSlotBytes(const ncclzCudaBatch *b) {
  size_t n = b->frame_symbols < b->n_symbols ? b->frame_symbols : (size_t)b->n_symbols, bound = 0;
  /* the largest frame the batch may write: its coder's, any coder's in a mixed batch, and a RAW
   * frame's where the post-check may fall back */
  for (int c = 0; c < NCCLZ_CODER_COUNT; c++)
    if (b->d_coders || c == (int)b->coder || (c == NCCLZ_CODER_RAW && falls_back(b))) {
      const size_t k = ncclzFrameBound((ncclzCoder)c, &b->params, n, 4 * side_per_frame(b));
      bound = k > bound ? k : bound;
    }
  return (bound + 15) & ~(size_t)15; /* 16-byte aligned slots */
}

NzShape nz_shape(const ncclzCudaBatch *b, uint32_t units_per_frame) {
  NzShape s;
  s.n_symbols = b->n_symbols;
  s.n_frames = ncclzCudaBatchFrames(b);
  s.frame_symbols = b->frame_symbols;
  s.p0 = b->coder == NCCLZ_CODER_FIXEDLEN ? b->params.fixedlen_tile_blocks
         : b->coder == NCCLZ_CODER_HUFFMAN ? b->params.huffman_segment : 0;
  s.side_per_frame = side_per_frame(b);
  s.bucket = b->quant ? b->quant->qsgd_bucket : 0;
  s.units_per_frame = units_per_frame;
  s.mixed = b->d_coders != nullptr;
  return s;
}

/* A batch's coder parameters, a zero one taken from ncclzCoderParamsDefault. */
static ncclzCoderParams params_or_default(ncclzCoderParams p) {
  ncclzCoderParams d;
  ncclzCoderParamsDefault(&d);
  if (p.fixedlen_tile_blocks == 0) p.fixedlen_tile_blocks = d.fixedlen_tile_blocks;
  if (p.huffman_segment == 0) p.huffman_segment = d.huffman_segment;
  return p;
}

/* Upper bound of look-back units of any coder for this batch. */
static uint32_t lookback_units(const ncclzCudaBatch *b) {
  ncclzCudaBatch f = *b, h = *b;
  f.coder = NCCLZ_CODER_FIXEDLEN;
  h.coder = NCCLZ_CODER_HUFFMAN;
  f.params = h.params = params_or_default(b->params);
  uint32_t a = nz_fixedlen_units(nz_shape(&f, 0)), c = nz_huffman_units(nz_shape(&h, 0));
  return (a > c ? a : c) * ncclzCudaBatchFrames(b);
}

NzLayout nz_layout(const ncclzCudaBatch *b, int decode, uint32_t units_total) {
  NzLayout L;
  uint32_t nf = ncclzCudaBatchFrames(b);
  /* first, at a fixed size: a one-kernel call's state and look-back words (ws_zeroed), which
   * no other call writes whatever its shape */
  L.one = 0;
  size_t o = align256(NZ_ONE_LB_OFFSET + 8 * (size_t)NZ_ONE_MAX_UNITS);
  L.frames = o;
  o = align256(o + sizeof(NzFrame) * nf);
  L.lookback = o;
  o = align256(o + 8 * (size_t)units_total);
  int huff = decode || b->coder == NCCLZ_CODER_HUFFMAN || b->d_coders;
  size_t bins = huff ? (size_t)nf * NCCLZ_HUFF_MAX_SYMS : 0;
  L.hist = o;
  o = align256(o + 4 * (decode ? 0 : bins));
  L.table = o; /* encode: code per index; decode: sorted indices + canonical tables */
  o = align256(o + 4 * (bins + (size_t)nf * 64));
  L.lut = o;
  o = align256(o + (decode && huff ? 4 * ((size_t)nf << NZ_HF_FAST_BITS) : 0));
  L.total = o;
  return L;
}

size_t ncclzCudaEncodeWorkspaceSize(const ncclzCudaBatch *b) {
  return nz_layout(b, 0, lookback_units(b)).total;
}
size_t ncclzCudaDecodeWorkspaceSize(const ncclzCudaBatch *b) { return nz_layout(b, 1, 0).total; }

NzHeaderTemplate nz_header_template(const ncclzCudaBatch *b, ncclzCoder coder) {
  ncclzFrameHeader h;
  memset(&h, 0, sizeof h);
  h.version = NCCLZ_FORMAT_VERSION;
  h.coder = (uint8_t)coder;
  h.dtype = (uint8_t)b->dtype;
  const ncclzQuantParams *q = b->quant;
  if (q && q->kind != NCCLZ_QUANT_NONE) { /* as frame.c's describe_quant: unused fields stay 0 */
    h.quant = (uint8_t)q->kind;
    if (q->kind == NCCLZ_QUANT_EB) {
      h.lorenzo = (uint8_t)q->lorenzo;
      h.abs_eb = q->abs_eb;
      if (q->has_fill) {
        h.flags |= NCCLZ_FRAME_FLAG_FILL;
        h.fill_value = q->fill_value;
      }
    } else {
      h.qsgd_bits = (uint8_t)q->qsgd_bits;
      h.qsgd_bucket = q->qsgd_bucket;
    }
  }
  if (side_per_frame(b)) h.flags |= NCCLZ_FRAME_FLAG_SIDE_SCALES;
  if (coder == NCCLZ_CODER_FIXEDLEN) h.coder_p0 = b->params.fixedlen_tile_blocks;
  if (coder == NCCLZ_CODER_HUFFMAN) h.coder_p0 = b->params.huffman_segment;
  NzHeaderTemplate t;
  ncclzFrameHeaderPack(&h, t.b);
  return t;
}

/* ------------------------------------------------------------ shared kernels */

#define NZ_INIT_THREADS 256

/* Resets the batch's frames and look-back words, and copies each frame's QSGD scales
 * (when scales is non-NULL) into its payload's first words, the frame's check starting from
 * theirs: one launch instead of two saves the scales' own launch (~3 us under ncu). */
__global__ void k_init(NzShape sh, const float *scales, uint8_t *out, size_t stride, NzFrame *fr, uint32_t nf,
                       unsigned long long *lb, size_t nlb, const uint32_t *coders, uint32_t coder) {
  nz_pdl_enter();
  __shared__ uint32_t s_chk;
  for (uint32_t f = blockIdx.x; f < nf; f += gridDim.x) {
    uint32_t chk = 0;
    if (scales) {
      const uint32_t nw = sh.side_words(f);
      uint32_t *dst = (uint32_t *)(out + f * stride + 64);
      const uint32_t *src = (const uint32_t *)(scales + (size_t)f * sh.side_per_frame);
      for (uint32_t i = threadIdx.x; i < nw; i += blockDim.x) {
        uint32_t w = src[i];
        dst[i] = w;
        chk += nz_chk(w, i);
      }
    }
    if (threadIdx.x == 0) s_chk = 0;
    __syncthreads();
    nz_add_check<NZ_INIT_THREADS>(chk, &s_chk);
    if (threadIdx.x == 0) {
      NzFrame z;
      memset(&z, 0, sizeof z);
      z.vmin = INT32_MAX;
      z.vmax = INT32_MIN + 1;
      z.check = z.side_check = s_chk;
      z.coder = coders ? (coders[f] < NCCLZ_CODER_COUNT ? coders[f] : (uint32_t)NCCLZ_CODER_RAW) : coder;
      fr[f] = z;
    }
  }
  size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x, stride_all = (size_t)gridDim.x * blockDim.x;
  for (size_t k = i; k < nlb; k += stride_all) lb[k] = 0;
}

static void launch_init(const NzShape &sh, const float *scales, uint8_t *out, size_t stride, NzFrame *fr, uint32_t nf,
                        unsigned long long *lb, size_t nlb, const uint32_t *coders, uint32_t coder, cudaStream_t s) {
  size_t lb_blocks = nlb / NZ_INIT_THREADS + 1, blocks = nf > lb_blocks ? nf : lb_blocks;
  if (blocks > 1024) blocks = 1024;
  nz_launch(k_init, (unsigned)blocks, NZ_INIT_THREADS, 0, s, sh, sh.side_per_frame ? scales : nullptr, out, stride, fr, nf, lb,
                                                     nlb, coders, coder);
}

/* RAW: the symbols as words after the side data, for the RAW frames of the batch; only_fallback:
 * for the frames marked to fall back (k_fallback_mark) instead, the others keep their coder's
 * payload. */
template <typename T>
__global__ void k_raw_encode(NzShape sh, const T *sym, uint8_t *out, size_t stride, NzFrame *fr, int only_fallback) {
  nz_pdl_enter();
  uint32_t f = blockIdx.y, n = sh.frame_n(f), sw = sh.side_words(f);
  /* the whole block returns or none of it: fr[f] is the same for all its threads */
  if (only_fallback ? !fr[f].fallback : !sh.takes(fr, f, NCCLZ_CODER_RAW)) return;
  const T *src = sym + (size_t)f * sh.frame_symbols;
  uint32_t *dst = (uint32_t *)(out + f * stride + 64) + sw;
  nz_raw_copy_chunk(src, NzWords{(int32_t *)dst}, n, sw, &fr[f].check);
  if (blockIdx.x == 0 && threadIdx.x == 0) fr[f].coded_bytes = 4 * n;
}

/* The post-check: a frame larger than its limit (header included) falls back to RAW: its check
 * restarts from the side data's and k_raw_encode(only_fallback) rewrites its payload. One thread
 * a frame. */
__global__ void k_fallback_mark(NzShape sh, uint64_t limit, uint64_t last_limit, NzFrame *fr) {
  nz_pdl_enter();
  uint32_t f = blockIdx.x * blockDim.x + threadIdx.x;
  if (f >= sh.n_frames) return;
  const uint32_t n = sh.frame_n(f);
  const uint64_t lim = n < sh.frame_symbols ? last_limit : limit;
  const uint64_t bytes = 64 + 4 * (uint64_t)sh.side_words(f) + fr[f].coded_bytes;
  if (fr[f].coder != NCCLZ_CODER_RAW && lim && bytes > lim) {
    fr[f].fallback = 1;
    fr[f].coder = NCCLZ_CODER_RAW;
    fr[f].check = fr[f].side_check;
  }
}

/* Writes each frame's header (nz_put_header): its coder's template (RAW for frames that fell
 * back). */
__global__ void k_finalize_encode(NzShape sh, NzHeaderTemplates t, const double *d_abs_eb, uint32_t dtype_size,
                                  uint8_t *out, size_t stride, NzFrame *fr, uint32_t *frame_bytes) {
  nz_pdl_enter();
  uint32_t f = blockIdx.x * blockDim.x + threadIdx.x;
  if (f >= sh.n_frames) return;
  const NzFrame z = fr[f];
  const uint32_t side = 4 * sh.side_words(f), payload = side + z.coded_bytes;
  nz_put_header(out + f * stride, t.coder[z.coder < NCCLZ_CODER_COUNT ? z.coder : 0], sh.frame_n(f), payload, side,
                z.centre, z.radius, d_abs_eb, z.check, dtype_size);
  frame_bytes[f] = 64 + payload;
}

/* ------------------------------------------------------------ decode kernels */

/* One thread per frame: nz_parse_frame. */
__global__ void k_parse(NzShape sh, const uint8_t *in, const uint64_t *offsets, size_t in_stride, size_t in_len,
                        unsigned mask, uint32_t p0f, uint32_t p0h, NzFrame *fr) {
  nz_pdl_enter();
  uint32_t f = blockIdx.x * blockDim.x + threadIdx.x;
  if (f >= sh.n_frames) return;
  fr[f] = nz_parse_frame(sh, f, in, offsets, in_stride, in_len, mask, p0f, p0h);
}

__global__ void k_side_decode(NzShape sh, const uint8_t *in, float *scales, NzFrame *fr) {
  nz_pdl_enter();
  uint32_t f = blockIdx.y;
  if (fr[f].status) return;
  uint32_t nw = fr[f].side_bytes / 4;
  const uint32_t *src = (const uint32_t *)(in + fr[f].src + 64);
  uint32_t chk = 0;
  for (uint32_t i = blockIdx.x * 256 + threadIdx.x; i < nw; i += gridDim.x * 256) {
    uint32_t w = src[i];
    if (scales) ((uint32_t *)scales)[(size_t)f * sh.side_per_frame + i] = w;
    chk += nz_chk(w, i);
  }
  nz_add_check<256>(chk, &fr[f].check);
}

template <typename Out>
__global__ void k_raw_decode(NzShape sh, const uint8_t *in, Out out, NzFrame *fr) {
  nz_pdl_enter();
  uint32_t f = blockIdx.y;
  if (fr[f].status || fr[f].coder != NCCLZ_CODER_RAW) return;
  uint32_t n = fr[f].n, sw = fr[f].side_bytes / 4;
  if (fr[f].payload_bytes - fr[f].side_bytes != 4 * n) {
    if (blockIdx.x == 0 && threadIdx.x == 0) atomicCAS(&fr[f].status, 0u, NZ_CORRUPT(NZ_R_RAW_SIZE));
    return;
  }
  const uint32_t *src = (const uint32_t *)(in + fr[f].src + 64) + sw;
  nz_raw_copy_chunk(src, out.frame(sh, f, in, fr[f]), n, sw, &fr[f].check);
}

/* The payload check comes before the coder's checks in the reference's order, so it wins. */
__global__ void k_finalize_decode(NzShape sh, NzFrame *fr, uint32_t *status) {
  nz_pdl_enter();
  uint32_t f = blockIdx.x * blockDim.x + threadIdx.x;
  if (f >= sh.n_frames) return;
  NzFrame z = fr[f];
  uint32_t st = z.status;
  uint32_t parse_ok = z.coder != 0xFF;
  if (parse_ok && (z.check ^ z.payload_bytes) != z.payload_check) st = NZ_CORRUPT(NZ_R_PCHECK);
  status[f] = st;
}

/* ------------------------------------------------------------ entry points */

static ncclzStatus check_batch(const ncclzCudaBatch *b) {
  if (!b || b->frame_symbols == 0 || (unsigned)b->coder >= NCCLZ_CODER_COUNT || (unsigned)b->dtype >= NCCLZ_DTYPE_COUNT)
    return ncclzSetError(NCCLZ_ERR_ARG, "cuda batch: frame_symbols must be > 0 and coder/dtype valid");
  if ((uint64_t)b->frame_symbols * ncclzDtypeSize(b->dtype) > UINT32_MAX)
    return ncclzSetError(NCCLZ_ERR_ARG, "cuda batch: frames of %u symbols exceed 4 GiB", b->frame_symbols);
  if (b->side_scales && (!b->quant || b->quant->kind != NCCLZ_QUANT_QSGD || !b->quant->qsgd_bucket ||
                         b->frame_symbols % b->quant->qsgd_bucket))
    return ncclzSetError(NCCLZ_ERR_ARG, "cuda batch: side scales need QSGD and frames of whole buckets");
  if ((b->coder == NCCLZ_CODER_FIXEDLEN || b->d_coders) && b->params.fixedlen_tile_blocks == 0)
    return ncclzSetError(NCCLZ_ERR_ARG, "cuda batch: fixedlen tile size must be > 0");
  if ((b->coder == NCCLZ_CODER_HUFFMAN || b->d_coders) &&
      (b->params.huffman_segment == 0 || b->params.huffman_segment > 4096))
    return ncclzSetError(NCCLZ_ERR_ARG, "cuda batch: huffman segment must be 1..4096 symbols on the GPU");
  return NCCLZ_OK;
}

template <typename T>
static T *ws_at(void *ws, size_t off) { return (T *)((char *)ws + off); }

/* Whether an encode runs as one kernel (ncclzCudaBatch.ws_zeroed): one frame of RAW or FIXEDLEN
 * of at most NZ_ONE_ENCODE_MAX symbols, without a post-check. Larger frames take the chain: its
 * 8-warp encoder, launched without PDL, beat the one kernel at 1 and 4 MiB on the H200 (graph
 * replay of quantize + encode, bench_latency: REL 1 MiB 19.2 against 20.6-23.4 us, whatever the
 * one kernel's CTA width or PDL), where at 64 and 256 KiB the one kernel saved about 1 us. */
#define NZ_ONE_ENCODE_MAX 65536u
static bool one_kernel_encode(const ncclzCudaBatch *b, uint32_t nf) {
  const uint64_t n = b->n_symbols < b->frame_symbols ? b->n_symbols : b->frame_symbols; /* the frame's symbols */
  return b->ws_zeroed && one_on() && nf == 1 && n <= NZ_ONE_ENCODE_MAX && nz_one_units(n) <= NZ_ONE_MAX_UNITS &&
         !b->d_coders && !falls_back(b) &&
         (b->coder == NCCLZ_CODER_RAW || b->coder == NCCLZ_CODER_FIXEDLEN);
}


/* The argument checks of an encode: its frames (*nf, 0: nothing to do) and workspace layout. */
static ncclzStatus encode_args(const ncclzCudaBatch *b, const float *d_scales, size_t out_stride, size_t ws_bytes,
                               uint32_t *nf, NzLayout *L) {
  ncclzStatus st = check_batch(b);
  if (st != NCCLZ_OK) return st;
  *nf = ncclzCudaBatchFrames(b);
  if (*nf == 0) return NCCLZ_OK;
  if (out_stride < ncclzCudaFrameSlotBytes(b) || out_stride % 4)
    return ncclzSetError(NCCLZ_ERR_ARG, "cuda encode: out_stride %zu below the slot size %zu (or not 4-aligned)",
                         out_stride, ncclzCudaFrameSlotBytes(b));
  if (b->side_scales && !d_scales) return ncclzSetError(NCCLZ_ERR_ARG, "cuda encode: side scales missing");
  *L = nz_layout(b, 0, lookback_units(b));
  if (ws_bytes < L->total) return ncclzSetError(NCCLZ_ERR_ARG, "cuda encode: workspace %zu < %zu", ws_bytes, L->total);
  return NCCLZ_OK;
}

/* What a one-kernel encode's last CTA needs for the header. */
static NzOneEncode one_encode_args(const ncclzCudaBatch *b, const float *d_scales, uint32_t *d_frame_bytes, void *d_ws,
                                   const NzLayout &L) {
  NzOneEncode a;
  a.scales = side_per_frame(b) ? d_scales : nullptr;
  a.hdr = nz_header_template(b, b->coder);
  a.d_abs_eb = b->d_abs_eb;
  a.dtype_size = (uint32_t)ncclzDtypeSize(b->dtype);
  a.frame_bytes = d_frame_bytes;
  a.st = ws_at<NzOneState>(d_ws, L.one);
  return a;
}

/* The chain of an encode of nf frames: reset, each coder's kernels, the post-check, the headers.
 * eb: EB's quantizer inside HUFFMAN's histogram pass (a batch of HUFFMAN alone), which writes the
 * codes to d_sym before the coder reads them. */
template <typename T> /* the codes: int32_t, or int8_t for RAW and FIXEDLEN alone (ncclzCudaEncodeBatch8) */
static ncclzStatus encode_chain(const ncclzCudaBatch *b, uint32_t nf, const NzLayout &L, const T *d_sym,
                                const float *d_scales, const NzEb *eb, uint8_t *d_out, size_t out_stride,
                                uint32_t *d_frame_bytes, void *d_ws, cudaStream_t s) {
  ncclzStatus st;
  const uint32_t units = lookback_units(b);
  NzShape sh = nz_shape(b, 0);
  NzFrame *fr = ws_at<NzFrame>(d_ws, L.frames);
  unsigned long long *lb = ws_at<unsigned long long>(d_ws, L.lookback);
  launch_init(sh, d_scales, d_out, out_stride, fr, nf, lb, units, b->d_coders, (uint32_t)b->coder, s);
  NZ_LAUNCHED();
  /* each coder's kernels on its frames: every frame (one coder), or those NzFrame.coder names (a
   * mixed batch: the kernels skip the others' frames; the shape carries each coder's parameter) */
  const bool mixed = b->d_coders != nullptr;
  if (mixed || b->coder == NCCLZ_CODER_RAW) {
    nz_launch(k_raw_encode<T>, dim3((unsigned)ncclz_ceil_div(sh.frame_symbols, NZ_RAW_CHUNK), nf), 256, 0, s, sh, d_sym, d_out, out_stride, fr, 0);
    NZ_LAUNCHED();
  }
  ncclzCudaBatch cb = *b;
  if (mixed || b->coder == NCCLZ_CODER_FIXEDLEN) {
    cb.coder = NCCLZ_CODER_FIXEDLEN;
    if ((st = nz_fixedlen_encode(nz_shape(&cb, 0), d_sym, d_out, out_stride, fr, lb, s)) != NCCLZ_OK) return st;
  }
  if constexpr (std::is_same<T, int32_t>::value) { /* 8-bit codes take RAW and FIXEDLEN alone (encode8_args) */
    if (mixed || b->coder == NCCLZ_CODER_HUFFMAN) {
      /* the two coders number their look-back units alike: FIXEDLEN's published words would read
       * as HUFFMAN predecessors' */
      if (mixed) NZ_CUDA(cudaMemsetAsync(lb, 0, 8 * (size_t)units, s));
      cb.coder = NCCLZ_CODER_HUFFMAN;
      if ((st = nz_huffman_encode(nz_shape(&cb, 0), d_sym, eb, d_out, out_stride, fr, lb,
                                  ws_at<uint32_t>(d_ws, L.hist), ws_at<uint32_t>(d_ws, L.table), s)) != NCCLZ_OK)
        return st;
    }
  }
  if (falls_back(b)) {
    nz_launch(k_fallback_mark, (nf + 127) / 128, 128, 0, s, sh, b->fallback_bytes, b->fallback_last_bytes, fr);
    NZ_LAUNCHED();
    nz_launch(k_raw_encode<T>, dim3((unsigned)ncclz_ceil_div(sh.frame_symbols, NZ_RAW_CHUNK), nf), 256, 0, s, sh, d_sym, d_out, out_stride, fr, 1);
    NZ_LAUNCHED();
  }
  NzHeaderTemplates t;
  for (int c = 0; c < NCCLZ_CODER_COUNT; c++) t.coder[c] = nz_header_template(b, (ncclzCoder)c);
  nz_launch(k_finalize_encode, (nf + 127) / 128, 128, 0, s, sh, t, b->d_abs_eb, (uint32_t)ncclzDtypeSize(b->dtype), d_out,
                                                    out_stride, fr, d_frame_bytes);
  NZ_LAUNCHED();
  return NCCLZ_OK;
}

/* An encode of nf frames laid out in L (encode_args): the one kernel where it serves, else the chain. */
template <typename T>
static ncclzStatus encode_laid_out(const ncclzCudaBatch *b, uint32_t nf, const NzLayout &L, const T *d_sym,
                                   const float *d_scales, uint8_t *d_out, size_t out_stride, uint32_t *d_frame_bytes,
                                   void *d_ws, cudaStream_t s) {
  if (one_kernel_encode(b, nf))
    return nz_one_encode(nz_shape(b, 0), b->coder, d_sym, d_out, one_encode_args(b, d_scales, d_frame_bytes, d_ws, L),
                         s);
  return encode_chain<T>(b, nf, L, d_sym, d_scales, nullptr, d_out, out_stride, d_frame_bytes, d_ws, s);
}

ncclzStatus ncclzCudaEncodeBatch(const ncclzCudaBatch *b, const int32_t *d_sym, const float *d_scales,
                                 uint8_t *d_out, size_t out_stride, uint32_t *d_frame_bytes, void *d_ws,
                                 size_t ws_bytes, cudaStream_t s) {
  uint32_t nf = 0;
  NzLayout L;
  ncclzStatus st = encode_args(b, d_scales, out_stride, ws_bytes, &nf, &L);
  if (st != NCCLZ_OK || nf == 0) return st;
  return encode_laid_out(b, nf, L, d_sym, d_scales, d_out, out_stride, d_frame_bytes, d_ws, s);
}

/* 8-bit codes go to RAW and FIXEDLEN alone: HUFFMAN's and REA's kernels read 32-bit codes. */
int ncclzCudaBatchTakesCodes8(const ncclzCudaBatch *b) {
  return b && !b->d_coders && (b->coder == NCCLZ_CODER_RAW || b->coder == NCCLZ_CODER_FIXEDLEN);
}

static ncclzStatus encode8_args(const ncclzCudaBatch *b, const char *who) {
  if (ncclzCudaBatchTakesCodes8(b)) return NCCLZ_OK;
  return ncclzSetError(NCCLZ_ERR_ARG, "%s: 8-bit codes are coded by RAW or FIXEDLEN, one coder for the batch", who);
}

ncclzStatus ncclzCudaEncodeBatch8(const ncclzCudaBatch *b, const int8_t *d_sym8, const float *d_scales,
                                  uint8_t *d_out, size_t out_stride, uint32_t *d_frame_bytes, void *d_ws,
                                  size_t ws_bytes, cudaStream_t s) {
  uint32_t nf = 0;
  NzLayout L;
  ncclzStatus st = encode8_args(b, "cuda encode");
  if (st == NCCLZ_OK) st = encode_args(b, d_scales, out_stride, ws_bytes, &nf, &L);
  if (st != NCCLZ_OK || nf == 0) return st;
  return encode_laid_out(b, nf, L, d_sym8, d_scales, d_out, out_stride, d_frame_bytes, d_ws, s);
}

static bool qsgd_bits_ok(uint32_t bits) { return bits == 2 || bits == 4 || bits == 8; }

/* Whether a QSGD quantize + encode runs as one kernel: one FIXEDLEN frame on a zeroed workspace
 * without a post-check, of at most NZ_ONE_MAX_UNITS CTAs' symbols, buckets that tile a CTA, and
 * 16-byte aligned x and codes (the kernel's float4 and int4 accesses). */
static bool one_kernel_qsgd(const ncclzCudaBatch *b, uint32_t nf, const float *d_x, const void *d_sym) {
  const ncclzQuantParams *q = b->quant;
  const uint64_t n = b->n_symbols < b->frame_symbols ? b->n_symbols : b->frame_symbols;
  return b->ws_zeroed && one_on() && fuse_on() && nf == 1 && n <= (uint64_t)NZ_ONE_MAX_UNITS * NZ_ONE_QSGD_SYMS &&
         !b->d_coders && !falls_back(b) && b->coder == NCCLZ_CODER_FIXEDLEN && nz_one_qsgd_fits(q->qsgd_bucket) &&
         qsgd_bits_ok(q->qsgd_bits) && nz_aligned16(d_x, d_sym);
}

/* ncclzCudaQsgdEncodeBatch and its 8-bit form: the codes to d_sym, or to d_sym8 where it is set. */
static ncclzStatus qsgd_encode(const ncclzCudaBatch *b, const float *d_x, int32_t *d_sym, int8_t *d_sym8,
                               float *d_scales, uint8_t *d_out, size_t out_stride, uint32_t *d_frame_bytes,
                               void *d_ws, size_t ws_bytes, cudaStream_t s) {
  if (!b || !b->quant || b->quant->kind != NCCLZ_QUANT_QSGD || !b->side_scales)
    return ncclzSetError(NCCLZ_ERR_ARG, "cuda qsgd encode: a QSGD batch with side scales expected");
  uint32_t nf = 0;
  NzLayout L;
  ncclzStatus st = d_sym8 ? encode8_args(b, "cuda qsgd encode") : NCCLZ_OK;
  if (st == NCCLZ_OK) st = encode_args(b, d_scales, out_stride, ws_bytes, &nf, &L);
  if (st != NCCLZ_OK || nf == 0) return st;
  if (one_kernel_qsgd(b, nf, d_x, d_sym8 ? (const void *)d_sym8 : (const void *)d_sym)) {
    const ncclzQuantParams *p = b->quant;
    const NzQsgd q = {d_x, d_scales, d_sym8 ? nullptr : d_sym, d_sym8, p->qsgd_bucket, p->rank,
                      ncclz_qsgd_levels(p->qsgd_bits), p->seed};
    NzOneEncode a = one_encode_args(b, d_scales, d_frame_bytes, d_ws, L);
    a.scales = nullptr; /* the kernel writes the side data itself */
    return nz_one_qsgd_encode(nz_shape(b, 0), q, d_out, a, s);
  }
  if (d_sym8) {
    if ((st = ncclzCudaQsgdQuantize8(b->quant, d_x, b->n_symbols, d_scales, d_sym8, s)) != NCCLZ_OK) return st;
    return encode_laid_out(b, nf, L, d_sym8, d_scales, d_out, out_stride, d_frame_bytes, d_ws, s);
  }
  if ((st = ncclzCudaQsgdQuantize(b->quant, d_x, b->n_symbols, d_scales, d_sym, s)) != NCCLZ_OK) return st;
  return encode_laid_out(b, nf, L, d_sym, d_scales, d_out, out_stride, d_frame_bytes, d_ws, s);
}

ncclzStatus ncclzCudaQsgdEncodeBatch(const ncclzCudaBatch *b, const float *d_x, int32_t *d_sym, float *d_scales,
                                     uint8_t *d_out, size_t out_stride, uint32_t *d_frame_bytes, void *d_ws,
                                     size_t ws_bytes, cudaStream_t s) {
  return qsgd_encode(b, d_x, d_sym, nullptr, d_scales, d_out, out_stride, d_frame_bytes, d_ws, ws_bytes, s);
}

ncclzStatus ncclzCudaQsgdEncodeBatch8(const ncclzCudaBatch *b, const float *d_x, int8_t *d_sym8, float *d_scales,
                                      uint8_t *d_out, size_t out_stride, uint32_t *d_frame_bytes, void *d_ws,
                                      size_t ws_bytes, cudaStream_t s) {
  if (!d_sym8) return ncclzSetError(NCCLZ_ERR_ARG, "cuda qsgd encode: NULL 8-bit codes");
  return qsgd_encode(b, d_x, nullptr, d_sym8, d_scales, d_out, out_stride, d_frame_bytes, d_ws, ws_bytes, s);
}

/* Whether a batch's EB quantize + HUFFMAN encode quantizes inside the histogram pass
 * (nz_huffman_encode with an NzEb): HUFFMAN alone, no predictor, frames of whole groups of 4,
 * 16-byte aligned x and codes, not a one-kernel frame. */
static bool fused_eb(const ncclzCudaBatch *b, uint32_t nf, const float *d_x, const int32_t *d_sym) {
  return fuse_on() && !b->d_coders && b->coder == NCCLZ_CODER_HUFFMAN && !b->quant->lorenzo &&
         b->frame_symbols % 4 == 0 && nz_aligned16(d_x, d_sym) && !one_kernel_encode(b, nf);
}

ncclzStatus ncclzCudaEbEncodeBatch(const ncclzCudaBatch *b, int eb_is_rel, double rel_eb, const float *d_x,
                                   int32_t *d_sym, ncclzCudaQuantStats *d_stats, void *d_qws, size_t qws_bytes,
                                   uint8_t *d_out, size_t out_stride, uint32_t *d_frame_bytes, void *d_ws,
                                   size_t ws_bytes, cudaStream_t s) {
  if (!b || !b->quant || b->quant->kind != NCCLZ_QUANT_EB || b->side_scales)
    return ncclzSetError(NCCLZ_ERR_ARG, "cuda eb encode: an EB batch without side scales expected");
  uint32_t nf = 0;
  NzLayout L;
  ncclzStatus st = encode_args(b, nullptr, out_stride, ws_bytes, &nf, &L);
  if (st != NCCLZ_OK || nf == 0) return st;
  if (!fused_eb(b, nf, d_x, d_sym)) { /* the two calls, the batch laid out once */
    st = ncclzCudaQuantizeEB(b->quant, eb_is_rel, rel_eb, d_x, b->n_symbols, d_sym, d_stats, d_qws, qws_bytes, s);
    return st != NCCLZ_OK ? st : encode_laid_out(b, nf, L, d_sym, nullptr, d_out, out_stride, d_frame_bytes, d_ws, s);
  }
  NzEb e;
  st = nz_eb_prepare(b->quant, eb_is_rel, rel_eb, d_x, b->n_symbols, d_sym, d_stats, d_qws, qws_bytes, s, &e);
  if (st != NCCLZ_OK) return st;
  return encode_chain<int32_t>(b, nf, L, d_sym, nullptr, &e, d_out, out_stride, d_frame_bytes, d_ws, s);
}

/* The decode chain (or the one kernel) of a batch, the symbols to out (decode_out.cuh). */
template <typename Out>
static ncclzStatus decode_batch(const ncclzCudaBatch *b, unsigned coder_mask, const uint8_t *d_in,
                                const uint64_t *d_in_offsets, size_t in_stride, size_t in_len, const Out &out,
                                float *d_scales, uint32_t *d_status, void *d_ws, size_t ws_bytes, cudaStream_t s) {
  ncclzCudaBatch bb = *b;
  bb.params = params_or_default(bb.params);
  ncclzStatus st = check_batch(&bb);
  if (st != NCCLZ_OK) return st;
  uint32_t nf = ncclzCudaBatchFrames(&bb);
  if (nf == 0) return NCCLZ_OK;
  if (!d_in_offsets && in_stride < 64) return ncclzSetError(NCCLZ_ERR_ARG, "cuda decode: in_stride %zu < 64", in_stride);
  NzLayout L = nz_layout(&bb, 1, 0);
  if (ws_bytes < L.total) return ncclzSetError(NCCLZ_ERR_ARG, "cuda decode: workspace %zu < %zu", ws_bytes, L.total);
  unsigned mask = coder_mask ? coder_mask : 1u << bb.coder;
  NzFrame *fr = ws_at<NzFrame>(d_ws, L.frames);
  NzShape sh = nz_shape(&bb, 0);
  ncclzCudaBatch fb = bb, hb = bb;
  fb.coder = NCCLZ_CODER_FIXEDLEN;
  hb.coder = NCCLZ_CODER_HUFFMAN;
  /* per-coder shapes: the frame's p0 is checked against the coder's own parameter */
  NzShape shf = nz_shape(&fb, 0), shh = nz_shape(&hb, 0);
  if (bb.ws_zeroed && one_on() && nf == 1 && !(mask & 4u)) /* no look-back: any frame size */
    return nz_one_decode(shf, mask, d_in, d_in_offsets, in_stride, in_len, out, d_scales, d_status,
                         ws_at<NzOneState>(d_ws, L.one), s);
  nz_launch(k_parse, (nf + 127) / 128, 128, 0, s, sh, d_in, d_in_offsets, in_stride, in_len, mask, shf.p0, shh.p0, fr);
  NZ_LAUNCHED();
  if (sh.side_per_frame) {
    nz_launch(k_side_decode, dim3((sh.side_per_frame + 255) / 256 < 64 ? (sh.side_per_frame + 255) / 256 : 64, nf), 256, 0, s,
        sh, d_in, d_scales, fr);
    NZ_LAUNCHED();
  }
  if (mask & 1u) {
    nz_launch(k_raw_decode<Out>, dim3((unsigned)ncclz_ceil_div(sh.frame_symbols, NZ_RAW_CHUNK), nf), 256, 0, s, sh, d_in,
              out, fr);
    NZ_LAUNCHED();
  }
  if (mask & 2u && (st = nz_fixedlen_decode(shf, d_in, out, fr, s)) != NCCLZ_OK) return st;
  if (mask & 4u &&
      (st = nz_huffman_decode(shh, d_in, out, fr, ws_at<uint32_t>(d_ws, L.lut), ws_at<uint32_t>(d_ws, L.table), s)) !=
          NCCLZ_OK)
    return st;
  nz_launch(k_finalize_decode, (nf + 127) / 128, 128, 0, s, sh, fr, d_status);
  NZ_LAUNCHED();
  return NCCLZ_OK;
}

ncclzStatus ncclzCudaDecodeBatch(const ncclzCudaBatch *b, unsigned coder_mask, const uint8_t *d_in,
                                 const uint64_t *d_in_offsets, size_t in_stride, size_t in_len, int32_t *d_sym,
                                 float *d_scales, uint32_t *d_status, void *d_ws, size_t ws_bytes, cudaStream_t s) {
  return decode_batch(b, coder_mask, d_in, d_in_offsets, in_stride, in_len, NzCodesOut{d_sym}, d_scales, d_status, d_ws,
                      ws_bytes, s);
}

/* log2 of a power of two, else 0xFF (NzQsgdOut.bucket_log2). */
static uint32_t log2_of_pow2(uint32_t v) { return v && !(v & (v - 1)) ? (uint32_t)__builtin_ctz(v) : 0xFFu; }

ncclzStatus ncclzCudaDecodeDequantBatch(const ncclzCudaBatch *b, unsigned coder_mask, const uint8_t *d_in,
                                        const uint64_t *d_in_offsets, size_t in_stride, size_t in_len, int32_t *d_sym,
                                        float *d_scales, float *d_x, uint32_t *d_status, void *d_ws, size_t ws_bytes,
                                        void *d_qws, size_t qws_bytes, cudaStream_t s) {
  const ncclzQuantParams *q = b ? b->quant : NULL;
  if (!q || (q->kind != NCCLZ_QUANT_QSGD && q->kind != NCCLZ_QUANT_EB) || !d_x)
    return ncclzSetError(NCCLZ_ERR_ARG, "cuda decode+dequantize: needs a QSGD or EB batch and an output");
  /* QSGD's HUFFMAN frames take the two passes: its dequantizer in the thread-a-segment decoder's
   * row stores made the 256 MiB decode slower (377 GB/s against 416), where EB's gained (300
   * against 281) */
  const unsigned mask = coder_mask ? coder_mask : 1u << b->coder;
  const bool fused = q->kind == NCCLZ_QUANT_QSGD ? b->side_scales && !(mask & 4u) : !q->lorenzo;
  if (fused && q->kind == NCCLZ_QUANT_QSGD) {
    const double lv = (double)ncclz_qsgd_levels(q->qsgd_bits);
    const NzQsgdOut out = {d_x, {q->qsgd_bucket, log2_of_pow2(q->qsgd_bucket), lv, 1.0 / lv}};
    return decode_batch(b, coder_mask, d_in, d_in_offsets, in_stride, in_len, out, d_scales, d_status, d_ws, ws_bytes, s);
  }
  if (fused) {
    const NzEbOut out = {d_x, q->abs_eb, b->d_abs_eb, q->has_fill, q->fill_value};
    return decode_batch(b, coder_mask, d_in, d_in_offsets, in_stride, in_len, out, d_scales, d_status, d_ws, ws_bytes, s);
  }
  if (!d_sym || (q->kind == NCCLZ_QUANT_QSGD && !d_scales))
    return ncclzSetError(NCCLZ_ERR_ARG, "cuda decode+dequantize: this batch decodes to d_sym (and QSGD scales) first");
  ncclzStatus st = ncclzCudaDecodeBatch(b, coder_mask, d_in, d_in_offsets, in_stride, in_len, d_sym, d_scales, d_status,
                                        d_ws, ws_bytes, s);
  if (st != NCCLZ_OK) return st;
  if (q->kind == NCCLZ_QUANT_QSGD) return ncclzCudaDequantizeQsgd(q, d_sym, b->n_symbols, d_scales, d_x, s);
  return ncclzCudaDequantizeEB(q, b->d_abs_eb, d_sym, b->n_symbols, d_x, d_qws, qws_bytes, s);
}

const char *ncclzCudaStatusReason(uint32_t status) {
  static const char *const r[NZ_R_COUNT_OF] = {
      "ok", "frame shorter than its header", "bad frame magic", "unsupported frame version",
      "header checksum mismatch", "unknown enum value in the header", "raw_bytes disagree with n_symbols",
      "side data fields inconsistent", "payload truncated", "payload check mismatch",
      "symbol count differs from the batch", "coder parameters differ from the batch", "coder not in the mask",
      "raw: size is not 4 n", "fixedlen: size mismatch", "fixedlen: tile offset mismatch",
      "huffman: code table invalid", "huffman: Kraft sum invalid", "huffman: segment offsets invalid",
      "huffman: invalid code", "huffman: segment length mismatch", "huffman: nonzero padding",
      "side data size differs from the batch", "huffman: escape decodes to a symbol with its own code",
      "fixedlen: nonzero padding"};
  if (status == 0) return "ok";
  uint32_t reason = status >> 8;
  return reason < NZ_R_COUNT_OF ? r[reason] : "unknown failure";
}
