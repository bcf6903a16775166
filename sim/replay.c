/* The replay: one SimGrid actor per simulated rank walks its schedule op list in order, as the
 * executor issues it.
 *   SEND: wait for the op's dep (the receive whose data it sends; a REDUCE dep also waits for its
 *         decode), wait for a free staging bank (at most `banks` frames in flight to the peer),
 *         encode on the rank's encode stream (ENCODE only; FORWARD re-sends the received frame),
 *         then post the frame. The payload names the coder, so a forwarding rank re-sends the same
 *         frame (a RAW frame made for NVLink stays RAW on the NIC hop that forwards it).
 *   RECV: wait for a free bank (completing the oldest receive), then post the receive (HEADER:
 *         take the header first, as the executor's host does, then post the payload's).
 *   completing a receive: the frame's decode goes on its lane's decode stream from the time the
 *         frame landed (the executor's decode stream waits on the receive, not on its host), however
 *         late the actor completes it; the actor waits for the decode only when a send needs it.
 * comm_lanes k (options): a unit's transfers are posted once those of the unit k units earlier
 *   are done, as the executor's NCCL groups queue on one stream per lane (lane_gate).
 * Encode and decode streams are serial resources per rank, as the executor's s_enc and s_dec[lane]
 * CUDA streams (exec/nccl_pipeline.cu): one encode stream, and a decode stream per comm lane (unit
 * u decodes on lane u % comm_lanes; one stream without lanes). Frames queue up on each, and an
 * encode can run while other frames decode. Each is tracked as the time it becomes idle: decodes
 * that nothing waits for overlap with transfers.
 * HEADER protocol: a receive takes the frame's header when the actor reaches it and posts the
 *   payload's receive at once, as the executor's host does (host_recv). So a rank's send never
 *   waits for a payload receive that its peer has not posted yet; a replay that posted payload
 *   receives only when it completed them deadlocked with more chunks than banks.
 * Transfers go through one mailbox per ordered pair of actors; both sides issue a pair's messages
 * in (step, chunk) order, so FIFO matching pairs the SEND and RECV with the same (step, chunk). */
#include "sim_internal.h"
#include "model/rea_decide.h" /* ncclz_rea_curve_us: the one curve evaluator */

#include <simgrid/actor.h>
#include <simgrid/comm.h>
#include <simgrid/engine.h>
#include <simgrid/host.h>
#include <simgrid/mailbox.h>

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <string.h>

/* The units a rank may hold between posting and draining: the gated lanes plus the one posting. */
#define UNIT_RING (NCCLZ_MAX_COMM_LANES + 1)

typedef struct {
  const sim_job *job;
  sim_actor_stats *st;
  int a, m;                 /* this actor, actor count */
  ncclzSchedule s;          /* the logical rank's list */
  sg_comm_t *comm;          /* per op: the outstanding transfer, NULL when done */
  void **payload;           /* per RECV op: what arrived (coder + 1) */
  uint8_t *done;            /* per RECV op: completed (and its decode queued) */
  double *dec_done;         /* per RECV op: simulated time (s) its decode ends */
  uint32_t *unit;           /* per op: the pipeline unit it belongs to */
  size_t *sendq, sq_head, sq_tail; /* outstanding sends, in issue order */
  size_t *recvq, rq_head, rq_tail; /* outstanding receives, in issue order */
  int32_t *slot;            /* per op: its peer slot, an index into the arrays below (peer_slots) */
  int *slot_key;            /* per slot: peer_slot's key (the mailboxes' names tell its second set) */
  int *out_inflight, *in_inflight; /* per slot */
  sg_mailbox_t *mb_out, *mb_in, *hb_out, *hb_in; /* per slot, made on first use */
  int chan;                  /* the channel this actor plays (sim_channels)       */
  double *enc_free;          /* simulated time (s) when the rank's encode stream is idle */
  double *dec_free;          /* the same, per lane's decode stream (NCCLZ_MAX_COMM_LANES) */
  int16_t *origin;           /* collapse: per op, the GPU whose own permutation transfer it is (-1: an op
                                of every GPU of the node alike), else NULL */
  double *gpu_enc, *gpu_dec; /* collapse: each GPU's encode and decode streams during the permutation */
  int *pairs_out, *pairs_in; /* collapse: per peer actor, the GPU pairs whose permutation transfers its
                                slot carries (each pair with its own staging banks) */
  int in_perm;               /* collapse: the last op was a permutation op (its GPUs' streams in use) */
  uint32_t round;            /* collapse: 1 + the chunk of the GPUs' sends being issued (0: none) */
  double round_t;            /* and when the first of them was ready to encode */
  struct {
    long send, recv;         /* the unit's ops (-1: none) */
  } units[UNIT_RING];        /* units posted and not yet drained, a ring */
  unsigned u_head, u_tail;
  int gate;                  /* the current unit has not passed lane_gate yet */
} rank_ctx;

