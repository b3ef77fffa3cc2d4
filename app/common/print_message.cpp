// print_message.cpp: see print_message.h.
#include "app/common/print_message.h"

#include <cstdio>

#include "core/text/utf8.h"

namespace headmap {

void print_message(const char* program, const std::string& message) {
  std::fprintf(stderr, "%s: %s\n", program, printable(message).c_str());
}

}  // namespace headmap
