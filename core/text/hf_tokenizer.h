// hf_tokenizer.h: any Hugging Face tokenizer.json, token for token as the official `tokenizers`
// library (Rust; its Node binding is the oracle of tests/reference/hf_tokenizer_oracle.mjs).
//
// N = tokens of one encoding. The pipeline, one stage per step as the format defines it:
//   0. invalid UTF-8 is replaced by U+FFFD and counted (the official library takes only
//      valid text), so nothing is lost silently;
//   1. added tokens with "normalized": false are cut out of the raw text (leftmost-longest,
//      with their single_word / lstrip / rstrip flags);
//   2. "normalizer" runs on each remaining piece (NFC, NFD, NFKC, NFKD, Lowercase,
//      StripAccents, Strip, Prepend, Replace, BertNormalizer, Sequence), then the added
//      tokens with "normalized": true are cut out of the normalized pieces;
//   3. "pre_tokenizer" splits the pieces into words (ByteLevel, Split, Metaspace, Whitespace,
//      WhitespaceSplit, Digits, Punctuation, BertPreTokenizer, Sequence);
//   4. "model" turns each word into tokens (BPE with byte fallback, WordPiece, Unigram);
//   5. "post_processor" adds the special tokens and type ids (TemplateProcessing,
//      BertProcessing, RobertaProcessing, ByteLevel, Sequence);
//   6. "decoder" turns ids back into text (ByteLevel, Metaspace, WordPiece, ByteFallback,
//      Fuse, Strip, Replace, Sequence).
// Every string of the file is data: regexes run in PCRE2 (Unicode classes, possessive and
// lookahead forms as the real files write them), normalization forms come from ICU.
// Truncation and padding settings of the file are not applied (transformers' tokenizer(text)
// does not apply them either unless asked).
//
// The file is untrusted: its size and nesting depth are checked before it is parsed, every
// count before anything is allocated for it, and a message names the field at fault
// ("model.merges[12]: ...").
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.h"

namespace headmap {

// One encoding: ids and what goes with them, (N) each.
struct HfEncoding {
  std::vector<int> ids;                               // (N)
  std::vector<int> type_ids;                          // (N) 0 for the first text, 1 for the pair's
  std::vector<uint8_t> special;                       // (N) 1: added by the post-processor
  std::vector<std::string> pieces;                    // (N) the tokens as the vocabulary spells them
  std::vector<std::pair<size_t, size_t>> offsets;     // (N) byte range in the (repaired) input text; (0, 0) for added specials
  std::vector<int> sequence;                          // (N) 0: first text, 1: pair, -1: added by the post-processor
  int invalid_utf8 = 0;                               // invalid sequences replaced by U+FFFD (both texts)
  // Regex splits (a Split pre-tokenizer, a Replace normalizer) that gave up: PCRE2's match
  // limit, or the time budget of one encoding (5 s); the rest of that piece was left
  // unsplit, so the tokens may differ from the official library's. Reported, never silent.
  int regex_stopped = 0;
  std::string text, pair;                             // the texts as tokenized (valid UTF-8)
};

class HfTokenizer {
 public:
  static constexpr size_t kMaxFileBytes = size_t(256) << 20;  // Gemma 3's is 33 MB
  static constexpr int kMaxDepth = 64;                        // JSON nesting

  // Parses a tokenizer.json text. `origin` names the file in messages.
  static Result<HfTokenizer> from_json(std::string_view json, const std::string& origin = "tokenizer.json");
  // Reads a tokenizer.json file, or the tokenizer.json inside a directory.
  static Result<HfTokenizer> load(const std::string& file_or_dir);

  // transformers' tokenizer(text) / tokenizer(text, pair): special tokens added.
  HfEncoding encode(std::string_view text, bool add_special_tokens = true) const;
  HfEncoding encode_pair(std::string_view text, std::string_view pair, bool add_special_tokens = true) const;
  // The decoder's text of the ids (ids out of range are skipped).
  std::string decode(const std::vector<int>& ids, bool skip_special_tokens = false) const;
  // What one token stands for, for a chip: the decoder's text of the id alone, with a
  // leading space kept (a byte-fallback piece that is not a whole character reads "<0xE2>").
  std::string token_text(int id) const;

  int vocab_size() const;                 // the largest id + 1 of the vocabulary and added tokens
  // Every id the tokenizer can produce (its vocabulary, added tokens, and the special tokens
  // its post-processor adds) is below `model_vocab`; else the message names this file, the
  // field and the id, and `model_field` ("config.json's vocab_size"). Run where a tokenizer
  // meets a model's embedding, so that no id past it reaches the forward pass.
  Status check_ids_below(int model_vocab, const std::string& model_field) const;
  std::string id_to_token(int id) const;  // "" when out of range
  int token_to_id(std::string_view token) const;  // -1 when absent
  bool is_special(int id) const;          // an added token marked special
  // "BPE", "WordPiece" or "Unigram", and what the pipeline is made of, for people.
  std::string model_type() const;
  std::string describe() const;

 private:
  struct Impl;
  std::shared_ptr<const Impl> impl_;
};

}  // namespace headmap
