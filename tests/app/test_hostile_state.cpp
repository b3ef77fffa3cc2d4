// The app's parsers against hostile input (issue 11): view files, the settings file and
// the presets file of the wrong types or absurd sizes, and scripted settings out of range,
// are messages that leave the state as it was, never an abort.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <set>
#include <sstream>
#include <string>

#include "app/gui/app_state.h"
#include "app/gui/lessons.h"
#include "app/gui/presets.h"
#include "app/gui/settings.h"
#include "app/script/settings_table.h"

using namespace headmap;

namespace {
bool has(const std::string& s, const std::string& needle) { return s.find(needle) != std::string::npos; }
}  // namespace

// `{"format":6}` and `"version":"2"` aborted the app (exit 134); "head": 1e38 was a
// float-to-int overflow; a config of 46341 heads and layers overflowed num_layers * num_heads.
TEST(HostileState, ViewFilesOfWrongTypesAreMessages) {
  const std::string good = R"({"format": "headmap-view", "version": 1, "text": "a b", "config": {"d_model": 32, "num_heads": 4}})";
  AppState s;
  ASSERT_TRUE(parse_view(good, "v.json", s));
  EXPECT_EQ(s.cfg.d_model, 32);
  for (const std::string text :
       {R"({"format":6})", R"({"format":"headmap-view","version":"2"})", R"({"format":"headmap-view","version":1,"text":"x","config":{},"head":1e38})",
        R"({"format":"headmap-view","version":1,"text":"x","config":{"num_heads":46341,"num_layers":46341}})",
        R"({"format":"headmap-view","version":1,"text":"x","config":{"d_model":1e38}})",
        R"({"format":"headmap-view","version":1,"text":7,"config":{}})", R"({"format":"headmap-view","version":1,"text":"x","config":[]})",
        R"({"format":"headmap-view","version":1,"text":"x","config":{},"panel":3})", R"({"format":"headmap-view","version":-1e300})", "[1]", "",
        "\xff\xfe"}) {
    AppState before = s;
    Status st = parse_view(text, "v.json", s);
    EXPECT_FALSE(st) << text;
    if (!st) {
      EXPECT_TRUE(has(st.error().message, "v.json is not a view file headmap can open")) << st.error().message;
    }
    EXPECT_EQ(s.cfg, before.cfg) << "a refused view file changed the state: " << text;
    EXPECT_EQ(s.text, before.text);
  }
}

TEST(HostileState, SettingsAndPresetsOfWrongTypesAreMessages) {
  for (const char* text : {R"({"window_w": 1e38})", R"({"font_scale": "big"})", R"({"colormap": 3})", "[]", "{", R"({"window_h": -1e300})"}) {
    Result<Preferences> p = parse_preferences(text);
    if (p) {  // out of range numbers are clamped, as a slider would
      EXPECT_GE(p->window_w, 640) << text;
      EXPECT_LE(p->window_h, 8192) << text;
    } else {
      EXPECT_FALSE(p.error().message.empty());
    }
  }
  EXPECT_FALSE(parse_preferences(R"({"font_scale": "big"})"));
  EXPECT_EQ(parse_preferences(R"({"window_w": 1e38})")->window_w, 8192);
  for (const char* text : {R"({"presets": 5})", R"({"presets": [{"name": 1, "text": "x"}]})", R"({"presets": []})", "nope"}) {
    std::string error;
    Presets p = parse_presets(text, "presets.json", &error);
    EXPECT_EQ(p.items.size(), 1u) << text << ": the built-in sentence stands in";
    EXPECT_TRUE(has(error, "presets.json")) << error;
  }
}

// `--then heads=-1 --then ablate=0,0` aborted with std::length_error.
TEST(HostileState, ScriptedSettingsOutOfRangeAreRefused) {
  AppState s;
  for (const char* a : {"heads=-1", "heads=0", "d_model=-5", "layers=1000", "context=0", "layer=-1", "head=-2", "seed=-1", "heads=12abc", "heads=1e9",
                        "train_steps=-3", "heads=99999999999"})
    EXPECT_FALSE(apply_setting(s, a).ok()) << a;
  EXPECT_TRUE(apply_setting(s, "heads=3").ok());  // an indivisible pair is allowed: it is a lesson
  EXPECT_TRUE(apply_setting(s, "ablate=0,0").ok());
}

