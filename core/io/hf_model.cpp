// hf_model.cpp: Hugging Face directories of every supported family -> ModelWeights + Arch
// (see hf_model.h): the one loader, reading each family's table entry (hf_families.h).
//
// D = d_model, H = heads, KV = K/V heads, dh = d_head, L = layers, V = vocab, F = MLP width
// Sections: [names] [load] [dispatch]
#include "core/io/hf_model.h"

#include <algorithm>
#include <cstring>
#include <filesystem>

#include "core/io/checkpoint.h"
#include "core/io/file_io.h"
#include "core/io/gguf_model.h"
#include "core/io/hf_families.h"
#include "core/io/hf_tensors.h"
#include "core/io/model_cache.h"
#include "core/io/model_dir.h"
#include "core/math/gemm.h"
#include "core/memory_budget.h"

namespace headmap {
namespace fs = std::filesystem;

namespace {

// ---- [names] ---------------------------------------------------------------------------
// Buffers real files carry that no weight reads: the causal-mask buffers of older saves, RoPE's frequencies.
bool ignorable(const std::string& name) {
  auto ends = [&](const char* s) { const size_t n = std::strlen(s); return name.size() >= n && name.compare(name.size() - n, n, s) == 0; };
  return ends(".attn.bias") || ends(".attn.masked_bias") || ends("attention.bias") || ends("attention.masked_bias") ||
         ends("rotary_emb.inv_freq");
}

// A layer's name for one part: "" when the family has none.
std::string part(const std::string& layer, const char* name, const char* suffix) { return *name ? layer + name + suffix : std::string(); }

// A norm's gain and bias under their names of today (.weight, .bias) or of older files (.gamma, .beta: BERT).
std::pair<std::string, std::string> norm_names(const TensorReader& r, const std::string& base) {
  if (!r.has(base + ".weight") && r.has(base + ".gamma")) return {base + ".gamma", base + ".beta"};
  return {base + ".weight", base + ".bias"};
}

// The values of one norm, folded: Gemma's (1 + w).
Status read_norm(const TensorReader& r, const std::string& base, int64_t D, bool ln, float plus, RowVec& g, RowVec* b) {
  const auto [gn, bn] = norm_names(r, base);
  if (Status s = read_vec(r, gn, D, g); !s) return s;
  g.array() += plus;
  if (!b) return Status();
  *b = RowVec::Zero(D);
  return ln ? read_vec(r, bn, D, *b) : Status();
}

// Finite check of a 16-bit tensor's first n values (the packing reported a non-finite one).
Status finite16(const TensorReader& r, const std::string& name, int64_t n) {
  const uint16_t* raw = r.data16(name);
  const uint16_t inf_exp = r.dtype16(name) == WeightDtype::BF16 ? 0x7F80u : 0x7C00u;
  if (std::any_of(raw, raw + n, [&](uint16_t v) { return (v & inf_exp) == inf_exp; }))
    return Error{ErrorKind::BadFormat, r.dir() + ": tensor \"" + name + "\" holds a value that is not finite (NaN or infinity)."};
  return Status();
}
}  // namespace

// ---- [load] ----------------------------------------------------------------------------
static Result<ModelWeights> load_family(const fs::path& dir, const std::string& dir_in, const HfModelConfig& c) {
  Result<TensorSource> src = open_tensors(dir);
  if (!src) return src.error();
  auto tokenizer = [&](ModelWeights& w) -> Status {
    auto there = [&](const char* f) { return fs::exists(dir / f); };
    const HfFamily* fam = hf_family(c.arch.family);
    if (fam && fam->needs_tokenizer_json && !there("tokenizer.json"))
      return Error{ErrorKind::Io, dir_in + " has no tokenizer.json: " + c.arch.name + " needs it for its <s> ... </s> pairs (download it with the model: "
                                            "huggingface-cli download MODEL tokenizer.json)."};
    if (!there("tokenizer.json") && !(there("vocab.json") && there("merges.txt")) && !there("vocab.txt") && !there("tokenizer.model"))
      return Error{ErrorKind::Io, dir_in + " has no tokenizer.json (nor vocab.json + merges.txt, nor vocab.txt): " + c.arch.name +
                                      " models need it (download it with the model: huggingface-cli download MODEL tokenizer.json)."};
    if (Status s = load_hf_tokenizer(dir, c.vocab_size, w); !s) return Error{s.error().kind, c.arch.name + ": " + s.error().message};
    return Status();
  };
  Result<ModelWeights> w = load_family_tensors(*src, dir_in, c, tokenizer);
  if (w) w->source.model_name = model_dir_name(dir);
  return w;
}

Result<ModelWeights> load_family_tensors(const TensorSource& src_in, const std::string& dir_in, const HfModelConfig& c,
                                         const std::function<Status(ModelWeights&)>& tokenizer) {
  const Arch& a = c.arch;
  const HfFamily* fam = hf_family(c.tensor_names.empty() ? a.family : c.tensor_names);
  if (!fam) return bad_format(dir_in + ": no tensor names are known for the family \"" + a.family + "\".");
  const HfTensorNames& nm = fam->names;
  const QkvLayout qkv = fam->qkv;
  const MlpLayout mlp = fam->mlp;
  const int64_t D = c.d_model, H = c.num_heads, KV = c.num_kv_heads, dh = c.head_dim, L = c.num_layers, V = c.vocab_size, F = c.mlp_width;
  const int64_t Y = *nm.token_types ? a.token_types : 0;  // token types (encoders)
  const int64_t Dq = H * dh, Dkv = KV * dh;
  const TensorSource* src = &src_in;
  std::string prefix;
  auto holds = [&](const std::string& n) { return src->where.count(n) + src->blocks.count(n) > 0; };  // a GGUF file's blocks too
  for (const char* p : nm.prefixes)
    if (holds(std::string(p) + nm.embed)) {
      prefix = p;
      break;
    }
  if (!holds(prefix + nm.embed)) {
    const std::string first = !src->where.empty()    ? "\"" + src->where.begin()->first + "\""
                              : !src->blocks.empty() ? "\"" + src->blocks.begin()->first + "\""
                                                     : "none";
    return bad_format(dir_in + ": there is no " + nm.embed + " (with or without a prefix), so these are not " + a.name + "'s tensors (the first is " + first + ").");
  }
  TensorReader r(*src, prefix, dir_in);
  r.config_text_ = a.name + ": hidden_size " + std::to_string(D) + ", " + std::to_string(H) + " heads (" + std::to_string(KV) + " K/V) of " +
                   std::to_string(dh) + ", " + std::to_string(L) + " layers, intermediate_size " + std::to_string(F) + ", vocab_size " + std::to_string(V) +
                   (*nm.pos ? ", positions " + std::to_string(c.positions) : "") + (Y > 0 ? ", type_vocab_size " + std::to_string(Y) : "");
  const bool ln = a.norm == NormKind::LayerNorm;
  const std::string final_norm = nm.final_norm;
  const int64_t qn = a.qk_norm_whole ? Dq : dh, kn = a.qk_norm_whole ? Dkv : dh;  // the q/k norms' widths

  // pass 1: every shape against config.json
  std::vector<Status> checks = {r.expect(nm.embed, {V, D})};
  auto expect_norm = [&](TensorReader& rd, const std::string& base, bool bias) {
    const auto [g, b] = norm_names(rd, base);
    checks.push_back(rd.expect(g, {D}));
    if (bias) checks.push_back(rd.expect(b, {D}));
  };
  if (!final_norm.empty()) expect_norm(r, final_norm, ln);
  if (*nm.pos) checks.push_back(r.expect(nm.pos, {c.positions, D}));
  if (Y > 0) checks.push_back(r.expect(nm.token_types, {Y, D}));
  if (*nm.embed_norm) expect_norm(r, nm.embed_norm, true);
  for (int64_t l = 0; l < L; ++l) {
    const std::string p = nm.layer + std::to_string(l) + ".";
    auto norm = [&](const char* n, bool bias) {
      if (*n) expect_norm(r, p + n, bias);
    };
    auto linear = [&](const char* n, std::vector<int64_t> shape, bool bias, int64_t bias_n) {
      checks.push_back(r.expect(p + n + ".weight", std::move(shape)));
      if (bias) checks.push_back(r.expect(p + n + ".bias", {bias_n}));
    };
    norm(nm.ln1, ln), norm(nm.ln2, ln), norm(nm.post_attn, false), norm(nm.post_mlp, false);
    switch (qkv) {
      case QkvLayout::Separate:
        linear(nm.q, {Dq, D}, a.attn_bias, Dq), linear(nm.k, {Dkv, D}, a.attn_bias, Dkv), linear(nm.v, {Dkv, D}, a.attn_bias, Dkv);
        break;
      case QkvLayout::Fused: linear(nm.qkv, {Dq + 2 * Dkv, D}, a.attn_bias, Dq + 2 * Dkv); break;
      case QkvLayout::PerHead: linear(nm.qkv, {3 * Dq, D}, a.attn_bias, 3 * Dq); break;
      case QkvLayout::Conv1D: linear(nm.qkv, {D, 3 * Dq}, a.attn_bias, 3 * Dq); break;
    }
    linear(nm.o, qkv == QkvLayout::Conv1D ? std::vector<int64_t>{Dq, D} : std::vector<int64_t>{D, Dq}, a.out_bias, D);
    if (a.qk_norm) checks.push_back(r.expect(p + nm.q_norm + ".weight", {qn})), checks.push_back(r.expect(p + nm.k_norm + ".weight", {kn}));
    switch (mlp) {
      case MlpLayout::Separate:
        if (a.gated()) linear(nm.gate, {F, D}, a.mlp_bias, F);
        linear(nm.up, {F, D}, a.mlp_bias, F), linear(nm.down, {D, F}, a.mlp_bias, D);
        break;
      case MlpLayout::FusedGateUp: linear(nm.up, {2 * F, D}, a.mlp_bias, 2 * F), linear(nm.down, {D, F}, a.mlp_bias, D); break;
      case MlpLayout::Conv1D: linear(nm.up, {D, F}, a.mlp_bias, F), linear(nm.down, {F, D}, a.mlp_bias, D); break;
    }
  }
  // An encoder's masked-LM head, beside the prefix: all of it, or none (BertModel, RobertaModel, DistilBertModel).
  TensorReader head(*src, "", dir_in);
  head.config_text_ = r.config_text_;
  const bool mlm = *nm.mlm_dense && head.has(std::string(nm.mlm_dense) + ".weight");
  const std::string unembed_bias = std::string(nm.unembed).substr(0, std::string(nm.unembed).rfind('.')) + ".bias";
  std::string mlm_bias;  // the decoder's bias: the head's own, else the decoder's
  if (mlm) {
    checks.push_back(head.expect(std::string(nm.mlm_dense) + ".weight", {D, D}));
    checks.push_back(head.expect(std::string(nm.mlm_dense) + ".bias", {D}));
    expect_norm(head, nm.mlm_norm, true);
    for (const std::string& b : {std::string(nm.mlm_bias), unembed_bias})
      if (head.has(b)) {
        checks.push_back(head.expect(b, {V}));
        if (mlm_bias.empty()) mlm_bias = b;
      }
    if (mlm_bias.empty()) return bad_format(dir_in + ": the masked-LM head has no bias (" + nm.mlm_bias + ").");
  }
  for (const Status& s : checks)
    if (!s) return s.error();
  // The unembedding sits beside the prefix ("lm_head.weight", "embed_out.weight"), its bias too (Phi).
  const std::string unembed = nm.unembed;
  const SafetensorsFile* lm_file = nullptr;
  const BlockTensor* lm_blocks = src->blocks.count(unembed) ? &src->blocks.at(unembed) : nullptr;
  if (lm_blocks && lm_blocks->shape != std::vector<int64_t>{V, D})
    return bad_format(lm_blocks->file + ": \"" + unembed + "\" has shape " + shape_text(lm_blocks->shape) + " but the unembedding of " + a.name +
                      " needs " + shape_text({V, D}) + ".");
  if (lm_blocks) {
    // kept in a GGUF file's blocks: its shape checked above
  } else if (auto it = src->where.find(unembed); it != src->where.end()) {
    if (it->second->tensors().at(unembed).shape != std::vector<int64_t>{V, D})
      return bad_format(it->second->path() + ": \"" + unembed + "\" has shape " + shape_text(it->second->tensors().at(unembed).shape) +
                        " but the unembedding of " + a.name + " needs " + shape_text({V, D}) + ".");
    lm_file = it->second;
  } else if (!a.tied) {
    return bad_format(dir_in + ": config.json says the unembedding is not tied (tie_word_embeddings false) but there is no \"" + unembed + "\".");
  }
  const SafetensorsFile* lm_bias_file = nullptr;
  if (fam->lm_head_bias) {
    auto it = src->where.find(unembed_bias);
    if (it == src->where.end() || it->second->tensors().at(unembed_bias).shape != std::vector<int64_t>{V})
      return bad_format(dir_in + ": " + a.name + "'s lm_head has a bias: \"" + unembed_bias + "\" of shape " + shape_text({V}) + " is missing.");
    lm_bias_file = it->second;
  }
  auto ignored = [&](const std::string& name) {
    return ignorable(name) || std::any_of(nm.ignored.begin(), nm.ignored.end(), [&](const char* part) { return name.find(part) != std::string::npos; });
  };
  for (const auto& [name, b] : src->blocks)
    if (!r.used().count(name) && name != unembed)
      return bad_format(b.file + ": unexpected tensor \"" + name + "\" for a " + a.name + " with " + std::to_string(L) + " layers.");
  for (const auto& [name, file] : src->where)
    if (!r.used().count(name) && !head.used().count(name) && !ignored(name) && name != unembed && !(lm_bias_file && name == unembed_bias))
      return bad_format(file->path() + ": unexpected tensor \"" + name + "\" for a " + a.name + " with " + std::to_string(L) +
                        " layers (a vision tower, an adapter, or another family?).");

  // pass 2: the budget, the tokenizer, the tensors.
  // The model's real sizes from its Arch, at the bytes a weight takes once loaded from its stored dtype.
  const std::string stored = r.blocks(nm.embed) ? dtype_name(r.blocks(nm.embed)->dtype) : src->where.at(prefix + nm.embed)->tensors().at(prefix + nm.embed).dtype;
  WeightsShape shape = family_weights_shape(a, static_cast<uint64_t>(D), static_cast<uint64_t>(L), static_cast<uint64_t>(V),
                                            *nm.pos ? static_cast<uint64_t>(c.positions) : 0, lm_file != nullptr || lm_blocks != nullptr, stored);
  shape.H = static_cast<uint64_t>(H), shape.KV = static_cast<uint64_t>(KV), shape.d_head = static_cast<uint64_t>(dh), shape.F = static_cast<uint64_t>(F);
  shape.plain_qkv = qkv == QkvLayout::Conv1D;  // GPT-2 keeps W_Q, W_K, W_V plain too (re-sliced by H); others only in the fused W_QKV
  // An encoder's own tensors, read as float32: token types, the embeddings' norm, the masked-LM head.
  const uint64_t encoder_bytes = 4 * static_cast<uint64_t>(Y * D + (*nm.embed_norm ? 2 * D : 0) + (mlm ? D * D + 3 * D + V : 0));
  if (Status s = check_memory(weights_bytes(shape) + encoder_bytes, "The model in " + dir_in + " (" + weights_shape_text(a.name, shape) + ", stored " + stored + ")",
                              "use a smaller model, or raise HEADMAP_MEMORY_BUDGET");
      !s)
    return s.error();
  ModelWeights w;
  if (Status s = tokenizer(w); !s) return s.error();
  w.arch = a;
  w.d_model = static_cast<int>(D);
  w.arch.mlm_head = mlm;
  w.context = static_cast<int>(std::min<int64_t>(c.positions - a.position_offset, 1 << 20));
  w.ln_eps = a.norm_eps;
  // Kept 16-bit or in a GGUF file's blocks (an F32 one among them is widened): read beside the layers, below.
  const bool embed16 = r.data16(nm.embed) != nullptr || (r.blocks(nm.embed) && r.blocks(nm.embed)->dtype != WeightDtype::F32);
  if (!embed16) {
    w.tok_emb.resize(V, D);
    if (Status s = r.read(nm.embed, w.tok_emb.data()); !s) return s.error();
  }
  if (*nm.pos) {
    w.pos_emb.resize(c.positions, D);
    if (Status s = r.read(nm.pos, w.pos_emb.data()); !s) return s.error();
  }
  if (Y > 0) {
    w.type_emb.resize(Y, D);
    if (Status s = r.read(nm.token_types, w.type_emb.data()); !s) return s.error();
  }
  if (*nm.embed_norm)
    if (Status s = read_norm(r, nm.embed_norm, D, true, 0.0f, w.emb_ln_g, &w.emb_ln_b); !s) return s.error();
  const float plus = a.norm_plus_one ? 1.0f : 0.0f;  // Gemma's (1 + w), folded once here
  if (final_norm.empty()) w.lnf_g = RowVec::Ones(D), w.lnf_b = RowVec::Zero(D);  // unused: an encoder has no final norm
  else if (Status s = read_norm(r, final_norm, D, ln, plus, w.lnf_g, &w.lnf_b); !s) return s.error();
  if (mlm) {
    const std::string dense = nm.mlm_dense;
    if (Status s = read_linear(head, dense + ".weight", D, D, w.mlm_dense); !s) return s.error();  // (D, D)
    if (Status s = read_vec(head, dense + ".bias", D, w.mlm_dense_b); !s) return s.error();
    if (Status s = read_norm(head, nm.mlm_norm, D, true, 0.0f, w.mlm_ln_g, &w.mlm_ln_b); !s) return s.error();
    if (Status s = read_vec(head, mlm_bias, V, w.mlm_bias); !s) return s.error();
  }

  w.layers.resize(static_cast<size_t>(L));
  // Items [0, E) are the embedding (the largest table): a 16-bit one packed into the
  // unembedding's panels in E parts (Table16Parts), so the threads pack its parts and the
  // layers side by side; a GGUF file's table in blocks is one item (a copy off the map). The
  // layers are items E .. E + L - 1.
  Table16Parts embed_parts;
  const bool embed_panels = embed16 && begin_table16(r, nm.embed, V, D, 2 * compute_threads(), w.tok_emb16, embed_parts);
  const int64_t E = embed_panels ? embed_parts.parts : embed16 ? 1 : 0;
  std::vector<Status> results(static_cast<size_t>(E + L));
#pragma omp parallel for schedule(dynamic, 1) num_threads(compute_threads())
  for (int64_t i = 0; i < E + L; ++i) {
    if (i < E) {
      results[static_cast<size_t>(i)] =
          embed_panels ? pack_table16_part(r, embed_parts, static_cast<int>(i), w.tok_emb16) : read_rows16(r, nm.embed, V, D, w.tok_emb16);
      continue;
    }
    const int64_t l = i - E;
    LayerWeights& lw = w.layers[static_cast<size_t>(l)];
    const std::string p = nm.layer + std::to_string(l) + ".";
    auto run = [&]() -> Status {
      if (*nm.ln1) {
        if (Status s = read_norm(r, p + nm.ln1, D, ln, plus, lw.ln1_g, &lw.ln1_b); !s) return s;
        if (*nm.ln2) {
          if (Status s = read_norm(r, p + nm.ln2, D, ln, plus, lw.ln2_g, &lw.ln2_b); !s) return s;
        } else {  // Phi: one LayerNorm feeds attention and MLP alike
          lw.ln2_g = lw.ln1_g, lw.ln2_b = lw.ln1_b;
        }
      }
      if (*nm.post_attn) {
        if (Status s = read_norm(r, p + nm.post_attn, D, false, plus, lw.post_attn_g, nullptr); !s) return s;
        if (Status s = read_norm(r, p + nm.post_mlp, D, false, plus, lw.post_mlp_g, nullptr); !s) return s;
      }
      lw.b_q = RowVec::Zero(Dq), lw.b_k = RowVec::Zero(Dkv), lw.b_v = RowVec::Zero(Dkv), lw.b_o = RowVec::Zero(D);
      const std::string fused = part(p, nm.qkv, ".weight"), fused_b = part(p, nm.qkv, ".bias");
      const std::string q = part(p, nm.q, ".weight"), k = part(p, nm.k, ".weight"), v = part(p, nm.v, ".weight");
      auto split_bias = [&](const RowVec& fb) { lw.b_q = fb.head(Dq), lw.b_k = fb.segment(Dq, Dkv), lw.b_v = fb.tail(Dkv); };
      if (qkv == QkvLayout::PerHead) {
        // GPT-NeoX: rows laid out per head, [q (dh) | k (dh) | v (dh)] for head 0, then head 1, ...
        MatR f(3 * Dq, D);  // (3·H·dh, D)
        if (Status s = r.read(fused, f.data()); !s) return s;
        RowVec fb = RowVec::Zero(3 * Dq);
        if (a.attn_bias)
          if (Status s = r.read(fused_b, fb.data()); !s) return s;
        lw.w_q.resize(D, Dq), lw.w_k.resize(D, Dq), lw.w_v.resize(D, Dq);
        for (int64_t h = 0; h < H; ++h)
          for (int64_t j = 0; j < dh; ++j) {
            const int64_t row = h * 3 * dh + j, col = h * dh + j;
            lw.w_q.col(col) = f.row(row).transpose();
            lw.w_k.col(col) = f.row(row + dh).transpose();
            lw.w_v.col(col) = f.row(row + 2 * dh).transpose();
            lw.b_q(col) = fb(row), lw.b_k(col) = fb(row + dh), lw.b_v(col) = fb(row + 2 * dh);
          }
      } else if (qkv == QkvLayout::Conv1D) {
        // GPT-2: c_attn (D, 3D) = [W_Q | W_K | W_V], column blocks 0, Dq, 2·Dq; its bias likewise.
        lw.w_q.resize(D, Dq), lw.w_k.resize(D, Dq), lw.w_v.resize(D, Dq);
        for (Status s : {r.read_cols(fused, 0, Dq, lw.w_q.data()), r.read_cols(fused, Dq, Dq, lw.w_k.data()), r.read_cols(fused, 2 * Dq, Dq, lw.w_v.data()),
                         r.read_cols(fused_b, 0, Dq, lw.b_q.data()), r.read_cols(fused_b, Dq, Dq, lw.b_k.data()), r.read_cols(fused_b, 2 * Dq, Dq, lw.b_v.data())})
          if (!s) return s;
      } else {
        // [q; k; v] rows: one fused tensor (Phi-3) or three. A GGUF file's blocks, or a BF16 / F16
        // file, pack them as one (D, Dq + 2·Dkv) matrix straight from the map, in the file's
        // types; no F32 copy is ever made (W_QKV is their only home). F32: one tensor at a time.
        const bool one = qkv == QkvLayout::Fused;
        const std::vector<std::pair<std::string, int64_t>> parts =
            one ? std::vector<std::pair<std::string, int64_t>>{{fused, Dq + 2 * Dkv}} : std::vector<std::pair<std::string, int64_t>>{{q, Dq}, {k, Dkv}, {v, Dkv}};
        bool blocks = true, narrow = true;
        for (const auto& [n, rows] : parts) {
          blocks = blocks && r.blocks(n);
          narrow = narrow && r.data16(n) && r.dtype16(n) == r.dtype16(parts[0].first);
        }
        if (blocks) {  // types may differ (Q4_K_M: W_V in Q6_K beside Q4_K)
          std::vector<std::string> names;
          for (const auto& [n, rows] : parts) names.push_back(n);
          if (Status s = read_blocks_packed(r, names, D, lw.w_qkv); !s) return s;
        } else if (narrow) {
          std::vector<const uint16_t*> cols;  // (Dq + 2·Dkv): the file row each column reads
          for (const auto& [n, rows] : parts)
            for (int64_t row = 0; row < rows; ++row) cols.push_back(r.data16(n) + row * D);
          if (!lw.w_qkv.assign_transposed_narrow(cols, D, r.dtype16(parts[0].first)))
            for (const auto& [n, rows] : parts)
              if (Status s = finite16(r, n, rows * D); !s) return s;
          for (const auto& [n, rows] : parts) r.release(n);
        } else if (one) {
          MatR all;  // (D, Dq + 2·Dkv)
          if (Status s = read_linear(r, fused, Dq + 2 * Dkv, D, all); !s) return s;
          lw.w_q = all.leftCols(Dq), lw.w_k = all.middleCols(Dq, Dkv), lw.w_v = all.rightCols(Dkv);
        } else {
          for (Status s : {read_linear(r, q, Dq, D, lw.w_q), read_linear(r, k, Dkv, D, lw.w_k), read_linear(r, v, Dkv, D, lw.w_v)})
            if (!s) return s;
        }
        if (a.attn_bias && one) {
          RowVec fb(Dq + 2 * Dkv);
          if (Status s = r.read(fused_b, fb.data()); !s) return s;
          split_bias(fb);
        } else if (a.attn_bias) {
          for (Status s : {r.read(part(p, nm.q, ".bias"), lw.b_q.data()), r.read(part(p, nm.k, ".bias"), lw.b_k.data()), r.read(part(p, nm.v, ".bias"), lw.b_v.data())})
            if (!s) return s;
        }
      }
      const std::string o = part(p, nm.o, ".weight");
      if (Status s = qkv == QkvLayout::Conv1D ? read_conv1d_packed(r, o, Dq, D, lw.w_o) : read_linear_packed(r, o, D, Dq, lw.w_o); !s) return s;  // (Dq, D)
      if (a.out_bias)
        if (Status s = r.read(part(p, nm.o, ".bias"), lw.b_o.data()); !s) return s;
      if (a.qk_norm) {
        if (Status s = read_norm(r, p + nm.q_norm, qn, false, plus, lw.q_norm, nullptr); !s) return s;
        if (Status s = read_norm(r, p + nm.k_norm, kn, false, plus, lw.k_norm, nullptr); !s) return s;
      }
      const std::string up = part(p, nm.up, ".weight"), down = part(p, nm.down, ".weight");
      switch (mlp) {
        case MlpLayout::Separate:
          if (a.gated())
            if (Status s = read_linear_packed(r, part(p, nm.gate, ".weight"), F, D, lw.w_gate); !s) return s;  // (D, F)
          if (Status s = read_linear_packed(r, up, F, D, lw.w_fc); !s) return s;                                // (D, F)
          if (Status s = read_linear_packed(r, down, D, F, lw.w_proj); !s) return s;                            // (F, D)
          break;
        case MlpLayout::FusedGateUp:  // Phi-3: gate_up_proj (2F, D) = [gate; up], each half packed from the map
          if (Status s = read_linear_packed(r, up, F, D, lw.w_gate, 0, false); !s) return s;  // (D, F)
          if (Status s = read_linear_packed(r, up, F, D, lw.w_fc, F, true); !s) return s;     // (D, F)
          if (Status s = read_linear_packed(r, down, D, F, lw.w_proj); !s) return s;         // (F, D)
          break;
        case MlpLayout::Conv1D:
          if (Status s = read_conv1d_packed(r, up, D, F, lw.w_fc); !s) return s;     // (D, F)
          if (Status s = read_conv1d_packed(r, down, F, D, lw.w_proj); !s) return s; // (F, D)
          break;
      }
      lw.b_fc = RowVec::Zero(F), lw.b_proj = RowVec::Zero(D);
      if (a.mlp_bias) {
        if (Status s = r.read(part(p, nm.up, ".bias"), lw.b_fc.data()); !s) return s;
        if (Status s = r.read(part(p, nm.down, ".bias"), lw.b_proj.data()); !s) return s;
      }
      lw.fuse();  // W_QKV's bias; its weights too, unless packed from the file above
      if (lw.plain_qkv() && qkv != QkvLayout::Conv1D) lw.release_plain_qkv();  // one home: W_QKV (readers unpack from it)
      return Status();
    };
    results[static_cast<size_t>(i)] = run();
  }
  if (embed_panels) r.release(nm.embed);
  for (const Status& st : results)
    if (!st) return st.error();
  TensorReader lr(*src, "", dir_in);
  if ((lm_file || lm_blocks) && !w.tok_emb16.empty() && (lr.data16(unembed) || (lm_blocks && lm_blocks->dtype != WeightDtype::F32))) {
    NarrowRows lm;
    if (Status s = read_rows16(lr, unembed, V, D, lm); !s) return s.error();
    if (!(lm == w.tok_emb16)) w.lm_head16 = std::move(lm);
  } else if (lm_file || lm_blocks) {
    MatR lm(V, D);
    if (Status s = lr.read(unembed, lm.data()); !s) return s.error();
    if (!w.tok_emb16.empty()) {  // a 16-bit embedding beside an F32 lm_head: both widened
      w.tok_emb.resize(V, D);
      for (int64_t i = 0; i < V; ++i) w.tok_emb16.row(i, w.tok_emb.row(i).data());
      w.tok_emb16 = NarrowRows();
    }
    if (lm != w.tok_emb) w.lm_head = std::move(lm);
  }
  if (lm_bias_file) {
    w.lm_head_b.resize(V);
    if (Status s = lm_bias_file->read_f32(unembed_bias, w.lm_head_b.data()); !s) return s.error();
  }
  w.arch.tied = !w.untied();

  WeightsSource& s = w.source;
  s.kind = WeightsSource::Kind::Pretrained;
  s.trained_heads = static_cast<int>(H);
  s.model_type = a.family;
  s.path = dir_in;
  s.parameters = parameter_count(w) + w.lm_head_b.size() - (*nm.ln1 && !*nm.ln2 ? L * 2 * D : 0);  // Phi's one norm counted once
  s.parameters += w.type_emb.size() + w.emb_ln_g.size() + w.emb_ln_b.size() + w.mlm_dense.size() + w.mlm_dense_b.size() + w.mlm_ln_g.size() +
                  w.mlm_ln_b.size() + w.mlm_bias.size() - (final_norm.empty() ? 2 * D : 0);  // an encoder's own tensors; its unused final norm not
  s.dtype = stored;
  return w;
}

// ---- [dispatch] ------------------------------------------------------------------------
Result<ModelWeights> load_hf_model(const std::string& dir_in) {
  const fs::path dir(dir_in);
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    return Error{ErrorKind::Io, dir_in + " is not a directory; --model expects a Hugging Face model directory (config.json, model.safetensors, tokenizer.json)."};
  const fs::path config_path = dir / "config.json";
  if (!fs::exists(config_path)) return Error{ErrorKind::Io, dir_in + " has no config.json, so it is not a Hugging Face model directory."};
  if (Status s = check_model_file(dir, config_path); !s) return s.error();
  Result<std::string> text = read_file(config_path.string(), size_t(1) << 20);
  if (!text) return text.error();
  Result<HfModelConfig> c = parse_hf_config(*text, config_path.string());
  if (!c) return c.error();
  return load_family(dir, dir_in, *c);
}

Result<ModelWeights> open_model_path(const std::string& path) {
  const std::string what = " headmap opens a Hugging Face model directory (config.json, model.safetensors, tokenizer.json) of a supported family (" +
                           std::string(supported_families()) + "), a GGUF file (" + gguf_supported_architectures() +
                           ") or a checkpoint file written by headmap-cli train (.safetensors).";
  if (path.empty()) return Error{ErrorKind::InvalidArgument, "No model was named:" + what};
  const fs::path p(path);
  std::error_code ec;
  if (!fs::exists(p, ec)) {
    // A name rather than a path: ORG/NAME in the Hugging Face cache (else LM Studio's),
    // PUBLISHER/REPO/FILE.gguf in LM Studio's, NAME[:TAG] in Ollama's (model_cache.h).
    if (!p.is_absolute() && path[0] != '.') {
      Result<std::string> cached = resolve_cached_model(path);
      if (cached) {  // shown by the name the person gave, not by a blob's digest
        Result<ModelWeights> w = open_model_path(*cached);
        if (w) w->source.opened_as = path;
        return w;
      }
      if (cached.error().kind != ErrorKind::InvalidArgument)
        return Error{cached.error().kind, path + " does not exist as a file or directory, and as a model name: " + cached.error().message + what};
    }
    return Error{ErrorKind::Io, path + " does not exist: it is not a directory or a file." + what};
  }
  if (fs::is_directory(p, ec)) {
    if (fs::exists(p / "config.json", ec)) return load_hf_model(path);
    // A directory of GGUF files (a Hugging Face "-GGUF" repo's snapshot): its one .gguf file.
    std::vector<std::string> ggufs;
    for (const auto& e : fs::directory_iterator(p, ec))
      if (e.path().extension() == ".gguf") ggufs.push_back(e.path().filename().string());
    std::sort(ggufs.begin(), ggufs.end());
    if (ggufs.size() == 1) return load_gguf_model((p / ggufs[0]).string());
    if (ggufs.size() > 1) {
      std::string list;
      for (size_t i = 0; i < ggufs.size() && i < 8; ++i) list += (i ? ", " : "") + ggufs[i];
      return Error{ErrorKind::InvalidArgument, path + " holds " + std::to_string(ggufs.size()) + " GGUF files (" + list + (ggufs.size() > 8 ? ", ..." : "") +
                                                   "); name the one to open: " + (p / ggufs[0]).string() + "."};
    }
    // What it holds, so the person sees why: a few names, safetensors first.
    std::vector<std::string> seen;
    for (const auto& e : fs::directory_iterator(p, ec)) seen.push_back(e.path().filename().string());
    std::sort(seen.begin(), seen.end(), [](const std::string& a, const std::string& b) {
      const bool sa = a.size() > 12 && a.substr(a.size() - 12) == ".safetensors", sb = b.size() > 12 && b.substr(b.size() - 12) == ".safetensors";
      return sa != sb ? sa : a < b;
    });
    std::string list;
    for (size_t i = 0; i < seen.size() && i < 5; ++i) list += (i ? ", " : "") + seen[i];
    if (seen.size() > 5) list += ", ... (" + std::to_string(seen.size()) + " entries)";
    return Error{ErrorKind::Io, path + " has no config.json (" + (seen.empty() ? std::string("the directory is empty") : "the directory holds " + list) +
                                    "), so it is not a Hugging Face model directory." + what +
                                    (seen.empty() ? "" : " A checkpoint file is opened by its own name.")};
  }
  // A file (read_file refuses a FIFO or a device by name): one of headmap's checkpoints (a shipped one or the user's), else a file of a
  // Hugging Face directory (its config.json, tokenizer.json or safetensors), which opens the directory.
  // A GGUF file (llama.cpp's format), known by its magic.
  if (is_gguf_file(path)) return load_gguf_model(path);
  const fs::path dir = p.parent_path().empty() ? fs::path(".") : p.parent_path();
  if (fs::exists(dir / "config.json", ec)) {
    Result<SafetensorsFile> f = SafetensorsFile::open(path);  // the header only (mapped)
    const bool ours = f && (f->metadata().count("format") ? f->metadata().at("format") == "headmap-checkpoint" : f->metadata().count("d_model") > 0);
    if (!ours) return load_hf_model(dir.string());
  }
  return load_checkpoint(path);
}
}  // namespace headmap
