// fuzz_hf_config.cpp: a Hugging Face config.json of any family (core/io/hf_model.h parse_hf_config,
// reading the family table of hf_families.h).
#include <cstdint>
#include <string>

#include "core/io/hf_model.h"
#include "core/model/config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  headmap::Result<headmap::HfModelConfig> f = headmap::parse_hf_config(std::string(reinterpret_cast<const char*>(data), size), "config.json");
  if (f) {
    const headmap::Arch& a = f->arch;
    if (f->d_model < 1 || f->d_model > headmap::kMaxDModel || f->num_heads < 1 || f->num_kv_heads < 1 || f->num_heads % f->num_kv_heads != 0 ||
        f->head_dim < 1 || f->num_layers < 1 || f->num_layers > headmap::kMaxModelLayers || f->mlp_width < 1 ||
        (!a.windows.empty() && static_cast<int>(a.windows.size()) != f->num_layers) || a.rotary_dims(f->head_dim) % 2 != 0 ||
        !(a.norm_eps > 0) || (a.rotary() && !(a.rope_theta > 1)))
      __builtin_trap();
  }
  return 0;
}
