// patch_positions.cpp: one head patched at one position at a time (see patch_positions.h).
#include "core/inspect/patch_positions.h"

#include <limits>

namespace headmap {

namespace {
double difference(const MatR& logits /* (T, V) */, const LogitTarget& t) {
  return static_cast<double>(logits(t.position, t.token_a)) - logits(t.position, t.token_b);
}
}  // namespace

Result<std::vector<float>> patch_head_positions(const ModelWeights& w, const ModelConfig& cfg, const Batch& clean_in,
                                                const Batch& corrupted_in, const LogitTarget& target, int layer, int head,
                                                const std::function<bool()>& cancelled,
                                                const std::function<void(int, int)>& progress) {
  if (clean_in.empty() || corrupted_in.empty()) return Error{ErrorKind::InvalidArgument, "Patching needs a clean and a corrupted sentence."};
  const int n = clean_in.lengths[0];
  if (corrupted_in.lengths[0] != n || corrupted_in.B() != 1 || corrupted_in.T != n)
    return Error{ErrorKind::InvalidArgument, "Patching needs one unpadded corrupted sentence of the clean one's token count."};
  if (target.token_b < 0) return Error{ErrorKind::InvalidArgument, "Patching measures a logit difference: give two tokens, A-B."};
  if (!w.trained()) return Error{ErrorKind::InvalidArgument, "Patching needs a trained model (random init has no logits)."};
  if (target.position < 0 || target.position >= n || target.token_a < 0 || target.token_a >= w.vocab_size() ||
      target.token_b >= w.vocab_size())
    return Error{ErrorKind::InvalidArgument, "The logit difference's position or tokens are outside the sentence or vocabulary."};
  Result<StreamParts> clean = stream_parts(w, cfg, clean_in, 0, nullptr, cancelled);
  if (!clean) return clean.error();
  Result<StreamParts> corrupt = stream_parts(w, cfg, corrupted_in, 0, nullptr, cancelled);
  if (!corrupt) return corrupt.error();
  if (layer < 0 || layer >= corrupt->L || head < 0 || head >= corrupt->H)
    return Error{ErrorKind::InvalidArgument, "No head " + std::to_string(layer) + "." + std::to_string(head) + " in this model."};
  const double c = difference(clean->logits, target), k = difference(corrupt->logits, target), gap = c - k;
  const int T = corrupted_in.T, D = corrupt->D;
  std::vector<float> recovery;  // (n)
  for (int p = 0; p < n; ++p) {
    if (cancelled && cancelled()) return Error{ErrorKind::Cancelled, "Patching was cancelled."};
    MatR delta = MatR::Zero(T, D);  // (T, D): the head's output at p, clean minus corrupted
    delta.row(p) = clean->head(layer, head).row(p) - corrupt->head(layer, head).row(p);
    ForwardHook hook;
    hook.start_layer = layer;
    hook.start_resid = &corrupt->resid[layer];
    hook.add_layer = layer;
    hook.attn_add = &delta;
    ForwardOptions opt;
    opt.want_logits = true;
    opt.cancelled = cancelled;
    opt.hook = &hook;
    Result<ForwardOutput> out = forward(w, cfg, corrupted_in, opt);
    if (!out) return out.error();
    const double v = difference(out->logits, target);
    recovery.push_back(gap != 0 ? static_cast<float>((v - k) / gap) : std::numeric_limits<float>::quiet_NaN());
    if (progress) progress(p + 1, n);
  }
  return recovery;
}

}  // namespace headmap
