#include "app/gui/glyphs.h"

#include <GLFW/glfw3.h>
#include <imgui_impl_glfw.h>
#include <stb_truetype.h>

#include <algorithm>
#include <cmath>
#include <utility>

#include "app/common/bidi.h"
#include "core/text/utf8.h"

namespace headmap {

namespace {

// The primary font's fixed ranges: Latin with accents, Greek, Cyrillic, phonetic superscripts
// (ᵀ), punctuation, super- and subscripts, arrows, maths (√ ÷ · ≤ ∞), technical and control
// pictures (␣), shapes, U+FFFD. Other characters join when the text contains them.
const ImWchar kBaseRanges[] = {0x0020, 0x024F, 0x0370, 0x03FF, 0x0400, 0x04FF, 0x1D00, 0x1DBF, 0x2000, 0x23FF,
                               0x2400, 0x243F, 0x2500, 0x26FF, 0xFFFD, 0xFFFD, 0};

bool in_base(char32_t cp) {
  for (int i = 0; kBaseRanges[i]; i += 2)
    if (cp >= kBaseRanges[i] && cp <= kBaseRanges[i + 1]) return true;
  return false;
}

bool plain_ascii(std::string_view s) {
  for (char c : s)
    if (c < 0x20 || c > 0x7E) return false;
  return true;
}

const stbtt_fontinfo* info_of(const FontFace& f) { return reinterpret_cast<const stbtt_fontinfo*>(f.info.data()); }

}  // namespace

Glyphs& glyphs() {
  static Glyphs g;
  return g;
}

void Glyphs::want(char32_t cp) {
  if (!wanted_.insert(cp).second || !chain_.loaded()) return;
  const int face = chain_.face_for(cp);
  // The atlas lacks it: a fallback font's glyph, or the primary's outside the fixed ranges.
  if (face > 0 || (face == 0 && (!in_base(cp) || cp > 0xFFFF))) dirty_ = true;
}

ImWchar Glyphs::alias(char32_t cp) {
  if (cp <= 0xFFFF) return static_cast<ImWchar>(cp);
  if (auto it = alias_.find(cp); it != alias_.end()) return it->second;
  while (next_alias_ >= 0xE000 && wanted_.count(next_alias_)) --next_alias_;  // never a character the text holds
  if (next_alias_ < 0xE000) return 0;
  const ImWchar a = next_alias_--;
  alias_.emplace(cp, a);
  real_.emplace(a, cp);
  return a;
}

template <bool kAliases>
std::string Glyphs::display(std::string_view utf8) {
  if (plain_ascii(utf8)) return std::string(utf8);
  std::string out;
  out.reserve(utf8.size());
  for (const Utf8Unit& u : utf8_units(utf8)) {
    if (!u.valid) {  // an invalid byte: the replacement character, which is kept for them
      out += "\xEF\xBF\xBD";
      continue;
    }
    want(u.cp);
    const int face = chain_.loaded() ? chain_.face_for(u.cp) : 0;
    if (face < 0) {
      if (!is_invisible(u.cp)) out += codepoint_name(u.cp);
    } else if (kAliases && u.cp > 0xFFFF) {
      if (const ImWchar a = alias(u.cp)) append_utf8(out, a);
      else out += codepoint_name(u.cp);
    } else {
      out.append(utf8.substr(u.begin, u.end - u.begin));
    }
  }
  return out;
}

std::string Glyphs::shown(std::string_view utf8) { return display<true>(visual_text(utf8)); }  // drawn: visual order, Arabic joined
std::string Glyphs::readable(std::string_view utf8) { return display<false>(utf8); }

std::string Glyphs::to_edit(std::string_view text) {
  bool ascii = true;
  for (char c : text) ascii = ascii && static_cast<unsigned char>(c) < 0x80;
  if (ascii) return std::string(text);
  std::string out;
  out.reserve(text.size());
  for (const Utf8Unit& u : utf8_units(text)) {
    const ImWchar a = u.valid ? (want(u.cp), alias(u.cp)) : 0;
    if (u.valid && u.cp > 0xFFFF && a) append_utf8(out, a);
    else out.append(text.substr(u.begin, u.end - u.begin));  // invalid bytes too: Dear ImGui shows them as U+FFFD
  }
  return out;
}

std::string Glyphs::from_edit(std::string_view edit) const {
  if (real_.empty()) return std::string(edit);
  std::string out;
  out.reserve(edit.size());
  for (const Utf8Unit& u : utf8_units(edit)) {
    auto it = u.valid ? real_.find(static_cast<ImWchar>(u.cp)) : real_.end();
    if (u.valid && u.cp <= 0xFFFF && it != real_.end()) append_utf8(out, it->second);
    else out.append(edit.substr(u.begin, u.end - u.begin));
  }
  return out;
}

std::vector<std::string> Glyphs::missing_in(std::string_view utf8) const {
  std::set<char32_t> none;
  if (chain_.loaded() && !plain_ascii(utf8))
    for (const Utf8Unit& u : utf8_units(utf8))
      if (u.valid && u.cp >= 0x20 && chain_.face_for(u.cp) < 0 && !is_invisible(u.cp)) none.insert(u.cp);  // not line breaks, tabs
  std::vector<std::string> out;
  for (char32_t cp : none) out.push_back(codepoint_name(cp));
  return out;
}

std::vector<std::string> Glyphs::packages_for(std::string_view utf8) const {
  std::set<std::string> pk;
  if (chain_.loaded() && !plain_ascii(utf8))
    for (const Utf8Unit& u : utf8_units(utf8))
      if (u.valid && u.cp >= 0x20 && chain_.face_for(u.cp) < 0 && !is_invisible(u.cp))
        if (std::string p = font_package_for(u.cp); !p.empty()) pk.insert(p);
  return {pk.begin(), pk.end()};
}

void Glyphs::audit_edit(std::string_view edit, std::vector<std::string>* boxes, int* replacements) const {
  const ImFont* font = ImGui::GetFont();
  std::set<char32_t> seen;
  *replacements = 0;
  for (const Utf8Unit& u : utf8_units(edit)) {
    if (!u.valid) {  // Dear ImGui decodes an invalid byte as U+FFFD
      ++*replacements;
      continue;
    }
    if (u.cp < 0x20) continue;  // newlines and tabs: not glyphs
    const char32_t real = u.cp <= 0xFFFF && real_.count(static_cast<ImWchar>(u.cp)) ? real_.at(static_cast<ImWchar>(u.cp)) : u.cp;
    if (u.cp > 0xFFFF || !font->FindGlyphNoFallback(static_cast<ImWchar>(u.cp)))
      if (seen.insert(real).second) boxes->push_back(codepoint_name(real));
  }
}

std::vector<std::string> Glyphs::fonts() const {
  std::vector<std::string> out;
  for (int i = 0; i < chain_.faces(); ++i) out.push_back(chain_.face(i).path);
  return out;
}

Status Glyphs::build(ImFontAtlas& atlas, const std::string& primary_path, float size) {
  if (!chain_.loaded() || chain_path_ != primary_path) {
    if (Status s = chain_.load_primary(primary_path); !s) return s;
    chain_path_ = primary_path;
    for (char32_t cp : wanted_) (void)chain_.face_for(cp);
  }
  atlas.Clear();
  ImFontGlyphRangesBuilder rb;
  rb.AddRanges(kBaseRanges);
  for (char32_t cp : wanted_)
    if (cp <= 0xFFFF && chain_.face_for(cp) == 0) rb.AddChar(static_cast<ImWchar>(cp));
  ranges_.clear();
  rb.BuildRanges(&ranges_);
  const FontFace& primary = chain_.face(0);
  ImFontConfig fc;
  fc.OversampleH = 2;
  fc.FontDataOwnedByAtlas = false;  // the chain keeps the bytes: nothing is read again
  ImFont* font = atlas.AddFontFromMemoryTTF(const_cast<char*>(primary.bytes.data()), static_cast<int>(primary.bytes.size()), size,
                                            &fc, ranges_.Data);
  font->FallbackChar = kBox;
  // Dear ImGui puts a merged glyph's baseline at the primary font's ascent, rounded so.
  const float ascent = std::floor(primary.ascent_units() * primary.scale(size) + 1);

  // The other characters' glyphs, rasterised here (once per size) into custom rectangles.
  std::vector<std::pair<int, const Bitmap*>> pending;
  for (char32_t cp : wanted_) {
    const int face = chain_.face_for(cp);
    if (face < 0 || (face == 0 && cp <= 0xFFFF)) continue;
    const ImWchar id = alias(cp);
    if (!id) continue;
    auto [it, fresh] = bitmaps_.try_emplace({cp, size});
    Bitmap& bm = it->second;
    if (fresh) {
      const FontFace& f = chain_.face(face);
      const stbtt_fontinfo* info = info_of(f);
      const float s = chain_.scale(face, size);
      int adv = 0, lsb = 0;
      stbtt_GetCodepointHMetrics(info, static_cast<int>(cp), &adv, &lsb);
      bm.advance = std::round(adv * s);
      unsigned char* px = stbtt_GetCodepointBitmap(info, s, s, static_cast<int>(cp), &bm.w, &bm.h, &bm.x0, &bm.y0);
      if (px) bm.alpha.assign(px, px + static_cast<size_t>(bm.w) * bm.h);
      stbtt_FreeBitmap(px, nullptr);
    }
    const int rect = atlas.AddCustomRectFontGlyph(font, id, std::max(1, bm.w), std::max(1, bm.h), bm.advance,
                                                  ImVec2(static_cast<float>(bm.x0), ascent + bm.y0));
    pending.emplace_back(rect, &bm);
  }
  // The hollow box ("tofu") for characters no font has: unlike U+FFFD's black diamond.
  Bitmap box;
  box.w = std::max(4, static_cast<int>(std::lround(size * 0.5f)));
  box.h = std::max(5, static_cast<int>(std::lround(size * 0.7f)));
  box.x0 = std::max(1, static_cast<int>(std::lround(size * 0.08f)));
  box.y0 = -box.h;
  box.advance = static_cast<float>(box.w + 2 * box.x0);
  box.alpha.assign(static_cast<size_t>(box.w) * box.h, 0);
  const int t = std::max(1, static_cast<int>(std::lround(size / 16.0f)));
  for (int y = 0; y < box.h; ++y)
    for (int x = 0; x < box.w; ++x)
      if (x < t || y < t || x >= box.w - t || y >= box.h - t) box.alpha[static_cast<size_t>(y) * box.w + x] = 255;
  pending.emplace_back(atlas.AddCustomRectFontGlyph(font, kBox, box.w, box.h, box.advance, ImVec2(static_cast<float>(box.x0), ascent + box.y0)),
                       &box);

  if (!atlas.Build()) return Error{ErrorKind::Io, "The font atlas could not be built."};
  unsigned char* tex = nullptr;
  int tw = 0, th = 0;
  atlas.GetTexDataAsAlpha8(&tex, &tw, &th);
  for (const auto& [rect, bm] : pending) {
    const ImFontAtlasCustomRect* r = atlas.GetCustomRectByIndex(rect);
    for (int y = 0; y < bm->h && y < r->Height; ++y)
      std::copy_n(bm->alpha.data() + static_cast<size_t>(y) * bm->w, std::min<int>(bm->w, r->Width),
                  tex + static_cast<size_t>(r->Y + y) * tw + r->X);
  }
  dirty_ = false;
  ++generation_;
  atlas_glyphs_ = font->Glyphs.Size;
  return Status();
}

// ---- input: typed characters and the clipboard -------------------------------------------
void Glyphs::queue_typed(char32_t cp) {
  std::string one;
  append_utf8(one, cp);
  typed_ += to_edit(one);
}

std::string Glyphs::take_typed() { return std::exchange(typed_, std::string()); }

void type_char(unsigned int c) {
  if (c > 0xFFFF && c <= 0x10FFFF) glyphs().queue_typed(static_cast<char32_t>(c));
  else ImGui::GetIO().AddInputCharacter(c);
}

static void char_callback(GLFWwindow* w, unsigned int c) {
  if (c > 0xFFFF) glyphs().queue_typed(static_cast<char32_t>(c));
  else ImGui_ImplGlfw_CharCallback(w, c);
}

void install_glyph_input(GLFWwindow* window) {
  glfwSetCharCallback(window, char_callback);
  ImGuiIO& io = ImGui::GetIO();
  io.ClipboardUserData = window;
  io.GetClipboardTextFn = [](void* ud) -> const char* {
    static std::string text;
    const char* t = glfwGetClipboardString(static_cast<GLFWwindow*>(ud));
    text = glyphs().to_edit(t ? t : "");
    return text.c_str();
  };
  io.SetClipboardTextFn = [](void* ud, const char* text) {
    glfwSetClipboardString(static_cast<GLFWwindow*>(ud), glyphs().from_edit(text ? text : "").c_str());
  };
}

}  // namespace headmap