/* Any non-NULL payload will do for SimGrid (NULL aborts); ours carries the frame's coder. */
static void *coder_payload(ncclzCoder c) { return (void *)(uintptr_t)(c + 1); }
static ncclzCoder payload_coder(void *p) { return (ncclzCoder)((uintptr_t)p - 1); }

/* Collapse: op i is one GPU's own permutation transfer (moves 1/G of its bytes through the NIC
 * that the actor's one flow shares for G GPUs). */
static int gpu_op(const rank_ctx *c, size_t i) { return c->origin && i < c->s.nops && c->origin[i] >= 0; }

/* The actor that plays the peer of op o. The mirror plays a peer on another node by the actor of
 * its local index on the other simulated node; hier's block permutation (a transpose of nodes and
 * local indices, not symmetric) by the other node's actor of this actor's own index: each of a
 * typical node's GPUs sends one block across nodes and receives one (sim_hier_typical_nodes), so
 * every NIC carries the permutation's load of the full replay. */
static int proxied(const rank_ctx *c, const ncclzOp *o) {
  if (c->job->collapse) return gpu_op(c, (size_t)(o - c->s.ops));
  return c->job->mirror && c->job->spec.algo == NCCLZ_ALGO_HIER && o->phase == NCCLZ_PHASE_EXCHANGE;
}

static int peer_actor(const rank_ctx *c, const ncclzOp *o) {
  const sim_job *j = c->job;
  int peer = o->peer;
  if (j->collapse) { /* the actor of the peer's node; the mirror's: this one inside the node, else the other */
    int g = j->lay.p.gpus_per_node;
    if (!j->mirror) return peer / g;
    return peer / g == c->s.rank / g && !proxied(c, o) ? c->a : 1 - c->a;
  }
  if (!j->reduced) return peer;
  if (j->mirror) {
    int g = j->lay.p.gpus_per_node, same = peer / g == c->s.rank / g, side = c->a / g;
    if (proxied(c, o)) return (1 - side) * g + c->a % g;
    return (same ? side : 1 - side) * g + peer % g;
  }
  int d = ((peer - c->s.rank) % j->nranks + j->nranks) % j->nranks; /* ring offset: 1 or n-1 */
  return d == 1 ? (c->a + 1) % c->m : (c->a + c->m - 1) % c->m;
}

/* Alltoall's mirror plays the M-1 peers of one local index on other nodes by one actor; each keeps
 * its own staging banks, as in the full replay (two banks for all of them would serialize what the
 * full replay runs at once), so a slot is the logical peer. Their transfers share the actors'
 * mailbox, which both sides use in (step, chunk) order. */
static int logical_slots(const sim_job *j) { return j->mirror && j->spec.coll == NCCLZ_ALLTOALL; }

/* The staging banks and mailboxes op o uses: its peer actor's (Alltoall's mirror: its logical peer's),
 * or, for a proxied permutation transfer, a second set (slot m + actor): in the full replay that peer
 * is none of the rail stage's, so its frames neither wait for the rail stage's banks nor match its
 * messages. */
static int peer_slot(const rank_ctx *c, const ncclzOp *o, int actor) {
  if (logical_slots(c->job)) return o->peer;
  return proxied(c, o) ? c->m + actor : actor;
}

