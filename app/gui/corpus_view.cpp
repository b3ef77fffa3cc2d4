// corpus_view.cpp: see corpus_view.h.
//
// k = hits shown, T = the longest hit line in tokens, len = a hit line's tokens
#include "app/gui/corpus_view.h"

#include <algorithm>
#include <cstdio>

#include "app/common/assets.h"
#include "app/common/figure_sheet.h"
#include "app/common/print_message.h"
#include "app/common/token_labels.h"
#include "app/gui/dialogs.h"
#include "core/io/file_io.h"
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
  Result<CorpusSearch> cs = corpus_search_in(ix, *o->job.weights, o->job.cfg, *o->lines, layer, head, top);
  if (!cs) {
    d.error = cs.error().message;
    return d;
  }
  d.search = std::move(cs).value();
  CorpusMapsJob job{d.of, layer, head, top, {}};  // the maps: on the corpus worker
  for (const CorpusHit& h : d.search->hits) job.lines.push_back((*o->lines)[static_cast<size_t>(h.line)]);
  if (job.lines.empty()) d.maps_ready = true;
  else c.maps_request = std::move(job);
  return d;
}

CorpusMaps corpus_hit_maps(const CorpusMapsJob& job, const std::function<bool()>& cancelled) {
  CorpusMaps r{job.of, job.layer, job.head, job.top, {}, {}, {}};
  if (!job.of || !job.of->job.weights || job.lines.empty()) return r;
  const ModelWeights& w = *job.of->job.weights;
  const ModelConfig& cfg = job.of->job.cfg;
  const Batch batch = make_batch(job.lines, cfg, w);
  ForwardOptions fo;
  fo.skip_final_mlp = true;
  fo.cancelled = cancelled;
  Result<ForwardOutput> out = batch.B() == static_cast<int>(job.lines.size()) ? forward(w, cfg, batch, fo)
                                                                             : Result<ForwardOutput>(Error{ErrorKind::InvalidArgument, "A hit's line has no tokens."});
  if (!out) {
    r.error = out.error().message;
    return r;
  }
  for (int b = 0; b < batch.B(); ++b) {
    const int len = batch.lengths[static_cast<size_t>(b)], T = out->T;
    const float* m = out->weights(job.layer, b, job.head);  // (T, T)
    std::vector<float> map(static_cast<size_t>(len) * len);
    for (int t = 0; t < len; ++t) std::copy_n(m + static_cast<size_t>(t) * T, len, map.begin() + static_cast<std::ptrdiff_t>(t) * len);
    r.maps.push_back(std::move(map));
    r.tokens.push_back(token_labels(batch.sentences[static_cast<size_t>(b)].tokens));
  }
  return r;
}

void adopt_corpus_maps(AppState& s, CorpusMaps m) {
  CorpusState::Derived& d = s.corpus.derived;
  if (m.of != d.of || m.layer != d.layer || m.head != d.head || m.top != d.top || d.maps_ready) return;  // another search's: dropped
  d.maps_ready = true;
  if (!m.error.empty()) {
    d.error = m.error;
    print_message("headmap", m.error);
    return;
  }
  d.maps = std::move(m.maps);
  d.tokens = std::move(m.tokens);
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

namespace {
// The derived hits with their maps: an export asked for before the worker answered computes
// them here (the person asked for the file, and waits for it).
const CorpusState::Derived& derived_with_maps(AppState& s) {
  const CorpusState::Derived& d = corpus_derived(s);
  if (d.search && !d.maps_ready && s.corpus.maps_request) {
    adopt_corpus_maps(s, corpus_hit_maps(*s.corpus.maps_request));
    s.corpus.maps_request.reset();
  }
  return d;
}
}  // namespace

Result<Figure> corpus_figure(AppState& s, int hit) {
  const CorpusState::Derived& d = derived_with_maps(s);
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
  char weight[48] = "";  // the weight itself, where the statistic is another number
  if (d.search->stat != CorpusStat::Weight) std::snprintf(weight, sizeof weight, " (weight %.4f)", h.weight);
  std::snprintf(sub, sizeof sub, "query %d \"%s\" -> key %d \"%s\": %s %.4g%s, the head's largest past the first token over %d lines; %s",
                h.query, tok[static_cast<size_t>(h.query)].c_str(), h.key, tok[static_cast<size_t>(h.key)].c_str(), corpus_stat_label(d.search->stat), h.score,
                weight, d.search->lines,
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

Result<FigureSheet> corpus_sheet(AppState& s) {
  const CorpusState::Derived& d = derived_with_maps(s);
  if (!d.of || !d.search) return nothing_searched();
  if (!d.error.empty()) return Error{ErrorKind::InvalidArgument, d.error};
  const CorpusSearch& cs = *d.search;
  const CorpusOutcome& o = *d.of;
  FigureSheet sheet;
  char title[320];
  std::snprintf(title, sizeof title, "Head %d.%d over %d lines (%d query rows) of %s: its largest %ss past the first token", d.layer, d.head, cs.lines,
                cs.rows, o.job.label.c_str(), corpus_stat_label(cs.stat));
  sheet.title = title;
  sheet.notes.push_back(describe_source(*o.job.weights, o.job.cfg) + "; " + std::to_string(cs.hits.size()) +
                        " examples, each the head's map on its own line (row = query, column = key), its pair named above the map.");
  const bool causal = mask_kind(o.job.cfg) == MaskKind::Causal;
  const int from = causal && cs.len > 0 ? cs.len - 1 : 0;  // a causal head puts nothing below distance 0
  sheet.bars.assign(cs.by_offset.begin() + from, cs.by_offset.end());
  char cap[200];
  std::snprintf(cap, sizeof cap, "The offset profile over the corpus: the head's mean weight at distance t - s, from %d (left) to %d (right).",
                from - cs.len + 1, cs.len - 1);
  sheet.bars_caption = cap;
  for (int i = 0; i < static_cast<int>(cs.hits.size()); ++i) {
    Result<Figure> fig = corpus_figure(s, i);
    if (!fig) return fig.error();
    const CorpusHit& h = cs.hits[static_cast<size_t>(i)];
    char head[64];
    std::snprintf(head, sizeof head, "%d.  line %d:", i + 1, h.line + 1);
    sheet.parts.push_back({{std::string(head) + " " + (*o.lines)[static_cast<size_t>(h.line)]}, std::move(fig).value()});
  }
  return sheet;
}

Status export_corpus(AppState& s, const std::string& path) {
  if (is_svg_path(path) || is_png_path(path)) {
    Result<FigureSheet> sheet = corpus_sheet(s);
    if (!sheet) return sheet.error();
    return is_svg_path(path) ? write_sheet_svg(path, *sheet) : write_sheet_png(path, *sheet);
  }
  Result<std::string> doc = corpus_document(s);
  return !doc ? Status(doc.error()) : write_file_atomic(path, *doc);
}

}  // namespace headmap
