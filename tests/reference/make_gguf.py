#!/usr/bin/env python3
"""make_gguf.py: writes tiny random GGUF files (llama.cpp's format, version 3) of every
architecture and tensor type headmap reads, written from the format's description (ggml's
docs/gguf.md and the block layouts of ggml-common.h), for tests that need no download.

    make_gguf.py OUT_DIR [--variant NAME | --variant all]

Each variant is one architecture in one weight type (see VARIANTS). Besides the .gguf file it
writes NAME.ref.npz: the weights as the file holds them after dequantization, under Hugging
Face's names and layouts (float64; Q/K un-permuted, Gemma's norms minus the 1 llama.cpp's
converter adds) and NAME.cfg.json, a config.json for family_reference.forward.

Quantizers: Q8_0, Q4_0, Q4_1, Q5_0, Q5_1 and IQ4_NL round each 32-element block to its own
scale (ggml's reference rule: d = max|x| / qmax); IQ4_XS rounds each 32-element sub-block the
same way under its 6-bit scale (signs drawn at random, so both halves of the range are written). The K-quants (Q2_K .. Q6_K) are written as
random codes under random sub-block scales: every such block is a valid block of the type, and
the reference dequantizes what was written. Needs numpy only.
"""
import json
import os
import struct
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import reference_common  # noqa: E402

# ---- the container ----------------------------------------------------------------------------
U8, I8, U16, I16, U32, I32, F32, BOOL, STRING, ARRAY, U64, I64, F64 = range(13)
GGML = {"F32": (0, 1, 4), "F16": (1, 1, 2), "Q4_0": (2, 32, 18), "Q4_1": (3, 32, 20), "Q5_0": (6, 32, 22), "Q5_1": (7, 32, 24),
        "Q8_0": (8, 32, 34), "Q2_K": (10, 256, 84), "Q3_K": (11, 256, 110), "Q4_K": (12, 256, 144), "Q5_K": (13, 256, 176),
        "Q6_K": (14, 256, 210), "IQ4_NL": (20, 32, 18), "IQ4_XS": (23, 256, 136),
        "BF16": (30, 1, 2)}


def gguf_string(s):
    b = s.encode("utf-8")
    return struct.pack("<Q", len(b)) + b


def gguf_value(t, v):
    fmt = {U8: "<B", I8: "<b", U16: "<H", I16: "<h", U32: "<I", I32: "<i", F32: "<f", BOOL: "<B", U64: "<Q", I64: "<q", F64: "<d"}
    if t == STRING:
        return gguf_string(v)
    if t == ARRAY:
        et, items = v
        return struct.pack("<IQ", et, len(items)) + b"".join(gguf_value(et, x) for x in items)
    return struct.pack(fmt[t], v)


def write_gguf(path, kv, tensors, alignment=32):
    """kv: [(key, type, value)]; tensors: [(name, ne (innermost first), ggml type name, bytes)]."""
    out = bytearray(b"GGUF" + struct.pack("<IQQ", 3, len(tensors), len(kv)))
    for key, t, v in kv:
        out += gguf_string(key) + struct.pack("<I", t) + gguf_value(t, v)
    offset, infos = 0, []
    for name, ne, tname, data in tensors:
        out += gguf_string(name) + struct.pack("<I", len(ne)) + b"".join(struct.pack("<Q", n) for n in ne)
        out += struct.pack("<IQ", GGML[tname][0], offset)
        infos.append((offset, data))
        offset += (len(data) + alignment - 1) // alignment * alignment
    out += b"\0" * ((-len(out)) % alignment)
    start = len(out)
    for off, data in infos:
        out += b"\0" * (start + off - len(out)) + data
    with open(path, "wb") as f:
        f.write(out)


# ---- quantizers and dequantizers (every block of a matrix at once) ------------------------------
# Each QUANT function takes X (blocks, qk) float64 and returns (bytes (blocks, nbytes) uint8,
# the float64 values those bytes stand for (blocks, qk)), vectorized over the blocks.
def f16(x):
    return np.asarray(x, dtype=np.float16)


