/* The model layer: profile loading and validation, cost curves, sample profiling, REA arbitration
 * (Algorithm 1) on the synthetic profile, the shared decision functions, the break-even surface,
 * and the planning-cost helper. */
#include "model/rea_decide.h"
#include "ncclz/model.h"
#include "testutil.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static ncclzProfile prof;

/* ---------------------------------------------------------------- fixtures */

/* Symbols of real data with their frame description (QSGD scales as side data). */
typedef struct {
  ncclzSymbols s;
  ncclzFrameDesc desc;
} Frame;

static void frame_describe(Frame *f) {
  memset(&f->desc, 0, sizeof f->desc);
  f->desc.dtype = f->s.dtype;
  f->desc.quant = &f->s.qp;
  if (f->s.scales) {
    f->desc.side = f->s.scales;
    f->desc.side_bytes = (uint32_t)(f->s.n_scales * sizeof(float));
  }
  ncclzCoderParamsDefault(&f->desc.coder_params);
}

/* The ResNet-18 gradient slices of rank 0 and 1, back to back, `copies` times (512 KiB each),
 * quantized with QSGD 8 bits, buckets of 512: skewed symbols around 0. */
static int resnet_qsgd(Frame *f, int copies) {
  size_t l0 = 0, l1 = 0;
  float *r0 = tu_read_file("resnet18_rank0_64k.f32", &l0);
  float *r1 = tu_read_file("resnet18_rank1_64k.f32", &l1);
  if (!r0 || !r1) {
    free(r0);
    free(r1);
    return 0;
  }
  size_t n0 = l0 / 4, n1 = l1 / 4, n = (n0 + n1) * (size_t)copies;
  float *x = malloc(n * sizeof *x);
  for (int c = 0; c < copies; c++) {
    memcpy(x + (size_t)c * (n0 + n1), r0, l0);
    memcpy(x + (size_t)c * (n0 + n1) + n0, r1, l1);
  }
  ncclzQuantSpec spec;
  ncclzStatus s = ncclzQuantSpecParse("qsgd:bits=8,bucket=512", &spec);
  if (s == NCCLZ_OK) s = ncclzArrayQuantize(&spec, NCCLZ_DTYPE_F32, x, n, NULL, 0, 0, &f->s);
  free(x);
  free(r0);
  free(r1);
  CHECK(s == NCCLZ_OK, "quantize resnet: %s", ncclzLastError());
  if (s != NCCLZ_OK) return 0;
  frame_describe(f);
  return 1;
}

/* Skewed real symbols: surface_tC (4x96x192) at REL 1e-4 with 3D Lorenzo, whose deltas peak at
 * 0 (HUFFMAN codes them about 25% smaller than FIXEDLEN). The symbols are repeated 14 times to
 * make a frame of about 4 MiB, the executor's frame size; repeating keeps their distribution. */
static int skewed_frame(Frame *f) {
  size_t len = 0;
  float *x = tu_read_file("surface_tC_4x96x192.f32", &len);
  if (!x) return 0;
  const uint32_t dims[3] = {4, 96, 192};
  const int copies = 14;
  ncclzQuantSpec spec;
  ncclzStatus s = ncclzQuantSpecParse("eb:rel=1e-4,lorenzo=3d", &spec);
  if (s == NCCLZ_OK) s = ncclzArrayQuantize(&spec, NCCLZ_DTYPE_F32, x, len / 4, dims, 3, 0, &f->s);
  free(x);
  CHECK(s == NCCLZ_OK, "quantize surface_tC: %s", ncclzLastError());
  if (s != NCCLZ_OK) return 0;
  size_t n = f->s.n;
  int32_t *tiled = malloc(n * copies * sizeof *tiled);
  for (int c = 0; c < copies; c++) memcpy(tiled + (size_t)c * n, f->s.sym, n * sizeof *tiled);
  free(f->s.sym);
  f->s.sym = tiled;
  f->s.n = n * copies;
  frame_describe(f);
  return 1;
}

/* n int32 symbols with quant none (the coders see them as they are). */
static void int_frame(Frame *f, size_t n) {
  memset(&f->s, 0, sizeof f->s);
  f->s.dtype = NCCLZ_DTYPE_I32;
  f->s.n = n;
  f->s.sym = malloc((n ? n : 1) * sizeof *f->s.sym);
  frame_describe(f);
  f->desc.quant = NULL;
}

static void frame_free(Frame *f) { ncclzSymbolsFree(&f->s); }

static ncclzReaConfig config(ncclzTransportHint hint, ncclzDataClass cls) {
  ncclzReaConfig cfg;
  ncclzReaConfigFromProfile(&prof, hint, cls, &cfg);
  return cfg;
}

/* Runs Algorithm 1 with staging for a RAW frame; returns the status, frame left in *out. */
static ncclzStatus encode_best(const ncclzReaConfig *cfg, const Frame *f, size_t cap, uint8_t **out,
                               ncclzReaResult *res) {
  *out = malloc(cap ? cap : 1);
  return ncclzReaEncodeBest(&prof, cfg, f->s.sym, f->s.n, &f->desc, *out, cap, res);
}

static size_t raw_cap(const Frame *f) { return ncclz_rea_raw_frame_bytes(f->s.n, f->desc.side_bytes); }

/* The committed frame decodes back to the same symbols. */
static int decodes_to(const uint8_t *frame, size_t len, const Frame *f) {
  int32_t *sym = malloc(f->s.n * sizeof *sym + 4);
  void *side = malloc(f->desc.side_bytes + 4);
  ncclzFrameHeader h;
  size_t consumed = 0;
  ncclzStatus s = ncclzFrameDecode(frame, len, &h, sym, f->s.n, side, f->desc.side_bytes, &consumed);
  int ok = s == NCCLZ_OK && consumed == len && h.n_symbols == f->s.n && !memcmp(sym, f->s.sym, f->s.n * 4);
  free(sym);
  free(side);
  return ok;
}

/* ----------------------------------------------------------------- profile */

static void test_profile_loads(void) {
  ncclzStatus s = ncclzProfileLoad(NCCLZ_TEST_DATA "/profile_synthetic.json", &prof);
  CHECK(s == NCCLZ_OK, "load synthetic profile: %s", ncclzLastError());
  CHECK(prof.version == 1, "version %d", prof.version);
  CHECK(prof.transport[NCCLZ_HINT_NET].beta_gbps == 3.0, "net beta %g", prof.transport[NCCLZ_HINT_NET].beta_gbps);
  CHECK(prof.transport[NCCLZ_HINT_NVLINK].beta_gbps == 300.0, "nvlink beta");
  CHECK(prof.codec[NCCLZ_CODER_HUFFMAN].curves[NCCLZ_CLASS_QSGD].present, "huffman qsgd curves");
  CHECK(!prof.codec[NCCLZ_CODER_FIXEDLEN].curves[NCCLZ_CLASS_QSGD].present, "fixedlen has no qsgd curves");
  CHECK(prof.codec[NCCLZ_CODER_FIXEDLEN].curves[NCCLZ_CLASS_DEFAULT].encode.n_points == 5, "5 points");
  CHECK(prof.thresholds.frame_bytes == 4194304 && prof.thresholds.sample_pieces == 8, "thresholds");
  CHECK(!strcmp(prof.meta.date, "2026-12-01"), "metadata date '%s'", prof.meta.date);
}

/* The synthetic profile with one more top-level section, `key`: `json`, parsed into p. */
static ncclzStatus parse_with_section(const char *base, size_t len, const char *key, const char *json, ncclzProfile *p) {
  size_t cap = len + strlen(key) + strlen(json) + 16;
  char *doc = malloc(cap);
  const char *end = strrchr(base, '}');
  snprintf(doc, cap, "%.*s, \"%s\": %s}", (int)(end - base), base, key, json);
  ncclzStatus st = ncclzProfileParse(doc, strlen(doc), p);
  free(doc);
  return st;
}

