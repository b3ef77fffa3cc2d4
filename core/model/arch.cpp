// arch.cpp: the family seam's helpers (see arch.h).
#include "core/model/arch.h"

#include <cmath>
#include <cstdio>

namespace headmap {

bool Arch::is_gpt2_block() const { return *this == Arch(); }

int Arch::rotary_dims(int d_head) const {
  int rot = static_cast<int>(static_cast<double>(d_head) * rotary_fraction);
  rot -= rot % 2;
  return rot < 0 ? 0 : (rot > d_head ? d_head - d_head % 2 : rot);
}

float Arch::score_scale_for(int d_head) const {
  switch (score_scale) {
    case ScoreScale::InvSqrtHeadDim: return 1.0f / std::sqrt(static_cast<float>(d_head));
    case ScoreScale::QueryPreAttnScalar: return 1.0f / std::sqrt(query_pre_attn_scalar);
    case ScoreScale::None: return 1.0f;
  }
  return 1.0f;
}

std::vector<double> rope_inv_freq(const Arch& a, int d_head, bool local, bool long_factors) {
  const int rot = a.rotary_dims(d_head);
  const double theta = local && a.rope_local_theta > 0 ? a.rope_local_theta : a.rope_theta;
  std::vector<double> f(static_cast<size_t>(rot / 2));
  for (int i = 0; i < rot / 2; ++i) f[static_cast<size_t>(i)] = 1.0 / std::pow(theta, 2.0 * i / rot);
  if (local && a.rope_local_theta > 0) return f;  // Gemma 3's local layers: their own theta, unscaled
  if (a.rope_scaling == RopeScaling::Linear) {
    for (double& x : f) x /= a.rope_factor;
  } else if (a.rope_scaling == RopeScaling::Llama3) {
    // Llama 3.1's published rule: long wavelengths slowed by the factor, short ones kept,
    // the band between them blended.
    const double pi = 3.14159265358979323846;
    const double old = a.rope_original_context, lo = a.rope_low_freq_factor, hi = a.rope_high_freq_factor;
    const double low_wavelen = old / lo, high_wavelen = old / hi;
    for (double& x : f) {
      const double wavelen = 2 * pi / x;
      if (wavelen < high_wavelen) continue;
      if (wavelen > low_wavelen) {
        x /= a.rope_factor;
        continue;
      }
      const double smooth = (old / wavelen - lo) / (hi - lo);
      x = (1 - smooth) * x / a.rope_factor + smooth * x;
    }
  }
  const std::vector<float>& lr = long_factors ? a.rope_long_factors : a.rope_short_factors;
  if (a.rope_scaling == RopeScaling::LongRope && lr.size() == f.size())
    for (size_t i = 0; i < f.size(); ++i) f[i] /= static_cast<double>(lr[i]);
  if (a.rope_freq_factors.size() == f.size())
    for (size_t i = 0; i < f.size(); ++i) f[i] /= static_cast<double>(a.rope_freq_factors[i]);
  return f;
}

std::string arch_steps(const Arch& a, int H, int d_head) {
  std::string s = a.norm == NormKind::LayerNorm ? "LayerNorm" : a.norm_plus_one ? "RMSNorm (1 + w)" : "RMSNorm";
  if (a.placement == NormPlacement::Parallel) s += ", parallel attention + MLP";
  if (a.placement == NormPlacement::Sandwich) s += ", four norms per layer";
  if (a.placement == NormPlacement::PostNorm) s += " after each sub-block (post-norm)";
  if (a.placement == NormPlacement::PostOutput) s += " of each sub-block's output, before the residual";
  if (a.bidirectional) s += ", no causal mask (every real token sees every other; padding keys hidden)";
  if (a.token_types > 0) s += ", " + std::to_string(a.token_types) + " token type" + (a.token_types > 1 ? "s" : "") + " added to the embeddings";
  if (a.position_offset > 0) s += ", positions from " + std::to_string(a.position_offset);
  if (a.embed_norm) s += ", LayerNorm of the embeddings";
  char buf[96];
  if (a.rotary()) {
    const int rot = a.rotary_dims(d_head);
    std::snprintf(buf, sizeof buf, ", RoPE (theta %g%s)", a.rope_theta, rot < d_head ? "" : "");
    s += buf;
    if (rot < d_head) s += " on " + std::to_string(rot) + " of " + std::to_string(d_head) + " dims";
    if (a.rope_scaling == RopeScaling::Llama3) s += ", llama3 scaling x" + std::to_string(static_cast<int>(a.rope_factor));
    if (!a.rope_freq_factors.empty()) s += ", per-frequency factors (rope_freqs)";
    if (a.rope_scaling == RopeScaling::Linear) s += ", linear scaling";
    if (a.rope_scaling == RopeScaling::LongRope)
      s += ", longrope (short factors up to " + std::to_string(a.rope_original_context) + " tokens, long ones past)";
    std::string nope;
    for (size_t l = 0; l < a.no_rope_layers.size(); ++l)
      if (a.no_rope_layers[l]) nope += (nope.empty() ? "" : ", ") + std::to_string(l);
    if (!nope.empty()) s += ", no RoPE on layer" + std::string(nope.find(',') != std::string::npos ? "s " : " ") + nope + " (NoPE)";
  } else if (a.positions == PositionKind::Learned) {
    s += ", learned positions";
  }
  if (a.qk_norm) s += a.qk_norm_whole ? ", q/k norm over all heads" : ", q/k norm";
  const int kv = a.num_kv_heads > 0 ? a.num_kv_heads : H;
  if (kv < H) s += ", K/V repeat x" + std::to_string(H / kv);
  if (a.attn_softcap > 0) {
    std::snprintf(buf, sizeof buf, ", score soft-cap %g", a.attn_softcap);
    s += buf;
  }
  int local = 0, w = 0;
  for (int x : a.windows)
    if (x > 0) ++local, w = x;
  if (local > 0) s += ", " + std::to_string(local) + " local layers (window " + std::to_string(w) + ")";
  switch (a.mlp) {
    case MlpKind::GeluTanh: s += ", GELU MLP"; break;
    case MlpKind::GeluErf: s += ", GELU (erf) MLP"; break;
    case MlpKind::SiluGated: s += ", SiLU-gated MLP"; break;
    case MlpKind::GeluTanhGated: s += ", GELU-gated MLP"; break;
  }
  if (a.embed_scale) s += ", embeddings x sqrt(D)";
  if (a.encoder()) s += a.mlm_head ? (a.tied ? ", masked-LM head (decoder tied to the embeddings)" : ", masked-LM head (own decoder)") : ", no masked-LM head";
  else s += a.tied ? ", tied unembedding" : ", own lm_head";
  if (a.final_softcap > 0) {
    std::snprintf(buf, sizeof buf, ", logit soft-cap %g", a.final_softcap);
    s += buf;
  }
  return s;
}

}  // namespace headmap
