// heatmap.vert: a full-target quad generated from gl_VertexID (no VBO). The target is the
// colour texture of one map, one texel per cell (or per pooled block of cells).
#version 330 core

uniform vec4 u_window;  // the map in cells: col0, row0, col1, row1

out vec2 v_cell;        // (column, row) in map cells, continuous

void main() {
  vec2 corner = vec2(float(gl_VertexID & 1), float(gl_VertexID >> 1));  // (0,0) (1,0) (0,1) (1,1)
  gl_Position = vec4(corner * 2.0 - 1.0, 0.0, 1.0);
  // Texel row r of the target holds map row r, so Dear ImGui's uv (0, 0) is the map's top left.
  v_cell = mix(u_window.xy, u_window.zw, corner);
}
