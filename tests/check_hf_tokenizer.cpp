// check_hf_tokenizer.cpp: headmap's tokenizer.json pipeline against the official library's
// answers (tests/reference/hf_tokenizer_oracle.mjs), case by case:
//   check_hf_tokenizer TOKENIZER_JSON EXPECTED_JSON
// Ids, type ids, the special-token mask, offsets (as character offsets, the official unit)
// and the decoded text must be equal; invalid UTF-8 must be reported. Prints each
// difference and "N passed, N failed"; exits 1 on any failure.
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/io/file_io.h"
#include "core/text/hf_tokenizer.h"

using headmap::HfEncoding;
using headmap::HfTokenizer;

static std::string unhex(const std::string& h) {
  std::string out;
  for (size_t i = 0; i + 1 < h.size(); i += 2) out.push_back(char(std::stoi(h.substr(i, 2), nullptr, 16)));
  return out;
}

// Byte offset -> character offset, as the official library converts them: a byte inside a
// character (a trimmed offset can end there) counts as that character's start.
static size_t chars_before(const std::string& s, size_t byte) {
  size_t n = 0;
  for (size_t i = 0; i < byte && i < s.size(); ++i) n += (static_cast<unsigned char>(s[i]) & 0xC0) != 0x80;
  if (byte < s.size() && (static_cast<unsigned char>(s[byte]) & 0xC0) == 0x80 && n > 0) --n;
  return n;
}

template <class T>
static std::string show(const std::vector<T>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
  return s + "]";
}

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: check_hf_tokenizer TOKENIZER_JSON EXPECTED_JSON\n");
    return 2;
  }
  auto tok = HfTokenizer::load(argv[1]);
  if (!tok) {
    std::fprintf(stderr, "%s\n", tok.error().message.c_str());
    return 1;
  }
  auto text = headmap::read_file(argv[2]);
  if (!text) {
    std::fprintf(stderr, "%s\n", text.error().message.c_str());
    return 1;
  }
  const nlohmann::json exp = nlohmann::json::parse(*text);
  int passed = 0, failed = 0;
  for (const auto& c : exp.at("cases")) {
    const std::string name = c.at("name");
    const std::string a = unhex(c.at("text_hex"));
    const bool is_pair = c.contains("pair_hex");
    const std::string b = is_pair ? unhex(c.at("pair_hex")) : "";
    const HfEncoding e = is_pair ? tok->encode_pair(a, b) : tok->encode(a);
    std::vector<int> offs, want_offs;
    for (size_t k = 0; k < e.offsets.size(); ++k) {
      const std::string& src = e.sequence[k] == 1 ? e.pair : e.text;
      offs.push_back(int(chars_before(src, e.offsets[k].first)));
      offs.push_back(int(chars_before(src, e.offsets[k].second)));
    }
    for (const auto& o : c.at("offsets")) want_offs.push_back(o[0]), want_offs.push_back(o[1]);
    std::string why;
    const auto ids = c.at("ids").get<std::vector<int>>();
    if (e.ids != ids) why += "\n  ids    " + show(e.ids) + "\n  wanted " + show(ids);
    else {
      if (e.type_ids != c.at("type_ids").get<std::vector<int>>()) why += "\n  type ids " + show(e.type_ids) + " wanted " + c.at("type_ids").dump();
      std::vector<int> sp(e.special.begin(), e.special.end());
      if (sp != c.at("special").get<std::vector<int>>()) why += "\n  special " + show(sp) + " wanted " + c.at("special").dump();
      if (offs != want_offs) why += "\n  offsets " + show(offs) + "\n  wanted  " + show(want_offs);
    }
    const std::string dec = tok->decode(e.ids);
    if (dec != c.at("decoded").get<std::string>()) why += "\n  decoded \"" + dec + "\" wanted " + c.at("decoded").dump();
    const bool valid = a == e.text && b == e.pair;
    if (valid != (e.invalid_utf8 == 0)) why += "\n  invalid UTF-8 not reported";
    if (why.empty()) ++passed;
    else {
      ++failed;
      std::string pieces;
      for (const auto& p : e.pieces) pieces += " \"" + p + "\"";
      std::printf("FAIL %s: %s%s\n  pieces%s\n  wanted %s\n", name.c_str(), nlohmann::json(e.text).dump().c_str(), why.c_str(), pieces.c_str(),
                  c.at("tokens").dump().c_str());
    }
  }
  std::printf("%s: %s\n%d passed, %d failed\n", argv[1], tok->describe().c_str(), passed, failed);
  return failed ? 1 : 0;
}
