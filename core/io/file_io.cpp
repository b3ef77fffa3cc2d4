// file_io.cpp: whole-file reads and atomic writes (see file_io.h for the guarantees).
#include "core/io/file_io.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <vector>

#include "core/memory_budget.h"

namespace headmap {
namespace fs = std::filesystem;

Error io_error(const std::string& what, const std::string& path) {
  return Error{ErrorKind::Io, what + " " + path + ": " + std::strerror(errno) + "."};
}

Error not_regular_error(const std::string& path, unsigned mode, bool writing) {
  const char* kind = S_ISDIR(mode) ? "a directory" : S_ISFIFO(mode) ? "a FIFO (named pipe)" : S_ISCHR(mode) || S_ISBLK(mode) ? "a device"
                     : S_ISSOCK(mode) ? "a socket" : "not a regular file";
  return Error{ErrorKind::Io, path + " is " + kind + ", not a regular file: " +
                                  (writing ? "headmap writes regular files only; give a file name."
                                           : "headmap reads regular files only; give a file (save piped data to a file first).")};
}

// ---- reading ---------------------------------------------------------------------------
Result<int> open_regular_file(const std::string& path) {
  // O_NONBLOCK: opening a FIFO without a writer would otherwise wait forever. It changes
  // nothing for the regular files that pass the check below.
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) return io_error("Cannot open", path);
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    Error e = io_error("Cannot read", path);
    ::close(fd);
    return e;
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return not_regular_error(path, st.st_mode, false);
  }
  return fd;
}

Result<std::string> read_file(const std::string& path, size_t max_bytes) {
  Result<int> fd = open_regular_file(path);
  if (!fd) return fd.error();
  struct stat st {};
  if (::fstat(*fd, &st) != 0 || st.st_size < 0) {
    Error e = io_error("Cannot read", path);
    ::close(*fd);
    return e;
  }
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  if (size > max_bytes) {
    ::close(*fd);
    return Error{ErrorKind::BadFormat, path + " is larger than " + std::to_string(max_bytes >> 20) + " MiB; is it the right file?"};
  }
  if (Status s = check_memory(size, "Reading " + path, "raise HEADMAP_MEMORY_BUDGET or use a smaller file"); !s) {
    ::close(*fd);
    return s.error();
  }
  std::string bytes(static_cast<size_t>(size), '\0');
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::read(*fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      Error e = io_error("Cannot read", path);
      ::close(*fd);
      return e;
    }
    if (n == 0) break;  // the file shrank while we read it: keep what is there
    done += static_cast<size_t>(n);
  }
  bytes.resize(done);
  ::close(*fd);
  return bytes;
}

// ---- writing ---------------------------------------------------------------------------
namespace {

std::string temp_name(const std::string& name) {
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  static const char* kAlphabet = "abcdefghijklmnopqrstuvwxyz0123456789";
  std::string s = "." + name + kTempMarker + std::to_string(::getpid()) + "-";
  for (int i = 0; i < 8; ++i) s += kAlphabet[rng() % 36];
  return s;
}

// The file a path names: symlinks followed (up to 40), as open(2) would.
Result<fs::path> resolve_links(fs::path p) {
  for (int hops = 0; hops < 40; ++hops) {
    struct stat st {};
    if (::lstat(p.c_str(), &st) != 0 || !S_ISLNK(st.st_mode)) return p;
    std::error_code ec;
    const fs::path to = fs::read_symlink(p, ec);
    if (ec) return Error{ErrorKind::Io, "Cannot follow the link " + p.string() + ": " + ec.message() + "."};
    p = to.is_absolute() ? to : p.parent_path() / to;
  }
  return Error{ErrorKind::Io, "Cannot write " + p.string() + ": too many levels of symbolic links."};
}

// The directory entry itself, so that the new name survives a power cut too.
void sync_dir(const fs::path& dir) {
  const int d = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (d < 0) return;
  (void)::fsync(d);
  ::close(d);
}

bool write_all(int fd, const std::string& bytes) {
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

}  // namespace

// Read without changing it (umask(2) would race with other threads): Linux reports it in
// /proc/self/status.
unsigned current_umask() {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("Umask:", 0) == 0) return static_cast<unsigned>(std::strtoul(line.c_str() + 6, nullptr, 8)) & 0777;
  return 022;
}

