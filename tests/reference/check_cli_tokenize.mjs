// check_cli_tokenize.mjs: `headmap-cli tokenize` end to end against Hugging Face's own
// tokenizers, on the hard cases of hf_tokenizer_cases.mjs (not the random ones) and the pairs:
//   node check_cli_tokenize.mjs NODE_MODULES HEADMAP_CLI TOKENIZER_JSON
// Ids, type ids, the special mask and the offsets (the CLI's bytes, turned into the official
// characters) must be equal. Prints "N passed, N failed"; exits 1 on a failure.
import { createRequire } from 'module';
import { execFileSync } from 'child_process';
import path from 'path';
import { cases } from './hf_tokenizer_cases.mjs';

const [modules, cli, file] = process.argv.slice(2);
const require = createRequire(path.join(path.resolve(modules), 'x.js'));
const { Tokenizer } = require('tokenizers');
const tok = Tokenizer.fromFile(file);
// Byte offset -> character offset, as the official library converts them (a byte inside a
// character counts as that character's start).
const chars = (buf, byte) => {
  let n = 0;
  for (let i = 0; i < byte && i < buf.length; ++i) n += (buf[i] & 0xc0) !== 0x80 ? 1 : 0;
  if (byte < buf.length && (buf[byte] & 0xc0) === 0x80 && n > 0) --n;
  return n;
};

let passed = 0, failed = 0;
for (const c of cases().filter((c) => !c.name.startsWith('random') && !c.text.includes(0) && !(c.pair && c.pair.includes(0)))) {
  const text = c.text.toString('utf8'), pair = c.pair ? c.pair.toString('utf8') : null;
  const want = await tok.encode(text, pair, { addSpecialTokens: true });
  const args = ['tokenize', '--tokenizer', file, '--text', text, ...(pair !== null ? ['--pair', pair] : [])];
  const got = JSON.parse(execFileSync(cli, args, { encoding: 'utf8' }));
  const offs = got.offsets.map(([b, e], k) => {
    const src = Buffer.from(got.sequence[k] === 1 ? pair : text, 'utf8');
    return [chars(src, b), chars(src, e)];
  });
  const same = (a, b) => JSON.stringify(a) === JSON.stringify(b);
  const bad = [];
  if (!same(got.ids, want.getIds())) bad.push(`ids ${JSON.stringify(got.ids)} wanted ${JSON.stringify(want.getIds())}`);
  if (!same(got.type_ids, want.getTypeIds())) bad.push('type ids');
  if (!same(got.special, want.getSpecialTokensMask())) bad.push('special mask');
  if (!same(offs, want.getOffsets())) bad.push(`offsets ${JSON.stringify(offs)} wanted ${JSON.stringify(want.getOffsets())}`);
  if (bad.length) { ++failed; console.log(`FAIL ${c.name}: ${bad.join('; ')}`); } else ++passed;
}
console.log(`${file}\n${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
