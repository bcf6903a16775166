/* `ncclz sim --nodes N --nic 200Gb/s --coll allreduce --size 256M [--data FILE --quant SPEC]`: the
 * flags become a what-if scenario (the same fields a scenario file has), the data a CR per number
 * of ranks summed (calibrate's data profile), and the two points (plain, ncclz) one answer. */
#include "cli.h"

#ifdef NCCLZ_HAVE_SIM
#include "ncclz/calibrate.h"
#include "sim_flags.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#define VERB "sim"
/* Slices a raw --data file is cut into, as ranks whose codes a reduction sums. */
#define FLAG_DATA_RANKS 8

/* The default data: CESM TREFHT, REL 1e-4 with 3D Lorenzo, 4 MiB frames summing 1..8 ranks
 * (calibrate/profiles/data/cesm-trefht-rel1e-4-lorenzo3d.json, the data of whatif-1024). */
static const double DEFAULT_CR_FIXEDLEN[8] = {5.470, 5.040, 4.811, 4.663, 4.554, 4.471, 4.404, 4.344};
static const double DEFAULT_CR_HUFFMAN[8] = {6.215, 5.651, 5.344, 5.173, 5.039, 4.933, 4.844, 4.772};

static cJSON *cr_data(const double *fixedlen, const double *huffman, int n, const char *cls) {
  cJSON *d = cJSON_CreateObject(), *cr = cJSON_AddObjectToObject(d, "cr");
  cJSON_AddItemToObject(cr, "fixedlen", cJSON_CreateDoubleArray(fixedlen, n));
  cJSON_AddItemToObject(cr, "huffman", cJSON_CreateDoubleArray(huffman, n));
  cJSON_AddStringToObject(d, "class", cls);
  return d;
}

static const char *quant_class(const ncclzQuantSpec *q) {
  if (q->kind == NCCLZ_QUANT_QSGD) return "qsgd";
  return q->lorenzo ? "eb_lorenzo" : "eb";
}

/* Rank slices of a raw f32 file: as many as divide the first dimension (with --dims), up to 8 and
 * up to the ranks of the platform. */
static uint32_t slice_count(size_t elems, int nranks, const unsigned *dims, int ndims) {
  uint32_t r = (uint32_t)(nranks < FLAG_DATA_RANKS ? nranks : FLAG_DATA_RANKS);
  while (r > 1 && ((ndims > 0 && dims[0] % r) || elems / r < 1024)) r--;
  return r;
}

/* A raw f32 --data file: calibrate's data profile of its slices at the profile's frame size. */
static int raw_data(sim_flags *f, const ncclzProfile *prof, int nranks, cJSON **out) {
  ncclzQuantSpec q;
  if (!f->quant) return cli_usage_error(VERB, "--quant SPEC is required with a raw --data file (e.g. eb:rel=1e-4)");
  if (ncclzQuantSpecParse(f->quant, &q) != NCCLZ_OK) return cli_usage_error(VERB, "--quant: %s", ncclzLastError());
  if (q.kind == NCCLZ_QUANT_NONE)
    return cli_usage_error(VERB, "--quant none: a reduction sums integer codes, so the what-if needs a quantizer");
  unsigned dims[3] = {0, 0, 0};
  int ndims = f->dims ? cli_parse_dims(f->dims, dims) : 0;
  if (ndims < 0) return cli_usage_error(VERB, "--dims: expected AxBxC, got '%s'", f->dims);
  size_t len = 0;
  float *raw = cli_read_file(VERB, f->data, &len);
  if (!raw) return CLI_USAGE;
  size_t elems = len / sizeof(float);
  uint32_t ranks = slice_count(elems, nranks, dims, ndims);
  if (len % sizeof(float) || elems < 1024) {
    free(raw);
    return cli_usage_error(VERB, "--data '%s': expected raw float32, a whole number of at least 1024 elements", f->data);
  }
  ncclzQuantParams whole; /* NaN/Inf anywhere in the file, the elements the slices leave out too */
  if (ncclzQuantResolve(&q, raw, elems, dims, ndims, 0, &whole) != NCCLZ_OK) {
    free(raw);
    return cli_usage_error(VERB, "--data: %s", ncclzLastError());
  }
  size_t n = elems / ranks;
  const void *in[FLAG_DATA_RANKS];
  for (uint32_t r = 0; r < ranks; r++) in[r] = raw + r * n;
  uint32_t d32[3] = {ranks > 0 && ndims > 0 ? dims[0] / ranks : 0, dims[1], dims[2]};
  uint64_t frame = prof->thresholds.frame_bytes;
  if (frame > n * sizeof(float)) frame = n * sizeof(float);
  ncclzDataProfile *dp = malloc(sizeof *dp);
  ncclzStatus st = dp ? ncclzDataProfileBuild(&q, NCCLZ_DTYPE_F32, in, ranks, n, d32, ndims, &frame, 1, dp)
                      : ncclzSetError(NCCLZ_ERR_NOMEM, "out of memory");
  free(raw);
  if (st != NCCLZ_OK) {
    free(dp);
    return st == NCCLZ_ERR_NOMEM ? cli_runtime_error(VERB, "%s", ncclzLastError())
                                 : cli_usage_error(VERB, "--data: %s", ncclzLastError());
  }
  double fl[FLAG_DATA_RANKS], hf[FLAG_DATA_RANKS];
  for (uint32_t k = 0; k < dp->n_rows; k++) {
    fl[k] = dp->row[k].at[0].cr[NCCLZ_CODER_FIXEDLEN];
    hf[k] = dp->row[k].at[0].cr[NCCLZ_CODER_HUFFMAN];
  }
  snprintf(f->data_text, sizeof f->data_text, "%s, quant %s: CR fixedlen %.2f, huffman %.2f (1 rank); %.2f, %.2f (%u ranks summed)",
           f->data, f->quant, fl[0], hf[0], fl[dp->n_rows - 1], hf[dp->n_rows - 1], dp->n_rows);
  *out = cr_data(fl, hf, (int)dp->n_rows, quant_class(&q));
  free(dp);
  return CLI_OK;
}

