// hf_tokenizer.cpp: the tokenizer.json pipeline (hf_tokenizer.h).
//
// Sections: [unicode] [aligned strings] [patterns] [normalizers] [pre-tokenizers] [models]
//           [post-processors] [decoders] [loading] [encoding]
#include "core/text/hf_tokenizer.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <unicode/normalizer2.h>
#include <unicode/uchar.h>
#include <unicode/unistr.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstring>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <unordered_map>

#include "core/io/file_io.h"
#include "core/io/json_limits.h"
#include "core/io/model_dir.h"
#include "core/memory_budget.h"
#include "core/text/bpe.h"
#include "core/text/bpe_merge.h"
#include "core/text/piece_hash.h"
#include "core/text/utf8.h"

namespace headmap {

using json = nlohmann::json;

namespace {
// "Sequence[A, B]": how a Sequence stage of any kind names itself in the pipeline's summary.
template <class Parts>
std::string sequence_name(const Parts& parts) {
  std::string s = "Sequence[";
  for (size_t i = 0; i < parts.size(); ++i) s += (i ? ", " : "") + parts[i]->name();
  return s + "]";
}
}  // namespace

// ---- [unicode] -------------------------------------------------------------------------
// Rust's char predicates, which the official library uses, from ICU's character database.
namespace {

bool is_whitespace(char32_t c) { return u_hasBinaryProperty(UChar32(c), UCHAR_WHITE_SPACE); }
bool is_numeric(char32_t c) {  // Rust char::is_numeric: Nd, Nl, No
  const int t = u_charType(UChar32(c));
  return t == U_DECIMAL_DIGIT_NUMBER || t == U_LETTER_NUMBER || t == U_OTHER_NUMBER;
}
bool is_punctuation(char32_t c) {  // ASCII punctuation or a P* category
  if (c < 0x80) return (c >= 0x21 && c <= 0x2F) || (c >= 0x3A && c <= 0x40) || (c >= 0x5B && c <= 0x60) || (c >= 0x7B && c <= 0x7E);
  const int t = u_charType(UChar32(c));
  return t == U_CONNECTOR_PUNCTUATION || t == U_DASH_PUNCTUATION || t == U_START_PUNCTUATION || t == U_END_PUNCTUATION ||
         t == U_INITIAL_PUNCTUATION || t == U_FINAL_PUNCTUATION || t == U_OTHER_PUNCTUATION;
}
bool is_other(char32_t c) {  // Cc Cf Co Cs: the official tables leave unassigned code points out
  const int t = u_charType(UChar32(c));
  return t == U_CONTROL_CHAR || t == U_FORMAT_CHAR || t == U_PRIVATE_USE_CHAR || t == U_SURROGATE;
}
bool is_mark(char32_t c) {
  const int t = u_charType(UChar32(c));
  return t == U_NON_SPACING_MARK || t == U_COMBINING_SPACING_MARK || t == U_ENCLOSING_MARK;
}
bool is_nonspacing_mark(char32_t c) { return u_charType(UChar32(c)) == U_NON_SPACING_MARK; }
// Rust's \w (regex crate, Unicode): Alphabetic, marks, decimal digits, connector punctuation, joiners.
bool is_word_char(char32_t c) {
  return u_hasBinaryProperty(UChar32(c), UCHAR_ALPHABETIC) || is_mark(c) || u_charType(UChar32(c)) == U_DECIMAL_DIGIT_NUMBER ||
         u_charType(UChar32(c)) == U_CONNECTOR_PUNCTUATION || c == 0x200C || c == 0x200D;
}
bool is_chinese_char(char32_t c) {
  return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) || (c >= 0x20000 && c <= 0x2A6DF) ||
         (c >= 0x2A700 && c <= 0x2B73F) || (c >= 0x2B740 && c <= 0x2B81F) || (c >= 0x2B920 && c <= 0x2CEAF) ||
         (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
}
// Rust char::to_lowercase (full mapping, no context): ICU's simple mapping plus İ's two.
void append_lower(char32_t c, std::u32string& out) {
  if (c == 0x130) {
    out += U'i';
    out += char32_t(0x307);
    return;
  }
  out += char32_t(u_tolower(UChar32(c)));
}

// The code point at s[i] (valid UTF-8) and its length.
inline char32_t next_cp(std::string_view s, size_t i, size_t* len) {
  const unsigned char c = static_cast<unsigned char>(s[i]);
  if (c < 0x80) return *len = 1, c;
  if (c < 0xE0) return *len = 2, char32_t(((c & 0x1F) << 6) | (s[i + 1] & 0x3F));
  if (c < 0xF0) return *len = 3, char32_t(((c & 0x0F) << 12) | ((s[i + 1] & 0x3F) << 6) | (s[i + 2] & 0x3F));
  return *len = 4, char32_t(((c & 0x07) << 18) | ((s[i + 1] & 0x3F) << 12) | ((s[i + 2] & 0x3F) << 6) | (s[i + 3] & 0x3F));
}

}  // namespace

// ---- [aligned strings] -----------------------------------------------------------------
// A normalized string and, for each of its bytes, the byte range of the original text it
// came from (every byte of one character carries that character's range).
namespace {

struct Span {
  uint32_t b = 0, e = 0;
};

struct NStr {
  std::string s;
  std::vector<Span> at;  // (bytes of s)
  int added_id = -1;     // >= 0: this piece is an added token, done
  bool empty() const { return s.empty(); }
  void push(char32_t c, Span sp) {
    const size_t n0 = s.size();
    append_utf8(s, c);
    at.insert(at.end(), s.size() - n0, sp);
  }
  NStr slice(size_t b, size_t e) const {
    NStr o;
    o.s = s.substr(b, e - b);
    o.at.assign(at.begin() + long(b), at.begin() + long(e));
    return o;
  }
  Span span(size_t b, size_t e) const {  // the original range of bytes [b, e)
    if (b >= e || e > at.size()) return b < at.size() ? Span{at[b].b, at[b].b} : Span{};
    Span r{at[b].b, at[b].e};
    for (size_t i = b; i < e; ++i) r.b = std::min(r.b, at[i].b), r.e = std::max(r.e, at[i].e);
    return r;
  }
};

// Each character c becomes f(c) (zero or more characters), all carrying c's range.
template <class F>
void map_chars(NStr& n, F&& f) {
  NStr o;
  o.s.reserve(n.s.size());
  o.at.reserve(n.s.size());
  std::u32string buf;
  for (size_t i = 0; i < n.s.size();) {
    size_t len;
    const char32_t c = next_cp(n.s, i, &len);
    buf.clear();
    f(c, buf);
    for (char32_t d : buf) o.push(d, n.at[i]);
    i += len;
  }
  o.added_id = n.added_id;
  n = std::move(o);
}

void prepend(NStr& n, std::string_view what) {
  if (n.s.empty()) return;
  n.s.insert(0, what);
  n.at.insert(n.at.begin(), what.size(), n.at.front());
}

}  // namespace

// ---- [patterns] ------------------------------------------------------------------------
// A regex (the file's, or a literal string escaped) compiled once by PCRE2, shared.
namespace {

// A regex of a file may backtrack without end (issue 35, F7): each match is bounded by
// PCRE2's match and depth limits, and one encoding's matches together by a time budget.
// Hitting either leaves the rest of that piece unsplit and is counted in the encoding
// (HfEncoding::regex_stopped), which the app and the CLI report: never silent (F10).
constexpr uint32_t kRegexMatchLimit = 1000000, kRegexDepthLimit = 100000;
constexpr double kRegexSecondsPerText = 5.0;
struct RegexBudget {
  std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max();
  int stopped = 0;
  bool over() const { return std::chrono::steady_clock::now() > deadline; }
};
thread_local RegexBudget* regex_budget = nullptr;  // the encoding running on this thread, if any

// For one encode() call: the budget starts, and what stopped is read back at the end.
struct ScopedRegexBudget {
  RegexBudget budget;
  RegexBudget* outer;
  ScopedRegexBudget() : outer(regex_budget) {
    budget.deadline = std::chrono::steady_clock::now() + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                                              std::chrono::duration<double>(kRegexSecondsPerText));
    regex_budget = &budget;
  }
  ~ScopedRegexBudget() { regex_budget = outer; }
};

std::shared_ptr<pcre2_match_context> limited_match_context() {
  std::shared_ptr<pcre2_match_context> c(pcre2_match_context_create(nullptr), pcre2_match_context_free);
  if (c) {
    pcre2_set_match_limit(c.get(), kRegexMatchLimit);
    pcre2_set_depth_limit(c.get(), kRegexDepthLimit);
  }
  return c;
}

struct Regex {
  std::shared_ptr<pcre2_code> code;
  static Result<Regex> compile(const std::string& pattern, bool literal, const std::string& field) {
    std::string p = pattern;
    if (literal) {
      p.clear();
      for (char ch : pattern) {
        if (std::string_view("\\^$.|?*+()[]{}-").find(ch) != std::string_view::npos) p += '\\';
        p += ch;
      }
      if (pattern.empty()) p = "(?!)";  // an empty string pattern never matches
    }
    int err = 0;
    PCRE2_SIZE off = 0;
    pcre2_code* c = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(p.data()), p.size(), PCRE2_UTF | PCRE2_UCP, &err, &off, nullptr);
    if (!c) {
      PCRE2_UCHAR msg[256];
      pcre2_get_error_message(err, msg, sizeof msg);
      return Error{ErrorKind::BadFormat, field + ": the regex does not compile at offset " + std::to_string(off) + " (" +
                                             reinterpret_cast<const char*>(msg) + ")"};
    }
    pcre2_jit_compile(c, PCRE2_JIT_COMPLETE);  // optional: falls back to the interpreter
    Regex r;
    r.code.reset(c, pcre2_code_free);
    return r;
  }
  // Non-overlapping matches, leftmost first: (begin, end) byte ranges. Empty matches are skipped.
  // A match over PCRE2's limits, or past the encoding's time budget, ends the search there
  // (the rest is left unmatched) and is counted in regex_budget.
  void find_all(std::string_view s, std::vector<std::pair<size_t, size_t>>& out) const {
    out.clear();
    static thread_local const std::shared_ptr<pcre2_match_context> ctx = limited_match_context();
    std::unique_ptr<pcre2_match_data, decltype(&pcre2_match_data_free)> md(pcre2_match_data_create_from_pattern(code.get(), nullptr),
                                                                           pcre2_match_data_free);
    const auto* subject = reinterpret_cast<PCRE2_SPTR>(s.data());
    size_t at = 0;
    for (unsigned n = 0; at < s.size(); ++n) {
      if (regex_budget && (n & 15) == 0 && regex_budget->over()) {
        ++regex_budget->stopped;
        break;
      }
      const int rc = pcre2_match(code.get(), subject, s.size(), at, PCRE2_NO_UTF_CHECK, md.get(), ctx.get());
      if (rc == PCRE2_ERROR_MATCHLIMIT || rc == PCRE2_ERROR_DEPTHLIMIT || rc == PCRE2_ERROR_HEAPLIMIT || rc == PCRE2_ERROR_JIT_STACKLIMIT) {
        if (regex_budget) ++regex_budget->stopped;
        break;
      }
      if (rc < 0) break;  // no further match
      const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md.get());
      if (ov[1] <= ov[0]) {  // empty: step one character on
        size_t len;
        next_cp(s, std::max<size_t>(at, ov[0]), &len);
        at = std::max<size_t>(at, ov[0]) + len;
        continue;
      }
      out.emplace_back(ov[0], ov[1]);
      at = ov[1];
    }
  }
};

// Official Pattern::find_matches: the whole string as (range, is_match) pieces.
using Pieces = std::vector<std::tuple<size_t, size_t, bool>>;

Pieces regex_pieces(const Regex& re, std::string_view s) {
  Pieces out;
  if (s.empty()) return {{0, 0, false}};
  std::vector<std::pair<size_t, size_t>> m;
  re.find_all(s, m);
  size_t prev = 0;
  for (auto [b, e] : m) {
    if (prev != b) out.emplace_back(prev, b, false);
    out.emplace_back(b, e, true);
    prev = e;
  }
  if (prev != s.size()) out.emplace_back(prev, s.size(), false);
  return out;
}

template <class P>
Pieces char_pieces(std::string_view s, P&& pred) {
  if (s.empty()) return {{0, 0, false}};
  Pieces out;
  size_t last = 0;
  for (size_t i = 0; i < s.size();) {
    size_t len;
    const char32_t c = next_cp(s, i, &len);
    if (pred(c)) {
      if (last < i) out.emplace_back(last, i, false);
      out.emplace_back(i, i + len, true);
      last = i + len;
    }
    i += len;
  }
  if (s.size() > last) out.emplace_back(last, s.size(), false);
  return out;
}

enum class Behavior { Removed, Isolated, MergedWithPrevious, MergedWithNext, Contiguous };

Result<Behavior> parse_behavior(const json& j, const std::string& field) {
  static const std::map<std::string, Behavior> names = {{"Removed", Behavior::Removed},
                                                        {"Isolated", Behavior::Isolated},
                                                        {"MergedWithPrevious", Behavior::MergedWithPrevious},
                                                        {"MergedWithNext", Behavior::MergedWithNext},
                                                        {"Contiguous", Behavior::Contiguous}};
  if (j.is_string())
    if (auto it = names.find(j.get<std::string>()); it != names.end()) return it->second;
  return Error{ErrorKind::BadFormat, field + " is not one of Removed, Isolated, MergedWithPrevious, MergedWithNext, Contiguous"};
}

