// hf_normalizers.cpp: see hf_normalizers.h.
#include "core/text/hf_normalizers.h"

#include <unicode/normalizer2.h>
#include <unicode/uchar.h>
#include <unicode/unistr.h>

#include <algorithm>

namespace headmap::hf {
namespace {

struct UnicodeForm : Normalizer {
  const icu::Normalizer2* norm = nullptr;
  const icu::Normalizer2* decomp = nullptr;  // NFD for NFC and NFD, NFKD for NFKC and NFKD
  std::string form;
  static icu::UnicodeString one(char32_t c) { return icu::UnicodeString(UChar32(c)); }
  void run(NStr& n) const override {
    UErrorCode st = U_ZERO_ERROR;
    const icu::UnicodeString whole = icu::UnicodeString::fromUTF8(icu::StringPiece(n.s.data(), int32_t(n.s.size())));
    if (norm->isNormalized(whole, st) && U_SUCCESS(st)) return;
    // Segment by segment (a segment starts at a character with a boundary before it).
    // Alignment as the official library's: each input character is decomposed, and each
    // output character takes the range of the character its decomposition starts in
    // (a composed "e\u0301" aligns to the "e"; reordered marks align by position).
    NStr o;
    o.added_id = n.added_id;
    size_t seg = 0;
    std::vector<Span> owner;  // (decomposed code points of the segment)
    auto flush = [&](size_t end) {
      if (end <= seg) return;
      UErrorCode e = U_ZERO_ERROR;
      const icu::UnicodeString in = icu::UnicodeString::fromUTF8(icu::StringPiece(n.s.data() + seg, int32_t(end - seg)));
      const icu::UnicodeString out = norm->normalize(in, e);
      owner.clear();
      for (size_t i = seg; i < end;) {
        size_t len;
        const char32_t c = next_cp(n.s, i, &len);
        UErrorCode e2 = U_ZERO_ERROR;
        const icu::UnicodeString d = decomp->normalize(one(c), e2);
        owner.insert(owner.end(), size_t(std::max(1, d.countChar32())), n.at[i]);
        i += len;
      }
      if (U_FAILURE(e)) {
        for (size_t i = seg; i < end; ++i) o.s.push_back(n.s[i]), o.at.push_back(n.at[i]);
        seg = end;
        return;
      }
      size_t pos = 0;
      for (int32_t k = 0; k < out.length();) {
        const UChar32 c = out.char32At(k);
        k += U16_LENGTH(c);
        UErrorCode e2 = U_ZERO_ERROR;
        const int32_t l = std::max(1, decomp->normalize(one(char32_t(c)), e2).countChar32());
        o.push(char32_t(c), owner[std::min(pos, owner.size() - 1)]);
        pos += size_t(l);
      }
      seg = end;
    };
    for (size_t i = 0; i < n.s.size();) {
      size_t len;
      const char32_t c = next_cp(n.s, i, &len);
      if (i > seg && norm->hasBoundaryBefore(UChar32(c))) flush(i);
      i += len;
    }
    flush(n.s.size());
    n = std::move(o);
  }
  std::string name() const override { return form; }
};

struct Lowercase : Normalizer {
  void run(NStr& n) const override { map_chars(n, [](char32_t c, std::u32string& o) { append_lower(c, o); }); }
  std::string name() const override { return "Lowercase"; }
};

struct StripAccents : Normalizer {
  void run(NStr& n) const override {
    map_chars(n, [](char32_t c, std::u32string& o) {
      if (!is_mark(c)) o += c;
    });
  }
  std::string name() const override { return "StripAccents"; }
};

void strip_ends(NStr& n, bool left, bool right) {
  size_t b = 0, e = n.s.size();
  if (left)
    while (b < e) {
      size_t len;
      if (!is_whitespace(next_cp(n.s, b, &len))) break;
      b += len;
    }
  if (right)
    while (e > b) {
      size_t k = e - 1;
      while (k > b && (static_cast<unsigned char>(n.s[k]) & 0xC0) == 0x80) --k;
      size_t len;
      if (!is_whitespace(next_cp(n.s, k, &len))) break;
      e = k;
    }
  const int id = n.added_id;
  n = n.slice(b, e);
  n.added_id = id;
}

struct Strip : Normalizer {
  bool left = true, right = true;
  void run(NStr& n) const override { strip_ends(n, left, right); }
  std::string name() const override { return "Strip"; }
};

struct Prepend : Normalizer {
  std::string what;
  void run(NStr& n) const override { prepend(n, what); }
  std::string name() const override { return "Prepend"; }
};

struct Replace : Normalizer {
  Replacement r;
  explicit Replace(Replacement rep) : r(std::move(rep)) {}
  void run(NStr& n) const override { replace_all(n, r.re, r.content); }
  std::string name() const override { return "Replace"; }
};

struct BertNormalizer : Normalizer {
  bool clean_text = true, chinese = true, strip_accents = false, lowercase = true;
  const icu::Normalizer2* nfd = nullptr;
  void run(NStr& n) const override {
    if (clean_text)
      map_chars(n, [](char32_t c, std::u32string& o) {
        const bool tab_or_newline = c == '\t' || c == '\n' || c == '\r';
        if (c == 0 || c == 0xFFFD || (!tab_or_newline && is_other(c))) return;  // controls go first, NEL too
        o += tab_or_newline || is_whitespace(c) ? U' ' : c;
      });
    if (chinese)
      map_chars(n, [](char32_t c, std::u32string& o) {
        if (is_chinese_char(c)) o += U' ', o += c, o += U' ';
        else o += c;
      });
    if (strip_accents) {
      UnicodeForm f;
      f.norm = f.decomp = nfd;
      f.run(n);
      map_chars(n, [](char32_t c, std::u32string& o) {
        if (!is_nonspacing_mark(c)) o += c;
      });
    }
    if (lowercase) Lowercase().run(n);
  }
  std::string name() const override { return "BertNormalizer"; }
};

struct NormSeq : Normalizer {
  std::vector<std::unique_ptr<Normalizer>> parts;
  void run(NStr& n) const override {
    for (const auto& p : parts) p->run(n);
  }
  std::string name() const override {
    return sequence_name(parts);
  }
};

// ICU's four normalization forms, looked up once (null where ICU lacks one).
struct Forms {
  const icu::Normalizer2 *nfc = nullptr, *nfd = nullptr, *nfkc = nullptr, *nfkd = nullptr;
};
const Forms& forms() {
  static const Forms f = [] {
    Forms r;
    UErrorCode st = U_ZERO_ERROR;
    r.nfc = icu::Normalizer2::getNFCInstance(st);
    r.nfd = icu::Normalizer2::getNFDInstance(st);
    r.nfkc = icu::Normalizer2::getNFKCInstance(st);
    r.nfkd = icu::Normalizer2::getNFKDInstance(st);
    return r;
  }();
  return f;
}

}  // namespace

static Result<std::unique_ptr<Normalizer>> normalizer_of_type(const std::string& type, const json& j, const std::string& where) {
  if (type == "NFC" || type == "NFD" || type == "NFKC" || type == "NFKD") {
    auto u = std::make_unique<UnicodeForm>();
    u->form = type;
    u->norm = type == "NFC" ? forms().nfc : type == "NFD" ? forms().nfd : type == "NFKC" ? forms().nfkc : forms().nfkd;
    u->decomp = type == "NFC" || type == "NFD" ? forms().nfd : forms().nfkd;
    if (!u->norm) return Error{ErrorKind::BadFormat, where + ": ICU has no " + type + " normalizer on this system"};
    return std::unique_ptr<Normalizer>(std::move(u));
  }
  if (type == "Lowercase") return std::unique_ptr<Normalizer>(std::make_unique<Lowercase>());
  if (type == "StripAccents") return std::unique_ptr<Normalizer>(std::make_unique<StripAccents>());
  if (type == "Strip") {
    auto s = std::make_unique<Strip>();
    if (Status st = read_bools(j, where, {{"strip_left", true, &s->left}, {"strip_right", true, &s->right}}); !st) return st.error();
    return std::unique_ptr<Normalizer>(std::move(s));
  }
  if (type == "Prepend") {
    auto p = std::make_unique<Prepend>();
    HM_TRY(s, get_string(j, "prepend", "", where));
    p->what = s;
    return std::unique_ptr<Normalizer>(std::move(p));
  }
  if (type == "Replace") {
    HM_TRY(rep, parse_replacement(j, where));
    return std::unique_ptr<Normalizer>(std::make_unique<Replace>(std::move(rep)));
  }
  if (type == "BertNormalizer") {
    auto b = std::make_unique<BertNormalizer>();
    HM_TRY(clean, get_bool(j, "clean_text", true, where));
    HM_TRY(chinese, get_bool(j, "handle_chinese_chars", true, where));
    HM_TRY(lower, get_bool(j, "lowercase", true, where));
    HM_TRY(strip, get_bool(j, "strip_accents", lower, where));
    b->clean_text = clean, b->chinese = chinese, b->lowercase = lower, b->strip_accents = strip, b->nfd = forms().nfd;
    return std::unique_ptr<Normalizer>(std::move(b));
  }
  return Error{ErrorKind::BadFormat, where + ".type \"" + type + "\" is a normalizer headmap does not implement (Precompiled needs the SentencePiece model's rules)"};
}

Result<std::unique_ptr<Normalizer>> parse_normalizer(const json& j, const std::string& where) {
  return parse_stage<Normalizer, NormSeq>(j, where, "normalizers", parse_normalizer, normalizer_of_type);
}

}  // namespace headmap::hf
