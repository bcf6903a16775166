/* GPU codecs against the C reference: frames byte-identical for random and real data (1 element
 * to 64 Mi elements, odd sizes and odd coder parameters), GPU frames decoded on the CPU and CPU
 * frames on the GPU, corrupt frames rejected, hostile HUFFMAN frames (table, bitmap, nibble and
 * escape fields edited, checksums resealed) refused by the GPU exactly when the CPU refuses them,
 * and the quantizers' codes identical.
 * Without a GPU it prints "SKIP: no CUDA device" and exits 77. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <string>
#include <vector>

#include <cuda_runtime.h>

#include "ncclz/codecs.h"
#include "ncclz/codecs_cuda.h"
#include "ncclz/model.h"
#include "testutil_cuda.cuh"

static uint32_t g_fell_back, g_kept; /* frames of post-checked batches that went RAW / kept their coder */
static uint32_t g_cases, g_zeroed;    /* cases run, and of them those on zeroed workspaces (ws_zeroed) */
static uint32_t g_dequant_cases, g_dequant_fused; /* decode + dequantize calls compared, and of them one-pass ones */

/* Decode and dequantize in one call (ncclzCudaDecodeDequantBatch) of the encoded slots against the
 * CPU's dequantizer of sym (after its inverse Lorenzo), bit for bit, every frame's status 0; where
 * the call fuses (EB without Lorenzo; QSGD with side scales and no HUFFMAN in the mask) d_sym must
 * stay untouched. Quantizers the CPU refuses to dequantize (synthetic scales) are not compared. */
static void dequant_case(const char *name, const ncclzCudaBatch &b, unsigned mask, const uint8_t *d_out, size_t slot,
                         const int32_t *sym, const float *scales, void *d_ws, size_t wsd) {
  const ncclzQuantParams *q = b.quant;
  if (!q || (q->kind != NCCLZ_QUANT_QSGD && q->kind != NCCLZ_QUANT_EB) || (q->lorenzo && q->has_fill)) return;
  const size_t n = b.n_symbols, wsq = ncclzCudaQuantWorkspaceSize(n);
  const uint32_t nf = ncclzCudaBatchFrames(&b);
  std::vector<float> want(n), got(n);
  ncclzStatus st;
  if (q->kind == NCCLZ_QUANT_QSGD) {
    st = ncclzDequantizeQsgd(q, sym, n, scales, want.data());
  } else {
    std::vector<int32_t> codes(n);
    ncclzLorenzoInverse(q, sym, n, codes.data());
    st = ncclzDequantizeEB(q, codes.data(), n, want.data());
  }
  if (st != NCCLZ_OK) return;
  const size_t nsc = b.side_scales ? ncclzQsgdNumBuckets(q, n) : 1;
  Dev<int32_t> dsym(n);
  Dev<float> dsc(nsc), dx(n);
  Dev<uint8_t> dqws(wsq);
  Dev<uint32_t> dst(nf);
  CU(cudaMemset(dsym.p, 0xA5, 4 * n));
  CU(cudaMemset(dx.p, 0xA5, 4 * n));
  st = ncclzCudaDecodeDequantBatch(&b, mask, d_out, NULL, slot, slot * nf, dsym.p, dsc.p, dx.p, dst.p, d_ws, wsd, dqws.p,
                                   wsq, 0);
  CHECK(st == NCCLZ_OK, "%s: decode + dequantize: %s", name, ncclzLastError());
  if (st != NCCLZ_OK) return;
  std::vector<uint32_t> fst(nf);
  std::vector<int32_t> after(n);
  CU(cudaMemcpy(got.data(), dx.p, 4 * n, cudaMemcpyDeviceToHost));
  CU(cudaMemcpy(fst.data(), dst.p, 4 * nf, cudaMemcpyDeviceToHost));
  CU(cudaMemcpy(after.data(), dsym.p, 4 * n, cudaMemcpyDeviceToHost));
  uint32_t bad = 0;
  for (uint32_t k = 0; k < nf && !bad; k++) bad = fst[k];
  CHECK(bad == 0, "%s: decode + dequantize status %s", name, ncclzCudaStatusReason(bad));
  CHECK(memcmp(got.data(), want.data(), 4 * n) == 0, "%s: decode + dequantize identical to the cpu's", name);
  const unsigned m = mask ? mask : 1u << b.coder;
  const bool fused = q->kind == NCCLZ_QUANT_QSGD ? b.side_scales && !(m & 4u) : !q->lorenzo;
  size_t touched = 0;
  for (size_t i = 0; i < n; i++) touched += after[i] != (int32_t)0xA5A5A5A5;
  if (fused) CHECK(touched == 0, "%s: one pass leaves d_sym alone (%zu words written)", name, touched);
  g_dequant_cases++, g_dequant_fused += fused;
}

/* Encodes sym on the GPU and the CPU, compares, and cross-decodes. limit, last_limit: the batch's
 * post-check (ncclzCudaBatch.fallback_bytes, fallback_last_bytes); the CPU reference then writes
 * a RAW frame where the coder's frame is larger than its limit. coders: NULL, or each frame's
 * coder (a mixed batch, ncclzCudaBatch.d_coders; c is then ignored, values past HUFFMAN are RAW). */
static void run_case(const char *name, const int32_t *sym, size_t n, uint32_t fs, ncclzCoder c,
                     const ncclzCoderParams *cp, const ncclzQuantParams *q, const float *scales, uint64_t limit = 0,
                     uint64_t last_limit = 0, const uint32_t *coders = nullptr) {
  ncclzCudaBatch b;
  memset(&b, 0, sizeof b);
  b.coder = c;
  b.params = *cp;
  b.dtype = NCCLZ_DTYPE_F32;
  b.quant = q;
  b.n_symbols = n;
  b.frame_symbols = fs;
  b.side_scales = q && q->kind == NCCLZ_QUANT_QSGD;
  b.fallback_bytes = limit, b.fallback_last_bytes = last_limit;
  uint32_t nf = ncclzCudaBatchFrames(&b);
  Dev<uint32_t> dcoders(nf);
  if (coders) {
    CU(cudaMemcpy(dcoders.p, coders, 4 * nf, cudaMemcpyHostToDevice));
    b.d_coders = dcoders.p;
  }
  /* the coders that may appear: RAW and c after a post-check, any of them in a mixed batch */
  const unsigned mask = coders ? 7u : limit || last_limit ? 1u | 1u << c : 0;
  size_t slot = ncclzCudaFrameSlotBytes(&b), wse = ncclzCudaEncodeWorkspaceSize(&b),
         wsd = ncclzCudaDecodeWorkspaceSize(&b);
  size_t nsc = b.side_scales ? (n + q->qsgd_bucket - 1) / q->qsgd_bucket : 1;
  Dev<int32_t> dsym(n), dsym2(n);
  Dev<float> dsc(nsc), dsc2(nsc);
  Dev<uint8_t> dout(slot * nf), dwse(wse), dwsd(wsd);
  Dev<uint32_t> dfb(nf), dst(nf);
  Dev<uint64_t> doff(nf);
  CU(cudaMemcpy(dsym.p, sym, 4 * n, cudaMemcpyHostToDevice));
  if (b.side_scales) CU(cudaMemcpy(dsc.p, scales, 4 * nsc, cudaMemcpyHostToDevice));
  /* every other case on zeroed workspaces (one frame then runs in one kernel), encoded twice: the
   * second call's frames must be the CPU's too (the first left the shared words zero) */
  b.ws_zeroed = g_cases++ % 2 == 0;
  g_zeroed += b.ws_zeroed;
  if (b.ws_zeroed) {
    CU(cudaMemset(dwse.p, 0, wse));
    CU(cudaMemset(dwsd.p, 0, wsd));
  }
  ncclzStatus st = NCCLZ_OK;
  for (int call = 0; call < 1 + b.ws_zeroed && st == NCCLZ_OK; call++) {
    CU(cudaMemset(dout.p, 0x5A, slot * nf)); /* poison */
    st = ncclzCudaEncodeBatch(&b, dsym.p, b.side_scales ? dsc.p : NULL, dout.p, slot, dfb.p, dwse.p, wse, 0);
  }
  CHECK(st == NCCLZ_OK, "%s: encode: %s", name, ncclzLastError());
  CU(cudaDeviceSynchronize());
  std::vector<uint32_t> fb(nf), fst(nf);
  std::vector<uint8_t> gpu(slot * nf);
  CU(cudaMemcpy(fb.data(), dfb.p, 4 * nf, cudaMemcpyDeviceToHost));
  CU(cudaMemcpy(gpu.data(), dout.p, slot * nf, cudaMemcpyDeviceToHost));
  /* CPU frames, back to back, with their offsets */
  std::vector<uint8_t> cpu;
  std::vector<uint64_t> off(nf);
  std::vector<uint8_t> frame(slot);
  int same = 1;
  for (uint32_t k = 0; k < nf; k++) {
    size_t start = (size_t)k * fs, nk = n - start < fs ? n - start : fs;
    ncclzFrameDesc d;
    memset(&d, 0, sizeof d);
    d.dtype = NCCLZ_DTYPE_F32;
    d.quant = q;
    d.coder_params = *cp;
    if (b.side_scales) {
      d.side = scales + start / q->qsgd_bucket;
      d.side_bytes = (uint32_t)(4 * ((nk + q->qsgd_bucket - 1) / q->qsgd_bucket));
    }
    size_t len = 0;
    const ncclzCoder ck = !coders ? c : coders[k] < NCCLZ_CODER_COUNT ? (ncclzCoder)coders[k] : NCCLZ_CODER_RAW;
    st = ncclzFrameEncode(ck, sym + start, nk, &d, frame.data(), slot, &len);
    const uint64_t lim = nk < fs ? last_limit : limit;
    if (st == NCCLZ_OK && ck != NCCLZ_CODER_RAW && lim) {
      const bool back = len > lim;
      if (back) st = ncclzFrameEncode(NCCLZ_CODER_RAW, sym + start, nk, &d, frame.data(), slot, &len);
      (back ? g_fell_back : g_kept)++;
    }
    CHECK(st == NCCLZ_OK, "%s: cpu encode: %s", name, ncclzLastError());
    if (st != NCCLZ_OK) return;
    if (len != fb[k] || memcmp(frame.data(), &gpu[k * slot], len) != 0) {
      if (same) {
        size_t at = 0;
        while (at < len && at < fb[k] && frame[at] == gpu[k * slot + at]) at++;
        fprintf(stderr, "%s: frame %u differs: cpu %zu bytes, gpu %u bytes, first difference at byte %zu\n", name, k,
                len, fb[k], at);
      }
      same = 0;
    }
    off[k] = cpu.size();
    cpu.insert(cpu.end(), frame.begin(), frame.begin() + len);
    /* GPU frame on the CPU */
    std::vector<int32_t> back(nk + 1);
    std::vector<float> side(nk + 1);
    size_t used = 0;
    st = ncclzFrameDecode(&gpu[k * slot], fb[k], NULL, back.data(), nk, side.data(), 4 * (nk + 1), &used);
    CHECK(st == NCCLZ_OK && used == fb[k] && memcmp(back.data(), sym + start, 4 * nk) == 0,
          "%s: cpu decode of gpu frame %u: %s", name, k, st ? ncclzLastError() : "symbols differ");
  }
  CHECK(same, "%s: %u gpu frames byte-identical to cpu", name, nf);
  /* GPU decode of the GPU slots, then of the packed CPU frames (offsets path) */
  for (int pass = 0; pass < 2; pass++) {
    CU(cudaMemset(dsym2.p, 0xA5, 4 * n));
    if (pass == 0) {
      st = ncclzCudaDecodeBatch(&b, mask, dout.p, NULL, slot, slot * nf, dsym2.p, dsc2.p, dst.p, dwsd.p, wsd, 0);
    } else {
      Dev<uint8_t> din(cpu.size());
      CU(cudaMemcpy(din.p, cpu.data(), cpu.size(), cudaMemcpyHostToDevice));
      CU(cudaMemcpy(doff.p, off.data(), 8 * nf, cudaMemcpyHostToDevice));
      st = ncclzCudaDecodeBatch(&b, 7, din.p, doff.p, 0, cpu.size(), dsym2.p, dsc2.p, dst.p, dwsd.p, wsd, 0);
      CU(cudaDeviceSynchronize());
    }
    CHECK(st == NCCLZ_OK, "%s: gpu decode: %s", name, ncclzLastError());
    CU(cudaDeviceSynchronize());
    std::vector<int32_t> back(n);
    CU(cudaMemcpy(back.data(), dsym2.p, 4 * n, cudaMemcpyDeviceToHost));
    CU(cudaMemcpy(fst.data(), dst.p, 4 * nf, cudaMemcpyDeviceToHost));
    uint32_t bad = 0;
    for (uint32_t k = 0; k < nf; k++)
      if (fst[k] && !bad) bad = fst[k];
    CHECK(bad == 0, "%s: gpu decode pass %d status %u (%s)", name, pass, bad, ncclzCudaStatusReason(bad));
    CHECK(memcmp(back.data(), sym, 4 * n) == 0, "%s: gpu decode pass %d gives the symbols back", name, pass);
    if (b.side_scales) {
      std::vector<float> sc(nsc);
      CU(cudaMemcpy(sc.data(), dsc2.p, 4 * nsc, cudaMemcpyDeviceToHost));
      CHECK(memcmp(sc.data(), scales, 4 * nsc) == 0, "%s: side scales back", name);
    }
  }
  dequant_case(name, b, mask, dout.p, slot, sym, scales, dwsd.p, wsd);
  /* one corrupted payload byte in frame 0 must be caught */
  if (same && fb[0] > 64) {
    uint8_t v;
    size_t at = 64 + (fb[0] - 64) / 2;
    CU(cudaMemcpy(&v, dout.p + at, 1, cudaMemcpyDeviceToHost));
    v ^= 0x10;
    CU(cudaMemcpy(dout.p + at, &v, 1, cudaMemcpyHostToDevice));
    st = ncclzCudaDecodeBatch(&b, mask, dout.p, NULL, slot, slot * nf, dsym2.p, dsc2.p, dst.p, dwsd.p, wsd, 0);
    CU(cudaDeviceSynchronize());
    CU(cudaMemcpy(fst.data(), dst.p, 4, cudaMemcpyDeviceToHost));
    CHECK(st == NCCLZ_OK && fst[0] != 0, "%s: corrupt frame rejected", name);
  }
}

