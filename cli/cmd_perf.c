/* ncclz perf: nccl-tests' table for the compressed collectives, plus cr, coders and maxerr.
 *
 * Backends (perf.h): `cpu` runs the executor's engine over the in-process thread transport (one
 * thread per rank, -g of them) or, under mpirun, the MPI transport: it measures nothing about GPUs,
 * but it runs the same schedules, frames, size protocol and checks everywhere (CI). `nccl` (CUDA
 * builds) is the GPU executor. Every option is checked before the first call; under mpirun the
 * ranks agree on them first (a hash of options, config, profile and data). Sizes, busbw
 * factors and columns follow nccl-tests: algbw = size / time, busbw = algbw x ncclzBusBwFactor,
 * all on uncompressed bytes. #wrong counts elements outside the derived bound (lossless: not
 * bit-exact against the exact sum), checked on every rank against all ranks' inputs. */
#include "cli.h"
#include "perf.h"

#include <cjson/cJSON.h>
#include <float.h>
#include <getopt.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define VERB PERF_VERB

#ifdef NCCLZ_HAVE_NCCL
#define NCCLZ_PERF_DEFAULT_BACKEND "nccl"
#else
#define NCCLZ_PERF_DEFAULT_BACKEND "cpu"
#endif

static void print_help(void) {
  printf("usage: ncclz perf -c allreduce|reducescatter|allgather|alltoall|broadcast -b MIN -e MAX -f FACTOR\n"
         "                  -g NGPUS [-n ITERS] [-w WARMUP] [--compress off|auto|raw|fixedlen|huffman]\n"
         "                  [--quant SPEC] [--data FILE] [--json FILE] [--profile PROFILE.json] [--dtype f32|bf16|f16]\n"
         "                  [--root R] [--chunk BYTES] [--final-bound E] [--backend cpu|nccl] [--trace FILE]\n"
         "                  [--hint nvlink|shm|net] [--warm-s SECONDS] [--stress N] [--vs-plain] [--comm-lanes 1-4]\n"
         "                  [--rea-frames] [--algo auto|ring|tree|rhd|hier] [--ranks-per-node G]\n\n"
         "nccl-tests' table (size count type redop root time algbw busbw #wrong) plus cr (uncompressed / frame\n"
         "bytes), coders (frames raw:fixedlen:huffman) and maxerr. Sizes run MIN, MIN*FACTOR, ... <= MAX\n"
         "(K/M/G suffixes). --compress off is the plain collective on the same buffers. --data FILE tiles a float32\n"
         "file into the send buffers at a different offset per rank; --data F0,F1,... gives rank r file r mod N\n"
         "(the ranks' own gradients, say). auto uses --profile (else $NCCLZ_PROFILE, else the built-in H200 profile).\n"
         "The backend defaults to nccl when built with CUDA, else cpu (threads, one per rank). nccl: -g N runs\n"
         "one process with a thread per GPU; `mpirun -np N ncclz perf -g 1` one rank per GPU (NCCL id over MPI).\n"
         "--hint is the path REA plans for (default: net when NCCL_P2P_DISABLE=1, else nvlink; cpu: net).\n"
         "--trace FILE (nccl): one extra traced call per size; the last size's timeline goes to FILE (rank 0)\n"
         "and FILE.rN (rank N) as Chrome trace JSON; the exposed codec time is printed per size.\n"
         "--warm-s S (nccl): before the first size, S seconds of untimed calls at min(MAX, 64M) (the socket\n"
         "path runs slower over its first seconds of traffic; default 0, as nccl-tests).\n"
         "--comm-lanes N (nccl, 1 to 4): units' frames alternate over N communicators and streams, with N\n"
         "staging banks (default 4), so that one unit's transfer starts while the previous ones' run.\n"
         "--rea-frames (nccl, auto): the REA plans every frame on the GPU and codes it with its own coder\n"
         "(default: the coder planned on a call's first chunk for all its frames; both post-check each frame).\n"
         "--algo A: the schedule (docs/executor.md): auto, ring, tree, rhd or hier, ranks in nodes of\n"
         "--ranks-per-node G (default: all on one node); one that cannot run the case is refused. auto with\n"
         "several nodes: per call, the cost model's (algorithm, coder) pair for the data's compression ratio,\n"
         "sampled after the quantizer and agreed by the ranks (a line '# pair ...' per size, and in --json);\n"
         "within one node, the ring.\n"
         "--stress N: instead of the table, N calls of a collective, root and count (0..4M elements)\n"
         "drawn alike on every rank, each output checked; prints one line (0 wrong elements or the failure).\n"
         "--vs-plain (nccl): per size, 7 rounds of plain NCCL calls and calls of --compress (-n each, more where\n"
         "-n calls take under 20 ms), alternated in the same process, each first in every other round; time is\n"
         "the median round of the latter, `vs plain` plain's over it (a speedup that separate runs' clock and\n"
         "link states do not move).\n"
         "Outputs above 4M elements are checked on a stride (every element up to 4M checked).\n"
         "Exit status: 0 ok, 2 bad input or usage, 1 runtime failure or wrong elements.\n");
}

