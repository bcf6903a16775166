/* What-if scenarios (docs/scenarios.md): a base platform and options, a data profile, and sweep
 * axes whose cross product gives the points. Parsed with cJSON; every error names its field. */
#include "sim_internal.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define ERR(...) ncclzSetError(NCCLZ_ERR_ARG, "scenario " __VA_ARGS__)

/* ------------------------------------------------------------ field readers */

static int num_field(const cJSON *obj, const char *path, const char *key, double lo, double hi, double *out) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
  if (!v) return 0;
  if (!cJSON_IsNumber(v)) return ERR("%s.%s: must be a number", path, key), -1;
  if (!(v->valuedouble >= lo && v->valuedouble <= hi))
    return ERR("%s.%s: must be in [%g, %g]", path, key, lo, hi), -1;
  *out = v->valuedouble;
  return 0;
}

static int int_field(const cJSON *obj, const char *path, const char *key, double lo, double hi, int *out) {
  double d = *out;
  if (num_field(obj, path, key, lo, hi, &d)) return -1;
  if (d != floor(d)) return ERR("%s.%s: must be an integer", path, key), -1;
  *out = (int)d;
  return 0;
}

/* A byte count: a number, or a string with a K/M/G suffix (powers of 1024). */
static int bytes_value(const cJSON *v, const char *field, uint64_t *out) {
  if (ncclzJsonBytes(v, out)) return ERR("%s: expected a byte count such as 1048576 or \"1M\"", field), -1;
  return 0;
}

/* A bandwidth with its unit ("200Gb/s", "25GB/s"), into GB/s; the unitless legacy field beside it
 * (nic_gbps: GB/s) may not be given as well. */
static int bw_value(const cJSON *v, const char *field, double *out) {
  if (!cJSON_IsString(v) || ncclzParseBandwidth(v->valuestring, out))
    return ERR("%s: expected a bandwidth with its unit, such as \"200Gb/s\" or \"25GB/s\"", field), -1;
  return 0;
}

static int bw_field(const cJSON *obj, const char *path, const char *key, const char *legacy, double *out) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
  if (!v) return 0;
  if (cJSON_GetObjectItemCaseSensitive(obj, legacy)) return ERR("%s: give %s or %s, not both", path, key, legacy), -1;
  char field[64];
  snprintf(field, sizeof field, "%s.%s", path, key);
  return bw_value(v, field, out);
}

/* An enum given by name. */
static int name_field(const cJSON *obj, const char *path, const char *key, int (*from)(const char *), const char *expect,
                      int *out) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
  if (!v) return 0;
  int x = cJSON_IsString(v) ? from(v->valuestring) : -1;
  if (x < 0) return ERR("%s.%s: expected %s", path, key, expect), -1;
  *out = x;
  return 0;
}

static int topo_from(const char *s) { return !strcmp(s, "nonblocking") ? 0 : !strcmp(s, "fattree") ? 1 : -1; }
static int place_from(const char *s) {
  return !strcmp(s, "contiguous") ? 0 : !strcmp(s, "strided") ? 1 : !strcmp(s, "random") ? 2 : -1;
}
static int rea_link_from(const char *s) { return !strcmp(s, "platform") ? 0 : !strcmp(s, "profile") ? 1 : -1; }
static int proto_from(const char *s) { return !strcmp(s, "piggyback") ? 0 : !strcmp(s, "header") ? 1 : -1; }
static int hier_inter_from(const char *s) { /* the algorithms hier's inter-node stage can be */
  int a = ncclzAlgorithmFromName(s);
  return a == NCCLZ_ALGO_RHD || a == NCCLZ_ALGO_RING ? a : -1;
}
static int class_from(const char *s) { return ncclzDataClassFromName(s); }

/* --------------------------------------------------------------- sections */

