// sanitized.h: HEADMAP_TEST_SANITIZED is 1 in an ASan or TSan build (GCC's __SANITIZE_*
// macros, or clang's __has_feature), whose shadow memory needs the address space that the
// RLIMIT_AS tests take away; 0 otherwise.
#pragma once
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define HEADMAP_TEST_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define HEADMAP_TEST_SANITIZED 1
#endif
#endif
#ifndef HEADMAP_TEST_SANITIZED
#define HEADMAP_TEST_SANITIZED 0
#endif
