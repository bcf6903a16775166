/* ncclz model: the REA break-even surface. For the symbols of one data file (quantized once with
 * the codecs API, then sample-profiled), it prints which coder REA picks and its predicted time
 * for each (bandwidth, message size), using the costs of a calibration profile. */
#include "cli.h"
#include "ncclz/model.h"

#include <cjson/cJSON.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#define VERB "model"

typedef struct {
  const char *profile, *data, *quant_text;
  ncclzDtype dtype;
  unsigned dims[3];
  int ndims;
  ncclzTransportHint hint;
  int json;
} model_opts;

/* Everything the surface is computed from. */
typedef struct {
  ncclzProfile prof;
  ncclzReaConfig cfg;
  ncclzSymbols syms;
  ncclzSurfaceData data;
  char quant_canonical[128];
  const char *profile_name;
} model_inputs;

static void print_help(void) {
  printf(
      "usage: ncclz model [--profile PROFILE.json] --data FILE --quant SPEC [--dtype f32|bf16|f16]\n"
      "                   [--dims AxBxC] [--hint nvlink|shm|net] [--json]\n\n"
      "The REA break-even surface: for the symbols of FILE (quantized with SPEC, then sample-profiled\n"
      "as the runtime does) and the costs of PROFILE, the coder REA picks and its predicted time for\n"
      "each bandwidth (1 GB/s .. 1 TB/s) and message size (4 KiB .. 4 GiB). Messages are cut into\n"
      "frames of the profile's frame_bytes; alpha and the overlap factors come from --hint (net).\n\n"
      "  SPEC: none | eb:abs=X | eb:rel=X[,lorenzo=1d|2d|3d][,fill=V] | qsgd:bits=2|4|8,bucket=N\n"
      "  --json   one JSON object on stdout: points[] with bandwidth_gbps, bytes, coder, time_us,\n"
      "           raw_us, fixedlen_us, huffman_us, admissible[] (the table goes to stderr)\n"
      "  --profile  default $NCCLZ_PROFILE, else the built-in H200 profile (calibrate/profiles/h200-x2.json)\n"
      "Exit status: 0 ok, 2 bad input or usage, 1 runtime failure.\n");
}

static int parse_args(int argc, char **argv, model_opts *o) {
  static const struct option longopts[] = {
      {"profile", required_argument, 0, 'p'}, {"data", required_argument, 0, 'i'},
      {"quant", required_argument, 0, 'q'},   {"dtype", required_argument, 0, 't'},
      {"dims", required_argument, 0, 'd'},    {"hint", required_argument, 0, 'H'},
      {"json", no_argument, 0, 'j'},          {"help", no_argument, 0, 'h'},
      {0, 0, 0, 0}};
  memset(o, 0, sizeof *o);
  o->dtype = NCCLZ_DTYPE_F32;
  o->hint = NCCLZ_HINT_NET;
  int c, v;
  optind = 1;
  while ((c = cli_getopt(argc, argv, "h", longopts)) != -1) {
    switch (c) {
    case 'p': o->profile = optarg; break;
    case 'i': o->data = optarg; break;
    case 'q': o->quant_text = optarg; break;
    case 't':
      if (cli_parse_float_dtype(VERB, optarg, &o->dtype)) return CLI_USAGE;
      break;
    case 'd':
      if ((o->ndims = cli_parse_dims(optarg, o->dims)) < 0) return cli_usage_error(VERB, "--dims: expected AxBxC, got '%s'", optarg);
      break;
    case 'H':
      if ((v = ncclzHintFromName(optarg)) < 0) return cli_usage_error(VERB, "--hint: expected nvlink, shm or net, got '%s'", optarg);
      o->hint = (ncclzTransportHint)v;
      break;
    case 'j': o->json = 1; break;
    case 'h': print_help(); return -1;
    default: return cli_option_error(VERB, c, argv);
    }
  }
  if (optind < argc) return cli_usage_error(VERB, "unexpected argument '%s'", argv[optind]);
  if (!o->data) return cli_usage_error(VERB, "--data FILE is required");
  if (!o->quant_text) return cli_usage_error(VERB, "--quant SPEC is required");
  return CLI_OK;
}

/* Bad data (NaN, out of range, bad spec) is the user's input; running out of memory is not. */
static int quant_failure(ncclzStatus s) {
  if (s == NCCLZ_ERR_NOMEM) return cli_runtime_error(VERB, "%s", ncclzLastError());
  return cli_usage_error(VERB, "%s", ncclzLastError());
}

/* Loads the profile, quantizes the data and samples its symbols frame by frame, as the runtime
 * would sample each frame it sends. */
