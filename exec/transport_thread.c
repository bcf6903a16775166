/* In-process transport: one thread per rank, one mailbox per rank.
 *
 * send copies the bytes into a message queued at the receiver (it never waits, like a
 * buffered NCCL send); recv waits for the first message with the same (source, tag, lane) and
 * fails if its length differs from the posted one, which is what NCCL would do to a receive of
 * the wrong size (hang or truncate). That makes the CPU tests prove the size protocol. */
#include "ncclz/exec.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct msg {
  struct msg *next;
  int src, lane;
  uint64_t tag;
  size_t len;
  unsigned char data[];
} msg;

typedef struct {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  msg *head, *tail;
} mailbox;

struct ncclzThreadGroup {
  int n;
  mailbox *box;
  ncclzTransport *tr;
  /* allreduce: a generation-counted barrier over one shared slot per rank */
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int arrived, generation, consumed;
  double **slots;
  size_t slot_n;
  volatile int aborted;
  char why[256];
};

static ncclzThreadGroup *group_of(ncclzTransport *t) { return (ncclzThreadGroup *)t->impl; }

static ncclzStatus aborted_error(ncclzThreadGroup *g) {
  return ncclzSetError(NCCLZ_ERR_IO, "transport aborted by another rank: %s", g->why);
}

static ncclzStatus th_send(ncclzTransport *t, int peer, uint64_t tag, int lane, const void *buf, size_t len) {
  ncclzThreadGroup *g = group_of(t);
  if (peer < 0 || peer >= g->n) return ncclzSetError(NCCLZ_ERR_ARG, "send to rank %d of %d", peer, g->n);
  msg *m = malloc(sizeof *m + len);
  if (!m) return ncclzSetError(NCCLZ_ERR_NOMEM, "thread transport: message of %zu bytes", len);
  *m = (msg){NULL, t->rank, lane, tag, len};
  if (len) memcpy(m->data, buf, len);
  mailbox *b = &g->box[peer];
  pthread_mutex_lock(&b->mu);
  if (b->tail)
    b->tail->next = m;
  else
    b->head = m;
  b->tail = m;
  pthread_cond_broadcast(&b->cv);
  pthread_mutex_unlock(&b->mu);
  t->bytes_sent[lane & 1] += len;
  return NCCLZ_OK;
}

/* Unlinks and returns the first message matching (src, tag, lane), or NULL. */
static msg *take(mailbox *b, int src, uint64_t tag, int lane) {
  for (msg **p = &b->head, *prev = NULL; *p; prev = *p, p = &(*p)->next) {
    msg *m = *p;
    if (m->src != src || m->tag != tag || m->lane != lane) continue;
    *p = m->next;
    if (b->tail == m) b->tail = prev;
    return m;
  }
  return NULL;
}

static ncclzStatus th_recv(ncclzTransport *t, int peer, uint64_t tag, int lane, void *buf, size_t len) {
  ncclzThreadGroup *g = group_of(t);
  mailbox *b = &g->box[t->rank];
  msg *m;
  pthread_mutex_lock(&b->mu);
  while (!(m = take(b, peer, tag, lane)) && !g->aborted) pthread_cond_wait(&b->cv, &b->mu);
  pthread_mutex_unlock(&b->mu);
  if (!m) return aborted_error(g);
  ncclzStatus st = NCCLZ_OK;
  if (m->len != len)
    st = ncclzSetError(NCCLZ_ERR_CORRUPT, "recv from rank %d (tag %llu, lane %d): posted %zu bytes, sent %zu", peer,
                       (unsigned long long)tag, lane, len, m->len);
  else if (len)
    memcpy(buf, m->data, len);
  free(m);
  return st;
}

/* Waits until all ranks arrived at this generation; returns 0, or -1 when aborted. */
static int barrier(ncclzThreadGroup *g) {
  int gen = g->generation;
  if (++g->arrived == g->n) {
    g->arrived = 0;
    g->generation++;
    pthread_cond_broadcast(&g->cv);
    return 0;
  }
  while (gen == g->generation && !g->aborted) pthread_cond_wait(&g->cv, &g->mu);
  return g->aborted ? -1 : 0;
}

