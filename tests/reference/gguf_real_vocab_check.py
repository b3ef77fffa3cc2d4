#!/usr/bin/env python3
"""gguf_real_vocab_check.py: headmap's GGUF tokenizer on real vocabularies (Llama 3's 128k BPE,
pre "llama-bpe"; Qwen 3's 151k, "qwen2"; GPT-2's 50k, "gpt-2"; Phi-3's 32k SentencePiece, with and
without the name that makes llama.cpp strip the whitespace after its special tokens; written by make_gguf_vocab.py
from the real tokenizer.json files) held to llama.cpp's own tokenizer on the same file; and on
make_gguf_vocab's VARIANTS, whose tokens llama.cpp's loader retypes by their text (headmap's
kTokenNames, core/io/gguf_tokenizer.cpp): the same vocabularies with no token_type, and GPT-2's
with gpt-oss, gemma4 and fill-in-the-middle spellings appended.

    gguf_real_vocab_check.py HEADMAP_CLI LLAMA_NODE_MODULES HF_NODE_MODULES WORK_DIR

For every family and every text of TEXTS (and the family's own special-token texts):
  headmap-cli tokenize --tokenizer FAMILY.gguf (one load, --texts-file) must equal llama.cpp's
  model.tokenize(text, true), with its BOS when llama.cpp prepends one. A pair listed in KNOWN
  is a known difference, pinned to the exact ids on both sides (a change either way fails).
  Hugging Face's tokenizers on the tokenizer.json the file was written from is a second
  witness: where it and llama.cpp disagree the line says so, and llama.cpp is the authority
  for a GGUF file (no failure: the two official libraries differ, e.g. Qwen's NFC normalizer,
  which the GGUF format has no key for).
Exit 0 all agree, 1 a difference, 77 when node or an npm oracle is missing.
"""
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import reference_common  # noqa: E402

np = reference_common.numpy_or_skip()
import make_gguf_vocab  # noqa: E402
from gguf_llama_check import HARD  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ENGLISH = ("The committee met on Tuesday afternoon to review the budget, which had grown by nearly twelve percent since "
           "last year. Several members argued that the increase was justified by rising costs; others weren't convinced, "
           "and asked for a detailed breakdown before the next meeting. In the end, they agreed to postpone the vote "
           "until March 3rd, 2027, when the auditors' report would be ready.")
TEXTS = HARD + [
    "1234567 89", "3.14159 and 1,000,000 or 0x7fff", "I'm you'll WE'RE", "she's THEY'VE it'd HE'LL", "a    b", "x\n\n\n\ny",
    "  \n  \n", "end   \n\n  ", "line one\r\nline two\r\n", "中文混合English와 한국어", "مرحبا بالعالم", "नमस्ते दुनिया",
    "👨\u200d👩\u200d👧 family 👍🏽", "e\u0301te\u0301 na\u0131\u0308ve a\u0300 n\u0303", "def f(x):\n\tif x:\n\t\treturn x  # tab\n",
    "<|endoftext|><|endoftext|>", " <|endoftext|> ", "a\u2028b\u0085c\x0bd", ENGLISH]
PHI3_TEXTS = ["<|user|>\nSYS\nHI<|end|>\n<|assistant|>\n", "<|system|>  You are kind.<|end|>\n<|user|>\n\tWhat is 2+2?<|end|>\n<|assistant|>",
              "</s>  x<s> y<unk> z<|endoftext|> w", "a <|end|> b <|end|><|end|>  <|end|>", "<|placeholder1|>\r\n\x0b\x0cq<|placeholder6|>",
              "<|end|>\u3000x<|end|>\u00a0y", "<|assistant|> \n \n"]
SPECIAL = {  # the family's own control (3) and user-defined (4) tokens written in the text
    "llama3": ["<|begin_of_text|>Hello<|eot_id|>", "a<|start_header_id|>user<|end_header_id|>\n\nhi"],
    "qwen3": ["<|im_start|>user\nhi<|im_end|>", "<tool_call>x</tool_call>", "<think>\n\n</think>\n\nok", "a<|fim_prefix|>b"],
    "gpt2": [],
    # Every token normal to the file: llama.cpp makes the end-of-generation and fill-in-the-middle
    # spellings control (matched whole), the rest of the added tokens stay text.
    "llama3-untyped": ["<|begin_of_text|>Hello<|eot_id|>", "a<|start_header_id|>user<|end_header_id|>\n\nhi", "x<|end_of_text|>y",
                       "<|eot_id|><|eot_id|> <|eot_id|>"],
    "qwen3-untyped": ["<|im_start|>user\nhi<|im_end|>", "<tool_call>x</tool_call>", "a<|fim_prefix|>b<|fim_suffix|>c<|fim_middle|>d",
                      "<|repo_name|>r<|file_sep|>f<|fim_pad|>", "x<|endoftext|></s> <|im_end|>\n"],
    # Phi-3's chat tokens drop the whitespace after them (llama.cpp knows the file by its name);
    # the same file under another name keeps it. <s>, <unk> and <|endoftext|> keep it in both.
    "phi3": PHI3_TEXTS,
    "phi3-unnamed": PHI3_TEXTS,
    "gpt2-names": ["<|channel|>analysis<|message|>hi<|end|>", "a<|return|>b<|call|>c", "x</s>y<|tool_response>z",
                   "<|fim_prefix|>p<|fim_suffix|>s<|fim_middle|>", "<|end|></s><|channel|>"],
}
# Qwen's "</s>" (id 128247) is an ordinary token in the file, and "sat<s>on</s>mat" used to be
# pinned here as the one difference; kTokenNames made it equal (llama.cpp makes "</s>" control).
# (family, text) -> (headmap's ids, llama.cpp's ids with BOS): known differences, pinned.
# After a Phi-3 special token, llama.cpp strips ASCII whitespace only (isspace on bytes), where
# Phi-3's own tokenizer.json (rstrip, Hugging Face's tokenizers) and headmap strip U+3000 and
# U+00A0 too: headmap follows the tokenizer the model was trained with.
KNOWN = {("phi3", "<|end|>\u3000x<|end|>\u00a0y"): ([1, 32007, 1318, 32007, 337], [1, 32007, 28705, 29351, 28744, 32007, 28705, 29000, 28724])}


