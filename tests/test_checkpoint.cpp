// Checkpoints: a bit-exact round trip, and every kind of damaged or mismatched file gives a
// clear BadFormat error (never a crash): truncation, a flipped byte, a wrong dtype, a
// missing tensor, a wrong shape, overlapping offsets, an absurd header length, garbage,
// non-finite values, a vocabulary that does not fit, tensors that are not the file's own.
//
// D = d_model, L = layers, V = vocab, P = context
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "core/io/checkpoint.h"
#include "core/io/safetensors.h"
#include "core/text/bpe.h"
#include "core/io/export.h"
#include "core/train/trainer.h"
#include "test_util.h"

using namespace headmap;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

// A small trained-looking model: D=12, H=3, L=2, P=10, with a real vocabulary (bytes,
// characters, words) and non-trivial values in every tensor.
ModelWeights small_model(bool no_w_o = false) {
  const Bpe vocab = Bpe::train({"the cat sat on the mat", "the dog ran"}, 300, 1);
  ModelParams p = init_params(12, 2, vocab.size(), 10, 7);
  uint64_t k = 1;
  for (ParamRef& r : param_refs(p, false))
    for (int64_t i = 0; i < r.size; ++i) r.data[i] += 0.1f * normal_at(++k, 3);
  ModelWeights w = to_model_weights(p, vocab, no_w_o);
  w.source.trained_heads = 3;
  w.source.steps = 1234;
  w.source.final_loss = 2.5;
  w.source.val_loss = 2.75;
  w.source.corpus = "grammar-v1";
  w.source.seed = 42;
  w.source.reproduce = "headmap-cli train --corpus c.txt --out x.safetensors";
  w.source.train_options = "{\"steps\":1234}";
  return w;
}

const std::string& good_file() {
  static const std::string bytes = *checkpoint_bytes(small_model());
  return bytes;
}

// The file split into its header (JSON) and data, and put back together with the header
// length recomputed: for crafting damaged files that are otherwise well formed.
struct Parts {
  json header;
  std::string data;
};
Parts split(const std::string& file) {
  uint64_t n = 0;
  std::memcpy(&n, file.data(), 8);
  return {json::parse(file.substr(8, n)), file.substr(8 + n)};
}
std::string join(const Parts& p) {
  const std::string h = p.header.dump();
  const uint64_t n = h.size();
  std::string out(8, '\0');
  std::memcpy(out.data(), &n, 8);
  return out + h + p.data;
}

// The load fails with BadFormat and a message containing `needle`.
void expect_bad(const std::string& bytes, const std::string& needle, const std::string& what) {
  Result<ModelWeights> r = parse_checkpoint(bytes, "test.safetensors");
  ASSERT_FALSE(r) << what << ": loaded";
  EXPECT_EQ(r.error().kind, ErrorKind::BadFormat) << what;
  EXPECT_NE(r.error().message.find(needle), std::string::npos) << what << ": \"" << r.error().message << "\" lacks \"" << needle << "\"";
  EXPECT_EQ(r.error().message.rfind("test.safetensors: ", 0), 0u) << "the message names the file";
}

}  // namespace

