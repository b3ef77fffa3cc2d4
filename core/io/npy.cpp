// npy.cpp: the .npy format, version 1.0 out, 1.0 to 3.0 in.
#include "core/io/npy.h"

#include <charconv>
#include <cstdint>
#include <cstring>
#include <sstream>

#include "core/memory_budget.h"

namespace headmap {

std::string npy_bytes(const float* data, const Shape& shape) {
  std::string tuple;
  for (size_t i = 0; i < shape.size(); ++i) tuple += (i ? ", " : "") + std::to_string(shape[i]);
  if (shape.size() == 1) tuple += ",";
  std::string dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (" + tuple + "), }";
  // Header length makes magic(6) + version(2) + len(2) + header a multiple of 64, ending in \n.
  size_t total = 10 + dict.size() + 1;
  dict += std::string((64 - total % 64) % 64, ' ') + "\n";
  std::string out("\x93NUMPY\x01\x00", 8);
  const uint16_t hl = static_cast<uint16_t>(dict.size());
  out.push_back(static_cast<char>(hl & 0xFF));
  out.push_back(static_cast<char>(hl >> 8));
  out += dict;
  out.append(reinterpret_cast<const char*>(data), static_cast<size_t>(shape_numel(shape)) * 4);
  return out;
}

Result<Tensor> parse_npy(const std::string& b) {
  auto bad = [](const std::string& m) { return Error{ErrorKind::BadFormat, "Not a float32 .npy file: " + m + "."}; };
  if (b.size() < 10 || b.compare(0, 6, "\x93NUMPY") != 0) return bad("missing the \\x93NUMPY magic");
  const int major = static_cast<unsigned char>(b[6]);
  size_t hl = 0, off = 0;
  if (major == 1) { hl = static_cast<unsigned char>(b[8]) | (static_cast<unsigned char>(b[9]) << 8); off = 10; }
  else if (major == 2 || major == 3) {
    if (b.size() < 12) return bad("truncated header");
    hl = 0;
    for (int i = 0; i < 4; ++i) hl |= static_cast<size_t>(static_cast<unsigned char>(b[8 + i])) << (8 * i);
    off = 12;
  } else return bad("unknown version " + std::to_string(major));
  if (b.size() < off + hl) return bad("truncated header");
  const std::string h = b.substr(off, hl);
  if (h.find("'descr': '<f4'") == std::string::npos) return bad("dtype is not '<f4'");
  if (h.find("'fortran_order': False") == std::string::npos) return bad("Fortran order is not supported");
  const size_t sp = h.find("'shape': (");
  if (sp == std::string::npos) return bad("no shape");
  const size_t end = h.find(')', sp);
  if (end == std::string::npos) return bad("bad shape");
  // The shape: whole numbers >= 0 only, and their product must be exactly the bytes that
  // follow, checked before anything is allocated (a header may claim (1e11,) or (-1,)).
  Shape shape;
  uint64_t numel = 1, nonzero = 1;
  std::stringstream ss(h.substr(sp + 10, end - sp - 10));
  std::string part;
  while (std::getline(ss, part, ',')) {
    const size_t first = part.find_first_not_of(' '), last = part.find_last_not_of(' ');
    if (first == std::string::npos) continue;
    const char* p = part.data() + first;
    const char* q = part.data() + last + 1;
    uint64_t d = 0;
    const auto [stop, ec] = std::from_chars(p, q, d);
    if (ec != std::errc() || stop != q || d > (uint64_t(1) << 40)) return bad("the shape holds \"" + part + "\", not a size");
    if (shape.size() >= 16) return bad("the shape has more than 16 dimensions");
    shape.push_back(static_cast<int64_t>(d));
    numel = mul_sat(numel, d);
    if (d != 0) nonzero = mul_sat(nonzero, d);
  }
  // A zero dimension makes the array empty, but the other dimensions must still multiply
  // without overflow (Tensor computes their product): (77, 300, 77773773727, 0) is refused.
  if (nonzero > (uint64_t(1) << 40)) return bad("the shape's dimensions multiply to more than 2^40 values");
  const uint64_t have = b.size() - off - hl;
  if (mul_sat(numel, 4) != have)
    return bad("the shape needs " + (numel > UINT64_MAX / 4 ? std::string("more bytes than exist") : std::to_string(numel * 4) + " bytes") +
               " of data, and the file has " + std::to_string(have));
  Tensor t(shape);
  const size_t need = static_cast<size_t>(have);
  if (need > 0) std::memcpy(t.data.data(), b.data() + off + hl, need);
  return t;
}

}  // namespace headmap
