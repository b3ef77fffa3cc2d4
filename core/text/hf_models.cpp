// hf_models.cpp: see hf_models.h.
#include "core/text/hf_models.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>

#include "core/io/json_limits.h"
#include "core/memory_budget.h"
#include "core/text/bpe.h"
#include "core/text/bpe_merge.h"
#include "core/text/piece_hash.h"

namespace headmap::hf {
namespace {

struct BpeModel : Model {
  std::unordered_map<uint64_t, MergeRule> merges;
  int unk = -1;
  std::string prefix, suffix;  // continuing_subword_prefix, end_of_word_suffix
  bool fuse_unk = false, byte_fallback = false, ignore_merges = false;
  std::array<int, 256> byte_ids{};  // <0xNN> ids, -1 when absent

  void tokenize(std::string_view w, std::vector<ModelTok>& out) const override {
    if (w.empty()) return;
    if (ignore_merges)
      if (int id = vocab.find(w); id >= 0) {
        out.push_back({id, 0, w.size()});
        return;
      }
    std::vector<int> sym, len;  // (symbols) id, bytes of the word covered
    int unk_id = -1, unk_len = 0;
    std::string s;
    for (size_t i = 0; i < w.size();) {
      size_t n;
      next_cp(w, i, &n);
      const bool first = i == 0, last = i + n == w.size();
      s.assign(w.substr(i, n));
      if (!prefix.empty() && !first) s.insert(0, prefix);
      if (!suffix.empty() && last) s += suffix;
      i += n;
      if (int id = vocab.find(s); id >= 0) {
        if (unk_id >= 0) sym.push_back(unk_id), len.push_back(unk_len), unk_id = -1;
        sym.push_back(id), len.push_back(int(n));
        continue;
      }
      if (byte_fallback) {
        bool all = true;
        for (unsigned char b : s) all = all && byte_ids[b] >= 0;
        if (all) {
          for (unsigned char b : s) sym.push_back(byte_ids[b]), len.push_back(1);
          continue;
        }
      }
      if (unk >= 0) {
        if (unk_id >= 0 && fuse_unk) unk_len += int(n);
        else {
          if (unk_id >= 0) sym.push_back(unk_id), len.push_back(unk_len);
          unk_id = unk, unk_len = int(n);
        }
      }
    }
    if (unk_id >= 0) sym.push_back(unk_id), len.push_back(unk_len);
    bpe_merge(
        sym,
        [this](int l, int r) {
          auto it = merges.find((uint64_t(uint32_t(l)) << 32) | uint32_t(r));
          return it == merges.end() ? MergeRule{} : it->second;
        },
        &len);
    // Byte-fallback symbols cover one byte each; a byte past the word's real bytes (a
    // prefix's) is clamped, as the official offsets are.
    size_t at = 0;
    for (size_t k = 0; k < sym.size(); ++k) {
      const size_t e = std::min(w.size(), at + size_t(len[k]));
      out.push_back({sym[k], at, e});
      at = e;
    }
  }
  std::string name() const override { return "BPE"; }
};

// WordPiece and Unigram try every piece length up to the longest at each place of a word,
// so their pieces are bounded: a 4,096-byte piece made a 64 KiB word cost 14 s. SentencePiece
// makes pieces of at most 16 characters; BERT's longest are about 20.
constexpr size_t kMaxPieceBytes = 256;
Status check_piece_lengths(const Vocab& v, const std::string& where) {
  if (v.longest <= kMaxPieceBytes) return Status();
  for (size_t id = 0; id < v.tokens.size(); ++id)
    if (v.tokens[id].size() > kMaxPieceBytes)
      return Error{ErrorKind::BadFormat, where + " has a piece of " + std::to_string(v.tokens[id].size()) + " bytes (id " + std::to_string(id) +
                                             "); headmap reads WordPiece and Unigram pieces of at most " + std::to_string(kMaxPieceBytes) +
                                             " bytes, so that a text costs time in proportion to its length"};
  return Status();
}

// Every piece of the vocabulary, by rolling hash (piece_hash.h): built once the vocabulary is complete.
void index_pieces(const Vocab& v, PieceHash& pieces) {
  pieces.reserve(v.index.size());
  for (const auto& [piece, id] : v.index) pieces.add(piece, id);
}

bool continuation_byte(std::string_view w, size_t i) { return i < w.size() && (static_cast<unsigned char>(w[i]) & 0xC0) == 0x80; }

struct WordPieceModel : Model {
  int unk = -1;
  std::string prefix = "##";
  size_t max_chars = 100;
  PieceHash pieces;
  // Longest match first, from each start: only candidates no longer than the longest piece
  // are tried, each hashed in O(1), so a word costs O(n · longest), not O(n³).
  void tokenize(std::string_view w, std::vector<ModelTok>& out) const override {
    size_t chars = 0;
    for (size_t i = 0; i < w.size(); ++i) chars += (static_cast<unsigned char>(w[i]) & 0xC0) != 0x80;
    if (chars > max_chars) {
      out.push_back({unk, 0, w.size()});
      return;
    }
    const size_t mark = out.size();
    const PieceHash::Prefixes ph(w);
    const uint64_t prefix_hash = PieceHash::hash(prefix);
    for (size_t start = 0; start < w.size();) {
      const std::string_view head = start > 0 ? std::string_view(prefix) : std::string_view();
      size_t end = std::min(w.size(), start + (vocab.longest > head.size() ? vocab.longest - head.size() : 0));
      while (end > start && continuation_byte(w, end)) --end;  // a character boundary
      int found = -1;
      while (start < end) {
        const uint64_t h = start > 0 ? ph.after(prefix_hash, start, end) : ph.of(start, end);
        if (int id = pieces.find(h, head, w.substr(start, end - start)); id >= 0) {
          found = id;
          break;
        }
        do --end;  // one character back
        while (end > start && continuation_byte(w, end));
      }
      if (found < 0) {
        out.resize(mark);
        out.push_back({unk, 0, w.size()});
        return;
      }
      out.push_back({found, start, end});
      start = end;
    }
  }
  std::string name() const override { return "WordPiece"; }
  std::string continuing_prefix() const override { return prefix; }
};

struct UnigramModel : Model {
  std::vector<double> score;  // (V)
  int unk = -1;
  bool byte_fallback = false, fuse_unk = true;
  double min_score = 0;
  std::array<int, 256> byte_ids{};
  PieceHash pieces;

