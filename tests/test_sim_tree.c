/* The simulator's NCCL tree: its replay against the closed forms of docs/simulator.md (one chunk a
 * tree, NVLink faster than the NIC, one channel, the uniform platform with and without latency,
 * three nodes, counts that are not a power of two), its extrapolation in depth and in chunks
 * against full replays, channel folds, and the cost model's tree against the replay. Skips (exit
 * 77) when the build has no SimGrid. */
#include "testutil.h"

#ifndef NCCLZ_HAVE_SIM
int main(void) {
  printf("SKIP: built without SimGrid (NCCLZ_SIM off or libsimgrid-dev missing)\n");
  return 77;
}
#else
#include "sim_test.h"

/* A plain tree AllReduce of 1 GiB on the uniform platform (latency alpha_us on every hop): its time
 * and, in *k and *tau, the chunks a tree and one chunk's time on a hop alone (S/(2 C K)/B, C = G
 * channels). */
static double tree_bytes_us(const ncclzSimPlatform *p, uint64_t bytes, ncclzSimResult *r, double *k, double *tau) {
  ncclzSimOptions o;
  allreduce_opts(&o, bytes, NCCLZ_SIM_OFF);
  o.algorithm = NCCLZ_ALGO_TREE;
  double t = run_us(p, &o, r);
  int g = p->gpus_per_node;
  *k = (double)r->nchunks / g; /* chunks a channel's tree (r->nchunks counts every channel's) */
  *tau = (double)o.bytes / (2.0 * g * *k) / (p->nic_gbps * 1e3);
  return t;
}
static double tree_us(const ncclzSimPlatform *p, ncclzSimResult *r, double *k, double *tau) {
  return tree_bytes_us(p, 1u << 30, r, k, tau);
}
static double tree_uniform_us(int m, int g, double alpha_us, ncclzSimResult *r, double *k, double *tau) {
  ncclzSimPlatform p;
  uniform(&p, m, g);
  p.nic_latency_us = p.nvlink_latency_us = alpha_us;
  return tree_us(&p, r, k, tau);
}

/* NCCL's tree at G = 2 on the uniform platform: NVLink and NIC tie, two chains an edge and two
 * trees a NIC, so a step is 2 tau + alpha as at G = 1, but the chains' half-steps leave a residue
 * that settles from 16 nodes on (docs/simulator.md, "Algorithms"). M = 4 is none of these, nor
 * a count other than a power of two (test_tree_shape). */
static double tree_g2_form(int m, double k, double tau, double a) {
  double d = ceil(log2(m)), step = 2 * tau + a;
  if (m == 2) return (4 * k + 2) * tau + 5 * a;
  if (m == 8) return (2 * k + 2 * d - 1) * step;
  return (2 * k + 2 * d - 1.5) * step + 1.5 * tau;
}

/* G = 2 at an even count other than 2^k and 1^a 0^z on the uniform platform: a step less than a
 * power of two's plus one latency, without its 1.5 tau (measured on 18 to 140 nodes and in full at
 * 200 and 1000 nodes, 0 and 5 us: 2.5 tau under tree_g2_form and 0.5 alpha over it). */
static double tree_g2_even_form(int m, double k, double tau, double a) {
  return (2 * k + 2 * ceil(log2(m)) - 2) * (2 * tau + a) + a;
}

/* NCCL's tree where the NIC is the bottleneck (NVLink faster, as on every real node): the
 * one-GPU tree's NIC pipeline, K chunks of tau a tree in steps of 2 tau + a_nic (M >= 4; M = 2:
 * one tau a step, each tree's root having one child), plus the chain's fill through the node up
 * and down, (G^2 - 1) tau_n + 2 (G - 1) a_nvl (tau_n a chunk's time on NVLink alone; M = 2 x 2:
 * 6 tau_n), n (n + 1) tau_n less with n = G - 1 - K > 0 (too few chunks to fill the chain). G = 1
 * at M = 2^k + 2 (k >= 2) pays tau - a_nic more; M = 2^k + 1, whose lone last node hangs under
 * the root, (3/2 - 2^-k) tau more without latency. NAN where not closed: K = 1, M = 3, and M =
 * 2^k + 1 with latency (docs/simulator.md, "Algorithms"). */
static double tree_nic_bound_form(int m, int g, double k, double tau, double tau_n, double a_nic, double a_nvl) {
  double d = ceil(log2(m)), p = ldexp(1.0, (int)d - 1); /* the largest power of two below m */
  double n = fmax(0.0, g - 1 - k), fill = (m == 2 && g == 2 ? 6 : g * g - 1) - n * (n + 1);
  double chain = g == 1 ? 0.0 : fill * tau_n + 2 * (g - 1) * a_nvl;
  if (k < 2) return NAN;
  if (m == 2) return 2 * k * tau + (g == 1 ? (k - 1) * a_nic : k * a_nic + chain);
  if (m == 3 || (m == p + 1 && a_nic + a_nvl > 0)) return NAN;
  double t = (2 * k + 2 * d - 3) * (2 * tau + a_nic) - tau + chain;
  if (m == p + 1) t += (1.5 - 1.0 / p) * tau;
  if (m == p + 2 && m > 4 && g == 1) t += tau - a_nic;
  return t;
}

/* The form holds while NVLink's share of a NIC step fits in it: the 2G - 2 chains an NVLink edge
 * carries and G - 2 of their latencies (measured boundary; past it NVLink sets the pace and the
 * channels' latencies hide behind each other as on the uniform platform). */
static int tree_nic_bound(int m, int g, double tau, double tau_n, double a_nic, double a_nvl) {
  return (2 * g - 2) * tau_n + (g - 2) * a_nvl <= (m == 2 ? 1 : 2) * tau + a_nic;
}

/* The plain tree of m x 1 on the uniform platform (latency al us) against the G = 1 closed form
 * (tree_nic_bound_form), checked within 1e-3: their relative difference; *r the replay's result. */
static double tree_g1_form_diff(int m, double al, ncclzSimResult *r) {
  double k, tau, t = tree_uniform_us(m, 1, al, r, &k, &tau), cf = tree_nic_bound_form(m, 1, k, tau, 0, al, al);
  CHECK(rel(t, cf) < 1e-3, "tree %d x 1, alpha %.0f us: sim %.3f us, closed form %.3f us (%s)", m, al, t, cf, r->why);
  return rel(t, cf);
}

