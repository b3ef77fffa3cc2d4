// hf_tokenizer_cases.mjs: the texts every tokenizer.json is checked on, token for token,
// against Hugging Face's own `tokenizers` (hf_tokenizer_oracle.mjs). Each case is
// { name, text, pair? } where text and pair are Buffers: most are UTF-8 strings, some are
// raw bytes that are not valid UTF-8 (headmap repairs them to U+FFFD and reports it; the
// official library is given the same repaired text). The random cases come from a seeded
// generator, so every run checks the same texts.

const hard = [
  ['empty', ''],
  ['one letter', 'a'],
  ['plain sentence', 'The cat sat on the mat because it was tired.'],
  ['leading space', ' hello'],
  ['two leading spaces', '  hello'],
  ['run of spaces inside', 'a     b'],
  ['trailing spaces', 'end   '],
  ['only spaces', '     '],
  ['one space', ' '],
  ['tab', 'a\tb'],
  ['tabs and spaces', '\t \t  x'],
  ['newline', 'line one\nline two'],
  ['blank lines', 'a\n\n\nb'],
  ['crlf', 'first\r\nsecond\r\n'],
  ['lone cr', 'a\rb\r'],
  ['newline then spaces', 'x\n    y'],
  ['contraction dont', "don't"],
  ['contractions all', "it's we're they've I'm you'd she'll can't"],
  ['uppercase contractions', "JOHN'S 'S 'T WE'LL I'M"],
  ['apostrophe alone', "' ''  '''"],
  ['curly apostrophe', 'don\u2019t it\u2019s'],
  ['digits', '0 1 2 3 4 5 6 7 8 9'],
  ['long number', '31415926535897932384626433832795028841971'],
  ['digit runs of each length', '1 12 123 1234 12345 123456 1234567'],
  ['numbers and units', '3.14159 1,000,000 -42 +7 1e-9 0x1F 2026-11-22'],
  ['letters then digits', 'abc123def 4u2'],
  ['other digits', '\u0661\u0662\u0663 \u0664\u0665 \u0966\u0967 \u00b2\u00b3 \u2168 \uff11\uff12'],
  ['accents precomposed', 'café naïve résumé Ångström'],
  ['accents combining', 'cafe\u0301 nai\u0308ve A\u030angstro\u0308m'],
  ['accents uppercase', 'ÉCOLE ÇA ÑANDÚ Ärger İstanbul'],
  ['compatibility forms', 'ﬁﬂ ① ㎏ Ⅻ ½ ｶﾀｶﾅ \u2126 \u212b'],
  ['stacked combining marks', 'Z\u0351\u036b\u0343\u036a\u0302\u036b\u033d\u034f\u0334\u0319\u0324\u031e\u0349\u035a\u032f\u031e\u0320\u034dA'],
  ['punctuation run', '!!!???...,,,;;;:::'],
  ['mixed punctuation', '--> <== (*&^%$#@!) [{}] ~`|\\/'],
  ['ellipsis and dashes', 'wait\u2026 what\u2014really\u2013no'],
  ['quotes', '"double" \'single\' \u201ccurly\u201d \u00abguillemets\u00bb'],
  ['emoji', '\u{1F600}\u{1F602}\u{1F923}'],
  ['emoji between words', 'I love \u{1F355} and \u{1F363}!'],
  ['emoji skin tones', '\u{1F44D}\u{1F3FB} \u{1F44D}\u{1F3FF} \u{1F44B}\u{1F3FD}'],
  ['emoji zwj family', '\u{1F468}\u200D\u{1F469}\u200D\u{1F467}\u200D\u{1F466}'],
  ['emoji zwj profession with tone', '\u{1F469}\u{1F3FE}\u200D\u{1F4BB} \u{1F9D1}\u{1F3FC}\u200D\u{1F680}'],
  ['emoji flags', '\u{1F1EB}\u{1F1F7}\u{1F1EF}\u{1F1F5} \u{1F3F4}\u200D\u2620\uFE0F'],
  ['emoji keycap and variation selector', '1\uFE0F\u20E3 \u2764\uFE0F \u263A'],
  ['cjk chinese', '注意力机制是变压器的核心。'],
  ['cjk japanese', 'こんにちは、世界！カタカナとひらがな。'],
  ['cjk korean', '안녕하세요 세계'],
  ['cjk fullwidth', 'ＡＢＣ１２３！'],
  ['cjk extension b', '\u{20000}\u{2A6D6} \u{2F800}'],
  ['arabic rtl', 'مرحبا بالعالم'],
  ['hebrew rtl with points', 'שָׁלוֹם עולם'],
  ['rtl mixed with ltr', 'abc \u05e9\u05dc\u05d5\u05dd def 123 \u0645\u0631\u062d\u0628\u0627.'],
  ['rtl marks', '\u202Eabc\u202C \u200Fx\u200E'],
  ['devanagari', 'नमस्ते दुनिया'],
  ['thai', 'สวัสดีชาวโลก'],
  ['greek and cyrillic', 'Αλφα βήτα ΣΊΣΥΦΟΣ Привет мир'],
  ['math symbols', '∀x ∈ ℝ: x² ≥ 0 ⇒ √x ∈ ℝ'],
  ['unicode spaces', 'a\u00A0b\u2009c\u3000d\u2028e\u0085f\u200Bg'],
  ['url', 'https://example.com/path?q=1&r=two#frag'],
  ['code', 'for (int i = 0; i < n; ++i) { x[i] += y[i] * 2; }'],
  ['python indentation', 'def f(x):\n    return x ** 2\n\n\tpass'],
  ['all caps', 'THE QUICK BROWN FOX'],
  ['camel case', 'getAttentionWeights HTTPServerError iPhone'],
  ['repeated word', 'the the the the the the the the'],
  ['rare long word', 'antidisestablishmentarianism pneumonoultramicroscopicsilicovolcanoconiosis'],
  ['very long word', 'x'.repeat(150) + ' ' + 'ab'.repeat(80)],
  ['control characters', 'a\u0001b\u0007c\u001bd\u007f'],
  ['nul and replacement', 'a\u0000b\uFFFDc'],
  ['private use and noncharacter', '\uE000\uF8FF\uFDD0'],
  ['special <s>', '<s>Hello</s> <s> world'],
  ['special <s> glued', 'a<s>b</s>c<unk>d'],
  ['special endoftext', 'one<|endoftext|>two <|endoftext|> three<|endoftext|>'],
  ['special bert', '[CLS] hello [SEP] world [MASK] [PAD][UNK]'],
  ['special gemma', '<bos>hi<eos> <start_of_turn>user\nhello<end_of_turn>'],
  ['special llama3', '<|begin_of_text|>Hi<|eot_id|><|start_header_id|>user<|end_header_id|>'],
  ['special qwen', '<|im_start|>system\nYou are helpful.<|im_end|>\n<think>\n\n</think>'],
  ['special partial', '<|endof <s <|im_start| [CLS'],
  ['html', '<div class="x">Hello &amp; <b>bye</b></div>'],
  ['mixed everything', 'Héllo, wörld! 123 \u{1F600} 注意 مرحبا\t\n  end'],
];

