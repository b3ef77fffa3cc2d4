// capture.h: reading the framebuffer back into a PNG (screenshots, exports).
#pragma once
#include <string>

#include "core/error.h"

namespace headmap {

// Reads [x, y, w, h) of the back buffer (window pixels, y down) and writes a PNG atomically.
Status capture_png(const std::string& path, int x, int y, int w, int h, int fb_height);

}  // namespace headmap