static int parse_platform(const cJSON *o, ncclzSimPlatform *p) {
  if (!o) return 0;
  if (!cJSON_IsObject(o)) return ERR("platform: must be an object"), -1;
  int t = p->topology, pl = p->placement;
  double seed = (double)p->seed;
  if (int_field(o, "platform", "nodes", 1, 1 << 20, &p->nodes) ||
      int_field(o, "platform", "gpus_per_node", 1, 1024, &p->gpus_per_node) ||
      num_field(o, "platform", "nvlink_gbps", 1e-6, 1e9, &p->nvlink_gbps) ||
      num_field(o, "platform", "nvlink_latency_us", 0, 1e9, &p->nvlink_latency_us) ||
      int_field(o, "platform", "rails", 1, 1024, &p->rails) ||
      num_field(o, "platform", "nic_gbps", 1e-6, 1e9, &p->nic_gbps) ||
      num_field(o, "platform", "nic_latency_us", 0, 1e9, &p->nic_latency_us) ||
      num_field(o, "platform", "nic_flow_gbps", 0, 1e9, &p->nic_flow_gbps) ||
      name_field(o, "platform", "topology", topo_from, "nonblocking or fattree", &t) ||
      int_field(o, "platform", "nodes_per_leaf", 1, 1 << 20, &p->nodes_per_leaf) ||
      num_field(o, "platform", "oversubscription", 1, 1e6, &p->oversubscription) ||
      num_field(o, "platform", "uplink_latency_us", 0, 1e9, &p->uplink_latency_us) ||
      name_field(o, "platform", "placement", place_from, "contiguous, strided or random", &pl) ||
      int_field(o, "platform", "stride", 1, 1 << 20, &p->stride) ||
      num_field(o, "platform", "seed", 0, 9e15, &seed) ||
      num_field(o, "platform", "bandwidth_factor", 1e-6, 1e6, &p->bandwidth_factor) ||
      bw_field(o, "platform", "nic", "nic_gbps", &p->nic_gbps) ||
      bw_field(o, "platform", "nvlink", "nvlink_gbps", &p->nvlink_gbps) ||
      bw_field(o, "platform", "nic_flow", "nic_flow_gbps", &p->nic_flow_gbps))
    return -1;
  p->topology = (ncclzSimTopology)t;
  p->placement = (ncclzSimPlacement)pl;
  p->seed = (uint64_t)seed;
  return 0;
}

static int parse_options(const cJSON *o, ncclzSimOptions *opt) {
  if (!o) return 0;
  if (!cJSON_IsObject(o)) return ERR("options: must be an object"), -1;
  int link = opt->rea_link_profile, fid = opt->fidelity, proto = opt->size_protocol, hint = opt->hint, minc = (int)opt->min_chunks, maxc = (int)opt->max_chunks,
      banks = (int)opt->banks, lanes = (int)opt->comm_lanes, inter = opt->hier_inter;
  double chunk = (double)opt->chunk_bytes;
  if (num_field(o, "options", "chunk_bytes", 0, 1e15, &chunk) || int_field(o, "options", "min_chunks", 0, 1 << 16, &minc) ||
      int_field(o, "options", "max_chunks", 0, 1 << 16, &maxc) || int_field(o, "options", "banks", 0, 64, &banks) ||
      int_field(o, "options", "comm_lanes", 0, NCCLZ_MAX_COMM_LANES, &lanes) ||
      int_field(o, "options", "root", 0, 1 << 20, &opt->root) ||
      int_field(o, "options", "full_max_ranks", 0, 1 << 20, &opt->full_max_ranks) ||
      int_field(o, "options", "every_step", 0, 1, &opt->every_step) ||
      int_field(o, "options", "every_channel", 0, 1, &opt->every_channel) ||
      int_field(o, "options", "fold_coded", 0, 1, &opt->fold_coded) ||
      num_field(o, "options", "max_replay_s", 0, 1e7, &opt->max_replay_s) ||
      num_field(o, "options", "max_replay_mib", 0, 1e9, &opt->max_replay_mib) ||
      name_field(o, "options", "fidelity", ncclzSimFidelityFromName, "auto, full or reduced", &fid) ||
      name_field(o, "options", "size_protocol", proto_from, "piggyback or header", &proto) ||
      name_field(o, "options", "hint", ncclzSimHintPolicyFromName, "auto, per_hop, nvlink, shm or net", &hint) ||
      name_field(o, "options", "rea_link", rea_link_from, "platform or profile", &link) ||
      name_field(o, "options", "hier_inter", hier_inter_from, "rhd or ring", &inter))
    return -1;
  opt->rea_link_profile = link;
  opt->hint = (ncclzSimHintPolicy)hint;
  opt->fidelity = (ncclzSimFidelity)fid;
  opt->size_protocol = (ncclzSimSizeProtocol)proto;
  opt->chunk_bytes = (uint64_t)chunk;
  opt->min_chunks = (uint32_t)minc;
  opt->max_chunks = (uint32_t)maxc;
  opt->banks = (uint32_t)banks;
  opt->comm_lanes = (uint32_t)lanes;
  opt->hier_inter = (ncclzAlgorithm)inter;
  return 0;
}

