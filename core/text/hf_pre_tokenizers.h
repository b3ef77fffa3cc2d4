// hf_pre_tokenizers.h: the tokenizer.json "pre_tokenizer" stage (hf_tokenizer.h, step 3).
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "core/text/hf_stages.h"

namespace headmap::hf {

struct PreTokenizer {
  virtual ~PreTokenizer() = default;
  // Splits one (non-added) piece; appends the words to `out`.
  virtual void split(NStr&& n, std::vector<NStr>& out) const = 0;
  virtual std::string name() const = 0;
};

// A "pre_tokenizer" object: ByteLevel, Split, Metaspace, Whitespace, WhitespaceSplit,
// Digits, Punctuation, BertPreTokenizer, Sequence.
Result<std::unique_ptr<PreTokenizer>> parse_pre_tokenizer(const json& j, const std::string& where);

}  // namespace headmap::hf
