/* The (algorithm, coder policy) cost model of a call (docs/simulator.md, "Algorithm choice"):
 * each algorithm is a list of stages of like steps (docs/simulator.md's closed forms, step by
 * step), each step a pipeline of its chunks through encode, transfer and decode, with the
 * profile's codec curves and, for REA, REA's own decision functions (rea_decide.h). The
 * simulator's auto and the executor's auto both take their (algorithm, coder) pair here. The tree's
 * price is in choose_tree.c, Broadcast's and Alltoall's in choose_chains.c. */
#include "choose_internal.h"

#include <math.h>
#include <string.h>

static const char *const coder_names[NCCLZ_CHOICE_CODERS] = {"plain", "fixedlen", "huffman", "rea"};

const char *ncclzChoiceCoderName(ncclzChoiceCoder c) {
  return (unsigned)c < NCCLZ_CHOICE_CODERS ? coder_names[c] : "?";
}

stage *choice_add_stage(plan *p, double steps, double bytes, double grow, int net, double flows) {
  stage *s = &p->st[p->n++];
  memset(s, 0, sizeof *s);
  s->steps = steps;
  s->bytes = bytes;
  s->grow = grow;
  s->k = 1;
  s->kmul = 1;
  s->net = net;
  s->flows = flows;
  return s;
}

static void set_k(stage *s, double k, double kmul, double kadd) {
  s->k = k;
  s->kmul = kmul;
  s->kadd = kadd;
}

/* The ring over C channels: every step, each channel moves one chunk range of S/(N C) over each
 * hop; the inter-node hop of channel q leaves from a GPU on rail q % R (C/R channels a NIC). */
static void plan_ring(const ncclzChoiceInput *in, double S, uint32_t ch, plan *p) {
  int n = in->nodes * in->gpus_per_node;
  double b = S / n / ch, steps = n - 1.0;
  int net = in->nodes > 1;
  double flows = net ? ceil((double)ch / in->rails) : ch;
  p->chunk_range = b;
  if (in->coll != NCCLZ_ALLGATHER) {
    stage *rs = choice_add_stage(p, steps, b, 1, net, flows);
    set_k(rs, 1, 1, 1);
    rs->reduce = 1;
    rs->nv_flows = net ? ch : 0;
    rs->lanes = ch;
  }
  if (in->coll != NCCLZ_REDUCESCATTER) {
    stage *ag = choice_add_stage(p, steps, b, 1, net, flows);
    set_k(ag, in->coll == NCCLZ_ALLREDUCE ? n : 1, 1, 0);
    ag->forward = 1;
    ag->nv_flows = net ? ch : 0;
    ag->lanes = ch;
  }
}

/* `steps` doubling steps from `bytes` (each doubles), k ranks summed: each ends once its last chunk
 * is decoded, as the next step encodes what it received (regather). */
static void add_doubling(plan *p, double steps, double bytes, int net, double flows, double k) {
  stage *d = choice_add_stage(p, steps, bytes, 2, net, flows);
  set_k(d, k, 1, 0);
  d->regather = 1;
}

/* Halving-doubling among n members, unit = one member's block, g members a node (1: every
 * partner across nodes, as hier's rails); wk: ranks one member's data already sums. Partners at
 * distance below g are on the node. */
static void plan_rhd_group(const ncclzChoiceInput *in, int n, double unit, int g, double wk, double flows, plan *p) {
  int pof2 = 1 << ilog2(n), rem = n - pof2, lg = ilog2(pof2);
  int fold_net = g <= 1;
  double S = unit * n;
  int nets = 0; /* halving steps that cross nodes: the farthest partners first */
  for (int mask = pof2 / 2; mask > 0; mask /= 2) nets += mask >= g;
  if (in->coll != NCCLZ_ALLGATHER) {
    if (rem) {
      stage *f = choice_add_stage(p, 1, S, 1, fold_net, fold_net ? flows : 1);
      set_k(f, wk, 1, 0);
      f->reduce = 1;
    }
    if (nets) {
      stage *h = choice_add_stage(p, nets, S / 2, 0.5, 1, flows);
      set_k(h, wk * (rem ? 2 : 1), 2, 0);
      h->reduce = h->halving = 1;
    }
    if (lg - nets) {
      stage *h = choice_add_stage(p, lg - nets, S / 2 / (1 << nets), 0.5, 0, 1);
      set_k(h, wk * (rem ? 2 : 1) * (1 << nets), 2, 0);
      h->reduce = h->halving = 1;
    }
    if (in->coll == NCCLZ_REDUCESCATTER && rem)
      set_k(choice_add_stage(p, 1, unit, 1, fold_net, fold_net ? flows : 1), wk * n, 1, 0);
  }
  if (in->coll != NCCLZ_REDUCESCATTER) {
    double k = in->coll == NCCLZ_ALLREDUCE ? wk * n : wk;
    if (in->coll == NCCLZ_ALLGATHER && rem)
      set_k(choice_add_stage(p, 1, unit, 1, fold_net, fold_net ? flows : 1), k, 1, 0);
    double first = S / pof2;
    if (lg - nets) add_doubling(p, lg - nets, first, 0, 1, k);
    if (nets) add_doubling(p, nets, first * (1 << (lg - nets)), 1, flows, k);
    if (rem) set_k(choice_add_stage(p, 1, S, 1, fold_net, fold_net ? flows : 1), k, 1, 0);
  }
}

