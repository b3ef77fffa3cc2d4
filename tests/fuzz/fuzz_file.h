// fuzz_file.h: a fuzz input as a file, for the readers that map one (MappedFile: safetensors,
// GGUF): the bytes in an anonymous memory file (memfd), read through its /proc/self/fd path.
#pragma once
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <string>

class FuzzFile {
 public:
  FuzzFile(const char* name, const uint8_t* data, size_t size) : fd_(memfd_create(name, MFD_CLOEXEC)) {
    size_t done = 0;
    while (fd_ >= 0 && done < size) {
      const ssize_t n = ::write(fd_, data + done, size - done);
      if (n <= 0) break;
      done += static_cast<size_t>(n);
    }
  }
  ~FuzzFile() {
    if (fd_ >= 0) ::close(fd_);
  }
  FuzzFile(const FuzzFile&) = delete;
  FuzzFile& operator=(const FuzzFile&) = delete;
  bool ok() const { return fd_ >= 0; }
  std::string path() const { return "/proc/self/fd/" + std::to_string(fd_); }

 private:
  int fd_;
};
