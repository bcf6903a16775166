/* The host engine: runs one rank's schedule/ op list over an ncclzTransport, moving real frames.
 *
 * Size protocol: a control lane (docs/executor.md, "Size protocol: a control lane").
 *   Every framed send puts the frame's 64-byte header on NCCLZ_LANE_CTRL and its payload on
 *   NCCLZ_LANE_DATA; the receiver reads the header, validates it, and receives exactly
 *   payload_bytes. Why this one:
 *   - wire bytes are exactly the sum of the frame sizes (the header is part of the frame), where
 *     (b) size-deterministic FIXEDLEN pads every block to the widest width of all ranks and
 *     cannot carry HUFFMAN or REA's per-frame choice at all;
 *   - no round trip: the header leaves right behind the encode, so on a path with latency L the
 *     receiver knows the size L after the frame is ready, while the payload (chunk/beta) is
 *     still moving; on the GPU path the next chunk's receive is posted while the previous
 *     payload is in flight. (c) piggy-backing the next frame's size on the previous payload
 *     makes the receive of chunk k+1 wait for the *completion* of chunk k plus a device-to-host
 *     read, which serialises the two lanes that (a) keeps apart, and it needs a first header
 *     anyway;
 *   - the lane lives outside the payload communicator (an in-process queue, MPI messages), so it
 *     never competes with it for NCCL progress (docs/executor.md).
 *   Its cost per chunk is one small message; ncclzExecStats splits the receive wait into the
 *   header wait and the payload wait after the header, which is the bubble the protocol adds
 *   (tests/test_exec.c and bench/exec.sh report it).
 *
 * Policy off sends the plain element bytes (sizes are known on both sides: no header at all). */
#include "engine_internal.h"
#include "call_rules.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---------------------------------------------------------------- comm */

ncclzStatus ncclzHostCommInit(ncclzHostComm **out, ncclzTransport *t, const ncclzConfig *cfg) {
  *out = NULL;
  if (!t || !cfg) return ncclzSetError(NCCLZ_ERR_ARG, "ncclzHostCommInit: NULL transport or config");
  ncclzStatus st = ncclzConfigCheck(cfg);
  /* Every rank compares fingerprints even when its own config is bad, so nobody is left waiting. */
  uint64_t fp = ncclzConfigFingerprint(cfg);
  double v[5] = {(double)(fp >> 32), (double)(fp & 0xffffffffu), -(double)(fp >> 32), -(double)(fp & 0xffffffffu),
                 st ? 1.0 : 0.0};
  ncclzStatus ts = t->allreduce_max(t, v, 5);
  if (st) return st;
  if (ts) return ts;
  if (v[0] != -v[2] || v[1] != -v[3])
    return ncclzSetError(NCCLZ_ERR_ARG, "ranks have different configs (quantizer, policy, chunk, bound or profile)");
  if (v[4] > 0) return ncclzSetError(NCCLZ_ERR_ARG, "another rank's config is invalid");
  ncclzHostComm *c = calloc(1, sizeof *c);
  if (!c) return ncclzSetError(NCCLZ_ERR_NOMEM, "ncclzHostCommInit");
  c->t = t;
  c->cfg = *cfg;
  if (cfg->profile) {
    ncclzReaConfigFromProfile(cfg->profile, cfg->hint, NCCLZ_CLASS_DEFAULT, &c->rea);
    ncclzReaConfigFromProfile(cfg->profile, NCCLZ_HINT_NVLINK, NCCLZ_CLASS_DEFAULT, &c->rea_intra);
  }
  *out = c;
  return NCCLZ_OK;
}

void ncclzHostCommDestroy(ncclzHostComm *c) { free(c); }

/* ---------------------------------------------------------- chunk codec */


/* Cells of one chunk -> the symbols the coders see (quant none: the dtype's bit patterns). */
static void cells_to_symbols(run_t *r, const void *cells, size_t n) {
  if (r->quantized || r->dtype == NCCLZ_DTYPE_F32) {
    memcpy(r->sym, cells, n * 4);
    return;
  }
  ncclzFromFloat(cells, n, r->dtype, r->half);
  for (size_t i = 0; i < n; i++) r->sym[i] = r->half[i];
}

