// Next-token predictions (core/inspect/predictions.h) against the model's own logits: the
// top-k list is the reference's full sort of a float64 softmax of the same row, each
// sentence's loss adds up to the batch's, and on a sentence said twice the shipped model
// predicts the word that followed the first time (the induction exercise).
//
// B = batch, T = tokens, V = vocabulary
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "core/inspect/predictions.h"
#include "core/io/checkpoint.h"
#include "core/model/model.h"
#include "test_util.h"

using namespace headmap;

namespace {
using test::kShippedDefault;

struct ModelRun {
  ModelWeights w;
  ModelConfig cfg;
  Batch batch;
  ForwardOutput out;
};

ModelRun run(const std::vector<std::string>& lines) {
  ModelRun r;
  Result<ModelWeights> w = load_checkpoint(kShippedDefault);
  EXPECT_TRUE(w) << (w ? "" : w.error().message);
  if (!w) return r;
  r.w = std::move(w).value();
  r.cfg.d_model = r.w.d_model;
  r.cfg.num_heads = r.w.source.trained_heads;
  r.cfg.num_layers = r.w.num_layers();
  r.cfg.context = r.w.context;
  r.batch = make_batch(lines, r.cfg, r.w);
  ForwardOptions fo;
  fo.want_logits = true;
  Result<ForwardOutput> out = forward(r.w, r.cfg, r.batch, fo);
  EXPECT_TRUE(out) << (out ? "" : out.error().message);
  if (out) r.out = std::move(out).value();
  return r;
}
}  // namespace

TEST(Predictions, TopKIsTheSoftmaxOfTheLogitsRowSorted) {
  const ModelRun r = run({"The cat sat on the mat because it was tired.", "x"});
  ASSERT_EQ(r.out.logits.cols(), r.w.vocab_size());
  for (int b : {0, 1})
    for (int t : {0, 3, r.batch.lengths[b] - 1}) {
      if (t < 0 || t >= r.batch.lengths[b]) continue;
      SCOPED_TRACE("sentence " + std::to_string(b) + ", position " + std::to_string(t));
      // The reference: a float64 softmax of the whole row, fully sorted.
      const auto row = r.out.logits.row(static_cast<Eigen::Index>(b) * r.out.T + t);
      std::vector<double> p(static_cast<size_t>(row.size()));
      double mx = -INFINITY, sum = 0;
      for (Eigen::Index v = 0; v < row.size(); ++v) mx = std::max(mx, static_cast<double>(row(v)));
      for (Eigen::Index v = 0; v < row.size(); ++v) sum += p[v] = std::exp(row(v) - mx);
      for (double& x : p) x /= sum;
      std::vector<int> order(p.size());
      std::iota(order.begin(), order.end(), 0);
      std::stable_sort(order.begin(), order.end(), [&](int a, int c) { return p[a] > p[c]; });

      const std::vector<NextToken> top = top_k_next(r.w, r.out, b, t, 10);
      ASSERT_EQ(top.size(), 10u);
      for (size_t i = 0; i < top.size(); ++i) {
        EXPECT_EQ(top[i].id, order[i]) << "rank " << i;
        EXPECT_NEAR(top[i].prob, p[order[i]], 1e-6) << "rank " << i;  // float32 exp against float64
        EXPECT_EQ(top[i].display, vocab_display(r.w.bpe, order[i]));
      }
    }
  // Off the logits: nothing, never a crash.
  EXPECT_TRUE(top_k_next(r.w, r.out, 2, 0, 5).empty());
  EXPECT_TRUE(top_k_next(r.w, r.out, 0, r.out.T, 5).empty());
  EXPECT_EQ(top_k_next(r.w, r.out, 0, 0, 1 << 20).size(), static_cast<size_t>(r.w.vocab_size()));
}

