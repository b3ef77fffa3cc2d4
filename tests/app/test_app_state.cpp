// The GUI's plain state without a window: the one request builder, the dialogs' actions
// and the scripted settings (no GL, no Dear ImGui, no display).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <set>
#include <string>

#include <stb_image.h>

#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <tuple>

#include "app/common/heatmap_svg.h"
#include "app/gui/app_state.h"
#include "app/gui/commands.h"
#include "app/gui/dialogs.h"
#include "app/gui/presets.h"
#include "app/gui/text_wrap.h"
#include "app/gui/workers/compute_worker.h"
#include "app/script/settings_table.h"
#include "core/train/english.h"
#include "core/io/checkpoint.h"

namespace fs = std::filesystem;
using namespace headmap;

namespace {

fs::path tmp_dir() {
  static fs::path d = [] {
    fs::path p = fs::temp_directory_path() / ("headmap-app-" + std::to_string(::getpid()));
    fs::create_directories(p);
    return p;
  }();
  return d;
}

AppState random_state() {
  AppState s;
  s.weights_mode = WeightsMode::Random;
  s.text = "The cat sat on the mat.";
  return s;
}

}  // namespace

// Ablation is kept by (layer, head): (1, 0) is the head off at H = 4, at H = 8 and back.
TEST(Request, AblationKeepsItsHeadWhenHeadsChange) {
  AppState s = random_state();
  s.cfg.num_layers = 2;
  s.cfg.num_heads = 4;
  s.ablated.insert(HeadId{1, 0});
  for (int H : {4, 8, 4}) {
    s.cfg.num_heads = H;
    const ComputeRequest r = compute_request(s);
    ASSERT_EQ(r.ablated.size(), 1u) << "H = " << H;
    EXPECT_EQ(r.ablated[0], (HeadId{1, 0})) << "H = " << H;
    const std::vector<uint8_t> mask = r.ablation_mask();  // (L*H)
    ASSERT_EQ(mask.size(), static_cast<size_t>(2 * H));
    for (int i = 0; i < 2 * H; ++i) EXPECT_EQ(mask[i], i == H ? 1 : 0) << "H = " << H << ", index " << i;
  }
  // A head beyond the config is kept in the state, not sent, and comes back with it.
  s.cfg.num_heads = 8;
  s.ablated.insert(HeadId{0, 6});
  EXPECT_EQ(compute_request(s).ablated.size(), 2u);
  s.cfg.num_heads = 4;
  EXPECT_EQ(compute_request(s).ablated.size(), 1u);
  s.cfg.num_heads = 8;
  EXPECT_EQ(compute_request(s).ablated.size(), 2u);
}

// The Focus step-through is asked for only while Focus is visible.
TEST(Request, TraceOnlyWhileFocusIsVisible) {
  AppState s = random_state();
  s.view.head = 2;
  EXPECT_FALSE(compute_request(s).trace.has_value());
  s.view.center = CenterPanel::Focus;
  const ComputeRequest r = compute_request(s);
  ASSERT_TRUE(r.trace.has_value());
  EXPECT_EQ(r.trace->head, 2);
}

// Requests are values: equal states give equal requests and hashes; any input changes them.
// The correct model runs beside a pitfall only while the Compare tab shows them.
TEST(Request, ComparisonOnlyWhileCompareIsVisibleWithAPitfall) {
  AppState s = random_state();
  s.view.center = CenterPanel::Compare;
  EXPECT_FALSE(compute_request(s).compare) << "no pitfall: nothing to compare";
  ASSERT_TRUE(apply_setting(s, "pitfall=scale-d-model=on").ok());
  EXPECT_TRUE(s.cfg.pitfalls.scale_by_d_model);
  const ComputeRequest with = compute_request(s);
  EXPECT_TRUE(with.compare);
  s.view.center = CenterPanel::Heads;
  const ComputeRequest without = compute_request(s);
  EXPECT_FALSE(without.compare);
  EXPECT_TRUE(with.same_forward(without)) << "the pitfall's own forward pass is shared";
  EXPECT_FALSE(with == without);
  EXPECT_NE(with.hash(), without.hash());
  EXPECT_FALSE(apply_setting(s, "pitfall=no-such=on").ok());
}

TEST(Request, ComparedAndHashedAsValues) {
  const AppState s = random_state();
  const ComputeRequest a = compute_request(s), b = compute_request(s);
  EXPECT_TRUE(a == b);
  EXPECT_EQ(a.hash(), b.hash());
  AppState t = s;
  t.text += " It was tired.";
  EXPECT_FALSE(compute_request(t) == a);
  EXPECT_NE(compute_request(t).forward_hash(), a.forward_hash());
  t = s;
  t.cfg.causal = false;
  EXPECT_FALSE(compute_request(t).same_forward(a));
  t = s;
  t.view.center = CenterPanel::Focus;  // only the trace differs: the same forward pass
  EXPECT_TRUE(compute_request(t).same_forward(a));
  EXPECT_FALSE(compute_request(t) == a);
}

// A view file saved by the dialog's action opens again as the same figure.
TEST(Dialogs, SaveAndOpenAView) {
  AppState s = random_state();
  s.cfg.d_model = 96;
  s.cfg.num_heads = 6;
  s.view.head = 5;
  s.view.colormap = Colormap::Magma;
  const std::string path = (tmp_dir() / "view.json").string();
  ASSERT_TRUE(run_dialog_action(Dialog::SaveView, path, s).ok());
  AppState t;
  ASSERT_TRUE(run_dialog_action(Dialog::OpenView, path, t).ok());
  EXPECT_EQ(t.text, s.text);
  EXPECT_TRUE(t.cfg == s.cfg);
  EXPECT_EQ(t.view.head, 5);
  EXPECT_EQ(t.view.colormap, Colormap::Magma);
  EXPECT_EQ(t.status_lines.back(), "Opened " + path);
}