static const ncclzCoder CODERS[3] = {NCCLZ_CODER_RAW, NCCLZ_CODER_FIXEDLEN, NCCLZ_CODER_HUFFMAN};

static void all_coders(const char *what, const int32_t *sym, size_t n, uint32_t fs, const ncclzQuantParams *q,
                       const float *scales) {
  ncclzCoderParams cp;
  ncclzCoderParamsDefault(&cp);
  char name[256];
  for (int c = 0; c < 3; c++) {
    snprintf(name, sizeof name, "%s n=%zu fs=%u %s", what, n, fs, ncclzCoderName(CODERS[c]));
    run_case(name, sym, n, fs, CODERS[c], &cp, q, scales);
  }
}

/* Random symbols of several kinds. */
static void gen(int kind, size_t n, uint64_t seed, std::vector<int32_t> &s) {
  s.resize(n);
  uint64_t st = seed * 0x9E3779B97F4A7C15ull + 1;
  for (size_t i = 0; i < n; i++) {
    uint64_t r = tu_rand(&st);
    switch (kind) {
    case 0: { /* peaked: mostly small, a few large (escapes) */
      double u = tu_uniform(&st);
      int32_t v = (int32_t)(log(u + 1e-12) * -3.0) * ((r & 1) ? 1 : -1);
      if ((r >> 8) % 1000 == 0) v = (int32_t)(r >> 20);
      s[i] = v;
      break;
    }
    case 1: s[i] = (int32_t)((r >> 12) % 2000001) - 1000000; break;                   /* wide */
    case 2: s[i] = (r >> 40) % 20 == 0 ? INT32_MIN : (int32_t)((r >> 8) % 41) - 20; break; /* fills */
    case 3: s[i] = (int32_t)(uint32_t)(r >> 16); break;                                /* full 32-bit */
    case 5: { /* escapes at the int32 extremes around a small bulk: 36-bit escape fields */
      static const int32_t far[] = {INT32_MAX, INT32_MIN + 1, INT32_MIN, INT32_MAX - 1, INT32_MIN + 2, 1 << 30, -(1 << 30)};
      s[i] = (r >> 32) % 10 == 0 ? far[(r >> 40) % 7] : (int32_t)((r >> 8) % 7) - 3;
      break;
    }
    case 6: /* a bulk at INT32_MAX: escapes at INT32_MIN + 1 wrap around to small offsets */
      s[i] = (r >> 32) % 10 == 0 ? ((r >> 40) & 1 ? INT32_MIN : INT32_MIN + 1) : INT32_MAX - (int32_t)((r >> 8) % 40);
      break;
    case 7: s[i] = 97 * (int32_t)((r >> 8) % 61) - 2900; break; /* few values, wide window: sparse table */
    default: s[i] = (int32_t)(i % 5); break;
    }
  }
}

/* ------------------------------------------------------------ hostile HUFFMAN frames */

static void put32(uint8_t *p, uint32_t v) {
  for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
}

/* Makes an edited frame pass both checksums, so that the coder's own checks see it. */
static void reseal(std::vector<uint8_t> &m) {
  uint32_t payload = m[16] | m[17] << 8 | m[18] << 16 | (uint32_t)m[19] << 24;
  put32(&m[52], ncclzPayloadCheck(&m[64], payload));
  put32(&m[60], ncclzFnv1a(m.data(), 60));
}

/* The CPU reference's frame of s coded with c (default parameters, no quantizer). */
static std::vector<uint8_t> cpu_frame(ncclzCoder c, const std::vector<int32_t> &s) {
  ncclzFrameDesc d;
  memset(&d, 0, sizeof d);
  d.dtype = NCCLZ_DTYPE_F32;
  ncclzCoderParamsDefault(&d.coder_params);
  size_t cap = ncclzFrameBound(c, &d.coder_params, s.size(), 0), len = 0;
  std::vector<uint8_t> f(cap);
  ncclzStatus st = ncclzFrameEncode(c, s.data(), s.size(), &d, f.data(), cap, &len);
  CHECK(st == NCCLZ_OK, "cpu %s frame: %s", ncclzCoderName(c), ncclzLastError());
  f.resize(st == NCCLZ_OK ? len : 0);
  return f;
}

/* One frame of n symbols decoded on the CPU and on the GPU (a batch of `coder`; zeroed: on a
 * zeroed workspace, twice, so in one kernel for RAW and FIXEDLEN): both refuse it, or both accept
 * it with the same symbols. Returns 1 when the GPU refused it. */
static int decode_both(const std::vector<uint8_t> &fr, size_t n, const char *what,
                       ncclzCoder coder = NCCLZ_CODER_HUFFMAN, bool zeroed = false) {
  std::vector<int32_t> cpu(n + 1), gpu(n + 1);
  ncclzStatus cs = ncclzFrameDecode(fr.data(), fr.size(), NULL, cpu.data(), n, NULL, 0, NULL);
  std::string cpu_msg = cs == NCCLZ_OK ? "ok" : ncclzLastError();
  ncclzCudaBatch b;
  memset(&b, 0, sizeof b);
  b.coder = coder;
  ncclzCoderParamsDefault(&b.params);
  b.dtype = NCCLZ_DTYPE_F32;
  b.n_symbols = n;
  b.frame_symbols = (uint32_t)n;
  b.ws_zeroed = zeroed;
  size_t wsd = ncclzCudaDecodeWorkspaceSize(&b);
  Dev<uint8_t> din(fr.size()), dws(wsd);
  Dev<int32_t> dsym(n);
  Dev<uint32_t> dst(1);
  CU(cudaMemcpy(din.p, fr.data(), fr.size(), cudaMemcpyHostToDevice));
  if (zeroed) CU(cudaMemset(dws.p, 0, wsd));
  uint32_t status = 0, first = 0;
  for (int call = 0; call < 1 + zeroed; call++) {
    ncclzStatus st = ncclzCudaDecodeBatch(&b, 0, din.p, NULL, fr.size(), fr.size(), dsym.p, NULL, dst.p, dws.p, wsd, 0);
    CHECK(st == NCCLZ_OK, "%s: gpu decode call: %s", what, ncclzLastError());
    CU(cudaDeviceSynchronize());
    CU(cudaMemcpy(&status, dst.p, 4, cudaMemcpyDeviceToHost));
    if (call == 0) first = status;
  }
  CHECK((first == 0) == (status == 0), "%s: the second call agrees with the first (%s, %s)", what,
        ncclzCudaStatusReason(first), ncclzCudaStatusReason(status));
  CU(cudaMemcpy(gpu.data(), dsym.p, 4 * n, cudaMemcpyDeviceToHost));
  CHECK((cs == NCCLZ_OK) == (status == 0), "%s: cpu \"%s\", gpu \"%s\"", what, cpu_msg.c_str(),
        ncclzCudaStatusReason(status));
  if (cs == NCCLZ_OK && status == 0) CHECK(memcmp(cpu.data(), gpu.data(), 4 * n) == 0, "%s: same symbols", what);
  return status != 0;
}

/* FIXEDLEN frames with a payload bit flipped and both checksums resealed, so that the coder's own
 * checks (widths, tile offsets, size) see it: decoded in one kernel and in the chain, the CPU
 * agreeing on each. */
static void hostile_fixedlen(void) {
  std::vector<int32_t> s;
  int tried = 0, refused = 0;
  for (int kind : {0, 3, 6}) {
    gen(kind, 20000, 5 + kind, s);
    const std::vector<uint8_t> f = cpu_frame(NCCLZ_CODER_FIXEDLEN, s);
    if (f.size() < 64) continue;
    for (bool zeroed : {false, true})
      CHECK(!decode_both(f, s.size(), "intact fixedlen frame", NCCLZ_CODER_FIXEDLEN, zeroed), "kind %d intact", kind);
    uint64_t rng = 31 + kind;
    for (int i = 0; i < 120; i++) {
      std::vector<uint8_t> m = f;
      const uint64_t r = tu_rand(&rng);
      const size_t head = 4 * ((5 * ((s.size() + 31) / 32) + 31) / 32 + 3); /* width codes and tile offsets */
      const size_t span = i % 2 ? head : f.size() - 64, bit = 8 * 64 + (r >> 4) % (8 * span);
      m[bit / 8] ^= (uint8_t)(1u << (bit % 8));
      reseal(m);
      char what[64];
      snprintf(what, sizeof what, "fixedlen kind %d mutant %d", kind, i);
      const int a = decode_both(m, s.size(), what, NCCLZ_CODER_FIXEDLEN, false);
      const int z = decode_both(m, s.size(), what, NCCLZ_CODER_FIXEDLEN, true);
      CHECK(a == z, "%s: one kernel and the chain agree", what);
      refused += z;
      tried++;
    }
  }
  printf("hostile fixedlen frames: %d of %d refused, the CPU and both GPU paths agreeing on each\n", refused, tried);
}

