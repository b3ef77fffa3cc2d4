// test_hf_tokenizer.cpp: the tokenizer.json pipeline's own checks, without Node (the token-
// for-token comparisons with the official library are the hf_tokenizer_matches_official_*
// ctest tests): GPT-2's files through the same pipeline give GPT-2's reference ids, hostile
// files are refused with a message naming the field, invalid UTF-8 is reported, and a model
// directory's files are found.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/io/file_io.h"
#include "core/text/bpe.h"
#include "core/text/hf_tokenizer.h"
#include "test_util.h"

namespace fs = std::filesystem;
using namespace headmap;

namespace {

using test::kTestData;

fs::path fresh_dir(const std::string& name) {
  const fs::path d = fs::temp_directory_path() / ("headmap-hf-" + name + "-" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

}  // namespace

// GPT-2's vocab.json + merges.txt, read as the tokenizer.json they amount to, give the ids of
// GPT-2's reference encoder (tests/data/gpt2/expected_ids.json), as the byte-level Bpe does.
TEST(HfTokenizer, Gpt2FilesGiveTheReferenceIds) {
  const fs::path d = fresh_dir("gpt2");
  fs::copy_file(kTestData + "/gpt2/encoder.json", d / "vocab.json");
  fs::copy_file(kTestData + "/gpt2/vocab.bpe", d / "merges.txt");
  auto tok = HfTokenizer::load(d.string());
  ASSERT_TRUE(tok.ok()) << tok.error().message;
  EXPECT_EQ(tok->model_type(), "BPE");
  const nlohmann::json exp = nlohmann::json::parse(*read_file(kTestData + "/gpt2/expected_ids.json"));
  int n = 0;
  for (const auto& c : exp.at("cases")) {
    const std::string text = c.at("text");
    const HfEncoding e = tok->encode(text);
    EXPECT_EQ(e.ids, c.at("ids").get<std::vector<int>>()) << c.at("name");
    EXPECT_EQ(tok->decode(e.ids), text) << c.at("name");
    ++n;
  }
  EXPECT_GT(n, 50);
  // "<|endoftext|>" inside the text is the special token, one id, as the official library has it.
  EXPECT_EQ(tok->encode("a<|endoftext|>b").ids, (std::vector<int>{64, 50256, 65}));
  fs::remove_all(d);
}

TEST(HfTokenizer, InvalidUtf8IsReportedNeverLost) {
  auto tok = HfTokenizer::load(kTestData + "/tokenizers/wordpiece_bert.json");
  ASSERT_TRUE(tok.ok()) << tok.error().message;
  const HfEncoding e = tok->encode("cat \xFF\xC3 dog");
  EXPECT_EQ(e.invalid_utf8, 2);
  EXPECT_EQ(e.text, "cat \xEF\xBF\xBD\xEF\xBF\xBD dog");
  ASSERT_GE(e.ids.size(), 4u);
  EXPECT_EQ(e.pieces.front(), "[CLS]");
  EXPECT_EQ(e.special.front(), 1);
  EXPECT_EQ(e.pieces.back(), "[SEP]");
}

TEST(HfTokenizer, HostileFilesNameTheField) {
  const std::pair<std::string, std::string> cases[] = {
      {std::string(200, '['), "nests deeper than 64"},
      {R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": ["a b"]}})", "model.merges[0]"},
      {R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": [7]}})", "model.merges[0] is neither"},
      {R"({"model": {"type": "BPE", "vocab": {"a": -3}}})", "model.vocab[\"a\"]"},
      {R"({"model": {"type": "BPE", "vocab": {"a": 0, "b": 0}}})", "gives the id 0 to two tokens"},
      {R"({"model": {"type": "BPE", "vocab": {"a": 0, "b": 4000000}}})", "leave most of"},
      {R"({"model": {"type": "BPE", "vocab": {"a": 0}, "dropout": 0.1}})", "model.dropout"},
      {R"({"model": {"type": "WordPiece", "vocab": {"a": 0}}})", "model.unk_token \"[UNK]\""},
      {R"({"model": {"type": "Unigram", "vocab": [["a", "x"]]}})", "model.vocab[0]"},
      {R"({"model": {"type": "Unigram", "vocab": [["a", 0]], "unk_id": 9}})", "model.unk_id"},
      {R"({"model": {"type": "WordLevel", "vocab": {}}})", "model.type \"WordLevel\""},
      {R"({"model": {"type": "BPE", "vocab": {}}, "normalizer": {"type": "Precompiled"}})", "normalizer.type \"Precompiled\""},
      {R"({"model": {"type": "BPE", "vocab": {}}, "pre_tokenizer": {"type": "Sequence", "pretokenizers": [{"type": "Split", "pattern": {"Regex": "(a"}, "behavior": "Isolated"}]}})",
       "pre_tokenizer.pretokenizers[0].pattern: the regex does not compile"},
      {R"({"model": {"type": "BPE", "vocab": {}}, "pre_tokenizer": {"type": "Split", "pattern": {"String": "a"}, "behavior": "Sideways"}})",
       "pre_tokenizer.behavior"},
      {R"({"model": {"type": "BPE", "vocab": {}}, "post_processor": {"type": "TemplateProcessing", "single": [{"SpecialToken": {"id": "<s>"}}], "pair": [], "special_tokens": {}}})",
       "post_processor.single[0] names \"<s>\""},
      {R"({"model": {"type": "BPE", "vocab": {}}, "added_tokens": [{"id": 1, "content": ""}]})", "added_tokens[0].content"},
      {R"({"model": {"type": "BPE", "vocab": {}}, "decoder": {"type": "Strip", "content": "ab"}})", "decoder.content"},
      {"{\"model\": ", "is not valid JSON"},
      {"[1, 2]", "is not a JSON object"},
      {R"({"model": {"type": "BPE", "vocab": {"a": {"b": [1]}}, "merges": []}})", "model.vocab[\"a\"] is not an id"},
      {R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": [["a", "a", "a"]]}})", "model.merges[0] is neither"},
  };
  for (const auto& [text, want] : cases) {
    auto tok = HfTokenizer::from_json(text, "t.json");
    ASSERT_FALSE(tok.ok()) << text;
    EXPECT_NE(tok.error().message.find(want), std::string::npos) << tok.error().message << "\n  wanted: " << want;
    EXPECT_EQ(tok.error().message.rfind("t.json: ", 0), 0u) << tok.error().message;
  }
}

TEST(HfTokenizer, ModelDirectoryFiles) {
  const fs::path d = fresh_dir("dir");
  {
    std::ofstream(d / "vocab.txt") << "[PAD]\n[UNK]\n[CLS]\n[SEP]\nthe\ncat\n##s\n.\n";
  }
  auto bert = HfTokenizer::load(d.string());
  ASSERT_TRUE(bert.ok()) << bert.error().message;
  EXPECT_EQ(bert->model_type(), "WordPiece");
  const HfEncoding e = bert->encode("The cats.");
  EXPECT_EQ(e.pieces, (std::vector<std::string>{"[CLS]", "the", "cat", "##s", ".", "[SEP]"}));
  fs::remove(d / "vocab.txt");
  { std::ofstream(d / "tokenizer.model") << "protobuf"; }
  auto sp = HfTokenizer::load(d.string());
  ASSERT_FALSE(sp.ok());
  EXPECT_NE(sp.error().message.find("tokenizer.json"), std::string::npos) << sp.error().message;
  fs::remove_all(d);
}
