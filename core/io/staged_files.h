// staged_files.h: several files put into a folder all at once or not at all (issue 35, F16).
//
// Each file is written into a staging folder inside DIR (".headmap-tmp-PID-XXXXXX", the
// temporary name of file_io.h, swept once its process is gone); commit() moves them into
// DIR, one rename each in one file system, and a rename that fails takes back those before
// it. A StagedFiles left without commit() (a failure, a cancelled export, an exception)
// removes its staging folder: no file appears in DIR. Used by `headmap-cli lesson-export`
// and the app's File > Export lesson as PNGs.
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "core/error.h"

namespace headmap {

class StagedFiles {
 public:
  // Creates DIR (and its parents) if missing, then the staging folder inside it.
  static Result<StagedFiles> open(const std::string& dir);
  StagedFiles(StagedFiles&& o) noexcept;
  StagedFiles& operator=(StagedFiles&& o) noexcept;
  StagedFiles(const StagedFiles&) = delete;
  StagedFiles& operator=(const StagedFiles&) = delete;
  ~StagedFiles();

  const std::string& dir() const { return dir_; }
  // Where to write the file NAME now (in the staging folder); commit() moves it to DIR/NAME.
  std::string stage(const std::string& name);
  // Every staged file into DIR; their final paths, in the order they were staged.
  Result<std::vector<std::string>> commit();

 private:
  StagedFiles(std::string dir, std::string staging) : dir_(std::move(dir)), staging_(std::move(staging)) {}
  std::string dir_, staging_;  // staging_ empty: committed or moved from
  std::vector<std::string> names_;
};

}  // namespace headmap