static int parse_more(int c, const char *arg, perf_opts *o) {
  int v;
  switch (c) {
  case 'C':
    if ((v = ncclzPolicyFromName(arg)) < 0) return cli_usage_error(VERB, "--compress %s: off|auto|raw|fixedlen|huffman", arg);
    o->cfg.policy = (ncclzCoderPolicy)v;
    break;
  case 'q': o->quant_text = arg; break;
  case 'D': o->data = arg; break;
  case 'J': o->json = arg; break;
  case 'P': o->profile = arg; break;
  case 'B': o->backend = arg; break;
  case 'T': o->trace = arg; break;
  case 'H': o->hint = arg; break;
  case 'r': return cli_parse_int(VERB, "--root", arg, 0, 63, &o->root);
  case 'k':
    if (!(o->cfg.chunk_bytes = (size_t)cli_parse_size(arg)))
      return cli_usage_error(VERB, "--chunk: expected a byte size like 4M, got '%s'", arg);
    break;
  case 'E':
    if (ncclzParseDouble(arg, DBL_MIN, DBL_MAX, &o->cfg.final_error_bound))
      return cli_usage_error(VERB, "--final-bound %s: expected a number > 0", arg);
    break;
  case 'W':
    if (ncclzParseDouble(arg, 0, 600, &o->warm_s)) return cli_usage_error(VERB, "--warm-s %s: need 0..600 seconds", arg);
    break;
  case 'S': return cli_parse_int(VERB, "--stress", arg, 0, 100000000, &o->stress);
  case 'V': o->vs_plain = 1; break;
  case 'F': o->cfg.rea_per_frame = 1; break;
  case 'A':
    if ((v = ncclzAlgorithmFromName(arg)) < 0) return cli_usage_error(VERB, "--algo %s: auto|ring|tree|rhd|hier", arg);
    o->cfg.algorithm = (ncclzAlgorithm)v;
    break;
  case 'G': return cli_parse_int(VERB, "--ranks-per-node", arg, 1, 1 << 20, &o->cfg.ranks_per_node);
  case 'L':
    if (cli_parse_int(VERB, "--comm-lanes", arg, 1, NCCLZ_MAX_COMM_LANES, &v) != CLI_OK) return CLI_USAGE;
    o->cfg.comm_lanes = (uint32_t)v;
    break;
  case 't':
    if (cli_parse_float_dtype(VERB, arg, &o->dtype)) return CLI_USAGE;
    break;
  default: return cli_usage_error(VERB, "unknown option (ncclz perf --help)");
  }
  return CLI_OK;
}

/* --algo: the schedule must serve the collective on these ranks (both backends run every algorithm). */
static int check_algo(const perf_opts *o) {
  ncclzAlgorithm a = o->cfg.algorithm;
  if (a == NCCLZ_ALGO_AUTO) return CLI_OK;
  ncclzScheduleSpec sp = {o->coll, a, o->nranks, o->cfg.ranks_per_node, o->root, 1, 1, NCCLZ_ALGO_RHD};
  char why[200];
  if (ncclzScheduleCheck(&sp, why, sizeof why)) return cli_usage_error(VERB, "--algo: %s", why);
  return CLI_OK;
}

