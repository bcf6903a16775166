/* Calibration profile: JSON schema v1 (model/PROFILE.md), parsed with cJSON and validated.
 * Every error names the field by its JSON path, e.g. "profile transports.net.beta_gbps: must be > 0",
 * so that a hand-edited or mis-generated profile is easy to fix. */
#include "ncclz/model.h"
#include "rea_decide.h" /* ncclz_rea_curve_us: one curve evaluator for codecs and collectives */

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const hint_names[NCCLZ_HINT_COUNT] = {"nvlink", "shm", "net"};
static const char *const class_names[NCCLZ_CLASS_COUNT] = {"default", "none", "eb", "eb_lorenzo", "qsgd"};

const char *ncclzHintName(ncclzTransportHint h) { return (unsigned)h < NCCLZ_HINT_COUNT ? hint_names[h] : "?"; }

int ncclzHintFromName(const char *name) {
  for (int i = 0; name && i < NCCLZ_HINT_COUNT; i++)
    if (!strcmp(name, hint_names[i])) return i;
  return -1;
}

const char *ncclzDataClassName(ncclzDataClass c) {
  return (unsigned)c < NCCLZ_CLASS_COUNT ? class_names[c] : "?";
}

int ncclzDataClassFromName(const char *name) {
  for (int i = 0; name && i < NCCLZ_CLASS_COUNT; i++)
    if (!strcmp(name, class_names[i])) return i;
  return -1;
}

ncclzDataClass ncclzDataClassOf(const ncclzQuantParams *q) {
  if (!q || q->kind == NCCLZ_QUANT_NONE) return NCCLZ_CLASS_NONE;
  if (q->kind == NCCLZ_QUANT_QSGD) return NCCLZ_CLASS_QSGD;
  return q->lorenzo ? NCCLZ_CLASS_EB_LORENZO : NCCLZ_CLASS_EB;
}

/* ------------------------------------------------------------ field access */

/* The JSON path of the field being read, for error messages. */
typedef struct {
  char path[160];
} Path;

/* Appends text to a path, cutting it at the buffer's end (paths are short in practice). */
static void path_append(Path *p, const char *text) {
  size_t used = strlen(p->path);
  size_t room = sizeof p->path - 1 - used;
  size_t len = strlen(text);
  if (len > room) len = room;
  memcpy(p->path + used, text, len);
  p->path[used + len] = '\0';
}

static Path path_join(const Path *parent, const char *key) {
  Path p = *parent;
  if (p.path[0]) path_append(&p, ".");
  path_append(&p, key);
  return p;
}

static Path path_index(const Path *parent, int i) {
  Path p = *parent;
  char idx[24];
  snprintf(idx, sizeof idx, "[%d]", i);
  path_append(&p, idx);
  return p;
}

static ncclzStatus field_error(const Path *p, const char *what) {
  return ncclzSetError(NCCLZ_ERR_ARG, "profile %s: %s", p->path, what);
}

static ncclzStatus get_object(const cJSON *parent, const Path *pp, const char *key, const cJSON **out, Path *p) {
  *p = path_join(pp, key);
  *out = cJSON_GetObjectItemCaseSensitive(parent, key);
  if (!*out) return field_error(p, "missing");
  if (!cJSON_IsObject(*out)) return field_error(p, "must be an object");
  return NCCLZ_OK;
}

static ncclzStatus get_number(const cJSON *parent, const Path *pp, const char *key, double *out, Path *p) {
  *p = path_join(pp, key);
  const cJSON *it = cJSON_GetObjectItemCaseSensitive(parent, key);
  if (!it) return field_error(p, "missing");
  if (!cJSON_IsNumber(it) || !isfinite(it->valuedouble)) return field_error(p, "must be a finite number");
  *out = it->valuedouble;
  return NCCLZ_OK;
}

static ncclzStatus get_positive(const cJSON *parent, const Path *pp, const char *key, double *out) {
  Path p;
  ncclzStatus s = get_number(parent, pp, key, out, &p);
  if (s == NCCLZ_OK && !(*out > 0.0)) return field_error(&p, "must be > 0");
  return s;
}

static ncclzStatus get_nonnegative(const cJSON *parent, const Path *pp, const char *key, double *out) {
  Path p;
  ncclzStatus s = get_number(parent, pp, key, out, &p);
  if (s == NCCLZ_OK && !(*out >= 0.0)) return field_error(&p, "must be >= 0");
  return s;
}

