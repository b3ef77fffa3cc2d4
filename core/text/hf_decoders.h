// hf_decoders.h: the tokenizer.json "decoder" stage (hf_tokenizer.h, step 6).
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "core/text/hf_stages.h"

namespace headmap::hf {

struct Decoder {
  virtual ~Decoder() = default;
  virtual void run(std::vector<std::string>& toks) const = 0;
};

// A "decoder" object: ByteLevel, Metaspace, WordPiece, ByteFallback, Fuse, Strip, Replace, Sequence.
Result<std::unique_ptr<Decoder>> parse_decoder(const json& j, const std::string& where);

}  // namespace headmap::hf
