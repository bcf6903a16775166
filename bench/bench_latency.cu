/* bench_latency: what one call of the GPU codecs costs on one frame, and the quantizers' passes
 * alone on a large array. For every quantizer x coder x frame size it times one call at a time
 * (CUDA events around the call, warm-up first, the median of --runs calls), the same call
 * replayed from a CUDA graph captured once, and --batch calls issued back to back (per call);
 * it also records how long the host takes to issue one call. Encode = quantize (+ the REA's plan
 * for auto) + encode; decode = decode + dequantize: what `ncclz codec --device gpu` times.
 * bench_latency --help for the options; writes one JSON object (bench/results/codec-latency.json). */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <algorithm>
#include <functional>
#include <string>
#include <vector>

#include <cuda_runtime.h>

#include "ncclz/codecs.h"
#include "ncclz/codecs_cuda.h"
#include "ncclz/model.h"
#define BENCH_PROG "bench_latency"
#include "bench_args.h"


/* The timings of one kind of call (microseconds, medians). */
struct Timing {
  double stream_us, graph_us, batch_us, issue_us;
};

/* Times call() on stream s: one call at a time between events (and its host issue time), the
 * call captured once into a graph and replayed one at a time, and `batch` calls back to back. */
static Timing time_call(cudaStream_t s, int runs, int batch, const std::function<void()> &call) {
  Timing t;
  /* warm-up: module loads, the planner's upload */
  t.stream_us = bench_events_median_us(s, 10, runs, 1, call, &t.issue_us);
  cudaGraph_t g;
  cudaGraphExec_t ge;
  CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeRelaxed));
  call();
  CK(cudaStreamEndCapture(s, &g));
  CK(cudaGraphInstantiate(&ge, g, 0));
  t.graph_us = bench_events_median_us(s, 10, runs, 1, [&]() { CK(cudaGraphLaunch(ge, s)); });
  CK(cudaGraphExecDestroy(ge));
  CK(cudaGraphDestroy(g));
  t.batch_us = bench_events_median_us(s, 0, 5, batch, call);
  return t;
}

/* The launch floor: k kernels that do nothing, each a programmatic dependent launch of the one
 * before (as the codecs' kernels), timed as a codec call is. */
__global__ void k_empty() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
  asm volatile("griddepcontrol.launch_dependents;" :::);
#endif
}
static void launch_empty(cudaStream_t s, int k) {
  cudaLaunchAttribute attr;
  attr.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr.val.programmaticStreamSerializationAllowed = 1;
  cudaLaunchConfig_t c = {};
  c.gridDim = 1, c.blockDim = 32, c.stream = s, c.attrs = &attr, c.numAttrs = 1;
  for (int i = 0; i < k; i++) CK(cudaLaunchKernelEx(&c, k_empty));
}

static bool g_chain; /* --chain: workspaces not marked zeroed (every call a chain of kernels) */

/* A quantizer of the benchmark: its spec and the data it runs on. */
struct QuantCase {
  const char *name, *spec, *data; /* data: "sci" or "grad" */
};
static const QuantCase QUANTS[] = {{"qsgd:bits=8,bucket=512", "qsgd:bits=8,bucket=512", "grad"},
                                   {"eb:rel=1e-4", "eb:rel=1e-4", "sci"},
                                   {"eb:rel=1e-4,lorenzo=3d", "eb:rel=1e-4,lorenzo=3d", "sci"}};

/* Device buffers of one frame size (or of the quantizer pass), and the calls on them. */
struct Codec {
  size_t n = 0;
  ncclzQuantSpec spec;
  ncclzQuantParams qp;
  float *x = nullptr, *xr = nullptr, *scales = nullptr, *scales2 = nullptr;
  int32_t *sym = nullptr, *sym2 = nullptr;
  int8_t *sym8 = nullptr; /* QSGD's codes as int8_t: what RAW and FIXEDLEN read (ncclzCudaQsgdEncodeBatch8) */
  uint8_t *out = nullptr;
  uint32_t *fbytes = nullptr, *status = nullptr, *coders = nullptr;
  void *wse = nullptr, *wsd = nullptr, *wsq = nullptr;
  size_t n_wse = 0, n_wsd = 0, n_wsq = 0, slot = 0;
  ncclzCudaQuantStats *stats = nullptr;
  ncclzCudaBatch b;
  ncclzReaGpuPlanner *planner = nullptr;
  ncclzReaConfig cfg;
  ncclzFrameDesc desc;
  cudaStream_t s;