static ncclzStatus get_fraction(const cJSON *parent, const Path *pp, const char *key, double *out) {
  Path p;
  ncclzStatus s = get_number(parent, pp, key, out, &p);
  if (s == NCCLZ_OK && !(*out >= 0.0 && *out <= 1.0)) return field_error(&p, "must be in [0, 1]");
  return s;
}

/* A non-negative integer no larger than max. */
static ncclzStatus get_count(const cJSON *parent, const Path *pp, const char *key, double max, uint64_t *out) {
  Path p;
  double v = 0.0;
  ncclzStatus s = get_number(parent, pp, key, &v, &p);
  if (s != NCCLZ_OK) return s;
  if (v < 0.0 || v != floor(v)) return field_error(&p, "must be a non-negative integer");
  if (v > max) {
    char msg[64];
    snprintf(msg, sizeof msg, "must be <= %.0f", max);
    return field_error(&p, msg);
  }
  *out = (uint64_t)v;
  return NCCLZ_OK;
}

static ncclzStatus get_string(const cJSON *parent, const Path *pp, const char *key, char *out, size_t cap) {
  Path p = path_join(pp, key);
  const cJSON *it = cJSON_GetObjectItemCaseSensitive(parent, key);
  if (!it) return field_error(&p, "missing");
  if (!cJSON_IsString(it)) return field_error(&p, "must be a string");
  snprintf(out, cap, "%s", it->valuestring);
  return NCCLZ_OK;
}

#define TRY(expr)                          \
  do {                                     \
    ncclzStatus try_s_ = (expr);           \
    if (try_s_ != NCCLZ_OK) return try_s_; \
  } while (0)

/* ---------------------------------------------------------------- sections */

static ncclzStatus parse_version(const cJSON *root, ncclzProfile *out) {
  Path top = {""}, p;
  double v = 0.0;
  TRY(get_number(root, &top, "version", &v, &p));
  if (v != NCCLZ_PROFILE_VERSION)
    return ncclzSetError(NCCLZ_ERR_ARG, "profile version: unsupported version %g (this build reads %d)", v,
                         NCCLZ_PROFILE_VERSION);
  out->version = NCCLZ_PROFILE_VERSION;
  return NCCLZ_OK;
}

static ncclzStatus parse_metadata(const cJSON *root, ncclzProfileMeta *m) {
  Path top = {""}, p;
  const cJSON *o;
  TRY(get_object(root, &top, "metadata", &o, &p));
  TRY(get_string(o, &p, "device", m->device, sizeof m->device));
  TRY(get_string(o, &p, "driver", m->driver, sizeof m->driver));
  TRY(get_string(o, &p, "cuda", m->cuda, sizeof m->cuda));
  TRY(get_string(o, &p, "nccl", m->nccl, sizeof m->nccl));
  TRY(get_string(o, &p, "date", m->date, sizeof m->date));
  TRY(get_string(o, &p, "method", m->method, sizeof m->method));
  return NCCLZ_OK;
}

static ncclzStatus parse_transports(const cJSON *root, ncclzTransportProfile *t) {
  Path top = {""}, p, ph;
  const cJSON *o, *h;
  TRY(get_object(root, &top, "transports", &o, &p));
  for (int i = 0; i < NCCLZ_HINT_COUNT; i++) {
    TRY(get_object(o, &p, hint_names[i], &h, &ph));
    TRY(get_nonnegative(h, &ph, "alpha_us", &t[i].alpha_us));
    TRY(get_positive(h, &ph, "beta_gbps", &t[i].beta_gbps));
  }
  return NCCLZ_OK;
}

static ncclzStatus parse_curve(const cJSON *parent, const Path *pp, const char *key, ncclzCurve *c);

/* interface (optional): {"<hint>": {"alpha_us": >= 0, "gbps": > 0[, "unit_us": >= 0][, "curve":
 * [{"bytes", "us"}...]]}} for some of the hints. */
