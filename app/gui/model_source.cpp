#include "app/gui/model_source.h"

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

namespace headmap {
namespace fs = std::filesystem;

Result<CheckpointInfo> checkpoint_info(const std::string& path) {
  auto bad = [&](const std::string& why) { return Error{ErrorKind::BadFormat, path + " is not a headmap checkpoint: " + why}; };
  std::ifstream f(path, std::ios::binary);
  if (!f) return Error{ErrorKind::Io, "Cannot open " + path + "."};
  unsigned char len_bytes[8];
  if (!f.read(reinterpret_cast<char*>(len_bytes), 8)) return bad("it is shorter than 8 bytes.");
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | len_bytes[i];
  if (n == 0 || n > (uint64_t(64) << 20)) return bad("the header length is implausible.");
  std::string header(static_cast<size_t>(n), '\0');
  if (!f.read(header.data(), static_cast<std::streamsize>(n))) return bad("the header is truncated.");
  try {
    const nlohmann::json j = nlohmann::json::parse(header);
    const nlohmann::json& m = j.at("__metadata__");
    if (m.value("format", "") != "headmap-checkpoint") return bad("its metadata has no \"format\": \"headmap-checkpoint\".");
    CheckpointInfo c;
    c.path = path;
    c.d_model = std::stoi(m.at("d_model").get<std::string>());
    c.num_heads = std::stoi(m.at("num_heads").get<std::string>());
    c.num_layers = std::stoi(m.at("num_layers").get<std::string>());
    c.context = std::stoi(m.at("context").get<std::string>());
    c.steps = std::stol(m.value("steps", std::string("0")));
    c.val_loss = std::stod(m.value("val_loss", std::string("0")));
    c.no_w_o = m.value("no_w_o", std::string("false")) == "true";
    return c;
  } catch (const std::exception& e) {
    return bad(std::string("its header could not be read (") + e.what() + ").");
  }
}

std::vector<CheckpointInfo> scan_checkpoints(const std::string& dir) {
  std::vector<CheckpointInfo> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec))
    if (e.path().extension() == ".safetensors")
      if (Result<CheckpointInfo> c = checkpoint_info(e.path().string())) out.push_back(*c);
  std::sort(out.begin(), out.end(), [](const CheckpointInfo& a, const CheckpointInfo& b) { return a.path < b.path; });
  return out;
}

WeightsChoice choose_weights(const ModelConfig& cfg, const WeightsInputs& in) {
  WeightsChoice c;
  if (in.mode == WeightsMode::Random) return c;
  if (in.pretrained) {  // the sliders follow its D and L; any H divides its D anew
    c.in_memory = in.pretrained;
    c.context_limit = std::min(in.pretrained->context, kMaxContext);
    return c;
  }
  const auto fits = [&](int d, int l) { return d == cfg.d_model && l == cfg.num_layers; };
  if (in.session && fits(in.session->d_model, in.session->num_layers())) {
    c.in_memory = in.session;
    c.context_limit = in.session->context;
    return c;
  }
  if (in.user_info && fits(in.user_info->d_model, in.user_info->num_layers)) {
    c.checkpoint = in.user_checkpoint;
    c.context_limit = in.user_info->context;
    return c;
  }
  const CheckpointInfo* same_h = nullptr;
  const CheckpointInfo* any = nullptr;
  if (in.shipped)
    for (const CheckpointInfo& k : *in.shipped) {
      // Checkpoints trained without W_O are for the comparison, never picked by themselves.
      if (!fits(k.d_model, k.num_layers) || k.no_w_o) continue;
      if (k.num_heads == cfg.num_heads && !same_h) same_h = &k;
      // Re-slicing prefers the 4-head training, the default, then the first one found.
      if (!any || (k.num_heads == 4 && any->num_heads != 4)) any = &k;
    }
  if (const CheckpointInfo* k = same_h ? same_h : any) {
    c.checkpoint = k->path;
    c.context_limit = k->context;
    return c;
  }
  c.note = "No trained model for d_model " + std::to_string(cfg.d_model) + " with " + std::to_string(cfg.num_layers) +
           (cfg.num_layers == 1 ? " layer" : " layers") + ": random init. Train one in the Training tab.";
  return c;
}

}  // namespace headmap
