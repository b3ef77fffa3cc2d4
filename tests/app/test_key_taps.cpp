// KeyTaps (app/gui/key_taps.h): a key pressed and released before a frame reads the keys is
// seen pressed by that frame, with the keys down beside it, and released by the next; other
// events pass through.
#include "app/gui/key_taps.h"

#include <gtest/gtest.h>

namespace headmap {
namespace {
constexpr int kEnter = 257, kCtrl = 341, kA = 65;  // GLFW's key codes
KeyTaps::Event press(int k) { return {k, 0, KeyTaps::kPress, 0}; }
KeyTaps::Event release(int k) { return {k, 0, KeyTaps::kRelease, 0}; }
}  // namespace

TEST(KeyTaps, ATapBeforeAFrameIsReleasedOnlyBeforeTheFrameAfterIt) {
  KeyTaps t;
  EXPECT_TRUE(t.on_key(press(kEnter)));     // down at once
  EXPECT_FALSE(t.on_key(release(kEnter)));  // held: no frame has seen the press
  EXPECT_TRUE(t.before_frame().empty()) << "the frame that reads the press sees the key down";
  const std::vector<KeyTaps::Event> now = t.before_frame();
  ASSERT_EQ(now.size(), 1u) << "the next frame sees it released";
  EXPECT_EQ(now[0].key, kEnter);
  EXPECT_EQ(now[0].action, KeyTaps::kRelease);
  EXPECT_TRUE(t.before_frame().empty());
}

TEST(KeyTaps, AKeyHeldAcrossAFrameIsReleasedAtOnce) {
  KeyTaps t;
  EXPECT_TRUE(t.on_key(press(kA)));
  EXPECT_TRUE(t.before_frame().empty());
  EXPECT_TRUE(t.on_key(release(kA))) << "a frame saw it down: the release goes through";
  EXPECT_TRUE(t.before_frame().empty());
}

TEST(KeyTaps, CtrlAInOneBatchKeepsCtrlDownForTheFrameThatSeesA) {
  KeyTaps t;  // xdotool's "key ctrl+a", or a quick chord during a slow frame
  EXPECT_TRUE(t.on_key(press(kCtrl)));
  EXPECT_TRUE(t.on_key(press(kA)));
  EXPECT_FALSE(t.on_key(release(kA)));
  EXPECT_FALSE(t.on_key(release(kCtrl)));
  EXPECT_TRUE(t.before_frame().empty());
  const std::vector<KeyTaps::Event> now = t.before_frame();
  ASSERT_EQ(now.size(), 2u);
  EXPECT_EQ(now[0].key, kA);
  EXPECT_EQ(now[1].key, kCtrl) << "in the order they came";
}

TEST(KeyTaps, APressAgainBeforeTheReleaseIsAppliedKeepsTheKeyDownForItsFrame) {
  KeyTaps t;
  t.on_key(press(kEnter));
  t.on_key(release(kEnter));
  EXPECT_TRUE(t.before_frame().empty());  // frame 1 sees the first tap
  EXPECT_TRUE(t.on_key(press(kEnter)));   // the second tap, before frame 2
  EXPECT_FALSE(t.on_key(release(kEnter)));
  EXPECT_TRUE(t.before_frame().empty()) << "frame 2 must see the key down (the second press), not the first release";
  ASSERT_EQ(t.before_frame().size(), 1u) << "frame 3 sees it released";
}
TEST(KeyTaps, AModifierAnEarlierFrameSawIsReleasedAfterTheKeyItModifies) {
  KeyTaps t;  // Ctrl went down and woke a frame; A then came and went, and Ctrl went up, before the next
  EXPECT_TRUE(t.on_key(press(kCtrl)));
  EXPECT_TRUE(t.before_frame().empty());
  EXPECT_TRUE(t.on_key(press(kA)));
  EXPECT_FALSE(t.on_key(release(kA)));
  EXPECT_FALSE(t.on_key(release(kCtrl))) << "Ctrl must stay down for the frame that sees A";
  EXPECT_TRUE(t.before_frame().empty());
  const std::vector<KeyTaps::Event> now = t.before_frame();
  ASSERT_EQ(now.size(), 2u);
  EXPECT_EQ(now[0].key, kA);
  EXPECT_EQ(now[1].key, kCtrl);
}

}  // namespace headmap
