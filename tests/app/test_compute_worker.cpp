// The compute worker's latency rules (issue 12), without a window: a long request publishes
// its visible layer first and then the complete result, the two agree on the layers they
// share, and wait_for hands a small request's result to the frame that posted it.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <vector>
#include <functional>
#include <string>
#include <thread>

#include "app/gui/workers/compute_worker.h"
#include "core/inspect/predictions.h"
#include "core/text/hf_tokenizer.h"
#include "tests/family_fixtures.h"

using namespace headmap;

namespace {
ComputeRequest long_request(int tokens, int layers, int visible) {
  ComputeRequest r;
  std::string text;
  for (int i = 0; i < tokens; ++i) text += "w" + std::to_string(i % 97) + " ";
  r.lines = {text};
  r.cfg.d_model = 256;
  r.cfg.num_heads = 8;
  r.cfg.num_layers = layers;
  r.cfg.context = 2048;
  r.cfg.tokenizer = TokenizerKind::Word;
  r.visible_layer = visible;
  return r;
}

// The shipped default on a sentence said one and a half times (its induction head has a repeat to find).
ComputeRequest shipped_request() {
  ComputeRequest r;
  r.lines = {"My aunt keeps three green parrots in the kitchen. My aunt keeps three"};
  r.cfg.d_model = 128;
  r.cfg.num_heads = 4;
  r.cfg.num_layers = 2;
  r.cfg.context = 128;
  r.weights.checkpoint = std::string(HEADMAP_ASSETS) + "/checkpoints/d128-h4-l2.safetensors";
  return r;
}

bool complete(const ComputeResult& r) { return r.fwd && r.fwd->complete; }

// A worker that keeps every answer in the order it was published. The wake callback runs on
// the worker thread right after each publish and before the next, so take() there sees each
// one; a test thread polling wait_for on a busy machine could miss an early answer that a
// later one replaced before it was scheduled.
class Recorder {
 public:
  Recorder()
      : worker_([this] {
          std::shared_ptr<const ComputeResult> a = worker_.take();
          std::lock_guard<std::mutex> lock(mu_);
          if (a) pending_.push_back(a->fwd && a->fwd->next_pending()), answers_.push_back(std::move(a));
          cv_.notify_all();
        }) {}
  uint64_t request(const ComputeRequest& r) { return worker_.request(r); }
  // The answers to seq so far, once there are n of them or the budget is spent.
  std::vector<std::shared_ptr<const ComputeResult>> answers(uint64_t seq, size_t n, std::chrono::seconds budget = std::chrono::seconds(120)) {
    std::unique_lock<std::mutex> lock(mu_);
    const auto mine = [&] {
      std::vector<std::shared_ptr<const ComputeResult>> out;
      for (const auto& a : answers_)
        if (a->seq == seq) out.push_back(a);
      return out;
    };
    cv_.wait_for(lock, budget, [&] { return mine().size() >= n; });
    return mine();
  }
  // The first answer to seq; null if none within two minutes.
  std::shared_ptr<const ComputeResult> first(uint64_t seq) {
    const std::vector<std::shared_ptr<const ComputeResult>> a = answers(seq, 1);
    return a.empty() ? nullptr : a.front();
  }
  // The first answer to seq for which done holds; null if none within the budget.
  std::shared_ptr<const ComputeResult> until(uint64_t seq, const std::function<bool(const ComputeResult&)>& done) {
    std::unique_lock<std::mutex> lock(mu_);
    std::shared_ptr<const ComputeResult> hit;
    cv_.wait_for(lock, std::chrono::seconds(120), [&] {
      for (const auto& a : answers_)
        if (a->seq == seq && done(*a)) return static_cast<bool>(hit = a);
      return false;
    });
    return hit;
  }
  std::pair<int, int> patch_progress() const { return worker_.patch_progress(); }
  // Whether the i-th answer (of all) had its next tokens pending when it was published.
  bool pending_when_published(size_t i) {
    std::lock_guard<std::mutex> lock(mu_);
    return i < pending_.size() && pending_[i];
  }
  size_t count() {
    std::lock_guard<std::mutex> lock(mu_);
    return answers_.size();
  }
  // Waits until the worker has nothing left to do (up to ten seconds).
  void settle() {
    for (int i = 0; i < 1000 && worker_.busy(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::shared_ptr<const ComputeResult>> answers_;
  std::vector<bool> pending_;  // parallel to answers_
  ComputeWorker worker_;  // last: destroyed (joined) first, while the log it writes still exists
};
}  // namespace

TEST(ComputeWorker, ALongRequestShowsItsVisibleLayerFirst) {
  Recorder w;
  const ComputeRequest r = long_request(400, 3, 0);
  const uint64_t seq = w.request(r);
  const std::shared_ptr<const ComputeResult> first = w.first(seq);
  ASSERT_TRUE(first) << "no result";
  ASSERT_TRUE(first->fwd) << "no maps";
  ASSERT_FALSE(first->fwd->complete) << "the first answer to a 3-layer request of 400 tokens should be the visible layer alone";
  EXPECT_EQ(first->fwd->out.L, 1);
  EXPECT_EQ(first->fwd->metrics.size(), 8u);
  EXPECT_TRUE(first->induction.empty());  // the probe follows the complete result
  std::shared_ptr<const ComputeResult> full = w.until(seq, [](const ComputeResult& r) { return complete(r) && !r.induction.empty(); });
  ASSERT_TRUE(full) << "the complete result, with its induction probe, never came";
  EXPECT_EQ(full->seq, seq);
  const ForwardOutput &a = first->fwd->out, &b = full->fwd->out;
  ASSERT_EQ(b.L, 3);
  EXPECT_EQ(full->induction.size(), 3u * 8u);
  // Layer 0 is the same computation in both: equal maps, bit for bit, and equal metrics.
  const size_t per_layer = static_cast<size_t>(a.B) * a.Hw * a.T * a.T;
  for (size_t i = 0; i < per_layer; ++i) ASSERT_EQ(a.attention[i], b.attention[i]) << "weight " << i;
  for (int h = 0; h < 8; ++h) EXPECT_EQ(first->fwd->metrics[h].entropy, full->fwd->metrics[h].entropy);
  // Every long map carries its max-pooled levels.
  ASSERT_EQ(full->fwd->levels.size(), 3u * 8u);
  EXPECT_GT(full->fwd->levels[0].num_levels(), 1);
}

// The induction probe does not depend on the text: a new model or config shows its maps
// first, then the same result again with the probe's scores; the next keystroke has them
// at once (cached).
TEST(ComputeWorker, TheInductionProbeFollowsTheMaps) {
  Recorder w;
  ComputeRequest r = long_request(12, 2, 0);
  r.cfg.d_model = 64;
  r.cfg.num_heads = 4;
  const uint64_t seq = w.request(r);
  const std::vector<std::shared_ptr<const ComputeResult>> first = w.answers(seq, 2);
  ASSERT_EQ(first.size(), 2u) << "a new config answers twice: its maps, then the same maps with the probe";
  const std::shared_ptr<const ComputeResult>&maps = first[0], &probed = first[1];
  ASSERT_TRUE(maps->fwd && maps->fwd->complete);
  EXPECT_TRUE(maps->induction.empty()) << "a new config's first answer does not wait for the probe";
  EXPECT_EQ(probed->fwd.get(), maps->fwd.get()) << "the same maps, not a second forward pass";
  ASSERT_EQ(probed->induction.size(), 2u * 4u);
  r.lines[0] += " again";
  const uint64_t seq2 = w.request(r);
  const std::vector<std::shared_ptr<const ComputeResult>> second = w.answers(seq2, 1);
  ASSERT_EQ(second.size(), 1u);
  ASSERT_TRUE(second[0]->fwd);
  EXPECT_EQ(second[0]->induction, probed->induction) << "the same model and config: the cached probe, in the first answer";
  w.settle();
  EXPECT_EQ(w.answers(seq2, 2, std::chrono::seconds(0)).size(), 1u) << "nothing follows a cached probe";
}

TEST(ComputeWorker, ASmallRequestIsReadyWithinAFramesWait) {
  ComputeWorker w({});
  ComputeRequest r = long_request(8, 2, 0);
  r.cfg.d_model = 64;
  r.cfg.num_heads = 4;
  uint64_t seq = w.request(r);
  ASSERT_TRUE(w.wait_for(seq, std::chrono::seconds(60)));  // first: draws the weights
  r.lines[0] += " and more";
  seq = w.request(r);
  // No timing is asserted (the machine may be busy): a generous bound, and the right answer.
  std::shared_ptr<const ComputeResult> res = w.wait_for(seq, std::chrono::seconds(60));
  ASSERT_TRUE(res && res->fwd);
  EXPECT_EQ(res->seq, seq);
  EXPECT_TRUE(res->fwd->complete);  // small: one answer, not staged
  EXPECT_EQ(res->fwd->batch.lengths[0], 10);
}

TEST(ComputeWorker, ARequestTooLargeIsRefusedWithoutAPartialResultFirst) {
  ComputeWorker w({});
  ComputeRequest r = long_request(2048, 12, 0);
  r.lines = {r.lines[0], r.lines[0], r.lines[0], r.lines[0]};  // 4 x 12 x 8 maps of 2048^2: 6 GiB, over the limit
  const uint64_t seq = w.request(r);
  std::shared_ptr<const ComputeResult> res = w.wait_for(seq, std::chrono::seconds(120));
  ASSERT_TRUE(res);
  EXPECT_FALSE(res->fwd) << "a partial result stood in for the refusal";
  ASSERT_TRUE(res->error);
  EXPECT_NE(res->error->message.find("use fewer sentences"), std::string::npos) << res->error->message;
}

// New random weights for a model deeper than the layer on screen: the layers up to it are
// drawn and shown first, the rest follow; the complete model is the one drawn whole, and it
// is cached, so the next keystroke is one answer.
TEST(ComputeWorker, NewRandomWeightsShowTheVisibleLayerBeforeTheRestIsDrawn) {
  Recorder w;
  ComputeRequest r = long_request(6, 3, 0);
  r.cfg.d_model = 384;
  r.cfg.num_heads = 6;
  const uint64_t seq = w.request(r);
  const std::shared_ptr<const ComputeResult> first = w.first(seq);
  ASSERT_TRUE(first) << "no result";
  ASSERT_TRUE(first->fwd) << "no maps";
  EXPECT_FALSE(first->fwd->complete) << "6 tokens, but 2 more layers of D = 384 to draw: layer 0 first";
  EXPECT_EQ(first->fwd->out.L, 1);
  EXPECT_EQ(first->fwd->weights->num_layers(), 1);
  std::shared_ptr<const ComputeResult> full = w.until(seq, complete);
  ASSERT_TRUE(full) << "the complete result never came";
  const ModelWeights whole = random_weights(384, 3, r.cfg.seed);
  ASSERT_EQ(full->fwd->weights->num_layers(), 3);
  for (int l = 0; l < 3; ++l) {
    EXPECT_TRUE(full->fwd->weights->layers[l].w_qkv == whole.layers[l].w_qkv) << "layer " << l;
    EXPECT_TRUE(full->fwd->weights->layers[l].w_proj == whole.layers[l].w_proj) << "layer " << l;
  }
  // Layer 0's maps are the same in both answers.
  const size_t per_layer = static_cast<size_t>(first->fwd->out.B) * first->fwd->out.Hw * first->fwd->out.T * first->fwd->out.T;
  for (size_t i = 0; i < per_layer; ++i) ASSERT_EQ(first->fwd->out.attention[i], full->fwd->out.attention[i]) << "weight " << i;
  r.lines[0] += " more";
  const uint64_t seq2 = w.request(r);
  const std::shared_ptr<const ComputeResult> next = w.first(seq2);
  ASSERT_TRUE(next && next->fwd);
  EXPECT_TRUE(next->fwd->complete) << "the weights are cached now: one answer";
}

// The layers slider on random weights: a model of the same d_model and seed with more (or
// fewer) layers is in the cache, and its layers are the new model's (each layer is drawn
// from its own keys). Fewer layers share the deeper model itself (no copy); more layers
// copy the cached ones and draw the rest. Either way the layers used are the model drawn
// whole, bit for bit.
TEST(ComputeWorker, FewerOrMoreLayersReuseTheCachedRandomLayers) {
  Recorder w;
  ComputeRequest r = long_request(6, 2, 0);
  r.cfg.d_model = 96;
  r.cfg.num_heads = 4;
  std::shared_ptr<const ModelWeights> previous;
  for (const int layers : {2, 1, 3}) {
    r.cfg.num_layers = layers;
    const uint64_t seq = w.request(r);
    std::shared_ptr<const ComputeResult> res = w.until(seq, complete);
    ASSERT_TRUE(res) << layers << " layers: no result";
    const ModelWeights whole = random_weights(96, layers, r.cfg.seed);
    EXPECT_EQ(res->fwd->out.L, layers);
    ASSERT_GE(res->fwd->weights->num_layers(), layers);
    if (layers == 1) {
      EXPECT_EQ(res->fwd->weights.get(), previous.get()) << "fewer layers: the cached 2-layer model, shared";
    }
    if (layers == 3) {
      EXPECT_EQ(res->fwd->weights->num_layers(), 3);
    }
    for (int l = 0; l < layers; ++l) {
      EXPECT_TRUE(res->fwd->weights->layers[l].w_qkv == whole.layers[l].w_qkv) << layers << " layers, layer " << l;
      EXPECT_TRUE(res->fwd->weights->layers[l].w_fc == whole.layers[l].w_fc) << layers << " layers, layer " << l;
    }
    const ForwardOutput direct = forward(whole, r.cfg, res->fwd->batch).value();
    EXPECT_EQ(direct.attention, res->fwd->out.attention) << layers << " layers: the maps of the model drawn whole";
    previous = res->fwd->weights;
  }
}

// Activation patching on the worker (issue 28): the maps are published first, then the same
// result with the patching; the same inputs again are answered from the cache (the same
// outcome, in the first answer); no patching is reported in progress once it has ended.
TEST(ComputeWorker, PatchingFollowsTheMapsAndIsCachedByItsInputs) {
  Recorder w;
  ComputeRequest r = shipped_request();
  r.patch = PatchRequest{r.lines[0], "My aunt keeps four green parrots in the kitchen. My aunt keeps three", -1, -1, -1, HeadId{0, 0}};
  const uint64_t seq = w.request(r);
  std::shared_ptr<const ComputeResult> done = w.until(seq, [](const ComputeResult& a) { return a.patch != nullptr; });
  ASSERT_TRUE(done) << "the patching never came";
  const std::vector<std::shared_ptr<const ComputeResult>> all = w.answers(seq, 1, std::chrono::seconds(0));
  ASSERT_GE(all.size(), 2u);
  EXPECT_FALSE(all.front()->patch) << "the maps come first, without waiting for the patching";
  ASSERT_TRUE(done->patch->heads) << done->patch->error;
  EXPECT_EQ(done->patch->target.position, 20);
  EXPECT_GT(done->patch->heads->recovery[5], 0.9f);  // 1.1
  EXPECT_EQ(done->patch->per_position.size(), 21u);
  w.settle();
  EXPECT_EQ(w.patch_progress(), std::make_pair(0, 0));
  r.lines[0] += "";  // the same inputs, posted again
  const uint64_t seq2 = w.request(r);
  const std::shared_ptr<const ComputeResult> again = w.first(seq2);
  ASSERT_TRUE(again);
  EXPECT_EQ(again->patch.get(), done->patch.get()) << "the same inputs: the cached outcome, in the first answer";
  w.settle();
}

// The Circuits view's parts without text are computed once per model (issue 39): a first
// request publishes the maps, then the circuits; another text on the same model and head
// answers at once with the same composition (the cached object) and the circuit on its own
// tokens; another config (seed) or other weights compute them anew.
TEST(ComputeWorker, CircuitsAreCachedPerModelAndFollowItsWeights) {
  Recorder w;
  ComputeRequest r = shipped_request();
  r.circuits = CircuitsRequest{0, 1, 1};
  const uint64_t seq = w.request(r);
  const std::shared_ptr<const ComputeResult> done = w.until(seq, [](const ComputeResult& a) { return a.composition != nullptr; });
  ASSERT_TRUE(done) << "the circuits never came";
  EXPECT_FALSE(w.answers(seq, 1, std::chrono::seconds(0)).front()->composition) << "a model's first circuits follow the maps";
  ASSERT_TRUE(done->circuit) << done->circuit_error;
  EXPECT_GT(done->composition->q[2], 0.0f);  // head 0.2 into 1.1
  w.settle();
  r.lines = {"The cat sat on the mat."};  // typing: the same model and head
  const uint64_t seq2 = w.request(r);
  const std::shared_ptr<const ComputeResult> typed = w.first(seq2);
  ASSERT_TRUE(typed && typed->circuit);
  EXPECT_EQ(typed->composition.get(), done->composition.get()) << "the same model: the cached composition, in the first answer";
  EXPECT_EQ(typed->circuit->copying, done->circuit->copying);
  EXPECT_NE(typed->circuit->tokens, done->circuit->tokens) << "the circuit is shown on the new text's tokens";
  w.settle();
  r.weights.checkpoint.clear();  // random init of the same size: another model
  const uint64_t seq3 = w.request(r);
  const std::shared_ptr<const ComputeResult> other = w.until(seq3, [](const ComputeResult& a) { return a.composition != nullptr; });
  ASSERT_TRUE(other);
  EXPECT_NE(other->composition->q[2], done->composition->q[2]);
  EXPECT_FALSE(other->circuit) << "random init has no vocabulary";
  EXPECT_NE(other->circuit_error.find("trained weights"), std::string::npos) << other->circuit_error;
  w.settle();
}

// The worker writes each forward into the buffers of a pass its cache has dropped
// (ForwardOptions::reuse), but never into one that a result still held refers to: a result on
// screen keeps its maps, next tokens and layer rows while the cache turns over past it.
TEST(ComputeWorker, AResultStillHeldKeepsItsBuffersWhileLaterPassesReuseDroppedOnes) {
  ComputeWorker w({});
  auto request = [&](int i) {
    ComputeRequest r = shipped_request();
    r.lines = {"My aunt keeps " + std::to_string(i) + " green parrots in the kitchen, " + std::to_string(i * 7) + " of them"};
    const uint64_t seq = w.request(r);
    std::shared_ptr<const ComputeResult> res = w.wait_for(seq, std::chrono::seconds(60));
    EXPECT_TRUE(res && res->fwd && res->seq == seq) << i;
    return res;
  };
  const std::shared_ptr<const ComputeResult> held = request(0);
  ASSERT_TRUE(held && held->fwd);
  const ForwardOutput& o = held->fwd->out;
  const std::vector<float> maps = o.attention;
  const MatR out = o.out, in0 = o.attn_in.at(0), out1 = o.attn_out.at(1);
  const NextTokenRows next = o.next;  // each row's next tokens, kept in place of the logits (kKeptNextTokens)
  ASSERT_EQ(next.rows(), o.T);
  EXPECT_EQ(o.logits.size(), 0);
  // Past the cache's entries, so that `held` and every later pass are dropped from it in turn
  // (the later ones released here at once, so their buffers are reused).
  for (int i = 1; i <= static_cast<int>(kForwardCacheEntries) + 8; ++i) {
    const std::shared_ptr<const ComputeResult> res = request(i);
    ASSERT_TRUE(res && res->fwd);
    const float* a = res->fwd->out.attention.data();
    EXPECT_TRUE(a + res->fwd->out.attention.size() <= o.attention.data() || a >= o.attention.data() + o.attention.size())
        << "pass " << i << " wrote into the maps of a result still held";
  }
  EXPECT_EQ(o.attention, maps) << "the held result's maps changed";
  EXPECT_TRUE(o.next.ids == next.ids && o.next.logits == next.logits && o.next.max == next.max && o.next.sum == next.sum)
      << "the held result's next tokens changed";
  EXPECT_TRUE(o.out == out);
  EXPECT_TRUE(o.attn_in.at(0) == in0);
  EXPECT_TRUE(o.attn_out.at(1) == out1);
}

// Typing at the end: the pass a keystroke extends leaves the cache, so a later keystroke
// writes into its buffers (no fresh pages: on the 1B shape 134 MB of them, ~0.4 s of page
// faults a keystroke on this VM). As in the app, the two newest results stay held meanwhile
// (the one on screen, and the newer one not yet taken), so the pass three back is the one
// free. The cache kept every such pass (up to 512 MB), and then only one dropped pass, the
// one still on screen: each keystroke wrote into fresh memory.
TEST(ComputeWorker, TypingAtTheEndWritesEachPassIntoTheBuffersOfAPassNoLongerShown) {
  ComputeWorker w({});
  ComputeRequest r = shipped_request();
  r.lines = {"My aunt keeps"};
  std::vector<const float*> maps;  // each pass's maps buffer
  std::deque<std::shared_ptr<const ComputeResult>> held;  // the screen's and the newest
  for (const char* word : {"", " three", " green", " parrots", " in", " the"}) {
    r.lines[0] += word;
    const uint64_t seq = w.request(r);
    std::shared_ptr<const ComputeResult> res = w.wait_for(seq, std::chrono::seconds(60));
    ASSERT_TRUE(res && res->fwd && res->seq == seq) << word;
    if (!maps.empty()) {
      EXPECT_GE(res->fwd->out.kv_reused, 1) << word << ": not an append from the K/V cache";
    }
    EXPECT_EQ(res->fwd->sentence_loss, sentence_losses(res->fwd->out, res->fwd->batch)) << word;  // the forward's own, bit for bit
    maps.push_back(res->fwd->out.attention.data());
    held.push_back(std::move(res));
    if (held.size() > 2) held.pop_front();
  }
  for (size_t i = 3; i < maps.size(); ++i) EXPECT_EQ(maps[i], maps[i - 3]) << "pass " << i << " did not write its maps into the buffers of pass " << i - 3;
}

// Typing at the end while the screen held several results (it skipped some, or drew late),
// then let them go: the worker keeps the pass it just retired and one spare that nothing else
// holds (for a keystroke that comes while the screen still holds the pass before it), not
// every one it had retired. Each kept one held its maps, levels and the K/V cache's logits
// and layer rows its views read: up to ~150 MB on the 1B shape (tests/bench/README.md,
// helper rss8).
TEST(ComputeWorker, PassesNothingHoldsAreFreedButTheOneSpare) {
  ComputeWorker w({});
  ComputeRequest r = shipped_request();
  r.lines = {"My aunt keeps"};
  std::vector<std::weak_ptr<const ForwardData>> passes;
  std::deque<std::shared_ptr<const ComputeResult>> held;  // the screen's, several at once
  for (const char* word : {"", " three", " green", " parrots", " in", " the", " kitchen"}) {
    r.lines[0] += word;
    const uint64_t seq = w.request(r);
    std::shared_ptr<const ComputeResult> res = w.wait_for(seq, std::chrono::seconds(60));
    ASSERT_TRUE(res && res->fwd && res->seq == seq) << word;
    passes.push_back(res->fwd);
    held.push_back(std::move(res));
    if (held.size() > 4) held.pop_front();
  }
  held.clear();  // the screen lets them all go
  r.lines[0] += ".";
  const uint64_t seq = w.request(r);
  const std::shared_ptr<const ComputeResult> last = w.wait_for(seq, std::chrono::seconds(60));
  ASSERT_TRUE(last && last->fwd && last->fwd->out.kv_reused > 0);
  int alive = 0;
  for (size_t i = 1; i < passes.size(); ++i) alive += !passes[i].expired();  // passes[0] may still be in ready_ (the probe's result)
  EXPECT_LE(alive, 2) << "the worker kept " << alive << " earlier passes that nothing else holds (the one just retired and one spare are enough)";
}

// A large pass (here 56 MB: maps and layer rows) is not kept for going back once a newer one is shown: a
// 1B model's older pass and the K/V cache's rows its views keep raised the app's peak RSS
// while typing (kForwardCacheBytes; tests/bench/README.md, helper rss8).
TEST(ComputeWorker, ALargeOlderPassIsNotKeptForGoingBack) {
  ComputeWorker w({});
  auto pass = [&](int i, int tokens) {
    ComputeRequest r = long_request(tokens, 2, 1);
    r.lines[0] = "v" + std::to_string(i) + " " + r.lines[0];  // no shared prefix: nothing is an append
    const uint64_t seq = w.request(r);
    std::shared_ptr<const ComputeResult> res = w.wait_for(seq, std::chrono::seconds(60));
    EXPECT_TRUE(res && res->fwd && res->fwd->complete) << i;
    return res && res->fwd ? std::weak_ptr<const ForwardData>(res->fwd) : std::weak_ptr<const ForwardData>();
  };
  const std::weak_ptr<const ForwardData> large = pass(1, 800);
  ASSERT_GT(large.lock() ? large.lock()->out.bytes() : 0, size_t(40) << 20);  // 56 MB
  pass(2, 800);
  pass(3, 800);
  EXPECT_TRUE(large.expired()) << "the worker still holds a large pass that nothing shows";
}

// Typing at the end: an append of a few rows is not cancelled by the keystroke after it (which
// extends it). It is answered, and the next request computes only its own rows from the
// cache it filled. Cancelled, the cache was cleared and each next keystroke ran the whole
// forward, cancelled in turn by the one after (the 1B shape showed nothing while typing).
TEST(ComputeWorker, AnAppendRunsToItsEndAndTheNextKeystrokeStartsFromItsRows) {
  Recorder w;
  ComputeRequest a = long_request(300, 12, 11);  // every layer visible: nothing published first
  a.cfg.d_model = 1024;
  a.cfg.num_heads = 16;
  const std::shared_ptr<const ComputeResult> ra = w.until(w.request(a), complete);
  ASSERT_TRUE(ra);
  w.settle();  // the induction probe after the maps: b must not wait behind it (c would replace it unstarted)
  ComputeRequest b = a, c;
  for (int i = 0; i < kFinishAppendRows; ++i) b.lines[0] += "x" + std::to_string(i) + " ";
  c = b;
  c.lines[0] += "y ";
  const uint64_t sb = w.request(b);
  std::this_thread::sleep_for(std::chrono::milliseconds(30));  // b is under way
  const std::shared_ptr<const ComputeResult> rc = w.first(w.request(c));
  ASSERT_TRUE(rc && rc->fwd);
  const std::vector<std::shared_ptr<const ComputeResult>> rb = w.answers(sb, 1, std::chrono::seconds(1));
  ASSERT_EQ(rb.size(), 1u) << "the append was cancelled by the keystroke after it";
  ASSERT_TRUE(rb[0]->fwd);
  EXPECT_EQ(rb[0]->fwd->out.kv_reused, ra->fwd->out.T);
  EXPECT_EQ(rb[0]->fwd->out.T, ra->fwd->out.T + kFinishAppendRows);
  EXPECT_EQ(rc->fwd->out.kv_reused, rb[0]->fwd->out.T) << "the next keystroke did not start from the append's rows";
}

// A pass through the K/V cache (the first text, then a typing pass) of a model with a large
// unembedding (kDeferLogitsWeights) publishes its maps first, its next tokens pending (the
// predictions panel says "computing"), then, with no newer request waiting, the same result
// again with them: equal bit for bit to a forward that computes them in turn, and the loss
// too. Nothing waits for a frame here (no UI calls shown()): the late part starts after
// kLateAfterShown.
TEST(ComputeWorker, ATypingPassShowsItsMapsFirstAndItsNextTokensAfter) {
  Arch a;
  a.family = "llama";
  a.name = "Llama";
  a.norm = NormKind::RMSNorm;
  a.positions = PositionKind::Rotary;
  a.attn_bias = a.out_bias = a.mlp_bias = false;
  a.mlp = MlpKind::SiluGated;
  a.tied = false;
  const int D = 256, V = 32768;  // V x D = 8.4 M weights: deferred
  ASSERT_GE(static_cast<double>(V) * D, kDeferLogitsWeights);
  ModelWeights m = test::family_model(a, D, 4, 2, 64, 256, 1, 77);
  m.tok_emb = test::normals(78, V, D, 0.5f);
  m.lm_head = test::normals(79, V, D, 0.5f);
  m.lnf_g = RowVec::Ones(D);
  m.lnf_b = RowVec::Zero(D);
  m.context = 256;
  m.source.kind = WeightsSource::Kind::Pretrained;
  Result<HfTokenizer> tok = HfTokenizer::load(HEADMAP_TEST_DATA "/tokenizers/bpe_bytelevel_trim.json");
  ASSERT_TRUE(tok) << tok.error().message;
  m.hf_tokenizer = std::make_shared<const HfTokenizer>(*tok);
  auto w = std::make_shared<const ModelWeights>(std::move(m));
  ComputeRequest r;
  r.lines = {"the cat sat on the mat and the dog sat on the rug"};
  r.cfg = config_for_weights(*w, ModelConfig());
  r.weights.in_memory = w;
  r.weights.in_memory_id = 5;
  Recorder rec;
  const std::shared_ptr<const ComputeResult> first =
      rec.until(rec.request(r), [](const ComputeResult& a) { return complete(a) && a.fwd->late && a.fwd->late_ready(); });
  ASSERT_TRUE(first && first->fwd) << "the first text's pass: its maps, then its next tokens";
  EXPECT_EQ(first->fwd->out.kv_reused, 0);
  rec.settle();
  ComputeRequest typed = r;
  typed.lines[0] += " and";
  const size_t before = rec.count();
  const uint64_t seq = rec.request(typed);
  const std::vector<std::shared_ptr<const ComputeResult>> both = rec.answers(seq, 2);
  ASSERT_EQ(both.size(), 2u) << "the maps, then the same maps with their next tokens";
  EXPECT_TRUE(rec.pending_when_published(before)) << "the maps came first, their next tokens pending";
  EXPECT_FALSE(rec.pending_when_published(before + 1));
  const ForwardData& f = *both[0]->fwd;
  EXPECT_EQ(both[1]->fwd.get(), &f) << "the second answer is the same pass";
  EXPECT_GT(f.out.kv_reused, 0) << "a typing pass through the K/V cache";
  ASSERT_TRUE(f.late);
  ASSERT_TRUE(f.late_ready());
  EXPECT_FALSE(f.next_pending());
  // The same request through a fresh cache, its logits stage in turn.
  ForwardOptions fo;
  fo.keep_layer_io = true;
  fo.want_logits = true;
  fo.skip_final_mlp = true;
  fo.next_tokens_k = kKeptNextTokens;
  KvCache c;
  fo.kv_cache = &c;
  Result<ForwardOutput> want = forward(*w, typed.cfg, f.batch, fo);
  ASSERT_TRUE(want);
  EXPECT_EQ(f.loss(), want->loss);
  EXPECT_EQ(f.loss_tokens(), want->loss_tokens);
  EXPECT_EQ(f.sentence_loss_at(0), want->loss);
  for (int t = 0; t < f.out.T; ++t) {
    const std::vector<NextToken> x = f.top_next(0, t, 5), y = top_k_next(*w, *want, 0, t, 5);
    ASSERT_EQ(x.size(), y.size()) << "row " << t;
    for (size_t i = 0; i < x.size(); ++i) {
      EXPECT_EQ(x[i].id, y[i].id) << "row " << t;
      EXPECT_EQ(x[i].prob, y[i].prob) << "row " << t;
    }
  }
}