// Refusals leave the state as it was and say why.
TEST(Dialogs, RefusalsLeaveTheStateUntouched) {
  AppState s = random_state();
  const std::string not_ckpt = (tmp_dir() / "not.safetensors").string();
  std::ofstream(not_ckpt) << "hello";
  const Status open = run_dialog_action(Dialog::OpenCheckpoint, not_ckpt, s);
  ASSERT_FALSE(open.ok());
  EXPECT_TRUE(s.checkpoint.empty());
  EXPECT_EQ(s.weights_mode, WeightsMode::Random);
  const Status exp = run_dialog_action(Dialog::ExportJson, (tmp_dir() / "a.json").string(), s);
  ASSERT_FALSE(exp.ok());
  EXPECT_EQ(exp.error().message, "Nothing to export yet.");
  EXPECT_FALSE(fs::exists(tmp_dir() / "a.json"));
  const Status save = run_dialog_action(Dialog::SaveCheckpoint, (tmp_dir() / "m.safetensors").string(), s);
  EXPECT_FALSE(save.ok());
  EXPECT_TRUE(s.status_lines.empty());
}

// Scripted settings: one table; README lists every key.
TEST(ScriptedSettings, ReadmeListsEveryKey) {
  std::ifstream f(HEADMAP_README);
  ASSERT_TRUE(f) << HEADMAP_README;
  std::stringstream ss;
  ss << f.rdbuf();
  const std::string readme = ss.str();
  for (const ScriptedSetting& st : scripted_settings())
    EXPECT_NE(readme.find(std::string("`") + st.key + "="), std::string::npos) << "README does not list --then " << st.key;
}

TEST(ScriptedSettings, ApplyAsTheControlsWould) {
  AppState s = random_state();
  ASSERT_TRUE(apply_setting(s, "heads=8").ok());
  EXPECT_EQ(s.cfg.num_heads, 8);
  ASSERT_TRUE(apply_setting(s, "ablate=1,7").ok());
  EXPECT_EQ(s.ablated.count(HeadId{1, 7}), 1u);
  EXPECT_FALSE(apply_setting(s, "ablate=1,8").ok());
  EXPECT_FALSE(apply_setting(s, "heads=many").ok());
  EXPECT_EQ(s.cfg.num_heads, 8);
  EXPECT_FALSE(apply_setting(s, "volume=11").ok());
  EXPECT_FALSE(apply_setting(s, "heads").ok());
  ASSERT_TRUE(apply_setting(s, "panel=focus").ok());
  EXPECT_EQ(s.view.center, CenterPanel::Focus);
}

// ---- saved state that reopens the same -------------------------------------------------
namespace {
fs::path shipped_dir() { return fs::path(HEADMAP_README).parent_path() / "assets" / "checkpoints"; }
}  // namespace

// File > Open checkpoint opens at the checkpoint's own D, H, L and context, and says so.
TEST(Dialogs, OpenCheckpointAtItsOwnSize) {
  AppState s = random_state();
  s.cfg.num_kv_heads = 2;
  const std::string h8 = (shipped_dir() / "d128-h8-l2.safetensors").string();
  ASSERT_TRUE(run_dialog_action(Dialog::OpenCheckpoint, h8, s).ok());
  EXPECT_EQ(s.cfg.d_model, 128);
  EXPECT_EQ(s.cfg.num_heads, 8);
  EXPECT_EQ(s.cfg.num_kv_heads, 0);
  EXPECT_EQ(s.cfg.num_layers, 2);
  EXPECT_EQ(s.weights_mode, WeightsMode::Trained);
  EXPECT_EQ(compute_request(s).weights.checkpoint, h8);
  ASSERT_FALSE(s.status_lines.empty());
  EXPECT_NE(s.status_lines.back().find("D=128, H=8, L=2"), std::string::npos) << s.status_lines.back();
}

// A view records where its weights came from and reopens on the same ones: random init with
// its seed, a checkpoint file, a shipped checkpoint by name. A checkpoint file the view names
// is asked about first (issue 35) and read on the person's Open, as the app's model loader
// reads it; a missing or corrupt one is then a message, and the current state is kept.
// The app's Open: the asked path read as the model loader reads it, the view's config over it.
static Status answer_open(AppState& t) {
  if (!t.ask_open_model) return Status();
  answer_open_model(t, true);
  const std::string p = std::move(t.open_model_request);
  t.open_model_request.clear();
  const auto after = t.after_open;
  t.after_open.reset();
  if (Status s = open_model(t, p); !s) return s;
  if (after) t.cfg = after->cfg, t.weights_mode = after->mode, t.view = after->view, t.selected_token = after->selected_token;
  return Status();
}

