#!/usr/bin/env python3
"""encoder_reference.py: BERT, RoBERTa and DistilBERT in numpy, float64, written from the
papers and Hugging Face's modeling files read as documentation (not headmap's code), and a
test that holds headmap-cli --model to them.

    encoder_reference.py HEADMAP_CLI WORK_DIR [VARIANT ...]

For every variant of make_encoder_dir.py it writes a tiny random model and runs headmap-cli
on a batch of three sentences, two of them pairs (sentence B with token type 1) and one
shorter (padding), with a typed [MASK] and a --mask S:T; then it recomputes each sentence
alone from the ids and type ids headmap reports, and compares every layer's attention
(L, B, H, T, T) and its input and output to 1e-4, checks that padding keys get exactly 0,
and, with a masked-LM head, the top-k fillers and their probabilities to 1e-4 and the
masked-token loss to 1e-4. Exit 0 all agree, 1 a difference, 77 numpy missing.
"""
import json
import math
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import reference_common  # noqa: E402  (numpy_or_skip, cli_and_work, worst_layer_io)

np = reference_common.numpy_or_skip()
import make_encoder_dir  # noqa: E402
from gpt2_reference import read_safetensors  # noqa: E402  (safetensors -> float64)

TOL, K = 1e-4, 5


def layer_norm(x, g, b, eps):
    mu = x.mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(((x - mu) ** 2).mean(-1, keepdims=True) + eps) * g + b


def gelu(x):  # exact, erf (BERT's "gelu")
    return 0.5 * x * (1.0 + np.vectorize(math.erf)(x / math.sqrt(2.0)))


