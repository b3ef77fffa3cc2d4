// Hostile files and targets (issue 11): reads refuse what is not a regular file and never
// block; atomic writes keep modes, follow symlinks, refuse devices, FIFOs and directories,
// and leave no temporary file even when killed mid-write; parsers turn wrong types and
// absurd sizes into messages; the --npy directory is replaced whole.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "core/io/config_json.h"
#include "core/io/file_io.h"
#include "core/io/hf_tensors.h"
#include "core/io/hf_model.h"
#include "core/io/mapped_file.h"
#include "core/io/model_dir.h"
#include "core/io/npy.h"
#include "core/io/run_export.h"
#include "core/memory_budget.h"
#include "core/model/weights.h"
#include "core/text/hf_post_processors.h"
#include "core/text/hf_tokenizer.h"
#include "core/text/utf8.h"
#include "test_util.h"

using namespace headmap;
namespace fs = std::filesystem;

namespace {

fs::path temp_dir(const std::string& name) {
  const fs::path d = fs::temp_directory_path() / ("headmap-hostile-" + name + "-" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

std::set<std::string> names_in(const fs::path& d) {
  std::set<std::string> s;
  for (const auto& e : fs::directory_iterator(d)) s.insert(e.path().filename().string());
  return s;
}

bool contains(const std::string& s, const std::string& needle) { return s.find(needle) != std::string::npos; }

mode_t mode_of(const fs::path& p) {
  struct stat st {};
  EXPECT_EQ(::stat(p.c_str(), &st), 0);
  return st.st_mode & 07777;
}

}  // namespace

// ---- reading ---------------------------------------------------------------------------

TEST(HostileFiles, ReadsRefuseFifosDevicesAndDirectoriesWithoutBlocking) {
  const fs::path d = temp_dir("read");
  const fs::path fifo = d / "pipe";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const auto t0 = std::chrono::steady_clock::now();
  Result<std::string> r = read_file(fifo.string());  // used to wait forever for a writer
  ASSERT_FALSE(r);
  EXPECT_TRUE(contains(r.error().message, "FIFO")) << r.error().message;
  Result<MappedFile> m = MappedFile::open(fifo.string());
  ASSERT_FALSE(m);
  EXPECT_TRUE(contains(m.error().message, "FIFO")) << m.error().message;
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));

  Result<std::string> dir = read_file(d.string());  // used to say "is larger than 64 MiB"
  ASSERT_FALSE(dir);
  EXPECT_EQ(dir.error().kind, ErrorKind::Io);
  EXPECT_TRUE(contains(dir.error().message, "is a directory")) << dir.error().message;

  Result<std::string> zero = read_file("/dev/zero");  // used to read as empty
  ASSERT_FALSE(zero);
  EXPECT_TRUE(contains(zero.error().message, "is a device")) << zero.error().message;
  fs::remove_all(d);
}

TEST(HostileFiles, MemoryBudgetRefusesWithWhatToLower) {
  ::setenv("HEADMAP_MEMORY_BUDGET", "1M", 1);
  EXPECT_EQ(memory_budget_bytes(), uint64_t(1) << 20);
  Status s = check_memory(uint64_t(3) << 20, "The thing", "use a smaller thing");
  ::unsetenv("HEADMAP_MEMORY_BUDGET");
  ASSERT_FALSE(s);
  EXPECT_TRUE(contains(s.error().message, "The thing would need 3 MiB, more than the memory budget of 1 MiB")) << s.error().message;
  EXPECT_TRUE(contains(s.error().message, "use a smaller thing")) << s.error().message;
  EXPECT_TRUE(check_memory(1000, "x", "y"));
  EXPECT_EQ(mul_sat(uint64_t(1) << 40, uint64_t(1) << 40), UINT64_MAX);
}

// ---- parsers -----------------------------------------------------------------------------

