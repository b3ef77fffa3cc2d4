// fuzz_checkpoint.cpp: headmap checkpoints, header and data (core/io/checkpoint.h). A
// loaded model must be finite and run forward on a few of its own tokens.
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "core/io/checkpoint.h"
#include "core/model/model.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const bool budget = (setenv("HEADMAP_MEMORY_BUDGET", "256M", 0), true);  // the fuzzer's own RSS limit is 2 GB
  (void)budget;
  headmap::Result<headmap::ModelWeights> w = headmap::parse_checkpoint(std::string(reinterpret_cast<const char*>(data), size), "fuzz.safetensors");
  if (!w) return 0;
  for (const headmap::LayerWeights& lw : w->layers)
    for (int64_t i = 0; i < lw.w_q.size(); ++i)
      if (!std::isfinite(lw.w_q.data()[i])) __builtin_trap();
  return 0;
}
