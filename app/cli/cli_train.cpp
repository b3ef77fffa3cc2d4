// cli_train.cpp: headmap-cli's training subcommands.
//
//   headmap-cli make-corpus --out FILE [--grammar] [--seed N]   the English corpus (from Debian
//                                                               packages), or the grammar alone
//   headmap-cli train-tokenizer --corpus FILE --vocab-size N --out FILE.json   learn a BPE
//   headmap-cli train --corpus FILE --out FILE.safetensors ...   train a model, save it
//   headmap-cli evaluate --checkpoint FILE --corpus FILE         a checkpoint's evidence
//
// Exit status: 0 success, 1 a file could not be read or written (or training was
// cancelled with Ctrl-C), 2 bad arguments.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <csignal>
#include <map>
#include <cstdio>
#include <string>
#include <string_view>

#include "app/common/print_message.h"
#include "app/common/model_options.h"
#include "core/io/checkpoint.h"
#include "core/io/file_io.h"
#include "core/train/grammar.h"
#include "core/train/english.h"
#include "core/text/bpe.h"
#include <nlohmann/json.hpp>
#include "core/math/gemm.h"
#include "core/inspect/specialisation.h"
#include "core/train/trainer.h"
#include "core/model/model.h"
#include <cmath>

namespace headmap {
namespace {

// The command line that reproduces a run of `headmap-cli train` with these options: the
// CLI's own syntax, stored in the checkpoint's "reproduce" metadata.
std::string train_command(const TrainOptions& o, const std::string& corpus_path, const std::string& out_path) {
  const TrainOptions d;
  char buf[1024];
  std::snprintf(buf, sizeof buf,
                "headmap-cli train --corpus %s --d-model %d --heads %d --layers %d --context %d --steps %d --batch %d --seq %d "
                "--lr %g --warmup %d --seed %llu",
                corpus_path.c_str(), o.d_model, o.num_heads, o.num_layers, o.context, o.steps, o.batch, o.seq, o.lr, o.warmup,
                static_cast<unsigned long long>(o.seed));
  std::string cmd = buf;
  auto opt = [&](const char* flag, double v, double def) {
    if (v != def) {
      std::snprintf(buf, sizeof buf, " %s %g", flag, v);
      cmd += buf;
    }
  };
  opt("--min-lr-ratio", o.min_lr_ratio, d.min_lr_ratio);
  opt("--weight-decay", o.weight_decay, d.weight_decay);
  opt("--beta2", o.beta2, d.beta2);
  opt("--clip", o.clip, d.clip);
  opt("--eval-every", o.eval_every, d.eval_every);
  opt("--eval-tokens", o.eval_tokens, d.eval_tokens);
  if (o.no_w_o) cmd += " --no-wo";
  if (o.pos_init == PosInit::Sinusoid) cmd += " --pos-init sinusoid";
  opt("--repeat-fraction", o.repeat_fraction, d.repeat_fraction);
  opt("--prev-head-weight", o.prev_head_weight, d.prev_head_weight);
  opt("--prev-head-steps", o.prev_head_steps, d.prev_head_steps);
  cmd += " --threads " + std::to_string(o.threads > 0 ? o.threads : compute_threads());
  cmd += " --out " + out_path;
  return cmd;
}

int fail(const Error& e) {
  print_message("headmap-cli", e.message);
  return e.kind == ErrorKind::InvalidConfig || e.kind == ErrorKind::InvalidArgument ? 2 : 1;
}

std::string duration(double s) {
  char buf[32];
  if (s >= 60) std::snprintf(buf, sizeof buf, "%dm%02ds", static_cast<int>(s) / 60, static_cast<int>(s) % 60);
  else std::snprintf(buf, sizeof buf, "%.1fs", s);
  return buf;
}

// The evidence table: per layer, the best previous-token and induction scores.
void print_specialisation(const Specialisation& s, const std::string& what) {
  std::printf("specialisation (%s; induction: mean of 8 probes of 20 tokens repeated; layers and heads numbered from 0):\n", what.c_str());
  for (int l = 0; l < s.L; ++l) {
    std::printf("  layer %d: best previous-token %.3f, best induction %.3f; heads:", l, s.best_prev_token(l), s.best_induction(l));
    for (int h = 0; h < s.H; ++h) {
      const size_t i = static_cast<size_t>(l) * s.H + h;
      const char* label = head_label_name(head_label(s.metrics[i], s.induction[i]));
      std::printf(" %d=%s(prev %.2f, ind %.2f)", h, *label ? label : "-", s.metrics[i].prev_token, s.induction[i]);
    }
    std::printf("\n");
  }
}

// At most this many held-out lines feed the head metrics.
constexpr size_t kEvidenceLines = 200;

std::vector<std::string> evidence_lines(const TrainCorpus& c) {
  return std::vector<std::string>(c.val_lines.begin(), c.val_lines.begin() + static_cast<long>(std::min(kEvidenceLines, c.val_lines.size())));
}

// ---- make-corpus -----------------------------------------------------------------------
int make_corpus(int argc, char** argv) {
  CLI::App app{"headmap-cli make-corpus: write the English training corpus, assembled from the Debian packages " +
               std::string(kEnglishCorpusPackages) + " and headmap's generated grammar (deterministic, licence-clean), or with --grammar the grammar alone"};
  GrammarCorpusOptions o;
  EnglishCorpusOptions eo;
  std::string out;
  bool grammar_only = false;
  app.add_option("--out", out, "the text file to write")->required();
  app.add_flag("--grammar", grammar_only, "write only the generated grammar corpus (grammar-v1)");
  app.add_option("--seed", o.seed, "generator seed")->capture_default_str()->check(whole_number_at_least_0());
  app.add_option("--wordnet-dir", eo.wordnet_dir, "WordNet's data files")->capture_default_str();
  app.add_option("--fortunes-dir", eo.fortunes_dir, "the fortune cookie files")->capture_default_str();
  app.add_option("--bytes", o.target_bytes, "grammar: approximate size in bytes")->capture_default_str()->check(CLI::Range(int64_t(1), int64_t(1) << 30));
  app.add_option("--repeat-fraction", o.repeat_fraction, "share of lines built around a repeated span")->capture_default_str()->check(CLI::Range(0.0, 1.0));
  app.add_option("--facts-fraction", o.facts_fraction, "share of lines listing fixed pairs")->capture_default_str()->check(CLI::Range(0.0, 1.0));
  app.add_option("--numbers-fraction", o.numbers_fraction, "share of number-game lines")->capture_default_str()->check(CLI::Range(0.0, 1.0));
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  if (o.repeat_fraction + o.facts_fraction + o.numbers_fraction > 1.0) {
    std::fprintf(stderr, "headmap-cli: --repeat-fraction, --facts-fraction and --numbers-fraction add up to more than 1.\n");
    return 2;
  }
  if (grammar_only) {
    const std::string text = generate_grammar_corpus(o);
    if (Status s = write_file_atomic(out, text); !s) return fail(s.error());
    std::printf("wrote %s: %zu bytes, %ld lines (%s, seed %llu)\n", out.c_str(), text.size(), static_cast<long>(std::count(text.begin(), text.end(), '\n')),
                kGrammarCorpusName, static_cast<unsigned long long>(o.seed));
    return 0;
  }
  eo.seed = o.seed;
  EnglishCorpusStats st;
  Result<std::string> text = assemble_english_corpus(eo, &st);
  if (!text) return fail(text.error());
  if (Status s = write_file_atomic(out, *text); !s) return fail(s.error());
  std::printf("wrote %s: %lld bytes, %ld lines (%s, seed %llu): %ld WordNet glosses, %ld WordNet examples, %ld fortunes, "
              "%ld grammar lines, %ld repeated sentences; the last %ld lines (natural text) are the validation split\n",
              out.c_str(), static_cast<long long>(st.bytes), st.total_lines, kEnglishCorpusName, static_cast<unsigned long long>(eo.seed),
              st.wordnet_glosses, st.wordnet_examples, st.fortunes, st.grammar_lines, st.repeats, st.val_lines);
  return 0;
}

// ---- train-tokenizer -------------------------------------------------------------------
// Writes a Hugging Face-style tokenizer.json (Bpe::to_tokenizer_json: model type BPE, GPT-2's
// byte-level spelling), which train --tokenizer and Bpe::from_tokenizer_json read back.
int train_tokenizer_cmd(int argc, char** argv) {
  CLI::App app{"headmap-cli train-tokenizer: learn a byte-level BPE (GPT-2's algorithm) from a corpus's training lines"};
  std::string corpus_path, out;
  CorpusOptions co;
  app.add_option("--corpus", corpus_path, "UTF-8 text, one paragraph per line")->required();
  app.add_option("--vocab-size", co.vocab_size, "tokens: 256 bytes + merges")->capture_default_str()->check(CLI::Range(257, 65536));
  app.add_option("--val-fraction", co.val_fraction, "share of the corpus's lines held out (not learned from)")->capture_default_str();
  app.add_option("--out", out, "the tokenizer.json to write")->required();
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  Result<TrainCorpus> c = load_train_corpus(corpus_path, co);
  if (!c) return fail(c.error());
  if (Status s = write_file_atomic(out, c->bpe.to_tokenizer_json()); !s) return fail(s.error());
  std::printf("wrote %s: %d tokens (%d merges) learned from %ld lines; %.3f tokens per byte on the held-out lines\n", out.c_str(), c->bpe.size(),
              c->bpe.num_merges(), c->train_lines,
              [&] {
                size_t bytes = 0;
                for (const auto& l : c->val_lines) bytes += l.size() + 1;
                return bytes ? static_cast<double>(c->val.size()) / static_cast<double>(bytes) : 0.0;
              }());
  return 0;
}

// ---- train -----------------------------------------------------------------------------
std::atomic<bool> g_cancel{false};
extern "C" void on_sigint(int) { g_cancel.store(true); }

int train_cmd(int argc, char** argv) {
  CLI::App app{"headmap-cli train: train the core's transformer on a text corpus and save a safetensors checkpoint"};
  TrainOptions o;
  CorpusOptions co;
  std::string corpus_path, out;
  bool quiet = false;
  int print_every = 100;
  app.add_option("--corpus", corpus_path, "UTF-8 text, one paragraph per line (headmap-cli make-corpus writes one)")->required();
  app.add_option("--out", out, "the checkpoint to write (.safetensors)")->required();
  app.add_option("--d-model", o.d_model, "d_model, D")->capture_default_str();
  app.add_option("--heads", o.num_heads, "num_heads, H; must divide d_model")->capture_default_str();
  app.add_option("--layers", o.num_layers, "num_layers, L")->capture_default_str();
  int kv_heads = 0;
  app.add_option("--kv-heads", kv_heads, "K/V heads: the trainer trains multi-head attention only, so this must equal --heads");
  app.add_option("--context", o.context, "learned positions: the longest text the model will read")->capture_default_str();
  app.add_flag("--no-wo", o.no_w_o, "train without W_O: heads are concatenated, never mixed (saved as W_O = I)");
  const std::map<std::string, PosInit> pos_inits = {{"normal", PosInit::Normal}, {"sinusoid", PosInit::Sinusoid}};
  app.add_option("--pos-init", o.pos_init, "how the learned position table starts: normal (N(0, 0.01)) or sinusoid")
      ->transform(CLI::CheckedTransformer(pos_inits, CLI::ignore_case))
      ->default_str("normal");
  app.add_option("--repeat-fraction", o.repeat_fraction,
                 "share of the rows that are a random run of tokens said twice (trains previous-token and induction heads)")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 1.0));
  app.add_option("--prev-head-weight", o.prev_head_weight,
                 "weight of a prior that pulls layer 0, head 0 toward the previous token (0 = none)")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 100.0));
  app.add_option("--prev-head-steps", o.prev_head_steps, "the prior holds for this many first steps, then ends (0 = every step)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  app.add_option("--steps", o.steps, "optimiser steps")->capture_default_str();
  app.add_option("--batch", o.batch, "sequences per step, B")->capture_default_str();
  app.add_option("--seq", o.seq, "tokens per sequence, T (<= context)")->capture_default_str();
  app.add_option("--lr", o.lr, "peak learning rate (AdamW)")->capture_default_str();
  app.add_option("--warmup", o.warmup, "linear warm-up steps, then cosine decay")->capture_default_str();
  app.add_option("--min-lr-ratio", o.min_lr_ratio, "final learning rate as a fraction of --lr")->capture_default_str();
  app.add_option("--weight-decay", o.weight_decay, "decoupled weight decay on the weight matrices")->capture_default_str();
  app.add_option("--beta2", o.beta2, "AdamW beta2")->capture_default_str();
  app.add_option("--clip", o.clip, "global gradient-norm clip (0 = off)")->capture_default_str();
  app.add_option("--seed", o.seed, "seed of the init and the batch order")->capture_default_str()->check(whole_number_at_least_0());
  app.add_option("--eval-every", o.eval_every, "validation loss every N steps (0 = only at the end)")->capture_default_str();
  app.add_option("--eval-tokens", o.eval_tokens, "validation tokens per evaluation (0 = all)")->capture_default_str();
  app.add_option("--val-fraction", co.val_fraction, "share of the corpus's lines held out (the last ones)")->capture_default_str();
  app.add_option("--vocab-size", co.vocab_size, "BPE tokens to learn from the training lines")->capture_default_str()->check(CLI::Range(257, 65536));
  std::string tokenizer_path, dtype = "f32";
  app.add_option("--tokenizer", tokenizer_path, "use this tokenizer.json (from train-tokenizer) instead of learning one");
  app.add_option("--dtype", dtype, "how the checkpoint stores weights: f32, or f16 (half the size)")->capture_default_str()->check(CLI::IsMember({"f32", "f16"}));
  app.add_option("--threads", o.threads, "compute threads (default: all cores); results are exact for a given thread count");
  app.add_option("--print-every", print_every, "print progress every N steps")->capture_default_str();
  app.add_flag("--quiet", quiet, "print only the summary");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  if (Status s = validate(o); !s) return fail(s.error());
  if (Status s = trainable_kv_heads(o.num_heads, kv_heads); !s) return fail(s.error());

  Bpe given;
  if (!tokenizer_path.empty()) {
    Result<std::string> tj = read_file(tokenizer_path, size_t(256) << 20);
    if (!tj) return fail(tj.error());
    Result<Bpe> b = Bpe::from_tokenizer_json(*tj);
    if (!b) return fail(Error{b.error().kind, tokenizer_path + ": " + b.error().message});
    given = std::move(*b);
    co.bpe = &given;
  }
  Result<TrainCorpus> corpus = load_train_corpus(corpus_path, co);
  if (!corpus) return fail(corpus.error());
  const TrainCorpus& c = *corpus;
  const int threads = o.threads > 0 ? o.threads : compute_threads();
  std::printf("corpus %s: %ld training lines, %zu training tokens, %zu validation tokens, vocabulary %d\n", c.name.c_str(), c.train_lines,
              c.train.size(), c.val.size(), c.bpe.size());
  std::printf("model: D=%d H=%d L=%d context=%d%s; %d steps of %d x %d tokens, lr %g, seed %llu, %d thread%s\n", o.d_model, o.num_heads,
              o.num_layers, o.context, o.no_w_o ? ", without W_O" : "", o.steps, o.batch, o.seq, o.lr, static_cast<unsigned long long>(o.seed),
              threads, threads == 1 ? "" : "s");
  std::fflush(stdout);

  o.progress_every = print_every > 0 ? print_every : 0;
  TrainHooks hooks;
  hooks.cancel = &g_cancel;
  hooks.on_progress = [&](const TrainProgress& p) {
    if (quiet) return;
    std::printf("step %6d/%d  loss %.4f", p.step, p.steps, p.train_loss);
    if (p.evaluated) std::printf("  val %.4f", p.val_loss);
    std::printf("  lr %.2e  |g| %.2f  %.1fk tok/s  ETA %s\n", p.lr, p.grad_norm, p.tokens_per_s / 1000, duration(p.eta_s).c_str());
    std::fflush(stdout);
  };
  std::signal(SIGINT, on_sigint);
  Result<TrainResult> r = train(c, o, hooks);
  std::signal(SIGINT, SIG_DFL);
  if (!r) return fail(r.error());

  ModelWeights& w = r->weights;
  w.source.reproduce = train_command(o, corpus_path, out) + (tokenizer_path.empty() ? " --vocab-size " + std::to_string(co.vocab_size)
                                                                                       : " --tokenizer " + tokenizer_path) +
                       (dtype == "f16" ? " --dtype f16" : "");
  if (Status s = save_checkpoint(out, w, dtype == "f16" ? StoreDtype::F16 : StoreDtype::F32); !s) return fail(s.error());
  std::printf("done in %s (%.1fk tok/s): train loss %.4f (mean of the last 100 steps), val loss %.4f\n", duration(r->seconds).c_str(),
              r->tokens_per_s / 1000, r->final_train_loss, r->val_loss);
  std::printf("saved %s\nreproduce: %s\n", out.c_str(), w.source.reproduce.c_str());
  if (Result<Specialisation> s = measure_specialisation(w, o.num_heads, evidence_lines(c)); s) print_specialisation(*s, "held-out lines");
  return 0;
}