/* The tree's closed forms on the uniform platform (docs/simulator.md, "Algorithms"), 1 GiB, K
 * chunks of tau a tree, d = ceil(log2 M) levels (NCCL's binary tree over M nodes):
 * - G = 1 (tree_nic_bound_form): M >= 4, a step is two chunks through an interior node's NIC plus
 *   a latency, 2 tau + alpha; 2K + 2d - 3 steps less one tau, tau - alpha more at 2^k + 2 nodes
 *   and (3/2 - 2^-k) tau more at 2^k + 1 without latency (their last level holds two or one
 *   nodes). M = 2: each tree's root has one child and the trees' chunks cross: 2K tau + (K-1) alpha;
 * - G = 2: tree_g2_form, 2, 8 and powers of two from 16 to 1024 nodes, with and without latency;
 * - G >= 3, C = G channels: each GPU heads two of the 2G trees, so each NVLink edge carries the
 *   chains of 2G - 2 trees (the NIC two): 2K chunk steps of (2G-2) tau. M = 2: exactly that plus
 *   (2K + 2G - 3) alpha (the chains fill while their edges carry fewer flows, at no extra time).
 *   M >= 8: each level below the first adds a chunk step of 2 tau through the NIC up and down,
 *   2K (2G-2) tau + (4d - 6) tau without latency (a residue of at most 0.37 tau at 8 x 4); with
 *   latency test_tree_latency_form.
 * Above 64 nodes the replay is extrapolated in depth (sim/extrapolate.c): full up to 64 nodes. */
static void test_tree_closed_form(void) {
  /* G = 1 (no NVLink: tree_nic_bound_form's): nodes and latency; 2^k + 1 nodes without it */
  const int ones[][2] = {{2, 5},  {4, 5},  {5, 0},   {6, 5},   {7, 5},    {8, 5},    {9, 0},    {10, 5},
                         {12, 5}, {16, 5}, {34, 5},  {64, 5},  {100, 5},  {128, 5},  {1000, 5}, {1023, 5},
                         {1024, 5}};
  const double a = 5.0;
  double worst = 0.0, worst_g = 0.0, slowest = 0.0, k, tau, t0 = ncclzNowSeconds();
  ncclzSimResult r;
  int points = 0;
  for (size_t i = 0; i < sizeof ones / sizeof ones[0]; i++, points++) {
    worst = fmax(worst, tree_g1_form_diff(ones[i][0], ones[i][1], &r));
    slowest = fmax(slowest, r.wall_s);
  }
  const int twos[] = {2, 8, 16, 64, 128, 1024}; /* the form's counts: test_tree_shape has the others' */
  for (size_t i = 0; i < 2 * sizeof twos / sizeof twos[0]; i++, points++) {
    int m = twos[i / 2];
    double al = i % 2 ? a : 0.0, t = tree_uniform_us(m, 2, al, &r, &k, &tau), cf = tree_g2_form(m, k, tau, al);
    worst = fmax(worst, rel(t, cf));
    slowest = fmax(slowest, r.wall_s);
    CHECK(rel(t, cf) < 1e-3, "tree %d x 2, alpha %.0f us: sim %.3f us, closed form %.3f us (%s)", m, al, t, cf, r.why);
  }
  const int shapes[][3] = {{2, 3, 5},  {2, 4, 5},   {2, 8, 5},  {8, 3, 0},   {16, 3, 0}, {1024, 3, 0}, {8, 4, 0},
                           {16, 4, 0}, {128, 4, 0}, {1024, 4, 0}, {8, 8, 0}, {128, 8, 0}, {1024, 8, 0}};
  for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++, points++) {
    int m = shapes[i][0], g = shapes[i][1];
    double al = shapes[i][2], t = tree_uniform_us(m, g, al, &r, &k, &tau), d = ceil(log2(m));
    slowest = fmax(slowest, r.wall_s);
    double cf = 2 * k * (2 * g - 2) * tau + (m > 2 ? (4 * d - 6) * tau : 0) + (2 * k + 2 * g - 3) * al;
    worst_g = fmax(worst_g, rel(t, cf));
    CHECK(rel(t, cf) < 1e-3, "tree %d x %d, alpha %.0f us: sim %.3f us, closed form %.3f us (%s)", m, g, al, t, cf, r.why);
  }
  printf("tree against its closed form: G = 1 and 2, 2 to 1024 nodes: largest difference %.2e; G = 3 to 8, 2 to 1024 "
         "nodes: %.2e (%d points, %.1f s, the slowest %.2f s)\n", worst, worst_g, points, ncclzNowSeconds() - t0, slowest);
}

/* A plain tree of 1 GiB replayed in full (every step, past the extrapolation). */
static double tree_full_us(const ncclzSimPlatform *p, ncclzSimResult *r) {
  ncclzSimOptions o;
  allreduce_opts(&o, 1u << 30, NCCLZ_SIM_OFF);
  o.algorithm = NCCLZ_ALGO_TREE;
  o.every_step = 1;
  return run_us(p, &o, r);
}

/* G >= 3 on the uniform platform with latency alpha on every hop (docs/simulator.md, "Algorithms"):
 * the replay pays a latency for each of the 2K chunk steps of an NVLink edge (its 2G - 2 chains in
 * step), for the 2G - 3 hops that fill the chains (as on two nodes) and for the 2 (d - 1) NIC hops
 * of the deepest branch below the first level, up and down, less h_G that the two kinds of trees
 * hide at their turn (measured: 0 at G = 3, 1/2 at G = 4, 0.6487 at G = 8); each level below the
 * third adds its two NIC steps less one chunk, 3 tau, which hides behind the chains' latencies.
 * Exact (to 1e-6) where every latency on that path is paid, which takes a latency large enough
 * against a chunk, the more so the deeper the tree and the fewer its chunks (measured: K alpha /
 * tau from 0.4 at 8 nodes, 1.5 to 2.6 at 16 and 2.9 to 3.9 at 32 for G = 4 and 3; G = 8, K = 16:
 * alpha / tau from 0.06, 0.12 and 0.24 at 8, 16 and 32 nodes); under that, and past 32 nodes, a
 * lower bound: those trees hide more latencies, and their levels settle to two NIC steps,
 * 4 tau + 2 alpha. NAN for other G and below 8 nodes. */
static double tree_latency_form(int m, int g, double k, double tau, double a) {
  double d = ceil(log2(m)), h = g == 3 ? 0.0 : g == 4 ? 0.5 : g == 8 ? 0.6487 : NAN;
  if (m < 8) return NAN;
  return 2 * k * (2 * g - 2) * tau + (3 * d - 3) * tau + (2 * k + 2 * g + 2 * d - 5 - h) * a;
}