static ncclzStatus parse_interface(const cJSON *root, ncclzInterfaceProfile *f) {
  Path top = {""}, p, ph;
  const cJSON *o, *h, *it;
  if (!cJSON_GetObjectItemCaseSensitive(root, "interface")) return NCCLZ_OK;
  TRY(get_object(root, &top, "interface", &o, &p));
  cJSON_ArrayForEach(it, o) {
    int i = ncclzHintFromName(it->string);
    if (i < 0) {
      Path pk = path_join(&p, it->string);
      return field_error(&pk, "not a transport hint (nvlink, shm, net)");
    }
    TRY(get_object(o, &p, it->string, &h, &ph));
    TRY(get_nonnegative(h, &ph, "alpha_us", &f[i].alpha_us));
    TRY(get_positive(h, &ph, "gbps", &f[i].gbps));
    if (cJSON_GetObjectItemCaseSensitive(h, "unit_us")) TRY(get_nonnegative(h, &ph, "unit_us", &f[i].unit_us));
    if (cJSON_GetObjectItemCaseSensitive(h, "curve")) TRY(parse_curve(h, &ph, "curve", &f[i].curve));
    f[i].present = 1;
  }
  return NCCLZ_OK;
}

/* The hint's interface section, or NULL when the profile has none for it. */
static const ncclzInterfaceProfile *iface_of(const ncclzProfile *p, ncclzTransportHint hint) {
  return (unsigned)hint < NCCLZ_HINT_COUNT && p->iface[hint].present ? &p->iface[hint] : NULL;
}

double ncclzProfileUnitUs(const ncclzProfile *p, ncclzTransportHint hint) {
  const ncclzInterfaceProfile *f = iface_of(p, hint);
  return f ? f->unit_us : 0.0;
}

double ncclzProfileInterfaceUs(const ncclzProfile *p, ncclzTransportHint hint, double bytes) {
  const ncclzInterfaceProfile *f = iface_of(p, hint);
  if (!f) return 0.0;
  if (f->curve.n_points >= 2) return ncclz_rea_curve_us(&f->curve, bytes); /* the one curve evaluator */
  return f->alpha_us + bytes / (f->gbps * 1e3);
}

/* A curve: a non-empty array of {"bytes": >0 increasing, "us": >=0}. */
static ncclzStatus parse_curve(const cJSON *parent, const Path *pp, const char *key, ncclzCurve *c) {
  Path p = path_join(pp, key);
  const cJSON *arr = cJSON_GetObjectItemCaseSensitive(parent, key);
  if (!arr) return field_error(&p, "missing");
  if (!cJSON_IsArray(arr)) return field_error(&p, "must be an array of {\"bytes\", \"us\"} points");
  int n = (int)ncclzJsonCount(arr, NCCLZ_CURVE_MAX_POINTS);
  if (n < 1 || n > NCCLZ_CURVE_MAX_POINTS) {
    char msg[64];
    snprintf(msg, sizeof msg, "must have 1 to %d points", NCCLZ_CURVE_MAX_POINTS);
    return field_error(&p, msg);
  }
  const cJSON *pt;
  int i = 0;
  cJSON_ArrayForEach(pt, arr) {
    Path pi = path_index(&p, i), pb;
    if (!cJSON_IsObject(pt)) return field_error(&pi, "must be an object");
    TRY(get_positive(pt, &pi, "bytes", &c->bytes[i]));
    TRY(get_nonnegative(pt, &pi, "us", &c->us[i]));
    pb = path_join(&pi, "bytes");
    if (i > 0 && !(c->bytes[i] > c->bytes[i - 1])) return field_error(&pb, "must be larger than the previous point's");
    i++;
  }
  c->n_points = (uint32_t)n;
  return NCCLZ_OK;
}

/* curves: {"default": {...} required, other classes optional, unknown names rejected}. */
static ncclzStatus parse_curves(const cJSON *codec, const Path *pp, ncclzCodecCurves *cv) {
  Path p, pc;
  const cJSON *o, *cls;
  TRY(get_object(codec, pp, "curves", &o, &p));
  for (const cJSON *it = o->child; it; it = it->next) {
    pc = path_join(&p, it->string);
    if (ncclzDataClassFromName(it->string) < 0)
      return field_error(&pc, "unknown data class (default, none, eb, eb_lorenzo, qsgd)");
  }
  for (int k = 0; k < NCCLZ_CLASS_COUNT; k++) {
    if (k != NCCLZ_CLASS_DEFAULT && !cJSON_GetObjectItemCaseSensitive(o, class_names[k])) continue;
    TRY(get_object(o, &p, class_names[k], &cls, &pc));
    TRY(parse_curve(cls, &pc, "encode", &cv[k].encode));
    TRY(parse_curve(cls, &pc, "decode", &cv[k].decode));
    cv[k].present = 1;
  }
  return NCCLZ_OK;
}

