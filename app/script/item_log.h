// item_log.h: every item Dear ImGui's widgets submitted in the last frame, gathered where
// Dear ImGui's own test engine gathers them: ImGui::ItemAdd, which every interactive widget
// calls (buttons, checkboxes, sliders, text fields, combos and their entries, menus and
// menu items, tabs, tree nodes and collapsing headers, selectables, a window's title-bar
// buttons). Debian's libimgui.a is built without the test engine's hooks, but ItemAdd,
// ImGuiWindow::GetID and ImGui::PushID(const char*) are defined in imgui.o and called from
// imgui_widgets.o and imgui_tables.o, so the GNU linker's --wrap routes those calls through
// item_log.cpp (app/CMakeLists.txt links the headmap executable so); GetID, and PushID for
// menus and menu items, give an item its label. ImGui::IsItemClicked and ImGui::IsMouseClicked
// are wrapped too: a question about the right button, asked with an item the last one drawn,
// marks that item as having a right-click action (a context switch, an eraser).
//
// A test observer, not application state: nothing records until the crawler (crawl.h)
// enables it, and the panels never read it. Without the --wrap flags the program still
// links and runs; hooked() then stays false and the crawler refuses to run (it fails).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace headmap::item_log {

struct Item {
  uint32_t id = 0;           // Dear ImGui's ID of the item
  std::string label;         // as given to the widget, "##" part included; "" when its ID came from a number or pointer
  std::string window;        // the window it was drawn in (Dear ImGui's name: "headmap/center_1A2B", "##Combo_00", "##Menu_00", "Problem")
  uint32_t window_id = 0;
  std::string root_window;   // the window's root (a child's top-level window, or the popup itself)
  int window_flags = 0;      // ImGuiWindowFlags of its window (popup, menu, modal, child...)
  int root_flags = 0;        // ...and of its root window
  float x0 = 0, y0 = 0, x1 = 0, y1 = 0;  // the item's rect, window pixels
  float n0x = 0, n0y = 0, n1x = 0, n1y = 0;  // the part that takes the pointer: a slider's, combo's or text field's frame, else the rect
  float clip_x0 = 0, clip_y0 = 0, clip_x1 = 0, clip_y1 = 0;  // its window's clip rect: the part of it on screen
  bool disabled = false;     // inside BeginDisabled, or a disabled entry
  bool inputable = false;    // takes typed input (ImGuiItemFlags_Inputable): text fields, sliders and drags
  bool clipped = false;      // ItemAdd clipped it (scrolled out of its window)
  bool tab = false;          // a tab of a tab bar
  bool menu_bar = false;     // in its window's menu bar (File, View, Help)
  bool right_button = false; // the app asked whether the right button clicked it (IsItemClicked(1), or
                             // IsMouseClicked(1) with it the last item): it has a right-click action
};

// Starts (or stops) recording. Recording costs a little per widget; off by default.
void enable(bool on);
// True once an item was recorded: the --wrap flags are in effect.
bool hooked();
// The items of the newest frame (its last pass, when a frame draws its panels twice), in the
// order they were submitted. Read after the frame's swap.
const std::vector<Item>& items();

}  // namespace headmap::item_log
