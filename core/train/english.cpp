// english.cpp: assembling the real-English corpus (see english.h).
//
// Sections: [cleaning] [wordnet] [fortunes] [assembly]
#include "core/train/english.h"

#include <algorithm>
#include <cctype>
#include <filesystem>

#include "core/io/file_io.h"
#include "core/math/rng.h"
#include "core/model/model.h"
#include "core/text/utf8.h"
#include "core/train/grammar.h"
#include "core/train/trainer.h"

namespace headmap {
namespace fs = std::filesystem;

// ---- [cleaning] ------------------------------------------------------------------------
namespace {

// Whitespace runs (tabs, newlines) become one space; control characters and backspace
// overstrikes ("_\bx") are dropped; the result is trimmed.
std::string squeeze(std::string_view s) {
  std::string out;
  bool space = false;
  for (size_t i = 0; i < s.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (i + 1 < s.size() && s[i + 1] == '\b') { ++i; continue; }  // overstrike: keep what follows
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r') { space = !out.empty(); continue; }
    if (c < 0x20 || c == 0x7F) continue;
    if (space) out.push_back(' ');
    space = false;
    out.push_back(static_cast<char>(c));
  }
  return out;
}

// Mostly prose: letters make up most of the non-space characters (drops ASCII art, tables
// and code), and it is not too long for one training line.
bool prose(const std::string& s, size_t max_bytes) {
  if (s.size() < 12 || s.size() > max_bytes) return false;
  size_t letters = 0, other = 0;
  for (unsigned char c : s) {
    if (std::isalpha(c)) ++letters;
    else if (c != ' ') ++other;
  }
  return letters >= 4 * other;
}

// "he was a good sport" -> "He was a good sport."
std::string as_sentence(std::string s) {
  if (s.empty()) return s;
  if (s[0] >= 'a' && s[0] <= 'z') s[0] = static_cast<char>(s[0] - 'a' + 'A');
  const char last = s.back();
  if (last != '.' && last != '!' && last != '?') s.push_back('.');
  return s;
}

// ---- [wordnet] -------------------------------------------------------------------------
// data.* lines: "offset lex_filenum ss_type w_cnt word lex_id ... | gloss". Licence lines
// start with two spaces. The gloss is "definition; \"example\"; \"example\"".
void read_wordnet(const std::string& text, std::vector<std::string>& glosses, std::vector<std::string>& examples) {
  for (const std::string& line : split_lines(text)) {
    if (line.empty() || line[0] == ' ') continue;
    const size_t bar = line.find(" | ");
    if (bar == std::string::npos) continue;
    // The first word of the synset: the fifth field.
    size_t at = 0;
    for (int f = 0; f < 4 && at != std::string::npos; ++f) at = line.find(' ', at) + 1;
    const size_t end = line.find(' ', at);
    if (at == 0 || end == std::string::npos) continue;
    std::string lemma = line.substr(at, end - at);
    if (const size_t paren = lemma.find('('); paren != std::string::npos) lemma.resize(paren);  // "big(a)"
    std::replace(lemma.begin(), lemma.end(), '_', ' ');
    const std::string gloss = line.substr(bar + 3);
    std::string definition;
    size_t i = 0;
    while (i < gloss.size()) {
      if (gloss[i] == '"') {
        const size_t close = gloss.find('"', i + 1);
        if (close == std::string::npos) break;
        const std::string ex = squeeze(gloss.substr(i + 1, close - i - 1));
        if (prose(ex, 400)) examples.push_back(as_sentence(ex));
        i = close + 1;
      } else {
        const size_t next = gloss.find('"', i);
        definition += gloss.substr(i, next == std::string::npos ? std::string::npos : next - i);
        i = next == std::string::npos ? gloss.size() : next;
      }
    }
    definition = squeeze(definition);
    while (!definition.empty() && (definition.back() == ';' || definition.back() == ' ' || definition.back() == ':'))
      definition.pop_back();
    if (!lemma.empty() && prose(definition, 400)) glosses.push_back(lemma + ": " + definition + ".");
  }
}

// ---- [fortunes] ------------------------------------------------------------------------
// Cookie files hold entries separated by lines of "%". Each prose entry becomes one line.
void read_fortunes(const std::string& text, std::vector<std::string>& out) {
  std::string entry;
  auto flush = [&] {
    std::string s = squeeze(sanitize_utf8(entry));
    if (prose(s, 700)) out.push_back(std::move(s));
    entry.clear();
  };
  for (const std::string& line : split_lines(text)) {
    if (line == "%") flush();
    else entry += line + "\n";
  }
  flush();
}

void shuffle(std::vector<std::string>& v, Rng& rng) {
  for (size_t i = v.size(); i > 1; --i) std::swap(v[i - 1], v[static_cast<size_t>(rng.below(static_cast<int>(i)))]);
}

}  // namespace

// ---- [assembly] ------------------------------------------------------------------------
Result<std::string> assemble_english_corpus(const EnglishCorpusOptions& o, EnglishCorpusStats* stats) {
  EnglishCorpusStats st;
  std::vector<std::string> glosses, examples, fortunes;
  for (const char* part : {"data.noun", "data.verb", "data.adj", "data.adv"}) {
    Result<std::string> text = read_file(o.wordnet_dir + "/" + part, size_t(64) << 20);
    if (!text)
      return Error{ErrorKind::Io, "WordNet's " + std::string(part) + " is not in " + o.wordnet_dir +
                                      ": install the Debian package wordnet-base (" + text.error().message + ")"};
    read_wordnet(*text, glosses, examples);
  }
  // Every cookie file of the directory itself (fortunes-off lives in off/, never read), by name.
  std::vector<std::string> files;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(o.fortunes_dir, ec)) {
    const std::string name = e.path().filename().string();
    if (!e.is_regular_file() || name.find('.') != std::string::npos) continue;  // skip .dat indexes and .u8 links
    files.push_back(name);
  }
  if (ec || files.empty())
    return Error{ErrorKind::Io, "no fortune cookie files in " + o.fortunes_dir + ": install the Debian packages fortunes and fortunes-min"};
  std::sort(files.begin(), files.end());
  for (const std::string& f : files) {
    Result<std::string> text = read_file(o.fortunes_dir + "/" + f, size_t(16) << 20);
    if (!text) return text.error();
    read_fortunes(*text, fortunes);
  }
  st.wordnet_glosses = static_cast<long>(glosses.size());
  st.wordnet_examples = static_cast<long>(examples.size());
  st.fortunes = static_cast<long>(fortunes.size());

