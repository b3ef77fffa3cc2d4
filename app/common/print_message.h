// print_message.h: the one way both executables print a message on the terminal. Messages
// carry text from files (a tensor's name, a lesson's title, a path), so they are printed
// through printable() (core/text/utf8.h): an ANSI escape in a tensor name cannot turn an
// error into a green "loaded OK", and U+202E cannot reorder the line (issue 35, F11).
#pragma once
#include <string>

namespace headmap {

// "<program>: <message>\n" on stderr, control characters and bidi overrides escaped.
void print_message(const char* program, const std::string& message);

}  // namespace headmap
