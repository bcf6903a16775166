/* bench_codecs: every coder x quantizer on real data tiled to a given size, in batched frames,
 * with the copy roofline of the same run. Prints a table and writes JSON (one object).
 * bench_codecs --help for the options. */
#include <getopt.h>
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
#include "bench_args.h"

struct Row {
  std::string data, quant, coder;
  ncclzCudaBenchResult r;
  double cr, bound; /* EB: the error bound every value must meet (0: not EB) */
  bool ok;
};

static const char USAGE[] =
    "usage: bench_codecs --sci FILE --grad FILE [--mib N] [--frame-mib N] [--segment N] [--runs N]\n"
    "                    [--codes 8|32] [--json OUT] [--commit SHA] [--date ISO]\n"
    "  Every coder x quantizer on the two files tiled to N MiB (default 256), in frames of\n"
    "  --frame-mib MiB (default 4), with the copy roofline of the same run; a table on stdout and\n"
    "  one JSON object in --json. --segment: HUFFMAN symbols per segment (default the coder's);\n"
    "  --runs: timed runs per median (at least 20); --codes: QSGD's codes between its quantizer and\n"
    "  RAW or FIXEDLEN, 8-bit (default, as `ncclz codec --device gpu`) or 32-bit (the executor's).\n";

static unsigned long parse_uint(const char *opt, const char *arg, unsigned long lo, unsigned long hi) {
  return bench_parse_uint("bench_codecs", opt, arg, lo, hi);
}

