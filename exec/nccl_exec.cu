/* The NCCL backend of the executor: the schedule/ op lists on GPUs, with NCCL point-to-point.
 *
 * One call, on one rank:
 *  1. agreement: a scan kernel (non-finite count, range, max |x|) and, for QSGD, the local bucket
 *     scales; one small ncclAllReduce(max) of [call fingerprint, counts, range] (a mismatched call
 *     or NaN fails on every rank, nobody hangs), then ncclAllReduce(max) of the QSGD scales;
 *  2. quantization once, on the user stream, into int32 code cells (quant none: float cells);
 *  3. the op list of the call's schedule (the host engine's spec: the config's algorithm, channels
 *     and node size), unit by unit (ncclzScheduleUnits: a send and the receive of its (step, chunk)
 *     right after it, or a receive alone), pipelined over internal streams:
 *       s_enc : encode unit u+1 into send bank (u+1)%banks (waits: that bank's last send, every
 *               receive up to the dep)
 *       s_lane[tag % lanes]: ncclGroupStart; ncclSend; ncclRecv; ncclGroupEnd of unit u, on the
 *               lane's communicator (four lanes by default: lanes 1.. are split from the first,
 *               so unit u+1's transfer starts while unit u's runs; exec/nccl_comm.cu, make_lanes)
 *       s_dec[tag % lanes]: decode unit u from recv bank u%banks, add the codes (reduce, in list
 *               order: after the latest earlier reducing unit) or store them
 *     so chunk k+1 is encoded while chunk k is on the wire and chunk k is decoded while k+1
 *     arrives (ping-pong banks: a bank is reused only after the event of its last user);
 *  4. dequantization once, on the user stream; then one synchronisation and the check of the
 *     decoders' status words (a corrupt frame is an error of this call).
 *
 * Size protocol: the control lane of the host engine (exec/engine.c explains the choice). The
 * encoder writes the frame into a bank; its 64-byte header is copied to pinned host memory and
 * the host waits for that copy only (an event of s_enc), then sends the header over the
 * ncclzTransport control lane and posts ncclSend(payload, payload_bytes). The receiver gets the
 * header from the lane, copies it in front of the bank (the decoder wants whole frames) and posts
 * ncclRecv(payload_bytes). Wire bytes = the frame bytes exactly (1.00x: header on the lane, payload
 * on NCCL). The lane never waits for NCCL and NCCL never waits for the lane's round trip: the
 * header of unit u+1 leaves as soon as its encode is done, while unit u's payload is in flight,
 * so the receive of u+1 is queued on its lane before u finishes. The cost that remains (the
 * "bubble") is the host's wait for the encode of the first chunk and for headers whose encode
 * lags the wire; the trace shows it as gaps between NCCL intervals.
 *
 * Auto (REA): one decision per message signature (collective, count, dtype) by default. The
 * first call of a signature (and later ones, NCCLZ_REPLAN calls apart at first, the
 * gap doubling up to NCCLZ_REPLAN_MAX while the vote stays the same) plans its first chunk of
 * codes on the device, a frame of the real chunk size, with the REA device selector
 * (ncclzReaGpuPlanLaunch: the decisions of ncclzReaPlan, bit for bit), reads back that decision
 * (not the chunk), and the ranks agree (allreduce max over the lane) whether anybody wants a coder (a rank wants one when
 * its frame's gain, over the call's units, pays for the call's interface and the host's time per
 * unit: ncclzReaCallWorthIt). If nobody does, the
 * message goes as the plain NCCL collective on the original floats ("bypass": RAW frames of int32
 * codes cannot beat it, and it is exact); otherwise every rank encodes with its own planned coder
 * (frames are self-describing; decoders accept every coder), and the encoder post-checks every
 * frame on the device (ncclzCudaBatch.fallback_bytes): one that gains too little goes as RAW.
 * With ncclzConfig.rea_per_frame every frame is planned on the device instead, on the encode
 * stream ahead of its encode, which reads the frame's coder from device memory (plan_frame in
 * nccl_pipeline.cu): nothing comes back to the host before the encode. */

