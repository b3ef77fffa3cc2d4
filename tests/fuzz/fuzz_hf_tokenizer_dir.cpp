// fuzz_hf_tokenizer_dir.cpp: a model directory's tokenizer files other than tokenizer.json
// (issue 35): BERT's vocab.txt, and GPT-2's vocab.json + merges.txt, read by
// HfTokenizer::load as a directory. The first byte picks the files: 'T' the rest is
// vocab.txt; else vocab.json + NUL + merges.txt. An accepted tokenizer encodes a sentence
// with every id inside its vocabulary. The files go to a folder of this process.
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

#include "core/text/hf_tokenizer.h"

namespace fs = std::filesystem;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const fs::path dir = fs::temp_directory_path() / ("headmap-fuzz-tokdir-" + std::to_string(::getpid()));
  std::error_code ec;
  fs::remove_all(dir, ec);
  fs::create_directories(dir, ec);
  const std::string_view all(reinterpret_cast<const char*>(data), size);
  auto write = [&](const char* name, std::string_view bytes) { std::ofstream(dir / name, std::ios::binary).write(bytes.data(), std::streamsize(bytes.size())); };
  if (!all.empty() && all[0] == 'T') {
    write("vocab.txt", all.substr(1));
  } else {
    const size_t nul = all.find('\0');
    write("vocab.json", all.substr(0, nul));
    write("merges.txt", nul == std::string_view::npos ? std::string_view() : all.substr(nul + 1));
  }
  const headmap::Result<headmap::HfTokenizer> t = headmap::HfTokenizer::load(dir.string());
  if (t) {
    const headmap::HfEncoding e = t->encode("The cat sat on the mat. \xE7\x8C\xAB caf\xC3", true);
    for (int id : e.ids)
      if (id < 0 || id >= t->vocab_size()) __builtin_trap();
    if (!t->check_ids_below(t->vocab_size(), "the vocabulary")) __builtin_trap();
  }
  fs::remove_all(dir, ec);
  return 0;
}
