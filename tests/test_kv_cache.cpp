// The incremental forward (core/model/kv_cache.h) against a full recompute: random edit
// sequences (append, delete, replace the last tokens, replace in the middle) on two
// families, the shipped GPT-2-style model and a tiny Llama-style model (RMSNorm, RoPE,
// GQA 4 query heads on 2 K/V heads, SiLU-gated MLP, untied logits), every map, the layer
// inputs and outputs, the logits and the loss to 1e-6; which rows were reused; the requests
// that must recompute in full; and the memory budget.
//
// B = 1, T = tokens, D = d_model, H = heads, KV = K/V heads, dh = d_head, F = MLP width, V = vocab
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <functional>
#include <thread>
#include <cstdlib>
#include <cstring>
#include <deque>

#include "core/inspect/passport.h"
#include "core/inspect/predictions.h"
#include "core/io/checkpoint.h"
#include "core/math/gemm.h"
#include "core/math/rng.h"
#include "core/model/kv_cache.h"
#include "core/model/stage_times.h"
#include "core/model/model.h"
#include "family_fixtures.h"
#include "test_util.h"

using namespace headmap;
using namespace headmap::test;

namespace {

using test::kShippedDefault;

// One random edit of ids, as typing makes them: k = 1-3 tokens appended (up to tmax), the last
// k deleted (at least 2 left), the last k rewritten (a BPE merge), or one in the middle.
void random_edit(std::vector<int>& ids, Rng& rng, const std::function<int()>& id, int tmax) {
  const int n = static_cast<int>(ids.size()), k = 1 + static_cast<int>(rng.next() % 3);
  switch (rng.next() % 4) {
    case 0: for (int i = 0; i < k && static_cast<int>(ids.size()) < tmax; ++i) ids.push_back(id()); break;  // typing at the end
    case 1: ids.resize(static_cast<size_t>(std::max(2, n - k))); break;                                  // deleting the last ones
    case 2: for (int i = std::max(0, n - k); i < n; ++i) ids[static_cast<size_t>(i)] = id(); break;      // a BPE merge rewrites the last
    default: ids[static_cast<size_t>(rng.next() % static_cast<uint64_t>(n))] = id(); break;          // an edit in the middle
  }
}

// A trained-kind Llama-style model in memory: RMSNorm, RoPE, SiLU gate, untied, F = 48,
// L = 2, V = 50, of the shape asked for (by default D = 32, H = 4 on KV = 2, dh = 8).
struct TinyLlama {
  int D = 32, H = 4, KV = 2, dh = 8;
  uint64_t seed = 500, emb_seed = 90;  // the layers' normals, then the two tables' (emb_seed, + 1)
  int context = 128;
};
ModelWeights tiny_llama(const TinyLlama& s) {
  const int F = 48, L = 2, V = 50;
  Arch a;
  a.family = "llama";
  a.name = "Llama";
  a.norm = NormKind::RMSNorm;
  a.norm_eps = 1e-6f;
  a.positions = PositionKind::Rotary;
  a.rope_theta = 500.0f;
  a.attn_bias = false;
  a.out_bias = false;
  a.mlp = MlpKind::SiluGated;
  a.mlp_bias = false;
  a.tied = false;
  ModelWeights w = family_model(a, s.D, s.H, s.KV, s.dh, F, L, s.seed);
  w.tok_emb = normals(s.emb_seed, V, s.D, 0.5f);
  w.lm_head = normals(s.emb_seed + 1, V, s.D, 0.5f);
  w.lnf_g = RowVec::Ones(s.D);
  w.lnf_b = RowVec::Zero(s.D);
  w.context = s.context;
  w.source.kind = WeightsSource::Kind::Pretrained;
  return w;
}
ModelWeights tiny_llama(int dh = 8) {
  TinyLlama s;
  s.dh = dh;
  return tiny_llama(s);
}
// tiny_llama(64) with a 320-token context (past 128 tokens and past the cache's room), and its config.
struct LongLlama {
  ModelWeights w;
  ModelConfig cfg;
};
LongLlama long_llama() {
  LongLlama m{tiny_llama(64), {}};
  m.w.context = 320;
  ModelConfig c;
  c.tokenizer = TokenizerKind::Bpe;
  c.context = 320;
  m.cfg = config_for_weights(m.w, c);
  return m;
}

// The largest difference relative to the largest magnitude (at least 1): float32 carries
// about 7 digits, and the residual stream and the logits reach tens, where a GEMM that
// sums in another order over fewer rows differs in the last bits.
double max_diff(const Eigen::Ref<const MatR>& a, const Eigen::Ref<const MatR>& b) {
  EXPECT_EQ(a.rows(), b.rows());
  EXPECT_EQ(a.cols(), b.cols());
  if (a.rows() != b.rows() || a.cols() != b.cols()) return 1e9;
  if (a.size() == 0) return 0.0;
  return static_cast<double>((a - b).cwiseAbs().maxCoeff()) / std::max(1.0, static_cast<double>(b.cwiseAbs().maxCoeff()));
}

// Every output the app reads, the incremental forward against the full one: the maps (in
// [0, 1]) and the loss to 1e-6, the tensors to 1e-6 of their largest magnitude.
void expect_same(const ForwardOutput& inc, const ForwardOutput& full, const std::string& what) {
  ASSERT_EQ(inc.attention.size(), full.attention.size()) << what;
  double maps = 0;
  for (size_t i = 0; i < full.attention.size(); ++i) maps = std::max(maps, static_cast<double>(std::abs(inc.attention[i] - full.attention[i])));
  EXPECT_LE(maps, 1e-6) << what << ": maps";
  ASSERT_EQ(inc.attn_in.size(), full.attn_in.size()) << what;
  for (size_t l = 0; l < full.attn_in.size(); ++l) {
    EXPECT_LE(max_diff(inc.attn_in[l], full.attn_in[l]), 1e-6) << what << ": attn_in " << l;
    EXPECT_LE(max_diff(inc.attn_out[l], full.attn_out[l]), 1e-6) << what << ": attn_out " << l;
  }
  EXPECT_LE(max_diff(inc.out, full.out), 1e-6) << what << ": out";
  EXPECT_LE(max_diff(inc.logits, full.logits), 1e-6) << what << ": logits";
  EXPECT_NEAR(inc.loss, full.loss, 1e-6) << what << ": loss";
  EXPECT_EQ(inc.loss_tokens, full.loss_tokens) << what;
  EXPECT_EQ(inc.no_key_rows, full.no_key_rows) << what;
}

int common_prefix(const std::vector<int>& a, const std::vector<int>& b) {
  size_t p = 0;
  while (p < a.size() && p < b.size() && a[p] == b[p]) ++p;
  return static_cast<int>(p);
}

// Random edits on ids; each request through the cache and in full.
// start: the first text's tokens (long ones cross the attention's 64-token fill rule).
void random_edits(const ModelWeights& w, const ModelConfig& cfg, uint64_t seed, int steps, int start) {
  Rng rng(seed);
  const int V = w.vocab_size(), Tmax = std::min(cfg.context, start + 30);
  auto id = [&] { return static_cast<int>(rng.next() % static_cast<uint64_t>(V)); };
  std::vector<int> ids, prev;
  for (int i = 0; i < start; ++i) ids.push_back(id());
  KvCache cache;
  int reused_total = 0;
  for (int step = 0; step < steps; ++step) {
    ForwardOptions opt;
    opt.keep_layer_io = true;
    opt.want_logits = true;
    opt.skip_final_mlp = true;
    ForwardOptions inc_opt = opt;
    inc_opt.kv_cache = &cache;
    const Batch batch = id_batch({ids});
    Result<ForwardOutput> inc = forward(w, cfg, batch, inc_opt);
    Result<ForwardOutput> full = forward(w, cfg, batch, opt);
    ASSERT_TRUE(inc && full);
    const std::string what = "step " + std::to_string(step) + " T=" + std::to_string(ids.size());
    expect_same(*inc, *full, what);
    const int want = step == 0 ? 0 : std::min(common_prefix(prev, ids), static_cast<int>(ids.size()) - 1);
    EXPECT_EQ(inc->kv_reused, want) << what;
    EXPECT_EQ(inc->kv_reused + inc->kv_computed, static_cast<int>(ids.size())) << what;
    EXPECT_EQ(full->kv_reused + full->kv_computed, 0) << what;
    EXPECT_EQ(cache.T(), static_cast<int>(ids.size()));
    reused_total += inc->kv_reused;
    prev = ids;
    // The next edit.
    random_edit(ids, rng, id, Tmax);
  }
  EXPECT_GT(reused_total, steps) << "the edits should mostly reuse rows";
}

}  // namespace

