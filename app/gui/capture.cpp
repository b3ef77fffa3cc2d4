#include "app/gui/capture.h"

#include <algorithm>
#include <vector>

#include "app/gui/render/gl.h"
#include "app/common/raster.h"

namespace headmap {

Status capture_png(const std::string& path, int x, int y, int w, int h, int fb_height) {
  if (w <= 0 || h <= 0) return Error{ErrorKind::InvalidArgument, "Nothing to capture: the area is empty."};
  std::vector<unsigned char> px(static_cast<size_t>(w) * h * 3);
  glPixelStorei(GL_PACK_ALIGNMENT, 1);
  glReadBuffer(GL_BACK);
  glReadPixels(x, fb_height - y - h, w, h, GL_RGB, GL_UNSIGNED_BYTE, px.data());
  // GL rows run bottom-up; PNG rows top-down.
  std::vector<unsigned char> flipped(px.size());
  for (int r = 0; r < h; ++r) std::copy_n(&px[static_cast<size_t>(h - 1 - r) * w * 3], static_cast<size_t>(w) * 3, &flipped[static_cast<size_t>(r) * w * 3]);
  return write_png(path, w, h, flipped.data());
}

}  // namespace headmap
