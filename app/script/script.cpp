// script.cpp: the screenshot/test driver and the responsiveness benchmark. The settings
// they apply live in settings_table.cpp.
//
// Sections: [screenshot driver] [benchmark]
#include "app/script/script.h"

#include <cmath>
#include <imgui.h>

#include <algorithm>
#include <cstring>
#include <cfloat>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>


#include "app/common/model_options.h"
#include "app/common/print_message.h"
#include "app/gui/frame_hooks.h"
#include "app/gui/settings.h"
#include "app/gui/glyphs.h"
#include "app/gui/render/gl.h"
#include "app/script/input.h"
#include <GLFW/glfw3.h>
#include "app/script/settings_table.h"
#include "core/io/config_json.h"
#include "core/io/file_io.h"
#include "core/inspect/metrics.h"
#include "core/model/model.h"
#include "core/text/utf8.h"

namespace headmap {
using Clock = std::chrono::steady_clock;

// Ready to be looked at: nothing computing or training, and the newest inputs answered (a
// result, a refusal) or not computable (an invalid config).
bool settled(const App& app) {
  if (app.busy() || app.state.training.running || app.state.train_request || app.dialog_pending() || app.state.generate_tokens > 0)
    return false;
  if (!app.state.config_status.ok()) return true;
  return app.answered() && (app.fresh() || !app.state.compute_error.empty());
}

// ---- [screenshot driver] -------------------------------------------------------------
namespace {
class ScreenshotScript : public Script {
 public:
  ScreenshotScript(ScreenshotOptions o, std::vector<InputStep> steps) : o_(std::move(o)), start_(Clock::now()), input_(std::move(steps)) {
    const DecodedText d = decode_utf8(o_.type);
    chars_ = d.codepoints;
  }