/* One coder's CR: a number (every k) or an array indexed by k-1 (ranks whose codes are summed). */
static int parse_cr(const cJSON *cr, const char *coder, ncclzSimData *d, int c) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(cr, coder);
  if (!v) return ERR("data.cr.%s: required", coder), -1;
  if (cJSON_IsNumber(v)) {
    if (!(v->valuedouble >= 0.01)) return ERR("data.cr.%s: must be >= 0.01", coder), -1;
    for (int k = 0; k < NCCLZ_SIM_MAX_CR_RANKS; k++) d->cr[c][k] = v->valuedouble;
    return 0;
  }
  int n = cJSON_IsArray(v) ? (int)ncclzJsonCount(v, NCCLZ_SIM_MAX_CR_RANKS) : 0, k = 0;
  if (n < 1 || n > NCCLZ_SIM_MAX_CR_RANKS)
    return ERR("data.cr.%s: a number or an array of 1..%d numbers", coder, NCCLZ_SIM_MAX_CR_RANKS), -1;
  const cJSON *e;
  cJSON_ArrayForEach(e, v) {
    if (!cJSON_IsNumber(e) || !(e->valuedouble >= 0.01)) return ERR("data.cr.%s[%d]: must be a number >= 0.01", coder, k), -1;
    d->cr[c][k++] = e->valuedouble;
  }
  for (; k < NCCLZ_SIM_MAX_CR_RANKS; k++) d->cr[c][k] = d->cr[c][n - 1]; /* sums past the array: its last value */
  return 0;
}

/* A path the scenario gives, resolved: as written when absolute or without a base_dir, else
 * relative to base_dir (the scenario file's directory). */
static void scenario_path(const char *base_dir, const char *given, char *out, size_t cap) {
  if (given[0] == '/' || !base_dir) snprintf(out, cap, "%s", given);
  else snprintf(out, cap, "%s/%s", base_dir, given);
}

static int parse_data_file(const cJSON *o, const char *base_dir, const ncclzProfile *prof, ncclzSimData *d) {
  const cJSON *file = cJSON_GetObjectItemCaseSensitive(o, "file");
  const cJSON *quant = cJSON_GetObjectItemCaseSensitive(o, "quant");
  if (!cJSON_IsString(file)) return ERR("data.file: must be a path"), -1;
  if (!cJSON_IsString(quant)) return ERR("data.quant: required with data.file (e.g. \"eb:rel=1e-4\")"), -1;
  if (!prof) return ERR("data.file: needs a profile (--profile) for the frame size"), -1;
  char path[1024];
  scenario_path(base_dir, file->valuestring, path, sizeof path);
  size_t len = 0;
  char *raw = ncclzReadFile("scenario data.file", path, &len);
  if (!raw) return -1;
  ncclzStatus st = ncclzSimDataFromSamples(raw, len, NCCLZ_DTYPE_F32, quant->valuestring, prof, d);
  free(raw);
  if (st != NCCLZ_OK) return ERR("data.file: %s", ncclzLastError()), -1;
  return 0;
}

/* data.profile: a data profile written by `ncclz profile-data` (docs/data-profile.md). Row k gives
 * the CR of frames summing k ranks' codes, at the frame size nearest data.frame_bytes (default:
 * the calibration profile's frame_bytes); the class follows its quantizer unless data.class says. */
