/* ncclzCudaCodecBench: the GPU half of `ncclz codec --device gpu`. It owns its buffers (this is
 * a measurement, not the hot path), times quantize+encode and decode+dequantize with CUDA
 * events (warm-up, then the median of individual runs, each the replay of the call's CUDA graph),
 * and returns the frames for checking
 * against the CPU reference. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <algorithm>
#include <vector>

#include "internal.cuh"

namespace {

struct Bufs {
  float *x = nullptr, *xr = nullptr, *scales = nullptr, *scales2 = nullptr;
  int32_t *sym = nullptr, *sym2 = nullptr;
  int8_t *sym8 = nullptr; /* QSGD's codes as the coder reads them where they take 8 bits (narrow) */
  uint8_t *out = nullptr;
  uint32_t *fbytes = nullptr, *status = nullptr, *coders = nullptr;
  void *wse = nullptr, *wsd = nullptr, *wsq = nullptr;
  ncclzCudaQuantStats *stats = nullptr;
  ~Bufs() {
    void *all[] = {x, xr, scales, scales2, sym, sym2, sym8, out, fbytes, status, coders, wse, wsd, wsq, stats};
    for (void *p : all)
      if (p) cudaFree(p);
  }
};

/* Times fn() runs times after warm-up; returns the median in seconds. Each timed run replays a
 * CUDA graph of one fn() call, captured once after the warm-up (the shape's graph): one launch
 * from the host instead of one per kernel. Issued kernel by kernel, a small frame's call is bound
 * by the host's launches (bench_latency: encode_us against encode_graph_us and encode_issue_us). */
template <typename F>
static ncclzStatus time_median(cudaStream_t s, int runs, F fn, double *sec) {
  cudaEvent_t a, b;
  NZ_CUDA(cudaEventCreate(&a));
  NZ_CUDA(cudaEventCreate(&b));
  ncclzStatus st = NCCLZ_OK;
  for (int i = 0; i < 3 && st == NCCLZ_OK; i++) st = fn();
  cudaGraph_t g = nullptr;
  cudaGraphExec_t ge = nullptr;
  if (st == NCCLZ_OK) {
    NZ_CUDA(cudaStreamBeginCapture(s, cudaStreamCaptureModeRelaxed));
    st = fn();
    const cudaError_t e = cudaStreamEndCapture(s, &g);
    if (st == NCCLZ_OK && e != cudaSuccess) st = ncclzSetError(NCCLZ_ERR_CUDA, "cuda bench: capture: %s", cudaGetErrorString(e));
    if (st == NCCLZ_OK && cudaGraphInstantiate(&ge, g, 0) != cudaSuccess)
      st = ncclzSetError(NCCLZ_ERR_CUDA, "cuda bench: graph instantiation failed");
  }
  std::vector<float> ms;
  for (int i = 0; i < runs && st == NCCLZ_OK; i++) {
    cudaEventRecord(a, s);
    if (cudaGraphLaunch(ge, s) != cudaSuccess) st = ncclzSetError(NCCLZ_ERR_CUDA, "cuda bench: graph launch failed");
    cudaEventRecord(b, s);
    cudaEventSynchronize(b);
    float t = 0;
    cudaEventElapsedTime(&t, a, b);
    ms.push_back(t);
  }
  if (ge) cudaGraphExecDestroy(ge);
  if (g) cudaGraphDestroy(g);
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  if (st != NCCLZ_OK) return st;
  std::sort(ms.begin(), ms.end());
  *sec = ms.empty() ? 0 : ms[ms.size() / 2] * 1e-3;
  return NCCLZ_OK;
}

} // namespace

