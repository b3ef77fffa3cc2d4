// run_export.cpp: a run's --json document and its --npy directory.
#include "core/io/run_export.h"

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/inspect/predictions.h"
#include "core/io/config_json.h"
#include "core/io/file_io.h"
#include "core/io/npy.h"
#include "core/model/attention.h"
#include "core/model/source_label.h"

namespace headmap {
namespace fs = std::filesystem;
using nlohmann::json;

// (B) lists of vocabulary ids, for trained models.
static json token_ids_json(const Batch& batch) {
  json sents = json::array();
  for (const TokenizedText& s : batch.sentences) {
    json ids = json::array();
    for (const Token& t : s.tokens) ids.push_back(t.id);
    sents.push_back(ids);
  }
  return sents;
}

static json tokens_json(const Batch& batch) {
  json sents = json::array();
  for (int b = 0; b < batch.B(); ++b) {
    json toks = json::array();
    for (const Token& t : batch.sentences[b].tokens) toks.push_back(t.text);
    sents.push_back(toks);
  }
  return sents;
}

static json passport_to_json(const Passport& p) {
  json steps = json::array();
  for (const PassportStep& s : p.steps)
    steps.push_back({{"id", s.id}, {"section", s.section}, {"name", s.name}, {"formula", s.formula}, {"symbolic", s.symbolic},
                     {"shape", s.concrete}, {"flops", s.flops}, {"bytes", s.bytes}, {"view", s.view}, {"note", s.note}});
  json params = json::array();
  for (const ParamCount& c : p.params)
    params.push_back({{"name", c.name}, {"formula", c.formula}, {"count", c.count}, {"attention", c.attention}});
  return {{"steps", steps},
          {"params", params},
          {"attention_params", p.attention_params},
          {"total_params", p.total_params},
          {"total_flops", p.total_flops}};
}

std::string run_json(const RunRecord& run, bool with_weights, int indent) {
  const Batch& batch = *run.batch;
  const ForwardOutput& out = *run.out;
  json j;
  j["config"] = json::parse(config_json(run.cfg));
  j["weights_source"] = describe_source(*run.weights, run.cfg);
  j["tokens"] = tokens_json(batch);
  if (run.weights->trained()) j["token_ids"] = token_ids_json(batch);
  j["lengths"] = batch.lengths;
  j["notes"] = batch.notes(run.weights->trained() ? run.weights->context : 0);
  // Mean next-token cross-entropy over every sentence's tokens (trained models only).
  if (out.loss_tokens > 0) {
    j["loss_on_text"] = out.loss;
    j["loss_tokens"] = out.loss_tokens;
    j["sentence_losses"] = sentence_losses(out, batch);  // (B) each sentence's own; null under 2 tokens
  }
  // (B, len, k): after each token, the k most likely next tokens (core/inspect/predictions.h).
  if (run.top_k > 0 && out.logits.size() > 0) {
    json all = json::array();
    for (int b = 0; b < batch.B(); ++b) {
      json sentence = json::array();
      for (int t = 0; t < batch.lengths[b]; ++t) {
        json top = json::array();
        for (const NextToken& n : top_k_next(*run.weights, out, b, t, run.top_k))
          top.push_back({{"id", n.id}, {"token", n.display}, {"prob", n.prob}});
        sentence.push_back(top);
      }
      all.push_back(sentence);
    }
    j["next_tokens"] = all;
  }
  j["B"] = out.B;
  j["T"] = out.T;
  if (batch.empty()) j["message"] = "Nothing to attend over: the text has no tokens.";
  if (out.no_key_rows > 0) j["rows_without_visible_key"] = out.no_key_rows;
  if (run.passport) {
    json pj = passport_to_json(*run.passport);
    j["passport"] = pj["steps"];
    j["params"] = pj["params"];
    j["attention_params"] = pj["attention_params"];
    j["total_params"] = pj["total_params"];
    j["total_flops"] = pj["total_flops"];
  }
  json metrics = json::array();
  size_t i = 0;
  for (int l = 0; l < out.L; ++l)
    for (int b = 0; b < out.B; ++b)
      for (int h = 0; h < out.Hw; ++h, ++i) {
        if (i >= run.metrics.size()) break;
        const HeadMetrics& m = run.metrics[i];
        json e = {{"layer", l}, {"batch", b}, {"head", h}, {"entropy", m.entropy}, {"entropy_norm", m.entropy_norm},
                  {"prev_token", m.prev_token}, {"first_token", m.first_token}, {"self", m.self}, {"max_weight", m.max_weight}};
        const size_t ih = static_cast<size_t>(l) * out.H + h;
        const float ind = (!run.cfg.pitfalls.head_averaged && ih < run.induction.size()) ? run.induction[ih] : 0.0f;
        if (!run.induction.empty() && !run.cfg.pitfalls.head_averaged) e["induction"] = ind;
        if (i < run.text_induction.size() && !std::isnan(run.text_induction[i])) e["text_induction"] = run.text_induction[i];
        e["label"] = head_label_name(head_label(m, label_induction(ind, i < run.text_induction.size() ? run.text_induction[i] : NAN)));
        metrics.push_back(e);
      }
  j["metrics"] = metrics;
  if (!run.induction.empty()) {
    j["induction_scores"] = run.induction;
    j["label_thresholds"] = {{"prev_token", kLabelThresholds.prev_token}, {"first_token", kLabelThresholds.first_token},
                             {"self", kLabelThresholds.self}, {"induction", kLabelThresholds.induction},
                             {"broad_entropy_norm", kLabelThresholds.broad}};
  }
  if (with_weights) {
    json layers = json::array();
    for (int l = 0; l < out.L; ++l) {
      json bs = json::array();
      for (int b = 0; b < out.B; ++b) {
        json hs = json::array();
        for (int h = 0; h < out.Hw; ++h) {
          const float* w = out.weights(l, b, h);
          json rows = json::array();
          for (int t = 0; t < out.T; ++t) rows.push_back(std::vector<float>(w + static_cast<size_t>(t) * out.T, w + static_cast<size_t>(t + 1) * out.T));
          hs.push_back(rows);
        }
        bs.push_back(hs);
      }
      layers.push_back(bs);
    }
    j["weights"] = layers;
    j["weights_shape"] = {out.L, out.B, out.Hw, out.T, out.T};
  }
  return j.dump(indent, ' ', false, json::error_handler_t::replace) + "\n";
}

// ---- --npy directory -------------------------------------------------------------------
Status export_npy_dir(const std::string& dir, const RunRecord& run) {
  const ForwardOutput& out = *run.out;
  const Batch& batch = *run.batch;
  if (batch.empty()) return Error{ErrorKind::InvalidArgument, "Nothing to export: the text has no tokens."};
  if (static_cast<int>(out.attn_in.size()) != out.L)
    return Error{ErrorKind::InvalidArgument, "The run did not keep the layer inputs (keep_layer_io); nothing was written."};
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return Error{ErrorKind::Io, "Cannot create the directory " + dir + ": " + ec.message() + "."};
  // Stage every file in a hidden sibling directory, then rename the files into dir.
  std::string tmpl = (fs::path(dir) / ".staging-XXXXXX").string();
  std::vector<char> name(tmpl.begin(), tmpl.end());
  name.push_back('\0');
  if (!mkdtemp(name.data())) return io_error("Cannot create a staging directory in", dir);
  const fs::path staging(name.data());
  std::vector<std::string> files;
  auto put = [&](const std::string& file, const std::string& bytes) -> Status {
    std::ofstream f(staging / file, std::ios::binary);
    f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    f.close();
    if (!f) return io_error("Cannot write", (staging / file).string());
    files.push_back(file);
    return Status();
  };
  auto fail = [&](const Status& s) {
    fs::remove_all(staging, ec);
    return s;
  };
  const int64_t B = out.B, T = out.T, D = out.D;
  if (Status s = put("attention.npy", npy_bytes(out.attention.data(), {out.L, B, out.Hw, T, T})); !s) return fail(s);
  for (int l = 0; l < out.L; ++l) {
    // W_K and W_V as the attention read them: (D, kv_heads·d_head) under grouped-query attention.
    const LayerWeights lw = kv_grouped(run.weights->layers[l], mha_options(run.cfg));
    const std::string p = "layer" + std::to_string(l) + ".";
    const std::pair<const char*, const MatR*> mats[] = {{"w_q", &lw.w_q}, {"w_k", &lw.w_k}, {"w_v", &lw.w_v}, {"w_o", &lw.w_o}};
    const std::pair<const char*, const RowVec*> vecs[] = {{"b_q", &lw.b_q}, {"b_k", &lw.b_k}, {"b_v", &lw.b_v}, {"b_o", &lw.b_o}};
    if (Status s = put(p + "attn_in.npy", npy_bytes(out.attn_in[l].data(), {B, T, D})); !s) return fail(s);
    if (Status s = put(p + "attn_out.npy", npy_bytes(out.attn_out[l].data(), {B, T, D})); !s) return fail(s);
    for (auto& [n, m] : mats)
      if (Status s = put(p + n + ".npy", npy_bytes(m->data(), {D, m->cols()})); !s) return fail(s);
    for (auto& [n, v] : vecs)
      if (Status s = put(p + n + ".npy", npy_bytes(v->data(), {v->size()})); !s) return fail(s);
  }
  json meta;
  meta["tokens"] = tokens_json(batch);
  if (run.weights->trained()) meta["token_ids"] = token_ids_json(batch);
  meta["lengths"] = batch.lengths;
  meta["config"] = json::parse(config_json(run.cfg));
  meta["weights_source"] = describe_source(*run.weights, run.cfg);
  meta["attention_shape"] = {out.L, B, out.Hw, T, T};
  meta["convention"] = "y = x @ W + b, W stored (D_in, D_out); attn_in is LN1(x), the exact input of attention";
  if (Status s = put("meta.json", meta.dump(2, ' ', false, json::error_handler_t::replace) + "\n"); !s) return fail(s);
  for (const std::string& f : files) {
    fs::rename(staging / f, fs::path(dir) / f, ec);
    if (ec) return fail(Error{ErrorKind::Io, "Cannot move " + f + " into " + dir + ": " + ec.message() + "."});
  }
  fs::remove_all(staging, ec);
  return Status();
}

}  // namespace headmap
