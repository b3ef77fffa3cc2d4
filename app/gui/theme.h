// theme.h: the app's look, named once: message colours, the three columns' proportions,
// the text-size steps, and the Dear ImGui style built from them.
#pragma once
#include <imgui.h>

namespace headmap {

// ---- colours of text that carries a meaning ----
inline const ImVec4 kErrorColour{1.0f, 0.45f, 0.35f, 1.0f};    // refusals and failures
inline const ImVec4 kPendingColour{1.0f, 0.75f, 0.3f, 1.0f};   // "computing...", "updating...", notes to act on
inline const ImVec4 kAccentColour{0.55f, 0.85f, 1.0f, 1.0f};   // head labels, section titles, totals
inline const ImVec4 kChangedColour{1.0f, 0.8f, 0.35f, 1.0f};   // what the last slider move changed
inline const ImVec4 kChangedRowColour{0.9f, 0.6f, 0.1f, 1.0f}; // the passport rows it changed (faded with time)
inline const ImVec4 kUnchangedColour{0.5f, 1.0f, 0.6f, 1.0f};  // what it did not change (a lesson)

// ---- layout: the three columns, as fractions of the window with minimum widths ----
inline constexpr float kSentenceColumnFraction = 0.23f, kSentenceColumnMin = 260.0f;
inline constexpr float kPassportColumnFraction = 0.29f, kPassportColumnMin = 300.0f;
inline constexpr float kViewsColumnMin = 200.0f;
// ...and what each column needs in font heights (em), so a large font on a small screen
// collapses the layout instead of cutting it: the passport becomes a tab (two columns),
// then the sentence and model too (tabs only).
inline constexpr float kSentenceColumnMinEm = 13.0f, kPassportColumnMinEm = 23.0f, kViewsColumnMinEm = 24.0f;
inline constexpr float kSentenceColumnFractionTwo = 0.33f;  // its share in two columns
// A lesson on a screen too small for three columns (a projector at 1024x768 with large
// text) plays in a column of its own beside the views, full height, this share of the width:
// the maps get the height a strip under them would take and the sentence column's width.
inline constexpr float kLessonColumnFraction = 0.27f, kLessonColumnMinEm = 10.0f;
inline constexpr float kChipRowsShown = 6.5f;     // the token chips scroll beyond this many rows,
inline constexpr float kChipBoxMaxShare = 0.22f;  // or beyond this share of the window's height
inline constexpr int kStatusLinesShown = 4;  // the newest notes under the controls
inline constexpr double kStatusNoteSeconds = 8;  // the newest note, in the menu bar
inline constexpr float kHeadsMapAspectMax = 1.35f;  // a heads-grid map bound by the panel's height may be this much wider than tall
inline constexpr float kFocusCompactLines = 36.0f;  // a Focus view shorter than this many lines of text starts with the slice closed

// ---- text size: Ctrl + / Ctrl - step by kFontStep between the bounds ----
inline constexpr float kFontPixels = 17.0f;  // at font_scale 1
inline constexpr float kFontStep = 1.15f;  // Ctrl +/- (the range, kFontScaleMin/Max, is in app_state.h)

// Dear ImGui's style for the light or dark theme, scaled to the text size.
void apply_theme(bool light, float font_scale);

}  // namespace headmap