// Views reopen exactly (issue 22): the heads switched off, the zoom and pan of the heads
// grid and of Focus, the clicked token and the Compare tab's view go through a view file.
TEST(HostileState, ViewFilesKeepAblationZoomTokenAndCompare) {
  AppState s;
  s.text = "one two three\nthe cat sat";
  s.weights_mode = WeightsMode::Random;
  s.ablated = {HeadId{1, 1}, HeadId{0, 3}, HeadId{1, 9}};  // 1.9: kept for a larger config
  s.view.heads_zoom = 2.5f, s.view.heads_pan_x = 0.25f, s.view.heads_pan_y = 0.75f;
  s.view.zoom = 3.0f, s.view.pan_x = 0.4f, s.view.pan_y = 0.6f;
  s.view.compare_mode = 1, s.view.compare_show_correct = 1;
  s.view.batch = 1, s.view.layer = 1, s.view.head = 2;
  s.view.center = CenterPanel::Compare;
  s.selected_token = 2;
  const std::string path = testing::TempDir() + "/view-roundtrip.headmap.json";
  ASSERT_TRUE(save_view(path, s));
  AppState t;
  ASSERT_TRUE(load_view(path, t));
  EXPECT_EQ(t.ablated, s.ablated);
  EXPECT_EQ(t.view.heads_zoom, 2.5f);
  EXPECT_EQ(t.view.heads_pan_x, 0.25f);
  EXPECT_EQ(t.view.heads_pan_y, 0.75f);
  EXPECT_EQ(t.view.zoom, 3.0f);
  EXPECT_EQ(t.view.pan_x, 0.4f);
  EXPECT_EQ(t.view.pan_y, 0.6f);
  EXPECT_EQ(t.view.compare_mode, 1);
  EXPECT_EQ(t.view.compare_show_correct, 1);
  EXPECT_EQ(t.selected_token, 2);
  EXPECT_EQ(t.view.batch, 1);
  EXPECT_EQ(t.view.layer, 1);
  EXPECT_EQ(t.view.head, 2);
  EXPECT_EQ(t.view.center, CenterPanel::Compare);
  EXPECT_EQ(t.text, s.text);
  // The note for the head the config does not have (H = 4 by default) names the field.
  bool noted = false;
  for (const std::string& l : t.status_lines) noted = noted || has(l, "\"ablated\"");
  EXPECT_TRUE(noted);

  // An older file (version 2, none of these fields) opens with them at their defaults,
  // also over a state that had them set.
  const std::string v2 = R"({"format": "headmap-view", "version": 2, "text": "a b", "config": {}, "weights": {"mode": "random", "source": "random"}})";
  ASSERT_TRUE(parse_view(v2, "old.json", t));
  EXPECT_TRUE(t.ablated.empty());
  EXPECT_EQ(t.view.heads_zoom, 1.0f);
  EXPECT_EQ(t.view.zoom, 1.0f);
  EXPECT_EQ(t.view.compare_mode, 0);
  EXPECT_EQ(t.selected_token, -1);
}

