// heatmap.frag: colours one cell of an attention map (or of any step-through matrix).
//
// The map is a float texture, one texel per cell, or per block of cells max-pooled for long
// sequences (core/inspect/map_levels.h), or a tile of either. Colours come from a 256-entry lookup texture. Cells the attention mask
// hides are drawn in a neutral grey, so the mask itself is visible. The result is cached
// in a colour texture and redrawn only when the map or its scale changes.
#version 330 core

in vec2 v_cell;

uniform sampler2D u_map;     // R32F: texel (x, y) = (column / pool, row / pool)
uniform sampler2D u_lut;     // 256 x 1 RGBA8 colormap
uniform ivec2 u_cells;       // map size in cells: (columns, rows)
uniform int u_pool;          // cells per texel along each axis (1 = full resolution)
uniform ivec2 u_origin;      // the cell at texel (0, 0): (0, 0), or where a tile of a zoomed map starts
uniform float u_vmin;        // value drawn at the bottom of the colour scale
uniform float u_vmax;        // value drawn at the top
uniform int u_log;           // 1: logarithmic scale over [u_vmax * 1e-4, u_vmax]
uniform int u_diverging;     // 1: signed data, 0 in the middle of the scale
uniform int u_mask;          // the core's MaskKind (core/model/attention.h); MASK_* are defined from it by the renderer
uniform int u_len;           // real tokens; rows and columns beyond are padding
uniform vec3 u_hidden;       // colour of hidden cells
uniform int u_slide;         // a local layer's sliding window W (0 = none): keys W or more back are hatched
uniform vec3 u_hatch0;       // the hatch's two greys (kWindowRgb): dark on every third anti-diagonal
uniform vec3 u_hatch1;
// The A/B filter and hidden special tokens (CellFilter of app/common/heatmap_figure.h):
// query rows [u_frows.x, u_frows.y) and key columns [u_fcols.x, u_fcols.y) are shown, minus
// the rows and columns of the u_fn tokens in u_fhidden; other cells are dimmed toward
// u_filtered by u_fdim (filter_dims, filter_dim_rgb), never re-normalised.
uniform ivec2 u_frows;
uniform ivec2 u_fcols;
uniform int u_fhidden[16];
uniform int u_fn;
uniform vec3 u_filtered;
uniform float u_fdim;

out vec4 frag;

// mask_visible() of core/model/attention.h, in GLSL; a GUI test holds the two to the same pixels.
bool visible(ivec2 cell) {
  int t = cell.y, s = cell.x;  // query row t, key column s
  if (u_mask == MASK_NONE) return true;
  if (t >= u_len || s >= u_len) return false;
  if (u_mask == MASK_CAUSAL) return s <= t;
  if (u_mask == MASK_REVERSED) return s > t;
  return true;  // MASK_PADDING_ONLY
}

// A pooled texel is drawn when any cell of its block [lo, hi] is visible (its max is theirs).
bool any_visible(ivec2 lo, ivec2 hi) {
  if (u_mask == MASK_NONE) return true;
  if (lo.y >= u_len || lo.x >= u_len) return false;
  int t_hi = min(hi.y, u_len - 1), s_hi = min(hi.x, u_len - 1);
  if (u_mask == MASK_CAUSAL) return lo.x <= t_hi;      // some key s <= some query t
  if (u_mask == MASK_REVERSED) return s_hi > lo.y;     // some key s > some query t
  return true;
}

// window_hatch() of app/common/heatmap_figure.h, in GLSL: -1, or which grey of the hatch.
// A pooled texel is hatched when every cell of its block [lo, hi] is outside the window.
int hatch(ivec2 lo, ivec2 hi) {
  if (u_slide <= 0 || u_mask == MASK_NONE || lo.y - hi.x < u_slide) return -1;
  return (lo.y + lo.x) % 3 == 0 ? 1 : 0;
}

// filter_dims() in GLSL; a pooled texel goes by its first cell.
bool dims(ivec2 cell) {
  int t = cell.y, s = cell.x;
  if (t < u_frows.x || t >= u_frows.y || s < u_fcols.x || s >= u_fcols.y) return true;
  for (int i = 0; i < 16; ++i) {
    if (i >= u_fn) break;
    if (u_fhidden[i] == t || u_fhidden[i] == s) return true;
  }
  return false;
}

void main() {
  ivec2 cell = clamp(ivec2(floor(v_cell)), ivec2(0), u_cells - 1);
  ivec2 texel = (cell - u_origin) / u_pool;
  ivec2 lo = u_origin + texel * u_pool;
  if (u_pool == 1 ? !visible(cell) : !any_visible(lo, min(lo + u_pool - 1, u_cells - 1))) {
    frag = vec4(u_hidden, 1.0);
    return;
  }
  int h = u_pool == 1 ? hatch(cell, cell) : hatch(lo, min(lo + u_pool - 1, u_cells - 1));
  if (h >= 0) {
    frag = vec4(h == 0 ? u_hatch0 : u_hatch1, 1.0);
    return;
  }
  float w = texelFetch(u_map, texel, 0).r;
  float t;
  if (u_diverging == 1) {
    float m = max(max(abs(u_vmin), abs(u_vmax)), 1e-20);
    t = 0.5 + 0.5 * w / m;
  } else if (u_log == 1) {
    float lo = max(u_vmax * 1e-4, 1e-30);
    t = (log(max(w, lo)) - log(lo)) / max(log(max(u_vmax, lo * 1.0001)) - log(lo), 1e-6);
  } else {
    t = (w - u_vmin) / max(u_vmax - u_vmin, 1e-20);
  }
  vec3 c = texture(u_lut, vec2(clamp(t, 0.0, 1.0) * (255.0 / 256.0) + 0.5 / 256.0, 0.5)).rgb;
  if (dims(u_pool == 1 ? cell : lo)) c = c + (u_filtered - c) * u_fdim;
  frag = vec4(c, 1.0);
}
