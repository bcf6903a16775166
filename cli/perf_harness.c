/* ncclz perf's harness, shared by its backends (perf_cpu.c, perf_nccl.c): the inputs of every rank
 * and the exact results they must give, the output check, the sizes, the table and JSON rows, and
 * the --stress draw. It calls no backend. */
#include "perf.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ------------------------------------------------------------------ data */

size_t perf_in_elems(const perf_opts *o, size_t count) {
  return o->coll == NCCLZ_REDUCESCATTER || o->coll == NCCLZ_ALLTOALL ? count * (size_t)o->nranks : count;
}
size_t perf_out_elems(const perf_opts *o, size_t count) {
  return o->coll == NCCLZ_ALLGATHER || o->coll == NCCLZ_ALLTOALL ? count * (size_t)o->nranks : count;
}

/* Input i of rank r: the file tiled from a per-rank offset, else integers (lossless modes stay
 * exactly checkable) or a smooth field (quantized modes). Rounded to the dtype. */
float perf_input_value(const perf_opts *o, int r, size_t i) {
  float v;
  if (o->nfiles) {
    /* rank r reads file r mod N; ranks that share a file start at different offsets */
    int f = r % o->nfiles, sharers = (o->nranks + o->nfiles - 1 - f) / o->nfiles;
    size_t n = o->file_n[f], off = (size_t)(r / o->nfiles) * (n / (size_t)sharers + 7919);
    v = o->file[f][(off + i) % n];
  } else if (o->cfg.quant.kind == NCCLZ_QUANT_NONE) {
    v = (float)((long)((r * 7 + (long)(i % 1000003) * 13) % 61) - 30);
  } else {
    v = (float)(10.0 * sin(0.001 * (double)i + r) + 0.01 * (double)((i * 2654435761u + (size_t)r) % 101));
  }
  uint16_t h;
  if (o->dtype != NCCLZ_DTYPE_F32) {
    ncclzFromFloat(&v, 1, o->dtype, &h);
    ncclzToFloat(&h, o->dtype, 1, &v);
  }
  return v;
}

static double expected(const perf_opts *o, size_t count, int me, size_t i) {
  double s = 0;
  switch (o->coll) {
  case NCCLZ_ALLREDUCE:
    for (int q = 0; q < o->nranks; q++) s += perf_input_value(o, q, i);
    return s;
  case NCCLZ_REDUCESCATTER:
    for (int q = 0; q < o->nranks; q++) s += perf_input_value(o, q, (size_t)me * count + i);
    return s;
  case NCCLZ_ALLGATHER: return perf_input_value(o, (int)(i / count), i % count);
  case NCCLZ_ALLTOALL: return perf_input_value(o, (int)(i / count), (size_t)me * count + i % count);
  default: return perf_input_value(o, o->root, i);
  }
}

/* Wrong elements and max error of one rank's output (host copy, dtype); every `stride`-th element. */
void perf_check_output(const perf_opts *o, size_t count, int rank, const void *out, double bound, size_t stride,
                         perf_point *p) {
  size_t no = perf_out_elems(o, count);
  float *y = malloc((no + 1) * sizeof *y);
  ncclzToFloat(out, o->dtype, no, y);
  int lossless = o->cfg.quant.kind == NCCLZ_QUANT_NONE;
  for (size_t i = 0; i < no; i += stride) {
    double e = expected(o, count, rank, i), err = fabs((double)y[i] - e);
    if (lossless) {
      float ef = (float)e;
      uint16_t h;
      if (o->dtype != NCCLZ_DTYPE_F32) {
        ncclzFromFloat(&ef, 1, o->dtype, &h);
        ncclzToFloat(&h, o->dtype, 1, &ef);
      }
      p->wrong += memcmp(&ef, &y[i], 4) != 0 && !o->nfiles; /* file data: float sums depend on order */
    } else if (bound < 0) { /* plain NCCL ran (auto kept everything RAW): float rounding only */
      double eps = o->dtype == NCCLZ_DTYPE_BF16 ? 0x1p-8 : o->dtype == NCCLZ_DTYPE_F16 ? 0x1p-11 : 0x1p-23;
      p->wrong += !(err <= o->nranks * eps * fabs(e) + 1e-30);
    } else {
      p->wrong += !(err <= bound);
    }
    if (err > p->maxerr) p->maxerr = err;
  }
  free(y);
}

/* ---------------------------------------------------------------- output */

