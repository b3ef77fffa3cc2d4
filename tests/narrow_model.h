// narrow_model.h: a tiny Llama-shaped model written as a Hugging Face directory
// (model.safetensors, config.json, a tokenizer.json) in BF16, F16 or F32 holding the same
// values: test_narrow_weights.cpp's twins, and a BF16 model for headmap-cli's tests.
#pragma once
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/math/half.h"
#include "core/math/rng.h"
#include "core/math/weight_dtype.h"

namespace headmap::narrow_model {
namespace fs = std::filesystem;

constexpr int D = 64, H = 4, KV = 2, dh = 16, L = 2, F = 96, V = 400;

struct FileTensor {
  std::string name;
  std::vector<int64_t> shape;
  std::vector<float> values;  // every one a value of the narrow format
};

inline std::vector<FileTensor> llama_tensors(bool tied, WeightDtype dt, int vocab = V) {
  std::vector<FileTensor> ts;
  uint64_t key = 500;
  auto add = [&](const std::string& name, std::vector<int64_t> shape, float scale, float offset) {
    int64_t n = 1;
    for (int64_t s : shape) n *= s;
    FileTensor t{name, shape, std::vector<float>(static_cast<size_t>(n))};
    fill_normals(++key, t.values.data(), n, scale);
    for (float& v : t.values) v = narrow_to_float(float_to_narrow(v + offset, dt), dt);
    ts.push_back(std::move(t));
  };
  add("model.embed_tokens.weight", {vocab, D}, 0.5f, 0.0f);
  for (int l = 0; l < L; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    add(p + "input_layernorm.weight", {D}, 0.1f, 1.0f);
    add(p + "post_attention_layernorm.weight", {D}, 0.1f, 1.0f);
    add(p + "self_attn.q_proj.weight", {H * dh, D}, 0.2f, 0.0f);
    add(p + "self_attn.k_proj.weight", {KV * dh, D}, 0.2f, 0.0f);
    add(p + "self_attn.v_proj.weight", {KV * dh, D}, 0.2f, 0.0f);
    add(p + "self_attn.o_proj.weight", {D, H * dh}, 0.2f, 0.0f);
    add(p + "mlp.gate_proj.weight", {F, D}, 0.2f, 0.0f);
    add(p + "mlp.up_proj.weight", {F, D}, 0.2f, 0.0f);
    add(p + "mlp.down_proj.weight", {D, F}, 0.1f, 0.0f);
  }
  add("model.norm.weight", {D}, 0.1f, 1.0f);
  if (!tied) add("lm_head.weight", {vocab, D}, 0.5f, 0.0f);
  return ts;
}

inline void write_model(const fs::path& dir, const std::vector<FileTensor>& ts, bool tied, const char* dtype, int vocab = V) {
  fs::create_directories(dir);
  const bool wide = std::string(dtype) == "F32";
  const WeightDtype dt = std::string(dtype) == "F16" ? WeightDtype::F16 : WeightDtype::BF16;
  nlohmann::json header;
  std::string data;
  for (const FileTensor& t : ts) {
    const size_t begin = data.size();
    for (float v : t.values) {
      if (wide) {
        data.append(reinterpret_cast<const char*>(&v), 4);
      } else {
        const uint16_t h = float_to_narrow(v, dt);
        data.append(reinterpret_cast<const char*>(&h), 2);
      }
    }
    header[t.name] = {{"dtype", dtype}, {"shape", t.shape}, {"data_offsets", {begin, data.size()}}};
  }
  std::string h = header.dump();
  h.append((8 - h.size() % 8) % 8, ' ');
  std::ofstream f(dir / "model.safetensors", std::ios::binary);
  const uint64_t n = h.size();
  f.write(reinterpret_cast<const char*>(&n), 8);
  f << h << data;
  nlohmann::json cfg = {{"model_type", "llama"},     {"hidden_size", D},         {"num_attention_heads", H}, {"num_key_value_heads", KV},
                        {"num_hidden_layers", L},     {"intermediate_size", F},   {"vocab_size", vocab},          {"max_position_embeddings", 64},
                        {"rms_norm_eps", 1e-5},       {"rope_theta", 500000.0},   {"tie_word_embeddings", tied},
                        {"rope_scaling", {{"rope_type", "llama3"}, {"factor", 8.0}, {"low_freq_factor", 1.0}, {"high_freq_factor", 4.0},
                                          {"original_max_position_embeddings", 16}}}};
  std::ofstream(dir / "config.json") << cfg.dump(2);
  fs::copy_file(fs::path(HEADMAP_TEST_DATA) / "tokenizers" / "bpe_bytelevel_trim.json", dir / "tokenizer.json",
                fs::copy_options::overwrite_existing);
}

}  // namespace headmap::narrow_model
