#!/usr/bin/env python3
"""Independent float64 numpy reference for what heads contribute (issue 28).

For each checkpoint, runs headmap-cli with --attribute A-B@POS, --value-weighted, --rollout,
--detectors and --patch-from, then recomputes every quantity here from the checkpoint's own
tensors (read with numpy alone, read_safetensors.read) and compares, to 1e-4:

  direct logit attribution  each head's ctx_h W_O[h], the embeddings, each MLP, each b_O and
                            ln_f's b, through ln_f's frozen scale 1/sigma and g, dotted with
                            U[a] - U[b]; the parts plus the centring term -mean/sigma sum(g u)
                            equal the logit difference (completeness);
  value-weighted maps       alpha_ij ||f(x_j)||, f(x) = (x W_V[h] + b_V[h]) W_O[h]; and
                            sum_j alpha_ij f(x_j) summed over heads plus b_O equals headmap's
                            attention output (layer{l}.attn_out.npy);
  rollout                   (A + I) row-normalised, multiplied over layers; rows sum to 1;
  detectors                 sum(A * P) / sum(A) on the causal triangle, P from the token ids;
  patching                  a brute-force run of the corrupted sentence from the embeddings
                            with one head's ctx replaced by the clean run's, per head.

On post-norm encoders (a spec "encoder=VARIANT:...", make_encoder_dir.py's BERT, RoBERTa,
DistilBERT with a masked-LM head), encoder_reference.py's float64 forward; every LayerNorm's
scale, the masked-LM head's GELU gate gelu(z)/z and its norm's scale frozen at the run's values
(see check_encoder), and the detectors over every real key (no causal mask).

On the other families (a spec "family=VARIANT:..."), a tiny random model of that variant of
make_family_dir.py is written and run with --model DIR, and the same quantities are recomputed
on family_reference.py's float64 forward (its published definitions: RMSNorm and Gemma's
(1 + w), GQA, RoPE, q/k norms, gated MLPs, post-attention norms, the parallel residual,
final soft-capping, an untied unembedding), with the family's rules for attribution:
  - the final norm's frozen scale is RMSNorm's rms (no centring term, no bias) where the
    family uses RMSNorm, so the parts sum to the logit itself;
  - a norm after attention (Gemma 2 and 3): a head writes ctx_h W_O[h] * g_post / rms_t(y),
    y the whole block's output, that norm's scale frozen at the run's value;
  - a final soft-cap (Gemma 2): the pre-cap logit is attributed; patching measures the
    model's own (capped) logits;
  - a query head's values are its K/V head's (GQA), never rotated.

Nothing here imports headmap. B = 1, T = tokens, D = d_model, H = heads, L = layers, V = vocab.

Usage: contrib_reference.py HEADMAP_CLI WORKDIR CHECKPOINT:CLEAN:CORRUPTED:A:B:POS[:PATCH_POS] [...]
       (CHECKPOINT may be family=VARIANT, e.g. family=llama)
(PATCH_POS: patch that position only; -1 or absent, every position)
Exit status: 0 all agree, 1 a mismatch, 77 numpy is missing (a skipped test).
"""
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import reference_common  # noqa: E402

np = reference_common.numpy_or_skip()
from read_safetensors import read, layer_norm, gelu  # noqa: E402  (numpy only)

TOL = 1e-4
failures = []


def close(name, got, want, tol=TOL):
    got, want = np.asarray(got, dtype=np.float64), np.asarray(want, dtype=np.float64)
    if got.shape != want.shape:
        failures.append(f"{name}: shape {got.shape} vs reference {want.shape}")
        return
    err = np.max(np.abs(got - want) / np.maximum(1.0, np.abs(want))) if got.size else 0.0
    status = "ok" if err <= tol else "MISMATCH"
    print(f"  {name:<34} max error {err:.2e}  {status}")
    if err > tol:
        failures.append(f"{name}: {err:.2e}")


