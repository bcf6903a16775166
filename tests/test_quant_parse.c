/* The strict number parsers every layer reads numbers with (ncclzParseU64, ncclzParseDouble,
 * ncclzParseBytes) and the quant spec items that use them: signs, spaces, hex, NaN, Inf,
 * overflow and trailing characters are refused, in-range whole numbers accepted exactly. */
#include "ncclz/codecs.h"
#include "testutil.h"

#include <float.h>
#include <math.h>
#include <string.h>

static void u64_ok(const char *s, uint64_t lo, uint64_t hi, uint64_t want) {
  uint64_t v = 12345;
  CHECK(ncclzParseU64(s, lo, hi, &v) == 0 && v == want, "ParseU64('%s') = %llu, want %llu", s,
        (unsigned long long)v, (unsigned long long)want);
}

static void u64_bad(const char *s, uint64_t lo, uint64_t hi) {
  uint64_t v = 12345;
  CHECK(ncclzParseU64(s, lo, hi, &v) == -1 && v == 12345, "ParseU64('%s') accepted (%llu)", s, (unsigned long long)v);
}

static void dbl_ok(const char *s, double lo, double hi, double want) {
  double v = 7;
  CHECK(ncclzParseDouble(s, lo, hi, &v) == 0 && v == want, "ParseDouble('%s') = %.17g, want %.17g", s, v, want);
}

static void dbl_bad(const char *s, double lo, double hi) {
  double v = 7;
  CHECK(ncclzParseDouble(s, lo, hi, &v) == -1 && v == 7, "ParseDouble('%s') accepted (%g)", s, v);
}

static void test_u64(void) {
  u64_ok("0", 0, 10, 0);
  u64_ok("10", 0, 10, 10);
  u64_ok("007", 0, 10, 7);
  u64_ok("18446744073709551615", 0, UINT64_MAX, UINT64_MAX);
  u64_bad("18446744073709551616", 0, UINT64_MAX); /* overflow */
  u64_bad("99999999999999999999999", 0, UINT64_MAX);
  u64_bad("-18446744073709551615", 0, UINT64_MAX); /* strtoull would wrap it to 1 */
  u64_bad("-1", 0, UINT64_MAX);
  u64_bad("-0", 0, 10);
  u64_bad("+10", 0, 100);
  u64_bad(" 10", 0, 100);
  u64_bad("\t10", 0, 100);
  u64_bad("10 ", 0, 100);
  u64_bad("10x", 0, 100);
  u64_bad("1e3", 0, 10000);
  u64_bad("1.0", 0, 10);
  u64_bad("0x10", 0, 100);
  u64_bad("", 0, 100);
  u64_bad("11", 0, 10); /* range */
  u64_bad("0", 1, 10);
  u64_bad(NULL, 0, 10);
}

static void test_double(void) {
  dbl_ok("0.5", 0, 1, 0.5);
  dbl_ok("1e-3", 0, 1, 1e-3);
  dbl_ok("-2.5", -10, 10, -2.5);
  dbl_ok("+2.5", -10, 10, 2.5);
  dbl_ok("1.7976931348623157e308", -DBL_MAX, DBL_MAX, DBL_MAX);
  dbl_ok(".5", 0, 1, 0.5);
  dbl_bad("nan", -DBL_MAX, DBL_MAX);
  dbl_bad("NaN", -INFINITY, INFINITY); /* NaN is never in range */
  dbl_bad("inf", -DBL_MAX, DBL_MAX);
  dbl_bad("-Infinity", -DBL_MAX, DBL_MAX);
  dbl_bad("1e309", -DBL_MAX, DBL_MAX); /* overflow */
  dbl_bad("1e-400", -1, 1);            /* underflow */
  dbl_bad("0x1p-3", 0, 1);             /* hex */
  dbl_bad("0X10", 0, 100);
  dbl_bad(" 1", 0, 10);
  dbl_bad("\n1", 0, 10);
  dbl_bad("1 ", 0, 10);
  dbl_bad("1abc", 0, 10);
  dbl_bad("1,5", 0, 10);
  dbl_bad("", 0, 10);
  dbl_bad("-", 0, 10);
  dbl_bad("e5", 0, 10);
  dbl_bad("11", 0, 10); /* range */
  dbl_bad("-0.1", 0, 10);
  dbl_bad(NULL, 0, 10);
}

static void test_bytes(void) {
  static const struct { const char *s; uint64_t v; } ok[] = {
      {"65536", 65536}, {"4M", 4u << 20}, {"4MiB", 4u << 20}, {"1.5K", 1536}, {"64kb", 65536}, {"1G", 1u << 30}};
  for (size_t k = 0; k < sizeof ok / sizeof ok[0]; k++) {
    uint64_t v = 0;
    CHECK(ncclzParseBytes(ok[k].s, &v) == 0 && v == ok[k].v, "ParseBytes('%s') = %llu", ok[k].s, (unsigned long long)v);
  }
  static const char *const bad[] = {"0", "-4M", "+4M", " 4M", "4M ", "0x10", "1.3", "4T", "inf", "nan", "", "1e16", "4MM"};
  for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
    uint64_t v = 99;
    CHECK(ncclzParseBytes(bad[k], &v) == -1 && v == 99, "ParseBytes('%s') accepted", bad[k]);
  }
}

/* The quant spec reads its numbers with the same parsers. */
static void test_spec_numbers(void) {
  static const char *const bad[] = {"eb:abs= 1", "eb:abs=1 ", "eb:abs=nan", "eb:abs=inf", "eb:abs=0x1p-3", "eb:abs=1e-400",
                                    "eb:rel=1e309", "eb:abs=1,fill=nan", "eb:abs=1,fill=1e39", "qsgd:bits=+4,bucket=64",
                                    "qsgd:bits= 4,bucket=64", "qsgd:bits=4,bucket=0x40", "qsgd:bits=4,bucket=-64",
                                    "qsgd:bits=4,bucket=4294967296", "qsgd:bits=4,bucket=64,seed=-1",
                                    "qsgd:bits=4,bucket=64,seed=0x", "qsgd:bits=4,bucket=64,seed=0x10000000000000000",
                                    "qsgd:bits=4,bucket=64,seed=18446744073709551616"};
  for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
    ncclzQuantSpec q;
    CHECK(ncclzQuantSpecParse(bad[k], &q) == NCCLZ_ERR_ARG && !strchr(ncclzLastError(), '\n'), "'%s' accepted", bad[k]);
  }
  ncclzQuantSpec q;
  CHECK(ncclzQuantSpecParse("qsgd:bits=4,bucket=4294967295,seed=0xFFFFFFFFFFFFFFFF", &q) == NCCLZ_OK &&
            q.qsgd_bucket == UINT32_MAX && q.seed == UINT64_MAX,
        "largest bucket and hex seed: %s", ncclzLastError());
  CHECK(ncclzQuantSpecParse("eb:abs=2.5e-3,fill=-999", &q) == NCCLZ_OK && q.eb == 2.5e-3 && q.fill_value == -999.0f,
        "%s", ncclzLastError());
}

int main(void) {
  test_u64();
  test_double();
  test_bytes();
  test_spec_numbers();
  return tu_finish("test_quant_parse");
}
