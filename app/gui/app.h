// app.h: the desktop app: window, fonts, the frame loop, layout, and the hooks that let
// tests and benchmarks drive it. Panels live in panels/, menus and shortcuts in
// commands.h, what the dialogs do in dialogs.h, the look in theme.h.
//
// Frame order (Dear ImGui's canonical loop): poll events -> take the worker's result ->
// new frame -> draw the panels -> post a compute request if the inputs changed -> render
// -> captures -> swap.
#pragma once
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "app/gui/app_state.h"
#include "app/gui/dialogs.h"
#include "core/io/model_cache.h"
#include "app/gui/workers/compute_worker.h"
#include "app/gui/render/heatmap_renderer.h"
#include "app/gui/presets.h"
#include "app/gui/settings.h"
#include "app/gui/workers/corpus_worker.h"
#include "app/gui/workers/model_loader.h"
#include "core/io/staged_files.h"
#include "app/gui/workers/training_worker.h"

struct GLFWwindow;

namespace headmap {

class App;

// A scripted driver: the screenshot mode, the GUI tests' actions, the benchmark session.
class Script {
 public:
  virtual ~Script() = default;
  virtual void before_draw(App& app) = 0;  // change the state as a user would
  virtual void after_swap(App& app) = 0;   // observe what reached the screen
  // How long the loop may sleep before the next frame (waking early on input or on the
  // worker's result). 0: draw continuously.
  virtual double wait_seconds(const App&) const { return 0.0; }
  // Whether this frame's pixels are drawn: Dear ImGui's lists rasterised and the buffers
  // swapped (a frame with a capture always is). The crawler reads the widgets each frame
  // submits, not its pixels, and draws only some (crawl.cpp).
  virtual bool draws_pixels() { return true; }
  bool finished = false;
  int exit_code = 0;
};

class App {
 public:
  App(GLFWwindow* window, Preferences prefs, Presets presets);
  ~App();
  Status init();
  void frame();
  bool should_close() const;

  // Captures the back buffer to a PNG at the end of this frame (before the swap).
  // rect: {x, y, w, h} in window pixels; w <= 0 means the whole window.
  void capture(const std::string& path, float x = 0, float y = 0, float w = 0, float h = 0,
               std::function<void(const Status&)> done = {});

  AppState state;
  std::unique_ptr<Script> script;
  GLFWwindow* window;
  uint64_t last_posted_seq = 0;    // the request the current inputs produced
  std::chrono::steady_clock::time_point last_swap;
  double last_frame_ms = 0;        // work of the last frame: from taking results to the swap
  // Where last_frame_ms went (ms): the panels' passes (a same-frame result's wait included),
  // the maps coloured and uploaded (HeatmapRenderer::flush), Dear ImGui's GL draw, the swap;
  // and, within panels, the wait for a same-frame result.
  struct FrameParts {
    double panels = 0, colour = 0, gl_draw = 0, swap = 0, wait = 0;
  } last_frame_parts;
  bool same_frame() const { return same_frame_; }  // the last frame drew the result of the request it posted
  // Since the start: frames that drew a same-frame result, and frames whose two passes both
  // drew the heads grid (the second pass draws the same-frame result: see frame()).
  struct PassCounts {
    int same_frame = 0, grid_twice = 0;
  } pass_counts;
  bool busy() const { return worker_.busy() || animating(); }
  // Work whose progress is on screen (a model being read, a corpus search, patching, a
  // lesson's slider, an export): the loop draws every 50 ms (main.cpp). A forward pass shows
  // nothing until its result, which wakes the loop: frames drawn meanwhile only took the
  // cores from it (on the 1B shape a frame is ~20 ms of llvmpipe on two cores).
  bool animating() const {
    return loader_.busy() || compare_loader_.busy() || corpus_.busy() || !state.corpus.running.empty() || state.corpus.maps_request.has_value() ||
           (state.corpus.derived.search && !state.corpus.derived.maps_ready) || lesson_export_.active() || !heads_anim_.empty() ||
           worker_.patch_progress().second > 0;
  }
  // A model is being read: a read cannot be interrupted, so an app that gives up (--deadline)
  // leaves without waiting for it (main.cpp).
  bool loading() const { return loader_.busy() || compare_loader_.busy(); }
  bool fresh() const;  // a result is on screen and matches the current inputs
  bool answered() const { return !unposted_ && answered_seq_ == last_posted_seq; }  // the worker answered the newest request
  Preferences prefs;
  bool persist = true;  // save preferences and imgui.ini (off for scripted runs)

