// The app's parsers against hostile input (issue 11): view files, the settings file and
// the presets file of the wrong types or absurd sizes, and scripted settings out of range,
// are messages that leave the state as it was, never an abort.
#include <gtest/gtest.h>

#include <string>

#include "app/gui/app_state.h"
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
  const std::pair<const char*, const char*> refused[] = {
      {R"("ablated": 5})", "\"ablated\""},
      {R"("ablated": [[1]]})", "\"ablated\""},
      {R"("ablated": [["1", 0]]})", "\"ablated\""},
      {R"("ablated": [[0, 1.5]]})", "\"ablated\""},
      {R"("ablated": [[-1, 0]]})", "\"ablated\""},
      {R"("ablated": [[0, 99999]]})", "\"ablated\""},
      {R"("ablated": [[1, 18446744073709551615]]})", "\"ablated\""},
      {R"("heads_zoom": "big"})", "\"heads_zoom\""},
      {R"("heads_pan": [0.5]})", "\"heads_pan\""},
      {R"("focus_zoom": null})", "\"focus_zoom\""},
      {R"("focus_pan": {"x": 1}})", "\"focus_pan\""},
      {R"("selected_token": 1e9})", "\"selected_token\""},
      {R"("selected_token": 999999})", "\"selected_token\""},
      {R"("selected_token": -2})", "\"selected_token\""},
      {R"("compare_view": 3})", "\"compare_view\""},
      {R"("compare_view": "c"})", "\"compare_view\""},
  };
  for (const auto& [tail, field] : refused) {
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