/* Flat halving-doubling over all ranks: the steps at distance >= G cross nodes, every GPU of a
 * node at once (G/R transfers a NIC). */
static void plan_rhd(const ncclzChoiceInput *in, double S, plan *p) {
  int n = in->nodes * in->gpus_per_node, g = in->gpus_per_node;
  p->chunk_range = S / 2;
  plan_rhd_group(in, n, S / n, in->nodes > 1 ? g : n, 1, ceil((double)g / in->rails), p);
}

/* Two levels: a ring inside the node over parts of S/G (NVLink), halving-doubling of the part
 * among the nodes of one rail (every GPU of a node at once: G/R transfers a NIC), a ring inside
 * the node again; ReduceScatter and AllGather trade one stage for the exchange of a block with
 * its owner (S/N, across nodes). */
static void plan_hier(const ncclzChoiceInput *in, double S, plan *p) {
  int g = in->gpus_per_node, m = in->nodes, n = m * g;
  double part = S / g, flows = ceil((double)g / in->rails);
  p->chunk_range = part;
  if (in->coll == NCCLZ_ALLGATHER)
    set_k(choice_add_stage(p, 1, S / n, 1, 1, flows), 1, 1, 0);
  else {
    stage *rs = choice_add_stage(p, g - 1, part, 1, 0, 1);
    set_k(rs, 1, 1, 1);
    rs->reduce = 1;
  }
  plan_rhd_group(in, m, S / n, 1, in->coll == NCCLZ_ALLGATHER ? 1 : g, flows, p);
  if (in->coll == NCCLZ_REDUCESCATTER)
    set_k(choice_add_stage(p, 1, S / n, 1, 1, flows), n, 1, 0);
  else {
    stage *ag = choice_add_stage(p, g - 1, part, 1, 0, 1);
    set_k(ag, in->coll == NCCLZ_ALLGATHER ? 1 : n, 1, 0);
    ag->forward = 1;
  }
}

/* ------------------------------------------------------------------ frames */

double choice_cr_of(const ncclzChoiceInput *in, int coder, double k) {
  if (coder == NCCLZ_CODER_RAW || in->cr_ranks == 0) return 1.0;
  uint32_t i = k <= 1 ? 0 : (uint32_t)fmin(k - 1, (double)(in->cr_ranks - 1));
  double cr = in->cr[coder][i];
  return cr > 0 ? cr : 1.0;
}

/* Wire bytes of a frame of raw bytes summing k ranks (RAW: raw + the header; a coder: raw / CR, at
 * least the header); plain NCCL sends the raw bytes. */
double choice_frame_wire(const ncclzChoiceInput *in, int coder, double k, double raw) {
  if (coder < 0) return raw;
  if (coder == NCCLZ_CODER_RAW) return raw + NCCLZ_FRAME_HEADER_BYTES;
  double b = raw / choice_cr_of(in, coder, k);
  return b < NCCLZ_FRAME_HEADER_BYTES ? NCCLZ_FRAME_HEADER_BYTES : b;
}

double choice_codec_us(const ncclzProfile *prof, const ncclzChoiceInput *in, int coder, int decode, double raw) {
  if (coder <= NCCLZ_CODER_RAW) return 0.0;
  const ncclzCodecCurves *cv = ncclz_rea_curves(prof, coder, in->data_class);
  return ncclz_rea_curve_us(decode ? &cv->decode : &cv->encode, raw);
}

