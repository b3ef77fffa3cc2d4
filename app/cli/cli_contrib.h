// cli_contrib.h: headmap-cli's options for what heads contribute (core/inspect/contrib.h).
#pragma once
#include <CLI/CLI.hpp>
#include <string>

#include "core/error.h"
#include "core/model/model.h"

namespace headmap {

struct ContribOptions {
  std::string attribute;   // "TOKEN@POS" or "A-B@POS"
  bool value_weighted = false, rollout = false, detectors = false;
  std::string patch_from;  // the clean sentence; --text is the corrupted one
  int patch_position = -1; // -1: every position
  std::string logit_lens;  // "final" or "text": the target whose probability each cell shows
  int lens_top_k = 5;
  bool head_overview = false;
  bool offset_profile = false;
  bool composition = false;
  std::string circuit;     // "L.H": that head's OV and QK circuits
  std::string corpus;      // a UTF-8 text file, one context a line: where --corpus-head fires
  std::string corpus_head; // "L.H"
  int corpus_top = 10;
  std::string corpus_stat = "weight";  // what the examples are ranked by (corpus_search.h's CorpusStat names)
};

void add_contrib_options(CLI::App& app, ContribOptions& o);
bool contrib_requested(const ContribOptions& o);
// Computes what `o` asks for on sentence b, adds it to the JSON document already written at
// json_path (under "contrib") and writes .npy files into npy_dir (either may be empty); with
// neither, prints tables. Errors are the user's (InvalidArgument) or a file's (Io).
Status run_contrib(const ContribOptions& o, const ModelWeights& w, const ModelConfig& cfg, const Batch& batch, const ForwardOutput& out,
                   int b, const std::string& json_path, const std::string& npy_dir);

}  // namespace headmap
