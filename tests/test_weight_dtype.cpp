// test_weight_dtype.cpp: the vectorised widening of a GGUF file's blocks (weight_dtype.cpp's
// AVX2 twins, packed_gemm.cpp's transposition into the GEMM's panels) gives the scalar
// dequantizers' floats bit for bit: on random blocks of every type (random bytes: any code,
// any F16 scale), on blocks whose scales are the F16 edge values (subnormals, the largest,
// zero and minus zero, infinities and NaN, as a hostile file may hold: NaN stays NaN, nothing
// crashes), and inside widen_panel's (kc, kPanel) panels of mixed types and a partial panel.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "core/math/finite_blocks.h"
#include "core/math/packed_gemm.h"
#include "core/math/weight_dtype_scalar.h"
#include "gguf_writer.h"

using namespace headmap;

namespace {
// Equal bits, or both NaN (a NaN's payload is the hardware's choice, not the format's).
::testing::AssertionResult same_floats(const std::vector<float>& want, const std::vector<float>& got) {
  for (size_t i = 0; i < want.size(); ++i) {
    if (std::isnan(want[i]) && std::isnan(got[i])) continue;
    if (std::memcmp(&want[i], &got[i], 4) != 0)
      return ::testing::AssertionFailure() << "element " << i << ": scalar " << want[i] << ", vectorised " << got[i];
  }
  return ::testing::AssertionSuccess();
}

std::vector<WeightDtype> block_types() {
  std::vector<WeightDtype> ts;
  for (int i = 0; i < kWeightDtypes; ++i)
    if (is_block_dtype(static_cast<WeightDtype>(i))) ts.push_back(static_cast<WeightDtype>(i));
  return ts;
}
}  // namespace

TEST(WeightDtype, VectorisedWideningEqualsTheScalarBitForBit) {
  // F16 scales: subnormals, the smallest normal, the largest finite, zeros, infinities, NaNs.
  const uint16_t edges[] = {0x0001, 0x03FF, 0x8001, 0x0400, 0x7BFF, 0xFBFF, 0x0000, 0x8000, 0x7C00, 0xFC00, 0x7E00, 0x7C01, 0xFFFF};
  for (WeightDtype t : block_types()) {
    SCOPED_TRACE(dtype_name(t));
    const int blk = weight_dtype_info(t).block, bytes = weight_dtype_info(t).bytes;
    const int64_t n = 64 * blk;  // 64 blocks
    std::string raw(static_cast<size_t>(dtype_bytes(t, n)), '\0');
    uint64_t s = 7 + static_cast<uint64_t>(t);
    for (char& c : raw) c = static_cast<char>(test::gguf_writer_detail::splitmix(s) >> 56);  // random codes and scales
    std::vector<float> want(static_cast<size_t>(n)), got(static_cast<size_t>(n));
    auto check = [&](const char* what) {
      widen_weights_scalar(t, reinterpret_cast<const uint8_t*>(raw.data()), n, want.data());
      widen_weights(t, reinterpret_cast<const uint8_t*>(raw.data()), n, got.data());
      EXPECT_TRUE(same_floats(want, got)) << what;
    };
    check("random bytes");
    // Each scale field of block b set to edge b % 13 (and the others kept), every block
    // again with the edges rotated so that a minimum meets each scale.
    for (int rot = 0; rot < 2; ++rot) {
      const std::vector<int> fields = test::gguf_writer_detail::scale_fields(t);
      for (int b = 0; b < 64; ++b)
        for (size_t f = 0; f < fields.size(); ++f) {
          const uint16_t e = edges[(b + rot * 5 * static_cast<int>(f)) % 13];
          std::memcpy(&raw[static_cast<size_t>(b) * bytes + static_cast<size_t>(fields[f])], &e, 2);
        }
      check(rot ? "edge scales, rotated" : "edge scales");
    }
    // The format's own scales (the writer's random model): finite values, checked for finiteness.
    test::gguf_writer_detail::random_weights(t, n, 5, raw);
    check("the writer's blocks");
    for (float v : got) ASSERT_TRUE(std::isfinite(v));
  }
}

