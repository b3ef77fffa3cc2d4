// headmap: type a sentence and see every attention head, live.
//
// headmap [model options] [--open view.json | view.json] [--lesson 003] [--panel heads|focus|passport|model]
//         [--screenshot out.png [--frames N] [--report out.json] [--then key=value]... [--type TEXT]]
//         [--benchmark] [--soak N] [--fullscreen] [--size WxH] [--font-scale X]
// Exit status: 0 success, 1 a file or the display failed, 2 bad arguments.
#include <imgui.h>
#include <imgui_impl_glfw.h>
#include <imgui_impl_opengl3.h>

#include "app/gui/render/gl.h"
#include <GLFW/glfw3.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <algorithm>
#include <tuple>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>
#include <thread>

#include "app/common/print_message.h"
#include "app/gui/app.h"
#include "app/gui/commands.h"
#include "app/gui/frame_hooks.h"
#include "app/gui/key_taps.h"
// LeakSanitizer (ASan builds): the system's GL driver keeps a few hundred bytes for the
// life of the process, referenced from its own globals, and is unloaded at exit before
// the leak check, which then sees them unreferenced (240 bytes from an "unknown module").
// Once the window exists, every library loaded so far is pinned (RTLD_NODELETE): the
// driver's memory stays referenced, and nothing is suppressed.
#if defined(__SANITIZE_ADDRESS__)
#define HEADMAP_LSAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define HEADMAP_LSAN 1
#endif
#endif
#ifdef HEADMAP_LSAN
#include <dlfcn.h>
#include <link.h>
static void pin_loaded_libraries() {
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void*) {
        if (info->dlpi_name && info->dlpi_name[0]) dlopen(info->dlpi_name, RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE);
        return 0;
      },
      nullptr);
}
#endif
#include "app/gui/theme.h"
#include "app/common/assets.h"
#include "app/common/model_options.h"
#include "app/script/crawl.h"
#include "app/script/input.h"
#include "app/script/script.h"
#include "app/script/soak.h"
#include "app/script/settings_table.h"

using namespace headmap;

// Software GL (Mesa's llvmpipe: virtual machines, remote sessions, computers without a GPU
// driver) rasterises on one thread per core by default. On small machines headmap asks for
// two per core unless LP_NUM_THREADS is set: the rasteriser then keeps its share of the cores
// against the X server and the model's threads, and frames at 1600x1000 on two cores fell
// from ~16 to ~12.5 ms p50 (tests/bench/README.md). GPU drivers ignore the variable.
static void prefer_more_rasteriser_threads() {
  const unsigned cores = std::thread::hardware_concurrency();
  if (cores == 0 || cores > 4 || std::getenv("LP_NUM_THREADS")) return;  // measured on 2 cores only
  setenv("LP_NUM_THREADS", std::to_string(2 * cores).c_str(), 0);
}

static void glfw_error(int code, const char* what) { std::fprintf(stderr, "headmap: GLFW error %d: %s\n", code, what); }

