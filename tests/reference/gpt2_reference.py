#!/usr/bin/env python3
"""gpt2_reference.py: GPT-2's forward pass in numpy, float64, written from the architecture
(Radford et al. 2019; Hugging Face's GPT2LMHeadModel layout), not from headmap's code, and a
test that holds headmap-cli --model to it.

    gpt2_reference.py HEADMAP_CLI WORK_DIR

For every variant of tests/reference/make_gpt2_dir.py (prefix or not, tied or untied
lm_head, mask buffers, F32/F16/BF16, shards, tokenizer.json, another LayerNorm epsilon) it
writes a tiny random GPT-2 directory, runs headmap-cli --model DIR --npy --json on two
sentences, reads the ids headmap used (meta.json token_ids), recomputes every layer's
attention (L, B, H, T, T), every layer's attention input and output, and the mean next-token
loss here, and compares. Tolerance 1e-4: headmap computes in float32 (about 1e-7 relative
per operation, a few hundred operations deep), the reference in float64.
Exit 0 all agree, 1 a difference, 77 numpy missing (ctest's skip code).
"""
import json
import os
import struct
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import reference_common  # noqa: E402  (numpy_or_skip, cli_and_work, worst_layer_io)

np = reference_common.numpy_or_skip()
import make_gpt2_dir  # noqa: E402

TOL = 1e-4
TEXTS = ["The cat sat on the mat because it was tired.", "it was the cat"]


# ---- reading a Hugging Face directory ----------------------------------------------------
def read_safetensors(path):
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    body = data[8 + n:]
    out = {}
    for name, t in header.items():
        if name == "__metadata__":
            continue
        b, e = t["data_offsets"]
        raw = body[b:e]
        if t["dtype"] == "F32":
            a = np.frombuffer(raw, "<f4")
        elif t["dtype"] == "F16":
            a = np.frombuffer(raw, "<f2")
        elif t["dtype"] == "BF16":  # the upper 16 bits of a float32
            a = (np.frombuffer(raw, "<u2").astype(np.uint32) << 16).view(np.float32)
        else:
            raise ValueError(f"{name}: dtype {t['dtype']}")
        out[name] = a.astype(np.float64).reshape(t["shape"])
    return out


def read_model(d):
    cfg = json.load(open(os.path.join(d, "config.json")))
    index = os.path.join(d, "model.safetensors.index.json")
    tensors = {}
    if os.path.exists(index):
        for shard in sorted(set(json.load(open(index))["weight_map"].values())):
            tensors.update(read_safetensors(os.path.join(d, shard)))
    else:
        tensors = read_safetensors(os.path.join(d, "model.safetensors"))
    # Strip "transformer." so both spellings read alike.
    return cfg, {k[len("transformer."):] if k.startswith("transformer.") else k: v for k, v in tensors.items()}


# ---- GPT-2's forward ----------------------------------------------------------------------
def layer_norm(x, g, b, eps):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)  # biased variance, as torch.nn.LayerNorm
    return (x - mu) / np.sqrt(var + eps) * g + b


def gelu_new(x):
    return 0.5 * x * (1.0 + np.tanh(np.sqrt(2.0 / np.pi) * (x + 0.044715 * x ** 3)))


