// test_quant_weights.cpp: a GGUF file's quantized matrices kept in their blocks in memory
// (packed_gemm.h's block storage, gguf_model.cpp). The same Llama-shaped model is written
// twice (tests/gguf_writer.h): once in a block type, once in F32 holding exactly the values
// those blocks widen to (the model a loader that widens at load holds). The first must load
// with every matrix and the embedding still in blocks (the bytes of the file's blocks, no
// F32 copy), and both must give the same forward pass to rounding: every attention map, every
// logit, the loss; one and two threads; one token and 37; every block type, a Q4_K_M-style
// mix of types inside one fused W_QKV, tied and untied unembedding. (A product on blocks sums
// each output in block_gemm.h's dot order, the F32 kernel in k order: the bits differ, by a
// few units in the last place. The dot order itself is held bit for bit against scalar code by
// BlockGemmIsTheDotOrderOfItsWidenedValues, and the appended token to the full recompute.) (The widening itself is
// held to the format by Gguf.DequantizesBlocksAsTheFormatDefinesThem, the whole models to
// numpy and llama.cpp by gguf_matches_numpy / gguf_matches_llama_cpp.)
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "core/inspect/passport.h"
#include "core/io/gguf_model.h"
#include "core/io/hf_tensors.h"
#include "core/math/block_gemm.h"
#include "core/math/gemm.h"
#include "core/math/half.h"
#include "core/math/int8_products.h"
#include "core/math/packed_gemm.h"
#include "core/math/rng.h"
#include "core/math/weight_dtype_scalar.h"
#include "core/model/kv_cache.h"
#include "core/model/model.h"
#include "family_fixtures.h"
#include "gguf_writer.h"
#include "test_util.h"

using namespace headmap;
namespace fs = std::filesystem;

namespace {
// K-quants need rows of whole 256-element super-blocks: D and F multiples of 256.
constexpr test::GgufShape kShape{256, 4, 2, 64, 2, 512, 320};

Batch ids_batch(int T, int V) {  // one sentence of T random ids below V
  std::vector<int> ids;
  Rng r(99);
  for (int t = 0; t < T; ++t) ids.push_back(static_cast<int>(r.below(static_cast<uint64_t>(V))));
  return test::id_batch({ids});
}

using test::same_bits;

// The largest |a - b| over the largest |b|: two sums of the same products in different orders
// differ by rounding, far below this (a wrong value, a wrong block, a lost row: far above).
float relative_gap(const float* a, const float* b, size_t n) {
  float scale = 0;
  for (size_t i = 0; i < n; ++i) scale = std::max(scale, std::abs(b[i]));
  return test::max_abs_diff(a, b, n) / std::max(scale, 1e-30f);
}
// Seen: up to 5.1e-5 (maps of Q4_K_M) through 2 layers, softmax and the unembedding.
constexpr float kOrderGap = 2e-4f;

// The gap between the maps of two forwards (attention: per layer and head, (T, T) each).
float maps_gap(const ForwardOutput& a, const ForwardOutput& b) {
  if (a.attention.size() != b.attention.size()) return 1.0f;
  return relative_gap(a.attention.data(), b.attention.data(), a.attention.size());
}
// N columns of K random values kept in type t (column c drawn from seed + c), as the block
// kernels' tests take them: the scalar dequantizer's values, the columns kept in blocks, and
// their rows one after another (the unembedding's transposed form, gemm_transposed_b).
struct BlockColumns {
  MatR wide;            // (N, K): column n's values along k
  PackedMatrix packed;  // (K, N), in blocks
  std::string table;    // N rows of row_bytes
  size_t row_bytes = 0;
  bool packed_ok = false;
};
BlockColumns block_columns(WeightDtype t, int K, int N, uint64_t seed) {
  BlockColumns b;
  b.wide.resize(N, K);
  std::vector<std::string> rows(static_cast<size_t>(N));
  std::vector<const uint8_t*> src;
  for (int c = 0; c < N; ++c) {
    std::string& r = rows[static_cast<size_t>(c)];
    test::gguf_writer_detail::random_weights(t, K, seed + static_cast<uint64_t>(c), r);
    src.push_back(reinterpret_cast<const uint8_t*>(r.data()));
    widen_weights_scalar(t, src.back(), K, b.wide.data() + static_cast<size_t>(c) * K);
    b.table += r;
  }
  b.row_bytes = rows[0].size();
  b.packed_ok = b.packed.assign_blocks(src, std::vector<WeightDtype>(static_cast<size_t>(N), t), K);  // copied verbatim
  return b;
}
}  // namespace

