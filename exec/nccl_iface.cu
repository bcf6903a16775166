/* The NCCL backend's call interface: the agreement (scan kernel, fingerprint, checks), quantization
 * once before the pipeline, dequantization once after it, and the auto (REA) decision per signature. */
#include "nccl_internal.cuh"

/* Calls between two REA decisions of one signature: NCCLZ_REPLAN, doubled after every decision
 * that keeps the ranks' vote (compress or bypass) up to NCCLZ_REPLAN_MAX. A decision quantizes the
 * message and reads a chunk back (~1 ms at 64 MiB on an H200); every 64th call of a bypassed
 * 64 MiB AllReduce over NVLink cost 6% of its time. */
#define NCCLZ_REPLAN 64
#define NCCLZ_REPLAN_MAX 8192

/* ------------------------------------------------------------ kernels */

unsigned grid_for(size_t n) {
  size_t g = (n + 255) / 256;
  return (unsigned)(g < 1 ? 1 : g > 8192 ? 8192 : g);
}

__device__ static float cell_from(const void *src, int dt, size_t i) {
  if (dt == NCCLZ_DTYPE_BF16) return __bfloat162float(((const __nv_bfloat16 *)src)[i]);
  if (dt == NCCLZ_DTYPE_F16) return __half2float(((const __half *)src)[i]);
  return ((const float *)src)[i];
}

__global__ static void k_to_float(const void *src, int dt, size_t n, float *dst) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
    dst[i] = cell_from(src, dt, i);
}

__global__ static void k_from_float(const float *src, size_t n, int dt, void *dst) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
    if (dt == NCCLZ_DTYPE_BF16)
      ((__nv_bfloat16 *)dst)[i] = __float2bfloat16_rn(src[i]);
    else if (dt == NCCLZ_DTYPE_F16)
      ((__half *)dst)[i] = __float2half_rn(src[i]);
    else
      ((float *)dst)[i] = src[i];
  }
}

/* QSGD dequantization with the scale of each output element's input coordinate (mode: the
 * collective; as exec/agree.c's in_coord). Same arithmetic as the host: code * scale / s in double. */
__global__ static void k_dequant_qsgd(const int32_t *codes, size_t n, const float *scales, uint32_t bucket, double s,
                                      int coll, size_t count, size_t me, float *y) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
    size_t c = coll == NCCLZ_REDUCESCATTER ? me * count + i
               : coll == NCCLZ_ALLGATHER   ? i % count
               : coll == NCCLZ_ALLTOALL    ? me * count + i % count
                                           : i;
    y[i] = (float)((double)codes[i] * (double)scales[c / bucket] / s);
  }
}

/* Agreement scan. Order-preserving uint keys let atomicMin/Max work on floats. Written by hand,
 * not cub::DeviceReduce: five results (two counts, min, max, max |x|) in one pass over the input
 * into a struct that the next kernel reads on the same stream, with no temporary storage to size
 * and no extra launch per call; the warp step is the shuffle tree CUB's WarpReduce also uses. */
__device__ static unsigned f_key(float f) {
  unsigned b = __float_as_uint(f);
  return (b & 0x80000000u) ? ~b : b | 0x80000000u;
}
__device__ static float key_f(unsigned k) { return __uint_as_float((k & 0x80000000u) ? k & 0x7fffffffu : ~k); }

struct ScanOut {
  unsigned long long nonfinite, huge;
  unsigned kmin, kmax, kabs;
};