def softmax(s):
    e = np.exp(s - s.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def forward(cfg, W, ids, types, rec=None, patch=None):
    """One sentence, no padding. Returns per layer (attention (H,T,T), attn_in (T,D), attn_out (T,D)) and the MLM logits (T,V) or None.

    rec (a dict, optional) receives the stream's parts for contrib_reference.py: "emb" (T,D)
    after the embeddings' LayerNorm; "layers", per layer x (T,D) entering it, v (H,T,dh), ctx
    (H,T,dh), wo (D,D) as (in, out), bo, y (T,D) the attention output, mid (T,D) = LN1(x + y),
    mlp (T,D) the MLP's output, and each LayerNorm's g1, b1, g2, b2; "final" (T,D); "eps";
    with a masked-LM head "head": (W_t (D,D) as (in, out), b_t, g_m, b_m, decoder (V,D), bias).
    patch = (layer, head, position or -1, ctx (T,dh)) replaces that head's ctx rows."""
    t = cfg["model_type"]
    distil = t == "distilbert"
    H = cfg["n_heads" if distil else "num_attention_heads"]
    L = cfg["n_layers" if distil else "num_hidden_layers"]
    eps = 1e-12 if distil else cfg["layer_norm_eps"]
    pre = next((p for p in (t + ".", "") if p + "embeddings.word_embeddings.weight" in W), "")
    g = lambda name: W[name + ".weight"] if name + ".weight" in W else W[name + ".gamma"]
    b = lambda name: W[name + ".bias"] if name + ".bias" in W else W[name + ".beta"]
    ln = lambda x, name: layer_norm(x, g(name), b(name), eps)
    lin = lambda x, name: x @ W[name + ".weight"].T + W[name + ".bias"]
    T = len(ids)
    offset = cfg["pad_token_id"] + 1 if t == "roberta" else 0  # RoBERTa: positions past padding_idx
    x = W[pre + "embeddings.word_embeddings.weight"][ids] + W[pre + "embeddings.position_embeddings.weight"][offset + np.arange(T)]
    if not distil:
        x = x + W[pre + "embeddings.token_type_embeddings.weight"][types]
    x = ln(x, pre + "embeddings.LayerNorm")
    D = x.shape[1]
    dh = D // H
    layers = []
    if rec is not None:
        rec.update(emb=x.copy(), layers=[], eps=eps)
    for l in range(L):
        if distil:
            p = pre + f"transformer.layer.{l}."
            nq, nk, nv, no, n1, nup, ndown, n2 = ("attention.q_lin", "attention.k_lin", "attention.v_lin", "attention.out_lin", "sa_layer_norm",
                                                  "ffn.lin1", "ffn.lin2", "output_layer_norm")
        else:
            p = pre + f"encoder.layer.{l}."
            nq, nk, nv, no, n1, nup, ndown, n2 = ("attention.self.query", "attention.self.key", "attention.self.value", "attention.output.dense",
                                                  "attention.output.LayerNorm", "intermediate.dense", "output.dense", "output.LayerNorm")
        heads = lambda m: m.reshape(T, H, dh).transpose(1, 0, 2)  # (H, T, dh)
        q, k, v = heads(lin(x, p + nq)), heads(lin(x, p + nk)), heads(lin(x, p + nv))
        att = softmax(q @ k.transpose(0, 2, 1) / math.sqrt(dh))  # (H, T, T): no causal mask
        ctx = att @ v                                             # (H, T, dh)
        if patch and patch[0] == l:
            _, hp, pos, clean = patch
            ctx[hp, slice(None) if pos < 0 else slice(pos, pos + 1)] = clean[slice(None) if pos < 0 else slice(pos, pos + 1)]
        y = lin(ctx.transpose(1, 0, 2).reshape(T, D), p + no)
        layers.append((att, x, y))
        x_in = x
        x = ln(x + y, p + n1)                                # post-norm
        mid = x
        m = lin(gelu(lin(x, p + nup)), p + ndown)
        x = ln(x + m, p + n2)
        if rec is not None:
            rec["layers"].append(dict(x=x_in, v=v, ctx=ctx, wo=W[p + no + ".weight"].T, bo=W[p + no + ".bias"], y=y, mid=mid, mlp=m,
                                      g1=g(p + n1), b1=b(p + n1), g2=g(p + n2), b2=b(p + n2)))
    if rec is not None:
        rec["final"] = x
    if distil and "vocab_transform.weight" in W:
        h = ln(gelu(lin(x, "vocab_transform")), "vocab_layer_norm")
        dec, bias = W.get("vocab_projector.weight", W[pre + "embeddings.word_embeddings.weight"]), W["vocab_projector.bias"]
    elif t == "roberta" and "lm_head.dense.weight" in W:
        h = ln(gelu(lin(x, "lm_head.dense")), "lm_head.layer_norm")
        dec, bias = W.get("lm_head.decoder.weight", W[pre + "embeddings.word_embeddings.weight"]), W["lm_head.bias"]
    elif "cls.predictions.transform.dense.weight" in W:
        h = ln(gelu(lin(x, "cls.predictions.transform.dense")), "cls.predictions.transform.LayerNorm")
        dec, bias = W.get("cls.predictions.decoder.weight", W[pre + "embeddings.word_embeddings.weight"]), W["cls.predictions.bias"]
    else:
        return layers, None
    if rec is not None:
        names = {"distilbert": ("vocab_transform", "vocab_layer_norm"), "roberta": ("lm_head.dense", "lm_head.layer_norm")}
        dense, norm = names.get(t, ("cls.predictions.transform.dense", "cls.predictions.transform.LayerNorm"))
        rec["head"] = (W[dense + ".weight"].T, W[dense + ".bias"], g(norm), b(norm), dec, bias)
    return layers, h @ dec.T + bias


def run_cli(cli, d, variant, extra):
    mask = "<mask>" if variant.startswith("roberta") else "[MASK]"
    cmd = [cli, "--model", d, "--text", f"The cat sat on the {mask}.", "--text", "a dog ran", "--text", "where is the park?",
           "--pair", "it was tired", "--pair", "", "--pair", "in the house"] + extra
    return subprocess.run(cmd, capture_output=True, text=True)


def check_variant(cli, work, variant):
    d = os.path.join(work, variant)
    cfg = make_encoder_dir.write_dir(d, variant)
    out, run_json = os.path.join(work, variant + "-out"), os.path.join(work, variant + ".json")
    mlm = make_encoder_dir.VARIANTS[variant][3].get("mlm", False)
    plain = run_cli(cli, d, variant, ["--json", run_json])
    if plain.returncode != 0:
        print(f"{variant:22s} headmap-cli refused it: {plain.stderr.strip()}  DIFFERENT")
        return False
    unmasked = json.load(open(run_json))["token_ids"]
    run = run_cli(cli, d, variant, ["--npy", out, "--json", run_json, "--mask", "2:3"] + (["--top-k", str(K)] if mlm else []))
    if run.returncode != 0:
        print(f"{variant:22s} headmap-cli refused it: {run.stderr.strip()}  DIFFERENT")
        return False
    meta, rj = json.load(open(os.path.join(out, "meta.json"))), json.load(open(run_json))
    W = read_safetensors(os.path.join(d, "model.safetensors"))
    att = np.load(os.path.join(out, "attention.npy"))  # (L, B, H, T, T)
    L, B, H, T, _ = att.shape
    problems = []
    if B != 3 or len(set(meta["lengths"])) < 2:
        problems.append(f"the batch is not 3 sentences of different lengths: {meta['lengths']}")
    if 1 not in sum(meta["segments"], []):
        problems.append("no token of sentence B")
    if cfg["model_type"] == "bert" and 1 not in sum(meta["type_ids"], []):
        problems.append("no token type 1 in a BERT pair")
    worst = {"attention": 0.0, "attn_in": 0.0, "attn_out": 0.0, "padding": 0.0, "probs": 0.0, "loss": 0.0}
    mask_id = None
    total, count = 0.0, 0
    for b, ids in enumerate(meta["token_ids"]):
        n = meta["lengths"][b]
        layers, logits = forward(cfg, W, np.array(ids), np.array(meta["type_ids"][b]))
        for l, (a_ref, in_ref, out_ref) in enumerate(layers):
            worst["attention"] = max(worst["attention"], np.abs(att[l, b, :, :n, :n] - a_ref).max())
            worst["padding"] = max(worst["padding"], np.abs(att[l, b, :, :, n:]).max(initial=0), np.abs(att[l, b, :, n:, :]).max(initial=0))
            reference_common.worst_layer_io(worst, out, l, b, n, in_ref, out_ref)
        if logits is None:
            continue
        probs = softmax(logits)
        for t in range(n):
            if b == 2 and t == 3:  # --mask 2:3: the masked-token loss's one term, the id the text had there
                mask_id = ids[t]
                if ids[:t] + ids[t + 1:] != unmasked[b][:t] + unmasked[b][t + 1:] or ids[t] == unmasked[b][t]:
                    problems.append("--mask 2:3 did not replace exactly that token")
                total, count = total - math.log(probs[t, unmasked[b][t]]), count + 1
    if mlm:
        preds = rj.get("mask_predictions", [])
        if len(preds) != 2:
            problems.append(f"{len(preds)} [MASK] predictions, expected 2 (typed and --mask)")
        for p in preds:
            b, t = p["sentence"], p["position"]
            _, logits = forward(cfg, W, np.array(meta["token_ids"][b]), np.array(meta["type_ids"][b]))
            pr = softmax(logits[t])
            want = list(np.argsort(-pr, kind="stable")[:K])
            got = [x["id"] for x in p["top"]]
            if got != want:
                problems.append(f"sentence {b} token {t}: fillers {got}, reference {want}")
            worst["probs"] = max(worst["probs"], max(abs(x["prob"] - pr[x["id"]]) for x in p["top"]))
            if meta["token_ids"][b][t] != mask_id:
                problems.append("a prediction at a token that is not the mask")
        if rj.get("loss_kind") != "masked-token" or rj.get("loss_tokens") != 1:
            problems.append(f"no masked-token loss over 1 token: {rj.get('loss_kind')}, {rj.get('loss_tokens')}")
        else:
            worst["loss"] = abs(rj["loss_on_text"] - total / count)
    elif "mask_predictions" in rj or rj.get("mlm_head") is not False:
        problems.append("a model without a masked-LM head reports predictions")
    ok = not problems and all(v <= TOL for v in worst.values()) and worst["padding"] == 0.0
    print(f"{variant:22s} L={L} B={B} H={H} T={T} lengths {meta['lengths']}  max |diff|: attention {worst['attention']:.1e}, "
          f"attn_in {worst['attn_in']:.1e}, attn_out {worst['attn_out']:.1e}, padding keys {worst['padding']:.0e}, "
          f"probabilities {worst['probs']:.1e}, masked loss {worst['loss']:.1e}  {'ok' if ok else 'DIFFERENT ' + '; '.join(problems)}")
    return ok


def main():
    args = reference_common.cli_and_work(__doc__)
    if args is None:
        return 2
    cli, work = args
    variants = sys.argv[3:] or list(make_encoder_dir.VARIANTS)
    results = [check_variant(cli, work, v) for v in variants]
    print(f"{sum(results)} of {len(results)} encoder variants agree with the float64 reference (attention, layer input and output, "
          f"[MASK] probabilities and the masked-token loss to {TOL}; padding keys exactly 0)")
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
