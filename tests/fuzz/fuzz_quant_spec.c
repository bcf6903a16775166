/* Fuzz target: the --quant SPEC parser and the strict number parsers it is built on.
 *
 * Contract checked: a refused spec is NCCLZ_ERR_ARG with a one-line message and leaves the output
 * untouched; an accepted one has every field in its documented range, and its canonical text
 * parses back to the same spec and the same text. ncclzParseU64 accepts only plain decimal
 * digits and gives back exactly their value; ncclzParseDouble only finite numbers in range with
 * no leading space and no hex; ncclzParseBytes only whole sizes from 1 to 1e15. */
#include "ncclz/codecs.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void fail(const char *what, const char *text) {
  fprintf(stderr, "fuzz_quant_spec: %s: '%s' (last error: %s)\n", what, text, ncclzLastError());
  abort();
}

static void check_spec_fields(const ncclzQuantSpec *q, const char *text) {
  switch (q->kind) {
  case NCCLZ_QUANT_NONE: break;
  case NCCLZ_QUANT_EB:
    if (!(q->eb > 0) || !isfinite(q->eb) || (q->eb_is_rel && q->eb > 1)) fail("eb out of range", text);
    if (q->lorenzo < 0 || q->lorenzo > 3) fail("lorenzo out of range", text);
    if (q->has_fill && !isfinite(q->fill_value)) fail("fill not finite", text);
    break;
  case NCCLZ_QUANT_QSGD:
    if ((q->qsgd_bits != 2 && q->qsgd_bits != 4 && q->qsgd_bits != 8) || q->qsgd_bucket == 0) fail("qsgd params", text);
    break;
  default: fail("unknown kind", text);
  }
}

static void check_spec(const char *text) {
  ncclzQuantSpec q, again, before;
  memset(&q, 0x5a, sizeof q);
  before = q;
  ncclzStatus st = ncclzQuantSpecParse(text, &q);
  if (st != NCCLZ_OK) {
    const char *msg = ncclzLastError();
    if (st != NCCLZ_ERR_ARG || !msg[0] || strchr(msg, '\n')) fail("refusal without ERR_ARG and one line", text);
    if (memcmp(&q, &before, sizeof q)) fail("output touched on failure", text);
    return;
  }
  check_spec_fields(&q, text);
  char canon[256], canon2[256];
  ncclzQuantSpecFormat(&q, canon, sizeof canon);
  if (ncclzQuantSpecParse(canon, &again) != NCCLZ_OK) fail("canonical text refused", canon);
  ncclzQuantSpecFormat(&again, canon2, sizeof canon2);
  if (strcmp(canon, canon2) || again.kind != q.kind || again.eb != q.eb || again.lorenzo != q.lorenzo ||
      again.has_fill != q.has_fill || (q.has_fill && again.fill_value != q.fill_value) ||
      again.qsgd_bits != q.qsgd_bits || again.qsgd_bucket != q.qsgd_bucket || again.seed != q.seed)
    fail("canonical text does not read back as the same spec", text);
}

static void check_numbers(const char *text) {
  uint64_t u;
  if (ncclzParseU64(text, 0, UINT64_MAX, &u) == 0) {
    if (!text[0] || strspn(text, "0123456789") != strlen(text)) fail("ParseU64 took a non-digit", text);
    const char *digits = text + strspn(text, "0");
    char back[32];
    snprintf(back, sizeof back, "%llu", (unsigned long long)u);
    if (strcmp(back, *digits ? digits : "0")) fail("ParseU64 value differs from the digits", text);
  }
  double d;
  if (ncclzParseDouble(text, -DBL_MAX, DBL_MAX, &d) == 0) {
    if (!isfinite(d) || strpbrk(text, "xXpP \t\n") == text || strpbrk(text, "xXpP"))
      fail("ParseDouble took a non-finite, spaced or hex number", text);
  }
  if (ncclzParseBytes(text, &u) == 0 && (u < 1 || u > 1000000000000000ull)) fail("ParseBytes out of range", text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > 4096) return 0;
  char *text = malloc(size + 1);
  memcpy(text, data, size);
  text[size] = '\0'; /* an embedded NUL ends the text, as it would on a command line */
  check_spec(text);
  check_numbers(text);
  free(text);
  return 0;
}