__global__ static void k_scan(const float *x, size_t n, int eb, int has_fill, float fill, ScanOut *o) {
  unsigned long long nf = 0, hg = 0;
  unsigned kmin = 0xffffffffu, kmax = 0, kabs = 0;
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
    float f = x[i];
    if (!isfinite(f)) {
      nf++;
      continue;
    }
    if (eb && has_fill && f == fill) continue;
    if (eb && fabsf(f) >= NCCLZ_EB_HUGE_VALUE) hg++;
    unsigned k = f_key(f);
    kmin = min(kmin, k);
    kmax = max(kmax, k);
    kabs = max(kabs, __float_as_uint(fabsf(f)));
  }
  for (int d = 16; d; d >>= 1) {
    nf += __shfl_down_sync(0xffffffffu, nf, d);
    hg += __shfl_down_sync(0xffffffffu, hg, d);
    kmin = min(kmin, __shfl_down_sync(0xffffffffu, kmin, d));
    kmax = max(kmax, __shfl_down_sync(0xffffffffu, kmax, d));
    kabs = max(kabs, __shfl_down_sync(0xffffffffu, kabs, d));
  }
  if ((threadIdx.x & 31) == 0) {
    if (nf) atomicAdd(&o->nonfinite, nf);
    if (hg) atomicAdd(&o->huge, hg);
    atomicMin(&o->kmin, kmin);
    atomicMax(&o->kmax, kmax);
    atomicMax(&o->kabs, kabs);
  }
}

__global__ static void k_agree_fill(const ScanOut *o, int has_input, double *v) {
  int any = has_input && o->kmax != 0;
  v[V_NONFINITE] = has_input ? (double)o->nonfinite : 0.0;
  v[V_HUGE] = has_input ? (double)o->huge : 0.0;
  v[V_NEG_MIN] = any ? -(double)key_f(o->kmin) : -HUGE_VAL;
  v[V_MAX] = any ? (double)key_f(o->kmax) : -HUGE_VAL;
  v[V_MAXABS] = any ? (double)__uint_as_float(o->kabs) : 0.0;
}

/* ------------------------------------------------------------ agreement (rules in exec/call_rules.c) */

static int contributions(const grun *r) { return ncclzCollContributions(r->coll, r->c->nranks); }

static ncclzStatus derive_eb(grun *r, const double *v) {
  ncclzStatus st = ncclz_exec_derive_eb(&r->c->cfg, r->dt, contributions(r), v, &r->qp, &r->st->error_bound);
  if (st == NCCLZ_OK) r->st->quant_bound = r->qp.abs_eb;
  return st;
}

static uint64_t call_fingerprint(const grun *r) {
  uint64_t v[5] = {(uint64_t)r->coll, (uint64_t)r->count, (uint64_t)r->dt,
                   (uint64_t)(r->coll == NCCLZ_BROADCAST ? r->root : 0), ncclzConfigFingerprint(&r->c->cfg)};
  return ncclzFnv1a((const uint8_t *)v, sizeof v) * 0x9E3779B97F4A7C15ull ^ v[4];
}

/* The float view of the input (f32: the user's buffer itself). */
ncclzStatus input_floats(grun *r, const void *sendbuff, const float **x) {
  *x = nullptr;
  if (!r->has_input || !r->n_in) return NCCLZ_OK;
  if (r->dt == NCCLZ_DTYPE_F32) {
    *x = (const float *)sendbuff;
    return NCCLZ_OK;
  }
  TRY(ensure(&r->c->xf, r->n_in * 4));
  k_to_float<<<grid_for(r->n_in), 256, 0, r->stream>>>(sendbuff, r->dt, r->n_in, (float *)r->c->xf.p);
  CU(cudaGetLastError());
  *x = (const float *)r->c->xf.p;
  return NCCLZ_OK;
}

/* Scan + local QSGD scales, one ncclAllReduce(max) of the small vector, the checks that every
 * rank makes identically, then the shared scales. */
