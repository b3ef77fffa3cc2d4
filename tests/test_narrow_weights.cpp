// test_narrow_weights.cpp: a BF16 / F16 file's weights kept in their 16 bits (packed_gemm.h,
// hf_model.cpp). The same tiny Llama-shaped model written twice, once as BF16 (or F16) and
// once as F32 holding the very same values, must load narrow (packed matrices, fused W_QKV
// and the embedding 16-bit) and give the same forward pass bit for bit: every attention map,
// every logit, the loss; one and two threads; tied and untied unembedding.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <unistd.h>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/io/hf_model.h"
#include "core/math/gemm.h"
#include "core/math/rng.h"
#include "core/model/kv_cache.h"
#include "core/model/model.h"
#include "core/inspect/precision.h"
#include "core/math/packed_gemm.h"
#include "narrow_model.h"
#include "test_util.h"

using namespace headmap;
namespace fs = std::filesystem;
using namespace narrow_model;

namespace {
Batch random_ids_batch(int T, int vocab = V) {
  Batch b;
  b.tokenizer = TokenizerKind::Bpe;
  TokenizedText tt;
  Rng r(99);
  for (int t = 0; t < T; ++t) tt.tokens.push_back(Token{"", static_cast<int>(r.below(vocab)), false});
  tt.total_tokens = T;
  b.sentences.push_back(tt);
  b.lengths.push_back(T);
  b.source_line.push_back(0);
  b.T = T;
  return b;
}

using test::same_bits;
}  // namespace

TEST(NarrowWeights, SixteenBitFilesStayNarrowAndGiveTheF32ForwardBitForBit) {
  const fs::path root = fs::temp_directory_path() / ("headmap_narrow_" + std::to_string(::getpid()));
  const int threads = compute_threads();
  for (const char* dtype : {"BF16", "F16"})
    for (bool tied : {true, false}) {
      const WeightDtype dt = std::string(dtype) == "F16" ? WeightDtype::F16 : WeightDtype::BF16;
      const std::vector<FileTensor> ts = llama_tensors(tied, dt);
      const fs::path nd = root / (std::string(dtype) + (tied ? "_tied" : "_untied")), wd = root / (std::string("F32") + (tied ? "_tied" : "_untied"));
      write_model(nd, ts, tied, dtype);
      write_model(wd, ts, tied, "F32");
      Result<ModelWeights> n = load_hf_model(nd.string()), w = load_hf_model(wd.string());
      ASSERT_TRUE(n.ok()) << n.error().message;
      ASSERT_TRUE(w.ok()) << w.error().message;
      // Kept 16-bit: the packed matrices, the fused W_QKV, the embedding (and an untied head).
      for (const LayerWeights& lw : n->layers)
        for (const PackedMatrix* m : {&lw.w_qkv, &lw.w_o, &lw.w_gate, &lw.w_fc, &lw.w_proj}) {
          EXPECT_EQ(m->dtype(), dt) << dtype;
          EXPECT_EQ(m->bytes(), static_cast<size_t>(m->panels()) * m->rows() * PackedMatrix::kPanel * 2);
        }
      EXPECT_EQ(n->tok_emb.size(), 0) << "no F32 copy of the embedding";
      EXPECT_EQ(n->tok_emb16.rows, V);
      EXPECT_EQ(n->lm_head16.empty(), tied);
      EXPECT_EQ(n->arch.tied, tied);
      EXPECT_EQ(n->vocab_size(), V);
      EXPECT_TRUE(w->tok_emb16.empty() && w->layers[0].w_fc.dtype() == WeightDtype::F32) << "F32 files stay F32";
      for (int id : {0, 17, V - 1}) EXPECT_TRUE(n->unembedding_row(id) == w->unembedding_row(id));
      // The same numbers, so the same forward pass, bit for bit.
      ModelConfig base;
      base.tokenizer = TokenizerKind::Bpe;
      const ModelConfig cn = config_for_weights(*n, base), cw = config_for_weights(*w, base);
      ASSERT_EQ(cn, cw);
      for (int T : {1, 37}) {
        const Batch b = random_ids_batch(T);
        ForwardOptions fo;
        fo.want_logits = true;
        for (int nt : {1, 2}) {
          set_compute_threads(nt);
          Result<ForwardOutput> on = forward(*n, cn, b, fo), ow = forward(*w, cw, b, fo);
          ASSERT_TRUE(on.ok() && ow.ok());
          ASSERT_EQ(on->attention.size(), ow->attention.size());
          EXPECT_TRUE(same_bits(on->attention, ow->attention)) << dtype << (tied ? " tied" : " untied") << ", T " << T << ", " << nt << " threads";
          ASSERT_EQ(on->logits.size(), static_cast<Eigen::Index>(T) * V);
          EXPECT_TRUE(on->logits == ow->logits) << dtype << (tied ? " tied" : " untied") << ", T " << T << ", " << nt << " threads";
          EXPECT_EQ(on->loss, ow->loss);
          EXPECT_TRUE(on->out == ow->out);
        }
      }
    }
  set_compute_threads(threads);
  std::error_code ec;
  fs::remove_all(root, ec);
}