static int dp_class(const char *quant) {
  ncclzQuantSpec q;
  if (ncclzQuantSpecParse(quant, &q) != NCCLZ_OK) return -1;
  if (q.kind == NCCLZ_QUANT_NONE) return NCCLZ_CLASS_NONE;
  if (q.kind == NCCLZ_QUANT_QSGD) return NCCLZ_CLASS_QSGD;
  return q.lorenzo ? NCCLZ_CLASS_EB_LORENZO : NCCLZ_CLASS_EB;
}

/* The CRs of one row at the point nearest `frame` (in log size). */
static int dp_row(const cJSON *row, int k, double frame, ncclzSimData *d) {
  const cJSON *pts = cJSON_GetObjectItemCaseSensitive(row, "points"), *pt, *best = NULL;
  double dist = 1e300;
  cJSON_ArrayForEach(pt, pts) {
    const cJSON *fb = cJSON_GetObjectItemCaseSensitive(pt, "frame_bytes");
    if (!cJSON_IsNumber(fb) || fb->valuedouble <= 0) continue;
    double x = fabs(log(fb->valuedouble / frame));
    if (x < dist) dist = x, best = pt;
  }
  const cJSON *cr = cJSON_GetObjectItemCaseSensitive(best, "cr");
  const cJSON *fl = cJSON_GetObjectItemCaseSensitive(cr, "fixedlen"), *hf = cJSON_GetObjectItemCaseSensitive(cr, "huffman");
  if (!cJSON_IsNumber(fl) || !cJSON_IsNumber(hf) || fl->valuedouble < 0.01 || hf->valuedouble < 0.01)
    return ERR("data.profile: rows[%d]: expected points[] with frame_bytes and cr.fixedlen, cr.huffman", k), -1;
  d->cr[NCCLZ_CODER_FIXEDLEN][k] = fl->valuedouble;
  d->cr[NCCLZ_CODER_HUFFMAN][k] = hf->valuedouble;
  return 0;
}

static int parse_data_profile(const cJSON *o, const char *base_dir, const ncclzProfile *prof, ncclzSimData *d, int *cls) {
  const cJSON *file = cJSON_GetObjectItemCaseSensitive(o, "profile");
  double frame = (double)ncclzProfileFrameBytes(prof);
  if (!cJSON_IsString(file)) return ERR("data.profile: must be the path of a data profile (ncclz profile-data)"), -1;
  if (num_field(o, "data", "frame_bytes", 1, 1e15, &frame)) return -1;
  char path[1024];
  scenario_path(base_dir, file->valuestring, path, sizeof path);
  cJSON *root;
  if (ncclzJsonLoad("scenario data.profile", path, &root) != NCCLZ_OK) return -1;
  const cJSON *rows = cJSON_GetObjectItemCaseSensitive(root, "rows"), *row;
  const cJSON *quant = cJSON_GetObjectItemCaseSensitive(root, "quant");
  int n = cJSON_IsArray(rows) ? (int)ncclzJsonCount(rows, NCCLZ_SIM_MAX_CR_RANKS) : 0, rc = 0, k = 0;
  if (n < 1 || n > NCCLZ_SIM_MAX_CR_RANKS || !cJSON_IsString(quant))
    rc = (ERR("data.profile: '%s' is not a data profile (expected quant and 1..%d rows)", path, NCCLZ_SIM_MAX_CR_RANKS), -1);
  if (!rc) cJSON_ArrayForEach(row, rows) if (!rc) rc = dp_row(row, k++, frame, d);
  for (; k < NCCLZ_SIM_MAX_CR_RANKS && !rc; k++)
    for (int c = 0; c < NCCLZ_CODER_COUNT; c++) d->cr[c][k] = d->cr[c][n - 1];
  if (!rc) {
    d->n_ranks = (uint32_t)n;
    *cls = dp_class(quant->valuestring);
    if (*cls < 0) rc = (ERR("data.profile: '%s': unknown quant '%s'", path, quant->valuestring), -1);
  }
  cJSON_Delete(root);
  return rc;
}

