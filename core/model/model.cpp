// model.cpp: batching, embeddings, the layer stack, logits and loss.
//
// B = batch, T = tokens, D = d_model, H = heads, L = layers, V = vocab
#include "core/model/model.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <mutex>
#include <unordered_map>

#include "core/math/gemm.h"
#include "core/math/int8_products.h"
#include "core/math/packed_gemm.h"
#include "core/math/parallel.h"
#include "core/memory_budget.h"
#include "core/model/kv_cache.h"
#include "core/model/next_tokens.h"
#include "core/model/stage_times.h"

namespace headmap {

std::vector<std::string> split_lines(std::string_view text) {
  std::vector<std::string> lines;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    std::string line(text.substr(start, end - start));
    if (!line.empty() && line.back() == '\r') line.pop_back();
    lines.push_back(std::move(line));
    if (end == text.size()) break;
    start = end + 1;
  }
  return lines;
}

static bool blank(std::string_view s) {
  return std::all_of(s.begin(), s.end(), [](char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; });
}

TokenizerKind effective_tokenizer(const ModelConfig& cfg, const ModelWeights& w) {
  return w.trained() ? TokenizerKind::Bpe : cfg.tokenizer;
}

int mask_token_id(const ModelWeights& w) {
  if (!w.hf_tokenizer) return -1;
  for (const char* m : {"[MASK]", "<mask>"})
    if (const int id = w.hf_tokenizer->token_to_id(m); id >= 0) return id;
  return -1;
}

Batch make_batch(const std::vector<std::string>& lines, const ModelConfig& cfg, const ModelWeights& w, const BatchExtras* extras) {
  Batch batch;
  batch.tokenizer = effective_tokenizer(cfg, w);
  const Bpe* bpe = w.trained() && !w.bpe.empty() ? &w.bpe : nullptr;
  const TokenizerKind kind = (batch.tokenizer == TokenizerKind::Bpe && !bpe) ? TokenizerKind::Word : batch.tokenizer;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (blank(lines[i])) {
      ++batch.blank_lines;
      continue;
    }
    const std::string* pair =
        extras && w.arch.encoder() && i < extras->pairs.size() && !blank(extras->pairs[i]) ? &extras->pairs[i] : nullptr;
    TokenizedText tt = w.trained() && w.hf_tokenizer ? (pair ? tokenize_pair(lines[i], *pair, cfg.context, *w.hf_tokenizer)
                                                             : tokenize(lines[i], cfg.context, *w.hf_tokenizer))
                                                     : tokenize(lines[i], kind, cfg.context, bpe);
    if (tt.tokens.empty()) {  // e.g. only control characters
      ++batch.blank_lines;
      continue;
    }
    batch.lengths.push_back(static_cast<int>(tt.tokens.size()));
    batch.source_line.push_back(static_cast<int>(i));
    batch.T = std::max(batch.T, static_cast<int>(tt.tokens.size()));
    batch.sentences.push_back(std::move(tt));
  }
  if (const int mask = extras ? mask_token_id(w) : -1; mask >= 0)
    for (const auto& [b, t] : extras->masked) {
      if (b < 0 || b >= batch.B() || t < 0 || t >= batch.lengths[b]) continue;
      Token& tok = batch.sentences[b].tokens[t];
      if (tok.special || tok.id == mask) continue;  // [CLS], [SEP] and a typed [MASK] stay
      Token m = hf_piece(*w.hf_tokenizer, mask);
      m.type = tok.type;
      m.segment = tok.segment;
      m.masked_id = tok.id;
      tok = std::move(m);
    }
  return batch;
}

Status check_batch_memory(const std::vector<std::string>& lines, const ModelConfig& cfg) {
  uint64_t bytes = 0, sentences = 0;
  for (const std::string& l : lines) {
    if (blank(l)) continue;
    ++sentences;
    const uint64_t tokens = std::min<uint64_t>(static_cast<uint64_t>(std::max(cfg.context, 1)), l.size() + 4);  // + the specials
    // A token's text past the short-string buffer, and the allocator's own bytes, are counted
    // too: 8 M one-character lines took about 800 bytes each.
    bytes += sizeof(TokenizedText) + 2 * sizeof(int) + 96 + tokens * (sizeof(Token) + 32);
  }
  const uint64_t maps = mul_sat(mul_sat(sentences, static_cast<uint64_t>(std::max(cfg.num_layers, 1))), 4 * static_cast<uint64_t>(std::max(cfg.num_heads, 1)));
  return check_memory(bytes + maps, "The text's " + std::to_string(sentences) + " sentences (one a line) and their attention maps",
                      "use fewer lines: each line is a sentence of its own");
}

std::vector<std::string> Batch::notes(int positions) const {
  std::vector<std::string> out;
  for (int b = 0; b < B(); ++b) {
    const TokenizedText& s = sentences[b];
    const std::string which = B() > 1 ? "Sentence " + std::to_string(b + 1) + ": " : "";
    if (s.invalid_utf8 > 0)
      out.push_back(which + std::to_string(s.invalid_utf8) + " invalid UTF-8 sequence" + (s.invalid_utf8 > 1 ? "s were" : " was") +
                    " replaced by \xEF\xBF\xBD (U+FFFD).");
    if (s.regex_stopped > 0)
      out.push_back(which + "the tokenizer's regex gave up " + std::to_string(s.regex_stopped) +
                    " time(s) (PCRE2's match limit, or 5 s for one text): the rest of that piece was left unsplit, so its tokens may "
                    "differ from the model's own tokenizer. The tokenizer.json's Split pattern backtracks: shorten the text or fix the pattern.");
    if (!s.truncated()) continue;
    // What to do depends on what limits the length: the context, the trained model's
    // positions, or the most headmap reads.
    const int n = static_cast<int>(s.tokens.size()), limit = positions > 0 ? std::min(positions, kMaxContext) : kMaxContext;
    const std::string head = which + "truncated to the context of " + std::to_string(n) + " tokens (the text has " +
                             std::to_string(s.total_tokens) + "). ";
    const std::string split = "put it on several lines (each line is a sentence of its own)";
    if (n < limit)
      out.push_back(head + "Raise the context to " + std::to_string(std::min(s.total_tokens, limit)) +
                    (s.total_tokens <= limit ? " to see all of it." : " (its most here) to see more, or " + split + "."));
    else if (positions > 0 && positions < kMaxContext)
      out.push_back(head + "This trained model learned only " + std::to_string(positions) + " positions: shorten the text, " + split +
                    ", or switch to random init, which reads up to " + std::to_string(kMaxContext) + " tokens.");
    else
      out.push_back(head + std::to_string(kMaxContext) + " tokens is the most headmap reads: shorten the text, or " + split + ".");
  }
  return out;
}

