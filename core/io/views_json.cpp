// views_json.cpp: see views_json.h.
#include "core/io/views_json.h"

#include <cmath>

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

nlohmann::json grid_json(const std::vector<float>& v, int rows, int cols) {
  nlohmann::json g = nlohmann::json::array();
  for (int r = 0; r < rows; ++r) {
    nlohmann::json row = nlohmann::json::array();
    for (int c = 0; c < cols; ++c) row.push_back(v[static_cast<size_t>(r) * cols + c]);
    g.push_back(std::move(row));
  }
  return g;
}

nlohmann::json head_overview_json(const HeadOverview& o) {
  const int N = o.L * o.Hw;
  nlohmann::json j, stats, defs, dup = nlohmann::json::array();
  for (size_t i = 0; i < o.stat_keys.size(); ++i) {
    const HeadMetricInfo& m = head_metric_info(o.stat_keys[i]);
    stats[m.key] = grid_json(o.stats[i], o.L, o.Hw);
    defs[m.key] = {{"name", m.name}, {"definition", m.definition}};
  }
  for (const auto& [n, m] : o.near_duplicates)
    dup.push_back({{"a", {n / o.Hw, n % o.Hw}}, {"b", {m / o.Hw, m % o.Hw}}, {"similarity", o.sim(n, m)}});
  j["stats"] = std::move(stats);
  j["definitions"] = std::move(defs);
  j["similarity"] = grid_json(o.similarity, N, N);
  j["layout"] = grid_json(o.layout, N, 2);
  j["near_duplicates"] = std::move(dup);
  j["near_duplicate_threshold"] = kNearDuplicate;
  return j;
}

nlohmann::json offset_profile_json(const OffsetProfile& p) {
  nlohmann::json j;
  const int O = p.offsets();
  j["len"] = p.len;
  j["causal"] = p.causal;
  nlohmann::json offsets = nlohmann::json::array();
  for (int i = 0; i < O; ++i) offsets.push_back(i - (p.len - 1));
  j["offsets"] = std::move(offsets);
  j["rows_at"] = p.rows_at;
  nlohmann::json by = nlohmann::json::array();
  for (int l = 0; l < p.L; ++l)
    by.push_back(grid_json(std::vector<float>(p.by_offset.begin() + static_cast<std::ptrdiff_t>(l) * p.Hw * O,
                                         p.by_offset.begin() + static_cast<std::ptrdiff_t>(l + 1) * p.Hw * O),
                      p.Hw, O));
  j["by_offset"] = std::move(by);
  if (p.H == 0) {
    j["frequencies"] = nullptr;
    j["no_frequencies"] = p.no_frequencies;
    return j;
  }
  nlohmann::json f;
  f["pairs"] = p.pairs;
  f["wavelength"] = grid_json(p.wavelength, p.L, p.P);
  nlohmann::json share = nlohmann::json::array();
  const size_t per_layer = static_cast<size_t>(p.H) * (p.P + 1);
  for (int l = 0; l < p.L; ++l)
    share.push_back(grid_json(std::vector<float>(p.freq_share.begin() + static_cast<std::ptrdiff_t>(l * per_layer),
                                            p.freq_share.begin() + static_cast<std::ptrdiff_t>((l + 1) * per_layer)),
                         p.H, p.P + 1));
  f["share"] = std::move(share);
  j["frequencies"] = std::move(f);
  return j;
}

nlohmann::json composition_json(const Composition& c) {
  const int N = c.L * c.H;
  return {{"L", c.L}, {"H", c.H}, {"q", grid_json(c.q, N, N)}, {"k", grid_json(c.k, N, N)}, {"v", grid_json(c.v, N, N)}};
}

nlohmann::json corpus_search_json(const CorpusSearch& c, const std::vector<std::string>& lines, const ModelWeights& w) {
  nlohmann::json hits = nlohmann::json::array();
  for (const CorpusHit& h : c.hits) {
    nlohmann::json tokens = nlohmann::json::array();
    for (int id : h.token_ids) tokens.push_back(token_name(w, id));
    hits.push_back({{"line", h.line}, {"text", lines[static_cast<size_t>(h.line)]}, {"query", h.query}, {"key", h.key}, {"weight", h.weight}, {"score", h.score},
                    {"token_ids", h.token_ids}, {"tokens", std::move(tokens)}});
  }
  nlohmann::json offsets = nlohmann::json::array();
  for (int i = 0; i < static_cast<int>(c.by_offset.size()); ++i) offsets.push_back(i - c.len + 1);
  return {{"layer", c.layer}, {"head", c.head}, {"stat", corpus_stat_name(c.stat)}, {"lines", c.lines}, {"rows", c.rows}, {"hits", std::move(hits)},
          {"offset_profile", {{"len", c.len}, {"offsets", std::move(offsets)}, {"rows_at", c.rows_at}, {"by_offset", c.by_offset}}}};
}

nlohmann::json composition_row_json(const CompositionRow& c) {
  return {{"layer", c.layer}, {"head", c.head}, {"L", c.L}, {"H", c.H},
          {"q", grid_json(c.q, c.L, c.H)}, {"k", grid_json(c.k, c.L, c.H)}, {"v", grid_json(c.v, c.L, c.H)}};
}

nlohmann::json head_circuit_json(const HeadCircuit& h, const ModelWeights& w) {
  const int n = static_cast<int>(h.tokens.size());
  nlohmann::json tokens = nlohmann::json::array();
  for (int id : h.tokens) tokens.push_back({{"id", id}, {"text", token_name(w, id)}});
  nlohmann::json dirs = nlohmann::json::array();
  for (const HeadCircuit::Direction& d : h.directions) dirs.push_back({{"sigma", d.sigma}, {"reads", d.reads}, {"writes", d.writes}});
  const int P = static_cast<int>(std::lround(std::sqrt(static_cast<double>(h.qk_pos.size()))));
  return {{"layer", h.layer},
          {"head", h.head},
          {"tokens", std::move(tokens)},
          {"ov", grid_json(h.ov, n, n)},
          {"qk", grid_json(h.qk, n, n)},
          {"qk_positions", h.qk_pos.empty() ? nlohmann::json(nullptr) : grid_json(h.qk_pos, P, P)},
          {"copying", h.copying},
          {"directions", std::move(dirs)}};
}

}  // namespace headmap