/* REA's coder for a frame of raw bytes summing k ranks on a NIC hop, as the replay's and the
 * executor's arbitration take it: candidates from the CR, the profile's rules, the hop's link. */
static int rea_frame(const ncclzProfile *prof, const ncclzChoiceInput *in, int net, double k, double raw,
                     double pipeline, ncclzReaDecision *dec) {
  ncclzReaConfig cfg;
  ncclzTransportHint hint = net ? NCCLZ_HINT_NET : NCCLZ_HINT_NVLINK;
  ncclzReaConfigFromProfile(prof, hint, (ncclzDataClass)in->data_class, &cfg);
  double pred[NCCLZ_CODER_COUNT];
  for (int c = 0; c < NCCLZ_CODER_COUNT; c++) pred[c] = choice_frame_wire(in, c, k, raw);
  ncclzReaLink link; /* what one transfer of the hop gets */
  link.hint = hint;
  link.alpha_us = net ? in->nic_alpha_us : in->nvlink_alpha_us;
  link.beta_gbps = !net                                                        ? in->nvlink_gbps
                   : in->nic_flow_gbps > 0 && in->nic_flow_gbps < in->nic_gbps ? in->nic_flow_gbps
                                                                               : in->nic_gbps;
  return ncclzReaDecidePredicted(prof, &cfg, link, in->data_class, raw, pipeline, pred, dec);
}

/* ------------------------------------------------------------------ timing */

/* A call's chunks per op: the range one op moves cut into chunks of chunk_bytes, min..max. */
double choice_chunks_of(const ncclzProfile *prof, const ncclzChoiceInput *in, double range, int plain) {
  double chunk = (double)(in->chunk_bytes ? in->chunk_bytes : ncclzProfileFrameBytes(prof));
  double lo = in->min_chunks ? in->min_chunks : plain ? 1 : 2;
  double hi = in->max_chunks ? in->max_chunks : NCCLZ_DEFAULT_MAX_CHUNKS;
  double c = ceil(range / chunk);
  return c < lo ? lo : c > hi ? hi : c;
}

link_t choice_link_of(const ncclzChoiceInput *in, int net) {
  link_t l;
  l.alpha_us = net ? in->nic_alpha_us : in->nvlink_alpha_us;
  l.gbps = net ? in->nic_gbps : in->nvlink_gbps;
  l.flow_gbps = net && in->nic_flow_gbps > 0 ? in->nic_flow_gbps : 0;
  return l;
}

/* Time (us) of `bytes` for each of `flows` transfers sharing a link. */
double choice_share_us(link_t l, double flows, double bytes) {
  double t = flows * bytes / (l.gbps * 1e3);
  return l.flow_gbps > 0 ? fmax(t, bytes / (l.flow_gbps * 1e3)) : t;
}

/* The running total of a call: the steps so far, when the decode stream is free (decodes that
 * no send waits for run there behind the transfers), and the last step's pipeline (its drain). */
typedef struct {
  double sum, dec_free;
  double next;  /* the next step's start where it waits for more than this step's pace (halving) */
  double drain; /* the last step's chunks after its pace: fill - period, at most (c - 1) periods */
} clock_t_;

/* One step of c chunks: encode e, transfer t (+ alpha a), decode d per chunk (a ring's `lanes`
 * channels' work, the rank's streams taking them in turn; a chunk's next step waits for its own
 * channel's decode, d / lanes); two staging banks overlap the transfers in pairs (one latency per
 * pair), and the encode stream and the link take the chunks one after another. A received chunk
 * decodes as it lands (the executor's decode stream waits on the receive, not on the host). When
 * the next step sends the sum (reduce), its first chunk waits for a chunk of this one decoded: the
 * same chunk on a ring, whose second chunk, posted one encode after the first, shares the link
 * with it (the first lands t - e later);
 * the last chunk after a halving step, whose next range is half of what it received (the list's
 * dep of a send over part of a received range is that range's last chunk); every chunk
 * after a doubling step (regather), which ends once its last chunk is decoded: the next step
 * encodes what it received.
 * Frames forwarded as they came (stream) keep the offset s their first encodes gave them (stagger:
 * the stage's first encode, as the encode stream takes the chunks in turn), and a pair of chunks
 * (two banks) costs each hop until the later one lands: where s >= t the second follows the
 * first's bytes, t + max(a, min(s, t + a)) (one frame's latency runs while the other's bytes take
 * the link); where s < t the two share the link, 2 t + max(0, a - s). The ring's replay, AllGather
 * and AllReduce's second half, FIXEDLEN on 64 x 8, NICs of 6.25 to 50 GB/s at 0 to 48 us: within
 * 0.13% (docs/simulator.md). */
