// cached_models_list.cpp: the Open model dialog's list of cached models (cached_models_list.h).
#include "app/gui/cached_models_list.h"

#include <imgui.h>

#include <algorithm>
#include <cstdio>

#include "app/gui/frame_hooks.h"
#include "app/gui/ui_widgets.h"
#include "core/io/model_cache.h"
#include "core/text/utf8.h"

namespace headmap {

namespace {
// Bytes as a file manager shows them: 2.47 GB, 840 MB, 12 kB (powers of 1000).
std::string size_text(uint64_t b) {
  char buf[32];
  if (b >= 1000000000ull) std::snprintf(buf, sizeof buf, "%.2f GB", static_cast<double>(b) / 1e9);
  else if (b >= 1000000ull) std::snprintf(buf, sizeof buf, "%.0f MB", static_cast<double>(b) / 1e6);
  else std::snprintf(buf, sizeof buf, "%.0f kB", static_cast<double>(b) / 1e3);
  return buf;
}

// A name too wide for its column, shortened in the middle ("bartowski/Llama-3.2-1B-GGUF/…-Q4_K_M.gguf"):
// its start (the repo) and its end (the file, the quantization) are what tell models apart.
std::string fit_middle(const std::string& name, float width) {
  if (ImGui::CalcTextSize(name.c_str()).x <= width) return name;
  const std::u32string cps = decode_utf8(name).codepoints;
  for (size_t keep = cps.size(); keep > 2; --keep) {
    const size_t head = keep / 2, tail = keep - head;
    const std::string t = encode_utf8(cps.substr(0, head)) + "\xE2\x80\xA6" + encode_utf8(cps.substr(cps.size() - tail));
    if (ImGui::CalcTextSize(t.c_str()).x <= width) return t;
  }
  return "\xE2\x80\xA6";
}
}  // namespace

bool draw_cached_models(const std::vector<CachedModel>& models, std::string* path) {
  const float em = ImGui::GetFontSize();
  if (models.empty()) {
    const std::vector<std::string> hf = hf_hub_caches();
    text_disabled_wrapped(("No model in the Hugging Face cache (" + (hf.empty() ? std::string("HOME is unset") : hf.back()) +
                           "), Ollama's models folder or LM Studio's: open a directory or a file by its path.")
                              .c_str());
    return false;
  }
  ImGui::Text("On this computer (%d, offline; a click puts the name in Path):", static_cast<int>(models.size()));
  bool open = false;
  const float rows = static_cast<float>(std::min<size_t>(models.size(), 6));
  const ImGuiTableFlags flags = ImGuiTableFlags_ScrollY | ImGuiTableFlags_RowBg | ImGuiTableFlags_BordersInnerV | ImGuiTableFlags_SizingStretchProp;
  const float width = std::min(em * 52, ImGui::GetMainViewport()->Size.x - em * 4);  // as wide as the window allows: names are long
  if (!ImGui::BeginTable("cached models", 4, flags, ImVec2(width, (rows + 1.2f) * ImGui::GetFrameHeightWithSpacing()))) return false;
  ImGui::TableSetupScrollFreeze(0, 1);
  ImGui::TableSetupColumn("model", ImGuiTableColumnFlags_WidthStretch, 18);
  ImGui::TableSetupColumn("from", ImGuiTableColumnFlags_WidthStretch, 6.5f);
  ImGui::TableSetupColumn("type", ImGuiTableColumnFlags_WidthStretch, 10);
  ImGui::TableSetupColumn("size", ImGuiTableColumnFlags_WidthStretch, 4.5f);
  ImGui::TableHeadersRow();
  for (const CachedModel& m : models) {
    ImGui::TableNextRow();
    ImGui::TableSetColumnIndex(0);
    ImGui::PushID(m.name.c_str());
    if (!m.openable) ImGui::BeginDisabled();
    const bool chosen = *path == m.name;
    const std::string shown = fit_middle(m.name, ImGui::GetContentRegionAvail().x) + "##" + m.name;
    if (ImGui::Selectable(shown.c_str(), chosen, ImGuiSelectableFlags_SpanAllColumns | ImGuiSelectableFlags_AllowDoubleClick)) {
      *path = m.name;
      if (ImGui::IsMouseDoubleClicked(0)) open = true;
    }
    if (!m.openable) ImGui::EndDisabled();
    hook_widget(m.name.c_str());
    if (ImGui::IsItemHovered(ImGuiHoveredFlags_AllowWhenDisabled))
      ImGui::SetTooltip("%s\n%s\n%s", m.name.c_str(), m.path.empty() ? "(does not resolve)" : m.path.c_str(), m.type.c_str());
    ImGui::PopID();
    ImGui::TableSetColumnIndex(1);
    ImGui::TextDisabled("%s", m.source.c_str());
    ImGui::TableSetColumnIndex(2);
    if (m.openable) ImGui::TextUnformatted(m.type.c_str());
    else ImGui::TextDisabled("cannot open: %s", m.type.c_str());
    ImGui::TableSetColumnIndex(3);
    ImGui::TextUnformatted(m.bytes ? size_text(m.bytes).c_str() : "");
  }
  ImGui::EndTable();
  return open;
}

}  // namespace headmap
