// gguf_llama_oracle.mjs: llama.cpp's own answers for GGUF files, through node-llama-cpp's
// prebuilt CPU build (the npm packages node-llama-cpp and @node-llama-cpp/linux-x64, which
// tests/gguf_oracle.cmake installs into the build tree); one process for every file (its
// start-up, loading the llama.cpp binding, is most of the cost):
//   node gguf_llama_oracle.mjs NODE_MODULES REQUEST.json
// REQUEST: [{"file": FILE.gguf, "texts": [...], "ids": [[...], ...]}, ...]. Prints JSON, one
// answer a file, in order:
//   [{"bos": id|null, "prepend_bos": bool,
//     "tokens": [[...] per text]      model.tokenize(text, true): special tokens parsed, no BOS
//     "logits": [[[id, logit], ...] per id list]  the raw next-token logits after the last id,
//                                                  every vocabulary entry (controlledEvaluate)}
//    or {"error": message} where llama.cpp refused that file, ...]
import fs from 'fs';
import path from 'path';

const [modules, request] = process.argv.slice(2);
const { getLlama } = await import(path.join(path.resolve(modules), 'node-llama-cpp', 'dist', 'index.js'));
const reqs = JSON.parse(fs.readFileSync(request, 'utf8'));
const llama = await getLlama({ gpu: false, build: 'never', logLevel: 'error' });
const answers = [];
for (const req of reqs) {
  try {
    const model = await llama.loadModel({ modelPath: req.file });
    const out = { bos: model.tokens.bos, prepend_bos: model.tokens.shouldPrependBosToken, tokens: [], logits: [] };
    for (const t of req.texts) out.tokens.push([...model.tokenize(t, true)]);
    for (const ids of req.ids) {
      const ctx = await model.createContext({ contextSize: 256, threads: 1, batchSize: 256 });
      const seq = ctx.getSequence();
      const input = ids.map((t, i) => (i === ids.length - 1 ? [t, { generateNext: { logits: true } }] : t));
      const res = await seq.controlledEvaluate(input);
      out.logits.push([...res[ids.length - 1].next.logits.entries()]);
      await ctx.dispose();
    }
    await model.dispose();
    answers.push(out);
  } catch (e) {
    answers.push({ error: String(e && e.message ? e.message : e) });
  }
}
console.log(JSON.stringify(answers));