/* The escape of INT32_MAX among 127 zeros (tests/test_huffman_format.c's golden frame): every
 * value of its 5-bit count field, and an old version byte. */
static void hostile_escape_counts(void) {
  std::vector<int32_t> s(128, 0);
  s[5] = INT32_MAX;
  std::vector<uint8_t> f = cpu_frame(NCCLZ_CODER_HUFFMAN, s);
  CHECK(f.size() == 64 + 44, "escape frame of %zu bytes (the golden payload is 44)", f.size());
  if (f.size() != 64 + 44) return;
  const size_t at = 8 * 64 + 20 * 8 + 6; /* the count: payload bit 166 */
  char what[64];
  for (uint32_t count = 0; count < 32; count++) {
    std::vector<uint8_t> m = f;
    for (uint32_t i = 0; i < 5; i++) {
      size_t bit = at + i;
      m[bit / 8] = (uint8_t)((m[bit / 8] & ~(1u << (bit % 8))) | ((count >> i) & 1u) << (bit % 8));
    }
    reseal(m);
    snprintf(what, sizeof what, "escape count %u", count);
    decode_both(m, s.size(), what);
  }
  std::vector<uint8_t> old = f;
  old[4] = 1;
  reseal(old);
  CHECK(decode_both(old, s.size(), "version 1 frame"), "a version 1 frame is refused on the GPU");
}

/* Random edits of the table area (word values at the edges, bit flips) and bit flips in the
 * stream, resealed, on frames with a dense table and far escapes, a sparse table, and a peaked
 * alphabet: the GPU must agree with the CPU on every one. */
static void hostile_huffman(void) {
  static const uint32_t edges[] = {0, 1, 0xFFFFFFFFu, 0xFFFFu, 0x10000u, 31, 32, 33};
  std::vector<int32_t> s;
  int tried = 0, refused = 0;
  for (int kind : {5, 7, 0}) {
    gen(kind, 3000, 11 + kind, s);
    std::vector<uint8_t> f = cpu_frame(NCCLZ_CODER_HUFFMAN, s);
    if (f.size() < 64 + 256) continue;
    CHECK(!decode_both(f, s.size(), "intact frame"), "kind %d: the intact frame decodes", kind);
    uint64_t rng = 77 + kind;
    for (int i = 0; i < 300; i++) {
      std::vector<uint8_t> m = f;
      uint64_t r = tu_rand(&rng);
      if (i % 3 == 0) { /* a table word: an edge value or a small move */
        size_t w = 64 + 4 * (r % 32);
        uint32_t old = m[w] | m[w + 1] << 8 | m[w + 2] << 16 | (uint32_t)m[w + 3] << 24;
        put32(&m[w], (r >> 8) & 1 ? edges[(r >> 9) % 8] : old + (uint32_t)((r >> 12) % 5) - 2);
      } else {
        size_t span = i % 3 == 1 ? 256 : f.size() - 64; /* the table area, or anywhere */
        size_t bit = 8 * 64 + (r >> 4) % (8 * span);
        m[bit / 8] ^= (uint8_t)(1u << (bit % 8));
      }
      reseal(m);
      char what[64];
      snprintf(what, sizeof what, "kind %d mutant %d", kind, i);
      refused += decode_both(m, s.size(), what);
      tried++;
    }
  }
  printf("hostile huffman frames: %d of %d refused, the CPU agreeing on each\n", refused, tried);
}

static std::vector<float> load_f32(const char *name, size_t *n) {
  size_t len = 0;
  void *p = tu_read_file(name, &len);
  std::vector<float> v;
  if (p) v.assign((float *)p, (float *)p + len / 4);
  free(p);
  *n = v.size();
  return v;
}

/* The GPU's inverse Lorenzo and dequantization of the codes ref (on the device at d_sym) into
 * d_xr, byte for byte the CPU's floats. */
static void dequant_matches_cpu(const char *what, const ncclzQuantParams &qp, const int32_t *ref, const int32_t *d_sym,
                                size_t n, float *d_xr, uint8_t *d_ws, size_t wsq) {
  std::vector<float> xr(n), xg(n);
  std::vector<int32_t> c2(n);
  ncclzLorenzoInverse(&qp, ref, n, c2.data());
  ncclzDequantizeEB(&qp, c2.data(), n, xr.data());
  ncclzStatus st = ncclzCudaDequantizeEB(&qp, NULL, d_sym, n, d_xr, d_ws, wsq, 0);
  CHECK(st == NCCLZ_OK, "%s: gpu dequant: %s", what, ncclzLastError());
  CU(cudaMemcpy(xg.data(), d_xr, 4 * n, cudaMemcpyDeviceToHost));
  CHECK(memcmp(xg.data(), xr.data(), 4 * n) == 0, "%s: gpu reconstruction identical", what);
}

/* EB quantization (+ Lorenzo) and dequantization against the CPU. */
static void eb_case(const char *file, const char *spec_text, const uint32_t *dims, int ndims) {
  size_t n;
  std::vector<float> x = load_f32(file, &n);
  CHECK(n > 0, "load %s", file);
  if (!n) return;
  size_t cells = 1; /* the field's first cells, viewed with these dims (other plane shapes) */
  for (int k = 0; k < ndims; k++) cells *= dims[k];
  if (cells < n) x.resize(n = cells);
  ncclzQuantSpec spec;
  ncclzQuantParams qp;
  CHECK(ncclzQuantSpecParse(spec_text, &spec) == NCCLZ_OK, "parse %s", spec_text);
  ncclzStatus st = ncclzQuantResolve(&spec, x.data(), n, dims, ndims, 0, &qp);
  CHECK(st == NCCLZ_OK, "resolve %s: %s", spec_text, ncclzLastError());
  if (st) return;
  std::vector<int32_t> codes(n), ref(n), got(n);
  CHECK(ncclzQuantizeEB(&qp, x.data(), n, codes.data()) == NCCLZ_OK, "cpu eb");
  ncclzLorenzoForward(&qp, codes.data(), n, ref.data());
  Dev<float> dx(n), dxr(n);
  Dev<int32_t> dsym(n);
  Dev<ncclzCudaQuantStats> dstats(1);
  size_t wsq = ncclzCudaQuantWorkspaceSize(n);
  Dev<uint8_t> dws(wsq);
  CU(cudaMemcpy(dx.p, x.data(), 4 * n, cudaMemcpyHostToDevice));
  CU(cudaMemset(dstats.p, 0xA5, sizeof(ncclzCudaQuantStats))); /* every field must be written */
  st = ncclzCudaQuantizeEB(&qp, spec.eb_is_rel, spec.eb, dx.p, n, dsym.p, dstats.p, dws.p, wsq, 0);
  CHECK(st == NCCLZ_OK, "gpu eb: %s", ncclzLastError());
  ncclzCudaQuantStats hs;
  CU(cudaMemcpy(got.data(), dsym.p, 4 * n, cudaMemcpyDeviceToHost));
  CU(cudaMemcpy(&hs, dstats.p, sizeof hs, cudaMemcpyDeviceToHost));
  CHECK(hs.abs_eb == qp.abs_eb, "%s %s: abs_eb gpu %.17g cpu %.17g", file, spec_text, hs.abs_eb, qp.abs_eb);
  CHECK(hs.nonfinite == 0 && hs.out_of_range == 0 && hs.unbounded == 0 && hs.first_bad == ~0ull,
        "%s: no quantization errors", spec_text);
  CHECK(memcmp(got.data(), ref.data(), 4 * n) == 0, "%s %s: gpu codes identical", file, spec_text);
  if (spec.eb_is_rel) { /* without a workspace the range goes through the stats (more launches): same */
    CU(cudaMemset(dsym.p, 0xA5, 4 * n));
    CU(cudaMemset(dstats.p, 0xA5, sizeof hs));
    st = ncclzCudaQuantizeEB(&qp, 1, spec.eb, dx.p, n, dsym.p, dstats.p, NULL, 0, 0);
    CHECK(st == NCCLZ_OK, "gpu eb, no workspace: %s", ncclzLastError());
    CU(cudaMemcpy(got.data(), dsym.p, 4 * n, cudaMemcpyDeviceToHost));
    CU(cudaMemcpy(&hs, dstats.p, sizeof hs, cudaMemcpyDeviceToHost));
    CHECK(hs.abs_eb == qp.abs_eb && hs.unbounded == 0 && hs.first_bad == ~0ull, "%s %s: no workspace, abs_eb gpu %.17g",
          file, spec_text, hs.abs_eb);
    CHECK(memcmp(got.data(), ref.data(), 4 * n) == 0, "%s %s: no workspace, gpu codes identical", file, spec_text);
  }
  char what[128];
  snprintf(what, sizeof what, "%s %s", file, spec_text);
  if (!(qp.lorenzo && qp.has_fill)) dequant_matches_cpu(what, qp, ref.data(), dsym.p, n, dxr.p, dws.p, wsq);
  all_coders(what, ref.data(), n, 65536, &qp, NULL);
}

/* The GPU's inverse Lorenzo and dequantization of the CPU's codes, on the field tiled to dims (the
 * larger shapes of the inverse's kernels: CTAs of every width, chunks of planes with their carries),
 * against the CPU's floats. */
static void lz_inverse_case(const char *file, const char *spec_text, const uint32_t *dims) {
  size_t n0;
  std::vector<float> x = load_f32(file, &n0);
  CHECK(n0 > 0, "load %s", file);
  if (!n0) return;
  const size_t n = (size_t)dims[0] * dims[1] * dims[2];
  x.resize(n);
  for (size_t i = n0; i < n; i++) x[i] = x[i % n0];
  ncclzQuantSpec spec;
  ncclzQuantParams qp;
  CHECK(ncclzQuantSpecParse(spec_text, &spec) == NCCLZ_OK, "parse %s", spec_text);
  CHECK(ncclzQuantResolve(&spec, x.data(), n, dims, 3, 0, &qp) == NCCLZ_OK, "resolve %s: %s", spec_text,
        ncclzLastError());
  std::vector<int32_t> codes(n), ref(n);
  CHECK(ncclzQuantizeEB(&qp, x.data(), n, codes.data()) == NCCLZ_OK, "cpu eb");
  ncclzLorenzoForward(&qp, codes.data(), n, ref.data());
  Dev<float> dxr(n);
  Dev<int32_t> dsym(n);
  const size_t wsq = ncclzCudaQuantWorkspaceSize(n);
  Dev<uint8_t> dws(wsq);
  CU(cudaMemcpy(dsym.p, ref.data(), 4 * n, cudaMemcpyHostToDevice));
  CU(cudaMemset(dws.p, 0xA5, wsq)); /* nothing may be read before it is written */
  char what[160];
  snprintf(what, sizeof what, "%s %s %ux%ux%u", file, spec_text, dims[0], dims[1], dims[2]);
  dequant_matches_cpu(what, qp, ref.data(), dsym.p, n, dxr.p, dws.p, wsq);
}

/* EB with Lorenzo on a field with a NaN, an Inf and a value past the code limit planted: each
 * failure counted once (no kernel counts a neighbour it codes again: the plane before a chunk, the
 * row above a band), the first index the smallest, every other element's code the CPU's. */