/* Symbols -> floats of quant none (into r->fl). */
static void symbols_to_floats(run_t *r, size_t n) {
  if (r->dtype == NCCLZ_DTYPE_F32) {
    memcpy(r->fl, r->sym, n * 4);
    return;
  }
  for (size_t i = 0; i < n; i++) r->half[i] = (uint16_t)r->sym[i];
  ncclzToFloat(r->half, r->dtype, n, r->fl);
}

/* REA plans each frame for its hop's link when the config says where the nodes are (a hop inside
 * a node: NVLink), else for the config's hint. */
static ncclzStatus encode_policy(run_t *r, size_t n, uint8_t link, const ncclzFrameDesc *d, size_t *len,
                                 ncclzCoder *coder) {
  const ncclzConfig *cfg = &r->c->cfg;
  if (r->policy != NCCLZ_POLICY_AUTO) {
    *coder = ncclz_exec_policy_coder(r->policy);
    return ncclzFrameEncode(*coder, r->sym, n, d, r->stage, r->stage_cap, len);
  }
  ncclzReaConfig rc = cfg->ranks_per_node > 0 && link == NCCLZ_LINK_INTRA ? r->c->rea_intra : r->c->rea;
  rc.data_class = ncclzDataClassOf(r->quantized ? &r->qp : NULL);
  ncclzReaResult res;
  ncclzStatus st = ncclzReaEncodeBest(cfg->profile, &rc, r->sym, n, d, r->stage, r->stage_cap, &res);
  *len = res.frame_bytes;
  *coder = res.committed;
  return st;
}

/* Encodes n cells into r->stage: a frame, or (policy off) the plain dtype bytes. */
static ncclzStatus encode_chunk(run_t *r, const void *cells, size_t n, uint8_t link, size_t *len) {
  double t0 = ncclzNowSeconds();
  ncclzStatus st = NCCLZ_OK;
  if (!r->framed) {
    ncclzFromFloat(cells, n, r->dtype, r->stage);
    *len = n * r->dsize;
  } else {
    cells_to_symbols(r, cells, n);
    ncclzFrameDesc d = {r->dtype, r->quantized ? &r->qp : NULL, NULL, 0, r->c->cfg.coder_params};
    ncclzCoder coder = NCCLZ_CODER_RAW;
    st = encode_policy(r, n, link, &d, len, &coder);
    if (!st) r->st->coder_mix[coder]++;
  }
  r->st->t_encode += ncclzNowSeconds() - t0;
  return st;
}

/* A received frame (or plain bytes) -> r->sym (quantized) or r->fl (floats). */
static ncclzStatus decode_chunk(run_t *r, const uint8_t *buf, size_t len, size_t n) {
  double t0 = ncclzNowSeconds();
  ncclzStatus st = NCCLZ_OK;
  if (!r->framed) {
    ncclzToFloat(buf, r->dtype, n, r->fl);
  } else {
    ncclzFrameHeader h;
    size_t used = 0;
    st = ncclzFrameDecode(buf, len, &h, r->sym, n, NULL, 0, &used);
    if (!st && (h.n_symbols != n || used != len))
      st = ncclzSetError(NCCLZ_ERR_CORRUPT, "frame of %u symbols (%zu bytes) where %zu symbols (%zu bytes) were due",
                         h.n_symbols, used, n, len);
    if (!st && !r->quantized) symbols_to_floats(r, n);
  }
  r->st->t_decode += ncclzNowSeconds() - t0;
  return st;
}

/* dst += the decoded chunk: integer codes (fill absorbs; unsigned wrap is exact for sums that
 * fit, which agree.c guarantees) or floats. */
static void reduce_chunk(run_t *r, void *dst, size_t n) {
  double t0 = ncclzNowSeconds();
  if (r->quantized) {
    int32_t *d = dst;
    for (size_t i = 0; i < n; i++)
      d[i] = d[i] == NCCLZ_FILL_CODE || r->sym[i] == NCCLZ_FILL_CODE ? NCCLZ_FILL_CODE
                                                                     : (int32_t)((uint32_t)d[i] + (uint32_t)r->sym[i]);
  } else {
    float *d = dst;
    for (size_t i = 0; i < n; i++) d[i] += r->fl[i];
  }
  r->st->t_reduce += ncclzNowSeconds() - t0;
}

