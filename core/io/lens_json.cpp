// lens_json.cpp: see lens_json.h.
#include "core/io/lens_json.h"

#include "core/inspect/predictions.h"

namespace headmap {

nlohmann::json logit_lens_json(const LogitLens& lens, const ModelWeights& w) {
  const int P = lens.points(), T = lens.T;
  nlohmann::json j, names = nlohmann::json::array(), targets = nlohmann::json::array(), top = nlohmann::json::array();
  nlohmann::json probs = nlohmann::json::array(), ranks = nlohmann::json::array();
  for (int p = 0; p < P; ++p) names.push_back(LogitLens::point_name(p));
  for (int t = 0; t < T; ++t) {
    const int id = lens.target_ids[static_cast<size_t>(t)];
    targets.push_back(id < 0 ? nlohmann::json(nullptr) : nlohmann::json{{"id", id}, {"text", token_name(w, id)}, {"settled", lens.settled(t)}});
  }
  for (int p = 0; p < P; ++p) {
    nlohmann::json row = nlohmann::json::array(), prow = nlohmann::json::array(), rrow = nlohmann::json::array();
    for (int t = 0; t < T; ++t) {
      nlohmann::json cell = nlohmann::json::array();
      for (int i = 0; i < lens.K; ++i) cell.push_back({{"id", lens.top_id(p, t, i)}, {"text", token_name(w, lens.top_id(p, t, i))}, {"prob", lens.top_prob(p, t, i)}});
      row.push_back(std::move(cell));
      prow.push_back(lens.target_prob(p, t));  // NaN is written as null
      rrow.push_back(lens.target_ranks[static_cast<size_t>(p) * T + t]);
    }
    top.push_back(std::move(row));
    probs.push_back(std::move(prow));
    ranks.push_back(std::move(rrow));
  }
  j["target"] = lens_target_name(lens.target);
  j["points"] = std::move(names);
  j["targets"] = std::move(targets);
  j["target_probs"] = std::move(probs);
  j["target_ranks"] = std::move(ranks);
  j["top"] = std::move(top);
  return j;
}

}  // namespace headmap