  Rng rng(combine(o.seed, 0xE1611));
  std::vector<std::string> natural;
  natural.reserve(glosses.size() + examples.size() + fortunes.size());
  for (auto* v : {&glosses, &examples, &fortunes}) natural.insert(natural.end(), v->begin(), v->end());
  shuffle(natural, rng);

  GrammarCorpusOptions go;
  go.seed = o.seed;
  go.target_bytes = o.grammar_bytes;
  std::vector<std::string> grammar = o.grammar_bytes > 0 ? split_lines(generate_grammar_corpus(go)) : std::vector<std::string>{};
  if (o.number_bytes > 0) {
    GrammarCorpusOptions no;
    no.seed = o.seed + 1;
    no.target_bytes = o.number_bytes;
    no.repeat_fraction = no.facts_fraction = 0.0;
    no.numbers_fraction = 1.0;
    for (std::string& l : split_lines(generate_grammar_corpus(no))) grammar.push_back(std::move(l));
  }
  grammar.erase(std::remove(grammar.begin(), grammar.end(), std::string()), grammar.end());
  st.grammar_lines = static_cast<long>(grammar.size());

  // Repeats are drawn from the natural lines that are not held out. Their count is fixed
  // before the split, so the held-out count below is exact.
  const long n_repeats = static_cast<long>(static_cast<double>(natural.size()) * o.repeat_fraction);
  const size_t total = natural.size() + grammar.size() + static_cast<size_t>(n_repeats);
  const size_t n_val = held_out_lines(total, o.val_fraction);
  if (n_val >= natural.size()) return Error{ErrorKind::InvalidArgument, "the natural text is too small for the held-out split"};
  std::vector<std::string> val(natural.end() - static_cast<long>(n_val), natural.end());
  natural.resize(natural.size() - n_val);

  std::vector<std::string> train = std::move(natural);
  std::vector<std::string> pool;  // natural lines of 4 to 30 words still in the training part
  for (const std::string& s : train) {
    const long words = std::count(s.begin(), s.end(), ' ') + 1;
    if (words >= 4 && words <= 30 && s.size() < 220) pool.push_back(s);
  }
  for (long i = 0; i < n_repeats && !pool.empty(); ++i) {
    const std::string& s = pool[static_cast<size_t>(rng.below(static_cast<int>(pool.size())))];
    train.push_back(s + " " + s);
    ++st.repeats;
  }
  if (st.repeats != n_repeats) return Error{ErrorKind::InvalidArgument, "no natural lines to repeat"};
  train.insert(train.end(), grammar.begin(), grammar.end());
  shuffle(train, rng);

  std::string out;
  for (const auto* part : {&train, &val})
    for (const std::string& s : *part) {
      out += s;
      out.push_back('\n');
    }
  st.val_lines = static_cast<long>(val.size());
  st.total_lines = static_cast<long>(train.size() + val.size());
  st.bytes = static_cast<int64_t>(out.size());
  if (stats) *stats = st;
  return out;
}

std::string ascii_lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::vector<CorpusPiece> find_in_corpus(const std::string& lowered_corpus, const std::string& text) {
  std::vector<CorpusPiece> out;
  for (const std::string& line : split_lines(text)) {
    std::vector<std::string> pieces = {line};  // the line, and each sentence of it
    for (size_t start = 0; start < line.size();) {
      size_t end = line.find_first_of(".?!", start);
      end = end == std::string::npos ? line.size() : end + 1;
      std::string piece = line.substr(start, end - start);
      piece.erase(0, piece.find_first_not_of(' '));
      if (piece.size() > 8) pieces.push_back(piece);
      start = end;
    }
    for (std::string& p : pieces) {
      const bool found = lowered_corpus.find(ascii_lower(p)) != std::string::npos;
      out.push_back({std::move(p), found});
    }
  }
  return out;
}

}  // namespace headmap
