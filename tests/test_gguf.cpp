// test_gguf.cpp: the GGUF reader (core/io/gguf.h) on files built byte by byte here from the
// format's description: every value type, nested arrays, the alignment key, versions 2 and
// 3, dims innermost-first; hostile files (every truncation, offsets past the end or
// overlapping or unaligned, absurd counts, undefined types, big-endian, version 1) refused
// with messages; blocks of Q8_0, Q4_0, Q4_1, Q5_0, Q6_K and IQ4_XS widened to values worked out by
// hand from the block layouts; unsupported types, architectures and pre-tokenizers refused by
// name; token types retyped by their text as llama.cpp's loader does (kTokenNames). (The whole
// models are held to numpy and to llama.cpp by gguf_matches_numpy and gguf_matches_llama_cpp,
// the names on real vocabularies by gguf_real_vocab_matches_llama_cpp.)
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/io/gguf.h"
#include "core/io/gguf_model.h"
#include "core/io/gguf_quant.h"
#include "core/math/half.h"
#include "core/math/weight_dtype.h"

using namespace headmap;

namespace {
// A little-endian byte writer for hand-made GGUF files.
struct Bytes {
  std::string b;
  template <class T>
  Bytes& put(T v) {
    b.append(reinterpret_cast<const char*>(&v), sizeof(T));
    return *this;
  }
  Bytes& str(const std::string& s) {
    put<uint64_t>(s.size());
    b += s;
    return *this;
  }
  Bytes& key(const std::string& k, GgufValueType t) {
    str(k);
    return put<uint32_t>(static_cast<uint32_t>(t));
  }
};

// A file with the given metadata pairs (already encoded) and one F32 tensor "w" of ne = {3, 2}.
std::string file_with(uint32_t version, uint64_t n_kv, const std::string& kv, uint32_t alignment = 32) {
  Bytes f;
  f.b = "GGUF";
  f.put<uint32_t>(version).put<uint64_t>(1).put<uint64_t>(n_kv);
  f.b += kv;
  f.str("w").put<uint32_t>(2).put<uint64_t>(3).put<uint64_t>(2).put<uint32_t>(0).put<uint64_t>(0);
  f.b.append((alignment - f.b.size() % alignment) % alignment, '\0');
  for (int i = 0; i < 6; ++i) f.put<float>(static_cast<float>(i) + 0.5f);
  return f.b;
}
}  // namespace