def run(f, H, ids, patch=None):
    """Forward of one sentence; patch = (l, h, pos or -1, clean ctx (T, d_head)) replaces a head's ctx."""
    D, L = f["tok_emb"].shape[1], sum(1 for k in f if k.endswith(".w_q"))
    dh, T = D // H, len(ids)
    x = f["tok_emb"][ids] + f["pos_emb"][:T]
    mask = np.triu(np.ones((T, T), dtype=bool), 1)
    c = {"emb": x.copy(), "resid": [], "attn_in": [], "att": [], "ctx": [], "attn_out": [], "mlp": []}
    for l in range(L):
        p = lambda n: f[f"layers.{l}.{n}"]
        c["resid"].append(x.copy())
        a = layer_norm(x, p("ln1_g"), p("ln1_b"))
        q = (a @ p("w_q") + p("b_q")).reshape(T, H, dh).transpose(1, 0, 2)  # (H, T, dh)
        k = (a @ p("w_k") + p("b_k")).reshape(T, H, dh).transpose(1, 0, 2)
        v = (a @ p("w_v") + p("b_v")).reshape(T, H, dh).transpose(1, 0, 2)
        s = q @ k.transpose(0, 2, 1) / np.sqrt(dh)
        s[:, mask] = -np.inf
        s = np.exp(s - s.max(-1, keepdims=True))
        att = s / s.sum(-1, keepdims=True)                                  # (H, T, T)
        ctx = att @ v                                                       # (H, T, dh)
        if patch and patch[0] == l:
            _, h, pos, clean = patch
            rows = slice(None) if pos < 0 else slice(pos, pos + 1)
            ctx[h, rows] = clean[rows]
        out = ctx.transpose(1, 0, 2).reshape(T, D) @ p("w_o") + p("b_o")
        c["attn_in"].append(a)
        c["att"].append(att)
        c["ctx"].append(ctx)
        c["attn_out"].append(out)
        x = x + out
        m = gelu(layer_norm(x, p("ln2_g"), p("ln2_b")) @ p("w_fc") + p("b_fc")) @ p("w_proj") + p("b_proj")
        c["mlp"].append(m)
        x = x + m
    c["final"] = x
    c["logits"] = layer_norm(x, f["lnf_g"], f["lnf_b"]) @ f["tok_emb"].T  # (T, V), tied
    return c


