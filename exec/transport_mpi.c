/* MPI transport: one process per rank over a duplicate of MPI_COMM_WORLD.
 *
 * send copies the bytes and posts MPI_Isend (so it never waits for the receiver, as the engine
 * requires); completed sends are reaped on later calls and by flush. recv posts MPI_Recv with
 * exactly the length the size protocol announced and checks the received count, so a protocol
 * bug shows as an error, not as silent truncation. The two lanes use different tags: the control
 * lane is MPI messages outside NCCL (docs/executor.md, "Size protocol"). Built only with NCCLZ_MPI. */
#include "ncclz/exec.h"

#include <limits.h>
#include <stdio.h>
#include <mpi.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
  MPI_Request req;
  void *buf;
} pending;

typedef struct {
  MPI_Comm comm;
  int tag_ub;
  pending *p;
  size_t np, cap;
} mpi_impl;

static mpi_impl *impl_of(ncclzTransport *t) { return (mpi_impl *)t->impl; }

/* MPI tags are at least 15 bits; messages with equal (source, tag) stay in order, so wrapping the
 * (step, chunk) tag only merges keys whose messages the engine consumes in order anyway. */
static int mpi_tag(const mpi_impl *m, uint64_t tag, int lane) {
  return (int)((tag * 2 + (uint64_t)(lane & 1)) % ((uint64_t)m->tag_ub + 1));
}

static ncclzStatus mpi_error(int rc, const char *what) {
  char s[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, s, &len);
  return ncclzSetError(NCCLZ_ERR_IO, "MPI %s: %s", what, s);
}

/* Frees the buffers of completed sends. */
static ncclzStatus reap(mpi_impl *m) {
  size_t k = 0;
  for (size_t i = 0; i < m->np; i++) {
    int done = 0;
    int rc = MPI_Test(&m->p[i].req, &done, MPI_STATUS_IGNORE);
    if (rc != MPI_SUCCESS) return mpi_error(rc, "Test");
    if (done)
      free(m->p[i].buf);
    else
      m->p[k++] = m->p[i];
  }
  m->np = k;
  return NCCLZ_OK;
}

static ncclzStatus mpi_send(ncclzTransport *t, int peer, uint64_t tag, int lane, const void *buf, size_t len) {
  mpi_impl *m = impl_of(t);
  if (len > INT_MAX) return ncclzSetError(NCCLZ_ERR_ARG, "MPI transport: message of %zu bytes", len);
  ncclzStatus st = reap(m);
  if (st) return st;
  if (m->np == m->cap) {
    size_t cap = m->cap ? 2 * m->cap : 64;
    pending *p = realloc(m->p, cap * sizeof *p);
    if (!p) return ncclzSetError(NCCLZ_ERR_NOMEM, "MPI transport: pending sends");
    m->p = p;
    m->cap = cap;
  }
  void *copy = malloc(len ? len : 1);
  if (!copy) return ncclzSetError(NCCLZ_ERR_NOMEM, "MPI transport: message of %zu bytes", len);
  if (len) memcpy(copy, buf, len);
  int rc = MPI_Isend(copy, (int)len, MPI_BYTE, peer, mpi_tag(m, tag, lane), m->comm, &m->p[m->np].req);
  if (rc != MPI_SUCCESS) {
    free(copy);
    return mpi_error(rc, "Isend");
  }
  m->p[m->np++].buf = copy;
  t->bytes_sent[lane & 1] += len;
  return NCCLZ_OK;
}

static ncclzStatus mpi_recv(ncclzTransport *t, int peer, uint64_t tag, int lane, void *buf, size_t len) {
  mpi_impl *m = impl_of(t);
  if (len > INT_MAX) return ncclzSetError(NCCLZ_ERR_ARG, "MPI transport: message of %zu bytes", len);
  MPI_Status s;
  int rc = MPI_Recv(buf, (int)len, MPI_BYTE, peer, mpi_tag(m, tag, lane), m->comm, &s);
  if (rc != MPI_SUCCESS) return mpi_error(rc, "Recv");
  int got = 0;
  MPI_Get_count(&s, MPI_BYTE, &got);
  if ((size_t)got != len)
    return ncclzSetError(NCCLZ_ERR_CORRUPT, "recv from rank %d: posted %zu bytes, got %d", peer, len, got);
  return NCCLZ_OK;
}

static ncclzStatus mpi_allreduce_max(ncclzTransport *t, double *vals, size_t n) {
  if (n > INT_MAX) return ncclzSetError(NCCLZ_ERR_ARG, "MPI allreduce of %zu values", n);
  int rc = MPI_Allreduce(MPI_IN_PLACE, vals, (int)n, MPI_DOUBLE, MPI_MAX, impl_of(t)->comm);
  return rc == MPI_SUCCESS ? NCCLZ_OK : mpi_error(rc, "Allreduce");
}

static ncclzStatus mpi_flush(ncclzTransport *t) {
  mpi_impl *m = impl_of(t);
  for (size_t i = 0; i < m->np; i++) {
    int rc = MPI_Wait(&m->p[i].req, MPI_STATUS_IGNORE);
    if (rc != MPI_SUCCESS) return mpi_error(rc, "Wait");
    free(m->p[i].buf);
  }
  m->np = 0;
  return NCCLZ_OK;
}

/* A rank that fails mid-collective cannot tell its peers to stop waiting: end the job, which is
 * what "abort the communicator cleanly" means under MPI. */
static void mpi_abort(ncclzTransport *t, const char *why) {
  fprintf(stderr, "ncclz: rank %d aborts: %s\n", t->rank, why);
  MPI_Abort(impl_of(t)->comm, 1);
}

static void mpi_destroy(ncclzTransport *t) {
  if (!t) return;
  mpi_impl *m = impl_of(t);
  mpi_flush(t);
  free(m->p);
  MPI_Comm_free(&m->comm);
  free(m);
  free(t);
}

int ncclzMpiAvailable(void) { return 1; }

ncclzStatus ncclzMpiInit(int *argc, char ***argv) {
  int inited = 0;
  MPI_Initialized(&inited);
  if (inited) return NCCLZ_OK;
  int rc = MPI_Init(argc, argv);
  return rc == MPI_SUCCESS ? NCCLZ_OK : mpi_error(rc, "Init");
}

void ncclzMpiFinalize(void) {
  int fin = 0;
  MPI_Finalized(&fin);
  if (!fin) MPI_Finalize();
}

ncclzTransport *ncclzMpiTransportCreate(void) {
  ncclzTransport *t = calloc(1, sizeof *t);
  mpi_impl *m = calloc(1, sizeof *m);
  if (!t || !m) {
    free(t);
    free(m);
    return NULL;
  }
  MPI_Comm_dup(MPI_COMM_WORLD, &m->comm);
  MPI_Comm_set_errhandler(m->comm, MPI_ERRORS_RETURN);
  int *ub = NULL, flag = 0;
  MPI_Comm_get_attr(m->comm, MPI_TAG_UB, &ub, &flag);
  m->tag_ub = flag && ub ? *ub : 32767;
  MPI_Comm_rank(m->comm, &t->rank);
  MPI_Comm_size(m->comm, &t->nranks);
  t->send = mpi_send;
  t->recv = mpi_recv;
  t->allreduce_max = mpi_allreduce_max;
  t->flush = mpi_flush;
  t->abort = mpi_abort;
  t->destroy = mpi_destroy;
  t->impl = m;
  return t;
}