static int parse_data(const cJSON *o, const char *base_dir, const ncclzProfile *prof, ncclzSimData *d) {
  ncclzSimDataConstant(d, 1.0, 1.0);
  if (!o) return 0; /* compress "off" needs no data */
  if (!cJSON_IsObject(o)) return ERR("data: must be an object"), -1;
  int cls = NCCLZ_CLASS_DEFAULT;
  const cJSON *cr = cJSON_GetObjectItemCaseSensitive(o, "cr");
  if (!cr && cJSON_GetObjectItemCaseSensitive(o, "profile") && parse_data_profile(o, base_dir, prof, d, &cls)) return -1;
  if (name_field(o, "data", "class", class_from, "default, none, eb, eb_lorenzo or qsgd", &cls)) return -1;
  if (!cr && cJSON_GetObjectItemCaseSensitive(o, "profile")) {
    /* read above */
  } else if (cr) {
    if (!cJSON_IsObject(cr)) return ERR("data.cr: must be an object {\"fixedlen\": .., \"huffman\": ..}"), -1;
    if (parse_cr(cr, "fixedlen", d, NCCLZ_CODER_FIXEDLEN) || parse_cr(cr, "huffman", d, NCCLZ_CODER_HUFFMAN)) return -1;
    d->n_ranks = NCCLZ_SIM_MAX_CR_RANKS;
  } else if (cJSON_GetObjectItemCaseSensitive(o, "file")) {
    if (parse_data_file(o, base_dir, prof, d)) return -1;
  } else {
    return ERR("data: needs cr, file or profile"), -1;
  }
  d->data_class = (ncclzDataClass)cls;
  return 0;
}

/* ------------------------------------------------------------------ sweep */

typedef struct {
  int coll[NCCLZ_COLL_COUNT], ncoll;
  int *nodes, nnodes, *gpn, ngpn;
  double *nic;
  int nnic;
  uint64_t *bytes;
  int nbytes;
  int comp[NCCLZ_SIM_COMPRESS_COUNT], ncomp;
} axes;

static void free_axes(axes *a) {
  free(a->nodes);
  free(a->gpn);
  free(a->nic);
  free(a->bytes);
}

#define SWEEP_MAX_POINTS 100000

/* An axis: absent (the base value), a single value, or an array of values; the length is checked
 * before the values are read (-1 past the sweep's point limit). */
static int axis_len(const cJSON *sw, const char *key, const cJSON **arr) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(sw, key);
  *arr = v;
  if (!v) return 0;
  size_t n = cJSON_IsArray(v) ? ncclzJsonCount(v, SWEEP_MAX_POINTS) : 1;
  if (n > SWEEP_MAX_POINTS) return ERR("sweep.%s: more than %d values", key, SWEEP_MAX_POINTS), -1;
  return (int)n;
}

/* The axis's first value, then the next one (an axis of one value is the value itself). */
static const cJSON *axis_first(const cJSON *arr) { return cJSON_IsArray(arr) ? arr->child : arr; }
static const cJSON *axis_next(const cJSON *arr, const cJSON *e) { return cJSON_IsArray(arr) ? e->next : NULL; }

static int axis_names(const cJSON *sw, const char *key, int (*from)(const char *), const char *expect, int *out,
                      int cap, int *n) {
  const cJSON *arr;
  int len = axis_len(sw, key, &arr), i = 0;
  if (len < 0) return -1;
  if (len > cap) return ERR("sweep.%s: at most %d values", key, cap), -1;
  for (const cJSON *e = len ? axis_first(arr) : NULL; e; e = axis_next(arr, e), i++) {
    int x = cJSON_IsString(e) ? from(e->valuestring) : -1;
    if (x < 0) return ERR("sweep.%s[%d]: expected %s", key, i, expect), -1;
    out[i] = x;
  }
  if (len) *n = len;
  return 0;
}

static int axis_numbers(const cJSON *sw, const char *key, double lo, double hi, int integer, double **out, int *n) {
  const cJSON *arr;
  int len = axis_len(sw, key, &arr), i = 0;
  if (len <= 0) return len;
  *out = malloc((size_t)len * sizeof **out);
  if (!*out) return ncclzSetError(NCCLZ_ERR_NOMEM, "scenario: out of memory"), -1;
  for (const cJSON *e = axis_first(arr); e; e = axis_next(arr, e), i++) {
    if (!cJSON_IsNumber(e) || !(e->valuedouble >= lo && e->valuedouble <= hi) ||
        (integer && e->valuedouble != floor(e->valuedouble)))
      return ERR("sweep.%s[%d]: must be %s in [%g, %g]", key, i, integer ? "an integer" : "a number", lo, hi), -1;
    (*out)[i] = e->valuedouble;
  }
  *n = len;
  return 0;
}

