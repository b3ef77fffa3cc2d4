// heatmap_renderer.cpp: shader set-up, texture uploads, and the draw-list callback.
#include "app/heatmap_renderer.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>

#include "app/assets.h"
#include "core/export.h"

namespace headmap {

void gl_check(const char* what, const char* file, int line) {
  for (GLenum e = glGetError(); e != GL_NO_ERROR; e = glGetError())
    std::fprintf(stderr, "headmap: GL error 0x%04x after %s (%s:%d)\n", e, what, file, line);
}

static Result<GLuint> compile(GLenum type, const std::string& path) {
  Result<std::string> src = read_file(path, 1 << 20);
  if (!src) return Error{ErrorKind::Io, "Cannot read the shader " + path + ": " + src.error().message};
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

static GLuint make_lut(const std::vector<uint8_t>& rgba) {
  GLuint t = 0;
  GL_CHECK(glGenTextures(1, &t));
  glBindTexture(GL_TEXTURE_2D, t);
  glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MIN_FILTER, GL_LINEAR);
  glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MAG_FILTER, GL_LINEAR);
  glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_WRAP_S, GL_CLAMP_TO_EDGE);
  glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_WRAP_T, GL_CLAMP_TO_EDGE);
  GL_CHECK(glTexImage2D(GL_TEXTURE_2D, 0, GL_RGBA8, static_cast<GLsizei>(rgba.size() / 4), 1, 0, GL_RGBA, GL_UNSIGNED_BYTE, rgba.data()));
  return t;
}

// Blue - white - red around zero, for signed matrices (Q, K, raw scores).
static std::vector<uint8_t> diverging_lut(int n) {
  std::vector<uint8_t> lut(static_cast<size_t>(n) * 4);
  const float blue[3] = {0.16f, 0.36f, 0.72f}, white[3] = {0.97f, 0.97f, 0.97f}, red[3] = {0.75f, 0.18f, 0.15f};
  for (int i = 0; i < n; ++i) {
    const float t = static_cast<float>(i) / (n - 1);
    const float* a = t < 0.5f ? blue : white;
    const float* b = t < 0.5f ? white : red;
    const float f = t < 0.5f ? t * 2 : (t - 0.5f) * 2;
    for (int k = 0; k < 3; ++k) lut[i * 4 + k] = static_cast<uint8_t>(std::lround((a[k] + f * (b[k] - a[k])) * 255));
    lut[i * 4 + 3] = 255;
  }
  return lut;
}

Status HeatmapRenderer::init() {
  Result<GLuint> prog = build_program(shaders_dir() + "/heatmap.vert", shaders_dir() + "/heatmap.frag");
  if (!prog) return prog.error();
  program_ = *prog;
  GL_CHECK(glGenVertexArrays(1, &vao_));
  for (int c = 0; c < kNumColormaps; ++c) luts_[c] = make_lut(colormap_lut(static_cast<Colormap>(c)));
  luts_[kNumColormaps] = make_lut(diverging_lut(256));
  return Status();
}

void HeatmapRenderer::shutdown() {
  for (auto& [k, c] : cache_) glDeleteTextures(1, &c.tex.id);
  cache_.clear();
  if (program_) glDeleteProgram(program_);
  if (vao_) glDeleteVertexArrays(1, &vao_);
  for (GLuint& t : luts_)
    if (t) glDeleteTextures(1, &t), t = 0;
  program_ = vao_ = 0;
}

void HeatmapRenderer::begin_frame() {
  jobs_.clear();
  ++frame_;
  uploads_ = 0;
  for (auto it = cache_.begin(); it != cache_.end();) {
    if (frame_ - it->second.last_used > 3) {  // not drawn for a few frames: free it
      bytes_ -= static_cast<size_t>(it->second.tex.rows / it->second.tex.pool + 1) *
                (it->second.tex.cols / it->second.tex.pool + 1) * 4;
      glDeleteTextures(1, &it->second.tex.id);
      it = cache_.erase(it);
    } else {
      ++it;
    }
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
  GL_CHECK(glGenTextures(1, &t.id));
  glBindTexture(GL_TEXTURE_2D, t.id);
  glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MIN_FILTER, GL_NEAREST);
  glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MAG_FILTER, GL_NEAREST);
  glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_WRAP_S, GL_CLAMP_TO_EDGE);
  glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_WRAP_T, GL_CLAMP_TO_EDGE);
  glPixelStorei(GL_UNPACK_ALIGNMENT, 4);
  glPixelStorei(GL_UNPACK_ROW_LENGTH, src_stride);
  GL_CHECK(glTexImage2D(GL_TEXTURE_2D, 0, GL_R32F, tc, tr, 0, GL_RED, GL_FLOAT, src));
  glPixelStorei(GL_UNPACK_ROW_LENGTH, 0);
  bytes_ += static_cast<size_t>(tr + 1) * (tc + 1) * 4;
  ++uploads_;
  Cached& c = cache_[key];
  c.owner = owner;
  c.tex = t;
  c.last_used = frame_;
  return c.tex;
}

