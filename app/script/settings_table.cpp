// settings_table.cpp: the scripted settings, their parsers and what they change.
#include "app/script/settings_table.h"

#include "app/gui/corpus_view.h"
#include "app/gui/dialogs.h"

#include <charconv>
#include <filesystem>
#include <stdexcept>
#include <cstdint>
#include <cstdio>

namespace headmap {
namespace {

// ---- parsers, shared by the entries ------------------------------------------------------
// A whole number within [lo, hi], the range a slider or box gives, and nothing else:
// "-1" for heads, "12abc" or "1e9" are messages (heads=-1 once reached a std::length_error).
Result<int> parse_number(const char* key, const std::string& v, long long lo, long long hi) {
  long long n = 0;
  const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
  if (ec != std::errc() || end != v.data() + v.size() || v.empty())
    return Error{ErrorKind::InvalidArgument, std::string(key) + " needs a whole number, got \"" + v + "\"."};
  if (n < lo || n > hi)
    return Error{ErrorKind::InvalidArgument, std::string(key) + " must be from " + std::to_string(lo) + " to " + std::to_string(hi) + ", got " + v + "."};
  return static_cast<int>(n);
}
bool parse_switch(const std::string& v) { return v == "1" || v == "true" || v == "on"; }

// A File dialog, opened with this path (empty: the name it proposes) and OK pressed by the
// app (AppState::dialog_request), exactly as a user's OK.
Status request_dialog(AppState& s, Dialog d, const std::string& path) {
  s.dialog_request = AppState::DialogRequest{d, path.empty() ? dialog_proposed_path(d) : path};
  return Status();
}

// An integer field of the state, as a slider sets it.
#define HEADMAP_NUMBER(key, field, lo, hi)                                          \
  [](AppState& s, const std::string& v) -> Status {                                 \
    Result<int> n = parse_number(key, v, lo, hi);                                   \
    if (!n) return n.error();                                                       \
    s.field = *n;                                                                   \
    return Status();                                                                \
  }

constexpr SettingReach kData = SettingReach::Data;  // a lesson step may carry it (settings_table.h)

}  // namespace

const std::vector<ScriptedSetting>& scripted_settings() {
  static const std::vector<ScriptedSetting> table = {
      {"heads", "N", "num_heads (an invalid value is shown with its message, as on screen)", HEADMAP_NUMBER("heads", cfg.num_heads, 1, kMaxDModel), kData},
      {"kv_heads", "N", "K/V heads: 1 multi-query, a divisor of num_heads grouped-query, num_heads multi-head",
       [](AppState& s, const std::string& v) -> Status {
         Result<int> n = parse_number("kv_heads", v, 1, kMaxDModel);
         if (!n) return n.error();
         s.cfg.num_kv_heads = *n == s.cfg.num_heads ? 0 : *n;  // as the KV heads combo sets it
         return Status();
       }, kData},
      {"d_model", "N", "d_model", HEADMAP_NUMBER("d_model", cfg.d_model, 1, kMaxDModel), kData},
      {"layers", "N", "the number of layers", HEADMAP_NUMBER("layers", cfg.num_layers, 1, kMaxModelLayers), kData},
      {"context", "N", "the context (tokens per sentence)", HEADMAP_NUMBER("context", cfg.context, 1, kMaxContext), kData},
      {"layer", "N", "the selected layer, numbered from 0", HEADMAP_NUMBER("layer", view.layer, 0, kMaxModelLayers - 1), kData},
      {"head", "N", "the selected head, numbered from 0", HEADMAP_NUMBER("head", view.head, 0, kMaxDModel - 1), kData},
      {"seed", "N", "the seed of random init and hashed embeddings",
       [](AppState& s, const std::string& v) -> Status {
         Result<int> n = parse_number("seed", v, 0, INT32_MAX);
         if (!n) return n.error();
         s.cfg.seed = static_cast<uint64_t>(*n);
         return Status();
       }, kData},
      {"causal", "on|off", "the causal mask",
       [](AppState& s, const std::string& v) -> Status {
         s.cfg.causal = parse_switch(v);
         return Status();
       }, kData},
      {"positional", "on|off", "positional encoding",
       [](AppState& s, const std::string& v) -> Status {
         s.cfg.positional = parse_switch(v);
         return Status();
       }, kData},
      {"text", "TEXT", "the sentence box's text",
       [](AppState& s, const std::string& v) -> Status {
         s.text = v;
         return Status();
       }, kData},
      {"pair", "TEXT", "encoders: sentence B of every line (token type 1)",
       [](AppState& s, const std::string& v) -> Status {
         s.pair_text = v;
         return Status();
       }, kData},
      {"mask", "S:T|none", "encoders: mask token T of sentence S (from 0), as a click on its chip does; none unmasks all",
       [](AppState& s, const std::string& v) -> Status {
         int b = -1, t = -1;
         char end = 0;
         if (v == "none") {
           s.masked.clear();
           return Status();
         }
         if (std::sscanf(v.c_str(), "%d:%d%c", &b, &t, &end) != 2 || b < 0 || t < 0)
           return Error{ErrorKind::InvalidArgument, "mask is S:T (sentence and token from 0) or none, got \"" + v + "\"."};
         keep_masks_on_their_tokens(s);  // the others checked against the text they were set on
         s.masked.emplace_back(b, t);
         return Status();
       }, kData},
      {"pair_filter", "all|aa|ab|ba|bb", "encoders, a pair: show only the cells from sentence A or B (query row) to A or B (key column), others dimmed",
       [](AppState& s, const std::string& v) -> Status {
         if (!parse_pair_filter(v, &s.view.pair_filter))
           return Error{ErrorKind::InvalidArgument, "pair_filter is all, aa, ab, ba or bb, got \"" + v + "\"."};
         return Status();
       }, kData},
      {"hide_specials", "on|off", "dim the special tokens' rows and columns ([CLS], [SEP], <s>, </s>) in the maps; rows not renormalised",
       [](AppState& s, const std::string& v) -> Status {
         if (v != "on" && v != "off" && v != "1" && v != "0")
           return Error{ErrorKind::InvalidArgument, "hide_specials is on or off, got \"" + v + "\"."};
         s.view.hide_specials = parse_switch(v);
         return Status();
       }, kData},
      {"weights", "trained|trained_for_h|random", "the weights choice (trained_for_h: the model trained with this H, not re-sliced)",
       [](AppState& s, const std::string& v) -> Status {
         if (!parse_weights_mode(v, &s.weights_mode))
           return Error{ErrorKind::InvalidArgument, "weights is trained, trained_for_h or random, got \"" + v + "\"."};
         return Status();
       }, kData},
      {"open_model", "DIR", "File > Open model: read a GPT-2-family directory in the background, as the dialog does",
       [](AppState& s, const std::string& v) -> Status {
         if (v.empty()) return Error{ErrorKind::InvalidArgument, "open_model wants a directory."};
         s.open_model_request = v;
         return Status();
       }},
      {"generate", "N", "press Generate N times: the model's greedy next token appended to the text, one per result",
       HEADMAP_NUMBER("generate", generate_tokens, 1, 256)},
      {"ablate", "layer,head", "switch that head off, as its box in the heads panel does (numbered from 0)",
       [](AppState& s, const std::string& v) -> Status {
         int l = 0, h = 0;
         if (std::sscanf(v.c_str(), "%d,%d", &l, &h) != 2) return Error{ErrorKind::InvalidArgument, "ablate wants layer,head."};
         if (l < 0 || h < 0 || l >= s.cfg.num_layers || h >= s.cfg.num_heads)
           return Error{ErrorKind::InvalidArgument, "No such head to ablate."};
         s.ablated.insert(HeadId{l, h});
         return Status();
       }, kData},
      {"train_steps", "N", "the Training tab's steps", HEADMAP_NUMBER("train_steps", train_steps, 1, 1000000)},
      {"cancel_at_step", "N", "press Cancel once a training reaches this step", HEADMAP_NUMBER("cancel_at_step", train_cancel_at_step, 0, 1000000)},
      {"train", "1", "press \"Train this configuration\"",
       [](AppState& s, const std::string&) -> Status {
         Result<TrainJob> job = train_this_configuration(s);
         if (!job) return job.error();
         s.train_request = std::move(job).value();
         s.weights_mode = WeightsMode::Trained;
         return Status();
       }},
      {"compare_steps", "N", "the comparisons' steps per run", HEADMAP_NUMBER("compare_steps", compare_steps, 1, 1000000)},
      {"compare", "heads|w_o", "press a Compare button",
       [](AppState& s, const std::string& v) -> Status {
         if (v != "heads" && v != "w_o") return Error{ErrorKind::InvalidArgument, "compare is heads or w_o, got \"" + v + "\"."};
         s.train_request = v == "heads" ? compare_heads_job(s) : compare_w_o_job(s);
         return Status();
       }},
      {"show_run", "N", "press run N's \"Show heads\" after a training or comparison (0-based; after a wait)",
       [](AppState& s, const std::string& v) -> Status {
         Result<int> n = parse_number("show_run", v, 0, 100);
         if (!n) return n.error();
         return show_trained_run(s, *n);
       }},
      {"panel", "heads|focus|model|passport|training|compare|contrib", "the view in the middle",
       [](AppState& s, const std::string& v) -> Status {
         if (!parse_center_panel(v, &s.view.center)) return Error{ErrorKind::InvalidArgument, "Unknown panel \"" + v + "\"."};
         return Status();
       }, kData},
      {"compare_b", "correct|heads:N|shipped:NAME|file:PATH", "the Compare tab's B: the correct model, A's model with num_heads N, a shipped checkpoint (its file name without .safetensors), or any path File > Open opens: a Hugging Face model directory of any family headmap opens or a checkpoint file (read as Read does, off the UI thread; a refusal is shown in the tab and the previous B kept)",
       [](AppState& s, const std::string& v) -> Status {
         CompareSource& c = s.compare_b;
         const size_t colon = v.find(':');
         const std::string kind = v.substr(0, colon), arg = colon == std::string::npos ? "" : v.substr(colon + 1);
         if (kind == "correct") {
           c.kind = CompareKind::Correct;
         } else if (kind == "heads") {
           Result<int> n = parse_number("compare_b heads", arg, 1, kMaxDModel);
           if (!n) return n.error();
           c.kind = CompareKind::OtherHeads;
           c.num_heads = *n;
         } else if (kind == "shipped") {
           for (size_t i = 0; i < s.shipped.size(); ++i)
             if (std::filesystem::path(s.shipped[i].path).stem().string() == arg) {
               c.kind = CompareKind::Shipped;
               c.shipped = static_cast<int>(i);
               return Status();
             }
           return Error{ErrorKind::InvalidArgument, "No shipped checkpoint \"" + arg + "\"."};
         } else if (kind == "file") {
           request_compare_file(s, arg);  // read as Read reads it: off the UI thread, a refusal shown in the tab
         } else {
           return Error{ErrorKind::InvalidArgument, "compare_b is correct, heads:N, shipped:NAME or file:PATH, got \"" + v + "\"."};
         }
         return Status();
       }},
      // ---- the Contributions tab (issue 28) ----
      {"contrib_view", "VIEW", "the Contributions tab opened at VIEW: rollout, patching, overview, offsets, circuits, corpus, lens or detectors",
       [](AppState& s, const std::string& v) -> Status {
         if (!parse_contrib_view(v, &s.contrib.view))
           return Error{ErrorKind::InvalidArgument, "contrib_view is rollout, patching, overview, offsets, circuits, corpus, lens or detectors, got \"" + v + "\"."};
         s.view.center = CenterPanel::Contrib;
         return Status();
       }, kData},
      {"rollout_head", "mean|N", "the Rollout view's heads: their mean, or head N of the last layer",
       [](AppState& s, const std::string& v) -> Status {
         if (v == "mean") {
           s.contrib.rollout_head = -1;
           return Status();
         }
         Result<int> n = parse_number("rollout_head", v, 0, kMaxDModel - 1);
         if (!n) return n.error();
         s.contrib.rollout_head = *n;
         return Status();
       }, kData},
      {"export_rollout", "PATH", "the Rollout view's Export (PNG, or SVG for a .svg name), as export_heads",
       [](AppState& s, const std::string& v) { return request_dialog(s, Dialog::ExportRollout, v); }},
      {"lens_target", "final|text", "the Logit lens view's target: what the model finally predicts, or the text's own next token",
       [](AppState& s, const std::string& v) -> Status {
         if (v != "final" && v != "text") return Error{ErrorKind::InvalidArgument, "lens_target must be final or text, not \"" + v + "\"."};
         s.contrib.lens_target = v == "text" ? LensTarget::Text : LensTarget::Final;
         return Status();
       }, kData},
      {"lens_k", "N", "the Logit lens view's top-k: the tokens a cell lists (1 to 50)",
       [](AppState& s, const std::string& v) -> Status {
         Result<int> n = parse_number("lens_k", v, 1, kLensMaxTopK);
         if (!n) return n.error();
         s.contrib.lens_k = *n;
         return Status();
       }, kData},
      {"export_lens", "PATH", "the Logit lens view's Export (JSON), as export_heads",
       [](AppState& s, const std::string& v) { return request_dialog(s, Dialog::ExportLens, v); }},
      {"export_overview", "PATH", "the Head overview view's Export (JSON), as export_heads",
       [](AppState& s, const std::string& v) { return request_dialog(s, Dialog::ExportOverview, v); }},
      {"export_offsets", "PATH", "the Offsets view's Export (JSON), as export_heads",
       [](AppState& s, const std::string& v) { return request_dialog(s, Dialog::ExportOffsets, v); }},
      {"export_circuits", "PATH", "the Circuits view's Export: JSON, or its OV and QK maps as PNG or SVG for a .png or .svg name",
       [](AppState& s, const std::string& v) { return request_dialog(s, Dialog::ExportCircuits, v); }},
      {"corpus_search", "shipped|PATH", "the Corpus view searches the shipped corpus, or the UTF-8 text file PATH (as its file dialog's OK)",
       [](AppState& s, const std::string& v) -> Status {
         if (v == "shipped") {
           s.corpus.source = 0;
           s.corpus.search_request = corpus_source_path(s);
           return Status();
         }
         return request_dialog(s, Dialog::OpenCorpus, v);
       }},
      {"corpus_top", "N", "the Corpus view's number of examples (1 to 100)",
       [](AppState& s, const std::string& v) -> Status {
         Result<int> n = parse_number("corpus_top", v, 1, kCorpusIndexTop);
         if (!n) return n.error();
         s.corpus.top = *n;
         return Status();
       }, kData},
      {"corpus_stat", "weight|value_norm", "what the Corpus view ranks the examples by: the attention weight, or the value-weighted norm (searching again)",
       [](AppState& s, const std::string& v) -> Status {
         Result<CorpusStat> st = parse_corpus_stat(v);
         if (!st) return st.error();
         set_corpus_stat(s, *st);
         return Status();
       }},
      {"export_corpus", "PATH", "the Corpus view's Export: JSON (as headmap-cli --corpus), or the whole view (the offset profile and every example's map with its line) as PNG or SVG for a .png or .svg name",
       [](AppState& s, const std::string& v) { return request_dialog(s, Dialog::ExportCorpus, v); }},
      {"corrupted", "TEXT", "the Patching view's corrupted sentence box",
       [](AppState& s, const std::string& v) -> Status {
         s.contrib.corrupted = v;
         return Status();
       }, kData},
      {"patch_head", "layer,head", "click that head's cell in the Patching grid: it is patched at one position at a time",
       [](AppState& s, const std::string& v) -> Status {
         int l = 0, h = 0;
         if (std::sscanf(v.c_str(), "%d,%d", &l, &h) != 2 || l < 0 || h < 0 || l >= s.cfg.num_layers || h >= s.cfg.num_heads)
           return Error{ErrorKind::InvalidArgument, "patch_head wants layer,head of a head of this model."};
         s.contrib.patch_head = HeadId{l, h};
         return Status();
       }, kData},
      {"detector", "previous_token|duplicate_token|induction|first_token|painted", "the Detectors view's pattern",
       [](AppState& s, const std::string& v) -> Status {
         for (Detector d : {Detector::PreviousToken, Detector::DuplicateToken, Detector::Induction, Detector::FirstToken, Detector::Painted})
           if (v == detector_name(d)) {
             s.contrib.detector = d;
             s.contrib.detectors_on = true;
             return Status();
           }
         return Error{ErrorKind::InvalidArgument, "Unknown detector \"" + v + "\"."};
       }, kData},
      {"detector_threshold", "X", "the Detectors view's threshold (0 to 1): heads at or above it are outlined there and in the heads grid",
       [](AppState& s, const std::string& v) -> Status {
         try {
           const float x = std::stof(v);
           if (!(x >= 0.0f && x <= 1.0f)) throw std::out_of_range("detector_threshold");
           s.contrib.threshold = x;
           s.contrib.detectors_on = true;
         } catch (...) {
           return Error{ErrorKind::InvalidArgument, "detector_threshold needs a number from 0 to 1, got \"" + v + "\"."};
         }
         return Status();
       }, kData},
      {"heads_zoom", "N", "zoom every map of the heads grid N times, on the first tokens (as the wheel does)",
       [](AppState& s, const std::string& v) -> Status {
         Result<int> n = parse_number("heads_zoom", v, 1, 4096);
         if (!n) return n.error();
         s.view.heads_zoom = static_cast<float>(*n);
         s.view.heads_pan_x = s.view.heads_pan_y = 0.0f;  // the heads panel clamps it to the top-left corner
         return Status();
       }, kData},
      {"big_heads", "1|2|off", "the heads grid shows the selected head (1) or it and the next (2) large, or every head (off), as B does",
       [](AppState& s, const std::string& v) -> Status {
         if (v != "1" && v != "2" && v != "off" && v != "0")
           return Error{ErrorKind::InvalidArgument, "big_heads is 1, 2 or off, got \"" + v + "\"."};
         s.view.big_heads = v == "1" ? 1 : v == "2" ? 2 : 0;
         return Status();
       }, kData},
      {"compare_view", "split|a|b", "the Compare tab: side by side, or A/B showing A (the pitfall) or B (the correct model)",
       [](AppState& s, const std::string& v) -> Status {
         if (v != "split" && v != "a" && v != "b") return Error{ErrorKind::InvalidArgument, "compare_view is split, a or b, got \"" + v + "\"."};
         s.view.compare_mode = v == "split" ? 0 : 1;
         s.view.compare_show_correct = v == "b" ? 1 : 0;
         return Status();
       }, kData},
      {"pitfall", "NAME=on|off", "a pitfall switch, by its CLI name without --pitfall- (e.g. pitfall=scale-d-model=on)",
       [](AppState& s, const std::string& v) -> Status {
         const size_t eq = v.find('=');
         const std::string name = "--pitfall-" + v.substr(0, eq);
         for (const PitfallInfo& p : pitfall_list())
           if (name == p.cli) {
             s.cfg.pitfalls.*(p.flag) = eq == std::string::npos || parse_switch(v.substr(eq + 1));
             return Status();
           }
         return Error{ErrorKind::InvalidArgument, "Unknown pitfall \"" + v.substr(0, eq) + "\"."};
       }, kData},
      {"font_scale", "X", "the text size, as Ctrl +/- set it",
       [](AppState& s, const std::string& v) -> Status {
         try {
           const float x = std::stof(v);
           if (!(x >= kFontScaleMin && x <= kFontScaleMax)) throw std::out_of_range("font_scale");
           s.font_scale = x;
         } catch (...) {
           return Error{ErrorKind::InvalidArgument, "font_scale needs a number from 0.6 to 3, got \"" + v + "\"."};
         }
         return Status();
       }, kData},
      {"focus_step", "N", "the enlarged step of the focus view (0 Q_h ... 6 softmax, 8 concat, 9 W_O; a family's 10 q/k norm, 11 RoPE, 12 soft-cap)", HEADMAP_NUMBER("focus_step", view.focus_step, 0, 12), kData},
      {"show", "parameters|slice", "bring into view what a lesson's text points at: the passport's parameter counts, Focus's slice of D (unfolded)",
       [](AppState& s, const std::string& v) -> Status {
         if (v == "parameters") s.show.params = true;
         else if (v == "slice") s.show.slice = true;
         else return Error{ErrorKind::InvalidArgument, "show is parameters or slice, got \"" + v + "\"."};
         return Status();
       }, kData},
      {"select_token", "N", "click token chip N of the selected sentence (its next-token predictions)", HEADMAP_NUMBER("select_token", selected_token, -1, kMaxContext), kData},
      {"sentence", "N", "the selected sentence of the batch, numbered from 0", HEADMAP_NUMBER("sentence", view.batch, 0, 1 << 20), kData},
      {"layout", "auto|columns", "columns: keep three columns however narrow (the layout before it adapted)",
       [](AppState& s, const std::string& v) -> Status {
         if (v != "auto" && v != "columns") return Error{ErrorKind::InvalidArgument, "layout is auto or columns, got \"" + v + "\"."};
         s.force_three_columns = v == "columns";
         return Status();
       }},
      {"export_heads", "PATH", "File > Export heads as PNG (as SVG for a .svg name): the dialog opened with PATH (empty: its proposed name), OK pressed",
       [](AppState& s, const std::string& v) { return request_dialog(s, is_svg_path(v) ? Dialog::ExportHeadsSvg : Dialog::ExportHeadsPng, v); }},
      {"export_head", "PATH", "File > Export this head (the selected one) as PNG (as SVG for a .svg name), as export_heads",
       [](AppState& s, const std::string& v) { return request_dialog(s, is_svg_path(v) ? Dialog::ExportHeadSvg : Dialog::ExportHeadPng, v); }},
      {"export_window", "PATH", "File > Export window as PNG, as export_heads",
       [](AppState& s, const std::string& v) { return request_dialog(s, Dialog::ExportWindowPng, v); }},
      {"export_npy", "DIR", "File > Export attention as .npy, as export_heads",
       [](AppState& s, const std::string& v) { return request_dialog(s, Dialog::ExportNpy, v); }},
      {"export_json", "PATH", "File > Export attention as JSON, as export_heads",
       [](AppState& s, const std::string& v) { return request_dialog(s, Dialog::ExportJson, v); }},
      {"save_view", "PATH", "File > Save view, as export_heads",
       [](AppState& s, const std::string& v) { return request_dialog(s, Dialog::SaveView, v); }},
      {"colormap", "viridis|magma|cividis|grey", "the colormap",
       [](AppState& s, const std::string& v) -> Status {
         if (!parse_colormap(v.c_str(), &s.view.colormap)) return Error{ErrorKind::InvalidArgument, "Unknown colormap \"" + v + "\"."};
         return Status();
       }, kData},
      // ---- the lesson player (lessons.h) and the colour scale ----
      {"norm", "head|layer|global|absolute", "the colour scale: per head, per layer, over the model, or absolute (View menu)",
       [](AppState& s, const std::string& v) -> Status {
         if (!parse_normalisation(v, &s.view.norm)) return Error{ErrorKind::InvalidArgument, "norm is head, layer, global or absolute, got \"" + v + "\"."};
         return Status();
       }, kData},
      {"log_scale", "on|off", "the log colour scale (View menu)",
       [](AppState& s, const std::string& v) -> Status {
         s.view.log_scale = parse_switch(v);
         return Status();
       }, kData},
      {"int8_products", "on|off", "8-bit products on a GGUF file's Q4_K, Q5_K, Q6_K and Q8_0 weights (View menu)",
       [](AppState& s, const std::string& v) -> Status {
         s.view.int8_products = parse_switch(v);
         return Status();
       }, kData},
      {"lesson", "NAME", "Help > Lessons: open a lesson (003, or a lesson file) at its first step",
       [](AppState& s, const std::string& v) -> Status {
         Result<std::string> path = find_lesson(v);
         if (!path) return path.error();
         Result<Lesson> l = load_lesson(*path);
         if (!l) return l.error();
         return open_lesson(s, std::make_shared<const Lesson>(std::move(l).value()));
       }},
      {"lesson_step", "N", "show step N (from 1) of the open lesson, as Next and Back do",
       [](AppState& s, const std::string& v) -> Status {
         Result<int> n = parse_number("lesson_step", v, 1, kMaxLessonSteps);
         if (!n) return n.error();
         return go_to_lesson_step(s, *n - 1);
       }},
      {"export_lesson", "DIR", "File > Export lesson as PNGs: each step of the open lesson, captured as the window shows it, into DIR",
       [](AppState& s, const std::string& v) -> Status {
         if (!s.lesson.open()) return Error{ErrorKind::InvalidArgument, "No lesson is open to export."};
         if (v.empty()) return Error{ErrorKind::InvalidArgument, "export_lesson wants a directory."};
         s.lesson.export_request = v;
         return Status();
       }},
      {"reveal", "on|off", "the lesson player's Reveal button",
       [](AppState& s, const std::string& v) -> Status {
         if (!s.lesson.open()) return Error{ErrorKind::InvalidArgument, "No lesson is open to reveal."};
         s.lesson.revealed = parse_switch(v);
         s.lesson.scroll_to_answer = s.lesson.revealed;
         return Status();
       }},
  };
  return table;
}
#undef HEADMAP_NUMBER

static Status apply_one(AppState& s, const std::string& a, bool from_file) {
  const size_t eq = a.find('=');
  if (eq == std::string::npos) return Error{ErrorKind::InvalidArgument, "Expected key=value, got \"" + a + "\"."};
  const std::string k = a.substr(0, eq), v = a.substr(eq + 1);
  for (const ScriptedSetting& st : scripted_settings())
    if (k == st.key) {
      if (from_file && st.reach != SettingReach::Data)
        return Error{ErrorKind::InvalidArgument, "\"" + k + "\" cannot be part of a lesson: a lesson sets the controls and the view, and never "
                                                 "reads or writes a file, opens a model or starts work (only the command line's --then may)."};
      return st.apply(s, v);
    }
  return Error{ErrorKind::InvalidArgument, "Unknown setting \"" + k + "\"."};
}

Status apply_setting(AppState& s, const std::string& a) { return apply_one(s, a, false); }
Status apply_data_setting(AppState& s, const std::string& a) { return apply_one(s, a, true); }

std::string scripted_settings_help() {
  std::string out;
  for (const ScriptedSetting& st : scripted_settings()) out += std::string("  ") + st.key + "=" + st.value + "  " + st.help + "\n";
  return out;
}

}  // namespace headmap
