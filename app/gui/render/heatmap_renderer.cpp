// heatmap_renderer.cpp: shader set-up, texture uploads, colouring into cached textures, overlays.
//
// Sections: [shaders] [textures] [colouring] [drawing]
#include "app/gui/render/heatmap_renderer.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <vector>

#include "app/common/assets.h"
#include "core/io/file_io.h"

namespace headmap {

// A texture not drawn for this many frames is freed (a map that scrolled away or was replaced).
static constexpr uint64_t kTextureIdleFrames = 3;
// Bytes of float maps uploaded per frame (each is coloured into as many bytes again): what
// llvmpipe at 1600x1000 uploads and colours well inside a 33 ms frame. A frame may always
// upload one texture, however large, so that every map appears.
static constexpr size_t kUploadBytesPerFrame = size_t(4) << 20;
// Tiles of zoomed maps start and end on multiples of this many texels, so a small pan
// reuses the tile.
static constexpr int kTileAlign = 64;
// Atlas pages for coloured maps (RGBA8, 4 MiB each); maps of up to kAtlasMaxSide texels a
// side go there, with kAtlasPad texels between neighbours. Larger ones keep their own.
static constexpr int kAtlasSide = 1024, kAtlasMaxSide = 256, kAtlasPad = 1;

// ---- [shaders] ------------------------------------------------------------------------
void gl_check(const char* what, const char* file, int line) {
  for (GLenum e = glGetError(); e != GL_NO_ERROR; e = glGetError())
    std::fprintf(stderr, "headmap: GL error 0x%04x after %s (%s:%d)\n", e, what, file, line);
}

// The GLSL names of the core's MaskKind values, put after the shader's #version line: the
// shader compares u_mask with these names, never with numbers of its own.
static std::string mask_defines() {
  std::string d;
  for (auto [name, m] : {std::pair{"MASK_NONE", MaskKind::None}, std::pair{"MASK_CAUSAL", MaskKind::Causal},
                         std::pair{"MASK_REVERSED", MaskKind::Reversed}, std::pair{"MASK_PADDING_ONLY", MaskKind::PaddingOnly}})
    d += std::string("#define ") + name + " " + std::to_string(static_cast<int>(m)) + "\n";
  return d;
}

static Result<GLuint> compile(GLenum type, const std::string& path) {
  Result<std::string> src = read_file(path, 1 << 20);
  if (!src) return Error{ErrorKind::Io, "Cannot read the shader " + path + ": " + src.error().message};
  if (const size_t v = src->find("#version"); v != std::string::npos) {
    const size_t eol = src->find('\n', v);
    if (eol != std::string::npos) src->insert(eol + 1, "#line 2\n" + mask_defines() + "#line 2\n");
  }
  const GLuint sh = glCreateShader(type);
  const char* text = src->c_str();
  glShaderSource(sh, 1, &text, nullptr);
  glCompileShader(sh);
  GLint ok = 0;
  glGetShaderiv(sh, GL_COMPILE_STATUS, &ok);
  if (!ok) {
    char log[4096];
    glGetShaderInfoLog(sh, sizeof log, nullptr, log);
    glDeleteShader(sh);
    return Error{ErrorKind::BadFormat, "GLSL compile error in " + path + ":\n" + log};
  }
  return sh;
}

Result<GLuint> build_program(const std::string& vert_path, const std::string& frag_path) {
  Result<GLuint> vs = compile(GL_VERTEX_SHADER, vert_path);
  if (!vs) return vs.error();
  Result<GLuint> fs = compile(GL_FRAGMENT_SHADER, frag_path);
  if (!fs) {
    glDeleteShader(*vs);
    return fs.error();
  }
  const GLuint prog = glCreateProgram();
  glAttachShader(prog, *vs);
  glAttachShader(prog, *fs);
  glLinkProgram(prog);
  glDeleteShader(*vs);
  glDeleteShader(*fs);
  GLint ok = 0;
  glGetProgramiv(prog, GL_LINK_STATUS, &ok);
  if (!ok) {
    char log[4096];
    glGetProgramInfoLog(prog, sizeof log, nullptr, log);
    glDeleteProgram(prog);
    return Error{ErrorKind::BadFormat, "GLSL link error (" + vert_path + ", " + frag_path + "):\n" + log};
  }
  return prog;
}

// A new bound 2D texture with this filter, clamped at the edges.
// ---- [textures] -----------------------------------------------------------------------
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

static GLuint make_lut(const std::vector<uint8_t>& rgba) {
  const GLuint t = new_texture(GL_LINEAR);
  GL_CHECK(glTexImage2D(GL_TEXTURE_2D, 0, GL_RGBA8, static_cast<GLsizei>(rgba.size() / 4), 1, 0, GL_RGBA, GL_UNSIGNED_BYTE, rgba.data()));
  return t;
}

Status HeatmapRenderer::init() {
  Result<GLuint> prog = build_program(shaders_dir() + "/heatmap.vert", shaders_dir() + "/heatmap.frag");
  if (!prog) return prog.error();
  program_ = *prog;
  GL_CHECK(glGenVertexArrays(1, &vao_));
  GL_CHECK(glGenFramebuffers(1, &fbo_));
  for (int c = 0; c < kNumColormaps; ++c) luts_[c] = make_lut(colormap_lut(static_cast<Colormap>(c)));
  luts_[kNumColormaps] = make_lut(diverging_lut(256));
  return Status();
}

void HeatmapRenderer::shutdown() {
  for (auto& [k, c] : cache_) glDeleteTextures(1, &c.tex.id);
  for (auto& [k, c] : tiles_) glDeleteTextures(1, &c.tex.id);
  tiles_.clear();
  for (auto& [k, c] : coloured_)
    if (c.page < 0) glDeleteTextures(1, &c.id);
  for (Page& p : pages_)
    if (p.id) glDeleteTextures(1, &p.id);
  pages_.clear();
  pending_.clear();
  cache_.clear();
  coloured_.clear();
  if (fbo_) glDeleteFramebuffers(1, &fbo_);
  fbo_ = 0;
  if (program_) glDeleteProgram(program_);
  if (vao_) glDeleteVertexArrays(1, &vao_);
  for (GLuint& t : luts_)
    if (t) glDeleteTextures(1, &t), t = 0;
  program_ = vao_ = 0;
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
  std::set<GLuint> freed;
  auto free_idle = [&](auto& cache) {
    for (auto it = cache.begin(); it != cache.end();) {
      const std::shared_ptr<const void>& owner = it->second.owner;
      if (frame_ - it->second.last_used > kTextureIdleFrames || (owner && owner.use_count() == refs[owner.get()])) {
        bytes_ -= it->second.bytes;
        freed.insert(it->second.tex.id);
        glDeleteTextures(1, &it->second.tex.id);
        it = cache.erase(it);
      } else {
        ++it;
      }
    }
  };
  free_idle(cache_);
  free_idle(tiles_);
  for (auto it = coloured_.begin(); it != coloured_.end();) {
    // A coloured copy of a freed texture goes with it: GL may give its id to a new texture,
    // whose key would then find these colours.
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
  // Over this frame's upload budget: drawn as a placeholder now, uploaded in a later frame.
  if (upload_bytes_ > 0 && upload_bytes_ + static_cast<size_t>(tr) * tc * 4 > kUploadBytesPerFrame) {
    ++deferred_;
    static const MapTexture kNotYet;
    return kNotYet;
  }
  std::vector<float> pooled;
  const float* src = data;
  int src_stride = stride;
  if (t.pool > 1) {  // max-pool: a sharp peak must stay visible when many cells share a pixel
    pooled.assign(static_cast<size_t>(tr) * tc, -INFINITY);
    for (int r = 0; r < rows; ++r)
      for (int c = 0; c < cols; ++c) {
        float& dst = pooled[static_cast<size_t>(r / t.pool) * tc + c / t.pool];
        dst = std::max(dst, data[static_cast<size_t>(r) * stride + c]);
      }
    src = pooled.data();
    src_stride = tc;
  }
  t.tex_rows = tr;
  t.tex_cols = tc;
  upload(t, src, src_stride);
  Cached& c = cache_[key];
  c.owner = owner;
  c.tex = t;
  c.bytes = static_cast<size_t>(tr) * tc * 4;
  c.last_used = frame_;
  bytes_ += c.bytes;
  return c.tex;
}

void HeatmapRenderer::upload(MapTexture& t, const float* src, int src_stride) {
  t.id = new_texture(GL_NEAREST);
  glPixelStorei(GL_UNPACK_ALIGNMENT, 4);
  glPixelStorei(GL_UNPACK_ROW_LENGTH, src_stride);
  GL_CHECK(glTexImage2D(GL_TEXTURE_2D, 0, GL_R32F, t.tex_cols, t.tex_rows, 0, GL_RED, GL_FLOAT, src));
  glPixelStorei(GL_UNPACK_ROW_LENGTH, 0);
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
  upload(t, level + static_cast<size_t>(tr0) * stride + tc0, stride);
  Cached& c = tiles_[key];
  c.owner = m.owner;
  c.tex = t;
  c.bytes = bytes;
  c.last_used = frame_;
  bytes_ += bytes;
  return &c.tex;
}

// ---- [colouring] ----------------------------------------------------------------------
GLint HeatmapRenderer::loc(const char* name) const { return glGetUniformLocation(program_, name); }

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
  std::snprintf(buf, sizeof buf, "%u/%d/%a/%a/%d/%d/%d/%d/%d/", tex.id, static_cast<int>(s.colormap), s.vmin, s.vmax, s.log_scale,
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
  pending_.push_back({tex, s, c.id, c.x, c.y});
  return coloured_[key] = c;
}

// Colours every queued map with the shader, in one pass over one framebuffer object;
// restores what Dear ImGui's frame expects afterwards.
void HeatmapRenderer::flush() {
  if (pending_.empty() || !program_) return;
  GLint prev_fbo = 0, prev_viewport[4];
  glGetIntegerv(GL_FRAMEBUFFER_BINDING, &prev_fbo);
  glGetIntegerv(GL_VIEWPORT, prev_viewport);
  const GLboolean blend = glIsEnabled(GL_BLEND), scissor = glIsEnabled(GL_SCISSOR_TEST);
  glBindFramebuffer(GL_FRAMEBUFFER, fbo_);
  glDisable(GL_BLEND);
  glDisable(GL_SCISSOR_TEST);
  glUseProgram(program_);
  glBindVertexArray(vao_);
  glUniform1i(loc("u_map"), 0);
  glUniform1i(loc("u_lut"), 1);
  glUniform3f(loc("u_hidden"), kMaskedRgb[0], kMaskedRgb[1], kMaskedRgb[2]);
  glUniform3f(loc("u_hatch0"), kWindowRgb[0][0], kWindowRgb[0][1], kWindowRgb[0][2]);
  glUniform3f(loc("u_hatch1"), kWindowRgb[1][0], kWindowRgb[1][1], kWindowRgb[1][2]);
  glUniform3f(loc("u_filtered"), kFilteredRgb[0], kFilteredRgb[1], kFilteredRgb[2]);
  glUniform1f(loc("u_fdim"), kFilterDim);
  const GLint u_frows = loc("u_frows"), u_fcols = loc("u_fcols"), u_fhidden = loc("u_fhidden"), u_fn = loc("u_fn");
  const GLint u_window = loc("u_window"), u_origin = loc("u_origin"), u_cells = loc("u_cells"), u_pool = loc("u_pool"),
              u_vmin = loc("u_vmin"), u_vmax = loc("u_vmax"), u_log = loc("u_log"), u_diverging = loc("u_diverging"),
              u_mask = loc("u_mask"), u_len = loc("u_len"), u_slide = loc("u_slide");
  // Sorted by target, so each texture is attached once.
  std::stable_sort(pending_.begin(), pending_.end(), [](const Pending& a, const Pending& b) { return a.target < b.target; });
  GLuint attached = 0;
  for (const Pending& p : pending_) {
    const MapTexture& tex = p.tex;
    const HeatmapStyle& st = p.style;
    if (p.target != attached) {
      GL_CHECK(glFramebufferTexture2D(GL_FRAMEBUFFER, GL_COLOR_ATTACHMENT0, GL_TEXTURE_2D, p.target, 0));
      attached = p.target;
    }
    glViewport(p.x, p.y, tex.tex_cols, tex.tex_rows);
    glUniform4f(u_window, static_cast<float>(tex.col0), static_cast<float>(tex.row0), static_cast<float>(tex.col0 + tex.tex_cols * tex.pool),
                static_cast<float>(tex.row0 + tex.tex_rows * tex.pool));
    glUniform2i(u_origin, tex.col0, tex.row0);
    glActiveTexture(GL_TEXTURE0);
    glBindTexture(GL_TEXTURE_2D, tex.id);
    glActiveTexture(GL_TEXTURE1);
    glBindTexture(GL_TEXTURE_2D, luts_[st.diverging ? kNumColormaps : static_cast<int>(st.colormap)]);
    glActiveTexture(GL_TEXTURE0);
    glUniform2i(u_cells, tex.cols, tex.rows);
    glUniform1i(u_pool, tex.pool);
    glUniform1f(u_vmin, st.vmin);
    glUniform1f(u_vmax, st.vmax);
    glUniform1i(u_log, st.log_scale ? 1 : 0);
    glUniform1i(u_diverging, st.diverging ? 1 : 0);
    glUniform1i(u_mask, static_cast<int>(st.mask));
    glUniform1i(u_len, st.len);
    glUniform1i(u_slide, st.mask == MaskKind::None ? 0 : st.window);
    const CellFilter& cf = st.filter;
    glUniform2i(u_frows, cf.row0, cf.row1);
    glUniform2i(u_fcols, cf.col0, cf.col1);
    GLint hidden[CellFilter::kMaxHidden] = {};
    const int nh = std::min(static_cast<int>(cf.hidden.size()), CellFilter::kMaxHidden);
    for (int i = 0; i < nh; ++i) hidden[i] = cf.hidden[i];
    glUniform1iv(u_fhidden, CellFilter::kMaxHidden, hidden);
    glUniform1i(u_fn, nh);
    GL_CHECK(glDrawArrays(GL_TRIANGLE_STRIP, 0, 4));
  }
  pending_.clear();
  glBindFramebuffer(GL_FRAMEBUFFER, static_cast<GLuint>(prev_fbo));
  glViewport(prev_viewport[0], prev_viewport[1], prev_viewport[2], prev_viewport[3]);
  if (blend) glEnable(GL_BLEND);
  if (scissor) glEnable(GL_SCISSOR_TEST);
  glUseProgram(0);
  glBindVertexArray(0);
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
  if (!program_ || !m.data || m.rows <= 0 || m.cols <= 0) return false;
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
  if (!tex.valid() || !program_) return;
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