TEST(Dialogs, ViewFilesReopenOnTheSameWeights) {
  const std::vector<CheckpointInfo> shipped = scan_checkpoints(shipped_dir().string());
  ASSERT_GE(shipped.size(), 2u);
  const std::string path = (tmp_dir() / "weights.headmap.json").string();
  auto reopen = [&](AppState saved) {
    AppState t;  // a fresh app: trained mode, the shipped list, nothing opened
    t.shipped = shipped;
    EXPECT_TRUE(run_dialog_action(Dialog::SaveView, path, saved).ok());
    const Status st = run_dialog_action(Dialog::OpenView, path, t);
    EXPECT_TRUE(st.ok()) << (st.ok() ? "" : st.error().message);
    const Status opened = answer_open(t);
    EXPECT_TRUE(opened.ok()) << (opened.ok() ? "" : opened.error().message);
    EXPECT_TRUE(t.cfg == saved.cfg);
    EXPECT_EQ(t.weights_mode, saved.weights_mode);
    EXPECT_TRUE(compute_request(t).weights == compute_request(saved).weights);
    return t;
  };
  // Random init, seed 99.
  AppState r = random_state();
  r.shipped = shipped;
  r.cfg.seed = 99;
  r.cfg.num_kv_heads = 2;
  const AppState r2 = reopen(r);
  EXPECT_EQ(r2.weights_mode, WeightsMode::Random);
  EXPECT_EQ(r2.cfg.seed, 99u);
  // A checkpoint the user opened: its file, even where a shipped one of the same size exists.
  const std::string user = (tmp_dir() / "mine.safetensors").string();
  fs::copy_file(shipped_dir() / "d128-h2-l2.safetensors", user, fs::copy_options::overwrite_existing);
  AppState c = random_state();
  c.shipped = shipped;
  ASSERT_TRUE(open_checkpoint(c, user).ok());
  c.cfg.num_heads = 4;  // re-sliced: the view keeps the slice and the file
  const AppState c2 = reopen(c);
  EXPECT_EQ(c2.checkpoint, fs::absolute(user).lexically_normal().string());
  EXPECT_EQ(compute_request(c2).weights.checkpoint, c2.checkpoint);
  // A shipped checkpoint: the default re-sliced to the sliders' H, or the one trained for it.
  AppState k;
  k.shipped = shipped;
  k.text = "The cat sat on the mat.";
  k.cfg.d_model = 128;
  k.cfg.num_heads = 8;
  k.cfg.num_layers = 2;
  EXPECT_EQ(fs::path(compute_request(reopen(k)).weights.checkpoint).filename(), "d128-h4-l2.safetensors");
  k.weights_mode = WeightsMode::TrainedForH;
  const AppState k2 = reopen(k);
  EXPECT_EQ(k2.weights_mode, WeightsMode::TrainedForH);
  EXPECT_EQ(fs::path(compute_request(k2).weights.checkpoint).filename(), "d128-h8-l2.safetensors");
  // A view saved when "trained" picked the file trained for its H opens on that file.
  std::ifstream in(path);
  std::string old_view((std::istreambuf_iterator<char>(in)), {});
  const size_t at = old_view.find("\"trained_for_h\"");
  ASSERT_NE(at, std::string::npos) << old_view;
  old_view.replace(at, 15, "\"trained\"");
  std::ofstream(path) << old_view;
  AppState old = random_state();
  old.shipped = shipped;
  ASSERT_TRUE(run_dialog_action(Dialog::OpenView, path, old).ok());
  EXPECT_EQ(old.weights_mode, WeightsMode::TrainedForH);
  EXPECT_EQ(fs::path(compute_request(old).weights.checkpoint).filename(), "d128-h8-l2.safetensors");

  // The view names a checkpoint that has gone, then one that is corrupt: asked about, then
  // its read refused with a message naming it; the model and config stay as they were.
  ASSERT_TRUE(run_dialog_action(Dialog::SaveView, path, c).ok());
  AppState before = random_state();
  before.shipped = shipped;
  before.cfg.seed = 5;
  for (const char* what : {"missing", "corrupt"}) {
    SCOPED_TRACE(what);
    if (std::string(what) == "missing") fs::remove(user);
    else std::ofstream(user, std::ios::binary) << "not a checkpoint";
    AppState t = before;
    ASSERT_TRUE(run_dialog_action(Dialog::OpenView, path, t).ok());
    ASSERT_TRUE(t.ask_open_model.has_value());
    EXPECT_TRUE(t.cfg == before.cfg);
    const Status st = answer_open(t);
    ASSERT_FALSE(st.ok());
    EXPECT_NE(st.error().message.find("mine.safetensors"), std::string::npos) << st.error().message;
    EXPECT_TRUE(t.cfg == before.cfg);
    EXPECT_EQ(t.weights_mode, WeightsMode::Random);
    EXPECT_TRUE(t.checkpoint.empty());
  }
}

// The KV heads setting and the trainer's refusal of K/V sharing.
TEST(ScriptedSettings, KvHeadsAndTheTrainersRefusal) {
  AppState s = random_state();
  s.cfg.num_heads = 8;
  ASSERT_TRUE(apply_setting(s, "kv_heads=2").ok());
  EXPECT_EQ(s.cfg.kv_heads(), 2);
  EXPECT_FALSE(apply_setting(s, "kv_heads=0").ok());
  EXPECT_EQ(s.cfg.kv_heads(), 2);
  const Status train = apply_setting(s, "train=1");
  ASSERT_FALSE(train.ok());
  EXPECT_NE(train.error().message.find("multi-head attention only"), std::string::npos) << train.error().message;
  EXPECT_FALSE(s.train_request.has_value());
  ASSERT_TRUE(apply_setting(s, "kv_heads=8").ok());
  EXPECT_EQ(s.cfg.num_kv_heads, 0);  // kv = H: plain multi-head, which follows H
  EXPECT_TRUE(apply_setting(s, "train=1").ok());
  EXPECT_TRUE(s.train_request.has_value());
}

