// hf_stages.h: what every stage of the tokenizer.json pipeline shares (hf_tokenizer.h).
// Internal to core/text: the stage modules (hf_normalizers, hf_pre_tokenizers, hf_models,
// hf_post_processors, hf_decoders) and the assembler, hf_tokenizer.cpp.
//   - Unicode predicates as Rust's char has them (the official library's), from ICU;
//   - NStr, a normalized string aligned byte by byte with the original text;
//   - Regex, a file's pattern in PCRE2, bounded per match and per encoding (issue 35, F7, F10);
//   - reading a stage's JSON: fields with their defaults, and the one Sequence parser.
// Sections: [limits] [unicode] [aligned strings] [patterns] [reading a stage]
#pragma once
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <algorithm>
#include <chrono>
#include <initializer_list>
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "core/error.h"
#include "core/text/utf8.h"

namespace headmap::hf {

using json = nlohmann::json;

// ---- [limits] -- every table of a file is bounded before anything is allocated for it
constexpr size_t kMaxVocab = size_t(1) << 22;   // 4 M tokens
constexpr size_t kMaxMerges = size_t(1) << 23;  // 8 M merges
constexpr size_t kMaxTokenBytes = 4096;

// ---- [unicode] -------------------------------------------------------------------------
// Rust's char predicates, which the official library uses, from ICU's character database.
bool is_whitespace(char32_t c);
bool is_numeric(char32_t c);      // Rust char::is_numeric: Nd, Nl, No
bool is_punctuation(char32_t c);  // ASCII punctuation or a P* category
bool is_other(char32_t c);        // Cc Cf Co Cs: the official tables leave unassigned code points out
bool is_mark(char32_t c);
bool is_nonspacing_mark(char32_t c);
bool is_word_char(char32_t c);  // Rust's \w (regex crate, Unicode)
bool is_chinese_char(char32_t c);
void append_lower(char32_t c, std::u32string& out);  // Rust char::to_lowercase (full mapping, no context)

// The code point at s[i] (valid UTF-8) and its length.
inline char32_t next_cp(std::string_view s, size_t i, size_t* len) {
  const unsigned char c = static_cast<unsigned char>(s[i]);
  if (c < 0x80) return *len = 1, c;
  if (c < 0xE0) return *len = 2, char32_t(((c & 0x1F) << 6) | (s[i + 1] & 0x3F));
  if (c < 0xF0) return *len = 3, char32_t(((c & 0x0F) << 12) | ((s[i + 1] & 0x3F) << 6) | (s[i + 2] & 0x3F));
  return *len = 4, char32_t(((c & 0x07) << 18) | ((s[i + 1] & 0x3F) << 12) | ((s[i + 2] & 0x3F) << 6) | (s[i + 3] & 0x3F));
}

// "<0x41>": a byte-fallback piece, and back.
std::string byte_piece(unsigned char b);
bool parse_byte_piece(const std::string& t, unsigned char* b);

// ---- [aligned strings] -----------------------------------------------------------------
// A normalized string and, for each of its bytes, the byte range of the original text it
// came from (every byte of one character carries that character's range).
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

inline void prepend(NStr& n, std::string_view what) {
  if (n.s.empty()) return;
  n.s.insert(0, what);
  n.at.insert(n.at.begin(), what.size(), n.at.front());
}

// ---- [patterns] ------------------------------------------------------------------------
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
extern thread_local RegexBudget* regex_budget;  // the encoding running on this thread, if any

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

// The match limits of every Regex (kRegexMatchLimit, kRegexDepthLimit).
std::shared_ptr<pcre2_match_context> limited_match_context();

// A regex (the file's, or a literal string escaped) compiled once by PCRE2, shared.
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
Pieces regex_pieces(const Regex& re, std::string_view s);
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
// Official NormalizedString::split: pieces grouped by the behaviour, empty ones dropped.
void split_by(const NStr& n, Pieces pieces, Behavior behavior, bool invert, std::vector<NStr>& out);
// Each match of the pattern becomes `content`, whose characters carry the match's range.
void replace_all(NStr& n, const Regex& re, const std::string& content);

// ---- [reading a stage] -----------------------------------------------------------------
// `where` names the field at fault in every message ("pre_tokenizer.pretokenizers[1]").
const json* field(const json& j, const char* name);  // null when missing or null
Result<bool> get_bool(const json& j, const char* name, bool dflt, const std::string& where);
Result<std::string> get_string(const json& j, const char* name, const std::string& dflt, const std::string& where);
Result<std::string> get_type(const json& j, const std::string& where);  // a stage's "type"
Result<Behavior> parse_behavior(const json& j, const std::string& field);
Result<Regex> parse_pattern(const json& j, const std::string& field, bool* is_string = nullptr);  // {"String": s} or {"Regex": r}
Result<Regex> required_pattern(const json& j, const std::string& where);  // a stage's "pattern", which it must have
// A Replace stage's "pattern" and "content" (the normalizer's and the decoder's).
struct Replacement {
  Regex re;
  std::string content;
};
Result<Replacement> parse_replacement(const json& j, const std::string& where);
// Several true/false fields, each with its default; the first that is not a boolean is the message.
struct BoolField {
  const char* name;
  bool dflt;
  bool* to;
};
Status read_bools(const json& j, const std::string& where, std::initializer_list<BoolField> fields);

#define HM_TRY(var, expr)               \
  auto var##_r = (expr);                \
  if (!var##_r) return var##_r.error(); \
  auto var = std::move(*var##_r)

// A stage of one kind from its JSON: its "type" read, then a "Sequence" parsed here, the one
// Sequence parser of every kind ({"type": "Sequence", LIST: [stage, ...]}, LIST being
// "normalizers", "pretokenizers", "processors" or "decoders"; each part read by `parse`,
// the kind's own parser, so that a Sequence may nest, into Seq::parts, which run in turn),
// and any other type by `of_type(type, j, where)`.
template <class Stage, class Seq, class OfType>
Result<std::unique_ptr<Stage>> parse_stage(const json& j, const std::string& where, const char* list_name,
                                           Result<std::unique_ptr<Stage>> (*parse)(const json&, const std::string&), OfType&& of_type) {
  HM_TRY(type, get_type(j, where));
  if (type != "Sequence") return of_type(type, j, where);
  const json* list = field(j, list_name);
  if (!list || !list->is_array()) return Error{ErrorKind::BadFormat, where + "." + list_name + " is not a list"};
  auto seq = std::make_unique<Seq>();
  for (size_t i = 0; i < list->size(); ++i) {
    HM_TRY(p, parse((*list)[i], where + "." + list_name + "[" + std::to_string(i) + "]"));
    seq->parts.push_back(std::move(p));
  }
  return std::unique_ptr<Stage>(std::move(seq));
}

// "Sequence[A, B]": how a Sequence stage of any kind names itself in the pipeline's summary.
template <class Parts>
std::string sequence_name(const Parts& parts) {
  std::string s = "Sequence[";
  for (size_t i = 0; i < parts.size(); ++i) s += (i ? ", " : "") + parts[i]->name();
  return s + "]";
}

}  // namespace headmap::hf