static void eb_failure_case(const char *file, const char *spec_text, const uint32_t *dims) {
  size_t n;
  std::vector<float> x = load_f32(file, &n);
  const size_t cells = (size_t)dims[0] * dims[1] * dims[2];
  CHECK(n >= cells, "load %s", file);
  if (n < cells) return;
  x.resize(n = cells);
  const size_t bad[3] = {n / 2 + dims[2] + 1, n / 3, n - 5}; /* NaN, Inf, too large */
  ncclzQuantSpec spec;
  ncclzQuantParams qp;
  CHECK(ncclzQuantSpecParse(spec_text, &spec) == NCCLZ_OK, "parse %s", spec_text);
  CHECK(ncclzQuantResolve(&spec, x.data(), n, dims, 3, 0, &qp) == NCCLZ_OK, "resolve %s", spec_text);
  x[bad[0]] = NAN, x[bad[1]] = INFINITY, x[bad[2]] = 3e38f;
  Dev<float> dx(n);
  Dev<int32_t> dsym(n);
  Dev<ncclzCudaQuantStats> dstats(1);
  const size_t wsq = ncclzCudaQuantWorkspaceSize(n);
  Dev<uint8_t> dws(wsq);
  CU(cudaMemcpy(dx.p, x.data(), 4 * n, cudaMemcpyHostToDevice));
  CU(cudaMemset(dstats.p, 0xA5, sizeof(ncclzCudaQuantStats)));
  CHECK(ncclzCudaQuantizeEB(&qp, 0, 0.0, dx.p, n, dsym.p, dstats.p, dws.p, wsq, 0) == NCCLZ_OK, "gpu eb: %s",
        ncclzLastError());
  ncclzCudaQuantStats hs;
  CU(cudaMemcpy(&hs, dstats.p, sizeof hs, cudaMemcpyDeviceToHost));
  CHECK(hs.nonfinite == 2 && hs.out_of_range == 1 && hs.unbounded == 0 && hs.first_bad == bad[1],
        "%s %ux%ux%u: failures counted once (nonfinite %llu, out of range %llu, first %llu)", spec_text, dims[0],
        dims[1], dims[2], (unsigned long long)hs.nonfinite, (unsigned long long)hs.out_of_range,
        (unsigned long long)hs.first_bad);
}

/* A real-data file under qsgd:bits=8,bucket=512 on the CPU: its values, scales and codes. */
struct QsgdCodes {
  std::vector<float> x, scales;
  std::vector<int32_t> codes;
  ncclzQuantParams qp;
};
static bool qsgd_codes(const char *file, QsgdCodes *q) {
  size_t n;
  q->x = load_f32(file, &n);
  CHECK(n > 0, "load %s", file);
  if (!n) return false;
  ncclzQuantSpec spec;
  ncclzQuantSpecParse("qsgd:bits=8,bucket=512", &spec);
  CHECK(ncclzQuantResolve(&spec, q->x.data(), n, NULL, 0, 3, &q->qp) == NCCLZ_OK, "resolve qsgd");
  q->scales.resize(ncclzQsgdNumBuckets(&q->qp, n));
  q->codes.resize(n);
  ncclzQsgdScales(&q->qp, q->x.data(), n, q->scales.data());
  CHECK(ncclzQuantizeQsgd(&q->qp, q->x.data(), n, q->scales.data(), q->codes.data()) == NCCLZ_OK, "cpu qsgd");
  return true;
}

static void qsgd_case(const char *file) {
  QsgdCodes c;
  if (!qsgd_codes(file, &c)) return;
  const size_t n = c.x.size(), nb = c.scales.size();
  const std::vector<float> &x = c.x, &sc = c.scales;
  const std::vector<int32_t> &ref = c.codes;
  const ncclzQuantParams &qp = c.qp;
  std::vector<float> scg(nb), xr(n), xg(n);
  std::vector<int32_t> got(n);
  ncclzDequantizeQsgd(&qp, ref.data(), n, sc.data(), xr.data());
  Dev<float> dx(n), dsc(nb), dxr(n);
  Dev<int32_t> dsym(n);
  CU(cudaMemcpy(dx.p, x.data(), 4 * n, cudaMemcpyHostToDevice));
  CHECK(ncclzCudaQsgdScales(&qp, dx.p, n, dsc.p, 0) == NCCLZ_OK, "gpu scales");
  CHECK(ncclzCudaQuantizeQsgd(&qp, dx.p, n, dsc.p, dsym.p, 0) == NCCLZ_OK, "gpu qsgd");
  CHECK(ncclzCudaDequantizeQsgd(&qp, dsym.p, n, dsc.p, dxr.p, 0) == NCCLZ_OK, "gpu dequant");
  CU(cudaMemcpy(scg.data(), dsc.p, 4 * nb, cudaMemcpyDeviceToHost));
  CU(cudaMemcpy(got.data(), dsym.p, 4 * n, cudaMemcpyDeviceToHost));
  CU(cudaMemcpy(xg.data(), dxr.p, 4 * n, cudaMemcpyDeviceToHost));
  CHECK(memcmp(scg.data(), sc.data(), 4 * nb) == 0, "%s: qsgd scales identical", file);
  CHECK(memcmp(got.data(), ref.data(), 4 * n) == 0, "%s: qsgd codes identical", file);
  CHECK(memcmp(xg.data(), xr.data(), 4 * n) == 0, "%s: qsgd reconstruction identical", file);
  all_coders(file, ref.data(), n, 512 * 64, &qp, sc.data());
}

/* QSGD parameters from a spec's text, with the stream's seed and rank. */
static ncclzQuantParams qsgd_params(const char *spec_text, uint64_t seed, uint32_t rank) {
  ncclzQuantSpec spec;
  ncclzQuantParams qp;
  ncclzQuantSpecParse(spec_text, &spec);
  memset(&qp, 0, sizeof qp);
  qp.kind = NCCLZ_QUANT_QSGD, qp.qsgd_bits = spec.qsgd_bits, qp.qsgd_bucket = spec.qsgd_bucket, qp.seed = seed;
  qp.rank = rank;
  return qp;
}

/* The 8-bit codes at d8 that differ from ref (the CPU's 32-bit codes). */
static size_t codes8_differ(const int8_t *d8, const int32_t *ref, size_t n) {
  std::vector<int8_t> got(n);
  CU(cudaMemcpy(got.data(), d8, n, cudaMemcpyDeviceToHost));
  size_t diff = 0;
  for (size_t i = 0; i < n; i++) diff += got[i] != ref[i];
  return diff;
}

/* ncclzCudaQsgdQuantize8 and ncclzCudaDequantizeQsgd8 against the CPU: the scales, the codes
 * widened, and the floats of the CPU's dequantizer (where it takes the codes: not a NaN's bucket's
 * Inf scale), bit for bit. */
static void codes8_case(const char *file, const char *spec_text, const ncclzQuantParams &qp, const float *dx, size_t n,
                        const std::vector<float> &sc, const std::vector<int32_t> &ref) {
  const size_t nb = sc.size();
  Dev<float> dsc(nb), dxr(n);
  Dev<int8_t> d8(n);
  std::vector<float> scg(nb), xr(n), xg(n);
  CU(cudaMemset(d8.p, 0x5A, n));
  CHECK(ncclzCudaQsgdQuantize8(&qp, dx, n, dsc.p, d8.p, 0) == NCCLZ_OK, "gpu qsgd 8-bit: %s", ncclzLastError());
  CU(cudaMemcpy(scg.data(), dsc.p, 4 * nb, cudaMemcpyDeviceToHost));
  const size_t diff = codes8_differ(d8.p, ref.data(), n);
  CHECK(memcmp(scg.data(), sc.data(), 4 * nb) == 0 && diff == 0, "%s %s n=%zu: 8-bit scales and codes identical (%zu differ)",
        file, spec_text, n, diff);
  if (ncclzDequantizeQsgd(&qp, ref.data(), n, sc.data(), xr.data()) != NCCLZ_OK) return; /* an Inf scale: refused */
  CU(cudaMemset(dxr.p, 0xA5, 4 * n));
  CHECK(ncclzCudaDequantizeQsgd8(&qp, d8.p, n, dsc.p, dxr.p, 0) == NCCLZ_OK, "gpu dequant 8-bit: %s", ncclzLastError());
  CU(cudaMemcpy(xg.data(), dxr.p, 4 * n, cudaMemcpyDeviceToHost));
  CHECK(memcmp(xg.data(), xr.data(), 4 * n) == 0, "%s %s n=%zu: 8-bit dequantize identical", file, spec_text, n);
}

/* ncclzCudaQsgdQuantize (scales and codes in one pass) against the CPU, byte for byte: buckets of
 * 128, 256 and 512 (the one-pass kernel) and 96 (its two-pass fallback), 4 and 8 bits, whole
 * arrays, a ragged end (n not a multiple of 4 nor of the bucket) and less than one bucket, with a
 * NaN and an Inf planted (code 0; the Inf's bucket scales to Inf), and the first 2,999 and 1,001
 * elements, short of the Inf, where the 8-bit dequantizer is held to the CPU's as well. */
static void qsgd_fused_cases(const char *file) {
  size_t n0;
  std::vector<float> x = load_f32(file, &n0);
  CHECK(n0 > 4096, "load %s", file);
  if (n0 <= 4096) return;
  x[1000] = NAN;
  x[3000] = INFINITY;
  const char *specs[] = {"qsgd:bits=8,bucket=512", "qsgd:bits=4,bucket=128", "qsgd:bits=8,bucket=256",
                         "qsgd:bits=8,bucket=96"};
  const size_t ns[] = {n0, n0 - 3, 2999, 1001};
  Dev<float> dx(n0), dsc(n0);
  Dev<int32_t> dsym(n0);
  CU(cudaMemcpy(dx.p, x.data(), 4 * n0, cudaMemcpyHostToDevice));
  for (const char *spec_text : specs)
    for (size_t n : ns) {
      const ncclzQuantParams qp = qsgd_params(spec_text, 12345, 3);
      const size_t nb = ncclzQsgdNumBuckets(&qp, n);
      std::vector<float> sc(nb), scg(nb);
      std::vector<int32_t> ref(n), got(n);
      ncclzQsgdScales(&qp, x.data(), n, sc.data());
      /* its own scales (an Inf scale is refused when passed in); NCCLZ_ERR_NONFINITE, codes written */
      ncclzQuantizeQsgd(&qp, x.data(), n, NULL, ref.data());
      CU(cudaMemset(dsym.p, 0xA5, 4 * n0));
      CHECK(ncclzCudaQsgdQuantize(&qp, dx.p, n, dsc.p, dsym.p, 0) == NCCLZ_OK, "gpu qsgd one pass: %s", ncclzLastError());
      CU(cudaMemcpy(scg.data(), dsc.p, 4 * nb, cudaMemcpyDeviceToHost));
      CU(cudaMemcpy(got.data(), dsym.p, 4 * n, cudaMemcpyDeviceToHost));
      CHECK(memcmp(scg.data(), sc.data(), 4 * nb) == 0, "%s %s n=%zu: one-pass scales identical", file, spec_text, n);
      CHECK(memcmp(got.data(), ref.data(), 4 * n) == 0, "%s %s n=%zu: one-pass codes identical", file, spec_text, n);
      codes8_case(file, spec_text, qp, dx.p, n, sc, ref);
    }
}

/* One frame of codes (sym, scales: the CPU's, QSGD side data when side) coded by the GPU (b.coder)
 * (encode: the call under test, run twice on a zeroed workspace, whose second call must find the
 * shared words zero again, else once) against the CPU's frame byte for byte, then decoded (twice,
 * zeroed) and dequantized on the GPU against the CPU's reconstruction xr (NULL: the CPU refuses
 * it, not compared). */
