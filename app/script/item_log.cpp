// item_log.cpp: see item_log.h. The three wrappers below are what the linker's
// --wrap=SYMBOL routes the widgets' calls to; __real_SYMBOL is then Dear ImGui's own
// function. The __real_ declarations are weak, so a link without --wrap still succeeds
// (the wrappers are then never called, and hooked() says so).
#include "app/script/item_log.h"

#include <imgui.h>
#include <imgui_internal.h>

#include <unordered_map>

namespace headmap::item_log {
namespace {
bool g_on = false, g_hooked = false;
int g_frame = -1;                                   // the ImGui frame the lists belong to
std::vector<Item> g_items;                          // (items of frame g_frame)
std::unordered_map<ImGuiID, std::string> g_labels;  // ID -> label, from this frame's GetID calls
std::unordered_map<ImGuiID, size_t> g_index;        // ID -> its newest entry in g_items

// A new frame (or a frame's second pass, which starts a new ImGui frame): start afresh.
void sync_frame() {
  const int frame = GImGui ? GImGui->FrameCount : -1;
  if (frame == g_frame) return;
  g_frame = frame;
  g_items.clear();
  g_labels.clear();
  g_index.clear();
}
}  // namespace

void enable(bool on) { g_on = on; }
bool hooked() { return g_hooked; }
const std::vector<Item>& items() { return g_items; }

// ImGui::ItemAdd has been called with these arguments and returned `shown`.
static void record(const ImRect& bb, ImGuiID id, const ImRect* nav_bb, ImGuiItemFlags extra, bool shown) {
  g_hooked = true;
  if (!g_on || id == 0 || !GImGui || !GImGui->CurrentWindow) return;
  sync_frame();
  const ImGuiContext& g = *GImGui;
  const ImGuiWindow* w = g.CurrentWindow;
  Item it;
  it.id = id;
  if (auto l = g_labels.find(id); l != g_labels.end()) it.label = l->second;
  it.window = w->Name ? w->Name : "";
  it.window_id = w->ID;
  it.root_window = w->RootWindow && w->RootWindow->Name ? w->RootWindow->Name : it.window;
  it.window_flags = w->Flags;
  it.root_flags = w->RootWindow ? w->RootWindow->Flags : w->Flags;
  it.x0 = bb.Min.x, it.y0 = bb.Min.y, it.x1 = bb.Max.x, it.y1 = bb.Max.y;
  it.clip_x0 = w->ClipRect.Min.x, it.clip_y0 = w->ClipRect.Min.y, it.clip_x1 = w->ClipRect.Max.x, it.clip_y1 = w->ClipRect.Max.y;
  const ImGuiItemFlags flags = g.CurrentItemFlags | extra;
  it.disabled = (flags & ImGuiItemFlags_Disabled) != 0;
  it.inputable = (flags & ImGuiItemFlags_Inputable) != 0;
  const ImRect& nav = nav_bb ? *nav_bb : bb;
  it.n0x = nav.Min.x, it.n0y = nav.Min.y, it.n1x = nav.Max.x, it.n1y = nav.Max.y;
  it.clipped = !shown;
  it.menu_bar = w->DC.NavLayerCurrent == ImGuiNavLayer_Menu;
  if (const ImGuiTabBar* bar = g.CurrentTabBar)
    for (const ImGuiTabItem& t : bar->Tabs) it.tab |= t.ID == id;
  g_index[id] = g_items.size();
  g_items.push_back(std::move(it));
}

// The app asked about a mouse button's click with the last item drawn being g.LastItemData.
static void asked(int button) {
  if (!g_on || button != ImGuiMouseButton_Right || !GImGui) return;
  sync_frame();
  if (auto i = g_index.find(GImGui->LastItemData.ID); i != g_index.end() && GImGui->LastItemData.ID != 0) g_items[i->second].right_button = true;
}

// ImGuiWindow::GetID(str, str_end) returned id. Menu items and menus push their label as an
// ID (PushID) and then draw an unlabelled Selectable: an empty label takes the pushed one.
static void label(const ImGuiWindow* w, ImGuiID id, const char* str, const char* str_end) {
  if (!g_on || !str) return;
  sync_frame();
  std::string l = str_end ? std::string(str, str_end) : std::string(str);
  if (l.empty() && w && !w->IDStack.empty())
    if (auto p = g_labels.find(w->IDStack.back()); p != g_labels.end()) l = p->second;
  g_labels[id] = std::move(l);
}

}  // namespace headmap::item_log

// bool ImGui::ItemAdd(const ImRect& bb, ImGuiID id, const ImRect* nav_bb, ImGuiItemFlags extra_flags)
// ImGuiID ImGuiWindow::GetID(const char* str, const char* str_end)   (this: the first argument)
// void ImGui::PushID(const char* str_id)
// bool ImGui::IsItemClicked(ImGuiMouseButton), bool ImGui::IsMouseClicked(ImGuiMouseButton, bool repeat)
extern "C" {
bool __real__ZN5ImGui13IsItemClickedEi(int button) __attribute__((weak));
bool __wrap__ZN5ImGui13IsItemClickedEi(int button) {
  headmap::item_log::asked(button);
  return __real__ZN5ImGui13IsItemClickedEi(button);
}
bool __real__ZN5ImGui14IsMouseClickedEib(int button, bool repeat) __attribute__((weak));
bool __wrap__ZN5ImGui14IsMouseClickedEib(int button, bool repeat) {
  headmap::item_log::asked(button);
  return __real__ZN5ImGui14IsMouseClickedEib(button, repeat);
}
void __real__ZN5ImGui6PushIDEPKc(const char* str_id) __attribute__((weak));
void __wrap__ZN5ImGui6PushIDEPKc(const char* str_id) {
  __real__ZN5ImGui6PushIDEPKc(str_id);
  if (const ImGuiWindow* w = GImGui ? GImGui->CurrentWindow : nullptr; w && !w->IDStack.empty())
    headmap::item_log::label(nullptr, w->IDStack.back(), str_id, nullptr);
}

bool __real__ZN5ImGui7ItemAddERK6ImRectjPS1_i(const ImRect& bb, ImGuiID id, const ImRect* nav_bb, ImGuiItemFlags extra) __attribute__((weak));
ImGuiID __real__ZN11ImGuiWindow5GetIDEPKcS1_(ImGuiWindow* self, const char* str, const char* str_end) __attribute__((weak));

bool __wrap__ZN5ImGui7ItemAddERK6ImRectjPS1_i(const ImRect& bb, ImGuiID id, const ImRect* nav_bb, ImGuiItemFlags extra) {
  const bool shown = __real__ZN5ImGui7ItemAddERK6ImRectjPS1_i(bb, id, nav_bb, extra);
  headmap::item_log::record(bb, id, nav_bb, extra, shown);
  return shown;
}

ImGuiID __wrap__ZN11ImGuiWindow5GetIDEPKcS1_(ImGuiWindow* self, const char* str, const char* str_end) {
  const ImGuiID id = __real__ZN11ImGuiWindow5GetIDEPKcS1_(self, str, str_end);
  headmap::item_log::label(self, id, str, str_end);
  return id;
}
}
