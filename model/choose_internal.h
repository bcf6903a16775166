/* Internal to the cost model (model/choose*.c): a call as stages of like steps, and the pieces the
 * pricing of each algorithm shares. choose.c: the stages of the ring, halving-doubling and hier,
 * their clock, the dispatch; choose_tree.c: NCCL's tree; choose_chains.c: Broadcast's chains and
 * Alltoall's exchange. */
#ifndef NCCLZ_MODEL_CHOOSE_INTERNAL_H
#define NCCLZ_MODEL_CHOOSE_INTERNAL_H
#include "rea_decide.h"

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

static inline int ilog2(long x) {
  int l = 0;
  while ((1L << (l + 1)) <= x) l++;
  return l;
}

/* A stage appended to a plan: `steps` like steps of `bytes` (times `grow` each step after the first). */
stage *choice_add_stage(plan *p, double steps, double bytes, double grow, int net, double flows);
/* The frames: their CR (k ranks summed), wire bytes and codec time (us) under a coder (-1: plain). */
double choice_cr_of(const ncclzChoiceInput *in, int coder, double k);
double choice_frame_wire(const ncclzChoiceInput *in, int coder, double k, double raw);
double choice_codec_us(const ncclzProfile *prof, const ncclzChoiceInput *in, int coder, int decode, double raw);
/* A call's chunks per op, its links and the time of `flows` transfers sharing one. */
double choice_chunks_of(const ncclzProfile *prof, const ncclzChoiceInput *in, double range, int plain);
link_t choice_link_of(const ncclzChoiceInput *in, int net);
double choice_share_us(link_t l, double flows, double bytes);
/* The coder a policy gives a step's frames (-1: plain), and a plan's time under a policy. */
int choice_step_coder(const ncclzProfile *prof, const ncclzChoiceInput *in, ncclzChoiceCoder pol, int net, double k,
                      double raw, double pipeline);
double choice_plan_us(const ncclzProfile *prof, const ncclzChoiceInput *in, const plan *p, ncclzChoiceCoder pol,
                      int call_coder);
/* REA's call-level coder (-1: plain NCCL), and the channels a call runs on. */
int choice_rea_call_coder(const ncclzProfile *prof, const ncclzChoiceInput *in, double raw, double C, double units);
uint32_t choice_channels_of(const ncclzChoiceInput *in);
/* The tree (choose_tree.c), Broadcast and Alltoall (choose_chains.c): -1 where the policy runs plain. */
double choice_tree_us(const ncclzProfile *prof, const ncclzChoiceInput *in, double ch, ncclzChoiceCoder pol);
double choice_broadcast_us(const ncclzProfile *prof, const ncclzChoiceInput *in, ncclzChoiceCoder pol);
double choice_alltoall_us(const ncclzProfile *prof, const ncclzChoiceInput *in, ncclzChoiceCoder pol);
#endif