def check(cli, work, spec):
    parts = spec.split(":")
    ckpt, clean_text, corrupt_text, a, b, pos = parts[:6]
    a, b, pos = int(a), int(b), int(pos)
    patch_pos = int(parts[6]) if len(parts) > 6 else -1
    if ckpt.startswith("family="):
        return check_family(cli, work, ckpt[len("family="):], clean_text, corrupt_text, a, b, pos, patch_pos)
    if ckpt.startswith("encoder="):
        return check_encoder(cli, work, ckpt[len("encoder="):], clean_text, corrupt_text, a, b, pos, patch_pos)
    w, meta = read(ckpt)
    f = {k: v.astype(np.float64) for k, v in w.items()}
    H, L, D = int(meta["num_heads"]), int(meta["num_layers"]), int(meta["d_model"])
    dh = D // H
    out = os.path.join(work, os.path.basename(ckpt) + ".d")
    js = out + ".json"
    cmd = [cli, "--checkpoint", ckpt, "--text", corrupt_text, "--patch-from", clean_text, "--attribute", f"#{a}-#{b}@{pos}",
           "--value-weighted", "--rollout", "--detectors", "--json", js, "--npy", out, "--patch-position", str(patch_pos)]
    print(" ".join(cmd))
    subprocess.run(cmd, check=True)
    doc = json.load(open(js))["contrib"]
    ids = np.array(json.load(open(os.path.join(out, "meta.json")))["token_ids"][0])
    clean_ids = np.array(doc["patching"]["clean_token_ids"])
    T = len(ids)
    print(f"{ckpt}: D={D} H={H} L={L}, T={T}, target #{a} - #{b} at {pos}")
    c = run(f, H, ids)

    # Attribution.
    u = f["tok_emb"][a] - f["tok_emb"][b]
    x = c["final"][pos]
    mu, sigma = x.mean(), np.sqrt(x.var() + 1e-5)
    ue = f["lnf_g"] * u / sigma
    heads = np.array([[(c["ctx"][l][h, pos] @ f[f"layers.{l}.w_o"][h * dh:(h + 1) * dh]) @ ue for h in range(H)] for l in range(L)])
    mlps = np.array([c["mlp"][l][pos] @ ue for l in range(L)])
    bias = np.array([f[f"layers.{l}.b_o"] @ ue for l in range(L)])
    emb, fb, centring = c["emb"][pos] @ ue, f["lnf_b"] @ u, -mu * ue.sum()
    logit = c["logits"][pos, a] - c["logits"][pos, b]
    total = heads.sum() + mlps.sum() + bias.sum() + emb + fb + centring
    print(f"  reference completeness: logit {logit:.6f}, parts + centring {total:.6f}")
    if abs(total - logit) > 1e-9 * max(1, abs(logit)):
        failures.append("the reference's own parts do not sum to its logit")
    at = doc["attribution"]
    close("attribution: heads", at["heads"], heads)
    close("attribution: MLPs", at["mlps"], mlps)
    close("attribution: b_O", at["attn_bias"], bias)
    close("attribution: embeddings", at["embeddings"], emb)
    close("attribution: ln_f bias", at["final_bias"], fb)
    close("attribution: centring term", at["centring"], centring)
    close("attribution: logit difference", at["logit"], logit)
    close("attribution: completeness (parts sum)", at["parts_sum"], logit)
    if not at["completeness_error"] <= 1e-4 * max(1, abs(logit)):
        failures.append(f"completeness error {at['completeness_error']}")

    # Value-weighted maps and the heads' outputs.
    vw = np.zeros((L, H, T, T))
    for l in range(L):
        p = lambda n: f[f"layers.{l}.{n}"]
        total_out = np.zeros((T, D)) + p("b_o")
        for h in range(H):
            sl = slice(h * dh, (h + 1) * dh)
            fx = (c["attn_in"][l] @ p("w_v")[:, sl] + p("b_v")[sl]) @ p("w_o")[sl]  # (T, D)
            vw[l, h] = c["att"][l][h] * np.linalg.norm(fx, axis=1)[None, :]
            total_out += c["att"][l][h] @ fx
        headmap_out = np.load(os.path.join(out, f"layer{l}.attn_out.npy"))[0]
        close(f"sum_j alpha f(x_j) + b_O, layer {l}", headmap_out, total_out)
    close("value-weighted maps", np.load(os.path.join(out, "value_weighted.npy")), vw)
    close("value-weighted maps (JSON)", doc["value_weighted"]["maps"], vw)

    common_checks("", doc, out, c["att"], ids, T, L, H)

    # Patching, brute force from the embeddings.
    cl = run(f, H, clean_ids)
    diff = lambda z: z[pos, a] - z[pos, b]
    pp = doc["patching"]
    close("patching: clean difference", pp["clean"], diff(cl["logits"]))
    close("patching: corrupted difference", pp["corrupted"], diff(c["logits"]))
    patched = np.array([[diff(run(f, H, ids, (l, h, pp["position"], cl["ctx"][l][h]))["logits"]) for h in range(H)] for l in range(L)])
    close("patching: patched differences", pp["patched"], patched)
    rec = (patched - diff(c["logits"])) / (diff(cl["logits"]) - diff(c["logits"]))
    close("patching: normalised recovery", pp["recovery"], rec, tol=1e-3)


def common_checks(name, doc, out, att, ids, T, L, H, causal=True):
    """Rollout and detectors from the reference's attention maps att[l] (H, T, T). Without a causal
    mask (encoders) every real key is visible: the patterns are the same cells (previous token:
    the key at i-1), and sum(A) runs over the whole row."""
    r = np.eye(T)
    ro = []
    for l in range(L):
        A = att[l].mean(0) + np.eye(T)
        r = (A / A.sum(1, keepdims=True)) @ r
        ro.append(r)
    got = np.load(os.path.join(out, "rollout.npy"))
    close(f"{name} rollout", got, np.array(ro))
    close(f"{name} rollout (JSON)", doc["rollout"]["maps"], np.array(ro))
    close(f"{name} rollout rows sum to 1", got.sum(-1), np.ones((L, T)))
    P = {"previous_token": np.eye(T, k=-1), "first_token": np.zeros((T, T)), "duplicate_token": np.zeros((T, T))}
    P["first_token"][:, 0] = 1
    for t in range(T):
        for s in range(t):
            if ids[s] == ids[t]:
                P["duplicate_token"][t, s] = 1
    P["induction"] = np.zeros((T, T))
    P["induction"][:, 1:] = P["duplicate_token"][:, :-1]
    tril = np.tril(np.ones((T, T))) if causal else np.ones((T, T))
    det = np.load(os.path.join(out, "detectors.npy"))  # (4, L, H): previous, duplicate, induction, first
    for i, name_d in enumerate(["previous_token", "duplicate_token", "induction", "first_token"]):
        want = np.array([[(att[l][h] * tril * P[name_d]).sum() / (att[l][h] * tril).sum() for h in range(H)] for l in range(L)])
        close(f"{name} detector: {name_d}", doc["detectors"][name_d], want)
        close(f"{name} detector (npy): {name_d}", det[i], want)


