// corpus_worker.cpp: see corpus_worker.h.
//
// L = layers, Hw = heads in the maps
#include "app/gui/workers/corpus_worker.h"

#include <chrono>
#include <limits>
#include <map>
#include <new>

#include "app/gui/corpus_view.h"
#include "core/io/corpus_cache.h"
#include "core/io/file_io.h"
#include "core/model/attention.h"

namespace headmap {

namespace {
// A cached index names only lines and tokens the file has: each hit's line is tokenized
// (once per line) and its positions checked, so a stale or forged file is never shown.
bool index_fits_lines(const CorpusIndex& ix, const std::vector<std::string>& lines, const ModelWeights& w, const ModelConfig& cfg) {
  std::map<int, int> len;  // line -> its tokens
  for (const std::vector<CorpusHit>& head : ix.hits)
    for (const CorpusHit& h : head) {
      if (h.line < 0 || h.line >= static_cast<int>(lines.size())) return false;
      auto it = len.find(h.line);
      if (it == len.end()) {
        const Batch one = make_batch({lines[static_cast<size_t>(h.line)]}, cfg, w);
        it = len.emplace(h.line, one.empty() ? 0 : one.lengths[0]).first;
      }
      if (h.query >= it->second || h.key >= it->second) return false;
    }
  return true;
}
}  // namespace

CorpusWorker::CorpusWorker(std::function<void()> wake)
    : wake_(std::move(wake)), thread_(5, [this](Job& j) { work(j); }), maps_thread_(5, [this](MapsJob& j) {
        const uint64_t seq = j.seq;
        // A newer maps job, or the destructor, stops this one inside the forward.
        CorpusMaps m = corpus_hit_maps(j.job, [this, seq] { return seq != maps_newest_.load() || cancel_upto_.load() == std::numeric_limits<uint64_t>::max(); });
        {
          std::lock_guard<std::mutex> lock(mu_);
          if (seq == maps_newest_.load()) maps_done_ = std::move(m);
        }
        wake_();
      }) {}

void CorpusWorker::start_maps(CorpusMapsJob job) {
  const uint64_t seq = ++maps_newest_;
  {
    std::lock_guard<std::mutex> lock(mu_);
    maps_done_.reset();
  }
  maps_thread_.post(MapsJob{std::move(job), seq});
}

std::optional<CorpusMaps> CorpusWorker::take_maps() {
  std::lock_guard<std::mutex> lock(mu_);
  std::optional<CorpusMaps> m = std::move(maps_done_);
  maps_done_.reset();
  return m;
}

CorpusWorker::~CorpusWorker() { cancel_upto_ = std::numeric_limits<uint64_t>::max(); }  // thread_, destroyed first, then waits for the job to stop

void CorpusWorker::start(CorpusJob job) {
  uint64_t seq;
  {
    std::lock_guard<std::mutex> lock(mu_);
    seq = ++newest_;
    done_job_.reset();
  }
  cancel_upto_ = seq - 1;  // an older job still running stops
  done_ = 0;
  total_ = 0;
  thread_.post(Job{std::move(job), seq});
}

void CorpusWorker::cancel() {
  std::lock_guard<std::mutex> lock(mu_);
  cancel_upto_ = newest_;
}

std::optional<CorpusOutcome> CorpusWorker::take() {
  std::lock_guard<std::mutex> lock(mu_);
  std::optional<CorpusOutcome> o = std::move(done_job_);
  done_job_.reset();
  return o;
}

bool CorpusWorker::busy() const { return thread_.busy() || maps_thread_.busy(); }

void CorpusWorker::work(Job& j) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (j.seq != newest_) return;  // superseded before it started
  }
  const auto t0 = std::chrono::steady_clock::now();
  const uint64_t seq = j.seq;
  const std::function<bool()> cancelled = [this, seq] { return seq <= cancel_upto_.load(); };  // Cancel, or a newer search
  CorpusOutcome o;
  o.job = j.job;
  try {
    Result<std::string> bytes = read_file(j.job.path, kCorpusMaxBytes);
    Result<std::vector<std::string>> lines = bytes ? corpus_lines(*bytes, j.job.path) : Result<std::vector<std::string>>(bytes.error());
    if (!lines) {
      o.error = lines.error().message;
    } else {
      const ModelWeights& w = *j.job.weights;
      const ModelConfig& cfg = j.job.cfg;
      total_ = static_cast<int>(lines->size());
      o.lines = std::make_shared<const std::vector<std::string>>(std::move(lines).value());
      const std::string& dir = j.job.cache_dir;
      const uint64_t key = dir.empty() ? 0 : corpus_index_key(w, cfg, *bytes, j.job.stat);
      if (!dir.empty()) {
        Result<CorpusIndex> cached = read_corpus_cache(dir, key, static_cast<int>(o.lines->size()), cfg.num_layers, weight_heads(mha_options(cfg)));
        if (cached && cached->stat == j.job.stat && index_fits_lines(*cached, *o.lines, w, cfg)) {
          o.index = std::make_shared<const CorpusIndex>(std::move(cached).value());
          o.cache_note = "its index read from " + corpus_cache_path(dir, key);
          done_ = total_.load();
        } else if (cached || cached.error().kind != ErrorKind::Io) {
          o.cache_note = "a cached index that did not fit was ignored (" + (cached ? std::string("another statistic's, or it names tokens the file lacks") : cached.error().message) + ")";
        }
      }
      if (!o.index) {
        Result<CorpusIndex> ix = corpus_index(w, cfg, *o.lines, kCorpusIndexTop, j.job.stat, 32, cancelled, [this](int done, int) {
          done_ = done;
          wake_();
        });
        if (!ix && ix.error().kind == ErrorKind::Cancelled) o.cancelled = true;
        else if (!ix) o.error = ix.error().message;
        else {
          o.index = std::make_shared<const CorpusIndex>(std::move(ix).value());
          if (!dir.empty()) {
            const Status st = write_corpus_cache(dir, key, *o.index);
            o.cache_note += (o.cache_note.empty() ? "" : "; ") + (st ? "its index kept in " + corpus_cache_path(dir, key) : "its index not kept: " + st.error().message);
          }
        }
      }
    }
  } catch (const std::bad_alloc&) {
    o.error = "There is not enough memory to search " + j.job.path + ": search a smaller file, or close other programs.";
  }
  o.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (seq == newest_) done_job_ = std::move(o);  // a newer start() drops this one
  }
  wake_();
}

}  // namespace headmap
