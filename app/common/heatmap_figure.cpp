// heatmap_figure.cpp: what a figure shows, its colours and label rules, and its layout.
#include "app/common/heatmap_figure.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "app/common/assets.h"

namespace headmap {

// ---- what a figure shows ---------------------------------------------------------------
namespace {
const char* kDot = "  \xC2\xB7  ";  // " · "

Status check_input(const FigureInput& in) {
  if (!in.out || !in.cfg || in.tokens.empty()) return Error{ErrorKind::InvalidArgument, "Nothing to draw: the text has no tokens."};
  if (in.layer < 0 || in.layer >= in.out->L || in.batch < 0 || in.batch >= in.out->B)
    return Error{ErrorKind::InvalidArgument, "Layer " + std::to_string(in.layer) + " / sentence " + std::to_string(in.batch) +
                                                 " is out of range (the model has " + std::to_string(in.out->L) + " layers and " +
                                                 std::to_string(in.out->B) + " sentences)."};
  if (static_cast<int>(in.tokens.size()) > in.out->T) return Error{ErrorKind::InvalidArgument, "More token labels than the maps have rows."};
  return Status();
}

FigureMap map_of(const FigureInput& in, int h) {
  FigureMap m;
  m.weights = in.out->weights(in.layer, in.batch, h);
  m.stride = in.out->T;
  if (in.range) {
    in.range(h, &m.vmin, &m.vmax);
  } else {
    const float peak = map_peak(m.weights, in.out->T, static_cast<int>(in.tokens.size()), in.mask);
    m.vmax = peak > 0 ? peak : 1.0f;
  }
  return m;
}

const HeadMetrics* metrics_of(const FigureInput& in, int h) {
  const size_t i = (static_cast<size_t>(in.layer) * in.out->B + in.batch) * in.out->Hw + h;
  return in.metrics && i < in.metrics->size() ? &(*in.metrics)[i] : nullptr;
}

std::string head_name(const FigureInput& in, int h) {
  if (in.cfg->pitfalls.head_averaged) return "mean of " + std::to_string(in.cfg->num_heads) + " heads";
  std::string name = "head " + std::to_string(h);
  if (h < static_cast<int>(in.head_labels.size()) && !in.head_labels[h].empty()) name += kDot + in.head_labels[h];
  if (in.off.count(h)) name += kDot + std::string("off");
  return name;
}

Figure base_figure(const FigureInput& in) {
  Figure f;
  f.tokens = in.tokens;
  f.colormap = in.colormap;
  f.mask = in.mask;
  f.window = in.window;
  f.filter = in.filter;
  f.log_scale = in.log_scale;
  f.caption = "colour: attention weight, scale " + in.scale + (in.log_scale ? " (log)" : "") +
              ".  Rows: queries; columns: keys" + (mask_greys_cells(in.mask) ? "; grey: masked" : "") + (in.window > 0 ? "; hatched: outside the window" : "") +
              (in.filter.active() ? "; dimmed: filtered out (rows not renormalised)." : ".");
  return f;
}

std::string config_line(const FigureInput& in) {
  const ModelConfig& c = *in.cfg;
  std::string s = "d_model " + std::to_string(c.d_model) + kDot + std::to_string(c.num_heads) + " heads" + kDot + "d_head " +
                  std::to_string(c.d_head()) + kDot + (c.causal ? "causal" : "bidirectional");
  if (c.pitfalls.any()) s += kDot + std::string("pitfall on");
  if (!in.source.empty()) s += kDot + std::string("weights: ") + in.source;
  return s;
}
}  // namespace

Result<Figure> head_figure(const FigureInput& in, int head) {
  if (Status s = check_input(in); !s) return s.error();
  if (head < 0 || head >= in.out->Hw)
    return Error{ErrorKind::InvalidArgument, "Head " + std::to_string(head) + " is out of range (the layer has " + std::to_string(in.out->Hw) + ")."};
  Figure f = base_figure(in);
  f.title = "layer " + std::to_string(in.layer) + kDot + head_name(in, head);
  if (in.window > 0) f.title += kDot + window_words(in.window);
  f.subtitle = config_line(in);
  if (const HeadMetrics* m = metrics_of(in, head)) {
    char e[64];
    std::snprintf(e, sizeof e, "%sentropy %.2f nats", kDot, m->entropy);
    f.subtitle += e;
  }
  f.maps.push_back(map_of(in, head));
  return f;
}

Result<Figure> heads_figure(const FigureInput& in) {
  if (Status s = check_input(in); !s) return s.error();
  Figure f = base_figure(in);
  f.title = "layer " + std::to_string(in.layer) + " (of 0-" + std::to_string(in.cfg->num_layers - 1) + ")" + kDot + std::to_string(in.out->Hw) +
            (in.out->Hw == 1 ? " head" : " heads") + (in.window > 0 ? kDot + window_words(in.window) : "");
  f.subtitle = config_line(in);
  for (int h = 0; h < in.out->Hw; ++h) {
    FigureMap m = map_of(in, h);
    m.title = head_name(in, h);
    if (const HeadMetrics* hm = metrics_of(in, h)) {
      char e[48];
      std::snprintf(e, sizeof e, "%s%.2f nats", kDot, hm->entropy);
      m.title += e;
    }
    f.maps.push_back(std::move(m));
  }
  return f;
}

// ---- the shared rules ------------------------------------------------------------------
float colour_position(float w, float vmin, float vmax, bool log_scale) {
  float t;
  if (log_scale) {
    const float lo = std::max(vmax * 1e-4f, 1e-30f);
    t = (std::log(std::max(w, lo)) - std::log(lo)) / std::max(std::log(std::max(vmax, lo * 1.0001f)) - std::log(lo), 1e-6f);
  } else {
    t = (w - vmin) / std::max(vmax - vmin, 1e-20f);
  }
  return std::isfinite(t) ? std::clamp(t, 0.0f, 1.0f) : 0.0f;
}

const char* pair_filter_name(PairFilter p) {
  switch (p) {
    case PairFilter::AA: return "aa";
    case PairFilter::AB: return "ab";
    case PairFilter::BA: return "ba";
    case PairFilter::BB: return "bb";
    default: return "all";
  }
}
const char* pair_filter_label(PairFilter p) {
  switch (p) {
    case PairFilter::AA: return "A\xE2\x86\x92" "A";
    case PairFilter::AB: return "A\xE2\x86\x92" "B";
    case PairFilter::BA: return "B\xE2\x86\x92" "A";
    case PairFilter::BB: return "B\xE2\x86\x92" "B";
    default: return "all";
  }
}
bool parse_pair_filter(const std::string& name, PairFilter* out) {
  for (PairFilter p : {PairFilter::All, PairFilter::AA, PairFilter::AB, PairFilter::BA, PairFilter::BB})
    if (name == pair_filter_name(p)) {
      *out = p;
      return true;
    }
  return false;
}

std::string CellFilter::key() const {
  std::string k = std::to_string(row0) + "," + std::to_string(row1) + "," + std::to_string(col0) + "," + std::to_string(col1);
  for (int h : hidden) k += "," + std::to_string(h);
  return k;
}

CellFilter cell_filter(const std::vector<Token>& tokens, int len, PairFilter pf, bool hide_specials) {
  CellFilter f;
  len = std::min(len, static_cast<int>(tokens.size()));
  // A sentence's tokens are contiguous: A first, then B ([CLS] and A's [SEP] in A).
  int lo[2] = {len, len}, hi[2] = {0, 0};
  for (int t = 0; t < len; ++t) {
    const int g = tokens[t].segment == 1 ? 1 : 0;
    lo[g] = std::min(lo[g], t);
    hi[g] = std::max(hi[g], t + 1);
  }
  if (pf != PairFilter::All && hi[1] > 0) {  // a pair
    const int q = pf == PairFilter::BA || pf == PairFilter::BB ? 1 : 0, k = pf == PairFilter::AB || pf == PairFilter::BB ? 1 : 0;
    f.row0 = lo[q], f.row1 = hi[q], f.col0 = lo[k], f.col1 = hi[k];
  }
  if (hide_specials)
    for (int t = 0; t < len && static_cast<int>(f.hidden.size()) < CellFilter::kMaxHidden; ++t)
      if (tokens[t].added || (tokens[t].special && tokens[t].text != "[MASK]" && tokens[t].text != "<mask>" && tokens[t].text != "[UNK]" &&
                              tokens[t].text != "<unk>"))  // [CLS], [SEP], <s>, </s>; a typed [MASK] is the question, not a sink
        f.hidden.push_back(t);
  return f;
}

Rgb to_rgb8(const std::array<float, 3>& c) {
  return Rgb{static_cast<uint8_t>(std::lround(c[0] * 255)), static_cast<uint8_t>(std::lround(c[1] * 255)),
             static_cast<uint8_t>(std::lround(c[2] * 255))};
}

Rgb figure_cell_rgb(const Figure& f, const FigureMap& m, int t, int s) {
  if (!mask_visible(f.mask, t, s, f.len())) return to_rgb8(kMaskedRgb);
  if (const int h = window_hatch(f.mask, f.window, t, s, f.len()); h >= 0) return to_rgb8(kWindowRgb[h]);
  const float w = m.weights[static_cast<size_t>(t) * m.stride + s];
  const std::array<float, 3> c = colormap_rgb(f.colormap, colour_position(w, m.vmin, m.vmax, f.log_scale));
  return to_rgb8(filter_dims(f.filter, t, s) ? filter_dim_rgb(c) : c);
}

AxisTicks axis_ticks(float v0, float v1, int n, float cell, float text_h) {
  AxisTicks a;
  const float need = text_h / std::max(cell, 1e-6f);  // cells one label covers
  // 1, 2, 3, 4, 5, then 10, 20, 50, 100, ...: a sentence of 32 tokens that cannot label
  // every 2nd row labels every 3rd, not every 5th.
  int step = 1;
  for (int m : {2, 3, 4, 5})
    if (step < need) step = m;
  for (int mag = 10; step < need && mag <= (1 << 28); mag *= 10)
    for (int m : {1, 2, 5})
      if (step < need) step = m * mag;
  a.step = step;
  a.first = (std::max(0, static_cast<int>(std::floor(v0))) + step - 1) / step * step;
  a.end = std::min(n, static_cast<int>(std::ceil(v1)));
  return a;
}

std::vector<double> round_ticks(double lo, double hi, int most) {
  std::vector<double> out;
  if (!(hi > lo) || most < 2 || !std::isfinite(lo) || !std::isfinite(hi)) return out;
  // The step: 1, 2, 2.5 or 5 times a power of ten, the smallest that gives at most `most` ticks.
  const double raw = (hi - lo) / (most - 1), p = std::pow(10.0, std::floor(std::log10(raw)));
  double step = 10 * p;
  for (const double m : {1.0, 2.0, 2.5, 5.0})
    if (m * p >= raw * (1 - 1e-9)) {
      step = m * p;
      break;
    }
  const double eps = step * 1e-6;  // a value a float's rounding put just outside the range still counts
  for (double k = std::ceil((lo - eps) / step); k * step <= hi + eps; k += 1) out.push_back(std::abs(k * step) < eps ? 0.0 : k * step);
  return out;
}

Status load_figure_font(Font& font) { return font.load(asset_path("fonts/DejaVuSans.ttf")); }

// ---- the layout ------------------------------------------------------------------------
namespace {
std::string number(float v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.3g", v);
  return b;
}
}  // namespace

Result<FigureLayout> layout_figure(const Figure& f, const Font& font) {
  const int len = f.len();
  if (len <= 0 || f.maps.empty()) return Error{ErrorKind::InvalidArgument, "Nothing to draw: the text has no tokens."};
  const bool single = f.maps.size() == 1;
  const int n = static_cast<int>(f.maps.size());
  FigureLayout L;
  L.em_per_px = font.em_size(100.0f) / 100.0f;
  const int pad = 16, gap = 28;
  const float title_px = single ? 22.0f : 20.0f, sub_px = 13.0f, map_title_px = 14.0f, tick_px = 12.0f;
  // A single head large (about 720 pixels), a grid's maps about 360; whole pixels per cell.
  L.cell = std::clamp(static_cast<int>(std::lround((single ? 720.0 : 360.0) / len)), 1, single ? 64 : 30);
  L.map = L.cell * len;
  const float label_px = std::clamp(L.cell * 0.7f, single ? 9.0f : 8.0f, single ? 16.0f : 13.0f);
  const int k = axis_ticks(0.0f, static_cast<float>(len), len, static_cast<float>(L.cell), label_px * 1.2f).step;
  const int label_max = single ? 180 : 120;
  // Each label: the token, and by the map its position number where the tick carries one
  // (tick_numbered, as in the app), so that a long text's thinned ticks can be found.
  std::vector<std::string> shown(len), numbers(len);
  const int num_gap = static_cast<int>(std::ceil(label_px * 0.4f));
  int label_w = 0;
  for (int t = 0; t < len; t += k) {
    L.labelled.push_back(t);
    shown[t] = fit_drawn_text(font, f.tokens[t], label_px, label_max);  // visual order, Arabic joined (bidi.h)
    if (tick_numbered(t, k)) numbers[t] = std::to_string(t);
    label_w = std::max(label_w, font.width(shown[t], label_px) + (numbers[t].empty() ? 0 : num_gap + font.width(numbers[t], label_px)));
  }
  const int margin = label_w + 8;  // room for the row labels (left) and the column labels (below)

  const int cols = single ? 1 : n <= 4 ? n : static_cast<int>(std::ceil(std::sqrt(static_cast<double>(n))));
  const int rows = (n + cols - 1) / cols;
  const int header_h = pad + static_cast<int>(title_px) + 10 + (f.subtitle.empty() ? 0 : 20) + 8;
  const int map_title_h = single ? 0 : 22;
  const int panel_w = margin + L.map, panel_h = map_title_h + L.map + margin;
  const int grid_w = cols * panel_w + (cols - 1) * gap, grid_h = rows * panel_h + (rows - 1) * gap;
  for (int i = 0; i < n; ++i)
    L.origins.push_back({pad + (i % cols) * (panel_w + gap) + margin, header_h + (i / cols) * (panel_h + gap) + map_title_h});

  // The colour bar under the grid, then the caption beside it.
  L.bar_x = pad + margin;
  L.bar_y = header_h + grid_h + 14;
  L.bar_w = std::clamp(L.map, 200, 360);
  L.bar_h = 14;
  L.width = std::max(pad + grid_w + pad, 640);
  L.height = L.bar_y + L.bar_h + 20 + 20 + pad;  // the ticks, then the caption

  auto text = [&](std::string s, float x, float y, float px, FigureText::Anchor a, FigureText::Role r, bool vertical = false) {
    FigureText t;
    t.text = std::move(s);
    t.x = x;
    t.y = y;
    t.px = px;
    t.anchor = a;
    t.role = r;
    t.vertical = vertical;
    L.texts.push_back(std::move(t));
  };
  const int room = L.width - 2 * pad;
  text(fit_text(font, f.title, title_px, room), pad, pad + title_px, title_px, FigureText::Start, FigureText::Title);
  if (!f.subtitle.empty())
    text(fit_text(font, f.subtitle, sub_px, room), pad, pad + title_px + 10 + sub_px + 4, sub_px, FigureText::Start, FigureText::Subtitle);
  for (int i = 0; i < n; ++i) {
    const float x0 = static_cast<float>(L.origins[i][0]), y0 = static_cast<float>(L.origins[i][1]);
    if (!single) text(fit_text(font, f.maps[i].title, map_title_px, L.map + margin / 2), x0, y0 - 7, map_title_px, FigureText::Start, FigureText::MapTitle);
    for (int t : L.labelled) {  // queries down the left, keys along the bottom (reading upwards)
      const float mid = (t + 0.5f) * L.cell;
      const float nw = numbers[t].empty() ? 0.0f : static_cast<float>(font.width(numbers[t], label_px) + num_gap);
      text(shown[t], x0 - 5 - nw, y0 + mid + label_px * 0.35f, label_px, FigureText::End, FigureText::RowLabel);
      text(shown[t], x0 + mid + label_px * 0.35f, y0 + L.map + 5 + nw, label_px, FigureText::End, FigureText::ColumnLabel, true);
      if (!numbers[t].empty()) {
        text(numbers[t], x0 - 5, y0 + mid + label_px * 0.35f, label_px, FigureText::End, FigureText::Position);
        text(numbers[t], x0 + mid + label_px * 0.35f, y0 + L.map + 5, label_px, FigureText::End, FigureText::Position, true);
      }
    }
  }
  // The bar's ticks: five values when every map shares the scale, else "0" and "head max".
  bool shared = true;
  for (const FigureMap& m : f.maps) shared = shared && m.vmin == f.maps[0].vmin && m.vmax == f.maps[0].vmax;
  const float tick_y = L.bar_y + L.bar_h + 15;
  if (shared && !f.log_scale && f.maps[0].vmax > f.maps[0].vmin) {
    // Round values (0, 0.25, 0.5, 0.75 on a scale to 0.999), each where it falls on the bar.
    const float lo = f.maps[0].vmin, hi = f.maps[0].vmax;
    for (const double v : round_ticks(lo, hi, 5)) {
      const float q = static_cast<float>((v - lo) / (hi - lo));
      text(number(static_cast<float>(v)), L.bar_x + q * L.bar_w, tick_y, tick_px,
           q < 0.05f ? FigureText::Start : q > 0.95f ? FigureText::End : FigureText::Middle, FigureText::Tick);
    }
  } else if (shared) {
    const float hi = f.maps[0].vmax, llo = std::max(hi * 1e-4f, 1e-30f);
    for (int i = 0; i <= 4; ++i) {
      const float q = i / 4.0f;
      text(number(llo * std::pow(hi / llo, q)), L.bar_x + q * L.bar_w, tick_y, tick_px,
           i == 0 ? FigureText::Start : i == 4 ? FigureText::End : FigureText::Middle, FigureText::Tick);
    }
  } else {
    text(!f.bar_lo.empty() ? f.bar_lo : f.log_scale ? "head max \xC3\x97 1e-4" : "0", L.bar_x, tick_y, tick_px, FigureText::Start, FigureText::Tick);
    text(!f.bar_hi.empty() ? f.bar_hi : "head max", L.bar_x + L.bar_w, tick_y, tick_px, FigureText::End, FigureText::Tick);
  }
  text(fit_text(font, f.caption, tick_px, room), pad, tick_y + 20, tick_px, FigureText::Start, FigureText::Caption);
  return L;
}

}  // namespace headmap
