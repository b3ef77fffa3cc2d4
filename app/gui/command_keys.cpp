// command_keys.cpp: which command a key runs (commands.h), without a window.
#include "app/gui/commands.h"

namespace headmap {

const Command* match_command(const std::vector<Command>& table, int key, bool ctrl, bool shift, bool keyboard_taken,
                             const App* app) {
  if (key == 0) return nullptr;
  const auto has = [key, app](const Command& c) {
    return (c.keys[0] == key || c.keys[1] == key) && !(app && c.enabled && !c.enabled(*app));
  };
  bool shift_variant = false;  // does a command of this key (and Ctrl state) need Shift?
  for (const Command& c : table) shift_variant = shift_variant || (has(c) && c.shift && c.ctrl == ctrl);
  for (const Command& c : table) {
    if (!has(c) || (c.ctrl && !ctrl) || (c.free_keyboard && keyboard_taken)) continue;
    if (c.shift ? !shift : shift && shift_variant && c.ctrl == ctrl) continue;  // only a Shift variant excludes the plain key
    return &c;
  }
  return nullptr;
}

}  // namespace headmap
