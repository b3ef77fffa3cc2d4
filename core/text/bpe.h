// bpe.h: byte-level byte-pair encoding, GPT-2's algorithm (Radford et al. 2019, §2.2).
//
// V = vocabulary size. A token is a byte string; ids index `tokens`.
//
//   1. Pre-tokenize with GPT-2's pattern (run by PCRE2 in UTF + Unicode-property mode):
//        's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
//      so merges never cross a word, number or symbol boundary, and a word carries its
//      leading space (" cat"). Bytes that are not valid UTF-8 become pre-tokens of their own.
//   2. Each pre-token starts as its bytes, one base token per byte (every byte has one, so
//      nothing is ever unknown), and the adjacent pair with the lowest merge rank is merged,
//      leftmost first, until no ranked pair is left.
//   3. Decoding concatenates the tokens' bytes: decode(encode(s)) == s for any bytes s.
//
// Files. GPT-2's vocab.json maps token strings to ids and merges.txt lists "left right" pairs
// in rank order. Both spell bytes through GPT-2's byte-to-unicode map: the printable bytes
// '!'..'~', '¡'..'¬', '®'..'ÿ' stand for themselves, the other 68 bytes for U+0100 + n in
// byte order (so a space is "Ġ"). `tokenizer.json` (Hugging Face) holds the same two tables
// under model.vocab and model.merges. headmap's checkpoints store the same two lists.
#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/error.h"

namespace headmap {

class Bpe {
 public:
  // ---- building ----
  // From GPT-2's files (texts of vocab.json and merges.txt). Every merge's two parts and
  // its result must be in the vocabulary, and all 256 bytes must have a token.
  static Result<Bpe> from_gpt2_files(std::string_view vocab_json, std::string_view merges_txt);
  // From a Hugging Face tokenizer.json whose model is BPE over GPT-2's byte-level alphabet.
  static Result<Bpe> from_tokenizer_json(std::string_view json);
  // From token strings (ids in order) and merges ("left right"), both in GPT-2's
  // byte-to-unicode spelling: the form checkpoints store.
  static Result<Bpe> from_lists(const std::vector<std::string>& vocab, const std::vector<std::string>& merges);

  // Learns merges from text, deterministically: ids 0..255 are the bytes, then one token
  // per merge in the order learned. Each round merges the most frequent adjacent pair over
  // all pre-tokens (ties: the pair whose token ids are smallest), until the vocabulary has
  // `vocab_size` tokens or no pair occurs `min_pair_count` times.
  static Bpe train(const std::vector<std::string>& lines, int vocab_size, int min_pair_count = 2);

  // ---- using ----
  // Ids of the text's tokens. Never fails; any bytes are accepted.
  std::vector<int> encode(std::string_view bytes) const;
  // The bytes of the ids, concatenated. Ids out of range are skipped.
  std::string decode(const std::vector<int>& ids) const;
  // The byte-level pieces of one pre-token.
  void encode_piece(std::string_view piece, std::vector<int>& out) const;

  int size() const { return static_cast<int>(tokens_.size()); }
  bool empty() const { return tokens_.empty(); }
  const std::string& token_bytes(int id) const { return tokens_[static_cast<size_t>(id)]; }
  int find(std::string_view token_bytes) const;  // -1 if absent
  int byte_token(unsigned char b) const { return byte_id_[b]; }
  int num_merges() const { return static_cast<int>(merges_.size()); }

  // The two lists in GPT-2's spelling, as checkpoints store them.
  std::vector<std::string> vocab_list() const;
  std::vector<std::string> merges_list() const;

  bool operator==(const Bpe& o) const { return tokens_ == o.tokens_ && merges_ == o.merges_; }

 private:
  struct Merge {
    int left, right, result;
    bool operator==(const Merge&) const = default;
  };
  std::vector<std::string> tokens_;             // (V) id -> bytes
  std::unordered_map<std::string, int> index_;  // bytes -> id
  std::vector<Merge> merges_;                   // in rank order
  std::unordered_map<uint64_t, int> rank_;      // (left << 32 | right) -> rank
  std::array<int, 256> byte_id_{};

  static Result<Bpe> build(std::vector<std::string> tokens, const std::vector<std::pair<std::string, std::string>>& merges);
  int rank(int left, int right) const;
};

// Splits text into GPT-2's pre-tokens (byte ranges of the input). Invalid UTF-8 bytes
// each form a pre-token of their own.
std::vector<std::string_view> gpt2_pretokenize(std::string_view bytes);
// GPT-2's pre-tokenization pattern (above), which tokenizer.json's ByteLevel pre-tokenizer names.
extern const char* const kGpt2SplitPattern;

// GPT-2's byte-to-unicode spelling of bytes ("Ġcat" for " cat"), and back. The inverse fails
// on characters outside the 256-character alphabet.
std::string gpt2_spell(std::string_view bytes);
Result<std::string> gpt2_unspell(std::string_view spelled);

}  // namespace headmap