TEST(Checkpoint, RoundTripIsBitExact) {
  for (bool no_w_o : {false, true}) {
    const ModelWeights w = small_model(no_w_o);
    Result<std::string> bytes = checkpoint_bytes(w);
    ASSERT_TRUE(bytes) << bytes.error().message;
    Result<ModelWeights> r = parse_checkpoint(*bytes, "mem");
    ASSERT_TRUE(r) << r.error().message;
    const ModelWeights& v = *r;
    EXPECT_EQ(v.d_model, 12);
    EXPECT_EQ(v.context, 10);
    EXPECT_TRUE(v.bpe == w.bpe);
    EXPECT_EQ(v.tok_emb, w.tok_emb);
    EXPECT_EQ(v.pos_emb, w.pos_emb);
    EXPECT_EQ(v.lnf_g, w.lnf_g);
    EXPECT_EQ(v.lnf_b, w.lnf_b);
    ASSERT_EQ(v.num_layers(), 2);
    for (int l = 0; l < 2; ++l) {
      const LayerWeights &a = v.layers[l], &b = w.layers[l];
      EXPECT_EQ(a.w_q, b.w_q);
      EXPECT_EQ(a.w_k, b.w_k);
      EXPECT_EQ(a.w_v, b.w_v);
      EXPECT_EQ(a.w_o, b.w_o);
      EXPECT_EQ(a.w_qkv, b.w_qkv) << "fused on load";
      EXPECT_EQ(a.b_qkv, b.b_qkv);
      EXPECT_EQ(a.b_o, b.b_o);
      EXPECT_EQ(a.ln1_g, b.ln1_g);
      EXPECT_EQ(a.ln2_b, b.ln2_b);
      EXPECT_EQ(a.w_fc, b.w_fc);
      EXPECT_EQ(a.b_fc, b.b_fc);
      EXPECT_EQ(a.w_proj, b.w_proj);
      EXPECT_EQ(a.b_proj, b.b_proj);
    }
    const WeightsSource& s = v.source;
    EXPECT_EQ(s.kind, WeightsSource::Kind::Trained);
    EXPECT_EQ(s.trained_heads, 3);
    EXPECT_EQ(s.steps, 1234);
    EXPECT_DOUBLE_EQ(s.final_loss, 2.5);
    EXPECT_DOUBLE_EQ(s.val_loss, 2.75);
    EXPECT_EQ(s.corpus, "grammar-v1");
    EXPECT_EQ(s.seed, 42u);
    EXPECT_EQ(s.no_w_o, no_w_o);
    EXPECT_EQ(s.reproduce, w.source.reproduce);
    EXPECT_EQ(s.path, "mem");
    // The same bytes again: the writer is deterministic.
    EXPECT_EQ(*checkpoint_bytes(v), *bytes);
  }
}

TEST(Checkpoint, FileIsSafetensors) {
  const std::string& f = good_file();
  uint64_t n = 0;
  std::memcpy(&n, f.data(), 8);
  EXPECT_EQ((8 + n) % 8, 0u) << "the data starts 8-byte aligned";
  const Parts p = split(f);
  const json& meta = p.header["__metadata__"];
  for (const auto& [k, v] : meta.items()) EXPECT_TRUE(v.is_string()) << "metadata " << k << " must be a string";
  for (const char* k : {"d_model", "num_heads", "num_layers", "context", "vocab", "merges", "vocab_size", "steps", "train_loss", "val_loss",
                        "corpus", "reproduce", "check_tokens", "check_loss", "no_w_o"})
    EXPECT_TRUE(meta.contains(k)) << k;
  EXPECT_EQ(p.header["layers.1.w_fc"]["shape"], json({12, 48}));
  EXPECT_EQ(p.header["layers.0.w_q"]["dtype"], "F32");
  EXPECT_EQ(meta["num_heads"], "3");
}

TEST(Checkpoint, SaveIsAtomicAndLoadReadsIt) {
  const fs::path dir = fs::temp_directory_path() / ("headmap-ckpt-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string path = (dir / "m.safetensors").string();
  ASSERT_TRUE(save_checkpoint(path, small_model()));
  Result<ModelWeights> r = load_checkpoint(path);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->source.path, path);
  // A model that cannot be saved leaves the previous file as it was.
  ModelWeights bad = small_model();
  bad.layers[0].w_v(0, 0) = NAN;
  Status s = save_checkpoint(path, bad);
  ASSERT_FALSE(s);
  EXPECT_NE(s.error().message.find("not finite"), std::string::npos);
  EXPECT_TRUE(load_checkpoint(path));
  Result<ModelWeights> missing = load_checkpoint((dir / "absent.safetensors").string());
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().kind, ErrorKind::Io);
  fs::remove_all(dir);
}

TEST(Checkpoint, TruncatedFilesAreRejected) {
  const std::string& f = good_file();
  expect_bad("", "fewer than the 8-byte", "empty");
  expect_bad(f.substr(0, 5), "fewer than the 8-byte", "5 bytes");
  expect_bad(f.substr(0, 8), "truncated", "length only");
  expect_bad(f.substr(0, 200), "truncated", "half a header");
  expect_bad(f.substr(0, f.size() - 1), "truncated", "one byte short");
  expect_bad(f.substr(0, f.size() - 1000), "truncated", "a tensor short");
  for (size_t n = 0; n < f.size(); n += 97) EXPECT_FALSE(parse_checkpoint(f.substr(0, n), "t")) << n;  // and nothing crashes
}