// The .npy reader used to trust its header: (1e11,) tried to allocate 400 GB, (-1,) and
// (2^32, 2^32) aborted or overflowed, and (-2, -3) was accepted.
TEST(HostileFiles, NpyShapesAreValidatedAgainstTheData) {
  auto with_shape = [](const std::string& shape, size_t data_bytes) {
    std::string dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (" + shape + "), }";
    dict += std::string((64 - (10 + dict.size() + 1) % 64) % 64, ' ') + "\n";
    std::string out("\x93NUMPY\x01\x00", 8);
    out.push_back(static_cast<char>(dict.size() & 0xFF));
    out.push_back(static_cast<char>(dict.size() >> 8));
    return out + dict + std::string(data_bytes, '\0');
  };
  for (const auto& [shape, bytes] : std::vector<std::pair<std::string, size_t>>{
           {"100000000000,", 16}, {"-1,", 16}, {"4294967296, 4294967296", 16}, {"-2, -3", 24}, {"2, 3", 20}, {"2x,", 8}, {"3,", 8},
           {"77, 300, 77773773727, 0", 0}}) {  // found by fuzz_npy: empty, but the other dimensions overflow
    Result<Tensor> t = parse_npy(with_shape(shape, bytes));
    EXPECT_FALSE(t) << "shape (" << shape << ") with " << bytes << " bytes was accepted";
    if (!t) {
      EXPECT_EQ(t.error().kind, ErrorKind::BadFormat);
    }
  }
  Result<Tensor> ok = parse_npy(with_shape("2, 3", 24));
  ASSERT_TRUE(ok) << ok.error().message;
  EXPECT_EQ(ok->shape, (Shape{2, 3}));
  Result<Tensor> empty = parse_npy(with_shape("0, 5", 0));
  ASSERT_TRUE(empty) << empty.error().message;
}

// config JSON: wrong types, 1e38, and sizes whose product overflows are messages.
TEST(HostileFiles, ConfigJsonRefusesWrongTypesAndAbsurdSizes) {
  for (const char* text : {R"({"d_model": 1e38})", R"({"num_heads": 46341, "num_layers": 46341})", R"({"seed": -1})", R"({"context": 2.5})",
                           R"({"d_model": "big"})", R"({"num_layers": 0})", R"({"num_heads": -4})", R"({"seed": 1.5})",
                           R"({"d_model": 18446744073709551615})"}) {
    Result<ModelConfig> c = config_from_json(text);
    EXPECT_FALSE(c) << text << " was accepted";
  }
  Result<ModelConfig> ok = config_from_json(R"({"d_model": 64, "num_heads": 3, "num_layers": 2, "seed": 18446744073709551615})");
  ASSERT_TRUE(ok) << ok.error().message;  // an indivisible pair is a lesson, shown on screen
  EXPECT_EQ(ok->seed, UINT64_MAX);
}

TEST(HostileFiles, HuggingFaceConfigAndIndexOfWrongTypesAreMessages) {
  for (const char* text : {R"({"model_type": 6})", R"({"model_type": "gpt2", "activation_function": 3, "n_embd": 8, "n_head": 2,
                           "n_layer": 1, "vocab_size": 10, "n_positions": 8})", R"({"model_type": "gpt2", "n_embd": 1e38})", "[]", "nul"}) {
    Result<HfModelConfig> c = parse_hf_config(text, "config.json");
    ASSERT_FALSE(c) << text;
    EXPECT_TRUE(contains(c.error().message, "config.json: ")) << c.error().message;
  }
  for (const char* text : {R"({"weight_map": {"a": 1}})", R"({"weight_map": {"a": "../x"}})", R"({"weight_map": []})", R"({"weight_map": {}})", "{"}) {
    EXPECT_FALSE(parse_shard_index(text, "index.json")) << text;
  }
  Result<std::vector<std::string>> ok = parse_shard_index(R"({"weight_map": {"a": "m-2.safetensors", "b": "m-1.safetensors", "c": "m-1.safetensors"}})", "i");
  ASSERT_TRUE(ok);
  EXPECT_EQ(*ok, (std::vector<std::string>{"m-1.safetensors", "m-2.safetensors"}));
}

// Issue 35, F5: gpt_neo's attention_types, [[kinds...], repeats] entries, were expanded
// before they were counted: an empty pattern repeated 2^31 - 1 times spun for 23 s and then
// loaded silently, with no local layer. Each entry is checked and the layers counted first.
TEST(HostileFiles, GptNeoAttentionTypesAreCountedBeforeTheyAreMade) {
  const std::string head = R"({"model_type": "gpt_neo", "hidden_size": 64, "num_heads": 4, "num_layers": 2, "vocab_size": 100,
    "max_position_embeddings": 64, "window_size": 8, "attention_types": )";
  Result<HfModelConfig> ok = parse_hf_config(head + R"([[["global", "local"], 1]]})", "config.json");
  ASSERT_TRUE(ok) << ok.error().message;
  EXPECT_EQ(ok->arch.windows, (std::vector<int>{0, 8}));
  const std::pair<const char*, const char*> refused[] = {
      {R"([[[], 2147483647]]})", "\"attention_types\"[0] is not [[kinds...], repeats]"},
      {R"([[["global"], 2147483647], [["local"], 2147483647]]})", "\"attention_types\"[0] repeats its pattern 2147483647 times"},
      {R"([[["global"], 18446744073709551615]]})", "repeats its pattern"},
      {R"([[["global"], -1]]})", "repeats its pattern -1 times"},
      {R"([[["global", "global"], 2]]})", "makes more than 4 layers"},
      {R"([[["global"], 1]]})", "makes 1 layers; num_layers is 2"},
      {R"([[["sideways"], 2]]})", "names the kind \"sideways\""},
      {R"({"a": 1}})", "is not a list"},
  };
  for (const auto& [tail, want] : refused) {
    Result<HfModelConfig> c = parse_hf_config(head + tail, "config.json");
    ASSERT_FALSE(c) << tail;
    EXPECT_TRUE(contains(c.error().message, "config.json: GPT-Neo: ")) << c.error().message;
    EXPECT_TRUE(contains(c.error().message, want)) << c.error().message;
  }
}

