// headmap-cli: the core from the shell. Run the model on text and print, or export,
// the passport, the per-head metrics and the attention weights.
//
// Exit status: 0 success, 1 a file could not be read or written, 2 bad arguments.
#include <chrono>
#include <cmath>
#include <CLI/CLI.hpp>
#include <cstdio>
#include <iostream>
#include <omp.h>

#include "app/common/print_message.h"
#include "app/cli/cli_contrib.h"
#include "app/common/assets.h"
#include "app/common/colormap.h"
#include "app/common/heatmap_png.h"
#include "app/common/heatmap_svg.h"
#include "app/common/model_options.h"
#include "core/io/export.h"
#include "core/inspect/metrics.h"
#include "core/model/model.h"
#include "core/inspect/passport.h"
#include "core/inspect/precision.h"
#include "core/inspect/predictions.h"
#include "core/memory_budget.h"

using namespace headmap;

namespace headmap {
// app/cli/cli_train.cpp: `train`, `make-corpus` and `evaluate`; -1 when argv[1] is none of them.
int run_cli_subcommand(int argc, char** argv);
// app/cli/cli_lesson.cpp: `lesson-export`, a lesson's steps as slides.
int run_lesson_export(int argc, char** argv);
}  // namespace headmap

namespace {

struct Outputs {
  bool passport = false;
  std::string json, npy, png, svg;
  bool with_weights = false;
  int layer = 0, batch = 0;
  std::string colormap = "viridis";
  int threads = 0;
  int top_k = 0;
  std::vector<std::string> pairs;  // encoders: sentence B of the i-th sentence
  std::vector<std::string> masks;  // encoders: "S:T", token T of sentence S replaced by [MASK]
  std::string pair_filter = "all";  // encoders, a pair: the A/B filter of --png and --svg (cell_filter)
  bool hide_specials = false;       // dim [CLS], [SEP], <s>, </s> in --png and --svg
  bool bf16_products = false;       // the faster pass (packed_gemm.h, Bf16Products), and its difference from F32
  bool int8_products = false;       // the same with 8-bit products on Q4_K, Q5_K, Q6_K, Q8_0 weights (int8_products.h)
};

int fail(const Error& e, int code) {
  print_message("headmap-cli", e.message);
  return code;
}

void print_summary(const Batch& batch, const ForwardOutput& out, const std::vector<HeadMetrics>& m,
                   const std::vector<float>& induction, const std::vector<float>& text_induction, const std::string& source,
                   bool causal, bool encoder, bool mlm_head) {
  std::printf("weights: %s\n", source.c_str());
  for (int b = 0; b < batch.B(); ++b) {
    std::printf("sentence %d (%d tokens):", b, batch.lengths[b]);
    for (const Token& t : batch.sentences[b].tokens) std::printf(encoder && t.segment > 0 ? " [%s]B" : " [%s]", token_display(t).c_str());
    std::printf("\n");
  }
  if (encoder)
    std::printf("encoder: no causal mask (every token sees every real token; padding keys hidden)%s\n",
                mlm_head ? "" : "; no masked-LM head, so no [MASK] predictions or loss");
  if (out.loss_tokens > 0 && encoder)
    std::printf("masked-token loss: %.3f nats/token (cross-entropy of the %d masked tokens' own ids)\n", out.loss, out.loss_tokens);
  else if (out.loss_tokens > 0) std::printf("loss on the text: %.3f nats/token (next-token cross-entropy over %d tokens)\n", out.loss, out.loss_tokens);
  if (out.loss_tokens > 0 && !causal && !encoder) std::printf("  note: %s\n", kCausalOffLossNote);
  std::printf("\nlayers, sentences and heads are numbered from 0 (layer 0 of %d is the first):\n", out.L);
  std::printf("%-5s %-5s %-4s %8s %8s %8s %8s %8s %8s %9s  %s\n", "layer", "sent", "head", "entropy", "ent/max", "prev",
              "first", "self", "max_w", "induction", "label");
  size_t i = 0;
  for (int l = 0; l < out.L; ++l)
    for (int b = 0; b < out.B; ++b)
      for (int h = 0; h < out.Hw; ++h, ++i) {
        const float ind = (out.Hw == out.H && !induction.empty()) ? induction[static_cast<size_t>(l) * out.H + h] : 0.0f;
        std::printf("%-5d %-5d %-4d %8.3f %8.3f %8.3f %8.3f %8.3f %8.3f %9.3f  %s\n", l, b, h, m[i].entropy, m[i].entropy_norm,
                    m[i].prev_token, m[i].first_token, m[i].self, m[i].max_weight, ind,
                    head_label_name(head_label(m[i], label_induction(ind, i < text_induction.size() ? text_induction[i] : NAN))));
      }
  const HeadMetricInfo& ind = head_metric_info(HeadMetric::InductionProbe);  // the one name (metrics.h), as the app and the JSON give it
  std::printf("induction = %s: %s\n", ind.name, ind.definition);
}

}  // namespace