// Official NormalizedString::split: pieces grouped by the behaviour, empty ones dropped.
void split_by(const NStr& n, Pieces pieces, Behavior behavior, bool invert, std::vector<NStr>& out) {
  if (invert)
    for (auto& p : pieces) std::get<2>(p) = !std::get<2>(p);
  std::vector<std::tuple<size_t, size_t, bool>> keep;  // (b, e, remove)
  switch (behavior) {
    case Behavior::Isolated:
      for (auto& [b, e, m] : pieces) keep.emplace_back(b, e, false);
      break;
    case Behavior::Removed:
      keep = pieces;
      break;
    case Behavior::Contiguous: {
      bool prev = false;
      for (auto& [b, e, m] : pieces) {
        if (m == prev && !keep.empty()) std::get<1>(keep.back()) = e;
        else keep.emplace_back(b, e, false);
        prev = m;
      }
      break;
    }
    case Behavior::MergedWithPrevious: {
      bool prev = false;
      for (auto& [b, e, m] : pieces) {
        if (m && !prev && !keep.empty()) std::get<1>(keep.back()) = e;
        else keep.emplace_back(b, e, false);
        prev = m;
      }
      break;
    }
    case Behavior::MergedWithNext: {
      bool prev = false;
      for (auto it = pieces.rbegin(); it != pieces.rend(); ++it) {
        auto& [b, e, m] = *it;
        if (m && !prev && !keep.empty()) std::get<0>(keep.back()) = b;
        else keep.emplace_back(b, e, false);
        prev = m;
      }
      std::reverse(keep.begin(), keep.end());
      break;
    }
  }
  for (auto& [b, e, remove] : keep)
    if (!remove && e > b) out.push_back(n.slice(b, e));
}

Result<Regex> parse_pattern(const json& j, const std::string& field, bool* is_string = nullptr) {
  if (j.is_object() && j.size() == 1) {
    if (auto s = j.find("String"); s != j.end() && s->is_string()) {
      if (is_string) *is_string = true;
      return Regex::compile(s->get<std::string>(), true, field);
    }
    if (auto r = j.find("Regex"); r != j.end() && r->is_string()) {
      if (is_string) *is_string = false;
      return Regex::compile(r->get<std::string>(), false, field);
    }
  }
  return Error{ErrorKind::BadFormat, field + " is neither {\"String\": ...} nor {\"Regex\": ...}"};
}

}  // namespace

// ---- [normalizers] ---------------------------------------------------------------------
namespace {

struct Normalizer {
  virtual ~Normalizer() = default;
  virtual void run(NStr& n) const = 0;
  virtual std::string name() const = 0;
};

struct UnicodeForm : Normalizer {
  const icu::Normalizer2* norm = nullptr;
  const icu::Normalizer2* decomp = nullptr;  // NFD for NFC and NFD, NFKD for NFKC and NFKD
  std::string form;
  static icu::UnicodeString one(char32_t c) { return icu::UnicodeString(UChar32(c)); }
  void run(NStr& n) const override {
    UErrorCode st = U_ZERO_ERROR;
    const icu::UnicodeString whole = icu::UnicodeString::fromUTF8(icu::StringPiece(n.s.data(), int32_t(n.s.size())));
    if (norm->isNormalized(whole, st) && U_SUCCESS(st)) return;
    // Segment by segment (a segment starts at a character with a boundary before it).
    // Alignment as the official library's: each input character is decomposed, and each
    // output character takes the range of the character its decomposition starts in
    // (a composed "e\u0301" aligns to the "e"; reordered marks align by position).
    NStr o;
    o.added_id = n.added_id;
    size_t seg = 0;
    std::vector<Span> owner;  // (decomposed code points of the segment)
    auto flush = [&](size_t end) {
      if (end <= seg) return;
      UErrorCode e = U_ZERO_ERROR;
      const icu::UnicodeString in = icu::UnicodeString::fromUTF8(icu::StringPiece(n.s.data() + seg, int32_t(end - seg)));
      const icu::UnicodeString out = norm->normalize(in, e);
      owner.clear();
      for (size_t i = seg; i < end;) {
        size_t len;
        const char32_t c = next_cp(n.s, i, &len);
        UErrorCode e2 = U_ZERO_ERROR;
        const icu::UnicodeString d = decomp->normalize(one(c), e2);
        owner.insert(owner.end(), size_t(std::max(1, d.countChar32())), n.at[i]);
        i += len;
      }
      if (U_FAILURE(e)) {
        for (size_t i = seg; i < end; ++i) o.s.push_back(n.s[i]), o.at.push_back(n.at[i]);
        seg = end;
        return;
      }
      size_t pos = 0;
      for (int32_t k = 0; k < out.length();) {
        const UChar32 c = out.char32At(k);
        k += U16_LENGTH(c);
        UErrorCode e2 = U_ZERO_ERROR;
        const int32_t l = std::max(1, decomp->normalize(one(char32_t(c)), e2).countChar32());
        o.push(char32_t(c), owner[std::min(pos, owner.size() - 1)]);
        pos += size_t(l);
      }
      seg = end;
    };
    for (size_t i = 0; i < n.s.size();) {
      size_t len;
      const char32_t c = next_cp(n.s, i, &len);
      if (i > seg && norm->hasBoundaryBefore(UChar32(c))) flush(i);
      i += len;
    }
    flush(n.s.size());
    n = std::move(o);
  }
  std::string name() const override { return form; }
};

struct Lowercase : Normalizer {
  void run(NStr& n) const override { map_chars(n, [](char32_t c, std::u32string& o) { append_lower(c, o); }); }
  std::string name() const override { return "Lowercase"; }
};

struct StripAccents : Normalizer {
  void run(NStr& n) const override {
    map_chars(n, [](char32_t c, std::u32string& o) {
      if (!is_mark(c)) o += c;
    });
  }
  std::string name() const override { return "StripAccents"; }
};

void strip_ends(NStr& n, bool left, bool right) {
  size_t b = 0, e = n.s.size();
  if (left)
    while (b < e) {
      size_t len;
      if (!is_whitespace(next_cp(n.s, b, &len))) break;
      b += len;
    }
  if (right)
    while (e > b) {
      size_t k = e - 1;
      while (k > b && (static_cast<unsigned char>(n.s[k]) & 0xC0) == 0x80) --k;
      size_t len;
      if (!is_whitespace(next_cp(n.s, k, &len))) break;
      e = k;
    }
  const int id = n.added_id;
  n = n.slice(b, e);
  n.added_id = id;
}

struct Strip : Normalizer {
  bool left = true, right = true;
  void run(NStr& n) const override { strip_ends(n, left, right); }
  std::string name() const override { return "Strip"; }
};

struct Prepend : Normalizer {
  std::string what;
  void run(NStr& n) const override { prepend(n, what); }
  std::string name() const override { return "Prepend"; }
};

// Each match of the pattern becomes `content`, whose characters carry the match's range.
void replace_all(NStr& n, const Regex& re, const std::string& content) {
  std::vector<std::pair<size_t, size_t>> m;
  re.find_all(n.s, m);
  if (m.empty()) return;
  NStr o;
  o.added_id = n.added_id;
  size_t prev = 0;
  for (auto [b, e] : m) {
    o.s.append(n.s, prev, b - prev);
    o.at.insert(o.at.end(), n.at.begin() + long(prev), n.at.begin() + long(b));
    o.s += content;
    o.at.insert(o.at.end(), content.size(), n.span(b, e));
    prev = e;
  }
  o.s.append(n.s, prev, std::string::npos);
  o.at.insert(o.at.end(), n.at.begin() + long(prev), n.at.end());
  n = std::move(o);
}

struct Replace : Normalizer {
  Regex re;
  std::string content;
  void run(NStr& n) const override { replace_all(n, re, content); }
  std::string name() const override { return "Replace"; }
};

struct BertNormalizer : Normalizer {
  bool clean_text = true, chinese = true, strip_accents = false, lowercase = true;
  const icu::Normalizer2* nfd = nullptr;
  void run(NStr& n) const override {
    if (clean_text)
      map_chars(n, [](char32_t c, std::u32string& o) {
        const bool tab_or_newline = c == '\t' || c == '\n' || c == '\r';
        if (c == 0 || c == 0xFFFD || (!tab_or_newline && is_other(c))) return;  // controls go first, NEL too
        o += tab_or_newline || is_whitespace(c) ? U' ' : c;
      });
    if (chinese)
      map_chars(n, [](char32_t c, std::u32string& o) {
        if (is_chinese_char(c)) o += U' ', o += c, o += U' ';
        else o += c;
      });
    if (strip_accents) {
      UnicodeForm f;
      f.norm = f.decomp = nfd;
      f.run(n);
      map_chars(n, [](char32_t c, std::u32string& o) {
        if (!is_nonspacing_mark(c)) o += c;
      });
    }
    if (lowercase) Lowercase().run(n);
  }
  std::string name() const override { return "BertNormalizer"; }
};

struct NormSeq : Normalizer {
  std::vector<std::unique_ptr<Normalizer>> parts;
  void run(NStr& n) const override {
    for (const auto& p : parts) p->run(n);
  }
  std::string name() const override {
    return sequence_name(parts);
  }
};

}  // namespace

// ---- [pre-tokenizers] ------------------------------------------------------------------
namespace {

struct PreTokenizer {
  virtual ~PreTokenizer() = default;
  // Splits one (non-added) piece; appends the words to `out`.
  virtual void split(NStr&& n, std::vector<NStr>& out) const = 0;
  virtual std::string name() const = 0;
};

// GPT-2's bytes as characters (bpe.h's spelling), each byte carrying its character's range.
void byte_level_spell(NStr& n) {
  NStr o;
  o.added_id = n.added_id;
  o.s.reserve(n.s.size() * 2);
  o.at.reserve(n.s.size() * 2);
  for (size_t i = 0; i < n.s.size(); ++i) {
    const std::string sp = gpt2_spell(std::string_view(&n.s[i], 1));
    o.s += sp;
    o.at.insert(o.at.end(), sp.size(), n.at[i]);
  }
  n = std::move(o);
}

struct ByteLevelPre : PreTokenizer {
  bool add_prefix_space = false, use_regex = true;
  Regex re;  // GPT-2's pattern
  void split(NStr&& n, std::vector<NStr>& out) const override {
    if (add_prefix_space && (n.s.empty() || n.s[0] != ' ')) prepend(n, " ");
    std::vector<NStr> words;
    if (use_regex) split_by(n, regex_pieces(re, n.s), Behavior::Isolated, false, words);
    else words.push_back(std::move(n));
    for (NStr& w : words) {
      byte_level_spell(w);
      if (!w.empty()) out.push_back(std::move(w));
    }
  }
  std::string name() const override { return "ByteLevel"; }
};

struct SplitPre : PreTokenizer {
  Regex re;
  Behavior behavior = Behavior::Isolated;
  bool invert = false;
  void split(NStr&& n, std::vector<NStr>& out) const override { split_by(n, regex_pieces(re, n.s), behavior, invert, out); }
  std::string name() const override { return "Split"; }
};

struct MetaspacePre : PreTokenizer {
  std::string replacement = "\xE2\x96\x81";  // ▁
  enum class Scheme { Always, First, Never } scheme = Scheme::Always;
  bool split_words = true;
  Regex space, rep;
  void split(NStr&& n, std::vector<NStr>& out) const override {
    replace_all(n, space, replacement);
    const bool starts = n.s.compare(0, replacement.size(), replacement) == 0;
    if (!starts && (scheme == Scheme::Always || (scheme == Scheme::First && !n.at.empty() && n.at.front().b == 0)))
      prepend(n, replacement);
    if (split_words) split_by(n, regex_pieces(rep, n.s), Behavior::MergedWithNext, false, out);
    else if (!n.empty()) out.push_back(std::move(n));
  }
  std::string name() const override { return "Metaspace"; }
};

struct WhitespacePre : PreTokenizer {  // \w+|[^\w\s]+, the matches kept
  void split(NStr&& n, std::vector<NStr>& out) const override {
    Pieces p;
    int prev = -1;  // class of the current run: 0 word, 1 other, 2 space
    for (size_t i = 0; i < n.s.size();) {
      size_t len;
      const char32_t c = next_cp(n.s, i, &len);
      const int k = is_word_char(c) ? 0 : is_whitespace(c) ? 2 : 1;
      if (k == prev) std::get<1>(p.back()) = i + len;
      else p.emplace_back(i, i + len, k != 2);
      prev = k;
      i += len;
    }
    if (p.empty()) return;
    split_by(n, p, Behavior::Removed, true, out);
  }
  std::string name() const override { return "Whitespace"; }
};

// Note: WhitespacePre's pieces mark matches true and invert=true turns them into "keep".
// (split_by with Removed drops pieces flagged true after inversion, i.e. the spaces.)

struct CharSplitPre : PreTokenizer {
  enum class Kind { WhitespaceSplit, Digits, Punctuation, Bert } kind;
  Behavior behavior = Behavior::Isolated;
  bool individual_digits = false;
  void split(NStr&& n, std::vector<NStr>& out) const override {
    switch (kind) {
      case Kind::WhitespaceSplit:
        split_by(n, char_pieces(n.s, is_whitespace), Behavior::Removed, false, out);
        break;
      case Kind::Digits:
        split_by(n, char_pieces(n.s, is_numeric), individual_digits ? Behavior::Isolated : Behavior::Contiguous, false, out);
        break;
      case Kind::Punctuation:
        split_by(n, char_pieces(n.s, is_punctuation), behavior, false, out);
        break;
      case Kind::Bert: {
        std::vector<NStr> words;
        split_by(n, char_pieces(n.s, is_whitespace), Behavior::Removed, false, words);
        for (NStr& w : words) split_by(w, char_pieces(w.s, is_punctuation), Behavior::Isolated, false, out);
        break;
      }
    }
  }
  std::string name() const override {
    switch (kind) {
      case Kind::WhitespaceSplit: return "WhitespaceSplit";
      case Kind::Digits: return "Digits";
      case Kind::Punctuation: return "Punctuation";
      case Kind::Bert: return "BertPreTokenizer";
    }
    return "";
  }
};

struct PreSeq : PreTokenizer {
  std::vector<std::unique_ptr<PreTokenizer>> parts;
  void split(NStr&& n, std::vector<NStr>& out) const override {
    std::vector<NStr> cur, next;
    cur.push_back(std::move(n));
    for (const auto& p : parts) {
      next.clear();
      for (NStr& w : cur) p->split(std::move(w), next);
      std::swap(cur, next);
    }
    for (NStr& w : cur)
      if (!w.empty()) out.push_back(std::move(w));
  }
  std::string name() const override {
    return sequence_name(parts);
  }
};

}  // namespace

