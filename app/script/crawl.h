// crawl.h: the crawler (`headmap --crawl`), a scripted run of the real app that uses every
// widget the frames draw, found through Dear ImGui's own item data (item_log.h), not
// through a list: a widget added later is used without anyone adding it anywhere.
//
// After the --then settings have set up a state, it repeats until nothing is left: from
// the newest frame's items it picks one not yet used (an open popup's or dialog's entries
// first, then the panels' widgets, then the entries of lists closed since, then the tabs,
// then the menu bar), scrolls it into view if needed (the wheel), and acts on it through
// the input path a person uses (input.h: the pointer moves, GLFW's callbacks get the
// buttons and keys):
//   - a slider or drag: dragged past both ends, then Ctrl+clicked and given a number out of
//     range, then its first value typed back;
//   - a text field: an empty text, a number out of range, and 500 characters of mixed
//     scripts (Latin, CJK, Arabic, emoji) pasted and committed, then its first text back;
//     inside a file dialog nothing is committed (no Enter, no OK), so nothing is written;
//   - anything else is clicked: buttons, checkboxes, combos, menus, tabs, tree nodes,
//     collapsing headers, selectables; what a click opens (a combo's list, a menu, a
//     dialog) is crawled next, and each entry of a list is reached again through the
//     clicks that opened it.
// A widget that has a right-click action (item_log.h: the app asked whether the right button
// clicked it) is right-clicked once per group of repeated widgets. Then it presses every
// shortcut of the command table (commands.cpp). File > Quit and
// Ctrl+Q are the only things it leaves alone; a file dialog is always left with Cancel.
// Widgets repeated over data (a chip per token, a map per head: one label in one window)
// are sampled, the first two and the last; a control that a layout change moved to another
// window (a larger font moves the model controls into a tab) is used once. A training the
// crawl started is cancelled at once, and the crawl sleeps until it has stopped. The second
// window size's run may skip what the first one used (CrawlOptions::skip_keys).
//
// Each action is written to stderr before it is done, so a crash names the widget. After
// each action it checks: no GL error; no message shown with an internal failure's wording
// (internal check, exception, std::, bad_alloc, nan, inf); no new "Problem" box from an
// action that reads or writes no file (a click, a shortcut: typing may be refused); and a
// value typed back leaves no compute error or invalid configuration that was not there
// before. The first failure ends the run with exit 1; a run out of time fails too.
// The headmap executable must be linked with item_log's --wrap flags; without them the
// crawler says so and fails.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "app/gui/app.h"

namespace headmap {

struct CrawlOptions {
  std::vector<std::string> then;  // settings applied first, as --then ("wait" waits for their result)
  double deadline_s = 300;        // the whole run, set-up included (a loaded 2-core machine took up to 175 s)
  // Each widget's primary action only: a slider dragged past both ends, a text field given
  // the 500 mixed characters, each then given its first value back (no empty text and no
  // number out of range). ctest's second window size runs so, to keep the suite short.
  bool primary_only = false;
  // The window sizes share what does not differ between them: the first run writes the
  // groups it used (a label in a window, group_of in crawl.cpp) to record_keys; the second,
  // given them as skip_keys, leaves alone each such widget it sees in view at once (not a
  // tab): it uses what its layout moved, renamed or scrolled out of view. A missing
  // skip_keys file skips nothing.
  std::string record_keys, skip_keys;
};
std::unique_ptr<Script> make_crawl_script(CrawlOptions o);

}  // namespace headmap