template <typename Enc>
static void quant_call_case(const char *name, ncclzCudaBatch b, const int32_t *sym, const float *scales,
                            const float *xr, Enc encode) {
  const size_t n = b.n_symbols;
  const uint32_t nf = ncclzCudaBatchFrames(&b);
  CHECK(nf == 1, "%s: one frame", name);
  const size_t slot = ncclzCudaFrameSlotBytes(&b), wse = ncclzCudaEncodeWorkspaceSize(&b),
               wsd = ncclzCudaDecodeWorkspaceSize(&b), wsq = ncclzCudaQuantWorkspaceSize(n);
  const size_t nsc = b.side_scales ? ncclzQsgdNumBuckets(b.quant, n) : 1;
  Dev<int32_t> dsym2(n);
  Dev<float> dsc2(nsc), dxr(n);
  Dev<uint8_t> dout(slot), dwse(wse), dwsd(wsd), dwsq(wsq);
  Dev<uint32_t> dfb(1), dst(1);
  CU(cudaMemset(dwse.p, 0, wse));
  CU(cudaMemset(dwsd.p, 0, wsd));
  ncclzStatus st = NCCLZ_OK;
  for (int call = 0; call < 1 + b.ws_zeroed && st == NCCLZ_OK; call++) {
    CU(cudaMemset(dout.p, 0x5A, slot));
    st = encode(&b, dout.p, slot, dfb.p, dwse.p, wse);
  }
  CHECK(st == NCCLZ_OK, "%s: encode: %s", name, ncclzLastError());
  uint32_t fb = 0;
  CU(cudaMemcpy(&fb, dfb.p, 4, cudaMemcpyDeviceToHost));
  std::vector<uint8_t> gpu(slot), cpu(slot);
  CU(cudaMemcpy(gpu.data(), dout.p, slot, cudaMemcpyDeviceToHost));
  ncclzFrameDesc d;
  memset(&d, 0, sizeof d);
  d.dtype = NCCLZ_DTYPE_F32, d.quant = b.quant, d.coder_params = b.params;
  if (b.side_scales) d.side = scales, d.side_bytes = (uint32_t)(4 * nsc);
  size_t len = 0;
  CHECK(ncclzFrameEncode(b.coder, sym, n, &d, cpu.data(), slot, &len) == NCCLZ_OK, "%s: cpu encode", name);
  CHECK(len == fb && memcmp(cpu.data(), gpu.data(), len) == 0, "%s: frame identical (cpu %zu bytes, gpu %u)", name, len, fb);
  for (int call = 0; call < 1 + b.ws_zeroed && st == NCCLZ_OK; call++) {
    CU(cudaMemset(dsym2.p, 0xA5, 4 * n));
    CU(cudaMemset(dxr.p, 0xA5, 4 * n));
    st = ncclzCudaDecodeBatch(&b, 0, dout.p, NULL, slot, slot, dsym2.p, dsc2.p, dst.p, dwsd.p, wsd, 0);
  }
  if (st == NCCLZ_OK)
    st = b.side_scales ? ncclzCudaDequantizeQsgd(b.quant, dsym2.p, n, dsc2.p, dxr.p, 0)
                       : ncclzCudaDequantizeEB(b.quant, NULL, dsym2.p, n, dxr.p, dwsq.p, wsq, 0);
  CHECK(st == NCCLZ_OK, "%s: decode: %s", name, ncclzLastError());
  uint32_t status = 1;
  std::vector<int32_t> got(n);
  std::vector<float> xg(n);
  CU(cudaMemcpy(&status, dst.p, 4, cudaMemcpyDeviceToHost));
  CU(cudaMemcpy(got.data(), dsym2.p, 4 * n, cudaMemcpyDeviceToHost));
  CU(cudaMemcpy(xg.data(), dxr.p, 4 * n, cudaMemcpyDeviceToHost));
  CHECK(status == 0 && memcmp(got.data(), sym, 4 * n) == 0, "%s: decoded codes identical (status %s)", name,
        ncclzCudaStatusReason(status));
  if (xr) CHECK(memcmp(xg.data(), xr, 4 * n) == 0, "%s: reconstruction identical", name);
  /* the same in one call (one pass for these quantizers), twice on a zeroed workspace */
  for (int call = 0; call < 1 + b.ws_zeroed && st == NCCLZ_OK; call++) {
    CU(cudaMemset(dxr.p, 0xA5, 4 * n));
    st = ncclzCudaDecodeDequantBatch(&b, 0, dout.p, NULL, slot, slot, dsym2.p, dsc2.p, dxr.p, dst.p, dwsd.p, wsd, dwsq.p,
                                     wsq, 0);
  }
  CHECK(st == NCCLZ_OK, "%s: decode + dequantize: %s", name, ncclzLastError());
  CU(cudaMemcpy(&status, dst.p, 4, cudaMemcpyDeviceToHost));
  CU(cudaMemcpy(xg.data(), dxr.p, 4 * n, cudaMemcpyDeviceToHost));
  CHECK(status == 0, "%s: decode + dequantize status %s", name, ncclzCudaStatusReason(status));
  if (xr) CHECK(memcmp(xg.data(), xr, 4 * n) == 0, "%s: one-call reconstruction identical", name);
}

/* A batch's encoded frames (d_out, sizes in d_fb) against the CPU's frames of the codes ref (sc:
 * QSGD's scales, each frame's side data, or NULL), byte for byte; then decoded back on the GPU to
 * the same codes. */
static void batch_matches_cpu(const char *name, const ncclzCudaBatch &b, const int32_t *ref, const float *sc,
                              const uint8_t *d_out, const uint32_t *d_fb, size_t slot, int32_t *d_sym2, float *d_sc,
                              uint32_t *d_st, void *d_wsd, size_t wsd) {
  const size_t n = b.n_symbols, frame = b.frame_symbols;
  const uint32_t nf = ncclzCudaBatchFrames(&b);
  std::vector<uint32_t> fb(nf);
  std::vector<uint8_t> gpu(slot * nf), cpu(slot);
  CU(cudaMemcpy(fb.data(), d_fb, 4 * nf, cudaMemcpyDeviceToHost));
  CU(cudaMemcpy(gpu.data(), d_out, slot * nf, cudaMemcpyDeviceToHost));
  uint32_t same = 0;
  for (uint32_t f = 0; f < nf; f++) {
    const size_t e0 = (size_t)f * frame, m = n - e0 < frame ? n - e0 : frame;
    ncclzFrameDesc d;
    memset(&d, 0, sizeof d);
    d.dtype = NCCLZ_DTYPE_F32, d.quant = b.quant, d.coder_params = b.params;
    if (sc) d.side = sc + e0 / b.quant->qsgd_bucket, d.side_bytes = (uint32_t)(4 * ncclzQsgdNumBuckets(b.quant, m));
    size_t len = 0;
    same += ncclzFrameEncode(b.coder, ref + e0, m, &d, cpu.data(), slot, &len) == NCCLZ_OK && len == fb[f] &&
            memcmp(cpu.data(), gpu.data() + f * slot, len) == 0;
  }
  CHECK(same == nf, "%s: %u of %u frames identical to the CPU's", name, same, nf);
  CU(cudaMemset(d_sym2, 0xA5, 4 * n));
  const ncclzStatus st = ncclzCudaDecodeBatch(&b, 0, d_out, NULL, slot, slot * nf, d_sym2, d_sc, d_st, d_wsd, wsd, 0);
  std::vector<uint32_t> status(nf, 1);
  std::vector<int32_t> got(n);
  CU(cudaMemcpy(status.data(), d_st, 4 * nf, cudaMemcpyDeviceToHost));
  CU(cudaMemcpy(got.data(), d_sym2, 4 * n, cudaMemcpyDeviceToHost));
  uint32_t bad = 0;
  for (uint32_t v : status) bad += v != 0;
  CHECK(st == NCCLZ_OK && bad == 0 && memcmp(got.data(), ref, 4 * n) == 0, "%s: decoded codes identical", name);
}

/* ncclzCudaQsgdEncodeBatch8 over batch b (RAW or FIXEDLEN): the codes (widened) and scales
 * against the CPU's, every frame byte for byte against the CPU's frame, then decoded back; and
 * ncclzCudaEncodeBatch8 of those codes gives the same frames. */
static void qsgd_batch8_case(const char *name, const ncclzCudaBatch &b, const float *dx, const std::vector<int32_t> &ref,
                             const std::vector<float> &sc, int32_t *dsym2, float *dsc) {
  const size_t n = b.n_symbols, nb = sc.size();
  const uint32_t nf = ncclzCudaBatchFrames(&b);
  const size_t slot = ncclzCudaFrameSlotBytes(&b), wse = ncclzCudaEncodeWorkspaceSize(&b),
               wsd = ncclzCudaDecodeWorkspaceSize(&b);
  Dev<uint8_t> dout(slot * nf), dout2(slot * nf), dwse(wse), dwsd(wsd);
  Dev<uint32_t> dfb(nf), dfb2(nf), dst(nf);
  Dev<int8_t> d8(n);
  CU(cudaMemset(dout.p, 0x5A, slot * nf));
  CU(cudaMemset(dout2.p, 0x5A, slot * nf));
  CU(cudaMemset(d8.p, 0x5A, n));
  ncclzStatus st = ncclzCudaQsgdEncodeBatch8(&b, dx, d8.p, dsc, dout.p, slot, dfb.p, dwse.p, wse, 0);
  CHECK(st == NCCLZ_OK, "%s: encode: %s", name, ncclzLastError());
  if (st != NCCLZ_OK) return;
  std::vector<float> scg(nb);
  CU(cudaMemcpy(scg.data(), dsc, 4 * nb, cudaMemcpyDeviceToHost));
  const size_t diff = codes8_differ(d8.p, ref.data(), n);
  CHECK(memcmp(scg.data(), sc.data(), 4 * nb) == 0 && diff == 0, "%s: scales and codes identical (%zu differ)", name, diff);
  batch_matches_cpu(name, b, ref.data(), sc.data(), dout.p, dfb.p, slot, dsym2, dsc, dst.p, dwsd.p, wsd);
  st = ncclzCudaEncodeBatch8(&b, d8.p, dsc, dout2.p, slot, dfb2.p, dwse.p, wse, 0);
  std::vector<uint32_t> fb(nf), fb2(nf);
  CU(cudaMemcpy(fb.data(), dfb.p, 4 * nf, cudaMemcpyDeviceToHost));
  CU(cudaMemcpy(fb2.data(), dfb2.p, 4 * nf, cudaMemcpyDeviceToHost));
  std::vector<uint8_t> f1(slot), f2(slot);
  uint32_t same = 0;
  for (uint32_t k = 0; k < nf && st == NCCLZ_OK; k++) {
    CU(cudaMemcpy(f1.data(), dout.p + k * slot, fb[k], cudaMemcpyDeviceToHost));
    CU(cudaMemcpy(f2.data(), dout2.p + k * slot, fb2[k], cudaMemcpyDeviceToHost));
    same += fb[k] == fb2[k] && memcmp(f1.data(), f2.data(), fb[k]) == 0;
  }
  CHECK(st == NCCLZ_OK && same == nf, "%s: ncclzCudaEncodeBatch8 gives the same %u frames (%u)", name, nf, same);
}

/* 8-bit codes with a coder that reads 32-bit ones (HUFFMAN, a coder per frame): one clear error,
 * nothing launched. */
