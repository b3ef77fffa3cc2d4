// heatmap_renderer.cpp: the texels of maps, their colours in atlas pages, the overlays.
//
// Sections: [textures] [colouring] [drawing]
#include "app/gui/render/heatmap_renderer.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <vector>


namespace headmap {

// Texels or colours not drawn for this many frames are freed (a map that scrolled away or was replaced).
static constexpr uint64_t kTextureIdleFrames = 3;
// New maps' texels coloured and uploaded per frame, in RGBA8 bytes (1 Mi texels, ~3-4 ms of
// colouring on one core): well inside a 33 ms frame. A frame may always take one map,
// however large, so that every map appears.
static constexpr size_t kUploadBytesPerFrame = size_t(4) << 20;
// Tiles of zoomed maps start and end on multiples of this many texels, so a small pan
// reuses the tile.
static constexpr int kTileAlign = 64;
// Atlas pages for coloured maps (RGBA8, 4 MiB each); maps of up to kAtlasMaxSide texels a
// side go there, with kAtlasPad texels between neighbours. Larger ones keep their own.
static constexpr int kAtlasSide = 1024, kAtlasMaxSide = 256, kAtlasPad = 1;

// ---- [textures] -----------------------------------------------------------------------
void gl_check(const char* what, const char* file, int line) {
  for (GLenum e = glGetError(); e != GL_NO_ERROR; e = glGetError())
    std::fprintf(stderr, "headmap: GL error 0x%04x after %s (%s:%d)\n", e, what, file, line);
}

// A new bound 2D texture with this filter, clamped at the edges.
static GLuint new_texture(GLint filter) {
  GLuint t = 0;
  GL_CHECK(glGenTextures(1, &t));
  glBindTexture(GL_TEXTURE_2D, t);
  glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MIN_FILTER, filter);
  glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MAG_FILTER, filter);
  glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_WRAP_S, GL_CLAMP_TO_EDGE);
  glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_WRAP_T, GL_CLAMP_TO_EDGE);
  return t;
}

Status HeatmapRenderer::init() {
  ready_ = true;
  return Status();
}

void HeatmapRenderer::shutdown() {
  cache_.clear();
  tiles_.clear();
  for (auto& [k, c] : coloured_)
    if (c.page < 0) glDeleteTextures(1, &c.id);
  for (Page& p : pages_)
    if (p.id) glDeleteTextures(1, &p.id);
  pages_.clear();
  pending_.clear();
  coloured_.clear();
  ready_ = false;
}

void HeatmapRenderer::retire_owner(const void* owner) {
  if (!owner) return;
  for (auto& e : cache_)
    if (e.second.owner.get() == owner) e.second.last_used = 0;
  for (auto& e : tiles_)
    if (e.second.owner.get() == owner) e.second.last_used = 0;
}

void HeatmapRenderer::begin_frame() {
  flush();  // a frame that drew maps but never reached flush(): nothing may point at unfilled texels
  ++frame_;
  uploads_ = upload_bytes_ = 0;
  deferred_ = largest_pool_ = 0;
  // Textures not drawn for kTextureIdleFrames frames are freed, and at once those whose owner
  // only this cache still holds: nobody can ask for them again (asking takes the owner), and
  // the owner (a forward pass: 134 MB of maps and logits on the 1B shape) is freed with them,
  // so the worker can write the next keystroke's pass into its buffers instead of fresh pages.
  std::map<const void*, long> refs;  // the cache's own references to each owner
  for (const auto& e : cache_) ++refs[e.second.owner.get()];
  for (const auto& e : tiles_) ++refs[e.second.owner.get()];
  std::set<uint64_t> freed;
  auto free_idle = [&](auto& cache) {
    for (auto it = cache.begin(); it != cache.end();) {
      const std::shared_ptr<const void>& owner = it->second.owner;
      if (frame_ - it->second.last_used > kTextureIdleFrames || (owner && owner.use_count() == refs[owner.get()])) {
        freed.insert(it->second.tex.id);
        it = cache.erase(it);
      } else {
        ++it;
      }
    }
  };
  free_idle(cache_);
  free_idle(tiles_);
  for (auto it = coloured_.begin(); it != coloured_.end();) {
    // A coloured copy of freed texels goes with them: its room in the atlas is free again.
    if (frame_ - it->second.last_used > kTextureIdleFrames || freed.count(it->second.source)) {
      release(it->second);
      it = coloured_.erase(it);
    } else {
      ++it;
    }
  }
}

