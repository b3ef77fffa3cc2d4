// visual_text (app/common/bidi.h): labels as drawn. The expected strings come from the
// Unicode standard, not from the function: joining types from ArabicShaping.txt (D dual,
// R right-joining), the forms from the Arabic Presentation Forms-B chart (U+FE70-FEFF), and
// the order from UAX #9's rules (W2, N1, I1-I2, L2, L4).
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "app/common/bidi.h"
#include "app/common/token_labels.h"
#include "core/io/checkpoint.h"
#include "core/text/hf_tokenizer.h"
#include "app/common/raster.h"
#include "core/text/utf8.h"

using headmap::has_rtl;
using headmap::visual_text;

namespace {

std::string u8(std::u32string_view cps) { return headmap::encode_utf8(cps); }

}  // namespace

TEST(Bidi, ArabicLettersJoinAndReadRightToLeft) {
  // بيت: beh (D) initial U+FE91, yeh (D) medial U+FEF4, teh (D) final U+FE96; an Arabic
  // paragraph (P2-P3: first strong AL) is drawn right to left, so the last letter comes first.
  EXPECT_EQ(visual_text(u8(U"\u0628\u064A\u062A")), u8(U"\uFE96\uFEF4\uFE91"));
  // سلام: seen initial U+FEB3; lam then alef is the ligature, final as lam joins seen
  // (U+FEFC); alef is right-joining (R), so meem after it stands isolated (U+FEE1).
  EXPECT_EQ(visual_text(u8(U"\u0633\u0644\u0627\u0645")), u8(U"\uFEE1\uFEFC\uFEB3"));
  // One letter alone: its isolated form (meem U+FEE1).
  EXPECT_EQ(visual_text(u8(U"\u0645")), u8(U"\uFEE1"));
}

TEST(Bidi, HebrewIsReversed) {
  // שלום: shin lamed vav final-mem, drawn final-mem first. Hebrew has no joining forms.
  EXPECT_EQ(visual_text(u8(U"\u05E9\u05DC\u05D5\u05DD")), u8(U"\u05DD\u05D5\u05DC\u05E9"));
}

TEST(Bidi, LatinAndDigitsAreUnchanged) {
  EXPECT_EQ(visual_text("abc 123"), "abc 123");
  EXPECT_EQ(visual_text(" the"), " the");
  EXPECT_EQ(visual_text("Caf\xC3\xA9 \xE4\xB8\xAD"), "Caf\xC3\xA9 \xE4\xB8\xAD");  // é and CJK: left to right
  EXPECT_FALSE(has_rtl("abc 123 Caf\xC3\xA9"));
  EXPECT_TRUE(has_rtl(u8(U"a \u05E9")));
  EXPECT_TRUE(has_rtl(u8(U"\u0645")));
}

TEST(Bidi, DigitsInArabicKeepTheirOrder) {
  // عام 2024: European digits after Arabic letters are Arabic numbers (W2), raised to level 2
  // (I2); the space between AL and AN takes level 1 (N1). Reversing levels >= 2, then >= 1
  // (L2) puts the number first, still reading 2024. Ain initial U+FECB, alef final U+FE8E,
  // meem after alef isolated U+FEE1.
  EXPECT_EQ(visual_text(u8(U"\u0639\u0627\u0645 2024")), u8(U"2024 \uFEE1\uFE8E\uFECB"));
}

TEST(Bidi, MixedLatinAndHebrewFollowTheAlgorithm) {
  // A left-to-right paragraph (first strong: a). "12" after Hebrew stays EN (W7 finds R),
  // goes to level 2 (I1); the space between R and EN is R (N1): level 1. Hence "abc 12 םולש".
  EXPECT_EQ(visual_text(u8(U"abc \u05E9\u05DC\u05D5\u05DD 12")), u8(U"abc 12 \u05DD\u05D5\u05DC\u05E9"));
  // Brackets in right-to-left text are mirrored (L4): "(שלום)" reads "(םולש)" left to right.
  EXPECT_EQ(visual_text(u8(U"(\u05E9\u05DC\u05D5\u05DD)")), u8(U"(\u05DD\u05D5\u05DC\u05E9)"));
  // Explicit marks are applied, then dropped: RLM before Latin makes nothing to draw.
  EXPECT_EQ(visual_text(u8(U"\u200Fab")), "ab");
}

