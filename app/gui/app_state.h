// app_state.h: the plain state the panels read and write. No logic lives here beyond
// small helpers, and no threads: compute results arrive as values (requests.h), shared,
// immutable, between the worker's cache and the UI. compute_request() below is the one
// place the state becomes a request.
//
// B = batch, T = tokens, D = d_model, H = heads, d_head = D/H, L = layers
#pragma once
#include <chrono>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "app/common/colormap.h"
#include "app/common/heatmap_figure.h"
#include "app/gui/lessons.h"
#include "app/gui/model_source.h"
#include "app/gui/requests.h"
#include "core/model/config.h"
#include "core/error.h"

namespace headmap {

// The text size a user can choose (--font-scale, Ctrl +/-, font_scale=X), times the monitor's.
inline constexpr float kFontScaleMin = 0.6f, kFontScaleMax = 3.0f;

// The File menu's dialogs (dialogs.h).
enum class Dialog;

// Input: the sentence and model controls as a tab, when the window is too narrow for their column.
enum class CenterPanel { Heads, Focus, Model, Passport, Training, Compare, Input, Contrib };
const char* center_panel_name(CenterPanel p);
bool parse_center_panel(const std::string& name, CenterPanel* out);

// How heatmap colours are scaled: to the head's own max, to the layer's max, to the whole
// model's max, or the absolute 0..1 of a probability.
enum class Normalisation { PerHead, PerLayer, Global, Absolute };
const char* normalisation_name(Normalisation n);
bool parse_normalisation(const std::string& name, Normalisation* out);

struct ViewSettings {
  int layer = 0, batch = 0, head = 0;  // the selection: focus view, model view, arrow keys
  CenterPanel center = CenterPanel::Heads;
  Colormap colormap = Colormap::Viridis;
  Normalisation norm = Normalisation::PerHead;
  bool log_scale = false;
  bool grid_lines = true;
  bool value_weighted = false;  // View > Value-weighted maps: alpha_ij ||f(x_j)|| instead of alpha (issue 28)
  bool bf16_products = false;   // View > BF16 products: the faster, approximate products (packed_gemm.h; issue 38)
  bool int8_products = false;   // View > 8-bit products: llama.cpp's products on Q4_K, Q5_K, Q6_K, Q8_0 weights (int8_products.h)
  int focus_step = 6;  // which step of the step-through is enlarged (index into the steps)
  // Focus view zoom and pan, in cells: the visible window is [x0, x0 + span) x [y0, y0 + span).
  float zoom = 1.0f, pan_x = 0.0f, pan_y = 0.0f;
  // Heads grid zoom (>= 1) and the window's centre as a fraction of the map, shared by every head.
  float heads_zoom = 1.0f, heads_pan_x = 0.5f, heads_pan_y = 0.5f;
  int big_heads = 0;  // the heads grid: every head (0), or the presenter's view of the selected head (1) or it and the next (2), large
  // Encoders: the maps' A/B filter (a pair only) and the special tokens' rows and columns
  // hidden (dimmed, rows not renormalised); one rule, cell_filter (heatmap_figure.h).
  PairFilter pair_filter = PairFilter::All;
  bool hide_specials = false;
  int compare_mode = 0;          // the Compare tab: 0 side by side, 1 A/B
  int compare_show_correct = 0;  // A/B: 0 shows A (the pitfall), 1 shows B (the correct model)
};

// The Contributions tab (issue 28): its three views and their controls.
enum class ContribView { Rollout, Patching, Detectors, Lens, Overview, Offsets, Circuits, Corpus };
const char* contrib_view_name(ContribView v);
bool parse_contrib_view(const std::string& name, ContribView* out);
struct ContribState {
  ContribView view = ContribView::Rollout;
  int open_sub = -2;  // the sub-tab open last frame: a view, -1 the model view (narrow layouts), -2 none yet
  int rollout_head = -1;                  // the last layer's head (the layers below averaged); -1: the mean over heads
  // Logit lens: the target whose probability colours each cell, the top-k a cell lists, and
  // the cell opened (point, position; -1: none).
  LensTarget lens_target = LensTarget::Final;
  int lens_k = 5;
  int lens_point = -1, lens_position = -1;
  // Head overview: the statistic shown (an index into HeadOverview::stat_keys).
  int overview_stat = 0;
  int circuits_composition = 0;  // Circuits: the composition grid shows 0 Q, 1 K, 2 V
  // Patching: the clean sentence is the text's selected one.
  std::string corrupted;                  // the corrupted sentence box
  bool patch_run = true;                  // false after Cancel, until Run is pressed
  int patch_position = -1;                // the measured position; -1: the last token
  int patch_token_a = -1, patch_token_b = -1;  // -1: the clean / corrupted run's top prediction
  std::optional<HeadId> patch_head;       // the grid's clicked cell: patched at one position at a time
  std::pair<int, int> patch_progress{0, 0};  // the worker's (done, total), copied each frame by the app
  // Detectors: the scores of one pattern, and the heads above the threshold marked in the heads grid.
  Detector detector = Detector::PreviousToken;
  float threshold = 0.3f;
  bool detectors_on = false;              // the view was opened: the heads grid marks the heads above the threshold
  std::vector<float> painted;             // (painted_T, painted_T) 0/1, the pattern painted on the canvas
  int painted_T = 0;
};

// Contributions > Corpus (issue 39, point 4): the file searched, the search on the worker,
// and the outcome on screen. A refused file or a failed or cancelled search keeps the
// outcome shown before it.
struct CorpusState {
  int source = 0;               // 0: the shipped corpus (shipped_corpus_path), 1: `file`
  std::string file;             // chosen with "Choose a file..." (File dialog); read only when searched
  int top = 10;                 // examples listed, 1..kCorpusIndexTop
  CorpusStat stat = CorpusStat::Weight;  // what the examples are ranked by (set_corpus_stat); each its own index
  std::string search_request;   // the file to search now (Search, --then corpus_search=): taken by the app
  bool cancel_request = false;  // Cancel: taken by the app
  std::string running;          // the file on the worker ("" = none)
  std::pair<int, int> progress{0, 0};          // lines done, of all: the worker's, copied each frame by the app
  std::shared_ptr<const CorpusOutcome> shown;  // the last search that succeeded
  std::string error;            // why the last search failed (in red; `shown` is the one before)
  std::string note;             // the last search's end: its time, the cache, or "Cancelled"
  // Derived from `shown` for the selected head and `top` (corpus_view.h), recomputed when
  // one of them changes: the hits at once, and the head's map on each hit's line from the
  // corpus worker (maps_request, taken by the app; adopt_corpus_maps) a moment later.
  struct Derived {
    std::shared_ptr<const CorpusOutcome> of;  // held, so a new outcome is never taken for this one
    int layer = -1, head = -1, top = -1;
    std::optional<CorpusSearch> search;
    std::string error;
    bool maps_ready = false;                           // maps and tokens are this search's (else being computed)
    std::vector<std::vector<float>> maps;              // (hits) each (len, len): the head on the hit's line
    std::vector<std::vector<std::string>> tokens;      // (hits) each (len) as the chips spell them
  } derived;
  std::optional<CorpusMapsJob> maps_request;  // the derived hits' maps to compute: taken by the app
};

// The Compare tab's B side (issue 28): the correct model beside a pitfall (as before), or
// any other weights: the current model with another num_heads, a shipped checkpoint, or any
// path the one dispatcher opens (open_model_path, core/io/hf_model.h): a Hugging Face model
// directory of any family headmap opens, or a checkpoint file. A is always the model the
// heads grid shows.
enum class CompareKind { Correct, OtherHeads, Shipped, File };
struct CompareSource {
  CompareKind kind = CompareKind::Correct;
  int num_heads = 8;                        // OtherHeads
  int shipped = 0;                          // Shipped: index into AppState::shipped
  std::string path;                         // File: the path typed (a model directory or a checkpoint file)
  // File: the path to read (set by Read or --then compare_b=file:PATH, taken by the app, which
  // reads it off the UI thread, request_compare_file) and the one being read ("" = none).
  std::string load_request, loading;
  std::shared_ptr<const ModelWeights> file_weights;  // File: B as read; the previous B stays until a new one is read
  std::string file_path;                    // the path file_weights were read from
  std::string error;                        // why the last path could not be read (B, if any, is the one before)
};
// The lesson player (lessons.h, panels/panel_lesson.cpp): the open lesson and its step.
struct LessonState {
  std::shared_ptr<const Lesson> lesson;  // nullptr: no lesson open
  int step = 0;                          // 0-based
  bool revealed = false;                 // the step's answer is shown
  bool scroll_to_answer = false;         // Reveal was pressed: the player scrolls the answer into view
  std::vector<std::string> applied;      // the state the step set (lesson_settings_of), to notice the user taking the controls
  std::chrono::steady_clock::time_point stepped_at{};
  bool animating = false;                // the app is moving the num_heads slider to the step's value (App::animate_lesson_step)
  std::string export_request;            // File > Export lesson: the directory (taken by the app, which captures each step)
  bool open() const { return lesson != nullptr; }
};

struct AppState {
  // ---- input: what the user typed and set (the config may be invalid: that is a lesson) --
  std::string text;
  // Generate: the model's greedy next tokens still to append to the text, one per result
  // (the button adds one; the scripted generate=N several). App::generate_step appends them.
  int generate_tokens = 0;
  // Encoders (BERT, RoBERTa, DistilBERT): sentence B of every line, and the chips masked by a
  // click, as (sentence, token).
  std::string pair_text;
  std::vector<std::pair<int, int>> masked;
  // The text and sentence B the masks were set on (keep_masks_on_their_tokens).
  std::string masks_text, masks_pair;
  ModelConfig cfg;
  // Heads switched off, by (layer, head): a head keeps its identity when H or L moves, and
  // heads beyond the current config are kept (not sent) until the config has them again.
  std::set<HeadId> ablated;

