/* Philox4x32-10 against the Random123 known answers, and QSGD on a real ResNet-18 gradient:
 * code range, shared scales, determinism, and unbiasedness with tolerances derived from the
 * distribution of the stochastic rounding. */
#include "../codecs/philox.h"
#include "../codecs/qsgd_code.h"
#include "ncclz/codecs.h"
#include "testutil.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ------------------------------------------------------------- Philox */

/* Known-answer vectors of Random123 (kat_vectors: philox4x32 10). */
static void test_philox_kat(void) {
  static const struct {
    uint32_t ctr[4], key[2], want[4];
  } kat[] = {
      {{0, 0, 0, 0}, {0, 0}, {0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}},
      {{0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff},
       {0xffffffff, 0xffffffff},
       {0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}},
      {{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344},
       {0xa4093822, 0x299f31d0},
       {0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}},
  };
  for (size_t k = 0; k < sizeof kat / sizeof kat[0]; k++) {
    uint32_t out[4];
    ncclz_philox4x32_10(kat[k].ctr, kat[k].key, out);
    CHECK(memcmp(out, kat[k].want, sizeof out) == 0, "KAT %zu: %08x %08x %08x %08x", k, out[0], out[1], out[2],
          out[3]);
  }
}

/* The uniform of element i is (out[i mod 4] >> 8) * 2^-24 of counter {i/4 lo, i/4 hi, rank, 0},
 * key {seed lo, hi}: four consecutive elements share one Philox call, a word each. */
static void test_philox_uniform(void) {
  const uint64_t seed = 0x0123456789abcdefull, index = 0xfedcba9876543210ull;
  const uint32_t rank = 5;
  const uint64_t group = index >> 2;
  uint32_t ctr[4] = {(uint32_t)group, (uint32_t)(group >> 32), rank, 0};
  uint32_t key[2] = {(uint32_t)seed, (uint32_t)(seed >> 32)}, out[4];
  ncclz_philox4x32_10(ctr, key, out);
  for (uint32_t j = 0; j < 4; j++) { /* index is 0 mod 4: its group's four words in order */
    float want = (float)(out[j] >> 8) / 16777216.0f;
    CHECK(ncclzPhiloxUniform(seed, index + j, rank) == want, "uniform mapping, word %u: %g vs %g", j,
          (double)ncclzPhiloxUniform(seed, index + j, rank), (double)want);
    CHECK(ncclzPhiloxUniform(seed, index + j, rank) == ncclz_philox_uniform(seed, index + j, rank), "host wrapper");
  }
  CHECK(ncclzPhiloxUniform(seed, index + 4, rank) != ncclzPhiloxUniform(seed, index, rank) ||
            ncclzPhiloxUniform(seed, index + 5, rank) != ncclzPhiloxUniform(seed, index + 1, rank),
        "the next group draws new words");
  /* Mean and range of many draws: mean 1/2, variance 1/12. */
  enum { N = 1 << 18 };
  double sum = 0, lo = 1, hi = 0;
  for (uint64_t i = 0; i < N; i++) {
    double u = ncclzPhiloxUniform(42, i, 0);
    sum += u;
    lo = u < lo ? u : lo;
    hi = u > hi ? u : hi;
  }
  double z = (sum / N - 0.5) / sqrt(1.0 / 12.0 / N);
  CHECK(lo >= 0 && hi < 1 && fabs(z) < 5, "uniforms: min %g max %g z %g", lo, hi, z);
}

/* ---------------------------------------------------------------- QSGD */

typedef struct {
  float *x;
  size_t n;
} Grad;

static ncclzQuantParams qsgd_params(int bits, uint32_t bucket, uint64_t seed, uint32_t rank) {
  ncclzQuantParams p;
  memset(&p, 0, sizeof p);
  p.kind = NCCLZ_QUANT_QSGD;
  p.qsgd_bits = bits;
  p.qsgd_bucket = bucket;
  p.seed = seed;
  p.rank = rank;
  p.dims[0] = p.dims[1] = p.dims[2] = 1;
  return p;
}

static int levels(int bits) { return (1 << (bits - 1)) - 1; }

