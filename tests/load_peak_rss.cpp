// load_peak_rss.cpp: the resident memory a BF16 model costs to load (issue 26: "peak resident
// memory for a BF16 file must stay within 1.15x the file"), and a GGUF file in its block types
// (issue 37: "peak RSS <= 1.1x the file"). Registered as the ctests family_load_peak_rss and
// gguf_load_peak_rss:
//
//   headmap-load-rss check [limit=1.15] [phi3|bert]
//                                        writes a Llama-shaped BF16 directory of ~170 MB into a
//                                        temporary directory, loads it in a fresh process (this
//                                        program, "load"), removes it; fails when the load does
//                                        not fit.
//                                        (phi3: the same sizes as Phi-3 stores them, fused qkv_proj
//                                        and gate_up_proj, each read in place into 16-bit panels;
//                                        bert: an encoder of the same sizes, every bias, the
//                                        embeddings' norm and a masked-LM head, by the same loader)
//   headmap-load-rss write DIR [phi3|bert]  writes the directory only
//   headmap-load-rss load DIR [limit]    loads DIR with load_hf_model and prints one JSON line:
//                                        the file's bytes, VmRSS before the load, VmHWM and VmRSS
//                                        after it; exit 1 when VmHWM - VmRSS(before) > limit x file
//                                        (DIR may be a .gguf file: load_gguf_model)
//   headmap-load-rss check-gguf LIMIT [--full-vocab] TYPE...  the same for a Llama-shaped GGUF
//                                        file of ~95-310 MB per TYPE (Q8_0, Q4_K, ..., Q4_K_M for the
//                                        mix, BF16, F16), written by tests/gguf_writer.h, each loaded
//                                        in a fresh process (--full-vocab: a token per embedding row,
//                                        32,000, so the tokenizer's conversion counts too)
//
// The size is chosen so that the process's own baseline (~10 MB) does not hide a copy: one F32
// copy of W_Q, W_K and W_V beside their packed 16-bit panels adds 50 MB (29% of the file).
// Writing takes well under a second (values from the counter-based normal stream, written in
// chunks); the tokenizer is the small test one (its vocabulary is shorter than V: ids past it
// are never produced, which the load allows).
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/io/gguf_model.h"
#include "core/io/hf_model.h"
#include "core/math/half.h"
#include "core/math/rng.h"
#include "gguf_writer.h"
#include "proc_status.h"

using namespace headmap;
using headmap::test::status_kib;  // VmHWM / VmRSS, in KiB
namespace fs = std::filesystem;