const pairs = [
  ['pair plain', 'How old are you?', 'I am six years old.'],
  ['pair empty second', 'first', ''],
  ['pair empty first', '', 'second'],
  ['pair accents', 'Café société', 'naïve résumé'],
  ['pair cjk', '注意力', '世界'],
  ['pair specials inside', '[CLS] a <s>', '[SEP] b </s>'],
];

// xorshift32, seeded: the same texts on every run.
function rng(seed) {
  let x = seed >>> 0;
  return () => {
    x ^= x << 13; x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5; x >>>= 0;
    return x / 4294967296;
  };
}

const pool = [
  ...'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ', ...'0123456789', ...'       ',
  '\t', '\n', '\r\n', ...".,;:!?'\"()[]{}-_/\\@#$%^&*+=<>|~`", "'s", "'t", "'ll", "'re",
  'é', 'É', 'ñ', 'ü', 'ß', 'İ', 'e\u0301', 'a\u0308', '\u0301', 'ﬁ', '①', '½', '²',
  '注', '意', '力', '世', '界', 'こ', 'ん', 'カ', '한', '글', 'ア', '　',
  'م', 'ر', 'ح', 'ב', 'ש', '\u05b8', 'न', '\u094d', 'ส', '\u0e31',
  'Σ', 'ς', 'π', 'Ж', 'д', '\u00a0', '\u2009', '\u200b', '\u200d', '\ufe0f',
  '\u{1F600}', '\u{1F44D}', '\u{1F3FD}', '\u{1F468}', '\u{1F1EB}', '\u{1F4BB}', '€', '→', '∑', '\uFFFD',
  '<s>', '</s>', '<|endoftext|>', '[CLS]', '[SEP]', '<bos>', '<|im_start|>', '<|begin_of_text|>', '\u0000', '\u0007',
];

function randomText(r) {
  const n = Math.floor(r() * 24);
  let s = '';
  for (let i = 0; i < n; ++i) s += pool[Math.floor(r() * pool.length)];
  return s;
}

function randomBytes(r) {
  const n = 1 + Math.floor(r() * 16);
  const b = [];
  for (let i = 0; i < n; ++i) {
    const k = r();
    if (k < 0.4) b.push(0x20 + Math.floor(r() * 95));           // ASCII
    else if (k < 0.55) b.push(0x80 + Math.floor(r() * 64));     // stray continuation
    else if (k < 0.7) b.push(0xC0 + Math.floor(r() * 64));      // lead bytes (some never valid)
    else if (k < 0.8) b.push(0xE2, 0x82);                       // truncated 3-byte sequence
    else if (k < 0.9) b.push(0xF0, 0x9F, 0x98, 0x80);           // a whole emoji
    else b.push(Math.floor(r() * 256));
  }
  return Buffer.from(b);
}

export function cases() {
  const out = [];
  for (const [name, text] of hard) out.push({ name, text: Buffer.from(text, 'utf8') });
  for (const [name, a, b] of pairs) out.push({ name, text: Buffer.from(a, 'utf8'), pair: Buffer.from(b, 'utf8') });
  const r = rng(20261124);
  for (let i = 0; i < 200; ++i) out.push({ name: `random text ${i}`, text: Buffer.from(randomText(r), 'utf8') });
  for (let i = 0; i < 60; ++i) out.push({ name: `random bytes ${i}`, text: randomBytes(r) });
  for (let i = 0; i < 20; ++i)
    out.push({ name: `random pair ${i}`, text: Buffer.from(randomText(r), 'utf8'), pair: Buffer.from(randomText(r), 'utf8') });
  return out;
}