// ---- [models] --------------------------------------------------------------------------
namespace {

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

std::string byte_piece(unsigned char b) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "<0x%02X>", b);
  return buf;
}

struct Model {
  virtual ~Model() = default;
  virtual void tokenize(std::string_view word, std::vector<ModelTok>& out) const = 0;
  virtual std::string name() const = 0;
  Vocab vocab;
};

struct BpeModel : Model {
  std::unordered_map<uint64_t, MergeRule> merges;
  int unk = -1;
  std::string prefix, suffix;  // continuing_subword_prefix, end_of_word_suffix
  bool fuse_unk = false, byte_fallback = false, ignore_merges = false;
  std::array<int, 256> byte_ids{};  // <0xNN> ids, -1 when absent

  void tokenize(std::string_view w, std::vector<ModelTok>& out) const override {
    if (w.empty()) return;
    if (ignore_merges)
      if (int id = vocab.find(w); id >= 0) {
        out.push_back({id, 0, w.size()});
        return;
      }
    std::vector<int> sym, len;  // (symbols) id, bytes of the word covered
    int unk_id = -1, unk_len = 0;
    std::string s;
    for (size_t i = 0; i < w.size();) {
      size_t n;
      next_cp(w, i, &n);
      const bool first = i == 0, last = i + n == w.size();
      s.assign(w.substr(i, n));
      if (!prefix.empty() && !first) s.insert(0, prefix);
      if (!suffix.empty() && last) s += suffix;
      i += n;
      if (int id = vocab.find(s); id >= 0) {
        if (unk_id >= 0) sym.push_back(unk_id), len.push_back(unk_len), unk_id = -1;
        sym.push_back(id), len.push_back(int(n));
        continue;
      }
      if (byte_fallback) {
        bool all = true;
        for (unsigned char b : s) all = all && byte_ids[b] >= 0;
        if (all) {
          for (unsigned char b : s) sym.push_back(byte_ids[b]), len.push_back(1);
          continue;
        }
      }
      if (unk >= 0) {
        if (unk_id >= 0 && fuse_unk) unk_len += int(n);
        else {
          if (unk_id >= 0) sym.push_back(unk_id), len.push_back(unk_len);
          unk_id = unk, unk_len = int(n);
        }
      }
    }
    if (unk_id >= 0) sym.push_back(unk_id), len.push_back(unk_len);
    bpe_merge(
        sym,
        [this](int l, int r) {
          auto it = merges.find((uint64_t(uint32_t(l)) << 32) | uint32_t(r));
          return it == merges.end() ? MergeRule{} : it->second;
        },
        &len);
    // Byte-fallback symbols cover one byte each; a byte past the word's real bytes (a
    // prefix's) is clamped, as the official offsets are.
    size_t at = 0;
    for (size_t k = 0; k < sym.size(); ++k) {
      const size_t e = std::min(w.size(), at + size_t(len[k]));
      out.push_back({sym[k], at, e});
      at = e;
    }
  }
  std::string name() const override { return "BPE"; }
};

// WordPiece and Unigram try every piece length up to the longest at each place of a word,
// so their pieces are bounded: a 4,096-byte piece made a 64 KiB word cost 14 s. SentencePiece
// makes pieces of at most 16 characters; BERT's longest are about 20.
constexpr size_t kMaxPieceBytes = 256;
Status check_piece_lengths(const Vocab& v, const std::string& where) {
  if (v.longest <= kMaxPieceBytes) return Status();
  for (size_t id = 0; id < v.tokens.size(); ++id)
    if (v.tokens[id].size() > kMaxPieceBytes)
      return Error{ErrorKind::BadFormat, where + " has a piece of " + std::to_string(v.tokens[id].size()) + " bytes (id " + std::to_string(id) +
                                             "); headmap reads WordPiece and Unigram pieces of at most " + std::to_string(kMaxPieceBytes) +
                                             " bytes, so that a text costs time in proportion to its length"};
  return Status();
}

// Every piece of the vocabulary, by rolling hash (piece_hash.h): built once the vocabulary is complete.
void index_pieces(const Vocab& v, PieceHash& pieces) {
  pieces.reserve(v.index.size());
  for (const auto& [piece, id] : v.index) pieces.add(piece, id);
}

bool continuation_byte(std::string_view w, size_t i) { return i < w.size() && (static_cast<unsigned char>(w[i]) & 0xC0) == 0x80; }

struct WordPieceModel : Model {
  int unk = -1;
  std::string prefix = "##";
  size_t max_chars = 100;
  PieceHash pieces;
  // Longest match first, from each start: only candidates no longer than the longest piece
  // are tried, each hashed in O(1), so a word costs O(n · longest), not O(n³).
  void tokenize(std::string_view w, std::vector<ModelTok>& out) const override {
    size_t chars = 0;
    for (size_t i = 0; i < w.size(); ++i) chars += (static_cast<unsigned char>(w[i]) & 0xC0) != 0x80;
    if (chars > max_chars) {
      out.push_back({unk, 0, w.size()});
      return;
    }
    const size_t mark = out.size();
    const PieceHash::Prefixes ph(w);
    const uint64_t prefix_hash = PieceHash::hash(prefix);
    for (size_t start = 0; start < w.size();) {
      const std::string_view head = start > 0 ? std::string_view(prefix) : std::string_view();
      size_t end = std::min(w.size(), start + (vocab.longest > head.size() ? vocab.longest - head.size() : 0));
      while (end > start && continuation_byte(w, end)) --end;  // a character boundary
      int found = -1;
      while (start < end) {
        const uint64_t h = start > 0 ? ph.after(prefix_hash, start, end) : ph.of(start, end);
        if (int id = pieces.find(h, head, w.substr(start, end - start)); id >= 0) {
          found = id;
          break;
        }
        do --end;  // one character back
        while (end > start && continuation_byte(w, end));
      }
      if (found < 0) {
        out.resize(mark);
        out.push_back({unk, 0, w.size()});
        return;
      }
      out.push_back({found, start, end});
      start = end;
    }
  }
  std::string name() const override { return "WordPiece"; }
};

struct UnigramModel : Model {
  std::vector<double> score;  // (V)
  int unk = -1;
  bool byte_fallback = false, fuse_unk = true;
  double min_score = 0;
  std::array<int, 256> byte_ids{};
  PieceHash pieces;

  // Viterbi over the word: from each place, every piece no longer than the longest, each
  // hashed in O(1) (piece_hash.h), so a word costs O(n · longest), not O(n · longest²).
  void tokenize(std::string_view w, std::vector<ModelTok>& out) const override {
    if (w.empty()) return;
    const PieceHash::Prefixes ph(w);
    const double unk_score = min_score - 10.0;
    struct Best {
      int from = -1;
      int id = -1;
      double score = 0;
    };
    std::vector<Best> best(w.size() + 1);
    best[0].from = 0;
    for (size_t at = 0; at < w.size();) {
      size_t mblen;
      next_cp(w, at, &mblen);
      const double here = best[at].score;
      bool single = false;
      // Every piece that starts here, shortest first (the official trie's order): pieces
      // are valid UTF-8, so a match ends on a character boundary.
      const size_t limit = std::min(w.size() - at, vocab.longest);
      for (size_t l = 1; l <= limit; ++l) {
        const int id = pieces.find(ph.of(at, at + l), {}, w.substr(at, l));
        if (id < 0) continue;
        const size_t to = at + l;
        const double cand = score[size_t(id)] + here;
        if (best[to].from < 0 || cand > best[to].score) best[to] = {int(at), id, cand};
        if (l == mblen) single = true;
      }
      if (!single) {
        const double cand = unk_score + here;
        Best& t = best[at + mblen];
        if (t.from < 0 || cand > t.score) t = {int(at), unk, cand};
      }
      at += mblen;
    }
    // Back from the end; consecutive unknowns fused into one piece.
    std::vector<std::pair<size_t, size_t>> parts;  // reversed
    size_t end = w.size(), unk_end = 0;
    bool in_unk = false;
    while (end > 0) {
      const Best& b = best[end];
      const size_t from = size_t(b.from);
      if (fuse_unk && unk >= 0 && b.id == unk) {
        if (!in_unk) unk_end = end, in_unk = true;
      } else {
        if (in_unk) parts.emplace_back(end, unk_end), in_unk = false;
        parts.emplace_back(from, end);
      }
      end = from;
    }
    if (in_unk) parts.emplace_back(0, unk_end);
    std::reverse(parts.begin(), parts.end());
    for (auto [b, e] : parts) {
      const std::string_view s = w.substr(b, e - b);
      int id = vocab.find(s);
      if (id < 0 && byte_fallback) {
        bool all = true;
        for (unsigned char c : s) all = all && byte_ids[c] >= 0;
        if (all) {
          for (unsigned char c : s) out.push_back({byte_ids[c], b, e});
          continue;
        }
      }
      if (id < 0) id = unk;
      out.push_back({id, b, e});
    }
  }
  std::string name() const override { return "Unigram"; }
};

}  // namespace

// ---- [post-processors] -----------------------------------------------------------------
namespace {

struct Tok {
  int id;
  std::string piece;
  Span span;
  int type_id = 0;
  bool special = false;
  int seq = 0;
};

// The encodings (one per text, one or two) go through the processors in turn, as the
// official Vec<Encoding> does: a template merges them, ByteLevel leaves them apart; what is
// still apart at the end is joined in order.
struct Encodings {
  std::vector<std::vector<Tok>> list;
  const std::string* text[2] = {nullptr, nullptr};  // the texts the tokens' byte ranges refer to
};

// A special token's id as the file gave it, with the field that gave it, so that a model
// can check every id the post-processor may emit against its vocabulary (issue 35, F2).
struct NamedId {
  std::string field;  // "post_processor.cls"
  int id;
};

struct PostProcessor {
  virtual ~PostProcessor() = default;
  virtual void run(Encodings& encs, bool add_special) const = 0;
  virtual std::string name() const = 0;
  virtual void special_ids(std::vector<NamedId>&) const {}  // every id run() may add
};

Tok special_tok(int id, const std::string& piece, int type_id) { return Tok{id, piece, {}, type_id, true, -1}; }

// Official byte_level::process_offsets: a token's leading and trailing spaces (Ġ or
// whitespace) leave its offsets, except the one space a prefix-space pre-tokenizer added
// to the first token. The official offsets are characters by then, so the range moves by
// whole characters of the text here too.
void trim_offsets(std::vector<Tok>& toks, bool add_prefix_space, const Encodings& encs) {
  auto is_cont = [](const std::string& t, uint32_t at) { return at < t.size() && (static_cast<unsigned char>(t[at]) & 0xC0) == 0x80; };
  for (size_t i = 0; i < toks.size(); ++i) {
    Tok& t = toks[i];
    const std::u32string cps = decode_utf8(t.piece).codepoints;
    auto space = [](char32_t c) { return c == 0x120 || is_whitespace(c); };
    size_t lead = 0, trail = 0;
    while (lead < cps.size() && space(cps[lead])) ++lead;
    while (trail < cps.size() && space(cps[cps.size() - 1 - trail])) ++trail;
    const std::string* text = t.seq >= 0 && t.seq < 2 ? encs.text[t.seq] : nullptr;
    if (!text) continue;
    if (lead > 0) {
      const bool first = i == 0 || t.span.b == 0;
      if (first && add_prefix_space && lead == 1) lead = 0;
      for (size_t k = 0; k < lead && t.span.b < t.span.e; ++k)
        do ++t.span.b;
        while (t.span.b < t.span.e && is_cont(*text, t.span.b));
    }
    if (trail > 0) {
      // The official check: at least `trail` characters before the end. Counted back from the
      // end and only up to `trail`, so a token costs its own length, not the text's (counting
      // from the start was quadratic in a line's tokens: issue 35, F4).
      size_t chars = 0;
      for (uint32_t k = std::min<uint32_t>(t.span.e, uint32_t(text->size())); k > 0 && chars < trail; --k) chars += !is_cont(*text, k - 1);
      if (chars >= trail)
        for (size_t k = 0; k < trail && t.span.e > t.span.b; ++k)
          do --t.span.e;
          while (t.span.e > t.span.b && is_cont(*text, t.span.e));
    }
  }
}

std::vector<Tok> join(Encodings& encs) {
  std::vector<Tok> out;
  for (auto& e : encs.list) out.insert(out.end(), e.begin(), e.end());
  return out;
}

struct TemplatePost : PostProcessor {
  struct Item {
    bool is_seq;
    int seq;  // 0 = A, 1 = B
    std::string special;
    int type_id;
  };
  std::vector<Item> single, pair;
  std::map<std::string, std::pair<std::vector<int>, std::vector<std::string>>> specials;
  std::string where;  // "post_processor"
  void special_ids(std::vector<NamedId>& out) const override {
    for (const auto& [name, sp] : specials)
      for (size_t k = 0; k < sp.first.size(); ++k)
        out.push_back({where + ".special_tokens[\"" + sanitize_utf8(name.substr(0, 64)) + "\"].ids[" + std::to_string(k) + "]", sp.first[k]});
  }
  void run(Encodings& encs, bool add_special) const override {
    const bool is_pair = encs.list.size() > 1;
    std::vector<Tok> out;
    for (const Item& it : is_pair ? pair : single) {
      if (it.is_seq) {
        for (Tok t : encs.list[std::min<size_t>(size_t(it.seq), encs.list.size() - 1)]) t.type_id = it.type_id, out.push_back(std::move(t));
      } else if (add_special) {
        const auto& sp = specials.at(it.special);
        for (size_t k = 0; k < sp.first.size(); ++k) out.push_back(special_tok(sp.first[k], sp.second[k], it.type_id));
      }
    }
    encs.list.assign(1, std::move(out));
  }
  std::string name() const override { return "TemplateProcessing"; }
};

struct BertPost : PostProcessor {
  std::string cls, sep;
  int cls_id = 0, sep_id = 0;
  bool roberta = false, trim = false, add_prefix_space = false;
  std::string where;
  void special_ids(std::vector<NamedId>& out) const override {
    out.push_back({where + ".cls", cls_id});
    out.push_back({where + ".sep", sep_id});
  }
  void run(Encodings& encs, bool add_special) const override {
    if (roberta) {
      for (auto& e : encs.list) {
        if (trim) trim_offsets(e, add_prefix_space, encs);
        for (Tok& t : e) t.type_id = 0;
      }
    }
    if (!add_special) return;
    std::vector<Tok> out;
    out.push_back(special_tok(cls_id, cls, 0));
    for (Tok& t : encs.list[0]) t.type_id = 0, out.push_back(t);
    out.push_back(special_tok(sep_id, sep, 0));
    if (encs.list.size() > 1) {
      const int ty = roberta ? 0 : 1;
      if (roberta) out.push_back(special_tok(sep_id, sep, 0));
      for (Tok& t : encs.list[1]) t.type_id = ty, out.push_back(t);
      out.push_back(special_tok(sep_id, sep, ty));
    }
    encs.list.assign(1, std::move(out));
  }
  std::string name() const override { return roberta ? "RobertaProcessing" : "BertProcessing"; }
};

struct ByteLevelPost : PostProcessor {  // trims offsets only: ids unchanged, encodings left apart
  bool trim = true, add_prefix_space = true;
  void run(Encodings& encs, bool) const override {
    if (trim)
      for (auto& e : encs.list) trim_offsets(e, add_prefix_space, encs);
  }
  std::string name() const override { return "ByteLevel"; }
};

struct PostSeq : PostProcessor {
  std::vector<std::unique_ptr<PostProcessor>> parts;
  void run(Encodings& encs, bool add_special) const override {
    for (const auto& p : parts) p->run(encs, add_special);
  }
  void special_ids(std::vector<NamedId>& out) const override {
    for (const auto& p : parts) p->special_ids(out);
  }
  std::string name() const override {
    return sequence_name(parts);
  }
};

}  // namespace

