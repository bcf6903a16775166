/* The REA device selector behind a launcher (model.h, "device selector"): the kernel that runs
 * ncclz_rea_plan_cluster (model/rea_device.cuh) a cluster of blocks per frame, its launch, and the
 * decisions read back as ncclzReaPlan's results. The executor's auto decision and test_gpu_rea
 * both go through here, so the test checks the code the executor runs. */
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime.h>

#include "ncclz/model.h"
#include "rea_device.cuh"

#define RCU(call)                                                                                  \
  do {                                                                                             \
    cudaError_t e_ = (call);                                                                       \
    if (e_ != cudaSuccess)                                                                         \
      return ncclzSetError(NCCLZ_ERR_CUDA, "REA device selector: %s: %s", #call, cudaGetErrorString(e_)); \
  } while (0)

struct ncclzReaGpuPlanner {
  ncclzProfile prof = {}, *d_prof = nullptr; /* the profile, on the host (the batch's part) and the device */
  ncclzReaConfig cfg = {}, *d_cfg = nullptr; /* cfg: what d_cfg holds (uploaded when it changes) */
  ncclzReaBatch batch = {}, *d_batch = nullptr;
  int uploaded = 0;
  ncclzReaDeviceDecision *d_out = nullptr;
  size_t out_cap = 0;
  /* the last launch: what the results need to read it back */
  cudaStream_t stream = nullptr;
  size_t n = 0, frames = 0;
  uint32_t frame_symbols = 0, dtype_bytes = 4, side_bytes = 0, side_bucket = 0;
};

/* A frame's side bytes: its own QSGD scales (side_bucket), or every frame's. */
__host__ __device__ static uint32_t frame_side_bytes(uint64_t m, uint32_t side_bytes, uint32_t side_bucket) {
  return side_bucket ? ncclz_rea_side_bytes(side_bucket, m) : side_bytes;
}

/* A cluster per frame; frame f is symbols [f * frame_syms, ...) of sym. coders: NULL, or each
 * frame's planned coder as a word (what a mixed encode batch reads, ncclzCudaBatch.d_coders).
 * clk: NULL, or the phase clocks of frame 0's leader. */
__global__ static void __launch_bounds__(NCCLZ_REA_PLAN_THREADS, NCCLZ_REA_PLAN_MIN_BLOCKS)
    k_rea_plan(const ncclzProfile *prof, const ncclzReaConfig *cfg, const ncclzReaBatch *batch, const int32_t *sym,
               uint64_t n, uint32_t frame_syms, uint32_t dtype_bytes, uint32_t side_bytes, uint32_t side_bucket,
               ncclzCoderParams cp, ncclzReaDeviceDecision *out, uint32_t *coders, unsigned long long *clk) {
  __shared__ ncclzReaBlockShared s;
  cooperative_groups::cluster_group cluster = cooperative_groups::this_cluster();
  const uint32_t f = blockIdx.x / cluster.num_blocks();
  const uint64_t start = (uint64_t)f * frame_syms, m = n - start < frame_syms ? n - start : frame_syms;
  ncclz_rea_plan_cluster(prof, cfg, batch, sym + start, m, dtype_bytes, frame_side_bytes(m, side_bytes, side_bucket),
                         cp, s, &out[f], f == 0 ? clk : nullptr);
  /* thread 0 of the leader wrote the decision (fast path or lane 0 of the decision) */
  if (coders && cluster.block_rank() == 0 && threadIdx.x == 0) coders[f] = (uint32_t)out[f].coder;
}

ncclzStatus ncclzReaGpuPlannerCreate(const ncclzProfile *prof, ncclzReaGpuPlanner **out) {
  if (!prof || !out) return ncclzSetError(NCCLZ_ERR_ARG, "ncclzReaGpuPlannerCreate: NULL argument");
  ncclzReaGpuPlanner *p = new ncclzReaGpuPlanner();
  p->prof = *prof;
  cudaError_t e = cudaMalloc(&p->d_prof, sizeof *prof);
  if (e == cudaSuccess) e = cudaMalloc(&p->d_cfg, sizeof p->cfg);
  if (e == cudaSuccess) e = cudaMalloc(&p->d_batch, sizeof p->batch);
  if (e == cudaSuccess) e = cudaMemcpy(p->d_prof, prof, sizeof *prof, cudaMemcpyHostToDevice);
  if (e != cudaSuccess) {
    ncclzReaGpuPlannerDestroy(p);
    return ncclzSetError(NCCLZ_ERR_CUDA, "REA device selector: %s", cudaGetErrorString(e));
  }
  *out = p;
  return NCCLZ_OK;
}

void ncclzReaGpuPlannerDestroy(ncclzReaGpuPlanner *p) {
  if (!p) return;
  cudaFree(p->d_prof), cudaFree(p->d_cfg), cudaFree(p->d_batch), cudaFree(p->d_out);
  delete p;
}

/* The config and the batch's shared part on the device, copied only when they changed (a batch
 * planned again with the same config launches the kernel alone). Pageable sources: an async copy
 * from pageable memory has taken its bytes when it returns, so p->cfg may change after it. */
static ncclzStatus upload(ncclzReaGpuPlanner *p, const ncclzReaConfig *cfg, const ncclzReaBatch *b,
                          cudaStream_t stream) {
  if (p->uploaded && !memcmp(&p->cfg, cfg, sizeof *cfg) && !memcmp(&p->batch, b, sizeof *b)) return NCCLZ_OK;
  p->cfg = *cfg, p->batch = *b;
  RCU(cudaMemcpyAsync(p->d_cfg, &p->cfg, sizeof p->cfg, cudaMemcpyHostToDevice, stream));
  RCU(cudaMemcpyAsync(p->d_batch, &p->batch, sizeof p->batch, cudaMemcpyHostToDevice, stream));
  p->uploaded = 1;
  return NCCLZ_OK;
}

ncclzStatus ncclzReaGpuPlanLaunch(ncclzReaGpuPlanner *p, const ncclzReaConfig *cfg, const int32_t *d_sym, size_t n, uint32_t frame_symbols, const ncclzFrameDesc *desc,
                                  size_t stage_cap, void *stream, uint32_t *d_coders, unsigned long long *d_clk) {
  if (!p || !cfg || !desc || (!d_sym && n) || !frame_symbols)
    return ncclzSetError(NCCLZ_ERR_ARG, "ncclzReaGpuPlanLaunch: NULL argument or frames of 0 symbols");
  if ((unsigned)desc->dtype >= NCCLZ_DTYPE_COUNT) return ncclzSetError(NCCLZ_ERR_ARG, "REA: unknown dtype");
  const uint32_t dtype_bytes = (uint32_t)ncclzDtypeSize(desc->dtype);
  if ((uint64_t)frame_symbols * dtype_bytes > UINT32_MAX)
    return ncclzSetError(NCCLZ_ERR_ARG, "REA: a frame holds at most 4 GiB of raw bytes (got %u symbols)", frame_symbols);
  ncclzStatus s = ncclzReaConfigValidate(cfg);
  if (s != NCCLZ_OK) return s;
  const size_t frames = n ? (n + frame_symbols - 1) / frame_symbols : 0;
  const unsigned blocks = ncclz_rea_plan_blocks(cfg->sample_window_bytes);
  if (frames > (size_t)INT32_MAX / blocks) return ncclzSetError(NCCLZ_ERR_ARG, "REA: %zu frames in one launch", frames);
  cudaStream_t st = (cudaStream_t)stream;
  if (frames > p->out_cap) {
    cudaFree(p->d_out);
    p->d_out = nullptr, p->out_cap = 0;
    RCU(cudaMalloc(&p->d_out, frames * sizeof *p->d_out));
    p->out_cap = frames;
  }
  ncclzReaBatch b;
  memset(&b, 0, sizeof b); /* its padding too: upload compares bytes */
  ncclz_rea_batch_init(&p->prof, cfg, stage_cap, (double)frame_symbols * dtype_bytes, &b);
  if ((s = upload(p, cfg, &b, st)) != NCCLZ_OK) return s;
  p->stream = st, p->n = n, p->frames = frames, p->frame_symbols = frame_symbols;
  p->dtype_bytes = dtype_bytes, p->side_bytes = desc->side_bytes;
  /* frames that carry their QSGD scales: each frame's own (a batch's last frame has fewer) */
  p->side_bucket = desc->side_bytes && desc->quant && desc->quant->kind == NCCLZ_QUANT_QSGD ? desc->quant->qsgd_bucket : 0;
  if (!frames) return NCCLZ_OK;
  cudaLaunchAttribute cluster;
  cluster.id = cudaLaunchAttributeClusterDimension;
  cluster.val.clusterDim.x = blocks, cluster.val.clusterDim.y = 1, cluster.val.clusterDim.z = 1;
  cudaLaunchConfig_t lc = {};
  lc.gridDim = dim3((unsigned)(frames * blocks)), lc.blockDim = dim3(NCCLZ_REA_PLAN_THREADS), lc.stream = st;
  lc.attrs = &cluster, lc.numAttrs = 1;
  RCU(cudaLaunchKernelEx(&lc, k_rea_plan, (const ncclzProfile *)p->d_prof, (const ncclzReaConfig *)p->d_cfg,
                         (const ncclzReaBatch *)p->d_batch, d_sym, (uint64_t)n, frame_symbols, dtype_bytes,
                         desc->side_bytes, p->side_bucket, desc->coder_params, p->d_out, d_coders, d_clk));
  return NCCLZ_OK;
}

/* One frame's device decision as ncclzReaPlan's result (plan only: committed stays RAW). */
static void to_result(const ncclzReaDeviceDecision *d, uint64_t m, uint32_t dtype_bytes, uint32_t side_bytes,
                      ncclzReaResult *r) {
  memset(r, 0, sizeof *r);
  r->planned = r->committed = NCCLZ_CODER_RAW;
  r->path = (ncclzReaPath)d->path;
  if (r->path == NCCLZ_REA_PATH_FAST) { /* the device writes no candidates there, nor does the host */
    r->cand.frame_raw_bytes = (double)m * dtype_bytes;
    r->cand.raw_frame_bytes = ncclz_rea_raw_frame_bytes(m, side_bytes);
    return;
  }
  r->planned = r->decision.coder = (ncclzCoder)d->coder;
  r->cand = d->cand;
  for (int c = 0; c < NCCLZ_CODER_COUNT; c++) {
    r->decision.time_us[c] = d->time_us[c];
    r->decision.verdict[c] = (ncclzReaVerdict)d->verdict[c];
  }
}

ncclzStatus ncclzReaGpuPlanResults(ncclzReaGpuPlanner *p, ncclzReaResult *res, size_t nf) {
  if (!p || (!res && nf)) return ncclzSetError(NCCLZ_ERR_ARG, "ncclzReaGpuPlanResults: NULL argument");
  if (nf > p->frames)
    return ncclzSetError(NCCLZ_ERR_ARG, "ncclzReaGpuPlanResults: %zu results asked, the last launch planned %zu frames",
                         nf, p->frames);
  if (!nf) return NCCLZ_OK;
  ncclzReaDeviceDecision *h = (ncclzReaDeviceDecision *)malloc(nf * sizeof *h);
  if (!h) return ncclzSetError(NCCLZ_ERR_NOMEM, "ncclzReaGpuPlanResults: out of memory");
  cudaError_t e = cudaMemcpyAsync(h, p->d_out, nf * sizeof *h, cudaMemcpyDeviceToHost, p->stream);
  if (e == cudaSuccess) e = cudaStreamSynchronize(p->stream);
  if (e != cudaSuccess) {
    free(h);
    return ncclzSetError(NCCLZ_ERR_CUDA, "REA device selector: %s", cudaGetErrorString(e));
  }
  for (size_t f = 0; f < nf; f++) {
    const size_t start = f * p->frame_symbols, m = p->n - start < p->frame_symbols ? p->n - start : p->frame_symbols;
    to_result(&h[f], m, p->dtype_bytes, frame_side_bytes(m, p->side_bytes, p->side_bucket), &res[f]);
  }
  free(h);
  return NCCLZ_OK;
}
