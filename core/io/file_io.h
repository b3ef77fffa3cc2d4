// file_io.h: files in and out of the core. Every write goes to a temporary name in the
// same directory and is renamed into place, so a failure never leaves half a file behind
// and never destroys the previous one.
#pragma once
#include <cstddef>
#include <string>

#include "core/error.h"

namespace headmap {

// Writes bytes to path atomically (temp file, fsync, rename).
Status write_file_atomic(const std::string& path, const std::string& bytes);
// The whole file, refused (BadFormat) when larger than max_bytes.
Result<std::string> read_file(const std::string& path, size_t max_bytes = size_t(1) << 31);
// An Io error for `what path`, with errno's message: "Cannot write out.png: No space left on device."
Error io_error(const std::string& what, const std::string& path);

}  // namespace headmap
