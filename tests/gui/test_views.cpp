// GUI tests for the views researchers ask of heads (issue 39), each driven through the widgets
// a person uses (--input: real clicks and typing on labelled widgets, app/script/input.h).
// The numbers themselves are held to float64 numpy in tests/reference (lens_reference.py);
// here the window's controls must reach them and the export must carry what the view shows.
// Run by ctest on a virtual display (gui_views, tests/CMakeLists.txt).
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "tests/gui/gui_harness.h"

namespace {
json read_json(const fs::path& p) {
  std::ifstream in(p);
  if (!in) return json();
  return json::parse(in, nullptr, false);
}
}  // namespace

// The logit lens: Contributions > Logit lens draws the grid; the target combo switches to the
// text's next token; the top-k slider's value reaches the computation; Export writes the
// JSON the view shows, the same document headmap-cli --logit-lens writes for the sentence.
TEST(Views, LogitLensThroughItsControlsAndExport) {
  const fs::path dir = fresh_dir("lens-export");
  const std::string text = "My aunt keeps three green parrots in the kitchen. My aunt keeps three green";
  const AppRun r = run_app("lens", {"--then", "text=" + text, "--then", "wait", "--input",
                                    "click Contributions; click Logit lens; wait; frames 3; expect lens cells; click lens target; "
                                    "click P(next token in the text); wait; frames 3; click lens cells; frames 2; click Export logit lens...; "
                                    "expect Path; key ctrl+a; type " + (dir / "lens.json").string() + "; click OK; absent Path; frames 2"});
  ASSERT_EQ(r.status, 0) << r.err;
  const json doc = read_json(dir / "lens.json");
  ASSERT_TRUE(doc.is_object()) << r.report["messages"].dump();
  EXPECT_EQ(doc["text"], text);
  const json& lens = doc["logit_lens"];
  EXPECT_EQ(lens["target"], "text");
  ASSERT_EQ(lens["points"].size(), 5u);  // the shipped default: 2 layers, so embed + 2 x (attn, mlp)
  EXPECT_EQ(lens["points"][0], "embed");
  EXPECT_EQ(lens["points"][4], "1 mlp");
  const size_t T = doc["token_ids"].size();
  ASSERT_GT(T, 10u);
  ASSERT_EQ(lens["top"][0].size(), T);
  EXPECT_EQ(lens["top"][0][0].size(), 5u);  // the default top-k
  EXPECT_TRUE(lens["targets"][T - 1].is_null());  // the last token has no next one in the text
  // The same sentence through headmap-cli: the export equals its document.
  const fs::path cli_json = dir / "cli.json";
  const std::string cmd = std::string(HEADMAP_CLI) + " --text '" + text + "' --logit-lens text --json '" + cli_json.string() + "' > /dev/null 2>&1";
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  const json cli = read_json(cli_json);
  ASSERT_TRUE(cli.is_object());
  EXPECT_EQ(cli["contrib"]["logit_lens"], lens);
}

