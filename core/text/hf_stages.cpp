// hf_stages.cpp: see hf_stages.h.
// Sections: [unicode] [patterns] [reading a stage]
#include "core/text/hf_stages.h"

#include <unicode/uchar.h>

#include <algorithm>
#include <cstdio>
#include <map>

namespace headmap::hf {

// ---- [unicode] -------------------------------------------------------------------------
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

std::string byte_piece(unsigned char b) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "<0x%02X>", b);
  return buf;
}

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

// ---- [patterns] ------------------------------------------------------------------------
thread_local RegexBudget* regex_budget = nullptr;

std::shared_ptr<pcre2_match_context> limited_match_context() {
  std::shared_ptr<pcre2_match_context> c(pcre2_match_context_create(nullptr), pcre2_match_context_free);
  if (c) {
    pcre2_set_match_limit(c.get(), kRegexMatchLimit);
    pcre2_set_depth_limit(c.get(), kRegexDepthLimit);
  }
  return c;
}

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

Result<Regex> parse_pattern(const json& j, const std::string& field, bool* is_string) {
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

// ---- [reading a stage] -----------------------------------------------------------------
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

Result<Regex> required_pattern(const json& j, const std::string& where) {
  const json* pat = field(j, "pattern");
  if (!pat) return Error{ErrorKind::BadFormat, where + ".pattern is missing"};
  return parse_pattern(*pat, where + ".pattern");
}

Result<Replacement> parse_replacement(const json& j, const std::string& where) {
  HM_TRY(re, required_pattern(j, where));
  HM_TRY(content, get_string(j, "content", "", where));
  return Replacement{re, content};
}

Status read_bools(const json& j, const std::string& where, std::initializer_list<BoolField> fields) {
  for (const BoolField& f : fields) {
    Result<bool> v = get_bool(j, f.name, f.dflt, where);
    if (!v) return v.error();
    *f.to = *v;
  }
  return Status();
}

Result<std::string> get_type(const json& j, const std::string& where) {
  if (!j.is_object()) return Error{ErrorKind::BadFormat, where + " is not an object"};
  const json* t = field(j, "type");
  if (!t || !t->is_string()) return Error{ErrorKind::BadFormat, where + ".type is missing or not a string"};
  return t->get<std::string>();
}

}  // namespace headmap::hf
