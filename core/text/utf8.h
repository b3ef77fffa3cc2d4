// utf8.h: decoding that never fails. Invalid bytes become U+FFFD and are counted.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace headmap {

struct DecodedText {
  std::u32string codepoints;
  int replaced = 0;  // invalid sequences replaced by U+FFFD
};

// Decodes UTF-8. Each maximal invalid subsequence (overlong forms, surrogates, stray
// continuation bytes, truncated sequences, code points above U+10FFFF) becomes one U+FFFD.
DecodedText decode_utf8(std::string_view bytes);

void append_utf8(std::string& out, char32_t cp);
std::string encode_utf8(std::u32string_view cps);

// Valid UTF-8 with invalid sequences replaced; *replaced (if given) receives the count.
std::string sanitize_utf8(std::string_view bytes, int* replaced = nullptr);

// Untrusted text (a file's name for a tensor, a lesson's title, a path) made safe to print
// on a terminal or draw: sanitize_utf8, then control characters (C0 but for newline and
// tab when `keep_lines`, DEL, C1) and the bidirectional overrides and isolates
// (U+202A-U+202E, U+2066-U+2069) written as escapes (\x1b, \u{202e}), so an ANSI sequence
// cannot rewrite the terminal and a right-to-left override cannot reorder a line (issue 35, F11).
std::string printable(std::string_view bytes, bool keep_lines = true);

}  // namespace headmap
