// Lessons (assets/lessons, app/gui/lessons.h): the shipped files validate, hostile files
// are refused with a message naming the file, the step and the field, a step restores its
// state after the user took the controls, a saved view becomes a step that reaches the same
// state, and what the lessons say about the shipped model and its corpus is true.
//
// B = batch, T = tokens, L = layers, H = heads
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <string>

#include "app/common/model_options.h"
#include "app/gui/app_state.h"
#include "app/gui/lessons.h"
#include "app/script/settings_table.h"
#include "core/inspect/metrics.h"
#include "core/io/checkpoint.h"
#include "core/io/file_io.h"
#include "core/model/model.h"
#include "core/train/english.h"

namespace fs = std::filesystem;
using namespace headmap;

namespace {

const fs::path kSource = fs::path(HEADMAP_README).parent_path();

std::vector<Lesson> shipped_lessons() {
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(kSource / "assets" / "lessons"))
    if (e.path().extension() == ".json") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  std::vector<Lesson> out;
  for (const fs::path& f : files) {
    Result<Lesson> l = load_lesson(f.string());
    EXPECT_TRUE(l) << l.error().message;
    if (l) out.push_back(std::move(l).value());
  }
  return out;
}

// The text a step shows: its own text= setting, else the base state's sentence.
std::string step_text(const LessonStep& st) {
  std::string text = kDefaultSentence;
  for (const std::string& a : st.set)
    if (a.rfind("text=", 0) == 0) text = a.substr(5);
  return text;
}

std::string error_of(const std::string& json) {
  Result<Lesson> l = parse_lesson(json, "my-lesson.json");
  return l ? std::string() : l.error().message;
}

}  // namespace

TEST(Lessons, TheShippedLessonsValidateOnePerChapter) {
  const std::vector<Lesson> ls = shipped_lessons();
  ASSERT_EQ(ls.size(), 5u);
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(ls[i].id, "00" + std::to_string(i));
    EXPECT_GE(ls[i].steps.size(), 4u) << ls[i].path;
    for (const LessonStep& st : ls[i].steps) {
      EXPECT_LE(st.text.size(), 400u) << ls[i].path << ": " << st.title << ": a step's text is short, for a class";
      EXPECT_FALSE(st.title.empty());
    }
  }
}

// Every pitfall switch of the chapters (003's list and 000's W_O) is shown in some lesson,
// and so is the shape table of 004 (random init, D 512, H 8 on the Passport tab).
TEST(Lessons, TheLessonsCoverEveryPitfallAndTheShapeTable) {
  std::string all;
  for (const Lesson& l : shipped_lessons())
    for (const LessonStep& st : l.steps)
      for (const std::string& a : st.set) all += a + "\n";
  for (const PitfallInfo& p : pitfall_list())
    EXPECT_NE(all.find("pitfall=" + std::string(p.cli).substr(10) + "=on"), std::string::npos) << p.cli;
  EXPECT_NE(all.find("heads=3\n"), std::string::npos) << "not divisible";
  EXPECT_NE(all.find("kv_heads=1\n"), std::string::npos) << "multi-query";
  EXPECT_NE(all.find("ablate=1,1\n"), std::string::npos) << "pruning";
  EXPECT_NE(all.find("d_model=512\nheads=8\nlayers=1\n"), std::string::npos) << "004's shape table";
}