TEST(Gguf, ReadsEveryValueTypeArraysAndTensorInfo) {
  Bytes kv;
  kv.key("u8", GgufValueType::U8).put<uint8_t>(200);
  kv.key("i8", GgufValueType::I8).put<int8_t>(-100);
  kv.key("u16", GgufValueType::U16).put<uint16_t>(60000);
  kv.key("i16", GgufValueType::I16).put<int16_t>(-30000);
  kv.key("u32", GgufValueType::U32).put<uint32_t>(4000000000u);
  kv.key("i32", GgufValueType::I32).put<int32_t>(-2000000000);
  kv.key("f32", GgufValueType::F32).put<float>(0.25f);
  kv.key("bool", GgufValueType::Bool).put<uint8_t>(1);
  kv.key("str", GgufValueType::String).str("héllo");
  kv.key("u64", GgufValueType::U64).put<uint64_t>(uint64_t(1) << 40);
  kv.key("i64", GgufValueType::I64).put<int64_t>(-(int64_t(1) << 40));
  kv.key("f64", GgufValueType::F64).put<double>(-1.5);
  kv.key("arr", GgufValueType::Array).put<uint32_t>(static_cast<uint32_t>(GgufValueType::String)).put<uint64_t>(2).str("a").str("bc");
  kv.key("nested", GgufValueType::Array).put<uint32_t>(static_cast<uint32_t>(GgufValueType::Array)).put<uint64_t>(1);
  kv.put<uint32_t>(static_cast<uint32_t>(GgufValueType::I32)).put<uint64_t>(2).put<int32_t>(7).put<int32_t>(-7);
  kv.key("general.alignment", GgufValueType::U32).put<uint32_t>(64);
  for (uint32_t version : {2u, 3u}) {
    const std::string bytes = file_with(version, 15, kv.b, 64);
    Result<GgufFile> f = GgufFile::view(bytes.data(), bytes.size(), "t.gguf");
    ASSERT_TRUE(f) << f.error().message;
    EXPECT_EQ(f->version(), version);
    EXPECT_EQ(f->alignment(), 64u);
    int64_t x = 0;
    EXPECT_TRUE(f->find("u8")->as_int(0, 255, &x) && x == 200);
    EXPECT_TRUE(f->find("i8")->as_int(-128, 127, &x) && x == -100);
    EXPECT_TRUE(f->find("u16")->as_int(0, 70000, &x) && x == 60000);
    EXPECT_TRUE(f->find("i16")->as_int(-40000, 0, &x) && x == -30000);
    EXPECT_TRUE(f->find("u32")->as_int(0, int64_t(1) << 33, &x) && x == 4000000000LL);
    EXPECT_TRUE(f->find("i32")->as_int(-(int64_t(1) << 33), 0, &x) && x == -2000000000LL);
    EXPECT_TRUE(f->find("u64")->as_int(0, int64_t(1) << 41, &x) && x == int64_t(1) << 40);
    EXPECT_TRUE(f->find("i64")->as_int(-(int64_t(1) << 41), 0, &x) && x == -(int64_t(1) << 40));
    EXPECT_FALSE(f->find("u32")->as_int(0, 100, &x));  // out of the asked range
    EXPECT_EQ(f->find("f32")->f, 0.25);
    EXPECT_EQ(f->find("f64")->f, -1.5);
    EXPECT_EQ(f->find("bool")->i, 1);
    EXPECT_EQ(f->find("str")->s, "héllo");
    ASSERT_EQ(f->find("arr")->arr.size(), 2u);
    EXPECT_EQ(f->find("arr")->arr[1].s, "bc");
    ASSERT_EQ(f->find("nested")->arr.size(), 1u);
    EXPECT_EQ(f->find("nested")->arr[0].arr[1].i, -7);
    const GgufTensorInfo* w = f->tensor("w");
    ASSERT_NE(w, nullptr);
    EXPECT_EQ(w->ne, (std::vector<int64_t>{3, 2}));  // innermost first: 2 rows of 3
    EXPECT_EQ(w->rows(), 2);
    EXPECT_EQ(w->bytes, 24u);
    float v[6];
    std::memcpy(v, f->data(*w), 24);
    EXPECT_EQ(v[5], 5.5f);
    EXPECT_EQ((f->data(*w) - bytes.data()) % 64, 0);  // the data section honours general.alignment
    // Arrays stepped over (the Open dialog's listing): the same header, values and tensors, the arrays empty.
    Result<GgufFile> h = GgufFile::view(bytes.data(), bytes.size(), "t.gguf", GgufArrays::Skipped);
    ASSERT_TRUE(h) << h.error().message;
    EXPECT_EQ(h->find("str")->s, "héllo");
    EXPECT_EQ(h->find("f64")->f, -1.5);
    EXPECT_EQ(h->find("arr")->elem, GgufValueType::String);
    EXPECT_TRUE(h->find("arr")->arr.empty());
    EXPECT_TRUE(h->find("nested")->arr.empty());
    ASSERT_NE(h->tensor("w"), nullptr);
    EXPECT_EQ(h->data(*h->tensor("w")), f->data(*w));
  }
}

