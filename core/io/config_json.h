// config_json.h: the model configuration as JSON, the one format that view files,
// checkpoints' train options and the exports' meta.json share.
#pragma once
#include <string>

#include "core/error.h"
#include "core/model/config.h"

namespace headmap {

// Config as JSON and back (view files, checkpoints, meta.json). Unknown keys are ignored;
// missing keys keep their defaults; wrong types are BadFormat errors.
std::string config_json(const ModelConfig& cfg);
Result<ModelConfig> config_from_json(const std::string& text);

}  // namespace headmap