static ncclzStatus th_allreduce_max(ncclzTransport *t, double *vals, size_t n) {
  ncclzThreadGroup *g = group_of(t);
  pthread_mutex_lock(&g->mu);
  g->slots[t->rank] = vals;
  g->slot_n = n;
  int bad = barrier(g);
  double *res = bad ? NULL : malloc((n ? n : 1) * sizeof *res);
  if (res) {
    for (size_t i = 0; i < n; i++) {
      res[i] = g->slots[0][i];
      for (int r = 1; r < g->n; r++)
        if (g->slots[r][i] > res[i]) res[i] = g->slots[r][i];
    }
  }
  /* Everyone read every slot before anyone overwrites its own vals. */
  if (!bad) bad = barrier(g);
  pthread_mutex_unlock(&g->mu);
  if (bad) {
    free(res);
    return aborted_error(g);
  }
  if (!res) return ncclzSetError(NCCLZ_ERR_NOMEM, "allreduce of %zu values", n);
  memcpy(vals, res, n * sizeof *vals);
  free(res);
  return NCCLZ_OK;
}

static ncclzStatus th_flush(ncclzTransport *t) { return NCCLZ_OK; }

static void th_abort(ncclzTransport *t, const char *why) {
  ncclzThreadGroup *g = group_of(t);
  pthread_mutex_lock(&g->mu);
  if (!g->aborted) snprintf(g->why, sizeof g->why, "rank %d: %s", t->rank, why);
  g->aborted = 1;
  pthread_cond_broadcast(&g->cv);
  pthread_mutex_unlock(&g->mu);
  for (int r = 0; r < g->n; r++) {
    pthread_mutex_lock(&g->box[r].mu);
    pthread_cond_broadcast(&g->box[r].cv);
    pthread_mutex_unlock(&g->box[r].mu);
  }
}

static void th_destroy(ncclzTransport *t) { (void)t; /* owned by the group */ }

ncclzThreadGroup *ncclzThreadGroupCreate(int nranks) {
  if (nranks < 1) return NULL;
  ncclzThreadGroup *g = calloc(1, sizeof *g);
  if (!g) return NULL;
  g->n = nranks;
  g->box = calloc((size_t)nranks, sizeof *g->box);
  g->tr = calloc((size_t)nranks, sizeof *g->tr);
  g->slots = calloc((size_t)nranks, sizeof *g->slots);
  if (!g->box || !g->tr || !g->slots) {
    ncclzThreadGroupDestroy(g);
    return NULL;
  }
  pthread_mutex_init(&g->mu, NULL);
  pthread_cond_init(&g->cv, NULL);
  for (int r = 0; r < nranks; r++) {
    pthread_mutex_init(&g->box[r].mu, NULL);
    pthread_cond_init(&g->box[r].cv, NULL);
    g->tr[r] = (ncclzTransport){r, nranks, th_send, th_recv, th_allreduce_max, th_flush, th_abort, th_destroy,
                                {0, 0}, g};
  }
  return g;
}

ncclzTransport *ncclzThreadGroupTransport(ncclzThreadGroup *g, int rank) {
  return g && rank >= 0 && rank < g->n ? &g->tr[rank] : NULL;
}

void ncclzThreadGroupDestroy(ncclzThreadGroup *g) {
  if (!g) return;
  if (g->box && g->tr && g->slots) {
    for (int r = 0; r < g->n; r++) {
      for (msg *m = g->box[r].head, *nx; m; m = nx) {
        nx = m->next;
        free(m);
      }
      pthread_mutex_destroy(&g->box[r].mu);
      pthread_cond_destroy(&g->box[r].cv);
    }
    pthread_mutex_destroy(&g->mu);
    pthread_cond_destroy(&g->cv);
  }
  free(g->box);
  free(g->tr);
  free(g->slots);
  free(g);
}
