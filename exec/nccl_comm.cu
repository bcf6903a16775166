/* The NCCL backend's communicator: set-up (ncclzCommInit, ncclzCommInitCreate), teardown, the
 * accessors of exec.h, and the grow-only device and pinned host buffers. */
#include "nccl_internal.cuh"

#include <unistd.h>

/* ------------------------------------------------------------ buffers */

/* Grow-only device buffer (every call ends synchronised, so a free here never races). */
ncclzStatus ensure(dbuf *b, size_t bytes) {
  if (bytes <= b->cap) return NCCLZ_OK;
  if (b->p) CU(cudaFree(b->p));
  b->p = nullptr;
  b->cap = 0;
  size_t want = bytes + bytes / 8 + 256;
  CU(cudaMalloc(&b->p, want));
  b->cap = want;
  return NCCLZ_OK;
}

ncclzStatus ensure_host(hbuf *b, size_t bytes) {
  if (bytes <= b->cap) return NCCLZ_OK;
  if (b->p) CU(cudaFreeHost(b->p));
  b->p = nullptr;
  b->cap = 0;
  CU(cudaHostAlloc(&b->p, bytes * 2 + 64, cudaHostAllocDefault));
  b->cap = bytes * 2 + 64;
  return NCCLZ_OK;
}

/* ------------------------------------------------------------ comm */

static ncclzStatus make_streams(ncclzComm *c) {
  CU(cudaStreamCreateWithFlags(&c->s_enc, cudaStreamNonBlocking));
  for (int l = 0; l < NZ_MAX_LANES; l++) CU(cudaStreamCreateWithFlags(&c->s_lane[l], cudaStreamNonBlocking));
  for (int l = 0; l < NZ_MAX_LANES; l++) CU(cudaStreamCreateWithFlags(&c->s_dec[l], cudaStreamNonBlocking));
  for (int i = 0; i < NZ_MAX_LANES; i++) {
    CU(cudaEventCreateWithFlags(&c->ev_enc[i], cudaEventDisableTiming));
    CU(cudaEventCreateWithFlags(&c->ev_sent[i], cudaEventDisableTiming));
    CU(cudaEventCreateWithFlags(&c->ev_recvd[i], cudaEventDisableTiming));
    CU(cudaEventCreateWithFlags(&c->ev_rfree[i], cudaEventDisableTiming));
  }
  CU(cudaEventCreateWithFlags(&c->ev_fork, cudaEventDisableTiming));
  for (int i = 0; i < NZ_STREAMS; i++) CU(cudaEventCreateWithFlags(&c->ev_join[i], cudaEventDisableTiming));
  return NCCLZ_OK;
}

/* Lane 0 is the caller's communicator; the others are split from it (collective: every rank
 * calls ncclzCommInit). Why: over the NET socket path one frame's ncclSend/ncclRecv at a time
 * moves the 1 GiB AllReduce's frames slower than the plain ring, NCCL busy most of the call; each
 * group waits for the one before it on its stream, so more communicators and streams let unit
 * u+1's transfer start while unit u's still runs (docs/executor.md). */
static ncclzStatus make_lanes(ncclzComm *c, uint32_t lanes) {
  c->lane_comm[0] = c->nccl;
  c->lanes = 1;
  if (lanes < 2 || c->nranks < 2) return NCCLZ_OK;
  for (uint32_t l = 1; l < lanes && l < NZ_MAX_LANES; l++) {
    NC(ncclCommSplit(c->nccl, 0, c->rank, &c->lane_comm[l], nullptr));
    c->lanes = (int)l + 1; /* destroyed with the comm, even if a later split fails */
  }
  return NCCLZ_OK;
}

/* Ranks per node from where the ranks run (a hash of each host's name, exchanged over the control
 * lane, a collective call): g when the ranks fill nodes of g GPUs in rank order, the layout the
 * schedules describe; 0 on one node or any other layout (every hop then plans with the hint). */
