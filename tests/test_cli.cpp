// headmap-cli from the outside: exit statuses, outputs that parse, no partial files.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/math/int8_products.h"
#include "core/math/packed_gemm.h"
#include "gguf_writer.h"
#include "narrow_model.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

fs::path tmp() {
  static fs::path d = [] {
    fs::path p = fs::temp_directory_path() / ("headmap-cli-test-" + std::to_string(::getpid()));
    fs::remove_all(p);
    fs::create_directories(p);
    return p;
  }();
  return d;
}

struct CliRun {
  int status = -1;
  std::string out, err;
};

// cwd: the working directory to run in (default: the test's).
CliRun cli(std::vector<std::string> args, const fs::path& cwd = {}) {
  CliRun r;
  const fs::path out = tmp() / "stdout", err = tmp() / "stderr";
  args.insert(args.begin(), HEADMAP_CLI);
  const pid_t pid = fork();
  if (pid == 0) {
    if (!freopen(out.c_str(), "w", stdout) || !freopen(err.c_str(), "w", stderr)) _exit(126);
    if (!cwd.empty() && chdir(cwd.c_str()) != 0) _exit(125);
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

}  // namespace

TEST(Cli, BadArgumentsExitTwoWithTheFix) {
  CliRun r = cli({"--random-init", "--d-model", "256", "--heads", "3"});  // trained weights bring their own d_model
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("d_model 256 is not divisible by 3 heads: try 2 or 4"), std::string::npos) << r.err;
  EXPECT_EQ(cli({"--no-such-flag"}).status, 2);
  EXPECT_EQ(cli({"--layers", "13"}).status, 2);
  EXPECT_EQ(cli({"--tokenizer", "bytes"}).status, 2);
  EXPECT_EQ(cli({"--help"}).status, 0);
}

TEST(Cli, JsonHasTokensPassportShapesAndWeights) {
  const fs::path j = tmp() / "run.json";
  CliRun r = cli({"--random-init", "--text", "The cat sat on the mat because it was tired.", "--text", "Short one.", "--d-model", "512",
                  "--heads", "8", "--layers", "1", "--json", j.string(), "--with-weights"});
  ASSERT_EQ(r.status, 0) << r.err;
  std::ifstream f(j);
  const json d = json::parse(f);
  EXPECT_EQ(d["tokens"][0].size(), 11u);
  EXPECT_EQ(d["lengths"], json({11, 3}));
  bool found = false;
  for (const auto& s : d["passport"])
    if (s["id"] == "q_heads") {
      EXPECT_EQ(s["shape"], json({2, 8, 11, 64}));  // integer arrays
      found = true;
    }
  EXPECT_TRUE(found);
  EXPECT_EQ(d["weights_shape"], json({1, 2, 8, 11, 11}));
  EXPECT_EQ(d["metrics"].size(), 16u);  // L x B x H
  EXPECT_EQ(d["attention_params"], 4 * (512 * 512 + 512));
}

// Without a weights option the CLI runs the app's default: the shipped trained model, its
// BPE, the loss on the text and the token ids. --random-init gives random weights.
TEST(Cli, DefaultIsTheShippedTrainedModel) {
  const fs::path j = tmp() / "default.json", dir = tmp() / "default-npy";
  CliRun r = cli({"--text", "My grandmother planted tomatoes in the garden last spring.", "--json", j.string(), "--npy", dir.string()});
  ASSERT_EQ(r.status, 0) << r.err;
  std::ifstream f(j);
  const json d = json::parse(f);
  EXPECT_EQ(d["weights_source"].get<std::string>().rfind("trained (D=128", 0), 0u) << d["weights_source"];
  ASSERT_TRUE(d.contains("loss_on_text"));
  EXPECT_GT(d["loss_on_text"].get<double>(), 0.0);
  EXPECT_LT(d["loss_on_text"].get<double>(), 9.0);
  ASSERT_EQ(d["token_ids"].size(), 1u);
  EXPECT_EQ(d["token_ids"][0].size(), d["tokens"][0].size());
  EXPECT_LE(d["tokens"][0].size(), 18u) << "sub-words, not letters: 9 words and a full stop (51 letters)";
  std::ifstream m(dir / "meta.json");
  const json meta = json::parse(m);
  EXPECT_EQ(meta["token_ids"], d["token_ids"]);

  const fs::path k = tmp() / "random.json";
  ASSERT_EQ(cli({"--random-init", "--seed", "3", "--text", "a b", "--json", k.string()}).status, 0);
  std::ifstream g(k);
  EXPECT_EQ(json::parse(g)["weights_source"].get<std::string>().rfind("random init", 0), 0u);
  CliRun seed = cli({"--seed", "3", "--text", "a b"});
  EXPECT_EQ(seed.status, 2);
  EXPECT_NE(seed.err.find("--random-init"), std::string::npos) << seed.err;
  CliRun size = cli({"--d-model", "512", "--heads", "8", "--text", "a b"});
  EXPECT_EQ(size.status, 2);
  EXPECT_NE(size.err.find("add --random-init"), std::string::npos) << size.err;
}