/* Codes lie in [-s, s], carry the sign of x, and are floor(t) or floor(t)+1. */
static void check_code_range(const Grad *g, int bits, uint32_t bucket) {
  ncclzQuantParams p = qsgd_params(bits, bucket, 7, 0);
  size_t nb = ncclzQsgdNumBuckets(&p, g->n);
  CHECK(nb == (g->n + bucket - 1) / bucket, "buckets %zu", nb);
  float *scales = malloc(nb * sizeof *scales);
  int32_t *codes = malloc(g->n * sizeof *codes);
  ncclzQsgdScales(&p, g->x, g->n, scales);
  CHECK(ncclzQuantizeQsgd(&p, g->x, g->n, NULL, codes) == NCCLZ_OK, "%s", ncclzLastError());
  const int s = levels(bits);
  size_t bad = 0, at_max = 0;
  for (size_t i = 0; i < g->n; i++) {
    float sc = scales[i / bucket];
    double t = sc > 0 ? fabs((double)g->x[i]) / sc * s : 0;
    int32_t c = codes[i], a = c < 0 ? -c : c;
    bad += a > s || (c < 0 && g->x[i] >= 0) || (c > 0 && g->x[i] <= 0) || a < floor(t) || a > floor(t) + 1;
    at_max += a == s;
  }
  CHECK(bad == 0, "bits %d bucket %u: %zu codes out of range", bits, bucket, bad);
  CHECK(at_max >= nb, "bits %d: the max of each bucket should reach s (%zu codes at s, %zu buckets)", bits, at_max,
        nb);
  free(scales);
  free(codes);
}

/* The GPU kernels' form of the rule (codecs/qsgd_code.h) against the reference, element for
 * element, on the elements where it could part from it: per bucket a random scale from subnormal
 * to near FLT_MAX, and values aimed at the levels' edges, T = t 2^24 within a few units of
 * 2^24 F + a for the element's own uniform word a (where u < frac(t) turns), plus the scale itself,
 * zeros, subnormals, NaN, Inf and random values; then the real gradients. */
static uint32_t rng_u32(uint64_t *st) {
  *st = *st * 6364136223846793005ull + 1442695040888963407ull;
  return (uint32_t)(*st >> 33);
}
/* For a power-of-two scale b: v = m 2^-24 b with m s = a + d (mod 2^24), so that T = m s is a
 * whole number d units from the turn (s is odd: m = (a + d) / s mod 2^24). */
static float edge_whole(uint64_t *st, float b, int s, uint32_t a) {
  uint32_t inv = (uint32_t)s; /* s^-1 mod 2^32 by Newton's iteration, five steps from s */
  for (int k = 0; k < 5; k++) inv *= 2u - (uint32_t)s * inv;
  const uint32_t m = ((a + rng_u32(st) % 5 - 2) * inv) & 0xFFFFFFu;
  return ldexpf((float)m, -24) * b;
}
static float edge_aim(uint64_t *st, float b, int s, uint32_t a) {
  if (frexpf(b, &(int){0}) == 0.5f && rng_u32(st) % 2) return edge_whole(st, b, s, a);
  switch (rng_u32(st) % 16) {
  case 0: return b;
  case 1: return 0.0f;
  case 2: return ldexpf((float)(rng_u32(st) % 1000 + 1), -149 + (int)(rng_u32(st) % 10)); /* subnormal */
  case 3: return rng_u32(st) % 64 ? NAN : INFINITY; /* Inf: the bucket leaves the kernels' rule */
  case 4: return b * (float)(rng_u32(st) >> 8) * 0x1p-24f;
  default: break;
  }
  const double F = rng_u32(st) % (uint32_t)s, d = (double)(int)(rng_u32(st) % 9) - 4.0;
  const double target = fabs(0x1p24 * F + a + d * ((rng_u32(st) & 1) ? 1.0 : 0.5)) / (s * 0x1p24);
  float v = (float)(target * b);
  for (int k = (int)(rng_u32(st) % 5) - 2; k; k += k < 0 ? 1 : -1) v = nextafterf(v, k < 0 ? 0.0f : INFINITY);
  return v;
}
static float edge_value(uint64_t *st, float b, int s, uint32_t a) {
  const float v = edge_aim(st, b, s, a);
  return v > b && v < INFINITY ? b : v; /* b stays the bucket's scale */
}
/* grow: the buckets' max |x| times this, given to the reference as shared scales (below 1, the
 * codes of |x| above the scale clamp at s); 0: the reference's own scales. */
