// commands.h: every action that has a menu item or a key, in one table. The menus and the
// keyboard both read it, so a shortcut and its menu item cannot drift apart.
#pragma once
#include <array>
#include <vector>

namespace headmap {

class App;

struct Command {
  const char* menu;         // "File", "View" or "Help"; nullptr: keyboard only
  const char* label;        // the menu item
  const char* shortcut;     // as the menu shows it; nullptr: none
  std::array<int, 2> keys;  // GLFW keys that run it; 0: none
  bool ctrl;                // the keys need Ctrl
  bool repeat;              // a held key repeats
  bool free_keyboard;       // only while no text box or dialog has the keyboard (arrows)
  bool separator_before;    // a menu separator above the item
  void (*run)(App&);
  bool (*enabled)(const App&) = nullptr;  // nullptr: always
  bool (*checked)(const App&) = nullptr;  // nullptr: not a toggle
};

// In menu order within each menu.
const std::vector<Command>& commands();

// The menu items of one menu, in table order (inside ImGui::BeginMenu).
void draw_menu_commands(App& app, const char* menu);
// Runs the commands whose keys were pressed this frame.
void run_shortcuts(App& app);

}  // namespace headmap