  // ---- weights: trained by default (see model_source.h) ----
  WeightsMode weights_mode = WeightsMode::Trained;
  std::vector<CheckpointInfo> shipped;          // assets/checkpoints
  std::string checkpoint;                       // opened by the user (File > Open checkpoint)
  std::optional<CheckpointInfo> checkpoint_info;
  std::shared_ptr<const ModelWeights> session;  // trained in the app, or its newest snapshot
  std::shared_ptr<const ModelWeights> pretrained;  // a GPT-2-family model (File > Open model, --model)
  // File > Open model: the directory to read (set by the dialog, taken by the app, which
  // reads it off the UI thread) and the one being read ("" = none). The current model
  // stays until the new one is read.
  std::string open_model_request, opening_model;
  // A model path a file names (a view file's weights) is never read on the file's word: it
  // is shown and the person is asked (issue 35, F1). Open reads it as File > Open model does
  // (off the UI thread, so a load that hangs never holds the window), then puts the view's
  // own config and selection over the model (after_open); Not now keeps the current model.
  struct AskOpenModel {
    std::string path;      // the model directory or checkpoint file, as the file wrote it
    std::string named_by;  // the file that names it
    ModelConfig cfg;       // the view's config, for once the model is open
    WeightsMode mode = WeightsMode::Trained;
    ViewSettings view;     // the view's selection, zoom and panel: the current model may have clamped them
    int selected_token = -1;
  };
  std::optional<AskOpenModel> ask_open_model;
  std::optional<AskOpenModel> after_open;  // the answered question, put over the model once it is read
  std::string pretrained_dir;                      // its directory
  uint64_t session_id = 0;                      // changes with every snapshot
  std::string weights_note;                     // shown when the choice needs explaining

