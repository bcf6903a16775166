/* Quantizer specs, the error-bounded quantizer, Lorenzo prediction and dtype conversion, on the
 * real data: the slices in tests/data and, when present, the whole scientific data set. */
#include "ncclz/codecs.h"
#include "../codecs/eb_code.h"
#include "testutil.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ------------------------------------------------------------------ specs */

static void check_good_spec(const char *text, ncclzQuantKind kind) {
  ncclzQuantSpec q, back;
  ncclzStatus st = ncclzQuantSpecParse(text, &q);
  CHECK(st == NCCLZ_OK, "'%s' refused: %s", text, ncclzLastError());
  if (st != NCCLZ_OK) return;
  CHECK(q.kind == kind, "'%s' kind %d", text, (int)q.kind);
  char canon[128];
  ncclzQuantSpecFormat(&q, canon, sizeof canon);
  st = ncclzQuantSpecParse(canon, &back);
  CHECK(st == NCCLZ_OK && memcmp(&q, &back, sizeof q) == 0, "'%s' -> '%s' does not parse back the same", text,
        canon);
}

static void check_bad_spec(const char *text, const char *must_say) {
  ncclzQuantSpec q;
  memset(&q, 0x5a, sizeof q);
  ncclzQuantSpec before = q;
  ncclzStatus st = ncclzQuantSpecParse(text, &q);
  const char *msg = ncclzLastError();
  CHECK(st == NCCLZ_ERR_ARG, "'%s' accepted (status %d)", text, (int)st);
  CHECK(strstr(msg, must_say) != NULL, "'%s': message '%s' lacks '%s'", text, msg, must_say);
  CHECK(strchr(msg, '\n') == NULL, "'%s': message is not one line", text);
  CHECK(memcmp(&q, &before, sizeof q) == 0, "'%s': output touched on failure", text);
}

static void test_spec_parse(void) {
  ncclzQuantSpec q;
  check_good_spec("none", NCCLZ_QUANT_NONE);
  check_good_spec("eb:abs=0.01", NCCLZ_QUANT_EB);
  check_good_spec("eb:rel=1e-4,lorenzo=3d", NCCLZ_QUANT_EB);
  check_good_spec("eb:rel=1e-3,lorenzo=2d,fill=9.97e36", NCCLZ_QUANT_EB);
  check_good_spec("eb:fill=-999,abs=0.5,lorenzo=1d", NCCLZ_QUANT_EB);
  check_good_spec("qsgd:bits=8,bucket=512", NCCLZ_QUANT_QSGD);
  check_good_spec("qsgd:bits=2,bucket=64,seed=7", NCCLZ_QUANT_QSGD);
  check_good_spec("qsgd:bucket=1,bits=4,seed=0xffffffffffffffff", NCCLZ_QUANT_QSGD);

  CHECK(ncclzQuantSpecParse("eb:rel=1e-4,lorenzo=3d,fill=9.97e36", &q) == NCCLZ_OK, "%s", ncclzLastError());
  CHECK(q.eb_is_rel && q.eb == 1e-4 && q.lorenzo == 3 && q.has_fill && q.fill_value == 9.97e36f,
        "eb fields: rel %d eb %g lorenzo %d fill %d %g", q.eb_is_rel, q.eb, q.lorenzo, q.has_fill,
        (double)q.fill_value);
  CHECK(ncclzQuantSpecParse("qsgd:bits=8,bucket=512", &q) == NCCLZ_OK, "%s", ncclzLastError());
  CHECK(q.qsgd_bits == 8 && q.qsgd_bucket == 512 && q.seed == 0x6e63636c7aull, "qsgd fields %d %u %llx",
        q.qsgd_bits, q.qsgd_bucket, (unsigned long long)q.seed);
  char canon[64];
  ncclzQuantSpecFormat(&q, canon, sizeof canon);
  CHECK(strcmp(canon, "qsgd:bits=8,bucket=512") == 0, "canonical '%s'", canon);
  CHECK(ncclzQuantSpecParse("eb:abs=0.01,lorenzo=2d", &q) == NCCLZ_OK, "%s", ncclzLastError());
  ncclzQuantSpecFormat(&q, canon, sizeof canon);
  CHECK(strcmp(canon, "eb:abs=0.01,lorenzo=2d") == 0, "canonical '%s'", canon);

  check_bad_spec("", "empty");
  check_bad_spec(NULL, "empty");
  check_bad_spec("foo:abs=1", "unknown quantizer 'foo'");
  check_bad_spec("nonesuch", "unknown quantizer 'nonesuch'");
  check_bad_spec("none:x=1", "none takes no parameters");
  check_bad_spec("eb:", "abs=X or rel=X");
  check_bad_spec("eb:lorenzo=1d", "abs=X or rel=X");
  check_bad_spec("eb:abs=0", "abs='0' is not a positive finite number");
  check_bad_spec("eb:abs=-1", "abs='-1'");
  check_bad_spec("eb:abs=nan", "abs='nan'");
  check_bad_spec("eb:abs=1e999", "abs='1e999'");
  check_bad_spec("eb:abs=0.1x", "abs='0.1x'");
  check_bad_spec("eb:rel=2", "rel=2 must be in (0, 1]");
  check_bad_spec("eb:abs=1,rel=1e-3", "exactly one of abs= and rel=");
  check_bad_spec("eb:abs=1,lorenzo=4d", "lorenzo='4d' must be 1d, 2d or 3d");
  check_bad_spec("eb:abs=1,lorenzo=3", "lorenzo='3'");
  check_bad_spec("eb:abs=1,lorenzo=1d,lorenzo=2d", "lorenzo= given twice");
  check_bad_spec("eb:abs=1,fill=x", "fill='x' must be a finite float32 number");
  check_bad_spec("eb:abs=1,fill=1e39", "fill='1e39'");
  check_bad_spec("eb:abs=1,foo=2", "unknown key 'foo'; expected abs, rel, lorenzo or fill");
  check_bad_spec("eb:abs=1,", "empty item");
  check_bad_spec("eb:abs", "'abs' is not key=value");
  check_bad_spec("qsgd:bits=3,bucket=8", "bits='3' must be 2, 4 or 8");
  check_bad_spec("qsgd:bits=8", "bucket= is required");
  check_bad_spec("qsgd:bucket=8", "bits= is required");
  check_bad_spec("qsgd:bits=8,bucket=0", "bucket='0'");
  check_bad_spec("qsgd:bits=8,bucket=4294967296", "bucket='4294967296'");
  check_bad_spec("qsgd:bits=8,bucket=8,seed=-1", "seed='-1' must be an unsigned 64-bit integer");
  check_bad_spec("qsgd:bits=8,bucket=8,lorenzo=1d", "unknown key 'lorenzo'; expected bits, bucket or seed");
}

