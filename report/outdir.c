/* The report's output directory (docs/reports.md, "The output directory"): a lock per directory,
 * the report written into a private staging directory inside it and renamed into place file by
 * file, index.html last, and a manifest so that the next report removes only ncclz's own files.
 * Nothing is written through a symbolic link: the directory and every entry are opened or
 * renamed without following one, and a link where a report file goes is refused. */
#include "report_internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#define LOCK_NAME ".ncclz-lock"
#define MANIFEST_NAME ".ncclz-manifest"
#define MANIFEST_HEAD "ncclz report files\n"
#define STAGE_PREFIX ".ncclz-tmp-"
#define MAX_FILES 4096

int report_file_name_ok(const char *name) {
  size_t n = strlen(name);
  if (!n || n > 200 || name[0] == '.') return 0;
  for (const char *p = name; *p; p++)
    if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || strchr("._-", *p)))
      return 0;
  return 1;
}

static int ends_with(const char *s, const char *tail) {
  size_t n = strlen(s), t = strlen(tail);
  return n > t && !strcmp(s + n - t, tail);
}

/* Names a report writes: the only ones an old manifest may have removed. */
static int report_output_name(const char *name) {
  return report_file_name_ok(name) && (!strcmp(name, "index.html") || !strcmp(name, "results.json") ||
                                       ends_with(name, ".csv") || ends_with(name, ".svg") ||
                                       (!strncmp(name, "measure-", 8) && ends_with(name, ".json")));
}

/* mkdir -p of dir's parents and dir; *created: dir did not exist before. */
static int make_dirs(const char *dir, int *created) {
  char path[1024];
  struct stat st;
  *created = lstat(dir, &st) != 0 && errno == ENOENT;
  snprintf(path, sizeof path, "%s", dir);
  for (char *p = path + 1; *p; p++) {
    if (*p != '/') continue;
    *p = 0;
    if (mkdir(path, 0777) && errno != EEXIST) return -1;
    *p = '/';
  }
  return mkdir(path, 0777) && errno != EEXIST ? -1 : 0;
}

/* Removes the regular files in directory `name` under dirfd, then the directory. */
static void remove_tree(int dirfd, const char *name) {
  int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
  if (!d) {
    if (fd >= 0) close(fd);
    return;
  }
  struct dirent *e;
  while ((e = readdir(d)))
    if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) unlinkat(fd, e->d_name, 0);
  closedir(d);
  unlinkat(dirfd, name, AT_REMOVEDIR);
}

/* Staging directories a crashed run left behind: safe to remove while we hold the lock. */
static void remove_stale_stages(int dirfd) {
  int fd = dup(dirfd);
  DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
  if (!d) {
    if (fd >= 0) close(fd);
    return;
  }
  char names[16][64];
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d)) && n < 16)
    if (!strncmp(e->d_name, STAGE_PREFIX, strlen(STAGE_PREFIX)) && strlen(e->d_name) < 64)
      memcpy(names[n++], e->d_name, strlen(e->d_name) + 1);
  closedir(d);
  for (int i = 0; i < n; i++) remove_tree(dirfd, names[i]);
}

