// bench_hostile.cpp: the time hostile texts and files take (issue 35), as figures, never as
// a timed test. Each case doubles its input a few times and prints the seconds and the growth
// exponent between sizes (1: linear, 2: quadratic, 3: cubic); a case is stopped once one size
// takes over --cap seconds (default 20), and says so.
//   headmap-bench-hostile [--cap SECONDS]
// Cases, on headmap's own small tokenizer.json files (tests/data/tokenizers), changed where
// the case needs it:
//   F4 trim_offsets: RoBERTa's ByteLevel offsets trimming, words separated by double spaces
//   F6 WordPiece: one word of "ab" repeated, max_input_chars_per_word raised to 10^9
//   F6 Unigram: a 4,096-byte piece is refused; one word of "a" repeated, with a 256-byte
//      piece of "a" (the most headmap reads) in the vocabulary
//   F7 Split regex: a backtracking pattern (a+)+$ over words of "a" (each match fails at the space)
//   F8 lines: 16 MiB of one-character lines, through the memory check before the batch
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/io/file_io.h"
#include "core/model/config.h"
#include "core/model/model.h"
#include "core/text/hf_tokenizer.h"

using namespace headmap;
using Clock = std::chrono::steady_clock;
using json = nlohmann::json;

namespace {

double cap_seconds = 20;

json tokenizer_file(const char* name) {
  Result<std::string> t = read_file(std::string(HEADMAP_TEST_DATA) + "/tokenizers/" + name);
  if (!t) {
    std::fprintf(stderr, "%s\n", t.error().message.c_str());
    std::exit(1);
  }
  return json::parse(*t);
}

HfTokenizer load(const json& j, const char* what) {
  Result<HfTokenizer> t = HfTokenizer::from_json(j.dump(), what);
  if (!t) {
    std::fprintf(stderr, "%s: %s\n", what, t.error().message.c_str());
    std::exit(1);
  }
  return std::move(t).value();
}

// Encodes make_text(n) for n = first, 2 first, ... (steps sizes); prints seconds and exponents.
void sweep(const char* name, const HfTokenizer& tok, size_t first, int steps, const std::function<std::string(size_t)>& make_text) {
  std::printf("%-44s %12s %10s %10s %8s %8s\n", name, "bytes", "tokens", "seconds", "exponent", "regex");
  double prev_t = 0;
  size_t prev_n = 0;
  for (int i = 0; i < steps; ++i) {
    const size_t n = first << i;
    const std::string text = make_text(n);
    const auto t0 = Clock::now();
    const HfEncoding e = tok.encode(text);
    const double s = std::chrono::duration<double>(Clock::now() - t0).count();
    char exponent[16] = "";
    if (prev_n > 0 && prev_t > 1e-4) std::snprintf(exponent, sizeof exponent, "%.2f", std::log(s / prev_t) / std::log(double(n) / double(prev_n)));
    std::printf("%-44s %12zu %10zu %10.4f %8s %8d\n", "", text.size(), e.ids.size(), s, exponent, e.regex_stopped);
    std::fflush(stdout);
    prev_t = s, prev_n = n;
    if (s > cap_seconds) {
      std::printf("%-44s stopped: over %.0f s\n", "", cap_seconds);
      break;
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  for (int i = 1; i + 1 < argc; ++i)
    if (std::strcmp(argv[i], "--cap") == 0) cap_seconds = std::atof(argv[i + 1]);

  {  // F4
    const HfTokenizer tok = load(tokenizer_file("roberta_trim.json"), "roberta_trim.json");
    sweep("F4 ByteLevel trim_offsets, \"ab  \" words", tok, 16 << 10, 7, [](size_t n) {
      std::string s;
      while (s.size() < n) s += "ab  ";
      return s;
    });
  }
  {  // F6 WordPiece
    json j = tokenizer_file("wordpiece_bert.json");
    j["model"]["max_input_chars_per_word"] = 1000000000;
    const HfTokenizer tok = load(j, "wordpiece_bert.json, max_input_chars_per_word 10^9");
    sweep("F6 WordPiece, one word of \"ab\"", tok, 1 << 10, 6, [](size_t n) {
      std::string s;
      while (s.size() < n) s += "ab";
      return s;
    });
  }
  {  // F6 Unigram
    json j = tokenizer_file("unigram_metaspace.json");
    j["model"]["vocab"].push_back({std::string(4096, 'a'), -20.0});
    const Result<HfTokenizer> big = HfTokenizer::from_json(j.dump(), "unigram_metaspace.json + a 4,096-byte piece");
    std::printf("F6 Unigram with a 4,096-byte piece: %s\n", big ? "read" : big.error().message.c_str());
    j["model"]["vocab"].back() = {std::string(256, 'a'), -20.0};
    const HfTokenizer tok = load(j, "unigram_metaspace.json + a 256-byte piece");
    sweep("F6 Unigram, one word of \"a\", 256-byte piece", tok, 4 << 10, 5, [](size_t n) { return std::string(n, 'a'); });
  }
  {  // F7
    json j = tokenizer_file("wordpiece_bert.json");
    j["pre_tokenizer"] = {{"type", "Split"}, {"pattern", {{"Regex", "(a+)+$"}}}, {"behavior", "Isolated"}, {"invert", false}};
    const HfTokenizer tok = load(j, "wordpiece_bert.json, Split (a+)+$");
    sweep("F7 Split (a+)+$, words of 24 \"a\"", tok, 250 * 25, 4, [](size_t n) {
      std::string s;
      while (s.size() < n) s += std::string(24, 'a') + " ";
      return s;
    });
  }
  {  // F8: the memory check before the batch (no tokenizing)
    std::vector<std::string> lines(size_t(8) << 20, "a");
    ModelConfig cfg;
    const auto t0 = Clock::now();
    const Status s = check_batch_memory(lines, cfg);
    std::printf("F8 8 Mi one-character lines: checked in %.4f s: %s\n", std::chrono::duration<double>(Clock::now() - t0).count(),
                s ? "fits the budget" : s.error().message.c_str());
  }
  return 0;
}