TEST(KvCache, RandomEditsMatchAFullRecomputeOnTheShippedModel) {
  Result<ModelWeights> w = load_checkpoint(kShippedDefault);
  ASSERT_TRUE(w) << w.error().message;
  const ModelConfig cfg = config_of(*w, TokenizerKind::Bpe);
  random_edits(*w, cfg, 11, 40, 12);
  random_edits(*w, cfg, 13, 20, std::min(60, cfg.context - 10));
  ModelConfig gqa = cfg;  // K/V heads by the config: W_K and W_V narrowed (kv_grouped) on the way
  gqa.num_kv_heads = 2;
  random_edits(*w, gqa, 15, 20, 12);
}

TEST(KvCache, RandomEditsMatchAFullRecomputeOnALlamaWithGqaAndRope) {
  const ModelWeights w = tiny_llama();
  const ModelConfig cfg = config_of(w, TokenizerKind::Bpe);
  ASSERT_EQ(cfg.kv_heads(), 2);
  ASSERT_EQ(cfg.num_heads, 4);
  random_edits(w, cfg, 12, 40, 12);
  random_edits(w, cfg, 14, 20, 60);
}

// ForwardOptions::next_tokens_k: the cache keeps each row's k most likely next tokens, not its
// (T, V) logits (next_tokens.h). Through random edits (appends, deletions, the last tokens
// rewritten, edits in the middle), against the same requests through a cache that keeps the
// logits: the loss, each sentence's loss and every row's top-k tokens and probabilities are
// the same bit for bit (the kept row before the new ones has a new target token: its
// cross-entropy is computed again from its row, recomputed from the kept stream), no logits
// are kept, and the loss is the full forward's to 1e-6.
TEST(KvCache, NextTokensKeptInPlaceOfTheLogitsGiveTheSameLossAndPredictionsBitForBit) {
  const ModelWeights w = tiny_llama();
  const ModelConfig cfg = config_of(w, TokenizerKind::Bpe);
  constexpr int kKept = 7;
  Rng rng(21);
  const int V = w.vocab_size();
  auto id = [&] { return static_cast<int>(rng.next() % static_cast<uint64_t>(V)); };
  std::vector<int> ids;
  for (int i = 0; i < 12; ++i) ids.push_back(id());
  KvCache with_logits, with_next;
  int edits_under_kept_rows = 0, prev_T = 0;
  for (int step = 0; step < 50; ++step) {
    ForwardOptions opt;
    opt.keep_layer_io = true;
    opt.want_logits = true;
    opt.skip_final_mlp = true;
    ForwardOptions a = opt, b = opt;
    a.kv_cache = &with_logits;
    b.kv_cache = &with_next;
    b.next_tokens_k = kKept;
    const Batch batch = id_batch({ids});
    Result<ForwardOutput> logits = forward(w, cfg, batch, a), next = forward(w, cfg, batch, b), full = forward(w, cfg, batch, opt);
    ASSERT_TRUE(logits && next && full);
    const int T = static_cast<int>(ids.size());
    const std::string what = "step " + std::to_string(step) + " T=" + std::to_string(T);
    EXPECT_EQ(next->logits.size(), 0) << what;
    ASSERT_EQ(next->next.rows(), T) << what;
    EXPECT_EQ(next->kv_reused, logits->kv_reused) << what;
    if (next->kv_reused > 0 && next->kv_reused < prev_T) ++edits_under_kept_rows;  // a kept row's next token changed
    prev_T = T;
    EXPECT_EQ(next->loss, logits->loss) << what;
    EXPECT_EQ(next->loss_tokens, logits->loss_tokens) << what;
    EXPECT_NEAR(next->loss, full->loss, 1e-6) << what;
    EXPECT_EQ(sentence_losses(*next, batch), sentence_losses(*logits, batch)) << what;
    for (int t = 0; t < T; ++t)
      for (int k : {1, 5, kKept}) {
        const std::vector<NextToken> x = top_k_next(w, *next, 0, t, k), y = top_k_next(w, *logits, 0, t, k);
        ASSERT_EQ(x.size(), y.size()) << what << " row " << t;
        for (size_t i = 0; i < x.size(); ++i) {
          EXPECT_EQ(x[i].id, y[i].id) << what << " row " << t << " rank " << i;
          EXPECT_EQ(x[i].prob, y[i].prob) << what << " row " << t << " rank " << i;
        }
      }
    EXPECT_EQ(top_k_next(w, *next, 0, T - 1, kKept + 3).size(), static_cast<size_t>(kKept)) << "at most the tokens kept";
    random_edit(ids, rng, id, 40);
  }
  EXPECT_GT(edits_under_kept_rows, 5) << "the edits should rewrite kept rows' targets";
  EXPECT_LT(with_next.bytes(), with_logits.bytes()) << "no (T, V) logits kept";
}

