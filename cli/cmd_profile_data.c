/* ncclz profile-data: CR per coder and frame size for one rank's symbols and for the sums of
 * 2..N ranks' symbols: what the simulator needs to know about the data. */
#include "cli.h"
#include "ncclz/calibrate.h"

#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#define VERB "profile-data"

typedef struct {
  const char *inputs[NCCLZ_DP_MAX_RANKS], *quant_text, *out;
  uint32_t n_inputs, ranks;
  ncclzDtype dtype;
  unsigned dims[3];
  int ndims;
  uint64_t frames[NCCLZ_DP_MAX_FRAMES];
  uint32_t n_frames;
} pd_opts;

static void print_help(void) {
  printf("usage: ncclz profile-data --input FILE [--input FILE ...] --quant SPEC [--ranks N] [--dims AxBxC]\n"
         "                          [--dtype f32|bf16|f16] [--frames 64K,1M,4M] --out DATA.json\n\n"
         "Quantizes each rank's data with the step all ranks agree on, sums the integer codes of\n"
         "1..N ranks (as a reduction does) and codes every partial sum with RAW, FIXEDLEN and HUFFMAN\n"
         "at each frame size. One --input per rank; with a single --input and --ranks N, the file is\n"
         "cut into N disjoint slices (along the first dimension when --dims is given).\n"
         "Default frame sizes: 64K,256K,1M,4M,16M. Schema: docs/data-profile.md.\n");
}

/* Comma-separated byte sizes (ncclzParseBytes each); an empty item or a list too long is refused. */
static int parse_frames(const char *s, pd_opts *o) {
  o->n_frames = 0;
  for (const char *p = s;; p++) {
    size_t len = strcspn(p, ",");
    char item[32];
    if (len == 0 || len >= sizeof item || o->n_frames == NCCLZ_DP_MAX_FRAMES) return -1;
    memcpy(item, p, len);
    item[len] = '\0';
    if (!(o->frames[o->n_frames++] = cli_parse_size(item))) return -1;
    p += len;
    if (!*p) return 0;
  }
}

static int parse_args(int argc, char **argv, pd_opts *o) {
  static const struct option longopts[] = {
      {"input", required_argument, 0, 'i'}, {"quant", required_argument, 0, 'q'},
      {"ranks", required_argument, 0, 'n'}, {"dims", required_argument, 0, 'd'},
      {"dtype", required_argument, 0, 't'}, {"frames", required_argument, 0, 'f'},
      {"out", required_argument, 0, 'o'},   {"help", no_argument, 0, 'h'},
      {0, 0, 0, 0}};
  memset(o, 0, sizeof *o);
  parse_frames("64K,256K,1M,4M,16M", o);
  int c, v;
  optind = 1;
  while ((c = cli_getopt(argc, argv, "h", longopts)) != -1) {
    switch (c) {
    case 'i':
      if (o->n_inputs == NCCLZ_DP_MAX_RANKS) return cli_usage_error(VERB, "at most %d --input files", NCCLZ_DP_MAX_RANKS);
      o->inputs[o->n_inputs++] = optarg;
      break;
    case 'q': o->quant_text = optarg; break;
    case 'n':
      if (cli_parse_int(VERB, "--ranks", optarg, 1, NCCLZ_DP_MAX_RANKS, &v) != CLI_OK) return CLI_USAGE;
      o->ranks = (uint32_t)v;
      break;
    case 'd':
      if ((o->ndims = cli_parse_dims(optarg, o->dims)) < 0) return cli_usage_error(VERB, "--dims: expected AxBxC, got '%s'", optarg);
      break;
    case 't':
      if (cli_parse_float_dtype(VERB, optarg, &o->dtype)) return CLI_USAGE;
      break;
    case 'f':
      if (parse_frames(optarg, o)) return cli_usage_error(VERB, "--frames: expected sizes like 64K,1M (at most %d)", NCCLZ_DP_MAX_FRAMES);
      break;
    case 'o': o->out = optarg; break;
    case 'h': print_help(); return -1;
    default: return cli_option_error(VERB, c, argv);
    }
  }
  if (optind < argc) return cli_usage_error(VERB, "unexpected argument '%s'", argv[optind]);
  if (!o->n_inputs || !o->quant_text || !o->out) return cli_usage_error(VERB, "--input, --quant and --out are required (see --help)");
  if (o->n_inputs > 1 && o->ranks && o->ranks != o->n_inputs)
    return cli_usage_error(VERB, "--ranks %u does not match the %u --input files", o->ranks, o->n_inputs);
  if (!o->ranks) o->ranks = o->n_inputs;
  return CLI_OK;
}

