// hf_tensors.h: the one reader of a Hugging Face directory's safetensors (one file, or an
// index and its shards) and its tokenizer, shared by every family's loader (hf_gpt2.h,
// hf_model.h).
#pragma once
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/error.h"
#include "core/io/safetensors.h"
#include "core/model/weights.h"

namespace headmap {

// A matrix kept in its file's blocks (a GGUF file's Q8_0 ... Q6_K tensors, gguf_model.cpp):
// its rows in place in the file's map, in Hugging Face's order (llama's Q/K rows put back).
struct BlockTensor {
  WeightDtype dtype = WeightDtype::Q8_0;
  std::vector<int64_t> shape;            // {rows, cols}
  const uint8_t* base = nullptr;         // the file's row 0 of it
  std::function<int64_t(int64_t)> file_row;  // row r (Hugging Face's order) is the file's row file_row(r)
  std::string file;                      // for messages
  int64_t rows() const { return shape.empty() ? 0 : shape[0]; }
  const uint8_t* row(int64_t r) const { return base + file_row(r) * static_cast<int64_t>(row_bytes()); }
  // Drops the map's pages in [begin, end) from the process (the page cache keeps them).
  std::function<void(const uint8_t* begin, const uint8_t* end)> release_bytes;
  size_t row_bytes() const { return shape.size() == 2 ? static_cast<size_t>(dtype_bytes(dtype, shape[1])) : 0; }
  // Rows [r0, r1)'s pages dropped, once copied (the whole tensor: 0, rows()).
  void release_rows(int64_t r0, int64_t r1) const;
};

// The safetensors files of a directory and which one holds each tensor; a GGUF file's
// block-typed matrices beside them (`blocks`, kept in their blocks by the loader).
struct TensorSource {
  std::vector<std::unique_ptr<SafetensorsFile>> files;
  std::map<std::string, const SafetensorsFile*> where;  // tensor name -> file
  std::map<std::string, BlockTensor> blocks;            // tensor name -> its rows of blocks
};

// model.safetensors, else model.safetensors.index.json and its shards. A directory with only
// pytorch_model.bin (or another format) gets a message saying what to download.
Result<TensorSource> open_tensors(const std::filesystem::path& dir);

// "[3, 4]"
std::string shape_text(const std::vector<int64_t>& shape);

// config.json's whole number j[key] into *out, checked to lie in [lo, hi]. Absent or null:
// a BadFormat error when required, else *out is left as it was. Messages begin with `prefix`
// (the file, and the family where it is known: "DIR/config.json: Llama: ").
Status config_int(const nlohmann::json& j, const char* key, int lo, int hi, int* out, bool required, const std::string& prefix);

// The model's name shown to the user: the directory's own name ("gpt2" for "models/gpt2/"),
// that of the working directory for ".".
std::string model_dir_name(const std::filesystem::path& dir);

// The directory's tokenizer by HfTokenizer::load's rule (tokenizer.json, else vocab.json +
// merges.txt, else vocab.txt), checked against config.json's vocab_size: w.hf_tokenizer,
// which splits the text, and w.source.tokenizer_files; w.bpe too when the files are GPT-2's
// byte-level BPE (a checkpoint saved from the model needs it).
Status load_hf_tokenizer(const std::filesystem::path& dir, int vocab_size, ModelWeights& w);

// Reads the tensors into w, shapes first (all of them, before any data is touched).
class TensorReader {
 public:
  TensorReader(const TensorSource& src, std::string prefix, const std::string& dir) : src_(src), prefix_(std::move(prefix)), dir_(dir) {}

  // Checks that `name` exists with `shape`; records it as used.
  Status expect(const std::string& name, std::vector<int64_t> shape);
  bool has(const std::string& name) const { return src_.where.count(prefix_ + name) > 0 || src_.blocks.count(prefix_ + name) > 0; }
  // Any tensor as F32 (a block tensor widened, checked finite).
  Status read(const std::string& name, float* out) const;
  Status read_rows(const std::string& name, int64_t r0, int64_t n, int64_t cols, float* out) const {
    const std::string full = prefix_ + name;
    return src_.where.at(full)->read_block_f32(full, r0, n, 0, cols, out);
  }
  Status read_cols(const std::string& name, int64_t c0, int64_t n, float* out) const {
    const std::string full = prefix_ + name;
    return src_.where.at(full)->read_rows_f32(full, c0, n, out);
  }
  // A BF16 / F16 tensor in place in its file (null for F32 or unaligned data), its dtype, and
  // the release of its pages once packed: weights kept 16-bit (packed_gemm.h).
  const uint16_t* data16(const std::string& name) const {
    auto it = src_.where.find(prefix_ + name);
    return it == src_.where.end() ? nullptr : it->second->data16(prefix_ + name);
  }
  // A tensor kept in its file's blocks (null for any other).
  const BlockTensor* blocks(const std::string& name) const {
    auto it = src_.blocks.find(prefix_ + name);
    return it == src_.blocks.end() ? nullptr : &it->second;
  }
  WeightDtype dtype16(const std::string& name) const {
    const std::string full = prefix_ + name;
    return src_.where.at(full)->tensors().at(full).dtype == "F16" ? WeightDtype::F16 : WeightDtype::BF16;
  }
  void release(const std::string& name) const {
    if (const BlockTensor* b = blocks(name)) return b->release_rows(0, b->rows());
    src_.where.at(prefix_ + name)->release(prefix_ + name);
  }
  const std::set<std::string>& used() const { return used_; }
  const std::string& dir() const { return dir_; }
  std::string config_text_;

 private:
  const TensorSource& src_;
  std::string prefix_;
  std::string dir_;
  std::set<std::string> used_;
};

}  // namespace headmap