ModelConfig config_for_weights(const ModelWeights& w, ModelConfig c) {
  c.d_model = w.d_model;
  c.num_layers = w.num_layers();
  c.num_heads = w.arch.fixed_heads() ? w.arch.num_heads : w.source.trained_heads;
  c.num_kv_heads = w.arch.fixed_heads() ? w.arch.num_kv_heads : 0;  // GPT-2-style weights are multi-head
  c.head_dim = w.arch.fixed_heads() ? w.arch.head_dim : 0;
  if (w.trained()) c.context = std::min(c.context, w.context);
  if (w.arch.encoder()) c.causal = false;  // BERT-style encoders: every real key, both directions
  c.pitfalls.no_w_o = w.source.no_w_o;
  return c;
}

Status check_fit(const ModelWeights& w, const ModelConfig& cfg) {
  if (Status s = validate(cfg); !s) return s;
  auto mismatch = [](std::string m) { return Status(Error{ErrorKind::Mismatch, std::move(m)}); };
  if (w.d_model != cfg.d_model)
    return mismatch("The weights have d_model " + std::to_string(w.d_model) + " but the config asks for " +
                    std::to_string(cfg.d_model) + ": regenerate the weights or set d_model to " + std::to_string(w.d_model) + ".");
  if (w.num_layers() < cfg.num_layers)
    return mismatch("The weights have " + std::to_string(w.num_layers()) + " layers but the config asks for " +
                    std::to_string(cfg.num_layers) + ": lower num_layers or regenerate the weights.");
  if (w.arch.fixed_heads()) {  // a rotary (or otherwise fixed) model's heads are its weights'
    const int kv = w.arch.num_kv_heads > 0 && w.arch.num_kv_heads < w.arch.num_heads ? w.arch.num_kv_heads : 0;
    if (cfg.num_heads != w.arch.num_heads || cfg.kv_heads() != (kv > 0 ? kv : cfg.num_heads) || cfg.head_dim != w.arch.head_dim)
      return mismatch(w.arch.name + " fixes its heads in its weights: H=" + std::to_string(w.arch.num_heads) +
                      (kv > 0 ? " (" + std::to_string(kv) + " K/V)" : "") +
                      (w.arch.head_dim > 0 ? ", d_head=" + std::to_string(w.arch.head_dim) : "") + "; set num_heads to " +
                      std::to_string(w.arch.num_heads) + (kv > 0 ? " and num_kv_heads to " + std::to_string(kv) : "") + ".");
  }
  if (w.trained() && cfg.context > w.context)
    return mismatch("This checkpoint learned " + std::to_string(w.context) + " positions; set context to " +
                    std::to_string(w.context) + " or less.");
  return Status();
}

void layer_norm(const MatR& x, const RowVec& g, const RowVec& b, MatR& out, float eps) {
  const Eigen::Index N = x.rows(), D = x.cols();
  out.resize(N, D);
  parallel_for(N, 8.0 * N * D, [&](int64_t i) {
    const float mean = x.row(i).mean();
    const float var = (x.row(i).array() - mean).square().mean();
    const float inv = 1.0f / std::sqrt(var + eps);
    out.row(i) = ((x.row(i).array() - mean) * inv * g.array() + b.array()).matrix();
  });
}

void rms_norm(const MatR& x, const RowVec& g, MatR& out, float eps) {
  const Eigen::Index N = x.rows(), D = x.cols();
  out.resize(N, D);
  parallel_for(N, 8.0 * N * D, [&](int64_t i) {
    const float inv = 1.0f / std::sqrt(x.row(i).squaredNorm() / static_cast<float>(D) + eps);
    out.row(i) = (x.row(i).array() * inv * g.array()).matrix();
  });
}

// Buffers taken from ForwardOptions::reuse (an earlier output nothing reads any more), so a
// keystroke writes into pages already faulted in (tests/bench/README.md, stage timers: the
// 1B shape's 33 MB of maps and 66 MB of logits faulted in 8,000 and 16,000 pages a pass).

// m: (rows, cols), contents unspecified. With the same columns the block is resized in place
// (realloc: the rows it had keep their pages, a grown block faults only its new rows).
static void resize_keeping(MatR& m, Eigen::Index rows, Eigen::Index cols) {
  if (m.cols() == cols && m.size() > 0) m.conservativeResize(rows, cols);
  else m.resize(rows, cols);
}

// dst: a copy of src, in the storage of spare (when given) or of dst.
static void copy_into(MatR& dst, MatR* spare, const Eigen::Ref<const MatR>& src) {
  if (spare) dst.swap(*spare);
  resize_keeping(dst, src.rows(), src.cols());
  if (src.outerStride() == src.cols()) parallel_copy(dst.data(), src.data(), static_cast<size_t>(src.size()));  // contiguous rows
  else dst = src;
}

// kept.push_back(a copy of m), in the storage of the spare's matrix of the same layer where
// the spare holds it alone (not a view of a K/V cache's rows).
static void keep_layer_rows(std::vector<SharedRows>& kept, std::vector<SharedRows>* spare, const MatR& m) {
  const size_t l = kept.size();
  MatR rows = spare && l < spare->size() ? (*spare)[l].take() : MatR();
  copy_into(rows, nullptr, m);
  kept.emplace_back(std::move(rows));
}

// maps: n floats, zeroed (or, when !zero, left as they were: the caller writes every one),
// in the spare's storage when it is larger. A block allocated for a reusing caller keeps
// room for `room` floats (more tokens: typing) so the next ones fit.
static void zeroed_maps(std::vector<float>& maps, std::vector<float>* spare, size_t n, size_t room, bool zero = true) {
  if (spare && spare->capacity() > maps.capacity()) maps.swap(*spare);
  if (maps.capacity() < n) {
    std::vector<float>().swap(maps);  // freed before the new block: no two at once
    maps.reserve(std::max(n, room));
  }
  maps.resize(n);
  if (zero) parallel_copy(maps.data(), nullptr, n);
}