TEST(Cli, NpyDirectoryAndPngAreWritten) {
  const fs::path dir = tmp() / "npy", png = tmp() / "heads.png";
  CliRun r = cli({"--text", "a b c d", "--npy", dir.string(), "--png", png.string()});
  ASSERT_EQ(r.status, 0) << r.err;
  for (const char* f : {"attention.npy", "meta.json", "layer0.attn_in.npy", "layer1.w_o.npy", "layer1.b_v.npy", "layer1.attn_out.npy"})
    EXPECT_TRUE(fs::exists(dir / f)) << f;
  std::ifstream p(png, std::ios::binary);
  char magic[8] = {};
  p.read(magic, 8);
  EXPECT_EQ(std::string(magic, 8), std::string("\x89PNG\r\n\x1a\n", 8));
  // Writing again over the same directory works and leaves no staging directory behind.
  ASSERT_EQ(cli({"--text", "x y", "--npy", dir.string()}).status, 0);
  for (const auto& e : fs::directory_iterator(dir)) EXPECT_EQ(e.path().filename().string().rfind(".staging", 0), std::string::npos);
}

// Relative paths resolve against the working directory: a bare name (no "./") for --npy
// once failed with "Cannot create the directory : Invalid argument." (issue 22). --svg and
// --png beside it.
TEST(Cli, BareRelativeNamesAreWrittenInTheWorkingDirectory) {
  const fs::path cwd = tmp() / "cwd";
  fs::create_directories(cwd);
  CliRun r = cli({"--text", "a b c d", "--npy", "out", "--png", "heads.png", "--svg", "heads.svg"}, cwd);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(fs::exists(cwd / "out" / "attention.npy"));
  EXPECT_TRUE(fs::exists(cwd / "out" / "meta.json"));
  EXPECT_TRUE(fs::exists(cwd / "heads.png"));
  // Again over the same directory (it is replaced), and a name inside a relative directory.
  fs::create_directories(cwd / "sub");
  ASSERT_EQ(cli({"--text", "x y", "--npy", "out"}, cwd).status, 0);
  ASSERT_EQ(cli({"--text", "x y", "--npy", "sub/out2"}, cwd).status, 0) << r.err;
  EXPECT_TRUE(fs::exists(cwd / "sub" / "out2" / "attention.npy"));
  for (const auto& e : fs::directory_iterator(cwd)) EXPECT_EQ(e.path().filename().string().find(".headmap-tmp-"), std::string::npos) << e.path();
  // The SVG: the heads grid of layer 0, one map per head, its token labels as text.
  std::ifstream f(cwd / "heads.svg");
  const std::string svg((std::istreambuf_iterator<char>(f)), {});
  ASSERT_EQ(svg.rfind("<?xml", 0), 0u) << svg.substr(0, 200);
  size_t maps = 0;
  for (size_t at = svg.find("<g class=\"map\""); at != std::string::npos; at = svg.find("<g class=\"map\"", at + 1)) ++maps;
  EXPECT_EQ(maps, 4u);  // the shipped model's 4 heads
  EXPECT_NE(svg.find(">a</text>"), std::string::npos);
  EXPECT_NE(svg.find("</svg>"), std::string::npos);
}