/* lambda_enc / lambda_dec: {"nvlink": f, "shm": f, "net": f}, each in [0, 1]. */
static ncclzStatus parse_lambdas(const cJSON *codec, const Path *pp, const char *key, double *lambda) {
  Path p;
  const cJSON *o;
  TRY(get_object(codec, pp, key, &o, &p));
  for (int i = 0; i < NCCLZ_HINT_COUNT; i++) TRY(get_fraction(o, &p, hint_names[i], &lambda[i]));
  return NCCLZ_OK;
}

static ncclzStatus parse_codecs(const cJSON *root, ncclzCodecProfile *codec) {
  Path top = {""}, p, pc;
  const cJSON *o, *c;
  TRY(get_object(root, &top, "codecs", &o, &p));
  for (int k = NCCLZ_CODER_FIXEDLEN; k < NCCLZ_CODER_COUNT; k++) {
    TRY(get_object(o, &p, ncclzCoderName((ncclzCoder)k), &c, &pc));
    TRY(get_nonnegative(c, &pc, "alpha_us", &codec[k].alpha_us));
    TRY(parse_lambdas(c, &pc, "lambda_enc", codec[k].lambda_enc));
    TRY(parse_lambdas(c, &pc, "lambda_dec", codec[k].lambda_dec));
    TRY(parse_curves(c, &pc, codec[k].curves));
  }
  return NCCLZ_OK;
}

static ncclzStatus parse_thresholds(const cJSON *root, ncclzThresholds *t) {
  Path top = {""}, p, pf;
  const cJSON *o;
  uint64_t v = 0;
  const double big = 9007199254740992.0; /* 2^53: every integer up to here is exact in JSON */
  TRY(get_object(root, &top, "thresholds", &o, &p));
  TRY(get_count(o, &p, "fast_path_bytes", big, &t->fast_path_bytes));
  TRY(get_count(o, &p, "huff_min_bytes", big, &t->huff_min_bytes));
  TRY(get_count(o, &p, "min_gain_permil", 1000, &v));
  t->min_gain_permil = (uint32_t)v;
  TRY(get_count(o, &p, "sample_window_bytes", NCCLZ_REA_SAMPLE_MAX_BYTES, &v));
  pf = path_join(&p, "sample_window_bytes");
  if (v < 128) return field_error(&pf, "must be >= 128 (one 32-symbol block)");
  t->sample_window_bytes = (uint32_t)v;
  TRY(get_count(o, &p, "sample_pieces", 512, &v));
  pf = path_join(&p, "sample_pieces");
  if (v < 1) return field_error(&pf, "must be >= 1");
  t->sample_pieces = (uint32_t)v;
  TRY(get_count(o, &p, "frame_bytes", 4294967295.0, &t->frame_bytes));
  pf = path_join(&p, "frame_bytes");
  if (t->frame_bytes < 4) return field_error(&pf, "must be >= 4");
  return NCCLZ_OK;
}

/* collectives (optional): {"ranks": N >= 2, "paths": {"<path>": {"<collective>": curve}}}. The
 * names are checked for shape only: the path and collective lists belong to the layers above. */
static ncclzStatus parse_plain_name(const Path *p, const char *name, char *out, size_t cap) {
  size_t len = strlen(name);
  if (len == 0 || len >= cap) return field_error(p, "name must have 1 to 15 characters");
  for (size_t i = 0; i < len; i++)
    if (!((name[i] >= 'a' && name[i] <= 'z') || (name[i] >= '0' && name[i] <= '9')))
      return field_error(p, "name must be lower-case letters and digits");
  memcpy(out, name, len + 1);
  return NCCLZ_OK;
}