// ---- [decoders] ------------------------------------------------------------------------
namespace {

struct Decoder {
  virtual ~Decoder() = default;
  virtual void run(std::vector<std::string>& toks) const = 0;
};

struct ByteLevelDec : Decoder {
  void run(std::vector<std::string>& toks) const override {
    std::string bytes;
    for (const std::string& t : toks) {
      auto b = gpt2_unspell(t);
      bytes += b ? *b : t;
    }
    toks.assign(1, sanitize_utf8(bytes));
  }
};

struct MetaspaceDec : Decoder {
  std::string replacement = "\xE2\x96\x81";
  bool prepend = true;
  void run(std::vector<std::string>& toks) const override {
    for (size_t i = 0; i < toks.size(); ++i) {
      std::string o;
      for (size_t k = 0; k < toks[i].size();) {
        if (toks[i].compare(k, replacement.size(), replacement) == 0) o += ' ', k += replacement.size();
        else o += toks[i][k++];
      }
      if (i == 0 && prepend && !o.empty() && o[0] == ' ') o.erase(0, 1);
      toks[i] = o;
    }
  }
};

struct WordPieceDec : Decoder {
  std::string prefix = "##";
  bool cleanup = true;
  void run(std::vector<std::string>& toks) const override {
    for (size_t i = 0; i < toks.size(); ++i) {
      std::string& t = toks[i];
      if (i != 0) {
        if (t.compare(0, prefix.size(), prefix) == 0) t.erase(0, prefix.size());
        else t.insert(0, " ");
      }
      if (cleanup) {
        static const std::pair<const char*, const char*> fixes[] = {{" .", "."}, {" ?", "?"}, {" !", "!"}, {" ,", ","},
                                                                    {" ' ", "'"}, {" n't", "n't"}, {" 'm", "'m"}, {" do not", " don't"},
                                                                    {" 's", "'s"}, {" 've", "'ve"}, {" 're", "'re"}};
        for (auto [from, to] : fixes)
          for (size_t at = 0; (at = t.find(from, at)) != std::string::npos;) t.replace(at, std::strlen(from), to), at += std::strlen(to);
      }
    }
  }
};

bool parse_byte_piece(const std::string& t, unsigned char* b) {
  if (t.size() != 6 || t.compare(0, 3, "<0x") != 0 || t[5] != '>') return false;
  unsigned v = 0;
  for (int k = 3; k < 5; ++k) {
    const char c = t[size_t(k)];
    v = v * 16 + unsigned(c >= '0' && c <= '9' ? c - '0' : c >= 'A' && c <= 'F' ? c - 'A' + 10 : 99);
  }
  if (v > 255) return false;
  *b = static_cast<unsigned char>(v);
  return true;
}

struct ByteFallbackDec : Decoder {
  void run(std::vector<std::string>& toks) const override {
    std::vector<std::string> out;
    std::string bytes;
    size_t nbytes = 0;
    auto flush = [&] {
      if (!nbytes) return;
      int bad = 0;
      std::string s = sanitize_utf8(bytes, &bad);
      if (bad) {
        s.clear();
        for (size_t k = 0; k < nbytes; ++k) s += "\xEF\xBF\xBD";
      }
      out.push_back(s);
      bytes.clear();
      nbytes = 0;
    };
    for (const std::string& t : toks) {
      unsigned char b;
      if (parse_byte_piece(t, &b)) {
        bytes.push_back(char(b)), ++nbytes;
        continue;
      }
      flush();
      out.push_back(t);
    }
    flush();
    toks = std::move(out);
  }
};

struct FuseDec : Decoder {
  void run(std::vector<std::string>& toks) const override {
    std::string all;
    for (const auto& t : toks) all += t;
    toks.assign(1, all);
  }
};

struct StripDec : Decoder {
  char32_t content = ' ';
  size_t start = 0, stop = 0;
  void run(std::vector<std::string>& toks) const override {
    for (std::string& t : toks) {
      std::u32string cps = decode_utf8(t).codepoints;
      size_t b = 0, e = cps.size();
      for (size_t k = 0; k < start && b < e && cps[b] == content; ++k) ++b;
      for (size_t k = 0; k < stop && e > b && cps[e - 1] == content; ++k) --e;
      t = encode_utf8(std::u32string_view(cps).substr(b, e - b));
    }
  }
};

struct ReplaceDec : Decoder {
  Regex re;
  std::string content;
  void run(std::vector<std::string>& toks) const override {
    std::vector<std::pair<size_t, size_t>> m;
    for (std::string& t : toks) {
      re.find_all(t, m);
      std::string o;
      size_t prev = 0;
      for (auto [b, e] : m) o.append(t, prev, b - prev), o += content, prev = e;
      o.append(t, prev, std::string::npos);
      t = o;
    }
  }
};

struct DecSeq : Decoder {
  std::vector<std::unique_ptr<Decoder>> parts;
  void run(std::vector<std::string>& toks) const override {
    for (const auto& p : parts) p->run(toks);
  }
};

}  // namespace

// ---- [loading] -------------------------------------------------------------------------
struct AddedToken {
  int id;
  std::string content;
  bool special, single_word, lstrip, rstrip, normalized;
};

// The added tokens' strings, matched leftmost-longest: at each position the lengths that
// occur are tried longest first, each by rolling hash in O(1) (piece_hash.h; no trie to
// grow with a hostile file, and no candidate hashed anew at each length).
struct AddedTrie {
  std::unordered_map<std::string, int, SvHash, std::equal_to<>> by_text;  // text -> index into the added tokens
  std::vector<size_t> lengths;                                             // distinct lengths, longest first (finish())
  std::array<bool, 256> first{};                                           // bytes a token starts with
  PieceHash hashes;                                                        // by_text's keys (finish())
  void add(const std::string& s, int which) {
    by_text[s] = which;  // a later token of the same text wins, as in the official map
    first[static_cast<unsigned char>(s[0])] = true;
  }
  void finish() {  // once every token is added
    for (const auto& [text, which] : by_text) {
      hashes.add(text, which);
      lengths.push_back(text.size());
    }
    std::sort(lengths.rbegin(), lengths.rend());
    lengths.erase(std::unique(lengths.begin(), lengths.end()), lengths.end());
  }
  bool empty() const { return by_text.empty(); }
  // The longest token starting at s[at]: (which, length), or which = -1. ph: s's prefix hashes.
  std::pair<int, size_t> longest(std::string_view s, size_t at, const PieceHash::Prefixes& ph) const {
    if (!first[static_cast<unsigned char>(s[at])]) return {-1, 0};
    for (size_t l : lengths) {
      if (l > s.size() - at) continue;
      if (int which = hashes.find(ph.of(at, at + l), {}, s.substr(at, l)); which >= 0) return {which, l};
    }
    return {-1, 0};
  }
};

struct HfTokenizer::Impl {
  std::unique_ptr<Normalizer> normalizer;
  std::unique_ptr<PreTokenizer> pre;
  std::unique_ptr<Model> model;
  std::unique_ptr<PostProcessor> post;
  std::unique_ptr<Decoder> decoder;
  std::vector<AddedToken> added;
  AddedTrie raw_trie, norm_trie;
  std::unordered_map<int, size_t> added_by_id;
  int size = 0;
  std::string origin;  // the file, for messages
  bool byte_level = false;  // the pieces spell bytes in GPT-2's alphabet (a ByteLevel pre-tokenizer)

  std::string token(int id) const {
    if (auto it = added_by_id.find(id); it != added_by_id.end()) return added[it->second].content;
    if (id >= 0 && size_t(id) < model->vocab.tokens.size()) return model->vocab.tokens[size_t(id)];
    return "";
  }
  void cut_added(NStr&& n, const AddedTrie& trie, std::vector<NStr>& out) const;
  std::vector<Tok> encode_one(std::string_view text, int seq) const;
};