  // Viterbi over the word: from each place, every piece no longer than the longest, each
  // hashed in O(1) (piece_hash.h), so a word costs O(n · longest), not O(n · longest²).
  void tokenize(std::string_view w, std::vector<ModelTok>& out) const override {
    if (w.empty()) return;
    const PieceHash::Prefixes ph(w);
    const double unk_score = min_score - 10.0;
    struct Best {
      int from = -1;
      int id = -1;
      double score = 0;
    };
    std::vector<Best> best(w.size() + 1);
    best[0].from = 0;
    for (size_t at = 0; at < w.size();) {
      size_t mblen;
      next_cp(w, at, &mblen);
      const double here = best[at].score;
      bool single = false;
      // Every piece that starts here, shortest first (the official trie's order): pieces
      // are valid UTF-8, so a match ends on a character boundary.
      const size_t limit = std::min(w.size() - at, vocab.longest);
      for (size_t l = 1; l <= limit; ++l) {
        const int id = pieces.find(ph.of(at, at + l), {}, w.substr(at, l));
        if (id < 0) continue;
        const size_t to = at + l;
        const double cand = score[size_t(id)] + here;
        if (best[to].from < 0 || cand > best[to].score) best[to] = {int(at), id, cand};
        if (l == mblen) single = true;
      }
      if (!single) {
        const double cand = unk_score + here;
        Best& t = best[at + mblen];
        if (t.from < 0 || cand > t.score) t = {int(at), unk, cand};
      }
      at += mblen;
    }
    // Back from the end; consecutive unknowns fused into one piece.
    std::vector<std::pair<size_t, size_t>> parts;  // reversed
    size_t end = w.size(), unk_end = 0;
    bool in_unk = false;
    while (end > 0) {
      const Best& b = best[end];
      const size_t from = size_t(b.from);
      if (fuse_unk && unk >= 0 && b.id == unk) {
        if (!in_unk) unk_end = end, in_unk = true;
      } else {
        if (in_unk) parts.emplace_back(end, unk_end), in_unk = false;
        parts.emplace_back(from, end);
      }
      end = from;
    }
    if (in_unk) parts.emplace_back(0, unk_end);
    std::reverse(parts.begin(), parts.end());
    for (auto [b, e] : parts) {
      const std::string_view s = w.substr(b, e - b);
      int id = vocab.find(s);
      if (id < 0 && byte_fallback) {
        bool all = true;
        for (unsigned char c : s) all = all && byte_ids[c] >= 0;
        if (all) {
          for (unsigned char c : s) out.push_back({byte_ids[c], b, e});
          continue;
        }
      }
      if (id < 0) id = unk;
      out.push_back({id, b, e});
    }
  }
  std::string name() const override { return "Unigram"; }
};

// vocab as {"token": id} (BPE, WordPiece) into `v`, every id in [0, 4M), each once.
Status read_vocab_entries(std::vector<std::pair<std::string, int64_t>>& entries, Vocab& v, const std::string& where) {
  if (entries.size() > kMaxVocab) return Error{ErrorKind::BadFormat, where + " has more than " + std::to_string(kMaxVocab) + " tokens"};
  size_t max_id = 0;
  for (const auto& [key, id] : entries) {
    if (id < 0 || id >= int64_t(kMaxVocab))
      return Error{ErrorKind::BadFormat, where + "[\"" + sanitize_utf8(key.substr(0, 64)) + "\"] is not an id in 0.." + std::to_string(kMaxVocab - 1)};
    if (key.size() > kMaxTokenBytes) return Error{ErrorKind::BadFormat, where + " has a token longer than 4096 bytes"};
    max_id = std::max(max_id, size_t(id));
  }
  if (max_id > 4 * entries.size() + 1024) return Error{ErrorKind::BadFormat, where + "'s ids leave most of 0.." + std::to_string(max_id) + " empty"};
  v.tokens.assign(max_id + 1, std::string());
  v.index.reserve(entries.size() * 2);
  for (auto& [key, id64] : entries) {  // a key written twice: the last id wins, as in a JSON object
    auto [it, fresh] = v.index.emplace(key, int(id64));
    if (!fresh) it->second = int(id64);
  }
  std::vector<char> seen(max_id + 1, 0);
  for (const auto& [key, id] : v.index) {
    if (seen[size_t(id)]) return Error{ErrorKind::BadFormat, where + " gives the id " + std::to_string(id) + " to two tokens"};
    seen[size_t(id)] = 1;
    v.longest = std::max(v.longest, key.size());
    v.tokens[size_t(id)] = key;
  }
  return {};
}

Status read_vocab_object(const json& j, Vocab& v, const std::string& where, BigTables& big) {
  if (big.vocab_present) return read_vocab_entries(big.vocab, v, where);
  if (!j.is_object()) return Error{ErrorKind::BadFormat, where + " is not an object of token: id"};
  if (j.size() > kMaxVocab) return Error{ErrorKind::BadFormat, where + " has more than " + std::to_string(kMaxVocab) + " tokens"};
  std::vector<std::pair<std::string, int64_t>> entries;
  entries.reserve(j.size());
  for (auto it = j.begin(); it != j.end(); ++it)
    entries.emplace_back(it.key(), it.value().is_number_integer() ? it.value().get<int64_t>() : -1);
  return read_vocab_entries(entries, v, where);
}

void fill_byte_ids(const Vocab& v, std::array<int, 256>& ids) {
  for (int b = 0; b < 256; ++b) ids[size_t(b)] = v.find(byte_piece(static_cast<unsigned char>(b)));
}

// A line of a text table (vocab.txt, merges.txt) must be UTF-8: it becomes a JSON string, and
// nlohmann's dump of invalid UTF-8 throws (issue 35, F3: an uncaught type_error.316 aborted).
Status check_line_utf8(const std::string& line, const std::string& file, size_t line_no) {
  const DecodedText d = decode_utf8(line);
  if (!d.replaced) return Status();
  return Error{ErrorKind::BadFormat, file + " line " + std::to_string(line_no + 1) + " is not valid UTF-8 (\"" +
                                         sanitize_utf8(line.substr(0, 64)) + "\"): the file is damaged or not a tokenizer's."};
}

}  // namespace

Result<std::unique_ptr<Model>> parse_model(const json& j, const std::string& where, BigTables& big) {
  if (!j.is_object()) return Error{ErrorKind::BadFormat, where + " is missing or not an object"};
  std::string type;
  if (const json* t = field(j, "type")) {
    if (!t->is_string()) return Error{ErrorKind::BadFormat, where + ".type is not a string"};
    type = t->get<std::string>();
  } else if (field(j, "merges") || big.merges_present) type = "BPE";  // old files leave the type out
  else if (field(j, "continuing_subword_prefix") || field(j, "max_input_chars_per_word")) type = "WordPiece";
  else type = "Unigram";
  const json* vocab = field(j, "vocab");
  static const json kEmpty = json::object();
  if (!vocab && !big.vocab_present) return Error{ErrorKind::BadFormat, where + ".vocab is missing"};
  if (!vocab) vocab = &kEmpty;
  if (type == "BPE") {
    auto m = std::make_unique<BpeModel>();
    if (Status s = read_vocab_object(*vocab, m->vocab, where + ".vocab", big); !s) return s.error();
    HM_TRY(prefix, get_string(j, "continuing_subword_prefix", "", where));
    HM_TRY(suffix, get_string(j, "end_of_word_suffix", "", where));
    m->prefix = prefix, m->suffix = suffix;
    if (Status s = read_bools(j, where, {{"fuse_unk", false, &m->fuse_unk}, {"byte_fallback", false, &m->byte_fallback}, {"ignore_merges", false, &m->ignore_merges}}); !s)
      return s.error();
    if (const json* d = field(j, "dropout"); d && !(d->is_number() && d->get<double>() == 0.0))
      return Error{ErrorKind::BadFormat, where + ".dropout is set: BPE dropout is random, and headmap shows the text a model sees at inference (set it to null)"};
    HM_TRY(unk, get_string(j, "unk_token", "", where));
    if (!unk.empty()) {
      m->unk = m->vocab.find(unk);
      if (m->unk < 0) return Error{ErrorKind::BadFormat, where + ".unk_token \"" + unk + "\" is not in " + where + ".vocab"};
    }
    fill_byte_ids(m->vocab, m->byte_ids);
    const json* merges = field(j, "merges");
    if (merges && !merges->is_array()) return Error{ErrorKind::BadFormat, where + ".merges is not a list"};
    if (merges) {  // a small file's merges, from the tree: into the same list
      if (merges->size() > kMaxMerges) return Error{ErrorKind::BadFormat, where + ".merges has more than " + std::to_string(kMaxMerges) + " merges"};
      for (size_t r = 0; r < merges->size(); ++r) {
        const json& e = (*merges)[r];
        if (e.is_string()) big.merges.emplace_back(e.get<std::string>(), std::string("\x01"));
        else if (e.is_array() && e.size() == 2 && e[0].is_string() && e[1].is_string()) big.merges.emplace_back(e[0].get<std::string>(), e[1].get<std::string>());
        else if (big.bad_merge < 0) big.bad_merge = long(r), big.merges.emplace_back();
      }
    }
    if (big.bad_merge >= 0) return Error{ErrorKind::BadFormat, where + ".merges[" + std::to_string(big.bad_merge) + "] is neither \"a b\" nor [a, b]"};
    if (big.merges.size() > kMaxMerges) return Error{ErrorKind::BadFormat, where + ".merges has more than " + std::to_string(kMaxMerges) + " merges"};
    m->merges.reserve(big.merges.size() * 2);
    std::string a, b, merged;
    for (size_t r = 0; r < big.merges.size(); ++r) {
      auto& [first, second] = big.merges[r];
      if (second == "\x01") {  // "a b": split at its one space
        const size_t sp = first.find(' ');
        if (sp == std::string::npos || first.find(' ', sp + 1) != std::string::npos)
          return Error{ErrorKind::BadFormat, where + ".merges[" + std::to_string(r) + "] is not two tokens separated by one space"};
        a.assign(first, 0, sp), b.assign(first, sp + 1, std::string::npos);
      } else {
        a.swap(first), b.swap(second);
      }
      const int ai = m->vocab.find(a), bi = m->vocab.find(b);
      merged.assign(a);
      merged.append(b, b.compare(0, prefix.size(), prefix) == 0 ? prefix.size() : 0, std::string::npos);
      const int res = ai < 0 || bi < 0 ? -1 : m->vocab.find(merged);
      if (res < 0)
        return Error{ErrorKind::BadFormat, where + ".merges[" + std::to_string(r) + "] (\"" + sanitize_utf8(a.substr(0, 64)) + " " +
                                               sanitize_utf8(b.substr(0, 64)) + "\") names a token that is not in " + where + ".vocab"};
      m->merges[(uint64_t(uint32_t(ai)) << 32) | uint32_t(bi)] = MergeRule{int(r), res};  // a repeated merge: the last wins, as officially
    }
    big.merges.clear();
    big.merges.shrink_to_fit();
    return std::unique_ptr<Model>(std::move(m));
  }
  if (type == "WordPiece") {
    auto m = std::make_unique<WordPieceModel>();
    if (Status s = read_vocab_object(*vocab, m->vocab, where + ".vocab", big); !s) return s.error();
    HM_TRY(unk, get_string(j, "unk_token", "[UNK]", where));
    m->unk = m->vocab.find(unk);
    if (m->unk < 0) return Error{ErrorKind::BadFormat, where + ".unk_token \"" + unk + "\" is not in " + where + ".vocab"};
    HM_TRY(prefix, get_string(j, "continuing_subword_prefix", "##", where));
    m->prefix = prefix;
    if (const json* mx = field(j, "max_input_chars_per_word")) {
      if (!mx->is_number_unsigned()) return Error{ErrorKind::BadFormat, where + ".max_input_chars_per_word is not a count"};
      m->max_chars = mx->get<size_t>();
    }
    if (Status s = check_piece_lengths(m->vocab, where + ".vocab"); !s) return s.error();
    index_pieces(m->vocab, m->pieces);
    return std::unique_ptr<Model>(std::move(m));
  }
  if (type == "Unigram") {
    auto m = std::make_unique<UnigramModel>();
    if (!vocab->is_array()) return Error{ErrorKind::BadFormat, where + ".vocab is not a list of [piece, score]"};
    if (vocab->size() > kMaxVocab) return Error{ErrorKind::BadFormat, where + ".vocab has more than " + std::to_string(kMaxVocab) + " pieces"};
    m->vocab.tokens.reserve(vocab->size());
    m->score.reserve(vocab->size());
    m->min_score = std::numeric_limits<double>::infinity();
    for (size_t i = 0; i < vocab->size(); ++i) {
      const json& e = (*vocab)[i];
      if (!e.is_array() || e.size() != 2 || !e[0].is_string() || !e[1].is_number() || e[0].get_ref<const std::string&>().size() > kMaxTokenBytes ||
          !std::isfinite(e[1].get<double>()))
        return Error{ErrorKind::BadFormat, where + ".vocab[" + std::to_string(i) + "] is not [piece, finite score]"};
      const std::string& p = e[0].get_ref<const std::string&>();
      m->vocab.tokens.push_back(p);
      m->vocab.index.emplace(p, int(i));
      m->score.push_back(e[1].get<double>());
      m->min_score = std::min(m->min_score, m->score.back());
    }
    if (m->vocab.tokens.empty()) m->min_score = 0;
    if (const json* u = field(j, "unk_id")) {
      if (!u->is_number_unsigned() || u->get<size_t>() >= m->vocab.tokens.size())
        return Error{ErrorKind::BadFormat, where + ".unk_id is not an index into " + where + ".vocab"};
      m->unk = int(u->get<size_t>());
    }
    HM_TRY(bf, get_bool(j, "byte_fallback", false, where));
    m->byte_fallback = bf;
    fill_byte_ids(m->vocab, m->byte_ids);
    for (const auto& t : m->vocab.tokens) m->vocab.longest = std::max(m->vocab.longest, t.size());
    if (Status s = check_piece_lengths(m->vocab, where + ".vocab"); !s) return s.error();
    index_pieces(m->vocab, m->pieces);
    return std::unique_ptr<Model>(std::move(m));
  }
  return Error{ErrorKind::BadFormat, where + ".type \"" + type + "\" is a model headmap does not implement (BPE, WordPiece and Unigram are)"};
}


// GPT-2's vocab.json + merges.txt as the tokenizer.json that says the same: byte-level BPE,
// GPT-2's split pattern, <|endoftext|> as a special added token when the vocabulary has it.
Result<std::string> gpt2_files_as_json(const std::string& vocab_text, const std::string& merges_text, const std::string& dir) {
  // vocab.json is a flat object: two levels are all it needs.
  if (Status s = check_json_limits(vocab_text, dir + "/vocab.json", 2, "open a smaller tokenizer"); !s) return s.error();
  json vocab = json::parse(vocab_text, nullptr, false);
  if (vocab.is_discarded() || !vocab.is_object()) return Error{ErrorKind::BadFormat, dir + "/vocab.json is not a JSON object of token: id"};
  json merges = json::array();
  size_t at = 0, line = 0;
  while (at < merges_text.size()) {
    size_t nl = merges_text.find('\n', at);
    if (nl == std::string::npos) nl = merges_text.size();
    std::string l = merges_text.substr(at, nl - at);
    if (!l.empty() && l.back() == '\r') l.pop_back();
    if (Status s = check_line_utf8(l, dir + "/merges.txt", line); !s) return s.error();
    if (!l.empty() && !(line == 0 && l.rfind("#version", 0) == 0)) merges.push_back(l);
    at = nl + 1, ++line;
  }
  json j = {{"version", "1.0"},
            {"added_tokens", json::array()},
            {"pre_tokenizer", {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true}, {"use_regex", true}}},
            {"decoder", {{"type", "ByteLevel"}}},
            {"model", {{"type", "BPE"}, {"vocab", std::move(vocab)}, {"merges", std::move(merges)}}}};
  const json& v = j["model"]["vocab"];
  if (auto e = v.find("<|endoftext|>"); e != v.end() && e->is_number_unsigned())
    j["added_tokens"].push_back({{"id", *e}, {"content", "<|endoftext|>"}, {"special", true}, {"normalized", false}});
  return j.dump();
}

