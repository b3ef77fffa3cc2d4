#include "app/gui/app_state.h"

#include <filesystem>

#include <algorithm>
#include <cstdio>

#include "app/common/print_message.h"
#include "app/gui/enum_names.h"
#include "core/io/export.h"
#include "core/io/hf_tensors.h"
#include "core/io/hf_model.h"

namespace headmap {

MaskKind shown_mask(const ModelConfig& cfg, bool padded) {
  const MaskKind m = mask_kind(cfg);
  return m == MaskKind::PaddingOnly && !padded ? MaskKind::None : m;
}

bool is_pair(const Batch& batch, int b) {
  if (b < 0 || b >= static_cast<int>(batch.sentences.size())) return false;
  for (const Token& t : batch.sentences[static_cast<size_t>(b)].tokens)
    if (t.segment == 1) return true;
  return false;
}

CellFilter shown_filter(const AppState& s, const Batch& batch, int b) {
  if (b < 0 || b >= static_cast<int>(batch.sentences.size()) || b >= static_cast<int>(batch.lengths.size())) return CellFilter{};
  return cell_filter(batch.sentences[static_cast<size_t>(b)].tokens, batch.lengths[static_cast<size_t>(b)], s.view.pair_filter,
                     s.view.hide_specials);
}

void map_range(const AppState& s, int layer, int batch, int head, float* vmin, float* vmax) {
  *vmin = 0.0f;
  *vmax = 1.0f;
  if (!s.result || !s.result->fwd || s.view.norm == Normalisation::Absolute) return;
  const ForwardData& f = *s.result->fwd;
  const ForwardOutput& out = f.out;
  auto max_of = [&](int l, int b, int h) { return f.map_max[(static_cast<size_t>(l) * out.B + b) * out.Hw + h]; };
  float m = 0;
  switch (s.view.norm) {
    case Normalisation::PerHead: m = max_of(layer, batch, head); break;
    case Normalisation::PerLayer:
      for (int h = 0; h < out.Hw; ++h) m = std::max(m, max_of(layer, batch, h));
      break;
    case Normalisation::Global:
      for (int l = 0; l < out.L; ++l)
        for (int h = 0; h < out.Hw; ++h) m = std::max(m, max_of(l, batch, h));
      break;
    case Normalisation::Absolute: break;
  }
  *vmax = m > 0 ? m : 1.0f;
}


Status open_model(AppState& s, const std::string& path) {
  Result<ModelWeights> w = open_model_path(path);  // the one dispatcher (core/io/hf_model.h)
  if (!w) return w.error();
  adopt_model(s, path, std::make_shared<const ModelWeights>(std::move(w).value()));
  return Status();
}

Status open_pretrained(AppState& s, const std::string& dir) { return open_model(s, dir); }

void answer_open_model(AppState& s, bool open) {
  if (!s.ask_open_model) return;
  AppState::AskOpenModel a = std::move(*s.ask_open_model);
  s.ask_open_model.reset();
  if (open) {
    s.open_model_request = a.path;
    s.after_open = std::move(a);
  } else {
    s.status_lines.push_back(a.named_by + " names the model " + a.path + ", which was not opened: the current model stays.");
  }
}

void adopt_model(AppState& s, const std::string& path, std::shared_ptr<const ModelWeights> weights) {
  if (weights->source.kind == WeightsSource::Kind::Pretrained) return adopt_pretrained(s, path, std::move(weights));
  CheckpointInfo info = checkpoint_info_of(*weights, path);
  info.weights = std::move(weights);  // the worker need not read it again
  if (Status st = open_checkpoint(s, path, &info); !st) s.error_popup = st.error().message;  // cannot fail with its weights known
}

// Vocabulary ids and positions chosen on the model before (a clicked prediction, patching's
// tokens and position, masks) mean nothing in another model's vocabulary: a model opened
// starts without them, rather than with a red "not in this model's vocabulary".
static void forget_token_choices(AppState& s) {
  s.attribute.reset();
  s.masked.clear();
  s.contrib.patch_token_a = s.contrib.patch_token_b = -1;
  s.contrib.patch_position = -1;
  s.contrib.patch_head.reset();
  s.predictions = AppState::Predictions();
}

void adopt_pretrained(AppState& s, const std::string& dir, std::shared_ptr<const ModelWeights> weights) {
  forget_token_choices(s);
  s.pretrained = std::move(weights);
  s.pretrained_dir = dir;
  s.weights_mode = WeightsMode::Trained;
  s.cfg = config_for_weights(*s.pretrained, s.cfg);
  s.masked.clear();
  s.status_lines.push_back("Opened " + describe_source(*s.pretrained, s.cfg));
}

void reset_to_launch_state(AppState& s) {
  reset_to_lesson_base(s);
  forget_token_choices(s);
  s.pair_text.clear();
  s.masks_text.clear();
  s.masks_pair.clear();
  s.generate_tokens = 0;
  s.export_head.reset();
  s.contrib = ContribState();
  s.compute_error.clear();
  s.weights_note.clear();
}

Status open_checkpoint(AppState& s, const std::string& path, const CheckpointInfo* known) {
  if (!known) return open_model(s, path);  // through the one dispatcher, which reads and checks the file
  const CheckpointInfo& info = *known;
  forget_token_choices(s);
  s.checkpoint = path;
  s.checkpoint_info = info;
  s.weights_mode = WeightsMode::Trained;
  s.pretrained.reset();
  s.pretrained_dir.clear();
  s.session.reset();               // the file asked for wins over a model trained in this session
  s.follow_training = false;       // ...and over the snapshots of one still running
  if (info.weights) {  // the one config from weights (config_for_weights), at the file's own context
    s.cfg.context = kMaxContext;
    s.cfg = config_for_weights(*info.weights, s.cfg);
  } else {
    s.cfg.d_model = info.d_model;
    s.cfg.num_heads = info.num_heads;
    s.cfg.num_kv_heads = 0;
    s.cfg.num_layers = info.num_layers;
    s.cfg.context = std::min(info.context, kMaxContext);
    s.cfg.pitfalls.no_w_o = info.no_w_o;
  }
  s.status_lines.push_back("Opened " + path + " at its own size: D=" + std::to_string(info.d_model) + ", H=" +
                           std::to_string(info.num_heads) + ", L=" + std::to_string(info.num_layers) + ", context " +
                           std::to_string(info.context) + (info.no_w_o ? ", without W_O" : ""));
  return Status();
}

constexpr EnumName<CenterPanel> kCenterPanels[] = {{CenterPanel::Heads, "heads"},       {CenterPanel::Focus, "focus"},
                                                   {CenterPanel::Model, "model"},       {CenterPanel::Passport, "passport"},
                                                   {CenterPanel::Training, "training"}, {CenterPanel::Compare, "compare"},
                                                   {CenterPanel::Input, "input"},       {CenterPanel::Contrib, "contrib"}};
const char* center_panel_name(CenterPanel p) { return enum_name(kCenterPanels, p); }
bool parse_center_panel(const std::string& name, CenterPanel* out) { return parse_enum_name(name, kCenterPanels, out); }

constexpr EnumName<ContribView> kContribViews[] = {
    {ContribView::Rollout, "rollout"}, {ContribView::Patching, "patching"}, {ContribView::Detectors, "detectors"}, {ContribView::Lens, "lens"},
    {ContribView::Overview, "overview"}, {ContribView::Offsets, "offsets"}, {ContribView::Circuits, "circuits"}, {ContribView::Corpus, "corpus"}};
const char* contrib_view_name(ContribView v) { return enum_name(kContribViews, v); }
bool parse_contrib_view(const std::string& name, ContribView* out) { return parse_enum_name(name, kContribViews, out); }

constexpr EnumName<Normalisation> kNormalisations[] = {{Normalisation::PerHead, "head"},
                                                       {Normalisation::PerLayer, "layer"},
                                                       {Normalisation::Global, "global"},
                                                       {Normalisation::Absolute, "absolute"}};
const char* normalisation_name(Normalisation n) { return enum_name(kNormalisations, n); }
bool parse_normalisation(const std::string& name, Normalisation* out) { return parse_enum_name(name, kNormalisations, out); }

bool encoder_model(const AppState& s) {
  if (s.result && s.result->fwd && s.result->fwd->weights) return s.result->fwd->weights->arch.encoder();
  return s.pretrained && s.pretrained->arch.encoder();
}

void keep_masks_on_their_tokens(AppState& s) {
  const bool changed = s.text != s.masks_text || s.pair_text != s.masks_pair;
  if (!s.masked.empty() && changed) {
    const ModelWeights* w = s.pretrained && s.pretrained->arch.encoder() ? s.pretrained.get() : nullptr;
    const size_t before_n = s.masked.size();
    if (!w) {
      s.masked.clear();
    } else {
      auto tokens_of = [&](const std::string& text, const std::string& pair) {
        BatchExtras ex;
        const std::vector<std::string> lines = split_lines(text);
        if (!pair.empty()) ex.pairs.assign(lines.size(), pair);
        return make_batch(lines, s.cfg, *w, &ex);  // no masks: the tokens themselves
      };
      const Batch was = tokens_of(s.masks_text, s.masks_pair), now = tokens_of(s.text, s.pair_text);
      s.masked.erase(std::remove_if(s.masked.begin(), s.masked.end(),
                                    [&](const std::pair<int, int>& m) {
                                      const auto [b, t] = m;
                                      if (b < 0 || b >= was.B() || b >= now.B() || was.lengths[b] != now.lengths[b] || t < 0 ||
                                          t >= now.lengths[b])
                                        return true;
                                      return was.sentences[b].tokens[t].id != now.sentences[b].tokens[t].id;
                                    }),
                     s.masked.end());
    }
    if (s.masked.size() < before_n)
      s.status_lines.push_back(std::to_string(before_n - s.masked.size()) + " masked word" + (before_n - s.masked.size() == 1 ? "" : "s") +
                               " unmasked: the text changed under " + (before_n - s.masked.size() == 1 ? "it." : "them."));
  }
  s.masks_text = s.text;
  s.masks_pair = s.pair_text;
}

// The one path from the state's weights (the sliders' choice, model_source.h) to a request's
// WeightsRef, for A (compute_request) and for B = A's model with another H (compare_side):
// `cfg`'s context is clipped to the positions the weights learned and its d_head set.
static WeightsChoice choose_weights_into(const AppState& s, ModelConfig& cfg, WeightsRef& ref) {
  WeightsInputs in;
  in.mode = s.weights_mode;
  in.shipped = &s.shipped;
  in.user_checkpoint = s.checkpoint;
  in.user_info = s.checkpoint_info ? &*s.checkpoint_info : nullptr;
  in.session = s.session;
  in.pretrained = s.pretrained;
  const WeightsChoice w = choose_weights(cfg, in);
  ref.checkpoint = w.checkpoint;
  ref.loaded = w.loaded;
  ref.in_memory = w.in_memory;
  if (w.in_memory) ref.in_memory_id = s.session_id;
  // A trained model learned a fixed number of positions: longer text is truncated to them
  // (and the truncation is reported under the sentence).
  if (w.context_limit > 0) cfg.context = std::min(cfg.context, w.context_limit);
  // d_head is D/H unless a family's weights fix it (core/model/arch.h): random init and
  // GPT-2-style weights after such a model never keep its d_head.
  const bool family = s.pretrained && w.in_memory == s.pretrained && s.pretrained->arch.fixed_heads();
  cfg.head_dim = family ? s.pretrained->arch.head_dim : 0;
  return w;
}

ComputeRequest compute_request(const AppState& s, std::string* weights_note) {
  ComputeRequest r;
  r.lines = split_lines(s.text);
  if (!s.pair_text.empty()) r.extras.pairs.assign(r.lines.size(), s.pair_text);  // the core uses them for encoders only
  r.extras.masked = s.masked;
  r.cfg = s.cfg;
  const WeightsChoice w = choose_weights_into(s, r.cfg, r.weights);
  if (weights_note) *weights_note = w.note;
  // Heads switched off that exist in this config, in (layer, head) order (std::set's).
  for (const HeadId& id : s.ablated)
    if (id.layer >= 0 && id.layer < s.cfg.num_layers && id.head >= 0 && id.head < s.cfg.num_heads) r.ablated.push_back(id);
  r.visible_layer = std::clamp(s.view.layer, 0, std::max(0, s.cfg.num_layers - 1));
  if (s.view.center == CenterPanel::Focus)
    r.trace = TraceRequest{std::clamp(s.view.layer, 0, std::max(0, s.cfg.num_layers - 1)), std::max(0, s.view.batch),
                           std::clamp(s.view.head, 0, std::max(0, s.cfg.num_heads - 1))};
  r.compare = s.view.center == CenterPanel::Compare && s.cfg.pitfalls.any() && s.compare_b.kind == CompareKind::Correct;
  if (s.view.center == CenterPanel::Compare)
    if (std::optional<Result<CompareSideRequest>> b = compare_side(s); b && *b) r.compare_b = **b;
  r.attribution = s.attribute;
  r.value_weighted = s.view.value_weighted;
  r.bf16_products = s.view.bf16_products;
  r.int8_products = s.view.int8_products;
  // The Contributions tab: each view's work only while it is visible (the detectors' also
  // once opened, for the heads grid's marks).
  const ContribState& c = s.contrib;
  const bool contrib = s.view.center == CenterPanel::Contrib;
  const int batch = std::max(0, s.view.batch);
  if (contrib && c.view == ContribView::Rollout) r.rollout = RolloutRequest{batch, c.rollout_head};
  if (contrib && c.view == ContribView::Overview) r.overview = OverviewRequest{batch};
  if (contrib && c.view == ContribView::Offsets) r.offsets = OffsetsRequest{batch};
  if (contrib && c.view == ContribView::Circuits)
    r.circuits = CircuitsRequest{batch, std::clamp(s.view.layer, 0, std::max(0, s.cfg.num_layers - 1)), std::clamp(s.view.head, 0, std::max(0, s.cfg.num_heads - 1))};
  if (contrib && c.view == ContribView::Lens) r.lens = LensRequest{batch, c.lens_target, std::clamp(c.lens_k, 1, kLensMaxTopK)};
  if (c.detectors_on || (contrib && c.view == ContribView::Detectors))
    r.detectors = DetectorRequest{batch, c.detector, c.detector == Detector::Painted ? c.painted : std::vector<float>{}};
  if (contrib && c.view == ContribView::Patching && c.patch_run && !r.lines.empty())
    r.patch = PatchRequest{r.lines[std::min<size_t>(batch, r.lines.size() - 1)], c.corrupted,
                           c.patch_position >= 0 ? c.patch_position : s.selected_token,  // -1: the clicked chip, else where the runs differ most
                           c.patch_token_a, c.patch_token_b, c.patch_head};
  return r;
}

std::optional<Result<CompareSideRequest>> compare_side(const AppState& s) {
  const CompareSource& c = s.compare_b;
  CompareSideRequest b;
  auto from_checkpoint = [&](const CheckpointInfo& info, const std::string& label) -> Result<CompareSideRequest> {
    b.cfg = s.cfg;
    b.cfg.pitfalls = Pitfalls{};
    b.cfg.pitfalls.no_w_o = info.no_w_o;  // as it was trained
    b.cfg.d_model = info.d_model;
    b.cfg.num_heads = info.num_heads;
    b.cfg.num_kv_heads = 0;
    b.cfg.num_layers = info.num_layers;
    b.cfg.context = std::min(s.cfg.context, info.context);
    b.cfg.head_dim = 0;
    b.weights.checkpoint = info.path;
    b.weights.loaded = info.weights;
    b.label = label;
    if (Status st = validate(b.cfg); !st) return st.error();
    return b;
  };
  switch (c.kind) {
    case CompareKind::Correct: return std::nullopt;
    case CompareKind::OtherHeads: {
      b.cfg = s.cfg;
      b.cfg.num_heads = c.num_heads;
      b.cfg.num_kv_heads = 0;
      if (Status st = validate(b.cfg); !st) return Result<CompareSideRequest>(st.error());
      choose_weights_into(s, b.cfg, b.weights);
      b.label = "num_heads " + std::to_string(c.num_heads);
      return Result<CompareSideRequest>(b);
    }
    case CompareKind::Shipped:
      if (c.shipped < 0 || c.shipped >= static_cast<int>(s.shipped.size()))
        return Result<CompareSideRequest>(Error{ErrorKind::InvalidArgument, "No such shipped checkpoint."});
      return from_checkpoint(s.shipped[c.shipped], "shipped " + std::filesystem::path(s.shipped[c.shipped].path).stem().string());
    case CompareKind::File: {
      if (!c.file_weights)
        return Result<CompareSideRequest>(Error{ErrorKind::InvalidArgument, !c.error.empty() ? c.error
                                                                            : !c.loading.empty() ? "Reading " + c.loading + "..."
                                                                                                 : "Type a model directory's or a checkpoint's path and press Read."});
      // B's own config from its weights (config_for_weights, as File > Open sets A's): its
      // family's heads, d_head, causal or not, at the positions it learned; no pitfall.
      ModelConfig base;
      base.seed = s.cfg.seed;
      base.tokenizer = s.cfg.tokenizer;
      base.context = kMaxContext;
      b.cfg = config_for_weights(*c.file_weights, base);
      b.weights.in_memory = c.file_weights;
      const std::filesystem::path p(c.file_path);
      b.label = (p.has_filename() ? p.filename() : p.parent_path().filename()).string();
      if (Status st = validate(b.cfg); !st) return Result<CompareSideRequest>(st.error());
      return Result<CompareSideRequest>(b);
    }
  }
  return std::nullopt;
}

void request_compare_file(AppState& s, const std::string& path) {
  CompareSource& c = s.compare_b;
  c.kind = CompareKind::File;
  c.path = path;
  c.load_request = path;
  c.error.clear();
}

void adopt_compare_file(AppState& s, const std::string& path, const Result<std::shared_ptr<const ModelWeights>>& w) {
  CompareSource& c = s.compare_b;
  c.loading.clear();
  if (!w) {  // the previous B stays
    c.error = w.error().message;
    print_message("headmap", c.error);
    return;
  }
  c.file_weights = *w;
  c.file_path = path;
  c.error.clear();
  s.status_lines.push_back("Compare: B is " + describe_source(**w, config_for_weights(**w, ModelConfig{})));
}

// The bytes a model's weights hold in memory: its matrices and tables, as kept (packed,
// 16-bit, in a file's blocks or float32); the vectors (norms, biases) are small beside them and left out.
static uint64_t weights_held_bytes(const ModelWeights& w) {
  auto m = [](const auto& x) { return static_cast<uint64_t>(x.size()) * sizeof(float); };
  uint64_t n = m(w.tok_emb) + m(w.pos_emb) + m(w.lm_head) + m(w.type_emb) + m(w.mlm_dense) +
               w.tok_emb16.bytes() + w.lm_head16.bytes();
  for (const LayerWeights& l : w.layers)
    n += m(l.w_q) + m(l.w_k) + m(l.w_v) + l.w_o.bytes() + l.w_fc.bytes() + l.w_proj.bytes() + l.w_gate.bytes() + l.w_qkv.bytes();
  return n;
}

uint64_t compare_held_bytes(const AppState& s) {
  const ModelWeights* a = s.result && s.result->fwd && s.result->fwd->weights ? s.result->fwd->weights.get() : s.pretrained.get();
  const ModelWeights* b = s.compare_b.file_weights.get();
  return (a ? weights_held_bytes(*a) : 0) + (b && b != a ? weights_held_bytes(*b) : 0);
}

bool detector_marked(const AppState& s, int layer, int head) {
  const ComputeResult* res = s.result.get();
  if (!s.contrib.detectors_on || !res || !res->fwd || !res->request.detectors || res->detector_scores.empty()) return false;
  const int Hw = res->fwd->out.Hw;
  const size_t i = static_cast<size_t>(layer) * Hw + head;
  return head >= 0 && head < Hw && layer >= 0 && i < res->detector_scores.size() && res->detector_scores[i] >= s.contrib.threshold;
}

TrainOptions train_options(const AppState& s, int d, int h, int l, int steps) {
  TrainOptions o;
  o.d_model = d;
  o.num_heads = h;
  o.num_layers = l;
  o.steps = steps;
  o.batch = s.train_batch;
  o.seq = s.train_seq;
  o.warmup = std::max(1, std::min(200, steps / 10));
  o.eval_every = std::max(5, steps / 12);
  o.progress_every = std::clamp(steps / 150, 1, 20);  // the bar and the ETA move at least every 20 steps
  return o;
}

Result<TrainJob> train_this_configuration(const AppState& s) {
  if (Status st = trainable_kv_heads(s.cfg.num_heads, s.cfg.num_kv_heads); !st) return st.error();
  TrainJob job;
  job.corpus_path = s.corpus_path;
  TrainOptions o = train_options(s, s.cfg.d_model, s.cfg.num_heads, s.cfg.num_layers, s.train_steps);
  o.no_w_o = s.cfg.pitfalls.no_w_o;
  o.seed = s.cfg.seed;
  job.runs.push_back(o);
  job.labels.push_back("train");
  job.follow = true;
  return job;
}

TrainJob compare_heads_job(const AppState& s) {
  TrainJob job;
  job.corpus_path = s.corpus_path;
  for (int h : {1, 4, 8}) {
    job.runs.push_back(train_options(s, 64, h, 2, s.compare_steps));
    job.labels.push_back("H = " + std::to_string(h));
  }
  job.follow = false;
  return job;
}

std::string compare_steps_note(int compare_steps) {
  if (compare_steps >= kCompareStepsThatPart) return "";
  char note[200];
  std::snprintf(note, sizeof note,
                "At %d steps each the runs end close together and their curves lie on top of each other; "
                "H = 1, 4 and 8 part from about %d,%03d steps each.",
                compare_steps, kCompareStepsThatPart / 1000, kCompareStepsThatPart % 1000);
  return note;
}

Status show_trained_run(AppState& s, int run) {
  const TrainStatus& t = s.training;
  if (run < 0 || run >= static_cast<int>(t.run_weights.size()) || !t.run_weights[static_cast<size_t>(run)])
    return Error{ErrorKind::InvalidArgument, "Run " + std::to_string(run) + " of the last training has not finished."};
  const std::shared_ptr<const ModelWeights>& w = t.run_weights[static_cast<size_t>(run)];
  s.session = w;
  ++s.session_id;
  s.follow_training = false;  // a running training's snapshots would replace it
  s.weights_mode = WeightsMode::Trained;
  s.pretrained.reset();
  s.pretrained_dir.clear();
  s.cfg = config_for_weights(*w, s.cfg);
  s.view.center = CenterPanel::Heads;
  s.status_lines.push_back("Showing the heads of " + (run < static_cast<int>(t.labels.size()) ? t.labels[static_cast<size_t>(run)] : "run " + std::to_string(run)) +
                           ": " + describe_source(*w, s.cfg));
  return Status();
}

TrainJob compare_w_o_job(const AppState& s) {
  TrainJob job;
  job.corpus_path = s.corpus_path;
  for (bool no_wo : {false, true}) {
    TrainOptions o = train_options(s, 64, 4, 2, s.compare_steps);
    o.no_w_o = no_wo;
    job.runs.push_back(o);
    job.labels.push_back(no_wo ? "without W_O" : "with W_O");
  }
  job.follow = false;
  return job;
}

}  // namespace headmap