ncclzStatus agree(grun *r, const float *x) {
  ncclzComm *c = r->c;
  const ncclzQuantSpec *q = &c->cfg.quant;
  TRY(ensure(&c->scan, sizeof(ScanOut)));
  TRY(ensure(&c->agree, V_HEAD * sizeof(double)));
  TRY(ensure_host(&c->host_small, 2 * V_HEAD * sizeof(double)));
  double *hv = (double *)c->host_small.p;
  uint64_t fp = call_fingerprint(r);
  hv[V_FP_HI] = (double)(fp >> 32);
  hv[V_FP_LO] = (double)(fp & 0xffffffffu);
  hv[V_NFP_HI] = -hv[V_FP_HI];
  hv[V_NFP_LO] = -hv[V_FP_LO];
  ScanOut init = {0, 0, 0xffffffffu, 0, 0};
  CU(cudaMemcpyAsync(c->scan.p, &init, sizeof init, cudaMemcpyHostToDevice, r->stream));
  if (x && r->quantized)
    k_scan<<<grid_for(r->n_in), 256, 0, r->stream>>>(x, r->n_in, q->kind == NCCLZ_QUANT_EB, q->has_fill,
                                                     q->fill_value, (ScanOut *)c->scan.p);
  CU(cudaMemcpyAsync(c->agree.p, hv, 4 * sizeof(double), cudaMemcpyHostToDevice, r->stream));
  k_agree_fill<<<1, 1, 0, r->stream>>>((const ScanOut *)c->scan.p, x != nullptr && r->quantized, (double *)c->agree.p);
  CU(cudaGetLastError());
  NC(ncclAllReduce(c->agree.p, c->agree.p, V_HEAD, ncclDouble, ncclMax, c->nccl, r->stream));
  double *v = hv + V_HEAD;
  CU(cudaMemcpyAsync(v, c->agree.p, V_HEAD * sizeof(double), cudaMemcpyDeviceToHost, r->stream));
  CU(cudaStreamSynchronize(r->stream));
  if (v[V_FP_HI] != -v[V_NFP_HI] || v[V_FP_LO] != -v[V_NFP_LO])
    return ncclzSetError(NCCLZ_ERR_ARG, "ranks disagree on the call or the config (collective %s, count %zu, dtype %s, "
                                        "root, quantizer, coder policy, chunk size or profile)",
                         ncclzCollectiveName(r->coll), r->count, ncclzDtypeName(r->dt));
  if (v[V_NONFINITE] > 0)
    return ncclzSetError(NCCLZ_ERR_NONFINITE, "NaN or Inf in the input of a quantized collective (%.0f on one rank)",
                         v[V_NONFINITE]);
  if (v[V_HUGE] > 0)
    return ncclzSetError(NCCLZ_ERR_RANGE, "%.0f values with |x| >= %g: fill values? give fill=V in the quantizer spec",
                         v[V_HUGE], (double)NCCLZ_EB_HUGE_VALUE);
  r->gmax = v[V_MAXABS];
  if (r->qp.kind == NCCLZ_QUANT_EB) return derive_eb(r, v);
  if (r->qp.kind == NCCLZ_QUANT_QSGD && r->n_scales) {
    ncclz_exec_derive_qsgd(&r->qp, r->dt, contributions(r), v[V_MAXABS], &r->st->quant_bound, &r->st->error_bound);
    NC(ncclAllReduce(c->scales.p, c->scales.p, r->n_scales, ncclFloat32, ncclMax, c->nccl, r->stream));
  }
  return NCCLZ_OK;
}

/* Quantization once, into the code cells (quant none: float cells). */
ncclzStatus quantize(grun *r, const void *sendbuff, const float *x) {
  if (!r->has_input || !r->n_in) return NCCLZ_OK;
  if (!r->quantized) {
    if (r->dt == NCCLZ_DTYPE_F32)
      CU(cudaMemcpyAsync(r->in, sendbuff, r->n_in * 4, cudaMemcpyDeviceToDevice, r->stream));
    else
      k_to_float<<<grid_for(r->n_in), 256, 0, r->stream>>>(sendbuff, r->dt, r->n_in, (float *)r->in);
    CU(cudaGetLastError());
    return NCCLZ_OK;
  }
  if (r->qp.kind == NCCLZ_QUANT_QSGD)
    return ncclzCudaQuantizeQsgd(&r->qp, x, r->n_in, (const float *)r->c->scales.p, r->in, r->stream);
  TRY(ensure(&r->c->qstats, sizeof(ncclzCudaQuantStats)));
  CU(cudaMemsetAsync(r->c->qstats.p, 0, sizeof(ncclzCudaQuantStats), r->stream));
  /* the bound is resolved on the host (eb_is_rel 0), and every Lorenzo forward runs in one pass
   * from x: no workspace */
  return ncclzCudaQuantizeEB(&r->qp, 0, 0, x, r->n_in, r->in, (ncclzCudaQuantStats *)r->c->qstats.p, nullptr, 0,
                             r->stream);
}