def check_attribution(name, doc, out, logit, parts):
    """parts: the reference's value of each attribution field (heads, mlps, ...), which must sum to
    its logit (difference); then headmap's fields, its attributed logit and its completeness."""
    total = sum(float(np.sum(v)) for v in parts.values())
    print(f"  reference completeness: logit difference {logit:.6f}, parts {total:.6f}")
    if abs(total - logit) > 1e-9 * max(1, abs(logit)):
        failures.append(f"{name} the reference's own parts do not sum to its logit")
    at = doc["attribution"]
    for key, want in parts.items():
        close(f"{name} attribution: {key}", at[key], want)
    close(name + " attribution: heads (npy)", np.load(os.path.join(out, "attribution_heads.npy")), parts["heads"])
    close(name + " attribution: (pre-cap) logit diff", at["logit"], logit)
    close(name + " attribution: completeness", at["parts_sum"], logit)
    if not at["completeness_error"] <= 1e-4 * max(1, abs(logit)):
        failures.append(f"{name} completeness error {at['completeness_error']}")


def run_model_dir(cli, d, out, variant, clean_text, corrupt_text, a, b, pos, patch_pos):
    """headmap-cli --model d with every contribution asked for, into out (.npy) and out.json;
    its "contrib" document, or None (a failure noted) when headmap-cli refused."""
    js = out + ".json"
    cmd = [cli, "--model", d, "--text", corrupt_text, "--patch-from", clean_text, "--attribute", f"#{a}-#{b}@{pos}",
           "--value-weighted", "--rollout", "--detectors", "--json", js, "--npy", out, "--patch-position", str(patch_pos)]
    print(" ".join(cmd))
    run = subprocess.run(cmd, capture_output=True, text=True)
    if run.returncode != 0:
        failures.append(f"{variant}: headmap-cli refused it: {run.stderr.strip()}")
        print(run.stderr)
        return None
    return json.load(open(js))["contrib"]


