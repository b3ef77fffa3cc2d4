// huge_pages.h: the weights on the kernel's 2 MB pages where it gives them (Linux transparent
// huge pages; Debian's default mode is "madvise": only blocks that ask get them).
//
// A token's pass reads every weight once: the 1B shape's 2.47 GB walk 600k pages of 4 KB, or
// 1,200 of 2 MB. On the 2-core Zen 4 VM a 1 GiB read ran at 62-64 GB/s on 2 MB pages against
// 53-56 on 4 KB pages (headmap-bench-bandwidth, both in the same run; tests/bench/README.md).
// The weights are allocated once, at load, so the bigger pages cost nothing later.
//
// Only long-lived blocks: the maps, logits and layer rows a keystroke allocates afresh were
// tried on 2 MB pages too, and made typing's p95 worse on that VM (a fresh 2 MB page there can
// take the kernel far longer than 512 small ones: maps alloc p95 33-68 ms against 15-16).
//
// Nothing here changes a value: only where the kernel puts the pages. Elsewhere than Linux,
// or when the kernel declines, the blocks are ordinary ones.
#pragma once
#include <cstddef>

namespace headmap {

// Blocks of at least this many bytes are worth 2 MB pages (smaller ones are ordinary).
constexpr size_t kHugePageMin = size_t(4) << 20;

// A block of `bytes` (not zeroed) for the allocators of large, long-lived storage: from
// kHugePageMin on, 2 MB-aligned and advised (MADV_HUGEPAGE) for its whole 2 MB pages, its tail
// past the last one on 4 KB pages; else an ordinary 64-byte aligned block. Null when out of
// memory. huge_free takes the same `bytes`.
void* huge_alloc(size_t bytes);
void huge_free(void* p, size_t bytes);

}  // namespace headmap
