/* The op-list walker every backend shares: message tags and the pipeline units (a send with the
 * receive of its (step, chunk)), each unit's ranges, kept slot and write order. */
#include "ncclz/schedule.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

uint64_t ncclzOpTag(const ncclzSchedule *s, const ncclzOp *o) { return (uint64_t)o->step * s->nchunks + o->chunk; }

int ncclzOpStartsUnit(const ncclzSchedule *s, size_t i) {
  const ncclzOp *o = &s->ops[i], *prev = i ? &s->ops[i - 1] : NULL;
  if (o->kind == NCCLZ_OP_SEND) return 1;
  return !prev || prev->kind != NCCLZ_OP_SEND || prev->step != o->step || prev->chunk != o->chunk;
}

size_t ncclzScheduleLargestRange(const ncclzSchedule *s, size_t count) {
  size_t big = 0;
  for (size_t i = 0; i < s->nops; i++) {
    size_t off, len;
    ncclzScheduleOpRange(s, count, &s->ops[i], &off, &len);
    if (len > big) big = len;
  }
  return big;
}

/* Unit u's receive writes data (it reduces or stores a non-empty range). */
static int unit_writes(const ncclzSchedule *s, const ncclzUnit *u) {
  return u->recv >= 0 && u->rlen && (s->ops[u->recv].action & (NCCLZ_ACT_REDUCE | NCCLZ_ACT_STORE));
}

/* Unit k's `after` list: every earlier unit whose receive writes a range overlapping k's (ranges
 * in the collective's whole buffer, whichever buffer a write lands in: conservative). */
static int write_after(const ncclzSchedule *s, ncclzUnitList *ul, size_t k, size_t *cap) {
  ncclzUnit *u = &ul->units[k];
  u->after_at = (uint32_t)ul->nafter_total;
  for (size_t w = 0; w < k; w++) {
    const ncclzUnit *p = &ul->units[w];
    if (!unit_writes(s, p) || p->roff >= u->roff + u->rlen || u->roff >= p->roff + p->rlen) continue;
    if (ul->nafter_total == *cap) {
      size_t nc = *cap ? 2 * *cap : 64;
      int32_t *a = realloc(ul->after, nc * sizeof *a);
      if (!a) return -1;
      ul->after = a;
      *cap = nc;
    }
    ul->after[ul->nafter_total++] = (int32_t)w;
    u->nafter++;
  }
  return 0;
}

/* Op i (a SEND or RECV) into unit u: its range and its kept slot. */
static void unit_add(const ncclzSchedule *s, size_t count, size_t i, ncclzUnit *u, uint32_t *nkeep) {
  const ncclzOp *o = &s->ops[i];
  size_t off, len;
  ncclzScheduleOpRange(s, count, o, &off, &len);
  u->tag = ncclzOpTag(s, o);
  if (o->kind == NCCLZ_OP_SEND) {
    u->send = (int32_t)i;
    u->soff = off;
    u->slen = len;
    return;
  }
  u->recv = (int32_t)i;
  u->roff = off;
  u->rlen = len;
  if (o->action & NCCLZ_ACT_KEEP) u->keep = (int32_t)(*nkeep)++;
}

int ncclzScheduleUnits(const ncclzSchedule *s, size_t count, ncclzUnitList *out) {
  memset(out, 0, sizeof *out);
  out->units = malloc((s->nops + 1) * sizeof *out->units);
  out->unit_of_op = malloc((s->nops + 1) * sizeof *out->unit_of_op);
  if (!out->units || !out->unit_of_op) {
    ncclzUnitListFree(out);
    errno = ENOMEM;
    return -1;
  }
  for (size_t i = 0; i < s->nops; i++) {
    const ncclzOp *o = &s->ops[i];
    out->unit_of_op[i] = -1;
    if (o->kind == NCCLZ_OP_COPY) continue;
    if (ncclzOpStartsUnit(s, i) || !out->nunits)
      out->units[out->nunits++] = (ncclzUnit){-1, -1, 0, 0, 0, 0, 0, -1, 0, 0};
    unit_add(s, count, i, &out->units[out->nunits - 1], &out->nkeep);
    out->unit_of_op[i] = (int32_t)out->nunits - 1;
  }
  size_t cap = 0;
  for (size_t k = 0; k < out->nunits; k++)
    if (unit_writes(s, &out->units[k]) && write_after(s, out, k, &cap)) {
      ncclzUnitListFree(out);
      errno = ENOMEM;
      return -1;
    }
  out->largest = ncclzScheduleLargestRange(s, count);
  return 0;
}

void ncclzUnitListFree(ncclzUnitList *u) {
  free(u->units);
  free(u->after);
  free(u->unit_of_op);
  memset(u, 0, sizeof *u);
}
