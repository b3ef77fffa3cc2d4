// hf_tensors.h: the one reader of a Hugging Face directory's safetensors (one file, or an
// index and its shards) and its tokenizer, the limits on what config.json may say, and the
// tensor readers the one family loader (hf_model.h) and the GGUF loader use. Bodies in
// hf_tensors.cpp.
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

// The limits on what a config.json may say (the memory budget then decides what opens).
constexpr int kMaxVocab = 1 << 20;
constexpr int kMaxPositions = 1 << 24;  // learned tables are also sized by check_memory

// model.safetensors, else model.safetensors.index.json and its shards. A directory with only
// pytorch_model.bin (or another format) gets a message saying what to download.
Result<TensorSource> open_tensors(const std::filesystem::path& dir);
// model.safetensors.index.json: the shard file names of its "weight_map", each a plain
// name inside the directory, sorted and unique. (Fuzzed: tests/fuzz.)
Result<std::vector<std::string>> parse_shard_index(const std::string& text, const std::string& origin);

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

// The number of distinct parameters (a tied unembedding counts once).
int64_t parameter_count(const ModelWeights& w);
// "124M", "1.5B": a parameter count for people.
std::string parameters_text(int64_t n);

// Reads the tensors into w, shapes first (all of them, before any data is touched).
class TensorReader {
 public:
  TensorReader(const TensorSource& src, std::string prefix, const std::string& dir) : src_(src), prefix_(std::move(prefix)), dir_(dir) {}

  // Checks that `name` exists with `shape`; records it as used.
  Status expect(const std::string& name, std::vector<int64_t> shape);
  bool has(const std::string& name) const { return src_.where.count(prefix_ + name) > 0 || src_.blocks.count(prefix_ + name) > 0; }
  // Any tensor as F32 (a block tensor widened, checked finite).
  Status read(const std::string& name, float* out) const;
  // Rows [r0, r0 + n), columns [0, cols), as F32 (n, cols); a block tensor's rows widened.
  Status read_rows(const std::string& name, int64_t r0, int64_t n, int64_t cols, float* out) const;
  // Columns [c0, c0 + n) of every row, as F32 (rows, n); a block tensor's rows widened.
  Status read_cols(const std::string& name, int64_t c0, int64_t n, float* out) const;
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
  void release_rows(const std::string& name, int64_t r0, int64_t r1) const {  // rows [r0, r1)'s pages only
    if (const BlockTensor* b = blocks(name)) return b->release_rows(r0, r1);
    src_.where.at(prefix_ + name)->release_rows(prefix_ + name, r0, r1);
  }
  const std::set<std::string>& used() const { return used_; }
  const std::string& dir() const { return dir_; }
  std::string config_text_;

 private:
  Status widen_part(const BlockTensor& b, const std::string& full, int64_t r0, int64_t n, int64_t c0, int64_t n_cols, float* out) const;
  const TensorSource& src_;
  std::string prefix_;
  std::string dir_;
  std::set<std::string> used_;
};

// The tensor readers, shapes already checked by TensorReader::expect. Hugging Face stores a
// Linear (out, in); headmap keeps (in, out).
Status read_vec(const TensorReader& r, const std::string& name, int64_t n, RowVec& v);  // (n)
Status read_linear(const TensorReader& r, const std::string& name, int64_t out, int64_t in, MatR& m);  // m: (in, out)
// The same packed for the GEMM: a BF16 / F16 tensor straight from the map into 16-bit panels
// (the file's precision, packed_gemm.h), its pages then released; a GGUF file's blocks kept in
// them (read_blocks_packed); F32 through one copy.
// row0: the first of the `out` rows to read (a fused [gate; up] tensor's second half); last:
// the tensor's last part is read, so its pages go.
Status read_linear_packed(const TensorReader& r, const std::string& name, int64_t out, int64_t in, PackedMatrix& p, int64_t row0 = 0,
                          bool last = true);
// A Conv1D weight, stored (in, out) as headmap keeps it (GPT-2), packed a block of rows at a time, in its dtype.
Status read_conv1d_packed(const TensorReader& r, const std::string& name, int64_t in, int64_t out, PackedMatrix& p);
// Tensors kept in their file's blocks (a GGUF file's Q8_0 ... Q6_K: TensorReader::blocks),
// packed (in, Σ rows) as one matrix of their rows side by side, each column one row of one of
// them in its own type (W_Q | W_K | W_V: Q4_K_M mixes types), checked finite, pages released.
Status read_blocks_packed(const TensorReader& r, const std::vector<std::string>& names, int64_t in, PackedMatrix& p);
// A (rows, cols) table kept 16-bit or in its file's blocks (NarrowRows; not an F32 block
// tensor), checked finite, its pages then released. 16-bit, it is packed into the
// unembedding's panels on the compute threads (Table16Parts).
Status read_rows16(const TensorReader& r, const std::string& name, int64_t rows, int64_t cols, NarrowRows& t);

// A 16-bit table (a directory's BF16 / F16 tensor, or a BF16 / F16 GGUF one) packed into
// NarrowRows' panels a part at a time, so that a loader's threads pack it beside other work:
// begin_table16 sets t's shape and allocates its panels (false: the table is not 16-bit), then
// pack_table16_part(r, parts, i, t) for every i in [0, parts.parts), once each, on any thread
// (each part's rows checked finite, then their pages released), then r.release(parts.name).
struct Table16Parts {
  std::string name;
  std::vector<const uint16_t*> rows;  // (V) each row of the table, in the map
  std::vector<uint16_t> copy;         // the table, when the file's rows are not 2-byte aligned
  int parts = 0, panels_per_part = 0;
};
bool begin_table16(const TensorReader& r, const std::string& name, int64_t rows, int64_t cols, int min_parts, NarrowRows& t, Table16Parts& parts);
Status pack_table16_part(const TensorReader& r, const Table16Parts& parts, int i, NarrowRows& t);

}  // namespace headmap
