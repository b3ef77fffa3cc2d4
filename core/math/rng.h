// rng.h: deterministic randomness that does not depend on thread count or call order.
//
// Weights and hashed embeddings are drawn from counter-based streams: element i of a
// stream is a pure function of (stream key, i). The same seed therefore gives the same
// numbers on every run, every thread count and every head count.
#pragma once
#include <cmath>
#include <cstdint>
#include <string_view>

namespace headmap {

// splitmix64 finaliser: a good 64-bit mixer.
inline uint64_t mix64(uint64_t z) {
  z += 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// FNV-1a over bytes, then mixed.
inline uint64_t hash_bytes(std::string_view s, uint64_t seed = 0) {
  uint64_t h = 0xCBF29CE484222325ull ^ mix64(seed);
  for (unsigned char c : s) h = (h ^ c) * 0x100000001B3ull;
  return mix64(h);
}

inline uint64_t combine(uint64_t a, uint64_t b) { return mix64(a ^ (b + 0x9E3779B97F4A7C15ull + (a << 6) + (a >> 2))); }

// Uniform in (0, 1), never 0 (safe for log).
inline double uniform_at(uint64_t key, uint64_t i) {
  return (static_cast<double>(mix64(combine(key, i)) >> 11) + 0.5) * (1.0 / 9007199254740992.0);
}

// Standard normal, element i of stream `key` (Box-Muller on two uniforms, double
// precision, one output of the two). Scalar: for a few numbers (the trainer's init, tests).
// Weight matrices use fill_normals below.
inline float normal_at(uint64_t key, uint64_t i) {
  const double u1 = uniform_at(key, 2 * i);
  const double u2 = uniform_at(key, 2 * i + 1);
  return static_cast<float>(std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2));
}

// ---- the fast stream: fill_normals ----------------------------------------------------
// Element 2p and 2p+1 of stream `key` are both outputs of one Box-Muller transform of pair p:
//   a = fmix32(fmix32(p * 0x9E3779B9 + k0) ^ k1)             k0, k1 = low, high 32 bits of key
//   b = fmix32(fmix32(p * 0x85EBCA77 + k1) ^ k0 ^ 0x68E31DA4)
//   u1 = ((a >> 9) + 0.5) / 2^23 in (0, 1),  theta = 2 pi ((b >> 8) / 2^24 - 0.5)
//   (both exact in float: 23 and 24 bits)
//   z[2p] = sqrt(-2 ln u1) cos theta,  z[2p+1] = sqrt(-2 ln u1) sin theta
// 32-bit lanes and float maths, so it vectorises; every element depends on (key, p) only,
// so any thread count and any split gives the same numbers. tests/reference/normals.py is
// the same definition in numpy, and a test holds the two together.

// murmur3's 32-bit finaliser.
inline uint32_t fmix32(uint32_t h) {
  h ^= h >> 16;
  h *= 0x85EBCA6Bu;
  h ^= h >> 13;
  h *= 0xC2B2AE35u;
  h ^= h >> 16;
  return h;
}

// The integer parts of pair p's two uniforms (see above): a < 2^23, b < 2^24.
inline void normal_pair_bits(uint64_t key, uint32_t p, uint32_t* a, uint32_t* b) {
  const uint32_t k0 = static_cast<uint32_t>(key), k1 = static_cast<uint32_t>(key >> 32);
  *a = fmix32(fmix32(p * 0x9E3779B9u + k0) ^ k1) >> 9;
  *b = fmix32(fmix32(p * 0x85EBCA77u + k1) ^ k0 ^ 0x68E31DA4u) >> 8;
}

// out[0, n) = scale * z[0, n) of stream `key`, vectorised and on the compute threads.
// n < 2^33 (pairs are 32-bit).
void fill_normals(uint64_t key, float* out, int64_t n, float scale = 1.0f);
// out[0, n) = scale * z[first, first + n): a slice of the same stream (`first` even), so a
// matrix can be drawn a block of rows at a time.
void fill_normals_slice(uint64_t key, int64_t first, float* out, int64_t n, float scale = 1.0f);

// A small sequential generator for sampling (batches, probe sequences).
struct Rng {
  uint64_t state;
  explicit Rng(uint64_t seed) : state(mix64(seed)) {}
  uint64_t next() { return mix64(state += 0x9E3779B97F4A7C15ull); }
  double uniform() { return (static_cast<double>(next() >> 11) + 0.5) * (1.0 / 9007199254740992.0); }
  int below(int n) { return static_cast<int>(next() % static_cast<uint64_t>(n)); }
};

}  // namespace headmap
