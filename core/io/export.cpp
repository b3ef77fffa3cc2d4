// export.cpp: atomic writes, .npy, JSON documents.
#include "core/io/export.h"

#include "core/io/hf_gpt2.h"

#include <cmath>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

namespace headmap {
namespace fs = std::filesystem;
using nlohmann::json;

static Error io_error(const std::string& what, const std::string& path) {
  return Error{ErrorKind::Io, what + " " + path + ": " + std::strerror(errno) + "."};
}

Status write_file_atomic(const std::string& path, const std::string& bytes) {
  const fs::path target(path);
  const fs::path dir = target.has_parent_path() ? target.parent_path() : fs::path(".");
  std::string tmpl = (dir / ("." + target.filename().string() + ".tmp-XXXXXX")).string();
  std::vector<char> name(tmpl.begin(), tmpl.end());
  name.push_back('\0');
  const int fd = mkstemp(name.data());
  if (fd < 0) return io_error("Cannot create a file in", dir.string());
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      Error e = io_error("Cannot write", path);
      ::close(fd);
      ::unlink(name.data());
      return e;
    }
    done += static_cast<size_t>(n);
  }
  fchmod(fd, 0644);
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    Error e = io_error("Cannot finish writing", path);
    ::unlink(name.data());
    return e;
  }
  if (std::rename(name.data(), path.c_str()) != 0) {
    Error e = io_error("Cannot replace", path);
    ::unlink(name.data());
    return e;
  }
  return Status();
}

Result<std::string> read_file(const std::string& path, size_t max_bytes) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return Error{ErrorKind::Io, "Cannot open " + path + ": " + std::strerror(errno) + "."};
  f.seekg(0, std::ios::end);
  const std::streamoff size = f.tellg();
  if (size < 0) return Error{ErrorKind::Io, "Cannot read " + path + "."};
  if (static_cast<size_t>(size) > max_bytes)
    return Error{ErrorKind::BadFormat, path + " is larger than " + std::to_string(max_bytes >> 20) + " MiB; is it the right file?"};
  std::string bytes(static_cast<size_t>(size), '\0');
  f.seekg(0);
  f.read(bytes.data(), size);
  if (!f) return Error{ErrorKind::Io, "Cannot read " + path + "."};
  return bytes;
}

// ---- .npy ------------------------------------------------------------------------------
std::string npy_bytes(const float* data, const Shape& shape) {
  std::string tuple;
  for (size_t i = 0; i < shape.size(); ++i) tuple += (i ? ", " : "") + std::to_string(shape[i]);
  if (shape.size() == 1) tuple += ",";
  std::string dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (" + tuple + "), }";
  // Header length makes magic(6) + version(2) + len(2) + header a multiple of 64, ending in \n.
  size_t total = 10 + dict.size() + 1;
  dict += std::string((64 - total % 64) % 64, ' ') + "\n";
  std::string out("\x93NUMPY\x01\x00", 8);
  const uint16_t hl = static_cast<uint16_t>(dict.size());
  out.push_back(static_cast<char>(hl & 0xFF));
  out.push_back(static_cast<char>(hl >> 8));
  out += dict;
  out.append(reinterpret_cast<const char*>(data), static_cast<size_t>(shape_numel(shape)) * 4);
  return out;
}

Result<Tensor> parse_npy(const std::string& b) {
  auto bad = [](const std::string& m) { return Error{ErrorKind::BadFormat, "Not a float32 .npy file: " + m + "."}; };
  if (b.size() < 10 || b.compare(0, 6, "\x93NUMPY") != 0) return bad("missing the \\x93NUMPY magic");
  const int major = static_cast<unsigned char>(b[6]);
  size_t hl = 0, off = 0;
  if (major == 1) { hl = static_cast<unsigned char>(b[8]) | (static_cast<unsigned char>(b[9]) << 8); off = 10; }
  else if (major == 2 || major == 3) {
    if (b.size() < 12) return bad("truncated header");
    hl = 0;
    for (int i = 0; i < 4; ++i) hl |= static_cast<size_t>(static_cast<unsigned char>(b[8 + i])) << (8 * i);
    off = 12;
  } else return bad("unknown version " + std::to_string(major));
  if (b.size() < off + hl) return bad("truncated header");
  const std::string h = b.substr(off, hl);
  if (h.find("'descr': '<f4'") == std::string::npos) return bad("dtype is not '<f4'");
  if (h.find("'fortran_order': False") == std::string::npos) return bad("Fortran order is not supported");
  const size_t sp = h.find("'shape': (");
  if (sp == std::string::npos) return bad("no shape");
  const size_t end = h.find(')', sp);
  if (end == std::string::npos) return bad("bad shape");
  Shape shape;
  std::stringstream ss(h.substr(sp + 10, end - sp - 10));
  std::string part;
  while (std::getline(ss, part, ',')) {
    if (part.find_first_not_of(' ') == std::string::npos) continue;
    try {
      shape.push_back(std::stoll(part));
    } catch (...) {
      return bad("bad shape");
    }
  }
  Tensor t(shape);
  const size_t need = static_cast<size_t>(t.numel()) * 4;
  if (b.size() - off - hl != need) return bad("data size does not match the shape");
  std::memcpy(t.data.data(), b.data() + off + hl, need);
  return t;
}