// ForwardOptions::defer_next_tokens: a typing pass leaves its logits stage out (the app shows
// the maps first), and finish_next_tokens computes the rows pending from the cache afterwards,
// or the next pass does with its own when it comes first. Through random edits, deferred on
// random steps and finished on some of them, against the same requests never deferred: every
// row's kept next tokens and the loss are the same bit for bit, whenever they are computed.
TEST(KvCache, DeferredNextTokensComeLaterTheSameBitForBit) {
  const ModelWeights w = tiny_llama();
  const ModelConfig cfg = config_of(w, TokenizerKind::Bpe);
  constexpr int kKept = 7;
  Rng rng(33);
  const int V = w.vocab_size();
  auto id = [&] { return static_cast<int>(rng.next() % static_cast<uint64_t>(V)); };
  std::vector<int> ids;
  for (int i = 0; i < 30; ++i) ids.push_back(id());  // over kLateRows: a finish can stop between blocks
  KvCache now, later;
  int deferred = 0, finished = 0, left_pending = 0, cancelled = 0;
  bool pending = false;
  auto same = [](const NextTokenRows& a, const NextTokenRows& b) { return a.k == b.k && a.ids == b.ids && a.logits == b.logits && a.max == b.max && a.sum == b.sum; };
  for (int step = 0; step < 60; ++step) {
    ForwardOptions opt;
    opt.keep_layer_io = true;
    opt.want_logits = true;
    opt.skip_final_mlp = true;
    opt.next_tokens_k = kKept;
    ForwardOptions a = opt, b = opt;
    a.kv_cache = &now;
    b.kv_cache = &later;
    b.defer_next_tokens = step == 0 || rng.next() % 2 == 0;
    const Batch batch = id_batch({ids});
    Result<ForwardOutput> x = forward(w, cfg, batch, a), y = forward(w, cfg, batch, b);
    ASSERT_TRUE(x && y);
    const std::string what = "step " + std::to_string(step) + " T=" + std::to_string(ids.size());
    EXPECT_EQ(x->attention, y->attention) << what;
    if (pending && b.defer_next_tokens) ++left_pending;  // rows a deferred pass left are pending still
    if (b.defer_next_tokens) {
      ++deferred;
      EXPECT_TRUE(y->next_pending) << what;
      EXPECT_EQ(y->loss_tokens, 0) << what;
      pending = true;
      if (later.next_done + kLateRows < static_cast<int>(ids.size()) && (step == 0 || rng.next() % 2 == 0)) {  // a keystroke came after one block of rows
        int asked = 0;
        LateNextTokens late;
        EXPECT_FALSE(finish_next_tokens(w, later, &late, [&] { return asked++ > 0; })) << what;
        EXPECT_LT(later.next_done, static_cast<int>(ids.size())) << what;
        ++cancelled;
      } else if (rng.next() % 2 == 0) {  // the app: no newer keystroke waits
        LateNextTokens late;
        ASSERT_TRUE(finish_next_tokens(w, later, &late)) << what;
        ++finished;
        pending = false;
        EXPECT_TRUE(same(late.next, x->next)) << what;
        EXPECT_EQ(late.loss, x->loss) << what;
        EXPECT_EQ(late.loss_tokens, x->loss_tokens) << what;
        EXPECT_EQ(later.next_done, static_cast<int>(ids.size())) << what;
        LateNextTokens again;
        ASSERT_TRUE(finish_next_tokens(w, later, &again, [] { return true; })) << what << ": nothing pending, nothing to cancel";
        EXPECT_TRUE(same(again.next, x->next)) << what;
        EXPECT_EQ(again.loss, x->loss) << what;
      }
    } else {
      pending = false;
      EXPECT_FALSE(y->next_pending) << what;
      EXPECT_TRUE(same(y->next, x->next)) << what;  // the rows a deferred pass left, computed with this one's
      EXPECT_EQ(y->loss, x->loss) << what;
      EXPECT_EQ(y->loss_tokens, x->loss_tokens) << what;
    }
    random_edit(ids, rng, id, 60);
  }
  EXPECT_GT(deferred, 15);
  EXPECT_GT(finished, 5);
  EXPECT_GT(left_pending, 3) << "deferred passes in a row, their rows pending together";
  EXPECT_GE(cancelled, 2) << "finishing cancelled after a block of rows";
}

// Past the per-head size where the full forward once switched to Eigen's GEMM (T x T x dh =
// 2^20 multiply-adds: T >= 128 at dh = 64, the Llama-3.2-1B shape; its rows then rounded
// otherwise than a row computed alone, 4.7e-6 on the maps), and past the 256 tokens where
// causal attention runs in blocks of 128 queries: one token appended after a prefix equals
// the full recompute in every bit of every map, of each layer's input and output, and of the
// logits (the per-head products are one fused chain per value in both).
TEST(KvCache, AnAppendedTokenPastTheSmallKernelEqualsAFullRecomputeBitForBit) {
  const LongLlama m = long_llama();
  const ModelWeights& w = m.w;
  const ModelConfig& cfg = m.cfg;
  ASSERT_EQ(cfg.head_dim, 64);
  Rng rng(2026);
  std::vector<int> ids;
  for (int i = 0; i < 300; ++i) ids.push_back(static_cast<int>(rng.next() % 50));
  auto same_bits = [](const float* a, const float* b, size_t n) { return std::memcmp(a, b, n * sizeof(float)) == 0; };
  for (int T : {140, 300}) {
    ForwardOptions opt;
    opt.keep_layer_io = true;
    opt.want_logits = true;
    KvCache cache;
    ForwardOptions inc_opt = opt;
    inc_opt.kv_cache = &cache;
    const std::vector<int> head(ids.begin(), ids.begin() + T - 1), whole(ids.begin(), ids.begin() + T);
    ASSERT_TRUE(forward(w, cfg, id_batch({head}), inc_opt));
    Result<ForwardOutput> inc = forward(w, cfg, id_batch({whole}), inc_opt);
    Result<ForwardOutput> full = forward(w, cfg, id_batch({whole}), opt);
    ASSERT_TRUE(inc && full);
    ASSERT_EQ(inc->kv_computed, 1) << "T=" << T;
    ASSERT_EQ(inc->attention.size(), full->attention.size());
    EXPECT_TRUE(same_bits(inc->attention.data(), full->attention.data(), full->attention.size())) << "T=" << T << ": maps";
    for (size_t l = 0; l < full->attn_out.size(); ++l) {
      EXPECT_TRUE(same_bits(inc->attn_in[l].data(), full->attn_in[l].data(), static_cast<size_t>(full->attn_in[l].size()))) << "T=" << T << " attn_in " << l;
      EXPECT_TRUE(same_bits(inc->attn_out[l].data(), full->attn_out[l].data(), static_cast<size_t>(full->attn_out[l].size()))) << "T=" << T << " attn_out " << l;
    }
    ASSERT_EQ(inc->logits.size(), full->logits.size());
    EXPECT_TRUE(same_bits(inc->logits.data(), full->logits.data(), static_cast<size_t>(full->logits.size()))) << "T=" << T << ": logits";
  }
}

