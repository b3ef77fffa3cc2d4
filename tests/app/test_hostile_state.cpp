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