// One meaning for num_heads (issue 22): "trained" re-slices the weights it opened on, the
// shipped default as headmap-cli runs it, at any H; "trained for this H" reaches the
// family trained separately (H = 1, 2, 8, and 4 without W_O) by its D, H, L and W_O switch.
TEST(Request, TrainedWeightsAreReslicedAndTheFamilyIsReachedByName) {
  AppState s;
  s.shipped = scan_checkpoints(shipped_dir().string());
  ASSERT_EQ(s.shipped.size(), 5u);
  s.text = "The cat sat on the mat.";
  s.cfg.d_model = 128;
  s.cfg.num_layers = 2;
  const auto picked = [&](int heads) {
    s.cfg.num_heads = heads;
    std::string note;
    const std::string file = fs::path(compute_request(s, &note).weights.checkpoint).filename().string();
    return std::make_pair(file, note);
  };
  for (int h : {1, 2, 4, 8, 16}) {
    EXPECT_EQ(picked(h).first, "d128-h4-l2.safetensors") << "trained, H = " << h;
    EXPECT_EQ(picked(h).second, "") << "trained, H = " << h;
  }
  s.weights_mode = WeightsMode::TrainedForH;
  EXPECT_EQ(picked(1).first, "d128-h1-l2.safetensors");
  EXPECT_EQ(picked(2).first, "d128-h2-l2.safetensors");
  EXPECT_EQ(picked(4).first, "d128-h4-l2.safetensors");
  EXPECT_EQ(picked(8).first, "d128-h8-l2.safetensors");
  EXPECT_EQ(picked(8).second, "");
  s.cfg.pitfalls.no_w_o = true;
  EXPECT_EQ(picked(4).first, "d128-h4-l2-no-wo.safetensors");
  s.cfg.pitfalls.no_w_o = false;
  // No training for this H: the trained weights re-sliced, and a note that says so.
  const auto [file, note] = picked(16);
  EXPECT_EQ(file, "d128-h4-l2.safetensors");
  EXPECT_NE(note.find("H = 16"), std::string::npos) << note;
  EXPECT_NE(note.find("trained: H = 1, 2, 4 without W_O, 4, 8"), std::string::npos) << note;
  // A checkpoint the user opened: re-sliced by "trained", used by "trained for this H" at its own H only.
  ASSERT_TRUE(open_checkpoint(s, (shipped_dir() / "d128-h2-l2.safetensors").string()).ok());
  s.weights_mode = WeightsMode::Trained;
  EXPECT_EQ(picked(8).first, "d128-h2-l2.safetensors");
  s.weights_mode = WeightsMode::TrainedForH;
  EXPECT_EQ(picked(2).first, "d128-h2-l2.safetensors");
  EXPECT_EQ(picked(8).first, "d128-h8-l2.safetensors");
  // The scripted setting and the view files spell the choice the same way.
  ASSERT_TRUE(apply_setting(s, "weights=trained").ok());
  EXPECT_EQ(s.weights_mode, WeightsMode::Trained);
  ASSERT_TRUE(apply_setting(s, "weights=trained_for_h").ok());
  EXPECT_EQ(s.weights_mode, WeightsMode::TrainedForH);
  const Status bad = apply_setting(s, "weights=trained-for-h");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("trained_for_h"), std::string::npos) << bad.error().message;
}

// The weights' source line wrapped inside a number ("loss 3." / "04)"): the last piece had
// no ", " after it, yet was allowed the width of one, and Dear ImGui's own wrapping then
// broke it after the '.'. At every width, each line fits (unless one word alone cannot),
// no break falls inside a number, and the lines read back as the text.
TEST(TextWrap, NeverBreaksInsideANumberAndEveryLineFits) {
  const MeasureText measure = [](std::string_view t) { return 7.0f * static_cast<float>(t.size()); };  // 7 px a byte
  const std::vector<std::string> texts = {
      "re-sliced from the H=4 training: trained (D=128, H=4, L=2, 5000 steps, loss 3.04)",
      "trained (D=128, H=8, L=2, 1500 steps, loss 4.53)",
      "re-sliced to H=6: gpt2-tiny from ~/a/very/long/path/to/models/gpt2-tiny-0.125: D=48, H=4, L=3, 12,345,678 parameters"};
  const auto digit = [](char c) { return c >= '0' && c <= '9'; };
  const auto numeric = [&](char c) { return digit(c) || c == '.' || c == ','; };
  for (const std::string& text : texts)
    for (float width = 35; width <= 7.0f * text.size() + 14; width += 7) {
      SCOPED_TRACE(text + " at " + std::to_string(width));
      const std::vector<std::string> lines = wrap_at_breaks(text, width, measure);
      ASSERT_FALSE(lines.empty());
      size_t pos = 0;  // where each line starts in the text: the lines read back as the text
      for (size_t k = 0; k < lines.size(); ++k) {
        ASSERT_FALSE(lines[k].empty());
        EXPECT_NE(lines[k].back(), ' ') << lines[k];
        if (lines[k].find(' ') != std::string::npos) {
          EXPECT_LE(measure(lines[k]), width) << lines[k];
        }
        while (pos < text.size() && text[pos] == ' ') ++pos;
        ASSERT_EQ(text.compare(pos, lines[k].size(), lines[k]), 0) << "\"" << lines[k] << "\" at " << pos;
        pos += lines[k].size();
        if (k + 1 < lines.size() && pos < text.size() && text[pos] != ' ') {  // a break inside a word
          const char a = text[pos - 1], b = text[pos];
          EXPECT_FALSE((numeric(a) && digit(b)) || (digit(a) && numeric(b))) << "\"" << lines[k] << "\" / \"" << lines[k + 1] << "\"";
        }
      }
      while (pos < text.size() && text[pos] == ' ') ++pos;
      EXPECT_EQ(pos, text.size());
    }
  // Wide enough: one line; the source line's usual break is after ", ".
  EXPECT_EQ(wrap_at_breaks(texts[1], 1000, measure).size(), 1u);
  const std::vector<std::string> two = wrap_at_breaks(texts[1], 7.0f * 38, measure);
  ASSERT_EQ(two.size(), 2u);
  EXPECT_EQ(two[1], "loss 4.53)");
}

