// input.h: a person's input, scripted, for the GUI tests (`headmap --screenshot ... --input
// "click File; click Save view...; key enter; wait"`). The events enter where a user's do:
// the pointer is really moved (glfwSetCursorPos) and buttons, keys and characters go
// through the GLFW backend's callbacks, one batch per frame, so menus, popups, text boxes
// and the command table's shortcuts see real input. A widget is named by its label as the
// last frame drew it (FrameRecorder::widgets, submitted by hook_widget in app/gui/frame_hooks.h).
//
// Steps (separated by ';' in one --input, or one per line in --input @FILE):
//   click LABEL | rclick LABEL | dclick LABEL | hover LABEL   (LABEL may be @X,Y: window pixels)
//   ctrlclick LABEL      a click with Ctrl held (a slider's or drag's number box)
//   drag LABEL @X,Y ...  press on LABEL, move through the points (one a frame, two at the last), release
//   scroll N LABEL       the wheel, N notches (negative: down), over LABEL
//   key COMBO            e.g. enter, escape, right, ctrl+o, ctrl+a, ctrl+shift+e, f11
//   tap KEY              down and up between two frames, through the window's key callback (a clicker's PageDown)
//   type TEXT            characters, one per frame, into whatever has the keyboard
//   paste TEXT           TEXT on the clipboard, then Ctrl+V: all of it in one frame
//   wait                 until the app is idle and its result is on screen
//   frames N             N frames
//   expect LABEL         until LABEL is shown (fails after the step timeout)
//   absent LABEL         until LABEL is no longer shown (fails after the step timeout)
//   timeout S            the step timeout from here on, in seconds (default 5)
//   report PATH          writes the --report of the frame just drawn to PATH (a test's look mid-run)
// A widget that does not appear within the step timeout, an ambiguous label, or an unknown
// step fails the run (exit 1) with a message naming it.
#pragma once
#include <chrono>
#include <string>
#include <vector>

#include "core/error.h"

namespace headmap {

class App;

struct InputStep {
  enum Kind { Click, RightClick, DoubleClick, Hover, Scroll, Key, Tap, Type, Wait, Frames, Expect, Absent, Timeout, Drag, Paste, Report };
  Kind kind = Wait;
  std::string target;  // a widget's label, or "@X,Y"; Report: the path
  std::string text;    // Type, Paste: the characters (UTF-8)
  std::vector<std::string> via;  // Drag: the points "@X,Y" the pointer moves through while pressed
  int amount = 0;      // Scroll: notches; Frames: frames; Timeout: milliseconds
  int key = 0;         // Key: a GLFW key
  bool ctrl = false, shift = false, alt = false;  // Key; ctrl also Click (ctrlclick)
  std::string source;  // the step as written, for messages
};

// Parses --input values: each split at ';' (or, "@FILE", read one step per line). Empty steps are skipped.
Result<std::vector<InputStep>> parse_input_steps(const std::vector<std::string>& specs);

class InputDriver {
 public:
  // brisk: a step starts in the frame the one before it ended, and keys follow each other
  // without an idle frame (the crawler);
  // else one frame later, as the GUI tests' steps were written for.
  explicit InputDriver(std::vector<InputStep> steps, bool brisk = false) : steps_(std::move(steps)), brisk_(brisk) {}
  bool empty() const { return steps_.empty(); }
  bool done() const { return next_ >= steps_.size(); }
  // After each frame's swap: reads what the frame drew and injects the next frame's events.
  // An error ends the run.
  Status after_frame(App& app);
  // A Report step is next: its path, and the step is passed (the script writes the report).
  std::string take_report() {
    if (done() || steps_[next_].kind != InputStep::Report) return {};
    std::string path = steps_[next_].target;
    next_step();
    return path;
  }
  // True while a step waits for the worker (the loop may sleep).
  bool waiting() const { return !done() && steps_[next_].kind == InputStep::Wait; }

 private:
  void next_step();
  bool keys_next() const;
  Status step_once(App& app);
  std::vector<InputStep> steps_;
  bool brisk_ = false;
  size_t next_ = 0;
  int stage_ = 0, frames_ = 0;  // progress within the step
  size_t typed_ = 0;
  std::chrono::milliseconds timeout_{5000};  // a widget's wait (timeout steps change it)
  std::u32string chars_;
  std::chrono::steady_clock::time_point step_start_ = std::chrono::steady_clock::now();
};

}  // namespace headmap
