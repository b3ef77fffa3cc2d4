// staged_files.cpp: see staged_files.h.
#include "core/io/staged_files.h"

#include <unistd.h>

#include <cerrno>
#include <filesystem>

#include "core/io/file_io.h"

namespace headmap {
namespace fs = std::filesystem;

Result<StagedFiles> StagedFiles::open(const std::string& dir) {
  if (dir.empty()) return Error{ErrorKind::InvalidArgument, "Give the folder to write into."};
  std::error_code ec;
  fs::create_directories(dir, ec);  // its own error first: "Read-only file system", not the staging folder's ENOENT (F12)
  if (ec) return Error{ErrorKind::Io, "Cannot create the folder " + dir + ": " + ec.message() + "."};
  if (!fs::is_directory(dir, ec)) return Error{ErrorKind::Io, "Cannot write into " + dir + ": it is not a folder; give a folder's name."};
  sweep_stale_temps(dir, "");
  std::string tmpl = (fs::path(dir) / (std::string(".") + kTempMarker + std::to_string(::getpid()) + "-XXXXXX")).string();
  if (!::mkdtemp(tmpl.data())) return io_error("Cannot create a folder in", dir);
  return StagedFiles(dir, tmpl);
}

StagedFiles::StagedFiles(StagedFiles&& o) noexcept : dir_(std::move(o.dir_)), staging_(std::move(o.staging_)), names_(std::move(o.names_)) {
  o.staging_.clear();
}

StagedFiles& StagedFiles::operator=(StagedFiles&& o) noexcept {
  std::swap(dir_, o.dir_);  // o's destructor removes what was ours
  std::swap(staging_, o.staging_);
  std::swap(names_, o.names_);
  return *this;
}

StagedFiles::~StagedFiles() {
  if (staging_.empty()) return;
  std::error_code ec;
  fs::remove_all(staging_, ec);
}

std::string StagedFiles::stage(const std::string& name) {
  names_.push_back(name);
  return (fs::path(staging_) / name).string();
}

Result<std::vector<std::string>> StagedFiles::commit() {
  std::vector<std::string> moved;
  for (const std::string& name : names_) {
    const std::string to = (fs::path(dir_) / name).string();
    if (::rename((fs::path(staging_) / name).c_str(), to.c_str()) != 0) {
      Error e = io_error("Cannot put in place", to);
      for (const std::string& m : moved) ::unlink(m.c_str());
      return Error{e.kind, e.message + " No file was written."};
    }
    moved.push_back(to);
  }
  std::error_code ec;
  fs::remove_all(staging_, ec);
  staging_.clear();
  return moved;
}

}  // namespace headmap
