// settings.h: what persists between runs (XDG config dir: imgui.ini and settings.json,
// both written atomically) and view files (a figure of a lesson, reopened exactly with
// `headmap --open view.json`).
#pragma once
#include <string>

#include <nlohmann/json.hpp>

#include "app/gui/app_state.h"
#include "core/error.h"

namespace headmap {

// $XDG_CONFIG_HOME/headmap, else ~/.config/headmap. Created on first save.
std::string config_dir();

struct Preferences {
  float font_scale = 1.0f;
  bool light_theme = false;
  Colormap colormap = Colormap::Viridis;
  Normalisation norm = Normalisation::PerHead;
  bool log_scale = false, grid_lines = true;
  int window_w = 1600, window_h = 1000;
};

// Missing file: defaults, no error. A broken file: defaults and a message saying so.
Preferences load_preferences(std::string* warning);
// The settings file's text; an error message says what is wrong. (Fuzzed: tests/fuzz.)
Result<Preferences> parse_preferences(const std::string& text);
Status save_preferences(const Preferences& p);
Result<std::string> load_imgui_ini();
Status save_imgui_ini(const char* data, size_t size);

// View files: text, config, seed, checkpoint, selection and colours.
Status save_view(const std::string& path, const AppState& s);
// The view a view file saves, as the state holds it: layer, batch, head, panel, colormap,
// normalisation, log_scale, grid_lines, focus_step, ablated, heads_zoom, heads_pan,
// focus_zoom, focus_pan, selected_token, compare_view. The one writer: save_view writes it,
// and the test report's "view" is it.
nlohmann::json view_json(const AppState& s);
// On error the state is untouched.
Status load_view(const std::string& path, AppState& s);
// The same from a view file's text; `path` names it in messages. (Fuzzed: tests/fuzz.)
Status parse_view(const std::string& text, const std::string& path, AppState& s);

}  // namespace headmap