void HeatmapRenderer::draw(ImDrawList* dl, ImVec2 p0, ImVec2 p1, const MapTexture& tex, const HeatmapStyle& style) {
  if (!tex.valid() || !program_) return;
  jobs_.push_back(Job{this, tex, style, p0, p1});
  dl->AddCallback(&HeatmapRenderer::callback, &jobs_.back());
  dl->AddCallback(ImDrawCallback_ResetRenderState, nullptr);
}

void HeatmapRenderer::callback(const ImDrawList*, const ImDrawCmd* cmd) {
  const Job* job = static_cast<const Job*>(cmd->UserCallbackData);
  job->self->execute(*job, cmd);
}

GLint HeatmapRenderer::loc(const char* name) const { return glGetUniformLocation(program_, name); }

void HeatmapRenderer::execute(const Job& job, const ImDrawCmd* cmd) {
  const ImDrawData* dd = ImGui::GetDrawData();
  const ImVec2 off = dd->DisplayPos, size = dd->DisplaySize, scale = dd->FramebufferScale;
  const float fb_h = size.y * scale.y;
  // Clip to the ImGui window that queued the draw.
  const ImVec4 c = cmd->ClipRect;
  glEnable(GL_SCISSOR_TEST);
  glScissor(static_cast<GLint>((c.x - off.x) * scale.x), static_cast<GLint>(fb_h - (c.w - off.y) * scale.y),
            static_cast<GLsizei>((c.z - c.x) * scale.x), static_cast<GLsizei>((c.w - c.y) * scale.y));
  const HeatmapStyle& s = job.style;
  auto ndc_x = [&](float x) { return (x - off.x) / size.x * 2.0f - 1.0f; };
  auto ndc_y = [&](float y) { return 1.0f - (y - off.y) / size.y * 2.0f; };
  const float col1 = s.col1 < 0 ? static_cast<float>(job.tex.cols) : s.col1;
  const float row1 = s.row1 < 0 ? static_cast<float>(job.tex.rows) : s.row1;
  GL_CHECK(glUseProgram(program_));
  glBindVertexArray(vao_);
  glUniform4f(loc("u_rect"), ndc_x(job.p0.x), ndc_y(job.p0.y), ndc_x(job.p1.x), ndc_y(job.p1.y));
  glUniform4f(loc("u_window"), s.col0, s.row0, col1, row1);
  glActiveTexture(GL_TEXTURE0);
  glBindTexture(GL_TEXTURE_2D, job.tex.id);
  glUniform1i(loc("u_map"), 0);
  glActiveTexture(GL_TEXTURE1);
  glBindTexture(GL_TEXTURE_2D, luts_[s.diverging ? kNumColormaps : static_cast<int>(s.colormap)]);
  glUniform1i(loc("u_lut"), 1);
  glActiveTexture(GL_TEXTURE0);
  glUniform2i(loc("u_cells"), job.tex.cols, job.tex.rows);
  glUniform1i(loc("u_pool"), job.tex.pool);
  glUniform1f(loc("u_vmin"), s.vmin);
  glUniform1f(loc("u_vmax"), s.vmax);
  glUniform1i(loc("u_log"), s.log_scale ? 1 : 0);
  glUniform1i(loc("u_diverging"), s.diverging ? 1 : 0);
  glUniform1i(loc("u_mask"), s.mask);
  glUniform1i(loc("u_len"), s.len);
  glUniform1i(loc("u_grid"), s.grid ? 1 : 0);
  glUniform1f(loc("u_px_per_cell"), (job.p1.x - job.p0.x) * scale.x / std::max(col1 - s.col0, 1e-6f));
  glUniform2i(loc("u_highlight"), s.hi_col, s.hi_row);
  glUniform3f(loc("u_hidden"), 0.42f, 0.42f, 0.45f);
  GL_CHECK(glDrawArrays(GL_TRIANGLE_STRIP, 0, 4));
}

}  // namespace headmap
