// predictions.h: what a trained model predicts next, read from its logits: the top-k next
// tokens at one position, and each sentence's own loss.
//
// B = batch, T = tokens, V = vocabulary
#pragma once
#include <string>
#include <vector>

#include "core/model/model.h"

namespace headmap {

struct NextToken {
  int id = -1;          // vocabulary id
  float prob = 0;       // softmax of the logits row
  std::string display;  // as the token chips show it ("·dog")
};

// The k most likely tokens to follow position t of sentence b, most likely first (ties: the
// lower id first). logits: (B*T, V), as forward() leaves them with want_logits, or in their
// place each row's kept next tokens (out.next, ForwardOptions::next_tokens_k: the same tokens
// and probabilities, bit for bit). k is clipped to V (to the k kept); an empty list when the
// output has neither or (b, t) is outside them.
std::vector<NextToken> top_k_next(const ModelWeights& w, const ForwardOutput& out, int b, int t, int k);
// The same from kept next tokens alone (row r of next; a pass's late ones, kv_cache.h).
std::vector<NextToken> top_k_next(const ModelWeights& w, const NextTokenRows& next, int r, int k);
// Whether top_k_next has anything to read: the logits, or each row's kept next tokens.
bool has_next_tokens(const ForwardOutput& out);

// The text that appending vocabulary id `id` after these tokens adds to the sentence: the
// tokenizer's decoding of (tokens + id) past that of the tokens (a leading space, a
// character's last byte), special tokens left out. The Generate button appends it. Empty
// when the model has no tokenizer to decode with.
std::string continuation_text(const ModelWeights& w, const std::vector<Token>& tokens, int id);

// (B) each sentence's mean next-token cross-entropy in nats per token, over its real
// tokens (len - 1 predictions, the same terms as ForwardOutput::loss); NaN for a sentence
// of fewer than 2 tokens, and empty without logits. With next tokens kept in their place
// (one sentence through a K/V cache): out.loss, the same sum in the same order.
std::vector<double> sentence_losses(const ForwardOutput& out, const Batch& batch);

// What stands beside a loss or a next-token prediction when the causal mask is off: every
// query then sees the keys after it, the token it is asked to predict among them, so a low
// loss says the model copied the answer, not that it predicts well.
inline constexpr const char* kCausalOffLossNote =
    "causal mask off: each token can see the next one, the answer, so this loss (and the next-token list) does not measure prediction";

// A vocabulary id spelled as the token chips spell it: bytes that are not UTF-8 on their
// own read "<0xNN>", a leading space is a small raised dot.
std::string vocab_display(const Bpe& bpe, int id);
// A vocabulary id of this model spelled so: by its tokenizer.json when it has one, else its
// BPE, else "#id". The one rule for every place that names a token by its id.
std::string token_name(const ModelWeights& w, int id);

}  // namespace headmap