  void before_draw(App& app) override {
    // The pointer of a virtual display rests mid-screen; keep it out of the picture unless
    // asked. During --input steps the pointer is the real one, where the steps moved it.
    if (phase_ != Phase::Input) ImGui::GetIO().MousePos = o_.mouse_x >= 0 ? ImVec2(o_.mouse_x, o_.mouse_y) : ImVec2(-FLT_MAX, -FLT_MAX);
    if (Clock::now() - start_ > std::chrono::duration<double>(o_.deadline_s)) {
      std::fprintf(stderr, "headmap: the screenshot timed out waiting for the model (after %.0f s; --deadline sets it).\n", o_.deadline_s);
      finished = true;
      exit_code = 1;
      return;
    }
    if (pressed_key_ >= 0) {  // "press=KEY" held for one frame: released now
      ImGui::GetIO().KeysDown[pressed_key_] = false;
      pressed_key_ = -1;
    }
    switch (phase_) {
      case Phase::WaitFirst:
        if (settled(app) && frames_++ >= 1) next(app);
        break;
      case Phase::Then:
        // "report=PATH": the report of what is on screen now (after a "wait"), mid-script.
        if (then_next_ < o_.then.size() && o_.then[then_next_].rfind("report=", 0) == 0) {
          if (frames_++ < 2 || !settled(app)) break;  // a frame drawn wholly after the result: this one
          report_after_swap_ = o_.then[then_next_].substr(7);
          ++then_next_;
          frames_ = 0;
          if (then_next_ >= o_.then.size()) next(app);
          break;
        }
        // "press=KEY": the key pressed in this frame (as a presenter's clicker would), then its result awaited.
        if (then_next_ < o_.then.size() && o_.then[then_next_].rfind("press=", 0) == 0) {
          const std::string k = o_.then[then_next_++].substr(6);
          const int key = k == "PageDown" ? GLFW_KEY_PAGE_DOWN : k == "PageUp" ? GLFW_KEY_PAGE_UP : k == "Right" ? GLFW_KEY_RIGHT
                        : k == "Left" ? GLFW_KEY_LEFT : k == "Down" ? GLFW_KEY_DOWN : k == "Up" ? GLFW_KEY_UP : -1;
          if (key < 0) {
            std::fprintf(stderr, "headmap: press wants PageDown, PageUp, Right, Left, Down or Up, got \"%s\"\n", k.c_str());
          } else {
            ImGuiIO& io = ImGui::GetIO();
            io.KeysDown[key] = true;
            io.KeysDownDuration[key] = 0.0f;  // pressed this frame: the shortcuts run after this
            pressed_key_ = key;
          }
          phase_ = Phase::WaitThen;
          frames_ = 0;
          break;
        }
        // Up to the next "wait" (or report, or press): those settings land in the same frame, as
        // one change. A File dialog is modal: the settings after it wait for its OK, as a
        // person's would (a second dialog in the same frame replaced the first, whose file was
        // never written).
        while (then_next_ < o_.then.size() && o_.then[then_next_] != "wait" && o_.then[then_next_].rfind("report=", 0) != 0 &&
               o_.then[then_next_].rfind("press=", 0) != 0) {
          if (Status s = apply_setting(app.state, o_.then[then_next_]); !s)
            print_message("headmap", s.error().message);
          ++then_next_;
          if (app.state.dialog_request) break;
        }
        if (then_next_ < o_.then.size() && o_.then[then_next_].rfind("report=", 0) == 0) {
          frames_ = 0;
          break;  // the next frames draw the settings, then the report is written
        }
        if (then_next_ < o_.then.size() && o_.then[then_next_] == "wait") ++then_next_;  // past the "wait"
        phase_ = Phase::WaitThen;
        frames_ = 0;
        break;
      case Phase::WaitThen:
        if (frames_++ >= 1 && settled(app)) next(app);
        break;
      case Phase::Type:
        if (!ImGui::GetIO().WantTextInput) {
          app.state.focus_text = true;  // the box takes focus next frame
        } else if (typed_ < chars_.size()) {
          type_char(static_cast<unsigned int>(chars_[typed_++]));  // as a keyboard types it
        } else {
          phase_ = Phase::WaitTyped;
          frames_ = 0;
        }
        break;
      case Phase::WaitTyped:
        if (frames_++ >= 1 && settled(app)) next(app);
        break;
      case Phase::Click: {  // this frame sees the right button pressed (after NewFrame, as
        // ImGui would have computed it from a press); the platform backend releases it next frame
        ImGuiIO& io = ImGui::GetIO();
        io.MouseDown[ImGuiMouseButton_Right] = io.MouseClicked[ImGuiMouseButton_Right] = true;
        io.MouseDownDuration[ImGuiMouseButton_Right] = 0.0f;
        clicked_ = true;
        phase_ = Phase::WaitTyped;  // then wait for the result, as after typing
        frames_ = 0;
        break;
      }
      case Phase::Frames:
        if (frames_++ >= o_.frames) {
          phase_ = Phase::Capture;
          app.capture(o_.path, 0, 0, 0, 0, [this, &app](const Status& s) { done(app, s); });
        }
        break;
      case Phase::Input:  // after_swap steps the input
      case Phase::Capture:
        break;
    }
  }
  void after_swap(App& app) override {
    if (!report_after_swap_.empty()) {  // "report=PATH": the frame just drawn
      write_report(app, report_after_swap_);
      report_after_swap_.clear();
    }
    // The --input steps look at the frame just drawn and inject the next frame's events.
    if (phase_ != Phase::Input || finished) return;
    for (std::string rep = input_.take_report(); !rep.empty(); rep = input_.take_report()) write_report(app, rep);
    if (Status s = input_.after_frame(app); !s) {
      print_message("headmap", s.error().message);
      finished = true;
      exit_code = 1;
    } else if (input_.done()) {
      phase_ = Phase::Frames;
      frames_ = 0;
    }
  }
  // While waiting for the model (or a training), sleep until it wakes us: spinning frames
  // would take the CPU the model needs.
  double wait_seconds(const App&) const override {
    if (phase_ == Phase::Input) return input_.waiting() ? 0.02 : 0.0;
    return phase_ == Phase::WaitFirst || phase_ == Phase::WaitThen || phase_ == Phase::WaitTyped ? 0.05 : 0.0;
  }