static ncclzStatus node_layout(ncclzTransport *t, int *g) {
  char host[256] = "";
  gethostname(host, sizeof host - 1);
  uint64_t h = 1469598103934665603ull; /* FNV-1a */
  for (const char *p = host; *p; p++) h = (h ^ (uint8_t)*p) * 1099511628211ull;
  std::vector<double> v((size_t)t->nranks, -1.0);
  v[(size_t)t->rank] = (double)(h >> 12); /* 52 bits: exact in a double */
  TRY(t->allreduce_max(t, v.data(), (size_t)t->nranks));
  int n = t->nranks, run = 1;
  while (run < n && v[(size_t)run] == v[0]) run++;
  *g = 0;
  if (run == n || n % run) return NCCLZ_OK;
  for (int i = 0; i < n; i++)
    if (v[(size_t)i] != v[(size_t)(i - i % run)] || (i % run == 0 && i && v[(size_t)i] == v[(size_t)(i - run)]))
      return NCCLZ_OK;
  *g = run;
  return NCCLZ_OK;
}

ncclzStatus ncclzCommInit(ncclzComm_t *out, ncclComm_t nccl, ncclzTransport *ctrl, const ncclzConfig *cfg) {
  *out = nullptr;
  if (!nccl || !ctrl || !cfg) return ncclzSetError(NCCLZ_ERR_ARG, "ncclzCommInit: NULL communicator, lane or config");
  int nr = 0, rk = 0;
  NC(ncclCommCount(nccl, &nr));
  NC(ncclCommUserRank(nccl, &rk));
  if (nr != ctrl->nranks || rk != ctrl->rank)
    return ncclzSetError(NCCLZ_ERR_ARG, "ncclzCommInit: NCCL rank %d of %d, control lane rank %d of %d", rk, nr,
                         ctrl->rank, ctrl->nranks);
  ncclzHostComm *hc = nullptr; /* the same checks and cross-rank fingerprint as the host engine */
  TRY(ncclzHostCommInit(&hc, ctrl, cfg));
  ncclzHostCommDestroy(hc);
  int layout_g = 0;
  TRY(node_layout(ctrl, &layout_g));
  ncclzComm *c = new ncclzComm();
  c->nccl = nccl;
  c->t = ctrl;
  c->rank = rk;
  c->nranks = nr;
  c->cfg = *cfg;
  /* the schedules' node size: the config's, else the communicator's node layout */
  if (c->cfg.ranks_per_node <= 0) c->cfg.ranks_per_node = layout_g;
  if (cfg->profile) {
    c->profile = *cfg->profile; /* own copy: the caller's may go away */
    c->cfg.profile = &c->profile;
    ncclzReaConfigFromProfile(&c->profile, cfg->hint, NCCLZ_CLASS_DEFAULT, &c->rea);
    ncclzReaConfigFromProfile(&c->profile, NCCLZ_HINT_NVLINK, NCCLZ_CLASS_DEFAULT, &c->rea_intra);
  }
  cudaGetDevice(&c->dev);
  memset(&c->last, 0, sizeof c->last);
  memset(&c->summary, 0, sizeof c->summary);
  ncclzStatus st = make_streams(c);
  if (st == NCCLZ_OK) st = make_lanes(c, cfg->comm_lanes);
  if (st) {
    ncclzCommDestroy(c);
    return st;
  }
  *out = c;
  return NCCLZ_OK;
}