TEST(QuantWeights, BlockTypesStayInBlocksAndGiveTheWidenedForwardToRounding) {
  const fs::path root = fs::temp_directory_path() / ("headmap_quant_" + std::to_string(::getpid()));
  fs::create_directories(root);
  const int threads = compute_threads();
  struct Variant {
    std::string name;
    test::GgufTypes types;
  };
  std::vector<Variant> variants;
  for (int i = 0; i < kWeightDtypes; ++i) {
    const WeightDtype t = static_cast<WeightDtype>(i);
    if (is_block_dtype(t)) variants.push_back({dtype_name(t), test::GgufTypes::all(t, t == WeightDtype::Q8_0)});
  }
  variants.push_back({"Q4_K_M", test::GgufTypes::q4_k_m()});
  for (const Variant& v : variants) {
    SCOPED_TRACE(v.name);
    const fs::path qp = root / (v.name + ".gguf"), wp = root / (v.name + "_f32.gguf");
    ASSERT_TRUE(test::write_llama_gguf(qp.string(), kShape, v.types, 7, false));
    ASSERT_TRUE(test::write_llama_gguf(wp.string(), kShape, v.types, 7, true));
    Result<ModelWeights> q = load_gguf_model(qp.string()), w = load_gguf_model(wp.string());
    ASSERT_TRUE(q.ok()) << q.error().message;
    ASSERT_TRUE(w.ok()) << w.error().message;
    const int64_t D = kShape.D, Dq = kShape.H * kShape.dh, Dkv = kShape.KV * kShape.dh, F = kShape.F;
    // Kept in blocks: each matrix holds its file's bytes, the types as the file has them.
    for (const LayerWeights& lw : q->layers) {
      struct M {
        const PackedMatrix* m;
        int64_t bytes;
        std::string types;
      };
      const test::GgufTypes& t = v.types;
      const std::string qkv_types = t.qk == t.v ? dtype_name(t.qk) : std::string(dtype_name(t.qk)) + "+" + dtype_name(t.v);
      for (const M& m : {M{&lw.w_qkv, (Dq + Dkv) * dtype_bytes(t.qk, D) + Dkv * dtype_bytes(t.v, D), qkv_types},
                         M{&lw.w_o, D * dtype_bytes(t.o, Dq), dtype_name(t.o)}, M{&lw.w_gate, F * dtype_bytes(t.gate_up, D), dtype_name(t.gate_up)},
                         M{&lw.w_fc, F * dtype_bytes(t.gate_up, D), dtype_name(t.gate_up)}, M{&lw.w_proj, D * dtype_bytes(t.down, F), dtype_name(t.down)}}) {
        EXPECT_TRUE(m.m->blocks());
        EXPECT_EQ(static_cast<int64_t>(m.m->bytes()), m.bytes);
        EXPECT_EQ(m.m->dtype_text(), m.types);
      }
      EXPECT_EQ(lw.w_q.size() + lw.w_k.size() + lw.w_v.size(), 0) << "no F32 copy of W_Q, W_K, W_V";
    }
    EXPECT_EQ(q->tok_emb.size(), 0) << "no F32 copy of the embedding";
    EXPECT_EQ(q->tok_emb16.dtype, v.types.embed);
    EXPECT_EQ(static_cast<int64_t>(q->tok_emb16.bytes()), kShape.V * dtype_bytes(v.types.embed, D));
    EXPECT_EQ(q->lm_head16.empty(), !v.types.untied);
    EXPECT_EQ(q->lm_head.size(), 0);
    EXPECT_TRUE(w->layers[0].w_fc.dtype() == WeightDtype::F32 && !w->layers[0].w_fc.blocks()) << "F32 files stay F32";
    for (int id : {0, 17, static_cast<int>(kShape.V) - 1}) EXPECT_TRUE(q->unembedding_row(id) == w->unembedding_row(id));
    // The passport's table: each group's type, bits per weight and bytes, as held.
    const std::vector<WeightStorage> st = weight_storage(*q);
    ASSERT_EQ(st.size(), v.types.untied ? 6u : 5u);
    const int64_t L = kShape.L;
    EXPECT_EQ(st[1].name, "W_O");
    EXPECT_EQ(st[1].type, dtype_name(v.types.o));
    EXPECT_EQ(st[1].weights, L * Dq * D);
    EXPECT_EQ(st[1].bytes, L * D * dtype_bytes(v.types.o, Dq));
    EXPECT_DOUBLE_EQ(st[1].bits_per_weight(), bits_per_weight(v.types.o));  // Q8_0 8.5, Q4_K 4.5, ...
    EXPECT_EQ(st[4].name, "embedding");
    EXPECT_EQ(st[4].type, dtype_name(v.types.embed));
    EXPECT_EQ(st[4].bytes, kShape.V * dtype_bytes(v.types.embed, D));
    if (v.types.qk != v.types.v) {
      EXPECT_EQ(st[0].type, std::string(dtype_name(v.types.qk)) + "+" + dtype_name(v.types.v));
    }
    EXPECT_EQ(weight_storage(*w)[0].type, "F32");
    EXPECT_DOUBLE_EQ(weight_storage(*w)[0].bits_per_weight(), 32.0);
    EXPECT_TRUE(q->layers[1].w_qkv.plain() == w->layers[1].w_qkv.plain()) << "the blocks widen to the F32 file's values (Q/K un-permuted alike)";
    ModelConfig base;
    base.tokenizer = TokenizerKind::Bpe;
    const ModelConfig cq = config_for_weights(*q, base), cw = config_for_weights(*w, base);
    ASSERT_EQ(cq, cw);
    for (int T : {1, 37}) {
      const Batch b = ids_batch(T, static_cast<int>(kShape.V));
      ForwardOptions fo;
      fo.want_logits = true;
      for (int nt : {1, 2}) {
        set_compute_threads(nt);
        Result<ForwardOutput> oq = forward(*q, cq, b, fo), ow = forward(*w, cw, b, fo);
        ASSERT_TRUE(oq.ok() && ow.ok());
        ASSERT_EQ(oq->attention.size(), ow->attention.size());
        EXPECT_LT(maps_gap(*oq, *ow), kOrderGap) << "T " << T << ", " << nt << " threads";
        ASSERT_EQ(oq->logits.size(), static_cast<Eigen::Index>(T) * kShape.V);
        EXPECT_LT(relative_gap(oq->logits.data(), ow->logits.data(), oq->logits.size()), kOrderGap) << "T " << T << ", " << nt << " threads";
        EXPECT_NEAR(oq->loss, ow->loss, kOrderGap * std::abs(ow->loss));
        EXPECT_LT(relative_gap(oq->out.data(), ow->out.data(), oq->out.size()), kOrderGap);
      }
    }
    std::error_code ec;
    fs::remove(qp, ec), fs::remove(wp, ec);
  }
  set_compute_threads(threads);
  std::error_code ec;
  fs::remove_all(root, ec);
}