/* Reads every rank's data: one file each, or disjoint slices of one file. *n: elements per rank. */
static int load_ranks(pd_opts *o, void **bufs, const void **ranks, size_t *n) {
  size_t dsz = ncclzDtypeSize(o->dtype), len = 0;
  for (uint32_t i = 0; i < o->n_inputs; i++) {
    if (!(bufs[i] = cli_read_file(VERB, o->inputs[i], &len))) return CLI_USAGE;
    if (len % dsz) return cli_usage_error(VERB, "'%s' is not a whole number of %s elements", o->inputs[i], ncclzDtypeName(o->dtype));
    size_t ni = len / dsz / (o->n_inputs == 1 ? o->ranks : 1);
    if (i && ni != *n) return cli_usage_error(VERB, "'%s' holds %zu elements, '%s' %zu: ranks must match", o->inputs[i], ni, o->inputs[0], *n);
    *n = ni;
  }
  if (o->n_inputs == 1 && o->ndims > 0) {
    if (o->dims[0] % o->ranks) return cli_usage_error(VERB, "--dims: %u is not divisible by --ranks %u", o->dims[0], o->ranks);
    o->dims[0] /= o->ranks;
  }
  for (uint32_t r = 0; r < o->ranks; r++)
    ranks[r] = o->n_inputs == 1 ? (const char *)bufs[0] + r * *n * dsz : bufs[r];
  return CLI_OK;
}

static int write_profile(const pd_opts *o, const ncclzDataProfile *dp) {
  char *s = ncclzDataProfileToJson(dp, o->inputs, o->n_inputs);
  int rc = s ? cli_write_text(VERB, o->out, s) : cli_runtime_error(VERB, "cannot write '%s'", o->out);
  free(s);
  if (rc != CLI_OK) return rc;
  fprintf(stderr, "%6s %12s %9s %9s %9s %9s\n", "ranks", "frame_bytes", "raw", "fixedlen", "huffman", "entropy");
  for (uint32_t r = 0; r < dp->n_rows; r++)
    for (uint32_t f2 = 0; f2 < dp->row[r].n_frames; f2++) {
      const ncclzDataPoint *p = &dp->row[r].at[f2];
      fprintf(stderr, "%6u %12llu %9.3f %9.3f %9.3f %9.3f\n", dp->row[r].ranks, (unsigned long long)p->frame_bytes,
              p->cr[0], p->cr[1], p->cr[2], p->entropy_cr);
    }
  return CLI_OK;
}

int cli_profile_data(int argc, char **argv) {
  pd_opts o;
  int rc = parse_args(argc, argv, &o);
  if (rc != CLI_OK) return rc < 0 ? CLI_OK : rc;
  ncclzQuantSpec spec;
  if (ncclzQuantSpecParse(o.quant_text, &spec) != NCCLZ_OK) return cli_usage_error(VERB, "--quant: %s", ncclzLastError());
  void *bufs[NCCLZ_DP_MAX_RANKS] = {0};
  const void *ranks[NCCLZ_DP_MAX_RANKS] = {0};
  size_t n = 0;
  rc = load_ranks(&o, bufs, ranks, &n);
  ncclzDataProfile *dp = rc == CLI_OK ? malloc(sizeof *dp) : NULL;
  if (rc == CLI_OK && !dp) rc = cli_runtime_error(VERB, "out of memory");
  if (rc == CLI_OK) {
    uint32_t dims[3] = {o.dims[0], o.dims[1], o.dims[2]};
    ncclzStatus st = ncclzDataProfileBuild(&spec, o.dtype, ranks, o.ranks, n, dims, o.ndims, o.frames, o.n_frames, dp);
    if (st == NCCLZ_OK) rc = write_profile(&o, dp);
    else rc = st == NCCLZ_ERR_NOMEM ? cli_runtime_error(VERB, "%s", ncclzLastError()) : cli_usage_error(VERB, "%s", ncclzLastError());
  }
  free(dp);
  for (uint32_t i = 0; i < o.n_inputs; i++) free(bufs[i]);
  return rc;
}
