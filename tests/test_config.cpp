// Config validation: typed errors whose messages name the fix.
#include <gtest/gtest.h>

#include "core/model/config.h"

using namespace headmap;

static std::string message(int D, int H) {
  ModelConfig c;
  c.d_model = D;
  c.num_heads = H;
  Status s = validate(c);
  return s ? "" : s.error().message;
}

TEST(Config, DivisibilityErrorNamesTheNeighbours) {
  EXPECT_EQ(message(256, 3), "d_model 256 is not divisible by 3 heads: try 2 or 4");
  EXPECT_EQ(message(24, 5), "d_model 24 is not divisible by 5 heads: try 4 or 6");
  EXPECT_EQ(message(96, 7), "d_model 96 is not divisible by 7 heads: try 6 or 8");
  EXPECT_EQ(message(7, 2), "d_model 7 is not divisible by 2 heads: try 1 or 7");
}

TEST(Config, ZeroAndTooManyHeadsAreTypedErrors) {
  ModelConfig c;
  c.num_heads = 0;
  Status s = validate(c);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().kind, ErrorKind::InvalidConfig);
  EXPECT_NE(s.error().message.find("try 1"), std::string::npos);
  c.d_model = 24;
  c.num_heads = 30;
  s = validate(c);
  ASSERT_FALSE(s);
  EXPECT_NE(s.error().message.find("try 24"), std::string::npos) << s.error().message;
}

TEST(Config, RangesAreChecked) {
  ModelConfig c;
  EXPECT_TRUE(validate(c));
  c.num_layers = kMaxModelLayers + 1;  // loaded weights go up to 48 (gpt2-xl)
  EXPECT_FALSE(validate(c));
  c.num_layers = 24;  // gpt2-medium; random init stops at kMaxLayers (12) in the CLI and the app
  EXPECT_TRUE(validate(c));
  c.context = 2049;
  EXPECT_FALSE(validate(c));
  c.context = 2048;
  EXPECT_TRUE(validate(c));
  c.d_model = 0;
  EXPECT_FALSE(validate(c));
}

TEST(Config, NearestValidHeadCount) {
  EXPECT_EQ(nearest_valid_head_count(256, 3), 2);  // tie between 2 and 4 goes down
  EXPECT_EQ(nearest_valid_head_count(24, 5), 4);
  EXPECT_EQ(nearest_valid_head_count(24, 7), 6);
  EXPECT_EQ(nearest_valid_head_count(24, 0), 1);
  EXPECT_EQ(nearest_valid_head_count(24, 100), 24);
  EXPECT_EQ(valid_head_counts(24), (std::vector<int>{1, 2, 3, 4, 6, 8, 12, 24}));
}
