// headmap-cli against hostile inputs and targets (issue 11): FIFOs, devices and
// directories, --seed -1, out-of-memory requests under a memory budget or `ulimit -v`,
// exports onto devices, symlinks and files of other modes, and kill -9 during training.
// Every case runs the real executable with a time limit, so a hang fails instead of waiting.
#include <gtest/gtest.h>
#include <signal.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sanitized.h"

#include <chrono>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace fs = std::filesystem;

namespace {

fs::path tmp() {
  static fs::path d = [] {
    fs::path p = fs::temp_directory_path() / ("headmap-hostile-cli-" + std::to_string(::getpid()));
    fs::remove_all(p);
    fs::create_directories(p);
    return p;
  }();
  return d;
}

struct Limits {
  uint64_t address_space = 0;  // ulimit -v, in bytes; 0 = none
  int umask = -1;
  std::vector<std::pair<std::string, std::string>> env;
  int timeout_s = 60;
  std::string read_only_at;  // a read-only file system mounted here for the run alone (a private mount namespace)
};

struct CliRun {
  int status = -1;  // exit status, 128 + signal, or -2 for a timeout (killed)
  std::string err;
};

// Starts headmap-cli; returns its pid (output to files in tmp()).
pid_t start(std::vector<std::string> args, const Limits& lim) {
  args.insert(args.begin(), HEADMAP_CLI);
  const fs::path out = tmp() / "stdout", err = tmp() / "stderr";  // before fork: tmp() names the parent's directory
  const pid_t pid = fork();
  if (pid == 0) {
    if (!freopen(out.c_str(), "w", stdout) || !freopen(err.c_str(), "w", stderr)) _exit(126);
    if (lim.address_space) {
      struct rlimit rl {lim.address_space, lim.address_space};
      setrlimit(RLIMIT_AS, &rl);
    }
    if (lim.umask >= 0) ::umask(static_cast<mode_t>(lim.umask));
    for (const auto& [k, v] : lim.env) ::setenv(k.c_str(), v.c_str(), 1);
    if (!lim.read_only_at.empty()) {  // as root, or in a user namespace of its own; 125: neither is allowed here
      if (::unshare(CLONE_NEWNS) != 0 && ::unshare(CLONE_NEWUSER | CLONE_NEWNS) != 0) _exit(125);
      if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0 ||
          ::mount("headmap-ro", lim.read_only_at.c_str(), "tmpfs", MS_RDONLY, "size=64k") != 0)
        _exit(125);
    }
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    execv(argv[0], argv.data());
    _exit(127);
  }
  return pid;
}

