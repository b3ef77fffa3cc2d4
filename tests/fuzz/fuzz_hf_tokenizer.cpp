// fuzz_hf_tokenizer.cpp: GPT-2's tokenizer files (core/text/bpe.h): tokenizer.json, and
// vocab.json + merges.txt (the input split at its first NUL byte). An accepted tokenizer
// must encode and decode a sentence back to the same bytes.
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "core/text/bpe.h"

static void check(const headmap::Result<headmap::Bpe>& b) {
  if (!b) return;
  const std::string text = "The cat sat on the mat. \xE7\x8C\xAB \xF0\x9F\x98\x80 caf\xC3";
  std::string back;
  for (int id : b->encode(text)) back += b->token_bytes(id);
  if (back != text) __builtin_trap();
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view all(reinterpret_cast<const char*>(data), size);
  check(headmap::Bpe::from_tokenizer_json(all));
  const size_t nul = all.find('\0');
  if (nul != std::string_view::npos) check(headmap::Bpe::from_gpt2_files(all.substr(0, nul), all.substr(nul + 1)));
  return 0;
}
