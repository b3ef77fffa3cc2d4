// corpus_view.h: Contributions > Corpus on the plain state (issue 39, point 4): which file the
// view searches, the worker's answer adopted, the selected head's hits derived from the index
// (the head's map on each hit's line from the corpus worker), and the view's exports. No GL and no Dear ImGui:
// panels/panel_corpus.cpp draws it, App::sync_corpus (app_menu.cpp) runs the worker
// (workers/corpus_worker.h).
//
// k = hits shown, len = a hit line's tokens
#pragma once
#include <functional>
#include <string>

#include "app/common/figure_sheet.h"
#include "app/common/heatmap_figure.h"
#include "app/gui/app_state.h"
#include "core/error.h"

namespace headmap {

// The shipped corpus in the data directory: assets/corpus/grammar-v1.txt.
std::string shipped_corpus_path();
// The file the view's source names: the shipped corpus, or the file chosen ("" when none is).
std::string corpus_source_path(const AppState& s);

// The statistic the examples are ranked by (the view's radio buttons, corpus_stat=): with a
// search shown under another statistic and none running, the same file is searched again
// (each statistic has its own index on disk, so going back reads it).
void set_corpus_stat(AppState& s, CorpusStat stat);

// The worker's answer: shown when the search succeeded; else its error (in the view and on
// the terminal) or "Cancelled", the outcome shown before staying.
void adopt_corpus_outcome(AppState& s, CorpusOutcome o);

// The shown outcome's hits for the selected head (clamped to the index's maps) and s.corpus.top:
// computed when one of them changes, else the last frame's. The head's (len, len) map on each
// hit's line needs a forward pass of the k lines: it is asked of the corpus worker
// (s.corpus.maps_request) and arrives through adopt_corpus_maps; until then maps_ready is false.
const CorpusState::Derived& corpus_derived(AppState& s);
// The maps of a job (one forward pass of its lines), on whichever thread calls it.
CorpusMaps corpus_hit_maps(const CorpusMapsJob& job, const std::function<bool()>& cancelled = {});
// The worker's maps: kept when they are the derived hits' (else a newer search's, dropped).
void adopt_corpus_maps(AppState& s, CorpusMaps m);

// The view's export as JSON: {"corpus": the file, "model", "corpus_search": views_json.h's
// corpus_search_json}, whose "corpus_search" equals headmap-cli --corpus's for the same file,
// model, head and top.
Result<std::string> corpus_document(AppState& s);
// Hit `hit`'s line as a figure: the head's map over the line's tokens, the query -> key pair
// named in the subtitle (PNG or SVG).
Result<Figure> corpus_figure(AppState& s, int hit = 0);
// The whole view as one page (figure_sheet.h): the title, the offset profile's bars, then
// every example's line and its map over that line's own tokens (corpus_figure).
Result<FigureSheet> corpus_sheet(AppState& s);
// The view's Export: the sheet as PNG or SVG for a .png or .svg name, else the JSON document.
Status export_corpus(AppState& s, const std::string& path);

}  // namespace headmap
