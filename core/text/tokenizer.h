// tokenizer.h: typed text -> tokens. Never fails: invalid UTF-8 and over-long text are
// repaired and reported, never silently dropped.
//
// Modes
//   word   words and punctuation are separate tokens ("tired." -> "tired", "."); emoji and
//          CJK ideographs are one token each; accents and combining marks stay in their word.
//   char   one token per user-perceived character (a base code point plus its combining
//          marks, variation selectors, skin tones and ZWJ sequences), spaces included.
//   bpe    a trained model's byte-level BPE (bpe.h): sub-words with their leading space,
//          down to single bytes. Nothing is ever unknown, and the ids decode to the input.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace headmap {

enum class TokenizerKind { Word, Char, Bpe };

class Bpe;

const char* tokenizer_name(TokenizerKind kind);
bool parse_tokenizer(std::string_view name, TokenizerKind* out);

struct Token {
  std::string text;            // the token's own text, valid UTF-8 (a lone byte reads "<0xE2>")
  int id = -1;                 // vocabulary id in bpe mode, -1 otherwise
  bool continues = false;      // bpe mode: a piece that continues the previous token's word
  bool leading_space = false;  // bpe mode: the piece starts with the space before its word
  bool special = false;        // a special token of a tokenizer.json (BOS, <|endoftext|>, [CLS]): its own text
  int type = 0;                // token type id fed to the model: 0 sentence A, 1 sentence B (BERT's pairs; RoBERTa's are all 0)
  int segment = 0;             // which sentence of a pair: 0 A, 1 B (a special token: the sentence it closes; [CLS] A)
  bool added = false;          // added by the post-processor ([CLS], [SEP], <s>, </s>), not typed in the text
  int masked_id = -1;          // a [MASK] put in place of this vocabulary id (the masked-token loss's target)
};

struct TokenizedText {
  std::vector<Token> tokens;  // at most `context` tokens
  int invalid_utf8 = 0;       // invalid byte sequences replaced by U+FFFD
  int regex_stopped = 0;      // the tokenizer's regex splits that gave up (HfEncoding::regex_stopped)
  int total_tokens = 0;       // tokens before truncation; > tokens.size() means truncated
  bool truncated() const { return total_tokens > static_cast<int>(tokens.size()); }
};

// Splits text into tokens for the given mode. `context` caps the token count (>= 1).
// In bpe mode `bpe` must be non-null (else word mode is used).
TokenizedText tokenize(std::string_view text, TokenizerKind kind, int context, const Bpe* bpe = nullptr);

// A model's tokenizer.json pipeline (hf_tokenizer.h), with its special tokens (BOS, ...):
// each token's text is what it stands for (a piece of a character reads "<0xE2>").
class HfTokenizer;
TokenizedText tokenize(std::string_view text, int context, const HfTokenizer& tok);
// ...a sentence pair (text, pair), as tokenizer(text, pair): each token's type is the
// post-processor's type id (0 for A, 1 for B under BertProcessing).
TokenizedText tokenize_pair(std::string_view text, std::string_view pair, int context, const HfTokenizer& tok);

// Word-mode pre-tokens (words, punctuation, emoji, ideographs) of valid UTF-8 text.
std::vector<std::string> split_words(std::string_view valid_utf8);

// How a token is shown on a chip: a lone space as "␣", a tab as "⇥", a newline as "⏎", and a
// word's leading space as a small raised dot ("·cat").
std::string token_display(const Token& t);
// One BPE vocabulary entry as a Token: its text (bytes that are not UTF-8 as <0xNN>) and
// whether it starts with a space; the chips, the predictions and the CLI all show it so.
Token bpe_piece(const Bpe& bpe, int id);
// One vocabulary entry of a tokenizer.json as a Token, the same way: the decoder's text of
// the id alone (a piece of a character as <0xNN>), or a special token's own text ("<s>").
Token hf_piece(const HfTokenizer& tok, int id);
// The bytes a token stands for: its text, but a byte piece's ("<0xE2>", "<0xE2><0x80>": a
// vocabulary token holding part of a character, from byte-level BPE or byte fallback) bytes.
// The chips group such pieces under the character they form. Special tokens are their text.
std::string token_bytes(const Token& t);

}  // namespace headmap
