/* Proof that rea_decide.h is the same code everywhere: this file is compiled as C++ (the host
 * compiler's view of a .cu file) and, when CUDA is on, by nvcc with a kernel that calls every
 * decision function on the device. It is built with ncclz_model but linked into nothing
 * (model/CMakeLists.txt keeps it out of the C sources). */
#include "rea_decide.h"

/* Everything a selector does for one frame, from sampling to the post-check. */
#if defined(__CUDACC__)
__host__ __device__
#endif
static int ncclz_rea_hd_check_body(const ncclzProfile *prof, const ncclzReaRules *rules, const int32_t *sym,
                                   uint64_t n, ncclzReaDecision *out) {
  ncclzSamplePlan plan;
  ncclz_rea_sample_plan(n, 65536, 8, &plan);
  ncclzSampleStats stats = {0, 0, 0, 0, 0.0, 0, 0};
  ncclzHuffAlphabet a;
  a.centre = 0;
  a.radius = 128;
  const int64_t first = ncclz_rea_hist_first_index(0, 1, a.centre, a.radius);
  ncclzReaHuffSample h;
  ncclz_rea_hist_init(&h, a);
  for (uint32_t i = 0; i < plan.count; i++) {
    uint64_t start, count;
    ncclz_rea_sample_piece(&plan, i, &start, &count);
    for (uint64_t b = 0; b < count; b += NCCLZ_REA_BLOCK) {
      stats.width_sum += ncclz_rea_block_width(sym + start + b, count - b < 32 ? count - b : 32);
      stats.blocks_sampled++;
    }
    for (uint64_t k = start; k < start + count; k++) ncclz_rea_hist_add(&h, sym[k], a, first);
    stats.n_sampled += count;
  }
  ncclz_rea_hist_finish(&h, &stats);
  ncclzCoderParams cp;
  cp.fixedlen_tile_blocks = 256;
  cp.huffman_segment = 1024;
  ncclzReaCandidates cand;
  ncclz_rea_predict(&stats, n, 4, 0, &cp, &cand);
  if (ncclz_rea_fast_path(rules, cand.frame_raw_bytes)) return 0;
  ncclz_rea_arbitrate(prof, ncclz_rea_link(prof, NCCLZ_HINT_NET), NCCLZ_CLASS_QSGD, rules, &cand, out);
  return ncclz_rea_accept_realized(rules, cand.raw_frame_bytes, cand.pred_frame_bytes[out->coder]);
}

#if defined(__CUDACC__)
/* One control thread decides for a frame batch, as the executor's selector will. */
__global__ void ncclz_rea_hd_check_kernel(const ncclzProfile *prof, const ncclzReaRules *rules, const int32_t *sym,
                                          uint64_t n, ncclzReaDecision *out, int *accepted) {
  if (threadIdx.x == 0 && blockIdx.x == 0) *accepted = ncclz_rea_hd_check_body(prof, rules, sym, n, out);
}
#endif

extern "C" int ncclz_rea_hd_check_host(const ncclzProfile *prof, const ncclzReaRules *rules, const int32_t *sym,
                                       uint64_t n, ncclzReaDecision *out) {
  return ncclz_rea_hd_check_body(prof, rules, sym, n, out);
}