TEST(Gguf, RefusesHostileFilesWithMessages) {
  Bytes kv;
  kv.key("general.architecture", GgufValueType::String).str("llama");
  const std::string good = file_with(3, 1, kv.b);
  ASSERT_TRUE(GgufFile::view(good.data(), good.size(), "t.gguf"));
  // every truncation: an error, never a crash
  for (size_t n = 0; n < good.size(); ++n) {
    Result<GgufFile> f = GgufFile::view(good.data(), n, "t.gguf");
    EXPECT_FALSE(f) << "a file cut to " << n << " bytes was accepted";
    EXPECT_FALSE(GgufFile::view(good.data(), n, "t.gguf", GgufArrays::Skipped)) << "a file cut to " << n << " bytes was accepted, arrays skipped";
    if (!f) {
      EXPECT_NE(f.error().message.find("t.gguf"), std::string::npos);
    }
  }
  auto refused = [](std::string bytes, const std::string& says) {
    Result<GgufFile> f = GgufFile::view(bytes.data(), bytes.size(), "t.gguf");
    if (f) return ::testing::AssertionFailure() << "accepted";
    if (f.error().message.find(says) == std::string::npos) return ::testing::AssertionFailure() << f.error().message;
    return ::testing::AssertionSuccess();
  };
  std::string s = good;
  s[0] = 'X';
  EXPECT_TRUE(refused(s, "not a GGUF file"));
  EXPECT_TRUE(refused(file_with(1, 1, kv.b), "version 1"));
  EXPECT_TRUE(refused(file_with(0x03000000u, 1, kv.b), "big-endian"));
  EXPECT_TRUE(refused(file_with(7, 1, kv.b), "version 7"));
  // absurd counts
  s = good;
  uint64_t huge = uint64_t(1) << 60;
  std::memcpy(&s[16], &huge, 8);
  EXPECT_TRUE(refused(s, "metadata pairs"));
  s = good;
  std::memcpy(&s[8], &huge, 8);
  EXPECT_TRUE(refused(s, "tensors"));
  // a string longer than the file
  Bytes longstr;
  longstr.key("k", GgufValueType::String).put<uint64_t>(uint64_t(1) << 50);
  EXPECT_TRUE(refused(file_with(3, 1, longstr.b), "ends inside"));
  // an array claiming more elements than bytes
  Bytes arr;
  arr.key("a", GgufValueType::Array).put<uint32_t>(static_cast<uint32_t>(GgufValueType::U64)).put<uint64_t>(uint64_t(1) << 40);
  EXPECT_TRUE(refused(file_with(3, 1, arr.b), "claims"));
  Bytes badtype;
  badtype.key("t", static_cast<GgufValueType>(13)).put<uint8_t>(0);
  EXPECT_TRUE(refused(file_with(3, 1, badtype.b), "value type 13"));
  Bytes badbool;
  badbool.key("b", GgufValueType::Bool).put<uint8_t>(2);
  EXPECT_TRUE(refused(file_with(3, 1, badbool.b), "only 0 or 1"));
  Bytes align;
  align.key("general.alignment", GgufValueType::U32).put<uint32_t>(48);
  EXPECT_TRUE(refused(file_with(3, 1, align.b), "power of two"));
  Bytes dup;
  dup.key("x", GgufValueType::U8).put<uint8_t>(1).key("x", GgufValueType::U8).put<uint8_t>(2);
  EXPECT_TRUE(refused(file_with(3, 2, dup.b), "appears twice"));

  // tensor infos: the offset past the end, unaligned, a zero dim, too many dims, an undefined type, a partial block
  const size_t info = 24 + kv.b.size() + 8 + 1;  // after the name "w"
  auto patched = [&](size_t at, const void* v, size_t n) {
    std::string t = good;
    std::memcpy(&t[at], v, n);
    return t;
  };
  const uint64_t past = 64, unaligned = 4, zero = 0;
  const uint32_t five = 5, undefined = 4, q4 = 2;
  EXPECT_TRUE(refused(patched(info + 4 + 16 + 4, &past, 8), "runs past the end"));
  EXPECT_TRUE(refused(patched(info + 4 + 16 + 4, &unaligned, 8), "not a multiple of the alignment"));
  EXPECT_TRUE(refused(patched(info + 4, &zero, 8), "has a dim of 0"));
  EXPECT_TRUE(refused(patched(info, &five, 4), "5 dims"));
  EXPECT_TRUE(refused(patched(info + 4 + 16, &undefined, 4), "ggml type 4"));
  EXPECT_TRUE(refused(patched(info + 4 + 16, &q4, 4), "not a whole number of 32-element blocks"));
  // IQ4_XS (ggml type 23: 256-element blocks of 136 bytes): a row of 3 is not a whole block; a
  // row of 256 (2 rows, 272 bytes) runs past the 24 bytes the file holds
  const uint32_t iq4_xs = 23;
  const uint64_t row256 = 256;
  std::string xs = patched(info + 4 + 16, &iq4_xs, 4);
  EXPECT_TRUE(refused(xs, "is IQ4_XS but its row of 3 is not a whole number of 256-element blocks"));
  std::memcpy(&xs[info + 4], &row256, 8);
  EXPECT_TRUE(refused(xs, "(272 bytes at offset 0) runs past the end"));
  // two tensors over the same bytes
  Bytes two;
  two.b = "GGUF";
  two.put<uint32_t>(3).put<uint64_t>(2).put<uint64_t>(0);
  two.str("a").put<uint32_t>(1).put<uint64_t>(8).put<uint32_t>(0).put<uint64_t>(0);
  two.str("b").put<uint32_t>(1).put<uint64_t>(8).put<uint32_t>(0).put<uint64_t>(0);
  two.b.append((32 - two.b.size() % 32) % 32, '\0');
  two.b.append(32, '\0');
  EXPECT_TRUE(refused(two.b, "overlap"));
}

