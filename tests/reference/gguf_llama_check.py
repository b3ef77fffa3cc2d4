#!/usr/bin/env python3
"""gguf_llama_check.py: holds headmap to llama.cpp itself on make_gguf.py's files: the same
file opened by both, the same ids evaluated by both. headmap-cli runs once a file; llama.cpp
once for all of them (gguf_llama_oracle.mjs loads each file in turn in one node process).

    gguf_llama_check.py HEADMAP_CLI NODE_MODULES WORK_DIR [VARIANT ...]

  ids     headmap-cli tokenize --tokenizer FILE.gguf on hard strings (spaces, newlines, digits,
          accents, CJK, an emoji left to byte fallback, contractions, a control token in the
          text) against llama.cpp's model.tokenize(text, true), with its BOS when llama.cpp
          prepends one: equal. Once for each tokenizer (architecture and tokenizer options,
          not weight type: the first variant that has it).
  logits  headmap-cli --top-k 10 --json: the next-token distribution after each sentence
          against llama.cpp's raw logits (controlledEvaluate) on the ids headmap used: the same
          top-1 token, and every top-10 token's log-probability relative to the top-1's
          within TOL x (the top-1 logit's size), TOL by weight type below. For Q4_K, Q5_K,
          Q6_K and Q8_0 files again with --int8-products (8-bit products, llama.cpp's way).

Why these tolerances: llama.cpp rounds what headmap keeps in F32. It multiplies a quantized
(or BF16) weight by activations rounded to 8 significant bits (Q8_0 blocks for the 32-element
types, Q8_K for the K-quants: each element within 1/254 of its block's largest; BF16 for BF16
weights), and it keeps K and V in an F16 cache (11 bits) whatever the weights. Each rounding
is up to 2^-8 (or 2^-11) of the values, and a logit passes through about 2L + 1 such products
in series (L = 2 or 3 here): about 5 x 2^-8 = 2e-2 of the logit scale, doubled for margin:
5e-2. For F32 and F16 weights only the F16 cache and F16 activations round: 5 x 2^-11, doubled,
5e-3. (Measured against the float64 forward on these files: at most 2e-2 and 3e-4. headmap
against llama.cpp over all 123 files, 2026-11-28: at most 3.9e-2 (qwen3_q3_k), 6.9e-3 for BF16
(gemma2_bf16), 7.8e-4 for F32 and F16 (gemma2_f16).)
Exit 0 all agree, 1 a difference, 77 when node or the npm packages are missing.
"""
import json
import math
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import reference_common  # noqa: E402

np = reference_common.numpy_or_skip()
import make_gguf  # noqa: E402

TEXTS = ["The cat sat on the mat because it was tired.", "it was the cat that sat there, and the mat was red"]
HARD = ["The cat sat on the mat.", " leading space", "two  spaces   and three", "tabs\tand\nnewlines\n\n end", "Émile où ça? naïve café",
        "東京 🙂 emoji", "Numbers 12345 and 2026.", "don't stop; we'll see what they've said", "cat<|endoftext|>mat", "   ",
        "sat<s>on</s>mat", "ÉMILE DON'T"]
TOL = {"F32": 5e-3, "F16": 5e-3}
# headmap-cli --int8-products (int8_products.h): activations rounded to 8 bits as llama.cpp
# describes its Q8_K and Q8_0 roundings. Its results do not land measurably nearer llama.cpp's
# than the F32 run's (2026-11-29 on 10 files: 4e-3 to 2.2e-2 against 1e-3 to 3.1e-2, and on
# llama_q4_k farther), so its own roundings differ in their details: the same tolerance, for
# the same reasons.
INT8_TYPES = ("Q4_K", "Q5_K", "Q6_K", "Q8_0")
TOL_INT8 = 5e-2
HERE = os.path.dirname(os.path.abspath(__file__))


def oracle(modules, work, requests):
    """llama.cpp's answers for every request ({file, texts, ids}) from one node process."""
    req = os.path.join(work, "llama.request.json")
    json.dump(requests, open(req, "w"))
    run = subprocess.run(["node", os.path.join(HERE, "gguf_llama_oracle.mjs"), modules, req], capture_output=True, text=True)
    if run.returncode != 0:
        raise RuntimeError("llama.cpp (node-llama-cpp) failed: " + run.stderr.strip()[-2000:])
    return json.loads(run.stdout)


def tokenizer_key(variant):
    """The tokenizer a variant's file holds depends on its architecture and options, not on its
    weight type: its ids are checked on the first variant with that key."""
    arch, _, _, o = make_gguf.VARIANTS[variant]
    return (arch, o["tok"], o.get("pre"))


