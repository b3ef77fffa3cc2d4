// gguf.h: a memory-mapped GGUF file (llama.cpp's format, versions 2 and 3, little-endian),
// its metadata and tensor table validated against the file before anything is read.
//
// The format (ggml's docs/gguf.md): "GGUF" u32 version, u64 tensor_count, u64 kv_count;
// kv_count pairs (string key, u32 value type, value); tensor_count infos (string name,
// u32 n_dims, u64 ne[n_dims] innermost first, u32 ggml type, u64 offset); padding to
// general.alignment (u32, default 32); the data, each tensor at its aligned offset.
// A string is u64 length + bytes (no terminator); an array is u32 element type, u64 count,
// then the elements. Value types: 0 u8, 1 i8, 2 u16, 3 i16, 4 u32, 5 i32, 6 f32, 7 bool,
// 8 string, 9 array, 10 u64, 11 i64, 12 f64.
//
// Every count is checked against the bytes left before anything is allocated for it, every
// tensor's byte range against the data section (in bounds, aligned, not overlapping), and
// every error names the file and what is wrong (BadFormat).
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/io/mapped_file.h"

namespace headmap {

enum class GgufValueType : uint32_t { U8 = 0, I8, U16, I16, U32, I32, F32, Bool, String, Array, U64, I64, F64 };
const char* gguf_value_type_name(GgufValueType t);

// One metadata value. Numbers are widened (whole numbers to i/u, floats to f); an array keeps
// its element type and elements (nested arrays allowed, as the format allows).
struct GgufValue {
  GgufValueType type = GgufValueType::U8;
  int64_t i = 0;      // signed whole numbers and bool (0/1)
  uint64_t u = 0;     // unsigned whole numbers
  double f = 0;       // f32, f64
  std::string s;      // string
  GgufValueType elem = GgufValueType::U8;  // array element type
  std::vector<GgufValue> arr;              // array elements
  bool is_int() const;    // any whole-number type or bool
  bool is_float() const { return type == GgufValueType::F32 || type == GgufValueType::F64; }
  // The value as a whole number in [lo, hi] (false if it is not one or out of range).
  bool as_int(int64_t lo, int64_t hi, int64_t* out) const;
  // Any number as a double (false otherwise).
  bool as_number(double* out) const;
};

// ggml's tensor types, with their block size (elements) and bytes per block. `supported`:
// headmap turns it into weights (core/io/gguf_quant.h).
struct GgmlTypeInfo {
  uint32_t id;
  const char* name;   // "Q4_K"
  int64_t block;      // elements per block
  int64_t bytes;      // bytes per block
};
const GgmlTypeInfo* ggml_type_info(uint32_t id);  // null for an id ggml does not define

struct GgufTensorInfo {
  std::string name;
  std::vector<int64_t> ne;  // dims, innermost first: a (rows, cols) matrix is ne = {cols, rows}
  uint32_t type = 0;        // ggml type id
  uint64_t offset = 0;      // from the start of the data section
  uint64_t bytes = 0;       // computed from ne and the type's blocks
  int64_t numel() const;
  int64_t rows() const { return ne.empty() ? 1 : numel() / ne[0]; }  // all but the innermost dim
};

// Whether open() keeps the metadata arrays' elements (the tokenizer's tokens, scores,
// merges) or only checks and steps over them (a listing that wants the header's other keys
// and the tensor table: the arrays of a 128k vocabulary are ~12 MB once parsed).
enum class GgufArrays { Kept, Skipped };

class GgufFile {
 public:
  static constexpr uint64_t kMaxKeys = 1 << 20, kMaxTensors = 1 << 20;
  static constexpr int kMaxDims = 4;           // GGML_MAX_DIMS
  static constexpr int kMaxArrayDepth = 4;     // nested arrays

  // Maps the file and validates it (errors: Io for an unreadable path, BadFormat otherwise).
  static Result<GgufFile> open(const std::string& path, GgufArrays arrays = GgufArrays::Kept);
  // The same checks on bytes already in memory, which must outlive the result.
  static Result<GgufFile> view(const char* bytes, size_t size, const std::string& origin, GgufArrays arrays = GgufArrays::Kept);

  uint32_t version() const { return version_; }
  uint32_t alignment() const { return alignment_; }
  const std::string& path() const { return origin_; }
  size_t file_size() const { return size_; }
  const std::map<std::string, GgufValue>& metadata() const { return kv_; }
  const std::vector<GgufTensorInfo>& tensors() const { return tensors_; }
  const GgufValue* find(const std::string& key) const;
  // Frees every metadata array's elements (the tokenizer's tokens, scores, token types and
  // merges: about 100 bytes an element, 10 MB at a 32,000-token vocabulary) once they have
  // been read; find() then returns those arrays empty. The loader calls it after building the
  // tokenizer, so that they are not held through the weights' load (gguf_load_peak_rss).
  void drop_metadata_arrays();
  const GgufTensorInfo* tensor(const std::string& name) const;
  // The tensor's bytes (info.bytes of them) in the map.
  const char* data(const GgufTensorInfo& t) const { return bytes_ + data_start_ + t.offset; }
  // Drops a tensor's pages from the process once it has been converted.
  void release(const GgufTensorInfo& t) const { file_.release(data_start_ + t.offset, data_start_ + t.offset + t.bytes); }
  // The same for the bytes [begin, end) of the map (a tensor's rows, a chunk at a time).
  void release_bytes(const char* begin, const char* end) const {
    file_.release(static_cast<size_t>(begin - bytes_), static_cast<size_t>(end - bytes_));
  }

 private:
  Status parse(GgufArrays arrays = GgufArrays::Kept);

  MappedFile file_;  // empty for a view
  const char* bytes_ = nullptr;
  size_t size_ = 0;
  std::string origin_;
  uint32_t version_ = 0, alignment_ = 32;
  uint64_t data_start_ = 0;
  std::map<std::string, GgufValue> kv_;
  std::vector<GgufTensorInfo> tensors_;
  std::map<std::string, size_t> by_name_;
};

}  // namespace headmap
