// Grouped-query and multi-query attention (chapter 001) and the forgotten .transpose(1, 2)
// (chapter 003): the three attention paths held to each other and to small references
// written here from the definitions, the passport's rows and parameter counts, the config.
//
// B = batch, T = tokens, D = d_model, H = heads, dh = D/H, kv = K/V heads, G = H/kv
#include <gtest/gtest.h>

#include "core/inspect/passport.h"
#include "core/io/config_json.h"
#include "core/model/attention.h"
#include "core/model/model.h"
#include "test_util.h"

using namespace headmap;
using namespace headmap::test;

namespace {

MhaOptions gqa(int H, int kv, bool causal = true) {
  MhaOptions o;
  o.num_heads = H;
  o.num_kv_heads = kv;
  o.causal = causal;
  return o;
}

struct Fast {
  MatR y;                // (B*T, D)
  std::vector<float> w;  // (B, Hw, T, T)
};

Fast fast(const LayerWeights& lw, const MatR& x, int B, int T, const MhaOptions& o) {
  Fast r;
  r.w.assign(static_cast<size_t>(B) * weight_heads(o) * T * T, -1.0f);
  mha_forward(lw, x, B, T, o, r.y, r.w.data());
  return r;
}

Tensor tensor3(const MatR& x, int B, int T) {
  Tensor t({B, T, static_cast<int64_t>(x.cols())});
  std::copy(x.data(), x.data() + x.size(), t.data.begin());
  return t;
}

// Softmax of one row of scores over the visible keys; hidden keys get 0.
void softmax_visible(std::vector<double>& row, const std::vector<bool>& visible) {
  double mx = -1e300, sum = 0;
  for (size_t s = 0; s < row.size(); ++s)
    if (visible[s]) mx = std::max(mx, row[s]);
  for (size_t s = 0; s < row.size(); ++s) sum += (row[s] = visible[s] ? std::exp(row[s] - mx) : 0.0);
  for (double& v : row) v = sum > 0 ? v / sum : 0.0;
}

}  // namespace

// The fast path, the per-head step-through and the course's tensor code agree under K/V
// sharing, over odd sizes, padding, both masks and the interleaved pitfall.
TEST(Gqa, ThreePathsAgree) {
  struct Case { int B, T, D, H, kv; bool causal, interleaved; };
  for (const Case c : {Case{2, 7, 24, 6, 2, true, false}, Case{1, 5, 24, 6, 1, false, false}, Case{3, 9, 30, 6, 3, true, false},
                       Case{2, 6, 32, 8, 4, true, true}, Case{1, 1, 12, 4, 2, true, false}, Case{2, 11, 40, 4, 1, true, true}}) {
    SCOPED_TRACE("B=" + std::to_string(c.B) + " T=" + std::to_string(c.T) + " D=" + std::to_string(c.D) +
                 " H=" + std::to_string(c.H) + " kv=" + std::to_string(c.kv));
    const LayerWeights lw = random_layer(c.D, 11);
    const MatR x = random_matrix(c.B * c.T, c.D, 12);
    std::vector<int> lengths(c.B, c.T);
    lengths[0] = std::max(1, c.T - 2);  // padding in the first sentence
    MhaOptions o = gqa(c.H, c.kv, c.causal);
    o.pitfalls.interleaved_reshape = c.interleaved;
    o.lengths = lengths.data();
    const Fast f = fast(lw, x, c.B, c.T, o);
    const auto ex = mha_explicit(lw, tensor3(x, c.B, c.T), o);
    // 1e-5: float32 paths that sum the same d_head-long products in different orders.
    const Tensor& w = ex.at("weights");
    ASSERT_EQ(w.data.size(), f.w.size());
    EXPECT_LT(max_abs_diff(f.w.data(), w.data.data(), f.w.size()), 1e-5f);
    EXPECT_LT(max_abs_diff(f.y.data(), ex.at("out").data.data(), f.y.size()), 1e-5f);
    for (int b = 0; b < c.B; ++b)
      for (int h = 0; h < c.H; ++h) {
        const MatR x_b = x.middleRows(static_cast<Eigen::Index>(b) * c.T, c.T);
        const HeadTrace tr = head_trace(lw, x_b, lengths[b], h, o);
        const float* fw = f.w.data() + (static_cast<size_t>(b) * c.H + h) * c.T * c.T;
        EXPECT_LT(max_abs_diff(tr.weights.data(), fw, tr.weights.size()), 1e-5f) << "b=" << b << " h=" << h;
        if (h == 0) {
          EXPECT_LT(max_abs_diff(tr.out.data(), f.y.data() + static_cast<size_t>(b) * c.T * c.D, tr.out.size()), 1e-5f);
        }
      }
  }
}

