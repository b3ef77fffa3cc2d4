// test_model_cache.cpp: models by name in fake local caches built here (core/io/model_cache.h):
// a Hugging Face hub cache (refs/main -> snapshots/<rev>/ whose file is a symlink into
// blobs/) and an Ollama models folder (a manifest naming the GGUF blob by digest), both
// opened through open_model_path as `--model` does; and the messages when they are broken.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "core/io/hf_model.h"
#include "core/io/model_cache.h"

using namespace headmap;
namespace fs = std::filesystem;

namespace {
const fs::path kSeed = fs::path(HEADMAP_FUZZ_CORPUS) / "gguf" / "seed_llama_q8_0.gguf";  // a tiny, whole llama GGUF

fs::path fresh(const std::string& name) {
  const fs::path d = fs::temp_directory_path() / ("headmap-cache-" + name + "-" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}
void write(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p) << text;
}
}  // namespace

TEST(ModelCache, HuggingFaceRepoIdResolvesThroughRefsSnapshotsAndBlobSymlinks) {
  const fs::path hub = fresh("hf");
  const fs::path repo = hub / "models--TinyOrg--tiny-llama-GGUF";
  const std::string rev = "0123abcd";
  write(repo / "refs" / "main", rev + "\n");
  fs::create_directories(repo / "blobs");
  fs::copy_file(kSeed, repo / "blobs" / "9f86d081884c7d65");
  fs::create_directories(repo / "snapshots" / rev);
  fs::create_symlink("../../blobs/9f86d081884c7d65", repo / "snapshots" / rev / "tiny-llama-q8_0.gguf");
  ::setenv("HF_HUB_CACHE", hub.c_str(), 1);
  Result<std::string> r = resolve_cached_model("TinyOrg/tiny-llama-GGUF");
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(fs::path(*r), repo / "snapshots" / rev);
  Result<ModelWeights> w = open_model_path("TinyOrg/tiny-llama-GGUF");
  ASSERT_TRUE(w) << w.error().message;
  EXPECT_EQ(w->arch.family, "llama");
  EXPECT_NE(w->hf_tokenizer, nullptr);

  // not in the cache: the message names where it looked
  Result<ModelWeights> absent = open_model_path("TinyOrg/absent");
  ASSERT_FALSE(absent);
  EXPECT_NE(absent.error().message.find(hub.string()), std::string::npos) << absent.error().message;
  // refs/main names a snapshot that is not there
  write(repo / "refs" / "main", "feedbeef");
  Result<std::string> gone = resolve_cached_model("TinyOrg/tiny-llama-GGUF");
  ASSERT_FALSE(gone);
  EXPECT_NE(gone.error().message.find("feedbeef"), std::string::npos);
  // a revision that tries to leave the cache is refused
  write(repo / "refs" / "main", "../../..");
  EXPECT_FALSE(resolve_cached_model("TinyOrg/tiny-llama-GGUF"));
  ::unsetenv("HF_HUB_CACHE");
  fs::remove_all(hub);
}

TEST(ModelCache, OllamaNameAndTagResolveToTheGgufBlob) {
  const fs::path root = fresh("ollama");
  const std::string hex = "5e884898da28047151d0e56f8dc6292773603d0d6aabbdd62a11ef721d1542d8";
  fs::create_directories(root / "blobs");
  fs::copy_file(kSeed, root / "blobs" / ("sha256-" + hex));
  write(root / "manifests" / "registry.ollama.ai" / "library" / "tiny" / "q8",
        R"({"schemaVersion":2,"layers":[{"mediaType":"application/vnd.ollama.image.template","digest":"sha256:00","size":1},)"
        R"({"mediaType":"application/vnd.ollama.image.model","digest":"sha256:)" + hex + R"(","size":1}]})");
  ::setenv("OLLAMA_MODELS", root.c_str(), 1);
  Result<std::string> r = resolve_cached_model("tiny:q8");
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(fs::path(*r), root / "blobs" / ("sha256-" + hex));
  Result<ModelWeights> w = open_model_path("tiny:q8");
  ASSERT_TRUE(w) << w.error().message;
  EXPECT_EQ(w->arch.family, "llama");
  // no such tag; a manifest without a model layer; names with path parts are not looked up
  EXPECT_FALSE(resolve_cached_model("tiny"));  // "latest" is absent
  write(root / "manifests" / "registry.ollama.ai" / "library" / "tiny" / "latest", R"({"layers":[]})");
  Result<std::string> nolayer = resolve_cached_model("tiny");
  ASSERT_FALSE(nolayer);
  EXPECT_NE(nolayer.error().message.find("no model layer"), std::string::npos);
  Result<std::string> sneaky = resolve_cached_model("..:x");
  ASSERT_FALSE(sneaky);
  EXPECT_EQ(sneaky.error().kind, ErrorKind::InvalidArgument);
  ::unsetenv("OLLAMA_MODELS");
  fs::remove_all(root);
}