/* --------------------------------------------------------------- fields */

typedef struct {
  char name[96];
  float *x;
  size_t n;
  uint32_t dims[3];
  int ndims;
  int has_fill;
  float fill;
} Field;

static int load_field(const char *path, const char *name, const uint32_t *dims, int ndims, Field *f) {
  memset(f, 0, sizeof *f);
  size_t len = 0;
  f->x = tu_read_file(path, &len);
  if (!f->x) return 0;
  snprintf(f->name, sizeof f->name, "%s", name);
  f->n = len / sizeof(float);
  f->ndims = ndims;
  memcpy(f->dims, dims, (size_t)ndims * sizeof *dims);
  return 1;
}

/* The full data set's root: $NCCLZ_DATA (laid out as scientific/ and gradients/), "" when unset. */
static const char *data_root(void) {
  const char *env = getenv("NCCLZ_DATA");
  return env ? env : "";
}

static char *read_text(const char *path) {
  size_t len = 0;
  FILE *f = fopen(path, "rb");
  if (!f) return NULL; /* absent is a normal case here: no message */
  fclose(f);
  char *raw = tu_read_file(path, &len);
  if (!raw) return NULL;
  char *s = realloc(raw, len + 1);
  if (!s) {
    free(raw);
    return NULL;
  }
  s[len] = '\0';
  return s;
}

/* One entry of fields.json -> a loaded field; 0 if the file is missing or has the wrong size. */
static int load_json_field(const char *dir, const cJSON *entry, Field *f) {
  const cJSON *file = cJSON_GetObjectItem(entry, "file"), *dims = cJSON_GetObjectItem(entry, "dims");
  const cJSON *fill = cJSON_GetObjectItem(entry, "fill_value"), *nfill = cJSON_GetObjectItem(entry, "count_fill");
  if (!cJSON_IsString(file) || !cJSON_IsArray(dims) || cJSON_GetArraySize(dims) > 3) return 0;
  uint32_t d[3];
  int nd = cJSON_GetArraySize(dims);
  uint64_t prod = 1;
  for (int k = 0; k < nd; k++) prod *= d[k] = (uint32_t)cJSON_GetArrayItem(dims, k)->valuedouble;
  char path[2200];
  snprintf(path, sizeof path, "%s/%s", dir, file->valuestring);
  if (!load_field(path, file->valuestring, d, nd, f)) return 0;
  if (f->n != prod) {
    fprintf(stderr, "%s: %zu elements, fields.json says %llu\n", path, f->n, (unsigned long long)prod);
    free(f->x);
    return 0;
  }
  /* Only fields that really contain fill values get fill= (the others carry a nominal one). */
  if (cJSON_IsNumber(fill) && cJSON_IsNumber(nfill) && nfill->valuedouble > 0) {
    f->has_fill = 1;
    f->fill = (float)fill->valuedouble;
  }
  return 1;
}

/* Loads every field of <root>/scientific/fields.json; returns how many (0: set absent). */
static int load_full_set(Field **out, int *expected) {
  char dir[1024], path[1100];
  *out = NULL;
  *expected = 0;
  if (!*data_root()) return 0;
  snprintf(dir, sizeof dir, "%s/scientific", data_root());
  snprintf(path, sizeof path, "%s/fields.json", dir);
  char *text = read_text(path);
  if (!text) return 0;
  cJSON *root = cJSON_Parse(text);
  free(text);
  const cJSON *fields = cJSON_GetObjectItem(root, "fields");
  int count = 0;
  *expected = cJSON_GetArraySize(fields);
  *out = calloc((size_t)(*expected ? *expected : 1), sizeof **out);
  const cJSON *e;
  cJSON_ArrayForEach(e, fields) {
    if (load_json_field(dir, e, &(*out)[count])) count++;
  }
  cJSON_Delete(root);
  return count;
}

static const struct {
  const char *file;
  uint32_t dims[3];
  int ndims;
  int has_fill;
} slices[] = {
    {"trefht_member57_8x64x128.f32", {8, 64, 128}, 3, 0},
    {"trefht_member59_8x64x128.f32", {8, 64, 128}, 3, 0},
    {"ncep_climo_T_8x64x128.f32", {8, 64, 128}, 3, 0},
    {"surface_tC_4x96x192.f32", {4, 96, 192}, 3, 0},
    {"pop_ocean_t_384x320.f32", {384, 320}, 2, 1},
    {"resnet18_rank0_64k.f32", {65536}, 1, 0},
    {"resnet18_rank1_64k.f32", {65536}, 1, 0},
    {"gpt_rank0_64k.f32", {65536}, 1, 0},
};
#define N_SLICES (sizeof slices / sizeof slices[0])
#define POP_FILL 9.969209968386869e+36f /* netCDF's default float fill */

static int load_slice(size_t k, Field *f) {
  if (!load_field(slices[k].file, slices[k].file, slices[k].dims, slices[k].ndims, f)) return 0;
  f->has_fill = slices[k].has_fill;
  f->fill = POP_FILL;
  return 1;
}

/* -------------------------------------------------- EB on one field */

static ncclzStatus resolve_text(const char *text, const Field *f, ncclzQuantParams *p) {
  ncclzQuantSpec spec;
  ncclzStatus st = ncclzQuantSpecParse(text, &spec);
  if (st != NCCLZ_OK) return st;
  return ncclzQuantResolve(&spec, f->x, f->n, f->dims, f->ndims, 0, p);
}

static int same_bits(float a, float b) { return memcmp(&a, &b, sizeof a) == 0; }