  /* Resolves the quantizer on the host (as `ncclz codec`: the REL range is also scanned on the
   * device inside the timed quantize), uploads x. */
  void setup(const QuantCase &qc, const std::vector<float> &hx, cudaStream_t stream) {
    s = stream;
    n = hx.size();
    NZ(ncclzQuantSpecParse(qc.spec, &spec));
    const uint32_t dims[3] = {(uint32_t)(n / 8192), 64, 128}; /* 64x128 planes for 3D Lorenzo */
    NZ(ncclzQuantResolve(&spec, hx.data(), n, dims, 3, 0, &qp));
    const size_t nsc = qp.kind == NCCLZ_QUANT_QSGD ? (n + qp.qsgd_bucket - 1) / qp.qsgd_bucket : 1;
    CK(cudaMalloc(&x, 4 * n));
    CK(cudaMalloc(&xr, 4 * n));
    CK(cudaMalloc(&sym, 4 * n));
    CK(cudaMalloc(&sym2, 4 * n));
    if (qp.kind == NCCLZ_QUANT_QSGD) CK(cudaMalloc(&sym8, n));
    CK(cudaMalloc(&scales, 4 * nsc));
    CK(cudaMalloc(&scales2, 4 * nsc));
    CK(cudaMalloc(&stats, sizeof *stats));
    n_wsq = ncclzCudaQuantWorkspaceSize(n);
    CK(cudaMalloc(&wsq, n_wsq));
    CK(cudaMemcpy(x, hx.data(), 4 * n, cudaMemcpyHostToDevice));
  }
  /* The coder (-1: auto through the REA device selector) for frames of frame_symbols. */
  void set_coder(int coder, uint32_t frame_symbols, const ncclzProfile *prof) {
    memset(&b, 0, sizeof b);
    ncclzCoderParamsDefault(&b.params);
    b.coder = coder < 0 ? NCCLZ_CODER_RAW : (ncclzCoder)coder;
    b.dtype = NCCLZ_DTYPE_F32;
    b.quant = &qp;
    b.n_symbols = n;
    b.frame_symbols = frame_symbols;
    b.side_scales = qp.kind == NCCLZ_QUANT_QSGD;
    b.d_abs_eb = qp.kind == NCCLZ_QUANT_EB && spec.eb_is_rel ? &stats->abs_eb : NULL;
    const uint32_t nf = ncclzCudaBatchFrames(&b);
    if (coder < 0) { /* as cli_rea_gpu_open: the CLI's default transport hint (net) */
      if (!planner) NZ(ncclzReaGpuPlannerCreate(prof, &planner));
      ncclzReaConfigFromProfile(prof, NCCLZ_HINT_NET, ncclzDataClassOf(&qp), &cfg);
      const uint32_t side = ncclzReaSideBytes(&qp, frame_symbols);
      desc = ncclzFrameDesc{NCCLZ_DTYPE_F32, &qp, NULL, side, b.params};
      const size_t cap = (size_t)1 << 40, last = n % frame_symbols;
      b.fallback_bytes = ncclzReaFallbackBytes(&cfg, frame_symbols, side, cap);
      b.fallback_last_bytes = last ? ncclzReaFallbackBytes(&cfg, last, ncclzReaSideBytes(&qp, last), cap) : 0;
      if (!coders) CK(cudaMalloc(&coders, 4 * (size_t)nf));
      b.d_coders = coders;
    }
    slot = ncclzCudaFrameSlotBytes(&b);
    cudaFree(out), cudaFree(fbytes), cudaFree(status), cudaFree(wse), cudaFree(wsd);
    CK(cudaMalloc(&out, slot * nf));
    CK(cudaMalloc(&fbytes, 4 * (size_t)nf));
    CK(cudaMalloc(&status, 4 * (size_t)nf));
    n_wse = ncclzCudaEncodeWorkspaceSize(&b);
    n_wsd = ncclzCudaDecodeWorkspaceSize(&b);
    CK(cudaMalloc(&wse, n_wse));
    CK(cudaMalloc(&wsd, n_wsd));
    /* zeroed once, as `ncclz codec --device gpu` does: one frame in one kernel (--chain: not) */
    CK(cudaMemset(wse, 0, n_wse));
    CK(cudaMemset(wsd, 0, n_wsd));
    b.ws_zeroed = !g_chain;
  }
  bool range_on_host = false; /* REL's bound as resolved on the host: the quantizer pass without its range pass */
  bool codes8 = false;        /* the QSGD passes on 8-bit codes (sym8) */
  void quantize() {
    if (qp.kind == NCCLZ_QUANT_EB)
      NZ(ncclzCudaQuantizeEB(&qp, spec.eb_is_rel && !range_on_host, spec.eb, x, n, sym, stats, wsq, n_wsq, s));
    else if (codes8)
      NZ(ncclzCudaQsgdQuantize8(&qp, x, n, scales, sym8, s));
    else
      NZ(ncclzCudaQsgdQuantize(&qp, x, n, scales, sym, s));
  }
  void dequantize() {
    if (qp.kind == NCCLZ_QUANT_EB)
      NZ(ncclzCudaDequantizeEB(&qp, b.d_abs_eb, sym2, n, xr, wsq, n_wsq, s));
    else if (codes8)
      NZ(ncclzCudaDequantizeQsgd8(&qp, sym8, n, scales2, xr, s));
    else
      NZ(ncclzCudaDequantizeQsgd(&qp, sym2, n, scales2, xr, s));
  }
  /* QSGD coded by RAW or FIXEDLEN: the codes travel as int8_t, as ncclzCudaCodecBench's do */
  bool narrow() const { return qp.kind == NCCLZ_QUANT_QSGD && ncclzCudaBatchTakesCodes8(&b); }
  /* as `ncclz codec --device gpu`: the quantizer inside the encode call */
  void encode() {
    if (narrow()) {
      NZ(ncclzCudaQsgdEncodeBatch8(&b, x, sym8, scales, out, slot, fbytes, wse, n_wse, s));
      return;
    }
    if (qp.kind == NCCLZ_QUANT_QSGD && !b.d_coders) {
      NZ(ncclzCudaQsgdEncodeBatch(&b, x, sym, scales, out, slot, fbytes, wse, n_wse, s));
      return;
    }
    if (qp.kind == NCCLZ_QUANT_EB && !b.d_coders) {
      NZ(ncclzCudaEbEncodeBatch(&b, spec.eb_is_rel, spec.eb, x, sym, stats, wsq, n_wsq, out, slot, fbytes, wse, n_wse, s));
      return;
    }
    quantize();
    if (b.d_coders) NZ(ncclzReaGpuPlanLaunch(planner, &cfg, sym, n, b.frame_symbols, &desc, (size_t)1 << 40, s, coders, NULL));
    NZ(ncclzCudaEncodeBatch(&b, sym, scales, out, slot, fbytes, wse, n_wse, s));
  }
  /* decode + dequantize in one call (one pass where the quantizer allows it) */
  void decode() {
    NZ(ncclzCudaDecodeDequantBatch(&b, b.d_coders ? 7u : 0u, out, NULL, slot, slot * ncclzCudaBatchFrames(&b), sym2,
                                   scales2, xr, status, wsd, n_wsd, wsq, n_wsq, s));
  }
  /* the same as two calls: the codes to sym2, then the dequantizer */
  void decode_codes() {
    NZ(ncclzCudaDecodeBatch(&b, b.d_coders ? 7u : 0u, out, NULL, slot, slot * ncclzCudaBatchFrames(&b), sym2, scales2,
                            status, wsd, n_wsd, s));
  }
  /* After the timed calls: the decode gave back the encoded symbols, every frame's status is 0,
   * and the one call's floats are the two calls' bit for bit. */
  bool check() {
    const uint32_t nf = ncclzCudaBatchFrames(&b);
    std::vector<float> one(n), two(n);
    CK(cudaMemsetAsync(xr, 0xA5, 4 * n, s));
    encode();
    decode();
    CK(cudaMemcpyAsync(one.data(), xr, 4 * n, cudaMemcpyDeviceToHost, s));
    CK(cudaMemsetAsync(sym2, 0xA5, 4 * n, s));
    decode_codes();
    dequantize();
    CK(cudaMemcpyAsync(two.data(), xr, 4 * n, cudaMemcpyDeviceToHost, s));
    CK(cudaStreamSynchronize(s));
    if (memcmp(one.data(), two.data(), 4 * n)) return false;
    std::vector<int32_t> a(n), c(n);
    std::vector<uint32_t> st(nf);
    if (narrow()) { /* the encoded codes, widened */
      std::vector<int8_t> a8(n);
      CK(cudaMemcpy(a8.data(), sym8, n, cudaMemcpyDeviceToHost));
      std::copy(a8.begin(), a8.end(), a.begin());
    } else {
      CK(cudaMemcpy(a.data(), sym, 4 * n, cudaMemcpyDeviceToHost));
    }
    CK(cudaMemcpy(c.data(), sym2, 4 * n, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(st.data(), status, 4 * nf, cudaMemcpyDeviceToHost));
    for (uint32_t k = 0; k < nf; k++)
      if (st[k]) return false;
    return a == c;
  }
  /* After the 8-bit passes: their codes, widened, are the 32-bit pass's, and their floats the
   * 32-bit dequantizer's, bit for bit. */
  bool same_as_wide() {
    std::vector<int8_t> c8(n);
    std::vector<int32_t> c32(n);
    std::vector<float> f8(n), f32(n);
    codes8 = true;
    quantize();
    dequantize();
    CK(cudaMemcpyAsync(c8.data(), sym8, n, cudaMemcpyDeviceToHost, s));
    CK(cudaMemcpyAsync(f8.data(), xr, 4 * n, cudaMemcpyDeviceToHost, s));
    codes8 = false;
    quantize();
    CK(cudaMemcpyAsync(sym2, sym, 4 * n, cudaMemcpyDeviceToDevice, s));
    dequantize();
    CK(cudaMemcpyAsync(c32.data(), sym, 4 * n, cudaMemcpyDeviceToHost, s));
    CK(cudaMemcpyAsync(f32.data(), xr, 4 * n, cudaMemcpyDeviceToHost, s));
    CK(cudaStreamSynchronize(s));
    for (size_t i = 0; i < n; i++)
      if (c8[i] != c32[i]) return false;
    return memcmp(f8.data(), f32.data(), 4 * n) == 0;
  }
  void release() {
    void *all[] = {x, xr, scales, scales2, sym, sym2, sym8, out, fbytes, status, coders, wse, wsd, wsq, stats};
    for (void *p : all)
      if (p) cudaFree(p);
    ncclzReaGpuPlannerDestroy(planner);
  }
};

static const char USAGE[] =
    "usage: bench_latency --sci FILE --grad FILE [--runs N] [--batch N] [--quant-mib N] [--only CODER]\n"
    "                     [--chain] [--json OUT] [--commit SHA] [--date ISO]\n"
    "  One frame of 64 KiB, 256 KiB, 1 MiB and 4 MiB for every coder (raw, fixedlen, huffman, auto)\n"
    "  with each quantizer (QSGD 8/512 on --grad, REL 1e-4 and REL 1e-4 + 3D Lorenzo on --sci):\n"
    "  encode (quantize + code) and decode (decode + dequantize), the median of --runs calls (>= 50)\n"
    "  one at a time, replayed from a CUDA graph, and --batch calls back to back; then the quantize\n"
    "  and dequantize passes alone on --quant-mib MiB (default 256) with the copy roofline.\n"
    "  --only: one coder (raw|fixedlen|huffman|auto), and no quantizer passes (for profiling).\n"
    "  --chain: workspaces not marked zeroed, so that one frame is coded by the chain of kernels\n"
    "  (init, coder, finalize) instead of one kernel.\n";

static unsigned long parse_uint(const char *opt, const char *arg, unsigned long lo, unsigned long hi) {
  return bench_parse_uint("bench_latency", opt, arg, lo, hi);
}

struct Row {
  std::string coder, quant;
  size_t frame_bytes;
  Timing enc, dec;
  bool ok;
};
struct QRow {
  std::string quant;
  double q_gbps, dq_gbps, copy_gbps;
};

int main(int argc, char **argv) {
  const char *sci = NULL, *grad = NULL, *json = NULL, *commit = "unknown", *date = "unknown", *only = NULL;
  int runs = 100, batch = 50;
  size_t qmib = 256;
  static const struct option opts[] = {
      {"sci", required_argument, NULL, 's'},   {"grad", required_argument, NULL, 'g'},
      {"runs", required_argument, NULL, 'r'},  {"batch", required_argument, NULL, 'b'},
      {"quant-mib", required_argument, NULL, 'q'}, {"only", required_argument, NULL, 'o'},
      {"json", required_argument, NULL, 'j'},  {"commit", required_argument, NULL, 'c'},
      {"date", required_argument, NULL, 'd'},  {"help", no_argument, NULL, 'h'},
      {"chain", no_argument, NULL, 'C'},
      {NULL, 0, NULL, 0}};
  for (int o; (o = getopt_long(argc, argv, "h", opts, NULL)) != -1;) {
    switch (o) {
    case 's': sci = optarg; break;
    case 'g': grad = optarg; break;
    case 'r': runs = (int)parse_uint("runs", optarg, 50, 100000); break;
    case 'b': batch = (int)parse_uint("batch", optarg, 1, 10000); break;
    case 'q': qmib = parse_uint("quant-mib", optarg, 1, 16384); break;
    case 'o': only = optarg; break;
    case 'j': json = optarg; break;
    case 'c': commit = optarg; break;
    case 'd': date = optarg; break;
    case 'C': g_chain = true; break;
    case 'h': fputs(USAGE, stdout); return 0;
    default: fputs(USAGE, stderr); return 2;
    }
  }
  if (optind < argc || !sci || !grad) {
    fprintf(stderr, "bench_latency: --sci and --grad are required, and no other argument\n%s", USAGE);
    return 2;
  }
  static const char *const CODERS[] = {"raw", "fixedlen", "huffman", "auto"};
  if (only && !std::count_if(CODERS, CODERS + 4, [&](const char *c) { return !strcmp(c, only); })) {
    fprintf(stderr, "bench_latency: --only: expected raw, fixedlen, huffman or auto, got '%s'\n", only);
    return 2;
  }
  ncclzProfile prof;
  NZ(ncclzProfileDefault(&prof));
  cudaStream_t s;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));

  /* the floor under every row: 1 to 4 empty kernels timed the same way */
  std::vector<Timing> floors;
  for (int k = 1; k <= 4; k++) {
    floors.push_back(time_call(s, runs, batch, [&]() { launch_empty(s, k); }));
    printf("launch floor, %d empty kernel%s: %.1f us one at a time, %.1f us from a graph, %.1f us in a batch\n", k,
           k > 1 ? "s" : "", floors.back().stream_us, floors.back().graph_us, floors.back().batch_us);
  }
  std::vector<Row> rows;
  const size_t sizes[] = {64 << 10, 256 << 10, 1 << 20, 4 << 20};
  printf("%-24s %-9s %8s | %9s %9s %9s %9s | %9s %9s %9s %9s | %s\n", "quant", "coder", "frame", "enc us", "graph",
         "batch", "issue", "dec us", "graph", "batch", "issue", "ok");
  for (const QuantCase &qc : QUANTS)
    for (size_t fb : sizes) {
      Codec c;
      c.setup(qc, bench_load_tiled("bench_latency", !strcmp(qc.data, "sci") ? sci : grad, fb / 4), s);
      for (int k = 0; k < 4; k++) {
        if (only && strcmp(only, CODERS[k])) continue;
        c.set_coder(k == 3 ? -1 : k, (uint32_t)(fb / 4), &prof);
        Row r;
        r.coder = CODERS[k], r.quant = qc.name, r.frame_bytes = fb;
        r.enc = time_call(s, runs, batch, [&]() { c.encode(); });
        r.dec = time_call(s, runs, batch, [&]() { c.decode(); });
        r.ok = c.check();
        rows.push_back(r);
        printf("%-24s %-9s %8zu | %9.1f %9.1f %9.1f %9.1f | %9.1f %9.1f %9.1f %9.1f | %s\n", qc.name, CODERS[k], fb,
               r.enc.stream_us, r.enc.graph_us, r.enc.batch_us, r.enc.issue_us, r.dec.stream_us, r.dec.graph_us,
               r.dec.batch_us, r.dec.issue_us, r.ok ? "yes" : "NO");
        fflush(stdout);
      }
      c.release();
    }

  std::vector<QRow> qrows;
  bool quant_ok = true;
  if (!only) {
    const size_t n = (qmib << 20) / 4 / 8192 * 8192;
    printf("\n%-24s %12s %12s %12s   (%zu MiB)\n", "quant", "quant GB/s", "dequant GB/s", "copy GB/s", qmib);
    for (const QuantCase &qc : QUANTS) {
      Codec c;
      c.setup(qc, bench_load_tiled("bench_latency", !strcmp(qc.data, "sci") ? sci : grad, n), s);
      c.set_coder(0, (uint32_t)(4 << 20) / 4, &prof); /* b.d_abs_eb for the dequantizer */
      c.quantize();
      CK(cudaMemcpyAsync(c.sym2, c.sym, 4 * n, cudaMemcpyDeviceToDevice, s));
      if (c.qp.kind == NCCLZ_QUANT_QSGD)
        CK(cudaMemcpyAsync(c.scales2, c.scales, 4 * ((n + 511) / 512), cudaMemcpyDeviceToDevice, s));
      QRow q;
      q.quant = qc.name;
      const double tq = 1e-6 * bench_events_median_us(s, 3, 20, 1, [&]() { c.quantize(); });
      const double tdq = 1e-6 * bench_events_median_us(s, 3, 20, 1, [&]() { c.dequantize(); });
      const double tc =
          1e-6 * bench_events_median_us(s, 3, 20, 1, [&]() { CK(cudaMemcpyAsync(c.xr, c.x, 4 * n, cudaMemcpyDeviceToDevice, s)); });
      q.q_gbps = 4.0 * n / tq * 1e-9, q.dq_gbps = 4.0 * n / tdq * 1e-9, q.copy_gbps = 8.0 * n / tc * 1e-9;
      qrows.push_back(q);
      printf("%-24s %12.1f %12.1f %12.1f\n", qc.name, q.q_gbps, q.dq_gbps, q.copy_gbps);
      if (c.qp.kind == NCCLZ_QUANT_QSGD) { /* the same passes on 8-bit codes: 5 bytes an element instead of 8 */
        c.codes8 = true;
        q.quant = std::string(qc.name) + " (8-bit codes)";
        q.q_gbps = 4.0 * n / (1e-6 * bench_events_median_us(s, 3, 20, 1, [&]() { c.quantize(); })) * 1e-9;
        q.dq_gbps = 4.0 * n / (1e-6 * bench_events_median_us(s, 3, 20, 1, [&]() { c.dequantize(); })) * 1e-9;
        const bool same = c.same_as_wide();
        c.codes8 = false;
        qrows.push_back(q);
        printf("%-24s %12.1f %12.1f %12.1f%s\n", q.quant.c_str(), q.q_gbps, q.dq_gbps, q.copy_gbps,
               same ? "" : "   codes or floats DIFFER from the 32-bit passes");
        quant_ok = quant_ok && same;
      }
      if (c.spec.eb_is_rel) { /* the same pass with the bound given, as cuSZp's tool times its REL mode */
        c.range_on_host = true;
        q.quant = std::string(qc.name) + " (range on host)";
        q.q_gbps = 4.0 * n / (1e-6 * bench_events_median_us(s, 3, 20, 1, [&]() { c.quantize(); })) * 1e-9;
        c.range_on_host = false;
        qrows.push_back(q);
        printf("%-24s %12.1f %12.1f %12.1f\n", q.quant.c_str(), q.q_gbps, q.dq_gbps, q.copy_gbps);
      }
      c.release();
    }
  }
  printf("columns: medians in us of one call (events around it), of its CUDA graph's replay, of one call in a\n"
         "batch of %d back to back; issue = host time to enqueue one call; GB/s of input floats (copy: read+write)\n",
         batch);

  if (json) {
    FILE *jf = fopen(json, "w");
    if (!jf) {
      fprintf(stderr, "bench_latency: cannot write %s\n", json);
      return 1;
    }
    fprintf(jf, "{\n \"device\": \"%s\", \"commit\": \"%s\", \"date\": \"%s\", \"runs\": %d, \"batch\": %d, \"one_kernel\": %s,\n",
            prop.name, commit, date, runs, batch, g_chain ? "false" : "true");
    fprintf(jf, " \"launch_floor\": [");
    for (size_t k = 0; k < floors.size(); k++)
      fprintf(jf, "%s{\"kernels\": %zu, \"stream_us\": %.2f, \"graph_us\": %.2f, \"batch_us\": %.2f}", k ? ", " : "",
              k + 1, floors[k].stream_us, floors[k].graph_us, floors[k].batch_us);
    fprintf(jf, "],\n");
    fprintf(jf, " \"rows\": [\n");
    for (size_t i = 0; i < rows.size(); i++) {
      const Row &r = rows[i];
      fprintf(jf,
              "  {\"coder\": \"%s\", \"quant\": \"%s\", \"frame_bytes\": %zu, \"encode_us\": %.2f, \"decode_us\": %.2f, "
              "\"encode_graph_us\": %.2f, \"decode_graph_us\": %.2f, \"encode_batch_us\": %.2f, "
              "\"decode_batch_us\": %.2f, \"encode_issue_us\": %.2f, \"decode_issue_us\": %.2f, \"ok\": %s}%s\n",
              r.coder.c_str(), r.quant.c_str(), r.frame_bytes, r.enc.stream_us, r.dec.stream_us, r.enc.graph_us,
              r.dec.graph_us, r.enc.batch_us, r.dec.batch_us, r.enc.issue_us, r.dec.issue_us, r.ok ? "true" : "false",
              i + 1 < rows.size() ? "," : "");
    }
    fprintf(jf, " ],\n \"quantizer_mib\": %zu,\n \"quantizers\": [\n", qmib);
    for (size_t i = 0; i < qrows.size(); i++)
      fprintf(jf, "  {\"quant\": \"%s\", \"quantize_gbps\": %.1f, \"dequantize_gbps\": %.1f, \"copy_gbps\": %.1f}%s\n",
              qrows[i].quant.c_str(), qrows[i].q_gbps, qrows[i].dq_gbps, qrows[i].copy_gbps,
              i + 1 < qrows.size() ? "," : "");
    fprintf(jf, " ]\n}\n");
    fclose(jf);
  }
  bool all_ok = quant_ok;
  for (const Row &r : rows) all_ok = all_ok && r.ok;
  return all_ok ? 0 : 1;
}