TEST(Bidi, LinesAreEachTheirOwnParagraph) {
  EXPECT_EQ(visual_text(u8(U"\u05E9\u05DC\u05D5\u05DD\nabc")), u8(U"\u05DD\u05D5\u05DC\u05E9\nabc"));
}

TEST(Bidi, HalfALetterIsShownAsBefore) {
  // Byte-level BPE pieces: the first byte of seen (D8 B3) alone, and a letter with half of the
  // next one. Invalid UTF-8 passes through untouched (drawn with U+FFFD as before).
  EXPECT_EQ(visual_text("\xD8"), "\xD8");
  EXPECT_EQ(visual_text("\xD8\xB3\xD9"), "\xD8\xB3\xD9");
  EXPECT_EQ(visual_text(""), "");
}

TEST(Bidi, ALongRightToLeftLabelKeepsItsFirstLetters) {
  // Width = characters as drawn. "שלום עולם" in 5: the typed start "שלום" and "…" (5), which
  // ends a right-to-left paragraph, so it is drawn on the left (N1-N2: between R and eos R).
  auto chars = [](const std::string& c) { return static_cast<float>(headmap::decode_utf8(visual_text(c)).codepoints.size()); };
  const std::string cut = headmap::cut_logical(u8(U"\u05E9\u05DC\u05D5\u05DD \u05E2\u05D5\u05DC\u05DD"), 5, chars);
  EXPECT_EQ(cut, u8(U"\u05E9\u05DC\u05D5\u05DD\u2026"));
  EXPECT_EQ(visual_text(cut), u8(U"\u2026\u05DD\u05D5\u05DC\u05E9"));
  EXPECT_EQ(headmap::cut_logical("abc", 3, chars), "abc");  // fits whole
  EXPECT_EQ(headmap::cut_logical("abc", 1, chars), "");     // not a letter with its "…"
}

TEST(Bidi, PngTextIsDrawnJoinedAndCutInTypedOrder) {
  // headmap-cli --png and the figures draw with the CPU font (raster.h): الولد as Unicode's
  // forms, last letter first (alef isolated U+FE8D, lam initial U+FEDF, waw final U+FEEE,
  // lam initial, dal final U+FEAA); too wide, it keeps its typed start and shows "…" on the left.
  headmap::Font font;
  ASSERT_TRUE(font.load(std::string(HEADMAP_ASSETS) + "/fonts/DejaVuSans.ttf"));
  const std::string walad = u8(U"\u0627\u0644\u0648\u0644\u062F");
  EXPECT_EQ(headmap::fit_drawn_text(font, walad, 12, 1000), u8(U"\uFEAA\uFEDF\uFEEE\uFEDF\uFE8D"));
  // Cut before it is shaped: المدرسة in the width of "ال…" keeps "ال", whose lam has nothing
  // to join (alef joins nothing after it, "…" is non-joining): isolated U+FEDD, not the
  // initial form it has in the whole word. (The next start, "الم…", is wider: checked.)
  const std::string madrasa = u8(U"\u0627\u0644\u0645\u062F\u0631\u0633\u0629");
  const int room = font.width(u8(U"\u2026\uFEDD\uFE8D"), 12);
  ASSERT_GT(font.width(u8(U"\u2026\uFEE2\uFEDF\uFE8D"), 12), room);
  EXPECT_EQ(headmap::fit_drawn_text(font, madrasa, 12, room), u8(U"\u2026\uFEDD\uFE8D"));
  EXPECT_EQ(headmap::fit_drawn_text(font, "the cat", 12, 1000), "the cat");
}

