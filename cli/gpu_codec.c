/* `ncclz codec --device gpu`: the CUDA codecs, measured with CUDA events. */
#include "cli.h"

int cli_gpu_codec(const char *input, const char *quant, int coder, size_t chunk, int json) {
#ifdef NCCLZ_HAVE_CUDA
#error "wire the CUDA codec bench here"
#else
  (void)input, (void)quant, (void)coder, (void)chunk, (void)json;
  return cli_runtime_error("codec", "--device gpu: this ncclz was built without CUDA (configure with nvcc on the PATH)");
#endif
}
