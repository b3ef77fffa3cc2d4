// key_taps.cpp: see key_taps.h.
#include "app/gui/key_taps.h"

namespace headmap {

bool KeyTaps::on_key(const Event& e) {
  if (e.key < 0 || e.key >= kKeys) return true;
  if (e.action == kPress) {
    unseen_.set(static_cast<size_t>(e.key));
    return true;
  }
  // A release while some press is unseen: held, so that the frame sees that press with every
  // key that was down with it (Ctrl of a Ctrl+A whose Ctrl an earlier frame saw), in order.
  if (e.action == kRelease && unseen_.any()) {
    if (held_.size() < 64) {  // a flood of taps before one frame: the rest go through (and may be lost, as before)
      held_.push_back(e);
      return false;
    }
  }
  return true;
}

std::vector<KeyTaps::Event> KeyTaps::before_frame() {
  std::vector<Event> now;
  for (const Event& r : ready_)  // a key pressed again since keeps that press for this frame (its release, if any, is held)
    if (!unseen_.test(static_cast<size_t>(r.key))) now.push_back(r);
  ready_.clear();
  ready_.swap(held_);
  unseen_.reset();
  return now;
}

KeyTaps& key_taps() {
  static KeyTaps taps;
  return taps;
}

}  // namespace headmap
