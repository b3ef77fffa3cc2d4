// GUI tests: the real app under Xvfb, driven through its screenshot hook. Each test runs
// headmap, lets it render, and checks the PNG it wrote and the report of what it drew.
// Run by ctest on virtual displays (tests/gui/xvfb.sh; gui_tests_0 .. _3 and the others in tests/CMakeLists.txt).
#include <algorithm>
#include <cstring>
#include <gtest/gtest.h>

#include <functional>
#include <stb_image.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <map>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "app/common/colormap.h"
#include "app/common/heatmap_figure.h"
#include "app/common/heatmap_png.h"
#include "app/common/raster.h"
#include "core/inspect/metrics.h"
#include "core/math/packed_gemm.h"
#include "core/model/model.h"
#include "core/text/utf8.h"
#include "tests/gguf_writer.h"
#include "tests/gui/gui_harness.h"
#include "core/math/int8_products.h"

namespace fs = std::filesystem;
using nlohmann::json;
using headmap::Colormap;

namespace {

struct Image {
  int w = 0, h = 0;
  std::vector<unsigned char> px;  // RGB
  std::array<int, 3> at(int x, int y) const {
    const unsigned char* p = &px[(static_cast<size_t>(y) * w + x) * 3];
    return {p[0], p[1], p[2]};
  }
};

Image load_png(const fs::path& p) {
  Image im;
  int n = 0;
  unsigned char* data = stbi_load(p.c_str(), &im.w, &im.h, &n, 3);
  if (data) {
    im.px.assign(data, data + static_cast<size_t>(im.w) * im.h * 3);
    stbi_image_free(data);
  }
  return im;
}

// Is this pixel one of the colormap's colours (within a small tolerance)?
bool in_colormap(Colormap c, std::array<int, 3> rgb) {
  for (int i = 0; i < 256; ++i) {
    const auto q = headmap::colormap_rgb(c, i / 255.0f);
    int d = 0;
    for (int k = 0; k < 3; ++k) d = std::max(d, std::abs(static_cast<int>(std::lround(q[k] * 255)) - rgb[k]));
    if (d <= 6) return true;
  }
  return false;
}

// Fraction of sampled pixels inside a heatmap rect that belong to the colormap, and how
// many distinct colours were seen.
std::pair<double, size_t> colormap_share(const Image& im, const json& rect, Colormap c) {
  const int x0 = static_cast<int>(rect[0]) + 2, y0 = static_cast<int>(rect[1]) + 2;
  const int x1 = static_cast<int>(rect[2]) - 2, y1 = static_cast<int>(rect[3]) - 2;
  int hits = 0, total = 0;
  std::set<int> colours;
  for (int y = y0; y < y1; y += 3)
    for (int x = x0; x < x1; x += 3) {
      const auto p = im.at(x, y);
      ++total;
      if (in_colormap(c, p)) {
        ++hits;
        colours.insert(p[0] << 16 | p[1] << 8 | p[2]);
      }
    }
  return {total ? static_cast<double>(hits) / total : 0.0, colours.size()};
}

void write_text(const fs::path& p, const std::string& text) {
  std::ofstream f(p, std::ios::binary);
  f << text;
}

bool contains(const json& list, const std::string& needle) {
  for (const auto& m : list)
    if (m.get<std::string>().find(needle) != std::string::npos) return true;
  return false;
}

}  // namespace

TEST(Gui, ScreenshotShowsTheColormapInEveryHead) {
  const AppRun r = run_app("default", {});
  ASSERT_EQ(r.status, 0) << r.err;
  ASSERT_TRUE(r.report.is_object()) << r.err;
  ASSERT_EQ(r.report["heatmaps_drawn"], 4);
  const Image im = load_png(r.png);
  ASSERT_EQ(im.w, 1600);
  ASSERT_EQ(im.h, 1000);
  // A causal map is about half masked (grey): the rest is viridis. A sharp head (the
  // default's previous-token head 0.0) is two shades, its diagonal and the rest; the
  // others spread their weight, in many shades.
  size_t most = 0;
  for (const auto& rect : r.report["heatmaps"]) {
    const auto [share, distinct] = colormap_share(im, rect, Colormap::Viridis);
    EXPECT_GT(share, 0.25) << rect;
    EXPECT_GE(distinct, 2u) << rect;
    most = std::max(most, distinct);
  }
  EXPECT_GT(most, 8u) << "no head is drawn in more than 8 shades of the colormap";
  // Outside the maps there is no viridis: the colours come from the maps' texels.
  EXPECT_LT(colormap_share(im, json::array({20, 700, 300, 950}), Colormap::Viridis).first, 0.05);
}

TEST(Gui, ColormapSwitchChangesThePixels) {
  const AppRun r = run_app("magma", {"--colormap", "magma"});
  ASSERT_EQ(r.status, 0) << r.err;
  const Image im = load_png(r.png);
  const auto& rect = r.report["heatmaps"][0];
  EXPECT_GT(colormap_share(im, rect, Colormap::Magma).first, 0.3);
  EXPECT_LT(colormap_share(im, rect, Colormap::Viridis).first, 0.15);
}

TEST(Gui, HeatmapCountFollowsTheHeadsSliderAndParametersStay) {
  const AppRun four = run_app("heads4", {});
  const AppRun eight = run_app("heads8", {"--then", "heads=8"});
  const AppRun one = run_app("heads1", {"--then", "heads=1"});
  ASSERT_EQ(eight.status, 0) << eight.err;
  EXPECT_EQ(eight.report["heatmaps_drawn"], 8);
  EXPECT_EQ(one.report["heatmaps_drawn"], 1);
  EXPECT_EQ(eight.report["config"]["num_heads"], 8);
  // The passport shows the attention's parameters unchanged by H.
  EXPECT_EQ(four.report["attention_params"], eight.report["attention_params"]);
  EXPECT_EQ(one.report["attention_params"], eight.report["attention_params"]);
  const std::string T = std::to_string(eight.report["tokens"].size());  // the default sentence's tokens
  EXPECT_TRUE(contains(eight.report["passport_rows"], "q_view (1, " + T + ", 8, 16)")) << eight.report["passport_rows"];
}

// 128 heads at d_head 1: every head keeps its number, the maps stand in aligned columns (a
// three-digit title wider than its map once pushed the rest of its row along, and the last
// column off the window), and nothing is cut off.
TEST(Gui, ManyHeadsStayInAlignedColumnsInsideTheWindow) {
  const AppRun r = run_app("heads128", {"--then", "heads=128"});
  ASSERT_EQ(r.status, 0) << r.err;
  ASSERT_EQ(r.report["heatmaps_drawn"], 128);
  EXPECT_TRUE(r.report["clipped"].empty()) << r.report["clipped"].dump(1);
  const json& maps = r.report["heatmaps"];
  ASSERT_EQ(maps.size(), 128u);
  size_t cols = 0;
  while (cols < maps.size() && maps[cols][1] == maps[0][1]) ++cols;  // the first row: the same top
  ASSERT_GT(cols, 1u);
  for (size_t i = 0; i < maps.size(); ++i) {
    EXPECT_NEAR(static_cast<double>(maps[i][0]), static_cast<double>(maps[i % cols][0]), 0.5) << "map " << i << " left its column";
    EXPECT_LE(static_cast<double>(maps[i][2]), 1600.0) << "map " << i;
  }
  const json& titles = r.report["head_titles"];
  ASSERT_EQ(titles.size(), 128u);
  for (int h = 0; h < 128; ++h) EXPECT_NE(titles[h].get<std::string>().find(std::to_string(h)), std::string::npos) << titles[h];
  // 128 maps share atlas pages and are drawn as one batch: a handful of draw calls for the
  // whole window, not two or three per map (396 before the atlas), each ~40 us in llvmpipe.
  EXPECT_LT(r.report["draw_calls"].get<int>(), 60);
}

TEST(Gui, HeadTitlesNeverRunIntoTheNextColumn) {
  // Each title row (ablation box, title, label) ends before the next title of its row and
  // inside the window: on a 1024x768 projector with 16 and 128 heads, and on a desktop
  // screen. (Titles that used a share of the row's spare width ran into the next column's
  // box at 1024x768.)
  for (const auto& [size, heads] : {std::pair{"1024x768", "16"}, {"1024x768", "128"}, {"1600x1000", "16"}}) {
    const std::string name = std::string("titles") + size + "_" + heads;
    const AppRun r = run_app(name, {"--size", size, "--then", std::string("heads=") + heads});
    ASSERT_EQ(r.status, 0) << r.err;
    const json& rects = r.report["head_title_rects"];
    ASSERT_EQ(rects.size(), static_cast<size_t>(std::stoi(heads))) << name;
    const double width = std::stod(std::string(size).substr(0, std::string(size).find('x')));
    for (size_t i = 0; i < rects.size(); ++i) {
      EXPECT_LE(static_cast<double>(rects[i][2]), width) << name << ": title " << i << " leaves the window";
      if (i + 1 < rects.size() && rects[i + 1][1] == rects[i][1]) {  // the next title, same row
        EXPECT_LT(static_cast<double>(rects[i][2]), static_cast<double>(rects[i + 1][0]))
            << name << ": title " << i << " (" << r.report["head_titles"][i] << ") runs into the next column";
      }
    }
  }
}

TEST(Gui, InvalidPairShowsTheMessageAndTheFix) {
  const AppRun r = run_app("invalid", {"--d-model", "64", "--heads", "3"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(contains(r.report["messages"], "d_model 64 is not divisible by 3 heads: try 2 or 4")) << r.report["messages"];
  EXPECT_TRUE(contains(r.report["buttons"], "Use nearest valid"));
  EXPECT_EQ(r.report["config"]["num_heads"], 3) << "the invalid value stays on screen: nothing snaps silently";
  // Moving the slider to an invalid value keeps the last valid heads on screen.
  const AppRun moved = run_app("invalid-moved", {"--then", "heads=5"});
  EXPECT_TRUE(contains(moved.report["messages"], "not divisible by 5 heads: try 4 or 8"));
  EXPECT_EQ(moved.report["heatmaps_drawn"], 4);
}

TEST(Gui, TypingUpdatesTheTokens) {
  const AppRun r = run_app("typing", {"--type", "The dog ran."});
  ASSERT_EQ(r.status, 0) << r.err;
  // Sub-words of the model's BPE; a leading space shows as a small dot.
  EXPECT_EQ(r.report["tokens"], json({"The", "\xC2\xB7" "dog", "\xC2\xB7" "ran", "."}));
  EXPECT_EQ(r.report["heatmaps_drawn"], 4);
  // A word the trained vocabulary lacks falls back to pieces that spell it, never <unk>.
  const AppRun u = run_app("typing-unknown", {"--type", "The dog zzxqj."});
  ASSERT_EQ(u.status, 0) << u.err;
  std::string spelled;
  for (const auto& t : u.report["tokens"]) {
    std::string s = t.get<std::string>();
    if (s.rfind("\xC2\xB7", 0) == 0) s = " " + s.substr(2);
    spelled += s;
  }
  EXPECT_EQ(spelled, "The dog zzxqj.");
  EXPECT_GT(u.report["tokens"].size(), 4u) << "zzxqj is not in the shipped vocabulary";
  EXPECT_EQ(u.report["heatmaps_drawn"], 4);
}

// The incremental forward in the app (core/model/kv_cache.h): a text that extends the last
// one reuses its rows from the K/V cache and computes the new ones, which the heads panel
// says ("reused 5 rows, computed 1") and the report exposes; Generate appends the model's
// greedy next tokens, one request each, so every one reuses all the rows before it.
TEST(Gui, KvCacheReusesThePrefixAndGenerateAppendsTokens) {
  const AppRun r = run_app("kvcache", {"--text", "The cat sat on the", "--then", "text=The cat sat on the mat"});
  ASSERT_EQ(r.status, 0) << r.err;
  ASSERT_EQ(r.report["tokens"].size(), 6u) << r.report["tokens"];
  EXPECT_EQ(r.report["kv_cache"]["reused"], 5);
  EXPECT_EQ(r.report["kv_cache"]["computed"], 1);
  EXPECT_EQ(r.report["kv_cache"]["line"], "K/V cache: reused 5 rows (blue strip), computed 1 (orange)");
  EXPECT_NE(r.report["passport_kv"].get<std::string>().find("bytes per token"), std::string::npos) << r.report["passport_kv"];

  const AppRun g = run_app("kvcache-generate", {"--text", "The cat sat on the", "--then", "generate=3"});
  ASSERT_EQ(g.status, 0) << g.err;
  const std::string text = g.report["state"]["text"].get<std::string>();
  EXPECT_GT(text.size(), std::string("The cat sat on the").size()) << text;
  EXPECT_EQ(text.rfind("The cat sat on the", 0), 0u) << text;
  EXPECT_EQ(g.report["generate_pending"], 0);
  EXPECT_GE(g.report["tokens"].size(), 6u) << g.report["tokens"];
  // The last generated token reused every row before it (a BPE merge may rewrite one more).
  const int T = static_cast<int>(g.report["tokens"].size());
  EXPECT_GE(g.report["kv_cache"]["reused"].get<int>(), T - 2) << g.report["kv_cache"];
  EXPECT_EQ(g.report["kv_cache"]["reused"].get<int>() + g.report["kv_cache"]["computed"].get<int>(), T);
  EXPECT_TRUE(contains(g.report["buttons"], "Generate")) << g.report["buttons"];
}

TEST(Gui, EmptyTextSaysSoAndDrawsNothing) {
  const AppRun r = run_app("empty", {"--text", ""});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.report["heatmaps_drawn"], 0);
  EXPECT_TRUE(contains(r.report["messages"], "Nothing to attend over"));
}

TEST(Gui, InvalidUtf8FromAFileIsReportedNotFatal) {
  const fs::path f = tmp_dir() / "bad.txt";
  write_text(f, "caf\xC3 ol\xE9 \xF0\x9F\x98\x80 ok\n");
  const AppRun r = run_app("utf8", {"--file", f.string()});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(contains(r.report["messages"], "invalid UTF-8")) << r.report["messages"];
  EXPECT_EQ(r.report["heatmaps_drawn"], 4);
}

TEST(Gui, ViewFileReopensTheSameFigure) {
  const fs::path v = tmp_dir() / "view.json";
  write_text(v, R"({"format": "headmap-view", "version": 1, "text": "The lawyer who the jury believed told the truth.",
    "config": {"d_model": 24, "num_heads": 6, "num_layers": 1, "causal": false, "seed": 3},
    "layer": 0, "head": 2, "panel": "heads", "colormap": "magma"})");
  const AppRun r = run_app("view", {"--open", v.string()});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.report["config"]["d_model"], 24);
  EXPECT_EQ(r.report["config"]["causal"], false);
  EXPECT_EQ(r.report["colormap"], "magma");
  EXPECT_EQ(r.report["heatmaps_drawn"], 6);
  EXPECT_EQ(r.report["tokens"].size(), 10u);
  const Image im = load_png(r.png);
  // Bidirectional: no masked (grey) cells, colormap everywhere but the grid lines.
  EXPECT_GT(colormap_share(im, r.report["heatmaps"][0], Colormap::Magma).first, 0.6);
  int grey = 0, total = 0;
  const auto& q = r.report["heatmaps"][0];
  for (int y = static_cast<int>(q[1]) + 2; y < static_cast<int>(q[3]) - 2; y += 3)
    for (int x = static_cast<int>(q[0]) + 2; x < static_cast<int>(q[2]) - 2; x += 3, ++total) {
      const auto p = im.at(x, y);
      grey += std::abs(p[0] - 107) < 4 && std::abs(p[1] - 107) < 4 && std::abs(p[2] - 115) < 4;  // the mask colour
    }
  EXPECT_LT(grey, total / 50) << "no cell of a bidirectional map is masked";
}

TEST(Gui, CorruptViewFileGivesAClearMessage) {
  const fs::path v = tmp_dir() / "corrupt.json";
  write_text(v, "{\"format\": \"headmap-view\", \"text\": ");
  const AppRun r = run_app("corrupt", {"--open", v.string()}, false);
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("not a view file headmap can open"), std::string::npos) << r.err;
  const fs::path foreign = tmp_dir() / "foreign.json";
  write_text(foreign, "{\"hello\": 1}");
  const AppRun f = run_app("foreign", {"--open", foreign.string()}, false);
  EXPECT_EQ(f.status, 1);
  EXPECT_NE(f.err.find("\"format\": \"headmap-view\""), std::string::npos) << f.err;
  // Fields of the wrong type are a message, never an abort (these aborted before).
  int n = 0;
  for (const char* text : {"{\"format\":6}", "{\"format\":\"headmap-view\",\"version\":\"2\"}",
                           "{\"format\":\"headmap-view\",\"version\":1,\"text\":\"x\",\"config\":{},\"head\":1e38}"}) {
    const fs::path w = tmp_dir() / ("typed" + std::to_string(++n) + ".json");
    write_text(w, text);
    const AppRun t = run_app("typed" + std::to_string(n), {"--open", w.string()}, false);
    EXPECT_EQ(t.status, 1) << text << "\n" << t.err;
    EXPECT_NE(t.err.find("not a view file headmap can open"), std::string::npos) << text << "\n" << t.err;
  }
}

TEST(Gui, AnOversizedBatchIsRefusedWithAMessage) {
  std::string words;
  for (int i = 0; i < 2048; ++i) words += "w ";
  const AppRun r = run_app("huge", {"--context", "2048", "--layers", "12", "--heads", "8", "--text", words, "--text", words,
                                    "--text", words, "--text", words});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(contains(r.report["messages"], "use fewer sentences")) << r.report["messages"];
  EXPECT_EQ(r.report["heatmaps_drawn"], 0);
}

TEST(Gui, EveryPanelRendersAndLongSequencesWork) {
  for (const char* panel : {"focus", "model", "passport"}) {
    const AppRun r = run_app(std::string("panel-") + panel, {"--panel", panel});
    EXPECT_EQ(r.status, 0) << panel << ": " << r.err;
    EXPECT_EQ(r.report["panel"], panel);
    EXPECT_TRUE(fs::exists(r.png));
  }
  std::string words;
  for (int i = 0; i < 2048; ++i) words += "w" + std::to_string(i % 300) + " ";
  // The trained model reads at most 128 tokens and says so; random init reads all 2048.
  const AppRun t = run_app("long-trained", {"--context", "2048", "--text", words});
  ASSERT_EQ(t.status, 0) << t.err;
  EXPECT_EQ(t.report["tokens"].size(), 128u);
  EXPECT_TRUE(contains(t.report["messages"], "128")) << t.report["messages"];
  const AppRun r = run_app("long", {"--context", "2048", "--text", words, "--then", "weights=random"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.report["heatmaps_drawn"], 4);
  EXPECT_EQ(r.report["tokens"].size(), 2048u);
}

// The app opens on the shipped trained model, and its heads carry labels from the metrics.
TEST(Gui, OpensOnATrainedModelWithLabelledHeads) {
  // An everyday sentence said twice: the heads that copy from its first occurrence are
  // labelled induction (their score on the text itself).
  const AppRun r = run_app("trained", {"--text", "My grandmother planted tomatoes in the garden. My grandmother planted tomatoes in the garden."});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.report["trained"], true);
  EXPECT_EQ(r.report["weights_source"].get<std::string>().rfind("trained (D=128, H=4, L=2, ", 0), 0u) << r.report["weights_source"];
  EXPECT_TRUE(contains(r.report["head_labels"], "induction")) << r.report["head_labels"];
  EXPECT_GT(r.report["loss_on_text"].get<double>(), 0.0);

  // Off a shipped stop at the same d_model: the same weights, re-sliced, and it says so.
  const AppRun sliced = run_app("resliced", {"--then", "heads=16"});
  ASSERT_EQ(sliced.status, 0) << sliced.err;
  EXPECT_EQ(sliced.report["heatmaps_drawn"], 16);
  EXPECT_NE(sliced.report["weights_source"].get<std::string>().find("re-sliced from the H=4 training"), std::string::npos)
      << sliced.report["weights_source"];
  const AppRun random = run_app("random", {"--then", "weights=random"});
  EXPECT_EQ(random.report["trained"], false);
  EXPECT_EQ(random.report["weights_source"], "random init (seed 7)");
}

