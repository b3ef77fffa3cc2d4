#include "core/error.h"

namespace headmap {

const char* error_kind_name(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::InvalidConfig: return "invalid config";
    case ErrorKind::InvalidArgument: return "invalid argument";
    case ErrorKind::Io: return "i/o error";
    case ErrorKind::BadFormat: return "bad format";
    case ErrorKind::Mismatch: return "mismatch";
    case ErrorKind::Cancelled: return "cancelled";
  }
  return "error";
}

}  // namespace headmap
