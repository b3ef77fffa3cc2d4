// fuzz_hf_tokenizer_json.cpp: any tokenizer.json (core/text/hf_tokenizer.h). A file is
// accepted or refused with a message; an accepted one must encode hard texts (a pair too)
// into ids within its vocabulary, offsets within the text and lists of one length, and
// decode them, without crashing or hanging.
#include <cstdint>
#include <string>
#include <string_view>

#include "core/text/hf_tokenizer.h"

static void check(const headmap::HfEncoding& e, size_t text_bytes, size_t pair_bytes, int vocab) {
  const size_t n = e.ids.size();
  if (e.type_ids.size() != n || e.special.size() != n || e.pieces.size() != n || e.offsets.size() != n || e.sequence.size() != n)
    __builtin_trap();
  for (size_t k = 0; k < n; ++k) {
    if (e.ids[k] < 0 || (e.ids[k] >= vocab && !e.special[k])) __builtin_trap();
    const size_t limit = e.sequence[k] == 1 ? pair_bytes : text_bytes;
    if (e.offsets[k].first > e.offsets[k].second || e.offsets[k].second > limit) __builtin_trap();
  }
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view all(reinterpret_cast<const char*>(data), size);
  auto tok = headmap::HfTokenizer::from_json(all, "fuzz.json");
  if (!tok) {
    if (tok.error().message.empty()) __builtin_trap();  // every refusal says why
    return 0;
  }
  const std::string texts[] = {"", "The cat sat on the mat. caf\xC3\xA9 e\xCC\x81 \xE7\x8C\xAB \xF0\x9F\x98\x80  x\t\r\n12345",
                               "<s>[CLS]<|endoftext|> \xFF\xC3 ab\xE2\x82", std::string(300, 'a') + " " + std::string(50, ' ')};
  for (const std::string& t : texts) {
    const headmap::HfEncoding e = tok->encode(t);
    check(e, e.text.size(), 0, tok->vocab_size());
    (void)tok->decode(e.ids);
    for (int id : e.ids) (void)tok->token_text(id);
  }
  const headmap::HfEncoding p = tok->encode_pair(texts[1], texts[2]);
  check(p, p.text.size(), p.pair.size(), tok->vocab_size());
  (void)tok->decode(p.ids, true);
  return 0;
}
