/* The HUFFMAN code book: alphabet choice, length-limited code lengths and canonical codes
 * (FORMAT.md, "HUFFMAN"). Everything here is inline, allocation-free and deterministic, so the
 * host coder and the CUDA kernels include this one source and produce the same code book.
 * Internal to the codecs layer. */
#ifndef NCCLZ_HUFF_CODEBOOK_H
#define NCCLZ_HUFF_CODEBOOK_H
#include "hd_util.h"

/* Alphabet of radius R: 2R direct indices, the escape (2R) and the fill code (2R + 1). */
#define NCCLZ_HUFF_MAX_SYMS (2u * NCCLZ_HUFF_MAX_RADIUS + 2u)
NCCLZ_INLINE uint32_t ncclz_huff_alphabet_size(uint32_t radius) { return 2u * radius + 2u; }
NCCLZ_INLINE uint32_t ncclz_huff_escape_index(uint32_t radius) { return 2u * radius; }
NCCLZ_INLINE uint32_t ncclz_huff_fill_index(uint32_t radius) { return 2u * radius + 1u; }
/* The builder accepts max_len up to this (the format uses 15; tests use more to get the
 * unconstrained optimum for comparison). */
#define NCCLZ_HUFF_LEN_LIMIT 31u
/* Scratch the length builder needs for nsym bins. */
#define NCCLZ_HUFF_SCRATCH64(nsym) (2u * (nsym))
#define NCCLZ_HUFF_SCRATCH32(nsym) (2u * (nsym))

/* Symbols sampled for the alphabet's centre: m = min(n, NCCLZ_HUFF_CENTRE_SAMPLES) symbols at
 * positions floor(i * n / m). Their median (fill codes left out) is robust to the few huge
 * symbols (the first Lorenzo delta of a slab, outliers) that would drag a midrange away. */
#define NCCLZ_HUFF_CENTRE_SAMPLES 1024u
/* Sampled symbols left out at each end when measuring the spread: k / 128 of the k sampled. */
NCCLZ_INLINE uint32_t ncclz_huff_sample_trim(uint32_t k) { return k / 128u; }
NCCLZ_INLINE size_t ncclz_huff_sample_pos(size_t i, size_t n, size_t m) {
  return (size_t)(((uint64_t)i * (uint64_t)n) / (uint64_t)m);
}

/* Centre and radius of the directly coded symbols (FORMAT.md "Alphabet"): lo/hi are the
 * smallest and largest sampled non-fill symbols and `centre` their median. The radius is the
 * smallest power of two >= 2 (d + 1), d = max(hi - centre, centre - lo), capped at
 * NCCLZ_HUFF_MAX_RADIUS: twice the sampled spread leaves room for tails the sample missed, and
 * rare outliers beyond are escaped instead of stretching the code length table. */
NCCLZ_INLINE ncclzHuffAlphabet ncclz_huff_choose_alphabet(int32_t lo, int32_t hi, int32_t centre) {
  int64_t d = (int64_t)hi - centre;
  if ((int64_t)centre - lo > d) d = (int64_t)centre - lo;
  if (d < 0) d = 0;
  int64_t half = 2 * (d + 1);
  uint32_t radius = 1;
  while ((int64_t)radius < half && radius < NCCLZ_HUFF_MAX_RADIUS) radius <<= 1;
  ncclzHuffAlphabet a;
  a.centre = centre;
  a.radius = radius;
  return a;
}

/* Alphabet index of symbol s: s - c + R when in [0, 2R), the fill index 2R + 1 for the fill
 * code, else the escape index 2R. */
NCCLZ_INLINE uint32_t ncclz_huff_index(int32_t s, ncclzHuffAlphabet a) {
  int64_t d = (int64_t)s - (int64_t)a.centre + (int64_t)a.radius;
  if ((uint64_t)d < 2u * (uint64_t)a.radius) return (uint32_t)d;
  return s == NCCLZ_FILL_CODE ? ncclz_huff_fill_index(a.radius) : ncclz_huff_escape_index(a.radius);
}

