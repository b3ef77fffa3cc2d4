// hf_model.cpp: Hugging Face directories of every supported family -> ModelWeights + Arch
// (see hf_model.h).
//
// D = d_model, H = heads, KV = K/V heads, dh = d_head, L = layers, V = vocab, F = MLP width
// Sections: [config] [tensors] [load] [dispatch]
#include "core/io/hf_model.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "core/io/checkpoint.h"
#include "core/io/file_io.h"
#include "core/io/gguf_model.h"
#include "core/io/json_limits.h"
#include "core/io/model_cache.h"
#include "core/io/model_dir.h"
#include "core/io/hf_encoder.h"
#include "core/io/hf_gpt2.h"
#include "core/io/hf_tensors.h"
#include "core/math/gemm.h"
#include "core/memory_budget.h"
#include "core/model/config.h"

namespace headmap {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {
constexpr int kMaxVocab = 1 << 20;
constexpr int kMaxPositions = 1 << 24;
Error bad_format(const std::string& m) { return Error{ErrorKind::BadFormat, m}; }

const char* family_name(const std::string& t) {
  if (t == "gpt2") return "GPT-2";
  if (t == "llama") return "Llama";
  if (t == "mistral") return "Mistral";
  if (t == "qwen2") return "Qwen2";
  if (t == "qwen3") return "Qwen3";
  if (t == "gemma") return "Gemma";
  if (t == "gemma2") return "Gemma 2";
  if (t == "gemma3_text") return "Gemma 3";
  if (t == "gpt_neox") return "Pythia (GPT-NeoX)";
  if (t == "gpt_neo") return "GPT-Neo";
  return nullptr;
}
bool llama_like(const std::string& t) { return t == "llama" || t == "mistral" || t == "qwen2" || t == "qwen3"; }
bool gemma_like(const std::string& t) { return t == "gemma" || t == "gemma2" || t == "gemma3_text"; }
}  // namespace

const char* supported_families() { return "gpt2, llama, mistral, qwen2, qwen3, gemma, gemma2, gemma3_text, gpt_neox, gpt_neo, bert, roberta, distilbert"; }

// ---- [config] --------------------------------------------------------------------------
static Result<HfModelConfig> hf_config_fields(const json& j, const std::string& origin);

Result<HfModelConfig> parse_hf_config(const std::string& text, const std::string& origin) {
  if (Status s = check_json_limits(text, origin, 16, "open a smaller config.json"); !s) return s.error();
  json j;
  try {
    j = json::parse(text);
  } catch (const json::exception& e) {
    return bad_format(origin + ": not valid JSON (" + e.what() + ").");
  }
  if (!j.is_object()) return bad_format(origin + ": not a JSON object, so not a Hugging Face config.");
  try {
    return hf_config_fields(j, origin);
  } catch (const json::exception& e) {
    return bad_format(origin + ": a field has the wrong type (" + e.what() + ").");
  }
}

static Result<HfModelConfig> hf_config_fields(const json& j, const std::string& origin) {
  const std::string type = j.value("model_type", std::string());
  const char* fname = family_name(type);
  const std::string fam = fname ? fname : type;
  auto bad = [&](const std::string& m) { return bad_format(origin + ": " + m); };
  auto badf = [&](const std::string& m) { return bad_format(origin + ": " + fam + ": " + m); };
  if (j.contains("vision_config") || j.contains("text_config") || type == "gemma3" || type == "llava" || type == "mllama")
    return bad("this is a multimodal checkpoint (model_type \"" + type + "\", with a vision tower); headmap opens text-only models: "
               "download the text model instead (for Gemma 3, google/gemma-3-1b-it or -pt).");
  if (is_encoder_family(type)) return parse_encoder_config(j, origin);
  if (!fname) {
    std::string arch;
    if (j.contains("architectures") && j["architectures"].is_array() && !j["architectures"].empty() && j["architectures"][0].is_string())
      arch = j["architectures"][0].get<std::string>();
    const std::string what = type.empty() ? std::string("a model without a model_type") : "a " + type + " model";
    const std::string why;
    return bad("this is " + what + (arch.empty() ? "" : " (" + arch + ")") + "; headmap opens these families (model_type): " +
               supported_families() + "." + why);
  }
  HfModelConfig c;
  Arch& a = c.arch;
  a.family = type;
  a.name = fam;
  auto has = [&](const char* k) { return j.contains(k) && !j[k].is_null(); };
  auto get_int = [&](const char* key, int lo, int hi, int* out, bool required) {
    return config_int(j, key, lo, hi, out, required, origin + ": " + fam + ": ");
  };
  // A number of the config: absent (or null) gives dflt; anything else must be a finite
  // number in [lo, hi] that a float holds, or the first such field is the config's error,
  // named with its value (issue 35, F13: "NaN" as a string was ignored, 1e39 became inf).
  std::string num_error;
  auto get_num = [&](const json& o, const char* key, double dflt, double lo = -FLT_MAX, double hi = FLT_MAX) -> double {
    if (!o.is_object() || !o.contains(key) || o[key].is_null()) return dflt;
    const json& v = o[key];
    const double x = v.is_number() ? v.get<double>() : std::nan("");
    if (!(x >= lo && x <= hi)) {
      if (num_error.empty()) {
        char range[96];
        std::snprintf(range, sizeof range, "a finite number from %g to %g", lo, hi);
        num_error = "\"" + std::string(key) + "\" is " + v.dump(-1, ' ', false, json::error_handler_t::replace).substr(0, 40) + ", not " + range + ".";
      }
      return dflt;
    }
    return x;
  };
  const bool neo = type == "gpt_neo", neox = type == "gpt_neox";
  if (type == "gpt2") {
    for (Status s : {get_int("n_embd", 1, kMaxDModel, &c.d_model, true), get_int("n_head", 1, kMaxDModel, &c.num_heads, true),
                     get_int("n_layer", 1, kMaxModelLayers, &c.num_layers, true), get_int("vocab_size", 1, kMaxVocab, &c.vocab_size, true)})
      if (!s) return s.error();
    c.head_dim = c.d_model / c.num_heads;
    return c;  // load_hf_gpt2 checks the rest
  }
  for (Status s : {get_int("hidden_size", 1, kMaxDModel, &c.d_model, true),
                   get_int(neo ? "num_heads" : "num_attention_heads", 1, kMaxDModel, &c.num_heads, true),
                   get_int(neo ? "num_layers" : "num_hidden_layers", 1, kMaxModelLayers, &c.num_layers, true),
                   get_int("vocab_size", 1, kMaxVocab, &c.vocab_size, true),
                   get_int("max_position_embeddings", 1, kMaxPositions, &c.positions, neo),
                   get_int("intermediate_size", 1, 16 * kMaxDModel, &c.mlp_width, !neo),
                   get_int("num_key_value_heads", 1, kMaxDModel, &c.num_kv_heads, false),
                   get_int("head_dim", 1, kMaxDModel, &c.head_dim, false)})
    if (!s) return s.error();
  if (c.positions == 0) c.positions = 2048;  // rotary models extrapolate; headmap reads at most kMaxContext anyway
  if (c.mlp_width == 0) c.mlp_width = 4 * c.d_model;
  const int H = c.num_heads;
  if (c.num_kv_heads == 0) c.num_kv_heads = H;
  if (c.head_dim == 0) {
    if (type == "qwen3" && !has("head_dim")) c.head_dim = 128;  // Qwen3Config's default
    else if (gemma_like(type)) c.head_dim = 256;                 // GemmaConfig's default
    else {
      if (c.d_model % H != 0) return badf("hidden_size " + std::to_string(c.d_model) + " is not divisible by " + std::to_string(H) + " heads and no head_dim is given.");
      c.head_dim = c.d_model / H;
    }
  }
  if (H % c.num_kv_heads != 0)
    return badf(std::to_string(c.num_kv_heads) + " K/V heads do not divide " + std::to_string(H) + " query heads into equal groups.");
  if (static_cast<int64_t>(H) * c.head_dim > 4 * kMaxDModel) return badf("num_attention_heads x head_dim is larger than headmap reads.");

  // norms
  if (neox) a.norm_eps = static_cast<float>(get_num(j, "layer_norm_eps", 1e-5));
  else if (neo) a.norm_eps = static_cast<float>(get_num(j, "layer_norm_epsilon", 1e-5));
  else a.norm_eps = static_cast<float>(get_num(j, "rms_norm_eps", 1e-6));
  if (!(a.norm_eps > 0) || a.norm_eps > 1) return badf("the norm epsilon must be a small positive number.");
  a.norm = (neo || neox) ? NormKind::LayerNorm : NormKind::RMSNorm;
  a.norm_plus_one = gemma_like(type);
  a.placement = type == "gemma2" || type == "gemma3_text" ? NormPlacement::Sandwich
                : neox && j.value("use_parallel_residual", true) ? NormPlacement::Parallel
                                                                  : NormPlacement::PreNorm;

  // positions
  if (neo) {
    a.positions = PositionKind::Learned;
  } else {
    a.positions = PositionKind::Rotary;
    // rope settings as top-level keys, or in transformers v5's rope_parameters (per layer type for Gemma 3)
    json rp = has("rope_parameters") ? j["rope_parameters"] : json::object();
    json rp_local;
    if (rp.is_object() && rp.contains("full_attention")) {
      rp_local = rp.value("sliding_attention", json::object());
      rp = rp["full_attention"];
    }
    if (!rp.is_object()) rp = json::object();
    a.rope_theta = static_cast<float>(get_num(rp, "rope_theta", get_num(j, "rope_theta", get_num(j, "rotary_emb_base", 10000.0))));
    a.rope_local_theta = static_cast<float>(rp_local.is_object() ? get_num(rp_local, "rope_theta", 0.0, 1.0) : get_num(j, "rope_local_base_freq", 0.0, 1.0));
    a.rotary_fraction = static_cast<float>(get_num(j, "partial_rotary_factor", get_num(j, "rotary_pct", get_num(rp, "partial_rotary_factor", neox ? 0.25 : 1.0))));
    if (!(a.rope_theta > 1) || !(a.rotary_fraction > 0) || a.rotary_fraction > 1) return badf("the rope settings are out of range.");
    if (static_cast<int>(c.head_dim * static_cast<double>(a.rotary_fraction)) % 2 != 0)
      return badf("the rotary fraction leaves an odd number of rotated dims per head, which rotate-half pairs cannot split.");
    json sc = has("rope_scaling") ? j["rope_scaling"] : rp;
    if (!sc.is_object()) sc = json::object();
    const std::string rt = sc.value("rope_type", sc.value("type", std::string("default")));
    if (rt == "linear") {
      a.rope_scaling = RopeScaling::Linear;
      a.rope_factor = static_cast<float>(get_num(sc, "factor", 1.0, 0.0));
    } else if (rt == "llama3") {
      a.rope_scaling = RopeScaling::Llama3;
      a.rope_factor = static_cast<float>(get_num(sc, "factor", 8.0, 0.0));
      a.rope_low_freq_factor = static_cast<float>(get_num(sc, "low_freq_factor", 1.0));
      a.rope_high_freq_factor = static_cast<float>(get_num(sc, "high_freq_factor", 4.0));
      a.rope_original_context = static_cast<int>(get_num(sc, "original_max_position_embeddings", 8192, 1, 1e9));
      if (!(a.rope_high_freq_factor > a.rope_low_freq_factor) || a.rope_original_context < 1) return badf("rope_scaling llama3 has inconsistent factors.");
    } else if (rt != "default") {
      return badf("rope scaling of type \"" + rt + "\" is not supported (headmap computes default, linear and llama3 RoPE).");
    }
    if (!(a.rope_factor > 0)) return badf("the rope scaling factor must be positive.");
  }

  // attention
  a.num_heads = H;
  a.num_kv_heads = c.num_kv_heads < H ? c.num_kv_heads : 0;
  a.head_dim = c.head_dim;
  if (neo && c.head_dim * H == c.d_model) a.num_heads = 0, a.head_dim = 0;  // learned positions: H may re-slice, as GPT-2's
  const bool attention_bias = j.value("attention_bias", neox);
  a.attn_bias = type == "qwen2" || attention_bias;
  a.out_bias = neo || attention_bias;
  a.qk_norm = type == "qwen3" || type == "gemma3_text";
  if (neo) a.score_scale = ScoreScale::None;
  if (type == "gemma2" || type == "gemma3_text") {
    a.score_scale = ScoreScale::QueryPreAttnScalar;
    a.query_pre_attn_scalar = static_cast<float>(get_num(j, "query_pre_attn_scalar", c.head_dim));
    if (!(a.query_pre_attn_scalar > 0)) return badf("query_pre_attn_scalar must be positive.");
    a.attn_softcap = static_cast<float>(get_num(j, "attn_logit_softcapping", 0.0, 0.0));
    a.final_softcap = static_cast<float>(get_num(j, "final_logit_softcapping", 0.0, 0.0));
  }
  // sliding windows, one per layer
  const int L = c.num_layers;
  a.windows.assign(static_cast<size_t>(L), 0);
  int window = 0;
  if (Status s = get_int(neo ? "window_size" : "sliding_window", 1, kMaxPositions, &window, false); !s) return s.error();
  if (has("layer_types") && j["layer_types"].is_array()) {
    if (static_cast<int>(j["layer_types"].size()) != L) return badf("\"layer_types\" does not list one type per layer.");
    for (int l = 0; l < L; ++l) {
      const std::string t = j["layer_types"][static_cast<size_t>(l)].get<std::string>();
      if (t == "sliding_attention" && window > 0) a.windows[static_cast<size_t>(l)] = window;
      else if (t != "full_attention" && t != "sliding_attention") return badf("layer type \"" + t + "\" is not supported.");
    }
  } else if (neo) {
    // attention_types: [[["global", "local"], 12]] = the pattern repeated. Each entry is
    // checked, and the layers it would make counted, before any is made: a repeat count near
    // 2^31 once spun for minutes (issue 35, F5).
    std::vector<std::string> kinds;
    if (has("attention_types")) {
      const json& at = j["attention_types"];
      if (!at.is_array()) return badf("\"attention_types\" is not a list of [[kinds...], repeats].");
      int64_t layers = 0;
      for (size_t i = 0; i < at.size(); ++i) {
        const json& e = at[i];
        const std::string f = "\"attention_types\"[" + std::to_string(i) + "]";
        if (!e.is_array() || e.size() != 2 || !e[0].is_array() || e[0].empty() || !e[1].is_number_integer())
          return badf(f + " is not [[kinds...], repeats] with at least one kind.");
        const int64_t reps = e[1].is_number_unsigned() ? static_cast<int64_t>(std::min<uint64_t>(e[1].get<uint64_t>(), INT64_MAX)) : e[1].get<int64_t>();
        if (reps < 1 || reps > L) return badf(f + " repeats its pattern " + e[1].dump() + " times; num_layers is " + std::to_string(L) + ".");
        for (const json& k : e[0])
          if (!k.is_string() || (k != "global" && k != "local"))
            return badf(f + " names the kind " + k.dump(-1, ' ', false, json::error_handler_t::replace).substr(0, 40) + ", not \"global\" or \"local\".");
        layers += reps * static_cast<int64_t>(e[0].size());
        if (layers > L) break;
      }
      if (layers != L) return badf("\"attention_types\" makes " + std::string(layers > L ? "more than " : "") + std::to_string(layers) +
                                   " layers; num_layers is " + std::to_string(L) + ".");
      for (const json& e : at)
        for (int64_t r = 0; r < e[1].get<int64_t>(); ++r)
          for (const json& k : e[0]) kinds.push_back(k.get<std::string>());
    }
    for (int l = 0; l < static_cast<int>(kinds.size()); ++l)
      if (kinds[static_cast<size_t>(l)] == "local") {
        if (window < 1) return badf("local layers need \"window_size\".");
        a.windows[static_cast<size_t>(l)] = window;
      }
  } else if (window > 0) {
    for (int l = 0; l < L; ++l) {
      bool sliding = false;
      if (type == "mistral") sliding = true;
      else if (type == "qwen2" || type == "qwen3") sliding = j.value("use_sliding_window", false) && l >= j.value("max_window_layers", 0);
      else if (type == "gemma2") sliding = l % 2 == 0;
      else if (type == "gemma3_text") sliding = (l + 1) % std::max(1, j.value("sliding_window_pattern", 6)) != 0;
      if (sliding) a.windows[static_cast<size_t>(l)] = window;
    }
  }
  if (std::all_of(a.windows.begin(), a.windows.end(), [](int w) { return w == 0; })) a.windows.clear();

  // MLP
  const std::string act = has("hidden_activation") ? j["hidden_activation"].get<std::string>()
                          : has("hidden_act")      ? j["hidden_act"].get<std::string>()
                                                   : j.value("activation_function", std::string(neo ? "gelu_new" : "silu"));
  auto gelu_tanh = [](const std::string& s) { return s == "gelu_new" || s == "gelu_pytorch_tanh" || s == "gelu_fast"; };
  if (llama_like(type)) {
    if (act != "silu") return badf("hidden_act \"" + act + "\": headmap computes the SiLU-gated MLP of this family only.");
    a.mlp = MlpKind::SiluGated;
  } else if (gemma_like(type)) {
    a.mlp = MlpKind::GeluTanhGated;  // Gemma's "gelu" is the tanh form in its reference code
  } else if (act == "gelu" && neox) {
    a.mlp = MlpKind::GeluErf;
  } else if (gelu_tanh(act)) {
    a.mlp = MlpKind::GeluTanh;
  } else {
    return badf("activation \"" + act + "\" is not supported (GELU in its erf or tanh form only).");
  }
  a.mlp_width = c.mlp_width;
  a.mlp_bias = neo || neox || j.value("mlp_bias", false);
  a.embed_scale = gemma_like(type);
  a.tied = j.value("tie_word_embeddings", gemma_like(type) || neo);
  if (!num_error.empty()) return badf(num_error);
  return c;
}

// ---- [tensors] -------------------------------------------------------------------------
namespace {
bool ignorable(const std::string& name) {
  auto ends = [&](const char* s) { const size_t n = std::strlen(s); return name.size() >= n && name.compare(name.size() - n, n, s) == 0; };
  return ends(".attn.bias") || ends(".attn.masked_bias") || ends("attention.bias") || ends("attention.masked_bias") ||
         ends("rotary_emb.inv_freq");
}

// The names of one family's tensors: HF's, relative to the prefix TensorReader adds.
struct Names {
  std::string embed, pos, final_g, final_b, unembed;      // unembed: without the prefix
  std::string layer;                                      // "layers." / "h."
  std::string ln1, ln2, post_attn, post_mlp;              // + ".weight" / ".bias"
  std::string q, k, v, qkv, o, q_norm, k_norm;            // + ".weight" / ".bias"
  std::string gate, up, down;
};

Names names_for(const std::string& type) {
  Names n;
  if (type == "gpt_neox") {
    n.embed = "embed_in.weight", n.final_g = "final_layer_norm.weight", n.final_b = "final_layer_norm.bias", n.unembed = "embed_out.weight";
    n.layer = "layers.", n.ln1 = "input_layernorm", n.ln2 = "post_attention_layernorm";
    n.qkv = "attention.query_key_value", n.o = "attention.dense", n.up = "mlp.dense_h_to_4h", n.down = "mlp.dense_4h_to_h";
  } else if (type == "gpt_neo" || type == "gpt2") {  // gpt2: a GGUF file's tensors under GPT-Neo's names (gguf_model.cpp)
    n.embed = "wte.weight", n.pos = "wpe.weight", n.final_g = "ln_f.weight", n.final_b = "ln_f.bias", n.unembed = "lm_head.weight";
    n.layer = "h.", n.ln1 = "ln_1", n.ln2 = "ln_2";
    n.q = "attn.attention.q_proj", n.k = "attn.attention.k_proj", n.v = "attn.attention.v_proj", n.o = "attn.attention.out_proj";
    n.up = "mlp.c_fc", n.down = "mlp.c_proj";
  } else {
    n.embed = "embed_tokens.weight", n.final_g = "norm.weight", n.unembed = "lm_head.weight";
    n.layer = "layers.", n.ln1 = "input_layernorm";
    const bool sandwich = type == "gemma2" || type == "gemma3_text";
    n.ln2 = sandwich ? "pre_feedforward_layernorm" : "post_attention_layernorm";
    if (sandwich) n.post_attn = "post_attention_layernorm", n.post_mlp = "post_feedforward_layernorm";
    n.q = "self_attn.q_proj", n.k = "self_attn.k_proj", n.v = "self_attn.v_proj", n.o = "self_attn.o_proj";
    n.q_norm = "self_attn.q_norm", n.k_norm = "self_attn.k_norm";
    n.gate = "mlp.gate_proj", n.up = "mlp.up_proj", n.down = "mlp.down_proj";
  }
  return n;
}

// A Linear's weight, stored (out, in), as headmap's (in, out).
Status read_linear(const TensorReader& r, const std::string& name, int64_t out, int64_t in, MatR& m) {
  MatR stored(out, in);  // (out, in)
  if (Status s = r.read(name, stored.data()); !s) return s;
  m = stored.transpose();  // (in, out)
  return Status();
}
// Tensors kept in their file's blocks (a GGUF file's Q8_0 ... Q6_K: TensorReader::blocks):
// packed as one matrix of their rows side by side, each column one row of one of them.
Status read_blocks_packed(const TensorReader& r, const std::vector<std::string>& names, int64_t in, PackedMatrix& p) {
  std::vector<const uint8_t*> cols;
  std::vector<WeightDtype> types;
  for (const std::string& n : names) {
    const BlockTensor* b = r.blocks(n);
    for (int64_t i = 0; i < b->rows(); ++i) cols.push_back(b->row(i));
    types.insert(types.end(), static_cast<size_t>(b->rows()), b->dtype);
  }
  const bool finite = p.assign_blocks(cols, types, in);
  for (const std::string& n : names) r.release(n);
  if (finite) return Status();
  std::vector<float> row(static_cast<size_t>(in));
  for (const std::string& n : names)
    for (int64_t i = 0; i < r.blocks(n)->rows(); ++i) {
      widen_weights(r.blocks(n)->dtype, r.blocks(n)->row(i), in, row.data());
      if (!std::all_of(row.begin(), row.end(), [](float v) { return std::isfinite(v); }))
        return Error{ErrorKind::BadFormat, r.dir() + ": tensor \"" + n + "\" holds a value that is not finite (NaN or infinity)."};
    }
  return Error{ErrorKind::BadFormat, r.dir() + ": a tensor holds a value that is not finite (NaN or infinity)."};
}
// The same, packed (in, out) for the GEMM: a BF16 / F16 tensor straight from the map into
// 16-bit panels (kept in the file's precision, packed_gemm.h), its pages then released;
// an F32 one as before; a GGUF file's blocks kept in them.
Status read_linear_packed(const TensorReader& r, const std::string& name, int64_t out, int64_t in, PackedMatrix& p) {
  if (r.blocks(name)) return read_blocks_packed(r, {name}, in, p);
  if (const uint16_t* raw = r.data16(name)) {
    const bool finite = p.assign_transposed_narrow(raw, in, out, r.dtype16(name));
    r.release(name);
    if (!finite) return Error{ErrorKind::BadFormat, r.dir() + ": tensor \"" + name + "\" holds a value that is not finite (NaN or infinity)."};
    return Status();
  }
  MatR m;
  if (Status s = read_linear(r, name, out, in, m); !s) return s;  // (in, out)
  p = PackedMatrix(m);
  return Status();
}
// A (V, D) table kept 16-bit or in its file's blocks (NarrowRows), checked finite, its pages
// then released.
Status read_rows16(const TensorReader& r, const std::string& name, int64_t rows, int64_t cols, NarrowRows& t) {
  if (const BlockTensor* b = r.blocks(name)) {
    t.rows = rows, t.cols = cols, t.dtype = b->dtype;
    std::vector<float> row(static_cast<size_t>(cols));
    if (!is_block_dtype(b->dtype)) {  // an F16 / BF16 table among a quantized file's blocks
      t.data.resize(static_cast<size_t>(rows * cols));
      for (int64_t i = 0; i < rows; ++i) std::memcpy(t.data.data() + i * cols, b->row(i), static_cast<size_t>(cols) * 2);
    } else {  // copied a chunk of rows at a time, each chunk's pages then dropped (the table is the largest)
      t.blocks.resize(static_cast<size_t>(rows) * t.row_bytes());
      constexpr int64_t kChunk = 1024;
      for (int64_t i0 = 0; i0 < rows; i0 += kChunk) {
        const int64_t i1 = std::min(rows, i0 + kChunk);
        for (int64_t i = i0; i < i1; ++i) std::memcpy(t.blocks.data() + i * t.row_bytes(), b->row(i), t.row_bytes());
        b->release_rows(i0, i1);
      }
    }
    r.release(name);
    for (int64_t i = 0; i < rows; ++i) {
      t.row(i, row.data());
      if (!std::all_of(row.begin(), row.end(), [](float v) { return std::isfinite(v); }))
        return Error{ErrorKind::BadFormat, r.dir() + ": tensor \"" + name + "\" holds a value that is not finite (NaN or infinity)."};
    }
    return Status();
  }
  const uint16_t* raw = r.data16(name);
  t.rows = rows, t.cols = cols, t.dtype = r.dtype16(name);
  t.data.assign(raw, raw + rows * cols);
  r.release(name);
  const uint16_t inf_exp = t.dtype == WeightDtype::BF16 ? 0x7F80u : 0x7C00u;
  for (uint16_t v : t.data)
    if ((v & inf_exp) == inf_exp) return Error{ErrorKind::BadFormat, r.dir() + ": tensor \"" + name + "\" holds a value that is not finite (NaN or infinity)."};
  return Status();
}
Status read_vec(const TensorReader& r, const std::string& name, int64_t n, RowVec& v) {
  v.resize(n);
  return r.read(name, v.data());
}
}  // namespace

// ---- [load] ----------------------------------------------------------------------------
static Result<ModelWeights> load_family(const fs::path& dir, const std::string& dir_in, const HfModelConfig& c) {
  Result<TensorSource> src = open_tensors(dir);
  if (!src) return src.error();
  auto tokenizer = [&](ModelWeights& w) -> Status {
    if (!fs::exists(dir / "tokenizer.json") && !(fs::exists(dir / "vocab.json") && fs::exists(dir / "merges.txt")))
      return Error{ErrorKind::Io, dir_in + " has no tokenizer.json: " + c.arch.name + " models need it (download it with the model: huggingface-cli download MODEL tokenizer.json)."};
    if (Status s = load_hf_tokenizer(dir, c.vocab_size, w); !s) return Error{s.error().kind, c.arch.name + ": " + s.error().message};
    return Status();
  };
  Result<ModelWeights> w = load_family_tensors(*src, dir_in, c, tokenizer);
  if (w) w->source.model_name = model_dir_name(dir);
  return w;
}

Result<ModelWeights> load_family_tensors(const TensorSource& src_in, const std::string& dir_in, const HfModelConfig& c,
                                         const std::function<Status(ModelWeights&)>& tokenizer) {
  const Arch& a = c.arch;
  const std::string& type = a.family;
  const int64_t D = c.d_model, H = c.num_heads, KV = c.num_kv_heads, dh = c.head_dim, L = c.num_layers, V = c.vocab_size, F = c.mlp_width;
  const int64_t Dq = H * dh, Dkv = KV * dh;
  const TensorSource* src = &src_in;
  const Names nm = names_for(type);
  std::string prefix;
  auto holds = [&](const std::string& n) { return src->where.count(n) + src->blocks.count(n) > 0; };
  for (const char* p : {"model.", "gpt_neox.", "transformer.", ""})
    if (holds(std::string(p) + nm.embed)) {
      prefix = p;
      break;
    }
  if (!holds(prefix + nm.embed))
    return bad_format(dir_in + ": there is no " + nm.embed + " (with or without a prefix), so these are not " + a.name + "'s tensors.");
  TensorReader r(*src, prefix, dir_in);
  r.config_text_ = a.name + ": hidden_size " + std::to_string(D) + ", " + std::to_string(H) + " heads (" + std::to_string(KV) + " K/V) of " +
                   std::to_string(dh) + ", " + std::to_string(L) + " layers, intermediate_size " + std::to_string(F) + ", vocab_size " + std::to_string(V);

  // pass 1: every shape against config.json
  std::vector<Status> checks = {r.expect(nm.embed, {V, D}), r.expect(nm.final_g, {D})};
  const bool ln = a.norm == NormKind::LayerNorm;
  if (ln) checks.push_back(r.expect(nm.final_b, {D}));
  if (!nm.pos.empty()) checks.push_back(r.expect(nm.pos, {c.positions, D}));
  for (int64_t l = 0; l < L; ++l) {
    const std::string p = nm.layer + std::to_string(l) + ".";
    auto norm = [&](const std::string& n) {
      checks.push_back(r.expect(p + n + ".weight", {D}));
      if (ln) checks.push_back(r.expect(p + n + ".bias", {D}));
    };
    norm(nm.ln1);
    norm(nm.ln2);
    if (!nm.post_attn.empty()) norm(nm.post_attn), norm(nm.post_mlp);
    if (!nm.qkv.empty()) {
      checks.push_back(r.expect(p + nm.qkv + ".weight", {3 * Dq, D}));
      if (a.attn_bias) checks.push_back(r.expect(p + nm.qkv + ".bias", {3 * Dq}));
    } else {
      checks.push_back(r.expect(p + nm.q + ".weight", {Dq, D}));
      checks.push_back(r.expect(p + nm.k + ".weight", {Dkv, D}));
      checks.push_back(r.expect(p + nm.v + ".weight", {Dkv, D}));
      if (a.attn_bias)
        for (Status s : {r.expect(p + nm.q + ".bias", {Dq}), r.expect(p + nm.k + ".bias", {Dkv}), r.expect(p + nm.v + ".bias", {Dkv})}) checks.push_back(s);
    }
    checks.push_back(r.expect(p + nm.o + ".weight", {D, Dq}));
    if (a.out_bias) checks.push_back(r.expect(p + nm.o + ".bias", {D}));
    if (a.qk_norm) checks.push_back(r.expect(p + nm.q_norm + ".weight", {dh})), checks.push_back(r.expect(p + nm.k_norm + ".weight", {dh}));
    if (a.gated()) checks.push_back(r.expect(p + nm.gate + ".weight", {F, D}));
    checks.push_back(r.expect(p + nm.up + ".weight", {F, D}));
    checks.push_back(r.expect(p + nm.down + ".weight", {D, F}));
    if (a.mlp_bias) {
      checks.push_back(r.expect(p + nm.up + ".bias", {F}));
      checks.push_back(r.expect(p + nm.down + ".bias", {D}));
      if (a.gated()) checks.push_back(r.expect(p + nm.gate + ".bias", {F}));
    }
  }
  for (const Status& s : checks)
    if (!s) return s.error();
  // The unembedding sits beside the prefix ("lm_head.weight", "embed_out.weight").
  const SafetensorsFile* lm_file = nullptr;
  const BlockTensor* lm_blocks = src->blocks.count(nm.unembed) ? &src->blocks.at(nm.unembed) : nullptr;
  if (lm_blocks && lm_blocks->shape != std::vector<int64_t>{V, D})
    return bad_format(lm_blocks->file + ": \"" + nm.unembed + "\" has shape " + shape_text(lm_blocks->shape) + " but the unembedding of " + a.name +
                      " needs " + shape_text({V, D}) + ".");
  if (lm_blocks) {
    // kept in a GGUF file's blocks: its shape checked above
  } else if (auto it = src->where.find(nm.unembed); it != src->where.end()) {
    if (it->second->tensors().at(nm.unembed).shape != std::vector<int64_t>{V, D})
      return bad_format(it->second->path() + ": \"" + nm.unembed + "\" has shape " + shape_text(it->second->tensors().at(nm.unembed).shape) +
                        " but the unembedding of " + a.name + " needs " + shape_text({V, D}) + ".");
    lm_file = it->second;
  } else if (!a.tied) {
    return bad_format(dir_in + ": config.json says the unembedding is not tied (tie_word_embeddings false) but there is no \"" + nm.unembed + "\".");
  }
  for (const auto& [name, b] : src->blocks)
    if (!r.used().count(name) && name != nm.unembed)
      return bad_format(b.file + ": unexpected tensor \"" + name + "\" for a " + a.name + " with " + std::to_string(L) + " layers.");
  for (const auto& [name, file] : src->where)
    if (!r.used().count(name) && !ignorable(name) && name != nm.unembed)
      return bad_format(file->path() + ": unexpected tensor \"" + name + "\" for a " + a.name + " with " + std::to_string(L) +
                        " layers (a vision tower, an adapter, or another family?).");

  // pass 2: the budget, the tokenizer, the tensors.
  // The model's real sizes from its Arch, at the bytes a weight takes once loaded from its stored dtype.
  const std::string stored = r.blocks(nm.embed) ? dtype_name(r.blocks(nm.embed)->dtype) : src->where.at(prefix + nm.embed)->tensors().at(prefix + nm.embed).dtype;
  WeightsShape shape = family_weights_shape(a, static_cast<uint64_t>(D), static_cast<uint64_t>(L), static_cast<uint64_t>(V),
                                            nm.pos.empty() ? 0 : static_cast<uint64_t>(c.positions), lm_file != nullptr || lm_blocks != nullptr, stored);
  shape.H = static_cast<uint64_t>(H), shape.KV = static_cast<uint64_t>(KV), shape.d_head = static_cast<uint64_t>(dh), shape.F = static_cast<uint64_t>(F);
  shape.plain_qkv = false;  // W_Q, W_K, W_V live only in the fused W_QKV once loaded (below)
  if (Status s = check_memory(weights_bytes(shape), "The model in " + dir_in + " (" + weights_shape_text(a.name, shape) + ", stored " + stored + ")",
                              "use a smaller model, or raise HEADMAP_MEMORY_BUDGET");
      !s)
    return s.error();
  ModelWeights w;
  if (Status s = tokenizer(w); !s) return s.error();
  w.arch = a;
  w.d_model = static_cast<int>(D);
  w.context = static_cast<int>(std::min<int64_t>(c.positions, 1 << 20));
  w.ln_eps = a.norm_eps;
  const bool embed16 = r.data16(nm.embed) != nullptr || r.blocks(nm.embed) != nullptr;  // read beside the layers, below
  if (!embed16) {
    w.tok_emb.resize(V, D);
    if (Status s = r.read(nm.embed, w.tok_emb.data()); !s) return s.error();
  }
  if (!nm.pos.empty()) {
    w.pos_emb.resize(c.positions, D);
    if (Status s = r.read(nm.pos, w.pos_emb.data()); !s) return s.error();
  }
  if (Status s = read_vec(r, nm.final_g, D, w.lnf_g); !s) return s.error();
  w.lnf_b = RowVec::Zero(D);
  if (ln)
    if (Status s = read_vec(r, nm.final_b, D, w.lnf_b); !s) return s.error();
  const float plus = a.norm_plus_one ? 1.0f : 0.0f;  // Gemma's (1 + w), folded once here
  w.lnf_g.array() += plus;

  w.layers.resize(static_cast<size_t>(L));
  // Item 0 is a 16-bit embedding (the largest table: a copy off the map), so one thread copies
  // it while the other packs layers; the layers are items 1 .. L.
  std::vector<Status> results(static_cast<size_t>(L + 1));
#pragma omp parallel for schedule(dynamic, 1) num_threads(compute_threads())
  for (int64_t i = 0; i <= L; ++i) {
    if (i == 0) {
      if (embed16) results[0] = read_rows16(r, nm.embed, V, D, w.tok_emb16);
      continue;
    }
    const int64_t l = i - 1;
    LayerWeights& lw = w.layers[static_cast<size_t>(l)];
    const std::string p = nm.layer + std::to_string(l) + ".";
    auto run = [&]() -> Status {
      auto norm = [&](const std::string& n, RowVec& g, RowVec* b) -> Status {
        if (Status s = read_vec(r, p + n + ".weight", D, g); !s) return s;
        g.array() += plus;
        if (b) {
          *b = RowVec::Zero(D);
          if (ln) return read_vec(r, p + n + ".bias", D, *b);
        }
        return Status();
      };
      if (Status s = norm(nm.ln1, lw.ln1_g, &lw.ln1_b); !s) return s;
      if (Status s = norm(nm.ln2, lw.ln2_g, &lw.ln2_b); !s) return s;
      if (!nm.post_attn.empty()) {
        if (Status s = norm(nm.post_attn, lw.post_attn_g, nullptr); !s) return s;
        if (Status s = norm(nm.post_mlp, lw.post_mlp_g, nullptr); !s) return s;
      }
      lw.b_q = RowVec::Zero(Dq), lw.b_k = RowVec::Zero(Dkv), lw.b_v = RowVec::Zero(Dkv), lw.b_o = RowVec::Zero(D);
      if (!nm.qkv.empty()) {
        // GPT-NeoX: rows laid out per head, [q (dh) | k (dh) | v (dh)] for head 0, then head 1, ...
        MatR fused(3 * Dq, D);  // (3·H·dh, D)
        if (Status s = r.read(p + nm.qkv + ".weight", fused.data()); !s) return s;
        RowVec fb = RowVec::Zero(3 * Dq);
        if (a.attn_bias)
          if (Status s = r.read(p + nm.qkv + ".bias", fb.data()); !s) return s;
        lw.w_q.resize(D, Dq), lw.w_k.resize(D, Dq), lw.w_v.resize(D, Dq);
        for (int64_t h = 0; h < H; ++h)
          for (int64_t j = 0; j < dh; ++j) {
            const int64_t row = h * 3 * dh + j, col = h * dh + j;
            lw.w_q.col(col) = fused.row(row).transpose();
            lw.w_k.col(col) = fused.row(row + dh).transpose();
            lw.w_v.col(col) = fused.row(row + 2 * dh).transpose();
            lw.b_q(col) = fb(row), lw.b_k(col) = fb(row + dh), lw.b_v(col) = fb(row + 2 * dh);
          }
      } else if (r.blocks(p + nm.q + ".weight") && r.blocks(p + nm.k + ".weight") && r.blocks(p + nm.v + ".weight")) {
        // A GGUF file's blocks: W_Q | W_K | W_V kept in them side by side (types may differ).
        if (Status s = read_blocks_packed(r, {p + nm.q + ".weight", p + nm.k + ".weight", p + nm.v + ".weight"}, D, lw.w_qkv); !s) return s;
        if (a.attn_bias) {
          if (Status s = r.read(p + nm.q + ".bias", lw.b_q.data()); !s) return s;
          if (Status s = r.read(p + nm.k + ".bias", lw.b_k.data()); !s) return s;
          if (Status s = r.read(p + nm.v + ".bias", lw.b_v.data()); !s) return s;
        }
      } else if (r.data16(p + nm.q + ".weight") && r.data16(p + nm.k + ".weight") && r.data16(p + nm.v + ".weight") &&
                 r.dtype16(p + nm.q + ".weight") == r.dtype16(p + nm.k + ".weight") &&
                 r.dtype16(p + nm.q + ".weight") == r.dtype16(p + nm.v + ".weight")) {
        // BF16 / F16: W_Q | W_K | W_V packed as one (D, Dq + 2·Dkv) matrix straight from the
        // map, in the file's precision; no F32 copy is ever made (W_QKV is their only home).
        std::vector<const uint16_t*> cols;  // (Dq + 2·Dkv): the file row each column reads
        for (const auto& [n, width] : {std::pair<const std::string&, int64_t>{nm.q, Dq}, {nm.k, Dkv}, {nm.v, Dkv}}) {
          const uint16_t* raw = r.data16(p + n + ".weight");  // (width, D)
          for (int64_t c = 0; c < width; ++c) cols.push_back(raw + c * D);
        }
        const WeightDtype dt = r.dtype16(p + nm.q + ".weight");
        const bool finite = lw.w_qkv.assign_transposed_narrow(cols, D, dt);
        if (!finite) {
          const uint16_t inf_exp = dt == WeightDtype::BF16 ? 0x7F80u : 0x7C00u;
          for (const auto& [n, width] : {std::pair<const std::string&, int64_t>{nm.q, Dq}, {nm.k, Dkv}, {nm.v, Dkv}}) {
            const uint16_t* raw = r.data16(p + n + ".weight");
            if (std::any_of(raw, raw + width * D, [&](uint16_t v) { return (v & inf_exp) == inf_exp; }))
              return Error{ErrorKind::BadFormat, r.dir() + ": tensor \"" + p + n + ".weight\" holds a value that is not finite (NaN or infinity)."};
          }
        }
        for (const std::string* n : {&nm.q, &nm.k, &nm.v}) r.release(p + *n + ".weight");
        if (a.attn_bias) {
          if (Status s = r.read(p + nm.q + ".bias", lw.b_q.data()); !s) return s;
          if (Status s = r.read(p + nm.k + ".bias", lw.b_k.data()); !s) return s;
          if (Status s = r.read(p + nm.v + ".bias", lw.b_v.data()); !s) return s;
        }
      } else {
        if (Status s = read_linear(r, p + nm.q + ".weight", Dq, D, lw.w_q); !s) return s;
        if (Status s = read_linear(r, p + nm.k + ".weight", Dkv, D, lw.w_k); !s) return s;
        if (Status s = read_linear(r, p + nm.v + ".weight", Dkv, D, lw.w_v); !s) return s;
        if (a.attn_bias) {
          if (Status s = r.read(p + nm.q + ".bias", lw.b_q.data()); !s) return s;
          if (Status s = r.read(p + nm.k + ".bias", lw.b_k.data()); !s) return s;
          if (Status s = r.read(p + nm.v + ".bias", lw.b_v.data()); !s) return s;
        }
      }
      if (Status s = read_linear_packed(r, p + nm.o + ".weight", D, Dq, lw.w_o); !s) return s;  // (Dq, D)
      if (a.out_bias)
        if (Status s = r.read(p + nm.o + ".bias", lw.b_o.data()); !s) return s;
      if (a.qk_norm) {
        if (Status s = read_vec(r, p + nm.q_norm + ".weight", dh, lw.q_norm); !s) return s;
        if (Status s = read_vec(r, p + nm.k_norm + ".weight", dh, lw.k_norm); !s) return s;
        lw.q_norm.array() += plus;
        lw.k_norm.array() += plus;
      }
      if (a.gated())
        if (Status s = read_linear_packed(r, p + nm.gate + ".weight", F, D, lw.w_gate); !s) return s;  // (D, F)
      if (Status s = read_linear_packed(r, p + nm.up + ".weight", F, D, lw.w_fc); !s) return s;  // (D, F)
      if (Status s = read_linear_packed(r, p + nm.down + ".weight", D, F, lw.w_proj); !s) return s;  // (F, D)
      lw.b_fc = RowVec::Zero(F), lw.b_proj = RowVec::Zero(D);
      if (a.mlp_bias) {
        if (Status s = r.read(p + nm.up + ".bias", lw.b_fc.data()); !s) return s;
        if (Status s = r.read(p + nm.down + ".bias", lw.b_proj.data()); !s) return s;
        if (a.gated()) return Error{ErrorKind::BadFormat, dir_in + ": " + a.name + " with a gate bias (mlp_bias) is not supported."};
      }
      lw.fuse();  // W_QKV's bias; its weights too, unless packed from the file above
      if (lw.plain_qkv()) lw.release_plain_qkv();  // one home: W_QKV (readers unpack from it)
      return Status();
    };
    results[static_cast<size_t>(i)] = run();
  }
  for (const Status& st : results)
    if (!st) return st.error();
  TensorReader lr(*src, "", dir_in);
  if ((lm_file || lm_blocks) && !w.tok_emb16.empty() && (lr.data16(nm.unembed) || lm_blocks)) {
    NarrowRows lm;
    if (Status s = read_rows16(lr, nm.unembed, V, D, lm); !s) return s.error();
    if (!(lm == w.tok_emb16)) w.lm_head16 = std::move(lm);
  } else if (lm_file || lm_blocks) {
    MatR lm(V, D);
    if (Status s = lr.read(nm.unembed, lm.data()); !s) return s.error();
    if (!w.tok_emb16.empty()) {  // a 16-bit embedding beside an F32 lm_head: both widened
      w.tok_emb.resize(V, D);
      for (int64_t i = 0; i < V; ++i) w.tok_emb16.row(i, w.tok_emb.row(i).data());
      w.tok_emb16 = NarrowRows();
    }
    if (lm != w.tok_emb) w.lm_head = std::move(lm);
  }
  w.arch.tied = !w.untied();

  WeightsSource& s = w.source;
  s.kind = WeightsSource::Kind::Pretrained;
  s.trained_heads = static_cast<int>(H);
  s.model_type = type;
  s.path = dir_in;
  s.parameters = parameter_count(w);
  s.dtype = stored;
  return w;
}

// ---- [dispatch] ------------------------------------------------------------------------
Result<ModelWeights> load_hf_model(const std::string& dir_in) {
  const fs::path dir(dir_in);
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    return Error{ErrorKind::Io, dir_in + " is not a directory; --model expects a Hugging Face model directory (config.json, model.safetensors, tokenizer.json)."};
  const fs::path config_path = dir / "config.json";
  if (!fs::exists(config_path)) return Error{ErrorKind::Io, dir_in + " has no config.json, so it is not a Hugging Face model directory."};
  if (Status s = check_model_file(dir, config_path); !s) return s.error();
  Result<std::string> text = read_file(config_path.string(), size_t(1) << 20);
  if (!text) return text.error();
  Result<HfModelConfig> c = parse_hf_config(*text, config_path.string());
  if (!c) return c.error();
  if (c->arch.family == "gpt2") return load_hf_gpt2(dir_in);
  if (c->arch.encoder()) return load_hf_encoder(dir, dir_in, *c);
  return load_family(dir, dir_in, *c);
}

Result<ModelWeights> open_model_path(const std::string& path) {
  const std::string what = " headmap opens a Hugging Face model directory (config.json, model.safetensors, tokenizer.json) of a supported family (" +
                           std::string(supported_families()) + "), a GGUF file (" + gguf_supported_architectures() +
                           ") or a checkpoint file written by headmap-cli train (.safetensors).";
  if (path.empty()) return Error{ErrorKind::InvalidArgument, "No model was named:" + what};
  const fs::path p(path);
  std::error_code ec;
  if (!fs::exists(p, ec)) {
    // A name rather than a path: ORG/NAME in the Hugging Face cache (else LM Studio's),
    // PUBLISHER/REPO/FILE.gguf in LM Studio's, NAME[:TAG] in Ollama's (model_cache.h).
    if (!p.is_absolute() && path[0] != '.') {
      Result<std::string> cached = resolve_cached_model(path);
      if (cached) return open_model_path(*cached);
      if (cached.error().kind != ErrorKind::InvalidArgument)
        return Error{cached.error().kind, path + " does not exist as a file or directory, and as a model name: " + cached.error().message + what};
    }
    return Error{ErrorKind::Io, path + " does not exist: it is not a directory or a file." + what};
  }
  if (fs::is_directory(p, ec)) {
    if (fs::exists(p / "config.json", ec)) return load_hf_model(path);
    // A directory of GGUF files (a Hugging Face "-GGUF" repo's snapshot): its one .gguf file.
    std::vector<std::string> ggufs;
    for (const auto& e : fs::directory_iterator(p, ec))
      if (e.path().extension() == ".gguf") ggufs.push_back(e.path().filename().string());
    std::sort(ggufs.begin(), ggufs.end());
    if (ggufs.size() == 1) return load_gguf_model((p / ggufs[0]).string());
    if (ggufs.size() > 1) {
      std::string list;
      for (size_t i = 0; i < ggufs.size() && i < 8; ++i) list += (i ? ", " : "") + ggufs[i];
      return Error{ErrorKind::InvalidArgument, path + " holds " + std::to_string(ggufs.size()) + " GGUF files (" + list + (ggufs.size() > 8 ? ", ..." : "") +
                                                   "); name the one to open: " + (p / ggufs[0]).string() + "."};
    }
    // What it holds, so the person sees why: a few names, safetensors first.
    std::vector<std::string> seen;
    for (const auto& e : fs::directory_iterator(p, ec)) seen.push_back(e.path().filename().string());
    std::sort(seen.begin(), seen.end(), [](const std::string& a, const std::string& b) {
      const bool sa = a.size() > 12 && a.substr(a.size() - 12) == ".safetensors", sb = b.size() > 12 && b.substr(b.size() - 12) == ".safetensors";
      return sa != sb ? sa : a < b;
    });
    std::string list;
    for (size_t i = 0; i < seen.size() && i < 5; ++i) list += (i ? ", " : "") + seen[i];
    if (seen.size() > 5) list += ", ... (" + std::to_string(seen.size()) + " entries)";
    return Error{ErrorKind::Io, path + " has no config.json (" + (seen.empty() ? std::string("the directory is empty") : "the directory holds " + list) +
                                    "), so it is not a Hugging Face model directory." + what +
                                    (seen.empty() ? "" : " A checkpoint file is opened by its own name.")};
  }
  // A file (read_file refuses a FIFO or a device by name): one of headmap's checkpoints (a shipped one or the user's), else a file of a
  // Hugging Face directory (its config.json, tokenizer.json or safetensors), which opens the directory.
  // A GGUF file (llama.cpp's format), known by its magic.
  if (is_gguf_file(path)) return load_gguf_model(path);
  const fs::path dir = p.parent_path().empty() ? fs::path(".") : p.parent_path();
  if (fs::exists(dir / "config.json", ec)) {
    Result<SafetensorsFile> f = SafetensorsFile::open(path);  // the header only (mapped)
    const bool ours = f && (f->metadata().count("format") ? f->metadata().at("format") == "headmap-checkpoint" : f->metadata().count("d_model") > 0);
    if (!ours) return load_hf_model(dir.string());
  }
  return load_checkpoint(path);
}
}  // namespace headmap
