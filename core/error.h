// error.h: typed errors at the edges of the core, and a small Result<T>.
//
// The core never aborts on bad input. Anything a user can get wrong (a config, a file,
// a checkpoint) comes back as an Error whose message says what to do. Internal invariants
// are guarded by HM_ASSERT, whose message names the fix.
#pragma once
#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>
#include <variant>

namespace headmap {

enum class ErrorKind {
  InvalidConfig,   // d_model / num_heads / layers / context out of range
  InvalidArgument, // a request the core cannot serve (layer index out of range, ...)
  Io,              // a file could not be read or written
  BadFormat,       // a file was read but its content is not what it claims
  Mismatch,        // a checkpoint or view file does not fit the current model
  Cancelled,       // a long job was cancelled by the user
};

const char* error_kind_name(ErrorKind kind);

struct Error {
  ErrorKind kind;
  std::string message;  // one or two sentences for a person, ending with what to do
};

// A file's bytes are not what its format says (the readers' usual refusal).
inline Error bad_format(const std::string& message) { return Error{ErrorKind::BadFormat, message}; }

// Result<T>: either a value or an Error. Small on purpose; std::expected is C++23.
// [[nodiscard]]: a Result or Status that is dropped is a compile warning (an error with
// HEADMAP_WERROR), so no error is lost silently.
template <class T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}
  Result(Error error) : v_(std::move(error)) {}
  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }
  T& value() & { return std::get<0>(v_); }
  const T& value() const& { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  T* operator->() { return &std::get<0>(v_); }
  const T* operator->() const { return &std::get<0>(v_); }
  T& operator*() & { return std::get<0>(v_); }
  const T& operator*() const& { return std::get<0>(v_); }
  const Error& error() const { return std::get<1>(v_); }

 private:
  std::variant<T, Error> v_;
};

// Result<void> spelled out: success, or an Error.
struct [[nodiscard]] Status {
  Status() = default;
  Status(Error e) : error_(std::move(e)), failed_(true) {}
  bool ok() const { return !failed_; }
  explicit operator bool() const { return ok(); }
  const Error& error() const { return error_; }

 private:
  Error error_{ErrorKind::InvalidArgument, ""};
  bool failed_ = false;
};

[[noreturn]] inline void assert_fail(const char* cond, const char* file, int line, const std::string& hint) {
  std::fprintf(stderr, "headmap: internal check failed: %s (%s:%d)\n  hint: %s\n", cond, file, line, hint.c_str());
  std::abort();
}

}  // namespace headmap

// Guards the inside of the core. Inputs from users are validated before they get here,
// so a failing HM_ASSERT is a bug in headmap; the hint says which invariant broke.
#define HM_ASSERT(cond, hint)                                               \
  do {                                                                      \
    if (!(cond)) ::headmap::assert_fail(#cond, __FILE__, __LINE__, (hint)); \
  } while (0)
