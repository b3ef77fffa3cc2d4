// bpe.cpp: GPT-2's byte-level BPE: spelling, pre-tokenization, encoding, loading, training.
//
// Sections: [spelling] [pre-tokenization] [building] [encoding] [loading] [training]
#include "core/text/bpe.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <algorithm>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <queue>

#include "core/io/json_limits.h"
#include "core/text/bpe_merge.h"
#include "core/text/utf8.h"

namespace headmap {

// ---- [spelling] ------------------------------------------------------------------------
// GPT-2's bytes_to_unicode(): printable bytes stand for themselves, the rest for 256 + n.
namespace {

struct Alphabet {
  std::array<char32_t, 256> of_byte{};
  std::unordered_map<char32_t, int> byte_of;
  Alphabet() {
    int n = 0;
    for (int b = 0; b < 256; ++b) {
      const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
      of_byte[b] = printable ? char32_t(b) : char32_t(256 + n++);
      byte_of[of_byte[b]] = b;
    }
  }
};

const Alphabet& alphabet() {
  static const Alphabet a;
  return a;
}

}  // namespace

std::string gpt2_spell(std::string_view bytes) {
  std::string out;
  for (unsigned char b : bytes) append_utf8(out, alphabet().of_byte[b]);
  return out;
}

Result<std::string> gpt2_unspell(std::string_view spelled) {
  const DecodedText d = decode_utf8(spelled);
  if (d.replaced) return Error{ErrorKind::BadFormat, "a token is not valid UTF-8"};
  std::string out;
  for (char32_t c : d.codepoints) {
    auto it = alphabet().byte_of.find(c);
    if (it == alphabet().byte_of.end())
      return Error{ErrorKind::BadFormat, "a token uses a character outside GPT-2's byte alphabet (U+" +
                                             [&] { char b[16]; std::snprintf(b, sizeof b, "%04X", unsigned(c)); return std::string(b); }() + ")"};
    out.push_back(static_cast<char>(it->second));
  }
  return out;
}

// ---- [pre-tokenization] ----------------------------------------------------------------
namespace {

constexpr const char* kGpt2Pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

// The compiled pattern, shared; match data per call (PCRE2 code is thread-safe to share).
struct Pattern {
  pcre2_code* code = nullptr;
  Pattern() {
    int err = 0;
    PCRE2_SIZE off = 0;
    code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(kGpt2Pattern), PCRE2_ZERO_TERMINATED, PCRE2_UTF | PCRE2_UCP, &err,
                         &off, nullptr);
    HM_ASSERT(code, "GPT-2's pre-tokenization pattern must compile (PCRE2 built with Unicode support)");
    pcre2_jit_compile(code, PCRE2_JIT_COMPLETE);  // optional: falls back to the interpreter
  }
  ~Pattern() { pcre2_code_free(code); }
};

const Pattern& pattern() {
  static const Pattern p;
  return p;
}

// Length of the valid UTF-8 sequence at s[i], or 0 if the bytes there are not one.
size_t valid_sequence(std::string_view s, size_t i) {
  const unsigned char c = static_cast<unsigned char>(s[i]);
  size_t n;
  char32_t cp;
  if (c < 0x80) return 1;
  if (c >= 0xC2 && c <= 0xDF) n = 2, cp = c & 0x1F;
  else if (c >= 0xE0 && c <= 0xEF) n = 3, cp = c & 0x0F;
  else if (c >= 0xF0 && c <= 0xF4) n = 4, cp = c & 0x07;
  else return 0;
  if (i + n > s.size()) return 0;
  for (size_t k = 1; k < n; ++k) {
    const unsigned char d = static_cast<unsigned char>(s[i + k]);
    if ((d & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (d & 0x3F);
  }
  if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10FFFF)) || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
  return n;
}

void pretokenize_valid(std::string_view run, std::vector<std::string_view>& out) {
  if (run.empty()) return;
  const pcre2_code* code = pattern().code;
  std::unique_ptr<pcre2_match_data, decltype(&pcre2_match_data_free)> md(
      pcre2_match_data_create_from_pattern(code, nullptr), pcre2_match_data_free);
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(run.data());
  size_t at = 0;
  while (at < run.size()) {
    // The run is valid UTF-8 (checked by the caller), so PCRE2 need not check it again.
    const int rc = pcre2_match(code, subject, run.size(), at, PCRE2_NO_UTF_CHECK, md.get(), nullptr);
    PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md.get());
    if (rc < 0 || ov[1] <= at) {
      // Cannot happen (\s+ and the symbol class cover every character); keep the rest whole.
      out.push_back(run.substr(at));
      return;
    }
    HM_ASSERT(ov[0] == at, "GPT-2's pattern matches at every position: its classes cover all characters");
    out.push_back(run.substr(ov[0], ov[1] - ov[0]));
    at = ov[1];
  }
}

}  // namespace

