// model.h: the transformer stack. Text -> batch -> embeddings -> L layers -> outputs.
//
// B = batch, T = tokens, D = d_model, H = heads, d_head = D/H, L = layers, V = vocab
// Each layer is pre-LayerNorm: x += MHA(LN1(x)); x += MLP(LN2(x)), MLP = 4D with GELU.
#pragma once
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/math/shared_rows.h"
#include "core/model/attention.h"
#include "core/model/config.h"
#include "core/model/next_tokens.h"
#include "core/error.h"
#include "core/text/tokenizer.h"
#include "core/model/weights.h"

namespace headmap {

// One sentence per non-blank line. Blank lines are skipped (and counted), never attended.
struct Batch {
  std::vector<TokenizedText> sentences;  // B
  std::vector<int> lengths;              // (B) real tokens per sentence
  std::vector<int> source_line;          // (B) which input line each sentence came from
  int T = 0;                             // longest sentence; shorter ones are padded
  int blank_lines = 0;
  TokenizerKind tokenizer = TokenizerKind::Word;

  int B() const { return static_cast<int>(sentences.size()); }
  bool empty() const { return B() == 0 || T == 0; }
  // Human-readable notes: truncation, invalid UTF-8. Empty when all is well. A truncation
  // note says what to do: raise the context, or, at the limit (a trained model's learned
  // `positions`, 0 for random init; else kMaxContext), shorten or split the text.
  std::vector<std::string> notes(int positions = 0) const;
};

std::vector<std::string> split_lines(std::string_view text);

// The tokenizer a model uses: the checkpoint's vocabulary when trained, else cfg.tokenizer.
TokenizerKind effective_tokenizer(const ModelConfig& cfg, const ModelWeights& w);
// Encoders' extras for make_batch (a pretrained tokenizer.json only): the sentence B of each
// line (pairs[i] goes with lines[i]; empty or missing: no pair), and tokens to mask, as
// (sentence, token) of the batch: each becomes the tokenizer's mask token, its id kept in
// Token::masked_id (the masked-token loss's target).
struct BatchExtras {
  std::vector<std::string> pairs;
  std::vector<std::pair<int, int>> masked;
};
Batch make_batch(const std::vector<std::string>& lines, const ModelConfig& cfg, const ModelWeights& w, const BatchExtras* extras = nullptr);
// Before make_batch on a text from a person or a file: the batch's tokens (at most the
// context per sentence, at most a few per byte) and the least its attention maps take (one
// token per sentence), against the memory budget. 16 MiB of one-character lines made
// 8 M sentences and 6.4 GB before the maps' own check (issue 35, F8).
Status check_batch_memory(const std::vector<std::string>& lines, const ModelConfig& cfg);
// The tokenizer's mask token ("[MASK]", "<mask>"), or -1.
int mask_token_id(const ModelWeights& w);

struct TraceRequest {
  int layer = 0, batch = 0, head = 0;
  bool operator==(const TraceRequest&) const = default;
};

// The one hook for core/inspect/contrib (activation patching and the residual stream's
// parts): start at a layer from a given residual stream instead of the embeddings, add a
// matrix to one layer's attention output, and record the residual entering each layer.
struct ForwardHook {
  int start_layer = 0;                 // layers before it are not run (their maps stay 0)
  const MatR* start_resid = nullptr;   // (B*T, D) the residual entering start_layer (> 0)
  int add_layer = -1;                  // the layer whose attention output gets attn_add
  const MatR* attn_add = nullptr;      // (B*T, D), added after W_O and b_O
  std::vector<MatR>* resid = nullptr;  // out: L x (B*T, D), entering each layer (empty before start)
  // out: L x (B*T, D) per layer, the stream between the sub-blocks, once the attention has
  // written into it and before the MLP has: x + attn(x) (PreNorm; Parallel, where the MLP
  // reads x itself; Sandwich, after the post-attention norm), h = LN1(x + attn(x)) (PostNorm,
  // the MLP's input). Empty before start.
  std::vector<MatR>* post_mid = nullptr;
  // out, post-norm blocks (NormPlacement::PostNorm) only: what the MLP added to post_mid
  // before LN2 (so x_next = LN2(post_mid + post_mlp)). Empty before start.
  std::vector<MatR>* post_mlp = nullptr;
};

struct KvCache;  // kv_cache.h
struct ForwardOutput;

struct ForwardOptions {
  bool keep_layer_io = false;           // keep attn_in / attn_out per layer (for export, trace)
  bool want_logits = false;             // trained models: logits and next-token loss
  // The maps alone: the last layer's MLP changes no attention map, so it is skipped (out.out
  // is then the residual stream before it). Ignored with want_logits.
  bool skip_final_mlp = false;
  std::optional<TraceRequest> trace;    // step-through of one head
  const std::vector<uint8_t>* ablate = nullptr;  // (L*H) 1 = head output zeroed before W_O
  // Asked before every layer and every (sentence, head); true stops the pass with
  // ErrorKind::Cancelled (a UI drops a 12-layer pass when a newer keystroke has arrived).
  // Called from the compute threads: it must be thread-safe and cheap.
  std::function<bool()> cancelled;
  const ForwardHook* hook = nullptr;    // see ForwardHook; null = a plain run
  // The incremental forward (kv_cache.h): rows of a prefix shared with the cache's last
  // request are copied from it, only the rest are computed, and the cache then holds this
  // request. Null, or a request it cannot serve: the full forward, the cache untouched.
  KvCache* kv_cache = nullptr;
  // The benchmarks' per-stage timers (stage_times.h); null in every normal run.
  StageTimes* times = nullptr;
  // Buffers to write into: an earlier output that nothing reads any more (a benchmark's last
  // round; the app's result once no frame and no cache holds it). forward() takes the storage
  // of its maps, kept layer rows, final stream and logits (these only where it holds them
  // alone, not a view of a K/V cache's: that view is dropped), so pages faulted in once are
  // written again instead of fresh blocks faulted in every keystroke, and its maps get room
  // to grow by a few tokens (typing). The same numbers, bit for bit; `reuse` is left empty.
  // Null: fresh buffers. Never an output that is still read (a result on screen).
  ForwardOutput* reuse = nullptr;
  // With want_logits through a K/V cache: no (T, V) logits kept (out.logits empty), each row's
  // next_tokens_k most likely next tokens instead (out.next, next_tokens.h), the loss the same
  // bit for bit. 0, or a forward the cache does not serve: the logits.
  int next_tokens_k = 0;
  // With next_tokens_k through the K/V cache: the logits stage is left out and the rows' next
  // tokens and the loss come later, from the cache (finish_next_tokens, kv_cache.h), so a
  // typing pass shows its maps a logits stage sooner (~15 ms of ~75 on the 1B shape). The
  // output then has next_pending set, no next tokens and no loss. A later pass through the
  // cache computes the rows still pending with its own.
  bool defer_next_tokens = false;
  // BF16 products (packed_gemm.h, Bf16Products): a full pass's products against BF16, F32 and
  // GGUF block weights with the activations and weights rounded to BF16 and vdpbf16ps, on a CPU
  // that has it (else ignored). Off: F32. Such a pass never goes through the K/V cache (kv_cacheable).
  bool bf16_products = false;
  // 8-bit products (int8_products.h, Int8Products): every product against Q4_K, Q5_K, Q6_K or
  // Q8_0 blocks with the activations rounded to 8 bits, as llama.cpp computes them; other
  // weights keep F32's. Each row alike, so an append through the K/V cache equals the full pass
  // in the mode bit for bit. Off: F32.
  bool int8_products = false;
};

struct ForwardOutput {
  int B = 0, T = 0, D = 0, H = 0, L = 0;
  int Hw = 0;                      // heads in `attention`: H, or 1 when head-averaged
  std::vector<float> attention;    // (L, B, Hw, T, T), row = query, column = key
  // L x (B*T, D) each, with keep_layer_io; read-only, shared with a K/V cache as the logits.
  std::vector<SharedRows> attn_in;   // LN1(x), the exact input of attention
  std::vector<SharedRows> attn_out;  // the attention block's output
  MatR out;                        // (B*T, D) the residual stream after the last layer
  // (B*T, V) trained + want_logits only (encoders: with a masked-LM head). Read-only: through
  // a K/V cache, a view of the cache's rows, shared with the outputs before it (shared_rows.h).
  SharedRows logits;
  NextTokenRows next;              // (B*T, k) in place of the logits, with ForwardOptions::next_tokens_k
  double loss = 0.0;               // mean next-token cross-entropy (nats), trained only; encoders: the
                                   // masked-token loss over tokens with Token::masked_id set
  int loss_tokens = 0;
  bool next_pending = false;       // ForwardOptions::defer_next_tokens: next tokens and loss not computed yet
  int no_key_rows = 0;             // rows with no visible key (0 here, NaN in PyTorch)
  std::optional<HeadTrace> trace;  // with trace->head etc. as requested
  // Through a K/V cache (ForwardOptions::kv_cache): the rows copied from it and the rows
  // computed (reused + computed = T). Both 0 when the forward ran without one.
  int kv_reused = 0, kv_computed = 0;