static int parse_args(int argc, char **argv, perf_opts *o) {
  static const struct option longopts[] = {
      {"compress", required_argument, 0, 'C'}, {"quant", required_argument, 0, 'q'},
      {"data", required_argument, 0, 'D'},     {"json", required_argument, 0, 'J'},
      {"profile", required_argument, 0, 'P'},  {"backend", required_argument, 0, 'B'},
      {"trace", required_argument, 0, 'T'},    {"root", required_argument, 0, 'r'},
      {"chunk", required_argument, 0, 'k'},    {"final-bound", required_argument, 0, 'E'},
      {"dtype", required_argument, 0, 't'},    {"help", no_argument, 0, 'h'},
      {"hint", required_argument, 0, 'H'},     {"warm-s", required_argument, 0, 'W'},
      {"stress", required_argument, 0, 'S'},   {"vs-plain", no_argument, 0, 'V'},
      {"comm-lanes", required_argument, 0, 'L'}, {"rea-frames", no_argument, 0, 'F'},
      {"algo", required_argument, 0, 'A'},     {"ranks-per-node", required_argument, 0, 'G'}, {0, 0, 0, 0}};
  ncclzConfigDefault(&o->cfg);
  o->cfg.policy = NCCLZ_POLICY_AUTO;
  o->min_bytes = o->max_bytes = 32 << 20;
  o->factor = 2;
  o->ngpus = 1;
  o->iters = 20;
  o->warmup = 5;
  o->quant_text = "none";
  o->coll = NCCLZ_ALLREDUCE;
  int c, v, rc;
  optind = 1;
  while ((c = cli_getopt(argc, argv, "c:b:e:f:g:n:w:h", longopts)) != -1) {
    switch (c) {
    case 'h': print_help(); return -1;
    case '?':
    case ':': return cli_option_error(VERB, c, argv);
    case 'c':
      if ((v = ncclzCollectiveFromName(optarg)) < 0) return cli_usage_error(VERB, "-c %s: unknown collective", optarg);
      o->coll = (ncclzCollective)v;
      break;
    case 'b':
    case 'e':
      if (!(*(c == 'b' ? &o->min_bytes : &o->max_bytes) = (size_t)cli_parse_size(optarg)))
        return cli_usage_error(VERB, "-%c: expected a byte size like 1M, got '%s'", c, optarg);
      break;
    case 'f':
      if (ncclzParseDouble(optarg, 1, 1e6, &o->factor) || o->factor == 1)
        return cli_usage_error(VERB, "-f %s: expected a factor > 1", optarg);
      break;
    case 'g':
      if ((rc = cli_parse_int(VERB, "-g", optarg, 1, 64, &o->ngpus)) != CLI_OK) return rc;
      break;
    case 'n':
      if ((rc = cli_parse_int(VERB, "-n", optarg, 1, 1000000, &o->iters)) != CLI_OK) return rc;
      break;
    case 'w':
      if ((rc = cli_parse_int(VERB, "-w", optarg, 0, 1000000, &o->warmup)) != CLI_OK) return rc;
      break;
    default:
      if ((rc = parse_more(c, optarg, o)) != CLI_OK) return rc;
    }
  }
  if (optind < argc) return cli_usage_error(VERB, "unexpected argument '%s'", argv[optind]);
  if (o->min_bytes > o->max_bytes) return cli_usage_error(VERB, "need -b <= -e");
  o->nranks = o->ngpus;
  if (o->hint && ncclzHintFromName(o->hint) < 0) return cli_usage_error(VERB, "--hint %s: nvlink|shm|net", o->hint);
  if (ncclzQuantSpecParse(o->quant_text, &o->cfg.quant)) return cli_usage_error(VERB, "--quant: %s", ncclzLastError());
  if (o->cfg.policy == NCCLZ_POLICY_OFF && o->cfg.quant.kind != NCCLZ_QUANT_NONE)
    return cli_usage_error(VERB, "--compress off is the plain collective: it takes no --quant");
  return CLI_OK;
}