// ---- exports (issue 22) ----------------------------------------------------------------
namespace {
// The figures' font comes from the source tree's assets (as ctest gives the GUI tests),
// set before anything looks the data directory up.
const bool kSourceAssets = setenv("HEADMAP_DATA_DIR", fs::path(HEADMAP_README).parent_path().c_str(), 0) == 0;
// The state with its result, as the app holds it after the worker answered.
AppState computed_state(AppState s) {
  ComputeWorker worker([] {});
  const uint64_t seq = worker.request(compute_request(s));
  s.result = worker.wait_for(seq, std::chrono::seconds(60));
  return s;
}

AppState small_model() {
  AppState s = random_state();
  s.cfg.d_model = 32;
  s.cfg.num_heads = 2;
  s.cfg.num_layers = 2;
  return s;
}

// Runs f with the working directory set to dir.
template <class F>
void in_directory(const fs::path& dir, F f) {
  const fs::path before = fs::current_path();
  fs::create_directories(dir);
  fs::current_path(dir);
  f();
  fs::current_path(before);
}

std::string slurp(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(f)), {});
}

size_t count(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}
}  // namespace

// Every dialog that writes works with the name it proposes, a bare relative name that
// resolves against the working directory: "attention-npy" once failed with "Cannot create
// the directory : Invalid argument.".
TEST(Dialogs, EveryWritingDialogsProposedNameWorks) {
  AppState base = computed_state(small_model());
  ASSERT_TRUE(base.result && base.result->fwd);
  Result<ModelWeights> trained = load_checkpoint((shipped_dir() / "d128-h2-l2.safetensors").string());  // as a session's model, to save
  ASSERT_TRUE(trained.ok());
  base.session = std::make_shared<const ModelWeights>(std::move(trained).value());
  const fs::path cwd = tmp_dir() / "proposed-names";
  in_directory(cwd, [&] {
    for (Dialog d : {Dialog::SaveView, Dialog::SaveCheckpoint, Dialog::ExportNpy, Dialog::ExportJson, Dialog::ExportHeadPng, Dialog::ExportHeadSvg,
                     Dialog::ExportHeadsSvg}) {
      AppState s = base;
      const std::string name = dialog_default_path(d);
      SCOPED_TRACE(name);
      ASSERT_FALSE(name.empty());
      ASSERT_EQ(name.find('/'), std::string::npos) << "a bare name";
      const Status st = run_dialog_action(d, name, s);
      EXPECT_TRUE(st.ok()) << st.error().message;
      EXPECT_TRUE(fs::exists(cwd / name));
      ASSERT_FALSE(s.status_lines.empty());
      EXPECT_EQ(s.status_lines.back(), (d == Dialog::SaveView || d == Dialog::SaveCheckpoint ? "Saved " : "Wrote ") + name);
    }
    EXPECT_TRUE(fs::exists(cwd / "attention-npy" / "attention.npy"));
  });
}

// The scripted export keys ask for the dialog a user would open, with the path given (an
// empty one: the dialog's own name); the app opens it and presses OK.
TEST(ScriptedSettings, ExportKeysOpenTheDialogWithThePath) {
  AppState s = random_state();
  const std::pair<const char*, Dialog> cases[] = {{"export_heads=a.png", Dialog::ExportHeadsPng}, {"export_heads=a.SVG", Dialog::ExportHeadsSvg},
                                                  {"export_head=b.png", Dialog::ExportHeadPng},   {"export_head=b.svg", Dialog::ExportHeadSvg},
                                                  {"export_window=c.png", Dialog::ExportWindowPng}, {"export_npy=out", Dialog::ExportNpy},
                                                  {"save_view=v.json", Dialog::SaveView}};
  for (const auto& [key, d] : cases) {
    SCOPED_TRACE(key);
    s.dialog_request.reset();
    ASSERT_TRUE(apply_setting(s, key).ok());
    ASSERT_TRUE(s.dialog_request.has_value());
    EXPECT_EQ(s.dialog_request->dialog, d);
    EXPECT_EQ(s.dialog_request->path, std::string(key).substr(std::string(key).find('=') + 1));
  }
  ASSERT_TRUE(apply_setting(s, "export_npy=").ok());
  EXPECT_EQ(s.dialog_request->path, "attention-npy");
}