void HeatmapRenderer::release(const Coloured& c) {
  bytes_ -= c.bytes;
  if (c.page < 0) {
    glDeleteTextures(1, &c.id);
    return;
  }
  // A page whose maps are all gone starts again from its top-left corner; pages beyond the
  // first give their memory back until they are needed again.
  Page& p = pages_[static_cast<size_t>(c.page)];
  if (--p.live > 0) return;
  p.shelf_y = p.shelf_h = p.cursor_x = 0;
  if (c.page > 0 && p.id) {
    glDeleteTextures(1, &p.id);
    p.id = 0;
    bytes_ -= size_t(4) * kAtlasSide * kAtlasSide;
  }
}

const MapTexture& HeatmapRenderer::texture(const std::shared_ptr<const void>& owner, const std::string& tag, const float* data,
                                           int rows, int cols, int stride, int max_side) {
  const auto key = std::make_pair(owner.get(), tag);
  if (auto it = cache_.find(key); it != cache_.end()) {
    it->second.last_used = frame_;
    return it->second.tex;
  }
  MapTexture t;
  t.rows = rows;
  t.cols = cols;
  t.pool = std::max(1, (std::max(rows, cols) + max_side - 1) / max_side);
  const int tr = (rows + t.pool - 1) / t.pool, tc = (cols + t.pool - 1) / t.pool;
  // Over this frame's upload budget: drawn as a placeholder now, coloured in a later frame.
  if (upload_bytes_ > 0 && upload_bytes_ + static_cast<size_t>(tr) * tc * 4 > kUploadBytesPerFrame) {
    ++deferred_;
    static const MapTexture kNotYet;
    return kNotYet;
  }
  std::vector<float> pooled;
  int src_stride = stride;
  if (t.pool > 1) {  // max-pool: a sharp peak must stay visible when many cells share a pixel
    pooled.assign(static_cast<size_t>(tr) * tc, -INFINITY);
    for (int r = 0; r < rows; ++r)
      for (int c = 0; c < cols; ++c) {
        float& dst = pooled[static_cast<size_t>(r / t.pool) * tc + c / t.pool];
        dst = std::max(dst, data[static_cast<size_t>(r) * stride + c]);
      }
    src_stride = tc;
  }
  t.tex_rows = tr;
  t.tex_cols = tc;
  t.stride = src_stride;
  t.id = next_id_++;
  count_upload(t);
  Cached& c = cache_[key];
  c.owner = owner;
  c.pooled = std::move(pooled);
  c.tex = t;
  c.tex.texels = t.pool > 1 ? c.pooled.data() : data;
  c.last_used = frame_;
  return c.tex;
}

// New texels count against the frame's budget once, as the colours they will be uploaded as.
void HeatmapRenderer::count_upload(const MapTexture& t) {
  ++uploads_;
  upload_bytes_ += static_cast<size_t>(t.tex_rows) * t.tex_cols * 4;
}

int HeatmapRenderer::level_for(float cells, float pixels, int num_levels) {
  int k = 0;
  while (k + 1 < num_levels && cells / static_cast<float>(1 << k) > std::max(pixels, 1.0f)) ++k;
  return k;
}

const MapTexture* HeatmapRenderer::tile(const MapSource& m, int k, int tr0, int tc0, int th, int tw, bool may_upload) {
  const auto key = std::make_tuple(m.owner.get(), m.tag, k, tr0, tc0, th, tw);
  if (auto it = tiles_.find(key); it != tiles_.end()) {
    it->second.last_used = frame_;
    return &it->second.tex;
  }
  const size_t bytes = static_cast<size_t>(th) * tw * 4;
  if (!may_upload || (upload_bytes_ > 0 && upload_bytes_ + bytes > kUploadBytesPerFrame)) return nullptr;
  const int pool = 1 << k;
  const float* level = k == 0 ? m.data : m.levels->level(k);
  const int stride = k == 0 ? m.stride : m.levels->level_cols(k);
  MapTexture t;
  t.rows = m.rows;
  t.cols = m.cols;
  t.pool = pool;
  t.row0 = tr0 * pool;
  t.col0 = tc0 * pool;
  t.tex_rows = th;
  t.tex_cols = tw;
  t.texels = level + static_cast<size_t>(tr0) * stride + tc0;
  t.stride = stride;
  t.id = next_id_++;
  count_upload(t);
  Cached& c = tiles_[key];
  c.owner = m.owner;
  c.tex = t;
  c.last_used = frame_;
  return &c.tex;
}