/* This file: the entry points and one call from start to end. The rest of the backend:
 * nccl_comm.cu (communicator, buffers), nccl_iface.cu (agreement, quantization, auto decision),
 * nccl_pipeline.cu (units and streams), nccl_trace.cu (trace events); nccl_internal.cuh. */
#include "nccl_internal.cuh"

double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}
static double wall_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (double)ts.tv_sec * 1e6 + 1e-3 * (double)ts.tv_nsec;
}

/* ------------------------------------------------------------ entry points */

static ncclzStatus dtype_of(ncclDataType_t t, ncclzDtype *dt) {
  switch (t) {
  case ncclFloat32: *dt = NCCLZ_DTYPE_F32; return NCCLZ_OK;
  case ncclBfloat16: *dt = NCCLZ_DTYPE_BF16; return NCCLZ_OK;
  case ncclFloat16: *dt = NCCLZ_DTYPE_F16; return NCCLZ_OK;
  default: return ncclzSetError(NCCLZ_ERR_ARG, "datatype %d: ncclz takes ncclFloat32, ncclBfloat16, ncclFloat16", (int)t);
  }
}

/* The plain NCCL collective: policy off, and auto when REA keeps everything RAW. */
static ncclzStatus run_plain(ncclzComm *c, ncclzCollective coll, const void *sb, void *rb, size_t count,
                             ncclDataType_t t, ncclRedOp_t op, int root, cudaStream_t s) {
  switch (coll) {
  case NCCLZ_ALLREDUCE: NC(ncclAllReduce(sb, rb, count, t, op, c->nccl, s)); break;
  case NCCLZ_REDUCESCATTER: NC(ncclReduceScatter(sb, rb, count, t, op, c->nccl, s)); break;
  case NCCLZ_ALLGATHER: NC(ncclAllGather(sb, rb, count, t, c->nccl, s)); break;
  case NCCLZ_ALLTOALL: NC(ncclAlltoAll(sb, rb, count, t, c->nccl, s)); break;
  default: NC(ncclBroadcast(sb, rb, count, t, root, c->nccl, s)); break;
  }
  return NCCLZ_OK;
}

/* Bytes the plain collective sends from this rank (sum of the schedule's sends). */
static uint64_t plain_bytes(const ncclzSchedule *s, size_t count, size_t ds) {
  uint64_t b = 0;
  for (size_t i = 0; i < s->nops; i++) {
    if (s->ops[i].kind != NCCLZ_OP_SEND) continue;
    size_t off, len;
    ncclzScheduleOpRange(s, count, &s->ops[i], &off, &len);
    b += len * ds;
  }
  return b;
}

/* Quantized or lossless-framed call. d: the auto decision of this signature (NULL otherwise);
 * *bypassed: REA kept everything RAW, so the caller runs the plain collective instead. */
static ncclzStatus run_framed(grun *r, const void *sendbuff, void *recvbuff, decision *d, int *bypassed) {
  ncclzComm *c = r->c;
  TRY(alloc_call(r));
  r->t_start_wall = wall_us(); /* the host clock at the first trace event (ranks of a host line up) */
  trace_iface(r, 0);
  const float *x = nullptr;
  TRY(input_floats(r, sendbuff, &x));
  if (r->qp.kind == NCCLZ_QUANT_QSGD && r->n_scales) {
    if (x)
      TRY(ncclzCudaQsgdScales(&r->qp, x, r->n_in, (float *)c->scales.p, r->stream));
    else
      CU(cudaMemsetAsync(c->scales.p, 0, r->n_scales * 4, r->stream));
  }
  TRY(agree(r, x));
  TRY(quantize(r, sendbuff, x));
  if (ncclz_exec_pair_auto(&c->cfg, r->coll, r->count, c->nranks)) {
    TRY(choose_pair(r, bypassed));
    if (*bypassed) return NCCLZ_OK;
  }
  if (d && r->policy == NCCLZ_POLICY_AUTO) {
    /* >=: a plan due on a call the auto pair gave another coder comes at the next REA call */
    if (d->calls >= d->next_plan) TRY(decide(r, d));
    r->coder[0] = d->coder[0];
    r->coder[1] = d->coder[1];
    if (d->bypass) {
      *bypassed = 1;
      return NCCLZ_OK;
    }
  }
  TRY(run_copies(r));
  trace_iface(r, 1);
  double t_issue = now_s();
  TRY(run_units(r));
  double own = now_s() - t_issue - r->st->t_encode - r->st->t_wait_ctrl; /* both measured inside run_units */
  r->st->t_unit_host = !r->ul.nunits || own < 0 ? 0 : own / (double)r->ul.nunits;
  trace_iface(r, 2);
  TRY(finish(r, recvbuff));
  trace_iface(r, 3);
  CU(cudaStreamSynchronize(r->stream));
  TRY(check_status(r));
  if (c->trace) summarize_trace(r);
  return NCCLZ_OK;
}