TEST(Cli, FailedWritesExitOneAndLeaveNothing) {
  const fs::path bad = tmp() / "missing-dir" / "out.json";
  CliRun r = cli({"--json", bad.string()});
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("missing-dir"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(bad.parent_path()));
  // A file that exists is replaced only by a complete new one.
  const fs::path j = tmp() / "keep.json";
  std::ofstream(j.string()) << "previous";
  EXPECT_EQ(cli({"--json", j.string(), "--heads", "3"}).status, 2);  // fails before writing
  std::ifstream f(j);
  std::string content((std::istreambuf_iterator<char>(f)), {});
  EXPECT_EQ(content, "previous");
}

TEST(Cli, OddTextIsHandled) {
  const fs::path f = tmp() / "bad-utf8.txt";
  {
    std::ofstream o(f, std::ios::binary);
    o << "caf\xC3 ol\xE9\n\n\xF0\x9F\x98\x80 \xE7\x8C\xAB\n";
  }
  CliRun r = cli({"--file", f.string()});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.err.find("invalid UTF-8"), std::string::npos) << r.err;
  CliRun empty = cli({"--text", ""});
  EXPECT_EQ(empty.status, 0);
  EXPECT_NE(empty.err.find("nothing to attend over"), std::string::npos) << empty.err;
  std::string long_text;
  for (int i = 0; i < 500; ++i) long_text += "word ";
  CliRun trunc = cli({"--random-init", "--text", long_text, "--context", "100"});
  EXPECT_EQ(trunc.status, 0);
  EXPECT_NE(trunc.err.find("truncated to the context of 100 tokens (the text has 500)"), std::string::npos) << trunc.err;
}

// --model: a directory of a family headmap does not open exits 1 with a message and writes
// nothing; --model and --checkpoint together are refused as arguments.
TEST(Cli, ModelDirectoriesThatAreNotGpt2ExitOne) {
  const fs::path dir = tmp() / "t5";
  fs::create_directories(dir);
  std::ofstream(dir / "config.json") << R"({"model_type": "t5", "architectures": ["T5ForConditionalGeneration"]})";
  const fs::path j = tmp() / "t5.json";
  CliRun r = cli({"--model", dir.string(), "--json", j.string()});
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("t5 model (T5ForConditionalGeneration)"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(j));
  r = cli({"--model", (tmp() / "nowhere").string()});
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("not a directory"), std::string::npos) << r.err;
  EXPECT_EQ(cli({"--model", dir.string(), "--checkpoint", "x.safetensors"}).status, 2);
}

// Random init has no loss and no vocabulary ids, and stops at 12 layers.
TEST(Cli, RandomInitHasNoLossNoIdsAndTwelveLayersAtMost) {
  const fs::path j = tmp() / "random.json";
  ASSERT_EQ(cli({"--random-init", "--text", "a b c", "--json", j.string()}).status, 0);
  const json doc = json::parse(std::ifstream(j));
  EXPECT_FALSE(doc.contains("loss_on_text"));
  EXPECT_FALSE(doc.contains("token_ids"));
  CliRun r = cli({"--random-init", "--layers", "13"});
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("out of range for random init"), std::string::npos) << r.err;
}