// The block kernels against their order written out in scalar code (block_gemm.h): each
// C(i, n) eight lane sums, lane l an fma chain over k = l mod 8 in order from 0, of A(i, k)
// times the scalar dequantizer's value, reduced ((l0 + l4) + (l2 + l6)) + ((l1 + l5) + (l3 +
// l7)), plus the old C when accumulating: bit for bit, at the shapes the forward does not reach
// (a partial group of columns, several 256-value chunks, 1-3 rows and many, K not a multiple
// of 8 on 16-bit columns), one and two threads, the packed matrix and the unembedding's
// transposed form alike. And to rounding the F32 kernel's k order on the same values. Each
// type the few-row kernel widens in registers (Q8_0, Q4_0, IQ4_NL, Q4_K, Q5_K, Q6_K, IQ4_XS)
// and some through its scratch (Q4_1, Q3_K); with AVX-512 VBMI, 1-2 rows of Q4_K, Q6_K, Q8_0,
// IQ4_XS and IQ4_NL run two columns a register ([pairs]; N = 37 and 70: whole and partial pairs).
TEST(QuantWeights, BlockGemmIsTheDotOrderOfItsWidenedValues) {
  const int threads = compute_threads();
  for (WeightDtype t : {WeightDtype::Q8_0, WeightDtype::Q4_0, WeightDtype::IQ4_NL, WeightDtype::Q4_1, WeightDtype::Q3_K, WeightDtype::Q4_K,
                        WeightDtype::Q5_K, WeightDtype::Q6_K, WeightDtype::IQ4_XS, WeightDtype::F16}) {
    const int blk = weight_dtype_info(t).block;
    for (int K : {blk, 3 * 512 + 2 * 256, blk == 1 ? 37 : 3 * blk}) {
      for (int N : {1, 37, 70}) {
        const BlockColumns bc = block_columns(t, K, N, 31);
        ASSERT_TRUE(bc.packed_ok);
        const MatR& wide = bc.wide;  // (N, K): column n's values along k, from the scalar dequantizer
        const PackedMatrix& qm = bc.packed;
        const PackedMatrix fm(qm.plain());  // (K, N) F32, the widened values
        const std::string& table = bc.table;
        for (int M : {1, 2, 3, 4, 5, 6, 7, 9, 300}) {  // every few-row kernel (1-3, 1-4 with AVX-512) and the many-row one
          MatR A(M, K), C0(M, N), want(M, N), want_acc(M, N);
          fill_normals(5, A.data(), A.size(), 1.0f);
          fill_normals(6, C0.data(), C0.size(), 1.0f);
          for (int i = 0; i < M; ++i)
            for (int n = 0; n < N; ++n) {
              float l[8] = {};
              for (int k = 0; k < K; ++k) l[k % 8] = std::fma(A(i, k), wide(n, k), l[k % 8]);
              for (int k = K; k % 8 != 0; ++k) l[k % 8] = std::fma(0.0f, 0.0f, l[k % 8]);  // the padded tail
              const float s = ((l[0] + l[4]) + (l[2] + l[6])) + ((l[1] + l[5]) + (l[3] + l[7]));
              want(i, n) = s;
              want_acc(i, n) = C0(i, n) + s;
            }
          for (int nt : {1, 2}) {
            set_compute_threads(nt);
            SCOPED_TRACE(std::string(dtype_name(t)) + " " + std::to_string(M) + "x" + std::to_string(K) + "x" + std::to_string(N) + ", " +
                         std::to_string(nt) + " threads");
            MatR cq(M, N), cf(M, N);
            packed_gemm(cq, A, qm);
            EXPECT_TRUE(cq == want);
            packed_gemm(cf, A, fm);
            EXPECT_LT(relative_gap(cq.data(), cf.data(), cq.size()), 1e-5f) << "the F32 kernel's k order, to rounding";
            cq = C0;
            packed_gemm(cq, A, qm, true);
            EXPECT_TRUE(cq == want_acc) << "accumulating";
            // The unembedding's form: C = A Bt^T with Bt (N, K) the rows of blocks.
            if (!is_block_dtype(t)) continue;
            MatR tq(M, N);
            gemm_transposed_b(M, A.data(), K, N, K, reinterpret_cast<const uint8_t*>(table.data()), t, bc.row_bytes, tq.data(), N);
            EXPECT_TRUE(tq == want) << "transposed";
          }
        }
      }
    }
  }
  set_compute_threads(threads);
}

