// tokenizer.cpp: code point classes, clusters, the three tokenizer modes, a tokenizer.json's tokens.
//
// Sections: [classes] [clusters] [word and char modes] [bpe mode] [tokenizer.json mode]
#include "core/text/tokenizer.h"

#include <algorithm>
#include <cstdio>
#include <cctype>

#include "core/text/bpe.h"
#include "core/text/hf_tokenizer.h"
#include "core/text/utf8.h"

namespace headmap {

const char* tokenizer_name(TokenizerKind kind) {
  switch (kind) {
    case TokenizerKind::Word: return "word";
    case TokenizerKind::Char: return "char";
    case TokenizerKind::Bpe: return "bpe";
  }
  return "word";
}

bool parse_tokenizer(std::string_view name, TokenizerKind* out) {
  if (name == "word") { *out = TokenizerKind::Word; return true; }
  if (name == "char") { *out = TokenizerKind::Char; return true; }
  if (name == "bpe") { *out = TokenizerKind::Bpe; return true; }
  return false;
}

// ---- [classes] -------------------------------------------------------------------------
namespace {

enum class Cls { Space, Punct, Symbol, Ideograph, Extend, Word };

bool in(char32_t c, char32_t lo, char32_t hi) { return c >= lo && c <= hi; }

Cls classify(char32_t c) {
  if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f' || c == 0x85 ||
      c == 0xA0 || c == 0x1680 || in(c, 0x2000, 0x200A) || c == 0x2028 || c == 0x2029 ||
      c == 0x202F || c == 0x205F || c == 0x3000 || c == 0xFEFF)
    return Cls::Space;
  // Marks and joiners that extend the previous character.
  if (in(c, 0x0300, 0x036F) || in(c, 0x0483, 0x0489) || in(c, 0x0591, 0x05BD) ||
      in(c, 0x0610, 0x061A) || in(c, 0x064B, 0x065F) || in(c, 0x0900, 0x0903) ||
      in(c, 0x093A, 0x094F) || in(c, 0x1AB0, 0x1AFF) || in(c, 0x1DC0, 0x1DFF) ||
      in(c, 0x20D0, 0x20FF) || c == 0x200C || c == 0x200D || in(c, 0xFE00, 0xFE0F) ||
      in(c, 0xFE20, 0xFE2F) || in(c, 0x1F3FB, 0x1F3FF) || in(c, 0xE0020, 0xE007F) ||
      in(c, 0xE0100, 0xE01EF))
    return Cls::Extend;
  if (c < 0x80) {
    if ((c >= '0' && c <= '9') || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_')
      return Cls::Word;
    if (c < 0x20 || c == 0x7F) return Cls::Space;  // other control characters separate
    return Cls::Punct;
  }
  if (in(c, 0x80, 0x9F)) return Cls::Space;
  if (in(c, 0xA1, 0xBF) && c != 0xAA && c != 0xB2 && c != 0xB3 && c != 0xB5 && c != 0xB9 && c != 0xBA &&
      !in(c, 0xBC, 0xBE))
    return Cls::Punct;  // ¡ ¢ £ ... « ° ± · » ¿ (but not ª ² ³ µ ¹ º ¼ ½ ¾)
  if (c == 0xD7 || c == 0xF7) return Cls::Punct;  // × ÷
  if (in(c, 0x2010, 0x2027) || in(c, 0x2030, 0x205E) || in(c, 0x3001, 0x303F) ||
      in(c, 0xFF01, 0xFF0F) || in(c, 0xFF1A, 0xFF20) || in(c, 0xFF3B, 0xFF40) ||
      in(c, 0xFF5B, 0xFF65) || in(c, 0x2E00, 0x2E7F) || c == 0x037E || c == 0x0387 ||
      in(c, 0x055A, 0x055F) || c == 0x0589 || c == 0x060C || c == 0x061B || c == 0x061F ||
      c == 0x06D4 || c == 0x0964 || c == 0x0965)
    return Cls::Punct;
  // Symbols, arrows, maths operators, dingbats, emoji, regional indicators.
  if (in(c, 0x2100, 0x214F) || in(c, 0x2190, 0x2BFF) || in(c, 0x1F000, 0x1FAFF) ||
      in(c, 0x20A0, 0x20CF) || c == 0xFFFD)
    return Cls::Symbol;
  // Ideographs and kana: one token each, as they carry no spaces between words.
  if (in(c, 0x2E80, 0x2FDF) || in(c, 0x3040, 0x30FF) || in(c, 0x3400, 0x4DBF) ||
      in(c, 0x4E00, 0x9FFF) || in(c, 0xF900, 0xFAFF) || in(c, 0x20000, 0x3FFFF))
    return Cls::Ideograph;
  return Cls::Word;
}

bool is_regional_indicator(char32_t c) { return in(c, 0x1F1E6, 0x1F1FF); }

// ---- [clusters] ------------------------------------------------------------------------
// A cluster is a base code point plus what extends it: combining marks, variation
// selectors, skin tones, and anything joined by ZWJ. Two regional indicators form a flag.
struct Cluster {
  size_t begin, end;  // [begin, end) in code points
  Cls cls;            // class of the base code point
};

std::vector<Cluster> clusters(const std::u32string& cps) {
  std::vector<Cluster> out;
  size_t i = 0;
  while (i < cps.size()) {
    Cluster cl{i, i + 1, classify(cps[i])};
    if (cl.cls == Cls::Extend) cl.cls = Cls::Symbol;  // a lone mark stands by itself
    if (is_regional_indicator(cps[i]) && i + 1 < cps.size() && is_regional_indicator(cps[i + 1])) cl.end = i + 2;
    while (cl.end < cps.size()) {
      const char32_t c = cps[cl.end];
      if (cps[cl.end - 1] == 0x200D && cl.cls != Cls::Space) { ++cl.end; continue; }  // ZWJ joins
      if (classify(c) == Cls::Extend) { ++cl.end; continue; }
      break;
    }
    out.push_back(cl);
    i = cl.end;
  }
  return out;
}

bool is_apostrophe(char32_t c) { return c == '\'' || c == 0x2019; }
bool is_digit(char32_t c) { return c >= '0' && c <= '9'; }

}  // namespace

// ---- [word and char modes] -------------------------------------------------------------
static std::vector<std::string> words_of(const std::u32string& cps) {
  std::vector<std::string> out;
  const std::vector<Cluster> cl = clusters(cps);
  std::u32string cur;
  auto flush = [&] {
    if (!cur.empty()) out.push_back(encode_utf8(cur));
    cur.clear();
  };
  for (size_t k = 0; k < cl.size(); ++k) {
    const Cluster& c = cl[k];
    const std::u32string_view text(cps.data() + c.begin, c.end - c.begin);
    switch (c.cls) {
      case Cls::Word:
        cur.append(text);
        break;
      case Cls::Space:
        flush();
        break;
      case Cls::Punct: {
        // Apostrophes inside a word ("didn't") and separators inside a number ("3.14") stay.
        const bool prev_word = !cur.empty() && k > 0 && cl[k - 1].cls == Cls::Word;
        const bool next_word = k + 1 < cl.size() && cl[k + 1].cls == Cls::Word;
        const char32_t p = cps[c.begin];
        const bool inner_apostrophe = is_apostrophe(p) && prev_word && next_word;
        const bool inner_number = (p == '.' || p == ',') && prev_word && next_word &&
                                  is_digit(cps[cl[k - 1].end - 1]) && is_digit(cps[cl[k + 1].begin]);
        if (inner_apostrophe || inner_number) {
          cur.append(text);
        } else {
          flush();
          out.push_back(encode_utf8(text));
        }
        break;
      }
      case Cls::Symbol:
      case Cls::Ideograph:
      case Cls::Extend:
        flush();
        out.push_back(encode_utf8(text));
        break;
    }
  }
  flush();
  return out;
}

std::vector<std::string> split_words(std::string_view valid_utf8) {
  return words_of(decode_utf8(valid_utf8).codepoints);
}

static void bpe_tokens(std::string_view text, const Bpe& bpe, std::vector<Token>& out);

TokenizedText tokenize(std::string_view text, TokenizerKind kind, int context, const Bpe* bpe) {
  TokenizedText out;
  const DecodedText d = decode_utf8(text);
  out.invalid_utf8 = d.replaced;
  std::vector<Token> all;
  if (kind == TokenizerKind::Bpe && bpe) {
    bpe_tokens(text, *bpe, all);  // the raw bytes: BPE spells anything, and decodes back to it
  } else if (kind == TokenizerKind::Char) {
    for (const Cluster& c : clusters(d.codepoints)) {
      if (c.cls == Cls::Space && (d.codepoints[c.begin] == '\n' || d.codepoints[c.begin] == '\r')) continue;
      all.push_back(Token{encode_utf8(std::u32string_view(d.codepoints.data() + c.begin, c.end - c.begin))});
    }
  } else {
    for (std::string& w : words_of(d.codepoints)) all.push_back(Token{std::move(w)});
  }
  out.total_tokens = static_cast<int>(all.size());
  if (context < 1) context = 1;
  if (static_cast<int>(all.size()) > context) all.resize(context);
  out.tokens = std::move(all);
  return out;
}

std::string token_display(const Token& t) {
  if (t.text == " ") return "\xE2\x90\xA3";  // ␣
  if (t.text == "\t") return "\xE2\x87\xA5";  // ⇥
  if (t.text == "\n") return "\xE2\x8F\x8E";  // ⏎
  // A word's leading space is drawn as a small raised dot, so " cat" reads "·cat".
  if (t.leading_space && t.text.size() > 1) return "\xC2\xB7" + t.text.substr(1);
  return t.text;
}

// ---- [bpe mode] ------------------------------------------------------------------------
// Each id becomes a token whose text is its bytes when they are valid UTF-8 on their own,
// else "<0xNN>" per byte (a piece of a character that BPE split, such as part of an emoji).
Token bpe_piece(const Bpe& bpe, int id) {
  const std::string& bytes = bpe.token_bytes(id);
  Token t;
  t.id = id;
  int bad = 0;
  (void)sanitize_utf8(bytes, &bad);
  if (bad) {
    for (unsigned char b : bytes) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "<0x%02X>", b);
      t.text += buf;
    }
  } else {
    t.text = bytes;
  }
  t.leading_space = !bytes.empty() && bytes[0] == ' ' && bytes.size() > 1;
  return t;
}

