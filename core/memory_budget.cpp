// memory_budget.cpp: the budget, read once per call (cheap: a getenv and two sysconf).
#include "core/memory_budget.h"

#include "core/math/weight_dtype.h"
#include "core/model/arch.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <string>

namespace headmap {

uint64_t mul_sat(uint64_t a, uint64_t b) {
  if (a != 0 && b > UINT64_MAX / a) return UINT64_MAX;
  return a * b;
}

static uint64_t add_sat(uint64_t a, uint64_t b) { return a > UINT64_MAX - b ? UINT64_MAX : a + b; }

uint64_t model_weights_bytes(uint64_t D, uint64_t L, uint64_t V, uint64_t P) { return weights_bytes(gpt2_weights_shape(D, L, V, P)); }

WeightsShape gpt2_weights_shape(uint64_t D, uint64_t L, uint64_t V, uint64_t P) {
  WeightsShape s;
  s.D = D, s.L = L, s.V = V, s.P = P, s.H = 1, s.KV = 1, s.d_head = D, s.F = 4 * D;
  return s;
}

WeightsShape family_weights_shape(const Arch& a, uint64_t D, uint64_t L, uint64_t V, uint64_t P, bool untied, const std::string& stored_dtype) {
  WeightsShape s;
  s.D = D, s.L = L, s.V = V, s.P = a.positions == PositionKind::Learned ? P : 0;
  s.H = a.num_heads > 0 ? static_cast<uint64_t>(a.num_heads) : 1;
  s.d_head = a.head_dim > 0 ? static_cast<uint64_t>(a.head_dim) : (a.num_heads > 0 ? D / s.H : D);
  s.KV = a.num_kv_heads > 0 ? static_cast<uint64_t>(a.num_kv_heads) : s.H;
  s.F = a.mlp_width > 0 ? static_cast<uint64_t>(a.mlp_width) : 4 * D;
  s.gated = a.gated();
  s.untied = untied;
  s.qk_norm = a.qk_norm;
  s.norms = 4 + (a.placement == NormPlacement::Sandwich ? 2 : 0);  // g and b of ln1 and ln2 (b zero for RMSNorm), Gemma 2/3's two more
  s.bytes_per_weight = held_bytes_per_weight(stored_dtype);
  return s;
}

uint64_t held_bytes_per_weight(const std::string& dtype) {
  // A BF16 / F16 file's matrices and tables stay 16-bit (packed_gemm.h's WeightDtype); a
  // GGUF file's blocks (Q8_0 ... Q6_K) stay blocks: a byte a weight or less (the GGUF loader
  // checks its tensors' exact bytes).
  if (dtype == "BF16" || dtype == "F16") return 2;
  for (int i = 0; i < kWeightDtypes; ++i)
    if (is_block_dtype(static_cast<WeightDtype>(i)) && dtype == dtype_name(static_cast<WeightDtype>(i))) return 1;
  return 4;
}

uint64_t weights_bytes(const WeightsShape& s) {
  const uint64_t Dq = mul_sat(s.H, s.d_head), Dkv = mul_sat(s.KV, s.d_head);
  const uint64_t qkv = add_sat(Dq, mul_sat(2, Dkv));
  // matrices as stored: the fused W_Q|W_K|W_V, W_O, the MLP; W_Q, W_K, W_V also plain in float32 (plain_qkv)
  uint64_t matrices = add_sat(mul_sat(s.D, qkv), mul_sat(Dq, s.D));
  matrices = add_sat(matrices, mul_sat(s.gated ? 3 : 2, mul_sat(s.D, s.F)));
  const uint64_t plain_qkv = s.plain_qkv ? mul_sat(s.D, qkv) : 0;
  // vectors (float32): the Q|K|V biases and their fused copy, b_O, the MLP's biases, norms, q/k norms
  uint64_t vectors = add_sat(mul_sat(2, qkv), add_sat(mul_sat(2 + s.norms, s.D), s.F));
  if (s.qk_norm) vectors = add_sat(vectors, mul_sat(2, s.d_head));
  const uint64_t per_layer = add_sat(mul_sat(matrices, s.bytes_per_weight), mul_sat(add_sat(vectors, plain_qkv), 4));
  const uint64_t tables = mul_sat(mul_sat(s.untied ? 2 : 1, s.V), s.D);  // the embedding and an untied lm_head, as stored
  const uint64_t positions = mul_sat(s.P, s.D);                            // a learned position table, float32
  return add_sat(mul_sat(s.L, per_layer), add_sat(add_sat(mul_sat(tables, s.bytes_per_weight), mul_sat(positions, 4)), mul_sat(2 * 4, s.D)));
}

static std::string grouped(uint64_t n) {
  std::string s = std::to_string(n);
  for (int i = static_cast<int>(s.size()) - 3; i > 0; i -= 3) s.insert(static_cast<size_t>(i), ",");
  return s;
}

std::string weights_shape_text(const std::string& family, const WeightsShape& s) {
  return family + ": D=" + std::to_string(s.D) + ", L=" + std::to_string(s.L) + ", " + std::to_string(s.H) + " heads" +
         (s.KV != s.H ? " (" + std::to_string(s.KV) + " K/V)" : "") + " of " + std::to_string(s.d_head) + ", MLP " + std::to_string(s.F) +
         (s.gated ? " (gated)" : "") + ", vocabulary " + grouped(s.V) + (s.untied ? ", untied" : "") + ", held as " +
         std::to_string(s.bytes_per_weight) + " bytes a weight";
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

namespace {
thread_local uint64_t held_bytes = 0;  // MemoryHeld's, on this thread
thread_local std::string held_what;
}  // namespace

MemoryHeld::MemoryHeld(uint64_t bytes, std::string what) : bytes_(bytes), what_before_(held_what) {
  held_bytes = add_sat(held_bytes, bytes);
  held_what = held_what.empty() ? std::move(what) : held_what + " and " + what;
}

MemoryHeld::~MemoryHeld() {
  held_bytes -= std::min(held_bytes, bytes_);
  held_what = std::move(what_before_);
}

Status check_memory(uint64_t bytes, const std::string& what, const std::string& lower) {
  const Budget b = budget();
  if (add_sat(bytes, held_bytes) <= b.bytes) return Status();
  const std::string beside = held_bytes > 0 ? " beside the " + mib(held_bytes) + " of " + held_what : "";
  return Error{ErrorKind::InvalidArgument, what + " would need " + (bytes == UINT64_MAX ? std::string("more memory than exists") : mib(bytes)) + beside +
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
