// hf_config.cpp: config.json -> HfModelConfig + Arch, for every family, by its table entry
// (hf_families.h). parse_hf_config is declared in hf_model.h.
//
// D = d_model, H = heads, KV = K/V heads, dh = d_head, L = layers, F = MLP width
// Sections: [numbers] [sizes] [norms] [positions] [encoders] [attention] [windows] [mlp]
#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "core/io/hf_families.h"
#include "core/io/hf_model.h"
#include "core/io/hf_tensors.h"
#include "core/io/json_limits.h"
#include "core/model/config.h"

namespace headmap {
using nlohmann::json;

namespace {
bool gelu_tanh_name(const std::string& s) { return s == "gelu_new" || s == "gelu_pytorch_tanh" || s == "gelu_fast"; }

Result<HfModelConfig> config_fields(const json& j, const std::string& origin) {
  const std::string type = j.value("model_type", std::string());
  auto bad = [&](const std::string& m) { return bad_format(origin + ": " + m); };
  if (j.contains("vision_config") || j.contains("text_config") || type == "gemma3" || type == "llava" || type == "mllama")
    return bad("this is a multimodal checkpoint (model_type \"" + type + "\", with a vision tower); headmap opens text-only models: "
               "download the text model instead (for Gemma 3, google/gemma-3-1b-it or -pt).");
  const HfFamily* fam = hf_family(type);
  if (!fam) {
    std::string arch;
    if (j.contains("architectures") && j["architectures"].is_array() && !j["architectures"].empty() && j["architectures"][0].is_string())
      arch = j["architectures"][0].get<std::string>();
    const std::string what = type.empty() ? std::string("a model without a model_type") : "a " + type + " model";
    return bad("this is " + what + (arch.empty() ? "" : " (" + arch + ")") + "; headmap opens these families (model_type): " + supported_families() + ".");
  }
  const HfFamily& f = *fam;
  const HfConfigKeys& k = f.keys;
  HfModelConfig c;
  Arch& a = c.arch;
  a.family = type;
  a.name = f.name;
  auto badf = [&](const std::string& m) { return bad_format(origin + ": " + a.name + ": " + m); };
  auto has = [&](const char* key) { return *key && j.contains(key) && !j[key].is_null(); };
  auto get_int = [&](const char* key, int lo, int hi, int* out, bool required) {
    return *key ? config_int(j, key, lo, hi, out, required, origin + ": " + a.name + ": ") : Status();
  };
  auto flag = [&](const char* key, bool dflt) { return has(key) && j[key].is_boolean() ? j[key].get<bool>() : dflt; };
// ---- [numbers] --------------------------------------------------------------------------
  // A number: absent (or null) gives dflt; anything else must be a finite number in
  // [lo, hi] that a float holds, or the first such field is the config's error, named with
  // its value (issue 35, F13: "NaN" as a string was ignored, 1e39 became inf).
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
  for (const auto& [key, value] : f.refused)
    if (has(key) && j[key].is_boolean() && j[key].get<bool>() == value)
      return badf("\"" + std::string(key) + "\" is " + (value ? "true" : "false") + ", which headmap does not compute for this family.");

// ---- [sizes] --------------------------------------------------------------------------
  for (Status s : {get_int(k.d_model, 1, kMaxDModel, &c.d_model, true), get_int(k.heads, 1, kMaxDModel, &c.num_heads, true),
                   get_int(k.layers, 1, kMaxModelLayers, &c.num_layers, true), get_int("vocab_size", 1, kMaxVocab, &c.vocab_size, true),
                   get_int(k.positions, 1, kMaxPositions, &c.positions, f.positions_required && !has(k.positions_alt)),
                   get_int(k.mlp_width, 1, 16 * kMaxDModel, &c.mlp_width, f.mlp_width_required),
                   get_int("num_key_value_heads", 1, kMaxDModel, &c.num_kv_heads, false), get_int("head_dim", 1, kMaxDModel, &c.head_dim, false)})
    if (!s) return s.error();
  if (c.positions == 0)
    if (Status s = get_int(k.positions_alt, 1, kMaxPositions, &c.positions, f.positions_required); !s) return s.error();
  if (c.positions == 0) c.positions = 2048;  // rotary models extrapolate; headmap reads at most kMaxContext anyway
  if (c.mlp_width == 0) c.mlp_width = 4 * c.d_model;
  const int H = c.num_heads, L = c.num_layers;
  if (c.num_kv_heads == 0) c.num_kv_heads = H;
  if (c.head_dim == 0) c.head_dim = f.head_dim;
  if (c.head_dim == 0) {
    if (c.d_model % H != 0) return badf(std::string(k.d_model) + " " + std::to_string(c.d_model) + " is not divisible by " + std::to_string(H) + " heads and no head_dim is given.");
    c.head_dim = c.d_model / H;
  }
  if (H % c.num_kv_heads != 0)
    return badf(std::to_string(c.num_kv_heads) + " K/V heads do not divide " + std::to_string(H) + " query heads into equal groups.");
  if (static_cast<int64_t>(H) * c.head_dim > 4 * kMaxDModel) return badf("num_attention_heads x head_dim is larger than headmap reads.");

// ---- [norms] --------------------------------------------------------------------------
  a.norm = f.norm;
  a.norm_eps = static_cast<float>(get_num(j, k.eps, f.eps));
  if (!(a.norm_eps > 0) || a.norm_eps > 1) return badf("the norm epsilon must be a small positive number.");
  a.norm_plus_one = f.norm_plus_one;
  a.placement = f.placement;
  if (*f.parallel_key && !flag(f.parallel_key, true)) a.placement = NormPlacement::PreNorm;

// ---- [positions] --------------------------------------------------------------------------
  a.positions = f.positions;
  if (a.rotary()) {
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
    a.rotary_fraction =
        static_cast<float>(get_num(j, "partial_rotary_factor", get_num(j, "rotary_pct", get_num(rp, "partial_rotary_factor", f.rotary_fraction))));
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
    } else if (rt == "longrope") {
      // Phi-3: the frequencies divided by short_factor up to original_max_position_embeddings
      // tokens, by long_factor past them; cos and sin times the attention factor, by default
      // sqrt(1 + ln(factor) / ln(original)), factor = max_position_embeddings / original.
      a.rope_scaling = RopeScaling::LongRope;
      a.rope_original_context = static_cast<int>(get_num(sc, "original_max_position_embeddings", get_num(j, "original_max_position_embeddings", 0, 1, 1e9), 1, 1e9));
      if (a.rope_original_context < 1) return badf("rope_scaling longrope needs original_max_position_embeddings.");
      const int half = a.rotary_dims(c.head_dim) / 2;
      for (const auto& [key, out] : {std::pair<const char*, std::vector<float>*>{"short_factor", &a.rope_short_factors}, {"long_factor", &a.rope_long_factors}}) {
        if (!sc.contains(key) || !sc[key].is_array() || static_cast<int>(sc[key].size()) != half)
          return badf("rope_scaling longrope needs \"" + std::string(key) + "\": a list of " + std::to_string(half) + " numbers (half the rotated dims).");
        for (const json& x : sc[key]) {
          if (!x.is_number() || !(x.get<double>() > 0) || !(x.get<double>() < 1e30)) return badf("rope_scaling longrope's \"" + std::string(key) + "\" holds a value that is not a positive number.");
          out->push_back(static_cast<float>(x.get<double>()));
        }
      }
      const double factor = get_num(sc, "factor", static_cast<double>(c.positions) / a.rope_original_context, 0.0);
      const double dflt = factor <= 1.0 ? 1.0 : std::sqrt(1 + std::log(factor) / std::log(static_cast<double>(a.rope_original_context)));
      a.rope_attention_factor = static_cast<float>(get_num(sc, "attention_factor", dflt, 0.0, 1e6));
    } else if (rt != "default") {
      return badf("rope scaling of type \"" + rt + "\" is not supported (headmap computes default, linear, llama3 and longrope RoPE).");
    }
    if (!(a.rope_factor > 0)) return badf("the rope scaling factor must be positive.");
    if (f.no_rope_layers) {
      // SmolLM3: no_rope_layers[l] = 1 rotates layer l; absent, every no_rope_layer_interval-th layer has no rotary.
      a.no_rope_layers.assign(static_cast<size_t>(L), 0);
      if (has("no_rope_layers")) {
        const json& nr = j["no_rope_layers"];
        if (!nr.is_array() || static_cast<int>(nr.size()) < L) return badf("\"no_rope_layers\" does not list one 0 or 1 per layer.");
        for (int l = 0; l < L; ++l) {
          if (!nr[static_cast<size_t>(l)].is_number_integer()) return badf("\"no_rope_layers\" does not list one 0 or 1 per layer.");
          a.no_rope_layers[static_cast<size_t>(l)] = nr[static_cast<size_t>(l)].get<long long>() == 0;
        }
      } else {
        int every = 4;
        if (Status s = get_int("no_rope_layer_interval", 1, kMaxModelLayers, &every, false); !s) return s.error();
        for (int l = 0; l < L; ++l) a.no_rope_layers[static_cast<size_t>(l)] = (l + 1) % every == 0;
      }
      if (std::none_of(a.no_rope_layers.begin(), a.no_rope_layers.end(), [](uint8_t x) { return x != 0; })) a.no_rope_layers.clear();
    }
  }

// ---- [encoders] --------------------------------------------------------------------------
  if (f.encoder) {
    const std::string pos = j.value("position_embedding_type", std::string("absolute"));
    if (pos != "absolute")
      return badf("position_embedding_type \"" + pos + "\" is not supported (headmap computes absolute learned positions).");
    int types = *f.token_types_key ? 2 : 0, pad = f.pad_token;
    for (Status s : {get_int(f.token_types_key, 0, 1 << 16, &types, false), get_int("pad_token_id", 0, kMaxVocab, &pad, false)})
      if (!s) return s.error();
    a.bidirectional = true;
    a.embed_norm = true;
    a.token_types = types;
    a.position_offset = f.pad_token >= 0 ? pad + 1 : 0;
    if (a.position_offset >= c.positions) return badf("pad_token_id leaves no position for the tokens.");
  }

// ---- [attention] --------------------------------------------------------------------------
  a.num_heads = H;
  a.num_kv_heads = c.num_kv_heads < H ? c.num_kv_heads : 0;
  a.head_dim = c.head_dim;
  if (!f.fixed_heads && c.head_dim * H == c.d_model && a.num_kv_heads == 0) a.num_heads = 0, a.head_dim = 0;  // H may re-slice, as GPT-2's
  const bool attention_bias = flag("attention_bias", f.attention_bias);
  a.attn_bias = f.qkv_bias || attention_bias;
  a.out_bias = f.out_bias || attention_bias;
  a.qk_norm = f.qk_norm;
  a.qk_norm_whole = f.qk_norm_whole;
  if (f.no_score_scale) a.score_scale = ScoreScale::None;
  if (f.softcaps) {
    a.score_scale = ScoreScale::QueryPreAttnScalar;
    a.query_pre_attn_scalar = static_cast<float>(get_num(j, "query_pre_attn_scalar", c.head_dim));
    if (!(a.query_pre_attn_scalar > 0)) return badf("query_pre_attn_scalar must be positive.");
    a.attn_softcap = static_cast<float>(get_num(j, "attn_logit_softcapping", 0.0, 0.0));
    a.final_softcap = static_cast<float>(get_num(j, "final_logit_softcapping", 0.0, 0.0));
  }

// ---- [windows] --------------------------------------------------------------------------
  // one per layer
  a.windows.assign(static_cast<size_t>(L), 0);
  int window = 0;
  if (Status s = get_int(k.window, 1, kMaxPositions, &window, false); !s) return s.error();
  const bool layer_types = has("layer_types") && j["layer_types"].is_array();
  if (layer_types && (f.windows != WindowRule::LayerTypes || flag("use_sliding_window", false))) {
    if (static_cast<int>(j["layer_types"].size()) != L) return badf("\"layer_types\" does not list one type per layer.");
    for (int l = 0; l < L; ++l) {
      const std::string t = j["layer_types"][static_cast<size_t>(l)].get<std::string>();
      if (t == "sliding_attention" && window > 0) a.windows[static_cast<size_t>(l)] = window;
      else if (t != "full_attention" && t != "sliding_attention") return badf("layer type \"" + t + "\" is not supported.");
    }
  } else if (f.windows == WindowRule::NeoTypes) {
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
        const std::string fe = "\"attention_types\"[" + std::to_string(i) + "]";
        if (!e.is_array() || e.size() != 2 || !e[0].is_array() || e[0].empty() || !e[1].is_number_integer())
          return badf(fe + " is not [[kinds...], repeats] with at least one kind.");
        const int64_t reps = e[1].is_number_unsigned() ? static_cast<int64_t>(std::min<uint64_t>(e[1].get<uint64_t>(), INT64_MAX)) : e[1].get<int64_t>();
        if (reps < 1 || reps > L) return badf(fe + " repeats its pattern " + e[1].dump() + " times; num_layers is " + std::to_string(L) + ".");
        for (const json& kind : e[0])
          if (!kind.is_string() || (kind != "global" && kind != "local"))
            return badf(fe + " names the kind " + kind.dump(-1, ' ', false, json::error_handler_t::replace).substr(0, 40) + ", not \"global\" or \"local\".");
        layers += reps * static_cast<int64_t>(e[0].size());
        if (layers > L) break;
      }
      if (layers != L) return badf("\"attention_types\" makes " + std::string(layers > L ? "more than " : "") + std::to_string(layers) +
                                   " layers; num_layers is " + std::to_string(L) + ".");
      for (const json& e : at)
        for (int64_t r = 0; r < e[1].get<int64_t>(); ++r)
          for (const json& kind : e[0]) kinds.push_back(kind.get<std::string>());
    }
    for (int l = 0; l < static_cast<int>(kinds.size()); ++l)
      if (kinds[static_cast<size_t>(l)] == "local") {
        if (window < 1) return badf("local layers need \"window_size\".");
        a.windows[static_cast<size_t>(l)] = window;
      }
  } else if (window > 0) {
    for (int l = 0; l < L; ++l) {
      bool sliding = false;
      switch (f.windows) {
        case WindowRule::All: sliding = true; break;
        case WindowRule::UseSliding: sliding = j.value("use_sliding_window", false) && l >= j.value("max_window_layers", 0); break;
        case WindowRule::EvenLayers: sliding = l % 2 == 0; break;
        case WindowRule::Pattern: sliding = (l + 1) % std::max(1, j.value("sliding_window_pattern", 6)) != 0; break;
        default: break;
      }
      if (sliding) a.windows[static_cast<size_t>(l)] = window;
    }
  }
  if (std::all_of(a.windows.begin(), a.windows.end(), [](int w) { return w == 0; })) a.windows.clear();

