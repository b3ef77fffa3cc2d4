// panel_kernel.h: what packed_gemm.cpp's kernels share about a PackedMatrix panel (its
// width, the tile's rows, a row widened to F32), and the many-row product
// (packed_gemm_rows.cpp). Internal to core/math.
#pragma once
#include <Eigen/Core>
#include <cstdint>
#include <type_traits>
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

#include "core/math/gemm.h"
#include "core/math/packed_gemm.h"
#include "core/math/weight_dtype.h"

namespace headmap::panel_kernel {

using Packet = Eigen::internal::packet_traits<float>::type;
constexpr int kNR = PackedMatrix::kPanel;  // columns per tile: 2 registers
// Rows per tile: 8 x 2 accumulators with 32 vector registers (AVX-512), 6 x 2 with 16.
constexpr int kMR = kFloatLanes >= 16 ? 8 : 6;

// The element type a panel holds: float, or the 16-bit values of a BF16 / F16 file.
template <WeightDtype DT>
using Elem = std::conditional_t<DT == WeightDtype::F32, float, uint16_t>;

// Row k of a panel (kNR values) as two F32 registers. The 16-bit kinds are widened exactly:
// BF16 is the top half of a float (zero-extend, shift left 16), F16 goes through the
// hardware conversion (or half_to_float where there is none).
template <WeightDtype DT>
inline void load_row(const Elem<DT>* p, Packet& b0, Packet& b1) {
  using namespace Eigen::internal;
  if constexpr (DT == WeightDtype::F32) {
    b0 = pload<Packet>(p);
    b1 = pload<Packet>(p + kFloatLanes);
  } else {
#if defined(__AVX512F__)
    if constexpr (kFloatLanes == 16) {
      const __m256i lo = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
      const __m256i hi = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 16));
      if constexpr (DT == WeightDtype::BF16) {
        b0 = _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(lo), 16));
        b1 = _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(hi), 16));
      } else {
        b0 = _mm512_cvtph_ps(lo);
        b1 = _mm512_cvtph_ps(hi);
      }
      return;
    }
#endif
#if defined(__AVX2__) && defined(__F16C__)
    if constexpr (kFloatLanes == 8) {
      const __m128i lo = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
      const __m128i hi = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 8));
      if constexpr (DT == WeightDtype::BF16) {
        b0 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(lo), 16));
        b1 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(hi), 16));
      } else {
        b0 = _mm256_cvtph_ps(lo);
        b1 = _mm256_cvtph_ps(hi);
      }
      return;
    }
#endif
    alignas(64) float wide[kNR];
    for (int j = 0; j < kNR; ++j) wide[j] = narrow_to_float(p[j], DT);
    b0 = pload<Packet>(wide);
    b1 = pload<Packet>(wide + kFloatLanes);
  }
}

// C (M, N) = A (M, K) B, or C += A B, for M >= kMR rows against an F32 or 16-bit B, on nt
// threads (packed_gemm_rows.cpp).
void many_rows(int nt, int M, const float* A, int lda, const PackedMatrix& B, float* C, int ldc, bool accumulate);

}  // namespace headmap::panel_kernel
