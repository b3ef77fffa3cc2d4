// file_io.h: files in and out of the core, treating both as hostile.
//
// Reading: only regular files are read (a FIFO, a device or a directory gets a message,
// and a FIFO never blocks), and a file larger than the caller's limit is refused before
// anything is allocated.
//
// Writing: write_file_atomic never leaves half a file and never a temporary file, even
// when the process is killed (kill -9) mid-write. On Linux the bytes go to an unnamed file
// (O_TMPFILE) that only gets a name once it is complete: linked straight to the target when
// it is new, else to a temporary name that is renamed over the target at once. Where
// O_TMPFILE is missing, a named temporary file is used, and stale ones left by dead
// processes are swept at the next write into that directory.
//   - The target must be a regular file or absent: a device (/dev/full), a FIFO or a
//     directory is refused, never replaced.
//   - A symlink is followed: the file it points to is replaced atomically, and the link
//     stays a link.
//   - An existing file keeps its permission bits; a new file gets 0666 minus the umask.
#pragma once
#include <cstddef>
#include <string>

#include "core/error.h"

namespace headmap {

// Writes bytes to path atomically (see above).
Status write_file_atomic(const std::string& path, const std::string& bytes);
// The whole file, refused (BadFormat) when larger than max_bytes; Io for a file that is
// missing, unreadable, or not a regular file.
Result<std::string> read_file(const std::string& path, size_t max_bytes = size_t(1) << 31);
// Opens a regular file read-only without ever blocking; Io error with a message otherwise.
// The caller owns the descriptor.
Result<int> open_regular_file(const std::string& path);
// An Io error for `what path`, with errno's message: "Cannot write out.png: No space left on device."
Error io_error(const std::string& what, const std::string& path);
// The message for a path that exists but is not a regular file (kind from its st_mode).
Error not_regular_error(const std::string& path, unsigned mode, bool writing);
// The suffix of every temporary name headmap gives a file or directory while writing it:
// ".NAME.headmap-tmp-PID-XXXXXX". Only names with a dead PID are ever swept.
inline constexpr const char* kTempMarker = ".headmap-tmp-";
// The process's umask, read without changing it.
unsigned current_umask();
// Removes this directory's temporary names for `name` whose writer process is gone.
void sweep_stale_temps(const std::string& dir, const std::string& name);

}  // namespace headmap
