// lq: llama.cpp's own quantizer (llama_model_quantize, as llama-quantize runs it) on a GGUF file,
// for spec/engine's oracle tier (built against node-llama-cpp's prebuilt libllama).
#include <stdio.h>
#include <stdlib.h>
#include "llama.h"
int main(int argc, char **argv) {
  if (argc != 4) { fprintf(stderr, "usage: lq IN.gguf OUT.gguf FTYPE\n"); return 2; }
  llama_backend_init();
  struct llama_model_quantize_params p = llama_model_quantize_default_params();
  p.ftype = (enum llama_ftype)atoi(argv[3]);
  p.nthread = 2;
  uint32_t r = llama_model_quantize(argv[1], argv[2], &p);
  llama_backend_free();
  return r != 0;
}
