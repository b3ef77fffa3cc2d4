// kv_cache.h: the incremental forward's memory. A causal model's row t depends only on
// tokens 0..t, so when a new request shares its first P tokens with the last one (typing at
// the end, deleting the last characters, a BPE merge that rewrites the last token or two),
// forward() computes only rows [P, T): each layer's new queries attend over the kept K and V
// (post q/k norm and RoPE, per K/V head), and the rows < P of every map and of the stream are
// copied from here (the maps, where the caller lends them, from its last output: maps_lent);
// the layer inputs, outputs and logits are shared (shared_rows.h). The
// result equals a full recompute (tests/test_kv_cache.cpp holds it to 1e-6 over random edit
// sequences on two families, and bit for bit past 128 tokens at d_head = 64: a head's
// products run on small_gemm at every length, one fused chain per value, in the full forward
// as in a row computed alone).
//
// One cache holds the last request of one model and config; the caller keeps one per model
// (the app's compute worker). Anything else (another model or config, a pitfall other than
// the weights' own no-W_O, an ablation, the hook, a step-through, causal off, several
// sentences) runs the full forward and leaves the cache as it was. Its bytes count against
// the memory budget (core/memory_budget.h): a cache that would not fit is dropped, and the
// forward runs in full.
//
// B = 1, T = tokens, D = d_model, H = heads, Hw = weight heads, KV = K/V heads,
// d_head = head_dim, L = layers, V = vocab
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/math/shared_rows.h"
#include "core/model/config.h"
#include "core/model/next_tokens.h"
#include "core/model/weights.h"
#include "core/text/tokenizer.h"

namespace headmap {

struct Batch;
struct ForwardOptions;

struct KvCache {
  // The request these rows belong to.
  const ModelWeights* weights = nullptr;
  uint64_t weights_stamp = 0;  // weights_stamp(): the same address holding other weights is not a hit
  ModelConfig cfg;
  bool want_logits = false, skip_final_mlp = false, keep_layer_io = false;
  bool int8_products = false;     // ForwardOptions::int8_products: its rows hold that mode's products
  std::vector<Token> tokens;       // (T) the rows' tokens (id and text: random init has no ids)
  std::vector<MatR> kv;            // L x (>= T, 2·KV·d_head) = [K | V], post q/k norm and RoPE, unscaled; rows past T are room
  // The maps, (L, 1, Hw, S, S) with S = maps_rows >= T: each map's row t at stride S, its
  // columns [0, t] written (causal: the rest of a map's row is 0), so an append writes only
  // its own rows and the room (S > T) takes kKvMapsRoom more tokens before a new block.
  std::unique_ptr<float[]> attention;
  size_t attention_floats = 0;     // the block's size: L·Hw·S·S
  int maps_rows = 0;               // S
  // Or none of them here: the caller keeps each output's maps anyway (the app's result on
  // screen) and lends them (lend_maps), and the next request copies its kept rows from there.
  // The 1B shape's block was 41 MB at T = 125 beside the outputs' own 32 MB each
  // (tests/bench/README.md, helper rss10). Set once; kept by clear().
  bool maps_lent = false;
  std::shared_ptr<const void> lent_owner;  // keeps lent_maps alive
  const float* lent_maps = nullptr;        // (L, Hw, T, T) the last request's maps, as its output holds them
  // Lends the maps of this cache's last request, (L, Hw, T, T) at `maps`, kept alive by
  // `owner`; ignored unless maps_lent and T is the cache's. Without them (not lent after a
  // forward) the next request cannot reuse a row: it runs in full.
  void lend_maps(std::shared_ptr<const void> owner, const float* maps, int T);
  // Row t of the last request's map of layer l, weight-head h of Hw: in the lent maps, else in
  // the cache's own block (map_row, written there by a forward that keeps them).
  const float* kept_map_row(int Hw, int l, int h, int t);
  float* map_row(int Hw, int l, int h, int t);
  void drop_maps();  // no maps kept, none lent
  // Rows [0, T) of each: the cached rows; rows past T are room for appends (grown in place,
  // kKvMapsRoom rows at a time, so an append does not move every kept row). The layer rows and
  // the logits are shared with the outputs (shared_rows.h): each output's are views of their
  // first T rows, and a row a view reads is never written (an edit under it writes into a
  // fresh block: copy on write).
  std::vector<RowsBlock> attn_in, attn_out;  // L x (>= T, D), with keep_layer_io
  MatR out;                        // (>= T, D) the residual stream after the last layer
  RowsBlock logits;                // (>= T, V), with want_logits on a trained model
  int next_tokens_k = 0;           // ForwardOptions::next_tokens_k of the request: then no logits, but
  NextTokenRows next;              // (T, k) each row's most likely next tokens (next_tokens.h)
  std::vector<double> nll;         // (T - 1) each row's next-token cross-entropy, summed in order for the loss
  // Rows [0, next_done) hold their next tokens and (below T - 1) their cross-entropy for the
  // tokens now; a pass with ForwardOptions::defer_next_tokens leaves the rest pending.
  int next_done = 0;

