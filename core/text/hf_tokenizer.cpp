// hf_tokenizer.cpp: the tokenizer.json pipeline (hf_tokenizer.h), assembled from its stages.
//
// Each stage kind is a module that parses its own JSON: hf_normalizers, hf_pre_tokenizers,
// hf_models, hf_post_processors, hf_decoders (what they share: hf_stages.h). Here: the
// file's reading (size, depth, the big tables straight from the parser), the added tokens,
// and the encoding that runs the stages in turn.
// Sections: [loading] [encoding]
#include "core/text/hf_tokenizer.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <filesystem>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/io/file_io.h"
#include "core/io/json_limits.h"
#include "core/io/model_dir.h"
#include "core/text/bpe.h"
#include "core/text/hf_decoders.h"
#include "core/text/hf_models.h"
#include "core/text/hf_normalizers.h"
#include "core/text/hf_post_processors.h"
#include "core/text/hf_pre_tokenizers.h"
#include "core/text/piece_hash.h"

namespace headmap {

using namespace hf;

// ---- [loading] -------------------------------------------------------------------------
struct AddedToken {
  int id;
  std::string content;
  bool special, single_word, lstrip, rstrip, normalized;
};

// The added tokens' strings, matched leftmost-longest: at each position the lengths that
// occur are tried longest first, each by rolling hash in O(1) (piece_hash.h; no trie to
// grow with a hostile file, and no candidate hashed anew at each length).
struct AddedTrie {
  std::unordered_map<std::string, int, SvHash, std::equal_to<>> by_text;  // text -> index into the added tokens
  std::vector<size_t> lengths;                                             // distinct lengths, longest first (finish())
  std::array<bool, 256> first{};                                           // bytes a token starts with
  PieceHash hashes;                                                        // by_text's keys (finish())
  void add(const std::string& s, int which) {
    by_text[s] = which;  // a later token of the same text wins, as in the official map
    first[static_cast<unsigned char>(s[0])] = true;
  }
  void finish() {  // once every token is added
    for (const auto& [text, which] : by_text) {
      hashes.add(text, which);
      lengths.push_back(text.size());
    }
    std::sort(lengths.rbegin(), lengths.rend());
    lengths.erase(std::unique(lengths.begin(), lengths.end()), lengths.end());
  }
  bool empty() const { return by_text.empty(); }
  // The longest token starting at s[at]: (which, length), or which = -1. ph: s's prefix hashes.
  std::pair<int, size_t> longest(std::string_view s, size_t at, const PieceHash::Prefixes& ph) const {
    if (!first[static_cast<unsigned char>(s[at])]) return {-1, 0};
    for (size_t l : lengths) {
      if (l > s.size() - at) continue;
      if (int which = hashes.find(ph.of(at, at + l), {}, s.substr(at, l)); which >= 0) return {which, l};
    }
    return {-1, 0};
  }
};

struct HfTokenizer::Impl {
  std::unique_ptr<Normalizer> normalizer;
  std::unique_ptr<PreTokenizer> pre;
  std::unique_ptr<Model> model;
  std::unique_ptr<PostProcessor> post;
  std::unique_ptr<Decoder> decoder;
  std::vector<AddedToken> added;
  AddedTrie raw_trie, norm_trie;
  std::unordered_map<int, size_t> added_by_id;
  int size = 0;
  std::string origin;  // the file, for messages
  bool byte_level = false;  // the pieces spell bytes in GPT-2's alphabet (a ByteLevel pre-tokenizer)