static void step(clock_t_ *ck, double c, double e, double a, double t, double d, double lanes, int reduce, int stream,
                 int regather, int halving, double stagger) {
  double pair = stagger >= t ? t + fmax(a, fmin(stagger, t + a)) : 2 * t + fmax(0.0, a - stagger); /* two banks */
  double wire = !stream ? t + a / 2 : c >= 2 ? pair / 2 : fmax(t, (t + a) / 2);
  double fill = e + a + t + (reduce ? d / lanes : 0.0);
  if (reduce && !halving && c >= 2) fill += fmax(0.0, t - e); /* the next chunk shares the link first */
  double period = reduce ? fmax(fmax(e, d), wire) : fmax(e, wire), busy = c * period;
  double start = fmax(ck->sum, ck->next);
  ck->sum = start + fmax(fill, busy);
  if (regather) {
    /* A doubling step ends with its last chunk decoded. Its chunks are encoded up front: the
     * second follows the first by an encode or a transfer; from the third on each waits for a
     * bank, freed when the one two before it lands (two banks): a transfer and half a latency a
     * chunk where the link is the slower, else an encode, or the bank's latency shared by the
     * pair. Or the decodes queue behind the first one's. */
    double later = t >= e ? t + a / 2 : fmax(e, (t + a) / 2);
    double last = (c >= 2 ? fmax(e, t) : 0.0) + fmax(0.0, c - 2) * later;
    ck->sum = start + fill + fmax(last + d, c * d);
  }
  ck->next = halving ? start + (c - 1) * period + fill : 0.0;
  ck->dec_free = reduce || regather ? fmax(ck->dec_free, ck->sum) : fmax(ck->dec_free, start + e + a + t) + c * d;
  ck->drain = regather ? 0.0 : fmin(fill - period, (c - 1) * period); /* a doubling step's sum holds it */
}

static double clock_end(const clock_t_ *ck) { return fmax(ck->sum + ck->drain, ck->dec_free); }

/* The coder a policy gives a step's frames (-1: plain, no frames). */
int choice_step_coder(const ncclzProfile *prof, const ncclzChoiceInput *in, ncclzChoiceCoder pol, int net, double k,
                      double raw, double pipeline) {
  ncclzReaDecision dec;
  switch (pol) {
  case NCCLZ_CHOICE_FIXEDLEN: return NCCLZ_CODER_FIXEDLEN;
  case NCCLZ_CHOICE_HUFFMAN: return NCCLZ_CODER_HUFFMAN;
  case NCCLZ_CHOICE_REA: return net ? rea_frame(prof, in, 1, k, raw, pipeline, &dec) : NCCLZ_CODER_RAW;
  default: return -1;
  }
}

/* The plan's steps under a policy; call_coder >= 0 codes every frame with it (REA's call-level
 * decision on the ring). */
double choice_plan_us(const ncclzProfile *prof, const ncclzChoiceInput *in, const plan *p, ncclzChoiceCoder pol,
                      int call_coder) {
  int plain = pol == NCCLZ_CHOICE_PLAIN;
  double C = plain ? 1 : choice_chunks_of(prof, in, p->chunk_range, 0);
  clock_t_ ck;
  memset(&ck, 0, sizeof ck);
  for (int s = 0; s < p->n; s++) {
    const stage *st = &p->st[s];
    link_t l = choice_link_of(in, st->net), nv = choice_link_of(in, 0);
    double bytes = st->bytes, k = st->k;
    int coder = -1;
    long n = (long)st->steps;
    double stagger = 0.0; /* the stage's first encode, the offset its chunks keep when forwarded */
    for (long i = 0; i < n; i++) {
      double raw = bytes / C;
      if (i == 0 || !st->forward)
        coder = call_coder >= 0 ? call_coder : choice_step_coder(prof, in, pol, st->net, k, raw, C);
      double w = choice_frame_wire(in, coder, k, raw);
      double t = choice_share_us(l, st->flows, w);
      if (st->nv_flows > 0) t = fmax(t, choice_share_us(nv, st->nv_flows, w));
      /* the channels' transfers run side by side, their codec work on the rank's streams in turn */
      double lanes = st->lanes > 1 ? st->lanes : 1;
      double e = (i == 0 || !st->forward) ? lanes * choice_codec_us(prof, in, coder, 0, raw) : 0.0;
      double d = lanes * choice_codec_us(prof, in, coder, 1, raw);
      if (i == 0) stagger = e;
      step(&ck, C, e, l.alpha_us, t, d, lanes, st->reduce, st->forward, st->regather, st->halving, stagger);
      bytes *= st->grow;
      k = k * st->kmul + st->kadd;
    }
  }
  return clock_end(&ck);
}

