// fuzz_lesson.cpp: lesson files (app/gui/lessons.h parse_lesson). Any bytes: a lesson or a
// message naming the file, never a crash; a lesson that parses opens in the player and each
// of its steps is reached (its settings were checked when it was read), and no step asks to
// write or read a file, open a model or start work (issue 35: a lesson is data).
#include <cstdint>
#include <memory>
#include <string>

#include "app/gui/app_state.h"
#include "app/gui/lessons.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  headmap::Result<headmap::Lesson> l = headmap::parse_lesson(std::string(reinterpret_cast<const char*>(data), size), "fuzz.json");
  if (!l) {
    if (l.error().message.find("fuzz.json") == std::string::npos) __builtin_trap();  // a message names the file
    return 0;
  }
  headmap::AppState s;
  const auto lesson = std::make_shared<const headmap::Lesson>(std::move(l).value());
  if (!headmap::open_lesson(s, lesson)) __builtin_trap();
  for (int i = 0; i < static_cast<int>(lesson->steps.size()); ++i) {
    if (!headmap::go_to_lesson_step(s, i)) __builtin_trap();  // validated when read: every step is reachable
    if (s.dialog_request || !s.open_model_request.empty() || !s.compare_b.load_request.empty() || s.train_request || !s.lesson.export_request.empty())
      __builtin_trap();
  }
  return 0;
}
