#include "core/text/utf8.h"

#include <cstdio>

namespace headmap {

DecodedText decode_utf8(std::string_view s) {
  DecodedText out;
  out.codepoints.reserve(s.size());
  const size_t n = s.size();
  size_t i = 0;
  while (i < n) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      out.codepoints.push_back(c);
      ++i;
      continue;
    }
    int len = 0;
    char32_t cp = 0;
    char32_t min = 0;
    if (c >= 0xC2 && c <= 0xDF) { len = 2; cp = c & 0x1F; min = 0x80; }
    else if (c >= 0xE0 && c <= 0xEF) { len = 3; cp = c & 0x0F; min = 0x800; }
    else if (c >= 0xF0 && c <= 0xF4) { len = 4; cp = c & 0x07; min = 0x10000; }
    if (len == 0) {  // stray continuation byte, C0/C1 overlong lead, or F5..FF
      out.codepoints.push_back(0xFFFD);
      ++out.replaced;
      ++i;
      continue;
    }
    // The second byte's range rules out overlong forms, surrogates and code points past
    // U+10FFFF, so a sequence stops at its first byte that cannot continue it: the
    // maximal subpart, as the Unicode standard (and every browser and Node) replaces it.
    const unsigned char lo = c == 0xE0 ? 0xA0 : c == 0xF0 ? 0x90 : 0x80;
    const unsigned char hi = c == 0xED ? 0x9F : c == 0xF4 ? 0x8F : 0xBF;
    int got = 1;
    while (got < len && i + got < n) {
      const unsigned char cc = static_cast<unsigned char>(s[i + got]);
      if (got == 1 ? (cc < lo || cc > hi) : (cc & 0xC0) != 0x80) break;
      cp = (cp << 6) | (cc & 0x3F);
      ++got;
    }
    const bool valid = got == len && cp >= min;
    if (valid) {
      out.codepoints.push_back(cp);
    } else {
      out.codepoints.push_back(0xFFFD);
      ++out.replaced;
    }
    i += got;
  }
  return out;
}

void append_utf8(std::string& out, char32_t cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

std::string encode_utf8(std::u32string_view cps) {
  std::string out;
  out.reserve(cps.size());
  for (char32_t cp : cps) append_utf8(out, cp);
  return out;
}

std::string sanitize_utf8(std::string_view bytes, int* replaced) {
  DecodedText d = decode_utf8(bytes);
  if (replaced) *replaced = d.replaced;
  return encode_utf8(d.codepoints);
}

std::string printable(std::string_view bytes, bool keep_lines) {
  const DecodedText d = decode_utf8(bytes);
  std::string out;
  out.reserve(bytes.size());
  char esc[16];
  for (char32_t cp : d.codepoints) {
    const bool line = keep_lines && (cp == '\n' || cp == '\t');
    if ((cp < 0x20 && !line) || cp == 0x7F || (cp >= 0x80 && cp < 0xA0)) {
      std::snprintf(esc, sizeof esc, "\\x%02x", unsigned(cp));
      out += esc;
    } else if ((cp >= 0x202A && cp <= 0x202E) || (cp >= 0x2066 && cp <= 0x2069)) {
      std::snprintf(esc, sizeof esc, "\\u{%04x}", unsigned(cp));
      out += esc;
    } else {
      append_utf8(out, cp);
    }
  }
  return out;
}

}  // namespace headmap