/* ------------------------------------------------------------ escapes (FORMAT.md "Escapes")
 * After the escape code comes z = zigzag(s - c), the difference taken modulo 2^32, as a 5-bit
 * field holding b - 1 (b = bit length of z) and then the b - 1 bits of z below its leading one.
 * Any int32 round-trips (s -> z is a bijection of 32-bit words, and an escaped symbol has z != 0),
 * in at most 5 + 31 bits; the coastline-sized outliers of real data cost 15-20 bits, not 32. */
#define NCCLZ_HUFF_ESCAPE_COUNT_BITS 5u
/* The most one symbol costs: a 15-bit escape code, the count and 31 bits. */
#define NCCLZ_HUFF_MAX_SYMBOL_BITS (NCCLZ_HUFF_MAX_LEN + NCCLZ_HUFF_ESCAPE_COUNT_BITS + 31u)

NCCLZ_INLINE uint32_t ncclz_huff_escape_z(int32_t s, int32_t centre) {
  uint32_t d = (uint32_t)s - (uint32_t)centre;
  return (d << 1) ^ (0u - (d >> 31));
}
NCCLZ_INLINE int32_t ncclz_huff_unescape(uint32_t z, int32_t centre) {
  return (int32_t)((uint32_t)centre + (uint32_t)ncclz_unzigzag(z));
}
/* Bits after the escape code for this z (z != 0). */
NCCLZ_INLINE uint32_t ncclz_huff_escape_bits(uint32_t z) { return NCCLZ_HUFF_ESCAPE_COUNT_BITS + ncclz_bitlen(z) - 1u; }

/* Symbol s (alphabet index idx, code table entry = code | length << 16) as the one LSB-first bit
 * field it takes in a segment: its code and, after the escape code, the count b - 1 and the b - 1
 * bits of z below its leading one. *len gets the field's width (<= NCCLZ_HUFF_MAX_SYMBOL_BITS).
 * Both encoders put these fields end to end; on the GPU a warp places 32 at once, each at the
 * scan of the widths before it. */
NCCLZ_INLINE uint64_t ncclz_huff_symbol_field(int32_t s, ncclzHuffAlphabet a, uint32_t idx, uint32_t entry,
                                              uint32_t *len) {
  uint32_t width = entry >> 16;
  uint64_t field = entry & 0xFFFFu;
  if (idx == ncclz_huff_escape_index(a.radius)) {
    uint32_t z = ncclz_huff_escape_z(s, a.centre), b1 = ncclz_bitlen(z) - 1u;
    field |= (uint64_t)b1 << width;
    field |= (uint64_t)(z & ((1u << b1) - 1u)) << (width + NCCLZ_HUFF_ESCAPE_COUNT_BITS);
    width += NCCLZ_HUFF_ESCAPE_COUNT_BITS + b1;
  }
  *len = width;
  return field;
}

/* ORs a field of len <= 51 bits into a zeroed word array at bit p, LSB-first: up to three words,
 * which on the GPU neighbouring lanes' fields share, hence the atomics there. */
NCCLZ_INLINE void ncclz_huff_or_field(uint32_t *words, uint64_t p, uint64_t field, uint32_t len) {
  const uint64_t w = p >> 5;
  const uint32_t sh = (uint32_t)(p & 31u);
  const uint64_t lo = field << sh; /* bits 64.. of the placed field come from field >> (64 - sh) */
  const uint32_t part[3] = {(uint32_t)lo, (uint32_t)(lo >> 32), sh ? (uint32_t)(field >> (64u - sh)) : 0u};
  for (uint32_t k = 0; k < 3 && 32u * k < sh + len; k++) {
#ifdef __CUDA_ARCH__
    atomicOr(&words[w + k], part[k]);
#else
    words[w + k] |= part[k];
#endif
  }
}

/* ------------------------------------------------ code length table (FORMAT.md "Code lengths")
 * The lengths of indices lo .. lo+m-1, u of them nonzero, in one of two layouts: dense (m
 * nibbles) or sparse (an m-bit presence bitmap, then the u nonzero nibbles). The smaller is used,
 * dense on a tie, so (m, u) alone tell the decoder which: no flag, one encoding per table. Sparse
 * wins where a few used indices are spread over a wide window (outliers, fill codes at its top
 * end); dense where nearly every index is used (gradients), whose bitmap would be pure cost.
 * Arguments must be validated first (u <= m <= NCCLZ_HUFF_MAX_SYMS). */