/* The mailbox from actor src to actor dst (tag "h": the size headers), cached per slot. */
static sg_mailbox_t mb_get(const rank_ctx *c, sg_mailbox_t *cache, int idx, int src, int dst, const char *tag) {
  if (!cache[idx]) {
    char name[64];
    int x = !logical_slots(c->job) && c->slot_key[idx] >= c->m; /* the proxied permutation's own mailboxes */
    snprintf(name, sizeof name, "%d>%d%s%s.%d", src, dst, tag, x ? "x" : "", c->chan);
    cache[idx] = sg_mailbox_by_name(name);
  }
  return cache[idx];
}

/* Queues codec work of `us` ready at `ready` (s) on a stream (its idle time *free_s); returns when
 * it will be done (s). */
static double codec_queue_at(double *free_s, double us, double ready) {
  double start = *free_s > ready ? *free_s : ready;
  *free_s = start + us * 1e-6;
  return *free_s;
}

/* The platform's bandwidth factor for a message of `bytes` (1 without a size_factor curve): the
 * message travels as bytes / factor, which is the same time as at factor x the bandwidth. */
static double size_factor(const ncclzSimPlatform *p, double bytes) {
  if (!p->size_factor.n_points) return 1.0;
  double f = ncclz_rea_curve_us(&p->size_factor, bytes); /* a curve of factors, not times */
  return f > 1e-3 ? f : 1e-3;
}

static double raw_bytes_of(const rank_ctx *c, const ncclzOp *o) {
  size_t off, len;
  ncclzScheduleOpRange(&c->s, c->job->count, o, &off, &len);
  return (double)len * (double)c->job->elem_bytes;
}

/* The decode stream of op i's unit (a GPU's own permutation transfer: that GPU's). */
static double *dec_stream(rank_ctx *c, size_t i) {
  const unsigned lanes = c->job->opt->comm_lanes;
  if (gpu_op(c, i)) return &c->gpu_dec[c->origin[i]];
  return &c->dec_free[lanes ? c->unit[i] % lanes : 0];
}
static double *enc_stream(rank_ctx *c, size_t i) { return gpu_op(c, i) ? &c->gpu_enc[c->origin[i]] : c->enc_free; }

/* When send i may start encoding: now, or for a GPU's own permutation send, when the first of its
 * chunk's sends could: the node's GPUs encode side by side, which the one actor, sleeping until each
 * encode is done, would otherwise do one after the other. */
static double encode_ready(rank_ctx *c, size_t i) {
  double now = simgrid_get_clock();
  if (!gpu_op(c, i)) return now;
  if (c->round != c->s.ops[i].chunk + 1) {
    c->round = c->s.ops[i].chunk + 1;
    c->round_t = now;
  }
  return c->round_t;
}

/* Collapse: the node's GPUs' streams are alike outside the permutation, where each GPU codes its
 * own transfers: entering it they start from the actor's, leaving it the actor's wait for the
 * busiest of them. */
static void gpu_streams_sync(rank_ctx *c, size_t i) {
  int g = c->job->collapse, perm = gpu_op(c, i);
  if (!c->origin || perm == c->in_perm) return;
  c->in_perm = perm;
  double dec = 0.0;
  for (int l = 0; l < NCCLZ_MAX_COMM_LANES; l++) dec = fmax(dec, c->dec_free[l]);
  for (int q = 0; q < g; q++) {
    if (perm) {
      c->gpu_enc[q] = *c->enc_free;
      c->gpu_dec[q] = dec;
      continue;
    }
    *c->enc_free = fmax(*c->enc_free, c->gpu_enc[q]);
    for (int l = 0; l < NCCLZ_MAX_COMM_LANES; l++) c->dec_free[l] = fmax(c->dec_free[l], c->gpu_dec[q]);
  }
}

/* Ranks whose codes a frame sums: the schedule's nsum (k+1 at ring reduce-scatter step k, all
 * of them once reduced, one rank's data in AllGather). */
static uint32_t frame_k(const ncclzOp *o) { return o->nsum ? o->nsum : 1; }