// ---- JSON ------------------------------------------------------------------------------
static json config_to_json(const ModelConfig& c) {
  json p = json::object();
  for (const PitfallInfo& pi : pitfall_list()) p[std::string(pi.cli).substr(10)] = c.pitfalls.*(pi.flag);
  return {{"d_model", c.d_model}, {"num_heads", c.num_heads}, {"num_layers", c.num_layers}, {"context", c.context},
          {"causal", c.causal},   {"positional", c.positional}, {"seed", c.seed}, {"d_head", c.d_head()},
          {"tokenizer", tokenizer_name(c.tokenizer)}, {"pitfalls", p}};
}

std::string config_json(const ModelConfig& cfg) { return config_to_json(cfg).dump(2); }

Result<ModelConfig> config_from_json(const std::string& text) {
  auto bad = [](const std::string& m) { return Error{ErrorKind::BadFormat, m}; };
  json j;
  try {
    j = json::parse(text);
  } catch (const json::exception& e) {
    return bad(std::string("The config is not valid JSON (") + e.what() + ").");
  }
  if (!j.is_object()) return bad("The config must be a JSON object.");
  ModelConfig c;
  try {
    auto get_int = [&](const char* k, int& dst) { if (j.contains(k)) dst = j.at(k).get<int>(); };
    auto get_bool = [&](const char* k, bool& dst) { if (j.contains(k)) dst = j.at(k).get<bool>(); };
    get_int("d_model", c.d_model);
    get_int("num_heads", c.num_heads);
    get_int("num_layers", c.num_layers);
    get_int("context", c.context);
    get_bool("causal", c.causal);
    get_bool("positional", c.positional);
    if (j.contains("seed")) c.seed = j.at("seed").get<uint64_t>();
    if (j.contains("tokenizer") && !parse_tokenizer(j.at("tokenizer").get<std::string>(), &c.tokenizer))
      return bad("Unknown tokenizer \"" + j.at("tokenizer").get<std::string>() + "\": use word or char.");
    if (j.contains("pitfalls")) {
      const json& p = j.at("pitfalls");
      if (!p.is_object()) return bad("\"pitfalls\" must be an object.");
      for (const PitfallInfo& pi : pitfall_list()) {
        const std::string key = std::string(pi.cli).substr(10);
        if (p.contains(key)) c.pitfalls.*(pi.flag) = p.at(key).get<bool>();
      }
    }
  } catch (const json::exception& e) {
    return bad(std::string("A config field has the wrong type (") + e.what() + ").");
  }
  return c;
}

std::string describe_source(const ModelWeights& w, const ModelConfig& cfg) {
  const WeightsSource& s = w.source;
  char buf[256];
  if (s.kind == WeightsSource::Kind::RandomInit) {
    std::snprintf(buf, sizeof buf, "random init (seed %llu)", static_cast<unsigned long long>(s.seed));
    return buf;
  }
  if (s.kind == WeightsSource::Kind::Pretrained) {
    // "gpt2 from ~/models/gpt2: D=768, H=12, L=12, 124M parameters"
    std::string where = s.path;
    if (const char* home = std::getenv("HOME"); home && *home && where.rfind(std::string(home) + "/", 0) == 0)
      where = "~" + where.substr(std::strlen(home));
    std::snprintf(buf, sizeof buf, ": D=%d, H=%d, L=%d, ", w.d_model, s.trained_heads, w.num_layers());
    std::string out = s.model_name + " from " + where + buf + parameters_text(s.parameters) + " parameters";
    if (cfg.num_heads != s.trained_heads) out = "re-sliced to H=" + std::to_string(cfg.num_heads) + ": " + out;
    if (cfg.num_layers < w.num_layers()) out += " (first " + std::to_string(cfg.num_layers) + " layers)";
    return out;
  }
  std::snprintf(buf, sizeof buf, "trained (D=%d, H=%d, L=%d, %ld steps, loss %.2f)", w.d_model, s.trained_heads,
                w.num_layers(), s.steps, s.final_loss);
  std::string out = buf;
  if (cfg.num_heads != s.trained_heads) out = "re-sliced from the H=" + std::to_string(s.trained_heads) + " training: " + out;
  return out;
}

