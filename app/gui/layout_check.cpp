// layout_check.cpp: finds what a frame cut off (see layout_check.h).
#include "app/gui/layout_check.h"

#include <imgui.h>
#include <imgui_internal.h>

#include <algorithm>
#include <cstdio>
#include <map>

namespace headmap {

namespace {

// Anti-aliased edges reach about a pixel past a shape; a cut smaller than this is not one.
constexpr float kTolerance = 2.0f;
// A primitive this thin (with its anti-aliased fringe) is a line, not a glyph or a widget.
constexpr float kLineWidth = 4.0f;

std::string rect_text(const ImRect& r) {
  char buf[96];
  std::snprintf(buf, sizeof buf, "(%.0f, %.0f, %.0f, %.0f)", r.Min.x, r.Min.y, r.Max.x, r.Max.y);
  return buf;
}

// Which edges of `clip` the box `b` crosses by more than the tolerance: 1 left, 2 right,
// 4 top, 8 bottom.
int edges_crossed(const ImRect& b, const ImVec4& clip) {
  return (b.Min.x < clip.x - kTolerance ? 1 : 0) | (b.Max.x > clip.z + kTolerance ? 2 : 0) |
         (b.Min.y < clip.y - kTolerance ? 4 : 0) | (b.Max.y > clip.w + kTolerance ? 8 : 0);
}

std::string edges_name(int e) {
  std::string s;
  for (auto [bit, name] : {std::pair{1, "left"}, {2, "right"}, {4, "top"}, {8, "bottom"}})
    if (e & bit) s += (s.empty() ? "" : "+") + std::string(name);
  return s;
}

// A text editor's own window: its text scrolls with the cursor, so it may be wider.
bool is_editor(const char* window_name, const std::vector<std::string>& editors) {
  const std::string name = window_name;
  for (const std::string& e : editors)
    if (name.find("/" + e + "_") != std::string::npos) return true;
  return false;
}

}  // namespace

std::vector<std::string> find_clipped(const ImDrawData* dd, const std::vector<std::string>& editors) {
  std::vector<std::string> out;
  if (!dd) return out;

  // pass 1: every primitive against its clip rectangle
  // Per window and crossed edges: how many primitives, and the first one.
  struct Cut {
    int count = 0;
    ImRect first;
    ImVec4 clip;
  };
  std::map<std::pair<std::string, int>, Cut> cuts;
  for (int n = 0; n < dd->CmdListsCount; ++n) {
    const ImDrawList* dl = dd->CmdLists[n];
    const char* owner = dl->_OwnerName ? dl->_OwnerName : "?";
    const ImGuiWindow* w = ImGui::FindWindowByName(owner);
    if (is_editor(owner, editors)) continue;
    const bool scroll_x = w && w->ScrollbarX, scroll_y = w && w->ScrollbarY;
    for (const ImDrawCmd& cmd : dl->CmdBuffer) {
      if (cmd.UserCallback) continue;
      for (unsigned i = 0; i + 2 < cmd.ElemCount; i += 3) {
        ImRect b(ImVec2(FLT_MAX, FLT_MAX), ImVec2(-FLT_MAX, -FLT_MAX));
        bool visible = false;
        for (unsigned k = 0; k < 3; ++k) {
          const ImDrawVert& v = dl->VtxBuffer[cmd.VtxOffset + dl->IdxBuffer[cmd.IdxOffset + i + k]];
          b.Add(v.pos);
          visible |= (v.col >> IM_COL32_A_SHIFT & 0xFF) != 0;
        }
        if (!visible || b.GetWidth() <= 0 || b.GetHeight() <= 0) continue;  // AA fringe, degenerate
        // Lines (separators, grid lines, borders) run edge to edge by design: not content.
        if (std::min(b.GetWidth(), b.GetHeight()) <= kLineWidth) continue;
        int e = edges_crossed(b, cmd.ClipRect);
        if (scroll_y) e &= ~(4 | 8);  // reachable by scrolling
        if (scroll_x) e &= ~(1 | 2);
        if (!e) continue;
        Cut& c = cuts[{owner, e}];
        if (c.count++ == 0) {
          c.first = b;
          c.clip = cmd.ClipRect;
        }
      }
    }
  }
  for (const auto& [key, c] : cuts) {
    char buf[160];
    std::snprintf(buf, sizeof buf, ": %d primitive%s cut at the %s edge of (%.0f, %.0f, %.0f, %.0f), e.g. ", c.count,
                  c.count == 1 ? "" : "s", edges_name(key.second).c_str(), c.clip.x, c.clip.y, c.clip.z, c.clip.w);
    out.push_back(key.first + buf + rect_text(c.first));
  }

  // pass 2: every window against its parent (or the screen), and its content against its width
  const ImGuiContext& g = *GImGui;
  const ImGuiViewport* vp = ImGui::GetMainViewport();
  const ImRect screen(vp->Pos, ImVec2(vp->Pos.x + vp->Size.x, vp->Pos.y + vp->Size.y));
  for (const ImGuiWindow* w : g.Windows) {
    if (!w->WasActive || w->Hidden || is_editor(w->Name, editors)) continue;
    const ImRect r = w->Rect();
    const ImGuiWindow* p = (w->Flags & ImGuiWindowFlags_ChildWindow) ? w->ParentWindow : nullptr;
    const ImRect outer = p ? p->InnerRect : screen;
    const bool parent_scrolls_y = p && p->ScrollbarY;
    int e = (r.Min.x < outer.Min.x - kTolerance ? 1 : 0) | (r.Max.x > outer.Max.x + kTolerance ? 2 : 0) |
            (!parent_scrolls_y && r.Min.y < outer.Min.y - kTolerance ? 4 : 0) |
            (!parent_scrolls_y && r.Max.y > outer.Max.y + kTolerance ? 8 : 0);
    if (e) out.push_back(std::string(w->Name) + ": the window " + rect_text(r) + " crosses the " + edges_name(e) + " edge of " +
                         (p ? std::string(p->Name) + "'s visible region " : std::string("the screen ")) + rect_text(outer));
    // Content wider than the visible part, with no scrollbar to reach it.
    const float visible_w = w->InnerRect.GetWidth() - 2 * w->WindowPadding.x;
    if (!w->ScrollbarX && !(w->Flags & ImGuiWindowFlags_AlwaysAutoResize) && w->ContentSize.x > visible_w + kTolerance) {
      char buf[128];
      std::snprintf(buf, sizeof buf, ": content %.0f px wide in %.0f px visible", w->ContentSize.x, visible_w);
      out.push_back(w->Name + std::string(buf));
    }
  }
  return out;
}

}  // namespace headmap
