/* The cost model's price of NCCL's tree AllReduce (docs/simulator.md, "Algorithm choice"): one
 * chunk a tree, the pipelined plain tree with its chains' fill, and the compressed tree's codec
 * streams on several channels. */
#include "choose_internal.h"

#include <math.h>

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
double choice_tree_us(const ncclzProfile *prof, const ncclzChoiceInput *in, double ch, ncclzChoiceCoder pol) {
  int plain = pol == NCCLZ_CHOICE_PLAIN, g = in->gpus_per_node, h = in->nodes > 1 ? ilog2(in->nodes - 1) + 1 : 0;
  double range = (double)in->bytes / 2 / ch, C = choice_chunks_of(prof, in, range, plain), raw = range / C;
  double k = (double)in->nodes * g;
  int cn = choice_step_coder(prof, in, pol, 1, k, raw, 1.0);
  int cv = pol == NCCLZ_CHOICE_REA ? NCCLZ_CODER_RAW : choice_step_coder(prof, in, pol, 0, k, raw, 1.0);
  link_t l = choice_link_of(in, 1), nv = choice_link_of(in, 0);
  double t = choice_share_us(l, tree_nic_trees(g, (int)ch, in->rails), choice_frame_wire(in, cn, k, raw));
  double e = choice_codec_us(prof, in, cn, 0, raw), d = choice_codec_us(prof, in, cn, 1, raw);
  double tnv = choice_share_us(nv, 1, choice_frame_wire(in, cv, k, raw));
  double codec_nv = choice_codec_us(prof, in, cv, 0, raw) + choice_codec_us(prof, in, cv, 1, raw);
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
