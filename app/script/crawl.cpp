// crawl.cpp: see crawl.h.
//
// Sections: [inputs] [checks] [the crawler]
#include "app/script/crawl.h"

#include <imgui.h>
#include <imgui_internal.h>

#include <nlohmann/json.hpp>

#include <GLFW/glfw3.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <deque>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <regex>

#include "app/gui/frame_hooks.h"
#include "app/gui/commands.h"
#include "app/gui/render/gl.h"
#include "app/script/input.h"
#include "app/script/item_log.h"
#include "app/script/script.h"
#include "app/script/settings_table.h"
#include "core/text/utf8.h"

namespace headmap {
namespace {
using Clock = std::chrono::steady_clock;
using item_log::Item;

// ---- [inputs] -------------------------------------------------------------------------
// The steps of input.h, made directly (a pasted text may hold ';', which --input splits at).
std::string at(float x, float y) {
  char b[64];
  std::snprintf(b, sizeof b, "@%.1f,%.1f", x, y);
  return b;
}
InputStep click_at(float x, float y, bool ctrl = false) {
  InputStep s;
  s.kind = InputStep::Click;
  s.target = at(x, y);
  s.ctrl = ctrl;
  s.source = std::string(ctrl ? "ctrlclick " : "click ") + s.target;
  return s;
}
InputStep key_step(int key, bool ctrl = false, bool shift = false, const std::string& name = "") {
  InputStep s;
  s.kind = InputStep::Key;
  s.key = key;
  s.ctrl = ctrl;
  s.shift = shift;
  s.source = "key " + (name.empty() ? std::to_string(key) : name);
  return s;
}
InputStep paste_step(const std::string& text) {
  InputStep s;
  s.kind = InputStep::Paste;
  s.text = text;
  s.source = "paste (" + std::to_string(decode_utf8(text).codepoints.size()) + " characters)";
  return s;
}
InputStep drag_step(float x, float y, std::vector<std::string> via) {
  InputStep s;
  s.kind = InputStep::Drag;
  s.target = at(x, y);
  s.via = std::move(via);
  s.source = "drag " + s.target;
  return s;
}
InputStep scroll_step(int notches, float x, float y) {
  InputStep s;
  s.kind = InputStep::Scroll;
  s.amount = notches;
  s.target = at(x, y);
  s.source = "scroll " + std::to_string(notches) + " " + s.target;
  return s;
}

// 500 characters of mixed scripts: Latin with accents, CJK, Arabic, Hebrew, Cyrillic,
// Devanagari, emoji (beyond the Basic Multilingual Plane) and a combining mark.
std::string mixed_text() {
  const std::u32string cycle = U"The caf\u00e9 \u4e2d\u6587\u5b57 \u0627\u0644\u0639\u0631\u0628\u064a\u0629 \u05e9\u05dc\u05d5\u05dd "
                               U"\u041f\u0440\u0438\u0432\u0435\u0442 \u0928\u092e\u0938\u094d\u0924\u0947 \U0001F600\U0001F9E0 e\u0301 ";
  std::u32string s;
  while (s.size() < 500) s += cycle;
  s.resize(500);
  return encode_utf8(s);
}

// ---- [checks] -------------------------------------------------------------------------
// What the window says, before and after an action.
struct Shown {
  std::vector<std::string> messages;  // every message drawn (errors and notes), the Problem box and the worker's refusal
  std::string problem;                // the "Problem" box's text ("" when none)
  bool compute_error = false, config_ok = true;
};
Shown shown_now(const App& app) {
  Shown s;
  if (const FrameRecorder* rec = frame_recorder()) s.messages = rec->frame()["messages"].get<std::vector<std::string>>();
  s.problem = app.state.error_popup;
  if (!s.problem.empty()) s.messages.push_back(s.problem);
  if (!app.state.compute_error.empty()) s.messages.push_back(app.state.compute_error);
  s.compute_error = !app.state.compute_error.empty();
  s.config_ok = app.state.config_status.ok();
  return s;
}

// The rule for "an error the action should not have caused". Any input may be refused with
// a message (a number out of range, a text too long): that is the app working. What no
// input may cause:
//   1. wording of an internal failure in any message: an assertion's text, an exception
//      leaking through, a number that is not a number;
//   2. a "Problem" box after a click or a key (the box is for files that cannot be read or
//      written; the crawler opens no file and cancels every file dialog);
//   3. after a value was typed back to what it was, a compute error or an invalid
//      configuration that was not there before (the app must come back from a refusal).
// Returns "" when the action passes.
std::string judge(const Shown& before, const Shown& after, bool typed, bool restored) {
  static const std::regex internal(R"((internal check|exception|std::|bad_alloc|what\(\)|\bnan\b|\binf\b))", std::regex::icase);
  for (const std::string& m : after.messages)
    if (std::regex_search(m, internal)) return "the window shows an internal failure: \"" + m + "\"";
  if (!typed && !after.problem.empty() && after.problem != before.problem)
    return "a Problem box appeared after an action that opens no file: \"" + after.problem + "\"";
  if (restored && !before.compute_error && after.compute_error) return "typing the first value back left a compute error: \"" + after.messages.back() + "\"";
  if (restored && before.config_ok && !after.config_ok) return "typing the first value back left an invalid configuration";
  return "";
}

// Ready for the next action: like settled() (script.h), but a training running in the
// background does not hold the crawl up (its Cancel button is the next thing pressed).
bool quiet(const App& app) {
  if (app.busy() || app.dialog_pending() || app.state.generate_tokens > 0) return false;
  if (!app.state.config_status.ok()) return true;
  return app.answered() && (app.fresh() || !app.state.compute_error.empty());
}

bool in_popup(const Item& it) { return (it.root_flags & (ImGuiWindowFlags_Popup | ImGuiWindowFlags_Modal)) != 0; }
bool in_tooltip(const Item& it) { return (it.root_flags & ImGuiWindowFlags_Tooltip) != 0; }
std::string shown_label(const Item& it) {
  const size_t h = it.label.find("##");
  return h == std::string::npos || h == 0 ? it.label : it.label.substr(0, h);
}
// Widgets drawn once per token, head or entry of data (a chip per token, a map per head)
// share their label within a window and differ only by the ID stack: one control over many
// data. The crawler uses the first, the second and the last drawn of each such group.
constexpr int kSampledPerGroup = 3;
// The file dialogs are one function (App::draw_dialogs) drawing a window per title: their
// path fields are one group.
bool file_dialog(const Item& it) { return (it.root_flags & ImGuiWindowFlags_Modal) && it.root_window != "Problem"; }
std::string group_of(const Item& it) { return (file_dialog(it) ? std::string("(file dialog)") : it.window) + '\x1f' + it.label; }
// The point to click: the middle of the item's frame (a slider's or combo's, not its label).
ImVec2 centre(const Item& it) { return ImVec2((it.n0x + it.n1x) / 2, (it.n0y + it.n1y) / 2); }
// On screen and inside its window's visible part.
bool in_view(const Item& it) {
  const ImVec2 c = centre(it), d = ImGui::GetIO().DisplaySize;
  return !it.clipped && c.x >= std::max(it.clip_x0, 0.0f) && c.x < std::min(it.clip_x1, d.x) && c.y >= std::max(it.clip_y0, 0.0f) &&
         c.y < std::min(it.clip_y1, d.y);
}

// ---- [the crawler] --------------------------------------------------------------------
class CrawlScript : public Script {
 public:
  explicit CrawlScript(CrawlOptions o) : o_(std::move(o)), start_(Clock::now()) {
    item_log::enable(true);
    if (!o_.skip_keys.empty()) {  // absent: everything is used
      std::ifstream f(o_.skip_keys);
      for (std::string l; std::getline(f, l);)
        if (!l.empty()) skip_.insert(l);
    }
  }