// widened_values_finite (the loader's check, which reads only the scales) agrees with widening
// every value and looking at it: each block alone and whole rows, every block type, with each
// scale field set to each F16 edge (infinities and NaNs among them), and 16-bit values.
TEST(WeightDtype, TheFiniteCheckOnScalesAgreesWithTheWidenedValues) {
  const uint16_t edges[] = {0x0001, 0x03FF, 0x8001, 0x0400, 0x7BFF, 0xFBFF, 0x0000, 0x8000, 0x7C00, 0xFC00, 0x7E00, 0x7C01, 0xFFFF};
  auto widened_finite = [](WeightDtype t, const uint8_t* src, int64_t n) {
    std::vector<float> v(static_cast<size_t>(n));
    widen_weights_scalar(t, src, n, v.data());
    for (float x : v)
      if (!std::isfinite(x)) return false;
    return true;
  };
  for (WeightDtype t : block_types()) {
    SCOPED_TRACE(dtype_name(t));
    const int blk = weight_dtype_info(t).block, bytes = weight_dtype_info(t).bytes;
    const std::vector<int> fields = test::gguf_writer_detail::scale_fields(t);
    std::string raw;
    test::gguf_writer_detail::random_weights(t, 64 * blk, 3, raw);  // finite scales, random codes
    const auto* row = reinterpret_cast<const uint8_t*>(raw.data());
    EXPECT_TRUE(widened_values_finite(t, row, 64 * blk));
    int infinite = 0;
    for (int b = 0; b < 64; ++b) {
      std::string one = raw.substr(static_cast<size_t>(b) * bytes, static_cast<size_t>(bytes));
      const uint16_t e = edges[b % 13];
      std::memcpy(&one[static_cast<size_t>(fields[static_cast<size_t>(b / 13) % fields.size()])], &e, 2);
      const auto* block = reinterpret_cast<const uint8_t*>(one.data());
      const bool want = widened_finite(t, block, blk);
      infinite += !want;
      EXPECT_EQ(widened_values_finite(t, block, blk), want) << "block " << b << ", scale 0x" << std::hex << e;
      std::string whole = raw;
      whole.replace(static_cast<size_t>(b) * bytes, static_cast<size_t>(bytes), one);
      EXPECT_EQ(widened_values_finite(t, reinterpret_cast<const uint8_t*>(whole.data()), 64 * blk), want) << "in a row, block " << b;
    }
    EXPECT_GT(infinite, 0) << "some edges give values that are not finite";
  }
  for (WeightDtype t : {WeightDtype::BF16, WeightDtype::F16}) {
    std::vector<uint16_t> v(40, 0x3F80);
    for (uint16_t e : edges) {
      v[37] = e;
      const auto* p = reinterpret_cast<const uint8_t*>(v.data());
      EXPECT_EQ(widened_values_finite(t, p, 40), widened_finite(t, p, 40)) << dtype_name(t) << " 0x" << std::hex << e;
    }
  }
}

// widen_panel: each column's values, widened by the scalar dequantizer, at (k, j) of the
// panel; zero past the last column. Mixed types in one matrix, several panels, kc = a whole
// sub-panel and a part of one; 16-bit columns kept as blocks of one element, with K not a
// multiple of eight (the transposition's scalar path).
TEST(WeightDtype, BlockPanelsWidenAsTheScalarDequantizers) {
  constexpr int kP = PackedMatrix::kPanel;
  struct Case {
    std::vector<WeightDtype> types;  // cycled over the columns
    int K, N;
  };
  const std::vector<Case> cases = {{{WeightDtype::Q4_K, WeightDtype::Q6_K}, 1024, 2 * kP + 5},
                                   {block_types(), 512, 3 * kP},
                                   {{WeightDtype::Q8_0, WeightDtype::IQ4_NL, WeightDtype::Q5_1}, 96, kP - 3},
                                   {{WeightDtype::F16, WeightDtype::BF16, WeightDtype::F32}, 37, kP + 1}};
  for (const Case& c : cases) {
    SCOPED_TRACE(std::to_string(c.K) + " x " + std::to_string(c.N));
    std::vector<std::string> rows(static_cast<size_t>(c.N));
    std::vector<const uint8_t*> src;
    std::vector<WeightDtype> types;
    for (int j = 0; j < c.N; ++j) {
      const WeightDtype t = c.types[static_cast<size_t>(j) % c.types.size()];
      ASSERT_EQ(c.K % weight_dtype_info(t).block, 0) << dtype_name(t) << ": rows of whole blocks";
      test::gguf_writer_detail::random_weights(t, c.K, 40 + static_cast<uint64_t>(j), rows[static_cast<size_t>(j)]);
      src.push_back(reinterpret_cast<const uint8_t*>(rows[static_cast<size_t>(j)].data()));
      types.push_back(t);
    }
    PackedMatrix m;
    ASSERT_TRUE(m.assign_blocks(src, types, c.K));
    const int sub = c.K > 512 ? 512 : c.K;  // the kernel's sub-panel (kKC), or the whole
    for (int p = 0; p < m.panels(); ++p)
      for (int k0 = 0; k0 < c.K; k0 += sub) {
        std::vector<float> wide(static_cast<size_t>(sub) * kP, -1.0f), want(wide.size(), 0.0f);
        m.widen_panel(p, k0, sub, wide.data());
        std::vector<float> col(static_cast<size_t>(c.K));
        for (int j = 0; j < kP && p * kP + j < c.N; ++j) {
          const int n = p * kP + j;
          widen_weights_scalar(types[static_cast<size_t>(n)], src[static_cast<size_t>(n)], c.K, col.data());
          for (int k = 0; k < sub; ++k) want[static_cast<size_t>(k) * kP + j] = col[static_cast<size_t>(k0 + k)];
        }
        EXPECT_TRUE(same_floats(want, wide)) << "panel " << p << ", rows from " << k0;
      }
  }
}
