/* A compressed AllReduce over the thread transport: 4 ranks (threads) sum 1 Mi floats, quantized
 * so that every element of the result is within 1e-3 of the exact sum, frames coded by HUFFMAN. */
#include <ncclz/exec.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>

enum { RANKS = 4, N = 1 << 20 };
static float in[RANKS][N], out[RANKS][N];
static ncclzThreadGroup *group;

static void *rank_main(void *arg) {
  int r = (int)(size_t)arg;
  ncclzConfig cfg;
  ncclzHostComm *comm = NULL;
  ncclzConfigDefault(&cfg);
  ncclzQuantSpecParse("eb:abs=1e-3", &cfg.quant);
  cfg.final_error_bound = 1e-3; /* on the sum, not on each rank's contribution */
  cfg.policy = NCCLZ_POLICY_HUFFMAN;
  ncclzStatus s = ncclzHostCommInit(&comm, ncclzThreadGroupTransport(group, r), &cfg);
  if (!s) s = ncclzHostRun(comm, NCCLZ_ALLREDUCE, in[r], out[r], N, NCCLZ_DTYPE_F32, 0, NULL);
  if (s) fprintf(stderr, "rank %d: %s\n", r, ncclzLastError());
  ncclzHostCommDestroy(comm);
  return (void *)(size_t)s;
}

int main(void) {
  pthread_t th[RANKS];
  void *failed = NULL, *st;
  for (int r = 0; r < RANKS; r++)
    for (size_t i = 0; i < N; i++) in[r][i] = (float)sin(i * 1e-4 + r);
  group = ncclzThreadGroupCreate(RANKS);
  for (int r = 0; r < RANKS; r++) pthread_create(&th[r], NULL, rank_main, (void *)(size_t)r);
  for (int r = 0; r < RANKS; r++) pthread_join(th[r], &st), failed = st ? st : failed;
  ncclzThreadGroupDestroy(group);
  double maxerr = 0;
  for (int r = 0; r < RANKS; r++)
    for (size_t i = 0; i < N; i++) {
      double exact = 0;
      for (int q = 0; q < RANKS; q++) exact += in[q][i];
      maxerr = fmax(maxerr, fabs(out[r][i] - exact));
    }
  printf("allreduce of %d x %d floats on %d threads: max error %.6g (bound 1e-3)\n", RANKS, N, RANKS, maxerr);
  return failed || maxerr > 1e-3;
}