/* A data-profile JSON (ncclz profile-data) is told from raw floats by its first byte. */
static int is_json(const char *path) {
  FILE *fp = fopen(path, "rb");
  int c = ' ';
  while (fp && (c == ' ' || c == '\n' || c == '\r' || c == '\t')) c = fgetc(fp);
  if (fp) fclose(fp);
  return c == '{';
}

static int data_json(sim_flags *f, const ncclzProfile *prof, int nranks, cJSON **out) {
  if (!f->data) {
    snprintf(f->data_text, sizeof f->data_text, "default data profile: CESM TREFHT, quant eb:rel=1e-4,lorenzo=3d: "
                                                "CR fixedlen %.2f, huffman %.2f (1 rank); %.2f, %.2f (8 ranks summed)",
             DEFAULT_CR_FIXEDLEN[0], DEFAULT_CR_HUFFMAN[0], DEFAULT_CR_FIXEDLEN[7], DEFAULT_CR_HUFFMAN[7]);
    *out = cr_data(DEFAULT_CR_FIXEDLEN, DEFAULT_CR_HUFFMAN, 8, "eb_lorenzo");
    return CLI_OK;
  }
  if (!is_json(f->data)) return raw_data(f, prof, nranks, out);
  snprintf(f->data_text, sizeof f->data_text, "data profile %s", f->data);
  *out = cJSON_CreateObject();
  cJSON_AddStringToObject(*out, "profile", f->data);
  return CLI_OK;
}

static int check_flags(const sim_flags *f, double *nic) {
  if (f->nic && ncclzParseBandwidth(f->nic, nic))
    return cli_usage_error(VERB, "--nic %s: expected a bandwidth with its unit, such as 200Gb/s or 25GB/s", f->nic);
  if (ncclzCollectiveFromName(f->coll) < 0)
    return cli_usage_error(VERB, "--coll %s: expected allreduce, reducescatter, allgather, alltoall or broadcast", f->coll);
  if (!cli_parse_size(f->size)) return cli_usage_error(VERB, "--size %s: expected a byte count such as 256M", f->size);
  int c = ncclzSimCompressFromName(f->compress);
  if (c <= NCCLZ_SIM_OFF) return cli_usage_error(VERB, "--compress %s: expected auto, raw, fixedlen or huffman", f->compress);
  return CLI_OK;
}

int sim_flags_scenario(sim_flags *f, const ncclzProfile *prof, ncclzSimScenario *s) {
  double nic = 0;
  int rc = check_flags(f, &nic);
  if (rc != CLI_OK) return rc;
  cJSON *data = NULL;
  if ((rc = data_json(f, prof, f->nodes * f->gpus_per_node, &data)) != CLI_OK) return rc;
  cJSON *doc = cJSON_CreateObject();
  cJSON_AddStringToObject(doc, "kind", "what-if");
  cJSON_AddStringToObject(doc, "name", "ncclz sim flags");
  cJSON_AddItemToObject(doc, "data", data);
  cJSON *plat = cJSON_AddObjectToObject(doc, "platform");
  cJSON_AddNumberToObject(plat, "nodes", f->nodes);
  cJSON_AddNumberToObject(plat, "gpus_per_node", f->gpus_per_node);
  cJSON_AddNumberToObject(plat, "rails", f->rails);
  if (f->nic) cJSON_AddStringToObject(plat, "nic", f->nic);
  cJSON *sweep = cJSON_AddObjectToObject(doc, "sweep");
  cJSON_AddStringToObject(sweep, "collective", f->coll);
  cJSON_AddStringToObject(sweep, "bytes", f->size);
  /* auto also shows the forced coders beside REA's choice */
  const char *modes[4] = {"off", f->compress, "fixedlen", "huffman"};
  cJSON_AddItemToObject(sweep, "compress", cJSON_CreateStringArray(modes, strcmp(f->compress, "auto") ? 2 : 4));
  char *text = cJSON_PrintUnformatted(doc);
  cJSON_Delete(doc);
  if (!text) return cli_runtime_error(VERB, "out of memory");
  ncclzStatus st = ncclzSimScenarioParse(text, strlen(text), ".", prof, s);
  free(text);
  if (st != NCCLZ_OK) return cli_usage_error(VERB, "%s", ncclzLastError());
  return CLI_OK;
}

