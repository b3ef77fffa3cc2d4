#include "core/inspect/metrics.h"

#include <limits>
#include <string>
#include <unordered_map>

#include <algorithm>
#include <cmath>

#include <Eigen/Core>

#include "core/math/gemm.h"
#include "core/math/rng.h"

namespace headmap {

// The keys row t of a map under `mask` may weigh: [0, t] under a causal mask (the rest of the
// row is 0), else [0, len). Reading only those halves a causal map's cells; rounded up to 16
// (zeros, which change no sum, peak or count), so that no row ends in a scalar tail (with the
// tails the 1B shape's 512 maps at T = 128 took 4.2 ms against 4.9 reading every cell; without
// them 3.6-3.9 against 4.6).
static int row_keys(int t, int len, MaskKind mask) { return mask == MaskKind::Causal ? std::min((t + 16) / 16 * 16, len) : len; }

float map_peak(const float* w, int T, int len, MaskKind mask) {
  float mx = 0;
  for (int t = mask == MaskKind::Causal && len > 1 ? 1 : 0; t < len; ++t)
    mx = std::max(mx, Eigen::Map<const Eigen::ArrayXf>(w + static_cast<size_t>(t) * T, len).maxCoeff());  // vectorised (whole rows: the triangle alone measured slower)
  return mx;
}

HeadMetrics map_metrics(const float* w, int T, int len, MaskKind mask) {
  HeadMetrics m;
  double ent = 0, ent_norm = 0, prev = 0, first = 0, self = 0, mx = 0;
  int n_ent = 0, n_norm = 0, n_rows = 0;
  for (int t = 0; t < len; ++t) {
    // One row, in chunks that stay in L1 while four vectorised passes read them: sums in
    // float (Eigen's log), at most 2048 terms of [0, 1].
    const float* row = w + static_cast<size_t>(t) * T;
    const int keys = row_keys(t, len, mask);
    float sum = 0, rmax = 0, plogp = 0;
    int visible = 0;
    constexpr int kChunk = 512;
    for (int c0 = 0; c0 < keys; c0 += kChunk) {
      const Eigen::Map<const Eigen::ArrayXf> p(row + c0, std::min(kChunk, keys - c0));
      sum += p.sum();
      rmax = std::max(rmax, p.maxCoeff());
      // p log p, 0 at p = 0 (0 times log 1e-30); the tiny offset changes no weight above
      // 1e-23. (A select() here measured 8x slower.)
      plogp += (p * (p + 1e-30f).log()).sum();
      visible += static_cast<int>((p > 0.0f).count());
    }
    if (sum <= 0) continue;  // a row with no visible key
    const double h = -static_cast<double>(plogp);
    ent += h;
    ++n_ent;
    // Visible keys: count non-zero weights (a softmax never underflows to exactly 0 for
    // keys it may see unless the logit gap exceeds ~100, where log(n) hardly matters).
    if (visible >= 2) {
      ent_norm += h / std::log(static_cast<double>(visible));
      ++n_norm;
    }
    if (t >= 1) {
      prev += row[t - 1];
      first += row[0];
      self += row[t];
      mx += rmax;
      ++n_rows;
    }
  }
  if (n_ent) m.entropy = static_cast<float>(ent / n_ent);
  if (n_norm) m.entropy_norm = static_cast<float>(ent_norm / n_norm);
  if (n_rows) {
    m.prev_token = static_cast<float>(prev / n_rows);
    m.first_token = static_cast<float>(first / n_rows);
    m.self = static_cast<float>(self / n_rows);
    m.max_weight = static_cast<float>(mx / n_rows);
  }
  return m;
}

std::vector<HeadMetrics> head_metrics(const ForwardOutput& out, const Batch& batch, MaskKind mask) {
  const int maps = out.L * out.B * out.Hw;
  std::vector<HeadMetrics> m(static_cast<size_t>(maps));
  // Each sentence's added tokens after position 0 (an encoder's separators; a decoder's text
  // has none): the separator sink reads their columns only, not every cell of every map
  // (T^2 tests a map: 8 M a keystroke on the 1B shape's 512 maps at T = 128).
  std::vector<std::vector<int>> added(static_cast<size_t>(out.B));
  for (int b = 0; b < out.B; ++b)
    for (int k = 1; k < batch.lengths[b]; ++k)
      if (batch.sentences[b].tokens[static_cast<size_t>(k)].added) added[static_cast<size_t>(b)].push_back(k);
  // One map per thread: at T = 2048 a map is 4 M cells.
  const double cells = static_cast<double>(maps) * out.T * out.T;
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads_for(10.0 * cells))
  for (int i = 0; i < maps; ++i) {
    const int l = i / (out.B * out.Hw), b = (i / out.Hw) % out.B, h = i % out.Hw;
    HeadMetrics& hm = m[static_cast<size_t>(i)];
    const float* w = out.weights(l, b, h);  // (T, T)
    const int T = out.T, len = batch.lengths[b];
    hm = map_metrics(w, T, len, mask);
    // Encoders: the next token, and the separators after position 0 ([SEP], </s>).
    const std::vector<Token>& toks = batch.sentences[b].tokens;
    double next = 0, sink = 0;
    bool later_added = false;
    for (int t = 0; t < len; ++t) {
      if (t + 1 < len) next += w[static_cast<size_t>(t) * T + t + 1];
      for (const int k : added[static_cast<size_t>(b)]) sink += w[static_cast<size_t>(t) * T + k], later_added = true;
    }
    hm.first_is_cls = len > 1 && toks[0].added && later_added;  // [CLS] ... [SEP], <s> ... </s>
    hm.next_token = len > 1 ? static_cast<float>(next / (len - 1)) : 0.0f;
    hm.sep_sink = len > 0 ? static_cast<float>(sink / len) : 0.0f;
  }
  return m;
}

