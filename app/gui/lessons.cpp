// lessons.cpp: lesson files, their validation, and the player's state changes.
#include "app/gui/lessons.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "app/common/assets.h"
#include "app/common/model_options.h"
#include "app/gui/app_state.h"
#include "app/script/settings_table.h"
#include "core/io/file_io.h"
#include "core/io/json_limits.h"

namespace headmap {
namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

std::string where(const std::string& path, int step, const std::string& field) {
  std::string w = path;
  if (step > 0) w += ", step " + std::to_string(step);
  if (!field.empty()) w += ", " + field;
  return w;
}

Error bad(const std::string& path, int step, const std::string& field, const std::string& what) {
  return Error{ErrorKind::InvalidArgument, "The lesson " + where(path, step, field) + ": " + what};
}

// A string field: absent is "", anything but a string of at most `max` bytes is an error.
Result<std::string> string_field(const json& o, const char* key, const std::string& path, int step, size_t max, bool required) {
  auto it = o.find(key);
  if (it == o.end()) {
    if (required) return bad(path, step, key, "is missing.");
    return std::string();
  }
  if (!it->is_string()) return bad(path, step, key, "must be a string.");
  std::string v = it->get<std::string>();
  if (v.size() > max) return bad(path, step, key, "is longer than " + std::to_string(max) + " bytes.");
  if (required && v.empty()) return bad(path, step, key, "is empty.");
  return v;
}

Status check_keys(const json& o, std::initializer_list<const char*> known, const std::string& path, int step) {
  for (auto it = o.begin(); it != o.end(); ++it) {
    bool ok = false;
    for (const char* k : known) ok = ok || it.key() == k;
    if (!ok) {
      std::string list;
      for (const char* k : known) list += (list.empty() ? "" : ", ") + std::string(k);
      return bad(path, step, "\"" + it.key() + "\"", "is not a field of a lesson (known: " + list + ").");
    }
  }
  return Status();
}

Result<LessonClaim> parse_claim(const json& c, const std::string& path, int step, size_t i) {
  const std::string f = "claims[" + std::to_string(i) + "]";
  if (!c.is_object()) return bad(path, step, f, "must be an object.");
  if (Status s = check_keys(c, {"layer", "head", "metric", "min"}, path, step); !s) return s.error();
  LessonClaim k;
  for (auto [key, out] : {std::pair<const char*, int*>{"layer", &k.layer}, {"head", &k.head}}) {
    auto it = c.find(key);
    if (it == c.end() || !it->is_number_integer() || it->get<long long>() < 0 || it->get<long long>() >= kMaxDModel)
      return bad(path, step, f + "." + key, "must be a whole number from 0.");
    *out = static_cast<int>(it->get<long long>());
  }
  auto m = c.find("metric");
  if (m == c.end() || !m->is_string() || (*m != "prev_token" && *m != "induction"))
    return bad(path, step, f + ".metric", "must be \"prev_token\" or \"induction\".");
  k.metric = m->get<std::string>();
  auto mn = c.find("min");
  if (mn == c.end() || !mn->is_number() || !std::isfinite(mn->get<double>()) || mn->get<double>() <= 0 || mn->get<double>() > 1)
    return bad(path, step, f + ".min", "must be a number above 0 and at most 1 (a mean attention weight).");
  k.min = static_cast<float>(mn->get<double>());
  return k;
}

}  // namespace