static void bpe_tokens(std::string_view text, const Bpe& bpe, std::vector<Token>& out) {
  for (int id : bpe.encode(text)) {
    const std::string& bytes = bpe.token_bytes(id);
    Token t = bpe_piece(bpe, id);
    const unsigned char first = bytes.empty() ? 0 : static_cast<unsigned char>(bytes[0]);
    // A piece continues a word when it starts with a letter or digit right after one.
    const bool starts_alnum = first >= 0x80 || std::isalnum(first);
    if (!out.empty() && starts_alnum) {
      const std::string& prev = bpe.token_bytes(out.back().id);
      const unsigned char last = prev.empty() ? 0 : static_cast<unsigned char>(prev.back());
      t.continues = last >= 0x80 || std::isalnum(last);
    }
    out.push_back(std::move(t));
  }
}

// ---- [tokenizer.json mode] -------------------------------------------------------------
Token hf_piece(const HfTokenizer& tok, int id) {
  Token t;
  t.id = id;
  t.special = tok.is_special(id);
  t.text = t.special ? tok.id_to_token(id) : tok.token_text(id);
  t.leading_space = !t.special && t.text.size() > 1 && t.text[0] == ' ';
  return t;
}

// "<0xNN>" repeated, and nothing else: those bytes.
static bool byte_pieces(std::string_view s, std::string* out) {
  if (s.empty() || s.size() % 6 != 0) return false;
  std::string bytes;
  for (size_t i = 0; i < s.size(); i += 6) {
    if (s.compare(i, 3, "<0x") != 0 || s[i + 5] != '>') return false;
    int v = 0;
    for (size_t k = i + 3; k < i + 5; ++k) {
      const char c = s[k];
      const int d = c >= '0' && c <= '9' ? c - '0' : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
      if (d < 0) return false;
      v = v * 16 + d;
    }
    bytes.push_back(static_cast<char>(v));
  }
  *out = std::move(bytes);
  return true;
}

