/* Internals of the host engine shared by exec/engine.c and exec/agree.c (not installed). */
#ifndef NCCLZ_EXEC_ENGINE_INTERNAL_H
#define NCCLZ_EXEC_ENGINE_INTERNAL_H

#include "ncclz/exec.h"

struct ncclzHostComm {
  ncclzTransport *t;
  ncclzConfig cfg;
  ncclzReaConfig rea;        /* REA for the config's hint */
  ncclzReaConfig rea_intra;  /* REA for a hop inside a node (NVLink) when ranks_per_node is set */
};

/* One collective in progress on one rank. Buffers hold 4-byte cells: int32 codes when quantized,
 * floats otherwise (quant none and policy off reduce in float, as NCCL does). */
typedef struct {
  ncclzHostComm *c;
  ncclzTransport *t;
  ncclzSchedule s;
  ncclzCollective coll;
  ncclzDtype dtype;
  size_t dsize, count, n_in, n_out;
  int quantized, framed, k; /* k: contributions summed into each output element */
  ncclzCoderPolicy policy;  /* the call's (the config's, or the auto pair's) */
  double gmax;              /* agreed max |x| (quantized modes) */
  ncclzQuantParams qp;
  float *scales;            /* QSGD shared scales, over input coordinates */
  size_t n_scales;
  void *in, *work, *out;
  int32_t *sym;             /* scratch: the symbols of one chunk */
  uint16_t *half;           /* scratch: one chunk in bf16/f16 */
  float *fl;                /* scratch: one chunk in float */
  uint8_t *stage, *rstage;  /* send and receive staging of one frame */
  size_t stage_cap, max_chunk;
  uint8_t **kept;           /* KEEP: frame (or payload) per recv op index */
  size_t *kept_len;
  ncclzExecStats *st;
} run_t;

/* Agreement (quantized modes) and quantization of the input into r->in; also checks the call
 * (collective, count, dtype, root) across ranks. x: the input as floats (n_in; NULL on broadcast
 * non-roots). Errors are the same on every rank. */
ncclzStatus exec_agree_and_quantize(run_t *r, const float *x);
/* Output cells -> floats (dequantization once, at the end). */
ncclzStatus exec_dequantize(run_t *r, float *y);

#endif