  std::string token(int id) const {
    if (auto it = added_by_id.find(id); it != added_by_id.end()) return added[it->second].content;
    if (id >= 0 && size_t(id) < model->vocab.tokens.size()) return model->vocab.tokens[size_t(id)];
    return "";
  }
  void cut_added(NStr&& n, const AddedTrie& trie, std::vector<NStr>& out) const;
  std::vector<Tok> encode_one(std::string_view text, int seq) const;
};

namespace {

Error bad(const std::string& origin, const std::string& what) { return Error{ErrorKind::BadFormat, origin + ": " + what}; }

// Size and nesting depth, before nlohmann allocates anything.
Status check_shape(std::string_view text, const std::string& origin) {
  if (text.size() > HfTokenizer::kMaxFileBytes)
    return bad(origin, "is " + std::to_string(text.size() >> 20) + " MB; headmap reads tokenizer.json files of at most " +
                           std::to_string(HfTokenizer::kMaxFileBytes >> 20) + " MB");
  return check_json_limits(text, origin, HfTokenizer::kMaxDepth, "open a smaller tokenizer");
}

// Parser events: model.vocab (an object) and model.merges go to BigTables, everything else
// into the JSON tree (nlohmann's own tree builder), where those two read null.
class TokenizerSax {
 public:
  using number_integer_t = json::number_integer_t;
  using number_unsigned_t = json::number_unsigned_t;
  using number_float_t = json::number_float_t;
  using string_t = json::string_t;
  using binary_t = json::binary_t;
  TokenizerSax(json& root, BigTables& big) : dom_(root, false), big_(big) {}

  bool null() { return value([&] { return dom_.null(); }, -1); }
  bool boolean(bool v) { return value([&] { return dom_.boolean(v); }, -1); }
  bool number_integer(number_integer_t v) { return value([&] { return dom_.number_integer(v); }, v); }
  bool number_unsigned(number_unsigned_t v) {
    return value([&] { return dom_.number_unsigned(v); }, v > number_unsigned_t(INT64_MAX) ? -1 : int64_t(v));
  }
  bool number_float(number_float_t v, const string_t& s) { return value([&] { return dom_.number_float(v, s); }, -1); }
  bool binary(binary_t& v) { return value([&] { return dom_.binary(v); }, -1); }
  bool string(string_t& v) {
    if (mode_ == Mode::Merges && depth_ == 3) {
      big_.merges.emplace_back(std::move(v), std::string("\x01"));
      return true;
    }
    if (mode_ == Mode::Merges && depth_ == 4) {
      pair_.push_back(std::move(v));
      return true;
    }
    return value([&] { return dom_.string(v); }, -1);
  }
  bool start_object(std::size_t n) {
    ++depth_;
    if (mode_ == Mode::Vocab) return bad_vocab();
    if (mode_ != Mode::Tree) return bad_merge_or(false);
    if (depth_ == 3 && in_model_ && key_ == "vocab") {
      mode_ = Mode::Vocab;
      big_.vocab_present = true;
      return true;
    }
    if (depth_ == 2 && key_ == "model") in_model_ = true;
    return dom_.start_object(n);
  }
  bool key(string_t& k) {
    if (mode_ == Mode::Vocab) {
      if (depth_ == 3) pending_ = std::move(k);
      return true;
    }
    if (mode_ != Mode::Tree) return true;
    if (depth_ == 1 || (depth_ == 2 && in_model_)) key_ = k;
    return dom_.key(k);
  }
  bool end_object() {
    --depth_;
    if (mode_ == Mode::Vocab && depth_ == 2) {
      mode_ = Mode::Tree;
      return dom_.null();  // model.vocab reads null in the tree
    }
    if (mode_ != Mode::Tree) return true;
    if (depth_ == 1) in_model_ = false;
    return dom_.end_object();
  }
  bool start_array(std::size_t n) {
    ++depth_;
    if (mode_ == Mode::Merges) {
      if (depth_ == 4) pair_.clear();
      else bad_merge_or(false);
      return true;
    }
    if (mode_ == Mode::Vocab) return bad_vocab();
    if (depth_ == 3 && in_model_ && key_ == "merges") {
      mode_ = Mode::Merges;
      big_.merges_present = true;
      return true;
    }
    return dom_.start_array(n);
  }
  bool end_array() {
    --depth_;
    if (mode_ == Mode::Merges) {
      if (depth_ == 3) {
        if (pair_.size() == 2) big_.merges.emplace_back(std::move(pair_[0]), std::move(pair_[1]));
        else bad_merge_or(false);
        pair_.clear();
        return true;
      }
      if (depth_ == 2) {
        mode_ = Mode::Tree;
        return dom_.null();  // model.merges reads null in the tree
      }
      return true;
    }
    if (mode_ == Mode::Vocab) return true;
    return dom_.end_array();
  }
  template <class E>
  bool parse_error(std::size_t pos, const std::string& tok, const E& e) {
    failed_ = true;
    error_at_ = pos;
    return dom_.parse_error(pos, tok, e);
  }
  bool failed() const { return failed_ || dom_.is_errored(); }
  size_t error_at() const { return error_at_; }