 private:
  enum class Phase { WaitFirst, Then, WaitThen, Type, WaitTyped, Click, Input, Frames, Capture };
  void next(App& app) {
    frames_ = 0;
    if ((phase_ == Phase::WaitFirst || phase_ == Phase::WaitThen) && then_next_ < o_.then.size()) phase_ = Phase::Then;
    else if ((phase_ == Phase::WaitFirst || phase_ == Phase::WaitThen) && !chars_.empty()) {
      app.state.text.clear();
      phase_ = Phase::Type;
    } else if (o_.right_click && !clicked_) phase_ = Phase::Click;
    else if (!input_.done()) phase_ = Phase::Input;
    else phase_ = Phase::Frames;
  }
  void done(App& app, const Status& s) {
    finished = true;
    if (!s) {
      print_message("headmap", s.error().message);
      exit_code = 1;
      return;
    }
    if (!o_.report.empty()) write_report(app, o_.report);
  }
  // The report of the last frame drawn: what reached the screen, for the GUI tests.
  void write_report(App& app, const std::string& path) {
    {
      // What the frame submitted (frame_hooks.h), and beside it the state it was drawn from.
      const FrameRecorder* rec = frame_recorder();
      nlohmann::json j = rec ? rec->frame() : FrameRecorder().frame();
      j["heatmaps_drawn"] = j["heatmaps"].size();
      // Since the start: frames that showed a same-frame result, and frames that drew the heads grid in both passes.
      j["passes"] = {{"same_frame_results", app.pass_counts.same_frame}, {"heads_grid_drawn_twice", app.pass_counts.grid_twice}};
      // What Export heads as PNG captures: the grid and its legend (the panel when they were not drawn).
      const float* fig = app.state.heads_figure;
      if (fig[2] > fig[0] && fig[3] > fig[1]) j["heads_png"] = {fig[0], fig[1], fig[2], fig[3]};
      else j["heads_png"] = j["heads_panel"];
      j["contrib"]["view"] = contrib_view_name(app.state.contrib.view);
      j["contrib"]["detector"] = detector_name(app.state.contrib.detector);
      j["contrib"]["threshold"] = app.state.contrib.threshold;
      j["font_scale"] = app.state.font_scale;
      j["content_scale"] = app.state.content_scale;  // the monitor's (HiDPI), from GLFW
      j["font_px"] = ImGui::GetFontSize();             // the text's size as drawn: font_scale x content_scale x 17
      j["generate_pending"] = app.state.generate_tokens;
      j["config"] = nlohmann::json::parse(config_json(app.state.cfg));
      j["panel"] = center_panel_name(app.state.view.center);
      nlohmann::json widgets = nlohmann::json::array();  // what --input steps can click, by label
      if (rec)
        for (const FrameRecorder::Widget& w : rec->widgets()) widgets.push_back({{"label", w.label}, {"rect", {w.x0, w.y0, w.x1, w.y1}}});
      j["widgets"] = widgets;
      // The view a view file saves, by the same writer (settings.h's view_json), as the state
      // holds it after this frame.
      j["view"] = view_json(app.state);
      nlohmann::json switched_off = nlohmann::json::array();  // every head switched off, sent or kept for a larger config
      for (const HeadId& id : app.state.ablated) switched_off.push_back({id.layer, id.head});
      j["ablated_heads"] = switched_off;
      j["dialog_open"] = app.dialog_open();
      if (app.state.result && app.state.result->fwd) {
        const ForwardData& f = *app.state.result->fwd;
        j["weights_source"] = f.source;
        j["shown_config"] = nlohmann::json::parse(config_json(app.state.result->request.cfg));  // the config the maps on screen were computed for
        j["compute_ms"] = f.compute_ms;  // the forward pass and its metrics, on the worker
        j["trained"] = f.weights->trained();
        if (f.weights->trained()) j["loss_on_text"] = f.loss();
        nlohmann::json labels = nlohmann::json::array();
        for (int l = 0; l < f.out.L && f.out.B > 0; ++l)  // an empty batch has no metrics
          for (int h = 0; h < f.out.Hw; ++h) {
            const size_t mi = (static_cast<size_t>(l) * f.out.B) * f.out.Hw + h;
            const std::vector<float>& probes = app.state.result->induction;  // (L, H)
            const float probe = probes.empty() ? 0.0f : probes[static_cast<size_t>(l) * f.out.H + h];
            const float ind = label_induction(probe, mi < f.text_induction.size() ? f.text_induction[mi] : std::nanf(""));
            labels.push_back(head_label_name(head_label(f.metrics[mi], ind)));
          }
        j["head_labels"] = labels;  // sentence 0, (L, H) flattened
        // The heads the shown result was computed without, as [layer, head] pairs.
        nlohmann::json off = nlohmann::json::array();
        for (const HeadId& id : app.state.result->request.ablated) off.push_back({id.layer, id.head});
        j["ablated"] = off;
      }
      const TrainStatus& t = app.state.training;
      j["training"] = {{"done", t.done}, {"cancelled", t.cancelled}, {"error", t.error ? t.error->message : ""},
                       {"steps", t.progress.steps}, {"step", t.progress.step},
                       {"points", t.curves.empty() ? 0 : t.curves[0].size()}, {"labels", t.labels}, {"final_val", t.final_val},
                       {"last_point_step", t.curves.empty() || t.curves[0].empty() ? -1 : t.curves[0].back().step},
                       {"snapshot_steps", t.snapshot ? t.snapshot->source.steps : -1}};
      // The state the controls hold (what a lesson step set), beside what was drawn.
      const AppState& st = app.state;
      nlohmann::json abl = nlohmann::json::array();
      for (const HeadId& id : st.ablated) abl.push_back({id.layer, id.head});
      j["state"] = {{"text", st.text}, {"weights", st.weights_mode == WeightsMode::Random ? "random" : "trained"},
                    {"layer", st.view.layer}, {"head", st.view.head}, {"sentence", st.view.batch},
                    {"focus_step", st.view.focus_step}, {"select_token", st.selected_token},
                    {"norm", normalisation_name(st.view.norm)}, {"log_scale", st.view.log_scale},
                    {"heads_zoom", st.view.heads_zoom},
                    {"compare_view", st.view.compare_mode == 0 ? "split" : st.view.compare_show_correct ? "b" : "a"},
                    {"ablated", abl}, {"last_change", st.last_change}};
      if (st.lesson.open()) {  // the player as drawn ("shown", "title", "note", "revealed", "panel"), and its lesson
        nlohmann::json& l = j["lesson"];
        l["id"] = st.lesson.lesson->id;
        l["path"] = st.lesson.lesson->path;
        l["step"] = st.lesson.step + 1;
        l["steps"] = st.lesson.lesson->steps.size();
        l["controls_taken"] = lesson_controls_taken(st);
      } else {
        j.erase("lesson");
      }
      if (Status w = write_file_atomic(path, j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n"); !w) {
        print_message("headmap", w.error().message);
        exit_code = 1;
      }
    }
  }

  ScreenshotOptions o_;
  Clock::time_point start_;
  Phase phase_ = Phase::WaitFirst;
  int frames_ = 0;
  std::u32string chars_;
  size_t typed_ = 0;
  size_t then_next_ = 0;  // the next --then setting to apply
  bool clicked_ = false;  // --right-click done
  std::string report_after_swap_;  // "report=PATH": written once this frame is on screen
  int pressed_key_ = -1;           // "press=KEY": the GLFW key held down this frame
  InputDriver input_;     // --input steps
};
}  // namespace

std::unique_ptr<Script> make_screenshot_script(ScreenshotOptions o) {
  Result<std::vector<InputStep>> steps = parse_input_steps(o.input);
  if (!steps) {  // main() parsed them first: this is not reached with bad steps
    print_message("headmap", steps.error().message);
    return nullptr;
  }
  return std::make_unique<ScreenshotScript>(std::move(o), std::move(steps).value());
}

// ---- [benchmark] ---------------------------------------------------------------------
namespace {
struct Stats {
  std::vector<double> v;
  nlohmann::json json() const {
    if (v.empty()) return {{"n", 0}};
    std::vector<double> s = v;
    std::sort(s.begin(), s.end());
    auto q = [&](double p) { return s[std::min(s.size() - 1, static_cast<size_t>(p * (s.size() - 1) + 0.5))]; };
    return {{"n", s.size()}, {"p50", q(0.5)}, {"p95", q(0.95)}, {"max", s.back()}};
  }
};

// The session's scenarios, in order. Each gathers compute latency (the worker's forward pass
// and metrics, per new result), input to pixels (an input to the first swap that shows its
// result, or a newer one) and frame time (a frame's work, from taking results to the swap).
// With --model DIR the session is the cold start and one scenario on that model, model_typing:
// a paragraph as the prefix, then a sentence typed at its end, 8 characters per second (each
// character appended to the text, as T128_D768_H12_L1's keystrokes are), which the K/V cache
// answers by computing the new rows only.
enum Scenario { kColdStart, kTyping, kHeadsSweep, kDModelSweep, kT128D768, kL12Typing, kT2048, kModelTyping, kScenarios };
const char* const kScenarioKeys[kScenarios] = {"cold_start", "classroom_typing", "classroom_heads_sweep", "d_model_sweep",
                                               "T128_D768_H12_L1", "L12_D768_typing", "T2048_D256_H8_L2", "model_typing"};
// About 120 GPT-2 tokens of plain English: the prefix model_typing types after.
constexpr const char* kModelTypingPrefix =
    "The old lighthouse keeper climbed the stairs every evening to light the lamp. He had done it for forty years, "
    "through storms and calm nights, through the long winters when the sea froze near the rocks and the short summers "
    "when children came to visit. The ships that passed knew his light, and the sailors trusted it more than their maps. "
    "One night, the lamp would not light. The keeper searched for a match, then for a candle, then for anything that "
    "could burn, while the wind rose outside and a ship came closer to the rocks.";
constexpr const char* kModelTypingSentence = " He ran down the stairs and rang the bell.";
// The typed text's tokens at most (the T = 128), and never past the context: typing
// past the context changes no token (the text is clipped there), so each keystroke only
// recomputed the last row. The bench shape's small tokenizer (332 pieces) makes the whole
// paragraph about 500 tokens; Llama 3's makes it about 110.
constexpr int kModelTypingTokens = 128;

// The paragraph without its first words, as many as it takes for it and the sentence to fit
// kModelTypingTokens of the model's own tokenizer.
std::string model_typing_prefix(const AppState& s) {
  std::string p = kModelTypingPrefix;
  if (!s.pretrained) return p;
  ModelConfig cfg = s.cfg;
  const int limit = std::min(cfg.context, kModelTypingTokens);
  cfg.context = kMaxContext;  // counted whole, not clipped
  while (!p.empty() && make_batch({p + kModelTypingSentence}, cfg, *s.pretrained).T > limit) {
    const size_t space = p.find(' ');
    p = space == std::string::npos ? std::string() : p.substr(space + 1);
  }
  return p;
}

// The heads sweep's inputs: up the divisors of d_model and down again, kHeadsSweepRounds
// times (36 moves for d_model 128), so that its p95 is not just its slowest input (with one
// pass up, 8 inputs, a p95 was the maximum). Each turn first adds a word to the sentence (an
// input of its own, 0 below), so every move computes its maps rather than finding the
// previous round's in the worker's cache.
constexpr int kHeadsSweepRounds = 5;
constexpr const char* kHeadsSweepWords[] = {" and", " then", " the", " end"};
std::vector<int> heads_sweep_steps(const std::vector<int>& divisors) {
  std::vector<int> steps = divisors;
  for (int r = 1; r < kHeadsSweepRounds && divisors.size() > 1; ++r) {
    steps.push_back(0);
    for (size_t i = 1; i < divisors.size(); ++i) steps.push_back(r % 2 ? divisors[divisors.size() - 1 - i] : divisors[i]);
  }
  return steps;
}

class BenchmarkScript : public Script {
 public:
  explicit BenchmarkScript(Clock::time_point process_start) : process_start_(process_start) {}

