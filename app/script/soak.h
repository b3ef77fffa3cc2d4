// soak.h: the scripted soak test of the real UI (`headmap --soak N`, see soak.cpp).
#pragma once
#include <cstdint>
#include <memory>

#include "app/gui/app.h"

namespace headmap {

struct SoakOptions {
  int frames = 10000;           // frames of random use
  uint64_t seed = 1;            // the random actions' seed: a soak is reproducible
  double max_growth_mib = 64;   // resident memory may grow this much after warm-up
};
std::unique_ptr<Script> make_soak_script(SoakOptions o);

}  // namespace headmap