  // ---- actions: the command table (commands.h) runs these ----
  void open_dialog(Dialog d);    // with its default path
  // The OK of the File dialogs, the one path for a user's click or Enter and for a scripted
  // dialog (AppState::dialog_request). A capture (dialog_captures) is taken in the next
  // frame, drawn without the dialog and without hover; the rest run_dialog_action.
  Status dialog_ok(Dialog d, const std::string& path);
  // A scripted dialog not yet opened or OK'd, or an export capture not yet taken.
  bool dialog_pending() const {
    return state.dialog_request.has_value() || scripted_ok_in_ > 0 || pending_capture_.has_value() || !captures_.empty();
  }
  bool dialog_open() const { return dialog_ != Dialog::None; }
  void quit();
  void toggle_fullscreen();
  void toggle_light_theme();
  void step_font(int direction);  // +1 larger, -1 smaller, 0 normal size
  void step_head(int delta);      // the selection, wrapping around the heads
  void step_layer(int delta);     // the selection, clamped to the layers
  void open_lesson_file(const std::string& path);  // Help > Lessons; a bad file's message in the window and on the terminal
  void step_lesson(int delta);    // the lesson player's Next (+1) and Back (-1)

 private:
  void accept(std::shared_ptr<const ComputeResult> r);
  void draw_ui(bool first);
  double predicted_compute_ms(const ComputeRequest& r) const;
  void post_request_if_changed();
  void draw_layout();
  void draw_menu();
  void draw_dialogs();
  void rebuild_fonts();
  void note_config_change(const ModelConfig& before);
  void save_preferences_now();
  void sync_training();
  void sync_model_loader();
  void sync_corpus();  // Contributions > Corpus: a search started, cancelled, its progress, its answer adopted
  void sync_lesson_export();  // File > Export lesson: one window capture per step
  void generate_step();       // Generate: one greedy next token appended per fresh result (state.generate_tokens)
  // This step's result is on screen: nothing computing, and the newest inputs answered (a
  // result, a refusal) or not computable (an invalid config). The lesson export waits for it.
  bool result_settled() const;
  // A lesson step that only moves num_heads: the slider steps through the valid counts on
  // the way (one every kHeadsAnimMs), so the class sees the maps split and the passport move.
  void animate_lesson_step();
  static constexpr int kHeadsAnimMs = 180;
  std::vector<int> heads_anim_;  // the counts still to show, the step's own last
  std::chrono::steady_clock::time_point heads_anim_at_{}, lesson_stamp_{};

