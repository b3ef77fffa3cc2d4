// test_model_cache.cpp: models by name in fake local caches built here (core/io/model_cache.h):
// a Hugging Face hub cache (refs/main -> snapshots/<rev>/ whose file is a symlink into
// blobs/), an Ollama models folder (a manifest naming the GGUF blob by digest) and LM
// Studio's models folders (PUBLISHER/REPO/FILE.gguf), all opened through open_model_path as
// `--model` does; and the messages when they are broken.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "core/io/hf_model.h"
#include "core/io/model_cache.h"
#include "core/model/model.h"
#include "core/model/source_label.h"

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
  EXPECT_NE(describe_source(*w, config_for_weights(*w, ModelConfig{})).find(" from TinyOrg/tiny-llama-GGUF: "), std::string::npos);

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
  // shown by its name, not by the blob's digest (the Open dialog's row, the status line)
  const std::string line = describe_source(*w, config_for_weights(*w, ModelConfig{}));
  EXPECT_NE(line.find(" from tiny:q8: "), std::string::npos) << line;
  EXPECT_EQ(line.find("sha256"), std::string::npos) << line;
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

TEST(ModelCache, LmStudioPublisherRepoAndFileResolveInItsModelsFolders) {
  const fs::path home = fresh("lmstudio");
  const char* old_home = std::getenv("HOME");
  const std::string saved_home = old_home ? old_home : "";
  ::setenv("HOME", home.c_str(), 1);
  ::setenv("HF_HUB_CACHE", (home / "no-hub").c_str(), 1);  // an empty HF cache: the name falls to LM Studio
  // The current folder, ~/.lmstudio/models: one model beside a vision projector.
  const fs::path repo = home / ".lmstudio" / "models" / "lmstudio-community" / "tiny-llama-GGUF";
  fs::create_directories(repo);
  fs::copy_file(kSeed, repo / "tiny-llama-Q8_0.gguf");
  write(repo / "mmproj-tiny-f16.gguf", "not a model");
  Result<std::string> r = resolve_cached_model("lmstudio-community/tiny-llama-GGUF");
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(fs::path(*r), repo / "tiny-llama-Q8_0.gguf");
  Result<ModelWeights> w = open_model_path("lmstudio-community/tiny-llama-GGUF");
  ASSERT_TRUE(w) << w.error().message;
  EXPECT_EQ(w->arch.family, "llama");
  // Two quantizations: the folder alone is ambiguous and the message names both; the file resolves.
  fs::copy_file(kSeed, repo / "tiny-llama-Q4_K_M.gguf");
  Result<ModelWeights> two = open_model_path("lmstudio-community/tiny-llama-GGUF");
  ASSERT_FALSE(two);
  EXPECT_NE(two.error().message.find("lmstudio-community/tiny-llama-GGUF/tiny-llama-Q4_K_M.gguf"), std::string::npos) << two.error().message;
  EXPECT_NE(two.error().message.find("tiny-llama-Q8_0.gguf"), std::string::npos) << two.error().message;
  Result<std::string> named = resolve_cached_model("lmstudio-community/tiny-llama-GGUF/tiny-llama-Q4_K_M.gguf");
  ASSERT_TRUE(named) << named.error().message;
  EXPECT_EQ(fs::path(*named), repo / "tiny-llama-Q4_K_M.gguf");
  // The older folder, ~/.cache/lm-studio/models.
  const fs::path old = home / ".cache" / "lm-studio" / "models" / "TheBloke" / "old-GGUF";
  fs::create_directories(old);
  fs::copy_file(kSeed, old / "old.Q8_0.gguf");
  Result<std::string> o = resolve_cached_model("TheBloke/old-GGUF");
  ASSERT_TRUE(o) << o.error().message;
  EXPECT_EQ(fs::path(*o), old / "old.Q8_0.gguf");
  // Absent: the message names the Hugging Face cache and both LM Studio folders; a file that
  // is not .gguf or a part that leaves the folder is not looked up.
  Result<std::string> absent = resolve_cached_model("nobody/absent-GGUF");
  ASSERT_FALSE(absent);
  EXPECT_NE(absent.error().message.find((home / ".cache" / "lm-studio" / "models").string()), std::string::npos) << absent.error().message;
  EXPECT_NE(absent.error().message.find("no-hub"), std::string::npos) << absent.error().message;
  EXPECT_EQ(resolve_cached_model("lmstudio-community/tiny-llama-GGUF/notes.txt").error().kind, ErrorKind::InvalidArgument);
  EXPECT_EQ(resolve_cached_model("lmstudio-community/../x.gguf").error().kind, ErrorKind::InvalidArgument);
  ::unsetenv("HF_HUB_CACHE");
  if (old_home) ::setenv("HOME", saved_home.c_str(), 1);
  else ::unsetenv("HOME");
  fs::remove_all(home);
}