void sweep_stale_temps(const std::string& dir, const std::string& name) {
  const std::string prefix = "." + name + kTempMarker;
  std::error_code ec;
  for (fs::directory_iterator it(dir.empty() ? "." : dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string f = it->path().filename().string();
    if (f.rfind(prefix, 0) != 0) continue;
    const long pid = std::strtol(f.c_str() + prefix.size(), nullptr, 10);
    if (pid <= 0 || pid == ::getpid()) continue;  // not ours, or ours and in use by another thread
    if (::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH) {
      std::error_code rm;
      fs::remove_all(it->path(), rm);
    }
  }
}

Status write_file_atomic(const std::string& path, const std::string& bytes) {
  if (path.empty()) return Error{ErrorKind::Io, "Cannot write a file with an empty name: give a file name."};
  Result<fs::path> resolved = resolve_links(fs::path(path));
  if (!resolved) return resolved.error();
  const fs::path target = *resolved;
  const std::string name = target.filename().string();
  if (name.empty() || name == "." || name == "..") return Error{ErrorKind::Io, "Cannot write " + path + ": it names a directory; give a file name."};
  const fs::path dir = target.has_parent_path() ? target.parent_path() : fs::path(".");

  // The target: absent, or a regular file whose permission bits we keep.
  struct stat st {};
  bool exists = false;
  mode_t mode = 0;
  if (::stat(target.c_str(), &st) == 0) {
    if (!S_ISREG(st.st_mode)) return not_regular_error(path, st.st_mode, true);
    exists = true;
    mode = st.st_mode & 07777;
  } else if (errno != ENOENT) {
    return io_error("Cannot write", path);
  }
  sweep_stale_temps(dir.string(), name);

  // pass 1: the bytes, in an unnamed file when the kernel and file system allow it.
  bool named = false;  // true: the fallback, a named temporary file
  std::string tmp = (dir / temp_name(name)).string();
  int fd = ::open(dir.c_str(), O_TMPFILE | O_WRONLY | O_CLOEXEC, 0666);  // the umask applies
  if (fd < 0 && (errno == EOPNOTSUPP || errno == EISDIR || errno == EINVAL)) {
    fd = ::open(tmp.c_str(), O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0600);
    named = true;
    if (fd >= 0 && !exists) mode = 0666 & ~current_umask();
  }
  if (fd < 0) return io_error("Cannot create a file in", dir.string());
  auto fail = [&](const char* what) {
    Error e = io_error(what, path);
    ::close(fd);
    if (named) ::unlink(tmp.c_str());
    return e;
  };
  if (!write_all(fd, bytes)) return fail("Cannot write");
  if ((exists || named) && ::fchmod(fd, mode) != 0) return fail("Cannot set the permissions of");
  if (::fsync(fd) != 0) return fail("Cannot finish writing");

  // pass 2: give it a name. A new target gets its name directly; an existing one is
  // replaced by rename(2), which is atomic.
  if (!named) {
    const std::string proc = "/proc/self/fd/" + std::to_string(fd);
    if (!exists && ::linkat(AT_FDCWD, proc.c_str(), AT_FDCWD, target.c_str(), AT_SYMLINK_FOLLOW) == 0) {
      ::close(fd);
      sync_dir(dir);
      return Status();
    }
    if (!exists && errno != EEXIST) return fail("Cannot create");
    if (::linkat(AT_FDCWD, proc.c_str(), AT_FDCWD, tmp.c_str(), AT_SYMLINK_FOLLOW) != 0) return fail("Cannot create");
    named = true;
  }
  if (::close(fd) != 0) {
    Error e = io_error("Cannot finish writing", path);
    ::unlink(tmp.c_str());
    return e;
  }
  if (std::rename(tmp.c_str(), target.c_str()) != 0) {
    Error e = io_error("Cannot replace", path);
    ::unlink(tmp.c_str());
    return e;
  }
  sync_dir(dir);
  return Status();
}

}  // namespace headmap
