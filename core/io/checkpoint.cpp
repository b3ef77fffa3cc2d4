// checkpoint.cpp: safetensors writing and validated reading (see checkpoint.h).
//
// D = d_model, L = layers, V = vocab, P = context
// Sections: [tensor table] [writing] [reading]
#include "core/io/checkpoint.h"

#include <algorithm>
#include <bit>
#include <charconv>
#include <cmath>
#include <cstring>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <vector>

#include "core/model/config.h"
#include "core/io/export.h"
#include "core/io/safetensors.h"
#include "core/model/model.h"
#include "core/math/half.h"
#include "core/math/rng.h"
#include "core/memory_budget.h"

namespace headmap {
using nlohmann::json;
static_assert(std::endian::native == std::endian::little, "safetensors stores little-endian floats; add byte swapping for this CPU");

// ---- [tensor table] --------------------------------------------------------------------
namespace {
constexpr const char* kFormat = "headmap-checkpoint";
constexpr int kCheckTokens = 24;

// One tensor of ModelWeights: its name, its storage and the shape it must have.
struct Slot {
  std::string name;
  float* data;  // resized by the caller to rows x cols before use
  std::vector<int64_t> shape;
};

// W_O and the MLP matrices live packed in LayerWeights (packed_gemm.h); files hold them
// plain. packed[3l], [3l + 1], [3l + 2] are layer l's w_o (D, D), w_fc (D, 4D) and w_proj
// (4D, D) as plain matrices.
std::vector<MatR> plain_packed(const ModelWeights& w) {
  std::vector<MatR> m;
  for (const LayerWeights& lw : w.layers) {
    m.push_back(lw.w_o.plain());
    m.push_back(lw.w_fc.plain());
    m.push_back(lw.w_proj.plain());
  }
  return m;
}
void pack_plain(ModelWeights& w, const std::vector<MatR>& plain) {
  for (size_t l = 0; l < w.layers.size(); ++l) {
    w.layers[l].w_o = PackedMatrix(plain[3 * l]);
    w.layers[l].w_fc = PackedMatrix(plain[3 * l + 1]);
    w.layers[l].w_proj = PackedMatrix(plain[3 * l + 2]);
  }
}

// Every tensor of a model with dimensions (D, L, V, P), in file order. `w` must already
// have its layers and matrices sized (see sized_weights()); `packed` holds the packed ones, plain.
std::vector<Slot> slots(ModelWeights& w, std::vector<MatR>& packed) {
  const int64_t D = w.d_model;
  std::vector<Slot> s;
  s.push_back({"tok_emb", w.tok_emb.data(), {w.tok_emb.rows(), D}});
  s.push_back({"pos_emb", w.pos_emb.data(), {w.pos_emb.rows(), D}});
  for (int l = 0; l < w.num_layers(); ++l) {
    LayerWeights& lw = w.layers[static_cast<size_t>(l)];
    const std::string n = "layers." + std::to_string(l) + ".";
    s.push_back({n + "ln1_g", lw.ln1_g.data(), {D}});
    s.push_back({n + "ln1_b", lw.ln1_b.data(), {D}});
    s.push_back({n + "w_q", lw.w_q.data(), {D, D}});
    s.push_back({n + "w_k", lw.w_k.data(), {D, D}});
    s.push_back({n + "w_v", lw.w_v.data(), {D, D}});
    s.push_back({n + "w_o", packed[3 * static_cast<size_t>(l)].data(), {D, D}});
    s.push_back({n + "b_q", lw.b_q.data(), {D}});
    s.push_back({n + "b_k", lw.b_k.data(), {D}});
    s.push_back({n + "b_v", lw.b_v.data(), {D}});
    s.push_back({n + "b_o", lw.b_o.data(), {D}});
    s.push_back({n + "ln2_g", lw.ln2_g.data(), {D}});
    s.push_back({n + "ln2_b", lw.ln2_b.data(), {D}});
    s.push_back({n + "w_fc", packed[3 * static_cast<size_t>(l) + 1].data(), {D, 4 * D}});
    s.push_back({n + "b_fc", lw.b_fc.data(), {4 * D}});
    s.push_back({n + "w_proj", packed[3 * static_cast<size_t>(l) + 2].data(), {4 * D, D}});
    s.push_back({n + "b_proj", lw.b_proj.data(), {D}});
  }
  s.push_back({"lnf_g", w.lnf_g.data(), {D}});
  s.push_back({"lnf_b", w.lnf_b.data(), {D}});
  return s;
}

int64_t numel(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}


// A model of the given dimensions with every tensor allocated (values unset).
ModelWeights sized_weights(int D, int L, int V, int P) {
  ModelWeights w;
  w.d_model = D;
  w.context = P;
  w.tok_emb.resize(V, D);
  w.pos_emb.resize(P, D);
  w.lnf_g.resize(D);
  w.lnf_b.resize(D);
  w.layers.resize(static_cast<size_t>(L));
  for (LayerWeights& lw : w.layers) {
    for (RowVec* v : {&lw.ln1_g, &lw.ln1_b, &lw.b_q, &lw.b_k, &lw.b_v, &lw.b_o, &lw.ln2_g, &lw.ln2_b, &lw.b_proj}) v->resize(D);
    for (MatR* m : {&lw.w_q, &lw.w_k, &lw.w_v}) m->resize(D, D);
    lw.b_fc.resize(4 * D);
  }
  return w;
}
std::vector<MatR> sized_packed(int D, int L) {
  std::vector<MatR> m;
  for (int l = 0; l < L; ++l) {
    m.emplace_back(D, D);
    m.emplace_back(D, 4 * D);
    m.emplace_back(4 * D, D);
  }
  return m;
}

// The check vector: a fixed pseudo-random run of vocabulary ids, and forward()'s mean
// next-token loss on it.
std::vector<int> check_tokens(int V, int P) {
  Rng r(0xC4EC);
  std::vector<int> ids(static_cast<size_t>(std::min(kCheckTokens, P)));
  for (int& id : ids) id = r.below(V);
  return ids;
}

Result<double> loss_on_ids(const ModelWeights& w, int heads, const std::vector<int>& ids) {
  ModelConfig cfg;
  cfg.d_model = w.d_model;
  cfg.num_heads = heads;
  cfg.num_layers = w.num_layers();
  cfg.context = w.context;
  Batch batch;
  batch.tokenizer = TokenizerKind::Bpe;
  TokenizedText tt;
  for (int id : ids) tt.tokens.push_back(Token{gpt2_spell(w.bpe.token_bytes(id)), id});
  tt.total_tokens = static_cast<int>(ids.size());
  batch.sentences.push_back(std::move(tt));
  batch.lengths.push_back(static_cast<int>(ids.size()));
  batch.source_line.push_back(0);
  batch.T = static_cast<int>(ids.size());
  ForwardOptions fo;
  fo.want_logits = true;
  Result<ForwardOutput> out = forward(w, cfg, batch, fo);
  if (!out) return out.error();
  return out->loss;
}

std::string number(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}
}  // namespace

// ---- [writing] -------------------------------------------------------------------------
Result<std::string> checkpoint_bytes(const ModelWeights& w_in, StoreDtype dtype) {
  auto bad = [](std::string m) { return Error{ErrorKind::InvalidArgument, std::move(m)}; };
  if (!w_in.trained()) return bad("Only trained weights (with token and position embeddings) can be saved as a checkpoint.");
  const WeightsSource& src = w_in.source;
  const int D = w_in.d_model, L = w_in.num_layers(), V = w_in.vocab_size(), P = w_in.context;
  if (w_in.bpe.size() != V) return bad("The vocabulary has " + std::to_string(w_in.bpe.size()) + " tokens but tok_emb has " + std::to_string(V) + " rows.");
  if (P != w_in.pos_emb.rows()) return bad("context does not match the rows of pos_emb.");
  if (src.trained_heads < 1 || D % src.trained_heads != 0)
    return bad("source.trained_heads (" + std::to_string(src.trained_heads) + ") must divide d_model " + std::to_string(D) + ".");
  ModelWeights w = w_in;  // slots() needs mutable pointers; the copy is small
  std::vector<MatR> packed = plain_packed(w);
  std::vector<Slot> table = slots(w, packed);
  const bool f16 = dtype == StoreDtype::F16;
  const int64_t elem = f16 ? 2 : 4;
  if (f16) {
    // Round every value to what the file will hold first, so the check loss below is the
    // loss of the weights a reader gets back. Values beyond F16's range cannot be stored.
    for (const Slot& s : table)
      for (int64_t i = 0, n = numel(s.shape); i < n; ++i) {
        if (std::isfinite(s.data[i]) && std::fabs(s.data[i]) > 65504.0f)
          return bad("The tensor " + s.name + " holds " + number(s.data[i]) + ", beyond F16's range: save it as F32.");
        s.data[i] = half_to_float(float_to_half(s.data[i]));
      }
    pack_plain(w, packed);
    for (LayerWeights& lw : w.layers) lw.fuse();
  }
  // Every layer must have the shapes of d_model D (a wrong size would write garbage).
  for (const LayerWeights& lw : w.layers)
    if (lw.w_q.rows() != D || lw.w_q.cols() != D || lw.w_fc.cols() != 4 * D || lw.w_proj.rows() != 4 * D || lw.b_fc.size() != 4 * D ||
        lw.b_q.size() != D || lw.ln1_g.size() != D)
      return bad("A layer's tensors do not have the shapes of d_model " + std::to_string(D) + ".");

  json header = json::object();
  uint64_t offset = 0;
  for (const Slot& s : table) {
    const int64_t n = numel(s.shape);
    for (int64_t i = 0; i < n; ++i)
      if (!std::isfinite(s.data[i])) return bad("The tensor " + s.name + " holds a value that is not finite; nothing was saved.");
    header[s.name] = {{"dtype", f16 ? "F16" : "F32"}, {"shape", s.shape}, {"data_offsets", {offset, offset + static_cast<uint64_t>(n * elem)}}};
    offset += static_cast<uint64_t>(n * elem);
  }
  const std::vector<int> ids = check_tokens(V, P);
  Result<double> check = loss_on_ids(w, src.trained_heads, ids);
  if (!check) return check.error();
  json meta = {{"format", kFormat},
               {"format_version", "2"},
               {"d_model", std::to_string(D)},
               {"num_heads", std::to_string(src.trained_heads)},
               {"num_layers", std::to_string(L)},
               {"context", std::to_string(P)},
               {"vocab_size", std::to_string(V)},
               {"vocab", json(w.bpe.vocab_list()).dump()},
               {"merges", json(w.bpe.merges_list()).dump()},
               {"tokenizer", "byte-level BPE as GPT-2: vocab (ids in order) and merges (in rank order) spelled with GPT-2's byte-to-unicode map"},
               {"steps", std::to_string(src.steps)},
               {"train_loss", number(src.final_loss)},
               {"val_loss", number(src.val_loss)},
               {"corpus", src.corpus},
               {"seed", std::to_string(src.seed)},
               {"no_w_o", src.no_w_o ? "true" : "false"},
               {"reproduce", src.reproduce},
               {"train_options", src.train_options.empty() ? "{}" : src.train_options},
               {"check_tokens", json(ids).dump()},
               {"check_loss", number(*check)},
               {"convention", "y = x @ W + b with W stored (in, out); pre-LN blocks x += attn(LN1(x)), x += MLP(LN2(x)); "
                              "GELU tanh; LayerNorm eps 1e-5; head h = columns h*d_head..(h+1)*d_head of w_q, w_k, w_v; "
                              "scores / sqrt(d_head), causal; logits = LN_f(x) @ tok_emb.T"}};
  header["__metadata__"] = meta;
  std::string h = header.dump(-1, ' ', false, json::error_handler_t::strict);
  h.append((8 - h.size() % 8) % 8, ' ');  // the data starts 8-byte aligned
  std::string out;
  out.reserve(8 + h.size() + offset);
  const uint64_t hl = h.size();
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((hl >> (8 * i)) & 0xFF));
  out += h;
  for (const Slot& s : table) {
    const int64_t n = numel(s.shape);
    if (!f16) {
      out.append(reinterpret_cast<const char*>(s.data), static_cast<size_t>(n) * 4);
      continue;
    }
    for (int64_t i = 0; i < n; ++i) {
      const uint16_t hv = float_to_half(s.data[i]);
      out.push_back(static_cast<char>(hv & 0xFF));
      out.push_back(static_cast<char>(hv >> 8));
    }
  }
  return out;
}