// A BERT directory (issue 27): sentence B in its own box, [CLS] and [SEP] chips, the fillers
// of a typed [MASK], a clicked chip masked with the masked-token loss, and a model without a
// masked-LM head saying so. GPT-2 shows no Sentence B box. (make_encoder_dir.py needs numpy.)
TEST(Gui, OpensABertDirectoryWithAPairAndMaskedWords) {
  const fs::path root = tmp_dir() / "encoders";
  for (const char* v : {"bert_pretraining", "bert_model_gamma"}) {
    const std::string make = std::string("/usr/bin/python3 '") + HEADMAP_MAKE_ENCODER + "' '" + (root / v).string() + "' --variant " + v +
                             " > /dev/null 2>&1";
    if (std::system(make.c_str()) != 0) GTEST_SKIP() << "numpy is missing: the tiny BERT directories cannot be written";
  }
  auto has_widget = [](const json& report, const std::string& label) {
    for (const json& w : report["widgets"])
      if (w["label"] == label) return true;
    return false;
  };
  const AppRun r = run_app("bert-pair", {"--model", (root / "bert_pretraining").string(), "--then", "text=The cat sat on the [MASK].",
                                         "--then", "pair=it was tired"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(has_widget(r.report, "Sentence B"));
  const std::vector<std::string> tokens = r.report["tokens"];
  ASSERT_EQ(tokens.size(), 13u);
  EXPECT_EQ(tokens[0], "[CLS]");
  EXPECT_EQ(tokens[8], "[SEP]");
  EXPECT_EQ(tokens[9], "it");  // sentence B after the first [SEP]
  EXPECT_EQ(tokens[12], "[SEP]");
  EXPECT_EQ(r.report["predictions"].size(), 5u);  // the typed [MASK]'s top 5 fillers
  EXPECT_EQ(r.report["config"]["causal"], false);
  const AppRun masked = run_app("bert-mask", {"--model", (root / "bert_pretraining").string(), "--then", "text=The cat sat on the [MASK].",
                                              "--then", "mask=0:2"});
  ASSERT_EQ(masked.status, 0) << masked.err;
  EXPECT_EQ(masked.report["tokens"][2], "[MASK]");  // "cat" masked, as a click on its chip does
  EXPECT_EQ(masked.report["predictions"].size(), 10u);
  EXPECT_GT(masked.report["loss_on_text"].get<double>(), 0.0);  // the masked-token loss of "cat"
  const AppRun headless = run_app("bert-headless", {"--model", (root / "bert_model_gamma").string(), "--then", "text=the [MASK] sat"});
  ASSERT_EQ(headless.status, 0) << headless.err;
  bool said = false;
  for (const json& m : headless.report["messages"]) said = said || m.get<std::string>().find("no masked-LM head") != std::string::npos;
  EXPECT_TRUE(said) << headless.report["messages"];
  const AppRun gpt = run_app("not-encoder", {});
  EXPECT_FALSE(has_widget(gpt.report, "Sentence B"));
}

// A pair's maps under the A/B filter (A→B: query rows in sentence A, key columns in B) and
// with the special tokens hidden: every cell outside is the same cell of the unfiltered run
// dimmed toward kFilteredRgb, every cell inside unchanged; the exported SVG says so. An edit
// that moves a masked word's token unmasks it; one that keeps it keeps the [MASK].
TEST(Gui, EncoderPairFilterAndHiddenSpecialsDimTheirCells) {
  const fs::path dir = tmp_dir() / "encoders" / "bert_pretraining";
  const std::string make = std::string("/usr/bin/python3 '") + HEADMAP_MAKE_ENCODER + "' '" + dir.string() +
                           "' --variant bert_pretraining > /dev/null 2>&1";
  if (std::system(make.c_str()) != 0) GTEST_SKIP() << "numpy is missing: the tiny BERT directory cannot be written";
  const std::vector<std::string> pair = {"--model", dir.string(), "--then", "text=The cat sat on the [MASK].", "--then", "pair=it was tired"};
  auto with = [&](std::vector<std::string> more) {
    std::vector<std::string> a = pair;
    a.insert(a.end(), more.begin(), more.end());
    return a;
  };
  const AppRun base = run_app("pair-all", pair);
  ASSERT_EQ(base.status, 0) << base.err;
  const fs::path cwd = fresh_dir("pair-filter-exports");
  const AppRun ab = run_app("pair-ab", with({"--then", "pair_filter=ab", "--then", "export_heads=heads.svg"}), true, cwd);
  ASSERT_EQ(ab.status, 0) << ab.err;
  const AppRun sp = run_app("pair-specials", with({"--then", "hide_specials=on"}));
  ASSERT_EQ(sp.status, 0) << sp.err;
  const int len = static_cast<int>(base.report["tokens"].size());
  ASSERT_EQ(len, 13);  // [CLS] the cat sat on the [MASK] . [SEP] | it was tired [SEP]
  const Image im0 = load_png(base.png), im_ab = load_png(ab.png), im_sp = load_png(sp.png);
  std::array<float, 3> dim;
  for (int k = 0; k < 3; ++k) dim[k] = headmap::kFilteredRgb[k] * 255;
  auto check = [&](const AppRun& r, const Image& im, const std::function<bool(int, int)>& dims) {
    ASSERT_EQ(r.report["heatmaps"], base.report["heatmaps"]) << "the same grid in both runs";
    int dimmed = 0, kept = 0;
    for (const json& g : base.report["heatmaps"]) {
      const double gx0 = g[0], gy0 = g[1], gw = static_cast<double>(g[2]) - gx0, gh = static_cast<double>(g[3]) - gy0;
      for (int t = 0; t < len; ++t)
        for (int s2 = 0; s2 < len; ++s2) {
          const int x = static_cast<int>(gx0 + (s2 + 0.5) * gw / len), y = static_cast<int>(gy0 + (t + 0.5) * gh / len);
          const auto p0 = im0.at(x, y), p1 = im.at(x, y);
          const bool d = dims(t, s2);
          for (int k = 0; k < 3; ++k) {
            const float want = d ? p0[k] + (dim[k] - p0[k]) * headmap::kFilterDim : p0[k];
            EXPECT_NEAR(p1[k], want, 3.0) << "query " << t << ", key " << s2 << (d ? " (dimmed)" : " (shown)");
          }
          (d ? dimmed : kept) += 1;
        }
    }
    EXPECT_GT(dimmed, 0);
    EXPECT_GT(kept, 0);
  };
  check(ab, im_ab, [](int t, int s2) { return !(t <= 8 && s2 >= 9); });                   // A = tokens 0-8, B = 9-12
  check(sp, im_sp, [](int t, int s2) { return t == 0 || t == 8 || t == 12 || s2 == 0 || s2 == 8 || s2 == 12; });  // [CLS], [SEP]s
  std::ifstream f(cwd / "heads.svg");
  const std::string svg((std::istreambuf_iterator<char>(f)), {});
  EXPECT_NE(svg.find("rows not renormalised"), std::string::npos);
  // A filter outside all|aa|ab|ba|bb is refused with its message.
  const AppRun bad = run_app("pair-bad", with({"--then", "pair_filter=ac"}), false);
  EXPECT_NE(bad.err.find("pair_filter is all, aa, ab, ba or bb"), std::string::npos) << bad.err;
  // Masked words and edits: "cat" masked, then the text changes under it, or beside it.
  const std::vector<std::string> masked = {"--model", dir.string(), "--then", "text=The cat sat on the mat.", "--then", "mask=0:2"};
  auto edit = [&](const std::string& name, const std::string& text) {
    std::vector<std::string> a = masked;
    a.insert(a.end(), {"--then", "text=" + text});
    const AppRun r = run_app(name, a);
    EXPECT_EQ(r.status, 0) << r.err;
    return r;
  };
  const AppRun moved = edit("mask-moved", "The dog sat on the mat.");
  EXPECT_EQ(moved.report["tokens"][2], "dog");
  bool said = false;
  for (const json& m : moved.report["messages"]) said = said || m.get<std::string>().find("unmasked: the text changed") != std::string::npos;
  EXPECT_TRUE(said) << moved.report["messages"];
  const AppRun shorter = edit("mask-shorter", "The cat sat.");
  for (const json& t : shorter.report["tokens"]) EXPECT_NE(t, "[MASK]");
  const AppRun kept = edit("mask-kept", "The cat sat on a mat.");
  EXPECT_EQ(kept.report["tokens"][2], "[MASK]");  // the same token at the same place: still masked
}

// A GPT-2 directory opens on every head, says which model it is, and re-slices when H moves;
// a directory that is not a model is refused with its message. (The tiny model is written
// by tests/reference/make_gpt2_dir.py, which needs numpy: skipped without it.)
TEST(Gui, OpensAGpt2DirectoryInHuggingFaceLayout) {
  const fs::path dir = tmp_dir() / "gpt2-tiny";
  const std::string make = std::string("/usr/bin/python3 '") + HEADMAP_MAKE_GPT2 + "' '" + dir.string() +
                           "' --d 48 --heads 4 --layers 3 --positions 32 > /dev/null 2>&1";
  if (std::system(make.c_str()) != 0) GTEST_SKIP() << "numpy is missing: the tiny GPT-2 directory cannot be written";
  const AppRun r = run_app("gpt2", {"--model", dir.string(), "--panel", "model"});
  ASSERT_EQ(r.status, 0) << r.err;
  const std::string source = r.report["weights_source"].get<std::string>();
  EXPECT_NE(source.find("gpt2-tiny from "), std::string::npos) << source;
  EXPECT_NE(source.find("D=48, H=4, L=3, "), std::string::npos) << source;
  EXPECT_EQ(r.report["trained"], true);
  EXPECT_GT(r.report["loss_on_text"].get<double>(), 0.0);
  const AppRun sliced = run_app("gpt2-resliced", {"--model", dir.string(), "--then", "heads=6"});
  ASSERT_EQ(sliced.status, 0) << sliced.err;
  EXPECT_EQ(sliced.report["heatmaps_drawn"], 6);
  EXPECT_NE(sliced.report["weights_source"].get<std::string>().find("re-sliced to H=6"), std::string::npos) << sliced.report["weights_source"];
  const AppRun bad = run_app("gpt2-bad", {"--model", tmp_dir().string()}, false);
  EXPECT_EQ(bad.status, 1);
  EXPECT_NE(bad.err.find("no config.json"), std::string::npos) << bad.err;
  // File > Open model (the scripted key does what the dialog does): the directory is read
  // off the UI thread, then adopted; a failed read keeps the current model and says why.
  const AppRun opened = run_app("gpt2-open", {"--then", "open_model=" + dir.string()});
  ASSERT_EQ(opened.status, 0) << opened.err;
  EXPECT_NE(opened.report["weights_source"].get<std::string>().find("gpt2-tiny from "), std::string::npos) << opened.report["weights_source"];
  EXPECT_EQ(opened.report["heatmaps_drawn"], 4);
  const AppRun refused = run_app("gpt2-open-bad", {"--then", "open_model=" + tmp_dir().string()});
  ASSERT_EQ(refused.status, 0) << refused.err;
  EXPECT_TRUE(contains(refused.report["messages"], "no config.json")) << refused.report["messages"];
  EXPECT_NE(refused.report["weights_source"].get<std::string>().find("trained (D=128"), std::string::npos)
      << "the shipped model stays: " << refused.report["weights_source"];
}

// Switching a head off changes the loss on the text (the pruning exercise).
TEST(Gui, AblatingAHeadChangesTheLoss) {
  const AppRun all = run_app("ablate-none", {"--text", "one two three one two three one two three"});
  const AppRun off = run_app("ablate-1-1", {"--text", "one two three one two three one two three", "--then", "ablate=1,1"});
  ASSERT_EQ(off.status, 0) << off.err;
  EXPECT_NE(all.report["loss_on_text"].get<double>(), off.report["loss_on_text"].get<double>());
}

TEST(Gui, RightClickOnAMapSwitchesItsHeadOff) {
  // As the box does, and also where the grid has no boxes (128 heads at 1024x768): the
  // same head as the scripted ablate=0,h, the same loss.
  for (const auto& [size, heads, h] : {std::tuple{"1600x1000", "4", 2}, {"1024x768", "128", 37}}) {
    const std::vector<std::string> base = {"--size", size, "--then", std::string("heads=") + heads};
    const AppRun before = run_app(std::string("rclick-before-") + heads, base);
    ASSERT_EQ(before.status, 0) << before.err;
    const json& m = before.report["heatmaps"][static_cast<size_t>(h)];
    const std::string mouse = std::to_string((m[0].get<double>() + m[2].get<double>()) / 2) + "," +
                              std::to_string((m[1].get<double>() + m[3].get<double>()) / 2);
    std::vector<std::string> click = base;
    click.insert(click.end(), {"--mouse", mouse, "--right-click"});
    const AppRun clicked = run_app(std::string("rclick-") + heads, click);
    ASSERT_EQ(clicked.status, 0) << clicked.err;
    EXPECT_EQ(clicked.report["heads_off"], 1) << size << ", " << heads << " heads";
    std::vector<std::string> scripted = base;
    scripted.insert(scripted.end(), {"--then", "wait", "--then", "ablate=0," + std::to_string(h)});
    const AppRun ablated = run_app(std::string("rclick-scripted-") + heads, scripted);
    ASSERT_EQ(ablated.status, 0) << ablated.err;
    EXPECT_NE(clicked.report["loss_on_text"].get<double>(), before.report["loss_on_text"].get<double>());
    EXPECT_EQ(clicked.report["loss_on_text"].get<double>(), ablated.report["loss_on_text"].get<double>()) << "head " << h;
  }
}

// The mask is one rule (MaskKind): the app's texels and the PNG's cells both follow it
// (map_colour.h), and they hide the same cells for every kind, the others in the same colours.
// (Maps are cut to the sentence's real tokens, so PaddingOnly hides nothing there, like
// None; the other kinds do.)
TEST(Gui, AppAndPngExportMaskTheSameCellsInTheSameColours) {
  const std::string text = "one two three four five six seven";
  struct Case {
    const char* name;
    std::vector<std::string> args;
    bool causal, reversed, two_sentences;
  };
  const Case cases[] = {{"causal", {}, true, false, false},
                        {"reversed", {"--pitfall-reversed-mask"}, true, true, false},
                        {"padding", {"--no-causal"}, false, false, true},
                        {"none", {"--no-causal"}, false, false, false}};
  const auto near = [](std::array<int, 3> a, std::array<int, 3> b) {
    return std::abs(a[0] - b[0]) <= 3 && std::abs(a[1] - b[1]) <= 3 && std::abs(a[2] - b[2]) <= 3;
  };
  std::array<int, 3> grey;
  for (int k = 0; k < 3; ++k) grey[k] = static_cast<int>(std::lround(headmap::kMaskedRgb[k] * 255));
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    // d_model 32 has no shipped model: random init, the word tokenizer, as below.
    std::vector<std::string> args = {"--d-model", "32", "--heads", "2", "--text", c.two_sentences ? text + "\none two" : text};
    args.insert(args.end(), c.args.begin(), c.args.end());
    const AppRun r = run_app(std::string("mask-") + c.name, args);
    ASSERT_EQ(r.status, 0) << r.err;
    const Image gui = load_png(r.png);
    ASSERT_GT(gui.w, 0);

    headmap::ModelConfig cfg;
    cfg.d_model = 32;
    cfg.num_heads = 2;
    cfg.causal = c.causal;
    cfg.pitfalls.reversed_mask = c.reversed;
    const headmap::ModelWeights w = headmap::random_weights(cfg.d_model, cfg.num_layers, cfg.seed);
    std::vector<std::string> lines = {text};
    if (c.two_sentences) lines.push_back("one two");
    const headmap::Batch batch = headmap::make_batch(lines, cfg, w);
    headmap::Result<headmap::ForwardOutput> out = headmap::forward(w, cfg, batch);
    ASSERT_TRUE(out.ok());
    std::vector<std::array<int, 4>> rects;
    headmap::HeadsPngOptions po;
    po.map_rects = &rects;
    const fs::path png_path = tmp_dir() / (std::string("mask-") + c.name + "-export.png");
    const headmap::Status written = headmap::write_heads_png(png_path.string(), *out, batch, cfg, headmap::head_metrics(*out, batch), po);
    ASSERT_TRUE(written.ok()) << written.error().message;
    const Image png = load_png(png_path);
    ASSERT_EQ(rects.size(), 2u);

    const int len = batch.lengths[0];
    ASSERT_EQ(r.report["tokens"].size(), static_cast<size_t>(len));
    const json& g = r.report["heatmaps"][0];
    const double gx0 = g[0], gy0 = g[1], gw = static_cast<double>(g[2]) - gx0, gh = static_cast<double>(g[3]) - gy0;
    const double px0 = rects[0][0], py0 = rects[0][1], pw = rects[0][2] - px0, ph = rects[0][3] - py0;
    int hidden = 0, other_colour = 0;
    for (int t = 0; t < len; ++t)
      for (int k = 0; k < len; ++k) {
        const auto app_px = gui.at(static_cast<int>(gx0 + (k + 0.5) * gw / len), static_cast<int>(gy0 + (t + 0.5) * gh / len));
        const auto png_px = png.at(static_cast<int>(px0 + (k + 0.5) * pw / len), static_cast<int>(py0 + (t + 0.5) * ph / len));
        const bool in_app = near(app_px, grey), in_png = near(png_px, grey);
        EXPECT_EQ(in_app, in_png) << "query " << t << ", key " << k;
        hidden += in_png;
        // The app's texels are the exporter's colours (map_colour.h), so every cell's
        // pixel is the PNG's exactly, not just its mask (until 2026-11-28 a shader's
        // lookup table drew them within 1 of 255).
        if (app_px != png_px && ++other_colour <= 5)
          ADD_FAILURE() << "query " << t << ", key " << k << ": app " << app_px[0] << "," << app_px[1] << "," << app_px[2] << ", PNG "
                        << png_px[0] << "," << png_px[1] << "," << png_px[2];
      }
    EXPECT_EQ(other_colour, 0) << "cells whose app pixel is not the PNG's colour";
    if (c.causal) EXPECT_GT(hidden, 0) << "a causal mask hides cells";
    else EXPECT_EQ(hidden, 0);
  }
}

// A tiny random directory of one family (tests/reference/make_family_dir.py, which needs
// numpy); empty when it cannot be written.
fs::path family_dir(const std::string& variant) {
  const fs::path dir = tmp_dir() / ("family-" + variant);
  if (fs::exists(dir / "config.json")) return dir;
  const std::string make = std::string("/usr/bin/python3 '") + HEADMAP_MAKE_FAMILY + "' '" + dir.string() + "' --variant " + variant + " > /dev/null 2>&1";
  return std::system(make.c_str()) == 0 ? dir : fs::path();
}

// Focus has the steps each family's forward takes, in its order, with the forward's own
// numbers: the RoPE step's pair dials turn by pos·theta^(-2i/d_rot), q/k norm (Qwen3),
// soft-cap (Gemma 2), and the scale actually used (query_pre_attn_scalar; none for GPT-Neo).
TEST(Gui, FocusShowsEachFamilysOwnSteps) {
  const std::string text = "The cat sat on the mat because it was warm";
  struct Case {
    const char* variant;
    std::vector<std::string> steps;  // the strip, in order
  };
  const std::string div = "\xC3\xB7 \xE2\x88\x9A";
  const Case cases[] = {
      {"llama", {"Q_h", "K_h", "V_h", "RoPE", "Q_h\xC2\xB7K_h\xE1\xB5\x80", div + "d_head", "mask", "softmax", "\xC2\xB7 V_h", "concat", "\xC2\xB7 W_O"}},
      {"qwen3", {"Q_h", "K_h", "V_h", "q/k norm", "RoPE", "Q_h\xC2\xB7K_h\xE1\xB5\x80", div + "d_head", "mask", "softmax", "\xC2\xB7 V_h", "concat", "\xC2\xB7 W_O"}},
      {"gemma2", {"Q_h", "K_h", "V_h", "RoPE", "Q_h\xC2\xB7K_h\xE1\xB5\x80", div + "20", "soft-cap", "mask", "softmax", "\xC2\xB7 V_h", "concat", "\xC2\xB7 W_O"}},
      {"gpt_neo", {"Q_h", "K_h", "V_h", "Q_h\xC2\xB7K_h\xE1\xB5\x80", "\xC3\x97 1 (no scale)", "mask", "softmax", "\xC2\xB7 V_h", "concat", "\xC2\xB7 W_O"}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.variant);
    const fs::path dir = family_dir(c.variant);
    if (dir.empty()) GTEST_SKIP() << "numpy is missing: the tiny family directories cannot be written";
    const AppRun r = run_app(std::string("focus-steps-") + c.variant, {"--model", dir.string(), "--text", text, "--panel", "focus"});
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_EQ(r.report["focus_steps"].get<std::vector<std::string>>(), c.steps);
    EXPECT_TRUE(r.report["clipped"].empty()) << r.report["clipped"].dump(1);
  }
  // The RoPE step of Llama (theta 10000, d_head 12, all of it rotated): one dial per pair at
  // the last token, each turned by the angle the forward used.
  const fs::path llama = family_dir("llama");
  const AppRun rope = run_app("focus-rope", {"--model", llama.string(), "--text", text, "--panel", "focus", "--then", "focus_step=11"});
  ASSERT_EQ(rope.status, 0) << rope.err;
  EXPECT_EQ(rope.report["focus_step_shown"].get<std::string>().rfind("RoPE (T, d_head)", 0), 0u) << rope.report["focus_step_shown"];
  const json& pairs = rope.report["rope_pairs"];
  ASSERT_EQ(pairs.size(), 6u) << pairs.dump();
  const int last = static_cast<int>(rope.report["tokens"].size()) - 1;
  for (int i = 0; i < 6; ++i) {
    int pi = -1, pos = -1;
    double angle = 0;
    ASSERT_EQ(std::sscanf(pairs[i].get<std::string>().c_str(), "pair %d pos %d angle %lf", &pi, &pos, &angle), 3) << pairs[i];
    EXPECT_EQ(pi, i);
    EXPECT_EQ(pos, last);
    EXPECT_NEAR(angle, last * std::pow(10000.0, -2.0 * i / 12), 1e-4) << "pair " << i;
  }
  // Gemma 2's soft-cap step, enlarged: its shape and name.
  const AppRun cap = run_app("focus-softcap", {"--model", family_dir("gemma2").string(), "--text", text, "--panel", "focus", "--then", "focus_step=12"});
  ASSERT_EQ(cap.status, 0) << cap.err;
  EXPECT_EQ(cap.report["focus_step_shown"].get<std::string>().rfind("soft-cap (T, T)", 0), 0u) << cap.report["focus_step_shown"];
  // Its curve: the last row's visible keys (the window of 3), each on 3·tanh(x / 3).
  const int n = static_cast<int>(cap.report["tokens"].size());
  const json& dots = cap.report["softcap_points"];
  ASSERT_EQ(dots.size(), 3u) << dots.dump();
  for (int i = 0; i < 3; ++i) {
    int key = -1;
    double x = 0, y = 0;
    ASSERT_EQ(std::sscanf(dots[i].get<std::string>().c_str(), "%d %lf %lf", &key, &x, &y), 3) << dots[i];
    EXPECT_EQ(key, n - 3 + i);
    EXPECT_NEAR(y, 3.0 * std::tanh(x / 3.0), 1e-5);
  }
}

// A sliding-window layer (Gemma 2's layer 0, window 3, on a longer text) hatches the keys
// outside its window, distinct from the causal mask's grey: in the heads grid, in Focus and
// in the exported SVG and PNG figures, whose titles say "local, window 3".
TEST(Gui, KeysOutsideASlidingWindowAreHatchedEverywhere) {
  const fs::path dir = family_dir("gemma2");
  if (dir.empty()) GTEST_SKIP() << "numpy is missing: the tiny family directories cannot be written";
  const fs::path cwd = fresh_dir("window-exports");
  const std::string text = "The cat sat on the mat";
  const AppRun r = run_app("window-heads", {"--model", dir.string(), "--text", text, "--then", "export_heads=heads.svg", "--then",
                                            "export_heads=heads.png"}, true, cwd);
  ASSERT_EQ(r.status, 0) << r.err;
  const int len = static_cast<int>(r.report["tokens"].size());
  ASSERT_GT(len, 4) << "the text is longer than the window";
  std::array<std::array<int, 3>, 2> hatch;
  std::array<int, 3> grey;
  for (int k = 0; k < 3; ++k) {
    grey[k] = static_cast<int>(std::lround(headmap::kMaskedRgb[k] * 255));
    for (int h = 0; h < 2; ++h) hatch[h][k] = static_cast<int>(std::lround(headmap::kWindowRgb[h][k] * 255));
  }
  const auto near = [](std::array<int, 3> a, std::array<int, 3> b) {
    return std::abs(a[0] - b[0]) <= 3 && std::abs(a[1] - b[1]) <= 3 && std::abs(a[2] - b[2]) <= 3;
  };
  // Every cell of every head in the app: grey above the diagonal, hatched 3 or more back,
  // coloured in between.
  const Image gui = load_png(r.png);
  ASSERT_EQ(r.report["heatmaps"].size(), 4u);
  int hatched = 0;
  for (const json& g : r.report["heatmaps"]) {
    const double gx0 = g[0], gy0 = g[1], gw = static_cast<double>(g[2]) - gx0, gh = static_cast<double>(g[3]) - gy0;
    for (int t = 0; t < len; ++t)
      for (int s2 = 0; s2 < len; ++s2) {
        const auto px = gui.at(static_cast<int>(gx0 + (s2 + 0.5) * gw / len), static_cast<int>(gy0 + (t + 0.5) * gh / len));
        const bool outside = s2 <= t && t - s2 >= 3;
        EXPECT_EQ(outside, near(px, hatch[(t + s2) % 3 == 0]) ) << "query " << t << ", key " << s2;
        EXPECT_EQ(s2 > t, near(px, grey)) << "query " << t << ", key " << s2;
        hatched += outside;
      }
  }
  EXPECT_GT(hatched, 0);
  // The SVG figure: one hatched rect per such cell and head, and the title.
  std::ifstream f(cwd / "heads.svg");
  const std::string svg((std::istreambuf_iterator<char>(f)), {});
  size_t rects = 0;
  for (size_t at = svg.find("class=\"window\""); at != std::string::npos; at = svg.find("class=\"window\"", at + 1)) ++rects;
  EXPECT_EQ(rects, static_cast<size_t>(hatched));
  EXPECT_NE(svg.find("local, window 3"), std::string::npos);
  // The PNG figure carries both greys of the hatch.
  const Image png = load_png(cwd / "heads.png");
  ASSERT_GT(png.w, 0);
  int light = 0, dark = 0;
  for (int y = 0; y < png.h; ++y)
    for (int x = 0; x < png.w; ++x) light += near(png.at(x, y), hatch[0]), dark += near(png.at(x, y), hatch[1]);
  EXPECT_GT(light, 0);
  EXPECT_GT(dark, 0);
  // Focus's mask step hatches the same cells; a global layer (1) hatches none.
  const AppRun focus = run_app("window-focus", {"--model", dir.string(), "--text", text, "--panel", "focus", "--then", "focus_step=5"});
  ASSERT_EQ(focus.status, 0) << focus.err;
  const Image fim = load_png(focus.png);
  const json& m = focus.report["focus_map"].back();
  const double fx0 = m[0], fy0 = m[1], fw = static_cast<double>(m[2]) - fx0, fhh = static_cast<double>(m[3]) - fy0;
  for (int t = 0; t < len; ++t)
    for (int s2 = 0; s2 <= t; ++s2)
      EXPECT_EQ(t - s2 >= 3, near(fim.at(static_cast<int>(fx0 + (s2 + 0.5) * fw / len), static_cast<int>(fy0 + (t + 0.5) * fhh / len)), hatch[(t + s2) % 3 == 0]))
          << "Focus, query " << t << ", key " << s2;
  const AppRun global = run_app("window-global", {"--model", dir.string(), "--text", text, "--then", "layer=1"});
  ASSERT_EQ(global.status, 0) << global.err;
  const Image gim = load_png(global.png);
  const json& g1 = global.report["heatmaps"][0];
  const double x0 = g1[0], y0 = g1[1], w1 = static_cast<double>(g1[2]) - x0, h1 = static_cast<double>(g1[3]) - y0;
  for (int t = 0; t < len; ++t)
    for (int s2 = 0; s2 <= t; ++s2)
      EXPECT_FALSE(near(gim.at(static_cast<int>(x0 + (s2 + 0.5) * w1 / len), static_cast<int>(y0 + (t + 0.5) * h1 / len)), hatch[(t + s2) % 3 == 0]));
}

// Grouped-query attention: the heads grid frames the query heads that share a K/V head and
// captions each group, on a desktop and on a projector with large text, with nothing cut off.
TEST(Gui, HeadsGridGroupsQueryHeadsByTheirKvHead) {
  struct Case {
    const char* variant;
    std::vector<std::string> args;
    std::vector<std::string> groups;
  };
  const std::vector<std::string> projector = {"--size", "1024x768", "--font-scale", "1.5"};
  const Case cases[] = {
      {"llama", {}, {"K/V 0: heads 0-1", "K/V 1: heads 2-3"}},
      {"llama", projector, {"K/V 0: heads 0-1", "K/V 1: heads 2-3"}},
      {"qwen2", {}, {"K/V 0: heads 0-2", "K/V 1: heads 3-5"}},
      {"qwen2", projector, {"K/V 0: heads 0-2", "K/V 1: heads 3-5"}},
      {"smollm2", projector, {"K/V 0: heads 0-2"}},
      {"pythia", {}, {}},  // multi-head: no groups
  };
  int i = 0;
  for (const Case& c : cases) {
    SCOPED_TRACE(std::string(c.variant) + (c.args.empty() ? "" : " on a projector"));
    const fs::path dir = family_dir(c.variant);
    if (dir.empty()) GTEST_SKIP() << "numpy is missing: the tiny family directories cannot be written";
    std::vector<std::string> args = {"--model", dir.string(), "--text", "The cat sat on the mat because it was warm"};
    args.insert(args.end(), c.args.begin(), c.args.end());
    const AppRun r = run_app("kv-groups-" + std::to_string(i++), args);
    ASSERT_EQ(r.status, 0) << r.err;
    std::vector<std::string> shown = r.report["kv_groups"].get<std::vector<std::string>>();
    // A group that wraps onto another row is captioned on each row: the distinct captions.
    shown.erase(std::unique(shown.begin(), shown.end()), shown.end());
    EXPECT_EQ(shown, c.groups);
    EXPECT_TRUE(r.report["clipped"].empty()) << r.report["clipped"].dump(1);
  }
}

// Ablation is kept by (layer, head): moving num_heads does not move it to another head.
TEST(Gui, AblationFollowsItsHeadWhenHeadsChange) {
  const std::string text = "one two three one two three one two three";
  const AppRun at8 = run_app("ablate-10-h8", {"--text", text, "--then", "ablate=1,0", "--then", "wait", "--then", "heads=8"});
  ASSERT_EQ(at8.status, 0) << at8.err;
  EXPECT_EQ(at8.report["config"]["num_heads"], 8);
  EXPECT_EQ(at8.report["ablated"], json({{1, 0}})) << "at H = 8, (1, 0) must still be the head that is off";
  // The same head switched off directly at H = 8 gives the same loss.
  const AppRun direct8 = run_app("ablate-h8-10", {"--text", text, "--then", "heads=8", "--then", "wait", "--then", "ablate=1,0"});
  ASSERT_EQ(direct8.status, 0) << direct8.err;
  EXPECT_EQ(direct8.report["ablated"], json({{1, 0}}));
  EXPECT_DOUBLE_EQ(at8.report["loss_on_text"].get<double>(), direct8.report["loss_on_text"].get<double>());

  const AppRun back = run_app("ablate-10-h8-h4", {"--text", text, "--then", "ablate=1,0", "--then", "wait", "--then", "heads=8",
                                                  "--then", "wait", "--then", "heads=4"});
  ASSERT_EQ(back.status, 0) << back.err;
  EXPECT_EQ(back.report["config"]["num_heads"], 4);
  EXPECT_EQ(back.report["ablated"], json({{1, 0}}));
  const AppRun direct4 = run_app("ablate-10-h4", {"--text", text, "--then", "ablate=1,0"});
  ASSERT_EQ(direct4.status, 0) << direct4.err;
  EXPECT_DOUBLE_EQ(back.report["loss_on_text"].get<double>(), direct4.report["loss_on_text"].get<double>());
}

// "Train this configuration": it runs in the background, reports progress, and the heads
// show its weights when it is done; Cancel stops it early and keeps the last snapshot.
TEST(Gui, TrainingAConfigurationFinishesAndCanBeCancelled) {
  // A small corpus keeps the test quick (the shipped one takes a while to tokenize in a
  // sanitizer build); the Training tab reads whatever --corpus names.
  const fs::path corpus = tmp_dir() / "corpus.txt";
  std::string text;
  for (int i = 0; i < 300; ++i)
    text += "The cat sat on the mat because it was tired. one two three one two three " + std::to_string(i % 7) + "\n";
  write_text(corpus, text);
  const AppRun r = run_app("train", {"--corpus", corpus.string(), "--d-model", "32", "--heads", "2", "--then", "train_steps=40",
                                     "--then", "train=1"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.report["training"]["done"], true) << r.report["training"];
  EXPECT_EQ(r.report["training"]["step"], 40);
  EXPECT_GT(r.report["training"]["points"].get<int>(), 0);
  EXPECT_EQ(r.report["trained"], true);
  EXPECT_EQ(r.report["heatmaps_drawn"], 2);

  // Cancelled after a few snapshots (every 50 steps of 2000): one step everywhere, the
  // message's, the weights' and the loss chart's last point.
  const AppRun c = run_app("train-cancel", {"--corpus", corpus.string(), "--d-model", "32", "--heads", "2", "--then",
                                            "train_steps=2000", "--then", "cancel_at_step=120", "--then", "train=1"});
  ASSERT_EQ(c.status, 0) << c.err;
  const json& ct = c.report["training"];
  EXPECT_EQ(ct["cancelled"], true) << ct;
  EXPECT_EQ(ct["done"], false);
  const int cancelled_at = ct["step"].get<int>();
  EXPECT_GE(cancelled_at, 100);
  EXPECT_LT(cancelled_at, 2000);
  EXPECT_EQ(ct["snapshot_steps"], cancelled_at) << ct;
  EXPECT_EQ(ct["last_point_step"], cancelled_at) << ct;
  EXPECT_NE(c.report["weights_source"].get<std::string>().find(", " + std::to_string(cancelled_at) + " steps"), std::string::npos)
      << c.report["weights_source"];

  // The chapter's comparisons: three head counts, then with and without W_O, each with the
  // same budget, each ending with a validation loss for the chart.
  for (const char* what : {"heads", "w_o"}) {
    const AppRun cmp = run_app(std::string("compare-") + what, {"--corpus", corpus.string(), "--panel", "training", "--then",
                                                                 "compare_steps=30", "--then", std::string("compare=") + what});
    ASSERT_EQ(cmp.status, 0) << cmp.err;
    const json& t = cmp.report["training"];
    EXPECT_EQ(t["done"], true) << t;
    const json want = std::string(what) == "heads" ? json({"H = 1", "H = 4", "H = 8"}) : json({"with W_O", "without W_O"});
    EXPECT_EQ(t["labels"], want);
    ASSERT_EQ(t["final_val"].size(), want.size());
    for (const auto& v : t["final_val"]) EXPECT_GT(v.get<double>(), 0.0);
  }
}

// Issue 22 (8): at the default 600 steps the H = 1, 4, 8 comparison draws three curves on
// top of each other; the tab says so and offers the step count that parts them. And each
// compared run's heads open in the grid (its final weights, at its own D, H and L).
TEST(Gui, ComparisonsSuggestStepsThatShowADifferenceAndOpenEachRunsHeads) {
  const AppRun quick = run_app("compare-steps-note", {"--panel", "training"});
  ASSERT_EQ(quick.status, 0) << quick.err;
  EXPECT_TRUE(contains(quick.report["messages"], "part from about 3,000 steps each")) << quick.report["messages"];
  const AppRun enough = run_app("compare-steps-enough", {"--panel", "training", "--then", "compare_steps=3000"});
  ASSERT_EQ(enough.status, 0) << enough.err;
  EXPECT_FALSE(contains(enough.report["messages"], "part from about")) << enough.report["messages"];

  const fs::path corpus = tmp_dir() / "corpus-show.txt";
  std::string text;
  for (int i = 0; i < 300; ++i) text += "The cat sat on the mat because it was tired. one two three one two three " + std::to_string(i % 7) + "\n";
  write_text(corpus, text);
  const AppRun r = run_app("compare-show-run", {"--corpus", corpus.string(), "--panel", "training", "--then", "compare_steps=30", "--then",
                                                "compare=heads", "--then", "wait", "--then", "show_run=2"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.report["training"]["done"], true) << r.report["training"];
  EXPECT_EQ(r.report["panel"], "heads");
  EXPECT_EQ(r.report["heatmaps_drawn"], 8) << "the H = 8 run's heads";
  const std::string src = r.report["weights_source"].get<std::string>();
  EXPECT_NE(src.find("D=64, H=8, L=2, 30 steps"), std::string::npos) << src;
}

// --checkpoint opens at the checkpoint's own D, H and L, with a message; K/V sharing then
// reaches the passport (its rows and the parameters it saves) and the weights' label.
TEST(Gui, CheckpointOpensAtItsOwnSizeAndKvHeadsReachThePassport) {
  const std::string h8 = std::string(HEADMAP_ASSETS) + "/checkpoints/d128-h8-l2.safetensors";
  const AppRun r = run_app("ckpt-h8-kv2", {"--checkpoint", h8, "--panel", "passport", "--then", "kv_heads=2"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.report["config"]["d_model"], 128);
  EXPECT_EQ(r.report["config"]["num_heads"], 8);
  EXPECT_EQ(r.report["config"]["num_layers"], 2);
  EXPECT_EQ(r.report["config"]["num_kv_heads"], 2);
  bool said = false;
  for (const auto& m : r.report["messages"]) said = said || m.get<std::string>().find("D=128, H=8, L=2") != std::string::npos;
  EXPECT_TRUE(said) << r.report["messages"];
  bool k_heads = false, k_narrow = false;
  for (const auto& row : r.report["passport_rows"]) {
    const std::string s = row.get<std::string>();
    k_heads = k_heads || s.rfind("k_heads (1, 2, ", 0) == 0;
    k_narrow = k_narrow || (s.rfind("k (1, ", 0) == 0 && s.find(", 32)") != std::string::npos);  // kv_heads·d_head = 2·16
  }
  EXPECT_TRUE(k_heads && k_narrow) << r.report["passport_rows"];
  const int64_t D = 128, L = 2, kv_cols = 32;
  EXPECT_EQ(r.report["attention_params"].get<int64_t>(), 2 * L * (D * D + D) + 2 * L * (D * kv_cols + kv_cols));
  EXPECT_NE(r.report["weights_source"].get<std::string>().find("kv_heads=2"), std::string::npos) << r.report["weights_source"];
  // The heads grid names each query head's K/V head: H = 8 over 2 K/V heads, 4 each.
  const AppRun g = run_app("ckpt-h8-kv2-heads", {"--checkpoint", h8, "--then", "kv_heads=2"});
  ASSERT_EQ(g.status, 0) << g.err;
  ASSERT_EQ(g.report["head_titles"].size(), 8u) << g.report["head_titles"];
  for (int h = 0; h < 8; ++h)
    EXPECT_NE(g.report["head_titles"][h].get<std::string>().find("K/V " + std::to_string(h / 4)), std::string::npos) << g.report["head_titles"][h];
  const AppRun mha = run_app("ckpt-h8-heads", {"--checkpoint", h8});
  ASSERT_EQ(mha.status, 0) << mha.err;
  for (const auto& t : mha.report["head_titles"]) EXPECT_EQ(t.get<std::string>().find("K/V"), std::string::npos) << "multi-head: no K/V tag";
}

// Issue 13's long sequences: at T = 2048 the heads grid draws max-pooled maps that keep
// every peak, and token labels thinned to what fits, never overlapping.
TEST(Gui, LongMapsKeepTheirPeaksAndLabelsThinOut) {
  std::string words;
  for (int i = 0; i < 2048; ++i) words += "w" + std::to_string(i % 300) + " ";
  const AppRun r = run_app("long-pooled", {"--random-init", "--context", "2048", "--d-model", "256", "--heads", "8", "--layers", "2",
                                           "--text", words, "--colormap", "viridis"});
  ASSERT_EQ(r.status, 0) << r.err;
  ASSERT_EQ(r.report["tokens"].size(), 2048u);
  ASSERT_EQ(r.report["heatmaps_drawn"], 8);
  EXPECT_EQ(r.report["heads_deferred"], 0);
  // Eight maps of 2048 cells a side in a 1600x1000 window: each texel pools several cells.
  EXPECT_GE(r.report["heads_map_pool"].get<int>(), 8);
  const Image im = load_png(r.png);
  ASSERT_GT(im.w, 0);
  // The causal first query sees only key 0: weight exactly 1.0, above the per-head scale's
  // top (the largest weight of rows that see two keys or more), so drawn in the colormap's
  // last colour. Its pooled block averages to about 1/8 (8 rows summing to 1 over 64
  // cells): an averaging reduction would draw it dark.
  const auto top = headmap::colormap_rgb(Colormap::Viridis, 1.0f);
  for (const auto& rect : r.report["heatmaps"]) {
    const int x = static_cast<int>(std::ceil(rect[0].get<double>())), y = static_cast<int>(std::ceil(rect[1].get<double>()));
    const auto px = im.at(x, y);
    for (int k = 0; k < 3; ++k)
      EXPECT_NEAR(px[k], std::lround(top[k] * 255), 6) << "the top-left cell of the map at " << rect << " lost its peak";
  }
  // Zoomed in 16 times on the first tokens, the maps are drawn from finer tiles, the peak
  // is still there, and more labels of the first 128 tokens show.
  const AppRun z = run_app("long-zoomed", {"--random-init", "--context", "2048", "--d-model", "256", "--heads", "8", "--layers", "2",
                                           "--text", words, "--then", "heads_zoom=16"});
  ASSERT_EQ(z.status, 0) << z.err;
  EXPECT_EQ(z.report["heads_deferred"], 0);
  EXPECT_LT(z.report["heads_map_pool"].get<int>(), r.report["heads_map_pool"].get<int>());
  const Image zim = load_png(z.png);
  ASSERT_GT(zim.w, 0);
  const json& zr = z.report["heatmaps"][0];
  const auto zpx = zim.at(static_cast<int>(std::ceil(zr[0].get<double>())), static_cast<int>(std::ceil(zr[1].get<double>())));
  for (int k = 0; k < 3; ++k) EXPECT_NEAR(zpx[k], std::lround(top[k] * 255), 6) << "zoomed: the top-left cell lost its peak";
  EXPECT_GT(z.report["token_labels"].size(), 0u);
  // Labels: the maps share their axes (queries left of each row of maps, keys under each
  // column), some on every axis, far fewer than 2048 per axis, and no two overlapping.
  const json& labels = r.report["token_labels"];
  std::set<double> rows, columns;
  for (const auto& m : r.report["heatmaps"]) rows.insert(m[1].get<double>()), columns.insert(m[0].get<double>());
  EXPECT_GE(labels.size(), (rows.size() + columns.size()) * 3);
  EXPECT_LT(labels.size(), (rows.size() + columns.size()) * 100);
  for (size_t i = 0; i < labels.size(); ++i)
    for (size_t j = i + 1; j < labels.size(); ++j) {
      const json &a = labels[i], &b = labels[j];
      const bool overlap = a[0].get<double>() < b[2].get<double>() - 0.5 && b[0].get<double>() < a[2].get<double>() - 0.5 &&
                           a[1].get<double>() < b[3].get<double>() - 0.5 && b[1].get<double>() < a[3].get<double>() - 0.5;
      ASSERT_FALSE(overlap) << "labels " << a << " and " << b << " overlap";
    }
}

// ---- classroom: projector sizes, comparisons, predictions, the head's slice ----------------

// At a projector's 1024x768 with the text 1.5x larger, every view lays out without cutting
// anything off: the app's report lists what a frame clipped (app/gui/layout_check.h: every
// primitive drawn outside its clip rectangle, every window wider than its visible part).
TEST(Gui, ProjectorSizeWithLargeTextCutsNothingOff) {
  const std::vector<std::string> base = {"--size", "1024x768", "--font-scale", "1.5"};
  std::string words;
  for (int i = 0; i < 400; ++i) words += "w" + std::to_string(i % 97) + " ";
  struct Case {
    const char* name;
    std::vector<std::string> args;
  };
  const Case cases[] = {
      {"heads", {}},
      {"focus", {"--panel", "focus"}},
      {"model", {"--panel", "model"}},
      {"passport", {"--panel", "passport"}},
      {"training", {"--panel", "training"}},
      {"compare", {"--panel", "compare", "--then", "pitfall=scale-d-model=on"}},
      {"batch", {"--text", "The cat sat on the mat because it was tired.", "--text", "The lawyer who the jury believed told the truth.",
                 "--text", "The chicken didn't cross the road because it was too wide."}},
      {"long", {"--context", "2048", "--text", words, "--then", "weights=random"}},
      {"invalid", {"--then", "heads=3"}},
      {"sixteen-heads", {"--then", "heads=16"}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    std::vector<std::string> args = base;
    args.insert(args.end(), c.args.begin(), c.args.end());
    const AppRun r = run_app(std::string("projector-") + c.name, args);
    ASSERT_EQ(r.status, 0) << r.err;
    const Image im = load_png(r.png);
    EXPECT_EQ(im.w, 1024);
    EXPECT_EQ(im.h, 768);
    EXPECT_EQ(r.report["font_scale"], 1.5);
    EXPECT_NE(r.report["layout"], "three columns") << "at 1024 px and 1.5x text the three columns do not fit";
    EXPECT_TRUE(r.report["clipped"].empty()) << r.report["clipped"].dump(1);
    // The chips scroll in a bounded box, so 400 words leave the controls on screen.
    EXPECT_LE(r.report["chips_box_h"].get<double>(), 768 * 0.25) << "the chips' box is bounded";
    if (std::string(c.name) == "model") {
      // The nine views of the Model tab are each read whole (as tabs they were cut to two
      // letters here): at least 8 px a character (the 1.5x font's are about 10).
      for (const char* label : {"Layers \xC3\x97 heads", "Rollout", "Patching", "Head overview", "Offsets", "Circuits", "Corpus", "Logit lens", "Detectors"}) {
        bool seen = false;
        for (const json& w : r.report["widgets"])
          if (w["label"] == label) {
            seen = true;
            EXPECT_GE(w["rect"][2].get<float>() - w["rect"][0].get<float>(), 8.0f * std::strlen(label)) << label << " is cut";
            EXPECT_LE(w["rect"][2].get<float>(), 1024) << label;
          }
        EXPECT_TRUE(seen) << label << " is not on screen";
      }
    }
  }
  // The same window with the layout that does not adapt (three fixed columns) cuts things
  // off, and the check sees it: it can fail.
  std::vector<std::string> fixed = base;
  fixed.insert(fixed.end(), {"--then", "layout=columns"});
  const AppRun r = run_app("projector-fixed-columns", fixed);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.report["layout"], "three columns");
  EXPECT_FALSE(r.report["clipped"].empty()) << "three columns at 1.5x in 1024 px must clip something";
  // Larger still while running, as Ctrl + does: the layout follows (tabs only), clip-free.
  std::vector<std::string> larger = base;
  larger.insert(larger.end(), {"--then", "font_scale=2.2"});
  const AppRun big = run_app("projector-larger", larger);
  ASSERT_EQ(big.status, 0) << big.err;
  EXPECT_EQ(big.report["font_scale"], 2.2f);
  EXPECT_TRUE(big.report["clipped"].empty()) << big.report["clipped"].dump(1);
  // And at the default size and text nothing is cut off either.
  const AppRun wide = run_app("projector-default", {});
  EXPECT_EQ(wide.report["layout"], "three columns");
  EXPECT_TRUE(wide.report["clipped"].empty()) << wide.report["clipped"].dump(1);
}

// On the projector's short screen the passport's steps get most of the height (the
// parameter counts join the table) and Focus keeps its enlarged step in view (the head's
// slice starts closed, the strip is smaller); on a desktop screen both are as before.
TEST(Gui, ProjectorPassportAndFocusKeepTheirMainContentInView) {
  const std::vector<std::string> base = {"--size", "1024x768", "--font-scale", "1.5", "--text", "We walked to the station in the rain."};
  auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> a = base;
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
  };
  const AppRun p = run_app("projector-passport", with({"--panel", "passport"}));
  ASSERT_EQ(p.status, 0) << p.err;
  EXPECT_GE(p.report["passport_table_h"].get<double>(), 0.5 * 768) << "the steps get at least half the window";
  EXPECT_TRUE(p.report["clipped"].empty()) << p.report["clipped"].dump(1);
  const AppRun f = run_app("projector-focus", with({"--panel", "focus"}));
  ASSERT_EQ(f.status, 0) << f.err;
  EXPECT_FALSE(f.report["focus_slice_open"].get<bool>());
  ASSERT_EQ(f.report["focus_map"].size(), 1u);
  const json& m = f.report["focus_map"][0];
  EXPECT_LT(m[1].get<double>(), 0.75 * 768) << "the enlarged step starts in the window's upper three quarters: " << m;
  EXPECT_TRUE(f.report["clipped"].empty()) << f.report["clipped"].dump(1);
  const AppRun wide = run_app("desktop-focus", {"--panel", "focus"});
  ASSERT_EQ(wide.status, 0) << wide.err;
  EXPECT_TRUE(wide.report["focus_slice_open"].get<bool>()) << "on a desktop screen the slice is open";
}

// Focus at T = 2048 draws its (T, T) steps from max-pooled levels: the first query's
// weight of exactly 1.0 on key 0 is still the colormap's top colour in the enlarged map.
TEST(Gui, FocusLongMapsArePooledAndKeepTheirPeak) {
  std::string words;
  for (int i = 0; i < 2048; ++i) words += "w" + std::to_string(i % 300) + " ";
  const AppRun r = run_app("focus-long", {"--random-init", "--context", "2048", "--d-model", "256", "--heads", "8", "--layers", "1",
                                          "--text", words, "--panel", "focus", "--colormap", "viridis"});
  ASSERT_EQ(r.status, 0) << r.err;
  ASSERT_EQ(r.report["tokens"].size(), 2048u);
  ASSERT_EQ(r.report["focus_map"].size(), 1u);
  EXPECT_GE(r.report["focus_map_pool"].get<int>(), 2) << "2048 cells a side on a few hundred pixels are pooled";
  const Image im = load_png(r.png);
  ASSERT_GT(im.w, 0);
  const json& m = r.report["focus_map"][0];
  const auto px = im.at(static_cast<int>(std::ceil(m[0].get<double>())), static_cast<int>(std::ceil(m[1].get<double>())));
  const auto top = headmap::colormap_rgb(Colormap::Viridis, 1.0f);
  for (int k = 0; k < 3; ++k) EXPECT_NEAR(px[k], std::lround(top[k] * 255), 6) << "the top-left cell lost its peak";
}

// ---- issue 22: a projector-first layout, and axis labels at any length ----------------------

// No two label rects overlap (half a pixel of tolerance).
static void expect_no_overlap(const json& labels, const std::string& what) {
  for (size_t i = 0; i < labels.size(); ++i)
    for (size_t j = i + 1; j < labels.size(); ++j) {
      const json &a = labels[i], &b = labels[j];
      const bool overlap = a[0].get<double>() < b[2].get<double>() - 0.5 && b[0].get<double>() < a[2].get<double>() - 0.5 &&
                           a[1].get<double>() < b[3].get<double>() - 0.5 && b[1].get<double>() < a[3].get<double>() - 0.5;
      ASSERT_FALSE(overlap) << what << ": labels " << a << " and " << b << " overlap";
    }
}

// Labels that carry a position number (their last word is a number).
static size_t numbered_labels(const json& texts) {
  size_t n = 0;
  for (const auto& t : texts) {
    const std::string s = t.get<std::string>();
    const size_t sp = s.find_last_of(' ');
    const std::string last = sp == std::string::npos ? s : s.substr(sp + 1);
    n += !last.empty() && last.find_first_not_of("0123456789") == std::string::npos;
  }
  return n;
}

// At a projector's 1024x768 with the text 1.5x larger, the default model's four maps use the
// panel (they were 180 px, with no token label and 200 px of empty space beside them), carry
// token labels with position numbers, and every head keeps the label its metrics earned
// (head 0 dropped "previous-token"). The presenter's big heads are larger still, and B's
// scripted twin (big_heads=1|2|off) chooses them.
TEST(Gui, ProjectorHeadsGrowWithLabelsAndBigHeadsAreLarger) {
  const std::vector<std::string> base = {"--size", "1024x768", "--font-scale", "1.5"};
  const AppRun r = run_app("projector-grid", base);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(r.report["clipped"].empty()) << r.report["clipped"].dump(1);
  const json& maps = r.report["heatmaps"];
  ASSERT_EQ(maps.size(), 4u);
  for (const auto& m : maps) {
    EXPECT_GE(m[2].get<double>() - m[0].get<double>(), 210.0) << "map " << m;
    EXPECT_GE(m[3].get<double>() - m[1].get<double>(), 185.0) << "map " << m;
    EXPECT_LE(m[2].get<double>(), 1024.0);
  }
  EXPECT_GE(r.report["token_labels"].size(), 8u) << "token labels on both axes";
  EXPECT_GE(numbered_labels(r.report.value("token_label_texts", json::array())), 2u) << r.report.value("token_label_texts", json::array());
  expect_no_overlap(r.report["token_labels"], "projector grid");
  // The labels the metrics give (layer 0: the first H of (L, H)), each in its head's title.
  const json& titles = r.report["head_titles"];
  const json& earned = r.report["head_labels"];
  ASSERT_EQ(titles.size(), 4u);
  ASSERT_GE(earned.size(), 4u);
  int labelled = 0;
  for (size_t h = 0; h < 4; ++h) {
    const std::string label = earned[h].get<std::string>();
    if (label.empty()) continue;
    ++labelled;
    EXPECT_NE(titles[h].get<std::string>().find(label), std::string::npos) << "head " << h << " lost \"" << label << "\": " << titles[h];
  }
  EXPECT_GE(labelled, 3) << "the trained model's heads earn labels: " << earned;

  // Two big heads: the selected one and the next, each larger than in the grid; one big head
  // larger again; off: the grid.
  std::vector<std::string> two = base;
  two.insert(two.end(), {"--then", "head=3", "--then", "big_heads=2"});
  const AppRun b2 = run_app("projector-big2", two);
  ASSERT_EQ(b2.status, 0) << b2.err;
  EXPECT_TRUE(b2.report["clipped"].empty()) << b2.report["clipped"].dump(1);
  ASSERT_EQ(b2.report["heatmaps"].size(), 2u);
  EXPECT_EQ(b2.report["head_titles"][0].get<std::string>().rfind("3", 0) == 0 ||
                b2.report["head_titles"][0].get<std::string>().rfind("head 3", 0) == 0,
            true)
      << b2.report["head_titles"];
  auto area = [](const json& m) { return (m[2].get<double>() - m[0].get<double>()) * (m[3].get<double>() - m[1].get<double>()); };
  EXPECT_GT(area(b2.report["heatmaps"][0]), 1.3 * area(maps[0]));
  std::vector<std::string> one = base;
  one.insert(one.end(), {"--then", "big_heads=1"});
  const AppRun b1 = run_app("projector-big1", one);
  ASSERT_EQ(b1.status, 0) << b1.err;
  ASSERT_EQ(b1.report["heatmaps"].size(), 1u);
  EXPECT_GT(area(b1.report["heatmaps"][0]), area(b2.report["heatmaps"][0]));
  EXPECT_GE(b1.report["heatmaps"][0][3].get<double>() - b1.report["heatmaps"][0][1].get<double>(), 300.0);
  EXPECT_TRUE(b1.report["clipped"].empty()) << b1.report["clipped"].dump(1);
  std::vector<std::string> off = one;
  off.insert(off.end(), {"--then", "big_heads=off"});
  const AppRun b0 = run_app("projector-big-off", off);
  EXPECT_EQ(b0.report["heatmaps"].size(), 4u);
}

// The Passport tab at 1024x768 and 1.5x keeps both shape columns in view (they were behind
// a horizontal scrollbar), dropping the costs and the formula first; at 1600x1000 with K/V
// heads fewer than H the compact passport (its widest shapes) and Focus's enlarged step fit.
TEST(Gui, PassportKeepsItsShapesInViewAndFocusFits) {
  const AppRun p = run_app("projector-passport-columns", {"--size", "1024x768", "--font-scale", "1.5", "--panel", "passport",
                                                          "--then", "kv_heads=2"});
  ASSERT_EQ(p.status, 0) << p.err;
  EXPECT_TRUE(p.report["clipped"].empty()) << p.report["clipped"].dump(1);
  const json cols = p.report.value("passport_columns", json::array());
  const double right = p.report.value("passport_right", 0.0);
  for (const char* need : {"step", "symbolic", "concrete"}) {
    bool found = false;
    for (size_t i = 0; i < cols.size(); ++i)
      if (cols[i] == need) {
        found = true;
        EXPECT_LE(p.report["passport_column_rects"][i][2].get<double>(), right + 0.5) << need << " runs past the visible area";
      }
    EXPECT_TRUE(found) << need << " not shown: " << cols;
  }
  for (size_t i = 0; i < cols.size(); ++i) EXPECT_LE(p.report["passport_column_rects"][i][2].get<double>(), right + 0.5) << cols[i];
  // On a desktop screen the full passport shows every column (long notes cut with "...",
  // whole on hover), and nothing runs past its edge either.
  const AppRun wide = run_app("desktop-passport-columns", {"--panel", "passport"});
  ASSERT_EQ(wide.status, 0) << wide.err;
  EXPECT_EQ(wide.report.value("passport_columns", json::array()).size(), 7u) << wide.report.value("passport_columns", json::array());
  for (size_t i = 0; i < wide.report.value("passport_columns", json::array()).size(); ++i)
    EXPECT_LE(wide.report["passport_column_rects"][i][2].get<double>(), wide.report["passport_right"].get<double>() + 0.5);

  const AppRun f = run_app("desktop-focus-kv", {"--panel", "focus", "--then", "kv_heads=2"});
  ASSERT_EQ(f.status, 0) << f.err;
  EXPECT_TRUE(f.report["clipped"].empty()) << f.report["clipped"].dump(1);
  ASSERT_EQ(f.report["focus_map"].size(), 1u);
  EXPECT_LE(f.report["focus_map"][0][3].get<double>(), 1000.0) << "the enlarged step runs off the bottom";
  EXPECT_EQ(f.report.value("passport_columns", json::array()).size(), 3u) << "the compact passport beside Focus";
  for (size_t i = 0; i < f.report.value("passport_columns", json::array()).size(); ++i)
    EXPECT_LE(f.report["passport_column_rects"][i][2].get<double>(), f.report["passport_right"].get<double>() + 0.5);
}

// Long texts (everyday sentences repeated) with 8 and 16 heads: axis labels on every axis at
// T = 200 and 2,000, thinned ticks with position numbers, none overlapping, and more labels
// of the visible tokens when zoomed in.
TEST(Gui, LongTextsHaveAxisLabelsWithPositionNumbersAtEveryZoom) {
  const std::vector<std::string> sentences = {"The children walked to school in the morning rain.",
                                              "My neighbour bakes bread every Sunday for the whole street.",
                                              "We missed the last bus, so we walked home together.",
                                              "After dinner the family played cards by the window."};
  auto words = [&](int n) {
    std::string text;
    for (int i = 0, k = 0; i < n; ++k)
      for (size_t p = 0, q; i < n && p < sentences[k % sentences.size()].size(); p = q + 1, ++i) {
        const std::string& s = sentences[k % sentences.size()];
        q = s.find(' ', p);
        if (q == std::string::npos) q = s.size();
        text += s.substr(p, q - p) + " ";
      }
    return text;
  };
  struct Case {
    const char* name;
    int words, heads, context;
    const char* zoom;
  };
  std::vector<AppRun> runs;
  for (const Case& c : {Case{"long200-8", 180, 8, 256, nullptr}, Case{"long2000-16", 1800, 16, 2048, nullptr},
                        Case{"long2000-16-zoomed", 1800, 16, 2048, "16"}}) {
    SCOPED_TRACE(c.name);
    std::vector<std::string> args = {"--text", words(c.words), "--then", "weights=random", "--then", "context=" + std::to_string(c.context),
                                     "--then", "heads=" + std::to_string(c.heads)};
    if (c.zoom) args.insert(args.end(), {"--then", std::string("heads_zoom=") + c.zoom});
    const AppRun r = run_app(c.name, args);
    ASSERT_EQ(r.status, 0) << r.err;
    ASSERT_GE(r.report["tokens"].size(), static_cast<size_t>(c.words)) << "the text reaches T";
    ASSERT_EQ(r.report["heatmaps_drawn"], c.heads);
    EXPECT_TRUE(r.report["clipped"].empty()) << r.report["clipped"].dump(1);
    const json& labels = r.report["token_labels"];
    const json texts = r.report.value("token_label_texts", json::array());
    std::set<double> rows, columns;
    for (const auto& m : r.report["heatmaps"]) rows.insert(m[1].get<double>()), columns.insert(m[0].get<double>());
    EXPECT_GE(labels.size(), (rows.size() + columns.size()) * 3) << "labels on every axis";
    ASSERT_EQ(labels.size(), texts.size());
    EXPECT_GE(numbered_labels(texts), labels.size() / 2) << "thinned ticks carry position numbers: " << texts;
    expect_no_overlap(labels, c.name);
    runs.push_back(r);
  }
  // Zoomed 16 times on the first tokens: finer ticks (a smaller step between the position
  // numbers), all of positions in the visible window (the first 2048 / 16 = 128), and
  // tokens' words among them. (This compared the label counts, zoomed more than unzoomed,
  // which held by the steps' rounding: since the row labels may shrink to label more rows
  // (issue 34, finding 6), the unzoomed axes label every 200th of 2,000 tokens, 11 labels,
  // and the zoomed ones every 20th of 128, 7: finer, and fewer. At least half as many.)
  const json zoomed = runs[2].report.value("token_label_texts", json::array());
  const json unzoomed = runs[1].report.value("token_label_texts", json::array());
  EXPECT_GE(zoomed.size() * 2, unzoomed.size());
  auto finest_step = [](const json& texts) {
    std::set<int> pos;
    for (const auto& t : texts) {
      const std::string s = t.get<std::string>();
      const size_t sp = s.find_last_of(' ');
      const std::string last = sp == std::string::npos ? s : s.substr(sp + 1);
      if (!last.empty() && last.find_first_not_of("0123456789") == std::string::npos) pos.insert(std::stoi(last));
    }
    int step = 1 << 30;
    for (auto it = pos.begin(); it != pos.end() && std::next(it) != pos.end(); ++it) step = std::min(step, *std::next(it) - *it);
    return step;
  };
  EXPECT_LT(finest_step(zoomed), finest_step(unzoomed)) << zoomed << "\n" << unzoomed;
  for (const auto& t : zoomed) {
    const std::string s = t.get<std::string>();
    const size_t sp = s.find_last_of(' ');
    const std::string last = sp == std::string::npos ? s : s.substr(sp + 1);
    if (!last.empty() && last.find_first_not_of("0123456789") == std::string::npos) {
      EXPECT_LT(std::stoi(last), 128) << s;
    }
  }
  bool words_shown = false;
  for (const auto& t : zoomed) words_shown = words_shown || t.get<std::string>().find_first_of("abcdefghijklmnopqrstuvwxyz") != std::string::npos;
  EXPECT_TRUE(words_shown) << "zoomed in, the labels carry the tokens: " << zoomed;
}

// Position 0 is labelled on the key axis too, however narrow its cell: the rotated key
// labels dropped the first tick whenever a cell was narrower than a line (8 heads at
// 1024x768 with large text, a 128-token map at 1600x1000, any zoomed long map), so the
// column a first-token head looks at had no label under any map.
TEST(Gui, TheFirstKeyIsLabelledUnderEveryMap) {
  std::string words;
  for (int i = 0; i < 150; ++i) words += std::string(i % 3 ? "river " : "stone ");
  struct Case {
    const char* name;
    std::vector<std::string> args;
  };
  for (const Case& c : {Case{"first-key-8-projector", {"--size", "1024x768", "--font-scale", "1.5", "--then", "heads=8"}},
                        Case{"first-key-long", {"--size", "1600x1000", "--text", words}}}) {
    SCOPED_TRACE(c.name);
    const AppRun r = run_app(c.name, c.args);
    ASSERT_EQ(r.status, 0) << r.err;
    const json& maps = r.report["heatmaps"];
    const json& labels = r.report["token_labels"];
    const json texts = r.report.value("token_label_texts", json::array());
    ASSERT_EQ(labels.size(), texts.size());
    ASSERT_FALSE(maps.empty());
    // The maps at the bottom of each column carry the key labels, below them.
    std::map<double, json> bottom;
    for (const auto& m : maps)
      if (!bottom.count(m[0].get<double>()) || m[3].get<double>() > bottom[m[0].get<double>()][3].get<double>()) bottom[m[0].get<double>()] = m;
    for (const auto& [x0, m] : bottom) {
      bool first = false;
      for (size_t i = 0; i < labels.size(); ++i) {
        const json& l = labels[i];
        const std::string t = texts[i].get<std::string>();
        const bool below = l[1].get<double>() >= m[3].get<double>() && l[0].get<double>() >= m[0].get<double>() - 8 &&
                           l[0].get<double>() < m[2].get<double>();
        const bool zero = t == "0" || (t.size() > 3 && t.compare(t.size() - 3, 3, "  0") == 0);
        first = first || (below && zero);
      }
      EXPECT_TRUE(first) << "no key label for position 0 under the map " << m << ": " << texts;
    }
    expect_no_overlap(labels, c.name);
  }
}

// A note above the grid (the causal mask's) takes height, not the maps' share of it: at
// 1024x768 with large text the four maps stay large, their columns standing apart as far as
// the titles need, and each title keeps its whole label on one line. They were 103 px in one
// row with every label on a second line and 170 px empty below.
TEST(Gui, TheCausalNoteLeavesTheProjectorMapsLarge) {
  const AppRun r = run_app("causal-note-projector", {"--size", "1024x768", "--font-scale", "1.5", "--then", "causal=off"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(r.report["clipped"].empty()) << r.report["clipped"].dump(1);
  const json& maps = r.report["heatmaps"];
  ASSERT_EQ(maps.size(), 4u);
  for (const auto& m : maps) EXPECT_GE(m[3].get<double>() - m[1].get<double>(), 140.0) << "map " << m;
  const json& titles = r.report["head_titles"];
  const json& earned = r.report["head_labels"];
  ASSERT_EQ(titles.size(), 4u);
  ASSERT_GE(earned.size(), 4u);
  for (size_t h = 0; h < 4; ++h) {
    const std::string label = earned[h].get<std::string>();
    EXPECT_NE(titles[h].get<std::string>().find(label), std::string::npos) << "head " << h << " lost \"" << label << "\": " << titles[h];
  }
  const json& rects = r.report["head_title_rects"];
  ASSERT_EQ(rects.size(), 4u);
  for (const auto& t : rects) EXPECT_LE(t[3].get<double>() - t[1].get<double>(), 40.0) << "one line: " << t;
  expect_no_overlap(rects, "titles");
  const json& panel = r.report["heads_panel"];
  for (const auto& t : rects) EXPECT_LE(t[2].get<double>(), panel[2].get<double>()) << t;
}

// Scripted exports one after another, with no "wait" between them: each dialog's OK runs
// before the next opens, so every file is written (the second replaced the first, silently).
TEST(Gui, ScriptedExportsInARowAreAllWritten) {
  const fs::path dir = fresh_dir("exports-in-a-row");
  const AppRun r = run_app("exports-in-a-row", {"--then", "export_head=one.svg", "--then", "export_heads=all.svg", "--then", "save_view="}, true, dir);
  ASSERT_EQ(r.status, 0) << r.err;
  for (const char* name : {"one.svg", "all.svg", "view.headmap.json"}) EXPECT_TRUE(fs::exists(dir / name)) << name << " in " << dir;
  std::ifstream f(dir / "one.svg");
  const std::string svg((std::istreambuf_iterator<char>(f)), {});
  EXPECT_NE(svg.find("<text class=\"title\""), std::string::npos);
}

// The Presets button and its sentences are widgets a GUI test can click by name, as a
// person picks one (the button was drawn but not reported, so no test could open it).
TEST(Widgets, APresetIsPickedThroughThePresetsButton) {
  const AppRun r = run_app("preset-picked", {"--input", "click Presets; click Induction: a sentence said twice; wait"});
  ASSERT_EQ(r.status, 0) << r.err;
  const json& tokens = r.report["tokens"];
  EXPECT_NE(std::find(tokens.begin(), tokens.end(), "\xC2\xB7green"), tokens.end()) << tokens;
}

// The passport announces what changed: after a new sentence nothing in the model did, and
// moving num_heads says exactly that. It used to announce "d_model 64 -> 128, context 256 ->
// 128" after any early edit: the app's start (the shipped model's own D and context, set
// after init) was taken for a change from the random-init defaults.
TEST(Gui, ThePassportAnnouncesOnlyWhatTheUserChanged) {
  const AppRun typed = run_app("passport-note-text", {"--then", "text=The bus was late again."});
  ASSERT_EQ(typed.status, 0) << typed.err;
  ASSERT_EQ(typed.report["config"]["d_model"], 128);
  EXPECT_EQ(typed.report.value("passport_note", std::string()), "") << "a new sentence changes no setting";
  const AppRun heads = run_app("passport-note-heads", {"--then", "heads=8"});
  ASSERT_EQ(heads.status, 0) << heads.err;
  EXPECT_EQ(heads.report.value("passport_note", std::string()), "num_heads 4 \xE2\x86\x92 8");
}

// The window never opens larger than the screen's work area (run by ctest on a 1024x768
// virtual screen: gui_small_screen).
TEST(SmallScreen, TheWindowFitsTheScreen) {
  const char* screen = std::getenv("HEADMAP_TEST_SMALL_SCREEN");
  if (!screen) GTEST_SKIP() << "runs under a 1024x768 Xvfb screen (ctest: gui_small_screen)";
  const AppRun r = run_app("small-screen", {});  // the default window is 1600x1000
  ASSERT_EQ(r.status, 0) << r.err;
  const Image im = load_png(r.png);
  EXPECT_LE(im.w, 1024);
  EXPECT_LE(im.h, 768);
  EXPECT_TRUE(contains(r.report["messages"], "to fit the screen")) << r.report["messages"];
  EXPECT_TRUE(r.report["clipped"].empty()) << r.report["clipped"].dump(1);
}

// A HiDPI monitor (ctest gui_hidpi: Xvfb with Xft.dpi 192, which GLFW reports as a
// content scale of 2): the text is drawn twice as large on top of the user's own scale,
// the default window (1600x1000 at scale 1) is asked at twice the size and fits the
// screen, and nothing is cut off.
TEST(HiDpi, TheMonitorsContentScaleEnlargesTheText) {
  const char* scale = std::getenv("HEADMAP_TEST_CONTENT_SCALE");
  if (!scale) GTEST_SKIP() << "runs under an Xvfb screen with Xft.dpi 192 (ctest: gui_hidpi)";
  const AppRun r = run_app("hidpi", {"--text", "We walked to the station in the rain."});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.report["content_scale"].get<double>(), std::atof(scale));
  EXPECT_NEAR(r.report["font_px"].get<double>(), 17.0 * std::atof(scale), 0.5);
  EXPECT_TRUE(contains(r.report["messages"], "to fit the screen")) << r.report["messages"];
  EXPECT_TRUE(r.report["clipped"].empty()) << r.report["clipped"].dump(1);
  const AppRun big = run_app("hidpi-projector", {"--text", "We walked to the station in the rain.", "--font-scale", "1.5"});
  ASSERT_EQ(big.status, 0) << big.err;
  EXPECT_NEAR(big.report["font_px"].get<double>(), 17.0 * 1.5 * std::atof(scale), 0.5) << "the user's scale multiplies the monitor's";
  EXPECT_EQ(big.report["layout"], "tabs");
  EXPECT_TRUE(big.report["clipped"].empty()) << big.report["clipped"].dump(1);
}

// A pitfall beside the correct model, on one shared colour scale: the √D pitfall flattens
// every head, the entropy goes up, and the passport rows it changes are named.
TEST(Gui, ComparisonShowsThePitfallBesideTheCorrectModel) {
  const AppRun r = run_app("compare-scale", {"--panel", "compare", "--then", "pitfall=scale-d-model=on"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.report["compare_heatmaps"].size(), 8u) << "4 heads with the pitfall, 4 correct";
  EXPECT_TRUE(contains(r.report["messages"], "shared colour scale"));
  EXPECT_TRUE(contains(r.report["messages"], "(flatter)")) << r.report["messages"];
  EXPECT_TRUE(contains(r.report["passport_changes"], "\xE2\x88\x9A" "D")) << r.report["passport_changes"];
  // On the shared scale the flatter side is darker: its brightest cells are dimmer.
  const Image im = load_png(r.png);
  // The largest colormap position seen in a map, below its first row (the first query sees
  // only itself: 1.0 in both models).
  const int len = static_cast<int>(r.report["tokens"].size());
  auto peak_position = [&](const json& q) {
    float best = 0;
    const int row_h = (static_cast<int>(q[3]) - static_cast<int>(q[1])) / len;
    for (int y = static_cast<int>(q[1]) + row_h + 2; y < static_cast<int>(q[3]) - 2; y += 2)
      for (int x = static_cast<int>(q[0]) + 2; x < static_cast<int>(q[2]) - 2; x += 2) {
        const auto p = im.at(x, y);
        for (int i = 0; i < 256; ++i) {
          const auto c = headmap::colormap_rgb(Colormap::Viridis, i / 255.0f);
          if (std::abs(std::lround(c[0] * 255) - p[0]) + std::abs(std::lround(c[1] * 255) - p[1]) + std::abs(std::lround(c[2] * 255) - p[2]) <= 6)
            best = std::max(best, i / 255.0f);
        }
      }
    return best;
  };
  float pit = 0, ok = 0;
  for (int h = 0; h < 4; ++h) pit += peak_position(r.report["compare_heatmaps"][h]), ok += peak_position(r.report["compare_heatmaps"][h + 4]);
  EXPECT_LT(pit, ok) << "the pitfall's maps must look flatter on the shared scale";
  // A/B: one grid at a time.
  const AppRun b = run_app("compare-b", {"--panel", "compare", "--then", "pitfall=scale-d-model=on", "--then", "compare_view=b"});
  ASSERT_EQ(b.status, 0) << b.err;
  EXPECT_EQ(b.report["compare_heatmaps"].size(), 4u);
  // Head averaging: one averaged map against the four heads.
  const AppRun avg = run_app("compare-avg", {"--panel", "compare", "--then", "pitfall=head-averaged=on"});
  ASSERT_EQ(avg.status, 0) << avg.err;
  EXPECT_EQ(avg.report["compare_heatmaps"].size(), 5u);
}

// Issue 22 (8): every passport row the Compare tab lists shows a change: the reversed mask
// changes only the mask's note (which keys are visible) and the forgotten transpose the
// split's note, and both rows read the same text on both sides of the arrow before.
TEST(Gui, ComparisonRowsShowWhatThePitfallChanged) {
  for (const char* pitfall : {"reversed-mask", "no-transpose", "interleaved"}) {
    const AppRun r = run_app(std::string("compare-rows-") + pitfall, {"--panel", "compare", "--then", std::string("pitfall=") + pitfall + "=on"});
    ASSERT_EQ(r.status, 0) << r.err;
    ASSERT_FALSE(r.report["passport_changes"].empty()) << pitfall;
    for (const auto& row : r.report["passport_changes"]) {
      const std::string t = row.get<std::string>();
      const size_t arrow = t.find("  \xE2\x86\x92  "), colon = t.find(": ");
      if (arrow == std::string::npos) continue;  // a row only one side has
      ASSERT_NE(colon, std::string::npos) << t;
      EXPECT_NE(t.substr(colon + 2, arrow - colon - 2), t.substr(arrow + 7)) << pitfall << ": the same text on both sides: " << t;
    }
  }
}

// Issue 22 (8): the interleaved view changes single heads a lot and the mean little; the
// summary lists each head's change, not only the mean's.
TEST(Gui, InterleavedSummaryListsEachHeadsChange) {
  const AppRun r = run_app("compare-interleaved", {"--panel", "compare", "--then", "pitfall=interleaved=on"});
  ASSERT_EQ(r.status, 0) << r.err;
  std::string mean, per_head;
  for (const auto& m : r.report["messages"]) {
    const std::string t = m.get<std::string>();
    if (t.rfind("Mean entropy", 0) == 0) mean = t;
    if (t.rfind("Per head:", 0) == 0) per_head = t;
  }
  ASSERT_FALSE(mean.empty()) << r.report["messages"];
  ASSERT_FALSE(per_head.empty()) << "no per-head changes beside: " << mean;
  double largest = 0;
  int heads = 0;
  for (size_t at = per_head.find("head "); at != std::string::npos; at = per_head.find("head ", at + 5)) {
    const size_t sp = per_head.find(' ', at + 5);
    if (sp == std::string::npos || (per_head[sp + 1] != '+' && per_head[sp + 1] != '-')) continue;
    largest = std::max(largest, std::fabs(std::atof(per_head.c_str() + sp + 1)));
    ++heads;
  }
  EXPECT_EQ(heads, 4) << per_head;
  const double mean_change = std::fabs(std::atof(mean.c_str() + mean.find(": ") + 2));
  EXPECT_GT(largest, mean_change) << "the listed heads: " << per_head << "; the mean: " << mean;
}

// Issue 22 (8): with the causal mask off every token sees the next one, so the loss on the
// text reads the answer: a note stands beside it.
TEST(Gui, LossWithTheCausalMaskOffCarriesANote) {
  const AppRun on = run_app("causal-on", {"--text", "We walked to the station in the rain."});
  ASSERT_EQ(on.status, 0) << on.err;
  EXPECT_FALSE(contains(on.report["messages"], "causal mask off")) << on.report["messages"];
  const AppRun off = run_app("causal-off", {"--text", "We walked to the station in the rain.", "--then", "causal=off"});
  ASSERT_EQ(off.status, 0) << off.err;
  EXPECT_TRUE(off.report.contains("loss_on_text")) << "a trained model shows its loss";
  EXPECT_TRUE(contains(off.report["messages"], "causal mask off: each token can see the next one")) << off.report["messages"];
}

// The induction exercise: on a sentence said twice, the model predicts the word that
// followed the first time; each sentence of a batch shows its own loss.
TEST(Gui, PredictionsShowTheNextTokenAndEachSentencesLoss) {
  const AppRun r = run_app("predict", {"--text", "My grandmother planted tomatoes in the garden. My grandmother planted tomatoes in the"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.report["predicted_after"], "\xC2\xB7the");
  ASSERT_EQ(r.report["predictions"].size(), 5u);
  EXPECT_EQ(r.report["predictions"][0].get<std::string>().rfind("\xC2\xB7garden ", 0), 0u) << r.report["predictions"];
  // A clicked chip: the predictions after token 2 ("·planted" -> "·tom...").
  const AppRun sel = run_app("predict-select", {"--text", "My grandmother planted tomatoes", "--then", "select_token=0"});
  EXPECT_EQ(sel.report["predicted_after"], "My");
  const AppRun batch = run_app("predict-batch", {"--text", "The cat sat on the mat because it was tired.", "--text",
                                                 "The lawyer who the jury believed told the truth.", "--then", "sentence=1"});
  ASSERT_EQ(batch.status, 0) << batch.err;
  ASSERT_EQ(batch.report["sentence_losses"].size(), 2u);
  EXPECT_GT(batch.report["sentence_losses"][0].get<double>(), 0.0);
  EXPECT_NE(batch.report["sentence_losses"][0], batch.report["sentence_losses"][1]);
  EXPECT_EQ(batch.report["predicted_after"], ".") << "sentence 1's last token";
}

// The head's slice in Focus, and an ablated head drawn greyed with its "off" mark.
TEST(Gui, FocusMarksTheHeadsSliceAndAblatedHeadsAreGreyed) {
  const AppRun f = run_app("focus-slice", {"--panel", "focus", "--then", "head=2"});
  ASSERT_EQ(f.status, 0) << f.err;
  EXPECT_TRUE(contains(f.report["messages"], "Head 2 reads columns 64\xE2\x80\x93" "95 of W_Q, W_K, W_V")) << f.report["messages"];
  const AppRun i = run_app("focus-slice-interleaved", {"--panel", "focus", "--then", "head=1", "--then", "pitfall=interleaved=on"});
  EXPECT_TRUE(contains(i.report["messages"], "Head 1 reads columns 1, 5, 9")) << i.report["messages"];
  const AppRun off = run_app("heads-off", {"--then", "layer=1", "--then", "ablate=1,2"});
  ASSERT_EQ(off.status, 0) << off.err;
  EXPECT_EQ(off.report["heads_off"], 1);
  const Image im = load_png(off.png);
  // The "off" head is grey: little of it is still on the colormap, unlike its neighbour.
  EXPECT_LT(colormap_share(im, off.report["heatmaps"][2], Colormap::Viridis).first, 0.1);
  EXPECT_GT(colormap_share(im, off.report["heatmaps"][1], Colormap::Viridis).first, 0.25);
}

// ---- through the real widgets (issue 22) ------------------------------------------------
// These tests drive the app as a person does: --input steps move the real pointer and press
// real keys (app/script/input.h), menus and dialogs are found by their labels in the
// report's "widgets", the app runs in a temporary working directory, and files are named
// relative to it. To add one: run_app(name, {..., "--input", "click File; click X...; key enter; wait"},
// true, fresh_dir(name)); then check the files in that directory and the report.
namespace {

// A widget's rect [x0, y0, x1, y1] in a report, by its label; null when it was not drawn.
// Whether the pixel (x, y) lies in one of the rectangles [x0, y0, x1, y1] (edges included).
bool in_any(const json& rects, int x, int y) {
  for (const json& q : rects)
    if (x >= std::floor(q[0].get<double>()) && x <= std::ceil(q[2].get<double>()) && y >= std::floor(q[1].get<double>()) &&
        y <= std::ceil(q[3].get<double>()))
      return true;
  return false;
}

json widget_rect(const json& report, const std::string& label) {
  for (const json& w : report["widgets"])
    if (w["label"] == label) return w["rect"];
  return nullptr;
}

// The rectangles of the heads' ablation boxes on screen ("switch L.H"): the heads PNG leaves
// their room empty (issue 34, finding 8), so a comparison with the screen skips them.
json ablation_boxes(const json& report) {
  json out = json::array();
  for (const json& w : report["widgets"])
    if (w["label"].get<std::string>().rfind("switch ", 0) == 0) out.push_back(w["rect"]);
  return out;
}

// The share of pixels inside `rect` of `a` that differ (by more than 2 in a channel) from
// `b` at the same place shifted by (bx, by): b may be a crop of the window. Pixels inside
// the rectangles `skip` (in a's coordinates) are left out.
double differing(const Image& a, const json& rect, const Image& b, int bx = 0, int by = 0, const json& skip = json::array()) {
  const int x0 = static_cast<int>(rect[0].get<double>()), y0 = static_cast<int>(rect[1].get<double>());
  const int x1 = std::min(a.w, static_cast<int>(rect[2].get<double>())), y1 = std::min(a.h, static_cast<int>(rect[3].get<double>()));
  long diff = 0, total = 0;
  for (int y = std::max(0, y0); y < y1; ++y)
    for (int x = std::max(0, x0); x < x1; ++x) {
      if (in_any(skip, x, y)) continue;
      const int u = x - bx, v = y - by;
      ++total;
      if (u < 0 || v < 0 || u >= b.w || v >= b.h) {
        ++diff;
        continue;
      }
      const auto p = a.at(x, y), q = b.at(u, v);
      for (int k = 0; k < 3; ++k)
        if (std::abs(p[k] - q[k]) > 2) {
          ++diff;
          break;
        }
    }
  return total ? static_cast<double>(diff) / total : 1.0;
}

}  // namespace

// Every File dialog opens from its menu item and closes with Cancel, leaving no file; the
// View and Help menus' items act; all by clicks on the real menus.
TEST(Widgets, EveryMenuCommandAndDialogOpensThroughTheMenus) {
  const fs::path dir = fresh_dir("menus");
  const std::pair<const char*, const char*> dialogs[] = {
      {"Open view...", "Open view"},
      {"Save view...", "Save view"},
      {"Open model...", "Open model (a directory, a GGUF file, a checkpoint, or a cached model)"},
      {"Open checkpoint...", "Open checkpoint"},
      {"Export heads as PNG...", "Export heads as PNG"},
      {"Export window as PNG...", "Export window as PNG"},
      {"Export attention as .npy...", "Export attention as .npy"},
      {"Export attention as JSON...", "Export attention as JSON"},
  };
  std::string steps;
  for (const auto& [item, title] : dialogs)
    steps += std::string("click File; click ") + item + "; expect " + title + "; expect Path; click Cancel; absent " + title + "; ";
  steps += "click View; click magma; click View; click Log scale; click Help; click Keyboard shortcuts; expect Keyboard shortcuts; "
           "click Close; absent Keyboard shortcuts";
  const AppRun r = run_app("widgets-menus", {"--input", steps}, true, dir);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.report["colormap"], "magma");
  EXPECT_EQ(r.report["view"]["log_scale"], true);
  EXPECT_EQ(r.report["dialog_open"], false);
  EXPECT_TRUE(fs::is_empty(dir)) << "Cancel wrote a file";
  // The menu's colormap reached the pixels.
  const Image im = load_png(r.png);
  ASSERT_FALSE(r.report["heatmaps"].empty());
  EXPECT_GT(colormap_share(im, r.report["heatmaps"][0], Colormap::Magma).first, 0.3);
  // A label that is not on screen fails the run, naming it.
  const AppRun missing = run_app("widgets-missing", {"--input", "timeout 1; click File; click Save everything..."}, true, dir);
  EXPECT_EQ(missing.status, 1);
  EXPECT_NE(missing.err.find("no widget \"Save everything...\" on screen"), std::string::npos) << missing.err;
  const AppRun bad = run_app("widgets-bad-step", {"--input", "jump File"}, true, dir);
  EXPECT_EQ(bad.status, 2);
}

// View > BF16 products, clicked in the real menu: on a BF16 model and on the shipped one (F32)
// the line above the heads names this pass's time beside F32's and their largest difference,
// on this CPU (avx512_bf16), or says the pass is F32 and why. Clicked again, the line goes.
TEST(Widgets, Bf16ProductsAreLabelledAboveTheHeads) {
  const fs::path bf16 = family_dir("smollm2");  // BF16 weights
  ASSERT_FALSE(bf16.empty()) << "make_family_dir.py could not write the BF16 model (numpy?)";
  const std::string item = "click View; click BF16 products (faster, approximate); wait";
  const AppRun on = run_app("bf16-products-on", {"--model", bf16.string(), "--input", item}, true, fresh_dir("bf16-on"));
  ASSERT_EQ(on.status, 0) << on.err;
  ASSERT_TRUE(on.report.contains("bf16_products")) << "no BF16 products line on screen";
  const std::string line = on.report["bf16_products"]["line"];
  EXPECT_EQ(line.rfind("BF16 products (View menu): ", 0), 0u) << line;
  const bool ran = line.find("largest difference from F32: attention ") != std::string::npos;
  EXPECT_EQ(ran, headmap::Bf16Products::available()) << line;
  EXPECT_TRUE(ran || line.find("avx512_bf16") != std::string::npos) << line;
  if (ran) {
    EXPECT_NE(line.find("this pass "), std::string::npos) << line;
    EXPECT_NE(line.find(" ms, F32 "), std::string::npos) << line;
  }
  const AppRun f32 = run_app("bf16-products-f32", {"--input", item + "; click View; click BF16 products (faster, approximate); wait; "
                                                                   "click View; click BF16 products (faster, approximate); wait"},
                             true, fresh_dir("bf16-f32"));
  ASSERT_EQ(f32.status, 0) << f32.err;
  ASSERT_TRUE(f32.report.contains("bf16_products"));
  const std::string line32 = f32.report["bf16_products"]["line"];
  EXPECT_EQ(line32.find("largest difference from F32: attention ") != std::string::npos, headmap::Bf16Products::available()) << line32;
  const AppRun off = run_app("bf16-products-off", {"--input", item + "; click View; click BF16 products (faster, approximate); wait"}, true,
                             fresh_dir("bf16-off"));
  ASSERT_EQ(off.status, 0) << off.err;
  EXPECT_FALSE(off.report.contains("bf16_products")) << "the line stayed after the second click";
}

// View > 8-bit products, clicked in the real menu on a Q4_K_M GGUF file: the line above the
// heads says they are on, then, once the text is still, their largest difference from F32
// beside both passes' times. On the shipped model (F32 weights) it says why the pass is F32.
TEST(Widgets, Int8ProductsAreLabelledAboveTheHeads) {
  const fs::path file = fresh_dir("int8-model") / "q4_k_m.gguf";
  namespace t = headmap::test;
  ASSERT_TRUE(t::write_llama_gguf(file.string(), t::GgufShape{256, 4, 2, 64, 2, 512, 320}, t::GgufTypes::q4_k_m(), 5, false));
  const std::string item = "click View; click 8-bit products (GGUF Q4_K, Q5_K, Q6_K, Q8_0: faster, approximate); wait";
  const AppRun on = run_app("int8-products-on", {"--model", file.string(), "--input", item}, true, fresh_dir("int8-on"));
  ASSERT_EQ(on.status, 0) << on.err;
  ASSERT_TRUE(on.report.contains("int8_products")) << "no 8-bit products line on screen";
  const std::string line = on.report["int8_products"]["line"];
  EXPECT_EQ(line.rfind("8-bit products (View menu): ", 0), 0u) << line;
  if (headmap::Int8Products::available()) {
    EXPECT_NE(line.find("largest difference from F32: attention "), std::string::npos) << line;
    EXPECT_NE(line.find("this pass "), std::string::npos) << line;
  }
  const AppRun f32 = run_app("int8-products-f32", {"--input", item}, true, fresh_dir("int8-f32"));
  ASSERT_EQ(f32.status, 0) << f32.err;
  ASSERT_TRUE(f32.report.contains("int8_products"));
  const std::string line32 = f32.report["int8_products"]["line"];
  EXPECT_TRUE(line32.find("so the pass is F32") != std::string::npos) << line32;
  const AppRun off = run_app("int8-products-off", {"--model", file.string(), "--input", item + "; " + item}, true, fresh_dir("int8-off"));
  ASSERT_EQ(off.status, 0) << off.err;
  EXPECT_FALSE(off.report.contains("int8_products")) << "the line stayed after the second click";
}

// The keyboard: arrows step the selected head and layer, but not while a dialog or the
// sentence box has the keyboard; Ctrl+O and Ctrl+S open their dialogs and Escape closes
// them; text typed into the sentence box (clicked, all selected) replaces the sentence.
TEST(Widgets, KeyboardStepsTheSelectionAndOpensAndClosesDialogs) {
  const fs::path dir = fresh_dir("keys");
  const AppRun r = run_app("widgets-keys", {"--input", "key right; key right; key down; key ctrl+o; expect Open view; key right; key escape; "
                                                       "absent Open view; key ctrl+s; expect Save view; key escape; absent Save view; key left; "
                                                       "click Sentence; key ctrl+a; type the cat the cat; key right; wait; click Heads; key right; "
                                                       "key ctrl+s; expect Save view; key ctrl+a; type my view.headmap.json; key enter; absent Save view"},
                           true, dir);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.report["tokens"], json::parse(R"(["the", "·cat", "·the", "·cat"])"));
  EXPECT_EQ(r.report["view"]["head"], 2) << "right, right, (right in a dialog: nothing), left, (right in the text box: nothing), right";
  EXPECT_EQ(r.report["view"]["layer"], 1);
  EXPECT_EQ(r.report["dialog_open"], false);
  // Only the name typed over the proposed one was written (Escape wrote nothing), relative to the working directory.
  std::vector<std::string> files;
  for (const auto& e : fs::directory_iterator(dir)) files.push_back(e.path().filename().string());
  EXPECT_EQ(files, std::vector<std::string>{"my view.headmap.json"});
}

// File > Export ... with the names each dialog proposes, through the menus, in the working
// directory: the JSON parses, the PNGs decode at the window's and the heads panel's size and
// show what was on screen (not the dialog), the .npy directory holds the maps.
TEST(Widgets, ExportsWriteTheirProposedNamesInTheWorkingDirectory) {
  const fs::path dir = fresh_dir("exports");
  // The pointer rests on the menu bar before Enter, as a person's would after reading the
  // dialog: it hovers nothing that the PNGs would show.
  const std::string steps =
      "click File; click Export attention as JSON...; expect Path; key enter; absent Path; wait; "
      "click File; click Export window as PNG...; expect Path; hover @800,8; key enter; absent Path; wait; "
      "click File; click Export heads as PNG...; expect Path; hover @800,8; key enter; absent Path; wait; "
      "click File; click Export attention as .npy...; expect Path; key enter; frames 3; key escape; absent Path; wait";
  const AppRun r = run_app("widgets-exports", {"--input", steps}, true, dir);
  ASSERT_EQ(r.status, 0) << r.err;
  const Image shot = load_png(r.png);
  const json views = widget_rect(r.report, "views");
  ASSERT_TRUE(views.is_array()) << r.report["widgets"].dump();

  std::ifstream jf(dir / "attention.json");
  ASSERT_TRUE(jf) << "no attention.json in the working directory";
  const json j = json::parse(jf, nullptr, false);
  ASSERT_TRUE(j.is_object()) << "attention.json does not parse";
  EXPECT_EQ(j["config"]["num_heads"], 4);

  const Image window = load_png(dir / "headmap.png");
  EXPECT_EQ(window.w, 1600);
  EXPECT_EQ(window.h, 1000);
  if (window.w == shot.w) {
    EXPECT_LT(differing(shot, views, window), 0.01) << "the window PNG does not show the heads panel as the screen did";
  }

  const Image heads = load_png(dir / "heads.png");
  const json& fig = r.report["heads_png"];  // the grid and its legend (issue 34, finding 8)
  const int vw = static_cast<int>(fig[2].get<double>()) - static_cast<int>(fig[0].get<double>());
  const int vh = static_cast<int>(fig[3].get<double>()) - static_cast<int>(fig[1].get<double>());
  EXPECT_NEAR(heads.w, vw, 1);
  EXPECT_NEAR(heads.h, vh, 1);
  if (heads.w > 0) {
    const json boxes = ablation_boxes(r.report);
    EXPECT_EQ(boxes.size(), 4u) << "the four heads' boxes, left out of the comparison";
    EXPECT_LT(differing(shot, fig, heads, static_cast<int>(fig[0].get<double>()), static_cast<int>(fig[1].get<double>()), boxes), 0.01)
        << "the heads PNG does not show the heads grid as the screen did";
  }

  bool npy = false;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir / "attention-npy", ec)) npy = npy || e.path().extension() == ".npy";
  EXPECT_TRUE(npy) << "no .npy files in attention-npy: " << r.report["messages"].dump() << "\n" << r.err;
}

// A view saved through File > Save view (its proposed, relative name) reopens exactly,
// opened through File > Open view and as the positional argument (a double-click): the heads
// switched off and the loss they give, the zoom and pan of the heads grid and of Focus, the
// selected sentence, layer, head and clicked token, the Compare view and the panel; the
// report and the pixels of the middle panel and the chips equal the first run's.
TEST(Widgets, SavedViewsReopenExactly) {
  const std::string two = "one two three one two three one two three\nthe cat sat on the mat and the dog sat on the old log";
  struct Case {
    const char* name;
    std::vector<std::string> args;
    std::string input;  // before File > Save view
  };
  const Case cases[] = {
      // Head 1.1 off (its loss), sentence 1's token 2 clicked, layer 1, the heads grid zoomed by the wheel about a cell.
      {"heads", {"--text", two, "--then", "ablate=1,1", "--then", "layer=1"}, "click token 1.2; wait; scroll 3 map 1.2; wait; "},
      // Focus on head 3, zoomed by the wheel about a cell.
      {"focus", {"--text", two, "--then", "head=3", "--then", "ablate=0,2"}, "click Focus; wait; scroll 4 focus map; wait; "},
      // Compare: the scale pitfall, A/B showing B.
      {"compare", {"--panel", "compare", "--then", "pitfall=scale-d-model=on"}, "click A/B; click B: correct; wait; "},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const fs::path dir = fresh_dir(std::string("view-") + c.name);
    std::vector<std::string> args = c.args;
    args.insert(args.end(), {"--input", c.input + "click File; click Save view...; expect Path; key enter; absent Path; wait"});
    const AppRun saved = run_app(std::string("view-save-") + c.name, args, true, dir);
    ASSERT_EQ(saved.status, 0) << saved.err;
    ASSERT_TRUE(fs::exists(dir / "view.headmap.json")) << "File > Save view did not write its proposed name in the working directory";
    std::vector<AppRun> reopened;
    reopened.push_back(run_app(std::string("view-arg-") + c.name, {"view.headmap.json"}, true, dir));
    if (std::string(c.name) == "heads")  // File > Open view, from another view
      reopened.push_back(run_app(std::string("view-open-") + c.name,
                                 {"--then", "heads=8", "--input", "click File; click Open view...; expect Path; key enter; absent Path; wait"}, true,
                                 dir));
    const Image a = load_png(saved.png);
    for (const AppRun& r : reopened) {
      ASSERT_EQ(r.status, 0) << r.err;
      for (const char* key : {"view", "panel", "ablated", "ablated_heads", "loss_on_text", "sentence_losses", "predicted_after", "predictions",
                              "heads_off", "config", "heatmaps", "focus_map", "compare_heatmaps", "head_title_rects", "colormap", "tokens"})
        EXPECT_EQ(r.report[key], saved.report[key]) << key;
      // The pixels: the maps and the heads' titles in the middle panel (not its header,
      // which shows each run's compute time), and the chips (the clicked one is outlined).
      const Image b = load_png(r.png);
      EXPECT_EQ(widget_rect(r.report, "views"), widget_rect(saved.report, "views"));
      size_t maps = 0;
      for (const char* key : {"heatmaps", "focus_map", "compare_heatmaps", "head_title_rects"})
        for (const json& rect : saved.report[key]) {
          EXPECT_LT(differing(a, rect, b), 0.001) << key << " " << rect;
          ++maps;
        }
      EXPECT_GT(maps, 0u);
      for (const json& w : saved.report["widgets"]) {
        const std::string label = w["label"];
        if (label.rfind("token ", 0) != 0) continue;
        EXPECT_EQ(widget_rect(r.report, label), w["rect"]) << label;
        EXPECT_EQ(differing(a, w["rect"], b), 0.0) << label;
      }
    }
    if (std::string(c.name) == "heads") {  // what was set, so the comparison above is not of two defaults
      EXPECT_EQ(saved.report["ablated"], json::parse("[[1, 1]]"));
      EXPECT_EQ(saved.report["heads_off"], 1);
      EXPECT_EQ(saved.report["view"]["batch"], 1);
      EXPECT_EQ(saved.report["view"]["selected_token"], 2);
      EXPECT_GT(saved.report["view"]["heads_zoom"].get<double>(), 1.5);
      EXPECT_NE(saved.report["view"]["heads_pan"][0].get<double>(), 0.5);
    } else if (std::string(c.name) == "focus") {
      EXPECT_EQ(saved.report["panel"], "focus");
      EXPECT_GT(saved.report["view"]["focus_zoom"].get<double>(), 1.5);
      EXPECT_EQ(saved.report["view"]["head"], 3);
    } else {
      EXPECT_EQ(saved.report["view"]["compare_view"], "b");
    }
  }
}

// On a projector's 1024x768 screen with 1.5x text (the narrower layout), the menus, the tabs and
// the dialogs work through the widgets too: Focus by its tab, then File > Save view.
TEST(SmallScreen, TabsMenusAndDialogsWorkThroughTheWidgets) {
  if (!std::getenv("HEADMAP_TEST_SMALL_SCREEN")) GTEST_SKIP() << "runs under a 1024x768 Xvfb screen (ctest: gui_small_screen)";
  const fs::path dir = fresh_dir("small-widgets");
  const AppRun r = run_app("small-widgets", {"--size", "1024x768", "--font-scale", "1.5", "--input",
                                             "click Focus; wait; click File; click Save view...; expect Path; key enter; absent Path; wait"},
                           true, dir);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.report["panel"], "focus");
  std::ifstream vf(dir / "view.headmap.json");
  ASSERT_TRUE(vf) << "File > Save view did not write its proposed name in the working directory";
  const json v = json::parse(vf, nullptr, false);
  EXPECT_EQ(v["panel"], "focus");
  EXPECT_TRUE(r.report["clipped"].empty()) << r.report["clipped"].dump(1);
}
namespace {
// headmap-cli with these arguments: exit status, stdout and stderr.
struct CliRun {
  int status = -1;
  std::string out, err;
};
CliRun run_cli(const std::string& name, std::vector<std::string> args) {
  CliRun r;
  const fs::path out = tmp_dir() / (name + ".cli.out"), err = tmp_dir() / (name + ".cli.err");
  args.insert(args.begin(), HEADMAP_CLI);
  const pid_t pid = fork();
  if (pid == 0) {
    if (!freopen(out.c_str(), "w", stdout) || !freopen(err.c_str(), "w", stderr)) _exit(126);
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    execv(argv[0], argv.data());
    _exit(127);
  }
  int st = 0;
  waitpid(pid, &st, 0);
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  std::ifstream o(out), e(err);
  r.out.assign(std::istreambuf_iterator<char>(o), {});
  r.err.assign(std::istreambuf_iterator<char>(e), {});
  return r;
}
json cli_json(const std::string& name, std::vector<std::string> args) {
  const fs::path j = tmp_dir() / (name + ".cli.json");
  args.insert(args.end(), {"--json", j.string()});
  const CliRun r = run_cli(name, args);
  EXPECT_EQ(r.status, 0) << r.err;
  std::ifstream f(j);
  return f ? json::parse(f, nullptr, false) : json();
}
}  // namespace

// One meaning for num_heads (issue 22): the app's num_heads and headmap-cli's --heads give
// the same weights, the shipped default re-sliced, and so the same loss on the same text
// (the app once loaded the separately trained H = 8 checkpoint: 1.786 against 1.645). That
// checkpoint is reached by name: "trained for this H" in the app, --checkpoint in the CLI.
TEST(Gui, TheAppAndTheCliReSliceTheSameTrainedWeights) {
  const std::string text = "The cat sat on the mat because it was tired.";
  const json cli8 = cli_json("cli-h8", {"--text", text, "--heads", "8"});
  const AppRun app8 = run_app("app-h8", {"--text", text, "--then", "heads=8"});
  ASSERT_EQ(app8.status, 0) << app8.err;
  ASSERT_TRUE(cli8.contains("loss_on_text")) << cli8;
  EXPECT_NEAR(app8.report["loss_on_text"].get<double>(), cli8["loss_on_text"].get<double>(), 1e-5);
  EXPECT_EQ(app8.report["weights_source"], cli8["weights_source"]);
  EXPECT_NE(app8.report["weights_source"].get<std::string>().find("re-sliced from the H=4 training"), std::string::npos)
      << app8.report["weights_source"];
  // --heads 8 on the app's command line: the same.
  const AppRun arg8 = run_app("app-arg-h8", {"--text", text, "--heads", "8"});
  ASSERT_EQ(arg8.status, 0) << arg8.err;
  EXPECT_EQ(arg8.report["weights_source"], cli8["weights_source"]);
  EXPECT_NEAR(arg8.report["loss_on_text"].get<double>(), cli8["loss_on_text"].get<double>(), 1e-5);

  const std::string h8 = std::string(HEADMAP_ASSETS) + "/checkpoints/d128-h8-l2.safetensors";
  const json family = cli_json("cli-ckpt-h8", {"--text", text, "--checkpoint", h8});
  const AppRun for_h = run_app("app-for-h8", {"--text", text, "--then", "heads=8", "--then", "weights=trained_for_h"});
  ASSERT_EQ(for_h.status, 0) << for_h.err;
  EXPECT_EQ(for_h.report["weights_source"].get<std::string>().rfind("trained (D=128, H=8, L=2, ", 0), 0u) << for_h.report["weights_source"];
  EXPECT_EQ(for_h.report["weights_source"], family["weights_source"]);
  EXPECT_NEAR(for_h.report["loss_on_text"].get<double>(), family["loss_on_text"].get<double>(), 1e-5);
  EXPECT_GT(std::abs(for_h.report["loss_on_text"].get<double>() - app8.report["loss_on_text"].get<double>()), 1e-3)
      << "the family's H = 8 model is another model";
}

// Bad input at start is refused in the window, with headmap-cli's text, and the state is the
// one without it: a --file too large (100 MB once opened on the default sentence with no
// word; 60 MB took 7.8 s and 1.47 GB, and left the passport on "Computing..."), a --file
// that cannot be read (which closed the app before its window opened), a --model that is
// not a model and a --checkpoint too large to be one (no window either). A scripted run writes its screenshot and report, then
// exits 1.
TEST(Gui, StartupRefusalsAreShownInTheWindowAndTheDefaultsStay) {
  const fs::path big = tmp_dir() / "big.txt", mid = tmp_dir() / "mid.txt";
  for (const auto& [f, mib] : {std::make_pair(big, 100), std::make_pair(mid, 60)}) {
    { std::ofstream(f) << "x"; }
    fs::resize_file(f, uint64_t(mib) << 20);  // sparse, as truncate -s makes it
  }
  const fs::path missing = tmp_dir() / "no-such-file.txt", not_model = tmp_dir() / "not-a-model";
  fs::create_directories(not_model);
  const std::vector<std::pair<std::string, std::vector<std::string>>> cases = {
      {"refuse-big", {"--file", big.string()}},
      {"refuse-mid", {"--file", mid.string()}},
      {"refuse-missing", {"--file", missing.string()}},
      {"refuse-model", {"--model", not_model.string()}},
      {"refuse-checkpoint", {"--checkpoint", big.string()}}};
  for (const auto& [name, args] : cases) {
    SCOPED_TRACE(name);
    const CliRun cli = run_cli(name, args);
    EXPECT_EQ(cli.status, 1) << cli.err;
    ASSERT_EQ(cli.err.rfind("headmap-cli: ", 0), 0u) << cli.err;
    std::string said = cli.err.substr(13);
    while (!said.empty() && said.back() == '\n') said.pop_back();
    std::vector<std::string> app_args = args;
    app_args.insert(app_args.end(), {"--deadline", "30"});
    const AppRun r = run_app(name, app_args);
    EXPECT_EQ(r.status, 1) << r.err;
    ASSERT_TRUE(fs::exists(r.png)) << "the window opened and was captured";
    ASSERT_TRUE(r.report.is_object()) << r.err;
    EXPECT_TRUE(contains(r.report["messages"], said)) << said << "\n" << r.report["messages"];
    EXPECT_NE(r.err.find(said), std::string::npos) << r.err;  // and on the terminal
    ASSERT_GE(r.report["tokens"].size(), 2u);
    EXPECT_EQ(r.report["tokens"][0], "The") << "the default sentence stays: " << r.report["tokens"];
    EXPECT_EQ(r.report["tokens"][1], "\xC2\xB7" "kitten") << r.report["tokens"];
    EXPECT_FALSE(r.report["passport_rows"].empty()) << "the passport shows the default, not \"Computing...\"";
    EXPECT_EQ(r.report["weights_source"].get<std::string>().rfind("trained (D=128, H=4, L=2, ", 0), 0u) << r.report["weights_source"];
  }
}

// File > Export heads as PNG and Export window as PNG: the picture holds no dialog (they
// were once captured in the frame whose OK was pressed, the modal drawn over the heads).
// The scripted keys open each dialog with a bare relative name, draw it, press its OK
// (the user's path); the exports must equal, pixel for pixel, the same region of the
// screenshot taken afterwards with no dialog. The .npy export of a bare name lands in the
// working directory (it once failed with "Cannot create the directory : Invalid argument.").
TEST(Gui, ExportsHoldNoDialogAndBareNamesLandInTheWorkingDirectory) {
  const fs::path cwd = tmp_dir() / "exports-cwd";
  fs::remove_all(cwd);
  fs::create_directories(cwd);
  const AppRun r = run_app("exports", {"--then", "export_heads=heads.png", "--then", "wait", "--then", "export_window=window.png", "--then", "wait",
                                       "--then", "export_npy=out", "--then", "wait", "--then", "export_head=head.svg"},
                           true, cwd);
  ASSERT_EQ(r.status, 0) << r.err;
  for (const char* f : {"heads.png", "window.png", "out/attention.npy", "out/meta.json", "head.svg"}) EXPECT_TRUE(fs::exists(cwd / f)) << f;
  const Image shot = load_png(r.png), heads = load_png(cwd / "heads.png"), window = load_png(cwd / "window.png");
  ASSERT_GT(shot.w, 0);
  ASSERT_EQ(window.w, shot.w);
  ASSERT_EQ(window.h, shot.h);
  const json& panel = r.report["heads_png"];  // the grid and its legend (issue 34, finding 8)
  const int px = static_cast<int>(panel[0]), py = static_cast<int>(panel[1]);
  ASSERT_NEAR(heads.w, static_cast<int>(panel[2]) - px, 1);
  ASSERT_NEAR(heads.h, static_cast<int>(panel[3]) - py, 1);
  // The heads panel's pixels in both exports against the screenshot (the left column's
  // status lines differ: "Wrote ..." follows each export), the heads PNG's without the
  // ablation boxes it leaves out.
  const json boxes = ablation_boxes(r.report);
  EXPECT_EQ(boxes.size(), 4u);
  for (const auto& [name, im, ox, oy] : {std::tuple{"heads", &heads, 0, 0}, std::tuple{"window", &window, px, py}}) {
    SCOPED_TRACE(name);
    int differ = 0;
    for (int y = 0; y < heads.h; ++y)
      for (int x = 0; x < heads.w; ++x) {
        if (ox == 0 && in_any(boxes, px + x, py + y)) continue;
        const auto a = im->at(ox + x, oy + y), b = shot.at(px + x, py + y);
        differ += std::max({std::abs(a[0] - b[0]), std::abs(a[1] - b[1]), std::abs(a[2] - b[2])}) > 2;
      }
    EXPECT_LE(differ, heads.w * heads.h / 1000) << "pixels that differ from the screenshot without a dialog";
  }
  EXPECT_TRUE(contains(r.report["messages"], "Wrote out")) << r.report["messages"];
}

// ---- every script on screen (glyphs.h, fonts.h) ----------------------------------------
namespace {

// The pixels inside a chip that differ from its fill (sampled at its left edge): its glyphs.
std::vector<bool> chip_ink(const Image& im, const json& rect) {
  const int x0 = static_cast<int>(rect[0]) + 2, y0 = static_cast<int>(rect[1]) + 2;
  const int x1 = static_cast<int>(rect[2]) - 2, y1 = static_cast<int>(rect[3]) - 2;
  const auto fill = im.at(x0, (y0 + y1) / 2);
  std::vector<bool> ink;
  for (int y = y0; y < y1; ++y)
    for (int x = x0; x < x1; ++x) {
      const auto p = im.at(x, y);
      int d = 0;
      for (int k = 0; k < 3; ++k) d = std::max(d, std::abs(p[k] - fill[k]));
      ink.push_back(d > 60);
    }
  return ink;
}

int index_of(const json& list, const std::string& s) {
  for (size_t i = 0; i < list.size(); ++i)
    if (list[i] == s) return static_cast<int>(i);
  return -1;
}

}  // namespace

TEST(Gui, EveryScriptIsDrawnAndOnlyInvalidBytesAreTheReplacementCharacter) {
  // CJK, an emoji (above U+FFFF), Hebrew, Arabic, Devanagari, Greek, Cyrillic, a private-use
  // character no font has, and one invalid byte, on the random model's character chips.
  const fs::path f = tmp_dir() / "scripts.txt";
  write_text(f, "\xE4\xB8\xAD\xE6\x96\x87 \xF0\x9F\x98\x80 \xD7\xA9\xD7\x9C \xD9\x85\xD8\xB1 \xE0\xA4\xA8\xE0\xA4\xAE \xCE\xA9\xCE\xBB "
                "\xD0\xAF\xD0\xB6 \xEE\x80\x80 x\xC3 ok\n");
  const AppRun r = run_app("scripts", {"--random-init", "--tokenizer", "char", "--file", f.string()});
  ASSERT_EQ(r.status, 0) << r.err;
  const json& tokens = r.report["tokens"];
  for (const char* ch : {"\xE4\xB8\xAD", "\xE6\x96\x87", "\xF0\x9F\x98\x80", "\xD7\xA9", "\xD9\x85", "\xE0\xA4\xA8", "\xCE\xA9", "\xD0\xAF"})
    EXPECT_GE(index_of(tokens, ch), 0) << ch << " is not a chip: " << tokens;
  EXPECT_GE(index_of(tokens, "U+E000"), 0) << "a character no font has is named by its code point: " << tokens;
  int replacement = 0;
  for (const auto& t : tokens) replacement += t.get<std::string>().find("\xEF\xBF\xBD") != std::string::npos;
  EXPECT_EQ(replacement, 1) << "only the invalid byte shows U+FFFD: " << tokens;
  EXPECT_EQ(r.report["missing_glyphs"], json({"U+E000"}));
  // The text box: only U+E000 lacks a glyph (drawn as the hollow box), the invalid byte is U+FFFD.
  EXPECT_EQ(r.report["text_box_boxes"], json({"U+E000"}));
  EXPECT_EQ(r.report["text_box_replacements"], 1);
  EXPECT_TRUE(contains(r.report["messages"], "invalid UTF-8"));
  // Pixels: the two ideographs' chips carry glyphs, and different ones (a fallback box would
  // draw the same shape on both).
  const Image im = load_png(r.png);
  ASSERT_GT(im.w, 0);
  const json& rects = r.report["token_chips"];
  ASSERT_EQ(rects.size(), tokens.size());
  const std::vector<bool> a = chip_ink(im, rects[index_of(tokens, "\xE4\xB8\xAD")]), b = chip_ink(im, rects[index_of(tokens, "\xE6\x96\x87")]);
  ASSERT_EQ(a.size(), b.size());
  const long ink_a = std::count(a.begin(), a.end(), true), ink_b = std::count(b.begin(), b.end(), true);
  long differ = 0;
  for (size_t i = 0; i < a.size(); ++i) differ += a[i] != b[i];
  EXPECT_GT(ink_a, 20);
  EXPECT_GT(ink_b, 20);
  EXPECT_GT(differ, std::min(ink_a, ink_b) / 3) << "the two ideographs draw alike: a fallback glyph?";
}

TEST(Gui, ArabicAndHebrewLabelsAreDrawnJoinedAndRightToLeft) {
  // Dear ImGui draws code points left to right, one glyph each: the heads grid's token labels
  // are handed to it in visual order, Arabic in its joined forms (bidi.h). The expected forms
  // come from Unicode's tables (ArabicShaping.txt, the Presentation Forms-B chart): الولد is
  // alef isolated U+FE8D (alef joins nothing after it), lam initial U+FEDF, waw final U+FEEE,
  // lam initial, dal final U+FEAA, drawn last letter first. The chips' report and the text
  // box keep the typed order; a read-only line under the box shows the text as it reads.
  const std::string arabic = "\xD8\xB0\xD9\x87\xD8\xA8 \xD8\xA7\xD9\x84\xD9\x88\xD9\x84\xD8\xAF \xD8\xA5\xD9\x84\xD9\x89 "
                             "\xD8\xA7\xD9\x84\xD9\x85\xD8\xAF\xD8\xB1\xD8\xB3\xD8\xA9";  // ذهب الولد إلى المدرسة
  const std::string walad = "\xD8\xA7\xD9\x84\xD9\x88\xD9\x84\xD8\xAF";  // الولد, typed order
  const std::string walad_drawn = "\xEF\xBA\xAA\xEF\xBB\x9F\xEF\xBB\xAE\xEF\xBB\x9F\xEF\xBA\x8D";  // U+FEAA FEDF FEEE FEDF FE8D
  const std::string yeled = "\xD7\x94\xD7\x99\xD7\x9C\xD7\x93", yeled_drawn = "\xD7\x93\xD7\x9C\xD7\x99\xD7\x94";  // הילד, דליה
  auto has_widget = [](const json& report, const std::string& label) {
    for (const json& w : report["widgets"])
      if (w["label"] == label) return true;
    return false;
  };
  struct Case {
    std::string name, text, typed, drawn;
  };
  for (const Case& c : {Case{"rtl-arabic", arabic, walad, walad_drawn},
                        Case{"rtl-hebrew", yeled + " \xD7\x94\xD7\x9C\xD7\x9A", yeled, yeled_drawn}}) {
    SCOPED_TRACE(c.name);
    const AppRun r = run_app(c.name, {"--random-init", "--tokenizer", "word", "--text", c.text});
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_GE(index_of(r.report["tokens"], c.typed), 0) << "the chips' report keeps the typed order: " << r.report["tokens"];
    const json texts = r.report.value("token_label_texts", json::array());
    int drawn = 0, typed = 0;
    for (const auto& t : texts) {
      const std::string l = t.get<std::string>();
      drawn += l.rfind(c.drawn, 0) == 0;  // the token, then maybe its position number
      typed += l.find(c.typed) != std::string::npos;
    }
    EXPECT_GE(drawn, 2) << "the word's label on both axes, as drawn: " << texts;
    EXPECT_EQ(typed, 0) << "no label in typed order: " << texts;
    if (c.name == "rtl-arabic") {
      for (const auto& t : texts) {  // every Arabic letter of every label in a presentation form
        for (char32_t cp : headmap::decode_utf8(t.get<std::string>()).codepoints) {
          EXPECT_FALSE(cp >= 0x0621 && cp <= 0x064A) << "an unjoined letter U+" << std::hex << static_cast<int>(cp) << " in " << t;
        }
      }
    }
    EXPECT_TRUE(has_widget(r.report, "Sentence preview"));
  }
  const AppRun latin = run_app("rtl-latin", {"--random-init", "--tokenizer", "word", "--text", "the cat sat"});
  ASSERT_EQ(latin.status, 0) << latin.err;
  EXPECT_FALSE(has_widget(latin.report, "Sentence preview")) << "no preview line for left-to-right text";
}

TEST(Gui, WithoutFallbackFontsTheAppStartsAndSaysWhichPackageDrawsTheText) {
  // A fontconfig that knows no fonts: as on a machine without fonts-noto-cjk and the others.
  const fs::path conf = tmp_dir() / "no-fonts.conf";
  write_text(conf, "<?xml version=\"1.0\"?>\n<!DOCTYPE fontconfig SYSTEM \"fonts.dtd\">\n<fontconfig></fontconfig>\n");
  const AppRun r = run_app("no-fonts", {"--random-init", "--tokenizer", "char", "--text", "a\xE4\xB8\xAD\xC3\xA9"}, true, {},
                           {{"FONTCONFIG_FILE", conf.string()}});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.report["tokens"], json({"a", "U+4E2D", "\xC3\xA9"})) << "DejaVu Sans still draws \xC3\xA9";
  EXPECT_TRUE(contains(r.report["messages"], "No installed font draws U+4E2D: shown as the code point (install fonts-noto-cjk)."))
      << r.report["messages"];
  EXPECT_TRUE(contains(r.report["messages"], "fontconfig lists no system fonts")) << r.report["messages"];
}

