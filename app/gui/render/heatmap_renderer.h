// heatmap_renderer.h: draws float maps coloured by the project's GLSL (shaders/heatmap.*)
// inside Dear ImGui windows. GL work happens on the main thread only.
//
// Each map is uploaded once as an R32F texture (one texel per cell; very long sequences
// are max-pooled so peaks survive). The shader colours it into an RGBA texture of the same
// size, once per colour scale: changing the colormap, the normalisation or the log scale
// costs one tiny render, and a frame that changes nothing draws a textured quad per map.
// Token grid lines and the hovered token's row and column are drawn on top by Dear ImGui.
#pragma once
#include <imgui.h>

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <tuple>

#include "app/common/colormap.h"
#include "app/gui/render/gl.h"
#include "core/error.h"
#include "core/model/attention.h"

namespace headmap {

struct MapTexture {
  GLuint id = 0;
  int rows = 0, cols = 0;  // cells of the source map
  int pool = 1;            // cells per texel along each axis
  bool valid() const { return id != 0; }
};

struct HeatmapStyle {
  Colormap colormap = Colormap::Viridis;
  float vmin = 0.0f, vmax = 1.0f;
  bool log_scale = false;
  bool diverging = false;  // signed data (Q, K, scores): blue - white - red around 0
  bool grid = true;        // token grid lines, once cells are 7 pixels or more
  MaskKind mask = MaskKind::None;  // which cells are hidden (grey); the core's rule
  int len = 0;             // real tokens (for the mask)
  int hi_row = -1, hi_col = -1;
  // Visible window in cells (zoom and pan): [col0, col1) x [row0, row1). col1 < 0: whole map.
  float col0 = 0, row0 = 0, col1 = -1, row1 = -1;
};

class HeatmapRenderer {
 public:
  Status init();
  void shutdown();
  ~HeatmapRenderer() { shutdown(); }

  // Call once per frame before any draw(): drops the previous frame's queued draws and
  // frees textures no one asked for in the last few frames.
  void begin_frame();

  // The texture of a map, uploaded on first use. `owner` keeps the data's source alive
  // while the texture is cached; (owner, tag) identifies the map.
  // data: (rows, cols) floats, row stride `stride`. Maps larger than max_side are pooled.
  const MapTexture& texture(const std::shared_ptr<const void>& owner, const std::string& tag, const float* data, int rows,
                            int cols, int stride, int max_side = 1024);

  // Draws the map into [p0, p1) of the draw list (colouring it first if its scale is new).
  void draw(ImDrawList* dl, ImVec2 p0, ImVec2 p1, const MapTexture& tex, const HeatmapStyle& style);

  size_t texture_bytes() const { return bytes_; }
  size_t uploads_this_frame() const { return uploads_; }

 private:
  struct Cached {
    std::shared_ptr<const void> owner;
    MapTexture tex;
    size_t bytes;
    uint64_t last_used;
  };
  struct Coloured {
    GLuint id;
    size_t bytes;
    uint64_t last_used;
  };
  GLuint coloured(const MapTexture& tex, const HeatmapStyle& s);  // renders on first use
  GLint loc(const char* name) const;

  GLuint program_ = 0, vao_ = 0, fbo_ = 0;
  GLuint luts_[kNumColormaps + 1] = {};  // the colormaps, then the diverging scale
  std::map<std::pair<const void*, std::string>, Cached> cache_;
  std::map<std::string, Coloured> coloured_;  // key: the float texture and the colour scale
  uint64_t frame_ = 0;
  size_t bytes_ = 0, uploads_ = 0;
};

// Builds and links a program from two GLSL files; errors carry the GLSL log and file name.
Result<GLuint> build_program(const std::string& vert_path, const std::string& frag_path);

}  // namespace headmap
