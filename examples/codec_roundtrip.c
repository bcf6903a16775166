/* Codec round trip: quantize 1 Mi floats with an absolute error bound of 1e-3, code them with
 * HUFFMAN in 256 KiB frames, decode, and check every element against the bound. */
#include <ncclz/codecs.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

int main(void) {
  enum { N = 1 << 20 };
  float *x = malloc(N * sizeof *x), *y = malloc(N * sizeof *y);
  for (size_t i = 0; i < N; i++) x[i] = (float)(sin(i * 1e-3) + 0.01 * cos(i * 0.7));
  ncclzQuantSpec spec;
  ncclzCoderParams cp;
  ncclzSymbols sym, back;
  uint8_t *stream;
  size_t len;
  unsigned mix[NCCLZ_CODER_COUNT];
  ncclzCoderParamsDefault(&cp);
  if (ncclzQuantSpecParse("eb:abs=1e-3", &spec) ||
      ncclzArrayQuantize(&spec, NCCLZ_DTYPE_F32, x, N, NULL, 0, 0, &sym) ||
      ncclzStreamEncode(&sym, NCCLZ_CODER_HUFFMAN, NULL, NULL, ncclzFrameSymbols(&sym, 256 << 10), &cp, &stream,
                        &len, mix) ||
      ncclzStreamDecode(stream, len, &back) || ncclzArrayReconstruct(&back, y)) {
    fprintf(stderr, "codec_roundtrip: %s\n", ncclzLastError());
    return 1;
  }
  double maxerr = 0;
  for (size_t i = 0; i < N; i++) maxerr = fmax(maxerr, fabs((double)y[i] - x[i]));
  printf("ncclz %s: %zu bytes -> %zu bytes (CR %.2f), max error %.6g (bound 1e-3)\n", ncclzVersionString(),
         (size_t)N * 4, len, N * 4.0 / len, maxerr);
  ncclzSymbolsFree(&sym);
  ncclzSymbolsFree(&back);
  free(stream), free(x), free(y);
  return maxerr <= 1e-3 ? 0 : 1;
}
