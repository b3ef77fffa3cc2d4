#include "core/model/config.h"

#include <algorithm>
#include <cstdlib>

namespace headmap {

const std::vector<PitfallInfo>& pitfall_list() {
  static const std::vector<PitfallInfo> list = {
      {&Pitfalls::scale_by_d_model, "--pitfall-scale-d-model", "scale by \xE2\x88\x9A" "D",
       "Scores are divided by \xE2\x88\x9A" "d_model instead of \xE2\x88\x9A" "d_head: scores shrink by \xE2\x88\x9A" "H, the softmax runs at a higher temperature and the weights go flat."},
      {&Pitfalls::interleaved_reshape, "--pitfall-interleaved", "view(B,T,d_head,H)",
       "The reshape order is swapped: head h reads the interleaved features h, h+H, h+2H, ... instead of one contiguous slice."},
      {&Pitfalls::reversed_mask, "--pitfall-reversed-mask", "reversed mask",
       "The causal mask polarity is flipped: each query sees only the future, and the last query sees nothing (NaN in PyTorch)."},
      {&Pitfalls::no_w_o, "--pitfall-no-wo", "no W_O",
       "Heads are concatenated but never mixed: each head's output stays in its own block of features."},
      {&Pitfalls::head_averaged, "--pitfall-head-averaged", "head-averaged weights",
       "The weights are returned as (B,T,T), the mean over heads, so the per-head patterns are lost."},
      {&Pitfalls::no_transpose, "--pitfall-no-transpose", "forgot .transpose(1, 2)",
       "Q, K and V are viewed (B,T,H,d_head) but never transposed, and the (B,T,D) memory is read as (B,H,T,d_head): "
       "'head' h gets the h-th run of T·d_head numbers, so its rows are head slices of other tokens, and each map mixes positions and heads."},
  };
  return list;
}

Status trainable_kv_heads(int num_heads, int kv_heads) {
  if (kv_heads == 0 || kv_heads == num_heads) return Status();
  return Error{ErrorKind::InvalidArgument,
               "Training supports multi-head attention only (kv_heads = num_heads = " + std::to_string(num_heads) + "), not " +
                   std::to_string(kv_heads) + " K/V heads: set KV heads back to " + std::to_string(num_heads) +
                   " to train, then switch K/V sharing on to see the trained model with grouped-query attention."};
}

std::vector<int> valid_kv_head_counts(int num_heads) { return valid_head_counts(num_heads); }

int nearest_valid_kv_heads(int num_heads, int kv) {
  if (kv == 0 || num_heads < 1) return kv;
  if (kv >= num_heads) return num_heads;  // more K/V heads than query heads: multi-head is the nearest
  return nearest_valid_head_count(num_heads, std::max(kv, 1));
}

std::vector<int> valid_head_counts(int d_model) {
  std::vector<int> out;
  for (int h = 1; h <= d_model; ++h)
    if (d_model % h == 0) out.push_back(h);
  return out;
}

HeadNeighbours nearest_valid_heads(int d_model, int h) {
  HeadNeighbours n;
  if (d_model < 1) return n;
  for (int k = std::min(h - 1, d_model); k >= 1; --k)
    if (d_model % k == 0) { n.below = k; break; }
  for (int k = std::max(h + 1, 1); k <= d_model; ++k)
    if (d_model % k == 0) { n.above = k; break; }
  return n;
}

int nearest_valid_head_count(int d_model, int h) {
  if (d_model < 1) return 1;
  if (h >= 1 && h <= d_model && d_model % h == 0) return h;
  const HeadNeighbours n = nearest_valid_heads(d_model, h);
  if (n.below && n.above) return (h - *n.below <= *n.above - h) ? *n.below : *n.above;
  if (n.below) return *n.below;
  if (n.above) return *n.above;
  return 1;
}

static std::string try_list(const HeadNeighbours& n) {
  if (n.below && n.above) return "try " + std::to_string(*n.below) + " or " + std::to_string(*n.above);
  if (n.below) return "try " + std::to_string(*n.below);
  if (n.above) return "try " + std::to_string(*n.above);
  return "try 1";
}

Status validate(const ModelConfig& c) {
  auto bad = [](std::string msg) { return Status(Error{ErrorKind::InvalidConfig, std::move(msg)}); };
  if (c.d_model < 1 || c.d_model > kMaxDModel)
    return bad("d_model " + std::to_string(c.d_model) + " is out of range: use 1 to " + std::to_string(kMaxDModel) + ".");
  if (c.num_heads < 1)
    return bad("num_heads must be at least 1 (got " + std::to_string(c.num_heads) + "): try 1.");
  if (c.head_dim == 0 && c.num_heads > c.d_model)
    return bad(std::to_string(c.num_heads) + " heads is more than d_model " + std::to_string(c.d_model) +
               ", which would leave each head less than one dimension: " +
               try_list(nearest_valid_heads(c.d_model, c.num_heads)) + ".");
  if (c.head_dim < 0 || c.head_dim > kMaxDModel)
    return bad("head_dim " + std::to_string(c.head_dim) + " is out of range: 0 (d_model / num_heads) or up to " + std::to_string(kMaxDModel) + ".");
  if (c.head_dim == 0 && c.d_model % c.num_heads != 0)
    return bad("d_model " + std::to_string(c.d_model) + " is not divisible by " + std::to_string(c.num_heads) +
               " heads: " + try_list(nearest_valid_heads(c.d_model, c.num_heads)));
  if (c.num_kv_heads < 0)
    return bad("num_kv_heads must be at least 1 (got " + std::to_string(c.num_kv_heads) + "): 1 is multi-query, " +
               std::to_string(c.num_heads) + " is plain multi-head.");
  if (c.num_kv_heads > 0 && (c.num_kv_heads > c.num_heads || c.num_heads % c.num_kv_heads != 0))
    return bad(std::to_string(c.num_kv_heads) + " K/V heads do not divide " + std::to_string(c.num_heads) +
               " query heads into equal groups: " + try_list(nearest_valid_heads(c.num_heads, c.num_kv_heads)) + ".");
  if (c.pitfalls.interleaved_reshape && c.pitfalls.no_transpose)
    return bad("The interleaved-reshape and forgotten-transpose pitfalls are two different ways to split the heads: switch one off.");
  if (c.num_layers < 1 || c.num_layers > kMaxModelLayers)
    return bad("num_layers " + std::to_string(c.num_layers) + " is out of range: use 1 to " + std::to_string(kMaxModelLayers) + ".");
  if (c.context < 1 || c.context > kMaxContext)
    return bad("context " + std::to_string(c.context) + " is out of range: use 1 to " + std::to_string(kMaxContext) + ".");
  return Status();
}

}  // namespace headmap