/* ------------------------------------------------------------ dequantization */

/* Output cells -> recvbuff in the call's dtype (dequantization once, at the end). */
ncclzStatus finish(grun *r, void *recvbuff) {
  ncclzComm *c = r->c;
  size_t n = r->n_out;
  if (!n) return NCCLZ_OK;
  float *y = (float *)recvbuff;
  if (r->dt != NCCLZ_DTYPE_F32) {
    TRY(ensure(&c->yf, n * 4));
    y = (float *)c->yf.p;
  }
  if (!r->quantized) {
    CU(cudaMemcpyAsync(y, r->out, n * 4, cudaMemcpyDeviceToDevice, r->stream));
  } else if (r->qp.kind == NCCLZ_QUANT_QSGD) {
    double s = ncclzQsgdLevels(&r->qp);
    k_dequant_qsgd<<<grid_for(n), 256, 0, r->stream>>>(r->out, n, (const float *)c->scales.p, r->qp.qsgd_bucket, s,
                                                       r->coll, r->count, (size_t)c->rank, y);
  } else {
    TRY(ensure(&c->qws, ncclzCudaQuantWorkspaceSize(n)));
    TRY(ncclzCudaDequantizeEB(&r->qp, nullptr, r->out, n, y, c->qws.p, c->qws.cap, r->stream));
  }
  if (r->dt != NCCLZ_DTYPE_F32) k_from_float<<<grid_for(n), 256, 0, r->stream>>>(y, n, r->dt, recvbuff);
  CU(cudaGetLastError());
  return NCCLZ_OK;
}

/* ------------------------------------------------------------ auto: one decision per signature */

decision *find_decision(ncclzComm *c, ncclzCollective coll, size_t count, ncclzDtype dt) {
  for (decision &d : c->decisions)
    if (d.coll == (int)coll && d.count == count && d.dtype == (int)dt) return &d;
  return nullptr;
}

/* The REA config of this call's frames: the communicator's, with the data's class and the step's
 * chunks as one pipeline (a ring of many ranks sends one chunk a step, whose codec time nothing
 * hides, where two ranks' steps stream up to max_chunks frames). */
ncclzReaConfig call_rea_config(const grun *r, int link) {
  /* a hop inside a node plans with NVLink costs where the config says where the nodes are (the
   * host engine's rule), every other one with the config's hint */
  ncclzReaConfig rc = r->c->cfg.ranks_per_node > 0 && link == NCCLZ_LINK_INTRA ? r->c->rea_intra : r->c->rea;
  rc.data_class = ncclzDataClassOf(r->quantized ? &r->qp : nullptr);
  rc.pipeline_frames = (double)r->s.nchunks;
  return rc;
}

ncclzStatus ensure_planner(ncclzComm *c) {
  return c->planner ? NCCLZ_OK : ncclzReaGpuPlannerCreate(&c->profile, &c->planner);
}

/* Sends of link class `link` that move data on this rank. */
static size_t link_units(const grun *r, int link) {
  size_t k = 0;
  for (size_t u = 0; u < r->ul.nunits; u++) {
    const ncclzUnit &un = r->ul.units[u];
    k += un.send >= 0 && un.slen && r->s.ops[un.send].link == link;
  }
  return k;
}

/* REA for the hops of one link class on n symbols of this rank's first chunk: the coder it plans
 * and how much the rank wants it (0: its gain does not pay for the call, ncclzReaCallWorthIt). */