namespace {

Error bad(const std::string& origin, const std::string& what) { return Error{ErrorKind::BadFormat, origin + ": " + what}; }

// Size and nesting depth, before nlohmann allocates anything.
Status check_shape(std::string_view text, const std::string& origin) {
  if (text.size() > HfTokenizer::kMaxFileBytes)
    return bad(origin, "is " + std::to_string(text.size() >> 20) + " MB; headmap reads tokenizer.json files of at most " +
                           std::to_string(HfTokenizer::kMaxFileBytes >> 20) + " MB");
  return check_json_limits(text, origin, HfTokenizer::kMaxDepth, "open a smaller tokenizer");
}

struct Ctx {
  std::string origin;
  const icu::Normalizer2 *nfc = nullptr, *nfd = nullptr, *nfkc = nullptr, *nfkd = nullptr;
};

const json* field(const json& j, const char* name) {
  auto it = j.find(name);
  return it == j.end() || it->is_null() ? nullptr : &*it;
}

Result<bool> get_bool(const json& j, const char* name, bool dflt, const std::string& where) {
  const json* f = field(j, name);
  if (!f) return dflt;
  if (!f->is_boolean()) return Error{ErrorKind::BadFormat, where + "." + name + " is not true or false"};
  return f->get<bool>();
}

Result<std::string> get_string(const json& j, const char* name, const std::string& dflt, const std::string& where) {
  const json* f = field(j, name);
  if (!f) return dflt;
  if (!f->is_string()) return Error{ErrorKind::BadFormat, where + "." + name + " is not a string"};
  return f->get<std::string>();
}

Result<std::string> get_type(const json& j, const std::string& where) {
  if (!j.is_object()) return Error{ErrorKind::BadFormat, where + " is not an object"};
  const json* t = field(j, "type");
  if (!t || !t->is_string()) return Error{ErrorKind::BadFormat, where + ".type is missing or not a string"};
  return t->get<std::string>();
}

#define HM_TRY(var, expr)              \
  auto var##_r = (expr);               \
  if (!var##_r) return var##_r.error(); \
  auto var = std::move(*var##_r)

Result<std::unique_ptr<Normalizer>> parse_normalizer(const json& j, const std::string& where, const Ctx& ctx) {
  HM_TRY(type, get_type(j, where));
  if (type == "Sequence") {
    const json* list = field(j, "normalizers");
    if (!list || !list->is_array()) return Error{ErrorKind::BadFormat, where + ".normalizers is not a list"};
    auto seq = std::make_unique<NormSeq>();
    for (size_t i = 0; i < list->size(); ++i) {
      HM_TRY(p, parse_normalizer((*list)[i], where + ".normalizers[" + std::to_string(i) + "]", ctx));
      seq->parts.push_back(std::move(p));
    }
    return std::unique_ptr<Normalizer>(std::move(seq));
  }
  if (type == "NFC" || type == "NFD" || type == "NFKC" || type == "NFKD") {
    auto u = std::make_unique<UnicodeForm>();
    u->form = type;
    u->norm = type == "NFC" ? ctx.nfc : type == "NFD" ? ctx.nfd : type == "NFKC" ? ctx.nfkc : ctx.nfkd;
    u->decomp = type == "NFC" || type == "NFD" ? ctx.nfd : ctx.nfkd;
    if (!u->norm) return Error{ErrorKind::BadFormat, where + ": ICU has no " + type + " normalizer on this system"};
    return std::unique_ptr<Normalizer>(std::move(u));
  }
  if (type == "Lowercase") return std::unique_ptr<Normalizer>(std::make_unique<Lowercase>());
  if (type == "StripAccents") return std::unique_ptr<Normalizer>(std::make_unique<StripAccents>());
  if (type == "Strip") {
    auto s = std::make_unique<Strip>();
    HM_TRY(l, get_bool(j, "strip_left", true, where));
    HM_TRY(r, get_bool(j, "strip_right", true, where));
    s->left = l, s->right = r;
    return std::unique_ptr<Normalizer>(std::move(s));
  }
  if (type == "Prepend") {
    auto p = std::make_unique<Prepend>();
    HM_TRY(s, get_string(j, "prepend", "", where));
    p->what = s;
    return std::unique_ptr<Normalizer>(std::move(p));
  }
  if (type == "Replace") {
    auto r = std::make_unique<Replace>();
    const json* pat = field(j, "pattern");
    if (!pat) return Error{ErrorKind::BadFormat, where + ".pattern is missing"};
    HM_TRY(re, parse_pattern(*pat, where + ".pattern"));
    HM_TRY(content, get_string(j, "content", "", where));
    r->re = re, r->content = content;
    return std::unique_ptr<Normalizer>(std::move(r));
  }
  if (type == "BertNormalizer") {
    auto b = std::make_unique<BertNormalizer>();
    HM_TRY(clean, get_bool(j, "clean_text", true, where));
    HM_TRY(chinese, get_bool(j, "handle_chinese_chars", true, where));
    HM_TRY(lower, get_bool(j, "lowercase", true, where));
    HM_TRY(strip, get_bool(j, "strip_accents", lower, where));
    b->clean_text = clean, b->chinese = chinese, b->lowercase = lower, b->strip_accents = strip, b->nfd = ctx.nfd;
    return std::unique_ptr<Normalizer>(std::move(b));
  }
  return Error{ErrorKind::BadFormat, where + ".type \"" + type + "\" is a normalizer headmap does not implement (Precompiled needs the SentencePiece model's rules)"};
}

Result<std::unique_ptr<PreTokenizer>> parse_pre(const json& j, const std::string& where, const Ctx& ctx) {
  HM_TRY(type, get_type(j, where));
  if (type == "Sequence") {
    const json* list = field(j, "pretokenizers");
    if (!list || !list->is_array()) return Error{ErrorKind::BadFormat, where + ".pretokenizers is not a list"};
    auto seq = std::make_unique<PreSeq>();
    for (size_t i = 0; i < list->size(); ++i) {
      HM_TRY(p, parse_pre((*list)[i], where + ".pretokenizers[" + std::to_string(i) + "]", ctx));
      seq->parts.push_back(std::move(p));
    }
    return std::unique_ptr<PreTokenizer>(std::move(seq));
  }
  if (type == "ByteLevel") {
    auto b = std::make_unique<ByteLevelPre>();
    HM_TRY(aps, get_bool(j, "add_prefix_space", true, where));
    HM_TRY(ur, get_bool(j, "use_regex", true, where));
    b->add_prefix_space = aps, b->use_regex = ur;
    HM_TRY(re, Regex::compile(kGpt2SplitPattern, false, where));
    b->re = re;
    return std::unique_ptr<PreTokenizer>(std::move(b));
  }
  if (type == "Split") {
    auto s = std::make_unique<SplitPre>();
    const json* pat = field(j, "pattern");
    if (!pat) return Error{ErrorKind::BadFormat, where + ".pattern is missing"};
    HM_TRY(re, parse_pattern(*pat, where + ".pattern"));
    const json* beh = field(j, "behavior");
    if (!beh) return Error{ErrorKind::BadFormat, where + ".behavior is missing"};
    HM_TRY(b, parse_behavior(*beh, where + ".behavior"));
    HM_TRY(inv, get_bool(j, "invert", false, where));
    s->re = re, s->behavior = b, s->invert = inv;
    return std::unique_ptr<PreTokenizer>(std::move(s));
  }
  if (type == "Metaspace") {
    auto m = std::make_unique<MetaspacePre>();
    const json* rep = field(j, "replacement");
    if (rep) {
      if (!rep->is_string() || decode_utf8(rep->get<std::string>()).codepoints.size() != 1)
        return Error{ErrorKind::BadFormat, where + ".replacement is not one character"};
      m->replacement = rep->get<std::string>();
    }
    HM_TRY(scheme, get_string(j, "prepend_scheme", "", where));
    if (scheme.empty()) {  // older files: add_prefix_space
      HM_TRY(aps, get_bool(j, "add_prefix_space", true, where));
      m->scheme = aps ? MetaspacePre::Scheme::Always : MetaspacePre::Scheme::Never;
    } else if (scheme == "always") m->scheme = MetaspacePre::Scheme::Always;
    else if (scheme == "first") m->scheme = MetaspacePre::Scheme::First;
    else if (scheme == "never") m->scheme = MetaspacePre::Scheme::Never;
    else return Error{ErrorKind::BadFormat, where + ".prepend_scheme is not always, first or never"};
    HM_TRY(sp, get_bool(j, "split", true, where));
    m->split_words = sp;
    HM_TRY(space, Regex::compile(" ", true, where));
    HM_TRY(r, Regex::compile(m->replacement, true, where));
    m->space = space, m->rep = r;
    return std::unique_ptr<PreTokenizer>(std::move(m));
  }
  if (type == "Whitespace") return std::unique_ptr<PreTokenizer>(std::make_unique<WhitespacePre>());
  if (type == "WhitespaceSplit" || type == "Digits" || type == "Punctuation" || type == "BertPreTokenizer") {
    auto c = std::make_unique<CharSplitPre>();
    c->kind = type == "WhitespaceSplit" ? CharSplitPre::Kind::WhitespaceSplit
              : type == "Digits"        ? CharSplitPre::Kind::Digits
              : type == "Punctuation"   ? CharSplitPre::Kind::Punctuation
                                        : CharSplitPre::Kind::Bert;
    HM_TRY(ind, get_bool(j, "individual_digits", false, where));
    c->individual_digits = ind;
    if (const json* beh = field(j, "behavior")) {
      HM_TRY(b, parse_behavior(*beh, where + ".behavior"));
      c->behavior = b;
    }
    return std::unique_ptr<PreTokenizer>(std::move(c));
  }
  return Error{ErrorKind::BadFormat, where + ".type \"" + type + "\" is a pre-tokenizer headmap does not implement"};
}

constexpr size_t kMaxVocab = size_t(1) << 22;   // 4 M tokens
constexpr size_t kMaxMerges = size_t(1) << 23;  // 8 M merges
constexpr size_t kMaxTokenBytes = 4096;

// model.vocab and model.merges, the two big tables (Gemma 3: 262,144 and 514,906 entries),
// read straight from the parser's events into these lists rather than into a JSON tree.
struct BigTables {
  bool vocab_present = false, merges_present = false;
  std::vector<std::pair<std::string, int64_t>> vocab;  // token, id (-1: not an id)
  std::vector<std::pair<std::string, std::string>> merges;
  long bad_merge = -1;  // the first merge that is neither "a b" nor [a, b]
};

// vocab as {"token": id} (BPE, WordPiece) into `v`, every id in [0, 4M), each once.
Status read_vocab_entries(std::vector<std::pair<std::string, int64_t>>& entries, Vocab& v, const std::string& where) {
  if (entries.size() > kMaxVocab) return Error{ErrorKind::BadFormat, where + " has more than " + std::to_string(kMaxVocab) + " tokens"};
  size_t max_id = 0;
  for (const auto& [key, id] : entries) {
    if (id < 0 || id >= int64_t(kMaxVocab))
      return Error{ErrorKind::BadFormat, where + "[\"" + sanitize_utf8(key.substr(0, 64)) + "\"] is not an id in 0.." + std::to_string(kMaxVocab - 1)};
    if (key.size() > kMaxTokenBytes) return Error{ErrorKind::BadFormat, where + " has a token longer than 4096 bytes"};
    max_id = std::max(max_id, size_t(id));
  }
  if (max_id > 4 * entries.size() + 1024) return Error{ErrorKind::BadFormat, where + "'s ids leave most of 0.." + std::to_string(max_id) + " empty"};
  v.tokens.assign(max_id + 1, std::string());
  v.index.reserve(entries.size() * 2);
  for (auto& [key, id64] : entries) {  // a key written twice: the last id wins, as in a JSON object
    auto [it, fresh] = v.index.emplace(key, int(id64));
    if (!fresh) it->second = int(id64);
  }
  std::vector<char> seen(max_id + 1, 0);
  for (const auto& [key, id] : v.index) {
    if (seen[size_t(id)]) return Error{ErrorKind::BadFormat, where + " gives the id " + std::to_string(id) + " to two tokens"};
    seen[size_t(id)] = 1;
    v.longest = std::max(v.longest, key.size());
    v.tokens[size_t(id)] = key;
  }
  return {};
}

Status read_vocab_object(const json& j, Vocab& v, const std::string& where, BigTables& big) {
  if (big.vocab_present) return read_vocab_entries(big.vocab, v, where);
  if (!j.is_object()) return Error{ErrorKind::BadFormat, where + " is not an object of token: id"};
  if (j.size() > kMaxVocab) return Error{ErrorKind::BadFormat, where + " has more than " + std::to_string(kMaxVocab) + " tokens"};
  std::vector<std::pair<std::string, int64_t>> entries;
  entries.reserve(j.size());
  for (auto it = j.begin(); it != j.end(); ++it)
    entries.emplace_back(it.key(), it.value().is_number_integer() ? it.value().get<int64_t>() : -1);
  return read_vocab_entries(entries, v, where);
}

void fill_byte_ids(const Vocab& v, std::array<int, 256>& ids) {
  for (int b = 0; b < 256; ++b) ids[size_t(b)] = v.find(byte_piece(static_cast<unsigned char>(b)));
}

Result<std::unique_ptr<Model>> parse_model(const json& j, const std::string& where, BigTables& big) {
  if (!j.is_object()) return Error{ErrorKind::BadFormat, where + " is missing or not an object"};
  std::string type;
  if (const json* t = field(j, "type")) {
    if (!t->is_string()) return Error{ErrorKind::BadFormat, where + ".type is not a string"};
    type = t->get<std::string>();
  } else if (field(j, "merges") || big.merges_present) type = "BPE";  // old files leave the type out
  else if (field(j, "continuing_subword_prefix") || field(j, "max_input_chars_per_word")) type = "WordPiece";
  else type = "Unigram";
  const json* vocab = field(j, "vocab");
  static const json kEmpty = json::object();
  if (!vocab && !big.vocab_present) return Error{ErrorKind::BadFormat, where + ".vocab is missing"};
  if (!vocab) vocab = &kEmpty;
  if (type == "BPE") {
    auto m = std::make_unique<BpeModel>();
    if (Status s = read_vocab_object(*vocab, m->vocab, where + ".vocab", big); !s) return s.error();
    HM_TRY(prefix, get_string(j, "continuing_subword_prefix", "", where));
    HM_TRY(suffix, get_string(j, "end_of_word_suffix", "", where));
    HM_TRY(fuse, get_bool(j, "fuse_unk", false, where));
    HM_TRY(bf, get_bool(j, "byte_fallback", false, where));
    HM_TRY(im, get_bool(j, "ignore_merges", false, where));
    m->prefix = prefix, m->suffix = suffix, m->fuse_unk = fuse, m->byte_fallback = bf, m->ignore_merges = im;
    if (const json* d = field(j, "dropout"); d && !(d->is_number() && d->get<double>() == 0.0))
      return Error{ErrorKind::BadFormat, where + ".dropout is set: BPE dropout is random, and headmap shows the text a model sees at inference (set it to null)"};
    HM_TRY(unk, get_string(j, "unk_token", "", where));
    if (!unk.empty()) {
      m->unk = m->vocab.find(unk);
      if (m->unk < 0) return Error{ErrorKind::BadFormat, where + ".unk_token \"" + unk + "\" is not in " + where + ".vocab"};
    }
    fill_byte_ids(m->vocab, m->byte_ids);
    const json* merges = field(j, "merges");
    if (merges && !merges->is_array()) return Error{ErrorKind::BadFormat, where + ".merges is not a list"};
    if (merges) {  // a small file's merges, from the tree: into the same list
      if (merges->size() > kMaxMerges) return Error{ErrorKind::BadFormat, where + ".merges has more than " + std::to_string(kMaxMerges) + " merges"};
      for (size_t r = 0; r < merges->size(); ++r) {
        const json& e = (*merges)[r];
        if (e.is_string()) big.merges.emplace_back(e.get<std::string>(), std::string("\x01"));
        else if (e.is_array() && e.size() == 2 && e[0].is_string() && e[1].is_string()) big.merges.emplace_back(e[0].get<std::string>(), e[1].get<std::string>());
        else if (big.bad_merge < 0) big.bad_merge = long(r), big.merges.emplace_back();
      }
    }
    if (big.bad_merge >= 0) return Error{ErrorKind::BadFormat, where + ".merges[" + std::to_string(big.bad_merge) + "] is neither \"a b\" nor [a, b]"};
    if (big.merges.size() > kMaxMerges) return Error{ErrorKind::BadFormat, where + ".merges has more than " + std::to_string(kMaxMerges) + " merges"};
    m->merges.reserve(big.merges.size() * 2);
    std::string a, b, merged;
    for (size_t r = 0; r < big.merges.size(); ++r) {
      auto& [first, second] = big.merges[r];
      if (second == "\x01") {  // "a b": split at its one space
        const size_t sp = first.find(' ');
        if (sp == std::string::npos || first.find(' ', sp + 1) != std::string::npos)
          return Error{ErrorKind::BadFormat, where + ".merges[" + std::to_string(r) + "] is not two tokens separated by one space"};
        a.assign(first, 0, sp), b.assign(first, sp + 1, std::string::npos);
      } else {
        a.swap(first), b.swap(second);
      }
      const int ai = m->vocab.find(a), bi = m->vocab.find(b);
      merged.assign(a);
      merged.append(b, b.compare(0, prefix.size(), prefix) == 0 ? prefix.size() : 0, std::string::npos);
      const int res = ai < 0 || bi < 0 ? -1 : m->vocab.find(merged);
      if (res < 0)
        return Error{ErrorKind::BadFormat, where + ".merges[" + std::to_string(r) + "] (\"" + sanitize_utf8(a.substr(0, 64)) + " " +
                                               sanitize_utf8(b.substr(0, 64)) + "\") names a token that is not in " + where + ".vocab"};
      m->merges[(uint64_t(uint32_t(ai)) << 32) | uint32_t(bi)] = MergeRule{int(r), res};  // a repeated merge: the last wins, as officially
    }
    big.merges.clear();
    big.merges.shrink_to_fit();
    return std::unique_ptr<Model>(std::move(m));
  }
  if (type == "WordPiece") {
    auto m = std::make_unique<WordPieceModel>();
    if (Status s = read_vocab_object(*vocab, m->vocab, where + ".vocab", big); !s) return s.error();
    HM_TRY(unk, get_string(j, "unk_token", "[UNK]", where));
    m->unk = m->vocab.find(unk);
    if (m->unk < 0) return Error{ErrorKind::BadFormat, where + ".unk_token \"" + unk + "\" is not in " + where + ".vocab"};
    HM_TRY(prefix, get_string(j, "continuing_subword_prefix", "##", where));
    m->prefix = prefix;
    if (const json* mx = field(j, "max_input_chars_per_word")) {
      if (!mx->is_number_unsigned()) return Error{ErrorKind::BadFormat, where + ".max_input_chars_per_word is not a count"};
      m->max_chars = mx->get<size_t>();
    }
    if (Status s = check_piece_lengths(m->vocab, where + ".vocab"); !s) return s.error();
    index_pieces(m->vocab, m->pieces);
    return std::unique_ptr<Model>(std::move(m));
  }
  if (type == "Unigram") {
    auto m = std::make_unique<UnigramModel>();
    if (!vocab->is_array()) return Error{ErrorKind::BadFormat, where + ".vocab is not a list of [piece, score]"};
    if (vocab->size() > kMaxVocab) return Error{ErrorKind::BadFormat, where + ".vocab has more than " + std::to_string(kMaxVocab) + " pieces"};
    m->vocab.tokens.reserve(vocab->size());
    m->score.reserve(vocab->size());
    m->min_score = std::numeric_limits<double>::infinity();
    for (size_t i = 0; i < vocab->size(); ++i) {
      const json& e = (*vocab)[i];
      if (!e.is_array() || e.size() != 2 || !e[0].is_string() || !e[1].is_number() || e[0].get_ref<const std::string&>().size() > kMaxTokenBytes ||
          !std::isfinite(e[1].get<double>()))
        return Error{ErrorKind::BadFormat, where + ".vocab[" + std::to_string(i) + "] is not [piece, finite score]"};
      const std::string& p = e[0].get_ref<const std::string&>();
      m->vocab.tokens.push_back(p);
      m->vocab.index.emplace(p, int(i));
      m->score.push_back(e[1].get<double>());
      m->min_score = std::min(m->min_score, m->score.back());
    }
    if (m->vocab.tokens.empty()) m->min_score = 0;
    if (const json* u = field(j, "unk_id")) {
      if (!u->is_number_unsigned() || u->get<size_t>() >= m->vocab.tokens.size())
        return Error{ErrorKind::BadFormat, where + ".unk_id is not an index into " + where + ".vocab"};
      m->unk = int(u->get<size_t>());
    }
    HM_TRY(bf, get_bool(j, "byte_fallback", false, where));
    m->byte_fallback = bf;
    fill_byte_ids(m->vocab, m->byte_ids);
    for (const auto& t : m->vocab.tokens) m->vocab.longest = std::max(m->vocab.longest, t.size());
    if (Status s = check_piece_lengths(m->vocab, where + ".vocab"); !s) return s.error();
    index_pieces(m->vocab, m->pieces);
    return std::unique_ptr<Model>(std::move(m));
  }
  return Error{ErrorKind::BadFormat, where + ".type \"" + type + "\" is a model headmap does not implement (BPE, WordPiece and Unigram are)"};
}

// A special token given as ["[CLS]", 101] (Bert and Roberta processors).
Status read_pair(const json& j, const char* name, std::string& tok, int& id, const std::string& where) {
  const json* f = field(j, name);
  if (!f || !f->is_array() || f->size() != 2 || !(*f)[0].is_string() || !(*f)[1].is_number_unsigned() || (*f)[1].get<uint64_t>() >= kMaxVocab * 2)
    return Error{ErrorKind::BadFormat, where + "." + name + " is not [token, id]"};
  tok = (*f)[0].get<std::string>();
  id = int((*f)[1].get<uint64_t>());
  return {};
}

Result<std::unique_ptr<PostProcessor>> parse_post(const json& j, const std::string& where) {
  HM_TRY(type, get_type(j, where));
  if (type == "Sequence") {
    const json* list = field(j, "processors");
    if (!list || !list->is_array()) return Error{ErrorKind::BadFormat, where + ".processors is not a list"};
    auto seq = std::make_unique<PostSeq>();
    for (size_t i = 0; i < list->size(); ++i) {
      HM_TRY(p, parse_post((*list)[i], where + ".processors[" + std::to_string(i) + "]"));
      seq->parts.push_back(std::move(p));
    }
    return std::unique_ptr<PostProcessor>(std::move(seq));
  }
  if (type == "ByteLevel") {
    auto b = std::make_unique<ByteLevelPost>();
    HM_TRY(trim, get_bool(j, "trim_offsets", true, where));
    HM_TRY(aps, get_bool(j, "add_prefix_space", true, where));
    b->trim = trim, b->add_prefix_space = aps;
    return std::unique_ptr<PostProcessor>(std::move(b));
  }
  if (type == "BertProcessing" || type == "RobertaProcessing") {
    auto b = std::make_unique<BertPost>();
    b->roberta = type == "RobertaProcessing";
    b->where = where;
    HM_TRY(trim, get_bool(j, "trim_offsets", true, where));
    HM_TRY(aps, get_bool(j, "add_prefix_space", true, where));
    b->trim = trim, b->add_prefix_space = aps;
    if (Status s = read_pair(j, "cls", b->cls, b->cls_id, where); !s) return s.error();
    if (Status s = read_pair(j, "sep", b->sep, b->sep_id, where); !s) return s.error();
    return std::unique_ptr<PostProcessor>(std::move(b));
  }
  if (type == "TemplateProcessing") {
    auto t = std::make_unique<TemplatePost>();
    t->where = where;
    if (const json* sp = field(j, "special_tokens")) {
      if (!sp->is_object()) return Error{ErrorKind::BadFormat, where + ".special_tokens is not an object"};
      for (auto it = sp->begin(); it != sp->end(); ++it) {
        const std::string w = where + ".special_tokens[\"" + sanitize_utf8(it.key().substr(0, 64)) + "\"]";
        const json* ids = it.value().is_object() ? field(it.value(), "ids") : nullptr;
        const json* toks = it.value().is_object() ? field(it.value(), "tokens") : nullptr;
        if (!ids || !toks || !ids->is_array() || !toks->is_array() || ids->size() != toks->size())
          return Error{ErrorKind::BadFormat, w + " has no ids and tokens lists of one length"};
        auto& entry = t->specials[it.key()];
        for (size_t k = 0; k < ids->size(); ++k) {
          if (!(*ids)[k].is_number_unsigned() || (*ids)[k].get<uint64_t>() >= kMaxVocab * 2 || !(*toks)[k].is_string())
            return Error{ErrorKind::BadFormat, w + ".ids[" + std::to_string(k) + "] is not an id with its token"};
          entry.first.push_back(int((*ids)[k].get<uint64_t>()));
          entry.second.push_back((*toks)[k].get<std::string>());
        }
      }
    }
    for (const char* which : {"single", "pair"}) {
      const json* list = field(j, which);
      const std::string w = where + "." + which;
      if (!list || !list->is_array()) return Error{ErrorKind::BadFormat, w + " is not a list"};
      auto& items = std::string(which) == "single" ? t->single : t->pair;
      for (size_t i = 0; i < list->size(); ++i) {
        const json& e = (*list)[i];
        const std::string wi = w + "[" + std::to_string(i) + "]";
        const json* seq = e.is_object() ? field(e, "Sequence") : nullptr;
        const json* spc = e.is_object() ? field(e, "SpecialToken") : nullptr;
        const json* body = seq ? seq : spc;
        if (!body || !body->is_object()) return Error{ErrorKind::BadFormat, wi + " is neither a Sequence nor a SpecialToken"};
        const json* id = field(*body, "id");
        const json* ty = field(*body, "type_id");
        if (!id || !id->is_string()) return Error{ErrorKind::BadFormat, wi + ".id is not a string"};
        if (ty && (!ty->is_number_unsigned() || ty->get<uint64_t>() > 1000)) return Error{ErrorKind::BadFormat, wi + ".type_id is not a small count"};
        TemplatePost::Item item{seq != nullptr, 0, "", ty ? int(ty->get<uint64_t>()) : 0};
        if (seq) {
          const std::string& s = id->get_ref<const std::string&>();
          if (s != "A" && s != "B") return Error{ErrorKind::BadFormat, wi + ".id is neither A nor B"};
          item.seq = s == "B";
          if (item.seq == 1 && std::string(which) == "single") return Error{ErrorKind::BadFormat, wi + " names B in a single-text template"};
        } else {
          item.special = id->get<std::string>();
          if (!t->specials.count(item.special))
            return Error{ErrorKind::BadFormat, wi + " names \"" + sanitize_utf8(item.special.substr(0, 64)) + "\", which " + where + ".special_tokens lacks"};
        }
        items.push_back(item);
      }
    }
    return std::unique_ptr<PostProcessor>(std::move(t));
  }
  return Error{ErrorKind::BadFormat, where + ".type \"" + type + "\" is a post-processor headmap does not implement"};
}

Result<std::unique_ptr<Decoder>> parse_decoder(const json& j, const std::string& where) {
  HM_TRY(type, get_type(j, where));
  if (type == "Sequence") {
    const json* list = field(j, "decoders");
    if (!list || !list->is_array()) return Error{ErrorKind::BadFormat, where + ".decoders is not a list"};
    auto seq = std::make_unique<DecSeq>();
    for (size_t i = 0; i < list->size(); ++i) {
      HM_TRY(p, parse_decoder((*list)[i], where + ".decoders[" + std::to_string(i) + "]"));
      seq->parts.push_back(std::move(p));
    }
    return std::unique_ptr<Decoder>(std::move(seq));
  }
  if (type == "ByteLevel") return std::unique_ptr<Decoder>(std::make_unique<ByteLevelDec>());
  if (type == "ByteFallback") return std::unique_ptr<Decoder>(std::make_unique<ByteFallbackDec>());
  if (type == "Fuse") return std::unique_ptr<Decoder>(std::make_unique<FuseDec>());
  if (type == "Metaspace") {
    auto m = std::make_unique<MetaspaceDec>();
    HM_TRY(rep, get_string(j, "replacement", m->replacement, where));
    HM_TRY(scheme, get_string(j, "prepend_scheme", "", where));
    HM_TRY(aps, get_bool(j, "add_prefix_space", true, where));
    m->replacement = rep;
    m->prepend = scheme.empty() ? aps : scheme != "never";
    return std::unique_ptr<Decoder>(std::move(m));
  }
  if (type == "WordPiece") {
    auto w = std::make_unique<WordPieceDec>();
    HM_TRY(prefix, get_string(j, "prefix", "##", where));
    HM_TRY(cleanup, get_bool(j, "cleanup", true, where));
    w->prefix = prefix, w->cleanup = cleanup;
    return std::unique_ptr<Decoder>(std::move(w));
  }
  if (type == "Strip") {
    auto s = std::make_unique<StripDec>();
    HM_TRY(content, get_string(j, "content", " ", where));
    const std::u32string cps = decode_utf8(content).codepoints;
    if (cps.size() != 1) return Error{ErrorKind::BadFormat, where + ".content is not one character"};
    s->content = cps[0];
    for (const char* k : {"start", "stop"}) {
      const json* f = field(j, k);
      if (f && (!f->is_number_unsigned() || f->get<uint64_t>() > 1u << 20)) return Error{ErrorKind::BadFormat, where + "." + k + " is not a count"};
      (std::string(k) == "start" ? s->start : s->stop) = f ? size_t(f->get<uint64_t>()) : 0;
    }
    return std::unique_ptr<Decoder>(std::move(s));
  }
  if (type == "Replace") {
    auto r = std::make_unique<ReplaceDec>();
    const json* pat = field(j, "pattern");
    if (!pat) return Error{ErrorKind::BadFormat, where + ".pattern is missing"};
    HM_TRY(re, parse_pattern(*pat, where + ".pattern"));
    HM_TRY(content, get_string(j, "content", "", where));
    r->re = re, r->content = content;
    return std::unique_ptr<Decoder>(std::move(r));
  }
  return Error{ErrorKind::BadFormat, where + ".type \"" + type + "\" is a decoder headmap does not implement"};
}

}  // namespace

namespace {

// Parser events: model.vocab (an object) and model.merges go to BigTables, everything else
// into the JSON tree (nlohmann's own tree builder), where those two read null.
class TokenizerSax {
 public:
  using number_integer_t = json::number_integer_t;
  using number_unsigned_t = json::number_unsigned_t;
  using number_float_t = json::number_float_t;
  using string_t = json::string_t;
  using binary_t = json::binary_t;
  TokenizerSax(json& root, BigTables& big) : dom_(root, false), big_(big) {}

  bool null() { return value([&] { return dom_.null(); }, -1); }
  bool boolean(bool v) { return value([&] { return dom_.boolean(v); }, -1); }
  bool number_integer(number_integer_t v) { return value([&] { return dom_.number_integer(v); }, v); }
  bool number_unsigned(number_unsigned_t v) {
    return value([&] { return dom_.number_unsigned(v); }, v > number_unsigned_t(INT64_MAX) ? -1 : int64_t(v));
  }
  bool number_float(number_float_t v, const string_t& s) { return value([&] { return dom_.number_float(v, s); }, -1); }
  bool binary(binary_t& v) { return value([&] { return dom_.binary(v); }, -1); }
  bool string(string_t& v) {
    if (mode_ == Mode::Merges && depth_ == 3) {
      big_.merges.emplace_back(std::move(v), std::string("\x01"));
      return true;
    }
    if (mode_ == Mode::Merges && depth_ == 4) {
      pair_.push_back(std::move(v));
      return true;
    }
    return value([&] { return dom_.string(v); }, -1);
  }
  bool start_object(std::size_t n) {
    ++depth_;
    if (mode_ == Mode::Vocab) return bad_vocab();
    if (mode_ != Mode::Tree) return bad_merge_or(false);
    if (depth_ == 3 && in_model_ && key_ == "vocab") {
      mode_ = Mode::Vocab;
      big_.vocab_present = true;
      return true;
    }
    if (depth_ == 2 && key_ == "model") in_model_ = true;
    return dom_.start_object(n);
  }
  bool key(string_t& k) {
    if (mode_ == Mode::Vocab) {
      if (depth_ == 3) pending_ = std::move(k);
      return true;
    }
    if (mode_ != Mode::Tree) return true;
    if (depth_ == 1 || (depth_ == 2 && in_model_)) key_ = k;
    return dom_.key(k);
  }
  bool end_object() {
    --depth_;
    if (mode_ == Mode::Vocab && depth_ == 2) {
      mode_ = Mode::Tree;
      return dom_.null();  // model.vocab reads null in the tree
    }
    if (mode_ != Mode::Tree) return true;
    if (depth_ == 1) in_model_ = false;
    return dom_.end_object();
  }
  bool start_array(std::size_t n) {
    ++depth_;
    if (mode_ == Mode::Merges) {
      if (depth_ == 4) pair_.clear();
      else bad_merge_or(false);
      return true;
    }
    if (mode_ == Mode::Vocab) return bad_vocab();
    if (depth_ == 3 && in_model_ && key_ == "merges") {
      mode_ = Mode::Merges;
      big_.merges_present = true;
      return true;
    }
    return dom_.start_array(n);
  }
  bool end_array() {
    --depth_;
    if (mode_ == Mode::Merges) {
      if (depth_ == 3) {
        if (pair_.size() == 2) big_.merges.emplace_back(std::move(pair_[0]), std::move(pair_[1]));
        else bad_merge_or(false);
        pair_.clear();
        return true;
      }
      if (depth_ == 2) {
        mode_ = Mode::Tree;
        return dom_.null();  // model.merges reads null in the tree
      }
      return true;
    }
    if (mode_ == Mode::Vocab) return true;
    return dom_.end_array();
  }
  template <class E>
  bool parse_error(std::size_t pos, const std::string& tok, const E& e) {
    failed_ = true;
    error_at_ = pos;
    return dom_.parse_error(pos, tok, e);
  }
  bool failed() const { return failed_ || dom_.is_errored(); }
  size_t error_at() const { return error_at_; }

 private:
  enum class Mode { Tree, Vocab, Merges } mode_ = Mode::Tree;
  nlohmann::detail::json_sax_dom_parser<json> dom_;
  BigTables& big_;
  int depth_ = 0;
  bool in_model_ = false, failed_ = false;
  size_t error_at_ = 0;
  std::string key_, pending_;
  std::vector<std::string> pair_;

  template <class F>
  bool value(F&& tree, int64_t as_id) {
    if (mode_ == Mode::Vocab) {
      if (depth_ == 3) big_.vocab.emplace_back(std::move(pending_), as_id);
      return true;  // a value nested deeper: its entry was recorded as a bad id already
    }
    if (mode_ == Mode::Merges) return bad_merge_or(true);
    return tree();
  }
  bool bad_vocab() {  // an object or list as a token's id: recorded as a bad id, once
    if (depth_ == 4) big_.vocab.emplace_back(std::move(pending_), -1);
    return true;
  }
  bool bad_merge_or(bool) {
    if (mode_ == Mode::Merges && big_.bad_merge < 0) {
      big_.bad_merge = long(big_.merges.size());
      big_.merges.emplace_back();
    }
    return true;
  }
};

}  // namespace

Result<HfTokenizer> HfTokenizer::from_json(std::string_view text, const std::string& origin) {
  // Size, depth and memory: nlohmann's tree of a tokenizer.json takes about 8 times its text (measured on Gemma 3's).
  if (Status s = check_shape(text, origin); !s) return s.error();
  json j;
  BigTables big;
  TokenizerSax sax(j, big);
  const bool parsed = json::sax_parse(text, &sax, json::input_format_t::json, false) && !sax.failed();
  if (!parsed) return bad(origin, "is not valid JSON (the parser stopped at byte " + std::to_string(sax.error_at()) + ")");
  if (!j.is_object()) return bad(origin, "is not a JSON object");
  Ctx ctx{origin};
  UErrorCode st = U_ZERO_ERROR;
  ctx.nfc = icu::Normalizer2::getNFCInstance(st);
  ctx.nfd = icu::Normalizer2::getNFDInstance(st);
  ctx.nfkc = icu::Normalizer2::getNFKCInstance(st);
  ctx.nfkd = icu::Normalizer2::getNFKDInstance(st);
  auto impl = std::make_shared<Impl>();
  impl->origin = origin;
  auto wrap = [&](const Error& e) { return bad(origin, e.message); };
  const json* model = field(j, "model");
  if (!model) return bad(origin, "has no \"model\"");
  auto m = parse_model(*model, "model", big);
  if (!m) return wrap(m.error());
  impl->model = std::move(*m);
  if (const json* n = field(j, "normalizer")) {
    auto r = parse_normalizer(*n, "normalizer", ctx);
    if (!r) return wrap(r.error());
    impl->normalizer = std::move(*r);
  }
  if (const json* p = field(j, "pre_tokenizer")) {
    auto r = parse_pre(*p, "pre_tokenizer", ctx);
    if (!r) return wrap(r.error());
    impl->pre = std::move(*r);
  }
  if (const json* p = field(j, "post_processor")) {
    auto r = parse_post(*p, "post_processor");
    if (!r) return wrap(r.error());
    impl->post = std::move(*r);
  }
  if (const json* d = field(j, "decoder")) {
    auto r = parse_decoder(*d, "decoder");
    if (!r) return wrap(r.error());
    impl->decoder = std::move(*r);
  }
  impl->size = int(impl->model->vocab.tokens.size());
  if (const json* added = field(j, "added_tokens")) {
    if (!added->is_array()) return bad(origin, "added_tokens is not a list");
    if (added->size() > kMaxVocab) return bad(origin, "added_tokens has more than " + std::to_string(kMaxVocab) + " tokens");
    for (size_t i = 0; i < added->size(); ++i) {
      const json& a = (*added)[i];
      const std::string w = "added_tokens[" + std::to_string(i) + "]";
      if (!a.is_object()) return bad(origin, w + " is not an object");
      const json* id = field(a, "id");
      const json* content = field(a, "content");
      if (!id || !id->is_number_unsigned() || id->get<uint64_t>() >= kMaxVocab * 2) return bad(origin, w + ".id is not an id");
      if (!content || !content->is_string() || content->get_ref<const std::string&>().empty() ||
          content->get_ref<const std::string&>().size() > kMaxTokenBytes)
        return bad(origin, w + ".content is not a non-empty string");
      AddedToken t{int(id->get<uint64_t>()), content->get<std::string>(), false, false, false, false, true};
      for (auto [name, flag] : {std::pair{"special", &t.special}, {"single_word", &t.single_word}, {"lstrip", &t.lstrip},
                                {"rstrip", &t.rstrip}, {"normalized", &t.normalized}}) {
        auto v = get_bool(a, name, *flag, w);
        if (!v) return wrap(v.error());
        *flag = *v;
      }
      if (decode_utf8(t.content).replaced) return bad(origin, w + ".content is not valid UTF-8");
      impl->added_by_id[t.id] = impl->added.size();
      impl->size = std::max(impl->size, t.id + 1);
      impl->added.push_back(std::move(t));
    }
  }
  for (size_t k = 0; k < impl->added.size(); ++k) {
    const AddedToken& t = impl->added[k];
    if (!t.normalized) {
      impl->raw_trie.add(t.content, int(k));
    } else {
      NStr n;
      for (size_t i = 0; i < t.content.size(); ++i) n.s.push_back(t.content[i]), n.at.push_back({uint32_t(i), uint32_t(i + 1)});
      if (impl->normalizer) impl->normalizer->run(n);
      if (!n.s.empty()) impl->norm_trie.add(n.s, int(k));
    }
  }
  impl->raw_trie.finish();
  impl->norm_trie.finish();
  impl->byte_level = impl->pre && impl->pre->name().find("ByteLevel") != std::string::npos;
  HfTokenizer tk;
  tk.impl_ = impl;
  return tk;
}

namespace {

// A line of a text table (vocab.txt, merges.txt) must be UTF-8: it becomes a JSON string, and
// nlohmann's dump of invalid UTF-8 throws (issue 35, F3: an uncaught type_error.316 aborted).
Status check_line_utf8(const std::string& line, const std::string& file, size_t line_no) {
  const DecodedText d = decode_utf8(line);
  if (!d.replaced) return Status();
  return Error{ErrorKind::BadFormat, file + " line " + std::to_string(line_no + 1) + " is not valid UTF-8 (\"" +
                                         sanitize_utf8(line.substr(0, 64)) + "\"): the file is damaged or not a tokenizer's."};
}

// GPT-2's vocab.json + merges.txt as the tokenizer.json that says the same: byte-level BPE,
// GPT-2's split pattern, <|endoftext|> as a special added token when the vocabulary has it.
Result<std::string> gpt2_files_as_json(const std::string& vocab_text, const std::string& merges_text, const std::string& dir) {
  // vocab.json is a flat object: two levels are all it needs.
  if (Status s = check_json_limits(vocab_text, dir + "/vocab.json", 2, "open a smaller tokenizer"); !s) return s.error();
  json vocab = json::parse(vocab_text, nullptr, false);
  if (vocab.is_discarded() || !vocab.is_object()) return Error{ErrorKind::BadFormat, dir + "/vocab.json is not a JSON object of token: id"};
  json merges = json::array();
  size_t at = 0, line = 0;
  while (at < merges_text.size()) {
    size_t nl = merges_text.find('\n', at);
    if (nl == std::string::npos) nl = merges_text.size();
    std::string l = merges_text.substr(at, nl - at);
    if (!l.empty() && l.back() == '\r') l.pop_back();
    if (Status s = check_line_utf8(l, dir + "/merges.txt", line); !s) return s.error();
    if (!l.empty() && !(line == 0 && l.rfind("#version", 0) == 0)) merges.push_back(l);
    at = nl + 1, ++line;
  }
  json j = {{"version", "1.0"},
            {"added_tokens", json::array()},
            {"pre_tokenizer", {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true}, {"use_regex", true}}},
            {"decoder", {{"type", "ByteLevel"}}},
            {"model", {{"type", "BPE"}, {"vocab", std::move(vocab)}, {"merges", std::move(merges)}}}};
  const json& v = j["model"]["vocab"];
  if (auto e = v.find("<|endoftext|>"); e != v.end() && e->is_number_unsigned())
    j["added_tokens"].push_back({{"id", *e}, {"content", "<|endoftext|>"}, {"special", true}, {"normalized", false}});
  return j.dump();
}

// BERT's vocab.txt (one token a line, ids in order) as a WordPiece tokenizer.json, with the
// BERT pipeline, lowercased with accents stripped (uncased) or not (cased): what
// tokenizer_config.json's do_lower_case says (true when absent, as BertTokenizer's default).
Result<std::string> bert_vocab_as_json(const std::string& text, bool lowercase) {
  json vocab = json::object(), added = json::array();
  std::vector<std::string> lines;
  size_t at = 0;
  int id = 0;
  while (at < text.size()) {
    size_t nl = text.find('\n', at);
    if (nl == std::string::npos) nl = text.size();
    std::string t = text.substr(at, nl - at);
    if (!t.empty() && t.back() == '\r') t.pop_back();
    if (Status s = check_line_utf8(t, "vocab.txt", size_t(id)); !s) return s.error();
    vocab[t] = id;  // a line written twice: the last id wins, as Hugging Face's WordPiece::read_file (a map insert)
    lines.push_back(std::move(t));
    ++id, at = nl + 1;
  }
  for (size_t i = 0; i < lines.size(); ++i) {  // [CLS] and the like, at the id the vocabulary kept
    const std::string& t = lines[i];
    if (t.size() > 2 && t.front() == '[' && t.back() == ']' && vocab[t] == int(i))
      added.push_back({{"id", int(i)}, {"content", t}, {"special", true}, {"normalized", false}});
  }
  if (!vocab.contains("[CLS]") || !vocab.contains("[SEP]") || !vocab.contains("[UNK]"))
    return Error{ErrorKind::BadFormat, "vocab.txt lacks [CLS], [SEP] or [UNK]: it is not BERT's"};
  json j = {{"version", "1.0"},
            {"added_tokens", added},
            {"normalizer", {{"type", "BertNormalizer"}, {"clean_text", true}, {"handle_chinese_chars", true}, {"lowercase", lowercase}}},
            {"pre_tokenizer", {{"type", "BertPreTokenizer"}}},
            {"post_processor", {{"type", "BertProcessing"}, {"cls", {"[CLS]", vocab["[CLS]"]}}, {"sep", {"[SEP]", vocab["[SEP]"]}}}},
            {"decoder", {{"type", "WordPiece"}, {"prefix", "##"}}},
            {"model", {{"type", "WordPiece"}, {"unk_token", "[UNK]"}, {"continuing_subword_prefix", "##"}, {"max_input_chars_per_word", 100}, {"vocab", vocab}}}};
  return j.dump();
}

}  // namespace

Result<HfTokenizer> HfTokenizer::load(const std::string& file_or_dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_directory(file_or_dir, ec)) {
    auto text = read_file(file_or_dir, kMaxFileBytes + 1);
    if (!text) return text.error();
    return from_json(*text, file_or_dir);
  }
  for (const char* name : {"tokenizer.json", "vocab.json", "merges.txt", "vocab.txt", "tokenizer_config.json"})  // the directory's rule (model_dir.h)
    if (Status s = check_model_file(file_or_dir, fs::path(file_or_dir) / name); !s) return s.error();
  const fs::path dir(file_or_dir);
  // A name that is there but not a regular file (a FIFO, /dev/zero linked in) is read, and
  // read_file says what it is, instead of "has no tokenizer" (issue 35, F12).
  auto has = [&](const char* name) { return fs::exists(fs::symlink_status(dir / name, ec)); };
  if (has("tokenizer.json")) return load((dir / "tokenizer.json").string());
  if (has("vocab.json") && has("merges.txt")) {
    auto v = read_file((dir / "vocab.json").string(), kMaxFileBytes);
    if (!v) return v.error();
    auto m = read_file((dir / "merges.txt").string(), kMaxFileBytes);
    if (!m) return m.error();
    auto j = gpt2_files_as_json(*v, *m, file_or_dir);
    if (!j) return j.error();
    return from_json(*j, file_or_dir + "/vocab.json + merges.txt");
  }
  if (has("vocab.txt")) {
    auto v = read_file((dir / "vocab.txt").string(), kMaxFileBytes);
    if (!v) return v.error();
    bool lowercase = true;
    if (has("tokenizer_config.json")) {
      auto c = read_file((dir / "tokenizer_config.json").string(), size_t(1) << 20);
      if (!c) return c.error();
      const json cj = json::parse(*c, nullptr, false);
      if (cj.is_discarded() || !cj.is_object())
        return Error{ErrorKind::BadFormat, file_or_dir + "/tokenizer_config.json: not a JSON object."};
      if (cj.contains("do_lower_case") && cj["do_lower_case"].is_boolean()) lowercase = cj["do_lower_case"].get<bool>();
    }
    auto j = bert_vocab_as_json(*v, lowercase);
    if (!j) return Error{ErrorKind::BadFormat, file_or_dir + "/" + j.error().message};
    return from_json(*j, file_or_dir + "/vocab.txt");
  }
  if (has("tokenizer.model"))
    return Error{ErrorKind::BadFormat, file_or_dir + " has only tokenizer.model (SentencePiece's protobuf), which headmap does not read: "
                                       "it needs the model's tokenizer.json (download it with the model, or save it with transformers' "
                                       "AutoTokenizer.from_pretrained(...).save_pretrained(DIR))."};
  return Error{ErrorKind::Io, file_or_dir + " has no tokenizer: it needs tokenizer.json (or GPT-2's vocab.json and merges.txt, or BERT's vocab.txt)."};
}