/* The same tree with no latency hidden: every hop's latency on the path and the 8-node tree's
 * residue without latency (at most 0.37 tau): an upper bound. */
static double tree_latency_bound(int m, int g, double k, double tau, double a) {
  double d = ceil(log2(m));
  return 2 * k * (2 * g - 2) * tau + (4 * d - 6 + 0.37) * tau + (2 * k + 2 * g + 2 * d - 5) * a;
}

/* A plain tree of 8 to 64 nodes with 64 chunks a tree or more replays 16 and 32 of them and
 * extrapolates in the chunks (extrapolate.c sim_run_tree_in_chunks): 64 x 8 on one NIC and 33 x 2 on the
 * uniform platform at 20 us equal their full replays (the second within 4.2e-5 measured); 32 x 3
 * at 5 us, 43 chunks, replays whole (16 chunks pay fewer of its latencies: -9.7e-4 from them). */
static void test_tree_in_chunks(void) {
  const struct {
    int nodes, gpus, uniform;
    double alpha_us, tol;
    int in_chunks;
  } pts[] = {{64, 8, 0, 5, 1e-9, 1}, {33, 2, 1, 20, 1e-4, 1}, {32, 3, 1, 5, 1e-12, 0}};
  for (size_t i = 0; i < sizeof pts / sizeof pts[0]; i++) {
    ncclzSimPlatform p;
    ncclzSimOptions o;
    ncclzSimResult x, f;
    if (pts[i].uniform) {
      uniform(&p, pts[i].nodes, pts[i].gpus);
      p.nvlink_latency_us = pts[i].alpha_us;
    } else {
      platform(&p, pts[i].nodes, pts[i].gpus);
    }
    p.nic_latency_us = pts[i].alpha_us;
    allreduce_opts(&o, 1u << 30, NCCLZ_SIM_OFF);
    o.algorithm = NCCLZ_ALGO_TREE;
    double t = run_us(&p, &o, &x);
    o.every_step = 1;
    double tf = run_us(&p, &o, &f);
    int took = strstr(x.why, "chunks a tree from") != NULL;
    CHECK(took == pts[i].in_chunks && rel(t, tf) < pts[i].tol, "tree %d x %d, %.0f us: %.4f us against the full "
          "replay's %.4f (%s)", pts[i].nodes, pts[i].gpus, pts[i].alpha_us, t, tf, x.why);
    printf("tree %d x %d, %.0f us, %u chunks a tree: %+.2e of the full replay, %.2f s against %.2f s\n", pts[i].nodes,
           pts[i].gpus, pts[i].alpha_us, x.nchunks / x.channels, t / tf - 1, x.wall_s, f.wall_s);
  }
}

/* G = 3, 4 and 8 with latency on the uniform platform, 1 GiB (K = 43, 32 and 16 chunks a tree,
 * tau = 83 us): the form (tree_latency_form) on 8 to 32 nodes where it holds, within 1e-5 (a
 * latency less is 3e-5 to 6e-4 of these times); 1024 x 4 and 1024 x 8 at 5 us and 1024 x 3 at 20 us
 * (extrapolated; their walls printed, 8192 ranks and fewer) between the form and
 * tree_latency_bound; and the extrapolation in depth against the full replay at 128 x 4 (extrapolate.c: a
 * base of 64 nodes). Points: nodes, GPUs, alpha (us), 1: the form, 0: between the bounds. */
static void test_tree_latency_form(void) {
  const int pts[][4] = {{8, 3, 1, 1},   {8, 3, 5, 1},   {8, 3, 20, 1},  {8, 4, 1, 1},   {8, 4, 5, 1},  {8, 4, 20, 1},
                        {8, 8, 5, 1},   {8, 8, 20, 1},  {16, 3, 5, 1},  {16, 3, 20, 1}, {16, 4, 5, 1}, {16, 4, 20, 1},
                        {16, 8, 20, 1}, {32, 3, 20, 1}, {32, 4, 20, 1}, {1024, 4, 5, 0}, {1024, 8, 5, 0},
                        {1024, 3, 20, 0}};
  double worst = 0.0, k, tau, t0 = ncclzNowSeconds();
  ncclzSimResult r, f;
  for (size_t i = 0; i < sizeof pts / sizeof pts[0]; i++) {
    int m = pts[i][0], g = pts[i][1];
    double a = pts[i][2], t = tree_uniform_us(m, g, a, &r, &k, &tau), cf = tree_latency_form(m, g, k, tau, a);
    double ub = tree_latency_bound(m, g, k, tau, a);
    if (pts[i][3]) {
      worst = fmax(worst, rel(t, cf));
      CHECK(rel(t, cf) < 1e-5, "tree %d x %d, alpha %.0f us: sim %.3f us, closed form %.3f us (%s)", m, g, a, t, cf, r.why);
    } else {
      CHECK(t > cf * (1 - 1e-5) && t < ub, "tree %d x %d, alpha %.0f us: sim %.3f us, not within %.3f to %.3f us (%s)", m, g,
            a, t, cf, ub, r.why);
      printf("tree %d x %d, alpha %.0f us: %.3f us, %+.3f%% over the form, %+.3f%% to the bound with every latency "
             "(%.2f s)\n", m, g, a, t, 100 * (t / cf - 1), 100 * (t / ub - 1), r.wall_s);
    }
  }
  double t1 = ncclzNowSeconds();
  const int ext[][3] = {{128, 4, 5}};
  for (size_t i = 0; i < sizeof ext / sizeof ext[0]; i++) {
    ncclzSimPlatform p;
    uniform(&p, ext[i][0], ext[i][1]);
    p.nic_latency_us = p.nvlink_latency_us = ext[i][2];
    double t = tree_us(&p, &r, &k, &tau), tf = tree_full_us(&p, &f);
    CHECK(strstr(r.why, "extrapolated") && rel(t, tf) < 1e-3, "tree %d x %d, alpha %d us: extrapolated %.3f us, full %.3f "
          "us (%s)", ext[i][0], ext[i][1], ext[i][2], t, tf, r.why);
    printf("tree %d x %d, alpha %d us: extrapolated %.3f us (%.2f s, %s), full %.3f us (%.2f s): %+.2e\n", ext[i][0],
           ext[i][1], ext[i][2], t, r.wall_s, r.why, tf, f.wall_s, t / tf - 1);
  }
  printf("tree G = 3 to 8 with latency against its form on 8 to 32 nodes: largest difference %.2e (%.1f s; with the "
         "extrapolation against two full replays %.1f s)\n", worst, t1 - t0, ncclzNowSeconds() - t0);
}

