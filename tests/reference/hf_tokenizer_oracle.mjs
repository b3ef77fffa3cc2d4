// hf_tokenizer_oracle.mjs: what Hugging Face's own tokenizers (the Rust library, through its
// npm binding `tokenizers`) give for every case of hf_tokenizer_cases.mjs, as JSON:
//   node hf_tokenizer_oracle.mjs NODE_MODULES TOKENIZER_JSON > expected.json
// Each case: the raw bytes (hex), the official ids, type ids, special-token mask and
// character offsets of encode(text[, pair]) with special tokens added (what transformers'
// tokenizer(text) gives), and decode(ids) without skipping special tokens.
// The library takes only valid text: a case that is not valid UTF-8 is handed to it
// repaired (each maximal invalid subsequence as U+FFFD, as headmap repairs it).
import { createRequire } from 'module';
import path from 'path';
import { cases } from './hf_tokenizer_cases.mjs';

const [modules, file] = process.argv.slice(2);
if (!modules || !file) {
  console.error('usage: node hf_tokenizer_oracle.mjs NODE_MODULES TOKENIZER_JSON');
  process.exit(2);
}
const require = createRequire(path.join(path.resolve(modules), 'x.js'));
const { Tokenizer } = require('tokenizers');
const tok = Tokenizer.fromFile(file);

const out = [];
for (const c of cases()) {
  const text = c.text.toString('utf8');
  const pair = c.pair ? c.pair.toString('utf8') : null;
  const e = await tok.encode(text, pair, { addSpecialTokens: true });
  out.push({
    name: c.name,
    text_hex: c.text.toString('hex'),
    ...(c.pair ? { pair_hex: c.pair.toString('hex') } : {}),
    ids: e.getIds(),
    type_ids: e.getTypeIds(),
    special: e.getSpecialTokensMask(),
    offsets: e.getOffsets(),
    tokens: e.getTokens(),
    decoded: await tok.decode(e.getIds(), false),
  });
}
process.stdout.write(JSON.stringify({ tokenizer: file, cases: out }) + '\n');