static void codes8_refused() {
  const ncclzQuantParams qp = qsgd_params("qsgd:bits=8,bucket=512", 1, 0);
  ncclzCudaBatch b;
  memset(&b, 0, sizeof b);
  ncclzCoderParamsDefault(&b.params);
  b.coder = NCCLZ_CODER_HUFFMAN, b.dtype = NCCLZ_DTYPE_F32, b.quant = &qp, b.n_symbols = 4096, b.frame_symbols = 4096;
  b.side_scales = 1;
  const size_t slot = ncclzCudaFrameSlotBytes(&b), wse = ncclzCudaEncodeWorkspaceSize(&b);
  Dev<uint8_t> dout(slot), dwse(wse);
  Dev<uint32_t> dfb(1), dcoders(1);
  Dev<int8_t> d8(4096);
  Dev<float> dx(4096), dsc(8);
  CHECK(ncclzCudaEncodeBatch8(&b, d8.p, dsc.p, dout.p, slot, dfb.p, dwse.p, wse, 0) == NCCLZ_ERR_ARG &&
            strstr(ncclzLastError(), "RAW or FIXEDLEN"),
        "8-bit codes refused by HUFFMAN: %s", ncclzLastError());
  b.coder = NCCLZ_CODER_FIXEDLEN, b.d_coders = dcoders.p;
  CHECK(ncclzCudaQsgdEncodeBatch8(&b, dx.p, d8.p, dsc.p, dout.p, slot, dfb.p, dwse.p, wse, 0) == NCCLZ_ERR_ARG,
        "8-bit codes refused with a coder per frame: %s", ncclzLastError());
}

/* The quantizer inside the coder's call over a batch of frames (ncclzCudaQsgdEncodeBatch: the
 * quantizer, then the chain of coder kernels): every frame
 * byte for byte against the CPU's frame of the same codes and scales, the codes and scales
 * against the CPU's quantizer, then decoded back on the GPU. Frames of 64 Ki symbols and of
 * 6,656 (whose last CTA is partial), a ragged last frame, a NaN and an Inf planted. */
static void qsgd_batch_cases(const char *grad) {
  size_t n0;
  std::vector<float> x0 = load_f32(grad, &n0);
  CHECK(n0 > 4096, "load %s", grad);
  if (n0 <= 4096) return;
  std::vector<float> x(4 * n0 + 1);
  for (size_t i = 0; i < x.size(); i++) x[i] = x0[(i * 7) % n0];
  x[70000] = NAN;
  x[140000] = INFINITY;
  ncclzCoderParams cp;
  ncclzCoderParamsDefault(&cp);
  Dev<float> dx(x.size()), dsc(x.size());
  Dev<int32_t> dsym(x.size()), dsym2(x.size());
  CU(cudaMemcpy(dx.p, x.data(), 4 * x.size(), cudaMemcpyHostToDevice));
  const char *specs[] = {"qsgd:bits=8,bucket=512", "qsgd:bits=4,bucket=128", "qsgd:bits=8,bucket=96"};
  for (const char *spec_text : specs)
    for (uint32_t fs : {65536u, 6656u})
      for (size_t n : {x.size(), (size_t)3 * fs}) {
        const ncclzQuantParams qp = qsgd_params(spec_text, 4242, 5);
        const uint32_t frame = fs / qp.qsgd_bucket * qp.qsgd_bucket; /* whole buckets */
        const size_t nb = ncclzQsgdNumBuckets(&qp, n);
        std::vector<float> sc(nb), scg(nb);
        std::vector<int32_t> ref(n), got(n);
        ncclzQsgdScales(&qp, x.data(), n, sc.data());
        ncclzQuantizeQsgd(&qp, x.data(), n, NULL, ref.data());
        ncclzCudaBatch b;
        memset(&b, 0, sizeof b);
        b.coder = NCCLZ_CODER_FIXEDLEN, b.params = cp, b.dtype = NCCLZ_DTYPE_F32, b.quant = &qp, b.n_symbols = n;
        b.frame_symbols = frame, b.side_scales = 1;
        const uint32_t nf = ncclzCudaBatchFrames(&b);
        const size_t slot = ncclzCudaFrameSlotBytes(&b), wse = ncclzCudaEncodeWorkspaceSize(&b),
                     wsd = ncclzCudaDecodeWorkspaceSize(&b);
        Dev<uint8_t> dout(slot * nf), dwse(wse), dwsd(wsd);
        Dev<uint32_t> dfb(nf), dst(nf);
        CU(cudaMemset(dout.p, 0x5A, slot * nf));
        CU(cudaMemset(dsym.p, 0xA5, 4 * n));
        char name[160];
        snprintf(name, sizeof name, "batch quantize + encode %s n=%zu frames of %u", spec_text, n, frame);
        ncclzStatus st = ncclzCudaQsgdEncodeBatch(&b, dx.p, dsym.p, dsc.p, dout.p, slot, dfb.p, dwse.p, wse, 0);
        CHECK(st == NCCLZ_OK, "%s: encode: %s", name, ncclzLastError());
        if (st != NCCLZ_OK) continue;
        CU(cudaMemcpy(scg.data(), dsc.p, 4 * nb, cudaMemcpyDeviceToHost));
        CU(cudaMemcpy(got.data(), dsym.p, 4 * n, cudaMemcpyDeviceToHost));
        CHECK(memcmp(scg.data(), sc.data(), 4 * nb) == 0 && memcmp(got.data(), ref.data(), 4 * n) == 0,
              "%s: scales and codes identical", name);
        batch_matches_cpu(name, b, ref.data(), sc.data(), dout.p, dfb.p, slot, dsym2.p, dsc.p, dst.p, dwsd.p, wsd);
        for (ncclzCoder coder : {NCCLZ_CODER_FIXEDLEN, NCCLZ_CODER_RAW}) {
          b.coder = coder;
          snprintf(name, sizeof name, "batch quantize + encode, 8-bit codes, %s %s n=%zu frames of %u",
                   coder == NCCLZ_CODER_RAW ? "raw" : "fixedlen", spec_text, n, frame);
          qsgd_batch8_case(name, b, dx.p, ref, sc, dsym2.p, dsc.p);
        }
      }
}

/* EB's quantizer inside the encode call over a batch (ncclzCudaEbEncodeBatch; HUFFMAN: inside its
 * histogram pass, the alphabet from a sample of the floats): the codes and the resolved bound
 * against the CPU's quantizer, every frame byte for byte against the CPU's frame of those codes,
 * then decoded back on the GPU. A climate field tiled to 4 n + 1 elements; REL (the bound resolved
 * on the device), ABS with a NaN, an Inf and a value past the code limit planted (each failure
 * counted once, the first index the smallest), fill values; frames of 64 Ki symbols, of 6,656, and
 * of 6,658 (not whole groups of 4: the two calls); FIXEDLEN (the two calls). */
static void eb_batch_case(ncclzCoder coder, const std::vector<float> &x, size_t n, const char *spec_text,
                          uint32_t frame, const size_t *bad = NULL, int nbad = 0, const float *resolve_on = NULL) {
  ncclzQuantSpec spec;
  ncclzQuantParams qp;
  CHECK(ncclzQuantSpecParse(spec_text, &spec) == NCCLZ_OK, "parse %s", spec_text);
  CHECK(ncclzQuantResolve(&spec, resolve_on ? resolve_on : x.data(), n, NULL, 0, 0, &qp) == NCCLZ_OK, "resolve %s",
        spec_text);
  std::vector<int32_t> ref(n), got(n);
  ncclzQuantizeEB(&qp, x.data(), n, ref.data()); /* fails on the planted values, coding them 0 as the GPU does */
  ncclzCoderParams cp;
  ncclzCoderParamsDefault(&cp);
  ncclzCudaBatch b;
  memset(&b, 0, sizeof b);
  b.coder = coder, b.params = cp, b.dtype = NCCLZ_DTYPE_F32, b.quant = &qp, b.n_symbols = n;
  b.frame_symbols = frame;
  const uint32_t nf = ncclzCudaBatchFrames(&b);
  const size_t slot = ncclzCudaFrameSlotBytes(&b), wse = ncclzCudaEncodeWorkspaceSize(&b),
               wsd = ncclzCudaDecodeWorkspaceSize(&b), wsq = ncclzCudaQuantWorkspaceSize(n);
  Dev<float> dx(n);
  Dev<int32_t> dsym(n), dsym2(n);
  Dev<ncclzCudaQuantStats> dstats(1);
  Dev<uint8_t> dout(slot * nf), dwse(wse), dwsd(wsd), dwsq(wsq);
  Dev<uint32_t> dfb(nf), dst(nf);
  if (spec.eb_is_rel) b.d_abs_eb = &dstats.p->abs_eb;
  CU(cudaMemcpy(dx.p, x.data(), 4 * n, cudaMemcpyHostToDevice));
  CU(cudaMemset(dout.p, 0x5A, slot * nf));
  CU(cudaMemset(dsym.p, 0xA5, 4 * n));
  CU(cudaMemset(dstats.p, 0xA5, sizeof(ncclzCudaQuantStats))); /* every field must be written */
  char name[160];
  snprintf(name, sizeof name, "batch eb quantize + encode %s %s n=%zu frames of %u", ncclzCoderName(coder), spec_text, n,
           frame);
  ncclzStatus st = ncclzCudaEbEncodeBatch(&b, spec.eb_is_rel, spec.eb, dx.p, dsym.p, dstats.p, dwsq.p, wsq, dout.p,
                                          slot, dfb.p, dwse.p, wse, 0);
  CHECK(st == NCCLZ_OK, "%s: encode: %s", name, ncclzLastError());
  if (st != NCCLZ_OK) return;
  ncclzCudaQuantStats hs;
  CU(cudaMemcpy(&hs, dstats.p, sizeof hs, cudaMemcpyDeviceToHost));
  CU(cudaMemcpy(got.data(), dsym.p, 4 * n, cudaMemcpyDeviceToHost));
  size_t first = ~(size_t)0;
  for (int k = 0; k < nbad; k++) first = bad[k] < first ? bad[k] : first;
  CHECK(hs.abs_eb == qp.abs_eb && hs.unbounded == 0 && hs.nonfinite + hs.out_of_range == (unsigned long long)nbad &&
            hs.first_bad == (nbad ? first : ~0ull),
        "%s: bound %.17g (cpu %.17g), %llu failures, first %llu", name, hs.abs_eb, qp.abs_eb,
        (unsigned long long)(hs.nonfinite + hs.out_of_range), (unsigned long long)hs.first_bad);
  CHECK(memcmp(got.data(), ref.data(), 4 * n) == 0, "%s: codes identical", name);
  batch_matches_cpu(name, b, ref.data(), NULL, dout.p, dfb.p, slot, dsym2.p, NULL, dst.p, dwsd.p, wsd);
}

/* race: one fused batch of each kind, small, for racecheck */
static void eb_batch_cases(const char *sci, const char *filled, bool race) {
  size_t n0, nf0;
  std::vector<float> x0 = load_f32(sci, &n0), f0 = load_f32(filled, &nf0);
  CHECK(n0 > 4096 && nf0 > 4096, "load %s, %s", sci, filled);
  if (n0 <= 4096 || nf0 <= 4096) return;
  std::vector<float> x(4 * n0 + 1), xf(2 * nf0 + 3);
  for (size_t i = 0; i < x.size(); i++) x[i] = x0[(i * 7) % n0];
  for (size_t i = 0; i < xf.size(); i++) xf[i] = f0[i % nf0];
  std::vector<float> xb = x; /* the bound resolved on the clean field, which the planted values would fail */
  const size_t bad[3] = {x.size() - 2, 70001, 140000}; /* too large, NaN, Inf */
  xb[bad[0]] = 3e38f, xb[bad[1]] = NAN, xb[bad[2]] = INFINITY;
  if (race) {
    eb_batch_case(NCCLZ_CODER_HUFFMAN, x, 3 * 6656, "eb:rel=1e-4", 6656);
    eb_batch_case(NCCLZ_CODER_HUFFMAN, xf, 3 * 6656, "eb:rel=1e-4,fill=9.97e36", 6656);
    return;
  }
  for (ncclzCoder coder : {NCCLZ_CODER_HUFFMAN, NCCLZ_CODER_FIXEDLEN})
    for (uint32_t frame : {65536u, 6656u, 6658u}) {
      eb_batch_case(coder, x, x.size(), "eb:rel=1e-4", frame);
      eb_batch_case(coder, x, 3 * (size_t)frame, "eb:rel=1e-4", frame);
      eb_batch_case(coder, xf, xf.size(), "eb:rel=1e-4,fill=9.97e36", frame);
      eb_batch_case(coder, xb, xb.size(), "eb:abs=0.01", frame, bad, 3, x.data());
    }
}

