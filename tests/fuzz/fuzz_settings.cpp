// fuzz_settings.cpp: the preferences file (app/gui/settings.h parse_preferences). Accepted
// values must lie in their documented ranges.
#include <cstdint>
#include <string>

#include "app/gui/settings.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  headmap::Result<headmap::Preferences> p = headmap::parse_preferences(std::string(reinterpret_cast<const char*>(data), size));
  if (p && (p->font_scale < 0.5f || p->font_scale > 4.0f || p->window_w < 640 || p->window_w > 8192 || p->window_h < 480 || p->window_h > 8192))
    __builtin_trap();
  return 0;
}
