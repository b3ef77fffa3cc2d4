// bench_colour.cpp: the app's CPU colouring (app/common/map_colour.h), which takes the frame
// that shows a new result: `maps` maps of side x side texels, each coloured into RGBA8 as the
// renderer's flush() does (one call per map), best and median of `reps` rounds. Cases: a
// causal map on viridis (the heads grid), the same with the log scale, with a pair filter
// dimming cells, and a diverging map (Focus). Prints one JSON line per case (ms per round,
// ns per texel).
//
//   headmap-bench-colour [maps=128] [side=64] [reps=30]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "app/common/map_colour.h"

int main(int argc, char** argv) {
  using namespace headmap;
  const int maps = argc > 1 ? std::atoi(argv[1]) : 128, side = argc > 2 ? std::atoi(argv[2]) : 64, reps = argc > 3 ? std::atoi(argv[3]) : 30;
  if (maps < 1 || side < 1 || reps < 1) {
    std::fprintf(stderr, "usage: headmap-bench-colour [maps >= 1] [side >= 1] [reps >= 1]\n");
    return 2;
  }
  // Softmax-like rows: weights in [0, 1] summing to about 1 over the visible keys.
  std::vector<float> w(static_cast<size_t>(maps) * side * side);
  uint32_t x = 12345;
  for (float& v : w) {
    x = x * 1664525u + 1013904223u;
    v = static_cast<float>(x >> 8) / static_cast<float>(1 << 24) * 2.0f / side;
  }
  std::vector<uint8_t> out(static_cast<size_t>(side) * side * 4);
  struct Case {
    const char* name;
    MapColouring c;
  };
  std::vector<Case> cases(4);
  for (Case& k : cases) k.c.mask = MaskKind::Causal, k.c.len = side, k.c.vmax = 0.5f;
  cases[0].name = "causal viridis";
  cases[1].name = "causal viridis, log scale";
  cases[1].c.log_scale = true;
  cases[2].name = "causal viridis, pair filter";
  cases[2].c.filter.row0 = side / 2;
  cases[3].name = "diverging, no mask";
  cases[3].c.diverging = true, cases[3].c.mask = MaskKind::None, cases[3].c.vmin = -0.5f;
  const TexelGrid grid{side, side, 1, 0, 0};
  for (const Case& k : cases) {
    std::vector<double> ms;
    unsigned sum = 0;
    for (int r = 0; r < reps; ++r) {
      const auto t0 = std::chrono::steady_clock::now();
      for (int m = 0; m < maps; ++m) {
        colour_texels(out.data(), w.data() + static_cast<size_t>(m) * side * side, side, side, side, grid, k.c);
        sum += out[static_cast<size_t>(m % side) * 4];
      }
      ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    }
    std::sort(ms.begin(), ms.end());
    const double texels = static_cast<double>(maps) * side * side;
    std::printf("{\"case\": \"%s\", \"maps\": %d, \"side\": %d, \"best_ms\": %.3f, \"median_ms\": %.3f, \"ns_per_texel\": %.2f, \"check\": %u}\n", k.name, maps,
                side, ms.front(), ms[ms.size() / 2], ms[ms.size() / 2] * 1e6 / texels, sum);
  }
  return 0;
}