// Metadata is copied out of the file (strings, arrays): what it would take counts against the
// memory budget, strings too, so a file of gigabytes of metadata is refused before it is copied.
TEST(Gguf, MetadataStringsCountAgainstTheMemoryBudget) {
  ::setenv("HEADMAP_MEMORY_BUDGET", "64K", 1);
  Bytes one;  // one string value of 100 KB
  one.key("general.name", GgufValueType::String).str(std::string(100000, 'x'));
  Bytes many;  // an array of 200 strings of 1 KB: its elements fit, its strings do not
  many.key("tokenizer.ggml.tokens", GgufValueType::Array).put<uint32_t>(static_cast<uint32_t>(GgufValueType::String)).put<uint64_t>(200);
  for (int k = 0; k < 200; ++k) many.str(std::string(1000, 'a' + k % 26));
  const std::string a = file_with(3, 1, one.b), b = file_with(3, 1, many.b);
  for (GgufArrays arrays : {GgufArrays::Kept, GgufArrays::Skipped}) {
    Result<GgufFile> f = GgufFile::view(a.data(), a.size(), "t.gguf", arrays);
    ASSERT_FALSE(f) << "a 100 KB string was copied under a 64 KB budget";
    EXPECT_NE(f.error().message.find("memory budget"), std::string::npos) << f.error().message;
  }
  Result<GgufFile> f = GgufFile::view(b.data(), b.size(), "t.gguf");
  ASSERT_FALSE(f) << "200 KB of strings in an array were copied under a 64 KB budget";
  EXPECT_NE(f.error().message.find("memory budget"), std::string::npos) << f.error().message;
  // stepped over (the cache listing reads headers so), the array holds nothing: accepted
  EXPECT_TRUE(GgufFile::view(b.data(), b.size(), "t.gguf", GgufArrays::Skipped));
  ::unsetenv("HEADMAP_MEMORY_BUDGET");
  EXPECT_TRUE(GgufFile::view(a.data(), a.size(), "t.gguf"));
  EXPECT_TRUE(GgufFile::view(b.data(), b.size(), "t.gguf"));
}

