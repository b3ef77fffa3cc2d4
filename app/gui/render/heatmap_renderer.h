// heatmap_renderer.h: draws maps inside Dear ImGui windows, coloured on the CPU by the
// exporter's rules (app/common/map_colour.h) and uploaded as RGBA8 texels. GL work happens
// on the main thread only.
//
// A map is coloured once per colour scale, one texel per cell (or per block of cells), and
// uploaded into an atlas page: changing the colormap, the normalisation or the log scale
// colours it again, and a frame that changes nothing draws a textured quad per map. Token
// grid lines and the hovered token's row and column are drawn on top by Dear ImGui. (Until
// 2026-11-28 a GLSL shader coloured float textures into the pages: under software GL that
// render pass cost the frame taking a new result ~10 ms; tests/bench/README.md, helper paint7.)
//
// Many maps, few draw calls: under software GL every draw call costs ~40 us whatever its
// size, and Dear ImGui starts a new one at each change of texture. So coloured maps of up to
// kAtlasMaxSide texels a side share atlas pages, all of a frame's colourings are uploaded
// in flush() (before ImGui::Render), and a grid of maps drawn between begin_batch() and
// end_batch() puts its images under everything else of the grid, where they merge into one
// draw call (at 128 heads: ~400 draw calls before, a handful after).
//
// Long maps (draw_map): the worker max-pools every map into levels (core/inspect/
// map_levels.h). The renderer colours the level with no more texels than the map has pixels
// on screen, so a frame never moves 2048 x 2048 values and a single strong cell is never
// dropped by sampling; zoomed in, it colours a finer tile of just the visible window.
// Colourings have a budget per frame: what does not fit is drawn coarser (or, the first
// time, as a placeholder) and coloured over the next frames (deferred() asks for them).
#pragma once
#include <imgui.h>

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "app/common/colormap.h"
#include "app/common/heatmap_figure.h"
#include "app/common/map_colour.h"
#include "app/gui/render/gl.h"
#include "core/error.h"
#include "core/inspect/map_levels.h"
#include "core/model/attention.h"

namespace headmap {

// A map's texels ready to colour: the caller's floats (kept alive by the cache's owner), or
// the renderer's max-pooled copy of them.
struct MapTexture {
  uint64_t id = 0;         // names these texels in the colour cache (0: none yet)
  const float* texels = nullptr;  // (tex_rows, tex_cols), row stride `stride`
  int stride = 0;
  int rows = 0, cols = 0;  // cells of the source map
  int pool = 1;            // cells per texel along each axis
  int row0 = 0, col0 = 0;  // the cell at texel (0, 0): a tile of a zoomed map starts inside it
  int tex_rows = 0, tex_cols = 0;  // texels
  bool valid() const { return id != 0; }
};

// A map and its max-pooled levels, for draw_map. `owner` keeps the data alive while its
// textures are cached; (owner, tag) names the map.
struct MapSource {
  std::shared_ptr<const void> owner;
  std::string tag;
  const float* data = nullptr;  // level 0: (rows, cols), row stride `stride`
  int rows = 0, cols = 0, stride = 0;
  const MapLevels* levels = nullptr;  // levels 1.. (null or none: level 0 only)
};

struct HeatmapStyle {
  Colormap colormap = Colormap::Viridis;
  float vmin = 0.0f, vmax = 1.0f;
  bool log_scale = false;
  bool diverging = false;  // signed data (Q, K, scores): blue - white - red around 0
  bool grid = true;        // token grid lines, once cells are 7 pixels or more
  MaskKind mask = MaskKind::None;  // which cells are hidden (grey); the core's rule
  int len = 0;             // real tokens (for the mask)
  int window = 0;          // a local layer's sliding window: visible keys W or more back hatched (window_hatch); 0 = none
  CellFilter filter;       // the A/B filter and hidden special tokens: cells outside dimmed (filter_dims)
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
  // The maps of `owner` are no longer shown (a newer result replaced it): its textures go at
  // the next begin_frame unless drawn again before it. Otherwise they stayed kTextureIdleFrames
  // frames, and with them the pass they own, which the compute worker holds too (to write the
  // next pass into its buffers once nobody else does): neither let it go first, and the 1B
  // shape kept one more pass (maps, levels, layer rows) while typing (helper rss10).
  void retire_owner(const void* owner);
  // Call before each pass of the panels (a frame may draw them twice): resets deferred()
  // and largest_pool_drawn().
  void begin_pass() { deferred_ = largest_pool_ = 0; }
  // Colours the maps this frame's draws asked for and uploads them. Call before ImGui::Render().
  void flush();
  // Maps drawn into `dl` until end_batch() put their images below the rest of what is drawn
  // there meanwhile (titles, borders, labels), so the images merge into one draw call.
  void begin_batch(ImDrawList* dl);
  void end_batch();

