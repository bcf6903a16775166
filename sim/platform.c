/* Platforms: defaults, validation, rank placement, and the SimGrid XML generated from them.
 *
 * C cannot build a SimGrid platform in 3.32, so we write XML. Layout (docs/simulator.md,
 * "Platform"):
 *   - a top zone with Full routing whose children are one zone per node;
 *   - in a node zone, one host per GPU, an NVLink link per GPU and one link per NIC rail, every
 *     link SPLITDUPLEX (the up and down directions are separate constraints), and a router as the
 *     node's gateway;
 *   - with nic_flow_gbps, a FATPIPE link per rail on the way out (each transfer through it moves at
 *     most that rate, transfers do not share it), so one transfer runs at min(flow, NIC) and several
 *     at once share the NIC: the NCCL socket transport over loopback, where one communicator's
 *     send/recv is capped below what the path carries;
 *   - routes: GPU -> GPU goes NVLink(src) UP, NVLink(dst) DOWN; GPU -> gateway goes
 *     through the GPU's NIC UP, gateway -> GPU through its NIC DOWN (GPUDirect RDMA: inter-node
 *     traffic does not touch NVLink);
 *   - node to node: for a non-blocking fabric, the source node's switch port, a link so wide
 *     that it never binds (SimGrid forbids empty routes; a per-node link keeps flows of different
 *     nodes in separate constraints, where a shared backbone slows large runs 8-fold); for a
 *     fat-tree hop that crosses leaves, the two leaf uplinks (UP at the source leaf, DOWN at the
 *     destination leaf).
 * Latencies: a link's latency counts once per direction crossed, so each link of a hop carries
 * its share (half of the NIC hop on each NIC). */
#include "sim_internal.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

void ncclzSimPlatformDefault(ncclzSimPlatform *p) {
  memset(p, 0, sizeof *p);
  p->nodes = 1;
  p->gpus_per_node = 8;
  p->nvlink_gbps = 450.0;
  p->nvlink_latency_us = 1.0;
  p->rails = 1;
  p->nic_gbps = 50.0;
  p->nic_latency_us = 5.0;
  p->topology = NCCLZ_TOPO_NONBLOCKING;
  p->nodes_per_leaf = 32;
  p->oversubscription = 1.0;
  p->uplink_latency_us = 0.0;
  p->placement = NCCLZ_PLACE_CONTIGUOUS;
  p->stride = 0;
  p->seed = 1;
  p->bandwidth_factor = 1.0;
}

#define BAD(field, ...) ncclzSetError(NCCLZ_ERR_ARG, "platform." field ": " __VA_ARGS__)

ncclzStatus ncclzSimPlatformValidate(const ncclzSimPlatform *p) {
  long n = (long)p->nodes * p->gpus_per_node;
  if (p->nodes < 1) return BAD("nodes", "must be >= 1");
  if (p->gpus_per_node < 1) return BAD("gpus_per_node", "must be >= 1");
  if (n > (1L << 20)) return BAD("nodes", "nodes x gpus_per_node must be at most 2^20");
  if (!(p->nvlink_gbps > 0.0)) return BAD("nvlink_gbps", "must be > 0");
  if (!(p->nvlink_latency_us >= 0.0)) return BAD("nvlink_latency_us", "must be >= 0");
  if (p->rails < 1 || p->rails > p->gpus_per_node) return BAD("rails", "must be in 1..gpus_per_node");
  if (!(p->nic_gbps > 0.0)) return BAD("nic_gbps", "must be > 0");
  if (!(p->nic_latency_us >= 0.0)) return BAD("nic_latency_us", "must be >= 0");
  if (!(p->nic_flow_gbps >= 0.0)) return BAD("nic_flow_gbps", "must be >= 0 (0: no cap per transfer)");
  if (p->topology == NCCLZ_TOPO_FATTREE) {
    if (p->nodes_per_leaf < 1) return BAD("nodes_per_leaf", "must be >= 1");
    if (!(p->oversubscription >= 1.0)) return BAD("oversubscription", "must be >= 1");
    if (!(p->uplink_latency_us >= 0.0)) return BAD("uplink_latency_us", "must be >= 0");
  }
  if (p->placement == NCCLZ_PLACE_STRIDED && p->stride != 0 && (p->stride < 1 || n % p->stride != 0))
    return BAD("stride", "must divide nodes x gpus_per_node (%ld)", n);
  if (!(p->bandwidth_factor > 0.0)) return BAD("bandwidth_factor", "must be > 0");
  return NCCLZ_OK;
}

