// commands.cpp: the command table, and the menus and shortcuts drawn from it.
#include "app/gui/commands.h"

#include <imgui.h>

#include <GLFW/glfw3.h>

#include <algorithm>
#include <cstring>

#include "app/gui/app.h"
#include "app/gui/ui_widgets.h"

namespace headmap {

const std::vector<Command>& commands() {
  static const std::vector<Command> table = {
      // menu    label                          shortcut   keys                                ctrl   repeat free   sep
      {"File", "Open view...", "Ctrl+O", {GLFW_KEY_O, 0}, true, false, false, false, [](App& a) { a.open_dialog(Dialog::OpenView); }},
      {"File", "Save view...", "Ctrl+S", {GLFW_KEY_S, 0}, true, false, false, false, [](App& a) { a.open_dialog(Dialog::SaveView); }},
      {"File", "Save view as lesson step...", nullptr, {0, 0}, false, false, false, false,
       [](App& a) { a.open_dialog(Dialog::SaveLessonStep); }},
      {"File", "Export lesson as PNGs...", nullptr, {0, 0}, false, false, false, false,
       [](App& a) { a.open_dialog(Dialog::ExportLesson); }, [](const App& a) { return a.state.lesson.open(); }},
      {"File", "Open model...", nullptr, {0, 0}, false, false, false, true, [](App& a) { a.open_dialog(Dialog::OpenModel); }},
      {"File", "Close model", nullptr, {0, 0}, false, false, false, false,
       [](App& a) {
         const std::string closed = a.state.pretrained ? a.state.pretrained_dir : a.state.checkpoint;
         reset_to_launch_state(a.state);
         a.state.status_lines.push_back("Closed " + closed + ": back to the shipped model, as at launch.");
       },
       [](const App& a) { return a.state.pretrained != nullptr || !a.state.checkpoint.empty(); }},
      {"File", "Open checkpoint...", nullptr, {0, 0}, false, false, false, false,
       [](App& a) { a.open_dialog(Dialog::OpenCheckpoint); }},
      {"File", "Save trained model...", nullptr, {0, 0}, false, false, false, false,
       [](App& a) { a.open_dialog(Dialog::SaveCheckpoint); },
       [](const App& a) { return a.state.session && !a.state.training.running; }},
      {"File", "Export heads as PNG...", "Ctrl+E", {GLFW_KEY_E, 0}, true, false, false, true,
       [](App& a) { a.open_dialog(Dialog::ExportHeadsPng); }},
      {"File", "Export heads as SVG...", nullptr, {0, 0}, false, false, false, false,
       [](App& a) { a.open_dialog(Dialog::ExportHeadsSvg); }},
      // The head under the mouse (a key pressed over the heads grid), else the selected one.
      {"File", "Export this head as PNG...", "Ctrl+H", {GLFW_KEY_H, 0}, true, false, false, false,
       [](App& a) { a.open_dialog(Dialog::ExportHeadPng); }},
      {"File", "Export this head as SVG...", "Ctrl+Shift+H", {GLFW_KEY_H, 0}, true, false, false, false,
       [](App& a) { a.open_dialog(Dialog::ExportHeadSvg); }, nullptr, nullptr, true},
      {"File", "Export window as PNG...", "Ctrl+Shift+E", {GLFW_KEY_E, 0}, true, false, false, false,
       [](App& a) { a.open_dialog(Dialog::ExportWindowPng); }, nullptr, nullptr, true},
      {"File", "Export attention as .npy...", nullptr, {0, 0}, false, false, false, false,
       [](App& a) { a.open_dialog(Dialog::ExportNpy); }},
      {"File", "Export attention as JSON...", nullptr, {0, 0}, false, false, false, false,
       [](App& a) { a.open_dialog(Dialog::ExportJson); }},
      {"File", "Quit", "Ctrl+Q", {GLFW_KEY_Q, 0}, true, false, false, true, [](App& a) { a.quit(); }},

      // View: after the colormaps and colour scales, which draw_menu lists from their enums.
      {"View", "Log scale", nullptr, {0, 0}, false, false, false, false,
       [](App& a) { a.state.view.log_scale = !a.state.view.log_scale; }, nullptr, [](const App& a) { return a.state.view.log_scale; }},
      {"View", "Value-weighted maps", nullptr, {0, 0}, false, false, false, false,
       [](App& a) { a.state.view.value_weighted = !a.state.view.value_weighted; }, nullptr,
       [](const App& a) { return a.state.view.value_weighted; }},
      // Faster and approximate, off unless chosen: labelled above the heads while on (panel_heads.cpp).
      {"View", "BF16 products (faster, approximate)", nullptr, {0, 0}, false, false, false, false,
       [](App& a) { a.state.view.bf16_products = !a.state.view.bf16_products; }, nullptr,
       [](const App& a) { return a.state.view.bf16_products; }},
      {"View", "8-bit products (GGUF Q4_K, Q5_K, Q6_K, Q8_0: faster, approximate)", nullptr, {0, 0}, false, false, false, false,
       [](App& a) { a.state.view.int8_products = !a.state.view.int8_products; }, nullptr,
       [](const App& a) { return a.state.view.int8_products; }},
      {"View", "Token grid lines", nullptr, {0, 0}, false, false, false, false,
       [](App& a) { a.state.view.grid_lines = !a.state.view.grid_lines; }, nullptr,
       [](const App& a) { return a.state.view.grid_lines; }},
      {"View", "Light theme", nullptr, {0, 0}, false, false, false, true, [](App& a) { a.toggle_light_theme(); }, nullptr,
       [](const App& a) { return a.prefs.light_theme; }},
      {"View", "Larger text", "Ctrl++", {GLFW_KEY_EQUAL, GLFW_KEY_KP_ADD}, true, true, false, false, [](App& a) { a.step_font(+1); }},
      {"View", "Smaller text", "Ctrl+-", {GLFW_KEY_MINUS, GLFW_KEY_KP_SUBTRACT}, true, true, false, false,
       [](App& a) { a.step_font(-1); }},
      {nullptr, "Normal text", "Ctrl+0", {GLFW_KEY_0, GLFW_KEY_KP_0}, true, true, false, false, [](App& a) { a.step_font(0); }},
      {"View", "Big heads (the selected one, then two, then all)", "B", {GLFW_KEY_B, 0}, false, false, true, true,
       [](App& a) { a.state.view.big_heads = (a.state.view.big_heads + 1) % 3; }, nullptr,
       [](const App& a) { return a.state.view.big_heads > 0; }},
      {"View", "Full screen", "F11", {GLFW_KEY_F11, 0}, false, false, false, false, [](App& a) { a.toggle_fullscreen(); }, nullptr,
       [](const App& a) { return a.state.fullscreen; }},

      {"Help", "Keyboard shortcuts", nullptr, {0, 0}, false, false, false, false, [](App& a) { a.open_dialog(Dialog::Shortcuts); }},

      // Keyboard only: the lesson player (a presenter's clicker sends PageDown / PageUp; while a
      // lesson is open, the left and right arrows move between steps too, not between heads).
      {nullptr, "Next lesson step", "PageDown", {GLFW_KEY_PAGE_DOWN, 0}, false, false, false, false, [](App& a) { a.step_lesson(+1); },
       [](const App& a) { return a.state.lesson.open(); }},
      {nullptr, "Previous lesson step", "PageUp", {GLFW_KEY_PAGE_UP, 0}, false, false, false, false, [](App& a) { a.step_lesson(-1); },
       [](const App& a) { return a.state.lesson.open(); }},
      {nullptr, "Next lesson step (a lesson open)", "\xE2\x86\x92", {GLFW_KEY_RIGHT, 0}, false, false, true, false,
       [](App& a) { a.step_lesson(+1); }, [](const App& a) { return a.state.lesson.open(); }},
      {nullptr, "Previous lesson step (a lesson open)", "\xE2\x86\x90", {GLFW_KEY_LEFT, 0}, false, false, true, false,
       [](App& a) { a.step_lesson(-1); }, [](const App& a) { return a.state.lesson.open(); }},
      // Keyboard only: the selection.
      {nullptr, "Next head", "\xE2\x86\x92", {GLFW_KEY_RIGHT, 0}, false, true, true, false, [](App& a) { a.step_head(+1); },
       [](const App& a) { return !a.state.lesson.open(); }},
      {nullptr, "Previous head", "\xE2\x86\x90", {GLFW_KEY_LEFT, 0}, false, true, true, false, [](App& a) { a.step_head(-1); },
       [](const App& a) { return !a.state.lesson.open(); }},
      {nullptr, "Next layer", "\xE2\x86\x93", {GLFW_KEY_DOWN, 0}, false, true, true, false, [](App& a) { a.step_layer(+1); }},
      {nullptr, "Previous layer", "\xE2\x86\x91", {GLFW_KEY_UP, 0}, false, true, true, false, [](App& a) { a.step_layer(-1); }},
  };
  return table;
}

void draw_menu_commands(App& app, const char* menu) {
  for (const Command& c : commands()) {
    if (!c.menu || std::strcmp(c.menu, menu) != 0) continue;
    if (c.separator_before) ImGui::Separator();
    const bool enabled = !c.enabled || c.enabled(app);
    if (ImGui::MenuItem(c.label, c.shortcut, c.checked ? c.checked(app) : false, enabled)) c.run(app);
    hook_widget(c.label);
  }
}

const Command* command_for_key(int key, bool ctrl, bool shift, bool keyboard_taken, const App* app) {
  return match_command(commands(), key, ctrl, shift, keyboard_taken, app);
}

void run_shortcuts(App& app) {
  const ImGuiIO& io = ImGui::GetIO();
  const bool keyboard_taken = io.WantTextInput || app.dialog_open();
  // A tap shorter than a frame is seen pressed here too (key_taps.h).
  for (const Command& c : commands())
    for (int k : c.keys)
      if (k != 0 && ImGui::IsKeyPressed(k, c.repeat) && command_for_key(k, io.KeyCtrl, io.KeyShift, keyboard_taken, &app) == &c) {
        c.run(app);
        break;
      }
}

}  // namespace headmap
