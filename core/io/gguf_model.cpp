// gguf_model.cpp: GGUF metadata -> Arch, GGUF tensors -> the family loader (see gguf_model.h).
//
// D = d_model, H = heads, KV = K/V heads, dh = d_head, L = layers, V = vocab, F = MLP width
// Sections: [metadata] [config] [tensors] [load]
#include "core/io/gguf_model.h"

#include <cmath>
#include <cstring>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>

#include "core/io/gguf_quant.h"
#include "core/io/hf_tensors.h"
#include "core/io/safetensors.h"
#include "core/math/half.h"
#include "core/math/weight_dtype.h"
#include "core/memory_budget.h"
#include "core/model/config.h"

namespace headmap {
namespace fs = std::filesystem;

const char* gguf_supported_architectures() { return "llama, qwen2, qwen3, gemma, gemma2, gemma3, phi3, gpt2"; }

// ---- [metadata] ------------------------------------------------------------------------
namespace {

// Typed reads of metadata; messages name the file and the key.
struct Meta {
  const GgufFile& f;
  std::string arch;  // the key prefix
  Status get_int(const std::string& key, int64_t lo, int64_t hi, int* out, bool required) const {
    const GgufValue* v = f.find(key);
    if (!v) return required ? Status(bad_format(f.path() + ": metadata \"" + key + "\" is missing; every " + arch + " GGUF file has it.")) : Status();
    int64_t x = 0;
    if (!v->as_int(lo, hi, &x))
      return bad_format(f.path() + ": metadata \"" + key + "\" must be a whole number in [" + std::to_string(lo) + ", " + std::to_string(hi) + "] (it is a " +
                        gguf_value_type_name(v->type) + (v->type == GgufValueType::Array ? ": one value per layer is not supported" : "") + ").");
    *out = static_cast<int>(x);
    return Status();
  }
  Status get_num(const std::string& key, double* out) const {
    const GgufValue* v = f.find(key);
    if (!v) return Status();
    if (!v->as_number(out) || !std::isfinite(*out)) return bad_format(f.path() + ": metadata \"" + key + "\" must be a finite number.");
    return Status();
  }
  std::string get_str(const std::string& key) const {
    const GgufValue* v = f.find(key);
    return v && v->type == GgufValueType::String ? v->s : std::string();
  }
};
}  // namespace

// ---- [config] --------------------------------------------------------------------------
Result<HfModelConfig> gguf_config(const GgufFile& f) {
  const GgufValue* av = f.find("general.architecture");
  if (!av || av->type != GgufValueType::String)
    return bad_format(f.path() + ": metadata \"general.architecture\" is missing, so the model's family is unknown.");
  const std::string ga = av->s;
  static const std::map<std::string, std::pair<const char*, const char*>> families = {
      {"llama", {"llama", "Llama"}},    {"qwen2", {"qwen2", "Qwen2"}},     {"qwen3", {"qwen3", "Qwen3"}},           {"gemma", {"gemma", "Gemma"}},
      {"gemma2", {"gemma2", "Gemma 2"}}, {"gemma3", {"gemma3_text", "Gemma 3"}}, {"gpt2", {"gpt2", "GPT-2"}},
      {"phi3", {"phi3", "Phi-3"}},
  };
  auto fam = families.find(ga);
  if (fam == families.end())
    return bad_format(f.path() + ": a GGUF file of architecture \"" + ga + "\"; headmap opens GGUF files of these architectures: " +
                      gguf_supported_architectures() + ".");
  const Meta m{f, ga};
  const std::string k = ga + ".";
  HfModelConfig c;
  Arch& a = c.arch;
  a.family = fam->second.first;
  if (ga == "gpt2") c.tensor_names = "gpt_neo";  // its tensors renamed to GPT-Neo's (out, in) Linears, GPT-2's block
  if (ga == "phi3") c.tensor_names = "llama";    // its fused attn_qkv and ffn_up split into Llama's names below
  a.name = fam->second.second;
  const GgufTensorInfo* emb = f.tensor("token_embd.weight");
  if (!emb || emb->ne.size() != 2) return bad_format(f.path() + ": there is no 2-D token_embd.weight, so these are not a language model's tensors.");
  if (emb->ne[1] > (1 << 20)) return bad_format(f.path() + ": token_embd.weight has " + std::to_string(emb->ne[1]) + " rows, more than headmap reads (2^20).");
  c.vocab_size = static_cast<int>(emb->ne[1]);
  for (Status s : {m.get_int(k + "embedding_length", 1, kMaxDModel, &c.d_model, true), m.get_int(k + "block_count", 1, kMaxModelLayers, &c.num_layers, true),
                   m.get_int(k + "attention.head_count", 1, kMaxDModel, &c.num_heads, true),
                   m.get_int(k + "attention.head_count_kv", 1, kMaxDModel, &c.num_kv_heads, false),
                   m.get_int(k + "feed_forward_length", 1, 16 * kMaxDModel, &c.mlp_width, true),
                   m.get_int(k + "context_length", 1, 1 << 24, &c.positions, true), m.get_int(k + "attention.key_length", 1, kMaxDModel, &c.head_dim, false)})
    if (!s) return s.error();
  const int H = c.num_heads;
  if (c.num_kv_heads == 0) c.num_kv_heads = H;
  if (c.head_dim == 0) {
    if (c.d_model % H != 0) return bad_format(f.path() + ": embedding_length " + std::to_string(c.d_model) + " is not divisible by " + std::to_string(H) + " heads.");
    c.head_dim = c.d_model / H;
  }
  int value_length = c.head_dim;
  if (Status s = m.get_int(k + "attention.value_length", 1, kMaxDModel, &value_length, false); !s) return s.error();
  if (value_length != c.head_dim) return bad_format(f.path() + ": key_length and value_length differ; headmap's heads have one d_head.");
  if (H % c.num_kv_heads != 0) return bad_format(f.path() + ": " + std::to_string(c.num_kv_heads) + " K/V heads do not divide " + std::to_string(H) + " query heads.");
  if (static_cast<int64_t>(H) * c.head_dim > 4 * kMaxDModel) return bad_format(f.path() + ": head_count x head dim is larger than headmap reads.");
  const bool gpt2 = ga == "gpt2", gemma = ga.rfind("gemma", 0) == 0;

  double eps = gpt2 ? 1e-5 : 1e-6;
  if (Status s = m.get_num(k + (gpt2 ? "attention.layer_norm_epsilon" : "attention.layer_norm_rms_epsilon"), &eps); !s) return s.error();
  if (!(eps > 0) || eps > 1) return bad_format(f.path() + ": the norm epsilon must be a small positive number.");
  a.norm_eps = static_cast<float>(eps);
  auto has = [&](const std::string& t) { return f.tensor(t) != nullptr; };
  a.tied = !has("output.weight");
  if (gpt2) {
    // GPT-2's block is Arch's default; H may re-slice the weights as a directory's GPT-2 does.
    if (!has("position_embd.weight")) return bad_format(f.path() + ": a gpt2 file without position_embd.weight.");
    c.positions = static_cast<int>(f.tensor("position_embd.weight")->ne.back());
    c.num_kv_heads = H;
    if (c.head_dim * H != c.d_model) return bad_format(f.path() + ": GPT-2's heads must split embedding_length evenly.");
    return c;
  }
  a.norm = NormKind::RMSNorm;
  a.norm_plus_one = false;  // llama.cpp's converter stores Gemma's norms as (1 + w)
  a.placement = ga == "gemma2" || ga == "gemma3" ? NormPlacement::Sandwich : NormPlacement::PreNorm;
  a.positions = PositionKind::Rotary;
  double theta = 10000, scale = 1;
  if (Status s = m.get_num(k + "rope.freq_base", &theta); !s) return s.error();
  a.rope_theta = static_cast<float>(theta);
  if (ga == "gemma3") a.rope_local_theta = 10000.0f;  // llama.cpp: rope_freq_base_train_swa for Gemma 3's local layers
  int rot = c.head_dim;
  if (Status s = m.get_int(k + "rope.dimension_count", 2, c.head_dim, &rot, false); !s) return s.error();
  if (rot % 2 != 0) return bad_format(f.path() + ": rope.dimension_count must be even.");
  a.rotary_fraction = static_cast<float>(rot) / static_cast<float>(c.head_dim);
  const std::string scaling = m.get_str(k + "rope.scaling.type");
  if (Status s = m.get_num(k + "rope.scaling.factor", &scale); !s) return s.error();
  if (scaling == "linear" && scale != 1) {
    a.rope_scaling = RopeScaling::Linear;
    a.rope_factor = static_cast<float>(scale);
  } else if (!scaling.empty() && scaling != "none" && scaling != "linear") {
    return bad_format(f.path() + ": rope scaling \"" + scaling + "\" is not supported (headmap computes default and linear RoPE from GGUF).");
  }
  if (has("rope_factors_long.weight") || has("rope_factors_short.weight"))
    return bad_format(f.path() + ": rope_factors_long/short (Phi-3's LongRoPE for 128k contexts) is not supported; the 4k models open.");
  if (const GgufTensorInfo* rf = f.tensor("rope_freqs.weight")) {
    // Llama 3.1/3.2's scaling as llama.cpp stores it: one factor per frequency, each frequency divided by it.
    if (rf->type != 0 || rf->ne.size() != 1 || rf->ne[0] != rot / 2)
      return bad_format(f.path() + ": rope_freqs.weight must be " + std::to_string(rot / 2) + " F32 factors (one per rotated pair).");
    a.rope_freq_factors.resize(static_cast<size_t>(rot / 2));
    std::memcpy(a.rope_freq_factors.data(), f.data(*rf), static_cast<size_t>(rot / 2) * 4);
    for (float x : a.rope_freq_factors)
      if (!(x > 0) || !std::isfinite(x)) return bad_format(f.path() + ": rope_freqs.weight holds a factor that is not a positive number.");
  }
  if (!(a.rope_theta > 1) || !(a.rope_factor > 0)) return bad_format(f.path() + ": the rope settings are out of range.");

  a.num_heads = H;
  a.num_kv_heads = c.num_kv_heads < H ? c.num_kv_heads : 0;
  a.head_dim = c.head_dim;
  a.attn_bias = has("blk.0.attn_q.bias");
  a.out_bias = has("blk.0.attn_output.bias");
  a.qk_norm = has("blk.0.attn_q_norm.weight");
  a.mlp = gemma ? MlpKind::GeluTanhGated : MlpKind::SiluGated;
  a.mlp_width = c.mlp_width;
  a.mlp_bias = false;
  a.embed_scale = gemma;
  if (ga == "gemma2" || ga == "gemma3") {
    // llama.cpp's scale: 1/sqrt(head dim), but 1/sqrt(D/H) for the 27B models (46 and 62 layers).
    const bool big = (ga == "gemma2" && c.num_layers == 46) || (ga == "gemma3" && c.num_layers == 62);
    a.score_scale = ScoreScale::QueryPreAttnScalar;
    a.query_pre_attn_scalar = static_cast<float>(big ? c.d_model / H : c.head_dim);
    double cap = 0;
    if (ga == "gemma2") {
      cap = 50;
      if (Status s = m.get_num(k + "attn_logit_softcapping", &cap); !s) return s.error();
      a.attn_softcap = static_cast<float>(cap);
      cap = 30;
      if (Status s = m.get_num(k + "final_logit_softcapping", &cap); !s) return s.error();
      a.final_softcap = static_cast<float>(cap);
    }
    int window = 0;
    if (Status s = m.get_int(k + "attention.sliding_window", 1, 1 << 24, &window, false); !s) return s.error();
    if (window > 0) {
      const int pattern = ga == "gemma2" ? 2 : 6;  // llama.cpp's set_swa_pattern: layer l slides unless l % n == n - 1
      a.windows.assign(static_cast<size_t>(c.num_layers), 0);
      for (int l = 0; l < c.num_layers; ++l)
        if (l % pattern < pattern - 1) a.windows[static_cast<size_t>(l)] = window;
    }
  }
  // llama, qwen2 and phi3 files may name a sliding window (Mistral, Phi-3 mini 4k: 2047), but
  // llama.cpp's graphs for them attend over the whole context, and so does headmap here
  // (checked: llama.cpp's logits ignore phi3.attention.sliding_window).
  return c;
}

// ---- [tensors] -------------------------------------------------------------------------
namespace {
// One tensor of the loader's source: rows [row0, row0 + rows) of a GGUF tensor under a
// Hugging Face name, optionally un-permuted from llama.cpp's rope order (heads > 0).
struct Piece {
  std::string name;
  const GgufTensorInfo* t = nullptr;
  int64_t row0 = 0, rows = 0;
  int heads = 0;
  std::string dtype;  // "F32", "F16", "BF16"
  uint64_t begin = 0, bytes = 0;
};

// A GGUF tensor name -> its Hugging Face name (empty: not one of the family's tensors).
std::string hf_name(const std::string& g, const std::string& ga) {
  const bool gpt2 = ga == "gpt2", sandwich = ga == "gemma2" || ga == "gemma3";
  static const std::map<std::string, std::string> top = {{"token_embd.weight", "embed_tokens.weight"}, {"output_norm.weight", "norm.weight"},
                                                         {"output.weight", "lm_head.weight"}};
  static const std::map<std::string, std::string> top_gpt2 = {{"token_embd.weight", "wte.weight"}, {"position_embd.weight", "wpe.weight"},
                                                              {"output_norm.weight", "ln_f.weight"}, {"output_norm.bias", "ln_f.bias"},
                                                              {"output.weight", "lm_head.weight"}};
  const auto& t = gpt2 ? top_gpt2 : top;
  if (auto it = t.find(g); it != t.end()) return it->second;
  if (g.rfind("blk.", 0) != 0) return "";
  const size_t dot = g.find('.', 4);
  if (dot == std::string::npos) return "";
  const std::string layer = g.substr(4, dot - 4), rest = g.substr(dot + 1);
  if (layer.empty() || layer.size() > 6 || layer.find_first_not_of("0123456789") != std::string::npos) return "";
  const size_t d2 = rest.rfind('.');
  if (d2 == std::string::npos) return "";
  const std::string part = rest.substr(0, d2), suffix = rest.substr(d2);  // ".weight" / ".bias"
  std::map<std::string, std::string> parts;
  if (gpt2) {
    parts = {{"attn_norm", "ln_1"}, {"ffn_norm", "ln_2"}, {"attn_output", "attn.attention.out_proj"}, {"ffn_up", "mlp.c_fc"}, {"ffn_down", "mlp.c_proj"}};
    if (part == "attn_qkv") return "h." + layer + ".attn_qkv" + suffix;  // split below
    auto it = parts.find(part);
    return it == parts.end() ? "" : "h." + layer + "." + it->second + suffix;
  }
  if (ga == "phi3" && (part == "attn_qkv" || part == "ffn_up")) return "layers." + layer + "." + part + suffix;  // split below
  parts = {{"attn_norm", "input_layernorm"},       {"attn_q", "self_attn.q_proj"},     {"attn_k", "self_attn.k_proj"},
           {"attn_v", "self_attn.v_proj"},         {"attn_output", "self_attn.o_proj"}, {"attn_q_norm", "self_attn.q_norm"},
           {"attn_k_norm", "self_attn.k_norm"},    {"ffn_gate", "mlp.gate_proj"},      {"ffn_up", "mlp.up_proj"},
           {"ffn_down", "mlp.down_proj"},
           {"ffn_norm", sandwich ? "pre_feedforward_layernorm" : "post_attention_layernorm"}};
  if (sandwich) parts["post_attention_norm"] = "post_attention_layernorm", parts["post_ffw_norm"] = "post_feedforward_layernorm";
  auto it = parts.find(part);
  return it == parts.end() ? "" : "layers." + layer + "." + it->second + suffix;
}

// The file's row that row r of `p` (HF order) is: llama.cpp's permute puts HF row (h, i) of a
// head's first half at 2i, of its second half at 2i + 1.
int64_t piece_row(const Piece& p, int64_t r) {
  if (p.heads == 0) return p.row0 + r;
  const int64_t dh = p.rows / p.heads, h = r / dh, i = r % dh, half = dh / 2;
  return p.row0 + h * dh + (i < half ? 2 * i : 2 * (i - half) + 1);
}

// A 2-D piece kept in the file's blocks: its rows (HF order) in place in the map.
BlockTensor block_piece(const GgufFile& f, const Piece& p) {
  const GgufTensorInfo& t = *p.t;
  BlockTensor b;
  weight_dtype_of_ggml(t.type, &b.dtype);
  b.shape = {p.rows, t.ne[0]};
  b.file = f.path();
  b.base = reinterpret_cast<const uint8_t*>(f.data(t));
  b.file_row = [p](int64_t r) { return piece_row(p, r); };
  b.release_bytes = [&f](const uint8_t* begin, const uint8_t* end) {
    f.release_bytes(reinterpret_cast<const char*>(begin), reinterpret_cast<const char*>(end));
  };
  return b;
}

// Rows of `p` (HF order) widened from the GGUF tensor into out (rows x ne0 of p.dtype); a
// 1-D tensor's "rows" are its elements.
Status convert_piece(const GgufFile& f, const Piece& p, char* out) {
  const GgufTensorInfo& t = *p.t;
  const GgmlTypeInfo* info = ggml_type_info(t.type);
  const bool one_d = t.ne.size() == 1;
  const int64_t unit = one_d ? 1 : t.ne[0];  // elements per row
  const int64_t elem = p.dtype == "F32" ? 4 : 2;
  const bool raw = elem == 2 || t.type == 0;  // kept as stored
  std::vector<float> whole;  // a 1-D tensor, widened once
  if (one_d && !raw) {
    whole.resize(static_cast<size_t>(t.ne[0]));
    if (Status s = gguf_dequantize(t.type, f.data(t), t.ne[0], whole.data()); !s) return Error{s.error().kind, f.path() + ": tensor \"" + t.name + "\": " + s.error().message};
  }
  const int64_t src_row_bytes = unit / info->block * info->bytes;  // 2-D only
  for (int64_t r = 0; r < p.rows; ++r) {
    char* dst = out + r * unit * elem;
    const int64_t at = piece_row(p, r);
    if (one_d) {
      if (raw) std::memcpy(dst, f.data(t) + at * elem, static_cast<size_t>(elem));
      else std::memcpy(dst, &whole[static_cast<size_t>(at)], 4);
      continue;
    }
    const char* row = f.data(t) + at * src_row_bytes;
    if (raw) {
      std::memcpy(dst, row, static_cast<size_t>(unit * elem));
    } else if (Status s = gguf_dequantize(t.type, row, unit, reinterpret_cast<float*>(dst)); !s) {
      return Error{s.error().kind, f.path() + ": tensor \"" + t.name + "\": " + s.error().message};
    }
  }
  f.release(t);
  return Status();
}
}  // namespace

// ---- [load] ----------------------------------------------------------------------------
Result<ModelWeights> load_gguf_model(const std::string& path) {
  Result<GgufFile> file = GgufFile::open(path);
  if (!file) return file.error();
  const GgufFile& f = *file;
  Result<HfModelConfig> cfg = gguf_config(f);
  if (!cfg) return cfg.error();
  const HfModelConfig& c = *cfg;
  const std::string ga = f.find("general.architecture")->s;

  // pass 1: every tensor named, typed and sized before anything is allocated. A file with
  // matrices in a block type (Q8_0 ... Q6_K) or 16-bit (BF16, F16) keeps every matrix in the
  // file's blocks (an F16 or F32 one as blocks of one element): they are copied once into the
  // weights, never widened (16-bit ones into 16-bit panels, as a directory's); its vectors
  // (norms, biases) are widened as a directory's are.
  bool keep_blocks = false;
  for (const GgufTensorInfo& t : f.tensors()) {
    WeightDtype d;
    if (t.ne.size() == 2 && weight_dtype_of_ggml(t.type, &d) && d != WeightDtype::F32) keep_blocks = true;
  }
  std::vector<Piece> pieces;
  std::vector<Piece> block_pieces;
  uint64_t total = 0, block_total = 0;
  std::map<std::string, uint64_t> type_bytes;  // the file's weight types, for the source line
  for (const GgufTensorInfo& t : f.tensors()) {
    if (t.name == "rope_freqs.weight") continue;  // read into the Arch by gguf_config
    const std::string hf = hf_name(t.name, ga);
    if (hf.empty())
      return bad_format(path + ": unexpected tensor \"" + t.name + "\" for a " + c.arch.name + " GGUF file (an adapter, a vision tower, or another architecture?).");
    const GgmlTypeInfo* info = ggml_type_info(t.type);
    if (!gguf_type_supported(t.type))
      return bad_format(path + ": tensor \"" + t.name + "\" is " + info->name + ", which headmap does not read; it reads " + gguf_supported_types() + ".");
    if (t.ne.size() > 2) return bad_format(path + ": tensor \"" + t.name + "\" has " + std::to_string(t.ne.size()) + " dims; a " + c.arch.name + "'s tensors have 1 or 2.");
    type_bytes[info->name] += t.bytes;
    const std::string dtype = t.type == 1 ? "F16" : t.type == 30 ? "BF16" : "F32";
    auto add = [&](const std::string& name, int64_t row0, int64_t rows, int heads) {
      Piece p;
      p.name = name, p.t = &t, p.row0 = row0, p.rows = rows, p.heads = heads, p.dtype = dtype;
      if (keep_blocks && t.ne.size() == 2) {
        block_total += static_cast<uint64_t>(rows) * (t.bytes / static_cast<uint64_t>(t.rows()));
        block_pieces.push_back(p);
        return;
      }
      p.bytes = static_cast<uint64_t>(rows * (t.ne.size() == 1 ? 1 : t.ne[0]) * (dtype == "F32" ? 4 : 2));
      p.begin = total;
      total += p.bytes;
      pieces.push_back(p);
    };
    const int64_t rows = t.ne.size() == 1 ? t.ne[0] : t.rows();  // a 1-D tensor's rows are its elements
    if (ga == "gpt2" && hf.find(".attn_qkv.") != std::string::npos) {  // GPT-2: [q | k | v] rows, each D
      if (rows != 3LL * c.d_model) return bad_format(path + ": tensor \"" + t.name + "\" should have 3 x " + std::to_string(c.d_model) + " rows.");
      const std::string base = hf.substr(0, hf.find(".attn_qkv.")), suffix = hf.substr(hf.rfind('.'));
      const char* names[] = {"q_proj", "k_proj", "v_proj"};
      for (int j = 0; j < 3; ++j) add(base + ".attn.attention." + names[j] + suffix, j * c.d_model, c.d_model, 0);
      continue;
    }
    if (ga == "phi3" && (hf.find(".attn_qkv.") != std::string::npos || hf.find(".ffn_up.") != std::string::npos)) {
      // Phi-3: attn_qkv is [q (H·dh) | k (KV·dh) | v (KV·dh)] by rows; ffn_up is [gate (F) | up (F)]
      const bool qkv = hf.find(".attn_qkv.") != std::string::npos;
      const std::string base = hf.substr(0, hf.rfind(qkv ? ".attn_qkv." : ".ffn_up.")), suffix = hf.substr(hf.rfind('.'));
      const int64_t Dq = static_cast<int64_t>(c.num_heads) * c.head_dim, Dkv = static_cast<int64_t>(c.num_kv_heads) * c.head_dim, F = c.mlp_width;
      if (rows != (qkv ? Dq + 2 * Dkv : 2 * F))
        return bad_format(path + ": tensor \"" + t.name + "\" should have " + std::to_string(qkv ? Dq + 2 * Dkv : 2 * F) + " rows.");
      if (qkv) {
        add(base + ".self_attn.q_proj" + suffix, 0, Dq, 0);
        add(base + ".self_attn.k_proj" + suffix, Dq, Dkv, 0);
        add(base + ".self_attn.v_proj" + suffix, Dq + Dkv, Dkv, 0);
      } else {
        add(base + ".mlp.gate_proj" + suffix, 0, F, 0);
        add(base + ".mlp.up_proj" + suffix, F, F, 0);
      }
      continue;
    }
    int heads = 0;
    if (ga == "llama" && (t.name.find(".attn_q.") != std::string::npos || t.name.find(".attn_k.") != std::string::npos)) {
      heads = t.name.find(".attn_q.") != std::string::npos ? c.num_heads : c.num_kv_heads;
      if (rows != static_cast<int64_t>(heads) * c.head_dim || c.head_dim % 2 != 0)
        return bad_format(path + ": tensor \"" + t.name + "\" should have " + std::to_string(heads) + " x " + std::to_string(c.head_dim) + " rows.");
    }
    add(hf, 0, rows, heads);
  }
  // The buffer the loader reads (a safetensors image), then the weights packed from it.
  if (Status s = check_memory(2 * total + block_total,
                              "The GGUF model " + path + " loaded (" + std::to_string(block_total >> 20) + " MiB of blocks, " + std::to_string(total >> 20) +
                                  " MiB widened, twice)",
                              "use a smaller model, or raise HEADMAP_MEMORY_BUDGET");
      !s)
    return s.error();
  nlohmann::json header = nlohmann::json::object();
  for (const Piece& p : pieces) {
    std::vector<int64_t> shape = {p.rows};  // a 1-D tensor's rows are its elements
    if (p.t->ne.size() == 2) shape.push_back(p.t->ne[0]);
    header[p.name] = {{"dtype", p.dtype}, {"shape", shape}, {"data_offsets", {p.begin, p.begin + p.bytes}}};
  }
  std::string htext = header.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);  // names: known ASCII ones only (hf_name)
  htext.append((8 - htext.size() % 8) % 8, ' ');
  const uint64_t hlen = htext.size();
  std::vector<char> image(8 + hlen + total);
  std::memcpy(image.data(), &hlen, 8);
  std::memcpy(image.data() + 8, htext.data(), hlen);
  for (const Piece& p : pieces) {
    if (Status s = convert_piece(f, p, image.data() + 8 + hlen + p.begin); !s) return s.error();
  }
  Result<SafetensorsFile> st = SafetensorsFile::view(image.data(), image.size(), path);
  if (!st) return st.error();
  TensorSource src;
  src.files.push_back(std::make_unique<SafetensorsFile>(std::move(*st)));
  for (const auto& [name, info] : src.files[0]->tensors()) src.where[name] = src.files[0].get();
  for (const Piece& p : block_pieces) src.blocks[p.name] = block_piece(f, p);

