// soak.cpp: the scripted soak (`headmap --soak N`): N frames of random use of the real UI
// (typing, slider moves to valid and invalid values, layer and head changes, pitfalls,
// ablation, weights, panels), then a JSON report of resident memory and GL errors.
// Exit 0 when no GL error occurred and resident memory grew by less than the limit.
#include "app/script/soak.h"

#include <imgui.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <random>

#include "app/gui/glyphs.h"
#include "app/gui/render/gl.h"
#include "app/script/settings_table.h"
#include "core/model/config.h"

namespace headmap {
namespace {
using Clock = std::chrono::steady_clock;

double rss_mib() {
  std::ifstream f("/proc/self/statm");
  long size = 0, resident = 0;
  f >> size >> resident;
  return static_cast<double>(resident) * static_cast<double>(::sysconf(_SC_PAGESIZE)) / (1024.0 * 1024.0);
}

class SoakScript : public Script {
 public:
  explicit SoakScript(SoakOptions o) : o_(o), rng_(o.seed), start_(Clock::now()) {}

  void before_draw(App& app) override {
    AppState& s = app.state;
    if (frame_ == 0) s.weights_mode = WeightsMode::Random;  // small random models keep the compute quick
    if (frame_ == baseline_frame()) baseline_ = rss_mib();
    if (frame_ >= o_.frames) {
      report(app);
      return;
    }
    ++frame_;
    if (s.result && s.result.get() != last_result_) ++results_, last_result_ = s.result.get();
    if (!s.compute_error.empty() || !s.config_status.ok()) ++refused_frames_;
    const int dice = pick(0, 99);
    if (dice < 40) type(s);
    else if (dice < 55) move_slider(s);
    else if (dice < 65) select(s);
    else if (dice < 72) toggle_pitfall(s);
    else if (dice < 80) ablate(s);
    else if (dice < 83) s.weights_mode = pick(0, 3) == 0 ? WeightsMode::Trained : WeightsMode::Random;
    else if (dice < 86) s.cfg.causal = !s.cfg.causal;
    else if (dice < 88) s.cfg.positional = !s.cfg.positional;
    else if (dice < 90) (void)apply_setting(s, std::string("colormap=") + kColormaps[pick(0, 3)]);
  }

  void after_swap(App&) override {
    for (GLenum e = glGetError(); e != GL_NO_ERROR; e = glGetError()) {
      if (gl_errors_ < 10) std::fprintf(stderr, "headmap: soak: GL error 0x%04x at frame %d\n", e, frame_);
      ++gl_errors_;
    }
    peak_ = std::max(peak_, rss_mib());
  }

 private:
  static constexpr const char* kColormaps[] = {"viridis", "magma", "cividis", "grey"};
  static constexpr const char* kPanels[] = {"heads", "focus", "model", "passport"};

  int baseline_frame() const { return std::max(50, o_.frames / 10); }  // after the first models and textures are made
  int pick(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }

