// kv_cache.cpp: which requests the incremental forward serves, and what its cache weighs.
// The forward itself (the rows [P, T) of every layer) is in model.cpp, the attention rows in
// attention.cpp (mha_forward_rows).
//
// T = tokens, D = d_model, Hw = weight heads, KV = K/V heads, d_head = head_dim, L = layers, V = vocab
#include "core/model/kv_cache.h"

#include <algorithm>
#include <cstring>

#include "core/math/int8_products.h"
#include "core/math/parallel.h"
#include "core/memory_budget.h"
#include "core/model/attention.h"
#include "core/model/model.h"

namespace headmap {

uint64_t KvCache::bytes() const {
  uint64_t b = 0;
  for (const MatR& m : kv) b += static_cast<uint64_t>(m.size()) * 4;
  for (const RowsBlock& m : attn_in) b += m.bytes();
  for (const RowsBlock& m : attn_out) b += m.bytes();
  b += static_cast<uint64_t>(attention_floats) * 4 + static_cast<uint64_t>(out.size()) * 4 + logits.bytes();
  b += static_cast<uint64_t>(nll.size()) * 8 + next.bytes();
  return b;
}

bool KvCache::SplitTiming::choose() {
  // One thread, the team, ... until each way has kKept tries: its figure is the least of them,
  // and the first tries run while the app draws its first result (with two each, both of the
  // team's were sometimes slowed and one thread ran 16 appends at half the team's rate).
  if (tries[0] < kKept || tries[1] < kKept) return tries[1] < tries[0];
  const bool faster = ms[1] < ms[0];
  return ++appends % 16 == 0 ? !faster : faster;  // now and then the other way: the machine's load changes
}

void KvCache::SplitTiming::record(bool split, double t) {
  const int i = split ? 1 : 0;
  recent[i][tries[i]++ % kKept] = t;
  ms[i] = *std::min_element(recent[i], recent[i] + std::min(tries[i], kKept));
}

void KvCache::clear() {
  weights = nullptr;
  weights_stamp = 0;
  tokens.clear();
  kv.clear();
  drop_maps();
  attn_in.clear();
  attn_out.clear();
  out.resize(0, 0);
  logits.clear();  // the outputs' views keep their block
  next = NextTokenRows{};
  nll.clear();
  next_done = 0;
}

void KvCache::drop_maps() {
  attention.reset();  // its room too (model.cpp keeps some for appends)
  attention_floats = 0;
  maps_rows = 0;
  lent_owner.reset();
  lent_maps = nullptr;
}

float* KvCache::map_row(int Hw, int l, int h, int t) {
  const size_t S = static_cast<size_t>(maps_rows);
  return attention.get() + ((static_cast<size_t>(l) * Hw + h) * S + t) * S;
}

const float* KvCache::kept_map_row(int Hw, int l, int h, int t) {
  if (!lent_maps) return map_row(Hw, l, h, t);
  const size_t S = static_cast<size_t>(this->T());  // the lent maps are (L, Hw, T, T)
  return lent_maps + ((static_cast<size_t>(l) * Hw + h) * S + t) * S;
}

void KvCache::lend_maps(std::shared_ptr<const void> owner, const float* maps, int T) {
  if (!maps_lent || !maps || !owner || T != this->T() || T == 0) return;
  lent_owner = std::move(owner);
  lent_maps = maps;
}

void reserve_rows(MatR& m, Eigen::Index rows, Eigen::Index cols) {
  if (m.cols() != cols) m.resize(0, cols);
  if (m.rows() < rows) m.conservativeResize(rows + kKvMapsRoom, cols);
}

static uint64_t mix(uint64_t h, uint64_t v) { return (h ^ v) * 0x100000001b3ull; }
static uint64_t bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

uint64_t weights_stamp(const ModelWeights& w) {
  uint64_t h = 0xcbf29ce484222325ull;
  h = mix(h, static_cast<uint64_t>(w.d_model));
  h = mix(h, static_cast<uint64_t>(w.num_layers()));
  h = mix(h, static_cast<uint64_t>(w.vocab_size()));
  h = mix(h, w.source.seed);
  for (const LayerWeights& lw : w.layers) {
    if (const Eigen::Index n = lw.d_in() * lw.proj_width(LayerWeights::kQ); n > 0)  // W_Q plain or only in W_QKV
      h = mix(mix(h, bits(lw.proj_at(LayerWeights::kQ, 0, 0))), bits(lw.proj_at(LayerWeights::kQ, (n - 1) / lw.proj_width(LayerWeights::kQ), (n - 1) % lw.proj_width(LayerWeights::kQ))));
    if (lw.ln1_g.size() > 0) h = mix(h, bits(lw.ln1_g(0)));
  }
  if (w.tok_emb.size() > 0) h = mix(mix(h, bits(w.tok_emb.data()[0])), bits(w.tok_emb.data()[w.tok_emb.size() - 1]));
  return h;
}

bool kv_cacheable(const ModelWeights& w, const ModelConfig& cfg, const Batch& batch, const ForwardOptions& opt) {
  Pitfalls others = cfg.pitfalls;
  others.no_w_o = false;  // the weights' own (a model trained without W_O), and row by row
  // longrope rotates every key by the frequencies of the whole text's length: a prefix rotated
  // before the text passed the original context would differ, so it runs in full.
  // BF16 products change a full pass's products, not an append's (packed_gemm.h): a pass with
  // them runs in full, so that the cache's rows are always F32's. 8-bit products change each
  // row alike (int8_products.h): the cache keeps the mode it was filled in (KvCache).
  return batch.B() == 1 && batch.T > 0 && cfg.causal && !others.any() && !opt.ablate && !opt.hook && !opt.trace && !opt.bf16_products &&
         cfg.num_layers <= w.num_layers() && w.arch.rope_scaling != RopeScaling::LongRope;
}

static bool same_token(const Token& a, const Token& b) { return a.id == b.id && a.text == b.text; }

int kv_reusable_rows(const KvCache& c, const ModelWeights& w, const ModelConfig& cfg, const Batch& batch, const ForwardOptions& opt) {
  if (!kv_cacheable(w, cfg, batch, opt) || c.weights != &w || c.tokens.empty()) return 0;
  if (c.maps_lent ? !c.lent_maps : c.maps_rows < c.T()) return 0;  // the kept rows' maps are not there
  if (!(c.cfg == cfg) || c.want_logits != opt.want_logits || c.next_tokens_k != opt.next_tokens_k || c.skip_final_mlp != opt.skip_final_mlp ||
      c.keep_layer_io != opt.keep_layer_io || c.int8_products != opt.int8_products || c.weights_stamp != weights_stamp(w))
    return 0;
  const std::vector<Token>& now = batch.sentences[0].tokens;
  const int n = std::min({c.T(), static_cast<int>(now.size()) - 1});
  int p = 0;
  while (p < n && same_token(c.tokens[static_cast<size_t>(p)], now[static_cast<size_t>(p)])) ++p;
  return p;
}

uint64_t kv_bytes_per_token(const ModelConfig& cfg) {
  return uint64_t(2) * static_cast<uint64_t>(cfg.num_layers) * static_cast<uint64_t>(cfg.kv_heads()) *
         static_cast<uint64_t>(cfg.d_head()) * 4;
}

uint64_t kv_cache_bytes(const ModelWeights& w, const ModelConfig& cfg, int T, const ForwardOptions& opt) {
  const uint64_t t = static_cast<uint64_t>(std::max(T, 0)), L = static_cast<uint64_t>(cfg.num_layers), D = static_cast<uint64_t>(cfg.d_model);
  const uint64_t Hw = static_cast<uint64_t>(weight_heads(mha_options(cfg)));
  uint64_t b = kv_bytes_per_token(cfg) * (t + kKvMapsRoom);       // K and V, with room for appends
  b = mul_sat(mul_sat(L * Hw, mul_sat(t + kKvMapsRoom, t + kKvMapsRoom)), 4) + b;  // the maps, with room for appends (none when lent: an upper bound)
  const uint64_t rows = t + kKvMapsRoom;                          // the rows below, with their room
  if (opt.keep_layer_io) b += mul_sat(2 * L * D * 4, rows);       // attn_in, attn_out
  b += D * 4 * rows;                                              // out
  if (opt.want_logits && w.trained() && opt.next_tokens_k > 0)    // each row's next tokens, nll
    b += (8 * static_cast<uint64_t>(opt.next_tokens_k) + 12) * t + 8 * t;
  else if (opt.want_logits && w.trained())                        // logits, nll
    b += mul_sat(static_cast<uint64_t>(w.vocab_size()) * 4, rows) + 8 * t;
  return b;
}

double set_pending_next_tokens(KvCache& c, int k, int first, const MatR& logits, const std::vector<Token>& tokens, int* loss_tokens) {
  const int T = static_cast<int>(tokens.size()), V = static_cast<int>(logits.cols()), n = static_cast<int>(logits.rows());
  c.next.resize(T, std::min(k, V));
  set_next_token_rows(c.next, first, logits);
  c.nll.resize(static_cast<size_t>(std::max(T - 1, 0)));
  const int targets = std::max(std::min(first + n, T - 1) - first, 0);  // the last row has none
  parallel_for(targets, 4.0 * targets * V, [&](int64_t i) {
    c.nll[static_cast<size_t>(first + i)] = row_nll(logits.row(i), tokens[static_cast<size_t>(first + i) + 1].id);
  });
  c.next_done = first + n;
  return cache_loss(c, loss_tokens);
}

bool finish_next_tokens(const ModelWeights& w, KvCache& c, LateNextTokens* out, const std::function<bool()>& cancelled) {
  const int T = c.T();
  LateNextTokens r;
  Int8Products int8(c.int8_products);      // the logits in the mode of the rows before them
  r.loss = cache_loss(c, &r.loss_tokens);  // nothing pending: the loss as the last pass summed it
  while (c.next_done < T) {
    if (cancelled && cancelled()) return false;
    const int n = std::min(kLateRows, T - c.next_done);
    MatR logits;  // (n, V)
    stream_logits(w, c.out.middleRows(c.next_done, n), logits);
    r.loss = set_pending_next_tokens(c, c.next_tokens_k, c.next_done, logits, c.tokens, &r.loss_tokens);
  }
  r.next = c.next;
  *out = std::move(r);
  return true;
}

double cache_loss(const KvCache& c, int* loss_tokens) {
  double total = 0;
  for (double v : c.nll) total += v;  // in row order, as the full forward sums
  *loss_tokens = static_cast<int>(c.nll.size());
  return c.nll.empty() ? 0.0 : total / static_cast<double>(c.nll.size());
}

}  // namespace headmap
