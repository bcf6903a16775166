/* The EB quantizer with a Lorenzo predictor on one GPU, per plane shape: quantize and dequantize
 * passes over --mib MiB of a real field (tiled to size) viewed as d0 planes of D1 x D2, with CUDA
 * events (the median of 50 calls after 5 warm-ups), the device copy roofline of the same run, and
 * every code and float checked byte for byte against the C reference. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <algorithm>
#include <vector>

#include <cuda_runtime.h>

#include "ncclz/codecs.h"
#include "ncclz/codecs_cuda.h"
#define BENCH_PROG "bench_lorenzo"
#include "bench_args.h"


static const char *USAGE =
    "usage: bench_lorenzo --input FILE [--quant SPEC] [--mib N] SHAPE...\n"
    "  SHAPE is D1xD2, a plane (the array is d0 planes of D1 x D2, d0 = what --mib holds).\n"
    "  Times the quantize and dequantize passes of SPEC (default eb:rel=1e-4,lorenzo=3d) on one GPU\n"
    "  and checks every code and float against the CPU reference.\n";

/* The median of 50 calls of fn on the default stream after 5 warm-ups, in milliseconds. */
static float median_ms(const std::function<void()> &fn) { return (float)(bench_events_median_us(0, 5, 50, 1, fn) * 1e-3); }

static void run_shape(const std::vector<float> &field, size_t mib, const char *spec_text, uint32_t d1, uint32_t d2) {
  const size_t P = (size_t)d1 * d2, n = (mib << 20) / 4 / P * P;
  if (!n) {
    fprintf(stderr, "bench_lorenzo: a plane of %ux%u is larger than --mib\n", d1, d2);
    exit(1);
  }
  std::vector<float> h(n);
  for (size_t i = 0; i < n; i++) h[i] = field[i % field.size()];
  ncclzQuantSpec spec;
  ncclzQuantParams qp;
  NZ(ncclzQuantSpecParse(spec_text, &spec));
  const uint32_t dims[3] = {(uint32_t)(n / P), d1, d2};
  NZ(ncclzQuantResolve(&spec, h.data(), n, dims, 3, 0, &qp));
  float *x, *xr;
  int32_t *sym;
  void *ws;
  ncclzCudaQuantStats *st;
  const size_t nws = ncclzCudaQuantWorkspaceSize(n);
  CK(cudaMalloc(&x, 4 * n));
  CK(cudaMalloc(&xr, 4 * n));
  CK(cudaMalloc(&sym, 4 * n));
  CK(cudaMalloc(&ws, nws));
  CK(cudaMalloc(&st, sizeof *st));
  CK(cudaMemcpy(x, h.data(), 4 * n, cudaMemcpyHostToDevice));
  const float copy = median_ms([&] { CK(cudaMemcpyAsync(xr, x, 4 * n, cudaMemcpyDeviceToDevice)); });
  const double *d_eb = spec.eb_is_rel ? &st->abs_eb : NULL;
  const float q = median_ms([&] { NZ(ncclzCudaQuantizeEB(&qp, spec.eb_is_rel, spec.eb, x, n, sym, st, ws, nws, 0)); });
  const float d = median_ms([&] { NZ(ncclzCudaDequantizeEB(&qp, d_eb, sym, n, xr, ws, nws, 0)); });
  std::vector<int32_t> codes(n), ref(n), got(n);
  std::vector<float> back(n), gotx(n);
  CK(cudaMemcpy(got.data(), sym, 4 * n, cudaMemcpyDeviceToHost));
  CK(cudaMemcpy(gotx.data(), xr, 4 * n, cudaMemcpyDeviceToHost));
  NZ(ncclzQuantizeEB(&qp, h.data(), n, codes.data()));
  ncclzLorenzoForward(&qp, codes.data(), n, ref.data());
  ncclzLorenzoInverse(&qp, ref.data(), n, codes.data());
  NZ(ncclzDequantizeEB(&qp, codes.data(), n, back.data()));
  const bool same = !memcmp(got.data(), ref.data(), 4 * n) && !memcmp(gotx.data(), back.data(), 4 * n);
  printf("%6u x %-6u %8zu %10.0f %12.0f %12.1f %14.0f %14.1f %s\n", d1, d2, n / P, 8.0 * n / copy / 1e6,
         4.0 * n / q / 1e6, q * 1e3, 4.0 * n / d / 1e6, d * 1e3, same ? "ok" : "DIFFERS");
  CK(cudaFree(x));
  CK(cudaFree(xr));
  CK(cudaFree(sym));
  CK(cudaFree(ws));
  CK(cudaFree(st));
  if (!same) exit(1);
}

int main(int argc, char **argv) {
  const char *input = NULL, *spec = "eb:rel=1e-4,lorenzo=3d";
  size_t mib = 256;
  static const struct option opts[] = {{"input", required_argument, NULL, 'i'}, {"quant", required_argument, NULL, 'Q'},
                                       {"mib", required_argument, NULL, 'm'},   {"help", no_argument, NULL, 'h'},
                                       {NULL, 0, NULL, 0}};
  for (int o; (o = getopt_long(argc, argv, "h", opts, NULL)) != -1;) {
    switch (o) {
    case 'i': input = optarg; break;
    case 'Q': spec = optarg; break;
    case 'm': mib = bench_parse_uint("bench_lorenzo", "mib", optarg, 1, 16384); break;
    case 'h': fputs(USAGE, stdout); return 0;
    default: fputs(USAGE, stderr); return 2;
    }
  }
  if (!input || optind >= argc) {
    fputs(USAGE, stderr);
    return 2;
  }
  FILE *f = fopen(input, "rb");
  if (!f) {
    fprintf(stderr, "bench_lorenzo: cannot open %s\n", input);
    return 1;
  }
  std::vector<float> field;
  float buf[4096];
  for (size_t got; (got = fread(buf, 4, 4096, f)) > 0;) field.insert(field.end(), buf, buf + got);
  fclose(f);
  if (field.empty()) {
    fprintf(stderr, "bench_lorenzo: %s holds no floats\n", input);
    return 1;
  }
  printf("# %s, %s, %zu MiB, GB/s of input floats (copy: read + write)\n", input, spec, mib);
  printf("%15s %8s %10s %12s %12s %14s %14s %s\n", "plane", "planes", "copy GB/s", "quant GB/s", "quant us",
         "dequant GB/s", "dequant us", "check");
  for (int a = optind; a < argc; a++) {
    unsigned d1, d2;
    if (sscanf(argv[a], "%ux%u", &d1, &d2) != 2 || !d1 || !d2) {
      fprintf(stderr, "bench_lorenzo: shape '%s': expected D1xD2\n", argv[a]);
      return 2;
    }
    run_shape(field, mib, spec, d1, d2);
  }
  return 0;
}