  // ---- training (the Training tab) ----
  TrainStatus training;                // the training worker's status, refreshed each frame
  std::string corpus_path;             // assets/corpus/...
  int train_steps = 1500, train_batch = 16, train_seq = 64;
  int compare_steps = 600;             // quick; kCompareStepsThatPart says when the curves part
  bool follow_training = true;         // heatmaps follow the snapshots of a running training
  std::optional<TrainJob> train_request;  // set by the panel, started by the app
  bool train_cancel_request = false;
  int train_cancel_at_step = 0;        // scripted runs: press Cancel once the run reaches this step

  // ---- view ----
  ViewSettings view;
  float font_scale = 1.0f;     // Ctrl +/-, kFontScaleMin .. kFontScaleMax; fonts are rebuilt crisp at each size
  float content_scale = 1.0f;  // the monitor's (HiDPI); multiplies font_scale
  bool force_three_columns = false;  // scripted: the layout as it was before it adapted (the clipping test's control)
  bool fullscreen = false;
  int hover_token = -1;        // token under the mouse (chip, label or cell row), -1 none
  int hover_key = -1;          // key column under the mouse in a heatmap, -1 none
  int hover_head = -1;         // the heads grid's map under the mouse (of view.layer), -1 none
  // The heads grid and its colour legend as the last frame drew them (window pixels: x0, y0,
  // x1, y1; all 0 when not drawn): what File > Export heads as PNG writes, without the tab
  // bar and the header's controls.
  float heads_figure[4] = {0, 0, 0, 0};
  bool heads_capture = false;  // this frame is the heads PNG's picture: the titles' ablation boxes leave their room empty
  // "Export this head": the head it writes, chosen when its dialog opens (the hovered head,
  // else the selected one); unset: the selected head.
  std::optional<HeadId> export_head;
  // A scripted File dialog (--then export_heads=PATH, ...): the app opens it with this path
  // and presses its OK button, the one path a user's OK takes.
  struct DialogRequest {
    Dialog dialog;
    std::string path;
    bool press_ok = true;  // false: a panel's button opens the dialog for the user to confirm
  };
  std::optional<DialogRequest> dialog_request;
  // What a lesson step's text points at, brought into view once (the "show" setting): the
  // passport's parameter counts (its table scrolled to them on a short screen) and Focus's
  // slice of D (unfolded, where a short screen starts it folded).
  struct ShowRequest {
    bool params = false, slice = false;
  } show;
  int selected_token = -1;     // the clicked chip: the position whose next token is predicted (-1: the last)
  // The Next-token entry clicked: its logit attributed to every head (panel_contrib.cpp).
  std::optional<AttributionRequest> attribute;
  bool focus_text = false;     // put the keyboard focus in the sentence box next frame

