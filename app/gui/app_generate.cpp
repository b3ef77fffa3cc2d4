// app_generate.cpp: Generate (App::generate_step), apart from app.cpp's frame loop: the
// model's next token appended to the text, kept on the sentence's line.
#include <cstdio>
#include <string>
#include <vector>

#include "app/gui/app.h"
#include "core/inspect/predictions.h"

namespace headmap {

// Generate (the predictions panel's button, --then generate=N): appends the model's greedy
// next token after the last sentence to the text, once the shown result is the text's own,
// so each token is one more request, which the K/V cache answers by computing one row.
void App::generate_step() {
  static_assert(kGenerateCandidates <= kKeptNextTokens, "Generate reads the next tokens the worker keeps per row");
  if (state.generate_tokens <= 0) return;
  const std::shared_ptr<const ComputeResult>& r = state.result;
  if (state.stale || !r || !r->fwd || !r->fwd->complete || r->fwd->next_pending() || !(r->request == last_request_)) return;  // the text's result first
  const ForwardData& f = *r->fwd;
  auto stop = [&](const std::string& why) {
    state.generate_tokens = 0;
    state.status_lines.push_back(why);
  };
  if (!f.weights || !f.weights->trained() || !f.has_next() || f.batch.empty())
    return stop("Generate needs a trained model's next-token predictions: switch the weights to trained, or open a model.");
  const int b = f.batch.B() - 1, len = f.batch.lengths[static_cast<size_t>(b)];
  if (len >= r->request.cfg.context) return stop("Generate stopped: the sentence fills the context of " + std::to_string(len) + " tokens.");
  // A line is a sentence (make_batch): a token that breaks the line would start a new,
  // empty sentence, which the batch drops, so the text would grow and T would not. Generate
  // continues the sentence with the most likely token that stays on its line, and says so.
  const std::vector<Token>& tokens = f.batch.sentences[static_cast<size_t>(b)].tokens;
  const std::vector<NextToken> top = f.top_next(b, len - 1, kGenerateCandidates);
  std::string piece;
  size_t chosen = 0;
  for (; chosen < top.size(); ++chosen) {
    piece = continuation_text(*f.weights, tokens, top[chosen].id);
    if (!piece.empty() && piece.find_first_of("\r\n") == std::string::npos) break;
  }
  if (chosen == top.size())
    return stop("Generate stopped: none of the model's " + std::to_string(top.size()) +
                " most likely next tokens continues the line (each ends the sentence or has no text).");
  if (chosen > 0) {
    char note[320];
    std::snprintf(note, sizeof note,
                  "Generate: the model's most likely next token is %s (%.0f%%), which would end the line and so the sentence; "
                  "it continued the sentence with \"%s\" (choice %zu, %.1f%%).",
                  top[0].display.c_str(), 100.0 * top[0].prob, top[chosen].display.c_str(), chosen + 1, 100.0 * top[chosen].prob);
    state.status_lines.push_back(note);
  }
  state.text += piece;
  --state.generate_tokens;
}

}  // namespace headmap