def headmap_ids(cli, path, texts, work, family):
    req = os.path.join(work, family + ".texts.json")
    json.dump(texts, open(req, "w", encoding="utf-8"), ensure_ascii=False)
    run = subprocess.run([cli, "tokenize", "--tokenizer", path, "--texts-file", req], capture_output=True, text=True, encoding="utf-8")
    if run.returncode != 0:
        raise RuntimeError(f"headmap-cli tokenize refused {path}: {run.stderr.strip()}")
    ids = [json.loads(line)["ids"] for line in run.stdout.split("\n") if line]  # not splitlines(): U+2028 may be in the JSON
    if len(ids) != len(texts):
        raise RuntimeError(f"headmap-cli tokenize gave {len(ids)} answers for {len(texts)} texts")
    return ids


def main():
    if len(sys.argv) != 5:
        print(__doc__)
        return 2
    cli, llama_modules, hf_modules, work = sys.argv[1:5]
    if skip := reference_common.llama_cpp_missing(llama_modules):
        print(skip)
        return 77
    if not all(os.path.exists(make_gguf_vocab.tokenizer_json_path(hf_modules, f)) for f in list(make_gguf_vocab.FAMILIES) + list(make_gguf_vocab.SPM)) or \
            not os.path.isdir(os.path.join(hf_modules, "tokenizers")):
        print(f"SKIPPED: the tokenizer.json files or tokenizers are not installed in {hf_modules} (hf_tokenizer_oracle_setup says why)")
        return 77
    os.makedirs(work, exist_ok=True)
    t0 = time.time()
    families = list(make_gguf_vocab.FAMILIES) + list(make_gguf_vocab.SPM) + list(make_gguf_vocab.VARIANTS)
    paths = {f: make_gguf_vocab.write_family(hf_modules, work, f) for f in families}
    texts = {f: TEXTS + SPECIAL[f] for f in families}
    t1 = time.time()
    mine = {f: headmap_ids(cli, paths[f], texts[f], work, f) for f in families}
    t2 = time.time()
    req = os.path.join(work, "oracle.request.json")
    json.dump([{"gguf": paths[f], "json": make_gguf_vocab.witness_json(hf_modules, work, f), "texts": texts[f]} for f in families],
              open(req, "w", encoding="utf-8"), ensure_ascii=False)
    run = subprocess.run(["node", os.path.join(HERE, "gguf_real_vocab_oracle.mjs"), llama_modules, hf_modules, req],
                         capture_output=True, text=True, encoding="utf-8")
    if run.returncode != 0:
        print("llama.cpp / tokenizers (node) failed: " + run.stderr.strip()[-2000:])
        return 1
    oracle = dict(zip(families, json.loads(run.stdout)))
    if any(len(oracle[f]["llama"]) != len(texts[f]) or len(oracle[f]["hf"]) != len(texts[f]) for f in families):
        print("the node oracle gave fewer answers than texts")
        return 1
    t3 = time.time()
    ok, seen_known = True, set()
    for f in families:
        o, equal, hf_differs = oracle[f], 0, 0
        bos = [o["bos"]] if o["prepend_bos"] else []
        for t, got, theirs, hf in zip(texts[f], mine[f], o["llama"], o["hf"]):
            want = bos + theirs
            if theirs != hf:
                hf_differs += 1
                print(f"  note {f} {t!r}: Hugging Face's tokenizers gives {hf}, llama.cpp {theirs}; llama.cpp is the authority "
                      f"for a GGUF file; headmap {'follows llama.cpp' if got == want else 'follows neither' if got != bos + hf else 'follows HF'}")
            if (f, t) in KNOWN:
                seen_known.add((f, t))
                if (got, want) != KNOWN[(f, t)]:
                    ok = False
                    print(f"  {f} {t!r}: a known difference changed: headmap {got} llama.cpp {want} (pinned: {KNOWN[(f, t)]})  DIFFERENT")
                else:
                    print(f"  {f} {t!r}: KNOWN DIFFERENCE headmap {got} llama.cpp {want}")
                continue
            if got == want:
                equal += 1
            else:
                ok = False
                print(f"  {f} {t!r}: headmap {got} llama.cpp {want}  DIFFERENT")
        print(f"{f:14s} {len(texts[f])} texts: {equal} equal to llama.cpp; Hugging Face's tokenizers "
              f"differs from llama.cpp on {hf_differs}")
    for k in set(KNOWN) - seen_known:
        ok = False
        print(f"  known difference {k} was not checked")
    print(f"wall: write {t1 - t0:.1f} s, headmap-cli {t2 - t1:.1f} s, node (llama.cpp + tokenizers) {t3 - t2:.1f} s")
    print("all equal to llama.cpp" if ok else "DIFFERENT from llama.cpp")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