std::vector<std::string_view> gpt2_pretokenize(std::string_view bytes) {
  std::vector<std::string_view> out;
  size_t run_start = 0, i = 0;
  while (i < bytes.size()) {
    const size_t n = valid_sequence(bytes, i);
    if (n) {
      i += n;
      continue;
    }
    pretokenize_valid(bytes.substr(run_start, i - run_start), out);
    out.push_back(bytes.substr(i, 1));  // an invalid byte stands alone
    run_start = ++i;
  }
  pretokenize_valid(bytes.substr(run_start), out);
  return out;
}

const char* const kGpt2SplitPattern = kGpt2Pattern;

// ---- [building] ------------------------------------------------------------------------
Result<Bpe> Bpe::build(std::vector<std::string> tokens, const std::vector<std::pair<std::string, std::string>>& merges) {
  Bpe b;
  b.tokens_ = std::move(tokens);
  b.index_.reserve(b.tokens_.size() * 2);
  for (size_t id = 0; id < b.tokens_.size(); ++id) {
    if (!b.index_.emplace(b.tokens_[id], static_cast<int>(id)).second)
      return Error{ErrorKind::BadFormat, "the vocabulary lists the token \"" + gpt2_spell(b.tokens_[id]) + "\" twice"};
  }
  for (int v = 0; v < 256; ++v) {
    const int id = b.find(std::string(1, static_cast<char>(v)));
    if (id < 0) {
      char msg[96];
      std::snprintf(msg, sizeof msg, "the vocabulary has no token for the byte 0x%02X: it is not a byte-level BPE", v);
      return Error{ErrorKind::BadFormat, msg};
    }
    b.byte_id_[static_cast<size_t>(v)] = id;
  }
  b.merges_.reserve(merges.size());
  b.rank_.reserve(merges.size() * 2);
  for (size_t r = 0; r < merges.size(); ++r) {
    const auto& [l, rt] = merges[r];
    const int li = b.find(l), ri = b.find(rt), res = b.find(l + rt);
    if (li < 0 || ri < 0 || res < 0)
      return Error{ErrorKind::BadFormat, "merge " + std::to_string(r + 1) + " (\"" + gpt2_spell(l) + " " + gpt2_spell(rt) +
                                             "\") names a token that is not in the vocabulary"};
    const uint64_t key = (uint64_t(uint32_t(li)) << 32) | uint32_t(ri);
    b.rank_.emplace(key, static_cast<int>(r));  // a repeated merge never applies: the first rank wins
    b.merges_.push_back({li, ri, res});
  }
  return b;
}

int Bpe::find(std::string_view token_bytes) const {
  auto it = index_.find(std::string(token_bytes));
  return it == index_.end() ? -1 : it->second;
}

int Bpe::rank(int left, int right) const {
  auto it = rank_.find((uint64_t(uint32_t(left)) << 32) | uint32_t(right));
  return it == rank_.end() ? -1 : it->second;
}

std::vector<std::string> Bpe::vocab_list() const {
  std::vector<std::string> out;
  out.reserve(tokens_.size());
  for (const auto& t : tokens_) out.push_back(gpt2_spell(t));
  return out;
}

std::vector<std::string> Bpe::merges_list() const {
  std::vector<std::string> out;
  out.reserve(merges_.size());
  for (const Merge& m : merges_) out.push_back(gpt2_spell(tokens_[size_t(m.left)]) + " " + gpt2_spell(tokens_[size_t(m.right)]));
  return out;
}

