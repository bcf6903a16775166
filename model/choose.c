/* The (algorithm, coder policy) cost model of a call (docs/simulator.md, "Algorithm choice"):
 * each algorithm is a list of stages of like steps (docs/simulator.md's closed forms, step by
 * step), each step a pipeline of its chunks through encode, transfer and decode, with the
 * profile's codec curves and, for REA, REA's own decision functions (rea_decide.h). The
 * simulator's auto and the executor's auto both take their (algorithm, coder) pair here. */
#include "rea_decide.h"

#include <math.h>
#include <string.h>

static const char *const coder_names[NCCLZ_CHOICE_CODERS] = {"plain", "fixedlen", "huffman", "rea"};

const char *ncclzChoiceCoderName(ncclzChoiceCoder c) {
  return (unsigned)c < NCCLZ_CHOICE_CODERS ? coder_names[c] : "?";
}

/* Steps of one shape in a row: one transfer per rank and step, of `bytes` raw bytes in the first
 * step and `grow` times the step before after it. */
typedef struct {
  double steps;
  double bytes, grow;
  double k, kmul, kadd; /* ranks the first step's frames sum; the next step's: k * kmul + kadd */
  int net;              /* the transfers cross the NICs (else NVLink) */
  double flows;         /* transfers that share one NIC (or one GPU's NVLink) at once */
  double nv_flows;      /* ring: a concurrent NVLink hop carries this many such transfers (0: none) */
  double lanes;         /* ring: channels whose chunks one rank's codec streams take in turn (0: 1) */
  int reduce;           /* receives are added before the next step sends them: decode on the path */
  int forward;          /* after its first step the stage forwards the frames it received */
  int regather;         /* a doubling step: the next step encodes what this one received, once decoded */
  int halving;          /* a halving step: the next step sends half of what this one received, its
                           sends waiting for this step's last chunk (schedule/stages.c sched_find_dep) */
} stage;

#define MAX_STAGES 12 /* hier's AllReduce with a fold takes 8 */
typedef struct {
  stage st[MAX_STAGES];
  int n;
  double chunk_range; /* the range one op moves, in bytes, which sets the chunks (as the replay's size_job) */
} plan;

/* The link a stage's transfers take. */
typedef struct {
  double alpha_us;
  double gbps;      /* what `flows` transfers share */
  double flow_gbps; /* the most one transfer gets (0: no cap) */
} link_t;

static int ilog2(long x) {
  int l = 0;
  while ((1L << (l + 1)) <= x) l++;
  return l;
}

static stage *add_stage(plan *p, double steps, double bytes, double grow, int net, double flows) {
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
    stage *rs = add_stage(p, steps, b, 1, net, flows);
    set_k(rs, 1, 1, 1);
    rs->reduce = 1;
    rs->nv_flows = net ? ch : 0;
    rs->lanes = ch;
  }
  if (in->coll != NCCLZ_REDUCESCATTER) {
    stage *ag = add_stage(p, steps, b, 1, net, flows);
    set_k(ag, in->coll == NCCLZ_ALLREDUCE ? n : 1, 1, 0);
    ag->forward = 1;
    ag->nv_flows = net ? ch : 0;
    ag->lanes = ch;
  }
}

/* `steps` doubling steps from `bytes` (each doubles), k ranks summed: each ends once its last chunk
 * is decoded, as the next step encodes what it received (regather). */
static void add_doubling(plan *p, double steps, double bytes, int net, double flows, double k) {
  stage *d = add_stage(p, steps, bytes, 2, net, flows);
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
      stage *f = add_stage(p, 1, S, 1, fold_net, fold_net ? flows : 1);
      set_k(f, wk, 1, 0);
      f->reduce = 1;
    }
    if (nets) {
      stage *h = add_stage(p, nets, S / 2, 0.5, 1, flows);
      set_k(h, wk * (rem ? 2 : 1), 2, 0);
      h->reduce = h->halving = 1;
    }
    if (lg - nets) {
      stage *h = add_stage(p, lg - nets, S / 2 / (1 << nets), 0.5, 0, 1);
      set_k(h, wk * (rem ? 2 : 1) * (1 << nets), 2, 0);
      h->reduce = h->halving = 1;
    }
    if (in->coll == NCCLZ_REDUCESCATTER && rem) set_k(add_stage(p, 1, unit, 1, fold_net, fold_net ? flows : 1), wk * n, 1, 0);
  }
  if (in->coll != NCCLZ_REDUCESCATTER) {
    double k = in->coll == NCCLZ_ALLREDUCE ? wk * n : wk;
    if (in->coll == NCCLZ_ALLGATHER && rem) set_k(add_stage(p, 1, unit, 1, fold_net, fold_net ? flows : 1), k, 1, 0);
    double first = S / pof2;
    if (lg - nets) add_doubling(p, lg - nets, first, 0, 1, k);
    if (nets) add_doubling(p, nets, first * (1 << (lg - nets)), 1, flows, k);
    if (rem) set_k(add_stage(p, 1, S, 1, fold_net, fold_net ? flows : 1), k, 1, 0);
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
  if (in->coll == NCCLZ_ALLGATHER) set_k(add_stage(p, 1, S / n, 1, 1, flows), 1, 1, 0);
  else {
    stage *rs = add_stage(p, g - 1, part, 1, 0, 1);
    set_k(rs, 1, 1, 1);
    rs->reduce = 1;
  }
  plan_rhd_group(in, m, S / n, 1, in->coll == NCCLZ_ALLGATHER ? 1 : g, flows, p);
  if (in->coll == NCCLZ_REDUCESCATTER) set_k(add_stage(p, 1, S / n, 1, 1, flows), n, 1, 0);
  else {
    stage *ag = add_stage(p, g - 1, part, 1, 0, 1);
    set_k(ag, in->coll == NCCLZ_ALLGATHER ? 1 : n, 1, 0);
    ag->forward = 1;
  }
}

