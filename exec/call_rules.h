/* The rules of a call that the host engine (exec/engine.c, agree.c) and the NCCL backend
 * (exec/nccl_*.cu) share: buffer sizes and chunking of the op lists, the agreed values'
 * layout, the error-bound derivation and the quantizer parameters from a config. Internal to
 * exec/. */
#ifndef NCCLZ_EXEC_CALL_RULES_H
#define NCCLZ_EXEC_CALL_RULES_H

#include "ncclz/exec.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The values one allreduce(max) agrees on: fingerprint halves, non-fingerprint halves, counts of
 * NaN/Inf and of unflagged huge values, -min, max, max |x|; QSGD bucket maxima follow. */
enum { V_FP_HI, V_FP_LO, V_NFP_HI, V_NFP_LO, V_NONFINITE, V_HUGE, V_NEG_MIN, V_MAX, V_MAXABS, V_HEAD };

/* The cost model's (algorithm, coder) pair for a call (model/: ncclzChoose, the simulator's auto
 * too): nodes of ranks_per_node ranks, the profile's NVLink link inside a node and the hint's
 * between nodes (what one rank's transfers get), the coders the config's policy allows, the
 * data's CR per coder for one rank's codes (cr[NCCLZ_CODER_COUNT]; NULL: 1, nothing compresses).
 * NCCLZ_ERR_ARG without a profile or on one node. */
ncclzStatus ncclz_exec_choose(const ncclzConfig *cfg, ncclzCollective coll, size_t count, int nranks, size_t dsize,
                              const double *cr, ncclzChoice *out);

/* Whether a call's (algorithm, coder) pair is the cost model's, chosen per call with the data's
 * sampled CR: algorithm auto, ranks_per_node splitting the ranks into several nodes, a profile, a
 * collective the model weighs (ncclzChoiceServes) and data. */
int ncclz_exec_pair_auto(const ncclzConfig *cfg, ncclzCollective coll, size_t count, int nranks);

/* Slots of the pair's agreement (one allreduce(max)): per coder the predicted wire bytes per raw
 * byte of a frame of this rank's codes, then a local failure flag. */
enum { PAIR_FAILED = NCCLZ_CODER_COUNT, PAIR_SLOTS };

/* This rank's part of the pair's agreement (w[PAIR_SLOTS]): REA's sample window (the profile's
 * window and pieces) over its n symbols, the frames of a chunk (chunk_bytes) predicted from it,
 * per coder their wire bytes per raw byte (ncclzReaPredictFrames, the simulator's CR). All zero
 * without symbols (a broadcast non-root), so that the other ranks' sample decides. qp: NULL for
 * quant none. */
void ncclz_exec_sample_wire(const ncclzConfig *cfg, const ncclzQuantParams *qp, const int32_t *sym, size_t n,
                            size_t dsize, double *w);

/* Where ncclz_exec_sample_wire's window lies in n symbols (ncclzReaSamplePieces; cap 512 always
 * suffices): a backend whose codes live on the device copies these pieces to a host array of n
 * symbols and samples that. */
uint32_t ncclz_exec_sample_pieces(const ncclzConfig *cfg, const ncclzQuantParams *qp, size_t n, uint64_t *start,
                                  uint64_t *len, uint32_t cap);

/* The call's pair from the agreed w (the max over ranks: the least compressible rank's CR per
 * coder, 1 where no rank had symbols): ncclz_exec_choose with those CR (into cr[NCCLZ_CODER_COUNT]
 * when not NULL). Every rank that holds the same w gets the same pair. */
ncclzStatus ncclz_exec_choose_sampled(const ncclzConfig *cfg, ncclzCollective coll, size_t count, int nranks,
                                      size_t dsize, const double *w, ncclzChoice *out, double *cr);

/* The pair's agreement and choice, on every backend: w (this rank's ncclz_exec_sample_wire) made
 * the max over the transport's ranks (its time added to st->t_agree), then
 * ncclz_exec_choose_sampled (the agreed CR into st->pair_cr). */
ncclzStatus ncclz_exec_agree_pair(const ncclzConfig *cfg, ncclzTransport *t, ncclzCollective coll, size_t count,
                                  size_t dsize, double *w, ncclzExecStats *st, ncclzChoice *out);

/* The coder policy a choice's coder runs: plain is policy off (the plain collective on the
 * floats), REA is auto (REA per frame). */
ncclzCoderPolicy ncclz_exec_choice_policy(ncclzChoiceCoder c);

/* The coder every frame of a policy other than auto takes (off and raw: RAW). */
ncclzCoder ncclz_exec_policy_coder(ncclzCoderPolicy p);

/* The bound of the plain collective's float sum of k contributions of at most gmax each: k - 1
 * roundings of partial sums up to k gmax, then the result's rounding to the dtype. */
double ncclz_exec_plain_bound(ncclzDtype dt, double k, double gmax);

/* Chunks a channel of a chain schedule (ncclzScheduleIsChain) takes: ncclzChainChunks with the
 * profile's links and the config's policy, no CR (the schedule is cut before the data is seen). */
uint32_t ncclz_exec_chain_chunks(const ncclzConfig *cfg, size_t count, int nranks, size_t dsize);
/* The schedule of a call: the config's algorithm (AUTO: the algorithm of ncclz_exec_choose's pair
 * when ranks_per_node splits the ranks into nodes and the config has a profile, else the ring),
 * node size and channels, and chunks so that the largest op's chunks hold chunk_bytes (at most
 * max_chunks, 0: 64), or on a chain with a profile ncclz_exec_chain_chunks. */
void ncclz_exec_spec(const ncclzConfig *cfg, ncclzCollective coll, size_t count, int nranks, int root, size_t dsize,
                     ncclzScheduleSpec *sp);
/* Whether the auto pair (algo, policy) runs another schedule than s, which the call was built with
 * under the config's policy: another algorithm, or a chain whose chunks the pair's coder cuts
 * otherwise (ncclz_exec_spec with the pair's algorithm and policy, as the cost model priced it). */
int ncclz_exec_pair_rebuilds(const ncclzConfig *cfg, ncclzAlgorithm algo, ncclzCoderPolicy policy, ncclzCollective coll,
                             size_t count, int nranks, int root, size_t dsize, const ncclzSchedule *s);

/* Float spacing at |v| (what rounding a result of that size to float can cost, twice over). */
double ncclz_exec_f32_ulp(double v);
/* The same for the output dtype: the result is rounded to it once, at the very end. */
double ncclz_exec_dtype_ulp(ncclzDtype dt, double v);

/* EB over k contributions: the half-step every rank quantizes with (qp->abs_eb, qp->bound) and
 * the bound the result then meets (*error_bound). NCCLZ_ERR_RANGE when it cannot hold. */
ncclzStatus ncclz_exec_derive_eb(const ncclzConfig *cfg, ncclzDtype dt, double k, const double *v,
                                 ncclzQuantParams *qp, double *error_bound);

/* QSGD over k contributions with the largest agreed bucket scale smax: one level of it per element
 * (*quant_bound) and k levels plus the result's rounding for the sum (*error_bound). */
void ncclz_exec_derive_qsgd(const ncclzQuantParams *qp, ncclzDtype dt, double k, double smax, double *quant_bound,
                            double *error_bound);

/* The quantizer parameters of a config for a rank's n_in input elements. */
void ncclz_exec_init_qparams(const ncclzConfig *cfg, uint32_t rank, size_t n_in, ncclzQuantParams *qp);

#ifdef __cplusplus
}
#endif
#endif
