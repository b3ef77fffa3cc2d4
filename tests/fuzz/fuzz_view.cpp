// fuzz_view.cpp: view files (app/gui/settings.h parse_view). Any bytes: a message or a
// state change, never a crash; on a refusal the state is untouched; a model path the view
// names is asked about, never opened or read by the parse (issue 35).
#include <cstdint>
#include <string>

#include "app/gui/settings.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  headmap::AppState s;
  const headmap::AppState before = s;
  const headmap::Status st = headmap::parse_view(std::string(reinterpret_cast<const char*>(data), size), "fuzz.json", s);
  if (!st && !(s.cfg == before.cfg && s.text == before.text && s.ablated == before.ablated && s.selected_token == before.selected_token))
    __builtin_trap();  // a refusal must leave the state as it was
  if (s.pretrained || !s.checkpoint.empty() || !s.open_model_request.empty()) __builtin_trap();  // asked first, never opened
  return 0;
}