/* Frames in flight per peer and direction: the staging banks of each ring channel (NCCL's
 * channels each have their own buffers; the channels of one ring share peers). */
static int banks_of(const rank_ctx *c) { return (int)(c->job->opt->banks * (c->s.nchannels ? c->s.nchannels : 1)); }
/* The banks of op i's peer slot: a collapsed permutation slot carries the transfers of as many GPU
 * pairs as pairs_out/pairs_in say, each pair with its own banks. */
static int banks_for(const rank_ctx *c, size_t i) {
  if (!gpu_op(c, i)) return banks_of(c);
  const ncclzOp *o = &c->s.ops[i];
  const int *pairs = o->kind == NCCLZ_OP_SEND ? c->pairs_out : c->pairs_in;
  return banks_of(c) * pairs[peer_actor(c, o)];
}

/* Waits for the transfer in *slot (a send or a payload), then clears it; returns when it landed (s). */
static double wait_comm(sg_comm_t *slot) {
  double landed = sim_comm_wait_landed(*slot); /* releases the comm */
  *slot = NULL;
  return landed;
}

/* Waits for receive i's payload to arrive and queues its decode; need_decoded: also waits for
 * that decode (a send that encodes the received data, summed or stored: the executor's encode
 * stream waits for the decodes up to its dependency). */
static void complete_recv(rank_ctx *c, size_t i, int need_decoded) {
  const ncclzOp *o = &c->s.ops[i];
  if (c->done[i]) goto decoded;
  double landed = wait_comm(&c->comm[i]);
  c->done[i] = 1;
  c->in_inflight[c->slot[i]]--;
  if (o->action & (NCCLZ_ACT_REDUCE | NCCLZ_ACT_STORE)) {
    ncclzCoder cd = payload_coder(c->payload[i]);
    c->dec_done[i] = codec_queue_at(dec_stream(c, i), sim_codec_us(c->job, cd, 1, raw_bytes_of(c, o)), landed);
  }
decoded:
  if (need_decoded && (o->action & (NCCLZ_ACT_REDUCE | NCCLZ_ACT_STORE)) && c->dec_done[i] > simgrid_get_clock())
    sg_actor_sleep_until(c->dec_done[i]);
}

/* Completes receives in issue order up to and including op i (the executor consumes frames in
 * order). */
static void complete_through(rank_ctx *c, size_t i, int need_decoded) {
  while (!c->done[i] && c->rq_head < c->rq_tail) complete_recv(c, c->recvq[c->rq_head++], 0);
  complete_recv(c, i, need_decoded);
}

static void wait_oldest_send(rank_ctx *c) {
  size_t i = c->sendq[c->sq_head++];
  wait_comm(&c->comm[i]);
  c->out_inflight[c->slot[i]]--;
}

/* The host's own time for one pipeline unit (a chunk's send and its receive), serial on the
 * rank: under the HEADER protocol the executor's host issues units one by one. */
static void host_turn(const rank_ctx *c) {
  if (c->job->unit_us > 0.0) sg_actor_sleep_for(c->job->unit_us * 1e-6);
}

/* comm_lanes: a unit's transfers are posted once those of the unit comm_lanes units earlier have
 * finished (the executor's NCCL groups queue on one stream per lane), its receive completed and
 * its decode queued. Called right before the unit's first transfer is posted, after its encode:
 * the executor encodes unit u+1 while unit u's group waits for the one before it. */
static void lane_gate(rank_ctx *c) {
  const unsigned lanes = c->job->opt->comm_lanes;
  if (!c->gate) return;
  c->gate = 0;
  while (lanes && c->u_tail - 1 - c->u_head >= lanes) { /* units before the current one */
    const long snd = c->units[c->u_head % UNIT_RING].send, rcv = c->units[c->u_head % UNIT_RING].recv;
    c->u_head++;
    while (snd >= 0 && c->sq_head < c->sq_tail && (long)c->sendq[c->sq_head] <= snd) wait_oldest_send(c);
    if (rcv >= 0) complete_through(c, (size_t)rcv, 0);
  }
}

