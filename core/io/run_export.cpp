// run_export.cpp: a run's --json document and its --npy directory.
#include "core/io/run_export.h"
#include "core/inspect/contrib.h"

#include <charconv>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/inspect/predictions.h"
#include "core/io/config_json.h"
#include "core/io/file_io.h"
#include "core/io/npy.h"
#include "core/text/hf_tokenizer.h"
#include "core/model/attention.h"
#include "core/model/source_label.h"
#include "core/memory_budget.h"

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

// Encoders: (B) lists of token types (0 sentence A, 1 sentence B), and of the positions of
// the special tokens the post-processor added ([CLS], [SEP], <s>, </s>; padding follows
// lengths) and of [MASK].
static void encoder_json(const Batch& batch, const ModelWeights& w, json& j) {
  if (!w.arch.encoder()) return;
  const int mask = mask_token_id(w);
  json types = json::array(), segments = json::array(), special = json::array(), masked = json::array();
  for (const TokenizedText& s : batch.sentences) {
    json ty = json::array(), sg = json::array(), sp = json::array(), mk = json::array();
    for (size_t t = 0; t < s.tokens.size(); ++t) {
      ty.push_back(s.tokens[t].type);
      sg.push_back(s.tokens[t].segment);
      if (s.tokens[t].id == mask) mk.push_back(t);
      if (s.tokens[t].added) sp.push_back(t);
    }
    types.push_back(ty), segments.push_back(sg), special.push_back(sp), masked.push_back(mk);
  }
  j["type_ids"] = types;
  j["segments"] = segments;  // 0 sentence A, 1 sentence B (RoBERTa's type ids are all 0)
  j["special_positions"] = special;
  j["mask_positions"] = masked;
  j["mlm_head"] = w.arch.mlm_head;
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

static void append_weights(std::string& text, const ForwardOutput& out, int indent);

// The config as exported, its "tokenizer" the one that cut the text: a trained model's own
// (its tokenizer.json's model, "bpe", "wordpiece", "unigram"), not the slider's word/char
// choice, which only random init reads (effective_tokenizer).
static json exported_config(const ModelConfig& cfg, const ModelWeights& w, const Batch& batch) {
  json c = json::parse(config_json(cfg));
  std::string name = tokenizer_name(batch.tokenizer);
  if (w.trained() && w.hf_tokenizer) {
    name = w.hf_tokenizer->model_type();
    for (char& ch : name) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  }
  c["tokenizer"] = name;
  return c;
}

std::string run_json(const RunRecord& run, bool with_weights, int indent) {
  const Batch& batch = *run.batch;
  const ForwardOutput& out = *run.out;
  json j;
  j["config"] = exported_config(run.cfg, *run.weights, batch);
  j["weights_source"] = describe_source(*run.weights, run.cfg);
  j["tokens"] = tokens_json(batch);
  if (run.weights->trained()) j["token_ids"] = token_ids_json(batch);
  j["lengths"] = batch.lengths;
  j["notes"] = batch.notes(run.weights->trained() ? run.weights->context : 0);
  // Mean next-token cross-entropy over every sentence's tokens (trained models only).
  encoder_json(batch, *run.weights, j);
  const bool encoder = run.weights->arch.encoder();
  if (out.loss_tokens > 0) {
    j["loss_on_text"] = out.loss;
    j["loss_tokens"] = out.loss_tokens;
    if (encoder) j["loss_kind"] = "masked-token";  // over the tokens masked with their own id kept (Token::masked_id)
    else j["sentence_losses"] = sentence_losses(out, batch);  // (B) each sentence's own; null under 2 tokens
  }
  // Encoders: the k most likely fillers of each [MASK] (the masked-LM head's softmax).
  if (encoder && run.top_k > 0 && has_next_tokens(out)) {
    const int mask = mask_token_id(*run.weights);
    json all = json::array();
    for (int b = 0; b < batch.B(); ++b)
      for (int t = 0; t < batch.lengths[b]; ++t) {
        const Token& tok = batch.sentences[b].tokens[t];
        if (tok.id != mask) continue;
        json top = json::array();
        for (const NextToken& n : top_k_next(*run.weights, out, b, t, run.top_k)) top.push_back({{"id", n.id}, {"token", n.display}, {"prob", n.prob}});
        all.push_back({{"sentence", b}, {"position", t}, {"masked_id", tok.masked_id >= 0 ? json(tok.masked_id) : json()}, {"top", top}});
      }
    j["mask_predictions"] = all;
  }
  // (B, len, k): after each token, the k most likely next tokens (core/inspect/predictions.h).
  if (!encoder && run.top_k > 0 && has_next_tokens(out)) {
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
                  {"prev_token", m.prev_token}, {"first_token", m.first_token}, {"self", m.self}, {"max_weight", m.max_weight},
                  {"next_token", m.next_token}, {"sep_sink", m.sep_sink}};
        const size_t ih = static_cast<size_t>(l) * out.H + h;
        const float ind = (!run.cfg.pitfalls.head_averaged && ih < run.induction.size()) ? run.induction[ih] : 0.0f;
        if (!run.induction.empty() && !run.cfg.pitfalls.head_averaged) e["induction"] = ind;
        if (i < run.text_induction.size() && !std::isnan(run.text_induction[i])) e["text_induction"] = run.text_induction[i];
        e["label"] = head_label_name(head_label(m, label_induction(ind, i < run.text_induction.size() ? run.text_induction[i] : NAN)));
        metrics.push_back(e);
      }
  j["metrics"] = metrics;
  json defs;  // each key of "metrics" named and defined, as the app and headmap-cli name it (metrics.h)
  for (HeadMetric k : {HeadMetric::Entropy, HeadMetric::EntropyNorm, HeadMetric::PrevToken, HeadMetric::FirstToken, HeadMetric::Self,
                       HeadMetric::MaxWeight, HeadMetric::NextToken, HeadMetric::SepSink, HeadMetric::InductionProbe, HeadMetric::InductionText}) {
    const HeadMetricInfo& m = head_metric_info(k);
    defs[m.key] = {{"name", m.name}, {"definition", m.definition}};
  }
  j["metric_definitions"] = defs;
  j["indices"] = "numbered from 0: layer, batch (sentence) and head count from 0, as in headmap and headmap-cli";
  if (!run.induction.empty()) {
    j["induction_scores"] = run.induction;
    j["label_thresholds"] = {{"prev_token", kLabelThresholds.prev_token}, {"first_token", kLabelThresholds.first_token},
                             {"self", kLabelThresholds.self}, {"induction", kLabelThresholds.induction},
                             {"broad_entropy_norm", kLabelThresholds.broad}};
  }
  std::string text = j.dump(indent, ' ', false, json::error_handler_t::replace);
  if (with_weights) append_weights(text, out, indent);
  return text + "\n";
}

