// cached_models_list.h: File > Open model's list of what the local caches hold (the Hugging
// Face hub cache, Ollama's library, LM Studio's folders: core/io/model_cache.h), read when the
// dialog opens, offline.
#pragma once
#include <string>
#include <vector>

#include "core/io/model_cache.h"

namespace headmap {

// The list under the dialog's path box: name, source, type and size a row, the name that
// --model takes. A click puts a model's name in *path; a double-click on one that opens
// returns true (open it now). A model that cannot open is drawn dimmed with why.
bool draw_cached_models(const std::vector<CachedModel>& models, std::string* path);

}  // namespace headmap
