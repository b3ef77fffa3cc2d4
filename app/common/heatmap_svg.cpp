// heatmap_svg.cpp: the SVG writer of figures.
#include "app/common/heatmap_svg.h"

#include <cstdio>

#include "app/common/bidi.h"
#include "core/io/file_io.h"
#include "core/memory_budget.h"
#include "core/text/utf8.h"

namespace headmap {

std::string xml_escape(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (char32_t cp : decode_utf8(text).codepoints) {  // invalid bytes are U+FFFD already
    switch (cp) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      default:
        // XML 1.0 allows tab, newline and return below U+0020, and nothing of U+FFFE, U+FFFF or the surrogates.
        if ((cp < 0x20 && cp != '\t' && cp != '\n' && cp != '\r') || cp == 0xFFFE || cp == 0xFFFF || (cp >= 0xD800 && cp <= 0xDFFF))
          cp = 0xFFFD;
        append_utf8(out, cp);
    }
  }
  return out;
}

namespace {
std::string hex(Rgb c) {
  char b[8];
  std::snprintf(b, sizeof b, "#%02x%02x%02x", c.r, c.g, c.b);
  return b;
}
std::string num(float v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.6g", v);
  return b;
}
const char* role_class(FigureText::Role r) {
  switch (r) {
    case FigureText::Title: return "title";
    case FigureText::Subtitle: return "subtitle";
    case FigureText::MapTitle: return "map-title";
    case FigureText::RowLabel: return "row-label";
    case FigureText::ColumnLabel: return "col-label";
    case FigureText::Tick: return "tick";
    case FigureText::Caption: return "caption";
    case FigureText::Position: return "position";
  }
  return "text";
}
}  // namespace

std::string figure_svg(const Figure& f, const FigureLayout& L, const std::string& gradient_id) {
  const int len = f.len();
  std::string o;
  o += "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  o += "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"" + std::to_string(L.width) + "\" height=\"" +
       std::to_string(L.height) + "\" viewBox=\"0 0 " + std::to_string(L.width) + " " + std::to_string(L.height) +
       "\" font-family=\"DejaVu Sans, Verdana, sans-serif\">\n";
  o += "<title>" + xml_escape(f.title) + "</title>\n";
  o += "<rect class=\"paper\" x=\"0\" y=\"0\" width=\"" + std::to_string(L.width) + "\" height=\"" + std::to_string(L.height) + "\" fill=\"" +
       hex(kFigureBg) + "\"/>\n";
  const std::string cell = std::to_string(L.cell);
  bool any_hidden = false;
  for (int t = 0; t < len && !any_hidden; ++t)
    for (int s = 0; s < len && !any_hidden; ++s) any_hidden = !mask_visible(f.mask, t, s, len);
  for (size_t i = 0; i < f.maps.size(); ++i) {
    const int x0 = L.origins[i][0], y0 = L.origins[i][1];
    o += "<g class=\"map\" shape-rendering=\"crispEdges\">\n";
    if (any_hidden)
      o += "<rect class=\"masked\" x=\"" + std::to_string(x0) + "\" y=\"" + std::to_string(y0) + "\" width=\"" + std::to_string(L.map) +
           "\" height=\"" + std::to_string(L.map) + "\" fill=\"" + hex(to_rgb8(kMaskedRgb)) + "\"/>\n";
    o += "<g class=\"cells\">\n";
    for (int t = 0; t < len; ++t)
      for (int s = 0; s < len; ++s) {
        if (!mask_visible(f.mask, t, s, len)) continue;
        if (window_hatch(f.mask, f.window, t, s, len) >= 0) {  // outside the sliding window: hatched
          o += "<rect class=\"window\" x=\"" + std::to_string(x0 + s * L.cell) + "\" y=\"" + std::to_string(y0 + t * L.cell) + "\" width=\"" +
               cell + "\" height=\"" + cell + "\" fill=\"" + hex(figure_cell_rgb(f, f.maps[i], t, s)) + "\"/>\n";
          continue;
        }
        o += "<rect x=\"" + std::to_string(x0 + s * L.cell) + "\" y=\"" + std::to_string(y0 + t * L.cell) + "\" width=\"" + cell +
             "\" height=\"" + cell + "\" fill=\"" + hex(figure_cell_rgb(f, f.maps[i], t, s)) + "\"/>\n";
      }
    o += "</g>\n</g>\n";
  }
  // The colour bar: the colormap as a gradient (33 stops), low values on the left.
  o += "<g class=\"colour-bar\">\n<defs><linearGradient id=\"" + gradient_id + "\" x1=\"0\" y1=\"0\" x2=\"1\" y2=\"0\">\n";
  for (int i = 0; i <= 32; ++i)
    o += "<stop offset=\"" + num(i / 32.0f) + "\" stop-color=\"" + hex(to_rgb8(colormap_rgb(f.colormap, i / 32.0f))) + "\"/>\n";
  o += "</linearGradient></defs>\n<rect x=\"" + std::to_string(L.bar_x) + "\" y=\"" + std::to_string(L.bar_y) + "\" width=\"" +
       std::to_string(L.bar_w) + "\" height=\"" + std::to_string(L.bar_h) + "\" fill=\"url(#" + gradient_id + ")\"/>\n</g>\n";
  for (const FigureText& t : L.texts) {
    const char* anchor = t.anchor == FigureText::Start ? "start" : t.anchor == FigureText::Middle ? "middle" : "end";
    o += "<text class=\"";
    o += role_class(t.role);
    o += "\" font-size=\"" + num(t.px * L.em_per_px) + "\" fill=\"" + hex(figure_text_rgb(t.role)) + "\" text-anchor=\"" + anchor + "\"";
    if (t.vertical) o += " transform=\"translate(" + num(t.x) + " " + num(t.y) + ") rotate(-90)\" x=\"0\" y=\"0\"";
    else o += " x=\"" + num(t.x) + "\" y=\"" + num(t.y) + "\"";
    // Labels are in visual order already (visual_text): the viewer must not reorder them again.
    if (has_rtl(t.text)) o += " direction=\"ltr\" unicode-bidi=\"bidi-override\"";
    o += " xml:space=\"preserve\">" + xml_escape(t.text) + "</text>\n";
  }
  o += "</svg>\n";
  return o;
}

Status check_svg_memory(uint64_t cells, const std::string& what, const std::string& lower) {
  // About 80 bytes per cell rect, twice (the document and the write), and 1 MiB of the rest.
  return check_memory(mul_sat(cells, 160) + (uint64_t(1) << 20), what + " (" + std::to_string(cells) + " cells)", lower);
}

Status write_figure_svg(const std::string& path, const Figure& f) {
  Font font;
  if (Status s = load_figure_font(font); !s) return s;
  Result<FigureLayout> lay = layout_figure(f, font);
  if (!lay) return lay.error();
  const uint64_t cells = static_cast<uint64_t>(f.len()) * static_cast<uint64_t>(f.len()) * f.maps.size();
  if (Status s = check_svg_memory(cells, "The SVG figure", "use a shorter sentence, or the PNG"); !s) return s;
  try {
    return write_file_atomic(path, figure_svg(f, *lay));
  } catch (const std::bad_alloc&) {
    return out_of_memory("writing " + path);
  }
}

}  // namespace headmap
