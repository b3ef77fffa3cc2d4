// hf_gpt2.cpp: a Hugging Face GPT-2 directory -> ModelWeights (see hf_gpt2.h).
//
// D = d_model, H = heads, L = layers, V = vocab, P = n_positions
// Sections: [config] [tokenizer] [tensors] [load]
#include "core/io/hf_gpt2.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>

#include "core/io/export.h"
#include "core/io/hf_tensors.h"
#include "core/io/json_limits.h"
#include "core/io/model_dir.h"
#include "core/io/safetensors.h"
#include "core/math/gemm.h"
#include "core/model/config.h"
#include "core/memory_budget.h"

namespace headmap {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {
constexpr int kMaxVocab = 1 << 20;
constexpr int kMaxPositions = 1 << 16;
constexpr size_t kMaxJsonBytes = size_t(64) << 20;  // tokenizer.json of a large vocabulary

Error bad_format(const std::string& m) { return Error{ErrorKind::BadFormat, m}; }
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

static Result<Gpt2Config> gpt2_config_fields(const json& j, const std::string& origin);

Result<Gpt2Config> parse_gpt2_config(const std::string& text, const std::string& origin) {
  auto bad = [&](const std::string& m) { return bad_format(origin + ": " + m); };
  if (Status s = check_json_limits(text, origin, 16, "open a smaller config.json"); !s) return s.error();
  json j;
  try {
    j = json::parse(text);
  } catch (const json::exception& e) {
    return bad(std::string("not valid JSON (") + e.what() + ").");
  }
  if (!j.is_object()) return bad("not a JSON object, so not a Hugging Face config.");
  try {
    return gpt2_config_fields(j, origin);
  } catch (const json::exception& e) {  // a field of the wrong type ("model_type": 6)
    return bad(std::string("a field has the wrong type (") + e.what() + ").");
  }
}

Status config_int(const json& j, const char* key, int lo, int hi, int* out, bool required, const std::string& prefix) {
  if (!j.contains(key) || j[key].is_null())
    return required ? Status(bad_format(prefix + "\"" + key + "\" is missing.")) : Status();
  if (!j[key].is_number_integer() || j[key].get<long long>() < lo || j[key].get<long long>() > hi)
    return bad_format(prefix + "\"" + key + "\" must be a whole number from " + std::to_string(lo) + " to " + std::to_string(hi) + ".");
  *out = j[key].get<int>();
  return Status();
}

static Result<Gpt2Config> gpt2_config_fields(const json& j, const std::string& origin) {
  auto bad = [&](const std::string& m) { return bad_format(origin + ": " + m); };
  Gpt2Config c;
  c.model_type = j.value("model_type", std::string());
  std::string arch;
  if (j.contains("architectures") && j["architectures"].is_array() && !j["architectures"].empty() && j["architectures"][0].is_string())
    arch = j["architectures"][0].get<std::string>();
  if (c.model_type != "gpt2") {
    const std::string what = c.model_type.empty() ? std::string("a model without a model_type") : "a " + c.model_type + " model";
    std::string why;
    if (c.model_type == "bert" || c.model_type == "roberta" || c.model_type == "distilbert")
      why = " BERT-style encoders attend in both directions with post-LayerNorm blocks and have no GPT-2 weights layout.";
    else if (c.model_type == "llama" || c.model_type == "mistral" || c.model_type == "qwen2" || c.model_type == "gemma")
      why = " Llama-style models use RMSNorm, rotary positions, grouped-query attention and a gated MLP, which headmap does not implement.";
    return bad("this is " + what + (arch.empty() ? "" : " (" + arch + ")") + "; headmap opens GPT-2-family models only (model_type \"gpt2\": gpt2, distilgpt2, gpt2-medium, GPT2LMHeadModel fine-tunes)." + why);
  }
  auto get_int = [&](const char* key, int lo, int hi, int* out, bool required) {
    return config_int(j, key, lo, hi, out, required, origin + ": ");
  };
  for (Status s : {get_int("n_embd", 1, kMaxDModel, &c.n_embd, true), get_int("n_head", 1, kMaxDModel, &c.n_head, true),
                   get_int("n_layer", 1, kMaxModelLayers, &c.n_layer, true), get_int("vocab_size", 1, kMaxVocab, &c.vocab_size, true)})
    if (!s) return s.error();
  if (Status s = get_int("n_positions", 1, kMaxPositions, &c.n_positions, false); !s) return s.error();
  if (c.n_positions == 0)
    if (Status s = get_int("n_ctx", 1, kMaxPositions, &c.n_positions, false); !s) return s.error();
  if (c.n_positions == 0) return bad("neither \"n_positions\" nor \"n_ctx\" is given, so the number of learned positions is unknown.");
  if (c.n_embd % c.n_head != 0)
    return bad("n_embd " + std::to_string(c.n_embd) + " is not divisible by n_head " + std::to_string(c.n_head) + ".");
  if (j.contains("n_inner") && !j["n_inner"].is_null() && !(j["n_inner"].is_number_integer() && j["n_inner"].get<long long>() == 4LL * c.n_embd))
    return bad("\"n_inner\" is not 4 x n_embd; headmap's MLP is 4 x d_model wide.");
  if (j.contains("layer_norm_epsilon")) {
    if (!j["layer_norm_epsilon"].is_number() || !(j["layer_norm_epsilon"].get<double>() > 0) || j["layer_norm_epsilon"].get<double>() > 1)
      return bad("\"layer_norm_epsilon\" must be a small positive number.");
    c.layer_norm_epsilon = static_cast<float>(j["layer_norm_epsilon"].get<double>());
  }
  c.activation = j.value("activation_function", std::string("gelu_new"));
  if (c.activation != "gelu_new" && c.activation != "gelu_pytorch_tanh" && c.activation != "gelu_fast")
    return bad("activation_function is \"" + c.activation + "\"; headmap computes GELU in its tanh form (\"gelu_new\", GPT-2's own), so this model would compute something else.");
  if (j.contains("scale_attn_weights") && j["scale_attn_weights"].is_boolean() && !j["scale_attn_weights"].get<bool>())
    return bad("\"scale_attn_weights\" is false; headmap always divides scores by sqrt(d_head), as GPT-2 does.");
  if (j.contains("scale_attn_by_inverse_layer_idx") && j["scale_attn_by_inverse_layer_idx"].is_boolean() && j["scale_attn_by_inverse_layer_idx"].get<bool>())
    return bad("\"scale_attn_by_inverse_layer_idx\" is true; headmap scales every layer's scores by 1/sqrt(d_head) only.");
  if (j.contains("add_cross_attention") && j["add_cross_attention"].is_boolean() && j["add_cross_attention"].get<bool>())
    return bad("\"add_cross_attention\" is true: this is a decoder with cross-attention, which headmap does not implement.");
  return c;
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

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
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

void BlockTensor::release_rows(int64_t r0, int64_t r1) const {
  if (!release_bytes || r0 >= r1) return;
  int64_t lo = file_row(r0), hi = lo;
  for (int64_t r = r0 + 1; r < r1; ++r) lo = std::min(lo, file_row(r)), hi = std::max(hi, file_row(r));
  release_bytes(base + lo * static_cast<int64_t>(row_bytes()), base + (hi + 1) * static_cast<int64_t>(row_bytes()));
}

namespace {
bool ignorable(const std::string& name) {
  // The causal-mask buffers of older GPT-2 saves: h.N.attn.bias (1, 1, P, P), masked_bias.
  auto ends = [&](const char* s) { const size_t n = std::strlen(s); return name.size() >= n && name.compare(name.size() - n, n, s) == 0; };
  return ends(".attn.bias") || ends(".attn.masked_bias");
}
}  // namespace

// ---- [load] ----------------------------------------------------------------------------
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

Result<ModelWeights> load_hf_gpt2(const std::string& dir_in) {
  const fs::path dir(dir_in);
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    return Error{ErrorKind::Io, dir_in + " is not a directory; --model expects a Hugging Face model directory (config.json, model.safetensors, vocab.json + merges.txt)."};
  const fs::path config_path = dir / "config.json";
  if (!fs::exists(config_path)) return Error{ErrorKind::Io, dir_in + " has no config.json, so it is not a Hugging Face model directory."};
  if (Status s = check_model_file(dir, config_path); !s) return s.error();
  Result<std::string> config_text = read_file(config_path.string(), size_t(1) << 20);
  if (!config_text) return config_text.error();
  Result<Gpt2Config> cfg = parse_gpt2_config(*config_text, config_path.string());
  if (!cfg) return cfg.error();
  const int64_t D = cfg->n_embd, L = cfg->n_layer, V = cfg->vocab_size, P = cfg->n_positions;

  Result<TensorSource> src = open_tensors(dir);
  if (!src) return src.error();
  std::string prefix;
  if (src->where.count("transformer.wte.weight")) prefix = "transformer.";
  else if (!src->where.count("wte.weight")) {
    std::string first = src->where.empty() ? "none" : "\"" + src->where.begin()->first + "\"";
    return bad_format(dir_in + ": there is no wte.weight (nor transformer.wte.weight), so these are not GPT-2's tensors (the first is " + first + ").");
  }

  // pass 1: every shape against config.json, before any data is read.
  TensorReader r(*src, prefix, dir_in);
  r.config_text_ = "n_embd " + std::to_string(D) + ", n_layer " + std::to_string(L) + ", vocab_size " + std::to_string(V) + ", n_positions " + std::to_string(P);
  std::vector<Status> checks = {r.expect("wte.weight", {V, D}), r.expect("wpe.weight", {P, D}), r.expect("ln_f.weight", {D}), r.expect("ln_f.bias", {D})};
  for (int64_t l = 0; l < L; ++l) {
    const std::string h = "h." + std::to_string(l) + ".";
    for (Status s : {r.expect(h + "ln_1.weight", {D}), r.expect(h + "ln_1.bias", {D}), r.expect(h + "attn.c_attn.weight", {D, 3 * D}),
                     r.expect(h + "attn.c_attn.bias", {3 * D}), r.expect(h + "attn.c_proj.weight", {D, D}), r.expect(h + "attn.c_proj.bias", {D}),
                     r.expect(h + "ln_2.weight", {D}), r.expect(h + "ln_2.bias", {D}), r.expect(h + "mlp.c_fc.weight", {D, 4 * D}),
                     r.expect(h + "mlp.c_fc.bias", {4 * D}), r.expect(h + "mlp.c_proj.weight", {4 * D, D}), r.expect(h + "mlp.c_proj.bias", {D})})
      checks.push_back(s);
  }
  for (const Status& s : checks)
    if (!s) return s.error();
  // lm_head sits beside "transformer", never under it.
  const SafetensorsFile* lm_file = nullptr;
  if (auto it = src->where.find("lm_head.weight"); it != src->where.end()) {
    const SafetensorInfo& info = it->second->tensors().at("lm_head.weight");
    if (info.shape != std::vector<int64_t>{V, D})
      return bad_format(it->second->path() + ": tensor \"lm_head.weight\" has shape " + shape_text(info.shape) + " but the unembedding needs " +
                        shape_text({V, D}) + ".");
    lm_file = it->second;
  }
  for (const auto& [name, file] : src->where)
    if (!r.used().count(name) && !ignorable(name) && name != "lm_head.weight")
      return bad_format(file->path() + ": unexpected tensor \"" + name + "\" for a GPT-2 with " + std::to_string(L) + " layers; is this a GPT2LMHeadModel checkpoint?");

  // pass 2: the tokenizer (small), then the tensors, one at a time, once they fit the budget.
  const std::string stored = src->where.at(prefix + "wte.weight")->tensors().at(prefix + "wte.weight").dtype;
  const WeightsShape shape = family_weights_shape(Arch{}, static_cast<uint64_t>(D), static_cast<uint64_t>(L), static_cast<uint64_t>(V),
                                                  static_cast<uint64_t>(P), lm_file != nullptr, stored);
  if (Status s = check_memory(weights_bytes(shape), "The model in " + dir_in + " (" + weights_shape_text("GPT-2", shape) + ", stored " + stored + ")",
                              "use a smaller model, or raise HEADMAP_MEMORY_BUDGET");
      !s)
    return s.error();
  ModelWeights w;
  if (Status s = load_hf_tokenizer(dir, cfg->vocab_size, w); !s) return s.error();
  w.d_model = static_cast<int>(D);
  w.context = static_cast<int>(P);
  w.ln_eps = cfg->layer_norm_epsilon;
  w.tok_emb.resize(V, D);
  w.pos_emb.resize(P, D);
  w.lnf_g.resize(D);
  w.lnf_b.resize(D);
  // Every tensor read is one job (wte in row blocks, c_attn in its three column blocks),
  // run on the compute threads: each converts its own bytes into its own destination.
  std::vector<std::function<Status()>> jobs;
  auto add_read = [&](std::string name, float* out) { jobs.push_back([&r, name, out] { return r.read(name, out); }); };
  // W_O and the MLP matrices are packed (packed_gemm.h) from blocks of 64 rows, never a plain copy.
  auto add_read_packed = [&](std::string name, int64_t rows, int64_t cols, PackedMatrix* out) {
    jobs.push_back([&r, name, rows, cols, out] {
      Status read;
      // A BF16 / F16 file's matrices stay 16-bit (exact: the values are the file's).
      const WeightDtype dt = r.data16(name) ? r.dtype16(name) : WeightDtype::F32;
      out->assign_by_rows(rows, cols, [&](int64_t r0, int64_t n, float* block) { return (read = r.read_rows(name, r0, n, cols, block)).ok(); }, dt);
      return read;
    });
  };
  auto add_read_cols = [&](std::string name, int64_t c0, int64_t n, float* out) {
    jobs.push_back([&r, name, c0, n, out] { return r.read_cols(name, c0, n, out); });
  };
  const SafetensorsFile* wte_file = src->where.at(prefix + "wte.weight");
  for (int64_t r0 = 0; r0 < V; r0 += 8192) {
    const int64_t n = std::min<int64_t>(8192, V - r0);
    float* out = w.tok_emb.data() + r0 * D;
    jobs.push_back([wte_file, name = prefix + "wte.weight", r0, n, D, out] { return wte_file->read_block_f32(name, r0, n, 0, D, out); });
  }
  add_read("wpe.weight", w.pos_emb.data());
  add_read("ln_f.weight", w.lnf_g.data());
  add_read("ln_f.bias", w.lnf_b.data());
  w.layers.resize(static_cast<size_t>(L));
  for (int64_t l = 0; l < L; ++l) {
    LayerWeights& lw = w.layers[static_cast<size_t>(l)];
    const std::string h = "h." + std::to_string(l) + ".";
    for (RowVec* v : {&lw.ln1_g, &lw.ln1_b, &lw.b_q, &lw.b_k, &lw.b_v, &lw.b_o, &lw.ln2_g, &lw.ln2_b, &lw.b_proj}) v->resize(D);
    for (MatR* m : {&lw.w_q, &lw.w_k, &lw.w_v}) m->resize(D, D);
    lw.b_fc.resize(4 * D);
    add_read(h + "ln_1.weight", lw.ln1_g.data());
    add_read(h + "ln_1.bias", lw.ln1_b.data());
    // c_attn (D, 3D) = [W_Q | W_K | W_V]: column blocks 0, D, 2D; its bias likewise.
    add_read_cols(h + "attn.c_attn.weight", 0, D, lw.w_q.data());
    add_read_cols(h + "attn.c_attn.weight", D, D, lw.w_k.data());
    add_read_cols(h + "attn.c_attn.weight", 2 * D, D, lw.w_v.data());
    add_read_cols(h + "attn.c_attn.bias", 0, D, lw.b_q.data());
    add_read_cols(h + "attn.c_attn.bias", D, D, lw.b_k.data());
    add_read_cols(h + "attn.c_attn.bias", 2 * D, D, lw.b_v.data());
    add_read_packed(h + "attn.c_proj.weight", D, D, &lw.w_o);
    add_read(h + "attn.c_proj.bias", lw.b_o.data());
    add_read(h + "ln_2.weight", lw.ln2_g.data());
    add_read(h + "ln_2.bias", lw.ln2_b.data());
    add_read_packed(h + "mlp.c_fc.weight", D, 4 * D, &lw.w_fc);
    add_read(h + "mlp.c_fc.bias", lw.b_fc.data());
    add_read_packed(h + "mlp.c_proj.weight", 4 * D, D, &lw.w_proj);
    add_read(h + "mlp.c_proj.bias", lw.b_proj.data());
  }
  std::vector<Status> results(jobs.size());
#pragma omp parallel for schedule(dynamic, 1) num_threads(compute_threads())
  for (size_t i = 0; i < jobs.size(); ++i) results[i] = jobs[i]();
  for (const Status& st : results)
    if (!st) return st.error();
#pragma omp parallel for schedule(static) num_threads(compute_threads())
  for (int64_t l = 0; l < L; ++l) w.layers[static_cast<size_t>(l)].fuse();
  if (lm_file) {
    // An explicit lm_head equal to wte is the tied unembedding written out: keep one copy.
    // Compared in blocks of rows, so a tied head never costs a second (V, D) matrix.
    const int64_t block = 1024;
    MatR rows_buf(std::min<int64_t>(block, V), D);
    bool tied = true;
    for (int64_t r0 = 0; r0 < V && tied; r0 += block) {
      const int64_t n = std::min(block, V - r0);
      if (Status s = lm_file->read_block_f32("lm_head.weight", r0, n, 0, D, rows_buf.data()); !s) return s.error();
      tied = rows_buf.topRows(n) == w.tok_emb.middleRows(r0, n);
    }
    if (!tied) {
      w.lm_head.resize(V, D);
      if (Status s = lm_file->read_f32("lm_head.weight", w.lm_head.data()); !s) return s.error();
    }
  }

  WeightsSource& s = w.source;
  s.kind = WeightsSource::Kind::Pretrained;
  s.trained_heads = cfg->n_head;
  s.model_type = cfg->model_type;
  s.path = dir_in;
  s.model_name = model_dir_name(dir);
  s.parameters = parameter_count(w);
  return w;
}

}  // namespace headmap