// Issue 35, F13: a config's numbers are finite and in range, or refused naming the field
// and the value: "NaN" as a string was ignored, a negative rope_local_base_freq replaced by
// the global theta, and 1e39 became inf in a float (a soft-cap of inf then gave NaN maps,
// blamed on "corrupt weights").
TEST(HostileFiles, HuggingFaceConfigNumbersAreFiniteAndInRange) {
  const std::string llama = R"({"model_type": "llama", "hidden_size": 64, "num_attention_heads": 4, "num_hidden_layers": 2, "vocab_size": 100,
    "intermediate_size": 128, )";
  const std::string gemma = R"({"model_type": "gemma3_text", "hidden_size": 64, "num_attention_heads": 4, "num_hidden_layers": 2, "vocab_size": 100,
    "intermediate_size": 128, "head_dim": 16, )";
  ASSERT_TRUE(parse_hf_config(llama + R"("rope_theta": 500000, "rope_scaling": {"rope_type": "linear", "factor": 2}})", "config.json"));
  ASSERT_TRUE(parse_hf_config(gemma + R"("rope_local_base_freq": 10000, "query_pre_attn_scalar": 16, "attn_logit_softcapping": null})", "config.json"));
  const std::pair<std::string, const char*> refused[] = {
      {llama + R"("rope_scaling": {"rope_type": "linear", "factor": "NaN"}})", "\"factor\" is \"NaN\""},
      {llama + R"("rope_scaling": {"rope_type": "linear", "factor": 1e39}})", "\"factor\" is 1e+39"},
      {llama + R"("rope_theta": 1e39})", "\"rope_theta\" is 1e+39"},
      {llama + R"("rope_scaling": {"rope_type": "llama3", "factor": 8, "original_max_position_embeddings": 1e300}})", "\"original_max_position_embeddings\""},
      {gemma + R"("rope_local_base_freq": -10000})", "\"rope_local_base_freq\" is -10000"},
      {gemma + R"("query_pre_attn_scalar": 1e39})", "\"query_pre_attn_scalar\" is 1e+39"},
      {gemma + R"("attn_logit_softcapping": 1e39})", "\"attn_logit_softcapping\" is 1e+39"},
      {gemma + R"("final_logit_softcapping": -3})", "\"final_logit_softcapping\" is -3"},
  };
  for (const auto& [text, want] : refused) {
    Result<HfModelConfig> c = parse_hf_config(text, "config.json");
    ASSERT_FALSE(c) << text;
    EXPECT_TRUE(contains(c.error().message, "config.json: ")) << c.error().message;
    EXPECT_TRUE(contains(c.error().message, want)) << c.error().message;
  }
}

// ---- atomic writes -------------------------------------------------------------------------

TEST(HostileFiles, WritesRefuseDevicesFifosAndDirectories) {
  const fs::path d = temp_dir("targets");
  const fs::path fifo = d / "pipe";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  Status s = write_file_atomic(fifo.string(), "x");
  ASSERT_FALSE(s);
  EXPECT_TRUE(contains(s.error().message, "FIFO")) << s.error().message;
  EXPECT_TRUE(fs::is_fifo(fifo)) << "the FIFO was replaced by a file";
  EXPECT_FALSE(write_file_atomic(d.string(), "x"));
  EXPECT_TRUE(fs::is_directory(d));
  // A device node of our own (the same as /dev/full), where we may create one (root): the
  // old writer replaced /dev/full itself with a regular file.
  const fs::path full = d / "full";
  if (::mknod(full.c_str(), S_IFCHR | 0666, makedev(1, 7)) == 0) {
    Status f = write_file_atomic(full.string(), "x");
    ASSERT_FALSE(f);
    EXPECT_TRUE(contains(f.error().message, "is a device")) << f.error().message;
    EXPECT_TRUE(fs::is_character_file(full)) << "the device node was replaced by a file";
  }
  std::set<std::string> expected{"pipe"};
  if (fs::exists(fs::symlink_status(full))) expected.insert("full");
  EXPECT_EQ(names_in(d), expected) << "no temporary file is left";
  fs::remove_all(d);
}

