// panel_sentence.cpp: the text box (one sentence per line = the batch), the token chips
// that show exactly how the model split the text, and the chapters' preset sentences.
#include <imgui.h>
#include <imgui_stdlib.h>

#include <algorithm>
#include <cstdio>
#include <memory>

#include "app/common/bidi.h"
#include "app/common/fonts.h"
#include "app/gui/glyphs.h"
#include "app/gui/panels/panels.h"
#include "app/gui/presets.h"
#include "app/gui/theme.h"
#include "app/gui/ui_widgets.h"
#include "core/inspect/metrics.h"
#include "core/text/bpe.h"

namespace headmap {

namespace {

// One chip: a token, or the label of a group of byte pieces (token = -1).
struct Chip {
  int token = -1;
  int group = -1;          // the group of pieces it belongs to, -1 none
  std::string label;       // as a person reads it ("U+XXXX" where no font has a character)
  std::string shown;       // as Dear ImGui draws it (glyphs.h: characters above U+FFFF as aliases)
  std::string tip;         // the tooltip, empty for none
  bool continues = false;  // a sub-word piece: it sits close to the previous chip
  bool special = false;    // a special token of the tokenizer (BOS, <|endoftext|>, [CLS])
  float width = 0;         // with its padding
};

std::string hex_bytes(std::string_view b) {
  std::string out;
  char buf[4];
  for (unsigned char c : b) {
    std::snprintf(buf, sizeof buf, "%02X", c);
    out += (out.empty() ? "" : " ") + std::string(buf);
  }
  return out;
}

// The chips of sentence b. A character that the tokenizer cut into several byte pieces (é as
// C3 A9, by byte-level BPE or a tokenizer.json's byte fallback) gets a label chip with the
// character, followed by its pieces, which show their bytes in hex; label and pieces form one
// group (several characters sharing pieces, one group). *groups receives "é = C3 A9 (tokens
// 2-3)" per group. A special token (BOS, <|endoftext|>) is a chip of its own colour.
std::vector<Chip> sentence_chips(const ForwardData& f, int b, std::vector<std::string>* groups) {
  const std::vector<Token>& tokens = f.batch.sentences[static_cast<size_t>(b)].tokens;
  const int n = static_cast<int>(tokens.size());
  std::string all;  // the sentence's bytes, token after token
  std::vector<size_t> start(static_cast<size_t>(n) + 1);
  for (int t = 0; t < n; ++t) {
    start[t] = all.size();
    all += token_bytes(tokens[t]);  // a byte piece's bytes (byte-level BPE, byte fallback)
  }
  start[n] = all.size();
  auto token_at = [&](size_t byte) { return static_cast<int>(std::upper_bound(start.begin(), start.end(), byte) - start.begin()) - 1; };
  struct Split {
    size_t begin, end;
    int first, last;
  };
  const std::vector<Utf8Unit> units = utf8_units(all);
  std::vector<Split> split;
  std::vector<int> split_of(units.size(), -1);
  for (size_t i = 0; i < units.size(); ++i) {
    const Utf8Unit& u = units[i];
    if (!u.valid || u.end - u.begin < 2) continue;
    const int a = token_at(u.begin), z = token_at(u.end - 1);
    if (a == z) continue;
    split_of[i] = static_cast<int>(split.size());
    split.push_back({u.begin, u.end, a, z});
  }
  std::vector<int> group_of(static_cast<size_t>(n), -1);
  std::vector<std::vector<int>> members;  // each group's split characters
  for (size_t i = 0; i < split.size(); ++i) {
    int g = group_of[split[i].first];
    if (g < 0) {
      g = static_cast<int>(members.size());
      members.emplace_back();
    }
    members[g].push_back(static_cast<int>(i));
    for (int t = split[i].first; t <= split[i].last; ++t) group_of[t] = g;
  }
  auto char_text = [&](const Split& c) { return all.substr(c.begin, c.end - c.begin); };

  std::vector<Chip> chips;
  const std::vector<std::string>& labels = f.labels[static_cast<size_t>(b)];
  size_t unit = 0;
  for (int t = 0; t < n; ++t) {
    const int g = group_of[t];
    Chip c;
    c.token = t;
    c.group = g;
    c.continues = tokens[t].continues;
    c.special = tokens[t].special;
    if (g < 0) {
      c.label = glyphs().readable(labels[t]);
      if (c.special) c.tip = "A special token: the tokenizer adds or reads \"" + c.label + "\" whole (the beginning of the text, a separator), as the model was trained.";
    } else {
      if (t == 0 || group_of[t - 1] != g) {  // the group's label chip first
        Chip head;
        head.group = g;
        std::string text, hex;
        for (int i : members[g]) {
          text += char_text(split[i]);
          hex += (hex.empty() ? "" : " ") + hex_bytes(char_text(split[i]));
          head.tip += (head.tip.empty() ? "" : "\n") + glyphs().readable(char_text(split[i])) + " = " + hex_bytes(char_text(split[i])) +
                      ", tokens " + std::to_string(split[i].first) + "-" + std::to_string(split[i].last);
        }
        head.label = glyphs().readable(text);
        head.tip += "\nThe tokenizer cut " + std::string(members[g].size() > 1 ? "these characters" : "this character") +
                    " into byte pieces, one token each.";
        if (groups)
          groups->push_back(head.label + " = " + hex + " (tokens " + std::to_string(split[members[g].front()].first) + "-" +
                            std::to_string(split[members[g].back()].last) + ")");
        chips.push_back(std::move(head));
      }
      // The piece: whole characters as text (a leading space as "·"), pieces of a split one in hex.
      while (unit < units.size() && units[unit].end <= start[t]) ++unit;
      std::string label;
      bool hex_last = false;
      for (size_t i = unit; i < units.size() && units[i].begin < start[t + 1]; ++i) {
        const Utf8Unit& u = units[i];
        if (split_of[i] < 0) {
          const std::string ch = all.substr(u.begin, u.end - u.begin);
          label += ch == " " ? "\xC2\xB7" : glyphs().readable(ch);
          hex_last = false;
          continue;
        }
        const Split& sc = split[split_of[i]];
        const size_t b0 = std::max(u.begin, start[t]), b1 = std::min(u.end, start[t + 1]);
        label += (hex_last ? " " : "") + hex_bytes(std::string_view(all).substr(b0, b1 - b0));
        hex_last = true;
        c.tip += (c.tip.empty() ? "" : "\n") + glyphs().readable(char_text(sc)) + " = " + hex_bytes(char_text(sc)) + ", token " +
                 std::to_string(t - sc.first + 1) + " of " + std::to_string(sc.last - sc.first + 1);
      }
      c.label = label;
    }
    chips.push_back(std::move(c));
  }
  return chips;
}

// Dear ImGui's text box cannot reorder right-to-left text or join Arabic letters, so it keeps
// the text in typed (logical) order; under it, a read-only line shows how a text with
// right-to-left characters reads (visual order, Arabic joined: bidi.h), its first lines
// joined by spaces and cut with "\xE2\x80\xA6" to the width.
void sentence_preview(AppState& s) {
  if (!has_rtl(s.text)) return;
  std::string line = s.text;
  std::replace(line.begin(), line.end(), '\n', ' ');
  const std::string cut = cut_logical(line, ImGui::GetContentRegionAvail().x,
                                      [](const std::string& c) { return ImGui::CalcTextSize(glyphs().shown(c).c_str()).x; });
  if (cut.empty()) return;  // not a letter fits
  ImGui::TextDisabled("%s", glyphs().shown(cut).c_str());
  hook_widget("Sentence preview");
}

}  // namespace

void draw_sentence(AppState& s, const Presets& presets) {
  // "Sentence (one per line: B)" and the Presets button on one line when they fit, else the
  // hint goes under the title: they never overlap.
  const char* hint = "(one per line: B)";
  const char* presets_label = "Presets \xE2\x96\xBE";
  const ImGuiStyle& st = ImGui::GetStyle();
  const float button_w = ImGui::CalcTextSize(presets_label).x + st.FramePadding.x * 2;
  const float line_w = ImGui::GetContentRegionAvail().x;
  const bool hint_fits = ImGui::CalcTextSize("Sentence").x + ImGui::CalcTextSize(hint).x + button_w + st.ItemSpacing.x * 3 <= line_w;
  ImGui::AlignTextToFramePadding();
  ImGui::TextUnformatted("Sentence");
  if (hint_fits) {
    ImGui::SameLine();
    ImGui::TextDisabled("%s", hint);
  }
  ImGui::SameLine(std::max(ImGui::GetCursorPosX(), ImGui::GetCursorPosX() + ImGui::GetContentRegionAvail().x - button_w));
  if (ImGui::Button(presets_label)) ImGui::OpenPopup("presets");
  hook_widget("Presets");
  if (ImGui::BeginPopup("presets")) {
    for (const Preset& p : presets.items) {
      const bool picked = ImGui::Selectable(preset_menu_label(p).c_str());
      hook_widget(p.name.c_str());  // by its name, without the corpus note
      if (picked) {
        if (p.text == "@induction-probe") {  // drawn from the model's own vocabulary
          const ModelWeights none;  // untrained: probe words from the built-in list
          const ModelWeights* w = s.result && s.result->fwd ? s.result->fwd->weights.get() : &none;
          s.text = make_induction_probe(s.cfg, *w, 20, s.cfg.seed).text;
        } else {
          s.text = p.text;
        }
      }
      if (ImGui::IsItemHovered() && !p.note.empty()) ImGui::SetTooltip("%s", p.note.c_str());
    }
    ImGui::EndPopup();
  }
  if (!hint_fits) ImGui::TextDisabled("%s", hint);
  const float lines = 3.3f;
  if (s.focus_text) {
    ImGui::SetKeyboardFocusHere();
    s.focus_text = false;
  }
  // Through the glyph aliases (glyphs.h): Dear ImGui's 16-bit characters keep emoji intact.
  // Typed characters above U+FFFF are inserted here, at the cursor (glyphs.h: type_char).
  std::string edit = glyphs().to_edit(s.text), typed = glyphs().take_typed();
  auto insert_typed = [](ImGuiInputTextCallbackData* d) {
    const std::string* t = static_cast<const std::string*>(d->UserData);
    if (!t->empty()) d->InsertChars(d->CursorPos, t->data(), t->data() + t->size());
    return 0;
  };
  if (ImGui::InputTextMultiline("##text", &edit, ImVec2(-1, ImGui::GetTextLineHeight() * lines + ImGui::GetStyle().FramePadding.y * 2),
                                typed.empty() ? 0 : ImGuiInputTextFlags_CallbackAlways, insert_typed, &typed))
    s.text = glyphs().from_edit(edit);
  hook_widget("Sentence");
  sentence_preview(s);
  if (encoder_model(s)) {  // BERT-style encoders read a pair: sentence B, token type 1, after [SEP]
    ImGui::AlignTextToFramePadding();
    ImGui::TextUnformatted("Sentence B");
    ImGui::SameLine();
    ImGui::SetNextItemWidth(-1);
    ImGui::InputTextWithHint("##pair", "(optional: a second sentence, token type 1)", &s.pair_text);
    hook_widget("Sentence B");
    text_disabled_wrapped("Type [MASK] (RoBERTa: <mask>) or click a chip to mask it; click again to unmask.");
  }
  std::vector<std::string> boxes;  // what the text box draws as the hollow box, and its U+FFFD count
  int replacements = 0;
  glyphs().audit_edit(edit, &boxes, &replacements);
  hook::set_texts("text_box_boxes", boxes);
  hook::set_int("text_box_replacements", replacements);
  hook::set_int("atlas_glyphs", glyphs().atlas_glyphs());
  hook::set_num("atlas_build_ms", glyphs().rebuild_ms());
}

void draw_sentence_tokens(AppState& s) {
  // Token chips, from the result on screen: exactly what the model attends over.
  if (!s.result || !s.result->fwd) return;
  const ImGuiStyle& st = ImGui::GetStyle();
  const ForwardData& f = *s.result->fwd;
  const Batch& batch = f.batch;
  int hovered = -1;
  const ImVec2 pad(6, 3);
  // The chips of a result, made once per result, text size and font atlas (not every frame).
  static struct {
    std::weak_ptr<const ForwardData> fwd;  // weak: a new result never matches a freed one
    float font_size = 0;
    int atlas = -1;
    std::vector<std::vector<Chip>> chips;
    std::vector<std::string> groups;
  } cache;
  if (cache.fwd.lock() != s.result->fwd || cache.font_size != ImGui::GetFontSize() || cache.atlas != glyphs().generation()) {
    cache.fwd = s.result->fwd;
    cache.font_size = ImGui::GetFontSize();
    cache.atlas = glyphs().generation();
    cache.groups.clear();
    cache.chips.assign(static_cast<size_t>(batch.B()), {});
    for (int b = 0; b < batch.B(); ++b) {
      cache.chips[b] = sentence_chips(f, b, b == 0 ? &cache.groups : nullptr);
      for (Chip& c : cache.chips[b]) {
        c.shown = glyphs().shown(c.label);
        c.width = ImGui::CalcTextSize(c.shown.c_str()).x + pad.x * 2;
      }
    }
  }
  const std::vector<std::vector<Chip>>& chips = cache.chips;
  const std::vector<std::string>& groups = cache.groups;
  auto gap_after = [](const std::vector<Chip>& cs, size_t i) {  // pieces of a group touch; sub-words sit close
    if (i + 1 >= cs.size()) return 4.0f;
    if (cs[i].group >= 0 && cs[i + 1].group == cs[i].group) return 1.0f;
    return cs[i + 1].continues && cs[i + 1].group < 0 ? 1.0f : 4.0f;
  };
  // The chips scroll in a box of at most kChipRowsShown rows, so a long text never pushes
  // the controls off screen. Its height: the rows the chips wrap into at this width.
  const float chip_h = ImGui::GetTextLineHeight() + pad.y * 2 + st.ItemSpacing.y;
  const float box_w = ImGui::GetContentRegionAvail().x - st.ScrollbarSize - st.WindowPadding.x;
  float rows = 0, x = box_w;
  for (int b = 0; b < batch.B(); ++b, x = box_w)
    for (size_t i = 0; i < chips[b].size(); ++i) {
      const float w = chips[b][i].width + gap_after(chips[b], i);
      if (x + w > box_w) rows += 1, x = 0;
      x += w;
    }
  const float box_h = std::min(std::min(rows + 0.25f, kChipRowsShown) * chip_h, ImGui::GetMainViewport()->WorkSize.y * kChipBoxMaxShare) +
                      st.WindowPadding.y;
  ImGui::PushStyleVar(ImGuiStyleVar_WindowPadding, ImVec2(0, st.WindowPadding.y * 0.5f));
  const bool encoder = f.weights && f.weights->arch.encoder();
  const int mask_id = encoder ? mask_token_id(*f.weights) : -1;
  ImGui::BeginChild("chips", ImVec2(0, box_h), false);
  hook::set_num("chips_box_h", box_h);
  ImDrawList* dl = ImGui::GetWindowDrawList();
  // A group's outline hugs its chips (the box has no side padding to draw beyond them).
  auto draw_outline = [dl](ImVec2 a, ImVec2 z) {
    dl->AddRect(ImVec2(a.x + 0.5f, a.y - 1.5f), ImVec2(z.x - 0.5f, z.y + 1.5f), IM_COL32(255, 200, 90, 255), 5.0f, 0, 1.5f);
  };
  int chips_shown = 0;  // sentence 0's chips submitted (frame_hooks.h): a special chip's index among them
  for (int b = 0; b < batch.B(); ++b) {
    const std::vector<Chip>& cs = chips[b];
    if (b == 0) {
      hook::clear("tokens");
      hook::clear("token_chips");
      hook::clear("special_chips");
      hook::set_texts("chip_groups", groups);
    }
    if (batch.B() > 1) {
      ImGui::TextDisabled("%d:", b);
      ImGui::SameLine();
    }
    ImGui::PushID(b);
    ImVec2 g0(0, 0), g1(0, 0);  // the current group's outline on this row
    for (size_t i = 0; i < cs.size(); ++i) {
      const Chip& c = cs[i];
      const bool group_start = c.group >= 0 && (i == 0 || cs[i - 1].group != c.group);
      float need = c.width + 4;
      if (group_start)  // a group stays on one row when it fits one
        for (size_t j = i + 1; j < cs.size() && cs[j].group == c.group; ++j) need += cs[j].width + 1;
      if (ImGui::GetContentRegionAvail().x < need && (!group_start || need <= box_w)) ImGui::NewLine();
      const std::string& text = c.shown;
      const ImVec2 size(c.width, ImGui::GetTextLineHeight() + pad.y * 2);
      const ImVec2 p = ImGui::GetCursorScreenPos();
      if (c.group >= 0) {  // the outline follows the group, row by row
        if (group_start || p.y != g0.y) {
          if (!group_start) draw_outline(g0, g1);
          g0 = p;
        }
        g1 = ImVec2(p.x + size.x, p.y + size.y);
      }
      ImGui::PushID(static_cast<int>(i));
      const bool clicked = ImGui::InvisibleButton("chip", size);
      ImGui::PopID();
      const bool hover = ImGui::IsItemHovered(ImGuiHoveredFlags_AllowWhenBlockedByActiveItem);  // while the text box has the keyboard too
      const bool mine = b == s.view.batch, tok = c.token >= 0;
      // Encoders: [CLS] / <s>, [SEP] / </s> and [MASK] each their own colour; sentence B's chips tinted.
      const Token* enc = encoder && tok && c.token < batch.lengths[b] ? &batch.sentences[b].tokens[static_cast<size_t>(c.token)] : nullptr;
      const bool is_cls = enc && enc->added && c.token == 0, is_sep = enc && enc->added && c.token > 0;
      const bool is_mask = enc && enc->id == mask_id;
      if (b == 0 && tok) {
        if (c.special) hook::add_int("special_chips", chips_shown);
        hook::add_text("tokens", c.label);
        hook::add_rect("token_chips", ImVec2(p.x, p.y), ImVec2(p.x + size.x, p.y + size.y));
        ++chips_shown;
      }
      if (ImGui::IsItemVisible()) {
        if (tok) hook_widget(("token " + std::to_string(b) + "." + std::to_string(c.token)).c_str());
        const bool lit = tok && ((mine && c.token == s.hover_token) || hover);
        const ImU32 fill = lit ? IM_COL32(255, 140, 70, 255)
                           : !tok ? IM_COL32(30, 36, 48, 255)
                           : is_cls ? IM_COL32(40, 110, 160, 255)
                           : is_sep ? IM_COL32(150, 100, 40, 255)
                           : is_mask ? IM_COL32(170, 60, 140, 255)
                           : enc && enc->segment == 1 ? (c.continues ? IM_COL32(60, 105, 80, 255) : IM_COL32(46, 92, 66, 255))
                           : c.special ? IM_COL32(34, 104, 92, 255)
                           : c.group >= 0 ? IM_COL32(84, 70, 118, 255)
                           : c.continues ? IM_COL32(70, 90, 120, 255) : IM_COL32(52, 70, 100, 255);
        const ImU32 ink = lit ? IM_COL32(20, 20, 20, 255) : !tok ? IM_COL32(255, 220, 140, 255) : IM_COL32(235, 235, 240, 255);
        dl->AddRectFilled(p, ImVec2(p.x + size.x, p.y + size.y), fill, 4.0f);
        dl->AddText(ImVec2(p.x + pad.x, p.y + pad.y), ink, text.c_str());
        if (tok && mine && c.token == s.selected_token)
          dl->AddRect(ImVec2(p.x - 1, p.y - 1), ImVec2(p.x + size.x + 1, p.y + size.y + 1), IM_COL32(255, 200, 90, 255), 4.0f, 0, 2.0f);
        if (hover && !c.tip.empty()) ImGui::SetTooltip("%s", glyphs().shown(c.tip).c_str());
      }
      if (c.group >= 0 && (i + 1 == cs.size() || cs[i + 1].group != c.group))
        draw_outline(g0, g1);
      if (tok && hover && mine) hovered = c.token;
      if (tok && clicked) {  // select this sentence and position: its next-token predictions stay shown
        s.view.batch = b;
        s.selected_token = c.token;
        if (enc && !enc->added) {  // encoders: a click masks the token (its id kept for the loss), a second unmasks it
          keep_masks_on_their_tokens(s);  // the others checked against the text they were set on
          const std::pair<int, int> at(b, c.token);
          const auto it = std::find(s.masked.begin(), s.masked.end(), at);
          if (it != s.masked.end()) s.masked.erase(it);
          else if (!is_mask) s.masked.push_back(at);
        }
      }
      ImGui::SameLine(0, gap_after(cs, i));
    }
    // Encoders: the padding of a shorter sentence, as chips of their own (their keys are masked).
    for (int t = batch.lengths[b]; encoder && t < batch.T; ++t) {
      const char* pad_text = "pad";
      const ImVec2 size(ImGui::CalcTextSize(pad_text).x + pad.x * 2, ImGui::GetTextLineHeight() + pad.y * 2);
      if (ImGui::GetContentRegionAvail().x < size.x + 4) ImGui::NewLine();
      const ImVec2 p = ImGui::GetCursorScreenPos();
      ImGui::Dummy(size);
      dl->AddRect(p, ImVec2(p.x + size.x, p.y + size.y), IM_COL32(110, 110, 120, 255), 4.0f, 0, 1.0f);
      dl->AddText(ImVec2(p.x + pad.x, p.y + pad.y), IM_COL32(140, 140, 150, 255), pad_text);
      if (b == 0) hook::add_text("messages", "padding chip");
      ImGui::SameLine(0, 2);
    }
    ImGui::PopID();
    ImGui::NewLine();
  }
  ImGui::EndChild();
  ImGui::PopStyleVar();
  if (hovered >= 0) s.hover_token = hovered;
  // Characters no installed font draws: named on the chips, and how to get them.
  const std::vector<std::string> missing = glyphs().missing_in(s.text);
  if (!missing.empty()) {
    std::string list;
    for (size_t i = 0; i < missing.size() && i < 8; ++i) list += (i ? ", " : "") + missing[i];
    if (missing.size() > 8) list += ", ...";
    std::string note = "No installed font draws " + list + ": shown as the code point";
    const std::vector<std::string> packages = glyphs().packages_for(s.text);
    for (size_t i = 0; i < packages.size(); ++i) note += (i ? ", " : " (install ") + packages[i];
    note += packages.empty() ? "." : ").";
    hook::add_text("messages", note);
    text_disabled_wrapped(note.c_str());
    hook::set_texts("missing_glyphs", missing);
  }
  char count[160];
  // A pretrained directory's tokenizer.json names its model (Unigram, WordPiece, BPE).
  const HfTokenizer* hf = f.weights->trained() && !f.weights->source.tokenizer_files.empty() ? f.weights->hf_tokenizer.get() : nullptr;
  const std::string kind = hf ? hf->model_type() + " tokenizer (" + f.weights->source.tokenizer_files + ")"
                              : std::string(tokenizer_name(batch.tokenizer)) + " tokenizer";
  std::snprintf(count, sizeof count, "%d token%s x %d sentence%s, %s", batch.T, batch.T == 1 ? "" : "s", batch.B(),
                batch.B() == 1 ? "" : "s", kind.c_str());
  text_disabled_wrapped(count);
  for (const std::string& note : batch.notes(f.weights->trained() ? f.weights->context : 0)) {
    ImGui::PushStyleColor(ImGuiCol_Text, ImVec4(1.0f, 0.75f, 0.3f, 1.0f));
    ImGui::TextWrapped("%s", note.c_str());
    ImGui::PopStyleColor();
    hook::add_text("messages", note);
  }
  if (batch.empty()) {
    const char* msg = "Nothing to attend over: type a sentence, or pick one from Presets.";
    ImGui::TextWrapped("%s", msg);
    hook::add_text("messages", msg);
  }
}

}  // namespace headmap