static ncclzStatus lock_dir(ncclzReport *r) {
  r->lockfd = openat(r->dirfd, LOCK_NAME, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (r->lockfd < 0)
    return ncclzSetError(errno == ELOOP ? NCCLZ_ERR_ARG : NCCLZ_ERR_IO, "report: cannot open the lock '%s/%s': %s",
                         r->out, LOCK_NAME, errno == ELOOP ? "it is a symbolic link" : strerror(errno));
  if (flock(r->lockfd, LOCK_EX | LOCK_NB) == 0) return r->locked = 1, NCCLZ_OK;
  if (errno == EWOULDBLOCK)
    return ncclzSetError(NCCLZ_ERR_ARG, "report: another ncclz run is writing '%s' (it holds %s/%s); wait for it to "
                                        "finish or give another --out", r->out, r->out, LOCK_NAME);
  return ncclzSetError(NCCLZ_ERR_IO, "report: cannot lock '%s/%s': %s", r->out, LOCK_NAME, strerror(errno));
}

/* ----------------------------------------------------- the report's files */

typedef struct {
  char (*name)[208];
  int n;
} name_list;

static int has_name(const name_list *l, const char *name) {
  for (int i = 0; i < l->n; i++)
    if (!strcmp(l->name[i], name)) return 1;
  return 0;
}

static void add_name(name_list *l, const char *name) {
  size_t len = strlen(name);
  if (l->n < MAX_FILES && len < sizeof l->name[0] && report_file_name_ok(name) && !has_name(l, name))
    memcpy(l->name[l->n++], name, len + 1);
}

/* The report files in the staging directory: regular files whose names a report writes
 * (dot files are the plots' scratch files). */
static int staged_files(const ncclzReport *r, name_list *l) {
  int fd = dup(r->stagefd);
  DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
  if (!d) return fd >= 0 ? close(fd) : 0, -1;
  struct dirent *e;
  struct stat st;
  while ((e = readdir(d)))
    if (report_file_name_ok(e->d_name) && !fstatat(r->stagefd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) &&
        S_ISREG(st.st_mode))
      add_name(l, e->d_name);
  closedir(d);
  return 0;
}

/* The previous report's manifest (none, or unreadable: no file is removed). */
static void read_manifest(const ncclzReport *r, name_list *l) {
  int fd = openat(r->dirfd, MANIFEST_NAME, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  FILE *f = fd >= 0 ? fdopen(fd, "r") : NULL;
  if (!f) {
    if (fd >= 0) close(fd);
    return;
  }
  char line[256];
  if (fgets(line, sizeof line, f) && !strcmp(line, MANIFEST_HEAD))
    while (fgets(line, sizeof line, f)) {
      line[strcspn(line, "\n")] = 0;
      add_name(l, line);
    }
  fclose(f);
}

/* Writes the manifest (the names of a and b) into the staging directory and renames it into place. */
static int write_manifest(const ncclzReport *r, const name_list *a, const name_list *b) {
  int fd = openat(r->stagefd, MANIFEST_NAME, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
  FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
  if (!f) return fd >= 0 ? close(fd) : 0, -1;
  fputs(MANIFEST_HEAD, f);
  for (int i = 0; i < a->n; i++) fprintf(f, "%s\n", a->name[i]);
  for (int i = 0; b && i < b->n; i++)
    if (!has_name(a, b->name[i])) fprintf(f, "%s\n", b->name[i]);
  if (fclose(f)) return -1;
  return renameat(r->stagefd, MANIFEST_NAME, r->dirfd, MANIFEST_NAME);
}

/* Refuses before anything moves when a report file's place holds a link, a directory or a device. */
static ncclzStatus check_targets(const ncclzReport *r, const name_list *l) {
  struct stat st;
  for (int i = 0; i < l->n; i++)
    if (!fstatat(r->dirfd, l->name[i], &st, AT_SYMLINK_NOFOLLOW) && !S_ISREG(st.st_mode))
      return ncclzSetError(NCCLZ_ERR_ARG, "report: '%s/%s' is %s, not a regular file: refusing to replace it (remove it "
                                          "or give another --out)", r->out, l->name[i],
                           S_ISLNK(st.st_mode) ? "a symbolic link" : S_ISDIR(st.st_mode) ? "a directory" : "special");
  return NCCLZ_OK;
}

/* ------------------------------------------------- open, publish, close */

ncclzStatus report_dir_open(ncclzReport *r, const char *dir) {
  r->dirfd = r->stagefd = r->lockfd = -1;
  if (!dir || !*dir) return ncclzSetError(NCCLZ_ERR_ARG, "report: the output directory is an empty name");
  if (strlen(dir) > sizeof r->out - 64) return ncclzSetError(NCCLZ_ERR_ARG, "report: the output directory name is too long");
  snprintf(r->out, sizeof r->out, "%s", dir);
  for (size_t n = strlen(r->out); n > 1 && r->out[n - 1] == '/'; n--) r->out[n - 1] = 0; /* "link/" follows link */
  dir = r->out;
  if (make_dirs(dir, &r->created))
    return ncclzSetError(NCCLZ_ERR_IO, "report: cannot create directory '%s': %s", dir, strerror(errno));
  r->dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (r->dirfd < 0) {
    int e = errno;
    struct stat st;
    if (!lstat(dir, &st) && S_ISLNK(st.st_mode))
      return ncclzSetError(NCCLZ_ERR_ARG, "report: '%s' is a symbolic link; give the directory it points to", dir);
    return ncclzSetError(e == ENOTDIR ? NCCLZ_ERR_ARG : NCCLZ_ERR_IO, "report: cannot open directory '%s': %s", dir,
                         strerror(e));
  }
  ncclzStatus st = lock_dir(r);
  if (st != NCCLZ_OK) return st;
  char fixed[2][208] = {"index.html", "results.json"}; /* refused now rather than after the run */
  name_list always = {fixed, 2};
  if ((st = check_targets(r, &always)) != NCCLZ_OK) return st;
  remove_stale_stages(r->dirfd);
  snprintf(r->dir, sizeof r->dir, "%s/" STAGE_PREFIX "XXXXXX", dir);
  if (!mkdtemp(r->dir))
    return ncclzSetError(NCCLZ_ERR_IO, "report: cannot create a directory in '%s': %s", dir, strerror(errno));
  r->stagefd = open(r->dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (r->stagefd < 0) return ncclzSetError(NCCLZ_ERR_IO, "report: cannot open '%s': %s", r->dir, strerror(errno));
  return NCCLZ_OK;
}

int report_file_open(const ncclzReport *r, const char *name) {
  if (!report_file_name_ok(name)) return ncclzSetError(NCCLZ_ERR_ARG, "report: bad file name '%s'", name), -1;
  int fd = openat(r->stagefd, name, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0) ncclzSetError(NCCLZ_ERR_IO, "report: cannot write '%s/%s': %s", r->out, name, strerror(errno));
  return fd;
}

void report_shown_path(const ncclzReport *r, const char *path, char *buf, size_t cap) {
  size_t n = strlen(r->dir);
  if (!strncmp(path, r->dir, n) && path[n] == '/') snprintf(buf, cap, "%s%s", r->out, path + n);
  else snprintf(buf, cap, "%s", path);
}

static ncclzStatus move_files(const ncclzReport *r, const name_list *l) {
  for (int pass = 0; pass < 2; pass++) /* index.html last: the page never links a file not yet there */
    for (int i = 0; i < l->n; i++)
      if ((pass == 1) == !strcmp(l->name[i], "index.html") &&
          renameat(r->stagefd, l->name[i], r->dirfd, l->name[i]))
        return ncclzSetError(NCCLZ_ERR_IO, "report: cannot move '%s' into '%s': %s", l->name[i], r->out,
                             strerror(errno));
  return NCCLZ_OK;
}

/* Removes the previous report's files that this one did not write (regular files only). */
static void remove_stale(const ncclzReport *r, const name_list *old, const name_list *now) {
  struct stat st;
  for (int i = 0; i < old->n; i++)
    if (!has_name(now, old->name[i]) && report_output_name(old->name[i]) &&
        !fstatat(r->dirfd, old->name[i], &st, AT_SYMLINK_NOFOLLOW) && S_ISREG(st.st_mode))
      unlinkat(r->dirfd, old->name[i], 0);
}

ncclzStatus report_dir_publish(ncclzReport *r) {
  name_list now = {calloc(MAX_FILES, 208), 0}, old = {calloc(MAX_FILES, 208), 0};
  ncclzStatus st = !now.name || !old.name ? ncclzSetError(NCCLZ_ERR_NOMEM, "report: out of memory")
                   : staged_files(r, &now) ? ncclzSetError(NCCLZ_ERR_IO, "report: cannot list '%s'", r->dir)
                                           : check_targets(r, &now);
  if (st == NCCLZ_OK) {
    read_manifest(r, &old);
    /* old and new first: a run that stops half way still lists every file of both */
    if (write_manifest(r, &now, &old))
      st = ncclzSetError(NCCLZ_ERR_IO, "report: cannot write '%s/%s': %s", r->out, MANIFEST_NAME, strerror(errno));
  }
  if (st == NCCLZ_OK) st = move_files(r, &now);
  if (st == NCCLZ_OK) {
    remove_stale(r, &old, &now);
    if (write_manifest(r, &now, NULL))
      st = ncclzSetError(NCCLZ_ERR_IO, "report: cannot write '%s/%s': %s", r->out, MANIFEST_NAME, strerror(errno));
  }
  free(now.name);
  free(old.name);
  return st;
}

void report_dir_close(ncclzReport *r, int failed) {
  if (r->stagefd >= 0) close(r->stagefd);
  if (r->dirfd >= 0 && r->dir[0]) remove_tree(r->dirfd, strrchr(r->dir, '/') + 1);
  if (failed && r->created && r->locked) { /* leave no trace of a directory this run created */
    unlinkat(r->dirfd, LOCK_NAME, 0);
    rmdir(r->out);
  }
  if (r->lockfd >= 0) close(r->lockfd);
  if (r->dirfd >= 0) close(r->dirfd);
  r->stagefd = r->lockfd = r->dirfd = -1;
  r->locked = 0;
}