ncclzStatus ncclzCommInitCreate(ncclzComm_t *out, ncclzTransport *ctrl, int device, const ncclzConfig *cfg) {
  *out = nullptr;
  if (!ctrl) return ncclzSetError(NCCLZ_ERR_ARG, "ncclzCommInitCreate: NULL control lane");
  CU(cudaSetDevice(device));
  ncclUniqueId id;
  memset(&id, 0, sizeof id);
  const uint64_t tag = 0xFFFFFFF0ull; /* outside every (step, chunk) tag of a collective */
  if (ctrl->rank == 0) {
    NC(ncclGetUniqueId(&id));
    for (int p = 1; p < ctrl->nranks; p++) TRY(ctrl->send(ctrl, p, tag, NCCLZ_LANE_CTRL, &id, sizeof id));
    TRY(ctrl->flush(ctrl));
  } else {
    TRY(ctrl->recv(ctrl, 0, tag, NCCLZ_LANE_CTRL, &id, sizeof id));
  }
  ncclComm_t nc;
  NC(ncclCommInitRank(&nc, ctrl->nranks, id, ctrl->rank));
  ncclzStatus st = ncclzCommInit(out, nc, ctrl, cfg);
  if (st) {
    ncclCommDestroy(nc);
    return st;
  }
  (*out)->owned = 1;
  return NCCLZ_OK;
}

static void free_dbuf(dbuf *b) {
  if (b->p) cudaFree(b->p);
  b->p = nullptr;
}

void ncclzCommDestroy(ncclzComm_t c) {
  if (!c) return;
  cudaSetDevice(c->dev);
  ncclzReaGpuPlannerDestroy(c->planner);
  dbuf *bufs[] = {&c->cells_in, &c->cells_out, &c->xf,    &c->yf,     &c->scales, &c->agree, &c->scan,
                  &c->rbank,    &c->esym,      &c->ews,   &c->arena,  &c->status, &c->fbytes, &c->qstats, &c->qws, &c->dcoders};
  for (dbuf *b : bufs) free_dbuf(b);
  for (int l = 0; l < NZ_MAX_LANES; l++) {
    free_dbuf(&c->sbank[l]);
    free_dbuf(&c->rsym[l]);
    free_dbuf(&c->dws[l]);
  }
  hbuf *hb[] = {&c->hdr_out, &c->hdr_in, &c->host_small, &c->host_status};
  for (hbuf *b : hb)
    if (b->p) cudaFreeHost(b->p);
  for (int i = 0; i < NZ_MAX_LANES; i++) {
    cudaEventDestroy(c->ev_enc[i]);
    cudaEventDestroy(c->ev_sent[i]);
    cudaEventDestroy(c->ev_recvd[i]);
    cudaEventDestroy(c->ev_rfree[i]);
  }
  cudaEventDestroy(c->ev_fork);
  for (int i = 0; i < NZ_STREAMS; i++) cudaEventDestroy(c->ev_join[i]);
  for (cudaEvent_t e : c->ev_done) cudaEventDestroy(e);
  for (cudaEvent_t e : c->ev_trace) cudaEventDestroy(e);
  cudaStreamDestroy(c->s_enc);
  for (int l = 0; l < NZ_MAX_LANES; l++) cudaStreamDestroy(c->s_lane[l]);
  for (int l = 1; l < NZ_MAX_LANES; l++) { /* ours, split from the caller's */
    if (!c->lane_comm[l]) continue;
    if (c->broken)
      ncclCommAbort(c->lane_comm[l]);
    else
      ncclCommDestroy(c->lane_comm[l]);
  }
  for (int l = 0; l < NZ_MAX_LANES; l++) cudaStreamDestroy(c->s_dec[l]);
  if (c->owned) {
    if (c->broken)
      ncclCommAbort(c->nccl);
    else
      ncclCommDestroy(c->nccl);
  }
  delete c;
}

ncclComm_t ncclzCommNccl(ncclzComm_t c) { return c ? c->nccl : nullptr; }
void ncclzCommLastStats(ncclzComm_t c, ncclzExecStats *s) {
  if (c && s) *s = c->last;
}
void ncclzCommSetTrace(ncclzComm_t c, int on) {
  if (c) c->trace = on;
}
void ncclzCommTrace(ncclzComm_t c, const ncclzTraceEvent **ev, size_t *n, ncclzTraceSummary *sum) {
  if (ev) *ev = c->events.empty() ? nullptr : c->events.data();
  if (n) *n = c->events.size();
  if (sum) *sum = c->summary;
}
