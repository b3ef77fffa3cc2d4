// requests.cpp: requests as values: their hash and the core's form of their ablation.
#include "app/gui/requests.h"

#include <cmath>
#include <functional>

namespace headmap {

namespace {
void mix(size_t& h, size_t v) { h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2); }
}  // namespace

// A field left out here costs only collisions: caches compare with same_forward() after the hash.
size_t ComputeRequest::forward_hash() const {
  size_t h = 0;
  for (const std::string& l : lines) mix(h, std::hash<std::string>()(l));
  mix(h, lines.size());
  for (const std::string& l : extras.pairs) mix(h, std::hash<std::string>()(l) ^ 0x9e37);
  for (const auto& [b, t] : extras.masked) mix(h, static_cast<size_t>(b) * 65537 + static_cast<size_t>(t) + 1);
  for (long v : {long(cfg.d_model), long(cfg.num_heads), long(cfg.num_layers), long(cfg.context), long(cfg.causal),
                 long(cfg.positional), long(cfg.tokenizer), long(cfg.pitfalls.scale_by_d_model),
                 long(cfg.pitfalls.interleaved_reshape), long(cfg.pitfalls.reversed_mask), long(cfg.pitfalls.no_w_o),
                 long(cfg.pitfalls.head_averaged), long(cfg.pitfalls.no_transpose), long(cfg.num_kv_heads)})
    mix(h, static_cast<size_t>(v));
  mix(h, static_cast<size_t>(cfg.seed));
  mix(h, std::hash<std::string>()(weights.checkpoint));
  mix(h, std::hash<const void*>()(weights.in_memory.get()));
  mix(h, static_cast<size_t>(weights.in_memory_id));
  for (const HeadId& id : ablated) mix(h, static_cast<size_t>(id.layer) * 4099 + static_cast<size_t>(id.head));
  mix(h, value_weighted);
  mix(h, bf16_products);
  mix(h, int8_products);
  return h;
}

size_t ComputeRequest::hash() const {
  size_t h = forward_hash();
  if (trace) {
    mix(h, static_cast<size_t>(trace->layer));
    mix(h, static_cast<size_t>(trace->batch));
    mix(h, static_cast<size_t>(trace->head));
  }
  mix(h, compare);
  if (attribution)
    for (const int v : {attribution->batch, attribution->target.position, attribution->target.token_a, attribution->target.token_b})
      mix(h, static_cast<size_t>(v));
  if (compare_b) {
    mix(h, std::hash<std::string>()(compare_b->weights.checkpoint));
    mix(h, std::hash<const void*>()(compare_b->weights.in_memory.get()));  // a directory read as B
    mix(h, static_cast<size_t>(compare_b->cfg.num_heads * 131 + compare_b->cfg.d_model));
  }
  if (rollout) mix(h, static_cast<size_t>(rollout->batch * 4099 + rollout->head + 7));
  if (detectors) mix(h, static_cast<size_t>(detectors->batch * 16 + static_cast<int>(detectors->detector) + 11));
  if (circuits) mix(h, static_cast<size_t>((circuits->batch * 4099 + circuits->layer) * 4099 + circuits->head + 13));
  if (patch) {
    mix(h, std::hash<std::string>()(patch->corrupted));
    for (const int v : {patch->position, patch->token_a, patch->token_b, patch->per_position ? patch->per_position->layer : -1,
                        patch->per_position ? patch->per_position->head : -1})
      mix(h, static_cast<size_t>(v + 1));
  }
  return h;
}

std::vector<uint8_t> ComputeRequest::ablation_mask() const {
  std::vector<uint8_t> m;
  if (ablated.empty()) return m;
  m.assign(static_cast<size_t>(cfg.num_layers) * cfg.num_heads, 0);
  for (const HeadId& id : ablated) {
    HM_ASSERT(id.layer >= 0 && id.layer < cfg.num_layers && id.head >= 0 && id.head < cfg.num_heads,
              "compute_request() keeps only the heads inside the request's config");
    m[static_cast<size_t>(id.layer) * cfg.num_heads + id.head] = 1;
  }
  return m;
}

std::vector<NextToken> ForwardData::top_next(int b, int t, int k) const {
  if (!weights) return {};
  if (const Late* l = late_ready()) return b == 0 ? top_k_next(*weights, l->v.next, t, k) : std::vector<NextToken>{};
  return late ? std::vector<NextToken>{} : top_k_next(*weights, out, b, t, k);
}

double ForwardData::sentence_loss_at(int b) const {
  if (late) return late_ready() && b == 0 && late->v.loss_tokens > 0 ? late->v.loss : NAN;  // one sentence (the K/V cache's)
  return b >= 0 && b < static_cast<int>(sentence_loss.size()) ? sentence_loss[static_cast<size_t>(b)] : NAN;
}

}  // namespace headmap