  // The set-up: the --then settings, as the screenshot driver applies them.
  void before_draw(App& app) override {
    if (phase_ == Phase::WaitFirst && quiet(app) && frames_++ >= 2) phase_ = Phase::Then, frames_ = 0;
    if (phase_ == Phase::Then) {
      while (then_next_ < o_.then.size() && o_.then[then_next_] != "wait") {
        if (Status s = apply_setting(app.state, o_.then[then_next_]); !s) return fail(app, "the set-up setting \"" + o_.then[then_next_] + "\": " + s.error().message);
        ++then_next_;
      }
      if (then_next_ < o_.then.size()) ++then_next_;  // past the "wait"
      phase_ = Phase::WaitThen;
      frames_ = 0;
    } else if (phase_ == Phase::WaitThen && quiet(app) && frames_++ >= 2) {
      phase_ = then_next_ < o_.then.size() ? Phase::Then : Phase::Crawl;
      if (phase_ == Phase::Crawl)
        std::fprintf(stderr, "headmap: crawl: set up in %.2f s\n", std::chrono::duration<double>(Clock::now() - start_).count());
    }
  }

  // One frame in kPixelsEvery is drawn (and one with a capture, App::frame): a software
  // rasteriser's 1600x1000 pixels were most of a crawl's time, and the crawler reads the
  // widgets each frame submits, not pixels. Every frame's own GL calls still run and are
  // checked (the maps' colouring); the GUI tests look at the pixels.
  static constexpr int kPixelsEvery = 8;
  bool draws_pixels() override { return ++pixel_frames_ % kPixelsEvery == 0; }

