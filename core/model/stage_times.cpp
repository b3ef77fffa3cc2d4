// stage_times.cpp: the per-stage table and the page-fault counter (stage_times.h).
#include "core/model/stage_times.h"

#include <sys/resource.h>

#include <algorithm>

#include <cstdio>

namespace headmap {

int64_t minor_faults_now() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_minflt;
}

std::string StageTimes::table(double total_ms) const {
  const double n = std::max<int64_t>(passes.load(), 1);
  const double heads_wall = ms(Stage::HeadsWall);
  double per_head_ts = 0;  // thread seconds of the per-head stages, shown as shares of the region's wall time
  for (Stage s : {Stage::Scores, Stage::Softmax, Stage::WeightsV}) per_head_ts += ms(s);
  std::string out;
  char line[160];
  std::snprintf(line, sizeof line, "%-26s %10s %7s %12s\n", "stage (per pass)", "ms", "share", "page faults");
  out += line;
  double accounted = 0;
  for (int i = 0; i < static_cast<int>(Stage::kCount); ++i) {
    const Stage s = static_cast<Stage>(i);
    const bool per_head = s == Stage::Scores || s == Stage::Softmax || s == Stage::WeightsV;
    double v = ms(s);
    if (per_head) v = per_head_ts > 0 ? heads_wall * v / per_head_ts : 0;  // its share of the region's wall time
    else accounted += v;
    if (v <= 0 && faults[i].load() == 0) continue;
    std::snprintf(line, sizeof line, "%-26s %10.3f %6.1f%% %12.0f\n", stage_name(s), v / n, total_ms > 0 ? 100.0 * v / total_ms : 0.0,
                  faults[i].load() / n);
    out += line;
  }
  if (total_ms > accounted) {
    std::snprintf(line, sizeof line, "%-26s %10.3f %6.1f%%\n", "other", (total_ms - accounted) / n, 100.0 * (total_ms - accounted) / total_ms);
    out += line;
  }
  std::snprintf(line, sizeof line, "%-26s %10.3f  (%d passes; per-head stages are shares of the heads' wall time)\n", "total", total_ms / n,
                static_cast<int>(n));
  out += line;
  return out;
}

}  // namespace headmap