// File > Open model lists what the caches hold (list_cached_models): each model once, by the
// name --model takes, with its source, its bytes on disk (symlinks into blobs/ followed) and
// its type from its config.json or its GGUF header; a repo that cannot open says why, and a
// repo of several quantizations is listed file by file.
TEST(ModelCache, TheListingNamesEachCachedModelWithItsSizeAndType) {
  const fs::path home = fresh("listing");
  const char* old_home = std::getenv("HOME");
  const std::string saved_home = old_home ? old_home : "";
  ::setenv("HOME", home.c_str(), 1);
  const fs::path hub = home / "hub";
  ::setenv("HF_HUB_CACHE", hub.c_str(), 1);
  ::setenv("OLLAMA_MODELS", (home / "ollama").c_str(), 1);
  const uint64_t seed_bytes = fs::file_size(kSeed);
  // A safetensors repo: config.json and a 1,000-byte weights blob behind symlinks.
  const fs::path st = hub / "models--Qwen--Qwen3-0.6B";
  write(st / "refs" / "main", "abc123\n");
  write(st / "blobs" / "cfg", R"({"model_type": "qwen3", "torch_dtype": "bfloat16"})");
  write(st / "blobs" / "w", std::string(1000, 'x'));
  fs::create_directories(st / "snapshots" / "abc123");
  fs::create_symlink("../../blobs/cfg", st / "snapshots" / "abc123" / "config.json");
  fs::create_symlink("../../blobs/w", st / "snapshots" / "abc123" / "model.safetensors");
  const uint64_t st_bytes = fs::file_size(st / "blobs" / "cfg") + 1000;
  // A repo of one GGUF, one of two, one without refs/main, and a dataset (not a model).
  write(hub / "models--TinyOrg--one-GGUF" / "refs" / "main", "r1");
  fs::create_directories(hub / "models--TinyOrg--one-GGUF" / "snapshots" / "r1");
  fs::copy_file(kSeed, hub / "models--TinyOrg--one-GGUF" / "snapshots" / "r1" / "one-Q8_0.gguf");
  const fs::path two = hub / "models--TinyOrg--two-GGUF" / "snapshots" / "r2";
  write(hub / "models--TinyOrg--two-GGUF" / "refs" / "main", "r2");
  fs::create_directories(two);
  fs::copy_file(kSeed, two / "two-Q8_0.gguf");
  write(two / "two-Q4_K_M.gguf", "GGUF but not really");
  fs::create_directories(hub / "models--Broken--repo" / "snapshots");
  fs::create_directories(hub / "datasets--Some--data");
  // Ollama: tiny:q8; LM Studio: one model beside its vision projector.
  const std::string hex = "5e884898da28047151d0e56f8dc6292773603d0d6aabbdd62a11ef721d1542d8";
  fs::create_directories(home / "ollama" / "blobs");
  fs::copy_file(kSeed, home / "ollama" / "blobs" / ("sha256-" + hex));
  write(home / "ollama" / "manifests" / "registry.ollama.ai" / "library" / "tiny" / "q8",
        R"({"layers":[{"mediaType":"application/vnd.ollama.image.model","digest":"sha256:)" + hex + R"("}]})");
  const fs::path lm = home / ".lmstudio" / "models" / "lmstudio-community" / "tiny-GGUF";
  fs::create_directories(lm);
  fs::copy_file(kSeed, lm / "tiny-Q8_0.gguf");
  write(lm / "mmproj-tiny-f16.gguf", "a projector");

  const std::vector<CachedModel> all = list_cached_models();
  auto find = [&](const std::string& name) -> const CachedModel* {
    for (const CachedModel& m : all)
      if (m.name == name) return &m;
    return nullptr;
  };
  std::string names;
  for (const CachedModel& m : all) names += m.name + " (" + m.type + "); ";
  ASSERT_EQ(all.size(), 7u) << names;
  const CachedModel* qwen = find("Qwen/Qwen3-0.6B");
  ASSERT_NE(qwen, nullptr) << names;
  EXPECT_EQ(qwen->source, "Hugging Face");
  EXPECT_EQ(qwen->type, "qwen3, bfloat16");
  EXPECT_EQ(qwen->bytes, st_bytes);
  EXPECT_TRUE(qwen->openable);
  const CachedModel* one = find("TinyOrg/one-GGUF");
  ASSERT_NE(one, nullptr) << names;
  EXPECT_EQ(one->type, "llama, Q8_0");
  EXPECT_EQ(one->bytes, seed_bytes);
  const CachedModel* q8 = find("TinyOrg/two-GGUF/two-Q8_0.gguf");
  const CachedModel* fake = find("TinyOrg/two-GGUF/two-Q4_K_M.gguf");
  ASSERT_TRUE(q8 && fake) << names;
  EXPECT_EQ(fs::path(q8->path), two / "two-Q8_0.gguf");
  EXPECT_TRUE(q8->openable);
  EXPECT_FALSE(fake->openable);
  EXPECT_EQ(fake->type, "not a readable GGUF file");
  const CachedModel* broken = find("Broken/repo");
  ASSERT_NE(broken, nullptr) << names;
  EXPECT_FALSE(broken->openable);
  EXPECT_NE(broken->type.find("refs/main"), std::string::npos) << broken->type;
  const CachedModel* tiny = find("tiny:q8");
  ASSERT_NE(tiny, nullptr) << names;
  EXPECT_EQ(tiny->source, "Ollama");
  EXPECT_EQ(tiny->type, "llama, Q8_0");
  EXPECT_EQ(tiny->bytes, seed_bytes);
  const CachedModel* studio = find("lmstudio-community/tiny-GGUF/tiny-Q8_0.gguf");
  ASSERT_NE(studio, nullptr) << names;
  EXPECT_EQ(studio->source, "LM Studio");
  // Each listed name opens as --model opens it.
  for (const CachedModel* m : {qwen, one, q8, tiny, studio}) EXPECT_TRUE(m == qwen || open_model_path(m->name)) << m->name;
  ::unsetenv("HF_HUB_CACHE");
  ::unsetenv("OLLAMA_MODELS");
  if (old_home) ::setenv("HOME", saved_home.c_str(), 1);
  else ::unsetenv("HOME");
  fs::remove_all(home);
}
