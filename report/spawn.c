/* Child programs (gnuplot, `ncclz perf`) run from an argv array with fork and execvp: no shell
 * ever reads a command line built from scenario fields, so a quote in a field is only a quote. */
#include "report_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

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

/* The child's side: only async-signal-safe calls between fork and exec. Reports errno on the
 * close-on-exec pipe `fail` when it cannot start. */
static void child(const report_child *ch, char **env, int fail) {
  int e = 0;
  if (ch->cwd && chdir(ch->cwd)) e = errno;
  const char *paths[2] = {ch->out_path, ch->err_path};
  for (int i = 0; i < 2 && !e; i++) {
    if (!paths[i]) continue;
    int fd = open(paths[i], O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0 || dup2(fd, i + 1) < 0) e = errno;
  }
  if (!e) {
    environ = env;
    execvp(ch->argv[0], (char *const *)ch->argv);
    e = errno;
  }
  ssize_t w = write(fail, &e, sizeof e);
  (void)w;
  _exit(127);
}

int report_spawn(const report_child *ch, int *exit_code) {
  int pipefd[2];
  char **env = child_env(ch->env_add);
  if (!env) return errno = ENOMEM, -1;
  if (pipe(pipefd)) return free(env), -1;
  fcntl(pipefd[0], F_SETFD, FD_CLOEXEC);
  fcntl(pipefd[1], F_SETFD, FD_CLOEXEC); /* closed by a successful exec: EOF tells the parent */
  fflush(NULL); /* buffered output must not be written twice */
  pid_t pid = fork();
  if (pid == 0) child(ch, env, pipefd[1]);
  int saved = errno;
  free(env);
  close(pipefd[1]);
  if (pid < 0) return close(pipefd[0]), errno = saved, -1;
  int e = 0;
  ssize_t got;
  while ((got = read(pipefd[0], &e, sizeof e)) < 0 && errno == EINTR) {
  }
  close(pipefd[0]);
  int st;
  while (waitpid(pid, &st, 0) < 0)
    if (errno != EINTR) return -1;
  if (got == (ssize_t)sizeof e) return errno = e, -1; /* exec (or a redirection) failed */
  *exit_code = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  return 0;
}