// ---- evaluate --------------------------------------------------------------------------
int evaluate_cmd(int argc, char** argv) {
  CLI::App app{"headmap-cli evaluate: a checkpoint's specialisation figures on a corpus's held-out lines and on the induction probe"};
  std::string ckpt, corpus_path, sentences_path;
  int heads = 0;
  CorpusOptions co;
  app.add_option("--checkpoint", ckpt, "a .safetensors checkpoint")->required();
  app.add_option("--corpus", corpus_path, "the corpus whose held-out lines are measured")->required();
  app.add_option("--sentences", sentences_path,
                 "also measure these sentences (one per line): tokens per word, the best previous-token head, induction on each "
                 "sentence said twice, and the loss");
  app.add_option("--heads", heads, "view the weights with this many heads (default: as trained)");
  app.add_option("--val-fraction", co.val_fraction, "share of the corpus's lines held out (the last ones)")->capture_default_str();
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  Result<ModelWeights> w = load_checkpoint(ckpt);
  if (!w) return fail(w.error());
  co.bpe = &w->bpe;  // the model's own tokenizer, not a new one
  Result<TrainCorpus> c = load_train_corpus(corpus_path, co);
  if (!c) return fail(c.error());
  const int H = heads > 0 ? heads : w->source.trained_heads;
  const WeightsSource& s = w->source;
  std::printf("%s: D=%d H=%d (trained %d) L=%d context=%d, %ld steps, train loss %.4f, val loss %.4f%s\n", ckpt.c_str(), w->d_model, H,
              s.trained_heads, w->num_layers(), w->context, s.steps, s.final_loss, s.val_loss, s.no_w_o ? ", without W_O" : "");
  Result<Specialisation> sp = measure_specialisation(*w, H, evidence_lines(*c));
  if (!sp) return fail(sp.error());
  print_specialisation(*sp, std::to_string(sp->sentences) + " held-out lines of " + c->name);
  // The held-out loss beside a unigram model's: token frequencies of the training split
  // (add-one smoothed), scored on the same held-out tokens.
  std::vector<double> freq(static_cast<size_t>(w->vocab_size()), 1.0);
  for (int32_t id : c->train) freq[static_cast<size_t>(id)] += 1.0;
  const double total = static_cast<double>(c->train.size()) + static_cast<double>(freq.size());
  double unigram = 0;
  for (int32_t id : c->val) unigram -= std::log(freq[static_cast<size_t>(id)] / total);
  std::printf("held-out tokens of %s: %zu; unigram model's loss %.4f nats/token (the checkpoint's validation loss: %.4f)\n", c->name.c_str(),
              c->val.size(), c->val.empty() ? 0.0 : unigram / static_cast<double>(c->val.size()), s.val_loss);
  if (!sentences_path.empty()) {
    Result<std::string> text = read_file(sentences_path);
    if (!text) return fail(text.error());
    std::vector<std::string> lines;
    for (std::string& l : split_lines(*text))
      if (!l.empty()) lines.push_back(std::move(l));
    Result<SentenceEvidence> e = measure_on_sentences(*w, H, lines);
    if (!e) return fail(e.error());
    std::printf("sentences of %s: %d sentences, %ld words, %ld tokens: %.3f tokens per word; best previous-token head (layer.head, from 0) %d.%d: %.3f; "
                "best induction head on each sentence said twice %d.%d: %.3f; loss %.4f nats/token\n",
                sentences_path.c_str(), e->sentences, e->words, e->tokens, e->tokens_per_word, e->prev_layer, e->prev_head, e->best_prev_token,
                e->induction_layer, e->induction_head, e->best_repeat_induction, e->loss);
  }
  return 0;
}

}  // namespace

int tokenize_cmd(int argc, char** argv);  // cli_tokenize.cpp

// Runs `headmap-cli <subcommand> ...` when argv[1] names one; returns -1 otherwise.
int run_cli_subcommand(int argc, char** argv) {
  if (argc < 2) return -1;
  const std::string_view cmd = argv[1];
  if (cmd == "train") return train_cmd(argc - 1, argv + 1);
  if (cmd == "make-corpus") return make_corpus(argc - 1, argv + 1);
  if (cmd == "train-tokenizer") return train_tokenizer_cmd(argc - 1, argv + 1);
  if (cmd == "evaluate") return evaluate_cmd(argc - 1, argv + 1);
  if (cmd == "tokenize") return tokenize_cmd(argc - 1, argv + 1);
  return -1;
}

}  // namespace headmap
