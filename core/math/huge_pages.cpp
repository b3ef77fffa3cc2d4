// huge_pages.cpp: 2 MB-aligned blocks from mmap, advised MADV_HUGEPAGE (see huge_pages.h).
#include "core/math/huge_pages.h"

#include <cstdint>
#include <cstdlib>

#ifdef __linux__
#include <sys/mman.h>
#endif

namespace headmap {

namespace {
constexpr size_t kHuge = size_t(2) << 20, kSmall = 4096;
constexpr size_t round_up(size_t n, size_t to) { return (n + to - 1) / to * to; }
}  // namespace

void* huge_alloc(size_t bytes) {
#ifdef __linux__
  if (bytes >= kHugePageMin) {
    // 2 MB more than needed, then the unaligned head and the rest given back: the block starts
    // on a 2 MB boundary, so each of its whole 2 MB pages can be a huge one. It ends on the
    // 4 KB page after its last byte: a tail shorter than 2 MB stays on 4 KB pages (a huge page
    // there would be resident whole: Q8_0 matrices of 4.3 MB took 6).
    const size_t len = round_up(bytes, kSmall);
    void* raw = ::mmap(nullptr, len + kHuge, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (raw == MAP_FAILED) return nullptr;
    const uintptr_t r = reinterpret_cast<uintptr_t>(raw), a = round_up(r, kHuge);
    if (a > r) ::munmap(raw, a - r);
    if (const size_t tail = r + len + kHuge - (a + len); tail > 0) ::munmap(reinterpret_cast<void*>(a + len), tail);
    ::madvise(reinterpret_cast<void*>(a), len, MADV_HUGEPAGE);
    return reinterpret_cast<void*>(a);
  }
#endif
  return std::aligned_alloc(64, round_up(bytes == 0 ? 1 : bytes, 64));
}

void huge_free(void* p, size_t bytes) {
  if (!p) return;
#ifdef __linux__
  if (bytes >= kHugePageMin) {
    ::munmap(p, round_up(bytes, kSmall));
    return;
  }
#endif
  std::free(p);
}

}  // namespace headmap
