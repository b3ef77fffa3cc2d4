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
    auto get_int = [&](const char* k, int& dst) { if (j.contains(k)) dst = j.at(k).get<int>(); };
    auto get_bool = [&](const char* k, bool& dst) { if (j.contains(k)) dst = j.at(k).get<bool>(); };
    get_int("d_model", c.d_model);
    get_int("num_heads", c.num_heads);
    get_int("num_kv_heads", c.num_kv_heads);
    if (j.contains("num_kv_heads") && c.num_kv_heads < 1) return bad("\"num_kv_heads\" must be at least 1 (1 is multi-query, num_heads is multi-head).");
    if (c.num_kv_heads == c.num_heads) c.num_kv_heads = 0;  // plain multi-head: follows num_heads
    get_int("num_layers", c.num_layers);
    get_int("context", c.context);
    get_bool("causal", c.causal);
    get_bool("positional", c.positional);
    if (j.contains("seed")) c.seed = j.at("seed").get<uint64_t>();
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