/* The decoded chunk's cells: codes when quantized, else floats. */
static const void *chunk_cells(const run_t *r) { return r->quantized ? (const void *)r->sym : (const void *)r->fl; }

/* ------------------------------------------------------------ transfers */

static uint64_t op_tag(const run_t *r, const ncclzOp *o) { return ncclzOpTag(&r->s, o); }

static ncclzStatus send_bytes(run_t *r, const ncclzOp *o, const uint8_t *buf, size_t len) {
  uint64_t tag = op_tag(r, o);
  ncclzStatus st = NCCLZ_OK;
  if (r->framed) {
    st = r->t->send(r->t, o->peer, tag, NCCLZ_LANE_CTRL, buf, NCCLZ_FRAME_HEADER_BYTES);
    if (!st && len > NCCLZ_FRAME_HEADER_BYTES)
      st = r->t->send(r->t, o->peer, tag, NCCLZ_LANE_DATA, buf + NCCLZ_FRAME_HEADER_BYTES,
                      len - NCCLZ_FRAME_HEADER_BYTES);
    r->st->frames++;
  } else if (len) {
    st = r->t->send(r->t, o->peer, tag, NCCLZ_LANE_DATA, buf, len);
  }
  r->st->frame_bytes += len;
  return st;
}

/* Receives the frame of op o into r->rstage: header first, then exactly the payload it names. */
static ncclzStatus recv_bytes(run_t *r, const ncclzOp *o, size_t n, size_t *len) {
  uint64_t tag = op_tag(r, o);
  double t0 = ncclzNowSeconds();
  ncclzStatus st;
  if (!r->framed) {
    *len = n * r->dsize;
    st = *len ? r->t->recv(r->t, o->peer, tag, NCCLZ_LANE_DATA, r->rstage, *len) : NCCLZ_OK;
    r->st->t_wait_data += ncclzNowSeconds() - t0;
    return st;
  }
  st = r->t->recv(r->t, o->peer, tag, NCCLZ_LANE_CTRL, r->rstage, NCCLZ_FRAME_HEADER_BYTES);
  double t1 = ncclzNowSeconds();
  r->st->t_wait_ctrl += t1 - t0;
  if (st) return st;
  ncclzFrameHeader h;
  st = ncclzFrameHeaderParse(r->rstage, SIZE_MAX, &h);
  if (!st && NCCLZ_FRAME_HEADER_BYTES + (size_t)h.payload_bytes > r->stage_cap)
    st = ncclzSetError(NCCLZ_ERR_CORRUPT, "frame header announces %u payload bytes, more than a chunk can take",
                       h.payload_bytes);
  if (st) return st;
  *len = NCCLZ_FRAME_HEADER_BYTES + h.payload_bytes;
  if (h.payload_bytes)
    st = r->t->recv(r->t, o->peer, tag, NCCLZ_LANE_DATA, r->rstage + NCCLZ_FRAME_HEADER_BYTES, h.payload_bytes);
  r->st->t_wait_data += ncclzNowSeconds() - t1;
  r->st->chunks_received++;
  return st;
}

/* ----------------------------------------------------------------- ops */

static size_t in_offset(const run_t *r, size_t off) { return ncclzCollInOffset(r->coll, r->s.rank, r->count, off); }
static char *cell(void *base, size_t i) { return (char *)base + 4 * i; }

/* Where an ENCODE send reads (the schedule's table): the working buffer, the output, the input. */
static void *send_source(run_t *r, size_t off) {
  switch (ncclzCollEncodeSource(r->coll)) {
  case NCCLZ_BUF_WORK: return cell(r->work, off);
  case NCCLZ_BUF_OUT: return cell(r->out, off);
  default: return cell(r->in, off);
  }
}