// What K/V sharing means, checked from its definition: every query head of a group reads
// the same K and V, those of the group's first head in the full (D, D) projections.
TEST(Gqa, GroupsShareTheirFirstHeadsKeysAndValues) {
  const int T = 6, D = 24, H = 6, kv = 2, G = H / kv, dh = D / H;
  const LayerWeights lw = random_layer(D, 21);
  const MatR x = random_matrix(T, D, 22);
  const MhaOptions o = gqa(H, kv);
  const LayerWeights g = kv_grouped(lw, o);
  ASSERT_EQ(g.w_k.rows(), D);
  ASSERT_EQ(g.w_k.cols(), kv * dh);  // (D, kv·d_head)
  ASSERT_EQ(g.w_v.cols(), kv * dh);
  ASSERT_EQ(g.w_qkv.cols(), D + 2 * kv * dh);
  for (int h = 0; h < H; ++h) {
    const HeadTrace tr = head_trace(lw, x, T, h, o);
    const int first = h / G * G;  // the group's first query head
    MatR k = x * lw.w_k.middleCols(first * dh, dh);
    k.rowwise() += lw.b_k.segment(first * dh, dh);
    MatR v = x * lw.w_v.middleCols(first * dh, dh);
    v.rowwise() += lw.b_v.segment(first * dh, dh);
    EXPECT_LT((tr.k - k).cwiseAbs().maxCoeff(), 1e-5f) << "head " << h;
    EXPECT_LT((tr.v - v).cwiseAbs().maxCoeff(), 1e-5f) << "head " << h;
    // The hover tooltip's raw score reads the same K, from full or from grouped weights.
    const MatR xr = x;  // rows as contiguous (D) vectors
    EXPECT_NEAR(head_score(lw, xr.row(4).data(), xr.row(2).data(), h, o), tr.scores(4, 2), 1e-4f) << "head " << h;
    EXPECT_NEAR(head_score(g, xr.row(4).data(), xr.row(2).data(), h, o), tr.scores(4, 2), 1e-4f) << "head " << h;
  }
  // kv = H is plain multi-head attention, bit for bit; the first head of each group keeps its map.
  const Fast mha = fast(lw, x, 1, T, gqa(H, 0)), same = fast(lw, x, 1, T, gqa(H, H)), shared = fast(lw, x, 1, T, o);
  EXPECT_EQ(mha.w, same.w);
  for (int h = 0; h < H; ++h) {
    const float d = max_abs_diff(mha.w.data() + h * T * T, shared.w.data() + h * T * T, T * T);
    if (h % G == 0) EXPECT_EQ(d, 0.0f) << "head " << h;
    else EXPECT_GT(d, 1e-3f) << "head " << h << " reads its group's keys, not its own";
  }
  // Weights already at (D, kv·d_head) are used as they are: the same answer.
  const Fast narrow = fast(g, x, 1, T, o);
  EXPECT_LT(max_abs_diff(narrow.w.data(), shared.w.data(), shared.w.size()), 1e-6f);
}

