// hf_decoders.cpp: see hf_decoders.h.
#include "core/text/hf_decoders.h"

#include <algorithm>

#include "core/text/bpe.h"

namespace headmap::hf {
namespace {

struct ByteLevelDec : Decoder {
  void run(std::vector<std::string>& toks) const override {
    std::string bytes;
    for (const std::string& t : toks) {
      auto b = gpt2_unspell(t);
      bytes += b ? *b : t;
    }
    toks.assign(1, sanitize_utf8(bytes));
  }
};

struct MetaspaceDec : Decoder {
  std::string replacement = "\xE2\x96\x81";
  bool prepend = true;
  void run(std::vector<std::string>& toks) const override {
    for (size_t i = 0; i < toks.size(); ++i) {
      std::string o;
      for (size_t k = 0; k < toks[i].size();) {
        if (toks[i].compare(k, replacement.size(), replacement) == 0) o += ' ', k += replacement.size();
        else o += toks[i][k++];
      }
      if (i == 0 && prepend && !o.empty() && o[0] == ' ') o.erase(0, 1);
      toks[i] = o;
    }
  }
};

struct WordPieceDec : Decoder {
  std::string prefix = "##";
  bool cleanup = true;
  void run(std::vector<std::string>& toks) const override {
    for (size_t i = 0; i < toks.size(); ++i) {
      std::string& t = toks[i];
      if (i != 0) {
        if (t.compare(0, prefix.size(), prefix) == 0) t.erase(0, prefix.size());
        else t.insert(0, " ");
      }
      if (cleanup) {
        static const std::pair<const char*, const char*> fixes[] = {{" .", "."}, {" ?", "?"}, {" !", "!"}, {" ,", ","},
                                                                    {" ' ", "'"}, {" n't", "n't"}, {" 'm", "'m"}, {" do not", " don't"},
                                                                    {" 's", "'s"}, {" 've", "'ve"}, {" 're", "'re"}};
        for (auto [from, to] : fixes)
          for (size_t at = 0; (at = t.find(from, at)) != std::string::npos;) t.replace(at, std::strlen(from), to), at += std::strlen(to);
      }
    }
  }
};
struct ByteFallbackDec : Decoder {
  void run(std::vector<std::string>& toks) const override {
    std::vector<std::string> out;
    std::string bytes;
    size_t nbytes = 0;
    auto flush = [&] {
      if (!nbytes) return;
      int bad = 0;
      std::string s = sanitize_utf8(bytes, &bad);
      if (bad) {
        s.clear();
        for (size_t k = 0; k < nbytes; ++k) s += "\xEF\xBF\xBD";
      }
      out.push_back(s);
      bytes.clear();
      nbytes = 0;
    };
    for (const std::string& t : toks) {
      unsigned char b;
      if (parse_byte_piece(t, &b)) {
        bytes.push_back(char(b)), ++nbytes;
        continue;
      }
      flush();
      out.push_back(t);
    }
    flush();
    toks = std::move(out);
  }
};

struct FuseDec : Decoder {
  void run(std::vector<std::string>& toks) const override {
    std::string all;
    for (const auto& t : toks) all += t;
    toks.assign(1, all);
  }
};

struct StripDec : Decoder {
  char32_t content = ' ';
  size_t start = 0, stop = 0;
  void run(std::vector<std::string>& toks) const override {
    for (std::string& t : toks) {
      std::u32string cps = decode_utf8(t).codepoints;
      size_t b = 0, e = cps.size();
      for (size_t k = 0; k < start && b < e && cps[b] == content; ++k) ++b;
      for (size_t k = 0; k < stop && e > b && cps[e - 1] == content; ++k) --e;
      t = encode_utf8(std::u32string_view(cps).substr(b, e - b));
    }
  }
};

struct ReplaceDec : Decoder {
  Replacement r;
  explicit ReplaceDec(Replacement rep) : r(std::move(rep)) {}
  void run(std::vector<std::string>& toks) const override {
    std::vector<std::pair<size_t, size_t>> m;
    for (std::string& t : toks) {
      r.re.find_all(t, m);
      std::string o;
      size_t prev = 0;
      for (auto [b, e] : m) o.append(t, prev, b - prev), o += r.content, prev = e;
      o.append(t, prev, std::string::npos);
      t = o;
    }
  }
};

struct DecSeq : Decoder {
  std::vector<std::unique_ptr<Decoder>> parts;
  void run(std::vector<std::string>& toks) const override {
    for (const auto& p : parts) p->run(toks);
  }
};

}  // namespace

static Result<std::unique_ptr<Decoder>> decoder_of_type(const std::string& type, const json& j, const std::string& where) {
  if (type == "ByteLevel") return std::unique_ptr<Decoder>(std::make_unique<ByteLevelDec>());
  if (type == "ByteFallback") return std::unique_ptr<Decoder>(std::make_unique<ByteFallbackDec>());
  if (type == "Fuse") return std::unique_ptr<Decoder>(std::make_unique<FuseDec>());
  if (type == "Metaspace") {
    auto m = std::make_unique<MetaspaceDec>();
    HM_TRY(rep, get_string(j, "replacement", m->replacement, where));
    HM_TRY(scheme, get_string(j, "prepend_scheme", "", where));
    HM_TRY(aps, get_bool(j, "add_prefix_space", true, where));
    m->replacement = rep;
    m->prepend = scheme.empty() ? aps : scheme != "never";
    return std::unique_ptr<Decoder>(std::move(m));
  }
  if (type == "WordPiece") {
    auto w = std::make_unique<WordPieceDec>();
    HM_TRY(prefix, get_string(j, "prefix", "##", where));
    HM_TRY(cleanup, get_bool(j, "cleanup", true, where));
    w->prefix = prefix, w->cleanup = cleanup;
    return std::unique_ptr<Decoder>(std::move(w));
  }
  if (type == "Strip") {
    auto s = std::make_unique<StripDec>();
    HM_TRY(content, get_string(j, "content", " ", where));
    const std::u32string cps = decode_utf8(content).codepoints;
    if (cps.size() != 1) return Error{ErrorKind::BadFormat, where + ".content is not one character"};
    s->content = cps[0];
    for (const char* k : {"start", "stop"}) {
      const json* f = field(j, k);
      if (f && (!f->is_number_unsigned() || f->get<uint64_t>() > 1u << 20)) return Error{ErrorKind::BadFormat, where + "." + k + " is not a count"};
      (std::string(k) == "start" ? s->start : s->stop) = f ? size_t(f->get<uint64_t>()) : 0;
    }
    return std::unique_ptr<Decoder>(std::move(s));
  }
  if (type == "Replace") {
    HM_TRY(rep, parse_replacement(j, where));
    return std::unique_ptr<Decoder>(std::make_unique<ReplaceDec>(std::move(rep)));
  }
  return Error{ErrorKind::BadFormat, where + ".type \"" + type + "\" is a decoder headmap does not implement"};
}

Result<std::unique_ptr<Decoder>> parse_decoder(const json& j, const std::string& where) {
  return parse_stage<Decoder, DecSeq>(j, where, "decoders", parse_decoder, decoder_of_type);
}

}  // namespace headmap::hf
