// frame_hooks.cpp: see frame_hooks.h.
#include "app/gui/frame_hooks.h"

#include <cstring>
#include <nlohmann/json.hpp>

namespace headmap {

namespace {

FrameRecorder* g_recorder = nullptr;

using nlohmann::json;

json rect_json(ImVec2 p0, ImVec2 p1) { return json::array({p0.x, p0.y, p1.x, p1.y}); }

// Every key the report has, at its value when nothing was drawn under it.
const json& empty_frame() {
  static const json e = [] {
    const json none = json::array(), zero_rect = rect_json(ImVec2(0, 0), ImVec2(0, 0));
    json j;
    for (const char* k : {"heatmaps", "token_labels", "token_label_texts", "head_titles", "head_title_rects", "focus_map",
                          "focus_steps", "rope_pairs", "softcap_points", "kv_groups", "tokens", "token_chips", "chip_groups",
                          "special_chips", "missing_glyphs", "text_box_boxes", "messages", "buttons", "passport_rows",
                          "passport_columns", "passport_column_rects", "clipped", "predictions", "predictions_pending", "sentence_losses",
                          "compare_heatmaps", "passport_changes"})
      j[k] = none;
    for (const char* k : {"heads_map_pool", "heads_deferred", "heads_off", "focus_map_pool", "text_box_replacements",
                          "atlas_glyphs", "draw_calls"})
      j[k] = 0;
    for (const char* k : {"atlas_build_ms", "passport_table_h", "passport_right", "chips_box_h"}) j[k] = 0.0;
    for (const char* k : {"focus_step_shown", "layout", "predicted_after", "passport_note", "passport_kv", "colormap"}) j[k] = "";
    j["focus_slice_open"] = false;
    j["passport_params_visible"] = false;
    j["stale"] = false;
    j["heads_panel"] = zero_rect;
    j["attention_params"] = -1;
    j["compare"] = {{"a", ""}, {"b", ""}, {"b_tokens", none}, {"a_tokens", none}, {"axis_labels", none}, {"notes", none},
                    {"entropies", none}, {"entropy_unit", ""}, {"b_maps", none}, {"heads_a", 0}, {"heads_b", 0}};
    j["contrib"] = {{"rollout_map", none}, {"rollout_row_error", -1.0}, {"rollout_title", ""}, {"patch_recovery", none},
                    {"patch_per_position", none}, {"patch_target", ""}, {"detector_scores", none}, {"detector_marked", none},
                    {"detector_metric", ""}, {"detector_line", ""}, {"painted_cells", 0},
                    {"corpus_weights", none}, {"corpus_lines", none}, {"corpus_progress", ""}, {"corpus_offsets", none}};
    j["kv_cache"] = {{"reused", -1}, {"computed", -1}, {"line", ""}};
    j["lesson"] = {{"shown", ""}, {"title", ""}, {"note", ""}, {"revealed", false}, {"panel", zero_rect}};
    return j;
  }();
  return e;
}

json& at(const char* key) {
  json& f = g_recorder->frame();
  return std::strchr(key, '/') ? f[json::json_pointer(std::string("/") + key)] : f[key];
}

}  // namespace

FrameRecorder::FrameRecorder() : frame_(std::make_unique<json>(empty_frame())) {}
FrameRecorder::~FrameRecorder() {
  if (g_recorder == this) g_recorder = nullptr;
}
void FrameRecorder::begin_frame() {
  *frame_ = empty_frame();
  widgets_.clear();
}
const json& FrameRecorder::frame() const { return *frame_; }
json& FrameRecorder::frame() { return *frame_; }

void install_frame_recorder(FrameRecorder* r) { g_recorder = r; }
FrameRecorder* frame_recorder() { return g_recorder; }

namespace hook {
void add_text(const char* key, std::string_view v) {
  if (on()) at(key).push_back(std::string(v));
}
void add_int(const char* key, int64_t v) {
  if (on()) at(key).push_back(v);
}
void add_num(const char* key, double v) {
  if (on()) at(key).push_back(v);
}
void add_rect(const char* key, ImVec2 p0, ImVec2 p1) {
  if (on()) at(key).push_back(rect_json(p0, p1));
}
void add_nums(const char* key, const std::vector<float>& v) {
  if (on()) at(key).push_back(v);
}
void set_text(const char* key, std::string_view v) {
  if (on()) at(key) = std::string(v);
}
void set_texts(const char* key, const std::vector<std::string>& v) {
  if (on()) at(key) = v;
}
void set_int(const char* key, int64_t v) {
  if (on()) at(key) = v;
}
void set_num(const char* key, double v) {
  if (on()) at(key) = v;
}
void set_nums(const char* key, const std::vector<float>& v) {
  if (on()) at(key) = v;
}
void set_flag(const char* key, bool v) {
  if (on()) at(key) = v;
}
void set_rect(const char* key, ImVec2 p0, ImVec2 p1) {
  if (on()) at(key) = rect_json(p0, p1);
}
void bump(const char* key) {
  if (on()) at(key) = at(key).get<int64_t>() + 1;
}
void clear(const char* key) {
  if (on()) at(key) = json::array();
}
}  // namespace hook

void hook_widget(const char* label) { hook_widget(label, ImGui::GetItemRectMin(), ImGui::GetItemRectMax()); }

void hook_widget(const char* label, ImVec2 p0, ImVec2 p1) {
  if (!g_recorder) return;
  const char* hidden = std::strstr(label, "##");
  g_recorder->widgets_.push_back({hidden ? std::string(label, hidden) : std::string(label), p0.x, p0.y, p1.x, p1.y});
}

}  // namespace headmap
