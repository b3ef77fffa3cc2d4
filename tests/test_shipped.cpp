// The shipped checkpoints: they load, they are what their metadata says, and the default
// one still shows the specialisation the README reports. Measured with the project's own
// metrics (core/inspect/metrics.h) on the corpus's held-out lines, not on hand-picked sentences.
//
// L = layers, H = heads
#include <gtest/gtest.h>

#include <filesystem>

#include "core/io/checkpoint.h"
#include "core/train/corpus.h"
#include "core/io/export.h"
#include "core/inspect/specialisation.h"
#include "core/train/trainer.h"

using namespace headmap;
namespace fs = std::filesystem;

namespace {
const std::string kAssets = HEADMAP_ASSETS;
const std::string kCorpus = kAssets + "/corpus/grammar-v1.txt";
const std::string kDefault = kAssets + "/checkpoints/d64-h4-l2.safetensors";

// The held-out lines the evidence is measured on: the first 200 of the validation split.
const std::vector<std::string>& evidence_lines() {
  static const std::vector<std::string> lines = [] {
    Result<TrainCorpus> c = load_train_corpus(kCorpus);
    EXPECT_TRUE(c) << (c ? "" : c.error().message);
    if (!c) return std::vector<std::string>{};
    return std::vector<std::string>(c->val_lines.begin(), c->val_lines.begin() + std::min<size_t>(200, c->val_lines.size()));
  }();
  return lines;
}
}  // namespace

TEST(Shipped, CorpusIsTheGeneratorsOutput) {
  Result<std::string> text = read_file(kCorpus);
  ASSERT_TRUE(text) << text.error().message;
  EXPECT_EQ(*text, generate_grammar_corpus(GrammarCorpusOptions{})) << "regenerate with: headmap-cli make-corpus --out " << kCorpus;
  for (const std::string& s : chapter_sentences()) EXPECT_NE(text->find(s), std::string::npos) << s;
}

// The targets for the default checkpoint (D=64, H=4, L=2): a previous-token head in
// layer 0 (>= 0.7) and an induction head in layer 1 (>= 0.4 on the induction probe).
TEST(Shipped, DefaultCheckpointHasPreviousTokenAndInductionHeads) {
  Result<ModelWeights> w = load_checkpoint(kDefault);
  ASSERT_TRUE(w) << w.error().message;
  EXPECT_EQ(w->d_model, 64);
  EXPECT_EQ(w->source.trained_heads, 4);
  EXPECT_EQ(w->num_layers(), 2);
  ASSERT_FALSE(evidence_lines().empty());
  Result<Specialisation> s = measure_specialisation(*w, 4, evidence_lines());
  ASSERT_TRUE(s) << s.error().message;
  EXPECT_GE(s->best_prev_token(0), 0.7f) << "layer 0 lost its previous-token head";
  EXPECT_GE(s->best_induction(1), 0.4f) << "layer 1 lost its induction head";
  // The probe headmap-cli itself uses for --json (20 tokens, the config's seed 7).
  ModelConfig cfg;
  cfg.d_model = 64;
  cfg.num_heads = 4;
  cfg.num_layers = 2;
  cfg.context = w->context;
  const std::vector<float> ind = induction_scores(*w, cfg, make_induction_probe(cfg, *w, 20, cfg.seed));
  ASSERT_EQ(ind.size(), 8u);
  EXPECT_GE(*std::max_element(ind.begin() + 4, ind.end()), 0.4f);
}

// Every shipped checkpoint loads (its own check vector included) and was made by a
// recorded headmap-cli train command on the shipped corpus.
TEST(Shipped, EveryCheckpointLoadsAndSaysHowItWasMade) {
  int n = 0;
  for (const auto& e : fs::directory_iterator(kAssets + "/checkpoints")) {
    if (e.path().extension() != ".safetensors") continue;
    ++n;
    Result<ModelWeights> w = load_checkpoint(e.path().string());
    ASSERT_TRUE(w) << w.error().message;
    EXPECT_EQ(w->source.corpus, "grammar-v1") << e.path();
    EXPECT_EQ(w->source.reproduce.rfind("headmap-cli train --corpus assets/corpus/grammar-v1.txt", 0), 0u) << e.path();
    EXPECT_NE(w->source.reproduce.find("--out assets/checkpoints/" + e.path().filename().string()), std::string::npos) << e.path();
    EXPECT_GT(w->source.val_loss, 0.0) << e.path();
  }
  EXPECT_GE(n, 5) << "D=64 with H = 1, 2, 4, 8 and a larger d_model";
}