// Plain English words for the word-mode probe: any fixed list of distinct words will do.
static const char* const kProbeWords[] = {
    "apple", "river", "stone", "cloud", "pencil", "garden", "window", "silver", "orange", "planet",
    "forest", "candle", "bridge", "marble", "rocket", "violin", "tiger", "copper", "island", "lantern",
    "meadow", "button", "harbor", "jacket", "kettle", "ladder", "mirror", "needle", "pepper", "quartz",
    "saddle", "temple", "umbrella", "valley", "wagon", "yellow", "zebra", "anchor", "basket", "cactus",
    "dragon", "engine", "falcon", "glacier", "hammer", "igloo", "jungle", "koala", "lemon", "magnet"};

InductionProbe make_induction_probe(const ModelConfig& cfg, const ModelWeights& w, int n, uint64_t seed) {
  InductionProbe p;
  Rng rng(combine(seed, 0x1DC7));
  std::vector<std::string> pool;
  const TokenizerKind kind = effective_tokenizer(cfg, w);
  if (kind == TokenizerKind::Bpe) {
    // Whole words with their leading space (" river"): one token each, in both copies.
    for (int id = 0; id < w.bpe.size(); ++id) {
      const std::string& piece = w.bpe.token_bytes(id);
      if (piece.size() < 4 || piece[0] != ' ') continue;
      if (std::all_of(piece.begin() + 1, piece.end(), [](char c) { return (c >= 'a' && c <= 'z'); })) pool.push_back(piece);
    }
  } else if (kind == TokenizerKind::Char) {
    for (char c = 'a'; c <= 'z'; ++c) pool.emplace_back(1, c);
  } else {
    pool.assign(std::begin(kProbeWords), std::end(kProbeWords));
  }
  if (pool.empty()) pool.assign(std::begin(kProbeWords), std::end(kProbeWords));
  n = std::max(2, std::min(n, cfg.context / 2));
  std::vector<std::string> seq;
  // Distinct tokens where the pool allows, so each query's earlier match is unique.
  std::vector<int> order(pool.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int>(i);
  for (size_t i = order.size(); i > 1; --i) std::swap(order[i - 1], order[rng.below(static_cast<int>(i))]);
  for (int i = 0; i < n; ++i) seq.push_back(pool[order[i % order.size()]]);
  const bool bpe_pool = kind == TokenizerKind::Bpe && !pool.empty() && pool[0][0] == ' ';
  const std::string sep = kind == TokenizerKind::Char || bpe_pool ? "" : " ";
  std::string once;
  for (int i = 0; i < n; ++i) once += (i ? sep : "") + seq[i];
  p.text = once + sep + once;
  p.n = n;
  return p;
}

float induction_score_of_map(const float* w, int T, int n) {
  double s = 0;
  int count = 0;
  for (int t = n; t < 2 * n && t < T; ++t) {
    s += w[static_cast<size_t>(t) * T + (t - n + 1)];
    ++count;
  }
  return count ? static_cast<float>(s / count) : 0.0f;
}

// For each position t that ends a repeated run of kInductionRun tokens (tokens t-2, t-1, t
// occurred before in that order, ending at j, with j + 1 < t), that j, its most recent such
// occurrence; else -1. One pass with a hash map of the runs seen so far.
static std::vector<int> previous_occurrence(const std::vector<Token>& tokens, int len) {
  std::vector<int> prev(static_cast<size_t>(len), -1);
  std::vector<std::string> key(static_cast<size_t>(len));  // token (id and text)
  for (int t = 0; t < len; ++t) key[static_cast<size_t>(t)] = std::to_string(tokens[static_cast<size_t>(t)].id) + '\x1f' + tokens[static_cast<size_t>(t)].text;
  std::unordered_map<std::string, int> last;  // run of kInductionRun tokens -> latest position it ended at
  for (int t = kInductionRun - 1; t < len; ++t) {
    std::string run;
    for (int k = kInductionRun - 1; k >= 0; --k) run += key[static_cast<size_t>(t - k)] + '\x1e';
    auto [it, inserted] = last.try_emplace(std::move(run), t);
    if (!inserted) {
      if (it->second + 1 < t) prev[static_cast<size_t>(t)] = it->second;
      it->second = t;
    }
  }
  return prev;
}

static float repeat_induction_with(const float* w, int T, const std::vector<int>& prev) {
  double s = 0;
  int count = 0;
  for (int t = 2; t < static_cast<int>(prev.size()); ++t) {
    const int j = prev[static_cast<size_t>(t)];
    if (j >= 0 && j + 1 < t) {
      s += w[static_cast<size_t>(t) * T + (j + 1)];
      ++count;
    }
  }
  return count ? static_cast<float>(s / count) : std::numeric_limits<float>::quiet_NaN();
}

float repeat_induction_of_map(const float* w, int T, const std::vector<Token>& tokens) {
  return repeat_induction_with(w, T, previous_occurrence(tokens, std::min(T, static_cast<int>(tokens.size()))));
}

std::vector<float> text_induction_scores(const ForwardOutput& out, const Batch& batch) {
  std::vector<float> r(static_cast<size_t>(out.L) * out.B * out.Hw);
  for (int b = 0; b < out.B; ++b) {
    const std::vector<Token>& tokens = batch.sentences[static_cast<size_t>(b)].tokens;
    const std::vector<int> prev = previous_occurrence(tokens, std::min(out.T, static_cast<int>(tokens.size())));
    for (int l = 0; l < out.L; ++l)
      for (int h = 0; h < out.Hw; ++h)
        r[(static_cast<size_t>(l) * out.B + b) * out.Hw + h] = repeat_induction_with(out.weights(l, b, h), out.T, prev);
  }
  return r;
}

float label_induction(float probe, float text_induction) {
  if (std::isnan(text_induction) || probe < kLabelThresholds.induction_probe_agrees) return probe;
  return std::max(probe, text_induction);
}

std::vector<float> induction_scores(const ModelWeights& w, const ModelConfig& cfg_in, const InductionProbe& probe) {
  ModelConfig cfg = cfg_in;
  cfg.pitfalls.head_averaged = false;  // per-head scores
  cfg.context = std::max(cfg.context, std::min(2 * probe.n, kMaxContext));
  if (w.trained()) cfg.context = std::min(cfg.context, w.context);
  const Batch batch = make_batch({probe.text}, cfg, w);
  ForwardOptions fo;
  fo.skip_final_mlp = true;  // only the maps are read
  Result<ForwardOutput> r = forward(w, cfg, batch, fo);
  if (!r || batch.empty()) return {};
  const ForwardOutput& out = *r;
  // The tokenizer may split a probe word; score only if the probe is exactly 2n tokens.
  const int n = batch.lengths[0] == 2 * probe.n ? probe.n : batch.lengths[0] / 2;
  std::vector<float> scores(static_cast<size_t>(out.L) * out.H);
  for (int l = 0; l < out.L; ++l)
    for (int h = 0; h < out.H; ++h) scores[static_cast<size_t>(l) * out.H + h] = induction_score_of_map(out.weights(l, 0, h), out.T, n);
  return scores;
}

const HeadMetricInfo& head_metric_info(HeadMetric m) {
  static const HeadMetricInfo kInfo[] = {
      {"entropy", "entropy", "-sum_s w log w in nats, the mean over the real rows that see a key (row 0 of a causal map too, at 0)"},
      {"entropy_norm", "entropy / maximum", "the entropy over log(n), n the keys a row may see (rows with n >= 2): 1 uniform, 0 one key"},
      {"prev_token", "previous-token", "the mean weight w[t, t-1] on the token just before, over the rows t >= 1"},
      {"first_token", "first-token", "the mean weight w[t, 0] on the first token, over the rows t >= 1"},
      {"self", "self", "the mean weight w[t, t] on the query's own token, over the rows t >= 1"},
      {"max_weight", "peak weight", "the mean of each row's largest weight, over the rows t >= 1"},
      {"next_token", "next-token", "the mean weight w[t, t+1] on the token after (0 under a causal mask)"},
      {"sep_sink", "[SEP] sink", "the mean weight on the separators the template added after position 0"},
      {"induction", "induction score (probe)",
       "on a probe of n random tokens said twice, the mean weight w[t, t-n+1] of the second copy's queries on the token that followed "
       "the query's token the first time"},
      {"text_induction", "induction on this text",
       "where this text repeats a run of 3 tokens, the mean weight on the token that followed the run's earlier occurrence"},
      {"detector_previous_token", "previous-token pattern share", "sum(A * P) / sum(A) over the cells the mask shows, P the cells (t, t-1)"},
      {"detector_duplicate_token", "duplicate-token pattern share",
       "sum(A * P) / sum(A) over the cells the mask shows, P the cells (t, s) with s an earlier copy of token t"},
      {"detector_induction", "induction pattern share",
       "sum(A * P) / sum(A) over the cells the mask shows, P the cells (t, s + 1) with s an earlier copy of token t (TransformerLens's "
       "head detector, on this text; not the probe's induction score)"},
      {"detector_first_token", "first-token pattern share", "sum(A * P) / sum(A) over the cells the mask shows, P the cells (t, 0)"},
      {"detector_painted", "painted pattern share", "sum(A * P) / sum(A) over the cells the mask shows, P the cells painted"},
      {"mean_distance", "mean attention distance", "sum_s w[t, s] |t - s| in tokens, the mean over the rows t >= 1 of the real tokens"},
  };
  static_assert(sizeof kInfo / sizeof kInfo[0] == static_cast<size_t>(HeadMetric::Count), "one entry per HeadMetric");
  const size_t i = static_cast<size_t>(m);
  return kInfo[i < static_cast<size_t>(HeadMetric::Count) ? i : 0];
}

const char* head_label_name(HeadLabel l) {
  switch (l) {
    case HeadLabel::None: return "";
    case HeadLabel::PreviousToken: return "previous-token";
    case HeadLabel::FirstToken: return "first-token";
    case HeadLabel::Self: return "self";
    case HeadLabel::Induction: return "induction";
    case HeadLabel::Broad: return "broad";
    case HeadLabel::NextToken: return "next-token";
    case HeadLabel::SepSink: return "[SEP] sink";
    case HeadLabel::ClsSink: return "[CLS] sink";
  }
  return "";
}

HeadLabel head_label(const HeadMetrics& m, float induction) {
  const LabelThresholds& th = kLabelThresholds;
  struct Cand {
    HeadLabel label;
    float margin;
  };
  const Cand cands[] = {
      {HeadLabel::Induction, induction - th.induction},
      {HeadLabel::PreviousToken, m.prev_token - th.prev_token},
      {HeadLabel::FirstToken, m.first_token - th.first_token},
      {HeadLabel::Self, m.self - th.self},
      {HeadLabel::Broad, m.entropy_norm - th.broad},
      {HeadLabel::NextToken, m.next_token - th.next_token},
      {HeadLabel::SepSink, m.sep_sink - th.sep_sink},
  };
  HeadLabel best = HeadLabel::None;
  float best_margin = 0.0f;
  for (const Cand& c : cands)
    if (c.margin >= 0.0f && (best == HeadLabel::None || c.margin > best_margin)) {
      best = c.label;
      best_margin = c.margin;
    }
  return best == HeadLabel::FirstToken && m.first_is_cls ? HeadLabel::ClsSink : best;
}

}  // namespace headmap
