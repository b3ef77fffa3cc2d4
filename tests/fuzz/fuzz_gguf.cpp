// fuzz_gguf.cpp: GGUF files (core/io/gguf.h), through the same memory-mapped reader the model
// loader uses: the header, the metadata and tensor table, then every tensor of a supported type
// widened (gguf_quant.h), the metadata mapped onto an architecture (gguf_config) and the
// tokenizer built (gguf_tokenizer_json). Nothing here may crash, hang or read out of bounds.
#include <cstdint>
#include <string>
#include <vector>

#include "core/io/gguf.h"
#include "core/io/gguf_model.h"
#include "core/io/gguf_quant.h"
#include "core/text/hf_tokenizer.h"
#include "tests/fuzz/fuzz_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  (void)headmap::GgufFile::view(reinterpret_cast<const char*>(data), size, "fuzz.gguf");
  (void)headmap::GgufFile::view(reinterpret_cast<const char*>(data), size, "fuzz.gguf", headmap::GgufArrays::Skipped);  // the Open dialog's listing
  const FuzzFile file("fuzz.gguf", data, size);
  if (!file.ok()) return 0;
  headmap::Result<headmap::GgufFile> f = headmap::GgufFile::open(file.path());
  if (f) {
    for (const headmap::GgufTensorInfo& t : f->tensors()) {
      if (!headmap::gguf_type_supported(t.type) || t.numel() > (1 << 22)) continue;
      std::vector<float> out(static_cast<size_t>(t.numel()));
      (void)headmap::gguf_dequantize(t.type, f->data(t), t.numel(), out.data());
    }
    (void)headmap::gguf_config(*f);
    headmap::Result<std::string> json = headmap::gguf_tokenizer_json(*f);
    if (json) (void)headmap::HfTokenizer::from_json(*json);
  }
  return 0;
}