// Blocks written by hand from ggml-common.h's layouts; the expected values worked out here.
TEST(Gguf, DequantizesBlocksAsTheFormatDefinesThem) {
  float out[256];
  // Q8_0: d = 0.5 (F16 0x3800), q = 0, 1, -2, 3, ...
  std::string b(34, '\0');
  const uint16_t half = float_to_half(0.5f);
  std::memcpy(&b[0], &half, 2);
  for (int j = 0; j < 32; ++j) b[2 + j] = static_cast<char>(j % 2 ? j : -j);
  ASSERT_TRUE(gguf_dequantize(8, b.data(), 32, out));
  for (int j = 0; j < 32; ++j) EXPECT_EQ(out[j], 0.5f * (j % 2 ? j : -j)) << j;
  // Q4_0: byte j = low nibble element j, high nibble element j + 16; x = d (q - 8)
  b.assign(18, '\0');
  std::memcpy(&b[0], &half, 2);
  for (int j = 0; j < 16; ++j) b[2 + j] = static_cast<char>(j | ((15 - j) << 4));
  ASSERT_TRUE(gguf_dequantize(2, b.data(), 32, out));
  for (int j = 0; j < 16; ++j) {
    EXPECT_EQ(out[j], 0.5f * (j - 8));
    EXPECT_EQ(out[j + 16], 0.5f * (15 - j - 8));
  }
  // Q4_1: x = d q + m, m = -1
  b.assign(20, '\0');
  const uint16_t minus1 = float_to_half(-1.0f);
  std::memcpy(&b[0], &half, 2);
  std::memcpy(&b[2], &minus1, 2);
  for (int j = 0; j < 16; ++j) b[4 + j] = static_cast<char>(3 | (7 << 4));
  ASSERT_TRUE(gguf_dequantize(3, b.data(), 32, out));
  EXPECT_EQ(out[0], 0.5f * 3 - 1);
  EXPECT_EQ(out[31], 0.5f * 7 - 1);
  // Q5_0: the fifth bit of element j is bit j of qh; x = d (q - 16)
  b.assign(22, '\0');
  std::memcpy(&b[0], &half, 2);
  const uint32_t qh = (1u << 0) | (1u << 17);  // element 0 and element 17 get +16
  std::memcpy(&b[2], &qh, 4);
  for (int j = 0; j < 16; ++j) b[6 + j] = static_cast<char>(1 | (2 << 4));
  ASSERT_TRUE(gguf_dequantize(6, b.data(), 32, out));
  EXPECT_EQ(out[0], 0.5f * (1 + 16 - 16));
  EXPECT_EQ(out[1], 0.5f * (1 - 16));
  EXPECT_EQ(out[17], 0.5f * (2 + 16 - 16));
  EXPECT_EQ(out[16], 0.5f * (2 - 16));
  // Q6_K: ql[128], qh[64], int8 scales[16], d. Element 0: low 4 bits ql[0] & 15, high 2 bits
  // qh[0] & 3, scale[0]; element 96: ql[32] >> 4, (qh[0] >> 6) & 3, scale[6].
  b.assign(210, '\0');
  b[0] = static_cast<char>(0x05);
  b[32] = static_cast<char>(0x90);
  b[128] = static_cast<char>(0x80 | 0x02);  // qh[0]: bits 0-1 = 2 (element 0), bits 6-7 = 2 (element 96)
  b[192] = 3;
  b[198] = -2;
  const uint16_t quarter = float_to_half(0.25f);
  std::memcpy(&b[208], &quarter, 2);
  ASSERT_TRUE(gguf_dequantize(14, b.data(), 256, out));
  EXPECT_EQ(out[0], 0.25f * 3 * ((5 | (2 << 4)) - 32));
  EXPECT_EQ(out[96], 0.25f * -2 * ((9 | (2 << 4)) - 32));
  EXPECT_EQ(out[1], 0.25f * 3 * (0 - 32));
  // IQ4_XS: d, scales_h (u16), scales_l[4], qs[128]. Sub-block ib's 6-bit scale: nibble ib of
  // scales_l (low nibble first), high bits 2ib, 2ib + 1 of scales_h; its 16 bytes of qs give
  // elements 0-15 (low nibbles) and 16-31 (high); x = (d * (ls - 32)) * kvalues_iq4nl[q].
  b.assign(136, '\0');
  std::memcpy(&b[0], &half, 2);
  const uint16_t scales_h = (2u << 0) | (1u << 10) | (3u << 14);  // sub-blocks 0, 5, 7: high bits 2, 1, 3
  std::memcpy(&b[2], &scales_h, 2);
  b[4] = static_cast<char>(0x7 | (0x9 << 4));  // sub-block 0: low 7 (ls 39), sub-block 1: 9 (ls 9)
  b[6] = static_cast<char>(0xA << 4);         // sub-block 5: low 10 (ls 26)
  b[7] = static_cast<char>(0xF << 4);         // sub-block 7: low 15 (ls 63); sub-block 6: ls 0
  b[8] = static_cast<char>(0x0 | (0xF << 4));  // element 0: q 0 (-127), element 16: q 15 (113)
  b[8 + 16 + 3] = static_cast<char>(0x5 | (0x8 << 4));  // sub-block 1's elements 3 (q 5: -35) and 19 (q 8: 1)
  b[8 + 80] = 0x0C;                           // sub-block 5's element 0: q 12 (53)
  b[8 + 96 + 15] = static_cast<char>(0xE0);    // sub-block 6's element 31: q 14 (89)
  b[8 + 112 + 15] = 0x0D;                     // sub-block 7's element 15: q 13 (69), element 31: q 0
  ASSERT_TRUE(gguf_dequantize(23, b.data(), 256, out));
  EXPECT_EQ(out[0], 0.5f * 7 * -127);
  EXPECT_EQ(out[16], 0.5f * 7 * 113);
  EXPECT_EQ(out[1], 0.5f * 7 * -127);  // qs 0: q 0
  EXPECT_EQ(out[32 + 3], 0.5f * -23 * -35);
  EXPECT_EQ(out[32 + 19], 0.5f * -23 * 1);
  EXPECT_EQ(out[160], 0.5f * -6 * 53);
  EXPECT_EQ(out[192 + 31], 0.5f * -32 * 89);
  EXPECT_EQ(out[224 + 15], 0.5f * 31 * 69);
  EXPECT_EQ(out[224 + 31], 0.5f * 31 * -127);
}

