#!/usr/bin/env python3
"""Independent float64 numpy reference for the logit lens (issue 39, point 1).

For each model, runs headmap-cli --logit-lens TARGET --lens-top-k K --json, then recomputes the
lens here from the model's own tensors on a float64 forward that imports nothing of headmap:

  points    the stream after the embeddings, and in every layer l after its attention has
            written (x + attn; Gemma 2/3 after the post-attention norm; a parallel block
            (Pythia) x + attn alone; a post-norm encoder h = LN1(x + attn)) and after its MLP
            (the next layer's input; after the last layer the final stream): 2L + 1 points;
  readout   the final norm computed on that point's own row, the unembedding (tied, or an untied lm_head), Gemma 2's final
            soft-cap; an encoder's masked-LM head (dense, GELU, LayerNorm, decoder, bias);
  compared  at every point and position: the target token (final: the last point's top-1;
            text: the next token, an encoder's own token), its probability (1e-4) and rank,
            and each top-k token's probability (the reference's probability of headmap's
            token, 1e-4) with the ids equal wherever the reference's gap to the next is clear.

It also checks that the grid is not trivial at these sizes: some cell's top-1 differs from
the last point's, and a readout without the final norm differs from the right one by more
than the tolerance, so the test can tell them apart.

Usage: lens_reference.py HEADMAP_CLI WORKDIR SPEC [...]
  SPEC  ckpt=PATH:TARGET:TEXT        a headmap checkpoint (GPT-2 layout, --checkpoint)
        family=VARIANT:TARGET:TEXT   a tiny random model of make_family_dir.py (--model DIR)
        encoder=VARIANT:TARGET:TEXT  make_encoder_dir.py's encoders with a masked-LM head
  TARGET final or text.
Exit status: 0 all agree, 1 a mismatch, 77 numpy is missing (a skipped test).
"""
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import reference_common  # noqa: E402

np = reference_common.numpy_or_skip()

TOL = 1e-4
K = 5
failures = []


