// bidi.cpp: see bidi.h.
#include "app/common/bidi.h"

#include <fribidi.h>

#include <vector>

#include "app/common/fonts.h"
#include "core/text/utf8.h"

namespace headmap {

namespace {

bool plain_ascii(std::string_view s) {
  for (char c : s)
    if (static_cast<unsigned char>(c) >= 0x80) return false;
  return true;
}

// A character whose presence makes a line need the algorithm: strong right-to-left (Hebrew,
// Arabic letters, Syriac, Thaana, N'Ko...), Arabic numbers, an explicit mark, or a letter
// that joins (Arabic, Syriac, N'Ko, Mongolian: shaped even in a left-to-right line).
bool needs_bidi(char32_t cp) {
  const FriBidiCharType t = fribidi_get_bidi_type(cp);
  if (FRIBIDI_IS_RTL(t) || t == FRIBIDI_TYPE_AN || FRIBIDI_IS_EXPLICIT(t) || FRIBIDI_IS_ISOLATE(t)) return true;
  if (cp == 0x200F || cp == 0x061C) return true;  // RLM, ALM
  const FriBidiJoiningType j = fribidi_get_joining_type(cp);
  return FRIBIDI_IS_JOINING_TYPE_D(j) || FRIBIDI_IS_JOINING_TYPE_R(j) || FRIBIDI_IS_JOINING_TYPE_L(j);
}

// Marks that only steer the algorithm: dropped from the drawn text.
bool direction_mark(char32_t cp) {
  return cp == 0x200E || cp == 0x200F || cp == 0x061C || (cp >= 0x202A && cp <= 0x202E) || (cp >= 0x2066 && cp <= 0x2069);
}

// One line (no '\n') of valid code points, logical in, visual out.
std::u32string visual_line(const std::u32string& logical) {
  const FriBidiStrIndex n = static_cast<FriBidiStrIndex>(logical.size());
  if (n == 0) return logical;
  std::vector<FriBidiChar> str(logical.begin(), logical.end());
  std::vector<FriBidiCharType> types(static_cast<size_t>(n));
  std::vector<FriBidiBracketType> brackets(static_cast<size_t>(n));
  std::vector<FriBidiLevel> levels(static_cast<size_t>(n));
  std::vector<FriBidiArabicProp> joining(static_cast<size_t>(n));
  fribidi_get_bidi_types(str.data(), n, types.data());
  fribidi_get_bracket_types(str.data(), n, types.data(), brackets.data());
  FriBidiParType base = FRIBIDI_PAR_ON;  // the first strong character decides; none: left to right
  if (!fribidi_get_par_embedding_levels_ex(types.data(), brackets.data(), n, &base, levels.data())) return logical;
  fribidi_get_joining_types(str.data(), n, joining.data());
  fribidi_join_arabic(types.data(), n, levels.data(), joining.data());
  const FriBidiFlags flags = FRIBIDI_FLAGS_DEFAULT | FRIBIDI_FLAGS_ARABIC;
  fribidi_shape(flags, levels.data(), n, joining.data(), str.data());
  // A ligature (lam-alef) takes its first character's place and leaves FRIBIDI_CHAR_FILL in
  // its second's: those fills are dropped, as are the direction marks.
  std::vector<char> drop(static_cast<size_t>(n));
  for (FriBidiStrIndex i = 0; i < n; ++i)
    drop[i] = (str[i] == FRIBIDI_CHAR_FILL && logical[i] != FRIBIDI_CHAR_FILL) || direction_mark(logical[i]);
  std::vector<FriBidiStrIndex> map(static_cast<size_t>(n));
  for (FriBidiStrIndex i = 0; i < n; ++i) map[i] = i;
  if (!fribidi_reorder_line(flags, types.data(), n, 0, base, levels.data(), str.data(), map.data())) return logical;
  std::u32string out;
  out.reserve(logical.size());
  for (FriBidiStrIndex v = 0; v < n; ++v)
    if (!drop[static_cast<size_t>(map[v])]) out.push_back(static_cast<char32_t>(str[v]));
  return out;
}

}  // namespace

bool has_rtl(std::string_view utf8) {
  if (plain_ascii(utf8)) return false;
  for (const Utf8Unit& u : utf8_units(utf8))
    if (u.valid && needs_bidi(u.cp)) return true;
  return false;
}

std::string visual_text(std::string_view logical) {
  if (plain_ascii(logical)) return std::string(logical);
  bool rtl = false;
  for (const Utf8Unit& u : utf8_units(logical)) {
    if (!u.valid) return std::string(logical);  // half a character: shown as before
    rtl = rtl || needs_bidi(u.cp);
  }
  if (!rtl) return std::string(logical);
  std::string out;
  out.reserve(logical.size() + 8);
  size_t start = 0;
  while (start <= logical.size()) {
    const size_t nl = logical.find('\n', start);
    const std::string_view line = logical.substr(start, nl == std::string_view::npos ? std::string_view::npos : nl - start);
    out += encode_utf8(visual_line(decode_utf8(line).codepoints));
    if (nl == std::string_view::npos) break;
    out += '\n';
    start = nl + 1;
  }
  return out;
}

std::string cut_logical(std::string_view logical, float room, const std::function<float(const std::string&)>& drawn_width) {
  const std::string whole(logical);
  if (drawn_width(whole) <= room) return whole;
  const std::vector<Utf8Unit> units = utf8_units(logical);
  auto start = [&](size_t n) { return std::string(logical.substr(0, n ? units[n - 1].end : 0)) + "\xE2\x80\xA6"; };
  size_t lo = 0, hi = units.empty() ? 0 : units.size() - 1;  // the most characters that fit, by halving
  while (lo < hi) {
    const size_t mid = (lo + hi + 1) / 2;
    if (drawn_width(start(mid)) <= room) lo = mid;
    else hi = mid - 1;
  }
  return lo ? start(lo) : std::string();
}

}  // namespace headmap