// An append's memory-bound steps run on the team once their bytes are worth it (GPT-2 small's
// 12 heads of 129 kept keys and values, 0.8 MB a layer, and its 0.8 MB of kept map rows a
// layer): the heads and the kept rows split across two threads, each row still one thread's,
// must give the full recompute's maps, layer rows and logits bit for bit, at lengths where
// one thread would do (T = 20) and where the team does (T = 250: 2.6 MFLOP-worth, threads_for).
TEST(KvCache, AnAppendWhoseHeadsAndKeptRowsSplitOverTheTeamEqualsAFullRecomputeBitForBit) {
  const int threads = compute_threads();
  set_compute_threads(2);
  const ModelWeights w = tiny_llama(TinyLlama{64, 8, 4, 64, 501, 92, 256});  // H·dh = 512 != D
  ModelConfig c;
  c.tokenizer = TokenizerKind::Bpe;
  c.context = 256;
  const ModelConfig cfg = config_for_weights(w, c);
  Rng rng(404);
  std::vector<int> ids;
  for (int i = 0; i < 250; ++i) ids.push_back(static_cast<int>(rng.next() % static_cast<uint64_t>(w.vocab_size())));
  auto same_bits = [](const float* x, const float* y, size_t n) { return std::memcmp(x, y, n * sizeof(float)) == 0; };
  for (int T : {20, 250}) {
    ForwardOptions opt;
    opt.keep_layer_io = true;
    opt.want_logits = true;
    KvCache cache;
    ForwardOptions inc_opt = opt;
    inc_opt.kv_cache = &cache;
    const std::vector<int> head(ids.begin(), ids.begin() + T - 1), whole(ids.begin(), ids.begin() + T);
    for (int round = 0; round < 4; ++round) {  // both ways of the products' split (SplitTiming), twice each
      ASSERT_TRUE(forward(w, cfg, id_batch({head}), inc_opt));
      Result<ForwardOutput> inc = forward(w, cfg, id_batch({whole}), inc_opt);
      Result<ForwardOutput> full = forward(w, cfg, id_batch({whole}), opt);
      ASSERT_TRUE(inc && full);
      ASSERT_EQ(inc->kv_computed, 1) << "T=" << T;
      ASSERT_EQ(inc->attention.size(), full->attention.size());
      EXPECT_TRUE(same_bits(inc->attention.data(), full->attention.data(), full->attention.size())) << "T=" << T << " round " << round << ": maps";
      for (size_t l = 0; l < full->attn_out.size(); ++l)
        EXPECT_TRUE(same_bits(inc->attn_out[l].data(), full->attn_out[l].data(), static_cast<size_t>(full->attn_out[l].size())))
            << "T=" << T << " round " << round << " attn_out " << l;
      ASSERT_EQ(inc->logits.size(), full->logits.size());
      EXPECT_TRUE(same_bits(inc->logits.data(), full->logits.data(), static_cast<size_t>(full->logits.size()))) << "T=" << T << " round " << round << ": logits";
    }
  }
  set_compute_threads(threads);
}

// An append of 1-3 rows runs both ways its weights can be streamed (one thread, the team),
// each three times (kKept), keeps the faster and retries the other every 16th append; one or
// two disturbed tries do not decide; each way equals a full recompute.
TEST(KvCache, AppendsAreTimedBothWaysAndEachEqualsAFullRecompute) {
  KvCache::SplitTiming t;
  EXPECT_FALSE(t.choose()) << "first, one thread";
  t.record(false, 10.0);
  EXPECT_TRUE(t.choose()) << "then the team";
  t.record(true, 250.0);  // disturbed: another process had the second core for this try
  EXPECT_FALSE(t.choose()) << "each way three times";
  t.record(false, 11.0);
  EXPECT_TRUE(t.choose()) << "each way three times";
  t.record(true, 240.0);  // disturbed again (the app drawing its first result)
  EXPECT_FALSE(t.choose()) << "each way three times";
  t.record(false, 12.0);
  EXPECT_TRUE(t.choose()) << "each way three times, even when the team lost twice";
  t.record(true, 5.0);
  EXPECT_EQ(t.ms[1], 5.0) << "the least of the team's tries";
  int team = 0;
  for (int i = 0; i < 32; ++i) team += t.choose();
  EXPECT_EQ(team, 30) << "the faster way (the team), the other every 16th append";
  t.record(true, 250.0);  // one disturbed team append among its last three
  EXPECT_TRUE(t.choose()) << "one slow try does not decide";
  t.record(true, 40.0);  // the machine got busy: the team is slower three times running
  t.record(true, 40.0);
  EXPECT_LT(t.ms[0], t.ms[1]);
  EXPECT_FALSE(t.choose()) << "then one thread";

  const ModelWeights w = tiny_llama();
  ModelConfig c;
  c.tokenizer = TokenizerKind::Bpe;
  const ModelConfig cfg = config_for_weights(w, c);
  std::vector<int> ids;
  Rng rng(77);
  for (int i = 0; i < 30; ++i) ids.push_back(static_cast<int>(rng.next() % 50));
  ForwardOptions opt;
  opt.want_logits = true;
  KvCache cache;
  ForwardOptions inc_opt = opt;
  inc_opt.kv_cache = &cache;
  for (int T = 20; T <= 30; ++T) {
    const std::vector<int> text(ids.begin(), ids.begin() + T);
    Result<ForwardOutput> inc = forward(w, cfg, id_batch({text}), inc_opt);
    Result<ForwardOutput> full = forward(w, cfg, id_batch({text}), opt);
    ASSERT_TRUE(inc && full);
    ASSERT_EQ(inc->attention.size(), full->attention.size());
    for (size_t i = 0; i < full->attention.size(); ++i) ASSERT_NEAR(inc->attention[i], full->attention[i], 1e-6) << "T=" << T;
  }
  EXPECT_GE(cache.split.tries[0], 1) << "one thread timed";
  EXPECT_GE(cache.split.tries[1], 1) << "the team timed";
  EXPECT_EQ(cache.split.tries[0] + cache.split.tries[1], 10) << "every one-token append timed (the first forward is full)";
}

// The split is judged by the products it decides (FewRowSplit::products_ms), not by the pass
// around them: an edit under a held output's rows copies them, and with the whole pass timed
// that copy, taken as the team's one try, kept the 1B shape's appends on one thread. Here the
// pass's other work is a 25 ms wait at every cancel check (a dozen a pass), against
// the tiny model's products of a few microseconds.
TEST(KvCache, TheSplitIsTimedOnTheProductsItDecidesNotOnThePassAroundThem) {
  const ModelWeights w = tiny_llama();
  ModelConfig c;
  c.tokenizer = TokenizerKind::Bpe;
  const ModelConfig cfg = config_for_weights(w, c);
  std::vector<int> ids;
  Rng rng(78);
  for (int i = 0; i < 12; ++i) ids.push_back(static_cast<int>(rng.next() % 50));
  KvCache cache;
  ForwardOptions opt;
  opt.want_logits = true;
  opt.keep_layer_io = true;
  opt.kv_cache = &cache;
  Result<ForwardOutput> prefix = forward(w, cfg, id_batch({std::vector<int>(ids.begin(), ids.end() - 2)}), opt);
  ASSERT_TRUE(prefix);
  int waits = 0;
  opt.cancelled = [&] {
    ++waits;
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
    return false;
  };
  Result<ForwardOutput> one = forward(w, cfg, id_batch({std::vector<int>(ids.begin(), ids.end() - 1)}), opt);  // one thread
  Result<ForwardOutput> team = forward(w, cfg, id_batch({ids}), opt);                                           // the team
  ASSERT_TRUE(one && team);
  ASSERT_EQ(cache.split.tries[0], 1);
  ASSERT_EQ(cache.split.tries[1], 1);
  EXPECT_GE(waits, 8) << "the passes' other work";
  EXPECT_GT(cache.split.ms[0], 0.0) << "one thread's products timed";
  EXPECT_GT(cache.split.ms[1], 0.0) << "the team's products timed";
  EXPECT_LT(cache.split.ms[0], 25.0) << "one thread: only the products, not the pass's " << waits * 25 << " ms of waits";
  EXPECT_LT(cache.split.ms[1], 25.0) << "the team: only the products";
}

