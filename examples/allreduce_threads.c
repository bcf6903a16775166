/* A compressed AllReduce over the thread transport: 4 ranks (threads) sum 1 Mi floats, quantized
 * so that every element of the result is within 1e-3 of the exact sum, frames coded by HUFFMAN. */
#include <ncclz/exec.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>

enum { RANKS = 4, N = 1 << 20 };
static float in[RANKS][N], out[RANKS][N];
static ncclzThreadGroup *group;
static ncclzStatus status[RANKS];

static void *rank_main(void *arg) {
  int r = (int)(size_t)arg;
  ncclzConfig cfg;
  ncclzHostComm *comm = NULL;
  ncclzConfigDefault(&cfg);
  ncclzQuantSpecParse("eb:abs=1e-3", &cfg.quant);
  cfg.final_error_bound = 1e-3; /* on the sum, not on each rank's contribution */
  cfg.policy = NCCLZ_POLICY_HUFFMAN;
  status[r] = ncclzHostCommInit(&comm, ncclzThreadGroupTransport(group, r), &cfg);
  if (!status[r]) status[r] = ncclzHostRun(comm, NCCLZ_ALLREDUCE, in[r], out[r], N, NCCLZ_DTYPE_F32, 0, NULL);
  if (status[r]) fprintf(stderr, "rank %d: %s\n", r, ncclzLastError());
  ncclzHostCommDestroy(comm);
  return NULL;
}

int main(void) {
  pthread_t th[RANKS];
  for (int r = 0; r < RANKS; r++)
    for (size_t i = 0; i < N; i++) in[r][i] = (float)sin(i * 1e-4 + r);
  group = ncclzThreadGroupCreate(RANKS);
  for (int r = 0; r < RANKS; r++) pthread_create(&th[r], NULL, rank_main, (void *)(size_t)r);
  for (int r = 0; r < RANKS; r++) pthread_join(th[r], NULL);
  ncclzThreadGroupDestroy(group);
  double maxerr = 0;
  for (int r = 0; r < RANKS; r++) {
    if (status[r]) return 1;
    for (size_t i = 0; i < N; i++) {
      double exact = 0;
      for (int q = 0; q < RANKS; q++) exact += in[q][i];
      maxerr = fmax(maxerr, fabs(out[r][i] - exact));
    }
  }
  printf("allreduce of %d x %d floats on %d threads: max error %.6g (bound 1e-3)\n", RANKS, N, RANKS, maxerr);
  return maxerr <= 1e-3 ? 0 : 1;
}