  // ---- results ----
  std::shared_ptr<const ComputeResult> result;  // what is on screen
  bool stale = false;                           // result is older than the current input
  Status config_status;                         // validate(cfg) of the current input
  std::string last_change;                      // "num_heads 4 -> 8", for the passport
  // The passport of the result before the last change (the passport panel marks what changed).
  // Its passport only: the whole result kept its maps and logits alive (134 MB on the 1B
  // shape), so the pass typing could have reused was held.
  std::optional<Passport> previous_passport;
  std::chrono::steady_clock::time_point changed_at{};

  // ---- messages ----
  std::string error_popup;                  // modal: a failed file operation, etc.
  std::string compute_error;                // the model refused the last request (shown in red, not modal)
  std::vector<std::string> status_lines;    // short notes under the menu ("saved view.json")

  LessonState lesson;
  ContribState contrib;
  CorpusState corpus;
  CompareSource compare_b;

  int heads_maps_drawn = 0;  // maps the heads grid drew this frame (the heads PNG waits for a frame with them)

  // Cached per result and font size, not measured every frame: the widest token label.
  struct LabelWidth {
    const void* fwd = nullptr;
    int batch = -1;
    float font_size = 0, width = 0;
  } label_width;
  // The top-k list on screen, recomputed only when the result or the position changes.
  struct Predictions {
    const void* fwd = nullptr;
    uint64_t seq = 0;  // the result's (a pass whose memory another took is not taken for it)
    int batch = -1, pos = -1;
    std::string where;  // "after "x" (position n)": the line above them, kept with them
    std::vector<NextToken> top;
  } predictions;
};

// The one function that turns the view state into a compute request: one weights choice
// (its note, when it needs explaining, goes to *weights_note), the context clipped to the
// trained model's positions, the ablated heads that exist in this config, and the Focus
// trace only while Focus is visible. The config must be valid (validate(s.cfg)).
// The model on screen (else the one opened) is an encoder (BERT, RoBERTa, DistilBERT).
bool encoder_model(const AppState& s);

ComputeRequest compute_request(const AppState& s, std::string* weights_note = nullptr);

// The Compare tab's B when it is another model: its config and weights, or an error saying
// why it cannot run (a num_heads that does not divide d_model, a file not read yet). Unset
// for CompareKind::Correct.
std::optional<Result<CompareSideRequest>> compare_side(const AppState& s);
// The Compare tab's Read (and --then compare_b=file:PATH): B becomes what `path` opens, read
// off the UI thread by the app through the one dispatcher; until then the previous B stays.
void request_compare_file(AppState& s, const std::string& path);
// The read's end (the app's loader): B's weights, or why not. A failure keeps the previous B
// and says why in the tab and on the terminal, in the words File > Open uses.
void adopt_compare_file(AppState& s, const std::string& path, const Result<std::shared_ptr<const ModelWeights>>& w);
// The bytes of the models the app holds while it reads another as B: A's weights and the
// current B's, which a new B's read counts against the memory budget (MemoryHeld).
uint64_t compare_held_bytes(const AppState& s);

// Is head (layer, head) at or above the detector threshold in the result on screen? (The
// Detectors view and the heads grid mark the same heads.) False when no scores are shown.
bool detector_marked(const AppState& s, int layer, int head);

// The colour range [vmin, vmax] for one map under the state's normalisation.
void map_range(const AppState& s, int layer, int batch, int head, float* vmin, float* vmax);

// The mask a (T, T) map of this config is drawn with. A single unpadded sentence needs no
// mask when attention is bidirectional.
MaskKind shown_mask(const ModelConfig& cfg, bool padded);
// Encoders: after the text or sentence B changed, keeps a masked position only where its
// sentence has as many tokens as before and the same token there (else it would mask
// another word); says so when it drops any. Call before compute_request and before a mask
// is added.
void keep_masks_on_their_tokens(AppState& s);
// The cells sentence b's maps show under the view's A/B filter and "hide special tokens"
// (cell_filter); none for a sentence out of range.
CellFilter shown_filter(const AppState& s, const Batch& batch, int b);
// Is sentence b a pair (any token of sentence B)?
bool is_pair(const Batch& batch, int b);

// Opens a trained checkpoint (File > Open checkpoint, --checkpoint) and sets the sliders to its
// own D, H, L and context (and the no-W_O switch it was trained with), replacing an opened
// GPT-2 model and the session's model, with a message saying so. `info`: the file's
// checkpoint_info when already read (else open_model reads the path). A failure changes nothing.
Status open_checkpoint(AppState& s, const std::string& path, const CheckpointInfo* info = nullptr);

// Opens any path the one dispatcher (open_model_path, core/io/hf_model.h) opens: a Hugging
// Face directory of any supported family or a checkpoint file (--model, --checkpoint, File >
// Open model, File > Open checkpoint), and sets the sliders to its own sizes. A failure
// changes nothing: the current model stays, the message says why.
Status open_model(AppState& s, const std::string& path);
// The second half of open_model, for weights read elsewhere (the app's model loader).
void adopt_model(AppState& s, const std::string& path, std::shared_ptr<const ModelWeights> weights);
// open_model, by its older name.
Status open_pretrained(AppState& s, const std::string& dir);
// The second half of open_pretrained, for a model read elsewhere (the app's model loader).
void adopt_pretrained(AppState& s, const std::string& dir, std::shared_ptr<const ModelWeights> weights);
// File > Close model: back to what a fresh launch shows (the lesson base, reset_to_lesson_base:
// the shipped default at its own size, its tokenizer, the causal mask, trained weights, the
// default sentence and view), with no sentence B, masks, patching or attribution left from
// the model closed. The colormap, text size, a model trained in this session, Compare's B
// and an open lesson stay.
void reset_to_launch_state(AppState& s);

// The person's answer to ask_open_model: open (the path goes to the model loader) or not.
void answer_open_model(AppState& s, bool open);

// Training options for the Training tab's runs: the tab's steps, batch and sequence length,
// warm-up and evaluation spaced to the budget.
TrainOptions train_options(const AppState& s, int d_model, int num_heads, int num_layers, int steps);
// The job of the "Train this configuration" button: the sliders' D, H, L (and no-W_O switch).
// An error for a configuration the trainer cannot train (K/V heads fewer than H).
Result<TrainJob> train_this_configuration(const AppState& s);
// The chapter's comparisons, with matched budgets (compare_steps each) and the same seed:
// H = 1, 4 and 8 at d_model 64, L = 2; and H = 4 with and without W_O.
TrainJob compare_heads_job(const AppState& s);
TrainJob compare_w_o_job(const AppState& s);
// The comparisons' steps per run from which their curves part. Measured with headmap-cli
// train on grammar-v1 (the Training tab's corpus) with the tab's options (D = 64, L = 2,
// batch 16, 64 tokens, seed 1, one thread): at 600 steps H = 1, 4 and 8 end at a validation
// loss of 2.674, 2.672 and 2.687 (three curves on top of each other); at 3,000 steps at
// 2.190, 2.044 and 2.109 (H = 4 0.15 below H = 1). The tab suggests it.
inline constexpr int kCompareStepsThatPart = 3000;
// The Training tab's note when compare_steps is below that (empty otherwise).
std::string compare_steps_note(int compare_steps);
// Shows the heads of a finished run of the last training (a comparison's "Show heads"):
// its weights become the session's model, the sliders take its D, H and L (and its no-W_O
// switch), and the heads grid opens. An error, and nothing changed, for a run that has not
// finished.
Status show_trained_run(AppState& s, int run);

}  // namespace headmap