// A pitfall, an ablation, causal off, another config or another model recompute in full and
// leave the cache as it was; the last cacheable request is still reused afterwards.
TEST(KvCache, OtherRequestsRecomputeInFullAndKeepTheCache) {
  const ModelWeights w = tiny_llama();
  const ModelConfig cfg = config_of(w, TokenizerKind::Bpe);
  KvCache cache;
  ForwardOptions opt;
  opt.want_logits = true;
  opt.kv_cache = &cache;
  std::vector<int> ids = {3, 1, 4, 1, 5, 9, 2, 6};
  ASSERT_TRUE(forward(w, cfg, id_batch({ids}), opt));
  EXPECT_EQ(cache.computed, 8);
  ids.push_back(7);
  const Batch next = id_batch({ids});

  std::vector<uint8_t> ablate(static_cast<size_t>(cfg.num_layers * cfg.num_heads), 0);
  ablate[1] = 1;
  ForwardOptions ab = opt;
  ab.ablate = &ablate;
  ModelConfig pit = cfg;
  pit.pitfalls.scale_by_d_model = true;
  ModelConfig bidir = cfg;
  bidir.causal = false;
  ModelConfig shorter = cfg;
  shorter.context = 32;
  auto in_full = [&](const char* what, const Result<ForwardOutput>& r) {
    ASSERT_TRUE(r) << what;
    EXPECT_EQ(r->kv_reused + r->kv_computed, 0) << what << " must run in full, without the cache";
    EXPECT_EQ(cache.T(), 8) << what << " must leave the cache as it was";
  };
  in_full("ablation", forward(w, cfg, next, ab));
  in_full("pitfall", forward(w, pit, next, opt));
  in_full("causal off", forward(w, bidir, next, opt));
  // Another config of the same model: computed in full, and then it is the cached request.
  Result<ForwardOutput> other = forward(w, shorter, next, opt);
  ASSERT_TRUE(other);
  EXPECT_EQ(other->kv_reused, 0);
  EXPECT_EQ(other->kv_computed, 9);
  Result<ForwardOutput> back = forward(w, cfg, next, opt);
  ASSERT_TRUE(back);
  EXPECT_EQ(back->kv_reused, 0) << "the cache now holds the other config's rows";
  ids.push_back(8);
  Result<ForwardOutput> typed = forward(w, cfg, id_batch({ids}), opt);
  ASSERT_TRUE(typed);
  EXPECT_EQ(typed->kv_reused, 9);
  EXPECT_EQ(typed->kv_computed, 1);
  // Another model at another address: in full.
  const ModelWeights w2 = tiny_llama();
  Result<ForwardOutput> m2 = forward(w2, cfg, id_batch({ids}), opt);
  ASSERT_TRUE(m2);
  EXPECT_EQ(m2->kv_reused, 0);
}

// The cache's bytes count against the memory budget: when they do not fit, the forward runs
// in full (the same result), keeps nothing and says why.
TEST(KvCache, ACacheOverTheMemoryBudgetIsNotKept) {
  const ModelWeights w = tiny_llama();
  const ModelConfig cfg = config_of(w, TokenizerKind::Bpe);
  const Batch batch = id_batch({{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}});
  ForwardOptions opt;
  opt.want_logits = true;
  opt.keep_layer_io = true;
  const uint64_t need = kv_cache_bytes(w, cfg, 10, opt);
  // maps L·H·(T + room)²·4; K, V 2·L·KV·dh·4, layer io 2·L·D·4, out D·4 and logits V·4 per token and
  // per token of room; nll 8 per token.
  const uint64_t rows = 10 + kKvMapsRoom;
  EXPECT_EQ(need, rows * (2 * 2 * 2 * 8 * 4) + 2u * 4 * rows * rows * 4 + rows * 2 * 2 * 32 * 4 + rows * 32 * 4 + rows * 50 * 4 + 10u * 8);
  KvCache cache;
  opt.kv_cache = &cache;
  ASSERT_TRUE(forward(w, cfg, batch, opt));
  EXPECT_LE(cache.bytes(), need);
  EXPECT_GE(cache.bytes(), need - 100);
  ::setenv("HEADMAP_MEMORY_BUDGET", std::to_string(need / 2).c_str(), 1);
  Result<ForwardOutput> small = forward(w, cfg, batch, opt);
  ::unsetenv("HEADMAP_MEMORY_BUDGET");
  ASSERT_TRUE(small);
  EXPECT_EQ(small->kv_reused + small->kv_computed, 0);
  EXPECT_EQ(cache.T(), 0);
  EXPECT_NE(cache.note.find("memory budget"), std::string::npos) << cache.note;
}

// The passport's K/V cache line, for every model: bytes per token and for the context, and
// what grouped-query attention saves.
TEST(KvCache, PassportShowsTheCacheAndTheGqaSaving) {
  ModelConfig cfg;
  cfg.d_model = 256;
  cfg.num_heads = 32;
  cfg.num_kv_heads = 8;
  cfg.num_layers = 2;
  cfg.context = 128;
  const Passport gqa = make_passport(cfg, 1, 10);
  const int64_t per_token = 2 * 2 * 8 * 8 * 4;  // 2·L·KV·d_head·4, d_head = 256/32
  EXPECT_EQ(gqa.kv_cache_bytes_per_token, per_token);
  EXPECT_EQ(kv_bytes_per_token(cfg), static_cast<uint64_t>(per_token));
  EXPECT_NE(gqa.kv_cache_line.find(human_count(per_token) + " bytes per token, " + human_count(per_token * 128) + " for 128 tokens"),
            std::string::npos) << gqa.kv_cache_line;
  EXPECT_NE(gqa.kv_cache_line.find("8 K/V heads instead of 32: 4x smaller cache"), std::string::npos) << gqa.kv_cache_line;
  cfg.num_kv_heads = 0;
  const Passport mha = make_passport(cfg, 1, 10);
  EXPECT_EQ(mha.kv_cache_bytes_per_token, 4 * per_token);
  EXPECT_NE(mha.kv_cache_line.find("own K/V head"), std::string::npos) << mha.kv_cache_line;
}