// Two tables say how many bytes a type's block holds: the file's (ggml_type_info, which sizes
// every tensor against the file) and the dequantizers' (weight_dtype_info, which reads them).
// They must agree for every type headmap reads, or a widening could read past a tensor; and
// the supported list in the messages names each of them.
TEST(Gguf, EveryTypeItReadsHasTheFileTablesBlockSize) {
  const std::string supported = gguf_supported_types();
  for (int i = 0; i < kWeightDtypes; ++i) {
    const WeightDtypeInfo& w = weight_dtype_info(static_cast<WeightDtype>(i));
    SCOPED_TRACE(w.name);
    const GgmlTypeInfo* g = ggml_type_info(w.ggml_type);
    ASSERT_NE(g, nullptr);
    EXPECT_STREQ(g->name, w.name);
    EXPECT_EQ(g->block, w.block);
    EXPECT_EQ(g->bytes, w.bytes);
    EXPECT_TRUE(gguf_type_supported(w.ggml_type));
    EXPECT_NE((", " + supported + ",").find(std::string(", ") + w.name + ","), std::string::npos) << supported;
  }
  EXPECT_EQ(bits_per_weight(WeightDtype::IQ4_XS), 4.25);
}

TEST(Gguf, RefusesWhatItDoesNotReadByName) {
  float out[256];
  std::string b(66, '\0');
  Status s = gguf_dequantize(16, b.data(), 256, out);  // IQ2_XXS
  ASSERT_FALSE(s);
  EXPECT_NE(s.error().message.find("IQ2_XXS is not supported"), std::string::npos) << s.error().message;
  EXPECT_NE(s.error().message.find("Q4_K"), std::string::npos);  // the supported list

  Bytes kv;
  kv.key("general.architecture", GgufValueType::String).str("mamba");
  std::string bytes = file_with(3, 1, kv.b);
  Result<GgufFile> f = GgufFile::view(bytes.data(), bytes.size(), "t.gguf");
  ASSERT_TRUE(f);
  Result<HfModelConfig> c = gguf_config(*f);
  ASSERT_FALSE(c);
  EXPECT_NE(c.error().message.find("\"mamba\""), std::string::npos);
  EXPECT_NE(c.error().message.find("qwen3"), std::string::npos);

  Bytes tok;
  tok.key("tokenizer.ggml.model", GgufValueType::String).str("gpt2");
  tok.key("tokenizer.ggml.pre", GgufValueType::String).str("mystery-bpe");
  tok.key("tokenizer.ggml.tokens", GgufValueType::Array).put<uint32_t>(static_cast<uint32_t>(GgufValueType::String)).put<uint64_t>(2).str("a").str("b");
  tok.key("tokenizer.ggml.merges", GgufValueType::Array).put<uint32_t>(static_cast<uint32_t>(GgufValueType::String)).put<uint64_t>(0);
  bytes = file_with(3, 4, tok.b);
  f = GgufFile::view(bytes.data(), bytes.size(), "t.gguf");
  ASSERT_TRUE(f) << f.error().message;
  Result<std::string> j = gguf_tokenizer_json(*f);
  ASSERT_FALSE(j);
  EXPECT_NE(j.error().message.find("\"mystery-bpe\""), std::string::npos) << j.error().message;
  EXPECT_NE(j.error().message.find("llama-bpe"), std::string::npos);
}

