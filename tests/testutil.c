#include "testutil.h"

#include "ncclz/codecs.h"

#include <libgen.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int tu_passed, tu_failed;

int tu_finish(const char *suite) {
  printf("%s: %d passed, %d failed\n", suite, tu_passed, tu_failed);
  return tu_failed ? 1 : 0;
}

void *tu_read_file(const char *name, size_t *len) {
  char path[1024];
  if (name[0] == '/')
    snprintf(path, sizeof path, "%s", name);
  else
    snprintf(path, sizeof path, "%s/%s", NCCLZ_TEST_DATA, name);
  char *buf = ncclzReadFile(NULL, path, len);
  if (!buf) fprintf(stderr, "%s\n", ncclzLastError());
  return buf;
}

void tu_write_text(const char *path, const char *text) {
  FILE *f = fopen(path, "wb");
  CHECK(f != NULL, "cannot write %s", path);
  if (!f) return;
  CHECK(fputs(text, f) >= 0 && fclose(f) == 0, "cannot write %s", path);
}

int tu_ncclz_binary(char *bin, size_t cap) {
  char exe[4096];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0) return 0;
  exe[n] = 0;
  snprintf(bin, cap, "%s/../ncclz", dirname(exe));
  if (access(bin, X_OK) == 0) return 1;
  printf("note: %s not found, CLI checks skipped\n", bin);
  return 0;
}

uint64_t tu_rand(uint64_t *s) {
  uint64_t x = *s ? *s : 0x9E3779B97F4A7C15ull;
  x ^= x >> 12;
  x ^= x << 25;
  x ^= x >> 27;
  *s = x;
  return x * 0x2545F4914F6CDD1Dull;
}

double tu_uniform(uint64_t *s) { return (double)(tu_rand(s) >> 11) * (1.0 / 9007199254740992.0); }
