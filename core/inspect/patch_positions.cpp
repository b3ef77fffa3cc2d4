// patch_positions.cpp: one head patched at one position at a time (see patch_positions.h).
#include "core/inspect/patch_positions.h"

#include <limits>

namespace headmap {

Result<std::vector<float>> patch_head_positions(const ModelWeights& w, const ModelConfig& cfg, const Batch& clean_in,
                                                const Batch& corrupted_in, const LogitTarget& target, int layer, int head,
                                                const std::function<bool()>& cancelled,
                                                const std::function<void(int, int)>& progress) {
  if (!corrupted_in.empty() && (corrupted_in.B() != 1 || corrupted_in.T != corrupted_in.lengths[0]))
    return Error{ErrorKind::InvalidArgument, "Patching needs one unpadded corrupted sentence of the clean one's token count."};
  if (!w.trained()) return Error{ErrorKind::InvalidArgument, "Patching needs a trained model (random init has no logits)."};
  Result<PatchRuns> runs = patch_runs(w, cfg, clean_in, corrupted_in, target, cancelled);
  if (!runs) return runs.error();
  const StreamParts &clean = runs->clean, &corrupt = runs->corrupt;
  if (layer < 0 || layer >= corrupt.L || head < 0 || head >= corrupt.H)
    return Error{ErrorKind::InvalidArgument, "No head " + std::to_string(layer) + "." + std::to_string(head) + " in this model."};
  const int n = corrupt.T, D = corrupt.D;
  std::vector<float> recovery;  // (n)
  for (int p = 0; p < n; ++p) {
    MatR delta = MatR::Zero(n, D);  // (T, D): the head's output at p, clean minus corrupted
    delta.row(p) = clean.head(layer, head).row(p) - corrupt.head(layer, head).row(p);
    Result<double> v = runs->patched(w, cfg, layer, delta, target, cancelled);
    if (!v) return v.error();
    recovery.push_back(runs->recovery(*v));
    if (progress) progress(p + 1, n);
  }
  return recovery;
}

}  // namespace headmap
