// hf_models.h: the tokenizer.json "model" stage (hf_tokenizer.h, step 4), and the older
// vocabulary files as tokenizer.json.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <unordered_map>
#include <string>
#include <vector>

#include "core/text/hf_stages.h"

namespace headmap::hf {

struct ModelTok {
  int id;
  size_t b, e;  // byte range inside the word
};

struct SvHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};
using StringIndex = std::unordered_map<std::string, int, SvHash, std::equal_to<>>;

struct Vocab {
  std::vector<std::string> tokens;  // (V) id -> token ("" for a hole)
  StringIndex index;                // token -> id (looked up without a copy)
  size_t longest = 0;               // bytes of the longest token
  int find(std::string_view t) const {
    auto it = index.find(t);
    return it == index.end() ? -1 : it->second;
  }
};

struct Model {
  virtual ~Model() = default;
  virtual void tokenize(std::string_view word, std::vector<ModelTok>& out) const = 0;
  virtual std::string name() const = 0;
  // WordPiece's continuing_subword_prefix ("##"): a continuation reads as what it adds to its word.
  virtual std::string continuing_prefix() const { return ""; }
  Vocab vocab;
};

// model.vocab and model.merges, the two big tables (Gemma 3: 262,144 and 514,906 entries),
// read straight from the parser's events into these lists rather than into a JSON tree.
struct BigTables {
  bool vocab_present = false, merges_present = false;
  std::vector<std::pair<std::string, int64_t>> vocab;  // token, id (-1: not an id)
  std::vector<std::pair<std::string, std::string>> merges;
  long bad_merge = -1;  // the first merge that is neither "a b" nor [a, b]
};


// The "model" object: BPE (with byte fallback), WordPiece, Unigram. model.vocab and
// model.merges come from `big` when the reader took them out of the tree.
Result<std::unique_ptr<Model>> parse_model(const json& j, const std::string& where, BigTables& big);

// GPT-2's vocab.json + merges.txt, and BERT's vocab.txt, as the tokenizer.json that says the same.
Result<std::string> gpt2_files_as_json(const std::string& vocab_text, const std::string& merges_text, const std::string& dir);
Result<std::string> bert_vocab_as_json(const std::string& text, bool lowercase);

}  // namespace headmap::hf