// The (L, B, Hw, T, T) weights appended to the document as text, one row per line: a
// JSON tree of them would take about 17 times the maps' bytes.
static void append_weights(std::string& text, const ForwardOutput& out, int indent) {
  const size_t close = text.rfind('}');
  HM_ASSERT(close != std::string::npos, "run_json's document is an object");
  text.resize(close);
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  const std::string nl = indent >= 0 ? "\n" + std::string(static_cast<size_t>(indent), ' ') : "";
  text += "," + nl + "\"weights_shape\": [" + std::to_string(out.L) + ", " + std::to_string(out.B) + ", " + std::to_string(out.Hw) + ", " +
          std::to_string(out.T) + ", " + std::to_string(out.T) + "]," + nl + "\"weights\": [";
  char buf[32];
  for (int l = 0; l < out.L; ++l) {
    text += l ? ", [" : "[";
    for (int b = 0; b < out.B; ++b) {
      text += b ? ", [" : "[";
      for (int h = 0; h < out.Hw; ++h) {
        text += h ? "," + nl + "  [" : nl + "  [";
        const float* w = out.weights(l, b, h);
        for (int t = 0; t < out.T; ++t) {
          text += t ? "," + nl + "   [" : "[";
          for (int s = 0; s < out.T; ++s) {
            const float v = w[static_cast<size_t>(t) * out.T + s];
            if (s) text += ", ";
            if (!std::isfinite(v)) {
              text += "null";
              continue;
            }
            const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
            text.append(buf, ec == std::errc() ? static_cast<size_t>(end - buf) : 0);
          }
          text += "]";
        }
        text += "]";
      }
      text += "]";
    }
    text += "]";
  }
  text += "]" + (indent >= 0 ? std::string("\n") : std::string()) + "}";
}

// At most 16 characters per weight ("-0.000123456789, "), plus the rest of the document.
static uint64_t run_json_bytes(const ForwardOutput& out, bool with_weights) {
  const uint64_t maps = mul_sat(mul_sat(static_cast<uint64_t>(out.L) * out.B, static_cast<uint64_t>(out.Hw)),
                                mul_sat(static_cast<uint64_t>(out.T), static_cast<uint64_t>(out.T)));
  return (with_weights ? mul_sat(maps, 16) : 0) + (uint64_t(16) << 20);
}