std::string token_bytes(const Token& t) {
  std::string bytes;
  if (t.id >= 0 && !t.special && byte_pieces(t.text, &bytes)) return bytes;
  return t.text;
}

static TokenizedText tokens_of(const HfEncoding& e, int context, const HfTokenizer& tok);

TokenizedText tokenize(std::string_view text, int context, const HfTokenizer& tok) { return tokens_of(tok.encode(text), context, tok); }

TokenizedText tokenize_pair(std::string_view text, std::string_view pair, int context, const HfTokenizer& tok) {
  return tokens_of(tok.encode_pair(text, pair), context, tok);
}

static TokenizedText tokens_of(const HfEncoding& e, int context, const HfTokenizer& tok) {
  TokenizedText out;
  out.invalid_utf8 = e.invalid_utf8;
  out.regex_stopped = e.regex_stopped;
  std::vector<Token> all;
  all.reserve(e.ids.size());
  for (size_t k = 0; k < e.ids.size(); ++k) {
    Token t = hf_piece(tok, e.ids[k]);
    if (e.special[k] && !t.special) {  // added by the post-processor: its own text
      t.special = true;
      t.text = e.pieces[k];
      t.leading_space = false;
    }
    t.type = k < e.type_ids.size() ? e.type_ids[k] : 0;
    t.added = e.special[k] != 0;
    t.segment = k < e.sequence.size() && e.sequence[k] >= 0 ? e.sequence[k] : all.empty() ? 0 : all.back().segment;
    const unsigned char first = t.text.empty() ? 0 : static_cast<unsigned char>(t.text[0]);
    // A piece continues a word when it starts with a letter or digit right after one, with
    // nothing between them in the text (BERT's words carry no space of their own).
    if (!all.empty() && !t.special && !all.back().special && (first >= 0x80 || std::isalnum(first)) && t.text.rfind("<0x", 0) != 0 &&
        e.offsets[k].first <= e.offsets[k - 1].second) {
      const std::string& prev = all.back().text;
      const unsigned char last = prev.empty() ? 0 : static_cast<unsigned char>(prev.back());
      t.continues = last >= 0x80 || std::isalnum(last);
    }
    all.push_back(std::move(t));
  }
  out.total_tokens = static_cast<int>(all.size());
  if (context < 1) context = 1;
  if (static_cast<int>(all.size()) > context) all.resize(static_cast<size_t>(context));
  out.tokens = std::move(all);
  return out;
}

}  // namespace headmap
