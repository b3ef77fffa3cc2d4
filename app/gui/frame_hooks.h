// frame_hooks.h: what a frame submitted, for an observer. The panels call these hooks where
// they draw something a test looks at (a widget's rect, a token chip, a message), the way
// Dear ImGui's item functions call its test engine's item hooks; they keep no record
// themselves. A scripted run (app/script/) installs a FrameRecorder, which gathers the
// frame into the --report JSON; a person's run installs none, and every hook returns at once.
//
// A key names what was submitted, as the report names it: "tokens", or "compare/a" inside
// an object. add_* appends to the list under the key; set_* replaces the value.
#pragma once
#include <imgui.h>

#include <cstdint>
#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace headmap {

// The observer: the frame's submissions as JSON, begun again each frame from every key's
// value when nothing was drawn (frame_hooks.cpp).
class FrameRecorder {
 public:
  struct Widget {  // something a person can click or type into, by its label as drawn
    std::string label;
    float x0, y0, x1, y1;
  };
  FrameRecorder();
  ~FrameRecorder();
  void begin_frame();
  const nlohmann::json& frame() const;
  nlohmann::json& frame();
  const std::vector<Widget>& widgets() const { return widgets_; }
  bool map_values = false;  // also keep the values of Compare's B maps (a copy per frame)

 private:
  friend void hook_widget(const char*, ImVec2, ImVec2);
  std::unique_ptr<nlohmann::json> frame_;
  std::vector<Widget> widgets_;
};

// The recorder the hooks feed (nullptr: none, the default).
void install_frame_recorder(FrameRecorder* r);
FrameRecorder* frame_recorder();

namespace hook {
inline bool on() { return frame_recorder() != nullptr; }
// Whether Compare's B maps' values are wanted (a copy per frame): only then is it worth making.
inline bool wants_map_values() { return on() && frame_recorder()->map_values; }
void add_text(const char* key, std::string_view v);
void add_int(const char* key, int64_t v);
void add_num(const char* key, double v);
void add_rect(const char* key, ImVec2 p0, ImVec2 p1);
void add_nums(const char* key, const std::vector<float>& v);
void set_text(const char* key, std::string_view v);
void set_texts(const char* key, const std::vector<std::string>& v);
void set_int(const char* key, int64_t v);
void set_num(const char* key, double v);
void set_nums(const char* key, const std::vector<float>& v);
void set_flag(const char* key, bool v);
void set_rect(const char* key, ImVec2 p0, ImVec2 p1);
void bump(const char* key);   // an int, plus one
void clear(const char* key);  // a list, emptied
}  // namespace hook

// The widget just drawn (or the rect given) under `label`, less any "##id": what the GUI
// tests' input steps click (app/script/input.h).
void hook_widget(const char* label, ImVec2 p0, ImVec2 p1);
void hook_widget(const char* label);

}  // namespace headmap
