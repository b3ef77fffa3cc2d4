// memory_budget.cpp: the budget, read once per call (cheap: a getenv and two sysconf).
#include "core/memory_budget.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>

namespace headmap {

uint64_t mul_sat(uint64_t a, uint64_t b) {
  if (a != 0 && b > UINT64_MAX / a) return UINT64_MAX;
  return a * b;
}

static uint64_t add_sat(uint64_t a, uint64_t b) { return a > UINT64_MAX - b ? UINT64_MAX : a + b; }

uint64_t model_weights_bytes(uint64_t D, uint64_t L, uint64_t V, uint64_t P) {
  // per layer: W_Q, W_K, W_V, W_O (4 D^2), the fused copy of three (3 D^2), the MLP (8 D^2),
  // and 16 vectors of at most 4D; then the embeddings and the final LayerNorm.
  const uint64_t per_layer = add_sat(mul_sat(15, mul_sat(D, D)), mul_sat(16 * 4, D));
  uint64_t n = add_sat(mul_sat(L, per_layer), mul_sat(add_sat(V, add_sat(P, 2)), D));
  return mul_sat(n, 4);
}

static bool parse_size(const char* s, uint64_t* out) {
  char* end = nullptr;
  const unsigned long long v = std::strtoull(s, &end, 10);
  if (end == s || *s == '-') return false;
  uint64_t scale = 1;
  if (*end == 'K' || *end == 'k') scale = uint64_t(1) << 10, ++end;
  else if (*end == 'M' || *end == 'm') scale = uint64_t(1) << 20, ++end;
  else if (*end == 'G' || *end == 'g') scale = uint64_t(1) << 30, ++end;
  if (*end != '\0' || v == 0) return false;
  *out = mul_sat(v, scale);
  return true;
}

namespace {
struct Budget {
  uint64_t bytes;
  const char* why;
};
Budget budget() {
  if (const char* env = std::getenv("HEADMAP_MEMORY_BUDGET"); env && *env) {
    uint64_t v = 0;
    if (parse_size(env, &v)) return {v, "set by HEADMAP_MEMORY_BUDGET"};
  }
  const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
  Budget b{pages > 0 && page > 0 ? mul_sat(static_cast<uint64_t>(pages), static_cast<uint64_t>(page)) / 2 : uint64_t(4) << 30,
           "half of this machine's memory; HEADMAP_MEMORY_BUDGET sets it"};
  struct rlimit rl {};
  if (::getrlimit(RLIMIT_AS, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur / 2 < b.bytes)
    b = {rl.rlim_cur / 2, "half of the address-space limit, ulimit -v"};
  return b;
}
}  // namespace

uint64_t memory_budget_bytes() { return budget().bytes; }

static std::string mib(uint64_t bytes) {
  std::string s = std::to_string((bytes + (uint64_t(1) << 20) - 1) >> 20);
  for (int i = static_cast<int>(s.size()) - 3; i > 0; i -= 3) s.insert(static_cast<size_t>(i), ",");
  return s + " MiB";
}

Status check_memory(uint64_t bytes, const std::string& what, const std::string& lower) {
  const Budget b = budget();
  if (bytes <= b.bytes) return Status();
  return Error{ErrorKind::InvalidArgument, what + " would need " + (bytes == UINT64_MAX ? std::string("more memory than exists") : mib(bytes)) +
                                               ", more than the memory budget of " + mib(b.bytes) + " (" + b.why + "): " + lower + "."};
}

Error out_of_memory(const std::string& what) {
  return Error{ErrorKind::InvalidArgument, "Out of memory while " + what +
                                               ": use fewer or shorter sentences, fewer layers or heads, or a smaller d_model."};
}

Status check_random_weights_memory(int D, int L, int P, const std::string& lower) {
  return check_memory(model_weights_bytes(static_cast<uint64_t>(D), static_cast<uint64_t>(L), 0, static_cast<uint64_t>(P)),
                      "Random weights of d_model " + std::to_string(D) + " and " + std::to_string(L) + " layers", lower);
}

}  // namespace headmap