  void after_swap(App& app) override {
    if (finished) return;
    for (GLenum e = glGetError(); e != GL_NO_ERROR; e = glGetError()) {
      char b[32];
      std::snprintf(b, sizeof b, "GL error 0x%04x", e);
      return fail(app, std::string(b) + " after " + (doing_.empty() ? "the set-up" : doing_));
    }
    if (Clock::now() - start_ > std::chrono::duration<double>(o_.deadline_s))
      return fail(app, "out of time (" + std::to_string(static_cast<int>(o_.deadline_s)) + " s) after " + std::to_string(actions_) +
                           " actions, with " + std::to_string(left()) + " of the widgets seen so far not used (some since gone)");
    if (glfwWindowShouldClose(app.window))  // File > Quit is never used: whatever closed the window is a failure
      return fail(app, (doing_.empty() ? std::string("the set-up") : doing_) + " closed the window");
    if (phase_ != Phase::Crawl) return;
    ++crawl_frames_;
    if (!item_log::hooked()) return fail(app, "no Dear ImGui item was recorded: this headmap was linked without item_log's --wrap flags (app/CMakeLists.txt), so the crawler cannot see the widgets");
    learn();
    // Run the ops of the action under way; each returns true when it is finished.
    while (!ops_.empty() && !finished) {
      Op op = std::move(ops_.front());
      ops_.pop_front();
      if (!op(app)) {
        ops_.push_front(std::move(op));
        return;
      }
    }
    if (finished) return;
    if (!doing_.empty()) end_action(app);
    if (!finished) plan(app);
  }

  // While a cancelled training winds down the crawl draws no frames it does not need: the
  // cores go to the training, which stops sooner.
  double wait_seconds(const App& app) const override {
    if (phase_ == Phase::Crawl) return waiting_training_ ? 0.02 : 0.0;
    return quiet(app) ? 0.0 : 0.02;
  }

 private:
  int pixel_frames_ = 0;
  using Op = std::function<bool(App&)>;
  enum class Phase { WaitFirst, Then, WaitThen, Crawl };
  struct Known {
    Item item;                   // as last drawn
    std::vector<uint32_t> path;  // the items to click first to show it (a list's or menu's openers)
    bool done = false;
    bool right_done = false;     // right-clicked (an item with a right-click action)
    size_t order = 0;            // when it was first seen
  };

  void fail(App& app, const std::string& why) {
    (void)app;
    std::fprintf(stderr, "headmap: crawl FAILED: %s\n", why.c_str());
    std::fflush(stderr);
    finished = true;
    exit_code = 1;
  }
  size_t left() const {
    size_t n = 0;
    for (const auto& [id, k] : known_) n += !k.done;
    return n;
  }

