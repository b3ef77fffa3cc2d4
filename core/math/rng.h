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

// Standard normal, element i of stream `key` (Box-Muller on two uniforms).
inline float normal_at(uint64_t key, uint64_t i) {
  const double u1 = uniform_at(key, 2 * i);
  const double u2 = uniform_at(key, 2 * i + 1);
  return static_cast<float>(std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2));
}

// A small sequential generator for sampling (batches, probe sequences).
struct Rng {
  uint64_t state;
  explicit Rng(uint64_t seed) : state(mix64(seed)) {}
  uint64_t next() { return mix64(state += 0x9E3779B97F4A7C15ull); }
  double uniform() { return (static_cast<double>(next() >> 11) + 0.5) * (1.0 / 9007199254740992.0); }
  int below(int n) { return static_cast<int>(next() % static_cast<uint64_t>(n)); }
};

}  // namespace headmap
