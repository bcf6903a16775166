/* bench_eb_rule: the EB quantizer's element rule on the CPU, FORMAT.md's exact rule against the
 * fast path (codecs/eb_code.h) on real data: time per element of each, the share the fast path
 * answers, and whether every code agrees. bench_eb_rule --help for the options. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../codecs/eb_code.h"
#include "bench_args.h"
#include "ncclz/codecs.h"

static const char USAGE[] =
    "usage: bench_eb_rule --input FILE.f32 --quant eb:... [--mi N] [--runs N]\n"
    "  Tiles FILE to N Mi elements (default 64), resolves the spec on them and runs the exact and\n"
    "  the fast element rule over every element, --runs times each (default 5; the median is\n"
    "  printed). Exits 1 if any code or outcome differs.\n";

/* Median of the runs' seconds for one rule over x into c. */
static double time_rule(int fast, const float *x, size_t n, const ncclzQuantParams *p, int runs, int32_t *c,
                        unsigned char *o) {
  const double step = 2.0 * p->abs_eb, inv = 1.0 / step;
  double t[64];
  for (int r = 0; r < runs; r++) {
    double t0 = ncclzNowSeconds();
    for (size_t i = 0; i < n; i++)
      o[i] = (unsigned char)(fast ? ncclz_eb_code(x[i], p->bound, step, inv, &c[i])
                                  : ncclz_eb_code_exact(x[i], p->bound, step, &c[i]));
    t[r] = ncclzNowSeconds() - t0;
  }
  return ncclzMedian(t, (size_t)runs);
}

int main(int argc, char **argv) {
  const char *input = NULL, *quant = NULL;
  unsigned long mi = 64, runs = 5;
  static const struct option opts[] = {{"input", required_argument, NULL, 'i'}, {"quant", required_argument, NULL, 'q'},
                                       {"mi", required_argument, NULL, 'm'},    {"runs", required_argument, NULL, 'r'},
                                       {"help", no_argument, NULL, 'h'},        {NULL, 0, NULL, 0}};
  for (int o; (o = getopt_long(argc, argv, "h", opts, NULL)) != -1;) {
    switch (o) {
    case 'i': input = optarg; break;
    case 'q': quant = optarg; break;
    case 'm': mi = bench_parse_uint("bench_eb_rule", "mi", optarg, 1, 1024); break;
    case 'r': runs = bench_parse_uint("bench_eb_rule", "runs", optarg, 1, 64); break;
    case 'h': fputs(USAGE, stdout); return 0;
    default: fputs(USAGE, stderr); return 2;
    }
  }
  if (!input || !quant || optind < argc) {
    fprintf(stderr, "bench_eb_rule: --input and --quant are required\n%s", USAGE);
    return 2;
  }
  size_t bytes = 0;
  char *raw = ncclzReadFile("bench_eb_rule", input, &bytes);
  if (!raw || bytes < 4) {
    if (raw) fprintf(stderr, "bench_eb_rule: %s: no float32 value\n", input);
    else fprintf(stderr, "%s\n", ncclzLastError());
    return 1;
  }
  const size_t n0 = bytes / 4, n = (size_t)mi << 20;
  float *x = malloc(4 * n);
  int32_t *ca = malloc(4 * n), *cb = malloc(4 * n);
  unsigned char *oa = malloc(n), *ob = malloc(n);
  if (!x || !ca || !cb || !oa || !ob) {
    fprintf(stderr, "bench_eb_rule: out of memory for %zu elements\n", n);
    return 1;
  }
  for (size_t i = 0; i < n; i++) x[i] = ((const float *)raw)[i % n0];
  ncclzQuantSpec spec;
  ncclzQuantParams p;
  if (ncclzQuantSpecParse(quant, &spec) != NCCLZ_OK || spec.kind != NCCLZ_QUANT_EB ||
      ncclzQuantResolve(&spec, x, n, NULL, 0, 0, &p) != NCCLZ_OK) {
    fprintf(stderr, "bench_eb_rule: %s: %s\n", quant, spec.kind != NCCLZ_QUANT_EB ? "not an eb: spec" : ncclzLastError());
    return 1;
  }
  const double te = time_rule(0, x, n, &p, (int)runs, ca, oa), tf = time_rule(1, x, n, &p, (int)runs, cb, ob);
  size_t differ = 0, quick = 0;
  const double step = 2.0 * p.abs_eb, inv = 1.0 / step;
  for (size_t i = 0; i < n; i++) {
    differ += oa[i] != ob[i] || (oa[i] == NCCLZ_EB_OK && ca[i] != cb[i]);
    int32_t q;
    quick += (size_t)ncclz_eb_code_fast(x[i], p.bound, step, inv, &q); /* the certificate answered */
  }
  printf("%s %s, %zu elements, median of %ld runs: exact %.2f ns, fast %.2f ns per element (%.2fx); "
         "%.4f%% answered by the fast path's certificate; %zu codes differ\n",
         input, quant, n, (long)runs, 1e9 * te / n, 1e9 * tf / n, te / tf, 100.0 * quick / n, differ);
  free(raw), free(x), free(ca), free(cb), free(oa), free(ob);
  return differ != 0;
}