TEST(HostileFiles, WritesKeepModesRespectTheUmaskAndFollowSymlinks) {
  const fs::path d = temp_dir("modes");
  const fs::path secret = d / "secret.json";
  std::ofstream(secret) << "old";
  fs::permissions(secret, fs::perms::owner_read | fs::perms::owner_write);
  ASSERT_TRUE(write_file_atomic(secret.string(), "new"));
  EXPECT_EQ(mode_of(secret), 0600u) << "an existing file's mode is kept (it used to become 0644)";
  EXPECT_EQ(read_file(secret.string()).value(), "new");

  const mode_t old = ::umask(077);
  ASSERT_TRUE(write_file_atomic((d / "private.json").string(), "p"));
  ::umask(022);
  ASSERT_TRUE(write_file_atomic((d / "public.json").string(), "p"));
  ::umask(old);
  EXPECT_EQ(mode_of(d / "private.json"), 0600u) << "umask 077 is respected";
  EXPECT_EQ(mode_of(d / "public.json"), 0644u);

  // A symlink is followed: its target is replaced, and the link stays a link.
  fs::create_directories(d / "real");
  std::ofstream(d / "real" / "target.json") << "before";
  fs::create_symlink("real/target.json", d / "link.json");
  ASSERT_TRUE(write_file_atomic((d / "link.json").string(), "after"));
  EXPECT_TRUE(fs::is_symlink(d / "link.json"));
  EXPECT_EQ(read_file((d / "real" / "target.json").string()).value(), "after");
  EXPECT_EQ(names_in(d), (std::set<std::string>{"secret.json", "private.json", "public.json", "real", "link.json"}));
  EXPECT_EQ(names_in(d / "real"), (std::set<std::string>{"target.json"}));
  fs::remove_all(d);
}

// kill -9 in the middle of a large write leaves the old file intact and no temporary file:
// the old writer's ".NAME.tmp-XXXXXX" stayed behind (up to 153 MB in the audit).
TEST(HostileFiles, KillDuringWriteLeavesNoTemporaryFile) {
  const fs::path d = temp_dir("kill");
  const fs::path target = d / "model.safetensors";
  std::ofstream(target) << "previous";
  for (int trial = 0; trial < 3; ++trial) {
    int ready[2];
    ASSERT_EQ(::pipe(ready), 0);
    const pid_t pid = fork();
    if (pid == 0) {
      const std::string big(size_t(256) << 20, 'x');  // long enough to be killed mid-write
      (void)!::write(ready[1], "g", 1);
      (void)write_file_atomic(target.string(), big);
      _exit(0);
    }
    char c = 0;
    ASSERT_EQ(::read(ready[0], &c, 1), 1);
    ::close(ready[0]);
    ::close(ready[1]);
    std::this_thread::sleep_for(std::chrono::milliseconds(10 + 30 * trial));
    ::kill(pid, SIGKILL);
    int st = 0;
    waitpid(pid, &st, 0);
    const std::set<std::string> names = names_in(d);
    EXPECT_EQ(names, (std::set<std::string>{"model.safetensors"})) << "trial " << trial << ": a temporary file was left behind";
    const uintmax_t size = fs::file_size(target);
    EXPECT_TRUE(size == 8 || size == (uintmax_t(256) << 20)) << "the target is neither the old nor the new file: " << size << " bytes";
    if (size != 8) std::ofstream(target) << "previous";
  }
  fs::remove_all(d);
}

// A temporary name left by a writer that is gone (the fallback without O_TMPFILE, or a
// kill between link and rename) is swept by the next write; a live writer's is not.
TEST(HostileFiles, StaleTemporaryNamesOfDeadWritersAreSwept) {
  const fs::path d = temp_dir("sweep");
  const std::string dead = ".out.json" + std::string(kTempMarker) + "2147483646-abcdefgh";  // no such pid
  const std::string live = ".out.json" + std::string(kTempMarker) + std::to_string(::getppid()) + "-abcdefgh";
  std::ofstream(d / dead) << "stale";
  std::ofstream(d / live) << "in use";
  ASSERT_TRUE(write_file_atomic((d / "out.json").string(), "{}"));
  EXPECT_EQ(names_in(d), (std::set<std::string>{"out.json", live}));
  fs::remove_all(d);
}

