// test_latency.cpp: a forward pass can be stopped between layers and between heads, so a
// newer keystroke never waits behind a stale 12-layer request.
#include <gtest/gtest.h>

#include <atomic>

#include "core/model/model.h"

using namespace headmap;

TEST(Cancel, TheFlagIsAskedBetweenLayersAndBetweenHeads) {
  ModelConfig cfg;
  cfg.d_model = 48;
  cfg.num_heads = 4;
  cfg.num_layers = 3;
  cfg.tokenizer = TokenizerKind::Word;
  const ModelWeights w = random_weights(cfg.d_model, cfg.num_layers, 5);
  const Batch batch = make_batch({"the cat sat on the mat", "it was tired"}, cfg, w);
  std::atomic<int> asked{0};
  ForwardOptions fo;
  fo.cancelled = [&] { return ++asked, false; };
  ASSERT_TRUE(forward(w, cfg, batch, fo).ok());
  // before each layer, after its attention, and before each (sentence, head)
  EXPECT_EQ(asked.load(), cfg.num_layers * (2 + batch.B() * cfg.num_heads));
}

TEST(Cancel, ANewerRequestStopsThePassMidLayer) {
  ModelConfig cfg;
  cfg.d_model = 48;
  cfg.num_heads = 4;
  cfg.num_layers = 12;
  cfg.tokenizer = TokenizerKind::Word;
  const ModelWeights w = random_weights(cfg.d_model, cfg.num_layers, 5);
  const Batch batch = make_batch({"the cat sat on the mat"}, cfg, w);
  for (int stop_at : {1, 3, 7}) {  // before layer 0, at a head of layer 0, in layer 1
    std::atomic<int> asked{0};
    ForwardOptions fo;
    fo.cancelled = [&] { return ++asked >= stop_at; };
    Result<ForwardOutput> r = forward(w, cfg, batch, fo);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().kind, ErrorKind::Cancelled);
    // Stopped at once: not asked again for the 11 layers that were left.
    EXPECT_LE(asked.load(), stop_at + 1 * 4) << "stop at " << stop_at;
  }
}

TEST(SkipFinalMlp, TheMapsAreTheSameWithoutTheLastLayersMlp) {
  ModelConfig cfg;
  cfg.d_model = 64;
  cfg.num_heads = 4;
  cfg.num_layers = 3;
  cfg.tokenizer = TokenizerKind::Word;
  const ModelWeights w = random_weights(cfg.d_model, cfg.num_layers, 9);
  const Batch batch = make_batch({"the cat sat on the mat because it was tired", "it was"}, cfg, w);
  ForwardOptions full, maps;
  full.keep_layer_io = maps.keep_layer_io = true;
  maps.skip_final_mlp = true;
  const ForwardOutput a = forward(w, cfg, batch, full).value(), b = forward(w, cfg, batch, maps).value();
  ASSERT_EQ(a.attention.size(), b.attention.size());
  for (size_t i = 0; i < a.attention.size(); ++i) ASSERT_EQ(a.attention[i], b.attention[i]) << "weight " << i;
  for (int l = 0; l < cfg.num_layers; ++l) EXPECT_EQ((a.attn_out[l] - b.attn_out[l]).cwiseAbs().maxCoeff(), 0.0f);
  // ...and the residual stream differs: the MLP really was skipped.
  EXPECT_GT((a.out - b.out).cwiseAbs().maxCoeff(), 1e-3f);
}
