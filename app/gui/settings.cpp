#include "app/gui/settings.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdint>
#include <optional>
#include <set>

#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "app/common/model_options.h"
#include "core/io/config_json.h"
#include "core/io/file_io.h"
#include "core/io/json_limits.h"

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

// A number field as a float within [lo, hi], or def when absent. Anything else (a string,
// 1e300, which no float holds) is a message, never a conversion out of range.
static float float_field(const json& j, const char* key, float def, float lo, float hi) {
  const auto it = j.find(key);
  if (it == j.end()) return def;
  if (!it->is_number()) throw std::runtime_error(std::string("\"") + key + "\" is not a number");
  const double v = it->get<double>();
  if (std::isnan(v)) return def;
  return static_cast<float>(std::clamp(v, static_cast<double>(lo), static_cast<double>(hi)));
}

Result<Preferences> parse_preferences(const std::string& text) {
  Preferences p;
  try {
    const json j = json::parse(text);
    if (!j.is_object()) return Error{ErrorKind::BadFormat, "it is not a JSON object"};
    p.font_scale = float_field(j, "font_scale", 1.0f, 0.5f, 4.0f);
    p.light_theme = j.value("light_theme", false);
    parse_colormap(j.value("colormap", std::string("viridis")).c_str(), &p.colormap);
    parse_normalisation(j.value("normalisation", std::string("head")), &p.norm);
    p.log_scale = j.value("log_scale", false);
    p.grid_lines = j.value("grid_lines", true);
    p.window_w = static_cast<int>(float_field(j, "window_w", 1600, 640, 8192));
    p.window_h = static_cast<int>(float_field(j, "window_h", 1000, 480, 8192));
  } catch (const std::exception& e) {
    return Error{ErrorKind::BadFormat, e.what()};
  }
  return p;
}

