// bench_tokenizers.mjs: the same measures as bench_tokenizers.cpp, for Hugging Face's own
// tokenizers (the Rust library through its Node binding):
//   node bench_tokenizers.mjs NODE_MODULES TEXT_FILE TOKENIZER_JSON...
// encode: each line on its own, awaited one after the other (one thread, plus the binding's
// call overhead); encodeBatch: all lines at once (the library's own threads, both cores).
import { createRequire } from 'module';
import fs from 'fs';
import path from 'path';

const [modules, textFile, ...files] = process.argv.slice(2);
const require = createRequire(path.join(path.resolve(modules), 'x.js'));
const { Tokenizer } = require('tokenizers');
const text = fs.readFileSync(textFile, 'utf8');
const bytes = Buffer.byteLength(text, 'utf8');
const lines = text.split('\n').filter((l) => l.length > 0);
const now = () => Number(process.hrtime.bigint()) / 1e9;
const pad = (s, n) => String(s).padStart(n);
console.log(`${'tokenizer (official)'.padEnd(60)} ${pad('load ms', 10)} ${pad('tokens', 12)} ${pad('tokens/s', 12)} ${pad('MB/s', 10)} ${pad('batch tok/s', 12)}`);
for (const f of files) {
  let load = 1e9, tok;
  for (let r = 0; r < 3; ++r) {
    const t0 = now();
    tok = Tokenizer.fromFile(f);
    load = Math.min(load, now() - t0);
  }
  let best = 1e9, tokens = 0;
  for (let r = 0; r < 3; ++r) {
    tokens = 0;
    const t0 = now();
    for (const l of lines) tokens += (await tok.encode(l, null, { addSpecialTokens: true })).getIds().length;
    best = Math.min(best, now() - t0);
  }
  let batch = 1e9;
  for (let r = 0; r < 3; ++r) {
    const t0 = now();
    await tok.encodeBatch(lines, { addSpecialTokens: true });
    batch = Math.min(batch, now() - t0);
  }
  console.log(`${f.padEnd(60)} ${pad((load * 1000).toFixed(0), 10)} ${pad(tokens, 12)} ${pad((tokens / best).toFixed(0), 12)} ${pad((bytes / best / 1e6).toFixed(2), 10)} ${pad((tokens / batch).toFixed(0), 12)}`);
}