  void before_draw(App& app) override {
    const Clock::time_point now = Clock::now();
    input_this_frame_ = false;
    waits_for_app_ = false;
    AppState& s = app.state;
    switch (phase_) {
      case kColdStart:  // wait for the first heatmaps
        break;
      case kTyping:  // the trained default (T <= 64, D = 128, L = 2): type its sentence, one character every 80 ms
        if (type(app, now, kDefaultSentence, std::chrono::milliseconds(80))) {
          start_phase(kHeadsSweep, now);
          divisors_ = heads_sweep_steps(valid_head_counts(s.cfg.d_model));
        }
        break;
      case kHeadsSweep:  // num_heads up and down the divisors of d_model, kHeadsSweepRounds times
        if (now - last_input_ < std::chrono::milliseconds(250)) break;
        if (step_ < divisors_.size()) {
          if (const int h = divisors_[step_++]) s.cfg.num_heads = h;
          else s.text += kHeadsSweepWords[words_++ % std::size(kHeadsSweepWords)];
          mark_input(now);
        } else if (ready(app)) {
          start_phase(kDModelSweep, now);
        }
        break;
      case kDModelSweep: {  // d_model from 24 to 768, heads kept valid: new random weights at each
        static const int dims[] = {24, 32, 48, 64, 96, 128, 192, 256, 384, 512, 768, 64};
        if (now - last_input_ < std::chrono::milliseconds(300)) break;
        if (step_ < std::size(dims)) {
          s.cfg.d_model = dims[step_++];
          s.cfg.num_heads = nearest_valid_head_count(s.cfg.d_model, 4);
          mark_input(now);
        } else if (ready(app)) {
          start_phase(kT128D768, now);
        }
        break;
      }
      case kT128D768: {  // T = 128 tokens, D = 768, H = 12, L = 1: slider moves and edits
        if (now - last_input_ < std::chrono::milliseconds(300)) break;
        if (step_ == 0) {
          std::string t;
          for (int i = 0; i < 127; ++i) t += "w" + std::to_string(i % 40) + " ";
          s.text = t;
          s.cfg.d_model = 768;
          s.cfg.num_heads = 12;
          s.cfg.num_layers = 1;
          s.cfg.context = 256;
          ++step_;
          mark_input(now);
        } else if (step_ < 12) {
          static const int heads[] = {12, 8, 6, 4, 12, 3, 2, 12, 6, 8, 4};
          if (step_ % 2) s.cfg.num_heads = heads[step_ - 1];
          else s.text += "x";  // a keystroke at T = 128
          ++step_;
          mark_input(now);
        } else if (ready(app)) {
          start_phase(kL12Typing, now);
        }
        break;
      }
      case kL12Typing:  // 12 layers at D = 768, H = 12: type a sentence at 8 characters per second
        if (step_ == 0) {
          s.cfg.d_model = 768;
          s.cfg.num_heads = 12;
          s.cfg.num_layers = 12;
          s.cfg.context = 128;
          s.text = "x";
          step_ = 1;
          mark_input(now);
        } else if (step_ == 1) {
          if (ready(app)) step_ = 2, typed_ = 0, cleared_ = false;  // the weights are drawn once, before typing
        } else if (type(app, now, "When Mary and John went to the store, John gave a drink to", std::chrono::milliseconds(125))) {
          start_phase(kT2048, now);
        }
        break;
      case kModelTyping:  // --model DIR: a paragraph, then a sentence typed at its end
        if (step_ == 0) {
          s.text = model_typing_prefix(s);
          step_ = 1;
          mark_input(now);
        } else if (step_ == 1) {
          if (ready(app)) step_ = 2, typed_ = 0;
        } else if (typed_ < std::strlen(kModelTypingSentence)) {
          if (now - last_input_ >= std::chrono::milliseconds(125)) {
            s.text += kModelTypingSentence[typed_++];
            mark_input(now);
          }
        } else if (ready(app)) {
          report();
          finished = true;
        }
        break;
      case kT2048: {  // a T = 2048 request (D = 256, H = 8, L = 2): frames must stay smooth
        if (step_ == 0) {
          std::string t;
          for (int i = 0; i < 2100; ++i) t += "w" + std::to_string(i % 500) + " ";
          s.text = t;
          s.cfg = ModelConfig();
          s.cfg.d_model = 256;  // random init: the trained models read at most 128 tokens
          s.cfg.num_heads = 8;
          s.cfg.num_layers = 2;
          s.cfg.context = 2048;
          s.weights_mode = WeightsMode::Random;
          step_ = 1;
          long_started_ = now;
          mark_input(now);
        } else if (step_ == 1 && ready(app) && now - long_started_ > std::chrono::milliseconds(200)) {
          long_ms_ = std::chrono::duration<double, std::milli>(now - long_started_).count();
          step_ = 2;
          finish_at_ = now + std::chrono::milliseconds(500);
        } else if (step_ == 2 && now > finish_at_) {
          report();
          finished = true;
        }
        break;
      }
      default: break;
    }
  }

