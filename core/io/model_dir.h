// model_dir.h: which files a model directory may name (issue 35, F14), the rule's one home.
//
// A model directory's files stay inside it. A file there may be a symbolic link only when
// the link leads (every link followed) to a file inside the same directory, or, the one
// exception, into the blobs/ folder of the Hugging Face cache repository the directory is a
// snapshot of: the cache's own layout (~/.cache/huggingface/hub/models--ORG--NAME/
// snapshots/REV/config.json -> ../../blobs/SHA). A link anywhere else (config.json to
// /etc/passwd, a shard to another user's file) is refused, naming the file and where it
// leads. Every reader of a model directory's files (config.json, the shard index and its
// shards, tokenizer.json, vocab.json, merges.txt, vocab.txt, tokenizer_config.json) asks
// here before it opens one.
#pragma once
#include <filesystem>

#include "core/error.h"

namespace headmap {

// OK when `file` (a path inside `dir`, existing or not) may be read as part of the model in `dir`.
Status check_model_file(const std::filesystem::path& dir, const std::filesystem::path& file);

}  // namespace headmap
