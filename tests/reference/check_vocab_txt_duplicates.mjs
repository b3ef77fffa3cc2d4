// check_vocab_txt_duplicates.mjs: a BERT vocab.txt with lines written twice (issue 35, F15),
// read by Hugging Face's own WordPiece (WordPiece.fromFile, the official vocab.txt reader,
// with BERT's normalizer, pre-tokenizer and [CLS]/[SEP] processing) and by headmap-cli
// tokenize: the ids must agree (the last line of a token wins in both).
//   node check_vocab_txt_duplicates.mjs NODE_MODULES HEADMAP_CLI WORK_DIR
import { createRequire } from 'module';
import { execFileSync } from 'child_process';
import fs from 'fs';
import path from 'path';

const [modules, cli, work] = process.argv.slice(2);
const require = createRequire(path.join(path.resolve(modules), 'x.js'));
const t = require('tokenizers');
fs.mkdirSync(work, { recursive: true });
const vocab = path.join(work, 'vocab.txt');
fs.writeFileSync(vocab, ['[PAD]', '[UNK]', '[CLS]', '[SEP]', 'the', 'cat', 'sat', '##s', 'on', 'cat', 'mat', '[SEP]', 'the', '##s'].join('\n') + '\n');
const tok = new t.Tokenizer(await t.WordPiece.fromFile(vocab, { unkToken: '[UNK]' }));
tok.setNormalizer(t.bertNormalizer({ lowercase: true }));
tok.setPreTokenizer(t.bertPreTokenizer());
tok.setPostProcessor(t.bertProcessing(['[SEP]', tok.tokenToId('[SEP]')], ['[CLS]', tok.tokenToId('[CLS]')]));
let failed = 0, passed = 0;
for (const text of ['the cat sat on the mat', 'cats sat', 'The CAT', 'dog']) {
  const want = (await tok.encode(text, null, { addSpecialTokens: true })).getIds();
  const got = JSON.parse(execFileSync(cli, ['tokenize', '--tokenizer', work, '--text', text]).toString()).ids;
  if (JSON.stringify(got) === JSON.stringify(want)) ++passed;
  else { ++failed; console.log(`FAIL ${JSON.stringify(text)}: headmap ${JSON.stringify(got)}, official ${JSON.stringify(want)}`); }
}
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed || passed === 0 ? 1 : 0);