// The forgotten transpose, from its definition: Q (T, D) viewed (T, H, dh), whose memory is
// then read as (H, T, dh). A reference written here with flat indices, for one sentence.
TEST(NoTranspose, MatchesTheViewWithoutTranspose) {
  const int T = 5, D = 12, H = 3, dh = D / H;
  const LayerWeights lw = random_layer(D, 31);
  const MatR x = random_matrix(T, D, 32);
  MhaOptions o = gqa(H, 0, true);
  o.pitfalls.no_transpose = true;
  const Fast f = fast(lw, x, 1, T, o);
  MatR q = x * lw.w_q, k = x * lw.w_k;  // (T, D), row-major: flat index = t·D + c
  q.rowwise() += lw.b_q;
  k.rowwise() += lw.b_k;
  for (int h = 0; h < H; ++h)
    for (int t = 0; t < T; ++t) {
      std::vector<double> row(T);
      std::vector<bool> visible(T);
      for (int s = 0; s < T; ++s) {
        double dot = 0;
        for (int j = 0; j < dh; ++j) dot += double(q.data()[(h * T + t) * dh + j]) * k.data()[(h * T + s) * dh + j];
        row[s] = dot / std::sqrt(double(dh));
        visible[s] = s <= t;
      }
      softmax_visible(row, visible);
      for (int s = 0; s < T; ++s) EXPECT_NEAR(f.w[(h * T + t) * T + s], row[s], 1e-5) << h << "," << t << "," << s;
    }
  // The three paths agree, with padding and K/V sharing too.
  const int B = 2;
  const MatR xb = random_matrix(B * 7, 24, 33);
  const LayerWeights lb = random_layer(24, 34);
  std::vector<int> lengths = {7, 4};
  MhaOptions ob = gqa(6, 2, true);
  ob.pitfalls.no_transpose = true;
  ob.lengths = lengths.data();
  const Fast fb = fast(lb, xb, B, 7, ob);
  const auto ex = mha_explicit(lb, tensor3(xb, B, 7), ob);
  EXPECT_LT(max_abs_diff(fb.w.data(), ex.at("weights").data.data(), fb.w.size()), 1e-5f);
  EXPECT_LT(max_abs_diff(fb.y.data(), ex.at("out").data.data(), fb.y.size()), 1e-5f);
  for (int h = 0; h < 6; ++h) {
    const HeadTrace tr = head_trace(lb, xb.middleRows(7, 7), 4, h, ob);
    EXPECT_LT(max_abs_diff(tr.weights.data(), fb.w.data() + (6 + h) * 49, 49), 1e-5f) << h;
  }
  // One head: view(B,1,T,D) is the transpose, so the pitfall changes nothing.
  MhaOptions one = gqa(1, 0);
  const Fast right = fast(lw, x, 1, T, one);
  one.pitfalls.no_transpose = true;
  EXPECT_LT(max_abs_diff(right.w.data(), fast(lw, x, 1, T, one).w.data(), right.w.size()), 1e-6f);
  EXPECT_TRUE(std::isnan(head_score(lw, x.row(0).data(), x.row(0).data(), 0, o)));
}

// The passport: K and V at kv·d_head, the split and the repeat, the savings, and a
// footer that holds with W_O off.
TEST(Gqa, PassportRowsAndParameters) {
  const int B = 2, T = 5, D = 24, H = 6, kv = 2, L = 2, dh = D / H;
  ModelConfig cfg = config(D, H, L);
  cfg.num_kv_heads = kv;
  const Passport p = make_passport(cfg, B, T);
  MhaOptions o = gqa(H, kv);
  Tensor x({B, T, D});
  const MatR xm = random_matrix(B * T, D, 41);
  std::copy(xm.data(), xm.data() + xm.size(), x.data.begin());
  const auto tensors = mha_explicit(random_layer(D, 42), x, o);
  for (const char* id : {"q", "k", "v", "q_heads", "k_heads", "k_repeat", "scores", "weights", "ctx", "concat", "out"}) {
    ASSERT_NE(p.find(id), nullptr) << id;
    EXPECT_EQ(p.find(id)->concrete, tensors.at(id).shape) << id;
  }
  EXPECT_EQ(p.find("k")->concrete, (Shape{B, T, kv * dh}));
  EXPECT_EQ(p.find("k")->symbolic_str(), "(B, T, kv_heads\xC2\xB7" "d_head)");
  EXPECT_EQ(p.find("k_heads")->symbolic_str(), "(B, kv_heads, T, d_head)");
  const int64_t full = int64_t(L) * (D * D + D), kvp = int64_t(L) * (D * kv * dh + kv * dh);
  EXPECT_EQ(p.attention_params, 2 * full + 2 * kvp);
  EXPECT_EQ(p.kv_saved, 4 * full - p.attention_params);
  EXPECT_NE(p.attention_formula.find("saves " + human_count(p.kv_saved)), std::string::npos) << p.attention_formula;
  const Passport mha = make_passport(config(D, H, L), B, T);
  EXPECT_EQ(mha.attention_params, 4 * full);
  EXPECT_EQ(mha.kv_saved, 0);
  EXPECT_EQ(mha.find("k_heads"), nullptr);
  // W_O off: the footer's formula and its total agree (3 projections, not 4).
  ModelConfig no_wo = config(D, H, L);
  no_wo.pitfalls.no_w_o = true;
  const Passport pn = make_passport(no_wo, B, T);
  EXPECT_EQ(pn.attention_params, 3 * full);
  EXPECT_EQ(pn.attention_formula.rfind("3\xC2\xB7L\xC2\xB7(D\xC2\xB2 + D)", 0), 0u) << pn.attention_formula;
  EXPECT_EQ(mha.attention_formula.rfind("4\xC2\xB7L\xC2\xB7(D\xC2\xB2 + D)", 0), 0u) << mha.attention_formula;
  no_wo.num_kv_heads = 1;
  EXPECT_EQ(make_passport(no_wo, B, T).attention_params, full + 2 * int64_t(L) * (D * dh + dh));
}

