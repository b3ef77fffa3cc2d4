// test_quant_weights.cpp: a GGUF file's quantized matrices kept in their blocks in memory
// (packed_gemm.h's block storage, gguf_model.cpp). The same Llama-shaped model is written
// twice (tests/gguf_writer.h): once in a block type, once in F32 holding exactly the values
// those blocks widen to (the model a loader that widens at load holds). The first must load
// with every matrix and the embedding still in blocks (the bytes of the file's blocks, no
// F32 copy), and both must give the same forward pass bit for bit: every attention map, every
// logit, the loss; one and two threads; one token and 37; every block type, a Q4_K_M-style
// mix of types inside one fused W_QKV, tied and untied unembedding. (The widening itself is
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
#include "core/math/gemm.h"
#include "core/math/rng.h"
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
}  // namespace

TEST(QuantWeights, BlockTypesStayInBlocksAndGiveTheWidenedForwardBitForBit) {
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
        EXPECT_TRUE(same_bits(oq->attention, ow->attention)) << "T " << T << ", " << nt << " threads";
        ASSERT_EQ(oq->logits.size(), static_cast<Eigen::Index>(T) * kShape.V);
        EXPECT_TRUE(oq->logits == ow->logits) << "T " << T << ", " << nt << " threads";
        EXPECT_EQ(oq->loss, ow->loss);
        EXPECT_TRUE(oq->out == ow->out);
      }
    }
    std::error_code ec;
    fs::remove(qp, ec), fs::remove(wp, ec);
  }
  set_compute_threads(threads);
  std::error_code ec;
  fs::remove_all(root, ec);
}

// The block kernel against the F32 kernel on the widened matrix, at the shapes the forward
// does not reach: an edge panel, several kKC sub-panels, many rows, accumulation.
TEST(QuantWeights, BlockGemmEqualsTheF32GemmOfItsWidenedValues) {
  const int threads = compute_threads();
  for (WeightDtype t : {WeightDtype::Q8_0, WeightDtype::Q4_1, WeightDtype::Q3_K, WeightDtype::Q6_K}) {
    const int blk = weight_dtype_info(t).block;
    for (int K : {blk, 3 * 512 + 2 * 256}) {
      for (int N : {1, 37, 70}) {
        std::vector<std::string> rows(static_cast<size_t>(N));
        std::vector<const uint8_t*> src;
        for (int c = 0; c < N; ++c) {
          test::gguf_writer_detail::random_weights(t, K, 31 + static_cast<uint64_t>(c), rows[static_cast<size_t>(c)]);
          src.push_back(reinterpret_cast<const uint8_t*>(rows[static_cast<size_t>(c)].data()));
        }
        PackedMatrix qm;
        ASSERT_TRUE(qm.assign_blocks(src, std::vector<WeightDtype>(static_cast<size_t>(N), t), K));
        const PackedMatrix fm(qm.plain());  // (K, N) F32, the widened values
        for (int M : {1, 3, 9, 300}) {
          MatR A(M, K), cq(M, N), cf(M, N);
          fill_normals(5, A.data(), A.size(), 1.0f);
          for (int nt : {1, 2}) {
            set_compute_threads(nt);
            packed_gemm(cq, A, qm);
            packed_gemm(cf, A, fm);
            EXPECT_TRUE(cq == cf) << dtype_name(t) << " " << M << "x" << K << "x" << N << ", " << nt << " threads";
            packed_gemm(cq, A, qm, true);
            packed_gemm(cf, A, fm, true);
            EXPECT_TRUE(cq == cf) << dtype_name(t) << " accumulating";
          }
          // The unembedding's form: C = A Bt^T with Bt (N, K) the rows of blocks.
          std::string table;
          for (const std::string& r : rows) table += r;
          MatR tq(M, N), tf(M, N);
          const MatR Bt = fm.plain().transpose();  // (N, K)
          gemm_transposed_b(M, A.data(), K, N, K, reinterpret_cast<const uint8_t*>(table.data()), t, rows[0].size(), tq.data(), N);
          gemm_transposed_b(M, A.data(), K, N, K, Bt.data(), K, tf.data(), N);
          EXPECT_TRUE(tq == tf) << dtype_name(t) << " transposed " << M << "x" << K << "x" << N;
        }
      }
    }
  }
  set_compute_threads(threads);
}

// A quantized file may hold some matrices in F32, F16 or BF16 (llama.cpp leaves small or
// sensitive tensors unquantized): among block matrices they are kept as blocks of one element
// (a 16-bit matrix of its own, W_down here, as 16-bit panels),
// an F32 embedding is widened into tok_emb (the F32 table), a 16-bit one or a block
// unembedding kept as NarrowRows. Each such file gives its widened twin's forward bit for bit.
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
      EXPECT_TRUE(same_bits(oq->attention, ow->attention)) << "T " << T;
      EXPECT_TRUE(oq->logits == ow->logits) << "T " << T;
      EXPECT_EQ(oq->loss, ow->loss);
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
// bit for bit: every map, each layer's output, the logits. One thread and two.
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
    for (int nt : {1, 2}) {
      set_compute_threads(nt);
      ForwardOptions opt;
      opt.want_logits = true;
      opt.keep_layer_io = true;
      KvCache cache;
      ForwardOptions inc_opt = opt;
      inc_opt.kv_cache = &cache;
      ASSERT_TRUE(forward(*w, cfg, ids_batch(36, V), inc_opt));  // ids_batch(36) is ids_batch(37)'s first 36
      Result<ForwardOutput> inc = forward(*w, cfg, ids_batch(37, V), inc_opt), full = forward(*w, cfg, ids_batch(37, V), opt);
      ASSERT_TRUE(inc && full);
      ASSERT_EQ(inc->kv_computed, 1);
      EXPECT_TRUE(same_bits(inc->attention, full->attention)) << nt << " threads: maps";
      for (size_t l = 0; l < full->attn_out.size(); ++l) EXPECT_TRUE(inc->attn_out[l] == full->attn_out[l]) << nt << " threads, layer " << l;
      EXPECT_TRUE(inc->logits == full->logits) << nt << " threads: logits";
    }
  }
  set_compute_threads(threads);
}