Result<Lesson> parse_lesson(const std::string& text, const std::string& path) {
  if (Status s = check_json_limits(text, path, 16, "open a smaller lesson"); !s) return bad(path, 0, "", s.error().message + ".");
  json j;
  try {
    j = json::parse(text);
  } catch (const json::exception& e) {
    return bad(path, 0, "", std::string("is not valid JSON (") + e.what() + ").");
  }
  if (!j.is_object()) return bad(path, 0, "", "must be a JSON object with \"format\", \"title\" and \"steps\".");
  if (Status s = check_keys(j, {"format", "chapter", "title", "steps"}, path, 0); !s) return s.error();
  auto fmt = j.find("format");
  if (fmt == j.end() || !fmt->is_string() || *fmt != kLessonFormat)
    return bad(path, 0, "format", std::string("must be \"") + kLessonFormat + "\".");
  Lesson l;
  l.path = path;
  l.id = fs::path(path).stem().string();
  if (const size_t us = l.id.find('_'); us != std::string::npos) l.id = l.id.substr(0, us);
  Result<std::string> title = string_field(j, "title", path, 0, 200, true);
  if (!title) return title.error();
  l.title = *title;
  Result<std::string> chapter = string_field(j, "chapter", path, 0, 200, false);
  if (!chapter) return chapter.error();
  l.chapter = *chapter;
  auto steps = j.find("steps");
  if (steps == j.end() || !steps->is_array() || steps->empty())
    return bad(path, 0, "steps", "must be a list of at least one step.");
  if (steps->size() > kMaxLessonSteps) return bad(path, 0, "steps", "has more than " + std::to_string(kMaxLessonSteps) + " steps.");
  int n = 0;
  for (const json& st : *steps) {
    ++n;
    if (!st.is_object()) return bad(path, n, "", "must be an object with \"title\", \"text\" and \"set\".");
    if (Status s = check_keys(st, {"title", "text", "question", "reveal", "set", "claims", "in_corpus"}, path, n); !s) return s.error();
    LessonStep step;
    Result<std::string> t = string_field(st, "title", path, n, 200, true);
    if (!t) return t.error();
    step.title = *t;
    Result<std::string> body = string_field(st, "text", path, n, 4000, true);
    if (!body) return body.error();
    step.text = *body;
    Result<std::string> q = string_field(st, "question", path, n, 2000, false);
    if (!q) return q.error();
    step.question = *q;
    Result<std::string> r = string_field(st, "reveal", path, n, 4000, false);
    if (!r) return r.error();
    step.reveal = *r;
    auto set = st.find("set");
    if (set != st.end()) {
      if (!set->is_array()) return bad(path, n, "set", "must be a list of \"key=value\" strings.");
      if (set->size() > 64) return bad(path, n, "set", "has more than 64 settings.");
      // Each setting is applied, in order, to a scratch state from the base: a wrong key or
      // value is found now, with its place, and never in front of a class.
      AppState scratch;
      reset_to_lesson_base(scratch);
      size_t i = 0;
      for (const json& e : *set) {
        const std::string f = "set[" + std::to_string(i++) + "]";
        if (!e.is_string()) return bad(path, n, f, "must be a \"key=value\" string.");
        const std::string a = e.get<std::string>();
        if (a.size() > 20000) return bad(path, n, f, "is longer than 20000 bytes.");
        // Only the settings the table marks Data (settings_table.h): a lesson never writes or reads a file.
        if (Status s = apply_data_setting(scratch, a); !s) return bad(path, n, f + " \"" + a.substr(0, 80) + "\"", s.error().message);
        step.set.push_back(a);
      }
    }
    auto claims = st.find("claims");
    if (claims != st.end()) {
      if (!claims->is_array() || claims->size() > 16) return bad(path, n, "claims", "must be a list of at most 16 claims.");
      for (size_t i = 0; i < claims->size(); ++i) {
        Result<LessonClaim> c = parse_claim((*claims)[i], path, n, i);
        if (!c) return c.error();
        step.claims.push_back(*c);
      }
    }
    auto corpus = st.find("in_corpus");
    if (corpus != st.end()) {
      if (!corpus->is_boolean()) return bad(path, n, "in_corpus", "must be true or false.");
      step.in_corpus = corpus->get<bool>() ? 1 : 0;
    }
    l.steps.push_back(std::move(step));
  }
  return l;
}

Result<Lesson> load_lesson(const std::string& path) {
  Result<std::string> text = read_file(path, 1 << 20);
  if (!text) return text.error();
  return parse_lesson(*text, path);
}

std::vector<std::string> lesson_files() {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(asset_path("lessons"), ec))
    if (e.path().extension() == ".json") out.push_back(e.path().string());
  std::sort(out.begin(), out.end());
  return out;
}