// ---- [encoding] ------------------------------------------------------------------------
namespace {

bool word_char_at_end(std::string_view s) {
  if (s.empty()) return false;
  size_t k = s.size() - 1;
  while (k > 0 && (static_cast<unsigned char>(s[k]) & 0xC0) == 0x80) --k;
  size_t len;
  return is_word_char(next_cp(s, k, &len));
}
bool word_char_at_start(std::string_view s) {
  if (s.empty()) return false;
  size_t len;
  return is_word_char(next_cp(s, 0, &len));
}

}  // namespace

// Official AddedVocabulary::find_matches over one piece.
void HfTokenizer::Impl::cut_added(NStr&& n, const AddedTrie& trie, std::vector<NStr>& out) const {
  if (trie.empty() || n.s.empty()) {
    if (!n.s.empty()) out.push_back(std::move(n));
    return;
  }
  const std::string& s = n.s;
  const PieceHash::Prefixes ph(s);
  size_t start_offset = 0;
  for (size_t at = 0; at < s.size();) {
    auto [which, len] = trie.longest(s, at, ph);
    if (which < 0) {
      ++at;
      continue;
    }
    const AddedToken& t = added[size_t(which)];
    size_t start = at, stop = at + len;
    if (t.single_word) {
      const bool start_space = start == 0 || !word_char_at_end(std::string_view(s).substr(0, start));
      const bool stop_space = stop == s.size() || !word_char_at_start(std::string_view(s).substr(stop));
      if (!start_space || !stop_space) {
        ++at;
        continue;
      }
    }
    if (t.lstrip) {
      size_t ns = start;
      while (ns > 0) {
        size_t k = ns - 1;
        while (k > 0 && (static_cast<unsigned char>(s[k]) & 0xC0) == 0x80) --k;
        size_t l;
        if (!is_whitespace(next_cp(s, k, &l))) break;
        ns = k;
      }
      start = std::max(ns, start_offset);
    }
    if (t.rstrip)
      while (stop < s.size()) {
        size_t l;
        if (!is_whitespace(next_cp(s, stop, &l))) break;
        stop += l;
      }
    if (start_offset < start) out.push_back(n.slice(start_offset, start));
    NStr tok = n.slice(start, stop);
    tok.added_id = which;
    out.push_back(std::move(tok));
    start_offset = stop;
    at = stop;
  }
  if (start_offset < s.size()) out.push_back(n.slice(start_offset, s.size()));
}