// ---- [colouring] ----------------------------------------------------------------------
// Where a (w, h) map's colours go: the first page with room on its current shelf or below
// it, else a new page. Shelves only grow down; a page is reset once all its maps are gone.
void HeatmapRenderer::place_in_atlas(int w, int h, int* page, int* x, int* y) {
  const int W = w + kAtlasPad, H = h + kAtlasPad;
  for (size_t i = 0;; ++i) {
    if (i == pages_.size()) pages_.emplace_back();
    Page& p = pages_[i];
    if (!p.id) {  // a new page, or one that gave its memory back
      p.id = new_texture(GL_NEAREST);
      GL_CHECK(glTexImage2D(GL_TEXTURE_2D, 0, GL_RGBA8, kAtlasSide, kAtlasSide, 0, GL_RGBA, GL_UNSIGNED_BYTE, nullptr));
      bytes_ += size_t(4) * kAtlasSide * kAtlasSide;
    }
    if (p.cursor_x + W > kAtlasSide) {  // the next shelf
      p.shelf_y += p.shelf_h;
      p.shelf_h = p.cursor_x = 0;
    }
    if (p.shelf_y + H > kAtlasSide) continue;  // full (until its maps are gone)
    *page = static_cast<int>(i);
    *x = p.cursor_x;
    *y = p.shelf_y;
    p.cursor_x += W;
    p.shelf_h = std::max(p.shelf_h, H);
    ++p.live;
    return;
  }
}

// The texels holding the map's colours for this scale: found, or placed (in an atlas page
// or a texture of its own) and queued for flush().
const HeatmapRenderer::Coloured& HeatmapRenderer::coloured(const MapTexture& tex, const HeatmapStyle& s) {
  char buf[256];
  std::snprintf(buf, sizeof buf, "%llu/%d/%a/%a/%d/%d/%d/%d/%d/", static_cast<unsigned long long>(tex.id), static_cast<int>(s.colormap), s.vmin, s.vmax, s.log_scale,
                s.diverging, static_cast<int>(s.mask), s.len, s.mask == MaskKind::None ? 0 : s.window);
  const std::string key = buf + s.filter.key();
  if (auto it = coloured_.find(key); it != coloured_.end()) {
    it->second.last_used = frame_;
    return it->second;
  }
  const int tw = tex.tex_cols, th = tex.tex_rows;
  Coloured c;
  c.bytes = 0;
  if (tw <= kAtlasMaxSide && th <= kAtlasMaxSide) {
    place_in_atlas(tw, th, &c.page, &c.x, &c.y);
    c.id = pages_[static_cast<size_t>(c.page)].id;
  } else {
    c.id = new_texture(GL_NEAREST);
    GL_CHECK(glTexImage2D(GL_TEXTURE_2D, 0, GL_RGBA8, tw, th, 0, GL_RGBA, GL_UNSIGNED_BYTE, nullptr));
    c.bytes = static_cast<size_t>(tw) * th * 4;
  }
  c.last_used = frame_;
  c.source = tex.id;
  bytes_ += c.bytes;
  MapColouring mc;
  mc.colormap = s.colormap;
  mc.vmin = s.vmin;
  mc.vmax = s.vmax;
  mc.log_scale = s.log_scale;
  mc.diverging = s.diverging;
  mc.mask = s.mask;
  mc.len = s.len;
  mc.window = s.window;
  mc.filter = s.filter;
  pending_.push_back({tex, std::move(mc), c.id, c.x, c.y});
  return coloured_[key] = c;
}

