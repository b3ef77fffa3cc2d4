#!/usr/bin/env python3
"""Independent numpy reference for headmap's multi-head attention.

Reads a directory written by `headmap-cli --npy DIR` (attn_in, W_Q..W_O, b_Q..b_O per
layer, and meta.json with the config and sentence lengths), recomputes every layer's
attention the textbook way, and either writes the result (--write) or compares it with
headmap's own attention.npy and attn_out.npy (--check, the default).

Nothing here imports headmap: the maths is written from the chapters' definition:
    Q = x W_Q + b_Q, view (B,T,H,d_head), transpose to (B,H,T,d_head)
    scores = Q K^T / sqrt(d_head), mask, softmax, weights V, transpose back, concat, W_O.
Grouped-query attention (config num_kv_heads < num_heads): W_K and W_V are
(D, kv_heads*d_head), K and V split into kv_heads heads, each repeated for the
H/kv_heads query heads of its group (np.repeat along the head axis).
Pitfalls follow the course's descriptions (scale by sqrt(D), view(B,T,d_head,H),
reversed mask polarity, no W_O, head-averaged weights, and the forgotten
.transpose(1, 2): the (B,T,H,d_head) view's memory read as (B,H,T,d_head)).

Usage: mha_reference.py DIR [--write OUT_DIR] [--tol 1e-5]
"""
import argparse
import json
import os
import sys

import numpy as np


def load(d, name):
    return np.load(os.path.join(d, name)).astype(np.float64)


def attention_layer(x, wq, bq, wk, bk, wv, bv, wo, bo, lengths, cfg):
    """x: (B,T,D). Returns weights (B,H,T,T) [or (B,1,T,T) head-averaged] and out (B,T,D)."""
    B, T, D = x.shape
    H = cfg["num_heads"]
    kv = cfg.get("num_kv_heads", H)
    dh = D // H
    pit = cfg.get("pitfalls", {})
    assert wk.shape == (D, kv * dh) and wv.shape == (D, kv * dh), f"W_K is {wk.shape}, expected {(D, kv * dh)}"

    def split(t, P):  # (B,T,P*dh) -> (B,P,T,dh)
        if pit.get("interleaved"):
            return t.reshape(B, T, dh, P).transpose(0, 3, 1, 2)
        if pit.get("no-transpose"):  # view(B,T,P,dh), then the same memory as (B,P,T,dh)
            return np.ascontiguousarray(t.reshape(B, T, P, dh)).reshape(B, P, T, dh)
        return t.reshape(B, T, P, dh).transpose(0, 2, 1, 3)

    q, k, v = split(x @ wq + bq, H), split(x @ wk + bk, kv), split(x @ wv + bv, kv)
    k, v = np.repeat(k, H // kv, axis=1), np.repeat(v, H // kv, axis=1)  # (B,H,T,dh): head h reads K/V head h // (H/kv)
    scale = np.sqrt(D if pit.get("scale-d-model") else dh)
    scores = q @ k.transpose(0, 1, 3, 2) / scale  # (B,H,T,T)

    t_idx = np.arange(T)[:, None]
    s_idx = np.arange(T)[None, :]
    visible = np.zeros((B, 1, T, T), dtype=bool)
    for b in range(B):
        n = lengths[b]
        ok = (t_idx < n) & (s_idx < n)
        if cfg["causal"]:
            ok &= (s_idx > t_idx) if pit.get("reversed-mask") else (s_idx <= t_idx)
        visible[b, 0] = ok
    masked = np.where(visible, scores, -np.inf)
    row_max = masked.max(axis=-1, keepdims=True)
    row_max = np.where(np.isfinite(row_max), row_max, 0.0)
    e = np.where(visible, np.exp(masked - row_max), 0.0)
    denom = e.sum(axis=-1, keepdims=True)
    weights = np.divide(e, denom, out=np.zeros_like(e), where=denom > 0)  # hidden rows: 0, not NaN

    ctx = weights @ v  # (B,H,T,dh)
    concat = ctx.transpose(0, 2, 1, 3).reshape(B, T, D)
    out = concat if pit.get("no-wo") else concat @ wo + bo
    if pit.get("head-averaged"):
        weights = weights.mean(axis=1, keepdims=True)
    return weights, out


def recompute(d):
    meta = json.load(open(os.path.join(d, "meta.json")))
    cfg = meta["config"]
    lengths = meta["lengths"]
    L = cfg["num_layers"]
    weights, outs = [], []
    for l in range(L):
        p = f"layer{l}."
        args = [load(d, p + n + ".npy") for n in ("attn_in", "w_q", "b_q", "w_k", "b_k", "w_v", "b_v", "w_o", "b_o")]
        w, o = attention_layer(*args, lengths, cfg)
        weights.append(w)
        outs.append(o)
    return np.stack(weights), outs


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("dir")
    ap.add_argument("--write", help="write expected_attention.npy and layer{l}.expected_attn_out.npy here")
    ap.add_argument("--tol", type=float, default=1e-5)
    ap.add_argument("--randomize-biases", type=int, metavar="SEED",
                    help="overwrite b_q..b_o in DIR with N(0, 0.5) values first (random init has zero biases)")
    a = ap.parse_args()
    if a.randomize_biases is not None:
        rng = np.random.default_rng(a.randomize_biases)
        meta = json.load(open(os.path.join(a.dir, "meta.json")))
        for l in range(meta["config"]["num_layers"]):
            for n in ("b_q", "b_k", "b_v", "b_o"):
                path = os.path.join(a.dir, f"layer{l}.{n}.npy")
                b = np.load(path)
                np.save(path, (0.5 * rng.standard_normal(b.shape)).astype(np.float32))
    att, outs = recompute(a.dir)
    if a.write:
        os.makedirs(a.write, exist_ok=True)
        np.save(os.path.join(a.write, "expected_attention.npy"), att.astype(np.float32))
        for l, o in enumerate(outs):
            np.save(os.path.join(a.write, f"layer{l}.expected_attn_out.npy"), o.astype(np.float32))
        print(f"wrote reference for {a.dir}: attention {att.shape}")
        return 0
    got = np.load(os.path.join(a.dir, "attention.npy")).astype(np.float64)
    if got.shape != att.shape:
        print(f"FAIL: attention.npy has shape {got.shape}, reference {att.shape}")
        return 1
    worst = float(np.abs(got - att).max())
    for l, o in enumerate(outs):
        mine = np.load(os.path.join(a.dir, f"layer{l}.attn_out.npy")).astype(np.float64)
        worst = max(worst, float(np.abs(mine - o).max()))
    ok = worst <= a.tol and np.isfinite(got).all()
    print(f"{'OK' if ok else 'FAIL'}: max abs difference {worst:.3g} (tolerance {a.tol:g}), attention {att.shape}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