  // The newest frame's items into the catalogue. An item first seen in a popup during an
  // action was opened by that action: it is reached again through the same clicks.
  void learn() {
    frame_items_.clear();
    for (const Item& it : item_log::items()) {
      if (it.n1x - it.n0x < 1 || it.n1y - it.n0y < 1 || in_tooltip(it)) continue;  // no area: an ID only (a context-menu anchor)
      frame_items_.push_back(it);
      auto [k, fresh] = known_.try_emplace(it.id);
      if (fresh) {
        k->second.order = seen_++;
        if (in_popup(it)) k->second.path = acting_path_;
        // Used by the run at the other window size, at a place this size shows as it is: not
        // again (a tab is clicked all the same: what it shows may be laid out differently).
        if (skip_.count(group_of(it)) && !it.tab && in_view(it)) k->second.done = true, ++skipped_;
      }
      const bool right = k->second.item.right_button;
      k->second.item = it;
      k->second.item.right_button = right || it.right_button;  // asked only while hovered (a map)
    }
  }
  const Item* drawn(uint32_t id) const {
    const Item* any = nullptr;
    for (const Item& it : frame_items_)
      if (it.id == id) {
        if (in_view(it)) return &it;
        if (!any) any = &it;
      }
    return any;
  }
  // A point of the window on no item and on no popup (their items' rects stand for them).
  ImVec2 empty_spot() const {
    const ImVec2 d = ImGui::GetIO().DisplaySize;
    for (float fy : {0.98f, 0.5f, 0.02f})
      for (float fx : {0.995f, 0.5f, 0.005f}) {
        const ImVec2 p(d.x * fx, d.y * fy);
        const bool on_item = std::any_of(frame_items_.begin(), frame_items_.end(), [&](const Item& it) {
          const float pad = in_popup(it) ? 40.0f : 2.0f;
          return p.x >= it.x0 - pad && p.x < it.x1 + pad && p.y >= it.y0 - pad && p.y < it.y1 + pad;
        });
        if (!on_item) return p;
      }
    return ImVec2(d.x - 2, d.y - 2);
  }
  bool popup_open() const {
    return std::any_of(frame_items_.begin(), frame_items_.end(), [](const Item& it) { return in_popup(it); });
  }

  // ---- ops ----
  // Input steps through input.h's driver, one frame at a time. A step that cannot be done
  // (its widget left the screen) ends the action, which is then counted as not reached.
  Op steps(std::vector<InputStep> s) {
    auto driver = std::make_shared<InputDriver>(std::move(s), true);
    return [this, driver](App& app) {
      if (driver->done()) return true;
      if (Status st = driver->after_frame(app); !st) {
        std::fprintf(stderr, "headmap: crawl: %s: %s (not reached)\n", doing_.c_str(), st.error().message.c_str());
        ops_.clear();
        return true;
      }
      return driver->done();
    };
  }
  // Until the app is quiet (at most `seconds`).
  Op settle(double seconds = 6.0) {
    auto since = std::make_shared<std::optional<Clock::time_point>>();
    auto frames = std::make_shared<int>(0);
    return [this, since, frames, seconds](App& app) {
      if (!*since) *since = Clock::now();
      // At least one frame drawn after the last input: the plan reads what it left on screen
      // (a list closed by the click that picked its entry is gone only then).
      if (++*frames >= 2 && quiet(app)) return true;
      if (Clock::now() - **since > std::chrono::duration<double>(seconds)) {
        std::fprintf(stderr, "headmap: crawl: %s: still busy after %.0f s, going on\n", doing_.c_str(), seconds);
        return true;
      }
      return false;
    };
  }
  // Until a cancelled training has stopped (at most `seconds`), drawing a frame every 20 ms.
  Op training_stopped(double seconds = 30.0) {
    auto since = std::make_shared<std::optional<Clock::time_point>>();
    return [this, since, seconds](App& app) {
      if (!*since) *since = Clock::now();
      waiting_training_ = app.state.training.running;
      if (!waiting_training_) return true;
      if (Clock::now() - **since > std::chrono::duration<double>(seconds)) {
        waiting_training_ = false;
        return true;  // its Cancel is pressed again
      }
      return false;
    };
  }
  // The item as drawn now, scrolled into view; then `then` makes the steps for it.
  Op reach(uint32_t id, std::function<void(App&, const Item&)> then, std::shared_ptr<int> tries = std::make_shared<int>(0)) {
    return [this, id, then, tries](App& app) {
      const Item* it = drawn(id);
      if (!it || it->disabled) {
        if (++*tries < 30) return false;  // half a second for it to appear (a list opening)
        std::fprintf(stderr, "headmap: crawl: %s: not on screen (not reached)\n", doing_.c_str());
        ++unreached_;
        ops_.clear();
        return true;
      }
      if (!in_view(*it)) {  // scrolled out of its window: the wheel over the window, as a person would
        if (++*tries > 40 || it->clip_y1 - it->clip_y0 < 4) {
          std::fprintf(stderr, "headmap: crawl: %s: cannot be scrolled into view (not reached)\n", doing_.c_str());
          ++unreached_;
          ops_.clear();
          return true;
        }
        const float cy = (it->n0y + it->n1y) / 2;
        const int notches = cy < it->clip_y0 ? 1 : -1;
        ops_.push_front(reach(id, then, tries));  // after the scroll, this again
        // Over the window's scrollbar, just right of its visible part (the middle of the window
        // may be over a child that takes the wheel for itself); every third try the middle.
        const float x = *tries % 3 == 2 ? (it->clip_x0 + it->clip_x1) / 2 : it->clip_x1 + 4;
        ops_.push_front(steps({scroll_step(notches, x, (it->clip_y0 + it->clip_y1) / 2)}));
        return true;
      }
      then(app, *it);
      return true;
    };
  }
  Op once(std::function<void(App&)> f) {
    return [f](App& app) {
      f(app);
      return true;
    };
  }

