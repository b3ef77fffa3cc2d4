// hf_encoder.cpp: BERT, RoBERTa and DistilBERT directories -> ModelWeights + Arch (see
// hf_encoder.h).
//
// D = d_model, H = heads, L = layers, V = vocab, F = MLP width, P = positions, Y = token types
// Sections: [config] [names] [load]
#include "core/io/hf_encoder.h"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "core/io/hf_tensors.h"
#include "core/memory_budget.h"
#include "core/model/config.h"

namespace headmap {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {
Error bad_format(const std::string& m) { return Error{ErrorKind::BadFormat, m}; }
}  // namespace

// ---- [config] --------------------------------------------------------------------------
Result<HfModelConfig> parse_encoder_config(const json& j, const std::string& origin) {
  const std::string type = j.value("model_type", std::string());
  const bool distil = type == "distilbert", roberta = type == "roberta";
  HfModelConfig c;
  Arch& a = c.arch;
  a.family = type;
  a.name = distil ? "DistilBERT" : roberta ? "RoBERTa" : "BERT";
  auto badf = [&](const std::string& m) { return bad_format(origin + ": " + a.name + ": " + m); };
  auto get_int = [&](const char* key, int lo, int hi, int* out, bool required) {
    return config_int(j, key, lo, hi, out, required, origin + ": " + a.name + ": ");
  };
  int types = distil ? 0 : 2, pad = roberta ? 1 : 0;
  for (Status s : {get_int(distil ? "dim" : "hidden_size", 1, kMaxDModel, &c.d_model, true),
                   get_int(distil ? "n_heads" : "num_attention_heads", 1, kMaxDModel, &c.num_heads, true),
                   get_int(distil ? "n_layers" : "num_hidden_layers", 1, kMaxModelLayers, &c.num_layers, true),
                   get_int("vocab_size", 1, kMaxVocab, &c.vocab_size, true),
                   get_int("max_position_embeddings", 1, kMaxPositions, &c.positions, true),
                   get_int(distil ? "hidden_dim" : "intermediate_size", 1, 16 * kMaxDModel, &c.mlp_width, true),
                   distil ? Status() : get_int("type_vocab_size", 0, 1 << 16, &types, false),
                   get_int("pad_token_id", 0, kMaxVocab, &pad, false)})
    if (!s) return s.error();
  if (c.d_model % c.num_heads != 0)
    return badf("hidden_size " + std::to_string(c.d_model) + " is not divisible by " + std::to_string(c.num_heads) + " heads.");
  c.num_kv_heads = c.num_heads;
  c.head_dim = c.d_model / c.num_heads;
  const std::string pos = j.value("position_embedding_type", std::string("absolute"));
  if (pos != "absolute")
    return badf("position_embedding_type \"" + pos + "\" is not supported (headmap computes absolute learned positions).");
  const std::string act = j.value(distil ? "activation" : "hidden_act", std::string("gelu"));
  if (act == "gelu") a.mlp = MlpKind::GeluErf;
  else if (act == "gelu_new" || act == "gelu_pytorch_tanh") a.mlp = MlpKind::GeluTanh;
  else return badf("the activation \"" + act + "\" is not supported (headmap computes gelu and gelu_new).");
  a.norm = NormKind::LayerNorm;
  a.norm_eps = distil ? 1e-12f : static_cast<float>(j.contains("layer_norm_eps") && j["layer_norm_eps"].is_number() ? j["layer_norm_eps"].get<double>() : 1e-12);
  if (!(a.norm_eps > 0) || a.norm_eps > 1) return badf("layer_norm_eps must be a small positive number.");
  a.placement = NormPlacement::PostNorm;
  a.positions = PositionKind::Learned;
  a.bidirectional = true;
  a.embed_norm = true;
  a.token_types = types;
  a.position_offset = roberta ? pad + 1 : 0;
  if (a.position_offset >= c.positions) return badf("pad_token_id leaves no position for the tokens.");
  a.mlp_width = c.mlp_width;
  // H fixed by the weights? BERT's heads slice D like GPT-2's, so another H re-slices them.
  return c;
}

// ---- [names] ---------------------------------------------------------------------------
namespace {
struct EncoderNames {
  std::string prefix;                                  // "bert." / "roberta." / "distilbert." / ""
  std::string word, pos, type, emb_ln, layer;
  std::string q, k, v, o, ln1, up, down, ln2;          // + ".weight" / ".bias"
  std::string head_dense, head_ln, head_bias, decoder; // without the prefix; decoder + ".weight"
};

EncoderNames encoder_names(const std::string& type) {
  EncoderNames n;
  n.word = "embeddings.word_embeddings.weight", n.pos = "embeddings.position_embeddings.weight";
  n.emb_ln = "embeddings.LayerNorm";
  if (type == "distilbert") {
    n.layer = "transformer.layer.";
    n.q = "attention.q_lin", n.k = "attention.k_lin", n.v = "attention.v_lin", n.o = "attention.out_lin";
    n.ln1 = "sa_layer_norm", n.up = "ffn.lin1", n.down = "ffn.lin2", n.ln2 = "output_layer_norm";
    n.head_dense = "vocab_transform", n.head_ln = "vocab_layer_norm", n.head_bias = "vocab_projector.bias", n.decoder = "vocab_projector";
    return n;
  }
  n.type = "embeddings.token_type_embeddings.weight";
  n.layer = "encoder.layer.";
  n.q = "attention.self.query", n.k = "attention.self.key", n.v = "attention.self.value", n.o = "attention.output.dense";
  n.ln1 = "attention.output.LayerNorm", n.up = "intermediate.dense", n.down = "output.dense", n.ln2 = "output.LayerNorm";
  if (type == "roberta")
    n.head_dense = "lm_head.dense", n.head_ln = "lm_head.layer_norm", n.head_bias = "lm_head.bias", n.decoder = "lm_head.decoder";
  else
    n.head_dense = "cls.predictions.transform.dense", n.head_ln = "cls.predictions.transform.LayerNorm", n.head_bias = "cls.predictions.bias",
    n.decoder = "cls.predictions.decoder";
  return n;
}

bool ignorable(const std::string& name) {
  auto starts = [&](const char* s) { return name.rfind(s, 0) == 0; };
  auto ends = [&](const char* s) { const size_t n = std::strlen(s); return name.size() >= n && name.compare(name.size() - n, n, s) == 0; };
  // buffers, the pooler and the next-sentence head: nothing of them reaches a map or a masked word
  return ends("embeddings.position_ids") || ends("embeddings.token_type_ids") || name.find("pooler.") != std::string::npos ||
         starts("cls.seq_relationship.") || starts("qa_outputs.") || starts("classifier.") || starts("pre_classifier.");
}

// A LayerNorm's gain and bias under their names of today (.weight, .bias) or of older files (.gamma, .beta).
std::pair<std::string, std::string> ln_names(const TensorReader& r, const std::string& base) {
  if (!r.has(base + ".weight") && r.has(base + ".gamma")) return {base + ".gamma", base + ".beta"};
  return {base + ".weight", base + ".bias"};
}

}  // namespace

// ---- [load] ----------------------------------------------------------------------------
Result<ModelWeights> load_hf_encoder(const fs::path& dir, const std::string& dir_in, const HfModelConfig& c) {
  const Arch& a = c.arch;
  const int64_t D = c.d_model, H = c.num_heads, L = c.num_layers, V = c.vocab_size, F = c.mlp_width, P = c.positions, Y = a.token_types;
  Result<TensorSource> src = open_tensors(dir);
  if (!src) return src.error();
  EncoderNames nm = encoder_names(a.family);
  for (const char* p : {"bert.", "roberta.", "distilbert.", ""})
    if (src->where.count(std::string(p) + nm.word)) {
      nm.prefix = p;
      break;
    }
  if (!src->where.count(nm.prefix + nm.word))
    return bad_format(dir_in + ": there is no " + nm.word + " (with or without a prefix), so these are not " + a.name + "'s tensors.");
  TensorReader r(*src, nm.prefix, dir_in), head(*src, "", dir_in);
  r.config_text_ = head.config_text_ = a.name + ": hidden_size " + std::to_string(D) + ", " + std::to_string(H) + " heads, " + std::to_string(L) +
                                       " layers, intermediate_size " + std::to_string(F) + ", vocab_size " + std::to_string(V) +
                                       ", max_position_embeddings " + std::to_string(P) + (Y > 0 ? ", type_vocab_size " + std::to_string(Y) : "");

  // pass 1: every shape against config.json
  std::vector<Status> checks = {r.expect(nm.word, {V, D}), r.expect(nm.pos, {P, D})};
  if (Y > 0) checks.push_back(r.expect(nm.type, {Y, D}));
  auto norm = [&](TensorReader& rd, const std::string& base) {
    const auto [g, b] = ln_names(rd, base);
    checks.push_back(rd.expect(g, {D}));
    checks.push_back(rd.expect(b, {D}));
  };
  auto linear = [&](TensorReader& rd, const std::string& base, int64_t out, int64_t in) {
    checks.push_back(rd.expect(base + ".weight", {out, in}));
    checks.push_back(rd.expect(base + ".bias", {out}));
  };
  norm(r, nm.emb_ln);
  for (int64_t l = 0; l < L; ++l) {
    const std::string p = nm.layer + std::to_string(l) + ".";
    linear(r, p + nm.q, D, D), linear(r, p + nm.k, D, D), linear(r, p + nm.v, D, D), linear(r, p + nm.o, D, D);
    norm(r, p + nm.ln1);
    linear(r, p + nm.up, F, D), linear(r, p + nm.down, D, F);
    norm(r, p + nm.ln2);
  }
  // The masked-LM head: all of it, or none (BertModel, RobertaModel, DistilBertModel).
  const bool mlm = head.has(nm.head_dense + ".weight");
  const bool own_decoder = mlm && head.has(nm.decoder + ".weight");
  if (mlm) {
    linear(head, nm.head_dense, D, D);
    norm(head, nm.head_ln);
    if (head.has(nm.head_bias)) checks.push_back(head.expect(nm.head_bias, {V}));
    if (own_decoder) checks.push_back(head.expect(nm.decoder + ".weight", {V, D}));
    if (head.has(nm.decoder + ".bias")) checks.push_back(head.expect(nm.decoder + ".bias", {V}));
    if (!head.has(nm.head_bias) && !head.has(nm.decoder + ".bias"))
      return bad_format(dir_in + ": the masked-LM head has no bias (" + nm.head_bias + ").");
  }
  for (const Status& s : checks)
    if (!s) return s.error();
  for (const auto& [name, file] : src->where)
    if (!r.used().count(name) && !head.used().count(name) && !ignorable(name))
      return bad_format(file->path() + ": unexpected tensor \"" + name + "\" for a " + a.name + " with " + std::to_string(L) +
                        " layers (another head, an adapter, or another family?).");

  // pass 2: the budget, the tokenizer, the tensors.
  const uint64_t per_layer = static_cast<uint64_t>(2 * 4 * D * D + 2 * D * F + 10 * D + F);
  const uint64_t bytes = 4 * (static_cast<uint64_t>(L) * per_layer + static_cast<uint64_t>((own_decoder ? 2 : 1) * V * D + (P + Y) * D + 2 * D * D));
  if (Status s = check_memory(bytes, "The model in " + dir_in, "use a smaller model, or raise HEADMAP_MEMORY_BUDGET"); !s) return s.error();
  ModelWeights w;
  if (a.family == "roberta" && !fs::exists(dir / "tokenizer.json"))
    return Error{ErrorKind::Io, dir_in + " has no tokenizer.json: RoBERTa needs it for its <s> ... </s> pairs (download it with the model: "
                                          "huggingface-cli download MODEL tokenizer.json)."};
  if (Status s = load_hf_tokenizer(dir, static_cast<int>(V), w); !s) return Error{s.error().kind, a.name + ": " + s.error().message};
  w.arch = a;
  w.arch.mlm_head = mlm;
  w.d_model = static_cast<int>(D);
  w.context = static_cast<int>(std::min<int64_t>(P - a.position_offset, 1 << 20));
  w.ln_eps = a.norm_eps;
  w.tok_emb.resize(V, D);
  w.pos_emb.resize(P, D);
  if (Status s = r.read(nm.word, w.tok_emb.data()); !s) return s.error();
  if (Status s = r.read(nm.pos, w.pos_emb.data()); !s) return s.error();
  if (Y > 0) {
    w.type_emb.resize(Y, D);
    if (Status s = r.read(nm.type, w.type_emb.data()); !s) return s.error();
  }
  auto read_norm = [&](const TensorReader& rd, const std::string& base, RowVec& g, RowVec& b) -> Status {
    const auto [gn, bn] = ln_names(rd, base);
    if (Status s = read_vec(rd, gn, D, g); !s) return s;
    return read_vec(rd, bn, D, b);
  };
  if (Status s = read_norm(r, nm.emb_ln, w.emb_ln_g, w.emb_ln_b); !s) return s.error();

  w.layers.resize(static_cast<size_t>(L));
  for (int64_t l = 0; l < L; ++l) {
    LayerWeights& lw = w.layers[static_cast<size_t>(l)];
    const std::string p = nm.layer + std::to_string(l) + ".";
    auto run = [&]() -> Status {
      lw.b_q.resize(D), lw.b_k.resize(D), lw.b_v.resize(D), lw.b_o.resize(D), lw.b_fc.resize(F), lw.b_proj.resize(D);
      for (Status s : {read_linear(r, p + nm.q + ".weight", D, D, lw.w_q), read_linear(r, p + nm.k + ".weight", D, D, lw.w_k),
                       read_linear(r, p + nm.v + ".weight", D, D, lw.w_v), r.read(p + nm.q + ".bias", lw.b_q.data()),
                       r.read(p + nm.k + ".bias", lw.b_k.data()), r.read(p + nm.v + ".bias", lw.b_v.data()),
                       r.read(p + nm.o + ".bias", lw.b_o.data()), r.read(p + nm.up + ".bias", lw.b_fc.data()),
                       r.read(p + nm.down + ".bias", lw.b_proj.data()), read_norm(r, p + nm.ln1, lw.ln1_g, lw.ln1_b),
                       read_norm(r, p + nm.ln2, lw.ln2_g, lw.ln2_b)})
        if (!s) return s;
      MatR m;
      if (Status s = read_linear(r, p + nm.o + ".weight", D, D, m); !s) return s;  // (D, D)
      lw.w_o = PackedMatrix(m);
      if (Status s = read_linear(r, p + nm.up + ".weight", F, D, m); !s) return s;  // (D, F)
      lw.w_fc = PackedMatrix(m);
      if (Status s = read_linear(r, p + nm.down + ".weight", D, F, m); !s) return s;  // (F, D)
      lw.w_proj = PackedMatrix(m);
      lw.fuse();
      return Status();
    };
    if (Status s = run(); !s) return s.error();
  }
  w.lnf_g = RowVec::Ones(D), w.lnf_b = RowVec::Zero(D);  // unused: an encoder has no final norm
  if (mlm) {
    if (Status s = read_linear(head, nm.head_dense + ".weight", D, D, w.mlm_dense); !s) return s.error();  // (D, D)
    if (Status s = read_vec(head, nm.head_dense + ".bias", D, w.mlm_dense_b); !s) return s.error();
    if (Status s = read_norm(head, nm.head_ln, w.mlm_ln_g, w.mlm_ln_b); !s) return s.error();
    if (Status s = read_vec(head, head.has(nm.head_bias) ? nm.head_bias : nm.decoder + ".bias", V, w.mlm_bias); !s) return s.error();
    if (own_decoder) {
      MatR dec(V, D);
      if (Status s = head.read(nm.decoder + ".weight", dec.data()); !s) return s.error();
      if (dec != w.tok_emb) w.lm_head = std::move(dec);
    }
  }
  w.arch.tied = w.lm_head.size() == 0;

  WeightsSource& s = w.source;
  s.kind = WeightsSource::Kind::Pretrained;
  s.trained_heads = static_cast<int>(H);
  s.model_type = a.family;
  s.path = dir_in;
  s.model_name = model_dir_name(dir);
  s.parameters = parameter_count(w) - w.lnf_g.size() - w.lnf_b.size() + w.type_emb.size() + w.emb_ln_g.size() + w.emb_ln_b.size() +
                 w.mlm_dense.size() + w.mlm_dense_b.size() + w.mlm_ln_g.size() + w.mlm_ln_b.size() + w.mlm_bias.size();
  s.dtype = src->where.at(nm.prefix + nm.word)->tensors().at(nm.prefix + nm.word).dtype;
  return w;
}

}  // namespace headmap
