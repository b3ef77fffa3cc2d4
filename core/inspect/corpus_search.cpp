// corpus_search.cpp: see corpus_search.h.
//
// B = lines in a chunk, T = the chunk's longest line in tokens, Hw = heads in the maps
#include "core/inspect/corpus_search.h"

#include <algorithm>

#include "core/inspect/contrib.h"
#include "core/inspect/offset_profile.h"
#include "core/io/file_io.h"
#include "core/text/utf8.h"

namespace headmap {

Result<std::vector<std::string>> read_corpus(const std::string& path) {
  Result<std::string> text = read_file(path, kCorpusMaxBytes);
  if (!text) return text.error();
  return corpus_lines(*text, path);
}

Result<std::vector<std::string>> corpus_lines(const std::string& bytes, const std::string& path) {
  const std::string* text = &bytes;
  if (bytes.size() > kCorpusMaxBytes)
    return Error{ErrorKind::BadFormat, path + " is larger than " + std::to_string(kCorpusMaxBytes >> 20) + " MiB: search a part of it."};
  const DecodedText d = decode_utf8(*text);
  if (d.replaced > 0) {
    size_t at = 0;  // the first byte that is not part of valid UTF-8: where sanitize_utf8 first differs
    const std::string clean = sanitize_utf8(*text);
    while (at < text->size() && at < clean.size() && (*text)[at] == clean[at]) ++at;
    const size_t line = static_cast<size_t>(std::count(text->begin(), text->begin() + static_cast<std::ptrdiff_t>(at), '\n')) + 1;
    return Error{ErrorKind::BadFormat, path + " is not UTF-8 text: " + std::to_string(d.replaced) + " invalid byte sequences, the first at byte " +
                                           std::to_string(at) + " (line " + std::to_string(line) + "). A corpus is a UTF-8 text file, one context a line."};
  }
  std::vector<std::string> lines;
  size_t start = 0;
  while (start <= text->size()) {
    size_t end = text->find('\n', start);
    if (end == std::string::npos) end = text->size();
    std::string line = text->substr(start, end - start);
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.find_first_not_of(" \t") != std::string::npos) {
      if (static_cast<int>(lines.size()) >= kCorpusMaxLines)
        return Error{ErrorKind::BadFormat, path + " has more than " + std::to_string(kCorpusMaxLines) + " lines: search a part of it."};
      lines.push_back(std::move(line));
    }
    start = end + 1;
  }
  return lines;
}

const char* corpus_stat_name(CorpusStat s) { return s == CorpusStat::ValueNorm ? "value_norm" : "weight"; }
const char* corpus_stat_label(CorpusStat s) { return s == CorpusStat::ValueNorm ? "value-weighted norm" : "attention weight"; }

Result<CorpusStat> parse_corpus_stat(const std::string& name) {
  for (int i = 0; i < kCorpusStats; ++i)
    if (name == corpus_stat_name(static_cast<CorpusStat>(i))) return static_cast<CorpusStat>(i);
  return Error{ErrorKind::InvalidArgument, "The corpus statistic is weight or value_norm, got \"" + name + "\"."};
}

namespace {
Status check_top(int k, int most) {
  if (k < 1 || k > most) return Error{ErrorKind::InvalidArgument, "The number of examples is 1 to " + std::to_string(most) + ", got " + std::to_string(k) + "."};
  return {};
}
// Strongest first; ties: the earlier line, then the earlier row.
bool stronger(const CorpusHit& a, const CorpusHit& b) {
  return a.score > b.score || (a.score == b.score && (a.line < b.line || (a.line == b.line && a.query < b.query)));
}
// Keeps the k strongest of v, sorted when `sort`.
void keep_strongest(std::vector<CorpusHit>& v, size_t k, bool sort) {
  const size_t n = std::min(v.size(), k);
  if (sort) std::partial_sort(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(n), v.end(), stronger);
  else if (v.size() > k) std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(k), v.end(), stronger);
  v.resize(n);
}
// Widens the index's offsets to lines of `len` tokens (offset d keeps its meaning: index d + len - 1).
void widen_offsets(CorpusIndex& ix, int len) {
  if (len <= ix.len) return;
  const int O0 = ix.len > 0 ? 2 * ix.len - 1 : 0, O = 2 * len - 1, shift = len - ix.len;
  const size_t heads = static_cast<size_t>(ix.L) * ix.Hw;
  std::vector<double> sum(heads * O, 0.0);
  std::vector<int64_t> rows(static_cast<size_t>(O), 0);
  for (int i = 0; i < O0; ++i) {
    rows[static_cast<size_t>(i + shift)] = ix.rows_at[static_cast<size_t>(i)];
    for (size_t h = 0; h < heads; ++h) sum[h * O + i + shift] = ix.offset_sum[h * O0 + i];
  }
  ix.len = len;
  ix.offset_sum = std::move(sum);
  ix.rows_at = std::move(rows);
}
}  // namespace