/* ------------------------------------------------------------------ frames */

static double cr_of(const ncclzChoiceInput *in, int coder, double k) {
  if (coder == NCCLZ_CODER_RAW || in->cr_ranks == 0) return 1.0;
  uint32_t i = k <= 1 ? 0 : (uint32_t)fmin(k - 1, (double)(in->cr_ranks - 1));
  double cr = in->cr[coder][i];
  return cr > 0 ? cr : 1.0;
}

/* Wire bytes of a frame of raw bytes summing k ranks (RAW: raw + the header; a coder: raw / CR, at
 * least the header); plain NCCL sends the raw bytes. */
static double frame_wire(const ncclzChoiceInput *in, int coder, double k, double raw) {
  if (coder < 0) return raw;
  if (coder == NCCLZ_CODER_RAW) return raw + NCCLZ_FRAME_HEADER_BYTES;
  double b = raw / cr_of(in, coder, k);
  return b < NCCLZ_FRAME_HEADER_BYTES ? NCCLZ_FRAME_HEADER_BYTES : b;
}

static double codec_us(const ncclzProfile *prof, const ncclzChoiceInput *in, int coder, int decode, double raw) {
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
  for (int c = 0; c < NCCLZ_CODER_COUNT; c++) pred[c] = frame_wire(in, c, k, raw);
  ncclzReaLink link; /* what one transfer of the hop gets */
  link.hint = hint;
  link.alpha_us = net ? in->nic_alpha_us : in->nvlink_alpha_us;
  link.beta_gbps = !net ? in->nvlink_gbps
                   : in->nic_flow_gbps > 0 && in->nic_flow_gbps < in->nic_gbps ? in->nic_flow_gbps : in->nic_gbps;
  return ncclzReaDecidePredicted(prof, &cfg, link, in->data_class, raw, pipeline, pred, dec);
}

/* ------------------------------------------------------------------ timing */

/* A call's chunks per op: the range one op moves cut into chunks of chunk_bytes, min..max. */
static double chunks_of(const ncclzProfile *prof, const ncclzChoiceInput *in, double range, int plain) {
  double chunk = (double)(in->chunk_bytes ? in->chunk_bytes : ncclzProfileFrameBytes(prof));
  double lo = in->min_chunks ? in->min_chunks : plain ? 1 : 2;
  double hi = in->max_chunks ? in->max_chunks : NCCLZ_DEFAULT_MAX_CHUNKS;
  double c = ceil(range / chunk);
  return c < lo ? lo : c > hi ? hi : c;
}

static link_t link_of(const ncclzChoiceInput *in, int net) {
  link_t l;
  l.alpha_us = net ? in->nic_alpha_us : in->nvlink_alpha_us;
  l.gbps = net ? in->nic_gbps : in->nvlink_gbps;
  l.flow_gbps = net && in->nic_flow_gbps > 0 ? in->nic_flow_gbps : 0;
  return l;
}

/* Time (us) of `bytes` for each of `flows` transfers sharing a link. */
static double share_us(link_t l, double flows, double bytes) {
  double t = flows * bytes / (l.gbps * 1e3);
  return l.flow_gbps > 0 ? fmax(t, bytes / (l.flow_gbps * 1e3)) : t;
}

/* The running total of a call: the steps so far, when the decode stream is free (decodes that
 * no send waits for run there behind the transfers), and the last step's pipeline (its drain). */
