#include "core/inspect/passport.h"

#include <algorithm>
#include <cstdio>

namespace headmap {

static std::string join_shape(const std::vector<std::string>& parts) {
  std::string s = "(";
  for (size_t i = 0; i < parts.size(); ++i) s += (i ? ", " : "") + parts[i];
  return s + ")";
}

std::string PassportStep::symbolic_str() const { return join_shape(symbolic); }

std::string PassportStep::concrete_str() const {
  std::vector<std::string> parts;
  for (int64_t d : concrete) parts.push_back(std::to_string(d));
  return join_shape(parts);
}

const PassportStep* Passport::find(const std::string& id) const {
  for (const PassportStep& s : steps)
    if (s.id == id) return &s;
  return nullptr;
}

static std::string number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", v);
  return buf;
}

Passport make_passport(const ModelConfig& cfg, int B, int T, int V, int P, const Arch* arch_in) {
  Passport p;
  p.cfg = cfg;
  p.B = B;
  p.T = T;
  p.V = V;
  const Arch gpt2;
  const Arch& fa = arch_in ? *arch_in : gpt2;
  const bool fam = !fa.is_gpt2_block();
  const int64_t b = B, t = T, D = cfg.d_model, H = std::max(cfg.num_heads, 1), dh = cfg.head_dim > 0 ? cfg.head_dim : D / H, L = cfg.num_layers;
  const int64_t kvH = std::max(cfg.kv_heads(), 1), G = std::max<int64_t>(H / kvH, 1), Dkv = kvH * dh;
  const bool gqa = kvH < H;
  const Pitfalls& pf = cfg.pitfalls;
  const bool trained = V > 0;
  const std::string attn = "attention (per layer)", mlp = "MLP (per layer)";
  const int64_t btd = b * t * D, bhtt = b * H * t * t;
  auto add = [&](PassportStep s) {
    if (!s.view && s.bytes == 0) s.bytes = shape_numel(s.concrete) * 4;
    p.steps.push_back(std::move(s));
  };
  const Shape sBTD{b, t, D}, sBHTT{b, H, t, t}, sBHTd{b, H, t, dh}, sBTHd{b, t, H, dh};
  const std::vector<std::string> yBTD{"B", "T", "D"}, yBHTT{"B", "H", "T", "T"}, yBHTd{"B", "H", "T", "d_head"},
      yBTHd{"B", "T", "H", "d_head"};

  // input
  add({"tokens", "input", "tokens", trained ? "vocabulary ids" : std::string("tokenize(text), ") + tokenizer_name(cfg.tokenizer) + " mode",
       {"B", "T"}, {b, t}, 0, b * t * 4, false, B > 1 ? "shorter sentences are padded to T" : ""});
  add({"x", "input", "embed + position",
       std::string(trained ? "E[token]" : "hash(token)") + (cfg.positional ? (trained ? " + P[t]" : " + PE(t)") : ""),
       yBTD, sBTD, cfg.positional ? btd : 0, 0, false,
       trained ? "" : "random init: each token's vector comes from a hash of its text and the seed"});

  // attention, one layer
  const bool rms = fam && fa.norm == NormKind::RMSNorm;
  const std::string norm_name = rms ? (fa.norm_plus_one ? "RMSNorm (1 + w)" : "RMSNorm") : "LayerNorm";
  if (fam) {
    p.family = fa.name + ": " + arch_steps(fa, static_cast<int>(H), static_cast<int>(dh));
    if (fa.embed_scale) p.steps.back().formula += " \xC2\xB7 \xE2\x88\x9A" "D";
    if (fa.rotary()) p.steps.back().formula = "E[token]" + std::string(fa.embed_scale ? " \xC2\xB7 \xE2\x88\x9A" "D" : ""),
                     p.steps.back().note = "no position table: RoPE rotates Q and K in every layer";
  }
  // Encoders (BERT, RoBERTa, DistilBERT): the token types and the embeddings' LayerNorm are
  // steps of their own; the layers are post-norm (x = LN1(x + attn(x)); x = LN2(x + mlp(x))).
  const bool post = fam && fa.placement == NormPlacement::PostNorm;
  if (fam && fa.token_types > 0)
    add({"x_types", "input", "+ token types", "x + T[type]", yBTD, sBTD, btd, 0, false,
         "type 0 for sentence A, 1 for B (" + std::to_string(fa.token_types) + " rows in the table)"});
  if (fam && fa.embed_norm)
    add({"x_norm", "input", "embedding LayerNorm", "LN_emb(x)", yBTD, sBTD, 8 * btd, 0, false, "the layers read the normed embeddings"});
  if (!post)
    add({"attn_in", attn, norm_name + " 1", (rms ? "RMSNorm\xE2\x82\x81(x)" : "LN\xE2\x82\x81(x)"), yBTD, sBTD, 8 * btd, 0, false,
         fam && fa.placement == NormPlacement::Parallel ? "parallel: attention and MLP both read x (GPT-NeoX)" : "pre-LN: the input of attention"});
  for (const char* m : {"q", "k", "v"}) {
    const std::string M(1, static_cast<char>(m[0] - 32));
    const bool kv = M != "Q" && gqa;
    const int64_t width = kv ? Dkv : (M == "Q" ? H * dh : fam ? Dkv : D);
    std::string note;
    if (M == "Q" && fam)
      note = "W_Q is (D, H\xC2\xB7" "d_head) = (" + std::to_string(D) + ", " + std::to_string(H * dh) + ")" +
             (gqa ? "; W_K, W_V are (D, kv_heads\xC2\xB7" "d_head)" : "") + (fa.attn_bias ? "" : "; no biases");
    else if (M == "Q")
      note = gqa ? "W_Q is (D, D); W_K, W_V are (D, kv_heads\xC2\xB7" "d_head); one (D, D + 2\xC2\xB7" "kv_heads\xC2\xB7" "d_head) GEMM"
                 : "W_Q, W_K, W_V are (D, D) for any H; headmap runs them as one (D, 3D) GEMM";
    else if (kv)
      note = "kv_heads = " + std::to_string(kvH) + (kvH == 1 ? " (multi-query)" : " (grouped-query)") + ": W_" + M + " is (D, " +
             std::to_string(Dkv) + "), not (D, " + std::to_string(D) + ")";
    add({m, attn, M + " projection", std::string(post ? "x" : "attn_in") + " \xC2\xB7 W_" + M + " + b_" + M,
         kv || (fam && M != "Q") ? std::vector<std::string>{"B", "T", "kv_heads\xC2\xB7" "d_head"}
         : fam && H * dh != D   ? std::vector<std::string>{"B", "T", "H\xC2\xB7" "d_head"}
                                : yBTD,
         Shape{b, t, width}, 2 * b * t * D * width + b * t * width, 0,
         false, note});
  }
  if (pf.interleaved_reshape) {
    add({"q_view", attn, "split heads (pitfall)", "Q.view(B, T, d_head, H)", {"B", "T", "d_head", "H"}, {b, t, dh, H}, 0, 0,
         true, "PITFALL: head h now reads features h, h+H, h+2H, ... (interleaved)"});
    add({"q_heads", attn, "heads first", ".permute(0, 3, 1, 2)", yBHTd, sBHTd, 0, 0, true, "K and V are split the same way"});
  } else if (pf.no_transpose) {
    add({"q_view", attn, "split heads", "Q.view(B, T, H, d_head)", yBTHd, sBTHd, 0, 0, true,
         "d_head = D/H = " + std::to_string(dh) + "; right, but read next as (B, H, T, d_head)"});
    add({"q_heads", attn, "heads first (pitfall)", ".view(B, H, T, d_head), no .transpose(1, 2)", yBHTd, sBHTd, 0, 0, true,
         "PITFALL: the same memory re-read: 'head' h holds rows of tokens h\xC2\xB7T/H .., so each map mixes positions and heads"});
  } else {
    add({"q_view", attn, "split heads", "Q.view(B, T, H, d_head)", yBTHd, sBTHd, 0, 0, true,
         (fam && cfg.head_dim > 0 ? "d_head = " + std::to_string(dh) + " (the weights' own)" : "d_head = D/H = " + std::to_string(dh)) +
             "; head h reads features h\xC2\xB7" "d_head .. (h+1)\xC2\xB7" "d_head-1"});
    add({"q_heads", attn, "heads first", ".transpose(1, 2)", yBHTd, sBHTd, 0, 0, true,
         gqa ? "H now acts as a batch axis" : "K and V are split the same way; H now acts as a batch axis"});
  }
  if (fam && fa.qk_norm)
    add({"qk_norm", attn, "q/k norm", "RMSNorm(q_h), RMSNorm(k_h) over d_head", yBHTd, sBHTd, 8 * b * t * (H + kvH) * dh, 0, false,
         "each head's q and k normalised before RoPE"});
  if (fam && fa.rotary()) {
    const int rot = fa.rotary_dims(static_cast<int>(dh));
    char theta[48];
    std::snprintf(theta, sizeof theta, "%g", fa.rope_theta);
    add({"rope", attn, "rotate Q and K by position (RoPE)", "q\xC2\xB7" "cos(t\xCE\xB8) + rotate_half(q)\xC2\xB7" "sin(t\xCE\xB8)", yBHTd, sBHTd,
         6 * b * t * (H + kvH) * rot, 0, false,
         "pairs (i, i + " + std::to_string(rot / 2) + ") of the first " + std::to_string(rot) + " of " + std::to_string(dh) +
             " dims turn by t\xC2\xB7\xCE\xB8_i, \xCE\xB8 base " + theta +
             (fa.rope_scaling == RopeScaling::Llama3 ? ", llama3 scaling" : fa.rope_scaling == RopeScaling::Linear ? ", linear scaling" : "") +
             "; K the same"});
  }
  if (gqa) {
    add({"k_heads", attn, "split K/V heads", pf.no_transpose ? "K.view(B, kv_heads, T, d_head)" : "K.view(B, T, kv_heads, d_head).transpose(1, 2)",
         {"B", "kv_heads", "T", "d_head"}, {b, kvH, t, dh}, 0, 0, true, "V is split the same way"});
    add({"k_repeat", attn, "share K/V heads", ".repeat_interleave(H/kv_heads, dim=1)", yBHTd, sBHTd, 0, 0, true,
         "K/V head g serves query heads g\xC2\xB7" "G .. (g+1)\xC2\xB7" "G-1, G = H/kv_heads = " + std::to_string(G) +
             "; a broadcast (expand), no copy; V the same"});
  }
  add({"scores", attn, "scores", "Q_h \xC2\xB7 K_h\xE1\xB5\x80", yBHTT, sBHTT, 2 * bhtt * dh, 0, false, "one (T, T) map per head"});
  add({"scaled", attn, "scale", pf.scale_by_d_model ? "\xC3\xB7 \xE2\x88\x9A" "D" : "\xC3\xB7 \xE2\x88\x9A" "d_head",
       yBHTT, sBHTT, bhtt, 0, false,
       pf.scale_by_d_model ? "PITFALL: under-scaled by \xE2\x88\x9AH: flatter weights"
                           : "\xE2\x88\x9A" "d_head = " + number(std::sqrt(static_cast<double>(dh)))});
  if (fam && fa.score_scale != ScoreScale::InvSqrtHeadDim) {
    p.steps.back().formula = fa.score_scale == ScoreScale::None ? "\xC3\x97 1 (no scaling)" : "\xC3\xB7 \xE2\x88\x9A" "query_pre_attn_scalar";
    p.steps.back().note = fa.score_scale == ScoreScale::None ? "GPT-Neo does not scale its scores" : "scale " + number(fa.score_scale_for(static_cast<int>(dh)));
  }
  if (fam && fa.attn_softcap > 0)
    add({"softcap", attn, "soft-cap", "c\xC2\xB7tanh(s / c), c = " + number(fa.attn_softcap), yBHTT, sBHTT, 3 * bhtt, 0, false,
         "scores stay within \xC2\xB1" "c"});
  std::string mask_formula = cfg.causal ? (pf.reversed_mask ? "future only (s > t)" : "causal (s \xE2\x89\xA4 t)") : "none";
  for (int l = 0; fam && l < static_cast<int>(fa.windows.size()); ++l)
    if (fa.windows[static_cast<size_t>(l)] > 0) {
      mask_formula += "; local layers: t \xE2\x88\x92 s < " + std::to_string(fa.windows[static_cast<size_t>(l)]);
      break;
    }
  if (B > 1) mask_formula += cfg.causal ? " + padding" : " except padding";
  add({"masked", attn, "mask", "masked_fill(hidden, \xE2\x88\x92\xE2\x88\x9E)", yBHTT, sBHTT, 0, 0, false,
       "keys visible: " + mask_formula + (pf.reversed_mask && cfg.causal ? "  PITFALL: polarity reversed, last row sees nothing" : "")});
  add({"weights", attn, "softmax", "softmax over keys", yBHTT, sBHTT, 5 * bhtt, 0, false, "each row sums to 1"});
  if (pf.head_averaged)
    add({"weights_mean", attn, "average heads (pitfall)", "weights.mean(dim=1)", {"B", "T", "T"}, {b, t, t}, bhtt, 0, false,
         "PITFALL: the per-head patterns are averaged away"});
  add({"ctx", attn, "weights \xC2\xB7 V", "weights \xC2\xB7 V_h", yBHTd, sBHTd, 2 * bhtt * dh, 0, false, "each head's output"});
  add({"ctx_t", attn, "heads back", ".transpose(1, 2)", yBTHd, sBTHd, 0, 0, true, ""});
  if (fam && H * dh != D)
    add({"concat", attn, "concatenate", ".contiguous().view(B, T, H\xC2\xB7" "d_head)", {"B", "T", "H\xC2\xB7" "d_head"}, {b, t, H * dh}, 0, 0, false,
         "H\xC2\xB7" "d_head = " + std::to_string(H * dh) + " \xE2\x89\xA0 D: W_O maps it back to D"});
  else
    add({"concat", attn, "concatenate", ".contiguous().view(B, T, D)", yBTD, sBTD, 0, 0, false, "copy into (B, T, D): heads side by side"});
  if (pf.no_w_o)
    add({"out", attn, "output (pitfall)", "= concat (no W_O)", yBTD, sBTD, 0, 0, false, "PITFALL: heads are never mixed"});
  else
    add({"out", attn, "output projection", "concat \xC2\xB7 W_O + b_O", yBTD, sBTD, 2 * btd * D + btd, 0, false, "W_O mixes the heads"});
  add({"resid1", attn, "residual", "x + out", yBTD, sBTD, btd, 0, false, ""});
  if (post)
    add({"attn_norm", attn, norm_name + " 1", "LN\xE2\x82\x81(x + out)", yBTD, sBTD, 8 * btd, 0, false,
         "post-norm: after the residual; the MLP reads it"});

  // MLP, one layer
  if (fam) {  // the family's MLP: F wide, gated or not
    const int64_t F = fa.mlp_width > 0 ? fa.mlp_width : 4 * D;
    if (!post)
      add({"mlp_in", mlp, norm_name + " 2", rms ? "RMSNorm\xE2\x82\x82(x)" : "LN\xE2\x82\x82(x)", yBTD, sBTD, 8 * btd, 0, false,
           fa.placement == NormPlacement::Sandwich ? "Gemma 2/3: attention's output was normed too (four norms per layer)" : ""});
    if (fa.gated())
      add({"fc", mlp, "gate \xC3\x97 up", std::string(fa.mlp == MlpKind::SiluGated ? "SiLU" : "GELU") + "(\xC2\xB7 W_gate) \xE2\x8A\x99 (\xC2\xB7 W_up)",
           {"B", "T", "F"}, {b, t, F}, 2 * 2 * btd * F + 12 * b * t * F, 0, false, "F = " + std::to_string(F) + ": two projections, one gates the other"});
    else
      add({"fc", mlp, "expand + GELU", "GELU(\xC2\xB7 W_fc + b_fc)", {"B", "T", "F"}, {b, t, F}, 2 * btd * F + 11 * b * t * F, 0, false,
           fa.mlp == MlpKind::GeluErf ? "GELU, erf form" : "GELU, tanh form"});
    add({"proj", mlp, "project back", "\xC2\xB7 W_down", yBTD, sBTD, 2 * btd * F + btd, 0, false, ""});
  } else {
  add({"mlp_in", mlp, "LayerNorm 2", "LN\xE2\x82\x82(x)", yBTD, sBTD, 8 * btd, 0, false, ""});
  add({"fc", mlp, "expand + GELU", "GELU(\xC2\xB7 W_fc + b_fc)", {"B", "T", "4D"}, {b, t, 4 * D}, 2 * btd * 4 * D + 4 * btd + 10 * 4 * btd, 0, false, ""});
  add({"proj", mlp, "project back", "\xC2\xB7 W_proj + b_proj", yBTD, sBTD, 2 * btd * 4 * D + btd, 0, false, ""});
  }
  add({"resid2", mlp, "residual", "x + mlp", yBTD, sBTD, btd, 0, false, post ? "" : "the next layer starts from here"});
  if (post)
    add({"mlp_norm", mlp, norm_name + " 2", "LN\xE2\x82\x82(x + mlp)", yBTD, sBTD, 8 * btd, 0, false,
         "post-norm: after the residual; the next layer starts from here"});

  // output
  add({"out_final", "output", "after L layers", "x after layer L", yBTD, sBTD, 0, 0, false,
       "L = " + std::to_string(L) + " layers, same shape in and out"});
  if (trained) {
    add({"logits", "output", "next-token logits", "LN_f(x) \xC2\xB7 E\xE1\xB5\x80", {"B", "T", "V"}, {b, t, V},
         8 * btd + 2 * btd * V, 0, false,
         !fam ? "tied unembedding"
              : std::string(fa.tied ? "tied unembedding" : "own lm_head (untied)") +
                    (fa.final_softcap > 0 ? ", then c\xC2\xB7tanh(logits / c), c = " + number(fa.final_softcap) : "")});
  }
  if (pf.head_averaged)
    add({"attention", "output", "attention weights", "every layer's mean map", {"L", "B", "1", "T", "T"}, {L, b, 1, t, t}, 0, 0,
         false, "PITFALL: one averaged map per sentence; the head axis has length 1"});
  else
    add({"attention", "output", "attention weights", "every layer's weights", {"L", "B", "H", "T", "T"}, {L, b, H, t, t}, 0, 0,
         false, "what the heatmaps draw"});

  for (const PassportStep& s : p.steps) {
    const bool per_layer = s.section == attn || s.section == mlp;
    p.total_flops += s.flops * (per_layer ? L : 1);
  }
  if (fam) {  // the family's own parameter table, from its shapes
    const int64_t F = fa.mlp_width > 0 ? fa.mlp_width : 4 * D, Dq = H * dh;
    const int64_t nb = fa.norm == NormKind::LayerNorm ? 2 : 1;
    auto row = [&](std::string n, std::string f, int64_t c, bool a) { p.params.push_back({std::move(n), std::move(f), c, a}); };
    row(fa.attn_bias ? "W_Q + b_Q" : "W_Q", "L\xC2\xB7" "D\xC2\xB7H\xC2\xB7" "d_head", L * (D * Dq + (fa.attn_bias ? Dq : 0)), true);
    row(fa.attn_bias ? "W_K + b_K" : "W_K", "L\xC2\xB7" "D\xC2\xB7kv_heads\xC2\xB7" "d_head", L * (D * Dkv + (fa.attn_bias ? Dkv : 0)), true);
    row(fa.attn_bias ? "W_V + b_V" : "W_V", "L\xC2\xB7" "D\xC2\xB7kv_heads\xC2\xB7" "d_head", L * (D * Dkv + (fa.attn_bias ? Dkv : 0)), true);
    row(fa.out_bias ? "W_O + b_O" : "W_O", "L\xC2\xB7H\xC2\xB7" "d_head\xC2\xB7" "D", L * (Dq * D + (fa.out_bias ? D : 0)), true);
    if (fa.qk_norm) row("q/k norms", "L\xC2\xB7" "2\xC2\xB7" "d_head", L * 2 * dh, true);
    const int64_t norms = fa.placement == NormPlacement::Sandwich ? 4 : 2;
    row("norms (" + norm_name + ")", "L\xC2\xB7" + std::to_string(norms) + "\xC2\xB7" + (nb == 2 ? "2D" : "D") + " + final", (L * norms + 1) * nb * D, false);
    row(fa.gated() ? "MLP (gate, up, down)" : "MLP", fa.gated() ? "L\xC2\xB7" "3\xC2\xB7" "D\xC2\xB7" "F" : "L\xC2\xB7(2\xC2\xB7" "D\xC2\xB7" "F + F + D)",
        L * ((fa.gated() ? 3 : 2) * D * F + (fa.mlp_bias ? F + D : 0)), false);
    if (V > 0) {
      row("token embedding", "V\xC2\xB7" "D", static_cast<int64_t>(V) * D, false);
      if (!fa.tied) row("lm_head (untied)", "V\xC2\xB7" "D", static_cast<int64_t>(V) * D, false);
      if (fa.positions == PositionKind::Learned) row("position embedding", "context\xC2\xB7" "D", static_cast<int64_t>(P) * D, false);
    }
    p.kv_cache_bytes_per_token = 2 * L * Dkv * 4;
  } else {
  p.params = param_counts(cfg.d_model, static_cast<int>(Dkv), cfg.num_layers, V, P, pf.no_w_o);
  }
  for (const ParamCount& c : p.params) {
    p.total_params += c.count;
    if (c.attention) p.attention_params += c.count;
  }
  if (fam && fa.encoder()) {  // an encoder reads both ways: no cache to keep (one line, why)
    p.kv_cache_bytes_per_token = 0;
    p.kv_cache_line = "no K/V cache: an encoder reads both ways, so appending text changes every token's K and V (each run is a full forward)";
  } else {  // the K/V cache an incremental forward keeps (core/model/kv_cache.h), for every causal model
    const int64_t per_token = 2 * L * Dkv * 4, tokens = std::max(cfg.context, 1);
    p.kv_cache_bytes_per_token = per_token;
    p.kv_cache_line = "K/V cache: 2\xC2\xB7L\xC2\xB7KV\xC2\xB7" "d_head\xC2\xB7" "4 = " + human_count(per_token) + " bytes per token, " +
                      human_count(per_token * tokens) + " for " + std::to_string(tokens) + " tokens; " +
                      (gqa ? std::to_string(kvH) + " K/V head" + (kvH == 1 ? "" : "s") + " instead of " + std::to_string(H) + ": " +
                                 std::to_string(G) + "x smaller cache"
                           : "every query head has its own K/V head (" + std::to_string(H) + "): grouped-query attention would shrink it");
  }
  // The footer: what the attention total is, from the same terms as the rows above.
  const std::string n_qo = pf.no_w_o ? "" : "2\xC2\xB7";
  if (fam && fa.encoder()) {
    p.attention_formula = "fixed by " + fa.name + "'s weights";
  } else if (fam) {
    p.attention_formula = "fixed by " + fa.name + "'s weights; K/V cache " + human_count(p.kv_cache_bytes_per_token) + " bytes per token, " +
                          human_count(p.kv_cache_bytes_per_token * std::max(P, 1)) + " for " + std::to_string(std::max(P, 1)) + " tokens";
  } else if (!gqa) {
    p.attention_formula = (pf.no_w_o ? "3" : "4") + std::string("\xC2\xB7L\xC2\xB7(D\xC2\xB2 + D)") +
                          (pf.no_w_o ? " without W_O" : "") + ": the same for every H that divides D";
  } else {
    p.kv_saved = 2 * L * (D * (D - Dkv) + (D - Dkv));
    p.attention_formula = n_qo + "L\xC2\xB7(D\xC2\xB2 + D) + 2\xC2\xB7L\xC2\xB7(D\xC2\xB2 + D)\xC2\xB7kv_heads/H" +
                          std::string(pf.no_w_o ? " without W_O" : "") + ": K/V sharing saves " + human_count(p.kv_saved) +
                          " parameters against multi-head";
  }
  return p;
}

