// heatmap_png.cpp: layout and drawing of the heads grid PNG.
#include "app/common/heatmap_png.h"

#include "core/memory_budget.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "app/common/assets.h"
#include "app/common/raster.h"
#include "core/model/attention.h"

namespace headmap {

namespace {
Rgb to_rgb(const std::array<float, 3>& c) {
  return Rgb{static_cast<uint8_t>(std::lround(c[0] * 255)), static_cast<uint8_t>(std::lround(c[1] * 255)),
             static_cast<uint8_t>(std::lround(c[2] * 255))};
}
const Rgb kBg{250, 250, 250}, kInk{25, 25, 30}, kMuted{110, 110, 120}, kGrid{255, 255, 255}, kHidden = to_rgb(kMaskedRgb);
}  // namespace

Status write_heads_png(const std::string& path, const ForwardOutput& out, const Batch& batch, const ModelConfig& cfg,
                       const std::vector<HeadMetrics>& metrics, const HeadsPngOptions& opt) {
  Result<Canvas> c = draw_heads_canvas(out, batch, cfg, metrics, opt);
  if (!c) return c.error();
  return c->save_png(path);
}

Result<Canvas> draw_heads_canvas(const ForwardOutput& out, const Batch& batch, const ModelConfig& cfg,
                                 const std::vector<HeadMetrics>& metrics, const HeadsPngOptions& opt) {
  if (batch.empty()) return Error{ErrorKind::InvalidArgument, "Nothing to draw: the text has no tokens."};
  if (opt.layer < 0 || opt.layer >= out.L || opt.batch < 0 || opt.batch >= out.B)
    return Error{ErrorKind::InvalidArgument, "Layer " + std::to_string(opt.layer) + " / sentence " + std::to_string(opt.batch) +
                                                 " is out of range (the model has " + std::to_string(out.L) + " layers and " +
                                                 std::to_string(out.B) + " sentences, numbered from 0: layers 0 to " +
                                                 std::to_string(out.L - 1) + ", sentences 0 to " + std::to_string(out.B - 1) + ")."};
  Font font;
  if (Status s = font.load(asset_path("fonts/DejaVuSans.ttf")); !s) return s.error();

  const int T = batch.lengths[opt.batch];  // draw only the real tokens of this sentence
  const int heads = out.Hw;
  const int cols = opt.cols > 0 ? std::min(opt.cols, heads)
                   : heads <= 4 ? heads : static_cast<int>(std::ceil(std::sqrt(static_cast<double>(heads))));
  const int rows = (heads + cols - 1) / cols;
  const int cell = std::clamp(static_cast<int>(std::lround(420.0 / T)), 1, 30);
  const bool labels = cell >= 9;
  const float label_px = std::clamp(cell * 0.8f, 9.0f, 15.0f);
  std::vector<std::string> toks;
  int label_w = 0;
  for (int t = 0; t < T; ++t) {
    toks.push_back(fit_drawn_text(font, token_display(batch.sentences[opt.batch].tokens[t]), label_px, 110));  // visual order, Arabic joined
    label_w = std::max(label_w, font.width(toks.back(), label_px));
  }
  const int margin = labels ? label_w + 8 : 4;
  const int map = cell * T;
  const int title_h = 26;
  const int panel_w = margin + map + 18, panel_h = title_h + map + margin + 10;
  const int header_h = 64, legend_h = 46;
  const int W = std::max(cols * panel_w + 20, 560), Hpx = header_h + rows * panel_h + legend_h;
  // The canvas, the encoder's filtered copy and the encoded bytes: about 3 times the
  // pixels' RGB, checked before anything is drawn (4,096 heads once asked for 4 GB).
  const uint64_t rgb_bytes = static_cast<uint64_t>(W) * static_cast<uint64_t>(Hpx) * 3;
  const std::string what = "The PNG of " + std::to_string(heads) + " heads (" + std::to_string(W) + " x " + std::to_string(Hpx) + " pixels)";
  const char* lower = "use fewer heads or a shorter sentence";
  if (rgb_bytes >= (uint64_t(1) << 31) - 1)
    return Error{ErrorKind::InvalidArgument, what + " is beyond what a PNG encoder holds (2 GiB of pixels): " + lower + "."};
  if (Status s = check_memory(3 * rgb_bytes, what, lower); !s) return s.error();
  Canvas c(W, Hpx, kBg);

  // Header: the sentence and the configuration.
  char cfgline[256];
  std::snprintf(cfgline, sizeof cfgline, "layer %d (of layers 0-%d)   d_model %d   %d heads (0-%d)   d_head %d   %s%s", opt.layer,
                out.L - 1, cfg.d_model, cfg.num_heads, cfg.num_heads - 1, cfg.d_head(), cfg.causal ? "causal" : "bidirectional", cfg.pitfalls.any() ? "   (pitfall on)" : "");
  std::string sentence;
  for (const Token& t : batch.sentences[opt.batch].tokens) sentence += (sentence.empty() ? "" : " ") + token_display(t);
  font.draw(c, 10, 24, fit_drawn_text(font, sentence, 18, W - 20), 18, kInk);
  font.draw(c, 10, 46, cfgline, 14, kMuted);
  if (!opt.subtitle.empty()) font.draw(c, 10, 62, fit_text(font, opt.subtitle, 12, W - 20), 12, kMuted);

  for (int h = 0; h < heads; ++h) {
    const int px = 10 + (h % cols) * panel_w, py = header_h + (h / cols) * panel_h;
    const float* w = out.weights(opt.layer, opt.batch, h);
    const size_t mi = (static_cast<size_t>(opt.layer) * out.B + opt.batch) * out.Hw + h;
    char title[160];
    if (cfg.pitfalls.head_averaged)
      std::snprintf(title, sizeof title, "mean of %d heads   entropy %.2f nats", cfg.num_heads, metrics[mi].entropy);
    else
      std::snprintf(title, sizeof title, "head %d   d_head %d   entropy %.2f nats", h, cfg.d_head(), metrics[mi].entropy);
    font.draw(c, px + margin, py + 18, title, 14, kInk);
    // The scale: the head's largest weight over rows that see more than one key (the first
    // row of a causal map is always [1, 0, ...]), as in the app.
    const MaskKind mask = mask_kind(cfg);
    const float mx = map_peak(w, out.T, T, mask);
    const int x0 = px + margin, y0 = py + title_h;
    if (opt.map_rects) opt.map_rects->push_back({x0, y0, x0 + map, y0 + map});
    for (int t = 0; t < T; ++t)
      for (int s = 0; s < T; ++s) {
        const float v = mx > 0 ? std::min(1.0f, w[static_cast<size_t>(t) * out.T + s] / mx) : 0.0f;
        const int hatch = window_hatch(mask, opt.window, t, s, T);  // outside a sliding window
        const std::array<float, 3> rgb = colormap_rgb(opt.colormap, v);
        const Rgb col = !mask_visible(mask, t, s, T) ? kHidden
                        : hatch >= 0                 ? to_rgb(kWindowRgb[hatch])
                                                     : to_rgb(filter_dims(opt.filter, t, s) ? filter_dim_rgb(rgb) : rgb);
        c.fill(x0 + s * cell, y0 + t * cell, x0 + (s + 1) * cell, y0 + (t + 1) * cell, col);
      }
    if (cell >= 6) {  // token grid lines
      for (int k = 1; k < T; ++k) {
        c.fill(x0 + k * cell, y0, x0 + k * cell + 1, y0 + map, kGrid);
        c.fill(x0, y0 + k * cell, x0 + map, y0 + k * cell + 1, kGrid);
      }
    }
    if (labels) {
      for (int t = 0; t < T; ++t) {  // queries down the left, keys along the bottom
        const int tw = font.width(toks[t], label_px);
        font.draw(c, x0 - 4 - tw, y0 + t * cell + cell / 2 + static_cast<int>(label_px * 0.35f), toks[t], label_px, kInk);
        font.draw(c, x0 + t * cell + cell / 2 - static_cast<int>(label_px * 0.35f), y0 + map + 4 + tw, toks[t], label_px, kInk, true);
      }
    }
  }

  // Legend: the colour scale.
  const int ly = Hpx - legend_h + 8, lx = 10, lw = 260;
  for (int x = 0; x < lw; ++x) c.fill(lx + x, ly, lx + x + 1, ly + 14, to_rgb(colormap_rgb(opt.colormap, x / static_cast<float>(lw - 1))));
  font.draw(c, lx, ly + 30, "0", 12, kMuted);
  font.draw(c, lx + lw - 60, ly + 30, "head max", 12, kMuted);
  font.draw(c, lx + lw + 14, ly + 12, heads_png_caption(mask_kind(cfg), opt.window, opt.filter.active()), 12, kMuted);
  return c;
}

std::string heads_png_caption(MaskKind mask, int window, bool filtered) {
  const bool masks = mask_greys_cells(mask);
  return std::string("colour = attention weight / the head's largest weight") + (mask == MaskKind::Causal ? " (first causal row left out)" : "") +
         ";  rows = queries, columns = keys" + (masks ? ";  grey = masked" : "") + (window > 0 ? ";  hatched = outside the window" : "") +
         (filtered ? ";  dimmed = filtered out (rows not renormalised)" : "");
}

Status write_figure_png(const std::string& path, const Figure& f) {
  Font font;
  if (Status s = load_figure_font(font); !s) return s;
  Result<FigureLayout> lay = layout_figure(f, font);
  if (!lay) return lay.error();
  const FigureLayout& L = *lay;
  // The canvas, the encoder's filtered copy and the encoded bytes: about 3 times the RGB.
  const uint64_t rgb_bytes = static_cast<uint64_t>(L.width) * static_cast<uint64_t>(L.height) * 3;
  const std::string what = "The PNG figure (" + std::to_string(L.width) + " x " + std::to_string(L.height) + " pixels)";
  if (rgb_bytes >= (uint64_t(1) << 31) - 1)
    return Error{ErrorKind::InvalidArgument, what + " is beyond what a PNG encoder holds (2 GiB of pixels): use a shorter sentence or the SVG."};
  if (Status s = check_memory(3 * rgb_bytes, what, "use a shorter sentence"); !s) return s;
  return figure_canvas(f, L, font).save_png(path);
}

Canvas figure_canvas(const Figure& f, const FigureLayout& L, const Font& font) {
  Canvas c(L.width, L.height, kFigureBg);
  const int len = f.len();
  for (size_t i = 0; i < f.maps.size(); ++i) {
    const int x0 = L.origins[i][0], y0 = L.origins[i][1];
    for (int t = 0; t < len; ++t)
      for (int s = 0; s < len; ++s)
        c.fill(x0 + s * L.cell, y0 + t * L.cell, x0 + (s + 1) * L.cell, y0 + (t + 1) * L.cell, figure_cell_rgb(f, f.maps[i], t, s));
  }
  for (int x = 0; x < L.bar_w; ++x)
    c.fill(L.bar_x + x, L.bar_y, L.bar_x + x + 1, L.bar_y + L.bar_h, to_rgb8(colormap_rgb(f.colormap, x / static_cast<float>(std::max(1, L.bar_w - 1)))));
  for (const FigureText& t : L.texts) {
    const int w = font.width(t.text, t.px);
    const float shift = t.anchor == FigureText::Start ? 0.0f : t.anchor == FigureText::Middle ? w / 2.0f : static_cast<float>(w);
    const int x = static_cast<int>(std::lround(t.vertical ? t.x : t.x - shift));
    const int y = static_cast<int>(std::lround(t.vertical ? t.y + shift : t.y));  // vertical text reads upwards from its start
    font.draw(c, x, y, t.text, t.px, figure_text_rgb(t.role), t.vertical);
  }
  return c;
}

}  // namespace headmap