static int write_json(const perf_opts *o, cJSON *points) {
  cJSON *j = cJSON_CreateObject();
  cJSON_AddStringToObject(j, "verb", "perf");
  cJSON_AddStringToObject(j, "collective", ncclzCollectiveName(o->coll));
  cJSON_AddStringToObject(j, "backend", o->backend);
  cJSON_AddNumberToObject(j, "nranks", o->nranks);
  cJSON_AddStringToObject(j, "launch", o->mpi ? "mpi" : "threads");
  cJSON_AddStringToObject(j, "hint", o->hint ? o->hint : "net");
  cJSON_AddStringToObject(j, "compress", ncclzPolicyName(o->cfg.policy));
  cJSON_AddStringToObject(j, "quant", o->quant_text);
  cJSON_AddStringToObject(j, "dtype", ncclzDtypeName(o->dtype));
  cJSON_AddStringToObject(j, "data", o->data ? o->data : "synthetic");
  cJSON_AddNumberToObject(j, "chunk_bytes", (double)o->cfg.chunk_bytes);
  cJSON_AddNumberToObject(j, "comm_lanes", o->cfg.comm_lanes);
  cJSON_AddStringToObject(j, "algorithm", ncclzAlgorithmName(o->cfg.algorithm));
  cJSON_AddBoolToObject(j, "rea_per_frame", o->cfg.rea_per_frame);
  cJSON_AddNumberToObject(j, "busbw_factor", ncclzBusBwFactor(o->coll, o->nranks));
  cJSON_AddItemToObject(j, "points", points);
  char *s = cJSON_Print(j);
  cJSON_Delete(j);
  ncclzStatus st = s ? ncclzWriteFile("--json", o->json, s, strlen(s))
                     : ncclzSetError(NCCLZ_ERR_NOMEM, "--json: out of memory for '%s'", o->json);
  free(s);
  return st ? cli_runtime_error(VERB, "%s", ncclzLastError()) : CLI_OK;
}

static int load_inputs(perf_opts *o) {
  /* REA, and the auto pair (which weighs every coder with the profile's curves) */
  int pair = o->cfg.algorithm == NCCLZ_ALGO_AUTO && o->cfg.ranks_per_node > 0 && o->cfg.ranks_per_node < o->nranks;
  if (o->cfg.policy == NCCLZ_POLICY_AUTO || pair) {
    if (cli_load_profile(VERB, o->profile, &o->prof, &o->profile)) return CLI_USAGE;
    o->cfg.profile = &o->prof;
  }
  if (!o->data) return CLI_OK;
  char *list = strdup(o->data), *save = NULL; /* FILE or FILE,FILE,... */
  if (!list) return cli_runtime_error(VERB, "out of memory");
  int rc = CLI_OK;
  for (char *name = strtok_r(list, ",", &save); name; name = strtok_r(NULL, ",", &save)) {
    if (o->nfiles == PERF_MAX_FILES) {
      rc = cli_usage_error(VERB, "--data: at most %d files", PERF_MAX_FILES);
      break;
    }
    size_t len;
    float *x = cli_read_file(VERB, name, &len);
    if (!x) {
      rc = CLI_USAGE;
      break;
    }
    o->file[o->nfiles] = x;
    o->file_n[o->nfiles++] = len / 4;
    if (len / 4 == 0) {
      rc = cli_usage_error(VERB, "--data %s: empty", name);
      break;
    }
  }
  free(list);
  if (rc == CLI_OK && !o->nfiles) rc = cli_usage_error(VERB, "--data: expected FILE or FILE,FILE,...");
  return rc;
}

/* The first element of the --data files that a quantized collective refuses (NaN, Inf, or for
 * eb an unflagged value past NCCLZ_EB_HUGE_VALUE, after rounding to --dtype); 0 when none. */
static int bad_data(const perf_opts *o) {
  const ncclzQuantSpec *q = &o->cfg.quant;
  if (q->kind == NCCLZ_QUANT_NONE) return CLI_OK;
  for (int f = 0; f < o->nfiles; f++)
    for (size_t i = 0; i < o->file_n[f]; i++) {
      float v = o->file[f][i];
      uint16_t h;
      if (o->dtype != NCCLZ_DTYPE_F32) ncclzFromFloat(&v, 1, o->dtype, &h), ncclzToFloat(&h, o->dtype, 1, &v);
      if (q->kind == NCCLZ_QUANT_EB && q->has_fill && v == q->fill_value) continue;
      if (!isfinite(v))
        return cli_usage_error(VERB, "--data: file %d element %zu is %g: quantized collectives need finite data", f,
                               i, (double)v);
      if (q->kind == NCCLZ_QUANT_EB && fabsf(v) >= NCCLZ_EB_HUGE_VALUE)
        return cli_usage_error(VERB, "--data: file %d element %zu is %g: fill values? give fill=V in --quant", f, i,
                               (double)v);
    }
  return CLI_OK;
}