def check_family(cli, work, variant, clean_text, corrupt_text, a, b, pos, patch_pos):
    import family_reference as fr  # noqa: E402  (the families' float64 forward, numpy only)
    import make_family_dir
    from gpt2_reference import read_model
    d = os.path.join(work, "family-" + variant)
    make_family_dir.write_dir(d, variant)
    cfg, _ = read_model(d)
    W = {k: v.astype(np.float64) for k, v in fr.read_dir_weights(d).items()}
    t = cfg["model_type"]
    neo, neox, gemma = t == "gpt_neo", t == "gpt_neox", t.startswith("gemma")
    out = os.path.join(work, "family-" + variant + ".d")
    doc = run_model_dir(cli, d, out, variant, clean_text, corrupt_text, a, b, pos, patch_pos)
    if doc is None:
        return
    ids = np.array(json.load(open(os.path.join(out, "meta.json")))["token_ids"][0])
    clean_ids = np.array(doc["patching"]["clean_token_ids"])
    T = len(ids)
    c = {}
    c["att"] = [lr[0] for lr in fr.forward(cfg, W, ids, rec=c)[0]]  # (H, T, T) per layer
    L = len(c["layers"])
    H, _, dh = c["layers"][0]["ctx"].shape
    D = c["emb"].shape[1]
    eps = cfg.get("layer_norm_eps", cfg.get("layer_norm_epsilon", cfg.get("rms_norm_eps", 1e-6)))
    print(f"{variant} ({t}): D={D} H={H} d_head={dh} L={L}, T={T}, target #{a} - #{b} at {pos}")
    name = variant + ":"

    # Attribution through the final norm's frozen scale.
    pre = "gpt_neox." if neox else "transformer." if neo else "model."
    phi = t == "phi"
    fname = pre + ("ln_f" if neo else "final_layer_norm" if neox else "final_layernorm" if phi else "norm")
    U = c["unembed"]
    u = U[a] - U[b]
    x = c["final"][pos]
    layer_norm_final = neo or neox or phi
    g = W[fname + ".weight"] + (1.0 if gemma else 0.0)
    if layer_norm_final:
        mu, sigma = x.mean(), np.sqrt(x.var() + eps)
    else:
        mu, sigma = 0.0, np.sqrt((x * x).mean() + eps)
    ue = g * u / sigma
    post = t in ("gemma2", "gemma3_text", "olmo2")
    heads, bias, mlps = np.zeros((L, H)), np.zeros(L), np.zeros(L)
    for l, ly in enumerate(c["layers"]):
        scale = np.ones(D)
        if post:  # RMSNorm(y) (1 + w): its scale at this position frozen
            gp = W[f"model.layers.{l}.post_attention_layernorm.weight"] + (1.0 if gemma else 0.0)
            scale = gp / np.sqrt((ly["y"][pos] ** 2).mean() + eps)
        for h in range(H):
            heads[l, h] = ((ly["ctx"][h, pos] @ ly["wo"][h * dh:(h + 1) * dh]) * scale) @ ue
        bias[l] = (np.zeros(D) + ly["bo"]) * scale @ ue
        mlps[l] = ly["mlp_write"][pos] @ ue
    emb = c["emb"][pos] @ ue
    fb = W[fname + ".bias"] @ u if layer_norm_final else 0.0
    if "lm_head.bias" in W:  # Phi: the lm_head's own bias, b[a] - b[b]
        fb += W["lm_head.bias"][a] - W["lm_head.bias"][b]
    centring = -mu * ue.sum() if layer_norm_final else 0.0
    logit = c["precap"][pos, a] - c["precap"][pos, b]
    model_logit = c["logits"][pos, a] - c["logits"][pos, b]
    check_attribution(name, doc, out, logit, dict(heads=heads, mlps=mlps, attn_bias=bias, embeddings=emb, final_bias=fb, centring=centring))
    close(name + " attribution: the model's logit diff", doc["attribution"]["model_logit"], model_logit)

    # Value-weighted maps: f(x_j) = v_j W_O[h] (v of the K/V head, unrotated); sum_j alpha f + b_O
    # is headmap's attention block output (before any post-attention norm).
    vw = np.zeros((L, H, T, T))
    vn = np.zeros((L, H, T))
    for l, ly in enumerate(c["layers"]):
        att = fr_att(c, l)
        total_out = np.zeros((T, D)) + ly["bo"]
        for h in range(H):
            fx = ly["v"][h] @ ly["wo"][h * dh:(h + 1) * dh]  # (T, D)
            vn[l, h] = np.linalg.norm(fx, axis=1)
            vw[l, h] = att[h] * vn[l, h][None, :]
            total_out += att[h] @ fx
        close(f"{name} sum_j alpha f(x_j) + b_O = reference y, layer {l}", total_out, ly["y"])
        headmap_out = np.load(os.path.join(out, f"layer{l}.attn_out.npy"))[0]
        close(f"{name} sum_j alpha f(x_j) + b_O = headmap's, layer {l}", headmap_out, total_out)
    close(name + " value-weighted maps", np.load(os.path.join(out, "value_weighted.npy")), vw)
    close(name + " value norms ||f(x_j)||", np.load(os.path.join(out, "value_norm.npy")), vn)
    close(name + " value-weighted maps (JSON)", doc["value_weighted"]["maps"], vw)

    common_checks(name, doc, out, [fr_att(c, l) for l in range(L)], ids, T, L, H)

    # Patching: brute force from the embeddings, the model's own (capped) logits.
    cl = {}
    fr.forward(cfg, W, clean_ids, rec=cl)
    diff = lambda z: z[pos, a] - z[pos, b]
    pp = doc["patching"]
    close(name + " patching: clean difference", pp["clean"], diff(cl["logits"]))
    close(name + " patching: corrupted difference", pp["corrupted"], diff(c["logits"]))
    patched = np.zeros((L, H))
    for l in range(L):
        for h in range(H):
            r = {}
            fr.forward(cfg, W, ids, rec=r, patch=(l, h, pp["position"], cl["layers"][l]["ctx"][h]))
            patched[l, h] = diff(r["logits"])
    close(name + " patching: patched differences", pp["patched"], patched)
    rec_ = (patched - diff(c["logits"])) / (diff(cl["logits"]) - diff(c["logits"]))
    close(name + " patching: normalised recovery", pp["recovery"], rec_, tol=1e-3)
    close(name + " patching: recovery (npy)", np.load(os.path.join(out, "patch_recovery.npy")), rec_, tol=1e-3)
    if np.abs(patched - diff(c["logits"])).max() < 1e-6:
        failures.append(f"{variant}: no head moved the difference (a test that cannot tell)")