  // ---- actions ----
  void begin_action(App& app, const std::string& what) {
    doing_ = what;
    ++actions_;
    before_ = shown_now(app);
    typed_ = restored_ = false;
    // The frame and the second it starts at: where the crawl's time goes (tests/README.md).
    std::fprintf(stderr, "headmap: crawl %d (frame %d, %.2f s): %s\n", actions_, crawl_frames_,
                 std::chrono::duration<double>(Clock::now() - start_).count(), what.c_str());
    std::fflush(stderr);  // before the action: a crash names it
  }
  void end_action(App& app) {
    const std::string why = judge(before_, shown_now(app), typed_, restored_);
    if (!why.empty()) return fail(app, doing_ + ": " + why);
    doing_.clear();
    acting_path_.clear();
  }
  std::string describe(const Item& it, const char* verb) const {
    std::string w = it.root_window;
    if (w != it.window) w += " > " + it.window;
    return std::string(verb) + " \"" + (it.label.empty() ? "(no label)" : shown_label(it)) + "\" in " + w;
  }

  // The next action: an open list's or dialog's entries first, then entries of lists that
  // are closed now (reached through their openers), the panels' widgets, the tabs, the menu
  // bar, and last the keyboard shortcuts. Returns when the run is over.
  void plan(App& app) {
    auto todo = [&](const Item& it) {
      const Known& k = known_[it.id];
      if (k.done || it.disabled) return false;
      const std::string l = shown_label(it);
      if (l == "Quit") return false;                       // File > Quit would end the run
      if (l == "OK" && file_dialog(it)) return false;      // a file dialog's OK would read or write a file
      return true;
    };
    // 0. A training started by the crawl: its Cancel, at once (it would hold both cores).
    // Pressed once, then the crawl waits for the training to stop.
    if (app.state.training.running)
      for (const Item& it : frame_items_)
        if (!in_popup(it) && shown_label(it) == "Cancel" && !it.disabled) {
          act(app, it);
          ops_.push_back(training_stopped());
          return;
        }
    // 1. An open popup, list, menu or dialog: its entries (Cancel and Close last).
    if (popup_open()) {
      const Item* pick = nullptr;
      bool pick_last = true;
      for (const Item& it : frame_items_) {
        if (!in_popup(it) || !todo(it)) continue;
        const std::string l = shown_label(it);
        const bool last = l == "Cancel" || l == "Close" || l == "OK";
        if (!pick || (pick_last && !last)) pick = &it, pick_last = last;
      }
      if (pick) return act(app, *pick);
      // Nothing left in it: close it as a person would: Escape for a modal box (the app's
      // own key), a click on an empty spot beside a list or menu (Dear ImGui closes them so).
      if (++escapes_ > 4) return fail(app, "a popup did not close after Escape or a click beside it");
      const bool modal = std::any_of(frame_items_.begin(), frame_items_.end(), [](const Item& it) { return (it.root_flags & ImGuiWindowFlags_Modal) != 0; });
      if (modal) {
        begin_action(app, "key Escape (close the open box)");
        ops_.push_back(steps({key_step(GLFW_KEY_ESCAPE, false, false, "escape")}));
      } else {
        const ImVec2 p = empty_spot();
        begin_action(app, "click beside the open list or menu, at " + at(p.x, p.y));
        ops_.push_back(steps({click_at(p.x, p.y)}));
      }
      ops_.push_back(settle(2));
      return;
    }
    escapes_ = 0;
    // 3-5. The panels' widgets, then (after 2) the tabs, then the menu bar (of a group of
    // repeated widgets, its first two and its last).
    for (int pass = 0; pass < 3; ++pass) {
      if (pass == 1 && pick_reopened(app, todo)) return;  // 2. before the tabs: what closed lists still hold
      for (size_t i = 0; i < frame_items_.size(); ++i) {
        const Item& it = frame_items_[i];
        if (in_popup(it) || !todo(it)) continue;
        if (!((pass == 0 && !it.tab && !it.menu_bar) || (pass == 1 && it.tab) || (pass == 2 && it.menu_bar))) continue;
        // The same control drawn in another window after a layout change (a larger font moves
        // the model controls from their column to a tab): used once already.
        if (!it.label.empty()) {
          const auto moved = acted_window_.find(it.root_window + '\x1f' + it.label);
          if (moved != acted_window_.end() && moved->second != it.window) {
            known_[it.id].done = true;
            ++moved_;
            continue;
          }
        }
        const int used = group_used_[group_of(it)];
        if (used >= kSampledPerGroup) {
          known_[it.id].done = true;  // sampled: a fourth chip is the same control over another token
          ++sampled_;
          continue;
        }
        if (used == kSampledPerGroup - 1) {  // the group's last member drawn in this frame
          const Item* last = &it;
          for (size_t j = i + 1; j < frame_items_.size(); ++j)
            if (group_of(frame_items_[j]) == group_of(it) && todo(frame_items_[j])) last = &frame_items_[j];
          return act(app, *last);
        }
        return act(app, it);
      }
    }
    // 6. The right button, on each item that has a right-click action (one of each group).
    for (const Item& it : frame_items_) {
      Known& k = known_[it.id];
      if (!it.right_button && !k.item.right_button) continue;
      if (k.right_done || it.disabled || in_popup(it)) continue;
      k.right_done = true;
      if (!right_groups_.insert(group_of(it)).second) continue;
      begin_action(app, describe(it, "right-click"));
      const uint32_t id = it.id;
      ops_.push_back(reach(id, [this](App&, const Item& now) {
        InputStep r = click_at(centre(now).x, centre(now).y);
        r.kind = InputStep::RightClick;
        r.source = "rclick " + r.target;
        ops_.push_front(settle());
        ops_.push_front(steps({r}));
      }));
      return;
    }
    // 7. The keyboard shortcuts of the command table.
    const std::vector<Command>& table = commands();
    while (shortcut_ < table.size()) {
      const Command& c = table[shortcut_++];
      if (c.keys[0] == 0 || std::string(c.label) == "Quit") continue;
      begin_action(app, std::string("shortcut ") + (c.shortcut ? c.shortcut : "?") + " (" + c.label + ")");
      ops_.push_back(steps({key_step(c.keys[0], c.ctrl, c.shift, c.shortcut ? c.shortcut : "")}));
      ops_.push_back(settle());
      return;
    }
    // Done.
    size_t never = 0;
    for (const auto& [id, k] : known_)
      if (!k.done) {
        ++never;
        std::fprintf(stderr, "headmap: crawl: not used: %s%s\n", describe(k.item, "").c_str(), k.item.disabled ? " (disabled)" : "");
      }
    std::fprintf(stderr, "headmap: crawl done: %d actions, %zu widgets seen, %d repeated ones sampled, %d moved by a layout change, "
                 "%d used at the other size (skipped), %zu right-clicked, %zu not used (disabled or gone), %d not reached, %d frames, %.0f s\n",
                 actions_, known_.size(), sampled_, moved_, skipped_, right_groups_.size(), never, unreached_, crawl_frames_,
                 std::chrono::duration<double>(Clock::now() - start_).count());
    if (!o_.record_keys.empty()) {  // what this run used, for the run at the other size
      std::ofstream f(o_.record_keys, std::ios::trunc);
      for (const std::string& k : used_keys_) f << k << '\n';
      if (!f) return fail(app, "cannot write " + o_.record_keys);
    }
    finished = true;
  }