  Presets presets_;
  ComputeWorker worker_;
  TrainingWorker training_;
  ModelLoader loader_;
  ModelLoader compare_loader_;  // the Compare tab's B (CompareSource::load_request), beside File > Open's
  CorpusWorker corpus_;         // Contributions > Corpus's search
  HeatmapRenderer renderer_;
  // Same-frame results (frame()): requests predicted to take at most this long are waited for.
  // A frame at 60 Hz is about 17 ms; waiting up to 12 ms more keeps the frame that takes the
  // input under the 33 ms a frame may take, and shows its result a whole frame earlier than
  // an asynchronous answer would (measured against 4 ms: tests/bench/README.md).
  static constexpr double kSameFrameBudgetMs = 12.0;
  static constexpr int kGenerateCandidates = 16;  // Generate looks this far down the next-token list for one that stays on the line
  struct ComputeCost {  // the last measured compute of one model
    int d_model = 0, layers = 0;
    WeightsRef weights;
    uint64_t seed = 0;  // random init: the weights are this seed's
    size_t chars = 0;
    double ms = 0;
  };
  std::vector<ComputeCost> costs_;
  bool same_frame_ = false;
  double waited_ms_ = 0;  // this frame's waits for same-frame results (FrameParts::wait)
  ComputeRequest last_request_;               // the newest request (posted, or waiting in unposted_)
  bool posted_any_ = false;
  // A request small enough for a same-frame result, made during the pass: frame() posts it
  // after the pass and waits for it. Larger requests are posted at once.
  std::optional<ComputeRequest> unposted_;
  void post(ComputeRequest r);
  // Posts r and waits for it up to kSameFrameBudgetMs; true (and accepted) when it came.
  bool post_and_wait(ComputeRequest r);
  void answer_text_now();
  // Maps the last drawn frame left for later frames' upload budget (-1: a result taken
  // since, not drawn yet). fresh() reads this, not the renderer's count, which each pass
  // resets: a script asking before the pass draws saw 0 while uploads were still due.
  int deferred_drawn_ = -1;
  bool first_pass_ = true;  // draw_ui's first pass of this frame (the one that takes the input)
  std::optional<ComputeRequest> refused_;     // the request the worker refused (compute_error), if any
  uint64_t answered_seq_ = 0;
  uint64_t dropped_seq_ = 0;  // results of requests up to this one are not shown (a lesson step moved past them)
  ModelConfig last_cfg_;
  bool cfg_seen_ = false;  // last_cfg_ holds the configuration of a drawn frame
  float built_font_scale_ = 0;
  bool fonts_failed_ = false;  // DejaVu Sans could not be read: Dear ImGui's own font, said once
  size_t fonts_noted_ = 0;     // the glyph notes (a fallback font unreadable...) already shown
  bool light_theme_applied_ = false;
  CenterPanel last_center_ = CenterPanel::Heads;
  std::chrono::steady_clock::time_point lesson_tab_stamp_{};  // the lesson step whose view the tabs last selected
  struct Capture {
    std::string path;
    float x, y, w, h;
    std::function<void(const Status&)> done;
  };
  std::vector<Capture> captures_;
  struct LessonExport {  // File > Export lesson, under way
    std::string dir;
    int step = -1, back_to = 0, frames = 0, written = 0;
    bool capturing = false;
    std::optional<StagedFiles> staged;  // the slides so far; none in dir until the last is written
    bool active() const { return !dir.empty(); }
  } lesson_export_;
  std::optional<std::pair<ViewSettings, int>> view_after_open_;  // a view opened with its model: its selection, for the model's first result
  // File dialogs (dialogs.h): a path to type, and what to do with it.
  Dialog dialog_ = Dialog::None;
  std::string dialog_path_, dialog_error_;
  std::vector<CachedModel> cached_models_;  // File > Open model's list, read when it opens
  int scripted_ok_in_ = 0;  // a scripted dialog: frames until its OK is pressed (it is drawn first, as a user sees it)
  struct PendingCapture {
    Dialog dialog;
    std::string path;
  };
  std::optional<PendingCapture> pending_capture_;  // an export capture, for the next frame without a dialog
  int heads_capture_waited_ = 0;  // frames the heads PNG waited for the Heads tab's maps (at most 30, then taken as it is)
  bool capture_frame_ = false;                     // this frame takes it
  float heads_rect_[4] = {0, 0, 0, 0};  // the center panel on screen, for "export heads PNG"
  size_t status_seen_ = 0;     // state.status_lines' size when the menu bar last looked
  double status_since_ = -1e9;  // when its newest note came (ImGui time): shown in the menu bar for a while
  int windowed_pos_[4] = {100, 100, 1600, 1000};
};

}  // namespace headmap
