// app.cpp: the frame loop, the layout and fonts. The menu bar and the dialog boxes are in
// app_menu.cpp; the menus and shortcuts come from the command table (commands.cpp), what
// the dialogs do from dialogs.cpp, the look from theme.h.
//
// Sections: [lifecycle] [results and requests] [frame] [layout] [actions] [fonts]
#include "app/gui/app.h"

#include <imgui.h>
#include <imgui_impl_glfw.h>
#include <imgui_impl_opengl3.h>
#include <imgui_stdlib.h>

#include <GLFW/glfw3.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdio>
#include <filesystem>

#include "app/common/assets.h"
#include "app/common/print_message.h"
#include "app/gui/capture.h"
#include "app/gui/commands.h"
#include "app/gui/glyphs.h"
#include "app/gui/key_taps.h"
#include "app/gui/layout_check.h"
#include "app/gui/render/gl.h"
#include "app/gui/panels/panels.h"
#include "app/gui/theme.h"
#include "app/gui/ui_widgets.h"
#include "core/io/checkpoint.h"
#include "core/io/file_io.h"
#include "core/io/hf_model.h"
#include "core/io/run_export.h"
#include "core/inspect/predictions.h"
#include "core/model/model.h"
#include "core/text/utf8.h"

namespace headmap {

// ---- [lifecycle] -----------------------------------------------------------------------
App::App(GLFWwindow* w, Preferences p, Presets presets)
    : window(w), prefs(p), presets_(std::move(presets)), worker_([] { glfwPostEmptyEvent(); }), training_([] { glfwPostEmptyEvent(); }),
      corpus_([] { glfwPostEmptyEvent(); }) {
  state.font_scale = p.font_scale;
  state.view.colormap = p.colormap;
  state.view.norm = p.norm;
  state.view.log_scale = p.log_scale;
  state.view.grid_lines = p.grid_lines;
  last_swap = std::chrono::steady_clock::now();
}

App::~App() {
  if (persist) save_preferences_now();
}

Status App::init() {
  if (Status s = renderer_.init(); !s) return s;
  install_glyph_input(window);  // typed emoji and the clipboard through the atlas's aliases
  if (Result<std::string> ini = load_imgui_ini()) ImGui::LoadIniSettingsFromMemory(ini->data(), ini->size());
  last_cfg_ = state.cfg;
  return Status();
}

bool App::should_close() const { return glfwWindowShouldClose(window) || (script && script->finished); }

bool App::fresh() const {
  // The inputs are compared as they are now, not through last frame's stale flag: a model
  // read in the background is adopted at the top of a frame (sync_model_loader), before
  // post_request_if_changed asks for its maps, and a script looking in between saw the old
  // result as fresh (Compare's B was reported with no heads, CI 2026-11-28).
  return state.result && state.result->fwd && !state.stale && !worker_.busy() && deferred_drawn_ == 0 &&
         (!glyphs().dirty() || fonts_failed_) &&  // and every character's glyph in the atlas
         compute_request(state) == last_request_;
}

void App::save_preferences_now() {
  prefs.font_scale = state.font_scale;
  prefs.colormap = state.view.colormap;
  prefs.norm = state.view.norm;
  prefs.log_scale = state.view.log_scale;
  prefs.grid_lines = state.view.grid_lines;
  if (!state.fullscreen) glfwGetWindowSize(window, &prefs.window_w, &prefs.window_h);
  if (Status s = save_preferences(prefs); !s) print_message("headmap", s.error().message);
  size_t n = 0;
  const char* ini = ImGui::SaveIniSettingsToMemory(&n);
  if (Status s = save_imgui_ini(ini, n); !s) print_message("headmap", s.error().message);
}

void App::capture(const std::string& path, float x, float y, float w, float h, std::function<void(const Status&)> done) {
  captures_.push_back({path, x, y, w, h, std::move(done)});
}

// ---- [results and requests] ------------------------------------------------------------
void App::accept(std::shared_ptr<const ComputeResult> r) {
  answered_seq_ = std::max(answered_seq_, r->seq);
  if (r->seq <= dropped_seq_) return;  // asked before a lesson step that cannot be computed (animate_lesson_step)
  if (r->error) {  // e.g. a batch too large, a checkpoint that would not load: the last result stays
    state.compute_error = r->error->message;
    refused_ = r->request;
    return;
  }
  state.compute_error.clear();
  refused_.reset();
  if (view_after_open_ && r->fwd && r->request.cfg == state.cfg) {
    std::tie(state.view, state.selected_token) = *view_after_open_;
    view_after_open_.reset();
  }
  if (r->fwd) {  // what this model costs, for predicted_compute_ms (a pass's late next tokens too:
    // without them GPT-2's passes looked small enough to wait for in the frame, and missed it)
    size_t chars = 0;
    for (const std::string& l : r->request.lines) chars += l.size() + 1;
    const ForwardData::Late* late = r->fwd->late_ready();
    const ComputeCost cost{r->request.cfg.d_model, r->request.cfg.num_layers, r->request.weights, r->request.cfg.seed, chars,
                           r->fwd->compute_cpu_ms + (late ? late->cpu_ms : 0.0)};
    auto same = std::find_if(costs_.begin(), costs_.end(), [&](const ComputeCost& c) {
      return c.d_model == cost.d_model && c.layers == cost.layers && c.weights == cost.weights;
    });
    if (same != costs_.end()) *same = cost;
    else if (costs_.size() < 32) costs_.push_back(cost);
  }
  if (state.result && state.result->fwd && r->fwd && !state.result->request.same_forward(r->request)) state.previous_passport = state.result->fwd->passport;
  if (state.result) {  // the maps of what it replaces are no longer shown: their textures go (unless this result shares them)
    const ComputeResult& old = *state.result;
    for (const void* o : {static_cast<const void*>(&old), static_cast<const void*>(old.fwd.get()), static_cast<const void*>(old.baseline.get())})
      if (o != r.get() && o != r->fwd.get() && o != r->baseline.get()) renderer_.retire_owner(o);
  }
  state.result = std::move(r);
  state.stale = !(state.result->request == last_request_);
  deferred_drawn_ = -1;  // its maps are not drawn yet
}

void App::note_config_change(const ModelConfig& before) {
  const ModelConfig& c = state.cfg;
  std::string what;
  auto add = [&](const char* name, long a, long b) {
    if (a != b) what += (what.empty() ? "" : ", ") + std::string(name) + " " + std::to_string(a) + " \xE2\x86\x92 " + std::to_string(b);
  };
  add("d_model", before.d_model, c.d_model);
  add("num_heads", before.num_heads, c.num_heads);
  add("layers", before.num_layers, c.num_layers);
  add("context", before.context, c.context);
  if (before.causal != c.causal) what += (what.empty() ? "" : ", ") + std::string(c.causal ? "causal on" : "causal off");
  if (before.pitfalls != c.pitfalls) what += (what.empty() ? "" : ", ") + std::string("pitfalls changed");
  if (!what.empty()) {
    state.last_change = what;
    state.changed_at = std::chrono::steady_clock::now();
  }
}

void App::sync_training() {
  if (state.train_request) {
    if (!training_.start(std::move(*state.train_request))) state.status_lines.push_back("A training is already running.");
    state.train_request.reset();
  }
  if (state.train_cancel_request) {
    training_.cancel();
    state.train_cancel_request = false;
  }
  const uint64_t before = state.training.snapshot_id;
  state.training = training_.status();
  if (state.train_cancel_at_step > 0 && state.training.running && state.training.progress.step >= state.train_cancel_at_step) {
    training_.cancel();  // as the Cancel button does
    state.train_cancel_at_step = 0;
  }
  // The heatmaps follow the snapshots of the followed run, and keep its final weights.
  if (state.training.snapshot && state.training.snapshot_id != before && state.follow_training) {
    state.session = state.training.snapshot;
    ++state.session_id;
  }
}

void App::post(ComputeRequest r) {
  last_posted_seq = worker_.request(std::move(r));
}

bool App::post_and_wait(ComputeRequest r) {
  const auto t0 = std::chrono::steady_clock::now();
  post(std::move(r));
  const auto budget = std::chrono::microseconds(static_cast<int64_t>(kSameFrameBudgetMs * 1000));
  std::shared_ptr<const ComputeResult> res = worker_.wait_for(last_posted_seq, budget);
  waited_ms_ += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  if (!res) return false;
  accept(std::move(res));
  return true;
}

// Same-frame results for the text box: when its edit makes a request predicted to finish
// within the budget, it is posted and awaited here, in the middle of the frame's one pass,
// so the chips, predictions and heads drawn after the box show the new text. Other inputs
// (and a request that misses its wait) go through frame()'s two-pass path.
void App::answer_text_now() {
  if (!first_pass_) return;
  keep_masks_on_their_tokens(state);  // encoders: no stale [MASK] after an edit
  ComputeRequest req = compute_request(state, &state.weights_note);
  if (!validate(state.cfg).ok() || (posted_any_ && req == last_request_) || predicted_compute_ms(req) > kSameFrameBudgetMs) return;
  last_request_ = req;
  posted_any_ = true;
  unposted_.reset();
  if (post_and_wait(std::move(req))) same_frame_ = true;
}

void App::animate_lesson_step() {
  const auto now = std::chrono::steady_clock::now();
  if (state.lesson.open() && state.lesson.stepped_at != lesson_stamp_) {  // a step was just applied
    lesson_stamp_ = state.lesson.stepped_at;
    heads_anim_.clear();
    // A step whose configuration is invalid (a lesson on divisibility) shows its message and
    // no maps: never the maps of the step before, with that step's pitfall, beside text about
    // this one. Answers to requests made before it are dropped too.
    if (!validate(state.cfg).ok()) {
      dropped_seq_ = last_posted_seq;
      posted_any_ = false;  // the next valid state is asked for again, even if it equals the last request
      unposted_.reset();
      state.result.reset();
      state.previous_passport.reset();
      state.stale = false;
    }
    ModelConfig from = last_cfg_, to = state.cfg;
    from.num_heads = to.num_heads;
    if (from == to && last_cfg_.num_heads != to.num_heads && validate(last_cfg_).ok() && validate(state.cfg).ok()) {
      for (int h : valid_head_counts(to.d_model))
        if ((h > last_cfg_.num_heads && h <= to.num_heads) || (h < last_cfg_.num_heads && h >= to.num_heads)) heads_anim_.push_back(h);
      if (to.num_heads < last_cfg_.num_heads) std::reverse(heads_anim_.begin(), heads_anim_.end());
      if (heads_anim_.size() < 2) heads_anim_.clear();
      else state.cfg.num_heads = heads_anim_.front(), heads_anim_at_ = now;
    }
  } else if (!heads_anim_.empty()) {
    if (!state.lesson.open() || state.cfg.num_heads != heads_anim_.front()) {
      heads_anim_.clear();  // the user took the slider, or closed the lesson
    } else if (now - heads_anim_at_ >= std::chrono::milliseconds(kHeadsAnimMs)) {
      heads_anim_.erase(heads_anim_.begin());
      if (!heads_anim_.empty()) state.cfg.num_heads = heads_anim_.front(), heads_anim_at_ = now;
    }
    if (heads_anim_.size() == 1 && state.cfg.num_heads == heads_anim_.front()) heads_anim_.clear();  // arrived
  }
  state.lesson.animating = !heads_anim_.empty();
  if (state.lesson.animating) glfwPostEmptyEvent();  // the next step of the slider, without input
}

void App::post_request_if_changed() {
  animate_lesson_step();
  if (!cfg_seen_ || !(state.cfg == last_cfg_)) {
    // The first frame's configuration is where the app starts (the model's own D, H, L and
    // context are set after init), not a change for the passport to announce.
    if (cfg_seen_) note_config_change(last_cfg_);
    last_cfg_ = state.cfg;
    cfg_seen_ = true;
  }
  keep_masks_on_their_tokens(state);  // encoders: no stale [MASK] after an edit
  ComputeRequest req = compute_request(state, &state.weights_note);
  state.config_status = validate(state.cfg);
  if (!state.config_status.ok()) return;  // the message is on screen; the last result stays
  if (!posted_any_ || !(req == last_request_)) {
    last_request_ = req;
    if (predicted_compute_ms(req) <= kSameFrameBudgetMs) unposted_ = std::move(req);  // frame() posts it and waits
    else post(std::move(req));                                                        // asynchronous, at once
    posted_any_ = true;
  }
  // Stale: the result on screen is older than the inputs, unless the worker refused them.
  state.stale = (!state.result || !(state.result->request == last_request_)) && !(refused_ && *refused_ == last_request_);
}

// ---- [frame] ---------------------------------------------------------------------------
void App::frame() {
  const auto frame_start = std::chrono::steady_clock::now();
  while (std::shared_ptr<const ComputeResult> r = worker_.take()) accept(std::move(r));
  state.contrib.patch_progress = worker_.patch_progress();
  sync_training();
  sync_model_loader();
  sync_corpus();
  sync_lesson_export();
  generate_step();
  state.font_scale = std::clamp(state.font_scale, kFontScaleMin, kFontScaleMax);
  if (built_font_scale_ != state.font_scale || (glyphs().dirty() && !fonts_failed_)) rebuild_fonts();
  for (; fonts_noted_ < glyphs().notes().size(); ++fonts_noted_) state.status_lines.push_back(glyphs().notes()[fonts_noted_]);

  // A scripted File dialog opens with its path; draw_dialogs presses its OK once it has been
  // drawn (the first frame of an auto-sized window is not shown).
  if (state.dialog_request) {
    open_dialog(state.dialog_request->dialog);
    dialog_path_ = state.dialog_request->path;
    // Only a scripted run presses OK, and only for what its own command line asked (--then):
    // in a normal run a dialog waits for the person, whatever set the request (issue 35, F1).
    scripted_ok_in_ = state.dialog_request->press_ok && script ? 3 : 0;
    state.dialog_request.reset();
  }
  // An export's capture is taken in a frame with no dialog, menu or popup open.
  // The heads PNG waits for a frame after one that drew the Heads tab's maps (dialog_ok brought it to the front).
  const bool heads_on_screen = state.view.center == CenterPanel::Heads && state.heads_maps_drawn > 0;
  capture_frame_ = pending_capture_.has_value() && !ImGui::IsPopupOpen("", ImGuiPopupFlags_AnyPopupId) &&
                   (pending_capture_->dialog != Dialog::ExportHeadsPng || heads_on_screen || heads_capture_waited_++ > 30);
  if (pending_capture_ && !capture_frame_) glfwPostEmptyEvent();  // the next frame at once
  if (capture_frame_) heads_capture_waited_ = 0;

  std::fill(std::begin(state.heads_figure), std::end(state.heads_figure), 0.0f);  // draw_heads sets it
  renderer_.begin_frame();
  same_frame_ = false;
  waited_ms_ = 0;
  draw_ui(true);
  // Same-frame results: when this frame made a request that is predicted to finish within
  // the budget, post it, wait for it (boundedly) and draw the panels again with it, so the
  // frame that takes the input shows its heads. Larger requests stay asynchronous.
  int grid_passes = state.heads_maps_drawn > 0;
  if (unposted_) {
    ComputeRequest req = std::move(*unposted_);
    unposted_.reset();
    if (post_and_wait(std::move(req))) {
      ImGui::EndFrame();
      draw_ui(false);
      same_frame_ = true;
      grid_passes += state.heads_maps_drawn > 0;
    }
  }
  deferred_drawn_ = renderer_.deferred();
  if (same_frame_) ++pass_counts.same_frame;
  if (grid_passes > 1) ++pass_counts.grid_twice;
  using Ms = std::chrono::duration<double, std::milli>;
  const auto panels_done = std::chrono::steady_clock::now();
  renderer_.flush();  // the maps coloured for this frame, uploaded at once
  const auto coloured = std::chrono::steady_clock::now();
  ImGui::Render();
  if (hook::on()) {  // for the observer (--report): what this frame cut off, and its draw calls
    hook::set_texts("clipped", find_clipped(ImGui::GetDrawData(), {"##text"}));
    const ImDrawData* dd = ImGui::GetDrawData();
    int draw_calls = 0;
    for (int i = 0; i < dd->CmdListsCount; ++i) draw_calls += dd->CmdLists[i]->CmdBuffer.Size;
    hook::set_int("draw_calls", draw_calls);
  }
  int fb_w = 0, fb_h = 0;
  glfwGetFramebufferSize(window, &fb_w, &fb_h);
  const bool pixels = !script || script->draws_pixels() || capture_frame_ || !captures_.empty();
  if (pixels) {
    glViewport(0, 0, fb_w, fb_h);
    const ImVec4 bg = ImGui::GetStyle().Colors[ImGuiCol_WindowBg];
    glClearColor(bg.x, bg.y, bg.z, 1.0f);
    glClear(GL_COLOR_BUFFER_BIT);
    ImGui_ImplOpenGL3_RenderDrawData(ImGui::GetDrawData());
  }
  const auto drawn = std::chrono::steady_clock::now();

  // Captures read the finished back buffer, before the swap.
  if (capture_frame_) {
    const PendingCapture p = std::move(*pending_capture_);
    pending_capture_.reset();
    auto done_msg = [this, path = p.path](const Status& s) {
      if (s) state.status_lines.push_back("Wrote " + path);
      else {
        state.error_popup = s.error().message;
        print_message("headmap", s.error().message);
      }
    };
    const float* fig = state.heads_figure;  // the grid and its legend; the whole panel if they were not drawn
    if (p.dialog == Dialog::ExportHeadsPng && fig[2] > fig[0] && fig[3] > fig[1]) capture(p.path, fig[0], fig[1], fig[2] - fig[0], fig[3] - fig[1], done_msg);
    else if (p.dialog == Dialog::ExportHeadsPng) capture(p.path, heads_rect_[0], heads_rect_[1], heads_rect_[2], heads_rect_[3], done_msg);
    else capture(p.path, 0, 0, 0, 0, done_msg);
  }
  if (!captures_.empty()) {
    int win_w = 0, win_h = 0;
    glfwGetWindowSize(window, &win_w, &win_h);
    const float sx = win_w ? static_cast<float>(fb_w) / win_w : 1.0f, sy = win_h ? static_cast<float>(fb_h) / win_h : 1.0f;
    for (const Capture& c : captures_) {
      const bool whole = c.w <= 0 || c.h <= 0;
      const int x = whole ? 0 : static_cast<int>(c.x * sx), y = whole ? 0 : static_cast<int>(c.y * sy);
      const int w = whole ? fb_w : static_cast<int>(c.w * sx), h = whole ? fb_h : static_cast<int>(c.h * sy);
      const Status s = capture_png(c.path, std::max(0, x), std::max(0, y), std::min(w, fb_w - x), std::min(h, fb_h - y), fb_h);
      if (c.done) c.done(s);
    }
    captures_.clear();
  }
  if (pixels) glfwSwapBuffers(window);
  last_swap = std::chrono::steady_clock::now();
  if (state.result && deferred_drawn_ == 0) worker_.shown(state.result->seq);  // its late work may take the cores now
  if (renderer_.deferred() > 0) glfwPostEmptyEvent();  // maps wait for the next frames' upload budget
  if (glyphs().dirty()) glfwPostEmptyEvent();           // a new character: the next frame adds its glyph
  last_frame_ms = Ms(last_swap - frame_start).count();
  last_frame_parts = {Ms(panels_done - frame_start).count(), Ms(coloured - panels_done).count(), Ms(drawn - coloured).count(),
                      Ms(last_swap - drawn).count(), waited_ms_};
  if (script) script->after_swap(*this);

  ImGuiIO& io = ImGui::GetIO();
  if (io.WantSaveIniSettings && persist) {
    size_t n = 0;
    const char* ini = ImGui::SaveIniSettingsToMemory(&n);
    if (Status s = save_imgui_ini(ini, n); !s) state.status_lines.push_back(s.error().message);
    io.WantSaveIniSettings = false;
  }
}

// One pass of the panels. The first pass of a frame takes the input (the script's and the
// shortcuts'); a second pass, after a same-frame result, only draws.
void App::draw_ui(bool first) {
  first_pass_ = first;
  ImGui_ImplOpenGL3_NewFrame();
  ImGui_ImplGlfw_NewFrame();
  if (capture_frame_) {  // an export's picture: nothing hovered, no tooltip
    ImGui::GetIO().MousePos = ImVec2(-FLT_MAX, -FLT_MAX);
    state.hover_token = state.hover_key = -1;
  }
  state.heads_capture = capture_frame_ && pending_capture_ && pending_capture_->dialog == Dialog::ExportHeadsPng;
  if (first)  // the releases of taps the last frame saw pressed (key_taps.h)
    for (const KeyTaps::Event& e : key_taps().before_frame()) ImGui_ImplGlfw_KeyCallback(window, e.key, e.scancode, e.action, e.mods);
  ImGui::NewFrame();
  renderer_.begin_pass();
  if (FrameRecorder* rec = frame_recorder()) rec->begin_frame();
  state.heads_maps_drawn = 0;
  if (first && script) script->before_draw(*this);
  if (first) run_shortcuts(*this);
  state.hover_head = -1;  // the heads panel sets it again while a map is under the mouse
  draw_layout();
  if (!ImGui::IsAnyItemHovered()) state.hover_token = state.hover_key = -1;  // the pointer left the chips and maps
  draw_dialogs();
  post_request_if_changed();
  hook::set_flag("stale", state.stale);
  hook::set_text("colormap", colormap_name(state.view.colormap));
}

// The compute time a request is expected to take when the frame waits for it: the last
// measured time of the same model (d_model, layers, weights; the worker's CPU time, which
// frames drawn beside an asynchronous request do not inflate), scaled by the text's length;
// unknown models are "long".
double App::predicted_compute_ms(const ComputeRequest& r) const {
  size_t chars = 0;
  for (const std::string& l : r.lines) chars += l.size() + 1;
  auto scaled = [&](const ComputeCost& c) {  // attention grows with T^2; short texts are mostly linear
    const double ratio = std::max(1.0, static_cast<double>(chars) / std::max<size_t>(c.chars, 1));
    return c.ms * ratio * ratio;
  };
  for (const ComputeCost& c : costs_)
    if (c.d_model == r.cfg.d_model && c.layers == r.cfg.num_layers && c.weights == r.weights) return scaled(c);
  // Weights already in memory (a shipped checkpoint, read at start; a trained session) but
  // not measured yet: another model of the same size costs about the same (a new
  // configuration's induction probe follows the maps, so it adds nothing to the wait).
  if (r.weights.in_memory || r.weights.loaded)
    for (const ComputeCost& c : costs_)
      if (c.d_model == r.cfg.d_model && c.layers == r.cfg.num_layers) return scaled(c);
  // Random weights of the same d_model and seed as a model measured with at least as many
  // layers: the worker shares them (nothing to draw), and this size has not been measured.
  // Worth a try in the frame: the wait is bounded, and a miss turns asynchronous.
  if (r.weights.random_init())
    for (const ComputeCost& c : costs_)
      if (c.weights == r.weights && c.seed == r.cfg.seed && c.d_model == r.cfg.d_model && c.layers >= r.cfg.num_layers)
        return kSameFrameBudgetMs;
  return 1e9;
}

// ---- [layout] --------------------------------------------------------------------------
void App::draw_layout() {
  const ImGuiViewport* vp = ImGui::GetMainViewport();
  ImGui::SetNextWindowPos(vp->WorkPos);
  ImGui::SetNextWindowSize(vp->WorkSize);
  const ImGuiWindowFlags flags = ImGuiWindowFlags_NoDecoration | ImGuiWindowFlags_NoMove | ImGuiWindowFlags_NoResize |
                                 ImGuiWindowFlags_MenuBar | ImGuiWindowFlags_NoBringToFrontOnFocus | ImGuiWindowFlags_NoSavedSettings |
                                 ImGuiWindowFlags_NoBackground;  // the clear colour is the background: no full-window blend
  ImGui::PushStyleVar(ImGuiStyleVar_WindowRounding, 0.0f);
  ImGui::Begin("headmap", nullptr, flags);
  ImGui::PopStyleVar();
  draw_menu();

  // Three columns when they fit at this font size; else the passport becomes a tab (two
  // columns); else the sentence and model controls too (tabs only). Nothing is cut off.
  const float total = ImGui::GetContentRegionAvail().x;
  const float gap = ImGui::GetStyle().ItemSpacing.x, em = ImGui::GetFontSize();
  // The presenter's big heads take the whole width (the sentence and model stay a tab away).
  const bool presenting = state.view.big_heads > 0 && !state.force_three_columns &&
                          (state.view.center == CenterPanel::Heads || state.view.center == CenterPanel::Input);
  const bool three = state.force_three_columns ||
                     (!presenting && total >= (kSentenceColumnMinEm + kPassportColumnMinEm + kViewsColumnMinEm) * em + 2 * gap);
  // A lesson on a small screen: the player becomes a column beside the views (full height)
  // and the sentence and model controls a tab, so the maps are large enough to read.
  const bool lesson_side = state.lesson.open() && !three;
  const bool two = !three && !presenting && !lesson_side && total >= (kSentenceColumnMinEm + kViewsColumnMinEm) * em + gap;
  hook::set_text("layout", three ? "three columns" : two ? "two columns" : "tabs");
  if (state.view.center == CenterPanel::Input && (three || two)) state.view.center = CenterPanel::Heads;  // it has its column again
  // The full passport has its own tab; while it is open the compact one steps aside.
  const bool side_passport = three && state.view.center != CenterPanel::Passport;
  const float left_min = state.force_three_columns ? kSentenceColumnMin : std::max(kSentenceColumnMin, kSentenceColumnMinEm * em);
  const float left_w = three || two ? std::max(left_min, total * (three ? kSentenceColumnFraction : kSentenceColumnFractionTwo)) : 0.0f;
  const float right_min = state.force_three_columns ? kPassportColumnMin : std::max(kPassportColumnMin, kPassportColumnMinEm * em);
  const float right_w = side_passport ? std::max(right_min, total * kPassportColumnFraction) : 0.0f;
  const float lesson_w = lesson_side ? std::max(kLessonColumnMinEm * em, total * kLessonColumnFraction) : 0.0f;
  const float center_w = side_passport ? std::max(kViewsColumnMin, total - left_w - right_w - 2 * gap)
                         : lesson_side ? std::max(kViewsColumnMin, total - lesson_w - gap)
                                       : 0.0f;
  // The lesson player, a strip along the bottom at the height its text needs (at most 40% of
  // the window; beyond that it scrolls), under all three columns.
  const float avail_h = ImGui::GetContentRegionAvail().y;
  const float lesson_h = state.lesson.open() && !lesson_side ? std::min(lesson_panel_height(state, total), 0.4f * avail_h) : 0.0f;
  const float columns_h = lesson_h > 0 ? -(lesson_h + ImGui::GetStyle().ItemSpacing.y) : 0.0f;

  auto draw_input = [&] {
    draw_sentence(state, presets_);
    answer_text_now();  // a keystroke's small result, before anything below draws the result
    draw_sentence_tokens(state);
    draw_predictions(state);
    draw_contrib(state);
    ImGui::Spacing();
    ImGui::Separator();
    ImGui::TextUnformatted("Model");
    draw_controls(state);
    if (!state.opening_model.empty()) {
      ImGui::Separator();
      ImGui::PushStyleColor(ImGuiCol_Text, kPendingColour);
      ImGui::TextWrapped("Opening %s... (the current model stays until it is read)", state.opening_model.c_str());
      ImGui::PopStyleColor();
    }
    if (!state.status_lines.empty()) {
      ImGui::Separator();
      const size_t shown = kStatusLinesShown, first = state.status_lines.size() > shown ? state.status_lines.size() - shown : 0;
      for (size_t i = first; i < state.status_lines.size(); ++i) {
        ImGui::TextWrapped("%s", state.status_lines[i].c_str());
        hook::add_text("messages", state.status_lines[i]);
      }
    }
  };
  if (left_w > 0) {
    ImGui::BeginChild("left", ImVec2(left_w, columns_h), true);
    draw_input();
    ImGui::EndChild();
    ImGui::SameLine();
  }
  ImGui::BeginChild("center", ImVec2(center_w, columns_h), true);
  const ImVec2 cp = ImGui::GetWindowPos(), cs = ImGui::GetWindowSize();
  heads_rect_[0] = cp.x;
  heads_rect_[1] = cp.y;
  heads_rect_[2] = cs.x;
  heads_rect_[3] = cs.y;
  hook_widget("views", cp, ImVec2(cp.x + cs.x, cp.y + cs.y));  // the center panel (tests compare its pixels)
  hook::set_rect("heads_panel", ImVec2(cp.x, cp.y), ImVec2(cp.x + cs.x, cp.y + cs.y));
  if (ImGui::BeginTabBar("views")) {
    // A lesson step just applied selects its view's tab (with the Input tab first, the tab
    // bar would otherwise open on it).
    const bool stepped = state.lesson.open() && state.lesson.stepped_at != lesson_tab_stamp_;
    if (stepped) lesson_tab_stamp_ = state.lesson.stepped_at;
    const bool switch_tab = state.view.center != last_center_ || stepped;
    // The tab drawn open this pass: a panel that sets view.center while drawing (a click
    // that opens Focus) is then seen as a switch in the next frame.
    std::optional<CenterPanel> shown;
    auto tab = [&](const char* label, CenterPanel p) {
      const ImGuiTabItemFlags f = switch_tab && state.view.center == p ? ImGuiTabItemFlags_SetSelected : 0;
      const bool open = ImGui::BeginTabItem(label, nullptr, f);
      hook_widget(label);
      if (open && !switch_tab) state.view.center = p;
      if (open) shown = p;
      return open;
    };
    if (!(three || two) && tab("Input", CenterPanel::Input)) {
      ImGui::BeginChild("input");
      draw_input();
      ImGui::EndChild();
      ImGui::EndTabItem();
    }
    if (tab("Heads", CenterPanel::Heads)) {
      draw_heads(state, renderer_);
      ImGui::EndTabItem();
    }
    if (tab("Focus", CenterPanel::Focus)) {
      draw_focus(state, renderer_);
      ImGui::EndTabItem();
    }
    // Narrow: shorter tab names, so they are read whole rather than cut to "Mode...".
    // Narrow (two columns, tabs): no room for a seventh tab whose name is read whole, so the
    // Contributions views share the Model tab, as sub-tabs beside the layers x heads view.
    const CenterPanel model_p = !three && state.view.center == CenterPanel::Contrib ? CenterPanel::Contrib : CenterPanel::Model;
    if (tab(three ? "Model view###model" : "Model###model", model_p)) {
      if (three) draw_model(state, renderer_);
      else draw_contributions(state, renderer_, true);
      ImGui::EndTabItem();
    }
    if (tab("Passport", CenterPanel::Passport)) {
      draw_passport(state, true);
      ImGui::EndTabItem();
    }
    if (three && tab("Contributions", CenterPanel::Contrib)) {
      draw_contributions(state, renderer_, false);
      ImGui::EndTabItem();
    }
    if (tab("Compare", CenterPanel::Compare)) {
      draw_compare(state, renderer_);
      ImGui::EndTabItem();
    }
    if (tab(state.training.running ? (three ? "Training \xE2\x97\x8F###training" : "Train \xE2\x97\x8F###training")
                                   : (three ? "Training###training" : "Train###training"),
            CenterPanel::Training)) {
      draw_training(state);
      ImGui::EndTabItem();
    }
    last_center_ = shown && !switch_tab ? *shown : state.view.center;
    ImGui::EndTabBar();
  }
  ImGui::EndChild();

  if (side_passport) {
    ImGui::SameLine();
    ImGui::BeginChild("right", ImVec2(0, columns_h), true);
    ImGui::TextUnformatted("Shape passport");
    ImGui::Separator();
    draw_passport(state, false);
    ImGui::EndChild();
  }
  if (lesson_side) ImGui::SameLine();
  if (lesson_h > 0 || lesson_side) {
    ImGui::BeginChild("lesson", ImVec2(0, 0), true);
    draw_lesson(state, lesson_side);
    ImGui::EndChild();
  }
  ImGui::End();
}

// ---- [actions] -------------------------------------------------------------------------
void App::toggle_fullscreen() {
  GLFWmonitor* monitor = glfwGetPrimaryMonitor();
  if (!state.fullscreen && monitor) {
    glfwGetWindowPos(window, &windowed_pos_[0], &windowed_pos_[1]);
    glfwGetWindowSize(window, &windowed_pos_[2], &windowed_pos_[3]);
    const GLFWvidmode* mode = glfwGetVideoMode(monitor);
    glfwSetWindowMonitor(window, monitor, 0, 0, mode->width, mode->height, mode->refreshRate);
    state.fullscreen = true;
  } else if (state.fullscreen) {
    glfwSetWindowMonitor(window, nullptr, windowed_pos_[0], windowed_pos_[1], windowed_pos_[2], windowed_pos_[3], 0);
    state.fullscreen = false;
  }
}

void App::open_dialog(Dialog d) {
  dialog_ = d;
  dialog_path_ = dialog_proposed_path(d);  // never a file already there (heads-2.png after heads.png)
  if (d == Dialog::OpenModel) {
    dialog_path_ = state.pretrained ? state.pretrained_dir : state.checkpoint;  // the model open, if any
    cached_models_ = list_cached_models();  // what the local caches hold, read from the disk alone
  }
  dialog_error_.clear();
  scripted_ok_in_ = 0;
  state.export_head.reset();  // "Export this head": the head hovered or selected now, whatever the mouse does next
  if (d == Dialog::ExportHeadPng || d == Dialog::ExportHeadSvg) state.export_head = export_target(state);
}

Status App::dialog_ok(Dialog d, const std::string& path) {
  Status st;
  if (!dialog_captures(d)) {
    st = run_dialog_action(d, path, state);
  } else if (path.empty()) {
    st = Error{ErrorKind::InvalidArgument, "Give a file name for the PNG."};
  } else {
    // The heads PNG is the Heads tab's panel: from another tab (Contributions > Detectors) it
    // comes to the front first, or the capture would be that tab's panel.
    if (d == Dialog::ExportHeadsPng) state.view.center = CenterPanel::Heads;
    pending_capture_ = PendingCapture{d, path};  // frame() takes it once the dialog has closed
    glfwPostEmptyEvent();                        // at once, not at the next input
  }
  if (!st) print_message("headmap", st.error().message);
  return st;
}

void App::quit() { glfwSetWindowShouldClose(window, 1); }

void App::open_lesson_file(const std::string& path) {
  Result<Lesson> l = load_lesson(path);
  Status s = l ? open_lesson(state, std::make_shared<const Lesson>(std::move(l).value())) : Status(l.error());
  if (!s) {  // in the window and on the terminal; the current state stays
    print_message("headmap", s.error().message);
    state.error_popup = s.error().message;
  }
}

bool App::result_settled() const {
  if (worker_.busy() || loader_.busy() || compare_loader_.busy() || !state.compare_b.load_request.empty() || state.training.running ||
      state.train_request)
    return false;
  if (!state.config_status.ok()) return true;
  return answered() && (fresh() || !state.compute_error.empty());
}

// File > Export lesson: each step in turn is shown, and once its result is on screen the
// window is captured to DIR/NNN-SS.png; then the player returns to the step it was on.
void App::sync_lesson_export() {
  if (!state.lesson.export_request.empty()) {
    if (!state.lesson.open()) {
      state.error_popup = "Open a lesson first (Help > Lessons).";
    } else if (!lesson_export_.active()) {  // all slides or none (issue 35, F16), as lesson-export's
      Result<StagedFiles> staged = StagedFiles::open(state.lesson.export_request);
      if (staged) lesson_export_ = LessonExport{state.lesson.export_request, -1, state.lesson.step, 0, 0, false, std::move(*staged)};
      else print_message("headmap", state.error_popup = staged.error().message);
    }
    state.lesson.export_request.clear();
  }
  LessonExport& e = lesson_export_;
  if (!e.active() || e.capturing) return;
  const int n = static_cast<int>(state.lesson.lesson ? state.lesson.lesson->steps.size() : 0);
  auto finish = [&](const std::string& note) {
    if (state.lesson.open()) (void)go_to_lesson_step(state, std::clamp(e.back_to, 0, n - 1));
    state.status_lines.push_back(note);
    e = LessonExport();
  };
  if (!state.lesson.open()) return finish("The lesson was closed: the export stopped.");
  if (e.step < 0) {
    e.step = 0;
    e.frames = 0;
    if (Status s = go_to_lesson_step(state, 0); !s) return finish(s.error().message);
    return;
  }
  if (e.frames++ < 2 || !result_settled() || !heads_anim_.empty()) return;  // a frame drawn wholly with this step's result
  char file[64];
  std::snprintf(file, sizeof file, "%s-%02d.png", state.lesson.lesson->id.c_str(), e.step + 1);
  const std::string path = e.staged->stage(file);  // moved into e.dir once every slide is written
  e.capturing = true;
  capture(path, 0, 0, 0, 0, [this, n](const Status& s) {
    LessonExport& x = lesson_export_;
    x.capturing = false;
    if (!s) {
      state.error_popup = s.error().message;
      x.step = n;  // stop
    } else {
      ++x.written;
      ++x.step;
    }
    if (x.step >= n) {
      std::string note = "No slide was written to " + x.dir + ".";
      if (Result<std::vector<std::string>> put = x.written == n ? x.staged->commit() : Result<std::vector<std::string>>(Error{ErrorKind::Io, ""}))
        note = "Wrote " + std::to_string(x.written) + " slides to " + x.dir;
      else if (!put.error().message.empty()) print_message("headmap", state.error_popup = put.error().message);
      if (state.lesson.open()) (void)go_to_lesson_step(state, std::clamp(x.back_to, 0, n - 1));
      state.status_lines.push_back(note);
      x = LessonExport();
      return;
    }
    x.frames = 0;
    if (Status g = go_to_lesson_step(state, x.step); !g) {
      state.error_popup = g.error().message;
      x = LessonExport();
    }
  });
}

void App::step_lesson(int delta) {
  if (!state.lesson.open()) return;
  const int n = static_cast<int>(state.lesson.lesson->steps.size());
  const int to = std::clamp(state.lesson.step + delta, 0, n - 1);
  // Next on the last step (or Back on the first) restores the step, as the user may have moved things.
  if (Status s = go_to_lesson_step(state, to); !s) state.error_popup = s.error().message;
}

void App::toggle_light_theme() {
  prefs.light_theme = !prefs.light_theme;
  built_font_scale_ = 0;  // re-applies the style
}

void App::step_font(int direction) {
  if (direction > 0) state.font_scale = std::min(kFontScaleMax, state.font_scale * kFontStep);
  else if (direction < 0) state.font_scale = std::max(kFontScaleMin, state.font_scale / kFontStep);
  else state.font_scale = 1.0f;
}

void App::step_head(int delta) {
  const int H = std::max(1, state.result && state.result->fwd ? state.result->fwd->out.Hw : state.cfg.num_heads);
  state.view.head = ((state.view.head + delta) % H + H) % H;
}

void App::step_layer(int delta) {
  const int L = state.result && state.result->fwd ? state.result->fwd->out.L : state.cfg.num_layers;
  state.view.layer = std::max(0, std::min(L - 1, state.view.layer + delta));
}

// ---- [fonts] ---------------------------------------------------------------------------
void App::rebuild_fonts() {
  const auto t0 = std::chrono::steady_clock::now();
  ImGuiIO& io = ImGui::GetIO();
  // DejaVu Sans, and a glyph for every other character the text contains from the system
  // font that has it (glyphs.h); rebuilt when such a character first appears.
  const float scale = state.font_scale * state.content_scale;  // the user's size on the monitor's scale
  const float size = std::round(kFontPixels * scale);
  const std::string sans = asset_path("fonts/DejaVuSans.ttf");
  if (Status s = glyphs().build(*io.Fonts, sans, size); !s) {
    if (!fonts_failed_)
      state.status_lines.push_back("The font " + sans + " cannot be used (" + s.error().message +
                                   "): using Dear ImGui's built-in font (no \xE2\x88\x9A or \xC3\xB7, no other scripts).");
    fonts_failed_ = true;
    io.Fonts->Clear();
    ImFontConfig fc;
    fc.SizePixels = size;
    io.Fonts->AddFontDefault(&fc);
  }
  ImGui_ImplOpenGL3_DestroyFontsTexture();
  ImGui_ImplOpenGL3_CreateFontsTexture();
  apply_theme(prefs.light_theme, scale);
  built_font_scale_ = state.font_scale;
  glyphs().note_rebuild_ms(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
}

}  // namespace headmap
