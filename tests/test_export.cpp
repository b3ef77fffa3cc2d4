// Exporters: .npy round trip, atomic writes that never leave debris or clobber on failure,
// config JSON round trip and its errors.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/io/export.h"
#include "test_util.h"

using namespace headmap;
namespace fs = std::filesystem;

namespace {
fs::path temp_dir(const std::string& name) {
  fs::path p = fs::temp_directory_path() / ("headmap-test-" + name + "-" + std::to_string(::getpid()));
  fs::remove_all(p);
  fs::create_directories(p);
  return p;
}
}  // namespace

TEST(Export, NpyRoundTrip) {
  std::vector<float> v(2 * 3 * 4);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i) * 0.5f - 3.0f;
  for (const Shape& s : {Shape{2, 3, 4}, Shape{24}, Shape{1, 24}}) {
    const std::string bytes = npy_bytes(v.data(), s);
    EXPECT_EQ((bytes.size() - v.size() * 4) % 64, 0u) << "header padded to 64 bytes";
    Result<Tensor> t = parse_npy(bytes);
    ASSERT_TRUE(t);
    EXPECT_EQ(t->shape, s);
    EXPECT_EQ(t->data, v);
  }
  EXPECT_FALSE(parse_npy("not an npy"));
  EXPECT_FALSE(parse_npy(npy_bytes(v.data(), {2, 3, 4}).substr(0, 100)));  // truncated
}

TEST(Export, AtomicWriteKeepsThePreviousFileOnFailure) {
  const fs::path d = temp_dir("atomic");
  const std::string path = (d / "out.json").string();
  ASSERT_TRUE(write_file_atomic(path, "first"));
  ASSERT_TRUE(write_file_atomic(path, "second"));
  EXPECT_EQ(read_file(path).value(), "second");
  EXPECT_EQ(std::distance(fs::directory_iterator(d), fs::directory_iterator{}), 1) << "no temp files left";
  Status s = write_file_atomic((d / "missing-dir" / "x.json").string(), "data");
  EXPECT_FALSE(s);
  EXPECT_EQ(s.error().kind, ErrorKind::Io);
  fs::permissions(d, fs::perms::owner_read | fs::perms::owner_exec);
  if (::geteuid() != 0) {  // root ignores permissions
    EXPECT_FALSE(write_file_atomic(path, "third"));
    EXPECT_EQ(read_file(path).value(), "second");
  }
  fs::permissions(d, fs::perms::owner_all);
  fs::remove_all(d);
}

TEST(Export, NpyDirectoryHasEveryFileAndNoStaging) {
  const fs::path d = temp_dir("npy");
  ModelConfig cfg = test::config(24, 4, 2);
  const ModelWeights w = random_weights(24, 2, 1);
  const Batch batch = make_batch({"a b c", "d e"}, cfg, w);
  ForwardOptions fo;
  fo.keep_layer_io = true;
  const ForwardOutput out = forward(w, cfg, batch, fo).value();
  RunRecord run;
  run.cfg = cfg;
  run.weights = &w;
  run.batch = &batch;
  run.out = &out;
  ASSERT_TRUE(export_npy_dir((d / "x").string(), run));
  int files = 0;
  for (const auto& e : fs::directory_iterator(d / "x")) {
    EXPECT_EQ(e.path().filename().string().rfind(".staging", 0), std::string::npos);
    ++files;
  }
  EXPECT_EQ(files, 1 + 2 * 10 + 1);  // attention, 2 layers x (attn_in, attn_out, 4 W, 4 b), meta
  const Tensor att = parse_npy(read_file((d / "x" / "attention.npy").string()).value()).value();
  EXPECT_EQ(att.shape, (Shape{2, 2, 4, 3, 3}));
  const auto meta = nlohmann::json::parse(read_file((d / "x" / "meta.json").string()).value());
  EXPECT_EQ(meta["lengths"], nlohmann::json({3, 2}));
  EXPECT_EQ(meta["tokens"][1][1], "e");
  fs::remove_all(d);
}

TEST(Export, ConfigJsonRoundTripAndErrors) {
  ModelConfig c = test::config(96, 6, 3, false);
  c.seed = 99;
  c.tokenizer = TokenizerKind::Char;
  c.pitfalls.interleaved_reshape = true;
  Result<ModelConfig> back = config_from_json(config_json(c));
  ASSERT_TRUE(back);
  EXPECT_EQ(*back, c);
  EXPECT_FALSE(config_from_json("{not json"));
  EXPECT_FALSE(config_from_json("[1, 2]"));
  Result<ModelConfig> wrong = config_from_json(R"({"d_model": "big"})");
  ASSERT_FALSE(wrong);
  EXPECT_EQ(wrong.error().kind, ErrorKind::BadFormat);
}