/* Everything the first call would refuse, refused before it (exit 2, one line, no table). */
static int check_config(const perf_opts *o) {
  if (o->cfg.quant.kind == NCCLZ_QUANT_EB && o->cfg.quant.lorenzo)
    return cli_usage_error(VERB, "--quant %s: perf has no --dims, and Lorenzo needs the array's shape "
                                 "(measure Lorenzo with `ncclz codec --dims`)", o->quant_text);
  if (o->cfg.chunk_bytes < NCCLZ_CHUNK_MIN_BYTES)
    return cli_usage_error(VERB, "--chunk %zu: need at least %d bytes", o->cfg.chunk_bytes, NCCLZ_CHUNK_MIN_BYTES);
  if (o->cfg.final_error_bound > 0 && o->cfg.quant.kind != NCCLZ_QUANT_EB)
    return cli_usage_error(VERB, "--final-bound: needs an eb: quantizer (--quant %s)", o->quant_text);
  if (ncclzConfigCheck(&o->cfg) != NCCLZ_OK) return cli_usage_error(VERB, "%s", ncclzLastError()); /* the rest */
  return bad_data(o);
}

/* ------------------------------------------------------------- launch */

/* The world size an MPI launcher gave this process (mpirun or mpiexec of Open MPI, MPICH or
 * MVAPICH; srun with PMI), with the variable that says so; 1 when none did. */
static int launcher_size(const char **var) {
  static const char *const vars[] = {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "MV2_COMM_WORLD_SIZE", NULL};
  for (const char *const *k = vars; *k; k++) {
    uint64_t n;
    const char *v = getenv(*k);
    if (v && ncclzParseU64(v, 1, 1u << 20, &n) == 0) return *var = *k, (int)n;
  }
  return 1;
}

static uint64_t fnv64(uint64_t h, const void *p, size_t n) {
  const unsigned char *b = p;
  for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 0x100000001b3ull;
  return h;
}

static uint64_t fnv64_str(uint64_t h, const char *s) { return fnv64(h, s ? s : "", s ? strlen(s) + 1 : 1); }

/* Everything that must be the same on every rank: the options, the executor's config (profile
 * thresholds included), the profile's curves and the --data files' contents. */
static uint64_t options_hash(const perf_opts *o) {
  uint64_t h = 0xcbf29ce484222325ull, fp = ncclzConfigFingerprint(&o->cfg);
  uint64_t num[] = {(uint64_t)o->coll, o->min_bytes, o->max_bytes, (uint64_t)o->ngpus, (uint64_t)o->iters,
                    (uint64_t)o->warmup, (uint64_t)o->root, (uint64_t)o->stress, (uint64_t)o->vs_plain,
                    (uint64_t)o->dtype, (uint64_t)o->nfiles, fp};
  double real[] = {o->factor, o->warm_s};
  h = fnv64(h, num, sizeof num);
  h = fnv64(h, real, sizeof real);
  h = fnv64_str(fnv64_str(fnv64_str(h, o->quant_text), o->backend), o->hint);
  if (o->cfg.profile) h = fnv64(h, o->cfg.profile, sizeof *o->cfg.profile); /* zeroed before it is read */
  for (int f = 0; f < o->nfiles; f++) h = fnv64(h, o->file[f], o->file_n[f] * sizeof *o->file[f]);
  return h;
}

/* Under mpirun: every rank learns whether every rank accepted its options and whether they are
 * the same, so that all refuse together (exit 2) or all run. rc: this rank's own verdict. */
static int agree_ranks(perf_opts *o, int rc) {
  ncclzTransport *t = ncclzMpiTransportCreate();
  if (!t) return cli_runtime_error(VERB, "MPI transport: %s", ncclzLastError());
  o->rank = t->rank;
  if (t->nranks != o->nranks && rc == CLI_OK)
    rc = cli_usage_error(VERB, "rank %d: the launcher said %d ranks, MPI has %d", t->rank, o->nranks, t->nranks);
  uint64_t h = rc == CLI_OK ? options_hash(o) : 0;
  double v[5] = {(double)(h >> 32), (double)(h & 0xffffffffu), -(double)(h >> 32), -(double)(h & 0xffffffffu),
                 rc != CLI_OK};
  ncclzStatus st = t->allreduce_max(t, v, 5);
  t->destroy(t);
  if (rc != CLI_OK) return rc; /* this rank's own message is out */
  if (st != NCCLZ_OK) return cli_runtime_error(VERB, "MPI: %s", ncclzLastError());
  if (v[4] > 0) return cli_usage_error(VERB, "rank %d: another rank refused its options", o->rank);
  if (v[0] != -v[2] || v[1] != -v[3])
    return cli_usage_error(VERB, "rank %d: the ranks were started with different options or --data files "
                                 "(every rank needs the same command line)", o->rank);
  return CLI_OK;
}

