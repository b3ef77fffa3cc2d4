// corpus_cache.cpp: see corpus_cache.h.
//
// L = layers, Hw = heads in the maps, O = 2 len - 1 offsets, V = vocabulary, D = d_model
#include "core/io/corpus_cache.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "core/io/config_json.h"
#include "core/io/file_io.h"
#include "core/math/rng.h"

namespace headmap {

namespace {
constexpr char kIndexMagic[8] = {'H', 'M', 'C', 'I', 'X', '0', '0', '2'};

template <class T>
void put_index_value(std::string& out, T v) {
  out.append(reinterpret_cast<const char*>(&v), sizeof v);
}

// Reads fixed-size values from the bytes, never past their end (the sizes were checked first).
struct IndexReader {
  const std::string& b;
  size_t at = 0;
  template <class T>
  T get() {
    T v{};
    std::memcpy(&v, b.data() + at, sizeof v);
    at += sizeof v;
    return v;
  }
};

Error unusable_index(const std::string& why) { return Error{ErrorKind::BadFormat, "The corpus index is not usable: " + why + "."}; }
}  // namespace

namespace {
// h with n floats folded in.
uint64_t fold_floats(uint64_t h, const float* p, size_t n) {
  return combine(h, hash_bytes(std::string_view(reinterpret_cast<const char*>(p), n * sizeof(float))));
}
template <class M>
uint64_t fold_dense(uint64_t h, const M& m) {  // a RowVec or MatR, with its shape
  const int64_t shape[2] = {static_cast<int64_t>(m.rows()), static_cast<int64_t>(m.cols())};
  h = combine(h, hash_bytes(std::string_view(reinterpret_cast<const char*>(shape), sizeof shape)));
  return fold_floats(h, m.data(), static_cast<size_t>(m.size()));
}
// Every value of a packed matrix (whatever it is stored in), 256 columns unpacked at a time:
// (K, 256) floats at most beside the weights.
uint64_t fold_packed(uint64_t h, const PackedMatrix& m) {
  const int64_t shape[2] = {static_cast<int64_t>(m.rows()), static_cast<int64_t>(m.cols())};
  h = combine(h, hash_bytes(std::string_view(reinterpret_cast<const char*>(shape), sizeof shape)));
  if (m.rows() == 0) return h;
  for (Eigen::Index c0 = 0; c0 < m.cols(); c0 += 256) {
    const PackedMatrix::Plain part = m.middle_cols(c0, std::min<Eigen::Index>(256, m.cols() - c0));  // (K, <= 256)
    h = fold_floats(h, part.data(), static_cast<size_t>(part.size()));
  }
  return h;
}
}  // namespace

uint64_t corpus_index_key(const ModelWeights& w, const ModelConfig& cfg, const std::string& corpus_bytes, CorpusStat stat) {
  uint64_t h = hash_bytes(config_json(cfg), 0x636f72707573ull);
  h = combine(h, hash_bytes(corpus_stat_name(stat)));  // each statistic its own index
  const int64_t sizes[] = {w.d_model, w.context, w.num_layers(), w.vocab_size(), static_cast<int64_t>(w.source.kind), static_cast<int64_t>(w.source.seed)};
  h = combine(h, hash_bytes(std::string_view(reinterpret_cast<const char*>(sizes), sizeof sizes)));
  std::vector<float> row(static_cast<size_t>(w.d_model));
  for (int id = 0; id < w.vocab_size(); ++id) {  // every embedding row
    w.embedding_row(id, row.data());
    h = fold_floats(h, row.data(), row.size());
  }
  for (const auto* v : {&w.pos_emb, &w.type_emb}) h = fold_dense(h, *v);
  for (const auto* v : {&w.emb_ln_g, &w.emb_ln_b, &w.lnf_g, &w.lnf_b}) h = fold_dense(h, *v);
  // Every value of every layer: a map at layer l depends on all of layers 0..l (the unembedding
  // does not enter the maps, so it is left out).
  for (const LayerWeights& lw : w.layers) {
    for (const auto* m : {&lw.w_q, &lw.w_k, &lw.w_v}) h = fold_dense(h, *m);
    for (const auto* m : {&lw.w_qkv, &lw.w_o, &lw.w_fc, &lw.w_proj, &lw.w_gate}) h = fold_packed(h, *m);
    for (const auto* v : {&lw.ln1_g, &lw.ln1_b, &lw.b_q, &lw.b_k, &lw.b_v, &lw.b_o, &lw.ln2_g, &lw.ln2_b, &lw.b_fc, &lw.b_proj, &lw.q_norm,
                          &lw.k_norm, &lw.post_attn_g, &lw.post_mlp_g, &lw.b_qkv})
      h = fold_dense(h, *v);
  }
  return combine(h, hash_bytes(corpus_bytes));
}

std::string corpus_cache_dir() {
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) return std::string(x) + "/headmap";
  if (const char* h = std::getenv("HOME"); h && *h) return std::string(h) + "/.cache/headmap";
  return "";
}

std::string corpus_cache_path(const std::string& dir, uint64_t key) {
  char name[48];
  std::snprintf(name, sizeof name, "corpus-%016llx.index", static_cast<unsigned long long>(key));
  return dir + "/" + name;
}