TEST(Predictions, EachSentenceHasItsOwnLossAndTheyAddUpToTheBatchs) {
  const std::vector<std::string> lines = {"The cat sat on the mat because it was tired.",
                                          "The lawyer who the jury believed told the truth.", "Hi"};
  const ModelRun r = run(lines);
  const std::vector<double> losses = sentence_losses(r.out, r.batch);
  ASSERT_EQ(losses.size(), 3u);
  double total = 0;
  int n = 0;
  for (int b = 0; b < 3; ++b)
    if (!std::isnan(losses[b])) total += losses[b] * (r.batch.lengths[b] - 1), n += r.batch.lengths[b] - 1;
  EXPECT_EQ(n, r.out.loss_tokens);
  EXPECT_NEAR(total / n, r.out.loss, 1e-9);
  EXPECT_NE(losses[0], losses[1]) << "two sentences, two losses";
  // A sentence's loss does not depend on the batch it is in (padding is never read).
  for (int b = 0; b < 2; ++b) {
    const ModelRun alone = run({lines[b]});
    EXPECT_NEAR(sentence_losses(alone.out, alone.batch)[0], losses[b], 1e-4) << lines[b];
    EXPECT_NEAR(alone.out.loss, losses[b], 1e-4);
  }
}

// "cat dog ... cat -> ?": on a sentence said twice, the token after the repeated word's
// second occurrence is predicted from its first. Measured on the shipped default.
TEST(Predictions, TheShippedModelCopiesFromTheFirstOccurrence) {
  const ModelRun r = run({"My grandmother planted tomatoes in the garden. My grandmother planted tomatoes in the garden."});
  const std::vector<Token>& tok = r.batch.sentences[0].tokens;
  const int half = r.batch.lengths[0] / 2;
  ASSERT_EQ(tok[half + 1].id, tok[1].id) << "the sentence is said twice (its first word once with a space, once without)";
  int hits = 0;
  for (int t = half + 1; t + 1 < r.batch.lengths[0]; ++t) hits += top_k_next(r.w, r.out, 0, t, 1)[0].id == tok[t + 1].id;
  EXPECT_GE(hits, (r.batch.lengths[0] - half - 2) * 3 / 4) << "top-1 predictions that copy the first occurrence";
}

// top_logits (core/model/next_tokens.h), the one pass that keeps a row's k largest logits for
// top_k_next and for the rows the app keeps in place of its logits, against a full sort of
// the row by (logit descending, id ascending): rows whose values repeat (ties at every
// rank, the top one among them), k from 1 to V.
TEST(Predictions, TopLogitsAreTheRowsFullSortWithTiesByTheLowerId) {
  uint64_t s = 7;
  auto next = [&] { return (s = s * 6364136223846793005ull + 1442695040888963407ull) >> 33; };
  for (int V : {1, 2, 9, 50, 333}) {
    for (int round = 0; round < 4; ++round) {
      std::vector<float> row(static_cast<size_t>(V));
      const int distinct = round == 0 ? V : 1 + round * 2;  // round 0: few ties; later: ties at every rank
      for (float& x : row) x = static_cast<float>(next() % static_cast<uint64_t>(distinct)) * 0.25f - 1.0f;
      std::vector<int> order(static_cast<size_t>(V));
      std::iota(order.begin(), order.end(), 0);
      std::sort(order.begin(), order.end(), [&](int a, int c) { return row[a] > row[c] || (row[a] == row[c] && a < c); });
      for (int k : {1, 2, 3, V / 2, V}) {
        if (k < 1 || k > V) continue;  // top_logits asks 1 <= k <= V (top_k_next clips k)
        std::vector<int> ids(static_cast<size_t>(k));
        std::vector<float> logits(static_cast<size_t>(k));
        float mx = 0;
        double sum = 0;
        top_logits(row.data(), V, k, ids.data(), logits.data(), mx, sum);
        for (int i = 0; i < k; ++i) {
          EXPECT_EQ(ids[i], order[i]) << "V=" << V << " round " << round << " k=" << k << " rank " << i;
          EXPECT_EQ(logits[i], row[order[i]]) << "V=" << V << " k=" << k << " rank " << i;
        }
        EXPECT_EQ(mx, row[order[0]]);
        double ref = 0;  // the order top_k_next summed in before; float64 terms of float exps
        for (float x : row) ref += std::exp(static_cast<double>(x - mx));
        EXPECT_NEAR(sum, ref, 1e-5 * ref) << "V=" << V;
      }
    }
  }
}