// The many-row kernel (more than kBlockFewRows rows: the full forward, 8 x 6 tiles of a
// 48-column unit, AVX2 4 x 3) against the few-row one (the appended tokens), bit for bit: every
// row of a many-row product equals the same row run alone, and in threes, for every block type
// (and F16 among blocks, K = 37), K one block and more than one chunk (not a multiple of 256
// where the type's blocks allow), N around the column unit and the tile (1, 11, 12, 13, 25, 37),
// M = 4 (many rows with AVX2, few with AVX-512), 5, 7, 12, 15 (tails of the 8-row tile),
// 128, accumulating too, the packed matrix and the unembedding's transposed form, one and two
// threads.
TEST(QuantWeights, ManyRowsOnBlocksEqualFewRowsBitForBit) {
  const int threads = compute_threads();
  auto bits = [](const MatR& a, const MatR& b) {
    return a.rows() == b.rows() && a.cols() == b.cols() && std::memcmp(a.data(), b.data(), sizeof(float) * a.size()) == 0;
  };
  for (int ti = static_cast<int>(WeightDtype::F16); ti < kWeightDtypes; ++ti) {
    const WeightDtype t = static_cast<WeightDtype>(ti);
    const int blk = weight_dtype_info(t).block;
    for (int K : {blk == 1 ? 37 : blk, blk == 1 ? 301 : blk == 32 ? 9 * 32 : 3 * 256}) {
      std::vector<std::string> rows(37);
      std::vector<const uint8_t*> src;
      for (size_t c = 0; c < rows.size(); ++c) {
        test::gguf_writer_detail::random_weights(t, K, 71 + c, rows[c]);
        src.push_back(reinterpret_cast<const uint8_t*>(rows[c].data()));
      }
      for (int N : {1, 11, 12, 13, 25, 37}) {
        PackedMatrix qm;
        ASSERT_TRUE(qm.assign_blocks({src.begin(), src.begin() + N}, std::vector<WeightDtype>(static_cast<size_t>(N), t), K));
        std::string table;
        for (int c = 0; c < N; ++c) table += rows[static_cast<size_t>(c)];
        for (int M : {4, 5, 7, 12, 15, 128}) {
          const MatR A = test::random_matrix(M, K, 17), C0 = test::random_matrix(M, N, 18);
          for (int nt : {1, 2}) {
            set_compute_threads(nt);
            SCOPED_TRACE(std::string(dtype_name(t)) + " " + std::to_string(M) + "x" + std::to_string(K) + "x" + std::to_string(N) + ", " +
                         std::to_string(nt) + " threads");
            MatR many(M, N), many_acc = C0, many_t(M, N), few(M, N), few_acc = C0, threes(M, N);
            packed_gemm(many, A, qm);
            packed_gemm(many_acc, A, qm, true);
            if (is_block_dtype(t))
              gemm_transposed_b(M, A.data(), K, N, K, reinterpret_cast<const uint8_t*>(table.data()), t, rows[0].size(), many_t.data(), N);
            for (int i = 0; i < M; ++i) {
              packed_gemm(few.middleRows(i, 1), A.middleRows(i, 1), qm);
              packed_gemm(few_acc.middleRows(i, 1), A.middleRows(i, 1), qm, true);
            }
            for (int i = 0; i < M; i += 3) {
              const int r = std::min(3, M - i);
              packed_gemm(threes.middleRows(i, r), A.middleRows(i, r), qm);
            }
            EXPECT_TRUE(bits(many, few)) << "one row at a time";
            EXPECT_TRUE(bits(many, threes)) << "three rows at a time";
            EXPECT_TRUE(bits(many_acc, few_acc)) << "accumulating";
            if (is_block_dtype(t)) EXPECT_TRUE(bits(many_t, few)) << "transposed";
          }
        }
      }
    }
  }
  set_compute_threads(threads);
}