// --kv-heads: validated against --heads (the checkpoint's H when not given), exported as
// (D, kv_heads·d_head) W_K and W_V, and refused by the trainer with a clear message.
TEST(Cli, KvHeadsAreValidatedExportedAndRefusedByTheTrainer) {
  CliRun r = cli({"--random-init", "--d-model", "48", "--heads", "6", "--kv-heads", "4"});
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("4 K/V heads do not divide 6 query heads into equal groups: try 3 or 6"), std::string::npos) << r.err;
  r = cli({"--random-init", "--kv-heads", "0"});
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("at least 1"), std::string::npos) << r.err;
  // The shipped model has H = 4: --kv-heads 2 fits it without --heads, 8 does not.
  EXPECT_EQ(cli({"--kv-heads", "2", "--text", "the cat"}).status, 0);
  EXPECT_EQ(cli({"--kv-heads", "8", "--text", "the cat"}).status, 2);

  const fs::path d = tmp() / "gqa-npy";
  r = cli({"--random-init", "--d-model", "48", "--heads", "6", "--kv-heads", "2", "--text", "the cat sat", "--npy", d.string()});
  ASSERT_EQ(r.status, 0) << r.err;
  auto header = [&](const char* f) {  // the .npy header's shape
    std::ifstream in(d / f, std::ios::binary);
    std::string h(128, '\0');
    in.read(h.data(), 128);
    const size_t a = h.find("'shape': ("), b = h.find(')', a);
    return h.substr(a + 10, b - a - 10);
  };
  EXPECT_EQ(header("layer0.w_k.npy"), "48, 16");
  EXPECT_EQ(header("layer0.w_v.npy"), "48, 16");
  EXPECT_EQ(header("layer0.b_k.npy"), "16,");
  EXPECT_EQ(header("layer0.w_q.npy"), "48, 48");
  std::ifstream m(d / "meta.json");
  EXPECT_EQ(json::parse(m)["config"]["num_kv_heads"], 2);

  r = cli({"train", "--corpus", "/nonexistent", "--out", (tmp() / "x.safetensors").string(), "--heads", "4", "--kv-heads", "2"});
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("multi-head attention only"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(tmp() / "x.safetensors"));
}

