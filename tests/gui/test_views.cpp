// GUI tests for the views researchers ask of heads (issue 39), each driven through the widgets
// a person uses (--input: real clicks and typing on labelled widgets, app/script/input.h).
// The numbers themselves are held to float64 numpy in tests/reference (lens_reference.py);
// here the window's controls must reach them and the export must carry what the view shows.
// Run by ctest on a virtual display (gui_views, tests/CMakeLists.txt).
#include <gtest/gtest.h>

#include <array>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "tests/gui/gui_harness.h"


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

// The circuits of a head: Contributions > Circuits draws head 1.3's OV and QK circuits, its
// directions and every earlier head's composition into it; the K button and a click on the
// composition grid pick head 0.2, whose own circuits follow (layer 0: no composition, said in
// the window). Each Export writes what the view shows: JSON equal to headmap-cli --circuit
// L.H's "circuit" and "circuit_composition", and the two maps as PNG and SVG.
TEST(Views, CircuitsThroughItsControlsAndExport) {
  const fs::path dir = fresh_dir("circuits-export");
  const std::string text = "My aunt keeps three green parrots in the kitchen. My aunt keeps three green";
  auto export_to = [](const fs::path& p) { return "click Export circuits...; expect Path; key ctrl+a; type " + p.string() + "; click OK; absent Path; frames 2; "; };
  const AppRun r = run_app("circuits", {"--then", "text=" + text, "--then", "layer=1", "--then", "head=3", "--then", "wait", "--input",
                                        "click Contributions; click Circuits; wait; frames 3; expect circuit OV; expect circuit QK; expect circuit directions; "
                                        "expect composition 0.2; " + export_to(dir / "c13.json") + export_to(dir / "c13.png") +
                                            export_to(dir / "c13.svg") + "click K; frames 2; click composition 0.2; wait; frames 3; expect circuit OV; "
                                            "expect no composition; " + export_to(dir / "c02.json")});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.report["view"]["layer"], 0) << r.report["view"].dump();
  EXPECT_EQ(r.report["view"]["head"], 2);
  for (const auto& [file, head] : {std::pair{"c13.json", "1.3"}, std::pair{"c02.json", "0.2"}}) {
    const json doc = read_json(dir / file);
    ASSERT_TRUE(doc.is_object()) << file << " " << r.report["messages"].dump();
    EXPECT_EQ(doc["text"], text);
    const json& c = doc["circuits"];
    EXPECT_EQ(std::to_string(c["circuit"]["layer"].get<int>()) + "." + std::to_string(c["circuit"]["head"].get<int>()), head);
    const fs::path cli_json = dir / (std::string(file) + ".cli.json");
    const std::string cmd = std::string(HEADMAP_CLI) + " --text '" + text + "' --circuit " + head + " --json '" + cli_json.string() + "' > /dev/null 2>&1";
    ASSERT_EQ(std::system(cmd.c_str()), 0);
    const json cli = read_json(cli_json);
    ASSERT_TRUE(cli.is_object());
    EXPECT_EQ(cli["contrib"]["circuit"], c["circuit"]) << file;
    EXPECT_EQ(cli["contrib"]["circuit_composition"], c["composition"]) << file;
  }
  // Head 1.3 reads the earlier layer: some composition is not 0; head 0.2 has none.
  const json c13 = read_json(dir / "c13.json"), c02 = read_json(dir / "c02.json");
  EXPECT_GT(c13["circuits"]["composition"]["q"][0][2].get<double>(), 0.0);
  EXPECT_EQ(c02["circuits"]["composition"]["v"][0][1].get<double>(), 0.0);
  std::ifstream png(dir / "c13.png", std::ios::binary);
  std::string magic(8, '\0');
  png.read(magic.data(), 8);
  EXPECT_EQ(magic, "\x89PNG\r\n\x1a\n");
  std::ifstream svg_in(dir / "c13.svg");
  const std::string svg((std::istreambuf_iterator<char>(svg_in)), std::istreambuf_iterator<char>());
  EXPECT_NE(svg.find("Circuits of head 1.3"), std::string::npos);
  EXPECT_NE(svg.find("copying score"), std::string::npos);
}