/* The options that depend on the backend and the launch, after parse_args. */
static int check_launch(perf_opts *o) {
  if (o->warm_s > 0 && strcmp(o->backend, "nccl")) return cli_usage_error(VERB, "--warm-s needs the nccl backend");
  if (o->vs_plain && (strcmp(o->backend, "nccl") || o->cfg.policy == NCCLZ_POLICY_OFF || o->stress))
    return cli_usage_error(VERB, "--vs-plain needs the nccl backend, a --compress other than off, and no --stress");
  if (strcmp(o->backend, "cpu") && strcmp(o->backend, "nccl"))
    return cli_usage_error(VERB, "--backend %s: cpu|nccl", o->backend);
#ifndef NCCLZ_HAVE_NCCL
  if (!strcmp(o->backend, "nccl")) return cli_usage_error(VERB, "--backend nccl: this build has no CUDA/NCCL");
#endif
  if (o->mpi && o->ngpus != 1) return cli_usage_error(VERB, "under mpirun: -g 1 (one rank per process)");
  if (o->root < 0 || o->root >= o->nranks) return cli_usage_error(VERB, "--root %d: need 0..%d", o->root, o->nranks - 1);
  return CLI_OK;
}

static const perf_backend *backend_of(const perf_opts *o) {
#ifdef NCCLZ_HAVE_NCCL
  if (!strcmp(o->backend, "nccl")) return &perf_backend_nccl;
#else
  (void)o; /* a build without NCCL has the CPU backend only */
#endif
  return &perf_backend_cpu;
}

/* Options, inputs and config checked, and under mpirun agreed by every rank: CLI_OK or the exit. */
static int prepare(perf_opts *o, int rc) {
  if (rc == CLI_OK) rc = check_launch(o);
  if (rc == CLI_OK) rc = check_algo(o);
  if (rc == CLI_OK && backend_of(o)->defaults) backend_of(o)->defaults(o);
  if (o->hint) o->cfg.hint = (ncclzTransportHint)ncclzHintFromName(o->hint);
  if (rc == CLI_OK) rc = load_inputs(o);
  if (rc == CLI_OK) rc = check_config(o);
  if (o->mpi) rc = agree_ranks(o, rc);
  return rc;
}

int cli_perf(int argc, char **argv) {
  perf_opts o;
  memset(&o, 0, sizeof o);
  const char *wsvar = NULL;
  int ws = launcher_size(&wsvar);
  int rc = parse_args(argc, argv, &o);
  if (rc < 0) return CLI_OK; /* --help */
  if (!o.backend) o.backend = NCCLZ_PERF_DEFAULT_BACKEND;
  if (ws > 1) {
    /* Without MPI each of the launcher's processes would run alone, as a 1-rank job, and print
     * numbers that look valid: every one refuses instead. */
    if (!ncclzMpiAvailable())
      return cli_usage_error(VERB, "started by an MPI launcher (%s=%d), but this build has no MPI transport "
                                   "(configure with -DNCCLZ_MPI=ON and Open MPI installed)", wsvar, ws);
    if (ncclzMpiInit(&argc, &argv)) return cli_runtime_error(VERB, "MPI: %s", ncclzLastError());
    o.mpi = 1;
    o.nranks = ws;
  }
  rc = prepare(&o, rc);
  cJSON *points = cJSON_CreateArray();
  uint64_t wrong = 0;
  if (rc == CLI_OK) rc = backend_of(&o)->run(&o, points, &wrong);
  if (o.json && rc == CLI_OK && o.rank == 0)
    rc = write_json(&o, points);
  else
    cJSON_Delete(points);
  for (int f = 0; f < o.nfiles; f++) free(o.file[f]);
  if (o.mpi) ncclzMpiFinalize();
  if (rc == CLI_OK && wrong) rc = cli_runtime_error(VERB, "%llu wrong elements", (unsigned long long)wrong);
  return rc;
}