/* Dequantized values: within the bound everywhere, fill values bit-exact. Returns max err / bound. */
static double check_bound(const Field *f, const ncclzQuantParams *p, const float *y, const char *spec) {
  size_t bad = 0, first = 0, fills = 0;
  double worst = 0;
  for (size_t i = 0; i < f->n; i++) {
    if (p->has_fill && f->x[i] == p->fill_value) {
      fills++;
      if (!same_bits(f->x[i], y[i]) && bad++ == 0) first = i;
      continue;
    }
    double err = fabs((double)f->x[i] - (double)y[i]);
    if (err / p->bound > worst) worst = err / p->bound;
    if (!(err <= p->bound) && bad++ == 0) first = i;
  }
  CHECK(bad == 0, "%s %s: %zu elements break bound=%g (first index %zu: %.9g -> %.9g)", f->name, spec, bad,
        p->bound, first, bad ? (double)f->x[first] : 0.0, bad ? (double)y[first] : 0.0);
  CHECK(p->bound >= p->abs_eb && p->abs_eb > 0, "%s %s: bound %g, abs_eb %g", f->name, spec, p->bound, p->abs_eb);
  if (f->has_fill)
    CHECK(fills > 0, "%s %s: no fill values found", f->name, spec);
  return worst;
}

/* Forward then inverse must give the codes back, out of place and in place alike. */
static void check_lorenzo_roundtrip(const Field *f, const ncclzQuantParams *p, const int32_t *codes,
                                    int32_t *deltas, int32_t *work, const char *spec) {
  ncclzLorenzoForward(p, codes, f->n, deltas);
  ncclzLorenzoInverse(p, deltas, f->n, work);
  CHECK(memcmp(work, codes, f->n * sizeof *codes) == 0, "%s %s: Lorenzo inverse(forward) != codes", f->name,
        spec);
  memcpy(work, codes, f->n * sizeof *codes);
  ncclzLorenzoForward(p, work, f->n, work);
  CHECK(memcmp(work, deltas, f->n * sizeof *codes) == 0, "%s %s: in-place forward differs", f->name, spec);
  ncclzLorenzoInverse(p, work, f->n, work);
  CHECK(memcmp(work, codes, f->n * sizeof *codes) == 0, "%s %s: in-place inverse differs", f->name, spec);
  for (size_t i = 0; i < f->n; i++) {
    if ((codes[i] == NCCLZ_FILL_CODE) != (deltas[i] == NCCLZ_FILL_CODE)) {
      CHECK(0, "%s %s: fill code moved at index %zu", f->name, spec, i);
      break;
    }
  }
}

/* One bound: quantize, dequantize, check; then Lorenzo 1d..ndims on the same codes. */
static double check_eb_spec(const Field *f, const char *bound, int32_t *codes, int32_t *deltas, int32_t *work,
                            float *y) {
  char spec[160], fill[48] = "";
  if (f->has_fill) snprintf(fill, sizeof fill, ",fill=%.9g", (double)f->fill);
  snprintf(spec, sizeof spec, "eb:%s%s", bound, fill);
  ncclzQuantParams p;
  ncclzStatus st = resolve_text(spec, f, &p);
  CHECK(st == NCCLZ_OK, "%s %s: resolve: %s", f->name, spec, ncclzLastError());
  if (st != NCCLZ_OK) return INFINITY;
  st = ncclzQuantizeEB(&p, f->x, f->n, codes);
  CHECK(st == NCCLZ_OK, "%s %s: quantize: %s", f->name, spec, ncclzLastError());
  st = ncclzDequantizeEB(&p, codes, f->n, y);
  CHECK(st == NCCLZ_OK, "%s %s: dequantize: %s", f->name, spec, ncclzLastError());
  double worst = check_bound(f, &p, y, spec);
  for (int L = 1; L <= f->ndims; L++) {
    char lspec[200];
    snprintf(lspec, sizeof lspec, "eb:%s,lorenzo=%dd%s", bound, L, fill);
    ncclzQuantParams pl;
    st = resolve_text(lspec, f, &pl);
    CHECK(st == NCCLZ_OK && pl.lorenzo == L && pl.abs_eb == p.abs_eb && pl.bound == p.bound, "%s %s: resolve: %s",
          f->name, lspec,
          ncclzLastError());
    if (st == NCCLZ_OK) check_lorenzo_roundtrip(f, &pl, codes, deltas, work, lspec);
  }
  return worst;
}

static void check_eb_field(const Field *f) {
  static const char *const bounds[] = {"rel=1e-2", "rel=1e-3", "rel=1e-4", "abs=0.01"};
  int32_t *codes = malloc(f->n * sizeof *codes), *deltas = malloc(f->n * sizeof *deltas);
  int32_t *work = malloc(f->n * sizeof *work);
  float *y = malloc(f->n * sizeof *y);
  double worst = 0;
  for (size_t b = 0; b < sizeof bounds / sizeof bounds[0]; b++) {
    double w = check_eb_spec(f, bounds[b], codes, deltas, work, y);
    if (w > worst) worst = w;
  }
  printf("  %-34s %8zu elems, %dD: rel 1e-2..1e-4 + abs 0.01, lorenzo 0..%dd: max err/bound %.6f\n", f->name,
         f->n, f->ndims, f->ndims, worst);
  free(codes);
  free(deltas);
  free(work);
  free(y);
}

static void test_eb_slices(void) {
  printf("EB bound on the tests/data slices:\n");
  for (size_t k = 0; k < N_SLICES; k++) {
    Field f;
    CHECK(load_slice(k, &f), "cannot load %s", slices[k].file);
    if (!f.x) continue;
    check_eb_field(&f);
    free(f.x);
  }
}

static void test_eb_full_set(void) {
  Field *fields;
  int expected, got = load_full_set(&fields, &expected);
  if (got == 0) {
    if (*data_root())
      printf("full data set: not found at %s/scientific; only the slices are checked\n", data_root());
    else
      printf("full data set: NCCLZ_DATA unset; only the slices are checked\n");
    free(fields);
    return;
  }
  printf("full data set: found at %s/scientific (%d of %d fields)\n", data_root(), got, expected);
  CHECK(got == expected, "only %d of the %d fields in fields.json could be loaded", got, expected);
  for (int k = 0; k < got; k++) {
    check_eb_field(&fields[k]);
    free(fields[k].x);
  }
  free(fields);
}

/* -------------------------------------------------------- fill values */

static size_t count_fill(const Field *f) {
  size_t c = 0;
  for (size_t i = 0; i < f->n; i++) c += f->x[i] == POP_FILL;
  return c;
}

/* pop_ocean_t: refused without fill= (the message counts the fill values and suggests fill=),
 * accepted with the rounded fill=9.97e36 and with the exact value the message suggests. */