NCCLZ_INLINE int ncclz_huff_table_sparse(uint32_t m, uint32_t u) {
  return (m + 31u) / 32u + (u + 7u) / 8u < (m + 7u) / 8u;
}
NCCLZ_INLINE uint32_t ncclz_huff_bitmap_words(uint32_t m, uint32_t u) {
  return ncclz_huff_table_sparse(m, u) ? (m + 31u) / 32u : 0u;
}
NCCLZ_INLINE uint32_t ncclz_huff_nibble_words(uint32_t m, uint32_t u) {
  return ncclz_huff_table_sparse(m, u) ? (u + 7u) / 8u : (m + 7u) / 8u;
}
/* Words of the table between [lo m][u] and [nseg]. */
NCCLZ_INLINE uint32_t ncclz_huff_table_words(uint32_t m, uint32_t u) {
  return ncclz_huff_bitmap_words(m, u) + ncclz_huff_nibble_words(m, u);
}
/* The table's first word: lo and m as 16-bit fields (both <= K <= 8194), so that with u in the
 * next word the table costs no more than version 1's [lo][m] when it is dense. */
NCCLZ_INLINE uint32_t ncclz_huff_table_word0(uint32_t lo, uint32_t m) { return lo | m << 16; }
/* The head of the payload: [lo m][u], the table, [nseg], nseg offsets. */
NCCLZ_INLINE uint64_t ncclz_huff_head_words(uint32_t m, uint32_t u, uint64_t nseg) {
  return 3u + (uint64_t)ncclz_huff_table_words(m, u) + nseg;
}

/* Stable ascending sort of 64-bit keys (bottom-up merge sort); tmp holds m keys. Keys are
 * distinct (they contain the index), so the result does not depend on the algorithm. */
NCCLZ_INLINE void ncclz_huff_sort(uint64_t *key, uint64_t *tmp, uint32_t m) {
  uint64_t *src = key, *dst = tmp;
  for (uint32_t width = 1; width < m; width *= 2) {
    for (uint32_t lo = 0; lo < m; lo += 2 * width) {
      uint32_t mid = lo + width < m ? lo + width : m;
      uint32_t hi = mid + width < m ? mid + width : m;
      uint32_t i = lo, j = mid, k = lo;
      while (i < mid && j < hi) dst[k++] = src[i] <= src[j] ? src[i++] : src[j++];
      while (i < mid) dst[k++] = src[i++];
      while (j < hi) dst[k++] = src[j++];
    }
    uint64_t *t = src;
    src = dst;
    dst = t;
  }
  if (src != key)
    for (uint32_t i = 0; i < m; i++) key[i] = src[i];
}

/* Step 2: the Huffman tree by two queues over the m >= 2 sorted leaves (weights in the high half
 * of key), a leaf winning ties. Leaves are nodes 0..m-1, internal node t is m+t; node[i] gets
 * node i's parent (the root, 2m-2, gets itself). weight holds the m-1 internal weights.
 * Written without branches: both queue heads are read at every pick (an empty queue's head
 * reads as all ones, so the other queue wins) and selects make the pick: on one H200 thread
 * the branchy form's control flow cost more than its loads, 27.2 us against 20.2 for m = 257,
 * 874 against 643 for m = 8,194 (test_gpu_huffbook). The GPU's blocks build the same links in
 * parallel (the fixed point below). The heads are re-read at every pick: carried in registers
 * they build other trees on the H200 when the arrays lie in shared memory. */