std::vector<Tok> HfTokenizer::Impl::encode_one(std::string_view text, int seq) const {
  NStr whole;
  whole.s.assign(text);
  whole.at.resize(text.size());
  for (size_t i = 0; i < text.size();) {
    size_t len;
    next_cp(text, i, &len);
    for (size_t k = 0; k < len; ++k) whole.at[i + k] = {uint32_t(i), uint32_t(i + len)};
    i += len;
  }
  std::vector<NStr> pieces, normed;
  cut_added(std::move(whole), raw_trie, pieces);
  for (NStr& p : pieces) {
    if (p.added_id >= 0) {
      normed.push_back(std::move(p));
      continue;
    }
    if (normalizer) normalizer->run(p);
    cut_added(std::move(p), norm_trie, normed);
  }
  std::vector<Tok> out;
  std::vector<NStr> words;
  std::vector<ModelTok> mt;
  for (NStr& p : normed) {
    if (p.added_id >= 0) {
      const AddedToken& t = added[size_t(p.added_id)];
      const Span sp = p.span(0, p.s.size());
      out.push_back(Tok{t.id, t.content, sp, seq, false, seq});
      continue;
    }
    words.clear();
    if (pre) pre->split(std::move(p), words);
    else if (!p.empty()) words.push_back(std::move(p));
    for (const NStr& w : words) {
      mt.clear();
      model->tokenize(w.s, mt);
      for (const ModelTok& m : mt) out.push_back(Tok{m.id, token(m.id), w.span(m.b, m.e), seq, false, seq});
    }
  }
  return out;
}

