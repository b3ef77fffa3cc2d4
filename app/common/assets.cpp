#include "app/common/assets.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>

namespace headmap {
namespace fs = std::filesystem;

static fs::path executable_dir() {
  std::error_code ec;
  const fs::path p = fs::read_symlink("/proc/self/exe", ec);
  return ec ? fs::current_path(ec) : p.parent_path();
}

static std::string tidy(const fs::path& p) {
  std::error_code ec;
  const fs::path c = fs::weakly_canonical(p, ec);
  return (ec ? p.lexically_normal() : c).string();
}

static bool holds_data(const fs::path& dir) {
  std::error_code ec;
  return fs::is_directory(dir / "assets", ec);
}

static DataDir find_data_dir() {
  if (const char* env = std::getenv("HEADMAP_DATA_DIR"); env && *env)
    return {tidy(env), "from $HEADMAP_DATA_DIR", holds_data(env)};
  const fs::path exe = executable_dir();
  // The build tree: CMake writes the source tree's path, relative to the executable.
  if (std::ifstream marker(exe / "headmap-data-dir"); marker) {
    std::string rel;
    std::getline(marker, rel);
    if (!rel.empty() && holds_data(exe / rel))
      return {tidy(exe / rel), "the source tree, named by headmap-data-dir beside the executable", true};
  }
  const fs::path installed = exe / HEADMAP_INSTALL_DATA_RELATIVE;
  if (holds_data(installed)) return {tidy(installed), std::string("installed, ") + HEADMAP_INSTALL_DATA_RELATIVE + " from the executable", true};
  return {tidy(installed), "NOT FOUND: no assets/ there; set HEADMAP_DATA_DIR", false};
}

const DataDir& data_dir() {
  static const DataDir d = find_data_dir();
  return d;
}

std::string assets_dir() { return data_dir().path + "/assets"; }
std::string asset_path(const std::string& relative) { return assets_dir() + "/" + relative; }

std::string version_text(const std::string& program) {
  const DataDir& d = data_dir();
  return program + " " HEADMAP_VERSION "\ndata: " + d.path + " (" + d.how + ")";
}

}  // namespace headmap
