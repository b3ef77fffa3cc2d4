#include "app/gui/settings.h"

#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "core/io/config_json.h"
#include "core/io/file_io.h"

namespace headmap {
namespace fs = std::filesystem;
using nlohmann::json;

std::string config_dir() {
  if (const char* x = std::getenv("XDG_CONFIG_HOME"); x && *x) return std::string(x) + "/headmap";
  if (const char* h = std::getenv("HOME"); h && *h) return std::string(h) + "/.config/headmap";
  return ".headmap";
}

static Status ensure_dir() {
  std::error_code ec;
  fs::create_directories(config_dir(), ec);
  if (ec) return Error{ErrorKind::Io, "Cannot create " + config_dir() + ": " + ec.message() + "."};
  return Status();
}

Preferences load_preferences(std::string* warning) {
  Preferences p;
  const std::string path = config_dir() + "/settings.json";
  std::error_code ec;
  if (!fs::exists(path, ec)) return p;
  Result<std::string> text = read_file(path, 1 << 20);
  try {
    if (!text) throw std::runtime_error(text.error().message);
    const json j = json::parse(*text);
    p.font_scale = std::clamp(j.value("font_scale", 1.0f), 0.5f, 4.0f);
    p.light_theme = j.value("light_theme", false);
    parse_colormap(j.value("colormap", std::string("viridis")).c_str(), &p.colormap);
    parse_normalisation(j.value("normalisation", std::string("head")), &p.norm);
    p.log_scale = j.value("log_scale", false);
    p.grid_lines = j.value("grid_lines", true);
    p.window_w = std::clamp(j.value("window_w", 1600), 640, 8192);
    p.window_h = std::clamp(j.value("window_h", 1000), 480, 8192);
  } catch (const std::exception& e) {
    if (warning) *warning = "Your settings file " + path + " could not be read (" + e.what() + "); using defaults. It will be rewritten.";
    return Preferences();
  }
  return p;
}

Status save_preferences(const Preferences& p) {
  if (Status s = ensure_dir(); !s) return s;
  const json j = {{"font_scale", p.font_scale}, {"light_theme", p.light_theme}, {"colormap", colormap_name(p.colormap)},
                  {"normalisation", normalisation_name(p.norm)}, {"log_scale", p.log_scale}, {"grid_lines", p.grid_lines},
                  {"window_w", p.window_w}, {"window_h", p.window_h}};
  return write_file_atomic(config_dir() + "/settings.json", j.dump(2) + "\n");
}

Result<std::string> load_imgui_ini() { return read_file(config_dir() + "/imgui.ini", 1 << 20); }

Status save_imgui_ini(const char* data, size_t size) {
  if (Status s = ensure_dir(); !s) return s;
  return write_file_atomic(config_dir() + "/imgui.ini", std::string(data, size));
}

// ---- view files ------------------------------------------------------------------------
static constexpr const char* kViewFormat = "headmap-view";
static constexpr int kViewVersion = 1;

Status save_view(const std::string& path, const AppState& s) {
  json j;
  j["format"] = kViewFormat;
  j["version"] = kViewVersion;
  j["text"] = s.text;
  j["config"] = json::parse(config_json(s.cfg));
  j["checkpoint"] = s.checkpoint;
  j["layer"] = s.view.layer;
  j["batch"] = s.view.batch;
  j["head"] = s.view.head;
  j["panel"] = center_panel_name(s.view.center);
  j["colormap"] = colormap_name(s.view.colormap);
  j["normalisation"] = normalisation_name(s.view.norm);
  j["log_scale"] = s.view.log_scale;
  j["grid_lines"] = s.view.grid_lines;
  j["focus_step"] = s.view.focus_step;
  return write_file_atomic(path, j.dump(2, ' ', false, json::error_handler_t::replace) + "\n");
}

Status load_view(const std::string& path, AppState& s) {
  Result<std::string> text = read_file(path, 16 << 20);
  if (!text) return text.error();
  auto bad = [&](const std::string& why) { return Status(Error{ErrorKind::BadFormat, path + " is not a view file headmap can open: " + why}); };
  json j;
  try {
    j = json::parse(*text);
  } catch (const json::exception& e) {
    return bad(std::string("it is not valid JSON (") + e.what() + ").");
  }
  if (!j.is_object() || j.value("format", "") != kViewFormat)
    return bad("it has no \"format\": \"headmap-view\" field. Save a view with File > Save view.");
  if (j.value("version", 0) > kViewVersion)
    return bad("it was written by a newer headmap (version " + std::to_string(j.value("version", 0)) + "). Update headmap.");
  AppState next = s;  // apply to a copy: on any error the current state stays as it was
  try {
    next.text = j.at("text").get<std::string>();
    Result<ModelConfig> cfg = config_from_json(j.at("config").dump());
    if (!cfg) return bad(cfg.error().message);
    next.cfg = *cfg;
    next.checkpoint = j.value("checkpoint", "");
    next.view.layer = j.value("layer", 0);
    next.view.batch = j.value("batch", 0);
    next.view.head = j.value("head", 0);
    parse_center_panel(j.value("panel", std::string("heads")), &next.view.center);
    parse_colormap(j.value("colormap", std::string("viridis")).c_str(), &next.view.colormap);
    parse_normalisation(j.value("normalisation", std::string("head")), &next.view.norm);
    next.view.log_scale = j.value("log_scale", false);
    next.view.grid_lines = j.value("grid_lines", true);
    next.view.focus_step = j.value("focus_step", 6);
  } catch (const json::exception& e) {
    return bad(std::string("a field has the wrong type (") + e.what() + ").");
  }
  s = std::move(next);
  return Status();
}

}  // namespace headmap