 private:
  enum class Mode { Tree, Vocab, Merges } mode_ = Mode::Tree;
  nlohmann::detail::json_sax_dom_parser<json> dom_;
  BigTables& big_;
  int depth_ = 0;
  bool in_model_ = false, failed_ = false;
  size_t error_at_ = 0;
  std::string key_, pending_;
  std::vector<std::string> pair_;

  template <class F>
  bool value(F&& tree, int64_t as_id) {
    if (mode_ == Mode::Vocab) {
      if (depth_ == 3) big_.vocab.emplace_back(std::move(pending_), as_id);
      return true;  // a value nested deeper: its entry was recorded as a bad id already
    }
    if (mode_ == Mode::Merges) return bad_merge_or(true);
    return tree();
  }
  bool bad_vocab() {  // an object or list as a token's id: recorded as a bad id, once
    if (depth_ == 4) big_.vocab.emplace_back(std::move(pending_), -1);
    return true;
  }
  bool bad_merge_or(bool) {
    if (mode_ == Mode::Merges && big_.bad_merge < 0) {
      big_.bad_merge = long(big_.merges.size());
      big_.merges.emplace_back();
    }
    return true;
  }
};

}  // namespace

Result<HfTokenizer> HfTokenizer::from_json(std::string_view text, const std::string& origin) {
  // Size, depth and memory: nlohmann's tree of a tokenizer.json takes about 8 times its text (measured on Gemma 3's).
  if (Status s = check_shape(text, origin); !s) return s.error();
  json j;
  BigTables big;
  TokenizerSax sax(j, big);
  const bool parsed = json::sax_parse(text, &sax, json::input_format_t::json, false) && !sax.failed();
  if (!parsed) return bad(origin, "is not valid JSON (the parser stopped at byte " + std::to_string(sax.error_at()) + ")");
  if (!j.is_object()) return bad(origin, "is not a JSON object");
  auto impl = std::make_shared<Impl>();
  impl->origin = origin;
  auto wrap = [&](const Error& e) { return bad(origin, e.message); };
  const json* model = field(j, "model");
  if (!model) return bad(origin, "has no \"model\"");
  auto m = parse_model(*model, "model", big);
  if (!m) return wrap(m.error());
  impl->model = std::move(*m);
  // The optional stages, each read by its own module from the field that names it.
  auto stage = [&](const char* name, auto parse, auto& to) -> Status {
    const json* s = field(j, name);
    if (!s) return Status();
    auto r = parse(*s, name);
    if (!r) return wrap(r.error());
    to = std::move(*r);
    return Status();
  };
  if (Status s = stage("normalizer", parse_normalizer, impl->normalizer); !s) return s.error();
  if (Status s = stage("pre_tokenizer", parse_pre_tokenizer, impl->pre); !s) return s.error();
  if (Status s = stage("post_processor", parse_post_processor, impl->post); !s) return s.error();
  if (Status s = stage("decoder", parse_decoder, impl->decoder); !s) return s.error();
  impl->size = int(impl->model->vocab.tokens.size());
  if (const json* added = field(j, "added_tokens")) {
    if (!added->is_array()) return bad(origin, "added_tokens is not a list");
    if (added->size() > kMaxVocab) return bad(origin, "added_tokens has more than " + std::to_string(kMaxVocab) + " tokens");
    for (size_t i = 0; i < added->size(); ++i) {
      const json& a = (*added)[i];
      const std::string w = "added_tokens[" + std::to_string(i) + "]";
      if (!a.is_object()) return bad(origin, w + " is not an object");
      const json* id = field(a, "id");
      const json* content = field(a, "content");
      if (!id || !id->is_number_unsigned() || id->get<uint64_t>() >= kMaxVocab * 2) return bad(origin, w + ".id is not an id");
      if (!content || !content->is_string() || content->get_ref<const std::string&>().empty() ||
          content->get_ref<const std::string&>().size() > kMaxTokenBytes)
        return bad(origin, w + ".content is not a non-empty string");
      AddedToken t{int(id->get<uint64_t>()), content->get<std::string>(), false, false, false, false, true};
      if (Status s = read_bools(a, w, {{"special", false, &t.special}, {"single_word", false, &t.single_word}, {"lstrip", false, &t.lstrip},
                                        {"rstrip", false, &t.rstrip}, {"normalized", true, &t.normalized}});
          !s)
        return wrap(s.error());
      if (decode_utf8(t.content).replaced) return bad(origin, w + ".content is not valid UTF-8");
      impl->added_by_id[t.id] = impl->added.size();
      impl->size = std::max(impl->size, t.id + 1);
      impl->added.push_back(std::move(t));
    }
  }
  for (size_t k = 0; k < impl->added.size(); ++k) {
    const AddedToken& t = impl->added[k];
    if (!t.normalized) {
      impl->raw_trie.add(t.content, int(k));
    } else {
      NStr n;
      for (size_t i = 0; i < t.content.size(); ++i) n.s.push_back(t.content[i]), n.at.push_back({uint32_t(i), uint32_t(i + 1)});
      if (impl->normalizer) impl->normalizer->run(n);
      if (!n.s.empty()) impl->norm_trie.add(n.s, int(k));
    }
  }
  impl->raw_trie.finish();
  impl->norm_trie.finish();
  impl->byte_level = impl->pre && impl->pre->name().find("ByteLevel") != std::string::npos;
  HfTokenizer tk;
  tk.impl_ = impl;
  return tk;
}

Result<HfTokenizer> HfTokenizer::load(const std::string& file_or_dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_directory(file_or_dir, ec)) {
    auto text = read_file(file_or_dir, kMaxFileBytes + 1);
    if (!text) return text.error();
    return from_json(*text, file_or_dir);
  }
  for (const char* name : {"tokenizer.json", "vocab.json", "merges.txt", "vocab.txt", "tokenizer_config.json"})  // the directory's rule (model_dir.h)
    if (Status s = check_model_file(file_or_dir, fs::path(file_or_dir) / name); !s) return s.error();
  const fs::path dir(file_or_dir);
  // A name that is there but not a regular file (a FIFO, /dev/zero linked in) is read, and
  // read_file says what it is, instead of "has no tokenizer" (issue 35, F12).
  auto has = [&](const char* name) { return fs::exists(fs::symlink_status(dir / name, ec)); };
  if (has("tokenizer.json")) return load((dir / "tokenizer.json").string());
  if (has("vocab.json") && has("merges.txt")) {
    auto v = read_file((dir / "vocab.json").string(), kMaxFileBytes);
    if (!v) return v.error();
    auto m = read_file((dir / "merges.txt").string(), kMaxFileBytes);
    if (!m) return m.error();
    auto j = gpt2_files_as_json(*v, *m, file_or_dir);
    if (!j) return j.error();
    return from_json(*j, file_or_dir + "/vocab.json + merges.txt");
  }
  if (has("vocab.txt")) {
    auto v = read_file((dir / "vocab.txt").string(), kMaxFileBytes);
    if (!v) return v.error();
    bool lowercase = true;
    if (has("tokenizer_config.json")) {
      auto c = read_file((dir / "tokenizer_config.json").string(), size_t(1) << 20);
      if (!c) return c.error();
      const json cj = json::parse(*c, nullptr, false);
      if (cj.is_discarded() || !cj.is_object())
        return Error{ErrorKind::BadFormat, file_or_dir + "/tokenizer_config.json: not a JSON object."};
      if (cj.contains("do_lower_case") && cj["do_lower_case"].is_boolean()) lowercase = cj["do_lower_case"].get<bool>();
    }
    auto j = bert_vocab_as_json(*v, lowercase);
    if (!j) return Error{ErrorKind::BadFormat, file_or_dir + "/" + j.error().message};
    return from_json(*j, file_or_dir + "/vocab.txt");
  }
  if (has("tokenizer.model"))
    return Error{ErrorKind::BadFormat, file_or_dir + " has only tokenizer.model (SentencePiece's protobuf), which headmap does not read: "
                                       "it needs the model's tokenizer.json (download it with the model, or save it with transformers' "
                                       "AutoTokenizer.from_pretrained(...).save_pretrained(DIR))."};
  return Error{ErrorKind::Io, file_or_dir + " has no tokenizer: it needs tokenizer.json (or GPT-2's vocab.json and merges.txt, or BERT's vocab.txt)."};
}

