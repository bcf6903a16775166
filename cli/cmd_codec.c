/* ncclz codec: quantize and code a file, verify the round trip, and report CR, error and speed.
 * Also `--decode FRAMES --output FILE`, which turns a stream back into data. */
#include "cli.h"
#include "ncclz/codecs.h"

#include <cjson/cJSON.h>
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifdef NCCLZ_HAVE_CUDA
#include "ncclz/codecs_cuda.h"
#endif

#define VERB "codec"

typedef struct {
  const char *input, *out, *decode, *output, *compare, *quant_text, *profile, *hint;
  cli_rea *rea; /* --coder auto */
  ncclzDtype dtype;
  unsigned dims[3];
  int ndims;
  ncclzQuantSpec quant;
  int coder; /* ncclzCoder, or -1 for auto */
  size_t chunk;
  int gpu, json, repeat;
  unsigned segment; /* HUFFMAN symbols per segment; 0: the coder's default */
} codec_opts;

/* Results of one run, in the contract's JSON names. */
typedef struct {
  size_t input_bytes, quant_bytes, output_bytes, frames, side_bytes;
  double max_abs_err, error_bound, encode_gbps, decode_gbps;
  unsigned coder_mix[NCCLZ_CODER_COUNT];
  int lossless_ok;
  ncclzSymbolStats stats;
} codec_result;

static void print_help(void) {
  printf(
      "usage: ncclz codec --input FILE [--dtype f32|bf16|f16] [--dims AxBxC] [--quant SPEC]\n"
      "                   --coder raw|fixedlen|huffman|auto [--chunk BYTES] [--device cpu|gpu]\n"
      "                   [--out FRAMES] [--repeat N] [--segment N] [--profile PROFILE.json] [--hint net|shm|nvlink]\n"
      "                   [--json]\n"
      "       ncclz codec --decode FRAMES --output FILE [--compare ORIGINAL] [--json]\n\n"
      "Quantizes FILE once, codes the symbols in frames of --chunk input bytes (default 4M),\n"
      "decodes them again and checks the round trip and the error bound on every element.\n"
      "The result table goes to stdout (to stderr with --json).\n\n"
      "  --quant    SPEC, default none (lossless):\n"
      "             none | eb:abs=X | eb:rel=X[,lorenzo=1d|2d|3d][,fill=V] | qsgd:bits=2|4|8,bucket=N[,seed=S]\n"
      "  --dims     shape in C order (last fastest), needed for 2D/3D Lorenzo\n"
      "  --repeat   timed repetitions; the median is reported (default 3)\n"
      "  --segment  HUFFMAN symbols per independently decoded segment, 1..4096 (default 512;\n"
      "             the executor's frames use 256)\n"
      "  --profile  calibration profile for --coder auto, the REA's costs (default $NCCLZ_PROFILE,\n"
      "             else the built-in H200 profile)\n"
      "  --hint     the transport the frames are meant for (default net)\n"
      "  --json     one JSON object on stdout (input_bytes, quant_bytes, output_bytes, cr, cr_quant,\n"
      "             max_abs_err, error_bound, encode_gbps, decode_gbps, coder_mix, lossless_ok, ...)\n"
      "  --compare  with --decode: the original data; every decoded element must be within the\n"
      "             stream's error bound of it (bit for bit for none); prints max_abs_err, exit 1 if not\n"
      "Exit status: 0 ok, 2 bad input or usage, 1 runtime failure.\n");
}

