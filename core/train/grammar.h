// grammar.h: headmap's built-in training text, generated from a small English grammar.
//
// Licence-clean by construction: every line is produced by the rules in grammar.cpp from
// word lists written for headmap, with the core's deterministic Rng. The same options give
// the same bytes on every machine.
//
// What the text holds, and why:
//   stories      one to three sentences with subject-verb agreement across relative clauses
//                ("The lawyer who the judges believe tells the truth."), pronouns that
//                refer back by number, gender and meaning ("... didn't cross the road
//                because it was too wide" / "because it was too tired"), names and "he/she".
//                The chapters' example sentences come out of these rules word for word.
//   facts        lists of fixed pairs with distractors ("The cat says meow, the dog says woof
//                and the cow says moo."): only the word just before "says" decides the
//                next one, which rewards a head that reads the previous token.
//   numbers      a number game: each number is the sum of the two before it, mod 10, in
//                words. The next word depends on exactly the previous two at every
//                position: this is what grows an always-on previous-token head in layer 0
//                (measured: best previous-token score ~0.4 without these lines, ~0.9 with).
//   repeats      spans that occur twice within a line (a random list of words, a list of
//                names, a sentence said again), so copying the token that followed the
//                earlier occurrence pays: the training signal of induction heads
//                (Olsson et al. 2022). The induction probe in metrics.h is such a span.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace headmap {

struct GrammarCorpusOptions {
  uint64_t seed = 1;
  int64_t target_bytes = 2'000'000;  // lines are added until the text reaches this size
  double repeat_fraction = 0.4;      // share of lines built around a repeated span
  double facts_fraction = 0.2;       // share of lines listing fixed pairs ("the cat says meow, ...")
  double numbers_fraction = 0.15;    // share of number-game lines ("one two three five eight ...")
};

inline constexpr const char* kGrammarCorpusName = "grammar-v1";

// The corpus, one line per paragraph, '\n' after each.
std::string generate_grammar_corpus(const GrammarCorpusOptions& o = {});

// The chapters' example sentences; the grammar produces each of them (tested).
const std::vector<std::string>& chapter_sentences();

}  // namespace headmap