// ---- [encoding] ------------------------------------------------------------------------
namespace {

bool word_char_at_end(std::string_view s) {
  if (s.empty()) return false;
  size_t k = s.size() - 1;
  while (k > 0 && (static_cast<unsigned char>(s[k]) & 0xC0) == 0x80) --k;
  size_t len;
  return is_word_char(next_cp(s, k, &len));
}
bool word_char_at_start(std::string_view s) {
  if (s.empty()) return false;
  size_t len;
  return is_word_char(next_cp(s, 0, &len));
}

}  // namespace

// Official AddedVocabulary::find_matches over one piece.
void HfTokenizer::Impl::cut_added(NStr&& n, const AddedTrie& trie, std::vector<NStr>& out) const {
  if (trie.empty() || n.s.empty()) {
    if (!n.s.empty()) out.push_back(std::move(n));
    return;
  }
  const std::string& s = n.s;
  const PieceHash::Prefixes ph(s);
  size_t start_offset = 0;
  for (size_t at = 0; at < s.size();) {
    auto [which, len] = trie.longest(s, at, ph);
    if (which < 0) {
      ++at;
      continue;
    }
    const AddedToken& t = added[size_t(which)];
    size_t start = at, stop = at + len;
    if (t.single_word) {
      const bool start_space = start == 0 || !word_char_at_end(std::string_view(s).substr(0, start));
      const bool stop_space = stop == s.size() || !word_char_at_start(std::string_view(s).substr(stop));
      if (!start_space || !stop_space) {
        ++at;
        continue;
      }
    }
    if (t.lstrip) {
      size_t ns = start;
      while (ns > 0) {
        size_t k = ns - 1;
        while (k > 0 && (static_cast<unsigned char>(s[k]) & 0xC0) == 0x80) --k;
        size_t l;
        if (!is_whitespace(next_cp(s, k, &l))) break;
        ns = k;
      }
      start = std::max(ns, start_offset);
    }
    if (t.rstrip)
      while (stop < s.size()) {
        size_t l;
        if (!is_whitespace(next_cp(s, stop, &l))) break;
        stop += l;
      }
    if (start_offset < start) out.push_back(n.slice(start_offset, start));
    NStr tok = n.slice(start, stop);
    tok.added_id = which;
    out.push_back(std::move(tok));
    start_offset = stop;
    at = stop;
  }
  if (start_offset < s.size()) out.push_back(n.slice(start_offset, s.size()));
}

