// model_cache.h: a model named as people name it, found in the local caches other tools
// filled, offline: nothing is downloaded.
//
//   "ORG/NAME" (a Hugging Face repo id): models--ORG--NAME in $HF_HUB_CACHE, else
//     $HF_HOME/hub, else ~/.cache/huggingface/hub; refs/main names the revision, and
//     snapshots/<rev>/ is the model directory (its files are symlinks into blobs/).
//   "NAME[:TAG]" (an Ollama model, tag "latest" by default): the manifest
//     $OLLAMA_MODELS/manifests/registry.ollama.ai/library/NAME/TAG (OLLAMA_MODELS defaults to
//     ~/.ollama/models), whose layer of mediaType application/vnd.ollama.image.model names
//     the GGUF blob by digest: blobs/sha256-<hex>.
//   "ORG/NAME/FILE.gguf": that file of a Hugging Face repo's snapshot (a repo of several
//     quantizations), else LM Studio's below.
//   "PUBLISHER/REPO" not in the Hugging Face cache, or "PUBLISHER/REPO/FILE.gguf" (LM Studio):
//     ~/.lmstudio/models/PUBLISHER/REPO/, else ~/.cache/lm-studio/models/PUBLISHER/REPO/ (its
//     older place); the folder's one .gguf file (vision projectors, mmproj-*, left out), or
//     FILE.gguf when named. A folder of several is refused with their names.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/error.h"

namespace headmap {

// The directory or file a name stands for, or an Io error that lists where it looked. A
// name that is not of either form, or holds "..", is not looked up (InvalidArgument).
Result<std::string> resolve_cached_model(const std::string& name);

// One model the caches hold, as the Open dialog lists it.
struct CachedModel {
  std::string name;    // what --model and File > Open model take: ORG/NAME[/FILE.gguf], NAME:TAG, PUBLISHER/REPO/FILE.gguf
  std::string source;  // "Hugging Face", "Ollama" or "LM Studio"
  std::string path;    // the directory or file it stands for ("" when it does not resolve)
  uint64_t bytes = 0;  // its files on disk (symlinks into blobs/ followed)
  std::string type;    // "qwen3, bfloat16" (config.json), "llama, Q4_K" (GGUF: the architecture and the type holding
                       // most bytes); or why it cannot be opened
  bool openable = true;
};
// Every model in the Hugging Face caches, Ollama's library and LM Studio's folders, read from
// the disk only (GGUF headers without their arrays, config.json), at most `limit` of them,
// sorted by source then name. A Hugging Face repo holding several .gguf files is listed once per
// file (ORG/NAME/FILE.gguf). Unreadable folders are skipped; nothing is written.
std::vector<CachedModel> list_cached_models(size_t limit = 300);

// The Hugging Face hub caches searched, in order (those the environment names).
std::vector<std::string> hf_hub_caches();
// LM Studio's models folders searched, in order (under HOME).
std::vector<std::string> lmstudio_model_dirs();

}  // namespace headmap
