/* Status strings, the thread-local error message, enum names and checksums. */
#include "ncclz/codecs.h"
#include "hd_util.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

static _Thread_local char last_error[512];

const char *ncclzStatusString(ncclzStatus s) {
  switch (s) {
  case NCCLZ_OK: return "ok";
  case NCCLZ_ERR_ARG: return "invalid argument";
  case NCCLZ_ERR_CORRUPT: return "corrupt input";
  case NCCLZ_ERR_CAPACITY: return "buffer too small";
  case NCCLZ_ERR_NONFINITE: return "NaN or Inf in quantized data";
  case NCCLZ_ERR_RANGE: return "value out of the quantizer's range";
  case NCCLZ_ERR_NOMEM: return "out of memory";
  case NCCLZ_ERR_IO: return "I/O error";
  case NCCLZ_ERR_CUDA: return "CUDA error";
  }
  return "unknown status";
}

const char *ncclzLastError(void) { return last_error; }

char *ncclzReadFile(const char *what, const char *path, size_t *len) {
  const char *pre = what && *what ? what : "", *sep = what && *what ? ": " : "";
  FILE *f = fopen(path, "rb");
  if (!f) return ncclzSetError(NCCLZ_ERR_IO, "%s%scannot open '%s': %s", pre, sep, path, strerror(errno)), NULL;
  struct stat st; /* a directory opens too, and its "size" is not its bytes */
  if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode)) {
    fclose(f);
    return ncclzSetError(NCCLZ_ERR_IO, "%s%scannot read '%s': not a regular file", pre, sep, path), NULL;
  }
  long n = fseek(f, 0, SEEK_END) == 0 ? ftell(f) : -1;
  rewind(f);
  char *buf = n >= 0 ? malloc((size_t)n + 1) : NULL;
  size_t got = buf ? fread(buf, 1, (size_t)n, f) : 0;
  fclose(f);
  if (!buf || got != (size_t)n) {
    free(buf);
    ncclzSetError(n < 0 || buf ? NCCLZ_ERR_IO : NCCLZ_ERR_NOMEM, "%s%scannot read '%s'", pre, sep, path);
    return NULL;
  }
  buf[n] = 0;
  *len = (size_t)n;
  return buf;
}