// Export this head, as PNG: the selected head large, every cell in the view's colormap at
// its weight over the head's peak (the per-head scale), masked cells in the app's grey, a
// label per token on both axes, the title and a colour bar.
TEST(Figures, HeadPngHasTheColormapTheMaskAndTheLabels) {
  AppState s = small_model();
  s.text = "one two three four five six seven eight";
  s.view.colormap = Colormap::Magma;
  s.view.layer = 1;
  s.view.head = 1;
  s = computed_state(s);
  ASSERT_TRUE(s.result && s.result->fwd);
  const ForwardData& f = *s.result->fwd;
  const int len = f.batch.lengths[0];
  ASSERT_EQ(len, 8);
  const fs::path path = tmp_dir() / "head.png";
  ASSERT_TRUE(run_dialog_action(Dialog::ExportHeadPng, path.string(), s).ok());

  Result<Figure> fig = dialog_figure(Dialog::ExportHeadPng, s);
  ASSERT_TRUE(fig.ok());
  EXPECT_NE(fig->title.find("layer 1"), std::string::npos) << fig->title;
  EXPECT_NE(fig->title.find("head 1"), std::string::npos) << fig->title;
  Font font;
  ASSERT_TRUE(load_figure_font(font).ok());
  Result<FigureLayout> lay = layout_figure(*fig, font);
  ASSERT_TRUE(lay.ok());
  EXPECT_GE(lay->map, 480) << "one head, large";
  EXPECT_EQ(lay->labelled.size(), 8u) << "8 large cells: every token labelled";
  size_t rows = 0, cols = 0;
  for (const FigureText& t : lay->texts) rows += t.role == FigureText::RowLabel, cols += t.role == FigureText::ColumnLabel;
  EXPECT_EQ(rows, 8u);
  EXPECT_EQ(cols, 8u);

  int w = 0, h = 0, n = 0;
  unsigned char* px = stbi_load(path.c_str(), &w, &h, &n, 3);
  ASSERT_NE(px, nullptr);
  EXPECT_EQ(w, lay->width);
  EXPECT_EQ(h, lay->height);
  const float* weights = f.out.weights(1, 0, 1);  // (T, T)
  const float peak = f.map_max[(static_cast<size_t>(1) * f.out.B + 0) * f.out.Hw + 1];
  const int x0 = lay->origins[0][0], y0 = lay->origins[0][1], cell = lay->cell;
  for (int t = 0; t < len; ++t)
    for (int k = 0; k < len; ++k) {
      const int x = x0 + k * cell + cell / 2, y = y0 + t * cell + cell / 2;
      const unsigned char* p = &px[(static_cast<size_t>(y) * w + x) * 3];
      const std::array<float, 3> want =
          k <= t ? colormap_rgb(Colormap::Magma, std::min(1.0f, weights[static_cast<size_t>(t) * f.out.T + k] / peak)) : kMaskedRgb;
      for (int c = 0; c < 3; ++c) EXPECT_NEAR(p[c], want[c] * 255, 1.0) << "query " << t << ", key " << k;
    }
  // The colour bar runs through the colormap, low on the left.
  const auto bar = [&](int x) { return &px[(static_cast<size_t>(lay->bar_y + lay->bar_h / 2) * w + x) * 3]; };
  for (int c = 0; c < 3; ++c) {
    EXPECT_NEAR(bar(lay->bar_x)[c], colormap_rgb(Colormap::Magma, 0.0f)[c] * 255, 2.0);
    EXPECT_NEAR(bar(lay->bar_x + lay->bar_w - 1)[c], colormap_rgb(Colormap::Magma, 1.0f)[c] * 255, 2.0);
  }
  stbi_image_free(px);
}

// A figure of a long text thins its ticks, and each thinned tick carries its position number
// beside the token, as the app's axes do (they had the tokens only, nothing to count by);
// the grid's title labels its 0-based layer as the app does ("layer 1 (of 0-1)", not
// "layer 1 of 2", which reads as the first).
TEST(Figures, ThinnedTicksCarryTheirPositionNumbers) {
  AppState s = small_model();
  std::string text;
  for (int i = 0; i < 120; ++i) text += std::string(i % 2 ? "river " : "stone ");
  s.text = text;
  s.view.layer = 1;
  s = computed_state(s);
  ASSERT_TRUE(s.result && s.result->fwd);
  ASSERT_GE(s.result->fwd->batch.lengths[0], 100);
  Font font;
  ASSERT_TRUE(load_figure_font(font).ok());
  for (Dialog d : {Dialog::ExportHeadsSvg, Dialog::ExportHeadSvg}) {
    Result<Figure> fig = dialog_figure(d, s);
    ASSERT_TRUE(fig.ok());
    if (d == Dialog::ExportHeadsSvg) EXPECT_EQ(fig->title.rfind("layer 1 (of 0-1)", 0), 0u) << fig->title;
    Result<FigureLayout> lay = layout_figure(*fig, font);
    ASSERT_TRUE(lay.ok());
    ASSERT_GE(lay->labelled.size(), 3u);
    ASSERT_GT(lay->labelled[1], 1) << "thinned";
    std::multiset<std::string> numbers;
    size_t labels = 0;
    for (const FigureText& t : lay->texts) {
      if (t.role == FigureText::Position) numbers.insert(t.text);
      labels += t.role == FigureText::RowLabel;
    }
    EXPECT_EQ(labels, lay->labelled.size() * fig->maps.size());
    for (int t : lay->labelled) EXPECT_EQ(numbers.count(std::to_string(t)), 2 * fig->maps.size()) << "position " << t << " on both axes";
  }
}