static int load_inputs(const model_opts *o, model_inputs *in) {
  if (cli_load_profile(VERB, o->profile, &in->prof, &in->profile_name)) return CLI_USAGE;
  ncclzQuantSpec spec;
  if (ncclzQuantSpecParse(o->quant_text, &spec) != NCCLZ_OK) return cli_usage_error(VERB, "--quant: %s", ncclzLastError());
  ncclzQuantSpecFormat(&spec, in->quant_canonical, sizeof in->quant_canonical);
  size_t len = 0, esize = ncclzDtypeSize(o->dtype);
  void *raw = cli_read_file(VERB, o->data, &len);
  if (!raw) return CLI_USAGE;
  if (len == 0 || len % esize) {
    free(raw);
    return cli_usage_error(VERB, "%s: %zu bytes is not a whole number of %s elements", o->data, len, ncclzDtypeName(o->dtype));
  }
  uint32_t dims[3] = {o->dims[0], o->dims[1], o->dims[2]};
  ncclzStatus s = ncclzArrayQuantize(&spec, o->dtype, raw, len / esize, o->ndims > 0 ? dims : NULL, o->ndims, 0, &in->syms);
  free(raw);
  if (s != NCCLZ_OK) return quant_failure(s);

  ncclzReaConfigFromProfile(&in->prof, o->hint, ncclzDataClassOf(&in->syms.qp), &in->cfg);
  memset(&in->data, 0, sizeof in->data);
  size_t frame_syms = in->prof.thresholds.frame_bytes / esize ? in->prof.thresholds.frame_bytes / esize : 1;
  s = ncclzReaSampleProfileFrames(in->syms.sym, in->syms.n, frame_syms, in->cfg.sample_window_bytes,
                                  in->cfg.sample_pieces, &in->data.stats);
  if (s != NCCLZ_OK) return cli_runtime_error(VERB, "%s", ncclzLastError());
  in->data.dtype_bytes = esize;
  in->data.quant = &in->syms.qp;
  ncclzFrameCoderParams(&in->data.coder_params); /* the executor's frames */
  return CLI_OK;
}

/* The surface, row by row (sizes) and column by column (bandwidths). */
typedef struct {
  double *bw;
  uint64_t *sizes;
  size_t n_bw, n_sizes;
  ncclzSurfacePoint *pts; /* n_sizes x n_bw */
} surface;

static int compute_surface(const model_inputs *in, surface *sf) {
  ncclzSurfaceGrid g;
  ncclzSurfaceGridDefault(&g);
  sf->n_bw = ncclzSurfaceBandwidths(&g, NULL, 0);
  sf->n_sizes = ncclzSurfaceSizes(&g, NULL, 0);
  sf->bw = malloc(sf->n_bw * sizeof *sf->bw);
  sf->sizes = malloc(sf->n_sizes * sizeof *sf->sizes);
  sf->pts = malloc(sf->n_bw * sf->n_sizes * sizeof *sf->pts);
  if (!sf->bw || !sf->sizes || !sf->pts) return cli_runtime_error(VERB, "out of memory");
  ncclzSurfaceBandwidths(&g, sf->bw, sf->n_bw);
  ncclzSurfaceSizes(&g, sf->sizes, sf->n_sizes);
  for (size_t i = 0; i < sf->n_sizes; i++)
    for (size_t j = 0; j < sf->n_bw; j++)
      ncclzSurfacePointEval(&in->prof, &in->cfg, &in->data, sf->bw[j], sf->sizes[i], &sf->pts[i * sf->n_bw + j]);
  return CLI_OK;
}

static void free_surface(surface *sf) {
  free(sf->bw);
  free(sf->sizes);
  free(sf->pts);
}

/* Predicted compression ratio of each coder on one full frame of this data. */
static void frame_ratios(const model_inputs *in, double cr[NCCLZ_CODER_COUNT]) {
  uint64_t n = in->prof.thresholds.frame_bytes / in->data.dtype_bytes;
  ncclzReaCandidates cand;
  ncclzReaPredictFrames(&in->data.stats, n, in->data.dtype_bytes, ncclzReaSideBytes(in->data.quant, n),
                        &in->data.coder_params, &cand);
  for (int c = 0; c < NCCLZ_CODER_COUNT; c++) cr[c] = cand.frame_raw_bytes / (double)cand.pred_frame_bytes[c];
}

static void format_size(uint64_t b, char *buf, size_t cap) {
  if (b >= (1ull << 30)) snprintf(buf, cap, "%lluG", (unsigned long long)(b >> 30));
  else if (b >= (1ull << 20)) snprintf(buf, cap, "%lluM", (unsigned long long)(b >> 20));
  else if (b >= (1ull << 10)) snprintf(buf, cap, "%lluK", (unsigned long long)(b >> 10));
  else snprintf(buf, cap, "%llu", (unsigned long long)b);
}

static const char *short_coder(ncclzCoder c) {
  static const char *const names[NCCLZ_CODER_COUNT] = {"raw", "fixed", "huff"};
  return (unsigned)c < NCCLZ_CODER_COUNT ? names[c] : "?";
}

