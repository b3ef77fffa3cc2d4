// hf_normalizers.h: the tokenizer.json "normalizer" stage (hf_tokenizer.h, step 2).
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "core/text/hf_stages.h"

namespace headmap::hf {

struct Normalizer {
  virtual ~Normalizer() = default;
  virtual void run(NStr& n) const = 0;
  virtual std::string name() const = 0;
};

// A "normalizer" object: NFC, NFD, NFKC, NFKD, Lowercase, StripAccents, Strip, Prepend,
// Replace, BertNormalizer, Sequence.
Result<std::unique_ptr<Normalizer>> parse_normalizer(const json& j, const std::string& where);

}  // namespace headmap::hf
