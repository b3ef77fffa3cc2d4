#!/usr/bin/env python3
"""make_gpt2_dir.py: writes tiny random GPT-2 models in Hugging Face's directory layout,
in every file variant headmap must accept, for tests that need no download.

    make_gpt2_dir.py OUT_DIR [--variant NAME] [--d 36 --heads 3 --layers 3 --positions 24]
    make_gpt2_dir.py OUT_DIR --variant all        # one sub-directory per variant

Variants (all from the same seed, so F32 variants hold the same numbers):
    f32          transformer.-prefixed names, no lm_head (tied), vocab.json + merges.txt
    noprefix     names without the prefix, lm_head.weight written out equal to wte, the
                 causal-mask buffers h.N.attn.bias and h.N.attn.masked_bias
    f16          F16 tensors, tokenizer.json instead of vocab.json + merges.txt
    bf16         BF16 tensors
    sharded      model.safetensors.index.json and three shards
    untied       an lm_head.weight that differs from wte
    eps          layer_norm_epsilon 1e-2 instead of 1e-5, so a wrong epsilon shows

--tokenizer FILE writes FILE as the directory's tokenizer.json (no vocab.json + merges.txt)
and sizes the embedding to its vocabulary: a tiny model for any tokenizer.json.

The tokenizer is byte-level BPE in GPT-2's spelling: ids 0..255 are the 256 bytes (in GPT-2's
byte-to-unicode order), then a few merges ("Ġ t", "h e", "Ġt he", ...), then <|endoftext|>.
Needs numpy only.
"""
import argparse
import json
import os
import struct
import sys

import numpy as np

VARIANTS = ["f32", "noprefix", "f16", "bf16", "sharded", "untied", "eps"]
MERGES = ["Ġ t", "h e", "Ġt he", "a t", "Ġ c", "Ġc at", "Ġ s", "Ġs at", "Ġ o", "Ġo n", "Ġ m", "Ġm at",
          "i t", "Ġ it", "Ġ w", "a s", "Ġw as", "r e", "Ġt i", "Ġti re", "Ġtire d"]


