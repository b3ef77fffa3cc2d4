// bidi.h: right-to-left and Arabic text as it is drawn. Dear ImGui and the CPU PNG/SVG text
// (raster.h, heatmap_svg.h) draw code points left to right, one glyph each, so a label is
// handed to them in visual order and with Arabic letters in their joined forms. GNU FriBidi
// does the work: the Unicode Bidirectional Algorithm (UAX #9: embedding levels, mirrored
// brackets, reordering) and Arabic joining (ArabicShaping.txt) to the presentation forms of
// U+FB50-FDFF and U+FE70-FEFF (lam-alef as its ligature), which DejaVu Sans (the primary
// font) and Noto Sans Arabic draw.
//
// Only drawing uses it: text is stored, exported (--json, --npy), edited (the sentence box)
// and hashed in logical (typed) order, and the heads map's rows and columns stay in token
// order. Each token's label is shaped on its own: a token is a piece of a word, so its
// letters join inside it and not across the token boundary.
#pragma once
#include <functional>
#include <string>
#include <string_view>

namespace headmap {

// The visual, shaped form of a logical UTF-8 label, line by line ('\n' separates lines).
// Text without right-to-left or Arabic characters comes back unchanged, as does text with
// invalid UTF-8 (a byte-level BPE token holding half a letter: shown as before, with U+FFFD
// for its bytes). Explicit direction marks (LRM, RLM, embeddings, isolates) are dropped once
// applied; each line's base direction is that of its first strong character (UAX #9 P2-P3).
std::string visual_text(std::string_view logical);

// A label too long for its room, cut in typed order: the longest start of `logical` (whole
// characters) that, with "\xE2\x80\xA6" after it, is at most `room` wide as drawn
// (`drawn_width` measures a logical candidate as the caller draws it: visual_text, glyphs).
// So a right-to-left token keeps its first letters and shows the "\xE2\x80\xA6" on its left, as a
// left-to-right one keeps its first letters. The whole text when it fits; "" when not a
// letter does. Still logical: shape the result with visual_text to draw it.
std::string cut_logical(std::string_view logical, float room, const std::function<float(const std::string&)>& drawn_width);

// Does the text hold a right-to-left or Arabic character (so that visual_text may change it)?
bool has_rtl(std::string_view utf8);

}  // namespace headmap
