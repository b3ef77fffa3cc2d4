// model_cache.cpp: names -> paths in the Hugging Face, Ollama and LM Studio caches (see
// model_cache.h).
#include "core/io/model_cache.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "core/io/file_io.h"

namespace headmap {
namespace fs = std::filesystem;

namespace {
std::string env(const char* k) {
  const char* v = std::getenv(k);
  return v ? std::string(v) : std::string();
}
// A path component of a name: letters, digits, '-', '_', '.', not "." or "..".
bool plain_part(const std::string& s) {
  if (s.empty() || s == "." || s == ".." || s.size() > 200) return false;
  for (char c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.')) return false;
  return true;
}
}  // namespace

std::vector<std::string> hf_hub_caches() {
  std::vector<std::string> out;
  if (!env("HF_HUB_CACHE").empty()) out.push_back(env("HF_HUB_CACHE"));
  if (!env("HF_HOME").empty()) out.push_back((fs::path(env("HF_HOME")) / "hub").string());
  if (!env("HOME").empty()) out.push_back((fs::path(env("HOME")) / ".cache" / "huggingface" / "hub").string());
  return out;
}

std::vector<std::string> lmstudio_model_dirs() {
  if (env("HOME").empty()) return {};
  const fs::path home(env("HOME"));
  return {(home / ".lmstudio" / "models").string(), (home / ".cache" / "lm-studio" / "models").string()};
}

namespace {
bool is_gguf_name(const std::string& f) { return f.size() > 5 && f.compare(f.size() - 5, 5, ".gguf") == 0; }

// PUBLISHER/REPO[/FILE.gguf] in LM Studio's folders. `looked` gathers the folders tried. A
// folder found but holding no single model is an error; not found at all is Io with no path.
Result<std::string> resolve_lmstudio(const std::string& name, const std::string& publisher, const std::string& repo, const std::string& file,
                                     std::string& looked) {
  std::error_code ec;
  for (const std::string& root : lmstudio_model_dirs()) {
    const fs::path d = fs::path(root) / publisher / repo;
    looked += (looked.empty() ? "" : ", ") + d.string();
    if (!fs::is_directory(d, ec)) continue;
    if (!file.empty()) {
      if (fs::is_regular_file(d / file, ec)) return (d / file).string();
      continue;
    }
    std::vector<std::string> models;
    for (fs::directory_iterator it(d, ec), end; !ec && it != end; it.increment(ec)) {
      const std::string f = it->path().filename().string();
      if (is_gguf_name(f) && f.rfind("mmproj", 0) != 0 && fs::is_regular_file(it->path(), ec)) models.push_back(f);
    }
    std::sort(models.begin(), models.end());
    if (models.size() == 1) return (d / models[0]).string();
    if (models.empty()) return Error{ErrorKind::Io, d.string() + " (LM Studio) holds no .gguf model file."};
    std::string list;
    for (const std::string& m : models) list += (list.empty() ? "" : ", ") + name + "/" + m;
    return Error{ErrorKind::Io, d.string() + " (LM Studio) holds " + std::to_string(models.size()) + " models; name one: " + list + "."};
  }
  return Error{ErrorKind::Io, ""};
}
}  // namespace

Result<std::string> resolve_cached_model(const std::string& name) {
  std::error_code ec;
  const size_t slash = name.find('/');
  if (slash != std::string::npos && name.find('/', slash + 1) != std::string::npos) {  // PUBLISHER/REPO/FILE.gguf: LM Studio's
    const size_t s2 = name.find('/', slash + 1);
    const std::string publisher = name.substr(0, slash), repo = name.substr(slash + 1, s2 - slash - 1), file = name.substr(s2 + 1);
    if (!plain_part(publisher) || !plain_part(repo) || !plain_part(file) || !is_gguf_name(file))
      return Error{ErrorKind::InvalidArgument, name + " is not an LM Studio model name (PUBLISHER/REPO/FILE.gguf)."};
    std::string looked;
    Result<std::string> lm = resolve_lmstudio(name, publisher, repo, file, looked);
    if (lm || !lm.error().message.empty()) return lm;
    return Error{ErrorKind::Io, name + " is not in LM Studio's models folder (looked in " + (looked.empty() ? std::string("none: HOME is unset") : looked) + ")."};
  }
  if (slash != std::string::npos) {
    const std::string org = name.substr(0, slash), repo = name.substr(slash + 1);
    if (!plain_part(org) || !plain_part(repo)) return Error{ErrorKind::InvalidArgument, name + " is not a Hugging Face repo id (ORG/NAME)."};
    std::string looked;
    for (const std::string& cache : hf_hub_caches()) {
      const fs::path d = fs::path(cache) / ("models--" + org + "--" + repo);
      looked += (looked.empty() ? "" : ", ") + d.string();
      if (!fs::is_directory(d, ec)) continue;
      Result<std::string> ref = read_file((d / "refs" / "main").string(), 4096);
      if (!ref) return Error{ErrorKind::Io, d.string() + " has no readable refs/main, so its snapshot is unknown (download the model again with huggingface-cli)."};
      std::string rev = *ref;
      while (!rev.empty() && (rev.back() == '\n' || rev.back() == '\r' || rev.back() == ' ')) rev.pop_back();
      if (!plain_part(rev)) return Error{ErrorKind::BadFormat, (d / "refs" / "main").string() + " does not hold a revision name."};
      const fs::path snap = d / "snapshots" / rev;
      if (!fs::is_directory(snap, ec)) return Error{ErrorKind::Io, d.string() + ": refs/main names snapshot " + rev + ", which is not there."};
      return snap.string();
    }
    std::string lm_looked;
    Result<std::string> lm = resolve_lmstudio(name, org, repo, "", lm_looked);
    if (lm || !lm.error().message.empty()) return lm;
    return Error{ErrorKind::Io, name + " is not in the Hugging Face cache (looked in " + (looked.empty() ? std::string("no cache: HOME is unset") : looked) +
                                    ") nor in LM Studio's models folder (" + (lm_looked.empty() ? std::string("HOME is unset") : lm_looked) +
                                    "); download it with huggingface-cli download " + name + "."};
  }
  const size_t colon = name.find(':');
  const std::string model = name.substr(0, colon), tag = colon == std::string::npos ? "latest" : name.substr(colon + 1);
  if (!plain_part(model) || !plain_part(tag)) return Error{ErrorKind::InvalidArgument, name + " is not an Ollama model name (NAME or NAME:TAG)."};
  const fs::path root = !env("OLLAMA_MODELS").empty() ? fs::path(env("OLLAMA_MODELS"))
                        : !env("HOME").empty()        ? fs::path(env("HOME")) / ".ollama" / "models"
                                                      : fs::path();
  if (root.empty()) return Error{ErrorKind::Io, name + ": no Ollama models folder (HOME and OLLAMA_MODELS are unset)."};
  const fs::path manifest = root / "manifests" / "registry.ollama.ai" / "library" / model / tag;
  if (!fs::exists(manifest, ec)) return Error{ErrorKind::Io, name + " is not an Ollama model here (no " + manifest.string() + ")."};
  Result<std::string> text = read_file(manifest.string(), size_t(1) << 20);
  if (!text) return text.error();
  try {
    const nlohmann::json j = nlohmann::json::parse(*text);
    for (const nlohmann::json& layer : j.at("layers")) {
      if (layer.value("mediaType", std::string()) != "application/vnd.ollama.image.model") continue;
      const std::string digest = layer.at("digest").get<std::string>();
      if (digest.rfind("sha256:", 0) != 0 || !plain_part(digest.substr(7)))
        return Error{ErrorKind::BadFormat, manifest.string() + ": the model layer's digest \"" + digest + "\" is not sha256:HEX."};
      const fs::path blob = root / "blobs" / ("sha256-" + digest.substr(7));
      if (!fs::exists(blob, ec)) return Error{ErrorKind::Io, manifest.string() + " names blob " + blob.string() + ", which is not there (pull the model again)."};
      return blob.string();
    }
  } catch (const nlohmann::json::exception& e) {
    return Error{ErrorKind::BadFormat, manifest.string() + ": not an Ollama manifest (" + e.what() + ")."};
  }
  return Error{ErrorKind::BadFormat, manifest.string() + " has no model layer (application/vnd.ollama.image.model)."};
}

}  // namespace headmap