  // The texels of a map (max-pooled on first use when it is larger than max_side). `owner`
  // keeps the data's source alive while they are cached; (owner, tag) identifies the map.
  // data: (rows, cols) floats, row stride `stride`. Past this frame's upload budget it
  // returns an invalid texture (draw a placeholder; it is coloured in a later frame, and
  // deferred() counts it).
  const MapTexture& texture(const std::shared_ptr<const void>& owner, const std::string& tag, const float* data, int rows,
                            int cols, int stride, int max_side = 1024);

  // Draws the map into [p0, p1) of the draw list (colouring it first if its scale is new).
  void draw(ImDrawList* dl, ImVec2 p0, ImVec2 p1, const MapTexture& tex, const HeatmapStyle& style);

  // Draws the style's window of a long map into [p0, p1): the coarsest level that still has
  // a texel for every pixel, or a tile of a finer level when zoomed in (see the top).
  // Returns false when nothing could be drawn yet (the frame's upload budget is spent).
  bool draw_map(ImDrawList* dl, ImVec2 p0, ImVec2 p1, const MapSource& m, const HeatmapStyle& style);

  // The level draw_map uses for `cells` cells on `pixels` pixels: cells / 2^level <= pixels.
  static int level_for(float cells, float pixels, int num_levels);

  size_t texture_bytes() const { return bytes_; }
  size_t uploads_this_frame() const { return uploads_; }
  size_t upload_bytes_this_frame() const { return upload_bytes_; }
  int deferred() const { return deferred_; }  // maps drawn coarser or not at all this frame, waiting for the budget
  int largest_pool_drawn() const { return largest_pool_; }  // this frame: the most cells per texel of a drawn map

 private:
  struct Cached {
    std::shared_ptr<const void> owner;
    MapTexture tex;
    std::vector<float> pooled;  // the texels when pooled here (tex.texels points into it)
    uint64_t last_used;
  };
  struct Coloured {
    GLuint id;        // the atlas page, or a texture of its own
    uint64_t source = 0;  // the texels (MapTexture::id) it colours
    int page = -1;    // index into pages_, or -1
    int x = 0, y = 0; // texel (0, 0) in the page
    size_t bytes;
    uint64_t last_used;
  };
  // An atlas page: shelves of maps, left to right, then down.
  struct Page {
    GLuint id = 0;
    int shelf_y = 0, shelf_h = 0, cursor_x = 0;
    int live = 0;  // Coloured entries in it
  };
  // A colouring to run in flush(): texels of `tex` into (x, y) of texture `target`.
  struct Pending {
    MapTexture tex;
    MapColouring colouring;
    GLuint target;
    int x, y;
  };
  // The texture holding a map's colours, and where in it (queued on first use).
  const Coloured& coloured(const MapTexture& tex, const HeatmapStyle& s);
  void place_in_atlas(int w, int h, int* page, int* x, int* y);
  void release(const Coloured& c);
  // A texture of texels [tr0, tr0 + th) x [tc0, tc0 + tw) of level k of m (cached). Null
  // when not cached and `may_upload` is false.
  const MapTexture* tile(const MapSource& m, int k, int tr0, int tc0, int th, int tw, bool may_upload);
  void count_upload(const MapTexture& t);

  bool ready_ = false;  // init() ran
  uint64_t next_id_ = 1;
  std::vector<uint8_t> rgba_;  // flush()'s scratch: one map's colours
  std::map<std::pair<const void*, std::string>, Cached> cache_;
  std::map<std::string, Coloured> coloured_;  // key: the float texture and the colour scale
  std::vector<Page> pages_;
  std::vector<Pending> pending_;
  ImDrawList* batch_dl_ = nullptr;
  ImDrawListSplitter batch_splitter_;
  std::map<std::tuple<const void*, std::string, int, int, int, int, int>, Cached> tiles_;  // (owner, tag, level, rect)
  uint64_t frame_ = 0;
  size_t bytes_ = 0, uploads_ = 0, upload_bytes_ = 0;  // bytes_: the coloured texels on the GPU
  int deferred_ = 0, largest_pool_ = 0;
};

}  // namespace headmap
