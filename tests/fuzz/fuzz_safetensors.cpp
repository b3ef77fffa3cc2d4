// fuzz_safetensors.cpp: Hugging Face safetensors files (core/io/safetensors.h), through
// the same memory-mapped reader the GPT-2 loader uses: the header, then every float tensor
// converted (a non-finite value must be refused).
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "core/io/safetensors.h"
#include "tests/fuzz/fuzz_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  (void)headmap::parse_safetensors_header(reinterpret_cast<const char*>(data), reinterpret_cast<const char*>(data) + size);
  const FuzzFile file("fuzz.safetensors", data, size);
  if (!file.ok()) return 0;
  headmap::Result<headmap::SafetensorsFile> f = headmap::SafetensorsFile::open(file.path());
  if (f) {
    for (const auto& [name, info] : f->tensors()) {
      if (info.dtype != "F32" && info.dtype != "F16" && info.dtype != "BF16") continue;
      std::vector<float> out(static_cast<size_t>(info.numel()));
      if (f->read_f32(name, out.data()))
        for (float v : out)
          if (!std::isfinite(v)) __builtin_trap();
    }
  }
  return 0;
}