  // 2. Entries of lists and menus that are closed now: their openers are clicked again.
  template <class Todo>
  bool pick_reopened(App& app, Todo& todo) {
    const Known* pick = nullptr;
    for (const auto& [id, k] : known_)
      if (!k.done && !k.path.empty() && todo(k.item) && drawn(k.path.front()) && (!pick || k.order < pick->order)) pick = &k;
    if (!pick) return false;
    act_through(app, *pick);
    return true;
  }

  // An entry of a closed list or menu: its openers, then the entry.
  void act_through(App& app, const Known& k) {
    const uint32_t id = k.item.id;
    const std::vector<uint32_t> path = k.path;
    begin_action(app, describe(k.item, "click") + " (opened again)");
    used_keys_.insert(group_of(k.item));
    known_[id].done = true;
    typing_ = false;
    for (uint32_t opener : path) {
      ops_.push_back(reach(opener, [this](App&, const Item& it) { ops_.push_front(steps({click_at(centre(it).x, centre(it).y)})); }));
    }
    acting_path_ = path;
    acting_path_.push_back(id);
    ops_.push_back(reach(id, [this, id](App& app, const Item& it) { do_primary(app, it, id); }));
  }

  void act(App& app, const Item& it) {
    known_[it.id].done = true;
    const int used = in_popup(it) && !it.inputable ? 0 : group_used_[group_of(it)]++;
    if (!in_popup(it)) acted_window_.emplace(it.root_window + '\x1f' + it.label, it.window);
    typing_ = it.inputable && used < kSampledPerGroup;  // beyond the sample, a typed field is clicked
    acting_path_ = known_[it.id].path;
    acting_path_.push_back(it.id);
    begin_action(app, describe(it, typing_ ? "type into" : "click"));
    used_keys_.insert(group_of(it));
    const uint32_t id = it.id;
    ops_.push_back(reach(id, [this, id](App& app, const Item& now) { do_primary(app, now, id); }));
  }