std::string corpus_index_bytes(const CorpusIndex& ix, uint64_t key) {
  std::string out(kIndexMagic, sizeof kIndexMagic);
  put_index_value<uint64_t>(out, key);
  for (int v : {static_cast<int>(ix.stat), ix.L, ix.Hw, ix.top, ix.lines, ix.rows, ix.len}) put_index_value<int32_t>(out, v);
  for (const std::vector<CorpusHit>& v : ix.hits) put_index_value<int32_t>(out, static_cast<int32_t>(v.size()));
  for (const std::vector<CorpusHit>& v : ix.hits)
    for (const CorpusHit& h : v) {
      put_index_value<int32_t>(out, h.line);
      put_index_value<int32_t>(out, h.query);
      put_index_value<int32_t>(out, h.key);
      put_index_value<float>(out, h.weight);
      put_index_value<float>(out, h.score);
    }
  for (double s : ix.offset_sum) put_index_value<double>(out, s);
  for (int64_t r : ix.rows_at) put_index_value<int64_t>(out, r);
  put_index_value<uint64_t>(out, hash_bytes(out));  // the checksum: a changed or cut byte anywhere is noticed
  return out;
}

Result<CorpusIndex> parse_corpus_index(const std::string& bytes, uint64_t key, int lines, int L, int Hw) {
  constexpr size_t kHeader = sizeof kIndexMagic + 8 + 7 * 4;
  if (bytes.size() < kHeader + 8) return unusable_index("shorter than its header");
  if (std::memcmp(bytes.data(), kIndexMagic, sizeof kIndexMagic) != 0) return unusable_index("not a headmap corpus index");
  uint64_t sum = 0;
  std::memcpy(&sum, bytes.data() + bytes.size() - 8, 8);
  if (sum != hash_bytes(std::string_view(bytes.data(), bytes.size() - 8))) return unusable_index("its checksum does not match (a changed or cut file)");
  IndexReader r{bytes, sizeof kIndexMagic};
  if (r.get<uint64_t>() != key) return unusable_index("made for another model or file");
  CorpusIndex ix;
  const int32_t stat = r.get<int32_t>();
  if (stat < 0 || stat >= kCorpusStats) return unusable_index("its statistic is unknown");
  ix.stat = static_cast<CorpusStat>(stat);
  ix.L = r.get<int32_t>();
  ix.Hw = r.get<int32_t>();
  ix.top = r.get<int32_t>();
  ix.lines = r.get<int32_t>();
  ix.rows = r.get<int32_t>();
  ix.len = r.get<int32_t>();
  if (ix.L != L || ix.Hw != Hw) return unusable_index("made for maps of another shape");
  if (ix.top < 1 || ix.top > kCorpusMaxTop) return unusable_index("its number of examples is out of range");
  if (ix.lines < 0 || ix.lines > lines || ix.rows < 0 || ix.len < 0 || ix.len > static_cast<int>(kCorpusMaxBytes) + 2) return unusable_index("its counts are out of range");
  const uint64_t heads = static_cast<uint64_t>(L) * static_cast<uint64_t>(Hw), O = ix.len > 0 ? 2 * static_cast<uint64_t>(ix.len) - 1 : 0;
  if (bytes.size() < kHeader + heads * 4 + 8) return unusable_index("shorter than its hit counts");
  std::vector<int32_t> counts(heads);
  uint64_t hits = 0;
  for (int32_t& c : counts) {
    c = r.get<int32_t>();
    if (c < 0 || c > ix.top) return unusable_index("a head's hit count is out of range");
    hits += static_cast<uint64_t>(c);
  }
  if (bytes.size() != kHeader + heads * 4 + hits * 20 + heads * O * 8 + O * 8 + 8) return unusable_index("its length does not match its sizes");
  ix.hits.resize(heads);
  for (uint64_t h = 0; h < heads; ++h) {
    std::vector<CorpusHit>& v = ix.hits[h];
    v.resize(static_cast<size_t>(counts[h]));
    for (CorpusHit& hit : v) {
      hit.line = r.get<int32_t>();
      hit.query = r.get<int32_t>();
      hit.key = r.get<int32_t>();
      hit.weight = r.get<float>();
      hit.score = r.get<float>();
      if (hit.line < 0 || hit.line >= lines || hit.query < 1 || hit.key < 1 || hit.query >= ix.len || hit.key >= ix.len)
        return unusable_index("a hit's line or token is out of range");
      if (!std::isfinite(hit.weight) || hit.weight < 0 || hit.weight > 1.001f) return unusable_index("a hit's weight is not a probability");
      if (!std::isfinite(hit.score) || hit.score < 0 || (ix.stat == CorpusStat::Weight && hit.score != hit.weight))
        return unusable_index("a hit's statistic is not its weight or a finite norm");
      if (&hit != &v.front() && (&hit)[-1].score < hit.score) return unusable_index("a head's hits are out of order");
    }
  }
  ix.offset_sum.resize(heads * O);
  for (double& s : ix.offset_sum) {
    s = r.get<double>();
    if (!std::isfinite(s) || s < 0) return unusable_index("an offset sum is not a finite weight");
  }
  ix.rows_at.resize(O);
  for (int64_t& n : ix.rows_at) {
    n = r.get<int64_t>();
    if (n < 0 || n > ix.rows) return unusable_index("a row count is out of range");
  }
  return ix;
}

Result<CorpusIndex> read_corpus_cache(const std::string& dir, uint64_t key, int lines, int L, int Hw) {
  Result<std::string> bytes = read_file(corpus_cache_path(dir, key), kCorpusCacheMaxBytes);
  if (!bytes) return bytes.error();
  return parse_corpus_index(*bytes, key, lines, L, Hw);
}

Status write_corpus_cache(const std::string& dir, uint64_t key, const CorpusIndex& ix) {
  const std::string bytes = corpus_index_bytes(ix, key);
  if (bytes.size() > kCorpusCacheMaxBytes) return Error{ErrorKind::InvalidArgument, "The corpus index is too large to keep on disk."};
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return Error{ErrorKind::Io, "Cannot create " + dir + ": " + ec.message() + "."};
  return write_file_atomic(corpus_cache_path(dir, key), bytes);
}

}  // namespace headmap