static int parse_args(int argc, char **argv, codec_opts *o) {
  static const struct option longopts[] = {
      {"input", required_argument, 0, 'i'}, {"dtype", required_argument, 0, 't'},
      {"dims", required_argument, 0, 'd'},  {"quant", required_argument, 0, 'q'},
      {"coder", required_argument, 0, 'c'}, {"chunk", required_argument, 0, 'k'},
      {"device", required_argument, 0, 'D'}, {"out", required_argument, 0, 'o'},
      {"decode", required_argument, 0, 'x'}, {"output", required_argument, 0, 'O'},
      {"repeat", required_argument, 0, 'r'}, {"json", no_argument, 0, 'j'},
      {"profile", required_argument, 0, 'P'}, {"hint", required_argument, 0, 'H'},
      {"segment", required_argument, 0, 's'}, {"compare", required_argument, 0, 'C'},
      {"help", no_argument, 0, 'h'},          {0, 0, 0, 0}};
  memset(o, 0, sizeof *o);
  o->coder = -2;
  o->chunk = 4u << 20;
  o->repeat = 3;
  o->quant_text = "none";
  o->hint = "net";
  int c;
  optind = 1;
  while ((c = cli_getopt(argc, argv, "h", longopts)) != -1) {
    switch (c) {
    case 'i': o->input = optarg; break;
    case 't':
      if (cli_parse_float_dtype(VERB, optarg, &o->dtype)) return CLI_USAGE;
      break;
    case 'd':
      if ((o->ndims = cli_parse_dims(optarg, o->dims)) < 0) return cli_usage_error(VERB, "--dims: expected AxBxC, got '%s'", optarg);
      break;
    case 'q': o->quant_text = optarg; break;
    case 'c':
      o->coder = strcmp(optarg, "auto") ? ncclzCoderFromName(optarg) : -1;
      if (o->coder == -2 || (o->coder < 0 && strcmp(optarg, "auto")))
        return cli_usage_error(VERB, "--coder: expected raw, fixedlen, huffman or auto, got '%s'", optarg);
      break;
    case 'k':
      if (!(o->chunk = (size_t)cli_parse_size(optarg))) return cli_usage_error(VERB, "--chunk: expected a byte size like 4M, got '%s'", optarg);
      break;
    case 'D':
      if (strcmp(optarg, "cpu") && strcmp(optarg, "gpu")) return cli_usage_error(VERB, "--device: expected cpu or gpu, got '%s'", optarg);
      o->gpu = !strcmp(optarg, "gpu");
      break;
    case 'o': o->out = optarg; break;
    case 'x': o->decode = optarg; break;
    case 'O': o->output = optarg; break;
    case 'C': o->compare = optarg; break;
    case 'r':
      if (cli_parse_int(VERB, "--repeat", optarg, 1, 1000000, &o->repeat) != CLI_OK) return CLI_USAGE;
      break;
    case 'j': o->json = 1; break;
    case 'P': o->profile = optarg; break;
    case 'H': o->hint = optarg; break;
    case 's': {
      int v;
      if (cli_parse_int(VERB, "--segment", optarg, 1, 4096, &v) != CLI_OK) return CLI_USAGE;
      o->segment = (unsigned)v;
      break;
    }
    case 'h': print_help(); return -1;
    default: return cli_option_error(VERB, c, argv);
    }
  }
  if (optind < argc) return cli_usage_error(VERB, "unexpected argument '%s'", argv[optind]);
  return CLI_OK;
}

/* Largest error each element may have: the EB bound, or for QSGD one level (scale / s) of its bucket. */
static double error_bound_of(const ncclzSymbols *s) {
  if (s->qp.kind == NCCLZ_QUANT_EB) return s->qp.bound;
  if (s->qp.kind == NCCLZ_QUANT_NONE) return 0;
  double levels = ncclzQsgdLevels(&s->qp), worst = 0;
  for (size_t b = 0; b < s->n_scales; b++)
    if (s->scales[b] / levels > worst) worst = s->scales[b] / levels;
  return worst;
}

/* Max |x - y| over all elements; none must come back bit for bit and fill values exactly (else
 * +inf). A fill position comes back as the fill value itself: with fill=0, -0.0 matches and
 * returns as +0.0 (FORMAT.md), so it is compared by value. */
static double max_abs_error(const ncclzSymbols *s, const float *x, const float *y) {
  double worst = 0;
  for (size_t i = 0; i < s->n; i++) {
    if (s->qp.kind == NCCLZ_QUANT_NONE) {
      if (memcmp(x + i, y + i, sizeof(float)) != 0) return INFINITY;
      continue;
    }
    if (s->qp.has_fill && x[i] == s->qp.fill_value) {
      if (y[i] != s->qp.fill_value) return INFINITY;
      continue;
    }
    double e = fabs((double)x[i] - (double)y[i]);
    if (!(e <= worst)) worst = e; /* also catches NaN */
  }
  return worst;
}