/* The plain tree's price (model/choose_tree.c) against its replay at one point: nodes, GPUs, rails (the
 * channels; 0: one a GPU), NVLink and NIC GB/s, their latencies, KiB. The model's time over the
 * replay's less one; *k: the replay's chunks a tree. */
static double tree_model_error(const double *q, double *k) {
  ncclzSimPlatform p;
  platform(&p, (int)q[0], (int)q[1]);
  p.rails = q[2] > 0 ? (int)q[2] : p.gpus_per_node;
  p.nvlink_gbps = q[3];
  p.nic_gbps = q[4];
  p.nvlink_latency_us = q[5];
  p.nic_latency_us = q[6];
  ncclzSimResult r;
  double tau, t = tree_bytes_us(&p, (uint64_t)q[7] << 10, &r, k, &tau);
  *k = (double)r.nchunks / p.rails; /* tree_bytes_us counts G channels */
  ncclzChoiceInput in;
  memset(&in, 0, sizeof in);
  in.coll = NCCLZ_ALLREDUCE;
  in.bytes = (uint64_t)q[7] << 10;
  in.nodes = p.nodes;
  in.gpus_per_node = p.gpus_per_node;
  in.rails = p.rails;
  in.nvlink_gbps = q[3];
  in.nic_gbps = q[4];
  in.nvlink_alpha_us = q[5];
  in.nic_alpha_us = q[6];
  return ncclzChoicePairUs(&prof, &in, NCCLZ_ALGO_TREE, NCCLZ_CHOICE_PLAIN) / t - 1;
}

/* The cost model prices the plain tree with the form the replay takes (model/choose_tree.c): equal
 * where the NIC sets the pace (K >= 2 chunks a tree), within 3% where NVLink does (the uniform
 * platform). With 2 or 4 rails of 8 GPUs two interior trees' heads share a NIC (tree_nic_trees;
 * priced as one, the model was 49-50% under). Points: nodes, GPUs, rails (0: one a GPU), NVLink
 * and NIC GB/s, their latencies, KiB. */
static void test_tree_model(void) {
  const double pts[][8] = {{1024, 1, 0, 50, 50, 5, 5, 1 << 20},   {1024, 8, 0, 450, 50, 1, 5, 1 << 20},
                           {1000, 8, 0, 400, 50, 1, 20, 1 << 20}, {1024, 4, 0, 450, 12.5, 1, 5, 1 << 20},
                           {8, 8, 0, 450, 50, 1, 5, 128 << 10},   {1024, 8, 0, 50, 50, 5, 5, 1 << 20},
                           {1024, 4, 0, 50, 50, 5, 5, 1 << 20},   {8, 8, 2, 450, 12.5, 2, 5, 1 << 20},
                           {64, 8, 4, 450, 50, 2, 5, 1 << 20},    {8, 8, 4, 450, 12.5, 2, 5, 256 << 10}};
  for (size_t i = 0; i < sizeof pts / sizeof pts[0]; i++) {
    const double *q = pts[i];
    double k, err = tree_model_error(q, &k), tol = q[3] > q[4] ? 1e-3 : 3e-2;
    CHECK(fabs(err) < tol, "tree %.0f x %.0f, NVLink %.0f GB/s: model %+.3f%% of the replay", q[0], q[1], q[3], 100 * err);
    printf("tree %.0f x %.0f, NVLink %.0f and NIC %.1f GB/s, %.0f/%.0f us, %.0f MiB: model %+.3f%% of the replay\n", q[0],
           q[1], q[3], q[4], q[5], q[6], q[7] / 1024, 100 * err);
  }
}

/* The plain tree's price with few chunks a tree, where the NIC sets the pace (NVLink 450 GB/s, or
 * paper-fig6-fig7's 300 against 10 GB/s): one chunk (the replay's path through the levels, the
 * chains' one chunk up and down: equal, 2 to 64 nodes, powers of two or not, 1 and G rails), and
 * 2 to G - 2 chunks on one rail (the chains' fill: the replay's one to three chunks of tnv more
 * than 2 (G - 1) with one channel) and on 2 nodes of 6 and 8 rails, where NVLink sets the pace
 * and the NIC's pipeline with the chains' fill bounds the price from below: within 5%. Points as
 * test_tree_model's. */
static void test_tree_model_few_chunks(void) {
  const double one[][8] = {{8, 4, 1, 300, 10, 15, 24, 64},     {8, 1, 1, 450, 50, 1, 5, 8192},
                           {8, 8, 1, 450, 50, 1, 5, 8192},     {8, 8, 8, 450, 50, 1, 5, 65536},
                           {2, 8, 1, 450, 12.5, 2, 5, 4096},   {64, 8, 1, 450, 12.5, 2, 5, 4096},
                           {6, 4, 4, 450, 50, 15, 24, 1024},   {5, 2, 1, 450, 50, 1, 5, 8192},
                           {3, 8, 8, 450, 50, 2, 5, 64},       {16, 4, 1, 300, 10, 15, 24, 512}};
  const double few[][8] = {{8, 8, 1, 450, 50, 2, 5, 16384},    {16, 8, 1, 450, 12.5, 2, 5, 32768},
                           {4, 4, 1, 300, 10, 15, 24, 16384},  {64, 8, 1, 450, 50, 2, 5, 40960},
                           {2, 8, 1, 450, 50, 1, 5, 40960},    {8, 6, 1, 450, 50, 1, 5, 24576},
                           {2, 8, 8, 450, 50, 1, 5, 131072},   {2, 8, 8, 450, 50, 15, 24, 196608},
                           {2, 6, 6, 450, 50, 15, 24, 196608}};
  double worst_one = 0.0, worst_few = 0.0, k;
  for (size_t i = 0; i < sizeof one / sizeof one[0]; i++) {
    const double *q = one[i];
    double err = tree_model_error(q, &k);
    worst_one = fmax(worst_one, fabs(err));
    CHECK(k == 1 && fabs(err) < 1e-3, "tree %.0f x %.0f, %.0f rails, %.0f KiB, %.0f chunks: model %+.3f%% of the replay",
          q[0], q[1], q[2], q[7], k, 100 * err);
  }
  for (size_t i = 0; i < sizeof few / sizeof few[0]; i++) {
    const double *q = few[i];
    double err = tree_model_error(q, &k);
    worst_few = fmax(worst_few, fabs(err));
    CHECK(k >= 2 && k <= q[1] - 2 && fabs(err) < 5e-2, "tree %.0f x %.0f, %.0f rails, %.0f KiB, %.0f chunks: model "
          "%+.3f%% of the replay", q[0], q[1], q[2], q[7], k, 100 * err);
  }
  printf("tree with few chunks a tree, model against the replay: one chunk largest difference %.2e (%zu points), 2 to "
         "G - 2 chunks %.2e (%zu points)\n", worst_one, sizeof one / sizeof one[0], worst_few,
         sizeof few / sizeof few[0]);
}

