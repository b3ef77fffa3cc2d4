// hf_post_processors.h: the tokenizer.json "post_processor" stage (hf_tokenizer.h, step 5).
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/text/hf_stages.h"

namespace headmap::hf {

struct Tok {
  int id;
  std::string piece;
  Span span;
  int type_id = 0;
  bool special = false;
  int seq = 0;
};

// The encodings (one per text, one or two) go through the processors in turn, as the
// official Vec<Encoding> does: a template merges them, ByteLevel leaves them apart; what is
// still apart at the end is joined in order.
struct Encodings {
  std::vector<std::vector<Tok>> list;
  const std::string* text[2] = {nullptr, nullptr};  // the texts the tokens' byte ranges refer to
};

// The bytes of text that ByteLevel's offset trimming has stepped over on this thread, a
// count of its work. The hostile-input tests hold it to a small multiple of the text's length
// instead of timing anything (issue 35, F4: counting each token's characters from the start
// of the text made it grow with the square of a line's tokens).
extern thread_local uint64_t trim_bytes_stepped;

// A special token's id as the file gave it, with the field that gave it, so that a model
// can check every id the post-processor may emit against its vocabulary (issue 35, F2).
struct NamedId {
  std::string field;  // "post_processor.cls"
  int id;
};

struct PostProcessor {
  virtual ~PostProcessor() = default;
  virtual void run(Encodings& encs, bool add_special) const = 0;
  virtual std::string name() const = 0;
  virtual void special_ids(std::vector<NamedId>&) const {}  // every id run() may add
};

// What is still apart at the end, joined in order.
std::vector<Tok> join(Encodings& encs);

// A "post_processor" object: TemplateProcessing, BertProcessing, RobertaProcessing,
// ByteLevel, Sequence.
Result<std::unique_ptr<PostProcessor>> parse_post_processor(const json& j, const std::string& where);

}  // namespace headmap::hf
