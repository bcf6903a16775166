/* The NCCL backend's per-call pipeline: the schedule's units (ncclzScheduleUnits, the walker the
 * replay shares), the call's buffers, and the units run over s_enc / s_lane[l] / s_dec[l], l = the
 * unit's tag % lanes (encode, header on the control lane, NCCL send/recv on the unit's comm lane,
 * decode on the lane's decode stream). Any schedule of schedule/ runs: multi-block ranges, several
 * receives per step (the tree), sends that need several earlier receives (halving-doubling). */
#include "nccl_internal.cuh"

/* ------------------------------------------------------------ kernels */

/* Quant none, bf16/f16: float cells -> the dtype's bit patterns as symbols (what the host sends). */
__global__ static void k_cells_to_sym(const float *cells, size_t n, int dt, int32_t *sym) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
    unsigned short h = dt == NCCLZ_DTYPE_BF16 ? __bfloat16_as_ushort(__float2bfloat16_rn(cells[i]))
                                              : __half_as_ushort(__float2half_rn(cells[i]));
    sym[i] = h;
  }
}

ncclzStatus cells_to_symbols(const grun *r, const float *cells, size_t n, int32_t *sym, cudaStream_t s) {
  k_cells_to_sym<<<grid_for(n), 256, 0, s>>>(cells, n, r->dt, sym);
  CU(cudaGetLastError());
  return NCCLZ_OK;
}

__device__ static float sym_value(int32_t s, int dt) {
  if (dt == NCCLZ_DTYPE_BF16) return __bfloat162float(__ushort_as_bfloat16((unsigned short)s));
  if (dt == NCCLZ_DTYPE_F16) return __half2float(__ushort_as_half((unsigned short)s));
  return __int_as_float(s);
}

/* Reduction on the codes: quantized cells add as integers (fill absorbs; the agreement keeps sums
 * inside int32), quant none cells add as floats, as NCCL does. */
__global__ static void k_reduce(int32_t *work, const int32_t *sym, size_t n, int quantized, int dt) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
    if (quantized) {
      int32_t a = work[i], b = sym[i];
      work[i] = a == NCCLZ_FILL_CODE || b == NCCLZ_FILL_CODE ? NCCLZ_FILL_CODE : (int32_t)((uint32_t)a + (uint32_t)b);
    } else {
      ((float *)work)[i] += sym_value(sym[i], dt);
    }
  }
}

__global__ static void k_sym_to_cells(const int32_t *sym, size_t n, int dt, float *cells) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
    cells[i] = sym_value(sym[i], dt);
}

/* ------------------------------------------------------------ set-up of one call */

/* The schedule's units (the walker every backend shares), and for each unit and lane the latest
 * unit up to it with a receive that moves data there: a send waits for every receive up to its
 * dep, and lane l's receives finish in order (one decode stream a lane). */
ncclzStatus build_units(grun *r) {
  if (ncclzScheduleUnits(&r->s, r->count, &r->ul))
    return ncclzSetError(NCCLZ_ERR_NOMEM, "units of the %s schedule", ncclzCollectiveName(r->coll));
  const size_t nu = r->ul.nunits, L = (size_t)r->c->lanes;
  r->max_chunk = r->ul.largest;
  r->recv_upto.assign(nu * L, -1);
  for (size_t u = 0; u < nu; u++) {
    for (size_t l = 0; l < L && u; l++) r->recv_upto[u * L + l] = r->recv_upto[(u - 1) * L + l];
    if (r->ul.units[u].recv >= 0 && r->ul.units[u].rlen) r->recv_upto[u * L + (size_t)lane_of(r, u)] = (int32_t)u;
  }
  return NCCLZ_OK;
}

static ncclzCudaBatch make_batch(const grun *r, ncclzCoder coder, size_t n) {
  ncclzCudaBatch b;
  memset(&b, 0, sizeof b);
  b.coder = coder;
  b.params = r->c->cfg.coder_params;
  b.dtype = r->dt;
  b.quant = r->quantized ? &r->qp : nullptr;
  b.n_symbols = n;
  b.frame_symbols = (uint32_t)(n ? n : 1);
  b.side_scales = 0;
  return b;
}