namespace {
// L = layers, D = d_model, H = heads, KV = K/V heads, dh = d_head, F = MLP width, V = vocab
constexpr int64_t D = 1024, H = 16, KV = 4, dh = 64, L = 8, F = 2048, V = 16000;

constexpr int64_t P = 512;  // an encoder's learned positions

// BERT's tensors at the sizes above (H heads of D / H: an encoder's K/V heads are its heads).
std::vector<std::pair<std::string, std::vector<int64_t>>> bert_tensors() {
  std::vector<std::pair<std::string, std::vector<int64_t>>> ts = {
      {"bert.embeddings.word_embeddings.weight", {V, D}}, {"bert.embeddings.position_embeddings.weight", {P, D}},
      {"bert.embeddings.token_type_embeddings.weight", {2, D}}, {"bert.embeddings.LayerNorm.weight", {D}}, {"bert.embeddings.LayerNorm.bias", {D}}};
  auto linear = [&](const std::string& n, int64_t out, int64_t in) {
    ts.push_back({n + ".weight", {out, in}});
    ts.push_back({n + ".bias", {out}});
  };
  auto norm = [&](const std::string& n) { ts.push_back({n + ".weight", {D}}), ts.push_back({n + ".bias", {D}}); };
  for (int l = 0; l < L; ++l) {
    const std::string p = "bert.encoder.layer." + std::to_string(l) + ".";
    linear(p + "attention.self.query", D, D), linear(p + "attention.self.key", D, D), linear(p + "attention.self.value", D, D);
    linear(p + "attention.output.dense", D, D), norm(p + "attention.output.LayerNorm");
    linear(p + "intermediate.dense", F, D), linear(p + "output.dense", D, F), norm(p + "output.LayerNorm");
  }
  linear("cls.predictions.transform.dense", D, D), norm("cls.predictions.transform.LayerNorm");
  ts.push_back({"cls.predictions.bias", {V}});
  return ts;
}

int write_dir(const fs::path& dir, bool fused, bool bert = false) {
  fs::create_directories(dir);
  std::vector<std::pair<std::string, std::vector<int64_t>>> ts = {{"model.embed_tokens.weight", {V, D}}};
  for (int l = 0; l < L && !bert; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    ts.push_back({p + "input_layernorm.weight", {D}});
    ts.push_back({p + "post_attention_layernorm.weight", {D}});
    if (fused) {
      ts.push_back({p + "self_attn.qkv_proj.weight", {H * dh + 2 * KV * dh, D}});
    } else {
      ts.push_back({p + "self_attn.q_proj.weight", {H * dh, D}});
      ts.push_back({p + "self_attn.k_proj.weight", {KV * dh, D}});
      ts.push_back({p + "self_attn.v_proj.weight", {KV * dh, D}});
    }
    ts.push_back({p + "self_attn.o_proj.weight", {D, H * dh}});
    if (fused) {
      ts.push_back({p + "mlp.gate_up_proj.weight", {2 * F, D}});
    } else {
      ts.push_back({p + "mlp.gate_proj.weight", {F, D}});
      ts.push_back({p + "mlp.up_proj.weight", {F, D}});
    }
    ts.push_back({p + "mlp.down_proj.weight", {D, F}});
  }
  ts.push_back({"model.norm.weight", {D}});
  if (bert) ts = bert_tensors();
  nlohmann::json header;
  uint64_t at = 0;
  for (const auto& [name, shape] : ts) {
    uint64_t n = 1;
    for (int64_t s : shape) n *= static_cast<uint64_t>(s);
    header[name] = {{"dtype", "BF16"}, {"shape", shape}, {"data_offsets", {at, at + 2 * n}}};
    at += 2 * n;
  }
  std::string h = header.dump();
  h.append((8 - h.size() % 8) % 8, ' ');
  std::ofstream f(dir / "model.safetensors", std::ios::binary);
  const uint64_t hn = h.size();
  f.write(reinterpret_cast<const char*>(&hn), 8);
  f << h;
  std::vector<float> chunk(1 << 20);
  std::vector<uint16_t> out(chunk.size());
  uint64_t key = 900;
  for (const auto& [name, shape] : ts) {
    uint64_t n = 1;
    for (int64_t s : shape) n *= static_cast<uint64_t>(s);
    const bool norm = shape.size() == 1;
    ++key;
    for (uint64_t i = 0; i < n; i += chunk.size()) {
      const size_t m = static_cast<size_t>(std::min<uint64_t>(chunk.size(), n - i));
      fill_normals_slice(key, static_cast<int64_t>(i), chunk.data(), static_cast<int64_t>(m), 0.05f);
      for (size_t j = 0; j < m; ++j) out[j] = float_to_bf16(chunk[j] + (norm ? 1.0f : 0.0f));
      f.write(reinterpret_cast<const char*>(out.data()), static_cast<std::streamsize>(m * 2));
    }
  }
  if (!f) {
    std::fprintf(stderr, "headmap-load-rss: cannot write %s\n", dir.c_str());
    return 1;
  }
  const nlohmann::json cfg = {{"model_type", fused ? "phi3" : "llama"},       {"hidden_size", D},       {"num_attention_heads", H},
                              {"num_key_value_heads", KV},   {"num_hidden_layers", L}, {"intermediate_size", F},
                              {"vocab_size", V},             {"head_dim", dh},         {"max_position_embeddings", 2048},
                              {"rms_norm_eps", 1e-5},        {"rope_theta", 500000.0}, {"tie_word_embeddings", true},
                              {"torch_dtype", "bfloat16"}};
  const nlohmann::json bert_cfg = {{"model_type", "bert"},     {"hidden_size", D},         {"num_attention_heads", H},
                                   {"num_hidden_layers", L},  {"intermediate_size", F},   {"vocab_size", V},
                                   {"max_position_embeddings", P}, {"type_vocab_size", 2}, {"torch_dtype", "bfloat16"}};
  std::ofstream(dir / "config.json") << (bert ? bert_cfg : cfg).dump(2);
  fs::copy_file(fs::path(HEADMAP_TEST_DATA) / "tokenizers" / (bert ? "wordpiece_bert.json" : "bpe_bytelevel_trim.json"), dir / "tokenizer.json",
                fs::copy_options::overwrite_existing);
  return 0;
}

// The GGUF fixture: the Llama shape above with a wider MLP, more layers and a bigger vocabulary,
// so that even a Q2_K file is ~95 MB: the load's fixed cost (OpenMP's threads, the tokenizer,
// the kernels' buffers: ~6 MB) is then well within the 0.1 allowed, and a widened copy of any
// matrix group is not.
constexpr test::GgufShape kGguf{1024, 16, 4, 64, 16, 4096, 32000};

bool gguf_types(const std::string& name, test::GgufTypes* out) {
  if (name == "Q4_K_M") return *out = test::GgufTypes::q4_k_m(), true;
  for (int i = 0; i < kWeightDtypes; ++i)
    if (name == dtype_name(static_cast<WeightDtype>(i))) return *out = test::GgufTypes::all(static_cast<WeightDtype>(i)), true;
  return false;
}

int load_dir(const std::string& dir, double limit) {
  uint64_t file_bytes = 0;
  const bool gguf = fs::path(dir).extension() == ".gguf";
  if (gguf) file_bytes = fs::file_size(dir);
  else
    for (const auto& e : fs::directory_iterator(dir))
      if (e.path().extension() == ".safetensors") file_bytes += e.file_size();
  const long rss_before = status_kib("VmRSS:");
  const auto t0 = std::chrono::steady_clock::now();
  Result<ModelWeights> w = gguf ? load_gguf_model(dir) : load_hf_model(dir);
  const double load_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (!w) {
    std::fprintf(stderr, "headmap-load-rss: %s\n", w.error().message.c_str());
    return 2;
  }
  const long hwm = status_kib("VmHWM:"), rss_after = status_kib("VmRSS:");
  const double growth = (hwm - rss_before) * 1024.0 / static_cast<double>(file_bytes);
  std::printf("{\"file_bytes\": %llu, \"rss_before_kib\": %ld, \"peak_rss_kib\": %ld, \"rss_after_kib\": %ld, "
              "\"peak_growth_over_file\": %.3f, \"resident_growth_over_file\": %.3f, \"limit\": %.3f, \"load_s\": %.3f}\n",
              static_cast<unsigned long long>(file_bytes), rss_before, hwm, rss_after, growth,
              (rss_after - rss_before) * 1024.0 / static_cast<double>(file_bytes), limit, load_s);
  if (rss_before < 0 || hwm < 0) {
    std::fprintf(stderr, "headmap-load-rss: no VmRSS / VmHWM in /proc/self/status\n");
    return 77;
  }
  if (growth > limit) {
    std::fprintf(stderr, "headmap-load-rss: the load's peak resident growth is %.3fx the file, over the %.2fx allowed\n", growth, limit);
    return 1;
  }
  return 0;
}
}  // namespace