Result<CorpusIndex> corpus_index(const ModelWeights& w, const ModelConfig& cfg, const std::vector<std::string>& lines, int top, CorpusStat stat,
                                 int chunk, const std::function<bool()>& cancelled, const CorpusProgress& progress) {
  if (Status st = check_top(top, kCorpusMaxTop); !st) return st.error();
  const bool by_value = stat == CorpusStat::ValueNorm;
  if (by_value)
    if (Status st = contrib_supported(w, cfg); !st) return st.error();
  CorpusIndex ix;
  ix.stat = stat;
  ix.top = top;
  std::vector<std::vector<CorpusHit>> all;  // (L*Hw) per query row its best key, pruned to the top as chunks arrive
  ForwardOptions fo;
  fo.skip_final_mlp = true;  // the maps alone
  fo.keep_layer_io = by_value;  // the attention's input, whose values the norms are of
  fo.cancelled = cancelled;
  chunk = std::max(1, chunk);
  // Longrope (Phi-3) takes its long frequencies once a text passes the original context, so a
  // line padded to a longer line's length would get other maps than the line alone: each line
  // runs alone there, as it would be typed (the hits' maps are recomputed from the line alone).
  if (!w.arch.rope_long_factors.empty()) chunk = 1;
  const bool causal = mask_kind(cfg) == MaskKind::Causal;
  for (size_t c0 = 0; c0 < lines.size(); c0 += static_cast<size_t>(chunk)) {
    if (cancelled && cancelled()) return Error{ErrorKind::Cancelled, "The corpus search was cancelled."};
    const size_t c1 = std::min(lines.size(), c0 + static_cast<size_t>(chunk));
    const std::vector<std::string> part(lines.begin() + static_cast<std::ptrdiff_t>(c0), lines.begin() + static_cast<std::ptrdiff_t>(c1));
    if (Status st = check_batch_memory(part, cfg); !st) return st.error();
    const Batch batch = make_batch(part, cfg, w);
    if (!batch.empty()) {
      Result<ForwardOutput> out = forward(w, cfg, batch, fo);
      if (!out) return out.error();
      if (all.empty()) {
        ix.L = out->L;
        ix.Hw = out->Hw;
        all.resize(static_cast<size_t>(ix.L) * ix.Hw);
      }
      std::vector<MatR> norms;  // value norm only: (L) x (Hw, B*T), ||f(x)|| of every head at every row of the chunk
      if (by_value)
        for (int l = 0; l < ix.L; ++l) norms.push_back(head_value_norms(w, cfg, out->attn_in[static_cast<size_t>(l)], l));
      for (int b = 0; b < batch.B(); ++b) {
        const int len = batch.lengths[static_cast<size_t>(b)];
        const int line = static_cast<int>(c0) + batch.source_line[static_cast<size_t>(b)];
        // The offset profile by its one definition (offset_profile.h), each line's rows summed.
        const OffsetProfile p = offset_profile(w, cfg, *out, batch, b);
        widen_offsets(ix, len);
        const int O = 2 * ix.len - 1, shift = ix.len - len;
        for (int i = 0; i < p.offsets(); ++i) ix.rows_at[static_cast<size_t>(i + shift)] += p.rows_at[static_cast<size_t>(i)];
        for (int l = 0; l < ix.L; ++l)
          for (int h = 0; h < ix.Hw; ++h) {
            double* sum = ix.offset_sum.data() + (static_cast<size_t>(l) * ix.Hw + h) * O + shift;
            for (int i = 0; i < p.offsets(); ++i) sum[i] += static_cast<double>(p.at(l, h, i - len + 1)) * p.rows_at[static_cast<size_t>(i)];
            const float* m = out->weights(l, b, h);  // (T, T)
            std::vector<CorpusHit>& head_hits = all[static_cast<size_t>(l) * ix.Hw + h];
            const float* vn = by_value ? norms[static_cast<size_t>(l)].row(h).data() + static_cast<size_t>(b) * out->T : nullptr;  // (T) this line's norms
            for (int t = 1; t < len; ++t) {
              CorpusHit hit;
              hit.line = line;
              hit.query = t;
              hit.score = -1;
              for (int s = 1; s < (causal ? t + 1 : len); ++s) {
                const float a = m[static_cast<size_t>(t) * out->T + s];
                const float score = vn ? a * vn[s] : a;
                if (score > hit.score) hit.score = score, hit.weight = a, hit.key = s;
              }
              if (hit.score >= 0) head_hits.push_back(hit);
            }
          }
        ix.rows += std::max(0, len - 1);
        ix.lines += 1;
      }
      for (std::vector<CorpusHit>& v : all)  // keep memory bounded by the top kept
        if (v.size() > static_cast<size_t>(2 * top) + 256) keep_strongest(v, static_cast<size_t>(top), false);
    }
    if (progress) progress(static_cast<int>(c1), static_cast<int>(lines.size()));
  }
  for (std::vector<CorpusHit>& v : all) keep_strongest(v, static_cast<size_t>(top), true);
  ix.hits = std::move(all);
  return ix;
}