// The many-row kernel over several of its units (N > kBlockRowColumns, the last one partial)
// and several chunks of K (K > kBlockRowChunk, the last one partial), with a unit's columns of
// two types side by side (Q4_K_M's W_V beside W_K) and a band of rows cut short (M = 13): the
// same bits as one row at a time.
TEST(QuantWeights, ManyRowsOverUnitsAndChunksEqualOneRowAtATime) {
  const int threads = compute_threads();
  using W = WeightDtype;
  const int K = 4 * kBlockRowChunk + 256, N = 2 * kBlockRowColumns + 7, M = 13;
  for (const auto& pair : std::vector<std::pair<W, W>>{{W::Q8_0, W::Q8_0}, {W::Q4_K, W::Q6_K}, {W::Q5_K, W::F16}}) {
    std::vector<std::string> cols(static_cast<size_t>(N));
    std::vector<const uint8_t*> src;
    std::vector<WeightDtype> types;
    for (int c = 0; c < N; ++c) {
      const W t = c % 3 == 2 ? pair.second : pair.first;
      test::gguf_writer_detail::random_weights(t, K, 500 + c, cols[static_cast<size_t>(c)]);
      src.push_back(reinterpret_cast<const uint8_t*>(cols[static_cast<size_t>(c)].data()));
      types.push_back(t);
    }
    PackedMatrix qm;
    ASSERT_TRUE(qm.assign_blocks(src, types, K));
    const MatR A = test::random_matrix(M, K, 23), C0 = test::random_matrix(M, N, 24);
    MatR few(M, N), few_acc = C0;
    set_compute_threads(1);
    for (int i = 0; i < M; ++i) {
      packed_gemm(few.middleRows(i, 1), A.middleRows(i, 1), qm);
      packed_gemm(few_acc.middleRows(i, 1), A.middleRows(i, 1), qm, true);
    }
    for (int nt : {1, 2}) {
      set_compute_threads(nt);
      SCOPED_TRACE(std::string(dtype_name(pair.first)) + " and " + dtype_name(pair.second) + ", " + std::to_string(nt) + " threads");
      MatR many(M, N), many_acc = C0;
      packed_gemm(many, A, qm);
      packed_gemm(many_acc, A, qm, true);
      EXPECT_EQ(std::memcmp(many.data(), few.data(), sizeof(float) * many.size()), 0);
      EXPECT_EQ(std::memcmp(many_acc.data(), few_acc.data(), sizeof(float) * many.size()), 0) << "accumulating";
    }
  }
  set_compute_threads(threads);
}

