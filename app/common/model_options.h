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

// The text the app opens on and the CLI runs without --text: the first preset, chapter 000's
// lesson in a sentence of our own. Not in the training corpus, so its loss is not memorised
// (the chapter's "The cat sat on the mat because it was tired." is in english-v1 25 times,
// and read 1.59 nats/token; this one reads 3.58).
inline constexpr const char* kDefaultSentence = "The kitten curled up on the blanket because it was sleepy.";

struct ModelOptions {
  std::vector<std::string> texts;  // --text, repeatable: one sentence each
  std::string file;                // --file: one sentence per line
  ModelConfig cfg;
  std::string tokenizer = "word";
  std::string checkpoint;          // --checkpoint FILE (trained weights)
  std::string model;               // --model DIR (a Hugging Face GPT-2-family directory)
  bool random_init = false;        // --random-init: random weights instead of the shipped default
};

// The trained model headmap opens on when no weights are named.
inline constexpr const char* kDefaultCheckpoint = "checkpoints/d128-h4-l2.safetensors";

// --file: the largest text file either executable reads, checked before reading (in
// milliseconds, whatever the size). 15 MB of the shipped grammar corpus is already 125,917
// sentences, whose attention maps (9.6 GB) exceed the 2 GiB a forward pass may build
// (kMaxAttentionBytes) for the default model: a larger file would only be read and
// tokenised (60 MB: 8.5 s, 0.8 GB) to be refused.
inline constexpr size_t kMaxTextFileBytes = size_t(16) << 20;

// For seeds and other unsigned options: refuses "-1", which CLI11 would read as 2^64 - 1.
CLI::Validator whole_number_at_least_0();

// The model options, and -h/--help, which prints the defaults in force: the shipped trained
// model's D, H, L and context (read from it when help is asked for), or random init's.
void add_model_options(CLI::App& app, ModelOptions& o);

struct ModelInput {
  ModelConfig cfg;
  std::vector<std::string> lines;  // the sentences, one per batch element
};

// Builds the config and the sentences. Errors are the user's to fix (exit status 2), or
// the --file's (Io: unreadable; BadFormat: larger than kMaxTextFileBytes). With trained
// weights D and H are checked by load_model_weights, once the weights have given their D.
Result<ModelInput> resolve_model_options(const ModelOptions& o, bool default_sentence_if_empty);

// The weights the options ask for: random init from cfg with --random-init, else the
// --model directory (a GPT-2-family model in Hugging Face layout), else the --checkpoint
// file, else the shipped default (kDefaultCheckpoint). With loaded weights, d_model, layers,
// heads and context come from them unless given on the command line (a different --heads
// re-slices the same weights, the one meaning of --heads that the app's num_heads shares;
// a different --d-model or --layers is an error that names --random-init), and a
// checkpoint trained without W_O turns the no-W_O switch on. An H that does not divide the
// weights' d_model is an error naming that d_model and the valid counts.
// Errors: an unreadable, corrupt or mismatched file or directory.
Result<ModelWeights> load_model_weights(const ModelOptions& o, const CLI::App& app, ModelConfig& cfg);

}  // namespace headmap
