// fuzz_corpus.cpp: a training corpus (core/train/trainer.h train_corpus_from_text): any
// bytes, including invalid UTF-8 and NULs, tokenize with a small learned BPE or give a message.
#include <omp.h>

#include <cstdint>
#include <string>

#include "core/train/trainer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const bool one_thread = (omp_set_num_threads(1), true);
  (void)one_thread;
  if (size > 4096) return 0;  // BPE training is quadratic-ish; larger inputs only slow the search
  headmap::CorpusOptions o;
  o.vocab_size = 300;
  headmap::Result<headmap::TrainCorpus> c = headmap::train_corpus_from_text(std::string(reinterpret_cast<const char*>(data), size), "fuzz", o);
  if (c)
    for (int32_t id : c->train)
      if (id < 0 || id >= c->bpe.size()) __builtin_trap();
  return 0;
}
