// fuzz_safetensors.cpp: Hugging Face safetensors files (core/io/safetensors.h), through
// the same memory-mapped reader the GPT-2 loader uses: the header, then every float tensor
// converted (a non-finite value must be refused).
#include <sys/mman.h>
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "core/io/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  (void)headmap::parse_safetensors_header(reinterpret_cast<const char*>(data), reinterpret_cast<const char*>(data) + size);
  const int fd = memfd_create("fuzz.safetensors", MFD_CLOEXEC);
  if (fd < 0) return 0;
  size_t done = 0;
  while (done < size) {
    const ssize_t n = ::write(fd, data + done, size - done);
    if (n <= 0) break;
    done += static_cast<size_t>(n);
  }
  headmap::Result<headmap::SafetensorsFile> f = headmap::SafetensorsFile::open("/proc/self/fd/" + std::to_string(fd));
  if (f) {
    for (const auto& [name, info] : f->tensors()) {
      if (info.dtype != "F32" && info.dtype != "F16" && info.dtype != "BF16") continue;
      std::vector<float> out(static_cast<size_t>(info.numel()));
      if (f->read_f32(name, out.data()))
        for (float v : out)
          if (!std::isfinite(v)) __builtin_trap();
    }
  }
  ::close(fd);
  return 0;
}