TEST(Lessons, HostileFilesAreRefusedWithTheFileTheStepAndTheField) {
  const std::string head = R"({"format": "headmap-lesson-1", "title": "T", "steps": [)";
  const std::string ok = R"({"title": "a", "text": "b", "set": ["heads=2"]})";
  struct Case {
    std::string json, want1, want2;
  };
  const Case cases[] = {
      {"", "my-lesson.json", "not valid JSON"},
      {"[1, 2]", "my-lesson.json", "JSON object"},
      {R"({"format": "headmap-lesson-9", "title": "T", "steps": []})", "format", "headmap-lesson-1"},
      {head + "]}", "steps", "at least one step"},
      {head + ok + R"(, {"title": "a", "text": "b", "set": ["hedas=4"]}]})", "step 2, set[0] \"hedas=4\"", "Unknown setting \"hedas\""},
      {head + ok + R"(, {"title": "a", "text": "b", "set": ["heads=-1"]}]})", "step 2, set[0]", "from 1 to"},
      {head + R"({"title": "a", "text": "b", "set": ["train=1"]}]})", "step 1, set[0]", "cannot be part of a lesson"},
      {head + R"({"title": "a", "text": "b", "set": ["lesson_step=1"]}]})", "step 1, set[0]", "cannot be part"},
      {head + R"({"title": "a", "set": []}]})", "step 1, text", "missing"},
      {head + R"({"title": "a", "text": 7}]})", "step 1, text", "must be a string"},
      {head + R"({"title": "a", "text": "b", "colour": "red"}]})", "step 1, \"colour\"", "not a field"},
      {head + R"({"title": "a", "text": "b", "set": "heads=2"}]})", "step 1, set", "list"},
      {head + R"({"title": "a", "text": "b", "claims": [{"layer": 0, "head": 0, "metric": "magic", "min": 0.5}]}]})", "claims[0].metric",
       "prev_token"},
      {head + R"({"title": "a", "text": "b", "claims": [{"layer": 0, "head": 0, "metric": "induction", "min": 7}]}]})", "claims[0].min",
       "at most 1"},
      {head + R"({"title": "a", "text": "b", "in_corpus": "yes"}]})", "step 1, in_corpus", "true or false"},
      {head + R"({"title": "a", "text": "b", "set": ["ablate=9,9"]}]})", "step 1, set[0]", "No such head"},
  };
  for (const Case& c : cases) {
    const std::string e = error_of(c.json);
    EXPECT_NE(e.find("my-lesson.json"), std::string::npos) << c.json << "\n-> " << e;
    EXPECT_NE(e.find(c.want1), std::string::npos) << c.json << "\n-> " << e;
    EXPECT_NE(e.find(c.want2), std::string::npos) << c.json << "\n-> " << e;
  }
  std::string many = head;
  for (int i = 0; i <= kMaxLessonSteps; ++i) many += (i ? "," : "") + ok;
  EXPECT_NE(error_of(many + "]}").find("more than"), std::string::npos);
  EXPECT_EQ(error_of(head + ok + "]}"), "");
}

// A step is the base state plus its settings, whatever came before; after the user moves a
// control, the player notices, and going to the step again restores it.
TEST(Lessons, AStepRestoresItsStateAfterTheUserTookTheControls) {
  Result<Lesson> l = parse_lesson(R"({"format": "headmap-lesson-1", "title": "T", "steps": [
      {"title": "a", "text": "b", "set": ["weights=random", "d_model=24", "heads=6", "panel=passport", "ablate=1,2"]},
      {"title": "c", "text": "d", "set": ["pitfall=scale-d-model=on", "layer=1", "norm=global", "text=Hello there."]}]})",
                                  "t.json");
  ASSERT_TRUE(l) << l.error().message;
  AppState s;
  s.cfg.num_layers = 5;
  s.view.colormap = Colormap::Magma;  // the user's preference stays
  ASSERT_TRUE(open_lesson(s, std::make_shared<const Lesson>(*l)));
  EXPECT_EQ(s.cfg.d_model, 24);
  EXPECT_EQ(s.cfg.num_heads, 6);
  EXPECT_EQ(s.cfg.num_layers, 2);  // the base state's
  EXPECT_EQ(s.weights_mode, WeightsMode::Random);
  EXPECT_EQ(s.view.center, CenterPanel::Passport);
  EXPECT_EQ(s.ablated.count(HeadId{1, 2}), 1u);
  EXPECT_EQ(s.view.colormap, Colormap::Magma);
  EXPECT_FALSE(lesson_controls_taken(s));
  s.cfg.num_heads = 3;  // the user takes the controls
  s.ablated.clear();
  EXPECT_TRUE(lesson_controls_taken(s));
  ASSERT_TRUE(go_to_lesson_step(s, 1));  // Next: nothing of step 1 leaks into step 2
  EXPECT_EQ(s.cfg.d_model, 128);
  EXPECT_EQ(s.cfg.num_heads, 4);
  EXPECT_EQ(s.weights_mode, WeightsMode::Trained);
  EXPECT_TRUE(s.cfg.pitfalls.scale_by_d_model);
  EXPECT_TRUE(s.ablated.empty());
  EXPECT_EQ(s.view.layer, 1);
  EXPECT_EQ(s.view.norm, Normalisation::Global);
  EXPECT_EQ(s.text, "Hello there.");
  ASSERT_TRUE(go_to_lesson_step(s, 0));  // Back: exactly step 1 again
  EXPECT_EQ(s.cfg.num_heads, 6);
  EXPECT_EQ(s.ablated.count(HeadId{1, 2}), 1u);
  EXPECT_FALSE(s.cfg.pitfalls.scale_by_d_model);
  EXPECT_FALSE(lesson_controls_taken(s));
  EXPECT_FALSE(go_to_lesson_step(s, 2));  // no step 3: a message, the state stays
  EXPECT_EQ(s.lesson.step, 0);
  // The scripted keys drive the same player.
  ASSERT_TRUE(apply_setting(s, "lesson_step=2"));
  EXPECT_EQ(s.lesson.step, 1);
  ASSERT_TRUE(apply_setting(s, "reveal=on"));
  EXPECT_TRUE(s.lesson.revealed);
  close_lesson(s);
  EXPECT_FALSE(apply_setting(s, "lesson_step=1"));
}

