/* The compressed AllReduce on GPUs (CUDA builds): one thread per GPU, NCCL moves the frames, the
 * thread transport carries the 64-byte frame headers. Exits 77 (skip) without two GPUs. */
#include <ncclz/exec.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

enum { MAXG = 8, N = 1 << 22 };
static ncclzThreadGroup *group;
static float *host_in[MAXG], *host_out[MAXG];
static ncclzStatus status[MAXG];

static void *rank_main(void *arg) {
  int r = (int)(size_t)arg;
  ncclzConfig cfg;
  ncclzComm_t comm = NULL;
  float *d;
  cudaStream_t s;
  cudaSetDevice(r);
  cudaStreamCreate(&s);
  cudaMalloc((void **)&d, N * sizeof(float));
  cudaMemcpy(d, host_in[r], N * sizeof(float), cudaMemcpyHostToDevice);
  ncclzConfigDefault(&cfg);
  ncclzQuantSpecParse("eb:abs=1e-3", &cfg.quant);
  cfg.final_error_bound = 1e-3;
  cfg.policy = NCCLZ_POLICY_HUFFMAN;
  status[r] = ncclzCommInitCreate(&comm, ncclzThreadGroupTransport(group, r), r, &cfg);
  if (!status[r]) status[r] = ncclzAllReduce(d, d, N, ncclFloat32, ncclSum, comm, s);
  if (status[r]) fprintf(stderr, "rank %d: %s\n", r, ncclzLastError());
  cudaMemcpy(host_out[r], d, N * sizeof(float), cudaMemcpyDeviceToHost);
  if (comm) ncclzCommDestroy(comm);
  cudaFree(d);
  cudaStreamDestroy(s);
  return NULL;
}

int main(void) {
  int ngpus = 0;
  if (cudaGetDeviceCount(&ngpus) != cudaSuccess || ngpus < 2) {
    printf("SKIP: allreduce_nccl needs 2 GPUs, found %d\n", ngpus);
    return 77;
  }
  if (ngpus > MAXG) ngpus = MAXG;
  pthread_t th[MAXG];
  for (int r = 0; r < ngpus; r++) {
    host_in[r] = malloc(N * sizeof(float));
    host_out[r] = malloc(N * sizeof(float));
    for (size_t i = 0; i < N; i++) host_in[r][i] = (float)sin(i * 1e-4 + r);
  }
  group = ncclzThreadGroupCreate(ngpus);
  for (int r = 0; r < ngpus; r++) pthread_create(&th[r], NULL, rank_main, (void *)(size_t)r);
  for (int r = 0; r < ngpus; r++) pthread_join(th[r], NULL);
  ncclzThreadGroupDestroy(group);
  double maxerr = 0;
  int rc = 0;
  for (int r = 0; r < ngpus; r++) {
    rc |= status[r] != NCCLZ_OK;
    for (size_t i = 0; i < N; i++) {
      double exact = 0;
      for (int q = 0; q < ngpus; q++) exact += host_in[q][i];
      maxerr = fmax(maxerr, fabs(host_out[r][i] - exact));
    }
  }
  printf("allreduce of %d floats on %d GPUs: max error %.6g (bound 1e-3)\n", N, ngpus, maxerr);
  for (int r = 0; r < ngpus; r++) free(host_in[r]), free(host_out[r]);
  return rc || maxerr > 1e-3;
}