// A quantized file may hold some matrices in F32, F16 or BF16 (llama.cpp leaves small or
// sensitive tensors unquantized): among block matrices they are kept as blocks of one element
// (a 16-bit matrix of its own, W_down here, as 16-bit panels),
// an F32 embedding is widened into tok_emb (the F32 table), a 16-bit one or a block
// unembedding kept as NarrowRows. Each such file gives its widened twin's forward to rounding.
TEST(QuantWeights, UnquantizedTablesAmongBlocksLoadAndGiveTheWidenedForward) {
  const fs::path root = fs::temp_directory_path() / ("headmap_quant_mixed_" + std::to_string(::getpid()));
  fs::create_directories(root);
  using W = WeightDtype;
  struct Variant {
    std::string name;
    test::GgufTypes types;
  };
  const std::vector<Variant> variants = {
      {"f32_embed_f16_output", {W::F32, W::Q8_0, W::F16, W::F32, W::Q4_K, W::BF16, W::F16, true}},
      {"f32_embed_tied", {W::F32, W::Q4_0, W::Q4_0, W::Q4_0, W::Q4_0, W::Q4_0, W::F32, false}},
      {"f16_embed_q6_k_output", {W::F16, W::Q5_K, W::Q6_K, W::Q5_K, W::Q5_K, W::Q6_K, W::Q6_K, true}},
      {"bf16_embed_f32_output", {W::BF16, W::Q8_0, W::Q8_0, W::Q8_0, W::Q8_0, W::Q8_0, W::F32, true}},
  };
  const int64_t D = kShape.D, F = kShape.F;
  for (const Variant& v : variants) {
    SCOPED_TRACE(v.name);
    const fs::path qp = root / (v.name + ".gguf"), wp = root / (v.name + "_f32.gguf");
    ASSERT_TRUE(test::write_llama_gguf(qp.string(), kShape, v.types, 11, false));
    ASSERT_TRUE(test::write_llama_gguf(wp.string(), kShape, v.types, 11, true));
    Result<ModelWeights> q = load_gguf_model(qp.string()), w = load_gguf_model(wp.string());
    ASSERT_TRUE(q.ok()) << q.error().message;
    ASSERT_TRUE(w.ok()) << w.error().message;
    const LayerWeights& lw = q->layers[0];
    EXPECT_TRUE(lw.w_o.blocks() && lw.w_qkv.blocks()) << "every matrix of a quantized file in its blocks";
    const bool down16 = v.types.down == W::BF16 || v.types.down == W::F16;  // a 16-bit matrix alone: 16-bit panels
    EXPECT_TRUE(down16 ? lw.w_proj.narrow() : lw.w_proj.blocks());
    EXPECT_EQ(lw.w_o.dtype_text(), dtype_name(v.types.o));
    EXPECT_EQ(lw.w_proj.dtype_text(), dtype_name(v.types.down));
    EXPECT_EQ(static_cast<int64_t>(lw.w_fc.bytes()), F * dtype_bytes(v.types.gate_up, D));
    // An F32 embedding is widened into the F32 table; so is a narrower one beside an F32
    // unembedding (both widened, as for a directory's 16-bit embedding beside an F32 lm_head).
    if (v.types.embed == W::F32 || (v.types.untied && v.types.output == W::F32)) {
      EXPECT_EQ(q->tok_emb.rows(), kShape.V) << "the embedding widened into the F32 table";
      EXPECT_TRUE(q->tok_emb16.empty());
      EXPECT_TRUE(q->tok_emb == w->tok_emb);
    } else {
      EXPECT_EQ(q->tok_emb.size(), 0);
      EXPECT_EQ(q->tok_emb16.dtype, v.types.embed);
      EXPECT_EQ(static_cast<int64_t>(q->tok_emb16.bytes()), kShape.V * dtype_bytes(v.types.embed, D));
    }
    for (int id : {0, 17, static_cast<int>(kShape.V) - 1}) EXPECT_TRUE(q->unembedding_row(id) == w->unembedding_row(id)) << id;
    EXPECT_TRUE(q->layers[1].w_qkv.plain() == w->layers[1].w_qkv.plain());
    ModelConfig base;
    base.tokenizer = TokenizerKind::Bpe;
    const ModelConfig cq = config_for_weights(*q, base), cw = config_for_weights(*w, base);
    ASSERT_EQ(cq, cw);
    for (int T : {1, 9}) {
      const Batch b = ids_batch(T, static_cast<int>(kShape.V));
      ForwardOptions fo;
      fo.want_logits = true;
      Result<ForwardOutput> oq = forward(*q, cq, b, fo), ow = forward(*w, cw, b, fo);
      ASSERT_TRUE(oq.ok() && ow.ok());
      EXPECT_LT(maps_gap(*oq, *ow), kOrderGap) << "T " << T;
      EXPECT_LT(relative_gap(oq->logits.data(), ow->logits.data(), oq->logits.size()), kOrderGap) << "T " << T;
      EXPECT_NEAR(oq->loss, ow->loss, kOrderGap * std::abs(ow->loss));
    }
    std::error_code ec;
    fs::remove(qp, ec), fs::remove(wp, ec);
  }
  std::error_code ec;
  fs::remove_all(root, ec);
}

// The loader's row and column reads on a tensor kept in blocks (rows permuted as llama's Q/K
// are): the widened rows, their columns, and a read past the tensor refused with a message.
TEST(QuantWeights, ReaderReadsRowsAndColumnsOfABlockTensor) {
  constexpr int64_t kRows = 6, kCols = 64;
  std::string bytes;
  test::gguf_writer_detail::random_weights(WeightDtype::Q8_0, kRows * kCols, 5, bytes);
  TensorSource src;
  BlockTensor& b = src.blocks["w.weight"];
  b.dtype = WeightDtype::Q8_0, b.shape = {kRows, kCols}, b.file = "mem";
  b.base = reinterpret_cast<const uint8_t*>(bytes.data());
  b.file_row = [](int64_t r) { return kRows - 1 - r; };  // reversed
  std::vector<float> wide(static_cast<size_t>(kRows * kCols));  // (rows, cols) in file order
  widen_weights(WeightDtype::Q8_0, b.base, kRows * kCols, wide.data());
  auto at = [&](int64_t r, int64_t c) { return wide[static_cast<size_t>((kRows - 1 - r) * kCols + c)]; };
  TensorReader r(src, "", "mem");
  std::vector<float> rows(static_cast<size_t>(2 * 40));  // (2, 40)
  ASSERT_TRUE(r.read_rows("w.weight", 3, 2, 40, rows.data()).ok());
  for (int64_t i = 0; i < 2; ++i)
    for (int64_t c = 0; c < 40; ++c) EXPECT_EQ(rows[static_cast<size_t>(i * 40 + c)], at(3 + i, c));
  std::vector<float> cols(static_cast<size_t>(kRows * 10));  // (rows, 10)
  ASSERT_TRUE(r.read_cols("w.weight", 33, 10, cols.data()).ok());
  for (int64_t i = 0; i < kRows; ++i)
    for (int64_t c = 0; c < 10; ++c) EXPECT_EQ(cols[static_cast<size_t>(i * 10 + c)], at(i, 33 + c));
  const Status past = r.read_cols("w.weight", 60, 10, cols.data());
  ASSERT_FALSE(past.ok());
  EXPECT_NE(past.error().message.find("has no rows"), std::string::npos) << past.error().message;
  std::vector<float> all(static_cast<size_t>(kRows * kCols));
  ASSERT_TRUE(r.read("w.weight", all.data()).ok());
  EXPECT_EQ(all[static_cast<size_t>(kCols + 7)], at(1, 7));
}