/* sweep.nic: bandwidths with their units, the same axis as nic_gbps. */
static int axis_bandwidths(const cJSON *sw, axes *a) {
  const cJSON *arr;
  int len = axis_len(sw, "nic", &arr), i = 0;
  if (len <= 0) return len;
  if (a->nnic) return ERR("sweep: give nic or nic_gbps, not both"), -1;
  if (!(a->nic = malloc((size_t)len * sizeof *a->nic))) return ncclzSetError(NCCLZ_ERR_NOMEM, "scenario: out of memory"), -1;
  for (const cJSON *e = axis_first(arr); e; e = axis_next(arr, e), i++) {
    char field[48];
    snprintf(field, sizeof field, "sweep.nic[%d]", i);
    if (bw_value(e, field, &a->nic[i])) return -1;
  }
  a->nnic = len;
  return 0;
}

static int to_ints(double *d, int n, int **out) {
  *out = malloc((size_t)(n ? n : 1) * sizeof **out);
  if (!*out) return -1;
  for (int i = 0; i < n; i++) (*out)[i] = (int)d[i];
  return 0;
}

static int collname(const char *s) { return ncclzCollectiveFromName(s); }

static int parse_axes(const cJSON *sw, const ncclzSimPoint *base, axes *a) {
  memset(a, 0, sizeof *a);
  a->coll[0] = base->options.coll, a->ncoll = 1;
  a->comp[0] = base->options.compress, a->ncomp = 1;
  double *tmp = NULL;
  int n = 0, rc = 0;
  if (sw && !cJSON_IsObject(sw)) return ERR("sweep: must be an object"), -1;
  rc = axis_names(sw, "collective", collname, "allreduce, reducescatter, allgather, alltoall or broadcast", a->coll,
                  NCCLZ_COLL_COUNT, &a->ncoll) ||
       axis_names(sw, "compress", ncclzSimCompressFromName, "off, auto, raw, fixedlen or huffman", a->comp,
                  NCCLZ_SIM_COMPRESS_COUNT, &a->ncomp);
  if (!rc) {
    n = 0;
    if (!(rc = axis_numbers(sw, "nodes", 1, 1 << 20, 1, &tmp, &n)) && n) rc = to_ints(tmp, n, &a->nodes);
    a->nnodes = n;
    free(tmp), tmp = NULL;
  }
  if (!rc) {
    n = 0;
    if (!(rc = axis_numbers(sw, "gpus_per_node", 1, 1024, 1, &tmp, &n)) && n) rc = to_ints(tmp, n, &a->gpn);
    a->ngpn = n;
    free(tmp), tmp = NULL;
  }
  if (!rc) rc = axis_numbers(sw, "nic_gbps", 1e-6, 1e9, 0, &a->nic, &a->nnic);
  const cJSON *arr;
  if (!rc) rc = axis_bandwidths(sw, a);
  int len = rc ? 0 : axis_len(sw, "bytes", &arr), i = 0;
  if (len < 0) rc = -1;
  if (len > 0) {
    a->bytes = malloc((size_t)len * sizeof *a->bytes);
    if (!a->bytes) rc = -1;
    for (const cJSON *e = axis_first(arr); e && !rc; e = axis_next(arr, e), i++) {
      char field[48];
      snprintf(field, sizeof field, "sweep.bytes[%d]", i);
      rc = bytes_value(e, field, &a->bytes[i]);
    }
    a->nbytes = rc ? 0 : len;
  }
  return rc ? -1 : 0;
}

