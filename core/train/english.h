// english.h: the real-English training text, assembled from Debian packages.
//
// Sources (licences beside the corpus in assets/corpus/):
//   WordNet 3.0 (package wordnet-base, Princeton's WordNet licence): every synset's gloss,
//     as "lemma: definition." lines, and every example sentence of a gloss, as a line of its
//     own ("He was a good sport.").
//   BSD fortune cookies (packages fortunes and fortunes-min, BSD licence; never the
//     offensive set of fortunes-off): quotations, jokes and short stories, one per line.
//   headmap's generated grammar (grammar.h), for its previous-token and induction signal.
//   Numbers (off by default): extra lines of the grammar's number game alone ("three one
//     four five nine ..."), where the next word depends on exactly the current and the
//     previous one. Measured: 2.5 MB of them did not sharpen the previous-token head on
//     everyday sentences (0.34 with and without, D=128 H=4 after 4,000 steps) and raised the
//     loss on them (5.51 against 5.46), so english-v1 does not include them.
//   Repeats: natural lines (glosses, examples, short fortunes) said twice on one line, so
//     that copying from an earlier occurrence pays on natural text too: the training signal
//     of induction heads, and through them of previous-token heads (measured: with repeats
//     from 4% of the examples, a 2-layer model reached previous-token 0.30 and induction
//     0.03 after 7.4M tokens; see assets/checkpoints/README.md for the shipped mix).
//
// The same installed packages and options give the same bytes on every machine: files are
// read in a fixed order and shuffled with the core's deterministic Rng. The last lines are a
// held-out validation split of natural text only (never grammar lines, never repeats).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/error.h"

namespace headmap {

struct EnglishCorpusOptions {
  std::string wordnet_dir = "/usr/share/wordnet";          // data.noun, data.verb, data.adj, data.adv
  std::string fortunes_dir = "/usr/share/games/fortunes";  // the cookie files (no off/)
  uint64_t seed = 1;
  double repeat_fraction = 0.35;   // lines said twice, as a share of the natural lines
  int64_t grammar_bytes = 3'000'000;  // generated grammar text mixed in
  int64_t number_bytes = 0;           // extra lines of the grammar's number game (see below)
  double val_fraction = 0.05;      // natural lines held out at the end: the trainer's default split
};

inline constexpr const char* kEnglishCorpusName = "english-v1";

struct EnglishCorpusStats {
  long wordnet_glosses = 0, wordnet_examples = 0, fortunes = 0, grammar_lines = 0, repeats = 0;
  long val_lines = 0, total_lines = 0;
  int64_t bytes = 0;
};

// The corpus, one line per paragraph, '\n' after each. Errors (Io) name the missing package.
Result<std::string> assemble_english_corpus(const EnglishCorpusOptions& o = {}, EnglishCorpusStats* stats = nullptr);

// The packages the corpus is assembled from, for messages and the set-up script.
inline constexpr const char* kEnglishCorpusPackages = "wordnet-base fortunes fortunes-min";

// Whether a text occurs in a corpus, by the one rule the presets and the lessons are marked
// by (their tests look them up in english-v1): each line of the text, and each sentence of
// a line (split after . ? !) longer than 8 bytes, is a piece, found or not, ignoring ASCII
// case. `lowered_corpus` is the corpus through ascii_lower (lowered once for many texts).
struct CorpusPiece {
  std::string text;
  bool found = false;
};
std::vector<CorpusPiece> find_in_corpus(const std::string& lowered_corpus, const std::string& text);
std::string ascii_lower(std::string s);

}  // namespace headmap
