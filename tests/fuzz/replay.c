/* The main of a fuzz target outside libFuzzer: feeds every regular file of the directories (or
 * files) on the command line to LLVMFuzzerTestOneInput once, in an exact-size copy so that ASan
 * sees any read past it. A target reports a finding by crashing or aborting, as under libFuzzer.
 * Fails when no input was found at all, so that a missing corpus cannot pass unnoticed. */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int run_file(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) return fprintf(stderr, "replay: cannot open %s\n", path), -1;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  rewind(f);
  uint8_t *buf = malloc(n > 0 ? (size_t)n : 1);
  size_t got = buf ? fread(buf, 1, (size_t)n, f) : 0;
  fclose(f);
  if (!buf || n < 0 || got != (size_t)n) {
    free(buf);
    return fprintf(stderr, "replay: cannot read %s\n", path), -1;
  }
  LLVMFuzzerTestOneInput(buf, (size_t)n);
  free(buf);
  return 1;
}

static int run_path(const char *path) {
  struct stat st;
  if (stat(path, &st) != 0) return 0; /* an absent regress/ directory holds nothing yet */
  if (!S_ISDIR(st.st_mode)) return run_file(path);
  DIR *d = opendir(path);
  if (!d) return fprintf(stderr, "replay: cannot list %s\n", path), -1;
  int count = 0;
  for (struct dirent *e; (e = readdir(d));) {
    if (e->d_name[0] == '.') continue;
    char child[4096];
    snprintf(child, sizeof child, "%s/%s", path, e->d_name);
    if (stat(child, &st) != 0 || !S_ISREG(st.st_mode)) continue;
    int r = run_file(child);
    if (r < 0) {
      count = -1;
      break;
    }
    count += r;
  }
  closedir(d);
  return count;
}

int main(int argc, char **argv) {
  int total = 0;
  for (int i = 1; i < argc; i++) {
    int r = run_path(argv[i]);
    if (r < 0) return 1;
    printf("replayed %d inputs from %s\n", r, argv[i]);
    total += r;
  }
  if (total == 0) return fprintf(stderr, "replay: no inputs found\n"), 1;
  return 0;
}