std::vector<WeightStorage> weight_storage(const ModelWeights& w) {
  struct Group {
    WeightStorage s;
    std::vector<std::string> types;  // in order of first appearance
    void add(const std::string& type, int64_t weights, int64_t bytes) {
      s.weights += weights, s.bytes += bytes;
      for (size_t a = 0, b; a <= type.size(); a = b + 1) {  // "Q4_K+Q6_K": each type once
        b = type.find('+', a);
        if (b == std::string::npos) b = type.size();
        const std::string t = type.substr(a, b - a);
        if (std::find(types.begin(), types.end(), t) == types.end()) types.push_back(t);
      }
    }
  };
  Group g[6];
  const char* names[6] = {"W_Q | W_K | W_V", "W_O", "MLP in", "MLP out", "embedding", "unembedding"};
  for (int i = 0; i < 6; ++i) g[i].s.name = names[i];
  auto packed = [](Group& gr, const PackedMatrix& m) {
    if (m.size() > 0) gr.add(m.dtype_text(), static_cast<int64_t>(m.size()), static_cast<int64_t>(m.bytes()));
  };
  auto plain = [](Group& gr, const MatR& m) {
    if (m.size() > 0) gr.add("F32", static_cast<int64_t>(m.size()), static_cast<int64_t>(m.size()) * 4);
  };
  auto rows = [](Group& gr, const NarrowRows& t) {
    if (!t.empty()) gr.add(dtype_name(t.dtype), static_cast<int64_t>(t.rows * t.cols), static_cast<int64_t>(t.bytes()));
  };
  for (const LayerWeights& lw : w.layers) {
    if (lw.plain_qkv()) plain(g[0], lw.w_q), plain(g[0], lw.w_k), plain(g[0], lw.w_v);
    else packed(g[0], lw.w_qkv);
    packed(g[1], lw.w_o);
    packed(g[2], lw.w_gate), packed(g[2], lw.w_fc);
    packed(g[3], lw.w_proj);
  }
  plain(g[4], w.tok_emb), rows(g[4], w.tok_emb16);
  plain(g[5], w.lm_head), rows(g[5], w.lm_head16);
  std::vector<WeightStorage> out;
  for (Group& gr : g) {
    if (gr.s.weights == 0) continue;
    for (const std::string& t : gr.types) gr.s.type += (gr.s.type.empty() ? "" : "+") + t;
    out.push_back(gr.s);
  }
  return out;
}

