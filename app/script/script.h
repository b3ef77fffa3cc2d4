// script.h: scripted sessions that drive the real UI, for screenshots, GUI tests and the
// responsiveness benchmark. They change the state as a user would (typing goes through
// Dear ImGui's text input) and observe what reached the screen.
#pragma once
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "app/gui/app.h"

namespace headmap {

struct ScreenshotOptions {
  std::string path;                 // PNG to write
  std::string report;               // JSON of what was drawn (optional)
  int frames = 3;                   // frames to render once the result is on screen
  std::vector<std::string> then;    // settings (settings_table.h) applied after the first result, e.g. "heads=8";
                                    // "wait": the ones after it wait for the result of the ones before;
                                    // "report=PATH": write the --report JSON of what is on screen then;
                                    // "press=PageDown" (PageUp, Right, Left, Down, Up): press that key once
  std::string type;                 // typed into the (emptied) sentence box, one character per frame
  float mouse_x = -1, mouse_y = -1;  // where the mouse rests (window pixels); off-window by default
  bool right_click = false;         // after the --then settings: one right-click where the mouse rests, then wait for the result
  std::vector<std::string> input;   // after those: a person's input through the real widgets (input.h), then the screenshot
  double deadline_s = 90;           // give up (exit 1) after this long: a slow machine may need more
};
std::unique_ptr<Script> make_screenshot_script(ScreenshotOptions o);

// Ready to be looked at: nothing computing or training, and the newest inputs answered (a
// result, a refusal) or not computable (an invalid config).
bool settled(const App& app);

// The responsiveness benchmark: types a sentence, sweeps num_heads through the divisors of
// d_model, sweeps d_model, then a long sequence; prints JSON with latency and frame times.
std::unique_ptr<Script> make_benchmark_script(std::chrono::steady_clock::time_point process_start);

}  // namespace headmap