static json tokens_json(const Batch& batch) {
  json sents = json::array();
  for (int b = 0; b < batch.B(); ++b) {
    json toks = json::array();
    for (const Token& t : batch.sentences[b].tokens) toks.push_back(t.text);
    sents.push_back(toks);
  }
  return sents;
}

// (B) lists of vocabulary ids, for trained models.
static json token_ids_json(const Batch& batch) {
  json sents = json::array();
  for (const TokenizedText& s : batch.sentences) {
    json ids = json::array();
    for (const Token& t : s.tokens) ids.push_back(t.id);
    sents.push_back(ids);
  }
  return sents;
}

static json passport_to_json(const Passport& p) {
  json steps = json::array();
  for (const PassportStep& s : p.steps)
    steps.push_back({{"id", s.id}, {"section", s.section}, {"name", s.name}, {"formula", s.formula}, {"symbolic", s.symbolic},
                     {"shape", s.concrete}, {"flops", s.flops}, {"bytes", s.bytes}, {"view", s.view}, {"note", s.note}});
  json params = json::array();
  for (const ParamCount& c : p.params)
    params.push_back({{"name", c.name}, {"formula", c.formula}, {"count", c.count}, {"attention", c.attention}});
  return {{"steps", steps},
          {"params", params},
          {"attention_params", p.attention_params},
          {"total_params", p.total_params},
          {"total_flops", p.total_flops}};
}

std::string run_json(const RunRecord& run, bool with_weights, int indent) {
  const Batch& batch = *run.batch;
  const ForwardOutput& out = *run.out;
  json j;
  j["config"] = config_to_json(run.cfg);
  j["weights_source"] = describe_source(*run.weights, run.cfg);
  j["tokens"] = tokens_json(batch);
  if (run.weights->trained()) j["token_ids"] = token_ids_json(batch);
  j["lengths"] = batch.lengths;
  j["notes"] = batch.notes();
  // Mean next-token cross-entropy over every sentence's tokens (trained models only).
  if (out.loss_tokens > 0) {
    j["loss_on_text"] = out.loss;
    j["loss_tokens"] = out.loss_tokens;
  }
  j["B"] = out.B;
  j["T"] = out.T;
  if (batch.empty()) j["message"] = "Nothing to attend over: the text has no tokens.";
  if (out.no_key_rows > 0) j["rows_without_visible_key"] = out.no_key_rows;
  if (run.passport) {
    json pj = passport_to_json(*run.passport);
    j["passport"] = pj["steps"];
    j["params"] = pj["params"];
    j["attention_params"] = pj["attention_params"];
    j["total_params"] = pj["total_params"];
    j["total_flops"] = pj["total_flops"];
  }
  json metrics = json::array();
  size_t i = 0;
  for (int l = 0; l < out.L; ++l)
    for (int b = 0; b < out.B; ++b)
      for (int h = 0; h < out.Hw; ++h, ++i) {
        if (i >= run.metrics.size()) break;
        const HeadMetrics& m = run.metrics[i];
        json e = {{"layer", l}, {"batch", b}, {"head", h}, {"entropy", m.entropy}, {"entropy_norm", m.entropy_norm},
                  {"prev_token", m.prev_token}, {"first_token", m.first_token}, {"self", m.self}, {"max_weight", m.max_weight}};
        const size_t ih = static_cast<size_t>(l) * out.H + h;
        const float ind = (!run.cfg.pitfalls.head_averaged && ih < run.induction.size()) ? run.induction[ih] : 0.0f;
        if (!run.induction.empty() && !run.cfg.pitfalls.head_averaged) e["induction"] = ind;
        if (i < run.text_induction.size() && !std::isnan(run.text_induction[i])) e["text_induction"] = run.text_induction[i];
        e["label"] = head_label_name(head_label(m, ind));
        metrics.push_back(e);
      }
  j["metrics"] = metrics;
  if (!run.induction.empty()) {
    j["induction_scores"] = run.induction;
    j["label_thresholds"] = {{"prev_token", kLabelThresholds.prev_token}, {"first_token", kLabelThresholds.first_token},
                             {"self", kLabelThresholds.self}, {"induction", kLabelThresholds.induction},
                             {"broad_entropy_norm", kLabelThresholds.broad}};
  }
  if (with_weights) {
    json layers = json::array();
    for (int l = 0; l < out.L; ++l) {
      json bs = json::array();
      for (int b = 0; b < out.B; ++b) {
        json hs = json::array();
        for (int h = 0; h < out.Hw; ++h) {
          const float* w = out.weights(l, b, h);
          json rows = json::array();
          for (int t = 0; t < out.T; ++t) rows.push_back(std::vector<float>(w + static_cast<size_t>(t) * out.T, w + static_cast<size_t>(t + 1) * out.T));
          hs.push_back(rows);
        }
        bs.push_back(hs);
      }
      layers.push_back(bs);
    }
    j["weights"] = layers;
    j["weights_shape"] = {out.L, out.B, out.Hw, out.T, out.T};
  }
  return j.dump(indent, ' ', false, json::error_handler_t::replace) + "\n";
}