/* Copies n cells of the range at `off` from src into the part of it that lies in the output. */
static void to_output(run_t *r, size_t off, size_t n, const void *src) {
  size_t skip, olen, oo = ncclzCollOutPart(r->coll, r->s.rank, r->count, off, n, &skip, &olen);
  if (olen && cell(r->out, oo) != (const char *)src + 4 * skip) memmove(cell(r->out, oo), (const char *)src + 4 * skip, olen * 4);
}

static ncclzStatus run_send(run_t *r, const ncclzOp *o, size_t off, size_t len) {
  r->st->raw_bytes += len * r->dsize;
  if (o->action & NCCLZ_ACT_FORWARD) {
    if (o->dep < 0 || !r->kept[o->dep]) return ncclzSetError(NCCLZ_ERR_ARG, "schedule: forward without a kept frame");
    if (r->framed) {
      ncclzFrameHeader h;
      if (!ncclzFrameHeaderParse(r->kept[o->dep], r->kept_len[o->dep], &h)) r->st->coder_mix[h.coder]++;
    }
    return send_bytes(r, o, r->kept[o->dep], r->kept_len[o->dep]);
  }
  size_t flen = 0;
  ncclzStatus st = encode_chunk(r, send_source(r, off), len, o->link, &flen);
  return st ? st : send_bytes(r, o, r->stage, flen);
}

static ncclzStatus run_recv(run_t *r, size_t i, const ncclzOp *o, size_t off, size_t len) {
  size_t flen = 0;
  ncclzStatus st = recv_bytes(r, o, len, &flen);
  if (!st && (o->action & NCCLZ_ACT_KEEP)) {
    r->kept[i] = malloc(flen ? flen : 1);
    if (!r->kept[i]) return ncclzSetError(NCCLZ_ERR_NOMEM, "kept frame of %zu bytes", flen);
    memcpy(r->kept[i], r->rstage, flen);
    r->kept_len[i] = flen;
  }
  if (!st && (o->action & (NCCLZ_ACT_REDUCE | NCCLZ_ACT_STORE))) st = decode_chunk(r, r->rstage, flen, len);
  if (st) return st;
  if (o->action & NCCLZ_ACT_REDUCE) reduce_chunk(r, cell(r->work, off), len);
  if (o->action & NCCLZ_ACT_STORE)
    to_output(r, off, len, o->action & NCCLZ_ACT_REDUCE ? (const void *)cell(r->work, off) : chunk_cells(r));
  return NCCLZ_OK;
}

static ncclzStatus run_ops(run_t *r) {
  for (size_t i = 0; i < r->s.nops; i++) {
    const ncclzOp *o = &r->s.ops[i];
    size_t off, len;
    ncclzScheduleOpRange(&r->s, r->count, o, &off, &len);
    ncclzStatus st = NCCLZ_OK;
    if (o->kind == NCCLZ_OP_COPY) {
      to_output(r, off, len, cell(r->in, in_offset(r, off)));
    } else if (o->kind == NCCLZ_OP_SEND) {
      st = run_send(r, o, off, len);
    } else {
      st = run_recv(r, i, o, off, len);
    }
    if (st) return st;
  }
  return r->t->flush(r->t);
}

/* ------------------------------------------------------------- set-up */


/* The call's cells (input, working, output) and QSGD scales: they do not depend on the schedule. */
static ncclzStatus alloc_cells(run_t *r) {
  size_t ni = r->n_in ? r->n_in : 1, no = r->n_out ? r->n_out : 1;
  r->in = calloc(ni, 4);
  r->work = r->coll == NCCLZ_REDUCESCATTER ? malloc(ni * 4) : NULL;
  r->out = r->coll == NCCLZ_ALLREDUCE ? NULL : calloc(no, 4);
  if (r->qp.kind == NCCLZ_QUANT_QSGD) {
    r->n_scales = ncclzQsgdNumBuckets(&r->qp, r->n_in);
    r->scales = calloc(r->n_scales + 1, sizeof *r->scales);
  }
  int ok = r->in && (r->coll != NCCLZ_REDUCESCATTER || r->work) && (r->coll == NCCLZ_ALLREDUCE || r->out) &&
           (r->qp.kind != NCCLZ_QUANT_QSGD || r->scales);
  if (r->coll == NCCLZ_ALLREDUCE) r->work = r->out = r->in; /* NCCL: allreduce works in its output */
  if (r->coll != NCCLZ_ALLREDUCE && r->coll != NCCLZ_REDUCESCATTER) r->work = r->in;
  return ok ? NCCLZ_OK : ncclzSetError(NCCLZ_ERR_NOMEM, "executor buffers for %zu elements", r->n_in);
}

