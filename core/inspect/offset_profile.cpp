// offset_profile.cpp: see offset_profile.h.
//
// T = tokens (padded), len = real tokens, L = layers, H = query heads, Hw = heads in the
// maps, O = 2·len - 1 offsets, P = rotary pairs, dh = d_head
#include "core/inspect/offset_profile.h"

#include <algorithm>
#include <cmath>

#include "core/model/attention.h"

namespace headmap {
namespace {

// The maps' part: the mean weight at each offset d = t - s over the rows t >= 1.
void fill_offsets(OffsetProfile& p, const ForwardOutput& out, int b) {
  const int len = p.len, O = p.offsets(), T = out.T;
  p.rows_at.assign(static_cast<size_t>(O), 0);
  for (int t = 1; t < len; ++t)
    for (int s = 0; s < len; ++s) ++p.rows_at[static_cast<size_t>(t - s + len - 1)];
  p.by_offset.assign(static_cast<size_t>(p.L) * p.Hw * O, 0.0f);
  for (int l = 0; l < p.L; ++l)
    for (int h = 0; h < p.Hw; ++h) {
      const float* w = out.weights(l, b, h);  // (T, T)
      std::vector<double> sum(static_cast<size_t>(O), 0.0);
      for (int t = 1; t < len; ++t)
        for (int s = 0; s < len; ++s) sum[static_cast<size_t>(t - s + len - 1)] += w[static_cast<size_t>(t) * T + s];
      float* row = p.by_offset.data() + (static_cast<size_t>(l) * p.Hw + h) * O;
      for (int i = 0; i < O; ++i)
        row[i] = p.rows_at[static_cast<size_t>(i)] > 0 ? static_cast<float>(sum[static_cast<size_t>(i)] / p.rows_at[static_cast<size_t>(i)]) : 0.0f;
    }
}

// The rotary part, from each layer's attention input (out.attn_in).
void fill_frequencies(OffsetProfile& p, const ModelWeights& w, const ModelConfig& cfg, const ForwardOutput& out, int b) {
  if (!w.arch.rotary() || !cfg.positional) {
    p.no_frequencies = w.arch.rotary() ? "the positions are switched off (the \"no positions\" pitfall): no layer rotates q and k"
                                       : "this model has no rotary positions (RoPE): its positions are learned or absent, so no frequency of its scores stands for a distance";
    return;
  }
  if (cfg.pitfalls.interleaved_reshape || cfg.pitfalls.no_transpose || cfg.pitfalls.head_averaged) {
    p.no_frequencies = "under this pitfall a head's scores are not one head's q and k; switch it off for the frequency profile";
    return;
  }
  if (static_cast<int>(out.attn_in.size()) != p.L) {
    p.no_frequencies = "the forward kept no attention inputs (keep_layer_io)";
    return;
  }
  const int T = out.T, len = p.len, H = cfg.num_heads;
  std::vector<MhaOptions> opts;
  std::vector<std::vector<double>> freqs(static_cast<size_t>(p.L));
  int P = 0;
  for (int l = 0; l < p.L; ++l) {
    opts.push_back(mha_options(cfg, w, l));
    freqs[static_cast<size_t>(l)] = rope_freq_for(opts.back(), T);
    P = std::max(P, static_cast<int>(freqs[static_cast<size_t>(l)].size()));
  }
  p.H = H;
  p.P = P;
  p.pairs.assign(static_cast<size_t>(p.L), 0);
  p.wavelength.assign(static_cast<size_t>(p.L) * P, 0.0f);
  p.freq_share.assign(static_cast<size_t>(p.L) * H * (P + 1), 0.0f);
  for (int l = 0; l < p.L; ++l) {
    const MhaOptions& o = opts[static_cast<size_t>(l)];
    const std::vector<double>& f = freqs[static_cast<size_t>(l)];
    const int half = static_cast<int>(f.size());
    p.pairs[static_cast<size_t>(l)] = half;
    for (int i = 0; i < half; ++i) p.wavelength[static_cast<size_t>(l) * P + i] = static_cast<float>(2.0 * M_PI / f[static_cast<size_t>(i)]);
    const MatR x = out.attn_in[static_cast<size_t>(l)].middleRows(static_cast<Eigen::Index>(b) * T, T);  // (T, D)
    MatR q, k;  // (T, Dq), (T, Dkv)
    heads_qk(w.layers[static_cast<size_t>(l)], x, T, o, q, k);
    const int dh = static_cast<int>(q.cols()) / H;
    for (int h = 0; h < H; ++h) {
      const int g = kv_head_of(o, h);
      const float* wmap = out.weights(l, b, out.Hw == H ? h : 0);  // (T, T)
      std::vector<double> mean(static_cast<size_t>(P) + 1, 0.0);   // attention-weighted |term| per pair, then the rest
      double mass = 0;
      for (int t = 1; t < len; ++t) {
        const float* qt = q.data() + static_cast<Eigen::Index>(t) * q.cols() + h * dh;
        for (int s = 0; s < len; ++s) {
          const double a = wmap[static_cast<size_t>(t) * T + s];
          if (a == 0) continue;
          const float* ks = k.data() + static_cast<Eigen::Index>(s) * k.cols() + g * dh;
          for (int i = 0; i < half; ++i)
            mean[static_cast<size_t>(i)] += a * std::abs(static_cast<double>(qt[i]) * ks[i] + static_cast<double>(qt[i + half]) * ks[i + half]);
          double rest = 0;
          for (int j = 2 * half; j < dh; ++j) rest += static_cast<double>(qt[j]) * ks[j];
          mean[static_cast<size_t>(P)] += a * std::abs(rest);
          mass += a;
        }
      }
      double total = 0;
      for (double m : mean) total += m;
      float* share = p.freq_share.data() + (static_cast<size_t>(l) * H + h) * (P + 1);
      for (int i = 0; i <= P; ++i) share[i] = total > 0 && mass > 0 ? static_cast<float>(mean[static_cast<size_t>(i)] / total) : 0.0f;
    }
  }
}

}  // namespace

OffsetProfile offset_profile(const ModelWeights& w, const ModelConfig& cfg, const ForwardOutput& out, const Batch& batch, int b) {
  OffsetProfile p;
  if (b < 0 || b >= out.B || b >= batch.B() || out.L == 0) return p;
  p.L = out.L;
  p.Hw = out.Hw;
  p.len = std::min(batch.lengths[static_cast<size_t>(b)], out.T);
  p.causal = mask_kind(cfg) == MaskKind::Causal;
  if (p.len < 1) return p;
  fill_offsets(p, out, b);
  fill_frequencies(p, w, cfg, out, b);
  return p;
}

}  // namespace headmap
