// fonts.h: which font draws each character. The shipped DejaVu Sans first; for a character
// it lacks, a system font that has it, found through fontconfig (Debian's fonts-noto-cjk,
// fonts-noto-core, fonts-symbola: CJK, Arabic, Hebrew, Devanagari, Thai..., monochrome
// emoji). Only outline fonts without colour glyphs qualify: stb_truetype draws no colour.
// One home for the choice: the app's glyph atlas (app/gui/glyphs.h) and the CPU PNG text
// (raster.h) both ask a FontChain, so a PNG shows the characters the window shows.
//
// A character no font has is shown as its code point, "U+E000" (codepoint_name), never as
// "�", which stays the mark of invalid bytes.
#pragma once
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/error.h"

struct stbtt_fontinfo;  // stb_truetype.h

namespace headmap {

// One face of a font file, held in memory and read with stb_truetype.
struct FontFace {
  std::string path;
  int index = 0;                    // the face within a collection (.ttc)
  std::string bytes;                // the whole file
  std::vector<unsigned char> info;  // stbtt_fontinfo, opaque here
  int glyph(char32_t cp) const;     // the glyph index, 0 when the face has none
  float scale(float px) const;      // stbtt_ScaleForPixelHeight, as Dear ImGui sizes fonts
  float units_per_em() const;
  float ascent_units() const;       // in font units
  const stbtt_fontinfo* stb() const;  // `info` as stb_truetype's type
};

// "U+E000", "U+1F600": how a character no font has is shown.
std::string codepoint_name(char32_t cp);
// The Debian package whose fonts draw cp ("fonts-noto-cjk", "fonts-symbola", "fonts-noto-core"),
// or "" for a private-use character, which no package promises.
std::string font_package_for(char32_t cp);
// Joiners, variation selectors, tags and other default-ignorable code points: drawn as
// nothing when no font has a glyph for them (they change their neighbours, never stand alone).
bool is_invisible(char32_t cp);

class FontChain {
 public:
  // The first face; the chain is empty (and draws nothing) until it is loaded.
  Status load_primary(const std::string& path);
  bool loaded() const { return !faces_.empty(); }
  // The face that draws cp: 0 the primary, > 0 a system font, -1 none. Looks in the faces
  // already open, then in fontconfig's list of the system's fonts (once per code point).
  int face_for(char32_t cp) const;
  const FontFace& face(int i) const { return *faces_[static_cast<size_t>(i)]; }
  // Pixels per font unit of face i for text of `px` pixels: the primary's line height is px;
  // a fallback's em matches the primary's em (CJK fonts' tall lines would shrink their glyphs).
  float scale(int i, float px) const;
  int faces() const { return static_cast<int>(faces_.size()); }
  // For the user: a font that could not be read, a system without fontconfig's fonts.
  const std::vector<std::string>& notes() const { return notes_; }

 private:
  mutable std::vector<std::unique_ptr<FontFace>> faces_;  // stable addresses: the atlas keeps pointers
  mutable std::unordered_map<char32_t, int> cache_;
  mutable std::unordered_map<std::string, int> opened_;  // "path#index" -> face, or -1 when unreadable
  mutable std::vector<std::string> notes_;
};

// UTF-8 decoded with each code point's byte range; invalid bytes come one at a time with
// valid = false (cp U+FFFD), so the bytes can be copied through untouched.
struct Utf8Unit {
  char32_t cp;
  size_t begin, end;  // [begin, end) in the bytes
  bool valid;
};
std::vector<Utf8Unit> utf8_units(std::string_view bytes);

}  // namespace headmap
