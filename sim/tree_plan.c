/* The plain tree's extrapolation in depth, planned (extrapolate.c sim_run_tree_extrapolated replays the plan):
 * which full tree is the base and which two trees measure a level.
 *
 * A pipelined tree's time is its steady state plus a fill that grows by the same time a level of
 * depth (d = ceil(log2 M), NCCL's binary tree over M nodes): a full tree of 2^b nodes plus d - b
 * levels. A plain tree's level adds the same chunk steps whatever the chunk count, so its time is
 * measured on trees of 2^(b-1) and 2^b nodes carrying SIM_TREE_STEP_CHUNKS chunks of the job's
 * size; the base is the deepest of 8 nodes or SIM_TREE_BASE_RANKS ranks (with all their chunks,
 * shallower trees fill apart from the deep ones' line where NVLink is the bottleneck or ties with
 * the NIC), SIM_TREE_DEEP_NODES where the chains hide latencies (tree_hides_latency). Where
 * tree_shape_base finds a base of M's shape, the base is that tree and the level the difference
 * between it and its deeper one with SIM_TREE_SHAPE_CHUNKS chunks (their fill grows by a share of
 * a chunk a level that two chunks do not show: G = 2, 2^k + 1 nodes); where tree_runs_base finds
 * one, the base is that tree and the level the power of two's. A compressed tree's level settles
 * deeper: its codec streams and the CR rows of the ranks its frames sum make the first levels
 * differ, so it is measured on trees of 16 and 32 nodes with SIM_TREE_STEP_CHUNKS chunks, beside
 * the full 8-node base (approximate: HUFFMAN's levels hide partly behind its streams). Measurements
 * behind each rule: docs/simulator.md, "Algorithms". */
#include "sim_internal.h"

#include <math.h>

#define SIM_TREE_BASE 8
#define SIM_TREE_BASE_RANKS 32
#define SIM_TREE_STEP_CHUNKS 2
/* Where NVLink sets the tree's pace and hops have latency, full trees hide more of the chains'
 * latencies the deeper they are, up to 32-64 nodes (docs/simulator.md, "Algorithms"): the base is
 * then the full tree of this many nodes (64 x 8 replays in about half a second, its channels
 * folded; 32 nodes left G = 5 to 8 0.05-0.34% over the full replay at 10 and 20 us). */
#define SIM_TREE_DEEP_NODES 64
/* A tree whose node count is not a power of two keeps its shape in a base of SIM_TREE_SHAPE_NODES
 * to SIM_TREE_SHAPE_RANKS / min(G, 2) nodes, its level measured with SIM_TREE_SHAPE_CHUNKS chunks.
 * 130 ranks: 65 x 2, the base a 2^k + 1 tree needs at G = 2 (the level from 33 nodes is 0.14 tau
 * off the deeper ones'). At G >= 3 the base and the deeper tree also keep to
 * SIM_TREE_SHAPE_MAX_RANKS (65 x 8), which the folded channels replay in about half a second. */
#define SIM_TREE_SHAPE_NODES 32
#define SIM_TREE_SHAPE_RANKS 130
#define SIM_TREE_SHAPE_MAX_RANKS 520
#define SIM_TREE_SHAPE_CHUNKS 16

/* 1 where a tree of m nodes of g GPUs may serve as a shape's base (or its deeper tree). */
static int shape_fits(int m, int g) {
  return m * (g < 2 ? g : 2) <= SIM_TREE_SHAPE_RANKS && m * g <= SIM_TREE_SHAPE_MAX_RANKS;
}

/* NCCL's binary tree over M nodes (schedule/algorithms.c btree_parent) is a spine from the root down M - 1's
 * binary digits, a full subtree hanging at each spine node, and the pipeline's fill moves with its
 * shape (G = 1: 2^k + 1 and 2^k + 2 nodes; G = 2: nearly every count). Write M's digits as a run
 * of a ones, a run of z zeros and the rest R (q digits): one zero more in that run deepens each
 * subtree that hangs at the leading ones' spine nodes by a level and keeps the rest of the tree,
 * and the second tree (mirrored or shifted by one, as M's parity says, which it keeps) meets it as
 * before. The base: the deepest such tree of z' < z zeros (at least one; two where R is empty, a
 * trailing run, whose second zero changes the fill at G = 2) within the shape's nodes and ranks;
 * *deeper the same with z' + 1 zeros; 0 for a power of two or where none fits. */