static void do_send(rank_ctx *c, size_t i) {
  const ncclzOp *o = &c->s.ops[i];
  const sim_job *j = c->job;
  int p = peer_actor(c, o), slot = c->slot[i];
  if (o->dep >= 0) complete_through(c, (size_t)o->dep, !(o->action & NCCLZ_ACT_FORWARD)); /* a forward: as it came */
  while (c->out_inflight[slot] >= banks_for(c, i)) wait_oldest_send(c);
  double raw = raw_bytes_of(c, o);
  uint32_t k = frame_k(o);
  ncclzCoder cd;
  if ((o->action & NCCLZ_ACT_FORWARD) && o->dep >= 0) {
    cd = payload_coder(c->payload[o->dep]);
  } else {
    sim_hop hop = j->per_hop ? sim_hop_actors(&j->lay, c->a, p) : j->hop;
    cd = sim_pick_coder(j, &hop, k, raw);
    double us = sim_codec_us(j, cd, 0, raw);
    double ready = encode_ready(c, i), done = us > 0.0 ? codec_queue_at(enc_stream(c, i), us, ready) : 0.0;
    if (done > simgrid_get_clock()) sg_actor_sleep_until(done);
  }
  double bytes = sim_frame_bytes(j, cd, k, raw);
  /* collapse: an op of every GPU counts G frames; a GPU's own transfer through the NIC moves 1/G of
   * its bytes, as G of them share the NIC where the actor's one flow stands for G */
  int ranks = j->collapse && !gpu_op(c, i) ? j->collapse : 1, share = gpu_op(c, i) && p != c->a ? j->collapse : 1;
  lane_gate(c);
  if (j->opt->compress != NCCLZ_SIM_OFF) /* plain NCCL sends no frames */
    c->st->frames[cd] += (uint64_t)ranks;
  c->st->wire_bytes += ranks * bytes;
  c->st->raw_bytes += ranks * raw;
  if (j->opt->size_protocol == NCCLZ_SIZE_HEADER && j->opt->compress != NCCLZ_SIM_OFF)
    sg_comm_detach(sg_mailbox_put_init(mb_get(c, c->hb_out, slot, c->a, p, "h"), coder_payload(cd),
                                       NCCLZ_FRAME_HEADER_BYTES),
                   NULL); /* fire and forget: detach starts it */
  c->comm[i] = sg_mailbox_put_async(mb_get(c, c->mb_out, slot, c->a, p, ""), coder_payload(cd),
                                    (long)fmax(1.0, bytes / share / size_factor(&j->lay.p, bytes)));
  c->sendq[c->sq_tail++] = i;
  c->out_inflight[slot]++;
}

static void do_recv(rank_ctx *c, size_t i) {
  const ncclzOp *o = &c->s.ops[i];
  c->round = 0; /* the GPUs' sends of this chunk are issued */
  int p = peer_actor(c, o), slot = c->slot[i];
  while (c->in_inflight[slot] >= banks_for(c, i) && c->rq_head < c->rq_tail)
    complete_recv(c, c->recvq[c->rq_head++], 0);
  c->recvq[c->rq_tail++] = i;
  c->in_inflight[slot]++;
  if (c->job->opt->size_protocol == NCCLZ_SIZE_HEADER && c->job->opt->compress != NCCLZ_SIM_OFF) {
    /* as the executor's host (host_recv): it waits for the header here, before it posts the
     * payload's receive and goes on to the next unit's encode */
    sg_comm_t hdr = sg_mailbox_get_async(mb_get(c, c->hb_in, slot, p, c->a, "h"), &c->payload[i]);
    wait_comm(&hdr);
  }
  lane_gate(c);
  c->comm[i] = sg_mailbox_get_async(mb_get(c, c->mb_in, slot, p, c->a, ""), &c->payload[i]);
}

