// safetensors.cpp: header validation and tensor conversion (see safetensors.h).
#include "core/io/safetensors.h"

#include "core/math/half.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <nlohmann/json.hpp>
#include <set>

namespace headmap {

Result<nlohmann::json> parse_safetensors_header(const char* begin, const char* end) {
  using nlohmann::json;
  std::string duplicate;
  std::vector<std::set<std::string>> keys;  // one set per open object
  json::parser_callback_t cb = [&](int, json::parse_event_t ev, json& parsed) {
    if (ev == json::parse_event_t::object_start) keys.emplace_back();
    else if (ev == json::parse_event_t::object_end && !keys.empty()) keys.pop_back();
    else if (ev == json::parse_event_t::key && !keys.empty() && parsed.is_string() && !keys.back().insert(parsed.get<std::string>()).second)
      duplicate = parsed.get<std::string>();
    return true;
  };
  json header;
  try {
    header = json::parse(begin, end, cb);
  } catch (const json::exception& e) {
    return Error{ErrorKind::BadFormat, std::string("the header is not valid JSON (") + e.what() + ")"};
  }
  if (!duplicate.empty()) return Error{ErrorKind::BadFormat, "the header names \"" + duplicate + "\" twice"};
  return header;
}

using nlohmann::json;
static_assert(std::endian::native == std::endian::little, "safetensors stores little-endian data; add byte swapping for this CPU");

int64_t SafetensorInfo::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

namespace {
// Bytes per element of every dtype the format defines; 0 for an unknown name.
int dtype_bytes(const std::string& d) {
  static const std::map<std::string, int> sizes = {{"F64", 8}, {"F32", 4}, {"F16", 2}, {"BF16", 2}, {"I64", 8}, {"I32", 4},
                                                   {"I16", 2}, {"I8", 1},  {"U64", 8}, {"U32", 4},  {"U16", 2}, {"U8", 1},
                                                   {"BOOL", 1}, {"F8_E4M3", 1}, {"F8_E5M2", 1}};
  auto it = sizes.find(d);
  return it == sizes.end() ? 0 : it->second;
}

}  // namespace

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

Result<SafetensorsFile> SafetensorsFile::open(const std::string& path, const SafetensorsChecks& checks) {
  Result<MappedFile> mapped = MappedFile::open(path);
  if (!mapped) return mapped.error();
  SafetensorsFile f;
  f.file_ = std::move(mapped).value();
  f.bytes_ = f.file_.data();
  f.size_ = f.file_.size();
  f.origin_ = path;
  if (Status s = f.validate(checks); !s) return s.error();
  return f;
}

Result<SafetensorsFile> SafetensorsFile::view(const char* bytes, size_t size, const std::string& origin, const SafetensorsChecks& checks) {
  SafetensorsFile f;
  f.bytes_ = bytes;
  f.size_ = size;
  f.origin_ = origin;
  if (Status s = f.validate(checks); !s) return s.error();
  return f;
}

void SafetensorsFile::release(size_t begin, size_t end) const {
  if (file_.data()) file_.release(begin, end);
}

Status SafetensorsFile::validate(const SafetensorsChecks& checks) {
  SafetensorsFile& f = *this;
  const std::string& path = origin_;
  auto bad = [&](const std::string& m) { return Error{ErrorKind::BadFormat, path + ": " + m}; };
  const size_t size = size_;
  const char* bytes = bytes_;
  const uint64_t max_header = checks.max_header_bytes ? checks.max_header_bytes : kMaxSafetensorsHeaderBytes;

  // pass 1: the header length and the header itself.
  if (size < 8)
    return bad("the file has " + std::to_string(size) + " bytes, fewer than the 8-byte header length that starts a safetensors file (truncated, or not safetensors).");
  uint64_t hl = 0;
  for (int i = 0; i < 8; ++i) hl |= static_cast<uint64_t>(static_cast<unsigned char>(bytes[i])) << (8 * i);
  if (hl < 2 || hl > max_header)
    return bad("the header length field reads " + std::to_string(hl) + " bytes: the file is corrupt or not safetensors." + checks.not_ours);
  if (hl > size - 8)
    return bad("the file is truncated: its header alone needs " + std::to_string(hl) + " bytes after the first 8, and the file has only " +
               std::to_string(size - 8) + ".");
  f.data_start_ = 8 + hl;
  const uint64_t data_size = size - f.data_start_;

  Result<json> parsed = parse_safetensors_header(bytes + 8, bytes + 8 + hl);
  if (!parsed) return bad(parsed.error().message + ": the file is corrupt or not safetensors." + checks.not_ours);
  json header = std::move(*parsed);
  if (!header.is_object()) return bad("the header is not a JSON object: the file is corrupt or not safetensors." + checks.not_ours);

  // pass 2: the metadata (strings only, as the format requires).
  if (header.contains("__metadata__")) {
    const json& t = header["__metadata__"];
    if (!t.is_object()) return bad("\"__metadata__\" is not an object.");
    for (const auto& [k, v] : t.items()) {
      if (!v.is_string()) return bad("metadata \"" + k + "\" is not a string (safetensors metadata holds strings only).");
      f.metadata_[k] = v.get<std::string>();
    }
  }
  if (checks.metadata)
    if (Status s = checks.metadata(f.metadata_, data_size); !s) return s;

  // pass 3: every entry, then the byte ranges.
  struct Span {
    uint64_t begin, end;
    const std::string* name;
  };
  std::vector<Span> spans;
  for (const auto& [name, t] : header.items()) {
    if (name == "__metadata__") continue;
    if (!t.is_object() || !t.contains("dtype") || !t.contains("shape") || !t.contains("data_offsets"))
      return bad("tensor \"" + name + "\" lacks dtype, shape or data_offsets.");
    SafetensorInfo info;
    if (!t["dtype"].is_string()) return bad("tensor \"" + name + "\" has a dtype that is not a string.");
    info.dtype = t["dtype"].get<std::string>();
    const int eb = dtype_bytes(info.dtype);
    if (eb == 0) return bad("tensor \"" + name + "\" has the unknown dtype \"" + info.dtype + "\".");
    const json& sh = t["shape"];
    if (!sh.is_array() || sh.size() > 8) return bad("tensor \"" + name + "\" has a shape that is not a list of up to 8 sizes.");
    for (const json& d : sh) {
      if (!d.is_number_unsigned() || d.get<uint64_t>() > (uint64_t(1) << 32)) return bad("tensor \"" + name + "\" has a shape entry that is not a size.");
      info.shape.push_back(static_cast<int64_t>(d.get<uint64_t>()));
    }
    const json& off = t["data_offsets"];
    if (!off.is_array() || off.size() != 2 || !off[0].is_number_unsigned() || !off[1].is_number_unsigned())
      return bad("tensor \"" + name + "\" has data_offsets that are not two byte positions.");
    info.begin = off[0].get<uint64_t>();
    info.end = off[1].get<uint64_t>();
    if (checks.entry)
      if (Status s = checks.entry(name, info); !s) return s;
    if (info.begin > info.end || info.end > data_size)
      return bad("the file is truncated or corrupt: tensor \"" + name + "\" claims bytes " + std::to_string(info.begin) + ".." +
                 std::to_string(info.end) + " but the data has " + std::to_string(data_size) + " bytes.");
    // numel <= data_size here, since each dimension is bounded and the product is checked.
    uint64_t n = 1;
    for (int64_t d : info.shape) {
      if (d != 0 && n > data_size / static_cast<uint64_t>(d)) return bad("tensor \"" + name + "\" has a shape " + shape_text(info.shape) + " larger than the file.");
      n *= static_cast<uint64_t>(d);
    }
    if (info.end - info.begin != n * static_cast<uint64_t>(eb))
      return bad("tensor \"" + name + "\" has " + std::to_string(info.end - info.begin) + " bytes, but " + info.dtype + " " +
                 shape_text(info.shape) + " needs " + std::to_string(n * static_cast<uint64_t>(eb)) + ".");
    auto [it, inserted] = f.tensors_.emplace(name, std::move(info));
    spans.push_back({it->second.begin, it->second.end, &it->first});
  }
  if (checks.entries)
    if (Status s = checks.entries(f.tensors_); !s) return s;
  std::sort(spans.begin(), spans.end(), [](const Span& a, const Span& b) { return a.begin < b.begin || (a.begin == b.begin && a.end < b.end); });
  uint64_t covered = 0;
  for (const Span& s : spans) {
    if (s.begin < covered) return bad("tensor \"" + *s.name + "\" overlaps the tensor before it: the offsets are corrupt.");
    if (s.begin > covered)
      return bad("bytes " + std::to_string(covered) + ".." + std::to_string(s.begin) + " of the data belong to no tensor: the offsets are corrupt.");
    covered = s.end;
  }
  if (covered != data_size)
    return bad("the file has " + std::to_string(data_size - covered) + " bytes after the last tensor: it is corrupt, or two files were joined.");
  return Status();
}

namespace {
// Converts n elements of dtype at src into dst; returns the index of the first value that
// is not finite, or n.
template <class Convert>
int64_t convert(const char* src, int64_t n, int eb, float* dst, Convert conv) {
  bool finite = true;
  for (int64_t i = 0; i < n; ++i) {
    const float v = conv(src + i * eb);
    dst[i] = v;
    finite &= std::isfinite(v);
  }
  if (finite) return n;
  for (int64_t i = 0; i < n; ++i)
    if (!std::isfinite(dst[i])) return i;
  return n;
}

int64_t convert_any(const std::string& dtype, const char* src, int64_t n, float* dst) {
  if (dtype == "F32")
    return convert(src, n, 4, dst, [](const char* p) { float v; std::memcpy(&v, p, 4); return v; });
  if (dtype == "F16")
    return convert(src, n, 2, dst, [](const char* p) { uint16_t v; std::memcpy(&v, p, 2); return half_to_float(v); });
  return convert(src, n, 2, dst, [](const char* p) { uint16_t v; std::memcpy(&v, p, 2); return bf16_to_float(v); });
}
}  // namespace

int64_t SafetensorsFile::rows(const std::string& name) const {
  const SafetensorInfo& t = tensors_.at(name);
  const int64_t cols = t.shape.empty() ? 1 : t.shape.back();
  return cols == 0 ? 0 : t.numel() / cols;
}

Status SafetensorsFile::read_f32(const std::string& name, float* out) const {
  auto it = tensors_.find(name);
  HM_ASSERT(it != tensors_.end(), "read_f32 needs a tensor of this file: check tensors() first");
  const int64_t cols = it->second.shape.empty() ? 1 : it->second.shape.back();
  return read_block_f32(name, 0, rows(name), 0, cols, out);
}

Status SafetensorsFile::read_rows_f32(const std::string& name, int64_t col_begin, int64_t col_count, float* out) const {
  return read_block_f32(name, 0, rows(name), col_begin, col_count, out);
}

Status SafetensorsFile::read_block_f32(const std::string& name, int64_t row_begin, int64_t row_count, int64_t col_begin, int64_t col_count,
                                       float* out) const {
  auto it = tensors_.find(name);
  HM_ASSERT(it != tensors_.end(), "read_block_f32 needs a tensor of this file: check tensors() first");
  const SafetensorInfo& t = it->second;
  if (t.dtype != "F32" && t.dtype != "F16" && t.dtype != "BF16")
    return Error{ErrorKind::BadFormat, path() + ": tensor \"" + name + "\" has dtype " + t.dtype + "; headmap reads F32, F16 and BF16 weights."};
  const int eb = t.dtype == "F32" ? 4 : 2;
  const int64_t cols = t.shape.empty() ? 1 : t.shape.back();
  HM_ASSERT(col_begin >= 0 && col_count >= 0 && col_begin + col_count <= cols, "the column block must lie inside the tensor");
  HM_ASSERT(row_begin >= 0 && row_count >= 0 && row_begin + row_count <= rows(name), "the row block must lie inside the tensor");
  if (row_count == 0 || col_count == 0) return Status();
  const char* base = bytes_ + data_start_ + t.begin;
  // Rows in chunks of ~8 MB of file, each released once converted.
  const int64_t rows_per_chunk = std::max<int64_t>(1, (int64_t(8) << 20) / (cols * eb));
  const int64_t row_end = row_begin + row_count;
  for (int64_t r0 = row_begin; r0 < row_end; r0 += rows_per_chunk) {
    const int64_t r1 = std::min(row_end, r0 + rows_per_chunk);
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t bad = convert_any(t.dtype, base + (r * cols + col_begin) * eb, col_count, out + (r - row_begin) * col_count);
      if (bad < col_count) {
        const int64_t flat = r * cols + col_begin + bad;
        return Error{ErrorKind::BadFormat, path() + ": tensor \"" + name + "\" holds a value that is not finite (NaN or infinity) at element " +
                                               std::to_string(flat) + "."};
      }
    }
    release(static_cast<size_t>(data_start_ + t.begin + r0 * cols * eb), static_cast<size_t>(data_start_ + t.begin + r1 * cols * eb));
  }
  return Status();
}