/* REA decides once per call, as the executor: the first chunk's frame of raw bytes (one rank's
 * codes) in a pipeline of C frames on the communicator's link, then whether the call's `units`
 * frame sends pay for its interface (ncclzReaCallWorthIt; the host's time per unit is handed back,
 * as the replay does under the piggy-backed headers). -1: the call runs as plain NCCL. */
int choice_rea_call_coder(const ncclzProfile *prof, const ncclzChoiceInput *in, double raw, double C, double units) {
  int net = in->nodes > 1;
  ncclzTransportHint hint = net ? NCCLZ_HINT_NET : NCCLZ_HINT_NVLINK;
  ncclzReaDecision dec;
  int c = rea_frame(prof, in, net, 1, raw, C, &dec);
  if (c == NCCLZ_CODER_RAW) return -1;
  dec.time_us[NCCLZ_CODER_RAW] += ncclzProfileUnitUs(prof, hint);
  ncclzReaCall call = {(double)in->bytes, units, raw, in->data_class, C};
  return ncclzReaCallWorthIt(prof, hint, &dec, (ncclzCoder)c, &call) ? c : -1;
}

/* The ring's call: its steps' sends of C chunks on every channel. */
static int ring_call_coder(const ncclzProfile *prof, const ncclzChoiceInput *in, const plan *p, double C, double ch) {
  double steps = 0;
  for (int s = 0; s < p->n; s++) steps += p->st[s].steps;
  return choice_rea_call_coder(prof, in, p->chunk_range / C, C, steps * C * ch);
}

uint32_t choice_channels_of(const ncclzChoiceInput *in) { return in->channels ? in->channels : (uint32_t)in->rails; }

int ncclzChoiceServes(ncclzCollective c) {
  return c == NCCLZ_ALLREDUCE || c == NCCLZ_ALLGATHER || c == NCCLZ_REDUCESCATTER || c == NCCLZ_BROADCAST ||
         c == NCCLZ_ALLTOALL;
}

static int runs(const ncclzChoiceInput *in, ncclzAlgorithm a) {
  ncclzScheduleSpec sp;
  char why[160];
  memset(&sp, 0, sizeof sp);
  sp.coll = in->coll;
  sp.algo = a;
  sp.nranks = in->nodes * in->gpus_per_node;
  sp.ranks_per_node = in->gpus_per_node;
  sp.nchunks = 1;
  sp.nchannels = choice_channels_of(in);
  sp.hier_inter = NCCLZ_ALGO_RHD;
  return a > NCCLZ_ALGO_AUTO && a < NCCLZ_ALGO_COUNT && ncclzScheduleCheck(&sp, why, sizeof why) == 0 &&
         ncclzChoiceServes(in->coll);
}

double choice_broadcast_us(const ncclzProfile *prof, const ncclzChoiceInput *in, ncclzChoiceCoder pol);
double choice_alltoall_us(const ncclzProfile *prof, const ncclzChoiceInput *in, ncclzChoiceCoder pol);