typedef struct {
  double sum, dec_free;
  double next; /* the next step's start where it waits for more than this step's pace (halving) */
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
static int step_coder(const ncclzProfile *prof, const ncclzChoiceInput *in, ncclzChoiceCoder pol, int net, double k,
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
static double plan_us(const ncclzProfile *prof, const ncclzChoiceInput *in, const plan *p, ncclzChoiceCoder pol,
                      int call_coder) {
  int plain = pol == NCCLZ_CHOICE_PLAIN;
  double C = plain ? 1 : chunks_of(prof, in, p->chunk_range, 0);
  clock_t_ ck;
  memset(&ck, 0, sizeof ck);
  for (int s = 0; s < p->n; s++) {
    const stage *st = &p->st[s];
    link_t l = link_of(in, st->net), nv = link_of(in, 0);
    double bytes = st->bytes, k = st->k;
    int coder = -1;
    long n = (long)st->steps;
    double stagger = 0.0; /* the stage's first encode, the offset its chunks keep when forwarded */
    for (long i = 0; i < n; i++) {
      double raw = bytes / C;
      if (i == 0 || !st->forward)
        coder = call_coder >= 0 ? call_coder : step_coder(prof, in, pol, st->net, k, raw, C);
      double w = frame_wire(in, coder, k, raw);
      double t = share_us(l, st->flows, w);
      if (st->nv_flows > 0) t = fmax(t, share_us(nv, st->nv_flows, w));
      /* the channels' transfers run side by side, their codec work on the rank's streams in turn */
      double lanes = st->lanes > 1 ? st->lanes : 1;
      double e = (i == 0 || !st->forward) ? lanes * codec_us(prof, in, coder, 0, raw) : 0.0;
      double d = lanes * codec_us(prof, in, coder, 1, raw);
      if (i == 0) stagger = e;
      step(&ck, C, e, l.alpha_us, t, d, lanes, st->reduce, st->forward, st->regather, st->halving, stagger);
      bytes *= st->grow;
      k = k * st->kmul + st->kadd;
    }
  }
  return clock_end(&ck);
}

/* A pipeline step of a transfer and codec work that overlap by half. */
static double half_overlap(double wire, double work) { return fmax(wire, work) + fmin(wire, work) / 2; }

/* NCCL's binary tree with one chunk a tree: nothing pipelines, so the time is the chunk's way up
 * the deepest branch and back down, each level a latency and its NIC's load (two children's chunks
 * below the root, one at it): (4h - 2) t + 2h alpha at M = 2^h; 2 t less at M = 2^k + 1 (the root
 * and its one child take one chunk each), t less at the other counts (the replay's, G = 1 to 8,
 * 2 to 64 nodes: docs/simulator.md, "Algorithms"). */
static double one_chunk_levels(int nodes, int h, double t, double alpha) {
  if (nodes < 2) return 0.0;
  int pow2 = (nodes & (nodes - 1)) == 0, pow2_plus1 = ((nodes - 1) & (nodes - 2)) == 0;
  double less = pow2 ? 0.0 : pow2_plus1 ? 2.0 : 1.0;
  return (4.0 * h - 2 - less) * t + 2.0 * h * alpha;
}

/* The chains' fill through the node, up and down, in chunks of tnv: each of the G - 1 hops a
 * chunk sharing its NVLink edge with ch other chains on average once the tree's C chunks fill the
 * chain; n = G - 1 - C hops unfilled take n (n + 1) chunks less at ch = G channels (two chains a
 * GPU), half that at ch = G/2 (one), a share ch/G of it below; never less than one chunk alone
 * going up and down the chain, 2 (G - 1) (one chunk a tree, or one channel). */
static double chain_fill_chunks(double g, double ch, double C) {
  double n = fmax(0.0, g - 1 - C), shared = (g - 1) * (ch + 1) - fmin(ch / g, 1.0) * n * (n + 1);
  return fmax(2 * (g - 1), shared);
}

/* The most trees of one kind (0 or 1) whose heads leave a node through one NIC: schedule/algorithms.c's
 * placement (tree t of channel q headed by GPU (2q + t) G/(2C) when 2C <= G, else by (q G/C + t G/2)
 * mod G) on the platform's rails (GPU i on rail i mod R). A node is interior in one kind, so its
 * NIC takes that many interior trees' chunks (one with C = G = R, and with one rail and channel;
 * two with R = 2 or 4 rails of 8 GPUs, where every head or every tree 0's head is on even rails). */
static double tree_nic_trees(int g, int ch, int rails) {
  int most = 1;
  for (int r = 0; r < rails; r++)
    for (int t = 0; t < 2; t++) {
      int n = 0;
      for (int q = 0; q < ch; q++) {
        long head = 2 * ch <= g ? (long)(2 * q + t) * g / (2 * ch) : ((long)q * g / ch + (long)t * (g / 2)) % g;
        n += head % rails == r;
      }
      most = n > most ? n : most;
    }
  return most;
}

/* The tree where the broadcast's decodes set the pace (several channels, each tree's NIC hop
 * short against a chunk's codec work, nodes with two NIC children; one channel waits for no other
 * channel's frames, and 2 or 3 nodes are chains: counted there, REA's tree on 3 x 8, 8 rails, 1
 * GiB at 3.125 GB/s went from 0.98 to 1.11 of its replay): every tree
 * reduces all its chunks before it broadcasts them (schedule/algorithms.c sched_build_tree), so the rank's one
 * decode stream takes the broadcast's frames, every channel's (down a chunk), only once the reduce
 * is done. The reduce: after the first chunk's way up (in the fill, as in the pipeline's), C - 1
 * chunks, each received (its NIC's arrivals), decoded, summed and encoded before the interior node
 * posts the next chunk's receives (reduce a chunk), or the rank's encodes of every channel where
 * the chains code too (up_codec a chunk). */
static double phased_us(double C, double reduce, double up_codec, double down, double fill) {
  return (C - 1) * fmax(reduce, up_codec) + C * down + fill;
}

/* NCCL's tree AllReduce over C channels: per channel two binary trees between nodes, each with
 * half of S/C in chunks, a chain of G GPUs inside the node. An interior node takes two children's
 * chunks through its NIC, decodes both and encodes their sum, one chunk after another, and waits
 * behind the other channels' work on the rank's codec streams (or those streams set the pace); the
 * pipeline fills over the depth, the reduce going up (a transfer, encode and decode a level) and
 * the broadcast coming down (frames forwarded as they are). Plain: the replay's closed form where
 * the NIC sets the pace (docs/simulator.md, "Algorithms"), (2C + 2d - 3)(2 tau + alpha) - tau
 * with d = ceil(log2 M) (2 nodes: 2C tau + (C - 1) alpha), plus the chains' fill through the
 * node; with one chunk a tree, its way through the levels (one_chunk_levels). */
static double tree_us(const ncclzProfile *prof, const ncclzChoiceInput *in, double ch, ncclzChoiceCoder pol) {
  int plain = pol == NCCLZ_CHOICE_PLAIN, g = in->gpus_per_node, h = in->nodes > 1 ? ilog2(in->nodes - 1) + 1 : 0;
  double range = (double)in->bytes / 2 / ch, C = chunks_of(prof, in, range, plain), raw = range / C;
  double k = (double)in->nodes * g;
  int cn = step_coder(prof, in, pol, 1, k, raw, 1.0);
  int cv = pol == NCCLZ_CHOICE_REA ? NCCLZ_CODER_RAW : step_coder(prof, in, pol, 0, k, raw, 1.0);
  link_t l = link_of(in, 1), nv = link_of(in, 0);
  double t = share_us(l, tree_nic_trees(g, (int)ch, in->rails), frame_wire(in, cn, k, raw));
  double e = codec_us(prof, in, cn, 0, raw), d = codec_us(prof, in, cn, 1, raw);
  double tnv = share_us(nv, 1, frame_wire(in, cv, k, raw));
  double codec_nv = codec_us(prof, in, cv, 0, raw) + codec_us(prof, in, cv, 1, raw);
  /* one channel's chunk: its transfers and its codec work overlap by half. A node's NIC takes two
   * chunks a step (two children's, or a child's and the parent's); between two nodes each tree's
   * root has one child, and the two trees' chunks cross in opposite directions: one a step. */
  double arrivals = in->nodes == 2 ? 1.0 : 2.0;
  /* or NVLink's share of a step where it is the slower: the chains of 2C (G - 1)/G trees an edge,
   * their latencies mostly hidden behind each other's chunks (docs/simulator.md) */
  double nic_wire = arrivals * (t + l.alpha_us / 2), nv_wire = 2 * ch * (g - 1.0) / g * tnv + nv.alpha_us;
  double work = 2 * d + e, nic_period = half_overlap(nic_wire, work);
  double period = half_overlap(fmax(nic_wire, nv_wire), work);
  /* The rank's codec streams take every channel's chunks (one encode and one decode stream for
   * the 2C trees, as the replay's). A node is interior in one tree (two children's frames decoded,
   * their sum encoded, the parent's decoded) and a leaf in the other (its chunk encoded, the
   * parent's decoded); every tree reduces its chunks before it broadcasts them, the channels in
   * step, so the streams run the reduce's encodes beside its decodes and then the broadcast's
   * decodes. Forced coders: 2C of each a chunk going up, 2C decodes coming down; REA codes the NIC
   * hops only: a rank codes the channels whose NIC hop it is (own), and decodes every channel's
   * frames coming down. */
  double own = pol == NCCLZ_CHOICE_REA ? ceil(ch / g) : ch;
  /* With forced coders, where a GPU heads one tree (2C <= G), the interior tree's head decodes its
   * two NIC children's frames beside the chains' 2C (REA's own counts them): 2 d more a chunk. A
   * fit: counted at C = G as well, 8 rails were priced up to 10% over their replay. */
  int interior = in->nodes >= 4; /* a node with two NIC children (2 and 3 nodes: chains) */
  double nic_children = interior && pol != NCCLZ_CHOICE_REA && 2 * ch <= g ? 2 * d : 0.0;
  /* REA's roots send their node's chains RAW frames (NVLink hops): on 2 nodes, each the root of
   * one kind of tree, half the frames coming down are RAW */
  double up_codec = 2 * own * fmax(d, e), down = (pol == NCCLZ_CHOICE_REA && in->nodes == 2 ? ch : 2 * ch) * d;
  double streams = C * (up_codec + nic_children + down);
  /* the pipeline's fill: two chunk steps a level below the first, less a chunk (between two
   * nodes the first chunk down waits for the first chunk up: alpha more at G >= 2 than at G = 1) */
  double levels = in->nodes == 2 ? t + l.alpha_us * (g > 1 ? 0.5 : -0.5) : (2 * h - 2) * (2 * t + l.alpha_us) - t;
  /* and the chains' through the node, up and down: a latency and the codec work a hop, and their
   * chunks (chain_fill_chunks) */
  double chain_bw = chain_fill_chunks(g, ch, C) * tnv;
  double tail = h * (e + d) + (g - 1.0) * (2 * nv.alpha_us + codec_nv) + d;
  if (C < 2) return fmax(one_chunk_levels(in->nodes, h, t, l.alpha_us), streams) + tail + chain_bw;
  double pipe = (2 * C - 1) * nic_period + fmax(0.0, levels) + tail + chain_bw;
  /* where NVLink sets the pace the chains fill while their edges carry fewer flows, but a few
   * chunks leave too few steps to hide the fill in: never under the NIC's pipeline */
  if (nv_wire > nic_wire) pipe = fmax(pipe, (2 * C - 1) * period + fmax(0.0, levels) + tail);
  /* The pipeline's period holds its own channel's codec work (the node's interior tree and its
   * leaf tree); an interior node's next receive is posted once its sum is sent, so every step also
   * waits behind the other C - 1 channels' frames on the shared streams. That wait and the
   * pipeline add in quadrature (a fit to the replay, docs/simulator.md "Algorithm choice"; one
   * channel waits for none); codec-bound, the call is the streams plus the first chunk's way up
   * and the last's down through the levels' codec work. */
  double others = streams * (ch - 1) / ch, codec_paced = streams + 2 * fmax(0.0, h - 1.0) * (e + d);
  double fill = fmax(0.0, levels) + tail;
  double phased = interior && ch > 1 ? phased_us(C, nic_wire + work, up_codec, down, fill) : 0.0;
  return fmax(fmax(hypot(pipe, others), codec_paced), phased);
}

/* REA decides once per call, as the executor: the first chunk's frame of raw bytes (one rank's
 * codes) in a pipeline of C frames on the communicator's link, then whether the call's `units`
 * frame sends pay for its interface (ncclzReaCallWorthIt; the host's time per unit is handed back,
 * as the replay does under the piggy-backed headers). -1: the call runs as plain NCCL. */
static int rea_call_coder(const ncclzProfile *prof, const ncclzChoiceInput *in, double raw, double C, double units) {
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
  return rea_call_coder(prof, in, p->chunk_range / C, C, steps * C * ch);
}

static uint32_t channels_of(const ncclzChoiceInput *in) { return in->channels ? in->channels : (uint32_t)in->rails; }

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
  sp.nchannels = channels_of(in);
  sp.hier_inter = NCCLZ_ALGO_RHD;
  return a > NCCLZ_ALGO_AUTO && a < NCCLZ_ALGO_COUNT && ncclzScheduleCheck(&sp, why, sizeof why) == 0 &&
         ncclzChoiceServes(in->coll);
}

static double broadcast_us(const ncclzProfile *prof, const ncclzChoiceInput *in, ncclzChoiceCoder pol);
static double alltoall_us(const ncclzProfile *prof, const ncclzChoiceInput *in, ncclzChoiceCoder pol);

double ncclzChoicePairUs(const ncclzProfile *prof, const ncclzChoiceInput *in, ncclzAlgorithm algo,
                         ncclzChoiceCoder pol) {
  if ((unsigned)pol >= NCCLZ_CHOICE_CODERS || (pol != NCCLZ_CHOICE_PLAIN && !prof) || !runs(in, algo))
    return NCCLZ_CHOICE_NO_TIME;
  double S = (double)in->bytes, ch = channels_of(in), t;
  int net = in->nodes > 1;
  if (in->nodes * in->gpus_per_node == 1) return 0.0;
  if (in->coll == NCCLZ_BROADCAST || in->coll == NCCLZ_ALLTOALL) { /* one schedule: the coder's price */
    double (*one)(const ncclzProfile *, const ncclzChoiceInput *, ncclzChoiceCoder) =
        in->coll == NCCLZ_BROADCAST ? broadcast_us : alltoall_us;
    if ((t = one(prof, in, pol)) < 0) return one(prof, in, NCCLZ_CHOICE_PLAIN);
  } else if (algo == NCCLZ_ALGO_TREE) {
    t = tree_us(prof, in, ch, pol);
  } else {
    plan p;
    memset(&p, 0, sizeof p);
    if (algo == NCCLZ_ALGO_RING) plan_ring(in, S, (uint32_t)ch, &p);
    else if (algo == NCCLZ_ALGO_RHD) plan_rhd(in, S, &p);
    else plan_hier(in, S, &p);
    int call = -1;
    if (pol == NCCLZ_CHOICE_REA && algo == NCCLZ_ALGO_RING) {
      call = ring_call_coder(prof, in, &p, chunks_of(prof, in, p.chunk_range, 0), ch);
      if (call < 0) return plan_us(prof, in, &p, NCCLZ_CHOICE_PLAIN, -1);
    }
    t = plan_us(prof, in, &p, pol, call);
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

/* ------------------------------------------------------------------ chains */

/* Time (us) of one channel's chain of C chunks of `range` bytes at compression ratio cr under a
 * coder (-1: plain): the root encodes, each rank decodes beside forwarding, so the pipeline fills
 * over every hop once (M(G-1) NVLink hops, M-1 NIC hops) and then delivers one chunk a period of its
 * slowest stage; the rank's codec streams take every channel's chunks in turn. */
static double chain_us(const ncclzProfile *prof, const ncclzChoiceInput *in, double range, double C, int coder,
                       double cr) {
  double raw = range / C, ch = channels_of(in), w = raw;
  if (coder > NCCLZ_CODER_RAW) w = fmax(raw / cr, NCCLZ_FRAME_HEADER_BYTES);
  double e = ch * codec_us(prof, in, coder, 0, raw), d = ch * codec_us(prof, in, coder, 1, raw);
  double nic_hops = in->nodes - 1.0, nv_hops = (double)in->nodes * (in->gpus_per_node - 1);
  link_t nic = link_of(in, 1), nv = link_of(in, 0);
  double t_nic = nic.alpha_us + share_us(nic, ceil(ch / in->rails), w), t_nv = nv.alpha_us + share_us(nv, 1, w);
  double period = fmax(fmax(e, d), fmax(nic_hops > 0 ? t_nic : 0.0, nv_hops > 0 ? t_nv : 0.0));
  return e + d + nic_hops * t_nic + nv_hops * t_nv + (C - 1) * period;
}

#define CHAIN_GRID 8 /* chunk counts a factor 2^(1/8) apart (plain: within 1% of the best count, test_choice) */
#define CHAIN_CRS 4  /* an unknown CR: 1, 2, 4 and 8 */
#define CHAIN_ROWS (2 * CHAIN_CRS)

/* The cases a chain's count must serve: (coder, CR) rows. A forced coder is one coder, REA's frames
 * may take either (its per-frame choice does not see the chain's period); the data's CR where known
 * (cr_ranks > 0), else each of CHAIN_CRS. Plain: one row. Returns the rows. */
static int chain_rows(const ncclzProfile *prof, const ncclzChoiceInput *in, ncclzChoiceCoder pol, int *coder,
                      double *cr) {
  if (pol == NCCLZ_CHOICE_PLAIN || !prof) {
    coder[0] = -1;
    cr[0] = 1.0;
    return 1;
  }
  int n = 0;
  for (int c = NCCLZ_CODER_FIXEDLEN; c <= NCCLZ_CODER_HUFFMAN; c++) {
    if (pol != NCCLZ_CHOICE_REA && (c == NCCLZ_CODER_FIXEDLEN) != (pol == NCCLZ_CHOICE_FIXEDLEN)) continue;
    for (int r = 0; r < (in->cr_ranks ? 1 : CHAIN_CRS); r++, n++) {
      coder[n] = c;
      cr[n] = in->cr_ranks ? cr_of(in, c, 1) : (double)(1 << r);
    }
  }
  return n;
}

uint32_t ncclzChainChunks(const ncclzProfile *prof, const ncclzChoiceInput *in, double range, ncclzChoiceCoder pol) {
  int plain = pol == NCCLZ_CHOICE_PLAIN;
  double chunk = (double)(in->chunk_bytes ? in->chunk_bytes : ncclzProfileFrameBytes(prof));
  double lo = fmax(in->min_chunks ? in->min_chunks : plain ? 1 : 2, ceil(range / chunk));
  double hi = fmin(in->max_chunks ? in->max_chunks : NCCLZ_CHAIN_MAX_CHUNKS, ceil(range / NCCLZ_FRAME_HEADER_BYTES));
  if (hi <= lo || in->nodes * in->gpus_per_node < 2) return (uint32_t)fmax(1.0, fmin(lo, fmax(hi, 1.0)));
  /* the counts tried: lo, then a geometric grid up to hi */
  double grid[16 * CHAIN_GRID + 2], t[CHAIN_ROWS][16 * CHAIN_GRID + 2], best[CHAIN_ROWS];
  int n = 0;
  for (double c = lo; c < hi && n < 16 * CHAIN_GRID + 1; c = ceil(c * pow(2.0, 1.0 / CHAIN_GRID))) grid[n++] = c;
  grid[n++] = hi;
  int coder[CHAIN_ROWS];
  double cr[CHAIN_ROWS];
  int rows = chain_rows(prof, in, pol, coder, cr);
  for (int r = 0; r < rows; r++) {
    best[r] = NCCLZ_CHOICE_NO_TIME;
    for (int i = 0; i < n; i++) {
      t[r][i] = chain_us(prof, in, range, grid[i], coder[r], cr[r]);
      best[r] = fmin(best[r], t[r][i]);
    }
  }
  /* the count whose worst ratio to a row's best is least (one row: the fastest count) */
  int pick = 0;
  double pick_regret = NCCLZ_CHOICE_NO_TIME;
  for (int i = 0; i < n; i++) {
    double regret = 0;
    for (int r = 0; r < rows; r++) regret = fmax(regret, t[r][i] / best[r]);
    if (regret < pick_regret) {
      pick_regret = regret;
      pick = i;
    }
  }
  return (uint32_t)grid[pick];
}

/* Broadcast: one chain a channel from the root (the ring's), every chunk's transfer on each hop and
 * its codec work on the chain's period (chain_us): plain NCCL in its slices, a coder in the chunks
 * the executor cuts before it sees the data (ncclzChainChunks without the CR) at the CR of one
 * rank's codes (frames are forwarded as they are), REA with the coder of its call-level decision.
 * -1: REA runs the call as plain NCCL. */
static double broadcast_us(const ncclzProfile *prof, const ncclzChoiceInput *in, ncclzChoiceCoder pol) {
  double ch = channels_of(in), range = (double)in->bytes / ch;
  if (pol == NCCLZ_CHOICE_PLAIN)
    return chain_us(prof, in, range, fmax(1.0, ceil(range / NCCLZ_NCCL_BCAST_SLICE_BYTES)), -1, 1.0);
  ncclzChoiceInput cut = *in;
  cut.cr_ranks = 0;
  double C = ncclzChainChunks(prof, &cut, range, pol);
  int coder = pol == NCCLZ_CHOICE_FIXEDLEN ? NCCLZ_CODER_FIXEDLEN
              : pol == NCCLZ_CHOICE_HUFFMAN ? NCCLZ_CODER_HUFFMAN
                                            : rea_call_coder(prof, in, range / C, C, C * ch);
  return coder < 0 ? -1.0 : chain_us(prof, in, range, C, coder, cr_of(in, coder, 1));
}

/* ------------------------------------------------------------------ alltoall */

#define ALLTOALL_BANKS 2 /* staging banks a peer (the replay's default) */

/* Alltoall's pairwise exchange: rank r sends its block b = S/N to r + s and receives from r - s at
 * steps s = 1..N-1, G - 1 of them over its NVLink and N - G through its rail's NIC, which ceil(G/R)
 * GPUs share. Plain NCCL posts every transfer at once and the flows of a link share it to the end:
 * max(alpha_nv + (G-1) b/B_nv, alpha_nic + ceil(G/R)(N-G) b/B_nic), a flow at most its cap
 * (docs/simulator.md, "Algorithms"; test_sim holds the replay to this form). */
static double alltoall_plain_us(const ncclzChoiceInput *in) {
  int g = in->gpus_per_node, n = in->nodes * g;
  double b = (double)in->bytes / n;
  link_t nv = link_of(in, 0), nic = link_of(in, 1);
  double t_nv = g > 1 ? nv.alpha_us + share_us(nv, g - 1.0, b) : 0.0;
  double t_nic = in->nodes > 1 ? nic.alpha_us + share_us(nic, ceil((double)g / in->rails) * (n - g), b) : 0.0;
  return fmax(t_nv, t_nic);
}

/* Every frame of the call in coder cd: a block in c chunks (a channel's share of it over chunk_bytes,
 * as the replay cuts it), F = (N-1) c frames a rank, each encoded on the rank's encode stream before
 * it is posted. Within the staging banks (c <= 2 chunks a peer) a rank never waits on a transfer: it
 * encodes its F frames back to back, and each frame decodes as it lands, behind the ones before it
 * on the decode stream: the peers' frames land one encode apart after the first, so the decodes
 * end at e + alpha + w + max(F d, (F - 1) e + d), or after the links' last frame; the links take
 * the frames as they come, the NIC its backlog from the first encode on. More chunks a peer wait
 * for the banks: the steps run one after another, each a pipeline of its chunks (plan_us's gather
 * steps). */
static double alltoall_coded_us(const ncclzProfile *prof, const ncclzChoiceInput *in, ncclzChoiceCoder pol, int cd,
                                double c) {
  int g = in->gpus_per_node, n = in->nodes * g;
  double b = (double)in->bytes / n, rail_gpus = ceil((double)g / in->rails);
  double range = b / channels_of(in), raw = b / c, frames = (n - 1.0) * c;
  if (c > ALLTOALL_BANKS) {
    plan p;
    memset(&p, 0, sizeof p);
    p.chunk_range = range;
    if (g > 1) add_stage(&p, g - 1.0, b, 1, 0, 1);
    if (in->nodes > 1) add_stage(&p, (double)(n - g), b, 1, 1, rail_gpus);
    return plan_us(prof, in, &p, pol, cd);
  }
  double e = codec_us(prof, in, cd, 0, raw), d = codec_us(prof, in, cd, 1, raw), w = frame_wire(in, cd, 1, raw);
  link_t nv = link_of(in, 0), nic = link_of(in, 1);
  double encoded = frames * e, decoded = frames * d;
  link_t first = in->nodes > 1 ? nic : nv; /* the first frame's way (a NIC's where there is one) */
  double landed = e + first.alpha_us + share_us(first, 1, w) + fmax(decoded, encoded - e + d);
  /* a link's last frame: all its frames' bytes from the first encode on (bound), or the last
   * encode and its one frame (paced) */
  double bound = 0.0, paced = encoded;
  if (in->nodes > 1) {
    bound = e + nic.alpha_us + share_us(nic, rail_gpus * (n - g) * c, w);
    paced = fmax(paced, encoded + nic.alpha_us + share_us(nic, rail_gpus, w));
  }
  if (g > 1) {
    bound = fmax(bound, e + nv.alpha_us + share_us(nv, (g - 1.0) * c, w));
    paced = fmax(paced, encoded + nv.alpha_us + share_us(nv, 1, w));
  }
  if (bound <= paced) return fmax(landed, paced + d); /* frames land as they are encoded */
  /* A link shares its frames as they come (max-min: processor sharing), so where it is the
   * bottleneck they all end near its last one: once the encodes are done every frame in flight
   * has the same share, an earlier one only a head start of a few arrivals. A share p of a rank's
   * frames is still in flight E (-ln(1 - p) - p) before the link's end (E its encodes), so its
   * decodes (D) end D - E ln(1 + D/E) after it (the worst p, D/(D + E)). */
  double burst = encoded > 0 ? decoded - encoded * log1p(decoded / encoded) : decoded;
  return fmax(landed, bound + fmax(d, burst));
}

/* Alltoall: plain NCCL's closed form, a forced coder's frames, REA with the coder of its call-level
 * decision on a frame of the first chunk (-1: REA runs the call as plain NCCL). */
static double alltoall_us(const ncclzProfile *prof, const ncclzChoiceInput *in, ncclzChoiceCoder pol) {
  if (pol == NCCLZ_CHOICE_PLAIN) return alltoall_plain_us(in);
  int n = in->nodes * in->gpus_per_node;
  double b = (double)in->bytes / n, c = chunks_of(prof, in, b / channels_of(in), 0);
  int cd = pol == NCCLZ_CHOICE_FIXEDLEN ? NCCLZ_CODER_FIXEDLEN
           : pol == NCCLZ_CHOICE_HUFFMAN ? NCCLZ_CODER_HUFFMAN
                                         : rea_call_coder(prof, in, b / c, c, (n - 1.0) * c);
  return cd < 0 ? -1.0 : alltoall_coded_us(prof, in, pol, cd, c);
}
