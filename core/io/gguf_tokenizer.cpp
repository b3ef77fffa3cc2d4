// gguf_tokenizer.cpp: tokenizer.ggml.* -> a tokenizer.json text for HfTokenizer (see
// gguf_model.h), so a GGUF file's text runs through the one tokenizer pipeline.
//
// llama.cpp's two common vocabularies (src/llama-vocab.cpp):
//   "llama" (SPM): spaces become "▁" (and one is prepended, add_space_prefix), then adjacent
//     pieces merge while their concatenation is a token, the highest score first; what is
//     left that is no token becomes <0xXX> byte tokens. As tokenizer.json: BPE with byte
//     fallback whose merges are every split of every token into two tokens, ranked by the
//     whole token's score (Hugging Face's own SentencePiece converter does the same).
//   "gpt2" (byte-level BPE): the merges are given; tokenizer.ggml.pre names the regexes that
//     split the text first (llama.cpp's table of names, mapped here onto Split / Digits /
//     ByteLevel pre-tokenizers).
// Token types: 1 normal, 2 unknown, 3 control, 4 user-defined, 5 unused, 6 byte. Control and
// unknown tokens become special added tokens, user-defined ones plain added tokens, after
// llama.cpp's retyping by name (kTokenNames below). A file named Phi-3 (general.name) strips the
// whitespace after its special tokens (rstrip), as llama.cpp and Phi-3's tokenizer.json do.
//
// Sections: [token names] [tokenizer.json]
#include <algorithm>
#include <cctype>
#include <cstring>
#include <cmath>
#include <iterator>
#include <map>
#include <nlohmann/json.hpp>
#include <numeric>
#include <unordered_map>

#include "core/io/gguf_model.h"