int main(int argc, char **argv) {
  const char *sci = NULL, *grad = NULL, *json = NULL, *commit = "unknown", *date = "unknown";
  size_t mib = 256, frame_mib = 4;
  unsigned segment = 0; /* HUFFMAN symbols per segment; 0: the coder's default (ncclzCoderParamsDefault) */
  int runs = 20, codes = 8;
  static const struct option opts[] = {
      {"sci", required_argument, NULL, 's'},      {"grad", required_argument, NULL, 'g'},
      {"mib", required_argument, NULL, 'm'},      {"frame-mib", required_argument, NULL, 'f'},
      {"runs", required_argument, NULL, 'r'},     {"json", required_argument, NULL, 'j'},
      {"commit", required_argument, NULL, 'c'},   {"date", required_argument, NULL, 'd'},
      {"segment", required_argument, NULL, 'S'},  {"codes", required_argument, NULL, 'C'},
      {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0}};
  for (int o; (o = getopt_long(argc, argv, "h", opts, NULL)) != -1;) {
    switch (o) {
    case 's': sci = optarg; break;
    case 'g': grad = optarg; break;
    case 'm': mib = parse_uint("mib", optarg, 1, 65536); break;
    case 'f': frame_mib = parse_uint("frame-mib", optarg, 1, 64); break;
    case 'r': runs = (int)parse_uint("runs", optarg, 20, 100000); break;
    case 'j': json = optarg; break;
    case 'c': commit = optarg; break;
    case 'd': date = optarg; break;
    case 'S': segment = (unsigned)parse_uint("segment", optarg, 1, 4096); break;
    case 'C':
      codes = (int)parse_uint("codes", optarg, 8, 32);
      if (codes != 8 && codes != 32) {
        fprintf(stderr, "bench_codecs: --codes takes 8 or 32, not %s\n", optarg);
        return 2;
      }
      break;
    case 'h': fputs(USAGE, stdout); return 0;
    default: fputs(USAGE, stderr); return 2; /* getopt_long named the bad option */
    }
  }
  if (optind < argc) {
    fprintf(stderr, "bench_codecs: unexpected argument '%s'\n%s", argv[optind], USAGE);
    return 2;
  }
  if (!segment) { /* the coder's default */
    ncclzCoderParams dp;
    ncclzCoderParamsDefault(&dp);
    segment = dp.huffman_segment;
  }
  if (!sci || !grad) {
    fprintf(stderr, "bench_codecs: --sci and --grad are required\n%s", USAGE);
    return 2;
  }
  const size_t n = (mib << 20) / 4 / 8192 * 8192; /* whole 64x128 planes for 3D Lorenzo */
  const uint32_t fs = (uint32_t)((frame_mib << 20) / 4);
  std::vector<float> xs = bench_load_tiled("bench_codecs", sci, n), xg = bench_load_tiled("bench_codecs", grad, n);
  cudaDeviceProp prop;
  cudaGetDeviceProperties(&prop, 0);
  int rtv = 0;
  cudaRuntimeGetVersion(&rtv);
  /* host_range: the eb:rel bound resolved on the host before timing, as cuSZp's own tool does
   * (its REL mode scans the value range on the CPU and times the compressor with that absolute
   * bound), so that row's end-to-end figure compares with cuSZp's like for like; the same codes
   * as the device-resolved row. Only the coder named in `only` (NULL: every coder). */
  struct Q {
    const char *data, *spec;
    bool host_range;
    const char *only;
  } qs[] = {{"sci", "none", false, NULL},
            {"sci", "eb:rel=1e-4", false, NULL},
            {"sci", "eb:rel=1e-4", true, "fixedlen"},
            {"sci", "eb:rel=1e-4,lorenzo=3d", false, NULL},
            {"grad", "qsgd:bits=8,bucket=512", false, NULL}};
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
      if (qq.only && strcmp(qq.only, ncclzCoderName((ncclzCoder)c))) continue;
      ncclzCoderParams cp;
      ncclzCoderParamsDefault(&cp);
      cp.huffman_segment = segment;
      Row row;
      row.data = qq.data;
      row.quant = std::string(qq.spec) + (qq.host_range ? " (range on host)" : "");
      row.coder = ncclzCoderName((ncclzCoder)c);
      const int rel_on_device = spec.kind == NCCLZ_QUANT_EB && spec.eb_is_rel && !qq.host_range;
      ncclzStatus st = ncclzCudaCodecBench(x.data(), n, &qp, rel_on_device, spec.eb,
                                           (ncclzCoder)c, NULL, codes == 8, &cp, fs, runs, &row.r, NULL, NULL, NULL);
      if (st != NCCLZ_OK) {
        fprintf(stderr, "bench_codecs: %s %s: %s\n", row.quant.c_str(), row.coder.c_str(), ncclzLastError());
        return 1;
      }
      row.cr = 4.0 * n / (double)row.r.output_bytes;
      row.bound = qp.kind == NCCLZ_QUANT_EB ? (qp.bound > 0 ? qp.bound : qp.abs_eb) : 0;
      row.ok = row.r.lossless_ok && (row.bound == 0 || row.r.max_abs_err <= row.bound);
      rows.push_back(row);
      fprintf(stderr, "done %s %s\n", row.quant.c_str(), row.coder.c_str());
    }
  }
  FILE *jf = json ? fopen(json, "w") : NULL;
  if (jf) {
    fprintf(jf, "{\n \"device\": \"%s\", \"cuda_runtime\": %d, \"nccl\": \"%d.%d.%d\", \"commit\": \"%s\", \"date\": \"%s\",\n",
            prop.name, rtv, NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH, commit, date);
    fprintf(jf, " \"input_bytes\": %zu, \"frame_bytes\": %zu, \"huffman_segment\": %u, \"runs\": %d, \"qsgd_code_bits\": %d,\n \"rows\": [\n",
            4 * n, 4 * (size_t)fs, segment, runs, codes);
  }
  printf("%-5s %-42s %-9s %7s %9s %9s %9s %9s %9s %8s %5s\n", "data", "quant", "coder", "CR", "enc GB/s", "dec GB/s",
         "cenc", "cdec", "roof", "copy", "ok");
  for (size_t i = 0; i < rows.size(); i++) {
    const Row &w = rows[i];
    double roof = w.r.copy_gbps / (1 + 1 / w.cr);
    printf("%-5s %-42s %-9s %7.2f %9.1f %9.1f %9.1f %9.1f %9.1f %8.1f %5s\n", w.data.c_str(), w.quant.c_str(),
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