// BERT's vocab.txt (one token a line, ids in order) as a WordPiece tokenizer.json, with the
// BERT pipeline, lowercased with accents stripped (uncased) or not (cased): what
// tokenizer_config.json's do_lower_case says (true when absent, as BertTokenizer's default).
Result<std::string> bert_vocab_as_json(const std::string& text, bool lowercase) {
  json vocab = json::object(), added = json::array();
  std::vector<std::string> lines;
  size_t at = 0;
  int id = 0;
  while (at < text.size()) {
    size_t nl = text.find('\n', at);
    if (nl == std::string::npos) nl = text.size();
    std::string t = text.substr(at, nl - at);
    if (!t.empty() && t.back() == '\r') t.pop_back();
    if (Status s = check_line_utf8(t, "vocab.txt", size_t(id)); !s) return s.error();
    vocab[t] = id;  // a line written twice: the last id wins, as Hugging Face's WordPiece::read_file (a map insert)
    lines.push_back(std::move(t));
    ++id, at = nl + 1;
  }
  for (size_t i = 0; i < lines.size(); ++i) {  // [CLS] and the like, at the id the vocabulary kept
    const std::string& t = lines[i];
    if (t.size() > 2 && t.front() == '[' && t.back() == ']' && vocab[t] == int(i))
      added.push_back({{"id", int(i)}, {"content", t}, {"special", true}, {"normalized", false}});
  }
  if (!vocab.contains("[CLS]") || !vocab.contains("[SEP]") || !vocab.contains("[UNK]"))
    return Error{ErrorKind::BadFormat, "vocab.txt lacks [CLS], [SEP] or [UNK]: it is not BERT's"};
  json j = {{"version", "1.0"},
            {"added_tokens", added},
            {"normalizer", {{"type", "BertNormalizer"}, {"clean_text", true}, {"handle_chinese_chars", true}, {"lowercase", lowercase}}},
            {"pre_tokenizer", {{"type", "BertPreTokenizer"}}},
            {"post_processor", {{"type", "BertProcessing"}, {"cls", {"[CLS]", vocab["[CLS]"]}}, {"sep", {"[SEP]", vocab["[SEP]"]}}}},
            {"decoder", {{"type", "WordPiece"}, {"prefix", "##"}}},
            {"model", {{"type", "WordPiece"}, {"unk_token", "[UNK]"}, {"continuing_subword_prefix", "##"}, {"max_input_chars_per_word", 100}, {"vocab", vocab}}}};
  return j.dump();
}

}  // namespace headmap::hf
