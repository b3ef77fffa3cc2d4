#include "app/common/raster.h"

#include <stb_image_write.h>
#include <stb_truetype.h>

#include <algorithm>
#include <cmath>

#include "app/common/bidi.h"
#include "core/io/file_io.h"
#include "core/text/utf8.h"

namespace headmap {

Canvas::Canvas(int width, int height, Rgb bg) : w(width), h(height), rgb(static_cast<size_t>(width) * height * 3) {
  for (size_t i = 0; i < rgb.size(); i += 3) {
    rgb[i] = bg.r;
    rgb[i + 1] = bg.g;
    rgb[i + 2] = bg.b;
  }
}

void Canvas::fill(int x0, int y0, int x1, int y1, Rgb c) {
  x0 = std::max(x0, 0);
  y0 = std::max(y0, 0);
  x1 = std::min(x1, w);
  y1 = std::min(y1, h);
  for (int y = y0; y < y1; ++y)
    for (int x = x0; x < x1; ++x) {
      uint8_t* p = &rgb[(static_cast<size_t>(y) * w + x) * 3];
      p[0] = c.r;
      p[1] = c.g;
      p[2] = c.b;
    }
}

void Canvas::blend(int x, int y, Rgb c, float a) {
  if (x < 0 || y < 0 || x >= w || y >= h || a <= 0) return;
  uint8_t* p = &rgb[(static_cast<size_t>(y) * w + x) * 3];
  p[0] = static_cast<uint8_t>(p[0] + (c.r - p[0]) * a);
  p[1] = static_cast<uint8_t>(p[1] + (c.g - p[1]) * a);
  p[2] = static_cast<uint8_t>(p[2] + (c.b - p[2]) * a);
}

void Canvas::draw_scaled(const Canvas& src, int x, int y, int dw, int dh) {
  if (dw <= 0 || dh <= 0 || src.w <= 0 || src.h <= 0) return;
  for (int j = std::max(0, -y); j < dh && y + j < h; ++j) {
    const int sy0 = static_cast<int>(static_cast<int64_t>(j) * src.h / dh);
    const int sy1 = std::max(sy0 + 1, static_cast<int>(static_cast<int64_t>(j + 1) * src.h / dh));
    for (int i = std::max(0, -x); i < dw && x + i < w; ++i) {
      const int sx0 = static_cast<int>(static_cast<int64_t>(i) * src.w / dw);
      const int sx1 = std::max(sx0 + 1, static_cast<int>(static_cast<int64_t>(i + 1) * src.w / dw));
      uint32_t sum[3] = {0, 0, 0}, n = 0;
      for (int sy = sy0; sy < sy1 && sy < src.h; ++sy)
        for (int sx = sx0; sx < sx1 && sx < src.w; ++sx, ++n)
          for (int k = 0; k < 3; ++k) sum[k] += src.rgb[(static_cast<size_t>(sy) * src.w + sx) * 3 + k];
      uint8_t* p = &rgb[(static_cast<size_t>(y + j) * w + x + i) * 3];
      for (int k = 0; k < 3; ++k) p[k] = static_cast<uint8_t>(n ? sum[k] / n : 0);
    }
  }
}

Status write_png(const std::string& path, int w, int h, const uint8_t* rgb) {
  // No per-row filter, and stb's shortest match search: on the window's flat panels and the
  // maps' flat cells this is about 3x faster than stb's default (every filter tried per row,
  // level 8) and the file comes out smaller (a 1600x1000 window: 71 against 206 ms, 336
  // against 366 kB, measured on the project's 2-core machine).
  stbi_write_force_png_filter = 0;
  stbi_write_png_compression_level = 5;
  std::string bytes;
  auto sink = [](void* ctx, void* data, int size) { static_cast<std::string*>(ctx)->append(static_cast<char*>(data), size); };
  if (!stbi_write_png_to_func(sink, &bytes, w, h, 3, rgb, w * 3))
    return Error{ErrorKind::Io, "Cannot encode the PNG for " + path + "."};
  return write_file_atomic(path, bytes);
}

Status Canvas::save_png(const std::string& path) const { return write_png(path, w, h, rgb.data()); }


Status Font::load(const std::string& path) { return chain_.load_primary(path); }

float Font::ascent(float px) const {
  if (!loaded()) return 0;
  return chain_.face(0).ascent_units() * chain_.face(0).scale(px);
}

std::vector<std::pair<int, char32_t>> Font::layout(std::string_view utf8) const {
  std::vector<std::pair<int, char32_t>> out;
  for (char32_t cp : decode_utf8(utf8).codepoints) {
    const int face = chain_.face_for(cp);
    if (face >= 0) out.emplace_back(face, cp);
    else if (!is_invisible(cp))
      for (char c : codepoint_name(cp)) out.emplace_back(0, static_cast<char32_t>(c));
  }
  return out;
}

float Font::em_size(float px) const {
  if (!loaded()) return px;
  const stbtt_fontinfo* info = chain_.face(0).stb();
  return px * stbtt_ScaleForPixelHeight(info, 1.0f) / stbtt_ScaleForMappingEmToPixels(info, 1.0f);
}

int Font::width(std::string_view utf8, float px) const {
  if (!loaded()) return 0;
  float x = 0;
  for (auto [face, cp] : layout(utf8)) {
    const stbtt_fontinfo* info = chain_.face(face).stb();
    int adv, lsb;
    stbtt_GetCodepointHMetrics(info, static_cast<int>(cp), &adv, &lsb);
    x += adv * chain_.scale(face, px);
  }
  return static_cast<int>(std::ceil(x));
}

void Font::draw(Canvas& c, int x, int y, std::string_view utf8, float px, Rgb color, bool vertical) const {
  if (!loaded()) return;
  float pen = 0;
  for (auto [face, cp] : layout(utf8)) {
    const stbtt_fontinfo* info = chain_.face(face).stb();
    const float s = chain_.scale(face, px);
    int adv, lsb, gw, gh, xo, yo;
    stbtt_GetCodepointHMetrics(info, static_cast<int>(cp), &adv, &lsb);
    unsigned char* bmp = stbtt_GetCodepointBitmapSubpixel(info, s, s, pen - std::floor(pen), 0, static_cast<int>(cp), &gw, &gh, &xo, &yo);
    const int px0 = static_cast<int>(std::floor(pen));
    for (int gy = 0; gy < gh; ++gy)
      for (int gx = 0; gx < gw; ++gx) {
        const float a = bmp[gy * gw + gx] / 255.0f;
        if (vertical) c.blend(x + yo + gy, y - (px0 + xo + gx), color, a);
        else c.blend(x + px0 + xo + gx, y + yo + gy, color, a);
      }
    stbtt_FreeBitmap(bmp, nullptr);
    pen += adv * s;
  }
}

std::string fit_text(const Font& f, const std::string& text, float px, int max_px) {
  if (f.width(text, px) <= max_px) return text;
  std::u32string cps = decode_utf8(text).codepoints;
  while (!cps.empty()) {
    cps.pop_back();
    std::string t = encode_utf8(cps) + "\xE2\x80\xA6";
    if (f.width(t, px) <= max_px) return t;
  }
  return "";
}

std::vector<std::string> wrap_text(const Font& f, const std::string& text, float px, int max_px) {
  std::vector<std::string> lines;
  size_t start = 0;
  for (;;) {
    const size_t nl = text.find('\n', start);
    const std::string para = text.substr(start, nl == std::string::npos ? std::string::npos : nl - start);
    std::string line;
    size_t at = 0;
    while (at <= para.size()) {
      size_t end = para.find(' ', at);
      if (end == std::string::npos) end = para.size();
      const std::string word = para.substr(at, end - at);
      at = end + 1;
      if (word.empty()) continue;
      const std::string longer = line.empty() ? word : line + " " + word;
      if (!line.empty() && f.width(longer, px) > max_px) {
        lines.push_back(line);
        line = word;
      } else {
        line = longer;
      }
    }
    lines.push_back(line);
    if (nl == std::string::npos) break;
    start = nl + 1;
  }
  for (std::string& l : lines)
    if (f.width(l, px) > max_px) l = fit_text(f, l, px, max_px);
  return lines;
}

std::string fit_drawn_text(const Font& f, const std::string& logical, float px, int max_px) {
  if (!has_rtl(logical)) return fit_text(f, logical, px, max_px);  // nothing to reorder or join
  return visual_text(cut_logical(logical, static_cast<float>(max_px),
                                 [&](const std::string& c) { return static_cast<float>(f.width(visual_text(c), px)); }));
}

}  // namespace headmap