static ncclzStatus parse_plain(const cJSON *root, ncclzProfile *out) {
  Path top = {""}, p, pp, pc;
  const cJSON *o, *paths;
  uint64_t ranks;
  if (!cJSON_GetObjectItemCaseSensitive(root, "collectives")) return NCCLZ_OK;
  TRY(get_object(root, &top, "collectives", &o, &p));
  TRY(get_count(o, &p, "ranks", 1e6, &ranks));
  if (ranks < 2) {
    pc = path_join(&p, "ranks");
    return field_error(&pc, "must be >= 2");
  }
  out->plain_ranks = (uint32_t)ranks;
  TRY(get_object(o, &p, "paths", &paths, &pp));
  for (const cJSON *path = paths->child; path; path = path->next) {
    Path ppath = path_join(&pp, path->string);
    char name[sizeof out->plain[0].path];
    TRY(parse_plain_name(&ppath, path->string, name, sizeof name));
    if (!cJSON_IsObject(path)) return field_error(&ppath, "must be an object of collective curves");
    for (const cJSON *coll = path->child; coll; coll = coll->next) {
      pc = path_join(&ppath, coll->string);
      if (out->n_plain == NCCLZ_PLAIN_MAX) return field_error(&pc, "too many curves (at most 40)");
      ncclzPlainCurve *c = &out->plain[out->n_plain];
      memcpy(c->path, name, sizeof name);
      TRY(parse_plain_name(&pc, coll->string, c->collective, sizeof c->collective));
      TRY(parse_curve(path, &ppath, coll->string, &c->curve));
      out->n_plain++;
    }
  }
  return NCCLZ_OK;
}

const ncclzCurve *ncclzProfilePlainCurve(const ncclzProfile *p, const char *path, const char *collective) {
  for (uint32_t i = 0; i < p->n_plain; i++)
    if (!strcmp(p->plain[i].path, path) && !strcmp(p->plain[i].collective, collective)) return &p->plain[i].curve;
  return NULL;
}

double ncclzProfilePlainUs(const ncclzProfile *p, const char *path, const char *collective, double bytes) {
  const ncclzCurve *c = ncclzProfilePlainCurve(p, path, collective);
  return c ? ncclz_rea_curve_us(c, bytes) : -1.0;
}

/* ------------------------------------------------------------------ loader */

static ncclzStatus parse_root(cJSON *root, ncclzProfile *out) {
  memset(out, 0, sizeof *out);
  ncclzStatus s = cJSON_IsObject(root) ? NCCLZ_OK : ncclzSetError(NCCLZ_ERR_ARG, "profile: must be a JSON object");
  if (s == NCCLZ_OK) s = parse_version(root, out);
  if (s == NCCLZ_OK) s = parse_metadata(root, &out->meta);
  if (s == NCCLZ_OK) s = parse_transports(root, out->transport);
  if (s == NCCLZ_OK) s = parse_codecs(root, out->codec);
  if (s == NCCLZ_OK) s = parse_thresholds(root, &out->thresholds);
  if (s == NCCLZ_OK) s = parse_plain(root, out);
  if (s == NCCLZ_OK) s = parse_interface(root, out->iface);
  cJSON_Delete(root);
  return s;
}

ncclzStatus ncclzProfileParse(const char *json, size_t len, ncclzProfile *out) {
  if (!json || !out) return ncclzSetError(NCCLZ_ERR_ARG, "ncclzProfileParse: NULL argument");
  memset(out, 0, sizeof *out);
  cJSON *root;
  ncclzStatus s = ncclzJsonParse("profile", json, len, &root);
  return s == NCCLZ_OK ? parse_root(root, out) : s;
}

extern const unsigned char ncclz_default_profile_json[];
extern const size_t ncclz_default_profile_len;

uint64_t ncclzProfileFrameBytes(const ncclzProfile *p) {
  return p && p->thresholds.frame_bytes ? p->thresholds.frame_bytes : (4u << 20);
}

ncclzStatus ncclzProfileDefault(ncclzProfile *out) {
  return ncclzProfileParse((const char *)ncclz_default_profile_json, ncclz_default_profile_len, out);
}

ncclzStatus ncclzProfileLoad(const char *path, ncclzProfile *out) {
  if (!path || !out) return ncclzSetError(NCCLZ_ERR_ARG, "ncclzProfileLoad: NULL argument");
  memset(out, 0, sizeof *out);
  cJSON *root;
  ncclzStatus s = ncclzJsonLoad("profile", path, &root);
  return s == NCCLZ_OK ? parse_root(root, out) : s;
}