def prepare(cli, work, variant, tokenized):
    """Writes the variant and runs headmap on it: the ids of the hard strings (when its
    tokenizer was not checked yet) and the next-token distribution after TEXTS. Returns what
    llama.cpp is to be asked and held to, or None when headmap refused the file."""
    path = make_gguf.write_variant(work, variant, reference=False)
    texts, got = [], []
    if tokenizer_key(variant) not in tokenized:
        tokenized[tokenizer_key(variant)] = variant
        texts = [t for t in HARD if "<s>" not in t or make_gguf.VARIANTS[variant][3]["tok"] == "spm"]
        for t in texts:
            run = subprocess.run([cli, "tokenize", "--tokenizer", path, "--text", t], capture_output=True, text=True)
            if run.returncode != 0:
                print(f"{variant:16s} headmap-cli tokenize refused it: {run.stderr.strip()}  DIFFERENT")
                return None
            got.append(json.loads(run.stdout)["ids"])
    run_json = os.path.join(work, variant + ".json")
    cmd = [cli, "--model", path, "--json", run_json, "--top-k", "10"]
    for t in TEXTS:
        cmd += ["--text", t]
    run = subprocess.run(cmd, capture_output=True, text=True)
    if run.returncode != 0:
        print(f"{variant:16s} headmap-cli refused it: {run.stderr.strip()}  DIFFERENT")
        return None
    rj = json.load(open(run_json))
    ids = [s["token_ids"] if "token_ids" in s else None for s in rj.get("sentences", [])]
    if not ids or None in ids:
        ids = rj["token_ids"]
    rj8 = None
    if make_gguf.VARIANTS[variant][2] in INT8_TYPES:  # the same run with llama.cpp's 8-bit products
        run8_json = os.path.join(work, variant + ".int8.json")
        run = subprocess.run([a if a != run_json else run8_json for a in cmd] + ["--int8-products"], capture_output=True, text=True)
        if run.returncode != 0 or "8-bit products:" not in run.stdout:
            print(f"{variant:16s} headmap-cli --int8-products failed: {run.stderr.strip()}  DIFFERENT")
            return None
        rj8 = json.load(open(run8_json))
    return dict(variant=variant, file=path, texts=texts, got=got, rj=rj, rj8=rj8, ids=ids)


def distribution_gap(variant, ids, llama, rj, tol):
    """headmap's next-token distributions (rj, a --json run) against llama.cpp's logits: whether
    they agree within tol, the worst top-10 log-probability difference, whether top-1 is equal."""
    ok, worst, top1_same = True, 0.0, True
    for b, (seq, logits) in enumerate(zip(ids, llama["logits"])):
        lg = dict((int(k), v) for k, v in logits)
        top_l = max(lg, key=lg.get)
        mine = rj["next_tokens"][b][len(seq) - 1]  # [{id, prob}], most likely first
        scale = max(1.0, abs(lg[top_l]))
        if mine[0]["id"] != top_l:
            top1_same = False
            # a near-tie may flip under llama.cpp's rounding: only then is another top-1 allowed
            gap = lg[top_l] - lg.get(mine[0]["id"], -math.inf)
            if gap > tol * scale:
                ok = False
                print(f"{variant:16s} sentence {b}: top-1 {mine[0]['id']} but llama.cpp's is {top_l} (logit gap {gap:.3g})  DIFFERENT")
        for n in mine:
            if n["prob"] <= 0:
                continue
            d_mine = math.log(n["prob"]) - math.log(mine[0]["prob"])
            d_llama = lg[n["id"]] - lg[mine[0]["id"]]
            worst = max(worst, abs(d_mine - d_llama) / scale)
    return ok and worst <= tol, worst, top1_same


def compare(p, llama, tokenized):
    """Holds headmap's answers (prepare's) to llama.cpp's for one variant; prints its line."""
    variant, texts, got, rj, ids = p["variant"], p["texts"], p["got"], p["rj"], p["ids"]
    wtype = make_gguf.VARIANTS[variant][2]
    if "error" in llama:
        print(f"{variant:16s} {wtype:6s} llama.cpp refused the file: {llama['error']}  DIFFERENT")
        return False
    ok = True
    bad_ids = []
    for t, mine, theirs in zip(texts, got, llama["tokens"]):
        want = ([llama["bos"]] if llama["prepend_bos"] else []) + theirs
        if mine != want:
            bad_ids.append(f"{t!r}: headmap {mine} llama.cpp {want}")
    if bad_ids:
        ok = False
        print(f"{variant:16s} token ids differ from llama.cpp's:\n  " + "\n  ".join(bad_ids))
    tol = TOL.get(wtype, 5e-2)
    agree, worst, top1_same = distribution_gap(variant, ids, llama, rj, tol)
    ok = ok and agree
    int8_words = ""
    if p["rj8"] is not None:
        agree8, worst8, same8 = distribution_gap(variant, ids, llama, p["rj8"], TOL_INT8)
        ok = ok and agree8
        int8_words = (f"; with 8-bit products top-1 {'equal' if same8 else 'differs'}, worst {worst8:.2e} "
                      f"(tolerance {TOL_INT8:g})")
    id_words = (f"ids of {len(texts)} hard strings {'equal' if not bad_ids else 'DIFFER'}" if texts
                else f"ids as {tokenized[tokenizer_key(variant)]}'s")
    print(f"{variant:16s} {wtype:6s} {id_words}; next-token top-1 "
          f"{'equal' if top1_same else 'differs'}, worst top-10 log-prob difference {worst:.2e} of the logit scale (tolerance {tol:g})"
          f"{int8_words}  {'ok' if ok else 'DIFFERENT'}")
    return ok


def main():
    if len(sys.argv) < 4:
        print(__doc__)
        return 2
    cli, modules, work = sys.argv[1:4]
    if skip := reference_common.llama_cpp_missing(modules):
        print(skip)
        return 77
    os.makedirs(work, exist_ok=True)
    variants = sys.argv[4:] or list(make_gguf.VARIANTS)
    tokenized = {}
    prepared = [prepare(cli, work, v, tokenized) for v in variants]
    todo = [p for p in prepared if p]
    answers = oracle(modules, work, [dict(file=p["file"], texts=p["texts"], ids=p["ids"]) for p in todo])
    results = [False] * (len(prepared) - len(todo)) + [compare(p, a, tokenized) for p, a in zip(todo, answers)]
    print(f"{sum(results)} of {len(results)} GGUF variants agree with llama.cpp (token ids, next-token top-1 and log-probabilities)")
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