static int same_symbols(const ncclzSymbols *a, const ncclzSymbols *b) {
  if (a->n != b->n || memcmp(a->sym, b->sym, a->n * sizeof *a->sym)) return 0;
  return a->n_scales == b->n_scales && (!a->n_scales || !memcmp(a->scales, b->scales, a->n_scales * sizeof(float)));
}

static int write_file(const char *path, const void *p, size_t n) {
  return ncclzWriteFile(NULL, path, p, n) ? cli_runtime_error(VERB, "%s", ncclzLastError()) : CLI_OK;
}

/* One timed encode (quantize + frames) and decode (frames + reconstruct) of the whole input. */
typedef struct {
  ncclzSymbols sym, back;
  uint8_t *stream;
  size_t stream_len;
  float *y;
} codec_pass;

static void pass_free(codec_pass *p) {
  ncclzSymbolsFree(&p->sym);
  ncclzSymbolsFree(&p->back);
  free(p->stream);
  free(p->y);
  memset(p, 0, sizeof *p);
}

static ncclzStatus run_pass(const codec_opts *o, const void *raw, size_t n, codec_pass *p,
                            codec_result *r, double *t_enc, double *t_dec) {
  uint32_t dims[3] = {o->dims[0], o->dims[1], o->dims[2]};
  ncclzCoderParams cp;
  ncclzCoderParamsDefault(&cp);
  if (o->segment) cp.huffman_segment = o->segment;
  memset(r->coder_mix, 0, sizeof r->coder_mix);
  double t0 = ncclzNowSeconds();
  ncclzStatus st = ncclzArrayQuantize(&o->quant, o->dtype, raw, n, dims, o->ndims, 0, &p->sym);
  if (st != NCCLZ_OK) return st;
  size_t fs = ncclzFrameSymbols(&p->sym, o->chunk);
  ncclzCoder fixed = o->coder < 0 ? NCCLZ_CODER_RAW : (ncclzCoder)o->coder;
  st = ncclzStreamEncode(&p->sym, fixed, o->rea ? cli_rea_encode : NULL, o->rea, fs, &cp, &p->stream, &p->stream_len, r->coder_mix);
  double t1 = ncclzNowSeconds();
  if (st != NCCLZ_OK) return st;
  if (!(p->y = malloc((n ? n : 1) * sizeof(float)))) return ncclzSetError(NCCLZ_ERR_NOMEM, "out of memory");
  st = ncclzStreamDecode(p->stream, p->stream_len, &p->back);
  if (st == NCCLZ_OK) st = ncclzArrayReconstruct(&p->back, p->y);
  *t_enc = t1 - t0;
  *t_dec = ncclzNowSeconds() - t1;
  r->frames = (n + fs - 1) / fs;
  return st;
}

static void fill_result(const codec_pass *p, const float *x, size_t in_bytes, codec_result *r) {
  r->input_bytes = in_bytes;
  r->output_bytes = p->stream_len;
  ncclzSymbolStatsCompute(p->sym.sym, p->sym.n, &r->stats);
  r->side_bytes = p->sym.n_scales * sizeof(float);
  r->quant_bytes = (size_t)ceil(r->stats.global_width_bits / 8) + r->side_bytes;
  r->lossless_ok = same_symbols(&p->sym, &p->back);
  r->error_bound = error_bound_of(&p->sym);
  r->max_abs_err = max_abs_error(&p->sym, x, p->y);
}

static double ratio(double a, double b) { return b > 0 ? a / b : 0; }