// The incremental forward on blocks: one token appended after 36 in the K/V cache (each
// matrix's few-row product on blocks, the unembedding's one row) equals the full recompute
// bit for bit: every map, each layer's output, the logits. One thread and two. In F32 and with
// 8-bit products (int8_products.h), whose rows the cache keeps apart: a pass in the other
// mode reuses none of them.
TEST(QuantWeights, AnAppendedTokenOnBlocksEqualsAFullRecomputeBitForBit) {
  const int threads = compute_threads();
  for (const test::GgufTypes& types : {test::GgufTypes::q4_k_m(), test::GgufTypes::all(WeightDtype::Q8_0), test::GgufTypes::all(WeightDtype::Q5_1)}) {
    const fs::path file = fs::temp_directory_path() / ("headmap_quant_append_" + std::to_string(::getpid()) + ".gguf");
    ASSERT_TRUE(test::write_llama_gguf(file.string(), kShape, types, 9, false));
    Result<ModelWeights> w = load_gguf_model(file.string());
    std::error_code ec;
    fs::remove(file, ec);
    ASSERT_TRUE(w.ok()) << w.error().message;
    SCOPED_TRACE(w->layers[0].w_qkv.dtype_text());
    ModelConfig base;
    base.tokenizer = TokenizerKind::Bpe;
    const ModelConfig cfg = config_for_weights(*w, base);
    const int V = static_cast<int>(kShape.V);
    MatR f32_logits;  // the F32 pass's, against which 8-bit products must differ
    for (bool int8 : {false, true})
      for (int nt : {1, 2}) {
        set_compute_threads(nt);
        SCOPED_TRACE(std::to_string(nt) + " threads" + (int8 ? ", 8-bit products" : ""));
        ForwardOptions opt;
        opt.want_logits = true;
        opt.keep_layer_io = true;
        opt.int8_products = int8;  // int8_products.h: each row alike, so the cache serves the mode too
        KvCache cache;
        ForwardOptions inc_opt = opt;
        inc_opt.kv_cache = &cache;
        ASSERT_TRUE(forward(*w, cfg, ids_batch(36, V), inc_opt));  // ids_batch(36) is ids_batch(37)'s first 36
        Result<ForwardOutput> inc = forward(*w, cfg, ids_batch(37, V), inc_opt), full = forward(*w, cfg, ids_batch(37, V), opt);
        ASSERT_TRUE(inc && full);
        ASSERT_EQ(inc->kv_computed, 1);
        EXPECT_TRUE(same_bits(inc->attention, full->attention)) << "maps";
        for (size_t l = 0; l < full->attn_out.size(); ++l) EXPECT_TRUE(inc->attn_out[l] == full->attn_out[l]) << "layer " << l;
        EXPECT_TRUE(inc->logits == full->logits) << "logits";
        if (!int8) {
          f32_logits = full->logits;
          continue;
        }
        // Q5_1 keeps F32's products in the mode; the others change.
        EXPECT_EQ(full->logits == f32_logits, w->layers[0].w_qkv.dtype_text() == "Q5_1" || !Int8Products::available());
        // The other mode through the same cache: nothing of it reused, F32's bits.
        ForwardOptions other = inc_opt;
        other.int8_products = false;
        Result<ForwardOutput> back = forward(*w, cfg, ids_batch(37, V), other);
        ASSERT_TRUE(back);
        EXPECT_EQ(back->kv_computed, 37) << "the cache held 8-bit products' rows";
        EXPECT_TRUE(back->logits == f32_logits);
      }
  }
  set_compute_threads(threads);
}

