// assets.h: where the executables find their data (fonts, presets, checkpoints, corpus,
// lessons), relative to themselves so that a build tree, an install prefix and an
// unpacked .deb can each be moved anywhere.
//
// The data directory holds assets/. It is, in order:
//   1. $HEADMAP_DATA_DIR, when set and not empty (used as given, even if it is wrong);
//   2. the build tree: a file `headmap-data-dir` next to the executable, written by CMake,
//      holds the source tree's path relative to the executable's directory;
//   3. the install: <executable's directory>/../share/headmap (GNUInstallDirs' layout,
//      the relative path from CMAKE_INSTALL_BINDIR to CMAKE_INSTALL_DATADIR/headmap).
// No absolute path is compiled in.
#pragma once
#include <string>

namespace headmap {

struct DataDir {
  std::string path;  // the directory holding assets/
  std::string how;   // which rule found it, for --version
  bool found = true; // false: no rule matched; path is the install location that was tried
};

const DataDir& data_dir();                             // looked up once, then cached
std::string assets_dir();                              // data_dir().path + "/assets"
std::string asset_path(const std::string& relative);  // assets_dir() + "/" + relative

// What --version prints: "<program> <version>" and a line naming the data directory.
std::string version_text(const std::string& program);

}  // namespace headmap
