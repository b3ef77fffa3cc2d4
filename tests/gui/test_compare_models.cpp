// GUI tests of the Compare tab with any two models (issue 28, point 6): B read from a path
// through the one dispatcher (a Hugging Face directory of another family, with a tokenizer of
// its own), each side's own tokens on its maps' axes, B's maps the numbers of that model, a
// refused path that keeps the B before, and B's memory counted beside A's.
// (The tiny model directories are written by tests/reference/make_*_dir.py, which need numpy:
// skipped without it.)
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <string>

#include "tests/gui/gui_harness.h"

namespace {

const char* kSentence = "text=My sister baked bread this morning and the kitchen smells wonderful.";

// A tiny Llama (4 query heads on 2 K/V heads, 3 layers) with make_gpt2_dir.py's tiny BPE:
// another family, another tokenizer and another depth than the shipped model A.
fs::path llama_dir() {
  static const fs::path d = [] {
    const fs::path p = tmp_dir() / "cmp-llama";
    fs::remove_all(p);
    const std::string make = "/usr/bin/python3 '" + std::string(HEADMAP_MAKE_FAMILY) + "' '" + p.string() + "' --variant llama > /dev/null 2>&1";
    return std::system(make.c_str()) == 0 ? p : fs::path();
  }();
  return d;
}

bool any_starts_with(const json& list, const std::string& prefix) {
  for (const auto& m : list)
    if (m.get<std::string>().rfind(prefix, 0) == 0) return true;
  return false;
}

}  // namespace

// The shipped model as A, a Llama directory as B: each side is cut by its own tokenizer, both
// token rows are shown and label each side's maps, the window says the positions do not align
// and that entropies are normalised, and B's maps are the numbers of that model: the same
// as its maps when it is opened as the main model (--model) and exported.
TEST(CompareModels, AFamilyDirectoryAsBHasItsOwnTokensAndItsOwnMaps) {
  const fs::path dir = llama_dir();
  if (dir.empty()) GTEST_SKIP() << "numpy is missing: the tiny model directory cannot be written";
  const AppRun r = run_app("cmp-family", {"--then", kSentence, "--then", "panel=compare", "--then", "compare_b=file:" + dir.string(), "--then", "wait"});
  ASSERT_EQ(r.status, 0) << r.err;
  const json& c = r.report["compare"];
  ASSERT_TRUE(c.is_object()) << r.report.dump().substr(0, 2000);
  EXPECT_NE(c["b"].get<std::string>().find("B: cmp-llama"), std::string::npos) << c["b"];
  EXPECT_EQ(c["heads_a"], 4);
  EXPECT_EQ(c["heads_b"], 4);
  // Both tokenizations, and they differ (the tiny BPE cuts the words into more pieces).
  ASSERT_FALSE(c["a_tokens"].empty());
  ASSERT_FALSE(c["b_tokens"].empty());
  EXPECT_NE(c["a_tokens"], c["b_tokens"]);
  EXPECT_GT(c["b_tokens"].size(), c["a_tokens"].size());
  EXPECT_TRUE(any_starts_with(c["notes"], "The tokenizations differ: A cuts the sentence into " + std::to_string(c["a_tokens"].size()) +
                                              " tokens, B into " + std::to_string(c["b_tokens"].size()) + ", so positions do not align."))
      << c["notes"].dump();
  EXPECT_TRUE(has_message(r.report, "Entropies are normalised: each row's over ln(keys it sees).")) << r.report["messages"].dump();
  EXPECT_EQ(c["entropy_unit"], "nats / ln(keys)");
  EXPECT_TRUE(has_message(r.report, "A has 2 layers, B 3: layer 2 only in B.")) << r.report["messages"].dump();
  // Each side's maps carry its own tokens on their axes: A's first label is A's first token,
  // B's is B's.
  EXPECT_TRUE(any_starts_with(c["axis_labels"], "A " + c["a_tokens"][0].get<std::string>() + "  0")) << c["axis_labels"].dump();
  EXPECT_TRUE(any_starts_with(c["axis_labels"], "B " + c["b_tokens"][0].get<std::string>() + "  0")) << c["axis_labels"].dump();

  // The same directory opened as A, its attention exported: B's maps hold those numbers.
  const fs::path exported = tmp_dir() / "cmp-family-as-a.json";
  fs::remove(exported);
  const AppRun a = run_app("cmp-family-as-a", {"--model", dir.string(), "--then", kSentence, "--then", "wait", "--then", "export_json=" + exported.string(),
                                               "--then", "wait"});
  ASSERT_EQ(a.status, 0) << a.err;
  std::ifstream f(exported);
  ASSERT_TRUE(f) << a.err;
  const json run = json::parse(f, nullptr, false);
  ASSERT_TRUE(run.is_object());
  const int T = run["T"], len = run["lengths"][0];
  EXPECT_EQ(static_cast<size_t>(len), c["b_tokens"].size());
  const json& maps = c["b_maps"];  // layer 0, B's 4 heads, (len, len) each
  ASSERT_EQ(maps.size(), 4u);
  double worst = 0;
  for (int h = 0; h < 4; ++h) {
    ASSERT_EQ(maps[h].size(), static_cast<size_t>(len) * len);
    for (int i = 0; i < len; ++i)
      for (int j = 0; j < len; ++j)
        worst = std::max(worst, std::fabs(maps[h][static_cast<size_t>(i) * len + j].get<double>() - run["weights"][0][0][h][i][j].get<double>()));
  }
  EXPECT_LT(worst, 1e-5) << "B's maps differ from the same model's opened as A";
  EXPECT_LE(len, T);
}