Result<std::string> find_lesson(const std::string& name) {
  if (name.size() > 5 && name.substr(name.size() - 5) == ".json") return name;
  std::string want = name;
  if (!want.empty() && want.size() < 3 && std::all_of(want.begin(), want.end(), [](char c) { return c >= '0' && c <= '9'; }))
    want = std::string(3 - want.size(), '0') + want;
  std::string list;
  for (const std::string& f : lesson_files()) {
    const std::string stem = fs::path(f).stem().string();
    if (!want.empty() && stem.rfind(want, 0) == 0) return f;
    list += (list.empty() ? "" : ", ") + stem.substr(0, stem.find('_'));
  }
  return Error{ErrorKind::InvalidArgument, "No lesson \"" + name + "\"" +
                                               (list.empty() ? std::string(" (no lessons found in ") + asset_path("lessons") + ")."
                                                             : ": the lessons are " + list + ", or give a .json file.")};
}

void reset_to_lesson_base(AppState& s) {
  ModelConfig c;  // the defaults: word tokenizer, causal, positions, seed 7
  const std::string name = fs::path(kDefaultCheckpoint).filename().string();
  for (const CheckpointInfo& k : s.shipped)
    if (fs::path(k.path).filename() == name) {
      c.d_model = k.d_model;
      c.num_heads = k.num_heads;
      c.num_layers = k.num_layers;
      c.context = k.context;
    }
  if (s.shipped.empty()) c.d_model = 128, c.num_heads = 4, c.num_layers = 2, c.context = 128;  // the default's own, for validation without assets
  s.cfg = c;
  s.text = kDefaultSentence;
  s.ablated.clear();
  s.weights_mode = WeightsMode::Trained;
  s.checkpoint.clear();
  s.checkpoint_info.reset();
  s.pretrained.reset();
  s.pretrained_dir.clear();
  s.follow_training = true;
  const Colormap cm = s.view.colormap;
  s.view = ViewSettings();
  s.view.colormap = cm;
  s.selected_token = -1;
  s.show = {};
}

Status open_lesson(AppState& s, std::shared_ptr<const Lesson> lesson, int step) {
  if (!lesson || lesson->steps.empty()) return Error{ErrorKind::InvalidArgument, "The lesson has no steps."};
  s.lesson.lesson = std::move(lesson);
  return go_to_lesson_step(s, std::clamp(step, 0, static_cast<int>(s.lesson.lesson->steps.size()) - 1));
}

Status go_to_lesson_step(AppState& s, int step) {
  if (!s.lesson.lesson) return Error{ErrorKind::InvalidArgument, "No lesson is open (Help > Lessons)."};
  const Lesson& l = *s.lesson.lesson;
  if (step < 0 || step >= static_cast<int>(l.steps.size()))
    return Error{ErrorKind::InvalidArgument, "The lesson has steps 1 to " + std::to_string(l.steps.size()) + ", not " + std::to_string(step + 1) + "."};
  // Applied to a copy: a step that fails (a file changed under us) leaves the state as it was.
  AppState next = s;
  reset_to_lesson_base(next);
  for (const std::string& a : l.steps[step].set)
    if (Status st = apply_data_setting(next, a); !st)
      return Error{ErrorKind::InvalidArgument, "The lesson " + l.path + ", step " + std::to_string(step + 1) + ": " + st.error().message};
  const bool dropped_model = s.pretrained || !s.checkpoint.empty();
  s = std::move(next);
  s.lesson.step = step;
  s.lesson.revealed = false;
  s.lesson.applied = lesson_settings_of(s);
  s.lesson.stepped_at = std::chrono::steady_clock::now();
  if (dropped_model) s.status_lines.push_back("The lesson runs on the shipped model: the model you opened was set aside (File > Open it again).");
  return Status();
}

void close_lesson(AppState& s) {
  s.lesson = LessonState();
}

