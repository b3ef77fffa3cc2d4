#include "app/common/model_options.h"

#include "app/common/assets.h"
#include "core/io/checkpoint.h"
#include "core/io/export.h"
#include "core/io/hf_tensors.h"
#include "core/io/hf_model.h"
#include "core/memory_budget.h"
#include "core/model/model.h"

namespace headmap {

CLI::Validator whole_number_at_least_0() {
  return CLI::Validator(
      [](std::string& v) -> std::string {  // CLI11 would read -1 as 2^64 - 1
        return v.find_first_not_of("0123456789") == std::string::npos && !v.empty() ? "" : "must be a whole number >= 0, not " + v;
      },
      "UINT");
}

// The defaults in force, for --help: with trained weights D, H, L and context are the
// weights' own (the shipped default's when no --checkpoint or --model is named), with
// --random-init ModelConfig's. `w`: the shipped default, when it could be read.
static void describe_defaults(CLI::App& app, const ModelWeights* w) {
  const ModelConfig r;  // random init's
  const auto dflt = [&](int trained, int random, const char* what) {
    const std::string own = " (a --checkpoint or --model brings its own)";
    return std::string("; default: ") + (w ? std::to_string(trained) + ", " + what + own : std::string("the trained model's own")) +
           ", or " + std::to_string(random) + " with --random-init";
  };
  if (CLI::Option* o = app.get_option_no_throw("--d-model"))
    o->description("d_model, D (1-4096)" + dflt(w ? w->d_model : 0, r.d_model, "the shipped trained model's"));
  if (CLI::Option* o = app.get_option_no_throw("--heads"))
    o->description("num_heads, H; must divide d_model; another H re-slices trained weights (the same weights, split anew)" +
                   dflt(w ? w->source.trained_heads : 0, r.num_heads, "the shipped trained model's"));
  if (CLI::Option* o = app.get_option_no_throw("--layers"))
    o->description("num_layers, L (1-12 for random init; up to the model's layers with --model)" +
                   dflt(w ? w->num_layers() : 0, r.num_layers, "the shipped trained model's"));
  if (CLI::Option* o = app.get_option_no_throw("--context"))
    o->description("maximum tokens per sentence (1-2048); longer text is truncated and reported" +
                   dflt(w ? std::min(w->context, kMaxContext) : 0, r.context, "the positions the shipped trained model learned"));
}

void add_model_options(CLI::App& app, ModelOptions& o) {
  // --help reads the shipped default for its figures (a few tens of milliseconds), only then.
  app.set_help_flag();
  app.add_flag_callback(
      "-h,--help",
      [&app] {
        Result<ModelWeights> w = load_checkpoint(asset_path(kDefaultCheckpoint));
        describe_defaults(app, w ? &*w : nullptr);
        throw CLI::CallForHelp();
      },
      "Print this help message and exit");
  app.add_option("--text", o.texts, "A sentence (repeat for a batch: one sentence per --text)");
  app.add_option("--file", o.file, "A UTF-8 text file, one sentence per line (at most " + std::to_string(kMaxTextFileBytes >> 20) + " MiB)");
  app.add_option("--d-model", o.cfg.d_model);
  app.add_option("--heads", o.cfg.num_heads);
  app.add_option("--kv-heads", o.cfg.num_kv_heads,
                 "K/V heads for multi-query (1) or grouped-query attention; must divide --heads (default: the number of heads)")
      ->check(CLI::Validator(
          [](std::string& v) -> std::string {
            return v.find_first_not_of("0123456789") == std::string::npos && v.find_first_not_of('0') != std::string::npos
                       ? std::string()
                       : "needs a whole number of at least 1 (1 is multi-query, the number of heads is plain multi-head)";
          },
          "N >= 1", "kv_heads"));
  app.add_option("--layers", o.cfg.num_layers);
  app.add_option("--context", o.cfg.context);
  describe_defaults(app, nullptr);  // the text without the file's figures; --help reads them
  app.add_flag("--random-init", o.random_init,
               "random weights (of any --d-model, --layers, --seed, --tokenizer) instead of the shipped trained model");
  app.add_option("--seed", o.cfg.seed, "seed of the random-init weights and hashed embeddings (a whole number >= 0)")
      ->capture_default_str()
      ->check(whole_number_at_least_0());
  app.add_flag("--causal,!--no-causal", o.cfg.causal, "mask keys after the query (default: causal)");
  app.add_flag("--positional,!--no-positional", o.cfg.positional, "add positional encoding (default: on)");
  app.add_option("--tokenizer", o.tokenizer, "with --random-init: word or char (trained models bring their own BPE)")
      ->check(CLI::IsMember({"word", "char"}))
      ->capture_default_str();
  auto* ckpt = app.add_option("--checkpoint", o.checkpoint, "run on trained weights from a .safetensors checkpoint (default: the shipped model)")
                   ->excludes("--random-init");
  app.add_option("--model", o.model,
                 std::string("run on a model in Hugging Face layout: a directory with config.json, model.safetensors "
                 "(or its index and shards) and tokenizer.json (or vocab.json + merges.txt); families: ") + supported_families())
      ->excludes(ckpt)
      ->excludes("--random-init");
  for (const PitfallInfo& p : pitfall_list()) app.add_flag(p.cli, o.cfg.pitfalls.*(p.flag), p.explain);
}

Result<ModelInput> resolve_model_options(const ModelOptions& o, bool default_sentence_if_empty) {
  ModelInput in;
  in.cfg = o.cfg;
  parse_tokenizer(o.tokenizer, &in.cfg.tokenizer);
  for (const std::string& t : o.texts)
    for (std::string& line : split_lines(t)) in.lines.push_back(std::move(line));
  if (!o.file.empty()) {
    Result<std::string> text = read_file(o.file, kMaxTextFileBytes);  // the size is checked before anything is read
    if (!text) return text.error();
    for (std::string& line : split_lines(*text)) in.lines.push_back(std::move(line));
  }
  if (in.lines.empty() && o.file.empty() && default_sentence_if_empty) in.lines.push_back(kDefaultSentence);
  // K/V heads are checked against the final H in load_model_weights: a checkpoint may bring its own H.
  // So are D and H with trained weights, which bring their own d_model.
  ModelConfig heads_only = in.cfg;
  heads_only.num_kv_heads = 0;
  if (o.random_init)
    if (Status s = validate(heads_only); !s) return s.error();
  return in;
}

Result<ModelWeights> load_model_weights(const ModelOptions& o, const CLI::App& app, ModelConfig& cfg) {
  if (o.random_init) {
    if (cfg.num_layers > kMaxLayers)
      return Error{ErrorKind::InvalidConfig, "num_layers " + std::to_string(cfg.num_layers) + " is out of range for random init: use 1 to " +
                                                 std::to_string(kMaxLayers) + "."};
    if (Status s = validate(cfg); !s) return s.error();
    if (Status s = check_random_weights_memory(cfg.d_model, cfg.num_layers, cfg.context, "use a smaller --d-model or fewer --layers"); !s)
      return s.error();
    return random_weights(cfg.d_model, cfg.num_layers, cfg.seed);
  }
  // --model and --checkpoint name a path alike; the one dispatcher decides what it is.
  const std::string path = !o.model.empty() ? o.model : o.checkpoint.empty() ? asset_path(kDefaultCheckpoint) : o.checkpoint;
  Result<ModelWeights> w = open_model_path(path);
  if (!w) return w.error();
  auto given = [&](const char* flag) { return app.count(flag) > 0; };
  const bool pretrained = w->source.kind == WeightsSource::Kind::Pretrained;
  const char* what = pretrained ? "this model" : o.model.empty() && o.checkpoint.empty() ? "the shipped trained model" : "this checkpoint";
  for (const char* flag : {"--tokenizer", "--seed"})
    if (given(flag))
      return Error{ErrorKind::InvalidArgument, std::string(flag) + " applies to random weights only: " + what +
                                                   " brings its own tokenizer and weights. Add --random-init."};
  if (given("--d-model") && cfg.d_model != w->d_model)
    return Error{ErrorKind::InvalidArgument, "--d-model " + std::to_string(cfg.d_model) + " does not fit " + what + " (d_model " +
                                                 std::to_string(w->d_model) + "): add --random-init for random weights of any size."};
  if (given("--layers") && cfg.num_layers != w->num_layers())
    return Error{ErrorKind::InvalidArgument, "--layers " + std::to_string(cfg.num_layers) + " does not fit " + what + " (" +
                                                 std::to_string(w->num_layers()) + " layers): add --random-init for random weights."};
  // The weights' own config (config_for_weights), then what the command line gave.
  ModelConfig own = cfg;
  own.context = given("--context") ? cfg.context : kMaxContext;
  own = config_for_weights(*w, own);
  if (w->arch.fixed_heads()) {
    if (given("--heads") && cfg.num_heads != own.num_heads)
      return Error{ErrorKind::InvalidArgument, "--heads " + std::to_string(cfg.num_heads) + " does not fit " + what + ": " + w->arch.name +
                                                   " fixes H=" + std::to_string(own.num_heads) + " in its weights (rotary positions, d_head " +
                                                   std::to_string(own.d_head()) + "), so it cannot be re-sliced."};
    if (given("--kv-heads") && cfg.kv_heads() != own.kv_heads())
      return Error{ErrorKind::InvalidArgument, "--kv-heads " + std::to_string(cfg.num_kv_heads) + " does not fit " + what + ": its weights have " +
                                                   std::to_string(own.kv_heads()) + " K/V heads."};
    cfg.num_kv_heads = own.num_kv_heads;
    cfg.head_dim = own.head_dim;
  }
  if (!given("--d-model")) cfg.d_model = own.d_model;
  if (!given("--layers")) cfg.num_layers = own.num_layers;
  if (!given("--heads")) cfg.num_heads = own.num_heads;
  if (!given("--context")) cfg.context = own.context;
  if (!given("--causal")) cfg.causal = own.causal;  // encoders: no causal mask unless asked
  if (w->source.no_w_o) cfg.pitfalls.no_w_o = true;  // w_o = I: the same function, and the passport says so
  if (cfg.head_dim == 0 && (cfg.num_heads < 1 || cfg.num_heads > cfg.d_model || cfg.d_model % cfg.num_heads != 0)) {
    std::string valid;
    for (int h : valid_head_counts(cfg.d_model)) valid += (valid.empty() ? "" : ", ") + std::to_string(h);
    const Status s = validate(cfg);
    std::string why = s ? std::string() : s.error().message;
    while (!why.empty() && (why.back() == '.' || why.back() == ' ')) why.pop_back();
    return Error{ErrorKind::InvalidConfig, why + ". Valid --heads for d_model " + std::to_string(cfg.d_model) + " (" + what +
                                               "'s): " + valid + "; or add --random-init for random weights of any --d-model."};
  }
  if (Status s = check_fit(*w, cfg); !s) return Error{s.error().kind, path + ": " + s.error().message};
  return w;
}

}  // namespace headmap