// ---- [mlp] --------------------------------------------------------------------------
  std::string act = f.act;
  for (const char* key : {k.act, "hidden_act", "activation_function"})
    if (has(key)) {
      act = j[key].get<std::string>();
      break;
    }
  const bool tanh = gelu_tanh_name(act) || (f.gelu_is_tanh && act == "gelu");
  if (f.gated && act == "silu") a.mlp = MlpKind::SiluGated;
  else if (f.gated && tanh) a.mlp = MlpKind::GeluTanhGated;
  else if (!f.gated && tanh) a.mlp = MlpKind::GeluTanh;
  else if (!f.gated && act == "gelu") a.mlp = MlpKind::GeluErf;
  else
    return badf("activation \"" + act + "\" is not supported: headmap computes " +
                (f.gated ? "SiLU or GELU (tanh) gates" : "GELU, in its erf (\"gelu\") or tanh (\"gelu_new\") form") + " for this family.");
  a.mlp_width = c.mlp_width == 4 * c.d_model ? 0 : c.mlp_width;  // 0 = 4D, GPT-2's block
  a.mlp_bias = flag("mlp_bias", f.mlp_bias);
  if (a.mlp_bias && f.gated) return badf("a gated MLP with biases (mlp_bias) is not supported.");
  a.embed_scale = f.embed_scale;
  a.tied = flag("tie_word_embeddings", f.tied);
  if (!num_error.empty()) return badf(num_error);
  return c;
}
}  // namespace

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
    return config_fields(j, origin);
  } catch (const json::exception& e) {  // a field of the wrong type ("model_type": 6)
    return bad_format(origin + ": a field has the wrong type (" + e.what() + ").");
  }
}

}  // namespace headmap