TEST(Gui, TypedEmojiStayWhole) {
  // Dear ImGui's 16-bit characters would turn a typed emoji into U+FFFD.
  const AppRun r = run_app("typed-emoji", {"--random-init", "--tokenizer", "char", "--type", "a\xF0\x9F\x98\x80" "b"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.report["tokens"], json({"a", "\xF0\x9F\x98\x80", "b"}));
  EXPECT_EQ(r.report["text_box_boxes"], json::array());
}

TEST(Gui, BytePiecesAreGroupedUnderTheirCharacter) {
  // The shipped model's byte-level BPE, trained on English, cuts é, CJK and emoji into bytes.
  const AppRun r = run_app("pieces", {"--text", "Caf\xC3\xA9 \xE4\xB8\xAD \xF0\x9F\x98\x80"});
  ASSERT_EQ(r.status, 0) << r.err;
  const json& tokens = r.report["tokens"];
  const json& groups = r.report["chip_groups"];
  ASSERT_EQ(groups.size(), 3u) << groups;
  const int e = index_of(tokens, "C3");
  ASSERT_GE(e, 0) << tokens;
  EXPECT_EQ(tokens[e + 1], "A9");
  EXPECT_EQ(groups[0], "\xC3\xA9 = C3 A9 (tokens " + std::to_string(e) + "-" + std::to_string(e + 1) + ")");
  EXPECT_EQ(groups[1].get<std::string>().rfind("\xE4\xB8\xAD = E4 B8 AD (tokens ", 0), 0u) << groups[1];
  EXPECT_EQ(groups[2].get<std::string>().rfind("\xF0\x9F\x98\x80 = F0 9F 98 80 (tokens ", 0), 0u) << groups[2];
  // The pieces of one character touch: one group, not unrelated chips.
  const json& rects = r.report["token_chips"];
  EXPECT_LE(static_cast<float>(rects[e + 1][0]) - static_cast<float>(rects[e][2]), 1.5f);
}

// A model whose tokenizer.json is SentencePiece-style (Unigram, Metaspace, byte fallback, a
// template adding <s> and </s>; tests/data/tokenizers/unigram_metaspace.json): the chips show
// the decoded text, <s> and </s> are special chips of their own, and the byte-fallback pieces
// of a character the vocabulary lacks are grouped under it, by the rule GPT-2's pieces use.
TEST(Gui, TokenizerJsonChipsShowSpecialTokensAndByteFallbackGroups) {
  const fs::path dir = tmp_dir() / "unigram-tiny";
  const std::string make = std::string("/usr/bin/python3 '") + HEADMAP_MAKE_GPT2 + "' '" + dir.string() + "' --d 48 --heads 4 --layers 2 --positions 32 --tokenizer '" +
                           HEADMAP_TEST_DATA + "/tokenizers/unigram_metaspace.json' > /dev/null 2>&1";
  if (std::system(make.c_str()) != 0) GTEST_SKIP() << "numpy is missing: the tiny model directory cannot be written";
  const AppRun r = run_app("unigram-chips", {"--model", dir.string(), "--text", "Caf\xC3\xA9 \xE4\xB8\xAD ok"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.report["tokens"], json({"<s>", "\xC2\xB7" "cafe", "\xE2\x90\xA3", "E4", "B8", "AD", "\xE2\x90\xA3", "ok", "</s>"}));
  EXPECT_EQ(r.report["special_chips"], json({0, 8})) << "BOS and EOS are special chips";
  EXPECT_EQ(r.report["chip_groups"], json({"\xE4\xB8\xAD = E4 B8 AD (tokens 3-5)"}));
  const json& rects = r.report["token_chips"];
  ASSERT_EQ(rects.size(), 9u);
  EXPECT_LE(static_cast<float>(rects[4][0]) - static_cast<float>(rects[3][2]), 1.5f) << "the pieces of one character touch";
}

TEST(Png, ExportsDrawEveryScriptAndNameMissingCharacters) {
  headmap::Font font;
  ASSERT_TRUE(font.load(std::string(HEADMAP_ASSETS) + "/fonts/DejaVuSans.ttf").ok());
  auto draw = [&](const std::string& text) {
    headmap::Canvas c(200, 40, {255, 255, 255});
    font.draw(c, 4, 30, text, 24, {0, 0, 0});
    return c.rgb;
  };
  // Two ideographs and two emoji: each drawn, and unlike each other (not the .notdef box).
  EXPECT_NE(draw("\xE4\xB8\xAD"), draw("\xE6\x96\x87"));
  EXPECT_NE(draw("\xF0\x9F\x98\x80"), draw("\xF0\x9F\x98\x8E"));
  EXPECT_NE(draw("\xE4\xB8\xAD"), draw(" "));
  // A character no font has is written as its code point; an invalid byte stays U+FFFD.
  EXPECT_EQ(draw("\xEE\x80\x80"), draw("U+E000"));
  EXPECT_EQ(font.width("\xEE\x80\x80", 24), font.width("U+E000", 24));
  EXPECT_EQ(draw("\xC3"), draw("\xEF\xBF\xBD"));
}

// The lesson player (issue 23): every step of every shipped lesson (assets/lessons), walked
// in one app run per lesson at a projector's 1024x768 with 1.5x text. After each step the
// report shows the step (its number and title), the state each of its settings asked for,
// a result for it (or the message of an invalid pair), and nothing cut off.
namespace {
// Does the report show what "key=value" asked for? An unknown key fails: a new key in a
// lesson must be taught to this check.
void expect_setting_shown(const json& rep, const std::string& a) {
  const size_t eq = a.find('=');
  const std::string k = a.substr(0, eq), v = a.substr(eq + 1);
  const json& c = rep["config"];
  const json& s = rep["state"];
  auto num = [&](const json& got) { EXPECT_EQ(got.get<long long>(), std::stoll(v)) << a; };
  auto on = [&](const json& got) { EXPECT_EQ(got.get<bool>(), v == "on" || v == "1" || v == "true") << a; };
  if (k == "show") EXPECT_TRUE(rep[v == "parameters" ? "passport_params_visible" : "focus_slice_open"].get<bool>()) << a << ": not in view";
  else if (k == "weights") EXPECT_EQ(s["weights"], v) << a;
  else if (k == "d_model") num(c["d_model"]);
  else if (k == "heads") num(c["num_heads"]);
  else if (k == "kv_heads") num(c["num_kv_heads"]);
  else if (k == "layers") num(c["num_layers"]);
  else if (k == "context") EXPECT_EQ(c["context"].get<int>(), std::stoi(v)) << a;
  else if (k == "seed") num(c["seed"]);
  else if (k == "causal") on(c["causal"]);
  else if (k == "positional") on(c["positional"]);
  else if (k == "text") EXPECT_EQ(s["text"], v) << a;
  else if (k == "layer") num(s["layer"]);
  else if (k == "head") num(s["head"]);
  else if (k == "sentence") num(s["sentence"]);
  else if (k == "focus_step") num(s["focus_step"]);
  else if (k == "select_token") num(s["select_token"]);
  else if (k == "panel") EXPECT_EQ(rep["panel"], v) << a;
  else if (k == "colormap") EXPECT_EQ(rep["colormap"], v) << a;
  else if (k == "norm") EXPECT_EQ(s["norm"], v) << a;
  else if (k == "log_scale") on(s["log_scale"]);
  else if (k == "heads_zoom") EXPECT_EQ(s["heads_zoom"].get<double>(), std::stod(v)) << a;
  else if (k == "compare_view") EXPECT_EQ(s["compare_view"], v) << a;
  else if (k == "pitfall") {
    const size_t e2 = v.find('=');
    const std::string name = v.substr(0, e2);
    EXPECT_EQ(c["pitfalls"][name].get<bool>(), e2 == std::string::npos || v.substr(e2 + 1) == "on") << a;
  } else if (k == "ablate") {
    const int l = std::stoi(v), h = std::stoi(v.substr(v.find(',') + 1));
    EXPECT_NE(std::find(s["ablated"].begin(), s["ablated"].end(), json::array({l, h})), s["ablated"].end()) << a;
  } else {
    ADD_FAILURE() << "the lesson walk does not know how to check \"" << a << "\"";
  }
}
}  // namespace

TEST(Gui, EveryLessonStepReachesItsStateUncutOnAProjector) {
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(fs::path(HEADMAP_ASSETS) / "lessons"))
    if (e.path().extension() == ".json") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  ASSERT_EQ(files.size(), 5u) << "one lesson per chapter, 000 to 004";
  for (const fs::path& f : files) {
    SCOPED_TRACE(f.filename().string());
    std::ifstream in(f);
    const json lesson = json::parse(in);
    const json& steps = lesson["steps"];
    const std::string id = f.stem().string().substr(0, 3);
    std::vector<std::string> args = {"--size", "1024x768", "--font-scale", "1.5", "--lesson", id, "--deadline", "300"};
    for (size_t i = 0; i < steps.size(); ++i) {
      const fs::path rep = tmp_dir() / ("lesson-" + id + "-" + std::to_string(i + 1) + ".json");
      fs::remove(rep);
      args.insert(args.end(), {"--then", "lesson_step=" + std::to_string(i + 1), "--then", "wait", "--then", "report=" + rep.string()});
    }
    const AppRun r = run_app("lesson-" + id, args);
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_EQ(r.err.find("lesson"), std::string::npos) << r.err;  // no refused step
    for (size_t i = 0; i < steps.size(); ++i) {
      SCOPED_TRACE("step " + std::to_string(i + 1));
      std::ifstream rf(tmp_dir() / ("lesson-" + id + "-" + std::to_string(i + 1) + ".json"));
      ASSERT_TRUE(rf);
      const json rep = json::parse(rf);
      ASSERT_TRUE(rep.contains("lesson"));
      EXPECT_EQ(rep["lesson"]["step"], i + 1);
      EXPECT_EQ(rep["lesson"]["shown"], "step " + std::to_string(i + 1) + " of " + std::to_string(steps.size()));
      EXPECT_EQ(rep["lesson"]["title"], steps[i]["title"]);
      EXPECT_FALSE(rep["lesson"]["controls_taken"].get<bool>());
      // The honest-example line: whether the sentence is in the training text, and each claim with its threshold.
      const std::string note = rep["lesson"].value("note", "");
      if (steps[i].contains("in_corpus")) {
        EXPECT_EQ(note.rfind(steps[i]["in_corpus"].get<bool>() ? "In the training text" : "Not in the training text", 0), 0u) << note;
      }
      for (const json& c : steps[i].value("claims", json::array())) {
        char want[96];
        std::snprintf(want, sizeof want, "head %d.%d's %s score is at least %.2f", c["layer"].get<int>(), c["head"].get<int>(),
                      c["metric"] == "prev_token" ? "previous-token" : "induction", c["min"].get<double>());
        EXPECT_NE(note.find(want), std::string::npos) << note;
      }
      for (const json& a : steps[i].value("set", json::array())) expect_setting_shown(rep, a.get<std::string>());
      // A result of this state is on screen, or the message of an invalid pair with its fix.
      const bool invalid = std::find(rep["buttons"].begin(), rep["buttons"].end(), "Use nearest valid") != rep["buttons"].end();
      EXPECT_TRUE(invalid || !rep["stale"].get<bool>()) << "step shows an older result";
      EXPECT_TRUE(rep["clipped"].empty()) << rep["clipped"].dump(1);
      // 1024 px at 1.5x text: the lesson player is a column beside the views, the sentence and the passport tabs.
      EXPECT_EQ(rep["layout"], "tabs");
      EXPECT_GE(rep["lesson"]["panel"][0].get<double>(), rep["heads_panel"][2].get<double>()) << "the player beside the views";
      if (steps[i]["title"] == "The shape table") {  // chapter 004's table: batch 2, seq 10, d_model 512, 8 heads
        for (const char* row : {"x (2, 10, 512)", "q_view (2, 10, 8, 64)", "q_heads (2, 8, 10, 64)", "scores (2, 8, 10, 10)",
                                "ctx (2, 8, 10, 64)", "ctx_t (2, 10, 8, 64)", "concat (2, 10, 512)", "out (2, 10, 512)"})
          EXPECT_NE(std::find(rep["passport_rows"].begin(), rep["passport_rows"].end(), row), rep["passport_rows"].end()) << row;
      }
    }
  }
}

// The player's keys: PageDown / PageUp (a presenter's clicker) and, while a lesson is open,
// the arrows move between steps; the arrows no longer step the heads then. After the user
// takes the controls, the report says so, and Next restores the lesson's own state.
TEST(Gui, LessonKeysMoveBetweenStepsAndNextRestoresTheState) {
  const fs::path d = tmp_dir();
  const auto rep = [&](const char* n) { return "report=" + (d / (std::string("keys-") + n + ".json")).string(); };
  const AppRun r = run_app("lesson-keys", {"--lesson", "002", "--then", "press=PageDown", "--then", rep("a"), "--then", "press=PageDown",
                                           "--then", rep("b"), "--then", "press=PageUp", "--then", rep("c"), "--then", "press=Right",
                                           "--then", rep("d"), "--then", "heads=4", "--then", "wait", "--then", rep("e"), "--then",
                                           "press=Left", "--then", "press=Right", "--then", rep("f"), "--then", "lesson_step=6",
                                           "--then", "wait", "--then", "press=PageDown", "--then", rep("g")});
  ASSERT_EQ(r.status, 0) << r.err;
  auto read = [&](const char* n) {
    std::ifstream f(d / (std::string("keys-") + n + ".json"));
    return json::parse(f, nullptr, false);
  };
  EXPECT_EQ(read("a")["lesson"]["step"], 2);
  EXPECT_EQ(read("b")["lesson"]["step"], 3);
  EXPECT_EQ(read("c")["lesson"]["step"], 2);
  const json dd = read("d");
  EXPECT_EQ(dd["lesson"]["step"], 3);
  EXPECT_EQ(dd["state"]["head"], 0) << "the arrow moved the lesson, not the head";
  EXPECT_EQ(dd["config"]["num_heads"], 3);  // step 3: d_model 24, 3 heads
  const json e = read("e");
  EXPECT_EQ(e["config"]["num_heads"], 4);
  EXPECT_TRUE(e["lesson"]["controls_taken"].get<bool>());
  const json f = read("f");
  EXPECT_EQ(f["lesson"]["step"], 3);
  EXPECT_EQ(f["config"]["num_heads"], 3) << "Next restores the lesson's state";
  EXPECT_FALSE(f["lesson"]["controls_taken"].get<bool>());
  // Step 6 -> 7 moves only num_heads (24 -> 6 at d_model 24): the slider steps through 12 and
  // 8 on the way, so the last change the passport lit up is 8 -> 6.
  const json g = read("g");
  EXPECT_EQ(g["lesson"]["step"], 7);
  EXPECT_EQ(g["config"]["num_heads"], 6);
  EXPECT_EQ(g["state"]["last_change"], "num_heads 8 \xE2\x86\x92 6");
  EXPECT_FALSE(g["lesson"]["controls_taken"].get<bool>());
}

// File > Export lesson as PNGs: the window, captured at each step, into a directory; the
// player returns to the step it was on. A bad lesson name is a message and, scripted, exit 1
// (as a bad view file is).
TEST(Gui, ExportLessonCapturesEveryStepAndABadLessonIsAMessage) {
  const fs::path dir = tmp_dir() / "lesson-window-slides";
  fs::remove_all(dir);
  const AppRun r = run_app("lesson-export", {"--size", "1024x768", "--lesson", "004", "--then", "lesson_step=3", "--then", "export_lesson=" + dir.string(),
                                             "--then", "wait"});
  ASSERT_EQ(r.status, 0) << r.err;
  for (int i = 1; i <= 4; ++i) {
    const Image im = load_png(dir / ("004-0" + std::to_string(i) + ".png"));
    EXPECT_EQ(im.w, 1024) << i;
    EXPECT_EQ(im.h, 768) << i;
  }
  EXPECT_EQ(r.report["lesson"]["step"], 3);
  EXPECT_NE(std::find(r.report["messages"].begin(), r.report["messages"].end(), "Wrote 4 slides to " + dir.string()), r.report["messages"].end())
      << r.report["messages"];
  const AppRun bad = run_app("lesson-bad", {"--lesson", "042"});
  EXPECT_EQ(bad.status, 1);
  EXPECT_NE(bad.err.find("No lesson \"042\": the lessons are 000, 001, 002, 003, 004"), std::string::npos) << bad.err;
}

// What heads contribute (issue 28), through the real widgets: a click on a Next-token entry
// shows the layers x heads attribution of its logit, complete (the parts sum to the logit
// less the centring term), with the shipped default's induction head 1.1 ranked first for
// the copy of "green"; a click on that cell opens head 1.1 in Focus at the position.
TEST(Gui, ClickingAPredictionAttributesItToEveryHead) {
  const std::string text = "My aunt keeps three green parrots in the kitchen. My aunt keeps three";
  const AppRun r = run_app("contrib", {"--then", "text=" + text, "--then", "wait", "--input",
                                       "click next \xC2\xB7green; wait; frames 3; expect attribution 1.1; click attribution 1.1; wait; frames 3"});
  ASSERT_EQ(r.status, 0) << r.err;
  bool complete = false;
  for (const auto& m : r.report["messages"]) complete |= m.get<std::string>().find(": complete (error") != std::string::npos;
  EXPECT_TRUE(complete) << r.report["messages"].dump();
  EXPECT_EQ(r.report["view"]["layer"], 1);
  EXPECT_EQ(r.report["view"]["head"], 1);
  EXPECT_EQ(r.report["view"]["selected_token"], 20);
  EXPECT_EQ(r.report.value("panel", std::string()), "focus");
}

// View > Value-weighted maps (issue 28): the maps become each row's value-weighted share
// alpha_ij ||f(x_j)|| / sum_k alpha_ik ||f(x_k)||, so the heads' entropies in their titles
// change; the menu item shows its check mark; a second click brings attention back.
TEST(Gui, ValueWeightedMapsReplaceTheWeights) {
  const std::string text = "My aunt keeps three green parrots in the kitchen. My aunt keeps three green parrots in the kitchen.";
  const AppRun plain = run_app("vw-off", {"--then", "text=" + text, "--then", "wait"});
  const AppRun vw = run_app("vw-on", {"--then", "text=" + text, "--then", "wait", "--input", "click View; click Value-weighted maps; wait; frames 3"});
  const AppRun back = run_app("vw-back", {"--then", "text=" + text, "--then", "wait", "--input",
                                          "click View; click Value-weighted maps; wait; click View; click Value-weighted maps; wait; frames 3"});
  ASSERT_EQ(plain.status, 0) << plain.err;
  ASSERT_EQ(vw.status, 0) << vw.err;
  ASSERT_EQ(back.status, 0) << back.err;
  ASSERT_EQ(vw.report["head_titles"].size(), 4u);
  EXPECT_NE(vw.report["head_titles"], plain.report["head_titles"]);
  EXPECT_EQ(back.report["head_titles"], plain.report["head_titles"]);
  EXPECT_TRUE(vw.report["clipped"].empty()) << vw.report["clipped"].dump();
}

// ---- the Contributions tab (issue 28): rollout, patching, detectors --------------------
namespace {
const char* kSaidTwice = "My aunt keeps three green parrots in the kitchen. My aunt keeps three green parrots in the kitchen.";
// The clean run copies "green" (head 1.1 reads 0.0's previous-token output, K-composition);
// the corrupted one breaks the match ("four" where "three" was), so its prediction differs.
const char* kClean = "My aunt keeps three green parrots in the kitchen. My aunt keeps three";
const char* kCorrupted = "My aunt keeps four green parrots in the kitchen. My aunt keeps three";

}  // namespace

// The same on a post-norm encoder (issue 28): a click on a [MASK]'s filler shows its logit
// attributed to every head through the frozen LayerNorms, complete, with each layer's betas and
// the masked-LM head's biases named; Patching measures at the [MASK] by default.
TEST(Gui, ABertMaskFillerIsAttributedAndPatchedAtTheMask) {
  const fs::path dir = tmp_dir() / "encoders" / "bert_pretraining";
  const std::string make = std::string("/usr/bin/python3 '") + HEADMAP_MAKE_ENCODER + "' '" + dir.string() + "' --variant bert_pretraining > /dev/null 2>&1";
  if (std::system(make.c_str()) != 0) GTEST_SKIP() << "numpy is missing: the tiny BERT directory cannot be written";
  const std::string text = "text=the cat sat on the [MASK] . the dog ran";
  const AppRun a = run_app("bert-attribution", {"--model", dir.string(), "--then", text, "--then", "wait", "--input",
                                                "click filler is; wait; frames 3; expect attribution 1.3"});
  ASSERT_EQ(a.status, 0) << a.err;
  bool complete = false;
  for (const auto& m : a.report["messages"]) complete |= m.get<std::string>().find(": complete (error") != std::string::npos;
  EXPECT_TRUE(complete) << a.report["messages"].dump();
  const AppRun p = run_app("bert-patching", {"--model", dir.string(), "--then", text, "--then", "panel=contrib", "--then", "contrib_view=patching",
                                             "--then", "corrupted=the dog sat on the [MASK] . the dog ran", "--then", "wait", "--input", "wait; frames 3"});
  ASSERT_EQ(p.status, 0) << p.err;
  const std::string target = p.report["contrib"].value("patch_target", std::string());
  EXPECT_NE(target.find("at \"[MASK]\" (position 6)"), std::string::npos) << target;
  EXPECT_EQ(p.report["contrib"]["patch_recovery"].size(), 8u) << p.report["contrib"].dump();
  // Without a masked-LM head there is no logit: the view says so.
  const fs::path headless = tmp_dir() / "encoders" / "bert_model_gamma";
  const std::string make2 = std::string("/usr/bin/python3 '") + HEADMAP_MAKE_ENCODER + "' '" + headless.string() + "' --variant bert_model_gamma > /dev/null 2>&1";
  ASSERT_EQ(std::system(make2.c_str()), 0);
  const AppRun n = run_app("bert-no-head-patching", {"--model", headless.string(), "--then", text, "--then", "panel=contrib", "--then",
                                                     "contrib_view=patching", "--then", "corrupted=the dog sat on the [MASK] . the dog ran",
                                                     "--then", "wait", "--input", "wait; frames 3"});
  ASSERT_EQ(n.status, 0) << n.err;
  EXPECT_TRUE(has_message(n.report, "no masked-LM head")) << n.report["messages"].dump();
}

// Rollout as a view of its own: the Contributions tab's Rollout shows a (T, T) map whose rows
// sum to 1 (the view reports its largest error), with the same numbered token axes as the
// heads' maps; the heads combo switches to one head of the last layer; Export writes a figure.
TEST(Gui, RolloutIsAViewOfItsOwnAndExports) {
  const fs::path dir = fresh_dir("rollout-export");
  const AppRun r = run_app("rollout", {"--then", std::string("text=") + kSaidTwice, "--then", "wait", "--input",
                                       "click Contributions; click Rollout; wait; frames 3; expect rollout map; click rollout heads; "
                                       "click last layer's head 1; wait; frames 3; click Export rollout...; expect Path; key ctrl+a; type " +
                                           (dir / "rollout.svg").string() + "; click OK; absent Path; wait; frames 3"});
  ASSERT_EQ(r.status, 0) << r.err;
  const json& c = r.report["contrib"];
  EXPECT_EQ(c["view"], "rollout");
  ASSERT_EQ(c["rollout_map"].size(), 1u);
  EXPECT_GT(c["rollout_map"][0][2].get<double>() - c["rollout_map"][0][0].get<double>(), 200.0);
  EXPECT_GE(c["rollout_row_error"].get<double>(), 0.0);
  EXPECT_LT(c["rollout_row_error"].get<double>(), 1e-5);
  EXPECT_NE(c["rollout_title"].get<std::string>().find("head 1 of the last layer"), std::string::npos) << c["rollout_title"];
  EXPECT_NE(c["rollout_title"].get<std::string>().find("30 tokens"), std::string::npos) << c["rollout_title"];
  std::ifstream svg(dir / "rollout.svg");
  ASSERT_TRUE(svg) << r.report["messages"].dump();
  const std::string text((std::istreambuf_iterator<char>(svg)), {});
  EXPECT_NE(text.find("Attention rollout, head 1 of the last layer"), std::string::npos);
  EXPECT_NE(text.find("green"), std::string::npos);  // the tokens label the axes
  EXPECT_TRUE(r.report["clipped"].empty()) << r.report["clipped"].dump();
}

// Activation patching in the app, on the shipped default: the corrupted sentence typed in
// its box, the default difference (the last position, clean top "green" against the
// corrupted top), every head patched on the worker. Head 1.1 (induction) and 0.0 (the
// previous-token head it reads) recover the difference, no other head does; a click on
// 0.0 patches it one position at a time, and only "green" (after "three") matters; a click
// on that position opens 0.0 in Focus there. A corrupted sentence of another token count
// is said in the window.
TEST(Gui, PatchingFindsTheInductionCircuit) {
  const AppRun r = run_app("patching", {"--then", std::string("text=") + kClean, "--then", "wait", "--input",
                                        std::string("click Contributions; click Patching; click corrupted sentence; type ") + kCorrupted +
                                            "; wait; frames 3; expect patch 1.1; click patch 0.0; wait; frames 3; expect position 0.6"});
  ASSERT_EQ(r.status, 0) << r.err;
  const json& c = r.report["contrib"];
  EXPECT_NE(c["patch_target"].get<std::string>().find("logit(\xC2\xB7green)"), std::string::npos) << c["patch_target"];
  EXPECT_NE(c["patch_target"].get<std::string>().find("(position 20)"), std::string::npos) << c["patch_target"];
  const json& rec = c["patch_recovery"];
  ASSERT_EQ(rec.size(), 8u) << c.dump();
  for (int i = 0; i < 8; ++i) {
    if (i == 0 || i == 5) EXPECT_GT(rec[i].get<double>(), 0.9) << i;  // 0.0 and 1.1
    else EXPECT_LT(std::abs(rec[i].get<double>()), 0.2) << i;
  }
  const json& pos = c["patch_per_position"];
  ASSERT_EQ(pos.size(), 21u);
  int best = 0;
  for (int t = 0; t < 21; ++t)
    if (pos[t].get<double>() > pos[best].get<double>()) best = t;
  EXPECT_EQ(best, 6);  // "green", whose previous token is "three"
  EXPECT_GT(pos[6].get<double>(), 0.9);

  const AppRun focus = run_app("patching-focus", {"--then", std::string("text=") + kClean, "--then", std::string("corrupted=") + kCorrupted,
                                                  "--then", "contrib_view=patching", "--then", "wait", "--input",
                                                  "click patch 0.0; wait; frames 3; click position 0.6; wait; frames 3"});
  ASSERT_EQ(focus.status, 0) << focus.err;
  EXPECT_EQ(focus.report.value("panel", std::string()), "focus");
  EXPECT_EQ(focus.report["view"]["layer"], 0);
  EXPECT_EQ(focus.report["view"]["head"], 0);
  EXPECT_EQ(focus.report["view"]["selected_token"], 6);

  const AppRun counts = run_app("patching-counts", {"--then", std::string("text=") + kClean, "--then", "wait", "--input",
                                                    "click Contributions; click Patching; click corrupted sentence; type My uncle keeps four; wait; frames 3"});
  ASSERT_EQ(counts.status, 0) << counts.err;
  EXPECT_TRUE(has_message(counts.report, "The clean sentence has 21 tokens and the corrupted one 6")) << counts.report["messages"].dump();
  EXPECT_TRUE(counts.report["contrib"]["patch_recovery"].empty());
}

// Head detectors as scores: on a sentence said twice, previous-token singles out 0.0 and
// induction 1.1; heads at or above the threshold are outlined in the heads grid. A pattern
// painted with the mouse, cell by cell, on the (T, T) canvas (here the previous-token
// diagonal) scores every head exactly as the built-in pattern does; and "start from
// induction" gives the induction scores.
TEST(Gui, DetectorsScoreHeadsAndAPaintedPattern) {
  const std::string text = std::string("text=") + kSaidTwice;
  const AppRun prev = run_app("detectors", {"--then", text, "--then", "wait", "--input",
                                            "click Contributions; click Detectors; wait; frames 3; expect detector 1.1; click Heads; wait; frames 3"});
  ASSERT_EQ(prev.status, 0) << prev.err;
  const json scores = prev.report["contrib"]["detector_scores"];
  ASSERT_EQ(scores.size(), 0u);  // the Heads tab does not show the scores: it marks the heads
  EXPECT_EQ(prev.report["contrib"]["detector_marked"], json::array({"0.0"})) << prev.report["contrib"].dump();

  std::string paint = "click Contributions; click Detectors; wait; click detector; click previous token; wait; frames 3; "
                      "click detector; click painted pattern; frames 3; click Clear; frames 2; ";
  for (int t = 1; t < 30; ++t) paint += "click paint " + std::to_string(t) + "," + std::to_string(t - 1) + "; ";
  paint += "wait; frames 3";
  const AppRun painted = run_app("detectors-painted", {"--then", text, "--then", "wait", "--input", paint});
  ASSERT_EQ(painted.status, 0) << painted.err;
  const json& c = painted.report["contrib"];
  EXPECT_EQ(c["detector"], "painted");
  EXPECT_EQ(c["painted_cells"], 29);
  const AppRun builtin = run_app("detectors-prev", {"--then", text, "--then", "contrib_view=detectors", "--then", "wait", "--input", "frames 3"});
  ASSERT_EQ(builtin.status, 0) << builtin.err;
  const json& p = builtin.report["contrib"]["detector_scores"];
  ASSERT_EQ(p.size(), 8u);
  ASSERT_EQ(c["detector_scores"].size(), 8u);
  for (int i = 0; i < 8; ++i) EXPECT_NEAR(c["detector_scores"][i].get<double>(), p[i].get<double>(), 1e-6) << i;
  int best = 0;
  for (int i = 0; i < 8; ++i)
    if (p[i].get<double>() > p[best].get<double>()) best = i;
  EXPECT_EQ(best, 0);  // 0.0, the previous-token head

  const AppRun ind = run_app("detectors-ind", {"--then", text, "--then", "contrib_view=detectors", "--then", "detector=painted", "--then", "wait",
                                               "--input", "click start from induction; wait; frames 3"});
  ASSERT_EQ(ind.status, 0) << ind.err;
  const json& s = ind.report["contrib"]["detector_scores"];
  ASSERT_EQ(s.size(), 8u);
  best = 0;
  for (int i = 0; i < 8; ++i)
    if (s[i].get<double>() > s[best].get<double>()) best = i;
  EXPECT_EQ(best, 5);  // 1.1, the induction head
  EXPECT_GT(s[5].get<double>(), 0.25);
}

// Compare with any two models (issue 28): B chosen in the tab as A's model with another
// num_heads (H = 4 against H = 8 on the shipped default), a shipped checkpoint, or a
// checkpoint file typed and read; both drawn on one colour scale with the entropy change.
// A file that is not a checkpoint is a message in the window, and A stays.
TEST(Gui, CompareAnyTwoModels) {
  const std::string text = std::string("text=") + kSaidTwice;
  const AppRun heads = run_app("compare-heads", {"--then", text, "--then", "wait", "--input",
                                                 "click Compare; click compare b; click A's model with another num_heads; wait; frames 3"});
  ASSERT_EQ(heads.status, 0) << heads.err;
  EXPECT_EQ(heads.report["compare"]["heads_a"], 4);
  EXPECT_EQ(heads.report["compare"]["heads_b"], 8);
  EXPECT_NE(heads.report["compare"]["b"].get<std::string>().find("num_heads 8"), std::string::npos) << heads.report["compare"].dump();
  EXPECT_TRUE(has_message(heads.report, "Mean entropy of layer 0: A ")) << heads.report["messages"].dump();
  EXPECT_EQ(heads.report["compare_heatmaps"].size(), 12u);
  EXPECT_TRUE(heads.report["clipped"].empty()) << heads.report["clipped"].dump();

  const AppRun shipped = run_app("compare-shipped", {"--then", text, "--then", "wait", "--input",
                                                     "click Compare; click compare b; click shipped d128-h1-l2; wait; frames 3"});
  ASSERT_EQ(shipped.status, 0) << shipped.err;
  EXPECT_EQ(shipped.report["compare"]["heads_b"], 1);
  EXPECT_NE(shipped.report["compare"]["b"].get<std::string>().find("d128-h1-l2"), std::string::npos) << shipped.report["compare"].dump();

  const std::string file = std::string(HEADMAP_ASSETS) + "/checkpoints/d128-h2-l2.safetensors";
  const AppRun read = run_app("compare-file", {"--then", text, "--then", "wait", "--input",
                                               "click Compare; click compare b; click a model directory or file; click B path; type " + file +
                                                   "; click Read; wait; frames 3"});
  ASSERT_EQ(read.status, 0) << read.err;
  EXPECT_EQ(read.report["compare"]["heads_b"], 2);
  EXPECT_NE(read.report["compare"]["b"].get<std::string>().find("d128-h2-l2.safetensors"), std::string::npos) << read.report["compare"].dump();

  const AppRun bad = run_app("compare-bad", {"--then", text, "--then", "wait", "--input",
                                             "click Compare; click compare b; click a model directory or file; click B path; type /nonexistent/x.safetensors; "
                                             "click Read; wait; frames 3"});
  ASSERT_EQ(bad.status, 0) << bad.err;
  EXPECT_EQ(bad.report["compare"]["heads_b"], 0);
  EXPECT_EQ(bad.report["compare"]["heads_a"], 0);
  EXPECT_TRUE(has_message(bad.report, "/nonexistent/x.safetensors")) << bad.report["messages"].dump();
}

// One dispatcher opens a path (open_model_path, core/io/hf_model.h), for headmap-cli and the
// app alike, whichever option names it: --model and --checkpoint, and File > Open model. A
// family directory, a file of it, a GPT-2 directory and a shipped checkpoint each open;
// every refusal names what it saw and what to do, in the window and on the terminal, with
// the words headmap-cli prints. (The tiny models are written by tests/reference/make_*_dir.py,
// which need numpy: skipped without it.)
TEST(Gui, EveryKindOfPathOpensThroughTheOneDispatcher) {
  const fs::path ref = fs::path(HEADMAP_MAKE_GPT2).parent_path();
  const fs::path llama = tmp_dir() / "disp-llama", gpt2 = tmp_dir() / "disp-gpt2";
  fs::remove_all(llama);
  const std::string make = "/usr/bin/python3 '" + (ref / "make_family_dir.py").string() + "' '" + llama.string() + "' --variant llama > /dev/null 2>&1 && " +
                           "/usr/bin/python3 '" + (ref / "make_gpt2_dir.py").string() + "' '" + gpt2.string() +
                           "' --d 32 --heads 2 --layers 1 --positions 32 > /dev/null 2>&1";
  if (std::system(make.c_str()) != 0) GTEST_SKIP() << "numpy is missing: the tiny model directories cannot be written";
  const std::string shipped = std::string(HEADMAP_ASSETS) + "/checkpoints/d128-h2-l2.safetensors";
  // Opens: (option, path, the start of the source line).
  const std::vector<std::tuple<std::string, std::string, std::string>> opens = {
      {"--model", llama.string(), "Llama from " + llama.string() + ": D=48, H=4 (2 K/V)"},
      {"--checkpoint", llama.string(), "Llama from " + llama.string() + ": D=48, H=4 (2 K/V)"},
      {"--model", (llama / "model.safetensors").string(), "Llama from " + llama.string() + ": D=48"},
      {"--model", gpt2.string(), "disp-gpt2 from "},
      {"--model", shipped, "trained (D=128, H=2, L=2, "},
      {"--checkpoint", shipped, "trained (D=128, H=2, L=2, "}};
  int n = 0;
  for (const auto& [opt, path, source] : opens) {
    SCOPED_TRACE(opt + " " + path);
    const std::string name = "disp-open-" + std::to_string(n++);
    const CliRun cli = run_cli(name, {opt, path, "--text", "the cat"});
    EXPECT_EQ(cli.status, 0) << cli.err;
    EXPECT_NE(cli.out.find("weights: " + source), std::string::npos) << cli.out;
    const AppRun app = run_app(name, {opt, path});
    ASSERT_EQ(app.status, 0) << app.err;
    EXPECT_EQ(app.report["weights_source"].get<std::string>().rfind(source, 0), 0u) << app.report["weights_source"];
  }
  // File > Open model on a checkpoint file: the same dispatcher, off the UI thread.
  const AppRun menu = run_app("disp-open-menu", {"--then", "open_model=" + (llama / "config.json").string()});
  ASSERT_EQ(menu.status, 0) << menu.err;
  EXPECT_EQ(menu.report["weights_source"].get<std::string>().rfind("Llama from " + llama.string(), 0), 0u) << menu.report["weights_source"];

  // A model over the memory budget is refused before anything is allocated, with its real
  // sizes from its Arch (GQA, d_head, gated MLP, untied lm_head, the bytes a weight is held in).
  {
    ::setenv("HEADMAP_MEMORY_BUDGET", "64K", 1);
    const CliRun cli = run_cli("disp-budget", {"--model", llama.string()});
    ::unsetenv("HEADMAP_MEMORY_BUDGET");
    EXPECT_EQ(cli.status, 2) << cli.err;  // the user's to fix
    const std::string said = cli.err.substr(std::min<size_t>(13, cli.err.size()), cli.err.find('\n') - 13);
    for (const char* w : {"Llama: D=48, L=3, 4 heads (2 K/V) of 12, MLP 80 (gated), vocabulary ", ", untied, held as 4 bytes a weight, stored F32)",
                          "more than the memory budget of "})
      EXPECT_NE(said.find(w), std::string::npos) << "\"" << w << "\" in: " << said;
    const AppRun app = run_app("disp-budget", {"--model", llama.string(), "--deadline", "30"}, true, {}, {{"HEADMAP_MEMORY_BUDGET", "64K"}});
    EXPECT_EQ(app.status, 1) << app.err;
    EXPECT_TRUE(contains(app.report["messages"], said)) << said << "\n" << app.report["messages"];
  }

  // Refusals: each a directory made from the llama one with one fault.
  auto variant = [&](const std::string& name, const std::function<void(const fs::path&)>& fault) {
    const fs::path d = tmp_dir() / name;
    fs::remove_all(d);
    fs::create_directories(d);
    for (const auto& e : fs::directory_iterator(llama)) fs::copy_file(e.path(), d / e.path().filename());
    fault(d);
    return d;
  };
  auto set_config = [](const fs::path& d, const std::function<void(json&)>& edit) {
    json c = json::parse(std::ifstream(d / "config.json"));
    edit(c);
    std::ofstream(d / "config.json") << c.dump();
  };
  const fs::path falcon = variant("disp-falcon", [&](const fs::path& d) { set_config(d, [](json& c) { c["model_type"] = "falcon"; }); });
  const fs::path vision = variant("disp-vision", [&](const fs::path& d) { set_config(d, [](json& c) { c["vision_config"] = json::object(); }); });
  const fs::path no_tok = variant("disp-no-tokenizer", [](const fs::path& d) { fs::remove(d / "tokenizer.json"); });
  const fs::path no_cfg = variant("disp-no-config", [](const fs::path& d) { fs::remove(d / "config.json"); });
  // (path, words the message must hold)
  const std::vector<std::pair<fs::path, std::vector<std::string>>> refusals = {
      {falcon, {"this is a falcon model", "gpt2, llama, mistral, qwen2, qwen3, gemma, gemma2, gemma3_text, gpt_neox, gpt_neo"}},
      {vision, {"multimodal", "vision tower", "text model instead"}},
      {no_tok, {"has no tokenizer.json", "download it with the model"}},
      {no_cfg, {"has no config.json", "the directory holds model.safetensors, tokenizer.json", "headmap opens a Hugging Face model directory"}},
      {tmp_dir() / "disp-absent", {"does not exist", "checkpoint file written by headmap-cli train"}}};
  for (const auto& [path, words] : refusals)
    for (const char* opt : {"--model", "--checkpoint"}) {
      SCOPED_TRACE(std::string(opt) + " " + path.string());
      const std::string name = "disp-refuse-" + std::to_string(n++);
      const CliRun cli = run_cli(name, {opt, path.string()});
      EXPECT_EQ(cli.status, 1) << cli.err;
      ASSERT_EQ(cli.err.rfind("headmap-cli: ", 0), 0u) << cli.err;
      std::string said = cli.err.substr(13);
      while (!said.empty() && said.back() == '\n') said.pop_back();
      for (const std::string& w : words) EXPECT_NE(said.find(w), std::string::npos) << "\"" << w << "\" in: " << said;
      if ((n % 2 == 0) != (std::string(opt) == "--model")) continue;  // the app once per path, the options taking turns (both go one way)
      const AppRun app = run_app(name, {opt, path.string(), "--deadline", "30"});
      EXPECT_EQ(app.status, 1) << app.err;
      ASSERT_TRUE(app.report.is_object()) << app.err;
      EXPECT_TRUE(contains(app.report["messages"], said)) << said << "\n" << app.report["messages"];
      EXPECT_EQ(app.report["weights_source"].get<std::string>().rfind("trained (D=128, H=4, L=2, ", 0), 0u) << "the shipped default stays";
    }
}

// A view file saved on a family model (--model DIR) reopens on the same model with the same
// state: source line, config (fixed H and K/V heads), selection, ablation, tokens and loss.
TEST(Gui, ViewFilesSaveAndReopenOnAFamilyModel) {
  const fs::path ref = fs::path(HEADMAP_MAKE_GPT2).parent_path(), llama = tmp_dir() / "view-llama", view = tmp_dir() / "family-view.json";
  fs::remove_all(llama);
  fs::remove(view);
  const std::string make = "/usr/bin/python3 '" + (ref / "make_family_dir.py").string() + "' '" + llama.string() + "' --variant llama > /dev/null 2>&1";
  if (std::system(make.c_str()) != 0) GTEST_SKIP() << "numpy is missing: the tiny model directory cannot be written";
  const AppRun saved = run_app("family-view-save", {"--model", llama.string(), "--text", "the cat sat on the mat", "--then", "layer=2", "--then",
                                                    "head=3", "--then", "ablate=1,2", "--then", "save_view=" + view.string()});
  ASSERT_EQ(saved.status, 0) << saved.err;
  ASSERT_TRUE(fs::exists(view)) << saved.err;
  // The view names the model's path: it is shown and asked about, and read only on Open (issue 35).
  const AppRun asked = run_app("family-view-ask", {"--open", view.string()});
  ASSERT_EQ(asked.status, 0) << asked.err;
  EXPECT_NE(asked.report["weights_source"].get<std::string>().rfind("Llama", 0), 0u) << "opened without asking";
  EXPECT_NE(asked.report["messages"].dump().find(llama.string()), std::string::npos) << asked.report["messages"];
  const AppRun opened = run_app("family-view-open", {"--open", view.string(), "--input", "click Open model; wait"});
  ASSERT_EQ(opened.status, 0) << opened.err;
  EXPECT_EQ(opened.report["weights_source"].get<std::string>().rfind("Llama from " + llama.string() + ": D=48, H=4 (2 K/V)", 0), 0u)
      << opened.report["weights_source"];
  for (const char* k : {"weights_source", "config", "tokens", "ablated_heads", "view", "heatmaps_drawn", "loss_on_text"})
    EXPECT_EQ(opened.report[k], saved.report[k]) << k;
}

// headmap-cli --png and --svg take the app's A/B filter and "hide specials" (--pair-filter,
// --hide-specials, in --help): the SVG's cells outside the filter are the unfiltered cells
// dimmed toward kFilteredRgb (the app's rule, cell_filter), those inside unchanged; every
// pixel of the PNG is its unfiltered self or that self dimmed. Without a pair, the A/B
// filter is a note, not a silent no-op.
TEST(Gui, CliPngAndSvgTakeTheAppsPairFilter) {
  const fs::path dir = tmp_dir() / "encoders-cli" / "bert_pretraining";
  const std::string make = std::string("/usr/bin/python3 '") + HEADMAP_MAKE_ENCODER + "' '" + dir.string() +
                           "' --variant bert_pretraining > /dev/null 2>&1";
  if (std::system(make.c_str()) != 0) GTEST_SKIP() << "numpy is missing: the tiny BERT directory cannot be written";
  const CliRun help = run_cli("cli-filter-help", {"--help"});
  EXPECT_NE(help.out.find("--pair-filter"), std::string::npos);
  EXPECT_NE(help.out.find("--hide-specials"), std::string::npos);
  const std::vector<std::string> pair = {"--model", dir.string(), "--text", "The cat sat on the [MASK].", "--pair", "it was tired"};
  auto draw = [&](const std::string& name, std::vector<std::string> more) {
    std::vector<std::string> a = pair;
    a.insert(a.end(), more.begin(), more.end());
    a.insert(a.end(), {"--png", (tmp_dir() / (name + ".png")).string(), "--svg", (tmp_dir() / (name + ".svg")).string()});
    const CliRun r = run_cli(name, a);
    EXPECT_EQ(r.status, 0) << r.err;
    std::ifstream f(tmp_dir() / (name + ".svg"));
    return std::string((std::istreambuf_iterator<char>(f)), {});
  };
  // The first map's cells, row by row, as the SVG's fills.
  auto cells = [](const std::string& svg) {
    std::vector<std::array<int, 3>> c;
    size_t p = svg.find("<g class=\"cells\">");
    const size_t end = svg.find("</g>", p);
    while (p != std::string::npos && (p = svg.find("fill=\"#", p)) != std::string::npos && p < end) {
      const unsigned v = std::stoul(svg.substr(p + 7, 6), nullptr, 16);
      c.push_back({static_cast<int>(v >> 16), static_cast<int>((v >> 8) & 255), static_cast<int>(v & 255)});
      p += 7;
    }
    return c;
  };
  const int len = 13;  // [CLS] the cat sat on the [MASK] . [SEP] | it was tired [SEP]
  const std::string base = draw("cli-all", {});
  struct Case {
    const char* name;
    std::vector<std::string> args;
    std::function<bool(int, int)> dims;
  };
  const Case cases[] = {
      {"cli-ab", {"--pair-filter", "ab"}, [](int t, int s) { return !(t <= 8 && s >= 9); }},  // A = tokens 0-8, B = 9-12
      {"cli-ba", {"--pair-filter", "ba"}, [](int t, int s) { return !(t >= 9 && s <= 8); }},
      {"cli-specials", {"--hide-specials"}, [](int t, int s) { return t == 0 || t == 8 || t == 12 || s == 0 || s == 8 || s == 12; }},
  };
  const auto c0 = cells(base);
  ASSERT_EQ(c0.size(), static_cast<size_t>(len * len)) << "the first map's cells";
  EXPECT_EQ(base.find("grey: masked"), std::string::npos) << "an encoder's maps have no masked cells: the caption says none";
  const Image png0 = load_png(tmp_dir() / "cli-all.png");
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const std::string svg = draw(c.name, c.args);
    EXPECT_NE(svg.find("rows not renormalised"), std::string::npos) << "the caption says the cells are dimmed";
    const auto c1 = cells(svg);
    ASSERT_EQ(c1.size(), c0.size());
    int dimmed = 0;
    for (int t = 0; t < len; ++t)
      for (int s = 0; s < len; ++s) {
        const bool d = c.dims(t, s);
        const auto& a = c0[static_cast<size_t>(t) * len + s];
        const auto& b = c1[static_cast<size_t>(t) * len + s];
        for (int k = 0; k < 3; ++k) {
          const float want = d ? a[k] + (headmap::kFilteredRgb[k] * 255 - a[k]) * headmap::kFilterDim : a[k];
          EXPECT_NEAR(b[k], want, 1.5) << "query " << t << ", key " << s << (d ? " (dimmed)" : " (shown)");
        }
        dimmed += d;
      }
    EXPECT_GT(dimmed, 0);
    // The PNG: the same picture, some pixels dimmed, none otherwise changed.
    const Image png = load_png(tmp_dir() / (std::string(c.name) + ".png"));
    ASSERT_EQ(png.w, png0.w);
    ASSERT_EQ(png.h, png0.h);
    int changed = 0, odd = 0;
    const int legend_top = png.h - 46;  // the legend's caption says more when filtered
    for (int y = 0; y < legend_top; ++y)
      for (int x = 0; x < png.w; ++x) {
        const auto a = png0.at(x, y), b = png.at(x, y);
        if (a == b) continue;
        ++changed;
        for (int k = 0; k < 3; ++k)
          if (std::abs(b[k] - (a[k] + (headmap::kFilteredRgb[k] * 255 - a[k]) * headmap::kFilterDim)) > 1.5) {
            ++odd;
            break;
          }
      }
    EXPECT_GT(changed, 1000) << "the PNG's filtered cells are dimmed";
    EXPECT_EQ(odd, 0) << "every changed pixel is its unfiltered colour dimmed";
  }
  // One sentence, no pair: the A/B filter cannot apply, and says so.
  const CliRun single = run_cli("cli-single", {"--model", dir.string(), "--text", "The cat sat.", "--pair-filter", "ab", "--png",
                                               (tmp_dir() / "cli-single.png").string()});
  EXPECT_EQ(single.status, 0) << single.err;
  EXPECT_NE(single.err.find("needs a sentence pair"), std::string::npos) << single.err;
  EXPECT_NE(run_cli("cli-bad-filter", {"--pair-filter", "ac"}).status, 0);
}

