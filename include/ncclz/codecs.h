/* ncclz codecs: quantizers, lossless coders over int32 symbols, and the frame format.
 *
 * This is the one public header of the codecs layer. It depends on nothing above it.
 * The C implementation here is the ground truth: the CUDA implementation
 * (include/ncclz/codecs_cuda.h) must produce the same bytes for every input.
 * The byte layout of frames and streams is specified in codecs/FORMAT.md.
 *
 * Error convention: every function returning ncclzStatus leaves a one-line,
 * human-readable reason in ncclzLastError() (thread-local) on failure.
 */
#ifndef NCCLZ_CODECS_H
#define NCCLZ_CODECS_H

#include <stddef.h>
#include <stdint.h>

#include "ncclz/version.h" /* every layer's header gives the version macros */

#ifdef __cplusplus
extern "C" {
#endif

/* Functions marked NCCLZ_HD are compiled for host and device from the same source. */
#if defined(__CUDACC__)
#define NCCLZ_HD __host__ __device__
#else
#define NCCLZ_HD
#endif

typedef enum {
  NCCLZ_OK = 0,
  NCCLZ_ERR_ARG = 1,       /* invalid argument or spec */
  NCCLZ_ERR_CORRUPT = 2,   /* frame or stream fails validation */
  NCCLZ_ERR_CAPACITY = 3,  /* destination buffer too small */
  NCCLZ_ERR_NONFINITE = 4, /* NaN or Inf under quantization */
  NCCLZ_ERR_RANGE = 5,     /* value out of the quantizer's range (e.g. unflagged fill values) */
  NCCLZ_ERR_NOMEM = 6,
  NCCLZ_ERR_IO = 7,
  NCCLZ_ERR_CUDA = 8,
} ncclzStatus;

const char *ncclzStatusString(ncclzStatus s);
/* The detailed message of the last failure on this thread ("" if none). */
const char *ncclzLastError(void);
/* Records a failure message (printf-style) and returns `s`; for use by all layers. The arguments
 * may include ncclzLastError() itself, to wrap a cause: "ctx: %s", ncclzLastError(). */
ncclzStatus ncclzSetError(ncclzStatus s, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* A whole file, NUL-terminated (the NUL is not counted in *len), malloc'd; NULL with a one-line
 * error ("WHAT: cannot open 'PATH': reason", NCCLZ_ERR_IO or NCCLZ_ERR_NOMEM) on failure.
 * what may be NULL. The one file reader of every layer. */
char *ncclzReadFile(const char *what, const char *path, size_t *len);
/* Writes n bytes to path (created or truncated); NCCLZ_ERR_IO with a one-line error
 * ("WHAT: cannot write 'PATH': reason") when it cannot open, write or close it. what may be NULL.
 * The one file writer of every layer. */
ncclzStatus ncclzWriteFile(const char *what, const char *path, const void *data, size_t n);

/* Seconds on the monotonic clock: the one clock every layer times host work with. */
double ncclzNowSeconds(void);

/* Median of v[0..n) (the mean of the middle two for even n; 0 for n = 0). Sorts v in place.
 * The one median of every layer (timings, errors, spreads). */
double ncclzMedian(double *v, size_t n);

/* A byte count as users write it: digits, or a decimal with K, M or G (binary multiples: 1K =
 * 1024), then an optional "i" and "B" or "b": "65536", "4M", "4MiB", "1.5K", "64kb". The value
 * must be a whole number of bytes from 1 to 1e15. 0 with *out set, or -1. The one size parser
 * of the command line and the scenario files. */
int ncclzParseBytes(const char *s, uint64_t *out);
/* A byte count for people: "256 MiB", "1 GiB", "1.5 KiB", "100 B" (powers of 1024). */
void ncclzFormatBytes(double bytes, char *buf, size_t cap);
/* A bandwidth with its unit written out: "200Gb/s", "25 GB/s", "1.6Tb/s" (also Mb/s, MB/s, TB/s;
 * b = bits, B = bytes, powers of 1000) into GB/s (1e9 bytes/s), the unit of every *_gbps field.
 * -1 when the unit is missing or unknown. The one bandwidth parser of the CLI and the scenarios. */
int ncclzParseBandwidth(const char *s, double *gbytes_per_s);
/* "200 Gb/s (25 GB/s)" */
void ncclzFormatBandwidth(double gbytes_per_s, char *buf, size_t cap);

/* Strict number parsers, the one way every layer reads a number from text (CLI, specs, JSON
 * strings): the whole string must be the number (no sign on unsigned values, no leading space,
 * no hex, no trailing characters), in [lo, hi] (NaN is never in range). 0 with *out set, or -1. */
int ncclzParseU64(const char *s, uint64_t lo, uint64_t hi, uint64_t *out);
int ncclzParseDouble(const char *s, double lo, double hi, double *out);

/* ------------------------------------------------------------------ types */

typedef enum { NCCLZ_CODER_RAW = 0, NCCLZ_CODER_FIXEDLEN = 1, NCCLZ_CODER_HUFFMAN = 2, NCCLZ_CODER_COUNT = 3 } ncclzCoder;
typedef enum { NCCLZ_DTYPE_F32 = 0, NCCLZ_DTYPE_BF16 = 1, NCCLZ_DTYPE_F16 = 2, NCCLZ_DTYPE_I32 = 3, NCCLZ_DTYPE_COUNT = 4 } ncclzDtype;
typedef enum { NCCLZ_QUANT_NONE = 0, NCCLZ_QUANT_EB = 1, NCCLZ_QUANT_QSGD = 2 } ncclzQuantKind;

const char *ncclzCoderName(ncclzCoder c);    /* "raw", "fixedlen", "huffman" */
int ncclzCoderFromName(const char *name);     /* -1 if unknown */
size_t ncclzDtypeSize(ncclzDtype t);
const char *ncclzDtypeName(ncclzDtype t);     /* "f32", "bf16", "f16", "i32" */
int ncclzDtypeFromName(const char *name);     /* -1 if unknown */

/* Code used for fill values (kept exactly, restored to the fill value on dequantization).
 * Legitimate codes satisfy |code| < NCCLZ_CODE_LIMIT so that 3D Lorenzo sums never overflow. */
#define NCCLZ_FILL_CODE INT32_MIN
#define NCCLZ_CODE_LIMIT (1 << 27)
/* Without fill=, ncclzQuantResolve refuses EB data with |x| >= this: such values are almost
 * always fill values (netCDF's 9.96921e36, 1e36, 1e20 ...), and under rel= they would stretch
 * the range so that the bound means nothing. */
#define NCCLZ_EB_HUGE_VALUE 1e30f

/* ------------------------------------------------------------ quantizers */

/* A parsed --quant SPEC:
 *   none | eb:abs=X | eb:rel=X [,lorenzo=1d|2d|3d] [,fill=V]
 *   qsgd:bits=2|4|8,bucket=N [,seed=S] */
typedef struct {
  ncclzQuantKind kind;
  int eb_is_rel;          /* EB: 1 for rel (fraction of the value range), 0 for abs */
  double eb;              /* EB: the number given */
  int lorenzo;            /* EB: 0 (none), 1, 2 or 3 dimensions */
  int has_fill;           /* EB: values equal to fill_value are kept exactly */
  float fill_value;
  int qsgd_bits;          /* QSGD: 2, 4 or 8 */
  uint32_t qsgd_bucket;   /* QSGD: elements per scale */
  uint64_t seed;          /* QSGD: RNG seed (default 0x6e63636c7a) */
} ncclzQuantSpec;

ncclzStatus ncclzQuantSpecParse(const char *spec, ncclzQuantSpec *out);
/* Writes the canonical text of a spec into buf. */
void ncclzQuantSpecFormat(const ncclzQuantSpec *q, char *buf, size_t cap);

/* The resolved parameters needed to dequantize; these travel in stream and frame headers. */
typedef struct {
  ncclzQuantKind kind;
  int lorenzo;            /* 0..3 */
  uint32_t dims[3];       /* Lorenzo shape [d0][d1][d2], C order, dims[2] fastest; missing leading dims are 1 */
  double bound;           /* EB: the absolute error bound every element meets (what the user asked) */
  double abs_eb;          /* EB: the quantization half-step, code = round(x / (2 abs_eb)); it is
                             `bound` less half a float ulp of the largest value, so that rounding
                             the reconstruction to float cannot break `bound` (FORMAT.md) */
  int has_fill;
  float fill_value;
  int qsgd_bits;
  uint32_t qsgd_bucket;
  uint64_t seed;
  uint32_t rank;          /* QSGD: RNG stream of this rank */
} ncclzQuantParams;

/* Float view of input data: converts n elements of dtype to float (bf16/f16 exactly). */
void ncclzToFloat(const void *src, ncclzDtype dtype, size_t n, float *dst);
void ncclzFromFloat(const float *src, size_t n, ncclzDtype dtype, void *dst);

/* Scans x (finite check, value range excluding fill values) and resolves spec -> params.
 * NaN/Inf gives NCCLZ_ERR_NONFINITE with their count; values whose code would reach
 * NCCLZ_CODE_LIMIT give NCCLZ_ERR_RANGE with their count (unless they are the fill value).
 * dims may be NULL for 1D; ndims is how many entries of dims are given (product must be n).
 * A huge fill=V (|V| >= NCCLZ_EB_HUGE_VALUE) that no element equals exactly is snapped to the one
 * value within 0.1% of V, so that fill=9.97e36 finds netCDF's 9.96921e36; out->fill_value is the
 * exact value used. */
ncclzStatus ncclzQuantResolve(const ncclzQuantSpec *spec, const float *x, size_t n,
                              const uint32_t *dims, int ndims, uint32_t rank, ncclzQuantParams *out);

/* Error-bounded quantization (+ optional Lorenzo on the integer codes). |x - dequant| <= bound
 * (abs_eb if bound is 0) for every non-fill element, else NCCLZ_ERR_RANGE; fill elements get
 * NCCLZ_FILL_CODE. These two work on plain codes
 * and ignore p->lorenzo: the caller applies ncclzLorenzoForward/Inverse around them. */
ncclzStatus ncclzQuantizeEB(const ncclzQuantParams *p, const float *x, size_t n, int32_t *codes);
ncclzStatus ncclzDequantizeEB(const ncclzQuantParams *p, const int32_t *codes, size_t n, float *x);
/* Lorenzo prediction on codes, in place-safe forms (codes -> deltas, deltas -> codes). */
void ncclzLorenzoForward(const ncclzQuantParams *p, const int32_t *codes, size_t n, int32_t *deltas);
void ncclzLorenzoInverse(const ncclzQuantParams *p, const int32_t *deltas, size_t n, int32_t *codes);

/* QSGD's level count for p (2^(bits-1) - 1): code c of a bucket with scale m stands for c m / levels. */
int ncclzQsgdLevels(const ncclzQuantParams *p);

/* QSGD: per bucket scale = max|x| (or scales_in when non-NULL, shared by all ranks),
 * levels s = 2^(bits-1)-1, code = sign(x) * (floor(|x|/scale*s) + [u < frac]) with
 * u from Philox4x32-10 keyed by (seed) with counter (element index / 4, rank), word index mod 4. */
size_t ncclzQsgdNumBuckets(const ncclzQuantParams *p, size_t n);
void ncclzQsgdScales(const ncclzQuantParams *p, const float *x, size_t n, float *scales);
ncclzStatus ncclzQuantizeQsgd(const ncclzQuantParams *p, const float *x, size_t n,
                              const float *scales, int32_t *codes);
/* NCCLZ_ERR_ARG, writing nothing, when bits, bucket or a scale (finite, >= 0) is out of range. */
ncclzStatus ncclzDequantizeQsgd(const ncclzQuantParams *p, const int32_t *codes, size_t n,
                                const float *scales, float *x);
/* Philox4x32-10 uniform in [0,1) with 24 bits: the exact value used by QSGD. The device uses the
 * same inline code (codecs/philox.h). */
float ncclzPhiloxUniform(uint64_t seed, uint64_t index, uint32_t rank);

/* --------------------------------------------------------------- coders */

/* Coder parameters that shape the bytes (stored in the frame header). */
typedef struct {
  uint32_t fixedlen_tile_blocks;   /* FIXEDLEN: 32-symbol blocks per tile (default 256) */
  uint32_t huffman_segment;        /* HUFFMAN: symbols per independently decodable segment (default 512; the executor's frames 256) */
} ncclzCoderParams;

void ncclzCoderParamsDefault(ncclzCoderParams *p);

/* Upper bound on the coded payload size of n symbols (excluding frame header and side data). */
size_t ncclzCoderBound(ncclzCoder c, const ncclzCoderParams *p, size_t n);

/* Each encoder writes at most cap bytes and returns NCCLZ_ERR_CAPACITY if they do not fit.
 * Each decoder validates every offset and length against len and never reads past src+len
 * nor writes past sym+n. */
ncclzStatus ncclzRawEncode(const int32_t *sym, size_t n, uint8_t *dst, size_t cap, size_t *out_len);
ncclzStatus ncclzRawDecode(const uint8_t *src, size_t len, int32_t *sym, size_t n);

ncclzStatus ncclzFixedlenEncode(const int32_t *sym, size_t n, const ncclzCoderParams *p,
                                uint8_t *dst, size_t cap, size_t *out_len);
ncclzStatus ncclzFixedlenDecode(const uint8_t *src, size_t len, const ncclzCoderParams *p,
                                int32_t *sym, size_t n);

/* Huffman alphabet choice (centre c, radius R): symbols in [c-R, c+R) have their own code,
 * the rest are escaped. See FORMAT.md for the rule; same on host and device. */
typedef struct {
  int32_t centre;
  uint32_t radius;
} ncclzHuffAlphabet;
ncclzHuffAlphabet ncclzHuffChooseAlphabet(const int32_t *sym, size_t n);
/* The radius rule alone, from the extremes and median of a sample (FORMAT.md "Alphabet"). */
ncclzHuffAlphabet ncclzHuffAlphabetAround(int32_t min_sym, int32_t max_sym, int32_t centre);

ncclzStatus ncclzHuffmanEncode(const int32_t *sym, size_t n, const ncclzCoderParams *p,
                               uint8_t *dst, size_t cap, size_t *out_len, ncclzHuffAlphabet *alpha_out);
ncclzStatus ncclzHuffmanDecode(const uint8_t *src, size_t len, const ncclzCoderParams *p,
                               ncclzHuffAlphabet alpha, int32_t *sym, size_t n);

/* Canonical, length-limited Huffman code lengths from a histogram of nsym bins
 * (deterministic: the same lengths on host and device). max_len <= NCCLZ_HUFF_MAX_LEN. */
#define NCCLZ_HUFF_MAX_LEN 15
#define NCCLZ_HUFF_MAX_RADIUS 4096
void ncclzHuffLengths(const uint32_t *freq, uint32_t nsym, uint32_t max_len, uint8_t *lengths);

/* ---------------------------------------------------------------- frames */

#define NCCLZ_FRAME_MAGIC 0x465A434Eu  /* "NCZF" little-endian */
#define NCCLZ_STREAM_MAGIC 0x535A434Eu /* "NCZS" */
/* Frame and stream version (FORMAT.md). 2: HUFFMAN's sparse length table and variable-length
 * escapes; version 1 frames are rejected ("unsupported frame version 1"). */
#define NCCLZ_FORMAT_VERSION 2
#define NCCLZ_FRAME_HEADER_BYTES 64
#define NCCLZ_STREAM_HEADER_BYTES 64
#define NCCLZ_FRAME_FLAG_FILL 0x1u
#define NCCLZ_FRAME_FLAG_SIDE_SCALES 0x2u

/* The decoded view of a 64-byte frame header (FORMAT.md gives the byte layout). */
typedef struct {
  uint8_t version, coder, dtype, quant, lorenzo, qsgd_bits;
  uint16_t flags;
  uint32_t n_symbols;
  uint32_t payload_bytes;   /* everything after the header: side data + coded symbols */
  uint32_t side_bytes;      /* side data at the start of the payload (QSGD scales) */
  uint32_t qsgd_bucket;
  uint32_t coder_p0, coder_p2;
  int32_t coder_p1;
  double abs_eb;
  float fill_value;
  uint32_t payload_check;
  uint32_t raw_bytes;       /* n_symbols * dtype size: the bytes this frame stands for */
} ncclzFrameHeader;

/* 32-bit FNV-1a. Hand-written on purpose: 60 header bytes, and the same code must run on the
 * device (codecs/hd_util.h holds the inline version both sides use). */
uint32_t ncclzFnv1a(const uint8_t *p, size_t n);
/* Position-weighted payload checksum: sum over 32-bit LE words w_i (zero-padded) of
 * w_i * (2i+1) mod 2^32, xor n_bytes. Chosen because a GPU computes it with one reduction. */
uint32_t ncclzPayloadCheck(const uint8_t *p, size_t n);

void ncclzFrameHeaderPack(const ncclzFrameHeader *h, uint8_t out[NCCLZ_FRAME_HEADER_BYTES]);
/* Validates magic, version, checksum, enums and size consistency against avail bytes (FORMAT.md
 * order, up to "payload available"; the payload check is ncclzFrameDecode's). To check a header
 * that arrived ahead of its payload, pass avail = SIZE_MAX. */
ncclzStatus ncclzFrameHeaderParse(const uint8_t *src, size_t avail, ncclzFrameHeader *h);

/* What a frame describes besides its symbols. */
typedef struct {
  ncclzDtype dtype;
  const ncclzQuantParams *quant;   /* may be NULL for quant none */
  const void *side; uint32_t side_bytes; /* QSGD scales for these symbols, or NULL/0 */
  ncclzCoderParams coder_params;
} ncclzFrameDesc;

/* Largest frame that encoding n symbols with coder c can produce. */
size_t ncclzFrameBound(ncclzCoder c, const ncclzCoderParams *p, size_t n, uint32_t side_bytes);
/* Encodes one frame = header + side + coded symbols. */
ncclzStatus ncclzFrameEncode(ncclzCoder c, const int32_t *sym, size_t n, const ncclzFrameDesc *d,
                             uint8_t *dst, size_t cap, size_t *out_len);
/* Decodes one frame from src (avail bytes); writes at most sym_cap symbols and at most side_cap
 * bytes of side data; *consumed is the frame's total size. */
ncclzStatus ncclzFrameDecode(const uint8_t *src, size_t avail, ncclzFrameHeader *h,
                             int32_t *sym, size_t sym_cap, void *side, size_t side_cap, size_t *consumed);

/* ------------------------------------------------------------ statistics */

/* Reference sizes of a symbol stream, in bits, for judging the coders. */
typedef struct {
  uint64_t n;                  /* symbols */
  uint64_t distinct;           /* distinct symbol values */
  double entropy_bits;         /* n * order-0 entropy: no symbol code can beat it */
  double huffman_opt_bits;     /* optimal, unlimited Huffman over the full alphabet, no tables */
  double fixedlen_ideal_bits;  /* best width per block of 32 zigzagged symbols, no width table */
  double global_width_bits;    /* one width for all: n * bitlen(max zigzag) */
} ncclzSymbolStats;

/* Computes the stats (sorts a copy of the symbols). NCCLZ_ERR_NOMEM on allocation failure. */
ncclzStatus ncclzSymbolStatsCompute(const int32_t *sym, size_t n, ncclzSymbolStats *st);

/* ---------------------------------------------------------------- streams */

/* A stream file = stream header + frames. It records how the whole array was quantized. */
typedef struct {
  ncclzDtype dtype;
  ncclzQuantParams quant;
  uint64_t n_elems;
  uint32_t n_frames;
} ncclzStreamHeader;

void ncclzStreamHeaderPack(const ncclzStreamHeader *h, uint8_t out[NCCLZ_STREAM_HEADER_BYTES]);
ncclzStatus ncclzStreamHeaderParse(const uint8_t *src, size_t avail, ncclzStreamHeader *h);

/* ------------------------------------------------- whole arrays and streams */

/* A whole array after quantization: the symbols the coders see, plus what dequantization needs. */
typedef struct {
  ncclzDtype dtype;
  ncclzQuantParams qp;
  size_t n;
  int32_t *sym;      /* n symbols (Lorenzo deltas when Lorenzo is on) */
  float *scales;     /* QSGD bucket scales, or NULL */
  size_t n_scales;
} ncclzSymbols;

/* Quantizes n elements of raw data (dtype) per spec into freshly allocated symbols.
 * dims/ndims give the shape for Lorenzo (ndims 0: 1D). */
ncclzStatus ncclzArrayQuantize(const ncclzQuantSpec *spec, ncclzDtype dtype, const void *raw, size_t n,
                               const uint32_t *dims, int ndims, uint32_t rank, ncclzSymbols *out);
/* Symbols -> floats (Lorenzo inverse, dequantization; quant none gives the original values). */
ncclzStatus ncclzArrayReconstruct(const ncclzSymbols *s, float *x);
void ncclzSymbolsFree(ncclzSymbols *s);

/* Symbols per frame for chunks of chunk_bytes input bytes (QSGD frames hold whole buckets). */
size_t ncclzFrameSymbols(const ncclzSymbols *s, size_t chunk_bytes);

/* Encodes one frame choosing its coder (the REA lives above this layer and plugs in here):
 * writes at most cap bytes to dst, sets *len and the coder it committed. */
typedef ncclzStatus (*ncclzFrameEncoderFn)(const int32_t *sym, size_t n, const ncclzFrameDesc *d, uint8_t *dst,
                                           size_t cap, size_t *len, ncclzCoder *committed, void *ctx);

/* Encodes all symbols into a stream (stream header + frames), with `coder` for every frame or,
 * when `encoder` is non-NULL, whatever it commits per frame. coder_mix[c] counts frames per
 * coder. *stream is malloc'd. */
ncclzStatus ncclzStreamEncode(const ncclzSymbols *s, ncclzCoder coder, ncclzFrameEncoderFn encoder,
                              void *encoder_ctx, size_t frame_syms, const ncclzCoderParams *cp,
                              uint8_t **stream, size_t *stream_len, unsigned coder_mix[NCCLZ_CODER_COUNT]);
/* Decodes and validates a whole stream into freshly allocated symbols and scales. */
ncclzStatus ncclzStreamDecode(const uint8_t *stream, size_t len, ncclzSymbols *out);

#ifdef __cplusplus
}
#endif
#endif /* NCCLZ_CODECS_H */
