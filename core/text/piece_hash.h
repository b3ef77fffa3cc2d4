// piece_hash.h: a vocabulary's pieces found by a rolling hash (WordPiece and Unigram).
//
// Both models try every piece that starts at one place of a word: WordPiece the longest
// first, Unigram all of them. Looking each candidate up by its bytes costs its length, so a
// place cost O(longest²) and a word O(n · longest²), or O(n³) for WordPiece when a file set
// max_input_chars_per_word high (issue 35, F6: 16,000 characters took over a minute). Here a
// word's prefix hashes are computed once, a candidate's hash is O(1), and a hit is confirmed
// by comparing the bytes, so a collision costs time, never a wrong id. Hashes are modulo the
// Mersenne prime 2^61 - 1 (no Thue-Morse collisions, as modulo 2^64 has).
//
// n = bytes of a word.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace headmap {

class PieceHash {
 public:
  static constexpr uint64_t kMod = (uint64_t(1) << 61) - 1;
  static constexpr uint64_t kBase = 1000003;

  static uint64_t mulmod(uint64_t a, uint64_t b) {
    const unsigned __int128 p = static_cast<unsigned __int128>(a) * b;
    uint64_t r = static_cast<uint64_t>(p & kMod) + static_cast<uint64_t>(p >> 61);
    if (r >= kMod) r -= kMod;
    return r;
  }
  static uint64_t add(uint64_t a, uint64_t b) {
    uint64_t r = a + b;
    if (r >= kMod) r -= kMod;
    return r;
  }
  static uint64_t hash(std::string_view s) {
    uint64_t h = 0;
    for (unsigned char c : s) h = add(mulmod(h, kBase), uint64_t(c) + 1);
    return h;
  }

  // A word's prefix hashes: of(b, e) is hash(word.substr(b, e - b)) in O(1).
  struct Prefixes {
    std::vector<uint64_t> h, pow;  // (n + 1) each: h[i] = hash of the first i bytes, pow[i] = kBase^i
    explicit Prefixes(std::string_view w) : h(w.size() + 1, 0), pow(w.size() + 1, 1) {
      for (size_t i = 0; i < w.size(); ++i) {
        h[i + 1] = add(mulmod(h[i], kBase), uint64_t(static_cast<unsigned char>(w[i])) + 1);
        pow[i + 1] = mulmod(pow[i], kBase);
      }
    }
    uint64_t of(size_t b, size_t e) const { return add(h[e], kMod - mulmod(h[b], pow[e - b])); }
    // hash(head + word.substr(b, e - b)), head's hash given.
    uint64_t after(uint64_t head, size_t b, size_t e) const { return add(mulmod(head, pow[e - b]), of(b, e)); }
  };

  // A piece and its id; the caller keeps the bytes alive and unmoved (a vocabulary's index
  // keys: a node-based map keeps them in place), and adds each piece once.
  void add(std::string_view piece, int id) { by_hash_.emplace(hash(piece), Entry{piece, id}); }
  void reserve(size_t n) { by_hash_.reserve(n); }
  // The id of the piece whose hash is h and whose bytes are head + body, else -1.
  int find(uint64_t h, std::string_view head, std::string_view body) const {
    auto [lo, hi] = by_hash_.equal_range(h);
    for (auto it = lo; it != hi; ++it) {
      const std::string_view t = it->second.piece;
      if (t.size() == head.size() + body.size() && t.substr(0, head.size()) == head && t.substr(head.size()) == body) return it->second.id;
    }
    return -1;
  }

 private:
  struct Entry {
    std::string_view piece;
    int id;
  };
  std::unordered_multimap<uint64_t, Entry> by_hash_;
};

}  // namespace headmap
