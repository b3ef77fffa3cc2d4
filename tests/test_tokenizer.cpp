// Tokenizer: word and char modes, odd text, invalid UTF-8, truncation.
#include <gtest/gtest.h>

#include "core/model/model.h"
#include "core/text/bpe.h"
#include "core/text/tokenizer.h"
#include "core/text/utf8.h"

using namespace headmap;

static std::vector<std::string> texts(const TokenizedText& t) {
  std::vector<std::string> out;
  for (const Token& k : t.tokens) out.push_back(k.text);
  return out;
}

TEST(Tokenizer, WordsAndPunctuationAreSeparate) {
  const TokenizedText t = tokenize("The cat sat on the mat because it was tired.", TokenizerKind::Word, 256);
  EXPECT_EQ(texts(t), (std::vector<std::string>{"The", "cat", "sat", "on", "the", "mat", "because", "it", "was", "tired", "."}));
  EXPECT_FALSE(t.truncated());
  EXPECT_EQ(t.invalid_utf8, 0);
}

TEST(Tokenizer, ApostrophesAndNumbersStayInsideWords) {
  EXPECT_EQ(texts(tokenize("The chicken didn't cross, 3.14!", TokenizerKind::Word, 256)),
            (std::vector<std::string>{"The", "chicken", "didn't", "cross", ",", "3.14", "!"}));
  EXPECT_EQ(texts(tokenize("'quoted'", TokenizerKind::Word, 256)), (std::vector<std::string>{"'", "quoted", "'"}));
}

TEST(Tokenizer, AccentsEmojiAndCjk) {
  // Accented words stay whole, including a decomposed e + combining acute.
  EXPECT_EQ(texts(tokenize("café naïve cafe\xCC\x81", TokenizerKind::Word, 256)),
            (std::vector<std::string>{"café", "naïve", "cafe\xCC\x81"}));
  // An emoji ZWJ family, a flag and a skin-toned thumb are one token each.
  const std::string family = "\xF0\x9F\x91\xA8\xE2\x80\x8D\xF0\x9F\x91\xA9\xE2\x80\x8D\xF0\x9F\x91\xA7";
  const std::string flag = "\xF0\x9F\x87\xAB\xF0\x9F\x87\xB7";
  const std::string thumb = "\xF0\x9F\x91\x8D\xF0\x9F\x8F\xBD";
  EXPECT_EQ(texts(tokenize("hi" + family + flag + " " + thumb + "!", TokenizerKind::Word, 256)),
            (std::vector<std::string>{"hi", family, flag, thumb, "!"}));
  // Each ideograph is a token; Greek is a word.
  EXPECT_EQ(texts(tokenize("猫が好き αβγ", TokenizerKind::Word, 256)),
            (std::vector<std::string>{"猫", "が", "好", "き", "αβγ"}));
}

TEST(Tokenizer, CharModeKeepsSpacesAndClusters) {
  const TokenizedText t = tokenize("a é\xF0\x9F\x91\x8D\xF0\x9F\x8F\xBD", TokenizerKind::Char, 256);
  EXPECT_EQ(texts(t), (std::vector<std::string>{"a", " ", "é", "\xF0\x9F\x91\x8D\xF0\x9F\x8F\xBD"}));
  EXPECT_EQ(token_display(t.tokens[1]), "\xE2\x90\xA3");
}

TEST(Tokenizer, InvalidUtf8IsReplacedAndCounted) {
  // A stray continuation byte, an overlong '/', a truncated 3-byte sequence, a surrogate.
  const std::string bad = "ok \x80 x\xC0\xAF y\xE2\x82 z\xED\xA0\x80";  // 17 bytes, no NUL inside
  const TokenizedText t = tokenize(bad, TokenizerKind::Word, 256);
  // \x80, \xC0, \xAF, \xE2\x82, then \xED \xA0 \x80 three times: a surrogate's lead cannot be
  // followed by \xA0, so each byte is a maximal subpart of its own (Unicode's practice, Node's).
  EXPECT_EQ(t.invalid_utf8, 7);
  for (const Token& k : t.tokens) {
    const DecodedText d = decode_utf8(k.text);
    EXPECT_EQ(d.replaced, 0) << "every token is valid UTF-8";
  }
  const std::vector<std::string> got = texts(t);
  EXPECT_NE(std::find(got.begin(), got.end(), "\xEF\xBF\xBD"), got.end());
}