ncclzStatus ncclzWriteFile(const char *what, const char *path, const void *data, size_t n) {
  const char *pre = what && *what ? what : "", *sep = what && *what ? ": " : "";
  FILE *f = fopen(path, "wb");
  if (!f) return ncclzSetError(NCCLZ_ERR_IO, "%s%scannot write '%s': %s", pre, sep, path, strerror(errno));
  int bad = fwrite(data, 1, n, f) != n;
  int err = bad ? errno : 0;
  if (fclose(f) != 0 && !bad) bad = 1, err = errno;
  if (bad) return ncclzSetError(NCCLZ_ERR_IO, "%s%scannot write '%s': %s", pre, sep, path, err ? strerror(err) : "short write");
  return NCCLZ_OK;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

double ncclzMedian(double *v, size_t n) {
  if (!n) return 0;
  qsort(v, n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

int ncclzParseBytes(const char *s, uint64_t *out) {
  if (!s || !((*s >= '0' && *s <= '9') || *s == '.') || strpbrk(s, "xX")) return -1; /* strtod takes "-", " ", "inf", hex */
  char *end;
  double d = strtod(s, &end);
  switch (*end) {
  case 'K': case 'k': d *= 1024.0, end++; break;
  case 'M': case 'm': d *= 1048576.0, end++; break;
  case 'G': case 'g': d *= 1073741824.0, end++; break;
  default: break;
  }
  if (*end == 'i') end++;
  if (*end == 'B' || *end == 'b') end++;
  if (*end || !(d >= 1.0 && d <= 1e15) || d != (double)(uint64_t)d) return -1; /* whole bytes */
  *out = (uint64_t)d;
  return 0;
}

void ncclzFormatBytes(double bytes, char *buf, size_t cap) {
  static const char *const unit[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  int i = 0;
  while (i < 5 && (bytes >= 1024.0 || bytes <= -1024.0)) bytes /= 1024.0, i++;
  if (bytes == (double)(long long)bytes) snprintf(buf, cap, "%.0f %s", bytes, unit[i]);
  else snprintf(buf, cap, "%.3g %s", bytes, unit[i]);
}

int ncclzParseBandwidth(const char *s, double *gbytes_per_s) {
  static const struct {
    const char *unit;
    double gbytes; /* GB/s per unit */
  } U[] = {{"Tb/s", 125.0}, {"Gb/s", 0.125}, {"Mb/s", 1.25e-4}, {"TB/s", 1000.0}, {"GB/s", 1.0}, {"MB/s", 1e-3}};
  if (!s || !((*s >= '0' && *s <= '9') || *s == '.')) return -1; /* strtod takes "-", " ", "inf", hex */
  char *end;
  double v = strtod(s, &end);
  if (end == s || strpbrk(s, "xX")) return -1;
  while (*end == ' ') end++;
  for (size_t k = 0; k < sizeof U / sizeof U[0]; k++)
    if (!strcmp(end, U[k].unit)) {
      double g = v * U[k].gbytes;
      if (!(g > 0.0 && g <= 1e9)) return -1;
      *gbytes_per_s = g;
      return 0;
    }
  return -1;
}

void ncclzFormatBandwidth(double gbytes_per_s, char *buf, size_t cap) {
  double gbit = 8.0 * gbytes_per_s;
  if (gbit >= 1000.0) snprintf(buf, cap, "%.4g Tb/s (%.4g GB/s)", gbit / 1000.0, gbytes_per_s);
  else snprintf(buf, cap, "%.4g Gb/s (%.4g GB/s)", gbit, gbytes_per_s);
}

double ncclzNowSeconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Formats into a local buffer first, so an argument that is ncclzLastError() itself (composing a
 * cause into a new message) is read whole before the message is overwritten. Control characters
 * (a newline inside an echoed argument) become '?', so the message stays one line. */
ncclzStatus ncclzSetError(ncclzStatus s, const char *fmt, ...) {
  char msg[sizeof last_error];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  for (char *c = msg; *c; c++)
    if ((unsigned char)*c < 0x20 || *c == 0x7f) *c = '?';
  memcpy(last_error, msg, sizeof msg);
  return s;
}

int ncclzParseU64(const char *s, uint64_t lo, uint64_t hi, uint64_t *out) {
  if (!s || *s < '0' || *s > '9') return -1; /* strtoull takes "-", "+" and leading spaces */
  errno = 0;
  char *end;
  unsigned long long v = strtoull(s, &end, 10);
  if (errno || *end || v < lo || v > hi) return -1;
  *out = (uint64_t)v;
  return 0;
}

int ncclzParseDouble(const char *s, double lo, double hi, double *out) {
  if (!s || !*s || strchr(" \t\n\v\f\r", *s) || strpbrk(s, "xXpP")) return -1; /* no hex */
  errno = 0;
  char *end;
  double v = strtod(s, &end);
  if (end == s || *end || errno == ERANGE || !(v >= lo && v <= hi)) return -1; /* NaN fails too */
  *out = v;
  return 0;
}

static const char *const coder_names[NCCLZ_CODER_COUNT] = {"raw", "fixedlen", "huffman"};
static const char *const dtype_names[NCCLZ_DTYPE_COUNT] = {"f32", "bf16", "f16", "i32"};
static const size_t dtype_sizes[NCCLZ_DTYPE_COUNT] = {4, 2, 2, 4};

const char *ncclzCoderName(ncclzCoder c) {
  return (unsigned)c < NCCLZ_CODER_COUNT ? coder_names[c] : "?";
}

int ncclzCoderFromName(const char *name) {
  for (int i = 0; i < NCCLZ_CODER_COUNT; i++)
    if (strcmp(name, coder_names[i]) == 0) return i;
  return -1;
}

size_t ncclzDtypeSize(ncclzDtype t) { return (unsigned)t < NCCLZ_DTYPE_COUNT ? dtype_sizes[t] : 0; }

const char *ncclzDtypeName(ncclzDtype t) {
  return (unsigned)t < NCCLZ_DTYPE_COUNT ? dtype_names[t] : "?";
}

int ncclzDtypeFromName(const char *name) {
  for (int i = 0; i < NCCLZ_DTYPE_COUNT; i++)
    if (strcmp(name, dtype_names[i]) == 0) return i;
  return -1;
}

uint32_t ncclzFnv1a(const uint8_t *p, size_t n) { return ncclz_fnv1a(p, n); }

uint32_t ncclzPayloadCheck(const uint8_t *p, size_t n) {
  uint32_t sum = 0;
  size_t words = n / 4;
  for (size_t i = 0; i < words; i++) {
    sum += ncclz_load_u32(p + 4 * i) * (uint32_t)(2 * i + 1);
  }
  if (n % 4) {
    uint32_t w = 0;
    for (size_t k = 0; k < n % 4; k++) w |= (uint32_t)p[4 * words + k] << (8 * k);
    sum += w * (uint32_t)(2 * words + 1);
  }
  return sum ^ (uint32_t)n;
}
