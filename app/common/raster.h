// raster.h: a CPU RGB canvas with TrueType text (stb_truetype), for PNGs made without GL
// (headmap-cli --png). Text is UTF-8, drawn with the app's font fallbacks (fonts.h): a
// character no font has is written "U+XXXX", invalid bytes (U+FFFD) as "ï¿½".
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "app/common/fonts.h"
#include "core/error.h"

namespace headmap {

struct Rgb {
  uint8_t r, g, b;
};

struct Canvas {
  int w = 0, h = 0;
  std::vector<uint8_t> rgb;  // (h, w, 3)

  Canvas(int width, int height, Rgb bg);
  void fill(int x0, int y0, int x1, int y1, Rgb c);  // [x0,x1) x [y0,y1), clipped
  void blend(int x, int y, Rgb c, float alpha);
  // src scaled into [x, x+w) x [y, y+h) (each pixel the mean of the source pixels it covers), clipped.
  void draw_scaled(const Canvas& src, int x, int y, int w, int h);
  Status save_png(const std::string& path) const;  // atomic
};

// (h, w, 3) RGB rows, top-down, encoded as PNG and written atomically: every PNG headmap
// writes (the window's captures, the CLI's and the app's drawn exports) goes through here.
Status write_png(const std::string& path, int w, int h, const uint8_t* rgb);

class Font {
 public:
  Status load(const std::string& ttf_path);
  bool loaded() const { return chain_.loaded(); }
  int width(std::string_view utf8, float px) const;
  // Draws with the baseline at y. vertical: rotated 90° counter-clockwise, reading upwards
  // from (x, y); the text occupies x-ascent..x+descent horizontally.
  void draw(Canvas& c, int x, int y, std::string_view utf8, float px, Rgb color, bool vertical = false) const;
  float ascent(float px) const;
  // The em size (CSS and SVG font-size) of text `px` pixels high: px are the font's height
  // from descent to ascent (stbtt_ScaleForPixelHeight, as Dear ImGui sizes fonts), an em is
  // smaller (0.86 of it for DejaVu Sans). An SVG names this size so that its text is as wide
  // as width() measured.
  float em_size(float px) const;

 private:
  FontChain chain_;  // the primary font, then the system's fallbacks per character
  // Each character's face and code point to draw: a character no font has becomes the
  // letters of its "U+XXXX" in the primary face; an invisible one (is_invisible) nothing.
  std::vector<std::pair<int, char32_t>> layout(std::string_view utf8) const;
};

// Shortens text to fit max_px, ending with "…".
std::string fit_text(const Font& f, const std::string& text, float px, int max_px);
// Text as lines of at most max_px, broken between words (greedy); "\n" starts a new line
// (an empty one for "\n\n"), and a word wider than max_px alone is shortened by fit_text.
std::vector<std::string> wrap_text(const Font& f, const std::string& text, float px, int max_px);
// A token or sentence as drawn (typed order in): visual order with Arabic joined (bidi.h),
// shortened to fit max_px; right-to-left text is cut in typed order (its first letters kept).
std::string fit_drawn_text(const Font& f, const std::string& logical, float px, int max_px);

}  // namespace headmap