// ---- the --npy directory -------------------------------------------------------------------

namespace {
struct ExportRun {
  ModelConfig cfg;
  ModelWeights w;
  Batch batch;
  ForwardOutput out;
  RunRecord rec;
  explicit ExportRun(int layers) : cfg(test::config(24, 4, layers)), w(random_weights(24, layers, 1)) {
    batch = make_batch({"a b c"}, cfg, w);
    ForwardOptions fo;
    fo.keep_layer_io = true;
    out = forward(w, cfg, batch, fo).value();
    rec.cfg = cfg;
    rec.weights = &w;
    rec.batch = &batch;
    rec.out = &out;
  }
};
}  // namespace

// An export of 1 layer into a directory that held a 4-layer export used to leave layer1 to
// layer3 beside a meta.json that says 1 layer.
TEST(HostileFiles, NpyExportReplacesTheWholeDirectory) {
  const fs::path d = temp_dir("npydir");
  const fs::path out = d / "out";
  ASSERT_TRUE(export_npy_dir(out.string(), ExportRun(4).rec));
  EXPECT_EQ(names_in(out).size(), 1u + 4 * 10 + 1);
  fs::permissions(out, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec);
  ASSERT_TRUE(export_npy_dir(out.string(), ExportRun(1).rec));
  const std::set<std::string> names = names_in(out);
  EXPECT_EQ(names.size(), 1u + 10 + 1);
  EXPECT_FALSE(names.count("layer1.w_q.npy")) << "a stale layer file of the earlier export remains";
  EXPECT_EQ(mode_of(out), 0750u) << "the directory's mode is kept";
  EXPECT_EQ(names_in(d), (std::set<std::string>{"out"})) << "no staging directory is left";

  // A directory with files an export does not write is never replaced.
  std::ofstream(out / "notes.txt") << "mine";
  Status s = export_npy_dir(out.string(), ExportRun(1).rec);
  ASSERT_FALSE(s);
  EXPECT_TRUE(contains(s.error().message, "notes.txt")) << s.error().message;
  EXPECT_EQ(read_file((out / "notes.txt").string()).value(), "mine");
  std::ofstream(d / "file") << "x";
  EXPECT_FALSE(export_npy_dir((d / "file").string(), ExportRun(1).rec));
  fs::remove_all(d);
}

TEST(HostileFiles, JsonWithWeightsIsRefusedOverTheBudget) {
  const fs::path d = temp_dir("budget");
  ExportRun run(2);
  ::setenv("HEADMAP_MEMORY_BUDGET", "64K", 1);
  Status s = write_run_json((d / "run.json").string(), run.rec, true);
  ::unsetenv("HEADMAP_MEMORY_BUDGET");
  ASSERT_FALSE(s);
  EXPECT_TRUE(contains(s.error().message, "--with-weights")) << s.error().message;
  EXPECT_TRUE(names_in(d).empty());
  ASSERT_TRUE(write_run_json((d / "run.json").string(), run.rec, true));
  const auto j = nlohmann::json::parse(read_file((d / "run.json").string()).value());
  ASSERT_EQ(j["weights_shape"], nlohmann::json::parse("[2, 1, 4, 3, 3]"));
  // Every weight round-trips exactly through the text.
  for (int l = 0; l < 2; ++l)
    for (int h = 0; h < 4; ++h)
      for (int t = 0; t < 3; ++t)
        for (int k = 0; k < 3; ++k) EXPECT_EQ(j["weights"][l][0][h][t][k].get<float>(), run.out.weights(l, 0, h)[t * 3 + k]);
  fs::remove_all(d);
}

// ---- tokenizer files (issue 35) --------------------------------------------------------

namespace {
nlohmann::json read_json(const fs::path& p) { return nlohmann::json::parse(read_file(p.string()).value()); }
void write_text(const fs::path& p, const std::string& s) { std::ofstream(p, std::ios::binary) << s; }
}  // namespace