  // Typing goes through Dear ImGui's text input, one character a frame; a long text is
  // replaced by a short one (the box loses focus first, so it takes the new text).
  void type(AppState& s) {
    if (s.text.size() > 160 || pick(0, 199) == 0) {
      ImGui::SetWindowFocus(nullptr);
      s.text = pick(0, 1) ? "The cat sat on the mat because it was tired." : "";
      return;
    }
    if (!ImGui::GetIO().WantTextInput) {
      s.focus_text = true;
      return;
    }
    static const char32_t kChars[] = U"abcdefghijklmnopqrstuvwxyz      .,'?!0123456789\u00e9\u732b\U0001F600\n";
    const char32_t c = kChars[pick(0, static_cast<int>(std::size(kChars)) - 2)];
    if (c == U'\n' && std::count(s.text.begin(), s.text.end(), '\n') >= 2) return;  // at most three sentences
    type_char(static_cast<unsigned int>(c == U'\n' ? U' ' : c));  // as a keyboard types it (glyphs.h)
    ++typed_;
  }
  void move_slider(AppState& s) {
    static const int kDModels[] = {16, 24, 32, 48, 64, 96};
    switch (pick(0, 3)) {
      case 0: {  // mostly a divisor of d_model; one move in five an invalid pair, which is a lesson
        const std::vector<int> valid = valid_head_counts(s.cfg.d_model);
        s.cfg.num_heads = pick(0, 4) == 0 ? pick(1, std::min(s.cfg.d_model, 16) + 2) : valid[static_cast<size_t>(pick(0, static_cast<int>(valid.size()) - 1))];
        break;
      }
      case 1:
        s.cfg.d_model = kDModels[pick(0, 5)];
        if (pick(0, 1)) s.cfg.num_heads = nearest_valid_head_count(s.cfg.d_model, s.cfg.num_heads);  // "Use nearest valid"
        break;
      case 2: s.cfg.num_layers = pick(1, 3); break;
      default: s.cfg.context = pick(4, 64); break;
    }
  }
  void select(AppState& s) {
    if (pick(0, 2) == 0) {
      (void)apply_setting(s, std::string("panel=") + kPanels[pick(0, 3)]);
      return;
    }
    s.view.layer = pick(0, std::max(0, s.cfg.num_layers - 1));
    s.view.head = pick(0, std::max(0, s.cfg.num_heads - 1));
  }
  void toggle_pitfall(AppState& s) {
    const std::vector<PitfallInfo>& list = pitfall_list();
    const PitfallInfo& p = list[static_cast<size_t>(pick(0, static_cast<int>(list.size()) - 1))];
    s.cfg.pitfalls.*(p.flag) = !(s.cfg.pitfalls.*(p.flag));
  }
  void ablate(AppState& s) {
    if (pick(0, 4) == 0) {
      s.ablated.clear();
      return;
    }
    (void)apply_setting(s, "ablate=" + std::to_string(pick(0, std::max(0, s.cfg.num_layers - 1))) + "," +
                               std::to_string(pick(0, std::max(0, s.cfg.num_heads - 1))));
  }

  void report(App& app) {
    if (finished) return;
    const double end = rss_mib(), seconds = std::chrono::duration<double>(Clock::now() - start_).count();
    const double growth = end - baseline_;
    nlohmann::json j = {{"frames", o_.frames},        {"seconds", seconds},          {"seed", o_.seed},
                        {"rss_baseline_mib", baseline_}, {"rss_end_mib", end},         {"rss_peak_mib", peak_},
                        {"rss_growth_mib", growth},    {"rss_growth_limit_mib", o_.max_growth_mib}, {"gl_errors", gl_errors_},
                        {"characters_typed", typed_}, {"results_shown", results_}, {"frames_with_a_refusal_shown", refused_frames_},
                        {"final_config", {{"d_model", app.state.cfg.d_model}, {"num_heads", app.state.cfg.num_heads}, {"num_layers", app.state.cfg.num_layers}}}};
    std::printf("%s\n", j.dump(2).c_str());
    std::fflush(stdout);
    finished = true;
    exit_code = gl_errors_ == 0 && growth < o_.max_growth_mib ? 0 : 1;
    if (exit_code) std::fprintf(stderr, "headmap: soak failed: %d GL errors, resident memory grew by %.1f MiB (limit %.0f)\n", gl_errors_, growth, o_.max_growth_mib);
  }

  SoakOptions o_;
  std::mt19937_64 rng_;
  Clock::time_point start_;
  int frame_ = 0;
  int gl_errors_ = 0;
  int typed_ = 0, results_ = 0, refused_frames_ = 0;
  const void* last_result_ = nullptr;
  double baseline_ = 0, peak_ = 0;
};
}  // namespace

std::unique_ptr<Script> make_soak_script(SoakOptions o) { return std::make_unique<SoakScript>(o); }

}  // namespace headmap