Result<CorpusSearch> corpus_search_in(const CorpusIndex& ix, const ModelWeights& w, const ModelConfig& cfg, const std::vector<std::string>& lines,
                                      int layer, int head, int k) {
  const int L = ix.L > 0 ? ix.L : cfg.num_layers, Hw = ix.Hw > 0 ? ix.Hw : cfg.num_heads;  // an empty corpus ran no pass
  if (layer < 0 || layer >= L) return Error{ErrorKind::InvalidArgument, "No layer " + std::to_string(layer) + ": the model has " + std::to_string(L) + "."};
  if (head < 0 || head >= Hw)
    return Error{ErrorKind::InvalidArgument, "No head " + std::to_string(head) + ": the maps have " + std::to_string(Hw) + " per layer."};
  if (Status st = check_top(k, ix.top); !st) return st.error();
  CorpusSearch cs;
  cs.stat = ix.stat;
  cs.layer = layer;
  cs.head = head;
  cs.lines = ix.lines;
  cs.rows = ix.rows;
  const size_t hh = static_cast<size_t>(layer) * ix.Hw + head;
  if (hh < ix.hits.size()) {
    const std::vector<CorpusHit>& v = ix.hits[hh];
    cs.hits.assign(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(std::min(v.size(), static_cast<size_t>(k))));
  }
  for (CorpusHit& h : cs.hits) {  // the hits' own tokens, for showing them; an index that does not fit its lines is refused
    if (h.line < 0 || h.line >= static_cast<int>(lines.size())) return Error{ErrorKind::BadFormat, "The corpus index names a line the file does not have."};
    const Batch one = make_batch({lines[static_cast<size_t>(h.line)]}, cfg, w);
    if (!one.empty())
      for (const Token& t : one.sentences[0].tokens) h.token_ids.push_back(t.id);
    if (h.key < 1 || h.query < 1 || h.query >= static_cast<int>(h.token_ids.size()) || h.key >= static_cast<int>(h.token_ids.size()))
      return Error{ErrorKind::BadFormat, "The corpus index names a token its line does not have."};
  }
  cs.len = ix.len;
  const int O = ix.len > 0 ? 2 * ix.len - 1 : 0;
  cs.rows_at = ix.rows_at;
  cs.by_offset.assign(static_cast<size_t>(O), 0.0f);
  if (ix.offset_sum.size() == (static_cast<size_t>(ix.L) * ix.Hw) * O && ix.rows_at.size() == static_cast<size_t>(O))
    for (int i = 0; i < O; ++i)
      if (ix.rows_at[static_cast<size_t>(i)] > 0)
        cs.by_offset[static_cast<size_t>(i)] = static_cast<float>(ix.offset_sum[hh * O + i] / static_cast<double>(ix.rows_at[static_cast<size_t>(i)]));
  return cs;
}

Result<CorpusSearch> corpus_search(const ModelWeights& w, const ModelConfig& cfg, const std::vector<std::string>& lines, int layer, int head,
                                   int k, CorpusStat stat, int chunk, const std::function<bool()>& cancelled, const CorpusProgress& progress) {
  if (Status st = check_top(k, kCorpusMaxTop); !st) return st.error();
  if (layer < 0 || layer >= cfg.num_layers)
    return Error{ErrorKind::InvalidArgument, "No layer " + std::to_string(layer) + ": the model has " + std::to_string(cfg.num_layers) + "."};
  Result<CorpusIndex> ix = corpus_index(w, cfg, lines, k, stat, chunk, cancelled, progress);
  if (!ix) return ix.error();
  return corpus_search_in(*ix, w, cfg, lines, layer, head, k);
}

}  // namespace headmap