static size_t fast_rule_mismatches(const float *x, size_t n, int bits, uint32_t bucket, uint64_t seed, float grow) {
  ncclzQuantParams p = qsgd_params(bits, bucket, seed, 3);
  int32_t *ref = malloc(n * sizeof *ref);
  const size_t nb = ncclzQsgdNumBuckets(&p, n);
  float *scales = malloc(nb * sizeof *scales);
  ncclzQsgdScales(&p, x, n, scales);
  if (grow > 0)
    for (size_t k = 0; k < nb; k++) scales[k] = isfinite(scales[k] * grow) ? scales[k] * grow : 0.0f;
  ncclzQuantizeQsgd(&p, x, n, grow > 0 ? scales : NULL, ref); /* NaN/Inf refused, every code written */
  const int s = levels(bits);
  size_t bad = 0;
  for (size_t i = 0; i < n; i++) {
    const float b = scales[i / bucket];
    if (!(b > 0.0f && b < INFINITY)) continue; /* the kernels' other path: the reference itself */
    uint32_t w[4];
    ncclz_philox_qsgd_words(seed, i >> 2, 3, w);
    bad += ncclz_qsgd_code_fast(x[i], b, 1.0 / b, s * 0x1p24, s, w[i & 3] >> 8) != ref[i];
  }
  free(ref);
  free(scales);
  return bad;
}
static void test_fast_rule(const Grad *g) {
  enum { BUCKET = 64, N = 1 << 20 };
  float *x = malloc(N * sizeof *x);
  uint64_t st = 2024;
  static const int bits[3] = {2, 4, 8};
  for (int r = 0; r < 3; r++) {
    const int s = levels(bits[r]);
    const uint64_t seed = 99 + r;
    for (size_t k = 0; k < N / BUCKET; k++) {
      const float m = rng_u32(&st) % 4 ? 1.0f + (float)(rng_u32(&st) >> 9) * 0x1p-23f : 1.0f; /* a quarter: 2^e */
      const float b = ldexpf(m, (int)(rng_u32(&st) % 264) - 140);
      for (size_t i = k * BUCKET; i < (k + 1) * BUCKET; i++) {
        uint32_t w[4];
        ncclz_philox_qsgd_words(seed, i >> 2, 3, w);
        const float v = i == k * BUCKET ? b : edge_value(&st, b, s, w[i & 3] >> 8);
        x[i] = (rng_u32(&st) & 1) ? -v : v;
      }
    }
    size_t bad = fast_rule_mismatches(x, N, bits[r], BUCKET, seed, 0.0f);
    CHECK(bad == 0, "qsgd bits %d: the kernels' rule differs from the reference at %zu of %d edge elements", bits[r],
          bad, N);
    for (int k = 0; k < 2; k++) {
      const float grow = k ? 1.5f : 0.375f;
      bad = fast_rule_mismatches(x, N, bits[r], BUCKET, seed, grow);
      CHECK(bad == 0, "qsgd bits %d, shared scales %g x max: the kernels' rule differs at %zu elements", bits[r],
            (double)grow, bad);
    }
    bad = fast_rule_mismatches(g->x, g->n, bits[r], 512, seed, 0.0f);
    CHECK(bad == 0, "qsgd bits %d: the kernels' rule differs from the reference at %zu gradient elements", bits[r],
          bad);
  }
  free(x);
}

/* Supplied scales are used as given: larger scales shrink the codes; smaller ones clamp at s;
 * dequantization uses them; bad scales are refused. */
