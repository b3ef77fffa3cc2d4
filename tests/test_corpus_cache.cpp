// test_corpus_cache.cpp: the corpus search's index and its file (core/inspect/corpus_search.h,
// core/io/corpus_cache.h). One pass indexes every head, and a head read from the index equals
// its own search; the file written comes back equal, and a file that is cut, changed, made for
// another model or file, or forged with a checksum of its own is refused with its reason,
// never trusted. (The numbers themselves are held to float64 numpy by corpus_search_matches_numpy.)
//
// L = layers, Hw = heads in the maps
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "core/io/corpus_cache.h"
#include "core/io/file_io.h"
#include "core/math/rng.h"
#include "core/model/attention.h"
#include "core/model/weights.h"

namespace headmap {
namespace {

std::vector<std::string> some_lines() {
  return {"the cat sat on the mat because it was tired", "a dog ran after the ball", "the cat and the dog sat on the mat",
          "one two three four five six seven", "she said that the cat sat on the mat", "the ball ran after a dog",
          "seven six five four three two one", "it was tired because the dog ran"};
}

struct Indexed {
  ModelConfig cfg;
  ModelWeights w;
  std::vector<std::string> lines = some_lines();
  std::string bytes;  // the corpus file's
  CorpusIndex ix;
  uint64_t key = 0;
  int Hw = 0;
};

Indexed indexed(CorpusStat stat = CorpusStat::Weight) {
  Indexed t;
  t.cfg.d_model = 32;
  t.cfg.num_heads = 4;
  t.cfg.num_layers = 2;
  t.w = random_weights(t.cfg.d_model, t.cfg.num_layers, t.cfg.seed);
  for (const std::string& l : t.lines) t.bytes += l + "\n";
  Result<CorpusIndex> ix = corpus_index(t.w, t.cfg, t.lines, 5, stat, 3);  // 3 lines a pass: the offsets widen across chunks
  EXPECT_TRUE(ix) << (ix ? "" : ix.error().message);
  t.ix = std::move(ix).value();
  t.key = corpus_index_key(t.w, t.cfg, t.bytes, stat);
  t.Hw = weight_heads(mha_options(t.cfg));
  return t;
}

TEST(CorpusIndex, EveryHeadReadFromOnePassEqualsItsOwnSearch) {
  for (CorpusStat stat : {CorpusStat::Weight, CorpusStat::ValueNorm}) {
  SCOPED_TRACE(corpus_stat_name(stat));
  const Indexed t = indexed(stat);
  ASSERT_EQ(t.ix.L, 2);
  ASSERT_EQ(t.ix.Hw, 4);
  ASSERT_EQ(t.ix.stat, stat);
  for (int l = 0; l < 2; ++l)
    for (int h = 0; h < 4; ++h) {
      Result<CorpusSearch> one = corpus_search(t.w, t.cfg, t.lines, l, h, 5, stat);  // its own pass, every line at once
      Result<CorpusSearch> from = corpus_search_in(t.ix, t.w, t.cfg, t.lines, l, h, 5);
      ASSERT_TRUE(one && from);
      ASSERT_EQ(one->hits.size(), 5u);
      ASSERT_EQ(from->hits.size(), 5u);
      for (size_t i = 0; i < 5; ++i) {
        EXPECT_EQ(from->hits[i].line, one->hits[i].line);
        EXPECT_EQ(from->hits[i].query, one->hits[i].query);
        EXPECT_EQ(from->hits[i].key, one->hits[i].key);
        EXPECT_EQ(from->hits[i].weight, one->hits[i].weight);
        EXPECT_NEAR(from->hits[i].score, one->hits[i].score, 1e-5f * one->hits[i].score);  // the norms' products round by the chunk's rows
        if (stat == CorpusStat::Weight) EXPECT_EQ(one->hits[i].score, one->hits[i].weight);
        EXPECT_EQ(from->hits[i].token_ids, one->hits[i].token_ids);
      }
      ASSERT_EQ(from->by_offset.size(), one->by_offset.size());
      for (size_t i = 0; i < one->by_offset.size(); ++i) EXPECT_NEAR(from->by_offset[i], one->by_offset[i], 1e-6f);
      // A causal head puts nothing at d < 0; at d >= 0 the weights of a row sum to 1, so over every row they do too.
      double sum_rows = 0;
      for (size_t i = 0; i < one->by_offset.size(); ++i) {
        const int d = static_cast<int>(i) - one->len + 1;
        if (d < 0) {
          EXPECT_EQ(one->by_offset[i], 0.0f);
        }
        sum_rows += static_cast<double>(one->by_offset[i]) * one->rows_at[i];
      }
      EXPECT_NEAR(sum_rows, one->rows, 1e-3);
    }
  }
}

// The value-weighted statistic ranks other cells than the weights (the norms are not all
// equal), and a model under a pitfall that has no per-head values is refused, not searched.
TEST(CorpusIndex, TheValueWeightedNormRanksOtherCellsAndNeedsPerHeadValues) {
  const Indexed a = indexed(CorpusStat::Weight), v = indexed(CorpusStat::ValueNorm);
  int differ = 0;
  for (size_t hh = 0; hh < a.ix.hits.size(); ++hh)
    for (size_t i = 0; i < a.ix.hits[hh].size(); ++i)
      differ += a.ix.hits[hh][i].line != v.ix.hits[hh][i].line || a.ix.hits[hh][i].query != v.ix.hits[hh][i].query ||
                a.ix.hits[hh][i].key != v.ix.hits[hh][i].key;
  EXPECT_GT(differ, 0);
  ModelConfig averaged = a.cfg;
  averaged.pitfalls.head_averaged = true;
  Result<CorpusIndex> r = corpus_index(a.w, averaged, a.lines, 5, CorpusStat::ValueNorm);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().kind, ErrorKind::InvalidArgument);
  EXPECT_TRUE(corpus_index(a.w, averaged, a.lines, 5, CorpusStat::Weight));
}

TEST(CorpusCache, WhatIsWrittenComesBackEqual) {
  for (CorpusStat stat : {CorpusStat::Weight, CorpusStat::ValueNorm}) {
  SCOPED_TRACE(corpus_stat_name(stat));
  const Indexed t = indexed(stat);
  const std::string bytes = corpus_index_bytes(t.ix, t.key);
  Result<CorpusIndex> back = parse_corpus_index(bytes, t.key, static_cast<int>(t.lines.size()), 2, t.Hw);
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(corpus_index_bytes(*back, t.key), bytes);
  EXPECT_EQ(back->stat, stat);
  // On disk, atomically, in a directory made for it.
  const std::string dir = (std::filesystem::temp_directory_path() / ("headmap-corpus-cache-" + std::to_string(::getpid())) / "sub").string();
  ASSERT_TRUE(write_corpus_cache(dir, t.key, t.ix));
  Result<CorpusIndex> read = read_corpus_cache(dir, t.key, static_cast<int>(t.lines.size()), 2, t.Hw);
  ASSERT_TRUE(read) << read.error().message;
  EXPECT_EQ(corpus_index_bytes(*read, t.key), bytes);
  // Nothing there for another key: an Io error (no file), not a crash.
  Result<CorpusIndex> none = read_corpus_cache(dir, t.key + 1, static_cast<int>(t.lines.size()), 2, t.Hw);
  ASSERT_FALSE(none);
  EXPECT_EQ(none.error().kind, ErrorKind::Io);
  std::filesystem::remove_all(std::filesystem::path(dir).parent_path());
  }
}

TEST(CorpusCache, TheKeyFollowsTheModelTheConfigAndEveryByteOfTheFile) {
  const Indexed t = indexed();
  EXPECT_EQ(corpus_index_key(t.w, t.cfg, t.bytes), t.key);  // the same inputs, the same key
  EXPECT_NE(corpus_index_key(t.w, t.cfg, t.bytes, CorpusStat::ValueNorm), t.key);  // each statistic its own index
  EXPECT_NE(corpus_index_key(t.w, t.cfg, t.bytes + "x"), t.key);
  std::string edited = t.bytes;
  edited[3] = 'C';
  EXPECT_NE(corpus_index_key(t.w, t.cfg, edited), t.key);
  ModelConfig h2 = t.cfg;
  h2.num_heads = 2;  // the same weights re-sliced: other maps
  EXPECT_NE(corpus_index_key(t.w, h2, t.bytes), t.key);
  const ModelWeights other = random_weights(t.cfg.d_model, t.cfg.num_layers, t.cfg.seed + 1);
  EXPECT_NE(corpus_index_key(other, t.cfg, t.bytes), t.key);
  // A fine-tune that changes one value anywhere the maps depend on (here a later layer's W_O,
  // W_down or MLP norm, none of which the embeddings or the projections show) is another key.
  auto changed = [&](auto edit) {
    ModelWeights m = t.w;
    edit(m);
    return corpus_index_key(m, t.cfg, t.bytes);
  };
  auto bump = [](PackedMatrix& pm, Eigen::Index r, Eigen::Index c) {
    PackedMatrix::Plain p = pm.plain();
    p(r, c) += 0.25f;
    pm = PackedMatrix(p);
  };
  EXPECT_NE(changed([&](ModelWeights& m) { bump(m.layers[0].w_o, 3, 5); }), t.key);
  EXPECT_NE(changed([&](ModelWeights& m) { bump(m.layers[0].w_proj, m.layers[0].w_proj.rows() - 1, 0); }), t.key);
  EXPECT_NE(changed([&](ModelWeights& m) { m.layers[0].ln2_g(1) += 0.5f; }), t.key);
}

TEST(CorpusCache, ACutChangedStaleOrForgedFileIsRefused) {
  const Indexed t = indexed();
  const std::string good = corpus_index_bytes(t.ix, t.key);
  const int n = static_cast<int>(t.lines.size());
  auto refused = [&](const std::string& b, uint64_t key, int lines, int L, int Hw) {
    Result<CorpusIndex> r = parse_corpus_index(b, key, lines, L, Hw);
    return !r && r.error().kind == ErrorKind::BadFormat;
  };
  for (size_t cut = 0; cut < good.size(); ++cut) ASSERT_TRUE(refused(good.substr(0, cut), t.key, n, 2, t.Hw)) << "cut at " << cut;
  for (size_t at = 0; at < good.size(); ++at) {  // every byte changed
    std::string b = good;
    b[at] = static_cast<char>(b[at] ^ 0x5a);
    ASSERT_TRUE(refused(b, t.key, n, 2, t.Hw)) << "byte " << at;
  }
  EXPECT_TRUE(refused(good + "x", t.key, n, 2, t.Hw));
  EXPECT_TRUE(refused(good, t.key ^ 1, n, 2, t.Hw));  // made for another model or file
  EXPECT_TRUE(refused(good, t.key, n, 2, 2));          // maps of another shape
  EXPECT_TRUE(refused(good, t.key, 1, 2, t.Hw));       // a file with fewer lines than it names
  // Forged: a hit's line far outside the file, with the checksum made again. The checksum
  // alone does not make a file trusted.
  CorpusIndex forged = t.ix;
  forged.hits[0][0].line = 1 << 30;
  EXPECT_TRUE(refused(corpus_index_bytes(forged, t.key), t.key, n, 2, t.Hw));
  forged = t.ix;
  forged.hits[1][0].weight = std::nanf("");
  EXPECT_TRUE(refused(corpus_index_bytes(forged, t.key), t.key, n, 2, t.Hw));
  forged = t.ix;
  forged.hits[1][0].score = forged.hits[1][0].weight * 0.5f;  // under the weight statistic, a score that is not the weight
  EXPECT_TRUE(refused(corpus_index_bytes(forged, t.key), t.key, n, 2, t.Hw));
  forged = t.ix;
  forged.stat = static_cast<CorpusStat>(7);
  EXPECT_TRUE(refused(corpus_index_bytes(forged, t.key), t.key, n, 2, t.Hw));
  forged = t.ix;
  forged.len = 1 << 29;  // sizes the file does not have: refused before anything is allocated
  EXPECT_TRUE(refused(corpus_index_bytes(forged, t.key), t.key, n, 2, t.Hw));
  EXPECT_TRUE(refused(std::string(4096, '\0'), t.key, n, 2, t.Hw));
}

}  // namespace
}  // namespace headmap