// File > Save view as lesson step: the current state, appended as a step, reaches the same
// state when the lesson shows that step.
TEST(Lessons, ASavedViewBecomesAStepThatReachesTheSameState) {
  const fs::path f = fs::temp_directory_path() / ("headmap-lesson-" + std::to_string(::getpid()) + ".json");
  fs::remove(f);
  AppState s;
  reset_to_lesson_base(s);
  for (const char* a : {"weights=random", "d_model=96", "heads=3", "kv_heads=1", "layers=3", "causal=off", "pitfall=interleaved=on",
                        "text=One line.\nAnd another.", "ablate=2,1", "layer=2", "head=1", "sentence=1", "panel=focus", "focus_step=4",
                        "select_token=2", "norm=layer", "log_scale=on", "compare_view=b"})
    ASSERT_TRUE(apply_setting(s, a)) << a;
  ASSERT_TRUE(append_lesson_step(f.string(), s, "Mine"));
  AppState other;
  reset_to_lesson_base(other);
  ASSERT_TRUE(append_lesson_step(f.string(), other, "Base"));  // appended, not replaced
  Result<Lesson> l = load_lesson(f.string());
  ASSERT_TRUE(l) << l.error().message;
  ASSERT_EQ(l->steps.size(), 2u);
  AppState t;
  ASSERT_TRUE(open_lesson(t, std::make_shared<const Lesson>(*l)));
  EXPECT_EQ(t.cfg, s.cfg);
  EXPECT_EQ(t.text, s.text);
  EXPECT_EQ(t.ablated, s.ablated);
  EXPECT_EQ(t.weights_mode, s.weights_mode);
  EXPECT_EQ(t.view.layer, 2);
  EXPECT_EQ(t.view.head, 1);
  EXPECT_EQ(t.view.batch, 1);
  EXPECT_EQ(t.view.center, CenterPanel::Focus);
  EXPECT_EQ(t.view.focus_step, 4);
  EXPECT_EQ(t.selected_token, 2);
  EXPECT_EQ(t.view.norm, Normalisation::PerLayer);
  EXPECT_TRUE(t.view.log_scale);
  EXPECT_EQ(t.view.compare_show_correct, 1);
  EXPECT_EQ(lesson_settings_of(t), lesson_settings_of(s));
  // A file that is not a lesson is never appended to (its bytes stay).
  ASSERT_TRUE(write_file_atomic(f.string(), "not a lesson"));
  EXPECT_FALSE(append_lesson_step(f.string(), s, "x"));
  EXPECT_EQ(*read_file(f.string()), "not a lesson");
  fs::remove(f);
}