// The maps' room for a reusing caller: (L, B, Hw, T', T') with T' = T + max(64, T / 2), within
// the maps' limit. Only the pages written are ever faulted in (T's, growing a little with each
// appended token), so the room costs addresses, not memory; a block too small is replaced and
// its successor faulted in whole (~28 MB, ~20 ms on the 1B shape: with T' = T + 16 typing paid
// that twice every 16 tokens, once for each buffer the keystrokes alternate between).
static size_t maps_room(const ForwardOutput& out, const ForwardOptions& opt) {
  if (!opt.reuse) return 0;
  const size_t t = static_cast<size_t>(out.T) + std::max(64, out.T / 2);
  const size_t room = static_cast<size_t>(out.L) * out.B * out.Hw * t * t;
  return std::min(room, static_cast<size_t>(kMaxAttentionBytes / 4));
}

uint64_t ForwardOutput::bytes() const {
  uint64_t b = static_cast<uint64_t>(attention.size()) * 4 + static_cast<uint64_t>(out.size() + logits.size()) * 4 + next.bytes();
  for (const SharedRows& m : attn_in) b += static_cast<uint64_t>(m.size()) * 4;
  for (const SharedRows& m : attn_out) b += static_cast<uint64_t>(m.size()) * 4;
  return b;
}

// The family's norm (arch.h): LayerNorm with bias, or RMSNorm ((1 + w) already folded into g).
static void norm(const ModelWeights& w, const MatR& x, const RowVec& g, const RowVec& b, MatR& out) {
  if (w.arch.norm == NormKind::RMSNorm) rms_norm(x, g, out, w.ln_eps);
  else layer_norm(x, g, b, out, w.ln_eps);
}

float gelu(float x) { return activate(Activation::GeluTanh, x); }

// The activation a over a whole matrix, from the one table (core/math/activation.h).
static void activate_matrix(Activation a, Eigen::Ref<MatR> m) { activate_inplace(a, m.data(), m.size(), threads_for(30.0 * static_cast<double>(m.size()))); }

namespace {
// A block of floats that keeps its pages from one forward to the next (a matrix resized to
// another length is a fresh block: faulted in again). Aligned as Eigen aligns a matrix: an
// Eigen expression over it (the activation) then runs the same packets from its first float
// as over a MatR (a start off the packet's alignment is run in scalar code, whose exp rounds
// otherwise: an append differed from the full forward in the last bits). Blocks over
// kMaxKept floats are given back after use, so a long text leaves no large block behind.
class KeptFloats {
 public:
  static constexpr size_t kMaxKept = size_t(16) << 20;  // 64 MB
  float* get(size_t n) {
    if (v_.size() < n) {
      decltype(v_)().swap(v_);  // freed before the new block: no two at once
      v_.resize(n);             // unwritten (and from 4 MB on 2 MB pages: huge_pages.h)
    }
    return v_.data();
  }
  void trim() {
    if (v_.size() > kMaxKept) decltype(v_)().swap(v_);
  }

 private:
  std::vector<float, UninitialisedAllocator<float>> v_;
};
}  // namespace

// The family's MLP on m_in (N, D), added to x (N, D): GELU (tanh or erf) of one projection,
// or a gated pair (SiLU or GELU-tanh of the gate, times the up projection). Its (N, F)
// hidden and gate rows are kept per thread (KeptFloats): allocated per pass they cost the
// 1B shape's full forward 2,038 page faults (tests/bench/README.md, stage timers).
static void mlp_add(const ModelWeights& w, const LayerWeights& lw, const MatR& m_in, MatR& x, StageTimes* st) {
  StageClock clock(st, Stage::MlpIn);
  thread_local KeptFloats hidden_rows, gate_rows;
  const Eigen::Index N = m_in.rows(), F = lw.w_fc.cols();
  Eigen::Map<MatR> hidden(hidden_rows.get(static_cast<size_t>(N * F)), N, F);  // (N, F)
  packed_gemm(hidden, m_in, lw.w_fc);  // (N, F), on all the compute threads
  if (lw.b_fc.size() == hidden.cols()) hidden.rowwise() += lw.b_fc;
  clock.next(Stage::MlpAct);
  if (w.arch.gated()) {  // act(x W_gate) * (x W_up)
    clock.next(Stage::MlpIn);
    Eigen::Map<MatR> gate(gate_rows.get(static_cast<size_t>(N * lw.w_gate.cols())), N, lw.w_gate.cols());  // (N, F)
    packed_gemm(gate, m_in, lw.w_gate);
    clock.next(Stage::MlpAct);
    activate_matrix(w.arch.activation(), gate);
    parallel_for(N, 4.0 * N * F, [&](int64_t i) { hidden.row(i).array() *= gate.row(i).array(); });
  } else {
    activate_matrix(w.arch.activation(), hidden);
  }
  clock.next(Stage::MlpOut);
  packed_gemm(x, hidden, lw.w_proj, true);  // x += (N, F) (F, D)
  if (lw.b_proj.size() == x.cols()) x.rowwise() += lw.b_proj;
  hidden_rows.trim();
  gate_rows.trim();
}

// Random-init embeddings, memoised. hashed_embedding draws its (D) normals one by one in
// double precision and the sinusoids take a pow, a sin and a cos per pair: about 40 ns a
// number, 4-6 ms for 128 tokens at D = 768, while a keystroke changes one token. Both are
// pure functions, of (token, seed, D) and of (t, D), so each row is computed once and
// copied after; the same numbers, bit for bit. Bounded: cleared when full.
namespace {
class EmbeddingMemo {
 public:
  // Copies the token row of `key` (D floats) into out; false if it is not kept.
  bool token(uint64_t key, int D, float* out) {
    std::lock_guard<std::mutex> lock(mu_);
    const auto it = tokens_.find(key);
    if (it == tokens_.end() || it->second.size() != static_cast<size_t>(D)) return false;
    std::copy(it->second.begin(), it->second.end(), out);
    return true;
  }
  void keep_token(uint64_t key, const float* row, int D) {
    std::lock_guard<std::mutex> lock(mu_);
    make_room(static_cast<size_t>(D));
    floats_ += static_cast<size_t>(D);
    tokens_[key].assign(row, row + D);
  }
  // The sinusoids of positions [0, T) at D: (T', D) with T' >= T, kept until the memo is
  // cleared; null when the table alone would not fit the memo.
  std::shared_ptr<const std::vector<float>> positions(int T, int D) {
    if (static_cast<size_t>(std::max(T, 256)) * D > kMaxFloats) return nullptr;
    std::lock_guard<std::mutex> lock(mu_);
    std::shared_ptr<const std::vector<float>>& table = positions_[D];
    if (!table || table->size() < static_cast<size_t>(T) * D) {
      const int rows = std::max(T, 256);
      auto t = std::make_shared<std::vector<float>>(static_cast<size_t>(rows) * D, 0.0f);
      for (int r = 0; r < rows; ++r) add_sinusoidal(r, D, t->data() + static_cast<size_t>(r) * D);
      make_room(t->size());
      floats_ += t->size();
      table = std::move(t);
    }
    return table;
  }