  // Like a person: the app sleeps between inputs and wakes for each input or result. Between
  // inputs, and while the next one waits for the app to settle (a long forward), the loop
  // sleeps as main.cpp's does: a frame every 50 ms while something on screen moves (every
  // 250 ms else), and at once for a result, a deferred upload or a new glyph (each posts an
  // event). Frames drawn back to back while waiting took the cores from the worker (1,600-1,950
  // frames a typing run on the 1B shape, its paragraph's forward 2x slower in wall time).
  double wait_seconds(const App& app) const override {
    const double pace = app.animating() ? 0.05 : 0.25;
    if (phase_ == kT2048) return app.busy() ? pace : 0.0;
    if (phase_ == kColdStart || !typing_ready_) return 0.0;
    if (waits_for_app_) return pace;  // no input is due until the app settles
    const int gap_ms = phase_ == kTyping ? 80 : phase_ == kL12Typing || phase_ == kModelTyping ? 125 : phase_ == kHeadsSweep ? 250 : 300;
    const double left = std::chrono::duration<double>(last_input_ + std::chrono::milliseconds(gap_ms) - Clock::now()).count();
    return std::clamp(left, 0.0, pace);  // 0: an input is due now
  }

  void after_swap(App& app) override {
    const Clock::time_point now = app.last_swap;
    Scenario& sc = scenarios_[phase_];
    sc.frames.v.push_back(app.last_frame_ms);
    sc.grid_twice += app.pass_counts.grid_twice - grid_twice_seen_;
    grid_twice_seen_ = app.pass_counts.grid_twice;
    (phase_ == kT2048 && app.busy() ? frames_long_ : frames_).v.push_back(app.last_frame_ms);
    if (phase_ == kColdStart && app.fresh() && app.state.heads_maps_drawn > 0) {
      model_ = app.state.pretrained ? app.state.pretrained_dir : "";
      cold_ms_ = std::chrono::duration<double, std::milli>(now - process_start_).count();
      // The start-up request is no input's: an input that posts nothing (clearing the text
      // box) must not be credited with it.
      registered_seq_ = app.last_posted_seq;
      start_phase(app.state.pretrained ? kModelTyping : kTyping, now);  // --model DIR: its typing alone
    }
    if (input_this_frame_ && app.last_posted_seq > registered_seq_) {
      pending_.push_back({app.last_posted_seq, input_time_, phase_, app.last_frame_ms});
      registered_seq_ = app.last_posted_seq;
    }
    // A new forward pass on screen: its compute time.
    const ComputeResult* shown_result = app.state.result.get();
    if (shown_result && shown_result->seq != parts_seq_) {  // this frame took a new result: where its time went
      parts_seq_ = shown_result->seq;
      const App::FrameParts& fp = app.last_frame_parts;
      sc.parts[0].v.push_back(fp.panels), sc.parts[1].v.push_back(fp.colour), sc.parts[2].v.push_back(fp.gl_draw), sc.parts[3].v.push_back(fp.swap);
      sc.parts[4].v.push_back(fp.wait);
    }
    if (shown_result && shown_result->fwd && shown_result->fwd.get() != last_fwd_) {
      last_fwd_ = shown_result->fwd.get();
      scenarios_[phase_].compute.v.push_back(shown_result->fwd->compute_ms);
      auto& stages = scenarios_[phase_].stages;  // where each shown pass's time went
      for (const auto& [name, ms] : shown_result->fwd->stage_ms) {
        auto it = std::find_if(stages.begin(), stages.end(), [&](const auto& e) { return e.first == name; });
        (it != stages.end() ? it->second : stages.emplace_back(name, Stats{}).second).v.push_back(ms);
      }
      if (phase_ == kModelTyping) {
        rows_computed_.v.push_back(shown_result->fwd->rows_computed);
        compute_cpu_.v.push_back(shown_result->fwd->compute_cpu_ms);
      }
    }
    // Inputs whose result (or a later one) is now on screen, every map uploaded.
    // A result asked after an input shows it (typed faster than the worker answers, a newer
    // input may be pending meanwhile: the input is on screen all the same).
    const uint64_t shown = shown_result && (!frame_recorder() || frame_recorder()->frame()["heads_deferred"] == 0) ? shown_result->seq : 0;
    // The frame that first took an input's result (or a newer one) from the worker; the
    // frames after it that drew its maps coarser or not yet (the upload budget) wait too.
    const uint64_t taken = shown_result ? shown_result->seq : 0;
    const Clock::time_point frame_start = now - std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double, std::milli>(app.last_frame_ms));
    for (Pending& p : pending_)
      if (taken >= p.seq && p.frames_with_result++ == 0) p.result_in_frame = frame_start;
    for (auto it = pending_.begin(); it != pending_.end();) {
      if (shown >= it->seq) {
        const double ms = std::chrono::duration<double, std::milli>(now - it->at).count();
        scenarios_[it->phase].latency.v.push_back(ms);
        scenarios_[it->phase].result_to_pixels.v.push_back(std::chrono::duration<double, std::milli>(now - it->result_in_frame).count());
        scenarios_[it->phase].frames_to_pixels.v.push_back(it->frames_with_result);
        if (app.same_frame() && shown == it->seq) ++scenarios_[it->phase].same_frame;
        ++scenarios_[it->phase].shown;
        latency_.v.push_back(ms);
        if (it->phase == kT128D768) latency_big_.v.push_back(ms);
        else if (it->phase != kL12Typing && it->phase != kT2048 && it->phase != kModelTyping) latency_small_.v.push_back(ms);
        if (it->phase == kL12Typing) last_l12_ms_ = ms;  // the last keystroke's, in the end
        if (it->phase == kT2048) long_visible_ms_ = ms, long_first_frame_ms_ = app.last_frame_ms;
        it = pending_.erase(it);
      } else {
        ++it;
      }
    }
  }

