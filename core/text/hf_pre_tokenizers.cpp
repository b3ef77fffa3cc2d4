// hf_pre_tokenizers.cpp: see hf_pre_tokenizers.h.
#include "core/text/hf_pre_tokenizers.h"

#include <algorithm>

#include "core/text/bpe.h"

namespace headmap::hf {
namespace {

// GPT-2's bytes as characters (bpe.h's spelling), each byte carrying its character's range.
void byte_level_spell(NStr& n) {
  NStr o;
  o.added_id = n.added_id;
  o.s.reserve(n.s.size() * 2);
  o.at.reserve(n.s.size() * 2);
  for (size_t i = 0; i < n.s.size(); ++i) {
    const std::string sp = gpt2_spell(std::string_view(&n.s[i], 1));
    o.s += sp;
    o.at.insert(o.at.end(), sp.size(), n.at[i]);
  }
  n = std::move(o);
}

struct ByteLevelPre : PreTokenizer {
  bool add_prefix_space = false, use_regex = true;
  Regex re;  // GPT-2's pattern
  void split(NStr&& n, std::vector<NStr>& out) const override {
    if (add_prefix_space && (n.s.empty() || n.s[0] != ' ')) prepend(n, " ");
    std::vector<NStr> words;
    if (use_regex) split_by(n, regex_pieces(re, n.s), Behavior::Isolated, false, words);
    else words.push_back(std::move(n));
    for (NStr& w : words) {
      byte_level_spell(w);
      if (!w.empty()) out.push_back(std::move(w));
    }
  }
  std::string name() const override { return "ByteLevel"; }
};

struct SplitPre : PreTokenizer {
  Regex re;
  Behavior behavior = Behavior::Isolated;
  bool invert = false;
  void split(NStr&& n, std::vector<NStr>& out) const override { split_by(n, regex_pieces(re, n.s), behavior, invert, out); }
  std::string name() const override { return "Split"; }
};

struct MetaspacePre : PreTokenizer {
  std::string replacement = "\xE2\x96\x81";  // ▁
  enum class Scheme { Always, First, Never } scheme = Scheme::Always;
  bool split_words = true;
  Regex space, rep;
  void split(NStr&& n, std::vector<NStr>& out) const override {
    replace_all(n, space, replacement);
    const bool starts = n.s.compare(0, replacement.size(), replacement) == 0;
    if (!starts && (scheme == Scheme::Always || (scheme == Scheme::First && !n.at.empty() && n.at.front().b == 0)))
      prepend(n, replacement);
    if (split_words) split_by(n, regex_pieces(rep, n.s), Behavior::MergedWithNext, false, out);
    else if (!n.empty()) out.push_back(std::move(n));
  }
  std::string name() const override { return "Metaspace"; }
};

struct WhitespacePre : PreTokenizer {  // \w+|[^\w\s]+, the matches kept
  void split(NStr&& n, std::vector<NStr>& out) const override {
    Pieces p;
    int prev = -1;  // class of the current run: 0 word, 1 other, 2 space
    for (size_t i = 0; i < n.s.size();) {
      size_t len;
      const char32_t c = next_cp(n.s, i, &len);
      const int k = is_word_char(c) ? 0 : is_whitespace(c) ? 2 : 1;
      if (k == prev) std::get<1>(p.back()) = i + len;
      else p.emplace_back(i, i + len, k != 2);
      prev = k;
      i += len;
    }
    if (p.empty()) return;
    split_by(n, p, Behavior::Removed, true, out);
  }
  std::string name() const override { return "Whitespace"; }
};

// Note: WhitespacePre's pieces mark matches true and invert=true turns them into "keep".
// (split_by with Removed drops pieces flagged true after inversion, i.e. the spaces.)

struct CharSplitPre : PreTokenizer {
  enum class Kind { WhitespaceSplit, Digits, Punctuation, Bert } kind;
  Behavior behavior = Behavior::Isolated;
  bool individual_digits = false;
  void split(NStr&& n, std::vector<NStr>& out) const override {
    switch (kind) {
      case Kind::WhitespaceSplit:
        split_by(n, char_pieces(n.s, is_whitespace), Behavior::Removed, false, out);
        break;
      case Kind::Digits:
        split_by(n, char_pieces(n.s, is_numeric), individual_digits ? Behavior::Isolated : Behavior::Contiguous, false, out);
        break;
      case Kind::Punctuation:
        split_by(n, char_pieces(n.s, is_punctuation), behavior, false, out);
        break;
      case Kind::Bert: {
        std::vector<NStr> words;
        split_by(n, char_pieces(n.s, is_whitespace), Behavior::Removed, false, words);
        for (NStr& w : words) split_by(w, char_pieces(w.s, is_punctuation), Behavior::Isolated, false, out);
        break;
      }
    }
  }
  std::string name() const override {
    switch (kind) {
      case Kind::WhitespaceSplit: return "WhitespaceSplit";
      case Kind::Digits: return "Digits";
      case Kind::Punctuation: return "Punctuation";
      case Kind::Bert: return "BertPreTokenizer";
    }
    return "";
  }
};

struct PreSeq : PreTokenizer {
  std::vector<std::unique_ptr<PreTokenizer>> parts;
  void split(NStr&& n, std::vector<NStr>& out) const override {
    std::vector<NStr> cur, next;
    cur.push_back(std::move(n));
    for (const auto& p : parts) {
      next.clear();
      for (NStr& w : cur) p->split(std::move(w), next);
      std::swap(cur, next);
    }
    for (NStr& w : cur)
      if (!w.empty()) out.push_back(std::move(w));
  }
  std::string name() const override {
    return sequence_name(parts);
  }
};

}  // namespace

static Result<std::unique_ptr<PreTokenizer>> pre_tokenizer_of_type(const std::string& type, const json& j, const std::string& where) {
  if (type == "ByteLevel") {
    auto b = std::make_unique<ByteLevelPre>();
    if (Status s = read_bools(j, where, {{"add_prefix_space", true, &b->add_prefix_space}, {"use_regex", true, &b->use_regex}}); !s) return s.error();
    HM_TRY(re, Regex::compile(kGpt2SplitPattern, false, where));
    b->re = re;
    return std::unique_ptr<PreTokenizer>(std::move(b));
  }
  if (type == "Split") {
    auto s = std::make_unique<SplitPre>();
    HM_TRY(re, required_pattern(j, where));
    const json* beh = field(j, "behavior");
    if (!beh) return Error{ErrorKind::BadFormat, where + ".behavior is missing"};
    HM_TRY(b, parse_behavior(*beh, where + ".behavior"));
    HM_TRY(inv, get_bool(j, "invert", false, where));
    s->re = re, s->behavior = b, s->invert = inv;
    return std::unique_ptr<PreTokenizer>(std::move(s));
  }
  if (type == "Metaspace") {
    auto m = std::make_unique<MetaspacePre>();
    const json* rep = field(j, "replacement");
    if (rep) {
      if (!rep->is_string() || decode_utf8(rep->get<std::string>()).codepoints.size() != 1)
        return Error{ErrorKind::BadFormat, where + ".replacement is not one character"};
      m->replacement = rep->get<std::string>();
    }
    HM_TRY(scheme, get_string(j, "prepend_scheme", "", where));
    if (scheme.empty()) {  // older files: add_prefix_space
      HM_TRY(aps, get_bool(j, "add_prefix_space", true, where));
      m->scheme = aps ? MetaspacePre::Scheme::Always : MetaspacePre::Scheme::Never;
    } else if (scheme == "always") m->scheme = MetaspacePre::Scheme::Always;
    else if (scheme == "first") m->scheme = MetaspacePre::Scheme::First;
    else if (scheme == "never") m->scheme = MetaspacePre::Scheme::Never;
    else return Error{ErrorKind::BadFormat, where + ".prepend_scheme is not always, first or never"};
    HM_TRY(sp, get_bool(j, "split", true, where));
    m->split_words = sp;
    HM_TRY(space, Regex::compile(" ", true, where));
    HM_TRY(r, Regex::compile(m->replacement, true, where));
    m->space = space, m->rep = r;
    return std::unique_ptr<PreTokenizer>(std::move(m));
  }
  if (type == "Whitespace") return std::unique_ptr<PreTokenizer>(std::make_unique<WhitespacePre>());
  if (type == "WhitespaceSplit" || type == "Digits" || type == "Punctuation" || type == "BertPreTokenizer") {
    auto c = std::make_unique<CharSplitPre>();
    c->kind = type == "WhitespaceSplit" ? CharSplitPre::Kind::WhitespaceSplit
              : type == "Digits"        ? CharSplitPre::Kind::Digits
              : type == "Punctuation"   ? CharSplitPre::Kind::Punctuation
                                        : CharSplitPre::Kind::Bert;
    HM_TRY(ind, get_bool(j, "individual_digits", false, where));
    c->individual_digits = ind;
    if (const json* beh = field(j, "behavior")) {
      HM_TRY(b, parse_behavior(*beh, where + ".behavior"));
      c->behavior = b;
    }
    return std::unique_ptr<PreTokenizer>(std::move(c));
  }
  return Error{ErrorKind::BadFormat, where + ".type \"" + type + "\" is a pre-tokenizer headmap does not implement"};
}

Result<std::unique_ptr<PreTokenizer>> parse_pre_tokenizer(const json& j, const std::string& where) {
  return parse_stage<PreTokenizer, PreSeq>(j, where, "pretokenizers", parse_pre_tokenizer, pre_tokenizer_of_type);
}

}  // namespace headmap::hf