// The 16-bit unembedding kept as its transpose's panels (NarrowRows::panels, packed by parts on
// the loader's threads): every embedding and unembedding row read back from the panels equals
// the file's row, and the logits, of a full forward and of 1-3 tokens appended through the
// K/V cache, equal those of the F32 file of the same values, whose (V, D) table runs
// gemm_transposed_b (the path the 16-bit table took before), bit for bit. V = 403: the last
// panel is padded, and the table's parts end inside it.
TEST(NarrowWeights, TheUnembeddingInPanelsGivesTheFilesRowsAndTheF32LogitsBitForBit) {
  constexpr int kV = 403;
  const fs::path root = fs::temp_directory_path() / ("headmap_panels_" + std::to_string(::getpid()));
  const int threads = compute_threads();
  for (const char* dtype : {"BF16", "F16"})
    for (bool tied : {true, false}) {
      const WeightDtype dt = std::string(dtype) == "F16" ? WeightDtype::F16 : WeightDtype::BF16;
      const std::vector<FileTensor> ts = llama_tensors(tied, dt, kV);
      const std::string what = std::string(dtype) + (tied ? " tied" : " untied");
      const fs::path nd = root / (std::string(dtype) + (tied ? "_tied" : "_untied")), wd = root / (std::string("F32") + (tied ? "_tied" : "_untied"));
      write_model(nd, ts, tied, dtype, kV);
      write_model(wd, ts, tied, "F32", kV);
      for (int nt : {1, 2}) {  // the loader packs the table in 2 or 4 parts
        set_compute_threads(nt);
        Result<ModelWeights> n = load_hf_model(nd.string()), w = load_hf_model(wd.string());
        ASSERT_TRUE(n.ok()) << n.error().message;
        ASSERT_TRUE(w.ok()) << w.error().message;
        const NarrowRows& u16 = tied ? n->tok_emb16 : n->lm_head16;
        ASSERT_TRUE(n->tok_emb16.panels.narrow() && u16.panels.narrow()) << what;
        EXPECT_EQ(u16.panels.rows(), D);
        EXPECT_EQ(u16.panels.cols(), kV);
        EXPECT_EQ(u16.bytes(), static_cast<size_t>(kV + 16 - kV % 16) * D * 2) << "the file's bytes, the last panel padded";
        EXPECT_TRUE(w->tok_emb16.empty() && w->tok_emb.rows() == kV) << "an F32 file keeps its (V, D) table";
        // Every row from the panels: the file's values.
        const FileTensor& emb = ts.front();
        const FileTensor& head = tied ? ts.front() : ts.back();
        ASSERT_EQ(head.shape[0], kV);
        std::vector<float> row(D);
        for (int id = 0; id < kV; ++id) {
          n->embedding_row(id, row.data());
          ASSERT_EQ(std::memcmp(row.data(), emb.values.data() + static_cast<size_t>(id) * D, D * sizeof(float)), 0) << what << ": embedding row " << id;
          const RowVec u = n->unembedding_row(id);
          ASSERT_EQ(std::memcmp(u.data(), head.values.data() + static_cast<size_t>(id) * D, D * sizeof(float)), 0) << what << ": unembedding row " << id;
        }
        // The logits: a full forward, then 1, 2 and 3 tokens appended.
        ModelConfig base;
        base.tokenizer = TokenizerKind::Bpe;
        const ModelConfig cn = config_for_weights(*n, base), cw = config_for_weights(*w, base);
        ASSERT_EQ(cn, cw);
        ForwardOptions fo;
        fo.want_logits = true;
        KvCache cache;
        ForwardOptions inc = fo;
        inc.kv_cache = &cache;
        const Batch all = random_ids_batch(40, kV);
        auto first = [&](int T) {
          Batch b = all;
          b.sentences[0].tokens.resize(static_cast<size_t>(T));
          b.sentences[0].total_tokens = T;
          b.lengths[0] = T;
          b.T = T;
          return b;
        };
        for (int T : {1, 3, 33, 34, 36, 39}) {  // 33: full; then appends of 1, 2 and 3 rows
          const Batch b = first(T);
          Result<ForwardOutput> on = forward(*n, cn, b, inc), ow = forward(*w, cw, b, fo);
          ASSERT_TRUE(on.ok() && ow.ok());
          ASSERT_EQ(on->logits.size(), static_cast<Eigen::Index>(T) * kV);
          if (T == 34 || T == 36 || T == 39) EXPECT_EQ(on->kv_computed, T == 34 ? 1 : T == 36 ? 2 : 3) << what;
          EXPECT_TRUE(on->logits == ow->logits) << what << ", T " << T << ", " << nt << " threads";
          EXPECT_EQ(on->loss, ow->loss) << what << ", T " << T;
        }
      }
    }
  set_compute_threads(threads);
  std::error_code ec;
  fs::remove_all(root, ec);
}

