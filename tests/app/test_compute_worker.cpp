// The compute worker's latency rules (issue 12), without a window: a long request publishes
// its visible layer first and then the complete result, the two agree on the layers they
// share, and wait_for hands a small request's result to the frame that posted it.
#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "app/gui/workers/compute_worker.h"

using namespace headmap;

namespace {
ComputeRequest long_request(int tokens, int layers, int visible) {
  ComputeRequest r;
  std::string text;
  for (int i = 0; i < tokens; ++i) text += "w" + std::to_string(i % 97) + " ";
  r.lines = {text};
  r.cfg.d_model = 256;
  r.cfg.num_heads = 8;
  r.cfg.num_layers = layers;
  r.cfg.context = 2048;
  r.cfg.tokenizer = TokenizerKind::Word;
  r.visible_layer = visible;
  return r;
}
}  // namespace

TEST(ComputeWorker, ALongRequestShowsItsVisibleLayerFirst) {
  ComputeWorker w({});
  const ComputeRequest r = long_request(400, 3, 0);
  const uint64_t seq = w.request(r);
  std::shared_ptr<const ComputeResult> first = w.wait_for(seq, std::chrono::seconds(120));
  ASSERT_TRUE(first && first->fwd) << "no result";
  ASSERT_FALSE(first->fwd->complete) << "the first answer to a 3-layer request of 400 tokens should be the visible layer alone";
  EXPECT_EQ(first->fwd->out.L, 1);
  EXPECT_EQ(first->fwd->metrics.size(), 8u);
  EXPECT_TRUE(first->fwd->induction.empty());  // the probe follows with the complete result
  std::shared_ptr<const ComputeResult> full;
  for (int i = 0; i < 1200 && !(full && full->fwd && full->fwd->complete); ++i) full = w.wait_for(seq, std::chrono::milliseconds(100));
  ASSERT_TRUE(full && full->fwd && full->fwd->complete) << "the complete result never came";
  EXPECT_EQ(full->seq, seq);
  const ForwardOutput &a = first->fwd->out, &b = full->fwd->out;
  ASSERT_EQ(b.L, 3);
  EXPECT_EQ(full->fwd->induction.size(), 3u * 8u);
  // Layer 0 is the same computation in both: equal maps, bit for bit, and equal metrics.
  const size_t per_layer = static_cast<size_t>(a.B) * a.Hw * a.T * a.T;
  for (size_t i = 0; i < per_layer; ++i) ASSERT_EQ(a.attention[i], b.attention[i]) << "weight " << i;
  for (int h = 0; h < 8; ++h) EXPECT_EQ(first->fwd->metrics[h].entropy, full->fwd->metrics[h].entropy);
  // Every long map carries its max-pooled levels.
  ASSERT_EQ(full->fwd->levels.size(), 3u * 8u);
  EXPECT_GT(full->fwd->levels[0].num_levels(), 1);
}

TEST(ComputeWorker, ASmallRequestIsReadyWithinAFramesWait) {
  ComputeWorker w({});
  ComputeRequest r = long_request(8, 2, 0);
  r.cfg.d_model = 64;
  r.cfg.num_heads = 4;
  uint64_t seq = w.request(r);
  ASSERT_TRUE(w.wait_for(seq, std::chrono::seconds(60)));  // first: draws the weights
  r.lines[0] += " and more";
  seq = w.request(r);
  // No timing is asserted (the machine may be busy): a generous bound, and the right answer.
  std::shared_ptr<const ComputeResult> res = w.wait_for(seq, std::chrono::seconds(60));
  ASSERT_TRUE(res && res->fwd);
  EXPECT_EQ(res->seq, seq);
  EXPECT_TRUE(res->fwd->complete);  // small: one answer, not staged
  EXPECT_EQ(res->fwd->batch.lengths[0], 10);
}

TEST(ComputeWorker, ARequestTooLargeIsRefusedWithoutAPartialResultFirst) {
  ComputeWorker w({});
  ComputeRequest r = long_request(2048, 12, 0);
  r.lines = {r.lines[0], r.lines[0], r.lines[0], r.lines[0]};  // 4 x 12 x 8 maps of 2048^2: 6 GiB, over the limit
  const uint64_t seq = w.request(r);
  std::shared_ptr<const ComputeResult> res = w.wait_for(seq, std::chrono::seconds(120));
  ASSERT_TRUE(res);
  EXPECT_FALSE(res->fwd) << "a partial result stood in for the refusal";
  ASSERT_TRUE(res->error);
  EXPECT_NE(res->error->message.find("use fewer sentences"), std::string::npos) << res->error->message;
}

// New random weights for a model deeper than the layer on screen: the layers up to it are
// drawn and shown first, the rest follow; the complete model is the one drawn whole, and it
// is cached, so the next keystroke is one answer.
TEST(ComputeWorker, NewRandomWeightsShowTheVisibleLayerBeforeTheRestIsDrawn) {
  ComputeWorker w({});
  ComputeRequest r = long_request(6, 3, 0);
  r.cfg.d_model = 384;
  r.cfg.num_heads = 6;
  const uint64_t seq = w.request(r);
  std::shared_ptr<const ComputeResult> first = w.wait_for(seq, std::chrono::seconds(120));
  ASSERT_TRUE(first && first->fwd) << "no result";
  EXPECT_FALSE(first->fwd->complete) << "6 tokens, but 2 more layers of D = 384 to draw: layer 0 first";
  EXPECT_EQ(first->fwd->out.L, 1);
  EXPECT_EQ(first->fwd->weights->num_layers(), 1);
  std::shared_ptr<const ComputeResult> full;
  for (int i = 0; i < 1200 && !(full && full->fwd && full->fwd->complete); ++i) full = w.wait_for(seq, std::chrono::milliseconds(100));
  ASSERT_TRUE(full && full->fwd && full->fwd->complete) << "the complete result never came";
  const ModelWeights whole = random_weights(384, 3, r.cfg.seed);
  ASSERT_EQ(full->fwd->weights->num_layers(), 3);
  for (int l = 0; l < 3; ++l) {
    EXPECT_TRUE(full->fwd->weights->layers[l].w_qkv == whole.layers[l].w_qkv) << "layer " << l;
    EXPECT_TRUE(full->fwd->weights->layers[l].w_proj == whole.layers[l].w_proj) << "layer " << l;
  }
  // Layer 0's maps are the same in both answers.
  const size_t per_layer = static_cast<size_t>(first->fwd->out.B) * first->fwd->out.Hw * first->fwd->out.T * first->fwd->out.T;
  for (size_t i = 0; i < per_layer; ++i) ASSERT_EQ(first->fwd->out.attention[i], full->fwd->out.attention[i]) << "weight " << i;
  r.lines[0] += " more";
  const uint64_t seq2 = w.request(r);
  std::shared_ptr<const ComputeResult> next = w.wait_for(seq2, std::chrono::seconds(60));
  ASSERT_TRUE(next && next->fwd);
  EXPECT_TRUE(next->fwd->complete) << "the weights are cached now: one answer";
}
