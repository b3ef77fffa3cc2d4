// gui_harness.h: how a GUI test runs the real app (under Xvfb, by ctest) and reads what it
// drew: its --report and screenshot. Shared by the GUI test files (test_gui.cpp, ...).
#pragma once
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

fs::path tmp_dir() {
  static fs::path d = [] {
    fs::path p = fs::temp_directory_path() / ("headmap-gui-" + std::to_string(::getpid()));
    fs::create_directories(p / "xdg");
    return p;
  }();
  return d;
}

struct AppRun {
  int status = -1;
  std::string err;
  json report;
  fs::path png;
};

// The working directory the app runs in, as a person's shell would be: a temporary one,
// so that relative names land there. Tests that check files make their own (fresh_dir).
fs::path work_dir() {
  static fs::path d = [] {
    fs::path p = tmp_dir() / "cwd";
    fs::create_directories(p);
    return p;
  }();
  return d;
}

fs::path fresh_dir(const std::string& name) {
  const fs::path p = tmp_dir() / name;
  fs::remove_all(p);
  fs::create_directories(p);
  return p;
}

// Runs headmap with these arguments, in `cwd` (default work_dir()); the screenshot and
// report go to the temp dir.
// env: variables to set for the app.
AppRun run_app(const std::string& name, std::vector<std::string> args, bool with_report = true, const fs::path& cwd = {},
               const std::vector<std::pair<std::string, std::string>>& env = {}) {
  AppRun r;
  r.png = tmp_dir() / (name + ".png");
  const fs::path rep = tmp_dir() / (name + ".report.json"), err = tmp_dir() / (name + ".err");
  fs::remove(r.png);
  fs::remove(rep);
  // $HEADMAP_TEST_APP: another build of the app (an old one, to see a new test fail on it).
  const char* app = std::getenv("HEADMAP_TEST_APP");
  std::vector<std::string> argv = {app && *app ? app : HEADMAP_APP, "--screenshot", r.png.string()};
  if (with_report) argv.insert(argv.end(), {"--report", rep.string()});
  argv.insert(argv.end(), args.begin(), args.end());
  const pid_t pid = fork();
  if (pid == 0) {
    setenv("XDG_CONFIG_HOME", (tmp_dir() / "xdg").c_str(), 1);  // never the user's settings
    if (chdir((cwd.empty() ? work_dir() : cwd).c_str()) != 0) _exit(125);
    for (const auto& [k, v] : env) setenv(k.c_str(), v.c_str(), 1);
    if (!freopen(err.c_str(), "w", stderr) || !freopen("/dev/null", "w", stdout)) _exit(126);
    std::vector<char*> cargv;
    for (std::string& a : argv) cargv.push_back(a.data());
    cargv.push_back(nullptr);
    execv(cargv[0], cargv.data());
    _exit(127);
  }
  int st = 0;
  waitpid(pid, &st, 0);
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  std::ifstream ef(err);
  r.err.assign(std::istreambuf_iterator<char>(ef), {});
  std::ifstream rf(rep);
  if (rf) r.report = json::parse(rf, nullptr, false);
  return r;
}

// A JSON file the app or the CLI wrote, or null when it is missing or not JSON.
inline json read_json(const fs::path& p) {
  std::ifstream f(p);
  return f ? json::parse(f, nullptr, false) : json();
}

// Does any message the window showed contain `part`?
bool has_message(const json& report, const std::string& part) {
  for (const auto& m : report["messages"])
    if (m.get<std::string>().find(part) != std::string::npos) return true;
  return false;
}

}  // namespace