namespace headmap {
using nlohmann::json;

namespace {
Error bad(const GgufFile& f, const std::string& m) { return Error{ErrorKind::BadFormat, f.path() + ": " + m}; }

// The Llama 3 / Qwen 2 pre-tokenizer regexes as their tokenizer.json files write them.
const char* kLlama3Regex =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
const char* kQwen2Regex =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

json byte_level(bool use_regex) { return {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true}, {"use_regex", use_regex}}; }
json split(const char* re) { return {{"type", "Split"}, {"pattern", {{"Regex", re}}}, {"behavior", "Isolated"}, {"invert", false}}; }

// tokenizer.ggml.pre -> the pre-tokenizer, and whether whole words skip the merges (llama3).
bool pre_tokenizer_for(const std::string& pre, json* out, bool* ignore_merges) {
  *ignore_merges = false;
  if (pre == "llama3" || pre == "llama-v3" || pre == "llama-bpe" || pre == "falcon3" || pre == "dbrx" || pre == "smaug-bpe") {
    *ignore_merges = pre != "dbrx" && pre != "smaug-bpe";
    *out = {{"type", "Sequence"}, {"pretokenizers", {split(kLlama3Regex), byte_level(false)}}};
  } else if (pre == "qwen2" || pre == "stablelm2" || pre == "deepseek-r1-qwen" || pre == "megrez") {
    *out = {{"type", "Sequence"}, {"pretokenizers", {split(kQwen2Regex), byte_level(false)}}};
  } else if (pre == "gpt-2" || pre == "phi-2" || pre == "mpt" || pre == "olmo" || pre == "roberta-bpe" || pre == "jais") {
    *out = byte_level(true);
  } else if (pre == "smollm" || pre == "starcoder" || pre == "refact" || pre == "codeshell") {
    *out = {{"type", "Sequence"}, {"pretokenizers", {{{"type", "Digits"}, {"individual_digits", true}}, byte_level(true)}}};
  } else {
    return false;
  }
  return true;
}
const char* kKnownPre = "llama-bpe (llama3, llama-v3, falcon3), dbrx, smaug-bpe, qwen2 (stablelm2, deepseek-r1-qwen, megrez), gpt-2 (phi-2, mpt, olmo, roberta-bpe, jais), smollm (starcoder, refact, codeshell)";

// ---- [token names]
// After reading token_type, llama.cpp's vocabulary loader retypes tokens by their text, for
// every vocabulary type (src/llama-vocab.cpp, llama_vocab::impl::load; the llama.cpp that npm
// node-llama-cpp 3.22.1 bundles, release "v0.5.0", commit de3ff81). For a GGUF file llama.cpp
// is the authority, so these names live here, once; only what changes which tokens are
// matched whole in the text (and which of those are special) is kept.
//   EndOfGeneration  made control whatever the file says (llama.cpp warns "control-looking
//                    token"); a control or unknown token stays as it is.
//   Fim*             made control likewise, but only when the file names no id for that role
//                    (its key, or the older key: kFimKeys) and only one token per role: llama.cpp
//                    takes the first its hash table yields, headmap the lowest id (real
//                    vocabularies hold one spelling per role).
//   UserDefined      made user-defined whatever the file says (gpt-oss's "always render").
// A name is a token's exact text, looked up as llama.cpp's token_to_id does (a repeated text:
// its last id).
enum class NameRole : uint8_t { EndOfGeneration, FimPre, FimSuf, FimMid, FimPad, FimRep, FimSep, UserDefined };
struct TokenName {
  const char* text;
  NameRole role;
};
constexpr TokenName kTokenNames[] = {
    {"<|eot_id|>", NameRole::EndOfGeneration}, {"<|im_end|>", NameRole::EndOfGeneration}, {"<|end|>", NameRole::EndOfGeneration},
    {"<|return|>", NameRole::EndOfGeneration}, {"<|call|>", NameRole::EndOfGeneration}, {"<|flush|>", NameRole::EndOfGeneration},
    {"<|calls|>", NameRole::EndOfGeneration}, {"<end_of_turn>", NameRole::EndOfGeneration}, {"<|endoftext|>", NameRole::EndOfGeneration},
    {"</s>", NameRole::EndOfGeneration}, {"<|eom_id|>", NameRole::EndOfGeneration}, {"<EOT>", NameRole::EndOfGeneration},
    {"_<EOT>", NameRole::EndOfGeneration}, {"[EOT]", NameRole::EndOfGeneration}, {"[EOS]", NameRole::EndOfGeneration},
    {"<|end_of_text|>", NameRole::EndOfGeneration}, {"<end_of_utterance>", NameRole::EndOfGeneration}, {"<eos>", NameRole::EndOfGeneration},
    {"<turn|>", NameRole::EndOfGeneration}, {"<|tool_response>", NameRole::EndOfGeneration},
    {"<\uFF5Cend\u2581of\u2581sentence\uFF5C>", NameRole::EndOfGeneration}, {"[e~[", NameRole::EndOfGeneration},
    // (llama.cpp's end-of-turn and end-of-message spellings are all among the above)
    {"<|fim_prefix|>", NameRole::FimPre}, {"<fim-prefix>", NameRole::FimPre}, {"<fim_prefix>", NameRole::FimPre},
    {"<\uFF5Cfim\u2581begin\uFF5C>", NameRole::FimPre}, {"<PRE>", NameRole::FimPre}, {"\u2581<PRE>", NameRole::FimPre},
    {"<|code_prefix|>", NameRole::FimPre}, {"<|prefix|>", NameRole::FimPre},
    {"<|fim_suffix|>", NameRole::FimSuf}, {"<fim-suffix>", NameRole::FimSuf}, {"<fim_suffix>", NameRole::FimSuf},
    {"<\uFF5Cfim\u2581hole\uFF5C>", NameRole::FimSuf}, {"<SUF>", NameRole::FimSuf}, {"\u2581<SUF>", NameRole::FimSuf},
    {"<|code_suffix|>", NameRole::FimSuf}, {"<|suffix|>", NameRole::FimSuf},
    {"<|fim_middle|>", NameRole::FimMid}, {"<fim-middle>", NameRole::FimMid}, {"<fim_middle>", NameRole::FimMid},
    {"<\uFF5Cfim\u2581end\uFF5C>", NameRole::FimMid}, {"<MID>", NameRole::FimMid}, {"\u2581<MID>", NameRole::FimMid},
    {"<|code_middle|>", NameRole::FimMid}, {"<|middle|>", NameRole::FimMid},
    {"<|fim_pad|>", NameRole::FimPad}, {"<fim-pad>", NameRole::FimPad}, {"<fim_pad>", NameRole::FimPad}, {"<PAD>", NameRole::FimPad},
    {"[PAD]", NameRole::FimPad},
    {"<|fim_repo|>", NameRole::FimRep}, {"<|repo_name|>", NameRole::FimRep}, {"<fim-repo>", NameRole::FimRep}, {"<REPO>", NameRole::FimRep},
    {"<reponame>", NameRole::FimRep},
    {"<|file_sep|>", NameRole::FimSep},
    {"<|channel|>", NameRole::UserDefined}, {"<|message|>", NameRole::UserDefined}, {"<|start|>", NameRole::UserDefined},
    {"<|constrain|>", NameRole::UserDefined},
};
// Fim* role -> the metadata keys that give its id (an id in range there: no name is looked for).
constexpr const char* kFimKeys[][2] = {
    {"tokenizer.ggml.fim_pre_token_id", "tokenizer.ggml.prefix_token_id"}, {"tokenizer.ggml.fim_suf_token_id", "tokenizer.ggml.suffix_token_id"},
    {"tokenizer.ggml.fim_mid_token_id", "tokenizer.ggml.middle_token_id"}, {"tokenizer.ggml.fim_pad_token_id", nullptr},
    {"tokenizer.ggml.fim_rep_token_id", nullptr}, {"tokenizer.ggml.fim_sep_token_id", nullptr}};
// Two exceptions applied last, that undo the end-of-generation rule for a token when the
// vocabulary also holds both texts of one of the pairs (gpt-oss / solar-open: "<|end|>" is
// user-defined; gemma4: "</s>" is normal, whatever the file says).
struct NameException {
  const char* text;
  int type;
  const char* with[4][2];  // unused pairs: {nullptr, nullptr}; a one-text condition: {text, text}
};
constexpr NameException kNameExceptions[] = {
    {"<|end|>", 4, {{"<|return|>", "<|call|>"}, {"<|return|>", "<|calls|>"}, {"<|call|>", "<|flush|>"}, {"<|calls|>", "<|flush|>"}}},
    {"</s>", 1, {{"<|tool_response>", "<|tool_response>"}, {nullptr, nullptr}, {nullptr, nullptr}, {nullptr, nullptr}}},
};

// The token types llama.cpp tokenizes with. types: (n) the file's types; id_of: a text's id or -1.
template <class IdOf>
void retype_by_name(const GgufFile& f, size_t n, const IdOf& id_of, std::vector<int>* types) {
  auto control = [&](int64_t id) {
    if ((*types)[id] != 2 && (*types)[id] != 3) (*types)[id] = 3;
  };
  constexpr size_t kRoles = std::size(kFimKeys);
  static_assert(kRoles == static_cast<size_t>(NameRole::UserDefined) - static_cast<size_t>(NameRole::FimPre));
  bool fim_given[kRoles] = {};
  for (size_t r = 0; r < kRoles; ++r)
    for (const char* key : kFimKeys[r]) {
      const GgufValue* v = key ? f.find(key) : nullptr;
      int64_t x = 0;
      if (v && v->as_int(0, static_cast<int64_t>(n) - 1, &x)) fim_given[r] = true;
    }
  int64_t fim_first[kRoles];
  std::fill(std::begin(fim_first), std::end(fim_first), int64_t{-1});
  for (const TokenName& t : kTokenNames) {
    const int64_t id = id_of(t.text);
    if (id < 0) continue;
    if (t.role == NameRole::EndOfGeneration) {
      control(id);
    } else if (t.role != NameRole::UserDefined) {
      const size_t r = static_cast<size_t>(t.role) - static_cast<size_t>(NameRole::FimPre);
      if (!fim_given[r] && (fim_first[r] < 0 || id < fim_first[r])) fim_first[r] = id;
    }
  }
  for (int64_t id : fim_first)
    if (id >= 0) control(id);
  for (const TokenName& t : kTokenNames)
    if (t.role == NameRole::UserDefined && id_of(t.text) >= 0) (*types)[id_of(t.text)] = 4;
  for (const NameException& e : kNameExceptions) {
    const int64_t id = id_of(e.text);
    bool hit = false;
    for (const auto& pair : e.with) hit = hit || (pair[0] && id_of(pair[0]) >= 0 && id_of(pair[1]) >= 0);
    if (id >= 0 && hit) (*types)[id] = e.type;
  }
}
}  // namespace