// Random init has no vocabulary: the view says so and still shows the composition, which
// needs only the attention weights.
TEST(Views, CircuitsOnRandomInitSaysWhy) {
  const AppRun r = run_app("circuits-random", {"--then", "weights=random", "--then", "layer=1", "--then", "wait", "--input",
                                               "click Contributions; click Circuits; wait; frames 3; expect no circuit; expect composition 0.0"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(has_message(r.report, "need trained weights")) << r.report["messages"].dump();
}

// The corpus search: a file made here is chosen through the Corpus view's file dialog and
// searched on the worker; the hits the window lists, and its export, equal headmap-cli
// --corpus's for the same file, head and number; the head chosen in the view is searched
// again from the index alone; ranked by the value-weighted norm (its radio button), as
// --corpus-stat value_norm; each index is kept in $XDG_CACHE_HOME/headmap. A file that is
// not UTF-8 is refused with its reason in the window, the results shown staying.
namespace {
fs::path corpus_file(const fs::path& dir, int lines) {
  const char* words[] = {"the", "cat", "sat", "on", "mat", "a", "dog", "ran", "after", "ball", "green", "parrots", "in", "kitchen", "my", "aunt"};
  std::ofstream out(dir / ("corpus-" + std::to_string(lines) + ".txt"));
  for (int i = 0; i < lines; ++i) {  // lines of different lengths, words repeating at different distances
    const int n = 4 + (i * 7) % 19;
    for (int w = 0; w < n; ++w) out << (w ? " " : "") << words[(i * 5 + w * w + w * (i % 3)) % 16];
    out << ".\n";
  }
  return dir / ("corpus-" + std::to_string(lines) + ".txt");
}
std::string choose_corpus(const fs::path& p) { return "click Choose a file...; expect Path; key ctrl+a; type " + p.string() + "; click OK; absent Path; "; }
std::string export_corpus(const fs::path& p) { return "click Export corpus search...; expect Path; key ctrl+a; type " + p.string() + "; click OK; absent Path; frames 2; "; }
json cli_corpus(const fs::path& file, const std::string& head, int top, const fs::path& out, const std::string& stat = "weight") {
  const std::string cmd = std::string(HEADMAP_CLI) + " --text x --corpus '" + file.string() + "' --corpus-head " + head + " --corpus-top " +
                          std::to_string(top) + " --corpus-stat " + stat + " --json '" + out.string() + "' > /dev/null 2>&1";
  EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
  const json cli = read_json(out);
  return cli.is_object() ? cli["contrib"]["corpus_search"] : json();
}
}  // namespace

TEST(Views, CorpusSearchThroughItsControlsAndExport) {
  const fs::path dir = fresh_dir("corpus-search");
  const fs::path good = corpus_file(dir, 60);
  const fs::path bad = dir / "latin1.txt";
  std::ofstream(bad) << "caf\xe9 au lait\nthe cat sat\n";
  const AppRun r = run_app("corpus", {"--then", "layer=1", "--then", "head=2", "--then", "wait", "--input",
                                      "click Contributions; click Corpus; frames 2; " + choose_corpus(good) + "wait; frames 3; expect corpus hit 1; " +
                                          export_corpus(dir / "h12.json") + export_corpus(dir / "h12.png") + export_corpus(dir / "h12.svg") +
                                          "report " + (dir / "first.json").string() + "; click corpus head; key ctrl+a; type 0; key enter; frames 3; "
                                          "click corpus examples; key ctrl+a; type 4; key enter; frames 3; " + export_corpus(dir / "h10.json") +
                                          "click value-weighted norm; wait; frames 3; " + export_corpus(dir / "h10v.json") + export_corpus(dir / "h10v.png") +
                                          choose_corpus(bad) + "wait; frames 3"},
                             true, {}, {{"XDG_CACHE_HOME", (dir / "cache").string()}});
  ASSERT_EQ(r.status, 0) << r.err;
  // The first search: head 1.2, ten examples, as the CLI finds them.
  const json first = read_json(dir / "first.json");
  ASSERT_TRUE(first.is_object());
  const json doc = read_json(dir / "h12.json");
  ASSERT_TRUE(doc.is_object()) << r.report["messages"].dump();
  EXPECT_EQ(doc["corpus"], good.string());
  const json cli12 = cli_corpus(good, "1.2", 10, dir / "cli12.json");
  EXPECT_EQ(doc["corpus_search"], cli12);
  ASSERT_EQ(cli12["hits"].size(), 10u);
  EXPECT_EQ(cli12["lines"], 60);
  std::vector<float> cli_weights, cli_text;
  for (const json& h : cli12["hits"]) cli_weights.push_back(h["weight"].get<float>());
  EXPECT_EQ(first["contrib"]["corpus_weights"].get<std::vector<float>>(), cli_weights);  // what the window listed
  std::vector<std::string> lines;
  for (const json& h : cli12["hits"]) lines.push_back(h["text"]);
  EXPECT_EQ(first["contrib"]["corpus_lines"].get<std::vector<std::string>>(), lines);
  EXPECT_EQ(first["contrib"]["corpus_offsets"].size(), cli12["offset_profile"]["by_offset"].size());
  // Head 1.0 with four examples, from the same index.
  const json doc10 = read_json(dir / "h10.json");
  ASSERT_TRUE(doc10.is_object());
  EXPECT_EQ(doc10["corpus_search"], cli_corpus(good, "1.0", 4, dir / "cli10.json"));
  // Ranked by the value-weighted norm (its radio button): searched again, as the CLI's
  // --corpus-stat value_norm, and other hits than the weights' (a test that can tell).
  const json doc10v = read_json(dir / "h10v.json");
  ASSERT_TRUE(doc10v.is_object());
  EXPECT_EQ(doc10v["corpus_search"]["stat"], "value_norm");
  EXPECT_EQ(doc10v["corpus_search"], cli_corpus(good, "1.0", 4, dir / "cli10v.json", "value_norm"));
  EXPECT_NE(doc10v["corpus_search"]["hits"], doc10["corpus_search"]["hits"]);
  // The indexes were kept on disk, in the cache the environment names: one per statistic.
  int kept = 0;
  for (const auto& e : fs::directory_iterator(dir / "cache" / "headmap")) kept += e.path().extension() == ".index";
  EXPECT_EQ(kept, 2);
  // The whole view as a page: every example's map (its own nested figure, over its own line's
  // tokens) and its line, under the offset profile's bars; the PNG the same page in pixels,
  // taller by the examples it holds (ten against four).
  auto png_size = [](const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    std::string head(24, '\0');
    in.read(head.data(), 24);
    EXPECT_EQ(head.substr(0, 8), "\x89PNG\r\n\x1a\n") << p;
    auto be32 = [&](size_t at) { return (uint32_t(uint8_t(head[at])) << 24) | (uint32_t(uint8_t(head[at + 1])) << 16) | (uint32_t(uint8_t(head[at + 2])) << 8) | uint8_t(head[at + 3]); };
    return std::array<uint32_t, 2>{be32(16), be32(20)};
  };
  const std::array<uint32_t, 2> png10 = png_size(dir / "h12.png"), png4 = png_size(dir / "h10v.png");
  EXPECT_GE(png10[0], 720u);
  EXPECT_GT(png10[1], png4[1] + 6 * 60) << png10[1] << " vs " << png4[1];  // six more examples, each a map of at least 60 pixels
  std::ifstream svg_in(dir / "h12.svg");
  const std::string svg((std::istreambuf_iterator<char>(svg_in)), std::istreambuf_iterator<char>());
  std::string svg_text;  // the text the page shows: tags out, wrapped lines joined
  for (size_t i = 0; i < svg.size(); ++i) {
    if (svg[i] == '<') {
      i = svg.find('>', i);
      if (i == std::string::npos) break;
      if (!svg_text.empty() && svg_text.back() != ' ') svg_text += ' ';
      continue;
    }
    if (svg[i] == '\n') {
      if (!svg_text.empty() && svg_text.back() != ' ') svg_text += ' ';
    } else {
      svg_text += svg[i];
    }
  }
  for (int i = 1; i <= 10; ++i) EXPECT_NE(svg.find("Head 1.2, example " + std::to_string(i) + " of 10"), std::string::npos) << i;
  size_t parts = 0;
  for (size_t at = svg.find("<svg class=\"part\""); at != std::string::npos; at = svg.find("<svg class=\"part\"", at + 1)) ++parts;
  EXPECT_EQ(parts, 10u);
  for (const std::string& line : lines) EXPECT_NE(svg_text.find(line), std::string::npos) << line;
  EXPECT_NE(svg.find("<g class=\"bars\">"), std::string::npos);
  // The Latin-1 file: refused with where its first bad byte is, in the window; head 1.0's four examples stay.
  EXPECT_TRUE(has_message(r.report, "is not UTF-8 text")) << r.report["messages"].dump();
  EXPECT_TRUE(has_message(r.report, "the first at byte 3")) << r.report["messages"].dump();
  std::vector<float> w10, s10;
  for (const json& h : doc10v["corpus_search"]["hits"]) w10.push_back(h["weight"].get<float>()), s10.push_back(h["score"].get<float>());
  EXPECT_EQ(r.report["contrib"]["corpus_weights"].get<std::vector<float>>(), w10);
  EXPECT_EQ(r.report["contrib"]["corpus_scores"].get<std::vector<float>>(), s10);
  EXPECT_EQ(r.report["contrib"]["corpus_stat"], "value_norm");
}

// Cancel: a long search stopped by its button ends "Cancelled", and the results of the search
// before it stay on screen.
TEST(Views, CorpusSearchCancelKeepsTheResultsBefore) {
  const fs::path dir = fresh_dir("corpus-cancel");
  const fs::path small = corpus_file(dir, 40), big = corpus_file(dir, 50000);
  const AppRun r = run_app("corpus-cancel", {"--then", "layer=1", "--then", "head=1", "--then", "wait", "--input",
                                             "click Contributions; click Corpus; frames 2; " + choose_corpus(small) + "wait; frames 3; " +
                                                 export_corpus(dir / "small.json") + choose_corpus(big) + "frames 3; expect Cancel corpus search; "
                                                 "click Cancel corpus search; wait; frames 3"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(has_message(r.report, "Cancelled: the results below are the previous search's")) << r.report["messages"].dump();
  const json small_doc = read_json(dir / "small.json");
  ASSERT_TRUE(small_doc.is_object());
  std::vector<float> w;
  for (const json& h : small_doc["corpus_search"]["hits"]) w.push_back(h["weight"].get<float>());
  ASSERT_EQ(w.size(), 10u);
  EXPECT_EQ(r.report["contrib"]["corpus_weights"].get<std::vector<float>>(), w);
  EXPECT_EQ(r.report["contrib"]["corpus_lines"].size(), 10u);
}