// The benchmarks' per-stage timers (stage_times.h) observe and change nothing: a forward with
// them on gives the same bits as without, full and incremental, and each stage the pass runs
// is counted (the per-head stages on whichever threads ran the heads).
namespace {

// Every float of a ForwardOutput's buffers, capacity included, set to NaN: what a reused
// buffer holds from its last pass must not show through.
void poison(ForwardOutput& o) {
  const float nan = std::nanf("");
  const size_t n = o.attention.size();
  o.attention.assign(o.attention.capacity(), nan);
  o.attention.resize(n);
  // The blocks it holds alone (a view of a K/V cache's rows is not its to write).
  auto poison_rows = [nan](SharedRows& rows) {
    MatR m = rows.take();
    m.setConstant(nan);
    rows = SharedRows(std::move(m));
  };
  for (std::vector<SharedRows>* v : {&o.attn_in, &o.attn_out})
    for (SharedRows& m : *v) poison_rows(m);
  o.out.setConstant(nan);
  poison_rows(o.logits);
}

void expect_bits(const ForwardOutput& a, const ForwardOutput& b, const std::string& what) {
  auto same = [](const Eigen::Ref<const MatR>& x, const Eigen::Ref<const MatR>& y) {
    return x.rows() == y.rows() && x.cols() == y.cols() && std::memcmp(x.data(), y.data(), static_cast<size_t>(x.size()) * sizeof(float)) == 0;
  };
  ASSERT_EQ(a.attention.size(), b.attention.size()) << what;
  EXPECT_EQ(std::memcmp(a.attention.data(), b.attention.data(), a.attention.size() * sizeof(float)), 0) << what << ": maps";
  EXPECT_TRUE(same(a.logits, b.logits)) << what << ": logits";
  EXPECT_TRUE(same(a.out, b.out)) << what << ": out";
  ASSERT_EQ(a.attn_in.size(), b.attn_in.size()) << what;
  ASSERT_EQ(a.attn_out.size(), b.attn_out.size()) << what;
  for (size_t l = 0; l < a.attn_in.size(); ++l) {
    EXPECT_TRUE(same(a.attn_in[l], b.attn_in[l])) << what << ": attn_in " << l;
    EXPECT_TRUE(same(a.attn_out[l], b.attn_out[l])) << what << ": attn_out " << l;
  }
  EXPECT_EQ(a.loss, b.loss) << what;
}

}  // namespace

// ForwardOptions::reuse: a forward written into an earlier output's buffers (poisoned with
// NaN; longer, shorter or as long; with logits or without) equals one into fresh buffers bit
// for bit, in full and through the K/V cache, and leaves the spare empty.
TEST(KvCache, AForwardIntoReusedBuffersEqualsOneIntoFreshOnesBitForBit) {
  for (const bool shipped : {false, true}) {
    Result<ModelWeights> loaded = shipped ? load_checkpoint(kShippedDefault) : Result<ModelWeights>(tiny_llama(64));
    ASSERT_TRUE(loaded);
    const ModelWeights& w = *loaded;
    ModelConfig c;
    c.tokenizer = TokenizerKind::Bpe;
    const ModelConfig cfg = config_for_weights(w, c);
    Rng rng(11);
    std::vector<int> ids;
    for (int i = 0; i < 30; ++i) ids.push_back(static_cast<int>(rng.next() % 50));
    KvCache fresh_cache, reused_cache;
    ForwardOutput spare, spare_inc;
    // Typing, a longer jump, deleting, the same length again, then without logits.
    const int lengths[] = {30, 31, 32, 60, 45, 45, 46, 20, 21};
    for (size_t step = 0; step < std::size(lengths); ++step) {
      while (static_cast<int>(ids.size()) < lengths[step]) ids.push_back(static_cast<int>(rng.next() % 50));
      ids.resize(static_cast<size_t>(lengths[step]));
      ForwardOptions opt;
      opt.keep_layer_io = true;
      opt.want_logits = step + 2 < std::size(lengths);
      opt.skip_final_mlp = true;
      const Batch batch = id_batch({ids});
      const std::string what = std::string(shipped ? "shipped" : "llama") + " step " + std::to_string(step);
      poison(spare);
      poison(spare_inc);
      ForwardOptions reusing = opt, inc = opt, inc_reusing = opt;
      reusing.reuse = &spare;
      inc.kv_cache = &fresh_cache;
      inc_reusing.kv_cache = &reused_cache;
      inc_reusing.reuse = &spare_inc;
      Result<ForwardOutput> a = forward(w, cfg, batch, opt), b = forward(w, cfg, batch, reusing);
      Result<ForwardOutput> ia = forward(w, cfg, batch, inc), ib = forward(w, cfg, batch, inc_reusing);
      ASSERT_TRUE(a && b && ia && ib) << what;
      expect_bits(*a, *b, what + " full");
      expect_bits(*ia, *ib, what + " incremental");
      EXPECT_EQ(ia->kv_reused, ib->kv_reused) << what;
      if (step == 1 || step == 4) EXPECT_GT(ib->kv_reused, 0) << what << ": through the cache";
      EXPECT_TRUE(spare.attention.empty() && spare.logits.size() == 0 && spare.attn_in.empty()) << what << ": the spare is left empty";
      spare = std::move(*b);
      spare_inc = std::move(*ib);
    }
  }
}

// The cache keeps its rows with room for kKvMapsRoom more tokens and writes only an append's
// own rows (the maps' row t at its room's stride, columns [0, t]); the scores of 1-3 query
// rows read K where it lies. Typing one token at a time past the room (a new block), then
// deleting, an edit in the middle, appends of 2, 3 and 5 rows and typing again: each equals
// a full recompute in every bit of every map, layer row, stream row and logit.
TEST(KvCache, TypingPastTheCachesRoomAndEditingEqualsAFullRecomputeBitForBit) {
  const LongLlama m = long_llama();  // past 128 tokens at d_head 64: bit for bit (above)
  const ModelWeights& w = m.w;
  const ModelConfig& cfg = m.cfg;
  Rng rng(38);
  auto id = [&] { return static_cast<int>(rng.next() % 50); };
  std::vector<int> ids;
  for (int i = 0; i < 140; ++i) ids.push_back(id());
  KvCache cache;
  std::vector<std::vector<int>> texts = {ids};
  for (int i = 0; i < kKvMapsRoom + 9; ++i) texts.push_back(texts.back()), texts.back().push_back(id());  // typing past the room
  auto edited = [&](auto&& edit) {
    texts.push_back(texts.back());
    edit(texts.back());
  };
  edited([](std::vector<int>& t) { t.resize(t.size() - 3); });              // deleting
  edited([&](std::vector<int>& t) { t[t.size() - 20] = id(); });            // an edit in the middle
  for (int k : {2, 3, 5, 1, 1})                                             // appends of several rows
    edited([&](std::vector<int>& t) { for (int i = 0; i < k; ++i) t.push_back(id()); });
  for (size_t step = 0; step < texts.size(); ++step) {
    ForwardOptions opt;
    opt.keep_layer_io = true;
    opt.want_logits = true;
    ForwardOptions inc = opt;
    inc.kv_cache = &cache;
    const Batch batch = id_batch({texts[step]});
    Result<ForwardOutput> a = forward(w, cfg, batch, inc), b = forward(w, cfg, batch, opt);
    ASSERT_TRUE(a && b);
    const std::string what = "step " + std::to_string(step) + " T=" + std::to_string(texts[step].size());
    expect_bits(*a, *b, what);
    if (step > 0) EXPECT_GT(a->kv_reused, 0) << what << ": through the cache";
  }
}