using namespace headmap;  // (the test below)

// Issue 34, finding 9: the next-token list labels a byte piece by the one rule the maps use
// (app/common/token_labels.h), never "<0xD8>": a byte that completes the sentence's last
// character reads that character and its part, one that starts a character "… 1/2".
TEST(TokenLabels, NextTokenBytePiecesReadTheirCharacter) {
  Result<ModelWeights> w = load_checkpoint(std::string(HEADMAP_ASSETS) + "/checkpoints/d128-h4-l2.safetensors");
  ASSERT_TRUE(w) << w.error().message;
  auto tokens_of = [&](const char* text) {
    return w->hf_tokenizer ? tokenize(text, 64, *w->hf_tokenizer) : tokenize(text, TokenizerKind::Bpe, 64, &w->bpe);
  };
  // "The ق": the shipped byte-level BPE cuts the letter (D9 82) into two byte pieces.
  const TokenizedText t = tokens_of("The \xD9\x82");
  ASSERT_GE(t.tokens.size(), 3u);
  const Token last = t.tokens.back();
  ASSERT_NE(token_display(last).find("<0x"), std::string::npos) << "the test needs a byte piece: " << token_display(last);
  const std::vector<Token> before(t.tokens.begin(), t.tokens.end() - 1);
  // The byte that completes the letter, as the next token after its first byte.
  const std::string completes = next_token_label(*w, before, last.id);
  EXPECT_EQ(completes.find("<0x"), std::string::npos) << completes;
  EXPECT_NE(completes.find("\xD9\x82"), std::string::npos) << completes;
  EXPECT_NE(completes.find("2/2"), std::string::npos) << completes;
  // The first byte alone, after "The": it starts a character the text has not finished.
  const std::vector<Token> the(t.tokens.begin(), t.tokens.end() - 2);
  const std::string starts = next_token_label(*w, the, t.tokens[t.tokens.size() - 2].id);
  EXPECT_EQ(starts, "\xE2\x80\xA6 1/2");
  // A whole word keeps its own label.
  const TokenizedText cat = tokens_of("The cat");
  EXPECT_EQ(next_token_label(*w, {cat.tokens.front()}, cat.tokens.back().id), token_display(cat.tokens.back()));
}

// wrap_text (raster.h), the one word wrap of the lesson slides and the figure sheets: lines
// broken between words, none wider than the room (measured here by the font itself), "\n"
// a forced break, a word wider than the room alone shortened with "…".
TEST(Raster, WrapTextBreaksBetweenWordsAndFitsTheRoom) {
  headmap::Font font;
  ASSERT_TRUE(font.load(std::string(HEADMAP_ASSETS) + "/fonts/DejaVuSans.ttf"));
  const int room = std::max({font.width("the cat sat", 14), font.width("on the mat", 14), font.width("by the door", 14)});
  ASSERT_GT(font.width("the cat sat on", 14), room);
  ASSERT_GT(font.width("on the mat by", 14), room);
  const std::vector<std::string> lines = headmap::wrap_text(font, "the cat sat on the mat\nby the door", 14, room);
  EXPECT_EQ(lines, (std::vector<std::string>{"the cat sat", "on the mat", "by the door"}));
  const std::vector<std::string> para = headmap::wrap_text(font, "a\n\nb", 14, room);
  EXPECT_EQ(para, (std::vector<std::string>{"a", "", "b"}));
  const std::vector<std::string> longword = headmap::wrap_text(font, "supercalifragilistic cat", 14, font.width("supercali", 14));
  ASSERT_EQ(longword.size(), 2u);
  EXPECT_LE(font.width(longword[0], 14), font.width("supercali", 14));
  EXPECT_EQ(longword[0].substr(longword[0].size() - 3), "\xE2\x80\xA6");
  EXPECT_EQ(longword[1], "cat");
}