// F2: a post-processor's special-token id at or past the model's vocabulary reached the
// forward pass's internal check (SIGABRT). It is refused where the tokenizer meets the
// model, naming the file, the field and the id.
TEST(HostileFiles, SpecialTokenIdsPastTheVocabularyAreRefusedByField) {
  const fs::path data = fs::path(HEADMAP_TEST_DATA) / "tokenizers";
  struct Case {
    const char* file;
    const char* pointer;  // the id's place in the JSON
    const char* field;    // as the message names it
  };
  const Case cases[] = {
      {"wordpiece_cased.json", "/post_processor/cls/1", "post_processor.cls"},                 // BertProcessing
      {"roberta_trim.json", "/post_processor/sep/1", "post_processor.sep"},                    // RobertaProcessing
      {"wordpiece_bert.json", "/post_processor/special_tokens/[CLS]/ids/0", "post_processor.special_tokens[\"[CLS]\"].ids[0]"},
      {"bpe_bytelevel_trim.json", "/post_processor/processors/1/special_tokens/<s>/ids/0",
       "post_processor.processors[1].special_tokens[\"<s>\"].ids[0]"},  // a Sequence's template
  };
  for (const Case& c : cases) {
    const fs::path d = temp_dir("special-ids");
    nlohmann::json j = read_json(data / c.file);
    const Result<HfTokenizer> own = HfTokenizer::from_json(j.dump());
    ASSERT_TRUE(own) << c.file;
    const int V = own->vocab_size();
    write_text(d / "tokenizer.json", j.dump());
    ModelWeights ok;
    ASSERT_TRUE(load_hf_tokenizer(d, V, ok)) << c.file << ": the file as it is fits its own vocabulary";
    j[nlohmann::json::json_pointer(c.pointer)] = V;  // one past the last id
    write_text(d / "tokenizer.json", j.dump());
    ModelWeights w;
    const Status s = load_hf_tokenizer(d, V, w);
    ASSERT_FALSE(s) << c.file << ": an id past the vocabulary was accepted";
    EXPECT_TRUE(contains(s.error().message, (d / "tokenizer.json").string())) << s.error().message;
    EXPECT_TRUE(contains(s.error().message, c.field)) << s.error().message;
    EXPECT_TRUE(contains(s.error().message, "id " + std::to_string(V))) << s.error().message;
    EXPECT_TRUE(contains(s.error().message, "config.json's vocab_size is " + std::to_string(V))) << s.error().message;
    EXPECT_FALSE(w.hf_tokenizer);
    fs::remove_all(d);
  }
}

// F3: invalid UTF-8 in vocab.txt or merges.txt aborted the process (nlohmann's
// type_error.316, thrown while they were turned into a tokenizer.json). A message names the
// file and the line.
TEST(HostileFiles, InvalidUtf8InVocabTxtOrMergesTxtIsAMessage) {
  const fs::path d = temp_dir("utf8-vocab");
  write_text(d / "vocab.txt", "[PAD]\n[UNK]\n[CLS]\n[SEP]\nthe\n\xff\xfe" "cat\nsat\n");
  Result<HfTokenizer> t = HfTokenizer::load(d.string());
  ASSERT_FALSE(t);
  EXPECT_TRUE(contains(t.error().message, "vocab.txt line 6 is not valid UTF-8")) << t.error().message;
  fs::remove(d / "vocab.txt");
  write_text(d / "vocab.json", R"({"a": 0, "b": 1, "ab": 2})");
  write_text(d / "merges.txt", "#version: 0.2\na b\n\xc3(\n");
  t = HfTokenizer::load(d.string());
  ASSERT_FALSE(t);
  EXPECT_TRUE(contains(t.error().message, "merges.txt line 3 is not valid UTF-8")) << t.error().message;
  fs::remove_all(d);
}

// F15: a line written twice in vocab.txt: the last id wins, as in Hugging Face's tokenizers
// (WordPiece::read_file inserts each line into a map, so a later line replaces an earlier
// one); headmap kept the first, and the ids differed silently. The earlier id then has no
// token, as there.
TEST(HostileFiles, DuplicateVocabTxtLinesKeepTheLastIdAsHuggingFace) {
  const fs::path d = temp_dir("dup-vocab");
  write_text(d / "vocab.txt", "[PAD]\n[UNK]\n[CLS]\n[SEP]\ncat\nsat\ncat\n[SEP]\n");
  Result<HfTokenizer> t = HfTokenizer::load(d.string());
  ASSERT_TRUE(t) << t.error().message;
  EXPECT_EQ(t->token_to_id("cat"), 6);
  EXPECT_EQ(t->id_to_token(4), "");
  const HfEncoding e = t->encode("cat sat");
  EXPECT_EQ(e.ids, (std::vector<int>{2, 6, 5, 7}));  // [CLS] cat sat [SEP], [SEP] at its last line too
  fs::remove_all(d);
}

