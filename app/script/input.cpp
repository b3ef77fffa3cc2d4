// input.cpp: see input.h.
#include "app/script/input.h"

#include <imgui.h>
#include <imgui_impl_glfw.h>

#include <GLFW/glfw3.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "app/gui/frame_hooks.h"
#include "app/gui/app.h"
#include "app/script/script.h"
#include "core/text/utf8.h"

namespace headmap {
namespace {

std::string trim(const std::string& s) {
  const size_t a = s.find_first_not_of(" \t\r\n"), b = s.find_last_not_of(" \t\r\n");
  return a == std::string::npos ? std::string() : s.substr(a, b - a + 1);
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// A key's name, as a person would say it, to its GLFW key; 0 when unknown.
int key_code(const std::string& name) {
  if (name.size() == 1 && name[0] >= 'a' && name[0] <= 'z') return GLFW_KEY_A + (name[0] - 'a');
  if (name.size() == 1 && name[0] >= '0' && name[0] <= '9') return GLFW_KEY_0 + (name[0] - '0');
  if (name.size() >= 2 && name[0] == 'f' && name.find_first_not_of("0123456789", 1) == std::string::npos) {
    const int n = std::stoi(name.substr(1));
    if (n >= 1 && n <= 25) return GLFW_KEY_F1 + n - 1;
  }
  static const std::pair<const char*, int> named[] = {
      {"enter", GLFW_KEY_ENTER},   {"return", GLFW_KEY_ENTER},    {"escape", GLFW_KEY_ESCAPE}, {"esc", GLFW_KEY_ESCAPE},
      {"tab", GLFW_KEY_TAB},       {"backspace", GLFW_KEY_BACKSPACE}, {"delete", GLFW_KEY_DELETE}, {"space", GLFW_KEY_SPACE},
      {"left", GLFW_KEY_LEFT},     {"right", GLFW_KEY_RIGHT},     {"up", GLFW_KEY_UP},         {"down", GLFW_KEY_DOWN},
      {"home", GLFW_KEY_HOME},     {"end", GLFW_KEY_END},         {"pageup", GLFW_KEY_PAGE_UP}, {"pagedown", GLFW_KEY_PAGE_DOWN},
      {"minus", GLFW_KEY_MINUS},   {"-", GLFW_KEY_MINUS},         {"equal", GLFW_KEY_EQUAL},   {"=", GLFW_KEY_EQUAL},
      {"plus", GLFW_KEY_EQUAL}};
  for (const auto& [n, k] : named)
    if (name == n) return k;
  return 0;
}

Result<InputStep> parse_step(const std::string& written) {
  InputStep st;
  st.source = written;
  const size_t sp = written.find(' ');
  const std::string verb = lower(written.substr(0, sp)), rest = sp == std::string::npos ? "" : trim(written.substr(sp + 1));
  auto bad = [&](const std::string& why) { return Error{ErrorKind::InvalidArgument, "--input step \"" + written + "\": " + why}; };
  static const std::pair<const char*, InputStep::Kind> targets[] = {
      {"click", InputStep::Click}, {"rclick", InputStep::RightClick}, {"dclick", InputStep::DoubleClick}, {"hover", InputStep::Hover},
      {"expect", InputStep::Expect}, {"absent", InputStep::Absent}};
  for (const auto& [v, k] : targets)
    if (verb == v) {
      if (rest.empty()) return bad("it names no widget.");
      st.kind = k;
      st.target = rest;
      return st;
    }
  if (verb == "ctrlclick") {
    if (rest.empty()) return bad("it names no widget.");
    st.kind = InputStep::Click;
    st.ctrl = true;
    st.target = rest;
    return st;
  }
  if (verb == "drag") {  // the points are "@X,Y" words at the end; the widget's label before them
    std::vector<std::string> words;
    std::stringstream ss(rest);
    for (std::string w; ss >> w;) words.push_back(w);
    while (!words.empty() && words.back()[0] == '@' && words.size() > 1) st.via.insert(st.via.begin(), words.back()), words.pop_back();
    if (st.via.empty()) return bad("drag wants a widget and the points to move through, e.g. \"drag layers @10,200 @400,200\".");
    for (const std::string& w : words) st.target += (st.target.empty() ? "" : " ") + w;
    st.kind = InputStep::Drag;
    return st;
  }
  if (verb == "paste") {
    st.kind = InputStep::Paste;
    st.text = sp == std::string::npos ? "" : written.substr(sp + 1);
    if (st.text.empty()) return bad("nothing to paste.");
    return st;
  }
  if (verb == "scroll") {
    const size_t s2 = rest.find(' ');
    try {
      size_t used = 0;
      st.amount = std::stoi(rest.substr(0, s2), &used);
      if (used != rest.substr(0, s2).size()) throw std::invalid_argument("n");
    } catch (...) {
      return bad("scroll wants a number of notches and a widget, e.g. \"scroll 2 focus map\".");
    }
    st.kind = InputStep::Scroll;
    st.target = s2 == std::string::npos ? "" : trim(rest.substr(s2 + 1));
    if (st.target.empty()) return bad("it names no widget.");
    return st;
  }
  if (verb == "key" || verb == "tap") {
    st.kind = verb == "key" ? InputStep::Key : InputStep::Tap;
    std::string combo = lower(rest);
    if (combo.empty()) return bad("it names no key.");
    // "ctrl+-" and "ctrl++": the last '+' that is not the key itself separates the key.
    std::vector<std::string> parts;
    size_t start = 0;
    for (size_t i = 0; i < combo.size(); ++i)
      if (combo[i] == '+' && i > start) parts.push_back(combo.substr(start, i - start)), start = i + 1;
    parts.push_back(combo.substr(start));
    for (size_t i = 0; i + 1 < parts.size(); ++i) {
      if (parts[i] == "ctrl" || parts[i] == "control") st.ctrl = true;
      else if (parts[i] == "shift") st.shift = true;
      else if (parts[i] == "alt") st.alt = true;
      else return bad("unknown modifier \"" + parts[i] + "\" (ctrl, shift, alt).");
    }
    st.key = key_code(parts.back() == "" ? "plus" : parts.back());
    if (st.key == 0) return bad("unknown key \"" + parts.back() + "\".");
    return st;
  }
  if (verb == "type") {
    st.kind = InputStep::Type;
    st.text = sp == std::string::npos ? "" : written.substr(sp + 1);  // spaces inside are typed
    if (st.text.empty()) return bad("nothing to type.");
    return st;
  }
  if (verb == "report") {
    if (rest.empty()) return bad("it names no file.");
    st.kind = InputStep::Report;
    st.target = rest;
    return st;
  }
  if (verb == "wait" && rest.empty()) {
    st.kind = InputStep::Wait;
    return st;
  }
  if (verb == "frames") {
    st.kind = InputStep::Frames;
    try {
      st.amount = std::stoi(rest);
    } catch (...) {
      return bad("frames wants a number.");
    }
    if (st.amount < 0 || st.amount > 100000) return bad("frames wants 0 to 100000.");
    return st;
  }
  if (verb == "timeout") {
    st.kind = InputStep::Timeout;
    double sec = 0;
    try {
      sec = std::stod(rest);
    } catch (...) {
      sec = -1;
    }
    if (!(sec >= 0.1 && sec <= 600)) return bad("timeout wants seconds, from 0.1 to 600.");
    st.amount = static_cast<int>(sec * 1000);
    return st;
  }
  return bad("unknown step (click, ctrlclick, rclick, dclick, hover, drag, scroll, key, type, paste, wait, frames, expect, absent, timeout, report).");
}

struct Found {
  bool ok = false;
  float x = 0, y = 0;
  std::string error;  // an ambiguous label: fatal at once
};

// The centre of the widget `target` as the last frame drew it (or "@X,Y").
Found find_widget(const App& app, const std::string& target) {
  Found f;
  if (!target.empty() && target[0] == '@') {
    f.ok = std::sscanf(target.c_str() + 1, "%f,%f", &f.x, &f.y) == 2;
    if (!f.ok) f.error = "\"" + target + "\" is not @X,Y.";
    return f;
  }
  const ImVec2 display = ImGui::GetIO().DisplaySize;
  const FrameRecorder::Widget* hit = nullptr;
  static const std::vector<FrameRecorder::Widget> kNone;
  for (const FrameRecorder::Widget& w : frame_recorder() ? frame_recorder()->widgets() : kNone) {
    if (w.label != target) continue;
    const float cx = (w.x0 + w.x1) / 2, cy = (w.y0 + w.y1) / 2;
    if (w.x1 <= w.x0 || w.y1 <= w.y0 || cx < 0 || cy < 0 || cx >= display.x || cy >= display.y) continue;
    if (hit && (hit->x0 != w.x0 || hit->y0 != w.y0)) {
      f.error = "the label \"" + target + "\" names more than one widget on screen.";
      return f;
    }
    hit = &w;
  }
  if (hit) {
    f.ok = true;
    f.x = (hit->x0 + hit->x1) / 2;
    f.y = (hit->y0 + hit->y1) / 2;
  }
  return f;
}

std::string shown_labels(const App& app) {
  std::vector<std::string> labels;
  if (frame_recorder())
  for (const FrameRecorder::Widget& w : frame_recorder()->widgets())
    if (std::find(labels.begin(), labels.end(), w.label) == labels.end()) labels.push_back(w.label);
  std::string out;
  for (const std::string& l : labels) out += (out.empty() ? "\"" : ", \"") + l + "\"";
  return out.empty() ? "none" : out;
}

}  // namespace

Result<std::vector<InputStep>> parse_input_steps(const std::vector<std::string>& specs) {
  std::vector<InputStep> steps;
  for (const std::string& spec : specs) {
    std::vector<std::string> lines;
    if (!spec.empty() && spec[0] == '@') {
      std::ifstream f(spec.substr(1));
      if (!f) return Error{ErrorKind::Io, "Cannot read the input steps file " + spec.substr(1) + "."};
      for (std::string l; std::getline(f, l);) lines.push_back(l);
    } else {
      std::stringstream ss(spec);
      for (std::string l; std::getline(ss, l, ';');) lines.push_back(l);
    }
    for (const std::string& l : lines) {
      const std::string t = trim(l);
      if (t.empty() || t[0] == '#') continue;
      Result<InputStep> st = parse_step(t);  // "type" keeps the spaces inside its text
      if (!st) return st.error();
      steps.push_back(std::move(st).value());
    }
  }
  return steps;
}

// The next step presses keys (another key, or a paste): its press may come in the frame of
// this step's release, as a fast typist's does. Not a click (a mouse button released and
// pressed in one frame reads as held), and not the end of the steps (the frame after the
// release shows what the input did).
bool InputDriver::keys_next() const {
  if (next_ + 1 >= steps_.size()) return false;
  const InputStep& n = steps_[next_ + 1];
  return (n.kind == InputStep::Key && n.key != steps_[next_].key) || n.kind == InputStep::Paste;
}

void InputDriver::next_step() {
  ++next_;
  stage_ = frames_ = 0;
  typed_ = 0;
  step_start_ = std::chrono::steady_clock::now();
}

Status InputDriver::after_frame(App& app) {
  for (;;) {
    const size_t step = next_;
    Status s = step_once(app);
    // A step ends in a call that injects nothing (every next_step() below), so the next
    // step may start in the same frame: no idle frame between steps.
    if (!s || !brisk_ || done() || next_ == step) return s;
  }
}

Status InputDriver::step_once(App& app) {
  if (done()) return Status();
  const InputStep& st = steps_[next_];
  GLFWwindow* w = app.window;
  const bool timed_out = std::chrono::steady_clock::now() - step_start_ > timeout_;
  char after[48];
  std::snprintf(after, sizeof after, " after %g s", timeout_.count() / 1000.0);
  auto fail = [&](const std::string& why) { return Status(Error{ErrorKind::InvalidArgument, "--input step \"" + st.source + "\": " + why}); };
  const int button = st.kind == InputStep::RightClick ? GLFW_MOUSE_BUTTON_RIGHT : GLFW_MOUSE_BUTTON_LEFT;
  switch (st.kind) {
    case InputStep::Click:
    case InputStep::RightClick:
    case InputStep::DoubleClick:
    case InputStep::Hover:
    case InputStep::Scroll:
      if (stage_ == 0) {  // the pointer moves onto the widget; the next frame sees it hovered
        const Found f = find_widget(app, st.target);
        if (!f.error.empty()) return fail(f.error);
        if (!f.ok) {
          if (timed_out) return fail("no widget \"" + st.target + "\" on screen" + std::string(after) + ". Shown: " + shown_labels(app) + ".");
          return Status();
        }
        glfwSetCursorPos(w, f.x, f.y);
        // A frame of its own: an item that allows overlap (a tab) takes a press only when it
        // was hovered in the frame before.
        stage_ = 1;
      } else if (stage_ == 1) {
        if (st.kind == InputStep::Hover) {
          next_step();
        } else if (st.kind == InputStep::Scroll) {
          ImGui_ImplGlfw_ScrollCallback(w, 0.0, static_cast<double>(st.amount));
          stage_ = 3;
        } else {
          if (st.ctrl) ImGui_ImplGlfw_KeyCallback(w, GLFW_KEY_LEFT_CONTROL, glfwGetKeyScancode(GLFW_KEY_LEFT_CONTROL), GLFW_PRESS, GLFW_MOD_CONTROL);
          ImGui_ImplGlfw_MouseButtonCallback(w, button, GLFW_PRESS, st.ctrl ? GLFW_MOD_CONTROL : 0);  // down for the next frame
          stage_ = 2;
        }
      } else if (stage_ == 2) {  // up: the button is not held, so the next frame sees it released
        ImGui_ImplGlfw_MouseButtonCallback(w, button, GLFW_RELEASE, st.ctrl ? GLFW_MOD_CONTROL : 0);
        if (st.ctrl) ImGui_ImplGlfw_KeyCallback(w, GLFW_KEY_LEFT_CONTROL, glfwGetKeyScancode(GLFW_KEY_LEFT_CONTROL), GLFW_RELEASE, 0);
        if (st.kind == InputStep::DoubleClick && frames_++ == 0) stage_ = 1;  // the second click
        else if (brisk_ && keys_next()) next_step();  // the keys that follow need no frame of their own
        else stage_ = 3;
      } else {
        next_step();  // one frame after the release: popups and dialogs have opened
      }
      return Status();
    case InputStep::Drag:
      if (stage_ == 0) {  // onto the widget; pressed in the next frame
        const Found f = find_widget(app, st.target);
        if (!f.error.empty()) return fail(f.error);
        if (!f.ok) {
          if (timed_out) return fail("no widget \"" + st.target + "\" on screen" + std::string(after) + ". Shown: " + shown_labels(app) + ".");
          return Status();
        }
        glfwSetCursorPos(w, f.x, f.y);
        stage_ = 1;
      } else if (stage_ == 1) {
        ImGui_ImplGlfw_MouseButtonCallback(w, GLFW_MOUSE_BUTTON_LEFT, GLFW_PRESS, 0);
        stage_ = 2;
      } else if (stage_ == 2 && frames_ < static_cast<int>(st.via.size())) {  // held: one point a frame
        const Found f = find_widget(app, st.via[static_cast<size_t>(frames_++)]);
        if (!f.ok) return fail(f.error.empty() ? "a point is not @X,Y." : f.error);
        glfwSetCursorPos(w, f.x, f.y);
      } else if (stage_ == 2) {
        stage_ = 3;  // a second frame at the last point, then the release
      } else if (stage_ == 3) {
        ImGui_ImplGlfw_MouseButtonCallback(w, GLFW_MOUSE_BUTTON_LEFT, GLFW_RELEASE, 0);
        stage_ = 4;
      } else {
        next_step();
      }
      return Status();
    case InputStep::Paste:  // a person's Ctrl+V: the clipboard's text arrives in one frame
      if (stage_ == 0) {
        if (!ImGui::GetIO().WantTextInput) {
          if (timed_out) return fail("no text box has the keyboard (click one first).");
          return Status();
        }
        glfwSetClipboardString(w, st.text.c_str());
        ImGui_ImplGlfw_KeyCallback(w, GLFW_KEY_LEFT_CONTROL, glfwGetKeyScancode(GLFW_KEY_LEFT_CONTROL), GLFW_PRESS, GLFW_MOD_CONTROL);
        ImGui_ImplGlfw_KeyCallback(w, GLFW_KEY_V, glfwGetKeyScancode(GLFW_KEY_V), GLFW_PRESS, GLFW_MOD_CONTROL);
        stage_ = 1;
      } else if (stage_ == 1) {
        ImGui_ImplGlfw_KeyCallback(w, GLFW_KEY_V, glfwGetKeyScancode(GLFW_KEY_V), GLFW_RELEASE, GLFW_MOD_CONTROL);
        ImGui_ImplGlfw_KeyCallback(w, GLFW_KEY_LEFT_CONTROL, glfwGetKeyScancode(GLFW_KEY_LEFT_CONTROL), GLFW_RELEASE, 0);
        if (brisk_ && keys_next()) next_step();
        else stage_ = 2;
      } else {
        next_step();
      }
      return Status();
    case InputStep::Tap:  // down and up between two frames, through the window's own key callback
      if (stage_ == 0) {
        GLFWkeyfun cb = glfwSetKeyCallback(w, nullptr);
        glfwSetKeyCallback(w, cb);
        if (cb) cb(w, st.key, glfwGetKeyScancode(st.key), GLFW_PRESS, 0), cb(w, st.key, glfwGetKeyScancode(st.key), GLFW_RELEASE, 0);
        stage_ = 1;
      } else {
        next_step();
      }
      return Status();
    case InputStep::Key: {
      const std::pair<bool, int> mods[] = {{st.ctrl, GLFW_KEY_LEFT_CONTROL}, {st.shift, GLFW_KEY_LEFT_SHIFT}, {st.alt, GLFW_KEY_LEFT_ALT}};
      const int bits = (st.ctrl ? GLFW_MOD_CONTROL : 0) | (st.shift ? GLFW_MOD_SHIFT : 0) | (st.alt ? GLFW_MOD_ALT : 0);
      if (stage_ == 0) {
        for (const auto& [on, k] : mods)
          if (on) ImGui_ImplGlfw_KeyCallback(w, k, glfwGetKeyScancode(k), GLFW_PRESS, bits);
        ImGui_ImplGlfw_KeyCallback(w, st.key, glfwGetKeyScancode(st.key), GLFW_PRESS, bits);
        stage_ = 1;
      } else if (stage_ == 1) {
        ImGui_ImplGlfw_KeyCallback(w, st.key, glfwGetKeyScancode(st.key), GLFW_RELEASE, bits);
        for (const auto& [on, k] : mods)
          if (on) ImGui_ImplGlfw_KeyCallback(w, k, glfwGetKeyScancode(k), GLFW_RELEASE, 0);
        if (brisk_ && keys_next()) next_step();
        else stage_ = 2;
      } else {
        next_step();
      }
      return Status();
    }
    case InputStep::Type:
      if (stage_ == 0) {  // a person waits for the text box to take the keyboard
        if (!ImGui::GetIO().WantTextInput) {
          if (timed_out) return fail("no text box has the keyboard (click one first).");
          return Status();
        }
        chars_ = decode_utf8(st.text).codepoints;
        stage_ = 1;
      }
      if (typed_ < chars_.size()) ImGui_ImplGlfw_CharCallback(w, static_cast<unsigned int>(chars_[typed_++]));
      else next_step();
      return Status();
    case InputStep::Wait:
      if (frames_++ >= 2 && settled(app)) next_step();
      return Status();
    case InputStep::Frames:
      if (frames_++ >= st.amount) next_step();
      return Status();
    case InputStep::Report:  // written by the script before this (take_report)
      next_step();
      return Status();
    case InputStep::Timeout:
      timeout_ = std::chrono::milliseconds(st.amount);
      next_step();
      return Status();
    case InputStep::Expect:
    case InputStep::Absent: {
      const Found f = find_widget(app, st.target);
      if (!f.error.empty() && st.kind == InputStep::Expect) return fail(f.error);
      const bool shown = f.ok || !f.error.empty();
      if (shown == (st.kind == InputStep::Expect)) {
        next_step();
      } else if (timed_out) {
        return fail(st.kind == InputStep::Expect ? "no widget \"" + st.target + "\" on screen" + std::string(after) + ". Shown: " + shown_labels(app) + "."
                                                 : "the widget \"" + st.target + "\" is still on screen" + std::string(after) + ".");
      }
      return Status();
    }
  }
  return Status();
}

}  // namespace headmap