void perf_print_header(const perf_opts *o) {
  fprintf(stderr, "# ncclz perf: %s, %d ranks (%s backend), compress %s, quant %s, dtype %s\n",
          ncclzCollectiveName(o->coll), o->nranks, o->backend, ncclzPolicyName(o->cfg.policy), o->quant_text,
          ncclzDtypeName(o->dtype));
  fprintf(stderr, "#%11s %12s %6s %6s %5s %10s %8s %8s %7s %7s %14s %10s%s\n", "size", "count", "type", "redop", "root",
          "time", "algbw", "busbw", "#wrong", "cr", "coders", "maxerr", o->vs_plain ? "   plain   vs plain" : "");
  fprintf(stderr, "#%11s %12s %6s %6s %5s %10s %8s %8s %7s %7s %14s %10s%s\n", "(B)", "(elements)", "", "", "", "(us)",
          "(GB/s)", "(GB/s)", "", "", "(r:f:h)", "", o->vs_plain ? "    (us)          " : "");
}

void perf_print_point(const perf_opts *o, const perf_point *p) {
  char mix[48];
  snprintf(mix, sizeof mix, "%llu:%llu:%llu", (unsigned long long)p->mix[0], (unsigned long long)p->mix[1],
           (unsigned long long)p->mix[2]);
  int red = o->coll == NCCLZ_ALLREDUCE || o->coll == NCCLZ_REDUCESCATTER;
  fprintf(stderr, "%12zu %12zu %6s %6s %5d %10.1f %8.3f %8.3f %7llu %7.2f %14s %10.3g", p->size, p->count,
          ncclzDtypeName(o->dtype), red ? "sum" : "none", o->coll == NCCLZ_BROADCAST ? o->root : -1, p->time_us,
          p->algbw, p->busbw, (unsigned long long)p->wrong, p->cr, mix, p->maxerr);
  if (o->vs_plain) fprintf(stderr, " %8.1f %9.3fx", p->plain_us, p->time_us > 0 ? p->plain_us / p->time_us : 0);
  fprintf(stderr, "\n");
  /* the auto pair on a line of its own: the table's columns stay what scripts read */
  if (p->pair_auto)
    fprintf(stderr, "#%11s pair %s/%s (cost model, agreed CR fixedlen %.2f huffman %.2f)\n", "",
            ncclzAlgorithmName(p->algo), p->policy == NCCLZ_POLICY_OFF ? "plain" : ncclzPolicyName(p->policy),
            p->pair_cr[NCCLZ_CODER_FIXEDLEN], p->pair_cr[NCCLZ_CODER_HUFFMAN]);
}

void perf_set_pair(perf_point *p, const ncclzExecStats *s) {
  p->algo = s->algorithm;
  p->policy = s->policy;
  p->pair_auto = s->pair_auto;
  memcpy(p->pair_cr, s->pair_cr, sizeof p->pair_cr);
}

cJSON *perf_point_json(const perf_point *p) {
  cJSON *j = cJSON_CreateObject(), *mix = cJSON_CreateObject();
  cJSON_AddNumberToObject(j, "size", (double)p->size);
  cJSON_AddNumberToObject(j, "count", (double)p->count);
  cJSON_AddNumberToObject(j, "time_us", p->time_us);
  cJSON_AddNumberToObject(j, "algbw", p->algbw);
  cJSON_AddNumberToObject(j, "busbw", p->busbw);
  cJSON_AddNumberToObject(j, "wrong", (double)p->wrong);
  cJSON_AddNumberToObject(j, "cr", p->cr);
  cJSON_AddNumberToObject(j, "maxerr", p->maxerr);
  cJSON_AddNumberToObject(j, "error_bound", p->bound);
  cJSON_AddNumberToObject(j, "raw_bytes", (double)p->raw);
  cJSON_AddNumberToObject(j, "frame_bytes", (double)p->frames_b);
  cJSON_AddNumberToObject(j, "wire_bytes", (double)p->wire);
  for (int c = 0; c < NCCLZ_CODER_COUNT; c++) cJSON_AddNumberToObject(mix, ncclzCoderName((ncclzCoder)c), (double)p->mix[c]);
  cJSON_AddItemToObject(j, "coders", mix);
  /* the pair the calls ran; "pair": "model" when the cost model chose it for the agreed CR */
  cJSON_AddStringToObject(j, "algorithm", ncclzAlgorithmName(p->algo));
  cJSON_AddStringToObject(j, "coder", p->policy == NCCLZ_POLICY_OFF ? "plain" : ncclzPolicyName(p->policy));
  cJSON_AddStringToObject(j, "pair", p->pair_auto ? "model" : "config");
  if (p->pair_cr[NCCLZ_CODER_RAW] > 0) {
    cJSON *cr = cJSON_CreateObject();
    for (int c = NCCLZ_CODER_FIXEDLEN; c < NCCLZ_CODER_COUNT; c++)
      cJSON_AddNumberToObject(cr, ncclzCoderName((ncclzCoder)c), p->pair_cr[c]);
    cJSON_AddItemToObject(j, "pair_cr", cr);
  }
  if (p->plain_us > 0) {
    cJSON_AddNumberToObject(j, "plain_us", p->plain_us);
    cJSON_AddNumberToObject(j, "vs_plain", p->time_us > 0 ? p->plain_us / p->time_us : 0);
  }
  if (p->host_unit_us > 0) cJSON_AddNumberToObject(j, "host_unit_us", p->host_unit_us);
  if (p->traced) {
    cJSON_AddNumberToObject(j, "codec_us", p->codec_us);
    cJSON_AddNumberToObject(j, "exposed_us", p->exposed_us);
    cJSON_AddNumberToObject(j, "exposed_frac", p->codec_us > 0 ? p->exposed_us / p->codec_us : 0);
    cJSON_AddNumberToObject(j, "comm_us", p->comm_us);
    cJSON_AddNumberToObject(j, "iface_us", p->iface_us);
  }
  return j;
}