static void print_json(const codec_opts *o, const codec_result *r, size_t n) {
  cJSON *j = cJSON_CreateObject(), *mix = cJSON_CreateObject();
  /* The yardsticks code the same symbols and ship the same side data (QSGD scales) as the coders. */
  double in = (double)r->input_bytes, in_bits = 8.0 * in, side_bits = 8.0 * (double)r->side_bytes;
  cJSON_AddStringToObject(j, "input", o->input);
  cJSON_AddStringToObject(j, "dtype", ncclzDtypeName(o->dtype));
  cJSON_AddNumberToObject(j, "elements", (double)n);
  cJSON_AddStringToObject(j, "quant", o->quant_text);
  cJSON_AddStringToObject(j, "coder", o->coder < 0 ? "auto" : ncclzCoderName((ncclzCoder)o->coder));
  cJSON_AddStringToObject(j, "device", o->gpu ? "gpu" : "cpu");
  cJSON_AddNumberToObject(j, "chunk", (double)o->chunk);
  cJSON_AddNumberToObject(j, "frames", (double)r->frames);
  cJSON_AddNumberToObject(j, "input_bytes", in);
  cJSON_AddNumberToObject(j, "quant_bytes", (double)r->quant_bytes);
  cJSON_AddNumberToObject(j, "output_bytes", (double)r->output_bytes);
  cJSON_AddNumberToObject(j, "cr", ratio(in, (double)r->output_bytes));
  cJSON_AddNumberToObject(j, "cr_quant", ratio(in, (double)r->quant_bytes));
  cJSON_AddNumberToObject(j, "entropy_cr", ratio(in_bits, r->stats.entropy_bits + side_bits));
  cJSON_AddNumberToObject(j, "huffman_opt_cr", ratio(in_bits, r->stats.huffman_opt_bits + side_bits));
  cJSON_AddNumberToObject(j, "fixedlen_ideal_cr", ratio(in_bits, r->stats.fixedlen_ideal_bits + side_bits));
  cJSON_AddNumberToObject(j, "side_bytes", (double)r->side_bytes);
  cJSON_AddNumberToObject(j, "max_abs_err", r->max_abs_err);
  cJSON_AddNumberToObject(j, "error_bound", r->error_bound);
  cJSON_AddNumberToObject(j, "encode_gbps", r->encode_gbps);
  cJSON_AddNumberToObject(j, "decode_gbps", r->decode_gbps);
  for (int c = 0; c < NCCLZ_CODER_COUNT; c++) cJSON_AddNumberToObject(mix, ncclzCoderName((ncclzCoder)c), r->coder_mix[c]);
  cJSON_AddItemToObject(j, "coder_mix", mix);
  cJSON_AddBoolToObject(j, "lossless_ok", r->lossless_ok);
  cJSON_AddBoolToObject(j, "bound_ok", r->max_abs_err <= r->error_bound);
  cli_emit_json(VERB, j);
}

/* The human table: stdout, or stderr when stdout carries the --json object. */
static void print_human(const codec_opts *o, const codec_result *r) {
  FILE *f = o->json ? stderr : stdout;
  double in = (double)r->input_bytes;
  fprintf(f, "%-28s %-9s %10s %10s %8s %8s %12s %12s %9s %9s %s\n", "quant", "coder", "in_bytes",
          "out_bytes", "cr", "cr_quant", "max_err", "bound", "enc_GB/s", "dec_GB/s", "lossless");
  fprintf(f, "%-28.28s %-9s %10zu %10zu %8.3f %8.3f %12.4g %12.4g %9.3f %9.3f %s\n", o->quant_text,
          o->coder < 0 ? "auto" : ncclzCoderName((ncclzCoder)o->coder), r->input_bytes, r->output_bytes,
          ratio(in, (double)r->output_bytes), ratio(in, (double)r->quant_bytes), r->max_abs_err, r->error_bound,
          r->encode_gbps, r->decode_gbps, r->lossless_ok ? "yes" : "NO");
}

static int status_exit(ncclzStatus st) {
  int usage = st == NCCLZ_ERR_ARG || st == NCCLZ_ERR_CORRUPT || st == NCCLZ_ERR_NONFINITE || st == NCCLZ_ERR_RANGE;
  return usage ? cli_usage_error(VERB, "%s", ncclzLastError()) : cli_runtime_error(VERB, "%s", ncclzLastError());
}

