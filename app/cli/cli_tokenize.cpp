// cli_tokenize.cpp: `headmap-cli tokenize`, a tokenizer.json's answer for a text, as JSON.
//
//   headmap-cli tokenize --tokenizer FILE|DIR|GGUF --text TEXT [--pair TEXT] [--no-special]
//   headmap-cli tokenize --tokenizer FILE|DIR|GGUF --texts-file TEXTS.json [--no-special]
//
// --texts-file: a JSON array of strings, one tokenizer load for all (a 128k GGUF vocabulary
// takes a second to load); prints one JSON object a line, in order. Each JSON object holds: ids, pieces (as the vocabulary spells them), texts (what each token
// stands for, decoded), type ids, the special-token mask, byte offsets into the text (into
// the pair's for its tokens; "sequence" says which), the decoded text and the count of
// invalid UTF-8 sequences replaced. DIR: its tokenizer.json, else GPT-2's vocab.json +
// merges.txt, else BERT's vocab.txt. Exit status: 0, 1 a file could not be read, 2 bad arguments.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "app/common/print_message.h"
#include "core/io/gguf_model.h"
#include "core/text/hf_tokenizer.h"
#include "core/text/tokenizer.h"

namespace headmap {

static void print_encoding(const HfTokenizer& tok, const std::string& path, const std::string& text, const std::string& pair, bool has_pair,
                           bool no_special);

int tokenize_cmd(int argc, char** argv) {
  CLI::App app{"headmap-cli tokenize: a Hugging Face tokenizer's ids, pieces, type ids and byte offsets for a text, as JSON"};
  std::string path, text, pair, texts_file;
  bool no_special = false;
  app.add_option("--tokenizer", path, "a tokenizer.json, a model directory (tokenizer.json, vocab.json + merges.txt, or vocab.txt), or a GGUF file (its tokenizer.ggml)")
      ->required();
  auto* text_opt = app.add_option("--text", text, "the text to tokenize");
  auto* file_opt = app.add_option("--texts-file", texts_file, "a JSON array of texts: one JSON object a line for each, one tokenizer load");
  text_opt->excludes(file_opt);
  auto* pair_opt = app.add_option("--pair", pair, "a second text (a sentence pair, as BERT takes it)")->excludes(file_opt);
  app.add_flag("--no-special", no_special, "leave out the special tokens the post-processor adds (BOS, [CLS], ...)");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  std::vector<std::string> texts_in;
  if (file_opt->count()) {
    std::ifstream in(texts_file, std::ios::binary);
    if (!in.is_open()) {
      print_message("headmap-cli", texts_file + ": cannot be read (no such file, or no permission).");
      return 1;
    }
    nlohmann::json arr = nlohmann::json::parse(in, nullptr, false);
    if (!in || arr.is_discarded() || !arr.is_array()) {
      print_message("headmap-cli", texts_file + ": not a JSON array of strings.");
      return 1;
    }
    for (const auto& t : arr) {
      if (!t.is_string()) {
        print_message("headmap-cli", texts_file + ": not a JSON array of strings.");
        return 1;
      }
      texts_in.push_back(t.get<std::string>());
    }
  } else if (text_opt->count()) {
    texts_in.push_back(text);
  } else {
    print_message("headmap-cli", "tokenize needs --text or --texts-file.");
    return 2;
  }
  Result<HfTokenizer> tok = is_gguf_file(path) ? load_gguf_tokenizer(path) : HfTokenizer::load(path);
  if (!tok) {
    print_message("headmap-cli", tok.error().message);
    return 1;
  }
  for (const std::string& t : texts_in) print_encoding(*tok, path, t, pair, pair_opt->count() > 0, no_special);
  return 0;
}

static void print_encoding(const HfTokenizer& tok, const std::string& path, const std::string& text, const std::string& pair, bool has_pair,
                           bool no_special) {
  const HfEncoding e = has_pair ? tok.encode_pair(text, pair, !no_special) : tok.encode(text, !no_special);
  nlohmann::ordered_json out = {{"tokenizer", path}, {"pipeline", tok.describe()}, {"ids", e.ids}, {"pieces", e.pieces}};
  nlohmann::ordered_json texts = nlohmann::ordered_json::array(), offsets = nlohmann::ordered_json::array();
  for (size_t k = 0; k < e.ids.size(); ++k) {
    texts.push_back(e.special[k] ? e.pieces[k] : hf_piece(tok, e.ids[k]).text);  // as the app's chips read it
    offsets.push_back({e.offsets[k].first, e.offsets[k].second});
  }
  out["texts"] = texts;
  out["type_ids"] = e.type_ids;
  out["special"] = e.special;
  out["offsets"] = offsets;
  out["sequence"] = e.sequence;
  out["decoded"] = tok.decode(e.ids);
  out["invalid_utf8"] = e.invalid_utf8;
  if (e.invalid_utf8) std::fprintf(stderr, "headmap-cli: %d invalid UTF-8 sequence(s) in the text were replaced by U+FFFD\n", e.invalid_utf8);
  out["regex_stopped"] = e.regex_stopped;
  if (e.regex_stopped)
    std::fprintf(stderr, "headmap-cli: the tokenizer's regex gave up %d time(s) (PCRE2's match limit, or 5 s for one text): the rest of "
                 "that piece was left unsplit, so the tokens may differ from the official library's\n", e.regex_stopped);
  std::printf("%s\n", out.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace).c_str());
}

}  // namespace headmap