NCCLZ_INLINE void ncclz_huff_tree_parents(const uint64_t *key, uint32_t m, uint64_t *weight, uint32_t *node) {
  const uint64_t none = ~0ull; /* above any weight: sums of 32-bit frequencies */
  uint32_t leaf = 0, inner = 0;
  for (uint32_t t = 0; t + 1 < m; t++) {
    uint64_t w = 0;
    for (int k = 0; k < 2; k++) {
      /* clamped reads of written entries (an empty queue's value is never used) */
      const uint64_t kl = key[leaf < m ? leaf : m - 1] >> 32, wi = t ? weight[inner < t ? inner : t - 1] : none;
      const uint64_t lw = leaf < m ? kl : none, iw = inner < t ? wi : none;
      const int take_leaf = lw <= iw;
      w += take_leaf ? lw : iw;
      node[take_leaf ? leaf : m + inner] = m + t;
      leaf += (uint32_t)take_leaf;
      inner += (uint32_t)!take_leaf;
    }
    weight[t] = w;
  }
  node[2 * m - 2] = 2 * m - 2;
}

/* The same parent links in parallel, by a fixed point (for the GPU's thread blocks; the host
 * runs the merge above). The two-queue picks P[0..2m-3] are the stable merge of the sorted leaf
 * weights L (a leaf first on ties) with the internal weights I[0..m-3], and I[t] = P[2t] +
 * P[2t+1]. Start from I = infinity and repeat: merge, then pair sums. Each round's I is >= the
 * true one (order statistics grow with their inputs) and <= the last round's, and the equations
 * have one solution (I[t] > P[2t+1], so the first 2t+2 picks depend on I[0..t-1] only), so the
 * rounds stop, with no change, at the two-queue tree: 10-37 rounds on the trees of
 * test_huffman_format (m up to 8,194), each a merge that a block splits by merge path.
 * Weights are 32-bit here: every sum is at most the frame's symbol count, a uint32_t below
 * NCCLZ_HUFF_FP_INF (a frame of 2^32 - 1 symbols would be 16 GiB of codes), which is the start
 * value and saturates. */
#define NCCLZ_HUFF_FP_INF 0xFFFFFFFFu
NCCLZ_INLINE uint32_t ncclz_huff_fp_leaf(const uint64_t *key, uint32_t i) { return (uint32_t)(key[i] >> 32); }
/* Leaves among the first k picks of a round (merge path: the co-rank of diagonal k). */
NCCLZ_INLINE uint32_t ncclz_huff_fp_corank(const uint64_t *key, uint32_t m, const uint32_t *icur, uint32_t k) {
  const uint32_t ni = m - 2;
  uint32_t lo = k > ni ? k - ni : 0, hi = k < m ? k : m;
  while (lo < hi) { /* the smallest a whose leaf a does not precede internal k - a - 1 */
    const uint32_t a = (lo + hi) / 2;
    if (ncclz_huff_fp_leaf(key, a) <= icur[k - a - 1]) lo = a + 1;
    else hi = a;
  }
  return lo;
}
/* Picks [k0, k1) of one round (k0, k1 even, k1 <= 2m - 2): inext[k / 2] gets each pair's sum
 * and node[the pick's node] its parent m + k / 2. Returns the first pair whose sum differs from
 * icur's, NCCLZ_HUFF_FP_INF if none. */
NCCLZ_INLINE uint32_t ncclz_huff_fp_picks(const uint64_t *key, uint32_t m, const uint32_t *icur, uint32_t *inext,
                                           uint32_t *node, uint32_t k0, uint32_t k1) {
  const uint32_t ni = m - 2;
  uint32_t a = ncclz_huff_fp_corank(key, m, icur, k0), b = k0 - a;
  uint32_t first = 0, changed = NCCLZ_HUFF_FP_INF;
  for (uint32_t k = k0; k < k1; k++) {
    uint32_t w;
    if (a < m && (b >= ni || ncclz_huff_fp_leaf(key, a) <= icur[b])) {
      w = ncclz_huff_fp_leaf(key, a);
      node[a++] = m + k / 2;
    } else {
      w = icur[b];
      node[m + b++] = m + k / 2;
    }
    if (k % 2 == 0) {
      first = w;
    } else {
      const uint32_t sum = first > NCCLZ_HUFF_FP_INF - w ? NCCLZ_HUFF_FP_INF : first + w;
      if (sum != icur[k / 2] && changed == NCCLZ_HUFF_FP_INF) changed = k / 2;
      inext[k / 2] = sum;
    }
  }
  return changed;
}
/* Part `part` of `parts` of one round (a thread of a block of `parts` threads): its run of
 * ncclz_huff_fp_picks, runs of equal even length covering the picks from 2 settled on in order;
 * NCCLZ_HUFF_FP_INF for a part past the end. The pair sums before `settled` are final, in icur
 * and inext alike: a round that leaves I[0..s) unchanged has settled them, since each depends
 * only on the ones before it. Only the rest is merged again, so a round's parts shrink as the
 * front settles (on a REL 1e-4 frame of TREFHT, m = 4,958: 39% of the picks of every round in
 * full). The GPU block (huff_block.cuh) and the host's test of it split rounds this way. */