// ---- [encoding] ------------------------------------------------------------------------
// Each byte starts as its own token; the shared merge loop (bpe_merge.h) does the rest.
void Bpe::encode_piece(std::string_view piece, std::vector<int>& out) const {
  const size_t n = piece.size();
  if (n == 0) return;
  if (n == 1) {
    out.push_back(byte_id_[static_cast<unsigned char>(piece[0])]);
    return;
  }
  std::vector<int> sym(n);  // (n)
  for (size_t i = 0; i < n; ++i) sym[i] = byte_id_[static_cast<unsigned char>(piece[i])];
  bpe_merge(sym, [this](int l, int r) {
    const int k = rank(l, r);
    return k < 0 ? MergeRule{} : MergeRule{k, merges_[size_t(k)].result};
  });
  out.insert(out.end(), sym.begin(), sym.end());
}

std::vector<int> Bpe::encode(std::string_view bytes) const {
  std::vector<int> ids;
  ids.reserve(bytes.size() / 3 + 1);
  for (std::string_view piece : gpt2_pretokenize(bytes)) encode_piece(piece, ids);
  return ids;
}

std::string Bpe::decode(const std::vector<int>& ids) const {
  std::string out;
  for (int id : ids)
    if (id >= 0 && id < size()) out += tokens_[size_t(id)];
  return out;
}

// ---- [loading] -------------------------------------------------------------------------
namespace {

// "left right" lines after an optional "#version" line; blank lines are skipped.
Result<std::vector<std::pair<std::string, std::string>>> parse_merge_lines(const std::vector<std::string>& lines) {
  std::vector<std::pair<std::string, std::string>> out;
  out.reserve(lines.size());
  for (size_t i = 0; i < lines.size(); ++i) {
    std::string_view l = lines[i];
    if (!l.empty() && l.back() == '\r') l.remove_suffix(1);
    if (l.empty() || (i == 0 && l.rfind("#version", 0) == 0)) continue;
    const size_t sp = l.find(' ');
    if (sp == std::string_view::npos || sp == 0 || sp + 1 >= l.size() || l.find(' ', sp + 1) != std::string_view::npos)
      return Error{ErrorKind::BadFormat, "merge line " + std::to_string(i + 1) + " is not two tokens separated by one space"};
    auto left = gpt2_unspell(l.substr(0, sp));
    if (!left) return left.error();
    auto right = gpt2_unspell(l.substr(sp + 1));
    if (!right) return right.error();
    out.emplace_back(std::move(*left), std::move(*right));
  }
  return out;
}

std::vector<std::string> split_text_lines(std::string_view text) {
  std::vector<std::string> lines;
  size_t at = 0;
  while (at <= text.size()) {
    const size_t nl = text.find('\n', at);
    lines.emplace_back(text.substr(at, nl == std::string_view::npos ? std::string_view::npos : nl - at));
    if (nl == std::string_view::npos) break;
    at = nl + 1;
  }
  return lines;
}

// vocab: {"token": id, ...} with ids 0..V-1, each once.
Result<std::vector<std::string>> tokens_from_vocab_object(const nlohmann::json& v) {
  if (!v.is_object()) return Error{ErrorKind::BadFormat, "the vocabulary is not a JSON object of token: id"};
  if (v.size() > (1u << 21)) return Error{ErrorKind::BadFormat, "the vocabulary has more than 2 million tokens"};
  std::vector<std::string> tokens(v.size());
  std::vector<char> seen(v.size(), 0);
  for (auto it = v.begin(); it != v.end(); ++it) {
    if (!it.value().is_number_integer())
      return Error{ErrorKind::BadFormat, "the vocabulary's id of \"" + it.key() + "\" is not an integer"};
    const int64_t id = it.value().get<int64_t>();
    if (id < 0 || id >= static_cast<int64_t>(v.size()) || seen[size_t(id)])
      return Error{ErrorKind::BadFormat, "the vocabulary's ids are not 0.." + std::to_string(v.size() - 1) + ", each once"};
    seen[size_t(id)] = 1;
    auto bytes = gpt2_unspell(it.key());
    if (!bytes) {
      // Special tokens such as "<|endoftext|>" are plain ASCII and spell themselves.
      return bytes.error();
    }
    tokens[size_t(id)] = std::move(*bytes);
  }
  return tokens;
}

}  // namespace