static void test_profile_errors(void) {
  static const struct {
    const char *file, *message;
  } cases[] = {
      {"version_2.json", "profile version: unsupported version 2"},
      {"missing_net.json", "profile transports.net: missing"},
      {"zero_beta.json", "profile transports.net.beta_gbps: must be > 0"},
      {"negative_beta.json", "profile transports.nvlink.beta_gbps: must be > 0"},
      {"lambda_range.json", "profile codecs.huffman.lambda_enc.net: must be in [0, 1]"},
      {"curve_order.json", "profile codecs.fixedlen.curves.default.encode[1].bytes: must be larger"},
      {"missing_threshold.json", "profile thresholds.huff_min_bytes: missing"},
      {"unknown_class.json", "profile codecs.fixedlen.curves.gradients: unknown data class"},
      {"missing_default_curve.json", "profile codecs.huffman.curves.default: missing"},
      {"missing_metadata.json", "profile metadata.nccl: missing"},
      {"not_json.json", "not_json.json: invalid JSON at line 1, column 31"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char path[512];
    ncclzProfile p;
    snprintf(path, sizeof path, "%s/profiles_bad/%s", NCCLZ_TEST_DATA, cases[i].file);
    ncclzStatus s = ncclzProfileLoad(path, &p);
    CHECK(s == NCCLZ_ERR_ARG, "%s: status %d", cases[i].file, (int)s);
    CHECK(strstr(ncclzLastError(), cases[i].message) != NULL, "%s: message '%s', expected '%s'", cases[i].file,
          ncclzLastError(), cases[i].message);
  }
  ncclzProfile p;
  CHECK(ncclzProfileLoad(NCCLZ_TEST_DATA "/no_such_profile.json", &p) == NCCLZ_ERR_IO, "missing file is I/O");
  const char *not_object = "[1, 2]";
  CHECK(ncclzProfileParse(not_object, strlen(not_object), &p) == NCCLZ_ERR_ARG, "array is not a profile");
  /* the optional collectives section: its shape is checked */
  static const struct {
    const char *json, *message;
  } plain[] = {
      {"{\"ranks\": 1, \"paths\": {}}", "collectives.ranks: must be >= 2"},
      {"{\"ranks\": 2}", "collectives.paths: missing"},
      {"{\"ranks\": 2, \"paths\": {\"NVLink\": {}}}", "lower-case letters and digits"},
      {"{\"ranks\": 2, \"paths\": {\"nvlink\": {\"allreduce\": []}}}", "collectives.paths.nvlink.allreduce: must have 1"},
      {"{\"ranks\": 2, \"paths\": {\"nvlink\": {\"allreduce\": [{\"bytes\": 2, \"us\": 1}, {\"bytes\": 1, \"us\": 2}]}}}",
       "allreduce[1].bytes: must be larger"},
  };
  size_t len = 0;
  char *base = ncclzReadFile("profile", NCCLZ_TEST_DATA "/profile_synthetic.json", &len);
  for (size_t i = 0; base && i < sizeof plain / sizeof plain[0]; i++)
    CHECK(parse_with_section(base, len, "collectives", plain[i].json, &p) == NCCLZ_ERR_ARG &&
              strstr(ncclzLastError(), plain[i].message),
          "collectives case %zu: '%s'", i, ncclzLastError());
  /* the optional interface section: its shape is checked, and it gives alpha + bytes / gbps */
  static const struct {
    const char *json, *message;
  } iface[] = {
      {"{\"ib\": {\"alpha_us\": 1, \"gbps\": 2}}", "interface.ib: not a transport hint"},
      {"{\"net\": {\"alpha_us\": 1, \"gbps\": 0}}", "interface.net.gbps: must be > 0"},
      {"{\"net\": {\"alpha_us\": -1, \"gbps\": 2}}", "interface.net.alpha_us: must be >= 0"},
      {"{\"net\": {\"gbps\": 2}}", "interface.net.alpha_us: missing"},
      {"{\"net\": {\"alpha_us\": 1, \"gbps\": 2, \"unit_us\": -3}}", "interface.net.unit_us: must be >= 0"},
      {"{\"net\": {\"alpha_us\": 1, \"gbps\": 2, \"curve\": 3}}", "interface.net.curve: must be an array"},
      {"{\"net\": {\"alpha_us\": 1, \"gbps\": 2, \"curve\": [{\"bytes\": 8, \"us\": 1}, {\"bytes\": 4, \"us\": 2}]}}",
       "interface.net.curve"},
      {"{\"net\": {\"alpha_us\": 100, \"gbps\": 400}}", NULL},
  };
  for (size_t i = 0; base && i < sizeof iface / sizeof iface[0]; i++) {
    ncclzStatus st = parse_with_section(base, len, "interface", iface[i].json, &p);
    if (iface[i].message)
      CHECK(st == NCCLZ_ERR_ARG && strstr(ncclzLastError(), iface[i].message), "interface case %zu: '%s'", i,
            ncclzLastError());
    else
      CHECK(st == NCCLZ_OK && fabs(ncclzProfileInterfaceUs(&p, NCCLZ_HINT_NET, 4e8) - 1100.0) < 1e-9 &&
                ncclzProfileInterfaceUs(&p, NCCLZ_HINT_NVLINK, 4e8) == 0.0,
            "interface: %s, net %g us for 400 MB (want 1100), nvlink %g (want 0)", ncclzLastError(),
            ncclzProfileInterfaceUs(&p, NCCLZ_HINT_NET, 4e8), ncclzProfileInterfaceUs(&p, NCCLZ_HINT_NVLINK, 4e8));
  }
  /* curve: its measured points override the line (linear between them, flat below the first) */
  CHECK(base && parse_with_section(base, len, "interface",
                                   "{\"net\": {\"alpha_us\": 1, \"gbps\": 2, \"curve\": [{\"bytes\": 4e6, \"us\": 200},"
                                   " {\"bytes\": 6.4e7, \"us\": 600}]}}", &p) == NCCLZ_OK &&
            ncclzProfileInterfaceUs(&p, NCCLZ_HINT_NET, 1.6e7) == 280.0 &&
            ncclzProfileInterfaceUs(&p, NCCLZ_HINT_NET, 1e6) == 200.0,
        "interface curve: %s, net %g us at 16 MB (want 280), %g at 1 MB (200)", ncclzLastError(),
        ncclzProfileInterfaceUs(&p, NCCLZ_HINT_NET, 1.6e7), ncclzProfileInterfaceUs(&p, NCCLZ_HINT_NET, 1e6));
  /* unit_us: optional, 0 when absent */
  CHECK(base && ncclzProfileUnitUs(&p, NCCLZ_HINT_NET) == 0.0, "unit_us absent: %g", ncclzProfileUnitUs(&p, NCCLZ_HINT_NET));
  CHECK(base && parse_with_section(base, len, "interface", "{\"net\": {\"alpha_us\": 1, \"gbps\": 2, \"unit_us\": 42.5}}", &p) == NCCLZ_OK &&
            ncclzProfileUnitUs(&p, NCCLZ_HINT_NET) == 42.5 && ncclzProfileUnitUs(&p, NCCLZ_HINT_SHM) == 0.0,
        "unit_us: %s, net %g (want 42.5)", ncclzLastError(), ncclzProfileUnitUs(&p, NCCLZ_HINT_NET));
  free(base);
}

/* The built-in profile is the shipped, measured H200 one, plain curves included. */
static void test_profile_default(void) {
  ncclzProfile p;
  CHECK(ncclzProfileDefault(&p) == NCCLZ_OK, "built-in profile: %s", ncclzLastError());
  CHECK(strstr(p.meta.device, "H200") && strstr(p.meta.method, "ncclz calibrate"), "metadata: %s / %s", p.meta.device,
        p.meta.method);
  CHECK(p.plain_ranks == 2 && p.n_plain == 30, "plain curves: %u on %u ranks", p.n_plain, p.plain_ranks);
  double t1 = ncclzProfilePlainUs(&p, "nvlink", "allreduce", 1 << 20), t2 = ncclzProfilePlainUs(&p, "nvlink", "allreduce", 1 << 30);
  CHECK(t1 > 0 && t2 > 100 * t1, "allreduce 1 MiB %g us, 1 GiB %g us", t1, t2);
  CHECK(ncclzProfilePlainUs(&p, "ib", "allreduce", 1 << 20) == -1, "unknown path: -1");
}

/* ------------------------------------------------------------- cost model */

static void test_curve(void) {
  ncclzCurve c;
  memset(&c, 0, sizeof c);
  c.n_points = 3;
  c.bytes[0] = 1000, c.us[0] = 10;
  c.bytes[1] = 2000, c.us[1] = 20;
  c.bytes[2] = 4000, c.us[2] = 30;
  CHECK(ncclz_rea_curve_us(&c, 500) == 10, "flat below the first point");
  CHECK(ncclz_rea_curve_us(&c, 1500) == 15, "linear between points");
  CHECK(ncclz_rea_curve_us(&c, 3000) == 25, "second segment");
  CHECK(ncclz_rea_curve_us(&c, 8000) == 50, "last per-byte cost beyond: %g", ncclz_rea_curve_us(&c, 8000));
  c.n_points = 1;
  CHECK(ncclz_rea_curve_us(&c, 4000) == 40, "one point scales proportionally");

  /* RAW: alpha + B/beta only; a coder adds lambda-weighted codec time. */
  ncclzReaLink net = ncclz_rea_link(&prof, NCCLZ_HINT_NET);
  double raw = ncclz_rea_cost_us(&prof, net, NCCLZ_CODER_RAW, NCCLZ_CLASS_DEFAULT, 3e6, 3e6, 1, 0);
  CHECK(raw > 1024.99 && raw < 1025.01, "RAW 3 MB at 3 GB/s + 25 us = 1025 us, got %g", raw);
  double fixed = ncclz_rea_cost_us(&prof, net, NCCLZ_CODER_FIXEDLEN, NCCLZ_CLASS_DEFAULT, 4194304, 0, 1, 0);
  double full = ncclz_rea_curve_us(&prof.codec[1].curves[0].encode, 4194304) +
                ncclz_rea_curve_us(&prof.codec[1].curves[0].decode, 4194304);
  double codec = 0.3 * full;
  CHECK(fixed > 25 + codec - 1e-9 && fixed < 25 + codec + 1e-9, "FIXEDLEN codec terms: %g vs %g", fixed, 25 + codec);
  /* A pipeline of k frames exposes lambda + (1 - lambda)/k: all of it for one frame. */
  CHECK(ncclz_rea_exposure(0.3, 0) == 0.3 && ncclz_rea_exposure(0.3, 1) == 1.0, "exposure steady / one frame");
  CHECK(fabs(ncclz_rea_exposure(0.3, 10) - 0.37) < 1e-12, "exposure of 10 frames %g", ncclz_rea_exposure(0.3, 10));
  double one = ncclz_rea_cost_us(&prof, net, NCCLZ_CODER_FIXEDLEN, NCCLZ_CLASS_DEFAULT, 4194304, 0, 1, 1);
  CHECK(fabs(one - (25 + full)) < 1e-9, "one-frame pipeline: %g vs %g", one, 25 + full);
}

/* ------------------------------------------------------ sample profiling */

static void test_sample_fixedlen_exact(void) {
  Frame f;
  int_frame(&f, 10000);  /* fits the window: sampled whole, last block partial */
  uint64_t rng = 7;
  for (size_t i = 0; i < f.s.n; i++) {
    int bits = (int)((i / 32) % 12);  /* widths vary from block to block */
    f.s.sym[i] = (int32_t)(tu_rand(&rng) & ((1u << bits) - 1)) - (1 << bits) / 2;
  }
  ncclzSampleStats st;
  CHECK(ncclzReaSampleProfile(f.s.sym, f.s.n, 65536, 8, &st) == NCCLZ_OK, "sample");
  CHECK(st.n_sampled == f.s.n, "whole frame sampled: %llu", (unsigned long long)st.n_sampled);
  ncclzReaCandidates cand;
  ncclzReaPredictFrames(&st, f.s.n, 4, 0, &f.desc.coder_params, &cand);
  size_t cap = ncclzFrameBound(NCCLZ_CODER_FIXEDLEN, &f.desc.coder_params, f.s.n, 0), len = 0;
  uint8_t *buf = malloc(cap);
  CHECK(ncclzFrameEncode(NCCLZ_CODER_FIXEDLEN, f.s.sym, f.s.n, &f.desc, buf, cap, &len) == NCCLZ_OK, "encode");
  CHECK(cand.pred_frame_bytes[NCCLZ_CODER_FIXEDLEN] == len, "FIXEDLEN prediction exact on a whole sample: %llu vs %zu",
        (unsigned long long)cand.pred_frame_bytes[NCCLZ_CODER_FIXEDLEN], len);
  free(buf);
  frame_free(&f);
}

/* HUFFMAN format v2 in the prediction, on whole-frame samples whose values all fall in the
 * estimate's 256 fine bins (so only the format terms differ from the realized frame):
 * - 10% escapes at +-2^20 (alternating, so the sample mean stays 0) cost their 4 + b = 26 offset
 *   bits; at version 1's 32 bits the estimate would be ~10% high;
 * - 32 used indices spread over a span of hundreds (the fill index at its top end) take the
 *   sparse table; estimated as dense, the frame would come out ~7% high. */
static void test_sample_predicts_huffman_v2(void) {
  for (int shape = 0; shape < 2; shape++) {
    Frame f;
    int_frame(&f, shape ? 2000 : 10000);
    uint64_t rng = 17 + (uint64_t)shape;
    int32_t sign = 1;
    for (size_t i = 0; i < f.s.n; i++) {
      uint64_t r = tu_rand(&rng);
      if (shape == 0) {
        f.s.sym[i] = (r >> 16) % 10 == 0 ? (sign = -sign) * (1 << 20) : (int32_t)(r % 7) - 3;
      } else {
        f.s.sym[i] = (r >> 16) % 20 == 0 ? NCCLZ_FILL_CODE : 8 * ((int32_t)(r % 31) - 15);
      }
    }
    ncclzSampleStats st;
    CHECK(ncclzReaSampleProfile(f.s.sym, f.s.n, 65536, 8, &st) == NCCLZ_OK, "sample");
    ncclzReaCandidates cand;
    ncclzReaPredictFrames(&st, f.s.n, 4, 0, &f.desc.coder_params, &cand);
    size_t cap = ncclzFrameBound(NCCLZ_CODER_HUFFMAN, &f.desc.coder_params, f.s.n, 0), len = 0;
    uint8_t *buf = malloc(cap);
    CHECK(ncclzFrameEncode(NCCLZ_CODER_HUFFMAN, f.s.sym, f.s.n, &f.desc, buf, cap, &len) == NCCLZ_OK, "encode");
    double rel = (double)cand.pred_frame_bytes[NCCLZ_CODER_HUFFMAN] / (double)len;
    printf("  huffman v2 %s: predicted %llu bytes, realized %zu (ratio %.3f)\n", shape ? "sparse table" : "far escapes",
           (unsigned long long)cand.pred_frame_bytes[NCCLZ_CODER_HUFFMAN], len, rel);
    CHECK(rel > 0.97 && rel < 1.03, "%s: HUFFMAN prediction within 3%%: %.3f", shape ? "sparse" : "escapes", rel);
    free(buf);
    frame_free(&f);
  }
}

/* The HUFFMAN estimate's code bits (ncclz_rea_hist_finish) against the exact Huffman lengths of
 * the same histogram (ncclz_huff_lengths, the coder's). Exact where Huffman's lengths are the
 * ideal ones (dyadic counts; a chain of dominant symbols), never above the exact cost (beyond the
 * 1/65,536-bit truncation), and below it by at most Gallager's redundancy bound on random
 * histograms, where no length reaches the coder's limit. */
static double estimate_bits(const uint32_t *freq, uint32_t total) {
  ncclzReaHuffSample h;
  memset(&h, 0, sizeof h);
  memcpy(h.freq, freq, sizeof h.freq);
  h.hi_index = 0;
  ncclzSampleStats st;
  memset(&st, 0, sizeof st);
  st.n_sampled = total;
  ncclz_rea_hist_finish(&h, &st);
  return st.huffman_bits;
}
static double exact_bits(const uint32_t *freq, uint32_t *max_len_used) {
  uint8_t len[NCCLZ_REA_HIST_TOTAL];
  uint64_t s64[NCCLZ_HUFF_SCRATCH64(NCCLZ_REA_HIST_TOTAL)];
  uint32_t s32[NCCLZ_HUFF_SCRATCH32(NCCLZ_REA_HIST_TOTAL)];
  ncclz_huff_lengths(freq, NCCLZ_REA_HIST_TOTAL, NCCLZ_HUFF_MAX_LEN, len, s64, s32);
  double bits = 0;
  *max_len_used = 0;
  for (int b = 0; b < NCCLZ_REA_HIST_TOTAL; b++) {
    bits += (double)freq[b] * len[b];
    if (len[b] > *max_len_used) *max_len_used = len[b];
  }
  return bits;
}
static void test_huffman_estimate(void) {
  uint32_t f[NCCLZ_REA_HIST_TOTAL], used;
  static const uint32_t dyadic[5] = {8192, 4096, 2048, 1024, 1024};           /* lengths 1, 2, 3, 4, 4 */
  static const uint32_t chain[4] = {9000, 5000, 1500, 884};                    /* dominant twice */
  static const uint32_t single[1] = {16384};                                    /* one symbol: 1 bit */
  const uint32_t *shapes[3] = {dyadic, chain, single}, sizes[3] = {5, 4, 1};
  for (int k = 0; k < 3; k++) {
    memset(f, 0, sizeof f);
    uint32_t total = 0;
    for (uint32_t i = 0; i < sizes[k]; i++) f[40 + 7 * i] = shapes[k][i], total += shapes[k][i];
    double est = estimate_bits(f, total), exact = exact_bits(f, &used);
    CHECK(fabs(est - exact) <= total / 65536.0 + 1e-9, "shape %d: estimate %.3f bits, exact Huffman %.0f", k, est, exact);
  }
  uint64_t rng = 12345;
  int below = 0, checked = 0;
  for (int t = 0; t < 400; t++) {
    memset(f, 0, sizeof f);
    uint32_t total = 0, fmax = 0;
    const double spread = 1.0 + 60.0 * tu_uniform(&rng);
    for (int i = 0; i < 16384; i++) { /* a discretized Laplace-like sample around bin 128 */
      double u = tu_uniform(&rng);
      int b = 128 + (int)(log(u + 1e-12) * -spread / 4.0) * ((tu_rand(&rng) & 1) ? 1 : -1);
      if (b < 0 || b >= NCCLZ_REA_HIST_BINS) b = NCCLZ_REA_HIST_TAIL;
      f[b]++, total++;
    }
    for (int b = 0; b < NCCLZ_REA_HIST_TOTAL; b++) fmax = f[b] > fmax ? f[b] : fmax;
    double est = estimate_bits(f, total), exact = exact_bits(f, &used);
    if (used >= NCCLZ_HUFF_MAX_LEN) continue; /* the length limit raises the exact cost */
    checked++;
    const double bound = total * ((double)fmax / total + 0.086);
    below += est < exact;
    CHECK(est <= exact + total / 65536.0 + 1e-9, "random %d: estimate %.1f above exact %.0f", t, est, exact);
    CHECK(exact - est <= bound, "random %d: estimate %.1f more than the redundancy bound below %.0f", t, est, exact);
  }
  printf("  huffman estimate: exact on 3 shapes, within the bounds on %d random histograms (%d below)\n", checked, below);
  CHECK(checked > 300, "too few random histograms checked: %d", checked);
}

/* On real data larger than the window, both predictions land near the realized sizes. */
static void test_sample_predicts_real_data(void) {
  Frame f;
  if (!resnet_qsgd(&f, 2)) return;
  ncclzSampleStats st;
  CHECK(ncclzReaSampleProfile(f.s.sym, f.s.n, 65536, 8, &st) == NCCLZ_OK, "sample");
  CHECK(st.n_sampled == 16384, "64 KiB of symbols sampled: %llu", (unsigned long long)st.n_sampled);
  ncclzReaCandidates cand;
  ncclzReaPredictFrames(&st, f.s.n, 4, f.desc.side_bytes, &f.desc.coder_params, &cand);
  for (int c = NCCLZ_CODER_FIXEDLEN; c < NCCLZ_CODER_COUNT; c++) {
    size_t cap = ncclzFrameBound((ncclzCoder)c, &f.desc.coder_params, f.s.n, f.desc.side_bytes), len = 0;
    uint8_t *buf = malloc(cap);
    CHECK(ncclzFrameEncode((ncclzCoder)c, f.s.sym, f.s.n, &f.desc, buf, cap, &len) == NCCLZ_OK, "encode %d", c);
    double rel = (double)cand.pred_frame_bytes[c] / (double)len;
    printf("  %s: predicted %llu bytes, realized %zu (ratio %.3f, CR %.2f)\n", ncclzCoderName((ncclzCoder)c),
           (unsigned long long)cand.pred_frame_bytes[c], len, rel, cand.frame_raw_bytes / (double)len);
    CHECK(rel > 0.85 && rel < 1.15, "%s prediction within 15%%: %.3f", ncclzCoderName((ncclzCoder)c), rel);
    free(buf);
  }
  frame_free(&f);
}

/* ------------------------------------------------------------ arbitration */

static void test_nvlink_gives_raw(void) {
  Frame f;
  if (!resnet_qsgd(&f, 2)) return;
  ncclzReaConfig cfg = config(NCCLZ_HINT_NVLINK, NCCLZ_CLASS_QSGD);
  ncclzReaResult res;
  uint8_t *buf;
  CHECK(encode_best(&cfg, &f, raw_cap(&f), &buf, &res) == NCCLZ_OK, "encode: %s", ncclzLastError());
  CHECK(res.path == NCCLZ_REA_PATH_PLANNED_RAW, "planned RAW, path %d", (int)res.path);
  CHECK(res.committed == NCCLZ_CODER_RAW && res.frame_bytes == raw_cap(&f), "RAW frame committed");
  CHECK(res.decision.verdict[NCCLZ_CODER_FIXEDLEN] == NCCLZ_REA_ADMISSIBLE, "FIXEDLEN admissible, but slower");
  CHECK(res.decision.time_us[NCCLZ_CODER_RAW] < res.decision.time_us[NCCLZ_CODER_FIXEDLEN], "RAW %g < FIXEDLEN %g",
        res.decision.time_us[NCCLZ_CODER_RAW], res.decision.time_us[NCCLZ_CODER_FIXEDLEN]);
  CHECK(decodes_to(buf, res.frame_bytes, &f), "RAW frame decodes");
  free(buf);
  frame_free(&f);
}

static void test_net_skewed_gives_huffman(void) {
  Frame f;
  if (!skewed_frame(&f)) return;
  ncclzReaConfig cfg = config(NCCLZ_HINT_NET, NCCLZ_CLASS_EB_LORENZO);
  ncclzReaResult res;
  uint8_t *buf;
  CHECK(encode_best(&cfg, &f, raw_cap(&f), &buf, &res) == NCCLZ_OK, "encode: %s", ncclzLastError());
  printf("  skewed frame: predicted fixedlen %llu, huffman %llu bytes of %llu\n",
         (unsigned long long)res.cand.pred_frame_bytes[1], (unsigned long long)res.cand.pred_frame_bytes[2],
         (unsigned long long)res.cand.raw_frame_bytes);
  CHECK(res.planned == NCCLZ_CODER_HUFFMAN, "planned %s (raw %.1f fixedlen %.1f huffman %.1f us)",
        ncclzCoderName(res.planned), res.decision.time_us[0], res.decision.time_us[1], res.decision.time_us[2]);
  CHECK(res.path == NCCLZ_REA_PATH_CODED && res.committed == NCCLZ_CODER_HUFFMAN, "HUFFMAN committed");
  CHECK(res.frame_bytes == res.realized_bytes && res.frame_bytes < raw_cap(&f) / 4, "frame %zu bytes", res.frame_bytes);
  CHECK(decodes_to(buf, res.frame_bytes, &f), "HUFFMAN frame decodes to the same symbols");
  free(buf);
  frame_free(&f);
}

static void test_flat_narrow_gives_fixedlen(void) {
  Frame f;
  int_frame(&f, 1u << 20);  /* a 4 MiB frame */
  uint64_t rng = 11;
  for (size_t i = 0; i < f.s.n; i++) f.s.sym[i] = (int32_t)(tu_rand(&rng) % 8) - 4;  /* zigzag: 0..7 */
  ncclzReaConfig cfg = config(NCCLZ_HINT_NET, NCCLZ_CLASS_DEFAULT);
  ncclzReaResult res;
  uint8_t *buf;
  CHECK(encode_best(&cfg, &f, raw_cap(&f), &buf, &res) == NCCLZ_OK, "encode: %s", ncclzLastError());
  CHECK(res.decision.verdict[NCCLZ_CODER_HUFFMAN] == NCCLZ_REA_ADMISSIBLE, "HUFFMAN admissible too");
  CHECK(res.committed == NCCLZ_CODER_FIXEDLEN, "committed %s (raw %.1f fixedlen %.1f huffman %.1f us)",
        ncclzCoderName(res.committed), res.decision.time_us[0], res.decision.time_us[1], res.decision.time_us[2]);
  CHECK(decodes_to(buf, res.frame_bytes, &f), "FIXEDLEN frame decodes");
  free(buf);
  frame_free(&f);
}

static void test_small_frame_takes_fast_path(void) {
  Frame f;
  if (!resnet_qsgd(&f, 1)) return;
  f.s.n = 1024;  /* 4 KiB of raw bytes, under fast_path_bytes */
  f.desc.side_bytes = ncclzReaSideBytes(&f.s.qp, f.s.n);
  ncclzReaConfig cfg = config(NCCLZ_HINT_NET, NCCLZ_CLASS_QSGD);
  CHECK(f.s.n * 4 < cfg.fast_path_bytes, "below the fast path threshold");
  ncclzReaResult res;
  uint8_t *buf;
  CHECK(encode_best(&cfg, &f, raw_cap(&f), &buf, &res) == NCCLZ_OK, "encode: %s", ncclzLastError());
  CHECK(res.path == NCCLZ_REA_PATH_FAST && res.committed == NCCLZ_CODER_RAW, "fast path RAW (path %d)", (int)res.path);
  CHECK(res.frame_bytes == 64 + f.desc.side_bytes + 4096, "RAW frame of %zu bytes", res.frame_bytes);
  CHECK(decodes_to(buf, res.frame_bytes, &f), "fast-path frame decodes");
  free(buf);
  frame_free(&f);
}

/* The sampled pieces look narrow but the rest of the frame is noise: the planned coder's frame
 * comes out larger than RAW, the post-check rejects it and RAW is committed. */
static void test_realized_larger_falls_back(void) {
  Frame f;
  int_frame(&f, 1u << 20);
  ncclzReaConfig cfg = config(NCCLZ_HINT_NET, NCCLZ_CLASS_DEFAULT);
  cfg.sample_window_bytes = 4096;  /* a small window, so the narrow pieces barely shrink the frame */
  uint64_t rng = 13;
  for (size_t i = 0; i < f.s.n; i++) f.s.sym[i] = (int32_t)(uint32_t)tu_rand(&rng);
  ncclzSamplePlan plan;
  ncclz_rea_sample_plan(f.s.n, cfg.sample_window_bytes, cfg.sample_pieces, &plan);
  for (uint32_t p = 0; p < plan.count; p++) {
    uint64_t start, len;
    ncclz_rea_sample_piece(&plan, p, &start, &len);
    for (uint64_t k = start; k < start + len; k++) f.s.sym[k] = (int32_t)(tu_rand(&rng) % 4);
  }
  ncclzReaResult res;
  uint8_t *buf;
  size_t cap = ncclzFrameBound(NCCLZ_CODER_HUFFMAN, &f.desc.coder_params, f.s.n, 0);
  CHECK(encode_best(&cfg, &f, cap, &buf, &res) == NCCLZ_OK, "encode: %s", ncclzLastError());
  CHECK(res.planned != NCCLZ_CODER_RAW, "the sample fooled the plan into %s", ncclzCoderName(res.planned));
  CHECK(res.path == NCCLZ_REA_PATH_FALLBACK, "fell back (path %d)", (int)res.path);
  CHECK(res.realized_bytes > raw_cap(&f), "realized %zu > RAW %zu", res.realized_bytes, raw_cap(&f));
  CHECK(res.committed == NCCLZ_CODER_RAW && res.frame_bytes == raw_cap(&f), "RAW committed");
  CHECK(decodes_to(buf, res.frame_bytes, &f), "fallback frame decodes");
  /* the same verdict as a size, for encoders that post-check on the GPU */
  CHECK(ncclzReaFallbackBytes(&cfg, f.s.n, 0, cap) < res.realized_bytes, "the realized frame is over the limit");
  free(buf);
  frame_free(&f);
}

/* ncclzReaFallbackBytes is the post-check's boundary: every size up to it is accepted, the next
 * one is not (or it is the staging capacity), for gains of 0 to 1000 permil. */
static void test_fallback_bytes(void) {
  const uint32_t gains[] = {0, 1, 7, 50, 500, 999, 1000};
  const size_t ns[] = {0, 1, 31, 1000, 1u << 20};
  int checked = 0;
  for (size_t g = 0; g < sizeof gains / sizeof *gains; g++)
    for (size_t i = 0; i < sizeof ns / sizeof *ns; i++)
      for (uint32_t side = 0; side <= 256; side += 256) {
        ncclzReaConfig cfg = config(NCCLZ_HINT_NET, NCCLZ_CLASS_DEFAULT);
        cfg.min_gain_permil = gains[g];
        const uint64_t raw = ncclz_rea_raw_frame_bytes(ns[i], side);
        for (size_t cap = raw / 2; cap <= 2 * raw + 8; cap += raw + 4) {
          const ncclzReaRules rules = ncclz_rea_rules(&cfg, cap);
          const uint64_t lim = ncclzReaFallbackBytes(&cfg, ns[i], side, cap);
          const int top_ok = lim == cap || !ncclz_rea_accept_realized(&rules, raw, lim + 1);
          CHECK(lim >= 1 && (ncclz_rea_accept_realized(&rules, raw, lim) || lim == 1) && top_ok,
                "limit %llu for raw %llu, gain %u, cap %zu", (unsigned long long)lim, (unsigned long long)raw, gains[g], cap);
          checked++;
        }
      }
  printf("  fallback limits: %d boundaries checked\n", checked);
}

static void test_capacity(void) {
  Frame f;
  if (!skewed_frame(&f)) return;
  ncclzReaConfig cfg = config(NCCLZ_HINT_NET, NCCLZ_CLASS_EB_LORENZO);
  ncclzReaResult res;
  uint8_t *buf;
  /* Staging that holds the coded frame but not a RAW one: the coded frame is fine. */
  size_t cap = raw_cap(&f) / 3;
  CHECK(encode_best(&cfg, &f, cap, &buf, &res) == NCCLZ_OK, "coded frame fits: %s", ncclzLastError());
  CHECK(res.committed == NCCLZ_CODER_HUFFMAN && res.frame_bytes <= cap, "HUFFMAN in %zu bytes", res.frame_bytes);
  free(buf);
  /* Nothing fits: every coder over capacity, and RAW neither. */
  CHECK(encode_best(&cfg, &f, 1000, &buf, &res) == NCCLZ_ERR_CAPACITY, "even RAW does not fit");
  CHECK(strstr(ncclzLastError(), "staging capacity") != NULL, "message: %s", ncclzLastError());
  CHECK(res.decision.verdict[NCCLZ_CODER_HUFFMAN] == NCCLZ_REA_OVER_CAPACITY, "HUFFMAN over capacity");
  free(buf);
  /* Degenerate guards. */
  ncclzReaResult r2;
  CHECK(ncclzReaEncodeBest(&prof, &cfg, NULL, 10, &f.desc, (uint8_t *)&r2, 10, &r2) == NCCLZ_ERR_ARG, "NULL symbols");
  frame_free(&f);
}

static void test_admissibility_gates(void) {
  Frame f;
  if (!skewed_frame(&f)) return;
  ncclzReaResult res;
  ncclzReaConfig cfg = config(NCCLZ_HINT_NET, NCCLZ_CLASS_EB_LORENZO);
  cfg.huff_min_bytes = 8u << 20;  /* the frame is about 4 MiB */
  CHECK(ncclzReaPlan(&prof, &cfg, f.s.sym, f.s.n, &f.desc, raw_cap(&f), &res) == NCCLZ_OK, "plan");
  CHECK(res.decision.verdict[NCCLZ_CODER_HUFFMAN] == NCCLZ_REA_BELOW_HUFF_MIN, "T_huff gates HUFFMAN");
  CHECK(res.planned == NCCLZ_CODER_FIXEDLEN, "then FIXEDLEN: %s", ncclzCoderName(res.planned));

  cfg = config(NCCLZ_HINT_NET, NCCLZ_CLASS_EB_LORENZO);
  cfg.huff_ctx_valid = 0;
  CHECK(ncclzReaPlan(&prof, &cfg, f.s.sym, f.s.n, &f.desc, raw_cap(&f), &res) == NCCLZ_OK, "plan");
  CHECK(res.decision.verdict[NCCLZ_CODER_HUFFMAN] == NCCLZ_REA_NO_HUFF_CTX, "no Huffman context");

  cfg = config(NCCLZ_HINT_NET, NCCLZ_CLASS_EB_LORENZO);
  cfg.coder_mask = (1u << NCCLZ_CODER_RAW) | (1u << NCCLZ_CODER_FIXEDLEN);
  CHECK(ncclzReaPlan(&prof, &cfg, f.s.sym, f.s.n, &f.desc, raw_cap(&f), &res) == NCCLZ_OK, "plan");
  CHECK(res.decision.verdict[NCCLZ_CODER_HUFFMAN] == NCCLZ_REA_DISABLED && res.planned == NCCLZ_CODER_FIXEDLEN,
        "HUFFMAN disabled");

  cfg = config(NCCLZ_HINT_NET, NCCLZ_CLASS_EB_LORENZO);
  cfg.min_gain_permil = 1000;
  CHECK(ncclzReaPlan(&prof, &cfg, f.s.sym, f.s.n, &f.desc, raw_cap(&f), &res) == NCCLZ_OK, "plan");
  CHECK(res.decision.verdict[NCCLZ_CODER_FIXEDLEN] == NCCLZ_REA_LOW_GAIN &&
            res.decision.verdict[NCCLZ_CODER_HUFFMAN] == NCCLZ_REA_LOW_GAIN && res.planned == NCCLZ_CODER_RAW,
        "a gain of 100%% is never reached");

  /* a pipeline of k frames exposes lambda + (1 - lambda) / k of each coder's codec time */
  cfg = config(NCCLZ_HINT_NET, NCCLZ_CLASS_EB_LORENZO);
  ncclzReaResult steady, alone;
  CHECK(ncclzReaPlan(&prof, &cfg, f.s.sym, f.s.n, &f.desc, raw_cap(&f), &steady) == NCCLZ_OK, "plan");
  cfg.pipeline_frames = 1.0;
  CHECK(ncclzReaPlan(&prof, &cfg, f.s.sym, f.s.n, &f.desc, raw_cap(&f), &alone) == NCCLZ_OK, "plan");
  const ncclzCodecProfile *hp = &prof.codec[NCCLZ_CODER_HUFFMAN];
  const ncclzCodecCurves *hc = ncclz_rea_curves(&prof, NCCLZ_CODER_HUFFMAN, NCCLZ_CLASS_EB_LORENZO);
  double raw_bytes = alone.cand.frame_raw_bytes;
  double hidden = (1.0 - hp->lambda_enc[NCCLZ_HINT_NET]) * ncclz_rea_curve_us(&hc->encode, raw_bytes) +
                  (1.0 - hp->lambda_dec[NCCLZ_HINT_NET]) * ncclz_rea_curve_us(&hc->decode, raw_bytes);
  double more = alone.decision.time_us[NCCLZ_CODER_HUFFMAN] - steady.decision.time_us[NCCLZ_CODER_HUFFMAN];
  CHECK(alone.cand.pipeline_frames == 1.0 && fabs(more - hidden) < 1e-6 * (1.0 + hidden) &&
            alone.decision.time_us[NCCLZ_CODER_RAW] == steady.decision.time_us[NCCLZ_CODER_RAW],
        "a lone frame pays the codec time the steady state hides: +%.3f us, want +%.3f", more, hidden);
  cfg.pipeline_frames = -1.0;
  CHECK(ncclzReaPlan(&prof, &cfg, f.s.sym, f.s.n, &f.desc, raw_cap(&f), &res) == NCCLZ_ERR_ARG &&
            strstr(ncclzLastError(), "pipeline_frames"),
        "a negative pipeline refused: %s", ncclzLastError());

  cfg = config(NCCLZ_HINT_NET, NCCLZ_CLASS_EB_LORENZO);
  cfg.sample_window_bytes = NCCLZ_REA_SAMPLE_MAX_BYTES + 128;
  CHECK(ncclzReaPlan(&prof, &cfg, f.s.sym, f.s.n, &f.desc, raw_cap(&f), &res) == NCCLZ_ERR_ARG &&
            strstr(ncclzLastError(), "sample_window_bytes"),
        "window over 64 KiB refused: %s", ncclzLastError());
  frame_free(&f);
}

/* The host path's decision is exactly the shared functions' decision on the same inputs. */
static void test_host_path_uses_shared_decision(void) {
  Frame f;
  if (!resnet_qsgd(&f, 2)) return;
  for (int hint = 0; hint < NCCLZ_HINT_COUNT; hint++) {
    ncclzReaConfig cfg = config((ncclzTransportHint)hint, NCCLZ_CLASS_QSGD);
    ncclzReaResult res;
    CHECK(ncclzReaPlan(&prof, &cfg, f.s.sym, f.s.n, &f.desc, raw_cap(&f), &res) == NCCLZ_OK, "plan");
    ncclzSampleStats st;
    ncclzReaSampleProfile(f.s.sym, f.s.n, cfg.sample_window_bytes, cfg.sample_pieces, &st);
    ncclzReaCandidates cand;
    ncclz_rea_predict(&st, f.s.n, 4, f.desc.side_bytes, &f.desc.coder_params, &cand);
    ncclzReaRules rules = {raw_cap(&f), cfg.fast_path_bytes, cfg.huff_min_bytes, cfg.min_gain_permil,
                           cfg.coder_mask, cfg.huff_ctx_valid};
    ncclzReaDecision d;
    ncclz_rea_arbitrate(&prof, ncclz_rea_link(&prof, (ncclzTransportHint)hint), NCCLZ_CLASS_QSGD, &rules, &cand, &d);
    CHECK(d.coder == res.planned, "%s: same coder", ncclzHintName((ncclzTransportHint)hint));
    CHECK(!memcmp(d.time_us, res.decision.time_us, sizeof d.time_us), "%s: same times",
          ncclzHintName((ncclzTransportHint)hint));
    CHECK(!memcmp(cand.pred_frame_bytes, res.cand.pred_frame_bytes, sizeof cand.pred_frame_bytes), "same sizes");
  }
  frame_free(&f);
}

/* ------------------------------------------------------- surface, planning */

static void test_surface(void) {
  Frame f;
  if (!resnet_qsgd(&f, 2)) return;
  ncclzSurfaceGrid g;
  ncclzSurfaceGridDefault(&g);
  double bw[32];
  uint64_t sizes[32];
  size_t nbw = ncclzSurfaceBandwidths(&g, bw, 32), ns = ncclzSurfaceSizes(&g, sizes, 32);
  CHECK(nbw == 13 && bw[0] == 1.0 && bw[4] == 10.0 && bw[12] == 1000.0, "13 bandwidths 1..1000 (%zu)", nbw);
  CHECK(ns == 11 && sizes[0] == 4096 && sizes[10] == 4ull << 30, "11 sizes 4K..4G (%zu)", ns);

  ncclzSurfaceData d;
  memset(&d, 0, sizeof d);
  ncclzReaSampleProfile(f.s.sym, f.s.n, 65536, 8, &d.stats);
  d.dtype_bytes = 4;
  d.quant = &f.s.qp;
  ncclzCoderParamsDefault(&d.coder_params);
  ncclzReaConfig cfg = config(NCCLZ_HINT_NET, NCCLZ_CLASS_QSGD);
  ncclzSurfacePoint pt;
  ncclzSurfacePointEval(&prof, &cfg, &d, 1.0, 64u << 20, &pt);
  CHECK(pt.coder == NCCLZ_CODER_HUFFMAN, "1 GB/s, 64 MiB: %s", ncclzCoderName(pt.coder));
  CHECK(pt.time_us == pt.coder_us[NCCLZ_CODER_HUFFMAN] && pt.time_us < pt.coder_us[NCCLZ_CODER_RAW], "time");
  ncclzSurfacePointEval(&prof, &cfg, &d, 1000.0, 64u << 20, &pt);
  CHECK(pt.coder == NCCLZ_CODER_RAW, "1 TB/s: %s", ncclzCoderName(pt.coder));
  ncclzSurfacePointEval(&prof, &cfg, &d, 1.0, 4096, &pt);
  CHECK(pt.coder == NCCLZ_CODER_RAW && pt.fast_path, "4 KiB: fast path");
  frame_free(&f);
}

static void test_planning_cost(void) {
  Frame f;
  if (!resnet_qsgd(&f, 8)) return;  /* 1 Mi symbols: a 4 MiB frame */
  ncclzReaConfig cfg = config(NCCLZ_HINT_NET, NCCLZ_CLASS_QSGD);
  /* the least of five single runs each: a run descheduled by a loaded machine cannot pass for the cost */
  double plan_us = 1e300, encode_us = 1e300;
  for (int i = 0; i < 5; i++) {
    ncclzReaPlanCost cost;
    CHECK(ncclzReaMeasurePlanningCost(&prof, &cfg, f.s.sym, f.s.n, &f.desc, NCCLZ_CODER_HUFFMAN, 1, &cost) == NCCLZ_OK,
          "measure: %s", ncclzLastError());
    CHECK(cost.plan_us > 0 && cost.encode_us > 0, "timed");
    plan_us = cost.plan_us < plan_us ? cost.plan_us : plan_us;
    encode_us = cost.encode_us < encode_us ? cost.encode_us : encode_us;
  }
  printf("  planning a 4 MiB frame: %.1f us; HUFFMAN encode on the CPU: %.1f us; ratio %.4f\n", plan_us, encode_us,
         plan_us / encode_us);
  CHECK(plan_us / encode_us < 0.2, "planning is a small fraction of encoding on the CPU: %.4f", plan_us / encode_us);
  frame_free(&f);
}

/* The call-level check: a frame that saves S us against RAW, over U units, is worth a call only
 * when U * (S - unit_us) exceeds the call's interface. */
/* The call check of one 1 MB frame per unit over a 1 MB call. */
static int call_worth_it(const ncclzProfile *p, ncclzTransportHint h, const ncclzReaDecision *d, ncclzCoder c,
                         double units) {
  ncclzReaCall call = {1e6, units, 1e6, NCCLZ_CLASS_DEFAULT, 0.0};
  return ncclzReaCallWorthIt(p, h, d, c, &call);
}

static void test_call_worth_it(void) {
  ncclzProfile p = prof;
  ncclzReaDecision d;
  memset(&d, 0, sizeof d);
  d.time_us[NCCLZ_CODER_RAW] = 400.0;
  d.time_us[NCCLZ_CODER_FIXEDLEN] = 250.0; /* saves 150 us a frame */
  const ncclzTransportHint net = NCCLZ_HINT_NET;
  ncclzCodecProfile *fl = &p.codec[NCCLZ_CODER_FIXEDLEN];
  for (int h = 0; h < NCCLZ_HINT_COUNT; h++) fl->lambda_enc[h] = fl->lambda_dec[h] = 1.0; /* no fill */
  memset(p.iface, 0, sizeof p.iface);
  CHECK(call_worth_it(&p, net, &d, NCCLZ_CODER_FIXEDLEN, 1) && !call_worth_it(&p, net, &d, NCCLZ_CODER_RAW, 100),
        "no interface: any saving is worth it, RAW never");
  p.iface[net] = (ncclzInterfaceProfile){.present = 1, .alpha_us = 280.0, .gbps = 1e9}; /* 280 us + ~0 per byte */
  CHECK(!call_worth_it(&p, net, &d, NCCLZ_CODER_FIXEDLEN, 1), "1 unit: 150 us < 280 us");
  CHECK(call_worth_it(&p, net, &d, NCCLZ_CODER_FIXEDLEN, 2), "2 units: 300 us > 280 us");
  p.iface[net].unit_us = 20.0; /* 2 x (150 - 20) = 260 < 280 */
  CHECK(!call_worth_it(&p, net, &d, NCCLZ_CODER_FIXEDLEN, 2), "host time per unit counts");
  CHECK(call_worth_it(&p, net, &d, NCCLZ_CODER_FIXEDLEN, 3), "3 units: 390 us > 280 us");
  CHECK(call_worth_it(&p, NCCLZ_HINT_NVLINK, &d, NCCLZ_CODER_FIXEDLEN, 1), "another hint has no interface");
  /* lambda 0: the steady state hides nothing and the fill is a whole encode and decode */
  fl->lambda_enc[net] = fl->lambda_dec[net] = 0.0;
  const ncclzCodecCurves *cv = &fl->curves[NCCLZ_CLASS_DEFAULT];
  double fill = ncclz_rea_curve_us(&cv->encode, 1e6) + ncclz_rea_curve_us(&cv->decode, 1e6);
  double need = floor((280.0 + fill) / 130.0) + 1.0; /* units of 130 us net saving */
  CHECK(fill > 0 && call_worth_it(&p, net, &d, NCCLZ_CODER_FIXEDLEN, need) &&
            !call_worth_it(&p, net, &d, NCCLZ_CODER_FIXEDLEN, need - 1.0),
        "the pipeline's fill (%.1f us) counts: %.0f units pay for it, %.0f do not", fill, need, need - 1.0);
}

/* The strict JSON reader: what cJSON alone accepts and every input must refuse, each with one line
 * that names the input and the position or key. */
static void test_json_strict(void) {
  static const struct {
    const char *text;
    size_t len; /* 0: strlen */
    const char *message;
  } bad[] = {
      {"{\"a\": 1} x", 0, "t: characters after the JSON value at line 1, column 10"},
      {"{\"a\": 1}\n\n}", 0, "t: characters after the JSON value at line 3, column 1"},
      {"{\"a\": 1}\0{\"b\": 2}", 17, "t: NUL byte at line 1, column 9"},
      {"{\"a\": \"x\0y\"}", 13, "t: NUL byte at line 1, column 9"},
      {"{\"a\": \"x\\u0000y\"}", 0, "t: \\u0000 (a NUL character) in a string at line 1, column 9"},
      {"{\"a\": \"\xff\"}", 0, "t: not valid UTF-8 at line 1, column 8"},
      {"{\"a\": \"\xc0\xaf\"}", 0, "t: not valid UTF-8 at line 1, column 8"},      /* overlong '/' */
      {"{\"a\": \"\xed\xa0\x80\"}", 0, "t: not valid UTF-8 at line 1, column 8"},  /* a surrogate */
      {"{\"a\": \"\xe2\x82\"}", 0, "t: not valid UTF-8 at line 1, column 8"},      /* cut short */
      {"{\"a\": 1, \"b\": {\"c\": [{\"d\": 1, \"d\": 2}]}}", 0, "t: duplicate key 'b.c[0].d'"},
      {"{\"a\": 1, \"a\": 1}", 0, "t: duplicate key 'a'"},
      {"{\"a\": \"line\nbreak\"}", 0, "t: control character in a string at line 1, column 12"},
      {"{\"a\tb\": 1}", 0, "t: control character in a string at line 1, column 4"},
      {"{\"a\": \n  [1, 2,]}", 0, "t: invalid JSON at line 2, column"},
      {"", 0, "t: invalid JSON at line 1, column 1"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    struct cJSON *root = NULL;
    size_t len = bad[i].len ? bad[i].len : strlen(bad[i].text);
    ncclzStatus st = ncclzJsonParse("t", bad[i].text, len, &root);
    CHECK(st == NCCLZ_ERR_ARG && !root && strstr(ncclzLastError(), bad[i].message) && !strchr(ncclzLastError(), '\n'),
          "bad JSON %zu: status %d, '%s', expected '%s'", i, (int)st, ncclzLastError(), bad[i].message);
  }
  static const char *const good[] = {
      "{\"a\": \"caf\xc3\xa9 \xf0\x9f\x98\x80\", \"b\": [1, {\"a\": 2}], \"c\": {\"a\": 3}}\n", /* same key, other objects */
      "{\"q\": \"say \\\"hi\\\" \\\\u0000\"}",                                        /* escaped quote, a literal \u0000 */
      "\xef\xbb\xbf[1, 2, 3]  \r\n",                                                      /* a BOM, trailing space */
  };
  for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
    struct cJSON *root = NULL;
    ncclzStatus st = ncclzJsonParse("t", good[i], strlen(good[i]), &root);
    CHECK(st == NCCLZ_OK && root, "good JSON %zu: %s", i, ncclzLastError());
    CHECK(root && ncclzJsonCount(root, 100) >= 1 && ncclzJsonCount(root, 0) == 1, "count %zu", i);
    cJSON_Delete(root);
  }
  /* the profile loader reads through it */
  const char *dup = "{\"version\": 1, \"version\": 1}";
  ncclzProfile p;
  CHECK(ncclzProfileParse(dup, strlen(dup), &p) == NCCLZ_ERR_ARG && strstr(ncclzLastError(), "profile: duplicate key 'version'"),
        "profile duplicate: '%s'", ncclzLastError());
  /* byte counts: the range of ncclzParseBytes, 2^63 refused */
  static const struct {
    const char *json;
    int ok;
    uint64_t value;
  } bytes[] = {{"4194304", 1, 4194304}, {"\"4M\"", 1, 4194304}, {"1e15", 1, 1000000000000000ull},
               {"9223372036854775808", 0, 0}, {"\"8E\"", 0, 0}, {"1.5", 0, 0}, {"0", 0, 0}, {"-1", 0, 0}, {"true", 0, 0}};
  for (size_t i = 0; i < sizeof bytes / sizeof bytes[0]; i++) {
    struct cJSON *v = NULL;
    uint64_t out = 0;
    CHECK(ncclzJsonParse("b", bytes[i].json, strlen(bytes[i].json), &v) == NCCLZ_OK, "bytes %zu parses", i);
    int rc = ncclzJsonBytes(v, &out);
    CHECK(bytes[i].ok ? rc == 0 && out == bytes[i].value : rc == -1, "bytes %s: rc %d, %llu", bytes[i].json, rc,
          (unsigned long long)out);
    cJSON_Delete(v);
  }
  /* a file: its path names the error, and a file over the limit is refused before it is read */
  struct cJSON *root = NULL;
  CHECK(ncclzJsonLoad("profile", NCCLZ_TEST_DATA "/profiles_bad/not_json.json", &root) == NCCLZ_ERR_ARG &&
            strstr(ncclzLastError(), "profile " NCCLZ_TEST_DATA "/profiles_bad/not_json.json: invalid JSON at line 1"),
        "load: '%s'", ncclzLastError());
  CHECK(ncclzJsonLoad(NULL, NCCLZ_TEST_DATA "/no_such.json", &root) == NCCLZ_ERR_IO && !root, "missing file");
}

int main(void) {
  test_json_strict();
  test_profile_loads();
  test_profile_errors();
  test_profile_default();
  test_curve();
  test_sample_fixedlen_exact();
  test_sample_predicts_huffman_v2();
  test_huffman_estimate();
  test_sample_predicts_real_data();
  test_nvlink_gives_raw();
  test_net_skewed_gives_huffman();
  test_flat_narrow_gives_fixedlen();
  test_small_frame_takes_fast_path();
  test_realized_larger_falls_back();
  test_fallback_bytes();
  test_capacity();
  test_admissibility_gates();
  test_host_path_uses_shared_decision();
  test_call_worth_it();
  test_surface();
  test_planning_cost();
  return tu_finish("model");
}
