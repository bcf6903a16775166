/* The cost model's price of Broadcast (one chain a channel from the root, and the chunk count the
 * executor cuts it into) and of Alltoall's pairwise exchange. */
#include "choose_internal.h"

#include <math.h>
#include <string.h>

/* ------------------------------------------------------------------ chains */

/* Time (us) of one channel's chain of C chunks of `range` bytes at compression ratio cr under a
 * coder (-1: plain): the root encodes, each rank decodes beside forwarding, so the pipeline fills
 * over every hop once (M(G-1) NVLink hops, M-1 NIC hops) and then delivers one chunk a period of its
 * slowest stage; the rank's codec streams take every channel's chunks in turn. */
static double chain_us(const ncclzProfile *prof, const ncclzChoiceInput *in, double range, double C, int coder,
                       double cr) {
  double raw = range / C, ch = choice_channels_of(in), w = raw;
  if (coder > NCCLZ_CODER_RAW) w = fmax(raw / cr, NCCLZ_FRAME_HEADER_BYTES);
  double e = ch * choice_codec_us(prof, in, coder, 0, raw), d = ch * choice_codec_us(prof, in, coder, 1, raw);
  double nic_hops = in->nodes - 1.0, nv_hops = (double)in->nodes * (in->gpus_per_node - 1);
  link_t nic = choice_link_of(in, 1), nv = choice_link_of(in, 0);
  double t_nic = nic.alpha_us + choice_share_us(nic, ceil(ch / in->rails), w),
         t_nv = nv.alpha_us + choice_share_us(nv, 1, w);
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
      cr[n] = in->cr_ranks ? choice_cr_of(in, c, 1) : (double)(1 << r);
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
double choice_broadcast_us(const ncclzProfile *prof, const ncclzChoiceInput *in, ncclzChoiceCoder pol) {
  double ch = choice_channels_of(in), range = (double)in->bytes / ch;
  if (pol == NCCLZ_CHOICE_PLAIN)
    return chain_us(prof, in, range, fmax(1.0, ceil(range / NCCLZ_NCCL_BCAST_SLICE_BYTES)), -1, 1.0);
  ncclzChoiceInput cut = *in;
  cut.cr_ranks = 0;
  double C = ncclzChainChunks(prof, &cut, range, pol);
  int coder = pol == NCCLZ_CHOICE_FIXEDLEN  ? NCCLZ_CODER_FIXEDLEN
              : pol == NCCLZ_CHOICE_HUFFMAN ? NCCLZ_CODER_HUFFMAN
                                            : choice_rea_call_coder(prof, in, range / C, C, C * ch);
  return coder < 0 ? -1.0 : chain_us(prof, in, range, C, coder, choice_cr_of(in, coder, 1));
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
  link_t nv = choice_link_of(in, 0), nic = choice_link_of(in, 1);
  double t_nv = g > 1 ? nv.alpha_us + choice_share_us(nv, g - 1.0, b) : 0.0;
  double t_nic = in->nodes > 1 ? nic.alpha_us + choice_share_us(nic, ceil((double)g / in->rails) * (n - g), b) : 0.0;
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
  double range = b / choice_channels_of(in), raw = b / c, frames = (n - 1.0) * c;
  if (c > ALLTOALL_BANKS) {
    plan p;
    memset(&p, 0, sizeof p);
    p.chunk_range = range;
    if (g > 1) choice_add_stage(&p, g - 1.0, b, 1, 0, 1);
    if (in->nodes > 1) choice_add_stage(&p, (double)(n - g), b, 1, 1, rail_gpus);
    return choice_plan_us(prof, in, &p, pol, cd);
  }
  double e = choice_codec_us(prof, in, cd, 0, raw), d = choice_codec_us(prof, in, cd, 1, raw),
         w = choice_frame_wire(in, cd, 1, raw);
  link_t nv = choice_link_of(in, 0), nic = choice_link_of(in, 1);
  double encoded = frames * e, decoded = frames * d;
  link_t first = in->nodes > 1 ? nic : nv; /* the first frame's way (a NIC's where there is one) */
  double landed = e + first.alpha_us + choice_share_us(first, 1, w) + fmax(decoded, encoded - e + d);
  /* a link's last frame: all its frames' bytes from the first encode on (bound), or the last
   * encode and its one frame (paced) */
  double bound = 0.0, paced = encoded;
  if (in->nodes > 1) {
    bound = e + nic.alpha_us + choice_share_us(nic, rail_gpus * (n - g) * c, w);
    paced = fmax(paced, encoded + nic.alpha_us + choice_share_us(nic, rail_gpus, w));
  }
  if (g > 1) {
    bound = fmax(bound, e + nv.alpha_us + choice_share_us(nv, (g - 1.0) * c, w));
    paced = fmax(paced, encoded + nv.alpha_us + choice_share_us(nv, 1, w));
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
double choice_alltoall_us(const ncclzProfile *prof, const ncclzChoiceInput *in, ncclzChoiceCoder pol) {
  if (pol == NCCLZ_CHOICE_PLAIN) return alltoall_plain_us(in);
  int n = in->nodes * in->gpus_per_node;
  double b = (double)in->bytes / n, c = choice_chunks_of(prof, in, b / choice_channels_of(in), 0);
  int cd = pol == NCCLZ_CHOICE_FIXEDLEN  ? NCCLZ_CODER_FIXEDLEN
           : pol == NCCLZ_CHOICE_HUFFMAN ? NCCLZ_CODER_HUFFMAN
                                         : choice_rea_call_coder(prof, in, b / c, c, (n - 1.0) * c);
  return cd < 0 ? -1.0 : alltoall_coded_us(prof, in, pol, cd, c);
}