// Honest examples (point 4). What a step claims a head does, it does on the shipped default
// model on the step's own text, by the metric and threshold the step states
// (core/inspect/metrics.h: prev_token, and repeat_induction_of_map for induction).
TEST(Lessons, WhatTheLessonsClaimHoldsOnTheShippedModel) {
  Result<ModelWeights> w = load_checkpoint((kSource / "assets" / kDefaultCheckpoint).string());
  ASSERT_TRUE(w) << w.error().message;
  ModelConfig cfg;
  cfg.d_model = w->d_model;
  cfg.num_heads = 4;
  cfg.num_layers = w->num_layers();
  cfg.context = w->context;
  int claims = 0;
  for (const Lesson& l : shipped_lessons())
    for (const LessonStep& st : l.steps) {
      if (st.claims.empty()) continue;
      // The claims are about the base model: a step that changes it cannot claim.
      for (const std::string& a : st.set)
        for (const char* k : {"weights=", "d_model=", "heads=", "kv_heads=", "layers=", "pitfall=", "ablate=", "causal=", "positional="})
          EXPECT_NE(a.rfind(k, 0), 0u) << l.path << ": " << st.title << " claims about the shipped model but sets " << a;
      const Batch batch = make_batch(split_lines(step_text(st)), cfg, *w);
      Result<ForwardOutput> out = forward(*w, cfg, batch);
      ASSERT_TRUE(out) << out.error().message;
      const std::vector<HeadMetrics> m = head_metrics(*out, batch);
      const std::vector<float> ind = text_induction_scores(*out, batch);
      for (const LessonClaim& c : st.claims) {
        ASSERT_LT(c.layer, out->L);
        ASSERT_LT(c.head, out->Hw);
        const size_t i = (static_cast<size_t>(c.layer) * out->B) * out->Hw + c.head;  // sentence 0
        const float got = c.metric == "prev_token" ? m[i].prev_token : ind[i];
        EXPECT_GE(got, c.min) << l.path << ": " << st.title << ": head " << c.layer << "." << c.head << " " << c.metric;
        ++claims;
      }
    }
  EXPECT_GE(claims, 3) << "the lessons claim a previous-token and an induction head";
}

// Honest examples (point 4): every step's sentence (its own text= or the base state's) is
// looked up in the training corpus (english-v1, assembled from Debian's packages and the
// shipped grammar) by the presets' rule (find_in_corpus), and the step is marked
// "in_corpus": true (the player says so) exactly when a piece of it occurs there. The
// shipped lessons use sentences of their own, as the presets do: the chapters' own were
// memorised, 19 to 30 times each.
TEST(Lessons, EveryStepIsMarkedWhenItsSentenceIsInTheCorpus) {
  Result<std::string> corpus = assemble_english_corpus();
  ASSERT_TRUE(corpus) << corpus.error().message << " (install " << kEnglishCorpusPackages << ")";
  const std::string lowered = ascii_lower(*corpus);
  int stated = 0, looked_up = 0;
  for (const Lesson& l : shipped_lessons())
    for (const LessonStep& st : l.steps) {
      stated += st.in_corpus >= 0;
      const std::vector<CorpusPiece> pieces = find_in_corpus(lowered, step_text(st));
      const bool any = std::any_of(pieces.begin(), pieces.end(), [](const CorpusPiece& p) { return p.found; });
      std::string found;
      for (const CorpusPiece& p : pieces) found += (p.found ? "\n  in english-v1: \"" : "\n  not in it: \"") + p.text + "\"";
      EXPECT_EQ(any, st.in_corpus == 1) << l.path << ": " << st.title << (any ? " is not marked" : " is marked") << found;
      EXPECT_FALSE(any) << l.path << ": " << st.title << ": the lessons use sentences of their own" << found;
      looked_up += static_cast<int>(pieces.size());
    }
  EXPECT_GE(stated, 5);
  EXPECT_GE(looked_up, 60);
}