/* The call's schedule spec: the host engine's (ncclz_exec_spec: the config's algorithm, channels and
 * node size, chunks on the largest op range). */
static void call_spec(const ncclzComm *c, ncclzCollective coll, size_t count, int root, size_t ds,
                      ncclzScheduleSpec *sp) {
  ncclz_exec_spec(&c->cfg, coll, count, c->nranks, root, ds, sp);
}

static ncclzStatus check_call(const ncclzComm *c, ncclzCollective coll, size_t count, int root, ncclRedOp_t op,
                              size_t ds) {
  if (c->broken) return ncclzSetError(NCCLZ_ERR_IO, "communicator was aborted by an earlier error");
  if (root < 0 || root >= c->nranks) return ncclzSetError(NCCLZ_ERR_ARG, "root %d of %d ranks", root, c->nranks);
  ncclzScheduleSpec sp; /* a schedule that cannot run the call: the host engine's one line */
  char why[200];
  call_spec(c, coll, 0, root, ds, &sp);
  if (ncclzScheduleCheck(&sp, why, sizeof why)) return ncclzSetError(NCCLZ_ERR_ARG, "config algorithm: %s", why);
  if (count > UINT32_MAX / 2) return ncclzSetError(NCCLZ_ERR_ARG, "count %zu too large", count);
  if (c->cfg.policy != NCCLZ_POLICY_OFF && op != ncclSum)
    return ncclzSetError(NCCLZ_ERR_ARG, "compressed collectives reduce with ncclSum only");
  const ncclzQuantSpec *q = &c->cfg.quant;
  if (q->kind == NCCLZ_QUANT_EB && q->lorenzo) {
    if (coll != NCCLZ_ALLREDUCE && coll != NCCLZ_BROADCAST)
      return ncclzSetError(NCCLZ_ERR_ARG, "Lorenzo needs a whole-array result (allreduce or broadcast)");
    size_t prod = 1;
    for (int i = 0; i < c->cfg.ndims; i++) prod *= c->cfg.dims[i];
    if (c->cfg.ndims < 1 || prod != count)
      return ncclzSetError(NCCLZ_ERR_ARG, "Lorenzo dims must multiply to the count %zu", count);
  }
  return NCCLZ_OK;
}

static ncclzStatus plain_call(ncclzComm *c, ncclzCollective coll, const void *sb, void *rb, size_t count,
                              ncclDataType_t t, ncclRedOp_t op, int root, cudaStream_t s, const ncclzSchedule *sch,
                              size_t ds) {
  TRY(run_plain(c, coll, sb, rb, count, t, op, root, s));
  c->last.raw_bytes = c->last.frame_bytes = c->last.wire_bytes = plain_bytes(sch, count, ds);
  c->events.clear();
  return NCCLZ_OK;
}

/* An auto call that REA keeps on the plain collective and that does not re-decide: straight to
 * NCCL, without the schedule, the units or the frame state. On NVLink every call of a 1 MiB
 * AllReduce (14 us) goes this way, and the host work before it is all ncclz adds. */
