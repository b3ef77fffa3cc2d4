// fuzz_config_json.cpp: a model config as JSON (core/io/config_json.h). An accepted config
// has every size within the sliders' ranges, so products such as L * H cannot overflow.
#include <cstdint>
#include <string>

#include "core/io/config_json.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  headmap::Result<headmap::ModelConfig> c = headmap::config_from_json(std::string(reinterpret_cast<const char*>(data), size));
  if (c && (c->d_model < 1 || c->d_model > headmap::kMaxDModel || c->num_heads < 1 || c->num_heads > headmap::kMaxDModel || c->num_layers < 1 ||
            c->num_layers > headmap::kMaxModelLayers || c->context < 1 || c->context > headmap::kMaxContext))
    __builtin_trap();
  if (c) (void)headmap::validate(*c);
  return 0;
}