TEST(Checkpoint, CorruptHeadersAreRejected) {
  std::string f = good_file();
  f[8] = 'x';  // the header's opening brace
  expect_bad(f, "not valid JSON", "flipped first header byte");
  f = good_file();
  const uint64_t huge = uint64_t(1) << 62;
  std::memcpy(f.data(), &huge, 8);
  expect_bad(f, "header length", "huge header length");
  f = good_file();
  const uint64_t one = 1;
  std::memcpy(f.data(), &one, 8);
  expect_bad(f, "header length", "header length 1");
  expect_bad(std::string(64, '\0'), "header length", "zeros");
  // Garbage of many sizes, from a fixed stream.
  for (size_t n : {8u, 9u, 64u, 1000u, 100000u}) {
    std::string g(n, '\0');
    for (size_t i = 0; i < n; ++i) g[i] = static_cast<char>(mix64(i * 31 + n) & 0xFF);
    EXPECT_FALSE(parse_checkpoint(g, "garbage")) << n;
  }
  // Every single-byte flip in the header either loads (a changed string value, say) or
  // fails cleanly: never a crash, never a silent change of any tensor.
  const std::string& good = good_file();
  uint64_t n = 0;
  std::memcpy(&n, good.data(), 8);
  int rejected = 0;
  for (uint64_t i = 8; i < 8 + n; i += 3) {
    std::string b = good;
    b[i] = static_cast<char>(b[i] ^ 0x20);
    Result<ModelWeights> r = parse_checkpoint(b, "flip");
    if (!r) {
      ++rejected;
      EXPECT_FALSE(r.error().message.empty());
    } else {
      EXPECT_EQ(r->tok_emb, small_model().tok_emb) << "byte " << i;
    }
  }
  EXPECT_GT(rejected, 0);
}

// F16 files hold every weight rounded to half precision, and their check loss is the loss
// of those rounded weights, so the loader's self-check passes on what it reads.
TEST(Checkpoint, F16RoundTripsAtHalfPrecision) {
  const ModelWeights w = small_model();
  Result<std::string> f16 = checkpoint_bytes(w, StoreDtype::F16);
  Result<std::string> f32 = checkpoint_bytes(w, StoreDtype::F32);
  ASSERT_TRUE(f16 && f32);
  EXPECT_LT(f16->size(), f32->size() * 3 / 4) << "half the tensor bytes";
  Result<ModelWeights> r = parse_checkpoint(*f16, "mem");
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_TRUE(r->tok_emb.isApprox(w.tok_emb, 1e-3f));
  EXPECT_TRUE(r->layers[1].w_proj.plain().isApprox(w.layers[1].w_proj.plain(), 1e-3f));
  EXPECT_NE(r->tok_emb, w.tok_emb) << "values were rounded";
  EXPECT_TRUE(r->bpe == w.bpe);
  ModelWeights big = w;
  big.layers[0].w_q(0, 0) = 1e6f;
  Result<std::string> too_big = checkpoint_bytes(big, StoreDtype::F16);
  ASSERT_FALSE(too_big);
  EXPECT_NE(too_big.error().message.find("beyond F16's range"), std::string::npos) << too_big.error().message;
}