static void check_pop_fill(const Field *f) {
  size_t nfill = count_fill(f);
  char expect[32];
  snprintf(expect, sizeof expect, "%zu values", nfill);
  static const char *const bare[] = {"eb:rel=1e-4", "eb:abs=0.01", "eb:rel=1e-2,lorenzo=2d"};
  ncclzQuantParams p;
  for (size_t k = 0; k < 3; k++) {
    ncclzStatus st = resolve_text(bare[k], f, &p);
    const char *msg = ncclzLastError();
    CHECK(st == NCCLZ_ERR_RANGE, "%s %s without fill=: status %d", f->name, bare[k], (int)st);
    CHECK(strstr(msg, expect) && strstr(msg, "fill="), "%s %s: message '%s' lacks '%s' or the fill= hint",
          f->name, bare[k], msg, expect);
  }
  /* Following the hint must work. */
  ncclzStatus st = resolve_text("eb:abs=0.01", f, &p);
  const char *hint = strstr(ncclzLastError(), "fill=");
  char spec[96];
  snprintf(spec, sizeof spec, "eb:rel=1e-4,%.*s", hint ? (int)strcspn(hint, " ") : 0, hint ? hint : "");
  const char *const withfill[] = {"eb:rel=1e-4,fill=9.97e36", "eb:abs=0.01,lorenzo=2d,fill=9.97e36", spec};
  for (size_t k = 0; k < 3; k++) {
    st = resolve_text(withfill[k], f, &p);
    CHECK(st == NCCLZ_OK, "%s %s: %s", f->name, withfill[k], ncclzLastError());
    if (st != NCCLZ_OK) continue;
    CHECK(p.has_fill && p.fill_value == POP_FILL, "%s %s: fill resolved to %.9g", f->name, withfill[k],
          (double)p.fill_value);
    int32_t *codes = malloc(f->n * sizeof *codes);
    float *y = malloc(f->n * sizeof *y);
    CHECK(ncclzQuantizeEB(&p, f->x, f->n, codes) == NCCLZ_OK, "%s", ncclzLastError());
    size_t fill_codes = 0;
    for (size_t i = 0; i < f->n; i++) fill_codes += codes[i] == NCCLZ_FILL_CODE;
    CHECK(fill_codes == nfill, "%s %s: %zu fill codes for %zu fill values", f->name, withfill[k], fill_codes, nfill);
    CHECK(ncclzDequantizeEB(&p, codes, f->n, y) == NCCLZ_OK, "%s", ncclzLastError());
    check_bound(f, &p, y, withfill[k]);
    free(codes);
    free(y);
  }
  printf("  %s: %zu fill values refused without fill=, kept exactly with fill=9.97e36 and %s\n", f->name, nfill,
         spec + strlen("eb:rel=1e-4,"));
}

static void test_pop_fill(void) {
  Field f;
  CHECK(load_slice(4, &f), "cannot load pop slice");
  if (f.x) {
    CHECK(count_fill(&f) == 36526, "pop slice has %zu fill values", count_fill(&f));
    check_pop_fill(&f);
    free(f.x);
  }
  char path[1100];
  if (!*data_root()) return;
  snprintf(path, sizeof path, "%s/scientific/pop_ocean_t.f32", data_root());
  FILE *probe = fopen(path, "rb");
  if (!probe) return;
  fclose(probe);
  uint32_t dims[2] = {384, 320};
  if (load_field(path, "pop_ocean_t.f32 (full)", dims, 2, &f)) {
    f.has_fill = 1;
    f.fill = POP_FILL;
    CHECK(count_fill(&f) == 36526, "full pop has %zu fill values", count_fill(&f));
    check_pop_fill(&f);
    free(f.x);
  }
}

/* A rounded huge fill value near two different data values is ambiguous; ordinary fill values
 * match exactly or not at all. */
static void test_fill_snap(void) {
  float x[5] = {1.0f, 1.0001e36f, 0.9999e36f, 2.0f, 999.9f};
  Field f = {"synthetic", x, 5, {5}, 1, 0, 0};
  ncclzQuantParams p;
  ncclzStatus st = resolve_text("eb:abs=0.1,fill=1e36", &f, &p);
  CHECK(st == NCCLZ_ERR_ARG && strstr(ncclzLastError(), "several values"), "ambiguous fill: %d %s", (int)st,
        ncclzLastError());
  x[2] = 1e36f; /* an exact match wins */
  st = resolve_text("eb:abs=0.1,fill=1e36", &f, &p);
  CHECK(st == NCCLZ_ERR_RANGE && strstr(ncclzLastError(), "1 values"), "the other huge value: %d %s", (int)st,
        ncclzLastError());
  x[1] = 5.0f;
  st = resolve_text("eb:abs=0.1,fill=1e36", &f, &p);
  CHECK(st == NCCLZ_OK && p.fill_value == 1e36f, "exact fill: %d %s", (int)st, ncclzLastError());
  x[2] = 3.0f;
  st = resolve_text("eb:abs=0.1,fill=1000", &f, &p); /* 999.9 must not be taken for fill 1000 */
  CHECK(st == NCCLZ_OK && p.fill_value == 1000.0f, "small fill snapped to %g: %s", (double)p.fill_value,
        ncclzLastError());
  st = resolve_text("eb:abs=0.1,fill=1000,fill=1e36", &f, &p);
  CHECK(st == NCCLZ_ERR_ARG, "two fills accepted");
}

/* ----------------------------------------------------- NaN, Inf, dims */

static void test_nonfinite(void) {
  Field f;
  if (!load_slice(0, &f)) {
    CHECK(0, "cannot load trefht slice");
    return;
  }
  ncclzQuantParams good, p;
  CHECK(resolve_text("eb:rel=1e-4", &f, &good) == NCCLZ_OK, "%s", ncclzLastError());
  f.x[7] = -INFINITY;
  f.x[100] = NAN;
  f.x[5000] = INFINITY;
  static const char *const specs[] = {"eb:rel=1e-4", "eb:abs=0.01,lorenzo=3d", "qsgd:bits=8,bucket=512"};
  for (size_t k = 0; k < 3; k++) {
    ncclzStatus st = resolve_text(specs[k], &f, &p);
    const char *msg = ncclzLastError();
    CHECK(st == NCCLZ_ERR_NONFINITE, "%s with NaN/Inf: status %d", specs[k], (int)st);
    CHECK(strstr(msg, "3 NaN/Inf") && strstr(msg, "index 7"), "%s: message '%s'", specs[k], msg);
  }
  int32_t *codes = malloc(f.n * sizeof *codes);
  ncclzStatus st = ncclzQuantizeEB(&good, f.x, f.n, codes);
  CHECK(st == NCCLZ_ERR_NONFINITE && strstr(ncclzLastError(), "3 NaN/Inf"), "quantize with NaN: %d %s", (int)st,
        ncclzLastError());
  free(codes);
  free(f.x);
}