/* The quantizer inside the coder's call (ncclzCudaQsgdEncodeBatch: one kernel for one frame on a
 * zeroed workspace) against the CPU, on zeroed workspaces and not, and the one-kernel decode of
 * its frames: QSGD buckets of 512, 128 and 256 (fused) and 96 (the two calls), frames of 256 Ki symbols
 * (the fused encoder's largest) and one more, a ragged end and short frames, a NaN and an Inf
 * planted (the Inf's bucket the CPU refuses to dequantize); EB codes at REL 1e-4 without and
 * with 3D Lorenzo, FIXEDLEN and RAW frames. */
static void quant_call_cases(const char *grad, const char *sci) {
  size_t n0;
  std::vector<float> x0 = load_f32(grad, &n0);
  CHECK(n0 > 4096, "load %s", grad);
  if (n0 <= 4096) return;
  std::vector<float> x(4 * n0 + 1);
  for (size_t i = 0; i < x.size(); i++) x[i] = x0[i % n0];
  x[1000] = NAN;
  x[3000] = INFINITY;
  ncclzCoderParams cp;
  ncclzCoderParamsDefault(&cp);
  Dev<float> dx(x.size()), dsc(x.size());
  Dev<int32_t> dsym(x.size());
  Dev<int8_t> dsym8(x.size());
  CU(cudaMemcpy(dx.p, x.data(), 4 * x.size(), cudaMemcpyHostToDevice));
  const char *specs[] = {"qsgd:bits=8,bucket=512", "qsgd:bits=4,bucket=128", "qsgd:bits=8,bucket=256",
                         "qsgd:bits=8,bucket=96"};
  const size_t ns[] = {262144, 262145, n0 - 3, 2048 + 17, 1001};
  for (const char *spec_text : specs)
    for (size_t n : ns)
      for (int zeroed = 1; zeroed >= 0; zeroed--) {
        const ncclzQuantParams qp = qsgd_params(spec_text, 777, 2);
        const size_t nb = ncclzQsgdNumBuckets(&qp, n);
        std::vector<float> sc(nb), scg(nb), xr(n);
        std::vector<int32_t> ref(n), got(n);
        ncclzQsgdScales(&qp, x.data(), n, sc.data());
        ncclzQuantizeQsgd(&qp, x.data(), n, NULL, ref.data());
        const bool dq = ncclzDequantizeQsgd(&qp, ref.data(), n, sc.data(), xr.data()) == NCCLZ_OK;
        ncclzCudaBatch b;
        memset(&b, 0, sizeof b);
        b.coder = NCCLZ_CODER_FIXEDLEN, b.params = cp, b.dtype = NCCLZ_DTYPE_F32, b.quant = &qp, b.n_symbols = n;
        b.frame_symbols = (uint32_t)(nb * qp.qsgd_bucket), b.side_scales = 1, b.ws_zeroed = zeroed;
        char name[160];
        snprintf(name, sizeof name, "quantize + encode %s n=%zu%s", spec_text, n, zeroed ? " zeroed" : "");
        CU(cudaMemset(dsym.p, 0xA5, 4 * n));
        quant_call_case(name, b, ref.data(), sc.data(), dq ? xr.data() : NULL,
                        [&](const ncclzCudaBatch *bb, uint8_t *out, size_t slot, uint32_t *fb, void *ws, size_t wse) {
                          return ncclzCudaQsgdEncodeBatch(bb, dx.p, dsym.p, dsc.p, out, slot, fb, ws, wse, 0);
                        });
        CU(cudaMemcpy(scg.data(), dsc.p, 4 * nb, cudaMemcpyDeviceToHost));
        CU(cudaMemcpy(got.data(), dsym.p, 4 * n, cudaMemcpyDeviceToHost));
        CHECK(memcmp(scg.data(), sc.data(), 4 * nb) == 0 && memcmp(got.data(), ref.data(), 4 * n) == 0,
              "%s: scales and codes identical", name);
        snprintf(name, sizeof name, "quantize + encode, 8-bit codes, %s n=%zu%s", spec_text, n, zeroed ? " zeroed" : "");
        CU(cudaMemset(dsym8.p, 0x5A, n));
        quant_call_case(name, b, ref.data(), sc.data(), dq ? xr.data() : NULL,
                        [&](const ncclzCudaBatch *bb, uint8_t *out, size_t slot, uint32_t *fb, void *ws, size_t wse) {
                          return ncclzCudaQsgdEncodeBatch8(bb, dx.p, dsym8.p, dsc.p, out, slot, fb, ws, wse, 0);
                        });
        const size_t diff = codes8_differ(dsym8.p, ref.data(), n);
        CHECK(diff == 0, "%s: codes identical (%zu differ)", name, diff);
      }
  size_t ns0;
  std::vector<float> xs = load_f32(sci, &ns0);
  CHECK(ns0 > 0, "load %s", sci);
  const uint32_t d3[3] = {8, 64, 128};
  for (const char *spec_text : {"eb:rel=1e-4", "eb:rel=1e-4,lorenzo=3d"})
    for (int k = 0; k < 4 && ns0; k++) {
      const int zeroed = k % 2 == 0;
      const ncclzCoder coder = k < 2 ? NCCLZ_CODER_FIXEDLEN : NCCLZ_CODER_RAW;
      ncclzQuantSpec spec;
      ncclzQuantParams qp;
      ncclzQuantSpecParse(spec_text, &spec);
      CHECK(ncclzQuantResolve(&spec, xs.data(), ns0, d3, 3, 0, &qp) == NCCLZ_OK, "resolve %s", spec_text);
      std::vector<int32_t> codes(ns0), ref(ns0);
      std::vector<float> xr(ns0);
      ncclzQuantizeEB(&qp, xs.data(), ns0, codes.data());
      ncclzLorenzoForward(&qp, codes.data(), ns0, ref.data());
      ncclzDequantizeEB(&qp, codes.data(), ns0, xr.data());
      ncclzCudaBatch b;
      memset(&b, 0, sizeof b);
      b.coder = coder, b.params = cp, b.dtype = NCCLZ_DTYPE_F32, b.quant = &qp, b.n_symbols = ns0;
      b.frame_symbols = (uint32_t)ns0, b.ws_zeroed = zeroed;
      Dev<int32_t> dref(ns0);
      CU(cudaMemcpy(dref.p, ref.data(), 4 * ns0, cudaMemcpyHostToDevice));
      char name[160];
      snprintf(name, sizeof name, "encode + decode-dequantize %s %s %s%s", sci, spec_text, ncclzCoderName(coder),
               zeroed ? " zeroed" : "");
      quant_call_case(name, b, ref.data(), NULL, xr.data(),
                      [&](const ncclzCudaBatch *bb, uint8_t *out, size_t slot, uint32_t *fb, void *ws, size_t wse) {
                        return ncclzCudaEncodeBatch(bb, dref.p, NULL, out, slot, fb, ws, wse, 0);
                      });
    }
}

/* The post-check on the GPU (ncclzCudaBatch.fallback_bytes, from ncclzReaFallbackBytes as the
 * executor sets it): frames of real codes (QSGD 8-bit, which gain 760-900 permil) alternate with
 * frames of full 32-bit noise (larger than RAW), the batch's last frame shorter; the frames that
 * fail must come out as the CPU's RAW frames, the others as its coded ones, byte for byte. Without
 * side data at a minimum gain of 0, and with the QSGD scales as side data at 500 permil. */
static void fallback_cases(const QsgdCodes &q) {
  const uint32_t fs = 512 * 32;
  const size_t n = 7 * (size_t)fs + 512 * 5 + 77; /* 7 full frames and a short one */
  ncclzCoderParams cp;
  ncclzFrameCoderParams(&cp);
  for (int with_side = 0; with_side < 2; with_side++) {
    std::vector<int32_t> s(n);
    std::vector<float> sc((n + 511) / 512);
    uint64_t rng = 41 + with_side;
    for (size_t i = 0; i < n; i++) {
      const bool real = (i / fs) % 2 == 0;
      const uint64_t r = tu_rand(&rng);
      s[i] = real ? q.codes[i % q.codes.size()] : (int32_t)(uint32_t)(r >> 16);
    }
    for (size_t k = 0; k < sc.size(); k++) sc[k] = q.scales[k % q.scales.size()];
    ncclzReaConfig rc;
    memset(&rc, 0, sizeof rc);
    rc.min_gain_permil = with_side ? 500 : 0;
    const ncclzQuantParams *sq = with_side ? &q.qp : NULL; /* side data: the QSGD scales */
    const uint32_t side = ncclzReaSideBytes(sq, fs), side_last = ncclzReaSideBytes(sq, n % fs);
    for (ncclzCoder c : {NCCLZ_CODER_FIXEDLEN, NCCLZ_CODER_HUFFMAN}) {
      ncclzCudaBatch b;
      memset(&b, 0, sizeof b);
      b.coder = c, b.params = cp, b.n_symbols = n, b.frame_symbols = fs, b.side_scales = with_side;
      const size_t cap = 1u << 30; /* the staging capacity does not bind here */
      const uint64_t lim = ncclzReaFallbackBytes(&rc, fs, side, cap), lim_last = ncclzReaFallbackBytes(&rc, n % fs, side_last, cap);
      const uint32_t before = g_fell_back, kept = g_kept;
      char name[160];
      snprintf(name, sizeof name, "post-check %s%s, limit %llu", ncclzCoderName(c), with_side ? " + QSGD scales" : "",
               (unsigned long long)lim);
      run_case(name, s.data(), n, fs, c, &cp, sq, with_side ? sc.data() : NULL, lim, lim_last);
      printf("%s: %u frames fell back to RAW, %u kept\n", name, g_fell_back - before, g_kept - kept);
      CHECK(g_fell_back - before >= 3 && g_kept - kept >= 3, "%s: both outcomes in the batch", name);
    }
  }
}

/* Mixed batches (a coder per frame, ncclzCudaBatch.d_coders, as the REA device selector writes
 * them): random and real symbols, coders in turn, at random, all one coder through the array, and
 * out-of-range values (RAW); with and without QSGD side data and the post-check; each frame must be
 * the CPU's frame of its own coder, byte for byte. */
