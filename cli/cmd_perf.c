/* ncclz perf: nccl-tests' table for the compressed collectives, plus cr, coders and maxerr.
 *
 * Backends: `cpu` runs the executor's engine over the in-process thread transport (one thread per
 * rank, -g of them): it measures nothing about GPUs, but it runs the same schedules, frames, size
 * protocol and checks everywhere (CI). `nccl` (CUDA builds) is the GPU executor. Sizes, busbw
 * factors and columns follow nccl-tests: algbw = size / time, busbw = algbw x ncclzBusBwFactor,
 * all on uncompressed bytes. #wrong counts elements outside the derived bound (lossless: not
 * bit-exact against the exact sum), checked on every rank against all ranks' inputs. */
#include "cli.h"
#include "perf.h"

#include <cjson/cJSON.h>
#include <getopt.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define VERB PERF_VERB

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
         "--algo A (cpu): the schedule (docs/executor.md): auto (NCCL's ring or tree), ring, tree, rhd or hier, ranks\n"
         "in nodes of --ranks-per-node G (default: all on one node); one that cannot run the case is refused.\n"
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
  case 'E': o->cfg.final_error_bound = atof(arg); break;
  case 'W': o->warm_s = atof(arg); break;
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

/* --algo: the nccl backend runs the ring; the schedule must serve the collective on these ranks. */
static int check_algo(const perf_opts *o) {
  ncclzAlgorithm a = o->cfg.algorithm;
  if (a != NCCLZ_ALGO_AUTO && a != NCCLZ_ALGO_RING && !strcmp(o->backend, "nccl"))
    return cli_usage_error(VERB, "--algo %s: the nccl backend runs the ring only (the cpu backend runs every algorithm)",
                           ncclzAlgorithmName(a));
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
  while ((c = getopt_long(argc, argv, "c:b:e:f:g:n:w:h", longopts, NULL)) != -1) {
    switch (c) {
    case 'h': print_help(); return -1;
    case 'c':
      if ((v = ncclzCollectiveFromName(optarg)) < 0) return cli_usage_error(VERB, "-c %s: unknown collective", optarg);
      o->coll = (ncclzCollective)v;
      break;
    case 'b':
    case 'e':
      if (!(*(c == 'b' ? &o->min_bytes : &o->max_bytes) = (size_t)cli_parse_size(optarg)))
        return cli_usage_error(VERB, "-%c: expected a byte size like 1M, got '%s'", c, optarg);
      break;
    case 'f': o->factor = atof(optarg); break;
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
  if (!(o->warm_s >= 0 && o->warm_s <= 600)) return cli_usage_error(VERB, "--warm-s: need 0..600 seconds");
  if (!(o->factor > 1) || o->min_bytes > o->max_bytes) return cli_usage_error(VERB, "need -f > 1 and -b <= -e");
  o->nranks = o->ngpus;
  if (o->hint && ncclzHintFromName(o->hint) < 0) return cli_usage_error(VERB, "--hint %s: nvlink|shm|net", o->hint);
  if (ncclzQuantSpecParse(o->quant_text, &o->cfg.quant)) return cli_usage_error(VERB, "--quant: %s", ncclzLastError());
  if (o->cfg.policy == NCCLZ_POLICY_OFF && o->cfg.quant.kind != NCCLZ_QUANT_NONE)
    return cli_usage_error(VERB, "--compress off is the plain collective: it takes no --quant");
  return CLI_OK;
}

/* ------------------------------------------------------------------ data */

size_t perf_in_elems(const perf_opts *o, size_t count) {
  return o->coll == NCCLZ_REDUCESCATTER || o->coll == NCCLZ_ALLTOALL ? count * (size_t)o->nranks : count;
}
size_t perf_out_elems(const perf_opts *o, size_t count) {
  return o->coll == NCCLZ_ALLGATHER || o->coll == NCCLZ_ALLTOALL ? count * (size_t)o->nranks : count;
}

/* Input i of rank r: the file tiled from a per-rank offset, else integers (lossless modes stay
 * exactly checkable) or a smooth field (quantized modes). Rounded to the dtype. */
float perf_input_value(const perf_opts *o, int r, size_t i) {
  float v;
  if (o->nfiles) {
    /* rank r reads file r mod N; ranks that share a file start at different offsets */
    int f = r % o->nfiles, sharers = (o->nranks + o->nfiles - 1 - f) / o->nfiles;
    size_t n = o->file_n[f], off = (size_t)(r / o->nfiles) * (n / (size_t)sharers + 7919);
    v = o->file[f][(off + i) % n];
  } else if (o->cfg.quant.kind == NCCLZ_QUANT_NONE) {
    v = (float)((long)((r * 7 + (long)(i % 1000003) * 13) % 61) - 30);
  } else {
    v = (float)(10.0 * sin(0.001 * (double)i + r) + 0.01 * (double)((i * 2654435761u + (size_t)r) % 101));
  }
  uint16_t h;
  if (o->dtype != NCCLZ_DTYPE_F32) {
    ncclzFromFloat(&v, 1, o->dtype, &h);
    ncclzToFloat(&h, o->dtype, 1, &v);
  }
  return v;
}

static double expected(const perf_opts *o, size_t count, int me, size_t i) {
  double s = 0;
  switch (o->coll) {
  case NCCLZ_ALLREDUCE:
    for (int q = 0; q < o->nranks; q++) s += perf_input_value(o, q, i);
    return s;
  case NCCLZ_REDUCESCATTER:
    for (int q = 0; q < o->nranks; q++) s += perf_input_value(o, q, (size_t)me * count + i);
    return s;
  case NCCLZ_ALLGATHER: return perf_input_value(o, (int)(i / count), i % count);
  case NCCLZ_ALLTOALL: return perf_input_value(o, (int)(i / count), (size_t)me * count + i % count);
  default: return perf_input_value(o, o->root, i);
  }
}

/* ----------------------------------------------------------- cpu backend */



typedef struct {
  const perf_opts *o;
  ncclzThreadGroup *g;
  int rank;
  size_t count;
  void *in, *out;
  double secs;
  ncclzStatus st;
  char err[256];
  ncclzExecStats stats;
} rank_job;

static void *rank_main(void *arg) {
  rank_job *j = arg;
  ncclzHostComm *c = NULL;
  ncclzTransport *t = ncclzThreadGroupTransport(j->g, j->rank);
  j->st = ncclzHostCommInit(&c, t, &j->o->cfg);
  double v = 0;
  for (int i = 0; !j->st && i < j->o->warmup + j->o->iters; i++) {
    if (i == j->o->warmup) {
      t->allreduce_max(t, &v, 1); /* a barrier: every rank starts timing together */
      j->secs = ncclzNowSeconds();
    }
    j->st = ncclzHostRun(c, j->o->coll, j->in, j->out, j->count, j->o->dtype, j->o->root, &j->stats);
  }
  j->secs = (ncclzNowSeconds() - j->secs) / j->o->iters;
  snprintf(j->err, sizeof j->err, "%s", ncclzLastError());
  ncclzHostCommDestroy(c);
  return NULL;
}

static void make_inputs(const perf_opts *o, rank_job *jobs, size_t count) {
  size_t ds = ncclzDtypeSize(o->dtype), ni = perf_in_elems(o, count), no = perf_out_elems(o, count);
  float *x = malloc((ni + 1) * sizeof *x);
  for (int r = 0; r < o->ngpus; r++) {
    for (size_t i = 0; i < ni; i++) x[i] = perf_input_value(o, r, i);
    jobs[r].in = malloc((ni + 1) * ds);
    jobs[r].out = calloc(no + 1, ds);
    ncclzFromFloat(x, ni, o->dtype, jobs[r].in);
  }
  free(x);
}

/* Wrong elements and max error of one rank's output (host copy, dtype); every `stride`-th element. */
void perf_check_output(const perf_opts *o, size_t count, int rank, const void *out, double bound, size_t stride,
                         perf_point *p) {
  size_t no = perf_out_elems(o, count);
  float *y = malloc((no + 1) * sizeof *y);
  ncclzToFloat(out, o->dtype, no, y);
  int lossless = o->cfg.quant.kind == NCCLZ_QUANT_NONE;
  for (size_t i = 0; i < no; i += stride) {
    double e = expected(o, count, rank, i), err = fabs((double)y[i] - e);
    if (lossless) {
      float ef = (float)e;
      uint16_t h;
      if (o->dtype != NCCLZ_DTYPE_F32) {
        ncclzFromFloat(&ef, 1, o->dtype, &h);
        ncclzToFloat(&h, o->dtype, 1, &ef);
      }
      p->wrong += memcmp(&ef, &y[i], 4) != 0 && !o->nfiles; /* file data: float sums depend on order */
    } else if (bound < 0) { /* plain NCCL ran (auto kept everything RAW): float rounding only */
      double eps = o->dtype == NCCLZ_DTYPE_BF16 ? 0x1p-8 : o->dtype == NCCLZ_DTYPE_F16 ? 0x1p-11 : 0x1p-23;
      p->wrong += !(err <= o->nranks * eps * fabs(e) + 1e-30);
    } else {
      p->wrong += !(err <= bound);
    }
    if (err > p->maxerr) p->maxerr = err;
  }
  free(y);
}

static void check_rank(const perf_opts *o, const rank_job *j, perf_point *p) {
  perf_check_output(o, j->count, j->rank, j->out, j->stats.error_bound, 1, p);
}

static int run_point_cpu(const perf_opts *o, size_t count, perf_point *p) {
  rank_job *jobs = calloc((size_t)o->ngpus, sizeof *jobs);
  pthread_t *th = calloc((size_t)o->ngpus, sizeof *th);
  ncclzThreadGroup *g = ncclzThreadGroupCreate(o->ngpus);
  make_inputs(o, jobs, count);
  for (int r = 0; r < o->ngpus; r++) {
    jobs[r] = (rank_job){o, g, r, count, jobs[r].in, jobs[r].out, 0, NCCLZ_OK, "", {0}};
    pthread_create(&th[r], NULL, rank_main, &jobs[r]);
  }
  for (int r = 0; r < o->ngpus; r++) pthread_join(th[r], NULL);
  int rc = CLI_OK;
  for (int r = 0; r < o->ngpus; r++) {
    if (jobs[r].st && rc == CLI_OK) rc = cli_runtime_error(VERB, "rank %d: %s", r, jobs[r].err);
    if (jobs[r].st) continue;
    check_rank(o, &jobs[r], p);
    p->time_us = fmax(p->time_us, jobs[r].secs * 1e6);
    p->raw += jobs[r].stats.raw_bytes;
    p->frames_b += jobs[r].stats.frame_bytes;
    p->wire += jobs[r].stats.wire_bytes;
    p->bound = fmax(p->bound, jobs[r].stats.error_bound);
    for (int c = 0; c < NCCLZ_CODER_COUNT; c++) p->mix[c] += jobs[r].stats.coder_mix[c];
  }
  for (int r = 0; r < o->ngpus; r++) {
    free(jobs[r].in);
    free(jobs[r].out);
  }
  ncclzThreadGroupDestroy(g);
  free(jobs);
  free(th);
  return rc;
}

/* ---------------------------------------------------------------- output */

void perf_print_header(const perf_opts *o) {
  fprintf(stderr, "# ncclz perf: %s, %d ranks (%s backend), compress %s, quant %s, dtype %s\n",
          ncclzCollectiveName(o->coll), o->nranks, o->backend, ncclzPolicyName(o->cfg.policy), o->quant_text,
          ncclzDtypeName(o->dtype));
  fprintf(stderr, "#%11s %12s %6s %6s %5s %10s %8s %8s %7s %7s %14s %10s%s\n", "size", "count", "type", "redop", "root",
          "time", "algbw", "busbw", "#wrong", "cr", "coders", "maxerr", o->vs_plain ? "   plain   vs plain" : "");
  fprintf(stderr, "#%11s %12s %6s %6s %5s %10s %8s %8s %7s %7s %14s %10s%s\n", "(B)", "(elements)", "", "", "", "(us)",
          "(GB/s)", "(GB/s)", "", "", "(r:f:h)", "", o->vs_plain ? "    (us)          " : "");
}

void perf_print_point(const perf_opts *o, const perf_point *p) {
  char mix[48];
  snprintf(mix, sizeof mix, "%llu:%llu:%llu", (unsigned long long)p->mix[0], (unsigned long long)p->mix[1],
           (unsigned long long)p->mix[2]);
  int red = o->coll == NCCLZ_ALLREDUCE || o->coll == NCCLZ_REDUCESCATTER;
  fprintf(stderr, "%12zu %12zu %6s %6s %5d %10.1f %8.3f %8.3f %7llu %7.2f %14s %10.3g", p->size, p->count,
          ncclzDtypeName(o->dtype), red ? "sum" : "none", o->coll == NCCLZ_BROADCAST ? o->root : -1, p->time_us,
          p->algbw, p->busbw, (unsigned long long)p->wrong, p->cr, mix, p->maxerr);
  if (o->vs_plain) fprintf(stderr, " %8.1f %9.3fx", p->plain_us, p->time_us > 0 ? p->plain_us / p->time_us : 0);
  fprintf(stderr, "\n");
}

cJSON *perf_point_json(const perf_point *p) {
  cJSON *j = cJSON_CreateObject(), *mix = cJSON_CreateObject();
  cJSON_AddNumberToObject(j, "size", (double)p->size);
  cJSON_AddNumberToObject(j, "count", (double)p->count);
  cJSON_AddNumberToObject(j, "time_us", p->time_us);
  cJSON_AddNumberToObject(j, "algbw", p->algbw);
  cJSON_AddNumberToObject(j, "busbw", p->busbw);
  cJSON_AddNumberToObject(j, "wrong", (double)p->wrong);
  cJSON_AddNumberToObject(j, "cr", p->cr);
  cJSON_AddNumberToObject(j, "maxerr", p->maxerr);
  cJSON_AddNumberToObject(j, "error_bound", p->bound);
  cJSON_AddNumberToObject(j, "raw_bytes", (double)p->raw);
  cJSON_AddNumberToObject(j, "frame_bytes", (double)p->frames_b);
  cJSON_AddNumberToObject(j, "wire_bytes", (double)p->wire);
  for (int c = 0; c < NCCLZ_CODER_COUNT; c++) cJSON_AddNumberToObject(mix, ncclzCoderName((ncclzCoder)c), (double)p->mix[c]);
  cJSON_AddItemToObject(j, "coders", mix);
  if (p->plain_us > 0) {
    cJSON_AddNumberToObject(j, "plain_us", p->plain_us);
    cJSON_AddNumberToObject(j, "vs_plain", p->time_us > 0 ? p->plain_us / p->time_us : 0);
  }
  if (p->host_unit_us > 0) cJSON_AddNumberToObject(j, "host_unit_us", p->host_unit_us);
  if (p->traced) {
    cJSON_AddNumberToObject(j, "codec_us", p->codec_us);
    cJSON_AddNumberToObject(j, "exposed_us", p->exposed_us);
    cJSON_AddNumberToObject(j, "exposed_frac", p->codec_us > 0 ? p->exposed_us / p->codec_us : 0);
    cJSON_AddNumberToObject(j, "comm_us", p->comm_us);
    cJSON_AddNumberToObject(j, "iface_us", p->iface_us);
  }
  return j;
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
  if (o->cfg.policy == NCCLZ_POLICY_AUTO) {
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

/* Sizes MIN, MIN*FACTOR, ... <= MAX, as element counts per rank's block (nccl-tests' rule). */
size_t perf_make_points(const perf_opts *o, perf_point **pts) {
  size_t n = 0, ds = ncclzDtypeSize(o->dtype);
  for (double sz = (double)o->min_bytes; sz <= (double)o->max_bytes * 1.000001; sz *= o->factor) n++;
  *pts = calloc(n + 1, sizeof **pts);
  size_t k = 0;
  for (double sz = (double)o->min_bytes; k < n; sz *= o->factor, k++) {
    size_t per = o->coll == NCCLZ_ALLREDUCE || o->coll == NCCLZ_BROADCAST ? 1 : (size_t)o->nranks;
    (*pts)[k].count = (size_t)sz / ds / per;
    (*pts)[k].size = (*pts)[k].count * ds * per;
  }
  return n;
}

void perf_finish_point(const perf_opts *o, perf_point *p) {
  double secs = p->time_us * 1e-6;
  p->algbw = secs > 0 ? (double)p->size / secs / 1e9 : 0;
  p->busbw = p->algbw * ncclzBusBwFactor(o->coll, o->nranks);
  p->cr = p->frames_b ? (double)p->raw / (double)p->frames_b : 1.0;
}


/* ---------------------------------------------------------------- stress */

void perf_stress_init(perf_stress *st) {
  memset(st, 0, sizeof *st);
  st->x = 0x9E3779B97F4A7C15ull;
}

size_t perf_stress_next(perf_stress *st, perf_opts *oo) {
  static const ncclzCollective colls[] = {NCCLZ_ALLREDUCE, NCCLZ_REDUCESCATTER, NCCLZ_ALLGATHER, NCCLZ_ALLTOALL,
                                          NCCLZ_BROADCAST};
  uint64_t x = st->x;
  x ^= x << 13, x ^= x >> 7, x ^= x << 17;
  st->x = x;
  int k = (int)(x % 5);
  oo->coll = colls[k];
  oo->root = (int)((x >> 8) % (uint64_t)oo->nranks);
  st->counts[oo->coll]++;
  st->calls++;
  return (size_t)exp2((double)((x >> 16) % 22001) / 1000.0) - 1;
}

void perf_stress_progress(const perf_stress *st, int total) {
  if (isatty(2) && st->calls % 50 == 0) fprintf(stderr, "\r# stress: %d/%d calls", st->calls, total);
}

void perf_stress_report(const perf_stress *st, const perf_opts *o, int failed) {
  if (isatty(2)) fprintf(stderr, "\n"); /* after the progress line */
  fprintf(stderr, "# stress: %d calls (allreduce %llu, reducescatter %llu, allgather %llu, alltoall %llu, broadcast %llu) "
         "on %d ranks, %s, %llu wrong elements%s\n",
         st->calls, (unsigned long long)st->counts[NCCLZ_ALLREDUCE], (unsigned long long)st->counts[NCCLZ_REDUCESCATTER],
         (unsigned long long)st->counts[NCCLZ_ALLGATHER], (unsigned long long)st->counts[NCCLZ_ALLTOALL],
         (unsigned long long)st->counts[NCCLZ_BROADCAST], o->nranks, ncclzPolicyName(o->cfg.policy),
         (unsigned long long)st->wrong, failed ? ", stopped by an error" : "");
}

/* --stress on the cpu backend: each call one run_point_cpu (its output checked on every rank). */
static int stress_cpu(const perf_opts *o, uint64_t *wrong) {
  perf_opts oo = *o;
  oo.warmup = 0, oo.iters = 1;
  perf_stress st;
  perf_stress_init(&st);
  int rc = CLI_OK;
  while (rc == CLI_OK && !st.wrong && st.calls < o->stress) {
    perf_point p = {0};
    p.count = perf_stress_next(&st, &oo);
    rc = run_point_cpu(&oo, p.count, &p);
    st.wrong += p.wrong;
    perf_stress_progress(&st, o->stress);
  }
  perf_stress_report(&st, o, rc != CLI_OK);
  *wrong += st.wrong;
  return rc;
}

static int run_cpu(perf_opts *o, cJSON *points, uint64_t *wrong) {
  if (o->stress) return stress_cpu(o, wrong);
  perf_point *pts;
  size_t np = perf_make_points(o, &pts);
  int rc = CLI_OK;
  perf_print_header(o);
  for (size_t k = 0; rc == CLI_OK && k < np; k++) {
    perf_point *p = &pts[k];
    rc = run_point_cpu(o, p->count, p);
    perf_finish_point(o, p);
    *wrong += p->wrong;
    perf_print_point(o, p);
    cJSON_AddItemToArray(points, perf_point_json(p));
  }
  free(pts);
  return rc;
}

int cli_perf(int argc, char **argv) {
  perf_opts o;
  memset(&o, 0, sizeof o);
  int rc = parse_args(argc, argv, &o);
  if (rc) return rc < 0 ? CLI_OK : rc;
#ifdef NCCLZ_HAVE_NCCL
  if (!o.backend) o.backend = "nccl";
  const char *ws = getenv("OMPI_COMM_WORLD_SIZE");
  o.mpi = !strcmp(o.backend, "nccl") && ws && atoi(ws) > 1;
  /* Without this check each of mpirun's processes would run alone, as a 1-rank job, and print
   * numbers that look valid. */
  if (o.mpi && !ncclzMpiAvailable())
    return cli_runtime_error(VERB, "started by mpirun (%s ranks), but this build has no MPI launcher "
                                   "(configure with -DNCCLZ_MPI=ON and Open MPI installed)", ws);
  if (o.mpi) {
    if (o.ngpus != 1) return cli_usage_error(VERB, "under mpirun: -g 1 (one rank per GPU)");
    if (ncclzMpiInit(&argc, &argv)) return cli_runtime_error(VERB, "MPI: %s", ncclzLastError());
    o.nranks = atoi(ws);
  }
  if (!strcmp(o.backend, "nccl")) perf_nccl_defaults(&o);
#else
  if (!o.backend) o.backend = "cpu";
#endif
  if (o.warm_s > 0 && strcmp(o.backend, "nccl")) return cli_usage_error(VERB, "--warm-s needs the nccl backend");
  if (o.vs_plain && (strcmp(o.backend, "nccl") || o.cfg.policy == NCCLZ_POLICY_OFF || o.stress))
    return cli_usage_error(VERB, "--vs-plain needs the nccl backend, a --compress other than off, and no --stress");
  if (strcmp(o.backend, "cpu") && strcmp(o.backend, "nccl"))
    return cli_usage_error(VERB, "--backend %s: cpu|nccl", o.backend);
#ifndef NCCLZ_HAVE_NCCL
  if (!strcmp(o.backend, "nccl")) return cli_usage_error(VERB, "--backend nccl: this build has no CUDA/NCCL");
#endif
  if (o.root < 0 || o.root >= o.nranks) return cli_usage_error(VERB, "--root %d: need 0..%d", o.root, o.nranks - 1);
  if ((rc = check_algo(&o)) != CLI_OK) return rc;
  if (o.hint) o.cfg.hint = (ncclzTransportHint)ncclzHintFromName(o.hint);
  if ((rc = load_inputs(&o)) != CLI_OK) {
    for (int f = 0; f < o.nfiles; f++) free(o.file[f]); /* the files read before the bad one */
    return rc;
  }
  cJSON *points = cJSON_CreateArray();
  uint64_t wrong = 0;
#ifdef NCCLZ_HAVE_NCCL
  if (!strcmp(o.backend, "nccl"))
    rc = perf_run_nccl(&o, points, &wrong);
  else
#endif
    rc = run_cpu(&o, points, &wrong);
  int me = 0;
#ifdef NCCLZ_HAVE_NCCL
  if (o.mpi) {
    const char *r = getenv("OMPI_COMM_WORLD_RANK");
    me = r ? atoi(r) : 0;
  }
#endif
  if (o.json && rc == CLI_OK && me == 0)
    rc = write_json(&o, points);
  else
    cJSON_Delete(points);
  for (int f = 0; f < o.nfiles; f++) free(o.file[f]);
#ifdef NCCLZ_HAVE_NCCL
  if (o.mpi) ncclzMpiFinalize();
#endif
  if (rc == CLI_OK && wrong) rc = cli_runtime_error(VERB, "%llu wrong elements", (unsigned long long)wrong);
  return rc;
}
