// mapped_file.h: a read-only memory map of a regular file (POSIX mmap), for large weight
// files that are converted tensor by tensor without a second copy on the heap.
#pragma once
#include <cstddef>
#include <string>

#include "core/error.h"

namespace headmap {

class MappedFile {
 public:
  // Maps the whole file read-only. Errors (Io): missing, unreadable, a directory or another
  // non-regular file. An empty file maps to size() == 0 and data() == nullptr.
  static Result<MappedFile> open(const std::string& path);

  MappedFile() = default;
  MappedFile(MappedFile&& o) noexcept;
  MappedFile& operator=(MappedFile&& o) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  ~MappedFile();

  const char* data() const { return data_; }
  size_t size() const { return size_; }
  const std::string& path() const { return path_; }

  // Drops the pages of bytes [begin, end) from this process (the page cache keeps them), so
  // a file read once from start to end never holds more than a chunk in resident memory.
  void release(size_t begin, size_t end) const;

 private:
  const char* data_ = nullptr;
  size_t size_ = 0;
  std::string path_;
};

}  // namespace headmap
