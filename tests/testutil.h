/* Small helpers shared by the tests: checks that count, real-data loading, scratch files, a seeded
 * PRNG. */
#ifndef NCCLZ_TESTUTIL_H
#define NCCLZ_TESTUTIL_H
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

extern int tu_passed, tu_failed;

/* Records one check; prints the location and message when it fails. */
#define CHECK(cond, ...)                                                   \
  do {                                                                     \
    if (cond) {                                                            \
      tu_passed++;                                                         \
    } else {                                                               \
      tu_failed++;                                                         \
      fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond);      \
      fprintf(stderr, __VA_ARGS__);                                        \
      fputc('\n', stderr);                                                 \
    }                                                                      \
  } while (0)

/* Prints "N passed, N failed" and returns the process exit code. */
int tu_finish(const char *suite);
/* Reads a whole file from tests/data (or an absolute path); NULL with a message on failure. */
void *tu_read_file(const char *name, size_t *len);
/* Writes text to path (replacing it); a file that cannot be written is a failed check. */
void tu_write_text(const char *path, const char *text);
/* The ncclz binary next to the tests/ directory of the build tree into bin: 1, or 0 with a note on
 * stdout when there is none (the caller skips its CLI checks). */
int tu_ncclz_binary(char *bin, size_t cap);
/* Deterministic xorshift64* generator. */
uint64_t tu_rand(uint64_t *state);
double tu_uniform(uint64_t *state);
#endif
