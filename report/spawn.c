/* Child programs (gnuplot, `ncclz perf`) run with posix_spawnp from an argv array: no shell ever
 * reads a command line built from scenario fields, so a quote in a field is only a quote. */
#include "report_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

extern char **environ;

/* Whether env entry e ("KEY=VALUE") sets one of the keys in add. */
static int overridden(const char *e, const char *const *add) {
  const char *eq = strchr(e, '=');
  size_t klen = eq ? (size_t)(eq - e) : strlen(e);
  for (; add && *add; add++)
    if (!strncmp(*add, e, klen) && (*add)[klen] == '=') return 1;
  return 0;
}

/* This process's environment with the entries of add set over it (malloc'd array of borrowed
 * strings; NULL when out of memory). */
static char **child_env(const char *const *add) {
  size_t n = 0, k = 0;
  for (char **e = environ; e && *e; e++) n++;
  for (const char *const *a = add; a && *a; a++) n++;
  char **env = malloc((n + 1) * sizeof *env);
  if (!env) return NULL;
  for (char **e = environ; e && *e; e++)
    if (!overridden(*e, add)) env[k++] = *e;
  for (const char *const *a = add; a && *a; a++) env[k++] = (char *)*a;
  env[k] = NULL;
  return env;
}

int report_spawn(const report_child *ch, int *exit_code) {
  posix_spawn_file_actions_t fa;
  char **env = child_env(ch->env_add);
  if (!env) return errno = ENOMEM, -1;
  int rc = posix_spawn_file_actions_init(&fa);
  const char *paths[2] = {ch->out_path, ch->err_path};
  for (int i = 0; i < 2 && !rc; i++)
    if (paths[i]) /* no link followed, but /dev/null may be one (some containers) */
      rc = posix_spawn_file_actions_addopen(&fa, i + 1, paths[i],
                                            O_WRONLY | O_CREAT | O_TRUNC | (strcmp(paths[i], "/dev/null") ? O_NOFOLLOW : 0), 0644);
  fflush(NULL); /* the child's output follows ours */
  pid_t pid;
  if (!rc) rc = posix_spawnp(&pid, ch->argv[0], &fa, NULL, (char *const *)ch->argv, env);
  posix_spawn_file_actions_destroy(&fa);
  free(env);
  if (rc) return errno = rc, -1; /* no such program, or a redirection failed */
  int st;
  while (waitpid(pid, &st, 0) < 0)
    if (errno != EINTR) return -1;
  *exit_code = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  return 0;
}
