// The GUI's plain state without a window: the one request builder, the dialogs' actions
// and the scripted settings (no GL, no Dear ImGui, no display).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "app/gui/app_state.h"
#include "app/gui/dialogs.h"
#include "app/gui/presets.h"
#include "app/script/settings_table.h"
#include "core/train/english.h"

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
// its seed, a checkpoint file, a shipped checkpoint by name; a missing or corrupt checkpoint
// named in a view is refused with a message and the current state is kept.
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
  // A shipped checkpoint, chosen by the sliders' D, L and H.
  AppState k;
  k.shipped = shipped;
  k.text = "The cat sat on the mat.";
  k.cfg.d_model = 128;
  k.cfg.num_heads = 8;
  k.cfg.num_layers = 2;
  const AppState k2 = reopen(k);
  EXPECT_EQ(fs::path(compute_request(k2).weights.checkpoint).filename(), "d128-h8-l2.safetensors");

  // The view names a checkpoint that has gone, then one that is corrupt: refused, nothing changes.
  ASSERT_TRUE(run_dialog_action(Dialog::SaveView, path, c).ok());
  AppState before = random_state();
  before.shipped = shipped;
  before.cfg.seed = 5;
  for (const char* what : {"missing", "corrupt"}) {
    SCOPED_TRACE(what);
    if (std::string(what) == "missing") fs::remove(user);
    else std::ofstream(user, std::ios::binary) << "not a checkpoint";
    AppState t = before;
    const Status st = run_dialog_action(Dialog::OpenView, path, t);
    ASSERT_FALSE(st.ok());
    EXPECT_NE(st.error().message.find("mine.safetensors"), std::string::npos) << st.error().message;
    EXPECT_NE(st.error().message.find("The current view is kept"), std::string::npos) << st.error().message;
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
  auto lower = [](std::string t) {
    for (char& c : t) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return t;
  };
  const std::string text = lower(*corpus);
  int checked = 0;
  for (const Preset& p : presets.items) {
    if (p.text.rfind("@", 0) == 0) continue;  // generated when chosen (the induction probe)
    ASSERT_TRUE(p.in_corpus.has_value()) << p.name << ": the file must say whether it is in the corpus";
    EXPECT_FALSE(*p.in_corpus) << p.name << ": the presets use sentences of their own";
    EXPECT_NE(preset_menu_label(p).find("(not in the training corpus)"), std::string::npos) << preset_menu_label(p);
    for (const std::string& line : split_lines(p.text)) {
      std::vector<std::string> pieces = {line};  // the line, and each sentence of it
      for (size_t start = 0; start < line.size();) {
        size_t end = line.find_first_of(".?!", start);
        end = end == std::string::npos ? line.size() : end + 1;
        std::string piece = line.substr(start, end - start);
        piece.erase(0, piece.find_first_not_of(' '));
        if (piece.size() > 8) pieces.push_back(piece);
        start = end;
      }
      for (const std::string& piece : pieces) {
        const bool found = text.find(lower(piece)) != std::string::npos;
        EXPECT_EQ(found, *p.in_corpus) << p.name << ": \"" << piece << "\" " << (found ? "is" : "is not") << " in english-v1";
        ++checked;
      }
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