std::string human_count(int64_t v) {
  char buf[32];
  if (v >= 1000000000) std::snprintf(buf, sizeof buf, "%.2fG", v / 1e9);
  else if (v >= 1000000) std::snprintf(buf, sizeof buf, "%.2fM", v / 1e6);
  else if (v >= 10000) std::snprintf(buf, sizeof buf, "%.1fk", v / 1e3);
  else std::snprintf(buf, sizeof buf, "%lld", static_cast<long long>(v));
  return buf;
}

// Display width of UTF-8 text: one column per code point (good enough for our symbols).
static int columns(const std::string& s) {
  int n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

static std::string pad(const std::string& s, int w) { return s + std::string(std::max(0, w - columns(s)), ' '); }

std::string passport_table(const Passport& p) {
  const ModelConfig& c = p.cfg;
  std::string out;
  char head[256];
  std::snprintf(head, sizeof head, "Shape passport: B=%d T=%d D=%d H=%d d_head=%d L=%d%s%s\n", p.B, p.T, c.d_model, c.num_heads,
                c.d_head(), c.num_layers, c.kv_heads() < c.num_heads ? (" kv_heads=" + std::to_string(c.kv_heads())).c_str() : "",
                c.causal ? " causal" : "");
  out += head;
  if (!p.family.empty()) out += p.family + "\n";
  std::vector<std::vector<std::string>> rows;
  rows.push_back({"step", "formula", "symbolic", "concrete", "FLOPs", "bytes", "note"});
  std::string section;
  for (const PassportStep& s : p.steps) {
    if (s.section != section) {
      section = s.section;
      rows.push_back({"-- " + section, "", "", "", "", "", ""});
    }
    rows.push_back({s.name, s.formula, s.symbolic_str(), s.concrete_str(), human_count(s.flops), s.view ? "view" : human_count(s.bytes), s.note});
  }
  std::vector<int> w(7, 0);
  for (auto& r : rows)
    for (int i = 0; i < 6; ++i) w[i] = std::max(w[i], columns(r[i]));
  for (auto& r : rows) {
    std::string line;
    if (r[0].rfind("-- ", 0) == 0) {
      out += r[0] + "\n";
      continue;
    }
    for (int i = 0; i < 7; ++i) line += pad(r[i], i < 6 ? w[i] + 2 : 0);
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line + "\n";
  }
  out += "\nParameters\n";
  int wn = 0, wf = 0;
  for (const ParamCount& pc : p.params) {
    wn = std::max(wn, columns(pc.name));
    wf = std::max(wf, columns(pc.formula));
  }
  for (const ParamCount& pc : p.params)
    out += "  " + pad(pc.name, wn + 2) + pad(pc.formula, wf + 2) + std::to_string(pc.count) + "\n";
  out += "  " + pad("attention total", wn + wf + 4) + std::to_string(p.attention_params) + "   " + p.attention_formula + "\n";
  out += "  " + pad("model total", wn + wf + 4) + std::to_string(p.total_params) + "\n";
  out += "FLOPs for the whole forward pass: " + human_count(p.total_flops) + "\n";
  if (!p.storage.empty()) {
    out += "\nWeights in memory (as the file keeps them)\n";
    int wn = 0, wt = 0;
    for (const WeightStorage& s : p.storage) wn = std::max(wn, columns(s.name)), wt = std::max(wt, columns(s.type));
    for (const WeightStorage& s : p.storage) {
      char line[96];
      std::snprintf(line, sizeof line, "%5.2f bits/weight  %s bytes", s.bits_per_weight(), human_count(s.bytes).c_str());
      out += "  " + pad(s.name, wn + 2) + pad(s.type, wt + 2) + line + "\n";
    }
  }
  return out;
}

}  // namespace headmap
