/* bench_codecs: every coder x quantizer on real data tiled to a given size, in batched frames,
 * with the copy roofline of the same run. Prints a table and writes JSON (one object).
 * usage: bench_codecs --sci FILE --grad FILE [--mib 256] [--frame-mib 4] [--runs 20]
 *                     [--json OUT] [--commit SHA] [--date ISO] */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <string>
#include <vector>

#include <cuda_runtime.h>
#include <nccl.h>

#include "ncclz/codecs.h"
#include "ncclz/codecs_cuda.h"

static std::vector<float> load_tiled(const char *path, size_t n) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    fprintf(stderr, "bench_codecs: cannot open %s\n", path);
    exit(2);
  }
  std::vector<float> src;
  float buf[4096];
  size_t got;
  while ((got = fread(buf, 4, 4096, f)) > 0) src.insert(src.end(), buf, buf + got);
  fclose(f);
  std::vector<float> x(n);
  for (size_t i = 0; i < n; i++) x[i] = src[i % src.size()];
  return x;
}

struct Row {
  std::string data, quant, coder;
  ncclzCudaBenchResult r;
  double cr, bound; /* EB: the error bound every value must meet (0: not EB) */
  bool ok;
};

int main(int argc, char **argv) {
  const char *sci = NULL, *grad = NULL, *json = NULL, *commit = "unknown", *date = "unknown";
  size_t mib = 256, frame_mib = 4;
  unsigned segment = 0; /* HUFFMAN symbols per segment; 0: the coder's default (ncclzCoderParamsDefault) */
  int runs = 20;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--sci")) sci = argv[i + 1];
    else if (!strcmp(argv[i], "--grad")) grad = argv[i + 1];
    else if (!strcmp(argv[i], "--mib")) mib = strtoul(argv[i + 1], NULL, 10);
    else if (!strcmp(argv[i], "--frame-mib")) frame_mib = strtoul(argv[i + 1], NULL, 10);
    else if (!strcmp(argv[i], "--runs")) runs = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--json")) json = argv[i + 1];
    else if (!strcmp(argv[i], "--commit")) commit = argv[i + 1];
    else if (!strcmp(argv[i], "--date")) date = argv[i + 1];
    else if (!strcmp(argv[i], "--segment")) segment = (unsigned)strtoul(argv[i + 1], NULL, 10);
  }
  if (segment > 4096) {
    fprintf(stderr, "bench_codecs: --segment: 1..4096 symbols\n");
    return 2;
  }
  if (!segment) { /* the coder's default */
    ncclzCoderParams dp;
    ncclzCoderParamsDefault(&dp);
    segment = dp.huffman_segment;
  }
  if (!sci || !grad) {
    fprintf(stderr, "usage: bench_codecs --sci FILE --grad FILE [--mib N] [--frame-mib N] [--segment N] [--json OUT]\n");
    return 2;
  }
  const size_t n = (mib << 20) / 4 / 8192 * 8192; /* whole 64x128 planes for 3D Lorenzo */
  const uint32_t fs = (uint32_t)((frame_mib << 20) / 4);
  std::vector<float> xs = load_tiled(sci, n), xg = load_tiled(grad, n);
  cudaDeviceProp prop;
  cudaGetDeviceProperties(&prop, 0);
  int rtv = 0;
  cudaRuntimeGetVersion(&rtv);
  struct Q {
    const char *data, *spec;
  } qs[] = {{"sci", "none"}, {"sci", "eb:rel=1e-4"}, {"sci", "eb:rel=1e-4,lorenzo=3d"}, {"grad", "qsgd:bits=8,bucket=512"}};
  const uint32_t dims[3] = {(uint32_t)(n / 8192), 64, 128};
  std::vector<Row> rows;
  for (auto &qq : qs) {
    const std::vector<float> &x = !strcmp(qq.data, "sci") ? xs : xg;
    ncclzQuantSpec spec;
    ncclzQuantParams qp;
    if (ncclzQuantSpecParse(qq.spec, &spec) != NCCLZ_OK ||
        ncclzQuantResolve(&spec, x.data(), n, dims, 3, 0, &qp) != NCCLZ_OK) {
      fprintf(stderr, "bench_codecs: %s: %s\n", qq.spec, ncclzLastError());
      return 1;
    }
    for (int c = 0; c < NCCLZ_CODER_COUNT; c++) {
      ncclzCoderParams cp;
      ncclzCoderParamsDefault(&cp);
      cp.huffman_segment = segment;
      Row row;
      row.data = qq.data;
      row.quant = qq.spec;
      row.coder = ncclzCoderName((ncclzCoder)c);
      ncclzStatus st = ncclzCudaCodecBench(x.data(), n, &qp, spec.kind == NCCLZ_QUANT_EB && spec.eb_is_rel, spec.eb,
                                           (ncclzCoder)c, &cp, fs, runs, &row.r, NULL, NULL, NULL);
      if (st != NCCLZ_OK) {
        fprintf(stderr, "bench_codecs: %s %s: %s\n", qq.spec, row.coder.c_str(), ncclzLastError());
        return 1;
      }
      row.cr = 4.0 * n / (double)row.r.output_bytes;
      row.bound = qp.kind == NCCLZ_QUANT_EB ? (qp.bound > 0 ? qp.bound : qp.abs_eb) : 0;
      row.ok = row.r.lossless_ok && (row.bound == 0 || row.r.max_abs_err <= row.bound);
      rows.push_back(row);
      fprintf(stderr, "done %s %s\n", qq.spec, row.coder.c_str());
    }
  }
  FILE *jf = json ? fopen(json, "w") : NULL;
  if (jf) {
    fprintf(jf, "{\n \"device\": \"%s\", \"cuda_runtime\": %d, \"nccl\": \"%d.%d.%d\", \"commit\": \"%s\", \"date\": \"%s\",\n",
            prop.name, rtv, NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH, commit, date);
    fprintf(jf, " \"input_bytes\": %zu, \"frame_bytes\": %zu, \"huffman_segment\": %u, \"runs\": %d,\n \"rows\": [\n",
            4 * n, 4 * (size_t)fs, segment, runs);
  }
  printf("%-5s %-26s %-9s %7s %9s %9s %9s %9s %9s %8s %5s\n", "data", "quant", "coder", "CR", "enc GB/s", "dec GB/s",
         "cenc", "cdec", "roof", "copy", "ok");
  for (size_t i = 0; i < rows.size(); i++) {
    const Row &w = rows[i];
    double roof = w.r.copy_gbps / (1 + 1 / w.cr);
    printf("%-5s %-26s %-9s %7.2f %9.1f %9.1f %9.1f %9.1f %9.1f %8.1f %5s\n", w.data.c_str(), w.quant.c_str(),
           w.coder.c_str(), w.cr, w.r.encode_gbps, w.r.decode_gbps, w.r.coder_encode_gbps, w.r.coder_decode_gbps,
           roof, w.r.copy_gbps, w.ok ? "yes" : "NO");
    if (jf)
      fprintf(jf,
              "  {\"data\": \"%s\", \"quant\": \"%s\", \"coder\": \"%s\", \"cr\": %.4f, \"encode_gbps\": %.2f, "
              "\"decode_gbps\": %.2f, \"coder_encode_gbps\": %.2f, \"coder_decode_gbps\": %.2f, \"copy_gbps\": %.2f, "
              "\"roofline_gbps\": %.2f, \"output_bytes\": %zu, \"max_abs_err\": %.6g, \"error_bound\": %.6g, "
              "\"lossless_ok\": %s, \"ok\": %s}%s\n",
              w.data.c_str(), w.quant.c_str(), w.coder.c_str(), w.cr, w.r.encode_gbps, w.r.decode_gbps,
              w.r.coder_encode_gbps, w.r.coder_decode_gbps, w.r.copy_gbps, roof, w.r.output_bytes, w.r.max_abs_err,
              w.bound, w.r.lossless_ok ? "true" : "false", w.ok ? "true" : "false", i + 1 < rows.size() ? "," : "");
  }
  if (jf) {
    fprintf(jf, " ]\n}\n");
    fclose(jf);
  }
  printf("columns: enc/dec = quantize+code end to end, cenc/cdec = coder only (input GB/s); roof = copy/(1+1/CR)\n");
  return 0;
}