/* The cross product, in the order collective, nodes, gpus_per_node, nic_gbps, bytes, compress. */
static int expand(const ncclzSimPoint *base, const axes *a, ncclzSimScenario *s) {
  int nn = a->nnodes ? a->nnodes : 1, ng = a->ngpn ? a->ngpn : 1, nb = a->nbytes ? a->nbytes : 1,
      nw = a->nnic ? a->nnic : 1;
  size_t total = (size_t)a->ncoll * nn * ng * nw * nb * a->ncomp;
  if (total > SWEEP_MAX_POINTS) return ERR("sweep: %zu points, at most %d", total, SWEEP_MAX_POINTS), -1;
  s->points = calloc(total, sizeof *s->points);
  if (!s->points) return ncclzSetError(NCCLZ_ERR_NOMEM, "scenario: out of memory"), -1;
  size_t k = 0;
  for (int ic = 0; ic < a->ncoll; ic++)
    for (int in = 0; in < nn; in++)
      for (int ig = 0; ig < ng; ig++)
        for (int iw = 0; iw < nw; iw++)
          for (int ib = 0; ib < nb; ib++)
            for (int ik = 0; ik < a->ncomp; ik++) {
              ncclzSimPoint *p = &s->points[k++];
              *p = *base;
              p->options.coll = (ncclzCollective)a->coll[ic];
              if (a->nnodes) p->platform.nodes = a->nodes[in];
              if (a->ngpn) p->platform.gpus_per_node = a->gpn[ig];
              if (a->nnic) p->platform.nic_gbps = a->nic[iw];
              if (a->nbytes) p->options.bytes = a->bytes[ib];
              p->options.compress = (ncclzSimCompress)a->comp[ik];
            }
  s->npoints = total;
  return 0;
}

static int parse_root(const cJSON *root, const char *base_dir, const ncclzProfile *prof, ncclzSimScenario *s) {
  if (!cJSON_IsObject(root)) return ERR(": must be a JSON object"), -1;
  const cJSON *kind = cJSON_GetObjectItemCaseSensitive(root, "kind");
  if (!cJSON_IsString(kind) || strcmp(kind->valuestring, "what-if") != 0)
    return ERR("kind: must be \"what-if\" (the kind that ncclz sim runs)"), -1;
  const cJSON *name = cJSON_GetObjectItemCaseSensitive(root, "name");
  if (name && !cJSON_IsString(name)) return ERR("name: must be a string"), -1;
  snprintf(s->name, sizeof s->name, "%s", name ? name->valuestring : "what-if");
  const cJSON *meas = cJSON_GetObjectItemCaseSensitive(root, "measured");
  if (meas && !cJSON_IsString(meas)) return ERR("measured: must be a path"), -1;
  if (meas) {
    scenario_path(base_dir, meas->valuestring, s->measured, sizeof s->measured);
  }
  ncclzSimPoint base;
  ncclzSimPlatformDefault(&base.platform);
  ncclzSimOptionsDefault(&base.options);
  if (parse_data(cJSON_GetObjectItemCaseSensitive(root, "data"), base_dir, prof, &s->data) ||
      parse_platform(cJSON_GetObjectItemCaseSensitive(root, "platform"), &base.platform) ||
      parse_options(cJSON_GetObjectItemCaseSensitive(root, "options"), &base.options))
    return -1;
  axes a;
  int rc = parse_axes(cJSON_GetObjectItemCaseSensitive(root, "sweep"), &base, &a);
  if (!rc) rc = expand(&base, &a, s);
  free_axes(&a);
  if (rc) return -1;
  for (size_t i = 0; i < s->npoints; i++) {
    if (ncclzSimPlatformValidate(&s->points[i].platform) != NCCLZ_OK) return ERR("%s", ncclzLastError()), -1;
    if (s->points[i].options.compress != NCCLZ_SIM_OFF && !cJSON_GetObjectItemCaseSensitive(root, "data"))
      return ERR("data: required when sweep.compress is not \"off\""), -1;
  }
  return 0;
}

/* One warning per distinct NIC bandwidth outside what NICs offer (or a unitless nic_gbps that looks
 * like Gb/s), into s->warnings. */
