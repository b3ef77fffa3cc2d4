// family_oracle_ids.mjs NODE_MODULES TOKENIZER_JSON TEXT...: the ids Hugging Face's own
// tokenizers (the Rust library's Node binding) gives each text, special tokens added as
// the model's tokenizer adds them (transformers' default), as one JSON list of lists.
import { createRequire } from 'module';
import path from 'path';

const [modules, file, ...texts] = process.argv.slice(2);
const require = createRequire(path.join(path.resolve(modules), 'x.js'));
const { Tokenizer } = require('tokenizers');
const tok = Tokenizer.fromFile(file);
const out = [];
for (const t of texts) {
  const e = await tok.encode(t, null, { addSpecialTokens: true });
  out.push(Array.from(e.getIds()));
}
process.stdout.write(JSON.stringify(out));