/* ------------------------------------------------------------------ answer */

/* "huffman 100%" or "fixedlen 62%, huffman 38%"; "none (plain NCCL)" without frames. */
static void coders_text(const ncclzSimResult *r, char *buf, size_t cap) {
  if (!ncclzSimFramesSent(r)) {
    snprintf(buf, cap, "none: REA runs the call as plain NCCL");
    return;
  }
  ncclzSimCoderMix(r, ", ", buf, cap);
}

static void print_screen(FILE *o, const sim_flags *f, const ncclzSimScenario *s, const ncclzSimPointResult *res,
                         const char *profile) {
  const ncclzSimPoint *p = &s->points[1];
  const ncclzSimResult *z = &res[1].r;
  int nr = p->platform.nodes * p->platform.gpus_per_node;
  char size[32], bw[64], coders[128];
  ncclzFormatBytes((double)p->options.bytes, size, sizeof size);
  ncclzFormatBandwidth(p->platform.nic_gbps, bw, sizeof bw);
  coders_text(z, coders, sizeof coders);
  fprintf(o, "%s of %s on %d nodes x %d GPUs (%d ranks), %d NIC%s per node at %s\n", ncclzCollectiveName(p->options.coll),
          size, p->platform.nodes, p->platform.gpus_per_node, nr, p->platform.rails, p->platform.rails > 1 ? "s" : "", bw);
  fprintf(o, "data: %s\nprofile: %s\n\n", f->data_text, profile);
  fprintf(o, "                 %12s  %12s\n", "time", "busbw");
  fprintf(o, "  plain NCCL     %9.1f us  %7.2f GB/s  (NCCL's choice: %s)\n", res[1].base_us, res[1].base_busbw,
          ncclzAlgorithmName(res[0].r.algorithm));
  fprintf(o, "  ncclz (%s)%*s%9.1f us  %7.2f GB/s\n", ncclzSimCompressName(p->options.compress),
          (int)(7 - strlen(ncclzSimCompressName(p->options.compress))), "", z->time_us, res[1].busbw);
  for (size_t i = 2; i < s->npoints; i++)
    fprintf(o, "  forced %-8s%9.1f us  %7.2f GB/s  (%.2fx)\n", ncclzSimCompressName(s->points[i].options.compress),
            res[i].r.time_us, res[i].busbw, res[i].speedup);
  fprintf(o, "\n  speedup        %.2fx over NCCL's choice", res[1].speedup);
  if (res[1].best_plain.time_us > 0)
    fprintf(o, ", %.2fx over our best plain schedule (%s)", res[1].best_plain.time_us / z->time_us,
            ncclzAlgorithmName(res[1].best_plain.algorithm));
  fprintf(o, "\n  coder          %s\n  algorithm      %s", coders, ncclzAlgorithmName(z->algorithm));
  if (z->choice >= 0) /* compress auto: the cost model's pair, then replayed */
    fprintf(o, " with coders %s: the cost model's pair (it predicted %.1f us)",
            ncclzChoiceCoderName((ncclzChoiceCoder)z->choice), z->predicted_us);
  fprintf(o, "\n  wire CR        %.2f\n", res[1].wire_cr);
  if (z->frames[NCCLZ_CODER_FIXEDLEN] + z->frames[NCCLZ_CODER_HUFFMAN] == 0)
    fprintf(o, "  why            on every schedule the cost model finds that the wire time the coders\n"
               "                 would save does not pay for their cost\n");
  double wall = res[1].best_plain.wall_s;
  for (size_t i = 0; i < s->npoints; i++) wall += res[i].r.wall_s;
  char actors[32] = "";
  if (!strstr(z->why, "actors")) snprintf(actors, sizeof actors, " (%d actors)", z->actors);
  fprintf(o, "\nreplay: %s%s\n        %.2f s for the %zu points and the best plain schedule\n", z->why, actors, wall,
          s->npoints);
}

