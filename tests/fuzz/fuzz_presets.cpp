// fuzz_presets.cpp: the presets file (app/gui/presets.h parse_presets): never empty.
#include <cstdint>
#include <string>

#include "app/gui/presets.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string error;
  const headmap::Presets p = headmap::parse_presets(std::string(reinterpret_cast<const char*>(data), size), "fuzz.json", &error);
  if (p.items.empty()) __builtin_trap();
  return 0;
}
