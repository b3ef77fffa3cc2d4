// gguf.cpp: the GGUF reader (see gguf.h).
// Sections: [types] [cursor] [values] [file]
#include "core/io/gguf.h"

#include "core/memory_budget.h"

#include <algorithm>
#include <cstring>
#include <limits>

namespace headmap {

// ---- [types] ---------------------------------------------------------------------------
const char* gguf_value_type_name(GgufValueType t) {
  static const char* names[] = {"u8", "i8", "u16", "i16", "u32", "i32", "f32", "bool", "string", "array", "u64", "i64", "f64"};
  const auto i = static_cast<uint32_t>(t);
  return i < 13 ? names[i] : "unknown";
}

const GgmlTypeInfo* ggml_type_info(uint32_t id) {
  // ggml.h's enum ggml_type and ggml.c's type traits (block size, bytes per block).
  static const GgmlTypeInfo table[] = {
      {0, "F32", 1, 4},        {1, "F16", 1, 2},          {2, "Q4_0", 32, 18},      {3, "Q4_1", 32, 20},
      {6, "Q5_0", 32, 22},     {7, "Q5_1", 32, 24},       {8, "Q8_0", 32, 34},      {9, "Q8_1", 32, 36},
      {10, "Q2_K", 256, 84},   {11, "Q3_K", 256, 110},    {12, "Q4_K", 256, 144},   {13, "Q5_K", 256, 176},
      {14, "Q6_K", 256, 210},  {15, "Q8_K", 256, 292},    {16, "IQ2_XXS", 256, 66}, {17, "IQ2_XS", 256, 74},
      {18, "IQ3_XXS", 256, 98}, {19, "IQ1_S", 256, 50},   {20, "IQ4_NL", 32, 18},   {21, "IQ3_S", 256, 110},
      {22, "IQ2_S", 256, 82},  {23, "IQ4_XS", 256, 136},  {24, "I8", 1, 1},         {25, "I16", 1, 2},
      {26, "I32", 1, 4},       {27, "I64", 1, 8},         {28, "F64", 1, 8},        {29, "IQ1_M", 256, 56},
      {30, "BF16", 1, 2},      {34, "TQ1_0", 256, 54},    {35, "TQ2_0", 256, 66},   {39, "MXFP4", 32, 17},
  };
  for (const GgmlTypeInfo& t : table)
    if (t.id == id) return &t;
  return nullptr;
}

bool GgufValue::is_int() const {
  switch (type) {
    case GgufValueType::U8: case GgufValueType::I8: case GgufValueType::U16: case GgufValueType::I16:
    case GgufValueType::U32: case GgufValueType::I32: case GgufValueType::U64: case GgufValueType::I64: case GgufValueType::Bool:
      return true;
    default:
      return false;
  }
}

bool GgufValue::as_int(int64_t lo, int64_t hi, int64_t* out) const {
  if (!is_int()) return false;
  if (type == GgufValueType::U64 || type == GgufValueType::U32 || type == GgufValueType::U16 || type == GgufValueType::U8) {
    if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return false;
    *out = static_cast<int64_t>(u);
  } else {
    *out = i;
  }
  return *out >= lo && *out <= hi;
}

bool GgufValue::as_number(double* out) const {
  if (is_float()) return *out = f, true;
  if (!is_int()) return false;
  const bool unsigned_type = type == GgufValueType::U64 || type == GgufValueType::U32 || type == GgufValueType::U16 || type == GgufValueType::U8;
  *out = unsigned_type ? static_cast<double>(u) : static_cast<double>(i);
  return true;
}

int64_t GgufTensorInfo::numel() const {
  int64_t n = 1;
  for (int64_t d : ne) n *= d;  // checked against overflow when read
  return n;
}

// ---- [cursor] --------------------------------------------------------------------------
namespace {
// Reads little-endian values from [p, end); every read checks the bytes left first.
struct Cursor {
  const char* begin;
  const char* p;
  const char* end;
  uint64_t left() const { return static_cast<uint64_t>(end - p); }
  uint64_t pos() const { return static_cast<uint64_t>(p - begin); }
  template <class T>
  bool get(T* out) {
    if (left() < sizeof(T)) return false;
    std::memcpy(out, p, sizeof(T));  // the format is little-endian, as every machine headmap runs on
    p += sizeof(T);
    return true;
  }
  bool str(std::string* out) {
    uint64_t n = 0;
    if (!get(&n) || n > left()) return false;
    out->assign(p, static_cast<size_t>(n));
    p += n;
    return true;
  }
};

// The fewest bytes one value of type t takes in the file (a string: its u64 length; an
// array: its element type and count), so a count can be checked before it is allocated.
uint64_t min_bytes(GgufValueType t) {
  switch (t) {
    case GgufValueType::U8: case GgufValueType::I8: case GgufValueType::Bool: return 1;
    case GgufValueType::U16: case GgufValueType::I16: return 2;
    case GgufValueType::U32: case GgufValueType::I32: case GgufValueType::F32: return 4;
    case GgufValueType::U64: case GgufValueType::I64: case GgufValueType::F64: case GgufValueType::String: return 8;
    case GgufValueType::Array: return 12;
  }
  return 1;
}
}  // namespace

// ---- [values] --------------------------------------------------------------------------
// One value of type t at c into v; an error message (empty on success).
// held: the bytes the values read so far take in memory, strings and arrays (checked against
// the budget, so an array of a billion one-byte elements, or gigabytes of strings, are refused
// rather than copied).
// keep: false steps over an array's elements (each still read and checked) without keeping them.
static std::string read_value(Cursor& c, GgufValueType t, GgufValue& v, int depth, uint64_t* held, bool keep) {
  v.type = t;
  auto need = [&](bool ok) { return ok ? std::string() : std::string("the file ends inside a ") + gguf_value_type_name(t) + " value"; };
  switch (t) {
    case GgufValueType::U8: { uint8_t x; if (!c.get(&x)) return need(false); v.u = x; v.i = x; return ""; }
    case GgufValueType::I8: { int8_t x; if (!c.get(&x)) return need(false); v.i = x; return ""; }
    case GgufValueType::U16: { uint16_t x; if (!c.get(&x)) return need(false); v.u = x; v.i = x; return ""; }
    case GgufValueType::I16: { int16_t x; if (!c.get(&x)) return need(false); v.i = x; return ""; }
    case GgufValueType::U32: { uint32_t x; if (!c.get(&x)) return need(false); v.u = x; v.i = x; return ""; }
    case GgufValueType::I32: { int32_t x; if (!c.get(&x)) return need(false); v.i = x; return ""; }
    case GgufValueType::U64: { uint64_t x; if (!c.get(&x)) return need(false); v.u = x; return ""; }
    case GgufValueType::I64: { int64_t x; if (!c.get(&x)) return need(false); v.i = x; return ""; }
    case GgufValueType::F32: { float x; if (!c.get(&x)) return need(false); v.f = x; return ""; }
    case GgufValueType::F64: { double x; if (!c.get(&x)) return need(false); v.f = x; return ""; }
    case GgufValueType::Bool: {
      uint8_t x;
      if (!c.get(&x)) return need(false);
      if (x > 1) return "a bool holds " + std::to_string(x) + " (only 0 or 1 are booleans)";
      v.i = x;
      return "";
    }
    case GgufValueType::String: {
      if (!c.str(&v.s)) return need(false);
      if (depth > 0 && !keep) return "";  // an element stepped over: not held
      *held += v.s.size();
      if (Status s = check_memory(*held, "GGUF metadata", "this file's metadata is implausibly large; is it a GGUF file?"); !s) return s.error().message;
      return "";
    }
    case GgufValueType::Array: {
      if (depth >= GgufFile::kMaxArrayDepth) return "arrays are nested deeper than " + std::to_string(GgufFile::kMaxArrayDepth);
      uint32_t et = 0;
      uint64_t n = 0;
      if (!c.get(&et) || !c.get(&n)) return need(false);
      if (et > static_cast<uint32_t>(GgufValueType::F64)) return "an array's element type " + std::to_string(et) + " is not a GGUF value type (0-12)";
      v.elem = static_cast<GgufValueType>(et);
      if (n > c.left() / min_bytes(v.elem))
        return "an array claims " + std::to_string(n) + " " + gguf_value_type_name(v.elem) + " elements but only " + std::to_string(c.left()) + " bytes follow";
      if (!keep) {
        GgufValue element;
        for (uint64_t k = 0; k < n; ++k)
          if (std::string e = read_value(c, v.elem, element, depth + 1, held, false); !e.empty()) return e + " (element " + std::to_string(k) + ")";
        return "";
      }
      *held += n * sizeof(GgufValue);
      if (Status s = check_memory(*held, "GGUF metadata", "this file's metadata is implausibly large; is it a GGUF file?"); !s) return s.error().message;
      v.arr.resize(static_cast<size_t>(n));
      for (uint64_t k = 0; k < n; ++k)
        if (std::string e = read_value(c, v.elem, v.arr[static_cast<size_t>(k)], depth + 1, held, true); !e.empty()) return e + " (element " + std::to_string(k) + ")";
      return "";
    }
  }
  return "value type " + std::to_string(static_cast<uint32_t>(t)) + " is not a GGUF value type (0-12)";
}

// ---- [file] ----------------------------------------------------------------------------
Result<GgufFile> GgufFile::open(const std::string& path, GgufArrays arrays) {
  Result<MappedFile> m = MappedFile::open(path);
  if (!m) return m.error();
  GgufFile f;
  f.file_ = std::move(*m);
  f.bytes_ = f.file_.data();
  f.size_ = f.file_.size();
  f.origin_ = path;
  if (Status s = f.parse(arrays); !s) return s.error();
  return f;
}

Result<GgufFile> GgufFile::view(const char* bytes, size_t size, const std::string& origin, GgufArrays arrays) {
  GgufFile f;
  f.bytes_ = bytes;
  f.size_ = size;
  f.origin_ = origin;
  if (Status s = f.parse(arrays); !s) return s.error();
  return f;
}

const GgufValue* GgufFile::find(const std::string& key) const {
  auto it = kv_.find(key);
  return it == kv_.end() ? nullptr : &it->second;
}

void GgufFile::drop_metadata_arrays() {
  for (auto& [key, v] : kv_) std::vector<GgufValue>().swap(v.arr);
}

const GgufTensorInfo* GgufFile::tensor(const std::string& name) const {
  auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : &tensors_[it->second];
}

Status GgufFile::parse(GgufArrays arrays) {
  auto bad = [&](const std::string& m) { return Error{ErrorKind::BadFormat, origin_ + ": " + m + "."}; };
  Cursor c{bytes_, bytes_, bytes_ + size_};
  char magic[4] = {};
  if (size_ < 4 || (std::memcpy(magic, bytes_, 4), std::memcmp(magic, "GGUF", 4) != 0))
    return bad("not a GGUF file (it does not begin with \"GGUF\")");
  c.p += 4;
  uint64_t n_tensors = 0, n_kv = 0;
  if (!c.get(&version_)) return bad("the file ends inside the header");
  if (version_ == 1) return bad("GGUF version 1 (2023's first draft) is not supported; convert the model again with a current llama.cpp (versions 2 and 3 are read)");
  if (version_ > 0xFFFF && (version_ >> 24) <= 3) return bad("this is a big-endian GGUF file; headmap reads little-endian GGUF (the usual kind)");
  if (version_ != 2 && version_ != 3) return bad("GGUF version " + std::to_string(version_) + " is not supported (versions 2 and 3 are read)");
  if (!c.get(&n_tensors) || !c.get(&n_kv)) return bad("the file ends inside the header");
  // Each pair and tensor info takes at least 8 + 4 (+1) and 8 + 4 + 4 + 8 bytes.
  if (n_kv > kMaxKeys || n_kv > c.left() / 13) return bad("the header claims " + std::to_string(n_kv) + " metadata pairs, more than the file holds");
  if (n_tensors > kMaxTensors || n_tensors > c.left() / 24) return bad("the header claims " + std::to_string(n_tensors) + " tensors, more than the file holds");

  uint64_t held = 0;
  for (uint64_t k = 0; k < n_kv; ++k) {
    std::string key;
    uint32_t t = 0;
    if (!c.str(&key)) return bad("the file ends inside metadata key " + std::to_string(k));
    if (!c.get(&t)) return bad("the file ends inside the type of metadata \"" + key + "\"");
    if (t > static_cast<uint32_t>(GgufValueType::F64)) return bad("metadata \"" + key + "\" has value type " + std::to_string(t) + ", which GGUF does not define (0-12)");
    if (kv_.count(key)) return bad("metadata \"" + key + "\" appears twice");
    held += key.size();
    GgufValue v;
    if (std::string e = read_value(c, static_cast<GgufValueType>(t), v, 0, &held, arrays == GgufArrays::Kept); !e.empty()) return bad("metadata \"" + key + "\": " + e);
    kv_.emplace(std::move(key), std::move(v));
  }
  if (const GgufValue* a = find("general.alignment")) {
    int64_t al = 0;
    if (!a->as_int(1, 1 << 20, &al) || (al & (al - 1)) != 0) return bad("general.alignment must be a power of two up to 1 MiB");
    alignment_ = static_cast<uint32_t>(al);
  }

  tensors_.resize(static_cast<size_t>(n_tensors));
  for (uint64_t k = 0; k < n_tensors; ++k) {
    GgufTensorInfo& ti = tensors_[static_cast<size_t>(k)];
    uint32_t nd = 0;
    if (!c.str(&ti.name) || !c.get(&nd)) return bad("the file ends inside tensor info " + std::to_string(k));
    const std::string what = "tensor \"" + ti.name + "\"";
    if (by_name_.count(ti.name)) return bad(what + " appears twice");
    by_name_[ti.name] = static_cast<size_t>(k);
    if (nd < 1 || nd > static_cast<uint32_t>(kMaxDims)) return bad(what + " has " + std::to_string(nd) + " dims (1 to 4 are allowed)");
    uint64_t total = 1;
    for (uint32_t d = 0; d < nd; ++d) {
      uint64_t n = 0;
      if (!c.get(&n)) return bad("the file ends inside the dims of " + what);
      if (n == 0 || n > (uint64_t(1) << 40) || total > (uint64_t(1) << 50) / n) return bad(what + " has a dim of " + std::to_string(n) + " (each must be 1 or more, the product at most 2^50)");
      total *= n;
      ti.ne.push_back(static_cast<int64_t>(n));
    }
    if (!c.get(&ti.type) || !c.get(&ti.offset)) return bad("the file ends inside tensor info " + std::to_string(k));
    const GgmlTypeInfo* info = ggml_type_info(ti.type);
    if (!info) return bad(what + " has ggml type " + std::to_string(ti.type) + ", which ggml does not define");
    if (ti.ne[0] % info->block != 0)
      return bad(what + " is " + info->name + " but its row of " + std::to_string(ti.ne[0]) + " is not a whole number of " + std::to_string(info->block) + "-element blocks");
    ti.bytes = total / static_cast<uint64_t>(info->block) * static_cast<uint64_t>(info->bytes);
    if (ti.offset % alignment_ != 0) return bad(what + " starts at offset " + std::to_string(ti.offset) + ", not a multiple of the alignment " + std::to_string(alignment_));
  }
  const uint64_t header_end = c.pos();
  data_start_ = (header_end + alignment_ - 1) / alignment_ * alignment_;
  if (data_start_ > size_ && n_tensors > 0) return bad("the file ends before its data section");
  const uint64_t data_size = size_ > data_start_ ? size_ - data_start_ : 0;
  // Byte ranges: inside the data, and no two overlapping.
  std::vector<const GgufTensorInfo*> order;
  for (const GgufTensorInfo& t : tensors_) {
    if (t.offset > data_size || t.bytes > data_size - t.offset)
      return bad("tensor \"" + t.name + "\" (" + std::to_string(t.bytes) + " bytes at offset " + std::to_string(t.offset) + ") runs past the end of the file (" +
                 std::to_string(data_size) + " bytes of data); the file is truncated or corrupt");
    order.push_back(&t);
  }
  std::sort(order.begin(), order.end(), [](const GgufTensorInfo* a, const GgufTensorInfo* b) { return a->offset < b->offset; });
  for (size_t k = 1; k < order.size(); ++k)
    if (order[k - 1]->offset + order[k - 1]->bytes > order[k]->offset)
      return bad("tensors \"" + order[k - 1]->name + "\" and \"" + order[k]->name + "\" overlap");
  return Status();
}

}  // namespace headmap