// Export this head as SVG, and the heads grid: well-formed XML (python3's parser when it is
// there), one rect per visible cell, one text per label shown, the titles and a colour bar;
// tokens are text, escaped.
TEST(Figures, SvgHoldsCellsAndLabelsAsVectorsAndText) {
  AppState s = small_model();
  s.text = "if a < b & c > \"d\" 'e' then";
  s.cfg.tokenizer = TokenizerKind::Char;  // characters: "<", "&", quotes as tokens of their own
  s = computed_state(s);
  ASSERT_TRUE(s.result && s.result->fwd);
  const int len = s.result->fwd->batch.lengths[0];
  ASSERT_GT(len, 20);
  const fs::path one = tmp_dir() / "head.svg", grid = tmp_dir() / "heads.svg";
  ASSERT_TRUE(run_dialog_action(Dialog::ExportHeadSvg, one.string(), s).ok());
  ASSERT_TRUE(run_dialog_action(Dialog::ExportHeadsSvg, grid.string(), s).ok());
  if (std::system("python3 -c 'import xml.etree.ElementTree' 2>/dev/null") == 0) {
    for (const fs::path& p : {one, grid})
      EXPECT_EQ(std::system(("python3 -c 'import sys, xml.etree.ElementTree as E; E.parse(sys.argv[1])' '" + p.string() + "'").c_str()), 0) << p;
  }
  const int visible = len * (len + 1) / 2;  // causal: key <= query
  Font font;
  ASSERT_TRUE(load_figure_font(font).ok());
  for (const auto& [path, d, maps] : {std::tuple{one, Dialog::ExportHeadSvg, 1}, std::tuple{grid, Dialog::ExportHeadsSvg, 2}}) {
    SCOPED_TRACE(path.string());
    const std::string svg = slurp(path);
    Result<Figure> fig = dialog_figure(d, s);
    ASSERT_TRUE(fig.ok());
    Result<FigureLayout> lay = layout_figure(*fig, font);
    ASSERT_TRUE(lay.ok());
    EXPECT_EQ(count(svg, "<g class=\"map\""), static_cast<size_t>(maps));
    EXPECT_EQ(count(svg, "<rect class=\"masked\""), static_cast<size_t>(maps));
    // Cell rects: everything between <g class="cells"> and its </g>.
    size_t cells = 0;
    for (size_t at = svg.find("<g class=\"cells\">"); at != std::string::npos; at = svg.find("<g class=\"cells\">", at + 1))
      cells += count(svg.substr(at, svg.find("</g>", at) - at), "<rect ");
    EXPECT_EQ(cells, static_cast<size_t>(visible * maps));
    EXPECT_EQ(count(svg, "<text class=\"row-label\""), lay->labelled.size() * maps);
    EXPECT_EQ(count(svg, "<text class=\"col-label\""), lay->labelled.size() * maps);
    EXPECT_EQ(count(svg, "<text class=\"title\""), 1u);
    EXPECT_EQ(count(svg, "<linearGradient"), 1u);
    if (maps == 1) {  // each cell's rect, at its place, in the colormap at its weight over the head's peak
      const ForwardData& f = *s.result->fwd;
      const float* w = f.out.weights(0, 0, 0);
      const float peak = f.map_max[0];
      int found = 0;
      for (int t = 0; t < len; ++t)
        for (int k = 0; k <= t; ++k) {
          const std::array<float, 3> c = colormap_rgb(Colormap::Viridis, std::min(1.0f, w[static_cast<size_t>(t) * f.out.T + k] / peak));
          char want[160];
          std::snprintf(want, sizeof want, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"#%02x%02x%02x\"/>",
                        lay->origins[0][0] + k * lay->cell, lay->origins[0][1] + t * lay->cell, lay->cell, lay->cell,
                        static_cast<int>(std::lround(c[0] * 255)), static_cast<int>(std::lround(c[1] * 255)), static_cast<int>(std::lround(c[2] * 255)));
          found += svg.find(want) != std::string::npos;
        }
      EXPECT_EQ(found, visible);
      char grey[16];
      std::snprintf(grey, sizeof grey, "#%02x%02x%02x", static_cast<int>(std::lround(kMaskedRgb[0] * 255)),
                    static_cast<int>(std::lround(kMaskedRgb[1] * 255)), static_cast<int>(std::lround(kMaskedRgb[2] * 255)));
      EXPECT_NE(svg.find("<rect class=\"masked\" x=\"" + std::to_string(lay->origins[0][0]) + "\""), std::string::npos);
      EXPECT_NE(svg.find(std::string("fill=\"") + grey + "\""), std::string::npos) << "masked cells in the app's grey";
    }
    EXPECT_NE(svg.find(">&lt;</text>"), std::string::npos) << "the token < as text";
    EXPECT_NE(svg.find(">&amp;</text>"), std::string::npos);
    EXPECT_EQ(svg.find("><</text>"), std::string::npos);
  }
  EXPECT_EQ(xml_escape(std::string("a\x01" "b\xff", 4)), "a\xEF\xBF\xBD" "b\xEF\xBF\xBD");
}

// Shortcuts: Ctrl+Shift+E runs its own command, not Ctrl+E's; Ctrl+E without Shift runs
// Ctrl+E's; a key with no Shift variant runs with Shift held (Ctrl++ is typed Ctrl+Shift+=
// on many keyboards); Ctrl commands need Ctrl; arrows wait while a text box has the keys.
// The app's table binds Ctrl+E to Export heads as PNG and Ctrl+Shift+E to Export window as
// PNG (commands.cpp; the key events themselves are for the GUI tests).
TEST(Commands, ShiftVariantsAndCtrlAreMatched) {
  enum { E = 69, EQUAL = 61, RIGHT = 262 };  // GLFW_KEY_E, GLFW_KEY_EQUAL, GLFW_KEY_RIGHT
  const std::vector<Command> table = {
      {"File", "Export heads as PNG...", "Ctrl+E", {E, 0}, true, false, false, false, nullptr},
      {"File", "Export window as PNG...", "Ctrl+Shift+E", {E, 0}, true, false, false, false, nullptr, nullptr, nullptr, true},
      {"View", "Larger text", "Ctrl++", {EQUAL, 0}, true, true, false, false, nullptr},
      {nullptr, "Next head", "right", {RIGHT, 0}, false, true, true, false, nullptr},
  };
  auto label = [&](int key, bool ctrl, bool shift, bool taken = false) {
    const Command* c = match_command(table, key, ctrl, shift, taken);
    return std::string(c ? c->label : "none");
  };
  EXPECT_EQ(label(E, true, false), "Export heads as PNG...");
  EXPECT_EQ(label(E, true, true), "Export window as PNG...");
  EXPECT_EQ(label(E, false, false), "none");
  EXPECT_EQ(label(E, false, true), "none");
  EXPECT_EQ(label(EQUAL, true, true), "Larger text");
  EXPECT_EQ(label(EQUAL, true, false), "Larger text");
  EXPECT_EQ(label(EQUAL, false, false), "none");
  EXPECT_EQ(label(RIGHT, false, false), "Next head");
  EXPECT_EQ(label(RIGHT, false, false, true), "none");
}