// The new fields of the wrong type or impossible are refused, naming the field, and leave
// the state as it was; a huge zoom or a pan off the map is clamped, with a note naming it.
TEST(HostileState, ViewFilesNewFieldsAreCheckedByName) {
  const std::string head = R"({"format": "headmap-view", "version": 3, "text": "x", "config": {}, )";
  // Each tail breaks one field, the first key in it: the message must name that field.
  const char* const refused[] = {
      R"("ablated": 5})", R"("ablated": [[1]]})", R"("ablated": [["1", 0]]})", R"("ablated": [[0, 1.5]]})",
      R"("ablated": [[-1, 0]]})", R"("ablated": [[0, 99999]]})", R"("ablated": [[1, 18446744073709551615]]})",
      R"("heads_zoom": "big"})", R"("heads_pan": [0.5]})", R"("focus_zoom": null})", R"("focus_pan": {"x": 1}})",
      R"("selected_token": 1e9})", R"("selected_token": 999999})", R"("selected_token": -2})", R"("compare_view": 3})",
      R"("compare_view": "c"})",
  };
  for (const std::string tail : refused) {
    const std::string field = tail.substr(0, tail.find(':'));  // "\"ablated\""
    AppState s;
    s.ablated = {HeadId{0, 0}};
    s.view.heads_zoom = 2.0f;
    const AppState before = s;
    const Status st = parse_view(head + tail, "v.json", s);
    EXPECT_FALSE(st) << tail;
    if (!st) {
      EXPECT_TRUE(has(st.error().message, "v.json is not a view file headmap can open")) << st.error().message;
      EXPECT_TRUE(has(st.error().message, field)) << st.error().message;
    }
    EXPECT_EQ(s.ablated, before.ablated) << tail;
    EXPECT_EQ(s.view.heads_zoom, before.view.heads_zoom) << tail;
  }
  AppState s;
  ASSERT_TRUE(parse_view(head + R"("heads_zoom": 1e300, "focus_zoom": 1e300, "focus_pan": [-3, 0.5], "heads_pan": [0.5, 1e38]})", "v.json", s));
  EXPECT_EQ(s.view.heads_zoom, 2048.0f);
  EXPECT_EQ(s.view.zoom, 64.0f);
  EXPECT_EQ(s.view.pan_x, 0.0f);
  EXPECT_EQ(s.view.heads_pan_y, 1.0f);
  std::string notes;
  for (const std::string& l : s.status_lines) notes += l + "\n";
  for (const char* field : {"\"heads_zoom\"", "\"focus_zoom\"", "\"focus_pan\"", "\"heads_pan\""}) EXPECT_TRUE(has(notes, field)) << notes;
}

// Issue 35, F1: a lesson is data. A step's "set" could hold save_view=PATH (or any export),
// whose dialog pressed OK by itself: opening a shared lesson overwrote a file of the
// reader's. Every setting that writes or reads a file, opens a model or starts work is
// refused from a lesson, naming the key; the file the lesson aims at stays byte-identical.
TEST(HostileState, LessonStepsNeverWriteOrReadFiles) {
  const std::string victim = testing::TempDir() + "/lesson-victim.json";
  const std::string precious = "{\"mine\": \"do not touch\"}\n";
  std::ofstream(victim, std::ios::binary) << precious;
  const std::string writers[] = {"save_view=", "export_heads=", "export_head=", "export_window=", "export_npy=", "export_json=",
                                 "export_rollout=", "export_lesson=", "open_model=", "compare_b=file:", "lesson=", "train=1", "generate=1"};
  for (const std::string& w : writers) {
    const std::string a = w + (w.back() == '=' || w.back() == ':' ? victim : "");
    const std::string lesson = R"({"format": "headmap-lesson-1", "title": "T", "steps": [{"title": "a", "text": "b", "set": ["heads=2", ")" + a + R"("]}]})";
    const std::string path = testing::TempDir() + "/hostile-lesson.json";
    std::ofstream(path, std::ios::binary) << lesson;
    const Result<Lesson> l = load_lesson(path);
    EXPECT_FALSE(l) << a << ": a lesson step that writes or reads a file was accepted";
    if (!l) {
      EXPECT_TRUE(has(l.error().message, "step 1, set[1]")) << l.error().message;
      EXPECT_TRUE(has(l.error().message, "cannot be part of a lesson")) << l.error().message;
    }
    // Played anyway (a Lesson built in memory): the step is refused and nothing is requested.
    Lesson forged;
    forged.path = path;
    forged.steps.push_back(LessonStep{"a", "b", "", "", {"heads=2", a}, {}, -1});
    AppState s;
    EXPECT_FALSE(open_lesson(s, std::make_shared<const Lesson>(forged))) << a;
    EXPECT_FALSE(s.dialog_request.has_value()) << a;
    EXPECT_TRUE(s.open_model_request.empty()) << a;
    EXPECT_TRUE(s.compare_b.load_request.empty()) << a;
  }
  std::stringstream now;
  now << std::ifstream(victim, std::ios::binary).rdbuf();
  EXPECT_EQ(now.str(), precious);
  // The rule is the table's: every setting not marked Data is refused from a file, and the
  // shipped lessons' settings all are Data.
  for (const ScriptedSetting& st : scripted_settings()) {
    AppState s;
    const Status applied = apply_data_setting(s, std::string(st.key) + "=" + victim);
    if (st.reach != SettingReach::Data) {
      EXPECT_FALSE(applied) << st.key;
      EXPECT_FALSE(s.dialog_request.has_value()) << st.key;
    }
  }
}