/* Why G >= 3 with latency has no one closed form on the uniform platform (test_tree_latency_form
 * has the one where every latency on the path is paid): NVLink sets the pace there
 * (2G - 2 chains an edge), and a transfer's latency takes no bandwidth (SimGrid's CM02), so a
 * chain's latency hides behind the other channels' chunks on its edge whenever they are out of
 * phase, which the NIC levels make them. Latency on the NIC alone is paid at most 2d times (none
 * on 2 nodes); on NVLink alone every chunk step pays it on 2 nodes (the chains in lockstep) and a
 * share that moves with alpha past them: no fixed count, so the time is not affine in alpha. */
static void test_tree_uniform_latencies(void) {
  const double alphas[] = {1, 5, 20};
  for (int m = 2; m <= 8; m *= 4) {
    ncclzSimPlatform p;
    uniform(&p, m, 4);
    p.nic_latency_us = p.nvlink_latency_us = 0;
    ncclzSimResult r;
    double k, tau, t0 = tree_us(&p, &r, &k, &tau), d = ceil(log2(m)), nic[3], nvl[3];
    for (int i = 0; i < 3; i++) {
      p.nic_latency_us = alphas[i];
      nic[i] = (tree_us(&p, &r, &k, &tau) - t0) / alphas[i];
      p.nic_latency_us = 0;
      p.nvlink_latency_us = alphas[i];
      nvl[i] = (tree_us(&p, &r, &k, &tau) - t0) / alphas[i];
      p.nvlink_latency_us = 0;
      CHECK(nic[i] < (m == 2 ? 1e-3 : 2 * d), "tree %d x 4: %.2f NIC latencies of %.0f us paid", m, nic[i], alphas[i]);
    }
    if (m == 2)
      CHECK(fabs(nvl[0] - nvl[2]) < 1e-3, "tree 2 x 4: NVLink latencies paid %.2f and %.2f", nvl[0], nvl[2]);
    else
      CHECK(nvl[2] - nvl[0] > 10, "tree 8 x 4: NVLink latencies paid %.2f and %.2f", nvl[0], nvl[2]);
    printf("tree %d x 4, uniform platform: latencies paid at 1, 5 and 20 us on the NIC alone %.2f %.2f %.2f, on NVLink "
           "alone %.2f %.2f %.2f\n", m, nic[0], nic[1], nic[2], nvl[0], nvl[1], nvl[2]);
  }
}

/* The tree against tree_nic_bound_form on homogeneous nodes with NVLink 9x (the targets' 450 GB/s)
 * and 8x the 50 GB/s NIC, a NIC per GPU, 1 GiB: G = 1 to 8, each with every latency pair (NIC,
 * NVLink) of lats on a node count that rotates through ms (2 to 1024 nodes; more than 64
 * extrapolated in depth), 2^k + 1 nodes without latency, and six points with 2 to 5 chunks a tree
 * (fewer than the chain's hops). Where NVLink sets the pace (past tree_nic_bound) the form is only
 * a lower bound. */
static void test_tree_nic_bound_form(void) {
  const int ms[] = {2, 4, 6, 7, 8, 12, 100, 1000, 1023, 1024}, nm = (int)(sizeof ms / sizeof ms[0]);
  const double lats[][2] = {{0, 0}, {5, 1}, {5, 5}, {20, 1}, {20, 20}};
  const int nl = (int)(sizeof lats / sizeof lats[0]);
  double worst = 0.0, t0 = ncclzNowSeconds();
  int points = 0, bounded = 0;
  for (int g = 1; g <= 8; g++)
    for (int l = 0; l <= nl; l++) {
      int pow2p1 = l == nl, m = pow2p1 ? (4 << g % 3) + 1 : ms[(3 * g + l) % nm];
      ncclzSimPlatform p;
      platform(&p, m, g);
      p.rails = g;
      p.nvlink_gbps = (g + l) % 2 ? 450.0 : 400.0;
      p.nic_latency_us = pow2p1 ? 0 : lats[l][0];
      p.nvlink_latency_us = pow2p1 ? 0 : lats[l][1];
      ncclzSimResult r;
      double k, tau, t = tree_us(&p, &r, &k, &tau), tau_n = tau * p.nic_gbps / p.nvlink_gbps;
      double cf = tree_nic_bound_form(m, g, k, tau, tau_n, p.nic_latency_us, p.nvlink_latency_us);
      points++;
      if (!tree_nic_bound(m, g, tau, tau_n, p.nic_latency_us, p.nvlink_latency_us)) {
        bounded++;
        CHECK(t > cf * (1 - 1e-3), "tree %d x %d, NVLink %.0f GB/s, latency %.0f/%.0f us: sim %.3f us under its "
              "NIC-bound form %.3f us (%s)", m, g, p.nvlink_gbps, p.nic_latency_us, p.nvlink_latency_us, t, cf, r.why);
        printf("tree %d x %d, NVLink %.0f GB/s, latency %.0f/%.0f us: NVLink-bound, %+.3f%% over the NIC-bound form\n", m,
               g, p.nvlink_gbps, p.nic_latency_us, p.nvlink_latency_us, 100 * (t / cf - 1));
        continue;
      }
      worst = fmax(worst, rel(t, cf));
      CHECK(rel(t, cf) < 1e-3, "tree %d x %d, NVLink %.0f GB/s, latency %.0f/%.0f us: sim %.3f us, closed form %.3f "
            "us (%s)", m, g, p.nvlink_gbps, p.nic_latency_us, p.nvlink_latency_us, t, cf, r.why);
    }
  /* fewer chunks than the chain has hops (K < G - 1): 450 GB/s, 5/1 us, 8 G K MiB; 100 x 4 (extrapolated
   * from a base of its shape) against its full replay, a chunk (tau) under the form, whose few-chunk
   * value is a power of two's (docs/simulator.md, "One chunk a tree") */
  const int few[][4] = {{8, 4, 2, 0}, {100, 4, 3, 1}, {7, 8, 2, 0}, {8, 8, 4, 0}, {1000, 8, 5, 0}, {12, 6, 3, 0}};
  for (size_t i = 0; i < sizeof few / sizeof few[0]; i++, points++) {
    int m = few[i][0], g = few[i][1];
    ncclzSimPlatform p;
    platform(&p, m, g);
    p.rails = g;
    p.nvlink_gbps = 450.0;
    p.nvlink_latency_us = 1.0;
    ncclzSimResult r;
    uint64_t bytes = (uint64_t)(8 * g * few[i][2]) << 20;
    double k, tau, t = tree_bytes_us(&p, bytes, &r, &k, &tau);
    double cf = tree_nic_bound_form(m, g, k, tau, tau * p.nic_gbps / p.nvlink_gbps, p.nic_latency_us, 1.0);
    if (few[i][3]) {
      ncclzSimOptions o;
      ncclzSimResult f;
      allreduce_opts(&o, bytes, NCCLZ_SIM_OFF);
      o.algorithm = NCCLZ_ALGO_TREE;
      o.every_step = 1;
      cf = run_us(&p, &o, &f);
      CHECK(fabs(cf - (tree_nic_bound_form(m, g, k, tau, tau * p.nic_gbps / p.nvlink_gbps, p.nic_latency_us, 1.0) - tau))
                < 1e-3 * cf, "tree %d x %d, %.0f chunks: full %.3f us, not a chunk under the form", m, g, k, cf);
    }
    worst = fmax(worst, rel(t, cf));
    CHECK(rel(t, cf) < 1e-3, "tree %d x %d, %.0f chunks: sim %.3f us, closed form %.3f us (%s)", m, g, k, t, cf, r.why);
  }
  printf("tree, NVLink 8-9x the NIC, against its NIC-bound closed form: G = 1 to 8, 2 to 1024 nodes: largest "
         "difference %.2e (%d points, %d NVLink-bound, %.1f s)\n", worst, points, bounded, ncclzNowSeconds() - t0);
}