// Loads `target` in a fresh process (this program, "load"), so that nothing this one wrote or
// freed counts.
int load_in_child(const char* self, const fs::path& target, const std::string& limit) {
  const pid_t pid = fork();
  if (pid == 0) {
    execl("/proc/self/exe", self, "load", target.c_str(), limit.c_str(), static_cast<char*>(nullptr));
    _exit(3);
  }
  int st = 0;
  return pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) ? WEXITSTATUS(st) : 4;
}

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  auto is = [&](int i, const char* what) { return argc > i && std::string(argv[i]) == what; };
  if (mode == "check-gguf" && argc > 3) {
    int rc = 0;
    const bool full_vocab = is(3, "--full-vocab");
    for (int i = full_vocab ? 4 : 3; i < argc; ++i) {
      test::GgufTypes types;
      if (!gguf_types(argv[i], &types)) {
        std::fprintf(stderr, "headmap-load-rss: unknown type %s\n", argv[i]);
        return 2;
      }
      const fs::path file = fs::temp_directory_path() / ("headmap_load_rss_" + std::to_string(::getpid()) + "_" + argv[i] + ".gguf");
      std::printf("%s: ", argv[i]);
      std::fflush(stdout);
      int r = test::write_llama_gguf(file.string(), kGguf, types, 11, false, full_vocab) ? load_in_child(argv[0], file, argv[2]) : 1;
      std::error_code ec;
      fs::remove(file, ec);
      if (r != 0 && r != 77) std::fprintf(stderr, "headmap-load-rss: %s failed (%d)\n", argv[i], r);
      rc = rc == 0 ? r : rc;
    }
    return rc;
  }
  if (mode == "write" && argc > 2) return write_dir(argv[2], is(3, "phi3"), is(3, "bert"));
  if (mode == "load" && argc > 2) return load_dir(argv[2], argc > 3 ? std::atof(argv[3]) : 1.15);
  if (mode == "check") {
    const std::string limit = argc > 2 ? argv[2] : "1.15";
    const fs::path dir = fs::temp_directory_path() / ("headmap_load_rss_" + std::to_string(::getpid()));
    int rc = write_dir(dir, is(3, "phi3"), is(3, "bert"));
    if (rc == 0) rc = load_in_child(argv[0], dir, limit);
    std::error_code ec;
    fs::remove_all(dir, ec);
    return rc;
  }
  std::fprintf(stderr, "usage: headmap-load-rss check [limit=1.15] [phi3|bert] | check-gguf LIMIT [--full-vocab] TYPE... | write DIR [phi3|bert] | load DIR|FILE.gguf [limit=1.15]\n");
  return 2;
}
