// safetensors.h: a memory-mapped safetensors file with its tensor table validated, and
// tensor-by-tensor conversion of F32, F16 and BF16 data to float.
//
// The format (https://github.com/huggingface/safetensors): 8 bytes N (little-endian), N bytes
// of JSON {"name": {"dtype", "shape", "data_offsets": [begin, end]}, "__metadata__": {...}},
// then the data; offsets are relative to the data, which the tensors cover exactly.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/io/mapped_file.h"

namespace headmap {

// "[3, 4]": a shape in messages (every reader of tensors says shapes this way).
std::string shape_text(const std::vector<int64_t>& shape);

struct SafetensorInfo {
  std::string dtype;            // "F32", "F16", "BF16", or any other dtype the format knows
  std::vector<int64_t> shape;
  uint64_t begin = 0, end = 0;  // byte range in the data section
  int64_t numel() const;
};

// What a caller adds to the reader's own checks (headmap's checkpoints: their metadata and
// tensor names, in the order their messages have always been given).
struct SafetensorsChecks {
  uint64_t max_header_bytes = 0;  // 0: kMaxSafetensorsHeaderBytes
  std::string not_ours;           // appended to "corrupt or not safetensors" messages
  // Called once the metadata is read (strings only, as the format requires), before any
  // tensor entry; data_size is the number of bytes after the header. Both hooks' errors are
  // returned as they are (name the file in them).
  std::function<Status(const std::map<std::string, std::string>& meta, uint64_t data_size)> metadata;
  // Called for every tensor entry once its dtype, shape and offsets are read, before its
  // byte range and size are checked.
  std::function<Status(const std::string& name, const SafetensorInfo& info)> entry;
  // Called once every entry is read, before the byte ranges are checked against each other
  // (a checkpoint names a missing tensor rather than the gap it leaves).
  std::function<Status(const std::map<std::string, SafetensorInfo>& tensors)> entries;
};

class SafetensorsFile {
 public:
  // Maps the file and checks the header: its length, the JSON (no duplicate keys), the
  // metadata (strings only), every entry's dtype, shape and offsets, that the sizes agree,
  // that the tensors neither overlap nor leave gaps, and that the data is not truncated.
  // Errors name the file and the fault.
  static Result<SafetensorsFile> open(const std::string& path, const SafetensorsChecks& checks = {});
  // The same checks on bytes already in memory, which must outlive the result; `origin`
  // names them in messages (and is path()).
  static Result<SafetensorsFile> view(const char* bytes, size_t size, const std::string& origin, const SafetensorsChecks& checks = {});

  const std::map<std::string, SafetensorInfo>& tensors() const { return tensors_; }
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  const std::string& path() const { return origin_; }
  size_t file_size() const { return size_; }

  // Converts one tensor to float into out[0 .. numel), checking every value is finite, and
  // releases its pages from the process as it goes.
  // Errors: a dtype other than F32, F16 or BF16; a value that is not finite.
  Status read_f32(const std::string& name, float* out) const;
  // Columns [col_begin, col_begin + col_count) of every row (rows = all but the last dim),
  // packed into out (rows, col_count): a column block of a wider matrix.
  Status read_rows_f32(const std::string& name, int64_t col_begin, int64_t col_count, float* out) const;
  // Rows [row_begin, row_begin + row_count), columns as above, packed into out.
  Status read_block_f32(const std::string& name, int64_t row_begin, int64_t row_count, int64_t col_begin, int64_t col_count, float* out) const;
  // A BF16 or F16 tensor's values in place in the map (little-endian, as the format is), for
  // weights kept 16-bit (packed_gemm.h); null for another dtype or data not 2-byte aligned.
  // release() then drops its pages from the process (the page cache keeps them).
  const uint16_t* data16(const std::string& name) const;
  void release(const std::string& name) const;
  // The pages of rows [r0, r1) only (a table packed a part at a time).
  void release_rows(const std::string& name, int64_t r0, int64_t r1) const;
  int64_t rows(const std::string& name) const;  // all but the last dimension, multiplied

 private:
  Status validate(const SafetensorsChecks& checks);
  void release(size_t begin, size_t end) const;

  MappedFile file_;          // empty for a view
  const char* bytes_ = nullptr;
  size_t size_ = 0;
  std::string origin_;
  uint64_t data_start_ = 0;
  std::map<std::string, SafetensorInfo> tensors_;
  std::map<std::string, std::string> metadata_;
};

// A safetensors JSON header, parsed with duplicate keys refused (a JSON parser would keep
// one of them silently). Shared by headmap's checkpoints and Hugging Face files.
Result<nlohmann::json> parse_safetensors_header(const char* begin, const char* end);

// Limits on what a header may claim, so a corrupt file cannot ask for absurd sizes.
inline constexpr uint64_t kMaxSafetensorsHeaderBytes = uint64_t(100) << 20;


}  // namespace headmap