  // What the item gets: a click, or (typed input) the slider's or text field's sequence.
  void do_primary(App& app, const Item& it, uint32_t id) {
    (void)app;
    const ImVec2 c = centre(it);
    if (!it.inputable || !typing_) {
      ops_.push_front(settle());
      ops_.push_front(steps({click_at(c.x, c.y)}));
      return;
    }
    // Ctrl+click: a slider opens its number box (TempInputId), a text field takes the keyboard.
    ops_.push_front(once([this, id](App& app) { typed_input(app, id); }));
    ops_.push_front(steps({click_at(c.x, c.y, true)}));
  }

  void typed_input(App& app, uint32_t id) {
    const ImGuiContext& g = *GImGui;
    const Item* it = drawn(id);
    const bool active = g.ActiveId == id && g.InputTextState.ID == id;
    if (!it || !active) {  // a click was all it took (a drag without a number box)
      ops_.push_front(settle());
      return;
    }
    const std::string original(g.InputTextState.InitialTextA.Data ? g.InputTextState.InitialTextA.Data : "");
    const ImVec2 d = ImGui::GetIO().DisplaySize;
    const bool slider = g.TempInputId == id;
    const bool dialog = file_dialog(*it);  // a file dialog's path: typed, never committed (Enter is its OK)
    auto replace = [](const std::string& text) {
      std::vector<InputStep> s = {key_step(GLFW_KEY_A, true, false, "ctrl+a")};
      s.push_back(text.empty() ? key_step(GLFW_KEY_DELETE, false, false, "delete") : paste_step(text));
      return s;
    };
    auto typed = [this](bool restoring) {
      return once([this, restoring](App&) {
        typed_ = true;
        restored_ = restoring;
      });
    };
    auto check = [this](App& app) {  // each typed value is judged on its own
      const std::string why = judge(before_, shown_now(app), typed_, restored_);
      if (!why.empty()) fail(app, doing_ + ": " + why);
    };
    // The steps for the item where it is drawn when they start (a message above it may have
    // moved it since).
    auto on_item = [this, id](std::function<std::vector<InputStep>(const Item&)> make) {
      return reach(id, [this, make](App&, const Item& now) { ops_.push_front(steps(make(now))); });
    };
    std::vector<Op> seq;
    if (slider) {
      // Past both ends with the button held, then a number out of range, then the first value.
      seq.push_back(steps({key_step(GLFW_KEY_ESCAPE, false, false, "escape")}));
      seq.push_back(on_item([d](const Item& now) {
        const ImVec2 c = centre(now);
        const float left = std::max(1.0f, now.n0x - 30), right = std::min(d.x - 2, now.n1x + 30);
        return std::vector<InputStep>{drag_step(c.x, c.y, {at(left, c.y), at(right, c.y)})};
      }));
      seq.push_back(settle());
      std::vector<std::string> values = {"99999999", original};
      if (o_.primary_only) values.erase(values.begin());  // the drag, then the first value back
      for (size_t i = 0; i < values.size(); ++i) {
        seq.push_back(typed(i + 1 == values.size()));
        seq.push_back(on_item([replace, v = values[i]](const Item& now) {
          std::vector<InputStep> s = {click_at(centre(now).x, centre(now).y, true)};
          for (InputStep& r : replace(v)) s.push_back(std::move(r));
          s.push_back(key_step(GLFW_KEY_ENTER, false, false, "enter"));
          return s;
        }));
        seq.push_back(settle());
        seq.push_back(once(check));
      }
    } else {
      std::vector<std::string> texts = {"", "-99999999999", mixed_text(), original};
      if (o_.primary_only) texts.erase(texts.begin(), texts.begin() + 2);  // the mixed scripts, then the first text back
      for (size_t i = 0; i < texts.size(); ++i) {
        seq.push_back(typed(i + 1 == texts.size()));
        if (dialog) {  // the field keeps the keyboard; nothing is committed
          seq.push_back(steps(replace(texts[i])));
        } else {
          seq.push_back(on_item([replace, t = texts[i]](const Item& now) {
            std::vector<InputStep> s = {click_at(centre(now).x, centre(now).y)};
            for (InputStep& r : replace(t)) s.push_back(std::move(r));
            s.push_back(key_step(GLFW_KEY_ENTER, true, false, "ctrl+enter"));  // leaves a multi-line box too
            return s;
          }));
        }
        seq.push_back(settle());
        seq.push_back(once(check));
      }
    }
    for (auto r = seq.rbegin(); r != seq.rend(); ++r) ops_.push_front(std::move(*r));
  }

