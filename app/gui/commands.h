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
  bool shift = false;                     // the keys need Shift too (Ctrl+Shift+E); a key's Shift variant wins over it without
};

// In menu order within each menu.
const std::vector<Command>& commands();

// The menu items of one menu, in table order (inside ImGui::BeginMenu).
void draw_menu_commands(App& app, const char* menu);
// The command of `table` a key runs with these modifiers (nullptr: none): Ctrl when it
// needs Ctrl; Shift when it needs Shift, and a key that has a Shift variant runs that
// variant, not the plain one, while Shift is held (Ctrl+Shift+E is not Ctrl+E; Ctrl++,
// typed with Shift on many keyboards, has none); keyboard-only keys (arrows) not while a
// text box or dialog has the keyboard. Given `app`, a command it disables is passed over
// (the arrows step a lesson, not the heads, while one is open). No GL or Dear ImGui
// (command_keys.cpp): tested without a window.
const Command* match_command(const std::vector<Command>& table, int key, bool ctrl, bool shift, bool keyboard_taken,
                             const App* app = nullptr);
// match_command on the app's table.
const Command* command_for_key(int key, bool ctrl, bool shift, bool keyboard_taken, const App* app = nullptr);
// Runs the commands whose keys were pressed this frame (a presenter's clicker taps PageDown
// faster than a frame while the app sleeps: key_taps.h keeps that press for a frame).
void run_shortcuts(App& app);

}  // namespace headmap
