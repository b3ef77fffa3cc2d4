// test_hf_gpt2.cpp: opening GPT-2-family models in Hugging Face's layout. Tiny random
// directories are written here in every file variant; all must load to the very same
// weights, and every broken directory must give a clear message. (The numerics against an
// independent float64 reference are in tests/reference/gpt2_reference.py.)
//
// D = d_model, L = layers, V = vocab, P = positions
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "core/io/export.h"
#include "core/io/hf_model.h"
#include "core/io/hf_tensors.h"
#include "core/io/safetensors.h"
#include "core/math/rng.h"
#include "core/model/model.h"

namespace headmap {
namespace {
namespace fs = std::filesystem;
using nlohmann::json;

constexpr int kD = 12, kH = 3, kL = 2, kP = 10;

// A tiny byte-level vocabulary in GPT-2's spelling: the 256 bytes, then "Ġt", "he", "Ġthe".
json tiny_vocab() {
  json v = json::object();
  int n = 0, id = 0;
  auto printable = [](int b) { return (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF); };
  auto utf8 = [](uint32_t cp) {
    std::string s;
    if (cp < 0x80) s.push_back(static_cast<char>(cp));
    else s += {static_cast<char>(0xC0 | (cp >> 6)), static_cast<char>(0x80 | (cp & 0x3F))};
    return s;
  };
  for (int b = 0; b < 256; ++b)
    if (printable(b)) v[utf8(static_cast<uint32_t>(b))] = id++;
  for (int b = 0; b < 256; ++b)
    if (!printable(b)) v[utf8(static_cast<uint32_t>(0x100 + n++))] = id++;
  for (const char* t : {"\xC4\xA0t", "he", "\xC4\xA0the"}) v[t] = id++;
  v["<|endoftext|>"] = id++;
  return v;
}
const char* kMerges = "#version: 0.2\n\xC4\xA0 t\nh e\n\xC4\xA0t he\n";

// Values k/256 with |k| < 256: exact in F32, F16 and BF16 alike, so every dtype variant must
// load to identical floats.
std::vector<float> exact_values(int64_t n, uint64_t key) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = static_cast<float>(static_cast<int>(mix64(key + static_cast<uint64_t>(i)) % 255) - 127) / 256.0f;
  return v;
}

uint16_t to_half(float f) {  // exact for the values above (normal or zero)
  if (f == 0.0f) return 0;
  const uint32_t b = std::bit_cast<uint32_t>(f);
  const uint32_t e = ((b >> 23) & 0xFF) - 127 + 15;
  EXPECT_EQ(b & 0x1FFF, 0u);
  return static_cast<uint16_t>(((b >> 16) & 0x8000) | (e << 10) | ((b >> 13) & 0x3FF));
}

struct Tensor {
  std::string name;
  std::vector<int64_t> shape;
  std::vector<float> values;
};

std::vector<Tensor> gpt2_tensors(int V, uint64_t key = 11) {
  const int64_t D = kD;
  std::vector<Tensor> t;
  auto add = [&](const std::string& name, std::vector<int64_t> shape) {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    t.push_back({name, shape, exact_values(n, key + 1000 * t.size())});
  };
  add("wte.weight", {V, D});
  add("wpe.weight", {kP, D});
  for (int l = 0; l < kL; ++l) {
    const std::string h = "h." + std::to_string(l) + ".";
    add(h + "ln_1.weight", {D});
    add(h + "ln_1.bias", {D});
    add(h + "attn.c_attn.weight", {D, 3 * D});
    add(h + "attn.c_attn.bias", {3 * D});
    add(h + "attn.c_proj.weight", {D, D});
    add(h + "attn.c_proj.bias", {D});
    add(h + "ln_2.weight", {D});
    add(h + "ln_2.bias", {D});
    add(h + "mlp.c_fc.weight", {D, 4 * D});
    add(h + "mlp.c_fc.bias", {4 * D});
    add(h + "mlp.c_proj.weight", {4 * D, D});
    add(h + "mlp.c_proj.bias", {D});
  }
  add("ln_f.weight", {D});
  add("ln_f.bias", {D});
  return t;
}

std::string safetensors_bytes(const std::vector<Tensor>& ts, const std::string& dtype) {
  json header = json::object();
  std::string data;
  for (const Tensor& t : ts) {
    const size_t begin = data.size();
    for (float f : t.values) {
      if (dtype == "F32") data.append(reinterpret_cast<const char*>(&f), 4);
      else {
        const uint16_t h = dtype == "F16" ? to_half(f) : static_cast<uint16_t>(std::bit_cast<uint32_t>(f) >> 16);
        data.append(reinterpret_cast<const char*>(&h), 2);
      }
    }
    header[t.name] = {{"dtype", dtype}, {"shape", t.shape}, {"data_offsets", {begin, data.size()}}};
  }
  header["__metadata__"] = {{"format", "pt"}};
  std::string h = header.dump();
  h.append((8 - h.size() % 8) % 8, ' ');
  std::string out(8, '\0');
  const uint64_t n = h.size();
  for (int i = 0; i < 8; ++i) out[static_cast<size_t>(i)] = static_cast<char>((n >> (8 * i)) & 0xFF);
  return out + h + data;
}

void write(const fs::path& p, const std::string& bytes) {
  std::ofstream f(p, std::ios::binary);
  f << bytes;
}

json gpt2_config(int V) {
  return {{"architectures", {"GPT2LMHeadModel"}}, {"model_type", "gpt2"}, {"activation_function", "gelu_new"},
          {"n_embd", kD}, {"n_head", kH}, {"n_layer", kL}, {"n_positions", kP}, {"vocab_size", V}, {"layer_norm_epsilon", 1e-5}};
}

struct Variant {
  std::string prefix = "transformer.";
  std::string dtype = "F32";
  bool lm_head_equal = false, lm_head_different = false, mask_buffers = false, sharded = false, tokenizer_json = false;
};

// Writes a model directory; returns its path.
fs::path make_dir(const std::string& name, const Variant& v = {}) {
  const fs::path dir = fs::temp_directory_path() / ("headmap-hf-" + std::to_string(::getpid()) + "-" + name);
  fs::remove_all(dir);
  fs::create_directories(dir);
  const json vocab = tiny_vocab();
  const int V = static_cast<int>(vocab.size());
  write(dir / "config.json", gpt2_config(V).dump(2));
  std::vector<Tensor> ts = gpt2_tensors(V);
  for (Tensor& t : ts) t.name = v.prefix + t.name;
  if (v.lm_head_equal) ts.push_back({"lm_head.weight", ts[0].shape, ts[0].values});
  if (v.lm_head_different) ts.push_back({"lm_head.weight", ts[0].shape, exact_values(static_cast<int64_t>(ts[0].values.size()), 99)});
  if (v.mask_buffers)
    for (int l = 0; l < kL; ++l) {
      ts.push_back({v.prefix + "h." + std::to_string(l) + ".attn.bias", {1, 1, kP, kP}, std::vector<float>(kP * kP, 1.0f)});
      ts.push_back({v.prefix + "h." + std::to_string(l) + ".attn.masked_bias", {}, {-1.0f}});
    }
  if (v.sharded) {
    json map = json::object();
    const size_t half = ts.size() / 2;
    const std::vector<Tensor> a(ts.begin(), ts.begin() + static_cast<long>(half)), b(ts.begin() + static_cast<long>(half), ts.end());
    write(dir / "model-00001-of-00002.safetensors", safetensors_bytes(a, v.dtype));
    write(dir / "model-00002-of-00002.safetensors", safetensors_bytes(b, v.dtype));
    for (const Tensor& t : a) map[t.name] = "model-00001-of-00002.safetensors";
    for (const Tensor& t : b) map[t.name] = "model-00002-of-00002.safetensors";
    write(dir / "model.safetensors.index.json", json{{"metadata", json::object()}, {"weight_map", map}}.dump());
  } else {
    write(dir / "model.safetensors", safetensors_bytes(ts, v.dtype));
  }
  if (v.tokenizer_json) {
    write(dir / "tokenizer.json", json{{"model", {{"type", "BPE"}, {"vocab", vocab}, {"merges", {"\xC4\xA0 t", "h e", "\xC4\xA0t he"}}}}}.dump());
  } else {
    write(dir / "vocab.json", vocab.dump());
    write(dir / "merges.txt", kMerges);
  }
  return dir;
}

void expect_same_weights(const ModelWeights& a, const ModelWeights& b) {
  ASSERT_EQ(a.num_layers(), b.num_layers());
  ASSERT_EQ(a.vocab_size(), b.vocab_size());
  for (int id = 0; id < a.vocab_size(); ++id) {  // a 16-bit file keeps its table 16-bit: compared row by row, widened
    RowVec ra(a.d_model), rb(b.d_model);
    a.embedding_row(id, ra.data()), b.embedding_row(id, rb.data());
    EXPECT_TRUE(ra == rb) << "token " << id;
  }
  EXPECT_TRUE(a.pos_emb == b.pos_emb);
  EXPECT_TRUE(a.lnf_g == b.lnf_g && a.lnf_b == b.lnf_b);
  for (int l = 0; l < a.num_layers(); ++l) {
    const LayerWeights &x = a.layers[static_cast<size_t>(l)], &y = b.layers[static_cast<size_t>(l)];
    // The same values; a BF16 / F16 file's matrices are stored 16-bit (packed_gemm.h), so compared unpacked.
    EXPECT_TRUE(x.w_qkv.plain() == y.w_qkv.plain() && x.b_qkv == y.b_qkv && x.w_o.plain() == y.w_o.plain() && x.b_o == y.b_o) << "layer " << l;
    EXPECT_TRUE(x.w_fc.plain() == y.w_fc.plain() && x.b_fc == y.b_fc && x.w_proj.plain() == y.w_proj.plain() && x.b_proj == y.b_proj) << "layer " << l;
    EXPECT_TRUE(x.ln1_g == y.ln1_g && x.ln1_b == y.ln1_b && x.ln2_g == y.ln2_g && x.ln2_b == y.ln2_b) << "layer " << l;
  }
}

std::string load_error(const fs::path& dir) {
  Result<ModelWeights> w = load_hf_model(dir.string());
  return w ? std::string("(loaded)") : w.error().message;
}

bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

TEST(HfGpt2, LoadsTheTensorsWhereGpt2PutsThem) {
  const fs::path dir = make_dir("plain");
  Result<ModelWeights> w = load_hf_model(dir.string());
  ASSERT_TRUE(w) << w.error().message;
  const int V = static_cast<int>(tiny_vocab().size());
  const std::vector<Tensor> src = gpt2_tensors(V);
  std::map<std::string, const Tensor*> by_name;
  for (const Tensor& t : src) by_name[t.name] = &t;
  EXPECT_EQ(w->d_model, kD);
  EXPECT_EQ(w->num_layers(), kL);
  EXPECT_EQ(w->context, kP);
  EXPECT_EQ(w->vocab_size(), V);
  EXPECT_EQ(w->source.kind, WeightsSource::Kind::Pretrained);
  EXPECT_EQ(w->source.trained_heads, kH);
  EXPECT_TRUE(w->lm_head.size() == 0) << "no lm_head in the file: tied";
  // c_attn (D, 3D) = [W_Q | W_K | W_V], Conv1D's (D_in, D_out) order, headmap's own.
  const Tensor& c_attn = *by_name["h.1.attn.c_attn.weight"];
  const LayerWeights& lw = w->layers[1];
  for (int i = 0; i < kD; ++i)
    for (int j = 0; j < kD; ++j) {
      EXPECT_EQ(lw.w_q(i, j), c_attn.values[static_cast<size_t>(i * 3 * kD + j)]);
      EXPECT_EQ(lw.w_k(i, j), c_attn.values[static_cast<size_t>(i * 3 * kD + kD + j)]);
      EXPECT_EQ(lw.w_v(i, j), c_attn.values[static_cast<size_t>(i * 3 * kD + 2 * kD + j)]);
    }
  EXPECT_EQ(lw.b_v(3), by_name["h.1.attn.c_attn.bias"]->values[2 * kD + 3]);
  EXPECT_EQ(w->layers[0].w_proj(5, 7), by_name["h.0.mlp.c_proj.weight"]->values[5 * kD + 7]);
  EXPECT_EQ(w->pos_emb(9, 11), by_name["wpe.weight"]->values[9 * kD + 11]);
  const int64_t expect_params = int64_t(V) * kD + kP * kD + kL * (12 * kD * kD + 13 * kD) + 2 * kD;
  EXPECT_EQ(w->source.parameters, expect_params);

  ModelConfig cfg;
  cfg.d_model = kD;
  cfg.num_heads = kH;
  cfg.num_layers = kL;
  cfg.context = kP;
  const std::string line = describe_source(*w, cfg);
  EXPECT_TRUE(has(line, " from ") && has(line, "D=12, H=3, L=2") && has(line, "parameters")) << line;
  cfg.num_heads = 4;  // re-sliced: the same weights, another view
  EXPECT_TRUE(has(describe_source(*w, cfg), "re-sliced")) << describe_source(*w, cfg);
  fs::remove_all(dir);
}

TEST(HfGpt2, EveryFileVariantLoadsTheSameWeights) {
  const fs::path base_dir = make_dir("base");
  Result<ModelWeights> base = load_hf_model(base_dir.string());
  ASSERT_TRUE(base) << base.error().message;
  std::vector<std::pair<std::string, Variant>> variants;
  Variant v;
  v.prefix = "";
  variants.push_back({"noprefix", v});
  v = {};
  v.lm_head_equal = true;
  v.mask_buffers = true;
  variants.push_back({"lmhead-buffers", v});
  v = {};
  v.dtype = "F16";
  variants.push_back({"f16", v});
  v = {};
  v.dtype = "BF16";
  v.tokenizer_json = true;
  variants.push_back({"bf16-tokenizer-json", v});
  v = {};
  v.sharded = true;
  v.prefix = "";
  variants.push_back({"sharded", v});
  for (const auto& [name, var] : variants) {
    SCOPED_TRACE(name);
    const fs::path dir = make_dir(name, var);
    Result<ModelWeights> w = load_hf_model(dir.string());
    ASSERT_TRUE(w) << w.error().message;
    expect_same_weights(*base, *w);
    const bool narrow = var.dtype == "F16" || var.dtype == "BF16";
    EXPECT_EQ(w->layers[0].w_fc.narrow() && w->layers[0].w_qkv.narrow(), narrow) << "16-bit files keep their matrices 16-bit";
    EXPECT_TRUE(w->lm_head.size() == 0) << "an lm_head equal to wte is the tied one";
    fs::remove_all(dir);
  }
  fs::remove_all(base_dir);
}

TEST(HfGpt2, AnUntiedLmHeadIsUsedForTheLogits) {
  Variant v;
  v.lm_head_different = true;
  const fs::path dir = make_dir("untied", v);
  Result<ModelWeights> w = load_hf_model(dir.string());
  ASSERT_TRUE(w) << w.error().message;
  ASSERT_EQ(w->lm_head.rows(), w->tok_emb.rows());
  EXPECT_FALSE(w->lm_head == w->tok_emb);
  EXPECT_EQ(&w->unembedding(), &w->lm_head);
  fs::remove_all(dir);
}

TEST(HfGpt2, ConfigsOfOtherModelsAreRefusedByName) {
  // GPT-2 goes through the one family table (hf_families.h): its keys, its refusals.
  const json t5 = {{"architectures", {"T5ForConditionalGeneration"}}, {"model_type", "t5"}, {"d_model", 512}};
  Result<HfModelConfig> c = parse_hf_config(t5.dump(), "config.json");
  ASSERT_FALSE(c);
  EXPECT_TRUE(has(c.error().message, "t5") && has(c.error().message, "T5ForConditionalGeneration") && has(c.error().message, "gpt2, llama")) << c.error().message;
  json gelu = gpt2_config(300);
  gelu["activation_function"] = "relu";
  c = parse_hf_config(gelu.dump(), "config.json");
  ASSERT_FALSE(c);
  EXPECT_TRUE(has(c.error().message, "relu")) << c.error().message;
  json odd = gpt2_config(300);
  odd["n_head"] = 5;
  c = parse_hf_config(odd.dump(), "config.json");
  ASSERT_FALSE(c);
  EXPECT_TRUE(has(c.error().message, "not divisible")) << c.error().message;
  json cross = gpt2_config(300);
  cross["add_cross_attention"] = true;
  c = parse_hf_config(cross.dump(), "config.json");
  ASSERT_FALSE(c);
  EXPECT_TRUE(has(c.error().message, "add_cross_attention")) << c.error().message;
  EXPECT_FALSE(parse_hf_config("{not json", "config.json"));
  json eps = gpt2_config(300);
  eps["layer_norm_epsilon"] = 0.001;
  eps.erase("n_positions");
  eps["n_ctx"] = 64;
  c = parse_hf_config(eps.dump(), "config.json");
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_FLOAT_EQ(c->arch.norm_eps, 0.001f);
  EXPECT_EQ(c->positions, 64);
  eps.erase("n_ctx");
  c = parse_hf_config(eps.dump(), "config.json");
  ASSERT_FALSE(c) << "learned positions need their number";
  EXPECT_TRUE(has(c.error().message, "n_positions")) << c.error().message;
}

TEST(HfGpt2, BrokenDirectoriesGiveClearMessages) {
  const fs::path dir = make_dir("broken");
  const json vocab = tiny_vocab();
  const int V = static_cast<int>(vocab.size());
  const std::string good = safetensors_bytes(gpt2_tensors(V), "F32");

  // A BERT directory: read as one (the one dispatch), its config's gaps named before any tensor is read.
  write(dir / "config.json", json{{"model_type", "bert"}, {"architectures", {"BertModel"}}}.dump());
  EXPECT_TRUE(has(load_error(dir), "BERT: \"hidden_size\" is missing")) << load_error(dir);
  write(dir / "config.json", gpt2_config(V).dump());

  // Missing files.
  EXPECT_TRUE(has(load_error(dir / "nowhere"), "not a directory")) << load_error(dir / "nowhere");
  fs::remove(dir / "model.safetensors");
  EXPECT_TRUE(has(load_error(dir), "no model.safetensors")) << load_error(dir);
  write(dir / "pytorch_model.bin", "not read");
  EXPECT_TRUE(has(load_error(dir), "pytorch_model.bin") && has(load_error(dir), "safetensors")) << load_error(dir);
  fs::remove(dir / "pytorch_model.bin");
  write(dir / "model.safetensors", good);
  ASSERT_EQ(load_error(dir), "(loaded)");
  fs::remove(dir / "vocab.json");
  EXPECT_TRUE(has(load_error(dir), "no tokenizer")) << load_error(dir);
  write(dir / "vocab.json", vocab.dump());
  fs::remove(dir / "config.json");
  EXPECT_TRUE(has(load_error(dir), "no config.json")) << load_error(dir);
  write(dir / "config.json", gpt2_config(V).dump());

  // A truncated file: cut inside the data, and inside the header.
  write(dir / "model.safetensors", good.substr(0, good.size() - 100));
  EXPECT_TRUE(has(load_error(dir), "truncated")) << load_error(dir);
  write(dir / "model.safetensors", good.substr(0, 20));
  EXPECT_TRUE(has(load_error(dir), "truncated")) << load_error(dir);
  write(dir / "model.safetensors", "");
  EXPECT_TRUE(has(load_error(dir), "fewer than the 8-byte")) << load_error(dir);
  write(dir / "model.safetensors", good);

  // A shape mismatch: the config promises a wider model than the tensors hold.
  json wide = gpt2_config(V);
  wide["n_embd"] = 2 * kD;
  write(dir / "config.json", wide.dump());
  const std::string e = load_error(dir);
  EXPECT_TRUE(has(e, "has shape [" + std::to_string(V) + ", 12]") && has(e, "needs [" + std::to_string(V) + ", 24]")) << e;
  json deep = gpt2_config(V);
  deep["n_layer"] = kL + 1;
  write(dir / "config.json", deep.dump());
  EXPECT_TRUE(has(load_error(dir), "h.2.ln_1.weight\" is missing")) << load_error(dir);
  json fewer = gpt2_config(V);
  fewer["n_layer"] = kL - 1;
  write(dir / "config.json", fewer.dump());
  EXPECT_TRUE(has(load_error(dir), "unexpected tensor")) << load_error(dir);
  write(dir / "config.json", gpt2_config(V).dump());

  // A tokenizer larger than the embedding: another model's.
  json big = gpt2_config(V);
  big["vocab_size"] = V - 1;
  write(dir / "config.json", big.dump());
  EXPECT_TRUE(has(load_error(dir), "shape")) << load_error(dir);
  write(dir / "config.json", gpt2_config(V).dump());

  // A value that is not finite, and a dtype headmap does not read as weights.
  std::vector<Tensor> ts = gpt2_tensors(V);
  ts[3].values[1] = std::nanf("");
  write(dir / "model.safetensors", safetensors_bytes(ts, "F32"));
  EXPECT_TRUE(has(load_error(dir), "not finite")) << load_error(dir);
  fs::remove_all(dir);
}

TEST(HfGpt2, ShardNamesStayInsideTheDirectory) {
  Variant v;
  v.sharded = true;
  const fs::path dir = make_dir("shards", v);
  ASSERT_EQ(load_error(dir), "(loaded)");
  json index = json::parse(read_file((dir / "model.safetensors.index.json").string()).value());
  index["weight_map"]["transformer.wte.weight"] = "../elsewhere.safetensors";
  write(dir / "model.safetensors.index.json", index.dump());
  EXPECT_TRUE(has(load_error(dir), "not a plain file name")) << load_error(dir);
  fs::remove_all(dir);
}

// Untrusted bytes: truncations at every length class and random byte flips in the header
// and the data load or fail with a message, and never crash or hang.
TEST(HfGpt2, DamagedFilesNeverCrash) {
  const fs::path dir = make_dir("damaged");
  const int V = static_cast<int>(tiny_vocab().size());
  const std::string good = safetensors_bytes(gpt2_tensors(V), "F32");
  Rng r(77);
  int refused = 0;
  for (int i = 0; i < 300; ++i) {
    std::string bytes = good;
    if (i % 3 == 0) {
      bytes.resize(static_cast<size_t>(r.below(static_cast<int>(good.size()))));
    } else {
      const uint64_t header = 8 + (static_cast<uint64_t>(static_cast<unsigned char>(good[0])) | static_cast<uint64_t>(static_cast<unsigned char>(good[1])) << 8);
      for (int k = 0; k < 1 + r.below(4); ++k) {
        const size_t at = i % 3 == 1 ? static_cast<size_t>(r.below(static_cast<int>(header))) : static_cast<size_t>(r.below(static_cast<int>(bytes.size())));
        bytes[at] = static_cast<char>(r.below(256));
      }
    }
    write(dir / "model.safetensors", bytes);
    Result<ModelWeights> w = load_hf_model(dir.string());
    if (!w) {
      ++refused;
      EXPECT_FALSE(w.error().message.empty());
    }
  }
  EXPECT_GT(refused, 100) << "truncations alone must be refused";
  fs::remove_all(dir);
}

TEST(HfGpt2, TheForwardPassUsesTheConfigsEpsilon) {
  const fs::path dir = make_dir("eps");
  Result<ModelWeights> w = load_hf_model(dir.string());
  ASSERT_TRUE(w) << w.error().message;
  ModelConfig cfg;
  cfg.d_model = kD;
  cfg.num_heads = kH;
  cfg.num_layers = kL;
  cfg.context = kP;
  const Batch batch = make_batch({"the the"}, cfg, *w);
  ForwardOptions fo;
  fo.want_logits = true;
  Result<ForwardOutput> a = forward(*w, cfg, batch, fo);
  ASSERT_TRUE(a) << a.error().message;
  ModelWeights w2 = *w;
  w2.ln_eps = 1e-1f;
  Result<ForwardOutput> b = forward(w2, cfg, batch, fo);
  ASSERT_TRUE(b);
  EXPECT_GT(std::abs(a->loss - b->loss), 1e-4) << "ln_eps must reach every LayerNorm of the forward pass";
  fs::remove_all(dir);
}

// A directory with tokenizer.json splits the text with that file's whole pipeline: its
// special token inside the text is one token, shown as its own text, not its bytes' pieces.
TEST(HfGpt2, TokenizerJsonSplitsTheText) {
  const fs::path dir = make_dir("tokjson");
  json tok = {{"model", {{"type", "BPE"}, {"vocab", tiny_vocab()}, {"merges", {"\xC4\xA0 t", "h e", "\xC4\xA0t he"}}}},
              {"pre_tokenizer", {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", true}}},
              {"decoder", {{"type", "ByteLevel"}}},
              {"added_tokens", {{{"id", 0}, {"content", "<|endoftext|>"}, {"special", true}, {"normalized", false}}}}};
  write(dir / "tokenizer.json", tok.dump());
  Result<ModelWeights> w = load_hf_model(dir.string());
  ASSERT_TRUE(w) << w.error().message;
  EXPECT_EQ(w->source.tokenizer_files, "tokenizer.json");
  ModelConfig cfg;
  cfg.d_model = kD;
  cfg.num_heads = kH;
  cfg.num_layers = kL;
  cfg.context = kP;
  const Batch batch = make_batch({"the<|endoftext|> the"}, cfg, *w);
  ASSERT_EQ(batch.B(), 1);
  std::vector<std::string> texts;
  for (const Token& t : batch.sentences[0].tokens) texts.push_back(t.text);
  EXPECT_EQ(texts, (std::vector<std::string>{"t", "he", "<|endoftext|>", " the"}));
  EXPECT_TRUE(batch.sentences[0].tokens[2].special);
  EXPECT_EQ(batch.sentences[0].tokens[2].id, 0);
  EXPECT_TRUE(batch.sentences[0].tokens[3].leading_space);
  fs::remove_all(dir);
}

// --model DIR's other tokenizer files, by the rule headmap-cli tokenize uses: BERT's vocab.txt
// alone is read as the WordPiece pipeline it stands for ([CLS] ... [SEP] added, special);
// SentencePiece's tokenizer.model alone is refused, saying that tokenizer.json is needed and
// how to get it; a directory with none of them says which files would do.
TEST(HfGpt2, TokenizerFallbacksOfAModelDirectory) {
  const fs::path dir = make_dir("fallbacks");
  fs::remove(dir / "vocab.json");
  fs::remove(dir / "merges.txt");
  write(dir / "vocab.txt", "[PAD]\n[UNK]\n[CLS]\n[SEP]\nthe\ncat\n##s\n.\n");
  Result<ModelWeights> w = load_hf_model(dir.string());
  ASSERT_TRUE(w) << w.error().message;
  EXPECT_EQ(w->source.tokenizer_files, "vocab.txt");
  ASSERT_TRUE(w->hf_tokenizer);
  ModelConfig cfg;
  cfg.d_model = kD;
  cfg.num_heads = kH;
  cfg.num_layers = kL;
  cfg.context = kP;
  const Batch batch = make_batch({"The cats."}, cfg, *w);
  ASSERT_EQ(batch.B(), 1);
  std::vector<std::string> texts;
  for (const Token& t : batch.sentences[0].tokens) texts.push_back(t.text);
  EXPECT_EQ(texts, (std::vector<std::string>{"[CLS]", "the", "cat", "s", ".", "[SEP]"}));
  EXPECT_TRUE(batch.sentences[0].tokens.front().special);
  EXPECT_TRUE(batch.sentences[0].tokens.back().special);
  EXPECT_EQ(batch.sentences[0].tokens[3].id, 6) << "\"s\" is ##s, shown as what it adds to its word";
  EXPECT_TRUE(batch.sentences[0].tokens[3].continues);
  EXPECT_FALSE(batch.sentences[0].tokens[2].continues) << "a space lies between \"the\" and \"cat\"";

  fs::remove(dir / "vocab.txt");
  write(dir / "tokenizer.model", "\x0a\x03" "abc");
  const std::string e = load_error(dir);
  EXPECT_TRUE(has(e, "tokenizer.model") && has(e, "needs the model's tokenizer.json") && has(e, "save_pretrained")) << e;
  fs::remove(dir / "tokenizer.model");
  const std::string none = load_error(dir);
  EXPECT_TRUE(has(none, "no tokenizer") && has(none, "vocab.txt")) << none;
  fs::remove_all(dir);
}

}  // namespace
}  // namespace headmap