// KvCache::maps_lent: the cache keeps no maps of its own; each output lends its maps
// (lend_maps) and the next request copies its kept rows from there (the app's worker: the
// 1B shape's cache held a 41 MB block beside the outputs' own maps, helper rss10). Typing,
// past 128 tokens, deleting, an edit in the middle and appends, each pass written into the
// buffers of the output two back (ForwardOptions::reuse, poisoned): every bit equals a full
// recompute, as many rows are reused as through a cache keeping its own maps, and the cache
// holds no block. A pass whose maps were not lent runs in full (no rows to copy from).
TEST(KvCache, MapsLentByTheOutputsStandInForTheCachesOwnBitForBit) {
  const LongLlama m = long_llama();
  const ModelWeights& w = m.w;
  const ModelConfig& cfg = m.cfg;
  Rng rng(41);
  auto id = [&] { return static_cast<int>(rng.next() % 50); };
  std::vector<std::vector<int>> texts(1);
  for (int i = 0; i < 120; ++i) texts[0].push_back(id());
  auto edited = [&](auto&& edit) {
    texts.push_back(texts.back());
    edit(texts.back());
  };
  for (int i = 0; i < 12; ++i) edited([&](std::vector<int>& t) { t.push_back(id()); });  // typing past 128
  edited([](std::vector<int>& t) { t.resize(t.size() - 3); });                            // deleting
  edited([&](std::vector<int>& t) { t.back() = id(); });                                  // a BPE merge rewrites the last
  edited([&](std::vector<int>& t) { t[t.size() - 20] = id(); });                          // an edit in the middle
  for (int k : {2, 5, 1}) edited([&](std::vector<int>& t) { for (int i = 0; i < k; ++i) t.push_back(id()); });
  const size_t not_lent = texts.size() - 2;  // this pass's maps are not lent: the next one runs in full
  KvCache own, lent;
  lent.maps_lent = true;
  std::vector<std::shared_ptr<ForwardOutput>> outs;  // what the app's results hold
  int spares = 0;
  for (size_t step = 0; step < texts.size(); ++step) {
    ForwardOptions opt;
    opt.keep_layer_io = true;
    opt.want_logits = true;
    ForwardOptions inc = opt, inc_lent = opt;
    inc.kv_cache = &own;
    inc_lent.kv_cache = &lent;
    ForwardOutput spare;
    if (outs.size() >= 2 && outs[outs.size() - 2].use_count() == 1) {  // two back: no longer lent
      spare = std::move(*outs[outs.size() - 2]);
      poison(spare);
      inc_lent.reuse = &spare;
    }
    const Batch batch = id_batch({texts[step]});
    Result<ForwardOutput> a = forward(w, cfg, batch, inc), b = forward(w, cfg, batch, inc_lent), full = forward(w, cfg, batch, opt);
    ASSERT_TRUE(a && b && full);
    const std::string what = "step " + std::to_string(step) + " T=" + std::to_string(texts[step].size());
    expect_bits(*b, *full, what);
    EXPECT_EQ(b->kv_reused, step == not_lent + 1 ? 0 : a->kv_reused) << what;
    if (step > 0 && step != not_lent + 1) EXPECT_GT(b->kv_reused, 0) << what << ": through the cache";
    EXPECT_TRUE(!lent.attention && lent.attention_floats == 0 && lent.maps_rows == 0) << what << ": the cache kept a block of maps";
    spares += inc_lent.reuse != nullptr;
    outs.push_back(std::make_shared<ForwardOutput>(std::move(*b)));
    if (step != not_lent) lent.lend_maps(outs.back(), outs.back()->attention.data(), outs.back()->T);
  }
  EXPECT_GT(spares, 10) << "few passes were written into an earlier output's buffers";
}

// Typing at the end, each pass written into the output two back (as the app's worker does): the
// maps find room in that spare's block (T + max(64, T / 2) rows a side), so a fresh block, whose
// pages are all faulted in (~28 MB, ~20 ms on the 1B shape), is rare: typing 8 to 200 tokens
// takes 2 to start and 2 growths each. With room for T + 16, the two alternating blocks grew
// every 16 tokens (22 fresh blocks here).
TEST(KvCache, TypingAtTheEndFindsRoomInTheSparesMaps) {
  const LongLlama m = long_llama();
  Rng rng(43);
  std::vector<int> text;
  for (int i = 0; i < 8; ++i) text.push_back(static_cast<int>(rng.next() % 50));
  KvCache cache;
  std::deque<ForwardOutput> outs;  // the last two: the one on screen and the newest
  int fresh = 0;
  for (; text.size() <= 200; text.push_back(static_cast<int>(rng.next() % 50))) {
    ForwardOptions opt;
    opt.keep_layer_io = true;
    opt.want_logits = true;
    opt.kv_cache = &cache;
    ForwardOutput spare;
    if (outs.size() == 2) spare = std::move(outs.front()), outs.pop_front();
    const float* before = spare.attention.data();
    opt.reuse = &spare;
    Result<ForwardOutput> o = forward(m.w, m.cfg, id_batch({text}), opt);
    ASSERT_TRUE(o) << text.size();
    fresh += o->attention.data() != before;
    outs.push_back(std::move(o).value());
  }
  EXPECT_LE(fresh, 6) << "typing 193 tokens at the end put the maps into " << fresh << " fresh blocks";
}

