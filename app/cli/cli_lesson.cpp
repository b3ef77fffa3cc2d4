// cli_lesson.cpp: `headmap-cli lesson-export 003 --png DIR`: a lesson as slides, one PNG per
// step, for a teacher who hands them out or presents from another machine. Each step's
// state goes the app's own way (lessons.h: the base state and the step's settings ->
// AppState -> compute_request -> the compute worker), and the slide is drawn on the CPU:
// the step's text, then the heads of its layer (heatmap_png.h), its passport rows, or the
// message of an invalid configuration.
//
// Exit status: 0 success, 1 a file could not be read or written, 2 bad arguments.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "app/common/print_message.h"
#include "app/common/assets.h"
#include "app/common/heatmap_png.h"
#include "app/common/raster.h"
#include "app/gui/app_state.h"
#include "app/gui/lessons.h"
#include "app/gui/workers/compute_worker.h"
#include "core/io/staged_files.h"
#include "core/text/utf8.h"

namespace headmap {
namespace {

const Rgb kBg{250, 250, 250}, kInk{25, 25, 30}, kMuted{105, 105, 115}, kAccent{20, 90, 160}, kQuestion{170, 95, 0},
    kAnswer{20, 120, 60}, kError{190, 40, 30};

struct Slide {
  Canvas c;
  const Font& f;
  int margin, y;
  float scale;
  // Text at px (for a 1080-pixel-high slide), wrapped to the width; returns false when the slide is full.
  void text(const std::string& t, float px, Rgb col) {
    const float p = px * scale;
    for (const std::string& l : wrap_text(f, t, p, c.w - 2 * margin)) {
      y += static_cast<int>(p * 1.3f);
      f.draw(c, margin, y, l, p, col);
    }
    y += static_cast<int>(p * 0.4f);
  }
};

Status draw_slide(const std::string& path, const AppState& s, const ComputeResult* res, int W, int H, bool answers, const Font& font) {
  const Lesson& l = *s.lesson.lesson;
  const LessonStep& st = l.steps[s.lesson.step];
  Slide sl{Canvas(W, H, kBg), font, static_cast<int>(W * 0.04f), static_cast<int>(H * 0.02f), H / 1080.0f};
  const std::string of = "step " + std::to_string(s.lesson.step + 1) + " of " + std::to_string(l.steps.size());
  font.draw(sl.c, sl.margin, sl.y + static_cast<int>(26 * sl.scale), l.title, 26 * sl.scale, kMuted);
  font.draw(sl.c, W - sl.margin - font.width(of, 26 * sl.scale), sl.y + static_cast<int>(26 * sl.scale), of, 26 * sl.scale, kMuted);
  sl.y += static_cast<int>(34 * sl.scale);
  sl.text(st.title, 44, kAccent);
  sl.text(st.text, 28, kInk);
  if (const std::string note = lesson_note(st); !note.empty()) sl.text(note, 24, kMuted);
  if (!st.question.empty()) sl.text(st.question, 28, kQuestion);
  if (answers && !st.reveal.empty()) sl.text(st.reveal, 26, kAnswer);
  // The figure fills the rest.
  const int fx = sl.margin, fy = sl.y + static_cast<int>(10 * sl.scale), fw = W - 2 * sl.margin, fh = H - fy - static_cast<int>(20 * sl.scale);
  if (Status v = validate(s.cfg); !v) {
    sl.y = fy;
    sl.text(v.error().message, 32, kError);
  } else if (!res || !res->fwd) {
    sl.y = fy;
    sl.text(res && res->error ? res->error->message : "The model gave no result.", 32, kError);
  } else if (fh > 40 * sl.scale && s.view.center == CenterPanel::Passport) {
    // The shape passport, one row per step: name, formula, concrete shape.
    const Passport& p = res->fwd->passport;
    const float px = std::min(24 * sl.scale, std::max(10.0f, fh / (p.steps.size() + 1.5f) / 1.3f));
    int y = fy;
    for (const PassportStep& r : p.steps) {
      y += static_cast<int>(px * 1.3f);
      if (y > H - 4) break;
      font.draw(sl.c, fx, y, fit_text(font, r.name, px, fw * 3 / 10), px, kInk);
      font.draw(sl.c, fx + fw * 3 / 10, y, fit_text(font, r.formula, px, fw * 4 / 10), px, kMuted);
      font.draw(sl.c, fx + fw * 7 / 10, y, fit_text(font, r.concrete_str() + (r.view ? "  view" : ""), px, fw * 3 / 10), px, kInk);
    }
  } else if (fh > 40 * sl.scale) {
    // The heads of the step's layer and sentence, scaled to the room left, aspect kept.
    const ForwardData& f = *res->fwd;
    HeadsPngOptions o;
    o.layer = std::clamp(s.view.layer, 0, f.out.L - 1);
    o.batch = std::clamp(s.view.batch, 0, std::max(0, f.out.B - 1));
    o.colormap = s.view.colormap;
    o.subtitle = f.source;
    // As many heads per row as make them largest in this room (a row of four leaves a
    // 16:9 slide's lower half empty; two rows of two fill it).
    Result<Canvas> heads = Error{ErrorKind::InvalidArgument, "no heads"};
    float k = 0;
    for (int cols : {0, 1, 2, 3}) {
      if (cols >= f.out.Hw) break;
      o.cols = cols;
      Result<Canvas> c = draw_heads_canvas(f.out, f.batch, res->request.cfg, f.metrics, o);
      if (!c) return c.error();
      const float kc = std::min(static_cast<float>(fw) / c->w, static_cast<float>(fh) / c->h);
      if (kc > k) k = kc, heads = std::move(c);
    }
    const int w = static_cast<int>(heads->w * k), h = static_cast<int>(heads->h * k);
    sl.c.draw_scaled(*heads, fx + (fw - w) / 2, fy, w, h);
  }
  return sl.c.save_png(path);
}

}  // namespace

int run_lesson_export(int argc, char** argv) {
  CLI::App app{"headmap-cli lesson-export: every step of a lesson as a slide (PNG), as the app shows it"};
  std::string name, dir, size = "1920x1080";
  bool answers = false;
  app.add_option("lesson", name, "000 to 004 (the chapters' lessons), or a lesson file")->required();
  app.add_option("--png", dir, "the directory to write the slides to (created), one NNN-SS.png per step")->required();
  app.add_option("--size", size, "1920x1080 or 1024x768")->capture_default_str()->check(CLI::IsMember({"1920x1080", "1024x768"}));
  app.add_flag("--answers", answers, "print each step's answer (Reveal) on its slide");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  const int W = size == "1024x768" ? 1024 : 1920, H = size == "1024x768" ? 768 : 1080;
  Result<std::string> path = find_lesson(name);
  if (!path) {
    print_message("headmap-cli", path.error().message);
    return 2;
  }
  Result<Lesson> lesson = load_lesson(*path);
  if (!lesson) {
    print_message("headmap-cli", lesson.error().message);
    return 1;
  }
  Font font;
  if (Status f = font.load(asset_path("fonts/DejaVuSans.ttf")); !f) {
    print_message("headmap-cli", f.error().message);
    return 1;
  }
  // All slides or none (issue 35, F16): drawn into a staging folder inside DIR and moved
  // into place only once every one is written (core/io/staged_files.h).
  Result<StagedFiles> staged = StagedFiles::open(dir);
  if (!staged) {
    print_message("headmap-cli", staged.error().message);
    return 1;
  }
  std::vector<std::string> titles;
  AppState s;
  s.shipped = scan_checkpoints(asset_path("checkpoints"));
  const auto l = std::make_shared<const Lesson>(std::move(lesson).value());
  if (Status o = open_lesson(s, l); !o) {
    print_message("headmap-cli", o.error().message);
    return 1;
  }
  ComputeWorker worker([] {});
  for (int i = 0; i < static_cast<int>(l->steps.size()); ++i) {
    if (Status g = go_to_lesson_step(s, i); !g) {
      print_message("headmap-cli", g.error().message);
      return 1;
    }
    std::shared_ptr<const ComputeResult> res;
    if (validate(s.cfg).ok()) {
      ComputeRequest req = compute_request(s);
      req.trace.reset();  // the slide draws no step-through
      const uint64_t seq = worker.request(std::move(req));
      // A long request publishes its visible layer first: wait for the complete answer.
      do res = worker.wait_for(seq, std::chrono::minutes(10));
      while (res && res->fwd && !res->fwd->complete);
    }
    char file[64];
    std::snprintf(file, sizeof file, "%s-%02d.png", l->id.c_str(), i + 1);
    if (Status d = draw_slide(staged->stage(file), s, res.get(), W, H, answers, font); !d) {
      print_message("headmap-cli", d.error().message + " No slide was written.");
      return 1;
    }
    titles.push_back(l->steps[i].title);
  }
  Result<std::vector<std::string>> written = staged->commit();
  if (!written) {
    print_message("headmap-cli", written.error().message);
    return 1;
  }
  for (size_t i = 0; i < written->size(); ++i) std::printf("%s  %s\n", (*written)[i].c_str(), printable(titles[i]).c_str());
  return 0;
}

}  // namespace headmap
