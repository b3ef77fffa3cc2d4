// headmap-cli from the outside: exit statuses, outputs that parse, no partial files.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

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

CliRun cli(std::vector<std::string> args) {
  CliRun r;
  const fs::path out = tmp() / "stdout", err = tmp() / "stderr";
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

}  // namespace

TEST(Cli, BadArgumentsExitTwoWithTheFix) {
  CliRun r = cli({"--d-model", "256", "--heads", "3"});
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("d_model 256 is not divisible by 3 heads: try 2 or 4"), std::string::npos) << r.err;
  EXPECT_EQ(cli({"--no-such-flag"}).status, 2);
  EXPECT_EQ(cli({"--layers", "13"}).status, 2);
  EXPECT_EQ(cli({"--tokenizer", "bytes"}).status, 2);
  EXPECT_EQ(cli({"--help"}).status, 0);
}

TEST(Cli, JsonHasTokensPassportShapesAndWeights) {
  const fs::path j = tmp() / "run.json";
  CliRun r = cli({"--text", "The cat sat on the mat because it was tired.", "--text", "Short one.", "--d-model", "512", "--heads",
                  "8", "--layers", "1", "--json", j.string(), "--with-weights"});
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
  CliRun trunc = cli({"--text", long_text, "--context", "100"});
  EXPECT_EQ(trunc.status, 0);
  EXPECT_NE(trunc.err.find("truncated to the context of 100 tokens (the text has 500)"), std::string::npos) << trunc.err;
}