static cJSON *side_json(const char *compress, double time_us, double busbw, double algbw) {
  cJSON *j = cJSON_CreateObject();
  cJSON_AddStringToObject(j, "compress", compress);
  cJSON_AddNumberToObject(j, "time_us", time_us);
  cJSON_AddNumberToObject(j, "busbw", busbw);
  cJSON_AddNumberToObject(j, "busbw_GBps", busbw);
  cJSON_AddNumberToObject(j, "algbw_GBps", algbw);
  return j;
}

static cJSON *answer_json(const sim_flags *f, const ncclzSimScenario *s, const ncclzSimPointResult *res,
                          const char *profile, const ncclzProfile *prof) {
  const ncclzSimPoint *p = &s->points[1];
  const ncclzSimPointResult *z = &res[1];
  cJSON *j = cJSON_CreateObject();
  cJSON_AddStringToObject(j, "collective", ncclzCollectiveName(p->options.coll));
  cJSON_AddNumberToObject(j, "nodes", p->platform.nodes);
  cJSON_AddNumberToObject(j, "gpus_per_node", p->platform.gpus_per_node);
  cJSON_AddNumberToObject(j, "ranks", p->platform.nodes * p->platform.gpus_per_node);
  cJSON_AddNumberToObject(j, "rails", p->platform.rails);
  cJSON_AddNumberToObject(j, "nic_gbps", p->platform.nic_gbps);
  cJSON_AddNumberToObject(j, "nic_GBps", p->platform.nic_gbps);
  cJSON_AddNumberToObject(j, "nic_Gbps", 8.0 * p->platform.nic_gbps);
  cJSON_AddNumberToObject(j, "bytes", (double)p->options.bytes);
  cJSON_AddStringToObject(j, "data", f->data_text);
  cJSON_AddStringToObject(j, "profile", profile);
  cJSON_AddStringToObject(j, "device", prof->meta.device);
  double plain_algbw = ncclzSimAlgBw(p->options.bytes, z->base_us);
  cJSON *pl = side_json("off", z->base_us, z->base_busbw, plain_algbw);
  cJSON_AddStringToObject(pl, "algorithm", ncclzAlgorithmName(res[0].r.algorithm));
  cJSON_AddItemToObject(j, "plain", pl);
  cJSON *nz = side_json(ncclzSimCompressName(p->options.compress), z->r.time_us, z->busbw, z->algbw);
  cJSON *mix = cJSON_AddObjectToObject(nz, "coders");
  for (int c = 0; c < NCCLZ_CODER_COUNT && ncclzSimFramesSent(&z->r); c++)
    cJSON_AddNumberToObject(mix, ncclzCoderName((ncclzCoder)c), ncclzSimCoderShare(&z->r, (ncclzCoder)c));
  cJSON_AddStringToObject(nz, "algorithm", ncclzAlgorithmName(z->r.algorithm));
  cJSON_AddNumberToObject(nz, "wire_cr", z->wire_cr);
  cJSON_AddItemToObject(j, "ncclz", nz);
  cJSON *forced = cJSON_AddArrayToObject(j, "forced");
  for (size_t i = 2; i < s->npoints; i++) {
    cJSON *fj = side_json(ncclzSimCompressName(s->points[i].options.compress), res[i].r.time_us, res[i].busbw, res[i].algbw);
    cJSON_AddNumberToObject(fj, "speedup_vs_nccl", res[i].speedup);
    cJSON_AddNumberToObject(fj, "wire_cr", res[i].wire_cr);
    cJSON_AddItemToArray(forced, fj);
  }
  cJSON_AddNumberToObject(j, "speedup_vs_nccl", z->speedup);
  if (z->best_plain.time_us > 0) {
    cJSON_AddNumberToObject(j, "speedup_vs_best_plain", z->best_plain.time_us / z->r.time_us);
    cJSON_AddStringToObject(j, "best_plain_algorithm", ncclzAlgorithmName(z->best_plain.algorithm));
  }
  cJSON_AddStringToObject(j, "fidelity", ncclzSimFidelityName(z->r.fidelity));
  cJSON_AddStringToObject(j, "fidelity_why", z->r.why);
  cJSON_AddBoolToObject(j, "approximate", z->r.approximate);
  return j;
}

int sim_flags_answer(const sim_flags *f, const ncclzSimScenario *s, const ncclzSimPointResult *res,
                     const char *profile, const ncclzProfile *prof, int json) {
  print_screen(json ? stderr : stdout, f, s, res, profile);
  if (!json) return CLI_OK;
  cJSON *root = answer_json(f, s, res, profile, prof);
  if (s->warnings[0]) cJSON_AddStringToObject(root, "warnings", s->warnings);
  return cli_emit_json(VERB, root);
}
#endif