// Colours every queued map on the CPU (map_colour.h) and uploads its texels into its page or
// texture: no render pass, so the window's draw samples finished texels.
void HeatmapRenderer::flush() {
  if (pending_.empty()) return;
  GLint prev_tex = 0;
  glGetIntegerv(GL_TEXTURE_BINDING_2D, &prev_tex);
  glPixelStorei(GL_UNPACK_ALIGNMENT, 4);
  glPixelStorei(GL_UNPACK_ROW_LENGTH, 0);
  for (const Pending& p : pending_) {
    const MapTexture& tex = p.tex;
    rgba_.resize(static_cast<size_t>(tex.tex_rows) * tex.tex_cols * 4);
    const TexelGrid grid{tex.rows, tex.cols, tex.pool, tex.row0, tex.col0};
    colour_texels(rgba_.data(), tex.texels, tex.stride, tex.tex_rows, tex.tex_cols, grid, p.colouring);
    glBindTexture(GL_TEXTURE_2D, p.target);
    GL_CHECK(glTexSubImage2D(GL_TEXTURE_2D, 0, p.x, p.y, tex.tex_cols, tex.tex_rows, GL_RGBA, GL_UNSIGNED_BYTE, rgba_.data()));
  }
  pending_.clear();
  if (rgba_.capacity() > (size_t(4) << 20)) rgba_ = {};  // a long map's colours (up to 16 MiB) are not kept
  glBindTexture(GL_TEXTURE_2D, static_cast<GLuint>(prev_tex));
}

void HeatmapRenderer::begin_batch(ImDrawList* dl) {
  HM_ASSERT(!batch_dl_, "begin_batch: a batch is already open; call end_batch() first");
  batch_dl_ = dl;
  batch_splitter_.Split(dl, 2);
  batch_splitter_.SetCurrentChannel(dl, 1);
}

void HeatmapRenderer::end_batch() {
  HM_ASSERT(batch_dl_, "end_batch without begin_batch");
  batch_splitter_.Merge(batch_dl_);
  batch_dl_ = nullptr;
}

// ---- [drawing] ------------------------------------------------------------------------
bool HeatmapRenderer::draw_map(ImDrawList* dl, ImVec2 p0, ImVec2 p1, const MapSource& m, const HeatmapStyle& s) {
  if (!ready_ || !m.data || m.rows <= 0 || m.cols <= 0) return false;
  const float col1 = s.col1 < 0 ? static_cast<float>(m.cols) : s.col1;
  const float row1 = s.row1 < 0 ? static_cast<float>(m.rows) : s.row1;
  const ImVec2 fb = ImGui::GetIO().DisplayFramebufferScale;
  const int levels = m.levels ? m.levels->num_levels() : 1;
  const int k = std::max(level_for(col1 - s.col0, (p1.x - p0.x) * fb.x, levels), level_for(row1 - s.row0, (p1.y - p0.y) * fb.y, levels));
  // The texels of level j under the window, widened to the tile grid.
  auto tile_of = [&](int j, bool may_upload) {
    const int pool = 1 << j;
    const int lr = j == 0 ? m.rows : m.levels->level_rows(j), lc = j == 0 ? m.cols : m.levels->level_cols(j);
    auto span = [&](float a, float b, int n, int* t0, int* t1) {
      *t0 = std::clamp(static_cast<int>(std::floor(a / pool)) / kTileAlign * kTileAlign, 0, n);
      *t1 = std::clamp((static_cast<int>(std::ceil(b / pool)) + kTileAlign - 1) / kTileAlign * kTileAlign, *t0 + 1, n);
    };
    int r0 = 0, r1 = 0, c0 = 0, c1 = 0;
    span(s.row0, row1, lr, &r0, &r1);
    span(s.col0, col1, lc, &c0, &c1);
    return tile(m, j, r0, c0, r1 - r0, c1 - c0, may_upload);
  };
  const MapTexture* t = tile_of(k, true);
  if (!t) {  // over budget: a coarser level already uploaded, while this one waits for a later frame
    ++deferred_;
    for (int j = k + 1; j < levels && !t; ++j) t = tile_of(j, false);
  }
  if (!t) return false;
  largest_pool_ = std::max(largest_pool_, t->pool);
  draw(dl, p0, p1, *t, s);
  return true;
}