static void test_shared_scales(const Grad *g) {
  ncclzQuantParams p = qsgd_params(8, 512, 11, 1);
  size_t nb = ncclzQsgdNumBuckets(&p, g->n);
  float *own = malloc(nb * 4), *big = malloc(nb * 4), *small = malloc(nb * 4), *y = malloc(g->n * 4);
  int32_t *c_own = malloc(g->n * 4), *c_big = malloc(g->n * 4), *c_small = malloc(g->n * 4);
  ncclzQsgdScales(&p, g->x, g->n, own);
  for (size_t k = 0; k < nb; k++) {
    big[k] = 4 * own[k];
    small[k] = own[k] / 4;
  }
  CHECK(ncclzQuantizeQsgd(&p, g->x, g->n, NULL, c_own) == NCCLZ_OK, "%s", ncclzLastError());
  int32_t *c_given = malloc(g->n * 4);
  CHECK(ncclzQuantizeQsgd(&p, g->x, g->n, own, c_given) == NCCLZ_OK, "%s", ncclzLastError());
  CHECK(memcmp(c_own, c_given, g->n * 4) == 0, "own scales given explicitly change the codes");
  CHECK(ncclzQuantizeQsgd(&p, g->x, g->n, big, c_big) == NCCLZ_OK, "%s", ncclzLastError());
  CHECK(ncclzQuantizeQsgd(&p, g->x, g->n, small, c_small) == NCCLZ_OK, "%s", ncclzLastError());
  const int s = levels(8);
  size_t big_bad = 0, small_bad = 0, clamped = 0, deq_bad = 0;
  for (size_t i = 0; i < g->n; i++) {
    big_bad += abs(c_big[i]) > (s + 3) / 4 + 1;
    small_bad += abs(c_small[i]) > s;
    clamped += abs(c_small[i]) == s;
  }
  ncclzDequantizeQsgd(&p, c_big, g->n, big, y);
  for (size_t i = 0; i < g->n; i++) deq_bad += y[i] != (float)((double)c_big[i] * big[i / 512] / s);
  CHECK(big_bad == 0, "4x scale: %zu codes above s/4", big_bad);
  CHECK(small_bad == 0 && clamped > g->n / 4, "scale/4: %zu codes beyond s, %zu clamped", small_bad, clamped);
  CHECK(deq_bad == 0, "dequantization ignores the supplied scales (%zu)", deq_bad);
  big[3] = -1.0f;
  CHECK(ncclzQuantizeQsgd(&p, g->x, g->n, big, c_big) == NCCLZ_ERR_ARG && strstr(ncclzLastError(), "bucket 3"),
        "negative scale: %s", ncclzLastError());
  big[3] = NAN;
  CHECK(ncclzQuantizeQsgd(&p, g->x, g->n, big, c_big) == NCCLZ_ERR_ARG, "NaN scale accepted");
  /* A zero scale gives code 0 even for non-zero x. */
  memset(small, 0, nb * 4);
  CHECK(ncclzQuantizeQsgd(&p, g->x, g->n, small, c_small) == NCCLZ_OK, "%s", ncclzLastError());
  size_t nonzero = 0;
  for (size_t i = 0; i < g->n; i++) nonzero += c_small[i] != 0;
  CHECK(nonzero == 0, "zero scales: %zu non-zero codes", nonzero);
  free(own), free(big), free(small), free(y), free(c_own), free(c_big), free(c_small), free(c_given);
}

/* Same (seed, rank) -> same codes; another rank or seed -> other draws. NaN/Inf refused. */
static void test_determinism(const Grad *g) {
  ncclzQuantParams p = qsgd_params(4, 256, 5, 0), q = p;
  int32_t *a = malloc(g->n * 4), *b = malloc(g->n * 4);
  ncclzQuantizeQsgd(&p, g->x, g->n, NULL, a);
  ncclzQuantizeQsgd(&p, g->x, g->n, NULL, b);
  CHECK(memcmp(a, b, g->n * 4) == 0, "same seed and rank gave other codes");
  q.rank = 1;
  ncclzQuantizeQsgd(&q, g->x, g->n, NULL, b);
  CHECK(memcmp(a, b, g->n * 4) != 0, "rank does not change the draws");
  q = p;
  q.seed = 6;
  ncclzQuantizeQsgd(&q, g->x, g->n, NULL, b);
  CHECK(memcmp(a, b, g->n * 4) != 0, "seed does not change the draws");
  float saved = g->x[10];
  g->x[10] = NAN;
  ncclzStatus st = ncclzQuantizeQsgd(&p, g->x, g->n, NULL, a);
  CHECK(st == NCCLZ_ERR_NONFINITE && strstr(ncclzLastError(), "index 10"), "NaN: %d %s", (int)st, ncclzLastError());
  g->x[10] = saved;
  free(a);
  free(b);
}

/* Unbiasedness over K seeds. Per element, with t = |x|/scale*s, l = floor(t), the code magnitude
 * is l + B where B is Bernoulli(p) with p = P(u < t - l) (u on the 2^-24 grid, so p is
 * ceil((t-l)*2^24)/2^24, within 2^-24 of t - l). Hence:
 *  - per element: the mean of K dequantized draws has std <= (scale/s) / (2 sqrt(K)); by
 *    Hoeffding, P(|mean - E| > c * that) <= 2 exp(-c^2 / 2), so c = sqrt(2 ln(2N/delta)) keeps
 *    the chance of any false alarm among N elements below delta;
 *  - in aggregate: z = sum(mean - x) / sqrt(sum var/K), with var = (scale/s)^2 p (1-p), is
 *    about N(0,1) (CLT over N independent elements), |z| <= 5;
 *  - chi-square: sum (mean_code - E_code)^2 K / (p (1-p)) over the elements with 0 < p < 1 has
 *    mean N' and std sqrt(2 N') (approximately), and must lie within 6 std. It catches a wrong
 *    variance as well as a bias. */