def gpt2_forward(cfg, W, ids):
    """ids: one sentence. Returns per layer (attention (H,T,T), attn_in (T,D), attn_out (T,D)) and the loss."""
    D, H, L = cfg["n_embd"], cfg["n_head"], cfg["n_layer"]
    eps = cfg.get("layer_norm_epsilon", 1e-5)
    dh = D // H
    T = len(ids)
    x = W["wte.weight"][ids] + W["wpe.weight"][:T]  # (T, D)
    causal = np.tril(np.ones((T, T), bool))
    layers = []
    for l in range(L):
        p = f"h.{l}."
        a = layer_norm(x, W[p + "ln_1.weight"], W[p + "ln_1.bias"], eps)
        qkv = a @ W[p + "attn.c_attn.weight"] + W[p + "attn.c_attn.bias"]  # Conv1D: x @ W (D, 3D) + b
        q, k, v = np.split(qkv, 3, axis=-1)
        heads = lambda t: t.reshape(T, H, dh).transpose(1, 0, 2)  # (H, T, dh)
        q, k, v = heads(q), heads(k), heads(v)
        s = q @ k.transpose(0, 2, 1) / np.sqrt(dh)
        s = np.where(causal, s, -np.inf)
        att = np.exp(s - s.max(-1, keepdims=True))
        att /= att.sum(-1, keepdims=True)
        y = (att @ v).transpose(1, 0, 2).reshape(T, D)
        y = y @ W[p + "attn.c_proj.weight"] + W[p + "attn.c_proj.bias"]
        layers.append((att, a, y))
        x = x + y
        m = layer_norm(x, W[p + "ln_2.weight"], W[p + "ln_2.bias"], eps)
        x = x + gelu_new(m @ W[p + "mlp.c_fc.weight"] + W[p + "mlp.c_fc.bias"]) @ W[p + "mlp.c_proj.weight"] + W[p + "mlp.c_proj.bias"]
    xf = layer_norm(x, W["ln_f.weight"], W["ln_f.bias"], eps)
    unembed = W.get("lm_head.weight", W["wte.weight"])
    logits = xf @ unembed.T  # (T, V)
    lse = logits.max(-1) + np.log(np.exp(logits - logits.max(-1, keepdims=True)).sum(-1))
    nll = lse[:-1] - logits[np.arange(T - 1), ids[1:]]
    return layers, nll.sum(), T - 1


# ---- the test ------------------------------------------------------------------------------
def check_variant(cli, work, variant):
    d = os.path.join(work, variant)
    make_gpt2_dir.write_dir(d, variant)
    out = os.path.join(work, variant + "-out")
    run_json = os.path.join(work, variant + ".json")
    cmd = [cli, "--model", d, "--npy", out, "--json", run_json]
    for t in TEXTS:
        cmd += ["--text", t]
    subprocess.run(cmd, check=True)
    meta = json.load(open(os.path.join(out, "meta.json")))
    run = json.load(open(run_json))
    cfg, W = read_model(d)
    att = np.load(os.path.join(out, "attention.npy"))  # (L, B, H, T, T)
    L, B, H, T, _ = att.shape
    assert (L, H) == (cfg["n_layer"], cfg["n_head"]), (att.shape, cfg)
    worst = {"attention": 0.0, "attn_in": 0.0, "attn_out": 0.0}
    total, count = 0.0, 0
    for b, ids in enumerate(meta["token_ids"]):
        n = meta["lengths"][b]
        assert len(ids) == n, (ids, n)
        layers, nll, k = gpt2_forward(cfg, W, np.array(ids))
        total, count = total + nll, count + k
        for l, (a_ref, in_ref, out_ref) in enumerate(layers):
            worst["attention"] = max(worst["attention"], np.abs(att[l, b, :, :n, :n] - a_ref).max())
            a_in = np.load(os.path.join(out, f"layer{l}.attn_in.npy"))[b, :n]
            a_out = np.load(os.path.join(out, f"layer{l}.attn_out.npy"))[b, :n]
            worst["attn_in"] = max(worst["attn_in"], np.abs(a_in - in_ref).max())
            worst["attn_out"] = max(worst["attn_out"], np.abs(a_out - out_ref).max())
    loss_ref = total / count
    loss = run["loss_on_text"]
    ok = all(v <= TOL for v in worst.values()) and loss is not None and abs(loss - loss_ref) <= TOL
    print(f"{variant:9s} L={L} B={B} H={H} T={T}  max |diff|: attention {worst['attention']:.2e}, attn_in {worst['attn_in']:.2e}, "
          f"attn_out {worst['attn_out']:.2e}; loss {loss} vs {loss_ref:.6f}  {'ok' if ok else 'DIFFERENT'}")
    return ok


def main():
    args = reference_common.cli_and_work(__doc__, exact=True)
    if args is None:
        return 2
    cli, work = args
    results = [check_variant(cli, work, v) for v in make_gpt2_dir.VARIANTS]
    print(f"{sum(results)} of {len(results)} variants agree with the float64 reference to {TOL}")
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
