// fuzz_hf_config.cpp: a Hugging Face config.json (core/io/hf_gpt2.h parse_gpt2_config).
#include <cstdint>
#include <string>

#include "core/io/hf_gpt2.h"
#include "core/model/config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  headmap::Result<headmap::Gpt2Config> c = headmap::parse_gpt2_config(std::string(reinterpret_cast<const char*>(data), size), "config.json");
  if (c && (c->n_embd < 1 || c->n_embd > headmap::kMaxDModel || c->n_head < 1 || c->n_embd % c->n_head != 0 || c->n_layer < 1 ||
            c->n_layer > headmap::kMaxModelLayers || c->n_positions < 1))
    __builtin_trap();
  return 0;
}