TEST(Tokenizer, TruncationIsReported) {
  std::string text;
  for (int i = 0; i < 500; ++i) text += "word" + std::to_string(i) + " ";
  const TokenizedText t = tokenize(text, TokenizerKind::Word, 256);
  EXPECT_EQ(t.tokens.size(), 256u);
  EXPECT_EQ(t.total_tokens, 500);
  EXPECT_TRUE(t.truncated());
  ModelConfig cfg;
  const Batch b = make_batch({text}, cfg, random_weights(64, 2, 7));
  ASSERT_EQ(b.notes().size(), 1u);
  EXPECT_NE(b.notes()[0].find("truncated to the context of 256 tokens (the text has 500)"), std::string::npos);
}

// The truncation note says what to do, in each case: raise the context while it can grow;
// at a trained model's positions, shorten, split or switch to random init; at the most
// headmap reads, shorten or split.
TEST(Tokenizer, TruncationNotesSayWhatToDo) {
  std::string text;
  for (int i = 0; i < 3000; ++i) text += "w" + std::to_string(i % 50) + " ";
  const ModelWeights w = random_weights(64, 2, 7);
  ModelConfig cfg;
  cfg.context = 256;
  const Batch raise = make_batch({text}, cfg, w);
  EXPECT_NE(raise.notes()[0].find("Raise the context to 2048"), std::string::npos) << raise.notes()[0];
  cfg.context = 64;  // a trained model of 128 positions, the context below them
  const Batch raise_trained = make_batch({text}, cfg, w);
  EXPECT_NE(raise_trained.notes(128)[0].find("Raise the context to 128"), std::string::npos) << raise_trained.notes(128)[0];
  cfg.context = 128;
  const Batch trained = make_batch({text}, cfg, w);
  const std::string t = trained.notes(128)[0];
  EXPECT_NE(t.find("learned only 128 positions"), std::string::npos) << t;
  EXPECT_NE(t.find("random init"), std::string::npos) << t;
  EXPECT_EQ(t.find("Raise the context"), std::string::npos) << t;
  cfg.context = kMaxContext;
  const Batch most = make_batch({text}, cfg, w);
  const std::string m = most.notes()[0];
  EXPECT_NE(m.find("2048 tokens is the most headmap reads"), std::string::npos) << m;
  EXPECT_EQ(m.find("Raise the context"), std::string::npos) << m;
  cfg.context = 4;
  const Batch all = make_batch({"a b c d e f g h i j"}, cfg, w);
  EXPECT_NE(all.notes()[0].find("Raise the context to 10 to see all of it."), std::string::npos) << all.notes()[0];
}

TEST(Tokenizer, EmptyAndBlankTextGiveAnEmptyBatch) {
  EXPECT_TRUE(tokenize("", TokenizerKind::Word, 256).tokens.empty());
  EXPECT_TRUE(tokenize("   \t ", TokenizerKind::Word, 256).tokens.empty());
  const Batch b = make_batch({"", "   ", "\t"}, ModelConfig{}, random_weights(64, 2, 7));
  EXPECT_TRUE(b.empty());
  EXPECT_EQ(b.blank_lines, 3);
}

TEST(Tokenizer, BpeFallsBackToPiecesNeverUnknown) {
  const Bpe v = Bpe::train({"the cat sat on the mat", "the cat is tired", "cats and mats"}, 300, 1);
  const TokenizedText t = tokenize("the catalogue \xE2\x98\x83", TokenizerKind::Bpe, 256, &v);
  ASSERT_GE(t.tokens.size(), 3u);
  EXPECT_EQ(t.tokens[0].text, "the");
  EXPECT_FALSE(t.tokens[0].continues);
  // " catalogue" is not in the vocabulary: it becomes pieces, starting with " cat".
  EXPECT_EQ(t.tokens[1].text, " cat");
  EXPECT_TRUE(t.tokens[1].leading_space);
  EXPECT_EQ(token_display(t.tokens[1]), "\xC2\xB7" "cat");
  EXPECT_TRUE(t.tokens[2].continues);
  std::vector<int> ids;
  for (const Token& k : t.tokens) {
    EXPECT_GE(k.id, 0) << k.text;
    EXPECT_LT(k.id, v.size());
    ids.push_back(k.id);
  }
  // The snowman was never seen: it is spelled with its bytes, and decodes back exactly.
  EXPECT_EQ(t.tokens.back().text, "<0x83>");
  EXPECT_EQ(v.decode(ids), "the catalogue \xE2\x98\x83");
}
