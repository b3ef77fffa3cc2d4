// test_bpe.cpp: the byte-level BPE (core/text/bpe.h): GPT-2's pre-tokenization, lossless
// encoding of any bytes, deterministic training, the file formats, and F16 storage.
// GPT-2's own vocabulary and expected ids are tested in test_gpt2_tokenizer.cpp.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/math/half.h"
#include "core/math/rng.h"
#include "core/text/bpe.h"

using namespace headmap;

namespace {
std::vector<std::string> pieces(std::string_view s) {
  std::vector<std::string> out;
  for (std::string_view p : gpt2_pretokenize(s)) out.emplace_back(p);
  return out;
}

const Bpe& small_bpe() {
  static const Bpe b = Bpe::train({"the cat sat on the mat", "the cats sat on the mats", "a cat is not a mat", "that cat, this mat!"}, 320, 1);
  return b;
}
}  // namespace

TEST(Bpe, PretokenizesAsGpt2) {
  using V = std::vector<std::string>;
  EXPECT_EQ(pieces("Hello world"), (V{"Hello", " world"}));
  EXPECT_EQ(pieces("I'll go, don't you?"), (V{"I", "'ll", " go", ",", " don", "'t", " you", "?"}));
  EXPECT_EQ(pieces("in 2027 it's 12.5%"), (V{"in", " 2027", " it", "'s", " 12", ".", "5", "%"}));
  // Runs of spaces: all but the last stay together, the last one leads the next word.
  EXPECT_EQ(pieces("a   b"), (V{"a", "  ", " b"}));
  EXPECT_EQ(pieces("end  \n"), (V{"end", "  \n"}));
  EXPECT_EQ(pieces("tab\there"), (V{"tab", "\t", "here"}));
  // Unicode letters and numbers are classes of their own (\p{L}, \p{N}).
  EXPECT_EQ(pieces("café naïve"), (V{"café", " naïve"}));
  EXPECT_EQ(pieces("日本語です"), (V{"日本語です"}));
  EXPECT_EQ(pieces("x \xF0\x9F\x98\x80!"), (V{"x", " \xF0\x9F\x98\x80!"}));
  // "'S" is not one of the lowercase contractions.
  EXPECT_EQ(pieces("IT'S"), (V{"IT", "'", "S"}));
}

TEST(Bpe, InvalidBytesArePiecesOfTheirOwn) {
  EXPECT_EQ(pieces("ab\xFF" "cd"), (std::vector<std::string>{"ab", "\xFF", "cd"}));
  EXPECT_EQ(pieces("\xE2\x82"), (std::vector<std::string>{"\xE2", "\x82"}));  // a truncated sequence
}

TEST(Bpe, AnyBytesRoundTrip) {
  const Bpe& b = small_bpe();
  Rng rng(5);
  for (int trial = 0; trial < 300; ++trial) {
    std::string s;
    const int n = rng.below(60);
    for (int i = 0; i < n; ++i) {
      switch (rng.below(4)) {
        case 0: s.push_back(static_cast<char>(rng.below(256))); break;           // any byte
        case 1: s += " the cat"; break;
        case 2: s += "\xF0\x9F\x91\xA9\xE2\x80\x8D\xF0\x9F\x92\xBB"; break;  // ZWJ emoji
        default: s.push_back(" \t\n'"[rng.below(4)]);
      }
    }
    const std::vector<int> ids = b.encode(s);
    for (int id : ids) ASSERT_TRUE(id >= 0 && id < b.size());
    ASSERT_EQ(b.decode(ids), s) << "trial " << trial;
  }
}

TEST(Bpe, MergesApplyByRankLeftmostFirst) {
  // Two merges: "a a" (rank 0) then "aa a" (rank 1). "aaa" -> [aa][a] -> [aaa];
  // "aaaa" -> [aa][aa] (the second "a a" is merged before "aa a" is looked at).
  std::vector<std::string> vocab;
  for (int c = 0; c < 256; ++c) vocab.push_back(gpt2_spell(std::string(1, static_cast<char>(c))));
  vocab.push_back("aa");
  vocab.push_back("aaa");
  Result<Bpe> b = Bpe::from_lists(vocab, {"a a", "aa a"});
  ASSERT_TRUE(b) << b.error().message;
  EXPECT_EQ(b->encode("aaa"), (std::vector<int>{257}));
  EXPECT_EQ(b->encode("aaaa"), (std::vector<int>{256, 256}));
  EXPECT_EQ(b->encode("aaaaa"), (std::vector<int>{256, 257}));
}

TEST(Bpe, LongRunsEncode) {
  // A 200,000-letter "word" is one pre-token; the heap keeps it O(n log n).
  const std::string s(200000, 'a');
  const std::vector<int> ids = small_bpe().encode(s);
  EXPECT_EQ(small_bpe().decode(ids), s);
}