std::vector<Tok> HfTokenizer::Impl::encode_one(std::string_view text, int seq) const {
  NStr whole;
  whole.s.assign(text);
  whole.at.resize(text.size());
  for (size_t i = 0; i < text.size();) {
    size_t len;
    next_cp(text, i, &len);
    for (size_t k = 0; k < len; ++k) whole.at[i + k] = {uint32_t(i), uint32_t(i + len)};
    i += len;
  }
  std::vector<NStr> pieces, normed;
  cut_added(std::move(whole), raw_trie, pieces);
  for (NStr& p : pieces) {
    if (p.added_id >= 0) {
      normed.push_back(std::move(p));
      continue;
    }
    if (normalizer) normalizer->run(p);
    cut_added(std::move(p), norm_trie, normed);
  }
  std::vector<Tok> out;
  std::vector<NStr> words;
  std::vector<ModelTok> mt;
  for (NStr& p : normed) {
    if (p.added_id >= 0) {
      const AddedToken& t = added[size_t(p.added_id)];
      const Span sp = p.span(0, p.s.size());
      out.push_back(Tok{t.id, t.content, sp, seq, false, seq});
      continue;
    }
    words.clear();
    if (pre) pre->split(std::move(p), words);
    else if (!p.empty()) words.push_back(std::move(p));
    for (const NStr& w : words) {
      mt.clear();
      model->tokenize(w.s, mt);
      for (const ModelTok& m : mt) out.push_back(Tok{m.id, token(m.id), w.span(m.b, m.e), seq, false, seq});
    }
  }
  return out;
}