// A path the dispatcher refuses keeps the B read before, and says why in the window (under
// the path box, with the dispatcher's own words) and on the terminal.
TEST(CompareModels, ARefusedPathKeepsThePreviousB) {
  const fs::path dir = llama_dir();
  if (dir.empty()) GTEST_SKIP() << "numpy is missing: the tiny model directory cannot be written";
  const fs::path empty = fresh_dir("cmp-empty");
  const AppRun r = run_app("cmp-refused", {"--then", kSentence, "--then", "panel=compare", "--then", "compare_b=file:" + dir.string(), "--then", "wait",
                                           "--then", "compare_b=file:" + empty.string(), "--then", "wait"});
  ASSERT_EQ(r.status, 0) << r.err;
  const std::string why = empty.string() + " has no config.json (the directory is empty), so it is not a Hugging Face model directory.";
  EXPECT_TRUE(has_message(r.report, why)) << r.report["messages"].dump();
  EXPECT_NE(r.err.find(why), std::string::npos) << r.err;
  EXPECT_TRUE(has_message(r.report, "B is still " + dir.string())) << r.report["messages"].dump();
  // The previous B is still drawn beside A.
  EXPECT_NE(r.report["compare"]["b"].get<std::string>().find("B: cmp-llama"), std::string::npos) << r.report["compare"].dump();
  EXPECT_EQ(r.report["compare"]["heads_b"], 4);
  EXPECT_EQ(r.report["compare"]["b_maps"].size(), 4u);
}

// B's weights count against the memory budget beside A's: a model that fits the budget alone
// is refused when A is open beside it, with a message that says so; A stays.
TEST(CompareModels, BCountsAgainstTheMemoryBudgetBesideA) {
  const fs::path big = tmp_dir() / "cmp-big";
  fs::remove_all(big);
  const std::string make = "/usr/bin/python3 '" + std::string(HEADMAP_MAKE_GPT2) + "' '" + big.string() +
                           "' --d 256 --heads 4 --layers 4 --positions 64 > /dev/null 2>&1";
  if (std::system(make.c_str()) != 0) GTEST_SKIP() << "numpy is missing: the tiny model directory cannot be written";
  // B alone needs 16 MiB, the shipped A holds 5 MiB: 20 MiB holds either, not both.
  const std::vector<std::pair<std::string, std::string>> env = {{"HEADMAP_MEMORY_BUDGET", "20M"}};
  const AppRun r = run_app("cmp-budget", {"--then", kSentence, "--then", "panel=compare", "--then", "compare_b=file:" + big.string(), "--then", "wait"},
                           true, {}, env);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(has_message(r.report, "would need 16 MiB beside the 5 MiB of the models already open (A), more than the memory budget of 20 MiB"))
      << r.report["messages"].dump();
  EXPECT_EQ(r.report["compare"]["heads_b"], 0);
  // With room for both, the same model opens as B.
  const AppRun ok = run_app("cmp-budget-ok", {"--then", kSentence, "--then", "panel=compare", "--then", "compare_b=file:" + big.string(), "--then", "wait"},
                            true, {}, {{"HEADMAP_MEMORY_BUDGET", "24M"}});
  ASSERT_EQ(ok.status, 0) << ok.err;
  EXPECT_EQ(ok.report["compare"]["heads_b"], 4);
}

// A pitfall against the correct model: the maps carry token labels on their axes, as the
// heads grid's do.
TEST(CompareModels, ThePitfallComparisonsMapsHaveTokenAxes) {
  const AppRun r = run_app("cmp-axes", {"--then", kSentence, "--then", "pitfall=scale-d-model=on", "--then", "panel=compare", "--then", "wait"});
  ASSERT_EQ(r.status, 0) << r.err;
  const json& c = r.report["compare"];
  ASSERT_TRUE(c.is_object());
  EXPECT_EQ(c["heads_a"], 4);
  EXPECT_TRUE(any_starts_with(c["axis_labels"], "A My  0")) << c.dump();
  EXPECT_TRUE(any_starts_with(c["axis_labels"], "B My  0")) << c.dump();
  EXPECT_EQ(c["entropy_unit"], "nats");
}
