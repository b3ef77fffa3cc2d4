// Cancel in the middle of activation patching, on the compute worker (issue 28), on a post-norm
// encoder (a BERT in memory, the [MASK]'s fillers A - B): the Patching view's Cancel leaves the
// patch out of the next request, so the worker drops the run between heads (or inside a head's
// forward pass); it must stop within a run or two of the cancel, publish no patching for the
// cancelled request (nothing partial shown as done), report no progress afterwards, and run the
// same request again to completion, equal to the core's patch_heads.
//
// L = layers, H = heads
#include <gtest/gtest.h>

#include <atomic>
#include <cstdio>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#include "app/gui/workers/compute_worker.h"
#include "tests/encoder_fixture.h"

using namespace headmap;

namespace {
// Every answer the worker publishes, in order (the wake callback runs on the worker thread).
class Answers {
 public:
  Answers()
      : worker_([this] {
          std::shared_ptr<const ComputeResult> a = worker_.take();
          std::lock_guard<std::mutex> lock(mu_);
          if (a) all_.push_back(std::move(a));
          cv_.notify_all();
        }) {}
  ComputeWorker& worker() { return worker_; }
  // The first answer to seq for which done holds, within two minutes; else null.
  template <class F>
  std::shared_ptr<const ComputeResult> until(uint64_t seq, F done) {
    std::unique_lock<std::mutex> lock(mu_);
    std::shared_ptr<const ComputeResult> hit;
    cv_.wait_for(lock, std::chrono::seconds(120), [&] {
      for (const auto& a : all_)
        if (a->seq == seq && done(*a)) return static_cast<bool>(hit = a);
      return false;
    });
    return hit;
  }
  std::vector<std::shared_ptr<const ComputeResult>> of(uint64_t seq) {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<std::shared_ptr<const ComputeResult>> out;
    for (const auto& a : all_)
      if (a->seq == seq) out.push_back(a);
    return out;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::shared_ptr<const ComputeResult>> all_;
  ComputeWorker worker_;  // last: joined first
};
}  // namespace

TEST(PatchCancel, CancelledMidRunStopsShowsNothingAndTheNextRunCompletes) {
  test::EncoderShape z;
  z.D = 256, z.H = 8, z.L = 8, z.F = 512;  // 64 patched runs: time to cancel in the middle
  auto w = std::make_shared<const ModelWeights>(test::post_norm_encoder(HEADMAP_TEST_DATA "/tokenizers/wordpiece_bert.json", z));
  ComputeRequest r;
  std::string clean = "the cat sat on the [MASK] .", corrupted = "the dog sat on the [MASK] .";
  for (int i = 0; i < 5; ++i) clean += " the cat sat on the mat .", corrupted += " the cat sat on the mat .";
  r.lines = {clean};
  r.cfg = config_for_weights(*w, ModelConfig());
  r.weights.in_memory = w;
  r.weights.in_memory_id = 1;
  r.patch = PatchRequest{clean, corrupted, -1, -1, -1, std::nullopt};
  const int total = z.L * z.H;

  Answers answers;
  ComputeWorker& worker = answers.worker();
  const uint64_t seq = worker.request(r);
  // Wait until the worker is inside the patching: some heads done, not all.
  int at_cancel = 0;
  std::string ended;  // the patching's outcome, when it ended before the cancel
  for (int i = 0; i < 120000 && ended.empty(); ++i) {
    const auto [done, of] = worker.patch_progress();
    if (done >= 4 && of == total) {
      at_cancel = done;
      break;
    }
    for (const auto& a : answers.of(seq))
      if (a->patch) ended = a->patch->error.empty() ? "it completed" : a->patch->error;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ASSERT_GE(at_cancel, 4) << "patching on the encoder never made progress: " << ended;
  ASSERT_LT(at_cancel, total - 2) << "the patching was nearly done before the cancel (make the model larger)";
  // Cancel: the next request leaves the patch out (what the view's Cancel does); watch the
  // progress until the worker says no patching is running.
  ComputeRequest cancelled = r;
  cancelled.patch.reset();
  std::atomic<int> most{at_cancel};
  std::atomic<bool> seen_reset{false};
  std::thread watch([&] {
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(120);
    while (!seen_reset && std::chrono::steady_clock::now() < give_up) {
      const auto [done, of] = worker.patch_progress();
      if (of == 0) seen_reset = true;
      else most = std::max(most.load(), done);
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
  });
  const uint64_t seq2 = worker.request(cancelled);
  const std::shared_ptr<const ComputeResult> after = answers.until(seq2, [](const ComputeResult& a) { return a.fwd && a.fwd->complete; });
  watch.join();
  ASSERT_TRUE(after) << "the request after the cancel was never answered";
  EXPECT_TRUE(seen_reset) << "patching still reported in progress after the cancel";
  std::printf("cancelled after %d of %d heads; the last progress seen %d\n", at_cancel, total, most.load());
  EXPECT_LE(most.load(), at_cancel + 2) << "the run went on for " << most.load() - at_cancel << " heads after the cancel";
  EXPECT_LT(most.load(), total);
  EXPECT_FALSE(after->patch) << "the cancelling request asked for no patching";
  for (const auto& a : answers.of(seq)) EXPECT_FALSE(a->patch) << "a result of the cancelled run was published";
  EXPECT_EQ(worker.patch_progress(), std::make_pair(0, 0));

  // The same patching asked again runs to the end, and equals the core's.
  const uint64_t seq3 = worker.request(r);
  const std::shared_ptr<const ComputeResult> done = answers.until(seq3, [](const ComputeResult& a) { return a.patch != nullptr; });
  ASSERT_TRUE(done) << "the patching asked again never came";
  ASSERT_TRUE(done->patch->heads) << done->patch->error;
  const PatchResult& got = *done->patch->heads;
  ASSERT_EQ(got.recovery.size(), static_cast<size_t>(total));
  const Batch cb = make_batch({clean}, r.cfg, *w), kb = make_batch({corrupted}, r.cfg, *w);
  EXPECT_EQ(done->patch->target.position, 6) << "an encoder's default position is its [MASK]";
  Result<PatchResult> want = patch_heads(*w, r.cfg, cb, kb, done->patch->target);
  ASSERT_TRUE(want.ok()) << want.error().message;
  for (int i = 0; i < total; ++i) EXPECT_NEAR(got.patched[i], want->patched[i], 1e-5f) << "head " << i / z.H << "." << i % z.H;
  EXPECT_EQ(worker.patch_progress(), std::make_pair(0, 0));
}