static int run_encode_cpu(const codec_opts *o, const void *raw, size_t n, size_t in_bytes) {
  float *x = malloc((n ? n : 1) * sizeof *x);
  double *te = malloc((size_t)o->repeat * sizeof *te), *td = malloc((size_t)o->repeat * sizeof *td);
  codec_result r = {0};
  codec_pass p = {0};
  int rc = CLI_OK;
  if (!x || !te || !td) rc = cli_runtime_error(VERB, "out of memory");
  if (rc == CLI_OK) ncclzToFloat(raw, o->dtype, n, x);
  for (int k = 0; rc == CLI_OK && k < o->repeat; k++) {
    pass_free(&p);
    ncclzStatus st = run_pass(o, raw, n, &p, &r, &te[k], &td[k]);
    if (st != NCCLZ_OK) rc = status_exit(st);
  }
  if (rc == CLI_OK) {
    r.encode_gbps = in_bytes / ncclzMedian(te, (size_t)o->repeat) / 1e9;
    r.decode_gbps = in_bytes / ncclzMedian(td, (size_t)o->repeat) / 1e9;
    fill_result(&p, x, in_bytes, &r);
    if (o->out) rc = write_file(o->out, p.stream, p.stream_len);
    print_human(o, &r);
    if (o->json) print_json(o, &r, n);
    if (rc == CLI_OK && (!r.lossless_ok || !(r.max_abs_err <= r.error_bound)))
      rc = cli_runtime_error(VERB, "round trip failed: lossless=%d max_abs_err=%g bound=%g", r.lossless_ok,
                             r.max_abs_err, r.error_bound);
  }
  pass_free(&p);
  free(x);
  free(te);
  free(td);
  return rc;
}

#ifdef NCCLZ_HAVE_CUDA
/* The CPU reference's stream of the same input and coder, to hold the GPU's frames against. */
static ncclzStatus cpu_reference(const codec_opts *o, const void *raw, size_t n, codec_pass *p, codec_result *r) {
  double te, td;
  return run_pass(o, raw, n, p, r, &te, &td);
}

/* --device gpu: the CUDA codecs timed with CUDA events (warm-up, median of 20 runs); their
 * frames must be byte-identical to the C reference's, and their decode must give the symbols back.
 * --coder auto: the REA on the GPU, every frame planned by the device selector, encoded with its
 * coder and post-checked inside the timed encode; the reference is the host's REA on each frame. */
static int run_encode_gpu(const codec_opts *o, const void *raw, size_t n, size_t in_bytes) {
  if (o->dtype != NCCLZ_DTYPE_F32) return cli_usage_error(VERB, "--device gpu takes f32 input");
  codec_pass p = {0};
  codec_result r = {0};
  ncclzStatus st = cpu_reference(o, raw, n, &p, &r);
  if (st != NCCLZ_OK) {
    pass_free(&p);
    return status_exit(st);
  }
  ncclzCoderParams cp;
  ncclzCoderParamsDefault(&cp);
  if (o->segment) cp.huffman_segment = o->segment;
  ncclzCudaBenchResult res;
  uint8_t *frames = NULL;
  size_t frames_len = 0;
  const uint32_t fs = (uint32_t)ncclzFrameSymbols(&p.sym, o->chunk);
  ncclzCudaCoderChooser chooser;
  cli_rea_gpu *rg = o->coder < 0 ? cli_rea_gpu_open(VERB, o->rea, &p.sym.qp, &cp, n, fs, &chooser) : NULL;
  if (o->coder < 0 && !rg) {
    pass_free(&p);
    return CLI_RUNTIME;
  }
  int32_t *gsym = malloc((n ? n : 1) * sizeof *gsym);
  const ncclzCoder coder = o->coder < 0 ? NCCLZ_CODER_RAW : (ncclzCoder)o->coder; /* auto: ignored */
  st = gsym ? ncclzCudaCodecBench(raw, n, &p.sym.qp, o->quant.eb_is_rel, o->quant.eb, coder, rg ? &chooser : NULL, 1, &cp,
                                  fs, 20, &res, &frames, &frames_len, gsym)
            : ncclzSetError(NCCLZ_ERR_NOMEM, "out of memory");
  cli_rea_gpu_close(rg);
  int rc = CLI_OK;
  if (st != NCCLZ_OK) {
    rc = cli_runtime_error(VERB, "--device gpu: %s", ncclzLastError());
  } else {
    fill_result(&p, raw, in_bytes, &r);
    int same = frames_len + NCCLZ_STREAM_HEADER_BYTES == p.stream_len &&
               !memcmp(frames, p.stream + NCCLZ_STREAM_HEADER_BYTES, frames_len) && !memcmp(gsym, p.sym.sym, n * 4);
    r.lossless_ok = res.lossless_ok && !res.decode_status && same;
    r.max_abs_err = res.max_abs_err > r.max_abs_err ? res.max_abs_err : r.max_abs_err;
    r.encode_gbps = res.encode_gbps;
    r.decode_gbps = res.decode_gbps;
    print_human(o, &r);
    if (o->json) print_json(o, &r, n);
    if (!same) rc = cli_runtime_error(VERB, "--device gpu: GPU frames differ from the C reference's");
  }
  free(frames);
  free(gsym);
  pass_free(&p);
  return rc;
}
#endif

