// glyphs.h: every script on screen. Dear ImGui's font atlas holds DejaVu Sans for Latin,
// Greek, Cyrillic and symbols, plus a glyph for each other character the text actually
// contains, from the system font that has it (fonts.h: Noto CJK, Noto Sans Arabic, Hebrew,
// Devanagari..., Symbola's monochrome emoji). The atlas is rebuilt only when a character
// not yet in it appears (App::rebuild_fonts asks dirty()).
//
// Debian's Dear ImGui stores characters as 16 bits, so a character above U+FFFF (emoji,
// rare CJK) cannot be drawn under its own code point: its glyph is stored under an alias in
// the private-use area (U+F8FE downwards), and the text headmap hands to ImGui says the
// alias (shown() for chips and labels, to_edit() for the text box, whose edits come back
// through from_edit()). Typed and pasted characters go through the same aliases.
//
// What a person sees: a character no installed font has is "U+E000" on chips and labels,
// and a hollow box in the text box (the atlas's fallback glyph); invalid bytes alone are
// "\xEF\xBF\xBD". Dear ImGui neither shapes Arabic nor reorders right-to-left text, so shown()
// hands it each label in visual order with Arabic letters joined (visual_text, bidi.h: GNU
// FriBidi); readable() and the text box stay in logical (typed) order.
#pragma once
#include <imgui.h>

#include <map>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "app/common/fonts.h"
#include "core/error.h"

struct GLFWwindow;

namespace headmap {

class Glyphs {
 public:
  // Clears the atlas and builds it at `size` pixels: the primary font (its fixed ranges and
  // every wanted character it has), the fallback fonts' glyphs rasterised here (cached per
  // size), and the hollow box that stands for characters no font has.
  Status build(ImFontAtlas& atlas, const std::string& primary_path, float size);
  bool dirty() const { return dirty_; }  // a character with a glyph not in the atlas appeared

  // Text as headmap hands it to ImGui on chips and labels: in visual order, Arabic joined
  // (visual_text), characters above U+FFFF as their alias, characters no font has as
  // "U+XXXX", invisible ones without a glyph dropped.
  std::string shown(std::string_view utf8);
  // The same as a person reads it (the report): real characters, "U+XXXX" where none is drawn.
  std::string readable(std::string_view utf8);
  // The text box's buffer: every character above U+FFFF as its alias (so Dear ImGui's
  // 16-bit editing keeps it); from_edit turns the aliases back. Invalid bytes pass through.
  std::string to_edit(std::string_view text);
  std::string from_edit(std::string_view edit) const;

  std::vector<std::string> missing_in(std::string_view utf8) const;
  // The packages that would draw them ("fonts-noto-cjk"...), none for private-use characters.
  std::vector<std::string> packages_for(std::string_view utf8) const;
  // What the text box shows for its buffer (to_edit's) in the current font: the characters
  // drawn as the hollow box, and how many invalid bytes are drawn as U+FFFD.
  void audit_edit(std::string_view edit, std::vector<std::string>* boxes, int* replacements) const;  // "U+E000" for each character of it no font has
  void queue_typed(char32_t cp);  // a typed character above U+FFFF, for the text box
  std::string take_typed();       // the aliases typed since the last call, as UTF-8
  std::vector<std::string> fonts() const;     // the font files in the atlas, primary first
  const std::vector<std::string>& notes() const { return chain_.notes(); }
  // The last rebuild, from clearing the atlas to its texture uploaded (App::rebuild_fonts).
  double rebuild_ms() const { return rebuild_ms_; }
  void note_rebuild_ms(double ms) { rebuild_ms_ = ms; }
  int atlas_glyphs() const { return atlas_glyphs_; }
  int generation() const { return generation_; }  // counts the builds: text measured before one is stale

 private:
  static constexpr ImWchar kBox = 0xF8FF;  // the hollow box: the atlas's fallback glyph
  void want(char32_t cp);
  ImWchar alias(char32_t cp);  // cp itself in the BMP; 0 when the aliases ran out
  template <bool kAliases>
  std::string display(std::string_view utf8);

  FontChain chain_;
  std::string chain_path_;
  std::set<char32_t> wanted_;  // every character seen in text handed to shown() / to_edit()
  std::unordered_map<char32_t, ImWchar> alias_;
  std::unordered_map<ImWchar, char32_t> real_;
  std::string typed_;
  ImWchar next_alias_ = kBox - 1;
  ImVector<ImWchar> ranges_;  // the primary font's ranges: the atlas reads them while it builds
  struct Bitmap {
    int w = 0, h = 0, x0 = 0, y0 = 0;
    float advance = 0;
    std::vector<unsigned char> alpha;
  };
  std::map<std::pair<char32_t, float>, Bitmap> bitmaps_;  // (character, pixel size)
  bool dirty_ = false;
  double rebuild_ms_ = 0;
  int atlas_glyphs_ = 0;
  int generation_ = 0;
};

Glyphs& glyphs();  // the app's one atlas (main thread only)

// Typed characters above U+FFFF and the clipboard go through the aliases (Dear ImGui would
// turn them into U+FFFD). Call once, after Dear ImGui's GLFW backend installed its callbacks.
void install_glyph_input(GLFWwindow* window);
// A typed character. Above U+FFFF its alias waits for the text box (Dear ImGui drops typed
// private-use characters, so the box inserts it itself: take_typed); others go to Dear ImGui.
void type_char(unsigned int c);

}  // namespace headmap
