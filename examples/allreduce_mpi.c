/* The same compressed AllReduce with one process per rank over MPI:
 *   mpirun -np 2 ./allreduce_mpi   (on a cluster: srun / mpiexec, docs/cluster.md) */
#include <ncclz/exec.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

enum { N = 1 << 20 };

static float input(int rank, size_t i) { return (float)sin(i * 1e-4 + rank); }

int main(int argc, char **argv) {
  if (ncclzMpiInit(&argc, &argv)) return fprintf(stderr, "MPI: %s\n", ncclzLastError()), 1;
  ncclzTransport *t = ncclzMpiTransportCreate();
  float *in = malloc(N * sizeof *in), *out = malloc(N * sizeof *out);
  for (size_t i = 0; i < N; i++) in[i] = input(t->rank, i);
  ncclzConfig cfg;
  ncclzHostComm *comm = NULL;
  ncclzConfigDefault(&cfg);
  ncclzQuantSpecParse("eb:abs=1e-3", &cfg.quant);
  cfg.final_error_bound = 1e-3;
  cfg.policy = NCCLZ_POLICY_HUFFMAN;
  ncclzExecStats st;
  ncclzStatus s = ncclzHostCommInit(&comm, t, &cfg);
  if (!s) s = ncclzHostRun(comm, NCCLZ_ALLREDUCE, in, out, N, NCCLZ_DTYPE_F32, 0, &st);
  double maxerr = 0;
  for (size_t i = 0; !s && i < N; i++) {
    double exact = 0;
    for (int q = 0; q < t->nranks; q++) exact += input(q, i);
    maxerr = fmax(maxerr, fabs(out[i] - exact));
  }
  if (s) fprintf(stderr, "rank %d: %s\n", t->rank, ncclzLastError());
  else printf("rank %d of %d: max error %.6g (bound 1e-3), %.2fx fewer bytes sent\n", t->rank, t->nranks, maxerr,
              (double)st.raw_bytes / st.wire_bytes);
  int rc = s || maxerr > 1e-3;
  ncclzHostCommDestroy(comm);
  t->destroy(t);
  ncclzMpiFinalize();
  free(in), free(out);
  return rc;
}