static int run_encode(codec_opts *o) {
  if (!o->input) return cli_usage_error(VERB, "--input FILE is required (see --help)");
  if (o->compare || o->output) return cli_usage_error(VERB, "--compare and --output go with --decode FRAMES");
  if (o->coder == -2) return cli_usage_error(VERB, "--coder is required: raw, fixedlen, huffman or auto");
  if (ncclzQuantSpecParse(o->quant_text, &o->quant) != NCCLZ_OK)
    return cli_usage_error(VERB, "--quant: %s", ncclzLastError());
  if (o->coder == -1) {
    if (!(o->rea = cli_rea_open(VERB, o->profile, o->hint))) return CLI_USAGE;
  }
#ifndef NCCLZ_HAVE_CUDA
  if (o->gpu) return cli_runtime_error(VERB, "--device gpu: this ncclz was built without CUDA (configure with nvcc on the PATH)");
#endif
  size_t len = 0, dsz = ncclzDtypeSize(o->dtype);
  void *raw = cli_read_file(VERB, o->input, &len);
  if (!raw) return CLI_USAGE;
  int rc;
  if (len % dsz) rc = cli_usage_error(VERB, "'%s' holds %zu bytes, not a whole number of %s elements", o->input, len, ncclzDtypeName(o->dtype));
#ifdef NCCLZ_HAVE_CUDA
  else if (o->gpu) rc = run_encode_gpu(o, raw, len / dsz, len);
#endif
  else rc = run_encode_cpu(o, raw, len / dsz, len);
  free(raw);
  cli_rea_close(o->rea);
  return rc;
}

/* quant none is lossless: the data's bits come straight from the symbols. */
static void symbols_to_bits(const ncclzSymbols *s, void *out) {
  if (ncclzDtypeSize(s->dtype) == 4) {
    memcpy(out, s->sym, s->n * 4);
    return;
  }
  uint16_t *h = out;
  for (size_t i = 0; i < s->n; i++) h[i] = (uint16_t)s->sym[i];
}

/* The bound a decoded stream meets against its original: what the encoder guaranteed. The stream
 * keeps EB's half-step abs_eb, and bound = abs_eb + half the float32 spacing at 2 max|x| over the
 * finite, non-fill values (FORMAT.md); QSGD, one level of the widest bucket; none, 0. */
static double stream_bound(const ncclzSymbols *s, const float *x) {
  if (s->qp.kind != NCCLZ_QUANT_EB) return error_bound_of(s);
  float m = 0;
  for (size_t i = 0; i < s->n; i++)
    if (!(s->qp.has_fill && x[i] == s->qp.fill_value) && fabsf(x[i]) < NCCLZ_EB_HUGE_VALUE && fabsf(x[i]) > m) m = fabsf(x[i]);
  float twice = 2 * m;
  return s->qp.abs_eb + ((double)nextafterf(twice, INFINITY) - (double)twice) / 2;
}

/* --compare: reads the original (the stream's dtype) into *orig as floats; CLI_OK or a one-line exit. */
static int read_original(const codec_opts *o, const ncclzSymbols *s, float **orig) {
  size_t len = 0, dsz = ncclzDtypeSize(s->dtype);
  void *raw = cli_read_file(VERB, o->compare, &len);
  if (!raw) return CLI_USAGE;
  int rc = CLI_OK;
  if (len != s->n * dsz)
    rc = cli_usage_error(VERB, "--compare: '%s' holds %zu bytes, the stream %zu %s elements (%zu bytes)", o->compare, len,
                         s->n, ncclzDtypeName(s->dtype), s->n * dsz);
  else if (!(*orig = malloc((s->n ? s->n : 1) * sizeof **orig)))
    rc = cli_runtime_error(VERB, "out of memory");
  else
    ncclzToFloat(raw, s->dtype, s->n, *orig);
  free(raw);
  return rc;
}