// --top-k: the next-token predictions, printed and in --json, with each sentence's loss.
TEST(Cli, TopKPrintsAndExportsTheNextTokens) {
  const std::string text = "My grandmother planted tomatoes in the garden. My grandmother planted tomatoes in the";
  CliRun r = cli({"--text", text, "--top-k", "3"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("sentence 0: after [\xC2\xB7the] the model predicts: [\xC2\xB7garden]"), std::string::npos) << r.out;
  const fs::path j = tmp() / "topk.json";
  ASSERT_EQ(cli({"--text", text, "--text", "Hi there", "--top-k", "3", "--json", j.string()}).status, 0);
  std::ifstream f(j);
  const json doc = json::parse(f);
  ASSERT_EQ(doc["next_tokens"].size(), 2u);
  ASSERT_EQ(doc["next_tokens"][0].size(), doc["lengths"][0].get<size_t>());
  const json& first = doc["next_tokens"][0][0];
  ASSERT_EQ(first.size(), 3u);
  EXPECT_GE(first[0]["prob"].get<double>(), first[1]["prob"].get<double>());
  ASSERT_EQ(doc["sentence_losses"].size(), 2u);
  EXPECT_GT(doc["sentence_losses"][1].get<double>(), 0.0);
  EXPECT_EQ(cli({"--random-init", "--text", "x y", "--top-k", "3"}).status, 2) << "random init has nothing to predict";
}

// One meaning for num_heads (issue 22): with trained weights --heads is checked against the
// weights' d_model (128 for the shipped default), not ModelConfig's random-init 64, and the
// message lists the counts that divide it; --help gives the defaults in force.
TEST(Cli, HeadsAreCheckedAgainstTheWeightsDModelAndHelpGivesTheDefaultsInForce) {
  const CliRun r = cli({"--heads", "3"});
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("d_model 128 is not divisible by 3 heads: try 2 or 4"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("1, 2, 4, 8, 16, 32, 64, 128"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("d_model 64"), std::string::npos) << r.err;
  const CliRun random = cli({"--random-init", "--heads", "3"});  // random init's own default, 64
  EXPECT_EQ(random.status, 2);
  EXPECT_NE(random.err.find("d_model 64 is not divisible by 3 heads"), std::string::npos) << random.err;
  const CliRun h = cli({"--help"});
  ASSERT_EQ(h.status, 0) << h.err;
  std::string help;  // CLI11 wraps long descriptions: one line of words
  for (char c : h.out) help += c == '\n' ? ' ' : c;
  for (size_t i; (i = help.find("  ")) != std::string::npos;) help.erase(i, 1);
  EXPECT_NE(help.find("d_model, D (1-4096); default: 128, the shipped trained model's"), std::string::npos) << h.out;
  EXPECT_NE(help.find("or 64 with --random-init"), std::string::npos) << h.out;
  EXPECT_NE(help.find("default: 128, the positions the shipped trained model learned"), std::string::npos) << h.out;
  EXPECT_NE(help.find("or 256 with --random-init"), std::string::npos) << h.out;
  EXPECT_EQ(help.find("[64]"), std::string::npos) << "no bare random-init default: " << h.out;
  EXPECT_NE(help.find("numbered from 0"), std::string::npos) << h.out;
  // The summary says how layers, sentences and heads are numbered.
  const CliRun s = cli({"--text", "one two three"});
  ASSERT_EQ(s.status, 0) << s.err;
  EXPECT_NE(s.out.find("numbered from 0"), std::string::npos) << s.out;
}

// --file's size is checked before reading, against the one limit the app shares: 60 MB of
// text took 8.5 s and 0.8 GB before the maps were refused.
TEST(Cli, AnOversizedFileIsRefusedBeforeItIsRead) {
  const fs::path f = tmp() / "big.txt";
  { std::ofstream(f) << "x"; }
  fs::resize_file(f, uint64_t(60) << 20);  // sparse: nothing is written
  const CliRun r = cli({"--file", f.string()});
  EXPECT_EQ(r.status, 1) << r.err;
  EXPECT_NE(r.err.find("is larger than 16 MiB"), std::string::npos) << r.err;
  fs::remove(f);
}

// Slides (issue 23): `lesson-export` writes every step of a lesson as a PNG of the asked
// size, through the app's own state path; a wrong lesson name is a message listing them.
TEST(Cli, LessonExportWritesOneSlidePerStep) {
  const fs::path dir = tmp() / "slides";
  fs::remove_all(dir);
  const CliRun r = cli({"lesson-export", "004", "--png", dir.string(), "--size", "1024x768"});
  ASSERT_EQ(r.status, 0) << r.err;
  std::vector<fs::path> pngs;
  for (const auto& e : fs::directory_iterator(dir)) pngs.push_back(e.path());
  std::sort(pngs.begin(), pngs.end());
  ASSERT_EQ(pngs.size(), 4u) << "004 has four steps";
  EXPECT_EQ(pngs[0].filename(), "004-01.png");
  for (const fs::path& p : pngs) {
    std::ifstream f(p, std::ios::binary);
    unsigned char h[24] = {};
    f.read(reinterpret_cast<char*>(h), 24);
    const uint32_t w = (h[16] << 24) | (h[17] << 16) | (h[18] << 8) | h[19], ht = (h[20] << 24) | (h[21] << 16) | (h[22] << 8) | h[23];
    EXPECT_EQ(w, 1024u) << p;
    EXPECT_EQ(ht, 768u) << p;
    EXPECT_GT(fs::file_size(p), 20000u) << p << ": a slide with text and a figure, not an empty page";
  }
  EXPECT_NE(r.out.find("The shape table"), std::string::npos) << r.out;
  const CliRun bad = cli({"lesson-export", "042", "--png", dir.string()});
  EXPECT_EQ(bad.status, 2);
  EXPECT_NE(bad.err.find("the lessons are 000, 001, 002, 003, 004"), std::string::npos) << bad.err;
}

// What heads contribute from the shell (issue 28): the results go into --json under
// "contrib" (complete to 1e-4), a second --npy export into the same directory works, and
// every bad request is a message with exit status 2, never a crash.
TEST(Cli, ContribOptionsAddToTheJsonAndRefuseBadRequests) {
  const std::string twice = "My aunt keeps three green parrots in the kitchen. My aunt keeps three green parrots in the kitchen.";
  const std::string corrupt = "My aunt keeps three yellow parrots in the kitchen. My aunt keeps three green parrots in the kitchen.";
  const fs::path j = tmp() / "contrib.json", npy = tmp() / "contrib-npy";
  for (int run = 0; run < 2; ++run) {  // twice: the export replaces a directory that holds the contribution files
    const CliRun r = cli({"--text", corrupt, "--patch-from", twice, "--attribute", "\xC2\xB7green-\xC2\xB7yellow@20", "--value-weighted",
                          "--rollout", "--detectors", "--json", j.string(), "--npy", npy.string()});
    ASSERT_EQ(r.status, 0) << r.err;
  }
  std::ifstream f(j);
  const json doc = json::parse(f, nullptr, false);
  ASSERT_TRUE(doc.contains("contrib")) << "no contrib in the JSON";
  const json& c = doc["contrib"];
  EXPECT_LT(c["attribution"]["completeness_error"].get<double>(), 1e-4);
  // On the corrupted text the first copy says "yellow": head 1.1 copies it, so it pushes the
  // green - yellow difference down the most.
  EXPECT_EQ(c["attribution"]["ranking"].back(), json::array({1, 1})) << "head 1.1 copies \"yellow\"";
  EXPECT_GT(c["patching"]["recovery"][1][1].get<double>(), 0.9) << "patching 1.1 from the clean run recovers the difference";
  EXPECT_EQ(c["rollout"]["maps"].size(), 2u);
  EXPECT_EQ(c["detectors"]["induction"].size(), 2u);
  for (const char* name : {"attribution_heads.npy", "value_weighted.npy", "rollout.npy", "detectors.npy", "patch_recovery.npy"})
    EXPECT_TRUE(fs::exists(npy / name)) << name;

  auto refused = [&](std::vector<std::string> args, const std::string& says) {
    const CliRun r = cli(args);
    EXPECT_EQ(r.status, 2) << r.err;
    EXPECT_NE(r.err.find(says), std::string::npos) << r.err;
  };
  refused({"--text", twice, "--attribute", "\xC2\xB7parrots@5"}, "not one");
  refused({"--text", twice, "--attribute", "#5@99"}, "outside the sentence");
  refused({"--text", twice, "--attribute", "#5"}, "TOKEN@POS");
  refused({"--text", twice, "--attribute", "#999999@0"}, "not a vocabulary id");
  refused({"--random-init", "--text", "a b c", "--attribute", "a@0"}, "needs trained weights");
  refused({"--text", "a b c", "--patch-from", "a b", "--attribute", "#5-#6@0"}, "same token count");
  refused({"--text", "a b c", "--patch-from", "a b d"}, "--attribute A-B@POS");
}

// Right-to-left labels (app/common/bidi.h): the figures draw each Arabic token in visual order
// with its letters joined (Unicode's Presentation Forms-B: الولد is alef isolated U+FE8D, lam
// initial U+FEDF, waw final U+FEEE, lam initial, dal final U+FEAA, last letter first), and
// the SVG tells its viewer not to reorder them again; the JSON's data keep the typed order.
TEST(Cli, ArabicLabelsAreDrawnJoinedButExportedInTypedOrder) {
  const fs::path cwd = tmp() / "rtl";
  fs::create_directories(cwd);
  const std::string walad = "\xD8\xA7\xD9\x84\xD9\x88\xD9\x84\xD8\xAF";  // الولد, typed order
  const std::string walad_drawn = "\xEF\xBA\xAA\xEF\xBB\x9F\xEF\xBB\xAE\xEF\xBB\x9F\xEF\xBA\x8D";  // U+FEAA FEDF FEEE FEDF FE8D
  CliRun r = cli({"--random-init", "--tokenizer", "word", "--text", "\xD8\xB0\xD9\x87\xD8\xA8 " + walad, "--svg", "rtl.svg",
                  "--json", "rtl.json"},
                 cwd);
  ASSERT_EQ(r.status, 0) << r.err;
  std::ifstream f(cwd / "rtl.svg");
  const std::string svg((std::istreambuf_iterator<char>(f)), {});
  EXPECT_NE(svg.find(walad_drawn + "</text>"), std::string::npos) << svg;
  EXPECT_EQ(svg.find(walad), std::string::npos) << "a label in typed order";
  EXPECT_NE(svg.find("unicode-bidi=\"bidi-override\""), std::string::npos);
  std::ifstream j(cwd / "rtl.json");
  const std::string json((std::istreambuf_iterator<char>(j)), {});
  EXPECT_NE(json.find(walad), std::string::npos);
  EXPECT_EQ(json.find(walad_drawn), std::string::npos);
}

// --int8-products: on a GGUF file's Q4_K and Q6_K weights, both passes' times and their
// largest difference on stdout; on weights it does not take (the shipped model's F32) a note
// that says so, and the F32 pass.
TEST(Cli, Int8ProductsPrintTheirTimesAndDifferenceOrSayWhyNot) {
  using namespace headmap;
  const fs::path file = tmp() / "int8-q4_k_m.gguf";
  ASSERT_TRUE(test::write_llama_gguf(file.string(), test::GgufShape{256, 4, 2, 64, 2, 512, 320}, test::GgufTypes::q4_k_m(), 5, false));
  CliRun r = cli({"--model", file.string(), "--text", "The cat sat on the mat because it was tired.", "--int8-products"});
  ASSERT_EQ(r.status, 0) << r.err;
  if (Int8Products::available()) {
    EXPECT_NE(r.out.find("8-bit products: this pass "), std::string::npos) << r.out;
    EXPECT_NE(r.out.find(" ms, F32 "), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("largest difference from F32: attention "), std::string::npos) << r.out;
    EXPECT_EQ(r.out.find("largest difference from F32: attention 0 "), std::string::npos) << "the products were not rounded: " << r.out;
  } else {
    EXPECT_NE(r.err.find("8-bit products need a build for AVX2"), std::string::npos) << r.err;
  }
  r = cli({"--text", "The cat sat on the mat.", "--int8-products"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out.find("8-bit products: this pass"), std::string::npos) << r.out;
  if (Int8Products::available()) EXPECT_NE(r.err.find("this model has none, so the pass is F32"), std::string::npos) << r.err;
}

// --bf16-products: on a CPU with avx512_bf16, both passes' times and their largest difference
// on stdout (BF16, F32 and F16 weights); elsewhere a note that says why not, and the F32 pass.
// Never a failure: it is a speed option.
TEST(Cli, Bf16ProductsPrintTheirTimesAndDifferenceOrSayWhyNot) {
  using namespace headmap;
  const fs::path dir = tmp() / "bf16-model";
  narrow_model::write_model(dir, narrow_model::llama_tensors(false, WeightDtype::BF16), false, "BF16");
  CliRun r = cli({"--model", dir.string(), "--text", "The cat sat on the mat because it was tired.", "--bf16-products"});
  ASSERT_EQ(r.status, 0) << r.err;
  if (Bf16Products::available()) {
    EXPECT_NE(r.out.find("BF16 products: this pass "), std::string::npos) << r.out;
    EXPECT_NE(r.out.find(" ms, F32 "), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("largest difference from F32: attention "), std::string::npos) << r.out;
  } else {
    EXPECT_NE(r.err.find("BF16 products need a CPU with avx512_bf16"), std::string::npos) << r.err;
    EXPECT_EQ(r.out.find("BF16 products: this pass"), std::string::npos) << r.out;
  }
  // The shipped model (F32 weights, rounded too), a text of more than 8 tokens.
  r = cli({"--text", "The cat sat on the mat because it was warm and the dog was not.", "--bf16-products"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out.find("largest difference from F32: attention ") != std::string::npos, Bf16Products::available()) << r.out << r.err;
  // F16 weights too.
  const fs::path half = tmp() / "f16-model";
  narrow_model::write_model(half, narrow_model::llama_tensors(false, WeightDtype::F16), false, "F16");
  r = cli({"--model", half.string(), "--text", "The cat sat on the mat because it was tired.", "--bf16-products"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out.find("largest difference from F32: attention ") != std::string::npos, Bf16Products::available()) << r.out << r.err;
}