// ---- [tokenizer.json]

static Result<std::string> tokenizer_json(const GgufFile& f);

Result<std::string> gguf_tokenizer_json(const GgufFile& f) {
  try {
    return tokenizer_json(f);
  } catch (const json::exception& e) {
    return bad(f, std::string("the tokenizer metadata could not be turned into a tokenizer (") + e.what() + ").");
  }
}

static Result<std::string> tokenizer_json(const GgufFile& f) {
  const GgufValue* model = f.find("tokenizer.ggml.model");
  if (!model || model->type != GgufValueType::String) return bad(f, "metadata \"tokenizer.ggml.model\" is missing, so the file has no tokenizer headmap can read.");
  const std::string kind = model->s;
  if (kind != "llama" && kind != "gpt2")
    return bad(f, "tokenizer.ggml.model \"" + kind + "\" is not supported (headmap reads \"llama\", SentencePiece-style, and \"gpt2\", byte-level BPE).");
  const GgufValue* tokens = f.find("tokenizer.ggml.tokens");
  if (!tokens || tokens->type != GgufValueType::Array || tokens->elem != GgufValueType::String || tokens->arr.empty())
    return bad(f, "tokenizer.ggml.tokens is missing or not a list of strings.");
  const size_t n = tokens->arr.size();
  if (n > (size_t(1) << 20)) return bad(f, "tokenizer.ggml.tokens has more than 2^20 tokens.");
  auto number_array = [&](const char* key, std::vector<double>* out) -> Status {
    const GgufValue* v = f.find(key);
    if (!v) return Status();
    if (v->type != GgufValueType::Array || v->arr.size() != n) return bad(f, std::string(key) + " must be a list of one number per token (" + std::to_string(n) + ").");
    out->resize(n);
    for (size_t i = 0; i < n; ++i)
      if (!v->arr[i].as_number(&(*out)[i]) || !std::isfinite((*out)[i])) return bad(f, std::string(key) + "[" + std::to_string(i) + "] is not a finite number.");
    return Status();
  };
  std::vector<double> scores, types;
  if (Status s = number_array("tokenizer.ggml.scores", &scores); !s) return s.error();
  if (Status s = number_array("tokenizer.ggml.token_type", &types); !s) return s.error();
  auto type_of = [&](size_t i) { return types.empty() ? 1 : static_cast<int>(types[i]); };
  auto id_key = [&](const char* key, int dflt) -> Result<int> {
    const GgufValue* v = f.find(key);
    if (!v) return dflt;
    int64_t x = 0;
    if (!v->as_int(0, static_cast<int64_t>(n) - 1, &x)) return bad(f, std::string(key) + " is not a token id (0 to " + std::to_string(n - 1) + ").");
    return static_cast<int>(x);
  };
  auto bool_key = [&](const char* key, bool dflt) {
    const GgufValue* v = f.find(key);
    return v && v->type == GgufValueType::Bool ? v->i != 0 : dflt;
  };
  const bool spm = kind == "llama";
  Result<int> bos = id_key("tokenizer.ggml.bos_token_id", spm ? 1 : -1), eos = id_key("tokenizer.ggml.eos_token_id", spm ? 2 : -1),
              unk = id_key("tokenizer.ggml.unknown_token_id", spm ? 0 : -1);
  for (const Result<int>* r : {&bos, &eos, &unk})
    if (!*r) return r->error();
  std::string pre = spm ? "" : (f.find("tokenizer.ggml.pre") && f.find("tokenizer.ggml.pre")->type == GgufValueType::String ? f.find("tokenizer.ggml.pre")->s : "");
  json pre_tok = nullptr;
  bool ignore_merges = false;
  if (!spm && !pre_tokenizer_for(pre, &pre_tok, &ignore_merges))
    return bad(f, pre.empty() ? std::string("tokenizer.ggml.pre is missing: llama.cpp itself would guess a regex; headmap does not guess (it knows ") + kKnownPre + ")."
                              : "tokenizer.ggml.pre \"" + pre + "\" is a pre-tokenizer headmap does not know (it knows " + kKnownPre + ").");
  const bool add_bos = bool_key("tokenizer.ggml.add_bos_token", spm || ignore_merges), add_eos = bool_key("tokenizer.ggml.add_eos_token", false);
  const bool space_prefix = bool_key("tokenizer.ggml.add_space_prefix", true);
  if ((add_bos && *bos < 0) || (add_eos && *eos < 0)) return bad(f, "add_bos_token / add_eos_token is set but the token id is missing.");

  // vocab: the last id of a repeated token wins, as in llama.cpp's token_to_id
  json vocab = json::object();
  for (size_t i = 0; i < n; ++i) {
    if (tokens->arr[i].s.empty()) return bad(f, "tokenizer.ggml.tokens[" + std::to_string(i) + "] is empty.");
    if (tokens->arr[i].s.size() > 4096)  // tokenizer.json's own limit; it also bounds the merges derived below
      return bad(f, "tokenizer.ggml.tokens[" + std::to_string(i) + "] is longer than 4096 bytes.");
    vocab[tokens->arr[i].s] = i;
  }
  std::vector<int> retyped(n);  // (n) the types llama.cpp tokenizes with: the file's, then kTokenNames
  for (size_t i = 0; i < n; ++i) retyped[i] = type_of(i);
  retype_by_name(f, n, [&](const char* text) -> int64_t { auto it = vocab.find(text); return it == vocab.end() ? -1 : it->get<int64_t>(); },
                 &retyped);
  // A Phi-3 file (general.name, lower-cased, holds "phi-3" or "phi3": the only sign, the metadata
  // has no key for it) drops the whitespace after its special tokens, as Phi-3's own
  // tokenizer.json marks its chat tokens rstrip; llama.cpp's loader sets that by the same name,
  // on every special token but <unk>, <s> and <|endoftext|>.
  const GgufValue* name = f.find("general.name");
  std::string lname = name && name->type == GgufValueType::String ? name->s : "";
  for (char& c : lname) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  const bool phi3 = lname.find("phi-3") != std::string::npos || lname.find("phi3") != std::string::npos;
  json added = json::array();
  for (size_t i = 0; i < n; ++i) {
    const int t = retyped[i];
    const std::string& text = tokens->arr[i].s;
    const bool rstrip = phi3 && text != "<unk>" && text != "<s>" && text != "<|endoftext|>";
    if (t == 2 || t == 3 || t == 4)
      added.push_back({{"id", i}, {"content", text}, {"single_word", false}, {"lstrip", false}, {"rstrip", rstrip},
                       {"normalized", false}, {"special", t != 4}});
  }
  json merges = json::array();
  if (spm) {
    // Every split of a normal token into two tokens, ranked by the whole token's score
    // (highest first; a stable order for equal scores: the token's id, then the left part's).
    std::unordered_map<std::string, size_t> index;
    for (size_t i = 0; i < n; ++i) index[tokens->arr[i].s] = i;
    std::vector<size_t> order(n);
    std::iota(order.begin(), order.end(), 0);
    if (!scores.empty()) std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return scores[a] > scores[b]; });
    uint64_t work = 0;  // bytes hashed: a real vocabulary needs about 2^24; a hostile one is stopped
    for (size_t id : order) {
      // a normal token made control by name stays a merge (llama.cpp's SPM merging reads no type)
      if (type_of(id) != 1 && retyped[id] != 1) continue;
      const std::string& t = tokens->arr[id].s;
      work += static_cast<uint64_t>(t.size()) * t.size();
      if (work > (uint64_t(1) << 30)) return bad(f, "the vocabulary's tokens are too long and many to derive SentencePiece merges from.");
      std::vector<std::pair<size_t, size_t>> local;
      for (size_t cut = 1; cut < t.size(); ++cut) {
        if ((static_cast<unsigned char>(t[cut]) & 0xC0) == 0x80) continue;  // inside a character
        auto l = index.find(t.substr(0, cut)), r = index.find(t.substr(cut));
        if (l != index.end() && r != index.end()) local.emplace_back(l->second, r->second);
      }
      std::sort(local.begin(), local.end());
      for (const auto& [l, r] : local) merges.push_back({tokens->arr[l].s, tokens->arr[r].s});
      if (merges.size() > (size_t(1) << 23)) return bad(f, "the vocabulary implies more than 2^23 merges.");
    }
  } else {
    const GgufValue* m = f.find("tokenizer.ggml.merges");
    if (!m || m->type != GgufValueType::Array || m->elem != GgufValueType::String) return bad(f, "tokenizer.ggml.merges is missing or not a list of strings.");
    for (size_t i = 0; i < m->arr.size(); ++i) {
      const std::string& s = m->arr[i].s;
      const size_t sp = s.find(' ', 1);
      if (sp == std::string::npos || sp + 1 >= s.size()) return bad(f, "tokenizer.ggml.merges[" + std::to_string(i) + "] is not two tokens separated by a space.");
      merges.push_back({s.substr(0, sp), s.substr(sp + 1)});
    }
  }

  json j = json::object();
  j["version"] = "1.0";
  j["truncation"] = nullptr;
  j["padding"] = nullptr;
  // Each part moved in, never copied: a 128k vocabulary and its merges are tens of MB as json.
  j["added_tokens"] = std::move(added);
  json model_j = {{"type", "BPE"}, {"dropout", nullptr}, {"continuing_subword_prefix", nullptr}, {"end_of_word_suffix", nullptr},
                  {"fuse_unk", spm}, {"byte_fallback", spm}, {"ignore_merges", ignore_merges}, {"vocab", std::move(vocab)}, {"merges", std::move(merges)}};
  model_j["unk_token"] = spm && *unk >= 0 ? json(tokens->arr[static_cast<size_t>(*unk)].s) : json(nullptr);
  j["model"] = std::move(model_j);
  if (spm) {
    json norm = json::array();
    if (space_prefix) norm.push_back({{"type", "Prepend"}, {"prepend", "\xE2\x96\x81"}});
    norm.push_back({{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", "\xE2\x96\x81"}});
    j["normalizer"] = {{"type", "Sequence"}, {"normalizers", norm}};
    j["pre_tokenizer"] = nullptr;
    json dec = json::array();
    dec.push_back(json{{"type", "Replace"}, {"pattern", {{"String", "\xE2\x96\x81"}}}, {"content", " "}});
    dec.push_back(json{{"type", "ByteFallback"}});
    dec.push_back(json{{"type", "Fuse"}});
    if (space_prefix) dec.push_back({{"type", "Strip"}, {"content", " "}, {"start", 1}, {"stop", 0}});
    j["decoder"] = {{"type", "Sequence"}, {"decoders", dec}};
  } else {
    j["normalizer"] = nullptr;
    j["pre_tokenizer"] = std::move(pre_tok);
    j["decoder"] = {{"type", "ByteLevel"}, {"add_prefix_space", true}, {"trim_offsets", true}, {"use_regex", true}};
  }
  if (add_bos || add_eos) {
    json single = json::array(), pair = json::array(), special = json::object();
    auto tok = [&](int id) {
      const std::string& s = tokens->arr[static_cast<size_t>(id)].s;
      special[s] = {{"id", s}, {"ids", {id}}, {"tokens", {s}}};
      return json{{"SpecialToken", {{"id", s}, {"type_id", 0}}}};
    };
    if (add_bos) single.push_back(tok(*bos));
    single.push_back({{"Sequence", {{"id", "A"}, {"type_id", 0}}}});
    if (add_eos) single.push_back(tok(*eos));
    pair = single;
    if (add_bos) pair.push_back(tok(*bos));
    pair.push_back({{"Sequence", {{"id", "B"}, {"type_id", 1}}}});
    if (add_eos) pair.push_back(tok(*eos));
    j["post_processor"] = {{"type", "TemplateProcessing"}, {"single", single}, {"pair", pair}, {"special_tokens", special}};
  } else {
    j["post_processor"] = nullptr;
  }
  // A token that is not valid UTF-8 (a file's raw bytes) is kept with U+FFFD in their place.
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

Result<HfTokenizer> load_gguf_tokenizer(const std::string& path) {
  Result<GgufFile> f = GgufFile::open(path);
  if (!f) return f.error();
  Result<std::string> json = gguf_tokenizer_json(*f);
  if (!json) return json.error();
  return HfTokenizer::from_json(*json, path + " (tokenizer.ggml)");
}

bool is_gguf_file(const std::string& path) {
  Result<MappedFile> m = MappedFile::open(path);  // regular files only, never blocking
  return m && m->size() >= 4 && std::memcmp(m->data(), "GGUF", 4) == 0;
}

}  // namespace headmap
