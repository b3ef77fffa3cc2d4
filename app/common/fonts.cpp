#include "app/common/fonts.h"

#include <fontconfig/fontconfig.h>
#include <stb_truetype.h>

#include <cstdio>
#include <cstring>
#include <mutex>

#include "core/io/file_io.h"

namespace headmap {

namespace {

// A system font that may serve as a fallback: its file, face and characters.
struct SystemFont {
  std::string path;
  int index = 0;
  FcCharSet* chars = nullptr;  // owned by the font set below, which is never freed
};

// The system's outline fonts without colour glyphs, in fontconfig's order of preference for
// "sans-serif" (the order a desktop's own fallback follows). Sorted once per process.
const std::vector<SystemFont>& system_fonts() {
  static std::vector<SystemFont> fonts;
  static std::once_flag once;
  std::call_once(once, [] {
    if (!FcInit()) return;
    FcPattern* pat = FcNameParse(reinterpret_cast<const FcChar8*>("sans-serif"));
    if (!pat) return;
    FcConfigSubstitute(nullptr, pat, FcMatchPattern);
    FcDefaultSubstitute(pat);
    FcResult res;
    FcFontSet* set = FcFontSort(nullptr, pat, FcFalse, nullptr, &res);  // kept: the charsets live in it
    FcPatternDestroy(pat);
    if (!set) return;
    for (int i = 0; i < set->nfont; ++i) {
      FcPattern* f = set->fonts[i];
      FcChar8* file = nullptr;
      FcChar8* format = nullptr;
      FcCharSet* cs = nullptr;
      FcBool outline = FcFalse, colour = FcFalse;
      int index = 0;
      if (FcPatternGetString(f, FC_FILE, 0, &file) != FcResultMatch || FcPatternGetCharSet(f, FC_CHARSET, 0, &cs) != FcResultMatch)
        continue;
      FcPatternGetBool(f, FC_OUTLINE, 0, &outline);
      FcPatternGetBool(f, FC_COLOR, 0, &colour);
      FcPatternGetInteger(f, FC_INDEX, 0, &index);
      FcPatternGetString(f, FC_FONTFORMAT, 0, &format);
      const std::string fmt = format ? reinterpret_cast<const char*>(format) : "";
      if (!outline || colour || (fmt != "TrueType" && fmt != "CFF")) continue;  // what stb_truetype draws
      fonts.push_back({reinterpret_cast<const char*>(file), index, cs});
    }
  });
  return fonts;
}

Status open_face(FontFace& f, const std::string& path, int index) {
  Result<std::string> bytes = read_file(path, 64u << 20);
  if (!bytes) return bytes.error();
  f.path = path;
  f.index = index;
  f.bytes = std::move(*bytes);
  f.info.assign(sizeof(stbtt_fontinfo), 0);
  auto* info = reinterpret_cast<stbtt_fontinfo*>(f.info.data());
  const auto* data = reinterpret_cast<const unsigned char*>(f.bytes.data());
  const int offset = stbtt_GetFontOffsetForIndex(data, index);
  if (offset < 0 || !stbtt_InitFont(info, data, offset)) {
    f.bytes.clear();
    return Error{ErrorKind::BadFormat, path + " is not a TrueType or OpenType font."};
  }
  return Status();
}

}  // namespace

const stbtt_fontinfo* FontFace::stb() const { return reinterpret_cast<const stbtt_fontinfo*>(info.data()); }
int FontFace::glyph(char32_t cp) const { return stbtt_FindGlyphIndex(stb(), static_cast<int>(cp)); }
float FontFace::scale(float px) const { return stbtt_ScaleForPixelHeight(stb(), px); }
float FontFace::units_per_em() const { return 1.0f / stbtt_ScaleForMappingEmToPixels(stb(), 1.0f); }

float FontChain::scale(int i, float px) const {
  const float s0 = face(0).scale(px);
  return i == 0 ? s0 : s0 * face(0).units_per_em() / face(i).units_per_em();
}

float FontFace::ascent_units() const {
  int a = 0, d = 0, g = 0;
  stbtt_GetFontVMetrics(stb(), &a, &d, &g);
  return static_cast<float>(a);
}

std::string codepoint_name(char32_t cp) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "U+%04X", static_cast<unsigned>(cp));
  return buf;
}