// F14: a model directory's files stay inside it. config.json or a shard as a link to any
// file was followed (a config.json linked to /etc/passwd showed its first bytes in the
// message); the one exception is Hugging Face's cache, whose snapshot files link into the
// repository's blobs/ folder (model_dir.h).
TEST(HostileFiles, ModelDirectoryLinksStayInsideOrInTheCachesBlobs) {
  const fs::path d = temp_dir("model-links");
  const fs::path model = d / "model", outside = d / "secret.json";
  fs::create_directories(model);
  write_text(outside, R"({"model_type": "llama"})");
  fs::create_symlink(outside, model / "config.json");
  Result<ModelWeights> w = load_hf_model(model.string());
  ASSERT_FALSE(w);
  EXPECT_TRUE(contains(w.error().message, "config.json is a link to " + fs::canonical(outside).string())) << w.error().message;
  EXPECT_TRUE(contains(w.error().message, "outside the model directory")) << w.error().message;
  // A tokenizer file linked out of the directory, read through the tokenizer's own loader.
  const fs::path tok = d / "tok";
  fs::create_directories(tok);
  fs::create_symlink(fs::path(HEADMAP_TEST_DATA) / "tokenizers" / "wordpiece_bert.json", tok / "tokenizer.json");
  Result<HfTokenizer> t = HfTokenizer::load(tok.string());
  ASSERT_FALSE(t);
  EXPECT_TRUE(contains(t.error().message, "outside the model directory")) << t.error().message;
  // Links inside the directory, and a cache snapshot's links into its blobs/, are read.
  fs::create_symlink("tokenizer-real.json", tok / "alias.json");
  write_text(tok / "tokenizer-real.json", "{}");
  EXPECT_TRUE(check_model_file(tok, tok / "alias.json"));
  const fs::path repo = d / "hub" / "models--org--name", snap = repo / "snapshots" / "abc123";
  fs::create_directories(repo / "blobs");
  fs::create_directories(snap);
  write_text(repo / "blobs" / "0f1e2d", "{}");
  fs::create_symlink("../../blobs/0f1e2d", snap / "config.json");
  EXPECT_TRUE(check_model_file(snap, snap / "config.json"));
  fs::create_symlink("../../../../secret.json", snap / "tokenizer.json");  // the cache's layout, but out of it
  EXPECT_FALSE(check_model_file(snap, snap / "tokenizer.json"));
  fs::remove_all(d);
}

// F12: a tokenizer.json that is a FIFO (or /dev/zero linked in) was skipped as if absent:
// "has no tokenizer". It is read, and the reader says what it is.
TEST(HostileFiles, ATokenizerFileThatIsNotRegularIsNamedAsSuch) {
  const fs::path d = temp_dir("fifo-tokenizer");
  ASSERT_EQ(::mkfifo((d / "tokenizer.json").c_str(), 0600), 0);
  Result<HfTokenizer> t = HfTokenizer::load(d.string());
  ASSERT_FALSE(t);
  EXPECT_TRUE(contains(t.error().message, "FIFO")) << t.error().message;
  EXPECT_FALSE(contains(t.error().message, "has no tokenizer")) << t.error().message;
  fs::remove_all(d);
}

// F11: text from files is printed and drawn escaped: an ANSI sequence in a tensor name, a
// NUL in a shard name (which cut the message), a right-to-left override in a lesson title.
TEST(HostileFiles, UntrustedTextIsEscapedBeforeItIsShown) {
  EXPECT_EQ(printable("layer\x1b[32m loaded OK\x1b[0m"), "layer\\x1b[32m loaded OK\\x1b[0m");
  EXPECT_EQ(printable(std::string("model-") + '\0' + "1.safetensors"), "model-\\x001.safetensors");
  EXPECT_EQ(printable("abc\xE2\x80\xAE" "fed"), "abc\\u{202e}fed");         // U+202E RIGHT-TO-LEFT OVERRIDE
  EXPECT_EQ(printable("x\xE2\x81\xA7y"), "x\\u{2067}y");                    // U+2067 RIGHT-TO-LEFT ISOLATE
  EXPECT_EQ(printable("\xC2\x9B" "2J"), "\\x9b2J");                          // C1 CSI
  EXPECT_EQ(printable("two\nlines\tand \xD8\xB3\xD9\x84\xD8\xA7\xD9\x85"), "two\nlines\tand \xD8\xB3\xD9\x84\xD8\xA7\xD9\x85");  // Arabic stays
  EXPECT_EQ(printable("a\nb", false), "a\\x0ab");
  EXPECT_EQ(printable("bad \xff byte"), "bad \xEF\xBF\xBD byte");
}