typedef struct {
  double worst_c, z, chi, dof;
  size_t bad;
} Unbiased;

static Unbiased check_unbiased(const Grad *g, int bits, uint32_t bucket, int K) {
  const size_t n = g->n;
  const int s = levels(bits);
  ncclzQuantParams p = qsgd_params(bits, bucket, 0, 3);
  size_t nb = ncclzQsgdNumBuckets(&p, n);
  float *scales = malloc(nb * 4), *y = malloc(n * 4);
  int32_t *codes = malloc(n * 4);
  double *sum_y = calloc(n, sizeof *sum_y), *sum_c = calloc(n, sizeof *sum_c);
  ncclzQsgdScales(&p, g->x, n, scales);
  for (int k = 0; k < K; k++) {
    p.seed = 1000 + (uint64_t)k;
    ncclzQuantizeQsgd(&p, g->x, n, scales, codes);
    ncclzDequantizeQsgd(&p, codes, n, scales, y);
    for (size_t i = 0; i < n; i++) {
      sum_y[i] += y[i];
      sum_c[i] += abs(codes[i]);
    }
  }
  const double delta = 1e-6, c = sqrt(2 * log(2 * (double)n / delta));
  Unbiased r = {0, 0, 0, 0, 0};
  double dev_sum = 0, var_sum = 0;
  for (size_t i = 0; i < n; i++) {
    double scale = scales[i / bucket], unit = scale / s;
    if (scale == 0) continue;
    double t = fabs((double)g->x[i]) / scale * s, l = floor(t);
    double prob = ceil((t - l) * 16777216.0) / 16777216.0;
    double mean = sum_y[i] / K, std_bound = unit / (2 * sqrt((double)K));
    /* slack: float rounding of each dequantized value and the 2^-24 grid of u */
    double slack = 2 * ldexp(scale, -24) + unit * ldexp(1.0, -24);
    double dev = fabs(mean - g->x[i]);
    if (dev > c * std_bound + slack) r.bad++;
    if (dev / (std_bound + slack) > r.worst_c) r.worst_c = dev / (std_bound + slack);
    double var = unit * unit * prob * (1 - prob);
    dev_sum += mean - g->x[i];
    var_sum += var / K;
    if (prob > 0 && prob < 1) {
      double dc = sum_c[i] / K - (l + prob);
      r.chi += dc * dc * K / (prob * (1 - prob));
      r.dof += 1;
    }
  }
  r.z = var_sum > 0 ? dev_sum / sqrt(var_sum) : 0;
  CHECK(r.bad == 0, "bits %d: %zu elements with |mean - x| > %.2f x scale/(2s sqrt(K))", bits, r.bad, c);
  CHECK(fabs(r.z) <= 5, "bits %d: aggregate bias z = %.2f", bits, r.z);
  CHECK(fabs(r.chi - r.dof) <= 6 * sqrt(2 * r.dof), "bits %d: chi-square %.0f for %.0f dof", bits, r.chi, r.dof);
  printf("  bits %d, bucket %u, K %d: max |mean-x| = %.2f std bounds (limit %.2f), z = %+.2f, chi2/dof = %.4f "
         "(%.0f dof)\n",
         bits, bucket, K, r.worst_c, c, r.z, r.dof ? r.chi / r.dof : 0, r.dof);
  free(scales), free(y), free(codes), free(sum_y), free(sum_c);
  return r;
}