  // The bytes its buffers hold (the maps' cells, not their room: addresses never written, never
  // faulted in): what a cache of outputs counts.
  uint64_t bytes() const;

  // The (T, T) map of layer l, sentence b, weight-head h.
  const float* weights(int l, int b, int h) const {
    return attention.data() + ((static_cast<size_t>(l) * B + b) * Hw + h) * static_cast<size_t>(T) * T;
  }
};

// The attention maps of one forward pass may not exceed this (L x B x H x T x T floats):
// a batch of long sentences in a deep model would otherwise exhaust memory.
inline constexpr int64_t kMaxAttentionBytes = int64_t(2) << 30;

// Runs the model. Errors: an invalid config, a config that does not fit the weights, or a
// batch whose attention maps would exceed kMaxAttentionBytes.
// An empty batch is not an error: the output has B = 0 or T = 0 and no attention.
Result<ForwardOutput> forward(const ModelWeights& w, const ModelConfig& cfg, const Batch& batch,
                              const ForwardOptions& opt = {});

// The one function that takes a config from weights: d_model, layers, the heads the weights
// were trained with (their K/V heads and d_head when the family fixes them, arch.h; else
// multi-head), the context clipped to the positions they learned, and no_w_o. The rest of
// `base` (causal, positional, pitfalls, tokenizer, seed) is kept.
ModelConfig config_for_weights(const ModelWeights& w, ModelConfig base);

// Does cfg fit these weights (D, L, context, vocabulary)? The message says how to fix it.
Status check_fit(const ModelWeights& w, const ModelConfig& cfg);

// Building blocks, shared with the trainer.
// out: (N, D) LayerNorm of x (N, D); forward() passes the weights' ln_eps.
void layer_norm(const MatR& x, const RowVec& g, const RowVec& b, MatR& out, float eps = 1e-5f);
// out: (N, D) RMSNorm of x (N, D): x / sqrt(mean(x^2) + eps) * g.
void rms_norm(const MatR& x, const RowVec& g, MatR& out, float eps);
// GELU, tanh form (as GPT-2): 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
float gelu(float x);
// logits (N, V) of residual-stream rows x (N, D), read as the model reads its last stream:
// decoders the final norm, the unembedding and any final soft-cap; encoders their masked-LM
// head. Trained weights only (the logit lens reads every layer's stream through it).
void stream_logits(const ModelWeights& w, const MatR& x, MatR& logits);
// A decoder's next-token loss over a batch: the mean over every sentence b and position t with
// t + 1 < its length of row_nll(logits of row b*T + t, token t + 1), summed in row order;
// logits(first, n) gives rows [first, first + n) of the (B*T, V) logits, `rows` at a time. The
// forward passes its whole block; stream_loss 16 rows at a time from a final stream x
// (B*T, D), with no (B*T, V) block held (the app's F32 pass beside 8-bit products).
double decoder_loss(const Batch& batch, int rows, const std::function<const MatR&(int first, int n)>& logits, int* loss_tokens);
double stream_loss(const ModelWeights& w, const Batch& batch, const MatR& x, int* loss_tokens);
// x: (B*T, D) embeddings of the batch, positions included (padded rows are 0); with `from`,
// the rows t < from of each sentence are left 0 (the K/V cache's append needs its new rows only).
MatR embed(const ModelWeights& w, const ModelConfig& cfg, const Batch& batch, int from = 0);

}  // namespace headmap