def softmax_rows(z):
    z = z - z.max(-1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(-1, keepdims=True)


def layer_norm(x, g, b, eps):
    mu = x.mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(((x - mu) ** 2).mean(-1, keepdims=True) + eps) * g + b


def ckpt_points(path, ids):
    """A headmap checkpoint (GPT-2 block, LayerNorm, tied): the points and a readout."""
    from read_safetensors import read, gelu
    w, meta = read(path)
    f = {k: v.astype(np.float64) for k, v in w.items()}
    H, L, D = int(meta["num_heads"]), int(meta["num_layers"]), int(meta["d_model"])
    dh, T = D // H, len(ids)
    x = f["tok_emb"][ids] + f["pos_emb"][:T]
    pts = [x]
    mask = np.triu(np.ones((T, T), dtype=bool), 1)
    for l in range(L):
        p = lambda n: f[f"layers.{l}.{n}"]
        a = layer_norm(x, p("ln1_g"), p("ln1_b"), 1e-5)
        q, k, v = ((a @ p(n) + p(b)).reshape(T, H, dh).transpose(1, 0, 2) for n, b in (("w_q", "b_q"), ("w_k", "b_k"), ("w_v", "b_v")))
        s = q @ k.transpose(0, 2, 1) / np.sqrt(dh)
        s[:, mask] = -np.inf
        y = (softmax_rows(s) @ v).transpose(1, 0, 2).reshape(T, D) @ p("w_o") + p("b_o")
        x = x + y
        pts.append(x)
        x = x + gelu(layer_norm(x, p("ln2_g"), p("ln2_b"), 1e-5) @ p("w_fc") + p("b_fc")) @ p("w_proj") + p("b_proj")
        pts.append(x)
    norm = lambda s: layer_norm(s, f["lnf_g"], f["lnf_b"], 1e-5)
    return pts, (lambda s: norm(s) @ f["tok_emb"].T), (lambda s: s @ f["tok_emb"].T)


def family_points(d, ids):
    import family_reference as fr
    from gpt2_reference import read_model
    cfg, _ = read_model(d)
    W = {k: v.astype(np.float64) for k, v in fr.read_dir_weights(d).items()}
    c = {}
    fr.forward(cfg, W, np.array(ids), rec=c)
    pts = [c["emb"]]
    for ly in c["layers"]:
        pts.append(ly["x"] + ly["attn_write"])
        pts.append(ly["x"] + ly["attn_write"] + ly["mlp_write"])
    t = cfg["model_type"]
    neo, neox, gemma = t == "gpt_neo", t == "gpt_neox", t.startswith("gemma")
    pre = "gpt_neox." if neox else "transformer." if neo else "model."
    fname = pre + ("ln_f" if neo else "final_layer_norm" if neox else "norm")
    eps = cfg.get("layer_norm_eps", cfg.get("layer_norm_epsilon", cfg.get("rms_norm_eps", 1e-6)))
    if neo or neox:
        norm = lambda s: layer_norm(s, W[fname + ".weight"], W[fname + ".bias"], eps)
    else:
        norm = lambda s: fr.rms_norm(s, W[fname + ".weight"], eps, plus_one=gemma)
    cap = cfg.get("final_logit_softcapping") or 0

    def readout(s):
        z = norm(s) @ c["unembed"].T
        return cap * np.tanh(z / cap) if cap else z
    return pts, readout, (lambda s: s @ c["unembed"].T)


def encoder_points(d, ids, types, cfg):
    import encoder_reference as er
    W = {k: v.astype(np.float64) for k, v in er.read_safetensors(os.path.join(d, "model.safetensors")).items()}
    c = {}
    er.forward(cfg, W, np.array(ids), np.array(types), rec=c)
    pts = [c["emb"]]
    for l, ly in enumerate(c["layers"]):
        pts.append(ly["mid"])
        pts.append(c["layers"][l + 1]["x"] if l + 1 < len(c["layers"]) else c["final"])
    wd, bd, g, b, dec, bias = c["head"]
    eps = c["eps"]
    readout = lambda s: layer_norm(er.gelu(s @ wd + bd), g, b, eps) @ dec.T + bias
    return pts, readout, None


def check(cli, work, spec):
    kind, rest = spec.split("=", 1)
    where, target, text = rest.split(":", 2)
    tag = f"{kind}={os.path.basename(where)}:{target}"
    js = os.path.join(work, tag.replace("=", "-").replace(":", "-") + ".json")
    npy = js[:-5] + ".d"
    if kind == "ckpt":
        src = ["--checkpoint", where]
    elif kind == "family":
        import make_family_dir
        d = os.path.join(work, "family-" + where)
        make_family_dir.write_dir(d, where)
        src = ["--model", d]
    else:
        import make_encoder_dir
        d = os.path.join(work, "encoder-" + where)
        enc_cfg = make_encoder_dir.write_dir(d, where)
        src = ["--model", d]
    cmd = [cli] + src + ["--text", text, "--logit-lens", target, "--lens-top-k", str(K), "--json", js, "--npy", npy]
    print(" ".join(cmd))
    run = subprocess.run(cmd, capture_output=True, text=True)
    if run.returncode != 0:
        failures.append(f"{tag}: headmap-cli refused it: {run.stderr.strip()}")
        return
    doc = json.load(open(js))["contrib"]["logit_lens"]
    meta = json.load(open(os.path.join(npy, "meta.json")))
    ids = meta["token_ids"][0]
    if kind == "ckpt":
        pts, readout, raw = ckpt_points(where, ids)
    elif kind == "family":
        pts, readout, raw = family_points(d, ids)
    else:
        pts, readout, raw = encoder_points(d, ids, meta["type_ids"][0], enc_cfg)
    T, P = len(ids), len(pts)
    probs = [softmax_rows(readout(s)) for s in pts]  # P x (T, V)
    print(f"{tag}: T={T}, {P} points, V={probs[0].shape[1]}")
    if len(doc["points"]) != P or np.array(doc["target_probs"]).shape != (P, T):
        failures.append(f"{tag}: {len(doc['points'])} points x {np.array(doc['target_probs']).shape}, reference {P} x {T}")
        return
    # The targets.
    want_t = []
    for t in range(T):
        if target == "final":
            want_t.append(int(np.argmax(probs[-1][t])))
        elif kind == "encoder":
            want_t.append(ids[t])
        else:
            want_t.append(ids[t + 1] if t + 1 < T else -1)
    got_t = [-1 if e is None else e["id"] for e in doc["targets"]]
    if got_t != want_t:
        failures.append(f"{tag}: targets {got_t}, reference {want_t}")
    # The target's probability and rank at every point.
    err, rank_bad = 0.0, 0
    for p in range(P):
        for t in range(T):
            if want_t[t] < 0:
                if doc["target_probs"][p][t] is not None:
                    failures.append(f"{tag}: a probability at position {t}, which has no target")
                continue
            row = probs[p][t]
            err = max(err, abs(doc["target_probs"][p][t] - row[want_t[t]]))
            ref_rank = int((row > row[want_t[t]] + 1e-9).sum())
            if abs(doc["target_ranks"][p][t] - ref_rank) > int((np.abs(row - row[want_t[t]]) <= 1e-9).sum()):
                rank_bad += 1
    print(f"  target probabilities: max error {err:.2e}, ranks off: {rank_bad}")
    if err > TOL or rank_bad:
        failures.append(f"{tag}: target probability error {err:.2e}, {rank_bad} ranks off")
    # The top-k.
    err, ids_bad = 0.0, 0
    for p in range(P):
        for t in range(T):
            row = probs[p][t]
            order = np.argsort(-row, kind="stable")
            for i, cell in enumerate(doc["top"][p][t]):
                err = max(err, abs(cell["prob"] - row[cell["id"]]))
                clear = i + 1 >= len(order) or row[order[i]] - row[order[i + 1]] > 1e-5
                clear = clear and (i == 0 or row[order[i - 1]] - row[order[i]] > 1e-5)
                if clear and cell["id"] != int(order[i]):
                    ids_bad += 1
    print(f"  top-{K} probabilities: max error {err:.2e}, ids off: {ids_bad}")
    if err > TOL or ids_bad:
        failures.append(f"{tag}: top-k probability error {err:.2e}, {ids_bad} ids off")
    # Not trivial: layers disagree with the last, and a readout without the final norm (the
    # naive lens) is told apart.
    tops = np.array([[int(np.argmax(probs[p][t])) for t in range(T)] for p in range(P)])
    if (tops == tops[-1]).all():
        failures.append(f"{tag}: every point predicts what the last does (a test that cannot tell)")
    if raw is not None:
        naive = max(np.abs(softmax_rows(raw(s)) - q).max() for s, q in zip(pts, probs))
        print(f"  reading the stream without the final norm moves a probability by {naive:.2e}")
        if naive <= 10 * TOL:
            failures.append(f"{tag}: the readout without the final norm is within the tolerance (a test that cannot tell)")


def main():
    return reference_common.specs_main(__doc__, check, failures, "the logit lens agrees with the numpy reference")


if __name__ == "__main__":
    sys.exit(main())