static void test_dims(void) {
  static float x[8 * 64 * 128];
  for (size_t i = 0; i < sizeof x / sizeof x[0]; i++) x[i] = (float)(i % 97);
  ncclzQuantSpec spec;
  ncclzQuantParams p;
  const size_t n = sizeof x / sizeof x[0];
  uint32_t d3[3] = {8, 64, 128}, bad[3] = {8, 64, 100}, d4[4] = {1, 8, 64, 128}, d2[2] = {512, 128};
  ncclzQuantSpecParse("eb:abs=0.5,lorenzo=3d", &spec);
  CHECK(ncclzQuantResolve(&spec, x, n, d3, 3, 0, &p) == NCCLZ_OK, "%s", ncclzLastError());
  CHECK(p.dims[0] == 8 && p.dims[1] == 64 && p.dims[2] == 128 && p.lorenzo == 3, "dims %u %u %u", p.dims[0],
        p.dims[1], p.dims[2]);
  CHECK(ncclzQuantResolve(&spec, x, n, bad, 3, 0, &p) == NCCLZ_ERR_ARG && strstr(ncclzLastError(), "51200"),
        "bad product: %s", ncclzLastError());
  uint32_t wrap[3] = {0x80000000u, 0x80000000u, 4}, huge[3] = {3687103364u, 505754u, 39569u}, zero[3] = {0, 8, 64};
  CHECK(ncclzQuantResolve(&spec, x, n, wrap, 3, 0, &p) == NCCLZ_ERR_ARG && strstr(ncclzLastError(), "overflows"),
        "2^31 x 2^31 x 4 (wraps to 0): %s", ncclzLastError());
  CHECK(ncclzQuantResolve(&spec, x, n, huge, 3, 0, &p) == NCCLZ_ERR_ARG && strstr(ncclzLastError(), "overflows"),
        "the issue's --dims: %s", ncclzLastError());
  CHECK(ncclzQuantResolve(&spec, x, n, zero, 3, 0, &p) == NCCLZ_ERR_ARG, "a zero dimension accepted");
  CHECK(ncclzQuantResolve(&spec, x, n, d2, 2, 0, &p) == NCCLZ_ERR_ARG && strstr(ncclzLastError(), "lorenzo=3d"),
        "3d on 2 dims: %s", ncclzLastError());
  CHECK(ncclzQuantResolve(&spec, x, n, NULL, 0, 0, &p) == NCCLZ_ERR_ARG, "3d without dims accepted");
  CHECK(ncclzQuantResolve(&spec, x, n, d4, 4, 0, &p) == NCCLZ_ERR_ARG && strstr(ncclzLastError(), "1 to 3"),
        "4 dims: %s", ncclzLastError());
  ncclzQuantSpecParse("eb:abs=0.5,lorenzo=1d", &spec);
  CHECK(ncclzQuantResolve(&spec, x, n, NULL, 0, 0, &p) == NCCLZ_OK && p.dims[0] == 1 && p.dims[1] == 1 &&
            p.dims[2] == n,
        "1D default dims %u %u %u: %s", p.dims[0], p.dims[1], p.dims[2], ncclzLastError());
  CHECK(ncclzQuantResolve(&spec, x, n, d2, 2, 0, &p) == NCCLZ_OK && p.dims[0] == 1 && p.dims[1] == 512,
        "2 dims right-aligned: %u %u %u", p.dims[0], p.dims[1], p.dims[2]);
  /* Constant data: rel falls back to X * max(|v|, 1); empty data resolves too. */
  float c[5] = {300, 300, 300, 300, 300};
  ncclzQuantSpecParse("eb:rel=1e-3", &spec);
  /* abs_eb = bound - ulp(2 * 300)/2 = 0.3 - 2^-15 (floats in [512, 1024) are 2^-14 apart) */
  CHECK(ncclzQuantResolve(&spec, c, 5, NULL, 0, 0, &p) == NCCLZ_OK && p.bound == 1e-3 * 300.0 &&
            p.abs_eb == 1e-3 * 300.0 - 0x1p-15,
        "constant: bound %.17g abs_eb %.17g", p.bound, p.abs_eb);
  CHECK(ncclzQuantResolve(&spec, NULL, 0, NULL, 0, 0, &p) == NCCLZ_OK && p.bound == 1e-3 && p.abs_eb == 1e-3,
        "empty: bound %.17g abs_eb %.17g", p.bound, p.abs_eb);
  ncclzQuantSpecParse("eb:abs=1e-5", &spec); /* below the resolution at 300: ulp(600)/2 = 3e-5 */
  CHECK(ncclzQuantResolve(&spec, c, 5, NULL, 0, 0, &p) == NCCLZ_ERR_RANGE && strstr(ncclzLastError(), "resolution"),
        "bound below float resolution: %s", ncclzLastError());
}

/* Why ncclzQuantResolve leaves room below the bound (abs_eb = bound - ulp/2): with step =
 * 2*bound, a value halfway between two levels is `bound` from both, and rounding the
 * reconstruction to float pushes both beyond it. Raw params (abs_eb = bound) may therefore be
 * refused (NCCLZ_ERR_RANGE, never a silent violation); resolved params succeed, or are refused
 * up front when the bound is below the float resolution. */
