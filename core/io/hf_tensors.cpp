// hf_tensors.cpp: a Hugging Face directory's files, read for every family (see hf_tensors.h).
//
// D = d_model, V = vocab
// Sections: [config] [tokenizer] [tensors] [readers] [counts]
#include "core/io/hf_tensors.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "core/io/file_io.h"
#include "core/io/json_limits.h"
#include "core/io/model_dir.h"
#include "core/math/parallel.h"

namespace headmap {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {
constexpr size_t kMaxJsonBytes = size_t(64) << 20;  // tokenizer.json of a large vocabulary, a shard index
}  // namespace

// ---- [config] --------------------------------------------------------------------------
std::string model_dir_name(const fs::path& dir) {
  fs::path clean = dir.lexically_normal();
  if (clean.filename().empty()) clean = clean.parent_path();
  std::string name = clean.filename().string();
  std::error_code ec;
  if (name.empty() || name == ".") name = fs::absolute(dir, ec).lexically_normal().filename().string();
  return name;
}

Status config_int(const json& j, const char* key, int lo, int hi, int* out, bool required, const std::string& prefix) {
  if (!j.contains(key) || j[key].is_null())
    return required ? Status(bad_format(prefix + "\"" + key + "\" is missing.")) : Status();
  if (!j[key].is_number_integer() || j[key].get<long long>() < lo || j[key].get<long long>() > hi)
    return bad_format(prefix + "\"" + key + "\" must be a whole number from " + std::to_string(lo) + " to " + std::to_string(hi) + ".");
  *out = j[key].get<int>();
  return Status();
}

// ---- [tokenizer] -----------------------------------------------------------------------
// The tokenizer by HfTokenizer::load's rule, the same as headmap-cli tokenize's: the
// directory's tokenizer.json, else GPT-2's vocab.json + merges.txt, else BERT's vocab.txt; a
// tokenizer.model alone is refused, saying what to do. Every family's loader uses it. Its pipeline splits the text (special
// tokens included). When the files are GPT-2's byte-level BPE, bpe (core/text/bpe.h) holds
// the same tables too, for a checkpoint saved from the model.
Status load_hf_tokenizer(const fs::path& dir, int vocab_size, ModelWeights& w) {
  const fs::path vocab_json = dir / "vocab.json", merges = dir / "merges.txt", tok_json = dir / "tokenizer.json";
  Result<HfTokenizer> hf = HfTokenizer::load(dir.string());
  if (!hf) return hf.error();
  const bool has_json = fs::exists(tok_json), has_gpt2 = fs::exists(vocab_json) && fs::exists(merges);
  const std::string files = has_json ? "tokenizer.json" : has_gpt2 ? "vocab.json + merges.txt" : "vocab.txt";
  const std::string origin = (dir / (has_json ? "tokenizer.json" : has_gpt2 ? "vocab.json" : "vocab.txt")).string();
  if (Status s = hf->check_ids_below(vocab_size, "config.json's vocab_size"); !s) return s.error();
  Result<Bpe> bpe = Error{ErrorKind::BadFormat, "not byte-level BPE"};
  if (has_json) {
    Result<std::string> t = read_file(tok_json.string(), kMaxJsonBytes);
    if (!t) return t.error();
    bpe = Bpe::from_tokenizer_json(*t);  // fails when the model is not GPT-2's byte-level BPE: bpe stays empty
  } else if (has_gpt2) {
    Result<std::string> v = read_file(vocab_json.string(), kMaxJsonBytes);
    if (!v) return v.error();
    Result<std::string> m = read_file(merges.string(), kMaxJsonBytes);
    if (!m) return m.error();
    bpe = Bpe::from_gpt2_files(*v, *m);
    if (!bpe) return bad_format(origin + " + merges.txt: " + bpe.error().message);
  }
  // Embedding rows past the tokenizer's tokens (a padded vocabulary) are never produced.
  if (bpe && bpe->size() <= vocab_size) w.bpe = std::move(bpe).value();
  w.hf_tokenizer = std::make_shared<const HfTokenizer>(std::move(hf).value());
  w.source.tokenizer_files = files;
  return Status();
}
// ---- [tensors] -------------------------------------------------------------------------
Result<std::vector<std::string>> parse_shard_index(const std::string& text, const std::string& origin) {
  if (Status s = check_json_limits(text, origin, 16, "open a smaller index"); !s) return s.error();
  json j;
  try {
    j = json::parse(text);
  } catch (const json::exception& e) {
    return bad_format(origin + ": not valid JSON (" + e.what() + ").");
  }
  if (!j.is_object() || !j.contains("weight_map") || !j["weight_map"].is_object())
    return bad_format(origin + ": it has no \"weight_map\" object.");
  std::set<std::string> names;
  for (const auto& [tensor, file] : j["weight_map"].items()) {
    if (!file.is_string()) return bad_format(origin + ": the shard of \"" + tensor + "\" is not a file name.");
    const std::string f = file.get<std::string>();
    if (f.empty() || f.find('/') != std::string::npos || f.find('\\') != std::string::npos || f == "." || f == ".." ||
        f.find('\0') != std::string::npos)
      return bad_format(origin + ": the shard name \"" + f + "\" is not a plain file name in the directory.");
    names.insert(f);
    if (names.size() > 10000) return bad_format(origin + ": more than 10,000 shards.");
  }
  if (names.empty()) return bad_format(origin + ": the weight map is empty.");
  return std::vector<std::string>(names.begin(), names.end());
}

Result<TensorSource> open_tensors(const fs::path& dir) {
  TensorSource src;
  const fs::path single = dir / "model.safetensors", index = dir / "model.safetensors.index.json";
  std::vector<std::string> shard_names;
  if (fs::exists(single)) {
    shard_names.push_back("model.safetensors");
  } else if (fs::exists(index)) {
    if (Status s = check_model_file(dir, index); !s) return s.error();
    Result<std::string> text = read_file(index.string(), kMaxJsonBytes);
    if (!text) return text.error();
    Result<std::vector<std::string>> names = parse_shard_index(*text, index.string());
    if (!names) return names.error();
    shard_names = std::move(*names);
  } else {
    for (const char* other : {"pytorch_model.bin", "tf_model.h5", "flax_model.msgpack", "model.ckpt.index"})
      if (fs::exists(dir / other))
        return Error{ErrorKind::Io, dir.string() + " has " + other + " but no model.safetensors: headmap reads the safetensors format only. "
                                    "Download it too (huggingface-cli download MODEL model.safetensors), or convert the file."};
    return Error{ErrorKind::Io, dir.string() + " has no model.safetensors (nor model.safetensors.index.json with its shards)."};
  }
  for (const std::string& name : shard_names) {
    if (Status s = check_model_file(dir, dir / name); !s) return s.error();
    Result<SafetensorsFile> f = SafetensorsFile::open((dir / name).string());
    if (!f) return f.error();
    src.files.push_back(std::make_unique<SafetensorsFile>(std::move(f).value()));
    for (const auto& [tensor, info] : src.files.back()->tensors()) {
      if (src.where.count(tensor)) return bad_format(dir.string() + ": the tensor \"" + tensor + "\" appears in two shards.");
      src.where[tensor] = src.files.back().get();
    }
  }
  return src;
}

Status TensorReader::expect(const std::string& name, std::vector<int64_t> shape) {
  const std::string full = prefix_ + name;
  if (const BlockTensor* b = blocks(name)) {
    if (b->shape != shape)
      return bad_format(b->file + ": tensor \"" + full + "\" has shape " + shape_text(b->shape) + " but config.json (" + config_text_ + ") needs " +
                        shape_text(shape) + ".");
    used_.insert(full);
    return Status();
  }
  auto it = src_.where.find(full);
  if (it == src_.where.end()) return bad_format(dir_ + ": the tensor \"" + full + "\" is missing; config.json promises it.");
  const SafetensorInfo& info = it->second->tensors().at(full);
  if (info.shape != shape)
    return bad_format(it->second->path() + ": tensor \"" + full + "\" has shape " + shape_text(info.shape) + " but config.json (" + config_text_ +
                      ") needs " + shape_text(shape) + ".");
  used_.insert(full);
  return Status();
}

Status TensorReader::read(const std::string& name, float* out) const {
  const std::string full = prefix_ + name;
  const BlockTensor* b = blocks(name);
  if (!b) return src_.where.at(full)->read_f32(full, out);
  const int64_t cols = b->shape.size() == 2 ? b->shape[1] : 0;
  for (int64_t r = 0; r < b->rows(); ++r) {
    float* row = out + r * cols;
    widen_weights(b->dtype, b->row(r), cols, row);
    if (!std::all_of(row, row + cols, [](float v) { return std::isfinite(v); }))
      return bad_format(b->file + ": tensor \"" + full + "\" holds a value that is not finite (NaN or infinity).");
  }
  b->release_rows(0, b->rows());
  return Status();
}

// A block tensor's rows [r0, r0 + n), columns [c0, c0 + n_cols) of each, widened into out
// (n, n_cols) and checked finite.
Status TensorReader::widen_part(const BlockTensor& b, const std::string& full, int64_t r0, int64_t n, int64_t c0, int64_t n_cols, float* out) const {
  const int64_t cols = b.shape.size() == 2 ? b.shape[1] : 0;
  if (r0 < 0 || n < 0 || r0 + n > b.rows() || c0 < 0 || n_cols < 0 || c0 + n_cols > cols)
    return bad_format(b.file + ": tensor \"" + full + "\" of shape " + shape_text(b.shape) + " has no rows " + std::to_string(r0) + " .. " +
                      std::to_string(r0 + n) + ", columns " + std::to_string(c0) + " .. " + std::to_string(c0 + n_cols) + ".");
  std::vector<float> row(static_cast<size_t>(cols));  // (cols)
  for (int64_t r = 0; r < n; ++r) {
    widen_weights(b.dtype, b.row(r0 + r), cols, row.data());
    float* dst = out + r * n_cols;
    std::copy(row.begin() + c0, row.begin() + c0 + n_cols, dst);
    if (!std::all_of(dst, dst + n_cols, [](float v) { return std::isfinite(v); }))
      return bad_format(b.file + ": tensor \"" + full + "\" holds a value that is not finite (NaN or infinity).");
  }
  return Status();
}

Status TensorReader::read_rows(const std::string& name, int64_t r0, int64_t n, int64_t cols, float* out) const {
  const std::string full = prefix_ + name;
  if (const BlockTensor* b = blocks(name)) return widen_part(*b, full, r0, n, 0, cols, out);
  return src_.where.at(full)->read_block_f32(full, r0, n, 0, cols, out);
}

Status TensorReader::read_cols(const std::string& name, int64_t c0, int64_t n, float* out) const {
  const std::string full = prefix_ + name;
  if (const BlockTensor* b = blocks(name)) return widen_part(*b, full, 0, b->rows(), c0, n, out);
  return src_.where.at(full)->read_rows_f32(full, c0, n, out);
}

void BlockTensor::release_rows(int64_t r0, int64_t r1) const {
  if (!release_bytes || r0 >= r1) return;
  int64_t lo = file_row(r0), hi = lo;
  for (int64_t r = r0 + 1; r < r1; ++r) lo = std::min(lo, file_row(r)), hi = std::max(hi, file_row(r));
  release_bytes(base + lo * static_cast<int64_t>(row_bytes()), base + (hi + 1) * static_cast<int64_t>(row_bytes()));
}

// ---- [readers] -------------------------------------------------------------------------
Status read_linear(const TensorReader& r, const std::string& name, int64_t out, int64_t in, MatR& m) {
  MatR stored(out, in);  // (out, in)
  if (Status s = r.read(name, stored.data()); !s) return s;
  m = stored.transpose();  // (in, out)
  return Status();
}

namespace {
// Rows [row0, row0 + rows) of a tensor kept in its file's blocks.
struct BlockPart {
  std::string name;
  int64_t row0, rows;
};
Error not_finite(const TensorReader& r, const std::string& name) {
  return Error{ErrorKind::BadFormat, r.dir() + ": tensor \"" + name + "\" holds a value that is not finite (NaN or infinity)."};
}
// The parts' rows packed side by side (in, Σ rows), each column one row, copied verbatim in its
// block type; then their pages released (release: the tensors' whole pages, else the parts' rows).
Status pack_block_parts(const TensorReader& r, const std::vector<BlockPart>& parts, int64_t in, PackedMatrix& p, bool release) {
  std::vector<const uint8_t*> cols;
  std::vector<WeightDtype> types;
  for (const BlockPart& part : parts) {
    const BlockTensor* b = r.blocks(part.name);
    for (int64_t i = 0; i < part.rows; ++i) cols.push_back(b->row(part.row0 + i));
    types.insert(types.end(), static_cast<size_t>(part.rows), b->dtype);
  }
  // Every column 16-bit of one type (a BF16 / F16 GGUF file): 16-bit panels, as a directory's
  // (the kernel widens them in registers); else the columns kept in their blocks.
  bool narrow = !types.empty() && (types[0] == WeightDtype::BF16 || types[0] == WeightDtype::F16);
  for (size_t c = 0; c < cols.size() && narrow; ++c) narrow = types[c] == types[0] && reinterpret_cast<uintptr_t>(cols[c]) % 2 == 0;
  std::vector<const uint16_t*> cols16;
  if (narrow)
    for (const uint8_t* c : cols) cols16.push_back(reinterpret_cast<const uint16_t*>(c));
  const bool finite = narrow ? p.assign_transposed_narrow(cols16, in, types[0]) : p.assign_blocks(cols, types, in);
  for (const BlockPart& part : parts) {
    if (release) r.release(part.name);
    else r.blocks(part.name)->release_rows(part.row0, part.row0 + part.rows);
  }
  if (finite) return Status();
  std::vector<float> row(static_cast<size_t>(in));  // which tensor: widened again, row by row
  for (const BlockPart& part : parts) {
    const BlockTensor* b = r.blocks(part.name);
    for (int64_t i = 0; i < part.rows; ++i) {
      widen_weights(b->dtype, b->row(part.row0 + i), in, row.data());
      if (!std::all_of(row.begin(), row.end(), [](float v) { return std::isfinite(v); })) return not_finite(r, part.name);
    }
  }
  return Error{ErrorKind::BadFormat, r.dir() + ": a tensor holds a value that is not finite (NaN or infinity)."};
}
}  // namespace

Status read_blocks_packed(const TensorReader& r, const std::vector<std::string>& names, int64_t in, PackedMatrix& p) {
  std::vector<BlockPart> parts;
  for (const std::string& n : names) parts.push_back({n, 0, r.blocks(n)->rows()});
  return pack_block_parts(r, parts, in, p, true);
}

Status read_linear_packed(const TensorReader& r, const std::string& name, int64_t out, int64_t in, PackedMatrix& p, int64_t row0, bool last) {
  if (r.blocks(name)) return pack_block_parts(r, {{name, row0, out}}, in, p, last);  // a GGUF file's blocks kept in them
  if (const uint16_t* raw = r.data16(name)) {
    const bool finite = p.assign_transposed_narrow(raw + row0 * in, in, out, r.dtype16(name));
    if (last) r.release(name);
    if (!finite) return not_finite(r, name);
    return Status();
  }
  MatR stored(out, in);  // (out, in): rows row0 .. row0 + out
  if (Status s = r.read_rows(name, row0, out, in, stored.data()); !s) return s;
  p = PackedMatrix(MatR(stored.transpose()));  // (in, out)
  return Status();
}

Status read_conv1d_packed(const TensorReader& r, const std::string& name, int64_t in, int64_t out, PackedMatrix& p) {
  Status read;
  // A BF16 / F16 file's matrices stay 16-bit (exact: the values are the file's).
  const WeightDtype dt = r.data16(name) ? r.dtype16(name) : WeightDtype::F32;
  p.assign_by_rows(in, out, [&](int64_t r0, int64_t n, float* block) { return (read = r.read_rows(name, r0, n, out, block)).ok(); }, dt);
  return read;
}

bool begin_table16(const TensorReader& r, const std::string& name, int64_t rows, int64_t cols, int min_parts, NarrowRows& t, Table16Parts& parts) {
  const BlockTensor* b = r.blocks(name);
  const uint16_t* raw = b ? nullptr : r.data16(name);
  if (b ? is_block_dtype(b->dtype) || b->dtype == WeightDtype::F32 : raw == nullptr) return false;
  t = NarrowRows();
  t.rows = rows, t.cols = cols, t.dtype = b ? b->dtype : r.dtype16(name);
  parts = Table16Parts();
  parts.name = name;
  parts.rows.resize(static_cast<size_t>(rows));
  bool aligned = true;
  for (int64_t i = 0; i < rows; ++i) {
    const uint8_t* p = b ? b->row(i) : reinterpret_cast<const uint8_t*>(raw + i * cols);
    aligned = aligned && reinterpret_cast<uintptr_t>(p) % alignof(uint16_t) == 0;
    parts.rows[static_cast<size_t>(i)] = reinterpret_cast<const uint16_t*>(p);
  }
  if (!aligned) {  // a GGUF file aligned on odd bytes: read through one aligned copy
    parts.copy.resize(static_cast<size_t>(rows * cols));
    for (int64_t i = 0; i < rows; ++i) {
      std::memcpy(parts.copy.data() + i * cols, b->row(i), static_cast<size_t>(cols) * sizeof(uint16_t));
      parts.rows[static_cast<size_t>(i)] = parts.copy.data() + i * cols;
    }
  }
  t.panels.begin_narrow(cols, rows, t.dtype);  // (D, V): the table's transpose
  // Parts of about 64 MB, and at least min_parts of them (each thread a share).
  const int P = t.panels.panels();
  const int64_t panel_bytes = static_cast<int64_t>(PackedMatrix::kPanel) * cols * 2;
  const int64_t by_size = (static_cast<int64_t>(P) * panel_bytes + (int64_t(64) << 20) - 1) / (int64_t(64) << 20);
  parts.parts = static_cast<int>(std::clamp<int64_t>(std::max<int64_t>(by_size, min_parts), 1, std::max(P, 1)));
  parts.panels_per_part = (P + parts.parts - 1) / parts.parts;
  parts.parts = P == 0 ? 0 : (P + parts.panels_per_part - 1) / parts.panels_per_part;
  return true;
}

Status pack_table16_part(const TensorReader& r, const Table16Parts& parts, int i, NarrowRows& t) {
  const int p0 = i * parts.panels_per_part, p1 = std::min(t.panels.panels(), p0 + parts.panels_per_part);
  const bool finite = t.panels.pack_transposed_panels(parts.rows.data(), p0, p1);
  const int64_t r0 = static_cast<int64_t>(p0) * PackedMatrix::kPanel, r1 = std::min<int64_t>(t.rows, static_cast<int64_t>(p1) * PackedMatrix::kPanel);
  if (parts.copy.empty()) r.release_rows(parts.name, r0, r1);
  return finite ? Status() : not_finite(r, parts.name);
}

Status read_rows16(const TensorReader& r, const std::string& name, int64_t rows, int64_t cols, NarrowRows& t) {
  Table16Parts parts;
  if (begin_table16(r, name, rows, cols, compute_threads(), t, parts)) {
    std::vector<Status> done(static_cast<size_t>(parts.parts));
    parallel_for(parts.parts, static_cast<double>(rows) * static_cast<double>(cols), [&](int64_t i) {
      done[static_cast<size_t>(i)] = pack_table16_part(r, parts, static_cast<int>(i), t);
    });
    r.release(name);
    for (const Status& s : done)
      if (!s) return s;
    return Status();
  }
  // A GGUF file's table in its blocks: copied a chunk of rows at a time, each chunk's pages
  // then dropped (the table is the largest).
  const BlockTensor* b = r.blocks(name);
  HM_ASSERT(b && is_block_dtype(b->dtype), "read_rows16 reads a 16-bit or block-typed table");
  t = NarrowRows();
  t.rows = rows, t.cols = cols, t.dtype = b->dtype;
  t.blocks.resize(static_cast<size_t>(rows) * t.row_bytes());
  uint8_t* dst = t.blocks.data();
  constexpr int64_t kChunk = 1024;
  for (int64_t i0 = 0; i0 < rows; i0 += kChunk) {
    const int64_t i1 = std::min(rows, i0 + kChunk);
    for (int64_t i = i0; i < i1; ++i) std::memcpy(dst + i * t.row_bytes(), b->row(i), t.row_bytes());
    b->release_rows(i0, i1);
  }
  r.release(name);
  std::vector<float> row(static_cast<size_t>(cols));
  for (int64_t i = 0; i < rows; ++i) {
    t.row(i, row.data());
    if (!std::all_of(row.begin(), row.end(), [](float v) { return std::isfinite(v); })) return not_finite(r, name);
  }
  return Status();
}
Status read_vec(const TensorReader& r, const std::string& name, int64_t n, RowVec& v) {
  v.resize(n);
  return r.read(name, v.data());
}

// ---- [counts] --------------------------------------------------------------------------
int64_t parameter_count(const ModelWeights& w) {
  int64_t n = w.tok_emb.size() + w.pos_emb.size() + w.lnf_g.size() + w.lnf_b.size() + w.lm_head.size() +
              static_cast<int64_t>(w.tok_emb16.rows * w.tok_emb16.cols + w.lm_head16.rows * w.lm_head16.cols);
  for (const LayerWeights& lw : w.layers)
    n += lw.ln1_g.size() + lw.ln1_b.size() + lw.qkv_size() + lw.w_o.size() + lw.b_q.size() + lw.b_k.size() +
         lw.b_v.size() + lw.b_o.size() + lw.ln2_g.size() + lw.ln2_b.size() + lw.w_fc.size() + lw.b_fc.size() + lw.w_proj.size() + lw.b_proj.size();
  // Other families (arch.h): their own tensors counted, the zero biases they do not store not.
  const Arch& a = w.arch;
  for (const LayerWeights& lw : w.layers) {
    n += lw.w_gate.size() + lw.q_norm.size() + lw.k_norm.size() + lw.post_attn_g.size() + lw.post_mlp_g.size();
    if (!a.attn_bias) n -= lw.b_q.size() + lw.b_k.size() + lw.b_v.size();
    if (!a.out_bias) n -= lw.b_o.size();
    if (!a.mlp_bias) n -= lw.b_fc.size() + lw.b_proj.size();
    if (a.norm == NormKind::RMSNorm) n -= lw.ln1_b.size() + lw.ln2_b.size();
  }
  if (a.norm == NormKind::RMSNorm) n -= w.lnf_b.size();
  return n;
}

std::string parameters_text(int64_t n) {
  char buf[32];
  if (n >= 1000000000) std::snprintf(buf, sizeof buf, "%.1fB", static_cast<double>(n) / 1e9);
  else if (n >= 1000000) std::snprintf(buf, sizeof buf, "%.0fM", static_cast<double>(n) / 1e6);
  else if (n >= 1000) std::snprintf(buf, sizeof buf, "%.0fK", static_cast<double>(n) / 1e3);
  else std::snprintf(buf, sizeof buf, "%lld", static_cast<long long>(n));
  return buf;
}

}  // namespace headmap
