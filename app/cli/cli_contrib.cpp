// cli_contrib.cpp: headmap-cli's "what heads contribute" options (core/inspect/contrib.h):
// --attribute, --value-weighted, --rollout, --detectors, --patch-from and --logit-lens
// (core/inspect/logit_lens.h). Their results are
// added to the --json document under "contrib", written as .npy files into the --npy
// directory, and printed as tables when neither is asked for.
//
// B = batch, T = tokens, H = heads, L = layers
#include "app/cli/cli_contrib.h"

#include <cstdio>
#include <nlohmann/json.hpp>

#include "core/inspect/circuits.h"
#include "core/inspect/corpus_search.h"
#include "core/inspect/contrib.h"
#include "core/inspect/head_overview.h"
#include "core/inspect/logit_lens.h"
#include "core/inspect/offset_profile.h"
#include "core/inspect/predictions.h"
#include "core/io/file_io.h"
#include "core/io/views_json.h"
#include "core/io/npy.h"
#include "core/text/hf_tokenizer.h"

namespace headmap {

// Each option's help, one line apiece (one table, so the calls below stay one line each).
constexpr const char* kAttributeHelp =
    "trained models: direct logit attribution of TOKEN@POS (or the difference A-B@POS) to every head, the embeddings, each MLP and the "
    "biases, with the completeness check (an encoder: its masked-LM head's logit at POS, a [MASK], through every LayerNorm frozen); "
    "TOKEN is one token of the model's tokenizer (a leading space or \xC2\xB7 for a word's start, e.g. \"\xC2\xB7parrots@13\") or #ID; "
    "POS counts from 0, negative from the end (-1 = the last token); sentence --batch";
constexpr const char* kValueWeightedHelp =
    "value-weighted maps ||alpha_ij f(x_j)|| with f(x) = (x W_V + b_V) W_O of the head, and a sink score per head (weight on token 0 "
    "minus its value-weighted share)";
constexpr const char* kRolloutHelp = "attention rollout: (A + I) row-normalised, multiplied over layers, head-averaged";
constexpr const char* kDetectorsHelp =
    "head detector scores sum(A*P)/sum(A) (TransformerLens) for previous-token (the key at i-1, on an encoder too), duplicate-token, "
    "induction and first-token patterns";
constexpr const char* kPatchFromHelp =
    "activation patching: the --text sentence is the corrupted run, this one the clean run (same token count); each head's output taken "
    "from the clean run, the normalised recovery of the --attribute A-B difference";

constexpr const char* kLogitLensHelp =
    "trained models: the logit lens, the stream after the embeddings and after each layer's attention and MLP read through the final "
    "norm and the unembedding (an encoder: its masked-LM head); each cell's top tokens and the probability of TARGET: final (what the "
    "model finally predicts there) or text (the token that really comes next; an encoder: the token there); sentence --batch";

constexpr const char* kHeadOverviewHelp =
    "every head at once: entropy, first-token weight (sink), mean attention distance, previous-token, self and the detector shares "
    "per head; the heads' pattern similarity (cosine), a 2-D layout of the heads by it (classical MDS), and the pairs that nearly "
    "coincide; sentence --batch";

constexpr const char* kOffsetProfileHelp =
    "how each head's attention falls off with distance: the mean weight at each offset t - s over the query rows t >= 1; and, on a "
    "rotary family, each RoPE frequency pair's share of the head's scores (attention-weighted |q_i k_i| by pair, and the unrotated "
    "dimensions), with the pairs' wavelengths in tokens; sentence --batch";

constexpr const char* kCompositionHelp =
    "from the weights alone: the Q, K and V composition scores (TransformerLens) of every earlier head into every later one, "
    "||W_OV^A X^B||_F / (||W_OV^A||_F ||X^B||_F) with X = W_QK^B, its transpose, or W_OV^B, each layer's input norm gain folded in";
constexpr const char* kCircuitHelp =
    "trained models: head L.H's circuits from the weights alone: its OV circuit E W_V W_O U^T and QK circuit E W_Q W_K^T E^T over the "
    "text's tokens and its directions' tokens, its copying score (the full OV circuit's sum(eigenvalues) / sum(|eigenvalues|)), its "
    "top singular directions read in the vocabulary, the learned positions' own QK where the family has them, and every earlier "
    "head's Q, K and V composition into it";

constexpr const char* kCorpusHelp =
    "a UTF-8 text file, one context a line (at most 4 MiB and 100000 lines): runs the model over every line and lists where "
    "--corpus-head fires: per query row its largest --corpus-stat on a key past the first token, the --corpus-top largest over the file";
constexpr const char* kCorpusStatHelp =
    "with --corpus: what the examples are ranked by: weight (the attention weight a[t,s], the default) or value_norm (the "
    "value-weighted norm a[t,s] ||(x_s W_V + b_V) W_O||, Kobayashi et al. 2020)";

void add_contrib_options(CLI::App& app, ContribOptions& o) {
  app.add_flag("--composition", o.composition, kCompositionHelp);
  app.add_option("--circuit", o.circuit, kCircuitHelp);
  app.add_option("--corpus", o.corpus, kCorpusHelp);
  app.add_option("--corpus-head", o.corpus_head, "with --corpus: the head searched, as LAYER.HEAD (e.g. 1.1)");
  app.add_option("--corpus-top", o.corpus_top, "with --corpus: how many examples (1 to 1000, default 10)");
  app.add_option("--corpus-stat", o.corpus_stat, kCorpusStatHelp)->check(CLI::IsMember({"weight", "value_norm"}));
  app.add_flag("--offset-profile", o.offset_profile, kOffsetProfileHelp);
  app.add_flag("--head-overview", o.head_overview, kHeadOverviewHelp);
  app.add_option("--logit-lens", o.logit_lens, kLogitLensHelp)->check(CLI::IsMember({"final", "text"}));
  app.add_option("--lens-top-k", o.lens_top_k, "with --logit-lens: the top tokens kept per cell (1 to 50, default 5)");
  app.add_option("--attribute", o.attribute, kAttributeHelp);
  app.add_flag("--value-weighted", o.value_weighted, kValueWeightedHelp);
  app.add_flag("--rollout", o.rollout, kRolloutHelp);
  app.add_flag("--detectors", o.detectors, kDetectorsHelp);
  app.add_option("--patch-from", o.patch_from, kPatchFromHelp);
  app.add_option("--patch-position", o.patch_position, "with --patch-from: patch this position only (default: every position)");
}

bool contrib_requested(const ContribOptions& o) {
  return !o.attribute.empty() || o.value_weighted || o.rollout || o.detectors || !o.patch_from.empty() || !o.logit_lens.empty() || o.head_overview ||
         o.offset_profile || o.composition || !o.circuit.empty() || !o.corpus.empty();
}

namespace {
Error bad(std::string m) { return Error{ErrorKind::InvalidArgument, std::move(m)}; }

// An option's head as LAYER.HEAD ("1.3"): {layer, head}, in range or not (the caller checks).
Result<std::pair<int, int>> parse_head(const char* option, const std::string& v) {
  int layer = -1, head = -1;
  char tail = 0;
  if (std::sscanf(v.c_str(), "%d.%d%c", &layer, &head, &tail) != 2)
    return bad(std::string(option) + " takes a head as LAYER.HEAD (e.g. 1.3), got \"" + v + "\".");
  return std::pair{layer, head};
}

// One token of the model's vocabulary: "#ID", or text that the tokenizer makes one token of.
Result<int> token_id(const ModelWeights& w, std::string text) {
  if (text.size() > 1 && text[0] == '#') {
    try {
      size_t used = 0;
      const int id = std::stoi(text.substr(1), &used);
      if (used + 1 == text.size() && id >= 0 && id < w.vocab_size()) return id;
    } catch (const std::exception&) {
    }
    return bad("--attribute: " + text + " is not a vocabulary id of this model (0 to " + std::to_string(w.vocab_size() - 1) + ").");
  }
  if (text.rfind("\xC2\xB7", 0) == 0) text = " " + text.substr(2);  // the chips' dot for a word's leading space
  // The model's own tokenizer (a Hugging Face directory's tokenizer.json), else its BPE.
  const TokenizedText tt = w.hf_tokenizer ? tokenize(text, 64, *w.hf_tokenizer) : tokenize(text, TokenizerKind::Bpe, 64, &w.bpe);
  if (tt.tokens.size() != 1 || tt.tokens[0].id < 0)
    return bad("--attribute: \"" + text + "\" is " + std::to_string(tt.tokens.size()) +
               " tokens for this model's tokenizer, not one: give a single token (see --top-k), or #ID.");
  return tt.tokens[0].id;
}

// "A@POS" or "A-B@POS" for sentence b.
Result<LogitTarget> parse_target(const ModelWeights& w, const std::string& spec, int len) {
  const size_t at = spec.rfind('@');
  if (at == std::string::npos || at == 0) return bad("--attribute needs TOKEN@POS or A-B@POS, e.g. \"\xC2\xB7parrots@13\".");
  int pos = 0;
  try {
    size_t used = 0;
    pos = std::stoi(spec.substr(at + 1), &used);
    if (used + at + 1 != spec.size()) throw std::invalid_argument("pos");
  } catch (const std::exception&) {
    return bad("--attribute: the position after @ must be a number (0 is the first token, -1 the last).");
  }
  if (pos < 0) pos += len;
  if (pos < 0 || pos >= len) return bad("--attribute: position " + spec.substr(at + 1) + " is outside the sentence's " + std::to_string(len) + " tokens.");
  const std::string tokens = spec.substr(0, at);
  LogitTarget t;
  t.position = pos;
  const size_t dash = tokens.find('-', 1);
  Result<int> a = token_id(w, dash != std::string::npos && dash + 1 < tokens.size() ? tokens.substr(0, dash) : tokens);
  if (!a) return a.error();
  t.token_a = *a;
  if (dash != std::string::npos && dash + 1 < tokens.size()) {
    Result<int> b = token_id(w, tokens.substr(dash + 1));
    if (!b) return b.error();
    t.token_b = *b;
  }
  return t;
}

std::string token_text(const ModelWeights& w, int id) { return token_name(w, id); }

void print_grid(const char* title, const std::vector<float>& v, int L, int H) {
  std::printf("%s (rows: layers 0..%d, columns: heads 0..%d)\n", title, L - 1, H - 1);
  for (int l = 0; l < L; ++l) {
    std::printf("  layer %d:", l);
    for (int h = 0; h < H; ++h) std::printf(" %9.4f", v[static_cast<size_t>(l) * H + h]);
    std::printf("\n");
  }
}
}  // namespace

Status run_contrib(const ContribOptions& o, const ModelWeights& w, const ModelConfig& cfg, const Batch& batch, const ForwardOutput& out,
                   int b, const std::string& json_path, const std::string& npy_dir) {
  if (!contrib_requested(o)) return Status();
  if (b < 0 || b >= batch.B()) return bad("--batch " + std::to_string(b) + ": the text has " + std::to_string(batch.B()) + " sentences.");
  if (!o.patch_from.empty() && o.attribute.empty())
    return bad("--patch-from measures a logit difference: give it with --attribute A-B@POS.");
  const int len = batch.lengths[b], L = out.L, H = out.H, T = batch.T;
  const bool print = json_path.empty() && npy_dir.empty();
  nlohmann::json c;
  c["sentence"] = b;
  std::vector<std::pair<std::string, std::string>> npys;  // (file name, bytes)
  auto npy = [&](const std::string& name, const std::vector<float>& v, const Shape& shape) { npys.emplace_back(name, npy_bytes(v.data(), shape)); };

  Result<StreamParts> parts = Error{ErrorKind::InvalidArgument, ""};
  if (!o.attribute.empty() || o.value_weighted) {
    parts = stream_parts(w, cfg, batch, b);
    if (!parts) return parts.error();
  }
  if (!o.attribute.empty()) {
    if (!w.trained()) return bad("--attribute needs trained weights: random init has no vocabulary to predict.");
    Result<LogitTarget> target = parse_target(w, o.attribute, len);
    if (!target) return target.error();
    Result<Attribution> a = direct_attribution(w, *parts, *target);
    if (!a) return a.error();
    nlohmann::json j;
    j["position"] = a->target.position;
    j["token_a"] = {{"id", a->target.token_a}, {"text", token_text(w, a->target.token_a)}};
    if (a->target.token_b >= 0) j["token_b"] = {{"id", a->target.token_b}, {"text", token_text(w, a->target.token_b)}};
    j["logit"] = a->logit;              // attributed: the pre-cap logit when the model soft-caps its logits
    j["model_logit"] = a->model_logit;  // the model's own, after any soft-cap
    j["softcap"] = a->softcap;
    const bool post_norm = !a->norm_bias.empty();  // BERT, RoBERTa, DistilBERT: every LayerNorm's scale frozen
    j["final_norm"] = post_norm ? "post-norm LayerNorms and the masked-LM head" : w.arch.norm == NormKind::RMSNorm ? "RMSNorm" : "LayerNorm";
    j["parts_sum"] = a->parts_sum;
    j["centring"] = a->centring;
    j["completeness_error"] = a->completeness_error;
    j["sigma"] = a->sigma;
    j["embeddings"] = a->embeddings;
    j["final_bias"] = a->final_bias;
    j["heads"] = grid_json(a->heads, L, H);
    j["attn_bias"] = a->attn_bias;
    j["mlps"] = a->mlps;
    if (post_norm) j["norm_bias"] = a->norm_bias;  // (L) each layer's LN1 and LN2 betas, carried on
    nlohmann::json rank = nlohmann::json::array();
    for (const auto& [l, h] : a->ranking()) rank.push_back({l, h});
    j["ranking"] = rank;
    c["attribution"] = j;
    npy(kContribNpyFiles[0], a->heads, {L, H});
    if (print) {
      std::printf("direct logit attribution at position %d: %slogit %.4f = parts %.4f (centring term %.4f included), error %.2g\n",
                  a->target.position, a->softcap > 0 ? "pre-cap " : "", a->logit, a->parts_sum, a->centring, a->completeness_error);
      if (a->softcap > 0) std::printf("  the model's logit after its soft-cap %.4g: %.4f\n", a->softcap, a->model_logit);
      print_grid("heads", a->heads, L, H);
      std::printf("  embeddings %.4f, %s %.4f\n", a->embeddings, post_norm ? "the masked-LM head's biases" : "final norm bias", a->final_bias);
      for (int l = 0; l < L; ++l) {
        std::printf("  layer %d: MLP %.4f, b_O %.4f", l, a->mlps[l], a->attn_bias[l]);
        if (post_norm) std::printf(", LayerNorm betas %.4f", a->norm_bias[l]);
        std::printf("\n");
      }
    }
  }
  if (o.value_weighted) {
    const ValueWeighted vw = value_weighted(w, cfg, *parts, len);
    nlohmann::json j;
    j["sink"] = grid_json(vw.sink, L, H);
    j["first_attention"] = grid_json(vw.first_attention, L, H);
    j["first_value"] = grid_json(vw.first_value, L, H);
    nlohmann::json maps = nlohmann::json::array();  // (L, H, len, len)
    for (int l = 0; l < L; ++l) {
      nlohmann::json layer = nlohmann::json::array();
      for (int h = 0; h < H; ++h) {
        std::vector<float> m(static_cast<size_t>(len) * len);
        for (int i = 0; i < len; ++i)
          for (int k = 0; k < len; ++k) m[static_cast<size_t>(i) * len + k] = vw.map(l, h)[static_cast<size_t>(i) * len + k];
        layer.push_back(grid_json(m, len, len));
      }
      maps.push_back(std::move(layer));
    }
    j["maps"] = std::move(maps);
    c["value_weighted"] = j;
    npy(kContribNpyFiles[1], vw.maps, {L, H, len, len});
    npy(kContribNpyFiles[2], vw.value_norm, {L, H, len});
    if (print) print_grid("sink score: weight on token 0 minus its value-weighted share", vw.sink, L, H);
  }
  if (o.rollout) {
    std::vector<float> all;  // (L, len, len): rollout through layers 0..l
    nlohmann::json maps = nlohmann::json::array();
    for (int l = 0; l < L; ++l) {
      const std::vector<float> r = rollout(out, batch, b, l);  // (T, T)
      std::vector<float> m(static_cast<size_t>(len) * len);
      for (int i = 0; i < len; ++i)
        for (int k = 0; k < len; ++k) m[static_cast<size_t>(i) * len + k] = r[static_cast<size_t>(i) * T + k];
      maps.push_back(grid_json(m, len, len));
      all.insert(all.end(), m.begin(), m.end());
    }
    c["rollout"] = {{"maps", std::move(maps)}};
    npy(kContribNpyFiles[3], all, {L, len, len});
    if (print) {
      std::printf("rollout through all %d layers, last token's row:", L);
      for (int k = 0; k < len; ++k) std::printf(" %.3f", all[(static_cast<size_t>(L - 1) * len + len - 1) * len + k]);
      std::printf("\n");
    }
  }
  if (o.detectors) {
    nlohmann::json j, defs;
    std::vector<float> all;
    for (Detector d : {Detector::PreviousToken, Detector::DuplicateToken, Detector::Induction, Detector::FirstToken}) {
      const std::vector<float> s = detector_scores(out, batch, b, mask_kind(cfg), d);
      const HeadMetricInfo& m = head_metric_info(detector_metric(d));  // the name the app's Detectors tab shows
      j[detector_name(d)] = grid_json(s, L, out.Hw);
      defs[detector_name(d)] = {{"key", m.key}, {"name", m.name}, {"definition", m.definition}};
      all.insert(all.end(), s.begin(), s.end());
      if (print) print_grid((std::string(m.name) + " (" + m.key + "): " + m.definition).c_str(), s, L, out.Hw);
    }
    j["definitions"] = defs;
    c["detectors"] = j;
    npy(kContribNpyFiles[4], all, {4, L, out.Hw});
  }
  if (!o.patch_from.empty()) {
    const Batch clean = make_batch({o.patch_from}, cfg, w);
    Result<LogitTarget> target = parse_target(w, o.attribute, len);
    if (!target) return target.error();
    // The corrupted run is sentence b of the text.
    Batch one;
    one.tokenizer = batch.tokenizer;
    one.sentences.push_back(batch.sentences[b]);
    one.lengths.push_back(len);
    one.source_line.push_back(0);
    one.T = len;
    Result<PatchResult> r = patch_heads(w, cfg, clean, one, *target, o.patch_position, {}, {});
    if (!r) return r.error();
    nlohmann::json j;
    j["clean_text"] = o.patch_from;
    nlohmann::json ids = nlohmann::json::array();
    for (const Token& t : clean.sentences[0].tokens) ids.push_back(t.id);
    j["clean_token_ids"] = ids;
    j["position"] = r->position;
    j["clean"] = r->clean;
    j["corrupted"] = r->corrupted;
    j["patched"] = grid_json(r->patched, L, H);
    j["recovery"] = grid_json(r->recovery, L, H);
    c["patching"] = j;
    npy(kContribNpyFiles[5], r->recovery, {L, H});
    if (print) {
      std::printf("activation patching: clean difference %.4f, corrupted %.4f\n", r->clean, r->corrupted);
      print_grid("normalised recovery, (patched - corrupted) / (clean - corrupted)", r->recovery, L, H);
    }
  }

  if (!o.logit_lens.empty()) {
    Result<LogitLens> r = logit_lens(w, cfg, batch, b, o.logit_lens == "text" ? LensTarget::Text : LensTarget::Final, o.lens_top_k);
    if (!r) return r.error();
    const LogitLens& lens = *r;
    const int P = lens.points();
    c["logit_lens"] = logit_lens_json(lens, w);
    npy(kContribNpyFiles[6], lens.target_probs, {P, lens.T});
    npy(kContribNpyFiles[7], lens.top_probs, {P, lens.T, lens.K});
    if (print) {
      std::printf("logit lens (target: %s): each cell the top token and the target's probability\n", lens_target_name(lens.target));
      for (int p = 0; p < P; ++p) {
        std::printf("  %-8s", LogitLens::point_name(p).c_str());
        for (int t = 0; t < lens.T; ++t) std::printf(" %12.12s %.2f", token_text(w, lens.top_id(p, t)).c_str(), lens.target_prob(p, t));
        std::printf("\n");
      }
    }
  }

  if (o.head_overview) {
    const HeadOverview ov = head_overview(out, batch, b, mask_kind(cfg));
    const int N = ov.L * ov.Hw;
    c["head_overview"] = head_overview_json(ov);
    npy(kContribNpyFiles[8], ov.similarity, {N, N});
    npy(kContribNpyFiles[9], ov.layout, {N, 2});
    if (print) {
      for (size_t i = 0; i < ov.stat_keys.size(); ++i) {
        const HeadMetricInfo& m = head_metric_info(ov.stat_keys[i]);
        print_grid((std::string(m.name) + " (" + m.key + "): " + m.definition).c_str(), ov.stats[i], ov.L, ov.Hw);
      }
      std::printf("heads whose patterns nearly coincide (cosine >= %.2f):", kNearDuplicate);
      for (const auto& [n, m] : ov.near_duplicates) std::printf(" %d.%d~%d.%d (%.3f)", n / ov.Hw, n % ov.Hw, m / ov.Hw, m % ov.Hw, ov.sim(n, m));
      std::printf(ov.near_duplicates.empty() ? " none\n" : "\n");
    }
  }

  if (o.offset_profile) {
    const OffsetProfile p = offset_profile(w, cfg, out, batch, b);
    c["offset_profile"] = offset_profile_json(p);
    npy(kContribNpyFiles[10], p.by_offset, {p.L, p.Hw, p.offsets()});
    if (p.H > 0) npy(kContribNpyFiles[11], p.freq_share, {p.L, p.H, p.P + 1});
    if (print) {
      std::printf("offset profile: the mean attention weight at each offset t - s (rows t >= 1)%s\n", p.causal ? ", d >= 0 (causal)" : "");
      for (int l = 0; l < p.L; ++l)
        for (int h = 0; h < p.Hw; ++h) {
          std::printf("  L%d H%d", l, h);
          for (int d = p.causal ? 0 : 1 - p.len; d < p.len; ++d) std::printf(" %d:%.3f", d, p.at(l, h, d));
          std::printf("\n");
        }
      if (p.H == 0) {
        std::printf("frequency profile: none: %s\n", p.no_frequencies.c_str());
      } else {
        std::printf("frequency profile: each RoPE pair's share of a head's scores (wavelength in tokens), then the unrotated dims\n");
        for (int l = 0; l < p.L; ++l) {
          std::printf("  L%d wavelengths", l);
          for (int i = 0; i < p.pairs[static_cast<size_t>(l)]; ++i) std::printf(" %.1f", p.wavelength[static_cast<size_t>(l) * p.P + i]);
          std::printf(p.pairs[static_cast<size_t>(l)] == 0 ? " (no RoPE in this layer)\n" : "\n");
          for (int h = 0; h < p.H; ++h) {
            std::printf("  L%d H%d", l, h);
            for (int i = 0; i <= p.P; ++i) std::printf(" %.3f", p.share(l, h, i));
            std::printf("\n");
          }
        }
      }
    }
  }

  if (o.composition) {
    const Composition comp = composition_scores(w, cfg);
    c["composition"] = composition_json(comp);
    if (print)
      for (const auto& [name, m] : {std::pair{"Q", &comp.q}, std::pair{"K", &comp.k}, std::pair{"V", &comp.v}}) {
        std::printf("%s-composition: row = the reading head, column = the earlier head writing\n", name);
        const int N = comp.L * comp.H;
        for (int b = comp.H; b < N; ++b) {
          std::printf("  %d.%d", b / comp.H, b % comp.H);
          for (int a = 0; a < (b / comp.H) * comp.H; ++a) std::printf(" %.3f", comp.at(*m, b, a));
          std::printf("\n");
        }
      }
  }

  if (!o.circuit.empty()) {
    Result<std::pair<int, int>> lh = parse_head("--circuit", o.circuit);
    if (!lh) return lh.error();
    const auto [layer, head] = *lh;
    std::vector<int> ids;
    for (const Token& t : batch.sentences[static_cast<size_t>(b)].tokens) ids.push_back(t.id);
    Result<HeadCircuit> hc = head_circuit(w, cfg, layer, head, ids);
    if (!hc) return hc.error();
    c["circuit"] = head_circuit_json(*hc, w);
    Result<CompositionRow> into = composition_into(w, cfg, layer, head);
    if (!into) return into.error();
    c["circuit_composition"] = composition_row_json(*into);
    if (print) {
      std::printf("head %d.%d: copying score %.4f (the full OV circuit's sum(eigenvalues) / sum(|eigenvalues|))\n", layer, head, hc->copying);
      for (const HeadCircuit::Direction& d : hc->directions) {
        std::printf("  direction sigma %.4f reads", d.sigma);
        for (int id : d.reads) std::printf(" %s", token_text(w, id).c_str());
        std::printf(" -> writes");
        for (int id : d.writes) std::printf(" %s", token_text(w, id).c_str());
        std::printf("\n");
      }
    }
  }

  if (!o.corpus.empty()) {  // read only now: the person named this file
    if (o.corpus_head.empty()) return bad("--corpus needs --corpus-head LAYER.HEAD: the head searched.");
    Result<std::pair<int, int>> lh = parse_head("--corpus-head", o.corpus_head);
    if (!lh) return lh.error();
    Result<CorpusStat> stat = parse_corpus_stat(o.corpus_stat);
    if (!stat) return stat.error();
    Result<std::vector<std::string>> lines = read_corpus(o.corpus);
    if (!lines) return lines.error();
    Result<CorpusSearch> cs = corpus_search(w, cfg, *lines, lh->first, lh->second, o.corpus_top, *stat);
    if (!cs) return cs.error();
    c["corpus_search"] = corpus_search_json(*cs, *lines, w);
    if (print) {
      std::printf("corpus search: head %d.%d over %d lines (%d query rows): its largest %ss past the first token\n", cs->layer, cs->head,
                  cs->lines, cs->rows, corpus_stat_label(cs->stat));
      for (const CorpusHit& h : cs->hits)
        std::printf("  %.4f line %d: %s -> %s\n", h.score, h.line + 1, token_text(w, h.token_ids[static_cast<size_t>(h.query)]).c_str(),
                    token_text(w, h.token_ids[static_cast<size_t>(h.key)]).c_str());
    }
  }

  if (!json_path.empty()) {  // the run's document, with "contrib" added
    Result<std::string> text = read_file(json_path);
    if (!text) return text.error();
    nlohmann::json doc = nlohmann::json::parse(*text, nullptr, false);
    if (doc.is_discarded() || !doc.is_object()) return Error{ErrorKind::BadFormat, "The --json document just written could not be read back."};
    doc["contrib"] = std::move(c);
    if (Status s = write_file_atomic(json_path, doc.dump(2) + "\n"); !s) return s;
  }
  if (!npy_dir.empty())
    for (const auto& [name, bytes] : npys)
      if (Status s = write_file_atomic(npy_dir + "/" + name, bytes); !s) return s;
  return Status();
}

}  // namespace headmap