TEST(Checkpoint, WrongDtypeShapeOrMissingTensorsAreRejected) {
  Parts p = split(good_file());
  p.header["layers.1.w_v"]["dtype"] = "BF16";
  expect_bad(join(p), "dtype BF16", "wrong dtype");

  p = split(good_file());
  p.header["layers.1.w_v"]["dtype"] = "F16";  // F16 is allowed, but then the size is half
  expect_bad(join(p), "F16 [12, 12] needs 288", "F16 with F32's bytes");

  p = split(good_file());
  p.header.erase("layers.1.w_v");
  expect_bad(join(p), "\"layers.1.w_v\" is missing", "missing tensor");

  p = split(good_file());
  p.header["layers.0.w_fc"]["shape"] = {48, 12};
  expect_bad(join(p), "has shape [48, 12]", "transposed shape");

  p = split(good_file());
  p.header["layers.2.w_q"] = p.header["layers.1.w_q"];
  expect_bad(join(p), "unexpected tensor \"layers.2.w_q\"", "extra layer");

  p = split(good_file());
  p.header["layers.0.b_k"]["data_offsets"] = p.header["layers.0.b_q"]["data_offsets"];
  expect_bad(join(p), "overlaps", "overlapping offsets");

  p = split(good_file());
  p.data += std::string(16, '\0');
  expect_bad(join(p), "after the last tensor", "trailing bytes");

  p = split(good_file());
  p.header["lnf_b"]["data_offsets"][1] = p.data.size() + 400;
  expect_bad(join(p), "claims bytes", "offset beyond the data");

  p = split(good_file());
  p.header["__metadata__"]["d_model"] = "sixty-four";
  expect_bad(join(p), "d_model", "non-numeric d_model");

  p = split(good_file());
  p.header["__metadata__"]["d_model"] = "24";  // more values than the file holds: refused before allocating
  expect_bad(join(p), "it is truncated or its metadata is wrong", "metadata claims a larger model than the file");
  p = split(good_file());
  p.header["__metadata__"]["d_model"] = "6";
  expect_bad(join(p), "has shape", "metadata and shapes disagree");

  p = split(good_file());
  p.header["__metadata__"]["num_heads"] = "5";
  expect_bad(join(p), "does not divide", "heads not dividing D");

  p = split(good_file());
  p.header["__metadata__"]["steps"] = 12;
  expect_bad(join(p), "not a string", "non-string metadata");

  p = split(good_file());
  p.header.erase("__metadata__");
  expect_bad(join(p), "__metadata__", "no metadata");
}

TEST(Checkpoint, VocabularyMustFitTheEmbedding) {
  Parts p = split(good_file());
  json vocab = json::parse(p.header["__metadata__"]["vocab"].get<std::string>());
  json merges = json::parse(p.header["__metadata__"]["merges"].get<std::string>());
  vocab.erase(vocab.size() - 1);  // the last token is the last merge's result: drop both
  merges.erase(merges.size() - 1);
  p.header["__metadata__"]["vocab"] = vocab.dump();
  p.header["__metadata__"]["merges"] = merges.dump();
  p.header["__metadata__"]["vocab_size"] = std::to_string(vocab.size());
  expect_bad(join(p), "tok_emb", "a token short");

  p = split(good_file());
  merges = json::parse(p.header["__metadata__"]["merges"].get<std::string>());
  merges[0] = "q\u0120 zz";  // parts that are not tokens
  p.header["__metadata__"]["merges"] = merges.dump();
  expect_bad(join(p), "not in the vocabulary", "a merge of unknown tokens");

  p = split(good_file());
  vocab = json::parse(p.header["__metadata__"]["vocab"].get<std::string>());
  vocab[260] = vocab[261];
  p.header["__metadata__"]["vocab"] = vocab.dump();
  expect_bad(join(p), "twice", "duplicate piece");

  p = split(good_file());
  vocab = json::parse(p.header["__metadata__"]["vocab"].get<std::string>());
  vocab[65] = "zzz";  // was the byte token "A" (0x41)
  p.header["__metadata__"]["vocab"] = vocab.dump();
  expect_bad(join(p), "0x41", "a byte token missing");

  p = split(good_file());
  p.header["__metadata__"]["vocab_size"] = "7";
  expect_bad(join(p), "vocab_size", "vocab_size disagrees");
}

TEST(Checkpoint, NonFiniteOrForeignTensorsAreRejected) {
  Parts p = split(good_file());
  const uint64_t at = p.header["layers.0.w_k"]["data_offsets"][0];
  const float nan = NAN;
  std::memcpy(p.data.data() + at + 8, &nan, 4);
  expect_bad(join(p), "not finite", "a NaN");

  // Swap W_Q and W_K: a well-formed file, but not the model that computed check_loss.
  p = split(good_file());
  std::swap(p.header["layers.0.w_q"]["data_offsets"], p.header["layers.0.w_k"]["data_offsets"]);
  expect_bad(join(p), "check", "swapped tensors");
}

TEST(Checkpoint, OnlyTrainedWeightsAreSaved) {
  Result<std::string> r = checkpoint_bytes(random_weights(16, 1, 7));
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("trained"), std::string::npos);
  ModelWeights w = small_model();
  w.source.trained_heads = 5;
  EXPECT_FALSE(checkpoint_bytes(w));
}