// Random init has no vocabulary to read a layer out as: the view says so in the window.
TEST(Views, LogitLensOnRandomInitSaysWhy) {
  const AppRun r = run_app("lens-random", {"--then", "weights=random", "--then", "wait", "--input",
                                           "click Contributions; click Logit lens; wait; frames 3"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(has_message(r.report, "needs trained weights")) << r.report["messages"].dump();
}

// The head overview: Contributions > Head overview draws the grid, the ranking and the layout;
// the statistic combo picks the mean attention distance; Export writes the JSON the view shows,
// the same document headmap-cli --head-overview writes; Focus links back to it.
TEST(Views, HeadOverviewThroughItsControlsAndExport) {
  const fs::path dir = fresh_dir("overview-export");
  const std::string text = "My aunt keeps three green parrots in the kitchen. My aunt keeps three green";
  const AppRun r = run_app("overview", {"--then", "text=" + text, "--then", "wait", "--input",
                                        "click Contributions; click Head overview; wait; frames 3; expect overview map; click overview stat; "
                                        "click mean attention distance; frames 2; click overview map; frames 2; click Export head overview...; "
                                        "expect Path; key ctrl+a; type " + (dir / "overview.json").string() + "; click OK; absent Path; frames 2; "
                                        "click Focus; wait; frames 3; click All heads...; frames 3; expect overview map"});
  ASSERT_EQ(r.status, 0) << r.err;
  const json doc = read_json(dir / "overview.json");
  ASSERT_TRUE(doc.is_object()) << r.report["messages"].dump();
  const json& o = doc["head_overview"];
  ASSERT_EQ(o["similarity"].size(), 8u);  // the shipped default: 2 layers x 4 heads
  ASSERT_EQ(o["layout"].size(), 8u);
  for (const char* key : {"entropy", "first_token", "mean_distance", "prev_token", "detector_induction"})
    EXPECT_EQ(o["stats"][key].size(), 2u) << key;
  EXPECT_EQ(o["definitions"]["mean_distance"]["name"], "mean attention distance");
  const fs::path cli_json = dir / "cli.json";
  const std::string cmd = std::string(HEADMAP_CLI) + " --text '" + text + "' --head-overview --json '" + cli_json.string() + "' > /dev/null 2>&1";
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  const json cli = read_json(cli_json);
  ASSERT_TRUE(cli.is_object());
  EXPECT_EQ(cli["contrib"]["head_overview"], o);
  EXPECT_EQ(r.report["panel"], "contrib") << r.report["panel"];
}

// The offset profile: Contributions > Offsets draws every head by distance on a rotary family
// (a tiny random Llama); a click on the grid selects a head, whose profile and whose scores'
// shares by RoPE pair are drawn below; Export writes the JSON the view shows, the same
// document headmap-cli --offset-profile writes.
TEST(Views, OffsetProfileThroughItsControlsAndExport) {
  const fs::path dir = fresh_dir("offsets-export");
  const fs::path model = dir / "llama";
  const std::string make = "/usr/bin/python3 '" + std::string(HEADMAP_MAKE_FAMILY) + "' '" + model.string() + "' --variant llama > /dev/null 2>&1";
  if (std::system(make.c_str()) != 0) GTEST_SKIP() << "make_family_dir.py could not write the model (numpy missing?)";
  const std::string text = "The cat sat on the mat because it was warm and soft";
  const AppRun r = run_app("offsets", {"--model", model.string(), "--then", "text=" + text, "--then", "wait", "--input",
                                       "click Contributions; click Offsets; wait; frames 3; expect offsets grid; click offsets grid; frames 2; "
                                       "expect offset profile; expect offset frequencies; click Export offset profile...; expect Path; key ctrl+a; type " +
                                           (dir / "offsets.json").string() + "; click OK; absent Path; frames 2"});
  ASSERT_EQ(r.status, 0) << r.err;
  const json doc = read_json(dir / "offsets.json");
  ASSERT_TRUE(doc.is_object()) << r.report["messages"].dump();
  EXPECT_EQ(doc["text"], text);
  const json& o = doc["offset_profile"];
  const int len = o["len"].get<int>();
  ASSERT_GT(len, 5);
  EXPECT_TRUE(o["causal"].get<bool>());
  ASSERT_EQ(o["by_offset"].size(), 3u);  // make_family_dir.py's llama: 3 layers of 4 heads
  ASSERT_EQ(o["by_offset"][0].size(), 4u);
  EXPECT_EQ(o["by_offset"][0][0].size(), static_cast<size_t>(2 * len - 1));
  ASSERT_TRUE(o["frequencies"].is_object()) << o.dump();
  EXPECT_EQ(o["frequencies"]["share"].size(), 3u);
  const fs::path cli_json = dir / "cli.json";
  const std::string cmd = std::string(HEADMAP_CLI) + " --model '" + model.string() + "' --text '" + text + "' --offset-profile --json '" +
                          cli_json.string() + "' > /dev/null 2>&1";
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  const json cli = read_json(cli_json);
  ASSERT_TRUE(cli.is_object());
  EXPECT_EQ(cli["contrib"]["offset_profile"], o);
}

// The shipped default has learned positions: the view draws the distances and says in the
// window why there are no frequencies.
TEST(Views, OffsetProfileWithoutRopeSaysWhy) {
  const AppRun r = run_app("offsets-shipped", {"--then", "text=My aunt keeps three green parrots in the kitchen.", "--then", "wait", "--input",
                                               "click Contributions; click Offsets; wait; frames 3; expect offsets grid; expect no frequency profile"});
  ASSERT_EQ(r.status, 0) << r.err;
}