std::string lesson_note(const LessonStep& st) {
  std::string note = st.in_corpus == 1 ? "In the training text (memorised)." : st.in_corpus == 0 ? "Not in the training text." : "";
  for (const LessonClaim& c : st.claims) {  // held by a test on the shipped model (tests/app/test_lessons.cpp)
    char line[160];
    std::snprintf(line, sizeof line, "%sTested: head %d.%d's %s score is at least %.2f here.", note.empty() ? "" : " ", c.layer, c.head,
                  c.metric == "prev_token" ? "previous-token" : "induction", c.min);
    note += line;
  }
  return note;
}

bool lesson_controls_taken(const AppState& s) {
  return s.lesson.lesson && !s.lesson.animating && lesson_settings_of(s) != s.lesson.applied;
}

std::vector<std::string> lesson_settings_of(const AppState& s) {
  AppState base;
  base.shipped = s.shipped;
  reset_to_lesson_base(base);
  const ModelConfig& b = base.cfg;
  const ModelConfig& c = s.cfg;
  std::vector<std::string> out;
  auto num = [&](const char* key, long a, long v) {
    if (a != v) out.push_back(std::string(key) + "=" + std::to_string(v));
  };
  if (s.weights_mode != base.weights_mode) out.push_back("weights=random");
  num("d_model", b.d_model, c.d_model);
  num("heads", b.num_heads, c.num_heads);
  num("kv_heads", b.kv_heads(), c.kv_heads());
  num("layers", b.num_layers, c.num_layers);
  num("context", b.context, c.context);
  num("seed", static_cast<long>(b.seed), static_cast<long>(c.seed));
  if (c.causal != b.causal) out.push_back(std::string("causal=") + (c.causal ? "on" : "off"));
  if (c.positional != b.positional) out.push_back(std::string("positional=") + (c.positional ? "on" : "off"));
  for (const PitfallInfo& p : pitfall_list())
    if (c.pitfalls.*(p.flag)) out.push_back("pitfall=" + std::string(p.cli).substr(std::strlen("--pitfall-")) + "=on");
  if (s.text != base.text) out.push_back("text=" + s.text);
  for (const HeadId& id : s.ablated) out.push_back("ablate=" + std::to_string(id.layer) + "," + std::to_string(id.head));
  num("layer", base.view.layer, s.view.layer);
  num("head", base.view.head, s.view.head);
  num("sentence", base.view.batch, s.view.batch);
  if (s.view.center != base.view.center && s.view.center != CenterPanel::Input)
    out.push_back(std::string("panel=") + center_panel_name(s.view.center));
  num("focus_step", base.view.focus_step, s.view.focus_step);
  num("select_token", base.selected_token, s.selected_token);
  if (s.view.norm != base.view.norm) out.push_back(std::string("norm=") + normalisation_name(s.view.norm));
  if (s.view.log_scale) out.push_back("log_scale=on");
  if (s.view.heads_zoom != 1.0f && s.view.heads_zoom == std::floor(s.view.heads_zoom) && s.view.heads_zoom <= 4096)
    out.push_back("heads_zoom=" + std::to_string(static_cast<int>(s.view.heads_zoom)));
  if (s.view.compare_mode != 0) out.push_back(s.view.compare_show_correct ? "compare_view=b" : "compare_view=a");
  return out;
}

Status append_lesson_step(const std::string& path, const AppState& s, const std::string& title) {
  json j;
  std::error_code ec;
  if (fs::exists(path, ec)) {
    Result<Lesson> l = load_lesson(path);  // never append to a file we could not read back
    if (!l) return l.error();
    Result<std::string> text = read_file(path, 1 << 20);
    if (!text) return text.error();
    j = json::parse(*text);
  } else {
    j = {{"format", kLessonFormat}, {"title", "My lesson"}, {"steps", json::array()}};
  }
  if (j["steps"].size() >= static_cast<size_t>(kMaxLessonSteps))
    return Error{ErrorKind::InvalidArgument, "The lesson " + path + " already has " + std::to_string(kMaxLessonSteps) + " steps."};
  j["steps"].push_back({{"title", title}, {"text", "What to look at here."}, {"set", lesson_settings_of(s)}});
  const std::string out = j.dump(2) + "\n";
  if (Result<Lesson> check = parse_lesson(out, path); !check) return check.error();  // it reads back
  return write_file_atomic(path, out);
}

}  // namespace headmap
