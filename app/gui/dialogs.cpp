// dialogs.cpp: what the File dialogs do, on the state alone.
#include "app/gui/dialogs.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <functional>

#include "app/common/heatmap_png.h"
#include "app/common/heatmap_svg.h"
#include "app/gui/corpus_view.h"
#include "app/gui/lessons.h"
#include "app/gui/settings.h"
#include "core/io/checkpoint.h"
#include "core/io/file_io.h"
#include "core/io/views_json.h"
#include "core/io/run_export.h"

namespace headmap {

const char* dialog_title(Dialog d) {
  switch (d) {
    case Dialog::None: return "";
    case Dialog::OpenView: return "Open view";
    case Dialog::SaveView: return "Save view";
    case Dialog::ExportHeadsPng: return "Export heads as PNG";
    case Dialog::ExportWindowPng: return "Export window as PNG";
    case Dialog::ExportNpy: return "Export attention as .npy";
    case Dialog::ExportJson: return "Export attention as JSON";
    case Dialog::Shortcuts: return "Keyboard shortcuts";
    case Dialog::OpenCheckpoint: return "Open checkpoint";
    case Dialog::SaveCheckpoint: return "Save trained model";
    case Dialog::OpenModel: return "Open model (a directory, a GGUF file, a checkpoint, or a cached model)";
    case Dialog::OpenLesson: return "Open lesson";
    case Dialog::SaveLessonStep: return "Save view as lesson step (appended to the lesson file)";
    case Dialog::ExportLesson: return "Export lesson (one PNG of the window per step, into this directory)";
    case Dialog::ExportHeadPng: return "Export this head as PNG";
    case Dialog::ExportHeadSvg: return "Export this head as SVG";
    case Dialog::ExportHeadsSvg: return "Export heads as SVG";
    case Dialog::ExportRollout: return "Export rollout as PNG (SVG for a .svg name)";
    case Dialog::ExportLens: return "Export logit lens as JSON";
    case Dialog::ExportOverview: return "Export head overview as JSON";
    case Dialog::ExportOffsets: return "Export offset profile as JSON";
    case Dialog::ExportCircuits: return "Export circuits as JSON (PNG or SVG for a .png / .svg name)";
    case Dialog::OpenCorpus: return "Search a corpus file (UTF-8 text, one context a line)";
    case Dialog::ExportCorpus: return "Export corpus search as JSON (the whole view, every example's map, as PNG or SVG for a .png / .svg name)";
  }
  return "";
}

const char* dialog_default_path(Dialog d) {
  switch (d) {
    case Dialog::OpenView:
    case Dialog::SaveView: return "view.headmap.json";  // the glob of the MIME type (packaging/)
    case Dialog::OpenCheckpoint:
    case Dialog::SaveCheckpoint: return "model.safetensors";
    case Dialog::ExportHeadsPng: return "heads.png";
    case Dialog::ExportWindowPng: return "headmap.png";
    case Dialog::ExportNpy: return "attention-npy";
    case Dialog::ExportJson: return "attention.json";
    case Dialog::OpenLesson:
    case Dialog::SaveLessonStep: return "my-lesson.json";
    case Dialog::ExportLesson: return "lesson-slides";
    case Dialog::ExportHeadPng: return "head.png";
    case Dialog::ExportHeadSvg: return "head.svg";
    case Dialog::ExportHeadsSvg: return "heads.svg";
    case Dialog::ExportRollout: return "rollout.png";
    case Dialog::ExportLens: return "logit-lens.json";
    case Dialog::ExportOverview: return "head-overview.json";
    case Dialog::ExportOffsets: return "offset-profile.json";
    case Dialog::ExportCircuits: return "circuits.json";
    case Dialog::OpenCorpus: return "corpus.txt";
    case Dialog::ExportCorpus: return "corpus-search.json";
    case Dialog::OpenModel:  // no name to guess: the hint under the title says what to give (App::open_dialog proposes the last model)
    case Dialog::None:
    case Dialog::Shortcuts: return "";
  }
  return "";
}

std::string dialog_proposed_path(Dialog d, const std::string& dir) {
  const std::string name = dialog_default_path(d);
  const bool writes = !(d == Dialog::OpenView || d == Dialog::OpenCheckpoint || d == Dialog::OpenModel || d == Dialog::OpenLesson ||
                        d == Dialog::OpenCorpus || d == Dialog::SaveLessonStep || d == Dialog::None || d == Dialog::Shortcuts);
  std::error_code ec;
  if (!writes || name.empty() || !std::filesystem::exists(std::filesystem::path(dir) / name, ec)) return name;
  // "view.headmap.json" -> "view-2.headmap.json": the number before the first dot, so the
  // file keeps its type's whole suffix.
  const size_t dot = name.find('.');
  const std::string stem = name.substr(0, dot), ext = dot == std::string::npos ? "" : name.substr(dot);
  for (int i = 2; i < 1000; ++i) {
    const std::string next = stem + "-" + std::to_string(i) + ext;
    if (!std::filesystem::exists(std::filesystem::path(dir) / next, ec)) return next;
  }
  return name;
}

bool dialog_captures(Dialog d) { return d == Dialog::ExportHeadsPng || d == Dialog::ExportWindowPng; }

namespace {
bool has_extension(const std::string& path, const char* want) {  // `want` lower case, 4 characters
  if (path.size() < 4) return false;
  std::string ext = path.substr(path.size() - 4);
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return ext == want;
}
}  // namespace
bool is_svg_path(const std::string& path) { return has_extension(path, ".svg"); }
bool is_png_path(const std::string& path) { return has_extension(path, ".png"); }

HeadId export_target(const AppState& s) {
  if (s.export_head) return *s.export_head;
  return HeadId{s.view.layer, s.hover_head >= 0 ? s.hover_head : s.view.head};
}

namespace {
// The figure's inputs as the heads panel shows them: the selected sentence, the view's
// colormap, normalisation, log scale and mask, each head's label and ablation.
Result<FigureInput> figure_input(const AppState& s, int layer) {
  const ComputeResult* res = s.result.get();
  if (!res || !res->fwd) return Error{ErrorKind::InvalidArgument, "Nothing to export yet."};
  const ForwardData& f = *res->fwd;
  const ForwardOutput& out = f.out;
  if (f.batch.empty()) return Error{ErrorKind::InvalidArgument, "Nothing to export: the text has no tokens."};
  if (layer < 0 || layer >= out.L)
    return Error{ErrorKind::InvalidArgument, "Layer " + std::to_string(layer) + " is not computed yet: export again once the heads panel shows it."};
  FigureInput in;
  in.out = &out;
  in.cfg = &res->request.cfg;
  in.metrics = &f.metrics;
  in.layer = layer;
  in.batch = std::clamp(s.view.batch, 0, out.B - 1);
  const int len = f.batch.lengths[in.batch];
  in.tokens.assign(f.labels[in.batch].begin(), f.labels[in.batch].begin() + len);
  in.colormap = s.view.colormap;
  in.log_scale = s.view.log_scale;
  in.mask = shown_mask(res->request.cfg, out.B > 1);
  in.window = f.weights->arch.window(layer);  // a local layer's keys outside its window: hatched
  in.filter = shown_filter(s, f.batch, in.batch);  // the A/B filter, hidden special tokens: dimmed
  in.scale = s.view.norm == Normalisation::PerHead    ? "per head"
             : s.view.norm == Normalisation::PerLayer ? "per layer"
             : s.view.norm == Normalisation::Global   ? "over the model"
                                                      : "absolute (0 to 1)";
  const int b = in.batch;
  in.range = [&s, layer, b](int h, float* lo, float* hi) { map_range(s, layer, b, h, lo, hi); };
  in.source = f.source;
  const ModelConfig& cfg = res->request.cfg;
  for (int h = 0; h < out.Hw && !cfg.pitfalls.head_averaged; ++h) {  // as the heads panel labels them
    const size_t mi = (static_cast<size_t>(layer) * out.B + b) * out.Hw + h;
    const float probe = res->induction.empty() ? 0.0f : res->induction[static_cast<size_t>(layer) * out.H + h];
    const float ind = label_induction(probe, mi < f.text_induction.size() ? f.text_induction[mi] : std::nanf(""));
    const HeadLabel label = mi < f.metrics.size() ? head_label(f.metrics[mi], ind) : HeadLabel::None;
    in.head_labels.push_back(label == HeadLabel::None ? "" : head_label_name(label));
    if (res->request.ablated.end() != std::find(res->request.ablated.begin(), res->request.ablated.end(), HeadId{layer, h})) in.off.insert(h);
  }
  return in;
}

Status export_figure(Dialog d, const std::string& path, const AppState& s) {
  Result<Figure> fig = dialog_figure(d, s);
  if (!fig) return fig.error();
  return d == Dialog::ExportHeadPng ? write_figure_png(path, *fig) : write_figure_svg(path, *fig);
}
}  // namespace

Result<Figure> dialog_figure(Dialog d, const AppState& s) {
  const HeadId target = export_target(s);
  const bool one = d == Dialog::ExportHeadPng || d == Dialog::ExportHeadSvg;
  Result<FigureInput> in = figure_input(s, one ? target.layer : s.view.layer);
  if (!in) return in.error();
  return one ? head_figure(*in, in->cfg->pitfalls.head_averaged ? 0 : target.head) : heads_figure(*in);  // head-averaged: the one mean map
}

namespace {
// A view's export: {"text": sentence b, "model": its source, "token_ids", key: view}.
std::string view_document(const ComputeResult& res, int batch, const char* key, nlohmann::json view) {
  const ForwardData& f = *res.fwd;
  const int b = std::clamp(batch, 0, std::max(0, f.batch.B() - 1));
  nlohmann::json doc;
  doc["text"] = b < static_cast<int>(res.request.lines.size()) ? res.request.lines[static_cast<size_t>(b)] : std::string();
  doc["model"] = f.source;
  nlohmann::json ids = nlohmann::json::array();
  if (b < f.batch.B())
    for (const Token& t : f.batch.sentences[static_cast<size_t>(b)].tokens) ids.push_back(t.id);
  doc["token_ids"] = std::move(ids);
  doc[key] = std::move(view);
  return doc.dump(2) + "\n";
}
Error nothing_to_export(const char* view) {
  return Error{ErrorKind::InvalidArgument, std::string("Nothing to export: open Contributions > ") + view + " and let it compute."};
}
}  // namespace

Result<std::string> lens_document(const AppState& s) {
  const ComputeResult* res = s.result.get();
  if (!res || !res->fwd || !res->fwd->weights || !res->request.lens || !res->lens) return nothing_to_export("Logit lens");
  return view_document(*res, res->request.lens->batch, "logit_lens", logit_lens_json(*res->lens, *res->fwd->weights));
}

Result<std::string> overview_document(const AppState& s) {
  const ComputeResult* res = s.result.get();
  if (!res || !res->fwd || !res->request.overview || !res->overview) return nothing_to_export("Head overview");
  return view_document(*res, res->request.overview->batch, "head_overview", head_overview_json(*res->overview));
}

Result<std::string> offsets_document(const AppState& s) {
  const ComputeResult* res = s.result.get();
  if (!res || !res->fwd || !res->request.offsets || !res->offsets) return nothing_to_export("Offsets");
  return view_document(*res, res->request.offsets->batch, "offset_profile", offset_profile_json(*res->offsets));
}

namespace {
// The result's circuits when the Circuits view computed them for its head.
const ComputeResult* circuits_result(const AppState& s) {
  const ComputeResult* res = s.result.get();
  if (!res || !res->fwd || !res->fwd->weights || !res->request.circuits || !res->circuit || !res->composition) return nullptr;
  return res;
}
}  // namespace

Result<std::string> circuits_document(const AppState& s) {
  const ComputeResult* res = circuits_result(s);
  if (!res) return nothing_to_export("Circuits");
  return view_document(*res, res->request.circuits->batch, "circuits",
                       {{"circuit", head_circuit_json(*res->circuit, *res->fwd->weights)}, {"composition", composition_row_json(*res->composition)}});
}

Result<Figure> circuits_figure(const AppState& s) {
  const ComputeResult* res = circuits_result(s);
  if (!res) return nothing_to_export("Circuits");
  const HeadCircuit& c = *res->circuit;
  Figure fig;
  fig.title = "Circuits of head " + std::to_string(c.layer) + "." + std::to_string(c.head) + " from the weights alone";
  char copying[48];
  std::snprintf(copying, sizeof copying, "copying score %.4f", c.copying);
  fig.subtitle = std::string(copying) + "; the text's tokens, then its top directions'; " + res->fwd->source;
  for (int id : c.tokens) fig.tokens.push_back(token_name(*res->fwd->weights, id));
  const int n = static_cast<int>(c.tokens.size());
  for (const auto& [title, m] : {std::pair{"OV: attended to (row) \xE2\x86\x92 written (column)", &c.ov},
                                 std::pair{"QK: query (row) \xE2\x86\x92 key (column)", &c.qk}}) {
    float peak = 0;
    for (float v : *m) peak = std::max(peak, std::abs(v));
    FigureMap map;
    map.weights = m->data();  // (n, n)
    map.stride = n;
    map.title = title;
    map.vmin = -(peak > 0 ? peak : 1.0f);
    map.vmax = -map.vmin;
    fig.maps.push_back(map);
  }
  fig.mask = MaskKind::None;
  fig.colormap = s.view.colormap;
  fig.caption = "OV = E W_V W_O U^T, QK = E W_Q W_K^T E^T; each map from -m to m, m its largest magnitude";
  fig.bar_lo = "-m";
  fig.bar_hi = "m";
  return fig;
}

Result<Figure> rollout_figure(const AppState& s) {
  const ComputeResult* res = s.result.get();
  if (!res || !res->fwd || !res->request.rollout || res->rollout.empty())
    return Error{ErrorKind::InvalidArgument, "Nothing to export: open Contributions > Rollout and let it compute."};
  const ForwardData& f = *res->fwd;
  const int b = std::clamp(res->request.rollout->batch, 0, f.batch.B() - 1), T = f.out.T, len = f.batch.lengths[b];
  Figure fig;
  const int head = res->request.rollout->head;
  fig.title = head < 0 ? "Attention rollout, mean over heads" : "Attention rollout, head " + std::to_string(head) + " of the last layer";
  fig.subtitle = "layers 0-" + std::to_string(f.out.L - 1) + ", (A + I) row-normalised, multiplied layer by layer; " + f.source;
  fig.tokens.assign(f.labels[b].begin(), f.labels[b].begin() + len);
  FigureMap m;
  m.weights = res->rollout.data();  // (T, T)
  m.stride = T;
  float peak = 0;
  for (int i = 0; i < len; ++i)
    for (int j = 0; j < len; ++j) peak = std::max(peak, res->rollout[static_cast<size_t>(i) * T + j]);
  fig.mask = shown_mask(res->request.cfg, f.batch.B() > 1);
  const float row_peak = map_peak(res->rollout.data(), T, len, fig.mask);  // as the view: row 0 sees token 0 alone
  m.vmax = row_peak > 0 ? row_peak : peak > 0 ? peak : 1.0f;
  fig.maps.push_back(m);
  fig.colormap = s.view.colormap;
  fig.caption = "rollout weight (rows sum to 1)";
  return fig;
}

namespace {
// A view's export: its figure for a .png or .svg name, else its JSON document.
Status export_view(const std::string& path, const std::function<Result<Figure>()>& figure, const std::function<Result<std::string>()>& document) {
  if (is_svg_path(path) || is_png_path(path)) {
    Result<Figure> fig = figure();
    return !fig ? Status(fig.error()) : is_svg_path(path) ? write_figure_svg(path, *fig) : write_figure_png(path, *fig);
  }
  Result<std::string> doc = document();
  return !doc ? Status(doc.error()) : write_file_atomic(path, *doc);
}
}  // namespace

Status run_dialog_action(Dialog d, const std::string& path, AppState& state) {
  Status st;
  const ComputeResult* res = state.result.get();
  auto run_record = [&](RunRecord& run) {
    run.cfg = res->request.cfg;
    run.weights = res->fwd->weights.get();
    run.batch = &res->fwd->batch;
    run.out = &res->fwd->out;
    run.passport = &res->fwd->passport;
    run.metrics = res->fwd->metrics;
    run.induction = res->induction;
  };
  switch (d) {
    case Dialog::OpenView:
      st = load_view(path, state);
      if (st) state.status_lines.push_back("Opened " + path);
      break;
    case Dialog::SaveView:
      st = save_view(path, state);
      if (st) state.status_lines.push_back("Saved " + path);
      break;
    case Dialog::OpenCheckpoint: {
      // Load it fully here (through the one dispatcher), so a bad file is refused before
      // anything changes; it opens at its own D, H, L and context.
      st = open_model(state, path);
      break;
    }
    case Dialog::OpenModel:
      // Read off the UI thread by the app (workers/model_loader.h); a failure keeps the
      // current model and is shown when the read ends.
      if (path.empty()) st = Error{ErrorKind::InvalidArgument, "Type the path of a model directory, a GGUF file or a checkpoint, or a cached model's name."};
      else state.open_model_request = path;
      break;
    case Dialog::SaveCheckpoint:
      if (!state.session) st = Error{ErrorKind::InvalidArgument, "There is no model trained in this session to save."};
      else st = save_checkpoint(path, *state.session);
      if (st) state.status_lines.push_back("Saved " + path);
      break;
    case Dialog::ExportNpy:
    case Dialog::ExportJson:
      if (!res || !res->fwd) {
        st = Error{ErrorKind::InvalidArgument, "Nothing to export yet."};
        break;
      }
      if (!res->fwd->complete) {  // a long request's visible layer, shown first (ForwardData::complete)
        st = Error{ErrorKind::InvalidArgument, "The other layers are still computing: export again once the heads panel no longer says so."};
        break;
      }
      {
        RunRecord run;
        run_record(run);
        st = d == Dialog::ExportNpy ? export_npy_dir(path, run) : write_run_json(path, run, true);
        if (st) state.status_lines.push_back("Wrote " + path);
      }
      break;
    case Dialog::OpenLesson: {
      Result<Lesson> l = load_lesson(path);
      st = l ? open_lesson(state, std::make_shared<const Lesson>(std::move(l).value())) : Status(l.error());
      break;
    }
    case Dialog::SaveLessonStep:
      st = append_lesson_step(path, state, "Step");
      if (st) state.status_lines.push_back("Added this view as a step to " + path + ": write its text there.");
      break;
    case Dialog::ExportLesson:  // the app shows and captures each step (App::sync_lesson_export)
      if (!state.lesson.open()) st = Error{ErrorKind::InvalidArgument, "Open a lesson first (Help > Lessons)."};
      else state.lesson.export_request = path;
      break;
    case Dialog::ExportHeadPng:
    case Dialog::ExportHeadSvg:
    case Dialog::ExportHeadsSvg:
      st = export_figure(d, path, state);
      if (st) state.status_lines.push_back("Wrote " + path);
      break;
    case Dialog::ExportLens:
    case Dialog::ExportOverview:
    case Dialog::ExportOffsets: {
      Result<std::string> doc = d == Dialog::ExportLens ? lens_document(state) : d == Dialog::ExportOverview ? overview_document(state) : offsets_document(state);
      st = !doc ? Status(doc.error()) : write_file_atomic(path, *doc);
      if (st) state.status_lines.push_back("Wrote " + path);
      break;
    }
    case Dialog::ExportCircuits:
      st = export_view(path, [&] { return circuits_figure(state); }, [&] { return circuits_document(state); });
      if (st) state.status_lines.push_back("Wrote " + path);
      break;
    case Dialog::OpenCorpus:  // read on the corpus worker (App::sync_corpus), only now that the person chose it
      if (path.empty()) st = Error{ErrorKind::InvalidArgument, "Type the path of a UTF-8 text file, one context a line."};
      else {
        state.corpus.file = path;
        state.corpus.source = 1;
        state.corpus.search_request = path;
      }
      break;
    case Dialog::ExportCorpus:
      st = export_corpus(state, path);
      if (st) state.status_lines.push_back("Wrote " + path);
      break;
    case Dialog::ExportRollout: {
      Result<Figure> fig = rollout_figure(state);
      st = !fig ? Status(fig.error()) : is_svg_path(path) ? write_figure_svg(path, *fig) : write_figure_png(path, *fig);
      if (st) state.status_lines.push_back("Wrote " + path);
      break;
    }
    case Dialog::None:
    case Dialog::Shortcuts:
    case Dialog::ExportHeadsPng:
    case Dialog::ExportWindowPng: break;
  }
  return st;
}

}  // namespace headmap
