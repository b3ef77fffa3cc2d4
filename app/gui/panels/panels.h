// panels.h: one function per panel, each drawing from and writing to the plain AppState.
// Each lives in its own file, panel_<name>.cpp.
#pragma once
#include "app/gui/app_state.h"
#include "app/gui/render/heatmap_renderer.h"

namespace headmap {

struct Presets;  // assets/presets.json, see presets.h

void draw_sentence(AppState& s, const Presets& presets);  // title, presets, text box
void draw_sentence_tokens(AppState& s);                   // the result's token chips, under the text box
void draw_controls(AppState& s);                           // sliders, switches, pitfalls
void draw_heads(AppState& s, HeatmapRenderer& r);          // one heatmap per head
void draw_focus(AppState& s, HeatmapRenderer& r);          // one head, step by step
void draw_passport(AppState& s, bool full);                // the shape passport (full: every column)
void draw_model(AppState& s, HeatmapRenderer& r);          // layers x heads thumbnails
void draw_training(AppState& s);                           // train, compare, loss curves
void draw_predictions(AppState& s);                        // top-k next tokens, each sentence's loss
void draw_contrib(AppState& s);                            // the clicked prediction's attribution to every head
void draw_compare(AppState& s, HeatmapRenderer& r);        // a pitfall beside the correct model
// The Contributions tab: rollout, patching, detectors; with_model: the model view as a first sub-tab (narrow layouts)
void draw_contributions(AppState& s, HeatmapRenderer& r, bool with_model);
void draw_rollout(AppState& s, HeatmapRenderer& r);        // attention rollout as a (T, T) map
void draw_lens(AppState& s);                                // the logit lens: layers x positions, each cell a prediction
void draw_overview(AppState& s);                            // every head at once: a statistic, a ranking, a layout by likeness
void draw_circuits(AppState& s);                            // the selected head's OV and QK circuits, composition into it
void draw_corpus(AppState& s);                              // a head's strongest weights over a corpus file, its offset profile there
void draw_offsets(AppState& s);                             // each head's weight by distance, a rotary head's frequencies
void draw_patching(AppState& s);                           // activation patching: a corrupted sentence, a layers x heads grid
void draw_detectors(AppState& s);                          // head detector scores, a threshold and a painted pattern
// The lesson player: the step's text, Back, Next, Reveal; in a column of its own (a small
// screen, the sentence column a tab away), the newest status lines under the text too.
void draw_lesson(AppState& s, bool status_lines = false);
// The question before a model path a file names is read (AppState::ask_open_model); opened
// only when `may_open` (no other dialog, not an export's capture frame).
void draw_ask_open_model(AppState& s, bool may_open);
float lesson_panel_height(const AppState& s, float width); // the player's height at this width (0: no lesson open)

}  // namespace headmap
