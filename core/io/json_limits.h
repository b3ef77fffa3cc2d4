// json_limits.h: the one check a JSON file's text passes before nlohmann builds a tree of it
// (tokenizer.json, vocab.json, view files): its nesting depth, and the tree's memory against
// the budget (a tree takes up to about 10 times its text). 100 MB of "[" in a vocab.json
// once took 7.4 GB (issue 35, F8); tokenizer.json had its own depth limit, now this one.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

#include "core/error.h"

namespace headmap {

// OK when `text` nests at most max_depth arrays and objects and its tree fits the memory
// budget; else BadFormat "<origin>: nests deeper than 64 levels (at byte 12)", or the
// budget's message with `lower`.
Status check_json_limits(std::string_view text, const std::string& origin, int max_depth, const std::string& lower);

}  // namespace headmap