CliRun cli(std::vector<std::string> args, const Limits& lim = {}) {
  const pid_t pid = start(std::move(args), lim);
  CliRun r;
  int st = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(lim.timeout_s);
  while (waitpid(pid, &st, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() > deadline) {
      ::kill(pid, SIGKILL);
      waitpid(pid, &st, 0);
      r.status = -2;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (r.status != -2) r.status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  std::ifstream e(tmp() / "stderr");
  r.err.assign(std::istreambuf_iterator<char>(e), {});
  return r;
}

bool has(const std::string& s, const std::string& needle) { return s.find(needle) != std::string::npos; }

std::set<std::string> names_in(const fs::path& d) {
  std::set<std::string> s;
  for (const auto& e : fs::directory_iterator(d)) s.insert(e.path().filename().string());
  return s;
}

mode_t mode_of(const fs::path& p) {
  struct stat st {};
  EXPECT_EQ(::stat(p.c_str(), &st), 0);
  return st.st_mode & 07777;
}

}  // namespace

// A FIFO given to --file or --checkpoint hung forever; a directory said "is larger than
// 64 MiB" and exited 2 where README says 1; /dev/zero read as empty.
TEST(HostileCli, NonRegularInputsAreRefusedWithoutHanging) {
  const fs::path fifo = tmp() / "pipe";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  Limits quick;
  quick.timeout_s = 20;
  for (const char* opt : {"--file", "--checkpoint"}) {
    CliRun r = cli({opt, fifo.string()}, quick);
    EXPECT_EQ(r.status, 1) << opt << " on a FIFO (-2 = hung): " << r.err;
    EXPECT_TRUE(has(r.err, "FIFO")) << r.err;
  }
  CliRun dir = cli({"--file", tmp().string()}, quick);
  EXPECT_EQ(dir.status, 1) << dir.err;
  EXPECT_TRUE(has(dir.err, "is a directory")) << dir.err;
  CliRun zero = cli({"--file", "/dev/zero"}, quick);
  EXPECT_EQ(zero.status, 1) << zero.err;
  EXPECT_TRUE(has(zero.err, "is a device")) << zero.err;
}

// --seed -1 silently became 2^64 - 1.
TEST(HostileCli, NegativeSeedIsRefused) {
  CliRun r = cli({"--random-init", "--seed", "-1", "--text", "a b"});
  EXPECT_EQ(r.status, 2) << r.err;
  EXPECT_TRUE(has(r.err, "--seed: must be a whole number >= 0")) << r.err;
  EXPECT_EQ(cli({"--random-init", "--seed", "18446744073709551615", "--text", "a b"}).status, 0);
}

// D=4096, H=64, L=12 took 11.9 GB and 59 s; under `ulimit -v` it died of an uncaught
// std::bad_alloc. Now it is refused at once, with what to lower.
TEST(HostileCli, AModelBeyondTheAddressSpaceLimitIsRefused) {
#if HEADMAP_TEST_SANITIZED
  GTEST_SKIP() << "an address-space limit (RLIMIT_AS) leaves no room for the sanitizer's shadow memory";
#endif
  Limits lim;
  lim.address_space = uint64_t(3) << 30;
  lim.timeout_s = 30;
  CliRun r = cli({"--random-init", "--d-model", "4096", "--heads", "64", "--layers", "12", "--text", "a b"}, lim);
  EXPECT_EQ(r.status, 2) << r.err;
  EXPECT_TRUE(has(r.err, "memory budget")) << r.err;
  EXPECT_TRUE(has(r.err, "--d-model")) << r.err;
}

// --json --with-weights needed about 17 times the maps; --png of 1,024 heads drew a canvas
// of gigabytes. Both are estimated first and refused with what to lower.
TEST(HostileCli, ExportsOverTheMemoryBudgetAreRefused) {
  Limits lim;
  lim.env = {{"HEADMAP_MEMORY_BUDGET", "400M"}};
  std::string text;
  for (int i = 0; i < 400; ++i) text += "w" + std::to_string(i) + " ";
  const fs::path j = tmp() / "big.json";
  CliRun r = cli({"--random-init", "--d-model", "256", "--heads", "256", "--layers", "1", "--context", "400", "--text", text, "--json", j.string(),
                  "--with-weights"},
                 lim);
  EXPECT_EQ(r.status, 2) << r.err;
  EXPECT_TRUE(has(r.err, "leave out the weights (--with-weights)")) << r.err;
  EXPECT_FALSE(fs::exists(j));
  const fs::path png = tmp() / "many.png";
  r = cli({"--random-init", "--d-model", "1024", "--heads", "1024", "--layers", "1", "--text", "The cat sat on the mat.", "--png", png.string()}, lim);
  EXPECT_EQ(r.status, 2) << r.err;
  EXPECT_TRUE(has(r.err, "fewer heads")) << r.err;
  EXPECT_FALSE(fs::exists(png));
}

// --json /dev/full (as root) replaced the device node with a regular file; a symlink was
// replaced by a file; the mode was forced to 0644 over 0600 and under umask 077.
TEST(HostileCli, ExportTargetsKeepWhatTheyAre) {
  const fs::path d = tmp() / "targets";
  fs::create_directories(d);
  const fs::path fifo = d / "pipe";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  CliRun r = cli({"--text", "a b", "--json", fifo.string()});
  EXPECT_EQ(r.status, 1) << r.err;
  EXPECT_TRUE(fs::is_fifo(fifo));
  // A device node like /dev/full, made here where we may (root): the real /dev/full is never
  // used, since the old writer (run as root) replaced it with a regular file.
  const fs::path full = d / "full";
  if (::mknod(full.c_str(), S_IFCHR | 0666, makedev(1, 7)) == 0) {
    r = cli({"--text", "a b", "--json", full.string()});
    EXPECT_EQ(r.status, 1) << r.err;
    EXPECT_TRUE(has(r.err, "is a device")) << r.err;
    EXPECT_TRUE(fs::is_character_file(full)) << "the device node was replaced by a file";
    fs::remove(full);
  }

  const fs::path secret = d / "secret.json";
  std::ofstream(secret) << "{}";
  fs::permissions(secret, fs::perms::owner_read | fs::perms::owner_write);
  ASSERT_EQ(cli({"--text", "a b", "--json", secret.string()}).status, 0);
  EXPECT_EQ(mode_of(secret), 0600u);
  Limits private_umask;
  private_umask.umask = 077;
  ASSERT_EQ(cli({"--text", "a b", "--json", (d / "new.json").string()}, private_umask).status, 0);
  EXPECT_EQ(mode_of(d / "new.json"), 0600u);

  fs::create_symlink("secret.json", d / "link.json");
  ASSERT_EQ(cli({"--text", "a b c", "--json", (d / "link.json").string()}).status, 0);
  EXPECT_TRUE(fs::is_symlink(d / "link.json")) << "the link was replaced by a file";
  EXPECT_GT(fs::file_size(secret), 100u) << "the link's target was not written";
  EXPECT_EQ(names_in(d), (std::set<std::string>{"pipe", "secret.json", "new.json", "link.json"}));
}

// --npy into a directory that held a 4-layer export left layer1 to layer3 behind.
TEST(HostileCli, NpyExportLeavesNoStaleLayerFiles) {
  const fs::path out = tmp() / "npy";
  ASSERT_EQ(cli({"--random-init", "--layers", "4", "--text", "a b c", "--npy", out.string()}).status, 0);
  ASSERT_TRUE(fs::exists(out / "layer3.w_q.npy"));
  ASSERT_EQ(cli({"--random-init", "--layers", "1", "--text", "a b c", "--npy", out.string()}).status, 0);
  EXPECT_FALSE(fs::exists(out / "layer1.w_q.npy"));
  EXPECT_FALSE(fs::exists(out / "layer3.attn_in.npy"));
  EXPECT_EQ(names_in(out).size(), 12u);
  std::ofstream(out / "mine.txt") << "keep";
  CliRun r = cli({"--random-init", "--layers", "1", "--text", "a b c", "--npy", out.string()});
  EXPECT_EQ(r.status, 1) << r.err;
  EXPECT_TRUE(has(r.err, "mine.txt")) << r.err;
  EXPECT_TRUE(fs::exists(out / "mine.txt"));
}

// kill -9 during `train --out` never corrupted the target, but left hidden temporary files
// of up to 153 MB in 9 of 20 trials. Here: kills spread over the run, then not one
// temporary name may remain, and the target is either absent or a whole checkpoint.
TEST(HostileCli, KillDuringTrainLeavesNoTemporaryFiles) {
  const fs::path d = tmp() / "train";
  fs::create_directories(d);
  const fs::path out = d / "model.safetensors";
  const std::vector<std::string> args = {"train", "--corpus", std::string(HEADMAP_ASSETS) + "/corpus/grammar-v1.txt", "--vocab-size", "300",
                                         "--d-model", "256", "--heads", "4", "--layers", "4", "--context", "32", "--seq", "16", "--batch", "2",
                                         "--steps", "2", "--warmup", "1", "--eval-every", "2", "--eval-tokens", "64", "--out", out.string()};
  // One full run first, to learn how long it takes.
  const auto t0 = std::chrono::steady_clock::now();
  CliRun full = cli(args, Limits{0, -1, {}, 300});
  ASSERT_EQ(full.status, 0) << full.err;
  const double run_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  const uintmax_t whole = fs::file_size(out);
  for (int trial = 0; trial < 8; ++trial) {
    const pid_t pid = start(args, {});
    std::this_thread::sleep_for(std::chrono::microseconds(static_cast<int64_t>(run_ms * 1000 * (0.55 + 0.06 * trial))));
    ::kill(pid, SIGKILL);
    int st = 0;
    waitpid(pid, &st, 0);
    EXPECT_EQ(names_in(d), (std::set<std::string>{"model.safetensors"})) << "trial " << trial << ": a temporary file remains";
    EXPECT_EQ(fs::file_size(out), whole) << "trial " << trial << ": the target is not a whole checkpoint";
  }
}

// A checkpoint without the optional self-check whose weights are finite but about 3e38:
// the CLI printed -nan metrics and exited 0. Now the load refuses it (exit 1).
TEST(HostileCli, ExtremeWeightsAreRefusedNotPrintedAsNan) {
  const std::string file = std::string(HEADMAP_ASSETS) + "/../tests/fuzz/crashes/checkpoint/weights-3e38-no-check.safetensors";
  ASSERT_TRUE(fs::exists(file));
  CliRun r = cli({"--checkpoint", file, "--text", "a b c"});
  EXPECT_EQ(r.status, 1) << r.err;
  EXPECT_TRUE(has(r.err, "NaN or infinity")) << r.err;
  EXPECT_FALSE(has(r.err, "nan ")) << r.err;
}

// Issue 35, F16: lesson-export wrote slide after slide into the folder, so a failure half
// way (a full disk) left the first slides behind. A slide that cannot be written (here a
// folder already stands where slide 2 goes) now leaves no slide at all, and no staging folder.
TEST(HostileCli, LessonExportWritesAllSlidesOrNone) {
  const fs::path dir = tmp() / "slides-all-or-none";
  fs::remove_all(dir);
  fs::create_directories(dir / "004-02.png");
  const CliRun r = cli({"lesson-export", "004", "--png", dir.string(), "--size", "1024x768"}, Limits{0, -1, {}, 300});
  EXPECT_EQ(r.status, 1) << r.err;
  EXPECT_TRUE(has(r.err, "004-02.png")) << r.err;
  EXPECT_EQ(names_in(dir), (std::set<std::string>{"004-02.png"})) << r.err;
  fs::remove_all(dir);
}

// Issue 35, F12: an output on a read-only file system, or where even root may not write
// (/sys), said "No such file or directory": lesson-export ignored the failure to create its
// folder and reported the staging folder's. Each target now names its own failure.
TEST(HostileCli, OutputsWhereNothingCanBeWrittenSayWhy) {
  const fs::path ro = tmp() / "read-only";
  fs::create_directories(ro);
  const std::vector<std::vector<std::string>> runs = {
      {"lesson-export", "004", "--png", (ro / "slides").string(), "--size", "1024x768"},
      {"lesson-export", "004", "--png", ro.string(), "--size", "1024x768"},
      {"--text", "the cat", "--json", (ro / "run.json").string()},
      {"--text", "the cat", "--npy", (ro / "npy").string()}};
  for (const std::vector<std::string>& args : runs) {
    Limits lim;
    lim.read_only_at = ro.string();
    lim.timeout_s = 300;
    const CliRun r = cli(args, lim);
    if (r.status == 125) GTEST_SKIP() << "no private mount namespace here: the read-only file system cannot be made";
    EXPECT_EQ(r.status, 1) << args.back() << r.err;
    EXPECT_TRUE(has(r.err, "Read-only file system")) << r.err;
    EXPECT_FALSE(has(r.err, "No such file or directory")) << r.err;
  }
  const CliRun sys = cli({"lesson-export", "004", "--png", "/sys/headmap-slides", "--size", "1024x768"}, Limits{0, -1, {}, 300});
  EXPECT_EQ(sys.status, 1) << sys.err;
  EXPECT_TRUE(has(sys.err, "/sys/headmap-slides")) << sys.err;
  EXPECT_FALSE(has(sys.err, "No such file or directory")) << sys.err;
  EXPECT_FALSE(fs::exists("/sys/headmap-slides"));
}

// Issue 35, F8: 16 MiB of one-character lines are 8 M sentences; the attention budget was
// checked only after all were tokenized (6.4 GB, then "Out of memory"). The sentences are
// sized against the budget before any is tokenized, and the message says what to lower.
TEST(HostileCli, ManyLinesAreSizedBeforeTheyAreTokenized) {
  const fs::path f = tmp() / "lines.txt";
  {
    std::ofstream o(f, std::ios::binary);
    std::string lines(1 << 20, 'a');
    for (size_t i = 1; i < lines.size(); i += 2) lines[i] = '\n';
    for (int i = 0; i < 15; ++i) o << lines;
  }
  Limits lim;
  lim.env = {{"HEADMAP_MEMORY_BUDGET", "256M"}};
  lim.timeout_s = 120;
  const CliRun r = cli({"--file", f.string(), "--random-init", "--heads", "2", "--layers", "1", "--d-model", "8"}, lim);
  EXPECT_EQ(r.status, 2) << r.err;
  EXPECT_TRUE(has(r.err, "sentences (one a line)")) << r.err;
  EXPECT_TRUE(has(r.err, "use fewer lines")) << r.err;
  fs::remove(f);
}

// --corpus (issue 39, point 4) reads a file the person names: a FIFO, a directory, bytes that
// are not UTF-8, more than 4 MiB or more than 100000 lines are refused with the reason and
// without hanging; a corpus without --corpus-head says what is missing.
TEST(HostileCli, ACorpusIsRefusedWithItsReason) {
  Limits quick;
  quick.timeout_s = 30;
  const fs::path fifo = tmp() / "corpus-pipe";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const fs::path bad = tmp() / "corpus-bad.txt", big = tmp() / "corpus-big.txt", many = tmp() / "corpus-many.txt", good = tmp() / "corpus.txt";
  std::ofstream(bad) << "the cat sat\nthe \xff\xfe dog\n";
  std::ofstream(big) << std::string((size_t(4) << 20) + 10, 'a');
  {
    std::ofstream m(many);
    for (int i = 0; i <= 100000; ++i) m << "a\n";
  }
  std::ofstream(good) << "the cat sat on the mat\nthe dog ran to the house and the dog ran to\n";
  const std::pair<fs::path, const char*> cases[] = {{fifo, "FIFO"}, {tmp(), "is a directory"}, {bad, "is not UTF-8 text"},
                                                    {big, "is larger than 4 MiB"}, {many, "more than 100000 lines"}};
  for (const auto& [path, says] : cases) {
    CliRun r = cli({"--text", "a b", "--corpus", path.string(), "--corpus-head", "1.1"}, quick);
    EXPECT_TRUE(r.status == 1 || r.status == 2) << path << " (-2 = hung): " << r.err;
    EXPECT_TRUE(has(r.err, says)) << path << ": " << r.err;
  }
  CliRun no_head = cli({"--text", "a b", "--corpus", good.string()}, quick);
  EXPECT_EQ(no_head.status, 2) << no_head.err;
  EXPECT_TRUE(has(no_head.err, "--corpus needs --corpus-head")) << no_head.err;
  EXPECT_EQ(cli({"--text", "a b", "--corpus", good.string(), "--corpus-head", "1.1", "--corpus-top", "3"}, quick).status, 0);
}
