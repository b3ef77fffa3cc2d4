#include "app/common/assets.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>

namespace headmap {
namespace fs = std::filesystem;

static std::string executable_dir() {
  std::error_code ec;
  const fs::path p = fs::read_symlink("/proc/self/exe", ec);
  return ec ? std::string(".") : p.parent_path().string();
}

std::string assets_dir() {
  if (const char* env = std::getenv("HEADMAP_ASSETS"); env && *env) return env;
  std::error_code ec;
  if (fs::is_directory(HEADMAP_ASSETS_DIR, ec)) return HEADMAP_ASSETS_DIR;
  return executable_dir() + "/../share/headmap/assets";
}

std::string asset_path(const std::string& relative) { return assets_dir() + "/" + relative; }

std::string shaders_dir() {
  if (const char* env = std::getenv("HEADMAP_SHADERS"); env && *env) return env;
  std::error_code ec;
  if (fs::is_directory(HEADMAP_SHADERS_DIR, ec)) return HEADMAP_SHADERS_DIR;
  return executable_dir() + "/../share/headmap/shaders";
}

}  // namespace headmap