Result<Bpe> Bpe::from_gpt2_files(std::string_view vocab_json, std::string_view merges_txt) {
  if (Status s = check_json_limits(vocab_json, "vocab.json", 2, "open a smaller tokenizer"); !s) return s.error();
  nlohmann::json v = nlohmann::json::parse(vocab_json, nullptr, false);
  if (v.is_discarded()) return Error{ErrorKind::BadFormat, "vocab.json is not valid JSON"};
  auto tokens = tokens_from_vocab_object(v);
  if (!tokens) return Error{ErrorKind::BadFormat, "vocab.json: " + tokens.error().message};
  auto merges = parse_merge_lines(split_text_lines(merges_txt));
  if (!merges) return Error{ErrorKind::BadFormat, "merges.txt: " + merges.error().message};
  auto b = build(std::move(*tokens), *merges);
  if (!b) return Error{ErrorKind::BadFormat, "vocab.json and merges.txt: " + b.error().message};
  return b;
}

Result<Bpe> Bpe::from_tokenizer_json(std::string_view json) {
  nlohmann::json j = nlohmann::json::parse(json, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return Error{ErrorKind::BadFormat, "tokenizer.json is not a JSON object"};
  const auto model = j.find("model");
  if (model == j.end() || !model->is_object())
    return Error{ErrorKind::BadFormat, "tokenizer.json has no \"model\" object"};
  if (const auto type = model->find("type"); type != model->end() && (!type->is_string() || *type != "BPE"))
    return Error{ErrorKind::BadFormat, "tokenizer.json's model is not BPE (headmap reads GPT-2's byte-level BPE)"};
  const auto vocab = model->find("vocab");
  const auto merges = model->find("merges");
  if (vocab == model->end() || merges == model->end() || !merges->is_array())
    return Error{ErrorKind::BadFormat, "tokenizer.json's model has no vocab object or merges list"};
  auto tokens = tokens_from_vocab_object(*vocab);
  if (!tokens) return Error{ErrorKind::BadFormat, "tokenizer.json: " + tokens.error().message};
  // Merges are "a b" strings, or [a, b] pairs in newer files.
  std::vector<std::string> lines;
  lines.reserve(merges->size());
  for (const auto& m : *merges) {
    if (m.is_string()) lines.push_back(m.get<std::string>());
    else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string())
      lines.push_back(m[0].get<std::string>() + " " + m[1].get<std::string>());
    else return Error{ErrorKind::BadFormat, "tokenizer.json: a merge is neither \"a b\" nor [a, b]"};
  }
  auto pairs = parse_merge_lines(lines);
  if (!pairs) return Error{ErrorKind::BadFormat, "tokenizer.json merges: " + pairs.error().message};
  auto b = build(std::move(*tokens), *pairs);
  if (!b) return Error{ErrorKind::BadFormat, "tokenizer.json: " + b.error().message};
  return b;
}