// View > BF16 products (packed_gemm.h, Bf16Products): on a CPU with avx512_bf16 the pass
// differs from F32 (the activations' rounding to BF16) by little, and says where; it never
// goes through the K/V cache (whose rows stay F32's), and F32 after it is F32 again, bit for
// bit. Elsewhere the refusal says why, and the pass is F32's bit for bit.
TEST(NarrowWeights, Bf16ProductsStayNearF32AndKeepOutOfTheKvCache) {
  const fs::path dir = fs::temp_directory_path() / ("headmap_bf16p_" + std::to_string(::getpid()));
  write_model(dir, llama_tensors(false, WeightDtype::BF16), false, "BF16");
  Result<ModelWeights> w = load_hf_model(dir.string());
  ASSERT_TRUE(w.ok()) << w.error().message;
  ModelConfig base;
  base.tokenizer = TokenizerKind::Bpe;
  const ModelConfig cfg = config_for_weights(*w, base);
  const Batch b = random_ids_batch(37);
  ForwardOptions fo;
  fo.want_logits = true;
  Result<ForwardOutput> f32 = forward(*w, cfg, b, fo);
  ASSERT_TRUE(f32.ok());
  KvCache cache;
  ForwardOptions fb = fo;
  fb.bf16_products = true;
  fb.kv_cache = &cache;
  Result<ForwardOutput> bf = forward(*w, cfg, b, fb);
  ASSERT_TRUE(bf.ok());
  EXPECT_EQ(bf->kv_reused + bf->kv_computed, 0) << "a pass with BF16 products runs in full";
  EXPECT_EQ(cache.T(), 0) << "and leaves the K/V cache alone";
  const PrecisionDiff d = precision_diff(*bf, *f32);
  if (Bf16Products::available()) {
    EXPECT_EQ(bf16_products_refusal(*w), "");
    EXPECT_GT(d.attention, 0.0f) << "the products did change";
    // A^T rounded to 8 significant bits moves scores of ~10 (this model's weights, std 0.2) by ~0.02:
    // its sharpest maps move by a few hundredths (0.027 measured on Zen 4).
    EXPECT_LT(d.attention, 0.06f);
    ASSERT_TRUE(d.has_logits);
    EXPECT_GT(d.logits, 0.0f);
    EXPECT_LT(d.logits, 0.05f * f32->logits.cwiseAbs().maxCoeff());
    EXPECT_NEAR(d.loss_approx, d.loss_exact, 0.01 * d.loss_exact);
    EXPECT_GE(d.layer, 0);
    EXPECT_NE(precision_diff_text(d).find("largest difference from F32: attention"), std::string::npos) << precision_diff_text(d);
  } else {
    EXPECT_NE(bf16_products_refusal(*w).find("avx512_bf16"), std::string::npos);
    EXPECT_EQ(d.attention, 0.0f) << "without the instructions the pass is F32's";
    EXPECT_TRUE(bf->logits == f32->logits);
  }
  Result<ForwardOutput> again = forward(*w, cfg, b, fo);
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(same_bits(again->attention, f32->attention)) << "the scope ends with the pass";
  EXPECT_TRUE(again->logits == f32->logits);
  // F32 and F16 weights: rounded to BF16 too, near F32 as well.
  const fs::path wide = dir.string() + "_f32", half = dir.string() + "_f16";
  write_model(wide, llama_tensors(false, WeightDtype::BF16), false, "F32");
  write_model(half, llama_tensors(false, WeightDtype::F16), false, "F16");
  Result<ModelWeights> w32 = load_hf_model(wide.string()), w16 = load_hf_model(half.string());
  ASSERT_TRUE(w32.ok() && w16.ok());
  for (const ModelWeights* m : {&*w32, &*w16}) {
    Result<ForwardOutput> exact = forward(*m, cfg, b, fo), approx = forward(*m, cfg, b, fb);
    ASSERT_TRUE(exact.ok() && approx.ok());
    const PrecisionDiff dm = precision_diff(*approx, *exact);
    const bool f16 = m == &*w16;
    if (Bf16Products::available()) {
      EXPECT_EQ(bf16_products_refusal(*m), "");
      EXPECT_GT(dm.attention, 0.0f) << (f16 ? "F16" : "F32");
      EXPECT_LT(dm.attention, 0.06f) << (f16 ? "F16" : "F32");
    } else {
      EXPECT_EQ(dm.attention, 0.0f);
    }
  }
  std::error_code ec;
  fs::remove_all(dir, ec);
  fs::remove_all(wide, ec);
  fs::remove_all(half, ec);
}