/* splitmix64: a seeded, portable permutation source for RANDOM placement. */
static uint64_t splitmix(uint64_t *s) {
  uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

ncclzStatus ncclzSimPlace(const ncclzSimPlatform *p, int *node_of, int *gpu_of) {
  ncclzStatus st = ncclzSimPlatformValidate(p);
  if (st != NCCLZ_OK) return st;
  int g = p->gpus_per_node, n = p->nodes * g;
  int *slot = malloc((size_t)n * sizeof *slot);
  if (!slot) return ncclzSetError(NCCLZ_ERR_NOMEM, "placement: out of memory");
  int stride = p->stride ? p->stride : g;
  uint64_t seed = p->seed;
  for (int r = 0; r < n; r++) {
    if (p->placement == NCCLZ_PLACE_STRIDED)  /* stride | n: r*stride mod n, then the next offset */
      slot[r] = (int)(((int64_t)r * stride) % n + ((int64_t)r * stride) / n);
    else
      slot[r] = r;
  }
  if (p->placement == NCCLZ_PLACE_RANDOM)
    for (int r = n - 1; r > 0; r--) {  /* Fisher-Yates */
      int j = (int)(splitmix(&seed) % (uint64_t)(r + 1)), t = slot[r];
      slot[r] = slot[j];
      slot[j] = t;
    }
  for (int r = 0; r < n; r++) {
    node_of[r] = slot[r] / g;
    gpu_of[r] = slot[r] % g;
  }
  free(slot);
  return NCCLZ_OK;
}

void sim_host_name(char *buf, size_t cap, int node, int gpu) { snprintf(buf, cap, "n%dg%d", node, gpu); }

/* A switch port is this many times wider than the node's NICs together: it never binds. */
#define SWITCH_PORT_FACTOR 1000.0

static double bps(const ncclzSimPlatform *p, double gbps) { return gbps * 1e9 * p->bandwidth_factor; }

static int leaf_of(const ncclzSimPlatform *p, int node) {
  return p->topology == NCCLZ_TOPO_FATTREE ? node / p->nodes_per_leaf : 0;
}

sim_hop sim_hop_between(const ncclzSimPlatform *p, int node_a, int node_b) {
  sim_hop h;
  if (node_a == node_b) {
    h.hint = NCCLZ_HINT_NVLINK;
    h.alpha_us = p->nvlink_latency_us;
    h.beta_gbps = p->nvlink_gbps * p->bandwidth_factor;
    return h;
  }
  h.hint = NCCLZ_HINT_NET;
  h.alpha_us = p->nic_latency_us + (leaf_of(p, node_a) != leaf_of(p, node_b) ? p->uplink_latency_us : 0.0);
  double one = p->nic_flow_gbps > 0.0 && p->nic_flow_gbps < p->nic_gbps ? p->nic_flow_gbps : p->nic_gbps;
  h.beta_gbps = one * p->bandwidth_factor; /* what one transfer gets */
  return h;
}

sim_hop sim_hop_actors(const sim_layout *lay, int a, int b) {
  int na = lay->node_of[a], nb = lay->node_of[b];
  if (lay->loop && a == lay->nactors - 1 && b == 0) nb = na + 1; /* stands for the next node */
  return sim_hop_between(&lay->p, na, nb);
}

static void write_link(FILE *f, const char *id, double bw_bps, double lat_s) {
  fprintf(f, "  <link id=\"%s\" bandwidth=\"%.17gBps\" latency=\"%.17gs\" sharing_policy=\"SPLITDUPLEX\"/>\n", id,
          bw_bps, lat_s);
}

typedef struct {
  const char *id, *dir; /* dir NULL: a FATPIPE link, which has no directions */
} link_use;

static void write_route(FILE *f, const char *src, const char *dst, const link_use *l, int n) {
  fprintf(f, "  <route src=\"%s\" dst=\"%s\" symmetrical=\"NO\">", src, dst);
  for (int i = 0; i < n; i++)
    if (l[i].dir)
      fprintf(f, "<link_ctn id=\"%s\" direction=\"%s\"/>", l[i].id, l[i].dir);
    else
      fprintf(f, "<link_ctn id=\"%s\"/>", l[i].id);
  fprintf(f, "</route>\n");
}

static int gcd(int a, int b) { return b ? gcd(b, a % b) : a; }

/* A node's NVLink links and NIC rails as a replay sees them: one each a GPU and a rail, or with
 * fold = C (sim_layout.fold) one a link's orbit under the rotation by s = G/C local GPUs: s NVLink
 * links (GPU i's is i mod s), each of a link's bandwidth, and gcd(rails, s) NICs (i mod that), each
 * of its orbit's rails / gcd NICs' share of the C channels (a link that C / o channels' rotations
 * share carries C / o of channel 0's flows). */
typedef struct {
  int nvlinks, nics;
  double nic_bps;
} node_links;

static node_links links_of(const ncclzSimPlatform *p, int fold) {
  int s = fold ? p->gpus_per_node / fold : 0;
  node_links l = {p->gpus_per_node, p->rails, bps(p, p->nic_gbps)};
  if (fold) {
    l.nvlinks = s;
    l.nics = gcd(p->rails, s);
    l.nic_bps *= (double)(p->rails / l.nics) / fold;
  }
  return l;
}

/* One node: GPUs, their NVLink links, the NIC rails (and their per-transfer caps), the gateway
 * and the routes among them. */
static void write_node(FILE *f, const ncclzSimPlatform *p, int node, int loop, int fold) {
  int g = p->gpus_per_node, capped = p->nic_flow_gbps > 0.0;
  node_links nl = links_of(p, fold);
  char a[48], b[48], la[48], lb[48], gw[48], fl[48], na[48], nb[48];
  snprintf(gw, sizeof gw, "n%dgw", node);
  fprintf(f, " <zone id=\"n%d\" routing=\"Full\">\n", node);
  for (int i = 0; i < g; i++) {
    sim_host_name(a, sizeof a, node, i);
    fprintf(f, "  <host id=\"%s\" speed=\"1Gf\"/>\n", a);
  }
  fprintf(f, "  <router id=\"%s\"/>\n", gw);
  for (int i = 0; i < nl.nvlinks; i++) {
    snprintf(la, sizeof la, "n%dnv%d", node, i);
    write_link(f, la, bps(p, p->nvlink_gbps), p->nvlink_latency_us * 0.5e-6);
  }
  for (int r = 0; r < nl.nics; r++) {
    snprintf(la, sizeof la, "n%dnic%d", node, r);
    write_link(f, la, nl.nic_bps, p->nic_latency_us * 0.5e-6);
    if (capped)
      fprintf(f, "  <link id=\"n%dflow%d\" bandwidth=\"%.17gBps\" latency=\"0s\" sharing_policy=\"FATPIPE\"/>\n",
              node, r, bps(p, p->nic_flow_gbps));
  }
  for (int i = 0; i < g; i++) {
    sim_host_name(a, sizeof a, node, i);
    snprintf(la, sizeof la, "n%dnv%d", node, i % nl.nvlinks);
    snprintf(na, sizeof na, "n%dnic%d", node, i % nl.nics);
    snprintf(fl, sizeof fl, "n%dflow%d", node, i % nl.nics);
    snprintf(nb, sizeof nb, "n%dnic%d", node, 0);
    for (int j = 0; j < g; j++) {
      if (i == j) continue;
      sim_host_name(b, sizeof b, node, j);
      snprintf(lb, sizeof lb, "n%dnv%d", node, j % nl.nvlinks);
      if (loop && i == g - 1 && j == 0) { /* out through the NICs and back in */
        const link_use out[] = {{na, "UP"}, {nb, "DOWN"}, {fl, NULL}};
        write_route(f, a, b, out, capped ? 3 : 2);
      } else {
        const link_use nv[] = {{la, "UP"}, {lb, "DOWN"}};
        write_route(f, a, b, nv, 2);
      }
    }
    const link_use up[] = {{na, "UP"}, {fl, NULL}}, down[] = {{na, "DOWN"}};
    write_route(f, a, gw, up, capped ? 2 : 1);
    write_route(f, gw, a, down, 1);
  }
  fprintf(f, " </zone>\n");
}

int sim_collapses(const ncclzSimPlatform *p) {
  return p->gpus_per_node > 1 && p->gpus_per_node % p->rails == 0 && !(p->nic_flow_gbps > 0.0);
}

/* One node whose GPUs one actor plays (sim_layout.collapse): GPU 0 alone, its NVLink link carrying
 * the intra-node ring's hop to itself (GPU q's UP and GPU q+1's DOWN, one flow each, as here), and
 * its rail's NIC shared by the G/rails GPUs whose flows the actor's one flow stands for. */
static void write_collapsed_node(FILE *f, const ncclzSimPlatform *p, int node, int gpus) {
  char a[48], nv[48], nic[48], gw[48];
  sim_host_name(a, sizeof a, node, 0);
  snprintf(nv, sizeof nv, "n%dnv0", node);
  snprintf(nic, sizeof nic, "n%dnic0", node);
  snprintf(gw, sizeof gw, "n%dgw", node);
  fprintf(f, " <zone id=\"n%d\" routing=\"Full\">\n  <host id=\"%s\" speed=\"1Gf\"/>\n  <router id=\"%s\"/>\n", node,
          a, gw);
  write_link(f, nv, bps(p, p->nvlink_gbps), p->nvlink_latency_us * 0.5e-6);
  write_link(f, nic, bps(p, p->nic_gbps) * p->rails / gpus, p->nic_latency_us * 0.5e-6);
  const link_use self[] = {{nv, "UP"}, {nv, "DOWN"}}, up[] = {{nic, "UP"}}, down[] = {{nic, "DOWN"}};
  write_route(f, a, a, self, 2);
  write_route(f, a, gw, up, 1);
  write_route(f, gw, a, down, 1);
  fprintf(f, " </zone>\n");
}

/* Node-to-node routes: direct (non-blocking) or through the leaf uplinks (fat-tree). A fold's
 * channel carries 1/fold of what every channel's flows put on these links, which the rotation
 * leaves in place. */
static void write_fabric(FILE *f, const ncclzSimPlatform *p, int fold) {
  double share = fold ? 1.0 / fold : 1.0;
  int leaves = (p->nodes + (p->topology == NCCLZ_TOPO_FATTREE ? p->nodes_per_leaf : p->nodes) - 1) /
               (p->topology == NCCLZ_TOPO_FATTREE ? p->nodes_per_leaf : p->nodes);
  if (p->topology == NCCLZ_TOPO_FATTREE)
    for (int l = 0; l < leaves; l++) {
      char id[32];
      snprintf(id, sizeof id, "leaf%d", l);
      double cap = (double)p->nodes_per_leaf * p->rails * bps(p, p->nic_gbps) / p->oversubscription * share;
      write_link(f, id, cap, p->uplink_latency_us * 0.5e-6);
    }
  for (int a = 0; a < p->nodes; a++) {
    char id[32];
    snprintf(id, sizeof id, "n%dsw", a);
    write_link(f, id, SWITCH_PORT_FACTOR * bps(p, p->nic_gbps) * p->rails * share, 0.0);
  }
  for (int a = 0; a < p->nodes; a++)
    for (int b = 0; b < p->nodes; b++) {
      if (a == b) continue;
      int la = leaf_of(p, a), lb = leaf_of(p, b);
      fprintf(f, " <zoneRoute src=\"n%d\" dst=\"n%d\" gw_src=\"n%dgw\" gw_dst=\"n%dgw\" symmetrical=\"NO\">", a, b, a,
              b);
      if (la != lb)
        fprintf(f, "<link_ctn id=\"leaf%d\" direction=\"UP\"/><link_ctn id=\"leaf%d\" direction=\"DOWN\"/>", la, lb);
      else
        fprintf(f, "<link_ctn id=\"n%dsw\" direction=\"UP\"/>", a);
      fprintf(f, "</zoneRoute>\n");
    }
}

int sim_platform_write(FILE *f, const sim_layout *lay) {
  const ncclzSimPlatform *p = &lay->p;
  fprintf(f, "<?xml version='1.0'?>\n<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n");
  fprintf(f, "<platform version=\"4.1\">\n<zone id=\"world\" routing=\"Full\">\n");
  for (int n = 0; n < p->nodes; n++)
    if (lay->collapse) write_collapsed_node(f, p, n, lay->collapse);
    else write_node(f, p, n, lay->loop, lay->fold);
  write_fabric(f, p, lay->fold);
  fprintf(f, "</zone>\n</platform>\n");
  return ferror(f) ? -1 : 0;
}
