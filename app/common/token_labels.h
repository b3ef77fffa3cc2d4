// token_labels.h: one rule for how a token is labelled wherever it stands alone: the maps'
// axes, their tooltips, the figures, and the next-token list. token_display's text, but a
// byte piece (part of a character that byte-level BPE or byte fallback cut, which
// token_display shows as "<0xD8>") shows the character it is part of and which part, "ق 1/2",
// as the chips group such pieces under their character.
#pragma once
#include <string>
#include <vector>

#include "core/model/model.h"
#include "core/text/tokenizer.h"

namespace headmap {

// The label of each token of a sentence. A piece of a character the sentence ends before
// completing (a next token that starts a character) reads "1/2 of a character" rather
// than its bytes.
std::vector<std::string> token_labels(const std::vector<Token>& tokens);

// The label of vocabulary id `id` as the token after `before` (the next-token list): the
// same rule, so a byte that completes the sentence's last character reads "ق 2/2".
std::string next_token_label(const ModelWeights& w, const std::vector<Token>& before, int id);

}  // namespace headmap
