// figure_sheet.cpp: see figure_sheet.h.
//
// k = parts (figures), O = bars
#include "app/common/figure_sheet.h"

#include <algorithm>
#include <cstdio>
#include <new>

#include "app/common/colormap.h"
#include "app/common/heatmap_png.h"
#include "app/common/heatmap_svg.h"
#include "core/io/file_io.h"
#include "core/memory_budget.h"

namespace headmap {

namespace {
constexpr int kMargin = 16, kMinWidth = 720, kBarsHeight = 90;
constexpr float kTitlePx = 17, kTextPx = 13;
constexpr Rgb kBarInk{70, 110, 170}, kFrameInk{200, 200, 205};

}  // namespace

Result<SheetLayout> layout_sheet(const FigureSheet& s, const Font& font) {
  SheetLayout L;
  for (const FigureSheet::Part& p : s.parts) {
    Result<FigureLayout> f = layout_figure(p.figure, font);
    if (!f) return f.error();
    L.width = std::max(L.width, f->width);
    L.figures.push_back(std::move(f).value());
  }
  L.width = std::max(L.width, kMinWidth);
  const int text_w = L.width - 2 * kMargin;
  float y = kMargin;
  auto add_text = [&](const std::string& text, float px, FigureText::Role role) {
    for (std::string& line : wrap_text(font, text, px, text_w)) {
      y += px * 1.35f;
      L.texts.push_back(FigureText{std::move(line), static_cast<float>(kMargin), y, px, FigureText::Start, false, role});
    }
  };
  add_text(s.title, kTitlePx, FigureText::Title);
  for (const std::string& n : s.notes) add_text(n, kTextPx, FigureText::Subtitle);
  if (!s.bars.empty()) {
    y += 8;
    const int O = static_cast<int>(s.bars.size()), x0 = kMargin, y0 = static_cast<int>(y);
    L.bars_box = {x0, y0, text_w, kBarsHeight};
    float peak = 0;
    for (float v : s.bars) peak = std::max(peak, v);
    const float bw = static_cast<float>(text_w) / O;
    for (int i = 0; i < O; ++i) {
      const int h = peak > 0 ? static_cast<int>(std::max(0.0f, s.bars[static_cast<size_t>(i)]) / peak * (kBarsHeight - 2)) : 0;
      const int bx = x0 + static_cast<int>(i * bw), bx1 = x0 + static_cast<int>((i + 1) * bw);
      L.bars.push_back({bx, y0 + kBarsHeight - h, std::max(1, bx1 - bx - (bw >= 4 ? 1 : 0)), h});
    }
    y += kBarsHeight;
    if (!s.bars_caption.empty()) add_text(s.bars_caption, kTextPx, FigureText::Caption);
  }
  for (size_t i = 0; i < s.parts.size(); ++i) {
    y += 10;
    for (const std::string& l : s.parts[i].lines) add_text(l, kTextPx, FigureText::MapTitle);
    y += 4;
    L.figure_y.push_back(static_cast<int>(y));
    y += static_cast<float>(L.figures[i].height);
  }
  L.height = static_cast<int>(y) + kMargin;
  return L;
}

std::string sheet_svg(const FigureSheet& s, const SheetLayout& L) {
  std::string o = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  o += "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"" + std::to_string(L.width) + "\" height=\"" + std::to_string(L.height) +
       "\" viewBox=\"0 0 " + std::to_string(L.width) + " " + std::to_string(L.height) + "\" font-family=\"DejaVu Sans, Verdana, sans-serif\">\n";
  o += "<title>" + xml_escape(s.title) + "</title>\n";
  char rgb[8];
  auto hex = [&](Rgb c) {
    std::snprintf(rgb, sizeof rgb, "#%02x%02x%02x", c.r, c.g, c.b);
    return std::string(rgb);
  };
  o += "<rect class=\"paper\" x=\"0\" y=\"0\" width=\"" + std::to_string(L.width) + "\" height=\"" + std::to_string(L.height) + "\" fill=\"" + hex(kFigureBg) + "\"/>\n";
  if (!L.bars.empty()) {
    const auto& b = L.bars_box;
    o += "<g class=\"bars\">\n<rect x=\"" + std::to_string(b[0]) + "\" y=\"" + std::to_string(b[1]) + "\" width=\"" + std::to_string(b[2]) + "\" height=\"" +
         std::to_string(b[3]) + "\" fill=\"none\" stroke=\"" + hex(kFrameInk) + "\"/>\n";
    for (const auto& r : L.bars)
      o += "<rect x=\"" + std::to_string(r[0]) + "\" y=\"" + std::to_string(r[1]) + "\" width=\"" + std::to_string(r[2]) + "\" height=\"" +
           std::to_string(r[3]) + "\" fill=\"" + hex(kBarInk) + "\"/>\n";
    o += "</g>\n";
  }
  for (const FigureText& t : L.texts) {
    char head[160];
    std::snprintf(head, sizeof head, "<text class=\"sheet-%s\" font-size=\"%.6g\" x=\"%.6g\" y=\"%.6g\" fill=\"%s\" xml:space=\"preserve\">",
                  t.role == FigureText::Title ? "title" : t.role == FigureText::MapTitle ? "part" : "note", t.px, t.x, t.y, hex(figure_text_rgb(t.role)).c_str());
    o += head + xml_escape(t.text) + "</text>\n";
  }
  for (size_t i = 0; i < s.parts.size(); ++i) {  // each figure as its own nested document, moved into place
    std::string f = figure_svg(s.parts[i].figure, L.figures[i], "colour-scale-" + std::to_string(i));
    f.erase(0, f.find('\n') + 1);  // the XML declaration
    const std::string open = "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\"";
    if (f.compare(0, open.size(), open) == 0) f.replace(0, open.size(), "<svg class=\"part\" x=\"0\" y=\"" + std::to_string(L.figure_y[i]) + "\"");
    o += f;
  }
  o += "</svg>\n";
  return o;
}

namespace {
Result<SheetLayout> measured(const FigureSheet& s, Font& font) {
  if (Status st = load_figure_font(font); !st) return st.error();
  return layout_sheet(s, font);
}
}  // namespace

Status write_sheet_png(const std::string& path, const FigureSheet& s) {
  Font font;
  Result<SheetLayout> lay = measured(s, font);
  if (!lay) return lay.error();
  const SheetLayout& L = *lay;
  const uint64_t rgb_bytes = static_cast<uint64_t>(L.width) * static_cast<uint64_t>(L.height) * 3;
  const std::string what = "The PNG sheet (" + std::to_string(L.width) + " x " + std::to_string(L.height) + " pixels)";
  if (rgb_bytes >= (uint64_t(1) << 31) - 1) return Error{ErrorKind::InvalidArgument, what + " is beyond what a PNG encoder holds: show fewer examples, or use the SVG."};
  if (Status st = check_memory(4 * rgb_bytes, what, "show fewer examples"); !st) return st;
  Canvas c(L.width, L.height, kFigureBg);
  if (!L.bars.empty()) {
    const auto& b = L.bars_box;
    c.fill(b[0], b[1], b[0] + b[2], b[1] + 1, kFrameInk);
    c.fill(b[0], b[1] + b[3] - 1, b[0] + b[2], b[1] + b[3], kFrameInk);
    for (const auto& r : L.bars) c.fill(r[0], r[1], r[0] + r[2], r[1] + r[3], kBarInk);
  }
  for (const FigureText& t : L.texts) font.draw(c, static_cast<int>(t.x), static_cast<int>(t.y), t.text, t.px, figure_text_rgb(t.role));
  for (size_t i = 0; i < s.parts.size(); ++i) {
    const Canvas f = figure_canvas(s.parts[i].figure, L.figures[i], font);
    c.draw_scaled(f, 0, L.figure_y[i], f.w, f.h);  // the same size: a copy
  }
  return c.save_png(path);
}

Status write_sheet_svg(const std::string& path, const FigureSheet& s) {
  Font font;
  Result<SheetLayout> lay = measured(s, font);
  if (!lay) return lay.error();
  uint64_t cells = 0;
  for (const FigureSheet::Part& p : s.parts) cells += static_cast<uint64_t>(p.figure.len()) * static_cast<uint64_t>(p.figure.len()) * p.figure.maps.size();
  if (Status st = check_svg_memory(cells, "The SVG sheet", "show fewer examples"); !st) return st;
  try {
    return write_file_atomic(path, sheet_svg(s, *lay));
  } catch (const std::bad_alloc&) {
    return out_of_memory("writing " + path);
  }
}

}  // namespace headmap
