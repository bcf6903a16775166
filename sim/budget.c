/* The cost of a replay, estimated before it runs. SimGrid holds every actor's op list and every
 * flow in flight, and its time per message grows with the flows that share the network: a full
 * replay of thousands of ranks runs for hours and takes gigabytes. Past the budget
 * (options.max_replay_s, options.max_replay_mib) the replay is refused with its estimate, before
 * anything is allocated for it. The constants are measured (docs/simulator.md, "Budget"). */
#include "sim_internal.h"

#include <math.h>

/* Wall time of one message: a base, and a part that grows with the actors (the flows that share
 * the network). Alltoall posts every peer's flow at once, so its messages cost far more. */
#define SIM_US_PER_MSG_RING 10.0
#define SIM_US_PER_MSG_RING_ACTOR (1.0 / 12.0)
#define SIM_US_PER_MSG_ALLTOALL 400.0
#define SIM_US_PER_MSG_ALLTOALL_ACTOR 1.5
/* Memory: the engine and platform, each op of an actor's list with its replay state, each flow in
 * flight, each actor's context. */
#define SIM_MIB_BASE 64.0
#define SIM_BYTES_PER_OP 80.0
#define SIM_BYTES_PER_FLOW 4096.0
#define SIM_BYTES_PER_ACTOR 65536.0

#define SIM_DEFAULT_BUDGET_S 120.0
#define SIM_DEFAULT_BUDGET_MIB 2048.0

/* Ops and sends of one actor's list: that of actor 0's logical rank in the schedule replayed (its
 * algorithm, channels and chunks). */
static int actor_ops(const sim_job *j, double *ops, double *sends) {
  ncclzSchedule s;
  if (ncclzScheduleBuildSpec(&j->spec, sim_actor_rank(j, 0), &s) != 0) return -1;
  *sends = 0;
  for (size_t i = 0; i < s.nops; i++) *sends += s.ops[i].kind == NCCLZ_OP_SEND;
  *ops = (double)s.nops;
  if (j->fold) { /* channel 0's share */
    *sends /= j->fold;
    *ops /= j->fold;
  }
  ncclzScheduleFree(&s);
  return 0;
}

int sim_replay_cost(const sim_job *j, sim_cost *c) {
  double ops, sends, a = j->lay.nactors;
  if (actor_ops(j, &ops, &sends)) return -1;
  int a2a = j->opt->coll == NCCLZ_ALLTOALL;
  double banks = j->opt->banks ? j->opt->banks : 2;
  /* in flight at once: the full Alltoall's every peer; its mirror's every logical peer (each actor's sends) */
  double flows = a2a ? (j->mirror ? a * sends : a * (a - 1)) : a * banks;
  double us = a2a ? SIM_US_PER_MSG_ALLTOALL + SIM_US_PER_MSG_ALLTOALL_ACTOR * a
                  : SIM_US_PER_MSG_RING + SIM_US_PER_MSG_RING_ACTOR * a;
  c->messages = a * sends;
  c->seconds = c->messages * us * 1e-6;
  c->mib = SIM_MIB_BASE + (a * ops * SIM_BYTES_PER_OP + flows * SIM_BYTES_PER_FLOW + a * SIM_BYTES_PER_ACTOR) / 1048576.0;
  return 0;
}

ncclzStatus sim_check_budget(const sim_job *j) {
  sim_cost c;
  if (sim_replay_cost(j, &c)) return ncclzSetError(NCCLZ_ERR_NOMEM, "sim: out of memory estimating the replay");
  double max_s = j->opt->max_replay_s > 0 ? j->opt->max_replay_s : SIM_DEFAULT_BUDGET_S;
  double max_mib = j->opt->max_replay_mib > 0 ? j->opt->max_replay_mib : SIM_DEFAULT_BUDGET_MIB;
  if (c.seconds <= max_s && c.mib <= max_mib) return NCCLZ_OK;
  return ncclzSetError(NCCLZ_ERR_ARG,
                       "the %s replay of %s on %d ranks (%d actors, %.3g messages) would take about %.1f s and "
                       "%.0f MiB, past the budget of %g s and %g MiB (options.max_replay_s, max_replay_mib): "
                       "replay fewer ranks, a ring collective or Alltoall on a contiguous non-blocking platform (the "
                       "reduced replay), or raise the budget",
                       j->reduced ? "reduced" : "full", ncclzCollectiveName(j->opt->coll), j->nranks,
                       j->lay.nactors, c.messages, c.seconds, ceil(c.mib), max_s, max_mib);
}