NCCLZ_INLINE uint32_t ncclz_huff_fp_part(const uint64_t *key, uint32_t m, uint32_t settled, const uint32_t *icur,
                                         uint32_t *inext, uint32_t *node, uint32_t part, uint32_t parts) {
  const uint32_t picks = 2 * m - 2, k_first = 2 * settled, chunk = 2 * ((m - 1 - settled + parts - 1) / parts),
                 k0 = k_first + part * chunk;
  if (k0 >= picks) return NCCLZ_HUFF_FP_INF;
  return ncclz_huff_fp_picks(key, m, icur, inext, node, k0, k0 + chunk < picks ? k0 + chunk : picks);
}

/* Parent links to depths from the root, in place. Parents always come after their children. */
NCCLZ_INLINE void ncclz_huff_parents_to_depths(uint32_t *node, uint32_t m) {
  node[2 * m - 2] = 0;
  for (uint32_t i = 2 * m - 2; i-- > 0;) node[i] = node[node[i]] + 1;
}

/* Step 2 whole: leaves' depths end up in node[0..m-1]. */
NCCLZ_INLINE void ncclz_huff_tree_depths(const uint64_t *key, uint32_t m, uint64_t *weight, uint32_t *node) {
  ncclz_huff_tree_parents(key, m, weight, node);
  ncclz_huff_parents_to_depths(node, m);
}

/* Step 3: clamp depths to max_len and restore the Kraft inequality (miniz's method): while the
 * sum exceeds 2^max_len, one code of length max_len goes and the longest shorter length with codes
 * gives one of them to the next length twice, the sum dropping by one a step. Steps from
 * max_len - 1 repeat until its codes or the excess run out, so they are taken as one (a REL frame
 * has an excess of 100-200 steps, which one GPU thread took 13-16 us over); a step from a shorter
 * length i makes i + 1 the next one's, so those stay single. The same counts as step by step
 * (test_huffman_format). */
NCCLZ_INLINE void ncclz_huff_limit(uint32_t *count, uint32_t max_len, int overflowed) {
  if (!overflowed) return;
  uint64_t kraft = 0;
  const uint64_t cap = 1ull << max_len;
  for (uint32_t len = 1; len <= max_len; len++) kraft += (uint64_t)count[len] << (max_len - len);
  while (kraft > cap) {
    uint32_t i = max_len - 1;
    while (i > 0 && !count[i]) i--;
    if (i > 0 && i == max_len - 1) { /* j steps: each -1 at max_len and at i, +2 at max_len */
      const uint64_t j = count[i] < kraft - cap ? count[i] : kraft - cap;
      count[max_len] += (uint32_t)j;
      count[i] -= (uint32_t)j;
      kraft -= j;
      continue;
    }
    count[max_len]--;
    if (i > 0) {
      count[i]--;
      count[i + 1] += 2;
    }
    kraft--;
  }
}

/* Code lengths for nsym bins (0 for unused bins), max length max_len (1..NCCLZ_HUFF_LEN_LIMIT,
 * and 2^max_len >= the number of used bins). scratch64 holds NCCLZ_HUFF_SCRATCH64(nsym) and
 * scratch32 NCCLZ_HUFF_SCRATCH32(nsym) entries. FORMAT.md steps 1-4. */
