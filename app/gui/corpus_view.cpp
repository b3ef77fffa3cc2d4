// corpus_view.cpp: see corpus_view.h.
//
// k = hits shown, T = the longest hit line in tokens, len = a hit line's tokens
#include "app/gui/corpus_view.h"

#include <algorithm>
#include <cstdio>

#include "app/common/assets.h"
#include "app/common/print_message.h"
#include "app/common/token_labels.h"
#include "core/io/views_json.h"
#include "core/model/source_label.h"

namespace headmap {

std::string shipped_corpus_path() { return asset_path("corpus/grammar-v1.txt"); }

std::string corpus_source_path(const AppState& s) { return s.corpus.source == 0 ? shipped_corpus_path() : s.corpus.file; }

void set_corpus_stat(AppState& s, CorpusStat stat) {
  CorpusState& c = s.corpus;
  c.stat = stat;
  if (c.shown && c.shown->job.stat != stat && c.running.empty() && c.search_request.empty()) c.search_request = c.shown->job.path;
}

void adopt_corpus_outcome(AppState& s, CorpusOutcome o) {
  CorpusState& c = s.corpus;
  c.running.clear();
  if (o.cancelled) {
    c.note = "Cancelled: " + std::string(c.shown ? "the results below are the previous search's." : "nothing was searched.");
    return;
  }
  if (!o.error.empty()) {
    c.error = o.error;
    print_message("headmap", o.error);
    return;
  }
  char took[64];
  std::snprintf(took, sizeof took, "%d lines in %.1f s", o.index ? o.index->lines : 0, o.seconds);
  c.note = std::string(took) + (o.cache_note.empty() ? "" : "; " + o.cache_note);
  c.error.clear();
  c.shown = std::make_shared<const CorpusOutcome>(std::move(o));
}

const CorpusState::Derived& corpus_derived(AppState& s) {
  CorpusState& c = s.corpus;
  CorpusState::Derived& d = c.derived;
  const CorpusOutcome* o = c.shown.get();
  if (!o || !o->index || !o->lines || !o->job.weights) {
    d = CorpusState::Derived{};
    return d;
  }
  const CorpusIndex& ix = *o->index;
  const int layer = std::clamp(s.view.layer, 0, std::max(0, ix.L - 1)), head = std::clamp(s.view.head, 0, std::max(0, ix.Hw - 1));
  const int top = std::clamp(c.top, 1, std::min(kCorpusIndexTop, ix.top));
  if (d.of.get() == o && d.layer == layer && d.head == head && d.top == top) return d;
  d = CorpusState::Derived{};
  d.of = c.shown;
  d.layer = layer;
  d.head = head;
  d.top = top;
  const ModelWeights& w = *o->job.weights;
  const ModelConfig& cfg = o->job.cfg;
  Result<CorpusSearch> cs = corpus_search_in(ix, w, cfg, *o->lines, layer, head, top);
  if (!cs) {
    d.error = cs.error().message;
    return d;
  }
  d.search = std::move(cs).value();
  std::vector<std::string> lines;  // (k) the hits' lines, run once for their maps
  for (const CorpusHit& h : d.search->hits) lines.push_back((*o->lines)[static_cast<size_t>(h.line)]);
  if (lines.empty()) return d;
  const Batch batch = make_batch(lines, cfg, w);
  ForwardOptions fo;
  fo.skip_final_mlp = true;
  Result<ForwardOutput> out = batch.B() == static_cast<int>(lines.size()) ? forward(w, cfg, batch, fo) : Result<ForwardOutput>(Error{ErrorKind::InvalidArgument, "A hit's line has no tokens."});
  if (!out) {
    d.error = out.error().message;
    return d;
  }
  for (int b = 0; b < batch.B(); ++b) {
    const int len = batch.lengths[static_cast<size_t>(b)], T = out->T;
    const float* m = out->weights(layer, b, head);  // (T, T)
    std::vector<float> map(static_cast<size_t>(len) * len);
    for (int t = 0; t < len; ++t) std::copy_n(m + static_cast<size_t>(t) * T, len, map.begin() + static_cast<std::ptrdiff_t>(t) * len);
    d.maps.push_back(std::move(map));
    d.tokens.push_back(token_labels(batch.sentences[static_cast<size_t>(b)].tokens));
  }
  return d;
}

namespace {
Error nothing_searched() { return Error{ErrorKind::InvalidArgument, "Nothing to export: open Contributions > Corpus and search a corpus."}; }
}  // namespace

Result<std::string> corpus_document(AppState& s) {
  const CorpusState::Derived& d = corpus_derived(s);
  if (!d.of || !d.search) return nothing_searched();
  nlohmann::json doc;
  doc["corpus"] = d.of->job.path;
  doc["model"] = describe_source(*d.of->job.weights, d.of->job.cfg);
  doc["corpus_search"] = corpus_search_json(*d.search, *d.of->lines, *d.of->job.weights);
  return doc.dump(2) + "\n";
}

Result<Figure> corpus_figure(AppState& s, int hit) {
  const CorpusState::Derived& d = corpus_derived(s);
  if (!d.of || !d.search) return nothing_searched();
  if (hit < 0 || hit >= static_cast<int>(d.maps.size())) return Error{ErrorKind::InvalidArgument, "No such example: the search found " + std::to_string(d.maps.size()) + "."};
  const CorpusHit& h = d.search->hits[static_cast<size_t>(hit)];
  const std::vector<std::string>& tok = d.tokens[static_cast<size_t>(hit)];
  Figure fig;
  char title[160];
  std::snprintf(title, sizeof title, "Head %d.%d, example %d of %zu: line %d of %s", d.layer, d.head, hit + 1, d.search->hits.size(), h.line + 1,
                d.of->job.label.c_str());
  fig.title = title;
  char sub[256];
  std::snprintf(sub, sizeof sub, "query %d \"%s\" -> key %d \"%s\": %s %.4g (weight %.4f), the head's largest past the first token over %d lines; %s",
                h.query, tok[static_cast<size_t>(h.query)].c_str(), h.key, tok[static_cast<size_t>(h.key)].c_str(), corpus_stat_label(d.search->stat), h.score,
                h.weight, d.search->lines,
                describe_source(*d.of->job.weights, d.of->job.cfg).c_str());
  fig.subtitle = sub;
  fig.tokens = tok;
  FigureMap m;
  m.weights = d.maps[static_cast<size_t>(hit)].data();  // (len, len)
  m.stride = static_cast<int>(tok.size());
  m.vmax = std::max(1e-6f, map_peak(m.weights, m.stride, m.stride, mask_kind(d.of->job.cfg)));
  fig.maps.push_back(m);
  fig.mask = mask_kind(d.of->job.cfg);
  fig.colormap = s.view.colormap;
  fig.caption = "attention weight (0 to the map's peak)";
  return fig;
}

}  // namespace headmap