static int tree_shape_base(int m, int g, int *deeper) {
  int len = 0, a = 0, z = 0;
  while ((m >> len) > 1) len++;
  while (a <= len && (m >> (len - a)) & 1) a++;
  while (a + z <= len && !((m >> (len - a - z)) & 1)) z++;
  int q = len + 1 - a - z, rest = m & ((1 << q) - 1), head = (1 << a) - 1, zmin = q ? 1 : 2, base = 0, zb = 0;
  if ((a == 1 && !q) || (g >= 3 && m % 2 && !(a == 1 && q == 1))) return 0; /* G >= 3: odd counts but 2^k + 1 */
  for (int zz = zmin; zz < z; zz++) {
    int t = (head << (zz + q)) | rest;
    if (shape_fits(t, g) && (((head << (zz + 1 + q)) | rest) * g <= SIM_TREE_SHAPE_MAX_RANKS)) base = t, zb = zz;
  }
  if (base < SIM_TREE_SHAPE_NODES) return 0;
  *deeper = (head << (zb + 1 + q)) | rest;
  return base;
}

/* m's binary digits as runs from the top, ones and zeros in turn (len[0] the leading ones). */
static int digit_runs(int m, int *len) {
  int n = 0, top = 0;
  while ((m >> top) > 1) top++;
  for (int i = top; i >= 0; i--) {
    if (i == top || ((m >> i) & 1) != ((m >> (i + 1)) & 1)) len[n++] = 0;
    len[n - 1]++;
  }
  return n;
}
/* The count whose digits are those runs. */
static int runs_value(const int *len, int n) {
  int v = 0;
  for (int r = 0; r < n; r++) v = (v << len[r]) | (r % 2 ? 0 : (1 << len[r]) - 1);
  return v;
}

/* Where tree_shape_base finds no base (no zero to take after the leading ones, as 1000, or a base
 * over the ranks, as 200 x 2): a shorter zero run anywhere keeps the fill (a trailing run of two or
 * more keeps two), every even count other than 2^k, 2^k + 2 and 1^a 0^z fills alike, and these
 * trees' levels are a power of two's (measured, docs/simulator.md "Algorithms"). The base: an odd
 * count with every zero run cut to one, the first then grown; an even one as two or more leading
 * ones (grown), a zero, a one and its trailing zeros up to two, or 1^a 0^z as 1^a' and its zeros
 * up to two; the deepest within the shape's nodes and ranks, below M; 0 where none fits. */
static int tree_runs_base(int m, int g) {
  int len[32], n = digit_runs(m, len), grow = m % 2 ? 1 : 0, base = 0;
  if (n < 2 || (g >= 3 && m % 2)) return 0; /* G >= 3: even counts only */
  if (m % 2 == 0) {
    int trail = len[n - 1] < 2 ? len[n - 1] : 2;
    n = n == 2 ? 2 : 4;
    len[0] = 2;
    len[1] = n == 2 ? trail : 1;
    len[2] = 1;
    len[n - 1] = trail;
  } else {
    for (int r = 1; r < n; r += 2) len[r] = 1;
  }
  for (int v = runs_value(len, n); shape_fits(v, g); v = runs_value(len, n)) {
    base = v;
    len[grow]++;
  }
  return base >= SIM_TREE_SHAPE_NODES && base < m ? base : 0;
}

/* NVLink sets a plain tree's pace where an edge's 2G - 2 chains (each GPU heads two of the 2G
 * trees) take longer than the NIC's two chunks a step, its G / rails GPUs' trees sharing it; with
 * latency on a hop, the chains' latencies then hide behind each other's chunks. */
static int tree_hides_latency(const ncclzSimPlatform *p) {
  int g = p->gpus_per_node, rails = p->rails > 0 ? p->rails : 1;
  double per_nic = (double)g / (rails < g ? rails : g);
  return g >= 3 && (p->nic_latency_us > 0 || p->nvlink_latency_us > 0) &&
         (2.0 * g - 2) / p->nvlink_gbps > 2.0 * per_nic / p->nic_gbps;
}

void sim_tree_plan_for(const ncclzSimPlatform *p, int coded, sim_tree_plan *t) {
  int base = SIM_TREE_BASE, deeper = 0;
  int shaped = coded ? 0 : tree_shape_base(p->nodes, p->gpus_per_node, &deeper);
  int runs = coded || shaped || !(p->nodes & (p->nodes - 1)) ? 0 : tree_runs_base(p->nodes, p->gpus_per_node);
  int deep = !coded && tree_hides_latency(p);
  while (!coded && (deep ? 2 * base <= SIM_TREE_DEEP_NODES : 2 * base * p->gpus_per_node <= SIM_TREE_BASE_RANKS))
    base *= 2;
  t->base = base;
  t->small = coded ? 2 * base : base / 2; /* a coded tree's level settles deeper (see above) */
  t->large = coded ? 4 * base : base;
  t->depth = (int)lround(log2(base));
  t->step = SIM_TREE_STEP_CHUNKS;
  if (shaped) {
    t->base = t->small = shaped;
    t->large = deeper;
    t->depth = (int)ceil(log2(shaped));
    t->step = SIM_TREE_SHAPE_CHUNKS;
  } else if (runs) {
    t->base = runs;
    t->depth = (int)ceil(log2(runs));
  }
}
