// model_options.h: the command-line options that describe a model and its input, shared
// by headmap-cli and headmap (--screenshot, --benchmark), parsed with CLI11.
#pragma once
#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "core/model/config.h"
#include "core/error.h"
#include "core/model/weights.h"

namespace headmap {

inline constexpr const char* kDefaultSentence = "The cat sat on the mat because it was tired.";

struct ModelOptions {
  std::vector<std::string> texts;  // --text, repeatable: one sentence each
  std::string file;                // --file: one sentence per line
  ModelConfig cfg;
  std::string tokenizer = "word";
  std::string checkpoint;          // --checkpoint FILE (trained weights)
  std::string model;               // --model DIR (a Hugging Face GPT-2-family directory)
};

void add_model_options(CLI::App& app, ModelOptions& o);

struct ModelInput {
  ModelConfig cfg;
  std::vector<std::string> lines;  // the sentences, one per batch element
};

// Builds the config and the sentences. Errors are the user's to fix (exit status 2).
Result<ModelInput> resolve_model_options(const ModelOptions& o, bool default_sentence_if_empty);

// The weights the options ask for: random init from cfg, the --checkpoint file, or the
// --model directory. With a checkpoint or a model, d_model, layers, heads and context come
// from the weights unless given on the command line (a different --heads re-slices the same
// weights; fewer --layers runs the first layers), and a checkpoint trained without W_O turns
// the no-W_O switch on. Errors: an unreadable, corrupt or mismatched file.
Result<ModelWeights> load_model_weights(const ModelOptions& o, const CLI::App& app, ModelConfig& cfg);

}  // namespace headmap