Status write_run_json(const std::string& path, const RunRecord& run, bool with_weights) {
  if (Status s = check_memory(run_json_bytes(*run.out, with_weights), "The JSON document" + std::string(with_weights ? " with the weights" : ""),
                              with_weights ? "leave out the weights (--with-weights), or use fewer or shorter sentences, or fewer layers or heads"
                                           : "use fewer sentences");
      !s)
    return s;
  try {
    return write_file_atomic(path, run_json(run, with_weights));
  } catch (const std::bad_alloc&) {
    return out_of_memory("writing " + path);
  }
}

// ---- --npy directory -------------------------------------------------------------------
// Only a directory that holds nothing but an earlier export's files may be replaced: a
// typo such as --npy ~ must never delete anyone's files.
static bool is_export_file(const std::string& f) {
  if (f == "attention.npy" || f == "meta.json") return true;
  for (const char* c : kContribNpyFiles)
    if (f == c) return true;
  if (f.rfind("layer", 0) != 0 || f.size() < 10 || f.compare(f.size() - 4, 4, ".npy") != 0) return false;
  size_t i = 5;
  while (i < f.size() && std::isdigit(static_cast<unsigned char>(f[i]))) ++i;
  return i > 5 && f[i] == '.';
}

Status export_npy_dir(const std::string& dir_arg, const RunRecord& run) {
  const ForwardOutput& out = *run.out;
  const Batch& batch = *run.batch;
  if (batch.empty()) return Error{ErrorKind::InvalidArgument, "Nothing to export: the text has no tokens."};
  if (static_cast<int>(out.attn_in.size()) != out.L)
    return Error{ErrorKind::InvalidArgument, "The run did not keep the layer inputs (keep_layer_io); nothing was written."};
  // The largest file is built in memory once: attention.npy (L, B, Hw, T, T).
  const uint64_t attention_bytes = mul_sat(mul_sat(static_cast<uint64_t>(out.L) * out.B, static_cast<uint64_t>(out.Hw)),
                                           mul_sat(static_cast<uint64_t>(out.T), static_cast<uint64_t>(out.T) * 4));
  if (Status s = check_memory(attention_bytes + mul_sat(static_cast<uint64_t>(out.D), static_cast<uint64_t>(out.D) * 4),
                              "The .npy export", "use fewer or shorter sentences, or fewer layers or heads");
      !s)
    return s;

  // The target: absent, or a directory that holds an earlier export (symlinks followed).
  // Made absolute first: weakly_canonical leaves a bare relative name that does not exist
  // yet ("out", the dialog's "attention-npy") relative, and its parent path empty.
  if (dir_arg.empty()) return Error{ErrorKind::InvalidArgument, "Give the directory to export into."};
  std::error_code ec;
  const fs::path given = fs::absolute(fs::path(dir_arg), ec);
  if (ec) return Error{ErrorKind::Io, "Cannot export into " + dir_arg + ": " + ec.message() + "."};
  fs::path dir = fs::weakly_canonical(given, ec);
  if (ec || dir.filename().empty()) dir = given.lexically_normal();
  if (dir.filename().empty()) dir = dir.parent_path();
  const fs::file_status st = fs::status(dir, ec);
  const bool exists = fs::exists(st);
  if (exists && !fs::is_directory(st))
    return Error{ErrorKind::Io, "Cannot export into " + dir_arg + ": it exists and is not a directory; give a new or an export's directory."};
  if (exists)
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
      if (!is_export_file(it->path().filename().string()) || !it->is_regular_file())
        return Error{ErrorKind::Io, "Cannot export into " + dir_arg + ": it holds " + it->path().filename().string() +
                                        ", which an export does not write, and the export replaces the whole directory. "
                                        "Give a new directory, an empty one, or an earlier export's."};
  const fs::path parent = dir.parent_path();
  const std::string name = dir.filename().string();
  fs::create_directories(parent, ec);
  if (ec) return Error{ErrorKind::Io, "Cannot create the directory " + parent.string() + ": " + ec.message() + "."};
  sweep_stale_temps(parent.string(), name);

  // pass 1: a complete new directory beside the target, under a temporary name that
  // carries our pid (swept by a later export if this process dies).
  std::string tmpl = (parent / ("." + name + kTempMarker + std::to_string(::getpid()) + "-XXXXXX")).string();
  std::vector<char> tmpname(tmpl.begin(), tmpl.end());
  tmpname.push_back('\0');
  if (!mkdtemp(tmpname.data())) return io_error("Cannot create a directory in", parent.string());
  const fs::path staging(tmpname.data());
  mode_t mode = 0777 & ~current_umask();  // mkdtemp made it 0700
  if (struct stat ds {}; exists && ::stat(dir.c_str(), &ds) == 0) mode = ds.st_mode & 07777;
  ::chmod(staging.c_str(), mode);
  auto put = [&](const std::string& file, const std::string& bytes) -> Status {
    std::ofstream f(staging / file, std::ios::binary);
    f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    f.close();
    if (!f) return io_error("Cannot write", (dir / file).string());
    return Status();
  };
  auto fail = [&](const Status& s) {
    fs::remove_all(staging, ec);
    return s;
  };
  try {
    const int64_t B = out.B, T = out.T, D = out.D;
    if (Status s = put("attention.npy", npy_bytes(out.attention.data(), {out.L, B, out.Hw, T, T})); !s) return fail(s);
    for (int l = 0; l < out.L; ++l) {
      // W_K and W_V as the attention read them: (D, kv_heads·d_head) under grouped-query attention.
      const LayerWeights lw = kv_grouped(run.weights->layers[l], mha_options(run.cfg, *run.weights, l));
      const std::string p = "layer" + std::to_string(l) + ".";
      const MatR w_o = lw.w_o.plain();
      const std::pair<const char*, const MatR*> mats[] = {{"w_q", &lw.w_q}, {"w_k", &lw.w_k}, {"w_v", &lw.w_v}, {"w_o", &w_o}};
      const std::pair<const char*, const RowVec*> vecs[] = {{"b_q", &lw.b_q}, {"b_k", &lw.b_k}, {"b_v", &lw.b_v}, {"b_o", &lw.b_o}};
      if (Status s = put(p + "attn_in.npy", npy_bytes(out.attn_in[l].data(), {B, T, D})); !s) return fail(s);
      if (Status s = put(p + "attn_out.npy", npy_bytes(out.attn_out[l].data(), {B, T, D})); !s) return fail(s);
      for (auto& [n, m] : mats)
        if (Status s = put(p + n + ".npy", npy_bytes(m->data(), {m->rows(), m->cols()})); !s) return fail(s);
      for (auto& [n, v] : vecs)
        if (Status s = put(p + n + ".npy", npy_bytes(v->data(), {v->size()})); !s) return fail(s);
    }
    json meta;
    meta["tokens"] = tokens_json(batch);
    if (run.weights->trained()) meta["token_ids"] = token_ids_json(batch);
    meta["lengths"] = batch.lengths;
    encoder_json(batch, *run.weights, meta);
    meta["config"] = exported_config(run.cfg, *run.weights, batch);
    meta["weights_source"] = describe_source(*run.weights, run.cfg);
    meta["attention_shape"] = {out.L, B, out.Hw, T, T};
    meta["indices"] = "numbered from 0: layerN files and the L, B and H axes of attention.npy count from 0 (layer0 is the first layer)";
    meta["convention"] = "y = x @ W + b, W stored (D_in, D_out); attn_in is LN1(x), the exact input of attention";
    if (Status s = put("meta.json", meta.dump(2, ' ', false, json::error_handler_t::replace) + "\n"); !s) return fail(s);
  } catch (const std::bad_alloc&) {
    return fail(out_of_memory("exporting to " + dir_arg));
  }

  // pass 2: swap it in. A new target is a rename; an existing one is exchanged atomically
  // (renameat2 RENAME_EXCHANGE), and the old export, now under the temporary name, removed.
  if (!exists) {
    if (::rename(staging.c_str(), dir.c_str()) != 0) return fail(io_error("Cannot move the export into", dir_arg));
    return Status();
  }
  if (::renameat2(AT_FDCWD, staging.c_str(), AT_FDCWD, dir.c_str(), RENAME_EXCHANGE) != 0) {
    if (errno != EINVAL && errno != ENOSYS) return fail(io_error("Cannot replace", dir_arg));
    // No exchange on this file system: move the old one aside, then the new one in.
    const fs::path old = parent / ("." + name + kTempMarker + std::to_string(::getpid()) + "-old");
    if (::rename(dir.c_str(), old.c_str()) != 0) return fail(io_error("Cannot replace", dir_arg));
    if (::rename(staging.c_str(), dir.c_str()) != 0) {
      Error e = io_error("Cannot replace", dir_arg);
      (void)::rename(old.c_str(), dir.c_str());
      return fail(e);
    }
    fs::remove_all(old, ec);
    return Status();
  }
  fs::remove_all(staging, ec);  // the previous export
  return Status();
}

}  // namespace headmap