static ncclzStatus plan_link(grun *r, int link, size_t units, const int32_t *sym, size_t n, ncclzCoder *coder,
                             double *want) {
  ncclzComm *c = r->c;
  const ncclzReaConfig rc = call_rea_config(r, link);
  ncclzFrameDesc desc = {r->dt, r->quantized ? &r->qp : nullptr, nullptr, 0, c->cfg.coder_params};
  ncclzReaResult res;
  TRY(ncclzReaGpuPlanLaunch(c->planner, &rc, sym, n, (uint32_t)n, &desc, r->slot, r->stream, nullptr, nullptr));
  TRY(ncclzReaGpuPlanResults(c->planner, &res, 1));
  *coder = res.planned;
  /* A frame's gain must also pay for the call's interface, the host's time per unit and the
   * pipeline's fill, which the plain collective does not spend (1 MiB over the socket: 0.23-0.63x
   * of plain without). */
  double call_bytes = (double)std::max(r->n_in, r->n_out) * (double)r->ds; /* nccl-tests' size */
  ncclzReaCall call = {call_bytes, (double)units, res.cand.frame_raw_bytes, rc.data_class, rc.pipeline_frames};
  *want = ncclzReaCallWorthIt(&c->profile, rc.hint, &res.decision, *coder, &call);
  return NCCLZ_OK;
}

/* REA on this rank's first chunk of codes (a whole frame of the real size), planned on the device
 * where the codes are (the device selector: one frame's cluster and a read-back of its decision,
 * where the host path read back the whole chunk first), once per link class its sends use (NVLink
 * hops with NVLink costs where the nodes are known), then the vote. */
ncclzStatus decide(grun *r, decision *d) {
  ncclzComm *c = r->c;
  double want[2] = {0, 0};
  ncclzCoder coder[2] = {NCCLZ_CODER_RAW, NCCLZ_CODER_RAW};
  size_t n = std::min(r->max_chunk, r->n_in);
  if (r->has_input && n) {
    const int32_t *sym = r->in;
    if (!r->quantized && r->dt != NCCLZ_DTYPE_F32) { /* the symbols the coder will see */
      TRY(cells_to_symbols(r, (const float *)r->in, n, (int32_t *)c->esym.p, r->stream));
      sym = (const int32_t *)c->esym.p;
    }
    TRY(ensure_planner(c));
    size_t units[2] = {link_units(r, NCCLZ_LINK_INTRA), link_units(r, NCCLZ_LINK_NET)};
    for (int link = 0; link < 2; link++) /* a rank that sends nothing still plans its hint's class */
      if (units[link] || (link == NCCLZ_LINK_NET && !units[NCCLZ_LINK_INTRA]))
        TRY(plan_link(r, link, units[link], sym, n, &coder[link], &want[link]));
  }
  TRY(c->t->allreduce_max(c->t, want, 2));
  const int bypass = want[0] == 0 && want[1] == 0;
  /* Only the vote, which every rank holds, sets the gap: each rank's own coder may differ, and
   * ranks that decided at different calls would wait on each other's vote. */
  int kept = d->calls > 0 && d->bypass == bypass;
  d->gap = kept ? std::min<uint64_t>(2 * d->gap, NCCLZ_REPLAN_MAX) : NCCLZ_REPLAN;
  d->next_plan = d->calls + d->gap;
  d->bypass = bypass;
  d->coder[0] = coder[0];
  d->coder[1] = coder[1];
  return NCCLZ_OK;
}

/* ------------------------------------------------------------ auto: the (algorithm, coder) pair */

/* This rank's part of the pair's agreement: the sample window's pieces of its cells, copied to a
 * host array of the whole input (only they are read), as the coders see them (quant none bf16/f16:
 * the dtype's bit patterns), sampled as the host engine does (ncclz_exec_sample_wire). */