def check_encoder(cli, work, variant, clean_text, corrupt_text, a, b, pos, patch_pos):
    """A post-norm encoder of make_encoder_dir.py (BERT, RoBERTa, DistilBERT with a masked-LM head),
    on encoder_reference.py's float64 forward. Attribution, computed forward here (headmap pulls
    a readout backward): every part p (D) at the position is carried through each later
    LayerNorm with its scale s frozen, LN(v) -> (v - mean v) / s * g, then through the masked-LM
    head with GELU's gate gelu(z)/z and its norm's scale frozen, and dotted with U[a] - U[b]; the
    betas and the head's biases are parts too, so the parts sum to the logit difference."""
    import encoder_reference as er  # noqa: E402  (BERT, RoBERTa, DistilBERT in float64, numpy only)
    import make_encoder_dir
    d = os.path.join(work, "encoder-" + variant)
    cfg = make_encoder_dir.write_dir(d, variant)
    W = {k: v.astype(np.float64) for k, v in er.read_safetensors(os.path.join(d, "model.safetensors")).items()}
    out = os.path.join(work, "encoder-" + variant + ".d")
    doc = run_model_dir(cli, d, out, variant, clean_text, corrupt_text, a, b, pos, patch_pos)
    if doc is None:
        return
    meta = json.load(open(os.path.join(out, "meta.json")))
    ids, types = np.array(meta["token_ids"][0]), np.array(meta["type_ids"][0])
    clean_ids = np.array(doc["patching"]["clean_token_ids"])
    T = len(ids)
    c = {}
    layers, logits = er.forward(cfg, W, ids, types, rec=c)
    att = [lr[0] for lr in layers]
    L, (H, _, dh), D = len(layers), c["layers"][0]["ctx"].shape, c["emb"].shape[1]
    eps = c["eps"]
    name = variant + ":"
    print(f"{variant} ({cfg['model_type']}): D={D} H={H} L={L}, T={T}, target #{a} - #{b} at {pos}")

    # Attribution, forward: the frozen scales at pos, then each part carried to the logit.
    sd = lambda v: np.sqrt(v.var() + eps)
    s1 = [sd(ly["x"][pos] + ly["y"][pos]) for ly in c["layers"]]
    s2 = [sd(ly["mid"][pos] + ly["mlp"][pos]) for ly in c["layers"]]
    Wt, bt, gm, bm, dec, dbias = c["head"]
    z = c["final"][pos] @ Wt + bt
    gate = er.gelu(z) / z
    sm = sd(er.gelu(z))
    u = dec[a] - dec[b]

    def carry(v, k):  # v entering at point k (2l: before layer l's LN1, 2l+1: before its LN2) to the logit
        for i in range(k, 2 * L):
            ly = c["layers"][i // 2]
            g, s = (ly["g1"], s1[i // 2]) if i % 2 == 0 else (ly["g2"], s2[i // 2])
            v = (v - v.mean()) / s * g
        return (((v @ Wt) * gate) - ((v @ Wt) * gate).mean()) / sm * gm @ u

    heads = np.array([[carry(ly["ctx"][h, pos] @ ly["wo"][h * dh:(h + 1) * dh], 2 * l) for h in range(H)] for l, ly in enumerate(c["layers"])])
    bias = np.array([carry(ly["bo"], 2 * l) for l, ly in enumerate(c["layers"])])
    mlps = np.array([carry(ly["mlp"][pos], 2 * l + 1) for l, ly in enumerate(c["layers"])])
    betas = np.array([carry(ly["b1"], 2 * l + 1) + carry(ly["b2"], 2 * l + 2) for l, ly in enumerate(c["layers"])])
    emb = carry(c["emb"][pos], 0)
    zb = bt * gate
    fb = ((zb - zb.mean()) / sm * gm) @ u + bm @ u + dbias[a] - dbias[b]
    logit = logits[pos, a] - logits[pos, b]
    # norm_bias: each layer's LayerNorm betas; final_bias: the masked-LM head's b_t, beta_m and decoder bias.
    check_attribution(name, doc, out, logit, dict(heads=heads, mlps=mlps, attn_bias=bias, norm_bias=betas, embeddings=emb, final_bias=fb))
    close(name + " attribution: centring term (none)", doc["attribution"]["centring"], 0.0)
    if np.abs(heads).max() < 1e-6:
        failures.append(f"{variant}: no head adds to the logit (a test that cannot tell)")

    # Value-weighted maps (Kobayashi et al. 2020): f(x_j) = (x_j W_V[h] + b_V[h]) W_O[h], x the
    # layer's input (post-norm: the attention reads x itself); sum_j alpha f + b_O is the output.
    vw, vn = np.zeros((L, H, T, T)), np.zeros((L, H, T))
    sink = np.zeros((L, H))
    for l, ly in enumerate(c["layers"]):
        total_out = np.zeros((T, D)) + ly["bo"]
        for h in range(H):
            fx = ly["v"][h] @ ly["wo"][h * dh:(h + 1) * dh]  # (T, D)
            vn[l, h] = np.linalg.norm(fx, axis=1)
            vw[l, h] = att[l][h] * vn[l, h][None, :]
            total_out += att[l][h] @ fx
            # Sink: every real row (no causal mask), weight on token 0 minus its value-weighted share.
            sink[l, h] = att[l][h][:, 0].mean() - (vw[l, h][:, 0] / vw[l, h].sum(1)).mean()
        close(f"{name} sum_j alpha f(x_j) + b_O = reference y, layer {l}", total_out, ly["y"])
        close(f"{name} sum_j alpha f(x_j) + b_O = headmap's, layer {l}", np.load(os.path.join(out, f"layer{l}.attn_out.npy"))[0], total_out)
    close(name + " value-weighted maps", np.load(os.path.join(out, "value_weighted.npy")), vw)
    close(name + " value norms ||f(x_j)||", np.load(os.path.join(out, "value_norm.npy")), vn)
    close(name + " sink score", doc["value_weighted"]["sink"], sink)

    common_checks(name, doc, out, att, ids, T, L, H, causal=False)

    # Patching: brute force from the embeddings, each head's ctx from the clean run.
    cl = {}
    _, clean_logits = er.forward(cfg, W, clean_ids, types, rec=cl)
    diff = lambda zz: zz[pos, a] - zz[pos, b]
    pp = doc["patching"]
    close(name + " patching: clean difference", pp["clean"], diff(clean_logits))
    close(name + " patching: corrupted difference", pp["corrupted"], diff(logits))
    patched = np.array([[diff(er.forward(cfg, W, ids, types, patch=(l, h, pp["position"], cl["layers"][l]["ctx"][h]))[1]) for h in range(H)]
                        for l in range(L)])
    close(name + " patching: patched differences", pp["patched"], patched)
    rec_ = (patched - diff(logits)) / (diff(clean_logits) - diff(logits))
    close(name + " patching: normalised recovery", pp["recovery"], rec_, tol=1e-3)
    if np.abs(patched - diff(logits)).max() < 1e-6:
        failures.append(f"{variant}: no head moved the difference (a test that cannot tell)")


def fr_att(c, l):
    """The attention maps (H, T, T) of layer l, from the recorded ctx = att v: att is kept by forward's layers list."""
    return c["att"][l]


def main():
    return reference_common.specs_main(__doc__, check, failures, "all contributions agree with the numpy reference")


if __name__ == "__main__":
    sys.exit(main())