// tokenizer.ggml.* of a gpt2 vocabulary (tokens, their types or none, extra keys) -> each added
// token of the tokenizer.json: 3 special (control), 4 plain (user-defined); absent: text.
static std::map<std::string, int> added_tokens(const std::vector<std::pair<std::string, int>>& toks, bool typed, const std::string& extra = "",
                                               int n_extra = 0) {
  Bytes kv;
  kv.key("tokenizer.ggml.model", GgufValueType::String).str("gpt2");
  kv.key("tokenizer.ggml.pre", GgufValueType::String).str("gpt-2");
  kv.key("tokenizer.ggml.tokens", GgufValueType::Array).put<uint32_t>(static_cast<uint32_t>(GgufValueType::String)).put<uint64_t>(toks.size());
  for (const auto& t : toks) kv.str(t.first);
  if (typed) {
    kv.key("tokenizer.ggml.token_type", GgufValueType::Array).put<uint32_t>(static_cast<uint32_t>(GgufValueType::I32)).put<uint64_t>(toks.size());
    for (const auto& t : toks) kv.put<int32_t>(t.second);
  }
  kv.key("tokenizer.ggml.merges", GgufValueType::Array).put<uint32_t>(static_cast<uint32_t>(GgufValueType::String)).put<uint64_t>(0);
  kv.b += extra;
  std::string bytes = file_with(3, 4 + (typed ? 1 : 0) + n_extra, kv.b);
  Result<GgufFile> f = GgufFile::view(bytes.data(), bytes.size(), "t.gguf");
  EXPECT_TRUE(f);
  if (!f) return {};
  Result<std::string> j = gguf_tokenizer_json(*f);
  EXPECT_TRUE(j) << j.error().message;
  if (!j) return {};
  std::map<std::string, int> out;
  const nlohmann::json parsed = nlohmann::json::parse(*j);
  for (const auto& a : parsed["added_tokens"]) out[a["content"].get<std::string>()] = a["special"].get<bool>() ? 3 : 4;
  return out;
}

TEST(Gguf, RetypesTokensByTheirTextAsLlamaCpp) {
  // An untyped file: every token normal; the end-of-generation and FIM spellings become control
  // (one per FIM role: the lowest id), the gpt-oss channel tokens user-defined, the rest text.
  std::map<std::string, int> got = added_tokens({{"a", 1}, {"<|im_start|>", 1}, {"<|im_end|>", 1}, {"</s>", 1}, {"<SUF>", 1}, {"<|fim_suffix|>", 1},
                                                 {"<|fim_pad|>", 1}, {"<|channel|>", 1}, {"<eos>", 1}, {"<|eot_id|>", 1}},
                                                false);
  EXPECT_EQ(got, (std::map<std::string, int>{{"<|im_end|>", 3}, {"</s>", 3}, {"<SUF>", 3}, {"<|fim_pad|>", 3}, {"<|channel|>", 4}, {"<eos>", 3},
                                             {"<|eot_id|>", 3}}));

  // Typed: control and unknown stay; user-defined and unused become control; a FIM role whose
  // id the file gives (either key) looks for no name; <|end|> is user-defined next to <|return|>
  // and <|call|>, </s> normal next to <|tool_response>; the channel tokens user-defined.
  Bytes keys;
  keys.key("tokenizer.ggml.prefix_token_id", GgufValueType::U32).put<uint32_t>(1);
  keys.key("tokenizer.ggml.fim_mid_token_id", GgufValueType::U32).put<uint32_t>(99);  // out of range: not given
  got = added_tokens({{"a", 1}, {"<|fim_prefix|>", 1}, {"<|fim_middle|>", 1}, {"<|im_end|>", 4}, {"<|endoftext|>", 5}, {"<|eom_id|>", 2},
                      {"<|end|>", 3}, {"<|return|>", 1}, {"<|call|>", 3}, {"</s>", 3}, {"<|tool_response>", 3}, {"<|message|>", 3}},
                     true, keys.b, 2);
  EXPECT_EQ(got, (std::map<std::string, int>{{"<|fim_middle|>", 3}, {"<|im_end|>", 3}, {"<|endoftext|>", 3}, {"<|eom_id|>", 3}, {"<|end|>", 4},
                                             {"<|return|>", 3}, {"<|call|>", 3}, {"<|tool_response>", 3}, {"<|message|>", 4}}));

  // The exceptions need both texts of a pair: <|end|> with <|return|> alone stays control.
  got = added_tokens({{"<|end|>", 1}, {"<|return|>", 1}, {"<|flush|>", 3}}, true);
  EXPECT_EQ(got, (std::map<std::string, int>{{"<|end|>", 3}, {"<|return|>", 3}, {"<|flush|>", 3}}));
}