static ncclzStatus sample_wire(grun *r, double *w) {
  memset(w, 0, PAIR_SLOTS * sizeof *w);
  if (!r->has_input || !r->n_in) return NCCLZ_OK;
  const ncclzQuantParams *qp = r->quantized ? &r->qp : nullptr;
  uint64_t start[512], len[512];
  uint32_t np = ncclz_exec_sample_pieces(&r->c->cfg, qp, r->n_in, start, len, 512);
  /* malloc, not a vector: the pages outside the pieces are never touched (a 64 MiB call's array
   * costs the window, not a fill of the whole) */
  int32_t *sym = (int32_t *)malloc(r->n_in * 4);
  if (!sym) return ncclzSetError(NCCLZ_ERR_NOMEM, "auto pair: sample of %zu symbols", r->n_in);
  ncclzStatus st = NCCLZ_OK;
  for (uint32_t i = 0; i < np && !st; i++)
    if (cudaMemcpyAsync(sym + start[i], r->in + start[i], len[i] * 4, cudaMemcpyDeviceToHost, r->stream))
      st = ncclzSetError(NCCLZ_ERR_CUDA, "auto pair: copy of the sample");
  if (!st && cudaStreamSynchronize(r->stream)) st = ncclzSetError(NCCLZ_ERR_CUDA, "auto pair: copy of the sample");
  std::vector<uint16_t> h;
  for (uint32_t i = 0; i < np && !st && !r->quantized && r->dt != NCCLZ_DTYPE_F32; i++) {
    h.resize(len[i]);
    ncclzFromFloat((const float *)sym + start[i], len[i], r->dt, h.data());
    for (uint64_t k = 0; k < len[i]; k++) sym[start[i] + k] = h[k];
  }
  if (!st) ncclz_exec_sample_wire(&r->c->cfg, qp, sym, r->n_in, r->ds, w);
  free(sym);
  return st;
}

/* The schedule, units and buffers of the chosen pair (the cells keep their codes: their size does
 * not depend on the schedule). */
static ncclzStatus rebuild(grun *r, ncclzAlgorithm algo) {
  ncclzConfig cfg = r->c->cfg;
  cfg.algorithm = algo;
  cfg.policy = r->policy; /* a chain's chunks */
  ncclzScheduleSpec sp;
  ncclz_exec_spec(&cfg, r->coll, r->count, r->c->nranks, r->root, r->ds, &sp);
  ncclzUnitListFree(&r->ul);
  ncclzScheduleFree(&r->s);
  if (ncclzScheduleBuildSpec(&sp, r->c->rank, &r->s))
    return ncclzSetError(NCCLZ_ERR_NOMEM, "schedule of %s", ncclzCollectiveName(r->coll));
  TRY(build_units(r));
  return alloc_call(r);
}

ncclzStatus choose_pair(grun *r, int *plain) {
  ncclzComm *c = r->c;
  *plain = 0;
  r->st->pair_auto = 1;
  if (c->cfg.policy == NCCLZ_POLICY_OFF || c->cfg.policy == NCCLZ_POLICY_RAW) return NCCLZ_OK;
  double w[PAIR_SLOTS];
  if (sample_wire(r, w)) w[PAIR_FAILED] = 1; /* still agree, so that no rank waits */
  ncclzChoice ch;
  TRY(ncclz_exec_agree_pair(&c->cfg, c->t, r->coll, r->count, r->ds, w, r->st, &ch));
  r->policy = ncclz_exec_choice_policy(ch.coder);
  if (r->policy == NCCLZ_POLICY_OFF) { /* NCCL's own collective on the floats */
    if (r->quantized) r->st->error_bound = ncclz_exec_plain_bound(r->dt, contributions(r), r->gmax);
    r->st->quant_bound = 0;
    *plain = 1;
    return NCCLZ_OK;
  }
  if (r->policy != NCCLZ_POLICY_AUTO) r->coder[0] = r->coder[1] = ncclz_exec_policy_coder(r->policy);
  int again = ncclz_exec_pair_rebuilds(&c->cfg, ch.algorithm, r->policy, r->coll, r->count, c->nranks, r->root, r->ds, &r->s);
  return again ? rebuild(r, ch.algorithm) : NCCLZ_OK;
}
