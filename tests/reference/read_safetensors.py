#!/usr/bin/env python3
"""Reads a headmap checkpoint with numpy alone and checks it, independently of headmap.

The safetensors layout (8-byte little-endian header length, JSON header, raw tensors) is
parsed with json + np.frombuffer, checking the rules the safetensors library enforces (a
JSON object header, string-to-string metadata, dtype and byte sizes that match the shapes,
tensors that tile the data with no gap, overlap or trailing bytes), the model's forward pass is written here from the
convention in the metadata, and its mean next-token loss on the file's own check_tokens
must equal the check_loss that headmap's forward() computed when it wrote the file.

B = batch, T = tokens, D = d_model, H = heads, d_head = D/H, L = layers, V = vocab

Usage: read_safetensors.py FILE [FILE ...] [--induction N]
  --induction N   also print the loss on the two halves of N random tokens repeated twice
Exit status: 0 all files good, 1 a check failed, 77 numpy is missing (a skipped test).
"""
import argparse
import json
import struct
import sys

try:
    import numpy as np
except ImportError:
    print("numpy is not installed (apt-get install python3-numpy): skipping the safetensors check.")
    sys.exit(77)


def read(path):
    """-> (tensors {name: float32 array}, metadata {str: str}); raises ValueError."""
    with open(path, "rb") as f:
        data = f.read()
    if len(data) < 8:
        raise ValueError("shorter than the 8-byte header length")
    (n,) = struct.unpack("<Q", data[:8])
    if n > len(data) - 8:
        raise ValueError(f"header length {n} exceeds the file")
    if data[8:9] != b"{":
        raise ValueError("the JSON header must start with '{'")
    header = json.loads(data[8:8 + n].decode("utf-8"))
    meta = header.pop("__metadata__", {})
    if not all(isinstance(k, str) and isinstance(v, str) for k, v in meta.items()):
        raise ValueError("__metadata__ must map strings to strings")
    buf = memoryview(data)[8 + n:]
    tensors, spans = {}, []
    for name, t in header.items():
        dtypes = {"F32": "<f4", "F16": "<f2"}  # numpy's float16 is IEEE binary16, as safetensors' F16
        if t["dtype"] not in dtypes:
            raise ValueError(f"{name}: dtype {t['dtype']}")
        b, e = t["data_offsets"]
        shape = tuple(t["shape"])
        size = np.dtype(dtypes[t["dtype"]]).itemsize
        if e - b != size * int(np.prod(shape, dtype=np.int64)):
            raise ValueError(f"{name}: {e - b} bytes for shape {shape}")
        tensors[name] = np.frombuffer(buf[b:e], dtype=dtypes[t["dtype"]]).reshape(shape).astype(np.float32)
        spans.append((b, e))
    spans.sort()
    pos = 0
    for b, e in spans:
        if b != pos:
            raise ValueError("tensors overlap or leave a gap")
        pos = e
    if pos != len(buf):
        raise ValueError("bytes after the last tensor")
    return tensors, meta


def layer_norm(x, g, b):
    m = x.mean(-1, keepdims=True)
    v = ((x - m) ** 2).mean(-1, keepdims=True)
    return (x - m) / np.sqrt(v + 1e-5) * g + b


def gelu(x):
    return 0.5 * x * (1.0 + np.tanh(np.sqrt(2.0 / np.pi) * (x + 0.044715 * x ** 3)))


def forward_logits(w, meta, ids):
    """ids: (T) -> logits (T, V), in float64 for a clean reference."""
    D, H, L = int(meta["d_model"]), int(meta["num_heads"]), int(meta["num_layers"])
    dh, T = D // H, len(ids)
    f = {k: v.astype(np.float64) for k, v in w.items()}
    x = f["tok_emb"][ids] + f["pos_emb"][:T]                       # (T, D)
    mask = np.triu(np.ones((T, T), dtype=bool), 1)
    for l in range(L):
        p = lambda n: f[f"layers.{l}.{n}"]
        a = layer_norm(x, p("ln1_g"), p("ln1_b"))
        q = (a @ p("w_q") + p("b_q")).reshape(T, H, dh).transpose(1, 0, 2)  # (H, T, d_head)
        k = (a @ p("w_k") + p("b_k")).reshape(T, H, dh).transpose(1, 0, 2)
        v = (a @ p("w_v") + p("b_v")).reshape(T, H, dh).transpose(1, 0, 2)
        s = q @ k.transpose(0, 2, 1) / np.sqrt(dh)                  # (H, T, T)
        s[:, mask] = -np.inf
        s = np.exp(s - s.max(-1, keepdims=True))
        att = s / s.sum(-1, keepdims=True)
        ctx = (att @ v).transpose(1, 0, 2).reshape(T, D)            # (T, D)
        x = x + ctx @ p("w_o") + p("b_o")
        x = x + gelu(layer_norm(x, p("ln2_g"), p("ln2_b")) @ p("w_fc") + p("b_fc")) @ p("w_proj") + p("b_proj")
    return layer_norm(x, f["lnf_g"], f["lnf_b"]) @ f["tok_emb"].T    # (T, V), tied


def token_losses(w, meta, ids):
    z = forward_logits(w, meta, ids)[:-1]
    m = z.max(-1, keepdims=True)
    lse = (m + np.log(np.exp(z - m).sum(-1, keepdims=True)))[:, 0]
    return lse - z[np.arange(len(ids) - 1), ids[1:]]                # (T-1)


def check(path, induction):
    w, meta = read(path)
    D, L, P = int(meta["d_model"]), int(meta["num_layers"]), int(meta["context"])
    vocab = json.loads(meta["vocab"])
    V = len(vocab)
    assert w["tok_emb"].shape == (V, D), f"tok_emb {w['tok_emb'].shape} vs vocab {V}, D {D}"
    assert w["pos_emb"].shape == (P, D)
    for l in range(L):
        assert w[f"layers.{l}.w_fc"].shape == (D, 4 * D)
    ids = np.array(json.loads(meta["check_tokens"]))
    loss = float(token_losses(w, meta, ids).mean())
    want = float(meta["check_loss"])
    ok = abs(loss - want) <= 1e-4 * max(1.0, abs(want))  # float32 (headmap) vs float64 (here)
    print(f"{path}: {len(w)} tensors, D={D} H={meta['num_heads']} L={L} V={V} context={P}, "
          f"steps {meta.get('steps')}, val loss {meta.get('val_loss')}; check loss numpy {loss:.6f} vs file {want:.6f}: "
          f"{'ok' if ok else 'MISMATCH'}")
    if induction:
        rng = np.random.default_rng(0)
        words = [i for i, p in enumerate(vocab) if len(p) >= 3 and p.isalpha() and p.islower()]
        seq = rng.choice(words, induction, replace=False)
        ids = np.concatenate([seq, seq])
        tl = token_losses(w, meta, ids)
        print(f"  induction: mean loss on the first copy {tl[:induction - 1].mean():.3f}, "
              f"on the second copy {tl[induction:].mean():.3f} (nats)")
    return ok


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("files", nargs="+")
    ap.add_argument("--induction", type=int, default=0)
    a = ap.parse_args()
    ok = True
    for path in a.files:
        try:
            ok &= check(path, a.induction)
        except (OSError, ValueError, KeyError, AssertionError) as e:
            print(f"{path}: FAILED: {e}")
            ok = False
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
