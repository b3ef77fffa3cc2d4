// token_labels.cpp: see token_labels.h.
#include "app/common/token_labels.h"

#include <algorithm>

#include "app/common/fonts.h"  // utf8_units
#include "core/inspect/predictions.h"
#include "core/text/hf_tokenizer.h"

namespace headmap {

// The labels of a sentence's tokens, the rule the maps, their tooltips and the figures use:
// token_display's text, but a byte piece (part of a character that byte-level BPE or byte
// fallback cut, which token_display shows as "<0xD8>") shows the character it is part of
// and which part, "ق 1/2", as the chips group such pieces under their character.
std::vector<std::string> token_labels(const std::vector<Token>& tokens) {
  std::vector<std::string> labels;
  std::string all;  // the sentence's bytes, token after token
  std::vector<size_t> start;
  for (const Token& t : tokens) {
    start.push_back(all.size());
    all += token_bytes(t);
    labels.push_back(token_display(t));
  }
  start.push_back(all.size());
  auto token_at = [&](size_t byte) { return static_cast<size_t>(std::upper_bound(start.begin(), start.end(), byte) - start.begin()) - 1; };
  std::vector<std::string> split(tokens.size());  // the pieces' labels, built from the characters they touch
  std::vector<bool> is_piece(tokens.size(), false);
  for (const Utf8Unit& u : utf8_units(all)) {
    if (!u.valid || u.end - u.begin < 2) continue;
    const size_t a = token_at(u.begin), z = token_at(u.end - 1);
    if (a == z) continue;
    for (size_t t = a; t <= z; ++t) is_piece[t] = true;
  }
  for (const Utf8Unit& u : utf8_units(all)) {
    const size_t a = token_at(u.begin), z = token_at(u.end - 1);
    const std::string ch = all.substr(u.begin, u.end - u.begin);
    if (a == z) {
      if (is_piece[a]) split[a] += ch == " " ? "\xC2\xB7" : ch;
      continue;
    }
    for (size_t t = a; t <= z; ++t)
      split[t] += (split[t].empty() ? "" : " ") + ch + " " + std::to_string(t - a + 1) + "/" + std::to_string(z - a + 1);
  }
  for (size_t t = 0; t < tokens.size(); ++t)
    if (is_piece[t] && !tokens[t].special && !split[t].empty()) labels[t] = split[t];
  // A character the bytes end before completing (a next token that starts one): its pieces
  // read "… 1/2", the character not known yet, never the bytes in hex.
  size_t p = all.size();
  int need = 1;
  for (size_t back = 1; back <= 3 && back <= all.size(); ++back) {
    const unsigned char c = static_cast<unsigned char>(all[all.size() - back]);
    if ((c & 0xC0) == 0x80) continue;  // a continuation byte
    need = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
    if (need > static_cast<int>(back)) p = all.size() - back;
    break;
  }
  for (size_t t = p < all.size() ? token_at(p) : tokens.size(); t < tokens.size(); ++t) {
    const size_t b0 = std::max(start[t], p), b1 = start[t + 1];
    if (tokens[t].special || b1 <= b0 || start[t] < p) continue;  // (a token with whole characters before the piece keeps its label)
    std::string part = std::to_string(b0 - p + 1);
    if (b1 - b0 > 1) part += "-" + std::to_string(b1 - p);
    labels[t] = "\xE2\x80\xA6 " + part + "/" + std::to_string(need);
  }
  return labels;
}


std::string next_token_label(const ModelWeights& w, const std::vector<Token>& before, int id) {
  Token next;
  if (w.hf_tokenizer && id >= 0 && id < w.hf_tokenizer->vocab_size()) next = hf_piece(*w.hf_tokenizer, id);
  else if (id >= 0 && id < w.bpe.size()) next = bpe_piece(w.bpe, id);
  else return token_name(w, id);
  std::vector<Token> all;
  for (const Token& t : before)
    if (!t.special) all.push_back(t);
  all.push_back(next);
  return token_labels(all).back();
}

}  // namespace headmap