std::string Bpe::to_tokenizer_json() const {
  nlohmann::json vocab = nlohmann::json::object();
  const std::vector<std::string> v = vocab_list();
  for (size_t i = 0; i < v.size(); ++i) vocab[v[i]] = i;
  nlohmann::json j = {{"version", "1.0"},
                      {"pre_tokenizer", {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", true}}},
                      {"decoder", {{"type", "ByteLevel"}}},
                      {"model", {{"type", "BPE"}, {"vocab", vocab}, {"merges", merges_list()}}}};
  return j.dump(1) + "\n";
}

Result<Bpe> Bpe::from_lists(const std::vector<std::string>& vocab, const std::vector<std::string>& merges) {
  std::vector<std::string> tokens;
  tokens.reserve(vocab.size());
  for (const auto& s : vocab) {
    auto b = gpt2_unspell(s);
    if (!b) return b.error();
    tokens.push_back(std::move(*b));
  }
  // Merge lines may not contain a "#version" header here; parse_merge_lines skips it anyway.
  auto pairs = parse_merge_lines(merges);
  if (!pairs) return pairs.error();
  return build(std::move(tokens), *pairs);
}

// ---- [training] ------------------------------------------------------------------------
// Classic BPE training over distinct pre-tokens weighted by their counts. Pair counts are
// kept incrementally: merging a pair only touches the words that contain it. The best
// pair comes from a max-heap with lazy deletion (an entry is stale when its count no
// longer matches). Everything is ordered (std::map, ids), so the result does not depend
// on hash order or threads.
Bpe Bpe::train(const std::vector<std::string>& lines, int vocab_size, int min_pair_count) {
  // Distinct pre-tokens and their counts, in a fixed (sorted) order.
  std::map<std::string, int64_t> counts;
  for (const auto& line : lines)
    for (std::string_view p : gpt2_pretokenize(line)) ++counts[std::string(p)];

  std::vector<std::string> tokens(256);
  for (int v = 0; v < 256; ++v) tokens[size_t(v)] = std::string(1, static_cast<char>(v));
  struct Word {
    std::vector<int> sym;
    int64_t count;
  };
  std::vector<Word> words;
  words.reserve(counts.size());
  for (const auto& [w, c] : counts) {
    Word word{{}, c};
    for (unsigned char b : w) word.sym.push_back(b);
    if (word.sym.size() >= 2) words.push_back(std::move(word));
  }

  auto key = [](int a, int b) { return (uint64_t(uint32_t(a)) << 32) | uint32_t(b); };
  std::unordered_map<uint64_t, int64_t> pair_count;
  std::unordered_map<uint64_t, std::vector<int>> where;  // pair -> words that had it (may be stale)
  for (int wi = 0; wi < static_cast<int>(words.size()); ++wi) {
    const auto& s = words[size_t(wi)].sym;
    for (size_t i = 0; i + 1 < s.size(); ++i) {
      const uint64_t k = key(s[i], s[i + 1]);
      pair_count[k] += words[size_t(wi)].count;
      auto& v = where[k];
      if (v.empty() || v.back() != wi) v.push_back(wi);
    }
  }
  struct Entry {
    int64_t count;
    uint64_t pair;
    bool operator<(const Entry& o) const { return count != o.count ? count < o.count : pair > o.pair; }
  };
  std::priority_queue<Entry> heap;
  for (const auto& [k, c] : pair_count) heap.push({c, k});

  std::vector<std::pair<std::string, std::string>> merges;
  while (static_cast<int>(tokens.size()) < vocab_size && !heap.empty()) {
    const Entry e = heap.top();
    heap.pop();
    auto pc = pair_count.find(e.pair);
    if (pc == pair_count.end() || pc->second != e.count) continue;  // stale
    if (e.count < min_pair_count) break;
    const int a = static_cast<int>(e.pair >> 32), b = static_cast<int>(e.pair & 0xFFFFFFFFu);
    const int merged = static_cast<int>(tokens.size());
    tokens.push_back(tokens[size_t(a)] + tokens[size_t(b)]);
    merges.emplace_back(tokens[size_t(a)], tokens[size_t(b)]);

    std::vector<int> affected = std::move(where[e.pair]);
    where.erase(e.pair);
    std::map<uint64_t, int64_t> delta;  // ordered, so heap pushes are deterministic
    for (int wi : affected) {
      Word& w = words[size_t(wi)];
      auto& s = w.sym;
      bool has = false;
      for (size_t i = 0; i + 1 < s.size(); ++i)
        if (s[i] == a && s[i + 1] == b) { has = true; break; }
      if (!has) continue;
      for (size_t i = 0; i + 1 < s.size(); ++i) delta[key(s[i], s[i + 1])] -= w.count;
      std::vector<int> ns;
      ns.reserve(s.size());
      for (size_t i = 0; i < s.size();) {
        if (i + 1 < s.size() && s[i] == a && s[i + 1] == b) { ns.push_back(merged); i += 2; }
        else ns.push_back(s[i++]);
      }
      s = std::move(ns);
      for (size_t i = 0; i + 1 < s.size(); ++i) {
        const uint64_t k = key(s[i], s[i + 1]);
        delta[k] += w.count;
        auto& v = where[k];
        if (v.empty() || v.back() != wi) v.push_back(wi);
      }
    }
    for (const auto& [k, d] : delta) {
      if (d == 0) continue;
      int64_t& c = pair_count[k];
      c += d;
      if (c <= 0) pair_count.erase(k);
      else heap.push({c, k});
    }
  }
  auto built = build(std::move(tokens), merges);
  HM_ASSERT(built.ok(), "a trained BPE is consistent by construction");
  return std::move(*built);
}

}  // namespace headmap