def bytes_to_unicode():
    """GPT-2's reversible byte -> printable character map (from the published algorithm)."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, [chr(c) for c in cs]))


def tiny_vocab():
    b2u = bytes_to_unicode()
    vocab = {}
    for b in b2u:  # GPT-2 numbers the bytes in this same order
        vocab[b2u[b]] = len(vocab)
    for m in MERGES:
        left, right = m.split(" ")
        assert left in vocab and right in vocab, m
        vocab.setdefault(left + right, len(vocab))
    vocab["<|endoftext|>"] = len(vocab)
    return vocab


def to_bf16_bits(a):
    """float32 -> bfloat16 bits, round to nearest even."""
    u = np.ascontiguousarray(a, dtype=np.float32).view(np.uint32).astype(np.uint64)
    u = (u + 0x7FFF + ((u >> 16) & 1)) >> 16
    return u.astype(np.uint16)


def encode_tensor(a, dtype):
    if dtype == "F32":
        return np.ascontiguousarray(a, dtype="<f4").tobytes()
    if dtype == "F16":
        return np.ascontiguousarray(a, dtype="<f2").tobytes()
    if dtype == "BF16":
        return to_bf16_bits(a).astype("<u2").tobytes()
    raise ValueError(dtype)


def write_safetensors(path, tensors, dtype_of, metadata=None):
    """tensors: list of (name, array); dtype_of(name) -> "F32" | "F16" | "BF16"."""
    header, blobs, offset = {}, [], 0
    for name, a in tensors:
        dt = dtype_of(name)
        blob = encode_tensor(a, dt)
        header[name] = {"dtype": dt, "shape": list(a.shape), "data_offsets": [offset, offset + len(blob)]}
        blobs.append(blob)
        offset += len(blob)
    if metadata:
        header["__metadata__"] = metadata
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for b in blobs:
            f.write(b)


def make_weights(D, L, V, P, seed):
    """GPT-2's tensors in Hugging Face's names (without the prefix), float32."""
    r = np.random.default_rng(seed)
    n = lambda *shape, s=0.02: (r.standard_normal(shape) * s).astype(np.float32)
    t = [("wte.weight", n(V, D, s=0.1)), ("wpe.weight", n(P, D, s=0.05))]
    for l in range(L):
        h = f"h.{l}."
        t += [(h + "ln_1.weight", 1 + n(D, s=0.1)), (h + "ln_1.bias", n(D)),
              (h + "attn.c_attn.weight", n(D, 3 * D, s=0.25)), (h + "attn.c_attn.bias", n(3 * D, s=0.1)),
              (h + "attn.c_proj.weight", n(D, D, s=0.1)), (h + "attn.c_proj.bias", n(D)),
              (h + "ln_2.weight", 1 + n(D, s=0.1)), (h + "ln_2.bias", n(D)),
              (h + "mlp.c_fc.weight", n(D, 4 * D, s=0.1)), (h + "mlp.c_fc.bias", n(4 * D)),
              (h + "mlp.c_proj.weight", n(4 * D, D, s=0.05)), (h + "mlp.c_proj.bias", n(D))]
    t += [("ln_f.weight", 1 + n(D, s=0.1)), ("ln_f.bias", n(D))]
    return t, r


def tokenizer_size(tok):
    """The ids a tokenizer.json uses: its largest id + 1 (the model's vocabulary, added tokens)."""
    v = tok["model"]["vocab"]
    ids = list(v.values()) if isinstance(v, dict) else list(range(len(v)))
    ids += [t["id"] for t in tok.get("added_tokens") or []]
    return max(ids) + 1


def write_dir(out, variant, D=36, H=3, L=3, P=24, seed=1234, tokenizer=None):
    assert variant in VARIANTS, variant
    os.makedirs(out, exist_ok=True)
    vocab = tiny_vocab()
    V = len(vocab)
    if tokenizer:
        with open(tokenizer, encoding="utf-8") as f:
            given = json.load(f)
        V = tokenizer_size(given)
    tensors, r = make_weights(D, L, V, P, seed)
    eps = 1e-2 if variant == "eps" else 1e-5
    config = {"architectures": ["GPT2LMHeadModel"], "model_type": "gpt2", "activation_function": "gelu_new",
              "n_embd": D, "n_head": H, "n_layer": L, "n_positions": P, "n_ctx": P, "vocab_size": V,
              "layer_norm_epsilon": eps, "bos_token_id": V - 1, "eos_token_id": V - 1}
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(config, f, indent=2)

    prefix = "" if variant == "noprefix" else "transformer."
    named = [(prefix + name, a) for name, a in tensors]
    if variant == "noprefix":
        named.append(("lm_head.weight", tensors[0][1].copy()))
        for l in range(L):
            named.append((f"h.{l}.attn.bias", np.tril(np.ones((1, 1, P, P), np.float32))))
            named.append((f"h.{l}.attn.masked_bias", np.array(-1e4, np.float32)))
    if variant == "untied":
        named.append(("lm_head.weight", (r.standard_normal((V, D)) * 0.1).astype(np.float32)))
    dtype = {"f16": "F16", "bf16": "BF16"}.get(variant, "F32")
    # The mask buffers stay F32 (masked_bias holds -1e4, as real files do).
    dtype_of = lambda name: "F32" if name.endswith("attn.bias") or name.endswith("masked_bias") else dtype
    meta = {"format": "pt"}
    if variant == "sharded":
        shards = [named[: len(named) // 3], named[len(named) // 3: 2 * len(named) // 3], named[2 * len(named) // 3:]]
        weight_map = {}
        for i, part in enumerate(shards):
            fname = f"model-{i + 1:05d}-of-{len(shards):05d}.safetensors"
            write_safetensors(os.path.join(out, fname), part, dtype_of, meta)
            weight_map.update({name: fname for name, _ in part})
        with open(os.path.join(out, "model.safetensors.index.json"), "w") as f:
            json.dump({"metadata": {"total_size": sum(a.nbytes for _, a in named)}, "weight_map": weight_map}, f, indent=1)
    else:
        write_safetensors(os.path.join(out, "model.safetensors"), named, dtype_of, meta)

    if tokenizer:
        with open(os.path.join(out, "tokenizer.json"), "w", encoding="utf-8") as f:
            json.dump(given, f, ensure_ascii=False)
    elif variant == "f16":
        tok = {"version": "1.0", "added_tokens": [{"id": V - 1, "content": "<|endoftext|>", "special": True}],
               "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True},
               "decoder": {"type": "ByteLevel"},
               "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": "",
                         "end_of_word_suffix": "", "fuse_unk": False, "vocab": vocab, "merges": MERGES}}
        with open(os.path.join(out, "tokenizer.json"), "w", encoding="utf-8") as f:
            json.dump(tok, f, ensure_ascii=False)
    else:
        with open(os.path.join(out, "vocab.json"), "w", encoding="utf-8") as f:
            json.dump(vocab, f, ensure_ascii=False)
        with open(os.path.join(out, "merges.txt"), "w", encoding="utf-8") as f:
            f.write("#version: 0.2\n" + "\n".join(MERGES) + "\n")
    return config


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out")
    ap.add_argument("--variant", default="f32", choices=VARIANTS + ["all"])
    ap.add_argument("--d", type=int, default=36)
    ap.add_argument("--heads", type=int, default=3)
    ap.add_argument("--layers", type=int, default=3)
    ap.add_argument("--positions", type=int, default=24)
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--tokenizer", help="a tokenizer.json to ship with the model instead of the tiny byte-level BPE")
    a = ap.parse_args()
    for v in (VARIANTS if a.variant == "all" else [a.variant]):
        out = os.path.join(a.out, v) if a.variant == "all" else a.out
        write_dir(out, v, a.d, a.heads, a.layers, a.positions, a.seed, a.tokenizer)
        print(out)


if __name__ == "__main__":
    sys.exit(main())
