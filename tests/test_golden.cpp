// Golden fixtures from an independent reference: tests/reference/mha_reference.py
// recomputed the attention in numpy (float64) from exported inputs and weights (with
// random biases). Here the core's fast path gets the same inputs and must agree.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "core/model/attention.h"
#include "core/io/export.h"

using namespace headmap;
namespace fs = std::filesystem;

namespace {
Tensor load(const fs::path& p) {
  Result<std::string> bytes = read_file(p.string());
  EXPECT_TRUE(bytes) << p;
  Result<Tensor> t = parse_npy(bytes ? *bytes : std::string());
  EXPECT_TRUE(t) << p << (t ? "" : ": " + t.error().message);
  return t ? *t : Tensor();
}
MatR mat(const Tensor& t, int rows, int cols) {
  EXPECT_EQ(t.numel(), int64_t(rows) * cols);
  MatR m(rows, cols);
  std::copy(t.data.begin(), t.data.end(), m.data());
  return m;
}
RowVec vec(const Tensor& t) {
  RowVec v(t.numel());
  std::copy(t.data.begin(), t.data.end(), v.data());
  return v;
}
}  // namespace

TEST(Golden, FastPathMatchesTheNumpyReference) {
  const fs::path root = HEADMAP_FIXTURES;
  int cases = 0;
  for (const auto& entry : fs::directory_iterator(root)) {
    if (!entry.is_directory()) continue;
    const fs::path d = entry.path();
    SCOPED_TRACE(d.filename().string());
    const nlohmann::json meta = nlohmann::json::parse(read_file((d / "meta.json").string()).value());
    Result<ModelConfig> cfg = config_from_json(meta["config"].dump());
    ASSERT_TRUE(cfg);
    const std::vector<int> lengths = meta["lengths"].get<std::vector<int>>();
    const Tensor expected = load(d / "expected_attention.npy");  // (L, B, Hw, T, T)
    const int L = cfg->num_layers, B = static_cast<int>(lengths.size()), T = static_cast<int>(expected.dim(3)), D = cfg->d_model;
    MhaOptions o = mha_options(*cfg);
    o.lengths = lengths.data();
    const int Dkv = cfg->kv_heads() * cfg->d_head();  // W_K, W_V: (D, kv_heads·d_head)
    for (int l = 0; l < L; ++l) {
      const std::string p = "layer" + std::to_string(l) + ".";
      LayerWeights lw;
      lw.w_q = mat(load(d / (p + "w_q.npy")), D, D);
      lw.w_k = mat(load(d / (p + "w_k.npy")), D, Dkv);
      lw.w_v = mat(load(d / (p + "w_v.npy")), D, Dkv);
      lw.w_o = PackedMatrix(mat(load(d / (p + "w_o.npy")), D, D));
      lw.b_q = vec(load(d / (p + "b_q.npy")));
      lw.b_k = vec(load(d / (p + "b_k.npy")));
      lw.b_v = vec(load(d / (p + "b_v.npy")));
      lw.b_o = vec(load(d / (p + "b_o.npy")));
      ASSERT_GT(lw.b_q.cwiseAbs().maxCoeff(), 0.0f) << "fixtures carry non-zero biases";
      lw.fuse();
      const MatR x = mat(load(d / (p + "attn_in.npy")), B * T, D);
      const int Hw = weight_heads(o);
      std::vector<float> w(static_cast<size_t>(B) * Hw * T * T);
      MatR y;
      mha_forward(lw, x, B, T, o, y, w.data());
      const float* e = expected.data.data() + static_cast<size_t>(l) * w.size();
      // 1e-5: float32 against a float64 reference, rows of at most 11 terms.
      for (size_t i = 0; i < w.size(); ++i) ASSERT_NEAR(w[i], e[i], 1e-5f) << "layer " << l << " index " << i;
      const Tensor out = load(d / (p + "expected_attn_out.npy"));
      for (int64_t i = 0; i < y.size(); ++i) ASSERT_NEAR(y.data()[i], out.data[i], 1e-5f) << "attn_out index " << i;
    }
    ++cases;
  }
  EXPECT_EQ(cases, 6) << "expected six fixtures in " << root;
}