static void check_tight(const float *x, size_t n, double bound, int resolved, const char *what) {
  ncclzQuantParams p = {.kind = NCCLZ_QUANT_EB, .abs_eb = bound, .bound = bound, .dims = {1, 1, (uint32_t)n}};
  if (resolved) {
    char text[64];
    snprintf(text, sizeof text, "eb:abs=%.17g", bound);
    Field f = {"tight", (float *)x, n, {(uint32_t)n}, 1, 0, 0};
    ncclzStatus st = resolve_text(text, &f, &p);
    if (st != NCCLZ_OK) {
      CHECK(st == NCCLZ_ERR_RANGE && strstr(ncclzLastError(), "resolution"), "%s: %s", what, ncclzLastError());
      printf("  %-42s refused: %.70s...\n", what, ncclzLastError());
      return;
    }
  }
  int32_t *codes = malloc(n * sizeof *codes);
  float *y = malloc(n * sizeof *y);
  ncclzStatus st = ncclzQuantizeEB(&p, x, n, codes);
  if (st == NCCLZ_OK) {
    ncclzDequantizeEB(&p, codes, n, y);
    size_t bad = 0;
    for (size_t i = 0; i < n; i++) bad += !(fabs((double)x[i] - (double)y[i]) <= p.bound);
    CHECK(bad == 0, "%s: %zu violations of bound %g", what, bad, p.bound);
    printf("  %-42s abs_eb %.6g: bound %.6g holds\n", what, p.abs_eb, p.bound);
  } else {
    CHECK(!resolved && st == NCCLZ_ERR_RANGE && strstr(ncclzLastError(), "cannot be kept"), "%s: %d %s", what,
          (int)st, ncclzLastError());
    printf("  %-42s abs_eb %.6g: refused: %.55s...\n", what, p.abs_eb, ncclzLastError());
  }
  free(codes);
  free(y);
}

static void test_tight_bounds(void) {
  enum { N = 200000 };
  float *x = malloc(N * sizeof *x);
  uint64_t rng = 12345;
  for (size_t i = 0; i < N; i++) x[i] = (float)(512.0 + 511.0 * tu_uniform(&rng)); /* spacing 2^-14 */
  static const double factors[] = {0.5, 0.6, 0.75, 1.0, 1.3, 3.7};
  for (size_t k = 0; k < sizeof factors / sizeof factors[0]; k++) {
    char what[80];
    snprintf(what, sizeof what, "[512,1023], bound %.2f x spacing, raw", factors[k]);
    check_tight(x, N, factors[k] * 0x1p-14, 0, what);
    snprintf(what, sizeof what, "[512,1023], bound %.2f x spacing, resolved", factors[k]);
    check_tight(x, N, factors[k] * 0x1p-14, 1, what);
  }
  free(x);
  Field f;
  if (load_slice(0, &f)) { /* the case that showed it: TREFHT at abs=0.01 */
    check_tight(f.x, f.n, 0.01, 0, "trefht_member57 slice, abs=0.01, raw");
    check_tight(f.x, f.n, 0.01, 1, "trefht_member57 slice, abs=0.01, resolved");
    free(f.x);
  }
}

/* ---------------------------------------------------- the fast EB rule */

/* One element through both rules: the same outcome and, when OK, the same code. */
static int same_rule(float x, double bound, double step, double inv, size_t *fast) {
  int32_t a = 0x7eadbeef, b = 0x7eadbeef;
  ncclzEbOutcome oa = ncclz_eb_code(x, bound, step, inv, &a), ob = ncclz_eb_code_exact(x, bound, step, &b);
  /* how often the certificate answers: the exact rule's division not taken (counted on the side) */
  int32_t q;
  *fast += (size_t)ncclz_eb_code_fast(x, bound, step, inv, &q);
  return oa == ob && (oa != NCCLZ_EB_OK || a == b);
}

/* ncclz_eb_code (the quantizers' rule) gives what FORMAT.md's rule gives, element by element:
 * random floats of every magnitude; values on and next to the halfway points (k + 1/2) * step,
 * where the two roundings part; codes near the limit; bounds resolved as eb:rel resolves them
 * (room for the float rounding), raw (abs_eb = bound: the +-1 fallback runs) and tiny ones. */
static void test_eb_fast_rule(void) {
  uint64_t rng = 2026;
  size_t cases = 0, fast = 0, differ = 0;
  for (int s = 0; s < 400; s++) {
    /* a bound from 2^-30 to 2^10, and the data's magnitude around it */
    double bound = ldexp(1.0 + tu_uniform(&rng), (int)(tu_uniform(&rng) * 40) - 30);
    double scale = ldexp(1.0, (int)(tu_uniform(&rng) * 50) - 25) * bound * 64;
    double max_abs = scale * 2, abs_eb;
    switch (s % 3) {
    case 0: { /* resolved: abs_eb = bound - half a float ulp at 2 max|x| (quant_eb.c eb_bounds) */
      int e;
      frexp(2.0 * max_abs, &e);
      abs_eb = bound - ldexp(1.0, e - 25);
      break;
    }
    case 1: abs_eb = bound; break;                       /* raw */
    default: abs_eb = bound * (0.5 + 0.5 * tu_uniform(&rng)); /* anything below */
    }
    if (!(abs_eb > 0)) continue;
    const double step = 2.0 * abs_eb, inv = 1.0 / step;
    for (int i = 0; i < 20000; i++, cases++) {
      float x;
      double k = floor((tu_uniform(&rng) * 2.0 - 1.0) * (i % 7 == 0 ? 1.5 * NCCLZ_CODE_LIMIT : scale / step));
      switch (i % 4) {
      case 0: x = (float)((tu_uniform(&rng) * 2.0 - 1.0) * max_abs); break;
      case 1: x = (float)((k + 0.5) * step); break; /* on a halfway point, as near as a float gets */
      case 2: x = nextafterf((float)((k + 0.5) * step), i % 8 < 4 ? INFINITY : -INFINITY); break;
      default: x = (float)(k * step); break; /* on a level */
      }
      if (!isfinite(x)) continue;
      differ += !same_rule(x, bound, step, inv, &fast);
    }
  }
  /* exact ties: x = (k + 1/2) * step as a float, step = m * 2^e with m odd, so that 1/step rounds
   * and x * (1/step) can land just below the tie that x / step hits exactly (3.4% of them) */
  size_t ties = 0;
  for (int m = 3; m < 200; m += 2)
    for (int e = -30; e < 5; e += 3) {
      const double step = ldexp(m, e), inv = 1.0 / step;
      for (long k = -2000; k < 2000; k++) {
        const float x = (float)((k + 0.5) * step);
        if ((double)x != (k + 0.5) * step) continue;
        ties++, cases += 2;
        differ += !same_rule(x, step / 2, step, inv, &fast); /* raw: abs_eb = bound */
        differ += !same_rule(x, step / 2 * (1 + 0x1p-20), step, inv, &fast); /* room, as eb:rel leaves */
      }
    }
  CHECK(ties > 1000000, "%zu exact ties", ties);
  /* every float exponent, including subnormals and the largest floats */
  for (int e = -149; e <= 127; e++)
    for (int m = 0; m < 64; m++, cases++) {
      float x = ldexpf(1.0f + (float)m / 64, e);
      if (!isfinite(x)) continue;
      differ += !same_rule(x, 1e-3, 2e-3, 1.0 / 2e-3, &fast) + !same_rule(-x, 0x1p-140, 0x1p-140, 0x1p140, &fast);
    }
  CHECK(differ == 0, "fast EB rule: %zu of %zu elements differ from FORMAT.md's rule", differ, cases);
  printf("  fast EB rule: %zu elements, %zu differ from FORMAT.md's rule; %.1f%% answered without the division\n",
         cases, differ, 100.0 * fast / (double)cases);
}

