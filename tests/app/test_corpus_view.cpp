// test_corpus_view.cpp: Contributions > Corpus on the plain state (app/gui/corpus_view.h).
// Choosing a head lists its hits at once and asks the corpus worker for their maps (the UI
// thread runs no forward pass); the maps, when they come, are each hit line's own, and maps
// made for another head are dropped.
//
// k = hits, len = a hit line's tokens
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "app/gui/app_state.h"
#include "app/gui/corpus_view.h"
#include "core/model/weights.h"

namespace headmap {
namespace {

TEST(CorpusView, TheHitsMapsAreAskedOfTheWorkerAndAreEachLinesOwn) {
  ModelConfig cfg;
  cfg.d_model = 32;
  cfg.num_heads = 4;
  cfg.num_layers = 2;
  auto w = std::make_shared<const ModelWeights>(random_weights(cfg.d_model, cfg.num_layers, cfg.seed));
  auto lines = std::make_shared<const std::vector<std::string>>(std::vector<std::string>{
      "the cat sat on the mat because it was tired", "a dog ran", "the cat and the dog sat on the mat again and again", "one two three"});
  Result<CorpusIndex> ix = corpus_index(*w, cfg, *lines, 5, CorpusStat::Weight);
  ASSERT_TRUE(ix);
  auto o = std::make_shared<CorpusOutcome>();
  o->job.weights = w;
  o->job.cfg = cfg;
  o->lines = lines;
  o->index = std::make_shared<const CorpusIndex>(std::move(ix).value());
  AppState s;
  s.corpus.shown = o;
  s.view.layer = 1;
  s.view.head = 2;
  s.corpus.top = 5;
  const CorpusState::Derived& d = corpus_derived(s);
  ASSERT_TRUE(d.search);
  ASSERT_EQ(d.search->hits.size(), 5u);
  // The hits at once; their maps not computed here but asked of the worker.
  EXPECT_FALSE(d.maps_ready);
  EXPECT_TRUE(d.maps.empty());
  ASSERT_TRUE(s.corpus.maps_request);
  const CorpusMapsJob job = *s.corpus.maps_request;
  ASSERT_EQ(job.lines.size(), 5u);
  EXPECT_EQ(job.layer, 1);
  EXPECT_EQ(job.head, 2);
  s.corpus.maps_request.reset();
  EXPECT_EQ(&corpus_derived(s), &d);  // the same head again: nothing asked twice
  EXPECT_FALSE(s.corpus.maps_request);
  // What the worker answers: each map the head on its hit's line alone.
  CorpusMaps m = corpus_hit_maps(job);
  ASSERT_TRUE(m.error.empty()) << m.error;
  ASSERT_EQ(m.maps.size(), 5u);
  for (size_t i = 0; i < 5; ++i) {
    const std::string& line = (*lines)[static_cast<size_t>(d.search->hits[i].line)];
    EXPECT_EQ(job.lines[i], line);
    const Batch one = make_batch({line}, cfg, *w);
    ForwardOptions fo;
    Result<ForwardOutput> out = forward(*w, cfg, one, fo);
    ASSERT_TRUE(out);
    const int len = one.lengths[0];
    ASSERT_EQ(m.maps[i].size(), static_cast<size_t>(len) * len);
    ASSERT_EQ(m.tokens[i].size(), static_cast<size_t>(len));
    const float* a = out->weights(1, 0, 2);  // (T, T)
    for (int t = 0; t < len; ++t)
      for (int u = 0; u < len; ++u) EXPECT_NEAR(m.maps[i][static_cast<size_t>(t) * len + u], a[static_cast<size_t>(t) * out->T + u], 1e-6f);
  }
  // Maps made for another head (the person moved on) are dropped; the derived hits' are kept.
  s.view.head = 3;
  corpus_derived(s);
  ASSERT_TRUE(s.corpus.maps_request);
  adopt_corpus_maps(s, m);
  EXPECT_FALSE(s.corpus.derived.maps_ready);
  adopt_corpus_maps(s, corpus_hit_maps(*s.corpus.maps_request));
  EXPECT_TRUE(s.corpus.derived.maps_ready);
  EXPECT_EQ(s.corpus.derived.maps.size(), 5u);
}

}  // namespace
}  // namespace headmap