/* Three nodes: NCCL's two trees are chains (going up 1 -> 2 -> 0 and 2 -> 0 -> 1), so node 2's NIC
 * carries both trees' reduce to node 0 and node 0's both broadcasts back, and each tree reduces all
 * its chunks before it broadcasts them: 4K chunk steps of tau at G = 1, exactly so with one staging
 * bank, 4/9 tau less with two (the phases overlap where they meet; K >= 8, K = 4: 11/27, K = 2: 1
 * tau more; measured, not derived) and 1 tau more with three; at G >= 3 NVLink's 2K (2G - 2) tau
 * plus 11/3 tau with any bank count. Without latency; with it no count of latencies fits
 * (docs/simulator.md, "Algorithms"). Points: GPUs a node, MiB, staging banks. */
static void test_tree_three_nodes(void) {
  const int pts[][3] = {{1, 128, 2}, {1, 256, 2}, {1, 1024, 2}, {1, 256, 1}, {1, 256, 3},
                        {3, 1024, 2}, {4, 1024, 3}, {8, 1024, 1}};
  double worst = 0.0;
  for (size_t i = 0; i < sizeof pts / sizeof pts[0]; i++) {
    int g = pts[i][0], banks = pts[i][2];
    ncclzSimPlatform p;
    uniform(&p, 3, g);
    p.nic_latency_us = p.nvlink_latency_us = 0;
    ncclzSimOptions o;
    allreduce_opts(&o, (uint64_t)pts[i][1] << 20, NCCLZ_SIM_OFF);
    o.algorithm = NCCLZ_ALGO_TREE;
    o.banks = (uint32_t)banks;
    ncclzSimResult r;
    double t = run_us(&p, &o, &r), k = (double)r.nchunks / g, tau = (double)o.bytes / (2.0 * g * k) / (p.nic_gbps * 1e3);
    double turn = banks == 1 ? 0.0 : banks == 2 ? -4.0 / 9 : 1.0;
    double cf = g == 1 ? (4 * k + turn) * tau : (2 * k * (2 * g - 2) + 11.0 / 3) * tau;
    worst = fmax(worst, rel(t, cf));
    CHECK(k >= 8 && rel(t, cf) < 1e-3, "tree 3 x %d, %.0f chunks, %d banks: sim %.3f us, closed form %.3f us", g, k,
          banks, t, cf);
  }
  printf("tree 3 x 1 to 3 x 8 against its closed form without latency, 1 to 3 banks: largest difference %.2e\n", worst);
}

/* The tree over more than 64 nodes that are not a power of two, extrapolated from a base of the
 * same shape (tree_plan.c tree_shape_base, tree_runs_base), against its full replay on the uniform
 * platform (alpha 0 and 5 us): G = 1 at 2^k + 1 and 2^k + 2 nodes (which the form of the depth
 * alone put 0.32-0.53% under), G = 2 at 2^k + 1, 2^k + 2 and 100 nodes (0.5-0.9% off), and 65 x 2
 * on the targets' platform (NVLink 450 GB/s 1 us, a 50 GB/s 5 us NIC a GPU: 0.34% under); G = 2
 * where no zero can be taken after the leading ones or that base is over the ranks, 1^a 0^z (124,
 * 126), 200 and 161 nodes (the power of two's base 0.26-0.88% off); G >= 3 at even counts and
 * 2^k + 1 (100 x 3 without latency, 129 x 4, 100 x 8 and 150 x 6 at 5 us: the power of two's base
 * 0.19-0.45% over); and against a form where the
 * full replay is slow: G = 1 at 1025 and 1026 nodes (8-9 s in full here), 4097 nodes, whose base
 * (129 nodes) is the largest at G = 1, within a second, and 1000 x 2 (tree_g2_even_form; 93-101 s
 * in full). Points: nodes, GPUs, latency (us), the targets' platform. */