namespace {

HfEncoding to_encoding(std::vector<Tok> toks) {
  HfEncoding e;
  for (Tok& t : toks) {
    e.ids.push_back(t.id);
    e.type_ids.push_back(t.type_id);
    e.special.push_back(t.special ? 1 : 0);
    e.pieces.push_back(std::move(t.piece));
    e.offsets.emplace_back(t.span.b, t.span.e);
    e.sequence.push_back(t.seq);
  }
  return e;
}

}  // namespace

HfEncoding HfTokenizer::encode(std::string_view text, bool add_special_tokens) const {
  int bad = 0;
  std::string clean = sanitize_utf8(text, &bad);
  Encodings encs;
  ScopedRegexBudget regex;
  encs.list.push_back(impl_->encode_one(clean, 0));
  encs.text[0] = &clean;
  if (impl_->post) impl_->post->run(encs, add_special_tokens);
  HfEncoding e = to_encoding(join(encs));
  e.invalid_utf8 = bad;
  e.regex_stopped = regex.budget.stopped;
  e.text = std::move(clean);
  return e;
}

HfEncoding HfTokenizer::encode_pair(std::string_view text, std::string_view pair, bool add_special_tokens) const {
  int bad_a = 0, bad_b = 0;
  std::string ca = sanitize_utf8(text, &bad_a), cb = sanitize_utf8(pair, &bad_b);
  Encodings encs;
  ScopedRegexBudget regex;
  encs.list.push_back(impl_->encode_one(ca, 0));
  encs.list.push_back(impl_->encode_one(cb, 1));
  encs.text[0] = &ca;
  encs.text[1] = &cb;
  if (impl_->post) impl_->post->run(encs, add_special_tokens);
  HfEncoding e = to_encoding(join(encs));
  e.invalid_utf8 = bad_a + bad_b;
  e.regex_stopped = regex.budget.stopped;
  e.text = std::move(ca);
  e.pair = std::move(cb);
  return e;
}

std::string HfTokenizer::decode(const std::vector<int>& ids, bool skip_special_tokens) const {
  std::vector<std::string> toks;
  for (int id : ids) {
    if (id < 0 || id >= impl_->size) continue;
    if (skip_special_tokens && is_special(id)) continue;
    toks.push_back(impl_->token(id));
  }
  if (impl_->decoder) impl_->decoder->run(toks);
  std::string out;
  for (const auto& t : toks) out += t;
  return out;
}