/* Staging and scratch of one chunk, and the kept frames: sized by the schedule's largest chunk. */
static ncclzStatus alloc_chunks(run_t *r) {
  size_t mc = r->max_chunk ? r->max_chunk : 1;
  size_t cap = 0;
  for (int c = 0; c < NCCLZ_CODER_COUNT; c++) {
    size_t b = ncclzFrameBound((ncclzCoder)c, &r->c->cfg.coder_params, mc, 0);
    if (b > cap) cap = b;
  }
  r->stage_cap = cap > mc * 4 ? cap : mc * 4;
  r->stage = malloc(r->stage_cap);
  r->rstage = malloc(r->stage_cap);
  r->sym = malloc(mc * 4);
  r->half = malloc(mc * 2);
  r->fl = malloc(mc * 4);
  r->kept = calloc(r->s.nops + 1, sizeof *r->kept);
  r->kept_len = calloc(r->s.nops + 1, sizeof *r->kept_len);
  int ok = r->stage && r->rstage && r->sym && r->half && r->fl && r->kept && r->kept_len;
  return ok ? NCCLZ_OK : ncclzSetError(NCCLZ_ERR_NOMEM, "executor staging for chunks of %zu elements", mc);
}

/* The call's schedule with the algorithm `algo` (AUTO: ncclz_exec_spec's) and the call's policy (a
 * chain's chunks), and its largest chunk. */
static ncclzStatus build_schedule(run_t *r, ncclzAlgorithm algo, int root) {
  ncclzConfig cfg = r->c->cfg;
  if (algo != NCCLZ_ALGO_AUTO) cfg.algorithm = algo;
  cfg.policy = r->policy;
  ncclzScheduleSpec sp;
  ncclz_exec_spec(&cfg, r->coll, r->count, r->t->nranks, root, r->dsize, &sp);
  ncclzScheduleFree(&r->s);
  if (ncclzScheduleBuildSpec(&sp, r->t->rank, &r->s))
    return ncclzSetError(NCCLZ_ERR_NOMEM, "schedule of %s", ncclzCollectiveName(r->coll));
  r->max_chunk = ncclzScheduleLargestRange(&r->s, r->count);
  return NCCLZ_OK;
}

static void free_run(run_t *r) {
  if (r->coll == NCCLZ_REDUCESCATTER) free(r->work);
  if (r->out != r->in) free(r->out);
  free(r->in);
  free(r->stage);
  free(r->rstage);
  free(r->sym);
  free(r->half);
  free(r->fl);
  for (size_t i = 0; r->kept && i < r->s.nops; i++) free(r->kept[i]);
  free(r->kept);
  free(r->kept_len);
  free(r->scales);
  ncclzScheduleFree(&r->s);
}