// The outputs share the cache's logits and layer rows (shared_rows.h) instead of copies of
// them. Typing writes each new row in place, past every row an earlier output reads, so the
// outputs share one block; an edit under those rows, a pass cancelled between its layers, and
// typing past the block's room write into a fresh block (in a spare's storage when it holds
// a block alone, poisoned here); a full forward given a spare that
// shares a block with a held output (ForwardOptions::reuse) writes into a block of its own.
// Every output still held keeps its numbers to the bit, and each equals a full forward of its
// own text.
TEST(KvCache, OutputsStillHeldKeepTheirSharedRowsWhileLaterPassesWrite) {
  const LongLlama m = long_llama();
  const ModelWeights& w = m.w;
  const ModelConfig& cfg = m.cfg;
  Rng rng(61);
  auto id = [&] { return static_cast<int>(rng.next() % 50); };
  ForwardOptions opt;
  opt.keep_layer_io = true;
  opt.want_logits = true;
  KvCache cache;
  auto run = [&](const std::vector<int>& ids, std::function<bool()> cancelled = nullptr, ForwardOutput* spare = nullptr) {
    ForwardOptions inc = opt;
    inc.kv_cache = &cache;
    inc.cancelled = std::move(cancelled);
    inc.reuse = spare;
    return forward(w, cfg, id_batch({ids}), inc);
  };
  struct Held {
    std::vector<int> ids;
    ForwardOutput out;
    MatR logits;                // (T, V) copied when it was made
    std::vector<MatR> in, outs;  // L x (T, D)
  };
  std::vector<Held> held;
  auto keep = [&](const std::vector<int>& ids, ForwardOutput out) {
    Held h{ids, std::move(out), {}, {}, {}};
    h.logits = h.out.logits;
    for (size_t l = 0; l < h.out.attn_in.size(); ++l) h.in.emplace_back(h.out.attn_in[l]), h.outs.emplace_back(h.out.attn_out[l]);
    held.push_back(std::move(h));
  };
  std::vector<int> ids;
  for (int i = 0; i < 20; ++i) ids.push_back(id());
  Result<ForwardOutput> r = run(ids);
  ASSERT_TRUE(r);
  keep(ids, std::move(*r));
  for (int i = 0; i < 3; ++i) {  // typing: each output shares the block of the one before
    ids.push_back(id());
    r = run(ids);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->kv_reused, static_cast<int>(ids.size()) - 1);
    EXPECT_EQ(r->logits.data(), held.back().out.logits.data()) << "an append shares the logits' block";
    EXPECT_EQ(r->attn_in[1].data(), held.back().out.attn_in[1].data()) << "an append shares the layer rows' block";
    keep(ids, std::move(*r));
  }
  EXPECT_EQ(cache.logits.copies(), 0) << "typing within the room copies nothing";
  // A spare (ForwardOptions::reuse) that holds its blocks alone (its cache is gone), poisoned.
  ForwardOutput spare;
  {
    KvCache other;
    ForwardOptions o = opt;
    o.kv_cache = &other;
    Result<ForwardOutput> s = forward(w, cfg, id_batch({std::vector<int>(ids.begin(), ids.end() - 5)}), o);
    ASSERT_TRUE(s);
    spare = std::move(*s);
  }
  poison(spare);
  const float* recycled = spare.logits.data();
  ids.back() = (ids.back() + 1) % 50;  // a BPE merge rewrites the last token: a row the last output reads
  r = run(ids, nullptr, &spare);
  ASSERT_TRUE(r);
  EXPECT_EQ(cache.logits.copies(), 1) << "an edit under a held output's rows writes into a fresh block";
  EXPECT_NE(r->logits.data(), held.back().out.logits.data());
  EXPECT_EQ(r->logits.data(), recycled) << "the fresh block is made in the spare's storage";
  keep(ids, std::move(*r));
  // An edit in the middle, cancelled at the start of layer 1 (2 + H questions a layer: before
  // it, each head, after the heads), when layer 0's rows [10, T) are written.
  std::vector<int> mid = ids;
  mid[10] = (mid[10] + 1) % 50;
  std::atomic<int> asked{0};
  r = run(mid, [&] { return ++asked >= 7; });
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().kind, ErrorKind::Cancelled);
  EXPECT_EQ(cache.T(), 0) << "a cancelled pass forgets the cache";
  for (int i = 0; i < kKvMapsRoom + 3; ++i) {  // typing again, from a full pass, past the room
    ids.push_back(id());
    r = run(ids);
    ASSERT_TRUE(r);
    keep(ids, std::move(*r));
  }
  EXPECT_GE(cache.logits.copies(), 1) << "typing past the room makes a fresh block while outputs hold the old one";
  {  // a full forward into a spare that shares blocks with a held output
    ForwardOutput spare = held[2].out;
    ForwardOptions full = opt;
    full.reuse = &spare;
    ASSERT_TRUE(forward(w, cfg, id_batch({mid}), full));
  }
  for (size_t k = 0; k < held.size(); ++k) {
    const Held& h = held[k];
    const std::string what = "held output " + std::to_string(k) + " T=" + std::to_string(h.ids.size());
    EXPECT_TRUE(h.out.logits == h.logits) << what << ": its logits changed";
    for (size_t l = 0; l < h.in.size(); ++l) {
      EXPECT_TRUE(h.out.attn_in[l] == h.in[l]) << what << ": its attn_in " << l << " changed";
      EXPECT_TRUE(h.out.attn_out[l] == h.outs[l]) << what << ": its attn_out " << l << " changed";
    }
    Result<ForwardOutput> f = forward(w, cfg, id_batch({h.ids}), opt);
    ASSERT_TRUE(f);
    expect_bits(h.out, *f, what);
  }
}

TEST(StageTimes, TimersChangeNoBitAndCountEveryStageThePassRuns) {
  const ModelWeights w = tiny_llama(64);
  ModelConfig c;
  c.tokenizer = TokenizerKind::Bpe;
  const ModelConfig cfg = config_for_weights(w, c);
  Rng rng(7);
  std::vector<int> ids;
  for (int i = 0; i < 40; ++i) ids.push_back(static_cast<int>(rng.next() % 50));
  ForwardOptions opt;
  opt.want_logits = true;
  StageTimes st;
  ForwardOptions timed = opt;
  timed.times = &st;
  const Batch batch = id_batch({ids});
  Result<ForwardOutput> plain = forward(w, cfg, batch, opt), with = forward(w, cfg, batch, timed);
  ASSERT_TRUE(plain && with);
  ASSERT_EQ(plain->attention.size(), with->attention.size());
  EXPECT_EQ(std::memcmp(plain->attention.data(), with->attention.data(), plain->attention.size() * sizeof(float)), 0);
  EXPECT_EQ(std::memcmp(plain->logits.data(), with->logits.data(), static_cast<size_t>(plain->logits.size()) * sizeof(float)), 0);
  EXPECT_EQ(st.passes.load(), 1);
  for (Stage s : {Stage::MapsAlloc, Stage::Embed, Stage::Norm, Stage::QkvProj, Stage::QkSteps, Stage::HeadsWall, Stage::Scores,
                  Stage::Softmax, Stage::WeightsV, Stage::OutProj, Stage::MlpIn, Stage::MlpAct, Stage::MlpOut, Stage::Logits, Stage::Loss})
    EXPECT_GT(st.ns[static_cast<size_t>(s)].load(), 0) << stage_name(s);
  EXPECT_EQ(st.ns[static_cast<size_t>(Stage::KvCopy)].load(), 0) << "no cache in a full forward";
  EXPECT_NE(st.table(1.0).find("QKV projection"), std::string::npos);

  // Through a K/V cache: one token appended, timed, equals the untimed append.
  KvCache cache_a, cache_b;
  const std::vector<int> head(ids.begin(), ids.end() - 1);
  ForwardOptions inc = opt, inc_timed = timed;
  inc.kv_cache = &cache_a;
  inc_timed.kv_cache = &cache_b;
  ASSERT_TRUE(forward(w, cfg, id_batch({head}), inc) && forward(w, cfg, id_batch({head}), inc_timed));
  st.clear();
  Result<ForwardOutput> a = forward(w, cfg, batch, inc), b = forward(w, cfg, batch, inc_timed);
  ASSERT_TRUE(a && b);
  ASSERT_EQ(b->kv_computed, 1);
  EXPECT_EQ(std::memcmp(a->attention.data(), b->attention.data(), a->attention.size() * sizeof(float)), 0);
  EXPECT_EQ(std::memcmp(a->logits.data(), b->logits.data(), static_cast<size_t>(a->logits.size()) * sizeof(float)), 0);
  EXPECT_GT(st.ns[static_cast<size_t>(Stage::KvCopy)].load(), 0);
  EXPECT_GT(st.ns[static_cast<size_t>(Stage::Scores)].load(), 0);
}
