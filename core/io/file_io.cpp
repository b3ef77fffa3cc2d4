// file_io.cpp: whole-file reads and atomic writes.
#include "core/io/file_io.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <vector>

namespace headmap {
namespace fs = std::filesystem;

Error io_error(const std::string& what, const std::string& path) {
  return Error{ErrorKind::Io, what + " " + path + ": " + std::strerror(errno) + "."};
}

Status write_file_atomic(const std::string& path, const std::string& bytes) {
  const fs::path target(path);
  const fs::path dir = target.has_parent_path() ? target.parent_path() : fs::path(".");
  std::string tmpl = (dir / ("." + target.filename().string() + ".tmp-XXXXXX")).string();
  std::vector<char> name(tmpl.begin(), tmpl.end());
  name.push_back('\0');
  const int fd = mkstemp(name.data());
  if (fd < 0) return io_error("Cannot create a file in", dir.string());
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      Error e = io_error("Cannot write", path);
      ::close(fd);
      ::unlink(name.data());
      return e;
    }
    done += static_cast<size_t>(n);
  }
  fchmod(fd, 0644);
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    Error e = io_error("Cannot finish writing", path);
    ::unlink(name.data());
    return e;
  }
  if (std::rename(name.data(), path.c_str()) != 0) {
    Error e = io_error("Cannot replace", path);
    ::unlink(name.data());
    return e;
  }
  return Status();
}

Result<std::string> read_file(const std::string& path, size_t max_bytes) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return Error{ErrorKind::Io, "Cannot open " + path + ": " + std::strerror(errno) + "."};
  f.seekg(0, std::ios::end);
  const std::streamoff size = f.tellg();
  if (size < 0) return Error{ErrorKind::Io, "Cannot read " + path + "."};
  if (static_cast<size_t>(size) > max_bytes)
    return Error{ErrorKind::BadFormat, path + " is larger than " + std::to_string(max_bytes >> 20) + " MiB; is it the right file?"};
  std::string bytes(static_cast<size_t>(size), '\0');
  f.seekg(0);
  f.read(bytes.data(), size);
  if (!f) return Error{ErrorKind::Io, "Cannot read " + path + "."};
  return bytes;
}

}  // namespace headmap