static int run_main(int argc, char** argv) {
  if (const int rc = run_cli_subcommand(argc, argv); rc >= 0) return rc;
  if (argc >= 2 && std::string(argv[1]) == "lesson-export") return run_lesson_export(argc - 1, argv + 1);
  CLI::App app{"headmap-cli: run a small transformer on text and show what every attention head does"};
  app.footer("Training: headmap-cli train --help, headmap-cli make-corpus --help, headmap-cli evaluate --help\n"
             "Tokenizers: headmap-cli tokenize --help\nSlides: headmap-cli lesson-export --help");
  app.set_version_flag("--version", [] { return version_text("headmap-cli"); }, "print the version and the data directory in use, and exit");
  ModelOptions mo;
  Outputs o;
  add_model_options(app, mo);
  ContribOptions co;
  app.add_flag("--passport", o.passport, "print the shape passport as a table");
  app.add_option("--json", o.json, "write tokens, config, passport, params and metrics as JSON");
  app.add_flag("--with-weights", o.with_weights, "include the attention weights in --json");
  app.add_option("--npy", o.npy, "write attention.npy, per-layer inputs, weights and outputs, and meta.json into DIR");
  app.add_option("--png", o.png, "write one layer's heads as a grid of heatmaps");
  app.add_option("--svg", o.svg, "write one layer's heads as an SVG figure (vector; labels and titles as text)");
  app.add_option("--layer", o.layer, "layer drawn by --png and --svg, numbered from 0 (0 to L-1)")->capture_default_str();
  app.add_option("--batch", o.batch, "sentence drawn by --png and --svg, numbered from 0 (0 to B-1)")->capture_default_str();
  app.add_option("--colormap", o.colormap, "viridis, magma, cividis or grey")
      ->check(CLI::IsMember({"viridis", "magma", "cividis", "grey", "gray"}))
      ->capture_default_str();
  app.add_option("--threads", o.threads, "compute threads (default: all cores)");
  app.add_flag("--bf16-products", o.bf16_products,
               "multiply with the CPU's BF16 dot products (avx512_bf16; activations and weights rounded to BF16, sums in F32), "
               "faster and approximate; also runs the F32 pass and prints both times and the largest difference");
  app.add_flag("--int8-products", o.int8_products,
               "GGUF Q4_K, Q5_K, Q6_K and Q8_0 weights: round the activations to 8 bits and multiply in integers, as llama.cpp does, "
               "faster and approximate; also runs the F32 pass and prints both times and the largest difference");
  app.add_option("--top-k", o.top_k, "trained models: the K most likely next tokens after each sentence's last token (and, in --json, after every token); "
                                     "encoders (BERT, RoBERTa, DistilBERT): the K most likely fillers of each [MASK]")
      ->check(CLI::Range(1, 100));
  app.add_option("--pair-filter", o.pair_filter,
                 "encoders, a pair: --png and --svg show only the cells from sentence A or B (query row) to A or B (key column): all, aa, ab, "
                 "ba or bb; the others dimmed, rows not renormalised (the app's A/B filter)")
      ->check(CLI::IsMember({"all", "aa", "ab", "ba", "bb"}))
      ->capture_default_str();
  app.add_flag("--hide-specials", o.hide_specials,
               "--png and --svg dim the special tokens' rows and columns ([CLS], [SEP], <s>, </s>); rows not renormalised (the app's "
               "\"hide specials\")");
  app.add_option("--pair", o.pairs, "encoders: sentence B, with token type 1 (repeat: the i-th --pair goes with the i-th sentence)");
  app.add_option("--mask", o.masks, "encoders: S:T masks token T of sentence S (from 0), keeping it as the masked-token loss's target (repeatable)");
  add_contrib_options(app, co);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;  // --help and --version exit 0; every bad argument exits 2
  }
  if (o.threads > 0) omp_set_num_threads(o.threads);

  Result<ModelInput> in = resolve_model_options(mo, true);
  // The --file unreadable or too large (a file that cannot be read): 1; options: 2.
  if (!in) return fail(in.error(), in.error().kind == ErrorKind::Io || in.error().kind == ErrorKind::BadFormat ? 1 : 2);
  ModelConfig& cfg = in->cfg;
  Result<ModelWeights> loaded = load_model_weights(mo, app, cfg);
  if (!loaded) {  // a file that cannot be read or parsed: 1; options that do not fit the weights: 2
    const ErrorKind k = loaded.error().kind;
    return fail(loaded.error(), k == ErrorKind::InvalidArgument || k == ErrorKind::InvalidConfig ? 2 : 1);
  }
  const ModelWeights& weights = *loaded;
  BatchExtras extras;
  if ((!o.pairs.empty() || !o.masks.empty()) && !weights.arch.encoder())
    return fail(Error{ErrorKind::InvalidArgument, "--pair and --mask are for encoders (BERT, RoBERTa, DistilBERT); these weights are " +
                                                      describe_source(weights, cfg) + "."},
                2);
  if (o.pairs.size() > in->lines.size())
    return fail(Error{ErrorKind::InvalidArgument, "there are more --pair texts (" + std::to_string(o.pairs.size()) + ") than sentences (" +
                                                      std::to_string(in->lines.size()) + "): the i-th --pair goes with the i-th sentence."},
                2);
  extras.pairs = o.pairs;
  for (const std::string& m : o.masks) {
    int b = -1, t = -1;
    char end = 0;
    if (std::sscanf(m.c_str(), "%d:%d%c", &b, &t, &end) != 2 || b < 0 || t < 0)
      return fail(Error{ErrorKind::InvalidArgument, "--mask " + m + ": expected S:T, sentence and token numbered from 0 (e.g. 0:3)."}, 2);
    extras.masked.emplace_back(b, t);
  }
  if (Status s = check_batch_memory(in->lines, cfg); !s) return fail(s.error(), 2);
  const Batch batch = make_batch(in->lines, cfg, weights, &extras);
  for (const auto& [b, t] : extras.masked)
    if (b >= batch.B() || t >= batch.lengths[b])
      return fail(Error{ErrorKind::InvalidArgument, "--mask " + std::to_string(b) + ":" + std::to_string(t) + ": there is no such token (" +
                                                        std::to_string(batch.B()) + " sentences)."},
                  2);
  for (const std::string& note : batch.notes(weights.trained() ? weights.context : 0)) std::fprintf(stderr, "headmap-cli: note: %s\n", note.c_str());
  if (batch.empty()) std::fprintf(stderr, "headmap-cli: nothing to attend over: the text has no tokens.\n");

  const uint64_t maps_bytes = 4 * static_cast<uint64_t>(cfg.num_layers) * static_cast<uint64_t>(batch.B()) *
                              static_cast<uint64_t>(cfg.num_heads) * static_cast<uint64_t>(batch.T) * static_cast<uint64_t>(batch.T);
  if (Status s = check_memory(maps_bytes, "The attention maps (L x B x H x T x T)", "use fewer or shorter sentences, or fewer layers or heads"); !s)
    return fail(s.error(), 2);
  ForwardOptions fo;
  fo.keep_layer_io = !o.npy.empty() || co.offset_profile;  // the offset profile's frequencies read the attention inputs
  fo.want_logits = weights.trained();  // the loss on the text
  // --bf16-products, --int8-products: this pass with them, then the F32 pass (warmer: the
  // comparison favours it) for both times and their largest difference.
  if (o.bf16_products) {
    const std::string no = bf16_products_refusal(weights);
    if (!no.empty()) std::fprintf(stderr, "headmap-cli: note: %s.\n", no.c_str());
    fo.bf16_products = no.empty();
  }
  if (o.int8_products) {
    const std::string no = int8_products_refusal(weights);
    if (!no.empty()) std::fprintf(stderr, "headmap-cli: note: %s.\n", no.c_str());
    fo.int8_products = no.empty();
  }
  const auto t0 = std::chrono::steady_clock::now();
  Result<ForwardOutput> out = forward(weights, cfg, batch, fo);
  if (!out) return fail(out.error(), 2);
  if (fo.bf16_products || fo.int8_products) {
    const auto t1 = std::chrono::steady_clock::now();
    ForwardOptions f32 = fo;
    f32.bf16_products = f32.int8_products = false;
    Result<ForwardOutput> exact = forward(weights, cfg, batch, f32);
    if (!exact) return fail(exact.error(), 2);
    const auto ms = [](auto a, auto b) { return std::chrono::duration<double, std::milli>(b - a).count(); };
    const char* mode = fo.bf16_products && fo.int8_products ? "BF16 and 8-bit products" : fo.bf16_products ? "BF16 products" : "8-bit products";
    std::printf("%s: this pass %.0f ms, F32 %.0f ms; %s\n", mode, ms(t0, t1), ms(t1, std::chrono::steady_clock::now()),
                precision_diff_text(precision_diff(*out, *exact)).c_str());
  }
  // Finite weights can still overflow float32 (values near 3e38): never print NaN as a result.
  for (const float v : out->attention)
    if (!std::isfinite(v))
      return fail(Error{ErrorKind::BadFormat, "The model computed NaN or infinite attention weights: its weights are corrupt or far too large. "
                                              "Check the weights file."},
                  1);
  if (out->loss_tokens > 0 && !std::isfinite(out->loss))
    return fail(Error{ErrorKind::BadFormat, "The model computed a NaN or infinite loss: its weights are corrupt or far too large. Check the weights file."}, 1);
  if (out->no_key_rows > 0)
    std::fprintf(stderr, "headmap-cli: note: %d query rows (summed over layers) see no key under the reversed mask; their weights are 0 here, NaN in PyTorch.\n",
                 out->no_key_rows);

  Passport passport = make_passport(cfg, batch.B(), batch.T, weights.trained() ? weights.vocab_size() : 0, weights.context, &weights.arch);
  passport.storage = weight_storage(weights);
  RunRecord run;
  run.cfg = cfg;
  run.weights = &weights;
  run.batch = &batch;
  run.out = &*out;
  run.passport = &passport;
  run.metrics = head_metrics(*out, batch, mask_kind(cfg));
  run.induction = induction_scores(weights, cfg, make_induction_probe(cfg, weights, 20, cfg.seed));
  run.text_induction = text_induction_scores(*out, batch);
  run.top_k = o.top_k;
  if (o.top_k > 0 && !weights.trained()) return fail(Error{ErrorKind::InvalidArgument, "--top-k needs trained weights: random init has no vocabulary to predict."}, 2);
  if (o.top_k > 0 && weights.arch.encoder() && !weights.arch.mlm_head)
    return fail(Error{ErrorKind::InvalidArgument, "--top-k: this " + weights.arch.name + " has no masked-LM head (a ...Model checkpoint, not ...ForMaskedLM), "
                                                  "so it cannot fill a [MASK]: download the ForMaskedLM weights (e.g. google-bert/bert-base-uncased has them)."},
                2);

  if (o.passport) std::fputs(passport_table(passport).c_str(), stdout);
  if (!o.json.empty())
    if (Status s = write_run_json(o.json, run, o.with_weights); !s) return fail(s.error(), s.error().kind == ErrorKind::Io ? 1 : 2);
  if (!o.npy.empty())
    if (Status s = export_npy_dir(o.npy, run); !s) return fail(s.error(), s.error().kind == ErrorKind::Io ? 1 : 2);
  if (contrib_requested(co))  // after --json and --npy: their results are added to both
    if (Status s = run_contrib(co, weights, cfg, batch, *out, o.batch, o.json, o.npy); !s)
      return fail(s.error(), s.error().kind == ErrorKind::Io ? 1 : 2);
  // The A/B filter and hidden special tokens of --png and --svg: the app's one rule (cell_filter).
  PairFilter pair_filter = PairFilter::All;
  parse_pair_filter(o.pair_filter, &pair_filter);
  const bool drawn = !o.png.empty() || !o.svg.empty(), in_range = o.batch >= 0 && o.batch < batch.B();
  if (drawn && pair_filter != PairFilter::All && in_range &&
      !cell_filter(batch.sentences[o.batch].tokens, batch.lengths[o.batch], pair_filter, false).active())  // not a pair
    std::fprintf(stderr, "headmap-cli: note: --pair-filter %s needs a sentence pair: give sentence B with --pair (the maps are drawn unfiltered).\n",
                 o.pair_filter.c_str());
  const CellFilter filter = in_range ? cell_filter(batch.sentences[o.batch].tokens, batch.lengths[o.batch], pair_filter, o.hide_specials) : CellFilter{};
  if (!o.png.empty()) {
    HeadsPngOptions po;
    po.filter = filter;
    po.layer = o.layer;
    po.batch = o.batch;
    parse_colormap(o.colormap.c_str(), &po.colormap);
    po.subtitle = "weights: " + describe_source(weights, cfg);
    po.window = weights.arch.window(o.layer);
    if (Status s = write_heads_png(o.png, *out, batch, cfg, run.metrics, po); !s)
      return fail(s.error(), s.error().kind == ErrorKind::Io ? 1 : 2);
  }
  if (!o.svg.empty()) {  // the same figure as the app's File > Export heads as SVG, at the per-head scale
    FigureInput fi;
    fi.out = &*out;
    fi.cfg = &cfg;
    fi.metrics = &run.metrics;
    fi.layer = o.layer;
    fi.batch = o.batch;
    if (o.batch >= 0 && o.batch < batch.B())
      for (int t = 0; t < batch.lengths[o.batch]; ++t) fi.tokens.push_back(token_display(batch.sentences[o.batch].tokens[t]));
    parse_colormap(o.colormap.c_str(), &fi.colormap);
    fi.mask = mask_kind(cfg);
    fi.window = weights.arch.window(o.layer);
    fi.filter = filter;
    fi.source = describe_source(weights, cfg);
    for (int h = 0; h < out->Hw && !cfg.pitfalls.head_averaged && o.layer >= 0 && o.layer < out->L && o.batch >= 0 && o.batch < out->B; ++h) {
      const size_t i = (static_cast<size_t>(o.layer) * out->B + o.batch) * out->Hw + h;
      const float ind = run.induction.empty() ? 0.0f : run.induction[static_cast<size_t>(o.layer) * out->H + h];
      const HeadLabel l = head_label(run.metrics[i], label_induction(ind, i < run.text_induction.size() ? run.text_induction[i] : NAN));
      fi.head_labels.push_back(l == HeadLabel::None ? "" : head_label_name(l));
    }
    Result<Figure> fig = heads_figure(fi);
    const Status s = fig ? write_figure_svg(o.svg, *fig) : Status(fig.error());
    if (!s) return fail(s.error(), s.error().kind == ErrorKind::Io ? 1 : 2);
  }
  if (!o.passport && o.json.empty() && o.npy.empty() && o.png.empty() && o.svg.empty() && !batch.empty() && !contrib_requested(co))
    print_summary(batch, *out, run.metrics, run.induction, run.text_induction, describe_source(weights, cfg), cfg.causal,
                  weights.arch.encoder(), weights.arch.mlm_head);
  if (o.top_k > 0 && o.json.empty() && weights.arch.encoder()) {  // the fillers of each [MASK], most likely first
    const int mask = mask_token_id(weights);
    int shown = 0;
    for (int b = 0; b < batch.B(); ++b)
      for (int t = 0; t < batch.lengths[b]; ++t) {
        if (batch.sentences[b].tokens[t].id != mask) continue;
        std::printf("sentence %d, token %d [%s]: the model fills in:", b, t, token_display(batch.sentences[b].tokens[t]).c_str());
        for (const NextToken& n : top_k_next(weights, *out, b, t, o.top_k)) std::printf(" [%s] %.3f", n.display.c_str(), n.prob);
        std::printf("\n");
        ++shown;
      }
    if (shown == 0) std::fprintf(stderr, "headmap-cli: note: --top-k predicts at [MASK] tokens, and the text has none: type [MASK] (or <mask>) in it, or use --mask S:T.\n");
  } else if (o.top_k > 0 && o.json.empty())  // what each sentence's last token is followed by, most likely first
    for (int b = 0; b < batch.B(); ++b) {
      if (batch.lengths[b] == 0) continue;
      std::printf("sentence %d: after [%s] the model predicts:", b, token_display(batch.sentences[b].tokens[batch.lengths[b] - 1]).c_str());
      for (const NextToken& n : top_k_next(weights, *out, b, batch.lengths[b] - 1, o.top_k)) std::printf(" [%s] %.3f", n.display.c_str(), n.prob);
      std::printf("\n");
    }
  return 0;
}

// Out of memory anywhere (an estimate that fell short, a machine already full) is a
// message and exit status 1, never an abort.
int main(int argc, char** argv) {
  try {
    return run_main(argc, argv);
  } catch (const std::bad_alloc&) {
    return fail(out_of_memory("running headmap-cli"), 1);
  } catch (const std::length_error&) {
    return fail(out_of_memory("running headmap-cli"), 1);
  }
}