static void rank_actor(int argc, char **argv) {
  rank_ctx *c = sg_actor_self_get_data();
  for (size_t i = 0; i < c->s.nops; i++) {
    const ncclzOp *o = &c->s.ops[i];
    if (o->kind != NCCLZ_OP_SEND && o->kind != NCCLZ_OP_RECV) continue;
    gpu_streams_sync(c, i);
    if (ncclzOpStartsUnit(&c->s, i)) { /* a new unit (the executor's rule): the host's turn, then lane_gate */
      c->units[c->u_tail % UNIT_RING].send = c->units[c->u_tail % UNIT_RING].recv = -1;
      c->u_tail++;
      c->gate = 1;
      host_turn(c);
    }
    c->unit[i] = c->u_tail - 1;
    if (o->kind == NCCLZ_OP_SEND) {
      do_send(c, i);
      c->units[(c->u_tail - 1) % UNIT_RING].send = (long)i;
    } else {
      do_recv(c, i);
      c->units[(c->u_tail - 1) % UNIT_RING].recv = (long)i;
    }
  }
  while (c->rq_head < c->rq_tail) complete_recv(c, c->recvq[c->rq_head++], 0);
  while (c->sq_head < c->sq_tail) wait_oldest_send(c);
  gpu_streams_sync(c, c->s.nops); /* past the list: the GPUs' streams join the actor's */
  double idle = *c->enc_free;
  for (int l = 0; l < NCCLZ_MAX_COMM_LANES; l++) idle = fmax(idle, c->dec_free[l]);
  if (idle > simgrid_get_clock()) sg_actor_sleep_until(idle);
  c->st->end_s = simgrid_get_clock();
  c->st->finished = 1;
}

static int cmp_int(const void *a, const void *b) { return (*(const int *)a > *(const int *)b) - (*(const int *)a < *(const int *)b); }

/* Numbers the distinct peer_slot keys of the rank's transfers 0..*nslots-1 (c->slot per op, -1 for a
 * COPY; c->slot_key per slot): an actor has a few peers, so per-slot arrays sized by every actor
 * would cost each actor memory for all of them (the 6,144 actors of a 32 x 12 tree on 8 channels: 180 MB). */
static int peer_slots(rank_ctx *c, size_t *nslots) {
  size_t n = c->s.nops, k = 0;
  c->slot = malloc((n ? n : 1) * sizeof *c->slot);
  c->slot_key = malloc((n ? n : 1) * sizeof *c->slot_key);
  if (!c->slot || !c->slot_key) return -1;
  for (size_t i = 0; i < n; i++) { /* each op's key first, then its number among the distinct keys */
    const ncclzOp *o = &c->s.ops[i];
    c->slot[i] = o->kind == NCCLZ_OP_COPY ? -1 : peer_slot(c, o, peer_actor(c, o));
    if (c->slot[i] >= 0) c->slot_key[k++] = c->slot[i];
  }
  qsort(c->slot_key, k, sizeof *c->slot_key, cmp_int);
  size_t u = 0;
  for (size_t i = 0; i < k; i++)
    if (!u || c->slot_key[u - 1] != c->slot_key[i]) c->slot_key[u++] = c->slot_key[i];
  for (size_t i = 0; i < n; i++) {
    if (c->slot[i] < 0) continue;
    int key = c->slot[i];
    c->slot[i] = (int32_t)((const int *)bsearch(&key, c->slot_key, u, sizeof *c->slot_key, cmp_int) - c->slot_key);
  }
  *nslots = u ? u : 1;
  return 0;
}

