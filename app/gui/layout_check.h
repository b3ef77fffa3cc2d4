// layout_check.h: what a frame cut off, for the GUI tests (--report): at a projector's
// 1024x768 and a large font, nothing may be clipped.
//
// It reads what Dear ImGui finished drawing, so every widget counts, ours and Dear ImGui's:
// - a primitive (a glyph, a frame, a map) drawn partly or wholly outside its clip rectangle
//   was cut off, unless only vertically inside a window that scrolls vertically (the user
//   can scroll to it);
// - a window whose content is wider than its visible part hides the rest (Dear ImGui culls
//   items that are wholly outside, so they leave no primitive to find);
// - a child window must lie inside its parent's visible region, and every window inside the
//   screen.
#pragma once
#include <string>
#include <vector>

struct ImDrawData;

namespace headmap {

// One line per problem, naming the window and where: "right: 14 primitives cut at the
// right edge (x 1012 > 1004), e.g. (990, 300, 1030, 318)". Empty when nothing is cut off.
// Call after ImGui::Render(), with its draw data. `editors`: the labels of multi-line text
// boxes ("##text"), whose text scrolls with the cursor and is exempt. Lines (at most 4 px
// thick: separators, grid lines, borders) run edge to edge by design and are not counted.
std::vector<std::string> find_clipped(const ImDrawData* dd, const std::vector<std::string>& editors = {});

}  // namespace headmap
