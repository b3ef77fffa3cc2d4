#include "core/io/mapped_file.h"

#include "core/io/file_io.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace headmap {

Result<MappedFile> MappedFile::open(const std::string& path) {
  Result<int> opened = open_regular_file(path);  // never blocks on a FIFO
  if (!opened) return opened.error();
  const int fd = *opened;
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    ::close(fd);
    return Error{ErrorKind::Io, "Cannot read " + path + ": " + std::strerror(errno) + "."};
  }
  MappedFile m;
  m.path_ = path;
  m.size_ = static_cast<size_t>(st.st_size);
  if (m.size_ > 0) {
    void* p = ::mmap(nullptr, m.size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      const int e = errno;
      ::close(fd);
      return Error{ErrorKind::Io, "Cannot map " + path + " into memory: " + std::strerror(e) + "."};
    }
    ::madvise(p, m.size_, MADV_SEQUENTIAL);
    m.data_ = static_cast<const char*>(p);
  }
  ::close(fd);  // the mapping keeps the file open
  return m;
}

MappedFile::MappedFile(MappedFile&& o) noexcept : data_(o.data_), size_(o.size_), path_(std::move(o.path_)) {
  o.data_ = nullptr;
  o.size_ = 0;
}

MappedFile& MappedFile::operator=(MappedFile&& o) noexcept {
  if (this != &o) {
    if (data_) ::munmap(const_cast<char*>(data_), size_);
    data_ = o.data_;
    size_ = o.size_;
    path_ = std::move(o.path_);
    o.data_ = nullptr;
    o.size_ = 0;
  }
  return *this;
}

MappedFile::~MappedFile() {
  if (data_) ::munmap(const_cast<char*>(data_), size_);
}

void MappedFile::release(size_t begin, size_t end) const {
  if (!data_ || begin >= end) return;
  const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  // Whole pages inside [begin, end) only: a neighbour's bytes may still be needed.
  const size_t b = (begin + page - 1) / page * page, e = std::min(end, size_) / page * page;
  if (b < e) ::madvise(const_cast<char*>(data_) + b, e - b, MADV_DONTNEED);
}

}  // namespace headmap