/* Actor a's context for channel k of its rank's list `whole` (sim_channels). */
static int ctx_init(rank_ctx *c, const sim_job *j, int a, int k, const ncclzSchedule *whole, double *streams,
                    sim_actor_stats *st) {
  memset(c, 0, sizeof *c);
  c->job = j;
  c->st = st;
  c->a = a;
  c->chan = k;
  c->enc_free = streams;
  c->dec_free = streams + 1;
  c->m = j->lay.nactors;
  if (sim_actor_list(j, a, k, whole, &c->s, &c->origin)) return -1;
  if (c->origin) {
    c->gpu_enc = calloc((size_t)j->collapse, sizeof *c->gpu_enc);
    c->gpu_dec = calloc((size_t)j->collapse, sizeof *c->gpu_dec);
    c->pairs_out = calloc((size_t)c->m, sizeof *c->pairs_out);
    c->pairs_in = calloc((size_t)c->m, sizeof *c->pairs_in);
    if (!c->gpu_enc || !c->gpu_dec || !c->pairs_out || !c->pairs_in) return -1;
    for (size_t i = 0; i < c->s.nops; i++) /* a pair moves one transfer a chunk */
      if (gpu_op(c, i) && c->s.ops[i].chunk == 0)
        (c->s.ops[i].kind == NCCLZ_OP_SEND ? c->pairs_out : c->pairs_in)[peer_actor(c, &c->s.ops[i])]++;
  }
  size_t n = c->s.nops, m = 0;
  if (peer_slots(c, &m)) return -1;
  c->comm = calloc(n, sizeof *c->comm);
  c->payload = calloc(n, sizeof *c->payload);
  c->done = calloc(n, 1);
  c->dec_done = calloc(n, sizeof *c->dec_done);
  c->unit = calloc(n, sizeof *c->unit);
  c->sendq = calloc(n, sizeof *c->sendq);
  c->recvq = calloc(n, sizeof *c->recvq);
  c->out_inflight = calloc(m, sizeof *c->out_inflight);
  c->in_inflight = calloc(m, sizeof *c->in_inflight);
  c->mb_out = calloc(m, sizeof *c->mb_out);
  c->mb_in = calloc(m, sizeof *c->mb_in);
  c->hb_out = calloc(m, sizeof *c->hb_out);
  c->hb_in = calloc(m, sizeof *c->hb_in);
  if (!c->comm || !c->payload || !c->done || !c->dec_done || !c->unit || !c->sendq || !c->recvq || !c->out_inflight ||
      !c->in_inflight || !c->mb_out || !c->mb_in || !c->hb_out || !c->hb_in)
    return -1;
  return 0;
}

static void ctx_free(rank_ctx *c) {
  ncclzScheduleFree(&c->s);
  free(c->origin);
  free(c->gpu_enc);
  free(c->gpu_dec);
  free(c->pairs_out);
  free(c->pairs_in);
  free(c->comm);
  free(c->payload);
  free(c->done);
  free(c->dec_done);
  free(c->unit);
  free(c->sendq);
  free(c->recvq);
  free(c->slot);
  free(c->slot_key);
  free(c->out_inflight);
  free(c->in_inflight);
  free(c->mb_out);
  free(c->mb_in);
  free(c->hb_out);
  free(c->hb_in);
}

/* Actors switch stacks: raw contexts are the fastest (boost 1.4x, ucontext 2x slower). Under ASan,
 * each replay prints one "ASan is ignoring requested __asan_handle_no_return" warning, because
 * Debian's SimGrid has no sanitizer fiber hooks; the runs stay clean, and thread contexts (which
 * ASan follows) make the tests 10x slower, so we keep raw contexts there too. */
#define CONTEXT_FACTORY "--cfg=contexts/factory:raw"

/* The engine settings of docs/simulator.md: CM02 without cross-traffic and TCP window (gamma 0), unit
 * latency and bandwidth factors (the calibrated factor is applied to the links themselves). full_update:
 * SimGrid updates every flow at each event instead of the ones it must (network/optim:Full), for
 * Alltoall, whose NICs keep a backlog of thousands of flows in the sharing at once: the same times
 * (to 1.2e-6 on a random placement's full replay), about twice as fast. The other collectives keep
 * the default: hier's coupled flows make its AllGather move with the update order. */
static void engine_init(int full_update) {
  static char *argv[] = {"ncclz-sim",
                         "--cfg=network/model:CM02",
                         "--cfg=network/crosstraffic:0",
                         "--cfg=network/TCP-gamma:0",
                         "--cfg=network/latency-factor:1",
                         "--cfg=network/bandwidth-factor:1",
                         "--cfg=network/weight-S:0",
                         "--cfg=contexts/stack-size:256",
                         CONTEXT_FACTORY,
                         "--log=root.thres:critical",
                         "--log=xbt_cfg.thres:critical",
                         NULL};
  int argc = (int)(sizeof argv / sizeof argv[0]) - 1;
  static char *with[sizeof argv / sizeof argv[0] + 1];
  memcpy(with, argv, sizeof argv);
  with[argc] = "--cfg=network/optim:Full";
  with[argc + 1] = NULL;
  if (full_update) argc++;
  simgrid_init(&argc, full_update ? with : argv);
}