 private:
  void make_room(size_t n) {
    if (floats_ + n <= kMaxFloats) return;
    tokens_.clear();
    positions_.clear();
    floats_ = 0;
  }
  static constexpr size_t kMaxFloats = size_t(8) << 20;  // 32 MB
  std::mutex mu_;
  std::unordered_map<uint64_t, std::vector<float>> tokens_;  // key -> (D)
  std::unordered_map<int, std::shared_ptr<const std::vector<float>>> positions_;  // D -> (T, D)
  size_t floats_ = 0;
};
EmbeddingMemo& embedding_memo() {
  static EmbeddingMemo memo;
  return memo;
}
}  // namespace

// x: (B*T, D)
MatR embed(const ModelWeights& w, const ModelConfig& cfg, const Batch& batch, int from) {
  const int B = batch.B(), T = batch.T, D = cfg.d_model;
  MatR x = MatR::Zero(static_cast<Eigen::Index>(B) * T, D);
  if (w.trained()) {
    for (int b = 0; b < B; ++b)
      for (int t = from; t < batch.lengths[b]; ++t) {
        float* row = x.data() + (static_cast<size_t>(b) * T + t) * D;
        const Token& tok = batch.sentences[b].tokens[t];
        HM_ASSERT(tok.id >= 0 && tok.id < w.vocab_size(), "a trained model needs vocabulary ids on every token");
        w.embedding_row(tok.id, row);
        if (w.arch.embed_scale) {  // Gemma: embeddings times sqrt(D)
          const float k = std::sqrt(static_cast<float>(D));
          for (int i = 0; i < D; ++i) row[i] *= k;
        }
        if (cfg.positional && w.arch.positions == PositionKind::Learned) {
          const int p = t + w.arch.position_offset;  // RoBERTa: past padding_idx
          HM_ASSERT(p < w.pos_emb.rows(), "a position past the learned table");
          for (int i = 0; i < D; ++i) row[i] += w.pos_emb(p, i);
        }
        if (w.type_emb.rows() > 0) {  // encoders: the token type (segment) row
          const int type = std::clamp(tok.type, 0, static_cast<int>(w.type_emb.rows()) - 1);
          for (int i = 0; i < D; ++i) row[i] += w.type_emb(type, i);
        }
      }
    if (w.arch.embed_norm) {  // encoders: a LayerNorm of the summed embeddings, real rows only
      MatR normed;
      layer_norm(x, w.emb_ln_g, w.emb_ln_b, normed, w.ln_eps);
      x = std::move(normed);
      for (int b = 0; b < B; ++b)
        for (int t = batch.lengths[b]; t < T; ++t) x.row(static_cast<Eigen::Index>(b) * T + t).setZero();
    }
    return x;
  }
  // Random init: each token's hashed row, from the memo or drawn (the new ones on the
  // compute threads), then the sinusoids.
  EmbeddingMemo& memo = embedding_memo();
  struct Drawn {
    float* row;
    const Token* tok;
    uint64_t key;
  };
  std::vector<Drawn> drawn;  // rows not kept yet, one per new token
  std::vector<std::pair<float*, const float*>> repeats;  // (row, the drawn row of the same token)
  std::unordered_map<uint64_t, const float*> first;      // key -> its row in `drawn`
  for (int b = 0; b < B; ++b)
    for (int t = from; t < batch.lengths[b]; ++t) {
      float* row = x.data() + (static_cast<size_t>(b) * T + t) * D;
      const Token& tok = batch.sentences[b].tokens[t];
      const uint64_t key = hashed_embedding_key(tok.text, cfg.seed, D);
      if (memo.token(key, D, row)) continue;
      const auto [it, is_new] = first.emplace(key, row);
      if (is_new) drawn.push_back({row, &tok, key});
      else repeats.emplace_back(row, it->second);
    }
  const int n = static_cast<int>(drawn.size());
#pragma omp parallel for schedule(static) num_threads(threads_for(40.0 * n * D))
  for (int i = 0; i < n; ++i) hashed_embedding(drawn[i].tok->text, cfg.seed, D, drawn[i].row);
  for (const auto& [row, from] : repeats) std::copy_n(from, D, row);
  for (const Drawn& d : drawn) memo.keep_token(d.key, d.row, D);
  if (cfg.positional) {
    const std::shared_ptr<const std::vector<float>> pe = memo.positions(T, D);  // (T', D), T' >= T
    for (int b = 0; b < B; ++b)
      for (int t = from; t < batch.lengths[b]; ++t) {
        float* row = x.data() + (static_cast<size_t>(b) * T + t) * D;
        if (!pe) {
          add_sinusoidal(t, D, row);
          continue;
        }
        const float* p = pe->data() + static_cast<size_t>(t) * D;
        for (int i = 0; i < D; ++i) row[i] += p[i];
      }
  }
  return x;
}

// Zeroes the rows of padded positions so they carry nothing forward.
static void zero_padding(MatR& x, const Batch& batch) {
  for (int b = 0; b < batch.B(); ++b)
    for (int t = batch.lengths[b]; t < batch.T; ++t) x.row(static_cast<Eigen::Index>(b) * batch.T + t).setZero();
}

// The rest of a layer after its attention, by the family's placement of the norms: the
// residual update and the MLP (skipped when !mlp). x, a_out: (N, D), any N rows.
// Layer l's attention options: the family's (its window, RoPE, scale) over the forward's own
// (lengths, cancellation); GPT-2's block keeps the forward's.
static void refresh_layer_options(const ModelConfig& cfg, const ModelWeights& w, int l, MhaOptions& mo) {
  if (w.arch.is_gpt2_block()) return;
  const MhaOptions base = mo;
  mo = mha_options(cfg, w, l);
  mo.lengths = base.lengths;
  mo.cancelled = base.cancelled;
}

// What the attention reads: x itself when the norms come after the sub-blocks (BERT, OLMo 2), else ln1(x).
static void attention_input(const ModelWeights& w, const LayerWeights& lw, const MatR& x, MatR& a_in) {
  if (w.arch.placement == NormPlacement::PostNorm || w.arch.placement == NormPlacement::PostOutput) a_in = x;
  else norm(w, x, lw.ln1_g, lw.ln1_b, a_in);  // (N, D)
}

