// fuzz_npy.cpp: .npy files (core/io/npy.h): an accepted array holds exactly its shape.
#include <cstdint>
#include <string>

#include "core/io/npy.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  headmap::Result<headmap::Tensor> t = headmap::parse_npy(std::string(reinterpret_cast<const char*>(data), size));
  if (t && headmap::shape_numel(t->shape) != t->numel()) __builtin_trap();
  return 0;
}