static int load_platform(const sim_layout *lay) {
  const char *dir = getenv("TMPDIR");
  char path[512];
  snprintf(path, sizeof path, "%s/ncclz-sim-XXXXXX", dir && *dir ? dir : "/tmp");
  int fd = mkstemp(path);
  if (fd < 0) return -1;
  FILE *f = fdopen(fd, "w");
  if (!f) return -1;
  int rc = sim_platform_write(f, lay);
  if (fclose(f) != 0) rc = -1;
  if (rc == 0) simgrid_load_platform(path);
  unlink(path);
  return rc;
}

/* Each actor's codec streams' owner, the actor whose streams its channel actors queue on: its own,
 * or where a coded tree's channels fold (sim_job.fold = C), the first actor of its node whose GPU is
 * in its orbit under the turn by s = G/C GPUs (GPU i's streams carry channel q's frames, which are
 * channel 0's of GPU i - q s: the orbit's channel-0 frames, queued at the same times). */
static int *stream_owners(const sim_job *job) {
  const sim_layout *l = &job->lay;
  int *owner = malloc((size_t)l->nactors * sizeof *owner);
  if (!owner) return NULL;
  for (int a = 0; a < l->nactors; a++) owner[a] = a;
  if (!job->fold || job->opt->compress == NCCLZ_SIM_OFF) return owner;
  int g = l->p.gpus_per_node, s = g / job->fold;
  int *first = malloc((size_t)l->p.nodes * g * sizeof *first); /* per node and orbit */
  if (!first) {
    free(owner);
    return NULL;
  }
  for (int i = 0; i < l->p.nodes * g; i++) first[i] = -1;
  for (int a = 0; a < l->nactors; a++) {
    int *f = &first[l->node_of[a] * g + l->gpu_of[a] % s];
    if (*f < 0) *f = a;
    owner[a] = *f;
  }
  free(first);
  return owner;
}

int sim_replay_run(const sim_job *job, sim_actor_stats *stats) {
  engine_init(job->opt->coll == NCCLZ_ALLTOALL);
  if (load_platform(&job->lay)) return -1;
  int kc = sim_channels(job), na = job->lay.nactors * kc;
  rank_ctx *ctx = calloc((size_t)na, sizeof *ctx);
  double *streams = calloc((size_t)job->lay.nactors * (1 + NCCLZ_MAX_COMM_LANES), sizeof *streams);
  int *owner = stream_owners(job);
  int rc = ctx && streams && owner ? 0 : -1;
  ncclzSchedule whole = {0}; /* the rank's list, built once for its kc channels' actors */
  for (int i = 0; i < na && rc == 0; i++) {
    char host[48], name[32];
    int a = i / kc, k = i % kc;
    if (k == 0) {
      ncclzScheduleFree(&whole);
      if (ncclzScheduleBuildSpec(&job->spec, sim_actor_rank(job, a), &whole)) rc = -1;
    }
    if (rc || ctx_init(&ctx[i], job, a, k, &whole, streams + (size_t)owner[a] * (1 + NCCLZ_MAX_COMM_LANES), &stats[i])) {
      rc = -1;
      break;
    }
    sim_host_name(host, sizeof host, job->lay.node_of[a], job->lay.gpu_of[a]);
    snprintf(name, sizeof name, "rank%d.%d", a, k);
    sg_actor_t act = sg_actor_init(name, sg_host_by_name(host));
    sg_actor_set_data(act, &ctx[i]);
    sg_actor_start(act, rank_actor, 0, NULL);
  }
  ncclzScheduleFree(&whole);
  if (rc == 0) simgrid_run();
  for (int i = 0; ctx && i < na; i++) ctx_free(&ctx[i]);
  free(ctx);
  free(streams);
  free(owner);
  return rc;
}
