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

}  // namespace headmap
