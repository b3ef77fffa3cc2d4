// presets.h: the sentences the chapters use, from assets/presets.json.
#pragma once
#include <string>
#include <vector>

#include "core/error.h"

namespace headmap {

struct Preset {
  std::string name;  // menu label
  std::string text;  // one sentence per line
  std::string note;  // why it is there
};

struct Presets {
  std::vector<Preset> items;
};

// Loads presets; on a missing or broken file returns the built-in list and the error.
Presets load_presets(const std::string& path, std::string* error);
// The same from the file's text; `path` names it in the message. (Fuzzed: tests/fuzz.)
Presets parse_presets(const std::string& text, const std::string& path, std::string* error);

}  // namespace headmap