NCCLZ_INLINE void ncclz_huff_lengths(const uint32_t *freq, uint32_t nsym, uint32_t max_len, uint8_t *lengths,
                                     uint64_t *scratch64, uint32_t *scratch32) {
  uint64_t *key = scratch64, *tmp = scratch64 + nsym;
  uint32_t m = 0;
  for (uint32_t i = 0; i < nsym; i++) {
    lengths[i] = 0;
    if (freq[i]) key[m++] = (uint64_t)freq[i] << 32 | i;
  }
  if (m == 0) return;
  if (m == 1) {
    lengths[(uint32_t)key[0]] = 1;
    return;
  }
  ncclz_huff_sort(key, tmp, m); /* step 1: (frequency asc, index asc) */
  ncclz_huff_tree_depths(key, m, tmp, scratch32);
  uint32_t count[NCCLZ_HUFF_LEN_LIMIT + 1];
  for (uint32_t len = 0; len <= NCCLZ_HUFF_LEN_LIMIT; len++) count[len] = 0;
  int overflowed = 0;
  for (uint32_t i = 0; i < m; i++) {
    uint32_t depth = scratch32[i];
    if (depth > max_len) {
      depth = max_len;
      overflowed = 1;
    }
    count[depth]++;
  }
  ncclz_huff_limit(count, max_len, overflowed);
  /* Step 4: shortest lengths to the most frequent, ties by index (freq desc, index asc). */
  for (uint32_t i = 0; i < m; i++) key[i] = (uint64_t)(0xFFFFFFFFu - (uint32_t)(key[i] >> 32)) << 32 | (uint32_t)key[i];
  ncclz_huff_sort(key, tmp, m);
  uint32_t len = 1;
  for (uint32_t i = 0; i < m; i++) {
    while (count[len] == 0) len++;
    count[len]--;
    lengths[(uint32_t)key[i]] = (uint8_t)len;
  }
}

/* Kraft sum of the lengths, scaled by 2^15 (a valid code book has at most 2^15). */
NCCLZ_INLINE uint64_t ncclz_huff_kraft(const uint8_t *lengths, uint32_t nsym) {
  uint64_t kraft = 0;
  for (uint32_t i = 0; i < nsym; i++)
    if (lengths[i]) kraft += 1ull << (NCCLZ_HUFF_MAX_LEN - lengths[i]);
  return kraft;
}

/* First canonical code of each length 1..15 (codes by (length, index) ascending; the first 0,
 * then (code + 1) << (len - prev_len)). count[len] receives the number of codes per length. */
NCCLZ_INLINE void ncclz_huff_first_codes(const uint8_t *lengths, uint32_t nsym, uint32_t count[16], uint32_t first[16]) {
  for (uint32_t len = 0; len < 16; len++) count[len] = 0;
  for (uint32_t i = 0; i < nsym; i++) count[lengths[i]]++;
  /* RFC 1951's recurrence, equal to the rule above; count[0] (unused bins) does not count. */
  uint32_t code = 0;
  first[0] = 0;
  first[1] = 0;
  for (uint32_t len = 2; len < 16; len++) {
    code = (code + count[len - 1]) << 1;
    first[len] = code;
  }
}

/* Canonical code values (most significant bit first, numerically) of lengths 1..15;
 * codes[i] = 0 for unused bins. Requires a Kraft sum <= 2^15. */
NCCLZ_INLINE void ncclz_huff_canonical_codes(const uint8_t *lengths, uint32_t nsym, uint32_t *codes) {
  uint32_t count[16], next[16];
  ncclz_huff_first_codes(lengths, nsym, count, next);
  for (uint32_t i = 0; i < nsym; i++) codes[i] = lengths[i] ? next[lengths[i]]++ : 0u;
}

/* The low len bits of code in reverse order: the code as it lies in the LSB-first stream. */
NCCLZ_INLINE uint32_t ncclz_huff_reverse(uint32_t code, uint32_t len) {
  uint32_t r = 0;
  for (uint32_t i = 0; i < len; i++) r |= ((code >> i) & 1u) << (len - 1 - i);
  return r;
}
#endif