static void finish_layer(const ModelWeights& w, const LayerWeights& lw, bool mlp, const MatR& a_out, MatR& x, MatR& m_in,
                         MatR& post, StageTimes* st, MatR* mid_rec = nullptr, MatR* mlp_rec = nullptr) {
  const NormPlacement placement = w.arch.placement;
  // The norms' time (the MLP's own stages are timed inside mlp_add).
  auto norm = [&](const MatR& in, const RowVec& g, const RowVec& b, MatR& out) {
    StageClock clock(st, Stage::Norm);
    ::headmap::norm(w, in, g, b, out);
  };
  auto rms_norm = [&](const MatR& in, const RowVec& g, MatR& out, float eps) {
    StageClock clock(st, Stage::Norm);
    ::headmap::rms_norm(in, g, out, eps);
  };
  if (placement == NormPlacement::Parallel) {  // GPT-NeoX: both sub-blocks read the same x
    if (mid_rec) *mid_rec = x + a_out;  // the stream with the attention's share alone
    if (mlp) {
      norm(x, lw.ln2_g, lw.ln2_b, m_in);  // (N, D)
      mlp_add(w, lw, m_in, x, st);
    }
    x += a_out;
  } else if (placement == NormPlacement::Sandwich) {  // Gemma 2 and 3: a norm after each sub-block too
    rms_norm(a_out, lw.post_attn_g, post, w.ln_eps);
    x += post;
    if (mid_rec) *mid_rec = x;
    if (mlp) {
      norm(x, lw.ln2_g, lw.ln2_b, m_in);  // (N, D)
      MatR m_out = MatR::Zero(x.rows(), x.cols());  // (N, D)
      mlp_add(w, lw, m_in, m_out, st);
      rms_norm(m_out, lw.post_mlp_g, post, w.ln_eps);
      x += post;
    }
  } else if (placement == NormPlacement::PostOutput) {  // OLMo 2: x += post_attn(attn(x)); x += post_mlp(mlp(x))
    rms_norm(a_out, lw.post_attn_g, post, w.ln_eps);
    x += post;
    if (mid_rec) *mid_rec = x;
    if (mlp) {
      MatR m_out = MatR::Zero(x.rows(), x.cols());  // (N, D)
      mlp_add(w, lw, x, m_out, st);
      rms_norm(m_out, lw.post_mlp_g, post, w.ln_eps);
      x += post;
    }
  } else if (placement == NormPlacement::PostNorm) {  // BERT: x = ln1(x + attn(x)); x = ln2(x + mlp(x))
    x += a_out;
    norm(x, lw.ln1_g, lw.ln1_b, post);
    x = post;
    if (mid_rec) *mid_rec = x;  // the hook's record (contrib.h's post-norm parts)
    if (mlp) {
      m_in = x;
      mlp_add(w, lw, m_in, x, st);
      if (mlp_rec) *mlp_rec = x - m_in;  // what the MLP added, before LN2
      norm(x, lw.ln2_g, lw.ln2_b, post);
      x = post;
    }
  } else {
    x += a_out;
    if (mid_rec) *mid_rec = x;
    // MLP sub-block (two thirds of a layer's FLOPs; the last one changes no map)
    if (mlp) {
      norm(x, lw.ln2_g, lw.ln2_b, m_in);  // (N, D)
      mlp_add(w, lw, m_in, x, st);
    }
  }
}

// logits (N, V) = xf (N, D) * U^T, U (V, D) the unembedding: kept 16-bit, U^T's panels
// (NarrowRows::panels, (D, V)) through packed_gemm as every weight matrix, widened in
// registers; F32 (a checkpoint's table), each panel of U's rows packed as it is used; in a
// GGUF file's blocks, in dot order. The first two give the same bits (one chain over k).
static void unembed(const ModelWeights& w, const MatR& xf, MatR& logits) {
  const NarrowRows& U16 = w.lm_head16.empty() && w.lm_head.size() == 0 ? w.tok_emb16 : w.lm_head16;
  if (!U16.empty() && is_block_dtype(U16.dtype)) {  // a GGUF file's blocks: widened row by row into the GEMM's panels (bit for bit)
    resize_keeping(logits, xf.rows(), U16.rows);
    gemm_transposed_b(static_cast<int>(xf.rows()), xf.data(), static_cast<int>(xf.cols()), static_cast<int>(U16.rows), static_cast<int>(U16.cols),
                      U16.blocks.data(), U16.dtype, U16.row_bytes(), logits.data(), static_cast<int>(logits.cols()));
  } else if (!U16.empty()) {  // kept 16-bit in panels: the weights' GEMM (bit for bit the F32 result)
    resize_keeping(logits, xf.rows(), U16.rows);
    packed_gemm(static_cast<int>(xf.rows()), xf.data(), static_cast<int>(xf.cols()), U16.panels, logits.data(), static_cast<int>(logits.cols()), false);
  } else {
    const MatR& U = w.unembedding();
    resize_keeping(logits, xf.rows(), U.rows());
    gemm_transposed_b(static_cast<int>(xf.rows()), xf.data(), static_cast<int>(xf.cols()), static_cast<int>(U.rows()),
                      static_cast<int>(U.cols()), U.data(), static_cast<int>(U.cols()), logits.data(), static_cast<int>(logits.cols()));
  }
}

// logits: (N, V) of the final residual rows x (N, D): the final norm, the unembedding, the
// family's soft-cap.
static void logits_of(const ModelWeights& w, const MatR& x, MatR& logits) {
  MatR xf;
  norm(w, x, w.lnf_g, w.lnf_b, xf);  // (N, D)
  unembed(w, xf, logits);            // (N, V)
  if (w.lm_head_b.size() == logits.cols()) logits.rowwise() += w.lm_head_b;  // Phi-1.5 / Phi-2's lm_head bias
  if (const float c = w.arch.final_softcap; c > 0) logits.array() = c * (logits.array() / c).tanh();  // Gemma 2
}