// F8: vocab.json had no nesting limit (tokenizer.json had): 100 MB of "[" took 7.4 GB. It is
// refused by its depth before a tree is built, as every JSON file headmap reads.
TEST(HostileFiles, VocabJsonNestingIsLimitedBeforeItIsParsed) {
  const fs::path d = temp_dir("deep-vocab");
  write_text(d / "vocab.json", std::string(1 << 20, '['));
  write_text(d / "merges.txt", "#version: 0.2\n");
  Result<HfTokenizer> t = HfTokenizer::load(d.string());
  ASSERT_FALSE(t);
  EXPECT_TRUE(contains(t.error().message, "vocab.json: nests deeper than 2 levels")) << t.error().message;
  fs::remove_all(d);
}

// F6: WordPiece and Unigram try every piece length up to the longest at each place of a
// word; a 4,096-byte piece made a 60,000-character word take over a minute. Pieces longer
// than 256 bytes are refused, naming the field, the length and the id.
TEST(HostileFiles, WordPieceAndUnigramPiecesAreBounded) {
  const fs::path data = fs::path(HEADMAP_TEST_DATA) / "tokenizers";
  nlohmann::json wp = read_json(data / "wordpiece_bert.json");
  wp["model"]["vocab"][std::string(300, 'a')] = wp["model"]["vocab"].size();
  Result<HfTokenizer> t = HfTokenizer::from_json(wp.dump());
  ASSERT_FALSE(t);
  EXPECT_TRUE(contains(t.error().message, "model.vocab has a piece of 300 bytes")) << t.error().message;
  nlohmann::json uni = read_json(data / "unigram_metaspace.json");
  uni["model"]["vocab"].push_back({std::string(4096, 'a'), -20.0});
  t = HfTokenizer::from_json(uni.dump());
  ASSERT_FALSE(t);
  EXPECT_TRUE(contains(t.error().message, "model.vocab has a piece of 4096 bytes")) << t.error().message;
  uni["model"]["vocab"].back() = {std::string(256, 'a'), -20.0};  // the most it reads
  t = HfTokenizer::from_json(uni.dump());
  ASSERT_TRUE(t) << t.error().message;
  EXPECT_FALSE(t->encode(std::string(1000, 'a'), false).ids.empty());
}

// F4: ByteLevel's trim_offsets counted, for each token with trailing spaces, the characters
// of the text from its start: work that grew with the square of a line's tokens (1 MiB of
// words between double spaces did not finish in a minute). Its work is counted
// (hf::trim_bytes_stepped), not timed: it must stay within a few bytes per byte of text at
// every length. (The old count stepped about n/2 bytes per token: 4 KiB already gave ~500x.)
TEST(HostileFiles, ByteLevelOffsetTrimmingIsLinearInTheText) {
  for (const char* file : {"roberta_trim.json", "bpe_bytelevel_trim.json"}) {
    Result<HfTokenizer> t = HfTokenizer::load((fs::path(HEADMAP_TEST_DATA) / "tokenizers" / file).string());
    ASSERT_TRUE(t) << t.error().message;
    for (const size_t bytes : {size_t(4) << 10, size_t(64) << 10}) {
      std::string text;
      while (text.size() < bytes) text += "ab  ";
      hf::trim_bytes_stepped = 0;
      const HfEncoding e = t->encode(text);
      ASSERT_GT(e.ids.size(), bytes / 4) << file;
      EXPECT_GT(hf::trim_bytes_stepped, 0u) << file << ": the trimming did not run on this text";
      EXPECT_LE(hf::trim_bytes_stepped, 4 * text.size()) << file << " at " << text.size() << " bytes";
    }
  }
}

// F7, F10: a Split regex that backtracks without end. PCRE2's match limit stopped the split
// silently, leaving the rest of the text unsplit; now each match is bounded (and one text's
// matches by a time budget) and giving up is counted in the encoding, which the app and the
// CLI report.
TEST(HostileFiles, ARegexThatGivesUpIsReported) {
  nlohmann::json j = read_json(fs::path(HEADMAP_TEST_DATA) / "tokenizers" / "wordpiece_bert.json");
  j["pre_tokenizer"] = {{"type", "Split"}, {"pattern", {{"Regex", "(a+)+$"}}}, {"behavior", "Isolated"}, {"invert", false}};
  Result<HfTokenizer> t = HfTokenizer::from_json(j.dump());
  ASSERT_TRUE(t) << t.error().message;
  std::string text;
  for (int i = 0; i < 20; ++i) text += std::string(28, 'a') + " ";
  EXPECT_GE(t->encode(text).regex_stopped, 1);
  EXPECT_EQ(t->encode("the cat sat").regex_stopped, 0);
}
