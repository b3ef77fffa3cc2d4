// model_cache.cpp: names -> paths in the Hugging Face, Ollama and LM Studio caches (see
// model_cache.h).
#include "core/io/model_cache.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <iterator>
#include <map>
#include <nlohmann/json.hpp>

#include "core/io/file_io.h"
#include "core/io/gguf.h"

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

fs::path ollama_root() {
  return !env("OLLAMA_MODELS").empty() ? fs::path(env("OLLAMA_MODELS")) : !env("HOME").empty() ? fs::path(env("HOME")) / ".ollama" / "models" : fs::path();
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

namespace {
// ORG/NAME's snapshot directory in the first Hugging Face cache that holds the repo; an Io
// error with an empty message when none does (`looked` gathers the folders tried).
Result<std::string> resolve_hf(const std::string& org, const std::string& repo, std::string* looked = nullptr) {
  std::error_code ec;
  for (const std::string& cache : hf_hub_caches()) {
    const fs::path d = fs::path(cache) / ("models--" + org + "--" + repo);
    if (looked) *looked += (looked->empty() ? "" : ", ") + d.string();
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
    // A file of a Hugging Face repo of several quantizations (ORG/NAME/FILE.gguf), else LM Studio's.
    if (Result<std::string> snap = resolve_hf(publisher, repo); snap && fs::is_regular_file(fs::path(*snap) / file, ec)) return (fs::path(*snap) / file).string();
    std::string looked;
    Result<std::string> lm = resolve_lmstudio(name, publisher, repo, file, looked);
    if (lm || !lm.error().message.empty()) return lm;
    return Error{ErrorKind::Io, name + " is neither a file of " + publisher + "/" + repo + " in the Hugging Face cache nor in LM Studio's models folder (looked in " +
                                    (looked.empty() ? std::string("none: HOME is unset") : looked) + ")."};
  }
  if (slash != std::string::npos) {
    const std::string org = name.substr(0, slash), repo = name.substr(slash + 1);
    if (!plain_part(org) || !plain_part(repo)) return Error{ErrorKind::InvalidArgument, name + " is not a Hugging Face repo id (ORG/NAME)."};
    std::string looked;
    Result<std::string> hf = resolve_hf(org, repo, &looked);
    if (hf || !hf.error().message.empty()) return hf;
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
  const fs::path root = ollama_root();
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

// The listing (File > Open model).
namespace {
// llama.cpp's general.file_type (llama.h's llama_ftype): the name people know a mix by.
const char* ftype_name(int64_t t) {
  static const char* const names[] = {"F32",    "F16",     "Q4_0",    "Q4_1",   "Q4_1_SOME_F16", nullptr, nullptr, "Q8_0",   "Q5_0",  "Q5_1",   "Q2_K",
                                      "Q3_K_S", "Q3_K_M",  "Q3_K_L",  "Q4_K_S", "Q4_K_M",        "Q5_K_S", "Q5_K_M", "Q6_K",  "IQ2_XXS", "IQ2_XS", "Q2_K_S",
                                      "IQ3_XS", "IQ3_XXS", "IQ1_S",   "IQ4_NL", "IQ3_S",         "IQ3_M",  "IQ2_S",  "IQ2_M", "IQ4_XS", "IQ1_M",  "BF16"};
  return t >= 0 && t < static_cast<int64_t>(std::size(names)) ? names[t] : nullptr;
}

// "llama, Q4_K_M": a GGUF file's architecture and its mix (general.file_type), else the one
// or two tensor types holding most of its bytes ("Q6_K + Q4_K"), from its header alone (the
// arrays stepped over); or why it cannot be read.
std::string gguf_type(const std::string& path, bool* ok) {
  Result<GgufFile> f = GgufFile::open(path, GgufArrays::Skipped);
  if (!f) {
    *ok = false;
    return "not a readable GGUF file";
  }
  const GgufValue* arch = f->find("general.architecture");
  std::string out = arch && arch->type == GgufValueType::String ? arch->s : std::string("no architecture");
  int64_t ft = -1;
  if (const GgufValue* v = f->find("general.file_type"); v && v->as_int(0, 1 << 20, &ft) && ftype_name(ft)) return out + ", " + ftype_name(ft);
  std::map<uint32_t, uint64_t> by_type;
  for (const GgufTensorInfo& t : f->tensors()) by_type[t.type] += t.bytes;
  std::vector<std::pair<uint64_t, uint32_t>> order;
  for (const auto& [type, bytes] : by_type) order.push_back({bytes, type});
  std::sort(order.rbegin(), order.rend());
  for (size_t k = 0; k < order.size() && k < 2 && (k == 0 || order[k].first * 10 >= order[0].first); ++k)  // a second type of 10 % or more
    if (const GgmlTypeInfo* info = ggml_type_info(order[k].second)) out += std::string(k == 0 ? ", " : " + ") + info->name;
  return out;
}

uint64_t file_bytes(const fs::path& p) {
  std::error_code ec;
  const uintmax_t n = fs::file_size(p, ec);  // follows a symlink into blobs/
  return ec ? 0 : static_cast<uint64_t>(n);
}

std::vector<fs::path> gguf_files_in(const fs::path& dir) {
  std::vector<fs::path> out;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string f = it->path().filename().string();
    if (is_gguf_name(f) && f.rfind("mmproj", 0) != 0 && fs::is_regular_file(it->path(), ec)) out.push_back(it->path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

void list_hf(std::vector<CachedModel>& out, size_t limit) {
  std::error_code ec;
  std::vector<std::string> seen;
  for (const std::string& cache : hf_hub_caches()) {
    std::vector<fs::path> repos;
    for (fs::directory_iterator it(cache, ec), end; !ec && it != end; it.increment(ec)) {
      const std::string d = it->path().filename().string();
      if (d.rfind("models--", 0) == 0 && d.find("--", 8) != std::string::npos && it->is_directory(ec)) repos.push_back(it->path());
    }
    ec.clear();
    std::sort(repos.begin(), repos.end());
    for (const fs::path& repo : repos) {
      if (out.size() >= limit) return;
      const std::string d = repo.filename().string();
      const size_t sep = d.find("--", 8);
      const std::string name = d.substr(8, sep - 8) + "/" + d.substr(sep + 2);
      if (std::find(seen.begin(), seen.end(), name) != seen.end()) continue;  // an earlier cache's copy is the one opened
      seen.push_back(name);
      CachedModel m{name, "Hugging Face", "", 0, "", true};
      Result<std::string> snap = resolve_cached_model(name);
      if (!snap) {
        m.openable = false;
        m.type = snap.error().message;
        out.push_back(std::move(m));
        continue;
      }
      m.path = *snap;
      for (fs::recursive_directory_iterator it(*snap, ec), end; !ec && it != end; it.increment(ec)) {
        if (it.depth() > 2) it.disable_recursion_pending();
        m.bytes += file_bytes(it->path());
      }
      ec.clear();
      const std::vector<fs::path> ggufs = gguf_files_in(*snap);
      if (fs::is_regular_file(fs::path(*snap) / "config.json", ec)) {
        Result<std::string> text = read_file((fs::path(*snap) / "config.json").string(), size_t(1) << 20);
        try {
          const nlohmann::json j = nlohmann::json::parse(text ? *text : std::string("{}"));
          m.type = j.value("model_type", std::string("no model_type"));
          const std::string dtype = j.contains("torch_dtype") && j["torch_dtype"].is_string() ? j["torch_dtype"].get<std::string>()
                                    : j.contains("dtype") && j["dtype"].is_string()             ? j["dtype"].get<std::string>()
                                                                                                 : std::string();
          if (!dtype.empty()) m.type += ", " + dtype;
        } catch (const nlohmann::json::exception&) {
          m.openable = false;
          m.type = "config.json is not JSON";
        }
        out.push_back(std::move(m));
      } else if (ggufs.size() == 1) {
        m.type = gguf_type(ggufs[0].string(), &m.openable);
        out.push_back(std::move(m));
      } else if (ggufs.empty()) {
        m.openable = false;
        m.type = "no config.json or .gguf file";
        out.push_back(std::move(m));
      } else {
        for (const fs::path& g : ggufs) {  // one entry per quantization: ORG/NAME/FILE.gguf
          if (out.size() >= limit) return;
          CachedModel f{name + "/" + g.filename().string(), "Hugging Face", g.string(), file_bytes(g), "", true};
          f.type = gguf_type(g.string(), &f.openable);
          out.push_back(std::move(f));
        }
      }
    }
  }
}

void list_ollama(std::vector<CachedModel>& out, size_t limit) {
  const fs::path library = ollama_root() / "manifests" / "registry.ollama.ai" / "library";
  std::error_code ec;
  std::vector<std::string> names;
  for (fs::directory_iterator it(library, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string model = it->path().filename().string();
    if (!plain_part(model)) continue;
    std::error_code ec2;
    for (fs::directory_iterator t(it->path(), ec2), tend; !ec2 && t != tend; t.increment(ec2))
      if (plain_part(t->path().filename().string())) names.push_back(model + ":" + t->path().filename().string());
  }
  std::sort(names.begin(), names.end());
  for (const std::string& name : names) {
    if (out.size() >= limit) return;
    CachedModel m{name, "Ollama", "", 0, "", true};
    Result<std::string> blob = resolve_cached_model(name);
    if (blob) {
      m.path = *blob;
      m.bytes = file_bytes(*blob);
      m.type = gguf_type(*blob, &m.openable);
    } else {
      m.openable = false;
      m.type = blob.error().message;
    }
    out.push_back(std::move(m));
  }
}

void list_lmstudio(std::vector<CachedModel>& out, size_t limit) {
  std::error_code ec;
  for (const std::string& root : lmstudio_model_dirs()) {
    std::vector<CachedModel> here;
    for (fs::directory_iterator p(root, ec), pend; !ec && p != pend; p.increment(ec)) {
      const std::string publisher = p->path().filename().string();
      if (!plain_part(publisher)) continue;
      std::error_code ec2;
      for (fs::directory_iterator r(p->path(), ec2), rend; !ec2 && r != rend; r.increment(ec2)) {
        const std::string repo = r->path().filename().string();
        if (!plain_part(repo)) continue;
        for (const fs::path& g : gguf_files_in(r->path())) {
          const std::string file = g.filename().string();
          if (!plain_part(file)) continue;
          const std::string name = publisher + "/" + repo + "/" + file;
          const bool listed = std::any_of(out.begin(), out.end(), [&](const CachedModel& m) { return m.name == name; });  // the first folder's is opened
          if (!listed) here.push_back(CachedModel{name, "LM Studio", g.string(), file_bytes(g), "", true});
        }
      }
    }
    ec.clear();
    std::sort(here.begin(), here.end(), [](const CachedModel& a, const CachedModel& b) { return a.name < b.name; });
    for (CachedModel& m : here) {
      if (out.size() >= limit) return;
      m.type = gguf_type(m.path, &m.openable);
      out.push_back(std::move(m));
    }
  }
}
}  // namespace

std::vector<CachedModel> list_cached_models(size_t limit) {
  std::vector<CachedModel> out;
  list_hf(out, limit);
  list_ollama(out, limit);
  list_lmstudio(out, limit);
  return out;
}

}  // namespace headmap