// The model runs K/V sharing end to end on random and on full-size weights, and the config
// says what is valid.
TEST(Gqa, ConfigAndModel) {
  ModelConfig c = config(24, 6, 2);
  for (int kv : {1, 2, 3, 6}) {
    c.num_kv_heads = kv;
    EXPECT_TRUE(validate(c).ok()) << kv;
  }
  for (int kv : {-1, 4, 5, 12}) {
    c.num_kv_heads = kv;
    EXPECT_FALSE(validate(c).ok()) << kv;
  }
  c.num_kv_heads = 4;
  EXPECT_NE(validate(c).error().message.find("try 3 or 6"), std::string::npos) << validate(c).error().message;
  c.num_kv_heads = 0;
  c.pitfalls.interleaved_reshape = c.pitfalls.no_transpose = true;
  EXPECT_FALSE(validate(c).ok());
  EXPECT_EQ(valid_kv_head_counts(6), (std::vector<int>{1, 2, 3, 6}));
  EXPECT_EQ(nearest_valid_kv_heads(8, 3), 2);
  EXPECT_EQ(nearest_valid_kv_heads(8, 0), 0);
  EXPECT_EQ(nearest_valid_kv_heads(8, 2147483647), 8);  // from a hostile view file: no overflow
  EXPECT_EQ(nearest_valid_kv_heads(8, -3), 1);
  EXPECT_FALSE(trainable_kv_heads(8, 2).ok());
  EXPECT_TRUE(trainable_kv_heads(8, 8).ok());
  EXPECT_TRUE(trainable_kv_heads(8, 0).ok());

  // Config JSON: the resolved count is written; kv = H reads back as "follow H".
  ModelConfig j = config(24, 6, 2);
  j.num_kv_heads = 2;
  EXPECT_TRUE(config_from_json(config_json(j)).value() == j);
  j.num_kv_heads = 0;
  EXPECT_NE(config_json(j).find("\"num_kv_heads\": 6"), std::string::npos);
  EXPECT_TRUE(config_from_json(config_json(j)).value() == j);
  EXPECT_FALSE(config_from_json(R"({"num_kv_heads": 0})").ok());

  // forward(): multi-query changes the maps of all but the first head, and the run is finite.
  ModelConfig m = config(24, 6, 2);
  const ModelWeights w = random_weights(24, 2, 5);
  const Batch batch = make_batch({"the cat sat on the mat", "a dog"}, m, w);
  const ForwardOutput a = forward(w, m, batch).value();
  m.num_kv_heads = 1;
  const ForwardOutput b = forward(w, m, batch).value();
  ASSERT_EQ(a.attention.size(), b.attention.size());
  EXPECT_TRUE(all_finite(b.attention));
  EXPECT_EQ(max_abs_diff(a.weights(0, 0, 0), b.weights(0, 0, 0), size_t(a.T) * a.T), 0.0f);
  EXPECT_GT(max_abs_diff(a.weights(0, 0, 1), b.weights(0, 0, 1), size_t(a.T) * a.T), 1e-3f);
}