// The incremental forward (kv_cache.h): the one sentence's rows [P, T), P from the cache;
// the rows < P of every output copied from it; then the cache holds this request. `out`
// comes with its shapes set by forward(), mo with the config's attention options.
static Result<ForwardOutput> forward_cached_rows(const ModelWeights& w, const ModelConfig& cfg, const Batch& batch, const ForwardOptions& opt,
                                                 ForwardOutput out, MhaOptions mo, KvCache& c) {
  const int T = batch.T, L = out.L, D = out.D, Hw = out.Hw;
  const int P = kv_reusable_rows(c, w, cfg, batch, opt), n = T - P;
  if (P == 0) {
    c.clear();
    c.weights = &w;
    c.weights_stamp = weights_stamp(w);
    c.cfg = cfg;
    c.want_logits = opt.want_logits, c.skip_final_mlp = opt.skip_final_mlp, c.keep_layer_io = opt.keep_layer_io;
    c.next_tokens_k = opt.next_tokens_k, c.int8_products = opt.int8_products;
  }
  auto cancel = [&] {  // the cache is half-written: forget it
    c.clear();
    return Error{ErrorKind::Cancelled, "The forward pass was cancelled by a newer request."};
  };
  StageTimes* st = opt.times;
  if (st) st->passes.fetch_add(1);
  StageClock clock(st, Stage::MapsAlloc);
  ForwardOutput* spare = opt.reuse;
  // The spare's logits and layer rows: most likely views of the cache's blocks, dropped so the
  // rows they read may be written; a block it held alone (one the cache has left: an edit
  // under a view wrote a fresh one) is taken for the next fresh block, its pages faulted in.
  MatR spare_logits;
  std::vector<MatR> spare_in, spare_out;  // L x (>= T, D), or empty
  if (spare) {
    spare_logits = spare->logits.take();
    for (SharedRows& m : spare->attn_in) spare_in.push_back(m.take());
    for (SharedRows& m : spare->attn_out) spare_out.push_back(m.take());
    spare->attn_in.clear();
    spare->attn_out.clear();
  }
  auto spare_rows = [](std::vector<MatR>& v, int l) { return l < static_cast<int>(v.size()) ? std::move(v[static_cast<size_t>(l)]) : MatR(); };
  const size_t per_layer = static_cast<size_t>(Hw) * T * T;
  // Not zeroed: each kept row is copied and its hidden tail zeroed below, and attend_head
  // writes every cell of the rows it computes (a 33 MB memset on the 1B shape otherwise).
  zeroed_maps(out.attention, spare ? &spare->attention : nullptr, per_layer * L, maps_room(out, opt), false);
  clock.next(Stage::Embed);
  MatR x = embed(w, cfg, batch, P).bottomRows(n);  // (n, D) the new rows
  clock.stop();
  MatR a_in, a_out, m_in, post;
  c.kv.resize(static_cast<size_t>(L));
  if (opt.keep_layer_io) c.attn_in.resize(static_cast<size_t>(L)), c.attn_out.resize(static_cast<size_t>(L));
  for (int l = 0; l < L; ++l) {
    if (opt.cancelled && opt.cancelled()) return cancel();
    const LayerWeights& lw = w.layers[static_cast<size_t>(l)];
    refresh_layer_options(cfg, w, l, mo);
    mo.lengths = nullptr;
    mo.ablated = nullptr;
    mo.times = st;
    clock.next(Stage::Norm);
    attention_input(w, lw, x, a_in);  // (n, D)
    clock.stop();
    float* maps = out.attention.data() + per_layer * l;  // (Hw, T, T)
    out.no_key_rows += mha_forward_rows(lw, a_in, P, mo, c.kv[static_cast<size_t>(l)], a_out, maps);
    if (opt.cancelled && opt.cancelled()) return cancel();
    clock.next(Stage::KvCopy);
    // The kept rows of each map: row t's columns [0, t], the rest is 0. Memory-bound (1.5 floats
    // moved per cell: 16 "flops" each), so GPT-2's 0.8 MB a layer is worth both threads.
    parallel_for(Hw, 16.0 * Hw * P * T, [&](int64_t h) {
      for (int t = 0; t < P; ++t) {
        float* row = maps + (static_cast<size_t>(h) * T + t) * T;
        std::copy_n(c.kept_map_row(Hw, l, h, t), t + 1, row);
        std::fill(row + t + 1, row + T, 0.0f);
      }
    });
    const bool mlp = !(l == L - 1 && opt.skip_final_mlp && !(w.trained() && opt.want_logits));
    clock.stop();
    finish_layer(w, lw, mlp, a_out, x, m_in, post, st);
    clock.next(Stage::KvCopy);
    if (opt.keep_layer_io) {  // views of the cache's rows, as the logits (a cancelled pass then writes no row a view reads)
      RowsBlock& bi = c.attn_in[static_cast<size_t>(l)];
      RowsBlock& bo = c.attn_out[static_cast<size_t>(l)];
      bi.write_rows(P, T, D, kKvMapsRoom, spare_rows(spare_in, l)).middleRows(P, n) = a_in;
      bo.write_rows(P, T, D, kKvMapsRoom, spare_rows(spare_out, l)).middleRows(P, n) = a_out;
      out.attn_in.push_back(bi.view(T));
      out.attn_out.push_back(bo.view(T));
    }
  }
  reserve_rows(c.out, T, D);
  c.out.middleRows(P, n) = x;
  copy_into(out.out, spare ? &spare->out : nullptr, c.out.topRows(T));
  if (w.trained() && opt.want_logits && opt.next_tokens_k > 0) {
    // Next tokens kept (next_tokens.h): the rows pending (next_done, a deferred pass's) and row
    // P - 1, whose target is new, from their kept stream (the same bits), and the new rows.
    const int first = c.next_done = std::min(c.next_done, std::max(P - 1, 0));
    if (opt.defer_next_tokens) {  // later, from the cache (finish_next_tokens)
      c.next.resize(T, std::min(opt.next_tokens_k, w.vocab_size()));
      out.next_pending = true;
    } else {
      clock.next(Stage::Logits);
      MatR fresh;  // (T - first, V)
      logits_of(w, first < P ? MatR(c.out.middleRows(first, T - first)) : x, fresh);
      clock.next(Stage::Loss);
      out.loss = set_pending_next_tokens(c, opt.next_tokens_k, first, fresh, batch.sentences[0].tokens, &out.loss_tokens);
      out.next = c.next;
    }
  } else if (w.trained() && opt.want_logits) {
    clock.next(Stage::Logits);
    const int t0 = std::max(P - 1, 0);
    MatR fresh;  // (n, V)
    logits_of(w, x, fresh);
    clock.next(Stage::KvCopy);
    // (T, V), 66 MB at T = 129 on the 1B shape: the output shares the cache's rows (a view)
    // instead of a copy. Rows an earlier output still reads are never written: an edit under
    // them writes into a fresh block (RowsBlock::write_rows).
    MatR* kept = &c.logits.write_rows(P, T, fresh.cols(), kKvMapsRoom, std::move(spare_logits));  // (>= T, V)
    kept->middleRows(P, n) = fresh;
    out.logits = c.logits.view(T);
    clock.next(Stage::Loss);
    const std::vector<Token>& tok = batch.sentences[0].tokens;
    c.nll.resize(static_cast<size_t>(std::max(T - 1, 0)));
    parallel_for(std::max(T - 1 - t0, 0), 4.0 * (T - 1 - t0) * fresh.cols(), [&](int64_t i) {
      c.nll[static_cast<size_t>(t0 + i)] = row_nll(kept->row(t0 + i), tok[static_cast<size_t>(t0 + i) + 1].id);
    });
    out.loss = cache_loss(c, &out.loss_tokens);
  }
  clock.next(Stage::KvCopy);
  c.tokens = batch.sentences[0].tokens;
  if (c.maps_lent) {  // the caller lends this output's maps next (KvCache::lend_maps): none kept here
    c.drop_maps();
  } else {
    // The maps kept for the next request: only the rows computed now are written, into a block
    // with room for kKvMapsRoom more tokens (a full copy of the maps each keystroke, 33 MB on
    // the 1B shape, cost as much as the copy of the kept rows into the output). A block too
    // small takes every row, laid out afresh.
    int from = P;
    if (c.maps_rows < T) {
      const int S = T + kKvMapsRoom;
      c.attention.reset();  // freed before the new block: no two at once
      c.attention_floats = static_cast<size_t>(L) * Hw * S * S;
      c.attention.reset(new float[c.attention_floats]);  // uninitialised: only rows' columns [0, t] are ever read
      c.maps_rows = S;
      from = 0;
    }
    parallel_for(static_cast<int64_t>(L) * Hw, 0.5 * L * Hw * (T - from) * T, [&](int64_t lh) {
      const int l = static_cast<int>(lh / Hw), h = static_cast<int>(lh % Hw);
      for (int t = from; t < T; ++t)
        std::copy_n(out.attention.data() + per_layer * l + (static_cast<size_t>(h) * T + t) * T, t + 1, c.map_row(Hw, l, h, t));
    });
  }
  if (spare) *spare = ForwardOutput{};
  c.reused = P;
  c.computed = n;
  out.kv_reused = P;
  out.kv_computed = n;
  return out;
}

