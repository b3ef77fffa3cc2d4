// text_wrap.h: the one rule for breaking a label into lines, without Dear ImGui (the caller
// measures): used for the weights' source line, which must never break inside a number.
#pragma once
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace headmap {

// The width of a piece of text as it will be drawn (in pixels for the app).
using MeasureText = std::function<float(std::string_view)>;

// Lines of `text` none wider than `width` (a line's trailing spaces are dropped, not
// measured): broken after ", " or ": " where that fits; a piece too long for a line at its
// spaces; a word too long for a line (a long path) after a '/', '-' or '_', else between
// two characters that are not both part of a number ("loss 3.04" never becomes "loss 3."
// and "04"), and never inside a UTF-8 sequence. Only a word with no allowed break that fits
// stays whole on a line wider than `width`.
std::vector<std::string> wrap_at_breaks(const std::string& text, float width, const MeasureText& measure);

}  // namespace headmap
