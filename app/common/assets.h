// assets.h: where fonts, presets and checkpoints live.
// Order: $HEADMAP_ASSETS, then the source tree's assets/ (compiled in), then
// <executable>/../share/headmap/assets.
#pragma once
#include <string>

namespace headmap {

std::string assets_dir();
std::string asset_path(const std::string& relative);  // assets_dir() + "/" + relative
std::string shaders_dir();                             // $HEADMAP_SHADERS or the source tree's shaders/

}  // namespace headmap