/* Checks that do not depend on the data: identical on every rank that makes the same call. */
static ncclzStatus check_call(const ncclzHostComm *c, ncclzCollective coll, size_t count, ncclzDtype dtype,
                              int root) {
  const ncclzQuantSpec *q = &c->cfg.quant;
  if ((unsigned)coll >= NCCLZ_COLL_COUNT) return ncclzSetError(NCCLZ_ERR_ARG, "collective %d unknown", (int)coll);
  if (dtype != NCCLZ_DTYPE_F32 && dtype != NCCLZ_DTYPE_BF16 && dtype != NCCLZ_DTYPE_F16)
    return ncclzSetError(NCCLZ_ERR_ARG, "dtype %s: the executor takes f32, bf16 and f16", ncclzDtypeName(dtype));
  if (root < 0 || root >= c->t->nranks) return ncclzSetError(NCCLZ_ERR_ARG, "root %d of %d ranks", root, c->t->nranks);
  ncclzScheduleSpec sp;
  char why[200];
  ncclz_exec_spec(&c->cfg, coll, 0, c->t->nranks, root, 4, &sp);
  if (ncclzScheduleCheck(&sp, why, sizeof why)) return ncclzSetError(NCCLZ_ERR_ARG, "config algorithm: %s", why);
  if (count > UINT32_MAX / 2) return ncclzSetError(NCCLZ_ERR_ARG, "count %zu too large", count);
  if (q->kind == NCCLZ_QUANT_EB && q->lorenzo) {
    if (coll != NCCLZ_ALLREDUCE && coll != NCCLZ_BROADCAST)
      return ncclzSetError(NCCLZ_ERR_ARG, "Lorenzo needs a whole-array result (allreduce or broadcast), not %s",
                           ncclzCollectiveName(coll));
    size_t prod = 1;
    for (int i = 0; i < c->cfg.ndims; i++) prod *= c->cfg.dims[i];
    if (c->cfg.ndims < 1 || prod != count)
      return ncclzSetError(NCCLZ_ERR_ARG, "Lorenzo dims (%d given) must multiply to the count %zu", c->cfg.ndims, count);
  }
  return NCCLZ_OK;
}

static void init_qparams(run_t *r) {
  ncclz_exec_init_qparams(&r->c->cfg, (uint32_t)r->t->rank, r->n_in, &r->qp);
}

/* ------------------------------------------------------------ auto pair */

/* This rank's part of the pair's agreement: the sample of its symbols as the coders see them
 * (quant none bf16/f16: the dtype's bit patterns). x: NULL where the rank has no input. */
static void sample_wire(run_t *r, const float *x, double *w) {
  const int32_t *sym = r->in;
  int32_t *tmp = NULL;
  memset(w, 0, PAIR_SLOTS * sizeof *w);
  if (!x) return;
  if (!r->quantized && r->dtype != NCCLZ_DTYPE_F32) {
    tmp = malloc((r->n_in ? r->n_in : 1) * 6);
    if (!tmp) {
      w[PAIR_FAILED] = 1;
      return;
    }
    uint16_t *h = (uint16_t *)(tmp + r->n_in);
    ncclzFromFloat(x, r->n_in, r->dtype, h);
    for (size_t i = 0; i < r->n_in; i++) tmp[i] = h[i];
    sym = tmp;
  }
  ncclz_exec_sample_wire(&r->c->cfg, r->quantized ? &r->qp : NULL, sym, r->n_in, r->dsize, w);
  free(tmp);
}

/* The auto pair (call_rules.h): sample, agree, ncclzChoose; the schedule of the chosen algorithm.
 * A plain pair runs the float collective on x (the quantized cells give way to the input). Under
 * policy raw or off nothing compresses: the provisional schedule (CR 1) is the pair's. */
static ncclzStatus choose_pair(run_t *r, const float *x, int root) {
  ncclzCoderPolicy pol = r->c->cfg.policy;
  if (pol == NCCLZ_POLICY_OFF || pol == NCCLZ_POLICY_RAW) {
    r->st->pair_auto = 1;
    return NCCLZ_OK;
  }
  double w[PAIR_SLOTS];
  sample_wire(r, x, w);
  ncclzChoice ch;
  ncclzStatus st = ncclz_exec_agree_pair(&r->c->cfg, r->t, r->coll, r->count, r->dsize, w, r->st, &ch);
  if (st) return st;
  r->st->pair_auto = 1;
  r->policy = ncclz_exec_choice_policy(ch.coder);
  if (r->policy == NCCLZ_POLICY_OFF) {
    r->framed = 0;
    if (r->quantized && x) memcpy(r->in, x, r->n_in * 4);
    if (r->quantized) r->st->error_bound = ncclz_exec_plain_bound(r->dtype, r->k, r->gmax);
    r->st->quant_bound = 0;
    r->quantized = 0;
  }
  if (ncclz_exec_pair_rebuilds(&r->c->cfg, ch.algorithm, r->policy, r->coll, r->count, r->t->nranks, root, r->dsize,
                               &r->s) &&
      (st = build_schedule(r, ch.algorithm, root)) != NCCLZ_OK)
    r->t->abort(r->t, ncclzLastError()); /* local, past the agreement: wake the peers */
  return st;
}

