// text_wrap.cpp: breaking a label into lines (text_wrap.h).
#include "app/gui/text_wrap.h"

namespace headmap {

std::vector<std::string> wrap_at_breaks(const std::string& text, float width, const MeasureText& measure) {
  const auto w = [&measure](const std::string& t) {
    size_t n = t.size();
    while (n > 0 && t[n - 1] == ' ') --n;
    return measure(std::string_view(t.data(), n));
  };
  const auto numeric = [](char c) { return (c >= '0' && c <= '9') || c == '.' || c == ','; };
  std::vector<std::string> lines;
  std::string line;
  const auto flush = [&] {
    while (!line.empty() && line.back() == ' ') line.pop_back();
    if (!line.empty()) lines.push_back(line);
    line.clear();
  };
  // Adds `part` to the line, or starts a new line with it; true when it fitted either way.
  const auto place = [&](const std::string& part) {
    if (w(line + part) <= width) {
      line += part;
      return true;
    }
    if (line.empty() || w(part) > width) return false;
    flush();
    line = part;
    return true;
  };
  std::vector<std::string> pieces;  // up to and including each ", " or ": "
  for (size_t i = 0; i < text.size();) {
    const size_t comma = text.find(", ", i), colon = text.find(": ", i), j = std::min(comma, colon);
    const size_t end = j == std::string::npos ? text.size() : j + 2;
    pieces.push_back(text.substr(i, end - i));
    i = end;
  }
  for (const std::string& piece : pieces) {
    if (place(piece)) continue;
    for (size_t i = 0; i < piece.size();) {  // word by word, each with its trailing spaces
      size_t end = piece.find(' ', i);
      end = end == std::string::npos ? piece.size() : piece.find_first_not_of(' ', end);
      if (end == std::string::npos) end = piece.size();
      std::string word = piece.substr(i, end - i);
      i = end;
      while (!place(word)) {  // wider than a line: the longest head that fits, at the best break
        flush();
        size_t cut = 0, soft = 0;
        for (size_t k = 1; k < word.size(); ++k) {
          if ((static_cast<unsigned char>(word[k]) & 0xC0) == 0x80) continue;  // inside a UTF-8 sequence
          if (w(word.substr(0, k)) > width) break;
          if (!(numeric(word[k - 1]) && word[k] >= '0' && word[k] <= '9') && !(word[k - 1] >= '0' && word[k - 1] <= '9' && numeric(word[k])))
            cut = k;
          if (word[k - 1] == '/' || word[k - 1] == '-' || word[k - 1] == '_') soft = k;
        }
        if (soft > 0) cut = soft;
        if (cut == 0) {  // no allowed break fits: the whole word, on its own line
          line = word;
          flush();
          word.clear();
          break;
        }
        line = word.substr(0, cut);
        flush();
        word = word.substr(cut);
      }
    }
  }
  flush();
  return lines;
}

}  // namespace headmap
