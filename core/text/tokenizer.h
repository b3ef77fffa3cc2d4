// tokenizer.h: typed text -> tokens. Never fails: invalid UTF-8 and over-long text are
// repaired and reported, never silently dropped.
//
// Modes
//   word   words and punctuation are separate tokens ("tired." -> "tired", "."); emoji and
//          CJK ideographs are one token each; accents and combining marks stay in their word.
//   char   one token per user-perceived character (a base code point plus its combining
//          marks, variation selectors, skin tones and ZWJ sequences), spaces included.
//   vocab  a trained model's vocabulary: word-mode pieces looked up whole, else split into
//          the longest known sub-words, else characters, else bytes. Nothing becomes <unk>.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace headmap {

enum class TokenizerKind { Word, Char, Vocab };

const char* tokenizer_name(TokenizerKind kind);
bool parse_tokenizer(std::string_view name, TokenizerKind* out);

struct Token {
  std::string text;        // the token's own text, valid UTF-8 (a byte token reads "<0xE2>")
  int id = -1;             // vocabulary id in vocab mode, -1 otherwise
  bool continues = false;  // vocab mode: a piece that continues the previous token's word
};

struct TokenizedText {
  std::vector<Token> tokens;  // at most `context` tokens
  int invalid_utf8 = 0;       // invalid byte sequences replaced by U+FFFD
  int total_tokens = 0;       // tokens before truncation; > tokens.size() means truncated
  bool truncated() const { return total_tokens > static_cast<int>(tokens.size()); }
};

// A trained tokenizer's vocabulary. Pieces that continue a word are stored with a "##"
// prefix, byte fallbacks as "<0xNN>". Ids are positions in `pieces`.
struct Vocab {
  std::vector<std::string> pieces;
  std::unordered_map<std::string, int> index;  // piece -> id
  int max_piece_bytes = 0;

  void add(const std::string& piece);  // appends if new
  int find(std::string_view piece) const;
  int size() const { return static_cast<int>(pieces.size()); }
  int byte_id(unsigned char b) const;  // id of "<0xNN>", -1 if absent
};

// Splits text into tokens for the given mode. `context` caps the token count (>= 1).
// In vocab mode `vocab` must be non-null.
TokenizedText tokenize(std::string_view text, TokenizerKind kind, int context, const Vocab* vocab = nullptr);

// Word-mode pre-tokens (words, punctuation, emoji, ideographs) of valid UTF-8 text.
std::vector<std::string> split_words(std::string_view valid_utf8);

// Builds a vocabulary from a corpus: every word seen at least `min_word_count` times (most
// frequent first, up to max_words), the most frequent word-initial and continuation pieces
// of 2-6 characters (up to max_subwords), every character seen, and all 256 bytes.
Vocab build_vocab(const std::vector<std::string>& corpus_lines, int max_words, int max_subwords, int min_word_count);

// How a token is shown on a chip: spaces as "␣", tabs as "⇥", continuation without "##".
std::string token_display(const Token& t);

}  // namespace headmap