// Issue 35, F1 and F14: a view file naming a model (a model directory, a checkpoint, or
// version 1's checkpoint) is not read on the file's word: the path is put to the person,
// the current model and config stay, and the view's config waits for their Open. Before, the
// path was read at once (any file the view named: /etc/passwd's first bytes became a number
// in the message).
TEST(HostileState, ViewFilesAskBeforeOpeningTheModelTheyName) {
  const std::string head = R"({"format": "headmap-view", "version": 2, "text": "the view's text", "config": {"d_model": 48, "num_heads": 3}, )";
  const std::pair<std::string, std::string> named[] = {
      {head + R"("weights": {"mode": "trained", "source": "model", "model_dir": "/etc"}})", "/etc"},
      {head + R"("weights": {"mode": "trained", "source": "checkpoint", "checkpoint": "/etc/passwd"}})", "/etc/passwd"},
      {R"({"format": "headmap-view", "version": 1, "text": "the view's text", "config": {"d_model": 48, "num_heads": 3}, "checkpoint": "/etc/passwd"})",
       "/etc/passwd"},
  };
  for (const auto& [text, path] : named) {
    AppState s;
    const ModelConfig before = s.cfg;
    const Status st = parse_view(text, "shared.json", s);
    ASSERT_TRUE(st) << st.error().message;
    ASSERT_TRUE(s.ask_open_model.has_value()) << text;
    EXPECT_EQ(s.ask_open_model->path, path);
    EXPECT_EQ(s.ask_open_model->named_by, "shared.json");
    EXPECT_EQ(s.ask_open_model->cfg.d_model, 48);
    EXPECT_EQ(s.cfg, before) << "the view's config waits for the answer";
    EXPECT_EQ(s.text, "the view's text") << "the rest of the view shows at once";
    EXPECT_TRUE(s.checkpoint.empty());
    EXPECT_FALSE(s.pretrained);
    EXPECT_TRUE(s.open_model_request.empty()) << "nothing is read before the person answers";
    AppState declined = s;
    answer_open_model(declined, false);
    EXPECT_FALSE(declined.ask_open_model.has_value());
    EXPECT_TRUE(declined.open_model_request.empty());
    ASSERT_FALSE(declined.status_lines.empty());
    EXPECT_TRUE(has(declined.status_lines.back(), "was not opened")) << declined.status_lines.back();
    answer_open_model(s, true);
    EXPECT_EQ(s.open_model_request, path);
    ASSERT_TRUE(s.after_open.has_value());
    EXPECT_EQ(s.after_open->cfg.d_model, 48);
  }
}

// The scripted runs' reference (app/script/README.md, beside the settings table) lists the
// settings a lesson may not carry; the list is the table's, key for key.
TEST(HostileState, ReadmeNamesTheSettingsOnlyTheCommandLineGives) {
  std::ifstream f(std::filesystem::path(HEADMAP_README).parent_path() / "app" / "script" / "README.md");
  ASSERT_TRUE(f);
  std::stringstream ss;
  ss << f.rdbuf();
  const std::string readme = ss.str();
  const size_t from = readme.find("For the command line alone"), to = readme.find("A File dialog presses OK", from);
  ASSERT_NE(from, std::string::npos);
  ASSERT_NE(to, std::string::npos);
  std::set<std::string> listed, table;
  for (size_t at = readme.find('`', from); at < to; at = readme.find('`', at + 1)) {
    const size_t end = readme.find('`', at + 1);
    listed.insert(readme.substr(at + 1, end - at - 1));
    at = end;
  }
  for (const ScriptedSetting& st : scripted_settings())
    if (st.reach != SettingReach::Data) table.insert(st.key);
  EXPECT_EQ(listed, table);
}
