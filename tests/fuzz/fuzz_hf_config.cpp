// fuzz_hf_config.cpp: a Hugging Face config.json (core/io/hf_gpt2.h parse_gpt2_config, and
// every family's core/io/hf_model.h parse_hf_config).
#include <cstdint>
#include <string>

#include "core/io/hf_gpt2.h"
#include "core/io/hf_model.h"
#include "core/model/config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  headmap::Result<headmap::Gpt2Config> c = headmap::parse_gpt2_config(std::string(reinterpret_cast<const char*>(data), size), "config.json");
  if (c && (c->n_embd < 1 || c->n_embd > headmap::kMaxDModel || c->n_head < 1 || c->n_embd % c->n_head != 0 || c->n_layer < 1 ||
            c->n_layer > headmap::kMaxModelLayers || c->n_positions < 1))
    __builtin_trap();
  headmap::Result<headmap::HfModelConfig> f = headmap::parse_hf_config(std::string(reinterpret_cast<const char*>(data), size), "config.json");
  if (f && f->arch.family != "gpt2") {
    const headmap::Arch& a = f->arch;
    if (f->d_model < 1 || f->d_model > headmap::kMaxDModel || f->num_heads < 1 || f->num_kv_heads < 1 || f->num_heads % f->num_kv_heads != 0 ||
        f->head_dim < 1 || f->num_layers < 1 || f->num_layers > headmap::kMaxModelLayers || f->mlp_width < 1 ||
        (!a.windows.empty() && static_cast<int>(a.windows.size()) != f->num_layers) || a.rotary_dims(f->head_dim) % 2 != 0 ||
        !(a.norm_eps > 0) || (a.rotary() && !(a.rope_theta > 1)))
      __builtin_trap();
  }
  return 0;
}