static ncclzStatus prepare(run_t *r, const void *sendbuff, int root) {
  ncclzStatus st = alloc_cells(r);
  float *x = NULL;
  int has_input = sendbuff && (r->coll != NCCLZ_BROADCAST || r->s.rank == r->s.root);
  if (!st && has_input) {
    x = r->quantized ? malloc((r->n_in ? r->n_in : 1) * sizeof *x) : (float *)r->in;
    if (!x) st = ncclzSetError(NCCLZ_ERR_NOMEM, "input of %zu elements", r->n_in);
    if (x) ncclzToFloat(sendbuff, r->dtype, r->n_in, x);
  }
  /* Every rank takes part in the agreement, even after a local failure, so that none hangs;
   * a local allocation failure aborts the transport instead. */
  if (st) {
    r->t->abort(r->t, ncclzLastError());
    return st;
  }
  st = exec_agree_and_quantize(r, x);
  if (!st && ncclz_exec_pair_auto(&r->c->cfg, r->coll, r->count, r->t->nranks)) st = choose_pair(r, x, root);
  if (x != (float *)r->in) free(x);
  if (r->coll == NCCLZ_REDUCESCATTER && !st) memcpy(r->work, r->in, r->n_in * 4);
  if (st) return st;
  /* past the agreement a local failure must wake the peers */
  if ((st = alloc_chunks(r)) != NCCLZ_OK) r->t->abort(r->t, ncclzLastError());
  return st;
}

ncclzStatus ncclzHostRun(ncclzHostComm *c, ncclzCollective coll, const void *sendbuff, void *recvbuff, size_t count,
                         ncclzDtype dtype, int root, ncclzExecStats *stats) {
  ncclzExecStats local;
  ncclzExecStats *st_out = stats ? stats : &local;
  memset(st_out, 0, sizeof *st_out);
  if (!c) return ncclzSetError(NCCLZ_ERR_ARG, "ncclzHostRun: NULL communicator");
  ncclzStatus st = check_call(c, coll, count, dtype, root);
  if (st) return st;
  double t0 = ncclzNowSeconds();
  run_t r = {0};
  r.c = c;
  r.t = c->t;
  r.coll = coll;
  r.dtype = dtype;
  r.dsize = ncclzDtypeSize(dtype);
  r.count = count;
  r.n_in = ncclzCollInCount(coll, count, c->t->nranks);
  r.n_out = ncclzCollOutCount(coll, count, c->t->nranks);
  r.quantized = c->cfg.quant.kind != NCCLZ_QUANT_NONE;
  r.framed = c->cfg.policy != NCCLZ_POLICY_OFF;
  r.policy = c->cfg.policy;
  r.k = ncclzCollContributions(coll, c->t->nranks);
  r.st = st_out;
  if ((st = build_schedule(&r, NCCLZ_ALGO_AUTO, root)) != NCCLZ_OK) return st;
  init_qparams(&r);
  uint64_t wire0 = r.t->bytes_sent[0] + r.t->bytes_sent[1];
  st = prepare(&r, sendbuff, root);
  st_out->algorithm = r.s.algo;
  st_out->policy = r.policy;
  if (!st) {
    st = run_ops(&r);
    if (st) r.t->abort(r.t, ncclzLastError());
  }
  float *y = NULL;
  if (!st) {
    y = malloc((r.n_out ? r.n_out : 1) * sizeof *y);
    st = y ? exec_dequantize(&r, y) : ncclzSetError(NCCLZ_ERR_NOMEM, "output of %zu elements", r.n_out);
  }
  if (!st) ncclzFromFloat(y, r.n_out, dtype, recvbuff);
  free(y);
  st_out->wire_bytes = r.t->bytes_sent[0] + r.t->bytes_sent[1] - wire0;
  free_run(&r);
  st_out->t_total = ncclzNowSeconds() - t0;
  return st;
}