std::string font_package_for(char32_t c) {
  if ((c >= 0xE000 && c <= 0xF8FF) || c >= 0xF0000) return "";
  if ((c >= 0x1100 && c <= 0x11FF) || (c >= 0x2E80 && c <= 0x9FFF) || (c >= 0xA960 && c <= 0xA97F) || (c >= 0xAC00 && c <= 0xD7FF) ||
      (c >= 0xF900 && c <= 0xFAFF) || (c >= 0xFE30 && c <= 0xFE4F) || (c >= 0xFF00 && c <= 0xFFEF) || (c >= 0x20000 && c <= 0x3FFFF))
    return "fonts-noto-cjk";
  if ((c >= 0x2190 && c <= 0x2BFF) || (c >= 0x1F000 && c <= 0x1FAFF)) return "fonts-symbola";
  return "fonts-noto-core";
}

bool is_invisible(char32_t c) {
  return c == 0xAD || c == 0x34F || c == 0x61C || (c >= 0x115F && c <= 0x1160) || (c >= 0x17B4 && c <= 0x17B5) ||
         (c >= 0x180B && c <= 0x180F) || (c >= 0x200B && c <= 0x200F) || (c >= 0x202A && c <= 0x202E) ||
         (c >= 0x2060 && c <= 0x206F) || c == 0x3164 || (c >= 0xFE00 && c <= 0xFE0F) || c == 0xFEFF || c == 0xFFA0 ||
         (c >= 0xFFF0 && c <= 0xFFF8) || (c >= 0x1BCA0 && c <= 0x1BCA3) || (c >= 0x1D173 && c <= 0x1D17A) ||
         (c >= 0xE0000 && c <= 0xE0FFF);
}

Status FontChain::load_primary(const std::string& path) {
  auto f = std::make_unique<FontFace>();
  if (Status s = open_face(*f, path, 0); !s) return s;
  faces_.clear();
  cache_.clear();
  opened_.clear();
  opened_[path + "#0"] = 0;
  faces_.push_back(std::move(f));
  return Status();
}

int FontChain::face_for(char32_t cp) const {
  if (faces_.empty()) return -1;
  if (auto it = cache_.find(cp); it != cache_.end()) return it->second;
  int found = -1;
  for (size_t i = 0; i < faces_.size() && found < 0; ++i)
    if (faces_[i]->glyph(cp)) found = static_cast<int>(i);
  if (found < 0) {
    const std::vector<SystemFont>& sys = system_fonts();
    if (sys.empty() && notes_.empty())
      notes_.push_back("fontconfig lists no system fonts: characters DejaVu Sans lacks (CJK, emoji...) are shown as U+XXXX.");
    for (const SystemFont& s : sys) {
      if (!FcCharSetHasChar(s.chars, static_cast<FcChar32>(cp))) continue;
      const std::string key = s.path + "#" + std::to_string(s.index);
      auto it = opened_.find(key);
      if (it == opened_.end()) {
        auto f = std::make_unique<FontFace>();
        if (Status st = open_face(*f, s.path, s.index); !st) {
          notes_.push_back("The font " + s.path + " cannot be read (" + st.error().message + "): its characters are shown as U+XXXX.");
          it = opened_.emplace(key, -1).first;
        } else {
          faces_.push_back(std::move(f));
          it = opened_.emplace(key, static_cast<int>(faces_.size()) - 1).first;
        }
      }
      if (it->second >= 0 && faces_[static_cast<size_t>(it->second)]->glyph(cp)) {
        found = it->second;
        break;
      }
    }
  }
  cache_.emplace(cp, found);
  return found;
}

std::vector<Utf8Unit> utf8_units(std::string_view s) {
  std::vector<Utf8Unit> out;
  out.reserve(s.size());
  size_t i = 0;
  while (i < s.size()) {
    const auto b0 = static_cast<unsigned char>(s[i]);
    int n = 0;
    char32_t cp = 0, min = 0;
    if (b0 < 0x80) n = 1, cp = b0;
    else if (b0 >= 0xC2 && b0 <= 0xDF) n = 2, cp = b0 & 0x1F, min = 0x80;
    else if (b0 >= 0xE0 && b0 <= 0xEF) n = 3, cp = b0 & 0x0F, min = 0x800;
    else if (b0 >= 0xF0 && b0 <= 0xF4) n = 4, cp = b0 & 0x07, min = 0x10000;
    bool ok = n > 0 && i + n <= s.size();
    for (int k = 1; ok && k < n; ++k) {
      const auto b = static_cast<unsigned char>(s[i + k]);
      if ((b & 0xC0) != 0x80) ok = false;
      cp = (cp << 6) | (b & 0x3F);
    }
    if (ok && (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))) ok = false;
    if (ok) {
      out.push_back({cp, i, i + n, true});
      i += n;
    } else {
      out.push_back({0xFFFD, i, i + 1, false});
      ++i;
    }
  }
  return out;
}

}  // namespace headmap