Preferences load_preferences(std::string* warning) {
  const std::string path = config_dir() + "/settings.json";
  std::error_code ec;
  if (!fs::exists(path, ec)) return Preferences();
  Result<std::string> text = read_file(path, 1 << 20);
  Result<Preferences> p = text ? parse_preferences(*text) : Result<Preferences>(text.error());
  if (!p) {
    if (warning) *warning = "Your settings file " + path + " could not be read (" + p.error().message + "); using defaults. It will be rewritten.";
    return Preferences();
  }
  return *p;
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
// Version 2 records the weights' source ("weights"); version 3 the heads switched off, the
// zoom and pan of the heads grid and of Focus, the clicked token and the Compare tab's view.
// Older files still open, with those at their defaults.
static constexpr const char* kViewFormat = "headmap-view";
static constexpr int kViewVersion = 3;
// The largest zoom a view file may hold: the heads grid's at the longest context (the panel
// clamps it further to the map's length) and Focus's own limit.
static constexpr float kMaxHeadsZoom = kMaxContext, kMaxFocusZoom = 64.0f;

// Where the weights on screen come from, as compute_request() chooses them: random init
// (the seed is in the config), a checkpoint file, a shipped checkpoint (by name, so a view
// opens the same in another installation), a GPT-2 directory, or the session's training.
static json weights_source_json(const AppState& s) {
  const ComputeRequest r = compute_request(s);
  const auto absolute = [](const std::string& p) {
    std::error_code ec;
    const fs::path a = fs::absolute(p, ec);
    return ec ? p : a.lexically_normal().string();
  };
  json w = {{"mode", weights_mode_name(s.weights_mode)}, {"seed", s.cfg.seed}};
  if (s.weights_mode == WeightsMode::Random) {
    w["source"] = "random";
  } else if (r.weights.in_memory && r.weights.in_memory == s.pretrained) {
    w["source"] = "model";
    w["model_dir"] = absolute(s.pretrained_dir);
  } else if (r.weights.in_memory) {
    w["source"] = "session";
  } else if (!r.weights.checkpoint.empty() && r.weights.checkpoint == s.checkpoint) {
    w["source"] = "checkpoint";
    w["checkpoint"] = absolute(s.checkpoint);
  } else if (!r.weights.checkpoint.empty()) {
    w["source"] = "shipped";
    w["shipped"] = fs::path(r.weights.checkpoint).filename().string();
  } else {
    w["source"] = "random";  // trained asked for, but no trained model of this D and L: random init
  }
  if (s.result && s.result->fwd && s.result->request.weights == r.weights) w["label"] = s.result->fwd->source;
  return w;
}

// Applies a view's "weights" to `next`. A checkpoint or model directory it names is not read
// here: the path is put to the person first (AppState::ask_open_model, issue 35 F1), and
// read only on their Open, off the UI thread, where a missing or corrupt one is a message.
static Status apply_weights_source(const json& w, AppState& next, const std::string& view_path) {
  auto bad = [&](const std::string& why) {
    return Status(Error{ErrorKind::BadFormat, view_path + " cannot be opened as saved: " + why + " The current view is kept."});
  };
  if (!w.is_object()) return bad("its \"weights\" is not an object.");
  const std::string mode = w.value("mode", std::string("trained")), source = w.value("source", std::string(""));
  if (!parse_weights_mode(mode, &next.weights_mode))
    return bad("its weights mode \"" + mode + "\" is none of trained, trained_for_h and random.");
  if (mode == "random") return Status();
  const auto drop_loaded = [&] {  // the view's weights replace whatever was opened
    next.checkpoint.clear();
    next.checkpoint_info.reset();
    next.pretrained.reset();
    next.pretrained_dir.clear();
    next.session.reset();
  };
  if (source == "checkpoint" || source == "model") {
    const std::string path = w.value(source == "model" ? "model_dir" : "checkpoint", std::string(""));
    if (path.empty()) return bad("its weights source \"" + source + "\" names no path.");
    next.ask_open_model = AppState::AskOpenModel{path, view_path, next.cfg, next.weights_mode};
  } else if (source == "shipped") {
    const std::string name = w.value("shipped", std::string(""));
    const bool have = std::any_of(next.shipped.begin(), next.shipped.end(),
                                  [&](const CheckpointInfo& k) { return fs::path(k.path).filename() == name; });
    if (!have) return bad("it was saved on the shipped checkpoint " + name + ", which this installation does not have.");
    drop_loaded();  // choose_weights picks the same shipped file for the same config
    // Views saved before "trained" meant the default re-sliced named the file trained for their H.
    if (next.weights_mode == WeightsMode::Trained && name != fs::path(kDefaultCheckpoint).filename().string())
      next.weights_mode = WeightsMode::TrainedForH;
  } else if (source == "session") {
    next.status_lines.push_back("This view was saved on a model trained in a session, which the file does not hold: it shows "
                                "the trained model that fits instead. Save a trained model with File > Save checkpoint and open it "
                                "before saving a view, to reopen it exactly.");
  } else if (source == "random") {
    drop_loaded();  // no trained model fitted this D and L: random init, as when it was saved
  } else {
    return bad("its weights source \"" + source + "\" is not one headmap knows.");
  }
  return Status();
}

Status save_view(const std::string& path, const AppState& s) {
  json j;
  j["format"] = kViewFormat;
  j["version"] = kViewVersion;
  j["text"] = s.text;
  j["config"] = json::parse(config_json(s.cfg));
  j["weights"] = weights_source_json(s);
  j.update(view_json(s));
  return write_file_atomic(path, j.dump(2, ' ', false, json::error_handler_t::replace) + "\n");
}

json view_json(const AppState& s) {
  json j;
  j["layer"] = s.view.layer;
  j["batch"] = s.view.batch;
  j["head"] = s.view.head;
  j["panel"] = center_panel_name(s.view.center);
  j["colormap"] = colormap_name(s.view.colormap);
  j["normalisation"] = normalisation_name(s.view.norm);
  j["log_scale"] = s.view.log_scale;
  j["grid_lines"] = s.view.grid_lines;
  j["focus_step"] = s.view.focus_step;
  json off = json::array();
  for (const HeadId& id : s.ablated) off.push_back({id.layer, id.head});
  j["ablated"] = off;  // every head switched off, also those kept for a larger config
  j["heads_zoom"] = s.view.heads_zoom;
  j["heads_pan"] = {s.view.heads_pan_x, s.view.heads_pan_y};
  j["focus_zoom"] = s.view.zoom;
  j["focus_pan"] = {s.view.pan_x, s.view.pan_y};
  j["selected_token"] = s.selected_token;
  j["compare_view"] = s.view.compare_mode == 0 ? "split" : s.view.compare_show_correct ? "b" : "a";
  return j;
}

// An integer field within [lo, hi], or def when it is absent; nullopt for anything else
// (a string, a fraction, 1e38): a hostile file must not reach a float-to-int conversion.
static std::optional<int> int_field(const json& j, const char* key, int def, int lo, int hi) {
  const auto it = j.find(key);
  if (it == j.end()) return def;
  if (!it->is_number_integer()) return std::nullopt;
  const int64_t v = it->is_number_unsigned() ? static_cast<int64_t>(std::min<uint64_t>(it->get<uint64_t>(), INT64_MAX)) : it->get<int64_t>();
  if (v < lo || v > hi) return std::nullopt;
  return static_cast<int>(v);
}

// Version 3's view fields (ablated, zoom and pan, selected_token, compare_view), or their
// defaults when absent (an older file). A field of the wrong type or an impossible value
// is refused, naming it; a zoom or pan out of range is clamped, with a note naming it.
static Status parse_view_v3(const json& j, const std::string& path, AppState& next) {
  auto bad = [&](const std::string& field, const std::string& why) {
    return Status(Error{ErrorKind::BadFormat, path + " is not a view file headmap can open: its \"" + field + "\" " + why});
  };
  const ViewSettings defaults;
  std::set<HeadId> ablated;
  if (const auto it = j.find("ablated"); it != j.end()) {
    if (!it->is_array()) return bad("ablated", "is not a list of [layer, head] pairs.");
    bool beyond = false;
    for (const json& e : *it) {
      if (!e.is_array() || e.size() != 2 || !e[0].is_number_integer() || !e[1].is_number_integer())
        return bad("ablated", "holds " + e.dump().substr(0, 40) + ", which is not a [layer, head] pair of whole numbers.");
      auto whole = [](const json& x) {
        return x.is_number_unsigned() ? static_cast<int64_t>(std::min<uint64_t>(x.get<uint64_t>(), INT64_MAX)) : x.get<int64_t>();
      };
      const int64_t l = whole(e[0]), h = whole(e[1]);
      if (l < 0 || l >= kMaxModelLayers || h < 0 || h >= kMaxDModel)
        return bad("ablated", "names head " + e.dump().substr(0, 40) + ", which no model has (layers 0 to " + std::to_string(kMaxModelLayers - 1) +
                                  ", heads 0 to " + std::to_string(kMaxDModel - 1) + ").");
      beyond = beyond || l >= next.cfg.num_layers || h >= next.cfg.num_heads;
      ablated.insert(HeadId{static_cast<int>(l), static_cast<int>(h)});
    }
    if (beyond)
      next.status_lines.push_back(path + ": \"ablated\" names heads this configuration does not have: they stay switched off for "
                                  "when it has them again, as in the heads panel.");
  }
  // A number in [lo, hi]: absent gives def; not a finite number is refused; out of range is clamped, with a note.
  auto number = [&](const json& v, const std::string& field, float lo, float hi, float* out) -> Status {
    if (!v.is_number() || !std::isfinite(v.get<double>())) return bad(field, "is not a number.");
    const double x = v.get<double>();
    *out = static_cast<float>(std::clamp(x, static_cast<double>(lo), static_cast<double>(hi)));
    if (x < lo || x > hi) next.status_lines.push_back(path + ": \"" + field + "\" was out of range (" + v.dump() + "); using " + json(*out).dump() + ".");
    return Status();
  };
  auto pair = [&](const char* field, float lo, float hi, float* x, float* y) -> Status {
    const auto it = j.find(field);
    if (it == j.end()) return Status();
    if (!it->is_array() || it->size() != 2) return bad(field, "is not a pair [x, y].");
    if (Status s = number((*it)[0], field, lo, hi, x); !s) return s;
    return number((*it)[1], field, lo, hi, y);
  };
  auto one = [&](const char* field, float lo, float hi, float* x) -> Status {
    const auto it = j.find(field);
    return it == j.end() ? Status() : number(*it, field, lo, hi, x);
  };
  ViewSettings v = next.view;
  v.heads_zoom = defaults.heads_zoom, v.heads_pan_x = defaults.heads_pan_x, v.heads_pan_y = defaults.heads_pan_y;
  v.zoom = defaults.zoom, v.pan_x = defaults.pan_x, v.pan_y = defaults.pan_y;
  v.compare_mode = defaults.compare_mode, v.compare_show_correct = defaults.compare_show_correct;
  if (Status s = one("heads_zoom", 1.0f, kMaxHeadsZoom, &v.heads_zoom); !s) return s;
  if (Status s = pair("heads_pan", 0.0f, 1.0f, &v.heads_pan_x, &v.heads_pan_y); !s) return s;
  if (Status s = one("focus_zoom", 1.0f, kMaxFocusZoom, &v.zoom); !s) return s;
  if (Status s = pair("focus_pan", 0.0f, 1.0f, &v.pan_x, &v.pan_y); !s) return s;
  const std::optional<int> token = int_field(j, "selected_token", -1, -1, kMaxContext - 1);
  if (!token) return bad("selected_token", "is not a token position (a whole number from -1, none, to " + std::to_string(kMaxContext - 1) + ").");
  if (const auto it = j.find("compare_view"); it != j.end()) {
    const std::string c = it->is_string() ? it->get<std::string>() : "";
    if (c != "split" && c != "a" && c != "b") return bad("compare_view", "is not \"split\", \"a\" or \"b\".");
    v.compare_mode = c == "split" ? 0 : 1;
    v.compare_show_correct = c == "b" ? 1 : 0;
  }
  next.view = v;
  next.ablated = std::move(ablated);
  next.selected_token = *token;
  return Status();
}

Status load_view(const std::string& path, AppState& s) {
  Result<std::string> text = read_file(path, 16 << 20);
  if (!text) return text.error();
  return parse_view(*text, path, s);
}

Status parse_view(const std::string& text, const std::string& path, AppState& s) {
  auto bad = [&](const std::string& why) { return Status(Error{ErrorKind::BadFormat, path + " is not a view file headmap can open: " + why}); };
  // A view nests three levels; its tree is checked against the memory budget before it is built (issue 35, F8).
  if (Status lim = check_json_limits(text, "the file", 16, "open a smaller view file"); !lim) return bad(lim.error().message + ".");
  json j;
  try {
    j = json::parse(text);
  } catch (const json::exception& e) {
    return bad(std::string("it is not valid JSON (") + e.what() + ").");
  }
  if (!j.is_object() || !j.contains("format") || !j["format"].is_string() || j["format"].get<std::string>() != kViewFormat)
    return bad("it has no \"format\": \"headmap-view\" field. Save a view with File > Save view.");
  const std::optional<int> version = int_field(j, "version", 0, 0, INT32_MAX);
  if (!version) return bad("its \"version\" is not a whole number.");
  if (*version > kViewVersion)
    return bad("it was written by a newer headmap (version " + std::to_string(*version) + "). Update headmap.");
  AppState next = s;  // apply to a copy: on any error the current state stays as it was
  next.ask_open_model.reset();  // a question an earlier view asked is replaced by this view's
  try {
    next.text = j.at("text").get<std::string>();
    Result<ModelConfig> cfg = config_from_json(j.at("config").dump());
    if (!cfg) return bad(cfg.error().message);
    next.cfg = *cfg;
    if (j.contains("weights")) {  // version 2: the weights' source, every file it names checked
      if (Status w = apply_weights_source(j.at("weights"), next, path); !w) return w;
    } else if (const std::string ckpt = j.value("checkpoint", ""); !ckpt.empty()) {  // version 1: asked, as version 2's
      next.ask_open_model = AppState::AskOpenModel{ckpt, path, next.cfg, next.weights_mode};
    }
    const std::optional<int> layer = int_field(j, "layer", 0, 0, kMaxModelLayers), batch = int_field(j, "batch", 0, 0, 1 << 20),
                             head = int_field(j, "head", 0, 0, kMaxDModel), focus = int_field(j, "focus_step", 6, 0, 64);
    if (!layer || !batch || !head || !focus) return bad("\"layer\", \"batch\", \"head\" or \"focus_step\" is not a whole number in range.");
    next.view.layer = *layer;
    next.view.batch = *batch;
    next.view.head = *head;
    parse_center_panel(j.value("panel", std::string("heads")), &next.view.center);
    parse_colormap(j.value("colormap", std::string("viridis")).c_str(), &next.view.colormap);
    parse_normalisation(j.value("normalisation", std::string("head")), &next.view.norm);
    next.view.log_scale = j.value("log_scale", false);
    next.view.grid_lines = j.value("grid_lines", true);
    next.view.focus_step = *focus;
    if (Status v3 = parse_view_v3(j, path, next); !v3) return v3;
  } catch (const json::exception& e) {
    return bad(std::string("a field has the wrong type (") + e.what() + ").");
  }
  if (next.ask_open_model) {  // the view's config and weights wait for the person's answer; the rest shows now
    next.ask_open_model->cfg = next.cfg;
    next.ask_open_model->mode = next.weights_mode;
    next.ask_open_model->view = next.view;
    next.ask_open_model->selected_token = next.selected_token;
    next.cfg = s.cfg;
    next.weights_mode = s.weights_mode;
  }
  s = std::move(next);
  return Status();
}

}  // namespace headmap