// ---- --npy directory -------------------------------------------------------------------
Status export_npy_dir(const std::string& dir, const RunRecord& run) {
  const ForwardOutput& out = *run.out;
  const Batch& batch = *run.batch;
  if (batch.empty()) return Error{ErrorKind::InvalidArgument, "Nothing to export: the text has no tokens."};
  if (static_cast<int>(out.attn_in.size()) != out.L)
    return Error{ErrorKind::InvalidArgument, "The run did not keep the layer inputs (keep_layer_io); nothing was written."};
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return Error{ErrorKind::Io, "Cannot create the directory " + dir + ": " + ec.message() + "."};
  // Stage every file in a hidden sibling directory, then rename the files into dir.
  std::string tmpl = (fs::path(dir) / ".staging-XXXXXX").string();
  std::vector<char> name(tmpl.begin(), tmpl.end());
  name.push_back('\0');
  if (!mkdtemp(name.data())) return io_error("Cannot create a staging directory in", dir);
  const fs::path staging(name.data());
  std::vector<std::string> files;
  auto put = [&](const std::string& file, const std::string& bytes) -> Status {
    std::ofstream f(staging / file, std::ios::binary);
    f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    f.close();
    if (!f) return io_error("Cannot write", (staging / file).string());
    files.push_back(file);
    return Status();
  };
  auto fail = [&](const Status& s) {
    fs::remove_all(staging, ec);
    return s;
  };
  const int64_t B = out.B, T = out.T, D = out.D;
  if (Status s = put("attention.npy", npy_bytes(out.attention.data(), {out.L, B, out.Hw, T, T})); !s) return fail(s);
  for (int l = 0; l < out.L; ++l) {
    const LayerWeights& lw = run.weights->layers[l];
    const std::string p = "layer" + std::to_string(l) + ".";
    const std::pair<const char*, const MatR*> mats[] = {{"w_q", &lw.w_q}, {"w_k", &lw.w_k}, {"w_v", &lw.w_v}, {"w_o", &lw.w_o}};
    const std::pair<const char*, const RowVec*> vecs[] = {{"b_q", &lw.b_q}, {"b_k", &lw.b_k}, {"b_v", &lw.b_v}, {"b_o", &lw.b_o}};
    if (Status s = put(p + "attn_in.npy", npy_bytes(out.attn_in[l].data(), {B, T, D})); !s) return fail(s);
    if (Status s = put(p + "attn_out.npy", npy_bytes(out.attn_out[l].data(), {B, T, D})); !s) return fail(s);
    for (auto& [n, m] : mats)
      if (Status s = put(p + n + ".npy", npy_bytes(m->data(), {D, D})); !s) return fail(s);
    for (auto& [n, v] : vecs)
      if (Status s = put(p + n + ".npy", npy_bytes(v->data(), {D})); !s) return fail(s);
  }
  json meta;
  meta["tokens"] = tokens_json(batch);
  if (run.weights->trained()) meta["token_ids"] = token_ids_json(batch);
  meta["lengths"] = batch.lengths;
  meta["config"] = config_to_json(run.cfg);
  meta["weights_source"] = describe_source(*run.weights, run.cfg);
  meta["attention_shape"] = {out.L, B, out.Hw, T, T};
  meta["convention"] = "y = x @ W + b, W stored (D_in, D_out); attn_in is LN1(x), the exact input of attention";
  if (Status s = put("meta.json", meta.dump(2, ' ', false, json::error_handler_t::replace) + "\n"); !s) return fail(s);
  for (const std::string& f : files) {
    fs::rename(staging / f, fs::path(dir) / f, ec);
    if (ec) return fail(Error{ErrorKind::Io, "Cannot move " + f + " into " + dir + ": " + ec.message() + "."});
  }
  fs::remove_all(staging, ec);
  return Status();
}

}  // namespace headmap
