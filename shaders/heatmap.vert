// heatmap.vert: one screen-aligned quad per heatmap, generated from gl_VertexID (no VBO).
#version 330 core

uniform vec4 u_rect;    // x0, y0, x1, y1 of the quad in normalised device coordinates
uniform vec4 u_window;  // the visible window in map cells: col0, row0, col1, row1

out vec2 v_cell;        // (column, row) in map cells, continuous

void main() {
  vec2 corner = vec2(float(gl_VertexID & 1), float(gl_VertexID >> 1));  // (0,0) (1,0) (0,1) (1,1)
  gl_Position = vec4(mix(u_rect.xy, u_rect.zw, corner), 0.0, 1.0);
  v_cell = mix(u_window.xy, u_window.zw, corner);
}