/* ------------------------------------------------------------- Lorenzo */

/* Prediction is linear: forward(q1) + forward(q2) == forward(q1 + q2), on two ensemble members
 * quantized with one shared bound (what the homomorphic allreduce relies on). */
static void test_lorenzo_additive(void) {
  Field a, b;
  if (!load_slice(0, &a) || !load_slice(1, &b)) {
    CHECK(0, "cannot load the trefht slices");
    return;
  }
  size_t n = a.n;
  ncclzQuantParams p;
  CHECK(resolve_text("eb:rel=1e-4", &a, &p) == NCCLZ_OK, "%s", ncclzLastError());
  int32_t *q1 = malloc(n * 4), *q2 = malloc(n * 4), *sum = malloc(n * 4);
  int32_t *f1 = malloc(n * 4), *f2 = malloc(n * 4), *fs = malloc(n * 4);
  CHECK(ncclzQuantizeEB(&p, a.x, n, q1) == NCCLZ_OK, "%s", ncclzLastError());
  CHECK(ncclzQuantizeEB(&p, b.x, n, q2) == NCCLZ_OK, "%s", ncclzLastError());
  for (size_t i = 0; i < n; i++) sum[i] = q1[i] + q2[i];
  for (int L = 1; L <= 3; L++) {
    p.lorenzo = L;
    ncclzLorenzoForward(&p, q1, n, f1);
    ncclzLorenzoForward(&p, q2, n, f2);
    ncclzLorenzoForward(&p, sum, n, fs);
    size_t bad = 0;
    for (size_t i = 0; i < n; i++) bad += f1[i] + f2[i] != fs[i];
    CHECK(bad == 0, "lorenzo %dd: %zu deltas do not add up", L, bad);
    for (size_t i = 0; i < n; i++) f1[i] += f2[i];
    ncclzLorenzoInverse(&p, f1, n, fs);
    CHECK(memcmp(fs, sum, n * 4) == 0, "lorenzo %dd: inverse of summed deltas != summed codes", L);
  }
  free(q1), free(q2), free(sum), free(f1), free(f2), free(fs);
  free(a.x);
  free(b.x);
}

/* A hand-computed 2x2x3 case pins the predictor formulas and the fill handling. */
static void test_lorenzo_small(void) {
  ncclzQuantParams p = {.kind = NCCLZ_QUANT_EB, .dims = {2, 2, 3}};
  const int32_t F = NCCLZ_FILL_CODE;
  int32_t q[12] = {1, 2, 4, 3, 5, 9, 2, F, 7, 6, 1, 0}, d[12], back[12];
  /* 1D: each row of 3 on its own */
  static const int32_t d1[12] = {1, 1, 2, 3, 2, 4, 2, F, 7, 6, -5, -1};
  /* 2D: per plane of 2x3 */
  static const int32_t d2[12] = {1, 1, 2, 2, 1, 2, 2, F, 7, 4, -3, -8};
  /* 3D */
  static const int32_t d3[12] = {1, 1, 2, 2, 1, 2, 1, F, 5, 2, -4, -10};
  const int32_t *want[3] = {d1, d2, d3};
  for (int L = 1; L <= 3; L++) {
    p.lorenzo = L;
    ncclzLorenzoForward(&p, q, 12, d);
    CHECK(memcmp(d, want[L - 1], sizeof d) == 0, "lorenzo %dd small case: %d %d %d %d %d %d %d %d %d %d %d %d", L,
          d[0], d[1], d[2], d[3], d[4], d[5], d[6], d[7], d[8], d[9], d[10], d[11]);
    ncclzLorenzoInverse(&p, d, 12, back);
    CHECK(memcmp(back, q, sizeof q) == 0, "lorenzo %dd small case: inverse", L);
  }
  /* Shapes that do not describe the 12 elements (a product that wraps to 0 or 12 in 64 bits, a zero
   * dimension) are one 1D row: the loops stay inside the arrays (ASan) and end. */
  static const uint32_t hostile[][3] = {{0x80000000u, 0x80000000u, 4}, {0xFFFFFFFFu, 0xFFFFFFFFu, 0},
                                        {0x80000000u, 0x80000000u, 12}, {0, 2, 6}};
  for (size_t k = 0; k < sizeof hostile / sizeof hostile[0]; k++) {
    ncclzQuantParams h = {.kind = NCCLZ_QUANT_EB, .lorenzo = 3, .dims = {hostile[k][0], hostile[k][1], hostile[k][2]}};
    ncclzQuantParams row = {.kind = NCCLZ_QUANT_EB, .lorenzo = 1, .dims = {1, 1, 12}};
    int32_t want_d[12];
    ncclzLorenzoForward(&row, q, 12, want_d);
    ncclzLorenzoForward(&h, q, 12, d);
    ncclzLorenzoInverse(&h, d, 12, back);
    CHECK(!memcmp(d, want_d, sizeof d) && !memcmp(back, q, sizeof q), "hostile dims %u x %u x %u", h.dims[0],
          h.dims[1], h.dims[2]);
    ncclzLorenzoInverse(&h, d, 0, back); /* n = 0: nothing to do */
  }
}

/* ------------------------------------------------------------ convert */

static float from_bits(uint32_t u) {
  float f;
  memcpy(&f, &u, 4);
  return f;
}

