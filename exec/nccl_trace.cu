/* The NCCL backend's tracing: per-unit and interface events recorded on the streams, and after the
 * call the event list and the summary (comm, codec, exposed codec time) that ncclzCommTrace returns. */
#include "nccl_internal.cuh"

/* ------------------------------------------------------------ tracing */

cudaEvent_t tev(grun *r, size_t u, int k) { return r->c->ev_trace[8 + u * TE_COUNT + k]; }
void trace_rec(grun *r, size_t u, int k, cudaStream_t s) {
  if (r->c->trace) cudaEventRecord(tev(r, u, k), s);
}
void trace_iface(grun *r, int k) {
  if (r->c->trace) cudaEventRecord(r->c->ev_trace[k], r->stream);
}

/* ------------------------------------------------------------ trace summary */

static double ev_us(grun *r, cudaEvent_t e) {
  float ms = 0;
  cudaEventElapsedTime(&ms, r->c->ev_trace[0], e);
  return r->t_start_wall + 1e3 * (double)ms;
}

static void add_event(grun *r, const char *name, int lane, double a, double b, const ncclzOp *o, uint64_t bytes) {
  ncclzTraceEvent e = {name, lane, a, b - a, o ? o->step : 0, o ? o->chunk : 0, bytes};
  r->c->events.push_back(e);
}

/* Length of [a, b) outside the sorted, merged intervals iv. */
static double outside(const std::vector<std::pair<double, double>> &iv, double a, double b) {
  double covered = 0;
  for (const auto &p : iv) covered += std::max(0.0, std::min(b, p.second) - std::max(a, p.first));
  return std::max(0.0, (b - a) - covered);
}

void summarize_trace(grun *r) {
  ncclzComm *c = r->c;
  c->events.clear();
  std::vector<std::pair<double, double>> comm, codec;
  add_event(r, "quantize", 0, ev_us(r, c->ev_trace[0]), ev_us(r, c->ev_trace[1]), nullptr, 0);
  for (size_t u = 0; u < r->ul.nunits; u++) {
    const ncclzUnit &un = r->ul.units[u];
    bool snd = un.send >= 0 && un.slen, rcv = un.recv >= 0 && un.rlen;
    const ncclzOp *o = &r->s.ops[snd ? un.send : un.recv];
    if (snd && (r->s.ops[un.send].action & NCCLZ_ACT_ENCODE)) {
      double a = ev_us(r, tev(r, u, TE_ENC0)), b = ev_us(r, tev(r, u, TE_ENC1));
      add_event(r, "encode", 1, a, b, o, 0);
      codec.push_back({a, b});
    }
    if (snd || rcv) {
      double a = ev_us(r, tev(r, u, TE_COM0)), b = ev_us(r, tev(r, u, TE_COM1));
      int l = lane_of(r, u), track = l ? 3 + l : 2; /* comm lanes 1.. on tracks of their own */
      add_event(r, snd && rcv ? "sendrecv" : snd ? "send" : "recv", track, a, b, o, 0);
      comm.push_back({a, b});
    }
    if (rcv) {
      double a = ev_us(r, tev(r, u, TE_DEC0)), m = ev_us(r, tev(r, u, TE_RED1)), b = ev_us(r, tev(r, u, TE_DEC1));
      add_event(r, "decode", 3, a, m, o, 0);
      add_event(r, "reduce", 3, m, b, o, 0);
      codec.push_back({a, b});
    }
  }
  add_event(r, "dequantize", 0, ev_us(r, c->ev_trace[2]), ev_us(r, c->ev_trace[3]), nullptr, 0);
  std::sort(comm.begin(), comm.end());
  std::vector<std::pair<double, double>> merged;
  for (const auto &p : comm) {
    if (!merged.empty() && p.first <= merged.back().second)
      merged.back().second = std::max(merged.back().second, p.second);
    else
      merged.push_back(p);
  }
  ncclzTraceSummary &s = c->summary;
  memset(&s, 0, sizeof s);
  for (const auto &p : merged) s.comm_us += p.second - p.first;
  for (const auto &p : codec) {
    s.codec_us += p.second - p.first;
    s.exposed_us += outside(merged, p.first, p.second);
  }
  s.total_us = ev_us(r, c->ev_trace[3]) - ev_us(r, c->ev_trace[0]);
  s.iface_us = (ev_us(r, c->ev_trace[1]) - ev_us(r, c->ev_trace[0])) +
               (ev_us(r, c->ev_trace[3]) - ev_us(r, c->ev_trace[2]));
}
