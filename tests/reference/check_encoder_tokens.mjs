// check_encoder_tokens.mjs: the token ids and type ids headmap-cli --model uses for BERT,
// RoBERTa and DistilBERT directories (tokenizer.json, or vocab.txt + tokenizer_config.json),
// single sentences and pairs, against Hugging Face's own tokenizers (encode(a, b)):
//   node check_encoder_tokens.mjs NODE_MODULES HEADMAP_CLI WORK_DIR VARIANT...
// WORK_DIR holds make_encoder_dir.py's directories and, beside each, VARIANT.oracle-tokenizer.json:
// the same pipeline as a tokenizer.json for the official library. Exits 1 on a difference.
import { createRequire } from 'module';
import { execFileSync } from 'child_process';
import fs from 'fs';
import os from 'os';
import path from 'path';

const [modules, cli, work, ...variants] = process.argv.slice(2);
const require = createRequire(path.join(path.resolve(modules), 'x.js'));
const { Tokenizer } = require('tokenizers');

const cases = (mask) => [
  ['The cat sat on the mat.', 'It was tired!'],
  ['Paris is the capital of France', 'where is the park?'],
  ['unhappy jumping dogs', null],
  ['a  dog\tran,   THE   Cat', 'The Cat?'],
  [`${mask} is in Paris`, `he went to the ${mask}.`],
  ['naïve Café ÉCOLE', 'cat\u00a0sat'],
  ['', 'it was'],
];
let passed = 0, failed = 0;
const out = path.join(os.tmpdir(), `encoder-tokens-${process.pid}.json`);
for (const v of variants) {
  const tok = Tokenizer.fromFile(path.join(work, `${v}.oracle-tokenizer.json`));
  for (const [a, b] of cases(v.startsWith('roberta') ? '<mask>' : '[MASK]')) {
    if (a === '') continue;  // an empty first sentence is a blank line to headmap
    const want = await tok.encode(a, b, { addSpecialTokens: true });
    execFileSync(cli, ['--model', path.join(work, v), '--text', a, ...(b !== null ? ['--pair', b] : []), '--json', out]);
    const got = JSON.parse(fs.readFileSync(out, 'utf8'));
    const same = (x, y) => JSON.stringify(x) === JSON.stringify(y);
    const bad = [];
    if (!same(got.token_ids[0], want.getIds())) bad.push(`ids ${JSON.stringify(got.token_ids[0])} wanted ${JSON.stringify(want.getIds())}`);
    if (!same(got.type_ids[0], want.getTypeIds())) bad.push(`type ids ${JSON.stringify(got.type_ids[0])} wanted ${JSON.stringify(want.getTypeIds())}`);
    const special = want.getSpecialTokensMask().flatMap((m, i) => (m ? [i] : []));
    const masks = want.getIds().flatMap((id, i) => (tok.idToToken(id) === '[MASK]' || tok.idToToken(id) === '<mask>' ? [i] : []));
    if (!same(got.special_positions[0], special))
      bad.push(`special positions ${JSON.stringify(got.special_positions[0])} wanted ${JSON.stringify(special)}`);
    if (!same(got.mask_positions[0], masks)) bad.push(`mask positions ${JSON.stringify(got.mask_positions[0])} wanted ${JSON.stringify(masks)}`);
    if (bad.length) { ++failed; console.log(`FAIL ${v} ${JSON.stringify([a, b])}: ${bad.join('; ')}`); } else ++passed;
  }
}
fs.rmSync(out, { force: true });
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed || passed === 0 ? 1 : 0);  // nothing checked is a failure too