static void test_tree_shape(void) {
  const int full[][4] = {{65, 1, 0, 0},  {66, 1, 0, 0},  {129, 1, 0, 0}, {130, 1, 0, 0}, {65, 1, 5, 0},
                         {66, 1, 5, 0},  {129, 1, 5, 0}, {130, 1, 5, 0}, {65, 2, 0, 0},  {66, 2, 0, 0},
                         {100, 2, 0, 0}, {129, 2, 0, 0}, {65, 2, 5, 0},  {66, 2, 5, 0},  {65, 2, 5, 1},
                         {124, 2, 5, 0}, {126, 2, 0, 0}, {200, 2, 0, 0}, {200, 2, 5, 0}, {161, 2, 0, 0},
                         {100, 3, 0, 0}, {129, 4, 5, 0}, {100, 8, 5, 0}, {150, 6, 5, 0}};
  const int form[][2] = {{1025, 0}, {1026, 0}, {1026, 5}, {4097, 0}};
  const int even[] = {0, 5}; /* 1000 x 2's latency (us) against tree_g2_even_form */
  double worst = 0.0, slowest = 0.0, k, tau, t0 = ncclzNowSeconds();
  int points = 0;
  ncclzSimResult r, f;
  for (size_t i = 0; i < sizeof full / sizeof full[0]; i++, points++) {
    int m = full[i][0], g = full[i][1];
    ncclzSimPlatform p;
    uniform(&p, m, g);
    p.nic_latency_us = p.nvlink_latency_us = full[i][2];
    if (full[i][3]) {
      p.nvlink_gbps = 450.0;
      p.nvlink_latency_us = 1.0;
    }
    double t = tree_us(&p, &r, &k, &tau), tf = tree_full_us(&p, &f);
    worst = fmax(worst, rel(t, tf));
    slowest = fmax(slowest, r.wall_s);
    CHECK(strstr(r.why, "extrapolated") && rel(t, tf) < 1e-3, "tree %d x %d, NVLink %.0f GB/s, alpha %d us: extrapolated "
          "%.3f us, full %.3f us (%s)", m, g, p.nvlink_gbps, full[i][2], t, tf, r.why);
  }
  for (size_t i = 0; i < sizeof form / sizeof form[0]; i++, points++) {
    worst = fmax(worst, tree_g1_form_diff(form[i][0], form[i][1], &r));
    slowest = fmax(slowest, r.wall_s);
    CHECK(r.wall_s < 20.0, "tree %d x 1: wall %.2f s (%s)", form[i][0], r.wall_s, r.why);
  }
  for (size_t i = 0; i < sizeof even / sizeof even[0]; i++, points++) {
    double t = tree_uniform_us(1000, 2, even[i], &r, &k, &tau), cf = tree_g2_even_form(1000, k, tau, even[i]);
    worst = fmax(worst, rel(t, cf));
    slowest = fmax(slowest, r.wall_s);
    CHECK(rel(t, cf) < 1e-3, "tree 1000 x 2, alpha %d us: sim %.3f us, form %.3f us (%s)", even[i], t, cf, r.why);
  }
  printf("tree on 65 to 4097 nodes not a power of two, extrapolated from a base of their shape, against the full "
         "replay or the closed form: largest difference %.2e (%d points, %.1f s, the slowest extrapolation %.2f s, "
         "4097 x 1 %.2f s)\n", worst, points, ncclzNowSeconds() - t0, slowest, r.wall_s);
}

/* The plain tree's channels folded into channel 0 on the platform's links merged by the turn of
 * the node's GPUs (run.c channel_fold) against every channel replayed (every_channel): times,
 * bytes and the end equal within 1e-4 (a chunk's one element where blocks do not split evenly).
 * Points: rails G, fewer rails (NICs shared by the turn), channels set below the rails, a
 * fat-tree whose leaf uplinks bind, a cap per transfer, one node, G = 2 and 3, odd node counts,
 * latencies 0 to 20 us, sizes that split evenly and not. Also where it must not fold: a strided
 * placement and rails that do not divide G. */
static void test_tree_channel_fold(void) {
  struct { int m, g, rails, channels, fat, strided; double alpha, cap; uint64_t bytes; int folds; } pts[] = {
      {2, 8, 8, 0, 0, 0, 5, 0, 1u << 30, 1},          {13, 8, 8, 0, 0, 0, 20, 0, 1u << 30, 1},
      {9, 4, 2, 0, 0, 0, 20, 0, (1u << 28) + 12, 1},  {6, 8, 1, 4, 0, 0, 5, 0, 1u << 28, 1},
      {40, 4, 4, 0, 16, 0, 5, 0, 1u << 28, 1},        {5, 3, 3, 0, 0, 0, 1, 10, (1u << 30) + 4, 1},
      {1, 8, 8, 0, 0, 0, 1, 0, 1u << 26, 1},          {17, 2, 2, 0, 0, 0, 0, 0, 1u << 30, 1},
      {11, 3, 3, 0, 0, 0, 5, 0, 1u << 20, 1},         {8, 6, 3, 0, 0, 1, 5, 0, 1u << 28, 0},
      {8, 6, 4, 0, 0, 0, 5, 0, 1u << 28, 0}};
  double worst = 0.0, t_fold = 0.0, t_all = 0.0;
  for (size_t i = 0; i < sizeof pts / sizeof pts[0]; i++) {
    ncclzSimPlatform p;
    uniform(&p, pts[i].m, pts[i].g);
    p.rails = pts[i].rails;
    p.nic_latency_us = p.nvlink_latency_us = pts[i].alpha;
    p.nic_flow_gbps = pts[i].cap;
    if (pts[i].fat) {
      p.topology = NCCLZ_TOPO_FATTREE;
      p.nodes_per_leaf = pts[i].fat;
      p.oversubscription = 4.0;
    }
    if (pts[i].strided) p.placement = NCCLZ_PLACE_STRIDED;
    ncclzSimOptions o;
    allreduce_opts(&o, pts[i].bytes, NCCLZ_SIM_OFF);
    o.algorithm = NCCLZ_ALGO_TREE;
    o.channels = (uint32_t)pts[i].channels;
    ncclzSimResult f, a;
    double tf = run_us(&p, &o, &f);
    o.every_channel = 1;
    double ta = run_us(&p, &o, &a);
    int folded = strstr(f.why, "channels folded") != NULL;
    double d = fmax(rel(tf, ta), fmax(rel(f.wire_bytes, a.wire_bytes), rel(f.raw_bytes, a.raw_bytes)));
    worst = fmax(worst, d);
    t_fold += f.wall_s;
    t_all += a.wall_s;
    CHECK(d <= 1e-4 && folded == pts[i].folds && !strstr(a.why, "channels folded"),
          "tree %d x %d, %d rails, %u channels: folded %.3f us (%s), every channel %.3f us, bytes %.6g / %.6g",
          pts[i].m, pts[i].g, pts[i].rails, o.channels, tf, f.why, ta, f.wire_bytes, a.wire_bytes);
  }
  printf("tree channels folded against every channel: largest difference %.2e (%.2f s against %.2f s)\n", worst,
         t_fold, t_all);
}