 private:
  struct Pending {
    uint64_t seq;
    Clock::time_point at;
    int phase;
    double frame_ms;
    Clock::time_point result_in_frame{};  // the start of the first frame that held its result
    int frames_with_result = 0;           // frames drawn with it until its maps were all on screen
  };
  struct Scenario {
    // result_to_pixels: from the start of the frame that took the result to the swap that
    // showed it whole; frames_to_pixels: the frames that took (1: the result's own frame).
    Stats compute, latency, frames, result_to_pixels, frames_to_pixels;
    Stats parts[5];  // frames that took a new result: App::FrameParts, in its order
    std::vector<std::pair<std::string, Stats>> stages;  // ForwardData::stage_ms of each shown pass
    int shown = 0, same_frame = 0;
    int grid_twice = 0;  // frames whose two passes both drew the heads grid
  };
  // Types `text` into the emptied sentence box, one character per `gap`. True once it is
  // typed and its result is on screen.
  bool type(App& app, Clock::time_point now, const std::string& text, std::chrono::milliseconds gap) {
    typing_ready_ = ImGui::GetIO().WantTextInput;
    if (!typing_ready_) {
      app.state.focus_text = true;
      return false;
    }
    if (typed_ == 0 && !cleared_) {
      app.state.text.clear();
      cleared_ = true;
      mark_input(now);
      return false;
    }
    if (now - last_input_ < gap) return false;
    if (typed_ < text.size()) {
      ImGui::GetIO().AddInputCharacter(static_cast<unsigned char>(text[typed_++]));
      mark_input(now);
      return false;
    }
    if (!ready(app)) return false;
    ImGui::SetWindowFocus(nullptr);  // leave the text box
    typed_ = 0;
    cleared_ = false;
    typing_ready_ = true;
    return true;
  }
  // settled(), noting that the script waits on the app (wait_seconds: no input is due).
  bool ready(const App& app) {
    if (settled(app)) return true;
    waits_for_app_ = true;
    return false;
  }
  void mark_input(Clock::time_point now) {
    last_input_ = now;
    input_time_ = now;
    input_this_frame_ = true;
  }
  void start_phase(int p, Clock::time_point now) {
    phase_ = p;
    step_ = 0;
    last_input_ = now;
    typing_ready_ = true;
  }
  void report() {
    nlohmann::json j;
    // The first keys are those of earlier releases, unchanged.
    j["cold_start_ms"] = cold_ms_;
    j["input_to_pixels_ms"] = latency_.json();
    j["input_to_pixels_ms_small_models"] = latency_small_.json();
    j["input_to_pixels_ms_T128_D768_H12_L1"] = latency_big_.json();
    j["frame_ms"] = frames_.json();
    j["frame_ms_while_T2048_computes"] = frames_long_.json();
    j["T2048_request_ms"] = long_ms_;
    j["inputs_never_shown"] = pending_.size();
    // Per scenario: compute_ms, input_to_pixels_ms, frame_ms as {n, p50, p95, max}; inputs
    // shown, and how many were shown by the frame that took them (same_frame_results).
    nlohmann::json sc;
    for (int p = kTyping; p < kScenarios; ++p) {
      const Scenario& x = scenarios_[p];
      sc[kScenarioKeys[p]] = {{"compute_ms", x.compute.json()}, {"input_to_pixels_ms", x.latency.json()}, {"frame_ms", x.frames.json()},
                              {"result_to_pixels_ms", x.result_to_pixels.json()}, {"frames_to_pixels", x.frames_to_pixels.json()},
                              {"inputs_shown", x.shown}, {"same_frame_results", x.same_frame},
                              {"frames_drawing_the_grid_twice", x.grid_twice}};
      nlohmann::json parts;
      for (int k = 0; k < 5; ++k) parts[kFramePartKeys[k]] = x.parts[k].json();
      sc[kScenarioKeys[p]]["result_frame_parts_ms"] = parts;
      // The shown passes' parts, in the worker's order: [part, {n, p50, p95, max}] (ms), the
      // forward's stages indented (its per-head ones in thread ms).
      nlohmann::json compute_parts = nlohmann::json::array();
      for (const auto& [name, st] : x.stages) compute_parts.push_back({name, st.json()});
      sc[kScenarioKeys[p]]["compute_parts_ms"] = compute_parts;
    }
    sc["L12_D768_typing"]["last_keystroke_to_pixels_ms"] = last_l12_ms_;
    sc["T2048_D256_H8_L2"]["visible_layer_on_screen_ms"] = long_visible_ms_;
    sc["T2048_D256_H8_L2"]["first_result_frame_ms"] = long_first_frame_ms_;  // the frame that first shows it
    sc["model_typing"]["model"] = model_;  // --model DIR, else "" (and the scenario did not run)
    // Rows computed per pass (compute_parts_ms: above).
    sc["model_typing"]["compute_cpu_ms"] = compute_cpu_.json();
    sc["model_typing"]["rows_computed"] = rows_computed_.json();
    j["scenarios"] = sc;
    // What drew the frames: the GL renderer (llvmpipe is software) and its thread count.
    const GLubyte* renderer = glGetString(GL_RENDERER);
    j["gl_renderer"] = renderer ? reinterpret_cast<const char*>(renderer) : "";
    const char* lp = std::getenv("LP_NUM_THREADS");
    j["lp_num_threads"] = lp ? lp : "";
    std::printf("%s\n", j.dump(2).c_str());
  }

