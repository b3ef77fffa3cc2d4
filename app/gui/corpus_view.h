// corpus_view.h: Contributions > Corpus on the plain state (issue 39, point 4): which file the
// view searches, the worker's answer adopted, the selected head's hits derived from the index
// (with the head's map on each hit's line), and the view's exports. No GL and no Dear ImGui:
// panels/panel_corpus.cpp draws it, App::sync_corpus (app_menu.cpp) runs the worker
// (workers/corpus_worker.h).
//
// k = hits shown, len = a hit line's tokens
#pragma once
#include <string>

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

// The shown outcome's hits for the selected head (clamped to the index's maps) and s.corpus.top,
// each with the head's (len, len) map on its line: computed when one of them changes (the
// maps by one forward pass of the k lines), else the last frame's.
const CorpusState::Derived& corpus_derived(AppState& s);

// The view's export as JSON: {"corpus": the file, "model", "corpus_search": views_json.h's
// corpus_search_json}, whose "corpus_search" equals headmap-cli --corpus's for the same file,
// model, head and top.
Result<std::string> corpus_document(AppState& s);
// Hit `hit`'s line as a figure: the head's map over the line's tokens, the query -> key pair
// named in the subtitle (PNG or SVG).
Result<Figure> corpus_figure(AppState& s, int hit = 0);

}  // namespace headmap