// Encoders' masked-LM head on x (B*T, D): h = LN(gelu(x W_t + b_t)); logits = h U^T + bias
// (B*T, V); the loss is the mean cross-entropy of the masked tokens' own ids (Token::masked_id).
static void encoder_head_logits(const ModelWeights& w, const MatR& x, MatR& logits) {
  MatR h = x * w.mlm_dense;  // (N, D)
  h.rowwise() += w.mlm_dense_b;
  activate_matrix(w.arch.activation(), h);  // the head's activation is the MLP's (hidden_act)
  MatR hn;
  layer_norm(h, w.mlm_ln_g, w.mlm_ln_b, hn, w.ln_eps);
  unembed(w, hn, logits);  // (N, V)
  if (w.mlm_bias.size() == logits.cols()) logits.rowwise() += w.mlm_bias;
}

void stream_logits(const ModelWeights& w, const MatR& x, MatR& logits) {
  if (w.arch.encoder()) encoder_head_logits(w, x, logits);
  else logits_of(w, x, logits);
}

// logits: (B*T, V), written here (the storage of a spare's, or empty), then kept by out.
static void encoder_logits(const ModelWeights& w, const MatR& x, const Batch& batch, ForwardOutput& out, MatR logits) {
  const int B = batch.B(), T = batch.T;
  encoder_head_logits(w, x, logits);  // (B*T, V)
  double total = 0;
  int n = 0;
  for (int b = 0; b < B; ++b)
    for (int t = 0; t < batch.lengths[b]; ++t) {
      const int target = batch.sentences[b].tokens[t].masked_id;
      if (target < 0 || target >= logits.cols()) continue;
      const auto row = logits.row(static_cast<Eigen::Index>(b) * T + t);
      const float mx = row.maxCoeff();
      total += mx + std::log((row.array() - mx).exp().sum()) - row(target);
      ++n;
    }
  out.loss = n ? total / n : 0.0;
  out.loss_tokens = n;
  out.logits = SharedRows(std::move(logits));
}

// The incremental forward, with an append of 1-3 rows (fewer than kFewRowSplitRows) run the
// faster of the two ways its weights can be streamed (KvCache::SplitTiming, FewRowSplit): bit
// for bit the same result. More rows take the threads their flops ask (packed_gemm.h).
static Result<ForwardOutput> forward_cached(const ModelWeights& w, const ModelConfig& cfg, const Batch& batch, const ForwardOptions& opt,
                                            ForwardOutput out, MhaOptions mo, KvCache& c) {
  const int n = batch.T - kv_reusable_rows(c, w, cfg, batch, opt);
  if (n <= 0 || n >= kFewRowSplitRows) return forward_cached_rows(w, cfg, batch, opt, std::move(out), mo, c);
  const bool split = c.split.choose();
  FewRowSplit scope(split);
  Result<ForwardOutput> r = forward_cached_rows(w, cfg, batch, opt, std::move(out), mo, c);
  if (r) c.split.record(split, scope.products_ms());  // the products it splits, not the pass's copies and faults
  return r;
}

