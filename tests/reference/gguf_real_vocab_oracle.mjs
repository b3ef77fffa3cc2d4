// gguf_real_vocab_oracle.mjs: llama.cpp's and Hugging Face's ids for the same texts, for
// several GGUF files (make_gguf_vocab.py) and the tokenizer.json each was written from, in one
// node process:
//   node gguf_real_vocab_oracle.mjs LLAMA_NODE_MODULES HF_NODE_MODULES REQUEST.json
// REQUEST: [{"gguf": FILE.gguf, "json": tokenizer.json, "texts": [...]}, ...]. Prints JSON, one
// entry per file: {"bos": id|null, "prepend_bos": bool,
//   "llama": [[...] per text]   llama.cpp's model.tokenize(text, true): special tokens parsed, no BOS
//   "hf":    [[...] per text]   tokenizers' encode(text, {addSpecialTokens: false})}
import { createRequire } from 'module';
import fs from 'fs';
import path from 'path';

const [llamaModules, hfModules, request] = process.argv.slice(2);
const { getLlama } = await import(path.join(path.resolve(llamaModules), 'node-llama-cpp', 'dist', 'index.js'));
const { Tokenizer } = createRequire(path.join(path.resolve(hfModules), 'x.js'))('tokenizers');
const req = JSON.parse(fs.readFileSync(request, 'utf8'));
const llama = await getLlama({ gpu: false, build: 'never', logLevel: 'error' });
const out = [];
for (const r of req) {
  const model = await llama.loadModel({ modelPath: r.gguf });
  const hf = Tokenizer.fromFile(r.json);
  const o = { bos: model.tokens.bos, prepend_bos: model.tokens.shouldPrependBosToken, llama: [], hf: [] };
  for (const t of r.texts) {
    o.llama.push([...model.tokenize(t, true)]);
    o.hf.push((await hf.encode(t, null, { addSpecialTokens: false })).getIds());
  }
  await model.dispose();
  out.push(o);
}
console.log(JSON.stringify(out));
