// figure_sheet.h: several figures (heatmap_figure.h) on one page, one under the other, each
// after its own lines of text, under a title, notes and an optional bar chart; written as PNG
// (pixels) or SVG (each figure a nested <svg> as figure_svg draws it, every text as text).
// A figure has one token list; a sheet holds figures of different texts: the Corpus view's
// whole export (corpus_view.h), its offset profile's bars, then every example's map over its
// own line's tokens with the line itself.
//
// k = parts (figures), O = bars
#pragma once
#include <array>
#include <string>
#include <vector>

#include "app/common/heatmap_figure.h"
#include "app/common/raster.h"
#include "core/error.h"

namespace headmap {

struct FigureSheet {
  std::string title;
  std::vector<std::string> notes;  // under the title, each wrapped to the page
  std::vector<float> bars;         // (O) a bar chart under the notes, heights relative to the largest; empty: none
  std::string bars_caption;        // under the bars
  struct Part {
    std::vector<std::string> lines;  // above the figure, each wrapped to the page (a corpus example: its line)
    Figure figure;
  };
  std::vector<Part> parts;  // (k)
};

struct SheetLayout {
  int width = 0, height = 0;
  std::vector<FigureText> texts;             // every text outside the figures, wrapped to the page
  std::vector<std::array<int, 4>> bars;      // (O) each bar's x, y, width, height
  std::array<int, 4> bars_box{};             // the chart's frame: x, y, width, height (0 wide: none)
  std::vector<FigureLayout> figures;         // (k) each part's own layout (layout_figure)
  std::vector<int> figure_y;                 // (k) its top edge on the page (its left edge is 0)
};

// Lays the sheet out, measuring text with `font`: the page as wide as its widest figure (at
// least 720 pixels).
Result<SheetLayout> layout_sheet(const FigureSheet& s, const Font& font);
// The SVG document of a laid-out sheet.
std::string sheet_svg(const FigureSheet& s, const SheetLayout& layout);
// Each writes atomically, the size checked against the memory budget first.
Status write_sheet_png(const std::string& path, const FigureSheet& s);
Status write_sheet_svg(const std::string& path, const FigureSheet& s);

}  // namespace headmap