/* Sizes MIN, MIN*FACTOR, ... <= MAX, as element counts per rank's block (nccl-tests' rule). */
size_t perf_make_points(const perf_opts *o, perf_point **pts) {
  size_t n = 0, ds = ncclzDtypeSize(o->dtype);
  for (double sz = (double)o->min_bytes; sz <= (double)o->max_bytes * 1.000001; sz *= o->factor) n++;
  *pts = calloc(n + 1, sizeof **pts);
  size_t k = 0;
  for (double sz = (double)o->min_bytes; k < n; sz *= o->factor, k++) {
    size_t per = o->coll == NCCLZ_ALLREDUCE || o->coll == NCCLZ_BROADCAST ? 1 : (size_t)o->nranks;
    (*pts)[k].count = (size_t)sz / ds / per;
    (*pts)[k].size = (*pts)[k].count * ds * per;
  }
  return n;
}

void perf_finish_point(const perf_opts *o, perf_point *p) {
  double secs = p->time_us * 1e-6;
  p->algbw = secs > 0 ? (double)p->size / secs / 1e9 : 0;
  p->busbw = p->algbw * ncclzBusBwFactor(o->coll, o->nranks);
  p->cr = p->frames_b ? (double)p->raw / (double)p->frames_b : 1.0;
}


/* ---------------------------------------------------------------- stress */

void perf_stress_init(perf_stress *st) {
  memset(st, 0, sizeof *st);
  st->x = 0x9E3779B97F4A7C15ull;
}

size_t perf_stress_next(perf_stress *st, perf_opts *oo) {
  static const ncclzCollective colls[] = {NCCLZ_ALLREDUCE, NCCLZ_REDUCESCATTER, NCCLZ_ALLGATHER, NCCLZ_ALLTOALL,
                                          NCCLZ_BROADCAST};
  uint64_t x = st->x;
  x ^= x << 13, x ^= x >> 7, x ^= x << 17;
  st->x = x;
  int k = (int)(x % 5);
  oo->coll = colls[k];
  oo->root = (int)((x >> 8) % (uint64_t)oo->nranks);
  st->counts[oo->coll]++;
  st->calls++;
  return (size_t)exp2((double)((x >> 16) % 22001) / 1000.0) - 1;
}

void perf_stress_progress(const perf_stress *st, int total) {
  if (isatty(2) && st->calls % 50 == 0) fprintf(stderr, "\r# stress: %d/%d calls", st->calls, total);
}

void perf_stress_report(const perf_stress *st, const perf_opts *o, int failed) {
  if (isatty(2)) fprintf(stderr, "\n"); /* after the progress line */
  fprintf(stderr, "# stress: %d calls (allreduce %llu, reducescatter %llu, allgather %llu, alltoall %llu, broadcast %llu) "
         "on %d ranks, %s, %llu wrong elements%s\n",
         st->calls, (unsigned long long)st->counts[NCCLZ_ALLREDUCE], (unsigned long long)st->counts[NCCLZ_REDUCESCATTER],
         (unsigned long long)st->counts[NCCLZ_ALLGATHER], (unsigned long long)st->counts[NCCLZ_ALLTOALL],
         (unsigned long long)st->counts[NCCLZ_BROADCAST], o->nranks, ncclzPolicyName(o->cfg.policy),
         (unsigned long long)st->wrong, failed ? ", stopped by an error" : "");
}