/* The decode report: a line on stdout (stderr with --json) and, with --json, the object. */
static void report_decode(const codec_opts *o, const ncclzSymbols *s, double max_err, double bound) {
  FILE *f = o->json ? stderr : stdout;
  fprintf(f, "ncclz codec: decoded %zu %s elements into %s", s->n, ncclzDtypeName(s->dtype), o->output);
  if (o->compare) fprintf(f, "; against %s: max_abs_err %.6g, bound %.6g: %s", o->compare, max_err, bound, max_err <= bound ? "ok" : "EXCEEDED");
  fputc('\n', f);
  if (!o->json) return;
  cJSON *j = cJSON_CreateObject();
  cJSON_AddStringToObject(j, "decode", o->decode);
  cJSON_AddStringToObject(j, "output", o->output);
  cJSON_AddStringToObject(j, "dtype", ncclzDtypeName(s->dtype));
  cJSON_AddNumberToObject(j, "elements", (double)s->n);
  if (o->compare) {
    cJSON_AddStringToObject(j, "compare", o->compare);
    cJSON_AddNumberToObject(j, "max_abs_err", max_err);
    cJSON_AddNumberToObject(j, "error_bound", bound);
    cJSON_AddBoolToObject(j, "bound_ok", max_err <= bound);
  }
  cli_emit_json(VERB, j);
}

/* Reconstructs the decoded symbols, writes them, and checks them against --compare. */
static int write_decoded(const codec_opts *o, const ncclzSymbols *s) {
  float *x = malloc((s->n ? s->n : 1) * sizeof *x), *orig = NULL;
  void *out = malloc((s->n ? s->n : 1) * ncclzDtypeSize(s->dtype));
  ncclzStatus st;
  int rc = CLI_OK;
  if (!x || !out) rc = cli_runtime_error(VERB, "out of memory");
  else if ((st = ncclzArrayReconstruct(s, x)) != NCCLZ_OK)
    rc = st == NCCLZ_ERR_NOMEM ? status_exit(st) : cli_usage_error(VERB, "'%s': %s", o->decode, ncclzLastError());
  else if (o->compare) rc = read_original(o, s, &orig);
  if (rc == CLI_OK) {
    if (s->qp.kind == NCCLZ_QUANT_NONE) symbols_to_bits(s, out);
    else ncclzFromFloat(x, s->n, s->dtype, out);
    rc = write_file(o->output, out, s->n * ncclzDtypeSize(s->dtype));
  }
  if (rc == CLI_OK) {
    double max_err = orig ? max_abs_error(s, orig, x) : 0, bound = orig ? stream_bound(s, orig) : 0;
    report_decode(o, s, max_err, bound);
    if (orig && !(max_err <= bound))
      rc = cli_runtime_error(VERB, "--compare: max_abs_err %g exceeds the stream's bound %g", max_err, bound);
  }
  free(orig);
  free(x);
  free(out);
  return rc;
}

static int run_decode(const codec_opts *o) {
  if (!o->output) return cli_usage_error(VERB, "--decode needs --output FILE");
  size_t len = 0;
  uint8_t *stream = cli_read_file(VERB, o->decode, &len);
  if (!stream) return CLI_USAGE;
  ncclzSymbols s;
  ncclzStatus st = ncclzStreamDecode(stream, len, &s);
  free(stream);
  if (st != NCCLZ_OK) return cli_usage_error(VERB, "'%s': %s", o->decode, ncclzLastError());
  int rc = write_decoded(o, &s);
  ncclzSymbolsFree(&s);
  return rc;
}

int cli_codec(int argc, char **argv) {
  codec_opts o;
  int rc = parse_args(argc, argv, &o);
  if (rc != CLI_OK) return rc < 0 ? CLI_OK : rc;
  return o.decode ? run_decode(&o) : run_encode(&o);
}