namespace {

HfEncoding to_encoding(std::vector<Tok> toks) {
  HfEncoding e;
  for (Tok& t : toks) {
    e.ids.push_back(t.id);
    e.type_ids.push_back(t.type_id);
    e.special.push_back(t.special ? 1 : 0);
    e.pieces.push_back(std::move(t.piece));
    e.offsets.emplace_back(t.span.b, t.span.e);
    e.sequence.push_back(t.seq);
  }
  return e;
}

}  // namespace

HfEncoding HfTokenizer::encode(std::string_view text, bool add_special_tokens) const {
  int bad = 0;
  std::string clean = sanitize_utf8(text, &bad);
  Encodings encs;
  ScopedRegexBudget regex;
  encs.list.push_back(impl_->encode_one(clean, 0));
  encs.text[0] = &clean;
  if (impl_->post) impl_->post->run(encs, add_special_tokens);
  HfEncoding e = to_encoding(join(encs));
  e.invalid_utf8 = bad;
  e.regex_stopped = regex.budget.stopped;
  e.text = std::move(clean);
  return e;
}

HfEncoding HfTokenizer::encode_pair(std::string_view text, std::string_view pair, bool add_special_tokens) const {
  int bad_a = 0, bad_b = 0;
  std::string ca = sanitize_utf8(text, &bad_a), cb = sanitize_utf8(pair, &bad_b);
  Encodings encs;
  ScopedRegexBudget regex;
  encs.list.push_back(impl_->encode_one(ca, 0));
  encs.list.push_back(impl_->encode_one(cb, 1));
  encs.text[0] = &ca;
  encs.text[1] = &cb;
  if (impl_->post) impl_->post->run(encs, add_special_tokens);
  HfEncoding e = to_encoding(join(encs));
  e.invalid_utf8 = bad_a + bad_b;
  e.regex_stopped = regex.budget.stopped;
  e.text = std::move(ca);
  e.pair = std::move(cb);
  return e;
}

std::string HfTokenizer::decode(const std::vector<int>& ids, bool skip_special_tokens) const {
  std::vector<std::string> toks;
  for (int id : ids) {
    if (id < 0 || id >= impl_->size) continue;
    if (skip_special_tokens && is_special(id)) continue;
    toks.push_back(impl_->token(id));
  }
  if (impl_->decoder) impl_->decoder->run(toks);
  std::string out;
  for (const auto& t : toks) out += t;
  return out;
}

std::string HfTokenizer::token_text(int id) const {
  if (id < 0 || id >= impl_->size) return "";
  std::string piece = impl_->token(id);
  unsigned char b;
  if (parse_byte_piece(piece, &b) && b >= 0x80) return piece;  // part of a character
  if (impl_->byte_level && !is_special(id))
    if (auto bytes = gpt2_unspell(piece)) {  // GPT-2's alphabet: the bytes, or <0xNN> for a piece of a character
      int bad = 0;
      (void)sanitize_utf8(*bytes, &bad);
      if (!bad) return *bytes;
      std::string out;
      for (unsigned char c : *bytes) out += byte_piece(c);
      return out;
    }
  std::vector<std::string> toks{piece};
  if (impl_->decoder) impl_->decoder->run(toks);
  std::string out;
  for (const auto& t : toks) out += t;
  // The decoders drop a first token's leading space (Metaspace, Strip); a chip keeps it.
  if (!piece.empty() && (piece.rfind("\xE2\x96\x81", 0) == 0) && (out.empty() || out[0] != ' ')) out.insert(0, " ");
  // A WordPiece continuation ("##s") reads as what it adds to its word ("s"), as the decoder
  // reads it after the word's first piece.
  if (const auto* wp = dynamic_cast<const WordPieceModel*>(impl_->model.get());
      wp && !wp->prefix.empty() && piece.size() > wp->prefix.size() && piece.rfind(wp->prefix, 0) == 0 && out.rfind(wp->prefix, 0) == 0)
    out.erase(0, wp->prefix.size());
  return out;
}

int HfTokenizer::vocab_size() const { return impl_->size; }

Status HfTokenizer::check_ids_below(int model_vocab, const std::string& model_field) const {
  auto too_big = [&](const std::string& field, int id) {
    return Error{ErrorKind::BadFormat, impl_->origin + ": " + field + " is id " + std::to_string(id) + ", but " + model_field + " is " +
                                           std::to_string(model_vocab) + " (ids 0 to " + std::to_string(model_vocab - 1) +
                                           "): the tokenizer belongs to another model."};
  };
  const int model_size = int(impl_->model->vocab.tokens.size());
  if (model_size > model_vocab) return too_big("model.vocab's largest", model_size - 1);
  for (const AddedToken& t : impl_->added)
    if (t.id >= model_vocab) return too_big("the added token \"" + sanitize_utf8(t.content.substr(0, 64)) + "\"", t.id);
  if (impl_->post) {
    std::vector<NamedId> ids;
    impl_->post->special_ids(ids);
    for (const NamedId& n : ids)
      if (n.id >= model_vocab) return too_big(n.field, n.id);
  }
  return Status();
}
std::string HfTokenizer::id_to_token(int id) const { return impl_->token(id); }
int HfTokenizer::token_to_id(std::string_view token) const {
  for (const AddedToken& t : impl_->added)
    if (t.content == token) return t.id;
  return impl_->model->vocab.find(token);
}
bool HfTokenizer::is_special(int id) const {
  auto it = impl_->added_by_id.find(id);
  return it != impl_->added_by_id.end() && impl_->added[it->second].special;
}
std::string HfTokenizer::model_type() const { return impl_->model->name(); }
std::string HfTokenizer::describe() const {
  std::string s = impl_->model->name() + " (" + std::to_string(impl_->size) + " tokens, " + std::to_string(impl_->added.size()) + " added)";
  s += "; normalizer " + (impl_->normalizer ? impl_->normalizer->name() : std::string("none"));
  s += "; pre-tokenizer " + (impl_->pre ? impl_->pre->name() : std::string("none"));
  s += "; post-processor " + (impl_->post ? impl_->post->name() : std::string("none"));
  return s;
}

}  // namespace headmap