// stream_loss (model.h): a pass without logits, its loss from the final stream 16 rows at a
// time, equals the forward's own loss from its whole (T, V) block bit for bit (one rule,
// decoder_loss), in F32 and with 8-bit products, for 37 tokens (a chunk and a part).
TEST(QuantWeights, TheStreamedLossIsTheForwardsLoss) {
  const fs::path file = fs::temp_directory_path() / ("headmap_quant_loss_" + std::to_string(::getpid()) + ".gguf");
  ASSERT_TRUE(test::write_llama_gguf(file.string(), kShape, test::GgufTypes::q4_k_m(), 3, false));
  Result<ModelWeights> w = load_gguf_model(file.string());
  std::error_code ec;
  fs::remove(file, ec);
  ASSERT_TRUE(w.ok()) << w.error().message;
  ModelConfig base;
  base.tokenizer = TokenizerKind::Bpe;
  const ModelConfig cfg = config_for_weights(*w, base);
  const Batch batch = ids_batch(37, static_cast<int>(kShape.V));
  for (bool int8 : {false, true}) {
    ForwardOptions with;
    with.want_logits = true;
    with.int8_products = int8;
    ForwardOptions without = with;
    without.want_logits = false;
    Result<ForwardOutput> a = forward(*w, cfg, batch, with), b = forward(*w, cfg, batch, without);
    ASSERT_TRUE(a && b);
    ASSERT_EQ(b->logits.size(), 0);
    int n = 0;
    double loss = 0;
    {
      Int8Products mode(int8);  // the unembedding in the pass's mode
      loss = stream_loss(*w, batch, b->out, &n);
    }
    EXPECT_EQ(n, a->loss_tokens);
    EXPECT_EQ(loss, a->loss) << (int8 ? "8-bit products" : "F32");
  }
}

// BF16 products (packed_gemm.h, Bf16Products) on a file's blocks: from 8 rows, the widened
// values and A rounded to BF16 (nearest even), multiplied in pairs and summed in F32, within
// F32 accumulation's error of a float64 product of the rounded values; the packed matrix and
// the unembedding's transposed form, a chunk and a half of K, one and two threads, from 0 and
// accumulating. Fewer rows (a typing pass's: 4 and 7) keep the F32 kernels' bits.
TEST(QuantWeights, Bf16ProductsOnBlocksRoundBothSidesAndSumInF32) {
  if (!Bf16Products::available()) GTEST_SKIP() << "no avx512_bf16 in this CPU or build: the scope changes nothing there";
  const int threads = compute_threads();
  auto bf = [](float v) { return bf16_to_float(float_to_bf16(v)); };
  for (WeightDtype t : {WeightDtype::Q8_0, WeightDtype::Q4_K, WeightDtype::Q6_K, WeightDtype::IQ4_XS, WeightDtype::Q4_1}) {
    const int K = 768, N = 37;  // a chunk (512) and a half; a unit (48 columns) not full
    const BlockColumns bc = block_columns(t, K, N, 71);
    ASSERT_TRUE(bc.packed_ok);
    const MatR& wide = bc.wide;
    const PackedMatrix& qm = bc.packed;
    const std::string& table = bc.table;
    for (int M : {4, 7, 8, 13, 300}) {
      MatR A(M, K), C0(M, N), want(M, N), size(M, N);
      fill_normals(8, A.data(), A.size(), 1.0f);
      fill_normals(9, C0.data(), C0.size(), 1.0f);
      for (int i = 0; i < M; ++i)
        for (int n = 0; n < N; ++n) {
          double s = 0, z = 0;
          for (int k = 0; k < K; ++k) {
            const double p = static_cast<double>(bf(A(i, k))) * bf(wide(n, k));
            s += p, z += std::fabs(p);
          }
          want(i, n) = static_cast<float>(s), size(i, n) = static_cast<float>(z);
        }
      for (int nt : {1, 2}) {
        set_compute_threads(nt);
        SCOPED_TRACE(std::string(dtype_name(t)) + " " + std::to_string(M) + " rows, " + std::to_string(nt) + " threads");
        MatR f32(M, N), c(M, N), acc = C0, tq(M, N);
        packed_gemm(f32, A, qm);
        {
          Bf16Products on(true);
          packed_gemm(c, A, qm);
          packed_gemm(acc, A, qm, true);
          gemm_transposed_b(M, A.data(), K, N, K, reinterpret_cast<const uint8_t*>(table.data()), t, bc.row_bytes, tq.data(), N);
        }
        if (M < Bf16Products::kMinRows) {
          EXPECT_TRUE(c == f32) << "a typing pass keeps F32's products";
          continue;
        }
        double worst = 0;
        for (Eigen::Index i = 0; i < c.size(); ++i) {
          const double tol = 4e-7 * (K + 2) * (size.data()[i] + std::fabs(C0.data()[i])) + 1e-30;
          ASSERT_NEAR(c.data()[i], want.data()[i], tol) << "element " << i;
          ASSERT_NEAR(acc.data()[i], C0.data()[i] + want.data()[i], tol) << "accumulating, element " << i;
          ASSERT_NEAR(tq.data()[i], want.data()[i], tol) << "transposed, element " << i;
          worst = std::max(worst, static_cast<double>(std::fabs(c.data()[i] - f32.data()[i])));
        }
        EXPECT_GT(worst, 0.0) << "the products were not rounded";
      }
    }
  }
  set_compute_threads(threads);
}