std::string HfTokenizer::token_text(int id) const {
  if (id < 0 || id >= impl_->size) return "";
  std::string piece = impl_->token(id);
  unsigned char b;
  if (parse_byte_piece(piece, &b) && b >= 0x80) return piece;  // part of a character
  if (impl_->byte_level && !is_special(id))
    if (auto bytes = gpt2_unspell(piece)) {  // GPT-2's alphabet: the bytes, or <0xNN> for a piece of a character
      int bad = 0;
      (void)sanitize_utf8(*bytes, &bad);
      if (!bad) return *bytes;
      std::string out;
      for (unsigned char c : *bytes) out += byte_piece(c);
      return out;
    }
  std::vector<std::string> toks{piece};
  if (impl_->decoder) impl_->decoder->run(toks);
  std::string out;
  for (const auto& t : toks) out += t;
  // The decoders drop a first token's leading space (Metaspace, Strip); a chip keeps it.
  if (!piece.empty() && (piece.rfind("\xE2\x96\x81", 0) == 0) && (out.empty() || out[0] != ' ')) out.insert(0, " ");
  // A WordPiece continuation ("##s") reads as what it adds to its word ("s"), as the decoder
  // reads it after the word's first piece.
  if (const std::string prefix = impl_->model->continuing_prefix();
      !prefix.empty() && piece.size() > prefix.size() && piece.rfind(prefix, 0) == 0 && out.rfind(prefix, 0) == 0)
    out.erase(0, prefix.size());
  return out;
}

int HfTokenizer::vocab_size() const { return impl_->size; }

Status HfTokenizer::check_ids_below(int model_vocab, const std::string& model_field) const {
  auto too_big = [&](const std::string& field, int id) {
    return Error{ErrorKind::BadFormat, impl_->origin + ": " + field + " is id " + std::to_string(id) + ", but " + model_field + " is " +
                                           std::to_string(model_vocab) + " (ids 0 to " + std::to_string(model_vocab - 1) +
                                           "): the tokenizer belongs to another model."};
  };
  const int model_size = int(impl_->model->vocab.tokens.size());
  if (model_size > model_vocab) return too_big("model.vocab's largest", model_size - 1);
  for (const AddedToken& t : impl_->added)
    if (t.id >= model_vocab) return too_big("the added token \"" + sanitize_utf8(t.content.substr(0, 64)) + "\"", t.id);
  if (impl_->post) {
    std::vector<NamedId> ids;
    impl_->post->special_ids(ids);
    for (const NamedId& n : ids)
      if (n.id >= model_vocab) return too_big(n.field, n.id);
  }
  return Status();
}
std::string HfTokenizer::id_to_token(int id) const { return impl_->token(id); }
int HfTokenizer::token_to_id(std::string_view token) const {
  for (const AddedToken& t : impl_->added)
    if (t.content == token) return t.id;
  return impl_->model->vocab.find(token);
}
bool HfTokenizer::is_special(int id) const {
  auto it = impl_->added_by_id.find(id);
  return it != impl_->added_by_id.end() && impl_->added[it->second].special;
}
std::string HfTokenizer::model_type() const { return impl_->model->name(); }
std::string HfTokenizer::describe() const {
  std::string s = impl_->model->name() + " (" + std::to_string(impl_->size) + " tokens, " + std::to_string(impl_->added.size()) + " added)";
  s += "; normalizer " + (impl_->normalizer ? impl_->normalizer->name() : std::string("none"));
  s += "; pre-tokenizer " + (impl_->pre ? impl_->pre->name() : std::string("none"));
  s += "; post-processor " + (impl_->post ? impl_->post->name() : std::string("none"));
  return s;
}

}  // namespace headmap
