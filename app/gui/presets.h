// presets.h: the sentences the chapters use, from assets/presets.json.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "core/error.h"

namespace headmap {

struct Preset {
  std::string name;  // menu label
  std::string text;  // one sentence per line
  std::string note;  // why it is there
  // Whether the text occurs in the shipped models' training corpus (english-v1): the file's
  // "in_corpus", checked against the corpus by a test (tests/app/test_app_state.cpp). A
  // sentence the model saw 20 times scores a loss it memorised; the menu says which is which.
  std::optional<bool> in_corpus;  // unset: the file does not say (generated text, a user's file)
};

// The menu's line for a preset: its name and, when the file says, "(not in the training
// corpus)" or "(in the training corpus: memorised)".
std::string preset_menu_label(const Preset& p);

struct Presets {
  std::vector<Preset> items;
};

// Loads presets; on a missing or broken file returns the built-in list and the error.
Presets load_presets(const std::string& path, std::string* error);
// The same from the file's text; `path` names it in the message. (Fuzzed: tests/fuzz.)
Presets parse_presets(const std::string& text, const std::string& path, std::string* error);

}  // namespace headmap