int main(int argc, char** argv) {
  const auto process_start = std::chrono::steady_clock::now();
  CLI::App cli{"headmap: type a sentence and see what every attention head does"};
  cli.set_version_flag("--version", [] { return version_text("headmap"); }, "print the version and the data directory in use, and exit");
  ModelOptions mo;
  add_model_options(cli, mo);
  std::string open_view, panel, size = "";
  ScreenshotOptions shot;
  bool benchmark = false, fullscreen = false;
  std::string colormap;
  cli.add_option("--open", open_view, "open a view file (text, config, selection, colours)");
  std::string view_arg;  // the desktop entry's %f: a double-clicked view file
  cli.add_option("view", view_arg, "a view file to open, as with --open");
  std::string lesson;
  cli.add_option("--lesson", lesson, "open a lesson in the player: 000 to 004 (the chapters, Help > Lessons) or a lesson file");
  cli.add_option("--panel", panel, "heads, focus, model, passport, training or compare")
      ->check(CLI::IsMember({"heads", "focus", "passport", "model", "training", "compare"}));
  cli.add_option("--screenshot", shot.path, "render, write this PNG, and exit");
  cli.add_option("--frames", shot.frames, "frames to render before the screenshot, once the model has answered")->capture_default_str();
  cli.add_option("--report", shot.report, "with --screenshot: write what was drawn as JSON (for tests)");
  cli.add_option("--then", shot.then, "with --screenshot: after the first result, apply key=value as the controls would "
                 "(repeatable; \"wait\" waits for the result before the next ones; \"report=PATH\" writes the --report JSON of that moment; \"press=PageDown\" presses a key). Keys:\n" + scripted_settings_help());
  cli.add_option("--type", shot.type, "with --screenshot: type this into the emptied sentence box, one character per frame");
  cli.add_option("--input", shot.input, "with --screenshot: after the --then settings, a person's input through the real widgets, "
                 "steps separated by ';' (or @FILE, one a line): click LABEL, rclick LABEL, dclick LABEL, hover LABEL, scroll N LABEL, "
                 "key COMBO (ctrl+o, enter, escape, right), type TEXT, wait, frames N, expect LABEL, absent LABEL, timeout S; "
                 "LABEL as drawn (--report lists \"widgets\") or @X,Y (repeatable)");
  std::string mouse, corpus;
  cli.add_option("--corpus", corpus, "the text the Training tab trains on (default: the shipped corpus in assets/corpus)");
  cli.add_option("--mouse", mouse, "with --screenshot: rest the mouse at X,Y (window pixels), e.g. to show a tooltip");
  cli.add_flag("--right-click", shot.right_click, "with --screenshot and --mouse: after the --then settings, right-click where the mouse "
               "rests (on a head's map: switch it off) and wait for the result");
  cli.add_option("--colormap", colormap, "viridis, magma, cividis or grey")->check(CLI::IsMember({"viridis", "magma", "cividis", "grey", "gray"}));
  bool int8_products = false;
  cli.add_flag("--int8-products", int8_products, "start with View > 8-bit products on: a GGUF file's Q4_K, Q5_K, Q6_K and Q8_0 "
               "weights multiplied as llama.cpp does (activations rounded to 8 bits; faster, approximate, labelled above the heads)");
  cli.add_flag("--benchmark", benchmark, "play a scripted session and print latency and frame-time figures as JSON");
  bool crawl = false;
  cli.add_flag("--crawl", crawl, "a test: use every widget the frames draw (click, drag, type, open and pick), press every shortcut, "
               "and check after each action; --then settings set the state up first; exit 1 at the first failure (app/script/crawl.h)");
  bool crawl_primary = false;
  cli.add_flag("--crawl-primary", crawl_primary, "with --crawl: each widget's primary action only (a slider dragged past both ends, "
               "a text field given 500 mixed characters; then its first value back)");
  std::string crawl_record, crawl_skip;
  cli.add_option("--crawl-record", crawl_record, "with --crawl: write the widgets used (a label in a window, one a line) to FILE");
  cli.add_option("--crawl-skip", crawl_skip, "with --crawl: leave alone the widgets FILE lists (another window size's --crawl-record) "
                 "where they show in view at once; tabs, and what this layout moved or scrolled away, are used all the same");
  SoakOptions soak;
  soak.frames = 0;
  cli.add_option("--soak", soak.frames, "play N frames of random use (typing, sliders, pitfalls, ablation, layers), print resident "
                 "memory and GL errors as JSON; exit 1 on a GL error or too much growth")->check(CLI::Range(1, 100000000));
  cli.add_option("--soak-seed", soak.seed, "with --soak: the random actions' seed")->capture_default_str();
  cli.add_option("--soak-max-growth", soak.max_growth_mib, "with --soak: the allowed growth of resident memory after warm-up, MiB")->capture_default_str();
  cli.add_option("--deadline", shot.deadline_s, "with --screenshot: give up (exit 1) after this many seconds")->capture_default_str()->check(CLI::Range(1.0, 86400.0));
  cli.add_flag("--fullscreen", fullscreen, "start full screen (F11 toggles)");
  cli.add_option("--size", size, "window size, e.g. 1024x768 (never larger than the screen's work area)");
  float font_scale = 0;
  cli.add_option("--font-scale", font_scale, "text size, e.g. 1.5 for a projector (Ctrl +/- change it; also in scripted runs)")
      ->check(CLI::Range(kFontScaleMin, kFontScaleMax));
  try {
    cli.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return cli.exit(e) == 0 ? 0 : 2;
  }
  if (open_view.empty()) open_view = view_arg;
  if (!shot.input.empty()) {  // bad steps are bad arguments, before any window opens
    if (shot.path.empty()) {
      std::fprintf(stderr, "headmap: --input needs --screenshot (it drives a scripted run).\n");
      return 2;
    }
    if (Result<std::vector<InputStep>> steps = parse_input_steps(shot.input); !steps) {
      print_message("headmap", steps.error().message);
      return 2;
    }
  }

  // The initial state: command-line model options over the defaults, or a view file.
  // What headmap-cli refuses (a --file too large or unreadable, a --model or --checkpoint
  // that does not load, and here a view file) is refused with the same text, in the window
  // as well as on the terminal, and the state is the one without it. A scripted run then
  // exits 1, once its screenshot and report are written.
  std::vector<std::string> problems;
  Result<ModelInput> in = resolve_model_options(mo, true);
  if (!in && (in.error().kind == ErrorKind::Io || in.error().kind == ErrorKind::BadFormat)) {  // the --file's
    problems.push_back(in.error().message);
    ModelOptions without_file = mo;
    without_file.file.clear();
    in = resolve_model_options(without_file, true);
  }
  if (!mouse.empty() && std::sscanf(mouse.c_str(), "%f,%f", &shot.mouse_x, &shot.mouse_y) != 2) {
    std::fprintf(stderr, "headmap: --mouse wants X,Y, e.g. 700,300\n");
    return 2;
  }
  std::string pref_warning;
  Preferences prefs = load_preferences(&pref_warning);
  if (!size.empty() && std::sscanf(size.c_str(), "%dx%d", &prefs.window_w, &prefs.window_h) != 2) {
    std::fprintf(stderr, "headmap: --size wants WIDTHxHEIGHT, e.g. 1600x1000\n");
    return 2;
  }
  const bool scripted = !shot.path.empty() || benchmark || soak.frames > 0 || crawl;
  if (scripted) {  // reproducible pictures: saved preferences neither apply nor change
    const int w = prefs.window_w, h = prefs.window_h;
    prefs = Preferences();
    if (!size.empty()) prefs.window_w = w, prefs.window_h = h;
    if (const char* stall = std::getenv("HEADMAP_TEST_STALL_LOAD_S"))  // a read that hangs, for the F9 test (model_loader.h)
      ModelLoader::stall_reads_for_tests(std::atof(stall));
  }
  if (font_scale > 0) prefs.font_scale = font_scale;
  if (prefs.window_w < 200 || prefs.window_h < 150) {
    std::fprintf(stderr, "headmap: --size %dx%d is too small: the window needs at least 200x150\n", prefs.window_w, prefs.window_h);
    return 2;
  }

  prefer_more_rasteriser_threads();
  glfwSetErrorCallback(glfw_error);
  if (!glfwInit()) {
    std::fprintf(stderr, "headmap: cannot open a window (no display?). Run it under a desktop session, or under\n"
                         "  xvfb-run -a -s \"-screen 0 1600x1000x24\" headmap --screenshot out.png\n");
    return 1;
  }
  glfwWindowHint(GLFW_CONTEXT_VERSION_MAJOR, 3);
  glfwWindowHint(GLFW_CONTEXT_VERSION_MINOR, 3);
  glfwWindowHint(GLFW_OPENGL_PROFILE, GLFW_OPENGL_CORE_PROFILE);
  // The window fits the monitor's work area (a 1024x768 projector gets a window that fits),
  // and the monitor's content scale (HiDPI) scales the text and the default size.
  float content_scale = 1.0f;
  std::string fit_note;
  if (GLFWmonitor* monitor = glfwGetPrimaryMonitor()) {
    float sx = 1, sy = 1;
    glfwGetMonitorContentScale(monitor, &sx, &sy);
    if (std::isfinite(sx) && sx >= 0.5f && sx <= 4.0f) content_scale = sx;
    if (size.empty() && content_scale != 1.0f)
      prefs.window_w = static_cast<int>(prefs.window_w * content_scale), prefs.window_h = static_cast<int>(prefs.window_h * content_scale);
    int wx = 0, wy = 0, ww = 0, wh = 0;
    glfwGetMonitorWorkarea(monitor, &wx, &wy, &ww, &wh);
    if (ww > 0 && wh > 0 && (prefs.window_w > ww || prefs.window_h > wh)) {
      fit_note = "The window was made " + std::to_string(std::min(prefs.window_w, ww)) + "\xC3\x97" +
                 std::to_string(std::min(prefs.window_h, wh)) + " to fit the screen's work area (asked " +
                 std::to_string(prefs.window_w) + "\xC3\x97" + std::to_string(prefs.window_h) + ").";
      prefs.window_w = std::min(prefs.window_w, ww);
      prefs.window_h = std::min(prefs.window_h, wh);
    }
  }
  GLFWwindow* window = glfwCreateWindow(prefs.window_w, prefs.window_h, "headmap", nullptr, nullptr);
  if (!window) {
    std::fprintf(stderr, "headmap: cannot create an OpenGL 3.3 window.\n");
    glfwTerminate();
    return 1;
  }
  glfwMakeContextCurrent(window);
  glfwSwapInterval(1);

  IMGUI_CHECKVERSION();
  ImGui::CreateContext();
  ImGuiIO& io = ImGui::GetIO();
  io.IniFilename = nullptr;  // saved by hand, atomically, in the XDG config dir
  ImGui_ImplGlfw_InitForOpenGL(window, true);
  // Dear ImGui's key callback; a tap shorter than a frame keeps its release for the next frame (key_taps.h).
  static_assert(KeyTaps::kPress == GLFW_PRESS && KeyTaps::kRelease == GLFW_RELEASE, "KeyTaps reads GLFW's actions");
  glfwSetKeyCallback(window, [](GLFWwindow* w, int key, int scancode, int action, int mods) {
    if (key_taps().on_key({key, scancode, action, mods})) ImGui_ImplGlfw_KeyCallback(w, key, scancode, action, mods);
  });
  ImGui_ImplOpenGL3_Init("#version 330 core");
#ifdef HEADMAP_LSAN
  pin_loaded_libraries();
#endif

  std::string presets_warning;
  Presets presets = load_presets(asset_path("presets.json"), &presets_warning);
  int code = 0;
  {
    App app(window, prefs, std::move(presets));
    app.persist = !scripted;
    if (Status s = app.init(); !s) {
      print_message("headmap", s.error().message);
      code = 1;
    } else {
      AppState& st = app.state;
      st.content_scale = content_scale;
      if (!fit_note.empty()) st.status_lines.push_back(fit_note);
      if (in) {
        st.cfg = in->cfg;
        std::string text;
        for (const std::string& l : in->lines) text += (text.empty() ? "" : "\n") + l;
        st.text = text;
      } else {  // an invalid pair from the command line is shown, with its message
        st.cfg = mo.cfg;
        parse_tokenizer(mo.tokenizer, &st.cfg.tokenizer);
        st.text = mo.texts.empty() ? std::string(kDefaultSentence) : mo.texts[0];
      }
      st.shipped = scan_checkpoints(asset_path("checkpoints"));
      {
        std::error_code ec;
        std::vector<std::string> corpora;
        for (const auto& e : std::filesystem::directory_iterator(asset_path("corpus"), ec))
          if (e.path().extension() == ".txt" && e.path().filename().string().rfind("LICENSE", 0) != 0)  // not the licence notices
            corpora.push_back(e.path().string());
        std::sort(corpora.begin(), corpora.end());
        if (!corpora.empty()) st.corpus_path = corpora.front();
        if (!corpus.empty()) st.corpus_path = corpus;
      }
      // The sliders start on the model that opens: a --model directory or a --checkpoint, else
      // the shipped default, at its own D, H, L and context (options given on the command line win).
      std::optional<CheckpointInfo> opening;
      if (mo.random_init) {
        st.weights_mode = WeightsMode::Random;
      } else if (!mo.model.empty() || !mo.checkpoint.empty()) {  // either names a path; the one dispatcher decides what it is
        if (Status s = open_model(st, mo.model.empty() ? mo.checkpoint : mo.model); !s) problems.push_back(s.error().message);  // as headmap-cli says it; the shipped model stays
        else if (!st.pretrained) opening = st.checkpoint_info;  // a checkpoint: its own D, H, L, context, with a message
      }
      if (!mo.random_init && !st.pretrained && !opening) {  // the shipped default, also when the named weights did not load
        const std::string name = std::filesystem::path(kDefaultCheckpoint).filename().string();
        for (const CheckpointInfo& k : st.shipped)
          if (std::filesystem::path(k.path).filename() == name) opening = k;
      }
      if (opening) {  // options given on the command line win over the model's own
        const ModelConfig given = in ? in->cfg : mo.cfg;
        ModelConfig own = st.cfg;  // the one config from weights (config_for_weights), at the file's own context
        own.context = kMaxContext;
        if (opening->weights) own = config_for_weights(*opening->weights, own);
        else std::tie(own.d_model, own.num_heads, own.num_layers, own.context) = std::tie(opening->d_model, opening->num_heads, opening->num_layers, opening->context);
        st.cfg.d_model = cli.count("--d-model") ? given.d_model : own.d_model;
        st.cfg.num_heads = cli.count("--heads") ? given.num_heads : own.num_heads;
        st.cfg.num_layers = cli.count("--layers") ? given.num_layers : own.num_layers;
        st.cfg.context = cli.count("--context") ? given.context : own.context;
        st.cfg.num_kv_heads = given.num_kv_heads;
        st.cfg.pitfalls.no_w_o = opening->no_w_o || given.pitfalls.no_w_o;
      }
      if (!open_view.empty())
        if (Status s = load_view(open_view, st); !s) problems.push_back(s.error().message);
      if (!problems.empty()) {
        std::string all;
        for (const std::string& p : problems) {
          print_message("headmap", p);
          all += (all.empty() ? "" : "\n\n") + p;
        }
        st.error_popup = all;  // the "Problem" box, over the window that opened without it
      }
      if (!panel.empty()) parse_center_panel(panel, &st.view.center);
      if (!colormap.empty()) parse_colormap(colormap.c_str(), &st.view.colormap);
      st.view.int8_products = st.view.int8_products || int8_products;
      if (!lesson.empty()) {  // a bad name or file: its message in the window and here; the app opens without it
        Result<std::string> path = find_lesson(lesson);
        Result<Lesson> l = path ? load_lesson(*path) : Result<Lesson>(path.error());
        Status ls = l ? open_lesson(st, std::make_shared<const Lesson>(std::move(l).value())) : Status(l.error());
        if (!ls) {  // a screenshot run draws the window with its Problem box, then exits 1
          print_message("headmap", ls.error().message);
          st.error_popup = ls.error().message;
          problems.push_back(ls.error().message);
        }
      }
      if (!pref_warning.empty()) st.status_lines.push_back(pref_warning);
      if (!presets_warning.empty()) st.status_lines.push_back(presets_warning);
      if (fullscreen) app.toggle_fullscreen();  // the monitor's own mode: never larger than the screen
      FrameRecorder recorder;  // a scripted run observes what each frame submitted (frame_hooks.h)
      if (!shot.path.empty()) app.script = make_screenshot_script(shot), recorder.map_values = true;
      else if (crawl) app.script = make_crawl_script({shot.then, cli.count("--deadline") ? shot.deadline_s : 300.0, crawl_primary, crawl_record, crawl_skip});
      else if (benchmark) app.script = make_benchmark_script(process_start);
      else if (soak.frames > 0) app.script = make_soak_script(soak);
      if (app.script) install_frame_recorder(&recorder);
      if (code == 0) {
        // A person's window sleeps once nothing on it changes with time. What does (the newest
        // status note, 8 s; the passport's glow, 4 s; a tooltip's delay; the caret's blink)
        // follows an event, so for kQuietAfter after the last event the loop draws 4 frames a
        // second; then the caret stops blinking (drawn steady once) and the loop waits for the
        // next event. (An idle window drew 4 frames a second for ever: ~10 % of a core under
        // llvmpipe at 1600 x 1000, measured 2026-11-28.) Events: input, and the wake-ups of the
        // worker, the trainer and the corpus search (glfwPostEmptyEvent).
        using IdleClock = std::chrono::steady_clock;
        constexpr auto kQuietAfter = std::chrono::seconds(10);
        IdleClock::time_point last_event = IdleClock::now();
        bool quiet_drawn = false;
        while (!app.should_close()) {
          // Idle: sleep until an event (input, or the worker's wake-up). Busy: keep drawing.
          if (app.script) {
            const double w = app.script->wait_seconds(app);
            if (w > 0) glfwWaitEventsTimeout(w);
            else glfwPollEvents();
          } else if (ImGui::IsAnyMouseDown()) {
            glfwPollEvents();
            last_event = IdleClock::now();
          } else if (!app.animating() && quiet_drawn) {
            glfwWaitEvents();  // returns on an event only
            last_event = IdleClock::now();
          } else {
            const double timeout = app.animating() ? 0.05 : 0.25;
            const IdleClock::time_point t0 = IdleClock::now();
            glfwWaitEventsTimeout(timeout);  // the worker's result wakes us at once
            if (IdleClock::now() - t0 < std::chrono::duration<double>(timeout * 0.9)) last_event = IdleClock::now();
          }
          if (!app.script) {
            const bool quiet = IdleClock::now() - last_event > kQuietAfter && !app.animating();
            ImGui::GetIO().ConfigInputTextCursorBlink = !quiet;
            quiet_drawn = quiet;  // this frame is drawn quiet (a steady caret); the next wait is for an event
          }
          if (glfwGetWindowAttrib(window, GLFW_ICONIFIED)) {
            glfwWaitEventsTimeout(0.1);
            continue;
          }
          app.frame();
        }
        if (app.script) code = app.script->exit_code;
        if (code == 0 && scripted && !problems.empty()) code = 1;  // what was refused, for scripts: after the screenshot
        if (app.script && app.loading()) {  // gave up (--deadline) while a model is read: never wait on the read (issue 35, F9)
          std::fprintf(stderr, "headmap: leaving while a model is still being read.\n");
          std::fflush(nullptr);
          std::_Exit(code == 0 ? 1 : code);
        }
      }
    }
  }
  ImGui_ImplOpenGL3_Shutdown();
  ImGui_ImplGlfw_Shutdown();
  ImGui::DestroyContext();
  glfwDestroyWindow(window);
  glfwTerminate();
  return code;
}