void HeatmapRenderer::draw(ImDrawList* dl, ImVec2 p0, ImVec2 p1, const MapTexture& tex, const HeatmapStyle& s) {
  if (!tex.valid() || !ready_) return;
  const Coloured& c = coloured(tex, s);
  const float col1 = s.col1 < 0 ? static_cast<float>(tex.cols) : s.col1;
  const float row1 = s.row1 < 0 ? static_cast<float>(tex.rows) : s.row1;
  // Texel (0, 0) starts at cell (row0, col0); a texel spans `pool` cells (the last may run
  // past the map's edge). In an atlas page, the map's texels start at (c.x, c.y).
  const float span_c = static_cast<float>(tex.tex_cols * tex.pool), span_r = static_cast<float>(tex.tex_rows * tex.pool);
  const float u0 = (s.col0 - tex.col0) / span_c, v0 = (s.row0 - tex.row0) / span_r, u1 = (col1 - tex.col0) / span_c, v1 = (row1 - tex.row0) / span_r;
  ImVec2 uv0(u0, v0), uv1(u1, v1);
  if (c.page >= 0) {
    const float sx = static_cast<float>(tex.tex_cols) / kAtlasSide, sy = static_cast<float>(tex.tex_rows) / kAtlasSide;
    const float ox = static_cast<float>(c.x) / kAtlasSide, oy = static_cast<float>(c.y) / kAtlasSide;
    uv0 = ImVec2(ox + u0 * sx, oy + v0 * sy);
    uv1 = ImVec2(ox + u1 * sx, oy + v1 * sy);
  }
  const ImTextureID id = reinterpret_cast<ImTextureID>(static_cast<intptr_t>(c.id));
  if (dl == batch_dl_) {  // under the rest of the batch, beside the other maps' images
    batch_splitter_.SetCurrentChannel(dl, 0);
    dl->AddImage(id, p0, p1, uv0, uv1);
    batch_splitter_.SetCurrentChannel(dl, 1);
  } else {
    dl->AddImage(id, p0, p1, uv0, uv1);
  }

  // Overlays: the hovered token's row and column, and token grid lines.
  const float cw = (p1.x - p0.x) / std::max(col1 - s.col0, 1e-6f), ch = (p1.y - p0.y) / std::max(row1 - s.row0, 1e-6f);
  // Clamped to the map by hand, not with a clip rect: a clip rect per map would split the
  // draw list into two draw calls per map (see the top).
  const ImU32 tint = IM_COL32(255, 90, 50, 70);
  if (s.hi_row >= 0) {
    const float y = p0.y + (s.hi_row - s.row0) * ch, ya = std::max(y, p0.y), yb = std::min(y + ch, p1.y);
    if (ya < yb) dl->AddRectFilled(ImVec2(p0.x, ya), ImVec2(p1.x, yb), tint);
  }
  if (s.hi_col >= 0) {
    const float x = p0.x + (s.hi_col - s.col0) * cw, xa = std::max(x, p0.x), xb = std::min(x + cw, p1.x);
    if (xa < xb) dl->AddRectFilled(ImVec2(xa, p0.y), ImVec2(xb, p1.y), tint);
  }
  // Grid lines as one-pixel rectangles on whole pixels: two triangles each and no
  // anti-aliased fringe (llvmpipe drew the 16-head grid's 384 lines ~1 ms faster this way).
  if (s.grid && cw >= 7.0f && ch >= 7.0f) {
    const ImU32 line = IM_COL32(20, 20, 20, 115);
    for (int c = static_cast<int>(std::ceil(s.col0)); c <= static_cast<int>(col1); ++c) {
      const float x = std::floor(p0.x + (c - s.col0) * cw);
      dl->AddRectFilled(ImVec2(x, p0.y), ImVec2(x + 1.0f, p1.y), line);
    }
    for (int r = static_cast<int>(std::ceil(s.row0)); r <= static_cast<int>(row1); ++r) {
      const float y = std::floor(p0.y + (r - s.row0) * ch);
      dl->AddRectFilled(ImVec2(p0.x, y), ImVec2(p1.x, y + 1.0f), line);  // lines lie inside the map: c, r within the window
    }
  }
}

}  // namespace headmap