/* Bad parameters are an error and leave the output untouched (it was garbage with status OK). */
static void test_dequantize_refuses(void) {
  int32_t codes[8] = {1, -1, 2, 0, 3, -3, 1, 1};
  float scales[2] = {1.0f, 2.0f}, y[8];
  static const int bad_bits[] = {0, 1, 3, 5, 9, 32};
  for (size_t k = 0; k < sizeof bad_bits / sizeof bad_bits[0]; k++) {
    ncclzQuantParams p = qsgd_params(bad_bits[k], 4, 0, 0);
    memset(y, 0x5a, sizeof y);
    CHECK(ncclzDequantizeQsgd(&p, codes, 8, scales, y) == NCCLZ_ERR_ARG && strstr(ncclzLastError(), "bits"),
          "bits=%d: %s", bad_bits[k], ncclzLastError());
    CHECK(((uint8_t *)y)[0] == 0x5a && ((uint8_t *)y)[31] == 0x5a, "bits=%d wrote output", bad_bits[k]);
  }
  ncclzQuantParams p = qsgd_params(4, 0, 0, 0);
  CHECK(ncclzDequantizeQsgd(&p, codes, 8, scales, y) == NCCLZ_ERR_ARG, "bucket 0 accepted");
  p = qsgd_params(4, 4, 0, 0);
  static const float bad_scale[] = {NAN, INFINITY, -1.0f};
  for (size_t k = 0; k < 3; k++) {
    scales[1] = bad_scale[k];
    memset(y, 0x5a, sizeof y);
    CHECK(ncclzDequantizeQsgd(&p, codes, 8, scales, y) == NCCLZ_ERR_ARG && ((uint8_t *)y)[0] == 0x5a,
          "scale %g: %s", (double)bad_scale[k], ncclzLastError());
  }
  scales[1] = 2.0f;
  CHECK(ncclzDequantizeQsgd(&p, codes, 8, scales, y) == NCCLZ_OK && y[4] == (float)(3.0 * 2.0 / 7.0),
        "valid parameters: %s", ncclzLastError());
  ncclzSymbols sy = {NCCLZ_DTYPE_F32, qsgd_params(3, 4, 0, 0), 8, codes, scales, 2};
  CHECK(ncclzArrayReconstruct(&sy, y) == NCCLZ_ERR_ARG, "ncclzArrayReconstruct with bits=3 returns OK");
  sy.qp.qsgd_bits = 4;
  sy.n_scales = 1; /* one scale short */
  CHECK(ncclzArrayReconstruct(&sy, y) == NCCLZ_ERR_ARG, "ncclzArrayReconstruct with a missing scale returns OK");
}

/* ncclz_divu32 (the dequantizer's bucket of a group) equals n / d: small, odd, power-of-two and
 * top-bit divisors; dividends 0, around multiples of d, at the top of the range and random. */
static void test_divu32(void) {
  uint32_t ds[40] = {1, 2, 3, 5, 7, 24, 32, 96, 127, 128, 129, 1000, 65535, 65536, 65537, 0x7FFFFFFFu, 0x80000000u,
                     0x80000001u, 0xFFFFFFFEu, 0xFFFFFFFFu};
  uint64_t st = 7;
  for (int k = 20; k < 40; k++) ds[k] = rng_u32(&st) >> (rng_u32(&st) % 32) | 1u;
  for (int k = 0; k < 40; k++) {
    const uint32_t d = ds[k];
    const NcclzDivU32 f = ncclz_divu32_make(d);
    size_t bad = 0;
    const uint32_t fixed[6] = {0, 1, d - 1, d, 0xFFFFFFFEu, 0xFFFFFFFFu};
    for (int j = 0; j < 6; j++) bad += ncclz_divu32(fixed[j], f) != fixed[j] / d;
    for (int j = 0; j < 20000; j++) {
      const uint64_t m = (uint64_t)d * (rng_u32(&st) % ((uint64_t)0xFFFFFFFFu / d + 1)); /* a multiple of d below 2^32 */
      for (int e = -1; e <= 1; e++) {
        const uint32_t n = (uint32_t)(m + (uint64_t)(int64_t)e);
        bad += ncclz_divu32(n, f) != n / d;
      }
      const uint32_t r = rng_u32(&st);
      bad += ncclz_divu32(r, f) != r / d;
    }
    CHECK(bad == 0, "ncclz_divu32 by %u differs from n / d at %zu dividends", d, bad);
  }
}

int main(void) {
  double t0 = ncclzNowSeconds();
  test_divu32();
  test_philox_kat();
  test_philox_uniform();
  test_dequantize_refuses();
  size_t len = 0;
  Grad g;
  g.x = tu_read_file("resnet18_rank0_64k.f32", &len);
  g.n = len / 4;
  CHECK(g.x != NULL && g.n == 65536, "cannot load the resnet18 slice");
  if (g.x) {
    static const int bits[3] = {2, 4, 8};
    for (int b = 0; b < 3; b++) {
      check_code_range(&g, bits[b], 512);
      check_code_range(&g, bits[b], 1000); /* last bucket partial */
    }
    test_shared_scales(&g);
    test_fast_rule(&g);
    test_determinism(&g);
    printf("unbiasedness on resnet18_rank0_64k (layer2.0.conv1.weight gradient):\n");
    for (int b = 0; b < 3; b++) check_unbiased(&g, bits[b], 512, 256);
    free(g.x);
  }
  printf("time %.1f s\n", ncclzNowSeconds() - t0);
  return tu_finish("test_qsgd");
}