// Issue 22 (8): the Presets menu's sentences are not in the shipped models' training corpus
// (the chapters' own sentences were, 19 to 30 times each, so their loss was memorised), and
// the file says so for each, which the menu shows. Every line of a preset, and every
// sentence of a line, is looked up in english-v1 as assembled from the Debian packages (in
// under a second), ignoring case.
TEST(Presets, SentencesAreNotInTheTrainingCorpusAndTheMenuSaysSo) {
  std::string error;
  const Presets presets = load_presets(std::string(HEADMAP_ASSETS) + "/presets.json", &error);
  ASSERT_TRUE(error.empty()) << error;
  Result<std::string> corpus = assemble_english_corpus();
  ASSERT_TRUE(corpus) << corpus.error().message << " (install " << kEnglishCorpusPackages << ")";
  const std::string text = ascii_lower(*corpus);
  int checked = 0;
  for (const Preset& p : presets.items) {
    if (p.text.rfind("@", 0) == 0) continue;  // generated when chosen (the induction probe)
    ASSERT_TRUE(p.in_corpus.has_value()) << p.name << ": the file must say whether it is in the corpus";
    EXPECT_FALSE(*p.in_corpus) << p.name << ": the presets use sentences of their own";
    EXPECT_NE(preset_menu_label(p).find("(not in the training corpus)"), std::string::npos) << preset_menu_label(p);
    for (const CorpusPiece& piece : find_in_corpus(text, p.text)) {
      EXPECT_EQ(piece.found, *p.in_corpus) << p.name << ": \"" << piece.text << "\" " << (piece.found ? "is" : "is not") << " in english-v1";
      ++checked;
    }
  }
  EXPECT_GE(checked, 10);
}

// Issue 22 (8): a comparison's finished run opens in the heads grid: its final weights
// become the session's model at its own D, H and L; a run that has not finished changes
// nothing.
TEST(Training, ShowHeadsOpensAFinishedRunAtItsOwnSize) {
  AppState s;
  const ModelConfig before = s.cfg;
  EXPECT_FALSE(show_trained_run(s, 0).ok());
  EXPECT_EQ(s.cfg.d_model, before.d_model);
  EXPECT_FALSE(s.session);
  auto w = std::make_shared<ModelWeights>(random_weights(64, 2, 1));
  w->context = 128;
  w->source.trained_heads = 8;
  s.training.run_weights = {nullptr, w};
  s.training.labels = {"H = 1", "H = 8"};
  EXPECT_FALSE(show_trained_run(s, 0).ok()) << "run 0 has no weights";
  ASSERT_TRUE(show_trained_run(s, 1).ok());
  EXPECT_EQ(s.cfg.d_model, 64);
  EXPECT_EQ(s.cfg.num_heads, 8);
  EXPECT_EQ(s.cfg.num_layers, 2);
  EXPECT_EQ(s.view.center, CenterPanel::Heads);
  EXPECT_EQ(compute_request(s).weights.in_memory, w) << "the request runs on the run's weights";
}

// A second export with the proposed name never replaces the first: the dialog proposes
// "heads-2.png" once heads.png is there (the number before the whole suffix:
// "view-2.headmap.json"), and the next free one after that; reading dialogs and the lesson
// step (which adds to its file) keep their default.
TEST(Dialogs, AProposedNameNeverReplacesAnEarlierFile) {
  const fs::path dir = tmp_dir() / "proposed-free";
  fs::remove_all(dir);
  fs::create_directories(dir);
  EXPECT_EQ(dialog_proposed_path(Dialog::ExportHeadsPng, dir.string()), "heads.png");
  std::ofstream(dir / "heads.png") << "x";
  EXPECT_EQ(dialog_proposed_path(Dialog::ExportHeadsPng, dir.string()), "heads-2.png");
  std::ofstream(dir / "heads-2.png") << "x";
  EXPECT_EQ(dialog_proposed_path(Dialog::ExportHeadsPng, dir.string()), "heads-3.png");
  std::ofstream(dir / "view.headmap.json") << "{}";
  EXPECT_EQ(dialog_proposed_path(Dialog::SaveView, dir.string()), "view-2.headmap.json");
  EXPECT_EQ(dialog_proposed_path(Dialog::OpenView, dir.string()), "view.headmap.json") << "Open proposes the file that is there";
  fs::create_directories(dir / "attention-npy");
  EXPECT_EQ(dialog_proposed_path(Dialog::ExportNpy, dir.string()), "attention-npy-2");
  // The scripted export keys with an empty path take the same proposal, in the working directory.
  in_directory(dir, [&] {
    AppState s = random_state();
    ASSERT_TRUE(apply_setting(s, "export_heads=").ok());
    ASSERT_TRUE(s.dialog_request.has_value());
    EXPECT_EQ(s.dialog_request->path, "heads-3.png");
  });
}
