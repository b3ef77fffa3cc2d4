#!/usr/bin/env python3
"""Independent float64 numpy reference for the circuits of heads (issue 39, point 3).

For each model, runs headmap-cli --composition --circuit L.H --json --npy and recomputes from the
model's own tensors (read here, nothing of headmap imported), each layer's input norm gain
folded into W_Q, W_K and W_V (TransformerLens's fold_ln; Gemma's 1 + w), heads sliced as the
family lays them out (separate projections with grouped K/V, GPT-NeoX's per-head [q|k|v]):

  composition  the (D, D) products themselves: ||OV_A QK_B||, ||OV_A QK_B^T||, ||OV_A OV_B|| over
               the norms' product, for every earlier head A and later head B (1e-4), and the one
               head L.H's row alone (circuit_composition, as (L, H)); and checks that the scores
               are not all alike (a test that can tell Q from K from V);
  circuit      E OV U^T and E QK E^T over headmap's token list, whose first part must be the
               text's distinct ids in order (relative 1e-4 of the largest entry); the learned
               positions' QK (GPT-2's block); the copying score from the eigenvalues of the
               (D, D) OV U^T E (1e-4); the top singular values of OV (relative 1e-4) and each
               direction's top reading and written tokens where the reference's gap is clear.

Usage: circuits_reference.py HEADMAP_CLI WORKDIR SPEC [...]
  SPEC  ckpt=PATH:L.H:TEXT | family=VARIANT:L.H:TEXT  (families: llama, qwen2, mistral_window, gemma, pythia)
Exit status: 0 all agree, 1 a mismatch, 77 numpy is missing (a skipped test).
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import reference_common  # noqa: E402

np = reference_common.numpy_or_skip()

TOL = 1e-4
failures = []


def ckpt_heads(path):
    """A headmap checkpoint (GPT-2 block): per layer lists of (Q, K, V (D, dh), O (dh, D)), E, U, positions."""
    from read_safetensors import read
    w, meta = read(path)
    f = {k: v.astype(np.float64) for k, v in w.items()}
    H, L, D = int(meta["num_heads"]), int(meta["num_layers"]), int(meta["d_model"])
    dh = D // H
    layers = []
    for l in range(L):
        p = lambda n: f[f"layers.{l}.{n}"]
        g = p("ln1_g")[:, None]
        heads = []
        for h in range(H):
            s = slice(h * dh, (h + 1) * dh)
            heads.append((g * p("w_q")[:, s], g * p("w_k")[:, s], g * p("w_v")[:, s], p("w_o")[s, :]))
        layers.append(heads)
    return layers, f["tok_emb"], f["tok_emb"], f["pos_emb"]


def family_heads(d):
    import family_reference as fr
    from gpt2_reference import read_model
    cfg, _ = read_model(d)
    W = {k: v.astype(np.float64) for k, v in fr.read_dir_weights(d).items()}
    t = cfg["model_type"]
    D, H, L = cfg["hidden_size"], cfg["num_attention_heads"], cfg["num_hidden_layers"]
    KV = cfg.get("num_key_value_heads") or H
    dh = cfg.get("head_dim") or D // H
    layers = []
    if t == "gpt_neox":
        E, U = W["gpt_neox.embed_in.weight"], W["embed_out.weight"]
        for l in range(L):
            p = f"gpt_neox.layers.{l}."
            g = W[p + "input_layernorm.weight"][:, None]
            qkv, o = W[p + "attention.query_key_value.weight"].T, W[p + "attention.dense.weight"].T  # (D, 3D), (D, D)
            heads = []
            for h in range(H):
                c = h * 3 * dh
                heads.append((g * qkv[:, c:c + dh], g * qkv[:, c + dh:c + 2 * dh], g * qkv[:, c + 2 * dh:c + 3 * dh], o[h * dh:(h + 1) * dh]))
            layers.append(heads)
        return layers, E, U, None
    gemma = t.startswith("gemma")
    E = W["model.embed_tokens.weight"]
    U = W.get("lm_head.weight", E)
    if gemma:
        E = E * np.sqrt(D)
    for l in range(L):
        p = f"model.layers.{l}."
        g = W[p + "input_layernorm.weight"][:, None]
        if gemma:
            g = 1.0 + g
        q, k, v = (W[p + f"self_attn.{n}_proj.weight"].T for n in "qkv")
        o = W[p + "self_attn.o_proj.weight"].T
        heads = []
        for h in range(H):
            s, kv = slice(h * dh, (h + 1) * dh), h // (H // KV)
            sk = slice(kv * dh, (kv + 1) * dh)
            heads.append((g * q[:, s], g * k[:, sk], g * v[:, sk], o[s]))
        layers.append(heads)
    return layers, E, U, None


def close(tag, name, got, want, tol):
    reference_common.close(failures, tag, name, got, want, tol)


def check(cli, work, spec):
    kind, rest = spec.split("=", 1)
    where, head, text = rest.split(":", 2)
    got = reference_common.run_spec(cli, work, f"{kind}={where}:{text}", ["--composition", "--circuit", head], failures)
    if got is None:
        return
    tag, base, d, contrib = got
    layers, E, U, pos = ckpt_heads(where) if kind == "ckpt" else family_heads(d)
    L, H = len(layers), len(layers[0])
    N = L * H
    ov = [layers[n // H][n % H][2] @ layers[n // H][n % H][3] for n in range(N)]
    qk = [layers[n // H][n % H][0] @ layers[n // H][n % H][1].T for n in range(N)]
    fro = np.linalg.norm
    want = {m: np.zeros((N, N)) for m in "qkv"}
    for b in range(N):
        for a in range((b // H) * H):
            want["q"][b, a] = fro(ov[a] @ qk[b]) / (fro(ov[a]) * fro(qk[b]))
            want["k"][b, a] = fro(ov[a] @ qk[b].T) / (fro(ov[a]) * fro(qk[b]))
            want["v"][b, a] = fro(ov[a] @ ov[b]) / (fro(ov[a]) * fro(ov[b]))
    comp = contrib["composition"]
    print(f"{tag}: L={L} H={H}")
    for m in "qkv":
        close(tag, f"{m.upper()}-composition", comp[m], want[m], TOL)
    # The one head's row (the app's Circuits view): every earlier head into L.H, as (L, H).
    l, h = (int(x) for x in head.split("."))
    row = contrib["circuit_composition"]
    for m in "qkv":
        close(tag, f"{m.upper()}-composition into {head}", row[m], want[m][l * H + h].reshape(L, H), TOL)
    if N > H and np.abs(want["q"] - want["k"]).max() < 10 * TOL:
        failures.append(f"{tag}: Q- and K-composition coincide (a test that cannot tell them apart)")
    # The head's circuit.
    c = contrib["circuit"]
    l, h = (int(x) for x in head.split("."))
    q, k, v, o = layers[l][h]
    ids = [t["id"] for t in c["tokens"]]
    meta = json.load(open(os.path.join(base + ".d", "meta.json")))
    text_ids = list(dict.fromkeys(meta["token_ids"][0]))
    if ids[:len(text_ids)] != text_ids:
        failures.append(f"{tag}: the circuit's tokens do not start with the text's distinct ids")
    e, u = E[ids], U[ids]
    w_ov, w_qk = e @ v @ o @ u.T, e @ q @ k.T @ e.T
    close(tag, "OV circuit (relative)", np.array(c["ov"]) / np.abs(w_ov).max(), w_ov / np.abs(w_ov).max(), TOL)
    close(tag, "QK circuit (relative)", np.array(c["qk"]) / np.abs(w_qk).max(), w_qk / np.abs(w_qk).max(), TOL)
    if pos is not None:
        P = len(c["qk_positions"])
        pp = pos[:P] @ q @ k.T @ pos[:P].T
        close(tag, "positions' QK (relative)", np.array(c["qk_positions"]) / np.abs(pp).max(), pp / np.abs(pp).max(), TOL)
    elif c["qk_positions"] is not None:
        failures.append(f"{tag}: positions' QK on a family without learned positions")
    lam = np.linalg.eigvals(v @ o @ U.T @ E)  # (D) the full OV circuit's nonzero eigenvalues among them
    copying = lam.sum().real / np.abs(lam).sum()
    close(tag, "copying score", c["copying"], copying, TOL)
    uu, s, vt = np.linalg.svd(v @ o)
    kd = len(c["directions"])
    close(tag, "singular values (relative)", np.array([x["sigma"] for x in c["directions"]]) / s[0], s[:kd] / s[0], TOL)
    bad = 0
    for i, dgot in enumerate(c["directions"]):
        r, wr = E @ uu[:, i], U @ vt[i]
        if -r.min() > r.max():
            r, wr = -r, -wr
        for got_ids, score in ((dgot["reads"], r), (dgot["writes"], wr)):
            order = np.argsort(-score, kind="stable")
            for j, gid in enumerate(got_ids):
                clear = j + 1 >= len(order) or score[order[j]] - score[order[j + 1]] > 1e-6 * np.abs(score).max()
                clear = clear and (j == 0 or score[order[j - 1]] - score[order[j]] > 1e-6 * np.abs(score).max())
                clear = clear and (i + 1 >= len(s) or s[i] - s[i + 1] > 1e-6 * s[0])
                if clear and gid != int(order[j]):
                    bad += 1
    print(f"  copying score {copying:.4f}; direction tokens off: {bad}")
    if bad:
        failures.append(f"{tag}: {bad} direction tokens differ from the reference's")


def main():
    return reference_common.specs_main(__doc__, check, failures, "the circuits agree with the numpy reference")


if __name__ == "__main__":
    sys.exit(main())