/* A coded tree's channels folded (options.fold_coded: channel 0 alone, each orbit of the node's GPUs
 * on one set of codec streams; run.c channel_fold, replay.c stream_owners) against every channel
 * replayed: within 2% (the streams' ties between channels fall in another order), bytes within 1e-4, the
 * result approximate and saying so. The extrapolation over 64 nodes folds them where its level
 * trees are large: 128 x 16 on 16 rails (test_tree holds G <= 8 unfolded). */
static void test_tree_coded_fold(void) {
  struct { int m, g; uint64_t bytes; ncclzSimCompress c; } pts[] = {
      {8, 16, 256u << 20, NCCLZ_SIM_FIXEDLEN}, {8, 16, 256u << 20, NCCLZ_SIM_HUFFMAN},
      {8, 8, 256u << 20, NCCLZ_SIM_HUFFMAN},   {16, 4, 64u << 20, NCCLZ_SIM_FIXEDLEN},
      {8, 8, 256u << 20, NCCLZ_SIM_AUTO},      {4, 12, 64u << 20, NCCLZ_SIM_FIXEDLEN}};
  double worst = 0.0, t_fold = 0.0, t_all = 0.0;
  for (size_t i = 0; i < sizeof pts / sizeof pts[0]; i++) {
    ncclzSimPlatform p;
    platform(&p, pts[i].m, pts[i].g);
    p.rails = pts[i].g;
    p.nic_gbps = 12.5;
    ncclzSimOptions o;
    allreduce_opts(&o, pts[i].bytes, pts[i].c);
    o.algorithm = NCCLZ_ALGO_TREE;
    o.fold_coded = 1;
    ncclzSimResult f, a;
    double tf = run_us(&p, &o, &f);
    o.fold_coded = 0;
    double ta = run_us(&p, &o, &a);
    double d = rel(tf, ta);
    worst = fmax(worst, d);
    t_fold += f.wall_s;
    t_all += a.wall_s;
    CHECK(d <= 2e-2 && rel(f.wire_bytes, a.wire_bytes) <= 1e-4 && f.approximate && !a.approximate &&
              strstr(f.why, "codec streams by orbit") && !strstr(a.why, "channels folded"),
          "coded tree %d x %d %s: folded %.3f us (%s), every channel %.3f us (%s)", pts[i].m, pts[i].g,
          ncclzSimCompressName(o.compress), tf, f.why, ta, a.why);
  }
  /* the extrapolation folds its level trees at 16 GPUs on 16 rails and on 4 (the same actors as 8
   * GPUs on 8 rails, which stays unfolded, but twice the chains an NVLink edge) */
  ncclzSimResult r[2], e;
  memset(&e, 0, sizeof e);
  const int rails[2] = {16, 4};
  for (int k = 0; k < 2; k++) {
    ncclzSimPlatform p;
    platform(&p, 128, 16);
    p.rails = rails[k];
    p.nic_gbps = 12.5;
    ncclzSimOptions o;
    allreduce_opts(&o, 1u << 30, NCCLZ_SIM_FIXEDLEN);
    o.algorithm = NCCLZ_ALGO_TREE;
    double t = run_us(&p, &o, &r[k]);
    CHECK(r[k].approximate && strstr(r[k].why, "channels folded"), "coded tree 128 x 16 on %d rails: %s", rails[k],
          r[k].why);
    if (rails[k] != 4) continue;
    o.every_channel = 1;
    double te = run_us(&p, &o, &e);
    CHECK(rel(t, te) <= 2e-2 && !strstr(e.why, "channels folded"),
          "coded tree 128 x 16 on 4 rails: folded %.3f us, every channel %.3f us (%s)", t, te, e.why);
  }
  printf("coded tree channels folded against every channel: largest difference %.2e (%.2f s against %.2f s); "
         "128 x 16 extrapolated in %.2f s on 16 rails, %.2f s on 4 (every channel %.2f s)\n", worst, t_fold, t_all,
         r[0].wall_s, r[1].wall_s, e.wall_s);
}

/* The double binary tree over more than 64 nodes, extrapolated in depth (sim/extrapolate.c), against the full
 * replay at 128 x 2 and 128 x 8, where the NIC is the bottleneck: NVLink 400 GB/s and one 50 GB/s
 * NIC a node, and the targets' NVLink 450 GB/s and a 50 GB/s NIC a GPU. Plain: equal.
 * Coded, labelled approximate: FIXEDLEN within 0.2%, HUFFMAN 2% (its first levels hide partly
 * behind its codec streams, the more so the more chunks). */
static void test_tree(void) {
  static const ncclzSimCompress comps[] = {NCCLZ_SIM_OFF, NCCLZ_SIM_FIXEDLEN, NCCLZ_SIM_HUFFMAN};
  static const double tols[] = {1e-3, 2e-3, 2e-2};
  for (int g = 2; g <= 8; g += 6)
    for (int target = 0; target < 2; target++)
      for (int c = 0; c < 3; c++) {
        ncclzSimPlatform p;
        platform(&p, 128, g);
        if (target) {
          p.nvlink_gbps = 450.0;
          p.rails = p.gpus_per_node;
        }
        ncclzSimOptions o;
        allreduce_opts(&o, 256u << 20, comps[c]);
        o.algorithm = NCCLZ_ALGO_TREE;
        ncclzSimResult r;
        double te = run_us(&p, &o, &r);
        int approximate = r.approximate;
        CHECK(strstr(r.why, "extrapolated") != NULL && !strstr(r.why, "channels folded") && approximate == (c > 0),
              "tree 128 nodes: %s", r.why);
        o.every_step = 1;
        double tf = run_us(&p, &o, &r);
        CHECK(rel(te, tf) < tols[c], "tree 128 x %d %s, %s: extrapolated %.1f us, full %.1f us", g,
              ncclzSimCompressName(o.compress), target ? "the targets' platform" : "one NIC a node", te, tf);
        printf("tree 128 x %d %s, %s: extrapolated against full %+.3f%%\n", g, ncclzSimCompressName(o.compress),
               target ? "the targets' platform" : "one NIC a node", 100 * (te / tf - 1));
      }
}

int main(void) {
  sim_test_init();
  test_tree();
  test_tree_channel_fold();
  test_tree_coded_fold();
  test_tree_closed_form();
  test_tree_latency_form();
  test_tree_in_chunks();
  test_tree_shape();
  test_tree_three_nodes();
  test_tree_nic_bound_form();
  test_tree_uniform_latencies();
  test_tree_model();
  test_tree_model_few_chunks();
  return tu_finish("sim_tree");
}
#endif