static ncclzStatus run_bypassed(ncclzComm *c, decision *d, ncclzCollective coll, const void *sb, void *rb,
                                size_t count, ncclDataType_t t, ncclRedOp_t op, int root, cudaStream_t stream) {
  memset(&c->last, 0, sizeof c->last);
  c->events.clear();
  d->calls++;
  TRY(run_plain(c, coll, sb, rb, count, t, op, root, stream));
  c->last.raw_bytes = c->last.frame_bytes = c->last.wire_bytes = d->plain_bytes;
  return NCCLZ_OK;
}

static ncclzStatus run_call(ncclzComm *c, ncclzCollective coll, const void *sb, void *rb, size_t count,
                            ncclDataType_t t, ncclRedOp_t op, int root, cudaStream_t stream) {
  double t0 = now_s();
  ncclzDtype dt = NCCLZ_DTYPE_F32;
  TRY(dtype_of(t, &dt));
  TRY(check_call(c, coll, count, root, op, ncclzDtypeSize(dt)));
  CU(cudaSetDevice(c->dev));
  decision *d = nullptr;
  if (c->cfg.policy == NCCLZ_POLICY_AUTO) {
    d = find_decision(c, coll, count, dt);
    if (!d) {
      c->decisions.push_back(decision{(int)coll, count, (int)dt, 0, 0, {NCCLZ_CODER_RAW, NCCLZ_CODER_RAW}, 0, 0, 0});
      d = &c->decisions.back();
    }
    /* the auto pair decides every call: no shortcut past its sample */
    if (d->bypass && d->calls != d->next_plan && !ncclz_exec_pair_auto(&c->cfg, coll, count, c->nranks)) {
      ncclzStatus st = run_bypassed(c, d, coll, sb, rb, count, t, op, root, stream);
      c->last.t_total = now_s() - t0;
      return st;
    }
  }
  memset(&c->last, 0, sizeof c->last);
  grun r;
  r.ul = ncclzUnitList{};
  r.c = c;
  r.coll = coll;
  r.dt = dt;
  r.ds = ncclzDtypeSize(dt);
  r.count = count;
  r.root = root;
  r.n_in = ncclzCollInCount(coll, count, c->nranks);
  r.n_out = ncclzCollOutCount(coll, count, c->nranks);
  r.max_chunk = 0;
  r.n_scales = 0;
  r.quantized = c->cfg.quant.kind != NCCLZ_QUANT_NONE;
  r.has_input = coll != NCCLZ_BROADCAST || c->rank == root;
  r.coder[0] = r.coder[1] = ncclz_exec_policy_coder(c->cfg.policy);
  r.policy = c->cfg.policy;
  r.gmax = 0;
  r.st = &c->last;
  r.stream = stream;
  ncclzScheduleSpec sp;
  call_spec(c, coll, count, root, r.ds, &sp);
  if (ncclzScheduleBuildSpec(&sp, c->rank, &r.s))
    return ncclzSetError(NCCLZ_ERR_NOMEM, "schedule of %s", ncclzCollectiveName(coll));
  if (d) d->plain_bytes = plain_bytes(&r.s, count, r.ds);
  ncclzStatus st;
  int bypassed = 0;
  if (c->cfg.policy == NCCLZ_POLICY_OFF) {
    bypassed = 1;
  } else {
    st = build_units(&r);
    init_qparams(&r);
    if (!st) st = run_framed(&r, sb, rb, d, &bypassed);
    if (st) {
      c->broken = 1; /* peers may wait on this rank's headers: wake them with the error */
      c->t->abort(c->t, ncclzLastError());
      ncclzUnitListFree(&r.ul);
      ncclzScheduleFree(&r.s);
      return st;
    }
  }
  if (d) d->calls++;
  c->last.algorithm = r.s.algo;
  c->last.policy = bypassed ? NCCLZ_POLICY_OFF : r.policy;
  st = bypassed ? plain_call(c, coll, sb, rb, count, t, op, root, stream, &r.s, r.ds) : NCCLZ_OK;
  if (!bypassed) c->last.wire_bytes = c->last.frame_bytes; /* 64 B on the lane + payload on NCCL */
  ncclzUnitListFree(&r.ul);
  ncclzScheduleFree(&r.s);
  c->last.t_total = now_s() - t0;
  return st;
}

