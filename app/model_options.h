// model_options.h: the command-line options that describe a model and its input, shared
// by headmap-cli and headmap (--screenshot, --benchmark), parsed with CLI11.
#pragma once
#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "core/config.h"
#include "core/error.h"
#include "core/weights.h"

namespace headmap {

inline constexpr const char* kDefaultSentence = "The cat sat on the mat because it was tired.";

struct ModelOptions {
  std::vector<std::string> texts;  // --text, repeatable: one sentence each
  std::string file;                // --file: one sentence per line
  ModelConfig cfg;
  std::string tokenizer = "word";
  std::string checkpoint;          // --checkpoint FILE (trained weights)
};

void add_model_options(CLI::App& app, ModelOptions& o);

struct ModelInput {
  ModelConfig cfg;
  std::vector<std::string> lines;  // the sentences, one per batch element
};

// Builds the config and the sentences. Errors are the user's to fix (exit status 2).
Result<ModelInput> resolve_model_options(const ModelOptions& o, bool default_sentence_if_empty);

}  // namespace headmap
