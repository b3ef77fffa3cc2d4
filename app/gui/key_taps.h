// key_taps.h: a key pressed and released between two frames still reaches Dear ImGui.
//
// Dear ImGui 1.86 (Debian 12's) has no input queue: its GLFW backend sets io.KeysDown[key] in
// the key callback, so a press and its release handled by the same glfwWaitEvents, before any
// frame, leave the key neither down nor pressed in the next frame. On a slow frame (software
// GL, a large model) a quick tap is lost: Enter in a File dialog, Ctrl+A, a Backspace, a
// clicker's PageDown. KeyTaps holds such a release until a frame has seen the press: that frame
// sees the key pressed (and its modifiers down) throughout, the next one sees it released.
#pragma once
#include <bitset>
#include <vector>

namespace headmap {

class KeyTaps {
 public:
  static constexpr int kRelease = 0, kPress = 1;  // GLFW_RELEASE, GLFW_PRESS (main.cpp checks); else a repeat
  struct Event {
    int key, scancode, action, mods;  // as GLFW's key callback gives them
  };
  // A key event from the window: true if it goes to Dear ImGui now, false if it is a release
  // held for a later frame.
  bool on_key(const Event& e);
  // Before a frame's ImGui::NewFrame: the releases to apply now, in order (those whose press
  // the frame before saw); the presses since then count as seen by this frame.
  std::vector<Event> before_frame();

 private:
  static constexpr int kKeys = 512;  // io.KeysDown's size in 1.86; other keys pass through
  std::bitset<kKeys> unseen_;        // pressed since the last frame began
  std::vector<Event> held_;          // releases of unseen presses
  std::vector<Event> ready_;         // releases of presses the frame now drawing sees
};

// The app's one instance: the window's key callback (main.cpp) and App::draw_ui.
KeyTaps& key_taps();

}  // namespace headmap