def quantize(w, tname, rng):
    """w (rows, cols) float64 -> (bytes, the float64 values the bytes stand for)."""
    rows, cols = w.shape
    if tname == "F32":
        v = w.astype(np.float32)
        return v.tobytes(), v.astype(np.float64)
    if tname == "F16":
        v = w.astype(np.float16)
        return v.tobytes(), v.astype(np.float64)
    if tname == "BF16":
        b = (w.astype(np.float32).view(np.uint32) + 0x7FFF + ((w.astype(np.float32).view(np.uint32) >> 16) & 1)) >> 16
        b = b.astype(np.uint16)
        return b.tobytes(), (b.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    _, qk, nbytes = GGML[tname]
    raw, vals = QUANT[tname](w.reshape(-1, qk), rng)
    assert raw.shape == (rows * cols // qk, nbytes), (tname, raw.shape)
    return raw.tobytes(), vals.astype(np.float64).reshape(rows, cols)


def u8(*parts):
    """Per-block byte columns (blocks, k) of any dtype, joined: (blocks, total bytes) uint8."""
    return np.concatenate([np.ascontiguousarray(p).view(np.uint8).reshape(len(p), -1) for p in parts], 1)


def over(x, d):
    """x / d per block (d (blocks,) float16 or float32, 0 -> 1: its codes are then set apart)."""
    d = np.asarray(d, dtype=np.float64)
    return x / np.where(d == 0, 1.0, d)[:, None]


def q8_0(x, rng):
    d = f16(np.abs(x).max(1) / 127)
    q = np.where(d[:, None] != 0, np.clip(np.round(over(x, d)), -127, 127), 0).astype(np.int8)
    return u8(d, q), d.astype(np.float32)[:, None] * q.astype(np.float32)


def nibbles(q):  # (blocks, 32) values 0..15 -> (blocks, 16) bytes: element j low nibble, j + 16 high
    return (q[:, :16] | (q[:, 16:] << 4)).astype(np.uint8)


def fifth_bits(q):  # (blocks,) u32: bit j = bit 4 of element j
    return (((q >> 4) & 1).astype(np.uint32) << np.arange(32, dtype=np.uint32)).sum(1, dtype=np.uint32)


def absmax_signed(x):
    return x[np.arange(len(x)), np.argmax(np.abs(x), 1)]


def q4_0(x, rng):
    d = f16(absmax_signed(x) / -8)
    q = np.where(d[:, None] != 0, np.clip(np.round(over(x, d)) + 8, 0, 15), 8).astype(np.int32)
    return u8(d, nibbles(q)), d.astype(np.float32)[:, None] * (q - 8).astype(np.float32)


def q4_1(x, rng):
    lo, hi = x.min(1), x.max(1)
    d, m = f16((hi - lo) / 15), f16(lo)
    q = np.where(d[:, None] != 0, np.clip(np.round(over(x - m.astype(np.float32)[:, None], d)), 0, 15), 0).astype(np.int32)
    return u8(d, m, nibbles(q)), d.astype(np.float32)[:, None] * q.astype(np.float32) + m.astype(np.float32)[:, None]


def q5_0(x, rng):
    d = f16(absmax_signed(x) / -16)
    q = np.where(d[:, None] != 0, np.clip(np.round(over(x, d)) + 16, 0, 31), 16).astype(np.int32)
    return u8(d, fifth_bits(q), nibbles(q & 15)), d.astype(np.float32)[:, None] * (q - 16).astype(np.float32)


def q5_1(x, rng):
    lo, hi = x.min(1), x.max(1)
    d, m = f16((hi - lo) / 31), f16(lo)
    q = np.where(d[:, None] != 0, np.clip(np.round(over(x - m.astype(np.float32)[:, None], d)), 0, 31), 0).astype(np.int32)
    return (u8(d, m, fifth_bits(q), nibbles(q & 15)),
            d.astype(np.float32)[:, None] * q.astype(np.float32) + m.astype(np.float32)[:, None])


IQ4NL = np.array([-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113], dtype=np.float32)


def nearest_iq4(x, d):
    """x (blocks, 32), d (blocks,) -> the IQ4NL index nearest x / d (8 where d = 0)."""
    q = np.abs(over(x, d)[:, :, None] - IQ4NL).argmin(2)
    return np.where(np.asarray(d)[:, None] != 0, q, 8)


def iq4_nl(x, rng):
    d = f16(np.abs(x).max(1) / 127)
    q = nearest_iq4(x, d.astype(np.float32))
    return u8(d, nibbles(q)), d.astype(np.float32)[:, None] * IQ4NL[q]


def iq4_xs(x, rng):
    """ggml-common.h's block_iq4_xs: d, scales_h (u16: bits 2ib, 2ib + 1 = the high bits of
    sub-block ib's scale), scales_l[4] (nibble ib, low first = its low bits), qs[128] (16 bytes a
    sub-block, as IQ4_NL's). Sub-block ib: x = (d * (ls - 32)) * IQ4NL[q]."""
    nb = len(x)
    sub = x.reshape(nb, 8, 32)
    want = np.abs(sub).max(2) / 127 * rng.choice([-1.0, 1.0], (nb, 8))  # each sub-block's IQ4_NL scale, either sign
    d = f16(np.abs(want).max(1) / 31)
    ls = np.where(d[:, None] != 0, np.clip(np.round(over(want, d.astype(np.float32))), -32, 31), 0).astype(np.int32) + 32
    scales_h = ((ls >> 4).astype(np.uint16) << (2 * np.arange(8, dtype=np.uint16))).sum(1, dtype=np.uint16)
    scales_l = ((ls[:, 0::2] & 15) | ((ls[:, 1::2] & 15) << 4)).astype(np.uint8)
    dl = d.astype(np.float32)[:, None] * (ls - 32).astype(np.float32)  # (blocks, 8)
    q = nearest_iq4(sub.reshape(nb * 8, 32), dl.reshape(-1))           # (blocks * 8, 32)
    y = dl.reshape(-1)[:, None] * IQ4NL[q]
    return u8(d, scales_h, scales_l, nibbles(q).reshape(nb, 128)), y.reshape(nb, 256)


# K-quants: random codes and sub-block scales, the super-block scale sized to the weights.
def randu8(rng, nb, n):
    return rng.integers(0, 256, (nb, n)).astype(np.uint8)


def q2_k(x, rng):
    nb = len(x)
    sc, qs = randu8(rng, nb, 16), randu8(rng, nb, 64)         # sc: low nibble scale, high nibble min
    d, dmin = f16(np.abs(x).max(1) / 45), f16(np.abs(x).max(1) / 30)
    y = np.zeros((nb, 256), np.float32)
    k, i = 0, 0
    for n in range(2):
        q = qs[:, 32 * n:32 * n + 32]
        for shift in (0, 2, 4, 6):
            for half in (0, 1):
                s = sc[:, i:i + 1]; i += 1
                dl, ml = d.astype(np.float32)[:, None] * (s & 15).astype(np.float32), dmin.astype(np.float32)[:, None] * (s >> 4).astype(np.float32)
                y[:, k:k + 16] = dl * ((q[:, 16 * half:16 * half + 16] >> shift) & 3).astype(np.float32) - ml
                k += 16
    return u8(sc, qs, d, dmin), y


def q3_k(x, rng):
    nb = len(x)
    hm, qs, raw = randu8(rng, nb, 32), randu8(rng, nb, 64), randu8(rng, nb, 12)
    d = f16(np.abs(x).max(1) / 128)
    scales = []
    for j in range(16):
        lo = (raw[:, j] & 15) if j < 8 else (raw[:, j - 8] >> 4)
        hi = (raw[:, 8 + j % 4] >> (2 * (j // 4))) & 3
        scales.append((lo | (hi << 4)).astype(np.int32) - 32)
    y = np.zeros((nb, 256), np.float32)
    k, i, m = 0, 0, 1
    for n in range(2):
        q = qs[:, 32 * n:32 * n + 32]
        for shift in (0, 2, 4, 6):
            for half in (0, 1):
                dl = d.astype(np.float32)[:, None] * scales[i][:, None].astype(np.float32); i += 1
                sl = slice(16 * half, 16 * half + 16)
                y[:, k:k + 16] = dl * (((q[:, sl] >> shift) & 3).astype(np.float32) - np.where(hm[:, sl] & m, 0, 4))
                k += 16
            m <<= 1
    return u8(hm, qs, raw, d), y


def scale_min_k4(j, q):
    if j < 4:
        return q[:, j] & 63, q[:, j + 4] & 63
    return (q[:, j + 4] & 15) | ((q[:, j - 4] >> 6) << 4), (q[:, j + 4] >> 4) | ((q[:, j] >> 6) << 4)


def q45_k(x, rng, five):
    nb = len(x)
    # dmin = d x the mean code (7.5 or 15.5): the mean of d s q - dmin m is then 0 (s, m drawn
    # alike), as Q2_K's; a positive mean in every weight grows the residual stream layer by
    # layer until a soft-capped logit (gemma2's) saturates and every top-10 token ties.
    big = np.abs(x).max(1)
    d, dmin = f16(big / (1000 if five else 500)), f16(big * (15.5 / 1000 if five else 7.5 / 500))
    sc, qh, ql = randu8(rng, nb, 12), randu8(rng, nb, 32), randu8(rng, nb, 128)
    df, mf = d.astype(np.float32)[:, None], dmin.astype(np.float32)[:, None]
    y = np.zeros((nb, 256), np.float32)
    u1, u2 = 1, 2
    for j in range(4):
        s1, m1 = (v.astype(np.float32)[:, None] for v in scale_min_k4(2 * j, sc))
        s2, m2 = (v.astype(np.float32)[:, None] for v in scale_min_k4(2 * j + 1, sc))
        q = ql[:, 32 * j:32 * j + 32]
        h1 = np.where(qh & u1, 16, 0) if five else 0
        h2 = np.where(qh & u2, 16, 0) if five else 0
        y[:, 64 * j:64 * j + 32] = df * s1 * ((q & 15) + h1).astype(np.float32) - mf * m1
        y[:, 64 * j + 32:64 * j + 64] = df * s2 * ((q >> 4) + h2).astype(np.float32) - mf * m2
        u1, u2 = u1 << 2, u2 << 2
    return (u8(d, dmin, sc, qh, ql) if five else u8(d, dmin, sc, ql)), y


def q6_k(x, rng):
    nb = len(x)
    ql, qh = randu8(rng, nb, 128), randu8(rng, nb, 64)
    sc = rng.integers(-128, 128, (nb, 16)).astype(np.int8)
    d = f16(np.abs(x).max(1) / 4096)
    y = np.zeros((nb, 256), np.float32)
    i = np.arange(32) // 16                                   # the scale of element l: S[l // 16 + 2 * part]
    for n in range(2):
        L, H, S = ql[:, 64 * n:64 * n + 64].astype(np.int32), qh[:, 32 * n:32 * n + 32].astype(np.int32), sc[:, 8 * n:8 * n + 8]
        parts = ((L[:, :32] & 15) | (((H >> 0) & 3) << 4), (L[:, 32:] & 15) | (((H >> 2) & 3) << 4),
                 (L[:, :32] >> 4) | (((H >> 4) & 3) << 4), (L[:, 32:] >> 4) | (((H >> 6) & 3) << 4))
        for part, q in enumerate(parts):
            y[:, 128 * n + 32 * part:128 * n + 32 * part + 32] = \
                d.astype(np.float32)[:, None] * S[:, i + 2 * part].astype(np.float32) * (q - 32).astype(np.float32)
    return u8(ql, qh, sc, d), y


QUANT = {"Q8_0": q8_0, "Q4_0": q4_0, "Q4_1": q4_1, "Q5_0": q5_0, "Q5_1": q5_1, "IQ4_NL": iq4_nl, "Q2_K": q2_k, "Q3_K": q3_k,
         "Q4_K": lambda x, r: q45_k(x, r, False), "Q5_K": lambda x, r: q45_k(x, r, True), "Q6_K": q6_k, "IQ4_XS": iq4_xs}


# ---- the tokenizers -----------------------------------------------------------------------------
CORPUS = ("The cat sat on the mat because it was tired. it was the cat that sat there, and the mat was red. "
          "Numbers 12345 and 2026, don't stop; we'll see what they've said. Émile où ça? naïve café 東京 🙂 ")


def train_merges(words, n_merges):
    """Byte-pair merges learned from `words` (lists of symbols), the most frequent pair first."""
    words = [list(w) for w in words]
    merges = []
    for _ in range(n_merges):
        counts = {}
        for w in words:
            for a, b in zip(w, w[1:]):
                counts[(a, b)] = counts.get((a, b), 0) + 1
        if not counts:
            break
        best = max(counts, key=lambda p: (counts[p], p))
        if counts[best] < 2:
            break
        merges.append(best)
        for w in words:
            i = 0
            while i < len(w) - 1:
                if (w[i], w[i + 1]) == best:
                    w[i:i + 2] = [w[i] + w[i + 1]]
                i += 1
    return merges


def spm_vocab(extra=()):
    """A SentencePiece-style vocabulary (tokenizer.ggml.model "llama"): <unk> <s> </s>, the 256
    byte tokens, the corpus's characters and learned pieces (scores decrease with the merge
    order), then `extra` control tokens."""
    tokens, scores, types = ["<unk>", "<s>", "</s>"], [0.0, 0.0, 0.0], [2, 3, 3]
    for b in range(256):
        tokens.append(f"<0x{b:02X}>"); scores.append(0.0); types.append(6)
    text = ("\u2581" + CORPUS.replace(" ", "\u2581"))
    chars = sorted(set(text) - {"🙂"})  # one character left to byte fallback
    for i, c in enumerate(chars):
        tokens.append(c); scores.append(-1000.0 - i); types.append(1)
    words = ["\u2581" + w for w in CORPUS.split(" ") if w]
    for i, (a, b) in enumerate(train_merges([[c for c in w if c != "🙂"] for w in words], 60)):
        if a + b not in tokens:
            tokens.append(a + b); scores.append(-float(i)); types.append(1)
    for t in extra:
        tokens.append(t); scores.append(0.0); types.append(3)
    return tokens, scores, types


def bytes_to_unicode():
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs, n = bs[:], 0
    for b in range(256):
        if b not in bs:
            bs.append(b); cs.append(256 + n); n += 1
    return dict(zip(bs, map(chr, cs)))


def bpe_vocab():
    """A byte-level BPE vocabulary (tokenizer.ggml.model "gpt2"): the 256 byte symbols, learned
    merges, and two control tokens at the end."""
    b2u = bytes_to_unicode()
    tokens = [b2u[b] for b in range(256)]
    words = [[b2u[b] for b in (" " + w if i else w).encode("utf-8")] for i, w in enumerate(CORPUS.split(" ")) if w]
    merges = train_merges(words, 80)
    for a, b in merges:
        if a + b not in tokens:
            tokens.append(a + b)
    types = [1] * len(tokens)
    tokens += ["<|endoftext|>", "<|im_start|>"]
    types += [3, 3]
    return tokens, types, [f"{a} {b}" for a, b in merges]


# ---- the models ------------------------------------------------------------------------------------
# name -> (architecture, sizes, weight type, options)
BASE = dict(D=64, H=4, KV=2, dh=16, L=2, F=96)
VARIANTS = {
    "llama_f32": ("llama", BASE, "F32", dict(tied=False, tok="spm")),
    "llama_f16": ("llama", BASE, "F16", dict(tied=True, tok="spm")),
    "llama_bf16": ("llama", BASE, "BF16", dict(tied=False, tok="spm")),
    "llama_q8_0": ("llama", BASE, "Q8_0", dict(tied=False, tok="spm")),
    "llama_q4_0": ("llama", BASE, "Q4_0", dict(tied=False, tok="spm")),
    "llama_q4_1": ("llama", BASE, "Q4_1", dict(tied=True, tok="spm")),
    "llama_q5_0": ("llama", BASE, "Q5_0", dict(tied=False, tok="spm")),
    "llama_q5_1": ("llama", BASE, "Q5_1", dict(tied=False, tok="spm")),
    "llama_iq4_nl": ("llama", BASE, "IQ4_NL", dict(tied=False, tok="spm")),
    "llama_q2_k": ("llama", dict(BASE, D=256, dh=64, F=256), "Q2_K", dict(tied=False, tok="spm")),
    "llama_q3_k": ("llama", dict(BASE, D=256, dh=64, F=256), "Q3_K", dict(tied=False, tok="spm")),
    "llama_q4_k": ("llama", dict(BASE, D=256, dh=64, F=256), "Q4_K", dict(tied=False, tok="spm")),
    "llama_q5_k": ("llama", dict(BASE, D=256, dh=64, F=256), "Q5_K", dict(tied=False, tok="spm")),
    "llama_q6_k": ("llama", dict(BASE, D=256, dh=64, F=256), "Q6_K", dict(tied=False, tok="spm")),
    "llama_iq4_xs": ("llama", dict(BASE, D=256, dh=64, F=256), "IQ4_XS", dict(tied=False, tok="spm")),
    "qwen2_iq4_xs": ("qwen2", dict(BASE, D=256, dh=64, F=256), "IQ4_XS", dict(tied=False, tok="bpe", pre="qwen2", bias=True)),
    "llama3_bpe_q8_0": ("llama", BASE, "Q8_0", dict(tied=True, tok="bpe", pre="llama-bpe")),
    # Llama 3.1/3.2: rope_freqs, llama3 scaling with a short original context so it bends these positions
    "llama31_q8_0": ("llama", BASE, "Q8_0", dict(tied=True, tok="bpe", pre="llama-bpe", theta=500000.0,
                                                 llama3=dict(factor=8.0, low_freq_factor=1.0, high_freq_factor=4.0,
                                                             original_max_position_embeddings=16))),
    "smollm_q8_0": ("llama", dict(BASE, H=4, KV=1), "Q8_0", dict(tied=True, tok="bpe", pre="smollm")),
    "qwen2_q8_0": ("qwen2", BASE, "Q8_0", dict(tied=True, tok="bpe", pre="qwen2", bias=True)),
    "qwen3_q8_0": ("qwen3", dict(BASE, D=32, dh=16), "Q8_0", dict(tied=True, tok="bpe", pre="qwen2", qk_norm=True)),
    "gemma_q8_0": ("gemma", dict(BASE, H=2, KV=1, dh=32), "Q8_0", dict(tied=True, tok="spm")),
    "gemma2_q8_0": ("gemma2", dict(BASE, L=3), "Q8_0", dict(tied=True, tok="spm", window=4)),
    "gemma3_q8_0": ("gemma3", dict(BASE, L=7), "Q8_0", dict(tied=True, tok="spm", window=4, qk_norm=True)),
    "phi3_q8_0": ("phi3", BASE, "Q8_0", dict(tied=False, tok="spm", window=4)),  # a window llama.cpp ignores for phi3
    "gpt2_f32": ("gpt2", dict(BASE, KV=4, F=256), "F32", dict(tied=False, tok="bpe", pre="gpt-2")),
    "gpt2_q8_0": ("gpt2", dict(BASE, KV=4, F=256), "Q8_0", dict(tied=True, tok="bpe", pre="gpt-2")),
}
# The cross product: every architecture in every type. Each architecture's options as its Q8_0
# variant's above; its sizes as above for the 32-element blocks and the 16-bit types, and with
# every row a multiple of 256 for the K-quants and IQ4_XS (phi3's fused [q|k|v] then splits at
# rows 256 and 384 of a 512-row matrix, gpt2's at 256 and 512). The output alternates between
# tied (the token table read twice) and separate along TYPES, but for gemma and gemma2, always
# tied (llama.cpp loads no output.weight for them and refuses a file that has one).
TYPES = ["F32", "F16", "BF16", "Q8_0", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "IQ4_NL", "Q2_K", "Q3_K", "Q4_K", "Q5_K", "Q6_K", "IQ4_XS"]
K256 = dict(BASE, D=256, dh=64, F=256)
ARCH_SIZES = {"qwen2": (BASE, K256), "qwen3": (dict(BASE, D=32, dh=16), K256),
              "gemma": (dict(BASE, H=2, KV=1, dh=32), dict(K256, H=2, KV=1, dh=128)), "gemma2": (dict(BASE, L=3), dict(K256, L=3)),
              "gemma3": (dict(BASE, L=7), dict(K256, L=7)), "phi3": (BASE, K256), "gpt2": (dict(BASE, KV=4, F=256), dict(K256, KV=4))}
for _arch, (_small, _k) in ARCH_SIZES.items():
    for _i, _t in enumerate(TYPES):
        _o = dict(VARIANTS[_arch + "_q8_0"][3], tied=_arch in ("gemma", "gemma2") or _i % 2 == (0 if _arch in ("phi3", "gpt2") else 1))
        VARIANTS.setdefault(f"{_arch}_{_t.lower()}", (_arch, _k if GGML[_t][1] == 256 else _small, _t, _o))


def llama3_rope_factors(theta, dh, s3):
    """convert_hf_to_gguf.py's rope_freqs for rope_type llama3: one factor per frequency (dh/2)."""
    freqs = 1.0 / theta ** (np.arange(0, dh, 2, dtype=np.float64) / dh)
    old, lo, hi, fac = s3["original_max_position_embeddings"], s3["low_freq_factor"], s3["high_freq_factor"], s3["factor"]
    factors = []
    for wavelen in 2 * np.pi / freqs:
        if wavelen < old / hi:
            factors.append(1.0)
        elif wavelen > old / lo:
            factors.append(fac)
        else:
            smooth = (old / wavelen - lo) / (hi - lo)
            factors.append(1 / ((1 - smooth) / fac + smooth))
    return np.array(factors, dtype=np.float32)


def permute(w, heads):
    """llama.cpp's convert_hf_to_gguf.py permute(): rotate-half rows -> adjacent pairs, per head."""
    return w.reshape(heads, 2, w.shape[0] // heads // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def write_variant(out_dir, name, seed=1, reference=True):
    """Writes NAME.gguf into out_dir, and (reference) NAME.ref.npz and NAME.cfg.json; returns the path."""
    arch, S, wtype, o = VARIANTS[name]
    rng = np.random.default_rng(seed)
    D, H, KV, dh, L, F = S["D"], S["H"], S["KV"], S["dh"], S["L"], S["F"]
    gpt2, gemma = arch == "gpt2", arch.startswith("gemma")
    if o["tok"] == "spm":
        tokens, scores, types = spm_vocab(("<|endoftext|>", "<|end|>") if arch == "phi3" else ())
        merges = None
    else:
        tokens, types, merges = bpe_vocab()
        scores = None
    V = len(tokens)
    kv = [("general.architecture", STRING, arch), ("general.name", STRING, "tiny-" + name), ("general.alignment", U32, 32),
          (f"{arch}.context_length", U32, 64), (f"{arch}.embedding_length", U32, D), (f"{arch}.block_count", U32, L),
          (f"{arch}.feed_forward_length", U32, F), (f"{arch}.attention.head_count", U32, H)]
    if not gpt2:
        kv += [(f"{arch}.attention.head_count_kv", U32, KV), (f"{arch}.attention.key_length", U32, dh), (f"{arch}.attention.value_length", U32, dh),
               (f"{arch}.attention.layer_norm_rms_epsilon", F32, 1e-6), (f"{arch}.rope.freq_base", F32, o.get("theta", 10000.0 if not arch.startswith("qwen") else 1e6)),
               (f"{arch}.rope.dimension_count", U32, dh)]
    else:
        kv += [(f"{arch}.attention.layer_norm_epsilon", F32, 1e-5)]
    if o.get("window"):
        kv += [(f"{arch}.attention.sliding_window", U32, o["window"])]
    if arch == "gemma2":
        kv += [(f"{arch}.attn_logit_softcapping", F32, 3.0), (f"{arch}.final_logit_softcapping", F32, 30.0)]
    kv += [("tokenizer.ggml.model", STRING, "llama" if o["tok"] == "spm" else "gpt2"), ("tokenizer.ggml.tokens", ARRAY, (STRING, tokens)),
           ("tokenizer.ggml.token_type", ARRAY, (I32, types))]
    if scores is not None:
        kv += [("tokenizer.ggml.scores", ARRAY, (F32, scores)), ("tokenizer.ggml.bos_token_id", U32, 1), ("tokenizer.ggml.eos_token_id", U32, 2),
               ("tokenizer.ggml.unknown_token_id", U32, 0), ("tokenizer.ggml.add_bos_token", BOOL, 1), ("tokenizer.ggml.add_eos_token", BOOL, 0)]
    else:
        kv += [("tokenizer.ggml.pre", STRING, o["pre"]), ("tokenizer.ggml.merges", ARRAY, (STRING, merges)),
               ("tokenizer.ggml.bos_token_id", U32, V - 2), ("tokenizer.ggml.eos_token_id", U32, V - 2),
               ("tokenizer.ggml.add_bos_token", BOOL, 1 if o["pre"] == "llama-bpe" else 0)]

    tensors, ref = [], {}
    hp = "transformer." if gpt2 else "model."

    def put(gname, hfname, w, qtype, gguf_rows=None, ref_value=None):
        """w: the HF-layout float64 (rows, cols) or (n,); gguf_rows: the rows as the file orders them."""
        g = w if gguf_rows is None else gguf_rows
        if g.ndim == 1:
            data, vals = quantize(g[None, :], "F32", rng)
            vals = vals[0]
            ne = [g.shape[0]]
        else:
            data, vals = quantize(g, qtype, rng)
            ne = [g.shape[1], g.shape[0]]
        tensors.append((gname, ne, qtype if g.ndim == 2 else "F32", data))
        if hfname:
            ref[hfname] = ref_value(vals) if ref_value else vals

    def mat(rows, cols, scale=None):
        return rng.normal(0, scale or 1 / np.sqrt(cols), (rows, cols))

    # Gemma multiplies the table by sqrt(D) on the way in and reads it tied on the way out: at
    # N(0, 1) a token's own logit is about D, at D = 256 far past gemma2's soft-cap of 30 (every
    # top-10 token then ties at 30 and the logits check holds nothing). gemma2's: N(0, 1/D).
    emb = rng.normal(0, 1 / np.sqrt(D) if arch == "gemma2" else 1, (V, D))
    put("token_embd.weight", (hp + "wte.weight") if gpt2 else hp + "embed_tokens.weight", emb, wtype)
    if gpt2:
        put("position_embd.weight", hp + "wpe.weight", rng.normal(0, 0.3, (64, D)), wtype)
    norm_ref = (lambda v: v - 1.0) if gemma else None  # the reference adds Gemma's 1 itself
    nw = lambda n: 1.0 + 0.1 * rng.normal(size=n)
    for l in range(L):
        g, p = f"blk.{l}.", (hp + f"h.{l}.") if gpt2 else hp + f"layers.{l}."
        if gpt2:
            for part, hf in (("attn_norm", "ln_1"), ("ffn_norm", "ln_2")):
                put(g + part + ".weight", p + hf + ".weight", nw(D), "F32")
                put(g + part + ".bias", p + hf + ".bias", 0.1 * rng.normal(size=D), "F32")
            q, k, v = mat(D, D), mat(D, D), mat(D, D)
            qkv = np.concatenate([q, k, v])
            data, vals = quantize(qkv, wtype, rng)
            tensors.append((g + "attn_qkv.weight", [D, 3 * D], wtype, data))
            for i, nm in enumerate(("q_proj", "k_proj", "v_proj")):
                ref[p + f"attn.attention.{nm}.weight"] = vals[i * D:(i + 1) * D]
            b = 0.1 * rng.normal(size=3 * D)
            put(g + "attn_qkv.bias", None, b, "F32")
            for i, nm in enumerate(("q_proj", "k_proj", "v_proj")):
                ref[p + f"attn.attention.{nm}.bias"] = b.astype(np.float32).astype(np.float64)[i * D:(i + 1) * D]
            put(g + "attn_output.weight", p + "attn.attention.out_proj.weight", mat(D, D), wtype)
            put(g + "attn_output.bias", p + "attn.attention.out_proj.bias", 0.1 * rng.normal(size=D), "F32")
            put(g + "ffn_up.weight", p + "mlp.c_fc.weight", mat(F, D), wtype)
            put(g + "ffn_up.bias", p + "mlp.c_fc.bias", 0.1 * rng.normal(size=F), "F32")
            put(g + "ffn_down.weight", p + "mlp.c_proj.weight", mat(D, F), wtype)
            put(g + "ffn_down.bias", p + "mlp.c_proj.bias", 0.1 * rng.normal(size=D), "F32")
            continue
        put(g + "attn_norm.weight", p + "input_layernorm.weight", nw(D), "F32", ref_value=norm_ref)
        if arch == "phi3":  # fused [q | k | v] and [gate | up]
            q, k, v = mat(H * dh, D), mat(KV * dh, D), mat(KV * dh, D)
            data, vals = quantize(np.concatenate([q, k, v]), wtype, rng)
            tensors.append((g + "attn_qkv.weight", [D, (H + 2 * KV) * dh], wtype, data))
            ref[p + "self_attn.q_proj.weight"], ref[p + "self_attn.k_proj.weight"], ref[p + "self_attn.v_proj.weight"] = \
                vals[:H * dh], vals[H * dh:(H + KV) * dh], vals[(H + KV) * dh:]
            put(g + "attn_output.weight", p + "self_attn.o_proj.weight", mat(D, H * dh), wtype)
            put(g + "ffn_norm.weight", p + "post_attention_layernorm.weight", nw(D), "F32")
            data, vals = quantize(np.concatenate([mat(F, D), mat(F, D)]), wtype, rng)
            tensors.append((g + "ffn_up.weight", [D, 2 * F], wtype, data))
            ref[p + "mlp.gate_proj.weight"], ref[p + "mlp.up_proj.weight"] = vals[:F], vals[F:]
            put(g + "ffn_down.weight", p + "mlp.down_proj.weight", mat(D, F), wtype)
            continue
        for part, heads in (("q", H), ("k", KV), ("v", KV)):
            w = mat(heads * dh, D)
            hfn = p + f"self_attn.{part}_proj.weight"
            if arch == "llama" and part != "v":
                # the file holds the permuted rows; the reference un-permutes what they dequantize to
                data, vals = quantize(permute(w, heads), wtype, rng)
                tensors.append((g + f"attn_{part}.weight", [D, heads * dh], wtype, data))
                inv = np.argsort(permute(np.arange(heads * dh)[:, None], heads)[:, 0])
                ref[hfn] = vals[inv]
            else:
                put(g + f"attn_{part}.weight", hfn, w, wtype)
            if o.get("bias"):
                put(g + f"attn_{part}.bias", p + f"self_attn.{part}_proj.bias", 0.2 * rng.normal(size=heads * dh), "F32")
        put(g + "attn_output.weight", p + "self_attn.o_proj.weight", mat(D, H * dh), wtype)
        if o.get("qk_norm"):
            put(g + "attn_q_norm.weight", p + "self_attn.q_norm.weight", nw(dh), "F32", ref_value=norm_ref)
            put(g + "attn_k_norm.weight", p + "self_attn.k_norm.weight", nw(dh), "F32", ref_value=norm_ref)
        if arch in ("gemma2", "gemma3"):
            put(g + "post_attention_norm.weight", p + "post_attention_layernorm.weight", nw(D), "F32", ref_value=norm_ref)
            put(g + "ffn_norm.weight", p + "pre_feedforward_layernorm.weight", nw(D), "F32", ref_value=norm_ref)
            put(g + "post_ffw_norm.weight", p + "post_feedforward_layernorm.weight", nw(D), "F32", ref_value=norm_ref)
        else:
            put(g + "ffn_norm.weight", p + "post_attention_layernorm.weight", nw(D), "F32", ref_value=norm_ref)
        put(g + "ffn_gate.weight", p + "mlp.gate_proj.weight", mat(F, D), wtype)
        put(g + "ffn_up.weight", p + "mlp.up_proj.weight", mat(F, D), wtype)
        put(g + "ffn_down.weight", p + "mlp.down_proj.weight", mat(D, F), wtype)
    if gpt2:
        put("output_norm.weight", hp + "ln_f.weight", nw(D), "F32")
        put("output_norm.bias", hp + "ln_f.bias", 0.1 * rng.normal(size=D), "F32")
    else:
        put("output_norm.weight", hp + "norm.weight", nw(D), "F32", ref_value=norm_ref)
    if o.get("llama3"):
        # convert_hf_to_gguf.py's rope_freqs: one factor per frequency, from the llama3 rule
        factors = llama3_rope_factors(o["theta"], dh, o["llama3"])
        tensors.append(("rope_freqs.weight", [dh // 2], "F32", factors.tobytes()))
    if not o["tied"]:
        put("output.weight", "lm_head.weight", rng.normal(0, 1 / np.sqrt(D), (V, D)), wtype)

    os.makedirs(out_dir, exist_ok=True)
    path = os.path.join(out_dir, name + ".gguf")
    write_gguf(path, kv, tensors)
    model_type = {"gemma3": "gemma3_text", "gpt2": "gpt_neo", "phi3": "llama"}.get(arch, arch)
    cfg = dict(model_type=model_type, hidden_size=D, vocab_size=V, num_attention_heads=H, num_key_value_heads=KV, head_dim=dh,
               num_hidden_layers=L, rms_norm_eps=1e-6, rope_theta=o.get("theta", 10000.0 if not arch.startswith("qwen") else 1e6))
    if o.get("llama3"):
        cfg["rope_scaling"] = dict(o["llama3"], rope_type="llama3")  # the reference applies Hugging Face's llama3 rule itself
    if gpt2:  # the reference's GPT-Neo path is GPT-2's block but for its score scale, set here
        cfg.update(num_heads=H, num_layers=L, layer_norm_epsilon=1e-5, attention_types=[[["global"], L]], window_size=0, gpt2_scale=True)
    if arch in ("gemma2", "gemma3"):
        cfg.update(query_pre_attn_scalar=dh, sliding_window=o["window"], sliding_window_pattern=6 if arch == "gemma3" else 2,
                   rope_local_base_freq=10000.0)
    if arch == "gemma2":
        cfg.update(attn_logit_softcapping=3.0, final_logit_softcapping=30.0)
    with open(os.path.join(out_dir, name + ".cfg.json"), "w") as f:
        json.dump(cfg, f)
    if reference:
        np.savez(os.path.join(out_dir, name + ".ref.npz"), **ref)
    return path


if __name__ == "__main__":
    reference_common.variants_main(__doc__, VARIANTS, lambda d, v: write_variant(os.path.dirname(d) or ".", os.path.basename(d)), "llama_q8_0")
