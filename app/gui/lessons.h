// lessons.h: the chapters as guided lessons (assets/lessons/*.json). A lesson is a list of
// steps; each step is a short text, an optional answer to reveal, and the state to set, as
// the scripted settings (settings_table.h, "key=value", in order) applied on top of one
// known base state. So a step always looks the same, whatever the user did before: Next
// restores the lesson's state after the user took the controls.
//
// No GL and no Dear ImGui: the player (panels/panel_lesson.cpp) draws this state, and the
// tests and headmap-cli read the same files through the same parser.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "core/error.h"

namespace headmap {

struct AppState;

// What a lesson states about the shipped default model on the step's text, checked by a
// test (tests/app/test_lessons.cpp): head (layer, head) scores at least `min` on `metric`.
struct LessonClaim {
  int layer = 0, head = 0;
  std::string metric;  // "prev_token" (mean weight on the token before) or "induction" (the repeat's stripe)
  float min = 0;
};

struct LessonStep {
  std::string title;                  // "The split"
  std::string text;                   // what to look at, in a few sentences
  std::string question;               // the chapter's question ("" none)
  std::string reveal;                 // the answer, shown on Reveal ("" none)
  std::vector<std::string> set;       // "key=value" settings, applied in order after the base state
  std::vector<LessonClaim> claims;    // what the text claims about the model, tested
  int in_corpus = -1;                 // the step's sentence occurs in the training corpus: 1 yes, 0 no, -1 not stated
};

struct Lesson {
  std::string path;     // the file
  std::string id;       // "003": the file name's first part
  std::string chapter;  // "003, the course module"
  std::string title;
  std::vector<LessonStep> steps;
};

inline constexpr const char* kLessonFormat = "headmap-lesson-1";
inline constexpr int kMaxLessonSteps = 200;

// Parses and validates a lesson: every field and every setting (each step's settings are
// applied to a scratch state, so a wrong key or value is found here, not in class).
// Messages name the file, the step (1-based) and the field. (Fuzzed: tests/fuzz.)
Result<Lesson> parse_lesson(const std::string& text, const std::string& path);
Result<Lesson> load_lesson(const std::string& path);

// The shipped lessons' files (assets/lessons/*.json), sorted by name.
std::vector<std::string> lesson_files();
// "003" (or "3") -> the shipped file whose name starts with it; a path to a .json file is
// taken as it is. An error lists the shipped lessons.
Result<std::string> find_lesson(const std::string& name);

// The base state every step starts from: the shipped default model at its own size (when
// s.shipped lists it), the default sentence, trained weights, no pitfall, no ablation, the
// first layer, head and sentence, the Heads panel, per-head colours. The user's colormap
// and text size are kept. A checkpoint or GPT-2 model the user opened is set aside.
void reset_to_lesson_base(AppState& s);

// Opens a lesson in the player at its first step (or `step`, 0-based).
Status open_lesson(AppState& s, std::shared_ptr<const Lesson> lesson, int step = 0);
// Shows step `step` (0-based) of the open lesson: the base state, then its settings.
Status go_to_lesson_step(AppState& s, int step);
void close_lesson(AppState& s);
// The user moved a control since the step was applied (the player says Next restores it).
bool lesson_controls_taken(const AppState& s);

// The step's honest-example line, as the player and the slides show it: whether its sentence
// is in the training text ("in_corpus"), and each claim with its metric and threshold.
// "" when the step states neither.
std::string lesson_note(const LessonStep& st);

// Appends the current state as a new step to the lesson file at `path` (created when
// missing), as the settings that reach it from the base state. Written atomically.
Status append_lesson_step(const std::string& path, const AppState& s, const std::string& title);

// The settings that take the base state to s (the inverse of go_to_lesson_step), for
// File > Save view as lesson step.
std::vector<std::string> lesson_settings_of(const AppState& s);

}  // namespace headmap