  Clock::time_point process_start_;
  int phase_ = kColdStart;
  size_t step_ = 0, typed_ = 0;
  bool cleared_ = false, typing_ready_ = true;
  std::vector<int> divisors_;  // the heads sweep's steps: a head count, or 0 for a word added
  size_t words_ = 0;
  Clock::time_point last_input_{}, input_time_{}, long_started_{}, finish_at_{};
  bool input_this_frame_ = false;
  int grid_twice_seen_ = 0;  // app.pass_counts.grid_twice at the last frame
  Stats rows_computed_, compute_cpu_;
  bool waits_for_app_ = false;  // this frame's before_draw waited for the app to settle
  uint64_t registered_seq_ = 0;
  uint64_t parts_seq_ = 0;  // the result whose frame's parts were counted last
  static constexpr const char* kFramePartKeys[5] = {"panels", "colour", "gl_draw", "swap", "same_frame_wait"};
  const ForwardData* last_fwd_ = nullptr;
  std::vector<Pending> pending_;
  Scenario scenarios_[kScenarios];
  Stats latency_, latency_small_, latency_big_, frames_, frames_long_;
  std::string model_;
  double cold_ms_ = 0, long_ms_ = 0, last_l12_ms_ = 0, long_visible_ms_ = 0, long_first_frame_ms_ = 0;
};
}  // namespace

std::unique_ptr<Script> make_benchmark_script(Clock::time_point process_start) {
  return std::make_unique<BenchmarkScript>(process_start);
}

}  // namespace headmap
