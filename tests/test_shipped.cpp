// The shipped checkpoints: they load, they are what their metadata says, and the default
// one reads everyday English with heads that mean something. Measured with the project's
// own metrics (core/inspect/metrics.h) on sentences that are not in the training corpus
// (tests/data/everyday_sentences.txt), not on lines the grammar generates.
//
// L = layers, H = heads
#include <gtest/gtest.h>

#include <filesystem>

#include "core/inspect/specialisation.h"
#include "core/io/checkpoint.h"
#include "core/io/export.h"
#include "core/math/rng.h"
#include "core/model/model.h"
#include "core/text/hf_tokenizer.h"
#include "core/train/grammar.h"
#include "test_util.h"

using namespace headmap;
namespace fs = std::filesystem;

namespace {
const std::string kAssets = HEADMAP_ASSETS;
const std::string kGrammar = kAssets + "/corpus/grammar-v1.txt";
using test::kShippedDefault;
const std::string kSentences = HEADMAP_TEST_DATA "/everyday_sentences.txt";

std::vector<std::string> everyday_sentences() {
  Result<std::string> text = read_file(kSentences);
  EXPECT_TRUE(text) << kSentences;
  std::vector<std::string> lines;
  if (text)
    for (std::string& l : split_lines(*text))
      if (!l.empty()) lines.push_back(std::move(l));
  return lines;
}
}  // namespace

// The generator makes every draw from its Rng in a statement of its own, in a fixed order
// (C++ leaves the order of a call's arguments and of + operands unspecified), so every
// compiler reproduces the shipped corpus byte for byte. The order is the one GCC used
// before the draws were sequenced, so the corpus, and the shipped checkpoints' training
// data, did not change.
TEST(Shipped, GrammarCorpusIsTheGeneratorsOutput) {
  Result<std::string> text = read_file(kGrammar);
  ASSERT_TRUE(text) << text.error().message;
  EXPECT_EQ(*text, generate_grammar_corpus(GrammarCorpusOptions{})) << "regenerate with: headmap-cli make-corpus --grammar --out " << kGrammar;
  for (const std::string& s : chapter_sentences()) EXPECT_NE(text->find(s), std::string::npos) << s;
}

// The real-English targets for the default model (D=128, H=4, L=2, a 6144-token BPE), on
// at least 15 everyday sentences that are not in the corpus: at most 1.5 tokens per word,
// a previous-token head >= 0.7 (best head, mean over the sentences), an induction head
// >= 0.4 on each sentence said twice, and a loss of at most 5.5 nats/token.
TEST(Shipped, DefaultModelReadsEverydayEnglish) {
  Result<ModelWeights> w = load_checkpoint(kShippedDefault);
  ASSERT_TRUE(w) << w.error().message;
  EXPECT_EQ(w->d_model, 128);
  EXPECT_EQ(w->source.trained_heads, 4);
  EXPECT_EQ(w->num_layers(), 2);
  const std::vector<std::string> sentences = everyday_sentences();
  ASSERT_GE(sentences.size(), 15u);
  Result<SentenceEvidence> e = measure_on_sentences(*w, 4, sentences);
  ASSERT_TRUE(e) << e.error().message;
  EXPECT_LE(e->tokens_per_word, 1.5) << "the tokenizer splits everyday words too finely";
  EXPECT_GE(e->best_prev_token, 0.7f) << "no sharp previous-token head on everyday sentences";
  EXPECT_GE(e->best_repeat_induction, 0.4f) << "no induction head on a sentence said twice";
  EXPECT_LE(e->loss, 5.5) << "the model does not read everyday English";
}