ncclzStatus ncclzCudaCodecBench(const float *x, size_t n, const ncclzQuantParams *q, int eb_is_rel, double rel_eb,
                                ncclzCoder coder, const ncclzCudaCoderChooser *chooser, int codes8,
                                const ncclzCoderParams *cp, uint32_t frame_symbols, int runs,
                                ncclzCudaBenchResult *res, uint8_t **frames_out, size_t *frames_len,
                                int32_t *syms_out) {
  if (!x || !n || !res || !cp || !frame_symbols) return ncclzSetError(NCCLZ_ERR_ARG, "cuda bench: bad arguments");
  if (runs < 20) runs = 20;
  memset(res, 0, sizeof *res);
  const ncclzQuantKind kind = q ? q->kind : NCCLZ_QUANT_NONE;
  Bufs B;
  cudaStream_t s;
  NZ_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  struct StreamGuard {
    cudaStream_t s;
    ~StreamGuard() { cudaStreamDestroy(s); }
  } sg{s};
  ncclzCudaBatch b;
  memset(&b, 0, sizeof b);
  b.coder = coder;
  b.params = *cp;
  b.dtype = NCCLZ_DTYPE_F32;
  b.quant = kind == NCCLZ_QUANT_NONE ? NULL : q;
  b.n_symbols = n;
  b.frame_symbols = frame_symbols;
  b.side_scales = kind == NCCLZ_QUANT_QSGD;
  const uint32_t nf = ncclzCudaBatchFrames(&b);
  if (chooser) { /* a coder per frame, and the post-check */
    NZ_CUDA(cudaMalloc(&B.coders, 4 * (size_t)nf));
    b.d_coders = B.coders;
    b.fallback_bytes = chooser->fallback_bytes, b.fallback_last_bytes = chooser->fallback_last_bytes;
  }
  const size_t slot = ncclzCudaFrameSlotBytes(&b), nscales = kind == NCCLZ_QUANT_QSGD ? ncclz_ceil_div(n, q->qsgd_bucket) : 1;
  NZ_CUDA(cudaMalloc(&B.x, 4 * n));
  NZ_CUDA(cudaMalloc(&B.xr, 4 * n));
  NZ_CUDA(cudaMalloc(&B.sym, 4 * n));
  NZ_CUDA(cudaMalloc(&B.sym2, 4 * n));
  /* QSGD's codes between its quantizer and RAW or FIXEDLEN as int8_t: a quarter of the bytes
   * written and read (ncclzCudaQsgdEncodeBatch8) */
  const bool narrow = codes8 && kind == NCCLZ_QUANT_QSGD && ncclzCudaBatchTakesCodes8(&b);
  if (narrow) NZ_CUDA(cudaMalloc(&B.sym8, n));
  NZ_CUDA(cudaMalloc(&B.scales, 4 * nscales));
  NZ_CUDA(cudaMalloc(&B.scales2, 4 * nscales));
  NZ_CUDA(cudaMalloc(&B.out, slot * nf));
  NZ_CUDA(cudaMalloc(&B.fbytes, 4 * nf));
  NZ_CUDA(cudaMalloc(&B.status, 4 * nf));
  NZ_CUDA(cudaMalloc(&B.stats, sizeof(ncclzCudaQuantStats)));
  size_t wse = ncclzCudaEncodeWorkspaceSize(&b), wsd = ncclzCudaDecodeWorkspaceSize(&b),
         wsq = ncclzCudaQuantWorkspaceSize(n);
  NZ_CUDA(cudaMalloc(&B.wse, wse));
  NZ_CUDA(cudaMalloc(&B.wsd, wsd));
  NZ_CUDA(cudaMalloc(&B.wsq, wsq));
  /* zeroed once: a call of one frame then runs in one kernel (ncclzCudaBatch.ws_zeroed) */
  NZ_CUDA(cudaMemset(B.wse, 0, wse));
  NZ_CUDA(cudaMemset(B.wsd, 0, wsd));
  b.ws_zeroed = 1;
  NZ_CUDA(cudaMemcpyAsync(B.x, x, 4 * n, cudaMemcpyHostToDevice, s));
  if (kind == NCCLZ_QUANT_EB && eb_is_rel) b.d_abs_eb = &B.stats->abs_eb;
  const double *d_eb = b.d_abs_eb;

  auto quantize = [&]() -> ncclzStatus {
    if (kind == NCCLZ_QUANT_EB) return ncclzCudaQuantizeEB(q, eb_is_rel, rel_eb, B.x, n, B.sym, B.stats, B.wsq, wsq, s);
    if (kind == NCCLZ_QUANT_QSGD)
      return narrow ? ncclzCudaQsgdQuantize8(q, B.x, n, B.scales, B.sym8, s)
                    : ncclzCudaQsgdQuantize(q, B.x, n, B.scales, B.sym, s);
    NZ_CUDA(cudaMemcpyAsync(B.sym, B.x, 4 * n, cudaMemcpyDeviceToDevice, s)); /* quant none: the bits */
    return NCCLZ_OK;
  };
  auto encode = [&]() { /* with a chooser, its plan is part of the encode's time */
    ncclzStatus st = chooser ? chooser->plan(chooser->ctx, B.sym, n, frame_symbols, B.coders, s) : NCCLZ_OK;
    if (st != NCCLZ_OK) return st;
    return narrow ? ncclzCudaEncodeBatch8(&b, B.sym8, B.scales, B.out, slot, B.fbytes, B.wse, wse, s)
                  : ncclzCudaEncodeBatch(&b, B.sym, B.scales, B.out, slot, B.fbytes, B.wse, wse, s);
  };
  const unsigned coder_mask = chooser ? 7u : 0u; /* auto: frames of any coder */
  auto decode = [&]() {
    return ncclzCudaDecodeBatch(&b, coder_mask, B.out, NULL, slot, slot * nf, B.sym2, B.scales2, B.status, B.wsd, wsd, s);
  };
  auto dequantize = [&]() -> ncclzStatus {
    if (kind == NCCLZ_QUANT_EB) return ncclzCudaDequantizeEB(q, d_eb, B.sym2, n, B.xr, B.wsq, wsq, s);
    if (kind == NCCLZ_QUANT_QSGD) return ncclzCudaDequantizeQsgd(q, B.sym2, n, B.scales2, B.xr, s);
    NZ_CUDA(cudaMemcpyAsync(B.xr, B.sym2, 4 * n, cudaMemcpyDeviceToDevice, s));
    return NCCLZ_OK;
  };
  double t_copy = 0, t_enc = 0, t_dec = 0, t_cenc = 0, t_cdec = 0;
  ncclzStatus st;
  auto copy = [&]() -> ncclzStatus {
    NZ_CUDA(cudaMemcpyAsync(B.xr, B.x, 4 * n, cudaMemcpyDeviceToDevice, s));
    return NCCLZ_OK;
  };
  if ((st = time_median(s, runs, copy, &t_copy)) != NCCLZ_OK) return st;
  /* without a chooser, the quantizer inside the encode call: one kernel for a small QSGD frame,
   * EB inside HUFFMAN's histogram pass over a batch */
  auto quantize_encode = [&]() {
    if (narrow) return ncclzCudaQsgdEncodeBatch8(&b, B.x, B.sym8, B.scales, B.out, slot, B.fbytes, B.wse, wse, s);
    if (kind == NCCLZ_QUANT_QSGD && !chooser)
      return ncclzCudaQsgdEncodeBatch(&b, B.x, B.sym, B.scales, B.out, slot, B.fbytes, B.wse, wse, s);
    if (kind == NCCLZ_QUANT_EB && !chooser)
      return ncclzCudaEbEncodeBatch(&b, eb_is_rel, rel_eb, B.x, B.sym, B.stats, B.wsq, wsq, B.out, slot, B.fbytes, B.wse,
                                    wse, s);
    ncclzStatus r = quantize();
    return r != NCCLZ_OK ? r : encode();
  };
  auto decode_dequantize = [&]() { /* one pass where the quantizer allows (ncclzCudaDecodeDequantBatch) */
    if (kind == NCCLZ_QUANT_NONE) {
      ncclzStatus r = decode();
      return r != NCCLZ_OK ? r : dequantize();
    }
    return ncclzCudaDecodeDequantBatch(&b, coder_mask, B.out, NULL, slot, slot * nf, B.sym2, B.scales2, B.xr, B.status,
                                       B.wsd, wsd, B.wsq, wsq, s);
  };
  if ((st = time_median(s, runs, quantize_encode, &t_enc)) != NCCLZ_OK) return st;
  if ((st = time_median(s, runs, encode, &t_cenc)) != NCCLZ_OK) return st;
  if ((st = time_median(s, runs, decode_dequantize, &t_dec)) != NCCLZ_OK) return st;
  if ((st = time_median(s, runs, decode, &t_cdec)) != NCCLZ_OK) return st;
  /* one more clean round for the results */
  if ((st = quantize_encode()) != NCCLZ_OK) return st;
  /* poison: the decodes must write every symbol and every float */
  NZ_CUDA(cudaMemsetAsync(B.sym2, 0xA5, 4 * n, s));
  NZ_CUDA(cudaMemsetAsync(B.xr, 0xA5, 4 * n, s));
  if ((st = decode_dequantize()) != NCCLZ_OK) return st;
  std::vector<float> xr(n), xr2(n);
  NZ_CUDA(cudaMemcpyAsync(xr.data(), B.xr, 4 * n, cudaMemcpyDeviceToHost, s));
  if ((st = decode()) != NCCLZ_OK || (st = dequantize()) != NCCLZ_OK) return st; /* the two passes */
  NZ_CUDA(cudaMemcpyAsync(xr2.data(), B.xr, 4 * n, cudaMemcpyDeviceToHost, s));
  NZ_CUDA(cudaStreamSynchronize(s));
  if (memcmp(xr.data(), xr2.data(), 4 * n))
    return ncclzSetError(NCCLZ_ERR_CUDA, "cuda bench: decode + dequantize in one pass differs from the two passes");

  std::vector<uint32_t> fb(nf), fst(nf);
  NZ_CUDA(cudaMemcpy(fb.data(), B.fbytes, 4 * nf, cudaMemcpyDeviceToHost));
  NZ_CUDA(cudaMemcpy(fst.data(), B.status, 4 * nf, cudaMemcpyDeviceToHost));
  std::vector<int32_t> s1(n), s2(n);
  if (narrow) { /* the encoded codes, widened */
    std::vector<int8_t> c8(n);
    NZ_CUDA(cudaMemcpy(c8.data(), B.sym8, n, cudaMemcpyDeviceToHost));
    std::copy(c8.begin(), c8.end(), s1.begin());
  } else {
    NZ_CUDA(cudaMemcpy(s1.data(), B.sym, 4 * n, cudaMemcpyDeviceToHost));
  }
  NZ_CUDA(cudaMemcpy(s2.data(), B.sym2, 4 * n, cudaMemcpyDeviceToHost));
  size_t total = 0;
  for (uint32_t k = 0; k < nf; k++) {
    total += fb[k];
    if (fst[k] && !res->decode_status) res->decode_status = (int)fst[k];
  }
  res->lossless_ok = memcmp(s1.data(), s2.data(), 4 * n) == 0 && res->decode_status == 0;
  double err = 0;
  for (size_t i = 0; i < n; i++) {
    if (q && q->has_fill && kind == NCCLZ_QUANT_EB && x[i] == q->fill_value) continue;
    double e = fabs((double)x[i] - (double)xr[i]);
    if (e > err || e != e) err = e;
  }
  res->max_abs_err = err;
  res->output_bytes = total;
  res->n_frames = nf;
  const double in_bytes = 4.0 * n;
  res->copy_gbps = 2 * in_bytes / t_copy * 1e-9;
  res->encode_gbps = in_bytes / t_enc * 1e-9;
  res->decode_gbps = in_bytes / t_dec * 1e-9;
  res->coder_encode_gbps = in_bytes / t_cenc * 1e-9;
  res->coder_decode_gbps = in_bytes / t_cdec * 1e-9;
  if (syms_out) memcpy(syms_out, s1.data(), 4 * n);
  if (frames_out) {
    uint8_t *buf = (uint8_t *)malloc(total ? total : 1);
    if (!buf) return ncclzSetError(NCCLZ_ERR_NOMEM, "cuda bench: %zu bytes for the frames", total);
    size_t o = 0;
    for (uint32_t k = 0; k < nf; k++) {
      NZ_CUDA(cudaMemcpy(buf + o, B.out + k * slot, fb[k], cudaMemcpyDeviceToHost));
      o += fb[k];
    }
    *frames_out = buf;
    if (frames_len) *frames_len = total;
  }
  return NCCLZ_OK;
}