const uint16_t* SafetensorsFile::data16(const std::string& name) const {
  auto it = tensors_.find(name);
  HM_ASSERT(it != tensors_.end(), "data16 needs a tensor of this file: check tensors() first");
  const SafetensorInfo& t = it->second;
  if (t.dtype != "BF16" && t.dtype != "F16") return nullptr;
  const char* p = bytes_ + data_start_ + t.begin;
  if (reinterpret_cast<uintptr_t>(p) % alignof(uint16_t) != 0) return nullptr;
  return reinterpret_cast<const uint16_t*>(p);
}

void SafetensorsFile::release(const std::string& name) const {
  const SafetensorInfo& t = tensors_.at(name);
  release(static_cast<size_t>(data_start_ + t.begin), static_cast<size_t>(data_start_ + t.end));
}

void SafetensorsFile::release_rows(const std::string& name, int64_t r0, int64_t r1) const {
  const SafetensorInfo& t = tensors_.at(name);
  const int64_t n = rows(name);
  if (n <= 0 || r0 >= r1) return;
  const uint64_t row = (t.end - t.begin) / static_cast<uint64_t>(n);  // bytes per row
  release(static_cast<size_t>(data_start_ + t.begin + static_cast<uint64_t>(r0) * row), static_cast<size_t>(data_start_ + t.begin + static_cast<uint64_t>(r1) * row));
}

}  // namespace headmap