  CrawlOptions o_;
  Clock::time_point start_;
  Phase phase_ = Phase::WaitFirst;
  int frames_ = 0;
  size_t then_next_ = 0;
  std::deque<Op> ops_;
  std::vector<Item> frame_items_;           // the newest frame's items with an area
  std::map<uint32_t, Known> known_;         // every item seen, by ID
  size_t seen_ = 0, shortcut_ = 0;
  std::vector<uint32_t> acting_path_;       // the clicks that lead to what the current action opens
  std::string doing_;                       // the action under way ("" between actions)
  Shown before_;                            // the window before it
  bool typed_ = false, restored_ = false;   // it typed a value / typed the first value back
  bool typing_ = false;                     // the action types into its field (else it clicks)
  int actions_ = 0, unreached_ = 0, escapes_ = 0, sampled_ = 0, moved_ = 0, crawl_frames_ = 0, skipped_ = 0;
  bool waiting_training_ = false;           // a cancelled training is winding down
  std::set<std::string> skip_, used_keys_;  // groups (group_of) used by the other size's run / by this one
  std::set<std::string> right_groups_;      // groups right-clicked
  std::map<std::string, std::string> acted_window_;  // root window + label -> the window it was first used in
  std::map<std::string, int> group_used_;   // actions per group of repeated widgets (group_of)
};
}  // namespace

std::unique_ptr<Script> make_crawl_script(CrawlOptions o) { return std::make_unique<CrawlScript>(std::move(o)); }

}  // namespace headmap