// ---- hostile files (issue 11) ------------------------------------------------------------

// A finite but extreme checkpoint without the optional self-check: every weight 3e38. It
// used to load, and the CLI printed -nan metrics and exited 0.
TEST(Checkpoint, ExtremeFiniteWeightsWithoutCheckAreRejected) {
  Parts p = split(good_file());
  p.header["__metadata__"].erase("check_tokens");
  p.header["__metadata__"].erase("check_loss");
  ASSERT_TRUE(parse_checkpoint(join(p), "test.safetensors")) << "without the check, the intact file still loads";
  const float big = 3e38f;
  for (size_t i = 0; i + 4 <= p.data.size(); i += 4) std::memcpy(p.data.data() + i, &big, 4);
  expect_bad(join(p), "NaN or infinity", "weights of 3e38");
}

// A header that claims D=4096, L=12 in a file of a few kilobytes is refused before
// anything is allocated: in a child limited to 1 GiB of address space, where the old
// loader's 9.6 GB reservation aborted with std::bad_alloc.
TEST(Checkpoint, HeaderClaimingAHugeModelIsRefusedBeforeAllocating) {
#if HEADMAP_TEST_SANITIZED
  GTEST_SKIP() << "an address-space limit (RLIMIT_AS) leaves no room for the sanitizer's shadow memory";
#endif
  Parts p = split(good_file());
  p.header["__metadata__"]["d_model"] = "4096";
  p.header["__metadata__"]["num_layers"] = "12";
  p.header["__metadata__"]["num_heads"] = "8";
  const std::string bytes = join(p);
  const pid_t pid = fork();
  if (pid == 0) {
    struct rlimit rl {size_t(1) << 30, size_t(1) << 30};
    setrlimit(RLIMIT_AS, &rl);
    Result<ModelWeights> r = parse_checkpoint(bytes, "huge.safetensors");
    _exit(!r && r.error().message.find("truncated or its metadata is wrong") != std::string::npos ? 0 : 3);
  }
  int st = 0;
  waitpid(pid, &st, 0);
  ASSERT_TRUE(WIFEXITED(st)) << "the loader died (signal " << WTERMSIG(st) << ")";
  EXPECT_EQ(WEXITSTATUS(st), 0) << "the loader did not refuse the huge header with its message";
}

// One safetensors reader (core/io/safetensors.h) serves headmap's checkpoints and Hugging
// Face files: the same structural fault reads the same words from both, and a checkpoint's
// NaN is located by the reader's element index.
TEST(Checkpoint, StructuralFaultsAreTheOneSafetensorsReadersMessages) {
  auto both = [](const std::string& bytes, const std::string& what) {
    Result<SafetensorsFile> st = SafetensorsFile::view(bytes.data(), bytes.size(), "test.safetensors");
    Result<ModelWeights> ck = parse_checkpoint(bytes, "test.safetensors");
    ASSERT_FALSE(st) << what;
    ASSERT_FALSE(ck) << what;
    EXPECT_EQ(ck.error().message, st.error().message) << what;
  };
  Parts p = split(good_file());
  p.data += std::string(16, '\0');
  both(join(p), "trailing bytes");
  p = split(good_file());
  p.header["layers.0.b_k"]["data_offsets"] = p.header["layers.0.b_q"]["data_offsets"];
  both(join(p), "overlapping offsets");
  p = split(good_file());
  p.header["lnf_b"]["data_offsets"][1] = p.data.size() + 400;
  both(join(p), "offset beyond the data");
  p = split(good_file());
  p.header["__metadata__"]["steps"] = 12;
  both(join(p), "non-string metadata");  // the format's rule, now also for Hugging Face files

  p = split(good_file());
  const uint64_t at = p.header["layers.0.w_k"]["data_offsets"][0];
  const float nan = NAN;
  std::memcpy(p.data.data() + at + 8, &nan, 4);
  Result<ModelWeights> r = parse_checkpoint(join(p), "test.safetensors");
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("\"layers.0.w_k\" holds a value that is not finite (NaN or infinity) at element 2."), std::string::npos)
      << r.error().message;
}