static void nic_warnings(const cJSON *root, ncclzSimScenario *s) {
  const cJSON *plat = cJSON_GetObjectItemCaseSensitive(root, "platform"), *sw = cJSON_GetObjectItemCaseSensitive(root, "sweep");
  int unitless = cJSON_GetObjectItemCaseSensitive(plat, "nic_gbps") || cJSON_GetObjectItemCaseSensitive(sw, "nic_gbps");
  const char *field = cJSON_GetObjectItemCaseSensitive(sw, "nic") ? "sweep.nic"
                      : cJSON_GetObjectItemCaseSensitive(sw, "nic_gbps") ? "sweep.nic_gbps"
                      : unitless ? "platform.nic_gbps" : "platform.nic";
  double seen[8];
  int nseen = 0;
  size_t used = 0;
  for (size_t i = 0; i < s->npoints && nseen < 8; i++) {
    double g = s->points[i].platform.nic_gbps;
    int k = 0;
    while (k < nseen && seen[k] != g) k++;
    if (k < nseen) continue;
    seen[nseen++] = g;
    char line[300];
    if (ncclzSimNicWarning(field, g, unitless, line, sizeof line) && used < sizeof s->warnings)
      used += (size_t)snprintf(s->warnings + used, sizeof s->warnings - used, "%s%s", used ? "\n" : "", line);
  }
}

/* The scenario in the JSON text; name starts the error of a text that is not strict JSON. */
static ncclzStatus parse_text(const char *name, const char *json, size_t len, const char *base_dir,
                              const ncclzProfile *prof, ncclzSimScenario *out) {
  memset(out, 0, sizeof *out);
  cJSON *root;
  ncclzStatus st = ncclzJsonParse(name, json, len, &root);
  if (st != NCCLZ_OK) return st;
  int rc = parse_root(root, base_dir, prof, out);
  if (!rc) nic_warnings(root, out);
  cJSON_Delete(root);
  if (rc) {
    ncclzSimScenarioFree(out);
    return NCCLZ_ERR_ARG;
  }
  return NCCLZ_OK;
}

ncclzStatus ncclzSimScenarioParse(const char *json, size_t len, const char *base_dir, const ncclzProfile *prof,
                                  ncclzSimScenario *out) {
  return parse_text("scenario", json, len, base_dir, prof, out);
}

/* The directory of the scenario file at path (relative paths inside it resolve from there). */
static void scenario_dir(const char *path, char *dir, size_t cap) {
  snprintf(dir, cap, "%s", path);
  char *slash = strrchr(dir, '/');
  if (slash) *slash = 0;
  else snprintf(dir, cap, ".");
}

ncclzStatus ncclzSimScenarioLoad(const char *path, const ncclzProfile *prof, ncclzSimScenario *out) {
  memset(out, 0, sizeof *out);
  size_t got = 0;
  char *buf = ncclzReadFile("scenario", path, &got);
  if (!buf) return NCCLZ_ERR_IO;
  char dir[1024];
  scenario_dir(path, dir, sizeof dir);
  char name[1100];
  snprintf(name, sizeof name, "scenario %s", path);
  ncclzStatus st = parse_text(name, buf, got, dir, prof, out);
  free(buf);
  return st;
}

ncclzStatus ncclzSimScenarioProfile(const char *path, char *out, size_t cap) {
  cJSON *root;
  out[0] = 0;
  ncclzStatus st = ncclzJsonLoad("scenario", path, &root);
  if (st != NCCLZ_OK) return st;
  const cJSON *f = cJSON_IsObject(root) ? cJSON_GetObjectItemCaseSensitive(root, "profile") : NULL;
  if (f && !cJSON_IsString(f))
    st = ncclzSetError(NCCLZ_ERR_ARG, "scenario %s: profile: must be the path of a calibration profile", path);
  else if (f) {
    char dir[1024];
    scenario_dir(path, dir, sizeof dir);
    scenario_path(dir, f->valuestring, out, cap);
  }
  cJSON_Delete(root);
  return st;
}

long ncclzSimScenarioPlainTwin(const ncclzSimScenario *s, size_t i) {
  const ncclzSimPoint *p = &s->points[i];
  for (size_t j = 0; j < i; j++) {
    const ncclzSimPoint *q = &s->points[j];
    if (q->options.compress == NCCLZ_SIM_OFF && q->options.coll == p->options.coll &&
        q->options.bytes == p->options.bytes && !memcmp(&q->platform, &p->platform, sizeof q->platform))
      return (long)j;
  }
  return -1;
}

void ncclzSimScenarioFree(ncclzSimScenario *s) {
  free(s->points);
  s->points = NULL;
  s->npoints = 0;
}
