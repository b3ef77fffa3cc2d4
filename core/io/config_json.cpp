// config_json.cpp: ModelConfig as JSON and back.
#include "core/io/config_json.h"

#include <nlohmann/json.hpp>

namespace headmap {
using nlohmann::json;

static json config_to_json(const ModelConfig& c) {
  json p = json::object();
  for (const PitfallInfo& pi : pitfall_list()) p[std::string(pi.cli).substr(10)] = c.pitfalls.*(pi.flag);
  return {{"d_model", c.d_model}, {"num_heads", c.num_heads}, {"num_kv_heads", c.kv_heads()}, {"num_layers", c.num_layers}, {"context", c.context},
          {"causal", c.causal},   {"positional", c.positional}, {"seed", c.seed}, {"d_head", c.d_head()},
          {"tokenizer", tokenizer_name(c.tokenizer)}, {"pitfalls", p}};
}

std::string config_json(const ModelConfig& cfg) { return config_to_json(cfg).dump(2); }

Result<ModelConfig> config_from_json(const std::string& text) {
  auto bad = [](const std::string& m) { return Error{ErrorKind::BadFormat, m}; };
  json j;
  try {
    j = json::parse(text);
  } catch (const json::exception& e) {
    return bad(std::string("The config is not valid JSON (") + e.what() + ").");
  }
  if (!j.is_object()) return bad("The config must be a JSON object.");
  ModelConfig c;
  try {
    // Whole numbers within the sliders' ranges only: a hostile file must reach neither a
    // float-to-int conversion (1e38) nor a product such as num_layers * num_heads that
    // overflows. A d_model / num_heads pair that does not divide is allowed (it is a
    // lesson, shown with its message); validate() says so later.
    std::string range_error;
    auto get_int = [&](const char* k, int& dst, int lo, int hi) {
      if (!j.contains(k)) return true;
      const json& v = j.at(k);
      if (v.is_number_unsigned() && v.get<uint64_t>() <= static_cast<uint64_t>(hi) && static_cast<int64_t>(v.get<uint64_t>()) >= lo) {
        dst = static_cast<int>(v.get<uint64_t>());
        return true;
      }
      if (v.is_number_integer() && !v.is_number_unsigned() && v.get<int64_t>() >= lo && v.get<int64_t>() <= hi) {
        dst = static_cast<int>(v.get<int64_t>());
        return true;
      }
      range_error = std::string("\"") + k + "\" must be a whole number from " + std::to_string(lo) + " to " + std::to_string(hi) + ", not " + v.dump() + ".";
      return false;
    };
    auto get_bool = [&](const char* k, bool& dst) { if (j.contains(k)) dst = j.at(k).get<bool>(); };
    if (!get_int("d_model", c.d_model, 1, kMaxDModel) || !get_int("num_heads", c.num_heads, 1, kMaxDModel) ||
        !get_int("num_layers", c.num_layers, 1, kMaxModelLayers) || !get_int("context", c.context, 1, kMaxContext))
      return bad("The config's " + range_error);
    if (!get_int("num_kv_heads", c.num_kv_heads, 1, kMaxDModel)) return bad("The config's " + range_error + " 1 is multi-query; num_heads is multi-head.");
    if (c.num_kv_heads == c.num_heads) c.num_kv_heads = 0;  // plain multi-head: follows num_heads
    get_bool("causal", c.causal);
    get_bool("positional", c.positional);
    if (j.contains("seed")) {
      if (!j.at("seed").is_number_unsigned()) return bad("The config's \"seed\" must be a whole number of at least 0, not " + j.at("seed").dump() + ".");
      c.seed = j.at("seed").get<uint64_t>();
    }
    if (j.contains("tokenizer") && !parse_tokenizer(j.at("tokenizer").get<std::string>(), &c.tokenizer))
      return bad("Unknown tokenizer \"" + j.at("tokenizer").get<std::string>() + "\": use word or char.");
    if (j.contains("pitfalls")) {
      const json& p = j.at("pitfalls");
      if (!p.is_object()) return bad("\"pitfalls\" must be an object.");
      for (const PitfallInfo& pi : pitfall_list()) {
        const std::string key = std::string(pi.cli).substr(10);
        if (p.contains(key)) c.pitfalls.*(pi.flag) = p.at(key).get<bool>();
      }
    }
  } catch (const json::exception& e) {
    return bad(std::string("A config field has the wrong type (") + e.what() + ").");
  }
  return c;
}

}  // namespace headmap