  // What the last forward through this cache did: rows copied from it and rows computed.
  // A forward that could not use it leaves them as they were.
  int reused = 0, computed = 0;
  std::string note;  // why the last cacheable request was not kept (the memory budget), else empty

  // An append of fewer than 4 rows streams each layer's weights once; whether a second core
  // helps (FewRowSplit, packed_gemm.h) depends on what else the machine runs, so both ways
  // are timed, each kKept times at first, and the faster one kept, the other retried every 16th
  // append. Kept by clear(). What is timed is the products the split decides
  // (FewRowSplit::products_ms), not the whole pass: an edit under an output's rows copies them
  // (shared_rows.h), and that copy, timed as the team's one try, kept the 1B shape's appends
  // on one thread. A way's figure is the least of its last kKept times: another process only
  // ever adds time, and one disturbed try (~12x on GPT-2 small) kept it off for 16 appends
  // (tests/bench/README.md, helper share7); a lasting change shows after kKept tries.
  struct SplitTiming {
    static constexpr int kKept = 3;
    double ms[2] = {0, 0};         // each way's figure, [one thread, the team]: the least of recent[way]
    double recent[2][kKept] = {};  // each way's last kKept products' times (ms), oldest overwritten
    int tries[2] = {0, 0};         // appends timed each way
    int appends = 0;
    bool choose();                        // the way to run the next append: true = the team
    void record(bool split, double ms);   // how long its products took
  } split;

  int T() const { return static_cast<int>(tokens.size()); }
  uint64_t bytes() const;  // what the cache holds now
  void clear();            // forgets the rows (the counters stay)
};

// A cheap fingerprint of weights (shapes and a few numbers), so that other weights at the
// address of freed ones are not taken for them.
uint64_t weights_stamp(const ModelWeights& w);

// Can forward() serve this request through a K/V cache at all (B = 1, causal, no pitfall
// but the weights' no-W_O, no ablation, hook, step-through or BF16 products)?
bool kv_cacheable(const ModelWeights& w, const ModelConfig& cfg, const Batch& batch, const ForwardOptions& opt);

// The rows of `batch` that `cache` can give (0: none, a full forward), at most T - 1 (the
// last row is always computed). 0 when the request is not cacheable or is another request's.
int kv_reusable_rows(const KvCache& cache, const ModelWeights& w, const ModelConfig& cfg, const Batch& batch,
                     const ForwardOptions& opt);

// The maps, the layer rows, the stream and the logits are kept with room for this many more
// tokens, so typing at the end appends into pages already mapped; kv_cache_bytes() and
// KvCache::bytes() count the room.
constexpr int kKvMapsRoom = 32;

// m: at least `rows` rows of `cols` columns, its first rows kept; grown by kKvMapsRoom rows
// past `rows` when it must grow (a cache's rows with room for appends).
void reserve_rows(MatR& m, Eigen::Index rows, Eigen::Index cols);

// The next tokens and the loss a pass with ForwardOptions::defer_next_tokens left out: its
// rows still pending (next_done .. T) computed from the cache's final stream, as that pass's
// logits stage would have (the same bits), kLateRows rows at a time; `cancelled` is asked
// between them (the rows done stay done: the next pass or call goes on from there). False,
// *out untouched, when cancelled before the last. Valid while the cache holds that pass's request.
struct LateNextTokens {
  NextTokenRows next;  // (T, k)
  double loss = 0.0;
  int loss_tokens = 0;
};
constexpr int kLateRows = 16;
bool finish_next_tokens(const ModelWeights& w, KvCache& c, LateNextTokens* out, const std::function<bool()>& cancelled = nullptr);
// Rows [first, first + n) of the cache's next tokens and cross-entropies (targets: tokens, (T))
// from their logits (n, V); next_done becomes first + n. Returns the loss over every row (the
// sum in row order, as the full forward's; meaningful once next_done is T), its count in *loss_tokens.
double set_pending_next_tokens(KvCache& c, int k, int first, const MatR& logits, const std::vector<Token>& tokens, int* loss_tokens);
double cache_loss(const KvCache& c, int* loss_tokens);  // the mean of c.nll, summed in row order; its count

// The bytes a cache of T rows takes for this model, config and options (for check_memory).
uint64_t kv_cache_bytes(const ModelWeights& w, const ModelConfig& cfg, int T, const ForwardOptions& opt);

// K/V cache bytes per token: 2 (K and V) x L x KV x d_head x 4 (float32). The passport's line.
uint64_t kv_bytes_per_token(const ModelConfig& cfg);

}  // namespace headmap
