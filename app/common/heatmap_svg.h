// heatmap_svg.h: a figure (heatmap_figure.h) as SVG: vector cells, text as text.
//
// The document, for a person or a script to read: each map is a <g class="map"> holding
// one grey <rect class="masked"> under the whole map when the mask hides any cell, then
// <g class="cells"> with one <rect> per visible cell, filled with its colour; each token
// label is one <text class="row-label"> or <text class="col-label">; the titles are
// <text class="title">, "subtitle" and "map-title"; the colour bar is <g class="colour-bar">
// (a gradient of the colormap and its tick values). Text is XML-escaped UTF-8.
#pragma once
#include <cstdint>
#include <string>

#include "app/common/heatmap_figure.h"
#include "core/error.h"

namespace headmap {

// The SVG document of a figure laid out by layout_figure.
// gradient_id: the colour bar's gradient's id, unique in a document holding several figures.
std::string figure_svg(const Figure& f, const FigureLayout& layout, const std::string& gradient_id = "colour-scale");
// Refuses (with `what`, its cell count and `lower`, what to do) an SVG of this many map cells
// that the memory budget cannot hold: the one estimate every SVG export checks first.
Status check_svg_memory(uint64_t cells, const std::string& what, const std::string& lower);
// Lays the figure out and writes its SVG atomically (the size checked against the memory budget first).
Status write_figure_svg(const std::string& path, const Figure& f);
// Text for XML character data and attributes: & < > " ' escaped, invalid UTF-8 and the
// control characters XML 1.0 forbids replaced by U+FFFD.
std::string xml_escape(const std::string& text);

}  // namespace headmap
