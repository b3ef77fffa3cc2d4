// gguf_writer.h: Llama-shaped GGUF files (version 3) written from the format for the tests and
// the benchmark that need a whole model in a block type: test_quant_weights.cpp,
// load_peak_rss.cpp (check-gguf), bench_gguf.cpp. (tests/reference/make_gguf.py writes the
// tiny files the numpy and llama.cpp oracles read; this one writes big ones fast.)
//
// Every matrix in a block type is random bytes under fixed finite F16 scales (and minimums):
// any such block is a valid block of the type, and what it widens to is what
// widen_weights (core/math/weight_dtype.h) reads. `widened` writes the same file with every
// matrix in F32 holding exactly those widened values: the model a loader that widens at
// load would hold. The tokenizer is a tiny SentencePiece-style one (<unk> <s> </s>, the 256
// byte tokens, "▁" and a-z); V may exceed it, unless full_vocab pads it to V.
#pragma once
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "core/math/half.h"
#include "core/math/weight_dtype.h"

namespace headmap::test {

// D = d_model, H = heads, KV = K/V heads, dh = d_head, L = layers, F = MLP width, V = vocab
struct GgufShape {
  int64_t D, H, KV, dh, L, F, V;
};

// The type of each group of matrices. Q4_K_M-style: Q4_K, with W_V, W_down and the
// embedding in Q6_K and an untied Q6_K output.
struct GgufTypes {
  WeightDtype embed, qk, v, o, gate_up, down, output;
  bool untied = false;
  static GgufTypes all(WeightDtype t, bool untied = false) { return {t, t, t, t, t, t, t, untied}; }
  static GgufTypes q4_k_m() {
    const WeightDtype q4 = WeightDtype::Q4_K, q6 = WeightDtype::Q6_K;
    return {q6, q4, q6, q4, q4, q6, q6, true};
  }
};

namespace gguf_writer_detail {
inline uint64_t splitmix(uint64_t& s) {
  uint64_t z = (s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
// The F16 scale (and minimum) fields of each block type, by byte offset in its block.
inline std::vector<int> scale_fields(WeightDtype t) {
  switch (t) {
    case WeightDtype::Q4_1:
    case WeightDtype::Q5_1:
    case WeightDtype::Q4_K:
    case WeightDtype::Q5_K: return {0, 2};
    case WeightDtype::Q2_K: return {80, 82};
    case WeightDtype::Q3_K: return {108};
    case WeightDtype::Q6_K: return {208};
    default: return {0};
  }
}
// n elements of type t (rows of a matrix, whole blocks): random codes under fixed scales.
inline void random_weights(WeightDtype t, int64_t n, uint64_t key, std::string& out) {
  const WeightDtypeInfo& info = weight_dtype_info(t);
  const size_t bytes = static_cast<size_t>(dtype_bytes(t, n));
  out.resize(bytes);
  uint64_t s = key * 0x2545F4914F6CDD1Dull + 1;
  for (size_t i = 0; i < bytes; i += 8) {
    const uint64_t v = splitmix(s);
    std::memcpy(&out[i], &v, std::min<size_t>(8, bytes - i));
  }
  if (!is_block_dtype(t)) {  // values of the format: small normals-ish, finite
    for (int64_t i = 0; i < n; ++i) {
      const float v = (static_cast<float>(splitmix(s) >> 40) / 16777216.0f - 0.5f) * 0.2f;
      if (t == WeightDtype::F32) std::memcpy(&out[static_cast<size_t>(i) * 4], &v, 4);
      else {
        const uint16_t h = float_to_narrow(v, t);
        std::memcpy(&out[static_cast<size_t>(i) * 2], &h, 2);
      }
    }
    return;
  }
  const uint16_t scale = float_to_half(info.block == 32 ? 1.0f / 512 : 1.0f / 4096);
  for (size_t b = 0; b < bytes; b += static_cast<size_t>(info.bytes))
    for (int off : scale_fields(t)) std::memcpy(&out[b + static_cast<size_t>(off)], &scale, 2);
}

struct Out {
  std::string b;
  template <class T>
  void put(T v) { b.append(reinterpret_cast<const char*>(&v), sizeof(T)); }
  void str(const std::string& s) {
    put<uint64_t>(s.size());
    b += s;
  }
  void key(const std::string& k, uint32_t type) {
    str(k);
    put<uint32_t>(type);
  }
};
}  // namespace gguf_writer_detail

// Writes the file; false when it cannot be written.
// full_vocab: the tokenizer padded to V tokens, as llama.cpp requires to open the file (the
// benchmark sets llama.cpp beside headmap on it).
inline bool write_llama_gguf(const std::string& path, const GgufShape& s, const GgufTypes& ty, uint64_t seed, bool widened,
                             bool full_vocab = false) {
  using namespace gguf_writer_detail;
  struct T {
    std::string name;
    std::vector<int64_t> ne;  // innermost first
    WeightDtype type;
    bool norm;
  };
  std::vector<T> ts = {{"token_embd.weight", {s.D, s.V}, ty.embed, false}};
  for (int64_t l = 0; l < s.L; ++l) {
    const std::string p = "blk." + std::to_string(l) + ".";
    ts.push_back({p + "attn_norm.weight", {s.D}, WeightDtype::F32, true});
    ts.push_back({p + "attn_q.weight", {s.D, s.H * s.dh}, ty.qk, false});
    ts.push_back({p + "attn_k.weight", {s.D, s.KV * s.dh}, ty.qk, false});
    ts.push_back({p + "attn_v.weight", {s.D, s.KV * s.dh}, ty.v, false});
    ts.push_back({p + "attn_output.weight", {s.H * s.dh, s.D}, ty.o, false});
    ts.push_back({p + "ffn_norm.weight", {s.D}, WeightDtype::F32, true});
    ts.push_back({p + "ffn_gate.weight", {s.D, s.F}, ty.gate_up, false});
    ts.push_back({p + "ffn_up.weight", {s.D, s.F}, ty.gate_up, false});
    ts.push_back({p + "ffn_down.weight", {s.F, s.D}, ty.down, false});
  }
  ts.push_back({"output_norm.weight", {s.D}, WeightDtype::F32, true});
  if (ty.untied) ts.push_back({"output.weight", {s.D, s.V}, ty.output, false});

  Out h;
  h.b = "GGUF";
  std::vector<std::string> tokens = {"<unk>", "<s>", "</s>"};
  std::vector<int32_t> types = {2, 3, 3};
  char hex[8];
  for (int b = 0; b < 256; ++b) {
    std::snprintf(hex, sizeof hex, "<0x%02X>", b);
    tokens.push_back(hex), types.push_back(6);
  }
  tokens.push_back("\xE2\x96\x81"), types.push_back(1);
  for (char c = 'a'; c <= 'z'; ++c) tokens.push_back(std::string(1, c)), types.push_back(1);
  // One token per row of the embedding, as llama.cpp requires: the rest unused (type 5).
  while (full_vocab && static_cast<int64_t>(tokens.size()) < s.V) tokens.push_back("<unused" + std::to_string(tokens.size()) + ">"), types.push_back(5);
  const uint32_t U32 = 4, I32 = 5, F32 = 6, BOOL = 7, STRING = 8, ARRAY = 9;
  uint64_t n_kv = 0;
  Out kv;
  auto u32 = [&](const std::string& k, uint32_t v) { kv.key(k, U32), kv.put<uint32_t>(v), ++n_kv; };
  auto f32 = [&](const std::string& k, float v) { kv.key(k, F32), kv.put<float>(v), ++n_kv; };
  kv.key("general.architecture", STRING), kv.str("llama"), ++n_kv;
  kv.key("general.name", STRING), kv.str("headmap-test-llama"), ++n_kv;
  u32("llama.context_length", 2048), u32("llama.embedding_length", static_cast<uint32_t>(s.D)), u32("llama.block_count", static_cast<uint32_t>(s.L));
  u32("llama.feed_forward_length", static_cast<uint32_t>(s.F)), u32("llama.attention.head_count", static_cast<uint32_t>(s.H));
  u32("llama.attention.head_count_kv", static_cast<uint32_t>(s.KV)), u32("llama.attention.key_length", static_cast<uint32_t>(s.dh));
  u32("llama.attention.value_length", static_cast<uint32_t>(s.dh)), u32("llama.rope.dimension_count", static_cast<uint32_t>(s.dh));
  f32("llama.attention.layer_norm_rms_epsilon", 1e-5f), f32("llama.rope.freq_base", 500000.0f);
  kv.key("tokenizer.ggml.model", STRING), kv.str("llama"), ++n_kv;
  kv.key("tokenizer.ggml.tokens", ARRAY), kv.put<uint32_t>(STRING), kv.put<uint64_t>(tokens.size()), ++n_kv;
  for (const std::string& t : tokens) kv.str(t);
  kv.key("tokenizer.ggml.scores", ARRAY), kv.put<uint32_t>(F32), kv.put<uint64_t>(tokens.size()), ++n_kv;
  for (size_t i = 0; i < tokens.size(); ++i) kv.put<float>(types[i] == 1 ? -static_cast<float>(i) : 0.0f);
  kv.key("tokenizer.ggml.token_type", ARRAY), kv.put<uint32_t>(I32), kv.put<uint64_t>(tokens.size()), ++n_kv;
  for (int32_t t : types) kv.put<int32_t>(t);
  u32("tokenizer.ggml.bos_token_id", 1), u32("tokenizer.ggml.eos_token_id", 2), u32("tokenizer.ggml.unknown_token_id", 0);
  kv.key("tokenizer.ggml.add_bos_token", BOOL), kv.put<uint8_t>(1), ++n_kv;
  h.put<uint32_t>(3), h.put<uint64_t>(ts.size()), h.put<uint64_t>(n_kv);
  h.b += kv.b;
  const uint64_t align = 32;
  uint64_t at = 0;
  std::vector<uint64_t> sizes;
  for (const T& t : ts) {
    int64_t n = 1;
    for (int64_t d : t.ne) n *= d;
    const WeightDtype stored = widened ? WeightDtype::F32 : t.type;
    const uint64_t bytes = static_cast<uint64_t>(dtype_bytes(stored, n));
    h.str(t.name), h.put<uint32_t>(static_cast<uint32_t>(t.ne.size()));
    for (int64_t d : t.ne) h.put<uint64_t>(static_cast<uint64_t>(d));
    h.put<uint32_t>(weight_dtype_info(stored).ggml_type), h.put<uint64_t>(at);
    sizes.push_back(bytes);
    at += (bytes + align - 1) / align * align;
  }
  h.b.append((align - h.b.size() % align) % align, '\0');
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) return false;
  bool ok = std::fwrite(h.b.data(), 1, h.b.size(), f) == h.b.size();
  std::string data;
  std::vector<float> wide;
  for (size_t i = 0; i < ts.size() && ok; ++i) {
    const T& t = ts[i];
    int64_t n = 1;
    for (int64_t d : t.ne) n *= d;
    if (t.norm) {
      data.resize(static_cast<size_t>(n) * 4);
      uint64_t st = seed * 131 + i;
      for (int64_t j = 0; j < n; ++j) {
        const float v = 1.0f + (static_cast<float>(splitmix(st) >> 40) / 16777216.0f - 0.5f) * 0.2f;
        std::memcpy(&data[static_cast<size_t>(j) * 4], &v, 4);
      }
    } else {
      random_weights(t.type, n, seed * 1000003 + i, data);
      if (widened) {
        wide.resize(static_cast<size_t>(n));
        widen_weights(t.type, reinterpret_cast<const uint8_t*>(data.data()), n, wide.data());
        data.assign(reinterpret_cast<const char*>(wide.data()), wide.size() * 4);
      }
    }
    ok = std::fwrite(data.data(), 1, data.size(), f) == data.size();
    const size_t pad = static_cast<size_t>((sizes[i] + align - 1) / align * align - sizes[i]);
    if (ok && pad) ok = std::fwrite(std::string(pad, '\0').data(), 1, pad, f) == pad;
  }
  return std::fclose(f) == 0 && ok;
}

}  // namespace headmap::test