ncclzStatus alloc_call(grun *r) {
  ncclzComm *c = r->c;
  size_t mc = r->max_chunk ? r->max_chunk : 1, ews = 0, dws = 0, slot = mc * 4 + 64;
  for (int k = 0; k < NCCLZ_CODER_COUNT; k++) {
    ncclzCudaBatch b = make_batch(r, (ncclzCoder)k, mc);
    slot = std::max(slot, ncclzCudaFrameSlotBytes(&b));
    ews = std::max(ews, ncclzCudaEncodeWorkspaceSize(&b));
    dws += ncclzCudaDecodeWorkspaceSize(&b); /* mixed coders in one decode: room for all */
  }
  r->slot = (slot + 255) & ~(size_t)255;
  size_t nu = r->ul.nunits + 1, nk = r->ul.nkeep;
  TRY(ensure(&c->cells_in, (r->n_in + 1) * 4));
  if (r->coll != NCCLZ_ALLREDUCE) TRY(ensure(&c->cells_out, (r->n_out + 1) * 4));
  for (int b = 0; b < bank_count(c); b++) TRY(ensure(&c->sbank[b], r->slot));
  TRY(ensure(&c->rbank, (size_t)bank_count(c) * r->slot));
  for (int l = 0; l < c->lanes; l++) TRY(ensure(&c->rsym[l], mc * 4));
  TRY(ensure(&c->esym, mc * 4));
  const size_t ews_cap = c->ews.cap;
  TRY(ensure(&c->ews, ews + 16));
  /* a new encode workspace starts zeroed (on the encode stream, ahead of its first encode): a small
   * frame then encodes in one kernel, as `ncclz codec --device gpu` does (ncclzCudaBatch.ws_zeroed) */
  if (c->ews.cap != ews_cap) CU(cudaMemsetAsync(c->ews.p, 0, c->ews.cap, c->s_enc));
  for (int l = 0; l < c->lanes; l++) TRY(ensure(&c->dws[l], dws + 16));
  TRY(ensure(&c->arena, nk * r->slot + 16));
  TRY(ensure(&c->status, nu * 4));
  TRY(ensure(&c->fbytes, 64));
  TRY(ensure(&c->dcoders, 4 * (size_t)bank_count(c))); /* rea_per_frame's coders (decided later) */
  TRY(ensure_host(&c->hdr_out, nu * 64));
  TRY(ensure_host(&c->hdr_in, nu * 64));
  TRY(ensure_host(&c->host_status, nu * 4));
  if (r->qp.kind == NCCLZ_QUANT_QSGD) TRY(ensure(&c->scales, (r->n_scales + 1) * 4));
  while (c->ev_done.size() < nu) {
    cudaEvent_t e;
    CU(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
    c->ev_done.push_back(e);
  }
  while (c->trace && c->ev_trace.size() < nu * TE_COUNT + 8) {
    cudaEvent_t e;
    CU(cudaEventCreate(&e));
    c->ev_trace.push_back(e);
  }
  CU(cudaMemsetAsync(c->status.p, 0, nu * 4, r->stream));
  r->in = (int32_t *)c->cells_in.p;
  r->work = r->in; /* the cells are our own scratch: reduce-scatter reduces in place too */
  r->out = r->coll == NCCLZ_ALLREDUCE ? r->in : (int32_t *)c->cells_out.p;
  return NCCLZ_OK;
}

void init_qparams(grun *r) {
  ncclz_exec_init_qparams(&r->c->cfg, (uint32_t)r->c->rank, r->n_in, &r->qp);
  if (r->qp.kind == NCCLZ_QUANT_QSGD) r->n_scales = ncclzQsgdNumBuckets(&r->qp, r->n_in);
}

/* ------------------------------------------------------------ the pipeline */

static uint8_t *hdr_out(grun *r, size_t u) { return (uint8_t *)r->c->hdr_out.p + 64 * u; }
static uint8_t *hdr_in(grun *r, size_t u) { return (uint8_t *)r->c->hdr_in.p + 64 * u; }
static void *cell(void *base, size_t i) { return (char *)base + 4 * i; }

/* Where an ENCODE send reads (the schedule's table): the working cells, the output, the input. */
static int32_t *send_source(grun *r, size_t off) {
  switch (ncclzCollEncodeSource(r->coll)) {
  case NCCLZ_BUF_WORK: return (int32_t *)cell(r->work, off);
  case NCCLZ_BUF_OUT: return (int32_t *)cell(r->out, off);
  default: return (int32_t *)cell(r->in, off);
  }
}

/* A stream waits for every receive of units up to u (one decode stream a lane: the lane's latest). */
static ncclzStatus wait_recvs_upto(grun *r, size_t u, cudaStream_t s) {
  const size_t L = (size_t)r->c->lanes;
  for (size_t l = 0; l < L; l++) {
    int32_t v = r->recv_upto[u * L + l];
    if (v >= 0) CU(cudaStreamWaitEvent(s, r->c->ev_done[v], 0));
  }
  return NCCLZ_OK;
}

/* rea_per_frame: the REA device selector plans the n symbols of a frame on s_enc, and the frame's
 * encode batch takes the coder it writes (the bank's word of c->dcoders). */
static ncclzStatus plan_frame(grun *r, const ncclzReaConfig *rc, const int32_t *sym, size_t n, int bank,
                              ncclzCudaBatch *b) {
  ncclzComm *c = r->c;
  TRY(ensure_planner(c));
  uint32_t *coder = (uint32_t *)c->dcoders.p + bank;
  const ncclzFrameDesc desc = {r->dt, r->quantized ? &r->qp : nullptr, nullptr, 0, c->cfg.coder_params};
  TRY(ncclzReaGpuPlanLaunch(c->planner, rc, sym, n, (uint32_t)n, &desc, r->slot, c->s_enc, coder, nullptr));
  b->d_coders = coder;
  return NCCLZ_OK;
}

/* Enqueues the encode of unit u's send (s_enc) into its send bank and the copy of its header. */
static ncclzStatus prepare_send(grun *r, size_t u) {
  if (u >= r->ul.nunits) return NCCLZ_OK;
  const ncclzUnit &un = r->ul.units[u];
  if (un.send < 0 || !un.slen) return NCCLZ_OK;
  const ncclzOp *o = &r->s.ops[un.send];
  if (!(o->action & NCCLZ_ACT_ENCODE)) return NCCLZ_OK;
  ncclzComm *c = r->c;
  const int bank = bank_of(c, u);
  CU(cudaStreamWaitEvent(c->s_enc, c->ev_sent[bank], 0));
  if (o->dep >= 0) TRY(wait_recvs_upto(r, (size_t)r->ul.unit_of_op[o->dep], c->s_enc));
  trace_rec(r, u, TE_ENC0, c->s_enc);
  const int32_t *sym = send_source(r, un.soff);
  if (!r->quantized && r->dt != NCCLZ_DTYPE_F32) {
    TRY(cells_to_symbols(r, (const float *)sym, un.slen, (int32_t *)c->esym.p, c->s_enc));
    sym = (const int32_t *)c->esym.p;
  }
  ncclzCudaBatch b = make_batch(r, r->coder[o->link], un.slen);
  b.ws_zeroed = 1; /* c->ews, zeroed when allocated (alloc_call) */
  /* auto (a framed auto call is one REA did not bypass): the frame's realized size is checked on
   * the device, and a frame that gains too little is rewritten as RAW (Algorithm 1, 5-6); its
   * coder is the one planned on the call's first chunk, or (rea_per_frame) its own, planned here on
   * the encode stream */
  if (r->policy == NCCLZ_POLICY_AUTO) {
    const ncclzReaConfig rc = call_rea_config(r, o->link);
    b.fallback_bytes = ncclzReaFallbackBytes(&rc, un.slen, 0, r->slot);
    if (c->cfg.rea_per_frame) TRY(plan_frame(r, &rc, sym, un.slen, bank, &b));
  }
  TRY(ncclzCudaEncodeBatch(&b, sym, nullptr, (uint8_t *)c->sbank[bank].p, r->slot, (uint32_t *)c->fbytes.p + bank,
                           c->ews.p, c->ews.cap, c->s_enc));
  CU(cudaMemcpyAsync(hdr_out(r, u), c->sbank[bank].p, 64, cudaMemcpyDeviceToHost, c->s_enc));
  trace_rec(r, u, TE_ENC1, c->s_enc);
  CU(cudaEventRecord(c->ev_enc[bank], c->s_enc));
  return NCCLZ_OK;
}

static ncclzStatus parse_header(const grun *r, const uint8_t *h, ncclzFrameHeader *fh) {
  TRY(ncclzFrameHeaderParse(h, SIZE_MAX, fh));
  if (NCCLZ_FRAME_HEADER_BYTES + (size_t)fh->payload_bytes > r->slot)
    return ncclzSetError(NCCLZ_ERR_CORRUPT, "frame header announces %u payload bytes, more than a chunk can take",
                         fh->payload_bytes);
  return NCCLZ_OK;
}

/* The send half of unit u on the host: header over the lane; returns the payload to post. */
static ncclzStatus host_send(grun *r, size_t u, const uint8_t **payload, size_t *plen) {
  const ncclzUnit &un = r->ul.units[u];
  const ncclzOp *o = &r->s.ops[un.send];
  ncclzComm *c = r->c;
  const uint8_t *hdr;
  double t0 = now_s();
  if (o->action & NCCLZ_ACT_ENCODE) {
    CU(cudaEventSynchronize(c->ev_enc[bank_of(c, u)]));
    hdr = hdr_out(r, u);
    *payload = (const uint8_t *)c->sbank[bank_of(c, u)].p + 64;
  } else { /* FORWARD: the frame kept by op dep, unchanged */
    if (o->dep < 0 || r->ul.units[r->ul.unit_of_op[o->dep]].keep < 0)
      return ncclzSetError(NCCLZ_ERR_ARG, "schedule: forward without a kept frame");
    size_t du = (size_t)r->ul.unit_of_op[o->dep];
    hdr = hdr_in(r, du);
    *payload = (const uint8_t *)c->arena.p + r->slot * (size_t)r->ul.units[du].keep + 64;
  }
  r->st->t_encode += now_s() - t0; /* host wait for the encode (the exposed part) */
  ncclzFrameHeader fh;
  TRY(parse_header(r, hdr, &fh));
  *plen = fh.payload_bytes;
  r->st->coder_mix[fh.coder]++;
  r->st->frames++;
  r->st->frame_bytes += 64 + fh.payload_bytes;
  r->st->raw_bytes += un.slen * r->ds;
  return c->t->send(c->t, o->peer, un.tag, NCCLZ_LANE_CTRL, hdr, 64);
}

/* The recv half of unit u on the host: header from the lane, copied in front of its bank. */
static ncclzStatus host_recv(grun *r, size_t u, uint8_t **dest, size_t *plen) {
  const ncclzUnit &un = r->ul.units[u];
  const ncclzOp *o = &r->s.ops[un.recv];
  ncclzComm *c = r->c;
  double t0 = now_s();
  TRY(c->t->recv(c->t, o->peer, un.tag, NCCLZ_LANE_CTRL, hdr_in(r, u), 64));
  r->st->t_wait_ctrl += now_s() - t0;
  ncclzFrameHeader fh;
  TRY(parse_header(r, hdr_in(r, u), &fh));
  if (fh.n_symbols != un.rlen)
    return ncclzSetError(NCCLZ_ERR_CORRUPT, "frame of %u symbols where %zu were due", fh.n_symbols, un.rlen);
  *plen = fh.payload_bytes;
  r->st->chunks_received++;
  if (un.keep >= 0) {
    *dest = (uint8_t *)c->arena.p + r->slot * (size_t)un.keep;
  } else {
    *dest = (uint8_t *)c->rbank.p + r->slot * (size_t)bank_of(c, u);
    CU(cudaStreamWaitEvent(lane_stream(r, u), c->ev_rfree[bank_of(c, u)], 0));
  }
  CU(cudaMemcpyAsync(*dest, hdr_in(r, u), 64, cudaMemcpyHostToDevice, lane_stream(r, u)));
  return NCCLZ_OK;
}

/* A stream waits for the writes that unit un's must follow. */
static ncclzStatus wait_after(grun *r, const ncclzUnit &un, cudaStream_t s) {
  for (uint32_t i = 0; i < un.nafter; i++) CU(cudaStreamWaitEvent(s, r->c->ev_done[r->ul.after[un.after_at + i]], 0));
  return NCCLZ_OK;
}

/* Decode (+ reduce / store) of unit u on its lane's decode stream, once its payload has arrived.
 * Units decode side by side; what they write into the cells waits for the units of its `after`
 * list (the earlier ones that write an overlapping range), so writes to the same elements keep
 * the list's order. */
static ncclzStatus decode_unit(grun *r, size_t u, const uint8_t *frame, size_t plen) {
  const ncclzUnit &un = r->ul.units[u];
  const ncclzOp *o = &r->s.ops[un.recv];
  ncclzComm *c = r->c;
  const int l = lane_of(r, u);
  cudaStream_t sd = c->s_dec[l];
  CU(cudaStreamWaitEvent(sd, c->ev_recvd[bank_of(c, u)], 0));
  trace_rec(r, u, TE_DEC0, sd);
  if (o->action & (NCCLZ_ACT_REDUCE | NCCLZ_ACT_STORE)) {
    const bool reduce = o->action & NCCLZ_ACT_REDUCE, store = o->action & NCCLZ_ACT_STORE;
    size_t skip = 0, olen = 0, oo = ncclzCollOutPart(r->coll, r->s.rank, r->count, un.roff, un.rlen, &skip, &olen);
    /* a store of the whole range decodes straight into the output */
    const bool direct = !reduce && olen == un.rlen && (r->quantized || r->dt == NCCLZ_DTYPE_F32);
    if (direct) TRY(wait_after(r, un, sd));
    int32_t *dst = direct ? (int32_t *)cell(r->out, oo) : (int32_t *)c->rsym[l].p;
    ncclzCudaBatch b = make_batch(r, NCCLZ_CODER_HUFFMAN, un.rlen);
    TRY(ncclzCudaDecodeBatch(&b, 7u, frame, nullptr, 64 + plen, 64 + plen, dst, nullptr, (uint32_t *)c->status.p + u,
                             c->dws[l].p, c->dws[l].cap, sd));
    trace_rec(r, u, TE_RED1, sd); /* end of decode; reduce follows */
    if (!direct) TRY(wait_after(r, un, sd));
    if (reduce) {
      int32_t *w = (int32_t *)cell(r->work, un.roff);
      k_reduce<<<grid_for(un.rlen), 256, 0, sd>>>(w, dst, un.rlen, r->quantized, r->dt);
      void *out = cell(r->out, oo);
      if (store && olen && out != (void *)(w + skip))
        CU(cudaMemcpyAsync(out, w + skip, olen * 4, cudaMemcpyDeviceToDevice, sd));
    } else if (!direct && store && olen) {
      if (r->quantized || r->dt == NCCLZ_DTYPE_F32)
        CU(cudaMemcpyAsync(cell(r->out, oo), dst + skip, olen * 4, cudaMemcpyDeviceToDevice, sd));
      else
        k_sym_to_cells<<<grid_for(olen), 256, 0, sd>>>(dst + skip, olen, r->dt, (float *)cell(r->out, oo));
    }
    CU(cudaGetLastError());
  } else {
    trace_rec(r, u, TE_RED1, sd);
  }
  trace_rec(r, u, TE_DEC1, sd);
  if (un.keep < 0) CU(cudaEventRecord(c->ev_rfree[bank_of(c, u)], sd));
  CU(cudaEventRecord(c->ev_done[u], sd));
  return NCCLZ_OK;
}

/* Unit u: host halves (header out, header in), then the NCCL group and the decode. */
static ncclzStatus issue(grun *r, size_t u) {
  const ncclzUnit &un = r->ul.units[u];
  ncclzComm *c = r->c;
  const uint8_t *payload = nullptr;
  uint8_t *dest = nullptr;
  size_t plen = 0, rlen = 0;
  bool snd = un.send >= 0 && un.slen, rcv = un.recv >= 0 && un.rlen; /* empty chunks: nothing moves */
  if (snd) TRY(host_send(r, u, &payload, &plen));
  if (rcv) TRY(host_recv(r, u, &dest, &rlen));
  if (!snd && !rcv) {
    CU(cudaEventRecord(c->ev_done[u], c->s_dec[lane_of(r, u)]));
    return NCCLZ_OK;
  }
  cudaStream_t ls = lane_stream(r, u);
  ncclComm_t lc = c->lane_comm[lane_of(r, u)];
  if (snd) {
    const ncclzOp *o = &r->s.ops[un.send];
    if (o->action & NCCLZ_ACT_ENCODE)
      CU(cudaStreamWaitEvent(ls, c->ev_enc[bank_of(c, u)], 0));
    else
      CU(cudaStreamWaitEvent(ls, c->ev_done[r->ul.unit_of_op[o->dep]], 0));
  }
  trace_rec(r, u, TE_COM0, ls);
  NC(ncclGroupStart());
  if (snd && plen) NC(ncclSend(payload, plen, ncclUint8, r->s.ops[un.send].peer, lc, ls));
  if (rcv && rlen) NC(ncclRecv(dest + 64, rlen, ncclUint8, r->s.ops[un.recv].peer, lc, ls));
  NC(ncclGroupEnd());
  trace_rec(r, u, TE_COM1, ls);
  if (snd && (r->s.ops[un.send].action & NCCLZ_ACT_ENCODE)) CU(cudaEventRecord(c->ev_sent[bank_of(c, u)], ls));
  if (!rcv) {
    CU(cudaEventRecord(c->ev_done[u], ls));
    return NCCLZ_OK;
  }
  CU(cudaEventRecord(c->ev_recvd[bank_of(c, u)], ls));
  return decode_unit(r, u, dest, rlen);
}

/* COPY ops (the rank's own block) run on the user stream right after quantization: the part of
 * the range in the output, from the input (the schedule's table, as the host engine's). */
ncclzStatus run_copies(grun *r) {
  for (size_t i = 0; i < r->s.nops; i++) {
    const ncclzOp *o = &r->s.ops[i];
    if (o->kind != NCCLZ_OP_COPY) continue;
    size_t off, len, skip, olen;
    ncclzScheduleOpRange(&r->s, r->count, o, &off, &len);
    size_t oo = ncclzCollOutPart(r->coll, r->s.rank, r->count, off, len, &skip, &olen);
    void *d = cell(r->out, oo), *s = cell(r->in, ncclzCollInOffset(r->coll, r->s.rank, r->count, off) + skip);
    if (olen && d != s) CU(cudaMemcpyAsync(d, s, olen * 4, cudaMemcpyDeviceToDevice, r->stream));
  }
  return NCCLZ_OK;
}

ncclzStatus run_units(grun *r) {
  ncclzComm *c = r->c;
  CU(cudaEventRecord(c->ev_fork, r->stream));
  cudaStream_t ss[NZ_STREAMS];
  int ns = 0;
  ss[ns++] = c->s_enc;
  for (int l = 0; l < c->lanes; l++) ss[ns++] = c->s_lane[l], ss[ns++] = c->s_dec[l];
  for (int i = 0; i < ns; i++) CU(cudaStreamWaitEvent(ss[i], c->ev_fork, 0));
  for (int b = 0; b < bank_count(c); b++) { /* every bank starts free */
    CU(cudaEventRecord(c->ev_sent[b], r->stream));
    CU(cudaEventRecord(c->ev_rfree[b], r->stream));
  }
  TRY(prepare_send(r, 0));
  for (size_t u = 0; u < r->ul.nunits; u++) {
    TRY(issue(r, u));
    TRY(prepare_send(r, u + 1)); /* overlaps unit u's transfer */
  }
  for (int i = 0; i < ns; i++) {
    CU(cudaEventRecord(c->ev_join[i], ss[i]));
    CU(cudaStreamWaitEvent(r->stream, c->ev_join[i], 0));
  }
  return c->t->flush(c->t);
}

/* Decoder status words and quantizer counts, read once after the final synchronisation. */
ncclzStatus check_status(grun *r) {
  ncclzComm *c = r->c;
  size_t nu = r->ul.nunits;
  CU(cudaMemcpy(c->host_status.p, c->status.p, nu * 4, cudaMemcpyDeviceToHost));
  const uint32_t *s = (const uint32_t *)c->host_status.p;
  for (size_t u = 0; u < nu; u++)
    if (s[u])
      return ncclzSetError(NCCLZ_ERR_CORRUPT, "frame of unit %zu (step %u, chunk %u): %s", u,
                           r->s.ops[r->ul.units[u].recv].step, r->s.ops[r->ul.units[u].recv].chunk,
                           ncclzCudaStatusReason(s[u]));
  if (r->qp.kind == NCCLZ_QUANT_EB && r->has_input && r->n_in) {
    ncclzCudaQuantStats q;
    CU(cudaMemcpy(&q, c->qstats.p, sizeof q, cudaMemcpyDeviceToHost));
    if (q.nonfinite || q.out_of_range || q.unbounded)
      return ncclzSetError(NCCLZ_ERR_RANGE, "quantization: %llu values out of range or unbounded",
                           q.out_of_range + q.unbounded + q.nonfinite);
  }
  return NCCLZ_OK;
}
