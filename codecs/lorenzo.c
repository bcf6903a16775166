/* Lorenzo prediction on integer codes (FORMAT.md, "Lorenzo prediction on the codes").
 *
 * The array is [d0][d1][d2] (d2 fastest); lorenzo=L predicts along the last L axes and treats
 * the earlier axes as independent slabs. Neighbours outside the slab and fill codes count as 0;
 * fill positions keep NCCLZ_FILL_CODE.
 *
 * The 3D predictor factors by columns: with U[k] = up[i-1][j][k] + up[i][j-1][k] - up[i-1][j-1][k]
 * (the neighbours in earlier rows), pred[k] = q[k-1] + U[k] - U[k-1]. 2D is the same with only
 * the row above, 1D with no earlier rows, so one row kernel serves all three, and the loops only
 * walk rows and columns (no division or modulo per element).
 *
 * Arithmetic wraps in uint32: valid codes (|code| < 2^27) never overflow, and sums of codes from
 * many ranks (or decoded garbage) wrap deterministically, identically on host and device. */
#include "ncclz/codecs.h"
#include "hd_util.h"

#include <string.h>

/* A code as a predictor term: fill codes count as 0. */
static inline uint32_t lz_term(int32_t c) { return c == NCCLZ_FILL_CODE ? 0u : (uint32_t)c; }

/* The neighbours of column k in earlier rows (NULL rows are outside the slab). */
typedef struct {
  const int32_t *prev_plane;     /* q[i-1][j] */
  const int32_t *prev_row;       /* q[i][j-1] */
  const int32_t *prev_plane_row; /* q[i-1][j-1] */
} LzUpper;

static inline uint32_t lz_upper(const LzUpper *up, size_t k) {
  uint32_t u = 0;
  if (up->prev_plane) u += lz_term(up->prev_plane[k]);
  if (up->prev_row) u += lz_term(up->prev_row[k]);
  if (up->prev_plane_row) u -= lz_term(up->prev_plane_row[k]);
  return u;
}

/* codes -> deltas for one row of width w. Walks right to left and reads only columns at or left
 * of k, so out may alias cur. */
static void lz_row_forward(const int32_t *cur, const LzUpper *up, size_t w, int32_t *out) {
  if (w == 0) return;
  uint32_t u_k = lz_upper(up, w - 1);
  for (size_t k = w; k-- > 0;) {
    uint32_t u_left = k ? lz_upper(up, k - 1) : 0u;
    uint32_t left = k ? lz_term(cur[k - 1]) : 0u;
    int32_t c = cur[k];
    out[k] = c == NCCLZ_FILL_CODE ? NCCLZ_FILL_CODE : (int32_t)((uint32_t)c - (left + u_k - u_left));
    u_k = u_left;
  }
}

/* deltas -> codes for one row; the earlier rows in up are already reconstructed codes. */
static void lz_row_inverse(const int32_t *delta, const LzUpper *up, size_t w, int32_t *out) {
  uint32_t u_left = 0, left = 0;
  for (size_t k = 0; k < w; k++) {
    uint32_t u_k = lz_upper(up, k);
    int32_t d = delta[k];
    int32_t c = d == NCCLZ_FILL_CODE ? NCCLZ_FILL_CODE : (int32_t)((uint32_t)d + left + u_k - u_left);
    out[k] = c;
    left = lz_term(c);
    u_left = u_k;
  }
}

/* The shape as seen by the predictor. When dims do not describe n elements (params not made by
 * ncclzQuantResolve: a zero dimension, a product that differs or overflows), the whole array is
 * one 1D row, deterministically on both sides, so the loops never leave the n elements. */
typedef struct {
  int dims;             /* 0 (copy), 1, 2 or 3 */
  size_t d0, d1, d2;    /* planes, rows per plane, row width */
} LzShape;

static LzShape lz_shape(const ncclzQuantParams *p, size_t n) {
  LzShape s = {p->lorenzo, p->dims[0], p->dims[1], p->dims[2]};
  if (s.dims < 1 || s.dims > 3) s.dims = 0;
  if (!ncclz_dims_describe(p->dims[0], p->dims[1], p->dims[2], n)) {
    s.d0 = 1;
    s.d1 = 1;
    s.d2 = n;
    if (s.dims) s.dims = 1;
  }
  return s;
}

/* Neighbour rows of row (i, j) inside base; which ones exist depends on the predictor's dims. */
static LzUpper lz_neighbours(const LzShape *s, const int32_t *base, size_t i, size_t j) {
  const int32_t *row = base + (i * s->d1 + j) * s->d2;
  size_t plane = s->d1 * s->d2;
  int has_i = s->dims == 3 && i > 0, has_j = s->dims >= 2 && j > 0;
  LzUpper up = {has_i ? row - plane : NULL, has_j ? row - s->d2 : NULL,
                has_i && has_j ? row - plane - s->d2 : NULL};
  return up;
}

void ncclzLorenzoForward(const ncclzQuantParams *p, const int32_t *codes, size_t n, int32_t *deltas) {
  LzShape s = lz_shape(p, n);
  if (s.dims == 0) {
    if (deltas != codes) memmove(deltas, codes, n * sizeof *codes);
    return;
  }
  /* Last row first, so that in place the rows above are still codes when they are read. */
  for (size_t i = s.d0; i-- > 0;) {
    for (size_t j = s.d1; j-- > 0;) {
      size_t off = (i * s.d1 + j) * s.d2;
      LzUpper up = lz_neighbours(&s, codes, i, j);
      lz_row_forward(codes + off, &up, s.d2, deltas + off);
    }
  }
}

void ncclzLorenzoInverse(const ncclzQuantParams *p, const int32_t *deltas, size_t n, int32_t *codes) {
  LzShape s = lz_shape(p, n);
  if (s.dims == 0) {
    if (deltas != codes) memmove(codes, deltas, n * sizeof *codes);
    return;
  }
  for (size_t i = 0; i < s.d0; i++) {
    for (size_t j = 0; j < s.d1; j++) {
      size_t off = (i * s.d1 + j) * s.d2;
      LzUpper up = lz_neighbours(&s, codes, i, j); /* reconstructed rows */
      lz_row_inverse(deltas + off, &up, s.d2, codes + off);
    }
  }
}