static void print_table(FILE *f, const model_opts *o, const model_inputs *in, const surface *sf) {
  double cr[NCCLZ_CODER_COUNT];
  frame_ratios(in, cr);
  fprintf(f, "REA break-even surface: %s, quant %s, profile %s (%s)\n", o->data, in->quant_canonical, in->profile_name,
          in->prof.meta.device);
  fprintf(f, "hint %s (alpha %.1f us), frames of %llu bytes, predicted CR per frame: fixedlen %.2f, huffman %.2f\n",
          ncclzHintName(in->cfg.hint), in->prof.transport[in->cfg.hint].alpha_us,
          (unsigned long long)in->prof.thresholds.frame_bytes, cr[NCCLZ_CODER_FIXEDLEN], cr[NCCLZ_CODER_HUFFMAN]);
  fprintf(f, "best coder by message size (rows) and bandwidth in GB/s (columns):\n%6s", "bytes");
  for (size_t j = 0; j < sf->n_bw; j++) fprintf(f, " %6.4g", sf->bw[j]);
  fputc('\n', f);
  for (size_t i = 0; i < sf->n_sizes; i++) {
    char sz[16];
    format_size(sf->sizes[i], sz, sizeof sz);
    fprintf(f, "%6s", sz);
    for (size_t j = 0; j < sf->n_bw; j++) fprintf(f, " %6s", short_coder(sf->pts[i * sf->n_bw + j].coder));
    fputc('\n', f);
  }
}

static cJSON *point_json(const ncclzSurfacePoint *p) {
  cJSON *o = cJSON_CreateObject();
  cJSON_AddNumberToObject(o, "bandwidth_gbps", p->bandwidth_gbps);
  cJSON_AddNumberToObject(o, "bytes", (double)p->bytes);
  cJSON_AddStringToObject(o, "coder", ncclzCoderName(p->coder));
  cJSON_AddNumberToObject(o, "time_us", p->time_us);
  cJSON *adm = cJSON_CreateArray();
  for (int c = 0; c < NCCLZ_CODER_COUNT; c++) {
    char key[32];
    snprintf(key, sizeof key, "%s_us", ncclzCoderName((ncclzCoder)c));
    if (p->coder_us[c] < 1e299) cJSON_AddNumberToObject(o, key, p->coder_us[c]);
    else cJSON_AddNullToObject(o, key);
    if (p->verdict[c] == NCCLZ_REA_ADMISSIBLE && (!p->fast_path || c == NCCLZ_CODER_RAW))
      cJSON_AddItemToArray(adm, cJSON_CreateString(ncclzCoderName((ncclzCoder)c)));
  }
  cJSON_AddItemToObject(o, "admissible", adm);
  cJSON_AddBoolToObject(o, "fast_path", p->fast_path);
  return o;
}

static int print_json(const model_opts *o, const model_inputs *in, const surface *sf) {
  double cr[NCCLZ_CODER_COUNT];
  frame_ratios(in, cr);
  cJSON *root = cJSON_CreateObject();
  cJSON_AddStringToObject(root, "profile", in->profile_name);
  cJSON_AddStringToObject(root, "device", in->prof.meta.device);
  cJSON_AddStringToObject(root, "data", o->data);
  cJSON_AddStringToObject(root, "dtype", ncclzDtypeName(o->dtype));
  cJSON_AddStringToObject(root, "quant", in->quant_canonical);
  cJSON_AddStringToObject(root, "data_class", ncclzDataClassName(in->cfg.data_class));
  cJSON_AddStringToObject(root, "hint", ncclzHintName(in->cfg.hint));
  cJSON_AddNumberToObject(root, "n_elems", (double)in->syms.n);
  cJSON_AddNumberToObject(root, "frame_bytes", (double)in->prof.thresholds.frame_bytes);
  cJSON_AddNumberToObject(root, "cr_fixedlen", cr[NCCLZ_CODER_FIXEDLEN]);
  cJSON_AddNumberToObject(root, "cr_huffman", cr[NCCLZ_CODER_HUFFMAN]);
  cJSON *pts = cJSON_AddArrayToObject(root, "points");
  for (size_t k = 0; k < sf->n_bw * sf->n_sizes; k++) cJSON_AddItemToArray(pts, point_json(&sf->pts[k]));
  return cli_emit_json(VERB, root);
}

int cli_model(int argc, char **argv) {
  model_opts o;
  int rc = parse_args(argc, argv, &o);
  if (rc < 0) return CLI_OK;  /* --help */
  if (rc != CLI_OK) return rc;
  model_inputs *in = calloc(1, sizeof *in);
  if (!in) return cli_runtime_error(VERB, "out of memory");
  surface sf;
  memset(&sf, 0, sizeof sf);
  rc = load_inputs(&o, in);
  if (rc == CLI_OK) rc = compute_surface(in, &sf);
  if (rc == CLI_OK) {
    print_table(o.json ? stderr : stdout, &o, in, &sf);
    if (o.json) rc = print_json(&o, in, &sf);
  }
  free_surface(&sf);
  ncclzSymbolsFree(&in->syms);
  free(in);
  return rc;
}