/* Every 16-bit pattern widens exactly and narrows back to itself (NaN payloads included). */
static void check_roundtrip_all(ncclzDtype t) {
  uint16_t *h = malloc(65536 * 2), *back = malloc(65536 * 2);
  float *f = malloc(65536 * 4);
  for (uint32_t i = 0; i < 65536; i++) h[i] = (uint16_t)i;
  ncclzToFloat(h, t, 65536, f);
  ncclzFromFloat(f, 65536, t, back);
  size_t bad = 0, first = 0;
  for (uint32_t i = 0; i < 65536; i++)
    if (back[i] != h[i] && bad++ == 0) first = i;
  CHECK(bad == 0, "%s: %zu patterns do not round-trip (first 0x%04zx -> %g -> 0x%04x)", ncclzDtypeName(t), bad,
        first, (double)f[first], back[first]);
  free(h);
  free(back);
  free(f);
}

/* Narrowing is round-to-nearest-even: no other 16-bit value is nearer, ties go to even. */
static void check_narrowing_rne(ncclzDtype t) {
  uint64_t rng = 99;
  size_t bad = 0;
  for (int k = 0; k < 200000; k++) {
    uint32_t bits = (uint32_t)tu_rand(&rng);
    if (k & 1) /* half of the draws inside the target's exponent range, subnormals included */
      bits = (bits & 0x807fffffu) | (uint32_t)(100 + tu_rand(&rng) % 46) << 23;
    float x = from_bits(bits);
    if (isnan(x)) continue;
    uint16_t h, nb[2];
    ncclzFromFloat(&x, 1, t, &h);
    nb[0] = (uint16_t)(h - 1); /* neighbours in magnitude, same sign */
    nb[1] = (uint16_t)(h + 1);
    float hv, nv[2];
    ncclzToFloat(&h, t, 1, &hv);
    ncclzToFloat(nb, t, 2, nv);
    if (isinf(x)) continue;
    if (isinf(hv)) { /* overflow: right exactly when |x| reaches the halfway point past the max */
      bad += !(fabsf(x) >= (t == NCCLZ_DTYPE_F16 ? 65520.0f : from_bits(0x7f7f8000u)));
      continue;
    }
    double err = fabs((double)x - hv);
    for (int j = 0; j < 2; j++) {
      if (isnan(nv[j]) || ((nb[j] ^ h) & 0x8000)) continue;
      double e = fabs((double)x - nv[j]);
      if (e < err || (e == err && (h & 1))) bad++;
    }
  }
  CHECK(bad == 0, "%s: %zu narrowings are not round-to-nearest-even", ncclzDtypeName(t), bad);
}

static uint16_t narrow(float x, ncclzDtype t) {
  uint16_t h;
  ncclzFromFloat(&x, 1, t, &h);
  return h;
}

static void test_convert(void) {
  check_roundtrip_all(NCCLZ_DTYPE_BF16);
  check_roundtrip_all(NCCLZ_DTYPE_F16);
  check_narrowing_rne(NCCLZ_DTYPE_BF16);
  check_narrowing_rne(NCCLZ_DTYPE_F16);
  const ncclzDtype F16 = NCCLZ_DTYPE_F16, BF = NCCLZ_DTYPE_BF16;
  CHECK(narrow(65504.0f, F16) == 0x7bff && narrow(65519.99f, F16) == 0x7bff, "f16 max");
  CHECK(narrow(65520.0f, F16) == 0x7c00 && narrow(-1e10f, F16) == 0xfc00, "f16 overflow to inf");
  CHECK(narrow(0x1p-24f, F16) == 0x0001 && narrow(0x1p-25f, F16) == 0x0000, "f16 smallest subnormal, tie to 0");
  CHECK(narrow(0x1.000002p-25f, F16) == 0x0001 && narrow(0x3p-25f, F16) == 0x0002, "f16 subnormal rounding");
  CHECK(narrow(0x1.ff8p-15f, F16) == 0x03ff && narrow(0x1.ffcp-15f, F16) == 0x0400, "f16 subnormal/normal edge");
  CHECK(narrow(1.0f + 0x1p-11f, F16) == 0x3c00 && narrow(1.0f + 0x3p-11f, F16) == 0x3c02, "f16 ties to even");
  CHECK(narrow(-0.0f, F16) == 0x8000 && narrow(INFINITY, F16) == 0x7c00, "f16 -0, inf");
  CHECK((narrow(NAN, F16) & 0x7c00) == 0x7c00 && (narrow(NAN, F16) & 0x3ff), "f16 NaN stays NaN");
  CHECK(narrow(1.0f + 0x1p-8f, BF) == 0x3f80 && narrow(1.0f + 0x3p-8f, BF) == 0x3f82, "bf16 ties to even");
  CHECK(narrow(3.4e38f, BF) == 0x7f80 && narrow(0x1p-133f, BF) == 0x0001, "bf16 overflow, subnormal");
  CHECK((narrow(from_bits(0x7f800001u), BF) & 0x7f) != 0, "bf16 keeps a low-payload NaN a NaN");
  int32_t iv[6] = {0, -7, 16777216, INT32_MAX, INT32_MIN, 123456789}, ib[6];
  float fv[6];
  ncclzToFloat(iv, NCCLZ_DTYPE_I32, 6, fv);
  CHECK(fv[1] == -7.0f && fv[2] == 16777216.0f && fv[5] == 123456792.0f, "i32 to float");
  ncclzFromFloat(fv, 6, NCCLZ_DTYPE_I32, ib);
  CHECK(ib[0] == 0 && ib[1] == -7 && ib[2] == 16777216 && ib[3] == INT32_MAX && ib[4] == INT32_MIN,
        "i32 back: %d %d %d %d %d", ib[0], ib[1], ib[2], ib[3], ib[4]);
  float odd[4] = {2.5f, 3.5f, -2.5f, NAN};
  ncclzFromFloat(odd, 4, NCCLZ_DTYPE_I32, ib);
  CHECK(ib[0] == 2 && ib[1] == 4 && ib[2] == -2 && ib[3] == 0, "i32 rounding: %d %d %d %d", ib[0], ib[1], ib[2],
        ib[3]);
}

/* ---------------------------------------------------------------- main */

int main(void) {
  double t0 = ncclzNowSeconds();
  test_spec_parse();
  test_convert();
  test_lorenzo_small();
  test_dims();
  test_nonfinite();
  test_fill_snap();
  printf("fill values:\n");
  test_pop_fill();
  printf("tight bounds:\n");
  test_tight_bounds();
  test_eb_fast_rule();
  test_lorenzo_additive();
  test_eb_slices();
  test_eb_full_set();
  printf("time %.1f s\n", ncclzNowSeconds() - t0);
  return tu_finish("test_quant");
}