TEST(Bpe, TrainingIsDeterministicAndLearnsFrequentPairs) {
  const std::vector<std::string> lines = {"the cat sat on the mat", "the cats sat on the mats", "the the the"};
  const Bpe a = Bpe::train(lines, 300, 1), b = Bpe::train(lines, 300, 1);
  EXPECT_TRUE(a == b);
  EXPECT_GE(a.find(" the"), 256) << "the most frequent word is a token";
  EXPECT_EQ(a.encode(" the").size(), 1u);
  // Fewer merges than asked when pairs run out (min count 2).
  const Bpe c = Bpe::train({"ab"}, 300);
  EXPECT_EQ(c.size(), 256);
}

TEST(Bpe, ListsAndTokenizerJsonRoundTrip) {
  const Bpe& b = small_bpe();
  Result<Bpe> c = Bpe::from_lists(b.vocab_list(), b.merges_list());
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_TRUE(*c == b);
  nlohmann::json vocab = nlohmann::json::object();
  const auto vl = b.vocab_list();
  for (size_t i = 0; i < vl.size(); ++i) vocab[vl[i]] = i;
  const nlohmann::json tj = {{"model", {{"type", "BPE"}, {"vocab", vocab}, {"merges", b.merges_list()}}}};
  Result<Bpe> d = Bpe::from_tokenizer_json(tj.dump());
  ASSERT_TRUE(d) << d.error().message;
  EXPECT_TRUE(*d == b);
  // vocab.json + merges.txt, with the "#version" line GPT-2's file starts with.
  std::string merges = "#version: 0.2\n";
  for (const auto& m : b.merges_list()) merges += m + "\n";
  Result<Bpe> e = Bpe::from_gpt2_files(vocab.dump(), merges);
  ASSERT_TRUE(e) << e.error().message;
  EXPECT_TRUE(*e == b);
}

TEST(Bpe, BadFilesAreRefusedWithAReason) {
  auto expect_bad = [](const Result<Bpe>& r, const std::string& needle) {
    ASSERT_FALSE(r);
    EXPECT_NE(r.error().message.find(needle), std::string::npos) << r.error().message;
  };
  expect_bad(Bpe::from_gpt2_files("not json", ""), "not valid JSON");
  expect_bad(Bpe::from_gpt2_files(R"({"a": 0})", ""), "no token for the byte");
  std::vector<std::string> bytes;
  for (int c = 0; c < 256; ++c) bytes.push_back(gpt2_spell(std::string(1, static_cast<char>(c))));
  expect_bad(Bpe::from_lists(bytes, {"a b"}), "not in the vocabulary");
  expect_bad(Bpe::from_lists(bytes, {"ab"}), "two tokens");
  auto twice = bytes;
  twice.push_back("a");
  expect_bad(Bpe::from_lists(twice, {}), "twice");
  expect_bad(Bpe::from_lists({"\xE4\xB8\x80"}, {}), "outside GPT-2's byte alphabet");
  expect_bad(Bpe::from_tokenizer_json(R"({"model": {"type": "WordPiece"}})"), "not BPE");
  expect_bad(Bpe::from_tokenizer_json(R"({"model": {"type": "BPE", "vocab": {"a": "x"}, "merges": []}})"), "not an integer");
}

TEST(Bpe, SpellingIsGpt2sByteAlphabet) {
  EXPECT_EQ(gpt2_spell(" cat"), "\xC4\xA0" "cat");  // Ġcat
  EXPECT_EQ(gpt2_spell("\n"), "\xC4\x8A");          // Ċ
  Result<std::string> back = gpt2_unspell("\xC4\xA0" "cat");
  ASSERT_TRUE(back);
  EXPECT_EQ(*back, " cat");
  for (int c = 0; c < 256; ++c) {
    const std::string one(1, static_cast<char>(c));
    Result<std::string> r = gpt2_unspell(gpt2_spell(one));
    ASSERT_TRUE(r);
    EXPECT_EQ(*r, one);
  }
}

TEST(Half, ConvertsExactlyAndRoundsToNearestEven) {
  EXPECT_EQ(float_to_half(1.0f), 0x3C00);
  EXPECT_EQ(float_to_half(-2.0f), 0xC000);
  EXPECT_EQ(float_to_half(65504.0f), 0x7BFF);
  EXPECT_EQ(float_to_half(65520.0f), 0x7C00) << "halfway to 65536 rounds to even: infinity";
  EXPECT_EQ(float_to_half(5.9604644775390625e-8f), 0x0001) << "the smallest subnormal";
  EXPECT_EQ(float_to_half(2.98e-8f), 0x0000);
  EXPECT_EQ(float_to_half(1.0f + 1.0f / 2048), 0x3C00) << "a tie rounds to the even mantissa";
  EXPECT_EQ(float_to_half(1.0f + 3.0f / 2048), 0x3C02);
  EXPECT_TRUE(std::isnan(half_to_float(float_to_half(std::numeric_limits<float>::quiet_NaN()))));
  // Every half value survives half -> float -> half.
  for (uint32_t h = 0; h < 0x10000; ++h) {
    const float f = half_to_float(static_cast<uint16_t>(h));
    if (std::isnan(f)) continue;
    ASSERT_EQ(float_to_half(f), h) << std::hex << h;
  }
  EXPECT_EQ(bf16_to_float(0x3F80), 1.0f);
}