Result<ForwardOutput> forward(const ModelWeights& w, const ModelConfig& cfg, const Batch& batch, const ForwardOptions& opt) {
  if (Status s = check_fit(w, cfg); !s) return s.error();
  Bf16Products products(opt.bf16_products);
  Int8Products int8(opt.int8_products);
  ForwardOutput out;
  out.B = batch.B();
  out.T = batch.T;
  out.D = cfg.d_model;
  out.H = cfg.num_heads;
  out.L = cfg.num_layers;
  MhaOptions mo = mha_options(cfg);
  mo.lengths = batch.lengths.data();
  mo.cancelled = opt.cancelled ? &opt.cancelled : nullptr;
  out.Hw = weight_heads(mo);
  if (batch.empty()) return out;  // nothing to attend over: no attention, no NaN
  const int64_t attention_bytes = int64_t(4) * out.L * out.B * out.Hw * batch.T * batch.T;
  if (attention_bytes > kMaxAttentionBytes)
    return Error{ErrorKind::InvalidArgument,
                 "These " + std::to_string(out.B) + " sentences of up to " + std::to_string(batch.T) + " tokens would need " +
                     std::to_string(attention_bytes >> 20) + " MiB for the attention maps (the limit is " +
                     std::to_string(kMaxAttentionBytes >> 20) + " MiB): use fewer sentences, a shorter context, or fewer layers or heads."};
  if (opt.ablate && static_cast<int>(opt.ablate->size()) != cfg.num_layers * cfg.num_heads)
    return Error{ErrorKind::InvalidArgument, "The head ablation list must have num_layers x num_heads entries."};
  if (opt.trace) {
    const TraceRequest& r = *opt.trace;
    if (r.layer < 0 || r.layer >= out.L || r.batch < 0 || r.batch >= out.B || r.head < 0 || r.head >= out.H)
      return Error{ErrorKind::InvalidArgument, "The step-through asks for layer " + std::to_string(r.layer) + ", sentence " +
                                                   std::to_string(r.batch) + ", head " + std::to_string(r.head) +
                                                   ", which this model does not have."};
  }

  if (opt.kv_cache && kv_cacheable(w, cfg, batch, opt)) {  // the incremental forward, when its cache fits the budget
    KvCache& c = *opt.kv_cache;
    if (Status fits = check_memory(kv_cache_bytes(w, cfg, batch.T, opt), "The K/V cache",
                                   "shorten the text or use a smaller model (the forward then runs in full each time)");
        fits) {
      c.note.clear();
      return forward_cached(w, cfg, batch, opt, std::move(out), mo, c);
    } else {
      c.clear();
      c.note = fits.error().message;
    }
  }

  const int B = out.B, T = out.T, L = out.L;
  const ForwardHook* hook = opt.hook;
  const int start = hook ? hook->start_layer : 0;
  if (hook) {
    const Eigen::Index BT = static_cast<Eigen::Index>(B) * T;
    auto fits = [&](const MatR* m) { return m && m->rows() == BT && m->cols() == out.D; };
    if (start < 0 || start >= L || (start > 0 && !fits(hook->start_resid)) ||
        (hook->attn_add && (hook->add_layer < start || hook->add_layer >= L || !fits(hook->attn_add))))
      return Error{ErrorKind::InvalidArgument, "The forward hook asks for a layer this model does not have, or a matrix that is not (B*T, D)."};
    if (hook->resid) hook->resid->assign(L, MatR());
    if (hook->post_mid) hook->post_mid->assign(L, MatR());
    if (hook->post_mlp) hook->post_mlp->assign(L, MatR());
  }
  StageTimes* st = opt.times;
  if (st) st->passes.fetch_add(1);
  StageClock clock(st, Stage::MapsAlloc);
  ForwardOutput* spare = opt.reuse;
  const size_t per_layer = static_cast<size_t>(B) * out.Hw * T * T;
  zeroed_maps(out.attention, spare ? &spare->attention : nullptr, per_layer * L, maps_room(out, opt));
  clock.next(Stage::Embed);
  MatR x = start > 0 ? *hook->start_resid : embed(w, cfg, batch);  // (B*T, D)
  clock.stop();
  MatR a_in, a_out, m_in, post;
  if (opt.keep_layer_io) out.attn_in.resize(start), out.attn_out.resize(start);  // skipped layers: empty
  for (int l = start; l < L; ++l) {
    if (hook && hook->resid) (*hook->resid)[l] = x;
    if (opt.cancelled && opt.cancelled()) return Error{ErrorKind::Cancelled, "The forward pass was cancelled by a newer request."};
    const LayerWeights& lw = w.layers[l];
    refresh_layer_options(cfg, w, l, mo);
    mo.ablated = opt.ablate ? opt.ablate->data() + static_cast<size_t>(l) * cfg.num_heads : nullptr;
    mo.times = st;
    // attention sub-block (post-norm: the attention reads x itself)
    clock.next(Stage::Norm);
    attention_input(w, lw, x, a_in);  // (B*T, D)
    clock.stop();
    out.no_key_rows += mha_forward(lw, a_in, B, T, mo, a_out, out.attention.data() + per_layer * l);
    if (opt.cancelled && opt.cancelled()) return Error{ErrorKind::Cancelled, "The forward pass was cancelled by a newer request."};
    if (opt.trace && opt.trace->layer == l) {
      const int b = opt.trace->batch;
      const MatR x_b = a_in.middleRows(static_cast<Eigen::Index>(b) * T, T);  // (T, D)
      out.trace = head_trace(lw, x_b, batch.lengths[b], opt.trace->head, mo);
    }
    if (hook && hook->attn_add && hook->add_layer == l) a_out += *hook->attn_add;
    const bool mlp = !(l == L - 1 && opt.skip_final_mlp && !(w.trained() && opt.want_logits));
    finish_layer(w, lw, mlp, a_out, x, m_in, post, st, hook && hook->post_mid ? &(*hook->post_mid)[l] : nullptr,
                 hook && hook->post_mlp ? &(*hook->post_mlp)[l] : nullptr);
    clock.next(Stage::Residual);
    zero_padding(x, batch);
    if (opt.keep_layer_io) {
      keep_layer_rows(out.attn_in, spare ? &spare->attn_in : nullptr, a_in);
      keep_layer_rows(out.attn_out, spare ? &spare->attn_out : nullptr, a_out);
    }
    clock.stop();
  }
  copy_into(out.out, spare ? &spare->out : nullptr, x);
  MatR logits;  // (B*T, V), written below into the spare's storage where it held it alone
  if (spare && w.trained() && opt.want_logits && (!w.arch.encoder() || w.arch.mlm_head)) logits = spare->logits.take();
  if (spare) *spare = ForwardOutput{};

  if (w.arch.encoder()) {
    if (w.trained() && opt.want_logits && w.arch.mlm_head) encoder_logits(w, x, batch, out, std::move(logits));
    return out;
  }
  if (w.trained() && opt.want_logits) {
    clock.next(Stage::Logits);
    logits_of(w, x, logits);  // (B*T, V)
    clock.next(Stage::Loss);
    out.loss = decoder_loss(batch, B * T, [&](int, int) -> const MatR& { return logits; }, &out.loss_tokens);
    out.logits = SharedRows(std::move(logits));
  }
  return out;
}

}  // namespace headmap