double ncclzChoicePairUs(const ncclzProfile *prof, const ncclzChoiceInput *in, ncclzAlgorithm algo,
                         ncclzChoiceCoder pol) {
  if ((unsigned)pol >= NCCLZ_CHOICE_CODERS || (pol != NCCLZ_CHOICE_PLAIN && !prof) || !runs(in, algo))
    return NCCLZ_CHOICE_NO_TIME;
  double S = (double)in->bytes, ch = choice_channels_of(in), t;
  int net = in->nodes > 1;
  if (in->nodes * in->gpus_per_node == 1) return 0.0;
  if (in->coll == NCCLZ_BROADCAST || in->coll == NCCLZ_ALLTOALL) { /* one schedule: the coder's price */
    double (*one)(const ncclzProfile *, const ncclzChoiceInput *, ncclzChoiceCoder) =
        in->coll == NCCLZ_BROADCAST ? choice_broadcast_us : choice_alltoall_us;
    if ((t = one(prof, in, pol)) < 0) return one(prof, in, NCCLZ_CHOICE_PLAIN);
  } else if (algo == NCCLZ_ALGO_TREE) {
    t = choice_tree_us(prof, in, ch, pol);
  } else {
    plan p;
    memset(&p, 0, sizeof p);
    if (algo == NCCLZ_ALGO_RING)
      plan_ring(in, S, (uint32_t)ch, &p);
    else if (algo == NCCLZ_ALGO_RHD)
      plan_rhd(in, S, &p);
    else
      plan_hier(in, S, &p);
    int call = -1;
    if (pol == NCCLZ_CHOICE_REA && algo == NCCLZ_ALGO_RING) {
      call = ring_call_coder(prof, in, &p, choice_chunks_of(prof, in, p.chunk_range, 0), ch);
      if (call < 0) return choice_plan_us(prof, in, &p, NCCLZ_CHOICE_PLAIN, -1);
    }
    t = choice_plan_us(prof, in, &p, pol, call);
  }
  if (pol != NCCLZ_CHOICE_PLAIN) /* a compressed call quantizes, agrees and dequantizes outside */
    t += ncclzProfileInterfaceUs(prof, net ? NCCLZ_HINT_NET : NCCLZ_HINT_NVLINK, S);
  return t;
}

static ncclzStatus check_input(const ncclzChoiceInput *in) {
#define BAD(field, what) ncclzSetError(NCCLZ_ERR_ARG, "choice input %s: %s", field, what)
  if (!in) return BAD("", "NULL");
  if ((unsigned)in->coll >= NCCLZ_COLL_COUNT) return BAD("coll", "unknown");
  if (in->bytes == 0) return BAD("bytes", "must be > 0");
  if (in->nodes < 1 || in->gpus_per_node < 1) return BAD("nodes, gpus_per_node", "must be >= 1");
  if (in->rails < 1 || in->rails > in->gpus_per_node) return BAD("rails", "must be in 1..gpus_per_node");
  if (!(in->nic_gbps > 0) || !(in->nvlink_gbps > 0)) return BAD("nic_gbps, nvlink_gbps", "must be > 0");
  if (!(in->nic_alpha_us >= 0) || !(in->nvlink_alpha_us >= 0)) return BAD("alpha_us", "must be >= 0");
  if (in->cr_ranks > NCCLZ_CHOICE_MAX_K) return BAD("cr_ranks", "must be <= NCCLZ_CHOICE_MAX_K");
  if (in->data_class < 0 || in->data_class >= NCCLZ_CLASS_COUNT) return BAD("data_class", "unknown");
  return NCCLZ_OK;
#undef BAD
}

ncclzStatus ncclzChoose(const ncclzProfile *prof, const ncclzChoiceInput *in, ncclzChoice *out) {
  ncclzStatus st = check_input(in);
  if (st != NCCLZ_OK) return st;
  memset(out, 0, sizeof *out);
  out->time_us = NCCLZ_CHOICE_NO_TIME;
  for (int a = 0; a < NCCLZ_ALGO_COUNT; a++)
    for (int c = 0; c < NCCLZ_CHOICE_CODERS; c++) {
      int allowed = a != NCCLZ_ALGO_AUTO && (!in->algorithms || (in->algorithms >> a & 1)) &&
                    (!in->coders || (in->coders >> c & 1));
      double t = allowed ? ncclzChoicePairUs(prof, in, (ncclzAlgorithm)a, (ncclzChoiceCoder)c) : NCCLZ_CHOICE_NO_TIME;
      out->pair_us[a][c] = t;
      if (t < out->time_us) { /* ties keep the earlier pair: plain before coders, the ring first */
        out->time_us = t;
        out->algorithm = (ncclzAlgorithm)a;
        out->coder = (ncclzChoiceCoder)c;
      }
    }
  if (out->time_us >= NCCLZ_CHOICE_NO_TIME)
    return ncclzSetError(NCCLZ_ERR_ARG, "no allowed (algorithm, coder) pair runs %s on %d x %d ranks",
                         ncclzCollectiveName(in->coll), in->nodes, in->gpus_per_node);
  return NCCLZ_OK;
}
