// json_limits.cpp: see json_limits.h.
#include "core/io/json_limits.h"

#include "core/memory_budget.h"

namespace headmap {

Status check_json_limits(std::string_view text, const std::string& origin, int max_depth, const std::string& lower) {
  int depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') ++i;
      else if (c == '"') in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > max_depth)
        return Error{ErrorKind::BadFormat, origin + ": nests deeper than " + std::to_string(max_depth) + " levels (at byte " + std::to_string(i) + ")"};
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return check_memory(mul_sat(text.size(), 10), origin, lower);
}

}  // namespace headmap