/* ------------------------------------------------------------ groups */

struct queued {
  ncclzComm *c;
  ncclzCollective coll;
  const void *sb;
  void *rb;
  size_t count;
  ncclDataType_t t;
  ncclRedOp_t op;
  int root;
  cudaStream_t s;
};
static thread_local int group_depth = 0;
static thread_local std::vector<queued> *group_queue = nullptr;

ncclzStatus ncclzGroupStart(void) {
  if (!group_queue) group_queue = new std::vector<queued>();
  group_depth++;
  return NCCLZ_OK;
}

ncclzStatus ncclzGroupEnd(void) {
  if (group_depth <= 0) return ncclzSetError(NCCLZ_ERR_ARG, "ncclzGroupEnd without ncclzGroupStart");
  if (--group_depth) return NCCLZ_OK;
  std::vector<queued> q;
  q.swap(*group_queue);
  ncclzStatus st = NCCLZ_OK;
  /* Plain calls first, as one NCCL group (NCCL fuses them); then the framed ones in order. */
  NC(ncclGroupStart());
  for (const queued &e : q)
    if (!st && e.c->cfg.policy == NCCLZ_POLICY_OFF)
      st = run_call(e.c, e.coll, e.sb, e.rb, e.count, e.t, e.op, e.root, e.s);
  NC(ncclGroupEnd());
  for (const queued &e : q)
    if (!st && e.c->cfg.policy != NCCLZ_POLICY_OFF)
      st = run_call(e.c, e.coll, e.sb, e.rb, e.count, e.t, e.op, e.root, e.s);
  return st;
}

static ncclzStatus entry(ncclzComm *c, ncclzCollective coll, const void *sb, void *rb, size_t count,
                         ncclDataType_t t, ncclRedOp_t op, int root, cudaStream_t s) {
  if (!c) return ncclzSetError(NCCLZ_ERR_ARG, "NULL ncclz communicator");
  if (group_depth > 0) {
    group_queue->push_back(queued{c, coll, sb, rb, count, t, op, root, s});
    return NCCLZ_OK;
  }
  return run_call(c, coll, sb, rb, count, t, op, root, s);
}

ncclzStatus ncclzAllReduce(const void *sb, void *rb, size_t count, ncclDataType_t t, ncclRedOp_t op, ncclzComm_t c,
                           cudaStream_t s) {
  return entry(c, NCCLZ_ALLREDUCE, sb, rb, count, t, op, 0, s);
}
ncclzStatus ncclzReduceScatter(const void *sb, void *rb, size_t count, ncclDataType_t t, ncclRedOp_t op,
                               ncclzComm_t c, cudaStream_t s) {
  return entry(c, NCCLZ_REDUCESCATTER, sb, rb, count, t, op, 0, s);
}
ncclzStatus ncclzAllGather(const void *sb, void *rb, size_t count, ncclDataType_t t, ncclzComm_t c, cudaStream_t s) {
  return entry(c, NCCLZ_ALLGATHER, sb, rb, count, t, ncclSum, 0, s);
}
ncclzStatus ncclzAlltoAll(const void *sb, void *rb, size_t count, ncclDataType_t t, ncclzComm_t c, cudaStream_t s) {
  return entry(c, NCCLZ_ALLTOALL, sb, rb, count, t, ncclSum, 0, s);
}
ncclzStatus ncclzBroadcast(const void *sb, void *rb, size_t count, ncclDataType_t t, int root, ncclzComm_t c,
                           cudaStream_t s) {
  return entry(c, NCCLZ_BROADCAST, sb, rb, count, t, ncclSum, root, s);
}