  auto tokenizer = [&](ModelWeights& w) -> Status {
    Result<std::string> json = gguf_tokenizer_json(f);
    if (!json) return json.error();
    Result<HfTokenizer> tok = HfTokenizer::from_json(*json, path + " (tokenizer.ggml)");
    if (!tok) return tok.error();
    if (tok->vocab_size() > c.vocab_size)
      return bad_format(path + ": the tokenizer has " + std::to_string(tok->vocab_size()) + " tokens but token_embd.weight only " + std::to_string(c.vocab_size) + " rows.");
    Result<Bpe> bpe = Bpe::from_tokenizer_json(*json);
    if (bpe && bpe->size() <= c.vocab_size) w.bpe = std::move(bpe).value();
    w.hf_tokenizer = std::make_shared<const HfTokenizer>(std::move(tok).value());
    w.source.tokenizer_files = "GGUF tokenizer.ggml (" + f.find("tokenizer.ggml.model")->s + ")";
    file->drop_metadata_arrays();  // read into the tokenizer: not held through the weights' load
    return Status();
  };
  Result<ModelWeights> w = load_family_tensors(src, path, c, tokenizer);
  if (!w) return w.error();
  std::string types;
  for (const auto& [name, bytes] : type_bytes) types += (types.empty() ? "" : "+") + name;
  w->source.dtype = "GGUF " + types;
  w->source.model_name = fs::path(path).stem().string();
  const GgufValue* gn = f.find("general.name");
  if (gn && gn->type == GgufValueType::String && !gn->s.empty() && gn->s.size() < 200) w->source.model_name = gn->s;
  return w;
}

}  // namespace headmap