// A lesson on a projector (1024x768, text at 1.5): the player stands in a column beside the
// views, full height, and the sentence becomes a tab, so each of the four heads is a map a
// room can read (on main they were 114 px squares under a strip of text): at least 220 px
// wide and 180 px tall, with their token labels, inside the views and clear of the player.
// The step's view (heads) is the tab shown, not the Input tab.
TEST(SmallScreen, ALessonGivesTheMapsTheRoom) {
  const char* screen = std::getenv("HEADMAP_TEST_SMALL_SCREEN");
  if (!screen) GTEST_SKIP() << "runs under a 1024x768 Xvfb screen (ctest: gui_small_screen)";
  const AppRun r = run_app("lesson-projector", {"--lesson", "000", "--font-scale", "1.5"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.report["lesson"]["shown"], "step 1 of 9");
  EXPECT_EQ(r.report["panel"], "heads") << "the step's view, not the Input tab";
  ASSERT_EQ(r.report["heatmaps"].size(), 4u);
  const json& lp = r.report["lesson"]["panel"];
  const json& hp = r.report["heads_panel"];
  for (const json& m : r.report["heatmaps"]) {
    const double x0 = m[0], y0 = m[1], x1 = m[2], y1 = m[3];
    EXPECT_GE(x1 - x0, 220.0) << m;
    EXPECT_GE(y1 - y0, 180.0) << m;
    EXPECT_TRUE(x1 <= lp[0].get<double>() || y1 <= lp[1].get<double>()) << "a map under the lesson player: " << m << " " << lp;
    EXPECT_TRUE(x0 >= hp[0].get<double>() && x1 <= hp[2].get<double>() && y1 <= hp[3].get<double>()) << m << " outside " << hp;
  }
  EXPECT_FALSE(r.report["token_labels"].empty()) << "the maps keep their token labels";
  EXPECT_TRUE(r.report["clipped"].empty()) << r.report["clipped"].dump(1);
  // The player's buttons wrap in the narrow column: every one is whole on screen.
  const AppRun next = run_app("lesson-projector-2", {"--lesson", "000", "--font-scale", "1.5", "--then", "lesson_step=2"});
  ASSERT_EQ(next.status, 0) << next.err;
  EXPECT_EQ(next.report["panel"], "passport") << "step 2's view";
  EXPECT_TRUE(next.report["clipped"].empty()) << next.report["clipped"].dump(1);
}

// headmap-cli --png's legend states only what the maps have: an encoder's (bidirectional)
// maps have no masked grey and no first causal row left out of the scale; a causal model's do.
TEST(Gui, HeadsPngCaptionSaysOnlyWhatTheMapsHave) {
  const std::string enc = headmap::heads_png_caption(headmap::MaskKind::PaddingOnly, 0, true);
  EXPECT_EQ(enc.find("causal"), std::string::npos) << enc;
  EXPECT_EQ(enc.find("grey"), std::string::npos) << enc;
  EXPECT_NE(enc.find("dimmed = filtered out"), std::string::npos) << enc;
  const std::string gpt = headmap::heads_png_caption(headmap::MaskKind::Causal, 4, false);
  EXPECT_NE(gpt.find("(first causal row left out)"), std::string::npos) << gpt;
  EXPECT_NE(gpt.find("grey = masked"), std::string::npos) << gpt;
  EXPECT_NE(gpt.find("hatched = outside the window"), std::string::npos) << gpt;
  EXPECT_EQ(gpt.find("dimmed"), std::string::npos) << gpt;
  const std::string rev = headmap::heads_png_caption(headmap::MaskKind::Reversed, 0, false);
  EXPECT_EQ(rev.find("causal row"), std::string::npos) << rev;
  EXPECT_NE(rev.find("grey = masked"), std::string::npos) << rev;
}
