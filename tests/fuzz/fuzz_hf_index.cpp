// fuzz_hf_index.cpp: model.safetensors.index.json (core/io/hf_tensors.h parse_shard_index):
// every accepted shard name stays inside the model's directory.
#include <cstdint>
#include <string>

#include "core/io/hf_tensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  headmap::Result<std::vector<std::string>> names = headmap::parse_shard_index(std::string(reinterpret_cast<const char*>(data), size), "index.json");
  if (names)
    for (const std::string& n : *names)
      if (n.empty() || n == ".." || n.find('/') != std::string::npos) __builtin_trap();
  return 0;
}