static void mixed_cases(const QsgdCodes &q, bool quick) {
  std::vector<int32_t> s;
  ncclzCoderParams cp;
  ncclzFrameCoderParams(&cp);
  const uint32_t fs = 512 * 40;
  const size_t sizes[] = {5, 3 * (size_t)fs, 9 * (size_t)fs + 1000 * 3 + 11, quick ? 0 : 64 * (size_t)fs + 3};
  for (size_t n : sizes) {
    if (!n) continue;
    const uint32_t nf = (uint32_t)((n + fs - 1) / fs);
    for (int data = 0; data < 2; data++) { /* real codes with noise frames, or generator kind 0 */
      if (data == 0) {
        s.resize(n);
        uint64_t rng = n;
        for (size_t i = 0; i < n; i++) s[i] = (i / fs) % 3 == 2 ? (int32_t)(uint32_t)(tu_rand(&rng) >> 16) : q.codes[i % q.codes.size()];
      } else {
        gen(0, n, n + 17, s);
      }
      std::vector<float> sc((n + 511) / 512);
      for (size_t k = 0; k < sc.size(); k++) sc[k] = q.scales[k % q.scales.size()];
      for (int pattern = 0; pattern < 4; pattern++) {
        std::vector<uint32_t> coders(nf);
        uint64_t rng = 5 + pattern;
        for (uint32_t k = 0; k < nf; k++)
          coders[k] = pattern == 0 ? k % 3 : pattern == 1 ? (uint32_t)(tu_rand(&rng) % 3)
                      : pattern == 2 ? (uint32_t)NCCLZ_CODER_HUFFMAN : (k % 2 ? 7u : (uint32_t)NCCLZ_CODER_FIXEDLEN);
        for (int with_side = 0; with_side < 2; with_side++)
          for (int post = 0; post < 2; post++) {
            ncclzReaConfig rc;
            memset(&rc, 0, sizeof rc);
            const ncclzQuantParams *sq = with_side ? &q.qp : NULL; /* side data: the QSGD scales */
            const uint32_t last_n = (uint32_t)(n % fs ? n % fs : fs);
            const uint32_t side = ncclzReaSideBytes(sq, fs), side_last = ncclzReaSideBytes(sq, last_n);
            const uint64_t lim = post ? ncclzReaFallbackBytes(&rc, fs, side, 1u << 30) : 0;
            const uint64_t lim_last = post ? ncclzReaFallbackBytes(&rc, last_n, side_last, 1u << 30) : 0;
            char name[160];
            snprintf(name, sizeof name, "mixed n=%zu data %d coders %d%s%s", n, data, pattern, with_side ? " side" : "",
                     post ? " post-check" : "");
            run_case(name, s.data(), n, fs, NCCLZ_CODER_RAW, &cp, sq, with_side ? sc.data() : NULL,
                     lim, lim_last, coders.data());
          }
      }
    }
  }
}

int main(int argc, char **argv) {
  if (tu_cuda_skip_without_gpu()) return 77;
  /* --quick: small inputs, for compute-sanitizer memcheck; --race: fewer still, one of each kernel
   * family, for racecheck (which instruments every shared-memory access and runs far slower) */
  int race = argc > 1 && strcmp(argv[1], "--race") == 0;
  int quick = race || (argc > 1 && strcmp(argv[1], "--quick") == 0);
  std::vector<int32_t> s;
  const size_t sizes[] = {1, 2, 31, 32, 33, 1023, 1025, 8191, 8193, 100003, (1u << 20) + 7};
  for (size_t n : sizes) {
    for (int kind = 0; kind < 8; kind++) {
      if (quick && n > 8193) continue;
      if (race && (n < 1023 || n > 1025 || kind % 3)) continue;
      gen(kind, n, n + kind, s);
      char what[64];
      snprintf(what, sizeof what, "random kind %d", kind);
      uint32_t fs = n > 100000 ? 100000 : (uint32_t)n; /* odd frame sizes too */
      all_coders(what, s.data(), n, fs, NULL, NULL);
    }
  }
  /* one frame shorter than the batch's frame size (`ncclz codec` on a small input), each coder
   * on both paths (run_case alternates zeroed workspaces) */
  gen(3, 1000, 17, s);
  for (int twice = 0; twice < 2; twice++) all_coders("short frame", s.data(), s.size(), 1u << 20, NULL, NULL);
  if (race) { /* the quantizer kernels and the fused paths, once each */
    const uint32_t d3[3] = {8, 64, 128};
    eb_case("trefht_member57_8x64x128.f32", "eb:rel=1e-4,lorenzo=3d", d3, 3);
    qsgd_fused_cases("resnet18_rank0_64k.f32");
    qsgd_batch_cases("resnet18_rank0_64k.f32");
    codes8_refused();
    eb_batch_cases("trefht_member57_8x64x128.f32", "pop_ocean_t_384x320.f32", true);
    return tu_finish("test_gpu_codecs --race");
  }
  hostile_escape_counts();
  hostile_huffman();
  hostile_fixedlen();
  /* odd coder parameters */
  gen(0, 200001, 7, s);
  ncclzCoderParams cp;
  ncclzCoderParamsDefault(&cp);
  cp.fixedlen_tile_blocks = 7;
  cp.huffman_segment = 100;
  run_case("fixedlen T=7", s.data(), s.size(), 65536, NCCLZ_CODER_FIXEDLEN, &cp, NULL, NULL);
  run_case("huffman S=100", s.data(), s.size(), 65536, NCCLZ_CODER_HUFFMAN, &cp, NULL, NULL);
  cp.fixedlen_tile_blocks = 1000;
  cp.huffman_segment = 4096;
  run_case("fixedlen T=1000", s.data(), s.size(), 65536, NCCLZ_CODER_FIXEDLEN, &cp, NULL, NULL);
  run_case("huffman S=4096", s.data(), s.size(), 65536, NCCLZ_CODER_HUFFMAN, &cp, NULL, NULL);
  if (!quick) { /* 64 Mi symbols in 4 Mi frames */
    gen(0, (size_t)64 << 20, 99, s);
    all_coders("random 64Mi", s.data(), s.size(), 4u << 20, NULL, NULL);
  }
  const uint32_t d3[3] = {8, 64, 128}, d2[2] = {384, 320};
  eb_case("trefht_member57_8x64x128.f32", "eb:rel=1e-4", d3, 3);
  eb_case("trefht_member57_8x64x128.f32", "eb:rel=1e-4,lorenzo=1d", d3, 3);
  eb_case("trefht_member57_8x64x128.f32", "eb:rel=1e-4,lorenzo=2d", d3, 3);
  eb_case("trefht_member57_8x64x128.f32", "eb:rel=1e-4,lorenzo=3d", d3, 3);
  eb_case("ncep_climo_T_8x64x128.f32", "eb:abs=0.01,lorenzo=3d", d3, 3);
  /* other plane shapes for the Lorenzo kernels: bands of uneven rows and rows narrower than a
   * warp's 128 columns (16 x 37 x 108), planes of 100 x 128 (past 12,288 elements: a CTA of 1,024
   * threads takes four groups each), many small planes (64 x 32 x 32), tall planes (2 x 256 x 128),
   * planes of 512-thread CTAs whose rows (8 x 32 x 192) or bands (16 x 80 x 48) are too wide or too
   * many for a warp a band; planes past the shared-memory kernels (the forward a band a thread, the
   * inverse a band a CTA after a pass of sums): 4 x 128 x 128, 2 x 128 x 256, 3 x 100 x 200, one plane
   * of 256 x 256, and one row of 65,536 (the device-wide scan); planes of at most 32 rows (the
   * forward of a warp a band without barriers): 64 x 32 x 32 and 20 x 27 x 116 (bands of uneven
   * rows, a warp with none); the inverse of a warp a band whose CTAs sum the planes before them
   * (2 x 64 x 128, 7 x 37 x 108; 8 x 64 x 128 above) and, one plane past that, takes the carries
   * (9 x 32 x 128; the slice holds 65,536 values) */
  const uint32_t shapes[][3] = {{16, 37, 108}, {5, 100, 128}, {64, 32, 32},  {2, 256, 128}, {8, 32, 192},
                                {16, 80, 48},  {4, 128, 128}, {2, 128, 256}, {3, 100, 200}, {1, 256, 256},
                                {1, 1, 65536}, {20, 27, 116}, {2, 64, 128},  {9, 32, 128}, {7, 37, 108}};
  for (const uint32_t *sh : shapes) {
    eb_case("trefht_member57_8x64x128.f32", "eb:rel=1e-4,lorenzo=3d", sh, 3);
    eb_case("trefht_member57_8x64x128.f32", "eb:rel=1e-4,lorenzo=2d", sh, 3);
    eb_case("trefht_member57_8x64x128.f32", "eb:rel=1e-4,lorenzo=1d", sh, 3);
  }
  eb_case("pop_ocean_t_384x320.f32", "eb:rel=1e-4,fill=9.97e36", d2, 2);
  eb_case("pop_ocean_t_384x320.f32", "eb:rel=1e-4,lorenzo=2d,fill=9.97e36", d2, 2);
  /* the inverse of planes past shared memory, the field tiled: bands of 8 rows in CTAs of 64 threads
   * with idle lanes and a last band of one row, chunks of 2 and of 4 planes with their carries (130
   * x 97 x 132, 300 x 104 x 128), CTAs of 128, 256 and 512 threads (rows of 500, 1,000 and 2,000),
   * of 1,024 with bands of 4 rows (rows of 2,052 and 4,096), and the passes an axis that take rows
   * of 8,192 or of a count that is not a multiple of 4 */
  const uint32_t inv_shapes[][3] = {{130, 97, 132}, {300, 104, 128}, {6, 40, 500}, {4, 16, 1000}, {3, 9, 2000},
                                    {2, 5, 2052},   {3, 7, 4096},    {2, 3, 8192}, {3, 111, 150}};
  for (const uint32_t *sh : inv_shapes)
    for (const char *spec_text : {"eb:rel=1e-4,lorenzo=3d", "eb:rel=1e-4,lorenzo=2d"}) {
      if (quick && (size_t)sh[0] * sh[1] * sh[2] > (1u << 20)) continue;
      lz_inverse_case("trefht_member57_8x64x128.f32", spec_text, sh);
    }
  const uint32_t fail_shapes[][3] = {{8, 64, 128}, {16, 32, 128}, {20, 27, 116}, {16, 80, 48}, {4, 128, 128}};
  for (const uint32_t *sh : fail_shapes)
    for (const char *spec_text : {"eb:abs=0.01,lorenzo=3d", "eb:abs=0.01,lorenzo=2d", "eb:abs=0.01,lorenzo=1d"})
      eb_failure_case("trefht_member57_8x64x128.f32", spec_text, sh);
  /* fill values through the forward kernel of a warp a band (the same field as 60 planes of 32 x 64) */
  const uint32_t pop3[3] = {60, 32, 64};
  eb_case("pop_ocean_t_384x320.f32", "eb:rel=1e-4,lorenzo=3d,fill=9.97e36", pop3, 3);
  eb_case("pop_ocean_t_384x320.f32", "eb:rel=1e-4,lorenzo=2d,fill=9.97e36", pop3, 3);
  qsgd_case("resnet18_rank0_64k.f32");
  qsgd_fused_cases("resnet18_rank0_64k.f32");
  quant_call_cases("resnet18_rank0_64k.f32", "trefht_member57_8x64x128.f32");
  qsgd_batch_cases("resnet18_rank0_64k.f32");
  codes8_refused();
  eb_batch_cases("trefht_member57_8x64x128.f32", "pop_ocean_t_384x320.f32", false);
  QsgdCodes grad;
  if (qsgd_codes("resnet18_rank0_64k.f32", &grad)) {
    fallback_cases(grad);
    mixed_cases(grad, quick);
  }
  printf("test_gpu_codecs: %u of %u cases on zeroed workspaces (one frame in one kernel)\n", g_zeroed, g_cases);
  printf("test_gpu_codecs: %u decode + dequantize calls against the cpu, %u of them in one pass\n", g_dequant_cases,
         g_dequant_fused);
  CHECK(g_dequant_fused > 0 && g_dequant_fused < g_dequant_cases, "both decode + dequantize paths ran");
  return tu_finish("test_gpu_codecs");
}
