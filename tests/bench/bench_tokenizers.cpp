// bench_tokenizers.cpp: load time and encoding throughput of headmap's tokenizer.json
// pipeline, printed as a table; tests/bench/compare_tokenizers.sh runs it beside Hugging
// Face's own library on the same files and text (README: "Tokenizers").
//   headmap-bench-tokenizers TEXT_FILE TOKENIZER_JSON...
// Load: the best of 3 (file read, parse, tables built). Throughput: every line of the text
// encoded on its own, with special tokens, on one thread; the best of 3 passes.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "core/io/file_io.h"
#include "core/text/hf_tokenizer.h"

using namespace headmap;
using Clock = std::chrono::steady_clock;

static double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: headmap-bench-tokenizers TEXT_FILE TOKENIZER_JSON...\n");
    return 2;
  }
  auto text = read_file(argv[1]);
  if (!text) return std::fprintf(stderr, "%s\n", text.error().message.c_str()), 1;
  std::vector<std::string> lines;
  for (size_t at = 0; at < text->size();) {
    size_t nl = text->find('\n', at);
    if (nl == std::string::npos) nl = text->size();
    if (nl > at) lines.push_back(text->substr(at, nl - at));
    at = nl + 1;
  }
  std::printf("%-60s %10s %12s %12s %10s\n", "tokenizer (headmap)", "load ms", "tokens", "tokens/s", "MB/s");
  for (int i = 2; i < argc; ++i) {
    double load = 1e9;
    Result<HfTokenizer> tok = Error{ErrorKind::Io, ""};
    for (int r = 0; r < 3; ++r) {
      const auto t0 = Clock::now();
      tok = HfTokenizer::load(argv[i]);
      load = std::min(load, seconds_since(t0));
      if (!tok) return std::fprintf(stderr, "%s\n", tok.error().message.c_str()), 1;
    }
    double best = 1e9;
    size_t tokens = 0;
    for (int r = 0; r < 3; ++r) {
      tokens = 0;
      const auto t0 = Clock::now();
      for (const std::string& l : lines) tokens += tok->encode(l).ids.size();
      best = std::min(best, seconds_since(t0));
    }
    std::printf("%-60s %10.0f %12zu %12.0f %10.2f\n", argv[i], load * 1000, tokens, double(tokens) / best, double(text->size()) / best / 1e6);
  }
  return 0;
}