Status save_checkpoint(const std::string& path, const ModelWeights& w, StoreDtype dtype) {
  Result<std::string> bytes = checkpoint_bytes(w, dtype);
  if (!bytes) return bytes.error();
  return write_file_atomic(path, *bytes);
}

// ---- [reading] -------------------------------------------------------------------------
namespace {
// A whole-string integer in [lo, hi], or nothing.
bool parse_int(const std::string& s, long long lo, long long hi, long long* out) {
  long long v = 0;
  const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || v < lo || v > hi) return false;
  *out = v;
  return true;
}
bool parse_double(const std::string& s, double* out) {
  if (s.empty()) return false;
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (end != s.c_str() + s.size() || !std::isfinite(v)) return false;
  *out = v;
  return true;
}
}  // namespace

Result<ModelWeights> parse_checkpoint(const std::string& bytes, const std::string& origin) {
  auto bad = [&](const std::string& m) { return Error{ErrorKind::BadFormat, origin + ": " + m}; };
  const char* kNotOurs = " Is it a checkpoint written by headmap-cli train?";

  // The one safetensors reader checks the file's structure; the hooks below add what a
  // checkpoint must be, in the order its messages have always been given: the metadata
  // (pass 1), the sizes it claims (pass 2), each tensor's name, dtype and shape (pass 3).
  std::map<std::string, std::string> meta;
  long long D = 0, H = 0, L = 0, P = 0;
  Bpe bpe;
  ModelWeights w;
  std::vector<MatR> packed;
  std::vector<Slot> table;
  std::map<std::string, const Slot*> expected;
  SafetensorsChecks checks;
  checks.max_header_bytes = kMaxCheckpointHeaderBytes;
  checks.not_ours = kNotOurs;
  checks.metadata = [&](const std::map<std::string, std::string>& file_meta, uint64_t data_size) -> Status {
    // pass 1: the metadata: the config and the vocabulary.
    if (file_meta.empty()) return bad("the header has no \"__metadata__\" object with the model's config." + std::string(kNotOurs));
    meta = file_meta;
    if (meta.count("format") && meta["format"] != kFormat)
      return bad("the metadata says format \"" + meta["format"] + "\", not \"" + kFormat + "\"." + kNotOurs);
    struct IntField {
      const char* key;
      long long lo, hi;
      long long* dst;
    };
    for (const IntField& f : {IntField{"d_model", 1, kMaxDModel, &D}, IntField{"num_layers", 1, kMaxLayers, &L},
                              IntField{"context", 1, kMaxContext, &P}, IntField{"num_heads", 1, kMaxDModel, &H}}) {
      if (!meta.count(f.key)) return bad(std::string("the metadata has no \"") + f.key + "\"." + kNotOurs);
      if (!parse_int(meta[f.key], f.lo, f.hi, f.dst))
        return bad(std::string("metadata \"") + f.key + "\" is \"" + meta[f.key] + "\", not a whole number in " + std::to_string(f.lo) + ".." +
                   std::to_string(f.hi) + ".");
    }
    if (D % H != 0) return bad("the metadata says num_heads " + std::to_string(H) + ", which does not divide d_model " + std::to_string(D) + ".");
    if (meta.count("format_version") && meta["format_version"] == "1")
      return bad("it was written by an earlier headmap (format 1, a word vocabulary); this headmap reads format 2, with a byte-level BPE: "
                 "retrain it with headmap-cli train.");
    if (!meta.count("vocab") || !meta.count("merges"))
      return bad("the metadata has no \"vocab\" and \"merges\": a checkpoint brings its own byte-level BPE.");
    try {
      const json v = json::parse(meta["vocab"]), m = json::parse(meta["merges"]);
      if (!v.is_array() || !m.is_array()) return bad("metadata \"vocab\" and \"merges\" must be JSON arrays of strings.");
      if (v.size() > static_cast<size_t>(kMaxCheckpointVocab) || m.size() > static_cast<size_t>(kMaxCheckpointVocab))
        return bad("the vocabulary has " + std::to_string(v.size()) + " tokens, more than headmap allows.");
      std::vector<std::string> vs, ms;
      for (const json& t : v) {
        if (!t.is_string() || t.get<std::string>().empty()) return bad("metadata \"vocab\" holds an entry that is not a non-empty string.");
        vs.push_back(t.get<std::string>());
      }
      for (const json& t : m) {
        if (!t.is_string()) return bad("metadata \"merges\" holds an entry that is not a string.");
        ms.push_back(t.get<std::string>());
      }
      Result<Bpe> b = Bpe::from_lists(vs, ms);
      if (!b) return bad("the tokenizer is inconsistent: " + b.error().message + ".");
      bpe = std::move(*b);
    } catch (const json::exception& e) {
      return bad(std::string("metadata \"vocab\" or \"merges\" is not valid JSON (") + e.what() + ").");
    }
    const int V = bpe.size();
    if (meta.count("vocab_size")) {
      long long vs = 0;
      if (!parse_int(meta["vocab_size"], 0, kMaxCheckpointVocab, &vs) || vs != V)
        return bad("metadata \"vocab_size\" is " + meta["vocab_size"] + " but the vocabulary lists " + std::to_string(V) + " pieces.");
    }

    // pass 2: the sizes the metadata claims, against the file and the memory budget, before
    // anything is allocated: a small header may claim D = 4096 and L = 12.
    const uint64_t D64 = static_cast<uint64_t>(D), params = static_cast<uint64_t>(V) * D64 + static_cast<uint64_t>(P) * D64 + 2 * D64 +
                                                           static_cast<uint64_t>(L) * (12 * D64 * D64 + 13 * D64);
    if (data_size < 2 * params)
      return bad("the metadata describes a model of " + std::to_string(params) + " values (d_model " + std::to_string(D) + ", " + std::to_string(L) +
                 " layers), which needs at least " + std::to_string(2 * params) + " bytes of data, and the file has " + std::to_string(data_size) +
                 ": it is truncated or its metadata is wrong.");
    if (Status s = check_memory(model_weights_bytes(D64, static_cast<uint64_t>(L), static_cast<uint64_t>(V), static_cast<uint64_t>(P)),
                                "The model in " + origin, "use a smaller model");
        !s)
      return s;
    w = sized_weights(static_cast<int>(D), static_cast<int>(L), V, static_cast<int>(P));
    packed = sized_packed(static_cast<int>(D), static_cast<int>(L));
    table = slots(w, packed);
    for (const Slot& s : table) expected[s.name] = &s;
    return Status();
  };
  checks.entry = [&](const std::string& name, const SafetensorInfo& t) -> Status {
    // pass 3: each tensor is one of the model's, stored F32 or F16, in its shape.
    if (!expected.count(name))
      return bad("unexpected tensor \"" + name + "\" for a model with " + std::to_string(L) + " layers (the metadata and the tensors disagree).");
    if (t.dtype != "F32" && t.dtype != "F16") return bad("tensor \"" + name + "\" has dtype " + t.dtype + "; headmap checkpoints store F32 or F16.");
    const Slot& slot = *expected[name];
    if (t.shape != slot.shape)
      return bad("tensor \"" + name + "\" has shape " + shape_text(t.shape) + " but d_model " + std::to_string(D) + ", vocab " +
                 std::to_string(bpe.size()) + " and context " + std::to_string(P) + " need " + shape_text(slot.shape) + ".");
    return Status();
  };
  checks.entries = [&](const std::map<std::string, SafetensorInfo>& tensors) -> Status {
    for (const Slot& s : table)
      if (!tensors.count(s.name)) return bad("the tensor \"" + s.name + "\" is missing.");
    return Status();
  };
  Result<SafetensorsFile> file = SafetensorsFile::view(bytes.data(), bytes.size(), origin, checks);
  if (!file) return file.error();

  // pass 4: the values, read by the one reader (F32 as stored, F16 widened), checked finite.
  for (Slot& s : table)
    if (Status st = file->read_f32(s.name, s.data); !st) return st.error();
  pack_plain(w, packed);
  packed.clear();
  for (LayerWeights& lw : w.layers) lw.fuse();
  const int V = bpe.size();
  w.bpe = std::move(bpe);
  // The BPE written out as a tokenizer.json: the text is split by the pipeline every
  // tokenizer.json model uses (the same ids as bpe.encode on valid text; test_shipped).
  {
    Result<HfTokenizer> hf = HfTokenizer::from_json(w.bpe.to_tokenizer_json(), origin + " (its BPE as tokenizer.json)");
    if (!hf) return bad("its BPE does not read back as a tokenizer.json: " + hf.error().message);
    w.hf_tokenizer = std::make_shared<const HfTokenizer>(std::move(hf).value());
  }

  // pass 5: the source fields, then the file's own check vector.
  WeightsSource& src = w.source;
  src.kind = WeightsSource::Kind::Trained;
  src.trained_heads = static_cast<int>(H);
  src.path = origin;
  long long steps = 0;
  if (meta.count("steps") && !parse_int(meta["steps"], 0, INT64_MAX, &steps)) return bad("metadata \"steps\" is not a whole number.");
  src.steps = static_cast<long>(steps);
  if (meta.count("train_loss") && !parse_double(meta["train_loss"], &src.final_loss)) return bad("metadata \"train_loss\" is not a number.");
  if (meta.count("val_loss") && !parse_double(meta["val_loss"], &src.val_loss)) return bad("metadata \"val_loss\" is not a number.");
  if (meta.count("seed")) {
    long long seed = 0;
    if (!parse_int(meta["seed"], 0, INT64_MAX, &seed)) return bad("metadata \"seed\" is not a whole number.");
    src.seed = static_cast<uint64_t>(seed);
  }
  if (meta.count("no_w_o") && meta["no_w_o"] != "true" && meta["no_w_o"] != "false") return bad("metadata \"no_w_o\" must be \"true\" or \"false\".");
  src.no_w_o = meta.count("no_w_o") && meta["no_w_o"] == "true";
  src.corpus = meta.count("corpus") ? meta["corpus"] : "";
  src.reproduce = meta.count("reproduce") ? meta["reproduce"] : "";
  src.train_options = meta.count("train_options") ? meta["train_options"] : "";
  if (meta.count("check_tokens") || meta.count("check_loss")) {
    std::vector<int> ids;
    double want = 0;
    try {
      const json j = json::parse(meta.count("check_tokens") ? meta["check_tokens"] : "null");
      if (!j.is_array() || j.empty() || j.size() > static_cast<size_t>(P)) return bad("metadata \"check_tokens\" is not a list of up to context token ids.");
      for (const json& id : j) {
        if (!id.is_number_integer() || id.get<long long>() < 0 || id.get<long long>() >= V) return bad("metadata \"check_tokens\" holds an id outside the vocabulary.");
        ids.push_back(id.get<int>());
      }
    } catch (const json::exception& e) {
      return bad(std::string("metadata \"check_tokens\" is not valid JSON (") + e.what() + ").");
    }
    if (!meta.count("check_loss") || !parse_double(meta["check_loss"], &want)) return bad("metadata \"check_loss\" is missing or not a number.");
    Result<double> got = loss_on_ids(w, static_cast<int>(H), ids);
    if (!got) return bad(got.error().message);
    // Float sums in a different order differ in the 6th digit; a wrong convention
    // (transposed weights, another model's tensors) is off in the first.
    if (!(std::abs(*got - want) <= 1e-3 + 1e-4 * std::abs(want)))
      return bad("the tensors do not reproduce the file's own check: its check_loss is " + number(want) + " but these weights give " +
                 number(*got) + ". The tensors were altered, transposed, or belong to another model.");
  } else {
    // No check in the file: finite weights can still overflow float32 arithmetic (values
    // near 3e38), which would show NaN maps and metrics. A short probe refuses them.
    Result<double> got = loss_on_ids(w, static_cast<int>(H), check_tokens(V, static_cast<int>(P)));
    if (!got) return bad(got.error().message);
    if (!std::isfinite(*got))
      return bad("its weights are finite but so large that the model computes NaN or infinity (a probe's loss is " + number(*got) +
                 "): the file is corrupt. Retrain or re-export it.");
  }
  return w;
}

Result<ModelWeights> load_checkpoint(const std::string& path) {
  Result<std::string> bytes = read_file(path, kMaxCheckpointBytes);
  if (!bytes) return bytes.error();
  return parse_checkpoint(*bytes, path);
}

}  // namespace headmap
