// bench_llama_cpp.mjs: llama.cpp beside headmap-bench-gguf, on the same GGUF file and the same
// thread count (issue 37, point 8), through node-llama-cpp's prebuilt CPU build (the npm
// packages the ctest fixture gguf_oracle_setup installs into build/tests/gguf-oracle):
//   node bench_llama_cpp.mjs NODE_MODULES FILE.gguf [--threads N] [--tokens T] [--seconds S]
// Prints one JSON line, the figures headmap-bench-gguf prints for itself:
//   load_s       loadModel (memory-mapped, as llama.cpp loads by default), wall clock;
//   forward_ms   the median evaluation of T tokens in one batch (no logits: llama.cpp
//                computes no maps, and with no token asking for them, no logits either);
//   append_ms    the median evaluation of one token appended after T - 1 in the sequence's
//                K/V cache, with its logits over the whole vocabulary (controlledEvaluate).
// The tokens: an English sentence's, as the model's tokenizer splits it, repeated to T; or,
// with --ids FILE (a JSON array of at least T + 1 ids: compare_engines.py gives the ids headmap
// and torch run), the first T, and the token appended is ids[T] after those T. Then it also
// prints "loss": the mean next-token cross-entropy over the T ids from llama.cpp's logits (one
// untimed evaluation), which must match the other engines' (the same weights, the same ids).
import fs from 'fs';
import path from 'path';

const args = process.argv.slice(2);
const [modules, file] = args;
const opt = (name, dflt) => {
  const i = args.indexOf(name);
  return i >= 0 ? Number(args[i + 1]) : dflt;
};
const threads = opt('--threads', 2), T = opt('--tokens', 128), seconds = opt('--seconds', 10);
if (!modules || !file || !(threads >= 1) || !(T >= 2) || !(seconds > 0)) {
  console.error('usage: node bench_llama_cpp.mjs NODE_MODULES FILE.gguf [--threads N] [--tokens T] [--seconds S]');
  process.exit(2);
}
const { getLlama } = await import(path.join(path.resolve(modules), 'node-llama-cpp', 'dist', 'index.js'));
const llama = await getLlama({ gpu: false, build: 'never', logLevel: 'error', maxThreads: threads });
const now = () => Number(process.hrtime.bigint()) / 1e6;
const median = (v) => [...v].sort((a, b) => a - b)[Math.floor(v.length / 2)];

let t0 = now();
const model = await llama.loadModel({ modelPath: file });
const load_s = (now() - t0) / 1000;
const ctx = await model.createContext({ contextSize: Math.max(256, T + 8), threads, batchSize: Math.max(256, T) });
const seq = ctx.getSequence();
const idsAt = args.indexOf('--ids');
let ids, appended = null;
if (idsAt >= 0) {
  const given = JSON.parse(fs.readFileSync(args[idsAt + 1], 'utf8'));
  if (!Array.isArray(given) || given.length < T + 1) throw new Error('--ids needs a JSON array of at least T + 1 ids');
  ids = given.slice(0, T);
  appended = given[T];
} else {
  const sentence = [...model.tokenize('The cat sat on the mat because it was tired, and then it slept. ')];
  ids = Array.from({ length: T }, (_, i) => sentence[i % sentence.length]);
}
// The prefix in the cache and the token appended after it.
const prefix = appended === null ? ids.slice(0, T - 1) : ids, last = appended === null ? ids[T - 1] : appended;

// Runs `once` (each run preceded by its untimed `setup`) for half the budget, at least 3 times.
async function repeat(setup, once) {
  const times = [];
  const end = now() + (seconds * 1000) / 2;
  while (times.length < 3 || now() < end) {
    await setup();
    const s = now();
    await once();
    times.push(now() - s);
  }
  return times;
}
const forward = await repeat(() => seq.clearHistory(), () => seq.evaluateWithoutGeneratingNewTokens(ids));
const append = await repeat(
  async () => {
    await seq.clearHistory();
    await seq.evaluateWithoutGeneratingNewTokens(prefix);
  },
  async () => {
    const r = await seq.controlledEvaluate([[last, { generateNext: { logits: true } }]]);
    if (!r[0] || !r[0].next || !r[0].next.logits) throw new Error('llama.cpp returned no logits');
  });
let loss, logitsHead;
if (appended !== null) {  // the next-token cross-entropy over the T ids, from every position's logits
  await seq.clearHistory();
  const r = await seq.controlledEvaluate(ids.map((id) => [id, { generateNext: { logits: true } }]));
  let total = 0;
  for (let t = 0; t + 1 < T; ++t) {
    const lg = r[t].next.logits;  // a Map from token id to logit
    let m = -Infinity;
    for (const v of lg.values()) m = Math.max(m, v);
    let z = 0;
    for (const v of lg.values()) z += Math.exp(v - m);
    total += m + Math.log(z) - lg.get(ids[t + 1]);
  }
  loss = total / (T - 1);
  // the logits of the last position over the first 16 ids: a check more sensitive than the loss
  logitsHead = Array.from({ length: 16 }, (_, i) => +r[T - 1].next.logits.get(i).toFixed(5));
}
console.log(JSON.stringify({
  file: path.basename(file), engine: 'llama.cpp (node-llama-cpp 3.22.1, prebuilt CPU)', threads, tokens: T,
  load_s: +load_s.toFixed(3), forward_ms: +median(forward).toFixed(1), forward_runs: forward.length,
  append_ms: +median(append).toFixed(1), append_runs: append.length, ...(loss === undefined ? {} : { loss: +loss.toFixed(5), last_logits_head: logitsHead }),
}));
await ctx.dispose();
await model.dispose();
