// app_menu.cpp: App's menu bar (File, View, Help and the newest note) and its dialog boxes
// (the path dialogs, the Problem box, the model loader's progress), apart from app.cpp's
// frame loop. What the menu commands and dialogs do is in commands.cpp and dialogs.cpp.
#include <imgui.h>
#include <imgui_internal.h>  // RenderTextEllipsis (the menu bar's note)
#include <imgui_stdlib.h>

#include <GLFW/glfw3.h>

#include <algorithm>
#include <cfloat>
#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "app/common/assets.h"
#include "app/common/print_message.h"
#include "app/gui/app.h"
#include "app/gui/cached_models_list.h"
#include "app/gui/commands.h"
#include "app/gui/corpus_view.h"
#include "core/io/corpus_cache.h"
#include "app/gui/panels/panels.h"
#include "app/gui/theme.h"
#include "app/gui/ui_widgets.h"
#include "core/io/checkpoint.h"
#include "core/io/file_io.h"
#include "core/io/hf_model.h"
#include "core/io/run_export.h"
#include "core/model/model.h"
#include "core/text/utf8.h"

namespace headmap {
void App::draw_menu() {
  if (!ImGui::BeginMenuBar()) return;
  if (ImGui::BeginMenu("File")) {
    draw_menu_commands(*this, "File");
    ImGui::EndMenu();
  }
  hook_widget("File");
  if (ImGui::BeginMenu("View")) {
    for (int c = 0; c < kNumColormaps; ++c) {
      if (ImGui::MenuItem(colormap_name(static_cast<Colormap>(c)), nullptr, state.view.colormap == static_cast<Colormap>(c)))
        state.view.colormap = static_cast<Colormap>(c);
      hook_widget(colormap_name(static_cast<Colormap>(c)));
    }
    ImGui::Separator();
    const std::pair<Normalisation, const char*> norms[] = {{Normalisation::PerHead, "Scale per head"},
                                                           {Normalisation::PerLayer, "Scale per layer"},
                                                           {Normalisation::Global, "Scale over the model"},
                                                           {Normalisation::Absolute, "Absolute (0 to 1)"}};
    for (auto& [n, label] : norms) {
      if (ImGui::MenuItem(label, nullptr, state.view.norm == n)) state.view.norm = n;
      hook_widget(label);
    }
    draw_menu_commands(*this, "View");
    ImGui::EndMenu();
  }
  hook_widget("View");
  if (ImGui::BeginMenu("Help")) {
    draw_menu_commands(*this, "Help");
    if (ImGui::BeginMenu("Lessons")) {  // the shipped lessons, one per chapter
      for (const std::string& f : lesson_files()) {
        const std::string name = std::filesystem::path(f).stem().string();
        if (ImGui::MenuItem(name.c_str(), nullptr, state.lesson.open() && state.lesson.lesson->path == f)) open_lesson_file(f);
      }
      ImGui::Separator();
      if (ImGui::MenuItem("Open lesson file...")) open_dialog(Dialog::OpenLesson);
      if (ImGui::MenuItem("Close lesson", nullptr, false, state.lesson.open())) close_lesson(state);
      ImGui::EndMenu();
    }
    ImGui::EndMenu();
  }
  hook_widget("Help");
  const float computing_x = ImGui::GetWindowWidth() - ImGui::CalcTextSize("computing...").x - 20;
  // The newest note ("Wrote heads.png") in the menu bar for a while: where the person looks
  // after a menu command, whatever the left column's scroll (its list of notes may be below
  // the fold on a projector).
  if (state.status_lines.size() != status_seen_) {
    status_seen_ = state.status_lines.size();
    status_since_ = ImGui::GetTime();
  }
  if (!state.status_lines.empty() && ImGui::GetTime() - status_since_ < kStatusNoteSeconds) {
    ImGui::SameLine(0, ImGui::GetFontSize() * 2);
    const ImVec2 p = ImGui::GetCursorScreenPos();
    const float right = ImGui::GetWindowPos().x + (state.stale ? computing_x : ImGui::GetWindowWidth()) - ImGui::GetFontSize();
    const std::string& note = state.status_lines.back();
    const float w = std::min(ImGui::CalcTextSize(note.c_str()).x, std::max(0.0f, right - p.x));
    ImGui::PushStyleColor(ImGuiCol_Text, kAccentColour);
    ImGui::RenderTextEllipsis(ImGui::GetWindowDrawList(), p, ImVec2(p.x + w, p.y + ImGui::GetFontSize()), p.x + w, p.x + w, note.c_str(), nullptr, nullptr);
    ImGui::PopStyleColor();
    hook_widget(note.c_str(), p, ImVec2(p.x + w, p.y + ImGui::GetFontSize()));
  }
  if (state.stale) {
    ImGui::SameLine(computing_x);
    ImGui::TextColored(kPendingColour, "computing...");
  }
  ImGui::EndMenuBar();
}

void App::draw_dialogs() {
  if (dialog_ != Dialog::None && !ImGui::IsPopupOpen(dialog_title(dialog_))) ImGui::OpenPopup(dialog_title(dialog_));
  if (!state.error_popup.empty() && dialog_ == Dialog::None && !capture_frame_ && !ImGui::IsPopupOpen("Problem"))  // not into an export's picture
    ImGui::OpenPopup("Problem");
  draw_ask_open_model(state, dialog_ == Dialog::None && !capture_frame_);
  if (ImGui::BeginPopupModal("Problem", nullptr, ImGuiWindowFlags_AlwaysAutoResize)) {
    hook_widget("Problem");  // its title bar
    ImGui::PushTextWrapPos(ImGui::GetFontSize() * 36);
    const std::string shown = printable(state.error_popup);  // a file's text in it is escaped (issue 35, F11)
    ImGui::TextUnformatted(shown.c_str());
    ImGui::PopTextWrapPos();
    hook::add_text("messages", shown);
    const bool ok = ImGui::Button("OK");
    hook_widget("OK");
    if (ok || ImGui::IsKeyPressed(GLFW_KEY_ENTER) || ImGui::IsKeyPressed(GLFW_KEY_ESCAPE)) {
      state.error_popup.clear();
      ImGui::CloseCurrentPopup();
    }
    ImGui::EndPopup();
  }
  if (dialog_ == Dialog::None) return;
  const char* title = dialog_title(dialog_);
  // Wide enough for its title (auto-resize fits the contents only, which cut "Open model (a
  // directory, a GGUF file, ..." short), never wider than the window.
  const ImGuiStyle& style = ImGui::GetStyle();
  const float title_w = ImGui::CalcTextSize(title).x + 2 * (style.FramePadding.x + style.WindowPadding.x);
  const float max_w = std::max(ImGui::GetMainViewport()->WorkSize.x - 2 * style.WindowPadding.x, 1.0f);
  ImGui::SetNextWindowSizeConstraints(ImVec2(std::min(title_w, max_w), 0.0f), ImVec2(max_w, FLT_MAX));
  if (!ImGui::BeginPopupModal(title, nullptr, ImGuiWindowFlags_AlwaysAutoResize)) return;
  hook_widget(title);  // its title bar
  bool close = false;
  if (dialog_ == Dialog::Shortcuts) {
    // Every key comes from the command table, so this list cannot drift from the keys; the
    // pointer gestures are not commands and are listed after them.
    auto row = [](const char* keys, const char* what) {
      ImGui::TableNextRow();
      ImGui::TableSetColumnIndex(0);
      ImGui::TextUnformatted(keys);
      ImGui::TableSetColumnIndex(1);
      ImGui::TextUnformatted(what);
    };
    if (ImGui::BeginTable("keys", 2, ImGuiTableFlags_SizingFixedFit)) {
      for (const Command& c : commands())
        if (c.shortcut) row(c.shortcut, c.label);
      row("wheel, drag", "zoom and pan the focus view; double-click resets");
      ImGui::EndTable();
    }
    close = ImGui::Button("Close");
    hook_widget("Close");
    close = close || ImGui::IsKeyPressed(GLFW_KEY_ESCAPE);
  } else {
    if (state.export_head)  // chosen when the dialog opened: the hovered head, else the selected one
      ImGui::Text("Layer %d, head %d (%s over a head exports that one)", state.export_head->layer, state.export_head->head,
                  dialog_ == Dialog::ExportHeadSvg ? "Ctrl+Shift+H" : "Ctrl+H");
    if (dialog_ == Dialog::OpenModel)
      text_disabled_wrapped((std::string("A Hugging Face model directory (config.json and .safetensors; model_type ") + supported_families() +
                             "), a GGUF file (llama.cpp, Ollama, LM Studio), a headmap checkpoint file, or a cached model by name: "
                             "ORG/NAME (Hugging Face), NAME:TAG (Ollama), PUBLISHER/REPO/FILE.gguf (LM Studio).").c_str());
    bool open_listed = false;
    if (dialog_ == Dialog::OpenModel) open_listed = draw_cached_models(cached_models_, &dialog_path_);
    ImGui::TextUnformatted("Path:");
    ImGui::SetNextItemWidth(ImGui::GetFontSize() * 28);
    if (ImGui::IsWindowAppearing()) ImGui::SetKeyboardFocusHere();
    const bool enter = ImGui::InputText("##path", &dialog_path_, ImGuiInputTextFlags_EnterReturnsTrue);
    hook_widget("Path");
    if (!dialog_error_.empty()) {
      hook::add_text("messages", dialog_error_);
      ImGui::PushStyleColor(ImGuiCol_Text, kErrorColour);
      ImGui::PushTextWrapPos(ImGui::GetFontSize() * 28);
      ImGui::TextUnformatted(dialog_error_.c_str());
      ImGui::PopTextWrapPos();
      ImGui::PopStyleColor();
    }
    const bool scripted_ok = scripted_ok_in_ > 0 && --scripted_ok_in_ == 0;  // a scripted dialog (dialog_request)
    const bool ok = ImGui::Button("OK") || enter || scripted_ok || open_listed;
    hook_widget("OK");
    ImGui::SameLine();
    close = ImGui::Button("Cancel");
    hook_widget("Cancel");
    close = close || ImGui::IsKeyPressed(GLFW_KEY_ESCAPE);
    if (ok) {
      const Status st = dialog_ok(dialog_, dialog_path_);
      if (st) close = true;
      else dialog_error_ = st.error().message;
    }
  }
  if (close) {
    dialog_ = Dialog::None;
    scripted_ok_in_ = 0;
    state.export_head.reset();
    ImGui::CloseCurrentPopup();
  }
  ImGui::EndPopup();
}

// File > Open model: the read runs on the loader's thread; its result is adopted here.
void App::sync_model_loader() {
  if (!state.open_model_request.empty()) {
    loader_.start(state.open_model_request);
    state.opening_model = std::move(state.open_model_request);
    state.open_model_request.clear();
  }
  if (std::optional<LoadedModel> m = loader_.take()) {
    state.opening_model.clear();
    if (m->weights) {
      adopt_model(state, m->dir, *m->weights);  // a directory or a checkpoint, as the dispatcher read it
      if (state.after_open) {  // a view's own config and selection win over the model's sizes
        state.cfg = state.after_open->cfg;
        state.weights_mode = state.after_open->mode;
        state.view = state.after_open->view;
        state.selected_token = state.after_open->selected_token;
        // ...and again once the new model's first result is accepted: until then the old
        // result's layers clamp the selection (a Llama view's layer 2 under a 2-layer model).
        view_after_open_ = std::make_pair(state.after_open->view, state.after_open->selected_token);
      }
    } else {
      state.error_popup = m->weights.error().message;  // the current model stays
      print_message("headmap", state.error_popup);
    }
    state.after_open.reset();
  }
  // The Compare tab's B: any path, through the same dispatcher, counted against the memory
  // budget beside the models kept open (A and the B it replaces).
  CompareSource& c = state.compare_b;
  if (!c.load_request.empty()) {
    const uint64_t held = compare_held_bytes(state);
    compare_loader_.start(c.load_request, held, "the models already open (A" + std::string(c.file_weights ? " and the current B)" : ")"));
    c.loading = std::move(c.load_request);
    c.load_request.clear();
  }
  if (std::optional<LoadedModel> m = compare_loader_.take()) adopt_compare_file(state, m->dir, m->weights);
}

// Contributions > Corpus: Search (its button, the file dialog's OK, a scripted corpus_search=)
// starts the worker on the model on screen; Cancel stops it; its progress is copied for the
// view; its answer is adopted (a failure keeps the results shown). The index is kept on disk
// in a person's run, and in a scripted one only where $XDG_CACHE_HOME names the place.
void App::sync_corpus() {
  CorpusState& c = state.corpus;
  if (!c.search_request.empty()) {
    const ComputeResult* r = state.result.get();
    if (!r || !r->fwd || !r->fwd->weights) {
      c.error = "There is no model on screen to search with: type a sentence first.";
      print_message("headmap", c.error);
    } else {
      const std::string name = std::filesystem::path(c.search_request).filename().string();
      CorpusJob job{r->fwd->weights, r->request.cfg, c.search_request, c.source == 0 ? "the shipped corpus (" + name + ")" : name,
                    persist || std::getenv("XDG_CACHE_HOME") ? corpus_cache_dir() : std::string(), c.stat};
      c.running = c.search_request;
      c.error.clear();
      c.note.clear();
      corpus_.start(std::move(job));
    }
    c.search_request.clear();
  }
  if (c.cancel_request) corpus_.cancel();
  c.cancel_request = false;
  c.progress = corpus_.progress();
  if (std::optional<CorpusOutcome> o = corpus_.take()) adopt_corpus_outcome(state, std::move(*o));
  if (c.maps_request) {  // the shown hits' maps (corpus_derived asked): on the worker
    corpus_.start_maps(std::move(*c.maps_request));
    c.maps_request.reset();
  }
  if (std::optional<CorpusMaps> m = corpus_.take_maps()) adopt_corpus_maps(state, std::move(*m));
}

}  // namespace headmap
