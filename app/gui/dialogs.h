// dialogs.h: the File menu's dialogs and what their OK button does.
//
// The actions run on the plain state alone, with no GL and no Dear ImGui, so they can be
// tested without a window. The dialog boxes themselves are drawn by App (app.cpp); the PNG
// exports read the frame, so App runs those as captures.
#pragma once
#include <string>

#include "app/common/heatmap_figure.h"
#include "app/gui/app_state.h"
#include "core/error.h"

namespace headmap {

enum class Dialog { None, OpenView, SaveView, ExportHeadsPng, ExportWindowPng, ExportNpy, ExportJson, Shortcuts, OpenCheckpoint,
                    SaveCheckpoint, OpenModel, ExportHeadPng, ExportHeadSvg, ExportHeadsSvg, OpenLesson, SaveLessonStep,
                    ExportLesson, ExportRollout, ExportLens, ExportOverview, ExportOffsets, ExportCircuits, OpenCorpus, ExportCorpus };

// The dialog's window title, e.g. "Open view".
const char* dialog_title(Dialog d);
// The path a dialog proposes when it opens, e.g. "view.json" ("" for Shortcuts).
const char* dialog_default_path(Dialog d);
// The name a dialog that writes proposes in `dir` (relative names resolve against it): its
// default, or, when that file or directory is already there, the first free "heads-2.png",
// "heads-3.png", ... so that a second export never replaces the first unasked. Dialogs that
// read (Open ...) or add to a file (Save view as lesson step) propose their default.
std::string dialog_proposed_path(Dialog d, const std::string& dir = ".");
// The dialog reads the frame (a PNG capture): App runs it, not run_dialog_action. It is
// taken in the frame after the dialog closes, so the dialog is never in the picture.
bool dialog_captures(Dialog d);
// The path names an SVG file (ends in .svg, any case): the scripted export keys choose the
// SVG dialog for it.
bool is_svg_path(const std::string& path);
bool is_png_path(const std::string& path);  // ends in .png, any case

// The head "Export this head" writes: the one chosen when its dialog opened
// (s.export_head), else the hovered map of the heads grid, else the selected head.
HeadId export_target(const AppState& s);

// What Export this head (ExportHeadPng, ExportHeadSvg) or Export heads as SVG draws: the
// export target, or the selected layer's heads, of the sentence on screen, in the view's
// colormap, normalisation, log scale and mask.
Result<Figure> dialog_figure(Dialog d, const AppState& s);

// The Logit lens view's grid (the result's lens) as JSON: {"text", "model", "token_ids", "logit_lens":
// views_json.h's document}, the same as headmap-cli --logit-lens writes under "contrib".
Result<std::string> lens_document(const AppState& s);
// The Head overview view (the result's overview) as JSON: {"text", "model", "token_ids",
// "head_overview": views_json.h's document}.
Result<std::string> overview_document(const AppState& s);
// The Offsets view (the result's offset profile) as JSON: {"text", "model", "token_ids", "offset_profile":
// views_json.h's document}, the same as headmap-cli --offset-profile writes under "contrib".
Result<std::string> offsets_document(const AppState& s);

// The Circuits view (the result's circuit of a head and its composition row) as JSON: {"text",
// "model", "token_ids", "circuits": {"circuit", "composition"}}, the same as headmap-cli
// --circuit L.H writes under "contrib" as "circuit" and "circuit_composition".
Result<std::string> circuits_document(const AppState& s);
// Its OV and QK circuits as a figure of two maps over the circuit's tokens, each coloured
// from -m to m, m its largest magnitude (PNG or SVG).
Result<Figure> circuits_figure(const AppState& s);

// The Rollout view's map (the result's rollout, app_state.h's ContribState) as a figure.
Result<Figure> rollout_figure(const AppState& s);

// OK in a file dialog: open or save a view, open a checkpoint or a GPT-2-family model
// directory (read and checked fully before anything changes), save the session's model, export the result on screen as .npy
// or JSON, export one head (the export target) large or the layer's heads as a figure, PNG or
// SVG (heatmap_figure.h), in the view's colormap, scale and mask. On success a note goes to s.status_lines; on error the state is untouched.
Status run_dialog_action(Dialog d, const std::string& path, AppState& s);

}  // namespace headmap