// Every shipped checkpoint loads (its own check vector included) and was made by a
// recorded headmap-cli train command on the English corpus.
TEST(Shipped, EveryCheckpointLoadsAndSaysHowItWasMade) {
  int n = 0;
  for (const auto& e : fs::directory_iterator(kAssets + "/checkpoints")) {
    if (e.path().extension() != ".safetensors") continue;
    ++n;
    Result<ModelWeights> w = load_checkpoint(e.path().string());
    ASSERT_TRUE(w) << w.error().message;
    EXPECT_EQ(w->source.corpus, "english-v1") << e.path();
    EXPECT_EQ(w->source.reproduce.rfind("headmap-cli train --corpus english-v1.txt", 0), 0u) << e.path();
    EXPECT_NE(w->source.reproduce.find("--out " + e.path().filename().string()), std::string::npos) << e.path();
    EXPECT_GT(w->source.val_loss, 0.0) << e.path();
    EXPECT_EQ(w->d_model, 128) << "the num_heads slider's stops are at the default d_model";
  }
  EXPECT_GE(n, 5) << "D=128 with H = 1, 2, 4, 8 and H = 4 without W_O";
}

// The shipped models keep their tokenizer, now served by the tokenizer.json pipeline (their
// BPE written out as a tokenizer.json, core/text/hf_tokenizer.h): every valid text splits into
// the same tokens as the BPE gave it, with the same ids, texts and leading spaces, on the
// everyday sentences, grammar lines, hard strings and seeded random strings.
TEST(Shipped, EveryCheckpointsTokenizerIsATokenizerJsonWithTheSameTokens) {
  std::vector<std::string> texts = everyday_sentences();
  Result<std::string> grammar = read_file(kGrammar);
  ASSERT_TRUE(grammar);
  const std::vector<std::string> lines = split_lines(*grammar);
  for (size_t i = 0; i < lines.size() && i < 4000; i += 10) texts.push_back(lines[i]);
  for (const char* s : {"", " ", "   ", "\t", "a\r\nb", "  leading and trailing  ", "1234567 89", "don't I'll we've", "Caf\xC3\xA9 na\xC3\xAFve",
                        "e\xCC\x81", "\xE4\xB8\xAD\xE6\x96\x87", "\xF0\x9F\x91\xA9\xE2\x80\x8D\xF0\x9F\x92\xBB \xF0\x9F\x91\x8D\xF0\x9F\x8F\xBD",
                        "\xD7\xA9\xD7\x9C\xD7\x95\xD7\x9D", "<|endoftext|> <s> [CLS]", "a\n\nb  \n c"})
    texts.push_back(s);
  Rng rng(2024);
  const std::vector<std::string> alphabet = {"a", "Z", " ", "  ", "\t", "\n", "7", "'s", ".", "\xC3\xA9", "\xE4\xB8\xAD", "\xF0\x9F\x98\x80", "\xE2\x80\x8D"};
  for (int k = 0; k < 200; ++k) {
    std::string s;
    const int n = 1 + static_cast<int>(rng.next() % 12);
    for (int i = 0; i < n; ++i) s += alphabet[rng.next() % alphabet.size()];
    texts.push_back(s);
  }
  int n = 0;
  for (const auto& e : fs::directory_iterator(kAssets + "/checkpoints")) {
    if (e.path().extension() != ".safetensors") continue;
    Result<ModelWeights> w = load_checkpoint(e.path().string());
    ASSERT_TRUE(w) << w.error().message;
    ASSERT_TRUE(w->hf_tokenizer) << e.path() << ": no tokenizer.json pipeline";
    EXPECT_EQ(w->hf_tokenizer->vocab_size(), w->bpe.size());
    for (const std::string& t : texts) {
      const TokenizedText a = tokenize(t, TokenizerKind::Bpe, 1 << 20, &w->bpe), b = tokenize(t, 1 << 20, *w->hf_tokenizer);
      ASSERT_EQ(a.tokens.size(), b.tokens.size()) << e.path() << " \"" << t << "\"";
      for (size_t i = 0; i < a.tokens.size(); ++i) {
        EXPECT_EQ(a.tokens[i].id, b.tokens[i].id) << "\"" << t << "\" token " << i;
        EXPECT_EQ(a.tokens[i].text, b.tokens[i].text) << "\"" << t << "\" token " << i;
        EXPECT_EQ(a.tokens[i].leading_space, b.tokens[i].leading_space) << "\"" << t << "\" token " << i;
        EXPECT_FALSE(b.tokens[i].special);
      }
    }
    ++n;
  }
  EXPECT_GE(n, 5);
}
