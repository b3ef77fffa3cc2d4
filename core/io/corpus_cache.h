// corpus_cache.h: the corpus search's index on disk (issue 39, point 4), one file per model and
// corpus file: `corpus-<key>.index` under $XDG_CACHE_HOME/headmap (else ~/.cache/headmap). A
// second search of the same file with the same model, for any head, then needs no pass of the
// model. Apart from the preferences (settings.json), it is the only file the app writes
// without being asked: computing an index again costs as much as the search itself.
//
// A cache file is hostile data: every size is checked against the file's length before
// anything is allocated, every position against its bounds, every number for finiteness;
// a file that fails any check, or whose key differs (another model, another file, an edit),
// is ignored, and the index is computed again and written over it, atomically.
//
// L = layers, Hw = heads in the maps, O = 2 len - 1 offsets
#pragma once
#include <cstdint>
#include <string>

#include "core/error.h"
#include "core/inspect/corpus_search.h"

namespace headmap {

// A cache file larger than this is neither read nor written.
inline constexpr size_t kCorpusCacheMaxBytes = size_t(256) << 20;

// The key of an index: the config (config_json), the weights' sizes, source and seed, every
// value of every weight the maps depend on (embeddings, positions, every layer's matrices in
// whatever they are stored in, norms and biases; not the unembedding), and every byte of the
// corpus file. Reading a billion-parameter model's weights takes seconds: on the search's
// worker thread, before a search that takes far longer.
// The statistic the hits are ranked by is part of the key: each has its own file.
uint64_t corpus_index_key(const ModelWeights& w, const ModelConfig& cfg, const std::string& corpus_bytes, CorpusStat stat = CorpusStat::Weight);

// $XDG_CACHE_HOME/headmap, else $HOME/.cache/headmap; "" when neither is set.
std::string corpus_cache_dir();
// dir/corpus-<16 hex digits>.index
std::string corpus_cache_path(const std::string& dir, uint64_t key);

// The index as the file's bytes: "HMCIX002", the key, then stat, L, Hw, top, lines, rows, len
// (int32), the (L*Hw) hit counts, the hits (line, query, key: int32; weight, score: float32), the
// (L*Hw, O) offset sums (float64), the (O) rows per offset (int64), native byte order, and a
// checksum of all that (uint64, hash_bytes).
std::string corpus_index_bytes(const CorpusIndex& ix, uint64_t key);
// The bytes back, for `key`, a file of `lines` lines and a model whose maps have (L, Hw);
// BadFormat naming the first check that failed.
Result<CorpusIndex> parse_corpus_index(const std::string& bytes, uint64_t key, int lines, int L, int Hw);

// Reads dir's index for key (parse_corpus_index); an Io error when there is none.
Result<CorpusIndex> read_corpus_cache(const std::string& dir, uint64_t key, int lines, int L, int Hw);
// Writes it atomically, creating dir.
Status write_corpus_cache(const std::string& dir, uint64_t key, const CorpusIndex& ix);

}  // namespace headmap
